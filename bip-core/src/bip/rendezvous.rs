//! The stack's one rendezvous: long data moves from an exported region, read once by the
//! receiver, and the region is withdrawn when the receiver says it is done.
//!
//! ```text
//!   sender                                         receiver
//!   export(buf) ─▶ region key ── RTS(tag, len, key) ──▶ match (BIP's tag queue, or MPI's)
//!                                                       read_region(key) ── one copy ──┐
//!   withdraw region, send done ◀──── FIN(key) ───────── (split with the sender's core) ┘
//! ```
//!
//! BIP's own long messages run it with BIP's tag matching (`Owner::Own`). Layers above run it
//! with their own matching (`Owner::Upper`): they [`Bip::export`] a buffer and carry the key in
//! their own announcement (MPI's envelope, FM's bulk marker), the receiver [`Bip::pull`]s it,
//! and both learn of the end through [`Event`]s. Either way a long message is two packets on
//! the NIC, and nothing but the region's key crosses: a peer reads only what was exported, only
//! within its bounds, and only until the FIN.
//!
//! Where the receiver cannot read the sender's memory (the kernel refuses single copy, the
//! region is not published, or the device is unreliable and the data must cross its link
//! protocol), it asks the exporter for the bytes: GET, answered by DATA packets (or by
//! GET_REFUSED, for a key or a range the exporter never gave), then FIN as before.

use super::{Bip, Engine, SendWork};
use crate::error::{BipError, Result};
use crate::wire::{Header, Kind};
use nic_model::{Access, Device, NicError, Rank, RegionKey, Transfer, TransferId};
use std::collections::VecDeque;

/// Who is told when a rendezvous ends: a request of BIP's own, or a layer above by its token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Own(u32),
    Upper(u64),
}

/// The end of a rendezvous run for a layer above ([`Bip::export`], [`Bip::pull`]).
#[derive(Debug)]
pub enum Event {
    /// The read started by `pull` with this token is over: its bytes are in place, or it was
    /// refused (no such region, or bytes outside it) and nothing was written.
    Pulled { token: u64, result: Result<()> },
    /// The peer read the region exported with this token and said so: the buffer is the
    /// caller's again.
    Exported { token: u64 },
}

/// A region this process exported for a long message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Export {
    pub key: RegionKey,
    /// The peer the region was announced to, the only one whose FIN and GETs count.
    pub dest: Rank,
    pub len: usize,
    pub owner: Owner,
}

/// A read of a peer's region in flight: waiting for the exporter's part of a split copy, or for
/// the DATA of a GET.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Read {
    pub src: Rank,
    pub key: RegionKey,
    pub dst: *mut u8,
    /// Bytes read (at most the message's length).
    pub want: usize,
    /// The message's length, for the receive's status.
    pub total: usize,
    pub got: usize,
    pub owner: Owner,
    /// The device's transfer, when single copy is under way.
    pub transfer: Option<TransferId>,
}

/// What the rendezvous keeps.
#[derive(Default)]
pub(crate) struct Rendezvous {
    /// By the region's id (ids are small and reused).
    exports: Vec<Option<Export>>,
    pub live_exports: usize,
    /// Reads in flight, by read id (which GET and DATA packets carry).
    reads: Vec<Option<Read>>,
    pub live_reads: usize,
    /// Reads waiting for a device transfer (polled by progress).
    pub pending_transfers: usize,
    pub events: VecDeque<Event>,
}

impl Rendezvous {
    pub fn add_export(&mut self, e: Export) {
        let i = e.key.id as usize;
        if self.exports.len() <= i {
            self.exports.resize(i + 1, None);
        }
        self.exports[i] = Some(e);
        self.live_exports += 1;
    }

    /// The export `key` names, if it is live.
    pub fn export(&self, key: RegionKey) -> Option<Export> {
        self.exports
            .get(key.id as usize)
            .copied()
            .flatten()
            .filter(|e| e.key == key)
    }

    pub fn remove_export(&mut self, key: RegionKey) -> Option<Export> {
        let slot = self.exports.get_mut(key.id as usize)?;
        if slot.is_some_and(|e| e.key == key) {
            self.live_exports -= 1;
            return slot.take();
        }
        None
    }

    /// Every export (finalize withdraws those whose peer is gone).
    pub fn all_exports(&self) -> Vec<Export> {
        self.exports.iter().flatten().copied().collect()
    }

    pub fn add_read(&mut self, r: Read) -> u32 {
        let i = self
            .reads
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.reads.push(None);
                self.reads.len() - 1
            });
        if r.transfer.is_some() {
            self.pending_transfers += 1;
        }
        self.reads[i] = Some(r);
        self.live_reads += 1;
        i as u32
    }

    pub fn read_mut(&mut self, id: u32) -> Option<&mut Read> {
        self.reads.get_mut(id as usize).and_then(Option::as_mut)
    }

    pub fn take_read(&mut self, id: u32) -> Option<Read> {
        let r = self.reads.get_mut(id as usize)?.take()?;
        self.live_reads -= 1;
        if r.transfer.is_some() {
            self.pending_transfers -= 1;
        }
        Some(r)
    }

    /// Ids of the reads waiting for a device transfer.
    pub fn transfer_reads(&self) -> impl Iterator<Item = (u32, TransferId)> + '_ {
        self.reads
            .iter()
            .enumerate()
            .filter_map(|(i, r)| Some((i as u32, r.as_ref()?.transfer?)))
    }

    /// Reads from `src` still in flight (for waits that depend on it).
    pub fn reads_from(&self, src: Rank) -> usize {
        self.reads.iter().flatten().filter(|r| r.src == src).count()
    }
}

impl<D: Device> Bip<D> {
    /// Exports `len` bytes at `buf` as the region of a long message of a layer above, for
    /// `dest` to read ([`Bip::pull`] there, with the key returned, carried in the layer's own
    /// announcement). [`Event::Exported`] with `token` follows once `dest` has read it; the
    /// region is withdrawn then.
    ///
    /// # Safety
    /// The `len` bytes at `buf` stay valid and unmodified until that event, or until
    /// [`Bip::revoke`].
    pub unsafe fn export(
        &mut self,
        dest: Rank,
        buf: *const u8,
        len: usize,
        token: u64,
    ) -> Result<RegionKey> {
        self.e.check(dest, 0)?;
        // SAFETY: the caller's contract is passed on.
        unsafe { self.export_region(dest, buf, len, Owner::Upper(token)) }
    }

    /// # Safety
    /// As for [`Bip::export`].
    pub(super) unsafe fn export_region(
        &mut self,
        dest: Rank,
        buf: *const u8,
        len: usize,
        owner: Owner,
    ) -> Result<RegionKey> {
        // SAFETY: the caller's contract (the buffer lives until the FIN) is the device's.
        let key = unsafe { self.dev.register(buf as usize, len, Access::READ)? };
        self.e.rv.add_export(Export {
            key,
            dest,
            len,
            owner,
        });
        Ok(key)
    }

    /// Withdraws a region exported with [`Bip::export`] that its peer will not read (the
    /// message that announced it was cancelled). No event follows.
    pub fn revoke(&mut self, key: RegionKey) -> Result<()> {
        if self.e.rv.remove_export(key).is_none() {
            return Err(BipError::Refused {
                rank: self.e.rank,
                why: format!("{key} is not exported by this process"),
            });
        }
        self.dev.deregister(key)?;
        Ok(())
    }

    /// Reads `len` bytes of `src`'s region `key` into `dst`: the long message a layer above
    /// matched. [`Event::Pulled`] with `token` follows once the bytes are in place (or the read
    /// was refused), and `src` is told (FIN) so that it withdraws the region.
    ///
    /// # Safety
    /// `dst` is valid for `len` bytes of writing, and not otherwise accessed, until that event.
    pub unsafe fn pull(
        &mut self,
        src: Rank,
        key: RegionKey,
        dst: *mut u8,
        len: usize,
        token: u64,
    ) -> Result<()> {
        self.e.check(src, 0)?;
        let r = Read {
            src,
            key,
            dst,
            want: len,
            total: len,
            got: 0,
            owner: Owner::Upper(token),
            transfer: None,
        };
        // SAFETY: the caller's contract is passed on.
        unsafe { self.start_read(r)? };
        // The FIN (or GET) goes now, ahead of whatever the caller sends next.
        self.pump(src)?;
        Ok(())
    }

    /// The next rendezvous event for the layer above, if any.
    #[inline]
    pub fn next_event(&mut self) -> Option<Event> {
        self.e.rv.events.pop_front()
    }

    /// Starts reading a region: in one copy where the device can, else with a GET.
    ///
    /// # Safety
    /// `r.dst` is valid for `r.want` bytes of writing until the read ends.
    pub(super) unsafe fn start_read(&mut self, mut r: Read) -> Result<()> {
        let _span =
            tracing::debug_span!(target: "bip", "rendezvous", src = r.src, len = r.want).entered();
        if self.e.single_copy {
            // SAFETY: the caller's contract is passed on.
            match unsafe { self.dev.read_region(r.src, r.key, 0, r.dst, r.want) } {
                Ok(Transfer::Done) => {
                    self.e.counters.rendezvous_single_copy += 1;
                    self.e.read_done(r, Ok(()));
                    return Ok(());
                }
                Ok(Transfer::Pending(t)) => {
                    self.e.counters.rendezvous_single_copy += 1;
                    r.transfer = Some(t);
                    self.e.rv.add_read(r);
                    return Ok(());
                }
                Err(NicError::NoSingleCopy { .. }) => {}
                Err(NicError::RegionRefused { rank, why }) => {
                    self.e.read_done(r, Err(BipError::Refused { rank, why }));
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        }
        self.e.counters.rendezvous_packets += 1;
        if r.want == 0 {
            self.e.read_done(r, Ok(()));
            return Ok(());
        }
        let (src, key, want) = (r.src, r.key, r.want);
        let id = self.e.rv.add_read(r);
        let mut h = Header::new(Kind::Get);
        h.tag = id;
        h.len = want as u64;
        self.e.queue_ctrl_key(src, h, key);
        Ok(())
    }

    /// Finishes the reads whose device transfer completed.
    #[cold]
    pub(super) fn poll_transfers(&mut self) -> Result<bool> {
        let mut done = Vec::new();
        for (id, t) in self.e.rv.transfer_reads() {
            done.push((id, t));
        }
        let mut any = false;
        for (id, t) in done {
            let finished = match self.dev.poll_transfer(t) {
                Ok(f) => f.then_some(Ok(())),
                Err(NicError::RegionRefused { rank, why }) => {
                    Some(Err(BipError::Refused { rank, why }))
                }
                Err(e) => return Err(e.into()),
            };
            if let Some(result) = finished {
                let r = self.e.rv.take_read(id).expect("a read with a transfer");
                self.e.read_done(r, result);
                any = true;
            }
        }
        Ok(any)
    }

    /// The exporter's side of a GET: DATA from the region, or a refusal.
    pub(super) fn serve_get(
        &mut self,
        src: Rank,
        read: u32,
        key: RegionKey,
        offset: usize,
        len: usize,
    ) {
        let allowed = match (self.e.rv.export(key), self.dev.local_region(key)) {
            (Some(e), Ok(info)) if e.dest == src => info
                .check(offset, len, Access::READ)
                .map(|()| info.addr + offset),
            (Some(_), Ok(_)) => Err("the region was announced to another rank".to_string()),
            _ => Err("no such region is exported (never, or withdrawn)".to_string()),
        };
        match allowed {
            Ok(addr) => self.e.queue_send(
                src,
                SendWork::Data {
                    read,
                    key,
                    addr,
                    len,
                    offset: 0,
                },
            ),
            Err(why) => {
                tracing::debug!(target: "bip", src, %key, why, "GET refused");
                let mut h = Header::new(Kind::GetRefused);
                h.tag = read;
                self.e.queue_ctrl(src, h);
            }
        }
    }
}

impl Engine {
    /// A read ended: the exporter is told (FIN) if it succeeded, and the owner is completed.
    pub(super) fn read_done(&mut self, r: Read, result: Result<()>) {
        if result.is_ok() {
            let mut h = Header::new(Kind::Fin);
            h.tag = r.key.id;
            h.aux = r.key.key;
            self.queue_ctrl(r.src, h);
        }
        match r.owner {
            Owner::Own(req) => match result {
                Ok(()) => self.finish_recv(req, r.src, r.total),
                Err(e) => self.fail(req, e),
            },
            Owner::Upper(token) => {
                self.counters.messages_received += 1;
                self.rv.events.push_back(Event::Pulled { token, result });
            }
        }
    }

    /// A FIN from `src` for region `key`: the export is over.
    pub(super) fn on_fin(&mut self, src: Rank, key: RegionKey) -> Result<RegionKey> {
        match self.rv.export(key) {
            Some(e) if e.dest == src => {}
            _ => {
                return Err(BipError::Protocol {
                    src,
                    why: "FIN for a region it was not given",
                })
            }
        }
        let e = self.rv.remove_export(key).expect("checked above");
        self.counters.messages_sent += 1;
        match e.owner {
            Owner::Own(req) => self.finish_send(req, e.len),
            Owner::Upper(token) => self.rv.events.push_back(Event::Exported { token }),
        }
        Ok(key)
    }

    /// DATA for read `id` from `src`: `data` at byte `off`.
    pub(super) fn on_data(&mut self, src: Rank, id: u32, off: usize, data: &[u8]) -> Result<()> {
        let r = match self.rv.read_mut(id) {
            Some(r) if r.src == src && r.transfer.is_none() => r,
            _ => {
                return Err(BipError::Protocol {
                    src,
                    why: "data for an unknown read",
                })
            }
        };
        let n = data.len().min(r.want.saturating_sub(off));
        if n > 0 {
            // SAFETY: `off + n <= want`: inside the read's buffer, valid until the read ends.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), r.dst.add(off), n) };
            self.counters.copies += 1;
            self.counters.bytes_copied += n as u64;
        }
        r.got += data.len();
        if r.got >= r.want {
            let r = self.rv.take_read(id).expect("found above");
            self.read_done(r, Ok(()));
        }
        Ok(())
    }

    /// The exporter refused GET `id`.
    pub(super) fn on_get_refused(&mut self, src: Rank, id: u32) -> Result<()> {
        match self.rv.read_mut(id) {
            Some(r) if r.src == src => {}
            _ => {
                return Err(BipError::Protocol {
                    src,
                    why: "refusal of an unknown read",
                })
            }
        }
        let r = self.rv.take_read(id).expect("found above");
        let why = format!(
            "{} was not exported to this rank, or not for these bytes",
            r.key
        );
        self.read_done(r, Err(BipError::Refused { rank: src, why }));
        Ok(())
    }
}
