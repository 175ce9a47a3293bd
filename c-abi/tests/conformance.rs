//! Behaviours an outside MPI test suite found different from the MPI standard (issue 17),
//! each shown by a C program of `tests/c/conformance/` that checks the standard's behaviour
//! with real messages, run on several rank counts (8 ranks oversubscribe this 2-core
//! machine). Each program's header cites the standard's section and says how it fares under
//! MPICH (the programs were checked against Debian's MPICH 4.0.2).
//!
//! `MPI_Dims_create`'s factorizations are checked exhaustively by the unit tests of
//! `src/topo/cart.rs` and with real processes by `tests/c/comm/topo.c`.

mod common;

use common::run_ok;

/// Single completions leave `MPI_ERROR` alone; count 0 of `MPI_DATATYPE_NULL` is accepted;
/// every Wait/Test variant frees the requests it completes, collective or point-to-point.
#[test]
fn completion_calls_leave_status_error_and_free_mixed_requests() {
    for ranks in [1, 2, 3, 8] {
        run_ok("conformance/completion", ranks, None);
    }
}

/// `MPI_C_COMPLEX`'s name; bounds of marker-only and data-less types; `MPI_Pack` and
/// `MPI_Unpack` of absolute addresses from `MPI_BOTTOM`, through a message.
#[test]
fn datatype_names_marker_bounds_and_packing_from_bottom() {
    for ranks in [1, 3] {
        run_ok("conformance/types", ranks, None);
    }
}

/// A failed `MPI_Comm_dup` leaves `MPI_COMM_NULL`; a freed keyval stays valid for its
/// attributes; `MPI_Comm_get_info` reports only the hints the library keeps.
#[test]
fn communicator_outputs_keyvals_and_info() {
    for ranks in [1, 3] {
        run_ok("conformance/comm", ranks, None);
    }
}

/// A gather and a scatter of 16 MiB per rank grow the root's peak memory by less than one
/// block (the binomial tree's temporary was the whole receive buffer).
#[test]
fn large_gather_and_scatter_need_no_copy_of_the_root_buffer() {
    for ranks in [4, 8] {
        run_ok("conformance/big_gather", ranks, None);
    }
}

/// `MPI_Comm_split_type` with `MPI_COMM_TYPE_HW_GUIDED` and `HW_UNGUIDED` (MPI 4.0 §7.4.2):
/// bound ranks (2 on 2 cores) and unbound ones (4 on 2 cores).
#[test]
fn split_type_by_hardware_levels() {
    for ranks in [1, 2, 4] {
        run_ok("conformance/split_type", ranks, None);
    }
}

/// The info calls work before `MPI_Init` and after `MPI_Finalize`, on the same objects.
#[test]
fn info_objects_outlive_mpi() {
    for ranks in [1, 2] {
        run_ok("conformance/info", ranks, None);
    }
}

/// Added error classes and codes come after `MPI_ERR_LASTCODE`, and `MPI_LASTUSEDCODE`
/// follows them.
#[test]
fn added_error_codes_and_last_used_code() {
    for ranks in [1, 2] {
        run_ok("conformance/error_codes", ranks, None);
    }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info` are nonblocking (MPI 3.1 §6.4.2): a peer
/// that talks on the parent before it calls idup, four idups outstanding at once, idups on
/// two parents interleaved with a blocking dup, idup of a `create_group` communicator, the
/// info kept, and what a duplicate copies.
#[test]
fn comm_idup_is_nonblocking_and_contexts_stay_distinct() {
    for ranks in [1, 2, 3, 4, 8] {
        run_ok("conformance/idup", ranks, None);
    }
}

#[test]
fn allocation_failures_are_mpi_err_no_mem() {
    for ranks in [1, 2, 4] {
        run_ok("conformance/no_mem", ranks, None);
    }
}
