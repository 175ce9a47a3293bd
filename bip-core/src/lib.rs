//! # bip-core: BIP, the Basic Interface for Parallelism, over the modeled NIC
//!
//! ```text
//!   fm-streams / mpich-channel / C programs (bip.h)
//!                     │  send, recv, isend, irecv, test, wait; lend;
//!                     │  export, pull, revoke, next_event (the rendezvous for layers above)
//!                 bip-core   ← you are here
//!                     │  Device: send/poll packets in place, regions (register, read_region),
//!                     │  progress, peer_status
//!                 nic-model
//! ```
//!
//! **What it does.** The interface of Prylli and Tourancheau's BIP (seed 000): `n` processes
//! numbered `0..n`; `send(dest, tag, buf)` and `recv(tag, buf) -> (len, source)`, blocking or
//! not; a tag selects a receive queue at the destination, messages are retrieved in order
//! within a queue and in any order across queues. Short messages are buffered at the receiver
//! (within credit it grants each sender, so a sender far ahead waits rather than exhausting
//! memory); long messages are the stack's one rendezvous: the sender exports its buffer as a
//! region of its NIC and announces it (RTS), the receiver reads it in one copy and answers FIN,
//! which withdraws it (two packets; `bip/rendezvous.rs`). Layers above run the same rendezvous
//! with their own matching ([`Bip::export`], [`Bip::pull`], [`Event`]): MPI matches its
//! messages once, in its own queues, and never again in BIP's tags. Packet size adapts to
//! message length. Two of the paper's restrictions are lifted: buffers may have any alignment,
//! and any number of sends and receives may be outstanding.
//!
//! **What it promises the layer above.** Reliable, in-order delivery per (source, queue),
//! exactly once; errors instead of hangs when a peer dies ([`BipError::PeerGone`]); over an
//! unreliable device (a fault injector), checksums and retransmission, or [`BipError::LinkFailed`].
//!
//! **What it needs from below.** A [`nic_model::Device`]: in-order packet routes with
//! back-pressure, an mtu of at least 64 bytes, regions (single copy may be refused: then the
//! receiver asks the exporter for the bytes with GET and DATA packets), `peer_status`.
//!
//! **Modules.** `bip`: the engine and protocols (`bip/tx.rs` sends, `bip/rx.rs` receives,
//! `bip/rendezvous.rs` long messages); `wire`: the packet header; `link`: reliability over
//! unreliable devices; `queues`: tag queues; `request`: handles; [`config`]: thresholds and
//! packet sizing; [`ffi`]: the C interface `bip.h`.

mod bip;
pub mod config;
mod error;
pub mod ffi;
mod link;
mod queues;
mod request;
mod wire;

pub use crate::bip::{Bip, BipCounters, Event};
pub use config::{BipConfig, PacketSizer};
pub use error::{BipError, Result};
pub use request::{Completion, Request};
