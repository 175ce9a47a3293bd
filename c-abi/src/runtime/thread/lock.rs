//! The process-wide lock of the MPI state: on while the progress thread runs or the program
//! was granted `MPI_THREAD_MULTIPLE`, off (one relaxed load per call) otherwise.
//!
//! ```text
//!   call() ──ON? (one relaxed load)──no──▶ body, no lock (the default)
//!                    └─yes─▶ enter(): HOLDING on this thread? ──yes──▶ body (nested call)
//!                                          └─no─▶ LOCK, HOLDING = true ─▶ body ─▶ release
//!   a wait of a call that holds LOCK itself: pause() (unlock) ─▶ back off ─▶ resume() (lock)
//!   progress thread ──▶ try_enter(): LOCK if free (never waits for it) ─▶ engine turns
//! ```
//!
//! `ON` has one bit per reason. The progress thread's is set before the thread is spawned
//! (so the spawn orders it before anything the thread does) and cleared after it is joined.
//! `MPI_THREAD_MULTIPLE`'s is set by `MPI_Init_thread` (or `MPI_Session_init`) granting that
//! level, before the call returns, and never cleared: a thread that calls MPI after that
//! has learned that MPI is initialized through the program's own synchronization with the
//! initializing thread (or was spawned after it), which orders the store before its load, so
//! a relaxed load sees it.
//!
//! **Checks** (`MPI_THREAD_CHECK=1`, off by default). Below `MPI_THREAD_MULTIPLE` calls then
//! take the lock too, and [`enter_call`] checks the level's rule: under `MPI_THREAD_SINGLE` or
//! `FUNNELED` a call from a thread other than the one that was granted the level, under
//! `MPI_THREAD_SERIALIZED` a call while another thread is inside MPI, is a [`Misuse`]: the
//! first is returned as `MPI_ERR_OTHER` (through the error handler, the lock held), the second
//! ends the job (the state is in the other thread's hands, so no handler can be looked up).
//!
//! **Reentrancy.** Code of the program runs inside MPI calls (reduction operations, attribute
//! callbacks, error handlers) and may call MPI again on the same thread: `HOLDING` marks the
//! thread that holds the lock, and its nested calls go straight to their body, as they would
//! without the lock. The progress thread marks itself too, since a nonblocking collective it
//! advances may run a user-defined reduction that calls MPI. A nested call never releases
//! the lock (its [`Held`] does not own it): its waits keep it, as the outer call's borrows
//! of the state are alive below it.
//!
//! **Shared holds (lanes).** The lock is a readers-writer lock. Every call above takes it
//! exclusively; a point-to-point call on a lane other than 0 (`runtime::lanes`) takes it
//! shared ([`shared`]) and its lane's mutex, and reaches the rest of the state read-only
//! (`thread::lane`). It never runs the program's code, so no call nests in it.

pub(crate) use super::striped::Shared;
use super::striped::{Exclusive, StripedLock};
use crate::abi::{MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED};
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

/// Why MPI calls take the lock: a bit per reason, 0 when they need not.
static ON: AtomicU8 = AtomicU8::new(0);
/// The progress thread runs.
const PROGRESS_THREAD: u8 = 1;
/// The program was granted `MPI_THREAD_MULTIPLE`.
const MULTIPLE: u8 = 2;
/// The checks of a lower level's rules were asked for (`MPI_THREAD_CHECK=1`).
const CHECK: u8 = 4;

/// The highest level granted below `MPI_THREAD_MULTIPLE`, for the checks.
static CHECKED_LEVEL: AtomicI32 = AtomicI32::new(0);

/// The lock of the process's MPI state. It guards no data of its own: holding it
/// exclusively is the right to use the state in [`crate::runtime::global`]; holding it shared,
/// the right to read it and to use the lanes behind their own mutexes. Shared holds are
/// counted per thread (`super::striped`), so lanes do not meet here.
static LOCK: StripedLock = StripedLock::new();

thread_local! {
    /// Whether this thread holds [`LOCK`] (its MPI calls are then nested in one that does).
    static HOLDING: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread was granted a level (the main thread), for the checks.
    static MAIN: Cell<bool> = const { Cell::new(false) };
}

/// Whether MPI calls must take the lock (the progress thread runs, or the level is
/// `MPI_THREAD_MULTIPLE`). The cost of the lock when it is off: this load and a branch per
/// MPI call (and, in `call`, a test of the outcome at the end).
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed) != 0
}

/// Turns the progress thread's reason on (before the thread starts) or off (after it was
/// joined).
pub(crate) fn set_progress_thread(on: bool) {
    if on {
        ON.fetch_or(PROGRESS_THREAD, Ordering::Relaxed);
    } else {
        ON.fetch_and(!PROGRESS_THREAD, Ordering::Relaxed);
    }
}

/// Turns the lock on for good: the program was granted `MPI_THREAD_MULTIPLE`.
pub(crate) fn set_multiple() {
    ON.fetch_or(MULTIPLE, Ordering::Relaxed);
}

/// Turns the checks of `level`'s rules on (`MPI_THREAD_CHECK=1`), the calling thread being the
/// main one: every call then takes the lock, and [`enter_call`] checks the rule.
pub(crate) fn set_check(level: c_int) {
    MAIN.with(|m| m.set(true));
    CHECKED_LEVEL.fetch_max(level, Ordering::Relaxed);
    ON.fetch_or(CHECK, Ordering::Relaxed);
}

/// Whether a call's waits may let the lock go: other threads may call MPI meanwhile
/// (`MPI_THREAD_MULTIPLE`) or the progress thread wants turns. Under the checks alone, a
/// wait keeps the lock, so that another thread's call meanwhile is seen as the misuse it is.
#[inline]
pub(crate) fn waits_let_go() -> bool {
    ON.load(Ordering::Relaxed) & (MULTIPLE | PROGRESS_THREAD) != 0
}

/// A call that breaks the rule of the level granted (seen with `MPI_THREAD_CHECK=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Misuse {
    /// From a thread other than the main one under `MPI_THREAD_SINGLE` or `FUNNELED`.
    NotMain(c_int),
    /// While another thread is inside MPI, under `MPI_THREAD_SERIALIZED`.
    Concurrent,
}

impl Misuse {
    /// What the program is told.
    #[cold]
    pub fn message(self, func: &str) -> String {
        match self {
            Misuse::NotMain(level) => format!(
                "{func} was called from a thread other than the one that initialized MPI, which {} does not allow (the level MPI_Init_thread granted); ask MPI_Init_thread for MPI_THREAD_MULTIPLE, or make the calls from the main thread",
                if level == crate::abi::MPI_THREAD_SINGLE { "MPI_THREAD_SINGLE" } else { "MPI_THREAD_FUNNELED" }
            ),
            Misuse::Concurrent => format!(
                "{func} was called while another thread was inside MPI, which MPI_THREAD_SERIALIZED (the level MPI_Init_thread granted) does not allow; ask MPI_Init_thread for MPI_THREAD_MULTIPLE, or order the threads' calls"
            ),
        }
    }
}

/// The right to use the MPI state, held until dropped; empty for a call nested in one that
/// holds it on the same thread.
#[must_use]
pub(crate) struct Held(Option<Exclusive>, Option<Misuse>);

impl Held {
    /// The rule this call breaks, if the checks are on and it does (`MPI_THREAD_CHECK=1`).
    #[inline]
    pub fn misuse(&self) -> Option<Misuse> {
        self.1
    }

    /// Whether this call took the lock itself (it is not nested in a call that holds it), so
    /// that its waits may let it go ([`Held::pause`]).
    #[inline]
    pub fn owns(&self) -> bool {
        self.0.is_some()
    }

    /// Lets the lock go for a while (a wait between two looks at the state); the caller must
    /// hold no reference into the state until [`Held::resume`]. Nothing for a nested call.
    pub fn pause(&mut self) {
        if self.0.take().is_some() {
            HOLDING.with(|h| h.set(false));
        }
    }

    /// Takes the lock again after [`Held::pause`] (nothing if it is held).
    pub fn resume(&mut self) {
        if self.0.is_none() {
            self.0 = Some(take_lock());
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.0.is_some() {
            HOLDING.with(|h| h.set(false));
        }
        // The guard, dropped after this, releases the lock.
    }
}

/// Waits for the lock and marks this thread as its holder.
fn take_lock() -> Exclusive {
    let guard = LOCK.exclusive();
    HOLDING.with(|h| h.set(true));
    guard
}

/// Whether this thread holds the lock exclusively (a call on it is nested in one that does).
#[inline]
pub(crate) fn holding() -> bool {
    HOLDING.with(Cell::get)
}

/// From now on calls may take the lock shared (lanes were made, by a thread that holds it
/// exclusively). Until then an exclusive hold is one mutex.
pub(crate) fn allow_shared() {
    LOCK.allow_shared();
}

/// Takes the lock shared, waiting for an exclusive holder to let it go: the lane path's
/// hold (`thread::lane`). The caller must not hold it already in any way.
#[inline]
pub(crate) fn shared() -> Shared {
    LOCK.shared()
}

/// Takes the lock for an MPI call (waiting for the thread that holds it), or nothing if this
/// thread holds it already. No checks (the `MPI_T` calls, whose own level is separate).
#[cold]
#[inline(never)]
pub(crate) fn enter() -> Held {
    if HOLDING.with(Cell::get) {
        return Held(None, None);
    }
    Held(Some(take_lock()), None)
}

/// [`enter`] for the MPI function `func`, with the checks of the level granted when they are
/// on ([`set_check`]): a call from another thread than the main one under
/// `MPI_THREAD_SINGLE`/`FUNNELED` is a misuse (the lock is taken all the same, so that it is
/// reported safely); so is, under `MPI_THREAD_SERIALIZED`, a call while another thread holds
/// the lock (the progress thread aside). The few functions MPI lets any thread call at any
/// time ([`ANY_THREAD`]) only wait for the lock.
#[cold]
#[inline(never)]
pub(crate) fn enter_call(func: &'static str) -> Held {
    if HOLDING.with(Cell::get) {
        return Held(None, None);
    }
    let reasons = ON.load(Ordering::Relaxed);
    if reasons & CHECK == 0 || reasons & MULTIPLE != 0 || ANY_THREAD.contains(&func) {
        return Held(Some(take_lock()), None);
    }
    let level = CHECKED_LEVEL.load(Ordering::Relaxed);
    if level <= MPI_THREAD_FUNNELED && !MAIN.with(Cell::get) {
        return Held(Some(take_lock()), Some(Misuse::NotMain(level)));
    }
    if level == MPI_THREAD_SERIALIZED && reasons & PROGRESS_THREAD == 0 {
        return match LOCK.try_exclusive() {
            Some(guard) => {
                HOLDING.with(|h| h.set(true));
                Held(Some(guard), None)
            }
            // Another thread is inside MPI: the state is not this call's to use.
            None => Held(None, Some(Misuse::Concurrent)),
        };
    }
    Held(Some(take_lock()), None)
}

/// The functions any thread may call at any time, whatever the level (MPI 4.0 §11.6).
const ANY_THREAD: [&str; 6] = [
    "MPI_Initialized",
    "MPI_Finalized",
    "MPI_Query_thread",
    "MPI_Is_thread_main",
    "MPI_Get_version",
    "MPI_Get_library_version",
];

/// Takes the lock if it is free (for the progress thread, which never waits for it: the
/// thread that holds it is inside MPI and turning the engine itself, and `MPI_Finalize` joins
/// the progress thread while holding it).
pub(crate) fn try_enter() -> Option<Held> {
    let guard = LOCK.try_exclusive()?;
    HOLDING.with(|h| h.set(true));
    Some(Held(Some(guard), None))
}
