//! Collective operations: the blocking and nonblocking collectives of MPI on
//! intra-communicators, and the few the library itself needs (for communicator creation).
//!
//! ```text
//!   MPI_Allreduce ─▶ checks (api) ─▶ algorithm (reduce.rs, ...) fills a Builder ─▶ Schedule
//!        blocking:    Plan::run: rounds of engine transfers and local steps, to the end,
//!                     in the progress engine's one waiting loop
//!        nonblocking: an Operation of the progress engine under the call's request,
//!                     advanced on every turn of the engine, whatever call turns it
//! ```
//!
//! **One implementation per algorithm.** Every algorithm is a function that describes what
//! this rank does as a schedule ([`sched`]): rounds of sends, receives and local steps (copy,
//! reduce). The blocking call runs the schedule to completion at once; the nonblocking call
//! hands it to the progress engine ([`mpich_channel::Engine::start`]), which advances it on
//! every turn, whatever call turns the engine (there is no progress thread: any blocking call,
//! `MPI_Test` of any request, `MPI_Wait`, moves every nonblocking collective in flight on, so
//! ranks that wait for their requests in different orders, or wait for something else, do not
//! deadlock: MPI's progress rule).
//! The algorithms are MPICH's, chosen by message size and process count as MPICH chooses
//! them (see each module).
//!
//! **Errors.** Arguments are checked before anything is sent, so a call that fails a check
//! leaves no trace (`MPI_ERRORS_RETURN` programs go on). A message longer than its receive
//! buffer does not stop the schedule: the rank finishes its part (so the others finish too)
//! and reports `MPI_ERR_TRUNCATE` at the end.
//!
//! **Messages.** Collective traffic travels on the communicator's collective context, so it
//! never meets the program's point-to-point messages, with tags made of a per-communicator
//! sequence number and the algorithm's step (below `0x2000_0000`, the range this module owns).
//!
//! Modules: [`sched`] (the engine), [`buf`] (datatype layouts, packing, the bridge to the
//! reduction operations), [`bcast`] (barrier, broadcast), [`gather`] (gather, scatter and
//! their `v` forms), [`allgather`], [`alltoall`], [`reduce`] (reduce, allreduce,
//! reduce-scatter, scan, exscan), and `api` (the MPI functions and their argument checks).

mod allgather;
mod alltoall;
mod api;
mod bcast;
mod buf;
mod gather;
mod reduce;
mod sched;

use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::p2p::request::Outcome;
use crate::runtime::Runtime;
use buf::Layout;
use mpich_channel::{Adi, AdiError, Operation, ReqId, Status};
use sched::{Builder, Reducer};
pub(crate) use sched::Schedule;

/// The finished schedule kept for reuse, if any.
pub(crate) fn take_spare(rt: &mut Runtime) -> Option<Schedule> {
    rt.coll_spare.take()
}

/// Keeps a finished, emptied schedule for the next one to reuse.
pub(crate) fn keep_spare(rt: &mut Runtime, s: Schedule) {
    rt.coll_spare = Some(s);
}

/// The sequence number of the next collective on `comm` (all ranks of `comm` count alike).
pub(crate) fn next_seq(rt: &mut Runtime, comm: CommIdx) -> u32 {
    let c = rt.comms.get_mut(comm);
    let seq = c.coll_seq;
    c.coll_seq = seq.wrapping_add(1);
    seq
}

/// A nonblocking collective as an operation of the progress engine: its schedule, and where
/// it leaves the error it ends with (its request's attachment, [`Outcome`]).
struct Collective {
    plan: Schedule,
    outcome: Outcome,
}

impl Operation for Collective {
    fn poll(&mut self, p2p: &mut Adi) -> Result<Option<Status>, AdiError> {
        if !self.plan.poll(p2p)? {
            return Ok(None);
        }
        let mut status = Status::default();
        if let Some(e) = self.plan.take_error() {
            status.error = e.class;
            *self.outcome.0.borrow_mut() = Some(e);
        }
        Ok(Some(status))
    }
}

/// Starts a nonblocking collective: its first rounds go out now, the engine does the rest;
/// returns its request.
fn start(rt: &mut Runtime, s: Schedule) -> MpiResult<ReqId> {
    let comm = s.comm;
    let outcome = Outcome::default();
    let op = Box::new(Collective { plan: s, outcome: outcome.clone() });
    let id = rt.engine.start(op, comm as u32).map_err(|e| MpiError::from(e).on(comm))?;
    rt.engine.p2p().attach(id, Box::new(outcome));
    Ok(id)
}

// ---- The library's own collectives (communicator creation) ----

/// Blocking allreduce of `words` with bitwise AND on communicator `comm` (used to agree on
/// context ids); safe to call inside comm-creating calls.
pub(crate) fn allreduce_band_u64(
    rt: &mut Runtime,
    comm: CommIdx,
    words: &mut [u64],
) -> MpiResult<()> {
    let lay = Layout::words(8);
    let mut b = Builder::new(rt, comm);
    b.set_reducer(Reducer::BandU64);
    reduce::allreduce(
        &mut b,
        None,
        words.as_mut_ptr().cast(),
        words.len(),
        &lay,
        true,
    );
    b.finish().run(rt)
}

/// Blocking allgather of fixed-size byte blocks on `comm` (block i = rank i's bytes).
pub(crate) fn allgather_bytes(
    rt: &mut Runtime,
    comm: CommIdx,
    mine: &[u8],
    all: &mut [u8],
) -> MpiResult<()> {
    let mut b = Builder::new(rt, comm);
    assert_eq!(
        all.len(),
        mine.len() * b.size,
        "allgather_bytes: one block per rank"
    );
    let m = gather::Part {
        base: mine.as_ptr().cast_mut(),
        count: mine.len(),
        lay: Layout::BYTES,
    };
    let r = gather::Part {
        base: all.as_mut_ptr(),
        count: mine.len(),
        lay: Layout::BYTES,
    };
    allgather::allgather(&mut b, Some(&m), &r);
    b.finish().run(rt)
}

/// Blocking barrier on `comm`.
#[allow(dead_code)] // offered to the communicator code, which may not need it
pub(crate) fn barrier(rt: &mut Runtime, comm: CommIdx) -> MpiResult<()> {
    let mut b = Builder::new(rt, comm);
    bcast::barrier(&mut b);
    b.finish().run(rt)
}
