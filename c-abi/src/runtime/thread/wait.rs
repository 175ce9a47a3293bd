//! A blocking call's right to the state ([`Calling`]) and its waits, which let the lock go
//! between two looks at the state.

use super::lock::Held;
use crate::abi::MPI_Request;
use crate::error::MpiResult;
use crate::p2p::completion::{poll, Finished, How};
use crate::runtime::global;
use crate::runtime::Mpi;
use nic_model::copy_jobs::{self, Deferring};
use nic_model::wait::Backoff;
use std::time::{Duration, Instant};

/// The right of one MPI call (made with `mpi_fn!`'s `waits` form) to the process's state.
///
/// The body reaches the state only through [`Calling::state`], whose borrow lasts as long as
/// the borrow of the `Calling`, and waits only through [`Calling::wait_until`], which needs
/// the `Calling` mutably: so the borrow checker rejects a body that would hold any reference
/// into the state (a communicator, a table, a context of them) across a wait. That is what
/// makes it sound for the wait to let the lock go, and other threads take the state, while
/// it waits: nothing of this call points into the state meanwhile.
pub(crate) struct Calling {
    /// The lock, if calls take it; `None` when they do not (below `MPI_THREAD_MULTIPLE`
    /// without the progress thread).
    held: Option<Held>,
}

impl Calling {
    #[inline(always)]
    pub(crate) fn new(held: Option<Held>) -> Calling {
        Calling { held }
    }

    /// The process's state, for as long as this call is not waiting.
    #[inline(always)]
    pub fn state(&mut self) -> &mut Mpi {
        // SAFETY: this call holds the lock if calls take it, and no other reference to the
        // state made by this call is alive: the one returned borrows `self` mutably, and so
        // ends before the next `state` or `wait_until` (one reference per call, as in
        // `export::call`; a call nested in this one on the same thread runs while none of
        // this call's references is in use, as for every nested call).
        unsafe { global::state() }
    }

    /// Whether this call's waits let other threads in: it holds the lock itself (calls take
    /// it, and this one is not nested in another call on this thread). Bodies wait the old
    /// way (in the engine's loop, holding their borrows) when this is `false`: no other
    /// thread can be in MPI then, or the outer call's borrows are alive anyway.
    #[inline(always)]
    pub fn releases(&self) -> bool {
        match &self.held {
            Some(h) => h.owns() && super::lock::waits_let_go(),
            None => false,
        }
    }

    /// Waits until `ready` has an answer. `ready` gets the state afresh at each look (it can
    /// keep nothing of it: the reference is valid only for that look), and must turn the
    /// engine once when it finds nothing (a `test`, a `poke`), as `MPI_Test` does. Between two
    /// looks the lock is let go if this call holds it ([`Calling::releases`]), so that the
    /// other threads' calls run meanwhile; the look runs with the lock held.
    pub fn wait_until<T>(
        &mut self,
        mut ready: impl FnMut(&mut Mpi) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        let releases = self.releases();
        let mut pace = Pace::default();
        let mut backoff = Backoff::new();
        loop {
            // A look of a call that lets the lock go leaves the long copies it starts as jobs,
            // run below with the lock let go; any other look copies inline (a call nested in
            // a look keeps the lock, and must not wait for a job that runs after it).
            let deferring = if releases {
                Deferring::on()
            } else {
                Deferring::off()
            };
            // SAFETY: as in `state`: the lock is held (or not needed), and this call has no
            // other reference to the state (`self` is borrowed mutably by this function); the
            // reference lives only for this look.
            let st = unsafe { global::state() };
            let found = ready(st);
            if releases && matches!(found, Ok(None)) && crate::runtime::lanes::count() > 1 {
                // The other lanes' operations move on too (MPI's progress rule).
                if let Ok(rt) = st.runtime() {
                    rt.turn_other_lanes()?;
                }
            }
            drop(deferring);
            match &mut self.held {
                Some(held) if releases => {
                    // Claimed under the lock, so no other thread runs them inline meanwhile.
                    let jobs = copy_jobs::claim_mine();
                    if let Some(t) = found? {
                        if !jobs.is_empty() {
                            held.pause();
                            jobs.run();
                            held.resume();
                        }
                        return Ok(t);
                    }
                    held.pause();
                    if jobs.is_empty() {
                        pace.wait();
                    } else {
                        // The copies of this look, with no reference into the state: other
                        // threads use it meanwhile. The next look (at once) ends their reads.
                        jobs.run();
                        pace = Pace::default();
                    }
                    held.resume();
                }
                _ => {
                    if let Some(t) = found? {
                        return Ok(t);
                    }
                    backoff.snooze();
                }
            }
        }
    }

    /// Runs `f`, which reaches nothing of the state (it is given none: a wait on a socket to
    /// another job, the launcher's answer to a spawn), with the lock let go meanwhile if this
    /// call holds it ([`Calling::releases`]), so that the other threads' calls run; the lock is
    /// taken again before this returns (or unwinds). Below `MPI_THREAD_MULTIPLE`, or nested in
    /// another call, it just runs `f`. No copy job is pending here: a look claims its own.
    pub fn outside<T>(&mut self, f: impl FnOnce() -> T) -> T {
        if !self.releases() {
            return f();
        }
        let Some(held) = self.held.as_mut() else {
            return f();
        };
        /// Takes the lock again when dropped, on a return or an unwind alike.
        struct Resume<'a>(&'a mut Held);
        impl Drop for Resume<'_> {
            fn drop(&mut self) {
                self.0.resume();
            }
        }
        held.pause();
        let _resume = Resume(held);
        f()
    }

    /// Waits for `request` (made by this call: its nonblocking twin's request) and retires
    /// it, as `MPI_Wait` does; each look is an `MPI_Test`.
    pub fn wait_request(&mut self, mut request: MPI_Request) -> MpiResult<Finished> {
        self.wait_until(|st| {
            poll(
                &mut st.runtime()?.p2p_for_request(request),
                &mut request,
                How::Test,
            )
        })
    }
}

/// How a thread waits between two looks while it lets the lock go: spin a few times (the
/// other threads take the lock meanwhile), then yield the processor (threads of one rank
/// often outnumber its cores: 4 or 8 of them on 2 cores here), then nap.
#[derive(Default)]
pub(super) struct Pace {
    rounds: u32,
    since: Option<Instant>,
}

/// Looks that only spin before the thread starts yielding.
const SPIN_LOOKS: u32 = 16;
/// How long the thread yields before it naps.
const YIELD_FOR: Duration = Duration::from_micros(200);
/// One nap.
const NAP: Duration = Duration::from_micros(50);

impl Pace {
    /// Whether this is one round in `n` of a wait that yields already (a long one).
    pub(super) fn every(&self, n: u32) -> bool {
        self.rounds > SPIN_LOOKS && self.rounds.is_multiple_of(n)
    }

    pub(super) fn wait(&mut self) {
        self.rounds = self.rounds.saturating_add(1);
        if self.rounds <= SPIN_LOOKS {
            std::hint::spin_loop();
            return;
        }
        let now = Instant::now();
        let since = *self.since.get_or_insert(now);
        if now - since < YIELD_FOR {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
    }
}
