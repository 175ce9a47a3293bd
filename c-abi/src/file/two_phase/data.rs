//! The data of one process's part of a collective access: the caller's own buffer when its
//! data is one block of native bytes (no copy either way), or a buffer of the access's own
//! (the packed or converted data of a write, the room a read lands in before it is unpacked
//! or converted into the caller's buffer).

use std::ops::{Deref, DerefMut};

/// This process's data bytes, in the order of its view's runs.
pub(crate) enum Data {
    /// A buffer of the access's own.
    Owned(Vec<u8>),
    /// `len` bytes of the caller's buffer from `ptr` (not null), read by a write and filled
    /// by a read.
    Caller { ptr: *mut u8, len: usize },
}

impl Data {
    /// The caller's one block of `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for reads (a write) or writes (a read) of `len` bytes, and nothing else
    /// touches those bytes, until the access is dropped: the MPI call's contract for the
    /// buffer of a collective access (blocking, nonblocking or split: the buffer is the
    /// library's until the call, `MPI_Wait` or the end call returns).
    pub unsafe fn caller(ptr: *mut u8, len: usize) -> Data {
        Data::Caller {
            ptr: crate::cptr::nonnull_or_dangling(ptr.cast_const()).cast_mut(),
            len,
        }
    }

    /// Whether the data is the caller's buffer (nothing to copy back after a read).
    pub fn is_callers(&self) -> bool {
        matches!(self, Data::Caller { .. })
    }
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Owned(v) => v,
            // SAFETY: `Data::caller`'s contract: `len` valid bytes at `ptr` for the access's life.
            Data::Caller { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
        }
    }
}

impl DerefMut for Data {
    fn deref_mut(&mut self) -> &mut [u8] {
        match self {
            Data::Owned(v) => v,
            // SAFETY: as above; a read's buffer is writable and the access's alone.
            Data::Caller { ptr, len } => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
        }
    }
}
