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
//! **The device's data path** (`DeviceData`): a put or get that skips the request may reach
//! a target only while this origin's epoch there is known to be open, which these calls say
//! ([`WinState::device_epoch`]): after the fence's barrier, after the target's post (start),
//! after the lock's grant (never on the strength of a lock request still queued at the
//! target), until complete, unlock or the next fence. Completion needs nothing more: on one
//! host a device write is in place when it returns; across hosts it travels on the same
//! connection ahead of the flush, unlock or complete request that follows it, and the
//! target's device applies it before the request is read, so the answer covers it.

use super::state::WinState;
use super::wire::Say;
use super::{state, Win};
use crate::abi::*;
use crate::comm::CommTable;
use crate::error::{MpiError, MpiResult};
use mpich_channel::{Engine, HookId};
use std::ffi::c_int;

/// Waits until `done` says so of the window's state (the engine turns meanwhile, applying
/// requests to every window), then reports a failure a target answered with.
///
/// The engine turns at least once, even when `done` holds already: a process that spins on
/// its own window (a lock word it compare-and-swaps, then flushes) is also the target other
/// origins wait for, and its flushes are where their requests get applied (MPI 3.1 §11.7.3:
/// an RMA call at the target lets the origins' operations progress).
fn wait(
    engine: &mut Engine,
    hook: HookId,
    slot: usize,
    mut done: impl FnMut(&mut WinState) -> bool,
) -> MpiResult<()> {
    engine.poke()?;
    engine.block_on(|e| {
        let (w, _) = state(e, hook, slot);
        Ok::<_, MpiError>(done(w).then_some(()))
    })?;
    let (w, _) = state(engine, hook, slot);
    match std::mem::take(&mut w.failure) {
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
fn settle_all(engine: &mut Engine, hook: HookId, slot: usize) -> MpiResult<()> {
    let (w, adi) = state(engine, hook, slot);
    for t in 0..w.size() {
        w.send_flush(adi, t)?;
    }
    wait(engine, hook, slot, |w| (0..w.size()).all(|t| w.settled(t)))
}

/// `MPI_Win_fence`.
pub(crate) fn fence(
    engine: &mut Engine,
    comms: &mut CommTable,
    hook: HookId,
    win: &mut Win,
    assert: c_int,
) -> MpiResult<()> {
    if win.epochs.open() {
        return Err(sync_error(
            "a fence was called while a post/start or lock epoch is open on the window",
        ));
    }
    let outcome = if assert & MPI_MODE_NOPRECEDE == 0 {
        settle_all(engine, hook, win.slot)
    } else {
        Ok(())
    };
    crate::coll::direct::barrier(engine, comms, win.comm)?;
    win.epochs.fence = assert & MPI_MODE_NOSUCCEED == 0;
    win.epochs.fence_used = false;
    // After the barrier every process is in the epoch the fence opened (or none is).
    let n = win.peers.len();
    state(engine, hook, win.slot)
        .0
        .device_epoch(0..n, win.epochs.fence);
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

/// `MPI_Win_post`.
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
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
    group: &crate::group::GroupData,
    assert: c_int,
) -> MpiResult<()> {
    if win.epochs.access.is_some() {
        return Err(sync_error(
            "MPI_Win_start was called while an access epoch is open",
        ));
    }
    leave_fence(engine, hook, win, "MPI_Win_start")?;
    let (w, _) = state(engine, hook, win.slot);
    let targets = window_ranks(w, group)?;
    if assert & MPI_MODE_NOCHECK == 0 {
        wait(engine, hook, win.slot, |w| {
            targets.iter().all(|&t| w.posts[t] > 0)
        })?;
        let (w, _) = state(engine, hook, win.slot);
        for &t in &targets {
            w.posts[t] -= 1;
        }
    }
    state(engine, hook, win.slot)
        .0
        .device_epoch(targets.iter().copied(), true);
    win.epochs.access = Some(targets);
    Ok(())
}

/// `MPI_Win_complete`.
pub(crate) fn complete(engine: &mut Engine, hook: HookId, win: &mut Win) -> MpiResult<()> {
    let Some(targets) = win.epochs.access.take() else {
        return Err(sync_error(
            "MPI_Win_complete was called without MPI_Win_start",
        ));
    };
    let (w, _) = state(engine, hook, win.slot);
    w.device_epoch(targets.iter().copied(), false);
    // The targets' memory is read until the device's reads are done: the epoch ends after.
    wait(engine, hook, win.slot, |w| {
        targets.iter().all(|&t| w.device_reads_done(t))
    })?;
    let (w, adi) = state(engine, hook, win.slot);
    for &t in &targets {
        w.send_complete(adi, t)?;
    }
    wait(engine, hook, win.slot, |w| {
        targets.iter().all(|&t| w.local_done(t))
    })
}

/// `MPI_Win_wait` (`block`) and `MPI_Win_test`: whether every origin of the posted group
/// completed its epoch (then the exposure epoch is over).
pub(crate) fn wait_posted(
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
    block: bool,
) -> MpiResult<bool> {
    let Some(origins) = win.epochs.exposure.clone() else {
        return Err(sync_error(
            "MPI_Win_wait or MPI_Win_test was called without MPI_Win_post",
        ));
    };
    let all_in = |w: &mut WinState| origins.iter().all(|&o| w.completes[o] > 0);
    if block {
        wait(engine, hook, win.slot, all_in)?;
    } else {
        engine.poke()?;
        let (w, _) = state(engine, hook, win.slot);
        if !all_in(w) {
            return Ok(false);
        }
    }
    let (w, _) = state(engine, hook, win.slot);
    for &o in &origins {
        w.completes[o] -= 1;
    }
    win.epochs.exposure = None;
    Ok(true)
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
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
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
    if win.epochs.lock_all.is_some() || win.epochs.locks[target].is_some() {
        return Err(sync_error(format!(
            "rank {target} of the window is locked already by this process"
        )));
    }
    if win.epochs.access.is_some() {
        return Err(sync_error("MPI_Win_lock was called inside a start epoch"));
    }
    leave_fence(engine, hook, win, "MPI_Win_lock")?;
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if let (Some(d), false) = (&win.direct, nocheck) {
        let shared = kind == MPI_LOCK_SHARED;
        engine.block_on(|_| Ok::<_, MpiError>(d.try_lock(target, shared).then_some(())))?;
    } else if !nocheck {
        let (w, adi) = state(engine, hook, win.slot);
        w.send_lock(adi, target, kind)?;
        wait(engine, hook, win.slot, |w| w.granted[target] > 0)?;
        state(engine, hook, win.slot).0.granted[target] -= 1;
    }
    // Granted (or no other lock can conflict: MPI_MODE_NOCHECK).
    state(engine, hook, win.slot).0.device_epoch([target], true);
    win.epochs.locks[target] = Some((kind, nocheck));
    Ok(())
}

/// `MPI_Win_unlock`.
pub(crate) fn unlock(
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
    target: usize,
) -> MpiResult<()> {
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
        return Ok(());
    }
    let (w, _) = state(engine, hook, win.slot);
    w.device_epoch([target], false);
    wait(engine, hook, win.slot, |w| w.device_reads_done(target))?;
    let (w, adi) = state(engine, hook, win.slot);
    if nocheck {
        w.send_flush(adi, target)?;
    } else {
        w.send_unlock(adi, target)?;
    }
    wait(engine, hook, win.slot, |w| w.settled(target))
}

/// `MPI_Win_lock_all`.
pub(crate) fn lock_all(
    engine: &mut Engine,
    hook: HookId,
    win: &mut Win,
    assert: c_int,
) -> MpiResult<()> {
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
    let nocheck = assert & MPI_MODE_NOCHECK != 0;
    if let (Some(d), false) = (&win.direct, nocheck) {
        for t in 0..win.peers.len() {
            engine.block_on(|_| Ok::<_, MpiError>(d.try_lock(t, true).then_some(())))?;
        }
    } else if !nocheck {
        let (w, adi) = state(engine, hook, win.slot);
        let n = w.size();
        for t in 0..n {
            w.send_lock(adi, t, MPI_LOCK_SHARED)?;
        }
        wait(engine, hook, win.slot, |w| (0..n).all(|t| w.granted[t] > 0))?;
        let (w, _) = state(engine, hook, win.slot);
        for t in 0..n {
            w.granted[t] -= 1;
        }
    }
    let n = win.peers.len();
    state(engine, hook, win.slot).0.device_epoch(0..n, true);
    win.epochs.lock_all = Some(nocheck);
    Ok(())
}

/// `MPI_Win_unlock_all`.
pub(crate) fn unlock_all(engine: &mut Engine, hook: HookId, win: &mut Win) -> MpiResult<()> {
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
        return Ok(());
    }
    let (w, _) = state(engine, hook, win.slot);
    let n = w.size();
    w.device_epoch(0..n, false);
    wait(engine, hook, win.slot, |w| {
        (0..n).all(|t| w.device_reads_done(t))
    })?;
    let (w, adi) = state(engine, hook, win.slot);
    for t in 0..n {
        if nocheck {
            w.send_flush(adi, t)?;
        } else {
            w.send_unlock(adi, t)?;
        }
    }
    wait(engine, hook, win.slot, |w| (0..n).all(|t| w.settled(t)))
}

/// `MPI_Win_flush` (`local`: `MPI_Win_flush_local`) of `target`, or of every target.
pub(crate) fn flush(
    engine: &mut Engine,
    hook: HookId,
    win: &Win,
    target: Option<usize>,
    local: bool,
) -> MpiResult<()> {
    if !win.epochs.flushable(target) {
        return Err(sync_error(
            "a flush was called outside a passive-target (lock) epoch",
        ));
    }
    if win.direct.is_some() {
        super::direct::order_flushed_stores();
        return Ok(());
    }
    let (w, adi) = state(engine, hook, win.slot);
    let targets: Vec<usize> = match target {
        Some(t) => vec![t],
        None => (0..w.size()).collect(),
    };
    if local {
        return wait(engine, hook, win.slot, |w| {
            targets.iter().all(|&t| w.local_done(t))
        });
    }
    for &t in &targets {
        w.send_flush(adi, t)?;
    }
    wait(engine, hook, win.slot, |w| {
        targets.iter().all(|&t| w.settled(t))
    })
}

/// Before a window is freed: no epoch may be open, everything this process sent must be
/// applied, and every process must be done with the window (a barrier), so that nothing
/// arrives for it afterwards.
pub(crate) fn quiesce(
    engine: &mut Engine,
    comms: &mut CommTable,
    hook: HookId,
    win: &Win,
) -> MpiResult<()> {
    if win.epochs.open() {
        return Err(sync_error(
            "the window is freed while a post/start or lock epoch is open on it",
        ));
    }
    settle_all(engine, hook, win.slot)?;
    crate::coll::direct::barrier(engine, comms, win.comm)?;
    wait(engine, hook, win.slot, |w| w.quiet())
}
