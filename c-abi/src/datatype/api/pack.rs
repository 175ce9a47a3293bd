//! The C entry points of packing: `MPI_Pack`, `MPI_Unpack`, `MPI_Pack_size`, and their
//! large-count forms (`_c`).

use crate::abi::*;
use crate::count::CountOut;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

/// A `position` argument (`int` for `MPI_Pack`, `MPI_Aint` for `MPI_Pack_external`): where
/// packed data starts in the packed buffer.
pub(super) fn position_arg<T>(position: *mut T) -> MpiResult<(Out<T>, usize)>
where
    T: Copy + TryInto<usize> + std::fmt::Display,
{
    let out = Out::new(position, "position")?;
    let at = out.get().try_into().map_err(|_| {
        MpiError::arg(format!(
            "the position is {}; it must be 0 or more",
            out.get()
        ))
    })?;
    Ok((out, at))
}

/// A buffer size argument (`outsize`, `insize`), not negative.
pub(super) fn size_arg<T>(size: T, what: &str) -> MpiResult<usize>
where
    T: Copy + TryInto<usize> + std::fmt::Display,
{
    size.try_into()
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
    fn MPI_Pack / PMPI_Pack, large MPI_Pack_c / PMPI_Pack_c
    where [Count = c_int | MPI_Count] (
        inbuf: *const c_void,
        incount: Count,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: Count,
        position: *mut Count,
        comm: MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let pack = || -> MpiResult<()> {
            let m = rt.types.message(MPI_Count::from(incount), datatype)?;
            let t = rt.types.get(datatype)?;
            let outsize = size_arg(outsize, "outsize")?;
            let (pos, at) = position_arg(position)?;
            if !matches!(at.checked_add(m.bytes), Some(end) if end <= outsize) {
                return Err(no_room("MPI_Pack", m.bytes, at, outsize));
            }
            if m.bytes > 0 {
                // A derived type may address absolute memory from MPI_BOTTOM (NULL).
                if (inbuf.is_null() && !m.derived) || outbuf.is_null() {
                    return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to pack"));
                }
                // SAFETY: inbuf holds incount elements and outbuf has outsize >= at + bytes
                // bytes (the caller's contract, and the check above); they do not overlap.
                unsafe { t.pack(inbuf.cast(), incount as usize, outbuf.cast::<u8>().add(at)) };
            }
            pos.set(Count::from_count((at + m.bytes) as MPI_Count));
            Ok(())
        };
        pack().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Unpack`: fills `outcount` elements from the packed buffer at `*position`.
    fn MPI_Unpack / PMPI_Unpack, large MPI_Unpack_c / PMPI_Unpack_c
    where [Count = c_int | MPI_Count] (
        inbuf: *const c_void,
        insize: Count,
        position: *mut Count,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let unpack = || -> MpiResult<()> {
            let m = rt.types.message(MPI_Count::from(outcount), datatype)?;
            let t = rt.types.get(datatype)?;
            let insize = size_arg(insize, "insize")?;
            let (pos, at) = position_arg(position)?;
            if !matches!(at.checked_add(m.bytes), Some(end) if end <= insize) {
                return Err(no_room("MPI_Unpack", m.bytes, at, insize));
            }
            if m.bytes > 0 {
                // A derived type may address absolute memory from MPI_BOTTOM (NULL).
                if inbuf.is_null() || (outbuf.is_null() && !m.derived) {
                    return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to unpack"));
                }
                // SAFETY: inbuf has insize >= at + bytes bytes, outbuf holds outcount elements
                // (the caller's contract); they do not overlap.
                unsafe {
                    t.unpack(inbuf.cast::<u8>().add(at), m.bytes, outbuf.cast(), outcount as usize)
                };
            }
            pos.set(Count::from_count((at + m.bytes) as MPI_Count));
            Ok(())
        };
        unpack().map_err(|e| e.on(idx))
    }
}

mpi_fn! {
    /// `MPI_Pack_size`: an upper bound of the bytes `MPI_Pack` needs for `incount` elements.
    fn MPI_Pack_size / PMPI_Pack_size, large MPI_Pack_size_c / PMPI_Pack_size_c
    where [Count = c_int | MPI_Count] (
        incount: Count,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
        size: *mut Count,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let run = || -> MpiResult<()> {
            let incount = MPI_Count::from(incount);
            if incount < 0 {
                return Err(crate::datatype::negative_count(incount));
            }
            let t = rt.types.get(datatype)?;
            let out = Out::new(size, "size")?;
            let bytes = (incount as u64).checked_mul(t.size() as u64).and_then(|b| MPI_Count::try_from(b).ok());
            let fits = bytes.and_then(|b| Count::try_from(b).ok());
            out.set(fits.ok_or_else(|| {
                MpiError::new(MPI_ERR_COUNT, format!("{incount} elements of {} bytes do not fit in this form's count; use MPI_Pack_size_c", t.size()))
            })?);
            Ok(())
        };
        run().map_err(|e| e.on(idx))
    }
}
