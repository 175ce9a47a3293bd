//! `mpif90`: compile and link Fortran MPI programs (`include 'mpif.h'` or `use mpi`) against
//! this project's `libmpi.so`.
//!
//! A thin driver in front of the Fortran compiler (`$MPICH_F90`, else `gfortran`); see
//! `src/tools/wrapper/mod.rs` for how it finds `mpif.h`, `mpi.mod` and the library.

// Shared with the other wrappers and mpi-install; each binary uses only part of it.
#[allow(dead_code)]
#[path = "../tools/wrapper/mod.rs"]
mod wrapper;

fn main() -> std::process::ExitCode {
    wrapper::driver::main(wrapper::language::Language::Fortran90)
}
