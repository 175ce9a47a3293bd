//! The C entry points that read statuses: `MPI_Get_count`, `MPI_Get_elements(_x)`,
//! `MPI_Test_cancelled`; and those that write them, for a generalized request's query
//! function: `MPI_Status_set_elements(_x)`, `MPI_Status_set_cancelled`.

use crate::abi::*;
use crate::count::CountOut;
use crate::cptr::Out;
use crate::datatype::Datatype;
use crate::error::MpiError;
use crate::error::MpiResult;
use crate::p2p::status::{decode, set_byte_count, set_cancelled, status_in};
use crate::runtime::export::mpi_fn;
use crate::runtime::Mpi;
use std::ffi::c_int;

/// The datatype a status's contents are counted in, and the bytes the status says arrived
/// (the shared start of `MPI_Get_count` and `MPI_Get_elements(_x)`).
fn received_in(
    st: &mut Mpi,
    status: *const MPI_Status,
    datatype: MPI_Datatype,
) -> MpiResult<(&Datatype, usize)> {
    let rt = st.runtime()?;
    let s = status_in(status)?;
    Ok((rt.types.get(datatype)?, decode(&s).0 as usize))
}

mpi_fn! {
    /// `MPI_Get_count`: whole elements of `datatype` received (`MPI_UNDEFINED` if not a whole
    /// number, or, in the int form, more than an `int` holds).
    fn MPI_Get_count / PMPI_Get_count, large MPI_Get_count_c / PMPI_Get_count_c
    where [Count = c_int | MPI_Count] (
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut Count,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        Out::new(count, "count")?.set(Count::from_count(counted(info.count_in(bytes))));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_elements`: basic elements received (`MPI_UNDEFINED` as for `MPI_Get_count`).
    fn MPI_Get_elements / PMPI_Get_elements, large MPI_Get_elements_c / PMPI_Get_elements_c
    where [Count = c_int | MPI_Count] (
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut Count,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        Out::new(count, "count")?.set(Count::from_count(counted(info.elements_in(bytes))));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_elements_x`: `MPI_Get_elements` as an `MPI_Count` (MPI 3's form of
    /// `MPI_Get_elements_c`).
    fn MPI_Get_elements_x / PMPI_Get_elements_x(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut MPI_Count,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        Out::new(count, "count")?.set(counted(info.elements_in(bytes)));
        Ok(())
    }
}

/// A count of a status as an `MPI_Count`: `MPI_UNDEFINED` for none.
fn counted(n: Option<usize>) -> MPI_Count {
    n.and_then(|n| MPI_Count::try_from(n).ok())
        .unwrap_or(MPI_UNDEFINED as MPI_Count)
}

mpi_fn! {
    /// `MPI_Test_cancelled`: whether the operation of `status` was cancelled.
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MPI_Status, flag: *mut c_int) |st| {
        st.runtime()?;
        let s = status_in(status)?;
        Out::new(flag, "flag")?.set(decode(&s).1 as c_int);
        Ok(())
    }
}

/// A status to write into (not `MPI_STATUS_IGNORE`).
fn status_out(status: *mut MPI_Status) -> MpiResult<Out<MPI_Status>> {
    if std::ptr::eq(status, MPI_STATUS_IGNORE) {
        return Err(MpiError::arg(
            "the status is MPI_STATUS_IGNORE; pass a status to set",
        ));
    }
    Out::new(status, "status")
}

/// `MPI_Status_set_elements(_x)`: the status says `count` elements of `datatype` arrived
/// (`count` times its size in bytes, as MPICH records it).
fn set_elements(
    st: &mut Mpi,
    status: *mut MPI_Status,
    datatype: MPI_Datatype,
    count: i64,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let size = rt.types.get(datatype)?.size() as u64;
    let count = u64::try_from(count).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("the count is {count}; it must be 0 or more"),
        )
    })?;
    let bytes = count
        .checked_mul(size)
        .filter(|b| *b < 1 << 62)
        .ok_or_else(|| {
            MpiError::new(
                MPI_ERR_COUNT,
                format!("{count} elements of {size} bytes are more than a status can hold"),
            )
        })?;
    let out = status_out(status)?;
    let mut s = out.get();
    set_byte_count(&mut s, bytes);
    out.set(s);
    Ok(())
}

mpi_fn! {
    /// `MPI_Status_set_elements`: makes `MPI_Get_elements(status, datatype)` answer `count`.
    fn MPI_Status_set_elements / PMPI_Status_set_elements(
        status: *mut MPI_Status,
        datatype: MPI_Datatype,
        count: c_int,
    ) |st| {
        set_elements(st, status, datatype, i64::from(count))
    }
}

mpi_fn! {
    /// `MPI_Status_set_elements_x`: `MPI_Status_set_elements` with an `MPI_Count`.
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(
        status: *mut MPI_Status,
        datatype: MPI_Datatype,
        count: MPI_Count,
    ) |st| {
        set_elements(st, status, datatype, count)
    }
}

mpi_fn! {
    /// `MPI_Status_set_cancelled`: makes `MPI_Test_cancelled(status)` answer `flag != 0`.
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MPI_Status, flag: c_int) |st| {
        st.runtime()?;
        let out = status_out(status)?;
        let mut s = out.get();
        set_cancelled(&mut s, flag != 0);
        out.set(s);
        Ok(())
    }
}
