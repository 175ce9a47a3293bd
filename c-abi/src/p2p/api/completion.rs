//! The C entry points that complete requests: `MPI_Wait`, `MPI_Test` and their
//! `all`/`any`/`some` forms, `MPI_Request_free`, `MPI_Request_get_status`, `MPI_Cancel`
//! (which call a generalized request's callbacks: `crate::p2p::grequest`).
//!
//! Under `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go,
//! [`crate::runtime::thread`]) a wait first waits, looking as its `Test` form does and letting
//! the lock go between looks, until what it waits for is over (or its arguments are wrong);
//! its body then finds it over and does not wait. A complete request stays complete until
//! retired, so what the last look saw still holds when the body runs, under the same hold
//! of the lock.

use crate::abi::*;
use crate::cptr::{Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::p2p::completion::{
    any_over, check_all, collective_request, count_arg, id_at, is_collective, poll, refuses_cancel,
    resolve, resolve_in, retire, retire_into, running, some, sweep, Failures, How,
};
use crate::p2p::grequest;
use crate::p2p::request;
use crate::p2p::status::{Completion, StatusOut, Statuses};
use crate::p2p::Cx;
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::{Calling, LaneCall};
use crate::runtime::Runtime;
use mpich_channel::Standing;
use std::ffi::c_int;

/// Under `MPI_THREAD_MULTIPLE`: waits, letting the lock go between looks (each turns the
/// engine once when `over` is false), until `over` is true. Nothing when the call's waits
/// keep the lock (its body then waits in the engine's loop).
fn wait_outside(call: &mut Calling, mut over: impl FnMut(&mut Runtime) -> bool) -> MpiResult<()> {
    if !call.releases() {
        return Ok(());
    }
    call.wait_until(|st| {
        let rt = st.runtime()?;
        if over(rt) {
            return Ok(Some(()));
        }
        // Lane 0 here; the other lanes are turned by the look itself (`Calling`).
        rt.engine.poke()?;
        if rt.lanes.off() {
            return Ok(over(rt).then_some(()));
        }
        Ok(None)
    })
}

/// Whether the non-null handles of `requests[..count]` lie on several lanes (then each is
/// reached on its own lane, [`mixed`]); `false` for arguments the body reports.
fn on_several_lanes(rt: &Runtime, count: c_int, requests: *mut MPI_Request) -> bool {
    !rt.lanes.off()
        && crate::p2p::api::handles_lane(|h| rt.lane_of_request(h), count, requests).is_none()
        && {
            let n = usize::try_from(count).unwrap_or(0);
            Array::new(requests, n, "array_of_requests").is_ok_and(|a| {
                let mut lanes = (0..n)
                    .map(|i| a.get(i))
                    .filter(|&h| h != MPI_REQUEST_NULL)
                    .map(|h| rt.lane_of_request(h));
                lanes.next().is_some_and(|first| lanes.any(|k| k != first))
            })
        }
}

/// The lane of the handles of a multiple-completion call that are on one lane (0 when
/// they are all null, or the arguments are wrong: lane 0's body reports them).
fn lane_of_all(rt: &Runtime, count: c_int, requests: *mut MPI_Request) -> usize {
    if rt.lanes.off() {
        return 0;
    }
    crate::p2p::api::handles_lane(|h| rt.lane_of_request(h), count, requests).unwrap_or(0)
}

/// Whether a waiting call on `n` handles at `requests` can run its body without waiting:
/// every handle is over (`all`), or one is complete or none is active (not `all`), or an
/// argument is wrong (the body reports it).
fn handles_over(rt: &mut Runtime, requests: *mut MPI_Request, n: c_int, all: bool) -> bool {
    handles_over_by(requests, n, all, |h| standing_of(&rt.p2p_for_request(h), h))
}

/// [`handles_over`] for handles of `cx`'s lane.
fn handles_over_on(cx: &Cx<'_>, requests: *mut MPI_Request, n: c_int, all: bool) -> bool {
    handles_over_by(requests, n, all, |h| standing_of(cx, h))
}

/// Where a handle's request stands: `Err` for a handle that names none, `Ok(None)` for null.
fn standing_of(cx: &Cx<'_>, h: MPI_Request) -> Result<Option<Option<Standing>>, ()> {
    match resolve(cx, h) {
        Err(_) => Err(()),
        Ok(None) => Ok(None),
        Ok(Some(id)) => Ok(Some(cx.engine.p2p_ref().standing(id))),
    }
}

/// On the lane path: waits (each look an `MPI_Test`'s turn of the lane, the locks let go
/// between looks) until the `n` handles at `requests` are over as [`handles_over_on`] says,
/// then runs `body` in one more look, which finds them over (a complete request stays
/// complete until retired, and MPI lets no other thread complete these handles meanwhile).
fn when_over(
    lc: &mut LaneCall,
    requests: *mut MPI_Request,
    n: c_int,
    all: bool,
    body: impl FnOnce(&mut Cx<'_>) -> MpiResult<()>,
) -> MpiResult<()> {
    lc.wait_until(|cx| {
        cx.engine.poke()?;
        Ok(handles_over_on(cx, requests, n, all).then_some(()))
    })?;
    lc.look(body)
}

fn handles_over_by(
    requests: *mut MPI_Request,
    n: c_int,
    all: bool,
    mut standing: impl FnMut(MPI_Request) -> Result<Option<Option<Standing>>, ()>,
) -> bool {
    let Ok(n) = usize::try_from(n) else {
        return true;
    };
    let Ok(requests) = Array::new(requests, n, "array_of_requests") else {
        return true;
    };
    let mut any_active = false;
    for i in 0..n {
        let s = match standing(requests.get(i)) {
            Err(()) => return true,
            Ok(None) => continue,
            Ok(Some(s)) => s,
        };
        match s {
            Some(Standing::Pending) if all => return false,
            Some(Standing::Pending) => any_active = true,
            Some(Standing::Complete) if !all => return true,
            _ => {}
        }
    }
    all || !any_active
}

mpi_fn! {
    /// `MPI_Wait`: waits for a request to complete.
    fn MPI_Wait / PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) lanes |rt| {
        crate::p2p::api::request_lane(rt, request)
    } on_lane |lc| {
        let handle = Out::new(request, "request")?;
        let status = StatusOut::new(status)?;
        let mut h = handle.get();
        let f = lc.wait_request(&mut h);
        handle.set(h);
        let f = f?;
        status.set(&f.c);
        f.check()
    } waits |call| {
        wait_outside(call, |rt| handles_over(rt, request, 1, true))?;
        let rt = call.state().runtime()?;
        let handle = Out::new(request, "request")?;
        let status = StatusOut::new(status)?;
        let mut h = handle.get();
        let polled = poll(&mut rt.p2p_for_request(h), &mut h, How::Block);
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
    ) lanes |rt| { crate::p2p::api::request_lane(rt, request) } on_lane |lc| {
        lc.look(|cx| test(cx, request, flag, status))
    } |st| {
        let rt = st.runtime()?;
        let h = Out::new(request, "request")?.get();
        test(&mut rt.p2p_for_request(h), request, flag, status)
    }
}

mpi_fn! {
    /// `MPI_Waitall`: waits for every request.
    fn MPI_Waitall / PMPI_Waitall(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        array_of_statuses: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, count, array_of_requests) } on_lane |lc| {
        when_over(lc, array_of_requests, count, true, |cx| waitall(cx, count, array_of_requests, array_of_statuses))
    } waits |call| {
        wait_outside(call, |rt| handles_over(rt, array_of_requests, count, true))?;
        let rt = call.state().runtime()?;
        if on_several_lanes(rt, count, array_of_requests) {
            return mixed(rt, count, array_of_requests, Mixed::All(array_of_statuses));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, count, array_of_requests));
        waitall(cx, count, array_of_requests, array_of_statuses)
    }
}

/// `MPI_Waitall` on one lane's context.
fn waitall(
    cx: &mut Cx<'_>,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    let statuses = Statuses::new(array_of_statuses, n)?;
    check_all(cx, &requests)?;
    // One wait for the whole batch: the engine turns once per sweep until the last is
    // over, then all are retired in one pass.
    let mut next = 0;
    cx.engine.block_on(|e| {
        while next < n && !running(e, requests.get(next)) {
            next += 1;
        }
        Ok::<_, MpiError>((next == n).then_some(()))
    })?;
    let mut failures = Failures::default();
    for i in 0..n {
        retire_into(cx, &requests, i, &statuses, i, &mut failures);
    }
    failures.result()
}

mpi_fn! {
    /// `MPI_Testall`: completes every request if all are complete (`*flag` says whether);
    /// otherwise completes none.
    fn MPI_Testall / PMPI_Testall(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        flag: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, count, array_of_requests) } on_lane |lc| {
        lc.look(|cx| testall(cx, count, array_of_requests, flag, array_of_statuses))
    } |st| {
        let rt = st.runtime()?;
        if on_several_lanes(rt, count, array_of_requests) {
            return mixed(rt, count, array_of_requests, Mixed::TestAll(flag, array_of_statuses));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, count, array_of_requests));
        testall(cx, count, array_of_requests, flag, array_of_statuses)
    }
}

/// `MPI_Testall` on one lane's context.
#[inline(always)]
fn testall(
    cx: &mut Cx<'_>,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    flag: *mut c_int,
    array_of_statuses: *mut MPI_Status,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    let flag = Out::new(flag, "flag")?;
    let statuses = Statuses::new(array_of_statuses, n)?;
    check_all(cx, &requests)?;
    cx.engine.poke()?;
    if (0..n).any(|i| running(cx.engine, requests.get(i))) {
        flag.set(0);
        return Ok(());
    }
    let mut failures = Failures::default();
    for i in 0..n {
        retire_into(cx, &requests, i, &statuses, i, &mut failures);
    }
    flag.set(1);
    failures.result()
}

mpi_fn! {
    /// `MPI_Waitany`: waits for one of the requests and completes it (`*indx`; `MPI_UNDEFINED`
    /// if none is active).
    fn MPI_Waitany / PMPI_Waitany(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        indx: *mut c_int,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, count, array_of_requests) } on_lane |lc| {
        when_over(lc, array_of_requests, count, false, |cx| waitany(cx, count, array_of_requests, indx, status))
    } waits |call| {
        wait_outside(call, |rt| handles_over(rt, array_of_requests, count, false))?;
        let rt = call.state().runtime()?;
        if on_several_lanes(rt, count, array_of_requests) {
            return mixed(rt, count, array_of_requests, Mixed::Any(indx, status));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, count, array_of_requests));
        waitany(cx, count, array_of_requests, indx, status)
    }
}

/// `MPI_Waitany` on one lane's context (which finds what it waits for over at once when a
/// wait outside the lock came first).
#[inline(always)]
fn waitany(
    cx: &mut Cx<'_>,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    indx: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    let indx = Out::new(indx, "indx")?;
    let status = StatusOut::new(status)?;
    check_all(cx, &requests)?;
    let lane = cx.lane;
    let found = cx.engine.block_on(|e| {
        let mut any_active = false;
        for i in 0..n {
            let Some(id) = resolve_in(e, lane, requests.get(i)) else {
                continue;
            };
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
            let f = retire(cx, &mut h, id)?;
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

mpi_fn! {
    /// `MPI_Testany`: completes one complete request if there is one.
    fn MPI_Testany / PMPI_Testany(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        indx: *mut c_int,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, count, array_of_requests) } on_lane |lc| {
        lc.look(|cx| testany(cx, count, array_of_requests, indx, flag, status))
    } |st| {
        let rt = st.runtime()?;
        if on_several_lanes(rt, count, array_of_requests) {
            return mixed(rt, count, array_of_requests, Mixed::TestAny(indx, flag, status));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, count, array_of_requests));
        testany(cx, count, array_of_requests, indx, flag, status)
    }
}

/// `MPI_Testany` on one lane's context.
#[inline(always)]
fn testany(
    cx: &mut Cx<'_>,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    indx: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    let indx = Out::new(indx, "indx")?;
    let flag = Out::new(flag, "flag")?;
    let status = StatusOut::new(status)?;
    check_all(cx, &requests)?;
    cx.engine.poke()?;
    match any_over(cx, &requests) {
        Ok(i) => {
            let mut h = requests.get(i);
            let f = retire(
                cx,
                &mut h,
                id_at(cx, &requests, i).expect("an active request"),
            )?;
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

mpi_fn! {
    /// `MPI_Waitsome`: waits until at least one request completes, and completes all that have.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        array_of_requests: *mut MPI_Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, incount, array_of_requests) } on_lane |lc| {
        when_over(lc, array_of_requests, incount, false, |cx| {
            some(cx, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true)
        })
    } waits |call| {
        wait_outside(call, |rt| handles_over(rt, array_of_requests, incount, false))?;
        let rt = call.state().runtime()?;
        if on_several_lanes(rt, incount, array_of_requests) {
            return mixed(rt, incount, array_of_requests, Mixed::Some(outcount, array_of_indices, array_of_statuses, true));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, incount, array_of_requests));
        some(cx, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, true)
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
    ) lanes |rt| { crate::p2p::api::requests_lane(rt, incount, array_of_requests) } on_lane |lc| {
        lc.look(|cx| some(cx, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false))
    } |st| {
        let rt = st.runtime()?;
        if on_several_lanes(rt, incount, array_of_requests) {
            return mixed(rt, incount, array_of_requests, Mixed::Some(outcount, array_of_indices, array_of_statuses, false));
        }
        let cx = &mut rt.p2p_lane(lane_of_all(rt, incount, array_of_requests));
        some(cx, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false)
    }
}

mpi_fn! {
    /// `MPI_Request_free`: lets a request complete by itself; the handle becomes
    /// `MPI_REQUEST_NULL`. What the request holds (a staging buffer) is released when its
    /// operation ends.
    fn MPI_Request_free / PMPI_Request_free(request: *mut MPI_Request) lanes |rt| {
        crate::p2p::api::request_lane(rt, request)
    } on_lane |lc| {
        lc.look(|cx| request_free(cx, request))
    } |st| {
        let rt = st.runtime()?;
        let h = Out::new(request, "request")?.get();
        request_free(&mut rt.p2p_for_request(h), request)
    }
}

/// `MPI_Request_free` on the context of the request's lane. Only lane 0 holds requests
/// whose freeing runs the program's code (generalized requests), so the lane path never
/// runs it.
fn request_free(cx: &mut Cx<'_>, request: *mut MPI_Request) -> MpiResult<()> {
    let handle = Out::new(request, "request")?;
    let Some(id) = resolve(cx, handle.get())? else {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is MPI_REQUEST_NULL; there is nothing to free",
        ));
    };
    let comm = request::comm_of(cx.engine, id);
    if is_collective(cx, id) && !cx.engine.p2p_ref().is_complete(id) {
        return Err(collective_request("free").on(comm));
    }
    if grequest::is_grequest(cx.engine, id) {
        // Its free_fn may run now (the program's code, which may call MPI).
        handle.set(MPI_REQUEST_NULL);
        return grequest::free(cx.engine, id).map_err(|e| e.on(comm));
    }
    cx.engine
        .p2p()
        .request_free(id)
        .map_err(|e| MpiError::from(e).on(comm))?;
    handle.set(MPI_REQUEST_NULL);
    Ok(())
}

mpi_fn! {
    /// `MPI_Request_get_status`: whether a request is complete, and its status, without
    /// freeing it (the `MPI_Wait`/`MPI_Test` that will still gets the same status).
    fn MPI_Request_get_status / PMPI_Request_get_status(
        request: MPI_Request,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) lanes |rt| { Some(rt.lane_of_request(request)) } on_lane |lc| {
        lc.look(|cx| get_status(cx, request, flag, status))
    } |st| {
        get_status(&mut st.runtime()?.p2p_for_request(request), request, flag, status)
    }
}

/// `MPI_Request_get_status` on the context of the request's lane (a generalized request's
/// query_fn, the program's code, runs only on lane 0, which holds them).
fn get_status(
    cx: &mut Cx<'_>,
    request: MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let flag = Out::new(flag, "flag")?;
    let status = StatusOut::new(status)?;
    let Some(id) = resolve(cx, request)? else {
        flag.set(1);
        status.set(&Completion::EMPTY);
        return Ok(());
    };
    let comm = request::comm_of(cx.engine, id);
    if cx.engine.p2p_ref().standing(id) == Some(Standing::Pending) {
        cx.engine.poke().map_err(|e| MpiError::from(e).on(comm))?;
    }
    let c = match cx.engine.p2p_ref().standing(id) {
        Some(Standing::Pending) => {
            flag.set(0);
            return Ok(());
        }
        Some(Standing::Complete) if grequest::is_grequest(cx.engine, id) => {
            // What the program's query_fn says (it may call MPI).
            grequest::peek(cx.engine, id)
                .expect("a generalized request")
                .map_err(|e| e.on(comm))?
        }
        Some(Standing::Complete) => {
            let s = cx
                .engine
                .p2p_ref()
                .peek_status(id)
                .expect("a complete request has a status");
            Completion::from_engine(&s, cx.comms.get(comm))
        }
        _ => Completion::EMPTY,
    };
    flag.set(1);
    status.set(&c);
    Ok(())
}

mpi_fn! {
    /// `MPI_Cancel`: asks for a pending operation to be cancelled. The request must still be
    /// completed; `MPI_Test_cancelled` on its status says whether the cancel succeeded.
    fn MPI_Cancel / PMPI_Cancel(request: *mut MPI_Request) lanes |rt| {
        crate::p2p::api::request_lane(rt, request)
    } on_lane |lc| {
        lc.look(|cx| cancel(cx, request))
    } |st| {
        let rt = st.runtime()?;
        let h = Out::new(request, "request")?.get();
        cancel(&mut rt.p2p_for_request(h), request)
    }
}

/// `MPI_Cancel` on the context of the request's lane (a generalized request's cancel_fn,
/// the program's code, runs only on lane 0, which holds them).
fn cancel(cx: &mut Cx<'_>, request: *mut MPI_Request) -> MpiResult<()> {
    let h = Out::new(request, "request")?.get();
    let Some(id) = resolve(cx, h)? else {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is MPI_REQUEST_NULL; there is nothing to cancel",
        ));
    };
    let comm = request::comm_of(cx.engine, id);
    if refuses_cancel(cx, id) {
        return Err(collective_request("cancel").on(comm));
    }
    if grequest::is_grequest(cx.engine, id) {
        // The program's cancel_fn (it may call MPI_Grequest_complete).
        return grequest::cancel(cx.engine, id).map_err(|e| e.on(comm));
    }
    cx.engine
        .p2p()
        .cancel(id)
        .map_err(|e| MpiError::from(e).on(comm))
}

/// `MPI_Test` on the context of the request's lane.
fn test(
    cx: &mut Cx<'_>,
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let handle = Out::new(request, "request")?;
    let flag = Out::new(flag, "flag")?;
    let status = StatusOut::new(status)?;
    let mut h = handle.get();
    let polled = poll(cx, &mut h, How::Test);
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

/// What a multiple-completion call over requests of several lanes is, with its outputs.
enum Mixed {
    /// `MPI_Waitall`: the statuses.
    All(*mut MPI_Status),
    /// `MPI_Testall`: the flag, the statuses.
    TestAll(*mut c_int, *mut MPI_Status),
    /// `MPI_Waitany`: the index, the status.
    Any(*mut c_int, *mut MPI_Status),
    /// `MPI_Testany`: the index, the flag, the status.
    TestAny(*mut c_int, *mut c_int, *mut MPI_Status),
    /// `MPI_Waitsome` (`true`) and `MPI_Testsome`: the count, the indices, the statuses.
    Some(*mut c_int, *mut c_int, *mut MPI_Status, bool),
}

/// A multiple-completion call over requests of several lanes (the exclusive path): each
/// request is reached on its own lane, and every lane is turned (until what the call waits
/// for is over, when it waits: under `MPI_THREAD_MULTIPLE` a wait that lets the lock go has
/// waited already, and finds it over at once).
#[cold]
#[inline(never)]
fn mixed(
    rt: &mut Runtime,
    count: c_int,
    array_of_requests: *mut MPI_Request,
    how: Mixed,
) -> MpiResult<()> {
    let n = count_arg(count)?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    for i in 0..n {
        let h = requests.get(i);
        resolve(&rt.p2p_for_request(h), h).map_err(|e| MpiError {
            detail: format!("array_of_requests[{i}]: {}", e.detail),
            ..e
        })?;
    }
    let (wait, all) = match how {
        Mixed::All(_) => (true, true),
        Mixed::TestAll(..) => (false, true),
        Mixed::Any(..) => (true, false),
        Mixed::TestAny(..) => (false, false),
        Mixed::Some(.., wait) => (wait, false),
    };
    let mut backoff = nic_model::wait::Backoff::new();
    loop {
        rt.engine.poke()?;
        rt.turn_other_lanes()?;
        if !wait || handles_over(rt, array_of_requests, count, all) {
            break;
        }
        backoff.snooze();
    }
    let standing = |rt: &mut Runtime, i: usize| {
        let h = requests.get(i);
        standing_of(&rt.p2p_for_request(h), h)
            .ok()
            .flatten()
            .flatten()
    };
    let mut failures = Failures::default();
    match how {
        Mixed::All(statuses) | Mixed::TestAll(_, statuses) => {
            let statuses = Statuses::new(statuses, n)?;
            if let Mixed::TestAll(flag, _) = how {
                let flag = Out::new(flag, "flag")?;
                let pending = (0..n).any(|i| standing(rt, i) == Some(Standing::Pending));
                flag.set(!pending as c_int);
                if pending {
                    return Ok(());
                }
            }
            for i in 0..n {
                let cx = &mut rt.p2p_for_request(requests.get(i));
                retire_into(cx, &requests, i, &statuses, i, &mut failures);
            }
            failures.result()
        }
        Mixed::Any(indx, status) | Mixed::TestAny(indx, _, status) => {
            let indx = Out::new(indx, "indx")?;
            let status = StatusOut::new(status)?;
            let flag = match how {
                Mixed::TestAny(_, flag, _) => Some(Out::new(flag, "flag")?),
                _ => None,
            };
            let mut any_active = false;
            for i in 0..n {
                match standing(rt, i) {
                    Some(Standing::Complete) => {
                        let mut h = requests.get(i);
                        let cx = &mut rt.p2p_for_request(h);
                        let id = resolve(cx, h)?.expect("a complete request");
                        let f = retire(cx, &mut h, id)?;
                        requests.set(i, h);
                        indx.set(i as c_int);
                        if let Some(flag) = &flag {
                            flag.set(1);
                        }
                        status.set(&f.c);
                        return f.check();
                    }
                    Some(Standing::Pending) => any_active = true,
                    _ => {}
                }
            }
            indx.set(MPI_UNDEFINED);
            if let Some(flag) = &flag {
                flag.set(!any_active as c_int);
            }
            if !any_active {
                status.set(&Completion::EMPTY);
            }
            Ok(())
        }
        Mixed::Some(outcount, indices, statuses, _) => {
            let outcount = Out::new(outcount, "outcount")?;
            let indices = Array::new(indices, n, "array_of_indices")?;
            let statuses = Statuses::new(statuses, n)?;
            let (done, any_active) = sweep(n, |i, slot| {
                match standing(rt, i)? {
                    Standing::Complete => {}
                    Standing::Pending => return Some(false),
                    _ => return None,
                }
                let cx = &mut rt.p2p_for_request(requests.get(i));
                retire_into(cx, &requests, i, &statuses, slot, &mut failures);
                indices.set(slot, i as c_int);
                Some(true)
            });
            outcount.set(if any_active {
                done as c_int
            } else {
                MPI_UNDEFINED
            });
            failures.result()
        }
    }
}
