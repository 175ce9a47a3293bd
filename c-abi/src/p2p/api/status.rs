//! The C entry points that read statuses: `MPI_Get_count`, `MPI_Get_elements(_x)`,
//! `MPI_Test_cancelled`.

use crate::abi::*;
use crate::cptr::Out;
use crate::datatype::Datatype;
use crate::error::MpiResult;
use crate::p2p::status::{as_int_count, decode, status_in};
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
    /// `MPI_Get_count`: whole elements of `datatype` received.
    fn MPI_Get_count / PMPI_Get_count(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut c_int,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        Out::new(count, "count")?.set(as_int_count(info.count_in(bytes)));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_elements`: basic elements received.
    fn MPI_Get_elements / PMPI_Get_elements(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut c_int,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        Out::new(count, "count")?.set(as_int_count(info.elements_in(bytes)));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Get_elements_x`: `MPI_Get_elements` as an `MPI_Count`.
    fn MPI_Get_elements_x / PMPI_Get_elements_x(
        status: *const MPI_Status,
        datatype: MPI_Datatype,
        count: *mut MPI_Count,
    ) |st| {
        let (info, bytes) = received_in(st, status, datatype)?;
        let n = info.elements_in(bytes);
        Out::new(count, "count")?.set(n.map(|n| n as MPI_Count).unwrap_or(MPI_UNDEFINED as MPI_Count));
        Ok(())
    }
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
