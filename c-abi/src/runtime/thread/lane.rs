//! The lane path: a point-to-point call on a communicator (or a request) of a lane other than
//! 0 runs with the process lock held shared and its lane's mutex, so that threads on
//! different lanes run at once ([`try_call`], [`LaneCall`]).
//!
//! ```text
//!   MPI_Send(comm of lane 2) ─▶ lock SHARED ─▶ lane_of(&Runtime) = 2 ─▶ lane 2's mutex
//!       ─▶ body on Cx { lane 2's engine, &comms, &types } ─▶ unlock both
//!   a wait: look (shared + lane mutex) ── done? ─▶ finish
//!             └─ no: unlock both, back off (now and then turn the other lanes), look again
//!   an error: unlock both ─▶ lock EXCLUSIVE ─▶ error handler (may run the program's code)
//! ```
//!
//! **What the body may reach.** Only what [`LaneCall::look`] hands it: its lane's engine
//! (behind the lane's mutex) and the communicator and datatype tables read-only (through a
//! shared reference to the state: no thread holds it mutably while the lock is held shared).
//! So it cannot send buffered (the attached buffer is the exclusive path's), run the
//! program's code (no reduction, callback or error handler), or reach another lane; the
//! calls that would take the exclusive path ([`try_call`] returns `None`). As for
//! [`super::Calling`], a look's references end with the look, so a wait lets both locks go.
//!
//! **Progress.** A thread that waits on lane `k` turns lane `k` at each look; when its wait
//! gets long (it backs off) it also turns, now and then, the lanes no thread is in (their
//! mutex free), and lane 0 and the rest of the state when the process lock is free
//! (`try_enter`): MPI's progress rule (a blocking call lets every pending operation move on)
//! holds for whatever this process started on other lanes.

use super::lock;
use super::wait::Pace;
use crate::abi::MPI_Request;
use crate::error::{MpiError, MpiResult};
use crate::p2p::completion::{poll, Finished, How};
use crate::p2p::Cx;
use crate::runtime::global;
use crate::runtime::Runtime;
use nic_model::copy_jobs::{self, Deferring};
use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A lane-path call's right to its lane: the process lock held shared (`None` while a wait
/// lets it go) and the lane it works on.
pub(crate) struct LaneCall {
    shared: Option<lock::Shared>,
    lane: usize,
}

/// Runs `body` on the lane path if the call can take it: lanes are on, this thread holds no
/// lock, the state is running, and `lane_of` names a lane other than 0 for it (`None` or
/// `Some(0)`: the exclusive path). Returns the C return value, or `None` to take the
/// exclusive path.
#[cold]
#[inline(never)]
pub(crate) fn try_call(
    name: &'static str,
    lane_of: impl FnOnce(&mut LaneProbe) -> Option<usize>,
    body: impl FnOnce(&mut LaneCall) -> MpiResult<()>,
) -> Option<c_int> {
    if crate::runtime::lanes::count() <= 1 || lock::holding() {
        return None;
    }
    let mut probe = LaneProbe { shared: None };
    let lane = lane_of(&mut probe)?;
    if lane == 0 {
        // A request's lane is read from its handle alone: lane 0's calls then take only the
        // exclusive lock, not the shared one first.
        return None;
    }
    // The lock as `lane_of` took it (it found the state running), or taken now.
    let shared = match probe.shared.take() {
        Some(shared) => shared,
        None => {
            let shared = lock::shared();
            // SAFETY: the lock is held shared, so no `&mut Mpi` exists.
            unsafe { global::shared() }.runtime_ref()?;
            shared
        }
    };
    crate::tool::pvars::count_lane_call(lane);
    let mut call = LaneCall {
        shared: Some(shared),
        lane,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut call)));
    drop(call);
    Some(match outcome {
        Ok(Ok(())) => crate::abi::MPI_SUCCESS,
        Ok(Err(e)) => raise(name, e),
        Err(panic) => raise(
            name,
            MpiError::internal(crate::runtime::raise::panic_text(&*panic)),
        ),
    })
}

/// What a lane-path call's `lane_of` finds its lane with: the handles' lane bits need
/// nothing of the state ([`LaneProbe::lane_of_request`]); a communicator's lane needs the
/// state read-only ([`LaneProbe::rt`], which takes the process lock shared, kept for the
/// call if its lane is not 0).
pub(crate) struct LaneProbe {
    shared: Option<lock::Shared>,
}

impl LaneProbe {
    /// The running state read-only (`None` outside `MPI_Init` .. `MPI_Finalize`), the lock
    /// taken shared on the first use.
    #[inline(always)]
    pub fn rt(&mut self) -> Option<&Runtime> {
        if self.shared.is_none() {
            self.shared = Some(lock::shared());
        }
        // SAFETY: the lock is held shared (just above), so no `&mut Mpi` exists; the reference
        // borrows `self`, which keeps the guard, and so ends before the lock is let go.
        unsafe { global::shared() }.runtime_ref()
    }

    /// The lanes in use (as `Runtime::lanes`' count, without the state).
    pub fn lanes(&self) -> usize {
        crate::runtime::lanes::count()
    }

    /// The lane request handle `h` names (0 if it names none), without the state.
    #[inline(always)]
    pub fn lane_of_request(&self, h: MPI_Request) -> usize {
        let lane = crate::p2p::request::lane_of(h);
        if lane < self.lanes() {
            lane
        } else {
            0
        }
    }
}

/// An error of the lane path goes to its handler under the exclusive lock (the handler may
/// be the program's code, which may call MPI).
#[cold]
#[inline(never)]
fn raise(name: &'static str, e: MpiError) -> c_int {
    let held = lock::enter();
    let code = crate::runtime::raise::raise(name, e);
    drop(held);
    code
}

impl LaneCall {
    /// One look at the lane: `f` gets the point-to-point context of this call's lane (its
    /// engine under the lane's mutex, the tables read-only), for this look only.
    pub fn look<T>(&mut self, f: impl FnOnce(&mut Cx<'_>) -> MpiResult<T>) -> MpiResult<T> {
        if self.shared.is_none() {
            self.shared = Some(lock::shared());
        }
        // SAFETY: the lock is held shared (just above, or since the call began), so no `&mut
        // Mpi` exists; the reference lives for this look only.
        let st = unsafe { global::shared() };
        let rt = st.runtime_ref().ok_or_else(|| {
            MpiError::internal("the lane path ran outside MPI_Init .. MPI_Finalize")
        })?;
        let mut guard = rt.lanes.lock(self.lane);
        let mut cx = Cx {
            engine: guard.engine(),
            lane: self.lane,
            comms: &rt.comms,
            types: &rt.types,
            bsend: None,
        };
        f(&mut cx)
    }

    /// Waits until `ready` has an answer: each look (as [`LaneCall::look`]) must turn the
    /// lane's engine once when it finds nothing (`MPI_Test`'s turn). Between looks both
    /// locks are let go; long copies a look started run then (`nic_model::copy_jobs`).
    pub fn wait_until<T>(
        &mut self,
        mut ready: impl FnMut(&mut Cx<'_>) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        let mut pace = Pace::default();
        loop {
            let deferring = Deferring::on();
            // The copies the look started are claimed under the lane's mutex (no other
            // thread runs them inline meanwhile) and run below with no lock.
            let looked = self.look(|cx| {
                let found = ready(cx);
                Ok((found, copy_jobs::claim_mine()))
            });
            drop(deferring);
            let (found, jobs) = looked?;
            self.shared = None;
            if let Some(t) = found? {
                jobs.run();
                return Ok(t);
            }
            if jobs.is_empty() {
                pace.wait();
                if pace.every(TURN_OTHERS_EVERY) {
                    self.turn_others();
                }
            } else {
                jobs.run();
                pace = Pace::default();
            }
        }
    }

    /// Waits for `*request` (a request of this lane) and retires it, as `MPI_Wait` does; each
    /// look is an `MPI_Test`.
    pub fn wait_request(&mut self, request: &mut MPI_Request) -> MpiResult<Finished> {
        self.wait_until(|cx| poll(cx, request, How::Test))
    }

    /// Starts a request with `start` and waits for it (a blocking call as its nonblocking
    /// twin and `MPI_Wait`): the first look starts it and tests it at once.
    pub fn run_request(
        &mut self,
        start: impl FnOnce(&mut Cx<'_>) -> MpiResult<MPI_Request>,
    ) -> MpiResult<Finished> {
        let mut start = Some(start);
        let mut request = crate::abi::MPI_REQUEST_NULL;
        self.wait_until(|cx| {
            if let Some(start) = start.take() {
                request = start(cx)?;
            }
            poll(cx, &mut request, How::Test)
        })
    }

    /// Turns, once each, the lanes other than this call's that no thread is in, and lane 0
    /// with every other engine the state has if no thread holds the process lock (so that a
    /// blocking call on a lane lets every pending operation of the process move on). Holds
    /// no lock when called, and none after.
    fn turn_others(&mut self) {
        if let Some(held) = lock::try_enter() {
            // SAFETY: the lock is held exclusively by this thread and no other reference to
            // the state made by this call is alive (its looks' ended).
            let st = unsafe { global::state() };
            if let Ok(rt) = st.runtime() {
                let _ = rt.engine.poke();
                let _ = rt.turn_other_lanes();
            }
            drop(held);
            return;
        }
        let _shared = lock::shared();
        // SAFETY: the lock is held shared for the reference's life.
        let st = unsafe { global::shared() };
        let Some(rt) = st.runtime_ref() else { return };
        for k in 1..rt.lanes.count() {
            if k == self.lane {
                continue;
            }
            if let Some(mut g) = rt.lanes.try_lock(k) {
                let _ = g.engine().poke();
            }
        }
    }
}

/// Once a wait yields, one round in this many also turns the other lanes.
const TURN_OTHERS_EVERY: u32 = 8;
