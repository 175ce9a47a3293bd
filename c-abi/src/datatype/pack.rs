//! Packing: copying a type's data between its memory layout and a contiguous stream, and
//! `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`.
//!
//! A contiguous type is one copy. Otherwise each element's runs are copied in order; runs of
//! a machine word or less (the strided vector of doubles) are copied inline, not through a
//! `memcpy` call, so packing costs about one pass over the bytes. The packed format is the
//! data in type-map order with no header, as MPICH's on a homogeneous system: a message of a
//! derived type carries `count * size` bytes and matches any receive type with the same
//! basic types.

use super::{Datatype, Run};
use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};
use std::ptr::copy_nonoverlapping;

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

/// A `position` argument: where packed data starts in the packed buffer.
fn position_arg(position: *mut c_int) -> MpiResult<(Out<c_int>, usize)> {
    let out = Out::new(position, "position")?;
    let at = usize::try_from(out.get()).map_err(|_| {
        MpiError::arg(format!(
            "the position is {}; it must be 0 or more",
            out.get()
        ))
    })?;
    Ok((out, at))
}

fn size_arg(size: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(size)
        .map_err(|_| MpiError::arg(format!("the {what} is {size}; it must be 0 or more")))
}

#[cold]
fn no_room(what: &str, need: usize, at: usize, size: usize) -> MpiError {
    MpiError::new(
        MPI_ERR_TRUNCATE,
        format!("{what}: {need} bytes from position {at} do not fit in a buffer of {size} bytes"),
    )
}

mpi_fn! {
    /// `MPI_Pack`: appends the data of `incount` elements to the packed buffer at `*position`.
    fn MPI_Pack / PMPI_Pack(
        inbuf: *const c_void,
        incount: c_int,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: c_int,
        position: *mut c_int,
        comm: MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let pack = || -> MpiResult<()> {
            let m = rt.types.message(incount, datatype)?;
            let t = rt.types.get(datatype)?;
            let outsize = size_arg(outsize, "outsize")?;
            let (pos, at) = position_arg(position)?;
            if !matches!(at.checked_add(m.bytes), Some(end) if end <= outsize) {
                return Err(no_room("MPI_Pack", m.bytes, at, outsize));
            }
            if m.bytes > 0 {
                if inbuf.is_null() || outbuf.is_null() {
                    return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to pack"));
                }
                // SAFETY: inbuf holds incount elements and outbuf has outsize >= at + bytes
                // bytes (the caller's contract, and the check above); they do not overlap.
                unsafe { t.pack(inbuf.cast(), incount as usize, outbuf.cast::<u8>().add(at)) };
            }
            pos.set((at + m.bytes) as c_int);
            Ok(())
        };
        pack().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Unpack`: fills `outcount` elements from the packed buffer at `*position`.
    fn MPI_Unpack / PMPI_Unpack(
        inbuf: *const c_void,
        insize: c_int,
        position: *mut c_int,
        outbuf: *mut c_void,
        outcount: c_int,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let unpack = || -> MpiResult<()> {
            let m = rt.types.message(outcount, datatype)?;
            let t = rt.types.get(datatype)?;
            let insize = size_arg(insize, "insize")?;
            let (pos, at) = position_arg(position)?;
            if !matches!(at.checked_add(m.bytes), Some(end) if end <= insize) {
                return Err(no_room("MPI_Unpack", m.bytes, at, insize));
            }
            if m.bytes > 0 {
                if inbuf.is_null() || outbuf.is_null() {
                    return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to unpack"));
                }
                // SAFETY: inbuf has insize >= at + bytes bytes, outbuf holds outcount elements
                // (the caller's contract); they do not overlap.
                unsafe {
                    t.unpack(inbuf.cast::<u8>().add(at), m.bytes, outbuf.cast(), outcount as usize)
                };
            }
            pos.set((at + m.bytes) as c_int);
            Ok(())
        };
        unpack().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Pack_size`: an upper bound of the bytes `MPI_Pack` needs for `incount` elements.
    fn MPI_Pack_size / PMPI_Pack_size(
        incount: c_int,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
        size: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            if incount < 0 {
                return Err(super::negative_count(incount));
            }
            let t = rt.types.get(datatype)?;
            let out = Out::new(size, "size")?;
            let bytes = incount as usize * t.size();
            out.set(c_int::try_from(bytes).map_err(|_| {
                MpiError::new(MPI_ERR_COUNT, format!("{bytes} bytes do not fit in an int; use MPI_Pack_size_c"))
            })?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}
