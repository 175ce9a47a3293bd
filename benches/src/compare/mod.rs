//! Side-by-side MPI micro-benchmarks: our `libmpi.so` against Debian's MPICH and Open MPI.
//!
//! `benches/c/mpibench.c` is one C program (latency, bandwidth, bidirectional and multi-pair
//! bandwidth, Allreduce, Bcast, Alltoall, Barrier; and, compiled in with `-DMPIBENCH_RMA`
//! into a separate executable, the one-sided Put, Get, Accumulate, Fetch_and_op and
//! Compare_and_swap latencies and Put/Get bandwidth) that builds against any of the three
//! `mpi.h`'s. This module builds it with each library's `mpicc` ([`library`]), runs one
//! benchmark under each library's launcher, at each launcher's default placement or with every
//! rank bound to a core ([`Placement`]), and reads its result lines ([`run`]), and turns the
//! runs of several rounds into medians, ratios, a Markdown table, JSON and charts per placement
//! ([`report`]).
//! The `mpibench` binary is the command line over it; [`netns`] runs the same program with one
//! rank in each of two network namespace hosts, for the `netbench` binary. [`io`] is the same
//! comparison for MPI-IO (`benches/c/iobench.c`, the `iobench` binary): its own benchmarks,
//! options and report, the same libraries, builds, launchers and placements.

pub mod io;
pub mod library;
pub mod netns;
pub mod report;
pub mod run;

pub use library::{Built, Library, Placement};
pub use report::{Comparison, Row};
pub use run::{parse_results, Benchmark, Measurement, RunRecord};
