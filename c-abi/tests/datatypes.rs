//! Derived datatypes (`tests/c/types/*.c`), built with our `mpicc` and run with our `mpirun`.
//!
//! - `roundtrip`: vector, indexed (out-of-order blocks), struct, subarray in C and Fortran
//!   order, resized types, the padded pairs and a contiguous derived type, through Send/Recv,
//!   Isend/Irecv, Sendrecv, Sendrecv_replace, persistent requests, Bsend, Ssend + Probe, and
//!   typed <-> `MPI_BYTE` both ways; every byte of the receive buffer is checked, gaps
//!   included, and the counts and elements the statuses report.
//! - `describe`: sizes, extents and true extents worked out by hand (markers, negative
//!   strides, resized, struct padding), envelopes and contents, names, `MPI_Pack`/`MPI_Unpack`,
//!   `MPI_BOTTOM` with absolute addresses, `MPI_Get_elements` of a partial element.
//! - `large`: strided vectors of 1 MiB (the engine's rendezvous path) received through Recv,
//!   Waitany, `MPI_Request_get_status` polling and Testsome; a struct of absolute addresses
//!   both ways at once with its types freed while pending; a cancelled staged receive.
//! - `type_errors`: the error class of every bad argument under `MPI_ERRORS_RETURN`.
//! - `pack_external`: `MPI_Pack_external` / `MPI_Unpack_external` / `MPI_Pack_external_size`
//!   in external32, every byte against big-endian bytes worked out by hand (predefined
//!   types, `MPI_LONG` narrowed to 4 bytes, long double as binary128, a vector, a padded
//!   struct, a pair), and the error classes.
//!
//! The programs were validated against Debian's MPICH (`mpicc.mpich`, `mpirun.mpich`);
//! `type_errors` needs `-DSKIP_FREED` there (MPICH crashes on a freed type handle).

mod common;

use common::{assert_ok, installed, mpirun, run_ok, Launch};

#[test]
fn roundtrip_through_every_point_to_point_path() {
    run_ok("types/roundtrip", 2, None);
}

#[test]
fn roundtrip_on_the_fm_channel() {
    run_ok("types/roundtrip", 2, Some("fm"));
}

#[test]
fn large_messages_and_completion_calls() {
    run_ok("types/large", 2, None);
    run_ok("types/large", 2, Some("fm1"));
}

#[test]
fn describe_types_pack_and_contents() {
    run_ok("types/describe", 1, None);
    run_ok("types/describe", 2, None);
}

/// Also built by MPICH's `mpicc` (its `mpi.h`: the `MPI_Aint` arguments, `MPI_LONG_DOUBLE`'s
/// handle) and run on our library, when MPICH is installed.
#[test]
fn pack_external32_bytes_sizes_and_errors() {
    run_ok("types/pack_external", 1, None);
    run_ok("types/pack_external", 2, None);
    let Some(mpich_cc) = installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed; skipping the MPICH-built run");
        return;
    };
    let exe = common::build_with(
        &mpich_cc,
        "types/pack_external",
        "types_pack_external-built-by-mpich",
    );
    let run = mpirun(
        &exe,
        &Launch {
            ranks: 1,
            ..Launch::default()
        },
    );
    assert_ok(&run, "types/pack_external");
    assert!(
        !run.output().contains("NOTE"),
        "pack_external built by MPICH ran on MPICH, not on this library"
    );
}

#[test]
fn bad_arguments_return_their_classes() {
    run_ok("types/type_errors", 1, None);
}

/// The roundtrip program compiled against MPICH's header runs on our library: derived type
/// handles, `MPI_DOUBLE_INT` and the statuses' counts agree at the binary level.
#[test]
fn roundtrip_built_by_mpich_mpicc_runs_on_our_library() {
    let Some(mpich_cc) = installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed; skipping");
        return;
    };
    let exe = common::build_with(
        &mpich_cc,
        "types/roundtrip",
        "types_roundtrip-built-by-mpich",
    );
    // It finds our library under MPICH's name through the `LD_LIBRARY_PATH` that
    // `common::mpirun` gives every job.
    let run = mpirun(
        &exe,
        &Launch {
            ranks: 2,
            ..Launch::default()
        },
    );
    assert_ok(&run, "types/roundtrip");
}
