//! The layers under test, each behind the same small interface so that every layer is
//! measured by exactly the same code.
//!
//! Counters ([`Transport::counters`]) have one shape for every layer, the shape the MPI
//! library's `MPI_COUNTERS` dump also has (see `mpich_channel::adi::AdiCounters`), so the
//! report reads all seven layers the same way: `{"nic": {...}, "bip": {...}, "fm": {...},
//! "layer": {"copies", "bytes_copied"}}` (absent layers omitted; `layer` is what the
//! benchmark's side of the layer copied itself: the raw NIC layer's packet copies, FM's
//! handler copies into the posted buffers).

use bip_core::{Bip, BipConfig, Request};
use nic_model::wait::Backoff;
use nic_model::{Device, DeviceStack};

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
    /// Both ways at once: sends `count` messages of `out.len()` bytes to the peer while
    /// receiving the peer's `count` into the buffers of `bufs` in turn (both ranks call it).
    fn exchange(&mut self, out: &[u8], bufs: &mut [Vec<u8>], count: usize, window: usize);
    /// What the layer counted (JSON object).
    fn counters(&self) -> serde_json::Value;
    fn finish(self: Box<Self>);
}

/// The raw NIC: a message is a run of mtu-sized packets, copied into and out of the packet
/// buffers (an empty message is one empty packet).
pub struct NicLayer {
    pub nic: DeviceStack,
    mtu: usize,
    /// Copies into and out of packet buffers: (copies, bytes).
    copied: (u64, u64),
}

/// Bidirectional streaming over the raw NIC: where the next packet to send or receive is.
struct Cursor {
    message: usize,
    offset: usize,
}

impl NicLayer {
    pub fn new(nic: DeviceStack) -> Self {
        let mtu = nic.capabilities().mtu;
        NicLayer {
            nic,
            mtu,
            copied: (0, 0),
        }
    }

    /// Sends the next packet of `out` at `c` if the route has room; true if it did.
    fn try_send_packet(&mut self, peer: usize, out: &[u8], c: &mut Cursor) -> bool {
        let l = (out.len() - c.offset).min(self.mtu);
        let piece = &out[c.offset..c.offset + l];
        if !self.nic.send(peer, l, &mut |p| p.copy_from_slice(piece)) {
            return false;
        }
        self.count_copy(l);
        c.offset += l;
        if c.offset >= out.len() {
            c.message += 1;
            c.offset = 0;
        }
        true
    }

    /// Receives the next packet into message `c` (in `bufs` in turn) if one is there.
    fn try_recv_packet(&mut self, peer: usize, bufs: &mut [Vec<u8>], c: &mut Cursor) -> bool {
        let k = bufs.len();
        let buf = &mut bufs[c.message % k];
        let off = c.offset;
        let mut n = 0;
        if !self.nic.poll(&mut |src, p| {
            debug_assert_eq!(src, peer, "a two-rank job hears only its peer");
            buf[off..off + p.len()].copy_from_slice(p);
            n = p.len();
        }) {
            return false;
        }
        self.count_copy(n);
        c.offset += n;
        if c.offset >= buf.len() {
            c.message += 1;
            c.offset = 0;
        }
        true
    }

    #[inline]
    fn count_copy(&mut self, bytes: usize) {
        if bytes > 0 {
            self.copied.0 += 1;
            self.copied.1 += bytes as u64;
        }
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
            let piece = &buf[off..off + l];
            let mut backoff = Backoff::new();
            while !self.nic.send(peer, l, &mut |p| p.copy_from_slice(piece)) {
                // The device's own work while the layer above waits (a network device sends
                // what its queue holds; see `Device::progress`).
                self.nic.progress();
                backoff.snooze();
            }
            self.count_copy(l);
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
            let mut n = 0;
            while !self.nic.poll(&mut |src, p| {
                debug_assert_eq!(src, peer, "a two-rank job hears only its peer");
                buf[off..off + p.len()].copy_from_slice(p);
                n = p.len();
            }) {
                self.nic.progress();
                if backoff.snooze() {
                    assert!(
                        self.nic.peer_status(peer) != nic_model::PeerStatus::Dead,
                        "peer died"
                    );
                }
            }
            self.count_copy(n);
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

    fn exchange(&mut self, out: &[u8], bufs: &mut [Vec<u8>], count: usize, _window: usize) {
        let peer = self.peer();
        let (mut tx, mut rx) = (
            Cursor {
                message: 0,
                offset: 0,
            },
            Cursor {
                message: 0,
                offset: 0,
            },
        );
        let mut backoff = Backoff::new();
        // Sending and receiving in turn, a packet at a time: neither side may wait for room
        // to send while the other's packets fill its own receive ring.
        while tx.message < count || rx.message < count {
            let sent = tx.message < count && self.try_send_packet(peer, out, &mut tx);
            let got = rx.message < count && self.try_recv_packet(peer, bufs, &mut rx);
            if sent || got {
                backoff.reset();
                continue;
            }
            self.nic.progress();
            if backoff.snooze() {
                assert!(
                    self.nic.peer_status(peer) != nic_model::PeerStatus::Dead,
                    "peer died"
                );
            }
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "nic": serde_json::to_value(self.nic.counters()).unwrap(),
            "layer": { "copies": self.copied.0, "bytes_copied": self.copied.1 },
        })
    }

    fn finish(mut self: Box<Self>) {
        self.nic.finalize();
    }
}

/// BIP: blocking send and recv for latency, `isend`/`irecv` windows for streaming.
pub struct BipLayer {
    pub bip: Bip<DeviceStack>,
    tag: u32,
}

impl BipLayer {
    pub fn new(nic: DeviceStack) -> Self {
        BipLayer {
            bip: Bip::new(nic, BipConfig::from_env()).expect("BIP init"),
            tag: 1,
        }
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
                reqs.push(
                    unsafe { self.bip.isend(peer, self.tag, buf.as_ptr(), buf.len()) }
                        .expect("isend"),
                );
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
                reqs.push(
                    unsafe { self.bip.irecv(self.tag, b.as_mut_ptr(), b.len()) }.expect("irecv"),
                );
            }
            for r in reqs.drain(..) {
                self.bip.wait(r).expect("wait recv");
            }
            got += w;
        }
    }

    fn exchange(&mut self, out: &[u8], bufs: &mut [Vec<u8>], count: usize, window: usize) {
        let peer = self.peer();
        let mut reqs: Vec<Request> = Vec::with_capacity(2 * window);
        let mut done = 0;
        while done < count {
            let w = window.min(count - done).min(bufs.len());
            // Receives first, so that long messages find their rendezvous posted.
            for b in bufs.iter_mut().take(w) {
                // SAFETY: each buffer is used by one request at a time and outlives it.
                reqs.push(
                    unsafe { self.bip.irecv(self.tag, b.as_mut_ptr(), b.len()) }.expect("irecv"),
                );
            }
            for _ in 0..w {
                // SAFETY: `out` outlives the requests, which are waited for below.
                reqs.push(
                    unsafe { self.bip.isend(peer, self.tag, out.as_ptr(), out.len()) }
                        .expect("isend"),
                );
            }
            for r in reqs.drain(..) {
                self.bip.wait(r).expect("wait");
            }
            done += w;
        }
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "nic": serde_json::to_value(self.bip.device().counters()).unwrap(),
            "bip": bip_json(&self.bip.counters()),
            "layer": { "copies": 0, "bytes_copied": 0 },
        })
    }

    fn finish(self: Box<Self>) {
        self.bip.finalize().expect("bip finalize");
    }
}

/// BIP's counters as JSON, named as the MPI library's `MPI_COUNTERS` dump names them.
fn bip_json(c: &bip_core::BipCounters) -> serde_json::Value {
    serde_json::json!({
        "messages_sent": c.messages_sent, "messages_received": c.messages_received,
        "copies": c.copies, "bytes_copied": c.bytes_copied,
        "rendezvous_single_copy": c.rendezvous_single_copy, "rendezvous_packets": c.rendezvous_packets,
        "credit_waits": c.credit_waits,
        "retransmits": c.retransmits, "rejected": c.rejected,
    })
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
    /// Copies made here: FM 1.x messages into the posted buffers, early messages out of
    /// their buffers: (copies, bytes).
    copied: (u64, u64),
    done: usize,
}

impl Sink {
    fn count_copy(&mut self, bytes: usize) {
        if bytes > 0 {
            self.copied.0 += 1;
            self.copied.1 += bytes as u64;
        }
    }
}

type SharedSink = std::rc::Rc<std::cell::RefCell<Sink>>;

/// FM 2.x (`fm`) or FM 1.x (`fm1`): a message is `begin_message`/`send_piece`/`end_message`
/// (FM 1.x: `send1`); the receiving handler puts it in the next posted buffer (FM 2.x:
/// `receive` straight into it; FM 1.x: a copy out of the staged message).
pub struct FmLayer {
    pub fm: fm_streams::Fm<DeviceStack>,
    sink: SharedSink,
    fm1: bool,
}

const FM_HANDLER: u32 = 7;

impl FmLayer {
    pub fn new(nic: DeviceStack, fm1: bool) -> Self {
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
                    sink.count_copy(data.len());
                    sink.early.push_back(early);
                    sink.early_count += 1;
                    return;
                };
                assert!(data.len() <= cap, "message longer than its buffer");
                // SAFETY: the target is a live buffer of `cap` bytes posted by `recv` or
                // `stream_recv`, which wait for this handler before touching it again.
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
                sink.count_copy(data.len());
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
                        sink.count_copy(len);
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
            let mut s = self
                .fm
                .begin_message(peer, buf.len() as u64, FM_HANDLER)
                .expect("begin_message");
            self.fm.send_piece(&mut s, buf).expect("send_piece");
            self.fm.end_message(s).expect("end_message");
        }
    }

    /// Extracts until `n` more messages have been handled, with a budget of one packet per
    /// call while one message is awaited (the receiver paces itself to what it expects).
    fn await_messages(&mut self, n: usize) {
        let want = self.sink.borrow().done + n;
        self.await_landed(want, n == 1);
    }

    /// Takes `n` messages into `bufs` in turn: those that arrived early are copied in now,
    /// buffers for the others are posted for the handler. Returns how many were posted.
    fn post_receives(&mut self, bufs: &mut [Vec<u8>], n: usize) -> usize {
        let k = bufs.len();
        let mut sink = self.sink.borrow_mut();
        let mut i = 0;
        while i < n {
            let Some(m) = sink.early.pop_front() else {
                break;
            };
            bufs[i % k][..m.len()].copy_from_slice(&m);
            sink.count_copy(m.len());
            sink.spare.push(m);
            i += 1;
        }
        let posted = n - i;
        for j in i..n {
            let b = &mut bufs[j % k];
            sink.targets.push_back((b.as_mut_ptr(), b.len()));
        }
        posted
    }

    /// Extracts until `want` messages in all have been handled (`one_packet`: one packet per
    /// extract call).
    fn await_landed(&mut self, want: usize, one_packet: bool) {
        let budget = if one_packet { 1 } else { usize::MAX };
        let mut backoff = Backoff::new();
        while self.sink.borrow().done < want {
            if self.fm.extract(budget).expect("extract") > 0 {
                backoff.reset();
            } else if backoff.snooze() {
                assert!(
                    self.fm.bip().device().peer_status(self.peer()) != nic_model::PeerStatus::Dead,
                    "peer died"
                );
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
            let mut sink = self.sink.borrow_mut();
            sink.count_copy(m.len());
            sink.spare.push(m);
            return;
        }
        self.sink
            .borrow_mut()
            .targets
            .push_back((buf.as_mut_ptr(), buf.len()));
        self.await_messages(1);
    }

    fn stream_send(&mut self, buf: &[u8], count: usize, _window: usize) {
        for _ in 0..count {
            self.send_one(buf);
        }
    }

    fn stream_recv(&mut self, bufs: &mut [Vec<u8>], count: usize, _window: usize) {
        let landed = self.sink.borrow().done;
        let posted = self.post_receives(bufs, count);
        self.await_landed(landed + posted, posted == 1);
    }

    fn exchange(&mut self, out: &[u8], bufs: &mut [Vec<u8>], count: usize, window: usize) {
        // A round: buffers for up to `window` of the peer's messages, then as many of this
        // side's (FM sends keep extracting while they wait, so the peer's messages land
        // meanwhile), then the rest of the peer's. Each buffer is posted again only once its
        // previous message has landed.
        let k = bufs.len().min(window).max(1);
        let mut done = 0;
        while done < count {
            let w = k.min(count - done);
            let landed = self.sink.borrow().done;
            let posted = self.post_receives(&mut bufs[..w], w);
            for _ in 0..w {
                self.send_one(out);
            }
            self.await_landed(landed + posted, false);
            done += w;
        }
    }

    fn counters(&self) -> serde_json::Value {
        let f = self.fm.counters();
        let sink = self.sink.borrow();
        serde_json::json!({
            "nic": serde_json::to_value(self.fm.bip().device().counters()).unwrap(),
            "bip": bip_json(&self.fm.bip().counters()),
            "fm": { "messages_sent": f.messages_sent, "messages_received": f.messages_received, "packets_sent": f.packets_sent,
                    "packets_received": f.packets_received, "bulk_direct": f.bulk_direct, "bulk_staged": f.bulk_staged,
                    "suspensions": f.suspensions, "bytes_copied": f.bytes_copied, "copies": f.copies,
                    "send_bytes_copied": f.send_bytes_copied },
            "layer": { "copies": sink.copied.0, "bytes_copied": sink.copied.1, "early_messages": sink.early_count },
        })
    }

    fn finish(self: Box<Self>) {
        let me = *self;
        me.fm.finalize().expect("FM finalize");
    }
}
