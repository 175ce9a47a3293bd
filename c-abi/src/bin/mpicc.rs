//! `mpicc`: compile and link C MPI programs against this project's `libmpi.so`.
//!
//! A thin driver in front of the C compiler (`$MPICH_CC`, else `cc`); see
//! `src/tools/wrapper/mod.rs` for how it finds the headers and the library.

// Shared with mpicxx and mpi-install; each binary uses only part of it.
#[allow(dead_code)]
#[path = "../tools/wrapper/mod.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::driver::main(wrapper::language::Language::C)
}
