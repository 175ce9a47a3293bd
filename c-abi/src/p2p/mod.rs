//! Point-to-point communication and requests: the MPI layer's side of sends, receives, probes
//! and the completion of requests, over the progress engine's point-to-point operations.
//!
//! ```text
//!   MPI_Send / MPI_Recv ──▶ args (checks) ──▶ blocking ──▶ Engine::send / Engine::recv
//!   MPI_Isend / MPI_Irecv ──▶ nonblocking ──▶ Adi::isend / irecv ──▶ request (the handle)
//!   MPI_Wait / MPI_Test ... ──▶ completion ──▶ Engine::block_on / test ──▶ status
//! ```
//!
//! Modules: [`args`] (argument checks into checked operations), [`blocking`] (blocking
//! sends and receives), [`nonblocking`] (nonblocking and persistent starts), [`completion`]
//! (wait and test), [`request`] (handles and what a request keeps), [`status`] (`MPI_Status`),
//! [`bsend`] (the attached buffer, its flush), [`mprobe`] (matched probes), [`grequest`]
//! (generalized requests: the program's callbacks, called by the completion calls); `api`,
//! the C functions: `api::blocking`, `api::nonblocking` (with `MPI_Isendrecv`),
//! `api::completion`, `api::mprobe`, `api::status` (with the `MPI_Status_set_*` setters),
//! `api::bsend`, `api::grequest`.
//!
//! **Owns** no table (requests are the engine's): the attached buffer of buffered sends
//! ([`bsend`]) and what a request keeps ([`request`]). **Entry:** [`Cx`], the engine and the
//! tables point-to-point reads, which every operation takes (the running state makes one per
//! call: `Runtime::p2p`); the C functions are in `api` (one file per group above).

mod api;
pub(crate) mod args;
pub(crate) mod blocking;
pub(crate) mod bsend;
pub(crate) mod completion;
pub(crate) mod grequest;
pub(crate) mod mprobe;
pub(crate) mod nonblocking;
pub(crate) mod request;
pub(crate) mod status;

use crate::comm::CommTable;
use crate::datatype::TypeTable;
use bsend::BsendBuffer;
use mpich_channel::Engine;

/// What point-to-point operations work on: the progress engine of one lane (the lane of the
/// communicator or request the call names), the communicators and datatypes their arguments
/// name, and the attached buffer of buffered sends (not on the lane path, which holds the
/// state shared: buffered sends take the exclusive one). A bundle of borrows of the running
/// state's fields, made per call (`Runtime::p2p_on`); it compiles away.
pub(crate) struct Cx<'a> {
    pub engine: &'a mut Engine,
    /// The lane `engine` is: the handles of the requests it makes carry it.
    pub lane: usize,
    pub comms: &'a CommTable,
    pub types: &'a TypeTable,
    pub bsend: Option<&'a mut BsendBuffer>,
}
