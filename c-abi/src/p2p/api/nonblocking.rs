//! The C entry points of nonblocking and persistent point-to-point: `MPI_Isend`, `MPI_Issend`,
//! `MPI_Ibsend`, `MPI_Irsend`, `MPI_Irecv`, `MPI_Isendrecv(_replace)`, the five `_init` calls,
//! `MPI_Start` and `MPI_Startall`.

use crate::abi::*;
use crate::cptr::{Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{self, RecvOp, SendKind, SendOp};
use crate::p2p::nonblocking::{
    isendrecv, persistent, record, start, start_recv, start_send, startable,
};
use crate::p2p::request::{Persistent, PersistentKind};
use crate::p2p::Cx;
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::LaneProbe;
use std::ffi::{c_int, c_void};

/// Generates the four nonblocking send functions, which differ only in their mode.
macro_rules! nonblocking_send {
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
                request: *mut MPI_Request,
            ) lanes |rt| {
                // A buffered send uses the attached buffer: the exclusive path's.
                if $kind == SendKind::Buffered { None } else { crate::p2p::api::comm_lane(rt, comm, tag) }
            } on_lane |lc| {
                lc.look(|cx| {
                    let op = args::send_op(cx, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                    isend(cx, &op, $kind, request)
                })
            } |st| {
                let rt = st.runtime()?;
                if $kind == SendKind::Buffered {
                    rt.reclaim_bsend_on_lanes()?;
                }
                let op = args::send_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                isend(&mut rt.p2p_on(op.ctx, op.tag), &op, $kind, request)
            }
        }
    };
}

nonblocking_send! {
    /// `MPI_Isend`: starts a standard-mode send.
    MPI_Isend / PMPI_Isend, MPI_Isend_c / PMPI_Isend_c, SendKind::Standard
}

nonblocking_send! {
    /// `MPI_Issend`: starts a synchronous send (complete once the receiver matched it).
    MPI_Issend / PMPI_Issend, MPI_Issend_c / PMPI_Issend_c, SendKind::Synchronous
}

nonblocking_send! {
    /// `MPI_Ibsend`: a buffered send; the request is complete once the data is copied.
    MPI_Ibsend / PMPI_Ibsend, MPI_Ibsend_c / PMPI_Ibsend_c, SendKind::Buffered
}

nonblocking_send! {
    /// `MPI_Irsend`: starts a ready-mode send.
    MPI_Irsend / PMPI_Irsend, MPI_Irsend_c / PMPI_Irsend_c, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Irecv`: posts a receive.
    fn MPI_Irecv / PMPI_Irecv, large MPI_Irecv_c / PMPI_Irecv_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        lc.look(|cx| {
            let op = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
            irecv(cx, &op, request)
        })
    } |st| {
        let rt = st.runtime()?;
        let op = args::recv_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
        irecv(&mut rt.p2p_on(op.ctx, op.tag), &op, request)
    }
}

/// Generates the four persistent send constructors.
macro_rules! send_init {
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
                request: *mut MPI_Request,
            ) lanes |rt| {
                // A buffered send's request is made where its starts run: the exclusive path.
                if $kind == SendKind::Buffered { None } else { crate::p2p::api::comm_lane(rt, comm, tag) }
            } on_lane |lc| {
                lc.look(|cx| {
                    let op = args::send_op(cx, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                    let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
                    out.set(persistent(cx, op.comm, PersistentKind::Send(op, $kind))?);
                    Ok(())
                })
            } |st| {
                let rt = st.runtime()?;
                if $kind == SendKind::Buffered {
                    rt.reclaim_bsend_on_lanes()?;
                }
                let op = args::send_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, dest, tag, comm)?;
                let cx = &mut rt.p2p_on(op.ctx, op.tag);
                let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
                out.set(persistent(cx, op.comm, PersistentKind::Send(op, $kind))?);
                Ok(())
            }
        }
    };
}

send_init! {
    /// `MPI_Send_init`: a persistent standard-mode send, started by `MPI_Start`.
    MPI_Send_init / PMPI_Send_init, MPI_Send_init_c / PMPI_Send_init_c, SendKind::Standard
}

send_init! {
    /// `MPI_Ssend_init`: a persistent synchronous send.
    MPI_Ssend_init / PMPI_Ssend_init, MPI_Ssend_init_c / PMPI_Ssend_init_c, SendKind::Synchronous
}

send_init! {
    /// `MPI_Bsend_init`: a persistent buffered send.
    MPI_Bsend_init / PMPI_Bsend_init, MPI_Bsend_init_c / PMPI_Bsend_init_c, SendKind::Buffered
}

send_init! {
    /// `MPI_Rsend_init`: a persistent ready-mode send.
    MPI_Rsend_init / PMPI_Rsend_init, MPI_Rsend_init_c / PMPI_Rsend_init_c, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Recv_init`: a persistent receive, started by `MPI_Start`.
    fn MPI_Recv_init / PMPI_Recv_init, large MPI_Recv_init_c / PMPI_Recv_init_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) lanes |rt| { crate::p2p::api::comm_lane(rt, comm, tag) } on_lane |lc| {
        lc.look(|cx| {
            let op = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
            let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
            out.set(persistent(cx, op.comm, PersistentKind::Recv(op))?);
            Ok(())
        })
    } |st| {
        let rt = st.runtime()?;
        let op = args::recv_op_in(&rt.comms, &rt.types, buf, MPI_Count::from(count), datatype, source, tag, comm)?;
        let cx = &mut rt.p2p_on(op.ctx, op.tag);
        let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
        out.set(persistent(cx, op.comm, PersistentKind::Recv(op))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Start`: starts a persistent request.
    fn MPI_Start / PMPI_Start(request: *mut MPI_Request) lanes |rt| {
        let lane = crate::p2p::api::request_lane(rt, request)?;
        // SAFETY: `request_lane` found the pointer non-NULL (MPI's contract: one handle).
        starts_on_lane(rt, lane, std::slice::from_ref(unsafe { &*request }))
    } on_lane |lc| {
        lc.look(|cx| {
            let handle = Out::new(request, "request")?.get();
            start(cx, handle)
        })
    } |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?.get();
        start(&mut rt.p2p_for_request(handle), handle)
    }
}

mpi_fn! {
    /// `MPI_Startall`: starts `count` persistent requests (all are checked first).
    fn MPI_Startall / PMPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) lanes |rt| {
        let lane = crate::p2p::api::requests_lane(rt, count, array_of_requests)?;
        // SAFETY: `requests_lane` found the pointer non-NULL and `count` positive (MPI's
        // contract: `count` handles).
        let handles = unsafe { std::slice::from_raw_parts(array_of_requests, count as usize) };
        starts_on_lane(rt, lane, handles)
    } on_lane |lc| {
        lc.look(|cx| startall(cx, count, array_of_requests))
    } |st| {
        let rt = st.runtime()?;
        let n = usize::try_from(count)
            .map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("the count is {count}; it must be 0 or more")))?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        for i in 0..requests.len() {
            let h = requests.get(i);
            startable(&mut rt.p2p_for_request(h), h)?;
        }
        for i in 0..requests.len() {
            let h = requests.get(i);
            start(&mut rt.p2p_for_request(h), h)?;
        }
        Ok(())
    }
}

/// The lane on which `MPI_Start`/`MPI_Startall` of `handles` (every one of lane `lane`) run:
/// `lane`, unless one is a persistent buffered send, whose starts use the attached buffer
/// (the exclusive path's: `None`). A look under the lane's lock, before the call's own.
fn starts_on_lane(probe: &mut LaneProbe, lane: usize, handles: &[MPI_Request]) -> Option<usize> {
    if lane == 0 {
        return Some(0);
    }
    let rt = probe.rt()?;
    let mut guard = rt.lanes.lock(lane);
    let engine = guard.engine();
    let buffered = handles.iter().any(|&h| {
        let Ok(id) = crate::p2p::request::lookup_on(engine, lane, h) else {
            return false;
        };
        engine.p2p().attachment(id).is_some_and(|a| {
            a.as_any_mut()
                .downcast_mut::<Persistent>()
                .is_some_and(|p| matches!(p.kind, PersistentKind::Send(_, SendKind::Buffered)))
        })
    });
    (!buffered).then_some(lane)
}

/// `MPI_Startall` over requests of one lane other than 0 (checked first, then started).
fn startall(cx: &mut Cx<'_>, count: c_int, array_of_requests: *mut MPI_Request) -> MpiResult<()> {
    let n = usize::try_from(count).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("the count is {count}; it must be 0 or more"),
        )
    })?;
    let requests = Array::new(array_of_requests, n, "array_of_requests")?;
    for i in 0..requests.len() {
        startable(cx, requests.get(i))?;
    }
    for i in 0..requests.len() {
        start(cx, requests.get(i))?;
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Isendrecv`: a nonblocking `MPI_Sendrecv`; the request completes when both the
    /// send and the receive have, with the receive's status.
    fn MPI_Isendrecv / PMPI_Isendrecv, large MPI_Isendrecv_c / PMPI_Isendrecv_c
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
        request: *mut MPI_Request,
    ) lanes |rt| { crate::p2p::api::sendrecv_lane(rt, comm, sendtag, recvtag) } on_lane |lc| {
        lc.look(|cx| {
            let s = args::send_op(cx, sendbuf, MPI_Count::from(sendcount), sendtype, dest, sendtag, comm)?;
            let r = args::recv_op(cx, recvbuf, MPI_Count::from(recvcount), recvtype, source, recvtag, comm)?;
            let out = Out::new(request, "request").map_err(|e| e.on(r.comm))?;
            let id = isendrecv(cx, &s, &r, false)?;
            out.set(record(cx, id));
            Ok(())
        })
    } |st| {
        let rt = st.runtime()?;
        let s = args::send_op_in(&rt.comms, &rt.types, sendbuf, MPI_Count::from(sendcount), sendtype, dest, sendtag, comm)?;
        let apart = rt.lane_of(s.ctx, sendtag) != rt.lane_of(s.ctx, recvtag);
        let cx = &mut rt.p2p_on(s.ctx, s.tag);
        let r = args::recv_op(cx, recvbuf, MPI_Count::from(recvcount), recvtype, source, recvtag, comm)?;
        if apart {
            return Err(crate::p2p::api::tag_lanes::isendrecv_apart(sendtag, recvtag).on(r.comm));
        }
        let out = Out::new(request, "request").map_err(|e| e.on(r.comm))?;
        let id = isendrecv(cx, &s, &r, false)?;
        out.set(record(cx, id));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Isendrecv_replace`: a nonblocking `MPI_Sendrecv_replace` (the outgoing data is
    /// copied at the call; the buffer receives).
    fn MPI_Isendrecv_replace / PMPI_Isendrecv_replace, large MPI_Isendrecv_replace_c / PMPI_Isendrecv_replace_c
    where [Count = c_int | MPI_Count] (
        buf: *mut c_void,
        count: Count,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) lanes |rt| { crate::p2p::api::sendrecv_lane(rt, comm, sendtag, recvtag) } on_lane |lc| {
        lc.look(|cx| {
            let s = args::send_op(cx, buf.cast_const(), MPI_Count::from(count), datatype, dest, sendtag, comm)?;
            let r = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, recvtag, comm)?;
            let out = Out::new(request, "request").map_err(|e| e.on(r.comm))?;
            let id = isendrecv(cx, &s, &r, true)?;
            out.set(record(cx, id));
            Ok(())
        })
    } |st| {
        let rt = st.runtime()?;
        let s = args::send_op_in(&rt.comms, &rt.types, buf.cast_const(), MPI_Count::from(count), datatype, dest, sendtag, comm)?;
        let apart = rt.lane_of(s.ctx, sendtag) != rt.lane_of(s.ctx, recvtag);
        let cx = &mut rt.p2p_on(s.ctx, s.tag);
        let r = args::recv_op(cx, buf, MPI_Count::from(count), datatype, source, recvtag, comm)?;
        if apart {
            return Err(crate::p2p::api::tag_lanes::isendrecv_apart(sendtag, recvtag).on(r.comm));
        }
        let out = Out::new(request, "request").map_err(|e| e.on(r.comm))?;
        let id = isendrecv(cx, &s, &r, true)?;
        out.set(record(cx, id));
        Ok(())
    }
}

/// The end of a nonblocking send's start: `MPI_Isend`'s request for checked `op`.
#[inline(always)]
fn isend(cx: &mut Cx<'_>, op: &SendOp, kind: SendKind, request: *mut MPI_Request) -> MpiResult<()> {
    let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
    let id = start_send(cx, op, kind)?;
    out.set(record(cx, id));
    Ok(())
}

/// The end of `MPI_Irecv`: the request of checked `op`.
#[inline(always)]
fn irecv(cx: &mut Cx<'_>, op: &RecvOp, request: *mut MPI_Request) -> MpiResult<()> {
    let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
    let id = start_recv(cx, op)?;
    out.set(record(cx, id));
    Ok(())
}
