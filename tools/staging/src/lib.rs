//! # mpi-staging: this test build's MPI tools and library, side by side
//!
//! Test support, a dev-dependency of `c-abi` and `mpi-tools` and of nothing else.
//!
//! `cargo build` leaves the tools (package `mpi-tools`) and `libmpi.so` (package `c-abi`) side
//! by side in `target/<profile>/`, and the wrappers rely on that: `mpicc` links against the
//! `libmpi.so` beside it. A test build does not give the tests that directory as such:
//!
//! - it leaves the `libmpi.so` it built in `target/<profile>/deps/` and does not refresh
//!   `target/<profile>/libmpi.so`, which is whatever the last `cargo build` left (stale, or
//!   missing on a fresh checkout);
//! - a package's tests know the paths of that package's own binaries only
//!   (`CARGO_BIN_EXE_<name>`), so `c-abi`'s tests cannot name the tools that way.
//!
//! So the tests find the tools in `target/<profile>/` by the location of their own executable
//! ([`tool`]), make sure they are this build's ([`tool`] runs `cargo build -p mpi-tools` once
//! per test process, which does nothing when they are up to date), and copy what a test needs
//! into a private directory laid out as `cargo build` lays out `target/<profile>/`
//! ([`stage_build`]), with the test build's own library ([`library`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The library's other names, links to `libmpi.so` (as `c-abi`'s build script makes them).
const LIBRARY_ALIASES: [&str; 3] = ["libmpi.so.12", "libmpich.so.12", "libmpich.so"];

/// `target/<profile>/` of the running test: the parent of the `deps/` directory that holds the
/// test executable.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own executable");
    let deps = exe
        .parent()
        .expect("the test executable lives in a directory");
    assert!(
        deps.file_name().is_some_and(|name| name == "deps"),
        "{} is not in a cargo target/<profile>/deps/ directory",
        exe.display()
    );
    deps.parent()
        .expect("deps/ lives in the profile directory")
        .to_path_buf()
}

/// This build's tool `name` (`mpicc`, `mpirun`, ...) in [`profile_dir`]. The first call of a
/// test process builds the tools there (see [`build_tools`]).
pub fn tool(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(build_tools);
    let path = profile_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing after building mpi-tools",
        path.display()
    );
    path
}

/// Runs `cargo build -p mpi-tools --bins` for the profile and target directory of the running
/// test, so that [`profile_dir`] holds the tools of this source tree. `cargo test --workspace`
/// and `cargo test -p mpi-tools` have built them already (they build the binaries of a
/// package whose integration tests they build), and then this finds nothing to do; it matters
/// for `cargo test -p c-abi`, which builds the library alone.
pub fn build_tools() {
    let profile_dir = profile_dir();
    let target_dir = profile_dir
        .parent()
        .expect("the profile directory lives in target/");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(&cargo);
    command
        .args(["build", "--quiet", "--package", "mpi-tools", "--bins"])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
        None => panic!("no profile name in {}", profile_dir.display()),
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(&cargo).display()));
    assert!(status.success(), "{command:?} failed ({status})");
}

/// The `libmpi.so` of this test build: the one in `deps/` (built for this test run, since
/// the test depends on `c-abi`), else the one in [`profile_dir`].
pub fn library() -> PathBuf {
    let profile_dir = profile_dir();
    [
        profile_dir.join("deps").join("libmpi.so"),
        profile_dir.join("libmpi.so"),
    ]
    .into_iter()
    .find(|path| path.is_file())
    .unwrap_or_else(|| {
        panic!(
            "no libmpi.so in {} or its deps/: the test package must depend on c-abi",
            profile_dir.display()
        )
    })
}

/// Fills `dir` as `cargo build` fills `target/<profile>/`, from this test build's outputs:
/// copies of `tools` (see [`tool`]), a copy of [`library`], and the library's other names
/// as links to it.
pub fn stage_build(dir: &Path, tools: &[&str]) {
    for name in tools {
        let from = tool(name);
        std::fs::copy(&from, dir.join(name))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
    }
    let library = library();
    std::fs::copy(&library, dir.join("libmpi.so"))
        .unwrap_or_else(|e| panic!("cannot copy {}: {e}", library.display()));
    for alias in LIBRARY_ALIASES {
        std::os::unix::fs::symlink("libmpi.so", dir.join(alias))
            .unwrap_or_else(|e| panic!("cannot link {alias}: {e}"));
    }
}

/// A fresh private directory `<base>/<prefix>-<pid>` for this test process (emptied if it
/// exists). Test binaries make one per run under cargo's `CARGO_TARGET_TMPDIR`, which cargo
/// never empties, so first the directories `<prefix>-<N>` of earlier runs whose process `N`
/// is gone are removed: what a run stages (copies of the tools and the library, hundreds of
/// megabytes) does not pile up run after run, and a run still going keeps its own.
pub fn private_dir(base: &Path, prefix: &str) -> PathBuf {
    if let Ok(entries) = std::fs::read_dir(base) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|n| n.strip_prefix('-'))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new("/proc").join(pid.to_string()).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = base.join(format!("{prefix}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

pub mod netns;
pub mod slurm;
