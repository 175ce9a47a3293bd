//! Nonblocking and persistent point-to-point: `MPI_Isend`, `MPI_Issend`, `MPI_Ibsend`,
//! `MPI_Irsend`, `MPI_Irecv`, the five `_init` calls, `MPI_Start` and `MPI_Startall`.
//!
//! Starting an operation ([`start_send`], [`start_recv`]) makes an engine request: a running
//! send or receive, or, for `MPI_PROC_NULL` and buffered sends, a request born complete. The
//! handle the program gets is that request ([`crate::p2p::request`]). Persistent requests keep
//! their checked arguments as their request's attachment and run them again at each start.
//! Scattered data (a non-contiguous derived type) is packed when a send starts, and a receive
//! of it is posted on a staging buffer; the request owns either until it completes, and a
//! receive's data is unpacked the moment it does.

use crate::abi::*;
use crate::p2p::args::{self, RecvOp, SendKind, SendOp};
use crate::cptr::{self, Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::p2p::request::{self, Persistent, PersistentKind, Staging};
use crate::runtime::Runtime;
use crate::p2p::status::Completion;
use mpich_channel::{ReqId, Status};
use std::ffi::{c_int, c_void};

/// The engine status of an operation complete at its start: `c` seen from `comm`.
fn born_complete(c: Completion) -> Status {
    Status { source: c.source, tag: c.tag, ..Status::default() }
}

/// Starts a checked send in mode `kind`; returns its request.
#[inline(always)]
pub(crate) fn start_send(rt: &mut Runtime, op: &SendOp, kind: SendKind) -> MpiResult<ReqId> {
    let owner = op.comm as u32;
    let Some(dest) = op.dest else {
        return Ok(rt.engine.p2p().completed(born_complete(Completion::PROC_NULL), owner).map_err(|e| MpiError::from(e).on(op.comm))?);
    };
    if kind == SendKind::Buffered || op.scattered.is_some() {
        return start_send_copied(rt, op, kind, dest);
    }
    // SAFETY: the send buffer (a dangling non-NULL pointer when empty) stays valid and
    // unmodified until the request completes: MPI's rule for nonblocking and persistent sends.
    let started = unsafe {
        rt.engine.p2p().isend(cptr::nonnull_or_dangling(op.buf), op.bytes, dest, op.tag, op.ctx, kind.engine_mode(), owner)
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Starts a buffered send, or a send of scattered data from a packed copy.
#[inline(never)]
fn start_send_copied(rt: &mut Runtime, op: &SendOp, kind: SendKind, dest: usize) -> MpiResult<ReqId> {
    let owner = op.comm as u32;
    let data = op.outgoing();
    if kind == SendKind::Buffered {
        rt.bsend.send(&mut rt.engine, data.bytes(), dest, op.tag, op.ctx).map_err(|e| e.on(op.comm))?;
        return Ok(rt.engine.p2p().completed(born_complete(Completion::EMPTY), owner).map_err(|e| MpiError::from(e).on(op.comm))?);
    }
    let (ptr, len) = (data.ptr(), data.len());
    // SAFETY: the packed copy is owned by the request (its attachment; a Vec's heap buffer
    // does not move with it) and kept until the request is released, after the send.
    let started = unsafe {
        rt.engine.p2p().isend_attached(ptr, len, dest, op.tag, op.ctx, kind.engine_mode(), owner, Some(Box::new(Staging::Send(data))))
    };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Posts a checked receive; returns its request.
#[inline(always)]
pub(crate) fn start_recv(rt: &mut Runtime, op: &RecvOp) -> MpiResult<ReqId> {
    let owner = op.comm as u32;
    let Some(source) = op.source else {
        return Ok(rt.engine.p2p().completed(born_complete(Completion::PROC_NULL), owner).map_err(|e| MpiError::from(e).on(op.comm))?);
    };
    if op.scattered.is_some() {
        return start_recv_staged(rt, op, source);
    }
    let buf = cptr::nonnull_or_dangling(op.buf).cast_mut();
    // SAFETY: the receive buffer (a dangling non-NULL pointer when empty) stays valid and
    // untouched by the program until the request completes: MPI's rule for receives.
    let started = unsafe { rt.engine.p2p().irecv(buf, op.cap, source, op.tag, op.ctx, owner) };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// Posts a receive of scattered data on a staging buffer.
#[inline(never)]
fn start_recv_staged(rt: &mut Runtime, op: &RecvOp, source: c_int) -> MpiResult<ReqId> {
    let incoming = op.incoming();
    let (ptr, cap) = (incoming.ptr(), incoming.cap());
    let staged = incoming.into_staged().expect("scattered data is staged");
    // SAFETY: the staging buffer is owned by the request (its attachment; its heap buffer does
    // not move) and kept until the request is released, after the receive completed.
    let started = unsafe { rt.engine.p2p().irecv_attached(ptr, cap, source, op.tag, op.ctx, op.comm as u32, Some(Box::new(Staging::Recv(staged)))) };
    started.map_err(|e| MpiError::from(e).on(op.comm))
}

/// The handle of a started request.
#[inline(always)]
fn record(rt: &Runtime, id: ReqId) -> MPI_Request {
    request::handle(&rt.engine, id)
}

/// Generates the four nonblocking send functions, which differ only in their mode.
macro_rules! nonblocking_send {
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
                request: *mut MPI_Request,
            ) |st| {
                let rt = st.runtime()?;
                let op = args::send_op(rt, buf, count, datatype, dest, tag, comm)?;
                let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
                let id = start_send(rt, &op, $kind)?;
                out.set(record(rt, id));
                Ok(())
            }
        }
    };
}

nonblocking_send! {
    /// `MPI_Isend`: starts a standard-mode send.
    MPI_Isend / PMPI_Isend, SendKind::Standard
}
nonblocking_send! {
    /// `MPI_Issend`: starts a synchronous send (complete once the receiver matched it).
    MPI_Issend / PMPI_Issend, SendKind::Synchronous
}
nonblocking_send! {
    /// `MPI_Ibsend`: a buffered send; the request is complete once the data is copied.
    MPI_Ibsend / PMPI_Ibsend, SendKind::Buffered
}
nonblocking_send! {
    /// `MPI_Irsend`: starts a ready-mode send.
    MPI_Irsend / PMPI_Irsend, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Irecv`: posts a receive.
    fn MPI_Irecv / PMPI_Irecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let op = args::recv_op(rt, buf, count, datatype, source, tag, comm)?;
        let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
        let id = start_recv(rt, &op)?;
        out.set(record(rt, id));
        Ok(())
    }
}

/// Creates an inactive persistent request.
fn persistent(rt: &mut Runtime, comm: crate::comm::CommIdx, kind: PersistentKind) -> MpiResult<MPI_Request> {
    let id = rt.engine.p2p().persistent(comm as u32, Box::new(Persistent { kind, staging: None })).map_err(|e| MpiError::from(e).on(comm))?;
    Ok(record(rt, id))
}

/// Generates the four persistent send constructors.
macro_rules! send_init {
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
                request: *mut MPI_Request,
            ) |st| {
                let rt = st.runtime()?;
                let op = args::send_op(rt, buf, count, datatype, dest, tag, comm)?;
                let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
                out.set(persistent(rt, op.comm, PersistentKind::Send(op, $kind))?);
                Ok(())
            }
        }
    };
}

send_init! {
    /// `MPI_Send_init`: a persistent standard-mode send, started by `MPI_Start`.
    MPI_Send_init / PMPI_Send_init, SendKind::Standard
}
send_init! {
    /// `MPI_Ssend_init`: a persistent synchronous send.
    MPI_Ssend_init / PMPI_Ssend_init, SendKind::Synchronous
}
send_init! {
    /// `MPI_Bsend_init`: a persistent buffered send.
    MPI_Bsend_init / PMPI_Bsend_init, SendKind::Buffered
}
send_init! {
    /// `MPI_Rsend_init`: a persistent ready-mode send.
    MPI_Rsend_init / PMPI_Rsend_init, SendKind::Ready
}

mpi_fn! {
    /// `MPI_Recv_init`: a persistent receive, started by `MPI_Start`.
    fn MPI_Recv_init / PMPI_Recv_init(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        source: c_int,
        tag: c_int,
        comm: MPI_Comm,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let op = args::recv_op(rt, buf, count, datatype, source, tag, comm)?;
        let out = Out::new(request, "request").map_err(|e| e.on(op.comm))?;
        out.set(persistent(rt, op.comm, PersistentKind::Recv(op))?);
        Ok(())
    }
}

/// The request and arguments of an inactive persistent request, or why it cannot be started.
fn startable(rt: &mut Runtime, handle: MPI_Request) -> MpiResult<(ReqId, PersistentKind)> {
    let id = request::lookup(&rt.engine, handle)?;
    let comm = request::comm_of(&rt.engine, id);
    let inactive = rt.engine.p2p_ref().standing(id) == Some(mpich_channel::Standing::Inactive);
    let kind = rt.engine.p2p().attachment(id).and_then(|a| a.as_any_mut().downcast_mut::<Persistent>()).map(|p| p.kind.clone());
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

/// Sets the staging of persistent request `id`'s run (before the run can complete).
fn set_staging(rt: &mut Runtime, id: ReqId, staging: Option<Staging>) {
    if let Some(p) = rt.engine.p2p().attachment(id).and_then(|a| a.as_any_mut().downcast_mut::<Persistent>()) {
        p.staging = staging;
    }
}

/// Starts the inactive persistent request `handle`.
fn start(rt: &mut Runtime, handle: MPI_Request) -> MpiResult<()> {
    let (id, kind) = startable(rt, handle)?;
    let comm = request::comm_of(&rt.engine, id);
    let started = match &kind {
        PersistentKind::Send(op, mode) => match op.dest {
            None => rt.engine.p2p().start_persistent_done(id, born_complete(Completion::PROC_NULL)),
            Some(dest) if *mode == SendKind::Buffered => {
                let data = op.outgoing();
                rt.bsend.send(&mut rt.engine, data.bytes(), dest, op.tag, op.ctx).map_err(|e| e.on(comm))?;
                rt.engine.p2p().start_persistent_done(id, born_complete(Completion::EMPTY))
            }
            Some(dest) => {
                let data = op.outgoing();
                let (ptr, len) = (data.ptr(), data.len());
                if data.is_owned() {
                    set_staging(rt, id, Some(Staging::Send(data)));
                }
                // SAFETY: the user's buffer stays valid and unmodified until the run completes
                // (MPI's rule for persistent sends); a packed copy is the request's staging.
                unsafe { rt.engine.p2p().start_persistent_send(id, ptr, len, dest, op.tag, op.ctx, mode.engine_mode()) }
            }
        },
        PersistentKind::Recv(op) => match op.source {
            None => rt.engine.p2p().start_persistent_done(id, born_complete(Completion::PROC_NULL)),
            Some(source) => {
                let incoming = op.incoming();
                let (ptr, cap) = (incoming.ptr(), incoming.cap());
                if let Some(staged) = incoming.into_staged() {
                    set_staging(rt, id, Some(Staging::Recv(staged)));
                }
                // SAFETY: the receive buffer (or the request's staging) stays valid and
                // untouched until the run completes (MPI's rule for persistent receives).
                unsafe { rt.engine.p2p().start_persistent_recv(id, ptr, cap, source, op.tag, op.ctx) }
            }
        },
    };
    started.map_err(|e| MpiError::from(e).on(comm))
}

mpi_fn! {
    /// `MPI_Start`: starts a persistent request.
    fn MPI_Start / PMPI_Start(request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(request, "request")?.get();
        start(rt, handle)
    }
}

mpi_fn! {
    /// `MPI_Startall`: starts `count` persistent requests (all are checked first).
    fn MPI_Startall / PMPI_Startall(count: c_int, array_of_requests: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let n = usize::try_from(count)
            .map_err(|_| MpiError::new(MPI_ERR_COUNT, format!("the count is {count}; it must be 0 or more")))?;
        let requests = Array::new(array_of_requests, n, "array_of_requests")?;
        for i in 0..requests.len() {
            startable(rt, requests.get(i))?;
        }
        for i in 0..requests.len() {
            start(rt, requests.get(i))?;
        }
        Ok(())
    }
}
