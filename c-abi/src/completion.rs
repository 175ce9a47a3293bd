//! Completing requests: `MPI_Wait`, `MPI_Test` and their `all`/`any`/`some` forms,
//! `MPI_Request_free`, `MPI_Request_get_status`, `MPI_Cancel`.
//!
//! Everything goes through [`poll`], which looks at one handle and, if its operation is
//! complete, retires it: a nonblocking request is freed and the caller's handle becomes
//! `MPI_REQUEST_NULL`; a persistent request becomes inactive and keeps its handle.
//! `MPI_REQUEST_NULL` and inactive persistent requests complete at once with the empty status.
//!
//! The multiple-completion calls check every handle before touching any, then loop: look at
//! the requests without driving the engine, and when nothing is ready call
//! `Adi::progress_or_idle`, which drives progress and backs off (spin, yield, nap) when nothing
//! happens, so ranks that outnumber cores give each other the processor. An operation that
//! failed (a truncated receive) makes them return `MPI_ERR_IN_STATUS` with each status's
//! `MPI_ERROR` saying which (`MPI_Waitany`/`MPI_Testany`, which complete one, return its error).
//!
//! A request on scattered data owns a staging buffer ([`crate::request::Staging`]): when the
//! engine completes it, a receive's data is unpacked into the user's buffer ([`unstage`])
//! before the request is retired, and the buffer goes with the request.

use crate::abi::*;
use crate::coll::{self, CollId};
use crate::comm::CommIdx;
use crate::cptr::{Array, Out, StatusOut, Statuses};
use crate::error::{MpiError, MpiResult};
use crate::export::mpi_fn;
use crate::request::{Op, PersistentState, Staging};
use crate::state::Runtime;
use crate::status::Completion;
use mpich_channel::{ReqId, Status, Waiter};
use std::ffi::c_int;

/// Where a request stands.
#[derive(Debug, Clone, Copy)]
enum Stand {
    /// `MPI_REQUEST_NULL` or an inactive persistent request.
    Idle,
    /// Complete, status kept.
    Ready(Completion),
    /// In the engine; whether the request owns a staging buffer.
    Running(ReqId, bool),
    /// A nonblocking collective (never persistent).
    Coll(CollId),
}

/// A request's communicator, where it stands, and whether it is persistent.
#[inline(always)]
fn stand(rt: &mut Runtime, handle: MPI_Request) -> MpiResult<(Option<CommIdx>, Stand, bool)> {
    if handle == MPI_REQUEST_NULL {
        return Ok((None, Stand::Idle, false));
    }
    let r = rt.requests.get_mut(handle)?;
    let (stand, persistent) = match &r.op {
        Op::Engine(id) => (Stand::Running(*id, false), false),
        Op::Staged(id, _) => (Stand::Running(*id, true), false),
        Op::Done(c) => (Stand::Ready(*c), false),
        Op::Coll(id) => (Stand::Coll(*id), false),
        Op::Persistent(p) => match p.state {
            PersistentState::Inactive => (Stand::Idle, true),
            PersistentState::Active(id) => (Stand::Running(id, p.staging.is_some()), true),
            PersistentState::Complete(c) => (Stand::Ready(c), true),
        },
    };
    Ok((Some(r.comm), stand, persistent))
}

/// Retires a completed request: frees it (the handle becomes `MPI_REQUEST_NULL`) or, if
/// persistent, makes it inactive.
#[inline(always)]
fn retire(rt: &mut Runtime, handle: &mut MPI_Request, persistent: bool) {
    if persistent {
        if let Ok(r) = rt.requests.get_mut(*handle) {
            if let Op::Persistent(p) = &mut r.op {
                p.state = PersistentState::Inactive;
            }
        }
    } else {
        let _ = rt.requests.remove(*handle);
        *handle = MPI_REQUEST_NULL;
    }
}

/// Finishes the staging of a request whose engine operation completed with `received` bytes:
/// a receive's data is unpacked into the user's buffer. The buffer is released (a persistent
/// request's at once, another's when it is retired).
#[inline(never)]
fn unstage(rt: &mut Runtime, handle: MPI_Request, received: usize) {
    let Ok(r) = rt.requests.get_mut(handle) else {
        return;
    };
    let staging = match &mut r.op {
        Op::Staged(id, _) => {
            let id = *id;
            match std::mem::replace(&mut r.op, Op::Engine(id)) {
                Op::Staged(_, staging) => Some(staging),
                _ => unreachable!("matched Staged"),
            }
        }
        Op::Persistent(p) => p.staging.take(),
        _ => None,
    };
    if let Some(staging) = staging {
        if let Staging::Recv(s) = *staging {
            s.finish(received);
        }
    }
}

/// Lets go of a request the program frees while the engine may still use its staging buffer:
/// the buffer is leaked rather than freed under the engine.
fn orphan(r: crate::request::Request) {
    match r.op {
        Op::Staged(_, staging) => std::mem::forget(staging),
        Op::Persistent(p) => std::mem::forget(p.staging),
        _ => {}
    }
}

/// How [`poll`] treats an operation still in the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Only look (the caller drives progress).
    Look,
    /// Drive the engine once (`MPI_Test`).
    Test,
    /// Wait for it (`MPI_Wait`).
    Block,
}

/// A retired request's completion, and its communicator (none for the empty status).
#[derive(Debug, Clone, Copy)]
struct Finished {
    c: Completion,
    comm: Option<CommIdx>,
}

impl Finished {
    /// The error this completion must raise, if the operation failed.
    fn check(&self) -> MpiResult<()> {
        self.c.check().map_err(|e| self.on(e))
    }

    fn on(&self, e: MpiError) -> MpiError {
        match self.comm {
            Some(c) => e.on(c),
            None => e,
        }
    }
}

/// Completes the request behind `*handle` if it is complete (or, with `How::Block`, once it
/// is), retiring it; `None` while it is still running.
#[inline(always)]
fn poll(rt: &mut Runtime, handle: &mut MPI_Request, how: How) -> MpiResult<Option<Finished>> {
    let (comm, stand, persistent) = stand(rt, *handle)?;
    let c = match stand {
        Stand::Idle => {
            return Ok(Some(Finished {
                c: Completion::EMPTY,
                comm,
            }))
        }
        Stand::Ready(c) => c,
        Stand::Running(id, staged) => {
            let comm_idx = comm.expect("a running request has a communicator");
            let engine: MpiResult<Option<Status>> = match how {
                How::Look if !rt.adi.is_complete(id) => Ok(None),
                How::Look | How::Test => rt.adi.test(id).map_err(MpiError::from),
                How::Block if coll::in_flight(rt) => coll::wait_engine(rt, id).map(Some),
                How::Block => rt.adi.wait(id).map(Some).map_err(MpiError::from),
            };
            match engine {
                Ok(None) => return Ok(None),
                Ok(Some(s)) => {
                    if staged {
                        unstage(rt, *handle, s.len);
                    }
                    Completion::from_engine(&s, rt.comms.get(comm_idx))
                }
                Err(e) => {
                    retire(rt, handle, persistent);
                    return Err(e.on(comm_idx));
                }
            }
        }
        Stand::Coll(id) => {
            let comm_idx = comm.expect("a collective request has a communicator");
            let done = match how {
                How::Look | How::Test => coll::test(rt, id),
                How::Block => coll::wait(rt, id).map(|()| true),
            };
            match done {
                Ok(false) => return Ok(None),
                Ok(true) => Completion::EMPTY,
                Err(e) => {
                    retire(rt, handle, persistent);
                    return Err(e.on(comm_idx));
                }
            }
        }
    };
    retire(rt, handle, persistent);
    Ok(Some(Finished { c, comm }))
}

/// Whether a handle has an operation to wait for (neither null nor inactive).
fn is_active(rt: &mut Runtime, handle: MPI_Request) -> MpiResult<bool> {
    Ok(!matches!(stand(rt, handle)?.1, Stand::Idle))
}

fn count_arg(count: c_int) -> MpiResult<usize> {
    usize::try_from(count).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("the count is {count}; it must be 0 or more"),
        )
    })
}

/// Checks every handle of an array before any is used.
fn check_all(rt: &mut Runtime, requests: &Array<MPI_Request>) -> MpiResult<()> {
    for i in 0..requests.len() {
        let h = requests.get(i);
        if h != MPI_REQUEST_NULL {
            rt.requests.check(h).map_err(|e| MpiError {
                detail: format!("array_of_requests[{i}]: {}", e.detail),
                ..e
            })?;
        }
    }
    Ok(())
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
            self.first = Some(MpiError {
                detail: format!("request {i}: {}", e.detail),
                ..e
            });
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

/// Completes request `i` of a multiple-completion call, writing its status; failures are
/// noted (their status's `MPI_ERROR` says what).
fn complete_into(
    rt: &mut Runtime,
    requests: &Array<MPI_Request>,
    i: usize,
    how: How,
    out: impl FnOnce(&Completion),
    failures: &mut Failures,
) -> Option<()> {
    let mut h = requests.get(i);
    let polled = poll(rt, &mut h, how);
    requests.set(i, h);
    match polled {
        Ok(None) => None,
        Ok(Some(f)) => {
            out(&f.c);
            if let Err(e) = f.check() {
                failures.note(i, e);
            }
            Some(())
        }
        Err(e) => {
            out(&Completion {
                error: e.class,
                ..Completion::EMPTY
            });
            failures.note(i, e);
            Some(())
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
        let mut failures = Failures::default();
        let mut waiter = Waiter::new();
        for i in 0..n {
            let set = |c: &Completion| statuses.set(i, c);
            while complete_into(rt, &requests, i, How::Look, set, &mut failures).is_none() {
                coll::progress_or_idle(rt, &mut waiter)?;
            }
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
        rt.adi.progress()?;
        for i in 0..n {
            if let Stand::Running(id, _) = stand(rt, requests.get(i))?.1 {
                if !rt.adi.is_complete(id) {
                    flag.set(0);
                    return Ok(());
                }
            }
        }
        let mut failures = Failures::default();
        for i in 0..n {
            complete_into(rt, &requests, i, How::Look, |c| statuses.set(i, c), &mut failures);
        }
        flag.set(1);
        failures.result()
    }
}

/// One pass of `MPI_Waitany`/`MPI_Testany` over the requests: the first complete one,
/// completed; `Err(false)` when none is active; `Err(true)` when some are but none is complete.
fn any_pass(
    rt: &mut Runtime,
    requests: &Array<MPI_Request>,
) -> MpiResult<Result<(usize, Finished), bool>> {
    let mut any_active = false;
    for i in 0..requests.len() {
        let mut h = requests.get(i);
        if !is_active(rt, h)? {
            continue;
        }
        any_active = true;
        let polled = poll(rt, &mut h, How::Look);
        requests.set(i, h);
        if let Some(f) = polled? {
            return Ok(Ok((i, f)));
        }
    }
    Ok(Err(any_active))
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
        let mut waiter = Waiter::new();
        loop {
            match any_pass(rt, &requests)? {
                Ok((i, f)) => {
                    indx.set(i as c_int);
                    status.set(&f.c);
                    return f.check();
                }
                Err(false) => {
                    indx.set(MPI_UNDEFINED);
                    status.set(&Completion::EMPTY);
                    return Ok(());
                }
                Err(true) => coll::progress_or_idle(rt, &mut waiter)?,
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
        rt.adi.progress()?;
        match any_pass(rt, &requests)? {
            Ok((i, f)) => {
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

/// One pass of `MPI_Waitsome`/`MPI_Testsome`: completes every complete request, listing
/// them; `None` when no request is active.
fn some_pass(
    rt: &mut Runtime,
    requests: &Array<MPI_Request>,
    indices: &Array<c_int>,
    statuses: &Statuses,
    failures: &mut Failures,
) -> MpiResult<Option<usize>> {
    let mut done = 0;
    let mut any_active = false;
    for i in 0..requests.len() {
        if !is_active(rt, requests.get(i))? {
            continue;
        }
        any_active = true;
        let slot = done;
        if complete_into(
            rt,
            requests,
            i,
            How::Look,
            |c| statuses.set(slot, c),
            failures,
        )
        .is_some()
        {
            indices.set(slot, i as c_int);
            done += 1;
        }
    }
    Ok(any_active.then_some(done))
}

/// The argument handling shared by `MPI_Waitsome` and `MPI_Testsome`.
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
    let mut failures = Failures::default();
    let mut waiter = Waiter::new();
    if !wait {
        rt.adi.progress()?;
    }
    loop {
        match some_pass(rt, &requests, &indices, &statuses, &mut failures)? {
            None => {
                outcount.set(MPI_UNDEFINED);
                return Ok(());
            }
            Some(done) if done > 0 || !wait => {
                outcount.set(done as c_int);
                return failures.result();
            }
            Some(_) => coll::progress_or_idle(rt, &mut waiter)?,
        }
    }
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

mpi_fn! {
    /// `MPI_Request_free`: lets a request complete by itself; the handle becomes
    /// `MPI_REQUEST_NULL`.
    fn MPI_Request_free / PMPI_Request_free(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?;
        let h = handle.get();
        let (comm, stand, _) = stand(rt, h)?;
        let Some(comm) = comm else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to free"));
        };
        match stand {
            Stand::Running(id, _) => rt.adi.request_free(id).map_err(|e| MpiError::from(e).on(comm))?,
            Stand::Coll(_) => return Err(collective_request("free").on(comm)),
            Stand::Idle | Stand::Ready(_) => {}
        }
        let r = rt.requests.remove(h)?;
        if let Stand::Running(_, true) = stand {
            orphan(r);
        }
        handle.set(MPI_REQUEST_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Request_get_status`: whether a request is complete, and its status, without
    /// freeing it (its completion is kept for the `MPI_Wait`/`MPI_Test` that will).
    fn MPI_Request_get_status / PMPI_Request_get_status(
        request: MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let flag = Out::new(flag, "flag")?;
        let status = StatusOut::new(status)?;
        let (comm, stand, _) = stand(rt, request)?;
        let c = match stand {
            Stand::Idle => Completion::EMPTY,
            Stand::Ready(c) => c,
            Stand::Running(id, staged) => {
                let comm = comm.expect("a running request has a communicator");
                if !rt.adi.is_complete(id) {
                    rt.adi.progress().map_err(|e| MpiError::from(e).on(comm))?;
                }
                if !rt.adi.is_complete(id) {
                    flag.set(0);
                    return Ok(());
                }
                let s = rt.adi.test(id).map_err(|e| MpiError::from(e).on(comm))?;
                let s = s.expect("a complete request tests complete");
                if staged {
                    unstage(rt, request, s.len);
                }
                let c = Completion::from_engine(&s, rt.comms.get(comm));
                // Keep the completion: the engine's id is spent.
                let r = rt.requests.get_mut(request)?;
                match &mut r.op {
                    Op::Persistent(p) => p.state = PersistentState::Complete(c),
                    op => *op = Op::Done(c),
                }
                c
            }
            Stand::Coll(id) => {
                let comm = comm.expect("a collective request has a communicator");
                if !coll::test(rt, id).map_err(|e| e.on(comm))? {
                    flag.set(0);
                    return Ok(());
                }
                rt.requests.get_mut(request)?.op = Op::Done(Completion::EMPTY);
                Completion::EMPTY
            }
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
        let (comm, stand, _) = stand(rt, h)?;
        let Some(comm) = comm else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to cancel"));
        };
        match stand {
            Stand::Running(id, _) => rt.adi.cancel(id).map_err(|e| MpiError::from(e).on(comm))?,
            Stand::Coll(_) => return Err(collective_request("cancel").on(comm)),
            Stand::Idle | Stand::Ready(_) => {}
        }
        Ok(())
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
