//! Request handles: `MPI_Request` is the engine's request, named in MPICH's encoding.
//!
//! There is one request object per operation, the progress engine's
//! ([`mpich_channel::adi`]'s table): the handle a C program holds is that request's index and
//! generation, with no table of this layer's in between. `MPI_REQUEST_NULL` is `0x2c000000`,
//! and a live request is `0xac000000 | generation << 23 | lane << 20 | index`: the kind bits
//! of an MPICH request handle, then the low 3 bits of the engine's generation, the lane whose
//! engine holds the request (`runtime::lanes`: 0 unless lanes are on) and a 20-bit index. The
//! generation grows each time a slot is reused, so a stale copy of a completed request's
//! handle is refused (`MPI_ERR_REQUEST`) instead of reaching the request that reuses its slot
//! (unless exactly a multiple of 8 requests reused it since); a handle is looked up only in
//! the engine of its lane.
//!
//! The communicator a request belongs to (for its statuses' ranks and for the error handler)
//! is the engine request's owner word. What this layer must keep until an operation ends
//! rides with the request as an [`mpich_channel::Attachment`], released with it:
//!
//! * [`Staging`]: the packed copy a send of scattered data is sent from, or the buffer a
//!   receive of it lands in, unpacked into the user's buffer the moment the engine completes
//!   it (also for a request the program freed: nothing is leaked or freed early);
//! * [`Persistent`]: a persistent request's checked arguments (and its staging, while it runs);
//! * [`Outcome`]: where a nonblocking collective leaves the error it ended with;
//! * [`Foreign`]: another subsystem's persistent request (partitioned communication,
//!   persistent collectives), whose runs `MPI_Start` asks it for ([`ForeignRun`]);
//! * a generalized request's callbacks (`crate::p2p::grequest`).

use crate::abi::*;
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{Outgoing, RecvOp, SendKind, SendOp, Staged};
use mpich_channel::{Attachment, Engine, ReqId, Status};
use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

use crate::handle::Kind;

/// A request handle is a direct handle of kind `Request` (`crate::handle`) whose 26 index
/// bits hold the engine request's index, its lane, then the low bits of its generation.
const INDEX_BITS: u32 = 20;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
const LANE_BITS: u32 = 3;
const LANE_MASK: u32 = (1 << LANE_BITS) - 1;
const GENERATION_SHIFT: u32 = INDEX_BITS + LANE_BITS;
const GENERATION_BITS: u32 = crate::handle::INDEX_MASK.count_ones() - GENERATION_SHIFT;
const GENERATION_MASK: u32 = (1 << GENERATION_BITS) - 1;
/// The most lanes a handle can name.
pub(crate) const MAX_LANES: usize = 1 << LANE_BITS;
/// The most requests that can be outstanding at once (the engine's limit).
pub(crate) const MAX_REQUESTS: usize = mpich_channel::adi::MAX_REQUESTS;
const _: () = assert!(MAX_REQUESTS <= 1 << INDEX_BITS);
const _: () = assert!(GENERATION_BITS >= 3);

/// The handle of lane 0's engine request `id`.
#[inline(always)]
pub(crate) fn handle(engine: &Engine, id: ReqId) -> MPI_Request {
    handle_on(engine, 0, id)
}

/// The handle of engine request `id` of lane `lane` (`engine` is that lane's).
#[inline(always)]
pub(crate) fn handle_on(engine: &Engine, lane: usize, id: ReqId) -> MPI_Request {
    let gen = engine.p2p_ref().generation(id).map_or(0, u32::from);
    crate::handle::direct(
        Kind::Request,
        (gen & GENERATION_MASK) << GENERATION_SHIFT | (lane as u32) << INDEX_BITS | id,
    )
}

/// The lane a request handle names (0 for anything but a request handle).
#[inline(always)]
pub(crate) fn lane_of(h: MPI_Request) -> usize {
    crate::handle::index_of(Kind::Request, h)
        .map_or(0, |bits| ((bits >> INDEX_BITS) & LANE_MASK) as usize)
}

/// Lane 0's engine request behind a handle (see [`lookup_on`]).
#[inline(always)]
pub(crate) fn lookup(engine: &Engine, h: MPI_Request) -> MpiResult<ReqId> {
    lookup_on(engine, 0, h)
}

/// The engine request behind a handle of lane `lane` (`engine` is that lane's):
/// `MPI_ERR_REQUEST` unless it is a live request of that lane (for `MPI_REQUEST_NULL` too;
/// callers that accept it look first).
#[inline(always)]
pub(crate) fn lookup_on(engine: &Engine, lane: usize, h: MPI_Request) -> MpiResult<ReqId> {
    if let Some(bits) = crate::handle::index_of(Kind::Request, h) {
        let (index, gen) = (bits & INDEX_MASK, bits >> GENERATION_SHIFT);
        if (bits >> INDEX_BITS) & LANE_MASK == lane as u32 {
            if let Some(id) = engine.p2p_ref().by_handle(index, gen, GENERATION_BITS) {
                return Ok(id);
            }
        }
    }
    Err(invalid_request(h))
}

/// The engine request a handle names, read from its index bits alone: for handles already
/// checked by [`lookup`] (the multiple-completion calls check every handle first, then use
/// this on every sweep).
#[inline(always)]
pub(crate) fn checked_index(h: MPI_Request) -> ReqId {
    h as u32 & INDEX_MASK
}

/// The communicator request `id` belongs to.
#[inline(always)]
pub(crate) fn comm_of(engine: &Engine, id: ReqId) -> CommIdx {
    engine.p2p_ref().owner(id).unwrap_or(0) as CommIdx
}

#[cold]
pub(crate) fn invalid_request(handle: MPI_Request) -> MpiError {
    let detail = if handle == MPI_REQUEST_NULL {
        "the request is MPI_REQUEST_NULL".to_string()
    } else {
        format!("0x{handle:08x} is not an outstanding request (completed or freed already, or not a request handle)")
    };
    MpiError::new(MPI_ERR_REQUEST, detail)
}

/// The buffer of an operation on scattered data, kept until it completes.
#[derive(Debug)]
pub(crate) enum Staging {
    /// The packed data a send is sent from (only kept alive, never read here).
    Send(#[allow(dead_code)] Outgoing),
    /// Where a receive lands, and where to unpack it.
    Recv(Staged),
}

impl Staging {
    /// The operation completed: a receive's data is unpacked into the user's buffer.
    fn finish(&self, status: &Status) {
        if let Staging::Recv(s) = self {
            s.unpack(status.len);
        }
    }
}

/// A nonblocking operation on scattered data keeps its staging as its request's attachment.
impl Attachment for Staging {
    fn complete(&mut self, status: &mut Status) {
        self.finish(status);
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What a persistent request runs at each `MPI_Start`.
#[derive(Debug, Clone)]
pub(crate) enum PersistentKind {
    Send(SendOp, SendKind),
    Recv(RecvOp),
    /// Another subsystem's persistent request ([`Foreign`]: a partitioned send or receive, a
    /// persistent collective).
    Foreign,
}

/// How `MPI_Start` starts the next run of another subsystem's persistent request.
pub(crate) type Starter = Box<dyn FnOnce(&mut Engine, ReqId) -> MpiResult<()>>;

/// A persistent request of a subsystem above point-to-point (partitioned communication,
/// persistent collectives):
/// `MPI_Start`, `MPI_Startall` and the completion calls treat it like any persistent
/// request, and its run is the subsystem's own.
pub(crate) trait ForeignRun: Any {
    /// The next run, to start on the request: a closure holding what it needs (so that the
    /// request's attachment is no longer borrowed when it runs).
    fn starter(&mut self) -> Starter;
    /// The same without allocating a closure, for a subsystem whose state is shared already
    /// (a persistent collective's): another reference to it, which `MPI_Start` starts.
    /// `None` (the default): `MPI_Start` asks for [`ForeignRun::starter`].
    fn shared_start(&self) -> Option<Rc<dyn SharedStart>> {
        None
    }
    /// A run completed in the engine with `status` (the subsystem may rewrite it: a
    /// persistent collective whose run was a plain receive reports a collective's status).
    fn complete(&mut self, status: &mut Status) {
        let _ = status;
    }
    /// Whether `MPI_Cancel` may cancel a run (not a persistent collective's: MPI forbids
    /// cancelling collective requests).
    fn cancellable(&self) -> bool {
        true
    }
    /// For the subsystem to reach its state.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// A run of a foreign persistent request started from shared state
/// ([`ForeignRun::shared_start`]).
pub(crate) trait SharedStart {
    fn start(self: Rc<Self>, engine: &mut Engine, id: ReqId) -> MpiResult<()>;
}

/// The attachment of another subsystem's persistent request.
pub(crate) struct Foreign(pub Box<dyn ForeignRun>);

impl Attachment for Foreign {
    fn complete(&mut self, status: &mut Status) {
        self.0.complete(status);
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A persistent request's arguments, and the staging of its current run.
pub(crate) struct Persistent {
    pub kind: PersistentKind,
    pub staging: Option<Staging>,
}

impl Attachment for Persistent {
    fn complete(&mut self, status: &mut Status) {
        if let Some(s) = self.staging.take() {
            s.finish(status);
        }
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Where a nonblocking collective leaves the error it ended with (its request's status says
/// only the class), for the call that completes it to report.
#[derive(Clone, Default)]
pub(crate) struct Outcome(pub Rc<RefCell<Option<MpiError>>>);

impl Attachment for Outcome {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The error a retired nonblocking collective's request ended with, if its attachment kept
/// one.
pub(crate) fn outcome_of(mut a: Box<dyn Attachment>) -> Option<MpiError> {
    a.as_any_mut()
        .downcast_mut::<Outcome>()?
        .0
        .borrow_mut()
        .take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_have_mpich_request_kind_bits() {
        let h = crate::handle::direct(Kind::Request, 5 << INDEX_BITS | 42);
        assert_eq!(h as u32 & 0xfc00_0000, 0xac00_0000);
        assert_ne!(h, MPI_REQUEST_NULL);
        assert_eq!(h as u32 & INDEX_MASK, 42);
    }
}
