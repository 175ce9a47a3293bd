//! One-sided communication (MPI 3.1 chapter 11, MPI 4.0 chapter 12): the C programs of
//! `tests/c/rma/`, built with our `mpicc`, and the Fortran program `tests/f/rma_f.f90`, built
//! with our `mpif90`, each run with our `mpirun` on 1, 2, 3, 4 and 8 ranks (8 oversubscribes
//! this two-core machine).
//!
//! * `win_create`: every creation flavor (`MPI_Win_create`, `MPI_Win_allocate`,
//!   `MPI_Win_allocate_shared` with `MPI_Win_shared_query` and direct loads and stores between
//!   ranks, `MPI_Win_create_dynamic` with attach/detach and `MPI_Get_address` displacements),
//!   the predefined attributes (`MPI_WIN_MODEL` = `MPI_WIN_UNIFIED`), user keyvals and their
//!   callbacks, names, `MPI_Win_get_group`, info hints, window error handlers.
//! * `rma_ops`: Put, Get, Accumulate with every predefined operation (and `MPI_REPLACE`,
//!   `MPI_NO_OP`), Get_accumulate, Fetch_and_op, Compare_and_swap, the request-based calls,
//!   derived datatypes on both sides, 4 MiB transfers, displacement units other than 1, zero
//!   counts; every element checked.
//! * `rma_sync`: fence with its assertions, PSCW (post/start/complete/wait/test, `NOCHECK`),
//!   passive target (locks, lock_all, the flushes, `MPI_Win_sync`), many origins on one
//!   target, exclusive-lock mutual exclusion, atomicity per element, a ticket counter, a spin
//!   lock made of Compare_and_swap.
//! * `rma_errors`: erroneous calls return the standard's class (`MPI_ERR_RMA_RANGE`,
//!   `MPI_ERR_RMA_SYNC`, `MPI_ERR_WIN`, `MPI_ERR_RMA_FLAVOR`, `MPI_ERR_RMA_ATTACH`,
//!   `MPI_ERR_LOCKTYPE`, ...) and the window keeps working.
//! * `rma_vmmc`: Put and Get of 8 B to 1 MiB, on both sides of the threshold above which the
//!   data moves through the device (VMMC's deliberate update and fetch) instead of inside
//!   request messages, into created and allocated windows, derived types on either side (few
//!   large target blocks, many small ones), exclusive-lock epochs of every origin contending
//!   for one target (each reads its own data back inside its epoch: another origin's write
//!   landing there shows), shared locks with `MPI_Rput`/`MPI_Rget`, lock_all, PSCW.
//! * `rma_f`: `use mpi`, `MPI_WIN_CREATE` and `MPI_WIN_ALLOCATE` with
//!   `INTEGER(KIND=MPI_ADDRESS_KIND)` sizes, fence with put/get/accumulate, lock/unlock.
//!
//! The programs were written against the standard and checked with Debian's MPICH 4.0.2 and
//! Open MPI 4.1.4 (`scripts/rma-check-peers` builds and runs them under both). Where
//! one of those libraries deviates, the program skips that check only under that library
//! (`tolerated()` in `rma_util.h`, which prints a `NOTE` line); under ours every check stands.
//!
//! Each program also runs on 2 and 4 ranks with `MPI_WIN_DIRECT=0`, which keeps allocated
//! windows on the message path (by default those of one host are loads and stores), once with
//! the device's data path as configured, once with `MPI_RMA_VMMC_MIN=1` (every put and get
//! that can goes through the device) and once with `MPI_RMA_VMMC=0` (none does).
//!
//! The jobs run one at a time (a lock): several 8-rank jobs at once on two cores would only
//! slow each other down past the harness's guard timeout.

mod common;

use common::{assert_ok, mpirun, program, Launch};
use std::path::Path;
use std::sync::Mutex;

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The rank counts every program runs on.
const RANKS: [usize; 5] = [1, 2, 3, 4, 8];

fn run_exe(exe: &Path, name: &str, ranks: usize) {
    run_with(exe, name, ranks, Vec::new());
}

fn run_with(exe: &Path, name: &str, ranks: usize, env: Vec<(&str, std::ffi::OsString)>) {
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let settings: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k}={}", v.to_string_lossy()))
        .collect();
    println!("{name} on {ranks} ranks {}", settings.join(" "));
    let run = mpirun(
        exe,
        &Launch {
            ranks,
            env,
            ..Launch::default()
        },
    );
    assert_ok(&run, name);
}

/// `tests/c/rma/<name>.c` on every rank count of [`RANKS`].
fn on_every_size(name: &str) {
    let exe = program(&format!("rma/{name}"));
    for ranks in RANKS {
        run_exe(&exe, name, ranks);
    }
}

#[test]
fn window_flavors_attributes_keyvals_names_info_and_error_handlers() {
    on_every_size("win_create");
}

#[test]
fn put_get_accumulate_atomics_requests_and_derived_datatypes() {
    on_every_size("rma_ops");
}

#[test]
fn fence_pscw_passive_target_and_many_origins_on_one_target() {
    on_every_size("rma_sync");
}

/// Windows of `MPI_Win_allocate` and `MPI_Win_allocate_shared` on one host are direct (loads
/// and stores); `MPI_WIN_DIRECT=0` puts them on the message path that windows across hosts
/// and windows of the program's memory use, so that path is tested on every flavor too.
#[test]
fn every_flavor_on_the_message_path() {
    for name in ["win_create", "rma_ops", "rma_sync", "rma_vmmc"] {
        let exe = program(&format!("rma/{name}"));
        for ranks in [2, 4] {
            for device in MESSAGE_PATH_DEVICE {
                let mut env = vec![("MPI_WIN_DIRECT", "0".into())];
                env.extend(device.iter().map(|&(k, v)| (k, v.into())));
                run_with(&exe, name, ranks, env);
            }
        }
    }
}

/// How the message path's runs configure the device's data path: as by default, for every
/// size it can carry, and not at all.
const MESSAGE_PATH_DEVICE: [&[(&str, &str)]; 3] =
    [&[], &[("MPI_RMA_VMMC_MIN", "1")], &[("MPI_RMA_VMMC", "0")]];

/// Puts and gets on both sides of the device's threshold, on every rank count (created
/// windows take the message path and the device; allocated ones are direct here, and take
/// the message path in `every_flavor_on_the_message_path`).
#[test]
fn puts_and_gets_through_the_device_and_as_messages() {
    on_every_size("rma_vmmc");
}

/// A rank that dies while holding an exclusive lock ends the job, the others' lock requests
/// failing within seconds and naming it, on the message path and the direct path.
#[test]
fn a_rank_dying_with_a_lock_ends_the_job() {
    let exe = program("rma/lock_holder_dies");
    for direct in ["1", "0"] {
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let run = mpirun(
            &exe,
            &Launch {
                ranks: 3,
                watch_for: Some("rank 1 dying"),
                env: vec![("MPI_WIN_DIRECT", direct.into())],
                ..Launch::default()
            },
        );
        let what = format!("lock_holder_dies (MPI_WIN_DIRECT={direct})");
        assert!(!run.timed_out, "{what}: the job hung:{}", run.describe());
        assert!(
            run.code().is_some_and(|c| c != 0),
            "{what}: want a nonzero exit status:{}",
            run.describe()
        );
        let reaction = run
            .watched_line_at
            .map_or(run.elapsed, |at| run.ended_at - at);
        assert!(
            reaction <= std::time::Duration::from_secs(10),
            "{what}: the job took {reaction:.2?} to end:{}",
            run.describe()
        );
        assert!(
            run.output().to_lowercase().contains("rank 1"),
            "{what}: the message does not name rank 1:{}",
            run.describe()
        );
    }
}

#[test]
fn erroneous_calls_return_the_standard_classes_and_windows_survive() {
    on_every_size("rma_errors");
}

#[test]
fn fortran_use_mpi_windows_fence_and_locks() {
    let exe = common::fortran_program("rma_f.f90");
    for ranks in RANKS {
        run_exe(&exe, "rma_f", ranks);
    }
}
