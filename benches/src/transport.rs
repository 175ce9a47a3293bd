//! The layers under test, each behind the same small interface so that every layer is
//! measured by exactly the same code.

use bip_core::{Bip, BipConfig, Request};
use nic_model::wait::Backoff;
use nic_model::{AnyNic, Device, RxToken, TxToken};

/// One side of a two-process measurement.
pub trait Transport {
    fn rank(&self) -> usize;
    /// Sends one message of `buf.len()` bytes to the peer.
    fn send(&mut self, buf: &[u8]);
    /// Receives one message of exactly `buf.len()` bytes from the peer.
    fn recv(&mut self, buf: &mut [u8]);
    /// Sends `count` messages of `buf.len()` bytes back to back (up to `window` outstanding).
    fn stream_send(&mut self, buf: &[u8], count: usize, window: usize);
    /// Receives `count` messages into the buffers of `bufs` in turn.
    fn stream_recv(&mut self, bufs: &mut [Vec<u8>], count: usize, window: usize);
    /// What the layer counted (JSON object).
    fn counters(&self) -> serde_json::Value;
    fn finish(self: Box<Self>);
}

/// The raw NIC: a message is a run of mtu-sized packets, copied into and out of the packet
/// buffers (an empty message is one empty packet).
pub struct NicLayer {
    pub nic: AnyNic,
    mtu: usize,
}

impl NicLayer {
    pub fn new(nic: AnyNic) -> Self {
        let mtu = nic.capabilities().mtu;
        NicLayer { nic, mtu }
    }

    fn peer(&self) -> usize {
        1 - self.nic.rank()
    }
}

impl Transport for NicLayer {
    fn rank(&self) -> usize {
        self.nic.rank()
    }

    #[inline]
    fn send(&mut self, buf: &[u8]) {
        let peer = self.peer();
        let mut off = 0;
        loop {
            let l = (buf.len() - off).min(self.mtu);
            let mut backoff = Backoff::new();
            let tok = loop {
                if let Some(t) = self.nic.transmit(peer) {
                    break t;
                }
                backoff.snooze();
            };
            tok.consume(l, |p| p.copy_from_slice(&buf[off..off + l]));
            off += l;
            if off >= buf.len() {
                return;
            }
        }
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) {
        let peer = self.peer();
        let mut off = 0;
        loop {
            let mut backoff = Backoff::new();
            let tok = loop {
                if let Some(t) = self.nic.receive(peer) {
                    break t;
                }
                if backoff.snooze() {
                    assert!(self.nic.peer_status(peer) != nic_model::PeerStatus::Dead, "peer died");
                }
            };
            let n = tok.consume(|p| {
                buf[off..off + p.len()].copy_from_slice(p);
                p.len()
            });
            off += n;
            if off >= buf.len() {
                return;
            }
        }
    }

    fn stream_send(&mut self, buf: &[u8], count: usize, _window: usize) {
        for _ in 0..count {
            self.send(buf);
        }
    }

    fn stream_recv(&mut self, bufs: &mut [Vec<u8>], count: usize, _window: usize) {
        let k = bufs.len();
        for i in 0..count {
            self.recv(&mut bufs[i % k]);
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::to_value(self.nic.counters()).unwrap()
    }

    fn finish(mut self: Box<Self>) {
        self.nic.finalize();
    }
}

/// BIP: blocking send and recv for latency, `isend`/`irecv` windows for streaming.
pub struct BipLayer {
    pub bip: Bip<AnyNic>,
    tag: u32,
}

impl BipLayer {
    pub fn new(nic: AnyNic) -> Self {
        BipLayer { bip: Bip::new(nic, BipConfig::from_env()).expect("BIP init"), tag: 1 }
    }

    fn peer(&self) -> usize {
        1 - self.bip.mynode()
    }
}

impl Transport for BipLayer {
    fn rank(&self) -> usize {
        self.bip.mynode()
    }

    #[inline]
    fn send(&mut self, buf: &[u8]) {
        let peer = self.peer();
        self.bip.send(peer, self.tag, buf).expect("bip send");
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) {
        let (n, _) = self.bip.recv(self.tag, buf).expect("bip recv");
        debug_assert_eq!(n, buf.len());
    }

    fn stream_send(&mut self, buf: &[u8], count: usize, window: usize) {
        let peer = self.peer();
        let mut reqs: Vec<Request> = Vec::with_capacity(window);
        let mut sent = 0;
        while sent < count {
            let w = window.min(count - sent);
            for _ in 0..w {
                // SAFETY: `buf` outlives the requests, which are waited for below.
                reqs.push(unsafe { self.bip.isend(peer, self.tag, buf.as_ptr(), buf.len()) }.expect("isend"));
            }
            for r in reqs.drain(..) {
                self.bip.wait(r).expect("wait send");
            }
            sent += w;
        }
    }

    fn stream_recv(&mut self, bufs: &mut [Vec<u8>], count: usize, window: usize) {
        let mut reqs: Vec<Request> = Vec::with_capacity(window);
        let mut got = 0;
        while got < count {
            let w = window.min(count - got).min(bufs.len());
            for b in bufs.iter_mut().take(w) {
                // SAFETY: each buffer is used by one request at a time and outlives it.
                reqs.push(unsafe { self.bip.irecv(self.tag, b.as_mut_ptr(), b.len()) }.expect("irecv"));
            }
            for r in reqs.drain(..) {
                self.bip.wait(r).expect("wait recv");
            }
            got += w;
        }
    }

    fn counters(&self) -> serde_json::Value {
        let c = self.bip.counters();
        serde_json::json!({
            "nic": serde_json::to_value(self.bip.device().counters()).unwrap(),
            "bip": {
                "messages_sent": c.messages_sent, "messages_received": c.messages_received,
                "copies": c.copies, "bytes_copied": c.bytes_copied,
                "rendezvous_single_copy": c.rendezvous_single_copy, "rendezvous_packets": c.rendezvous_packets,
                "credit_waits": c.credit_waits, "retransmits": c.retransmits, "rejected": c.rejected,
            }
        })
    }

    fn finish(self: Box<Self>) {
        self.bip.finalize().expect("bip finalize");
    }
}
