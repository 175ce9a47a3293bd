//! What can go wrong talking to a process manager, each case with the command it happened in
//! and what came back, so that a message alone says where to look.

use std::time::Duration;

/// An error of the PMI client. Every variant that concerns an exchange names the PMI command
/// (`get`, `kvs-fence`, ...) it happened in.
#[derive(Debug, thiserror::Error)]
pub enum PmiError {
    /// The environment names a process manager but does not describe it correctly
    /// (`PMI_FD` not a number or not open, `PMI_PORT` not `host:port`, `PMI_RANK` missing, ...).
    #[error("PMI environment: {0}")]
    Environment(String),

    /// `Client::from_env` was called a second time in this process: the PMI descriptor is
    /// taken by the first client (and may be closed by now).
    #[error(
        "PMI: this process has already connected to its process manager (Client::from_env is \
         called once per process; keep the Client it returned)"
    )]
    AlreadyConnected,

    /// The TCP connection to `PMI_PORT` could not be made.
    #[error("PMI: cannot connect to the process manager at {address} (PMI_PORT): {source}")]
    Connect {
        address: String,
        #[source]
        source: std::io::Error,
    },

    /// Reading or writing the connection failed.
    #[error("PMI {command}: the connection to the process manager failed: {source}")]
    Io {
        command: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// The process manager closed the connection before it replied.
    #[error(
        "PMI {command}: the process manager closed the connection{}",
        partial_reply(.partial)
    )]
    Closed {
        command: &'static str,
        /// Bytes of a reply that had started to arrive, if any.
        partial: String,
    },

    /// No complete reply within the time limit.
    #[error(
        "PMI {command}: no reply from the process manager within {} s ({variable}); is it still \
         running?",
        .timeout.as_secs_f64()
    )]
    Timeout {
        command: &'static str,
        timeout: Duration,
        /// The environment variable that sets this limit.
        variable: &'static str,
    },

    /// A reply that is not what the protocol says (wrong command, missing field, bad number,
    /// bad frame).
    #[error("PMI {command}: unexpected reply from the process manager ({problem}): {reply:?}")]
    Malformed {
        command: &'static str,
        problem: String,
        reply: String,
    },

    /// The process manager answered with a non-zero `rc`.
    #[error("PMI {command}: the process manager refused it (rc={rc}{})", message_part(.message))]
    Refused {
        command: &'static str,
        rc: i64,
        message: String,
    },

    /// `get` found no value: the key was not put by that rank, or not yet fenced.
    #[error(
        "PMI get: no value for key '{key}' of rank {rank} (it was not put, or not fenced yet){}",
        message_part(.message)
    )]
    NotFound {
        rank: usize,
        key: String,
        /// What the process manager said, if anything.
        message: String,
    },

    /// A key this client cannot carry (see [`Client::put`](crate::Client::put)).
    #[error("PMI: invalid key '{key}': {problem}")]
    InvalidKey { key: String, problem: String },

    /// A value this client cannot carry (see [`Client::put`](crate::Client::put)).
    #[error("PMI put of '{key}': {problem}")]
    InvalidValue { key: String, problem: String },

    /// A rank outside `0..size`.
    #[error("PMI {command}: rank {rank} is not in this job of {size} ranks")]
    NoSuchRank {
        command: &'static str,
        rank: usize,
        size: usize,
    },
}

fn partial_reply(partial: &str) -> String {
    if partial.is_empty() {
        String::new()
    } else {
        format!(" in the middle of a reply ({partial:?} so far)")
    }
}

fn message_part(message: &str) -> String {
    if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    }
}
