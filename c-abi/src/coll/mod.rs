//! Collective operations: the blocking and nonblocking collectives of MPI on
//! intra-communicators, and the few the library itself needs (for communicator creation).
//!
//! ```text
//!   MPI_Allreduce ─▶ checks (api) ─▶ algorithm (reduce.rs, ...) fills a Builder ─▶ Schedule
//!        blocking:    Plan::run: rounds of engine transfers and local steps, to the end
//!        nonblocking: stored in Schedules, advanced by MPI_Test / MPI_Wait (Op::Coll)
//! ```
//!
//! **One implementation per algorithm.** Every algorithm is a function that describes what
//! this rank does as a schedule ([`sched`]): rounds of sends, receives and local steps (copy,
//! reduce). The blocking call runs the schedule to completion at once; the nonblocking call
//! keeps it and advances it whenever the program tests or waits (there is no progress thread:
//! `MPI_Test` on the request, `MPI_Wait`, and any collective that waits move every
//! nonblocking collective in flight on, so ranks that wait for their requests in different
//! orders do not deadlock; once a round is posted, the engine moves its data in any call).
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
use crate::state::Runtime;
use buf::Layout;
use mpich_channel::{ReqId, Status, Waiter};
use sched::{Builder, Reducer, Schedule};
use std::collections::HashMap;

/// The id of an in-flight nonblocking collective in [`Schedules`].
pub(crate) type CollId = u32;

/// Every nonblocking collective in flight in this process.
#[derive(Default)]
pub(crate) struct Schedules {
    live: HashMap<CollId, Schedule>,
    next_id: CollId,
    /// A finished schedule whose allocations the next one reuses.
    spare: Option<Schedule>,
}

impl Schedules {
    pub fn new() -> Schedules {
        Schedules::default()
    }

    fn insert(&mut self, s: Schedule) -> CollId {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.live.insert(id, s);
        id
    }
}

/// The finished schedule kept for reuse, if any.
pub(crate) fn take_spare(rt: &mut Runtime) -> Option<Schedule> {
    rt.colls.spare.take()
}

/// Keeps a finished, emptied schedule for the next one to reuse.
pub(crate) fn keep_spare(rt: &mut Runtime, s: Schedule) {
    rt.colls.spare = Some(s);
}

/// The sequence number of the next collective on `comm` (all ranks of `comm` count alike).
pub(crate) fn next_seq(rt: &mut Runtime, comm: CommIdx) -> u32 {
    let c = rt.comms.get_mut(comm);
    let seq = c.coll_seq;
    c.coll_seq = seq.wrapping_add(1);
    seq
}

fn unknown(id: CollId) -> MpiError {
    MpiError::internal(format!("nonblocking collective {id} is not in flight"))
}

/// Advances nonblocking collective `id` without blocking; `true` once it is complete, in which
/// case its schedule has been released and `id` must not be used again.
pub(crate) fn test(rt: &mut Runtime, id: CollId) -> MpiResult<bool> {
    let mut s = rt.colls.live.remove(&id).ok_or_else(|| unknown(id))?;
    rt.adi.progress().map_err(MpiError::from)?;
    let done = s.poll(rt);
    if matches!(done, Ok(false)) {
        rt.colls.live.insert(id, s);
        progress_all(rt)?;
    }
    done
}

/// Drives nonblocking collective `id` to completion (backing off while it waits) and releases
/// it.
pub(crate) fn wait(rt: &mut Runtime, id: CollId) -> MpiResult<()> {
    let s = rt.colls.live.remove(&id).ok_or_else(|| unknown(id))?;
    s.run(rt)
}

/// Whether a nonblocking collective is in flight. While one is, every blocking call of the
/// library waits through [`wait_engine`] (or calls [`progress_all`] in its waiting loop), so a
/// rank blocked in, say, `MPI_Recv` still forwards the rounds of its nonblocking collectives
/// that other ranks are waiting for (MPI's progress rule). One compare on the fast path.
#[inline(always)]
pub(crate) fn in_flight(rt: &Runtime) -> bool {
    !rt.colls.live.is_empty()
}

/// Waits for engine request `id` while moving every nonblocking collective in flight on.
pub(crate) fn wait_engine(rt: &mut Runtime, id: ReqId) -> MpiResult<Status> {
    let mut waiter = Waiter::new();
    loop {
        if let Some(s) = rt.adi.test(id)? {
            return Ok(s);
        }
        progress_or_idle(rt, &mut waiter)?;
    }
}

/// One turn of a waiting loop of the library: moves every nonblocking collective in flight on
/// ([`progress_all`]), then drives the engine and backs off when nothing happened
/// (`Adi::progress_or_idle`). The library's blocking waits go through here (the buffered-send
/// buffer's wait for space, which has only the engine, aside).
pub(crate) fn progress_or_idle(rt: &mut Runtime, waiter: &mut Waiter) -> MpiResult<()> {
    progress_all(rt)?;
    Ok(rt.adi.progress_or_idle(waiter)?)
}

/// Advances every nonblocking collective in flight without blocking (completed ones stay
/// stored until their request is tested or waited for). Called by the waiting loops
/// ([`progress_or_idle`]), so a program blocked anywhere still lets its nonblocking
/// collectives move on, as MPI's progress rule asks; it allocates nothing, as it runs on each
/// turn of those loops.
pub(crate) fn progress_all(rt: &mut Runtime) -> MpiResult<()> {
    if rt.colls.live.is_empty() {
        return Ok(());
    }
    // The table is taken out while its schedules are polled (each needs the runtime); polling
    // starts no collective, but any that appeared meanwhile is kept.
    let mut live = std::mem::take(&mut rt.colls.live);
    for s in live.values_mut() {
        // An error stays with its schedule: its own request reports it when tested.
        let _ = s.poll(rt);
    }
    live.extend(rt.colls.live.drain());
    rt.colls.live = live;
    Ok(())
}

/// Starts a nonblocking collective: its first rounds go out now; returns its id.
fn start(rt: &mut Runtime, mut s: Schedule) -> MpiResult<CollId> {
    s.poll(rt)?;
    Ok(rt.colls.insert(s))
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
