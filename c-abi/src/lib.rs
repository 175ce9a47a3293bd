//! # c-abi: `libmpi.so`, the MPI library with MPICH's binary interface
//!
//! ```text
//!   C program ──mpi.h──▶ MPI_Send ─▶ PMPI_Send ─▶ checks ─▶ Engine::send ─▶ channel ─▶ BIP/FM
//!                      (runtime::export) (p2p::api) (p2p::args)  (mpich-channel)
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
//! no hashing. Thread level: up to `MPI_THREAD_MULTIPLE` (`runtime::thread`: under it every
//! call holds one process-wide lock while it uses the state, and blocking calls let it go
//! while they wait; below it, no lock at all).
//!
//! **What it needs from below.** An [`mpich_channel::Adi`] per process: bytes, engine ranks,
//! tags and 16-bit context ids; nonblocking operations that never block; a progress call that
//! backs off when idle.
//!
//! **Modules.** One folder per MPI subsystem. Each owns its state (a handle table, or a few
//! fields of the running state) and offers a Rust API that takes exactly the tables it needs,
//! or a small context of them (`p2p::Cx`, `coll::Cx`, `comm::make::Cx`); its C entry points
//! are apart, in its `api` (a file, or a folder of them): `p2p` (point-to-point: argument
//! checks, blocking, nonblocking and persistent operations, completion, matched probes,
//! statuses, the bsend buffer, generalized requests), `partitioned` (partitioned sends
//! and receives, persistent requests whose rounds are engine operations), `coll` (every collective, as schedules: blocking ones run at
//! once, nonblocking ones are advanced by every turn of the engine), `datatype` (flattened
//! layouts, constructors, packing), `op` (reduction kernels, user operations), `comm`
//! (communicators, context ids, creation, intercommunicators), `group`, `topo` (Cartesian,
//! graph and distributed-graph topologies), `attr` (keyvals and attributes), `info`,
//! `errhandler` (handlers, error classes and codes), `env` (clocks, names, versions,
//! `MPI_Alloc_mem`), `win` (one-sided communication), `file` (MPI-IO), `session` (MPI 4.0
//! sessions and communicators made from groups), `tool` (MPI_T: the settings as control
//! variables, the layers' counters as performance variables). Below them: [`abi`] (the header, via bindgen), `handle` (the handle table
//! of every kind of object), `cptr` (the C caller's pointers), `count` (counts and
//! displacements of the int and the large-count `_c` forms), `error`. Above them: `runtime`
//! (the `Runtime` aggregate of the engine and every table, which makes the contexts; the
//! process-wide state cell; the `MPI_`/`PMPI_` entry-point macro and the raise path to the
//! error handlers; `thread`, the lock of `MPI_THREAD_MULTIPLE` and the waits that let it go). At the top, the entry points: every `api`, `runtime::init` (`MPI_Init`,
//! `MPI_Finalize`), `fortran` (the Fortran entry points and the `mpi_f08` glue, generated from
//! `mpi.h` by `fortran/generate.rs` and `fortran/generate_f08.rs`, and the Fortran sentinels)
//! and `dynamic` (dynamic processes: spawn, ports, join, names).
//!
//! ```text
//!   entry points   p2p::api  coll::api  comm::api  ...  runtime::init  fortran  dynamic
//!        │             st.runtime()?.p2p() / .coll() / .comm(): borrows of the tables
//!   runtime        Runtime { engine, comms, types, ops, groups, keyvals, ... }  global  export
//!        │
//!   objects        p2p  coll  comm  datatype  op  group  topo  attr  info  errhandler  env
//!        │
//!   bottom         abi  handle  cptr  error
//! ```
//!
//! Each layer uses only the layers below it, the subsystems use one another without a
//! circle, and no entry point calls another: `tests/architecture.rs` checks this on the
//! sources. The next subsystems (windows, files) are one more folder each: a table (one more
//! handle kind), a field of `Runtime`, a Rust API and its `api`.
//!
//! The tools that build and start MPI programs (`mpicc`, `mpifort`, `mpirun`, ...) are not
//! part of this library: they are the `mpi-tools` package (`tools/`), and find `mpi.h`,
//! `libmpi.so` and the generated Fortran files where this package's build leaves them.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
mod attr;
mod coll;
mod comm;
mod count;
mod cptr;
mod datatype;
mod dynamic;
mod env;
mod errhandler;
mod error;
mod file;
mod fortran;
mod group;
mod handle;
mod info;
mod op;
mod p2p;
mod partitioned;
mod runtime;
mod session;
mod tool;
mod topo;
mod win;
