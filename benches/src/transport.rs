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

/// Where FM's handlers put arriving messages: the caller's buffers, in the order it posted
/// them (FM has no receive call; the handler chooses the destination, as MPI-FM's did).
#[derive(Default)]
struct Sink {
    targets: std::collections::VecDeque<(*mut u8, usize)>,
    /// Messages that arrived before a buffer was posted for them (a blocking send runs
    /// handlers while it waits), kept until `recv` asks.
    early: std::collections::VecDeque<Vec<u8>>,
    /// Buffers of early messages already copied out, kept for reuse (no fresh pages to fault
    /// in for every early message).
    spare: Vec<Vec<u8>>,
    /// How many messages arrived early.
    early_count: u64,
    done: usize,
}

type SharedSink = std::rc::Rc<std::cell::RefCell<Sink>>;

/// FM 2.x (`fm`) or FM 1.x (`fm1`): a message is `begin_message`/`send_piece`/`end_message`
/// (FM 1.x: `send1`); the receiving handler puts it in the next posted buffer (FM 2.x:
/// `receive` straight into it; FM 1.x: a copy out of the staged message).
pub struct FmLayer {
    pub fm: fm_streams::Fm<AnyNic>,
    sink: SharedSink,
    fm1: bool,
}

const FM_HANDLER: u32 = 7;

impl FmLayer {
    pub fn new(nic: AnyNic, fm1: bool) -> Self {
        let mut fm = fm_streams::Fm::new(nic).expect("FM init");
        let sink: SharedSink = Default::default();
        let s = sink.clone();
        if fm1 {
            fm.set_handler1(FM_HANDLER, move |_src, data| {
                let mut sink = s.borrow_mut();
                let Some((ptr, cap)) = sink.targets.pop_front() else {
                    let mut early = sink.spare.pop().unwrap_or_default();
                    early.clear();
                    early.extend_from_slice(data);
                    sink.early.push_back(early);
                    sink.early_count += 1;
                    return;
                };
                assert!(data.len() <= cap, "message longer than its buffer");
                // SAFETY: the target is a live buffer of `cap` bytes posted by `recv` or
                // `stream_recv`, which wait for this handler before touching it again.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
                sink.done += 1;
            })
            .unwrap();
        } else {
            fm.set_handler(FM_HANDLER, move |stream| {
                let len = stream.size() as usize;
                let target = s.borrow_mut().targets.pop_front();
                let Some((ptr, cap)) = target else {
                    let mut early = s.borrow_mut().spare.pop().unwrap_or_default();
                    early.resize(len, 0);
                    stream.receive(&mut early);
                    let mut sink = s.borrow_mut();
                    sink.early_count += 1;
                    // A buffer may have been posted while this handler was suspended: the
                    // message is then no longer early.
                    if let Some((ptr, cap)) = sink.targets.pop_front() {
                        assert!(len <= cap, "message longer than its buffer");
                        // SAFETY: as below.
                        unsafe { std::ptr::copy_nonoverlapping(early.as_ptr(), ptr, len) };
                        sink.spare.push(early);
                        sink.done += 1;
                    } else {
                        sink.early.push_back(early);
                    }
                    return;
                };
                assert!(len <= cap, "message longer than its buffer");
                // SAFETY: as above; the RefCell borrow is released before `receive` may suspend.
                let dst = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
                stream.receive(dst);
                s.borrow_mut().done += 1;
            })
            .unwrap();
        }
        FmLayer { fm, sink, fm1 }
    }

    fn peer(&self) -> usize {
        1 - self.fm.rank()
    }

    fn send_one(&mut self, buf: &[u8]) {
        let peer = self.peer();
        if self.fm1 {
            self.fm.send1(peer, FM_HANDLER, buf).expect("FM send");
        } else {
            let mut s = self.fm.begin_message(peer, buf.len() as u64, FM_HANDLER).expect("begin_message");
            self.fm.send_piece(&mut s, buf).expect("send_piece");
            self.fm.end_message(s).expect("end_message");
        }
    }

    /// Extracts until `n` more messages have been handled, with a budget of one packet per
    /// call while one message is awaited (the receiver paces itself to what it expects).
    fn await_messages(&mut self, n: usize) {
        let want = self.sink.borrow().done + n;
        let budget = if n == 1 { 1 } else { usize::MAX };
        let mut backoff = Backoff::new();
        while self.sink.borrow().done < want {
            if self.fm.extract(budget).expect("extract") > 0 {
                backoff.reset();
            } else if backoff.snooze() {
                assert!(self.fm.bip().device().peer_status(self.peer()) != nic_model::PeerStatus::Dead, "peer died");
            }
        }
    }
}

impl Transport for FmLayer {
    fn rank(&self) -> usize {
        self.fm.rank()
    }

    #[inline]
    fn send(&mut self, buf: &[u8]) {
        self.send_one(buf);
    }

    #[inline]
    fn recv(&mut self, buf: &mut [u8]) {
        let early = self.sink.borrow_mut().early.pop_front();
        if let Some(m) = early {
            buf[..m.len()].copy_from_slice(&m);
            self.sink.borrow_mut().spare.push(m);
            return;
        }
        self.sink.borrow_mut().targets.push_back((buf.as_mut_ptr(), buf.len()));
        self.await_messages(1);
    }

    fn stream_send(&mut self, buf: &[u8], count: usize, _window: usize) {
        for _ in 0..count {
            self.send_one(buf);
        }
    }

    fn stream_recv(&mut self, bufs: &mut [Vec<u8>], count: usize, _window: usize) {
        let k = bufs.len();
        let mut first = 0;
        while first < count {
            let Some(m) = self.sink.borrow_mut().early.pop_front() else { break };
            bufs[first % k][..m.len()].copy_from_slice(&m);
            self.sink.borrow_mut().spare.push(m);
            first += 1;
        }
        {
            let mut sink = self.sink.borrow_mut();
            for i in first..count {
                let b = &mut bufs[i % k];
                sink.targets.push_back((b.as_mut_ptr(), b.len()));
            }
        }
        self.await_messages(count - first);
    }

    fn counters(&self) -> serde_json::Value {
        let f = self.fm.counters();
        let c = self.fm.bip().counters();
        serde_json::json!({
            "nic": serde_json::to_value(self.fm.bip().device().counters()).unwrap(),
            "bip": { "messages_sent": c.messages_sent, "messages_received": c.messages_received, "copies": c.copies, "bytes_copied": c.bytes_copied,
                     "rendezvous_single_copy": c.rendezvous_single_copy, "rendezvous_packets": c.rendezvous_packets, "credit_waits": c.credit_waits },
            "early_messages": self.sink.borrow().early_count,
            "fm": { "messages_sent": f.messages_sent, "messages_received": f.messages_received, "packets_sent": f.packets_sent,
                    "packets_received": f.packets_received, "bulk_direct": f.bulk_direct, "bulk_staged": f.bulk_staged,
                    "suspensions": f.suspensions, "bytes_copied": f.bytes_copied },
        })
    }

    fn finish(self: Box<Self>) {
        let me = *self;
        me.fm.finalize().expect("FM finalize");
    }
}
