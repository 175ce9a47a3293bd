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
//! blocking collective on one thread beside point-to-point on another, with a user-defined
//! reduction that calls MPI (a nested call). Also over the FM channel, on 8 ranks, and with the
//! asynchronous progress thread (which shares the lock). With `MPI_THREAD_CHECK=1`, the misuse
//! of the lower levels is reported (`misuse.c`).

mod common;

use common::{assert_ok, mpirun, program, run_ok, Launch, Scratch};

/// Runs `tests/c/thread/<name>.c` at each rank count, and once more on 4 lanes (`MPI_LANES`
/// is 1 unless set) at the largest, so every threaded program also runs with point-to-point
/// on lanes of its own.
fn run_at(name: &str, sizes: &[usize]) {
    let name = format!("thread/{name}");
    for &ranks in sizes {
        run_ok(&name, ranks, None);
    }
    if let Some(&ranks) = sizes.iter().max() {
        let job = mpirun(
            &program(&name),
            &Launch {
                ranks,
                env: vec![("MPI_LANES", "4".into())],
                ..Default::default()
            },
        );
        assert_ok(&job, &name);
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

/// Large (rendezvous) messages on communicators of their own, contiguous and strided, and
/// between threads of one rank: their copies run with the library's lock let go.
#[test]
fn threads_move_large_messages_at_once() {
    run_at("big_parallel", &[1, 2, 4]);
}

#[test]
fn threads_share_one_communicator_and_each_others_requests() {
    run_at("any_source", &[1, 2, 4]);
}

/// One-sided synchronization (fence, start, lock, free; created and allocated windows) waits
/// with the lock let go: another thread of the rank answers the partner meanwhile.
#[test]
fn window_synchronization_lets_other_threads_answer() {
    run_at("win_waits", &[2, 4]);
}

/// Communicator constructors (`MPI_Comm_create_group` on two groups at once from two threads;
/// the topology constructors and `MPI_Comm_create_group` beside a thread that answers the
/// partner) wait with the lock and the context-id lock let go.
#[test]
fn communicator_constructors_let_other_threads_answer() {
    run_at("comm_waits", &[2, 4]);
}

/// `MPI_Buffer_flush` and `MPI_Buffer_detach` wait for a buffered rendezvous send with the
/// lock let go: another thread of the rank receives the partner's message meanwhile.
#[test]
fn buffer_detach_and_flush_let_other_threads_receive() {
    run_at("bsend_waits", &[2, 4]);
}

/// The collective MPI-IO accesses (`_all`, two-phase) wait with the lock let go: another
/// thread of the rank answers the partner meanwhile.
#[test]
fn collective_file_access_lets_other_threads_answer() {
    let exe = program("thread/file_waits");
    for ranks in [2, 4] {
        let dir = Scratch::new("thread", &format!("file_waits{ranks}"));
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                env: vec![("FILE_TEST_DIR", dir.0.as_os_str().to_owned())],
                ..Default::default()
            },
        );
        assert_ok(&job, "file_waits");
    }
}

/// Lanes (`runtime::lanes`): 4 threads per rank on duplicates of their own (different
/// lanes), eager and rendezvous ping-pongs, `MPI_Sendrecv`, `MPI_Ssend`, `MPI_ANY_SOURCE` after
/// `MPI_Probe`/`MPI_Iprobe`, windows completed by `MPI_Waitall`/`MPI_Test`, a cancelled
/// unmatched `MPI_Isend`, an `MPI_Allreduce` on the lane communicator beside the other threads'
/// point-to-point, then `MPI_Waitall`/`MPI_Waitany` over requests of every lane; at 2 and 4
/// ranks, `MPI_LANES=4` and `1`, every byte checked. The program reads the lanes in use
/// (cvar `MPI_LANES`) and, with several, checks that pvar `mpi_lane_calls` counted calls.
#[test]
fn threads_on_lanes_run_point_to_point_apart() {
    on_lanes_4_and_1("lanes", &[]);
}

/// Runs `tests/c/thread/<name>.c` at 2 and 4 ranks with `MPI_LANES=4` and `1` (the program
/// checks the count it reads against `LANES_EXPECTED`), with `env` besides.
fn on_lanes_4_and_1(name: &str, env: &[(&str, &str)]) {
    let exe = program(&format!("thread/{name}"));
    for lanes in ["4", "1"] {
        for ranks in [2, 4] {
            let mut vars = vec![
                ("MPI_LANES", lanes.into()),
                ("LANES_EXPECTED", lanes.into()),
            ];
            vars.extend(env.iter().map(|&(k, v)| (k, v.into())));
            let job = mpirun(
                &exe,
                &Launch {
                    ranks,
                    env: vars,
                    ..Default::default()
                },
            );
            assert_ok(&job, name);
        }
    }
}

/// Messages to the own rank on lanes (they skip the shared channel): 4 threads per rank,
/// each on its own duplicate, send to themselves: non-overtaking over eager, empty and
/// rendezvous messages of one tag, receives posted first (`MPI_Send`, `MPI_Ssend`),
/// unexpected ones found by `MPI_Probe` and `MPI_ANY_SOURCE`/`MPI_ANY_TAG`, `MPI_Sendrecv`
/// (`_replace`), a cancelled `MPI_Irecv`; 1 and 2 ranks, on bip and fm, every byte checked.
#[test]
fn threads_on_lanes_send_to_their_own_rank() {
    let exe = program("thread/lanes_self");
    for (ranks, channel) in [(1, "bip"), (2, "bip"), (1, "fm")] {
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                channel: Some(channel),
                env: vec![("MPI_LANES", "4".into())],
                ..Default::default()
            },
        );
        assert_ok(&job, "lanes_self");
    }
    run_ok("thread/lanes_self", 1, None);
}

/// The rest of point-to-point on lanes (`tests/c/thread/lanes_more.c`): `MPI_Waitany`,
/// `Waitsome`, `Testany`, `Testsome`, `Testall` over one lane's requests, matched probes and
/// their receives, `MPI_Cancel`, `Request_get_status`, `Request_free`, `MPI_Isendrecv(_replace)`,
/// persistent `Send_init`/`Recv_init` with `MPI_Start`/`Startall`, each checked to run on its
/// lane (pvar `mpi_lane_calls` grows by one per call) from one thread, then from 4 threads at
/// once; the same calls over several lanes (the exclusive path) and a persistent buffered send;
/// then a rendezvous on a lane that must move while its sender sits in `MPI_Barrier` and in
/// `MPI_Win_fence` (with the packet path too, `MPI_NIC_DMA=off`, where the sender's data
/// packets go only when its lane is turned), and while it computes with no MPI call beside the
/// asynchronous progress thread. `MPI_LANES=4` at 1, 2 and 4 ranks, and 1 lane at 2.
#[test]
fn threads_on_lanes_run_the_other_point_to_point_calls() {
    let exe = program("thread/lanes_more");
    let runs: [(usize, &[(&str, &str)]); 6] = [
        (1, &[("MPI_LANES", "4")]),
        (2, &[("MPI_LANES", "4")]),
        (4, &[("MPI_LANES", "4")]),
        (2, &[("MPI_LANES", "1")]),
        (2, &[("MPI_LANES", "4"), ("MPI_NIC_DMA", "off")]),
        (
            2,
            &[
                ("MPI_LANES", "4"),
                ("MPI_NIC_DMA", "off"),
                ("MPI_ASYNC_PROGRESS", "1"),
                ("PROGRESS_SLEEP", "4"),
            ],
        ),
    ];
    for (ranks, env) in runs {
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                env: env.iter().map(|&(k, v)| (k, v.into())).collect(),
                ..Default::default()
            },
        );
        eprintln!("lanes_more at {ranks} ranks with {env:?}");
        assert_ok(&job, "lanes_more");
    }
}

/// Lanes by tag (issue 16, `comm::tag_lanes`): 4 threads per rank on ONE communicator
/// duplicated with `mpi_assert_no_any_tag=true`, each on tags of its own: eager and rendezvous
/// ping-pongs, `MPI_Sendrecv` with different send and receive tags, `MPI_Ssend` found by
/// `MPI_Probe`/`MPI_Iprobe` with the tag, windows of `MPI_Isend`/`MPI_Irecv`, a cancelled
/// `MPI_Isend`; every byte checked. `MPI_ANY_TAG` receives and probes return `MPI_ERR_TAG`
/// under `MPI_ERRORS_RETURN`; pvar `mpi_lanes_used` shows several lanes used on 4 lanes. The
/// same program without the assertion (lanes by communicator: at most one lane besides 0).
/// At 2 and 4 ranks, `MPI_LANES=4` and `1`.
#[test]
fn threads_on_tags_of_one_communicator_run_apart() {
    for asserted in ["1", "0"] {
        on_lanes_4_and_1("lanes_tags", &[("ASSERT_NO_ANY_TAG", asserted)]);
    }
}

#[test]
fn threads_on_8_ranks_and_over_fm() {
    run_at("comms_parallel", &[8]);
    run_ok("thread/comms_parallel", 2, Some("fm"));
    run_ok("thread/any_source", 2, Some("fm"));
}

#[test]
fn threads_beside_the_asynchronous_progress_thread() {
    for name in ["thread/comms_parallel", "thread/any_source"] {
        let job = mpirun(
            &program(name),
            &Launch {
                ranks: 4,
                env: vec![("MPI_ASYNC_PROGRESS", "1".into())],
                ..Default::default()
            },
        );
        assert_ok(&job, name);
    }
}

/// `MPI_THREAD_CHECK=1`: a call from another thread under `MPI_THREAD_FUNNELED` returns
/// `MPI_ERR_OTHER` naming the level (the program checks it); a call while another thread is
/// inside MPI under `MPI_THREAD_SERIALIZED` ends the job with a message naming the level.
#[test]
fn misuse_of_the_lower_levels_is_reported_when_checked() {
    let check = vec![("MPI_THREAD_CHECK", "1".into())];
    let exe = program("thread/misuse");
    for ranks in [1, 2] {
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                env: check.clone(),
                ..Default::default()
            },
        );
        assert_ok(&job, "misuse");
    }
    let mut serialized = check;
    serialized.push(("MISUSE_MODE", "serialized".into()));
    let job = mpirun(
        &exe,
        &Launch {
            ranks: 2,
            env: serialized,
            ..Default::default()
        },
    );
    assert_ne!(
        job.code(),
        Some(0),
        "the misuse was not reported:{}",
        job.describe()
    );
    assert!(
        job.output().contains("MPI_THREAD_SERIALIZED") && !job.output().contains("NOT DETECTED"),
        "the job did not end naming the level:{}",
        job.describe()
    );
}
