//! Error handlers: what happens to an error once a call has found it, and the functions that
//! manage handlers and describe errors (`MPI_Comm_create_errhandler`, `MPI_Errhandler_free`,
//! `MPI_Comm_set_errhandler`, `MPI_Comm_get_errhandler`, `MPI_Comm_call_errhandler`, the
//! MPI-1 `MPI_Errhandler_create`/`set`/`get`, `MPI_Error_string`, `MPI_Error_class`,
//! `MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string`).
//!
//! Each communicator has a handler, `MPI_ERRORS_ARE_FATAL` unless the program sets another
//! (a new communicator inherits its parent's):
//!
//! * `MPI_ERRORS_RETURN`: the call returns the error class (the library's error codes are the
//!   classes themselves).
//! * `MPI_ERRORS_ARE_FATAL` and `MPI_ERRORS_ABORT`: one line on stderr naming the rank, the
//!   function, the error and what was wrong, then the process ends with the error class as its
//!   exit status (as MPICH does); `mpirun` then ends the job.
//! * A handler made by `MPI_Comm_create_errhandler` (handle `0x94000000 | index`): the
//!   library calls the program's function with the communicator and the error code, then the
//!   call returns the code. For an error raised by a call, the function runs after that call
//!   has let go of the library's state, so it may call MPI (`MPI_Error_string`, `MPI_Abort`,
//!   ...); `MPI_Comm_call_errhandler` calls it from inside, where it should only look at its
//!   arguments or call the functions that need no state (`MPI_Error_string`,
//!   `MPI_Error_class`). A freed handler stays valid for the communicators that use it (its
//!   index is never reused).
//!
//! **Error classes and codes the program adds** are numbered from `0x100` up (above every
//! predefined class), classes and codes from one counter so that none is both; each maps to
//! its class and may have a string (empty until `MPI_Add_error_string`). The attribute
//! `MPI_LASTUSEDCODE` follows the largest.
//!
//! An error is raised on the communicator the call was about; an error with no communicator
//! (a bad request handle, an invalid communicator handle) on `MPI_COMM_WORLD`'s handler.
//! Before `MPI_Init` and after `MPI_Finalize` there are no handlers, and errors are fatal.

use crate::abi::*;
use crate::handle::{index_of, Kind, Table};
use crate::comm::WORLD;
use crate::cptr::{write_c_string, Out};
use crate::error::{class_info, error_string, MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::global;
use std::ffi::{c_char, c_int};
use std::io::Write;

/// Hands `e`, raised by the MPI function `func`, to its communicator's error handler: returns
/// the code to give the caller, or ends the process.
#[cold]
pub(crate) fn raise(func: &'static str, e: MpiError) -> c_int {
    // SAFETY: called by `export::call` after the call's body returned; its reference to the
    // state is gone, so this is the only one.
    let st = unsafe { global::state() };
    let Some(rt) = st.runtime_ref() else {
        fatal(func, None, None, &e);
    };
    let comm = rt.comms.get(e.comm.unwrap_or(WORLD));
    if comm.errhandler == MPI_ERRORS_RETURN {
        tracing::debug!(function = func, class = e.class, detail = %e.detail, "MPI error returned");
        return e.class;
    }
    if let Some(f) = rt.errhandlers.function(comm.errhandler) {
        tracing::debug!(function = func, class = e.class, detail = %e.detail, "MPI error to the program's handler");
        return call_user(f, comm.handle, e.class);
    }
    let world_rank = rt.comms.get(WORLD).rank;
    fatal(
        func,
        Some(world_rank),
        Some((&comm.label(), comm.errhandler)),
        &e,
    )
}

/// A handler function of the program.
type HandlerFn = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);

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
const FIRST_ADDED: c_int = 0x100;

impl ErrhandlerTable {
    pub fn new() -> ErrhandlerTable {
        ErrhandlerTable {
            functions: Table::new(Kind::Errhandler),
            added: Default::default(),
            strings: Default::default(),
            last_used: MPI_T_ERR_NOT_SUPPORTED,
        }
    }

    /// A new error number of class `class` (`None`: a new class).
    fn add(&mut self, class: Option<c_int>) -> c_int {
        let n = self.last_used.max(FIRST_ADDED - 1) + 1;
        self.added.insert(n, class.unwrap_or(n));
        self.last_used = n;
        n
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

    fn create(&mut self, f: HandlerFn) -> MpiResult<MPI_Errhandler> {
        self.functions
            .insert(f)
            .map(|(_, h)| h)
            .ok_or_else(|| MpiError::new(MPI_ERR_NO_MEM, "the process has made 2^26 error handlers, the most MPICH's handles can name"))
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
            format!("the error handler of {comm} is {h}, so the job ends (MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN) lets the program handle errors)")
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

fn check_errhandler(
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

fn set_errhandler(
    st: &mut crate::runtime::Mpi,
    comm: MPI_Comm,
    errhandler: MPI_Errhandler,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let (idx, _) = rt.comms.lookup(comm)?;
    let h = check_errhandler(&rt.errhandlers, errhandler).map_err(|e| e.on(idx))?;
    rt.comms.get_mut(idx).errhandler = h;
    Ok(())
}

fn get_errhandler(
    st: &mut crate::runtime::Mpi,
    comm: MPI_Comm,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let (idx, c) = rt.comms.lookup(comm)?;
    Out::new(errhandler, "errhandler")
        .map_err(|e| e.on(idx))?
        .set(c.errhandler);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_set_errhandler`: sets what errors raised on `comm` do.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(
        comm: MPI_Comm,
        errhandler: MPI_Errhandler,
    ) |st| {
        set_errhandler(st, comm, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Errhandler_set`: the MPI-1 name of `MPI_Comm_set_errhandler`.
    fn MPI_Errhandler_set / PMPI_Errhandler_set(comm: MPI_Comm, errhandler: MPI_Errhandler) |st| {
        set_errhandler(st, comm, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Comm_get_errhandler`: the handler of `comm`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(
        comm: MPI_Comm,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        get_errhandler(st, comm, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Errhandler_get`: the MPI-1 name of `MPI_Comm_get_errhandler`.
    fn MPI_Errhandler_get / PMPI_Errhandler_get(comm: MPI_Comm, errhandler: *mut MPI_Errhandler) |st| {
        get_errhandler(st, comm, errhandler)
    }
}

fn create_errhandler(
    st: &mut crate::runtime::Mpi,
    function: MPI_Comm_errhandler_function,
    errhandler: *mut MPI_Errhandler,
) -> MpiResult<()> {
    let rt = st.runtime()?;
    let out = Out::new(errhandler, "errhandler")?;
    let f = function.ok_or_else(|| MpiError::arg("the handler function is NULL"))?;
    out.set(rt.errhandlers.create(f)?);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_create_errhandler`: a handler that calls the program's function.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        comm_errhandler_fn: MPI_Comm_errhandler_function,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        create_errhandler(st, comm_errhandler_fn, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Errhandler_create`: the MPI-1 name of `MPI_Comm_create_errhandler`.
    fn MPI_Errhandler_create / PMPI_Errhandler_create(
        comm_errhandler_fn: MPI_Comm_errhandler_function,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        create_errhandler(st, comm_errhandler_fn, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Errhandler_free`: sets `*errhandler` to `MPI_ERRHANDLER_NULL`; communicators that
    /// use the handler keep it.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut MPI_Errhandler) |st| {
        let rt = st.runtime()?;
        let out = Out::new(errhandler, "errhandler")?;
        check_errhandler(&rt.errhandlers, out.get())?;
        out.set(MPI_ERRHANDLER_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_call_errhandler`: invokes `comm`'s handler on `errorcode`. Returns
    /// `MPI_SUCCESS` when the handler returns.
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) |st| {
        let rt = st.runtime()?;
        let (_, c) = rt.comms.lookup(comm)?;
        if c.errhandler == MPI_ERRORS_RETURN {
            return Ok(());
        }
        if let Some(f) = rt.errhandlers.function(c.errhandler) {
            call_user(f, c.handle, errorcode);
            return Ok(());
        }
        let e = MpiError::new(errorcode, "raised by the program with MPI_Comm_call_errhandler");
        fatal("MPI_Comm_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((&c.label(), c.errhandler)), &e)
    }
}

/// The class of `code`: a predefined class, or an added code or class of the running library.
fn class_of(st: &crate::runtime::Mpi, code: c_int) -> Option<c_int> {
    if class_info(code).is_some() {
        return Some(code);
    }
    st.runtime_ref()
        .and_then(|rt| rt.errhandlers.class_of(code))
}

mpi_fn! {
    /// `MPI_Error_string`: a description of an error code (may be called at any time).
    fn MPI_Error_string / PMPI_Error_string(
        errorcode: c_int,
        string: *mut c_char,
        resultlen: *mut c_int,
    ) |st| {
        let len_out = Out::new(resultlen, "resultlen")?;
        let added = st.runtime_ref().and_then(|rt| {
            rt.errhandlers.class_of(errorcode).map(|_| rt.errhandlers.strings.get(&errorcode).cloned().unwrap_or_default())
        });
        let text = added.unwrap_or_else(|| error_string(errorcode));
        let len = write_c_string(string, MPI_MAX_ERROR_STRING as usize, &text, "string")?;
        len_out.set(len);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Error_class`: the class of an error code: the code itself for the library's own
    /// codes (may be called at any time).
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) |st| {
        let out = Out::new(errorclass, "errorclass")?;
        let Some(class) = class_of(st, errorcode) else {
            return Err(MpiError::arg(format!("{errorcode} is not an MPI error code")));
        };
        out.set(class);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Add_error_class`: a new error class.
    fn MPI_Add_error_class / PMPI_Add_error_class(errorclass: *mut c_int) |st| {
        let rt = st.runtime()?;
        let out = Out::new(errorclass, "errorclass")?;
        out.set(rt.errhandlers.add(None));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Add_error_code`: a new error code of class `errorclass`.
    fn MPI_Add_error_code / PMPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) |st| {
        let out = Out::new(errorcode, "errorcode")?;
        if class_of(st, errorclass) != Some(errorclass) {
            return Err(MpiError::arg(format!("{errorclass} is not an error class")));
        }
        let rt = st.runtime()?;
        out.set(rt.errhandlers.add(Some(errorclass)));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Add_error_string`: the text `MPI_Error_string` gives for an added code or class.
    fn MPI_Add_error_string / PMPI_Add_error_string(errorcode: c_int, string: *const c_char) |st| {
        let rt = st.runtime()?;
        if rt.errhandlers.class_of(errorcode).is_none() {
            return Err(MpiError::arg(format!(
                "{errorcode} was not made by MPI_Add_error_class or MPI_Add_error_code; only those can be given a string"
            )));
        }
        let text = crate::info::read_c_string(string, usize::MAX, "string")?;
        if text.len() >= MPI_MAX_ERROR_STRING as usize {
            return Err(MpiError::arg(format!("the string is {} bytes long; at most MPI_MAX_ERROR_STRING - 1 are allowed", text.len())));
        }
        rt.errhandlers.strings.insert(errorcode, text);
        Ok(())
    }
}
