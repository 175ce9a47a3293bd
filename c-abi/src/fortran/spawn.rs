//! `MPI_COMM_SPAWN` and `MPI_COMM_SPAWN_MULTIPLE` for Fortran (`mpif.h`, `use mpi` and
//! `mpi_f08`, whose interfaces bind to these same entry points): their strings come as arrays
//! of blank-padded `CHARACTER` rows, which the generator's rules do not cover.
//!
//! What Fortran passes (MPI 4.0 §11.8.2, §11.8.3, and the `CHARACTER` conventions of §19.1):
//!
//! - `COMMAND`: one `CHARACTER*(*)`; `ARRAY_OF_COMMANDS(COUNT)`: exactly `COUNT` of them (no
//!   terminating entry).
//! - `ARGV(*)`: rows of the argument's length, the list ended by the first blank row;
//!   `MPI_ARGV_NULL` for none.
//! - `ARRAY_OF_ARGV(COUNT, *)`: element `(i, j)` is the `j`-th argument of command `i`, so
//!   command `i`'s arguments are `COUNT` rows apart in memory (column-major), each list ended
//!   by a blank entry; `MPI_ARGVS_NULL` for no arguments to any command.
//! - In every string, leading and trailing blanks are stripped (a string of blanks is empty).
//! - `ARRAY_OF_ERRCODES`, or `MPI_ERRCODES_IGNORE`.
//! - gfortran's hidden lengths (`size_t`, one per `CHARACTER` argument, after the others):
//!   for an array, the length of one element.
//!
//! The strings are read at the root only (elsewhere they are not significant and may be
//! anything), turned into C's NULL-terminated `argv` arrays, and `MPI_Comm_spawn(_multiple)`
//! does the rest. The sentinels are recognised by address: `mpif.h`'s live in the common
//! block `/MPIPRIVC/` (`MPI_ARGVS_NULL`, then `MPI_ARGV_NULL`) and `/MPIPRIV2/`
//! (`MPI_ERRCODES_IGNORE` after `MPI_STATUSES_IGNORE`), `mpi_f08`'s are `BIND(C)` variables
//! defined here with MPICH's names.

use super::{both, set_ierr, Common};
use crate::abi::*;
use crate::error::MpiError;
use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

/// The most arguments read from one Fortran `argv` before its blank row must have come.
const MAX_ARGS: usize = 4096;

/// `MPI_ARGV_NULL` of `mpi_f08`.
#[no_mangle]
pub static MPIR_F08_MPI_ARGV_NULL: Common<[u8; 1]> = Common(UnsafeCell::new([b' ']));
/// `MPI_ARGVS_NULL` of `mpi_f08`.
#[no_mangle]
pub static MPIR_F08_MPI_ARGVS_NULL: Common<[u8; 1]> = Common(UnsafeCell::new([b' ']));
/// `MPI_ERRCODES_IGNORE` of `mpi_f08`.
#[no_mangle]
pub static MPIR_F08_MPI_ERRCODES_IGNORE: Common<[c_int; 1]> = Common(UnsafeCell::new([0]));

/// The addresses of the three sentinels: `mpif.h`'s (the library's common block and the one
/// the program's symbol resolves to), then `mpi_f08`'s (likewise).
struct SpawnSentinels {
    argv_null: [usize; 4],
    argvs_null: [usize; 4],
    errcodes_ignore: [usize; 4],
}

fn sentinels() -> &'static SpawnSentinels {
    static SENTINELS: OnceLock<SpawnSentinels> = OnceLock::new();
    SENTINELS.get_or_init(|| {
        let privc = both(c"mpiprivc_", &raw const super::mpiprivc_ as usize);
        let priv2 = both(c"mpipriv2_", &raw const super::mpipriv2_ as usize);
        // MPI_ERRCODES_IGNORE follows MPI_STATUSES_IGNORE(MPI_STATUS_SIZE, 1).
        let after_statuses = 5 * std::mem::size_of::<MPI_Fint>();
        let join = |a: [usize; 2], b: [usize; 2]| [a[0], a[1], b[0], b[1]];
        SpawnSentinels {
            argvs_null: join(
                privc,
                both(
                    c"MPIR_F08_MPI_ARGVS_NULL",
                    &raw const MPIR_F08_MPI_ARGVS_NULL as usize,
                ),
            ),
            argv_null: join(
                privc.map(|a| a + 1),
                both(
                    c"MPIR_F08_MPI_ARGV_NULL",
                    &raw const MPIR_F08_MPI_ARGV_NULL as usize,
                ),
            ),
            errcodes_ignore: join(
                priv2.map(|a| a + after_statuses),
                both(
                    c"MPIR_F08_MPI_ERRCODES_IGNORE",
                    &raw const MPIR_F08_MPI_ERRCODES_IGNORE as usize,
                ),
            ),
        }
    })
}

/// `ARRAY_OF_ERRCODES` as C wants it: `MPI_ERRCODES_IGNORE` becomes NULL.
fn errcodes(p: *mut c_int) -> *mut c_int {
    if sentinels().errcodes_ignore.contains(&(p as usize)) {
        std::ptr::null_mut()
    } else {
        p
    }
}

/// One Fortran string of `len` bytes at `p` as a C string: blanks stripped at both ends (a
/// NUL inside, which Fortran text does not have, ends it).
///
/// # Safety
/// `p` points to `len` readable bytes (or `len` is 0).
unsafe fn text(p: *const u8, len: usize) -> CString {
    if p.is_null() || len == 0 {
        return CString::default();
    }
    // SAFETY: see above.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    let bytes = &bytes[..bytes.iter().position(|&b| b == 0).unwrap_or(len)];
    let start = bytes.iter().position(|&b| b != b' ').unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |i| i + 1);
    CString::new(&bytes[start..end]).expect("no NUL inside: cut at the first")
}

/// A C `argv`: the strings and the NULL-terminated array of pointers to them.
struct CArgv {
    _strings: Vec<CString>,
    pointers: Vec<*mut c_char>,
}

impl CArgv {
    fn new(strings: Vec<CString>) -> CArgv {
        let mut pointers: Vec<*mut c_char> =
            strings.iter().map(|s| s.as_ptr().cast_mut()).collect();
        pointers.push(std::ptr::null_mut());
        CArgv {
            _strings: strings,
            pointers,
        }
    }

    fn as_mut_ptr(&mut self) -> *mut *mut c_char {
        self.pointers.as_mut_ptr()
    }
}

/// The arguments of one command: rows of `len` bytes from `p`, `stride` rows apart, up to the
/// first blank one. `Err` if none of [`MAX_ARGS`] rows is blank.
///
/// # Safety
/// `p` is a Fortran array of such rows that has its blank entry.
unsafe fn arguments(p: *const u8, len: usize, stride: usize) -> Result<Vec<CString>, String> {
    let mut args = Vec::new();
    for i in 0..MAX_ARGS {
        // SAFETY: the rows up to and including the blank one are the caller's array.
        let arg = unsafe { text(p.add(i * stride * len), len) };
        if arg.as_bytes().is_empty() {
            return Ok(args);
        }
        args.push(arg);
    }
    Err(format!(
        "no blank entry ends the argument list within {MAX_ARGS} entries (end argv with a blank \
         string, or pass MPI_ARGV_NULL)"
    ))
}

/// Whether this process is `root` of `comm` (false if `comm` is no communicator of this
/// process, or MPI is not running: the C function then reports that, reading no string).
/// Looks at the library's tables without raising an error of its own.
fn is_root(comm: MPI_Comm, root: c_int) -> bool {
    let mut rank = None;
    crate::runtime::export::call("MPI_Comm_spawn", |st| {
        if let Some(rt) = st.runtime_ref() {
            rank = rt.comms.lookup(comm).ok().map(|(_, c)| c.rank);
        }
        Ok(())
    });
    usize::try_from(root).is_ok_and(|root| rank == Some(root))
}

/// Reports a malformed argument list as `name`'s error on `comm` (its error handler decides).
fn refuse(name: &'static str, comm: MPI_Comm, message: String) -> c_int {
    crate::runtime::export::call(name, |st| {
        let idx = st.runtime()?.comms.lookup(comm)?.0;
        Err(MpiError::new(MPI_ERR_ARG, format!("{name}: {message}")).on(idx))
    })
}

twin! {
    "MPI_Comm_spawn", mpi_comm_spawn_ / pmpi_comm_spawn_
        f08 mpi_comm_spawn_f08_ / pmpi_comm_spawn_f08_ => MPI_Comm_spawn / PMPI_Comm_spawn,
    (command: *const c_char, argv: *const c_char, maxprocs: *const c_int, info: *const MPI_Info,
     root: *const c_int, comm: *const MPI_Comm, intercomm: *mut MPI_Comm, array_of_errcodes: *mut c_int,
     ierr: *mut MPI_Fint, command_len: usize, argv_len: usize) |call| {
        // SAFETY: the caller's references; the strings are read at the root only, within
        // their hidden lengths and up to the blank row.
        unsafe {
            let mut command_c = CString::default();
            let mut argv_c = None;
            if is_root(*comm, *root) {
                command_c = text(command.cast(), command_len);
                if !sentinels().argv_null.contains(&(argv as usize)) {
                    match arguments(argv.cast(), argv_len, 1) {
                        Ok(args) => argv_c = Some(CArgv::new(args)),
                        Err(why) => return set_ierr(ierr, refuse("MPI_Comm_spawn", *comm, why)),
                    }
                }
            }
            let argv_ptr = argv_c.as_mut().map_or(std::ptr::null_mut(), CArgv::as_mut_ptr);
            let r = call(command_c.as_ptr(), argv_ptr, *maxprocs, *info, *root, *comm, intercomm,
                         errcodes(array_of_errcodes));
            set_ierr(ierr, r)
        }
    }
}

twin! {
    "MPI_Comm_spawn_multiple", mpi_comm_spawn_multiple_ / pmpi_comm_spawn_multiple_
        f08 mpi_comm_spawn_multiple_f08_ / pmpi_comm_spawn_multiple_f08_
        => MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple,
    (count: *const c_int, array_of_commands: *const c_char, array_of_argv: *const c_char,
     array_of_maxprocs: *const c_int, array_of_info: *const MPI_Info, root: *const c_int,
     comm: *const MPI_Comm, intercomm: *mut MPI_Comm, array_of_errcodes: *mut c_int,
     ierr: *mut MPI_Fint, commands_len: usize, argv_len: usize) |call| {
        // SAFETY: the caller's references and arrays of `count` commands (and their argument
        // lists), read at the root only, within the hidden lengths.
        unsafe {
            let n = usize::try_from(*count).unwrap_or(0);
            let mut commands: Vec<CString> = Vec::new();
            let mut argvs: Option<Vec<CArgv>> = None;
            if n > 0 && is_root(*comm, *root) && !array_of_commands.is_null() {
                let base = array_of_commands.cast::<u8>();
                commands = (0..n).map(|i| text(base.add(i * commands_len), commands_len)).collect();
                if !sentinels().argvs_null.contains(&(array_of_argv as usize)) {
                    let mut lists = Vec::with_capacity(n);
                    for i in 0..n {
                        let first = array_of_argv.cast::<u8>().add(i * argv_len);
                        match arguments(first, argv_len, n) {
                            Ok(args) => lists.push(CArgv::new(args)),
                            Err(why) => {
                                let why = format!("command {} of {n}: {why}", i + 1);
                                return set_ierr(ierr, refuse("MPI_Comm_spawn_multiple", *comm, why));
                            }
                        }
                    }
                    argvs = Some(lists);
                }
            }
            let mut command_ptrs: Vec<*mut c_char> =
                commands.iter().map(|c| c.as_ptr().cast_mut()).collect();
            let mut argv_ptrs: Option<Vec<*mut *mut c_char>> =
                argvs.as_mut().map(|lists| lists.iter_mut().map(CArgv::as_mut_ptr).collect());
            let commands_ptr = if command_ptrs.is_empty() {
                std::ptr::null_mut()
            } else {
                command_ptrs.as_mut_ptr()
            };
            let argv_ptr = argv_ptrs.as_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
            let r = call(*count, commands_ptr, argv_ptr, array_of_maxprocs, array_of_info, *root,
                         *comm, intercomm, errcodes(array_of_errcodes));
            set_ierr(ierr, r)
        }
    }
}
