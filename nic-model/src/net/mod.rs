//! The network between hosts: a job whose ranks live on several hosts reaches the ranks of its
//! own host through the host's shared-memory fabric and the others through TCP, behind the
//! same [`Device`](crate::Device) interface, so nothing above the NIC changes.
//!
//! ```text
//!   wireup   launcher's key-value space (PMI) ─▶ cards ─▶ host fabric (leader) + TCP mesh
//!   device   HostNet: routes each rank to the local Nic or to a connection
//!   conn     one TCP connection: frames out through a queue, frames in lent in place,
//!            region reads straight from the exporter's memory into the reader's
//!   frame    the frame header, a typed view over bytes
//!   card     what each rank publishes; handshake: the first bytes of a connection
//!   mesh     connecting every pair at start-up; host: host identity and addresses
//!   launcher the PMI client this process was started with
//! ```
//!
//! **Why TCP.** The wire has to be reliable and in order (the device's promise). TCP gives
//! that in the kernel, with segmentation offload and no retransmission timers of ours; UDP
//! would need BIP's link protocol (sequence numbers, checksums, go-back-N) on every packet
//! and would cut long messages into datagrams. Measured figures are in the README.
//!
//! **Long messages** are region reads: the reader sends a `ReadRequest` with the region key,
//! the exporter answers with `ReadData` chunks sent by `sendmsg` from the region itself, and
//! the reader receives each chunk with `readv` straight into the posted buffer. No user-space
//! copy on either side; the kernel pipelines the chunks.

mod card;
mod conn;
mod device;
mod frame;
mod handshake;
mod host;
pub mod launcher;
mod mesh;
pub mod wireup;

pub use card::{library_version, WIRE_VERSION};
pub use device::{HostNet, Route};
pub use host::{host_id, ADDR_ENV, HOST_ID_ENV};
pub use wireup::{wire_up, Exchange, Wire, Wired, PORT_ENV, WIRE_ENV};
