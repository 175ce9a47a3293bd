//! Completing requests: `MPI_Wait`, `MPI_Test` and their `all`/`any`/`some` forms,
//! `MPI_Request_free`, `MPI_Request_get_status`, `MPI_Cancel`.
//!
//! A handle is the progress engine's request ([`crate::p2p::request`]); every wait here is the
//! engine's one waiting loop ([`mpich_channel::Engine::block_on`]) and every test one turn of
//! its crank, so that while a program waits for, or polls, any request, all of its operations
//! move on, nonblocking collectives included (MPI's progress rule). [`retire`] hands a
//! complete request's status over: a nonblocking request is freed and the caller's handle
//! becomes `MPI_REQUEST_NULL`; a persistent request becomes inactive and keeps its handle.
//! `MPI_REQUEST_NULL` and inactive persistent requests complete at once with the empty status.
//!
//! The multiple-completion calls check every handle before touching any. An operation that
//! failed (a truncated receive) makes them return `MPI_ERR_IN_STATUS` with each status's
//! `MPI_ERROR` saying which (`MPI_Waitany`/`MPI_Testany`, which complete one, return its error).

use crate::abi::*;
use crate::comm::CommIdx;
use crate::cptr::{Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::p2p::grequest;
use crate::p2p::request;
use crate::p2p::status::Completion;
use crate::p2p::status::Statuses;
use crate::p2p::Cx;
use mpich_channel::{ReqId, Standing};
use std::ffi::c_int;

/// A retired request's completion, and its communicator (none for the empty status).
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    pub c: Completion,
    comm: Option<CommIdx>,
    /// The detail of a failed nonblocking collective.
    detail: Option<MpiError>,
}

impl Finished {
    pub const EMPTY: Finished = Finished {
        c: Completion::EMPTY,
        comm: None,
        detail: None,
    };

    /// The error this completion must raise, if the operation failed.
    pub fn check(&self) -> MpiResult<()> {
        if let Some(e) = &self.detail {
            return Err(self.on(e.clone()));
        }
        self.c.check().map_err(|e| self.on(e))
    }

    fn on(&self, e: MpiError) -> MpiError {
        match self.comm {
            Some(c) => e.on(c),
            None => e,
        }
    }
}

/// The engine request behind a handle; `None` for `MPI_REQUEST_NULL`.
#[inline(always)]
pub(crate) fn resolve(cx: &Cx<'_>, handle: MPI_Request) -> MpiResult<Option<ReqId>> {
    resolve_on(cx.engine, cx.lane, handle)
}

#[inline(always)]
fn resolve_on(
    engine: &mpich_channel::Engine,
    lane: usize,
    handle: MPI_Request,
) -> MpiResult<Option<ReqId>> {
    if handle == MPI_REQUEST_NULL {
        return Ok(None);
    }
    request::lookup_on(engine, lane, handle).map(Some)
}

/// The engine request behind a handle already checked (`None` for null), on lane `lane`'s
/// `engine`.
#[inline(always)]
pub(crate) fn resolve_in(
    engine: &mpich_channel::Engine,
    lane: usize,
    handle: MPI_Request,
) -> Option<ReqId> {
    resolve_on(engine, lane, handle).ok().flatten()
}

/// Whether a handle has an operation to wait for (neither null nor inactive).
pub(crate) fn is_active(cx: &Cx<'_>, id: Option<ReqId>) -> bool {
    id.is_some_and(|id| cx.engine.p2p_ref().standing(id) != Some(Standing::Inactive))
}

/// Whether a handle's operation is over (null and inactive ones are).
#[inline(always)]
pub(crate) fn is_over(cx: &Cx<'_>, id: Option<ReqId>) -> bool {
    match id {
        None => true,
        Some(id) => cx.engine.p2p_ref().standing(id) != Some(Standing::Pending),
    }
}

/// Hands over the status of request `id`, which is complete or inactive: frees it and sets
/// the handle to `MPI_REQUEST_NULL`, or makes a persistent one inactive.
#[inline(always)]
pub(crate) fn retire(cx: &mut Cx<'_>, handle: &mut MPI_Request, id: ReqId) -> MpiResult<Finished> {
    let retired = cx
        .engine
        .p2p()
        .retire(id)
        .map_err(|e| MpiError::from(e).on(request::comm_of(cx.engine, id)))?;
    let Some(r) = retired else {
        // An inactive persistent request.
        let comm = request::comm_of(cx.engine, id);
        return Ok(Finished {
            comm: Some(comm),
            ..Finished::EMPTY
        });
    };
    if !r.persistent {
        *handle = MPI_REQUEST_NULL;
    }
    let comm = r.owner as CommIdx;
    let mut attachment = r.attachment;
    if let Some(g) = grequest::of_attachment(&mut attachment) {
        // The program's query_fn and free_fn run here, with the request retired already.
        let (c, detail) = grequest::retired(&g);
        return Ok(Finished {
            c,
            comm: Some(comm),
            detail,
        });
    }
    let detail = attachment.and_then(request::outcome_of);
    let c = Completion::from_engine(&r.status, cx.comms.get(comm));
    Ok(Finished {
        c,
        comm: Some(comm),
        detail,
    })
}

/// How [`poll`] treats a request still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum How {
    /// Only look (the caller drives progress).
    Look,
    /// Turn the engine once (`MPI_Test`).
    Test,
    /// Wait for it (`MPI_Wait`).
    Block,
}

/// Completes the request behind `*handle` if it is complete (or, with `How::Block`, once it
/// is), retiring it; `None` while it is still running.
#[inline(always)]
pub(crate) fn poll(
    cx: &mut Cx<'_>,
    handle: &mut MPI_Request,
    how: How,
) -> MpiResult<Option<Finished>> {
    let Some(id) = resolve(cx, *handle)? else {
        return Ok(Some(Finished::EMPTY));
    };
    if !is_over(cx, Some(id)) {
        let comm = request::comm_of(cx.engine, id);
        let on = |e: mpich_channel::AdiError| MpiError::from(e).on(comm);
        match how {
            How::Look => return Ok(None),
            How::Test => {
                cx.engine.poke().map_err(on)?;
                if !cx.engine.p2p_ref().is_complete(id) {
                    return Ok(None);
                }
            }
            How::Block => cx.engine.wait_complete(id).map_err(on)?,
        }
    }
    retire(cx, handle, id).map(Some)
}

pub(crate) fn count_arg(count: c_int) -> MpiResult<usize> {
    usize::try_from(count).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("the count is {count}; it must be 0 or more"),
        )
    })
}

/// Checks every handle of an array before any is used.
pub(crate) fn check_all(cx: &Cx<'_>, requests: &Array<MPI_Request>) -> MpiResult<()> {
    for i in 0..requests.len() {
        resolve(cx, requests.get(i)).map_err(|e| MpiError {
            detail: format!("array_of_requests[{i}]: {}", e.detail),
            ..e
        })?;
    }
    Ok(())
}

/// The request behind handle `i` of a checked array (`None` for null).
#[inline(always)]
pub(crate) fn id_at(cx: &Cx<'_>, requests: &Array<MPI_Request>, i: usize) -> Option<ReqId> {
    resolve_in(cx.engine, cx.lane, requests.get(i))
}

/// The request behind a handle of an array [`check_all`] accepted (`None` for null), without
/// looking it up again.
#[inline(always)]
pub(crate) fn checked_id(h: MPI_Request) -> Option<ReqId> {
    (h != MPI_REQUEST_NULL).then(|| request::checked_index(h))
}

/// Whether the operation behind a handle of a checked array is still running (null, complete
/// and inactive ones are not).
#[inline(always)]
pub(crate) fn running(engine: &mpich_channel::Engine, h: MPI_Request) -> bool {
    checked_id(h).is_some_and(|id| engine.p2p_ref().is_pending(id))
}

/// Collects the failures of a multiple-completion call into `MPI_ERR_IN_STATUS`.
#[derive(Default)]
pub(crate) struct Failures {
    first: Option<MpiError>,
}

impl Failures {
    /// Records the outcome of request `i` (written into its status by the caller).
    fn note(&mut self, i: usize, e: MpiError) {
        if self.first.is_none() {
            self.first = Some(MpiError {
                detail: format!("request {i}: {}", e.detail),
                ..e
            });
        }
    }

    pub fn result(self) -> MpiResult<()> {
        match self.first {
            None => Ok(()),
            Some(e) => Err(MpiError {
                class: MPI_ERR_IN_STATUS,
                detail: format!("{} ({})", e.detail, crate::error::error_string(e.class)),
                comm: e.comm,
                win: None,
                session: None,
            }),
        }
    }
}

/// Retires request `i` of a checked array (it is over) into status `slot`, when statuses are
/// wanted; failures are noted (their status's `MPI_ERROR` says what). A plain request (no
/// attachment) that succeeded is retired in one look at the engine, its status translated
/// only when asked for; anything else takes [`complete_into`].
#[inline(always)]
pub(crate) fn retire_into(
    cx: &mut Cx<'_>,
    requests: &Array<MPI_Request>,
    i: usize,
    statuses: &Statuses<'_>,
    slot: usize,
    failures: &mut Failures,
) {
    let h = requests.get(i);
    let Some(id) = checked_id(h) else {
        statuses.set(slot, &Completion::EMPTY);
        return;
    };
    if let Some((s, owner, persistent)) = cx.engine.p2p().retire_plain(id) {
        if !persistent {
            requests.set(i, MPI_REQUEST_NULL);
        }
        if s.error == 0 && !s.truncated {
            if statuses.wanted() {
                let c = Completion::from_engine(&s, cx.comms.get(owner as CommIdx));
                statuses.set(slot, &c);
            }
            return;
        }
        let f = Finished {
            c: Completion::from_engine(&s, cx.comms.get(owner as CommIdx)),
            comm: Some(owner as CommIdx),
            detail: None,
        };
        note_finished(f, i, |c| statuses.set(slot, c), failures);
        return;
    }
    complete_into(cx, requests, i, |c| statuses.set(slot, c), failures);
}

/// Writes a retired request's completion, noting its failure.
fn note_finished(f: Finished, i: usize, out: impl FnOnce(&Completion), failures: &mut Failures) {
    let mut c = f.c;
    if let Err(e) = f.check() {
        c.error = e.class;
        failures.note(i, e);
    }
    out(&c);
}

/// Retires request `i` of a multiple-completion call (it is over), writing its status;
/// failures are noted (their status's `MPI_ERROR` says what).
pub(crate) fn complete_into(
    cx: &mut Cx<'_>,
    requests: &Array<MPI_Request>,
    i: usize,
    out: impl FnOnce(&Completion),
    failures: &mut Failures,
) {
    let mut h = requests.get(i);
    let polled = poll(cx, &mut h, How::Look);
    requests.set(i, h);
    match polled {
        Ok(None) => unreachable!("complete_into is called for requests that are over"),
        Ok(Some(f)) => note_finished(f, i, out, failures),
        Err(e) => {
            out(&Completion {
                error: e.class,
                ..Completion::EMPTY
            });
            failures.note(i, e);
        }
    }
}

/// The first active request that is over, if any; `Err(false)` when none is active,
/// `Err(true)` when some are but none is over.
pub(crate) fn any_over(cx: &Cx<'_>, requests: &Array<MPI_Request>) -> Result<usize, bool> {
    let mut any_active = false;
    for i in 0..requests.len() {
        let id = id_at(cx, requests, i);
        if !is_active(cx, id) {
            continue;
        }
        any_active = true;
        if is_over(cx, id) {
            return Ok(i);
        }
    }
    Err(any_active)
}

/// The argument handling shared by `MPI_Waitsome` and `MPI_Testsome`: completes every active
/// request that is over (waiting first, with `wait`, until one is), listing them.
pub(crate) fn some(
    cx: &mut Cx<'_>,
    incount: c_int,
    array_of_requests: *mut MPI_Request,
    outcount: *mut c_int,
    array_of_indices: *mut c_int,
    array_of_statuses: *mut MPI_Status,
    wait: bool,
) -> MpiResult<()> {
    let n = count_arg(incount)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    let outcount = Out::new(outcount, "outcount")?;
    let indices = Array::new(array_of_indices, n, "array_of_indices")?;
    let statuses = Statuses::new(array_of_statuses, n)?;
    check_all(cx, &requests)?;
    if wait {
        cx.engine.block_on(|e| {
            let mut any_active = false;
            for i in 0..n {
                let Some(id) = checked_id(requests.get(i)) else {
                    continue;
                };
                match e.p2p_ref().standing(id) {
                    Some(Standing::Complete) => return Ok::<_, MpiError>(Some(())),
                    Some(Standing::Pending) => any_active = true,
                    _ => {}
                }
            }
            Ok((!any_active).then_some(()))
        })?;
    } else {
        cx.engine.poke()?;
    }
    // One pass: every request that is complete is retired (inactive and null ones are
    // skipped); none complete and none active is MPI_UNDEFINED.
    let mut failures = Failures::default();
    let (done, any_active) = sweep(n, |i, slot| {
        let id = checked_id(requests.get(i))?;
        match cx.engine.p2p_ref().standing(id) {
            Some(Standing::Complete) => {}
            Some(Standing::Pending) => return Some(false),
            _ => return None,
        }
        retire_into(cx, &requests, i, &statuses, slot, &mut failures);
        indices.set(slot, i as c_int);
        Some(true)
    });
    if !any_active {
        outcount.set(MPI_UNDEFINED);
        return Ok(());
    }
    outcount.set(done as c_int);
    failures.result()
}

/// The pass of `MPI_Waitsome`/`Testsome` over `n` requests: `step(i, slot)` retires request
/// `i` into output `slot` if it is complete (`Some(true)`), says it is still running
/// (`Some(false)`), or that it is null or inactive (`None`). Returns how many were retired and
/// whether any was active.
pub(crate) fn sweep(n: usize, mut step: impl FnMut(usize, usize) -> Option<bool>) -> (usize, bool) {
    let (mut done, mut any_active) = (0, false);
    for i in 0..n {
        match step(i, done) {
            Some(true) => {
                any_active = true;
                done += 1;
            }
            Some(false) => any_active = true,
            None => {}
        }
    }
    (done, any_active)
}

/// Whether request `id` is a nonblocking collective's (which MPI lets no one free or cancel).
pub(crate) fn is_collective(cx: &mut Cx<'_>, id: ReqId) -> bool {
    cx.engine
        .p2p()
        .attachment(id)
        .is_some_and(|a| a.as_any_mut().is::<request::Outcome>())
}

/// Whether `id` is a request MPI forbids to cancel: a nonblocking or persistent collective's.
pub(crate) fn refuses_cancel(cx: &mut Cx<'_>, id: ReqId) -> bool {
    is_collective(cx, id)
        || cx.engine.p2p().attachment(id).is_some_and(|a| {
            a.as_any_mut()
                .downcast_mut::<request::Foreign>()
                .is_some_and(|f| !f.0.cancellable())
        })
}

/// The error for freeing or cancelling a collective's request, which MPI forbids.
#[cold]
pub(crate) fn collective_request(what: &str) -> MpiError {
    MpiError::new(
        MPI_ERR_REQUEST,
        format!("the request belongs to a collective operation (nonblocking or persistent), which MPI does not allow to {what}; complete it with MPI_Wait or MPI_Test"),
    )
}
