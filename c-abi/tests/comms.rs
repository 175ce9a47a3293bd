//! Communicators, groups, topologies, attributes, info objects and error handlers: the C
//! programs of `tests/c/comm/`, each self-checking with real data, run as MPI jobs of several
//! sizes (odd and even, 1 rank, and 8 ranks oversubscribing this 2-core machine).
//!
//! Every program was also validated against Debian's MPICH (`mpicc.mpich`, `mpirun.mpich`),
//! the reference behaviour, including the error classes of `comm_errors`.

mod common;

use common::run_ok;

/// Runs `tests/c/comm/<name>.c` at each rank count.
fn run_at(name: &str, sizes: &[usize]) {
    for &ranks in sizes {
        run_ok(&format!("comm/{name}"), ranks, None);
    }
}

#[test]
fn communicator_creation_intercommunicators_and_context_reuse() {
    run_at("comms", &[1, 2, 3, 4]);
}

#[test]
fn communicators_oversubscribed_8_ranks() {
    run_at("comms", &[8]);
}

#[test]
fn communicators_over_fm() {
    run_ok("comm/comms", 4, Some("fm"));
}

#[test]
fn group_algebra() {
    run_at("groups", &[1, 2, 5]);
}

#[test]
fn cartesian_and_graph_topologies_as_nas_uses_them() {
    run_at("topo", &[1, 2, 4, 6, 8]);
}

#[test]
fn attributes_info_memory_and_error_handlers() {
    run_at("attrs", &[1, 3]);
}

#[test]
fn bad_arguments_return_mpich_classes_and_leave_the_library_usable() {
    run_at("comm_errors", &[1, 3]);
}

/// The programs compiled by MPICH's own `mpicc` (against MPICH's `mpi.h`) pass on this
/// library: the handles, constants, callbacks (`MPI_COMM_DUP_FN` is `MPIR_Dup_fn`) and
/// exported sentinels (`MPI_UNWEIGHTED`) agree with MPICH's binary interface. Skipped (with a
/// note) when MPICH is not installed.
#[test]
fn programs_built_by_mpich_mpicc_pass_on_our_library() {
    let Some(mpich_cc) = common::installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed (Debian: apt-get install mpich libmpich-dev); skipping");
        return;
    };
    // MPICH's binaries find our library under its name through the `LD_LIBRARY_PATH` that
    // `common::mpirun` gives every job.
    for name in ["comms", "groups", "topo", "attrs", "comm_errors"] {
        let exe = common::build_with(
            &mpich_cc,
            &format!("comm/{name}"),
            &format!("comm_{name}-built-by-mpich"),
        );
        let launch = common::Launch {
            ranks: 3,
            ..Default::default()
        };
        common::assert_ok(&common::mpirun(&exe, &launch), name);
    }
}
