//! The asynchronous progress thread (`MPI_ASYNC_PROGRESS=1`): a thread of the library that
//! turns the progress engine while the program computes, so that one-sided operations on the
//! message path complete at a target that makes no MPI call.
//!
//! ```text
//!   MPI_Init / MPI_Init_thread ──(MPI_ASYNC_PROGRESS=1|true|yes)──▶ lock on, spawn thread
//!
//!   the program's thread                      the progress thread
//!   MPI_Put ─▶ call: lock ─▶ body ─▶ unlock    loop: try the lock ── taken ─▶ idle wait
//!   compute (no MPI call)                            └─ free ─▶ engine.poke() up to 16
//!                                                     times (Rma hook applies arrivals)
//!                                                     ─▶ unlock ─▶ reset, or idle wait
//!   MPI_Finalize ─▶ call: lock ─▶ stop + join ─▶ lock off ─▶ engine torn down
//! ```
//!
//! **Why it is needed.** On the message path (windows of `MPI_Win_create`, windows across
//! hosts, `MPI_WIN_DIRECT=0`) a one-sided operation is a request that the *target's* engine
//! applies (the `Rma` hook of [`crate::win`]), and a target's engine turns only when the
//! target calls MPI. MPI 3.1 §11.7 allows that, but a program whose target computes for a long
//! time between calls leaves its origins waiting in `MPI_Win_unlock` as long. With the
//! thread, the target's engine turns within [`idle::LONGEST_NAP`] (plus the scheduler's
//! delay) of an arrival, whatever the program does.
//!
//! **One lock, only when on.** The state of [`crate::runtime::global`] is not thread safe;
//! while the thread runs, every MPI call ([`crate::runtime::export::call`], with its error
//! path) and every round of the thread hold one process-wide lock ([`lock`]). When the
//! variable is not set there is no thread and no lock: each call pays one relaxed load of a
//! flag and a branch. Calls nested in a call on the same thread (a user reduction or
//! callback calling MPI) do not take the lock again.
//!
//! **The thread never waits for the lock.** It tries the lock and backs off if a call holds
//! it (that call is turning the engine itself). So `MPI_Finalize`, which runs under the lock,
//! can stop and join the thread before it tears the engine down. A round holds the lock for
//! at most [`TURNS_PER_ROUND`] turns of the engine, stopping at the first turn with nothing
//! to do, so a call of the program waits for the lock at most that long. While nothing
//! happens the thread spins briefly, yields, then naps ([`idle`]).
//!
//! **Lanes.** With lanes (`runtime::lanes`, under `MPI_THREAD_MULTIPLE`) a round also turns
//! every other lane once, so that a lane's rendezvous moves on while every thread of the
//! program computes.
//!
//! **Thread level.** The lock is the one `MPI_THREAD_MULTIPLE` turns on too
//! ([`crate::runtime::thread`]): the thread runs beside any number of the program's threads
//! in MPI, its rounds taking the lock when no call holds it (a call's wait lets it go between
//! looks).
//!
//! **Failures.** An error of the engine in the thread (a peer that died) cannot be returned
//! to any caller: it ends the job as a fatal error of a call would, with a line on stderr
//! naming the failure (and the dead rank) and the launcher told to end the other ranks. A
//! panic in the thread is reported the same way. The thread never keeps a process alive:
//! `MPI_Abort`, a fatal error or `exit` end the process with it.

mod idle;

use crate::comm::WORLD;
use crate::errhandler::end_process;
use crate::error::MpiError;
use crate::runtime::thread::lock;
use crate::runtime::{global, Phase};
use idle::Idle;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// The environment variable that asks for the thread.
pub(crate) const ENV: &str = "MPI_ASYNC_PROGRESS";

/// Turns of the engine in one round under the lock, at most.
const TURNS_PER_ROUND: u32 = 16;

/// The running thread, from `MPI_Init` to `MPI_Finalize`.
static THREAD: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);
/// Tells the thread to end.
static STOP: AtomicBool = AtomicBool::new(false);

/// Whether `value` of [`ENV`] asks for the thread: `1`, `true` or `yes` (any case) do; unset,
/// empty, `0`, `false` and `no` do not. Anything else is a mistake, reported (`Err`).
fn asked(value: Option<&str>) -> Result<bool, String> {
    let Some(v) = value.map(str::trim) else {
        return Ok(false);
    };
    match v.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "" | "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!(
            "{ENV}={v:?} is not understood (use 1, true or yes to start the asynchronous progress thread, 0 to not): no thread is started"
        )),
    }
}

/// Starts the thread if [`ENV`] asks for it. Called by `MPI_Init` and `MPI_Init_thread` after
/// their call has ended (so the state is not borrowed while the thread starts using it).
pub(crate) fn start_if_asked() {
    let value = std::env::var(ENV).ok();
    match asked(value.as_deref()) {
        Ok(true) => {}
        Ok(false) => return,
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "MPI warning: {why}");
            return;
        }
    }
    let mut slot = THREAD.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return;
    }
    STOP.store(false, Ordering::Relaxed);
    // Before the spawn, which orders it before everything the thread does.
    lock::set_progress_thread(true);
    let spawned = std::thread::Builder::new()
        .name("mpi-async-progress".into())
        .spawn(run);
    match spawned {
        Ok(handle) => *slot = Some(handle),
        Err(e) => {
            lock::set_progress_thread(false);
            fail(
                None,
                &MpiError::new(
                    crate::abi::MPI_ERR_OTHER,
                    format!("the asynchronous progress thread ({ENV}=1) did not start: {e}"),
                ),
            )
        }
    }
}

/// Stops and joins the thread, if it runs. Called by `MPI_Finalize` before the engine is torn
/// down; safe while holding the lock (the thread never waits for it).
pub(crate) fn stop() {
    let handle = THREAD.lock().unwrap_or_else(|p| p.into_inner()).take();
    let Some(handle) = handle else {
        return;
    };
    STOP.store(true, Ordering::Release);
    // The thread ends its round (or nap) and sees STOP; its failures end the process instead
    // of returning, so a join error is only a panic that escaped the thread's own catch.
    let _ = handle.join();
    lock::set_progress_thread(false);
}

/// The thread: rounds of engine turns under the lock, backing off while nothing happens.
fn run() {
    let mut idle = Idle::default();
    while !STOP.load(Ordering::Acquire) {
        let Some(held) = lock::try_enter() else {
            idle.wait();
            continue;
        };
        let outcome = catch_unwind(AssertUnwindSafe(round));
        drop(held);
        match outcome {
            Ok(Ok(true)) => idle.reset(),
            Ok(Ok(false)) => idle.wait(),
            Ok(Err((rank, e))) => fail(rank, &e),
            Err(_) => fail(
                None,
                &MpiError::internal(
                    "the asynchronous progress thread failed an internal check; please report this as a bug",
                ),
            ),
        }
    }
}

/// One round, under the lock: turns the engine until a turn finds nothing to do, at most
/// [`TURNS_PER_ROUND`] times. `true` if anything happened; an error comes with this process's
/// rank.
fn round() -> Result<bool, (Option<usize>, MpiError)> {
    // SAFETY: the caller holds the lock, which every MPI call of the program holds while the
    // thread runs (see the module documentation): this is the only reference to the state
    // until the round ends.
    let st = unsafe { global::state() };
    let Phase::Running(rt) = &mut st.phase else {
        return Ok(false);
    };
    let mut any = false;
    for _ in 0..TURNS_PER_ROUND {
        match rt.engine.poke() {
            Ok(true) => any = true,
            Ok(false) => break,
            Err(e) => return Err((Some(rt.comms.get(WORLD).rank), e.into())),
        }
    }
    // The other lanes' operations move on too (under MPI_THREAD_MULTIPLE with lanes): once
    // a round each, the lock held exclusively (no lane's mutex is held meanwhile).
    for e in rt.lanes.iter_mut() {
        match e.poke() {
            Ok(moved) => any |= moved,
            Err(e) => return Err((Some(rt.comms.get(WORLD).rank), e.into())),
        }
    }
    Ok(any)
}

/// Ends the job for an error of the thread, as a fatal error of an MPI call does: a line on
/// stderr, the launcher told to end the other ranks, this process ended.
#[cold]
fn fail(rank: Option<usize>, e: &MpiError) -> ! {
    let who = match rank {
        Some(r) => format!("rank {r}"),
        None => format!("process {}", std::process::id()),
    };
    let line = format!(
        "MPI error on {who} in the asynchronous progress thread ({ENV}): {}; the thread has no caller to return it to, so the job ends",
        e.detail
    );
    let _ = writeln!(std::io::stderr(), "{line}");
    let code = if e.class & 0xff == 0 {
        crate::abi::MPI_ERR_OTHER
    } else {
        e.class
    };
    nic_model::net::launcher::abort(code, &line);
    end_process(code)
}

#[cfg(test)]
mod tests {
    use super::asked;

    #[test]
    fn the_variable_takes_mpich_style_booleans() {
        for yes in ["1", "true", "YES", " yes ", "on"] {
            assert_eq!(asked(Some(yes)), Ok(true), "{yes:?}");
        }
        for no in ["0", "false", "No", "", "off"] {
            assert_eq!(asked(Some(no)), Ok(false), "{no:?}");
        }
        assert_eq!(asked(None), Ok(false));
        assert!(asked(Some("2")).is_err());
    }
}
