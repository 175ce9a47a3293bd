//! Agreeing on a context pair while other agreements are in flight: the protocol behind every
//! intracommunicator-creating call, blocking (`MPI_Comm_dup`, `split`, `create`) or not
//! (`MPI_Comm_idup`, which runs it inside the progress engine).
//!
//! ```text
//!   round 0 ("join"): everyone offers nothing (all-zero words; but see below)
//!   round k ≥ 1:      offer = this process's free mask + a "held" word of all ones   if it
//!                     holds the process's mask lock for this agreement, else all zeros
//!                     allreduce(AND) over the parent
//!                     held word all ones (every member offered) ──▶ take the lowest free
//!                     pair (or "no context left" if none) ── done
//!                     otherwise: release the lock if held, next round
//! ```
//!
//! **Why it is safe.** Each process has one mask lock ([`Contexts`]). A process offers its
//! real mask only for the agreement that holds its lock, and holds it from the offer until it
//! has seen the round's result and taken the pair. An agreement takes a pair only when every
//! member offered in that round (the AND of the "held" words), so every member held its lock
//! for it through the round: the pair was free at each of them when offered, and no other
//! agreement took anything at any of them meanwhile (every other agreement offered zeros there
//! and so saw a held word of zero: it took nothing). Pairs freed meanwhile only add free bits.
//! Hence no two live communicators that share a process get the same pair, whatever mix of
//! blocking and nonblocking agreements, on whatever parents, is in flight. `MPI_Comm_create_group`
//! runs it among the group's members only (`coll::Team::subgroup`); `MPI_Intercomm_create`
//! and the sessions' `MPI_Comm_create_from_group` and `MPI_Intercomm_create_from_groups`
//! among the processes of their groups on a context of their own (`comm::make::agree_among`);
//! so do the calls that join two jobs (`dynamic`: accept/connect, spawn, join), among every
//! process of both jobs' groups once their streams are up, named by the connection's token.
//! No call holds the lock for more than one round of this protocol.
//!
//! **Why it ends.** A lock is only ever held for one round of an agreement that every member
//! has already joined (its join round has completed, so every member runs its rounds, and they
//! do not wait for any lock: a member without the lock offers zeros), so every hold ends.
//! Among the joined agreements a process has, it grants its lock only to the first in the
//! order of [`Key`]: blocking calls first (a process is in at most one; a program blocked in
//! one may be what keeps a peer from joining a nonblocking one), then the lowest parent
//! context, then the earliest call on that parent. The first joined agreement of that order
//! over all processes is then the first at each of its members: once the rounds held by others
//! end, each member grants it the lock at its next round, and it succeeds in the first round
//! in which all do; then the next one goes. The join round is what keeps an agreement from
//! holding a lock while a member has not called it yet (that member might be waiting, in a
//! blocking creating call on another parent, for the process whose lock is held). Without it
//! (and without the blocking-first order) the interleavings of issue 17 deadlock. One
//! exception keeps a blocking call with nothing else in flight at one round, as before this
//! protocol: its join round may offer the real mask when it is the only agreement in flight at
//! the process. The process is inside that call, so until the round ends it starts no other
//! agreement, and none in flight needs its lock: holding it blocks nobody.
//!
//! `MPI_Comm_idup` of an intercommunicator runs the same protocol, its members being both
//! groups: each round is an allreduce over both (`coll::band_u64_schedule`: within each group,
//! then between the two leaders, then back), so an idup there never blocks either.
//!
//! All rounds of one agreement run under one collective sequence number of the parent, taken
//! when the call is made (so every member's count of collectives stays in step whatever the
//! number of rounds), and thus share tags: rounds run one after another at every member, the
//! same number at each, so messages match in order (MPI's non-overtaking rule).

use super::context::{lowest_free, ContextMask, MASK_WORDS};
use crate::coll::{Schedule, Team};
use crate::error::MpiResult;
use mpich_channel::{Adi, AdiError};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;

/// The words one round reduces: the free mask, then the "held" word.
pub(crate) const WORDS: usize = MASK_WORDS + 1;

/// An agreement's place in the order in which a process grants its lock (lowest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    /// 0 for a blocking call, 1 for a nonblocking one.
    nonblocking: u8,
    /// The parent's collective context (distinct among a process's live communicators).
    parent_ctx: u16,
    /// The parent's collective sequence number of the call.
    seq: u32,
}

/// Who holds a process's mask lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    Free,
    /// One round of the agreement with this key.
    Round(Key),
}

/// A process's context pairs and the lock over them (shared by the communicator table and
/// the agreements in flight in the progress engine).
pub(crate) struct Contexts {
    pub mask: ContextMask,
    lock: Lock,
    /// The joined agreements still in flight here.
    joined: BTreeSet<Key>,
    /// Every agreement in flight here, joined or not.
    in_flight: usize,
}

pub(crate) type SharedContexts = Rc<RefCell<Contexts>>;

impl Contexts {
    pub fn new(mask: ContextMask) -> SharedContexts {
        Rc::new(RefCell::new(Contexts {
            mask,
            lock: Lock::Free,
            joined: BTreeSet::new(),
            in_flight: 0,
        }))
    }

    /// Fills `words` with this process's offer for a round of `key`; `true` if it took the
    /// lock for it.
    fn offer(&mut self, key: Key, joined: bool, words: &mut [u64; WORDS]) -> bool {
        let grant = self.lock == Lock::Free
            && if joined {
                self.joined.first() == Some(&key)
            } else {
                // The join round of a blocking call may offer when it is the only agreement
                // here: the process is inside that call, so nothing else can want its lock
                // until the round ends (see the module documentation).
                key.nonblocking == 0 && self.in_flight == 1
            };
        if grant {
            self.lock = Lock::Round(key);
            words[..MASK_WORDS].copy_from_slice(&self.mask.words());
            words[MASK_WORDS] = u64::MAX;
        } else {
            *words = [0; WORDS];
        }
        grant
    }

    /// Ends a round of `key` whose result is `words`: the agreed pair's first context once
    /// every member offered (taken here if `keep`), `None` to go on.
    fn conclude(
        &mut self,
        key: Key,
        held: bool,
        words: &[u64; WORDS],
        keep: bool,
    ) -> Option<MpiResult<u16>> {
        if words[MASK_WORDS] != u64::MAX {
            if held {
                self.lock = Lock::Free;
            }
            return None;
        }
        debug_assert!(held, "every member offered, this one included");
        let got = lowest_free(&words[..MASK_WORDS]);
        if let (Ok(ctx), true) = (&got, keep) {
            self.mask.take(*ctx);
        }
        self.lock = Lock::Free;
        self.joined.remove(&key);
        Some(got)
    }

    /// An agreement that ended (agreed, failed, or dropped unfinished): it holds nothing any
    /// more.
    fn forget(&mut self, key: Key) {
        if self.lock == Lock::Round(key) {
            self.lock = Lock::Free;
        }
        self.joined.remove(&key);
        self.in_flight -= 1;
    }
}

/// One agreement on a context pair among the members of a parent intracommunicator, moved on
/// by [`Agreement::step`] (from the progress engine, or from a blocking call's wait).
pub(crate) struct Agreement {
    key: Key,
    team: Team,
    keep: bool,
    contexts: SharedContexts,
    /// The round's words; the running round's schedule points into them (a heap block that
    /// never moves).
    words: Box<[u64; WORDS]>,
    round: Option<Schedule>,
    held: bool,
    joined: bool,
    /// It has ended (and left `Contexts::in_flight`).
    over: bool,
    /// A blocking call whose wait lets the process's lock go (`MPI_THREAD_MULTIPLE`): other
    /// threads may start agreements while its join round runs, so that round never offers.
    among_threads: bool,
}

/// Rounds one call of [`Agreement::step`] runs at most (they all complete at once only on a
/// single process): the engine's other work gets its turn in between.
const ROUNDS_PER_STEP: usize = 4;

impl Agreement {
    /// An agreement over `team` (captured from the parent by the creating call, with its
    /// sequence number); `keep`: this process will use the pair.
    pub fn new(team: Team, nonblocking: bool, keep: bool, contexts: SharedContexts) -> Agreement {
        contexts.borrow_mut().in_flight += 1;
        let key = Key {
            nonblocking: nonblocking as u8,
            parent_ctx: team.ctx,
            seq: team.seq,
        };
        Agreement {
            key,
            team,
            keep,
            contexts,
            words: Box::new([0; WORDS]),
            round: None,
            held: false,
            joined: false,
            over: false,
            among_threads: false,
        }
    }

    /// Marks the agreement of a blocking call that other threads' calls may run beside
    /// (`MPI_THREAD_MULTIPLE`, the call's wait letting the process's lock go): its join
    /// round offers nothing, as a nonblocking one's does. The exception for a blocking call
    /// alone at its process rests on nothing else starting there until its round ends, which
    /// other threads break; without it, the protocol's argument holds with several blocking
    /// agreements in flight at a process too (they are ordered by parent and sequence).
    pub fn among_threads(mut self) -> Agreement {
        self.among_threads = true;
        self
    }

    /// Moves the agreement on without waiting; `Some` once it is over: the agreed pair, or
    /// why there is none.
    pub fn step(&mut self, adi: &mut Adi) -> Result<Option<MpiResult<(u16, u16)>>, AdiError> {
        for _ in 0..ROUNDS_PER_STEP {
            if self.round.is_none() {
                let held = self
                    .contexts
                    .borrow_mut()
                    // Not joined yet and among threads: offered as if joined, which grants
                    // nothing to an agreement not in the joined set (zeros, like a
                    // nonblocking join round).
                    .offer(self.key, self.joined || self.among_threads, &mut self.words);
                self.held = held;
                let words = self.words.as_mut_ptr();
                match crate::coll::band_u64_schedule(&self.team, words, WORDS) {
                    Ok(round) => self.round = Some(round),
                    Err(e) => return Ok(Some(Err(e))),
                }
            }
            let plan = self.round.as_mut().expect("a round is running");
            let finished = match plan.poll(adi) {
                Ok(f) => f,
                Err(e) => {
                    self.end();
                    return Err(e);
                }
            };
            if !finished {
                return Ok(None);
            }
            let error = plan.take_error();
            self.round = None;
            if let Some(e) = error {
                self.end();
                return Ok(Some(Err(e)));
            }
            let mut cx = self.contexts.borrow_mut();
            if !self.joined {
                // Every member has made its first offer: all of them run this agreement.
                self.joined = true;
                cx.joined.insert(self.key);
            }
            if let Some(got) = cx.conclude(self.key, self.held, &self.words, self.keep) {
                cx.forget(self.key);
                self.over = true;
                return Ok(Some(got.map(|c| (c, c + 1))));
            }
        }
        Ok(None)
    }

    fn end(&mut self) {
        if !self.over {
            self.over = true;
            self.contexts.borrow_mut().forget(self.key);
        }
    }
}

impl Drop for Agreement {
    fn drop(&mut self) {
        // An agreement dropped in flight (the engine shut down): it holds nothing.
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(nonblocking: u8, parent_ctx: u16, seq: u32) -> Key {
        Key {
            nonblocking,
            parent_ctx,
            seq,
        }
    }

    #[test]
    fn only_the_first_joined_agreement_gets_the_lock_and_zero_offers_take_nothing() {
        let shared = Contexts::new(ContextMask::new());
        let mut c = shared.borrow_mut();
        c.in_flight = 2;
        let (a, b) = (key(1, 0, 0), key(1, 4, 0));
        let mut w = [7u64; WORDS];
        // Not joined yet: nothing offered.
        assert!(!c.offer(a, false, &mut w));
        assert_eq!(w, [0; WORDS]);
        c.joined.insert(b);
        c.joined.insert(a);
        assert!(!c.offer(b, true, &mut w), "a comes first");
        assert!(c.offer(a, true, &mut w));
        assert_eq!(w[MASK_WORDS], u64::MAX);
        // A round in which some member offered zeros: nothing taken, lock released.
        let mut failed = w;
        failed[MASK_WORDS] = 0;
        assert!(c.conclude(a, true, &failed, true).is_none());
        assert_eq!(c.lock, Lock::Free);
        // Every member offered: the lowest pair is taken and the agreement leaves.
        assert!(c.offer(a, true, &mut w));
        assert_eq!(c.conclude(a, true, &w, true).unwrap().unwrap(), 0);
        assert!(c.offer(b, true, &mut w), "b is first now");
        assert_eq!(c.conclude(b, true, &w, true).unwrap().unwrap(), 2);
        // Blocking calls come before nonblocking ones.
        assert!(key(0, 100, 9) < key(1, 0, 0));
    }

    #[test]
    fn a_lone_blocking_call_offers_in_its_join_round() {
        let shared = Contexts::new(ContextMask::new());
        let mut c = shared.borrow_mut();
        let mut w = [0u64; WORDS];
        c.in_flight = 1;
        assert!(
            !c.offer(key(1, 0, 0), false, &mut w),
            "never a nonblocking one"
        );
        assert!(c.offer(key(0, 0, 0), false, &mut w));
        c.conclude(key(0, 0, 0), true, &[0; WORDS], true);
        c.in_flight = 2;
        assert!(
            !c.offer(key(0, 0, 1), false, &mut w),
            "not beside another agreement"
        );
    }
}
