//! `mpicxx`: compile and link C++ MPI programs against this project's `libmpi.so`.
//!
//! A thin driver in front of the C++ compiler (`$MPICH_CXX`, else `c++`); see
//! [`mpi_tools::wrapper`] for how it finds the headers and the library.

use mpi_tools::wrapper::{driver, language::Language};

fn main() -> std::process::ExitCode {
    driver::main(Language::Cxx)
}
