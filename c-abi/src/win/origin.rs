//! The origin side of a window: turning a put, get, accumulate or compare-and-swap into a
//! request for its target (or doing it at once when the target is this process), and the
//! synchronization requests (lock, unlock, flush, complete).
//!
//! ```text
//!   put(origin buffer, target rank/offset/count/type)
//!     target is me ──▶ pack, then unpack into my window (target::accumulate for accumulates)
//!     otherwise   ──▶ [reply receive posted first, for gets]
//!                     request = header + target type + data, inline while it all fits
//!                     REQUEST_MAX; else the type and the data follow (TAG_FOLLOW), the data
//!                     sent straight from the program's buffer when it is one block
//! ```
//!
//! **The device's data path.** A put or get of at least the window's threshold of bytes, to a
//! target whose memory the device knows (`DeviceData`) in an epoch that lets this origin in
//! now, skips the request: a put is a deliberate update straight into the target's window
//! (per block of the target type: `device_blocks`), a get a read out of it. On one host each
//! block is one single-copy system call and needs nothing from the target; across hosts the
//! update is posted as frames that the target's device applies, in order, before the
//! packets sent after them, so the next flush's answer covers it (`unacked` is set), and a
//! read is a transfer polled by the window's progress (`DeviceGet`).
//!
//! Nothing here waits: completion is counted in the window's state (sends in flight, awaited
//! replies, answered flushes, device reads) and waited for by the synchronization calls.

use super::state::{Awaited, DeviceGet, InFlight, OpFlag, WinState};
use super::target::{accumulate, pack};
use super::wire::{
    reply_tag, Action, Request, FLAG_DATA_INLINE, FLAG_TYPE_INLINE, INLINE_TYPE_MAX, REQUEST_MAX,
    TAG_FOLLOW, TAG_REQUEST,
};
use crate::abi::*;
use crate::datatype::Datatype;
use crate::error::{MpiError, MpiResult};
use mpich_channel::{Adi, SendMode};
use std::rc::Rc;
use std::sync::Arc;

/// A buffer of the origin process: `count` elements of `ty` at `addr`.
pub(crate) struct Local<'a> {
    pub addr: *mut u8,
    pub count: usize,
    pub ty: &'a Arc<Datatype>,
}

impl Local<'_> {
    pub(super) fn bytes(&self) -> usize {
        self.count * self.ty.size()
    }

    /// The data's one block (address of its first byte), if it is one.
    fn block(&self) -> Option<*mut u8> {
        if self.ty.is_one_block(self.count) {
            let first = self.ty.runs().first().map_or(0, |r| r.offset);
            Some(self.addr.wrapping_offset(first))
        } else {
            None
        }
    }

    fn packed(&self) -> Vec<u8> {
        pack(self.ty, self.addr, self.count)
    }

    /// The data as a request sends it: straight from the program's memory when it is one
    /// block, else packed.
    fn outgoing(&self) -> Data<'static> {
        match self.block() {
            Some(p) => Data::User(p, self.bytes()),
            None => Data::Packed(self.packed()),
        }
    }
}

/// The target of an operation: window rank, byte offset in its window (an address in a
/// dynamic window), and `count` elements of `ty` there.
pub(crate) struct Access<'a> {
    pub target: usize,
    pub offset: u64,
    pub count: usize,
    pub ty: &'a Arc<Datatype>,
}

impl Access<'_> {
    pub(super) fn bytes(&self) -> usize {
        self.count * self.ty.size()
    }
}

/// What the origin sends along with a request.
enum Data<'a> {
    None,
    Packed(Vec<u8>),
    /// One block of the program's memory, valid until the operation completes locally.
    User(*const u8, usize),
    Slice(&'a [u8]),
}

impl Data<'_> {
    fn len(&self) -> usize {
        match self {
            Data::None => 0,
            Data::Packed(v) => v.len(),
            Data::User(_, n) => *n,
            Data::Slice(s) => s.len(),
        }
    }
    fn as_ptr(&self) -> *const u8 {
        match self {
            Data::None => std::ptr::null(),
            Data::Packed(v) => v.as_ptr(),
            Data::User(p, _) => *p,
            Data::Slice(s) => s.as_ptr(),
        }
    }
}

pub(super) fn signature_mismatch(what: &str, origin: usize, target: usize) -> MpiError {
    MpiError::new(
        MPI_ERR_ARG,
        format!("the {what} moves {origin} bytes at the origin but {target} at the target; the origin and target count and type must describe the same data"),
    )
}

impl WinState {
    /// `MPI_Put`.
    pub fn put(
        &mut self,
        adi: &mut Adi,
        o: &Local,
        t: &Access,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        if o.bytes() != t.bytes() {
            return Err(signature_mismatch("put", o.bytes(), t.bytes()));
        }
        if t.target == self.me {
            let addr = self.local_target(t)?;
            let data = o.packed();
            // SAFETY: `addr` holds the target elements inside this window (checked).
            unsafe { t.ty.unpack(data.as_ptr(), data.len(), addr, t.count) };
            return Ok(());
        }
        if self.device_put(adi, o, t)? {
            return Ok(());
        }
        let data = o.outgoing();
        let mut req = Request::new(Action::Put, self.next_id());
        (req.offset, req.count) = (t.offset, t.count as u64);
        self.issue(adi, t.target, req, Some(t.ty), data, flag)
    }

    /// The blocks a put or get to `t` moves through the device, with the target's key, if it
    /// goes that way (`None`: as a request).
    fn device_route(
        &self,
        t: &Access,
        put: bool,
    ) -> Option<(nic_model::RegionKey, Vec<(usize, usize)>)> {
        let v = self.vmmc.as_ref()?;
        let bytes = t.bytes();
        let (key, min) = v.usable(t.target, bytes, put)?;
        let blocks = device_blocks(t.ty, t.offset, t.count, bytes.div_ceil(min))?;
        Some((key, blocks))
    }

    /// A put through the device (`false`: it goes as a request).
    fn device_put(&mut self, adi: &mut Adi, o: &Local, t: &Access) -> MpiResult<bool> {
        let Some((key, blocks)) = self.device_route(t, true) else {
            return Ok(false);
        };
        let Some(rm) = adi.remote_memory() else {
            return Ok(false);
        };
        let packed;
        let src: *const u8 = match o.block() {
            Some(p) => p,
            None => {
                packed = o.packed();
                packed.as_ptr()
            }
        };
        let peer = self.ranks[t.target];
        let mut at = 0;
        for (offset, len) in blocks {
            // SAFETY: the origin data is `o.bytes()` readable bytes at `src` (one block of the
            // program's buffer, or the packed copy), and the blocks add up to that many.
            let data = unsafe { std::slice::from_raw_parts(src.add(at), len) };
            rm.write(peer, key, offset, data)?;
            at += len;
        }
        let v = self.vmmc.as_ref().expect("routed through the device");
        if !v.single_copy[t.target] {
            // Posted: the next flush's answer comes after the target's device applied it.
            self.unacked[t.target] = true;
        }
        Ok(true)
    }

    /// A get through the device (`false`: it goes as a request).
    fn device_get(
        &mut self,
        adi: &mut Adi,
        o: &Local,
        t: &Access,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<bool> {
        let Some((key, blocks)) = self.device_route(t, false) else {
            return Ok(false);
        };
        let Some(rm) = adi.remote_memory() else {
            return Ok(false);
        };
        let (dst, unpack) = match o.block() {
            Some(p) => (p, None),
            None => {
                let mut staging = vec![0u8; o.bytes()];
                let p = staging.as_mut_ptr();
                (p, Some((staging, o.addr, o.ty.clone(), o.count)))
            }
        };
        let peer = self.ranks[t.target];
        let mut reads = Vec::new();
        let mut at = 0;
        let mut failed = None;
        for (offset, len) in blocks {
            // SAFETY: `dst` has `o.bytes()` writable bytes (the program's one block, valid
            // until the get completes, or the staging buffer kept with the get), and the
            // blocks add up to that many.
            match unsafe { rm.read(peer, key, offset, dst.add(at), len) } {
                Ok(Some(id)) => reads.push(id),
                Ok(None) => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            at += len;
        }
        if reads.is_empty() && failed.is_none() {
            if let Some((staging, to, ty, count)) = &unpack {
                // SAFETY: the origin buffer holds `count` elements of its type.
                unsafe { ty.unpack(staging.as_ptr(), staging.len(), *to, *count) };
            }
            return Ok(true);
        }
        if !reads.is_empty() {
            if let Some(f) = flag {
                f.parts.set(f.parts.get() + 1);
            }
            self.device_gets.push(DeviceGet {
                target: t.target,
                reads,
                unpack,
                flag: flag.cloned(),
            });
        }
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(true),
        }
    }

    /// `MPI_Get`.
    pub fn get(
        &mut self,
        adi: &mut Adi,
        o: &Local,
        t: &Access,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        if o.bytes() != t.bytes() {
            return Err(signature_mismatch("get", o.bytes(), t.bytes()));
        }
        if t.target == self.me {
            let addr = self.local_target(t)?;
            let data = pack(t.ty, addr, t.count);
            // SAFETY: the origin buffer holds `o.count` elements of its type (MPI's contract).
            unsafe { o.ty.unpack(data.as_ptr(), data.len(), o.addr, o.count) };
            return Ok(());
        }
        if self.device_get(adi, o, t, flag)? {
            return Ok(());
        }
        let id = self.next_id();
        self.await_reply(adi, t.target, id, o, flag)?;
        let mut req = Request::new(Action::Get, id);
        (req.offset, req.count) = (t.offset, t.count as u64);
        self.issue(adi, t.target, req, Some(t.ty), Data::None, flag)
    }

    /// `MPI_Accumulate` (`op` a predefined operation, `MPI_REPLACE` or `MPI_NO_OP`).
    pub fn accumulate(
        &mut self,
        adi: &mut Adi,
        o: &Local,
        t: &Access,
        op: MPI_Op,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        if o.bytes() != t.bytes() {
            return Err(signature_mismatch("accumulate", o.bytes(), t.bytes()));
        }
        if t.target == self.me {
            let addr = self.local_target(t)?;
            return accumulate_here(t, op, &o.packed(), addr);
        }
        let data = o.outgoing();
        let mut req = Request::new(Action::Accumulate, self.next_id());
        (req.offset, req.count, req.op) = (t.offset, t.count as u64, op);
        self.issue(adi, t.target, req, Some(t.ty), data, flag)
    }

    /// `MPI_Get_accumulate` and `MPI_Fetch_and_op`: the target's old data into `result`,
    /// then `op` combines the origin's data into it (`MPI_NO_OP`: a read).
    pub fn get_accumulate(
        &mut self,
        adi: &mut Adi,
        o: &Local,
        result: &Local,
        t: &Access,
        op: MPI_Op,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        if result.bytes() != t.bytes() || (op != MPI_NO_OP && o.bytes() != t.bytes()) {
            return Err(signature_mismatch(
                "get-accumulate",
                result.bytes(),
                t.bytes(),
            ));
        }
        if t.target == self.me {
            let addr = self.local_target(t)?;
            let old = pack(t.ty, addr, t.count);
            let data = if op == MPI_NO_OP {
                Vec::new()
            } else {
                o.packed()
            };
            // SAFETY: the result buffer holds `result.count` elements of its type.
            unsafe {
                result
                    .ty
                    .unpack(old.as_ptr(), old.len(), result.addr, result.count)
            };
            return accumulate_here(t, op, &data, addr);
        }
        let id = self.next_id();
        self.await_reply(adi, t.target, id, result, flag)?;
        let data = if op == MPI_NO_OP {
            Data::None
        } else {
            o.outgoing()
        };
        let mut req = Request::new(Action::GetAccumulate, id);
        (req.offset, req.count, req.op) = (t.offset, t.count as u64, op);
        self.issue(adi, t.target, req, Some(t.ty), data, flag)
    }

    /// `MPI_Compare_and_swap` of one element of a predefined type `t.ty`.
    pub fn compare_and_swap(
        &mut self,
        adi: &mut Adi,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        t: &Access,
    ) -> MpiResult<()> {
        let size = t.ty.size();
        let mut both = vec![0u8; 2 * size];
        // SAFETY: each of the program's buffers holds one element of the type (MPI's contract).
        unsafe {
            std::ptr::copy_nonoverlapping(origin, both.as_mut_ptr(), size);
            std::ptr::copy_nonoverlapping(compare, both.as_mut_ptr().add(size), size);
        }
        if t.target == self.me {
            let addr = self.local_target(t)?;
            // SAFETY: `addr` holds one element inside the window; `result` one element.
            unsafe {
                std::ptr::copy_nonoverlapping(addr.cast_const(), result, size);
                if std::slice::from_raw_parts(result, size) == &both[size..] {
                    std::ptr::copy_nonoverlapping(both.as_ptr(), addr, size);
                }
            }
            return Ok(());
        }
        let id = self.next_id();
        let into = Local {
            addr: result,
            count: 1,
            ty: t.ty,
        };
        self.await_reply(adi, t.target, id, &into, None)?;
        let mut req = Request::new(Action::CompareAndSwap, id);
        (req.offset, req.count) = (t.offset, 1);
        self.issue(adi, t.target, req, Some(t.ty), Data::Slice(&both), None)
    }

    /// Asks `target` for the lock (`MPI_LOCK_SHARED` or `MPI_LOCK_EXCLUSIVE`); the grant is
    /// counted in `granted` when it comes (at once for this process's own window, if free).
    pub fn send_lock(&mut self, adi: &mut Adi, target: usize, kind: i32) -> MpiResult<()> {
        if target == self.me {
            if self.lock.request(self.me, kind) {
                self.granted[self.me] += 1;
            }
            return Ok(());
        }
        let mut req = Request::new(Action::Lock, 0);
        req.op = kind;
        self.issue(adi, target, req, None, Data::None, None)?;
        // A lock alone asks for no acknowledgement.
        self.unacked[target] = false;
        Ok(())
    }

    /// Releases the lock on `target` and asks for the acknowledgement that everything before
    /// it is applied (awaited through `settled`).
    pub fn send_unlock(&mut self, adi: &mut Adi, target: usize) -> MpiResult<()> {
        if target == self.me {
            let me = self.me;
            for o in self.lock.release(me) {
                self.say(adi, o, super::wire::Say::Granted, 0, 0)?;
            }
            return Ok(());
        }
        self.ask(adi, target, Action::Unlock)
    }

    /// Asks `target` to acknowledge everything sent to it so far, if anything was.
    pub fn send_flush(&mut self, adi: &mut Adi, target: usize) -> MpiResult<()> {
        if target == self.me || !self.unacked[target] {
            return Ok(());
        }
        self.ask(adi, target, Action::Flush)
    }

    /// Sends `target` an unlock or a flush, whose answer (`Say::Done` with its id) says that
    /// everything sent before it is applied; `settled` waits for it.
    fn ask(&mut self, adi: &mut Adi, target: usize, action: Action) -> MpiResult<()> {
        let id = self.next_id();
        let req = Request::new(action, id);
        self.issue(adi, target, req, None, Data::None, None)?;
        self.asked[target] = id;
        self.unacked[target] = false;
        Ok(())
    }

    /// PSCW: tells `target` that this origin's access epoch to it is over.
    pub fn send_complete(&mut self, adi: &mut Adi, target: usize) -> MpiResult<()> {
        if target == self.me {
            self.completes[self.me] += 1;
            return Ok(());
        }
        self.issue(
            adi,
            target,
            Request::new(Action::Complete, 0),
            None,
            Data::None,
            None,
        )?;
        self.unacked[target] = false;
        Ok(())
    }

    /// The address of a target in this process's own window, or `MPI_ERR_RMA_RANGE`.
    fn local_target(&self, t: &Access) -> MpiResult<*mut u8> {
        self.target_address(t.offset, t.ty, t.count)
            .map_err(|class| {
                MpiError::new(
                    class,
                    format!(
                    "the target data (offset {}, {} elements) lies outside this process's window",
                    t.offset, t.count
                ),
                )
            })
    }

    /// Posts the receive of request `id`'s reply into `into` (or a staging buffer).
    fn await_reply(
        &mut self,
        adi: &mut Adi,
        target: usize,
        id: u64,
        into: &Local,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        let expect = into.bytes();
        let (ptr, unpack) = match into.block() {
            Some(p) => (p, None),
            None => {
                let staging = vec![0u8; expect];
                let p = staging.as_ptr().cast_mut();
                (p, Some((staging, into.addr, into.ty.clone(), into.count)))
            }
        };
        let ptr = crate::cptr::nonnull_or_dangling(ptr).cast_mut();
        // SAFETY: the landing is the program's buffer (valid until the operation completes,
        // MPI's contract) or a staging buffer kept with the awaited reply.
        let req = unsafe {
            adi.irecv(
                ptr,
                expect,
                self.ranks[target] as i32,
                reply_tag(id),
                self.ctx,
                self.owner,
            )
        }?;
        if let Some(f) = flag {
            f.parts.set(f.parts.get() + 1);
        }
        self.awaited.push(Awaited {
            req,
            target,
            unpack,
            expect,
            flag: flag.cloned(),
        });
        Ok(())
    }

    /// Sends request `req` (and what follows it) to window rank `target`.
    fn issue(
        &mut self,
        adi: &mut Adi,
        target: usize,
        mut req: Request,
        ty: Option<&Arc<Datatype>>,
        data: Data<'_>,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        let mut type_bytes = Vec::new();
        if let Some(t) = ty {
            t.encode(&mut type_bytes);
        }
        req.type_len = type_bytes.len() as u32;
        req.data_len = data.len() as u64;
        let type_inline = type_bytes.len() <= INLINE_TYPE_MAX;
        if type_inline {
            req.flags |= FLAG_TYPE_INLINE;
        }
        let inline_len = Request::LEN + if type_inline { type_bytes.len() } else { 0 };
        let data_inline = data.len() == 0 || inline_len + data.len() <= REQUEST_MAX;
        if data_inline {
            req.flags |= FLAG_DATA_INLINE;
        }
        let mut msg = Vec::with_capacity(inline_len + if data_inline { data.len() } else { 0 });
        req.emit(&mut msg);
        if type_inline {
            msg.extend_from_slice(&type_bytes);
        }
        if data_inline && data.len() > 0 {
            // SAFETY: the data's pointer and length describe readable bytes (the program's
            // buffer, or one of ours).
            msg.extend_from_slice(unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) });
        }
        self.send(adi, target, TAG_REQUEST, Outgoing::Owned(msg), flag)?;
        if !type_inline {
            self.send(adi, target, TAG_FOLLOW, Outgoing::Owned(type_bytes), flag)?;
        }
        if !data_inline {
            let out = match data {
                Data::User(p, n) => Outgoing::Borrowed(p, n),
                Data::Packed(v) => Outgoing::Owned(v),
                Data::Slice(s) => Outgoing::Owned(s.to_vec()),
                Data::None => unreachable!("no data is inline"),
            };
            self.send(adi, target, TAG_FOLLOW, out, flag)?;
        }
        self.unacked[target] = true;
        Ok(())
    }

    /// Sends one message to window rank `target`: at once when the channel takes it, else as
    /// a send in flight (kept with its buffer until done).
    fn send(
        &mut self,
        adi: &mut Adi,
        target: usize,
        tag: i32,
        out: Outgoing,
        flag: Option<&Rc<OpFlag>>,
    ) -> MpiResult<()> {
        let dest = self.ranks[target];
        let (ptr, len, owned) = match out {
            Outgoing::Owned(v) => (v.as_ptr(), v.len(), Some(v)),
            Outgoing::Borrowed(p, n) => (p, n, None),
        };
        // SAFETY: `ptr` and `len` describe the message's bytes (ours or the program's).
        let bytes =
            unsafe { std::slice::from_raw_parts(crate::cptr::nonnull_or_dangling(ptr), len) };
        if adi.send_now(bytes, dest, tag, self.ctx, SendMode::Standard)? {
            return Ok(());
        }
        let ptr = crate::cptr::nonnull_or_dangling(ptr);
        // SAFETY: an owned buffer moves into the list of sends in flight, which keeps it
        // until the send completes; the program's buffer stays valid until the operation
        // completes locally (MPI's contract), which waits for this send.
        let req = unsafe {
            adi.isend(
                ptr,
                len,
                dest,
                tag,
                self.ctx,
                SendMode::Standard,
                self.owner,
            )
        }?;
        if let Some(f) = flag {
            f.parts.set(f.parts.get() + 1);
        }
        self.sends.push(InFlight {
            req,
            target,
            _owned: owned,
            flag: flag.cloned(),
            from_window: false,
        });
        Ok(())
    }
}

/// The blocks of `count` elements of `ty` at byte `offset` of a target window, as (offset,
/// bytes) in the order of the packed data, adjacent blocks merged; `None` if there are more
/// than `max` (many small blocks go better as one request, unpacked at the target) or one
/// lies before the window's start.
fn device_blocks(
    ty: &Datatype,
    offset: u64,
    count: usize,
    max: usize,
) -> Option<Vec<(usize, usize)>> {
    let bytes = count * ty.size();
    let start = |at: isize| usize::try_from(offset as i128 + at as i128).ok();
    if ty.is_one_block(count) {
        let first = ty.runs().first().map_or(0, |r| r.offset);
        return Some(vec![(start(first)?, bytes)]);
    }
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let ext = ty.extent();
    for i in 0..count as isize {
        for r in ty.runs() {
            if r.len == 0 {
                continue;
            }
            let at = start(i * ext + r.offset)?;
            match blocks.last_mut() {
                Some((b, l)) if *b + *l == at => *l += r.len,
                _ => {
                    if blocks.len() == max {
                        return None;
                    }
                    blocks.push((at, r.len));
                }
            }
        }
    }
    Some(blocks)
}

/// An accumulate on this process's own window, at `addr` (checked to be inside it).
fn accumulate_here(t: &Access, op: MPI_Op, data: &[u8], addr: *mut u8) -> MpiResult<()> {
    accumulate(t.ty, op, data, addr, t.count)
        .map_err(|class| MpiError::new(class, "the accumulate failed at this process's own window"))
}

/// A message's bytes: ours, or one block of the program's memory.
enum Outgoing {
    Owned(Vec<u8>),
    Borrowed(*const u8, usize),
}
