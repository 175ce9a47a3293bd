//! Generalized requests (MPI 4.0 §13.2): `MPI_Grequest_start`, `MPI_Grequest_complete`, and
//! what the completion calls do with them.
//!
//! ```text
//!   MPI_Grequest_start ──▶ Adi::external (a request no engine operation completes)
//!                           + Grequest attachment (query_fn, free_fn, cancel_fn, extra_state)
//!   MPI_Grequest_complete ──▶ Adi::complete_external ──▶ Wait/Test see it complete
//!   MPI_Wait/Test/...all/any/some retire it ──▶ query_fn(status) ──▶ free_fn
//!   MPI_Request_free ──▶ complete: free_fn now; running: free_fn at MPI_Grequest_complete
//!   MPI_Cancel ──▶ cancel_fn(complete?)     MPI_Request_get_status ──▶ query_fn (no free)
//! ```
//!
//! A generalized request is an engine request of its own kind (external: only
//! `MPI_Grequest_complete` completes it), so every completion call treats it like any other
//! request: waiting for one turns the progress engine until the program's other code (a
//! message handler, a callback, an operation it polls with `MPI_Test`) completes it. The
//! status the program sees is the one its `query_fn` writes (source, tag, count through
//! `MPI_Status_set_elements`, cancelled flag), taken verbatim; a non-zero return of
//! `query_fn` (or of `free_fn`) is the error the completing call reports.
//!
//! **Callbacks and the library's state.** The callbacks are called from the completion
//! calls, after the request was retired from the engine and with no reference into the
//! library's tables held across them (the caller reads what it needs again afterwards), so
//! they may call MPI: `query_fn` usually calls `MPI_Status_set_elements`, a `cancel_fn` may
//! call `MPI_Grequest_complete`. (The Fortran binding, `crate::fortran::grequest`, passes C
//! trampolines that call the Fortran procedures.)
//!
//! The communicator of a generalized request (for its error handler) is `MPI_COMM_WORLD`.

use crate::abi::*;
use crate::comm::WORLD;
use crate::error::{MpiError, MpiResult};
use crate::p2p::status::{decode, Completion};
use mpich_channel::{Attachment, Engine, ReqId, Status};
use std::any::Any;
use std::ffi::{c_int, c_void};

/// The program's three functions and its extra state.
#[derive(Clone, Copy)]
pub(crate) struct Callbacks {
    pub query: MPI_Grequest_query_function,
    pub free: MPI_Grequest_free_function,
    pub cancel: MPI_Grequest_cancel_function,
    pub extra: *mut c_void,
}

impl Callbacks {
    /// `query_fn`: fills `status`; its return code.
    fn query(self, status: &mut MPI_Status) -> c_int {
        // SAFETY: the program's query function with MPI's arguments (its extra state and a
        // writable status); it may call MPI (no reference into the tables is held).
        self.query
            .map_or(MPI_SUCCESS, |f| unsafe { f(self.extra, status) })
    }

    /// `free_fn`; its return code.
    fn free(self) -> c_int {
        // SAFETY: the program's free function with its extra state; it may call MPI.
        self.free.map_or(MPI_SUCCESS, |f| unsafe { f(self.extra) })
    }

    /// `cancel_fn(complete)`; its return code.
    fn cancel(self, complete: bool) -> c_int {
        // SAFETY: the program's cancel function with its extra state and the flag; it may
        // call MPI (MPI_Grequest_complete, typically).
        self.cancel
            .map_or(MPI_SUCCESS, |f| unsafe { f(self.extra, complete as c_int) })
    }
}

/// What a generalized request keeps: its callbacks, and whether the program freed it
/// before it completed (then `free_fn` runs when it completes).
pub(crate) struct Grequest {
    callbacks: Callbacks,
    freed: bool,
}

impl Attachment for Grequest {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Starts a generalized request: a running request that only [`complete`] completes.
pub(crate) fn start(engine: &mut Engine, callbacks: Callbacks) -> MpiResult<ReqId> {
    let id = engine.p2p().external(WORLD).map_err(MpiError::from)?;
    engine.p2p().attach(
        id,
        Box::new(Grequest {
            callbacks,
            freed: false,
        }),
    );
    Ok(id)
}

/// The generalized request behind engine request `id`, if it is one.
fn grequest(engine: &mut Engine, id: ReqId) -> Option<&mut Grequest> {
    engine
        .p2p()
        .attachment(id)
        .and_then(|a| a.as_any_mut().downcast_mut::<Grequest>())
}

/// Whether request `id` is a generalized request.
pub(crate) fn is_grequest(engine: &mut Engine, id: ReqId) -> bool {
    grequest(engine, id).is_some()
}

/// `MPI_Grequest_complete`: the request is complete; a request the program freed already is
/// released now, and its `free_fn` called.
pub(crate) fn complete(engine: &mut Engine, id: ReqId) -> MpiResult<()> {
    let Some(g) = grequest(engine, id) else {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is not a generalized request (only requests of MPI_Grequest_start can be completed with MPI_Grequest_complete)",
        ));
    };
    let (callbacks, freed) = (g.callbacks, g.freed);
    if engine.p2p_ref().is_complete(id) {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the generalized request was completed already (MPI_Grequest_complete may be called once per request)",
        ));
    }
    engine.p2p().complete_external(id, Status::default());
    if freed {
        callback_result(callbacks.free(), "free_fn")?;
    }
    Ok(())
}

/// The error of a callback that returned `rc`.
fn callback_result(rc: c_int, which: &str) -> MpiResult<()> {
    if rc == MPI_SUCCESS {
        return Ok(());
    }
    Err(MpiError::new(
        rc,
        format!("the generalized request's {which} returned error code {rc}"),
    ))
}

/// The completion of a retired generalized request: `query_fn` writes its status, then
/// `free_fn` runs. An error of either is the completion's error (its detail).
pub(crate) fn retired(g: &Grequest) -> (Completion, Option<MpiError>) {
    let (c, mut failure) = query(g.callbacks);
    if let Err(e) = callback_result(g.callbacks.free(), "free_fn") {
        failure.get_or_insert(e);
    }
    (c, failure)
}

/// The status `query_fn` writes, and its failure.
fn query(callbacks: Callbacks) -> (Completion, Option<MpiError>) {
    let mut s = Completion::EMPTY.to_status();
    s.MPI_ERROR = MPI_SUCCESS;
    let rc = callbacks.query(&mut s);
    let (bytes, cancelled) = decode(&s);
    let failure = callback_result(rc, "query_fn").err();
    let c = Completion {
        source: s.MPI_SOURCE,
        tag: s.MPI_TAG,
        bytes: bytes as usize,
        cancelled,
        error: failure.as_ref().map_or(MPI_SUCCESS, |e| e.class),
    };
    (c, failure)
}

/// The generalized request a retired request's attachment was, if it was one.
pub(crate) fn of_attachment(a: &mut Option<Box<dyn Attachment>>) -> Option<Grequest> {
    let g = a.as_mut()?.as_any_mut().downcast_mut::<Grequest>()?;
    let out = Grequest {
        callbacks: g.callbacks,
        freed: g.freed,
    };
    *a = None;
    Some(out)
}

/// `MPI_Request_get_status` of a complete generalized request: what `query_fn` says (the
/// request stays).
pub(crate) fn peek(engine: &mut Engine, id: ReqId) -> Option<MpiResult<Completion>> {
    let callbacks = grequest(engine, id)?.callbacks;
    let (c, failure) = query(callbacks);
    Some(match failure {
        Some(e) => Err(e),
        None => Ok(c),
    })
}

/// `MPI_Request_free` of a generalized request: its `free_fn` runs now if it is complete,
/// else when `MPI_Grequest_complete` completes it. Releases the engine request either way.
pub(crate) fn free(engine: &mut Engine, id: ReqId) -> MpiResult<()> {
    let Some(g) = grequest(engine, id) else {
        return Ok(());
    };
    g.freed = true;
    let callbacks = g.callbacks;
    let complete = engine.p2p_ref().is_complete(id);
    engine.p2p().request_free(id).map_err(MpiError::from)?;
    if complete {
        callback_result(callbacks.free(), "free_fn")?;
    }
    Ok(())
}

/// `MPI_Cancel` of a generalized request: `cancel_fn`, told whether it is complete.
pub(crate) fn cancel(engine: &mut Engine, id: ReqId) -> MpiResult<()> {
    let Some(g) = grequest(engine, id) else {
        return Ok(());
    };
    let callbacks = g.callbacks;
    let complete = engine.p2p_ref().is_complete(id);
    callback_result(callbacks.cancel(complete), "cancel_fn")
}
