//! Blocking point-to-point: `MPI_Send`, `MPI_Ssend`, `MPI_Bsend`, `MPI_Rsend`, `MPI_Recv`,
//! `MPI_Sendrecv`, `MPI_Sendrecv_replace`, `MPI_Probe`, `MPI_Iprobe`.
//!
//! The fast path of `MPI_Send` and `MPI_Recv` is: state check, argument checks (a handful of
//! compares and one table load for the datatype), then straight into the engine with the user's
//! buffer; no allocation, lock or lookup beyond that. Operations with `MPI_PROC_NULL` complete
//! at once: a receive reports source `MPI_PROC_NULL`, tag `MPI_ANY_TAG` and count 0.
//! Scattered data (a non-contiguous derived type) takes a separate, out-of-line path: a send
//! packs it into a temporary buffer, a receive lands in one and is unpacked (see [`args`]).

use crate::abi::*;
use crate::p2p::args::{self, ProbeOp, RecvOp, SendKind, SendOp};
use crate::cptr::{self, Out};
use crate::p2p::status::StatusOut;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use crate::p2p::status::Completion;
use mpich_channel::SendMode;
use std::ffi::{c_int, c_void};

/// Runs a checked send to completion in mode `kind`.
#[inline(always)]
pub(crate) fn send(rt: &mut Runtime, op: &SendOp, kind: SendKind) -> MpiResult<()> {
    let Some(dest) = op.dest else { return Ok(()) };
    if op.scattered.is_some() {
        return send_packed(rt, op, kind, dest);
    }
    send_bytes(rt, op, kind, dest, cptr::send_bytes(op.buf, op.bytes))
}

#[inline(always)]
fn send_bytes(
    rt: &mut Runtime,
    op: &SendOp,
    kind: SendKind,
    dest: usize,
    data: &[u8],
) -> MpiResult<()> {
    let sent = match kind {
        SendKind::Buffered => rt.bsend.send(&mut rt.engine, data, dest, op.tag, op.ctx),
        kind => rt
            .engine
            .send(data, dest, op.tag, op.ctx, kind.engine_mode())
            .map_err(MpiError::from),
    };
    sent.map_err(|e| e.on(op.comm))
}

/// A send of scattered data: packed into a temporary buffer, sent from there.
#[inline(never)]
fn send_packed(rt: &mut Runtime, op: &SendOp, kind: SendKind, dest: usize) -> MpiResult<()> {
    let data = op.outgoing();
    send_bytes(rt, op, kind, dest, data.bytes())
}

/// Runs a checked receive to completion. A truncated message is a completion whose `error`
/// is `MPI_ERR_TRUNCATE`; the caller writes the status, then raises it.
#[inline(always)]
pub(crate) fn recv(rt: &mut Runtime, op: &RecvOp) -> MpiResult<Completion> {
    let Some(source) = op.source else {
        return Ok(Completion::PROC_NULL);
    };
    if op.scattered.is_some() {
        return recv_staged(rt, op, source);
    }
    let buf = cptr::recv_bytes(op.buf, op.cap);
    match rt.engine.recv(buf, source, op.tag, op.ctx) {
        Ok(s) => Ok(Completion::from_engine(&s, rt.comms.get(op.comm))),
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// A receive of scattered data: into a temporary buffer, then unpacked.
#[inline(never)]
fn recv_staged(rt: &mut Runtime, op: &RecvOp, source: c_int) -> MpiResult<Completion> {
    let mut incoming = op.incoming();
    match rt.engine.recv(incoming.bytes(), source, op.tag, op.ctx) {
        Ok(s) => {
            incoming.finish(s.len);
            Ok(Completion::from_engine(&s, rt.comms.get(op.comm)))
        }
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// A send and a receive at once: the send is started, the receive completed, then the send.
fn sendrecv(rt: &mut Runtime, s: &SendOp, r: &RecvOp) -> MpiResult<Completion> {
    let outgoing = s.outgoing();
    let send_req = match s.dest {
        // SAFETY: the send buffer (or its packed copy, which lives to the end of this
        // function; or a dangling non-NULL pointer for 0 bytes) stays valid and unmodified
        // for this whole call, and the request completes before it returns.
        Some(dest) => Some(
            unsafe {
                rt.engine.p2p().isend(
                    outgoing.ptr(),
                    outgoing.len(),
                    dest,
                    s.tag,
                    s.ctx,
                    SendMode::Standard,
                    s.comm as u32,
                )
            }
            .map_err(|e| MpiError::from(e).on(s.comm))?,
        ),
        None => None,
    };
    let received = recv(rt, r);
    if let Some(req) = send_req {
        if received.is_err() {
            // The send buffer must not be read after this call returns: take the send back.
            let _ = rt.engine.p2p().cancel(req);
        }
        let sent = rt.engine.wait(req).map_err(MpiError::from);
        if received.is_ok() {
            sent.map_err(|e| e.on(s.comm))?;
        }
    }
    received
}

/// Generates the four blocking send functions, which differ only in their mode.
macro_rules! blocking_send {
    ($(#[$doc:meta])* $mpi:ident / $pmpi:ident, $kind:expr) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi(
                buf: *const c_void,
                count: c_int,
                datatype: MPI_Datatype,
                dest: c_int,
                tag: c_int,
                comm: MPI_Comm,
            ) |st| {
                let rt = st.runtime()?;
                let op = args::send_op(rt, buf, count, datatype, dest, tag, comm)?;
                send(rt, &op, $kind)
            }
        }
    };
}

blocking_send! {
    /// `MPI_Send`: standard-mode blocking send.
    MPI_Send / PMPI_Send, SendKind::Standard
}
blocking_send! {
    /// `MPI_Ssend`: synchronous send; returns once the receiver has matched the message.
    MPI_Ssend / PMPI_Ssend, SendKind::Synchronous
}
blocking_send! {
    /// `MPI_Bsend`: buffered send; copies into the attached buffer and returns.
    MPI_Bsend / PMPI_Bsend, SendKind::Buffered
}
blocking_send! {
    /// `MPI_Rsend`: ready send; the matching receive must be posted already.
    MPI_Rsend / PMPI_Rsend, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Recv`: blocking receive.
    fn MPI_Recv / PMPI_Recv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let op = args::recv_op(rt, buf, count, datatype, source, tag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let c = recv(rt, &op)?;
        status.set(&c);
        c.check().map_err(|e| e.on(op.comm))
    }
}

mpi_fn! {
    /// `MPI_Sendrecv`: a send and a receive that cannot deadlock each other.
    fn MPI_Sendrecv / PMPI_Sendrecv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: MPI_Datatype,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let s = args::send_op(rt, sendbuf, sendcount, sendtype, dest, sendtag, comm)?;
        let r = args::recv_op(rt, recvbuf, recvcount, recvtype, source, recvtag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
        let c = sendrecv(rt, &s, &r)?;
        status.set(&c);
        c.check().map_err(|e| e.on(r.comm))
    }
}

mpi_fn! {
    /// `MPI_Sendrecv_replace`: sends the buffer's contents and receives into the same buffer
    /// (the outgoing data is copied first).
    fn MPI_Sendrecv_replace / PMPI_Sendrecv_replace(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        dest: c_int,
        sendtag: c_int,
        source: c_int,
        recvtag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let s = args::send_op(rt, buf.cast_const(), count, datatype, dest, sendtag, comm)?;
        let r = args::recv_op(rt, buf, count, datatype, source, recvtag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(r.comm))?;
        let outgoing = s.outgoing();
        // The data must be copied out before the buffer receives (a packed copy is one).
        let outgoing = if outgoing.is_owned() { outgoing } else { crate::p2p::args::Outgoing::owned(outgoing.bytes().to_vec()) };
        let s = SendOp { buf: outgoing.ptr(), bytes: outgoing.len(), scattered: None, ..s };
        let c = sendrecv(rt, &s, &r)?;
        drop(outgoing);
        status.set(&c);
        c.check().map_err(|e| e.on(r.comm))
    }
}

/// The status a probe reports: what the matching message holds.
fn probe_completion(rt: &Runtime, op: &ProbeOp, s: &mpich_channel::Status) -> Completion {
    Completion::from_engine(s, rt.comms.get(op.comm))
}

mpi_fn! {
    /// `MPI_Probe`: waits for a matching message and describes it without receiving it.
    fn MPI_Probe / PMPI_Probe(
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let c = match op.source {
            None => Completion::PROC_NULL,
            Some(src) => {
                let s = rt.engine.probe(src, op.tag, op.ctx).map_err(|e| MpiError::from(e).on(op.comm))?;
                probe_completion(rt, &op, &s)
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
    ) |st| {
        let rt = st.runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let flag = Out::new(flag, "flag").map_err(|e| e.on(op.comm))?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let found = match op.source {
            None => Some(Completion::PROC_NULL),
            Some(src) => rt
                .engine
                .iprobe(src, op.tag, op.ctx)
                .map_err(|e| MpiError::from(e).on(op.comm))?
                .map(|s| probe_completion(rt, &op, &s)),
        };
        flag.set(found.is_some() as c_int);
        if let Some(c) = found {
            status.set(&c);
        }
        Ok(())
    }
}
