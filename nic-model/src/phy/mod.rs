//! The device interface between the NIC and the protocol above it, and the wrappers that slot
//! around a device (in the manner of smoltcp's `phy` middleware).
//!
//! A protocol layer never copies into a staging buffer of its own to hand a packet to the NIC:
//! [`Device::transmit`] lends it a token whose [`TxToken::consume`] gives a closure the packet
//! buffer itself to write header and payload into, and [`Device::receive`] lends a token whose
//! [`RxToken::consume`] shows the arrived packet in place. Wrappers implement `Device` over
//! another `Device`:
//!
//! * [`FaultInjector`]: drops, corrupts, duplicates and delays packets at seeded rates;
//! * [`PcapWriter`]: writes every packet sent and received to a pcap file.

mod fault;
mod pcap;
#[cfg(test)]
pub(crate) mod test_device;

pub use fault::{FaultConfig, FaultInjector, FaultRxToken, FaultTxToken, FAULTS_ENV};
pub use pcap::{
    pcap_path_from_env, PcapRxToken, PcapTxToken, PcapWriter, PCAP_ENV, PSEUDO_HEADER_LEN, PSEUDO_HEADER_MAGIC,
    PSEUDO_HEADER_VERSION,
};

use crate::counters::Counters;
use crate::error::{Rank, Result};

/// What a device can do, for the protocol above to adapt to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Largest payload of one packet.
    pub mtu: usize,
    /// True when the device never loses, corrupts, duplicates or reorders packets. A protocol
    /// may then skip checksums and retransmission; over an unreliable device it must not.
    pub reliable: bool,
}

/// Whether a peer can still take part in communication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerStatus {
    /// Running (or not started yet).
    Alive,
    /// Finished cleanly: it will send nothing more, but what it sent can still be received.
    Finalized,
    /// Died (crashed, killed, or exited without finalizing).
    Dead,
}

/// A per-process network interface.
pub trait Device {
    type TxToken<'a>: TxToken
    where
        Self: 'a;
    type RxToken<'a>: RxToken
    where
        Self: 'a;

    /// This process's rank.
    fn rank(&self) -> Rank;
    /// Processes in the job.
    fn nranks(&self) -> usize;
    fn capabilities(&self) -> Capabilities;

    /// A packet buffer on the route to `dest`, or `None` while the route's buffers are all in
    /// use (back-pressure: try again after receiving, nothing is dropped).
    fn transmit(&mut self, dest: Rank) -> Option<Self::TxToken<'_>>;

    /// The next packet from `src`, if one has arrived (under a timing profile: if its modeled
    /// arrival time has passed). Packets from one source arrive in the order they were sent.
    fn receive(&mut self, src: Rank) -> Option<Self::RxToken<'_>>;

    /// Copies `local.len()` bytes from address `remote` in `peer`'s memory into `local` in one
    /// copy (the modern equivalent of DMA from pinned user pages). `packet` is the packet size
    /// the caller chose for this transfer; timing profiles model the pipeline with it.
    /// Fails with `DmaNotPermitted` when the kernel refuses; the caller then uses packets.
    fn dma_read(&mut self, peer: Rank, remote: usize, local: &mut [u8], packet: usize) -> Result<()>;

    /// Copies `local` to address `remote` in `peer`'s memory in one copy: the sender's half of
    /// a transfer that both ends copy at once (on two cores). Devices that model a NIC's DMA
    /// engine, or cannot, refuse with `DmaNotPermitted` (the default); the caller then leaves
    /// the copy to the receiver.
    fn dma_write(&mut self, peer: Rank, remote: usize, local: &[u8]) -> Result<()> {
        let _ = (remote, local);
        Err(crate::NicError::DmaNotPermitted { rank: peer })
    }

    /// Whether `peer` is still there. Cheap enough for a blocked caller to ask every few
    /// milliseconds; not meant for the fast path.
    fn peer_status(&self, peer: Rank) -> PeerStatus;

    /// Packet, byte, copy and stall counts of this NIC.
    fn counters(&self) -> &Counters;

    /// The timing profile in force (`None` for `native`), so the layer above can size packets
    /// for the modeled pipeline.
    fn profile(&self) -> Option<&crate::timing::Profile> {
        None
    }

    /// Declares that the first `bytes` of every packet are the protocol's header. A timing
    /// profile's `wire_header_bytes` already stands for the header a 1997 protocol put on the
    /// wire, so the model charges those bytes as that header rather than as payload.
    fn set_protocol_header(&mut self, bytes: usize) {
        let _ = bytes;
    }

    /// Marks this process as finished cleanly, so that peers do not treat its exit as a death.
    fn finalize(&mut self);
}

/// A lent transmit buffer.
pub trait TxToken {
    /// Lets `f` write a packet of `len` bytes (at most the mtu) into the buffer, then sends it.
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R;
}

/// A lent received packet.
pub trait RxToken {
    /// Shows the packet to `f`, then gives the buffer back to the sender.
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R;
}
