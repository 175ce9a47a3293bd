//! Pcap tracer (being written).
use super::Device;
/// A device wrapper that writes packets to a pcap file.
pub struct PcapWriter<D: Device> { pub inner: D }
