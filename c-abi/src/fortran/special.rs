//! The Fortran entry points that the generator's rules do not cover (its `HAND_WRITTEN` list).
//!
//! - `MPI_INIT(IERROR)`, `MPI_INIT_THREAD(REQUIRED, PROVIDED, IERROR)`: no `argc`/`argv`.
//! - `MPI_INFO_CREATE_ENV(INFO, IERROR)`: no `argc`/`argv` either.
//! - `MPI_PCONTROL(LEVEL, IERROR)`: C's is variadic; `mpi_f08`'s `MPI_Pcontrol(level)` has no
//!   `ierror`, so its entry point passes NULL for it.
//! - The MPI-1 functions whose Fortran displacements and addresses are default `INTEGER`
//!   where C has `MPI_Aint`: `MPI_TYPE_HVECTOR`, `MPI_TYPE_HINDEXED`, `MPI_TYPE_STRUCT`,
//!   `MPI_ADDRESS` (an address that does not fit is truncated, as MPI-1 Fortran has it),
//!   and `MPI_TYPE_EXTENT`, `MPI_TYPE_LB`, `MPI_TYPE_UB`.
//! - `MPI_BUFFER_DETACH(BUFFER_ADDR, SIZE, IERROR)`: C writes the buffer's address through its
//!   first argument; in Fortran that argument is the buffer itself, which must not be
//!   overwritten, so the address goes to a local.
//! - Attributes. C stores a `void *`; Fortran stores an integer *value*
//!   (`INTEGER(KIND=MPI_ADDRESS_KIND)`, or `INTEGER` for `MPI_ATTR_PUT`/`MPI_ATTR_GET`), kept
//!   in the `void *`. The predefined keyvals have Fortran values one above C's (as in MPICH):
//!   for them C hands out a pointer to the value, which is read here.
//!
//! Each function exists only when the library implements the C function
//! (`#[cfg(mpi_has = "MPI_X")]`, set by `build.rs`, see `twin!` in the module root), so the
//! library always links.

#![allow(unused_imports)]

use super::{buffer, set_ierr};
use crate::abi::*;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

twin! {
    "MPI_Init", mpi_init_ / pmpi_init_ f08 mpi_init_f08_ / pmpi_init_f08_ => MPI_Init / PMPI_Init,
    (ierr: *mut MPI_Fint) |call| {
        // SAFETY: MPI_Init accepts NULL argc/argv; ierr is the caller's IERROR.
        unsafe { set_ierr(ierr, call(null_mut(), null_mut())) }
    }
}

twin! {
    "MPI_Init_thread", mpi_init_thread_ / pmpi_init_thread_
        f08 mpi_init_thread_f08_ / pmpi_init_thread_f08_ => MPI_Init_thread / PMPI_Init_thread,
    (required: *const c_int, provided: *mut c_int, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references; MPI_Init_thread accepts NULL argc/argv.
        unsafe { set_ierr(ierr, call(null_mut(), null_mut(), *required, provided)) }
    }
}

twin! {
    "MPI_Info_create_env", mpi_info_create_env_ / pmpi_info_create_env_
        f08 mpi_info_create_env_f08_ / pmpi_info_create_env_f08_ => MPI_Info_create_env / PMPI_Info_create_env,
    (info: *mut MPI_Info, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references (a Fortran info handle is the C one); the C function
        // accepts no arguments (argc 0, argv NULL).
        unsafe { set_ierr(ierr, call(0, null_mut(), info)) }
    }
}

twin! {
    "MPI_Pcontrol", mpi_pcontrol_ / pmpi_pcontrol_ => MPI_Pcontrol / PMPI_Pcontrol,
    (level: *const c_int, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references; the C function takes the level alone.
        unsafe { set_ierr(ierr, call(*level)) }
    }
}

/// `MPI_Pcontrol_f08` of `mpi_f08`: `MPI_Pcontrol(level)` has no `ierror` there, so nothing
/// may be written through a second argument (the caller passes none).
///
/// # Safety
/// `level` is the caller's reference.
#[cfg(mpi_has = "MPI_Pcontrol")]
#[no_mangle]
pub unsafe extern "C" fn mpi_pcontrol_f08_(level: *const c_int) {
    // SAFETY: the caller's reference; a NULL IERROR is not written.
    unsafe { mpi_pcontrol_(level, null_mut()) }
}

/// `PMPI_Pcontrol_f08` of `pmpi_f08`: as [`mpi_pcontrol_f08_`], through `PMPI_Pcontrol`.
///
/// # Safety
/// `level` is the caller's reference.
#[cfg(mpi_has = "MPI_Pcontrol")]
#[no_mangle]
pub unsafe extern "C" fn pmpi_pcontrol_f08_(level: *const c_int) {
    // SAFETY: the caller's reference; a NULL IERROR is not written.
    unsafe { pmpi_pcontrol_(level, null_mut()) }
}

/// `count` default `INTEGER`s as `MPI_Aint`s.
#[allow(dead_code)] // while the library has none of the MPI-1 type constructors
///
/// # Safety
/// `p` points to `count` readable integers when `count > 0`.
unsafe fn widen(p: *const MPI_Fint, count: c_int) -> Vec<MPI_Aint> {
    if count <= 0 || p.is_null() {
        return Vec::new();
    }
    // SAFETY: see above.
    let ints = unsafe { std::slice::from_raw_parts(p, count as usize) };
    ints.iter().map(|&i| i as MPI_Aint).collect()
}

twin! {
    "MPI_Type_hvector", mpi_type_hvector_ / pmpi_type_hvector_ => MPI_Type_hvector / PMPI_Type_hvector,
    (count: *const c_int, blocklength: *const c_int, stride: *const MPI_Fint,
     oldtype: *const MPI_Datatype, newtype: *mut MPI_Datatype, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references.
        unsafe {
            let r = call(*count, *blocklength, *stride as MPI_Aint, *oldtype, newtype);
            set_ierr(ierr, r)
        }
    }
}

twin! {
    "MPI_Type_hindexed", mpi_type_hindexed_ / pmpi_type_hindexed_ => MPI_Type_hindexed / PMPI_Type_hindexed,
    (count: *const c_int, blocklengths: *const c_int, displacements: *const MPI_Fint,
     oldtype: *const MPI_Datatype, newtype: *mut MPI_Datatype, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references and arrays of `count` entries.
        unsafe {
            let d = widen(displacements, *count);
            let r = call(*count, blocklengths, d.as_ptr(), *oldtype, newtype);
            set_ierr(ierr, r)
        }
    }
}

twin! {
    "MPI_Type_struct", mpi_type_struct_ / pmpi_type_struct_ => MPI_Type_struct / PMPI_Type_struct,
    (count: *const c_int, blocklengths: *const c_int, displacements: *const MPI_Fint,
     types: *const MPI_Datatype, newtype: *mut MPI_Datatype, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references and arrays of `count` entries.
        unsafe {
            let d = widen(displacements, *count);
            let r = call(*count, blocklengths, d.as_ptr(), types, newtype);
            set_ierr(ierr, r)
        }
    }
}

twin! {
    "MPI_Address", mpi_address_ / pmpi_address_ => MPI_Address / PMPI_Address,
    (location: *mut c_void, address: *mut MPI_Fint, ierr: *mut MPI_Fint) |call| {
        let mut a: MPI_Aint = 0;
        // SAFETY: the caller's references; `a` is a local.
        unsafe {
            let r = call(buffer(location) as *mut c_void, &mut a);
            if r == MPI_SUCCESS {
                *address = a as MPI_Fint;
            }
            set_ierr(ierr, r)
        }
    }
}

/// Defines an MPI-1 query whose Fortran result is a default `INTEGER` where C's is an
/// `MPI_Aint`.
macro_rules! narrow_query {
    ($has:literal, $f:ident / $pf:ident => $c:ident / $pc:ident) => {
        twin! {
            $has, $f / $pf => $c / $pc,
            (datatype: *const MPI_Datatype, result: *mut MPI_Fint, ierr: *mut MPI_Fint) |call| {
                let mut wide: MPI_Aint = 0;
                // SAFETY: the caller's references; `wide` is a local.
                unsafe {
                    let r = call(*datatype, &mut wide);
                    if r == MPI_SUCCESS {
                        *result = wide as MPI_Fint;
                    }
                    set_ierr(ierr, r)
                }
            }
        }
    };
}

narrow_query!("MPI_Type_extent", mpi_type_extent_ / pmpi_type_extent_ => MPI_Type_extent / PMPI_Type_extent);
narrow_query!("MPI_Type_lb", mpi_type_lb_ / pmpi_type_lb_ => MPI_Type_lb / PMPI_Type_lb);
narrow_query!("MPI_Type_ub", mpi_type_ub_ / pmpi_type_ub_ => MPI_Type_ub / PMPI_Type_ub);

twin! {
    "MPI_Buffer_detach", mpi_buffer_detach_ / pmpi_buffer_detach_ => MPI_Buffer_detach / PMPI_Buffer_detach,
    (_buffer: *mut c_void, size: *mut c_int, ierr: *mut MPI_Fint) |call| {
        let mut address: *mut c_void = null_mut();
        // SAFETY: the caller's references; the address is written to a local.
        unsafe { set_ierr(ierr, call((&raw mut address).cast(), size)) }
    }
}

/// The C keyval of a Fortran keyval, and whether it is a predefined one (whose C attribute
/// is a pointer to the value).
fn c_keyval(keyval: c_int) -> (c_int, bool) {
    if super::generated::PREDEFINED_KEYVALS.contains(&keyval.wrapping_sub(1)) {
        (keyval - 1, true)
    } else {
        (keyval, false)
    }
}

/// Gets an attribute as C stores it and turns it into Fortran's integer value.
///
/// # Safety
/// `flag` is the caller's writable `LOGICAL`; `get` is a C attribute getter.
unsafe fn get_value(
    get: impl FnOnce(c_int, *mut c_void) -> c_int,
    keyval: c_int,
    flag: *mut c_int,
) -> (c_int, Option<MPI_Aint>) {
    let (keyval, predefined) = c_keyval(keyval);
    let mut stored: *mut c_void = null_mut();
    let r = get(keyval, (&raw mut stored).cast());
    // SAFETY: the C getter has written the flag when it succeeded.
    if r != MPI_SUCCESS || unsafe { *flag } == 0 {
        return (r, None);
    }
    let value = if predefined && !stored.is_null() {
        // SAFETY: C's predefined attributes are pointers to an int that the library keeps.
        unsafe { *(stored as *const c_int) as MPI_Aint }
    } else {
        stored as MPI_Aint
    };
    (r, Some(value))
}

/// Defines the `SET_ATTR`/`GET_ATTR` pair of one object kind (`INTEGER(KIND=MPI_ADDRESS_KIND)`
/// values).
macro_rules! attr_functions {
    ($set_has:literal $set:ident / $pset:ident f08 $set08:ident / $pset08:ident
         => $cset:ident / $pcset:ident,
     $get_has:literal $get:ident / $pget:ident f08 $get08:ident / $pget08:ident
         => $cget:ident / $pcget:ident,
     $handle:ty) => {
        twin! {
            $set_has, $set / $pset f08 $set08 / $pset08 => $cset / $pcset,
            (object: *const $handle, keyval: *const c_int, value: *const MPI_Aint, ierr: *mut MPI_Fint) |call| {
                // SAFETY: the caller's references; the value is stored as a pointer-sized word.
                unsafe { set_ierr(ierr, call(*object, *keyval, *value as *mut c_void)) }
            }
        }
        twin! {
            $get_has, $get / $pget f08 $get08 / $pget08 => $cget / $pcget,
            (object: *const $handle, keyval: *const c_int, value: *mut MPI_Aint, flag: *mut c_int,
             ierr: *mut MPI_Fint) |call| {
                // SAFETY: the caller's references.
                unsafe {
                    let (r, v) = get_value(|k, out| call(*object, k, out, flag), *keyval, flag);
                    if let Some(v) = v {
                        *value = v;
                    }
                    set_ierr(ierr, r)
                }
            }
        }
    };
}

attr_functions!(
    "MPI_Comm_set_attr" mpi_comm_set_attr_ / pmpi_comm_set_attr_
        f08 mpi_comm_set_attr_f08_ / pmpi_comm_set_attr_f08_ => MPI_Comm_set_attr / PMPI_Comm_set_attr,
    "MPI_Comm_get_attr" mpi_comm_get_attr_ / pmpi_comm_get_attr_
        f08 mpi_comm_get_attr_f08_ / pmpi_comm_get_attr_f08_ => MPI_Comm_get_attr / PMPI_Comm_get_attr,
    MPI_Comm
);
attr_functions!(
    "MPI_Type_set_attr" mpi_type_set_attr_ / pmpi_type_set_attr_
        f08 mpi_type_set_attr_f08_ / pmpi_type_set_attr_f08_ => MPI_Type_set_attr / PMPI_Type_set_attr,
    "MPI_Type_get_attr" mpi_type_get_attr_ / pmpi_type_get_attr_
        f08 mpi_type_get_attr_f08_ / pmpi_type_get_attr_f08_ => MPI_Type_get_attr / PMPI_Type_get_attr,
    MPI_Datatype
);
attr_functions!(
    "MPI_Win_set_attr" mpi_win_set_attr_ / pmpi_win_set_attr_
        f08 mpi_win_set_attr_f08_ / pmpi_win_set_attr_f08_ => MPI_Win_set_attr / PMPI_Win_set_attr,
    "MPI_Win_get_attr" mpi_win_get_attr_ / pmpi_win_get_attr_
        f08 mpi_win_get_attr_f08_ / pmpi_win_get_attr_f08_ => MPI_Win_get_attr / PMPI_Win_get_attr,
    MPI_Win
);

twin! {
    "MPI_Attr_put", mpi_attr_put_ / pmpi_attr_put_ => MPI_Attr_put / PMPI_Attr_put,
    (comm: *const MPI_Comm, keyval: *const c_int, value: *const MPI_Fint, ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references; the value is stored as a pointer-sized word.
        unsafe { set_ierr(ierr, call(*comm, *keyval, *value as MPI_Aint as *mut c_void)) }
    }
}

twin! {
    "MPI_Attr_get", mpi_attr_get_ / pmpi_attr_get_ => MPI_Attr_get / PMPI_Attr_get,
    (comm: *const MPI_Comm, keyval: *const c_int, value: *mut MPI_Fint, flag: *mut c_int,
     ierr: *mut MPI_Fint) |call| {
        // SAFETY: the caller's references.
        unsafe {
            let (r, v) = get_value(|k, out| call(*comm, k, out, flag), *keyval, flag);
            if let Some(v) = v {
                *value = v as MPI_Fint;
            }
            set_ierr(ierr, r)
        }
    }
}

/// `MPI_F_SYNC_REG(BUF)`: a call the compiler cannot see through, so that it does not keep
/// `BUF` in a register across an MPI call that changes it behind its back (MPI-3, 17.1.17).
///
/// # Safety
/// Takes any address and does nothing with it.
#[no_mangle]
pub unsafe extern "C" fn mpi_f_sync_reg_(_buf: *mut c_void) {}

/// `PMPI_F_SYNC_REG`: as `mpi_f_sync_reg_`.
///
/// # Safety
/// Takes any address and does nothing with it.
#[no_mangle]
pub unsafe extern "C" fn pmpi_f_sync_reg_(_buf: *mut c_void) {}
