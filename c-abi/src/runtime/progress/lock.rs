//! The process-wide lock that serializes MPI calls with the progress thread, and only while
//! that thread runs.
//!
//! ```text
//!   call() ──ON? (one relaxed load)──no──▶ body, no lock (the default)
//!                    └─yes─▶ enter(): HOLDING on this thread? ──yes──▶ body (nested call)
//!                                          └─no─▶ LOCK, HOLDING = true ─▶ body ─▶ release
//!   progress thread ──▶ try_enter(): LOCK if free (never waits for it) ─▶ engine turns
//! ```
//!
//! `ON` is set before the progress thread is spawned (so the spawn orders it before anything
//! the thread does) and cleared after the thread is joined; it is read by the thread that
//! called `MPI_Init` and by threads the program orders after it (`MPI_THREAD_SERIALIZED`), so
//! a relaxed load sees it.
//!
//! **Reentrancy.** Code of the program runs inside MPI calls (reduction operations, attribute
//! callbacks, error handlers) and may call MPI again on the same thread: `HOLDING` marks the
//! thread that holds the lock, and its nested calls go straight to their body, as they would
//! without the progress thread. The progress thread marks itself too, since a nonblocking
//! collective it advances may run a user-defined reduction that calls MPI.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// Whether the progress thread runs (and calls take the lock).
static ON: AtomicBool = AtomicBool::new(false);

/// The lock of the process's MPI state while the progress thread runs. It guards no data of
/// its own: holding it is the right to use the state in [`crate::runtime::global`].
static LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether this thread holds [`LOCK`] (its MPI calls are then nested in one that does).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether MPI calls must take the lock (the progress thread runs). The cost of the feature
/// when it is off: this load and a branch per MPI call (and, in `call`, a test of the
/// outcome at the end).
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns the lock on (before the progress thread starts) or off (after it was joined).
pub(super) fn set_on(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The right to use the MPI state, held until dropped; empty for a call nested in one that
/// holds it on the same thread.
#[must_use]
pub(crate) struct Held(Option<MutexGuard<'static, ()>>);

impl Drop for Held {
    fn drop(&mut self) {
        if self.0.is_some() {
            HOLDING.with(|h| h.set(false));
        }
        // The guard, dropped after this, releases the lock.
    }
}

/// Takes the lock for an MPI call (waiting for the progress thread to finish its turns), or
/// nothing if this thread holds it already.
#[cold]
#[inline(never)]
pub(crate) fn enter() -> Held {
    if HOLDING.with(Cell::get) {
        return Held(None);
    }
    // A panic is caught inside the call that holds the guard, so the lock is never poisoned
    // by this library; a poisoned lock would still guard nothing but the right to the state.
    let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    HOLDING.with(|h| h.set(true));
    Held(Some(guard))
}

/// Takes the lock if it is free (for the progress thread, which never waits for it: the
/// thread that holds it is inside MPI and turning the engine itself, and `MPI_Finalize` joins
/// the progress thread while holding it).
pub(super) fn try_enter() -> Option<Held> {
    let guard = match LOCK.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    HOLDING.with(|h| h.set(true));
    Some(Held(Some(guard)))
}
