//! The C entry points of matched probes: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`,
//! `MPI_Imrecv`.
//!
//! On a communicator of a lane other than 0 (`runtime::lanes`) the probes run on the lane
//! path, and the message handle they return names the lane (`p2p::mprobe`), so that
//! `MPI_Mrecv` and `MPI_Imrecv` of it run there too (`MPI_Imrecv`'s request is made on that
//! lane, where `MPI_Wait` finds it).

use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{self, ProbeOp};
use crate::p2p::mprobe::{deliver, hold, probe_now, take, take_found, Named};
use crate::p2p::status::{Completion, StatusOut};
use crate::p2p::Cx;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

/// The lane of the message `*message` names (of `lanes`), for `MPI_Mrecv`/`MPI_Imrecv` (`None`: the
/// exclusive path, which reports a wrong handle).
fn message_lane(lanes: usize, message: *const MPI_Message) -> Option<usize> {
    // SAFETY: `message` is the program's pointer to one message handle (MPI's contract), or
    // NULL, which `as_ref` turns into `None`.
    let h = unsafe { message.as_ref() }?;
    crate::p2p::mprobe::lane_of(*h).filter(|&k| k < lanes)
}

/// The checked probe of `MPI_Mprobe`/`MPI_Improbe` and its outputs; `None` for a probe of
/// `MPI_PROC_NULL` (whose outputs are written).
fn probe_args(
    cx: &Cx<'_>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult<(ProbeOp, Out<MPI_Message>, StatusOut)> {
    let op = args::probe_op(cx.comms, source, tag, comm)?;
    let message = Out::new(message, "message").map_err(|e| e.on(op.comm))?;
    let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
    Ok((op, message, status))
}

/// One look of a matched probe on `cx`'s lane: the message found is taken in the same look
/// (under the lane's lock), so no other thread's probe or receive can take it first; its
/// handle names the lane.
fn mprobe_now(
    cx: &mut Cx<'_>,
    src: c_int,
    op: &ProbeOp,
) -> MpiResult<Option<(MPI_Message, Completion)>> {
    match probe_now(cx, src, op)? {
        None => Ok(None),
        Some(found) => {
            let taken = take_found(cx, op, &found)?;
            let c = taken.completion;
            Ok(Some((hold(taken, cx.lane)?, c)))
        }
    }
}

mpi_fn! {
    /// `MPI_Mprobe`: waits for a matching message and takes it out of matching; `*message`
    /// names it for `MPI_Mrecv`.
    fn MPI_Mprobe / PMPI_Mprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        let (op, message, status) = lc.look(|cx| probe_args(cx, source, tag, comm, message, status))?;
        let Some(src) = op.source else {
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        let (m, c) = lc.wait_until(|cx| mprobe_now(cx, src, &op))?;
        status.set(&c);
        message.set(m);
        Ok(())
    } waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let ctx = rt.comms.lookup(comm).map_or(0, |(_, c)| c.ctx);
        let cx = &mut rt.p2p_on(ctx, tag);
        let (op, message, status) = probe_args(cx, source, tag, comm, message, status)?;
        let Some(src) = op.source else {
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        if releases {
            // Under MPI_THREAD_MULTIPLE: MPI_Improbe's look until it finds, the lock let go
            // in between.
            let (m, c) = call.wait_until(|st| mprobe_now(&mut st.runtime()?.p2p_on(op.ctx, op.tag), src, &op))?;
            status.set(&c);
            message.set(m);
            return Ok(());
        }
        let found = cx.engine.probe(src, op.tag, op.ctx).map_err(|e| MpiError::from(e).on(op.comm))?;
        let taken = take_found(cx, &op, &found)?;
        status.set(&taken.completion);
        message.set(hold(taken, cx.lane)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Improbe`: like `MPI_Mprobe` if a matching message is there (`*flag` true), else
    /// returns at once with `*flag` false.
    fn MPI_Improbe / PMPI_Improbe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        flag: *mut c_int,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        lc.look(|cx| improbe(cx, source, tag, comm, flag, message, status))
    } |st| {
        let rt = st.runtime()?;
        let ctx = rt.comms.lookup(comm).map_or(0, |(_, c)| c.ctx);
        improbe(&mut rt.p2p_on(ctx, tag), source, tag, comm, flag, message, status)
    }
}

/// `MPI_Improbe` on the context of `comm`'s lane.
fn improbe(
    cx: &mut Cx<'_>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let (op, message, status) = probe_args(cx, source, tag, comm, message, status)?;
    let flag = Out::new(flag, "flag").map_err(|e| e.on(op.comm))?;
    let Some(src) = op.source else {
        flag.set(1);
        message.set(MPI_MESSAGE_NO_PROC);
        status.set(&Completion::PROC_NULL);
        return Ok(());
    };
    match mprobe_now(cx, src, &op)? {
        None => flag.set(0),
        Some((m, c)) => {
            flag.set(1);
            status.set(&c);
            message.set(m);
        }
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Mrecv`: receives the message a matched probe took; `*message` becomes
    /// `MPI_MESSAGE_NULL`.
    fn MPI_Mrecv / PMPI_Mrecv, large MPI_Mrecv_c / PMPI_Mrecv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) lanes |rt| { message_lane(rt.lanes(), message) } on_lane |lc| {
        lc.look(|cx| mrecv(cx, buf, MPI_Count::from(count), datatype, message, status))
    } |st| {
        mrecv(&mut st.runtime()?.p2p(), buf, MPI_Count::from(count), datatype, message, status)
    }
}

/// `MPI_Mrecv` (it needs only the datatypes: the message is here).
fn mrecv(
    cx: &mut Cx<'_>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let handle = Out::new(message, "message")?;
    let status = StatusOut::new(status)?;
    let (comm, c) = match take(handle.get())? {
        Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL),
        Named::Held(m) => {
            let comm = m.comm;
            (
                comm,
                deliver(cx, m, buf, count, datatype).map_err(|e| e.on(comm))?,
            )
        }
    };
    handle.set(MPI_MESSAGE_NULL);
    status.set(&c);
    c.check().map_err(|e| e.on(comm))
}

mpi_fn! {
    /// `MPI_Imrecv`: `MPI_Mrecv` as a request; the data is delivered at once, so the request
    /// is complete already (made on the message's lane).
    fn MPI_Imrecv / PMPI_Imrecv, large MPI_Imrecv_c / PMPI_Imrecv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        request: *mut MPI_Request,
    ) lanes |rt| { message_lane(rt.lanes(), message) } on_lane |lc| {
        lc.look(|cx| imrecv(cx, buf, MPI_Count::from(count), datatype, message, request))
    } |st| {
        let rt = st.runtime()?;
        // The lane the handle names (0 for one that names none: `take` refuses it).
        let lane = message_lane(rt.lanes.count(), message).unwrap_or(0);
        imrecv(&mut rt.p2p_lane(lane), buf, MPI_Count::from(count), datatype, message, request)
    }
}

/// `MPI_Imrecv` on the context of the message's lane.
fn imrecv(
    cx: &mut Cx<'_>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> MpiResult<()> {
    let handle = Out::new(message, "message")?;
    let request = Out::new(request, "request")?;
    let (comm, c, source) = match take(handle.get())? {
        Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL, MPI_PROC_NULL),
        Named::Held(m) => {
            let (comm, source) = (m.comm, m.global_source);
            (
                comm,
                deliver(cx, m, buf, count, datatype).map_err(|e| e.on(comm))?,
                source,
            )
        }
    };
    let status = mpich_channel::Status {
        source,
        tag: c.tag,
        len: c.bytes,
        truncated: c.error == MPI_ERR_TRUNCATE,
        ..Default::default()
    };
    let id = cx
        .engine
        .p2p()
        .completed(status, comm)
        .map_err(|e| MpiError::from(e).on(comm))?;
    handle.set(MPI_MESSAGE_NULL);
    request.set(crate::p2p::nonblocking::record(cx, id));
    Ok(())
}
