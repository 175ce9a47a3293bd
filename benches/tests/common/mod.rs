//! What the benches tests share: a directory holding this build's MPI tools and library
//! beside the benches binaries, laid out as `cargo build` lays out `target/<profile>/`.
//!
//! The benches binaries (`nas`, `layers`, `mpibench`) find `mpicc` and `mpirun` beside their
//! own executable. A test build leaves `libmpi.so` in `target/debug/deps/` and does not
//! refresh `target/debug/libmpi.so`, so the tests copy everything into a private directory:
//! the binaries of this package, `c-abi`'s tools (built by `cargo test --workspace`), the
//! library and its other names.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// `target/debug/` of this build: where cargo put this package's binaries.
fn built_dir() -> PathBuf {
    let any_bin = Path::new(env!("CARGO_BIN_EXE_layers"));
    any_bin
        .parent()
        .expect("binaries live in a directory")
        .to_path_buf()
}

/// The private tools directory (made once per test binary run).
pub fn tools_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = mpi_staging::private_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "benches-tools");
        let built = built_dir();
        for tool in ["mpicc", "mpirun", "mpiexec", "layers", "nas", "mpibench", "netbench", "iobench"] {
            let from = built.join(tool);
            if from.is_file() {
                std::fs::copy(&from, dir.join(tool)).unwrap_or_else(|e| panic!("cannot copy {}: {e}", from.display()));
            } else if matches!(tool, "mpicc" | "mpirun") {
                panic!(
                    "{} is missing: run the tests with `cargo test --workspace` (it builds the tools of package mpi-tools)",
                    from.display()
                );
            }
        }
        let library = [built.join("deps").join("libmpi.so"), built.join("libmpi.so")]
            .into_iter()
            .find(|p| p.is_file())
            .unwrap_or_else(|| {
                panic!(
                    "no libmpi.so in {} or its deps/: run `cargo test --workspace`",
                    built.display()
                )
            });
        std::fs::copy(&library, dir.join("libmpi.so"))
            .unwrap_or_else(|e| panic!("cannot copy {}: {e}", library.display()));
        for alias in ["libmpi.so.12", "libmpich.so.12", "libmpich.so"] {
            std::os::unix::fs::symlink("libmpi.so", dir.join(alias))
                .unwrap_or_else(|e| panic!("cannot link {alias}: {e}"));
        }
        dir
    })
    .clone()
}

/// A tool from [`tools_dir`].
pub fn tool(name: &str) -> PathBuf {
    tools_dir().join(name)
}

/// A command running tool `name` from [`tools_dir`], with the loader's path naming that
/// directory: `cargo test` puts `target/debug/` on `LD_LIBRARY_PATH`, ahead of the programs'
/// rpath, and the `libmpi.so.12` there is whatever the last `cargo build` left.
pub fn command(name: &str) -> Command {
    let mut command = Command::new(tool(name));
    command.env("LD_LIBRARY_PATH", tools_dir());
    command
}
