//! MPI-IO when things go wrong (issue 15, "Bad input and faults"): the programs
//! `tests/c/file/file_faults.c` and `file_rank_dies.c`, built with our `mpicc` and run with our
//! `mpirun`.
//!
//! * A full file system and a read-only one are real: the job runs under `unshare --mount`
//!   in a mount namespace of its own, where a shell mounts a 256 KiB tmpfs and a read-only
//!   tmpfs before it starts `mpirun`; nothing outside the job sees them, and they go away with
//!   the namespace when the job ends. (Root only: skipped with a note otherwise.)
//! * A rank killed while the others are in a collective write ends the job with a message
//!   that names it, and the data synced before it died is intact.

mod common;

use common::{mpirun, program, Launch, Scratch};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Whether this process may make a mount namespace and mount in it.
fn can_mount() -> bool {
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("d=$(mktemp -d) && mount -t tmpfs -o size=64k none \"$d\" && umount \"$d\" && rmdir \"$d\"")
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `file_faults` on `ranks` ranks with a full and a read-only tmpfs mounted for the job.
fn run_faults(exe: &Path, ranks: usize, dir: &Path) {
    let (full, ro, files) = (dir.join("full"), dir.join("ro"), dir.join("files"));
    for d in [&full, &ro, &files] {
        std::fs::create_dir_all(d).expect("create a mount point");
    }
    // The shell mounts, then becomes mpirun; `timeout` bounds a hang (mpirun's own --timeout
    // ends it first, cleaning up).
    let script = "mount -t tmpfs -o size=256k none \"$FULL_DIR\" \
                  && mount -t tmpfs -o ro,size=64k none \"$RO_DIR\" \
                  && exec \"$@\"";
    let guard = common::JOB_GUARD.as_secs();
    let started = Instant::now();
    let out = Command::new("timeout")
        .args(["-k", "5", &(guard + 10).to_string()])
        .args([
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(common::mpirun_path())
        .args(["-n", &ranks.to_string(), "--timeout", &guard.to_string()])
        .arg(exe)
        .env("LD_LIBRARY_PATH", common::library_dir())
        .env("FULL_DIR", &full)
        .env("RO_DIR", &ro)
        .env("FILE_TEST_DIR", &files)
        .output()
        .expect("run timeout/unshare/mpirun");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && out.stdout.starts_with(b"OK file_faults"),
        "file_faults on {ranks} ranks failed ({:?} after {:.1?}):\n{text}",
        out.status,
        started.elapsed()
    );
    assert!(
        std::fs::read_dir(&full).unwrap().next().is_none(),
        "the full tmpfs was the job's own: nothing of it may show in the real directory"
    );
    let left: Vec<_> = std::fs::read_dir(&files).unwrap().collect();
    assert!(left.is_empty(), "file_faults left files behind: {left:?}");
}

#[test]
fn full_and_read_only_file_systems_and_names_that_are_not_files_get_their_classes() {
    if !can_mount() {
        println!("note: cannot mount in a private mount namespace here (not root?); skipping");
        return;
    }
    let exe = program("file/file_faults");
    for ranks in [1, 2, 4] {
        let dir = Scratch::new("ffault", &format!("faults{ranks}"));
        run_faults(&exe, ranks, &dir.0);
    }
}

#[test]
fn a_rank_killed_in_a_collective_write_ends_the_job_and_synced_data_survives() {
    const BLOCK: usize = 256 * 1024;
    let expected = |i: usize| ((i * 7) ^ (i >> 8) ^ 0x5a) as u8;
    let exe = program("file/file_rank_dies");
    for ranks in [2, 4] {
        let dir = Scratch::new("ffault", &format!("dies{ranks}"));
        let dying = format!("rank {} dying", ranks - 1);
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                watch_for: Some(&dying),
                env: vec![("FILE_TEST_DIR", dir.0.as_os_str().to_owned())],
                ..Launch::default()
            },
        );
        assert!(!job.timed_out, "the job hung:{}", job.describe());
        assert!(
            job.code().is_some_and(|c| c != 0) && job.watched_line_at.is_some(),
            "want the rank to die and the job to fail:{}",
            job.describe()
        );
        let reaction = job.ended_at - job.watched_line_at.unwrap();
        assert!(
            reaction < Duration::from_secs(10),
            "the job took {reaction:.1?} to end after the rank died:{}",
            job.describe()
        );
        assert!(
            job.output()
                .to_lowercase()
                .contains(&format!("rank {}", ranks - 1)),
            "the message does not name the dead rank:{}",
            job.describe()
        );
        let bytes = std::fs::read(dir.0.join("dies.dat")).expect("the program's file");
        assert!(bytes.len() >= BLOCK * ranks, "the synced region is short");
        let wrong = (0..BLOCK * ranks)
            .filter(|&i| bytes[i] != expected(i))
            .count();
        assert_eq!(wrong, 0, "{wrong} synced bytes changed after the rank died");
    }
}
