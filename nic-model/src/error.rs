//! Errors of the NIC layer.

use std::io;

/// A rank: a process's index in its job, `0..n`.
pub type Rank = usize;

/// Everything that can go wrong in the NIC layer. Each variant says what the user can do.
#[derive(Debug, thiserror::Error)]
pub enum NicError {
    /// The process was not started by a job launcher (no fabric in the environment).
    #[error("no NIC fabric in the environment ({0}); start the program with the job launcher (mpirun, or nic_model::Job)")]
    NotInJob(&'static str),
    /// The fabric handed over is not ours or not this job's.
    #[error("the fabric handed to this process is not valid: {0}")]
    BadFabric(String),
    /// A peer process died or left before the operation could complete.
    #[error("peer rank {rank} is gone ({why}); the operation cannot complete")]
    PeerDead { rank: Rank, why: &'static str },
    /// A rank number outside `0..nranks`.
    #[error("rank {rank} is out of range for a job of {nranks} processes")]
    BadRank { rank: Rank, nranks: usize },
    /// A packet longer than the NIC's maximum payload.
    #[error("packet of {len} bytes exceeds the NIC's maximum payload of {mtu} bytes")]
    PacketTooLong { len: usize, mtu: usize },
    /// This device cannot reach the peer's memory in one copy (the kernel refuses it under its
    /// ptrace policy, `MPI_NIC_DMA=off`, or the region is not published in the fabric): the
    /// layer above asks the exporter for the data with packets instead.
    #[error("no single-copy access to rank {rank}'s memory (use the packet path)")]
    NoSingleCopy { rank: Rank },
    /// An access to a region was refused, and nothing was read or written: the key names no
    /// region the rank exports now (never exported, or withdrawn), the bytes lie outside it, or
    /// it does not allow the access.
    #[error("rank {rank} refuses the access: {why}")]
    RegionRefused { rank: Rank, why: String },
    /// The device does not offer this.
    #[error("this device does not support {0}")]
    Unsupported(&'static str),
    /// A configuration variable has a bad value.
    #[error("bad configuration: {0}")]
    Config(String),
    /// A timing profile could not be found or parsed.
    #[error("timing profile {name:?}: {why}")]
    Profile { name: String, why: String },
    /// The network between hosts failed: a host that cannot be reached, a connection refused
    /// or broken, a launcher's key-value space that does not answer.
    #[error("{0}")]
    Network(String),
    /// A node leader could not hand the host's fabric to some of its followers by the deadline.
    #[error("the node leader did not hand the fabric to local ranks {missing:?} by the deadline; check that those processes started, run as the same user, in the same network namespace, and were published with their own pids")]
    FollowersMissing { missing: Vec<usize> },
    /// A process could not get its host's fabric from the node leader.
    #[error("could not get the host's fabric from the node leader at {address:?}: {why}")]
    NoFabricFromLeader { address: String, why: String },
    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Os {
        what: &'static str,
        #[source]
        source: io::Error,
    },
}

impl NicError {
    pub(crate) fn os(what: &'static str) -> Self {
        NicError::Os {
            what,
            source: io::Error::last_os_error(),
        }
    }
}

/// Result alias of the NIC layer.
pub type Result<T, E = NicError> = std::result::Result<T, E>;
