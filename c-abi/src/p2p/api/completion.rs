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
    resolve, resolve_in, retire, retire_into, running, some, Failures, How,
};
use crate::p2p::grequest;
use crate::p2p::request;
use crate::p2p::status::{Completion, StatusOut, Statuses};
use crate::p2p::Cx;
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::Calling;
use mpich_channel::Standing;
use std::ffi::c_int;

/// Under `MPI_THREAD_MULTIPLE`: waits, letting the lock go between looks (each turns the
/// engine once when `over` is false), until `over` is true. Nothing when the call's waits
/// keep the lock (its body then waits in the engine's loop).
fn wait_outside(call: &mut Calling, mut over: impl FnMut(&mut Cx<'_>) -> bool) -> MpiResult<()> {
    if !call.releases() {
        return Ok(());
    }
    call.wait_until(|st| {
        let cx = &mut st.runtime()?.p2p();
        if over(cx) {
            return Ok(Some(()));
        }
        cx.engine.poke()?;
        Ok(over(cx).then_some(()))
    })
}

/// Whether a waiting call on `n` handles at `requests` can run its body without waiting:
/// every handle is over (`all`), or one is complete or none is active (not `all`), or an
/// argument is wrong (the body reports it).
fn handles_over(cx: &Cx<'_>, requests: *mut MPI_Request, n: c_int, all: bool) -> bool {
    let Ok(n) = usize::try_from(n) else {
        return true;
    };
    let Ok(requests) = Array::new(requests, n, "array_of_requests") else {
        return true;
    };
    let mut any_active = false;
    for i in 0..n {
        let id = match resolve(cx, requests.get(i)) {
            Err(_) => return true,
            Ok(None) => continue,
            Ok(Some(id)) => id,
        };
        match cx.engine.p2p_ref().standing(id) {
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
    fn MPI_Wait / PMPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) waits |call| {
        wait_outside(call, |cx| handles_over(cx, request, 1, true))?;
        let cx = &mut call.state().runtime()?.p2p();
        let handle = Out::new(request, "request")?;
        let status = StatusOut::new(status)?;
        let mut h = handle.get();
        let polled = poll(cx, &mut h, How::Block);
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
        let cx = &mut st.runtime()?.p2p();
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
}

mpi_fn! {
    /// `MPI_Waitall`: waits for every request.
    fn MPI_Waitall / PMPI_Waitall(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        array_of_statuses: *mut MPI_Status,
    ) waits |call| {
        wait_outside(call, |cx| handles_over(cx, array_of_requests, count, true))?;
        let cx = &mut call.state().runtime()?.p2p();
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
        let cx = &mut st.runtime()?.p2p();
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
}

mpi_fn! {
    /// `MPI_Waitany`: waits for one of the requests and completes it (`*indx`; `MPI_UNDEFINED`
    /// if none is active).
    fn MPI_Waitany / PMPI_Waitany(
        count: c_int,
        array_of_requests: *mut MPI_Request,
        indx: *mut c_int,
        status: *mut MPI_Status,
    ) waits |call| {
        wait_outside(call, |cx| handles_over(cx, array_of_requests, count, false))?;
        let cx = &mut call.state().runtime()?.p2p();
        let n = count_arg(count)?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        let indx = Out::new(indx, "indx")?;
        let status = StatusOut::new(status)?;
        check_all(cx, &requests)?;
        let found = cx.engine.block_on(|e| {
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
        let cx = &mut st.runtime()?.p2p();
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
                let f = retire(cx, &mut h, id_at(cx, &requests, i).expect("an active request"))?;
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

mpi_fn! {
    /// `MPI_Waitsome`: waits until at least one request completes, and completes all that have.
    fn MPI_Waitsome / PMPI_Waitsome(
        incount: c_int,
        array_of_requests: *mut MPI_Request,
        outcount: *mut c_int,
        array_of_indices: *mut c_int,
        array_of_statuses: *mut MPI_Status,
    ) waits |call| {
        wait_outside(call, |cx| handles_over(cx, array_of_requests, incount, false))?;
        let cx = &mut call.state().runtime()?.p2p();
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
    ) |st| {
        let cx = &mut st.runtime()?.p2p();
        some(cx, incount, array_of_requests, outcount, array_of_indices, array_of_statuses, false)
    }
}

mpi_fn! {
    /// `MPI_Request_free`: lets a request complete by itself; the handle becomes
    /// `MPI_REQUEST_NULL`. What the request holds (a staging buffer) is released when its
    /// operation ends.
    fn MPI_Request_free / PMPI_Request_free(request: *mut MPI_Request) |st| {
        let cx = &mut st.runtime()?.p2p();
        let handle = Out::new(request, "request")?;
        let Some(id) = resolve(cx, handle.get())? else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to free"));
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
        cx.engine.p2p().request_free(id).map_err(|e| MpiError::from(e).on(comm))?;
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
        let cx = &mut st.runtime()?.p2p();
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
                grequest::peek(cx.engine, id).expect("a generalized request").map_err(|e| e.on(comm))?
            }
            Some(Standing::Complete) => {
                let s = cx.engine.p2p_ref().peek_status(id).expect("a complete request has a status");
                Completion::from_engine(&s, cx.comms.get(comm))
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
        let cx = &mut st.runtime()?.p2p();
        let h = Out::new(request, "request")?.get();
        let Some(id) = resolve(cx, h)? else {
            return Err(MpiError::new(MPI_ERR_REQUEST, "the request is MPI_REQUEST_NULL; there is nothing to cancel"));
        };
        let comm = request::comm_of(cx.engine, id);
        if refuses_cancel(cx, id) {
            return Err(collective_request("cancel").on(comm));
        }
        if grequest::is_grequest(cx.engine, id) {
            // The program's cancel_fn (it may call MPI_Grequest_complete).
            return grequest::cancel(cx.engine, id).map_err(|e| e.on(comm));
        }
        cx.engine.p2p().cancel(id).map_err(|e| MpiError::from(e).on(comm))
    }
}
