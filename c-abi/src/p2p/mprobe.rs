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
//! Message handles use MPICH's encoding for its message objects: `0xac000000 | lane << 20 |
//! index` for a held message (the kind bits of a direct handle, object type 0xb; the lane of
//! the probed communicator in the bits where a request handle keeps its lane, so that
//! `MPI_Mrecv` and `MPI_Imrecv` find their lane from the handle alone, as the completion calls
//! do from a request's), `MPI_MESSAGE_NULL` and `MPI_MESSAGE_NO_PROC` (a probe of
//! `MPI_PROC_NULL`) as in `mpi.h`. The held messages themselves are in one table behind a
//! mutex of its own, reached from any lane.

use crate::abi::*;
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{ProbeOp, RecvOp};
use crate::p2p::blocking;
use crate::p2p::status::Completion;
use crate::p2p::Cx;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

/// A message taken out of matching by a matched probe, waiting for its `MPI_Mrecv`.
pub(crate) struct Held {
    pub data: Vec<u8>,
    /// Its status (source as a rank of the probed communicator, tag, byte count).
    pub completion: Completion,
    /// Its source as the engine names it.
    pub global_source: c_int,
    /// The probed communicator, whose error handler deals with the receive's errors.
    pub comm: CommIdx,
    /// The lane it was taken on (its communicator's point-to-point lane).
    pub lane: usize,
}

/// Held messages by handle index; a slot is `None` once its message was received.
static HELD: Mutex<Vec<Option<Held>>> = Mutex::new(Vec::new());

pub(crate) fn held() -> std::sync::MutexGuard<'static, Vec<Option<Held>>> {
    HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Where a message handle keeps its lane (as request handles do, `p2p::request`).
const LANE_SHIFT: u32 = 20;
const LANE_MASK: u32 = (crate::p2p::request::MAX_LANES as u32 - 1) << LANE_SHIFT;

/// The lane a message handle names (`None` for anything but a held message's handle).
pub(crate) fn lane_of(handle: MPI_Message) -> Option<usize> {
    crate::handle::index_of(crate::handle::Kind::Request, handle)
        .map(|bits| ((bits & LANE_MASK) >> LANE_SHIFT) as usize)
}

/// Stores a held message taken on lane `lane` and returns its handle.
pub(crate) fn hold(message: Held, lane: usize) -> MpiResult<MPI_Message> {
    let mut table = held();
    if table.iter().all(Option::is_some) && table.len() >= 1 << LANE_SHIFT {
        return Err(MpiError::new(
            MPI_ERR_INTERN,
            format!(
                "{} messages taken by MPI_Mprobe or MPI_Improbe wait for their MPI_Mrecv: the most this library holds; receive some first",
                table.len()
            ),
        )
        .on(message.comm));
    }
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
    // MPICH names messages with the request kind bits.
    let bits = (lane as u32) << LANE_SHIFT & LANE_MASK | index as u32;
    Ok(crate::handle::direct(crate::handle::Kind::Request, bits) as MPI_Message)
}

/// What an `MPI_Message` handle names.
pub(crate) enum Named {
    NoProc,
    Held(Held),
}

/// Takes the message named by `handle` (it can be received once).
pub(crate) fn take(handle: MPI_Message) -> MpiResult<Named> {
    if handle == MPI_MESSAGE_NO_PROC {
        return Ok(Named::NoProc);
    }
    let invalid = || {
        MpiError::new(
            MPI_ERR_ARG,
            format!(
                "message handle {handle:#x} does not name a message from MPI_Mprobe or MPI_Improbe that is still to be received (MPI_MESSAGE_NULL, a received one, or not a message handle)"
            ),
        )
    };
    let Some(bits) = crate::handle::index_of(crate::handle::Kind::Request, handle) else {
        return Err(invalid());
    };
    let index = bits & ((1 << LANE_SHIFT) - 1);
    let mut table = held();
    let slot = table.get_mut(index as usize);
    // The handle's lane must be the one its message was taken on.
    if slot
        .as_ref()
        .and_then(|s| s.as_ref())
        .is_some_and(|m| m.lane != ((bits & LANE_MASK) >> LANE_SHIFT) as usize)
    {
        return Err(invalid());
    }
    slot.and_then(Option::take)
        .map(Named::Held)
        .ok_or_else(invalid)
}

/// Receives the message a probe found (engine status `found`) into a buffer of its own.
pub(crate) fn take_found(
    cx: &mut Cx<'_>,
    op: &ProbeOp,
    found: &mpich_channel::Status,
) -> MpiResult<Held> {
    let mut data = Vec::new();
    crate::error::grow(&mut data, found.len, "a probed message").map_err(|e| e.on(op.comm))?;
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
    let completion = blocking::recv(cx, &exact)?;
    Ok(Held {
        data,
        completion,
        global_source: found.source,
        comm: op.comm,
        lane: cx.lane,
    })
}

/// A probe that does not block: the engine status of a matching message, if one is there.
pub(crate) fn probe_now(
    cx: &mut Cx<'_>,
    src: c_int,
    op: &ProbeOp,
) -> MpiResult<Option<mpich_channel::Status>> {
    cx.engine
        .iprobe(src, op.tag, op.ctx)
        .map_err(|e| MpiError::from(e).on(op.comm))
}

/// Copies (or unpacks) a held message into `count` elements of `datatype` at `buf`.
pub(crate) fn deliver(
    cx: &Cx<'_>,
    message: Held,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<Completion> {
    let m = crate::p2p::args::message(cx.types, count, datatype)?;
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
