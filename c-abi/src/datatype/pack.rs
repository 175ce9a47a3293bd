//! Packing: copying a type's data between its memory layout and a contiguous stream (for
//! messages of scattered data, and for `MPI_Pack`, `MPI_Unpack`).
//!
//! A contiguous type is one copy. Otherwise each element's runs are copied in order; runs of
//! a machine word or less (the strided vector of doubles) are copied inline, not through a
//! `memcpy` call, so packing costs about one pass over the bytes. The packed format is the
//! data in type-map order with no header, as MPICH's on a homogeneous system: a message of a
//! derived type carries `count * size` bytes and matches any receive type with the same
//! basic types.

use super::{Datatype, Message, Run};
use std::borrow::Cow;
use std::ffi::c_void;
use std::ptr::copy_nonoverlapping;

impl Message {
    /// The packed data of `count` elements at `buf` (the message this describes), in
    /// memory's representation: the caller's block itself when the type does not scatter it.
    ///
    /// # Safety
    /// `buf` holds `count` elements of the type this message describes, readable for `'a`.
    pub(crate) unsafe fn packed<'a>(&self, buf: *const c_void, count: usize) -> Cow<'a, [u8]> {
        if self.bytes == 0 {
            return Cow::Borrowed(&[]);
        }
        match &self.scattered {
            // SAFETY: one block of `bytes` bytes at `buf + offset` (the caller's contract).
            None => Cow::Borrowed(unsafe {
                std::slice::from_raw_parts(
                    buf.cast::<u8>().wrapping_offset(self.offset),
                    self.bytes,
                )
            }),
            Some(ty) => {
                let mut packed = vec![0u8; self.bytes];
                // SAFETY: `buf` holds `count` elements of `ty`; `packed` has count * size bytes.
                unsafe { ty.pack(buf.cast(), count, packed.as_mut_ptr()) };
                Cow::Owned(packed)
            }
        }
    }
}

/// Copies `len` bytes; short runs inline.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes, not overlapping.
#[inline(always)]
unsafe fn copy_run(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract; unaligned reads and writes of the exact sizes.
    unsafe {
        match len {
            8 => dst
                .cast::<u64>()
                .write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst
                .cast::<u32>()
                .write_unaligned(src.cast::<u32>().read_unaligned()),
            16 => dst
                .cast::<u128>()
                .write_unaligned(src.cast::<u128>().read_unaligned()),
            _ => copy_nonoverlapping(src, dst, len),
        }
    }
}

impl Datatype {
    /// Copies the data of `count` elements laid out from `src` into `dst` (`count * size`
    /// bytes).
    ///
    /// # Safety
    /// `src` holds `count` elements of this type (every run readable), `dst` has
    /// `count * size` writable bytes, and they do not overlap.
    pub unsafe fn pack(&self, src: *const u8, count: usize, dst: *mut u8) {
        if self.is_one_block(count) {
            if let Some(r) = self.runs.first() {
                // SAFETY: one block of count * size bytes at src + offset (the caller's contract).
                unsafe { copy_nonoverlapping(src.offset(r.offset), dst, count * self.size) };
            }
            return;
        }
        let ext = self.extent();
        let mut out = dst;
        for i in 0..count as isize {
            // SAFETY: element i starts i extents from src; its runs are inside the caller's
            // buffer, and `out` stays within the count * size bytes of dst.
            unsafe {
                let base = src.offset(i * ext);
                for r in self.runs.iter() {
                    copy_run(base.offset(r.offset), out, r.len);
                    out = out.add(r.len);
                }
            }
        }
    }

    /// The reverse of [`Datatype::pack`]: fills up to `count` elements at `dst` from the first
    /// `bytes` bytes of packed data at `src` (a partial last element as far as the bytes go).
    ///
    /// # Safety
    /// `src` has `bytes` readable bytes, `dst` holds `count` elements of this type (every run
    /// writable), and they do not overlap.
    pub unsafe fn unpack(&self, src: *const u8, bytes: usize, dst: *mut u8, count: usize) {
        let bytes = bytes.min(count.saturating_mul(self.size));
        if self.is_one_block(count) {
            if let Some(r) = self.runs.first() {
                // SAFETY: one block of at least `bytes` bytes at dst + offset.
                unsafe { copy_nonoverlapping(src, dst.offset(r.offset), bytes) };
            }
            return;
        }
        let ext = self.extent();
        let mut left = bytes;
        let mut input = src;
        'elements: for i in 0..count as isize {
            for &Run { offset, len } in self.runs.iter() {
                let n = len.min(left);
                // SAFETY: element i's run is in the caller's buffer; `input` has `left` bytes.
                unsafe {
                    copy_run(input, dst.offset(i * ext + offset), n);
                    input = input.add(n);
                }
                left -= n;
                if left == 0 {
                    break 'elements;
                }
            }
        }
    }
}
