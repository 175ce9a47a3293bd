//! Short blocking collectives run straight through the engine, without a schedule.
//!
//! ```text
//!   MPI_Allreduce (short, contiguous) ─▶ allreduce: fold in, recursive doubling, fold out
//!   MPI_Bcast (binomial, contiguous)  ─▶ bcast: receive from the parent, send to children
//!   MPI_Barrier                       ─▶ barrier: dissemination, empty messages
//!         each exchange: Adi::send_now (no request; an Adi::isend only if the route is
//!         full or the message is long) and Engine::recv (the direct receive, no request)
//! ```
//!
//! A short collective is a few messages of a few bytes, and building, running and recycling
//! its schedule ([`super::sched`]) cost several times what the messages do. These functions
//! do what the schedule of the same algorithm would do, step for step, with the same peers,
//! the same tags (the communicator's next collective sequence number and the algorithm's
//! step numbers) and the same reductions in the same order, so their results are the
//! schedules' to the bit, and a rank on this path and a rank on the schedule path
//! (a non-contiguous datatype on one rank only, say) still meet. Messages travel on the
//! communicator's collective context, as every collective's do.
//!
//! Sends go out at once when the channel takes them (`send_now`, as `MPI_Send` of a short
//! message); otherwise they are started (`isend`) and waited for before their buffer changes
//! or the call returns. A receive is the engine's blocking receive, which turns the progress
//! engine while it waits (so nonblocking collectives in flight move on) and backs off as any
//! wait does. A message longer than its buffer does not stop the collective: the rank does its
//! part and reports `MPI_ERR_TRUNCATE` at the end, as a schedule does.

use super::buf::Layout;
use super::sched::tag;
use crate::abi::*;
use crate::comm::{Comm, CommIdx, CommTable};
use crate::error::{MpiError, MpiResult};
use crate::op::Reduction;
use mpich_channel::{Engine, ReqId, SendMode};

/// The largest reduction (bytes of data, and of memory the elements span) the direct
/// allreduce takes: the schedule's recursive doubling limit, and the room of its temporary,
/// which lives on the stack.
pub(crate) const ALLREDUCE_MAX: usize = super::reduce::ALLREDUCE_SHORT;

/// One collective's messages: its communicator, context and sequence number, and the first
/// error it met (reported when it ends).
struct Exchange<'a> {
    engine: &'a mut Engine,
    comm: &'a Comm,
    idx: CommIdx,
    ctx: u16,
    seq: u32,
    error: Option<MpiError>,
}

impl<'a> Exchange<'a> {
    /// Takes `comm`'s next collective sequence number (as a schedule does).
    fn new(engine: &'a mut Engine, comms: &'a mut CommTable, idx: CommIdx) -> Exchange<'a> {
        let seq = comms.get_mut(idx).next_coll_seq(false);
        let comm = comms.get(idx);
        Exchange {
            engine,
            comm,
            idx,
            ctx: comm.coll_ctx,
            seq,
            error: None,
        }
    }

    /// Sends `len` bytes at `data` to local rank `peer` as step `step`. `Some(request)` when
    /// the send could not go out at once: the caller waits for it ([`Exchange::wait`]) before
    /// it changes the data.
    ///
    /// # Safety
    /// `data` is `len` readable bytes that stay unmodified until the send is complete.
    unsafe fn send(
        &mut self,
        peer: usize,
        step: u32,
        data: *const u8,
        len: usize,
    ) -> MpiResult<Option<ReqId>> {
        let dest = self.comm.to_global(peer);
        let tag = tag(self.seq, step);
        let data = crate::cptr::nonnull_or_dangling(data);
        let adi = self.engine.p2p();
        // SAFETY: the caller's contract (`data` is non-null).
        let bytes = unsafe { std::slice::from_raw_parts(data, len) };
        if adi.send_now(bytes, dest, tag, self.ctx, SendMode::Standard)? {
            return Ok(None);
        }
        // SAFETY: the caller's contract: the bytes stay as they are until the request is done.
        let req =
            unsafe { adi.isend(data, len, dest, tag, self.ctx, SendMode::Standard, self.idx) }?;
        Ok(Some(req))
    }

    /// Receives up to `cap` bytes into `buf` from local rank `peer` as step `step`; a longer
    /// message is noted as the collective's error (its first `cap` bytes land).
    ///
    /// # Safety
    /// `buf` is `cap` writable bytes that nothing else reads or writes meanwhile.
    unsafe fn recv(&mut self, peer: usize, step: u32, buf: *mut u8, cap: usize) -> MpiResult<()> {
        let src = self.comm.to_global(peer) as i32;
        let buf = crate::cptr::nonnull_or_dangling(buf).cast_mut();
        // SAFETY: the caller's contract (`buf` is non-null).
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf, cap) };
        let status = self
            .engine
            .recv(bytes, src, tag(self.seq, step), self.ctx)?;
        if status.truncated && self.error.is_none() {
            self.error = Some(MpiError::new(
                MPI_ERR_TRUNCATE,
                format!("a collective received more data than the receive buffer holds (room for {cap} bytes); every process must pass matching counts and type signatures"),
            ));
        }
        Ok(())
    }

    /// Waits for a send that did not go out at once.
    fn wait(&mut self, pending: Option<ReqId>) -> MpiResult<()> {
        if let Some(req) = pending {
            self.engine.wait(req)?;
        }
        Ok(())
    }

    /// `inout = input (op) inout`; a failure is noted and the collective goes on (as in a
    /// schedule), so that the other ranks finish too.
    ///
    /// # Safety
    /// As for [`Reduction::apply`]: `count` elements of the operation's type at each.
    unsafe fn reduce(&mut self, r: &Reduction, input: *const u8, inout: *mut u8, count: usize) {
        // SAFETY: the caller's contract.
        if let Err(e) = unsafe { r.apply(input, inout, count) } {
            self.error.get_or_insert(e);
        }
    }

    /// The collective's outcome once this rank's part is done.
    fn finish(self) -> MpiResult<()> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Whether [`allreduce`] takes `count` elements of `lay`: contiguous data whose elements
/// span at most [`ALLREDUCE_MAX`] bytes (the schedule's recursive doubling range).
pub(crate) fn allreduce_fits(count: usize, lay: &Layout) -> bool {
    lay.contiguous() && lay.span(count) <= ALLREDUCE_MAX && lay.size * count <= ALLREDUCE_MAX
}

/// Blocking allreduce of `count` elements ([`allreduce_fits`]) of `send` (`None` with
/// `MPI_IN_PLACE`) into `recv`, with `r`: the schedule of [`super::reduce::allreduce`] for
/// short data, run directly. The first `2 * rem` ranks (`rem` = size minus the largest power
/// of two below it) pair up and the even one's data joins the odd one's (on the left); the
/// others combine by recursive doubling, the lower rank's data on the left when the operation
/// does not commute; the even ranks then get the result from their partner.
///
/// # Safety
/// `send` holds `count` elements of `lay`, `recv` has room for them (MPI's contract).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allreduce(
    engine: &mut Engine,
    comms: &mut CommTable,
    idx: CommIdx,
    send: Option<*const u8>,
    recv: *mut u8,
    count: usize,
    lay: &Layout,
    r: &Reduction,
    commutative: bool,
) -> MpiResult<()> {
    debug_assert!(allreduce_fits(count, lay));
    let mut x = Exchange::new(engine, comms, idx);
    let (n, me) = (x.comm.size, x.comm.rank);
    let bytes = lay.size * count;
    let data = lay.data_start(recv).cast_mut();
    if let Some(s) = send {
        // SAFETY: both buffers hold `bytes` bytes of contiguous data from their data start
        // (MPI's contract); MPI_IN_PLACE aside, they are distinct.
        unsafe { std::ptr::copy(lay.data_start(s), data, bytes) };
    }
    if n == 1 || count == 0 {
        return x.finish();
    }
    // The temporary: 16-byte aligned (user operations may read it as doubles), the elements'
    // base placed so that their data starts at its start.
    let mut room = [0u128; ALLREDUCE_MAX / 16];
    let tmp_data = room.as_mut_ptr().cast::<u8>();
    let tmp = tmp_data.wrapping_offset(-lay.true_lb);
    let pof2 = 1usize << n.ilog2();
    let rem = n - pof2;
    use super::reduce::{STEP_FOLD_IN, STEP_FOLD_OUT};
    // SAFETY (every send, receive and reduction below): `data` and `tmp_data` are `bytes`
    // bytes of the elements at `recv` and `tmp` (contiguous, spanning at most the room); a
    // pending send is waited for before its buffer changes.
    let newrank = if me < 2 * rem {
        if me % 2 == 0 {
            let p = unsafe { x.send(me + 1, STEP_FOLD_IN, data, bytes) }?;
            x.wait(p)?;
            None
        } else {
            unsafe { x.recv(me - 1, STEP_FOLD_IN, tmp_data, bytes) }?;
            unsafe { x.reduce(r, tmp, recv, count) };
            Some(me / 2)
        }
    } else {
        Some(me - rem)
    };
    if let Some(nr) = newrank {
        let real = |newdst: usize| super::reduce::unfolded(newdst, rem);
        let mut mask = 1;
        let mut step = 0;
        while mask < pof2 {
            let dst = real(nr ^ mask);
            let p = unsafe { x.send(dst, step, data, bytes) }?;
            unsafe { x.recv(dst, step, tmp_data, bytes) }?;
            x.wait(p)?;
            if commutative || dst < me {
                unsafe { x.reduce(r, tmp, recv, count) };
            } else {
                unsafe { x.reduce(r, recv, tmp, count) };
                // SAFETY: the temporary and the receive buffer are distinct, `bytes` each.
                unsafe { std::ptr::copy_nonoverlapping(tmp_data, data, bytes) };
            }
            mask <<= 1;
            step += 1;
        }
    }
    if me < 2 * rem {
        if me % 2 == 1 {
            let p = unsafe { x.send(me - 1, STEP_FOLD_OUT, data, bytes) }?;
            x.wait(p)?;
        } else {
            unsafe { x.recv(me + 1, STEP_FOLD_OUT, data, bytes) }?;
        }
    }
    x.finish()
}

/// Whether [`bcast`] takes a broadcast of `count` elements of `lay` on `size` ranks: the
/// schedule would use a binomial tree ([`super::bcast::binomial_fits`]) and the data is
/// contiguous.
pub(crate) fn bcast_fits(count: usize, lay: &Layout, size: usize) -> bool {
    lay.contiguous() && super::bcast::binomial_fits(count * lay.size, size)
}

/// Blocking broadcast of `count` elements of `lay` at `buf` from `root` ([`bcast_fits`]):
/// the binomial tree of [`super::bcast`], run directly (receive from the parent, then send to
/// each child, the farthest first).
///
/// # Safety
/// `buf` holds `count` elements of `lay` (MPI's contract).
pub(crate) unsafe fn bcast(
    engine: &mut Engine,
    comms: &mut CommTable,
    idx: CommIdx,
    buf: *mut u8,
    count: usize,
    lay: &Layout,
    root: usize,
) -> MpiResult<()> {
    let mut x = Exchange::new(engine, comms, idx);
    let (n, me) = (x.comm.size, x.comm.rank);
    let bytes = count * lay.size;
    if n == 1 || bytes == 0 {
        return x.finish();
    }
    let data = lay.data_start(buf).cast_mut();
    let rel = (me + n - root) % n;
    // The parent's mask: the lowest set bit of `rel` (none at the root).
    let mut mask = 1;
    while mask < n && rel & mask == 0 {
        mask <<= 1;
    }
    if mask < n {
        // SAFETY: `data` is the `bytes` bytes of the caller's buffer.
        unsafe { x.recv((rel - mask + root) % n, 0, data, bytes) }?;
    }
    // Children at `rel + m` for the masks below the parent's, largest first; their sends are
    // waited for together.
    let mut pending: [ReqId; usize::BITS as usize] = [0; usize::BITS as usize];
    let mut npending = 0;
    let mut m = mask >> 1;
    while m > 0 {
        if rel + m < n {
            // SAFETY: the caller's buffer, unchanged until every send is complete (below).
            if let Some(p) = unsafe { x.send((rel + m + root) % n, 0, data, bytes) }? {
                pending[npending] = p;
                npending += 1;
            }
        }
        m >>= 1;
    }
    for &p in &pending[..npending] {
        x.wait(Some(p))?;
    }
    x.finish()
}

/// Blocking barrier: dissemination, as [`super::bcast::barrier`]. In round `k` this rank sends
/// an empty message to `rank + 2^k` and receives one from `rank - 2^k` (mod size).
pub(crate) fn barrier(engine: &mut Engine, comms: &mut CommTable, idx: CommIdx) -> MpiResult<()> {
    let mut x = Exchange::new(engine, comms, idx);
    let (n, me) = (x.comm.size, x.comm.rank);
    let mut dist = 1;
    let mut step = 0;
    while dist < n {
        // SAFETY: empty messages: no byte is read or written.
        let p = unsafe { x.send((me + dist) % n, step, std::ptr::null(), 0) }?;
        unsafe { x.recv((me + n - dist) % n, step, std::ptr::null_mut(), 0) }?;
        x.wait(p)?;
        dist *= 2;
        step += 1;
    }
    x.finish()
}
