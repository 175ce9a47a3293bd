//! Error handlers: what happens to an error once a call has found it, and the functions that
//! manage handlers and describe errors (in `api`: `MPI_Comm_create_errhandler`, `MPI_Errhandler_free`,
//! `MPI_Comm_set_errhandler`, `MPI_Comm_get_errhandler`, `MPI_Comm_call_errhandler`, the
//! MPI-1 `MPI_Errhandler_create`/`set`/`get`, `MPI_Error_string`, `MPI_Error_class`,
//! `MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string`).
//!
//! Each communicator has a handler, `MPI_ERRORS_ARE_FATAL` unless the program sets another
//! (a new communicator inherits its parent's):
//!
//! * `MPI_ERRORS_RETURN`: the call returns an error code: an instance of the error's class
//!   that carries its detail (`MPI_Error_class` gives the class back, `MPI_Error_string` the
//!   class and the detail; layout and lifetime in `codes`), or the bare class when there is
//!   no detail.
//! * `MPI_ERRORS_ARE_FATAL` and `MPI_ERRORS_ABORT`: one line on stderr naming the rank, the
//!   function, the error and what was wrong, then the process ends with the error class as its
//!   exit status (as MPICH does); `mpirun` then ends the job.
//! * A handler made by `MPI_Comm_create_errhandler` (handle `0x94000000 | index`): the
//!   library calls the program's function with the communicator and the error code (the same
//!   instance `MPI_ERRORS_RETURN` would return), then the call returns the code. For an error
//!   raised by a call, the function runs after that call has let go of the library's state,
//!   so it may call MPI (`MPI_Error_string`, `MPI_Abort`, ...); `MPI_Comm_call_errhandler`
//!   calls it from inside, where it should only look at its arguments or call the functions
//!   that need no state (`MPI_Error_string`, `MPI_Error_class`). A freed handler stays valid
//!   for the communicators that use it (its index is never reused).
//!
//! **Error classes and codes the program adds** are numbered from `MPI_ERR_LASTCODE + 1`
//! (`0x40000000`, above every code the library makes) up, classes and codes from one counter
//! so that none is both; each maps to its class and may have a string (empty until
//! `MPI_Add_error_string`). The attribute `MPI_LASTUSEDCODE` is `MPI_ERR_LASTCODE` until the
//! program adds one, then the largest added (MPI 3.1 §8.5; as MPICH numbers them).
//!
//! An error is raised on the communicator the call was about; an error with no communicator
//! (a bad request handle, an invalid communicator handle) on `MPI_COMM_WORLD`'s handler.
//! Before `MPI_Init` and after `MPI_Finalize` there are no handlers, and errors are fatal.
//!
//! **Owns** the table of the program's handlers and the error classes and codes it added
//! ([`ErrhandlerTable`]). **Entry:** [`handle`], what a communicator's handler makes of an
//! error (the raise path of `runtime::export`, which finds the communicator in the running
//! state, calls it), and [`fatal`]; the C functions are in `api`.

mod api;
pub(crate) mod codes;

use crate::abi::*;
use crate::comm::{CommTable, WORLD};
use crate::error::{class_info, MpiError, MpiResult};
use crate::handle::{index_of, Kind, Table};
use std::ffi::c_int;
use std::io::Write;

/// What `comm`'s error handler makes of `e`, raised by the MPI function `func` while MPI
/// runs: the code to give the caller, or the end of the process.
#[cold]
pub(crate) fn handle(
    func: &'static str,
    e: MpiError,
    comms: &CommTable,
    errhandlers: &ErrhandlerTable,
) -> c_int {
    let comm = comms.get(e.comm.unwrap_or(WORLD));
    if comm.errhandler == MPI_ERRORS_RETURN {
        let code = codes::code_of(&e);
        tracing::debug!(function = func, class = e.class, code, detail = %e.detail, "MPI error returned");
        return code;
    }
    if let Some(f) = errhandlers.function(comm.errhandler) {
        let code = codes::code_of(&e);
        tracing::debug!(function = func, class = e.class, code, detail = %e.detail, "MPI error to the program's handler");
        return call_user(f, comm.handle, code);
    }
    let world_rank = comms.get(WORLD).rank;
    fatal(
        func,
        Some(world_rank),
        Some((&comm.label(), comm.errhandler)),
        &e,
    )
}

/// What the error handler `handler` of an object other than a communicator (a window,
/// labelled `label` in messages, handle `object`) makes of `e`, raised by `func`.
#[cold]
pub(crate) fn handle_object(
    func: &'static str,
    e: MpiError,
    object: c_int,
    handler: MPI_Errhandler,
    label: &str,
    world_rank: usize,
    errhandlers: &ErrhandlerTable,
) -> c_int {
    let code = codes::code_of(&e);
    if handler == MPI_ERRORS_RETURN {
        tracing::debug!(function = func, class = e.class, code, detail = %e.detail, "MPI error returned");
        return code;
    }
    if let Some(f) = errhandlers.function(handler) {
        return call_user(f, object, code);
    }
    fatal(func, Some(world_rank), Some((label, handler)), &e)
}

/// A handler function of the program.
type HandlerFn = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);

/// A file handler function of the program (`MPI_File_errhandler_function`): its first
/// argument points to a file handle, a pointer in MPICH's ABI.
pub(crate) type FileHandlerFn = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);

/// What a file's error handler makes of an error, decided while the library's state is held;
/// the program's function is called after the state is let go ([`call_file_user`]).
pub(crate) enum FileVerdict {
    /// Return this code.
    Return(c_int),
    /// Call the program's function with this code, then return it.
    Call(FileHandlerFn, c_int),
}

/// What the error handler `handler` of a file (labelled `label`) makes of `e`, raised by
/// `func`: a code to return, the program's function to call, or the end of the process.
#[cold]
pub(crate) fn judge_file(
    func: &'static str,
    e: MpiError,
    handler: MPI_Errhandler,
    label: &str,
    world_rank: usize,
    errhandlers: &ErrhandlerTable,
) -> FileVerdict {
    let code = codes::code_of(&e);
    if handler == MPI_ERRORS_RETURN {
        tracing::debug!(function = func, class = e.class, code, detail = %e.detail, "MPI error returned");
        return FileVerdict::Return(code);
    }
    if let Some(f) = errhandlers.file_function(handler) {
        return FileVerdict::Call(f, code);
    }
    fatal(func, Some(world_rank), Some((label, handler)), &e)
}

/// Calls the program's file handler `f` for `code` raised on `file`; returns the code.
pub(crate) fn call_file_user(f: FileHandlerFn, file: MPI_File, code: c_int) -> c_int {
    let (mut file, mut code_arg) = (file, code);
    // SAFETY: a handler the program registered with MPI_File_create_errhandler, called as
    // MPI's C binding says (pointers to a file handle and an error code, both ours and live
    // for the call).
    unsafe { f(&mut file, &mut code_arg) };
    code
}

/// A handler a file may be given (`MPI_File_set_errhandler`): predefined or the program's.
pub(crate) fn check_file_errhandler(
    table: &ErrhandlerTable,
    h: MPI_Errhandler,
) -> MpiResult<MPI_Errhandler> {
    check_errhandler(table, h)
}

/// Calls the program's handler `f` for `code` raised on `comm`; returns the code.
fn call_user(f: HandlerFn, comm: MPI_Comm, code: c_int) -> c_int {
    let (mut comm, mut code_arg) = (comm, code);
    // SAFETY: a handler the program registered with MPI_Comm_create_errhandler, called as
    // MPI's C binding says (pointers to a communicator handle and an error code, both ours and
    // live for the call). What the handler may call while it runs is in the module
    // documentation.
    unsafe { f(&mut comm, &mut code_arg) };
    code
}

/// The handlers the program created.
pub(crate) struct ErrhandlerTable {
    functions: Table<HandlerFn>,
    /// Added error codes and classes: number -> its class (a class maps to itself).
    added: std::collections::HashMap<c_int, c_int>,
    strings: std::collections::HashMap<c_int, String>,
    /// The value of the `MPI_LASTUSEDCODE` attribute (its address is handed out).
    pub last_used: c_int,
}

/// The first number `MPI_Add_error_class` / `MPI_Add_error_code` give.
const FIRST_ADDED: c_int = MPI_ERR_LASTCODE + 1;

impl ErrhandlerTable {
    pub fn new() -> ErrhandlerTable {
        ErrhandlerTable {
            functions: Table::new(Kind::Errhandler),
            added: Default::default(),
            strings: Default::default(),
            last_used: MPI_ERR_LASTCODE,
        }
    }

    /// A new error number of class `class` (`None`: a new class).
    fn add(&mut self, class: Option<c_int>) -> MpiResult<c_int> {
        let Some(n) = self.last_used.max(FIRST_ADDED - 1).checked_add(1) else {
            return Err(MpiError::new(
                MPI_ERR_OTHER,
                format!("the program has added every error class and code there is room for ({FIRST_ADDED:#x}..={:#x}); reuse the ones it has", c_int::MAX),
            ));
        };
        self.added.insert(n, class.unwrap_or(n));
        self.last_used = n;
        Ok(n)
    }

    /// The class of an added code or class.
    fn class_of(&self, code: c_int) -> Option<c_int> {
        self.added.get(&code).copied()
    }

    /// The function of a created handler (`None` for the predefined ones and invalid handles).
    /// (A freed handler stays usable by the communicators that have it: it is never removed.)
    pub fn function(&self, h: MPI_Errhandler) -> Option<HandlerFn> {
        self.functions.at(index_of(Kind::Errhandler, h)?).copied()
    }

    /// The function of a created handler, as a file handler.
    pub fn file_function(&self, h: MPI_Errhandler) -> Option<FileHandlerFn> {
        // SAFETY: both are `extern "C"` function pointers of one size; a handler made by
        // MPI_File_create_errhandler was stored from a FileHandlerFn (`create_for_files`), so
        // this gives its own type back.
        self.function(h)
            .map(|f| unsafe { std::mem::transmute::<HandlerFn, FileHandlerFn>(f) })
    }

    /// A handler for files that calls the program's function (`MPI_File_create_errhandler`).
    pub fn create_for_files(&mut self, f: FileHandlerFn) -> MpiResult<MPI_Errhandler> {
        // SAFETY: as in `file_function`: stored under the table's one pointer type, called
        // only as a file handler.
        self.create(unsafe { std::mem::transmute::<FileHandlerFn, HandlerFn>(f) })
    }

    fn create(&mut self, f: HandlerFn) -> MpiResult<MPI_Errhandler> {
        self.functions.insert(f).map(|(_, h)| h).ok_or_else(|| {
            MpiError::new(
                MPI_ERR_NO_MEM,
                "the process has made 2^26 error handlers, the most MPICH's handles can name",
            )
        })
    }
}

/// Reports `e` on one line of stderr and ends the process with its class as exit status.
/// `rank` is the process's rank in `MPI_COMM_WORLD` (unknown outside `MPI_Init`..`MPI_Finalize`),
/// `handler` the communicator whose fatal handler was invoked.
#[cold]
pub(crate) fn fatal(
    func: &str,
    rank: Option<usize>,
    handler: Option<(&str, MPI_Errhandler)>,
    e: &MpiError,
) -> ! {
    let who = match rank {
        Some(r) => format!("rank {r}"),
        None => format!("process {}", std::process::id()),
    };
    let (name, text) = class_info(e.class).unwrap_or(("MPI_ERR_UNKNOWN", "unknown error"));
    let why = match handler {
        Some((comm, h)) => {
            let h = if h == MPI_ERRORS_ABORT {
                "MPI_ERRORS_ABORT"
            } else {
                "MPI_ERRORS_ARE_FATAL"
            };
            let set = if comm.starts_with("window") {
                "MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN)"
            } else if comm.starts_with("session") {
                "MPI_Session_set_errhandler(session, MPI_ERRORS_RETURN)"
            } else if comm.starts_with("file") {
                "MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN)"
            } else {
                "MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN)"
            };
            format!("the error handler of {comm} is {h}, so the job ends ({set} lets the program handle errors)")
        }
        None => "outside MPI_Init..MPI_Finalize every error is fatal".to_string(),
    };
    let line = format!(
        "MPI error on {who} in {func}: {name} ({text}): {}; {why}\n",
        e.detail
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
    let code = if e.class & 0xff == 0 {
        MPI_ERR_OTHER
    } else {
        e.class
    };
    // A fatal error aborts the whole job, as MPI_Abort would: a PMI launcher ends the ranks on
    // every host (a plain exit is not enough for Hydra to end a job across hosts).
    nic_model::net::launcher::abort(code, line.trim_end());
    end_process(code)
}

/// Flushes the program's C and Rust output streams and ends the process at once with `code`
/// (no atexit handlers: they could call MPI, or wait for peers that will never answer).
pub(crate) fn end_process(code: c_int) -> ! {
    let _ = std::io::stdout().flush();
    // SAFETY: fflush(NULL) flushes every C output stream; it takes no pointer of ours.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    // SAFETY: _exit ends the process; nothing of Rust's runs after it.
    unsafe { libc::_exit(code) }
}

/// A handler a communicator (or a session, a window) may be given: a predefined one or one
/// the program created.
pub(crate) fn check_errhandler(
    table: &ErrhandlerTable,
    h: MPI_Errhandler,
) -> Result<MPI_Errhandler, MpiError> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(h),
        _ if table.function(h).is_some() => Ok(h),
        MPI_ERRHANDLER_NULL => Err(MpiError::arg("the error handler is MPI_ERRHANDLER_NULL")),
        _ => Err(MpiError::arg(format!(
            "0x{h:08x} is not an error handler (use MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT or one from MPI_Comm_create_errhandler)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_numbers_come_after_the_last_code() {
        let mut t = ErrhandlerTable::new();
        assert_eq!(t.last_used, MPI_ERR_LASTCODE);
        let class = t.add(None).unwrap();
        assert_eq!(class, MPI_ERR_LASTCODE + 1);
        assert_eq!(t.add(Some(class)).unwrap(), FIRST_ADDED + 1);
        assert_eq!(t.class_of(FIRST_ADDED + 1), Some(class));
        assert_eq!(t.last_used, FIRST_ADDED + 1);
        t.last_used = c_int::MAX - 1;
        assert_eq!(t.add(Some(class)).unwrap(), c_int::MAX);
        assert_eq!(t.add(None).unwrap_err().class, MPI_ERR_OTHER);
        assert_eq!(t.last_used, c_int::MAX);
        // An added number is never taken for one of the library's instances.
        assert_eq!(codes::library_class(FIRST_ADDED), None);
    }

    #[test]
    fn the_library_class_of_a_code() {
        assert_eq!(codes::library_class(MPI_ERR_RANK), Some(MPI_ERR_RANK));
        let code = codes::code_of(&MpiError::new(MPI_ERR_TAG, "tag -5"));
        assert_eq!(codes::library_class(code), Some(MPI_ERR_TAG));
        assert_eq!(codes::library_class(FIRST_ADDED), None);
    }
}
