//! BIP's tunables: the copy/zero-copy threshold, the receiver's short-message buffer limit,
//! the number of tag queues, and the adaptive packet size.
//!
//! The default threshold is a measurement, not a guess: `target/release/layers --calibrate`
//! times the buffered (copy) path and the rendezvous (single-copy) path at each size on this
//! machine and prints the crossover; the value below is what it printed here (see README
//! "Thresholds"). `BIP_EAGER_MAX` overrides it at run time.

pub use nic_model::timing::{PacketSizer, MODELED_MAX_PACKET};

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

/// Configuration of one BIP instance; `from_env` reads `BIP_EAGER_MAX`, `BIP_SHORT_LIMIT`,
/// `BIP_TAGS`, `BIP_FORCE_LINK`. (Splitting a long copy between both ends' cores is the
/// NIC's, `MPI_NIC_SPLIT_MIN`.)
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
}

impl Default for BipConfig {
    fn default() -> Self {
        BipConfig {
            eager_max: DEFAULT_EAGER_MAX,
            short_limit: DEFAULT_SHORT_LIMIT,
            tags: DEFAULT_TAGS,
            force_link: false,
        }
    }
}

impl BipConfig {
    pub fn from_env() -> Self {
        let get = |k: &str, d: usize| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        BipConfig {
            eager_max: get("BIP_EAGER_MAX", DEFAULT_EAGER_MAX),
            short_limit: get("BIP_SHORT_LIMIT", DEFAULT_SHORT_LIMIT),
            tags: get("BIP_TAGS", DEFAULT_TAGS as usize).clamp(1, u32::MAX as usize) as u32,
            force_link: matches!(
                std::env::var("BIP_FORCE_LINK").as_deref(),
                Ok("1" | "yes" | "on")
            ),
        }
    }

    /// Credit granted to each sender, in bytes.
    pub(crate) fn grant_per_sender(&self, nranks: usize) -> usize {
        (self.short_limit / nranks.max(1)).max(self.eager_max + ENVELOPE_COST)
    }
}
