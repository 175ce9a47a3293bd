//! The C entry points of blocking point-to-point: `MPI_Send`, `MPI_Ssend`, `MPI_Bsend`,
//! `MPI_Rsend`, `MPI_Recv`, `MPI_Sendrecv`, `MPI_Sendrecv_replace`, `MPI_Probe`, `MPI_Iprobe`.
//!
//! Under `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go,
//! [`crate::runtime::thread`]) a blocking call that may wait is its nonblocking twin's start
//! and a wait for the request, as `MPI_Isend` + `MPI_Wait` would be; `MPI_Probe` looks as
//! `MPI_Iprobe` does until it finds. Otherwise each runs its fast path, as before.

use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{self, ProbeOp, SendKind, SendOp};
use crate::p2p::blocking::{recv, send, sendrecv};
use crate::p2p::nonblocking::{isendrecv, record, start_recv, start_send};
use crate::p2p::status::{Completion, StatusOut};
use crate::p2p::Cx;
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::LaneCall;
use std::ffi::{c_int, c_void};

/// Generates the four blocking send functions, which differ only in their mode.
macro_rules! blocking_send {
    ($(#[$doc:meta])* $mpi:ident / $pmpi:ident, $mpi_c:ident / $pmpi_c:ident, $kind:expr) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi, large $mpi_c / $pmpi_c
            where [Count = c_int | MPI_Count] (
                buf: *const c_void,
                count: Count,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
            ) lanes |rt| {
                // A buffered send uses the attached buffer: the exclusive path's.
                if $kind == SendKind::Buffered { None } else { crate::p2p::api::comm_lane(rt, comm, tag) }
            } on_lane |lc| {
                lc.run_request(|cx| {
                    let op = args::send_op(cx, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                    let id = start_send(cx, &op, $kind)?;
                    Ok(record(cx, id))
                })?
                .check()
            } waits |call| {
                let releases = call.releases();
                let rt = call.state().runtime()?;
                if $kind == SendKind::Buffered {
                    rt.reclaim_bsend_on_lanes()?;
                }
                let op = args::send_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                let cx = &mut rt.p2p_on(op.ctx, op.tag);
                // A buffered send waits only for room in the buffer (holding the lock).
                if !releases || $kind == SendKind::Buffered {
                    return send(cx, &op, $kind);
                }
                let id = start_send(cx, &op, $kind)?;
                let request = record(cx, id);
                call.wait_request(request)?.check()
            }
        }
    };
}

blocking_send! {
    /// `MPI_Send`: standard-mode blocking send.
    MPI_Send / PMPI_Send, MPI_Send_c / PMPI_Send_c, SendKind::Standard
}

blocking_send! {
    /// `MPI_Ssend`: synchronous send; returns once the receiver has matched the message.
    MPI_Ssend / PMPI_Ssend, MPI_Ssend_c / PMPI_Ssend_c, SendKind::Synchronous
}

blocking_send! {
    /// `MPI_Bsend`: buffered send; copies into the attached buffer and returns.
    MPI_Bsend / PMPI_Bsend, MPI_Bsend_c / PMPI_Bsend_c, SendKind::Buffered
}

blocking_send! {
    /// `MPI_Rsend`: ready send; the matching receive must be posted already.
    MPI_Rsend / PMPI_Rsend, MPI_Rsend_c / PMPI_Rsend_c, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Recv`: blocking receive.
    fn MPI_Recv / PMPI_Recv, large MPI_Recv_c / PMPI_Recv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        with_status(lc, |cx| {
            let op = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
            let out = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
            let id = start_recv(cx, &op)?;
            Ok((out, record(cx, id)))
        })
    } waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let op = args::recv_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
        let cx = &mut rt.p2p_on(op.ctx, op.tag);
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        if releases {
            let id = start_recv(cx, &op)?;
            let request = record(cx, id);
            let f = call.wait_request(request)?;
            status.set(&f.c);
            return f.check();
        }
        let c = recv(cx, &op)?;
        status.set(&c);
        c.check().map_err(|e| e.on(op.comm))
    }
}

mpi_fn! {
    /// `MPI_Sendrecv`: a send and a receive that cannot deadlock each other.
    fn MPI_Sendrecv / PMPI_Sendrecv, large MPI_Sendrecv_c / PMPI_Sendrecv_c
    where [Count = c_int | MPI_Count] (
        sendbuf: *const c_void,
        sendcount: Count,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: Count,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::sendrecv_lane(rt, comm, sendtag, recvtag) } on_lane |lc| {
        with_status(lc, |cx| {
            let s = args::send_op(cx, sendbuf, MPI_Count::from(sendcount), sendtype, dest, sendtag, comm)?;
            let r = args::recv_op(cx, recvbuf, MPI_Count::from(recvcount), recvtype, source, recvtag, comm)?;
            let out = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
            let id = isendrecv(cx, &s, &r, false)?;
            Ok((out, record(cx, id)))
        })
    } waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let s = args::send_op_in(&rt.comms, &rt.types, sendbuf, MPI_Count::from(sendcount), sendtype, dest, sendtag, comm)?;
        let apart = rt.lane_of(s.ctx, sendtag) != rt.lane_of(s.ctx, recvtag);
        let cx = &mut rt.p2p_on(s.ctx, s.tag);
        let r = args::recv_op(cx, recvbuf, MPI_Count::from(recvcount), recvtype, source, recvtag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
        if apart {
            let f = crate::p2p::api::tag_lanes::sendrecv_apart(call, &s, &r)?;
            status.set(&f.c);
            return f.check();
        }
        if releases {
            let id = isendrecv(cx, &s, &r, false)?;
            let request = record(cx, id);
            let f = call.wait_request(request)?;
            status.set(&f.c);
            return f.check();
        }
        let c = sendrecv(cx, &s, &r)?;
        status.set(&c);
        c.check().map_err(|e| e.on(r.comm))
    }
}

mpi_fn! {
    /// `MPI_Sendrecv_replace`: sends the buffer's contents and receives into the same buffer
    /// (the outgoing data is copied first).
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace, large MPI_Sendrecv_replace_c / PMPI_Sendrecv_replace_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::sendrecv_lane(rt, comm, sendtag, recvtag) } on_lane |lc| {
        with_status(lc, |cx| {
            let s = args::send_op(cx, buf.cast_const(), MPI_Count::from(count), datatype, dest, sendtag, comm)?;
            let r = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, recvtag, comm)?;
            let out = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
            // MPI_Isendrecv_replace's request: it sends from a copy it keeps.
            let id = isendrecv(cx, &s, &r, true)?;
            Ok((out, record(cx, id)))
        })
    } waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let s = args::send_op_in(&rt.comms, &rt.types, buf.cast_const(), MPI_Count::from(count), datatype, dest, sendtag, comm)?;
        let apart = rt.lane_of(s.ctx, sendtag) != rt.lane_of(s.ctx, recvtag);
        let cx = &mut rt.p2p_on(s.ctx, s.tag);
        let r = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, recvtag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
        if releases && !apart {
            // MPI_Isendrecv_replace's request: it sends from a copy it keeps.
            let id = isendrecv(cx, &s, &r, true)?;
            let request = record(cx, id);
            let f = call.wait_request(request)?;
            status.set(&f.c);
            return f.check();
        }
        let outgoing = s.outgoing()?;
        // The data must be copied out before the buffer receives (a packed copy is one).
        let outgoing = if outgoing.is_owned() { outgoing } else { crate::p2p::args::Outgoing::owned(outgoing.bytes().to_vec()) };
        let s = SendOp { buf: outgoing.ptr(), bytes: outgoing.len(), scattered: None, ..s };
        if apart {
            let f = crate::p2p::api::tag_lanes::sendrecv_apart(call, &s, &r)?;
            drop(outgoing);
            status.set(&f.c);
            return f.check();
        }
        let c = sendrecv(cx, &s, &r)?;
        drop(outgoing);
        status.set(&c);
        c.check().map_err(|e| e.on(r.comm))
    }
}

/// A blocking call on the lane path as its nonblocking twin and a wait: `start` checks the
/// arguments (the status pointer too) and starts the request; the status is written once it
/// is over.
fn with_status(
    lc: &mut LaneCall,
    start: impl FnOnce(&mut Cx<'_>) -> MpiResult<(StatusOut, MPI_Request)>,
) -> MpiResult<()> {
    let mut out = None;
    let f = lc.run_request(|cx| {
        let (o, request) = start(cx)?;
        out = Some(o);
        Ok(request)
    })?;
    if let Some(out) = out {
        out.set(&f.c);
    }
    f.check()
}

/// The status a probe reports: what the matching message holds.
fn probe_completion(cx: &Cx<'_>, op: &ProbeOp, s: &mpich_channel::Status) -> Completion {
    Completion::from_engine(s, cx.comms.get(op.comm))
}

/// One look of a probe (an `MPI_Iprobe` from `src`, which turns the engine once).
fn look_for(cx: &mut Cx<'_>, op: &ProbeOp, src: c_int) -> MpiResult<Option<Completion>> {
    let found = cx
        .engine
        .iprobe(src, op.tag, op.ctx)
        .map_err(|e| MpiError::from(e).on(op.comm))?;
    Ok(found.map(|s| probe_completion(cx, op, &s)))
}

mpi_fn! {
    /// `MPI_Probe`: waits for a matching message and describes it without receiving it.
    fn MPI_Probe / PMPI_Probe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        let (op, out) = lc.look(|cx| {
            let op = args::probe_op(cx.comms, source, tag, comm)?;
            let out = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
            Ok((op, out))
        })?;
        let c = match op.source {
            None => Completion::PROC_NULL,
            Some(src) => lc.wait_until(|cx| look_for(cx, &op, src))?,
        };
        out.set(&c);
        Ok(())
    } waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let cx = &mut rt.p2p_on(op.ctx, op.tag);
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let c = match op.source {
            None => Completion::PROC_NULL,
            Some(src) if releases => call.wait_until(|st| {
                look_for(&mut st.runtime()?.p2p_on(op.ctx, op.tag), &op, src)
            })?,
            Some(src) => {
                let s = cx.engine.probe(src, op.tag, op.ctx).map_err(|e| MpiError::from(e).on(op.comm))?;
                probe_completion(cx, &op, &s)
            }
        };
        status.set(&c);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Iprobe`: whether a matching message has arrived, and if so what it holds.
    fn MPI_Iprobe / PMPI_Iprobe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        flag: *mut c_int,
        status: *mut MPI_Status,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        lc.look(|cx| iprobe(cx, source, tag, comm, flag, status))
    } |st| {
        let rt = st.runtime()?;
        let ctx = rt.comms.lookup(comm).map_or(0, |(_, c)| c.ctx);
        iprobe(&mut rt.p2p_on(ctx, tag), source, tag, comm, flag, status)
    }
}

/// `MPI_Iprobe` on the point-to-point context of `comm`'s lane.
fn iprobe(
    cx: &mut Cx<'_>,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let op = args::probe_op(cx.comms, source, tag, comm)?;
    let flag = Out::new(flag, "flag").map_err(|e| e.on(op.comm))?;
    let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
    let found = match op.source {
        None => Some(Completion::PROC_NULL),
        Some(src) => look_for(cx, &op, src)?,
    };
    flag.set(found.is_some() as c_int);
    if let Some(c) = found {
        status.set(&c);
    }
    Ok(())
}
