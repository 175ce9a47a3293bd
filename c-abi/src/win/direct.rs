//! Windows whose processes share one host and one memory file: every operation is a load
//! or a store by the origin itself (Open MPI's osc/sm, MPICH's shm windows), with no message
//! and nothing for the target to do.
//!
//! ```text
//!   file: [control block: per process a cache line (lock word, accumulate lock)]
//!         [part of rank 0][part of rank 1]...            (memory::shared_layout)
//!   put / get            copy (pack/unpack) between the origin buffer and the target part
//!   accumulate, fetch-and-op, compare-and-swap, get-accumulate
//!                        under the target's accumulate lock, so atomic against each other
//!   lock / unlock        the target's lock word: bit 63 exclusive, the rest shared holders
//!   flush, fence         a memory fence (and the fence's barrier): every operation is
//!                        complete when its call returns
//! ```
//!
//! `MPI_Win_allocate` and `MPI_Win_allocate_shared` windows are direct when all of their
//! processes are on one host (unless `MPI_WIN_DIRECT=0`, which keeps them on messages, for
//! measurements and tests of the message path); windows over the program's own memory and
//! dynamic windows use messages.

use super::origin::{signature_mismatch, Access, Local};
use super::target::{accumulate, pack};
use super::WinTable;
use crate::abi::{
    MPI_Aint, MPI_Count, MPI_Datatype, MPI_Op, MPI_Win, MPI_DATATYPE_NULL, MPI_NO_OP, MPI_OP_NULL,
};
use crate::datatype::TypeTable;
use crate::error::{MpiError, MpiResult};
use crate::op::{Combine, Reduction};
use nic_model::wait::Backoff;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const EXCLUSIVE: u64 = 1 << 63;

/// A direct window's control block and every process's part, in this process's mapping.
#[derive(Debug, Clone)]
pub(crate) struct Direct {
    /// Address of the control block (the start of the mapping).
    control: usize,
    /// Address of each process's part.
    parts: Vec<usize>,
    /// The last accumulate's operation and type, and how they combine: a program repeats
    /// its fetch-and-op, and the lookup costs as much as the operation.
    last_combine: Cell<(MPI_Op, MPI_Datatype, Option<Combine>)>,
}

/// Whether windows that could be direct should be (`MPI_WIN_DIRECT=0` says no).
pub(crate) fn enabled() -> bool {
    std::env::var("MPI_WIN_DIRECT").map_or(true, |v| v != "0")
}

impl Direct {
    /// The window whose file is mapped at `control`, parts at `parts`.
    pub fn new(control: usize, parts: Vec<usize>) -> Direct {
        Direct {
            control,
            parts,
            last_combine: Cell::new((MPI_OP_NULL, MPI_DATATYPE_NULL, None)),
        }
    }

    fn line(&self, t: usize) -> *mut u8 {
        (self.control + 64 * t) as *mut u8
    }

    fn lock_word(&self, t: usize) -> &AtomicU64 {
        // SAFETY: the control block has a 64-byte line per process, in a shared mapping that
        // lives as long as the window (and so as `self`); the word is only used atomically.
        unsafe { &*self.line(t).cast::<AtomicU64>() }
    }

    fn acc_lock(&self, t: usize) -> &AtomicU32 {
        // SAFETY: as for the lock word, 8 bytes further in the same line.
        unsafe { &*self.line(t).add(8).cast::<AtomicU32>() }
    }

    /// Takes `t`'s window lock (`shared` or exclusive) if it is free for it.
    pub fn try_lock(&self, t: usize, shared: bool) -> bool {
        let w = self.lock_word(t);
        let v = w.load(Ordering::Relaxed);
        if shared {
            v & EXCLUSIVE == 0
                && w.compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        } else {
            v == 0
                && w.compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
        }
    }

    /// Releases `t`'s window lock.
    pub fn unlock(&self, t: usize, shared: bool) {
        let w = self.lock_word(t);
        if shared {
            w.fetch_sub(1, Ordering::Release);
        } else {
            w.fetch_and(!EXCLUSIVE, Ordering::Release);
        }
    }

    /// Runs `f` holding `t`'s accumulate lock (held for one operation: a holder never waits
    /// for anything inside, so waiters spin, then yield).
    #[inline(always)]
    fn accumulating<R>(&self, t: usize, f: impl FnOnce() -> R) -> R {
        let l = self.acc_lock(t);
        if l.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            take_contended(l);
        }
        let r = f();
        l.store(0, Ordering::Release);
        r
    }

    /// The address of a target's data (its range was checked by the caller).
    fn at(&self, t: &Access) -> *mut u8 {
        (self.parts[t.target] + t.offset as usize) as *mut u8
    }

    /// `MPI_Put`: the origin's data into the target's part.
    pub fn put(&self, o: &Local, t: &Access) -> MpiResult<()> {
        if o.bytes() != t.bytes() {
            return Err(signature_mismatch("put", o.bytes(), t.bytes()));
        }
        let dst = self.at(t);
        if let (Some(src), true) = (block(o), t.ty.is_one_block(t.count)) {
            let first = t.ty.runs().first().map_or(0, |r| r.offset);
            // SAFETY: both are one block of the same number of bytes (checked signatures):
            // the program's buffer and the target's part inside the window (checked range).
            unsafe { copy(src, dst.wrapping_offset(first), o.count * o.ty.size()) };
            return Ok(());
        }
        let data = pack(o.ty, o.addr, o.count);
        // SAFETY: the target elements lie inside the target's part (checked range).
        unsafe { t.ty.unpack(data.as_ptr(), data.len(), dst, t.count) };
        Ok(())
    }

    /// `MPI_Get`: the target's data into the origin buffer.
    pub fn get(&self, o: &Local, t: &Access) -> MpiResult<()> {
        if o.bytes() != t.bytes() {
            return Err(signature_mismatch("get", o.bytes(), t.bytes()));
        }
        let src = self.at(t);
        if let (Some(dst), true) = (block(o), t.ty.is_one_block(t.count)) {
            let first = t.ty.runs().first().map_or(0, |r| r.offset);
            // SAFETY: as for `put`, the other way.
            unsafe { copy(src.wrapping_offset(first), dst, o.count * o.ty.size()) };
            return Ok(());
        }
        let data = pack(t.ty, src, t.count);
        // SAFETY: the origin buffer holds `o.count` elements of its type (MPI's contract).
        unsafe { o.ty.unpack(data.as_ptr(), data.len(), o.addr, o.count) };
        Ok(())
    }

    /// `MPI_Accumulate`, and with `result` `MPI_Get_accumulate` / `MPI_Fetch_and_op`.
    pub fn accumulate(
        &self,
        o: &Local,
        result: Option<&Local>,
        t: &Access,
        op: crate::abi::MPI_Op,
    ) -> MpiResult<()> {
        if let Some(r) = result.filter(|r| r.bytes() != t.bytes()) {
            return Err(signature_mismatch("get-accumulate", r.bytes(), t.bytes()));
        }
        if op != MPI_NO_OP && o.bytes() != t.bytes() {
            return Err(signature_mismatch("accumulate", o.bytes(), t.bytes()));
        }
        if t.bytes() == 0 {
            // Nothing to combine (as on the message path, whatever the operation and type:
            // mpi4py probes for the call with a zero count of MPI_BYTE under MPI_SUM).
            return Ok(());
        }
        let dst = self.at(t);
        // Contiguous data on every side (a counter, an array): combined in place, with no
        // copy but the old value's.
        let contiguous = |l: &Local| l.ty.is_contiguous();
        if t.ty.is_contiguous()
            && (op == MPI_NO_OP || contiguous(o))
            && result.is_none_or(contiguous)
        {
            let at = dst.wrapping_offset(t.ty.true_lb());
            let bytes = t.bytes();
            return self.accumulating(t.target, || {
                if let Some(r) = result {
                    // SAFETY: the result buffer holds the target's bytes (checked signature).
                    unsafe { copy(at, r.addr.wrapping_offset(r.ty.true_lb()), bytes) };
                }
                if op == MPI_NO_OP {
                    return Ok(());
                }
                let input = o.addr.wrapping_offset(o.ty.true_lb() - t.ty.true_lb());
                // SAFETY: the origin's data is contiguous, laid out as the target type's (same
                // bytes): its element base is its data start less the target type's lower
                // bound; the target elements lie inside the window (checked range).
                unsafe { Reduction::apply_shipped(op, t.ty, input, dst, t.count) }
            });
        }
        let data = if op == MPI_NO_OP {
            Vec::new()
        } else {
            pack(o.ty, o.addr, o.count)
        };
        self.accumulating(t.target, || {
            if let Some(r) = result {
                let old = pack(t.ty, dst, t.count);
                // SAFETY: the result buffer holds `r.count` elements of its type.
                unsafe { r.ty.unpack(old.as_ptr(), old.len(), r.addr, r.count) };
            }
            accumulate(t.ty, op, &data, dst, t.count)
        })
        .map_err(|class| MpiError::new(class, "the accumulate is not defined on this datatype"))
    }

    /// `MPI_Compare_and_swap` of one element.
    pub fn compare_and_swap(
        &self,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        t: &Access,
    ) {
        // SAFETY: one element at each of the program's buffers (MPI's contract) and at the
        // target (checked range).
        unsafe { self.swap_if_equal(t.target, self.at(t), origin, compare, result, t.ty.size()) }
    }

    /// How `op` combines elements of the dense predefined type `dt` ([`Combine::of`]),
    /// remembered for the next call.
    #[inline(always)]
    fn combine_of(&self, op: MPI_Op, dt: MPI_Datatype) -> Option<Combine> {
        match self.last_combine.get() {
            (o, t, how) if (o, t) == (op, dt) => how,
            _ => {
                let how = Combine::of(op, dt);
                self.last_combine.set((op, dt, how));
                how
            }
        }
    }

    /// Compare-and-swap of the `size` bytes at `at` in `target`'s part, under its accumulate
    /// lock.
    ///
    /// # Safety
    /// `size` bytes at `at` inside the target's part, at `origin` and `compare` readable, at
    /// `result` writable.
    unsafe fn swap_if_equal(
        &self,
        target: usize,
        at: *mut u8,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        size: usize,
    ) {
        self.accumulating(target, || {
            // SAFETY: the caller's contract.
            unsafe {
                copy(at, result, size);
                if std::slice::from_raw_parts(result, size)
                    == std::slice::from_raw_parts(compare, size)
                {
                    copy(origin, at, size);
                }
            }
        });
    }

    /// `count` contiguous elements of one dense predefined type at `at` in `target`'s part:
    /// their old bytes into `result` (if any), then `how` combines the origin's into them,
    /// all under the target's accumulate lock.
    ///
    /// # Safety
    /// `bytes` (the elements' bytes) at `at` inside the target's part, at `origin` readable
    /// (unless `how` is `Nothing`), at `result` writable.
    unsafe fn combine(
        &self,
        target: usize,
        at: *mut u8,
        origin: *const u8,
        result: Option<*mut u8>,
        (bytes, count): (usize, usize),
        how: Combine,
    ) {
        self.accumulating(target, || {
            // SAFETY: the caller's contract.
            unsafe {
                if let Some(r) = result {
                    copy(at, r, bytes);
                }
                match how {
                    Combine::Compute(kernel) => kernel(origin, at, count),
                    Combine::Replace => copy(origin, at, bytes),
                    Combine::Nothing => {}
                }
            }
        });
    }
}

/// The common calls on a direct window in one pass: one predefined type on every side, the
/// same count, a target inside its window, an open epoch on it, no request. What a loop of
/// `MPI_Put` + `MPI_Win_flush` or `MPI_Fetch_and_op` on a counter does (Open MPI's osc/sm
/// and MPICH's shm windows take the same shortcut). Each returns `None`, having touched
/// nothing, for anything else, including every error: the general path (`api::rma`) then
/// runs all its checks and reports what is wrong.
impl WinTable {
    /// Where `bytes` bytes at displacement `disp` of `rank`'s part of window `win` lie in this
    /// process, if `win` is a direct window, `rank` one of its processes, an epoch covers it
    /// and the bytes lie inside its part.
    #[inline(always)]
    fn direct_at(
        &mut self,
        win: MPI_Win,
        rank: c_int,
        disp: MPI_Aint,
        bytes: usize,
    ) -> Option<(&Direct, usize, *mut u8)> {
        let w = &mut **self.wins.get_mut(win)?;
        let d = w.direct.as_ref()?;
        let target = usize::try_from(rank).ok()?;
        let peer = w.peers.get(target)?;
        let offset = usize::try_from(disp).ok()?.checked_mul(peer.disp_unit)?;
        if offset.checked_add(bytes)? > peer.size || !w.epochs.can_access(target) {
            return None;
        }
        w.epochs.fence_used |= w.epochs.fence;
        Some((d, target, (d.parts[target] + offset) as *mut u8))
    }

    /// `MPI_Put` (`put`) or `MPI_Get` of `count` elements of `dt` between `buf` and the
    /// target.
    ///
    /// # Safety
    /// `buf` holds `count` elements of `dt` (MPI's contract).
    #[inline(always)]
    pub(crate) unsafe fn transfer_direct(
        &mut self,
        put: bool,
        buf: *mut u8,
        (count, dt): (MPI_Count, MPI_Datatype),
        (rank, disp): (c_int, MPI_Aint),
        win: MPI_Win,
    ) -> Option<()> {
        let bytes = usize::try_from(count)
            .ok()?
            .checked_mul(TypeTable::dense_predefined_size(dt)?)?;
        let (_, _, at) = self.direct_at(win, rank, disp, bytes)?;
        // SAFETY: the caller's contract, and the target bytes lie inside its part.
        unsafe {
            if put {
                copy(buf, at, bytes);
            } else {
                copy(at, buf, bytes);
            }
        }
        Some(())
    }

    /// `MPI_Accumulate` (`result` `None`), `MPI_Get_accumulate` and `MPI_Fetch_and_op` of
    /// `count` elements of `dt`.
    ///
    /// # Safety
    /// `origin` and `result` hold `count` elements of `dt` (MPI's contract).
    #[inline(always)]
    pub(crate) unsafe fn accumulate_direct(
        &mut self,
        origin: *const u8,
        result: Option<*mut u8>,
        (count, dt, op): (MPI_Count, MPI_Datatype, MPI_Op),
        (rank, disp): (c_int, MPI_Aint),
        win: MPI_Win,
    ) -> Option<()> {
        let count = usize::try_from(count).ok()?;
        let bytes = count.checked_mul(TypeTable::dense_predefined_size(dt)?)?;
        let (d, target, at) = self.direct_at(win, rank, disp, bytes)?;
        let how = d.combine_of(op, dt)?;
        // SAFETY: the caller's contract, and the target bytes lie inside its part.
        unsafe { d.combine(target, at, origin, result, (bytes, count), how) };
        Some(())
    }

    /// `MPI_Compare_and_swap` of one element of `dt`.
    ///
    /// # Safety
    /// `origin`, `compare` and `result` hold one element of `dt` (MPI's contract).
    #[inline(always)]
    pub(crate) unsafe fn compare_and_swap_direct(
        &mut self,
        (origin, compare, result): (*const u8, *const u8, *mut u8),
        dt: MPI_Datatype,
        (rank, disp): (c_int, MPI_Aint),
        win: MPI_Win,
    ) -> Option<()> {
        let size = TypeTable::dense_predefined_size(dt)?;
        let (d, target, at) = self.direct_at(win, rank, disp, size)?;
        // SAFETY: the caller's contract, and the target element lies inside its part.
        unsafe { d.swap_if_equal(target, at, origin, compare, result, size) };
        Some(())
    }

    /// `MPI_Win_flush` and its variants on `rank` (`None`: every target) of a direct window
    /// in a passive-target epoch ([`order_flushed_stores`]).
    #[inline(always)]
    pub(crate) fn flush_direct(&mut self, win: MPI_Win, rank: Option<c_int>) -> Option<()> {
        let w = self.wins.get(win)?;
        w.direct.as_ref()?;
        let target = match rank {
            Some(r) => Some(usize::try_from(r).ok().filter(|&t| t < w.peers.len())?),
            None => None,
        };
        w.epochs.flushable(target).then(order_flushed_stores)
    }
}

/// A flush of a direct window. Every operation is complete when its call returned; what is
/// left is ordering: an acquire-release fence keeps this process's stores to the window
/// ahead of every store it makes next (a message, a flag), as the next synchronization needs.
/// It costs no instruction on x86, whose stores are seen in program order (Open MPI's osc/sm
/// flush is a compiler barrier there too); it is a barrier instruction where stores may be
/// reordered. A store-then-load order against another process's concurrent accesses is what
/// `MPI_Win_sync` (a full fence) is for.
#[inline(always)]
pub(crate) fn order_flushed_stores() {
    std::sync::atomic::fence(Ordering::AcqRel);
}

/// Takes an accumulate lock another process holds: spins, then yields, until it is free.
#[cold]
#[inline(never)]
fn take_contended(l: &AtomicU32) {
    let mut backoff = Backoff::new();
    while l
        .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        backoff.snooze();
    }
}

/// Copies `len` bytes that may overlap; a word or less inline (a counter, a flag: the common
/// one-sided operation), not through a `memmove` call.
///
/// # Safety
/// `src` readable and `dst` writable for `len` bytes.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: the caller's contract; each read completes before its write.
    unsafe {
        match len {
            8 => dst
                .cast::<u64>()
                .write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst
                .cast::<u32>()
                .write_unaligned(src.cast::<u32>().read_unaligned()),
            _ => std::ptr::copy(src, dst, len),
        }
    }
}

/// The origin data's one block, if it is one.
fn block(o: &Local) -> Option<*mut u8> {
    o.ty.is_one_block(o.count).then(|| {
        o.addr
            .wrapping_offset(o.ty.runs().first().map_or(0, |r| r.offset))
    })
}
