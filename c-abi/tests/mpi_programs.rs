//! Unmodified C MPI programs (`tests/c/*.c`), built with our `mpicc`, run with our `mpirun`.
//!
//! Every program checks itself (real data, statuses, error classes) and prints `OK <name>`
//! from rank 0; the harness checks the exit status and that line. The core point-to-point
//! programs run on each channel (`bip`, `fm`, `fm1`), the others on the default one; `ring`
//! and `storm` also run oversubscribed (8 ranks on this 2-core machine), and `progress_rule`
//! on every channel at 4 and 8 ranks. The failure
//! programs (`killed_rank`, `abort`, `errors_fatal`) never print OK: the harness checks how
//! the job ended instead. Finally programs built by MPICH's own `mpicc` run on our library.
//!
//! The programs were validated against Debian's MPICH (`mpicc.mpich`, `mpirun.mpich`), the
//! reference behaviour; see `tests/c/mpitest.h` for the conventions they share.

mod common;

use common::{assert_ok, installed, mpirun, program, run_ok, JobRun, Launch};
use std::time::Duration;

/// The core programs, each on every channel, with the rank count it runs at.
macro_rules! on_every_channel {
    ($($name:ident: $ranks:expr;)*) => {$(
        mod $name {
            #[test]
            fn bip() {
                super::run_ok(stringify!($name), $ranks, Some("bip"));
            }
            #[test]
            fn fm() {
                super::run_ok(stringify!($name), $ranks, Some("fm"));
            }
            #[test]
            fn fm1() {
                super::run_ok(stringify!($name), $ranks, Some("fm1"));
            }
        }
    )*};
}

on_every_channel! {
    ring: 4;
    anysource_anytag: 3;
    storm: 4;
    probe: 3;
    truncate: 2;
}

/// MPI's progress rule (MPI 3.1 §3.5, §5.12): a rank blocked in any call (a receive, a
/// loop of `MPI_Test` or `MPI_Iprobe`, a probe, a wait, a synchronous send, a barrier) moves
/// its pending 4 MiB send and its share of a 1 MiB `Ibcast` and `Iallreduce` on, which the
/// other ranks wait for; on every channel, on 4 ranks and oversubscribed on 8.
mod progress_rule {
    macro_rules! runs {
        ($($name:ident: $channel:expr, $ranks:expr;)*) => {$(
            #[test]
            fn $name() {
                super::run_ok("progress_rule", $ranks, Some($channel));
            }
        )*};
    }
    runs! {
        bip_4_ranks: "bip", 4;
        bip_8_ranks: "bip", 8;
        fm_4_ranks: "fm", 4;
        fm_8_ranks: "fm", 8;
        fm1_4_ranks: "fm1", 4;
        fm1_8_ranks: "fm1", 8;
    }
}

/// Packets each rank put on its NIC, from the pcap trace it wrote under `MPI_NIC_PCAP`
/// (records whose pseudo-header says "transmitted", see nic-model's `phy::pcap`).
fn packets_sent(trace: &std::path::Path) -> usize {
    let d = std::fs::read(trace).unwrap_or_else(|e| panic!("reading {}: {e}", trace.display()));
    let (mut at, mut sent) = (24, 0);
    while at + 16 <= d.len() {
        let len = u32::from_le_bytes(d[at + 8..at + 12].try_into().unwrap()) as usize;
        sent += usize::from(d[at + 16 + 1] == 0);
        at += 16 + len;
    }
    sent
}

/// One rendezvous, at one layer: a 1 MiB `MPI_Send` costs two packets on the NIC (the
/// RTS, which names the sender's region, and the FIN that withdraws it; the data moves in one
/// copy), counted in the pcap traces of a run with 20 such sends against a run with none.
#[test]
fn a_long_send_is_two_packets() {
    let exe = program("long_sends");
    let dir = std::env::temp_dir().join(format!("long-sends-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for channel in ["bip", "fm", "fm1"] {
        let mut total = [0usize; 2];
        for (k, sends) in [0usize, 20].into_iter().enumerate() {
            let prefix = dir.join(format!("{channel}-{sends}"));
            let run = mpirun(
                &exe,
                &Launch {
                    ranks: 2,
                    channel: Some(channel),
                    env: vec![
                        ("LONG_SENDS", sends.to_string().into()),
                        ("MPI_NIC_PCAP", prefix.clone().into()),
                    ],
                    ..Launch::default()
                },
            );
            assert_ok(&run, "long_sends");
            total[k] = (0..2)
                .map(|r| packets_sent(&dir.join(format!("{channel}-{sends}.rank{r}.pcap"))))
                .sum();
        }
        let per_message = (total[1] - total[0]) as f64 / 20.0;
        println!(
            "{channel}: {per_message} packets per 1 MiB MPI_Send ({} with 20 sends, {} with none)",
            total[1], total[0]
        );
        assert!(
            per_message <= 2.0,
            "{channel}: a 1 MiB MPI_Send cost {per_message} packets"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ring_oversubscribed_8_ranks() {
    run_ok("ring", 8, None);
}

#[test]
fn storm_oversubscribed_8_ranks() {
    run_ok("storm", 8, None);
}

#[test]
fn persistent() {
    run_ok("persistent", 2, None);
}

#[test]
fn sync_send() {
    run_ok("sync_send", 2, None);
}

#[test]
fn bad_args() {
    run_ok("bad_args", 3, None);
}

#[test]
fn misc() {
    run_ok("misc", 3, None);
}

/// Returned error codes carry their detail: class via `MPI_Error_class`, what went wrong via
/// `MPI_Error_string`; added codes work beside them.
#[test]
fn error_codes() {
    run_ok("error_codes", 2, None);
}

#[test]
fn hello() {
    let run = run_ok("hello", 4, None);
    for rank in 0..4 {
        let line = format!("Hello from rank {rank} of 4");
        assert!(
            run.stdout.lines().any(|l| l.trim_end() == line),
            "missing '{line}':{}",
            run.describe()
        );
    }
}

/// The promise is one second from a death to the end of the job; this allows for a
/// loaded 2-core machine and a debug build.
const REACTION_LIMIT: Duration = Duration::from_secs(3);

/// Asserts that a job meant to fail did fail, promptly, and returns how long it took to end
/// after rank 1 announced its end (or after the start, if the line never came through).
fn assert_failed_promptly(run: &JobRun, name: &str) -> Duration {
    assert!(
        !run.timed_out,
        "{name}: the job hung instead of ending:{}",
        run.describe()
    );
    assert!(
        run.code().is_some_and(|c| c != 0),
        "{name}: want a nonzero exit status:{}",
        run.describe()
    );
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("OK ")),
        "{name}: the program claims success:{}",
        run.describe()
    );
    let reaction = match run.watched_line_at {
        Some(at) => run.ended_at - at,
        None => run.elapsed,
    };
    assert!(
        reaction <= REACTION_LIMIT,
        "{name}: the job took {reaction:.2?} to end (limit {REACTION_LIMIT:?}):{}",
        run.describe()
    );
    reaction
}

#[test]
fn killed_rank_ends_the_job_and_is_named() {
    let exe = program("killed_rank");
    let run = mpirun(
        &exe,
        &Launch {
            ranks: 3,
            watch_for: Some("rank 1 dying"),
            ..Launch::default()
        },
    );
    let reaction = assert_failed_promptly(&run, "killed_rank");
    let output = run.output().to_lowercase();
    assert!(
        output.contains("rank 1"),
        "the message does not name rank 1:{}",
        run.describe()
    );
    println!(
        "job ended {reaction:.2?} after rank 1 killed itself; status {:?}",
        run.status
    );
}

#[test]
fn abort_ends_the_job_with_its_code() {
    let exe = program("abort");
    let run = mpirun(
        &exe,
        &Launch {
            ranks: 3,
            watch_for: Some("rank 1 aborting with 42"),
            ..Launch::default()
        },
    );
    let reaction = assert_failed_promptly(&run, "abort");
    assert_eq!(
        run.code(),
        Some(42),
        "MPI_Abort(MPI_COMM_WORLD, 42) should end mpirun with 42:{}",
        run.describe()
    );
    println!("job ended {reaction:.2?} after MPI_Abort");
}

#[test]
fn errors_are_fatal_by_default() {
    let exe = program("errors_fatal");
    let run = mpirun(
        &exe,
        &Launch {
            ranks: 2,
            ..Launch::default()
        },
    );
    assert_failed_promptly(&run, "errors_fatal");
    let output = run.output().to_lowercase();
    assert!(
        output.contains("invalid rank") || output.contains("mpi_err_rank"),
        "the job's message should name the error (invalid rank / MPI_ERR_RANK):{}",
        run.describe()
    );
}

/// The first line of the library version a run of `ring` printed ("library: ...").
fn library_line(run: &JobRun) -> String {
    run.stdout
        .lines()
        .find(|l| l.starts_with("library: "))
        .unwrap_or_else(|| panic!("ring printed no 'library:' line:{}", run.describe()))
        .to_owned()
}

/// MPICH's `mpicc`, or `None` (with a note in the test's output) if it is not installed.
fn mpich_mpicc() -> Option<std::path::PathBuf> {
    let found = installed("mpicc.mpich");
    if found.is_none() {
        println!("note: MPICH's mpicc.mpich is not installed (Debian: apt-get install mpich libmpich-dev); skipping");
    }
    found
}

/// Runs a binary built by MPICH's `mpicc` with our `mpirun`. MPICH's binaries record
/// `libmpich.so.12` without a directory: they find ours (under that name) through the
/// `LD_LIBRARY_PATH` that `common::mpirun` gives every job.
fn run_on_our_library(exe: &std::path::Path, ranks: usize) -> JobRun {
    mpirun(
        exe,
        &Launch {
            ranks,
            ..Launch::default()
        },
    )
}

#[test]
fn program_built_by_mpich_mpicc_runs_on_our_library() {
    let Some(mpich_cc) = mpich_mpicc() else {
        return;
    };
    let ours = run_ok("ring", 2, None);
    let theirs_exe = common::build_with(&mpich_cc, "ring", "ring-built-by-mpich");
    let theirs = run_on_our_library(&theirs_exe, 2);
    assert_ok(&theirs, "ring");
    let (our_library, loaded) = (library_line(&ours), library_line(&theirs));
    assert_eq!(
        loaded,
        our_library,
        "the MPICH-built program did not load our library:{}",
        theirs.describe()
    );
    assert!(
        !loaded.starts_with("library: MPICH Version:"),
        "the MPICH-built program loaded MPICH: {loaded}"
    );
}

/// The parts of the ABI `ring` does not touch, compiled against MPICH's header: status
/// fields and `MPI_ERR_IN_STATUS` (truncate), null and invalid handles and error classes
/// (bad_args), `MPI_BSEND_OVERHEAD` and persistent requests (persistent), attributes and
/// thread levels (misc), error codes and their strings (error_codes). Which library they
/// load is shown by the ring test above.
#[test]
fn programs_built_by_mpich_mpicc_pass_on_our_library() {
    let Some(mpich_cc) = mpich_mpicc() else {
        return;
    };
    for name in ["truncate", "bad_args", "persistent", "misc", "error_codes"] {
        let exe = common::build_with(&mpich_cc, name, &format!("{name}-built-by-mpich"));
        assert_ok(&run_on_our_library(&exe, 2), name);
    }
}
