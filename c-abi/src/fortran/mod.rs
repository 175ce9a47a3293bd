//! The Fortran binding: the entry points gfortran calls (`mpi_send_`), the sentinels of
//! `mpif.h`, and the handle and status conversion functions of C (`MPI_Comm_f2c`, ...).
//!
//! ```text
//!   call MPI_SEND(buf, n, MPI_INTEGER, 1, 0, MPI_COMM_WORLD, ierr)
//!     ──▶ mpi_send_(&buf, &n, &type, &dest, &tag, &comm, &ierr)     (generated, this module)
//!     ──▶ MPI_Send(buf, n, type, dest, tag, comm)                     (the C entry point)
//! ```
//!
//! **One source of truth.** `build.rs` (`fortran/generate.rs`) writes `mpif.h` and the `mpi`
//! module from the constants of `mpi.h`, and generates a wrapper for every C function the
//! library implements, by rules on the C parameter types (see that file's table): values are
//! read from their references, handles are the C handles (a Fortran `INTEGER` handle *is* the
//! C handle, so the `_f2c`/`_c2f` conversions are the identity; except files: a C `MPI_File`
//! is a pointer in MPICH's ABI, a Fortran one the file's number, converted by the wrappers
//! with `MPI_File_f2c`/`MPI_File_c2f`), a Fortran status is the C
//! `MPI_Status` (five `INTEGER`s: `MPI_SOURCE`, `MPI_TAG`, `MPI_ERROR` at 1-based indexes
//! 3, 4, 5), `LOGICAL` is gfortran's 0/1 `int` as C uses it, strings come blank-padded with
//! hidden lengths after the other arguments. The wrapper `mpi_x_` calls `MPI_X` (so a C
//! profiling library sees Fortran calls too) and `pmpi_x_` calls `PMPI_X`. The few functions
//! that do not fit the rules are in [`special`].
//!
//! **Sentinels.** `MPI_BOTTOM`, `MPI_IN_PLACE`, `MPI_STATUS(ES)_IGNORE`, ... are variables in
//! common blocks (`/MPIPRIV1/`, ... as MPICH lays them out), which the library also defines
//! ([`mpipriv1_`], ...). A program linked against the library may use its own copy of a
//! common block (gfortran emits them as common symbols) or the library's; the address the
//! program passes is therefore compared with both: the library's own, and the one the dynamic
//! linker resolves the name to ([`Sentinels`]).
//!
//! **MPICH's Fortran ABI.** The common blocks, the constants (including MPICH's two Fortran
//! twists: predefined attribute keyvals one above C's, string maxima one below C's) and the
//! entry point names are MPICH's, so a program built by MPICH's `mpif77` runs on this library
//! too: `build.rs` also names the library `libmpichfort.so.12`.
//!
//! **Fortran 2008.** The `mpi_f08` module's specific procedures (`mpi_x_f08_`) forward mostly
//! to these same entry points; [`f08`] has what it needs beyond them (descriptors of choice
//! buffers, its sentinels, `==`).
//!
//! Parts: the generated wrappers (`generated`), the hand-written ones ([`special`]: start-up,
//! MPI-1 `INTEGER` displacements, attribute values; [`spawn`]: the arrays of strings of
//! `MPI_COMM_SPAWN(_MULTIPLE)`), attribute keyvals with Fortran callbacks
//! and the predefined callbacks (`keyval`), file error handlers and data representations
//! with Fortran procedures (`file`), and the C conversion functions (`convert`).

#![allow(non_upper_case_globals)]

/// Defines the entry point `mpi_x_` calling `MPI_X` and `pmpi_x_` calling `PMPI_X`, only when
/// the library implements `MPI_X` (`build.rs` sets `mpi_has = "MPI_X"`), so that the library
/// always links. In the body, `$call` names the C function to call.
///
/// With `f08 mpi_x_f08_ / pmpi_x_f08_` after the names, also the entry points of the `mpi_f08`
/// specific procedures `MPI_X_f08` / `PMPI_X_f08` (MPI 4.0 §19.1.5), whose interface bodies
/// pass the same arguments: each calls `mpi_x_` (`pmpi_x_`) with them.
macro_rules! twin {
    (
        $has:literal, $f:ident / $pf:ident f08 $f08:ident / $pf08:ident => $c:ident / $pc:ident,
        ($($arg:ident : $ty:ty),* $(,)?) |$call:ident| $body:block
    ) => {
        twin! { $has, $f / $pf => $c / $pc, ($($arg: $ty),*) |$call| $body }
        #[doc = concat!("`", $has, "_f08` of `mpi_f08`: as `", stringify!($f), "`.")]
        ///
        /// # Safety
        /// gfortran's calling convention: every argument by reference.
        #[cfg(mpi_has = $has)]
        #[no_mangle]
        pub unsafe extern "C" fn $f08($($arg: $ty),*) {
            // SAFETY: the caller's arguments, passed on as they came.
            unsafe { $f($($arg),*) }
        }
        #[doc = concat!("`P", $has, "_f08` of `pmpi_f08`: as `", stringify!($pf), "`.")]
        ///
        /// # Safety
        /// gfortran's calling convention: every argument by reference.
        #[cfg(mpi_has = $has)]
        #[no_mangle]
        pub unsafe extern "C" fn $pf08($($arg: $ty),*) {
            // SAFETY: the caller's arguments, passed on as they came.
            unsafe { $pf($($arg),*) }
        }
    };
    (
        $has:literal, $f:ident / $pf:ident => $c:ident / $pc:ident,
        ($($arg:ident : $ty:ty),* $(,)?) |$call:ident| $body:block
    ) => {
        #[doc = concat!("`", $has, "` for Fortran.")]
        ///
        /// # Safety
        /// gfortran's calling convention: every argument by reference.
        #[cfg(mpi_has = $has)]
        #[no_mangle]
        pub unsafe extern "C" fn $f($($arg: $ty),*) {
            use crate::abi::$c as $call;
            $body
        }
        #[doc = concat!("`P", $has, "` for Fortran.")]
        ///
        /// # Safety
        /// gfortran's calling convention: every argument by reference.
        #[cfg(mpi_has = $has)]
        #[no_mangle]
        pub unsafe extern "C" fn $pf($($arg: $ty),*) {
            use crate::abi::$pc as $call;
            $body
        }
    };
}

mod convert;
mod f08;
mod file;
mod grequest;
mod keyval;
mod spawn;
mod special;

use crate::abi::*;
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

/// The generated entry points (`$OUT_DIR/fortran_entry_points.rs`).
#[allow(unused_imports, clippy::all, dead_code)]
mod generated {
    use crate::abi::*;
    use std::os::raw::*;
    include!(concat!(env!("OUT_DIR"), "/fortran_entry_points.rs"));
}

/// A Fortran common block defined by the library: plain memory at a known symbol, which the
/// Fortran program may write to (it is not `const` to the compiler), so it is mutable here.
#[repr(C)]
pub struct Common<T>(UnsafeCell<T>);

// SAFETY: the library never reads or writes the contents; only the address is used.
unsafe impl<T> Sync for Common<T> {}

/// `/MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE(MPI_STATUS_SIZE)`.
#[no_mangle]
pub static mpipriv1_: Common<[MPI_Fint; 7]> = Common(UnsafeCell::new([0; 7]));
/// `/MPIPRIV2/ MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1), MPI_ERRCODES_IGNORE(1)`.
#[no_mangle]
pub static mpipriv2_: Common<[MPI_Fint; 6]> = Common(UnsafeCell::new([0; 6]));
/// `/MPIPRIVC/ MPI_ARGVS_NULL(1,1), MPI_ARGV_NULL(1)` (`CHARACTER*1`).
#[no_mangle]
pub static mpiprivc_: Common<[u8; 2]> = Common(UnsafeCell::new([0; 2]));
/// `/MPIFCMB5/ MPI_UNWEIGHTED`.
#[no_mangle]
pub static mpifcmb5_: Common<MPI_Fint> = Common(UnsafeCell::new(0));
/// `/MPIFCMB9/ MPI_WEIGHTS_EMPTY`.
#[no_mangle]
pub static mpifcmb9_: Common<MPI_Fint> = Common(UnsafeCell::new(0));

/// `MPI_F_STATUS_IGNORE` of `mpi.h`: the Fortran `MPI_STATUS_IGNORE`, for C code.
#[no_mangle]
pub static mut MPI_F_STATUS_IGNORE: *mut MPI_Fint = (&raw const mpipriv1_)
    .cast::<MPI_Fint>()
    .wrapping_add(2)
    .cast_mut();
/// `MPI_F_STATUSES_IGNORE` of `mpi.h`: the Fortran `MPI_STATUSES_IGNORE`, for C code.
#[no_mangle]
pub static mut MPI_F_STATUSES_IGNORE: *mut MPI_Fint =
    (&raw const mpipriv2_).cast::<MPI_Fint>().cast_mut();

/// The addresses a Fortran program may pass for each sentinel: the library's copy of the
/// common block, and the one the program's symbol resolves to.
/// The first two of `bottom`, ..., `statuses_ignore` are the `mpif.h` ones, the last two the
/// `mpi_f08` ones ([`f08`]).
struct Sentinels {
    bottom: [usize; 4],
    in_place: [usize; 4],
    status_ignore: [usize; 4],
    statuses_ignore: [usize; 4],
    unweighted: [usize; 2],
    weights_empty: [usize; 2],
}

fn sentinels() -> &'static Sentinels {
    static SENTINELS: OnceLock<Sentinels> = OnceLock::new();
    SENTINELS.get_or_init(|| {
        let priv1 = both(c"mpipriv1_", &raw const mpipriv1_ as usize);
        let priv2 = both(c"mpipriv2_", &raw const mpipriv2_ as usize);
        let word = std::mem::size_of::<MPI_Fint>();
        let [f08_bottom, f08_in_place, f08_status, f08_statuses] = f08::own_sentinels();
        let join = |a: [usize; 2], b: [usize; 2]| [a[0], a[1], b[0], b[1]];
        Sentinels {
            bottom: join(priv1, both(c"MPIR_F08_MPI_BOTTOM", f08_bottom)),
            in_place: join(
                priv1.map(|a| a + word),
                both(c"MPIR_F08_MPI_IN_PLACE", f08_in_place),
            ),
            status_ignore: join(
                priv1.map(|a| a + 2 * word),
                both(c"MPIR_F08_MPI_STATUS_IGNORE_OBJ", f08_status),
            ),
            statuses_ignore: join(
                priv2,
                both(c"MPIR_F08_MPI_STATUSES_IGNORE_OBJ", f08_statuses),
            ),
            unweighted: both(c"mpifcmb5_", &raw const mpifcmb5_ as usize),
            weights_empty: both(c"mpifcmb9_", &raw const mpifcmb9_ as usize),
        }
    })
}

/// `[own, resolved]`: the library's address of the common block `name`, and the address the
/// dynamic linker gives the name (the program's copy, if it has one).
fn both(name: &CStr, own: usize) -> [usize; 2] {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let resolved = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize;
    [own, if resolved == 0 { own } else { resolved }]
}

/// A buffer argument as C wants it: `MPI_BOTTOM` and `MPI_IN_PLACE` become C's values.
#[inline]
pub(crate) fn buffer(p: *const c_void) -> *const c_void {
    let a = p as usize;
    if a == 0 {
        return p;
    }
    let s = sentinels();
    if s.bottom.contains(&a) {
        MPI_BOTTOM
    } else if s.in_place.contains(&a) {
        MPI_IN_PLACE
    } else {
        p
    }
}

/// A status (or array of statuses) argument: `MPI_STATUS(ES)_IGNORE` become C's values.
#[inline]
pub(crate) fn status(p: *const MPI_Status) -> *const MPI_Status {
    let a = p as usize;
    let s = sentinels();
    if s.status_ignore.contains(&a) {
        MPI_STATUS_IGNORE
    } else if s.statuses_ignore.contains(&a) {
        MPI_STATUSES_IGNORE
    } else {
        p
    }
}

/// A weights argument of the distributed-graph functions: `MPI_UNWEIGHTED` and
/// `MPI_WEIGHTS_EMPTY` become C's values. Exists only with those functions, which define
/// C's sentinels.
#[cfg(any(
    mpi_has = "MPI_Dist_graph_create",
    mpi_has = "MPI_Dist_graph_create_adjacent",
    mpi_has = "MPI_Dist_graph_neighbors"
))]
pub(crate) fn weights(p: *const std::ffi::c_int) -> *const std::ffi::c_int {
    let a = p as usize;
    let s = sentinels();
    // SAFETY: reading the library's two `int * const` sentinel variables.
    unsafe {
        if s.unweighted.contains(&a) {
            crate::abi::MPI_UNWEIGHTED
        } else if s.weights_empty.contains(&a) {
            crate::abi::MPI_WEIGHTS_EMPTY
        } else {
            p
        }
    }
}

/// Stores the C function's result in the Fortran `IERROR` argument.
///
/// # Safety
/// `ierr` is NULL or points to a writable `INTEGER`.
#[inline]
pub(crate) unsafe fn set_ierr(ierr: *mut MPI_Fint, result: MPI_Fint) {
    if !ierr.is_null() {
        // SAFETY: the caller's IERROR argument (see above).
        unsafe { ierr.write(result) }
    }
}

/// A Fortran `CHARACTER` input as a C string: trailing blanks dropped, NUL added.
pub(crate) struct InString(Vec<u8>);

impl InString {
    /// # Safety
    /// `p` points to `len` readable bytes (or is NULL).
    pub unsafe fn new(p: *const c_char, len: usize) -> InString {
        let text: &[u8] = if p.is_null() || len == 0 {
            &[]
        } else {
            // SAFETY: the Fortran actual argument has its hidden length `len` (see above).
            unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
        };
        let end = text.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        let mut bytes = Vec::with_capacity(end + 1);
        bytes.extend_from_slice(&text[..end]);
        bytes.push(0);
        InString(bytes)
    }

    pub fn as_ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

/// A Fortran `CHARACTER` output: C writes a NUL-terminated string into a buffer of its own,
/// [`OutString::finish`] copies it to the Fortran variable and pads it with blanks.
pub(crate) struct OutString {
    dst: *mut c_char,
    len: usize,
    buf: Vec<u8>,
}

/// Room for the longest string an MPI function writes (`MPI_MAX_LIBRARY_VERSION_STRING`).
const LONGEST_C_STRING: usize = 8192;

impl OutString {
    pub fn new(dst: *mut c_char, len: usize) -> OutString {
        OutString {
            dst,
            len,
            buf: vec![0; len.max(LONGEST_C_STRING) + 1],
        }
    }

    pub fn as_mut_ptr(&mut self) -> *mut c_char {
        self.buf.as_mut_ptr().cast()
    }

    /// # Safety
    /// `dst` of [`OutString::new`] points to `len` writable bytes (or is NULL).
    pub unsafe fn finish(&self) {
        if self.dst.is_null() {
            return;
        }
        let n = self
            .buf
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(0)
            .min(self.len);
        // SAFETY: the Fortran variable has `len` writable bytes (see above); n <= len.
        unsafe {
            let dst = self.dst.cast::<u8>();
            std::ptr::copy_nonoverlapping(self.buf.as_ptr(), dst, n);
            std::ptr::write_bytes(dst.add(n), b' ', self.len - n);
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every MPI-IO function the library implements gets a Fortran entry point: the
    /// generator's rules (or `file.rs`) cover the parameter types of MPI-IO, including those
    /// of functions added later.
    #[test]
    fn every_file_function_has_a_fortran_binding() {
        let io = |name: &&&str| {
            name.starts_with("MPI_File_")
                || name.starts_with("MPI_Register_datarep")
                || name.contains("_external")
        };
        let missing: Vec<_> = super::generated::WITHOUT_FORTRAN_BINDING
            .iter()
            .filter(io)
            .collect();
        assert!(
            missing.is_empty(),
            "MPI-IO functions without a Fortran binding (see fortran/generate.rs): {missing:?}"
        );
    }
}
