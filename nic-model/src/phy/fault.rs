//! Fault injection: a [`Device`] wrapper that turns a reliable device into a lossy link.
//!
//! [`FaultInjector`] applies faults on the receive path, as a lossy link would, separately for
//! each source, at the per-packet rates of a [`FaultConfig`]:
//!
//! * **drop**: the packet is taken off the inner device and discarded; the receiver gets the
//!   next packet from that source instead;
//! * **corrupt**: the receiver gets a copy with at least one bit flipped in one random byte;
//! * **duplicate**: the receiver gets the packet, then an identical copy on a following poll;
//! * **delay**: the packet is held back and delivered after 1 to 3 later packets from that
//!   source have been delivered (so packets are reordered) or, if none come, after a few more
//!   polls. A held packet is never lost as long as the device is polled.
//!
//! A packet draws each fault independently, except that a dropped packet suffers nothing else
//! (a corrupted packet may also be duplicated or delayed). The draws come from one random
//! stream per (rank, source) seeded from [`FaultConfig::seed`]: the same sequence of packets
//! meets the same faults run after run, and different ranks meet different faults. Transmission
//! and region transfers (single copies, which move no packets) pass through untouched.
//!
//! The configuration usually comes from the environment, for instance
//! `MPI_NIC_FAULTS=drop=0.01,corrupt=0.02,dup=0.01,delay=0.01,seed=42` ([`FaultConfig::from_env`]).

use super::{forward_regions, Capabilities, Device, PeerStatus};
use crate::counters::Counters;
use crate::error::{Rank, Result};
use std::collections::VecDeque;

/// Environment variable holding a fault specification (see [`FaultConfig::parse`]).
pub const FAULTS_ENV: &str = "MPI_NIC_FAULTS";

/// Per-packet fault rates, each a probability in `[0, 1]`, and the seed of the random streams.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FaultConfig {
    /// Probability that a packet is dropped.
    pub drop: f64,
    /// Probability that a packet is corrupted.
    pub corrupt: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that a packet is held back and delivered late.
    pub delay: f64,
    /// Seed of the random streams; each rank mixes in its own rank and the source's.
    pub seed: u64,
}

impl FaultConfig {
    /// Parses a comma-separated list of `key=value`: `drop`, `corrupt`, `dup` (or `duplicate`)
    /// and `delay` take a probability in `[0, 1]`, `seed` a `u64` (decimal or `0x` hex).
    /// Absent keys are 0; an empty string gives a configuration that injects nothing.
    pub fn parse(spec: &str) -> Result<FaultConfig, String> {
        let mut cfg = FaultConfig::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!("`{item}` is not of the form key=value"));
            };
            let (key, value) = (key.trim(), value.trim());
            match key {
                "drop" => cfg.drop = parse_rate(key, value)?,
                "corrupt" => cfg.corrupt = parse_rate(key, value)?,
                "dup" | "duplicate" => cfg.duplicate = parse_rate(key, value)?,
                "delay" => cfg.delay = parse_rate(key, value)?,
                "seed" => cfg.seed = parse_seed(value)?,
                _ => {
                    return Err(format!(
                        "unknown key `{key}` (expected drop, corrupt, dup, delay or seed)"
                    ))
                }
            }
        }
        Ok(cfg)
    }

    /// Reads [`FAULTS_ENV`] (`MPI_NIC_FAULTS`): `None` when unset or empty.
    pub fn from_env() -> Result<Option<FaultConfig>, String> {
        Self::from_env_value(std::env::var_os(FAULTS_ENV))
    }

    fn from_env_value(value: Option<std::ffi::OsString>) -> Result<Option<FaultConfig>, String> {
        let Some(value) = value else { return Ok(None) };
        let Some(spec) = value.to_str() else {
            return Err(format!("{FAULTS_ENV} is not valid UTF-8"));
        };
        if spec.trim().is_empty() {
            return Ok(None);
        }
        FaultConfig::parse(spec)
            .map(Some)
            .map_err(|e| format!("{FAULTS_ENV}={spec:?}: {e}"))
    }

    /// True when some rate is above zero.
    pub fn is_active(&self) -> bool {
        [self.drop, self.corrupt, self.duplicate, self.delay]
            .iter()
            .any(|&p| p > 0.0)
    }
}

fn parse_rate(key: &str, value: &str) -> Result<f64, String> {
    let p: f64 = value
        .parse()
        .map_err(|_| format!("{key}: `{value}` is not a number"))?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!(
            "{key}: {value} is out of range (a probability is between 0 and 1)"
        ))
    }
}

fn parse_seed(value: &str) -> Result<u64, String> {
    let parsed = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse(),
    };
    parsed.map_err(|_| format!("seed: `{value}` is not an unsigned 64-bit integer"))
}

/// SplitMix64's finalizer: spreads the bits of `x` so that nearby inputs give unrelated seeds.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// What happens to one packet.
#[derive(Clone, Copy, Debug, Default)]
struct Fate {
    drop: bool,
    corrupt: bool,
    duplicate: bool,
    delay: bool,
}

/// A delayed packet and how long it still waits.
struct Held {
    data: Vec<u8>,
    /// Packets from the source still to be delivered before this one.
    packets: u32,
    /// Polls still to come before this one is released anyway.
    calls: u32,
}

/// Fault state of one source.
struct Source {
    rng: fastrand::Rng,
    /// Copies due now, before anything else: duplicates.
    ready: VecDeque<Vec<u8>>,
    /// Delayed packets, oldest first.
    held: Vec<Held>,
}

impl Source {
    fn new(seed: u64) -> Source {
        Source {
            rng: fastrand::Rng::with_seed(seed),
            ready: VecDeque::new(),
            held: Vec::new(),
        }
    }

    /// Draws the fate of the next packet from this source.
    fn fate(&mut self, cfg: &FaultConfig) -> Fate {
        let rng = &mut self.rng;
        let mut hit = |p: f64| p > 0.0 && rng.f64() < p;
        if hit(cfg.drop) {
            Fate {
                drop: true,
                ..Fate::default()
            }
        } else {
            Fate {
                drop: false,
                corrupt: hit(cfg.corrupt),
                duplicate: hit(cfg.duplicate),
                delay: hit(cfg.delay),
            }
        }
    }

    /// Flips at least one bit of one random byte; false for an empty packet.
    fn corrupt(&mut self, data: &mut [u8]) -> bool {
        if data.is_empty() {
            return false;
        }
        let i = self.rng.usize(..data.len());
        data[i] ^= self.rng.u8(1..);
        true
    }

    /// Holds `data` back for 1 to 3 delivered packets or 4 to 8 polls.
    fn hold(&mut self, data: Vec<u8>) {
        let (packets, calls) = (self.rng.u32(1..=3), self.rng.u32(4..=8));
        self.held.push(Held {
            data,
            packets,
            calls,
        });
    }

    /// A poll began.
    fn tick(&mut self) {
        self.held
            .iter_mut()
            .for_each(|h| h.calls = h.calls.saturating_sub(1));
    }

    /// A packet from this source was delivered.
    fn delivered(&mut self) {
        self.held
            .iter_mut()
            .for_each(|h| h.packets = h.packets.saturating_sub(1));
    }

    /// The next copy due for delivery: a ready one, else the oldest held one whose wait is over.
    fn next_due(&mut self) -> Option<Vec<u8>> {
        if self.ready.is_empty() && self.held.is_empty() {
            return None;
        }
        if let Some(data) = self.ready.pop_front() {
            return Some(data);
        }
        let i = self
            .held
            .iter()
            .position(|h| h.packets == 0 || h.calls == 0)?;
        Some(self.held.remove(i).data)
    }
}

/// A [`Device`] wrapper that drops, corrupts, duplicates and delays received packets.
pub struct FaultInjector<D: Device> {
    inner: D,
    cfg: FaultConfig,
    sources: Vec<Source>,
    /// Sources with copies waiting (duplicates or held packets), each once.
    waiting: Vec<Rank>,
    /// Faults injected by this wrapper.
    faults: u64,
    /// The inner device's counters plus ours, refreshed by every call that may change them.
    counters: Counters,
}

impl<D: Device> FaultInjector<D> {
    /// Wraps `inner`. Each source gets its own random stream, seeded from `cfg.seed`, the
    /// inner device's rank and the source's rank.
    pub fn new(inner: D, cfg: FaultConfig) -> Self {
        let rank = inner.rank() as u64;
        let sources = (0..inner.nranks() as u64)
            .map(|src| Source::new(mix(cfg.seed ^ mix(rank << 32 | src))))
            .collect();
        let counters = *inner.counters();
        let mut injector = FaultInjector {
            inner,
            cfg,
            sources,
            waiting: Vec::new(),
            faults: 0,
            counters,
        };
        injector.refresh();
        injector
    }

    /// The configuration in force.
    pub fn config(&self) -> &FaultConfig {
        &self.cfg
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably. Packets received through it bypass the injector.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Unwraps the device. Packets held back or waiting as duplicates are discarded.
    pub fn into_inner(self) -> D {
        self.inner
    }

    /// Re-reads the inner counters and adds the faults injected here.
    fn refresh(&mut self) {
        let inner = self.inner.counters();
        self.counters = Counters {
            faults: inner.faults + self.faults,
            ..*inner
        };
    }
}

impl<D: Device> super::Wraps for FaultInjector<D> {
    type Inner = D;
    fn inner(&self) -> &D {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

impl<D: Device> Device for FaultInjector<D> {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }

    fn nranks(&self) -> usize {
        self.inner.nranks()
    }

    fn capabilities(&self) -> Capabilities {
        let caps = self.inner.capabilities();
        Capabilities {
            reliable: caps.reliable && !self.cfg.is_active(),
            ..caps
        }
    }

    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let sent = self.inner.send(dest, len, fill);
        self.refresh();
        sent
    }

    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        let got = self.poll_faulty(take);
        self.refresh();
        got
    }

    fn progress(&mut self) -> bool {
        self.inner.progress()
    }

    forward_regions!();

    fn peer_status(&self, peer: Rank) -> PeerStatus {
        self.inner.peer_status(peer)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn set_protocol_header(&mut self, bytes: usize) {
        self.inner.set_protocol_header(bytes)
    }

    fn profile(&self) -> Option<&crate::timing::Profile> {
        self.inner.profile()
    }

    fn finalize(&mut self) {
        self.inner.finalize();
        self.refresh();
    }
}

impl<D: Device> FaultInjector<D> {
    /// Delivers the next packet after the faults it draws: copies due (duplicates, packets
    /// released from delay) first; then packets of the inner device, dropping or holding back
    /// those that draw it, until one is to be delivered now. The fate of a packet is drawn
    /// from its source's stream when the inner device hands it over; a packet that draws no
    /// fault is lent in place.
    fn poll_faulty(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        if !self.waiting.is_empty() && self.take_due(take) {
            return true;
        }
        let FaultInjector {
            inner,
            cfg,
            sources,
            waiting,
            faults,
            ..
        } = self;
        loop {
            let mut delivered = false;
            let got = inner.poll(&mut |src, packet| {
                let source = &mut sources[src];
                let fate = source.fate(cfg);
                if !(fate.drop || fate.delay || fate.corrupt || fate.duplicate) {
                    take(src, packet);
                    source.delivered();
                    delivered = true;
                    return;
                }
                if fate.drop {
                    *faults += 1;
                    return;
                }
                let mut data = packet.to_vec();
                if fate.corrupt && source.corrupt(&mut data) {
                    *faults += 1;
                }
                if fate.duplicate {
                    *faults += 1;
                }
                if !waiting.contains(&src) && (fate.delay || fate.duplicate) {
                    waiting.push(src);
                }
                if fate.delay {
                    *faults += 1;
                    if fate.duplicate {
                        source.hold(data.clone());
                    }
                    source.hold(data);
                    return;
                }
                if fate.duplicate {
                    source.ready.push_back(data.clone());
                }
                take(src, &data);
                source.delivered();
                delivered = true;
            });
            if !got {
                return false;
            }
            if delivered {
                return true;
            }
        }
    }

    /// Delivers one copy that is due, from the sources with copies waiting (a poll's tick
    /// counts for every one of them).
    fn take_due(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        let mut found = None;
        for &src in &self.waiting {
            let source = &mut self.sources[src];
            source.tick();
            if found.is_none() {
                if let Some(data) = source.next_due() {
                    found = Some((src, data));
                }
            }
        }
        let sources = &self.sources;
        self.waiting
            .retain(|&s| !(sources[s].ready.is_empty() && sources[s].held.is_empty()));
        let Some((src, data)) = found else {
            return false;
        };
        take(src, &data);
        self.sources[src].delivered();
        // Rotate so that no source's copies wait behind another's.
        if let Some(i) = self.waiting.iter().position(|&s| s == src) {
            let s = self.waiting.remove(i);
            self.waiting.push(s);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::poll_bytes;
    use crate::phy::test_device::TestDevice;

    const SRC: Rank = 1;

    /// 200 distinct packets of various lengths.
    fn packets() -> Vec<Vec<u8>> {
        (0..200u32)
            .map(|i| {
                (0..4 + i % 29)
                    .map(|j| (i * 7 + j) as u8)
                    .chain(i.to_le_bytes())
                    .collect()
            })
            .collect()
    }

    /// An injector of rank `rank` with `packets()` waiting from `SRC`.
    fn injector(rank: Rank, cfg: FaultConfig) -> FaultInjector<TestDevice> {
        let mut dev = TestDevice::new(rank, 3, 1024);
        packets().iter().for_each(|p| dev.push(SRC, p));
        FaultInjector::new(dev, cfg)
    }

    /// Polls `SRC` until the inner queue is empty and 20 calls in a row found nothing.
    fn drain(inj: &mut FaultInjector<TestDevice>) -> Vec<Vec<u8>> {
        let (mut got, mut idle) = (Vec::new(), 0);
        while idle < 20 {
            match poll_bytes(inj) {
                Some((src, packet)) => {
                    assert_eq!(src, SRC);
                    got.push(packet);
                    idle = 0;
                }
                None => idle += 1,
            }
        }
        assert_eq!(inj.inner().waiting(SRC), 0);
        got
    }

    fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        v.sort();
        v
    }

    fn cfg(spec: &str) -> FaultConfig {
        FaultConfig::parse(spec).unwrap()
    }

    #[test]
    fn parse_accepts_the_documented_keys() {
        let c = cfg(" drop=0.01, corrupt=0.02,dup=0.01,delay=1,seed=42,");
        assert_eq!(
            c,
            FaultConfig {
                drop: 0.01,
                corrupt: 0.02,
                duplicate: 0.01,
                delay: 1.0,
                seed: 42
            }
        );
        assert!(c.is_active());
        assert_eq!(
            cfg("duplicate=0.5,seed=0x10"),
            FaultConfig {
                duplicate: 0.5,
                seed: 16,
                ..FaultConfig::default()
            }
        );
        assert!(!cfg("").is_active());
        assert!(!cfg("seed=7").is_active());
    }

    #[test]
    fn parse_explains_errors() {
        let err = |s| FaultConfig::parse(s).unwrap_err();
        assert!(err("drop=0.1,lose=0.2").contains("unknown key `lose`"));
        assert!(err("drop=abc").contains("`abc` is not a number"));
        assert!(err("corrupt=1.5").contains("out of range"));
        assert!(err("delay=-0.1").contains("out of range"));
        assert!(err("dup=NaN").contains("out of range"));
        assert!(err("drop").contains("key=value"));
        assert!(err("seed=-1").contains("seed"));
    }

    #[test]
    fn env_value_unset_or_empty_is_none() {
        assert_eq!(FaultConfig::from_env_value(None), Ok(None));
        assert_eq!(FaultConfig::from_env_value(Some(" ".into())), Ok(None));
        assert_eq!(
            FaultConfig::from_env_value(Some("drop=0.5".into())),
            Ok(Some(cfg("drop=0.5")))
        );
        assert!(FaultConfig::from_env_value(Some("drop=2".into()))
            .unwrap_err()
            .starts_with(FAULTS_ENV));
    }

    #[test]
    fn zero_rates_pass_through_exactly() {
        let mut inj = injector(0, cfg("seed=3"));
        assert!(inj.capabilities().reliable);
        assert_eq!(drain(&mut inj), packets());
        let c = *inj.counters();
        assert_eq!((c.faults, c.packets_rx), (0, 200));
        assert_eq!(c, *inj.inner().counters());
    }

    #[test]
    fn seeded_faults_are_reproducible_and_differ_between_ranks() {
        let c = cfg("drop=0.1,corrupt=0.1,dup=0.1,delay=0.1,seed=42");
        let run = |rank, seed| {
            let mut inj = injector(rank, FaultConfig { seed, ..c });
            assert!(!inj.capabilities().reliable);
            (drain(&mut inj), inj.counters().faults)
        };
        let (got, faults) = run(0, 42);
        assert!(faults > 0);
        assert!(
            run(0, 42) == (got.clone(), faults),
            "same seed, same rank: same faults"
        );
        assert!(run(2, 42).0 != got, "another rank draws another stream");
        assert!(run(0, 43).0 != got, "another seed draws another stream");
    }

    #[test]
    fn drop_rate_one_drops_everything() {
        let mut inj = injector(0, cfg("drop=1"));
        assert!(poll_bytes(&mut inj).is_none());
        assert_eq!(inj.inner().waiting(SRC), 0);
        assert_eq!(inj.counters().faults, 200);
        assert_eq!(inj.counters().packets_rx, 200);
        assert!(drain(&mut inj).is_empty());
    }

    #[test]
    fn corrupt_flips_bits_in_one_byte() {
        let mut inj = injector(0, cfg("corrupt=1,seed=9"));
        let got = drain(&mut inj);
        assert_eq!(got.len(), 200);
        for (g, p) in got.iter().zip(packets()) {
            assert_eq!(g.len(), p.len());
            assert_eq!(g.iter().zip(&p).filter(|(a, b)| a != b).count(), 1);
        }
        assert_eq!(inj.counters().faults, 200);
    }

    #[test]
    fn duplicate_delivers_twice() {
        let mut inj = injector(0, cfg("dup=1"));
        let got = drain(&mut inj);
        let twice: Vec<_> = packets().into_iter().flat_map(|p| [p.clone(), p]).collect();
        assert_eq!(got, twice);
        assert_eq!(inj.counters().faults, 200);
    }

    #[test]
    fn delay_reorders_but_never_loses() {
        for spec in [
            "delay=0.3,seed=1",
            "delay=1,seed=2",
            "delay=0.5,dup=0.2,corrupt=0.1,seed=3",
        ] {
            let c = cfg(spec);
            let mut inj = injector(0, c);
            let got = drain(&mut inj);
            assert!(got != packets(), "{spec}: no reordering");
            if c.delay < 1.0 && c.corrupt == 0.0 {
                // While packets keep coming, a held one is late by a few packets only.
                let sent = packets();
                let late = |(i, p)| got.iter().position(|g| g == p).unwrap().saturating_sub(i);
                assert!(
                    sent.iter().enumerate().map(late).max().unwrap() <= 6,
                    "{spec}: held too long"
                );
            }
            if c.duplicate == 0.0 && c.corrupt == 0.0 {
                assert!(
                    sorted(got) == sorted(packets()),
                    "{spec}: packets lost or altered"
                );
            } else {
                assert!(got.len() >= 200, "{spec}: packets lost");
            }
        }
    }

    #[test]
    fn sends_pass_through_and_are_counted() {
        let mut inj = injector(0, cfg("drop=1"));
        assert!(crate::phy::send_bytes(&mut inj, 2, b"abc"));
        assert_eq!(inj.inner().sent, vec![(2, b"abc".to_vec())]);
        assert_eq!((inj.counters().packets_tx, inj.counters().bytes_tx), (1, 3));
        assert!(!inj.capabilities().reliable);
        inj.finalize();
        assert!(inj.into_inner().finalized);
    }
}
