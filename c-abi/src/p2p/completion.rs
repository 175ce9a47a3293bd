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
use crate::p2p::status::{StatusOut, Statuses};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::p2p::request;
use crate::runtime::Runtime;
use crate::p2p::status::Completion;
use mpich_channel::{ReqId, Standing};
use std::ffi::c_int;

/// A retired request's completion, and its communicator (none for the empty status).
#[derive(Debug, Clone)]
struct Finished {
    c: Completion,
    comm: Option<CommIdx>,
    /// The detail of a failed nonblocking collective.
    detail: Option<MpiError>,
}

impl Finished {
    const EMPTY: Finished = Finished { c: Completion::EMPTY, comm: None, detail: None };

    /// The error this completion must raise, if the operation failed.
    fn check(&self) -> MpiResult<()> {
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
fn resolve(rt: &Runtime, handle: MPI_Request) -> MpiResult<Option<ReqId>> {
    if handle == MPI_REQUEST_NULL {
        return Ok(None);
    }
    request::lookup(&rt.engine, handle).map(Some)
}

/// The engine request behind a handle already checked (`None` for null).
#[inline(always)]
fn resolve_in(engine: &mpich_channel::Engine, handle: MPI_Request) -> Option<ReqId> {
    if handle == MPI_REQUEST_NULL {
        return None;
    }
    request::lookup(engine, handle).ok()
}

/// Whether a handle has an operation to wait for (neither null nor inactive).
fn is_active(rt: &Runtime, id: Option<ReqId>) -> bool {
    id.is_some_and(|id| rt.engine.p2p_ref().standing(id) != Some(Standing::Inactive))
}

/// Whether a handle's operation is over (null and inactive ones are).
#[inline(always)]
fn is_over(rt: &Runtime, id: Option<ReqId>) -> bool {
    match id {
        None => true,
        Some(id) => rt.engine.p2p_ref().standing(id) != Some(Standing::Pending),
    }
}

/// Hands over the status of request `id`, which is complete or inactive: frees it and sets
/// the handle to `MPI_REQUEST_NULL`, or makes a persistent one inactive.
#[inline(always)]
fn retire(rt: &mut Runtime, handle: &mut MPI_Request, id: ReqId) -> MpiResult<Finished> {
    let retired = rt.engine.p2p().retire(id).map_err(|e| MpiError::from(e).on(request::comm_of(&rt.engine, id)))?;
    let Some(r) = retired else {
        // An inactive persistent request.
        let comm = request::comm_of(&rt.engine, id);
        return Ok(Finished { comm: Some(comm), ..Finished::EMPTY });
    };
    if !r.persistent {
        *handle = MPI_REQUEST_NULL;
    }
    let comm = r.owner as CommIdx;
    let detail = r.attachment.and_then(request::outcome_of);
    let c = Completion::from_engine(&r.status, rt.comms.get(comm));
    Ok(Finished { c, comm: Some(comm), detail })
}

/// How [`poll`] treats a request still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
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
fn poll(rt: &mut Runtime, handle: &mut MPI_Request, how: How) -> MpiResult<Option<Finished>> {
    let Some(id) = resolve(rt, *handle)? else { return Ok(Some(Finished::EMPTY)) };
    if !is_over(rt, Some(id)) {
        let comm = request::comm_of(&rt.engine, id);
        let on = |e: mpich_channel::AdiError| MpiError::from(e).on(comm);
        match how {
            How::Look => return Ok(None),
            How::Test => {
                rt.engine.poke().map_err(on)?;
                if !rt.engine.p2p_ref().is_complete(id) {
                    return Ok(None);
                }
            }
            How::Block => rt.engine.wait_complete(id).map_err(on)?,
        }
    }
    retire(rt, handle, id).map(Some)
}

fn count_arg(count: c_int) -> MpiResult<usize> {
    usize::try_from(count).map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("the count is {count}; it must be 0 or more")))
}

/// Checks every handle of an array before any is used.
fn check_all(rt: &Runtime, requests: &Array<MPI_Request>) -> MpiResult<()> {
    for i in 0..requests.len() {
        resolve(rt, requests.get(i)).map_err(|e| MpiError { detail: format!("array_of_requests[{i}]: {}", e.detail), ..e })?;
    }
    Ok(())
}

/// The request behind handle `i` of a checked array (`None` for null).
#[inline(always)]
fn id_at(rt: &Runtime, requests: &Array<MPI_Request>, i: usize) -> Option<ReqId> {
    resolve(rt, requests.get(i)).ok().flatten()
}

/// Collects the failures of a multiple-completion call into `MPI_ERR_IN_STATUS`.
#[derive(Default)]
struct Failures {
    first: Option<MpiError>,
}

impl Failures {
    /// Records the outcome of request `i` (written into its status by the caller).
    fn note(&mut self, i: usize, e: MpiError) {
        if self.first.is_none() {
            self.first = Some(MpiError { detail: format!("request {i}: {}", e.detail), ..e });
        }
    }

    fn result(self) -> MpiResult<()> {
        match self.first {
            None => Ok(()),
            Some(e) => Err(MpiError {
                class: MPI_ERR_IN_STATUS,
                detail: format!("{} ({})", e.detail, crate::error::error_string(e.class)),
                comm: e.comm,
            }),
        }
    }
}

/// Retires request `i` of a multiple-completion call (it is over), writing its status;
/// failures are noted (their status's `MPI_ERROR` says what).
fn complete_into(rt: &mut Runtime, requests: &Array<MPI_Request>, i: usize, out: impl FnOnce(&Completion), failures: &mut Failures) {
    let mut h = requests.get(i);
    let polled = poll(rt, &mut h, How::Look);
    requests.set(i, h);
    match polled {
        Ok(None) => unreachable!("complete_into is called for requests that are over"),
        Ok(Some(f)) => {
            let mut c = f.c;
            if let Err(e) = f.check() {
                c.error = e.class;
                failures.note(i, e);
            }
            out(&c);
        }
        Err(e) => {
            out(&Completion { error: e.class, ..Completion::EMPTY });
            failures.note(i, e);
        }
    }
}

mpi_fn! {
    /// `MPI_Wait`: waits for a request to complete.
    fn MPI_Wait / PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?;
        let status = StatusOut::new(status)?;
        let mut h = handle.get();
        let polled = poll(rt, &mut h, How::Block);
        handle.set(h);
        let f = polled?.expect("a blocking wait completes");
        status.set(&f.c);
        f.check()
    }
}

mpi_fn! {
    /// `MPI_Test`: completes a request if it is complete (`*flag` says whether).
    fn MPI_Test / PMPI_Test(
        request: *mut MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?;
        let flag = Out::new(flag, "flag")?;
        let status = StatusOut::new(status)?;
        let mut h = handle.get();
        let polled = poll(rt, &mut h, How::Test);
        handle.set(h);
        match polled? {
            None => {
                flag.set(0);
                Ok(())
            }
            Some(f) => {
                flag.set(1);
                status.set(&f.c);
                f.check()
            }
        }
    }
}

mpi_fn! {
    /// `MPI_Waitall`: waits for every request.
    fn MPI_Waitall / PMPI_Waitall(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        array_of_statuses: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let n = count_arg(count)?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        let statuses = Statuses::new(array_of_statuses, n)?;
        check_all(rt, &requests)?;
        // One wait for the whole batch: the engine turns until the last is over.
        let mut next = 0;
        let engine = &mut rt.engine;
        engine.block_on(|e| {
            while next < n && match resolve_in(e, requests.get(next)) {
                None => true,
                Some(id) => e.p2p_ref().standing(id) != Some(Standing::Pending),
            } {
                next += 1;
            }
            Ok::<_, MpiError>((next == n).then_some(()))
        })?;
        let mut failures = Failures::default();
        for i in 0..n {
            complete_into(rt, &requests, i, |c| statuses.set(i, c), &mut failures);
        }
        failures.result()
    }
}

mpi_fn! {
    /// `MPI_Testall`: completes every request if all are complete (`*flag` says whether);
    /// otherwise completes none.
    fn MPI_Testall / PMPI_Testall(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        flag: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let n = count_arg(count)?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        let flag = Out::new(flag, "flag")?;
        let statuses = Statuses::new(array_of_statuses, n)?;
        check_all(rt, &requests)?;
        rt.engine.poke()?;
        if !(0..n).all(|i| is_over(rt, id_at(rt, &requests, i))) {
            flag.set(0);
            return Ok(());
        }
        let mut failures = Failures::default();
        for i in 0..n {
            complete_into(rt, &requests, i, |c| statuses.set(i, c), &mut failures);
        }
        flag.set(1);
        failures.result()
    }
}

/// The first active request that is over, if any; `Err(false)` when none is active,
/// `Err(true)` when some are but none is over.
fn any_over(rt: &Runtime, requests: &Array<MPI_Request>) -> Result<usize, bool> {
    let mut any_active = false;
    for i in 0..requests.len() {
        let id = id_at(rt, requests, i);
        if !is_active(rt, id) {
            continue;
        }
        any_active = true;
        if is_over(rt, id) {
            return Ok(i);
        }
    }
    Err(any_active)
}

mpi_fn! {
    /// `MPI_Waitany`: waits for one of the requests and completes it (`*indx`; `MPI_UNDEFINED`
    /// if none is active).
    fn MPI_Waitany / PMPI_Waitany(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        indx: *mut c_int,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let n = count_arg(count)?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        let indx = Out::new(indx, "indx")?;
        let status = StatusOut::new(status)?;
        check_all(rt, &requests)?;
        let found = rt.engine.block_on(|e| {
            let mut any_active = false;
            for i in 0..n {
                let Some(id) = resolve_in(e, requests.get(i)) else { continue };
                match e.p2p_ref().standing(id) {
                    Some(Standing::Complete) => return Ok::<_, MpiError>(Some(Some((i, id)))),
                    Some(Standing::Pending) => any_active = true,
                    _ => {}
                }
            }
            Ok((!any_active).then_some(None))
        })?;
        match found {
            Some((i, id)) => {
                let mut h = requests.get(i);
                let f = retire(rt, &mut h, id)?;
                requests.set(i, h);
                indx.set(i as c_int);
                status.set(&f.c);
                f.check()
            }
            None => {
                indx.set(MPI_UNDEFINED);
                status.set(&Completion::EMPTY);
                Ok(())
            }
        }
    }
}

mpi_fn! {
    /// `MPI_Testany`: completes one complete request if there is one.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        indx: *mut c_int,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let n = count_arg(count)?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        let indx = Out::new(indx, "indx")?;
        let flag = Out::new(flag, "flag")?;
        let status = StatusOut::new(status)?;
        check_all(rt, &requests)?;
        rt.engine.poke()?;
        match any_over(rt, &requests) {
            Ok(i) => {
                let mut h = requests.get(i);
                let f = retire(rt, &mut h, id_at(rt, &requests, i).expect("an active request"))?;
                requests.set(i, h);
                indx.set(i as c_int);
                flag.set(1);
                status.set(&f.c);
                f.check()
            }
            Err(any_active) => {
                indx.set(MPI_UNDEFINED);
                flag.set(!any_active as c_int);
                if !any_active {
                    status.set(&Completion::EMPTY);
                }
                Ok(())
            }
        }
    }
}

/// The argument handling shared by `MPI_Waitsome` and `MPI_Testsome`: completes every active
/// request that is over (waiting first, with `wait`, until one is), listing them.
fn some(
    rt: &mut Runtime,
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
    check_all(rt, &requests)?;
    if wait {
        rt.engine.block_on(|e| {
            let mut any_active = false;
            for i in 0..n {
                let Some(id) = resolve_in(e, requests.get(i)) else { continue };
                match e.p2p_ref().standing(id) {
                    Some(Standing::Complete) => return Ok::<_, MpiError>(Some(())),
                    Some(Standing::Pending) => any_active = true,
                    _ => {}
                }
            }
            Ok((!any_active).then_some(()))
        })?;
    } else {
        rt.engine.poke()?;
    }
    if !(0..n).any(|i| is_active(rt, id_at(rt, &requests, i))) {
        outcount.set(MPI_UNDEFINED);
        return Ok(());
    }
    let mut failures = Failures::default();
    let mut done = 0;
    for i in 0..n {
        let id = id_at(rt, &requests, i);
        if !is_active(rt, id) || !is_over(rt, id) {
            continue;
        }
        let slot = done;
        complete_into(rt, &requests, i, |c| statuses.set(slot, c), &mut failures);
        indices.set(slot, i as c_int);
        done += 1;
    }
    outcount.set(done as c_int);
    failures.result()
}

mpi_fn! {
    /// `MPI_Waitsome`: waits until at least one request completes, and completes all that have.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        array_of_requests: *mut MPI_Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        some(rt, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true)
    }
}

mpi_fn! {
    /// `MPI_Testsome`: completes the requests that are complete (possibly none).
    fn MPI_Testsome / PMPI_Testsome(
        incount: c_int,
        array_of_requests: *mut MPI_Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        some(rt, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false)
    }
}

/// Whether request `id` is a nonblocking collective's (which MPI lets no one free or cancel).
fn is_collective(rt: &mut Runtime, id: ReqId) -> bool {
    rt.engine.p2p().attachment(id).is_some_and(|a| a.as_any_mut().is::<request::Outcome>())
}

mpi_fn! {
    /// `MPI_Request_free`: lets a request complete by itself; the handle becomes
    /// `MPI_REQUEST_NULL`. What the request holds (a staging buffer) is released when its
    /// operation ends.
    fn MPI_Request_free / PMPI_Request_free(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?;
        let Some(id) = resolve(rt, handle.get())? else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to free"));
        };
        let comm = request::comm_of(&rt.engine, id);
        if is_collective(rt, id) && !rt.engine.p2p_ref().is_complete(id) {
            return Err(collective_request("free").on(comm));
        }
        rt.engine.p2p().request_free(id).map_err(|e| MpiError::from(e).on(comm))?;
        handle.set(MPI_REQUEST_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Request_get_status`: whether a request is complete, and its status, without
    /// freeing it (the `MPI_Wait`/`MPI_Test` that will still gets the same status).
    fn MPI_Request_get_status / PMPI_Request_get_status(
        request: MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let flag = Out::new(flag, "flag")?;
        let status = StatusOut::new(status)?;
        let Some(id) = resolve(rt, request)? else {
            flag.set(1);
            status.set(&Completion::EMPTY);
            return Ok(());
        };
        let comm = request::comm_of(&rt.engine, id);
        if rt.engine.p2p_ref().standing(id) == Some(Standing::Pending) {
            rt.engine.poke().map_err(|e| MpiError::from(e).on(comm))?;
        }
        let c = match rt.engine.p2p_ref().standing(id) {
            Some(Standing::Pending) => {
                flag.set(0);
                return Ok(());
            }
            Some(Standing::Complete) => {
                let s = rt.engine.p2p_ref().peek_status(id).expect("a complete request has a status");
                Completion::from_engine(&s, rt.comms.get(comm))
            }
            _ => Completion::EMPTY,
        };
        flag.set(1);
        status.set(&c);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Cancel`: asks for a pending operation to be cancelled. The request must still be
    /// completed; `MPI_Test_cancelled` on its status says whether the cancel succeeded.
    fn MPI_Cancel / PMPI_Cancel(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let h = Out::new(request, "request")?.get();
        let Some(id) = resolve(rt, h)? else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to cancel"));
        };
        let comm = request::comm_of(&rt.engine, id);
        if is_collective(rt, id) {
            return Err(collective_request("cancel").on(comm));
        }
        rt.engine.p2p().cancel(id).map_err(|e| MpiError::from(e).on(comm))
    }
}

/// The error for freeing or cancelling a nonblocking collective, which MPI forbids.
#[cold]
fn collective_request(what: &str) -> MpiError {
    MpiError::new(
        MPI_ERR_REQUEST,
        format!("the request belongs to a nonblocking collective, which MPI does not allow to {what}; complete it with MPI_Wait or MPI_Test"),
    )
}
