//! Blocking point-to-point: `MPI_Send`, `MPI_Ssend`, `MPI_Bsend`, `MPI_Rsend`, `MPI_Recv`,
//! `MPI_Sendrecv`, `MPI_Sendrecv_replace`, `MPI_Probe`, `MPI_Iprobe`.
//!
//! The fast path of `MPI_Send` and `MPI_Recv` is: state check, argument checks (a handful of
//! compares and one table load for the datatype), then straight into the engine with the user's
//! buffer; no allocation, lock or lookup beyond that. Operations with `MPI_PROC_NULL` complete
//! at once: a receive reports source `MPI_PROC_NULL`, tag `MPI_ANY_TAG` and count 0.
//! Scattered data (a non-contiguous derived type) takes a separate, out-of-line path: a send
//! packs it into a temporary buffer, a receive lands in one and is unpacked (see [`args`]).

use crate::cptr::{self};
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{RecvOp, SendKind, SendOp};
use crate::p2p::status::Completion;
use crate::p2p::Cx;
use mpich_channel::SendMode;
use std::ffi::c_int;

/// Runs a checked send to completion in mode `kind`.
#[inline(always)]
pub(crate) fn send(cx: &mut Cx<'_>, op: &SendOp, kind: SendKind) -> MpiResult<()> {
    let Some(dest) = op.dest else { return Ok(()) };
    if op.scattered.is_some() {
        return send_packed(cx, op, kind, dest);
    }
    send_bytes(cx, op, kind, dest, cptr::send_bytes(op.buf, op.bytes))
}

#[inline(always)]
pub(crate) fn send_bytes(
    cx: &mut Cx<'_>,
    op: &SendOp,
    kind: SendKind,
    dest: usize,
    data: &[u8],
) -> MpiResult<()> {
    let sent = match kind {
        SendKind::Buffered => {
            let lane = cx.lane;
            let bsend = cx
                .bsend
                .as_deref_mut()
                .ok_or_else(|| MpiError::internal("a buffered send on the lane path"))?;
            bsend.send(cx.engine, lane, data, dest, op.tag, op.ctx)
        }
        kind => cx
            .engine
            .send(data, dest, op.tag, op.ctx, kind.engine_mode())
            .map_err(MpiError::from),
    };
    sent.map_err(|e| e.on(op.comm))
}

/// A send of scattered data: packed into a temporary buffer, sent from there.
#[inline(never)]
pub(crate) fn send_packed(
    cx: &mut Cx<'_>,
    op: &SendOp,
    kind: SendKind,
    dest: usize,
) -> MpiResult<()> {
    let data = op.outgoing()?;
    send_bytes(cx, op, kind, dest, data.bytes())
}

/// Runs a checked receive to completion. A truncated message is a completion whose `error`
/// is `MPI_ERR_TRUNCATE`; the caller writes the status, then raises it.
#[inline(always)]
pub(crate) fn recv(cx: &mut Cx<'_>, op: &RecvOp) -> MpiResult<Completion> {
    let Some(source) = op.source else {
        return Ok(Completion::PROC_NULL);
    };
    if op.scattered.is_some() {
        return recv_staged(cx, op, source);
    }
    let buf = cptr::recv_bytes(op.buf, op.cap);
    match cx.engine.recv(buf, source, op.tag, op.ctx) {
        Ok(s) => Ok(Completion::from_engine(&s, cx.comms.get(op.comm))),
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// A receive of scattered data: into a temporary buffer, then unpacked.
#[inline(never)]
pub(crate) fn recv_staged(cx: &mut Cx<'_>, op: &RecvOp, source: c_int) -> MpiResult<Completion> {
    let mut incoming = op.incoming()?;
    match cx.engine.recv(incoming.bytes(), source, op.tag, op.ctx) {
        Ok(s) => {
            incoming.finish(s.len);
            Ok(Completion::from_engine(&s, cx.comms.get(op.comm)))
        }
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// A send and a receive at once: the send is started, the receive completed, then the send.
pub(crate) fn sendrecv(cx: &mut Cx<'_>, s: &SendOp, r: &RecvOp) -> MpiResult<Completion> {
    let outgoing = s.outgoing()?;
    let send_req = match s.dest {
        // SAFETY: the send buffer (or its packed copy, which lives to the end of this
        // function; or a dangling non-NULL pointer for 0 bytes) stays valid and unmodified
        // for this whole call, and the request completes before it returns.
        Some(dest) => Some(
            unsafe {
                cx.engine.p2p().isend(
                    outgoing.ptr(),
                    outgoing.len(),
                    dest,
                    s.tag,
                    s.ctx,
                    SendMode::Standard,
                    s.comm,
                )
            }
            .map_err(|e| MpiError::from(e).on(s.comm))?,
        ),
        None => None,
    };
    let received = recv(cx, r);
    if let Some(req) = send_req {
        if received.is_err() {
            // The send buffer must not be read after this call returns: take the send back.
            let _ = cx.engine.p2p().cancel(req);
        }
        let sent = cx.engine.wait(req).map_err(MpiError::from);
        if received.is_ok() {
            sent.map_err(|e| e.on(s.comm))?;
        }
    }
    received
}
