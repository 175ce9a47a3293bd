//! Attribute keyvals created from Fortran, and the predefined Fortran callbacks
//! (`MPI_COMM_DUP_FN`, `MPI_COMM_NULL_COPY_FN`, ...).
//!
//! A Fortran copy or delete callback does not have the C callback's ABI: every argument is
//! by reference, the error code is an `IERROR` argument instead of the return value, and the
//! attribute values are integers (`INTEGER(KIND=MPI_ADDRESS_KIND)`, or `INTEGER` for the
//! MPI-1 `MPI_KEYVAL_CREATE`). So the keyval is created in C with the trampolines of this
//! module, and the C `extra_state` is a [`FortranKeyval`] record holding the Fortran
//! procedures and the user's extra state. Records live as long as the process (a keyval's
//! callbacks may run until the last object carrying the attribute is freed, even after
//! `MPI_Comm_free_keyval`); there are few keyvals in a program.
//!
//! The predefined callbacks are exported under their Fortran names, with the Fortran ABI,
//! so `EXTERNAL MPI_COMM_DUP_FN` in `mpif.h` resolves to them and they go through the
//! trampolines like any user procedure.

#![allow(unused_imports, dead_code)]

use super::set_ierr;
use crate::abi::*;
use std::ffi::{c_int, c_void};

/// A Fortran copy callback with `INTEGER(KIND=MPI_ADDRESS_KIND)` values.
type CopyFn = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *const MPI_Aint,
    *const MPI_Aint,
    *mut MPI_Aint,
    *mut c_int,
    *mut MPI_Fint,
);
/// A Fortran delete callback with `INTEGER(KIND=MPI_ADDRESS_KIND)` values.
type DeleteFn = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *const MPI_Aint,
    *const MPI_Aint,
    *mut MPI_Fint,
);
/// The MPI-1 copy callback (`MPI_KEYVAL_CREATE`): `INTEGER` values.
type CopyFn1 = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *const MPI_Fint,
    *const MPI_Fint,
    *mut MPI_Fint,
    *mut c_int,
    *mut MPI_Fint,
);
/// The MPI-1 delete callback: `INTEGER` values.
type DeleteFn1 = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *const MPI_Fint,
    *const MPI_Fint,
    *mut MPI_Fint,
);

/// The Fortran side of one keyval, passed to C as its `extra_state`.
struct FortranKeyval {
    /// The copy procedure (`None`: the Fortran program passed no procedure at all).
    copy: Option<usize>,
    delete: Option<usize>,
    /// The user's `EXTRA_STATE`.
    extra: MPI_Aint,
    /// `MPI_KEYVAL_CREATE`: values and extra state are default `INTEGER`s.
    mpi1: bool,
}

/// The C copy callback of every Fortran keyval.
unsafe extern "C" fn copy_trampoline(
    old: c_int,
    keyval: c_int,
    extra_state: *mut c_void,
    value_in: *mut c_void,
    value_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // SAFETY: extra_state is the record `create` made for this keyval, alive for the process.
    let record = unsafe { &*(extra_state as *const FortranKeyval) };
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    let Some(copy) = record.copy else {
        // SAFETY: the C library's flag argument.
        unsafe { *flag = 0 };
        return MPI_SUCCESS;
    };
    let mut out: MPI_Aint = 0;
    // SAFETY: `copy` is the address of a Fortran procedure of the kind the record says; all
    // arguments are locals or the C library's own, valid for the call.
    unsafe {
        if record.mpi1 {
            let f: CopyFn1 = std::mem::transmute::<usize, CopyFn1>(copy);
            let extra = record.extra as MPI_Fint;
            let input = value_in as MPI_Aint as MPI_Fint;
            let mut out1: MPI_Fint = 0;
            f(&old, &keyval, &extra, &input, &mut out1, flag, &mut ierr);
            out = out1 as MPI_Aint;
        } else {
            let f: CopyFn = std::mem::transmute::<usize, CopyFn>(copy);
            f(
                &old,
                &keyval,
                &record.extra,
                &(value_in as MPI_Aint),
                &mut out,
                flag,
                &mut ierr,
            );
        }
        if ierr == MPI_SUCCESS && *flag != 0 {
            *(value_out as *mut *mut c_void) = out as *mut c_void;
        }
    }
    ierr
}

/// The C delete callback of every Fortran keyval.
unsafe extern "C" fn delete_trampoline(
    object: c_int,
    keyval: c_int,
    value: *mut c_void,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: as in `copy_trampoline`.
    let record = unsafe { &*(extra_state as *const FortranKeyval) };
    let Some(delete) = record.delete else {
        return MPI_SUCCESS;
    };
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    // SAFETY: as in `copy_trampoline`.
    unsafe {
        if record.mpi1 {
            let f: DeleteFn1 = std::mem::transmute::<usize, DeleteFn1>(delete);
            let extra = record.extra as MPI_Fint;
            f(
                &object,
                &keyval,
                &(value as MPI_Aint as MPI_Fint),
                &extra,
                &mut ierr,
            );
        } else {
            let f: DeleteFn = std::mem::transmute::<usize, DeleteFn>(delete);
            f(
                &object,
                &keyval,
                &(value as MPI_Aint),
                &record.extra,
                &mut ierr,
            );
        }
    }
    ierr
}

/// A new record for C's `extra_state`, alive for the rest of the process.
fn record(copy: *const c_void, delete: *const c_void, extra: MPI_Aint, mpi1: bool) -> *mut c_void {
    let address = |p: *const c_void| (!p.is_null()).then_some(p as usize);
    let record = FortranKeyval {
        copy: address(copy),
        delete: address(delete),
        extra,
        mpi1,
    };
    Box::into_raw(Box::new(record)).cast()
}

/// Defines a Fortran `..._CREATE_KEYVAL` (and its `pmpi_` twin) over the C function.
macro_rules! create_keyval {
    ($has:literal, $f:ident / $pf:ident $(f08 $f08:ident / $pf08:ident)? => $c:ident / $pc:ident,
     $extra:ty, $mpi1:expr) => {
        twin! {
            $has, $f / $pf $(f08 $f08 / $pf08)? => $c / $pc,
            (copy: *const c_void, delete: *const c_void, keyval: *mut c_int, extra: *const $extra,
             ierr: *mut MPI_Fint) |call| {
                // SAFETY: the caller's references; the trampolines have the C callbacks' types.
                unsafe {
                    let state = record(copy, delete, *extra as MPI_Aint, $mpi1);
                    let r = call(Some(copy_trampoline), Some(delete_trampoline), keyval, state);
                    set_ierr(ierr, r)
                }
            }
        }
    };
}

create_keyval!("MPI_Comm_create_keyval", mpi_comm_create_keyval_ / pmpi_comm_create_keyval_
    f08 mpi_comm_create_keyval_f08_ / pmpi_comm_create_keyval_f08_
    => MPI_Comm_create_keyval / PMPI_Comm_create_keyval, MPI_Aint, false);
create_keyval!("MPI_Type_create_keyval", mpi_type_create_keyval_ / pmpi_type_create_keyval_
    f08 mpi_type_create_keyval_f08_ / pmpi_type_create_keyval_f08_
    => MPI_Type_create_keyval / PMPI_Type_create_keyval, MPI_Aint, false);
create_keyval!("MPI_Win_create_keyval", mpi_win_create_keyval_ / pmpi_win_create_keyval_
    f08 mpi_win_create_keyval_f08_ / pmpi_win_create_keyval_f08_
    => MPI_Win_create_keyval / PMPI_Win_create_keyval, MPI_Aint, false);
create_keyval!("MPI_Keyval_create", mpi_keyval_create_ / pmpi_keyval_create_
    => MPI_Keyval_create / PMPI_Keyval_create, MPI_Fint, true);

// ---- The predefined callbacks, with the Fortran ABI ----------------------------------------

/// Defines `NULL_COPY_FN` (no copy), `DUP_FN` (copy the value) and `NULL_DELETE_FN`
/// (nothing to do) for one value type.
macro_rules! predefined_callbacks {
    ($value:ty: $null_copy:ident, $dup:ident, $null_delete:ident) => {
        #[doc = concat!("`", stringify!($null_copy), "`: the attribute is not copied.")]
        ///
        /// # Safety
        /// Called by the library's trampolines with valid references.
        #[no_mangle]
        pub unsafe extern "C" fn $null_copy(
            _old: *const c_int,
            _keyval: *const c_int,
            _extra: *const $value,
            _value_in: *const $value,
            _value_out: *mut $value,
            flag: *mut c_int,
            ierr: *mut MPI_Fint,
        ) {
            // SAFETY: see above.
            unsafe {
                *flag = 0;
                set_ierr(ierr, MPI_SUCCESS);
            }
        }

        #[doc = concat!("`", stringify!($dup), "`: the new object gets the same value.")]
        ///
        /// # Safety
        /// Called by the library's trampolines with valid references.
        #[no_mangle]
        pub unsafe extern "C" fn $dup(
            _old: *const c_int,
            _keyval: *const c_int,
            _extra: *const $value,
            value_in: *const $value,
            value_out: *mut $value,
            flag: *mut c_int,
            ierr: *mut MPI_Fint,
        ) {
            // SAFETY: see above.
            unsafe {
                *value_out = *value_in;
                *flag = 1;
                set_ierr(ierr, MPI_SUCCESS);
            }
        }

        #[doc = concat!("`", stringify!($null_delete), "`: nothing to release.")]
        ///
        /// # Safety
        /// Called by the library's trampolines with valid references.
        #[no_mangle]
        pub unsafe extern "C" fn $null_delete(
            _object: *const c_int,
            _keyval: *const c_int,
            _value: *const $value,
            _extra: *const $value,
            ierr: *mut MPI_Fint,
        ) {
            // SAFETY: see above.
            unsafe { set_ierr(ierr, MPI_SUCCESS) }
        }
    };
}

predefined_callbacks!(MPI_Aint: mpi_comm_null_copy_fn_, mpi_comm_dup_fn_, mpi_comm_null_delete_fn_);
predefined_callbacks!(MPI_Aint: mpi_type_null_copy_fn_, mpi_type_dup_fn_, mpi_type_null_delete_fn_);
predefined_callbacks!(MPI_Aint: mpi_win_null_copy_fn_, mpi_win_dup_fn_, mpi_win_null_delete_fn_);
predefined_callbacks!(MPI_Fint: mpi_null_copy_fn_, mpi_dup_fn_, mpi_null_delete_fn_);
