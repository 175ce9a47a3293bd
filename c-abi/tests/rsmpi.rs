//! MPI from Rust through the C ABI: the rsmpi crates (`mpi` over `mpi-sys`) built against our
//! `mpicc` and run under our `mpirun`.
//!
//! `tests/rust/rsmpi-check` is a standalone cargo project (outside the workspace, with its own
//! `Cargo.lock`). This test builds it the way a user would, except that every path is this
//! build's: `MPICC` names a staged copy of this build's `mpicc` beside this build's
//! `libmpi.so` (mpi-sys's build script asks `$MPICC -show` for the header and the library
//! before it would try pkg-config, where Debian's `mpich.pc` is), and `PATH` starts with that
//! directory. Then it checks that the binary really links our library (its `NEEDED`
//! `libmpi.so.12` resolves to the staged copy, not to MPICH's or Open MPI's), and runs it on 2
//! and 4 ranks and on the `fm` channel: the program checks every value it receives and rank 0
//! prints `OK rsmpi` and its 8 B ping-pong latency.
//!
//! The cargo build goes to `CARGO_TARGET_TMPDIR/rsmpi-check/`, which persists between runs, so
//! only the first one compiles the crates (bindgen, syn, ...; crates.io must be reachable then,
//! or the crates in `~/.cargo/registry`). mpi-sys regenerates its bindings only when its own
//! files change, not when our `mpi.h` does; the test keeps a copy of the header it was built
//! with and cleans mpi-sys when the header differs.

mod common;

use common::{assert_ok, mpirun, JobRun, Launch};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// The rsmpi program's cargo project.
fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rust/rsmpi-check")
}

/// Where the program is built: persistent between test runs, so rebuilds are incremental.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("rsmpi-check")
}

/// This build's `mpicc` and `libmpi.so`, staged at a fixed path. The path must not change from
/// run to run: mpi-sys records the `-L` directory of its first build and does not rerun its
/// build script when `MPICC` changes, so the directory is refreshed in place instead.
fn staged_mpi() -> PathBuf {
    let dir = target_dir().join("mpi");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    common::stage_build(&dir, &["mpicc"]);
    dir
}

/// A `cargo` command for the rsmpi project, with the MPI environment pointing at `mpi_dir`.
fn cargo(mpi_dir: &Path) -> Command {
    let mut command = Command::new(option_env!("CARGO").unwrap_or("cargo"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(mpi_dir.to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .expect("PATH entries without ':'");
    command
        .current_dir(project_dir())
        .env("MPICC", mpi_dir.join("mpicc"))
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", target_dir())
        // These would make build-probe-mpi look at a pkg-config file instead of our mpicc.
        .env_remove("MPI_PKG_CONFIG")
        .env_remove("CRAY_MPICH_DIR");
    command
}

/// The `mpi.h` that `mpicc -show` compiles against (its `-I` directory).
fn header_of(mpicc: &Path) -> PathBuf {
    let out = Command::new(mpicc)
        .arg("-show")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} -show: {e}", mpicc.display()));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} -show failed: {shown}",
        mpicc.display()
    );
    shown
        .split_whitespace()
        .filter_map(|arg| arg.strip_prefix("-I"))
        .map(|dir| Path::new(dir).join("mpi.h"))
        .find(|header| header.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{} -show` names no directory with mpi.h: {shown}",
                mpicc.display()
            )
        })
}

/// Runs a cargo command and panics with its output if it fails.
fn run_cargo(mut command: Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to {what}: {e}"));
    assert!(
        out.status.success(),
        "cargo failed to {what} ({}); the first build downloads the rsmpi crates from crates.io:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rsmpi program, built once per test run (the first caller builds, the others wait).
fn rsmpi_check() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mpi_dir = staged_mpi();
        // Bindings generated from an older mpi.h would miss what was added since.
        let header = std::fs::read(header_of(&mpi_dir.join("mpicc"))).expect("mpi.h is readable");
        let bound = target_dir().join("mpi.h.bound");
        if std::fs::read(&bound).ok().as_deref() != Some(&header[..]) {
            let mut clean = cargo(&mpi_dir);
            clean.args(["clean", "--release", "-p", "mpi-sys"]);
            run_cargo(clean, "clean mpi-sys after an mpi.h change");
        }
        let started = Instant::now();
        let mut build = cargo(&mpi_dir);
        build.args(["build", "--release", "--locked"]);
        run_cargo(build, "build tests/rust/rsmpi-check");
        eprintln!(
            "rsmpi-check built in {:.1} s (incremental after the first run)",
            started.elapsed().as_secs_f64()
        );
        std::fs::write(&bound, &header).expect("target dir is writable");
        (target_dir().join("release").join("rsmpi-check"), mpi_dir)
    })
}

/// Runs the program under our `mpirun`.
///
/// `LD_LIBRARY_PATH` names the staged library: `cargo test` sets it to include
/// `target/debug/`, whose `libmpi.so.12` is whatever the last `cargo build` left there (stale,
/// or missing the newest functions) and would win over the binary's run path.
fn run(ranks: usize, channel: Option<&str>) -> JobRun {
    let (exe, mpi_dir) = rsmpi_check();
    mpirun(
        exe,
        &Launch {
            ranks,
            channel,
            env: vec![
                ("LD_LIBRARY_PATH", mpi_dir.clone().into_os_string()),
                // A short ping-pong: the figure is informative, and the machine is shared.
                ("RSMPI_CHECK_ROUND_TRIPS", "200".into()),
            ],
            ..Launch::default()
        },
    )
}

/// Runs the program and prints its latency line (visible with `--nocapture`).
fn run_ok(ranks: usize, channel: Option<&str>) {
    let job = run(ranks, channel);
    assert_ok(&job, "rsmpi");
    let latency = job
        .stdout
        .lines()
        .find(|l| l.starts_with("rsmpi 8 B latency:"))
        .unwrap_or_else(|| panic!("no latency line:{}", job.describe()));
    eprintln!("{latency} [{}]", channel.unwrap_or("default channel"));
}

#[test]
fn links_our_library_not_mpich() {
    let (exe, mpi_dir) = rsmpi_check();
    let dynamic = Command::new("readelf")
        .arg("-d")
        .arg(exe)
        .output()
        .expect("readelf runs (apt-get install binutils)");
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(
        dynamic.contains("[libmpi.so.12]"),
        "the binary does not need libmpi.so.12:\n{dynamic}"
    );
    assert!(
        !dynamic.contains("libmpich") && !dynamic.contains("libmpi.so.40"),
        "the binary needs MPICH's or Open MPI's library:\n{dynamic}"
    );
    assert!(
        dynamic.contains(&format!("[{}]", mpi_dir.display())),
        "the binary's run path is not the staged library's directory {}:\n{dynamic}",
        mpi_dir.display()
    );

    // Without cargo's LD_LIBRARY_PATH (see `run`): the run path alone must find the library.
    let ldd = Command::new("ldd")
        .arg(exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("ldd runs (apt-get install libc-bin)");
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let resolved = ldd
        .lines()
        .find(|l| l.trim_start().starts_with("libmpi.so.12 "))
        .unwrap_or_else(|| panic!("ldd lists no libmpi.so.12:\n{ldd}"));
    assert!(
        resolved.contains(&format!("=> {}/libmpi.so.12 ", mpi_dir.display())),
        "libmpi.so.12 resolves elsewhere than {}: {resolved}",
        mpi_dir.display()
    );
    assert!(
        !ldd.contains("libmpich") && !ldd.contains("openmpi"),
        "another MPI library is loaded too:\n{ldd}"
    );
}

#[test]
fn two_ranks() {
    run_ok(2, None);
}

#[test]
fn four_ranks() {
    run_ok(4, None);
}

#[test]
fn four_ranks_on_fm_channel() {
    run_ok(4, Some("fm"));
}

/// The checks are live: on one rank the program cannot run its exchanges, says so, and
/// ends the job through `MPI_Abort` with a failing status.
#[test]
fn one_rank_fails_with_message() {
    let job = run(1, None);
    assert!(!job.timed_out, "the job hung:{}", job.describe());
    assert_eq!(
        job.code(),
        Some(1),
        "expected MPI_Abort's code 1:{}",
        job.describe()
    );
    assert!(
        job.stderr
            .contains("FAIL rsmpi rank 0: needs at least 2 ranks"),
        "no failure message:{}",
        job.describe()
    );
    assert!(
        !job.stdout.contains("OK rsmpi"),
        "OK printed on failure:{}",
        job.describe()
    );
}
