//! An in-memory [`Device`] for unit tests of the `phy` wrappers.
//!
//! Each source has a queue of packets waiting to be received; tests put packets there with
//! [`TestDevice::push`]. A packet transmitted to the device's own rank loops back into that
//! rank's queue; every transmitted packet is also recorded in [`TestDevice::sent`].

use super::{Capabilities, Device, PeerStatus, RxToken, TxToken};
use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use std::collections::VecDeque;

/// A loopback device with one receive queue per source.
pub(crate) struct TestDevice {
    rank: Rank,
    mtu: usize,
    inbox: Vec<VecDeque<Vec<u8>>>,
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

/// A transmit buffer of a [`TestDevice`].
pub(crate) struct TestTxToken<'a> {
    dev: &'a mut TestDevice,
    dest: Rank,
}

/// The packet at the head of a source's queue; it leaves the queue only when consumed.
pub(crate) struct TestRxToken<'a> {
    dev: &'a mut TestDevice,
    src: Rank,
}

impl TxToken for TestTxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        assert!(len <= self.dev.mtu, "packet of {len} bytes exceeds the mtu");
        let mut buf = vec![0; len];
        let r = f(&mut buf);
        if self.dest == self.dev.rank {
            self.dev.inbox[self.dest].push_back(buf.clone());
        }
        self.dev.sent.push((self.dest, buf));
        self.dev.counters.packets_tx += 1;
        self.dev.counters.bytes_tx += len as u64;
        r
    }
}

impl RxToken for TestRxToken<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let packet = self.dev.inbox[self.src].pop_front().expect("token for a queued packet");
        self.dev.counters.packets_rx += 1;
        self.dev.counters.bytes_rx += packet.len() as u64;
        f(&packet)
    }
}

impl Device for TestDevice {
    type TxToken<'a> = TestTxToken<'a>;
    type RxToken<'a> = TestRxToken<'a>;

    fn rank(&self) -> Rank {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.inbox.len()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { mtu: self.mtu, reliable: true }
    }

    fn transmit(&mut self, dest: Rank) -> Option<TestTxToken<'_>> {
        Some(TestTxToken { dev: self, dest })
    }

    fn receive(&mut self, src: Rank) -> Option<TestRxToken<'_>> {
        if self.inbox[src].is_empty() {
            None
        } else {
            Some(TestRxToken { dev: self, src })
        }
    }

    fn dma_read(&mut self, peer: Rank, _remote: usize, _local: &mut [u8], _packet: usize) -> Result<()> {
        Err(NicError::DmaNotPermitted { rank: peer })
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
