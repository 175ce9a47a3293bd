//! Matched probes: `MPI_Mprobe`, `MPI_Improbe`, `MPI_Mrecv`, `MPI_Imrecv`.
//!
//! A matched probe finds a message and takes it out of matching in the same step, so that
//! no other receive can get it before the `MPI_Mrecv` that names its `MPI_Message` handle.
//! The engine has no such operation; this layer builds it from the ones it has: the probe
//! reports the message's source and tag, and a receive with exactly that source and tag on
//! the same context then takes that very message (MPI's non-overtaking order: any earlier
//! message from that source with that tag would have matched the probe first) into a buffer
//! kept here. `MPI_Mrecv` copies (or unpacks) it into the user's buffer; `MPI_Imrecv` does the
//! same and returns a request that is complete already. The cost is one extra copy, which is
//! why the library's own receives do not go this way; bindings such as rsmpi need the calls.
//!
//! Message handles use MPICH's encoding for its message objects: `0xac000000 | index` for a
//! held message (the kind bits of a direct handle, object type 0xb), `MPI_MESSAGE_NULL` and
//! `MPI_MESSAGE_NO_PROC` (a probe of `MPI_PROC_NULL`) as in `mpi.h`.

use crate::abi::*;
use crate::p2p::args::{self, ProbeOp, RecvOp};
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::p2p::status::StatusOut;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::p2p::blocking;
use crate::runtime::Runtime;
use crate::p2p::status::Completion;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

const HANDLE_TAG: u32 = 0xac00_0000;
const HANDLE_TAG_MASK: u32 = 0xfc00_0000;

/// A message taken out of matching by a matched probe, waiting for its `MPI_Mrecv`.
struct Held {
    data: Vec<u8>,
    /// Its status (source as a rank of the probed communicator, tag, byte count).
    completion: Completion,
    /// Its source as the engine names it.
    global_source: c_int,
    /// The probed communicator, whose error handler deals with the receive's errors.
    comm: CommIdx,
}

/// Held messages by handle index; a slot is `None` once its message was received.
static HELD: Mutex<Vec<Option<Held>>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<Option<Held>>> {
    HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Stores a held message and returns its handle.
fn hold(message: Held) -> MPI_Message {
    let mut table = held();
    let index = match table.iter().position(Option::is_none) {
        Some(free) => {
            table[free] = Some(message);
            free
        }
        None => {
            table.push(Some(message));
            table.len() - 1
        }
    };
    (HANDLE_TAG | index as u32) as MPI_Message
}

/// What an `MPI_Message` handle names.
enum Named {
    NoProc,
    Held(Held),
}

/// Takes the message named by `handle` (it can be received once).
fn take(handle: MPI_Message) -> MpiResult<Named> {
    if handle == MPI_MESSAGE_NO_PROC {
        return Ok(Named::NoProc);
    }
    let h = handle as u32;
    let invalid = || {
        MpiError::new(
            MPI_ERR_ARG,
            format!(
                "message handle {handle:#x} does not name a message from MPI_Mprobe or MPI_Improbe that is still to be received (MPI_MESSAGE_NULL, a received one, or not a message handle)"
            ),
        )
    };
    if h & HANDLE_TAG_MASK != HANDLE_TAG {
        return Err(invalid());
    }
    let index = (h & !HANDLE_TAG_MASK) as usize;
    held()
        .get_mut(index)
        .and_then(Option::take)
        .map(Named::Held)
        .ok_or_else(invalid)
}

/// Receives the message a probe found (engine status `found`) into a buffer of its own.
fn take_found(rt: &mut Runtime, op: &ProbeOp, found: &mpich_channel::Status) -> MpiResult<Held> {
    let mut data = vec![0u8; found.len];
    let exact = RecvOp {
        comm: op.comm,
        buf: data.as_mut_ptr(),
        cap: data.len(),
        source: Some(found.source),
        tag: found.tag,
        ctx: op.ctx,
        scattered: None,
        count: data.len(),
    };
    let completion = blocking::recv(rt, &exact)?;
    Ok(Held {
        data,
        completion,
        global_source: found.source,
        comm: op.comm,
    })
}

/// A probe that does not block: the engine status of a matching message, if one is there.
fn probe_now(
    rt: &mut Runtime,
    src: c_int,
    op: &ProbeOp,
) -> MpiResult<Option<mpich_channel::Status>> {
    rt.engine
        .iprobe(src, op.tag, op.ctx)
        .map_err(|e| MpiError::from(e).on(op.comm))
}

/// Copies (or unpacks) a held message into `count` elements of `datatype` at `buf`.
fn deliver(
    rt: &Runtime,
    message: Held,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
) -> MpiResult<Completion> {
    let m = rt.types.message(count, datatype)?;
    if buf.is_null() && m.bytes > 0 && !m.derived {
        return Err(MpiError::new(
            MPI_ERR_BUFFER,
            format!(
                "the receive buffer is NULL but has room for {} bytes",
                m.bytes
            ),
        ));
    }
    let n = message.data.len().min(m.bytes);
    match &m.scattered {
        // SAFETY: `buf` holds `count` elements of the type (the caller's contract), and the
        // held data has `n` readable bytes; they do not overlap (the data is ours).
        Some(t) => unsafe { t.unpack(message.data.as_ptr(), n, buf.cast(), count as usize) },
        // SAFETY: one block of `m.bytes >= n` writable bytes at `buf + m.offset` (the
        // caller's contract); the held data has `n` readable bytes and is ours.
        None if n > 0 => unsafe {
            std::ptr::copy_nonoverlapping(
                message.data.as_ptr(),
                buf.cast::<u8>().offset(m.offset),
                n,
            )
        },
        None => {}
    }
    let mut c = message.completion;
    if message.data.len() > m.bytes {
        c.bytes = n;
        c.error = MPI_ERR_TRUNCATE;
    }
    Ok(c)
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
    ) |st| {
        let rt = st.runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let message = Out::new(message, "message").map_err(|e| e.on(op.comm))?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let Some(src) = op.source else {
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        let found = rt.engine.probe(src, op.tag, op.ctx).map_err(|e| MpiError::from(e).on(op.comm))?;
        let taken = take_found(rt, &op, &found)?;
        status.set(&taken.completion);
        message.set(hold(taken));
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
    ) |st| {
        let rt = st.runtime()?;
        let op = args::probe_op(&rt.comms, source, tag, comm)?;
        let flag = Out::new(flag, "flag").map_err(|e| e.on(op.comm))?;
        let message = Out::new(message, "message").map_err(|e| e.on(op.comm))?;
        let status = StatusOut::new(status).map_err(|e| e.on(op.comm))?;
        let Some(src) = op.source else {
            flag.set(1);
            message.set(MPI_MESSAGE_NO_PROC);
            status.set(&Completion::PROC_NULL);
            return Ok(());
        };
        match probe_now(rt, src, &op)? {
            None => flag.set(0),
            Some(found) => {
                let taken = take_found(rt, &op, &found)?;
                flag.set(1);
                status.set(&taken.completion);
                message.set(hold(taken));
            }
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Mrecv`: receives the message a matched probe took; `*message` becomes
    /// `MPI_MESSAGE_NULL`.
    fn MPI_Mrecv / PMPI_Mrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        status: *mut MPI_Status,
    ) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(message, "message")?;
        let status = StatusOut::new(status)?;
        let (comm, c) = match take(handle.get())? {
            Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL),
            Named::Held(m) => {
                let comm = m.comm;
                (comm, deliver(rt, m, buf, count, datatype).map_err(|e| e.on(comm))?)
            }
        };
        handle.set(MPI_MESSAGE_NULL);
        status.set(&c);
        c.check().map_err(|e| e.on(comm))
    }
}

mpi_fn! {
    /// `MPI_Imrecv`: `MPI_Mrecv` as a request; the data is delivered at once, so the request
    /// is complete already.
    fn MPI_Imrecv / PMPI_Imrecv(
        buf: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        message: *mut MPI_Message,
        request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        let handle = Out::new(message, "message")?;
        let request = Out::new(request, "request")?;
        let (comm, c, source) = match take(handle.get())? {
            Named::NoProc => (crate::comm::SELF, Completion::PROC_NULL, MPI_PROC_NULL),
            Named::Held(m) => {
                let (comm, source) = (m.comm, m.global_source);
                (comm, deliver(rt, m, buf, count, datatype).map_err(|e| e.on(comm))?, source)
            }
        };
        let status = mpich_channel::Status { source, tag: c.tag, len: c.bytes, truncated: c.error == MPI_ERR_TRUNCATE, ..Default::default() };
        let id = rt.engine.p2p().completed(status, comm as u32).map_err(|e| MpiError::from(e).on(comm))?;
        handle.set(MPI_MESSAGE_NULL);
        request.set(crate::p2p::request::handle(&rt.engine, id));
        Ok(())
    }
}
