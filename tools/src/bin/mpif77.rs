//! `mpif77`: compile and link Fortran MPI programs (`include 'mpif.h'` or `use mpi`) against
//! this project's `libmpi.so`.
//!
//! A thin driver in front of the Fortran compiler (`$MPICH_F77`, else `gfortran`); see
//! [`mpi_tools::wrapper`] for how it finds `mpif.h`, `mpi.mod` and the library.

use mpi_tools::wrapper::{driver, language::Language};

fn main() -> std::process::ExitCode {
    driver::main(Language::Fortran77)
}
