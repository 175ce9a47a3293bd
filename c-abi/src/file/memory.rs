//! The caller's buffer of a data access as bytes: the data of `count` elements of the memory
//! datatype, in type-map order, in the file's data representation. A one-block buffer in a
//! `native` file is used in place (no copy: a contiguous access moves straight between the
//! caller's memory and the file); a scattered one is packed before a write and unpacked after
//! a read by the datatype engine. In another representation the packed bytes are converted
//! (`datarep::Conversion`): external32 of data that keeps its size in place (in a copy for a
//! write: the caller's data is not ours to change; in the room read into for a read); data
//! that changes size (external32's `MPI_LONG`), or a registered representation's, in a
//! buffer of file bytes of its own: a write's is converted when the conversion is made, a
//! read's is read into that buffer and converted from it (external32: decoded into the
//! caller's block or a packed copy that is then unpacked; the program's read function: into
//! the caller's buffer itself).

use crate::datatype::Message;
use crate::file::datarep::{Conversion, ConversionFailed};
use std::ffi::c_void;

/// What a read moved: bytes of the file, and the memory bytes of the whole values they hold
/// (the same unless the representation changes a value's size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    pub file: usize,
    pub memory: usize,
}

impl Moved {
    /// `n` bytes that are the same in memory and in the file.
    fn same(n: usize) -> Moved {
        Moved { file: n, memory: n }
    }
}

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
    if let Some(converted) = conv.converted() {
        return write(converted);
    }
    // SAFETY: the caller's contract, passed on.
    let data = unsafe { m.packed(buf, count) };
    match conv {
        Conversion::InPlace(e) if !data.is_empty() => {
            let mut copy = data.into_owned();
            e.encode_in_place(&mut copy);
            write(&copy)
        }
        _ => write(&data),
    }
}

/// Runs `read` on room for the access's file data (the count it returns: the bytes it
/// filled), converts them from the file's representation (`conv`) and places them in the
/// buffer (unpacked if the type scatters it). A conversion function of the program that fails
/// is the read's error.
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
) -> Result<Moved, E> {
    if m.bytes == 0 {
        return read(&mut []).map(|_| Moved::same(0));
    }
    if let Conversion::Buffered(b) = conv {
        let mut file = vec![0u8; b.file_bytes()];
        let got = read(&mut file)?;
        let memory = b.memory_bytes_of(got);
        let file = &mut file[..got];
        return match &m.scattered {
            None => {
                // SAFETY: one writable block of `m.bytes` bytes at `buf + offset`.
                let room = unsafe {
                    std::slice::from_raw_parts_mut(
                        buf.cast::<u8>().wrapping_offset(m.offset),
                        m.bytes,
                    )
                };
                b.file_to_memory(file, room, buf)?;
                Ok(Moved { file: got, memory })
            }
            Some(ty) => {
                let mut packed = vec![0u8; m.bytes];
                if !b.file_to_memory(file, &mut packed, buf)? {
                    // SAFETY: `packed` has `memory` bytes of data; `buf` holds `count`
                    // elements of `ty`.
                    unsafe { ty.unpack(packed.as_ptr(), memory, buf.cast(), count) };
                }
                Ok(Moved { file: got, memory })
            }
        };
    }
    let decode = |data: &mut [u8]| {
        if let Conversion::InPlace(e) = conv {
            e.decode_in_place(data);
        }
    };
    match &m.scattered {
        None => {
            // SAFETY: one writable block of `m.bytes` bytes at `buf + offset`.
            let room = unsafe {
                std::slice::from_raw_parts_mut(buf.cast::<u8>().wrapping_offset(m.offset), m.bytes)
            };
            let got = read(room)?;
            decode(&mut room[..got]);
            Ok(Moved::same(got))
        }
        Some(ty) => {
            let mut packed = vec![0u8; m.bytes];
            let got = read(&mut packed)?;
            decode(&mut packed[..got]);
            // SAFETY: `packed` has `got` bytes of data; `buf` holds `count` elements of `ty`.
            unsafe { ty.unpack(packed.as_ptr(), got, buf.cast(), count) };
            Ok(Moved::same(got))
        }
    }
}
