//! Point-to-point additions of MPI 4.0/4.1: `MPI_Isendrecv(_replace)`, `MPI_Buffer_flush` /
//! `MPI_Buffer_iflush`, partitioned communication, generalized requests and the status
//! setters. The C programs of `tests/c/p2p_more/`, each self-checking with real data, run as
//! MPI jobs of 1, 2 and 4 ranks (partitioned also at 8, oversubscribing this 2-core machine,
//! and over the `fm` channel).
//!
//! The programs were also run under Debian's MPICH 4.0.2 (`mpicc.mpich`, `mpiexec.mpich`):
//! `grequest` passes there, tolerating one deviation of MPICH's (it calls `free_fn` when an
//! incomplete request is freed, where MPI 4.0 §13.2 says at `MPI_Grequest_complete`);
//! MPICH 4.0.2 leaves `MPI_Isendrecv`'s status empty (tolerated) and crashes in it with an
//! `MPI_PROC_NULL` source; it has no `MPI_Buffer_flush` (MPI 4.1), and its `MPI_Parrived`
//! refuses a started receive request before the handshake is done, so `bsend_flush` and
//! `partitioned` are checked against the standard only.

mod common;

use common::{mpirun, program, run_ok, Launch};

fn run_at(name: &str, sizes: &[usize]) {
    common::run_ok_at(&format!("p2p_more/{name}"), sizes);
}

#[test]
fn isendrecv_ring_derived_types_proc_null_and_replace() {
    run_at("isendrecv", &[1, 2, 4]);
}

#[test]
fn buffer_flush_and_iflush_free_the_whole_buffer() {
    run_at("bsend_flush", &[1, 2, 4]);
}

#[test]
fn partitioned_rounds_ready_orders_parrived_and_errors() {
    run_at("partitioned", &[1, 2, 4]);
}

#[test]
fn partitioned_oversubscribed_and_over_fm() {
    run_at("partitioned", &[8]);
    run_ok("p2p_more/partitioned", 4, Some("fm"));
}

/// `MPI_Cancel` of unmatched sends (to self and to another rank, eager and rendezvous,
/// standard and synchronous), of a received one (fails), and mpi4py's `testProbeCancel`
/// (an answer right after `MPI_Cancel` of a send to self). MPICH 4.0.2 passes the 1-rank
/// run and cannot cancel sends to another rank (the standard allows that).
#[test]
fn cancel_of_sends_to_self_and_to_others() {
    run_at("cancel_send", &[1, 2, 4]);
}

#[test]
fn generalized_requests_and_status_setters() {
    run_at("grequest", &[1, 2, 4]);
}

/// Under `MPI_ERRORS_ARE_FATAL`, `MPI_Pready` on an inactive request ends the job with a
/// message naming the call and the error.
#[test]
fn pready_on_an_inactive_request_is_fatal_by_default() {
    let run = mpirun(
        &program("p2p_more/partitioned_fatal"),
        &Launch {
            ranks: 2,
            ..Launch::default()
        },
    );
    assert!(!run.timed_out, "the job hung:{}", run.describe());
    assert!(
        run.code().is_some_and(|c| c != 0),
        "want a non-zero exit status:{}",
        run.describe()
    );
    let output = run.output();
    assert!(
        output.contains("MPI_Pready") && output.contains("MPI_ERR_REQUEST"),
        "the message should name MPI_Pready and MPI_ERR_REQUEST:{}",
        run.describe()
    );
    assert!(
        !output.contains("FAIL partitioned_fatal"),
        "MPI_Pready returned:{}",
        run.describe()
    );
}

/// The programs compiled by MPICH's own `mpicc` against MPICH's `mpi.h` pass on this library
/// (the generalized request callbacks' and partitioned calls' binary interface). Skipped (with
/// a note) when MPICH is not installed.
#[test]
fn programs_built_by_mpich_mpicc_pass_on_our_library() {
    let Some(mpich_cc) = common::installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed; skipping");
        return;
    };
    for name in ["grequest", "partitioned", "isendrecv"] {
        let exe = common::build_with(
            &mpich_cc,
            &format!("p2p_more/{name}"),
            &format!("p2p_more_{name}-built-by-mpich"),
        );
        let launch = Launch {
            ranks: 2,
            ..Default::default()
        };
        common::assert_ok(&mpirun(&exe, &launch), name);
    }
}
