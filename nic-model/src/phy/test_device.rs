//! An in-memory [`Device`] for unit tests of the `phy` wrappers.
//!
//! Each source has a queue of packets waiting to be received; tests put packets there with
//! [`TestDevice::push`]. A packet transmitted to the device's own rank loops back into that
//! rank's queue; every transmitted packet is also recorded in [`TestDevice::sent`].

use super::{Capabilities, Device, PeerStatus};
use crate::counters::Counters;
use crate::error::Rank;
use std::collections::VecDeque;

/// A loopback device with one receive queue per source.
pub(crate) struct TestDevice {
    rank: Rank,
    mtu: usize,
    inbox: Vec<VecDeque<Vec<u8>>>,
    /// The source the next poll looks at first.
    next: Rank,
    /// Every packet transmitted, with its destination, in order.
    pub(crate) sent: Vec<(Rank, Vec<u8>)>,
    counters: Counters,
    pub(crate) finalized: bool,
}

impl TestDevice {
    /// A device of rank `rank` in a job of `nranks`, carrying packets of up to `mtu` bytes.
    pub(crate) fn new(rank: Rank, nranks: usize, mtu: usize) -> TestDevice {
        TestDevice {
            rank,
            mtu,
            inbox: vec![VecDeque::new(); nranks],
            next: 0,
            sent: Vec::new(),
            counters: Counters::default(),
            finalized: false,
        }
    }

    /// Makes `packet` arrive from `src`, after those already waiting.
    pub(crate) fn push(&mut self, src: Rank, packet: &[u8]) {
        self.inbox[src].push_back(packet.to_vec());
    }

    /// Packets from `src` not received yet.
    pub(crate) fn waiting(&self, src: Rank) -> usize {
        self.inbox[src].len()
    }
}

impl Device for TestDevice {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.inbox.len()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mtu: self.mtu,
            reliable: true,
        }
    }

    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        assert!(len <= self.mtu, "packet of {len} bytes exceeds the mtu");
        let mut buf = vec![0; len];
        fill(&mut buf);
        if dest == self.rank {
            self.inbox[dest].push_back(buf.clone());
        }
        self.sent.push((dest, buf));
        self.counters.packets_tx += 1;
        self.counters.bytes_tx += len as u64;
        true
    }

    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        // Round-robin over the sources from the one after the last delivery.
        let n = self.inbox.len();
        let Some(src) = (0..n)
            .map(|i| (self.next + i) % n)
            .find(|&s| !self.inbox[s].is_empty())
        else {
            return false;
        };
        self.next = (src + 1) % n;
        let packet = self.inbox[src].pop_front().expect("not empty");
        self.counters.packets_rx += 1;
        self.counters.bytes_rx += packet.len() as u64;
        take(src, &packet);
        true
    }

    fn peer_status(&self, _peer: Rank) -> PeerStatus {
        PeerStatus::Alive
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn finalize(&mut self) {
        self.finalized = true;
    }
}
