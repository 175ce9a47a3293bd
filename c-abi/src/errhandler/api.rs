//! The C entry points of error handling: `MPI_Comm_create_errhandler`, `MPI_Errhandler_free`,
//! `MPI_Comm_set_errhandler`, `MPI_Comm_get_errhandler`, `MPI_Comm_call_errhandler`, the
//! MPI-1 `MPI_Errhandler_create`/`set`/`get`, `MPI_Error_string`, `MPI_Error_class`,
//! `MPI_Add_error_class`, `MPI_Add_error_code`, `MPI_Add_error_string`; the windows' and
//! the sessions' `create`/`set`/`get`/`call` handler calls.

use super::{call_user, check_errhandler, codes, fatal};
use crate::abi::*;
use crate::comm::WORLD;
use crate::cptr::{write_c_string, Out};
use crate::error::{error_string, MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Mpi;
use std::ffi::{c_char, c_int};

fn set_errhandler(st: &mut Mpi, comm: MPI_Comm, errhandler: MPI_Errhandler) -> MpiResult<()> {
    let rt = st.runtime()?;
    let (idx, _) = rt.comms.lookup(comm)?;
    let h = check_errhandler(&rt.errhandlers, errhandler).map_err(|e| e.on(idx))?;
    rt.comms.get_mut(idx).errhandler = h;
    Ok(())
}

fn get_errhandler(st: &mut Mpi, comm: MPI_Comm, errhandler: *mut MPI_Errhandler) -> MpiResult<()> {
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
    st: &mut Mpi,
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
    /// `MPI_SUCCESS` when the handler returns. A fatal handler reports the class and detail of
    /// an error code the library returned earlier.
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
        let raised = "raised by the program with MPI_Comm_call_errhandler";
        let e = match (codes::class_of_instance(errorcode), codes::detail_of(errorcode)) {
            (Some(class), Some(detail)) => MpiError::new(class, format!("{detail} ({raised})")),
            (Some(class), None) => MpiError::new(class, raised),
            (None, _) => MpiError::new(errorcode, raised),
        };
        fatal("MPI_Comm_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((&c.label(), c.errhandler)), &e)
    }
}

/// The class of `code`: a predefined class, an error code the library returned, or an added
/// code or class of the running library.
fn class_of(st: &Mpi, code: c_int) -> Option<c_int> {
    if let Some(class) = codes::library_class(code) {
        return Some(class);
    }
    st.runtime_ref()
        .and_then(|rt| rt.errhandlers.class_of(code))
}

mpi_fn! {
    /// `MPI_Error_string`: a description of an error code (may be called at any time): its
    /// class, and what went wrong for a code the library returned.
    fn MPI_Error_string / PMPI_Error_string(
        errorcode: c_int,
        string: *mut c_char,
        resultlen: *mut c_int,
    ) |st| {
        let len_out = Out::new(resultlen, "resultlen")?;
        let added = st.runtime_ref().and_then(|rt| {
            rt.errhandlers.class_of(errorcode).map(|_| rt.errhandlers.strings.get(&errorcode).cloned().unwrap_or_default())
        });
        let text = added
            .or_else(|| codes::describe(errorcode))
            .unwrap_or_else(|| error_string(errorcode));
        let len = write_c_string(string, MPI_MAX_ERROR_STRING as usize, &text, "string")?;
        len_out.set(len);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Error_class`: the class of an error code (may be called at any time).
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
        out.set(rt.errhandlers.add(None)?);
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
        out.set(rt.errhandlers.add(Some(errorclass))?);
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

// ---- Windows --------------------------------------------------------------------------

mpi_fn! {
    /// `MPI_Win_create_errhandler`: a handler for windows that calls the program's function.
    fn MPI_Win_create_errhandler / PMPI_Win_create_errhandler(
        win_errhandler_fn: MPI_Win_errhandler_function,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        // A window handler has a communicator handler's signature (both handles are ints).
        create_errhandler(st, win_errhandler_fn, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Win_set_errhandler`: the handler errors of `win`'s calls go to.
    fn MPI_Win_set_errhandler / PMPI_Win_set_errhandler(win: MPI_Win, errhandler: MPI_Errhandler) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        let h = check_errhandler(&rt.errhandlers, errhandler).map_err(|e| e.on_win(win))?;
        rt.wins.get_mut(win)?.errhandler = h;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_get_errhandler`: the handler of `win`.
    fn MPI_Win_get_errhandler / PMPI_Win_get_errhandler(win: MPI_Win, errhandler: *mut MPI_Errhandler) |st| {
        let rt = st.runtime()?;
        let h = rt.wins.get(win)?.errhandler;
        Out::new(errhandler, "errhandler").map_err(|e| e.on_win(win))?.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_call_errhandler`: invokes `win`'s handler on `errorcode`; returns
    /// `MPI_SUCCESS` when the handler returns.
    fn MPI_Win_call_errhandler / PMPI_Win_call_errhandler(win: MPI_Win, errorcode: c_int) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        if w.errhandler == MPI_ERRORS_RETURN {
            return Ok(());
        }
        if let Some(f) = rt.errhandlers.function(w.errhandler) {
            call_user(f, win, errorcode);
            return Ok(());
        }
        let raised = "raised by the program with MPI_Win_call_errhandler";
        let e = match codes::class_of_instance(errorcode) {
            Some(class) => MpiError::new(class, raised),
            None => MpiError::new(errorcode, raised),
        };
        fatal("MPI_Win_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((&w.label(), w.errhandler)), &e)
    }
}

// ---- Sessions ---------------------------------------------------------------------------

mpi_fn! {
    /// `MPI_Session_create_errhandler`: a handler for sessions that calls the program's
    /// function.
    fn MPI_Session_create_errhandler / PMPI_Session_create_errhandler(
        session_errhandler_fn: MPI_Session_errhandler_function,
        errhandler: *mut MPI_Errhandler,
    ) |st| {
        // A session handler has a communicator handler's signature (both handles are ints).
        create_errhandler(st, session_errhandler_fn, errhandler)
    }
}

mpi_fn! {
    /// `MPI_Session_set_errhandler`: the handler errors of `session`'s calls go to.
    fn MPI_Session_set_errhandler / PMPI_Session_set_errhandler(session: MPI_Session, errhandler: MPI_Errhandler) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        rt.sessions.get(session).map_err(on)?;
        let h = check_errhandler(&rt.errhandlers, errhandler).map_err(on)?;
        rt.sessions.get_mut(session).map_err(on)?.errhandler = h;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_errhandler`: the handler of `session`.
    fn MPI_Session_get_errhandler / PMPI_Session_get_errhandler(session: MPI_Session, errhandler: *mut MPI_Errhandler) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        let h = rt.sessions.get(session).map_err(on)?.errhandler;
        Out::new(errhandler, "errhandler").map_err(on)?.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_call_errhandler`: invokes `session`'s handler on `errorcode`; returns
    /// `MPI_SUCCESS` when the handler returns.
    fn MPI_Session_call_errhandler / PMPI_Session_call_errhandler(session: MPI_Session, errorcode: c_int) |st| {
        let rt = st.runtime()?;
        let handler = rt.sessions.get(session).map_err(|e| e.on_session(session))?.errhandler;
        if handler == MPI_ERRORS_RETURN {
            return Ok(());
        }
        if let Some(f) = rt.errhandlers.function(handler) {
            call_user(f, session, errorcode);
            return Ok(());
        }
        let raised = "raised by the program with MPI_Session_call_errhandler";
        let e = match codes::class_of_instance(errorcode) {
            Some(class) => MpiError::new(class, raised),
            None => MpiError::new(errorcode, raised),
        };
        fatal("MPI_Session_call_errhandler", Some(rt.comms.get(WORLD).rank), Some((&format!("session 0x{session:08x}"), handler)), &e)
    }
}
