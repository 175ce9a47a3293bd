//! Reduction operations (`tests/c/ops/*.c`): every predefined operation on its types, the
//! value-and-index pairs, user-defined operations (non-commutative included), derived
//! datatypes, and the error classes of bad arguments, each program built with our `mpicc`
//! and run with our `mpirun`.
//!
//! Most programs call `MPI_Reduce_local`, which is local, so one rank shows what they test;
//! they also run on two ranks, where every rank must compute the same thing. `coll_ops` takes
//! the operations across ranks (`MPI_Reduce`, `MPI_Allreduce`), a non-commutative user
//! operation included. They were
//! validated against Debian's MPICH where it works (see each program's header comment for
//! where MPICH crashes or differs).

mod common;

use common::run_ok;

#[test]
fn predefined_ops_on_every_type() {
    run_ok("ops/predefined", 1, None);
}

#[test]
fn minloc_maxloc_on_the_pair_types() {
    run_ok("ops/minmaxloc", 1, None);
}

#[test]
fn user_ops_commutative_or_not() {
    run_ok("ops/user_ops", 1, None);
}

#[test]
fn ops_on_derived_datatypes() {
    run_ok("ops/derived", 1, None);
}

#[test]
fn bad_arguments_return_mpich_error_classes() {
    run_ok("ops/op_errors", 1, None);
}

#[test]
fn ops_across_ranks_in_reduce_and_allreduce() {
    run_ok("ops/coll_ops", 1, None);
    run_ok("ops/coll_ops", 3, None);
    run_ok("ops/coll_ops", 4, None);
}

#[test]
fn two_ranks_compute_alike() {
    run_ok("ops/predefined", 2, None);
    run_ok("ops/user_ops", 2, None);
}
