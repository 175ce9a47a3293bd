//! An MPI call's error, handed to its handler (`raise`), and the text of a panic caught in a
//! call (`panic_text`): for the entry points (`runtime::export`) and the lane path
//! (`runtime::thread::lane`), each after the call's own reference to the state has ended.

use crate::errhandler;
use crate::error::MpiError;
use crate::runtime::global;
use std::ffi::c_int;

/// Hands `e`, raised by the MPI function `func`, to its communicator's error handler: returns
/// the code to give the caller, or ends the process (always, outside `MPI_Init`..`MPI_Finalize`).
#[cold]
pub(crate) fn raise(func: &'static str, e: MpiError) -> c_int {
    // SAFETY: called by `call` after the call's body returned; its reference to the state is
    // gone, so this is the only one.
    let st = unsafe { global::state() };
    let e = match (st.runtime_ref(), e.session) {
        (Some(rt), Some(_)) => {
            let rank = rt.comms.get(crate::comm::WORLD).rank;
            match crate::session::raise_on_session(func, e, &rt.sessions, &rt.errhandlers, rank) {
                Ok(code) => return code,
                Err(e) => e,
            }
        }
        _ => e,
    };
    match st.runtime_ref() {
        Some(rt) => match e.win.and_then(|w| rt.wins.errhandler(w).map(|h| (w, h))) {
            Some((w, (handler, label))) => {
                let rank = rt.comms.get(crate::comm::WORLD).rank;
                errhandler::handle_object(func, e, w, handler, &label, rank, &rt.errhandlers)
            }
            None => match crate::file::raise_on_file(func, e, rt) {
                Ok(code) => code,
                Err(e) => errhandler::handle(func, e, &rt.comms, &rt.errhandlers),
            },
        },
        None => errhandler::fatal(func, None, None, &e),
    }
}

#[cold]
pub(crate) fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    let what = if let Some(s) = panic.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    };
    format!("the library failed an internal check ({what}); please report this as a bug")
}
