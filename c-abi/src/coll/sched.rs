//! The schedule engine: how every collective runs, blocking or not.
//!
//! ```text
//!   Schedule = [Round 0, Round 1, ...]        Round = locals (copy, reduce) then transfers
//!   start round k: run its locals, post its sends and receives (engine requests)
//!   round k complete (every transfer done) ──▶ start round k+1 ... ──▶ done
//! ```
//!
//! An algorithm is written once, as a function that fills a [`Builder`] with what this rank
//! does; the result runs to completion at once (blocking collectives, [`Plan::run`]) or is
//! stored and advanced from `MPI_Test`/`MPI_Wait` (nonblocking ones, [`Plan::poll`]).
//! Local steps placed after transfers start a new round, so a step always sees the data the
//! transfers before it moved.
//! A persistent collective's schedule is *replayable* ([`Plan::make_replayable`]): its rounds
//! stay in place as they run, and [`Plan::rewind`] makes it ready to run again on the same
//! buffers, peers and tags (`super::persistent`).
//!
//! **Sends.** A short send of contiguous data goes out at once when the route takes it
//! (`Adi::send_now`, as a blocking send's does): no engine request to post, poll and reap, and
//! the send is complete (its buffer free) before the round goes on. The others are engine
//! requests. Either way messages leave in the order posted, so matching is unchanged.
//!
//! **Buffers.** Every transfer and copy is `(base, count, Layout)`: `count` elements of a
//! datatype whose element `i` starts at `base + i * extent`. Contiguous layouts go to the
//! engine in place; others are packed into (or received into and unpacked from) a staging
//! buffer owned by the transfer. On the wire a message is always the packed data, so the
//! sender's and receiver's types need only agree in their type signatures, as MPI requires.
//! Temporary buffers ([`Builder::temp`]) belong to the schedule: they are allocated when it is
//! built, 16-byte aligned (user operations cast them to `double *`), and live until it is
//! dropped, so the pointers the steps hold stay valid.
//!
//! **Tags.** Each schedule gets a 17-bit sequence number from its communicator; a transfer's
//! tag is that number and a 12-bit step chosen by the algorithm, so consecutive and
//! overlapping collectives on one communicator never match each other's messages (all ranks
//! call collectives in the same order, so they agree on the number). Blocking collectives
//! and nonblocking or persistent ones count apart, in the two halves of the number
//! (`Comm::next_coll_seq`), as MPICH tags them apart.

use super::buf::Layout;
use crate::abi::*;
use crate::comm::{CommIdx, CommTable};
use crate::error::{MpiError, MpiResult};
use mpich_channel::{Adi, AdiError, Engine, ReqId, SendMode};

/// Bits of the tag that carry the algorithm's step.
const STEP_BITS: u32 = 12;
/// Bits of the tag that carry the collective's sequence number (tags stay below 2^29).
const SEQ_BITS: u32 = 17;

/// The mark of a sequence number that is no count of the communicator's collectives but names
/// an exchange among a subgroup of it by the program's tag (`MPI_Comm_create_group`'s
/// agreement, [`super::Team::subgroup`]): its tags lie apart from every collective's, at
/// [`SUBGROUP_TAGS`] plus 14 bits of the program's tag and the step.
pub(crate) const SUBGROUP: u32 = 1 << 31;
/// Where the tags of subgroup exchanges start (above the collectives' and `comm::net`'s).
const SUBGROUP_TAGS: u32 = 0x3A00_0000;
/// Bits of the program's tag a subgroup exchange's tags carry.
const SUBGROUP_TAG_BITS: u32 = 14;

/// The engine tag of step `step` of the collective with sequence number `seq`.
pub(super) fn tag(seq: u32, step: u32) -> i32 {
    if seq & SUBGROUP != 0 {
        let named = seq & ((1 << SUBGROUP_TAG_BITS) - 1);
        return (SUBGROUP_TAGS | named << STEP_BITS | (step & ((1 << STEP_BITS) - 1))) as i32;
    }
    let seq = seq & ((1 << SEQ_BITS) - 1);
    ((seq << STEP_BITS) | (step & ((1 << STEP_BITS) - 1))) as i32
}

/// How the reductions of a schedule combine data.
#[derive(Debug, Clone)]
pub(crate) enum Reducer {
    /// An MPI operation on a datatype, resolved when the schedule was built.
    Op(crate::op::Reduction),
    /// Bitwise AND of `u64` words (the library's own agreement on context ids).
    BandU64,
}

/// A step that runs in this process.
enum Local {
    /// Copies `count` elements laid out as `src_lay` at `src` into `dst` laid out as
    /// `dst_lay`, as packed data (the two type signatures agree).
    Copy {
        src: *const u8,
        src_count: usize,
        src_lay: Layout,
        dst: *mut u8,
        dst_count: usize,
        dst_lay: Layout,
    },
    /// `inout = in (op) inout` on `count` elements.
    Reduce {
        input: *const u8,
        inout: *mut u8,
        count: usize,
    },
}

/// A message this process sends or receives.
struct Xfer {
    send: bool,
    /// Engine rank of the peer.
    peer: usize,
    step: u32,
    base: *mut u8,
    count: usize,
    lay: Layout,
}

#[derive(Default)]
struct Round {
    locals: Vec<Local>,
    xfers: Vec<Xfer>,
}

/// A transfer in the engine.
struct Active {
    req: ReqId,
    /// Bytes a receive expects (a shorter message is accepted, a longer one is truncated).
    expect: usize,
    /// The staging of a non-contiguous layout (boxed: most transfers have none, and the list
    /// of transfers in flight stays small to move).
    staged: Option<Box<Staged>>,
}

/// The packed data of a transfer of scattered data, and for a receive where to unpack it.
struct Staged {
    buf: Vec<u8>,
    unpack: Option<(*mut u8, usize, Layout)>,
}

/// A collective operation of this process ([`Plan`]), boxed: it moves between the builder,
/// the caller and the table of nonblocking collectives, and a pointer moves cheaply.
pub(crate) type Schedule = Box<Plan>;

/// A collective operation of this process: its rounds and where it is in them.
pub(crate) struct Plan {
    rounds: Vec<Round>,
    next: usize,
    active: Vec<Active>,
    /// Temporary buffers; their heap blocks never move.
    _temps: Vec<Vec<u128>>,
    reducer: Option<Reducer>,
    /// The first error of a transfer (a truncated message), reported at the end.
    error: Option<MpiError>,
    ctx: u16,
    seq: u32,
    pub comm: CommIdx,
    /// Allocations kept from earlier schedules for this one to reuse ([`Plan::recycle`]):
    /// emptied rounds, temporary buffers, and the builder's rank table.
    spare_rounds: Vec<Round>,
    spare_temps: Vec<Vec<u128>>,
    spare_globals: Vec<usize>,
    /// Rounds stay in place once started, so the schedule can run again ([`Plan::rewind`]):
    /// a persistent collective's.
    replayable: bool,
}

/// A schedule of contiguous messages and nothing else ([`Plan::relay`]), described for a
/// runner that needs no rounds (`super::persistent`'s short path). Two shapes: a *forward*
/// relay receives at most one message and then sends (a broadcast's binomial tree: the sends
/// carry what the receive brought, so they wait for it); an *exchange* posts all its receives
/// and sends at once (a neighbourhood collective's one round).
pub(crate) struct Relay {
    /// The receives (at most one in a forward relay, none at a broadcast's root), in the
    /// schedule's order.
    pub recvs: Vec<Transfer>,
    /// The sends, in the schedule's order.
    pub sends: Vec<Transfer>,
    /// The sends wait for the receive (a forward relay); otherwise all go at once.
    pub forward: bool,
    pub ctx: u16,
    pub comm: CommIdx,
}

/// One message of a [`Relay`]: `bytes` contiguous bytes at `data`, to or from engine rank
/// `peer`, with engine tag `tag`.
#[derive(Clone, Copy)]
pub(crate) struct Transfer {
    pub peer: usize,
    pub tag: i32,
    pub data: *mut u8,
    pub bytes: usize,
}

/// One round of a chain ([`Plan::chain`]): after the round's local steps, at most one
/// contiguous message out and one in.
#[derive(Clone, Copy)]
pub(crate) struct Link {
    pub send: Option<Transfer>,
    pub recv: Option<Transfer>,
}

/// Temporary buffers kept for reuse, at most this many and none larger (in 16-byte words).
const SPARE_TEMPS: usize = 8;
const SPARE_TEMP_WORDS: usize = (4 << 20) / 16;

/// Fills a schedule for this rank: the algorithms' interface.
pub(crate) struct Builder {
    s: Schedule,
    /// A temporary that could not be allocated: [`Builder::finish`] reports it, and the
    /// schedule never runs.
    no_mem: Option<MpiError>,
    /// Engine rank of each local rank of the communicator.
    globals: Vec<usize>,
    /// Engine rank of each rank of an intercommunicator's remote group (empty for an
    /// intracommunicator): the peers of [`Builder::send_remote`] and [`Builder::recv_remote`].
    remote: Vec<usize>,
    pub rank: usize,
    /// The size of the (local) group.
    pub size: usize,
}

impl Plan {
    /// A plan with nothing in it yet, on communicator `comm` (context and sequence number 0
    /// until the builder sets them).
    fn empty(comm: CommIdx) -> Schedule {
        Box::new(Plan {
            rounds: Vec::new(),
            next: 0,
            active: Vec::new(),
            _temps: Vec::new(),
            reducer: None,
            error: None,
            ctx: 0,
            seq: 0,
            comm,
            spare_rounds: Vec::new(),
            spare_temps: Vec::new(),
            spare_globals: Vec::new(),
            replayable: false,
        })
    }
}

impl Builder {
    /// An empty schedule on communicator `comm`, taking its next collective sequence number.
    /// A blocking collective on small data is a few messages, and allocating its schedule
    /// afresh cost about as much as sending them, so the allocations of the last finished
    /// schedule are reused (`spare`).
    pub fn new(
        comms: &mut CommTable,
        spare: &mut Option<Schedule>,
        comm: CommIdx,
        nonblocking: bool,
    ) -> Builder {
        let seq = comms.get_mut(comm).next_coll_seq(nonblocking);
        let mut s = spare.take().unwrap_or_else(|| Plan::empty(comm));
        let c = comms.get(comm);
        let mut globals = std::mem::take(&mut s.spare_globals);
        globals.clear();
        globals.extend((0..c.size).map(|r| c.local_global(r)));
        let remote = if c.is_inter() {
            (0..c.remote_size()).map(|r| c.to_global(r)).collect()
        } else {
            Vec::new()
        };
        let first = s.spare_rounds.pop().unwrap_or_default();
        s.rounds.push(first);
        (s.ctx, s.seq, s.comm) = (c.coll_ctx, seq, comm);
        Builder {
            s,
            no_mem: None,
            globals,
            remote,
            rank: c.rank,
            size: c.size,
        }
    }

    /// An empty schedule among `team`, which was captured (with its sequence number) while
    /// the communicator was at hand: for an operation that builds further rounds inside the
    /// progress engine, where the communicator table cannot be reached.
    pub fn for_team(team: &super::Team) -> Builder {
        let mut s = Plan::empty(team.comm);
        (s.ctx, s.seq) = (team.ctx, team.seq);
        s.rounds.push(Round::default());
        Builder {
            s,
            no_mem: None,
            globals: team.globals.clone(),
            remote: team.remote.clone(),
            rank: team.rank,
            size: team.globals.len(),
        }
    }

    pub fn set_reducer(&mut self, r: Reducer) {
        self.s.reducer = Some(r);
    }

    /// Room for `count` elements of `lay`, as an element base address.
    pub fn temp(&mut self, count: usize, lay: &Layout) -> *mut u8 {
        let words = lay.span(count).div_ceil(16).max(1);
        let spare = self
            .s
            .spare_temps
            .iter()
            .position(|t| t.capacity() >= words);
        let mut v = spare
            .map(|i| self.s.spare_temps.swap_remove(i))
            .unwrap_or_default();
        v.clear();
        if let Err(e) = crate::error::grow(&mut v, words, "a collective's temporary buffer") {
            // Never used: the schedule fails in `finish` before anything runs.
            self.no_mem.get_or_insert(e);
            return std::ptr::NonNull::<u128>::dangling().as_ptr().cast();
        }
        let p = v.as_mut_ptr().cast::<u8>();
        self.s._temps.push(v);
        p.wrapping_offset(-lay.true_lb)
    }

    /// Room for `bytes` packed bytes.
    pub fn temp_bytes(&mut self, bytes: usize) -> *mut u8 {
        self.temp(bytes, &Layout::BYTES)
    }

    fn round(&mut self) -> &mut Round {
        self.s.rounds.last_mut().expect("a schedule has a round")
    }

    /// Starts a new round (reusing an emptied one if there is one).
    fn new_round(&mut self) {
        let r = self.s.spare_rounds.pop().unwrap_or_default();
        self.s.rounds.push(r);
    }

    /// Ends the current round: what follows waits for its transfers.
    pub fn fence(&mut self) {
        if !self.round().xfers.is_empty() || !self.round().locals.is_empty() {
            self.new_round();
        }
    }

    fn local(&mut self, l: Local) {
        if !self.round().xfers.is_empty() {
            self.new_round();
        }
        self.round().locals.push(l);
    }

    /// Sends `count` elements at `base` to local rank `peer`.
    pub fn send(&mut self, peer: usize, step: u32, base: *const u8, count: usize, lay: &Layout) {
        let peer = self.globals[peer];
        self.round().xfers.push(Xfer {
            send: true,
            peer,
            step,
            base: base.cast_mut(),
            count,
            lay: lay.clone(),
        });
    }

    /// Receives up to `count` elements into `base` from local rank `peer`.
    pub fn recv(&mut self, peer: usize, step: u32, base: *mut u8, count: usize, lay: &Layout) {
        let peer = self.globals[peer];
        self.round().xfers.push(Xfer {
            send: false,
            peer,
            step,
            base,
            count,
            lay: lay.clone(),
        });
    }

    /// The size of an intercommunicator's remote group (0 for an intracommunicator).
    pub fn remote_size(&self) -> usize {
        self.remote.len()
    }

    /// Sends `count` elements at `base` to rank `peer` of the remote group (intercommunicators).
    pub fn send_remote(
        &mut self,
        peer: usize,
        step: u32,
        base: *const u8,
        count: usize,
        lay: &Layout,
    ) {
        let peer = self.remote[peer];
        self.round().xfers.push(Xfer {
            send: true,
            peer,
            step,
            base: base.cast_mut(),
            count,
            lay: lay.clone(),
        });
    }

    /// Receives up to `count` elements into `base` from rank `peer` of the remote group.
    pub fn recv_remote(
        &mut self,
        peer: usize,
        step: u32,
        base: *mut u8,
        count: usize,
        lay: &Layout,
    ) {
        let peer = self.remote[peer];
        self.round().xfers.push(Xfer {
            send: false,
            peer,
            step,
            base,
            count,
            lay: lay.clone(),
        });
    }

    /// Copies data between two buffers (packed data: the signatures agree).
    pub fn copy(
        &mut self,
        src: *const u8,
        src_count: usize,
        src_lay: &Layout,
        dst: *mut u8,
        dst_count: usize,
        dst_lay: &Layout,
    ) {
        if src_count == 0 || dst_count == 0 || std::ptr::eq(src, dst) && src_lay.same(dst_lay) {
            return;
        }
        self.local(Local::Copy {
            src,
            src_count,
            src_lay: src_lay.clone(),
            dst,
            dst_count,
            dst_lay: dst_lay.clone(),
        });
    }

    /// `inout = in (op) inout` on `count` elements, with the schedule's reducer.
    pub fn reduce(&mut self, input: *const u8, inout: *mut u8, count: usize) {
        assert!(self.s.reducer.is_some(), "a reduction needs a reducer");
        if count > 0 {
            self.local(Local::Reduce {
                input,
                inout,
                count,
            });
        }
    }

    /// The schedule, or `MPI_ERR_NO_MEM` if a temporary could not be allocated (nothing of
    /// it has run: the caller's buffers are untouched).
    pub fn finish(mut self) -> MpiResult<Schedule> {
        if let Some(e) = self.no_mem.take() {
            return Err(e);
        }
        if self.round().xfers.is_empty()
            && self.round().locals.is_empty()
            && self.s.rounds.len() > 1
        {
            let r = self.s.rounds.pop().expect("more than one round");
            self.s.spare_rounds.push(r);
        }
        self.s.spare_globals = self.globals;
        Ok(self.s)
    }
}

impl Plan {
    /// Runs the schedule to completion (a blocking collective) in the progress engine's one
    /// waiting loop, so every other operation in flight moves on meanwhile: a peer may be
    /// waiting in one of them for this rank's next round before it can serve this schedule.
    pub fn run(
        mut self: Box<Self>,
        engine: &mut Engine,
        spare: &mut Option<Schedule>,
    ) -> MpiResult<()> {
        engine.block_on(|e| Ok::<_, MpiError>(self.poll(e.p2p())?.then_some(())))?;
        match self.error.take() {
            Some(e) => Err(e),
            None => {
                self.recycle(spare);
                Ok(())
            }
        }
    }

    /// Advances the schedule as far as it goes without waiting; `true` once complete. A
    /// message longer than its buffer does not stop it ([`Plan::take_error`] reports it at
    /// the end); only the engine's failures (a peer gone) are errors here.
    #[inline]
    pub fn poll(&mut self, adi: &mut Adi) -> Result<bool, AdiError> {
        // The common case while a collective waits (every turn of the engine polls it):
        // nothing of the round in flight has completed, so nothing can move.
        if !self.active.is_empty() && !self.active.iter().any(|a| adi.is_complete(a.req)) {
            return Ok(false);
        }
        self.advance(adi)
    }

    /// [`Plan::poll`] once something may move: reaps, starts the next rounds.
    #[inline(never)]
    fn advance(&mut self, adi: &mut Adi) -> Result<bool, AdiError> {
        loop {
            self.reap(adi)?;
            if !self.active.is_empty() {
                return Ok(false);
            }
            if self.next == self.rounds.len() {
                return Ok(true);
            }
            self.start_round(adi)?;
        }
    }

    /// Keeps the rounds in place as they run, so that the schedule can run again after
    /// [`Plan::rewind`] (a persistent collective: built once, replayed at each start).
    pub fn make_replayable(&mut self) {
        self.replayable = true;
    }

    /// Makes a complete replayable schedule ready to run again from its first round, on the
    /// same buffers, peers and tags.
    pub fn rewind(&mut self) {
        debug_assert!(self.replayable && self.active.is_empty());
        (self.next, self.error) = (0, None);
    }

    /// The error a complete schedule ended with (a truncated message, a failed reduction).
    pub fn take_error(&mut self) -> Option<MpiError> {
        self.error.take()
    }

    /// The schedule as a [`Relay`], if that is all it does: contiguous messages and no local
    /// step, either at most one receive and then sends (a broadcast's binomial tree on
    /// contiguous data: the root only sends, a leaf only receives, the others both), or one
    /// round of receives and sends that go at once (a neighbourhood collective on contiguous
    /// blocks).
    pub fn relay(&self) -> Option<Relay> {
        if self.rounds.len() > 2 || self.rounds.iter().any(|r| !r.locals.is_empty()) {
            return None;
        }
        if self
            .rounds
            .iter()
            .flat_map(|r| &r.xfers)
            .any(|x| !x.lay.contiguous())
        {
            return None;
        }
        let transfer = |x: &Xfer| self.transfer(x);
        let relay = |recvs: Vec<&Xfer>, sends: Vec<&Xfer>, forward| Relay {
            recvs: recvs.into_iter().map(transfer).collect(),
            sends: sends.into_iter().map(transfer).collect(),
            forward,
            ctx: self.ctx,
            comm: self.comm,
        };
        match self.rounds.as_slice() {
            [] => Some(relay(Vec::new(), Vec::new(), true)),
            [first, second] => match first.xfers.as_slice() {
                [r] if !r.send && second.xfers.iter().all(|x| x.send) => {
                    Some(relay(vec![r], second.xfers.iter().collect(), true))
                }
                _ => None,
            },
            [only] => {
                let (recvs, sends) = only.xfers.iter().partition(|x| !x.send);
                Some(relay(recvs, sends, false))
            }
            _ => None,
        }
    }

    /// A contiguous transfer as a [`Relay`]'s or a [`Link`]'s.
    fn transfer(&self, x: &Xfer) -> Transfer {
        Transfer {
            peer: x.peer,
            tag: tag(self.seq, x.step),
            data: x.lay.data_start(x.base.cast_const()).cast_mut(),
            bytes: x.lay.size * x.count,
        }
    }

    /// The schedule as a chain of [`Link`]s, one per round, if every round sends at most one
    /// contiguous message and receives at most one (its local steps before them, as always):
    /// recursive doubling (short `MPI_Allreduce`), binomial reduce and scan trees on
    /// contiguous data, the dissemination barrier. Its runner (`super::persistent`) keeps one
    /// request per direction instead of the list of transfers in flight.
    pub fn chain(&self) -> Option<Vec<Link>> {
        let mut links = Vec::with_capacity(self.rounds.len());
        for r in &self.rounds {
            let mut link = Link {
                send: None,
                recv: None,
            };
            for x in &r.xfers {
                let slot = if x.send {
                    &mut link.send
                } else {
                    &mut link.recv
                };
                if slot.is_some() || !x.lay.contiguous() {
                    return None;
                }
                *slot = Some(self.transfer(x));
            }
            links.push(link);
        }
        Some(links)
    }

    /// Runs round `i`'s local steps (a chain's runner: the transfers are its own); a failure
    /// becomes the schedule's error, and the collective goes on as in [`Plan::poll`].
    pub fn run_locals(&mut self, i: usize) {
        for l in &self.rounds[i].locals {
            if let Err(e) = self.run_local(l) {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Notes a receive that got more data than its `room` bytes (the schedule's error,
    /// reported at its end; the first one wins).
    pub fn note_truncated(&mut self, room: usize) {
        if self.error.is_none() {
            // Go on (the data this rank forwards is what it has), so that the other ranks
            // finish too; the error is reported when the schedule completes.
            self.error = Some(MpiError::new(
                MPI_ERR_TRUNCATE,
                format!("a collective received more data than the receive buffer holds (room for {room} bytes); every process must pass matching counts and type signatures"),
            ));
        }
    }

    /// The schedule's communicator's collective context.
    pub fn ctx(&self) -> u16 {
        self.ctx
    }

    /// Collects the transfers that completed.
    fn reap(&mut self, adi: &mut Adi) -> Result<(), AdiError> {
        let mut i = 0;
        while i < self.active.len() {
            if !adi.is_complete(self.active[i].req) {
                i += 1;
                continue;
            }
            let a = self.active.swap_remove(i);
            let status = adi.take(a.req)?.expect("a complete request");
            if status.truncated {
                self.note_truncated(a.expect);
            }
            if let Some(Staged {
                buf,
                unpack: Some((dst, count, lay)),
            }) = a.staged.as_deref()
            {
                // SAFETY: the staging buffer holds `status.len` received bytes; `dst` is the
                // receive buffer of `count` elements of `lay` (the caller's contract).
                unsafe { lay.unpack(buf.as_ptr(), status.len, *dst, *count) };
            }
        }
        Ok(())
    }

    /// Hands a finished schedule's allocations to the next schedule built (see
    /// [`Builder::new`]). Only a schedule with nothing in the engine may be recycled: its
    /// buffers are then nobody's.
    fn recycle(mut self: Box<Self>, spare: &mut Option<Schedule>) {
        debug_assert!(
            self.active.is_empty(),
            "a finished schedule has no transfer in flight"
        );
        for mut t in self._temps.drain(..) {
            if self.spare_temps.len() < SPARE_TEMPS && t.capacity() <= SPARE_TEMP_WORDS {
                t.clear();
                self.spare_temps.push(t);
            }
        }
        self.rounds.clear();
        (self.next, self.reducer, self.error) = (0, None, None);
        *spare = Some(self);
    }

    fn start_round(&mut self, adi: &mut Adi) -> Result<(), AdiError> {
        if self.replayable {
            // The round stays in place (the next run replays it).
            let i = self.next;
            self.next += 1;
            // Go on after a failed step, as for a truncated message, so that the other ranks
            // finish too.
            self.run_locals(i);
            let mut to = Destination {
                active: &mut self.active,
                seq: self.seq,
                ctx: self.ctx,
                comm: self.comm,
            };
            return self.rounds[i]
                .xfers
                .iter()
                .try_for_each(|x| to.post(adi, x));
        }
        let mut round = std::mem::take(&mut self.rounds[self.next]);
        self.next += 1;
        for l in &round.locals {
            if let Err(e) = self.run_local(l) {
                // Go on, as for a truncated message, so that the other ranks finish too.
                self.error.get_or_insert(e);
            }
        }
        round.locals.clear();
        let xfers = std::mem::take(&mut round.xfers);
        self.spare_rounds.push(round);
        let mut xfers = xfers;
        let mut to = Destination {
            active: &mut self.active,
            seq: self.seq,
            ctx: self.ctx,
            comm: self.comm,
        };
        for x in xfers.drain(..) {
            to.post(adi, &x)?;
        }
        if let Some(r) = self.spare_rounds.last_mut() {
            if r.xfers.capacity() == 0 {
                r.xfers = xfers;
            }
        }
        Ok(())
    }

    fn run_local(&self, l: &Local) -> MpiResult<()> {
        match l {
            Local::Copy {
                src,
                src_count,
                src_lay,
                dst,
                dst_count,
                dst_lay,
            } => {
                let bytes = (src_lay.size * src_count).min(dst_lay.size * dst_count);
                if src_lay.contiguous() && dst_lay.contiguous() {
                    // SAFETY: both buffers hold at least `bytes` bytes of data from their data
                    // start (the caller's contract, or the schedule's own temporaries); they
                    // are distinct buffers or the same one (copy to itself).
                    unsafe {
                        std::ptr::copy(
                            src_lay.data_start(*src),
                            dst_lay.data_start(dst.cast_const()).cast_mut(),
                            bytes,
                        )
                    };
                } else {
                    let mut v = vec![0u8; src_lay.size * src_count];
                    // SAFETY: as above; `v` holds the packed source.
                    unsafe {
                        src_lay.pack(*src, *src_count, v.as_mut_ptr());
                        dst_lay.unpack(v.as_ptr(), bytes, *dst, *dst_count);
                    }
                }
                Ok(())
            }
            Local::Reduce {
                input,
                inout,
                count,
            } => match self.reducer.as_ref().expect("a reducer") {
                // SAFETY: both buffers are `count` elements of the operation's type (a
                // schedule's temporaries, or the caller's buffers, which the collective's
                // contract makes valid), and distinct.
                Reducer::Op(r) => unsafe { r.apply(*input, *inout, *count) },
                Reducer::BandU64 => {
                    for i in 0..*count {
                        // SAFETY: both buffers are the schedule's `count` u64 words (possibly
                        // unaligned: the caller's byte slices).
                        unsafe {
                            let a = input.cast::<u64>().add(i).read_unaligned();
                            let p = inout.cast::<u64>().add(i);
                            p.write_unaligned(a & p.read_unaligned());
                        }
                    }
                    Ok(())
                }
            },
        }
    }
}

/// Where a schedule's transfers go: the engine, under the schedule's tags and context, with
/// the transfers in flight listed in `active` (a borrow of the schedule's list, so that a
/// round can be posted from where it stays).
struct Destination<'a> {
    active: &'a mut Vec<Active>,
    seq: u32,
    ctx: u16,
    comm: CommIdx,
}

impl Destination<'_> {
    /// Hands one transfer to the engine (packing a send of scattered data first).
    fn post(&mut self, adi: &mut Adi, x: &Xfer) -> Result<(), AdiError> {
        let tag = tag(self.seq, x.step);
        let bytes = x.lay.size * x.count;
        let a = if x.send {
            if x.lay.contiguous() && bytes <= adi.eager_max() {
                // A short message of contiguous data goes out at once when the route takes it
                // (as a blocking send's does): no request, nothing to reap.
                let ptr = crate::cptr::nonnull_or_dangling(x.lay.data_start(x.base.cast_const()));
                // SAFETY: `ptr` is `bytes` readable bytes (the user's buffer or a temporary of
                // the schedule); `send_now` copies them out before it returns.
                let data = unsafe { std::slice::from_raw_parts(ptr, bytes) };
                if adi.send_now(data, x.peer, tag, self.ctx, SendMode::Standard)? {
                    return Ok(());
                }
            }
            let (ptr, staging) = if x.lay.contiguous() {
                (x.lay.data_start(x.base.cast_const()), None)
            } else {
                let mut v = vec![0u8; bytes];
                // SAFETY: the send buffer holds `count` elements of `lay`; `v` has room
                // for their packed bytes.
                unsafe { x.lay.pack(x.base.cast_const(), x.count, v.as_mut_ptr()) };
                (
                    v.as_ptr(),
                    Some(Box::new(Staged {
                        buf: v,
                        unpack: None,
                    })),
                )
            };
            let ptr = crate::cptr::nonnull_or_dangling(ptr);
            // SAFETY: `ptr` is `bytes` readable bytes (the user's buffer, a temporary of
            // the schedule or the staging buffer, all alive until the transfer completes).
            let req = unsafe {
                adi.isend(
                    ptr,
                    bytes,
                    x.peer,
                    tag,
                    self.ctx,
                    SendMode::Standard,
                    self.comm,
                )
            }?;
            Active {
                req,
                expect: bytes,
                staged: staging,
            }
        } else {
            let (ptr, staged) = if x.lay.contiguous() {
                (x.lay.data_start(x.base.cast_const()).cast_mut(), None)
            } else {
                let mut v = vec![0u8; bytes];
                let unpack = Some((x.base, x.count, x.lay.clone()));
                (v.as_mut_ptr(), Some(Box::new(Staged { buf: v, unpack })))
            };
            let ptr = crate::cptr::nonnull_or_dangling(ptr).cast_mut();
            // SAFETY: `ptr` is `bytes` writable bytes that nothing else touches until the
            // transfer completes (as for the send).
            let req = unsafe { adi.irecv(ptr, bytes, x.peer as i32, tag, self.ctx, self.comm) }?;
            Active {
                req,
                expect: bytes,
                staged,
            }
        };
        self.active.push(a);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_stay_in_the_collective_range_and_apart() {
        assert_eq!(tag(0, 0), 0);
        assert_eq!(tag(1, 0), 1 << STEP_BITS);
        assert_ne!(tag(5, 3), tag(6, 3));
        assert_ne!(tag(5, 3), tag(5, 4));
        for (seq, step) in [
            (!SUBGROUP, u32::MAX),
            (1 << SEQ_BITS, 0x801),
            (12345, 0x900),
        ] {
            let t = tag(seq, step);
            assert!((0..0x2000_0000).contains(&t), "tag {t:#x} out of range");
        }
        for (seq, step) in [(u32::MAX, u32::MAX), (SUBGROUP, 0), (SUBGROUP | 77, 3)] {
            let t = tag(seq, step);
            assert!(
                (0x3A00_0000..0x3E00_0000).contains(&t),
                "tag {t:#x} out of range"
            );
        }
        assert_ne!(tag(SUBGROUP | 77, 3), tag(SUBGROUP | 78, 3));
    }

    #[test]
    fn layouts_span_and_address_elements() {
        let w = Layout::words(8);
        assert_eq!((w.span(0), w.span(3)), (0, 24));
        assert_eq!(w.at(std::ptr::null(), 2) as usize, 16);
        assert!(w.contiguous() && w.same(&Layout::words(8)) && !w.same(&Layout::BYTES));
        let mut a = [1u8, 2, 3, 4];
        let mut b = [0u8; 4];
        // SAFETY: both arrays hold 4 bytes.
        unsafe {
            Layout::BYTES.pack(a.as_ptr(), 4, b.as_mut_ptr());
            Layout::BYTES.unpack(b.as_ptr(), 2, a.as_mut_ptr().add(2), 2);
        }
        assert_eq!((a, b), ([1, 2, 1, 2], [1, 2, 3, 4]));
    }
}
