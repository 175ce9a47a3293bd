//! The target side of a window: requests arrive, wait for what follows them, and are applied
//! to the window's memory in the order each origin sent them.
//!
//! ```text
//!   request receive (any source) ──▶ Incoming, queued per origin
//!        queue front: post the follow-up receive (type, then data) ──▶ ready ──▶ apply
//!          Put: unpack into the window (a long contiguous put landed there already)
//!          Get: send the data back (straight from the window when it is one block)
//!          Accumulate / Get_accumulate / Compare_and_swap: old data back, then combine
//!          Lock / Unlock / Flush / Complete: the lock table, acknowledgements, PSCW counts
//! ```
//!
//! One origin's requests are applied strictly in order, and a request is applied whole
//! before the next: a flush is acknowledged only after everything before it is in place. An
//! unlock or complete also waits until the replies sent from window memory (long gets, read
//! by the origin from the window itself) are done, so that no other origin's epoch begins
//! while they are read.
//! Requests of different origins interleave only between requests, and the progress engine
//! runs one request at a time, so every accumulate is atomic against every other (MPI's
//! guarantee, per basic element, is met for whole requests).

use super::incoming::{Incoming, Stage};
use super::state::{Memory, WinState};
use super::wire::{reply_tag, Action, Control, Say, FLAG_DATA_INLINE, TAG_FOLLOW};
use crate::abi::*;
use crate::datatype::Datatype;
use crate::op::Reduction;
use mpich_channel::{Adi, Result, SendMode};
use std::sync::Arc;

/// The bytes `count` elements of `ty` placed at `offset` reach, relative to the window
/// (lowest, one past the highest); `None` when they overflow.
pub(super) fn span(ty: &Datatype, offset: i128, count: usize) -> Option<(i128, i128)> {
    if count == 0 || ty.size() == 0 {
        return Some((offset, offset));
    }
    let ext = ty.extent() as i128;
    let last = (count as i128 - 1) * ext;
    let lo = offset + ty.true_lb() as i128 + last.min(0);
    let hi = offset + ty.true_lb() as i128 + ty.true_extent() as i128 + last.max(0);
    Some((lo, hi))
}

impl WinState {
    /// Queues an arrived request of origin `src` and moves that origin's queue on.
    pub(super) fn arrived(&mut self, adi: &mut Adi, src: usize, msg: &[u8]) -> Result<()> {
        match Incoming::parse(msg) {
            Some(inc) => {
                self.incoming[src].push_back(inc);
                self.queued += 1;
                self.advance(adi, src)
            }
            None => {
                tracing::warn!(
                    src,
                    len = msg.len(),
                    "a one-sided request that does not parse was dropped"
                );
                self.note_error(src, MPI_ERR_INTERN);
                Ok(())
            }
        }
    }

    /// Moves every origin's queue on (follow-ups that arrived). `true` if anything happened.
    pub(super) fn advance_all(&mut self, adi: &mut Adi) -> Result<bool> {
        let mut any = false;
        for src in 0..self.incoming.len() {
            if self.incoming[src].is_empty() {
                continue;
            }
            let before = self.incoming[src].len();
            self.advance(adi, src)?;
            any |= self.incoming[src].len() != before;
        }
        Ok(any)
    }

    /// Applies origin `src`'s requests in order as far as their follow-ups have arrived.
    fn advance(&mut self, adi: &mut Adi, src: usize) -> Result<()> {
        self.post_ahead(adi, src)?;
        loop {
            let Some(front) = self.incoming[src].front_mut() else {
                return Ok(());
            };
            if let Some(id) = front.wait {
                let Some(status) = adi.take(id)? else {
                    return Ok(());
                };
                front.wait = None;
                match front.stage {
                    Stage::NeedType => {
                        front.ty = Datatype::decode(&front.data).map(Arc::new);
                        front.data.clear();
                        front.stage =
                            if front.req.data_len > 0 && front.req.flags & FLAG_DATA_INLINE == 0 {
                                Stage::NeedData
                            } else {
                                Stage::Ready
                            };
                    }
                    Stage::NeedData => {
                        if status.len as u64 != front.req.data_len {
                            front.ty = None; // applied as a failure below
                        }
                        front.stage = Stage::Ready;
                    }
                    Stage::Ready => {}
                }
                continue;
            }
            match front.stage {
                Stage::NeedType => {
                    front.data = vec![0u8; front.req.type_len as usize];
                    let (ptr, len) = (front.data.as_mut_ptr(), front.data.len());
                    let from = self.ranks[src] as i32;
                    // SAFETY: the buffer is the request's own and lives in the queue until
                    // the receive completes (the entry is not removed while `wait` is set).
                    front.wait = Some(unsafe {
                        adi.irecv(ptr, len, from, TAG_FOLLOW, self.ctx, self.owner)
                    }?);
                }
                Stage::NeedData => self.post_data(adi, src, 0)?,
                Stage::Ready => {
                    // An epoch ends (unlock, PSCW complete) only once the origin has read the
                    // replies sent from window memory: releasing the lock earlier would let
                    // the next holder write bytes the origin is still reading.
                    let ends_epoch = matches!(front.req.action, Action::Unlock | Action::Complete);
                    if ends_epoch && self.window_sends_to(src) {
                        return Ok(());
                    }
                    let inc = self.incoming[src].pop_front().unwrap();
                    self.queued -= 1;
                    self.apply(adi, src, inc)?;
                }
            }
        }
    }

    /// Posts the receive of the data of origin `src`'s queued request `i` (its type known).
    fn post_data(&mut self, adi: &mut Adi, src: usize, i: usize) -> Result<()> {
        let landing = self.data_landing(src, i);
        let inc = &mut self.incoming[src][i];
        let (ptr, len) = match landing {
            Some(p) => {
                inc.landed_in_window = true;
                (p, inc.req.data_len as usize)
            }
            None => {
                inc.data = vec![0u8; inc.req.data_len as usize];
                (inc.data.as_mut_ptr(), inc.data.len())
            }
        };
        let from = self.ranks[src] as i32;
        // SAFETY: the landing is either the request's own buffer (its heap block kept in the
        // queue until the receive completes: the entry is not removed while `wait` is set)
        // or the window memory the request targets, checked to lie in the window
        // (`data_landing`).
        inc.wait = Some(unsafe { adi.irecv(ptr, len, from, TAG_FOLLOW, self.ctx, self.owner) }?);
        Ok(())
    }

    /// Posts the data receives of the requests queued behind the front whose type is known,
    /// in order, as far as every request before them has all its follow-ups posted: the
    /// origin's long puts then move at once (each is BIP's rendezvous, read by this process
    /// from the origin's buffer), as a window of point-to-point receives does, instead of one
    /// after the other as each reaches the front. Follow-ups of one origin match in the order
    /// they were sent, which the order of posting keeps. A put's data may land in the window
    /// before the requests ahead of it are applied: only an access that conflicts with it
    /// (erroneous in MPI) could tell.
    fn post_ahead(&mut self, adi: &mut Adi, src: usize) -> Result<()> {
        for i in 0..self.incoming[src].len() {
            let inc = &self.incoming[src][i];
            match (inc.stage, inc.wait.is_some()) {
                // Everything of it is in, or its last follow-up is posted.
                (Stage::Ready, _) | (Stage::NeedData, true) => continue,
                (Stage::NeedData, false) => self.post_data(adi, src, i)?,
                // A type still to come holds back what follows.
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Where a put's data can land straight in the window: one block of the target type,
    /// inside the window. `None`: it lands in a staging buffer.
    fn data_landing(&self, src: usize, i: usize) -> Option<*mut u8> {
        let inc = self.incoming[src].get(i)?;
        if inc.req.action != Action::Put {
            return None;
        }
        let ty = inc.ty.as_ref()?;
        let count = inc.req.count as usize;
        if !ty.is_one_block(count) || (count * ty.size()) as u64 != inc.req.data_len {
            return None;
        }
        let base = self.target_address(inc.req.offset, ty, count).ok()?;
        Some(base.wrapping_offset(ty.runs().first()?.offset))
    }

    /// The address of the target of `count` elements of `ty` at `offset`, if they lie inside
    /// the window (a dynamic window: inside one attached region), else the error class.
    pub(super) fn target_address(
        &self,
        offset: u64,
        ty: &Datatype,
        count: usize,
    ) -> std::result::Result<*mut u8, i32> {
        match &self.memory {
            Memory::Static { base, size } => {
                let (lo, hi) = span(ty, offset as i128, count).ok_or(MPI_ERR_RMA_RANGE)?;
                if lo < 0 || hi > *size as i128 {
                    return Err(MPI_ERR_RMA_RANGE);
                }
                Ok((*base as *mut u8).wrapping_add(offset as usize))
            }
            Memory::Dynamic { regions } => {
                let (lo, hi) = span(ty, offset as i128, count).ok_or(MPI_ERR_RMA_RANGE)?;
                if lo == hi {
                    return Ok(offset as usize as *mut u8);
                }
                let inside = regions
                    .iter()
                    .any(|&(b, l)| lo >= b as i128 && hi <= b as i128 + l as i128);
                if inside {
                    Ok(offset as usize as *mut u8)
                } else {
                    Err(MPI_ERR_RMA_RANGE)
                }
            }
        }
    }

    /// Records the first failure of origin `src`'s requests; its next acknowledgement says it.
    fn note_error(&mut self, src: usize, class: i32) {
        if self.errors[src] == 0 {
            self.errors[src] = class;
        }
    }

    /// Applies one request of origin `src`.
    fn apply(&mut self, adi: &mut Adi, src: usize, inc: Incoming) -> Result<()> {
        let req = inc.req;
        match req.action {
            Action::Lock => {
                if self.lock.request(src, req.op) {
                    self.say(adi, src, Say::Granted, 0, 0)?;
                }
                Ok(())
            }
            Action::Unlock => {
                for o in self.lock.release(src) {
                    self.say(adi, o, Say::Granted, 0, 0)?;
                }
                let code = std::mem::take(&mut self.errors[src]);
                self.say(adi, src, Say::Done, code, req.id)
            }
            Action::Flush => {
                let code = std::mem::take(&mut self.errors[src]);
                self.say(adi, src, Say::Done, code, req.id)
            }
            Action::Complete => {
                self.completes[src] += 1;
                Ok(())
            }
            _ => self.apply_memory(adi, src, inc),
        }
    }

    /// Applies a request that reads or writes window memory; a failure is noted for the
    /// origin's next acknowledgement (and a reply it waits for comes back empty).
    fn apply_memory(&mut self, adi: &mut Adi, src: usize, inc: Incoming) -> Result<()> {
        let req = inc.req;
        let count = req.count as usize;
        let outcome = match &inc.ty {
            None => Err(MPI_ERR_TYPE),
            Some(ty) => self
                .target_address(req.offset, ty, count)
                .map(|addr| (ty.clone(), addr)),
        };
        let (ty, addr) = match outcome {
            Ok(v) => v,
            Err(class) => {
                self.note_error(src, class);
                if matches!(
                    req.action,
                    Action::Get | Action::GetAccumulate | Action::CompareAndSwap
                ) {
                    self.reply(adi, src, req.id, Reply::Owned(Vec::new()))?;
                }
                return Ok(());
            }
        };
        let bytes = count * ty.size();
        match req.action {
            Action::Put => {
                if !inc.landed_in_window {
                    // SAFETY: `addr` holds `count` elements of `ty` inside the window (checked
                    // by `target_address`); the data is the request's own buffer.
                    unsafe { ty.unpack(inc.data.as_ptr(), inc.data.len(), addr, count) };
                }
            }
            Action::Get => {
                let reply = if ty.is_one_block(count) {
                    let at = addr.wrapping_offset(ty.runs().first().map_or(0, |r| r.offset));
                    Reply::Window(at, bytes)
                } else {
                    Reply::Owned(pack(&ty, addr, count))
                };
                self.reply(adi, src, req.id, reply)?;
            }
            Action::Accumulate => {
                if let Err(class) = accumulate(&ty, req.op, &inc.data, addr, count) {
                    self.note_error(src, class);
                }
            }
            Action::GetAccumulate => {
                let old = pack(&ty, addr, count);
                if let Err(class) = accumulate(&ty, req.op, &inc.data, addr, count) {
                    self.note_error(src, class);
                }
                self.reply(adi, src, req.id, Reply::Owned(old))?;
            }
            Action::CompareAndSwap => {
                let old = pack(&ty, addr, count);
                let size = ty.size();
                if inc.data.len() == 2 * size && old[..] == inc.data[size..] {
                    // SAFETY: as for a put of one element.
                    unsafe { ty.unpack(inc.data.as_ptr(), size, addr, 1) };
                }
                self.reply(adi, src, req.id, Reply::Owned(old))?;
            }
            _ => unreachable!("only memory requests come here"),
        }
        Ok(())
    }

    /// Sends a control message to window rank `to` (to itself: counted at once).
    pub(super) fn say(
        &mut self,
        adi: &mut Adi,
        to: usize,
        say: Say,
        code: i32,
        id: u64,
    ) -> Result<()> {
        let c = Control { say, code, id };
        if to == self.me {
            self.heard(to, c);
            return Ok(());
        }
        let bytes = c.emit();
        let dest = self.ranks[to];
        if adi.send_now(
            &bytes,
            dest,
            super::wire::TAG_CONTROL,
            self.ctx,
            SendMode::Standard,
        )? {
            return Ok(());
        }
        let owned = bytes.to_vec();
        // SAFETY: the buffer moves into the list of sends in flight, which keeps it until the
        // send completes.
        let id = unsafe {
            adi.isend(
                owned.as_ptr(),
                owned.len(),
                dest,
                super::wire::TAG_CONTROL,
                self.ctx,
                SendMode::Standard,
                self.owner,
            )
        }?;
        self.sends.push(super::state::InFlight {
            req: id,
            target: to,
            _owned: Some(owned),
            flag: None,
            from_window: false,
        });
        Ok(())
    }

    /// Sends reply data for request `id` to origin `to`.
    fn reply(&mut self, adi: &mut Adi, to: usize, id: u64, reply: Reply) -> Result<()> {
        let from_window = matches!(reply, Reply::Window(..));
        let (ptr, len, owned) = match reply {
            Reply::Window(p, n) => (p.cast_const(), n, None),
            Reply::Owned(v) => (v.as_ptr(), v.len(), Some(v)),
        };
        let ptr = crate::cptr::nonnull_or_dangling(ptr);
        // SAFETY: the data is window memory (valid until the window is freed, which waits for
        // every send in flight) or a buffer kept in the list of sends in flight.
        let req = unsafe {
            adi.isend(
                ptr,
                len,
                self.ranks[to],
                reply_tag(id),
                self.ctx,
                SendMode::Standard,
                self.owner,
            )
        }?;
        self.sends.push(super::state::InFlight {
            req,
            target: to,
            _owned: owned,
            flag: None,
            from_window,
        });
        Ok(())
    }
}

/// What a reply sends.
enum Reply {
    /// One block of window memory.
    Window(*mut u8, usize),
    Owned(Vec<u8>),
}

/// The data of `count` elements of `ty` at `addr`, packed.
pub(super) fn pack(ty: &Datatype, addr: *const u8, count: usize) -> Vec<u8> {
    let mut out = vec![0u8; count * ty.size()];
    // SAFETY: `addr` holds `count` elements of `ty` (the caller checked the range); `out` has
    // room for their data.
    unsafe { ty.pack(addr, count, out.as_mut_ptr()) };
    out
}

/// Combines packed `data` into `count` elements of `ty` at `addr` with the predefined
/// operation `op` (`MPI_REPLACE` writes, `MPI_NO_OP` does nothing); the error class if `op`
/// is not defined on the type.
pub(super) fn accumulate(
    ty: &Arc<Datatype>,
    op: MPI_Op,
    data: &[u8],
    addr: *mut u8,
    count: usize,
) -> std::result::Result<(), i32> {
    if op == MPI_NO_OP || count == 0 || ty.size() == 0 {
        return Ok(());
    }
    if data.len() < count * ty.size() {
        return Err(MPI_ERR_TRUNCATE);
    }
    let r = Reduction::shipped(op, ty.clone()).map_err(|e| e.class)?;
    // The operand in the type's own layout, as the reduction reads both sides.
    let (lo, hi) = span(ty, 0, count).ok_or(MPI_ERR_RMA_RANGE)?;
    let mut room = vec![0u128; ((hi - lo) as usize).div_ceil(16)];
    let base = room
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_offset(-(lo as isize));
    // SAFETY: `room` spans the elements' bytes from `base` (their lowest byte is `lo`); the
    // data holds their packed bytes; `addr` holds `count` elements inside the window.
    unsafe {
        ty.unpack(data.as_ptr(), data.len(), base, count);
        r.apply(base, addr, count).map_err(|e| e.class)
    }
}
