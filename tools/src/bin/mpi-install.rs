//! `mpi-install --prefix DIR`: copy the MPI tools, `libmpi.so` (with its `.12` and MPICH
//! names) and the headers of a build into `DIR/bin`, `DIR/lib` and `DIR/include`.
//!
//! See [`mpi_tools::wrapper::install`] for the layout and the checks.

fn main() -> std::process::ExitCode {
    mpi_tools::wrapper::install::main()
}
