//! The caller's buffer of a data access as bytes: the data of `count` elements of the memory
//! datatype, in type-map order, in the file's data representation. A one-block buffer in a
//! `native` file is used in place (no copy: a contiguous access moves straight between the
//! caller's memory and the file); a scattered one is packed before a write and unpacked after
//! a read by the datatype engine. In another representation the packed bytes are converted
//! (`datarep::Conversion`): external32 in place, in a copy for a write (the caller's data is
//! not ours to change) and in the room read into for a read; a registered representation's
//! functions convert between the caller's buffer and a buffer of file bytes themselves.

use crate::datatype::Message;
use crate::file::datarep::{Conversion, ConversionFailed};
use std::ffi::c_void;

/// Runs `write` on the data of the buffer (packed if the type scatters it), in the file's
/// representation (`conv`).
///
/// # Safety
/// `buf` holds `count` elements of the type `m` describes (the caller's contract of the MPI
/// call), readable for the duration of the call.
pub(crate) unsafe fn with_data<R>(
    buf: *const c_void,
    count: usize,
    m: &Message,
    conv: &Conversion,
    write: impl FnOnce(&[u8]) -> R,
) -> R {
    if m.bytes == 0 {
        return write(&[]);
    }
    if let Some(converted) = conv.converted() {
        return write(converted);
    }
    match &m.scattered {
        None => {
            // SAFETY: one block of `m.bytes` bytes at `buf + offset` (the caller's contract).
            let data = unsafe {
                std::slice::from_raw_parts(buf.cast::<u8>().wrapping_offset(m.offset), m.bytes)
            };
            if conv.is_none() {
                return write(data);
            }
            let mut copy = data.to_vec();
            conv.memory_to_file_in_place(&mut copy);
            write(&copy)
        }
        Some(ty) => {
            let mut packed = vec![0u8; m.bytes];
            // SAFETY: `buf` holds `count` elements of `ty`; `packed` has count * size bytes.
            unsafe { ty.pack(buf.cast(), count, packed.as_mut_ptr()) };
            conv.memory_to_file_in_place(&mut packed);
            write(&packed)
        }
    }
}

/// Runs `read` on room for the buffer's data, converts what it filled (the count it returns)
/// from the file's representation (`conv`), and unpacks it into the buffer if the type
/// scatters it. A conversion function of the program that fails is the read's error.
///
/// # Safety
/// `buf` holds `count` elements of the type `m` describes, writable for the duration of the
/// call.
pub(crate) unsafe fn with_room<E: From<ConversionFailed>>(
    buf: *mut c_void,
    count: usize,
    m: &Message,
    conv: &Conversion,
    read: impl FnOnce(&mut [u8]) -> Result<usize, E>,
) -> Result<usize, E> {
    if m.bytes == 0 {
        return read(&mut []);
    }
    match &m.scattered {
        None if !matches!(conv, Conversion::User { .. }) => {
            // SAFETY: one writable block of `m.bytes` bytes at `buf + offset`.
            let room = unsafe {
                std::slice::from_raw_parts_mut(buf.cast::<u8>().wrapping_offset(m.offset), m.bytes)
            };
            let got = read(room)?;
            conv.file_to_memory(&mut room[..got], buf)?;
            Ok(got)
        }
        scattered => {
            let mut packed = vec![0u8; m.bytes];
            let got = read(&mut packed)?;
            let placed = conv.file_to_memory(&mut packed[..got], buf)?;
            if let (false, Some(ty)) = (placed, scattered) {
                // SAFETY: `packed` has `got` bytes of data; `buf` holds `count` elements of
                // `ty`.
                unsafe { ty.unpack(packed.as_ptr(), got, buf.cast(), count) };
            }
            Ok(got)
        }
    }
}
