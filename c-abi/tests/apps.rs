//! Application-shaped C programs (`tests/c/apps/`) that use many parts of the library at once:
//! topologies, derived datatypes, point-to-point, collectives and communicators together, on
//! grids of several shapes (1, 2, 3, 4 and 6 ranks; 6 oversubscribes this 2-core machine).
//! Each checks its distributed result against the same computation done serially.

mod common;

use common::run_ok;

#[test]
fn jacobi2d_on_1_2_3_4_and_6_ranks() {
    for ranks in [1, 2, 3, 4, 6] {
        run_ok("apps/jacobi2d", ranks, None);
    }
}

#[test]
fn jacobi2d_over_fm() {
    run_ok("apps/jacobi2d", 4, Some("fm"));
}
