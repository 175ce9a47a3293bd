//! # c-abi: `libmpi.so`, the MPI library with MPICH's binary interface
//!
//! ```text
//!   C program ──mpi.h──▶ MPI_Send ─▶ PMPI_Send ─▶ checks ─▶ Adi::send ─▶ channel ─▶ BIP/FM
//!                         (export)     (p2p)      (args)    (mpich-channel)
//! ```
//!
//! **What it does.** This crate is the MPI layer of the stack: the C functions of `mpi.h`
//! (`include/mpi.h`), exported from `libmpi.so` under their `MPI_` and `PMPI_` names, and their
//! Fortran twins (`mpi_send_`), on top of mpich-channel's point-to-point engine
//! ([`mpich_channel::Adi`]). It owns everything MPI has that the engine does not: handles,
//! derived datatypes, communicators and their context ids, groups, topologies, attributes,
//! info objects, request objects (persistent ones included), statuses, buffered sends, the
//! collectives and reduction operations, error classes and handlers, and the argument checking
//! of every call.
//!
//! **What it promises.** The MPICH 4.0 ABI: every handle, constant and the `MPI_Status` layout
//! are MPICH's, and the library answers to `libmpi.so.12` and `libmpich.so.12` (see
//! `build.rs`), so a program compiled against MPICH runs on it unmodified. `mpi.h` is the
//! single source of the values: bindgen turns it into [`abi`], and each exported function is
//! checked at compile time against its prototype there. A bad argument returns the right error
//! class (or, under the default `MPI_ERRORS_ARE_FATAL`, ends the job with a one-line message)
//! and changes nothing. The fast path (`MPI_Send`, `MPI_Recv`, `MPI_Isend`, `MPI_Irecv`,
//! `MPI_Wait` of small messages) adds a few comparisons to the engine: no lock, no allocation,
//! no hashing. Thread level: up to `MPI_THREAD_SERIALIZED`.
//!
//! **What it needs from below.** An [`mpich_channel::Adi`] per process: bytes, engine ranks,
//! tags and 16-bit context ids; nonblocking operations that never block; a progress call that
//! backs off when idle.
//!
//! **Modules.** Plumbing: [`abi`] (the header, via bindgen), `export` (the `MPI_`/`PMPI_`
//! entry-point macro), `global` (the process-wide state cell), `state`, `cptr` (the C
//! caller's pointers), `error` and `errhandler`. Objects: `comm` (communicators, context ids,
//! creation, intercommunicators), `group`, `topo`, `attr`, `info`, `datatype` (flattened
//! layouts, constructors, queries, pack), `op` (reduction kernels, user operations),
//! `status`, `request`, `bsend`, `mem`. Calls: `init`, `args` (argument checking), `p2p`
//! (blocking), `nonblocking` (nonblocking and persistent), `mprobe` (matched probes),
//! `spawn` (dynamic processes, refused), `completion` (wait and test), `coll` (every
//! collective, as schedules: blocking ones run at once, nonblocking ones are advanced by
//! every wait), `env` (clocks, names, versions). `fortran`: the Fortran entry
//! points (generated from `mpi.h` by `fortran/generate.rs`) and the Fortran sentinels. The
//! tools that build and start MPI programs (`mpicc`, `mpifort`, `mpirun`, ...) are not part of
//! this library: they are the `mpi-tools` package (`tools/`), and find `mpi.h`, `libmpi.so`
//! and the generated Fortran files where this package's build leaves them.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
mod attr;
mod coll;
mod comm;
mod cptr;
mod datatype;
mod env;
mod errhandler;
mod error;
mod fortran;
mod group;
mod handle;
mod info;
mod op;
mod p2p;
mod runtime;
mod spawn;
mod topo;
