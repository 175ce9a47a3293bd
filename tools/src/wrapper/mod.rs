//! # The compiler wrappers (`mpicc`, `mpicxx`, `mpifort`/`mpif77`/`mpif90`) and the install command (`mpi-install`)
//!
//! A wrapper is a thin driver in front of the system's C or C++ compiler. It passes the user's
//! arguments through unchanged and in order, then appends what an MPI program needs:
//! `-I<include dir>` always, and `-L<lib dir> -Wl,-rpath,<lib dir> -lmpi` when the command links.
//! The rpath is what lets a program built here run without `LD_LIBRARY_PATH`.
//!
//! The wrappers carry no configured paths. They find `mpi.h` and `libmpi.so` relative to their
//! own executable ([`layout`]), so the same binary works in place in `target/release/` (or
//! `target/debug/`) and after `mpi-install` has copied everything to `PREFIX/{bin,include,lib}`.
//!
//! MPICH's `mpicc` is the reference for the command line: `-show`, `-compile-info`,
//! `-link-info`, `-show-compile-info`, `-show-link-info`, `-cc=`/`-cxx=`, `-echo`, `-v`,
//! `-help`, `-profile=`, and the `MPICH_CC` / `MPICH_CXX` environment variables.
//!
//! Modules, one concern each:
//! - [`language`]: what differs between the wrappers (names, default compiler, variable, and
//!   the header that marks the include directory: `mpif.h`, beside `mpi.mod`, for Fortran).
//! - [`options`]: splits the command line into wrapper options and compiler arguments.
//! - [`layout`]: where the headers and the library are, and the installed file names.
//! - [`command`]: assembles the compiler's argument vector and prints it shell-quoted.
//! - [`driver`]: the `main` of `mpicc`, `mpicxx` and the Fortran wrappers.
//! - [`install`]: the `main` of `mpi-install`.
//! - [`error`]: every failure, worded to tell the user what to do.
//!
//! The binaries `mpicc`, `mpicxx`, `mpifort`, `mpif77` and `mpif90` each call [`driver::main`]
//! with their [`language::Language`]; `mpi-install` calls [`install::main`].

pub mod command;
pub mod driver;
pub mod error;
pub mod install;
pub mod language;
pub mod layout;
pub mod options;
