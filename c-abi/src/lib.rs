//! # c-abi: `libmpi.so`, `mpi.h` and the MPI tools (not yet implemented)
//!
//! This crate will hold the MPI layer above the channel device and its C ABI (MPICH-compatible
//! handles and `MPI_Status`), the `PMPI_` profiling entry points, and the `mpicc`, `mpifort` and
//! `mpirun` tools.
//!
//! Nothing here works yet: the crate exists so the workspace has its final shape.
