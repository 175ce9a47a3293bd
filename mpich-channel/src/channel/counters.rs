//! What a channel and the layers under it counted: the NIC's packets, stalls and single-copy
//! transfers, BIP's copies, FM's (for the `fm` channels), and the copies the channel makes
//! itself (a control message's payload out of the packet into its landing, FM 1.x's staging
//! of envelope and data into one buffer, a multi-packet control message staged for BIP).
//!
//! The `layers` benchmark reads them (through the ADI and `MPI_COUNTERS`, see
//! [`crate::adi::AdiCounters`]) to show where each layer spends what it loses. Counting is a
//! plain integer increment where the copy happens.

/// Copies made by one piece of code: how many, and how many bytes in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyCount {
    pub copies: u64,
    pub bytes: u64,
}

impl CopyCount {
    /// Counts one copy of `bytes` bytes (an empty copy is no copy).
    #[inline]
    pub fn add(&mut self, bytes: usize) {
        if bytes > 0 {
            self.copies += 1;
            self.bytes += bytes as u64;
        }
    }
}

/// A snapshot of a channel's counters and those of the layers it runs over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelCounters {
    /// The NIC under the channel.
    pub nic: nic_model::Counters,
    /// BIP (under every channel: directly for `bip`, under FM for `fm` and `fm1`).
    pub bip: bip_core::BipCounters,
    /// FM, for the `fm` and `fm1` channels.
    pub fm: Option<fm_streams::FmCounters>,
    /// The channel's own copies.
    pub channel: CopyCount,
}
