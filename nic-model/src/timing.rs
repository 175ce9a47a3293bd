//! Timing profiles: data that say how long a packet takes through a modeled NIC.
//!
//! `native` adds nothing. Any other profile delays each packet until its modeled arrival: the
//! packet passes through a pipeline of resources (sender host, PCI, NIC processor, link,
//! receiver NIC, receiver PCI, receiver host), each serially occupied, entering a stage when it
//! has left the previous one and the resource is free. The resources' "free at" times live in
//! the fabric so that every process of the job sees the same links and buses.
//! `docs/timing-profiles.md` explains the parameters and how the built-in ones were derived.
//!
//! A profile is looked up by name: a path to a `.toml` file; else `NAME.toml` in the
//! directories of `MPI_NIC_PROFILE_PATH` (colon-separated); else a built-in one.

use crate::error::{NicError, Result};
use crate::fabric::layout::RankBlock;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// The built-in profiles other than `native`, as shipped in `nic-model/profiles/`.
const BUILT_IN: &[(&str, &str)] = &[
    (
        "myrinet-lanai4",
        include_str!("../profiles/myrinet-lanai4.toml"),
    ),
    ("rdma-100g", include_str!("../profiles/rdma-100g.toml")),
];

/// Parameters of a modeled NIC. Times in ns, rates in 10^6 bytes per second.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub host_send_ns: f64,
    pub host_recv_ns: f64,
    pub pio_max_bytes: f64,
    pub pio_mb_s: f64,
    pub dma_setup_ns: f64,
    pub pci_mb_s: f64,
    pub nic_send_ns: f64,
    pub nic_recv_ns: f64,
    pub link_mb_s: f64,
    pub wire_header_bytes: f64,
    pub switch_ns: f64,
}

/// Names of the profiles that need no file.
pub fn built_in_names() -> Vec<&'static str> {
    std::iter::once("native")
        .chain(BUILT_IN.iter().map(|(n, _)| *n))
        .collect()
}

impl Profile {
    /// Looks a profile up (see the module doc). `Ok(None)` means `native`.
    pub fn load(name: &str) -> Result<Option<Profile>> {
        if name.is_empty() || name == "native" {
            return Ok(None);
        }
        let err = |why: String| NicError::Profile {
            name: name.to_string(),
            why,
        };
        let text = if name.contains('/') || name.ends_with(".toml") {
            std::fs::read_to_string(name).map_err(|e| err(format!("cannot read the file: {e}")))?
        } else if let Some(t) = search_path(name) {
            t
        } else if let Some((_, t)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            t.to_string()
        } else {
            return Err(err(format!(
                "no such profile; built-in ones are {:?}, or give a path to a .toml file or put NAME.toml in a directory of MPI_NIC_PROFILE_PATH",
                built_in_names()
            )));
        };
        let p: Profile = toml::from_str(&text).map_err(|e| err(format!("invalid profile: {e}")))?;
        p.validate().map_err(err)?;
        Ok(Some(p))
    }

    fn validate(&self) -> std::result::Result<(), String> {
        let times = [
            self.host_send_ns,
            self.host_recv_ns,
            self.dma_setup_ns,
            self.nic_send_ns,
            self.nic_recv_ns,
            self.switch_ns,
        ];
        let rates = [self.pio_mb_s, self.pci_mb_s, self.link_mb_s];
        if times
            .iter()
            .chain([self.pio_max_bytes, self.wire_header_bytes].iter())
            .any(|t| !t.is_finite() || *t < 0.0)
        {
            return Err("times and sizes must be finite and not negative".into());
        }
        if rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
            return Err("rates must be positive".into());
        }
        Ok(())
    }

    /// ns to move `bytes` at `mb_s` (10^6 B/s): bytes * 1000 / mb_s.
    fn ns(bytes: f64, mb_s: f64) -> u64 {
        (bytes * 1000.0 / mb_s) as u64
    }

    /// Reserves the resources a packet of `len` payload bytes occupies on its way from `src`
    /// to `dst`, starting no earlier than `now`; returns its modeled arrival time.
    pub(crate) fn schedule(&self, src: &RankBlock, dst: &RankBlock, len: usize, now: u64) -> u64 {
        let l = len as f64;
        let pio = l <= self.pio_max_bytes;
        let host = self.host_send_ns as u64 + if pio { Self::ns(l, self.pio_mb_s) } else { 0 };
        let mut t = reserve(&src.host_tx_free, now, host);
        if !pio {
            t = reserve(
                &src.pci_free,
                t,
                self.dma_setup_ns as u64 + Self::ns(l, self.pci_mb_s),
            );
        }
        t = reserve(&src.nic_tx_free, t, self.nic_send_ns as u64);
        t = reserve(
            &src.link_tx_free,
            t,
            Self::ns(l + self.wire_header_bytes, self.link_mb_s),
        );
        t += self.switch_ns as u64;
        t = reserve(&dst.nic_rx_free, t, self.nic_recv_ns as u64);
        t = reserve(
            &dst.pci_free,
            t,
            self.dma_setup_ns as u64 + Self::ns(l, self.pci_mb_s),
        );
        t + self.host_recv_ns as u64
    }
}

/// Occupies a resource for `dur` ns from `max(ready, free_at)`; returns the end time.
fn reserve(free_at: &AtomicU64, ready: u64, dur: u64) -> u64 {
    let mut cur = free_at.load(Ordering::Relaxed);
    loop {
        let end = ready.max(cur) + dur;
        match free_at.compare_exchange_weak(cur, end, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return end,
            Err(c) => cur = c,
        }
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

fn search_path(name: &str) -> Option<String> {
    let path = std::env::var("MPI_NIC_PROFILE_PATH").ok()?;
    path.split(':').filter(|d| !d.is_empty()).find_map(|d| {
        std::fs::read_to_string(std::path::Path::new(d).join(format!("{name}.toml"))).ok()
    })
}

/// Nanoseconds on CLOCK_MONOTONIC, the clock every process of the job shares. A vDSO call,
/// not a system call.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_profiles_parse_and_native_is_none() {
        assert!(Profile::load("native").unwrap().is_none());
        for (name, _) in BUILT_IN {
            let p = Profile::load(name).unwrap().unwrap();
            assert_eq!(&p.name, name);
        }
        assert!(Profile::load("no-such-profile").is_err());
    }

    #[test]
    fn reserve_serializes_a_resource() {
        let r = AtomicU64::new(0);
        assert_eq!(reserve(&r, 100, 10), 110);
        assert_eq!(reserve(&r, 100, 10), 120);
        assert_eq!(reserve(&r, 500, 10), 510);
    }

    #[test]
    fn packets_respect_the_mtu_and_grow_with_the_message() {
        let native = PacketSizer::for_profile(None);
        assert_eq!(native.packet_size(8, 4000), 8);
        assert_eq!(native.packet_size(8000, 4000), 4000);
        assert_eq!(native.packet_size(8001, 4000), 2667, "equal packets");
        let p = Profile::load("myrinet-lanai4").unwrap().unwrap();
        let m = PacketSizer::for_profile(Some(&p));
        assert_eq!(
            m.packet_size(1000, 1 << 20),
            1000,
            "below the PIO limit: one packet"
        );
        // The derivation's figures: 3 packets at 4 KiB, 70 at 1 MiB.
        assert_eq!(m.packet_size(4096, 1 << 20), 4096usize.div_ceil(3));
        assert_eq!(m.packet_size(1 << 20, 1 << 20), (1usize << 20).div_ceil(70));
        assert!(
            m.packet_size(1 << 20, 4000) <= 4000,
            "the mtu still bounds packets"
        );
    }
}
