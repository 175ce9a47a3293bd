//! A window's protocol state, both sides of it, and the progress engine's hook that moves
//! every window on.
//!
//! [`Rma`] is registered with the engine once, when the first window is made, and holds one
//! [`WinState`] per window. On every turn of the engine it takes the requests and control
//! messages that arrived for each window ([`super::target`] applies the requests), finishes
//! the replies the window's own operations wait for (unpacking them into the program's
//! buffers) and retires the sends that are done. The calls of the window's owner (put, flush,
//! lock, ...) reach the same state through [`mpich_channel::Engine::hook_with_p2p`].

use super::incoming::{Incoming, LockTable};
use super::wire::{Control, Say, REQUEST_MAX, TAG_CONTROL, TAG_REQUEST};
use crate::datatype::Datatype;
use mpich_channel::{Adi, AdiError, Hook, ReqId, Result, ANY_SOURCE};
use nic_model::{RegionKey, TransferId};
use std::any::Any;
use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

/// Where a window's memory is, as its target sees it.
#[derive(Debug)]
pub(crate) enum Memory {
    /// `size` bytes at `base` (created, allocated, shared).
    Static { base: usize, size: usize },
    /// A dynamic window: the attached regions (address, length); displacements are addresses.
    Dynamic { regions: Vec<(usize, usize)> },
}

/// The completion of a request-based operation (`MPI_Rput`, ...): the parts (sends, a reply)
/// still outstanding, and the first error class met.
#[derive(Debug, Default)]
pub(crate) struct OpFlag {
    pub parts: Cell<u32>,
    pub error: Cell<i32>,
}

impl OpFlag {
    pub fn part_done(&self, error: i32) {
        self.parts.set(self.parts.get().saturating_sub(1));
        if error != 0 && self.error.get() == 0 {
            self.error.set(error);
        }
    }
}

/// A send in flight, and what must live until it completes.
pub(super) struct InFlight {
    pub req: ReqId,
    /// The window rank it goes to.
    pub target: usize,
    pub _owned: Option<Vec<u8>>,
    /// The request-based operation it is part of.
    pub flag: Option<Rc<OpFlag>>,
    /// Sent from window memory (a get's reply): the origin reads those bytes until the send
    /// completes, so its epoch there is not over before.
    pub from_window: bool,
}

/// Where a reply goes once it has arrived: straight into the origin's buffer, or into a
/// staging buffer then unpacked.
pub(super) struct Awaited {
    pub req: ReqId,
    pub target: usize,
    /// The staging buffer and where to unpack it: (staging, destination, its type, count).
    pub unpack: Option<(Vec<u8>, *mut u8, Arc<Datatype>, usize)>,
    /// The bytes the reply must hold (fewer: the target refused the request).
    pub expect: usize,
    /// The request-based operation it is part of.
    pub flag: Option<Rc<OpFlag>>,
}

/// The window's data path through the device (VMMC's deliberate update and fetch): every
/// process's window memory exposed to the device, the keys known to every origin.
#[derive(Debug)]
pub(crate) struct DeviceData {
    /// This process's window memory as the device knows it (withdrawn when the window closes).
    pub own: Option<RegionKey>,
    /// Each window rank's key (`None`: it exposed nothing, or could not).
    pub keys: Vec<Option<RegionKey>>,
    /// Per window rank: reached in one copy (same host), so a write is in place when it
    /// returns; otherwise writes are posted and the next flush's answer covers them.
    pub single_copy: Vec<bool>,
    /// Per window rank: the epoch lets this origin touch its memory now (a lock granted, a
    /// fence or PSCW epoch under way). Set and cleared by the synchronization calls, so that
    /// no device access lands before a lock is granted at the target.
    pub open: Vec<bool>,
    /// Which sizes go through the device (the others as requests).
    pub sizes: DeviceSizes,
}

/// The sizes, bytes, of the puts and gets that go through the device, to a rank on this host
/// (`local`) and on another (`remote`): each a range `min..max` (`api::create` says why).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceSizes {
    pub put_local: (usize, usize),
    pub get_local: (usize, usize),
    pub put_remote: (usize, usize),
    pub get_remote: (usize, usize),
}

impl DeviceData {
    /// The key of `target`'s memory, and the least block size worth a device access, if a
    /// put (`put`) or get of `bytes` to it goes through the device now.
    pub fn usable(&self, target: usize, bytes: usize, put: bool) -> Option<(RegionKey, usize)> {
        let s = &self.sizes;
        let (min, max) = match (self.single_copy[target], put) {
            (true, true) => s.put_local,
            (true, false) => s.get_local,
            (false, true) => s.put_remote,
            (false, false) => s.get_remote,
        };
        if !self.open[target] || bytes == 0 || bytes < min || bytes >= max {
            return None;
        }
        Some((self.keys[target]?, min.max(1)))
    }
}

/// A get whose data the device is still reading (across hosts: read requests the target's
/// device answers when it polls).
pub(super) struct DeviceGet {
    pub target: usize,
    /// The device's transfers still in flight.
    pub reads: Vec<TransferId>,
    /// The staging buffer and where to unpack it once every read is done.
    pub unpack: Option<(Vec<u8>, *mut u8, Arc<Datatype>, usize)>,
    pub flag: Option<Rc<OpFlag>>,
}

/// One window's protocol state.
pub(crate) struct WinState {
    pub ctx: u16,
    /// The owner word of the engine requests (the window's communicator).
    pub owner: u32,
    /// This process's rank in the window, and the engine rank of every window rank.
    pub me: usize,
    pub ranks: Vec<usize>,
    pub memory: Memory,

    // ---- target side ----
    request_rx: Option<(ReqId, Box<[u8]>)>,
    control_rx: Option<(ReqId, Box<[u8; Control::LEN]>)>,
    /// Arrived requests per origin, applied in order.
    pub(super) incoming: Vec<VecDeque<Incoming>>,
    /// Requests in all the queues.
    pub(super) queued: usize,
    pub(super) lock: LockTable,
    /// PSCW: `Complete` requests counted per origin (consumed by wait and test).
    pub completes: Vec<u32>,
    /// The first failure of each origin's requests since its last acknowledgement.
    pub(super) errors: Vec<i32>,

    // ---- origin side ----
    next_id: u64,
    /// Per target: requests sent since its last flush or unlock.
    pub unacked: Vec<bool>,
    /// Per target: the id of the last flush or unlock sent, and of the last one answered.
    pub asked: Vec<u64>,
    pub answered: Vec<u64>,
    /// Per target: grants received and not yet taken by a lock call.
    pub granted: Vec<u32>,
    /// Per origin: PSCW posts received and not yet taken by a start call.
    pub posts: Vec<u32>,
    /// The first failure a target reported for this origin's requests (an error class).
    pub failure: i32,
    pub(super) sends: Vec<InFlight>,
    pub(super) awaited: Vec<Awaited>,

    // ---- the device's data path ----
    /// `None`: every operation travels as messages.
    pub vmmc: Option<DeviceData>,
    pub(super) device_gets: Vec<DeviceGet>,
}

impl WinState {
    pub fn new(ctx: u16, owner: u32, me: usize, ranks: Vec<usize>, memory: Memory) -> WinState {
        let n = ranks.len();
        WinState {
            ctx,
            owner,
            me,
            ranks,
            memory,
            request_rx: None,
            control_rx: None,
            incoming: (0..n).map(|_| VecDeque::new()).collect(),
            queued: 0,
            lock: LockTable::default(),
            completes: vec![0; n],
            errors: vec![0; n],
            next_id: 1,
            unacked: vec![false; n],
            asked: vec![0; n],
            answered: vec![0; n],
            granted: vec![0; n],
            posts: vec![0; n],
            failure: 0,
            sends: Vec::new(),
            awaited: Vec::new(),
            vmmc: None,
            device_gets: Vec::new(),
        }
    }

    /// Opens (or closes) the device's data path to `targets` for the epoch that starts (or
    /// ends): called once a lock is granted, a fence or a start opened the epoch.
    pub fn device_epoch(&mut self, targets: impl IntoIterator<Item = usize>, open: bool) {
        if let Some(v) = &mut self.vmmc {
            for t in targets {
                v.open[t] = open;
            }
        }
    }

    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// A new request id.
    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Posts the window's standing receives (requests from any origin, control messages).
    pub fn open(&mut self, adi: &mut Adi) -> Result<()> {
        let mut rbuf = vec![0u8; REQUEST_MAX].into_boxed_slice();
        // SAFETY: the buffers are boxed in this state, which keeps them until the receives
        // complete or are cancelled (`close`).
        let rid = unsafe {
            adi.irecv(
                rbuf.as_mut_ptr(),
                rbuf.len(),
                ANY_SOURCE,
                TAG_REQUEST,
                self.ctx,
                self.owner,
            )
        }?;
        self.request_rx = Some((rid, rbuf));
        let mut cbuf = Box::new([0u8; Control::LEN]);
        // SAFETY: as above.
        let cid = unsafe {
            adi.irecv(
                cbuf.as_mut_ptr(),
                cbuf.len(),
                ANY_SOURCE,
                TAG_CONTROL,
                self.ctx,
                self.owner,
            )
        }?;
        self.control_rx = Some((cid, cbuf));
        Ok(())
    }

    /// Cancels the standing receives (the window is being freed: nothing more will come), and
    /// withdraws the window memory from the device.
    pub fn close(&mut self, adi: &mut Adi) -> Result<()> {
        if let Some(key) = self.vmmc.as_mut().and_then(|v| v.own.take()) {
            if let Some(rm) = adi.remote_memory() {
                rm.withdraw(key)?;
            }
        }
        for id in [
            self.request_rx.as_ref().map(|r| r.0),
            self.control_rx.as_ref().map(|r| r.0),
        ]
        .into_iter()
        .flatten()
        {
            adi.cancel(id)?;
            while adi.take(id)?.is_none() {
                adi.progress()?;
            }
        }
        self.request_rx = None;
        self.control_rx = None;
        Ok(())
    }

    /// Whether nothing is in flight: no send, no awaited reply, no queued request.
    pub fn quiet(&self) -> bool {
        self.sends.is_empty()
            && self.awaited.is_empty()
            && self.queued == 0
            && self.device_gets.is_empty()
    }

    /// Whether everything this origin sent to `target` is complete there: answered up to
    /// the last flush or unlock, and its replies and sends are done.
    pub fn settled(&self, target: usize) -> bool {
        self.answered[target] >= self.asked[target] && self.local_done(target)
    }

    /// Whether this origin's operations to `target` are complete locally (its buffers may be
    /// reused): replies in place, sends done.
    pub fn local_done(&self, target: usize) -> bool {
        !self.awaited.iter().any(|a| a.target == target)
            && !self.sends.iter().any(|s| s.target == target)
            && !self.device_gets.iter().any(|g| g.target == target)
    }

    /// Whether this origin's device reads from `target` are all done (an unlock or complete
    /// must not tell the target its epoch is over while the target's memory is still being
    /// read: the next lock holder could write it).
    pub fn device_reads_done(&self, target: usize) -> bool {
        !self.device_gets.iter().any(|g| g.target == target)
    }

    /// Whether a reply to origin `src` is still being sent from window memory.
    pub(super) fn window_sends_to(&self, src: usize) -> bool {
        self.sends.iter().any(|s| s.from_window && s.target == src)
    }

    /// A control message from window rank `src`.
    pub(super) fn heard(&mut self, src: usize, c: Control) {
        match c.say {
            Say::Granted => self.granted[src] += 1,
            Say::Done => {
                self.answered[src] = self.answered[src].max(c.id);
                if c.code != 0 && self.failure == 0 {
                    self.failure = c.code;
                }
            }
            Say::Post => self.posts[src] += 1,
        }
    }

    /// One turn: arrivals, follow-ups, replies, sends. `true` if anything happened.
    fn progress(&mut self, adi: &mut Adi) -> Result<bool> {
        let mut any = false;
        // Requests: each arrival is queued and the receive posted again at once.
        while let Some((id, _)) = &self.request_rx {
            let Some(status) = adi.take(*id)? else { break };
            let (_, mut buf) = self.request_rx.take().unwrap();
            let src = self.window_rank(status.source);
            let msg = buf[..status.len].to_vec();
            // SAFETY: as in `open`.
            let rid = unsafe {
                adi.irecv(
                    buf.as_mut_ptr(),
                    buf.len(),
                    ANY_SOURCE,
                    TAG_REQUEST,
                    self.ctx,
                    self.owner,
                )
            }?;
            self.request_rx = Some((rid, buf));
            if let Some(src) = src {
                self.arrived(adi, src, &msg)?;
            }
            any = true;
        }
        while let Some((id, _)) = &self.control_rx {
            let Some(status) = adi.take(*id)? else { break };
            let (_, mut buf) = self.control_rx.take().unwrap();
            let c = Control::parse(&buf[..status.len]);
            // SAFETY: as in `open`.
            let cid = unsafe {
                adi.irecv(
                    buf.as_mut_ptr(),
                    buf.len(),
                    ANY_SOURCE,
                    TAG_CONTROL,
                    self.ctx,
                    self.owner,
                )
            }?;
            self.control_rx = Some((cid, buf));
            if let (Some(c), Some(src)) = (c, self.window_rank(status.source)) {
                self.heard(src, c);
            }
            any = true;
        }
        if self.queued > 0 {
            any |= self.advance_all(adi)?;
        }
        if !self.awaited.is_empty() {
            any |= self.finish_replies(adi)?;
        }
        if !self.sends.is_empty() {
            any |= self.retire_sends(adi)?;
        }
        if !self.device_gets.is_empty() {
            any |= self.finish_device_gets(adi)?;
        }
        Ok(any)
    }

    /// Ends the gets whose device reads are all done (unpacking staged data). A read the
    /// target's device refused fails its get with `MPI_ERR_RMA_RANGE`.
    fn finish_device_gets(&mut self, adi: &mut Adi) -> Result<bool> {
        let Some(rm) = adi.remote_memory() else {
            return Ok(false);
        };
        let mut any = false;
        let mut i = 0;
        while i < self.device_gets.len() {
            let g = &mut self.device_gets[i];
            let mut refused = false;
            let mut j = 0;
            while j < g.reads.len() {
                match rm.read_done(g.reads[j]) {
                    Ok(false) => j += 1,
                    Ok(true) => {
                        g.reads.swap_remove(j);
                    }
                    Err(e @ AdiError::PeerGone { .. }) => return Err(e),
                    Err(e) => {
                        tracing::debug!(target: "mpi", error = %e, "a one-sided read was refused");
                        refused = true;
                        g.reads.swap_remove(j);
                    }
                }
            }
            let outcome = if refused {
                crate::abi::MPI_ERR_RMA_RANGE
            } else {
                0
            };
            if outcome != 0 && self.failure == 0 {
                self.failure = outcome;
            }
            let g = &mut self.device_gets[i];
            if outcome != 0 {
                g.flag.take().inspect(|f| f.part_done(outcome));
            }
            if !g.reads.is_empty() {
                i += 1;
                continue;
            }
            let g = self.device_gets.swap_remove(i);
            if let Some((staging, dst, ty, count)) = &g.unpack {
                // SAFETY: the destination is the program's buffer of `count` elements of
                // `ty`, which MPI keeps valid until the operation completes.
                unsafe { ty.unpack(staging.as_ptr(), staging.len(), *dst, *count) };
            }
            if let Some(f) = &g.flag {
                f.part_done(0);
            }
            any = true;
        }
        Ok(any)
    }

    /// The window rank of engine rank `engine_rank`.
    fn window_rank(&self, engine_rank: i32) -> Option<usize> {
        self.ranks.iter().position(|&r| r as i32 == engine_rank)
    }

    fn finish_replies(&mut self, adi: &mut Adi) -> Result<bool> {
        let mut any = false;
        let mut i = 0;
        while i < self.awaited.len() {
            let Some(status) = adi.take(self.awaited[i].req)? else {
                i += 1;
                continue;
            };
            let a = self.awaited.swap_remove(i);
            let outcome = if status.len != a.expect {
                crate::abi::MPI_ERR_RMA_RANGE
            } else {
                if let Some((staging, dst, ty, count)) = &a.unpack {
                    // SAFETY: the destination is the program's buffer of `count` elements of
                    // `ty`, which MPI keeps valid until the operation completes.
                    unsafe { ty.unpack(staging.as_ptr(), staging.len(), *dst, *count) };
                }
                0
            };
            if outcome != 0 && self.failure == 0 {
                self.failure = outcome;
            }
            if let Some(f) = &a.flag {
                f.part_done(outcome);
            }
            any = true;
        }
        Ok(any)
    }

    fn retire_sends(&mut self, adi: &mut Adi) -> Result<bool> {
        let mut any = false;
        let mut i = 0;
        while i < self.sends.len() {
            if adi.take(self.sends[i].req)?.is_some() {
                let s = self.sends.swap_remove(i);
                if let Some(f) = &s.flag {
                    f.part_done(0);
                }
                any = true;
            } else {
                i += 1;
            }
        }
        Ok(any)
    }
}

/// The engine's hook: every window's state, by slot.
#[derive(Default)]
pub(crate) struct Rma {
    wins: Vec<Option<WinState>>,
    live: usize,
}

impl Rma {
    /// Adds a window's state; returns its slot.
    pub fn insert(&mut self, w: WinState) -> usize {
        self.live += 1;
        match self.wins.iter().position(Option::is_none) {
            Some(i) => {
                self.wins[i] = Some(w);
                i
            }
            None => {
                self.wins.push(Some(w));
                self.wins.len() - 1
            }
        }
    }

    pub fn remove(&mut self, slot: usize) -> Option<WinState> {
        let w = self.wins.get_mut(slot)?.take();
        if w.is_some() {
            self.live -= 1;
        }
        w
    }

    pub fn get_mut(&mut self, slot: usize) -> Option<&mut WinState> {
        self.wins.get_mut(slot)?.as_mut()
    }
}

impl Hook for Rma {
    fn progress(&mut self, adi: &mut Adi) -> Result<bool> {
        if self.live == 0 {
            return Ok(false);
        }
        let mut any = false;
        for w in self.wins.iter_mut().flatten() {
            any |= w.progress(adi)?;
        }
        Ok(any)
    }

    fn busy(&self) -> bool {
        self.wins.iter().flatten().any(|w| !w.quiet())
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
