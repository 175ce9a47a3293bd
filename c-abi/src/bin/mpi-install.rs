//! `mpi-install --prefix DIR`: copy the MPI tools, `libmpi.so` (with its `.12` and MPICH
//! names) and the headers of a build into `DIR/bin`, `DIR/lib` and `DIR/include`.
//!
//! See `src/tools/wrapper/install.rs` for the layout and the checks.

// Shared with mpicc and mpicxx; each binary uses only part of it.
#[allow(dead_code)]
#[path = "../tools/wrapper/mod.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::install::main()
}
