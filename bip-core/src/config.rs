//! BIP's tunables: the copy/zero-copy threshold, the receiver's short-message buffer limit,
//! the number of tag queues, and the adaptive packet size.
//!
//! The default threshold is a measurement, not a guess: `cargo run --release -p benches --bin
//! layers -- --calibrate` times the buffered (copy) path and the rendezvous (single-copy)
//! path at each size on this machine and prints the crossover; the value below is what it
//! printed here (see README "Thresholds"). `BIP_EAGER_MAX` overrides it at run time.

use nic_model::Profile;

/// Messages up to this many bytes are short (buffered, copied through packet buffers); longer
/// ones are long (rendezvous, single copy). Measured with `layers --calibrate`.
pub const DEFAULT_EAGER_MAX: usize = 16 * 1024;
/// Default total bytes of short messages a receiver buffers before senders wait.
pub const DEFAULT_SHORT_LIMIT: usize = 4 << 20;
/// Default number of tag queues.
pub const DEFAULT_TAGS: u32 = 4096;
/// Bytes of buffer credit a short message costs beyond its payload (its envelope).
pub const ENVELOPE_COST: usize = 64;

/// Configuration of one BIP instance; `from_env` reads `BIP_EAGER_MAX`, `BIP_SHORT_LIMIT`,
/// `BIP_TAGS`.
#[derive(Clone, Debug)]
pub struct BipConfig {
    pub eager_max: usize,
    /// Total bytes of unreceived short messages this process is willing to buffer; split
    /// evenly among senders, but never below one maximal short message per sender.
    pub short_limit: usize,
    pub tags: u32,
}

impl Default for BipConfig {
    fn default() -> Self {
        BipConfig { eager_max: DEFAULT_EAGER_MAX, short_limit: DEFAULT_SHORT_LIMIT, tags: DEFAULT_TAGS }
    }
}

impl BipConfig {
    pub fn from_env() -> Self {
        let get = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        BipConfig {
            eager_max: get("BIP_EAGER_MAX", DEFAULT_EAGER_MAX),
            short_limit: get("BIP_SHORT_LIMIT", DEFAULT_SHORT_LIMIT),
            tags: get("BIP_TAGS", DEFAULT_TAGS as usize).clamp(1, u32::MAX as usize) as u32,
        }
    }

    /// Credit granted to each sender, in bytes.
    pub(crate) fn grant_per_sender(&self, nranks: usize) -> usize {
        (self.short_limit / nranks.max(1)).max(self.eager_max + ENVELOPE_COST)
    }
}

/// Chooses packet sizes for a message: the message is cut into `k` packets of equal size
/// (the paper's scheme), with `k` minimizing the pipelined transfer time
/// `T(k) = (k + s - 1) * (c + S / (k * B))` of `s` store-and-forward stages, per-packet cost
/// `c` and bottleneck rate `B`: `k = sqrt((s - 1) * S / (B * c))`, at least enough packets to
/// respect the mtu. Under `native` the stages are the sender's copy in and the receiver's copy
/// out (s = 2, c = 100 ns, B = 10 bytes/ns, measured with `layers --layers nic`); under a
/// profile they are the profile's stages.
#[derive(Clone, Copy, Debug)]
pub struct PacketSizer {
    stages: f64,
    per_packet_ns: f64,
    bytes_per_ns: f64,
}

impl PacketSizer {
    pub fn for_profile(p: Option<&Profile>) -> Self {
        match p {
            None => PacketSizer { stages: 2.0, per_packet_ns: 100.0, bytes_per_ns: 10.0 },
            Some(p) => PacketSizer {
                stages: 5.0,
                per_packet_ns: (p.dma_setup_ns).max(p.nic_send_ns).max(p.nic_recv_ns).max(1.0),
                bytes_per_ns: p.pci_mb_s.min(p.link_mb_s) / 1000.0,
            },
        }
    }

    /// Payload bytes per packet for a message of `len` bytes, given at most `max` per packet.
    #[inline]
    pub fn packet_size(&self, len: usize, max: usize) -> usize {
        if len <= max {
            // One packet; pipelining cannot win below the mtu on native, and on profiles a
            // split is only worth it when the model says so.
            if self.stages <= 2.0 {
                return len.max(1);
            }
        }
        let s = len as f64;
        let k_opt = ((self.stages - 1.0) * s / (self.bytes_per_ns * self.per_packet_ns)).sqrt();
        let k_min = len.div_ceil(max.max(1)).max(1);
        let k = (k_opt.round() as usize).max(k_min).max(1);
        len.div_ceil(k).clamp(1, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_respect_the_mtu_and_grow_with_the_message() {
        let native = PacketSizer::for_profile(None);
        assert_eq!(native.packet_size(8, 4000), 8);
        assert!(native.packet_size(100_000, 4000) <= 4000);
        let p = nic_model::Profile::load("myrinet-lanai4").unwrap().unwrap();
        let m = PacketSizer::for_profile(Some(&p));
        let small = m.packet_size(2048, 4000);
        let big = m.packet_size(1 << 20, 4000);
        assert!(small <= 2048 && big <= 4000 && small <= big, "{small} {big}");
    }
}
