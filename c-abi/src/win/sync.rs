//! Synchronization: fence, post-start-complete-wait, and passive target (lock, unlock,
//! flush), each a few requests and a wait on the counts of the window's state.
//!
//! ```text
//!   fence        flush every target written since the last fence, wait for the answers,
//!                then a barrier: after it every origin's requests to me are applied
//!   post/start   post tells each origin of the group; start waits for each target's post
//!   complete     a Complete request to each target, after the epoch's requests (in order);
//!                waits until this origin's buffers are free
//!   wait/test    until a Complete came from every origin of the posted group
//!   lock         a Lock request; waits for the grant (none with MPI_MODE_NOCHECK)
//!   unlock/flush an Unlock/Flush request; waits for its answer, which the target sends after
//!                applying everything before it
//! ```
//!
//! The answers carry the first failure the target met in this origin's requests (an
//! access outside a dynamic window's attached memory, say), which the synchronization call
//! then returns.
//!
//! **Two ways to reach the window** ([`Access`]). Each call is written once, as steps on the
//! window (under the process's lock) and waits between them. [`Holding`] runs it as it
//! always ran: the engine, the communicators and the window borrowed for the whole call,
//! the waits in the engine's loop (below `MPI_THREAD_MULTIPLE`: no lock, nothing added).
//! [`Releasing`] runs it under `MPI_THREAD_MULTIPLE`: it owns only the window's handle,
//! finds the window afresh in each step, and waits through [`Calling::wait_until`], which
//! lets the lock go between two looks (`runtime::thread`), so that a thread in
//! `MPI_Win_fence` or `MPI_Win_lock` does not stop the process's other threads from
//! answering the messages the other processes need first. The fence's barrier is then the
//! barrier's schedule (the one `MPI_Barrier` runs under that level), polled in the looks.
//!
//! **The device's data path** (`DeviceData`): a put or get that skips the request may reach
//! a target only while this origin's epoch there is known to be open, which these calls say
//! ([`WinState::device_epoch`]): after the fence's barrier, after the target's post (start),
//! after the lock's grant (never on the strength of a lock request still queued at the
//! target), until complete, unlock or the next fence. Completion needs nothing more: on one
//! host a device write is in place when it returns; across hosts it travels on the same
//! connection ahead of the flush, unlock or complete request that follows it, and the
//! target's device applies it before the request is read, so the answer covers it.

use super::direct::Direct;
use super::state::WinState;
use super::wire::Say;
use super::{state, Win};
use crate::abi::*;
use crate::comm::CommTable;
use crate::error::{MpiError, MpiResult};
use crate::runtime::thread::Calling;
use mpich_channel::{Engine, HookId};
use std::ffi::c_int;

/// How a synchronization call reaches its window and waits (see the module's doc).
pub(crate) trait Access {
    /// Runs `f` on the engine, the communicators, the windows' hook and the window.
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Engine, &mut CommTable, HookId, &mut Win) -> MpiResult<T>,
    ) -> MpiResult<T>;

    /// Waits until `done` says so of the window's state (the engine turns meanwhile,
    /// applying requests to every window, at least once), then reports a failure a target
    /// answered with.
    fn wait(&mut self, done: impl FnMut(&mut WinState) -> bool) -> MpiResult<()>;

    /// Waits until `ready` holds of the shared-memory window's locks (a direct window).
    fn wait_direct(&mut self, ready: impl FnMut(&Direct) -> bool) -> MpiResult<()>;

    /// A barrier on the window's communicator.
    fn barrier(&mut self) -> MpiResult<()>;
}

/// The window reached through borrows held for the whole call (the waits hold them too).
pub(crate) struct Holding<'a> {
    engine: &'a mut Engine,
    comms: &'a mut CommTable,
    hook: HookId,
    win: &'a mut Win,
}

impl<'a> Holding<'a> {
    #[inline]
    pub fn new(
        engine: &'a mut Engine,
        comms: &'a mut CommTable,
        hook: HookId,
        win: &'a mut Win,
    ) -> Holding<'a> {
        Holding {
            engine,
            comms,
            hook,
            win,
        }
    }
}

impl Access for Holding<'_> {
    #[inline(always)]
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Engine, &mut CommTable, HookId, &mut Win) -> MpiResult<T>,
    ) -> MpiResult<T> {
        f(self.engine, self.comms, self.hook, self.win)
    }

    fn wait(&mut self, mut done: impl FnMut(&mut WinState) -> bool) -> MpiResult<()> {
        let (hook, slot) = (self.hook, self.win.slot);
        self.engine.poke()?;
        self.engine.block_on(|e| {
            let (w, _) = state(e, hook, slot);
            Ok::<_, MpiError>(done(w).then_some(()))
        })?;
        let (w, _) = state(self.engine, hook, slot);
        failure(std::mem::take(&mut w.failure))
    }

    fn wait_direct(&mut self, mut ready: impl FnMut(&Direct) -> bool) -> MpiResult<()> {
        let d = self.win.direct.as_ref().expect("a direct window");
        self.engine
            .block_on(|_| Ok::<_, MpiError>(ready(d).then_some(())))
    }

    fn barrier(&mut self) -> MpiResult<()> {
        crate::coll::direct::barrier(self.engine, self.comms, self.win.comm)
    }
}

/// The window reached afresh by its handle at each step and each look of a wait, which lets
/// the process's lock go between looks (`MPI_THREAD_MULTIPLE`).
pub(crate) struct Releasing<'c> {
    call: &'c mut Calling,
    handle: MPI_Win,
}

impl<'c> Releasing<'c> {
    pub fn new(call: &'c mut Calling, handle: MPI_Win) -> Releasing<'c> {
        Releasing { call, handle }
    }
}

impl Access for Releasing<'_> {
    fn with<T>(
        &mut self,
        f: impl FnOnce(&mut Engine, &mut CommTable, HookId, &mut Win) -> MpiResult<T>,
    ) -> MpiResult<T> {
        let rt = self.call.state().runtime()?;
        let hook = rt.wins.hook(&mut rt.engine);
        let win = rt.wins.get_mut(self.handle)?;
        f(&mut rt.engine, &mut rt.comms, hook, win)
    }

    fn wait(&mut self, mut done: impl FnMut(&mut WinState) -> bool) -> MpiResult<()> {
        let handle = self.handle;
        let class = self.call.wait_until(|st| {
            let rt = st.runtime()?;
            rt.engine.poke()?;
            let hook = rt.wins.hook(&mut rt.engine);
            let slot = rt.wins.get(handle)?.slot;
            let (w, _) = state(&mut rt.engine, hook, slot);
            Ok(done(w).then(|| std::mem::take(&mut w.failure)))
        })?;
        failure(class)
    }

    fn wait_direct(&mut self, mut ready: impl FnMut(&Direct) -> bool) -> MpiResult<()> {
        let handle = self.handle;
        self.call.wait_until(|st| {
            let rt = st.runtime()?;
            let d = rt
                .wins
                .get(handle)?
                .direct
                .as_ref()
                .expect("a direct window");
            if ready(d) {
                return Ok(Some(()));
            }
            rt.engine.poke()?;
            Ok(None)
        })
    }

    fn barrier(&mut self) -> MpiResult<()> {
        let rt = self.call.state().runtime()?;
        let comm = rt.wins.get(self.handle)?.comm;
        let mut plan = crate::coll::barrier_schedule(&mut rt.comms, &mut rt.coll_spare, comm)?;
        self.call.wait_until(|st| {
            let rt = st.runtime()?;
            rt.engine.poke()?;
            Ok(plan.poll(rt.engine.p2p())?.then_some(()))
        })?;
        match plan.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The failure a target answered with (`class`, 0 for none), as an error.
fn failure(class: c_int) -> MpiResult<()> {
    match class {
        0 => Ok(()),
        class => Err(MpiError::new(
            class,
            "a target refused one of this process's operations (outside the target's window or attached memory, or an operation not defined on the type)",
        )),
    }
}

fn sync_error(detail: impl Into<String>) -> MpiError {
    MpiError::new(MPI_ERR_RMA_SYNC, detail)
}

/// Every target is flushed and settled.
fn settle_all(a: &mut impl Access) -> MpiResult<()> {
    a.with(|engine, _, hook, win| {
        let (w, adi) = state(engine, hook, win.slot);
        for t in 0..w.size() {
            w.send_flush(adi, t)?;
        }
        Ok(())
    })?;
    a.wait(|w| (0..w.size()).all(|t| w.settled(t)))
}

/// `MPI_Win_fence`.
pub(crate) fn fence(a: &mut impl Access, assert: c_int) -> MpiResult<()> {
    a.with(|_, _, _, win| {
        if win.epochs.open() {
            return Err(sync_error(
                "a fence was called while a post/start or lock epoch is open on the window",
            ));
        }
        Ok(())
    })?;
    let outcome = if assert & MPI_MODE_NOPRECEDE == 0 {
        settle_all(a)
    } else {
        Ok(())
    };
    a.barrier()?;
    a.with(|engine, _, hook, win| {
        win.epochs.fence = assert & MPI_MODE_NOSUCCEED == 0;
        win.epochs.fence_used = false;
        // After the barrier every process is in the epoch the fence opened (or none is).
        let n = win.peers.len();
        state(engine, hook, win.slot)
            .0
            .device_epoch(0..n, win.epochs.fence);
        Ok(())
    })?;
    outcome
}

/// Leaving a fence epoch for another kind (`leave` runs `Epochs::leave_unused_fence`): the
/// device's data path closes to every target until the new epoch opens it.
fn leave_fence(engine: &mut Engine, hook: HookId, win: &mut Win, call: &str) -> MpiResult<()> {
    let was = win.epochs.fence;
    win.epochs.leave_unused_fence(call)?;
    if was {
        let n = win.peers.len();
        state(engine, hook, win.slot).0.device_epoch(0..n, false);
    }
    Ok(())
}

/// The window ranks of `group`'s members (`MPI_ERR_GROUP` for a process not in the window).
fn window_ranks(w: &WinState, group: &crate::group::GroupData) -> MpiResult<Vec<usize>> {
    group
        .ranks()
        .iter()
        .map(|&g| {
            w.ranks
                .iter()
                .position(|&r| r == g as usize)
                .ok_or_else(|| {
                    MpiError::new(
                        MPI_ERR_GROUP,
                        format!("process {g} of the group is not in the window"),
                    )
                })
        })
        .collect()
}

/// `MPI_Win_post` (it does not wait).
pub(crate) fn post(
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
    group: &crate::group::GroupData,
    assert: c_int,
) -> MpiResult<()> {
    if win.epochs.exposure.is_some() {
        return Err(sync_error(
            "MPI_Win_post was called while an exposure epoch is open",
        ));
    }
    leave_fence(engine, hook, win, "MPI_Win_post")?;
    let (w, adi) = state(engine, hook, win.slot);
    let origins = window_ranks(w, group)?;
    if assert & MPI_MODE_NOCHECK == 0 {
        for &o in &origins {
            w.say(adi, o, Say::Post, 0, 0)?;
        }
    }
    win.epochs.exposure = Some(origins);
    Ok(())
}

/// `MPI_Win_start`.
pub(crate) fn start(
    a: &mut impl Access,
    group: &crate::group::GroupData,
    assert: c_int,
) -> MpiResult<()> {
    let targets = a.with(|engine, _, hook, win| {
        if win.epochs.access.is_some() {
            return Err(sync_error(
                "MPI_Win_start was called while an access epoch is open",
            ));
        }
        leave_fence(engine, hook, win, "MPI_Win_start")?;
        window_ranks(state(engine, hook, win.slot).0, group)
    })?;
    let check = assert & MPI_MODE_NOCHECK == 0;
    if check {
        a.wait(|w| targets.iter().all(|&t| w.posts[t] > 0))?;
    }
    a.with(|engine, _, hook, win| {
        let (w, _) = state(engine, hook, win.slot);
        if check {
            for &t in &targets {
                w.posts[t] -= 1;
            }
        }
        w.device_epoch(targets.iter().copied(), true);
        win.epochs.access = Some(targets);
        Ok(())
    })
}

/// `MPI_Win_complete`.
pub(crate) fn complete(a: &mut impl Access) -> MpiResult<()> {
    let targets = a.with(|engine, _, hook, win| {
        let Some(targets) = win.epochs.access.take() else {
            return Err(sync_error(
                "MPI_Win_complete was called without MPI_Win_start",
            ));
        };
        let (w, _) = state(engine, hook, win.slot);
        w.device_epoch(targets.iter().copied(), false);
        Ok(targets)
    })?;
    // The targets' memory is read until the device's reads are done: the epoch ends after.
    a.wait(|w| targets.iter().all(|&t| w.device_reads_done(t)))?;
    a.with(|engine, _, hook, win| {
        let (w, adi) = state(engine, hook, win.slot);
        for &t in &targets {
            w.send_complete(adi, t)?;
        }
        Ok(())
    })?;
    a.wait(|w| targets.iter().all(|&t| w.local_done(t)))
}

/// `MPI_Win_wait` (`block`) and `MPI_Win_test`: whether every origin of the posted group
/// completed its epoch (then the exposure epoch is over).
pub(crate) fn wait_posted(a: &mut impl Access, block: bool) -> MpiResult<bool> {
    let origins = a.with(|_, _, _, win| {
        win.epochs.exposure.clone().ok_or_else(|| {
            sync_error("MPI_Win_wait or MPI_Win_test was called without MPI_Win_post")
        })
    })?;
    let all_in = |w: &mut WinState| origins.iter().all(|&o| w.completes[o] > 0);
    if block {
        a.wait(all_in)?;
    } else {
        let over = a.with(|engine, _, hook, win| {
            engine.poke()?;
            Ok(all_in(state(engine, hook, win.slot).0))
        })?;
        if !over {
            return Ok(false);
        }
    }
    a.with(|engine, _, hook, win| {
        let (w, _) = state(engine, hook, win.slot);
        for &o in &origins {
            w.completes[o] -= 1;
        }
        win.epochs.exposure = None;
        Ok(true)
    })
}

/// The window rank `rank` names, or `MPI_ERR_RANK`.
pub(crate) fn target_rank(win: &Win, rank: c_int) -> MpiResult<usize> {
    usize::try_from(rank)
        .ok()
        .filter(|&r| r < win.peers.len())
        .ok_or_else(|| {
            MpiError::new(
                MPI_ERR_RANK,
                format!(
                    "rank {rank} is not in the window (its group has {} processes)",
                    win.peers.len()
                ),
            )
        })
}

/// `MPI_Win_lock`.
pub(crate) fn lock(
    a: &mut impl Access,
    kind: c_int,
    target: usize,
    assert: c_int,
) -> MpiResult<()> {
    if kind != MPI_LOCK_SHARED && kind != MPI_LOCK_EXCLUSIVE {
        return Err(MpiError::new(
            MPI_ERR_LOCKTYPE,
            format!("{kind} is not a lock type (use MPI_LOCK_SHARED or MPI_LOCK_EXCLUSIVE)"),
        ));
    }
    let direct = a.with(|engine, _, hook, win| {
        if win.epochs.lock_all.is_some() || win.epochs.locks[target].is_some() {
            return Err(sync_error(format!(
                "rank {target} of the window is locked already by this process"
            )));
        }
        if win.epochs.access.is_some() {
            return Err(sync_error("MPI_Win_lock was called inside a start epoch"));
        }
        leave_fence(engine, hook, win, "MPI_Win_lock")?;
        Ok(win.direct.is_some())
    })?;
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if direct && !nocheck {
        let shared = kind == MPI_LOCK_SHARED;
        a.wait_direct(|d| d.try_lock(target, shared))?;
    } else if !nocheck {
        a.with(|engine, _, hook, win| {
            let (w, adi) = state(engine, hook, win.slot);
            w.send_lock(adi, target, kind)?;
            Ok(())
        })?;
        a.wait(|w| w.granted[target] > 0)?;
        a.with(|engine, _, hook, win| {
            state(engine, hook, win.slot).0.granted[target] -= 1;
            Ok(())
        })?;
    }
    // Granted (or no other lock can conflict: MPI_MODE_NOCHECK).
    a.with(|engine, _, hook, win| {
        state(engine, hook, win.slot).0.device_epoch([target], true);
        win.epochs.locks[target] = Some((kind, nocheck));
        Ok(())
    })
}

/// `MPI_Win_unlock`.
pub(crate) fn unlock(a: &mut impl Access, target: usize) -> MpiResult<()> {
    // `None`: a direct window, whose unlock is done.
    let on_messages = a.with(|engine, _, hook, win| {
        let Some((kind, nocheck)) = win.epochs.locks[target].take() else {
            return Err(sync_error(format!(
                "MPI_Win_unlock of rank {target}, which this process has not locked"
            )));
        };
        if let Some(d) = &win.direct {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            if !nocheck {
                d.unlock(target, kind == MPI_LOCK_SHARED);
            }
            return Ok(None);
        }
        state(engine, hook, win.slot)
            .0
            .device_epoch([target], false);
        Ok(Some(nocheck))
    })?;
    let Some(nocheck) = on_messages else {
        return Ok(());
    };
    a.wait(|w| w.device_reads_done(target))?;
    a.with(|engine, _, hook, win| {
        let (w, adi) = state(engine, hook, win.slot);
        if nocheck {
            w.send_flush(adi, target)?;
        } else {
            w.send_unlock(adi, target)?;
        }
        Ok(())
    })?;
    a.wait(|w| w.settled(target))
}

/// `MPI_Win_lock_all`.
pub(crate) fn lock_all(a: &mut impl Access, assert: c_int) -> MpiResult<()> {
    let (direct, n) = a.with(|engine, _, hook, win| {
        if win.epochs.lock_all.is_some() || win.epochs.locks.iter().any(Option::is_some) {
            return Err(sync_error(
                "MPI_Win_lock_all was called while this process holds a lock on the window",
            ));
        }
        if win.epochs.access.is_some() {
            return Err(sync_error(
                "MPI_Win_lock_all was called inside a start epoch",
            ));
        }
        leave_fence(engine, hook, win, "MPI_Win_lock_all")?;
        Ok((win.direct.is_some(), win.peers.len()))
    })?;
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if direct && !nocheck {
        for t in 0..n {
            a.wait_direct(|d| d.try_lock(t, true))?;
        }
    } else if !nocheck {
        a.with(|engine, _, hook, win| {
            let (w, adi) = state(engine, hook, win.slot);
            for t in 0..w.size() {
                w.send_lock(adi, t, MPI_LOCK_SHARED)?;
            }
            Ok(())
        })?;
        a.wait(|w| (0..w.size()).all(|t| w.granted[t] > 0))?;
        a.with(|engine, _, hook, win| {
            let (w, _) = state(engine, hook, win.slot);
            for t in 0..w.size() {
                w.granted[t] -= 1;
            }
            Ok(())
        })?;
    }
    a.with(|engine, _, hook, win| {
        state(engine, hook, win.slot).0.device_epoch(0..n, true);
        win.epochs.lock_all = Some(nocheck);
        Ok(())
    })
}

/// `MPI_Win_unlock_all`.
pub(crate) fn unlock_all(a: &mut impl Access) -> MpiResult<()> {
    // `None`: a direct window, whose unlock is done.
    let on_messages = a.with(|engine, _, hook, win| {
        let Some(nocheck) = win.epochs.lock_all.take() else {
            return Err(sync_error(
                "MPI_Win_unlock_all was called without MPI_Win_lock_all",
            ));
        };
        if let Some(d) = &win.direct {
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            if !nocheck {
                for t in 0..win.peers.len() {
                    d.unlock(t, true);
                }
            }
            return Ok(None);
        }
        let (w, _) = state(engine, hook, win.slot);
        let n = w.size();
        w.device_epoch(0..n, false);
        Ok(Some(nocheck))
    })?;
    let Some(nocheck) = on_messages else {
        return Ok(());
    };
    a.wait(|w| (0..w.size()).all(|t| w.device_reads_done(t)))?;
    a.with(|engine, _, hook, win| {
        let (w, adi) = state(engine, hook, win.slot);
        for t in 0..w.size() {
            if nocheck {
                w.send_flush(adi, t)?;
            } else {
                w.send_unlock(adi, t)?;
            }
        }
        Ok(())
    })?;
    a.wait(|w| (0..w.size()).all(|t| w.settled(t)))
}

/// `MPI_Win_flush` (`local`: `MPI_Win_flush_local`) of `target`, or of every target.
pub(crate) fn flush(a: &mut impl Access, target: Option<usize>, local: bool) -> MpiResult<()> {
    // `None`: a direct window, whose flush is done.
    let targets = a.with(|engine, _, hook, win| {
        if !win.epochs.flushable(target) {
            return Err(sync_error(
                "a flush was called outside a passive-target (lock) epoch",
            ));
        }
        if win.direct.is_some() {
            super::direct::order_flushed_stores();
            return Ok(None);
        }
        let (w, adi) = state(engine, hook, win.slot);
        let targets: Vec<usize> = match target {
            Some(t) => vec![t],
            None => (0..w.size()).collect(),
        };
        if !local {
            for &t in &targets {
                w.send_flush(adi, t)?;
            }
        }
        Ok(Some(targets))
    })?;
    let Some(targets) = targets else {
        return Ok(());
    };
    if local {
        a.wait(|w| targets.iter().all(|&t| w.local_done(t)))
    } else {
        a.wait(|w| targets.iter().all(|&t| w.settled(t)))
    }
}

/// Before a window is freed: no epoch may be open, everything this process sent must be
/// applied, and every process must be done with the window (a barrier), so that nothing
/// arrives for it afterwards.
pub(crate) fn quiesce(a: &mut impl Access) -> MpiResult<()> {
    a.with(|_, _, _, win| {
        if win.epochs.open() {
            return Err(sync_error(
                "the window is freed while a post/start or lock epoch is open on it",
            ));
        }
        Ok(())
    })?;
    settle_all(a)?;
    a.barrier()?;
    a.wait(|w| w.quiet())
}
