//! `MPI_GREQUEST_START` for Fortran: its callbacks are Fortran procedures, which take every
//! argument by reference and return their error in a last `IERROR` argument
//! (`QUERY_FN(EXTRA_STATE, STATUS, IERROR)`, `FREE_FN(EXTRA_STATE, IERROR)`,
//! `CANCEL_FN(EXTRA_STATE, COMPLETE, IERROR)`, `EXTRA_STATE` an
//! `INTEGER(KIND=MPI_ADDRESS_KIND)`, `COMPLETE` a `LOGICAL`). The C request gets this module's
//! trampolines and, as its `extra_state`, a record of the three procedures and the Fortran
//! extra state. MPI calls `free_fn` exactly once per request, so the free trampoline releases
//! the record after calling the Fortran procedure. A Fortran status has MPICH's C layout
//! (`MPI_STATUS_SIZE` integers), so the query procedure writes the C status directly.

use super::set_ierr;
use crate::abi::*;
use std::ffi::{c_int, c_void};

type QueryFn = unsafe extern "C" fn(*mut MPI_Aint, *mut MPI_Status, *mut MPI_Fint);
type FreeFn = unsafe extern "C" fn(*mut MPI_Aint, *mut MPI_Fint);
type CancelFn = unsafe extern "C" fn(*mut MPI_Aint, *mut c_int, *mut MPI_Fint);

/// The Fortran side of one generalized request, its C `extra_state`.
struct FortranGrequest {
    query: Option<QueryFn>,
    free: Option<FreeFn>,
    cancel: Option<CancelFn>,
    extra: MPI_Aint,
}

unsafe extern "C" fn query_trampoline(extra_state: *mut c_void, status: *mut MPI_Status) -> c_int {
    // SAFETY: extra_state is the record `start` made, alive until the free trampoline.
    let record = unsafe { &mut *extra_state.cast::<FortranGrequest>() };
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    if let Some(f) = record.query {
        // SAFETY: a Fortran procedure of the query interface; every argument is a live
        // reference for the call (the status is the library's, writable).
        unsafe { f(&mut record.extra, status, &mut ierr) };
    }
    ierr
}

unsafe extern "C" fn free_trampoline(extra_state: *mut c_void) -> c_int {
    // SAFETY: extra_state is the record `start` made; MPI calls free_fn once per request,
    // so it is released here.
    let mut record = unsafe { Box::from_raw(extra_state.cast::<FortranGrequest>()) };
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    if let Some(f) = record.free {
        // SAFETY: a Fortran procedure of the free interface, with live references.
        unsafe { f(&mut record.extra, &mut ierr) };
    }
    ierr
}

unsafe extern "C" fn cancel_trampoline(extra_state: *mut c_void, complete: c_int) -> c_int {
    // SAFETY: extra_state is the record `start` made, alive until the free trampoline.
    let record = unsafe { &mut *extra_state.cast::<FortranGrequest>() };
    let (mut ierr, mut logical): (MPI_Fint, c_int) = (MPI_SUCCESS, (complete != 0) as c_int);
    if let Some(f) = record.cancel {
        // SAFETY: a Fortran procedure of the cancel interface (COMPLETE a default LOGICAL:
        // a 4-byte 0 or 1 under gfortran), with live references.
        unsafe { f(&mut record.extra, &mut logical, &mut ierr) };
    }
    ierr
}

twin! {
    "MPI_Grequest_start", mpi_grequest_start_ / pmpi_grequest_start_
        f08 mpi_grequest_start_f08_ / pmpi_grequest_start_f08_
        => MPI_Grequest_start / PMPI_Grequest_start,
    (query: *const c_void, free: *const c_void, cancel: *const c_void, extra: *const MPI_Aint,
     request: *mut MPI_Request, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references; a non-NULL procedure address is a Fortran
        // procedure of the interface MPI gives it, and the trampolines have the C types.
        unsafe {
            let procedure = |p: *const c_void| (!p.is_null()).then_some(p);
            let record = Box::into_raw(Box::new(FortranGrequest {
                query: procedure(query).map(|p| std::mem::transmute::<*const c_void, QueryFn>(p)),
                free: procedure(free).map(|p| std::mem::transmute::<*const c_void, FreeFn>(p)),
                cancel: procedure(cancel).map(|p| std::mem::transmute::<*const c_void, CancelFn>(p)),
                extra: *extra,
            }));
            let r = call(
                Some(query_trampoline),
                Some(free_trampoline),
                Some(cancel_trampoline),
                record.cast(),
                request,
            );
            if r != MPI_SUCCESS {
                drop(Box::from_raw(record));
            }
            set_ierr(ierr, r)
        }
    }
}
