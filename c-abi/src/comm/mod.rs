//! Communicators: the handle table, rank translation, creation and freeing (the calls that
//! ask about a communicator, `MPI_Comm_size` ... `MPI_Comm_get_info`, and the creating calls
//! are in `api`).
//!
//! ```text
//!   handle 0x44000000 (WORLD) / 0x44000001 (SELF) / 0x84000000|slot ──▶ slots[slot]: Comm
//!   Comm: ctx, coll_ctx · peers (who point-to-point ranks name) · local group (intercomms)
//!         · errhandler · attributes · topology · name · info hints
//! ```
//!
//! A communicator is a group of processes with its own message space. Here that space is a
//! pair of engine context ids: one for point-to-point traffic and one for the library's own
//! collective traffic (so a barrier never matches a user's receive). `MPI_COMM_WORLD` uses
//! contexts 0 and 1, `MPI_COMM_SELF` 2 and 3; communicators created later take the lowest pair
//! free on every member (`make::agree`). Ranks in a communicator ("local") are translated to
//! ranks in the job ("global", the engine's) on the way down, and back in statuses on the way
//! up: identity for `MPI_COMM_WORLD`, a list and its reverse map for the others.
//!
//! **Intercommunicators** ([`inter`]) have a local group (whose size and rank `MPI_Comm_size`
//! and `MPI_Comm_rank` give) and a remote group, which point-to-point ranks name: `peers` is the
//! remote group, and both groups use the same agreed context pair, so each receives on the
//! context the other sends on.
//!
//! **Lookup** stays a couple of compares for the predefined handles (fixed slots 0 and 1); a
//! created handle's low bits are its slot. A freed slot is reused by a later communicator.
//!
//! **Owns** the communicator table ([`CommTable`]) and the context ids in use. **Entry:** the
//! table's lookups for every other subsystem; creating and freeing communicators goes through
//! [`make::Cx`] (the engine, the table, the keyvals and the collectives' spare schedule;
//! `Runtime::comm`). Modules: [`idx`] (indices, below everything), [`context`] (context masks),
//! [`agree`] (the protocol that keeps concurrent agreements on contexts apart), [`late`] (the
//! communicators of `MPI_Comm_idup`, whose contexts arrive when the request completes),
//! [`net`] (exchanges among processes no intracommunicator spans), [`make`] (the context,
//! agreement and installation every creating call shares), [`create`] (intracommunicators),
//! [`inter`] (intercommunicators), `api` (the C functions).

pub(crate) mod agree;
mod api;
pub(crate) mod context;
pub(crate) mod create;
pub(crate) mod hardware;
pub(crate) mod idx;
pub(crate) mod inter;
mod late;
pub(crate) mod make;
pub(crate) mod net;
pub(crate) mod tag_lanes;
pub(crate) mod waiting;

use crate::abi::*;
use crate::attr::Attrs;
use crate::error::{MpiError, MpiResult};
use crate::group::{Group, GroupData};
use crate::handle::{Kind, Table};
use crate::info::Hints;
use crate::topo::Topology;
use mpich_channel::ANY_SOURCE;
use std::ffi::c_int;
use std::rc::Rc;

pub(crate) use context::ContextMask;

pub(crate) use idx::{CommIdx, SELF, WORLD};

/// Who point-to-point ranks name, as engine (global) ranks.
#[derive(Debug, Clone)]
pub(crate) enum Members {
    /// Every rank of the job, local rank = global rank.
    All,
    /// One process: local rank 0 is global rank `0`.
    One(usize),
    /// Any other set: local rank `i` is `group.global(i)`.
    List(Group),
}

impl Members {
    pub fn group(&self, size: usize) -> Group {
        match self {
            Members::All => GroupData::new((0..size as u32).collect()),
            Members::One(me) => GroupData::new(vec![*me as u32]),
            Members::List(g) => g.clone(),
        }
    }

    /// The cheapest representation of `g` (identity when it is the whole job in order).
    pub fn of(g: Group, job_size: usize) -> Members {
        if g.size() == job_size && g.ranks().iter().enumerate().all(|(i, &r)| r as usize == i) {
            Members::All
        } else {
            Members::List(g)
        }
    }
}

/// One communicator.
#[derive(Debug)]
pub(crate) struct Comm {
    /// Its handle.
    pub handle: MPI_Comm,
    /// Its name (`MPI_Comm_set_name`; in messages).
    pub name: String,
    /// Engine context of point-to-point messages.
    pub ctx: u16,
    /// Engine context of the library's collective messages.
    pub coll_ctx: u16,
    /// The size of the (local) group.
    pub size: usize,
    /// This process's rank in the (local) group.
    pub rank: usize,
    /// The processes point-to-point ranks name: the group, or an intercommunicator's remote group.
    peers: Members,
    /// How many `peers` there are (`size` unless this is an intercommunicator).
    peer_size: usize,
    /// An intercommunicator's local group; `None` for an intracommunicator.
    local: Option<Group>,
    pub errhandler: MPI_Errhandler,
    /// The counters the collectives use to tag successive collectives: blocking ones, and
    /// nonblocking and persistent ones (two families, see `next_coll_seq`).
    pub coll_seq: u32,
    pub nbc_seq: u32,
    pub attrs: Attrs,
    pub topo: Option<Rc<Topology>>,
    pub hints: Hints,
    /// `hints` hold `mpi_assert_no_any_tag` = true: no receive or probe on this communicator
    /// may match any tag (`MPI_ANY_TAG` is refused), kept apart for the receives' checks.
    pub no_any_tag: bool,
    /// A stand-in in the table's slot for a communicator whose contexts are arriving
    /// ([`late`]); the table's lookups go to the real one.
    late: bool,
}

/// The info keys a communicator keeps: MPI 4.0's assertions (§7.4.4). `MPI_Comm_get_info`
/// returns the hints the library keeps, each with its value ("false" unless set), and not
/// the keys it ignores; `MPI_Comm_set_info` and the `_with_info` calls keep only these.
/// (A communicator made by a hardware split also reports its `mpi_hw_resource_type`.)
const COMM_INFO_KEYS: [&str; 4] = [
    NO_ANY_TAG,
    "mpi_assert_no_any_source",
    "mpi_assert_exact_length",
    "mpi_assert_allow_overtaking",
];
/// Reported when set, never filled with a default.
const COMM_INFO_SET_ONLY: [&str; 1] = ["mpi_hw_resource_type"];

/// What a communicator keeps of the hints `given` (see [`COMM_INFO_KEYS`]).
pub(crate) fn kept_hints(given: &Hints) -> Hints {
    let mut kept = Hints::default();
    for (k, v) in given.pairs() {
        if COMM_INFO_KEYS.contains(&k) {
            kept.set(k.to_string(), v.to_string());
        }
    }
    kept
}

/// The hints `MPI_Comm_get_info` reports for a communicator that keeps `kept`.
pub(crate) fn hints_in_use(kept: &Hints) -> Hints {
    let mut used = Hints::default();
    for k in COMM_INFO_KEYS {
        used.set(k.to_string(), kept.get(k).unwrap_or("false").to_string());
    }
    for k in COMM_INFO_SET_ONLY {
        if let Some(v) = kept.get(k) {
            used.set(k.to_string(), v.to_string());
        }
    }
    used
}

/// The assertion that no receive or probe on a communicator uses `MPI_ANY_TAG`.
pub(crate) const NO_ANY_TAG: &str = "mpi_assert_no_any_tag";

impl Comm {
    /// Keeps `hints` (already filtered: [`kept_hints`]) as this communicator's.
    pub(crate) fn set_hints(&mut self, hints: Hints) {
        self.no_any_tag = hints
            .get(NO_ANY_TAG)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        self.hints = hints;
    }

    /// A new communicator over `peers`; `local` for an intercommunicator.
    pub(crate) fn new(
        name: String,
        (ctx, coll_ctx): (u16, u16),
        rank: usize,
        peers: Members,
        peer_size: usize,
        local: Option<Group>,
    ) -> Comm {
        let size = local.as_ref().map_or(peer_size, |g| g.size());
        Comm {
            handle: MPI_COMM_NULL,
            name,
            ctx,
            coll_ctx,
            size,
            rank,
            peers,
            peer_size,
            local,
            errhandler: MPI_ERRORS_ARE_FATAL,
            coll_seq: 0,
            nbc_seq: 0,
            attrs: Attrs::default(),
            topo: None,
            hints: Hints::default(),
            no_any_tag: false,
            late: false,
        }
    }

    /// The engine rank of peer rank `local` (< the peer count): for an intercommunicator, a
    /// rank of the remote group.
    #[inline(always)]
    pub fn to_global(&self, local: usize) -> usize {
        match &self.peers {
            Members::All => local,
            Members::One(me) => *me,
            Members::List(g) => g.global(local),
        }
    }

    /// The peer rank of an engine rank, for statuses (`MPI_ANY_SOURCE`, `MPI_PROC_NULL` and
    /// non-members pass through).
    #[inline(always)]
    pub fn to_local(&self, global: c_int) -> c_int {
        match &self.peers {
            Members::All => global,
            Members::One(me) if global == *me as c_int => 0,
            Members::One(_) => global,
            Members::List(g) if global >= 0 => {
                g.local(global as usize).map_or(global, |l| l as c_int)
            }
            Members::List(_) => global,
        }
    }

    /// Whether this is an intercommunicator.
    pub fn is_inter(&self) -> bool {
        self.local.is_some()
    }

    /// The size of the remote group (of the group, for an intracommunicator).
    pub fn remote_size(&self) -> usize {
        self.peer_size
    }

    /// The local group.
    pub fn group(&self) -> Group {
        match &self.local {
            Some(g) => g.clone(),
            None => self.peers.group(self.peer_size),
        }
    }

    /// The group point-to-point ranks name (the remote group of an intercommunicator).
    pub fn peer_group(&self) -> Group {
        self.peers.group(self.peer_size)
    }

    /// The engine rank of local-group rank `i` (for intercommunicators, not a peer).
    pub fn local_global(&self, i: usize) -> usize {
        match &self.local {
            Some(g) => g.global(i),
            None => self.to_global(i),
        }
    }

    /// A destination rank: `None` for `MPI_PROC_NULL`, else its engine rank.
    #[inline(always)]
    pub fn dest(&self, rank: c_int) -> MpiResult<Option<usize>> {
        if rank >= 0 && (rank as usize) < self.peer_size {
            Ok(Some(self.to_global(rank as usize)))
        } else if rank == MPI_PROC_NULL {
            Ok(None)
        } else {
            Err(self.bad_rank(rank, "MPI_PROC_NULL"))
        }
    }

    /// A source rank: `None` for `MPI_PROC_NULL`, else its engine rank or `MPI_ANY_SOURCE`.
    #[inline(always)]
    pub fn source(&self, rank: c_int) -> MpiResult<Option<c_int>> {
        if rank >= 0 && (rank as usize) < self.peer_size {
            Ok(Some(self.to_global(rank as usize) as c_int))
        } else if rank == MPI_ANY_SOURCE {
            Ok(Some(ANY_SOURCE))
        } else if rank == MPI_PROC_NULL {
            Ok(None)
        } else {
            Err(self.bad_rank(rank, "MPI_ANY_SOURCE, MPI_PROC_NULL"))
        }
    }

    #[cold]
    fn bad_rank(&self, rank: c_int, specials: &str) -> MpiError {
        let group = if self.is_inter() {
            "the remote group of "
        } else {
            ""
        };
        MpiError::new(
            MPI_ERR_RANK,
            format!(
                "rank {rank} is not in {group}{} (valid: 0..={}, {specials})",
                self.label(),
                self.peer_size as i64 - 1
            ),
        )
    }

    /// The sequence number of the next collective on this communicator (all its members
    /// count alike). Blocking collectives and nonblocking (or persistent) ones count apart,
    /// in two halves of the 17-bit number, as MPICH tags them apart: a program whose
    /// processes interleave the two kinds differently (mpi4py's `testIAgree`: one process
    /// starts an `MPI_Iallreduce` before a `MPI_Barrier` the others call first) still matches
    /// each call with its own kind.
    pub fn next_coll_seq(&mut self, nonblocking: bool) -> u32 {
        const HALF: u32 = 1 << 16;
        let counter = if nonblocking {
            &mut self.nbc_seq
        } else {
            &mut self.coll_seq
        };
        let seq = *counter;
        *counter = seq.wrapping_add(1);
        (seq % HALF) | if nonblocking { HALF } else { 0 }
    }

    /// How messages name it: its name, or its handle if it has none.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("communicator 0x{:08x}", self.handle)
        } else {
            self.name.clone()
        }
    }
}

/// Every communicator of the process, and the context ids in use.
///
/// The communicators live in a handle table: `MPI_COMM_WORLD` and `MPI_COMM_SELF` at indices 0
/// and 1 (under their predefined handles), created ones after them. A freed communicator is
/// retired: its handle is refused, but it stays reachable by index until no request is
/// outstanding, because a request started on it before `MPI_Comm_free` still completes, and
/// its status still translates ranks through it (MPI lets a program free a communicator with
/// operations pending).
pub(crate) struct CommTable {
    table: Table<Comm>,
    /// Context pairs this process uses, and the lock agreements take them under
    /// ([`agree`]); shared with the agreements running in the progress engine.
    pub contexts: agree::SharedContexts,
    /// Communicators made by `MPI_Comm_idup`, kept out of their slots ([`late`]).
    late: late::LateComms,
}

impl CommTable {
    /// The predefined communicators of a job of `size` ranks in which this process is `rank`.
    pub fn new(rank: usize, size: usize) -> CommTable {
        let mut world = Comm::new(
            "MPI_COMM_WORLD".into(),
            (0, 1),
            rank,
            Members::All,
            size,
            None,
        );
        world.handle = MPI_COMM_WORLD;
        let mut self_ = Comm::new(
            "MPI_COMM_SELF".into(),
            (2, 3),
            0,
            Members::One(rank),
            1,
            None,
        );
        self_.handle = MPI_COMM_SELF;
        let mut contexts = ContextMask::new();
        contexts.take(0);
        contexts.take(2);
        let mut table = Table::new(Kind::Comm);
        assert_eq!(table.insert(world).map(|(i, _)| i), Some(WORLD));
        assert_eq!(table.insert(self_).map(|(i, _)| i), Some(SELF));
        CommTable {
            table,
            contexts: agree::Contexts::new(contexts),
            late: late::LateComms::default(),
        }
    }

    /// Decodes a handle: `MPI_ERR_COMM` unless it names a communicator of this process.
    #[inline(always)]
    pub fn lookup(&self, handle: MPI_Comm) -> MpiResult<(CommIdx, &Comm)> {
        let idx = match handle {
            MPI_COMM_WORLD => WORLD,
            MPI_COMM_SELF => SELF,
            _ => return self.lookup_created(handle),
        };
        Ok((idx, self.get(idx)))
    }

    fn lookup_created(&self, handle: MPI_Comm) -> MpiResult<(CommIdx, &Comm)> {
        match self.table.index(handle) {
            Some(idx) if idx > SELF => Ok((idx, self.get(idx))),
            _ => Err(invalid_comm(handle)),
        }
    }

    pub fn lookup_mut(&mut self, handle: MPI_Comm) -> MpiResult<&mut Comm> {
        let (idx, _) = self.lookup(handle)?;
        Ok(self.get_mut(idx))
    }

    /// The communicator at `idx`, freed ones included.
    #[inline(always)]
    pub fn get(&self, idx: CommIdx) -> &Comm {
        let c = self
            .table
            .at(idx)
            .expect("a communicator index names a live communicator");
        if c.late {
            return self.late.get(idx).unwrap_or(c);
        }
        c
    }

    pub fn get_mut(&mut self, idx: CommIdx) -> &mut Comm {
        let late = self
            .table
            .at(idx)
            .expect("a communicator index names a live communicator")
            .late;
        if late {
            if let Some(real) = self.late.get_mut(idx) {
                return real;
            }
        }
        self.table.at_mut(idx).expect("a live communicator")
    }

    /// Stores a communicator whose contexts an operation of the progress engine will deliver
    /// (`MPI_Comm_idup`); until [`CommTable::arrival`] hands that operation its place, the
    /// communicator can be set up through [`CommTable::get_mut`] (attributes copied).
    pub fn insert_late(&mut self, c: Comm, idle: bool) -> (CommIdx, MPI_Comm) {
        let mut stand_in = Comm::new(
            String::new(),
            (u16::MAX - 1, u16::MAX),
            c.rank,
            c.peers.clone(),
            c.peer_size,
            c.local.clone(),
        );
        stand_in.late = true;
        let (idx, handle) = self.insert(stand_in, idle);
        let mut c = c;
        c.handle = handle;
        self.late.add(idx, c);
        (idx, handle)
    }

    /// Where the operation agreeing on late communicator `idx`'s contexts delivers them.
    pub(crate) fn arrival(&mut self, idx: CommIdx) -> late::Arrival {
        self.late.arrival(idx)
    }

    /// Every live communicator (the dynamic processes' bookkeeping of which peers are still
    /// named).
    pub fn live(&self) -> impl Iterator<Item = &Comm> + '_ {
        self.table.live_values()
    }

    /// Stores a new communicator and gives it its handle. `idle`: no request is outstanding,
    /// so the slots of freed communicators can be reused.
    pub fn insert(&mut self, mut c: Comm, idle: bool) -> (CommIdx, MPI_Comm) {
        if idle {
            let retired: Vec<u32> = self.table.retired().collect();
            for i in retired {
                self.table.release(i);
            }
        }
        c.handle = MPI_COMM_NULL;
        let (idx, handle) = self.table.insert(c).expect("room for another communicator");
        self.get_mut(idx).handle = handle;
        (idx, handle)
    }

    /// Frees a created communicator: its handle no longer names it, its contexts are released,
    /// and it stays reachable by index for outstanding requests (see the type's documentation).
    pub fn remove(&mut self, idx: CommIdx) {
        assert!(idx > SELF, "the predefined communicators are never removed");
        if self.table.at(idx).is_some_and(|c| c.late) {
            if let Some(real) = self.late.take(idx) {
                *self.table.at_mut(idx).expect("a live communicator") = real;
            }
        }
        let c = self.get_mut(idx);
        let handle = c.handle;
        c.handle = MPI_COMM_NULL;
        // Only the rank translation is still needed; drop the rest now.
        c.topo = None;
        c.set_hints(Hints::default());
        c.name = String::new();
        let (ctx, late) = (c.ctx, c.late);
        if !late && (ctx as usize) < context::MASK_WORDS * 128 {
            // (A stand-in, or an idup's communicator that never got its contexts, holds
            // none.) Its context routes by context again before another communicator can
            // take it.
            context::route_by_tag(ctx, false);
            self.contexts.borrow_mut().mask.release(ctx);
        }
        self.table.retire(handle);
    }
}

#[cold]
fn invalid_comm(handle: MPI_Comm) -> MpiError {
    let detail = if handle == MPI_COMM_NULL {
        "the communicator is MPI_COMM_NULL".to_string()
    } else {
        format!("0x{handle:08x} is not a communicator (or it was freed)")
    };
    MpiError::new(MPI_ERR_COMM, detail)
}

/// `MPI_ERR_COMM` for a call that needs an intracommunicator.
pub(crate) fn require_intra(c: &Comm, what: &str) -> MpiResult<()> {
    if c.is_inter() {
        return Err(MpiError::new(
            MPI_ERR_COMM,
            format!(
                "{what} needs an intracommunicator; {} is an intercommunicator",
                c.label()
            ),
        ));
    }
    Ok(())
}

/// `MPI_IDENT` (same handle), `MPI_CONGRUENT` (same groups, same order), `MPI_SIMILAR`
/// (same members), `MPI_UNEQUAL`.
fn compare(a: &Comm, b: &Comm) -> c_int {
    if a.handle == b.handle {
        return MPI_IDENT;
    }
    if a.is_inter() != b.is_inter() {
        return MPI_UNEQUAL;
    }
    let mut result = a.group().compare(&b.group());
    if a.is_inter() {
        result = result.max(a.peer_group().compare(&b.peer_group()));
    }
    match result {
        MPI_IDENT => MPI_CONGRUENT,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_translate_both_ways() {
        let t = CommTable::new(3, 4);
        let (_, world) = t.lookup(MPI_COMM_WORLD).unwrap();
        let (_, me) = t.lookup(MPI_COMM_SELF).unwrap();
        assert_eq!(world.dest(2).unwrap(), Some(2));
        assert_eq!(me.dest(0).unwrap(), Some(3));
        assert_eq!(me.to_local(3), 0);
        assert_eq!(world.to_local(3), 3);
        assert_eq!(world.dest(MPI_PROC_NULL).unwrap(), None);
        assert_eq!(world.source(MPI_ANY_SOURCE).unwrap(), Some(ANY_SOURCE));
        assert_eq!(world.dest(4).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(world.dest(MPI_ANY_SOURCE).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(me.source(1).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(t.lookup(MPI_COMM_NULL).unwrap_err().class, MPI_ERR_COMM);
        assert_eq!(t.lookup(12345).unwrap_err().class, MPI_ERR_COMM);
    }

    #[test]
    fn created_communicators_translate_through_their_list() {
        let mut t = CommTable::new(3, 4);
        let g = GroupData::new(vec![3, 1]);
        let c = Comm::new(String::new(), (4, 5), 0, Members::List(g), 2, None);
        let (idx, h) = t.insert(c, true);
        let (found, c) = t.lookup(h).unwrap();
        assert_eq!(found, idx);
        assert_eq!(c.dest(1).unwrap(), Some(1));
        assert_eq!(c.to_local(1), 1);
        assert_eq!(c.to_local(3), 0);
        assert_eq!(c.to_local(MPI_ANY_SOURCE), MPI_ANY_SOURCE);
        t.remove(idx);
        assert_eq!(t.lookup(h).unwrap_err().class, MPI_ERR_COMM);
    }
}
