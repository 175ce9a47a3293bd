//! `mpicxx`: compile and link C++ MPI programs against this project's `libmpi.so`.
//!
//! A thin driver in front of the C++ compiler (`$MPICH_CXX`, else `c++`); see
//! `src/tools/wrapper/mod.rs` for how it finds the headers and the library.

// Shared with mpicc and mpi-install; each binary uses only part of it.
#[allow(dead_code)]
#[path = "../tools/wrapper/mod.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::driver::main(wrapper::language::Language::Cxx)
}
