//! Error handlers: what happens to an error once a call has found it, and the functions that
//! manage handlers and describe errors (`MPI_Comm_set_errhandler`, `MPI_Comm_get_errhandler`,
//! `MPI_Comm_call_errhandler`, `MPI_Error_string`, `MPI_Error_class`).
//!
//! Each communicator has a handler, `MPI_ERRORS_ARE_FATAL` unless the program sets another:
//!
//! * `MPI_ERRORS_RETURN`: the call returns the error class (the library's error codes are the
//!   classes themselves).
//! * `MPI_ERRORS_ARE_FATAL` and `MPI_ERRORS_ABORT`: one line on stderr naming the rank, the
//!   function, the error and what was wrong, then the process ends with the error class as its
//!   exit status (as MPICH does); `mpirun` then ends the job.
//!
//! An error is raised on the communicator the call was about; an error with no communicator
//! (a bad request handle, an invalid communicator handle) on `MPI_COMM_WORLD`'s handler.
//! Before `MPI_Init` and after `MPI_Finalize` there are no handlers, and errors are fatal.

use crate::abi::*;
use crate::comm::WORLD;
use crate::cptr::{write_c_string, Out};
use crate::error::{class_info, error_string, MpiError};
use crate::export::mpi_fn;
use crate::global;
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
    let world_rank = rt.comms.get(WORLD).rank;
    fatal(
        func,
        Some(world_rank),
        Some((comm.name, comm.errhandler)),
        &e,
    )
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

fn check_errhandler(h: MPI_Errhandler) -> Result<MPI_Errhandler, MpiError> {
    match h {
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_RETURN | MPI_ERRORS_ABORT => Ok(h),
        MPI_ERRHANDLER_NULL => Err(MpiError::arg("the error handler is MPI_ERRHANDLER_NULL")),
        _ => Err(MpiError::arg(format!(
            "0x{h:08x} is not an error handler (use MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN or MPI_ERRORS_ABORT)"
        ))),
    }
}

mpi_fn! {
    /// `MPI_Comm_set_errhandler`: sets what errors raised on `comm` do.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(
        comm: MPI_Comm,
        errhandler: MPI_Errhandler,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let h = check_errhandler(errhandler).map_err(|e| e.on(idx))?;
        rt.comms.lookup_mut(comm)?.errhandler = h;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_errhandler`: the handler of `comm`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(
        comm: MPI_Comm,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        Out::new(errhandler, "errhandler").map_err(|e| e.on(idx))?.set(c.errhandler);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_call_errhandler`: invokes `comm`'s handler on `errorcode`. Returns
    /// `MPI_SUCCESS` when the handler returns (`MPI_ERRORS_RETURN`).
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: MPI_Comm, errorcode: c_int) |st| {
        let rt = st.runtime()?;
        let (_, c) = rt.comms.lookup(comm)?;
        if c.errhandler == MPI_ERRORS_RETURN {
            return Ok(());
        }
        let e = MpiError::new(errorcode, "raised by the program with MPI_Comm_call_errhandler");
        fatal("MPI_Comm_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((c.name, c.errhandler)), &e)
    }
}

mpi_fn! {
    /// `MPI_Error_string`: a description of an error code (may be called at any time).
    fn MPI_Error_string / PMPI_Error_string(
        errorcode: c_int,
        string: *mut c_char,
        resultlen: *mut c_int,
    ) |_st| {
        let len_out = Out::new(resultlen, "resultlen")?;
        let len = write_c_string(string, MPI_MAX_ERROR_STRING as usize, &error_string(errorcode), "string")?;
        len_out.set(len);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Error_class`: the class of an error code, which here is the code itself (may be
    /// called at any time).
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) |_st| {
        let out = Out::new(errorclass, "errorclass")?;
        if class_info(errorcode).is_none() {
            return Err(MpiError::arg(format!("{errorcode} is not an MPI error code")));
        }
        out.set(errorcode);
        Ok(())
    }
}
