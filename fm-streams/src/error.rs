//! Errors of the FM layer.

use bip_core::BipError;
use nic_model::Rank;

/// What an FM call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum FmError {
    /// BIP underneath failed (peer gone, bad rank, not in a job...).
    #[error(transparent)]
    Bip(#[from] BipError),
    /// `send_piece` would exceed the size given to `begin_message`, or `end_message` came
    /// before all of it was sent.
    #[error("message to rank {dest} declared {declared} bytes but {sent} were sent")]
    SizeMismatch {
        dest: Rank,
        declared: u64,
        sent: u64,
    },
    /// A stream to this destination is already open.
    #[error("a message to rank {dest} is already open; end it before beginning another")]
    StreamOpen { dest: Rank },
    /// A message named a handler this process has not registered.
    #[error("message from rank {src} names handler {id}, which is not registered here")]
    UnknownHandler { src: Rank, id: u32 },
    /// A handler id beyond the 24 bits the wire carries.
    #[error("handler id {0} is out of range (0..16777216)")]
    BadHandlerId(u32),
    /// A packet that does not parse.
    #[error("malformed FM packet from rank {src}: {why}")]
    Protocol { src: Rank, why: &'static str },
}

pub type Result<T, E = FmError> = std::result::Result<T, E>;
