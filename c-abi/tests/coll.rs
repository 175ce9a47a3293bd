//! Collective operations (`tests/c/coll/*.c`), built with our `mpicc` and run with our
//! `mpirun` on 1, 2, 3, 4, 5 and 7 ranks.
//!
//! * `coll_all`: every blocking collective at counts 0, 1, 1000 and a large count (1 Mi
//!   elements for the one-buffer collectives, split among ranks for the per-rank blocks;
//!   smaller on 4, 5 and 7 ranks to bound the time on two cores), every root, with and without
//!   `MPI_IN_PLACE`, on `MPI_COMM_WORLD` and on the halves `MPI_Comm_split` makes of it;
//!   also on 8 ranks (oversubscribed), where MPICH switches to other algorithms.
//! * `coll_ops`: user operations, non-commutative included, on a derived type.
//! * `coll_short`: the short blocking collectives the library runs without a schedule
//!   (allreduce of short contiguous data over many operations, types and counts, in place
//!   or not, a non-commutative user operation; broadcast from every root, one rank receiving
//!   through a vector type; barrier; beside nonblocking collectives in flight), on 2 to 5
//!   ranks and on a communicator with the ranks reversed.
//! * `coll_types`: derived (non-contiguous) datatypes in broadcast, gather, allgather,
//!   allreduce and alltoall.
//! * `coll_nb`: the nonblocking collectives, overlapping and with a blocking one among them.
//! * `nb_progress`: nonblocking collectives move on while their rank is blocked in `MPI_Recv`
//!   or `MPI_Probe` (the root receives from everyone before it waits for its own `MPI_Ibcast`).
//! * `coll_errors`: bad arguments return MPICH's error classes and leave the library usable;
//!   `MPI_Scan`/`MPI_Exscan` on an intercommunicator are refused with `MPI_ERR_COMM`.
//!
//! The programs were checked against Debian's MPICH (with `MPIR_CVAR_DEVICE_COLLECTIVES=none`:
//! its device-level `MPI_Reduce` with `MPI_IN_PLACE` crashes). `coll_errors` and the
//! derived-type allreduce of `coll_types` are ours only: that MPICH build does not check
//! counts in `MPI_Allreduce` and refuses `MPI_SUM` on derived types of ints.
//!
//! The jobs run one at a time (a lock): on a two-core machine, several 7-rank jobs at once
//! would only slow each other down past the harness's guard timeout.

mod common;

use common::{assert_ok, mpirun, program, Launch};
use std::ffi::OsString;
use std::sync::Mutex;

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(name: &str, ranks: usize, env: Vec<(&str, OsString)>) {
    let exe = program(name);
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = mpirun(
        &exe,
        &Launch {
            ranks,
            env,
            ..Launch::default()
        },
    );
    assert_ok(&run, name);
}

/// `coll_all` with a large count of `big` elements.
fn all(ranks: usize, big: usize) {
    run(
        "coll/coll_all",
        ranks,
        vec![("COLL_BIG", big.to_string().into())],
    );
}

#[test]
fn every_collective_on_1_rank() {
    all(1, 1 << 20);
}

#[test]
fn every_collective_on_2_ranks() {
    all(2, 1 << 20);
}

#[test]
fn every_collective_on_3_ranks() {
    all(3, 1 << 20);
}

#[test]
fn every_collective_on_4_ranks() {
    all(4, 1 << 19);
}

#[test]
fn every_collective_on_5_ranks() {
    all(5, 1 << 18);
}

#[test]
fn every_collective_on_7_ranks() {
    all(7, 1 << 17);
}

/// Eight ranks on two cores: also the algorithms MPICH keeps for 8 ranks or more (Bruck's
/// alltoall for short blocks, scatter + ring allgather broadcast for long messages); first and
/// last rank as roots only.
#[test]
fn every_collective_on_8_ranks_oversubscribed() {
    run(
        "coll/coll_all",
        8,
        vec![("COLL_BIG", "16384".into()), ("COLL_ROOTS", "ends".into())],
    );
}

#[test]
fn user_ops_non_commutative_included() {
    for ranks in [1, 3, 4, 7] {
        run("coll/coll_ops", ranks, vec![]);
    }
}

#[test]
fn short_collectives_without_a_schedule() {
    for ranks in [2, 3, 4, 5] {
        run("coll/coll_short", ranks, vec![]);
    }
}

#[test]
fn derived_datatypes() {
    for ranks in [2, 5, 8] {
        run("coll/coll_types", ranks, vec![]);
    }
}

#[test]
fn nonblocking_collectives() {
    for ranks in [1, 2, 5, 7] {
        run("coll/coll_nb", ranks, vec![]);
    }
}

#[test]
fn bad_arguments_return_the_right_class() {
    for ranks in [1, 4, 5] {
        run("coll/coll_errors", ranks, vec![]);
    }
}

#[test]
fn nonblocking_collectives_progress_inside_blocking_point_to_point() {
    for ranks in [3, 4, 5] {
        run("coll/nb_progress", ranks, vec![]);
    }
}
