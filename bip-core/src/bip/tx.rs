//! The send side: the one-packet fast path, the send queues, packet emission, and (over an
//! unreliable device) the link's timers and resends.

use super::{Bip, Ctrl, Engine, SendWork};
use crate::config::ENVELOPE_COST;
use crate::error::{BipError, Result};
use crate::link::MAX_RETRIES;
use crate::wire::{checksum, Header, Kind, HEADER, LINK_HEADER};
use nic_model::{Device, Rank, RegionKey};

impl<D: Device> Bip<D> {
    /// The fast path of a send: a one-packet short message, with credit, nothing queued
    /// before it and room on the route, goes straight into a packet buffer. False if any of
    /// that does not hold (nothing was sent).
    #[inline]
    pub(super) fn try_send_now(&mut self, dest: Rank, tag: u32, buf: &[u8]) -> bool {
        self.try_send_now_gather(dest, tag, &[], buf)
    }

    /// As `try_send_now`, for a message given in two parts (`head` then `body`), gathered
    /// straight into the packet buffer.
    ///
    /// The common case (a reliable device, a message that fits one packet, enough credit,
    /// nothing queued for `dest`) is one combined test, then the packet; anything else goes
    /// out of line to `try_send_now_slow`.
    #[inline]
    pub(super) fn try_send_now_gather(
        &mut self,
        dest: Rank,
        tag: u32,
        head: &[u8],
        body: &[u8],
    ) -> bool {
        let e = &self.e;
        let peer = &e.peers[dest];
        let len = head.len() + body.len();
        if len <= e.fast_max
            && peer.credit >= len + ENVELOPE_COST
            && peer.sendq.is_empty()
            && peer.ctrl.is_empty()
            && e.reliable
        {
            self.put_eager(dest, tag, head, body)
        } else {
            self.try_send_now_slow(dest, tag, head, body)
        }
    }

    /// The fast path's packet: a whole short message, its EAGER header stored directly (no
    /// `Header` built), over a reliable device; the caller checked length, credit and queues.
    #[inline(always)]
    fn put_eager(&mut self, dest: Rank, tag: u32, head: &[u8], body: &[u8]) -> bool {
        let len = head.len() + body.len();
        let sent = self.dev.send(dest, HEADER + len, &mut |p| {
            Header::emit_eager(p, tag, len);
            let (a, b) = p[HEADER..].split_at_mut(head.len());
            a.copy_from_slice(head);
            b.copy_from_slice(body);
        });
        if sent {
            let e = &mut self.e;
            e.peers[dest].credit -= len + ENVELOPE_COST;
            e.counters.messages_sent += 1;
            e.counters.copies += 1;
            e.counters.bytes_copied += len as u64;
        }
        sent
    }

    /// The fast path's uncommon cases: control packets queued for `dest` go first (the
    /// message may follow if they all went), and over an unreliable device the packet goes
    /// through the link protocol. False when the message cannot go now.
    #[cold]
    #[inline(never)]
    fn try_send_now_slow(&mut self, dest: Rank, tag: u32, head: &[u8], body: &[u8]) -> bool {
        if !self.e.peers[dest].ctrl.is_empty() && !self.flush_ctrl(dest) {
            return false;
        }
        let e = &self.e;
        let peer = &e.peers[dest];
        let len = head.len() + body.len();
        if !(len <= e.fast_max && peer.sendq.is_empty() && peer.credit >= len + ENVELOPE_COST) {
            return false;
        }
        if !e.reliable {
            return self.try_send_now_link(dest, tag, head, body);
        }
        self.put_eager(dest, tag, head, body)
    }

    /// The fast path over an unreliable device: the packet goes through the link protocol
    /// (sequence number, checksum, a copy kept for resending), if its window is open.
    #[cold]
    fn try_send_now_link(&mut self, dest: Rank, tag: u32, head: &[u8], body: &[u8]) -> bool {
        let len = head.len() + body.len();
        let mut h = Header::new(Kind::Eager);
        h.tag = tag;
        h.len = len as u64;
        match self.emit_parts(dest, h, head, body) {
            Ok(true) => {
                self.e.peers[dest].credit -= len + ENVELOPE_COST;
                self.e.counters.messages_sent += 1;
                true
            }
            _ => false,
        }
    }

    /// Sends the control packets queued for `dest` (a FIN must not be overtaken by a message
    /// sent after the read it ends); false if some are still waiting for room.
    #[cold]
    fn flush_ctrl(&mut self, dest: Rank) -> bool {
        while let Some(c) = self.e.peers[dest].ctrl.front().copied() {
            let key = c.key.map(|k| k.emit());
            match self.emit(dest, c.h, key.as_ref().map_or(&[][..], |k| &k[..])) {
                Ok(true) => {
                    self.e.peers[dest].ctrl.pop_front();
                }
                _ => return false,
            }
        }
        true
    }

    /// Sends what waits for any peer. Every poll calls this: with nothing queued it is one
    /// test of a flag (see `Engine::tx_backlog`).
    #[inline]
    pub(super) fn pump_pending(&mut self) -> Result<bool> {
        if !self.e.tx_backlog {
            return Ok(false);
        }
        self.pump_backlog()
    }

    #[inline(never)]
    fn pump_backlog(&mut self) -> Result<bool> {
        let mut did = false;
        let mut left = false;
        for p in 0..self.e.n {
            let peer = &self.e.peers[p];
            if !peer.sendq.is_empty() || !peer.ctrl.is_empty() {
                did |= self.pump(p)?;
                let peer = &self.e.peers[p];
                left |= !peer.sendq.is_empty() || !peer.ctrl.is_empty();
            }
        }
        // A push made meanwhile (by `pump`'s own handlers) set the flag again; only a sweep
        // that left every queue empty clears it.
        if !left {
            self.e.tx_backlog = false;
        }
        Ok(did)
    }

    /// Sends what is queued for `dest`: control packets first, then messages in order, as far
    /// as the route's buffers and our credit allow.
    pub(super) fn pump(&mut self, dest: Rank) -> Result<bool> {
        let mut did = false;
        while let Some(c) = self.e.peers[dest].ctrl.front().copied() {
            let key = c.key.map(|k| k.emit());
            if !self.emit(dest, c.h, key.as_ref().map_or(&[][..], |k| &k[..]))? {
                return Ok(did);
            }
            self.e.peers[dest].ctrl.pop_front();
            did = true;
        }
        while let Some(work) = self.e.peers[dest].sendq.front_mut() {
            match *work {
                SendWork::Eager { req, offset } => {
                    let (tag, buf, len) = self.e.send_args(req);
                    let cost = len + ENVELOPE_COST;
                    if offset == 0 && self.e.peers[dest].credit < cost {
                        self.e.counters.credit_waits += 1;
                        break;
                    }
                    let psize = self.e.sizer.packet_size(len, self.e.max_payload);
                    let mut off = offset;
                    if off == 0 {
                        // The first packet carries the envelope (and is the one packet of an
                        // empty message); it takes the credit for the whole message.
                        let mut h = Header::new(Kind::Eager);
                        h.tag = tag;
                        h.len = len as u64;
                        let l = psize.min(len);
                        // SAFETY: the send buffer is valid for `len` bytes (isend's contract).
                        if !self.emit(dest, h, unsafe { std::slice::from_raw_parts(buf, l) })? {
                            break;
                        }
                        self.e.peers[dest].credit -= cost;
                        off = l;
                        did = true;
                    }
                    let mut h = Header::new(Kind::EagerCont);
                    h.tag = tag;
                    h.len = len as u64;
                    let reached = self.emit_pieces(dest, h, buf, len, off, psize)?;
                    did |= reached > off;
                    if reached < len {
                        if let Some(SendWork::Eager { offset, .. }) =
                            self.e.peers[dest].sendq.front_mut()
                        {
                            *offset = reached;
                        }
                        break;
                    }
                    self.e.peers[dest].sendq.pop_front();
                    self.e.counters.messages_sent += 1;
                    self.e.finish_send(req, len);
                }
                SendWork::Rts { tag, len, key } => {
                    let mut h = Header::new(Kind::Rts);
                    h.tag = tag;
                    h.len = len as u64;
                    if !self.emit(dest, h, &key.emit())? {
                        break;
                    }
                    self.e.peers[dest].sendq.pop_front();
                    did = true;
                }
                SendWork::Data {
                    read,
                    key,
                    addr,
                    len,
                    offset,
                } => {
                    if self.e.rv.export(key).is_none() {
                        // Withdrawn meanwhile (the reader misbehaved): its memory is not ours
                        // to send any more.
                        self.e.peers[dest].sendq.pop_front();
                        continue;
                    }
                    let psize = self.e.sizer.packet_size(len, self.e.max_payload);
                    let mut h = Header::new(Kind::Data);
                    h.tag = read;
                    h.len = len as u64;
                    let reached =
                        self.emit_pieces(dest, h, addr as *const u8, len, offset, psize)?;
                    did |= reached > offset;
                    if reached < len {
                        if let Some(SendWork::Data { offset, .. }) =
                            self.e.peers[dest].sendq.front_mut()
                        {
                            *offset = reached;
                        }
                        break;
                    }
                    self.e.peers[dest].sendq.pop_front();
                }
            }
        }
        Ok(did)
    }

    /// Sends bytes `off..len` of `buf` to `dest` in packets of `psize` bytes, each with header
    /// `h` and its offset in `aux`, as far as the route has room; returns the offset reached.
    fn emit_pieces(
        &mut self,
        dest: Rank,
        mut h: Header,
        buf: *const u8,
        len: usize,
        mut off: usize,
        psize: usize,
    ) -> Result<usize> {
        while off < len {
            let l = psize.min(len - off);
            h.aux = off as u64;
            // SAFETY: `off + l <= len`, and the buffer is valid for `len` bytes while this work
            // is queued (a send's until it completes, isend's contract; a region's until the
            // FIN, which its reader sends only after the last piece).
            let piece = unsafe { std::slice::from_raw_parts(buf.add(off), l) };
            if !self.emit(dest, h, piece)? {
                break;
            }
            off += l;
        }
        Ok(off)
    }

    /// Puts one packet on the route to `dest`; false if there is no room now.
    pub(super) fn emit(&mut self, dest: Rank, h: Header, payload: &[u8]) -> Result<bool> {
        self.emit_parts(dest, h, payload, &[])
    }

    /// Puts one packet, `h` then `a` then `b`, on the route to `dest`; false if there is no
    /// room now (or, over an unreliable device, the link's window is closed).
    fn emit_parts(&mut self, dest: Rank, mut h: Header, a: &[u8], b: &[u8]) -> Result<bool> {
        let payload = a.len() + b.len();
        if self.e.reliable {
            let sent = self.dev.send(dest, HEADER + payload, &mut |p| {
                h.emit(p);
                p[HEADER..HEADER + a.len()].copy_from_slice(a);
                p[HEADER + a.len()..].copy_from_slice(b);
            });
            if !sent {
                return Ok(false);
            }
        } else {
            let total = LINK_HEADER + payload;
            let link = self.e.peers[dest]
                .link
                .as_mut()
                .expect("link over an unreliable device");
            if !h.kind.is_link() && !link.window_open() {
                return Ok(false);
            }
            h.seq = if h.kind.is_link() { 0 } else { link.peek_seq() };
            let mut pkt = vec![0u8; total];
            h.emit_link(&mut pkt);
            pkt[LINK_HEADER..LINK_HEADER + a.len()].copy_from_slice(a);
            pkt[LINK_HEADER + a.len()..].copy_from_slice(b);
            let c = checksum(&pkt);
            pkt[28..32].copy_from_slice(&c.to_le_bytes());
            if !self.dev.send(dest, total, &mut |p| p.copy_from_slice(&pkt)) {
                return Ok(false);
            }
            if !h.kind.is_link() {
                link.sent(pkt);
            }
        }
        if payload > 0 {
            self.e.counters.copies += 1;
            self.e.counters.bytes_copied += payload as u64;
        }
        Ok(true)
    }

    /// Over an unreliable device: resends on timeout and sends due acknowledgements.
    pub(super) fn link_timers(&mut self) -> Result<bool> {
        let mut did = false;
        for p in 0..self.e.n {
            let link = self.e.peers[p].link.as_mut().unwrap();
            if link.timed_out() {
                if link.retries > MAX_RETRIES {
                    return Err(BipError::LinkFailed {
                        peer: p,
                        retries: link.retries,
                    });
                }
                did |= self.resend(p);
            }
            if let Some(from) = self.e.peers[p].nack_due {
                let mut h = Header::new(Kind::Nack);
                h.len = from as u64;
                if self.emit(p, h, &[])? {
                    self.e.peers[p].nack_due = None;
                }
            }
            let link = self.e.peers[p].link.as_mut().unwrap();
            if link.ack_due || (link.ack_pending() && !did) {
                let mut h = Header::new(Kind::Ack);
                h.len = link.take_ack() as u64;
                if !self.emit(p, h, &[])? {
                    self.e.peers[p].link.as_mut().unwrap().ack_due = true;
                }
            }
        }
        Ok(did)
    }

    /// Go-back-N: resends every unacknowledged packet to `p`, oldest first, as far as the
    /// route has room.
    fn resend(&mut self, p: Rank) -> bool {
        let link = self.e.peers[p].link.as_ref().unwrap();
        let mut sent = 0;
        for (_, pkt) in link.unacked.iter() {
            if !self.dev.send(p, pkt.len(), &mut |b| b.copy_from_slice(pkt)) {
                break;
            }
            sent += 1;
        }
        self.e.counters.retransmits += sent;
        sent > 0
    }
}

impl Engine {
    /// Queues a control packet for `dest` (sent by the next pump).
    #[inline]
    pub(super) fn queue_ctrl(&mut self, dest: Rank, h: Header) {
        self.peers[dest].ctrl.push_back(Ctrl { h, key: None });
        self.tx_backlog = true;
        self.ctrl_due = true;
    }

    /// Queues a control packet whose payload is a region's key.
    pub(super) fn queue_ctrl_key(&mut self, dest: Rank, h: Header, key: RegionKey) {
        self.peers[dest].ctrl.push_back(Ctrl { h, key: Some(key) });
        self.tx_backlog = true;
        self.ctrl_due = true;
    }

    /// Queues send work for `dest`.
    #[inline]
    pub(super) fn queue_send(&mut self, dest: Rank, work: SendWork) {
        self.peers[dest].sendq.push_back(work);
        self.tx_backlog = true;
    }
}
