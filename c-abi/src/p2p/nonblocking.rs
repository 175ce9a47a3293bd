//! Nonblocking and persistent point-to-point: `MPI_Isend`, `MPI_Issend`, `MPI_Ibsend`,
//! `MPI_Irsend`, `MPI_Irecv`, `MPI_Isendrecv(_replace)`, the five `_init` calls, `MPI_Start`
//! and `MPI_Startall` (which also start other subsystems' persistent requests:
//! [`crate::p2p::request::Foreign`]).
//!
//! Starting an operation ([`start_send`], [`start_recv`]) makes an engine request: a running
//! send or receive, or, for `MPI_PROC_NULL` and buffered sends, a request born complete. The
//! handle the program gets is that request ([`crate::p2p::request`]). Persistent requests keep
//! their checked arguments as their request's attachment and run them again at each start.
//! Scattered data (a non-contiguous derived type) is packed when a send starts, and a receive
//! of it is posted on a staging buffer; the request owns either until it completes, and a
//! receive's data is unpacked the moment it does. `MPI_Isendrecv` starts a send and a receive
//! and hands the engine one [`Operation`] over both (its request completes when both have,
//! with the receive's status); `MPI_Isendrecv_replace` sends from a copy it keeps until then.

use crate::abi::*;
use crate::cptr::{self};
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{Outgoing, RecvOp, SendKind, SendOp};
use crate::p2p::request::{self, Persistent, PersistentKind, Staging};
use crate::p2p::status::Completion;
use crate::p2p::Cx;
use mpich_channel::{Adi, Operation, ReqId, Status};
use std::ffi::c_int;

/// The engine status of an operation complete at its start: `c` seen from `comm`.
pub(crate) fn born_complete(c: Completion) -> Status {
    Status {
        source: c.source,
        tag: c.tag,
        ..Status::default()
    }
}

/// Starts a checked send in mode `kind`; returns its request.
#[inline(always)]
pub(crate) fn start_send(cx: &mut Cx<'_>, op: &SendOp, kind: SendKind) -> MpiResult<ReqId> {
    let owner = op.comm;
    let Some(dest) = op.dest else {
        return cx
            .engine
            .p2p()
            .completed(born_complete(Completion::PROC_NULL), owner)
            .map_err(|e| MpiError::from(e).on(op.comm));
    };
    if kind == SendKind::Buffered || op.scattered.is_some() {
        return start_send_copied(cx, op, kind, dest);
    }
    // SAFETY: the send buffer (a dangling non-NULL pointer when empty) stays valid and
    // unmodified until the request completes: MPI's rule for nonblocking and persistent sends.
    let started = unsafe {
        cx.engine.p2p().isend(
            cptr::nonnull_or_dangling(op.buf),
            op.bytes,
            dest,
            op.tag,
            op.ctx,
            kind.engine_mode(),
            owner,
        )
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Starts a buffered send, or a send of scattered data from a packed copy.
#[inline(never)]
pub(crate) fn start_send_copied(
    cx: &mut Cx<'_>,
    op: &SendOp,
    kind: SendKind,
    dest: usize,
) -> MpiResult<ReqId> {
    let owner = op.comm;
    let data = op.outgoing()?;
    if kind == SendKind::Buffered {
        let lane = cx.lane;
        let bsend = cx.bsend.as_deref_mut().ok_or_else(no_bsend)?;
        bsend
            .send(cx.engine, lane, data.bytes(), dest, op.tag, op.ctx)
            .map_err(|e| e.on(op.comm))?;
        return cx
            .engine
            .p2p()
            .completed(born_complete(Completion::EMPTY), owner)
            .map_err(|e| MpiError::from(e).on(op.comm));
    }
    let (ptr, len) = (data.ptr(), data.len());
    // SAFETY: the packed copy is owned by the request (its attachment; a Vec's heap buffer
    // does not move with it) and kept until the request is released, after the send.
    let started = unsafe {
        cx.engine.p2p().isend_attached(
            ptr,
            len,
            dest,
            op.tag,
            op.ctx,
            kind.engine_mode(),
            owner,
            Some(Box::new(Staging::Send(data))),
        )
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Posts a checked receive; returns its request.
#[inline(always)]
pub(crate) fn start_recv(cx: &mut Cx<'_>, op: &RecvOp) -> MpiResult<ReqId> {
    let owner = op.comm;
    let Some(source) = op.source else {
        return cx
            .engine
            .p2p()
            .completed(born_complete(Completion::PROC_NULL), owner)
            .map_err(|e| MpiError::from(e).on(op.comm));
    };
    if op.scattered.is_some() {
        return start_recv_staged(cx, op, source);
    }
    let buf = cptr::nonnull_or_dangling(op.buf).cast_mut();
    // SAFETY: the receive buffer (a dangling non-NULL pointer when empty) stays valid and
    // untouched by the program until the request completes: MPI's rule for receives.
    let started = unsafe {
        cx.engine
            .p2p()
            .irecv(buf, op.cap, source, op.tag, op.ctx, owner)
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Posts a receive of scattered data on a staging buffer.
#[inline(never)]
pub(crate) fn start_recv_staged(cx: &mut Cx<'_>, op: &RecvOp, source: c_int) -> MpiResult<ReqId> {
    let incoming = op.incoming()?;
    let (ptr, cap) = (incoming.ptr(), incoming.cap());
    let staged = incoming.into_staged().expect("scattered data is staged");
    // SAFETY: the staging buffer is owned by the request (its attachment; its heap buffer does
    // not move) and kept until the request is released, after the receive completed.
    let started = unsafe {
        cx.engine.p2p().irecv_attached(
            ptr,
            cap,
            source,
            op.tag,
            op.ctx,
            op.comm,
            Some(Box::new(Staging::Recv(staged))),
        )
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// A buffered send reached a context without the attached buffer (the lane path's, which
/// never sends buffered).
#[cold]
fn no_bsend() -> MpiError {
    MpiError::internal("a buffered send on the lane path")
}

/// The handle of a started request.
#[inline(always)]
pub(crate) fn record(cx: &Cx<'_>, id: ReqId) -> MPI_Request {
    request::handle_on(cx.engine, cx.lane, id)
}

/// Creates an inactive persistent request.
pub(crate) fn persistent(
    cx: &mut Cx<'_>,
    comm: crate::comm::CommIdx,
    kind: PersistentKind,
) -> MpiResult<MPI_Request> {
    let id = cx
        .engine
        .p2p()
        .persistent(
            comm,
            Box::new(Persistent {
                kind,
                staging: None,
            }),
        )
        .map_err(|e| MpiError::from(e).on(comm))?;
    Ok(record(cx, id))
}

/// The request and arguments of an inactive persistent request, or why it cannot be started.
pub(crate) fn startable(
    cx: &mut Cx<'_>,
    handle: MPI_Request,
) -> MpiResult<(ReqId, PersistentKind)> {
    let id = request::lookup_on(cx.engine, cx.lane, handle)?;
    let comm = request::comm_of(cx.engine, id);
    let inactive = cx.engine.p2p_ref().standing(id) == Some(mpich_channel::Standing::Inactive);
    let kind = cx.engine.p2p().attachment(id).and_then(|a| {
        let a = a.as_any_mut();
        if a.is::<request::Foreign>() {
            return Some(PersistentKind::Foreign);
        }
        a.downcast_mut::<Persistent>().map(|p| p.kind.clone())
    });
    match kind {
        Some(kind) if inactive => Ok((id, kind)),
        Some(_) => Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the persistent request is active already; complete it (MPI_Wait, MPI_Test) before starting it again",
        )
        .on(comm)),
        None => Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is not persistent (only requests of MPI_Send_init, MPI_Recv_init, ... can be started)",
        )
        .on(comm)),
    }
}

/// The short way of [`start`] for an inactive foreign request started from shared state (a
/// persistent collective: [`request::ForeignRun::shared_start`]); `None` for every other
/// request, which [`start`] checks and starts the usual way.
#[inline]
fn start_shared(cx: &mut Cx<'_>, handle: MPI_Request) -> Option<MpiResult<()>> {
    let id = request::lookup_on(cx.engine, cx.lane, handle).ok()?;
    if cx.engine.p2p_ref().standing(id) != Some(mpich_channel::Standing::Inactive) {
        return None;
    }
    let shared = cx
        .engine
        .p2p()
        .attachment(id)?
        .as_any_mut()
        .downcast_mut::<request::Foreign>()?
        .0
        .shared_start()?;
    let started = shared.start(cx.engine, id);
    Some(started.map_err(|e| e.on(request::comm_of(cx.engine, id))))
}

/// Sets the staging of persistent request `id`'s run (before the run can complete).
pub(crate) fn set_staging(cx: &mut Cx<'_>, id: ReqId, staging: Option<Staging>) {
    if let Some(p) = cx
        .engine
        .p2p()
        .attachment(id)
        .and_then(|a| a.as_any_mut().downcast_mut::<Persistent>())
    {
        p.staging = staging;
    }
}

/// Starts the inactive persistent request `handle`.
pub(crate) fn start(cx: &mut Cx<'_>, handle: MPI_Request) -> MpiResult<()> {
    if let Some(started) = start_shared(cx, handle) {
        return started;
    }
    let (id, kind) = startable(cx, handle)?;
    let comm = request::comm_of(cx.engine, id);
    let started = match &kind {
        PersistentKind::Foreign => {
            let foreign = cx
                .engine
                .p2p()
                .attachment(id)
                .and_then(|a| a.as_any_mut().downcast_mut::<request::Foreign>())
                .expect("a foreign persistent request keeps its attachment");
            if let Some(shared) = foreign.0.shared_start() {
                return shared.start(cx.engine, id).map_err(|e| e.on(comm));
            }
            let starter = foreign.0.starter();
            return starter(cx.engine, id).map_err(|e| e.on(comm));
        }
        PersistentKind::Send(op, mode) => match op.dest {
            None => cx
                .engine
                .p2p()
                .start_persistent_done(id, born_complete(Completion::PROC_NULL)),
            Some(dest) if *mode == SendKind::Buffered => {
                let data = op.outgoing()?;
                let lane = cx.lane;
                let bsend = cx.bsend.as_deref_mut().ok_or_else(no_bsend)?;
                bsend
                    .send(cx.engine, lane, data.bytes(), dest, op.tag, op.ctx)
                    .map_err(|e| e.on(comm))?;
                cx.engine
                    .p2p()
                    .start_persistent_done(id, born_complete(Completion::EMPTY))
            }
            Some(dest) => {
                let data = op.outgoing()?;
                let (ptr, len) = (data.ptr(), data.len());
                if data.is_owned() {
                    set_staging(cx, id, Some(Staging::Send(data)));
                }
                // SAFETY: the user's buffer stays valid and unmodified until the run completes
                // (MPI's rule for persistent sends); a packed copy is the request's staging.
                unsafe {
                    cx.engine.p2p().start_persistent_send(
                        id,
                        ptr,
                        len,
                        dest,
                        op.tag,
                        op.ctx,
                        mode.engine_mode(),
                    )
                }
            }
        },
        PersistentKind::Recv(op) => match op.source {
            None => cx
                .engine
                .p2p()
                .start_persistent_done(id, born_complete(Completion::PROC_NULL)),
            Some(source) => {
                let incoming = op.incoming()?;
                let (ptr, cap) = (incoming.ptr(), incoming.cap());
                if let Some(staged) = incoming.into_staged() {
                    set_staging(cx, id, Some(Staging::Recv(staged)));
                }
                // SAFETY: the receive buffer (or the request's staging) stays valid and
                // untouched until the run completes (MPI's rule for persistent receives).
                unsafe {
                    cx.engine
                        .p2p()
                        .start_persistent_recv(id, ptr, cap, source, op.tag, op.ctx)
                }
            }
        },
    };
    started.map_err(|e| MpiError::from(e).on(comm))
}

/// The two halves of an `MPI_Isendrecv`, one operation of the engine: over when both are,
/// with the receive's status. `MPI_Isendrecv_replace` sends from a copy of the outgoing data,
/// kept here until the send is over.
struct SendRecvRun {
    send: ReqId,
    recv: ReqId,
    _copy: Option<Outgoing>,
}

impl Operation for SendRecvRun {
    fn poll(&mut self, p2p: &mut Adi) -> mpich_channel::Result<Option<Status>> {
        if !(p2p.is_complete(self.send) && p2p.is_complete(self.recv)) {
            return Ok(None);
        }
        p2p.take(self.send)?;
        p2p.take(self.recv)
    }
}

/// `MPI_Isendrecv` (and, with `replace`, `MPI_Isendrecv_replace`, whose receive lands where
/// the outgoing data was: that data is copied first): starts the send and the receive, and
/// returns the one request that completes when both have.
pub(crate) fn isendrecv(
    cx: &mut Cx<'_>,
    s: &SendOp,
    r: &RecvOp,
    replace: bool,
) -> MpiResult<ReqId> {
    let (send, copy) = if replace && s.dest.is_some() {
        let outgoing = s.outgoing()?;
        let copy = if outgoing.is_owned() {
            outgoing
        } else {
            Outgoing::owned(outgoing.bytes().to_vec())
        };
        let from_copy = SendOp {
            buf: copy.ptr(),
            bytes: copy.len(),
            scattered: None,
            ..s.clone()
        };
        (start_send(cx, &from_copy, SendKind::Standard)?, Some(copy))
    } else {
        (start_send(cx, s, SendKind::Standard)?, None)
    };
    let recv = match start_recv(cx, r) {
        Ok(recv) => recv,
        Err(e) => {
            // Too many requests: take the send back rather than leave it unowned.
            let _ = cx.engine.p2p().cancel(send);
            let _ = cx.engine.p2p().request_free(send);
            return Err(e);
        }
    };
    let run = SendRecvRun {
        send,
        recv,
        _copy: copy,
    };
    cx.engine
        .start(Box::new(run), r.comm)
        .map_err(|e| MpiError::from(e).on(r.comm))
}
