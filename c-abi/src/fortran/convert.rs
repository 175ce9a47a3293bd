//! Handle and status conversion between C and Fortran.
//!
//! A Fortran handle is the C handle (both are `int`), so `MPI_Comm_f2c` and its friends are
//! the identity. `mpi.h` defines them as macros, as MPICH does; the functions exported here
//! under the same names serve callers that cannot use the macros (other languages, `dlsym`).
//! A Fortran status is the C `MPI_Status`, five `int`s in the same order, so the status
//! conversions copy it.

use crate::abi::*;
use crate::cptr;
use crate::error::MpiError;
use crate::runtime::export::mpi_fn;

/// Defines `MPI_X_f2c`/`MPI_X_c2f` and their `PMPI_` twins for each handle type.
macro_rules! identity_conversions {
    ($($ty:ident: $f2c:ident $pf2c:ident $c2f:ident $pc2f:ident;)*) => {$(
        #[doc = concat!("`", stringify!($f2c), "`: the C handle of a Fortran handle (the same value).")]
        #[no_mangle]
        pub extern "C" fn $f2c(handle: MPI_Fint) -> $ty {
            handle
        }
        #[doc = concat!("`", stringify!($pf2c), "`: as `", stringify!($f2c), "`.")]
        #[no_mangle]
        pub extern "C" fn $pf2c(handle: MPI_Fint) -> $ty {
            handle
        }
        #[doc = concat!("`", stringify!($c2f), "`: the Fortran handle of a C handle (the same value).")]
        #[no_mangle]
        pub extern "C" fn $c2f(handle: $ty) -> MPI_Fint {
            handle
        }
        #[doc = concat!("`", stringify!($pc2f), "`: as `", stringify!($c2f), "`.")]
        #[no_mangle]
        pub extern "C" fn $pc2f(handle: $ty) -> MPI_Fint {
            handle
        }
    )*};
}

identity_conversions! {
    MPI_Comm: MPI_Comm_f2c PMPI_Comm_f2c MPI_Comm_c2f PMPI_Comm_c2f;
    MPI_Datatype: MPI_Type_f2c PMPI_Type_f2c MPI_Type_c2f PMPI_Type_c2f;
    MPI_Group: MPI_Group_f2c PMPI_Group_f2c MPI_Group_c2f PMPI_Group_c2f;
    MPI_Info: MPI_Info_f2c PMPI_Info_f2c MPI_Info_c2f PMPI_Info_c2f;
    MPI_Request: MPI_Request_f2c PMPI_Request_f2c MPI_Request_c2f PMPI_Request_c2f;
    MPI_Op: MPI_Op_f2c PMPI_Op_f2c MPI_Op_c2f PMPI_Op_c2f;
    MPI_Errhandler: MPI_Errhandler_f2c PMPI_Errhandler_f2c MPI_Errhandler_c2f PMPI_Errhandler_c2f;
    MPI_Win: MPI_Win_f2c PMPI_Win_f2c MPI_Win_c2f PMPI_Win_c2f;
    MPI_Message: MPI_Message_f2c PMPI_Message_f2c MPI_Message_c2f PMPI_Message_c2f;
    MPI_Session: MPI_Session_f2c PMPI_Session_f2c MPI_Session_c2f PMPI_Session_c2f;
}

/// Checks that a status argument is a status, not NULL or one of the ignore sentinels.
fn real_status(p: *const MPI_Status, ignore: &[usize], what: &'static str) -> Result<(), MpiError> {
    if p.is_null() || ignore.contains(&(p as usize)) {
        return Err(MpiError::arg(format!(
            "the {what} argument is NULL or a STATUS_IGNORE sentinel; pass a status variable"
        )));
    }
    Ok(())
}

/// The addresses that stand for "no status" on the Fortran side.
fn fortran_ignores() -> [usize; 2] {
    // SAFETY: reading the two pointer variables, which are never written after load.
    unsafe { [MPI_F_STATUS_IGNORE as usize, MPI_F_STATUSES_IGNORE as usize] }
}

mpi_fn! {
    /// `MPI_Status_c2f`: copies a C status into a Fortran status (the same layout).
    fn MPI_Status_c2f / PMPI_Status_c2f(c_status: *const MPI_Status, f_status: *mut MPI_Fint) |_st| {
        let c_ignores = [MPI_STATUS_IGNORE as usize, MPI_STATUSES_IGNORE as usize];
        real_status(c_status, &c_ignores, "c_status")?;
        real_status(f_status.cast::<MPI_Status>(), &fortran_ignores(), "f_status")?;
        let status = cptr::read(c_status, "c_status")?;
        cptr::Out::new(f_status.cast::<MPI_Status>(), "f_status")?.set(status);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Status_f2c`: copies a Fortran status into a C status (the same layout).
    fn MPI_Status_f2c / PMPI_Status_f2c(f_status: *const MPI_Fint, c_status: *mut MPI_Status) |_st| {
        real_status(f_status.cast::<MPI_Status>(), &fortran_ignores(), "f_status")?;
        let c_ignores = [MPI_STATUS_IGNORE as usize, MPI_STATUSES_IGNORE as usize];
        real_status(c_status, &c_ignores, "c_status")?;
        let status = cptr::read(f_status.cast::<MPI_Status>(), "f_status")?;
        cptr::Out::new(c_status, "c_status")?.set(status);
        Ok(())
    }
}
