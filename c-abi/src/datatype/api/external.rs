//! The C entry points of packing in the portable representation: `MPI_Pack_external`,
//! `MPI_Unpack_external`, `MPI_Pack_external_size` (MPI 3.1 §4.3), and their `_c` forms. The data is packed as by
//! `MPI_Pack` and converted value by value (`datatype::external`); `"external32"` is the only
//! representation these functions know, as the standard says.

use super::pack::{position_arg, size_arg};
use crate::abi::*;
use crate::cptr::Out;
use crate::datatype::External32;
use crate::error::{MpiError, MpiResult};
use crate::info::read_c_string;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_char, c_int, c_void};

/// The `datarep` argument: `"external32"`, or `MPI_ERR_UNSUPPORTED_DATAREP`.
fn external32_arg(datarep: *const c_char) -> MpiResult<()> {
    let name = read_c_string(datarep, MPI_MAX_DATAREP_STRING as usize, "datarep")?;
    if name != "external32" {
        return Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_DATAREP,
            format!("the data representation is {name:?}; packing knows only \"external32\""),
        ));
    }
    Ok(())
}

/// Bytes of `count` elements in external32.
fn external_bytes(e: &External32, count: usize) -> MpiResult<usize> {
    count.checked_mul(e.size()).ok_or_else(|| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("{count} elements of this datatype are more bytes than memory holds"),
        )
    })
}

#[cold]
fn no_room(what: &str, need: usize, at: usize, size: usize) -> MpiError {
    MpiError::new(
        MPI_ERR_TRUNCATE,
        format!("{what}: {need} bytes from position {at} do not fit in a buffer of {size} bytes"),
    )
}

mpi_fn! {
    /// `MPI_Pack_external`: appends the external32 data of `incount` elements at `*position`.
    fn MPI_Pack_external / PMPI_Pack_external, large MPI_Pack_external_c / PMPI_Pack_external_c
    where [Count = c_int | MPI_Count] (
        datarep: *const c_char,
        inbuf: *const c_void,
        incount: Count,
        datatype: MPI_Datatype,
        outbuf: *mut c_void,
        outsize: MPI_Aint,
        position: *mut MPI_Aint,
    ) |st| {
        let rt = st.runtime()?;
        external32_arg(datarep)?;
        let incount = MPI_Count::from(incount);
        let m = rt.types.message(incount, datatype)?;
        let t = rt.types.get(datatype)?;
        let e = t.external32()?;
        let count = incount as usize;
        let need = external_bytes(&e, count)?;
        let outsize = size_arg(outsize, "outsize")?;
        let (pos, at) = position_arg(position)?;
        if !matches!(at.checked_add(need), Some(end) if end <= outsize) {
            return Err(no_room("MPI_Pack_external", need, at, outsize));
        }
        if need > 0 {
            // A derived type may address absolute memory from MPI_BOTTOM (NULL).
            if (inbuf.is_null() && !m.derived) || outbuf.is_null() {
                return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to pack"));
            }
            let mut native = vec![0u8; m.bytes];
            // SAFETY: inbuf holds incount elements (the caller's contract); `native` has
            // incount * size bytes.
            unsafe { t.pack(inbuf.cast(), count, native.as_mut_ptr()) };
            // SAFETY: outbuf has outsize >= at + need bytes (checked above), not overlapping
            // our own vector.
            let out = unsafe { std::slice::from_raw_parts_mut(outbuf.cast::<u8>().add(at), need) };
            e.encode(&native, out)?;
        }
        pos.set((at + need) as MPI_Aint);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Unpack_external`: fills `outcount` elements from the external32 data at
    /// `*position`.
    fn MPI_Unpack_external / PMPI_Unpack_external, large MPI_Unpack_external_c / PMPI_Unpack_external_c
    where [Count = c_int | MPI_Count] (
        datarep: *const c_char,
        inbuf: *const c_void,
        insize: MPI_Aint,
        position: *mut MPI_Aint,
        outbuf: *mut c_void,
        outcount: Count,
        datatype: MPI_Datatype,
    ) |st| {
        let rt = st.runtime()?;
        external32_arg(datarep)?;
        let outcount = MPI_Count::from(outcount);
        let m = rt.types.message(outcount, datatype)?;
        let t = rt.types.get(datatype)?;
        let e = t.external32()?;
        let count = outcount as usize;
        let need = external_bytes(&e, count)?;
        let insize = size_arg(insize, "insize")?;
        let (pos, at) = position_arg(position)?;
        if !matches!(at.checked_add(need), Some(end) if end <= insize) {
            return Err(no_room("MPI_Unpack_external", need, at, insize));
        }
        if need > 0 {
            if inbuf.is_null() || (outbuf.is_null() && !m.derived) {
                return Err(MpiError::new(MPI_ERR_BUFFER, "a buffer is NULL but there is data to unpack"));
            }
            // SAFETY: inbuf has insize >= at + need bytes (the caller's contract, checked).
            let ext = unsafe { std::slice::from_raw_parts(inbuf.cast::<u8>().add(at), need) };
            let mut native = vec![0u8; m.bytes];
            e.decode(ext, &mut native);
            // SAFETY: `native` has m.bytes bytes; outbuf holds outcount elements.
            unsafe { t.unpack(native.as_ptr(), m.bytes, outbuf.cast(), count) };
        }
        pos.set((at + need) as MPI_Aint);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Pack_external_size`: the bytes `MPI_Pack_external` needs for `incount` elements.
    fn MPI_Pack_external_size / PMPI_Pack_external_size, large MPI_Pack_external_size_c / PMPI_Pack_external_size_c
    where [Count = c_int | MPI_Count] (
        datarep: *const c_char,
        incount: Count,
        datatype: MPI_Datatype,
        size: *mut MPI_Aint,
    ) |st| {
        let rt = st.runtime()?;
        external32_arg(datarep)?;
        let incount = MPI_Count::from(incount);
        if incount < 0 {
            return Err(crate::datatype::negative_count(incount));
        }
        let out = Out::new(size, "size")?;
        let e = rt.types.get(datatype)?.external32()?;
        out.set(external_bytes(&e, incount as usize)? as MPI_Aint);
        Ok(())
    }
}
