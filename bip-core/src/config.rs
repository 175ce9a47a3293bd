//! BIP's tunables: the copy/zero-copy threshold, the receiver's short-message buffer limit,
//! the number of tag queues, and the adaptive packet size.
//!
//! The default threshold is a measurement, not a guess: `target/release/layers --calibrate`
//! times the buffered (copy) path and the rendezvous (single-copy) path at each size on this
//! machine and prints the crossover; the value below is what it printed here (see README
//! "Thresholds"). `BIP_EAGER_MAX` overrides it at run time.

use nic_model::Profile;

/// Messages up to this many bytes are short (buffered, copied through packet buffers); longer
/// ones are long (rendezvous, single copy). Measured with `layers --calibrate --repeat 8`:
/// averaged over alternating runs, the copy path's one-way time was lower up to 8 KiB
/// (2.82 us against 3.31 us) and single copy's from 12 KiB on (3.80 us against 4.08 us). The
/// crossover moves with the machine's state: when the two cores share a cache (the fast
/// state of this VM) copying wins up to 24 KiB; when they do not, single copy wins from
/// 8 KiB. The mean weighs both.
pub const DEFAULT_EAGER_MAX: usize = 8 * 1024;
/// Default total bytes of short messages a receiver buffers before senders wait.
pub const DEFAULT_SHORT_LIMIT: usize = 4 << 20;
/// Default number of tag queues.
pub const DEFAULT_TAGS: u32 = 4096;
/// Bytes of buffer credit a short message costs beyond its payload (its envelope).
pub const ENVELOPE_COST: usize = 64;

/// Long messages from this size up are copied by both ends at once (see `Kind::Push`).
/// Measured with `layers --layers bip`, alternating `BIP_SPLIT_MIN=0` and `8192`: splitting is
/// even at 12 KiB and wins from 16 KiB (one-way 3.2-3.7 -> 2.9-3.7 us; 24 KiB 3.9-4.5 -> 3.2-4.0;
/// 1 MiB 92-97 -> 51-61 us; 4 MiB 650-720 -> 270-310 us).
pub const DEFAULT_SPLIT_MIN: usize = 16 * 1024;

/// Configuration of one BIP instance; `from_env` reads `BIP_EAGER_MAX`, `BIP_SHORT_LIMIT`,
/// `BIP_TAGS`, `BIP_FORCE_LINK`, `BIP_SPLIT_MIN`.
#[derive(Clone, Debug)]
pub struct BipConfig {
    pub eager_max: usize,
    /// Total bytes of unreceived short messages this process is willing to buffer; split
    /// evenly among senders, but never below one maximal short message per sender.
    pub short_limit: usize,
    pub tags: u32,
    /// Run the reliability protocol (sequence numbers, checksums, acknowledgements) even over
    /// a device that says it is reliable: `BIP_FORCE_LINK=1`. For measuring what the protocol
    /// costs; over the plain NIC it is otherwise off.
    pub force_link: bool,
    /// Long messages of at least this many bytes are moved by both ends at once, each copying
    /// half on its own core (the sender writes the second half while the receiver reads the
    /// first); 0 turns that off. Only natively (timing profiles model one DMA engine).
    pub split_min: usize,
}

impl Default for BipConfig {
    fn default() -> Self {
        BipConfig {
            eager_max: DEFAULT_EAGER_MAX,
            short_limit: DEFAULT_SHORT_LIMIT,
            tags: DEFAULT_TAGS,
            force_link: false,
            split_min: DEFAULT_SPLIT_MIN,
        }
    }
}

impl BipConfig {
    pub fn from_env() -> Self {
        let get = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        BipConfig {
            eager_max: get("BIP_EAGER_MAX", DEFAULT_EAGER_MAX),
            short_limit: get("BIP_SHORT_LIMIT", DEFAULT_SHORT_LIMIT),
            tags: get("BIP_TAGS", DEFAULT_TAGS as usize).clamp(1, u32::MAX as usize) as u32,
            force_link: matches!(std::env::var("BIP_FORCE_LINK").as_deref(), Ok("1" | "yes" | "on")),
            split_min: get("BIP_SPLIT_MIN", DEFAULT_SPLIT_MIN),
        }
    }

    /// Where a split transfer of `want` bytes divides: the receiver reads `..at`, the sender
    /// writes `at..` (a page boundary near the middle, so each side pins its own pages).
    pub(crate) fn split_point(want: usize) -> usize {
        (want / 2) & !4095
    }

    /// Credit granted to each sender, in bytes.
    pub(crate) fn grant_per_sender(&self, nranks: usize) -> usize {
        (self.short_limit / nranks.max(1)).max(self.eager_max + ENVELOPE_COST)
    }
}

/// Chooses packet sizes for a message: the message is cut into `k` packets of equal size
/// (the paper's scheme).
///
/// * `native`: as few packets as the mtu allows. On a cache-coherent host the copy into and
///   out of a packet buffer pipeline by themselves, and per-packet costs (one cache-line flag)
///   are too small for smaller packets to pay.
/// * Under a timing profile, the rule of `docs/timing-profiles.md`: messages up to the
///   profile's PIO limit go as one packet; above it `k = round(sqrt(S / knee))` where
///   `knee = dma_setup / (1/pci + 1/link)` balances the fixed DMA cost against pipelining,
///   clamped so packets stay at most `MODELED_MAX_PACKET` (the LANai's SRAM staging) and above
///   the PIO limit (every packet of a long message remains a DMA packet).
#[derive(Clone, Copy, Debug)]
pub enum PacketSizer {
    Native,
    Modeled { pio_max: usize, knee: f64 },
}

/// Largest packet under a timing profile (32 KiB, standing in for the NIC's SRAM buffers).
pub const MODELED_MAX_PACKET: usize = 32 * 1024;

impl PacketSizer {
    pub fn for_profile(p: Option<&Profile>) -> Self {
        match p {
            None => PacketSizer::Native,
            Some(p) => PacketSizer::Modeled {
                pio_max: p.pio_max_bytes as usize,
                knee: (p.dma_setup_ns / (1000.0 / p.pci_mb_s + 1000.0 / p.link_mb_s)).max(1.0),
            },
        }
    }

    /// Payload bytes per packet for a message of `len` bytes, given at most `max` per packet.
    #[inline]
    pub fn packet_size(&self, len: usize, max: usize) -> usize {
        let max = max.max(1);
        let k = match *self {
            PacketSizer::Native => len.div_ceil(max),
            PacketSizer::Modeled { pio_max, knee } => {
                if len <= pio_max {
                    1
                } else {
                    let k = ((len as f64 / knee).sqrt().round() as usize).min(len / (pio_max + 1));
                    k.max(len.div_ceil(max.min(MODELED_MAX_PACKET)))
                }
            }
        };
        len.div_ceil(k.max(1)).clamp(1, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_respect_the_mtu_and_grow_with_the_message() {
        let native = PacketSizer::for_profile(None);
        assert_eq!(native.packet_size(8, 4000), 8);
        assert_eq!(native.packet_size(8000, 4000), 4000);
        assert_eq!(native.packet_size(8001, 4000), 2667, "equal packets");
        let p = nic_model::Profile::load("myrinet-lanai4").unwrap().unwrap();
        let m = PacketSizer::for_profile(Some(&p));
        assert_eq!(m.packet_size(1000, 1 << 20), 1000, "below the PIO limit: one packet");
        // The derivation's figures: 3 packets at 4 KiB, 70 at 1 MiB.
        assert_eq!(m.packet_size(4096, 1 << 20), 4096usize.div_ceil(3));
        assert_eq!(m.packet_size(1 << 20, 1 << 20), (1usize << 20).div_ceil(70));
        assert!(m.packet_size(1 << 20, 4000) <= 4000, "the mtu still bounds packets");
    }
}
