//! # pmi: the process-management interface
//!
//! How the ranks of a job find each other: the process manager that started them (our
//! `mpirun`, MPICH's Hydra `mpiexec`, Slurm's `srun --mpi=pmi2`) tells each its rank and the
//! job's size, and keeps a key-value space through which ranks exchange their addresses
//! ("business cards"): each rank [`put`](Client::put)s, all [`fence`](Client::fence), then
//! each [`get`](Client::get)s what the others put.
//!
//! ```text
//!   libmpi.so ──Client──▶ PMI-1 line protocol ─────▶ Hydra, our mpirun (server::Server), Slurm
//!                    └──▶ PMI-2 framed protocol ───▶ Slurm's pmi2 plugin, Hydra
//! ```
//!
//! **Client** ([`Client`], plain std, blocking): [`Client::from_env`] reads the environment
//! ([`crate::env`] lists the variables and how PMI-1 or PMI-2 is chosen), connects over the inherited
//! `PMI_FD` or over TCP to `PMI_PORT`, and then offers put/fence/get/barrier/abort/finalize.
//! Every wait has a time limit (`MPI_PMI_TIMEOUT`), and every failure is a [`PmiError`] that
//! names the command and what came back; nothing panics on what a server sends.
//!
//! **Server** (`server` feature, tokio): the PMI-1 server our `mpirun` runs, over one
//! inherited socket per local rank and over TCP (with the job's secret key) for ranks on
//! other hosts; it reports aborts, finalizes and lost connections to the launcher.
//!
//! **Modules.** [`wire`]: the two formats; [`value`]: keys and value encoding; [`crate::env`]: the
//! environment; `conn`: the client's connection (its only `unsafe`); `client`: the client;
//! [`mapping`]: `PMI_process_mapping`; `server`: the server (feature `server`).

mod client;
mod conn;
pub mod env;
mod error;
pub mod mapping;
#[cfg(feature = "server")]
pub mod server;
pub mod value;
pub mod wire;

pub use client::{Client, PROCESS_MAPPING};
pub use error::PmiError;

use std::fmt;

/// The wire protocol a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    /// PMI-1.1, MPICH's simple PMI: one text line per message.
    V1,
    /// PMI-2.0: length-prefixed frames of `key=value;` fields.
    V2,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Version::V1 => "PMI-1",
            Version::V2 => "PMI-2",
        })
    }
}

/// One command of a spawn request ([`Client::spawn`]; the server side in `server`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnCommand {
    /// The program, as the caller named it.
    pub command: String,
    pub args: Vec<String>,
    pub nprocs: usize,
    /// Info keys and values (`wdir`, `path`, `host`, ...).
    pub info: Vec<(String, String)>,
}
