//! Collective operations: the blocking and nonblocking collectives of MPI on
//! intra-communicators and intercommunicators ([`inter`]: every collective MPI defines there,
//! as schedules built from the intra algorithms run in each group plus transfers between the
//! groups), and the few the library itself needs (for communicator creation).
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
//! every turn that something arrived or left (a schedule moves only when one of its transfers
//! completes: `Operation::moves_on_events`, so the thousands of idle turns of a wait skip it),
//! whatever call turns the engine (any blocking call, `MPI_Test` of any request,
//! `MPI_Wait`, moves every nonblocking collective in flight on, so ranks that wait for their
//! requests in different orders, or wait for something else, do not deadlock: MPI's progress
//! rule; unless `MPI_ASYNC_PROGRESS=1` starts the library's progress thread,
//! [`crate::runtime::progress`], nothing moves them between the program's calls).
//! The algorithms are MPICH's, chosen by message size and process count as MPICH chooses
//! them (see each module).
//!
//! **Short blocking collectives skip the schedule** ([`direct`]): `MPI_Allreduce` of short
//! contiguous data, `MPI_Bcast` on a binomial tree of contiguous data and `MPI_Barrier` run
//! their algorithm's steps straight through the engine (sends that go out at once, the
//! engine's blocking receive), with the schedule's peers, tags and reduction order, so their
//! results are the schedule's and the two paths interoperate rank by rank; so do blocking
//! `MPI_Neighbor_alltoall`/`_allgather` of contiguous blocks ([`neighbor`]). Within a
//! schedule too, a short send of contiguous data goes out at once when the route takes it
//! (no engine request to post, poll and reap).
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
//! Modules: [`sched`] (the engine), [`direct`] (short blocking collectives without a
//! schedule), [`buf`] (datatype layouts, packing, the bridge to the
//! reduction operations), [`bcast`] (barrier, broadcast), [`gather`] (gather, scatter and
//! their `v` forms), [`allgather`], [`alltoall`], [`reduce`] (reduce, allreduce,
//! reduce-scatter, scan, exscan), [`inter`] (all of them on intercommunicators; each `api`
//! builder hands an intercommunicator there first), [`neighbor`] (the neighbourhood collectives),
//! [`persistent`] (persistent collectives: a schedule built once, replayed at each
//! `MPI_Start`; a schedule that only receives then forwards, a broadcast's tree, runs there
//! without its rounds and is usually over at `MPI_Start`), and `api` (the MPI functions
//! and their argument checks, by family).
//!
//! **Owns** the spare schedule a blocking collective reuses (kept in the running state).
//! **Entry:** [`Cx`], the engine and the tables a collective reads (`Runtime::coll` makes one
//! per call); the library's own collectives ([`allreduce_band_u64`], [`allgather_bytes`]) take
//! only the pieces communicator creation has.

mod allgather;
mod alltoall;
mod api;
mod bcast;
mod buf;
pub(crate) mod direct;
mod gather;
mod inter;
mod neighbor;
pub(crate) mod persistent;
mod reduce;
mod sched;

use crate::comm::{CommIdx, CommTable};
use crate::datatype::TypeTable;
use crate::error::{MpiError, MpiResult};
use crate::op::OpTable;
use crate::p2p::request::Outcome;
use buf::Layout;
use mpich_channel::{Adi, AdiError, Engine, Operation, ReqId, Status};
pub(crate) use sched::Schedule;
use sched::{Builder, Reducer};

/// What the collectives work on: the progress engine, the communicators (whose sequence
/// numbers they take), the datatypes and operations their arguments name, and the allocations
/// of the last finished blocking collective, which the next one reuses. A bundle of borrows of
/// the running state's fields, made per call (`Runtime::coll`); it compiles away.
pub(crate) struct Cx<'a> {
    pub engine: &'a mut Engine,
    pub comms: &'a mut CommTable,
    pub types: &'a TypeTable,
    pub ops: &'a OpTable,
    pub spare: &'a mut Option<Schedule>,
    /// Whether the call is a nonblocking or persistent collective (its schedules take their
    /// sequence numbers from that family: `Comm::next_coll_seq`); set by those entry points.
    pub nonblocking: bool,
}

impl Cx<'_> {
    /// An empty schedule on `comm`, taking its next collective sequence number.
    pub fn builder(&mut self, comm: CommIdx) -> Builder {
        Builder::new(self.comms, self.spare, comm, self.nonblocking)
    }

    /// Runs a schedule to completion (a blocking collective).
    pub fn run(&mut self, s: Schedule) -> MpiResult<()> {
        s.run(self.engine, self.spare)
    }
}

/// A nonblocking collective as an operation of the progress engine: its schedule, and where
/// it leaves the error it ends with (its request's attachment, [`Outcome`]).
struct Collective {
    plan: Schedule,
    outcome: Outcome,
}

impl Operation for Collective {
    /// A schedule moves when one of its transfers completes.
    fn moves_on_events(&self) -> bool {
        true
    }

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
fn start(engine: &mut Engine, s: Schedule) -> MpiResult<ReqId> {
    let comm = s.comm;
    let outcome = Outcome::default();
    let op = Box::new(Collective {
        plan: s,
        outcome: outcome.clone(),
    });
    let id = engine
        .start(op, comm)
        .map_err(|e| MpiError::from(e).on(comm))?;
    engine.p2p().attach(id, Box::new(outcome));
    Ok(id)
}

// ---- The library's own collectives (communicator creation) ----

/// The members of a communicator as a schedule sees them, and the sequence number of one
/// collective on it: captured by [`Team::of`] in the call that starts the collective, so that
/// the rounds of an operation that runs on inside the progress engine can be built there
/// (communicator creation's nonblocking agreement, `comm::agree`).
pub(crate) struct Team {
    /// Engine rank of each rank of the communicator (of its local group).
    pub globals: Vec<usize>,
    /// Engine rank of each rank of an intercommunicator's remote group (empty otherwise).
    pub remote: Vec<usize>,
    pub rank: usize,
    pub ctx: u16,
    pub seq: u32,
    pub comm: CommIdx,
}

impl Team {
    /// `comm`'s members; takes its next collective sequence number (every member calls this
    /// in the same order, as for any collective).
    pub fn of(comms: &mut CommTable, comm: CommIdx) -> Team {
        let seq = comms.get_mut(comm).next_coll_seq(false);
        let c = comms.get(comm);
        let remote = if c.is_inter() {
            (0..c.remote_size()).map(|r| c.to_global(r)).collect()
        } else {
            Vec::new()
        };
        Team {
            globals: (0..c.size).map(|r| c.local_global(r)).collect(),
            remote,
            rank: c.rank,
            ctx: c.coll_ctx,
            seq,
            comm,
        }
    }
}

impl Team {
    /// The members of `group` (engine ranks; this process is its member `rank`), a subgroup
    /// of `comm`, for an exchange among them only that the program names by `tag`
    /// (`MPI_Comm_create_group`): no sequence number of `comm` is taken (the other processes
    /// of `comm` take no part), and the schedules' tags lie apart from `comm`'s collectives
    /// ([`sched::SUBGROUP`]).
    pub fn subgroup(
        comms: &CommTable,
        comm: CommIdx,
        group: Vec<usize>,
        rank: usize,
        tag: std::ffi::c_int,
    ) -> Team {
        Team::named(comms.get(comm).coll_ctx, comm, group, rank, tag as u32)
    }

    /// The processes `group` (engine ranks; this process is its member `rank`) exchanging on
    /// context `ctx` (their requests owned by communicator `comm`) under the name `name`, for
    /// an exchange among them only ([`Team::subgroup`], and the sessions' bootstrap exchanges
    /// on their own context, named by a hash of the string tag and the members): the
    /// schedules' tags carry 14 bits of the name ([`sched::SUBGROUP`]).
    pub fn named(ctx: u16, comm: CommIdx, group: Vec<usize>, rank: usize, name: u32) -> Team {
        Team {
            globals: group,
            remote: Vec::new(),
            rank,
            ctx,
            seq: sched::SUBGROUP | name & !sched::SUBGROUP,
            comm,
        }
    }
}

/// One allreduce with bitwise AND of the `count` words at `words` among `team`, as a schedule
/// for the caller to poll ([`Schedule::poll`]). Every schedule built for one team uses the same
/// tags: the caller runs them one after another (each member the same number), so the k-th
/// message between two members matches the k-th receive (MPI's non-overtaking order).
/// `words` must stay put and untouched until the schedule completes.
pub(crate) fn band_u64_schedule(team: &Team, words: *mut u64, count: usize) -> MpiResult<Schedule> {
    let lay = Layout::words(8);
    let mut b = Builder::for_team(team);
    b.set_reducer(Reducer::BandU64);
    if team.remote.is_empty() {
        reduce::allreduce(&mut b, None, words.cast(), count, &lay, true);
    } else {
        inter::allreduce_both(&mut b, words.cast(), count, &lay);
    }
    b.finish()
}

/// Blocking allgather of fixed-size byte blocks on `comm` (block i = rank i's bytes).
pub(crate) fn allgather_bytes(
    engine: &mut Engine,
    comms: &mut CommTable,
    spare: &mut Option<Schedule>,
    comm: CommIdx,
    mine: &[u8],
    all: &mut [u8],
) -> MpiResult<()> {
    allgather_bytes_schedule(comms, spare, comm, mine, all)?.run(engine, spare)
}

/// [`allgather_bytes`]'s schedule, for a caller that moves it on itself ([`Schedule::poll`]:
/// a blocking call under `MPI_THREAD_MULTIPLE` whose wait lets the process's lock go). The
/// schedule points to `mine` and `all`, which must stay put and untouched until it completes.
pub(crate) fn allgather_bytes_schedule(
    comms: &mut CommTable,
    spare: &mut Option<Schedule>,
    comm: CommIdx,
    mine: &[u8],
    all: &mut [u8],
) -> MpiResult<Schedule> {
    let mut b = Builder::new(comms, spare, comm, false);
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
    b.finish()
}

/// The barrier's schedule on `comm` (the one `MPI_Barrier` runs under
/// `MPI_THREAD_MULTIPLE`), for a caller that moves it on itself ([`Schedule::poll`]) in a
/// wait that lets the process's lock go (a window's fence or free).
pub(crate) fn barrier_schedule(
    comms: &mut CommTable,
    spare: &mut Option<Schedule>,
    comm: CommIdx,
) -> MpiResult<Schedule> {
    let mut b = Builder::new(comms, spare, comm, false);
    bcast::barrier(&mut b);
    b.finish()
}

/// Blocking barrier on `comm`.
#[allow(dead_code)] // offered to the communicator code, which may not need it
pub(crate) fn barrier(
    engine: &mut Engine,
    comms: &mut CommTable,
    spare: &mut Option<Schedule>,
    comm: CommIdx,
) -> MpiResult<()> {
    let mut b = Builder::new(comms, spare, comm, false);
    bcast::barrier(&mut b);
    b.finish()?.run(engine, spare)
}
