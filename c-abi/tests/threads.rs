//! `MPI_THREAD_MULTIPLE`: the C programs of `tests/c/thread/`, each starting threads with
//! pthreads that call MPI at once, self-checking with real data, run as MPI jobs of 1, 2 and 4
//! ranks (4 ranks of 4 or 5 threads each oversubscribe this 2-core machine many times over).
//!
//! What they cover (see each program's header): the level granted and reported; threads of
//! one rank exchanging with each other in the pattern that deadlocks if a blocking call holds
//! the library's lock while it waits; threads on communicators of their own (made by each
//! thread, on parents of its own) doing ping-pongs and blocking collectives at once;
//! `MPI_ANY_SOURCE`/`MPI_ANY_TAG` receives and matched probes from several threads on one
//! communicator; `MPI_Waitany`/`Waitsome`/`Waitall` on requests other threads posted; a
//! blocking collective on one thread beside point-to-point on another.

mod common;

use common::run_ok;

/// Runs `tests/c/thread/<name>.c` at each rank count.
fn run_at(name: &str, sizes: &[usize]) {
    for &ranks in sizes {
        run_ok(&format!("thread/{name}"), ranks, None);
    }
}

#[test]
fn threads_of_one_rank_exchange_with_each_other() {
    run_at("self_exchange", &[1, 2]);
}

#[test]
fn threads_on_their_own_communicators_run_at_once() {
    run_at("comms_parallel", &[1, 2, 4]);
}

#[test]
fn threads_share_one_communicator_and_each_others_requests() {
    run_at("any_source", &[1, 2, 4]);
}
