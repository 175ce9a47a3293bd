//! The asynchronous progress thread (`MPI_ASYNC_PROGRESS=1`): passive-target one-sided
//! operations on the message path complete while the target computes and makes no MPI call.
//!
//! * `tests/c/rma/async_progress.c` on 2 ranks and on 4 (three origins on one target), over a
//!   window of `MPI_Win_create` and one of `MPI_Win_allocate` with `MPI_WIN_DIRECT=0` (both on
//!   the message path): with the thread the target sees every origin's put and the sum of
//!   their accumulates while it spins; without it, in a run where the target gives up after
//!   2 s, it does not (progress then waits for the target's next MPI call), and the job still
//!   ends correctly once the target calls `MPI_Barrier`. The program also makes calls whose
//!   user code calls MPI again (an error handler, a reduction in a blocking and a nonblocking
//!   collective), which must not wait for the thread's lock they already hold.
//! * Other programs with the thread on: `rma_sync` (every synchronization, many origins),
//!   a user-reduction program and a ring with a ping-pong, the latter two on 4 ranks on this
//!   machine's 2 cores, where the idle threads must back off for the job to end in time.
//!
//! Timing is never asserted beyond the harness's guard against a hang.

mod common;

use common::{assert_ok, mpirun, program, JobRun, Launch};
use std::ffi::OsString;
use std::sync::Mutex;

/// One job at a time: each rank has a thread of its own here, on two cores.
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The thread on, as a program's environment.
const ON: (&str, &str) = ("MPI_ASYNC_PROGRESS", "1");

/// Runs `tests/c/<name>.c` on `ranks` ranks with `env` and asserts it passed.
fn run(name: &str, ranks: usize, env: &[(&str, &str)]) -> JobRun {
    let exe = program(name);
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let vars: Vec<(&str, OsString)> = env.iter().map(|&(k, v)| (k, v.into())).collect();
    let job = mpirun(
        &exe,
        &Launch {
            ranks,
            env: vars,
            ..Launch::default()
        },
    );
    assert!(
        job.code() == Some(0),
        "{name} on {ranks} ranks with {env:?} failed:{}",
        job.describe()
    );
    assert_ok(&job, name);
    job
}

/// The two windows on the message path: `MPI_Win_create`'s, and `MPI_Win_allocate`'s kept
/// off the direct path.
const WINDOWS: [&[(&str, &str)]; 2] = [
    &[("ASYNC_TEST_WINDOW", "create")],
    &[("ASYNC_TEST_WINDOW", "allocate"), ("MPI_WIN_DIRECT", "0")],
];

fn target_saw(job: &JobRun) -> Option<bool> {
    job.stdout.lines().find_map(|l| {
        if l.starts_with("target: values seen") {
            Some(true)
        } else if l.starts_with("target: values not seen") {
            Some(false)
        } else {
            None
        }
    })
}

#[test]
fn with_the_thread_a_computing_target_sees_puts_and_accumulates() {
    for ranks in [2, 4] {
        for window in WINDOWS {
            let mut env = window.to_vec();
            env.push(ON);
            let job = run("rma/async_progress", ranks, &env);
            assert_eq!(
                target_saw(&job),
                Some(true),
                "{ranks} ranks, {window:?}: the target did not see the origins' values while it computed:{}",
                job.describe()
            );
        }
    }
}

/// Documents why the thread exists: without it a target that makes no MPI call applies
/// nothing, and the origins wait in `MPI_Win_unlock` until it calls MPI again.
#[test]
fn without_the_thread_the_target_sees_nothing_until_it_calls_mpi() {
    for window in WINDOWS {
        let mut env = window.to_vec();
        env.push(("ASYNC_TEST_WAIT_S", "2"));
        env.push(("MPI_ASYNC_PROGRESS", "0"));
        let job = run("rma/async_progress", 2, &env);
        assert_eq!(
            target_saw(&job),
            Some(false),
            "{window:?}: without the thread the target saw the values while computing:{}",
            job.describe()
        );
    }
}

#[test]
fn the_rma_synchronization_program_passes_with_the_thread() {
    for ranks in [2, 4] {
        run("rma/rma_sync", ranks, &[ON]);
        run("rma/rma_sync", ranks, &[ON, ("MPI_WIN_DIRECT", "0")]);
    }
}

/// 4 ranks, each with a progress thread, on 2 cores: the threads of ranks that wait must
/// back off, or the job crawls past the harness's guard.
#[test]
fn oversubscribed_jobs_with_the_thread_finish() {
    run("hello", 4, &[ON]);
    run("ring", 4, &[ON]);
    run("ops/user_ops", 4, &[ON]);
    run("coll/coll_nb", 4, &[ON]);
}
