//! The MPI-IO entry points that the generator's rules do not cover: file error handlers and
//! `MPI_REGISTER_DATAREP` (and `MPI_REGISTER_DATAREP_C`, whose conversion functions take
//! `COUNT` as `INTEGER(KIND=MPI_COUNT_KIND)`: trampolines of their own).
//!
//! **Error handlers.**
//! A Fortran file handle is the file's number (`MPI_File_c2f`), not the C handle (a pointer
//! in MPICH's ABI), so a Fortran file error handler (`SUBROUTINE H(FILE, ERRCODE)`, both
//! `INTEGER`) cannot be called as a C one, which gets a pointer to the C handle. A Fortran
//! handler is therefore created in C with [`file_handler_trampoline`] as its function, and
//! the Fortran procedure is kept in [`FORTRAN_FILE_HANDLERS`] under the handle of the C error
//! handler. When the library calls the trampoline for a file, it asks the file table which
//! handler that file has (the one the library just chose: the file's, or `MPI_FILE_NULL`'s)
//! and calls that handler's Fortran procedure with the file's Fortran number.
//!
//! The library calls a program's handler after letting go of the file table (see
//! `file::api::run`), so the trampoline may look the table up.
//!
//! **Data representations.** A Fortran conversion function takes every argument by
//! reference and returns its error in `IERROR`; its `EXTRA_STATE` is an
//! `INTEGER(KIND=MPI_ADDRESS_KIND)` value. `MPI_REGISTER_DATAREP` therefore registers C
//! trampolines ([`read_trampoline`], [`write_trampoline`], [`extent_trampoline`]) whose C
//! `extra_state` is a [`FortranDatarep`] record holding the three procedures and the value.
//! Records live as long as the process, as registrations do. `MPI_CONVERSION_FN_NULL` of
//! `mpif.h` is [`mpi_conversion_fn_null_`]: given for a conversion, C gets its NULL (the file
//! holds the memory's bytes); its address is recognised as the library's own and as the one
//! the dynamic linker gives the name (a program's reference may resolve to either).

use super::set_ierr;
use crate::abi::*;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Mutex, PoisonError};

/// A Fortran file error handler: `(FILE, ERRCODE)`, both `INTEGER`, by reference.
type FortranFileHandler = unsafe extern "C" fn(*mut MPI_Fint, *mut MPI_Fint);

/// The Fortran procedure of each error handler created by `MPI_FILE_CREATE_ERRHANDLER`, by
/// the handle of the C error handler made for it (addresses, so the map is `Send`).
static FORTRAN_FILE_HANDLERS: Mutex<BTreeMap<MPI_Errhandler, usize>> = Mutex::new(BTreeMap::new());

/// The C function of every error handler created from Fortran: calls the Fortran procedure
/// of the handler that `file` has, with the file's Fortran number.
///
/// # Safety
/// Called by the library as a file error handler: `file` and `code` point to its locals.
unsafe extern "C" fn file_handler_trampoline(file: *mut MPI_File, code: *mut c_int) {
    // SAFETY: see above.
    let c_file = unsafe { *file };
    let (handler, _) = crate::file::files().errhandler_of(c_file);
    let procedure = FORTRAN_FILE_HANDLERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&handler)
        .copied();
    let Some(procedure) = procedure else {
        return;
    };
    let mut fortran_file = crate::file::files().c2f(c_file);
    // SAFETY: `procedure` is the address of the Fortran procedure given to
    // MPI_FILE_CREATE_ERRHANDLER, whose interface the standard fixes (two INTEGERs by
    // reference); the arguments are a local and the library's own error code.
    unsafe {
        let f = std::mem::transmute::<usize, FortranFileHandler>(procedure);
        f(&mut fortran_file, code);
    }
}

twin! {
    "MPI_File_create_errhandler",
    mpi_file_create_errhandler_ / pmpi_file_create_errhandler_
        f08 mpi_file_create_errhandler_f08_ / pmpi_file_create_errhandler_f08_
        => MPI_File_create_errhandler / PMPI_File_create_errhandler,
    (function: Option<FortranFileHandler>, errhandler: *mut MPI_Errhandler, ierr: *mut MPI_Fint) |call| {
        // The trampoline for C: it is called as `(MPI_File *, int *, ...)`; the variadic part
        // is never used, and a non-variadic function called so sees its two named arguments
        // where the platform's C convention puts them (as the C program's own handlers do).
        let trampoline = file_handler_trampoline as unsafe extern "C" fn(*mut MPI_File, *mut c_int);
        // SAFETY: two function pointer types of one size; see the comment above.
        let c_function: MPI_File_errhandler_function = function.map(|_| unsafe {
            std::mem::transmute::<
                unsafe extern "C" fn(*mut MPI_File, *mut c_int),
                unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...),
            >(trampoline)
        });
        // SAFETY: the caller's references; the C function checks its arguments.
        unsafe {
            let r = call(c_function, errhandler);
            if r == MPI_SUCCESS {
                if let Some(f) = function {
                    FORTRAN_FILE_HANDLERS
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(*errhandler, f as usize);
                }
            }
            set_ierr(ierr, r)
        }
    }
}

/// A Fortran conversion function: `(USERBUF, DATATYPE, COUNT, FILEBUF, POSITION,
/// EXTRA_STATE, IERROR)`, all by reference.
type FortranConversion = unsafe extern "C" fn(
    *mut c_void,
    *const MPI_Datatype,
    *const c_int,
    *mut c_void,
    *const MPI_Offset,
    *const MPI_Aint,
    *mut MPI_Fint,
);
/// A Fortran extent function: `(DATATYPE, EXTENT, EXTRA_STATE, IERROR)`, all by reference.
type FortranExtent =
    unsafe extern "C" fn(*const MPI_Datatype, *mut MPI_Aint, *const MPI_Aint, *mut MPI_Fint);

/// The large-count conversion function of `MPI_REGISTER_DATAREP_C`: as
/// [`FortranConversion`] with `COUNT` an `INTEGER(KIND=MPI_COUNT_KIND)`.
type FortranConversionC = unsafe extern "C" fn(
    *mut c_void,
    *const MPI_Datatype,
    *const MPI_Count,
    *mut c_void,
    *const MPI_Offset,
    *const MPI_Aint,
    *mut MPI_Fint,
);

/// The Fortran side of one registered representation, passed to C as its `extra_state`.
/// The conversions are [`FortranConversion`]s, or [`FortranConversionC`]s when registered by
/// `MPI_REGISTER_DATAREP_C` (stored as addresses; the trampolines of that form call them).
struct FortranDatarep {
    read: usize,
    write: usize,
    extent: FortranExtent,
    /// The program's `EXTRA_STATE` value.
    extra: MPI_Aint,
}

/// `MPI_CONVERSION_FN_NULL` for Fortran (`EXTERNAL` in `mpif.h`): stands for "no conversion"
/// in `MPI_REGISTER_DATAREP`, which gives C its NULL instead; called, it converts nothing and
/// fails.
///
/// # Safety
/// The Fortran conversion function's references (only `IERROR` is touched).
#[no_mangle]
pub unsafe extern "C" fn mpi_conversion_fn_null_(
    _userbuf: *mut c_void,
    _datatype: *const MPI_Datatype,
    _count: *const c_int,
    _filebuf: *mut c_void,
    _position: *const MPI_Offset,
    _extra: *const MPI_Aint,
    ierr: *mut MPI_Fint,
) {
    // SAFETY: see above.
    unsafe { set_ierr(ierr, MPI_ERR_CONVERSION) }
}

/// `MPI_CONVERSION_FN_NULL_C`: as [`mpi_conversion_fn_null_`], for `MPI_REGISTER_DATAREP_C`.
///
/// # Safety
/// The Fortran conversion function's references (only `IERROR` is touched).
#[no_mangle]
pub unsafe extern "C" fn mpi_conversion_fn_null_c_(
    _userbuf: *mut c_void,
    _datatype: *const MPI_Datatype,
    _count: *const MPI_Count,
    _filebuf: *mut c_void,
    _position: *const MPI_Offset,
    _extra: *const MPI_Aint,
    ierr: *mut MPI_Fint,
) {
    // SAFETY: see above.
    unsafe { set_ierr(ierr, MPI_ERR_CONVERSION) }
}

/// Whether a procedure given to `MPI_REGISTER_DATAREP(_C)` is `MPI_CONVERSION_FN_NULL` or
/// `MPI_CONVERSION_FN_NULL_C` (or none).
fn is_conversion_fn_null(procedure: *const c_void) -> bool {
    let own = mpi_conversion_fn_null_ as FortranConversion as usize;
    let own_c = mpi_conversion_fn_null_c_ as FortranConversionC as usize;
    let resolved = super::both(c"mpi_conversion_fn_null_", own);
    let resolved_c = super::both(c"mpi_conversion_fn_null_c_", own_c);
    let p = procedure as usize;
    procedure.is_null() || resolved.contains(&p) || resolved_c.contains(&p)
}

/// Calls a Fortran conversion function for C and returns its `IERROR`.
///
/// # Safety
/// `f` is a Fortran conversion procedure; the buffers are the library's, as C's function
/// would get them.
unsafe fn convert(
    f: usize,
    record: &FortranDatarep,
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: c_int,
    filebuf: *mut c_void,
    position: MPI_Offset,
) -> c_int {
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    // SAFETY: see above; the scalars are locals, valid for the call; `f` is the address of a
    // procedure of the int form (`MPI_REGISTER_DATAREP` registered it).
    unsafe {
        let f = std::mem::transmute::<usize, FortranConversion>(f);
        f(
            userbuf,
            &datatype,
            &count,
            filebuf,
            &position,
            &record.extra,
            &mut ierr,
        )
    };
    ierr
}

/// As [`convert`], for a conversion of `MPI_REGISTER_DATAREP_C` (an `MPI_Count` count).
///
/// # Safety
/// As [`convert`]; `f` is the address of a procedure of the large-count form.
unsafe fn convert_c(
    f: usize,
    record: &FortranDatarep,
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: MPI_Count,
    filebuf: *mut c_void,
    position: MPI_Offset,
) -> c_int {
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    // SAFETY: see above.
    unsafe {
        let f = std::mem::transmute::<usize, FortranConversionC>(f);
        f(
            userbuf,
            &datatype,
            &count,
            filebuf,
            &position,
            &record.extra,
            &mut ierr,
        )
    };
    ierr
}

/// The C read conversion of every representation registered by `MPI_REGISTER_DATAREP_C`.
///
/// # Safety
/// As [`read_trampoline`].
unsafe extern "C" fn read_trampoline_c(
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: MPI_Count,
    filebuf: *mut c_void,
    position: MPI_Offset,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        let record = &*(extra_state as *const FortranDatarep);
        convert_c(
            record.read,
            record,
            userbuf,
            datatype,
            count,
            filebuf,
            position,
        )
    }
}

/// The C write conversion of every representation registered by `MPI_REGISTER_DATAREP_C`.
///
/// # Safety
/// As [`read_trampoline`].
unsafe extern "C" fn write_trampoline_c(
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: MPI_Count,
    filebuf: *mut c_void,
    position: MPI_Offset,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        let record = &*(extra_state as *const FortranDatarep);
        convert_c(
            record.write,
            record,
            userbuf,
            datatype,
            count,
            filebuf,
            position,
        )
    }
}

/// The C read conversion of every representation registered from Fortran.
///
/// # Safety
/// Called by the library as a read conversion function, with the `extra_state` that
/// `MPI_REGISTER_DATAREP` registered: a [`FortranDatarep`] alive for the process.
unsafe extern "C" fn read_trampoline(
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: c_int,
    filebuf: *mut c_void,
    position: MPI_Offset,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        let record = &*(extra_state as *const FortranDatarep);
        convert(
            record.read,
            record,
            userbuf,
            datatype,
            count,
            filebuf,
            position,
        )
    }
}

/// The C write conversion of every representation registered from Fortran.
///
/// # Safety
/// As [`read_trampoline`].
unsafe extern "C" fn write_trampoline(
    userbuf: *mut c_void,
    datatype: MPI_Datatype,
    count: c_int,
    filebuf: *mut c_void,
    position: MPI_Offset,
    extra_state: *mut c_void,
) -> c_int {
    // SAFETY: see above.
    unsafe {
        let record = &*(extra_state as *const FortranDatarep);
        convert(
            record.write,
            record,
            userbuf,
            datatype,
            count,
            filebuf,
            position,
        )
    }
}

/// The C extent function of every representation registered from Fortran.
///
/// # Safety
/// As [`read_trampoline`]; `file_extent` is the library's writable `MPI_Aint`.
unsafe extern "C" fn extent_trampoline(
    datatype: MPI_Datatype,
    file_extent: *mut MPI_Aint,
    extra_state: *mut c_void,
) -> c_int {
    let mut ierr: MPI_Fint = MPI_SUCCESS;
    // SAFETY: see above; the scalars are locals, valid for the call.
    unsafe {
        let record = &*(extra_state as *const FortranDatarep);
        (record.extent)(&datatype, file_extent, &record.extra, &mut ierr);
    }
    ierr
}

/// The record of a Fortran registration's procedures, handed to C as its extra state (`None`
/// when the extent function is missing, which C then reports), and whether the conversions
/// are `MPI_CONVERSION_FN_NULL`.
///
/// # Safety
/// `extra` is the caller's reference; `extent` is a Fortran procedure of the standard's
/// interface, or NULL.
unsafe fn fortran_record(
    read: *const c_void,
    write: *const c_void,
    extent: *const c_void,
    extra: *const MPI_Aint,
) -> Option<(*mut FortranDatarep, bool, bool)> {
    if extent.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: `extent` is a procedure of that interface, `extra` a
    // reference.
    let record = unsafe {
        FortranDatarep {
            read: read as usize,
            write: write as usize,
            extent: std::mem::transmute::<*const c_void, FortranExtent>(extent),
            extra: *extra,
        }
    };
    Some((
        Box::into_raw(Box::new(record)),
        is_conversion_fn_null(read),
        is_conversion_fn_null(write),
    ))
}

/// Ends a registration: a record C did not take (the call failed) is freed.
///
/// # Safety
/// `record` came from [`fortran_record`] and C keeps it only when `r` is `MPI_SUCCESS`.
unsafe fn registered(record: *mut FortranDatarep, r: c_int, ierr: *mut MPI_Fint) {
    // SAFETY: the caller's contract.
    unsafe {
        if r != MPI_SUCCESS {
            drop(Box::from_raw(record));
        }
        set_ierr(ierr, r)
    }
}

twin! {
    "MPI_Register_datarep",
    mpi_register_datarep_ / pmpi_register_datarep_
        f08 mpi_register_datarep_f08_ / pmpi_register_datarep_f08_
        => MPI_Register_datarep / PMPI_Register_datarep,
    (datarep: *const c_char, read: *const c_void, write: *const c_void, extent: *const c_void,
     extra: *const MPI_Aint, ierr: *mut MPI_Fint, datarep_len: usize) |call| {
        // SAFETY: the caller's references; the procedures are Fortran procedures of the
        // interfaces the standard gives (or MPI_CONVERSION_FN_NULL, which stands for NULL).
        unsafe {
            let name = super::InString::new(datarep, datarep_len);
            let Some((record, no_read, no_write)) = fortran_record(read, write, extent, extra) else {
                return set_ierr(ierr, call(name.as_ptr(), None, None, None, std::ptr::null_mut()));
            };
            let r = call(
                name.as_ptr(),
                if no_read { None } else { Some(read_trampoline) },
                if no_write { None } else { Some(write_trampoline) },
                Some(extent_trampoline),
                record.cast(),
            );
            registered(record, r, ierr)
        }
    }
}

twin! {
    "MPI_Register_datarep_c",
    mpi_register_datarep_c_ / pmpi_register_datarep_c_
        f08 mpi_register_datarep_c_f08_ / pmpi_register_datarep_c_f08_
        => MPI_Register_datarep_c / PMPI_Register_datarep_c,
    (datarep: *const c_char, read: *const c_void, write: *const c_void, extent: *const c_void,
     extra: *const MPI_Aint, ierr: *mut MPI_Fint, datarep_len: usize) |call| {
        // SAFETY: as for MPI_REGISTER_DATAREP; the conversions are of the large-count form.
        unsafe {
            let name = super::InString::new(datarep, datarep_len);
            let Some((record, no_read, no_write)) = fortran_record(read, write, extent, extra) else {
                return set_ierr(ierr, call(name.as_ptr(), None, None, None, std::ptr::null_mut()));
            };
            let r = call(
                name.as_ptr(),
                if no_read { None } else { Some(read_trampoline_c) },
                if no_write { None } else { Some(write_trampoline_c) },
                Some(extent_trampoline),
                record.cast(),
            );
            registered(record, r, ierr)
        }
    }
}
