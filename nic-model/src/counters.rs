//! Per-NIC counters, reachable from the layers above through `Device::counters`.

/// Counts kept by one NIC. Plain integers: a NIC belongs to one thread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Packets handed to the wire.
    pub packets_tx: u64,
    /// Payload bytes handed to the wire.
    pub bytes_tx: u64,
    /// Packets taken off the wire.
    pub packets_rx: u64,
    /// Payload bytes taken off the wire.
    pub bytes_rx: u64,
    /// Times a sender found the route's buffers full and had to wait.
    pub stalls: u64,
    /// Single copies this NIC made: reads of peers' regions (each part of a split read once),
    /// writes into them.
    pub dma_ops: u64,
    /// Bytes moved by single copies, this NIC's and the parts it wrote for importers.
    pub dma_bytes: u64,
    /// Parts of this NIC's regions it copied into an importer's memory (split reads).
    pub assists: u64,
    /// Single copies (reads, and parts written for importers) run as copy jobs outside the
    /// library's lock by a waiting thread (`MPI_THREAD_MULTIPLE`, [`crate::copy_jobs`]); also
    /// counted in `dma_ops` or `assists`.
    pub copies_outside: u64,
    /// Packets dropped, corrupted, duplicated or delayed by a fault injector.
    pub faults: u64,
}

impl Counters {
    /// Memory copies the NIC path implies: one into a packet buffer for each packet sent and one
    /// out of it for each packet received, one for each single copy (each part of a split one).
    pub fn copies(&self) -> u64 {
        self.packets_tx + self.packets_rx + self.dma_ops + self.assists
    }
}
