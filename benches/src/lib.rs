//! # benches: measuring every layer the same way
//!
//! The `layers` binary runs two processes over the stack and measures each layer with the
//! same code ([`measure`]) behind the same interface ([`transport::Transport`]), so that the
//! ratio between a layer and the one below it is a fair measure of what the layer costs.
//! `benches/c/mpi_pingpong.c` is the same method written in C against MPI, for running the
//! same measurement over MPICH and over this project's own `libmpi.so`.

pub mod compare;
pub mod counters;
pub mod measure;
pub mod nas;
pub mod plot;
pub mod report;
pub mod transport;
