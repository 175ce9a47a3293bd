//! Errors of the BIP layer.

use nic_model::{NicError, Rank};

/// Everything a BIP call can fail with. A bad argument changes nothing.
#[derive(Debug, thiserror::Error)]
pub enum BipError {
    /// The NIC underneath failed (not in a job, bad fabric, OS error...).
    #[error(transparent)]
    Nic(#[from] NicError),
    /// A destination outside `0..numnodes`.
    #[error("destination {rank} is out of range: the job has {nranks} processes (0..{nranks})")]
    BadRank { rank: Rank, nranks: usize },
    /// A tag outside `0..tags`.
    #[error("tag {tag} is out of range: this BIP instance has {tags} receive queues (0..{tags}); raise BIP_TAGS")]
    BadTag { tag: u32, tags: u32 },
    /// The message was longer than the receive buffer; the first `capacity` bytes were kept.
    #[error("message of {len} bytes from rank {from} truncated to the receive buffer's {capacity} bytes")]
    Truncated {
        len: usize,
        capacity: usize,
        from: Rank,
    },
    /// `lend` found a long (rendezvous) message on its queue; receive it with `recv`/`irecv`.
    #[error("the next message of the queue is a long message of {len} bytes; lend serves short messages only, use recv")]
    NotLendable { len: usize },
    /// A peer died (or finished) while an operation still needed it.
    #[error("peer rank {rank} is gone ({why}) while an operation still needed it")]
    PeerGone { rank: Rank, why: &'static str },
    /// A request handle that is not (or no longer) valid.
    #[error("invalid or already completed request handle")]
    InvalidRequest,
    /// More requests outstanding at once than the wire format can name.
    #[error("too many outstanding requests ({0}); wait for some before posting more")]
    TooManyRequests(usize),
    /// Over an unreliable device, a peer stopped acknowledging despite retransmissions.
    #[error("link to rank {peer} failed: no acknowledgement after {retries} retransmissions")]
    LinkFailed { peer: Rank, retries: u32 },
    /// A long message's region was refused by its exporter (no such region, or not for these
    /// bytes): nothing was read.
    #[error("rank {rank} refused the read of a long message: {why}")]
    Refused { rank: Rank, why: String },
    /// A packet that does not parse (only possible over an unreliable device, where it is
    /// caught by the checksum first, or from a bug).
    #[error("malformed packet from rank {src}: {why}")]
    Protocol { src: Rank, why: &'static str },
}

pub type Result<T, E = BipError> = std::result::Result<T, E>;
