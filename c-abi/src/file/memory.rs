//! The caller's buffer of a data access as bytes: the data of `count` elements of the memory
//! datatype, in type-map order. A one-block buffer is used in place (no copy: a contiguous
//! access moves straight between the caller's memory and the file); a scattered one is
//! packed before a write and unpacked after a read by the datatype engine.

use crate::datatype::Message;
use std::ffi::c_void;

/// Runs `write` on the data of the buffer (packed if the type scatters it).
///
/// # Safety
/// `buf` holds `count` elements of the type `m` describes (the caller's contract of the MPI
/// call), readable for the duration of the call.
pub(crate) unsafe fn with_data<R>(
    buf: *const c_void,
    count: usize,
    m: &Message,
    write: impl FnOnce(&[u8]) -> R,
) -> R {
    if m.bytes == 0 {
        return write(&[]);
    }
    match &m.scattered {
        None => {
            // SAFETY: one block of `m.bytes` bytes at `buf + offset` (the caller's contract).
            let data = unsafe {
                std::slice::from_raw_parts(buf.cast::<u8>().wrapping_offset(m.offset), m.bytes)
            };
            write(data)
        }
        Some(ty) => {
            let mut packed = vec![0u8; m.bytes];
            // SAFETY: `buf` holds `count` elements of `ty`; `packed` has count * size bytes.
            unsafe { ty.pack(buf.cast(), count, packed.as_mut_ptr()) };
            write(&packed)
        }
    }
}

/// Runs `read` on room for the buffer's data, and unpacks what it filled (the count it
/// returns) into the buffer if the type scatters it.
///
/// # Safety
/// `buf` holds `count` elements of the type `m` describes, writable for the duration of the
/// call.
pub(crate) unsafe fn with_room<E>(
    buf: *mut c_void,
    count: usize,
    m: &Message,
    read: impl FnOnce(&mut [u8]) -> Result<usize, E>,
) -> Result<usize, E> {
    if m.bytes == 0 {
        return read(&mut []);
    }
    match &m.scattered {
        None => {
            // SAFETY: one writable block of `m.bytes` bytes at `buf + offset`.
            let room = unsafe {
                std::slice::from_raw_parts_mut(buf.cast::<u8>().wrapping_offset(m.offset), m.bytes)
            };
            read(room)
        }
        Some(ty) => {
            let mut packed = vec![0u8; m.bytes];
            let got = read(&mut packed)?;
            // SAFETY: `packed` has `got` bytes of data; `buf` holds `count` elements of `ty`.
            unsafe { ty.unpack(packed.as_ptr(), got, buf.cast(), count) };
            Ok(got)
        }
    }
}
