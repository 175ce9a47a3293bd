//! Intercommunicator collectives, `MPI_Comm_idup` and hardware splits: the C programs
//! `tests/c/coll/inter*.c`, `tests/c/comm/idup*.c` and `tests/c/comm/split_type_hw*.c`, each
//! self-checking with real data, run as MPI jobs of 1, 2, 4 and 8 ranks (8 oversubscribes
//! this 2-core machine). The intercommunicators are made by `MPI_Intercomm_create` from
//! uneven splits of `MPI_COMM_WORLD` (1 + 3, 2 + 2, 3 + 5, ...).

mod common;

use common::run_ok_at as run_at;

#[test]
fn intercommunicator_collectives_blocking_and_nonblocking() {
    run_at("coll/inter_coll", &[1, 2, 4]);
}

#[test]
fn intercommunicator_collectives_8_ranks() {
    run_at("coll/inter_coll", &[8]);
}

#[test]
fn intercommunicator_collective_errors() {
    run_at("coll/inter_errors", &[1, 2, 4]);
}

#[test]
fn comm_idup_nonblocking_with_traffic_reverse_waits_and_intercommunicators() {
    run_at("comm/idup", &[1, 2, 4]);
}

#[test]
fn comm_idup_8_ranks() {
    run_at("comm/idup", &[8]);
}

#[test]
fn split_type_hardware_guided_and_unguided() {
    run_at("comm/split_type_hw", &[1, 2, 4, 8]);
}

/// One intercommunicator collective program through the generated Fortran binding (`use
/// mpi`), built by this build's `mpifort`. Needs gfortran (CI installs it).
#[test]
fn intercommunicator_collectives_from_fortran() {
    let exe = common::fortran_program("inter_coll.f90");
    for ranks in [2, 3, 4] {
        let run = common::mpirun(
            &exe,
            &common::Launch {
                ranks,
                ..Default::default()
            },
        );
        common::assert_ok(&run, "inter_coll");
    }
}
