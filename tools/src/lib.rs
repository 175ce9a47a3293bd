//! # mpi-tools: the programs that build and start MPI programs
//!
//! ```text
//!   mpicc / mpicxx / mpifort ──compile & link──▶ program ──NEEDED──▶ libmpi.so (c-abi)
//!   mpirun / mpiexec ──nic_model::Job──▶ rank 0 .. rank N-1 of that program
//!   mpi-install ──copies──▶ PREFIX/{bin,lib,include}
//! ```
//!
//! **Where it sits.** Beside the stack, not in it: these tools start and build MPI programs,
//! and none of their code is part of `libmpi.so`. A program built by our `mpicc` talks to the
//! `c-abi` library alone; `mpirun` only creates the job's shared-memory fabric
//! ([`nic_model::Job`], sized by [`mpich_channel::job_config`]), starts the ranks on it and
//! supervises them until the job ends.
//!
//! **What it promises.** The binaries of this package (`src/bin/`, a few lines each) are the
//! `mpicc`, `mpicxx`, `mpifort`/`mpif77`/`mpif90`, `mpirun`, `mpiexec` and `mpi-install` that
//! `cargo build --release` leaves in `target/release/` beside `libmpi.so`. The wrappers find
//! `mpi.h`, `libmpi.so` and the Fortran files relative to their own location, so they work in
//! place and after `mpi-install --prefix DIR` has copied everything under `DIR`.
//!
//! **What it needs.** From `c-abi`, nothing at compile time but the path of its headers
//! (`c-abi/include`, baked in by `build.rs` for in-place use); at run time its build outputs:
//! `libmpi.so` beside the tools and `mpif.h`/`mpi.mod` in the profile directory's `include/`,
//! both written by `c-abi`'s build. Cargo does not order the two packages, so only a
//! workspace build (`cargo build --release`) is sure to leave both in place. From
//! `nic-model` and `mpich-channel`, the job and its configuration.
//!
//! **Modules.** [`wrapper`]: the compiler wrappers and the installer; [`launcher`]: the job
//! launcher behind `mpirun` and `mpiexec`.

pub mod launcher;
pub mod wrapper;
