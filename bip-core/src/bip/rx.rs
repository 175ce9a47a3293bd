//! The receive side: what happens to each arrived packet, matching against posted receives,
//! buffering of unexpected messages, and the credit returned for them.

use super::{Assembly, Deferred, Engine, Owner, Polled, Read, Target};
use crate::config::ENVELOPE_COST;
use crate::error::{BipError, Result};
use crate::link::Verdict;
use crate::queues::{Body, Unexpected};
use crate::request::{Completion, Op, State};
use crate::wire::{checksum, whole_eager, whole_eager_any, Header, Kind, HEADER, LINK_HEADER};
use nic_model::{Rank, RegionKey};

impl Engine {
    /// Gives back buffer credit for a consumed short message of `len` bytes from `src`.
    pub(super) fn return_credit(&mut self, src: Rank, len: usize) {
        let p = &mut self.peers[src];
        p.owed += len + ENVELOPE_COST;
        if p.owed >= self.grant / 2 {
            let mut h = Header::new(Kind::Credit);
            h.len = p.owed as u64;
            p.owed = 0;
            self.queue_ctrl(src, h);
        }
    }

    /// A receive was posted and the oldest unexpected message of its tag matches it.
    pub(super) fn match_unexpected(&mut self, req: u32, u: Unexpected) {
        match u.body {
            Body::Short { data, total } => {
                self.counters.buffer(-(total as i64));
                self.deposit(req, 0, &data);
                if data.len() == total {
                    self.finish_recv(req, u.src, total);
                    self.return_credit(u.src, total);
                } else {
                    // Still arriving: the rest goes straight to the user's buffer.
                    if let Some(Op::Recv {
                        src, total: t, got, ..
                    }) = self.reqs.by_id(req).map(|e| &mut e.op)
                    {
                        *src = u.src;
                        *t = total;
                        *got = data.len();
                    }
                    let a = self.peers[u.src]
                        .assembling
                        .as_mut()
                        .expect("partial message is being assembled");
                    a.target = Target::Req(req);
                }
            }
            Body::Rts { len, key } => self.defer_read(req, u.src, len, key),
        }
    }

    /// A receive matched a long message of `len` bytes in `src`'s region `key`: reads as
    /// much of it as the receive holds, once the packet that said so is released.
    fn defer_read(&mut self, req: u32, src: Rank, len: usize, key: RegionKey) {
        let (buf, cap) = self.recv_buf(req);
        if let Some(Op::Recv { src: s, total, .. }) = self.reqs.by_id(req).map(|e| &mut e.op) {
            *s = src;
            *total = len;
        }
        let read = Read {
            src,
            key,
            dst: buf,
            want: len.min(cap),
            total: len,
            got: 0,
            owner: Owner::Own(req),
            transfer: None,
        };
        self.deferred.push(Deferred::Read(read));
    }

    /// Copies `data` into the buffer of receive `req` at byte `off`, keeping what fits (the
    /// rest of a truncated message is dropped; `finish_recv` reports the truncation).
    #[inline]
    fn deposit(&mut self, req: u32, off: usize, data: &[u8]) {
        let (buf, cap) = self.recv_buf(req);
        if off < cap {
            let n = data.len().min(cap - off);
            // SAFETY: `off + n <= cap`: inside the receive buffer, valid for `cap` bytes until
            // the request completes (irecv's contract).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.add(off), n) };
            self.counters.copies += 1;
            self.counters.bytes_copied += n as u64;
        }
    }

    pub(super) fn recv_buf(&mut self, req: u32) -> (*mut u8, usize) {
        match self.reqs.by_id(req).expect("live receive").op {
            Op::Recv { buf, cap, .. } => (buf, cap),
            Op::Send { .. } => unreachable!(),
        }
    }

    /// Handles a packet that arrived while a blocking `recv` on `tag` (with nothing queued on
    /// that tag, over a reliable device) polls: a complete one-packet short message for `tag`
    /// is copied straight into the caller's buffer; a packet that starts any other message for
    /// `tag` first gets a real receive posted, then the general handling; everything else goes
    /// to the general handling.
    #[inline]
    pub(super) fn on_packet_for_recv(
        &mut self,
        src: Rank,
        pkt: &[u8],
        tag: u32,
        buf: *mut u8,
        cap: usize,
    ) -> Result<Polled> {
        if let Some(data) = whole_eager(pkt, tag) {
            let n = data.len().min(cap);
            // SAFETY: `buf` is the caller's `&mut [u8]` of `cap` bytes, borrowed for the call.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
            self.counters.copies += 1;
            self.counters.bytes_copied += n as u64;
            self.counters.messages_received += 1;
            self.return_credit(src, data.len());
            if data.len() > cap {
                return Err(BipError::Truncated {
                    len: data.len(),
                    capacity: cap,
                    from: src,
                });
            }
            return Ok(Polled::Got(data.len()));
        }
        self.on_packet_for_recv_slow(src, pkt, tag, buf, cap)
    }

    /// `on_packet_for_recv` for anything but a whole short message for `tag`.
    #[inline(never)]
    fn on_packet_for_recv_slow(
        &mut self,
        src: Rank,
        pkt: &[u8],
        tag: u32,
        buf: *mut u8,
        cap: usize,
    ) -> Result<Polled> {
        let h = parse_header(src, pkt)?;
        let data = &pkt[HEADER..];
        if h.tag == tag && matches!(h.kind, Kind::Eager | Kind::Rts) {
            let r = self.reqs.alloc(Op::Recv {
                tag,
                buf,
                cap,
                src: 0,
                total: 0,
                got: 0,
            })?;
            self.tags[tag as usize].posted.push_back(r.idx);
            self.on_message_packet(src, h, data)?;
            return Ok(Polled::Posted(r));
        }
        self.on_message_packet(src, h, data)?;
        Ok(Polled::Other)
    }

    /// Handles a packet that arrived while `lend` polls queue `tag`: a whole one-packet short
    /// message of `tag` is lent to `f` in place; anything else gets the general handling.
    #[inline]
    pub(super) fn on_packet_for_lend<R, F: FnOnce(Rank, &[u8]) -> R>(
        &mut self,
        src: Rank,
        pkt: &[u8],
        tag: u32,
        f: &mut Option<F>,
    ) -> Result<Option<R>> {
        if let Some(data) = whole_eager(pkt, tag) {
            if let Some(f) = f.take() {
                self.counters.messages_received += 1;
                self.return_credit(src, data.len());
                return Ok(Some(f(src, data)));
            }
        }
        self.on_other_packet(src, pkt)?;
        Ok(None)
    }

    /// Anything but a whole short message for the tag `lend` or `recv` polls: decoded and
    /// handled in general, out of line.
    #[inline(never)]
    fn on_other_packet(&mut self, src: Rank, pkt: &[u8]) -> Result<()> {
        let h = parse_header(src, pkt)?;
        self.on_message_packet(src, h, &pkt[HEADER..])
    }

    /// Handles one arrived packet (still in the NIC's buffer).
    #[inline]
    pub(super) fn on_packet(&mut self, src: Rank, pkt: &[u8]) -> Result<()> {
        if !self.reliable {
            return self.on_unreliable_packet(src, pkt);
        }
        // The common packet, a whole short message that a posted receive waits for, without
        // decoding the header.
        if let Some((tag, data)) = whole_eager_any(pkt) {
            if let Some(req) = self
                .tags
                .get_mut(tag as usize)
                .and_then(|q| q.posted.pop_front())
            {
                self.receive_whole(req, src, data);
                return Ok(());
            }
        }
        self.on_other_packet(src, pkt)
    }

    /// A whole short message `data` from `src` for posted receive `req`: copied into its
    /// buffer (what fits), the receive completed, the credit returned; one look-up of the
    /// request (`deposit` then `finish_recv` in one).
    #[inline]
    fn receive_whole(&mut self, req: u32, src: Rank, data: &[u8]) {
        let entry = self.reqs.by_id(req).expect("live receive");
        let Op::Recv { tag, buf, cap, .. } = entry.op else {
            unreachable!("posted queue holds a send")
        };
        let n = data.len().min(cap);
        // SAFETY: `n <= cap`: inside the receive buffer, valid for `cap` bytes until the
        // request completes (irecv's contract).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf, n) };
        entry.state = if data.len() > cap {
            State::Failed(BipError::Truncated {
                len: data.len(),
                capacity: cap,
                from: src,
            })
        } else {
            State::Done(Completion {
                len: data.len(),
                peer: src,
                tag,
            })
        };
        if cap > 0 {
            self.counters.copies += 1;
            self.counters.bytes_copied += n as u64;
        }
        self.counters.messages_received += 1;
        self.return_credit(src, data.len());
    }

    fn on_unreliable_packet(&mut self, src: Rank, pkt: &[u8]) -> Result<()> {
        let link = self.peers[src].link.as_mut().unwrap();
        let good = pkt.len() >= LINK_HEADER
            && u32::from_le_bytes(pkt[28..32].try_into().unwrap()) == checksum(pkt);
        let h = if good { Header::parse_link(pkt) } else { None };
        let Some(h) = h else {
            self.counters.rejected += 1;
            if let Some(from) = link.on_corrupt() {
                self.push_nack(src, from);
            }
            return Ok(());
        };
        match h.kind {
            Kind::Ack => {
                link.on_ack(h.len as u32);
                Ok(())
            }
            Kind::Nack => {
                if link.on_nack(h.len as u32) {
                    // Resent from progress via the timer path: force it now.
                    self.deferred_resend(src);
                }
                Ok(())
            }
            _ => match link.classify(h.seq) {
                Verdict::Deliver => self.on_message_packet(src, h, &pkt[LINK_HEADER..]),
                Verdict::Duplicate => {
                    self.counters.rejected += 1;
                    Ok(())
                }
                Verdict::Gap { nack } => {
                    self.counters.rejected += 1;
                    if let Some(from) = nack {
                        self.push_nack(src, from);
                    }
                    Ok(())
                }
            },
        }
    }

    fn push_nack(&mut self, src: Rank, from: u32) {
        self.peers[src].nack_due = Some(from);
    }

    /// Marks the link to `p` as timed out so the next timer pass resends at once.
    fn deferred_resend(&mut self, p: Rank) {
        if let Some(l) = self.peers[p].link.as_mut() {
            l.force_resend();
        }
    }

    fn on_message_packet(&mut self, src: Rank, h: Header, data: &[u8]) -> Result<()> {
        match h.kind {
            Kind::Eager => {
                let tag = h.tag;
                if tag >= self.cfg.tags {
                    return Err(BipError::Protocol {
                        src,
                        why: "tag out of range",
                    });
                }
                let total = h.len as usize;
                let complete = data.len() >= total;
                if let Some(req) = self.tags[tag as usize].posted.pop_front() {
                    self.deposit(req, 0, data);
                    if complete {
                        self.finish_recv(req, src, total);
                        self.return_credit(src, total);
                    } else {
                        if let Some(Op::Recv {
                            src: s,
                            total: t,
                            got,
                            ..
                        }) = self.reqs.by_id(req).map(|e| &mut e.op)
                        {
                            *s = src;
                            *t = total;
                            *got = data.len();
                        }
                        self.peers[src].assembling = Some(Assembly {
                            target: Target::Req(req),
                            tag,
                            total,
                            got: data.len(),
                        });
                    }
                } else {
                    let mut buf = Vec::with_capacity(total);
                    buf.extend_from_slice(data);
                    self.counters.buffer(total as i64);
                    self.counters.copies += 1;
                    self.counters.bytes_copied += data.len() as u64;
                    let uid = self.next_uid;
                    self.next_uid += 1;
                    if !complete {
                        self.peers[src].assembling = Some(Assembly {
                            target: Target::Unexpected(uid),
                            tag,
                            total,
                            got: data.len(),
                        });
                    }
                    self.tags[tag as usize].unexpected.push_back(Unexpected {
                        uid,
                        src,
                        body: Body::Short { data: buf, total },
                    });
                }
            }
            Kind::EagerCont => {
                let Assembly {
                    target,
                    tag,
                    total,
                    got,
                } = self.peers[src].assembling.ok_or(BipError::Protocol {
                    src,
                    why: "continuation without a message",
                })?;
                if h.aux as usize != got {
                    return Err(BipError::Protocol {
                        src,
                        why: "continuation out of order",
                    });
                }
                let got = got + data.len();
                match target {
                    Target::Req(req) => {
                        self.deposit(req, h.aux as usize, data);
                        if got >= total {
                            self.finish_recv(req, src, total);
                            self.return_credit(src, total);
                        }
                    }
                    Target::Unexpected(uid) => {
                        let entry = self.tags[tag as usize]
                            .unexpected
                            .iter_mut()
                            .rev()
                            .find(|u| u.uid == uid)
                            .ok_or(BipError::Protocol {
                                src,
                                why: "lost partial message",
                            })?;
                        if let Body::Short { data: d, .. } = &mut entry.body {
                            d.extend_from_slice(data);
                        }
                        self.counters.copies += 1;
                        self.counters.bytes_copied += data.len() as u64;
                    }
                }
                self.peers[src].assembling = (got < total).then_some(Assembly {
                    target,
                    tag,
                    total,
                    got,
                });
            }
            Kind::Rts => {
                let tag = h.tag;
                if tag >= self.cfg.tags {
                    return Err(BipError::Protocol {
                        src,
                        why: "tag out of range",
                    });
                }
                let key = RegionKey::parse(data).ok_or(BipError::Protocol {
                    src,
                    why: "RTS without a region key",
                })?;
                let len = h.len as usize;
                if let Some(req) = self.tags[tag as usize].posted.pop_front() {
                    self.defer_read(req, src, len, key);
                } else {
                    let uid = self.next_uid;
                    self.next_uid += 1;
                    self.tags[tag as usize].unexpected.push_back(Unexpected {
                        uid,
                        src,
                        body: Body::Rts { len, key },
                    });
                }
            }
            Kind::Fin => {
                let key = RegionKey {
                    id: h.tag,
                    key: h.aux,
                };
                let key = self.on_fin(src, key)?;
                self.deferred.push(Deferred::Withdraw(key));
            }
            Kind::Data => self.on_data(src, h.tag, h.aux as usize, data)?,
            Kind::Credit => self.peers[src].credit += h.len as usize,
            Kind::Get => {
                let key = RegionKey::parse(data).ok_or(BipError::Protocol {
                    src,
                    why: "GET without a region key",
                })?;
                self.deferred.push(Deferred::Serve {
                    src,
                    read: h.tag,
                    key,
                    offset: h.aux as usize,
                    len: h.len as usize,
                });
            }
            Kind::GetRefused => self.on_get_refused(src, h.tag)?,
            Kind::Ack | Kind::Nack => {
                return Err(BipError::Protocol {
                    src,
                    why: "link packet over a reliable device",
                })
            }
        }
        Ok(())
    }
}

/// The header of a packet from `src` that the fast paths did not take: a protocol error if the
/// packet is too short for one or of an unknown kind.
fn parse_header(src: Rank, pkt: &[u8]) -> Result<Header> {
    Header::parse(pkt).ok_or(BipError::Protocol {
        src,
        why: "short or unknown packet",
    })
}
