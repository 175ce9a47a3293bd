//! Nonblocking and persistent point-to-point: `MPI_Isend`, `MPI_Issend`, `MPI_Ibsend`,
//! `MPI_Irsend`, `MPI_Irecv`, the five `_init` calls, `MPI_Start` and `MPI_Startall`.
//!
//! Starting an operation ([`start_send`], [`start_recv`]) gives either an engine request or,
//! for `MPI_PROC_NULL` and buffered sends, a completion right away; the request table records
//! which. Persistent requests keep their checked arguments and run them again at each start.
//! Scattered data (a non-contiguous derived type) is packed when a send starts, and a receive
//! of it is posted on a staging buffer; the request owns either until it completes
//! ([`Started::Staged`]).

use crate::abi::*;
use crate::args::{self, RecvOp, SendKind, SendOp};
use crate::cptr::{self, Array, Out};
use crate::error::{MpiError, MpiResult};
use crate::export::mpi_fn;
use crate::request::{Op, Persistent, PersistentKind, PersistentState, Request, Staging};
use crate::state::Runtime;
use crate::status::Completion;
use mpich_channel::ReqId;
use std::ffi::{c_int, c_void};

/// What starting an operation gave.
#[derive(Debug)]
pub(crate) enum Started {
    /// Running in the engine.
    Engine(ReqId),
    /// Running in the engine on a staging buffer, which must live until it completes.
    Staged(ReqId, Box<Staging>),
    /// Complete already.
    Done(Completion),
}

/// Starts a checked send in mode `kind`.
#[inline(always)]
pub(crate) fn start_send(rt: &mut Runtime, op: &SendOp, kind: SendKind) -> MpiResult<Started> {
    let Some(dest) = op.dest else {
        return Ok(Started::Done(Completion::PROC_NULL));
    };
    if kind == SendKind::Buffered || op.scattered.is_some() {
        return start_send_copied(rt, op, kind, dest);
    }
    // SAFETY: the send buffer (a dangling non-NULL pointer when empty) stays valid and
    // unmodified until the request completes: MPI's rule for nonblocking and persistent sends.
    let started = unsafe {
        rt.adi.isend(
            cptr::nonnull_or_dangling(op.buf),
            op.bytes,
            dest,
            op.tag,
            op.ctx,
            kind.engine_mode(),
        )
    };
    started
        .map(Started::Engine)
        .map_err(|e| MpiError::from(e).on(op.comm))
}

/// Starts a buffered send, or a send of scattered data from a packed copy.
#[inline(never)]
fn start_send_copied(
    rt: &mut Runtime,
    op: &SendOp,
    kind: SendKind,
    dest: usize,
) -> MpiResult<Started> {
    let data = op.outgoing();
    if kind == SendKind::Buffered {
        rt.bsend
            .send(&mut rt.adi, data.bytes(), dest, op.tag, op.ctx)
            .map_err(|e| e.on(op.comm))?;
        return Ok(Started::Done(Completion::EMPTY));
    }
    // SAFETY: the packed copy is owned by the request (moved into its staging below; a Vec's
    // heap buffer does not move with it) and kept until the send completes.
    let started = unsafe {
        rt.adi.isend(
            data.ptr(),
            data.len(),
            dest,
            op.tag,
            op.ctx,
            kind.engine_mode(),
        )
    };
    match started {
        Ok(id) => Ok(Started::Staged(id, Box::new(Staging::Send(data)))),
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// Posts a checked receive.
#[inline(always)]
pub(crate) fn start_recv(rt: &mut Runtime, op: &RecvOp) -> MpiResult<Started> {
    let Some(source) = op.source else {
        return Ok(Started::Done(Completion::PROC_NULL));
    };
    if op.scattered.is_some() {
        return start_recv_staged(rt, op, source);
    }
    let buf = cptr::nonnull_or_dangling(op.buf).cast_mut();
    // SAFETY: the receive buffer (a dangling non-NULL pointer when empty) stays valid and
    // untouched by the program until the request completes: MPI's rule for receives.
    let started = unsafe { rt.adi.irecv(buf, op.cap, source, op.tag, op.ctx) };
    started
        .map(Started::Engine)
        .map_err(|e| MpiError::from(e).on(op.comm))
}

/// Posts a receive of scattered data on a staging buffer.
#[inline(never)]
fn start_recv_staged(rt: &mut Runtime, op: &RecvOp, source: c_int) -> MpiResult<Started> {
    let incoming = op.incoming();
    // SAFETY: the staging buffer is owned by the request (moved into it below; its heap
    // buffer does not move) and kept until the receive completes.
    let started = unsafe {
        rt.adi
            .irecv(incoming.ptr(), incoming.cap(), source, op.tag, op.ctx)
    };
    match started {
        Ok(id) => {
            let staged = incoming.into_staged().expect("scattered data is staged");
            Ok(Started::Staged(id, Box::new(Staging::Recv(staged))))
        }
        Err(e) => Err(MpiError::from(e).on(op.comm)),
    }
}

/// Records a started operation as a request and returns its handle.
#[inline(always)]
fn record(
    rt: &mut Runtime,
    comm: crate::comm::CommIdx,
    started: Started,
) -> MpiResult<MPI_Request> {
    if !rt.requests.has_room() {
        // A million requests are outstanding: undo the start. The engine may still touch a
        // staging buffer until the freed operation is over, so that buffer is leaked.
        let id = match started {
            Started::Engine(id) => Some(id),
            Started::Staged(id, staging) => {
                std::mem::forget(staging);
                Some(id)
            }
            Started::Done(_) => None,
        };
        if let Some(id) = id {
            let _ = rt.adi.cancel(id);
            let _ = rt.adi.request_free(id);
        }
        return Err(crate::request::too_many_requests().on(comm));
    }
    let op = match started {
        Started::Engine(id) => Op::Engine(id),
        Started::Staged(id, staging) => Op::Staged(id, staging),
        Started::Done(c) => Op::Done(c),
    };
    rt.requests.insert(Request { comm, op })
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
                let started = start_send(rt, &op, $kind)?;
                out.set(record(rt, op.comm, started)?);
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
        let started = start_recv(rt, &op)?;
        out.set(record(rt, op.comm, started)?);
        Ok(())
    }
}

/// Creates an inactive persistent request.
fn persistent(
    rt: &mut Runtime,
    comm: crate::comm::CommIdx,
    kind: PersistentKind,
) -> MpiResult<MPI_Request> {
    let op = Op::Persistent(Persistent {
        kind,
        state: PersistentState::Inactive,
        staging: None,
    });
    rt.requests
        .insert(Request { comm, op })
        .map_err(|e| e.on(comm))
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

/// The arguments of an inactive persistent request, or why it cannot be started.
fn startable(
    rt: &mut Runtime,
    handle: MPI_Request,
) -> MpiResult<(crate::comm::CommIdx, PersistentKind)> {
    let r = rt.requests.get_mut(handle)?;
    match &r.op {
        Op::Persistent(Persistent { kind, state: PersistentState::Inactive, .. }) => Ok((r.comm, kind.clone())),
        Op::Persistent(_) => Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the persistent request is active already; complete it (MPI_Wait, MPI_Test) before starting it again",
        )
        .on(r.comm)),
        _ => Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is not persistent (only requests of MPI_Send_init, MPI_Recv_init, ... can be started)",
        )
        .on(r.comm)),
    }
}

/// Starts the inactive persistent request `handle`.
fn start(rt: &mut Runtime, handle: MPI_Request) -> MpiResult<()> {
    let (comm, kind) = startable(rt, handle)?;
    let started = match &kind {
        PersistentKind::Send(op, mode) => start_send(rt, op, *mode)?,
        PersistentKind::Recv(op) => start_recv(rt, op)?,
    };
    let (state, staging) = match started {
        Started::Engine(id) => (PersistentState::Active(id), None),
        Started::Staged(id, staging) => (PersistentState::Active(id), Some(staging)),
        Started::Done(c) => (PersistentState::Complete(c), None),
    };
    match &mut rt.requests.get_mut(handle).map_err(|e| e.on(comm))?.op {
        Op::Persistent(p) => {
            p.state = state;
            p.staging = staging;
        }
        _ => unreachable!("checked persistent above"),
    }
    Ok(())
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
