//! # benches: measuring every layer the same way
//!
//! The `layers` binary runs two processes over the stack and measures each layer with the
//! same code ([`measure`]) behind the same interface ([`transport::Transport`]), so that the
//! ratio between a layer and the one below it is a fair measure of what the layer costs.
//! `benches/c/mpi_pingpong.c` is the same method written in C against MPI, for running the
//! same measurement over MPICH and over this project's own `libmpi.so`. [`counters`] turns
//! each layer's counters into copies, bytes, packets and stalls per message, and [`report`]
//! writes the layering report (tables and [`plot`] charts) from `layers`' JSON.
//!
//! Beside it, tools that look at the stack from the user's side:
//! * `mpibench` ([`compare`]): C micro-benchmarks (`benches/c/mpibench.c`) built with our
//!   `mpicc`, MPICH's and Open MPI's, run alternately, compared in one table and in charts;
//! * `nas` ([`nas`]): the NAS kernels EP, IS, CG, MG and FT (`benches/nas/`, C from the NPB
//!   specification), built with our `mpicc` (and MPICH's), run and verified; and the fabric's
//!   memory per rank;
//! * `netbench` ([`compare::netns`]): the same comparison across two network namespace hosts,
//!   one rank in each, every message over TCP on veth links;
//! * `iobench` ([`compare::io`]): MPI-IO (`benches/c/iobench.c`) against MPICH's ROMIO and Open
//!   MPI's ompio: BT-IO's collective write and read of a block-distributed 3-D array, strided
//!   independent writes through a vector view, and one 64 MiB `MPI_File_write_at` against a
//!   `pwrite` of the same bytes; on tmpfs and on disk (`--dir`), the sync outside the timed
//!   region unless `--sync`. A binary of its own rather than an `mpibench` family, because its
//!   benchmarks take files, directories and one size each instead of a sweep of message sizes.
//!
//! The `vmmc` layer of `layers` ([`vmmc`]) is VMMC's deliberate update on the NIC, measured
//! by the same method and shown as a share of the NIC's figures.
//!
//! `layers --wire tcp` ([`wire`]) measures the layers over the network device instead of the
//! shared fabric, the ranks started by a PMI launcher.

pub mod compare;
pub mod counters;
pub mod measure;
pub mod nas;
pub mod plot;
pub mod report;
pub mod tools;
pub mod transport;
pub mod vmmc;
pub mod wire;
