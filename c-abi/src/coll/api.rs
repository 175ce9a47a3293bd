//! The collective MPI functions: argument checks, then the algorithm's schedule, run at once
//! (`MPI_Bcast`) or started and handed out as a request (`MPI_Ibcast`).
//!
//! Each collective has one function that checks its arguments and builds its schedule; the
//! [`collective!`] macro makes the blocking and the nonblocking entry point from it, so the
//! two cannot drift apart. Checks follow MPICH's classes: an intercommunicator or invalid
//! communicator is `MPI_ERR_COMM`, a negative count `MPI_ERR_COUNT`, an invalid or uncommitted
//! datatype `MPI_ERR_TYPE`, a root out of range `MPI_ERR_ROOT`, an operation not defined on the
//! type `MPI_ERR_OP`, a NULL buffer with data, `MPI_IN_PLACE` where the standard does not allow
//! it, or a send buffer that is the receive buffer `MPI_ERR_BUFFER`. Every check happens before
//! anything is sent, and a failed call consumes no collective sequence number, so the library
//! stays usable after an error returned by `MPI_ERRORS_RETURN`.

use super::allgather;
use super::alltoall::{self, Block};
use super::bcast;
use super::buf::{check_op, Layout};
use super::gather::{self, Part};
use super::reduce;
use super::sched::{Builder, Reducer, Schedule};
use crate::abi::*;
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use super::Cx;
use std::ffi::{c_int, c_void};

// ---- Argument checks ----

fn in_place(p: *const c_void) -> bool {
    p as usize == usize::MAX
}

/// The communicator of a collective: `MPI_ERR_COMM` unless it is an intracommunicator.
fn intra(cx: &Cx<'_>, comm: MPI_Comm) -> MpiResult<CommIdx> {
    let (idx, c) = cx.comms.lookup(comm)?;
    if c.is_inter() {
        return Err(MpiError::new(
            MPI_ERR_COMM,
            format!("{} is an intercommunicator; this library has collectives on intracommunicators only (MPI_Intercomm_merge makes one)", c.name),
        )
        .on(idx));
    }
    Ok(idx)
}

fn count(n: c_int, what: &str) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("{what} is {n}; it must be 0 or more"),
        )
    })
}

fn root(cx: &Cx<'_>, idx: CommIdx, root: c_int) -> MpiResult<usize> {
    let size = cx.comms.get(idx).size;
    match usize::try_from(root) {
        Ok(r) if r < size => Ok(r),
        _ => Err(MpiError::new(
            MPI_ERR_ROOT,
            format!(
                "root {root} is not a rank of the communicator (valid: 0..={})",
                size - 1
            ),
        )),
    }
}

/// A buffer of `n` elements of `dt`: its layout, after checking the type and that the buffer
/// is neither `MPI_IN_PLACE` (the caller handles where it is allowed) nor NULL with data.
fn data(
    cx: &Cx<'_>,
    buf: *const c_void,
    n: usize,
    dt: MPI_Datatype,
    what: &str,
) -> MpiResult<Layout> {
    let lay = Layout::of(cx.types, dt)?;
    if in_place(buf) {
        return Err(MpiError::new(
            MPI_ERR_BUFFER,
            format!("{what} cannot be MPI_IN_PLACE here"),
        ));
    }
    if buf.is_null() && n > 0 && lay.size > 0 && lay.true_lb == 0 {
        return Err(MpiError::new(
            MPI_ERR_BUFFER,
            format!("{what} is NULL but holds {n} elements"),
        ));
    }
    Ok(lay)
}

fn aliased(send: *const c_void, recv: *const c_void, n: usize) -> MpiResult<()> {
    if n > 0 && std::ptr::eq(send, recv) {
        return Err(MpiError::new(
            MPI_ERR_BUFFER,
            "the send and receive buffers are the same; pass MPI_IN_PLACE as the send buffer to work in place",
        ));
    }
    Ok(())
}

/// An array argument of `n` ints (counts, displacements), or `MPI_ERR_ARG` if NULL.
fn ints<'a>(p: *const c_int, n: usize, what: &str) -> MpiResult<&'a [c_int]> {
    if p.is_null() {
        return Err(MpiError::arg(format!("the {what} array is NULL")));
    }
    // SAFETY: the caller's array has one entry per rank (MPI's contract for this argument).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

fn counts(p: *const c_int, n: usize, what: &str) -> MpiResult<Vec<usize>> {
    ints(p, n, what)?.iter().map(|&c| count(c, what)).collect()
}

/// Element `disp` of a buffer (displacements in extents, possibly negative).
fn elem(base: *const c_void, lay: &Layout, disp: c_int) -> *mut u8 {
    base.cast::<u8>()
        .cast_mut()
        .wrapping_offset(disp as isize * lay.extent)
}

/// The argument names one side of a transfer reports in its errors.
struct Side {
    count: &'static str,
    counts: &'static str,
    buf: &'static str,
}

const SEND: Side = Side {
    count: "sendcount",
    counts: "sendcounts",
    buf: "sendbuf",
};

const RECV: Side = Side {
    count: "recvcount",
    counts: "recvcounts",
    buf: "recvbuf",
};

/// `n` elements of `dt` at `buf`, the count and buffer of `side`: the buffer is checked as
/// `blocks` such parts end to end (a root's or an alltoall's buffer has one per process).
fn part(
    cx: &Cx<'_>,
    buf: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    blocks: usize,
    side: &Side,
) -> MpiResult<Part> {
    let n = count(n, side.count)?;
    let lay = data(cx, buf, n * blocks, dt, side.buf)?;
    Ok(Part {
        base: buf.cast_mut().cast(),
        count: n,
        lay,
    })
}

/// [`part`], or `None` if `buf` is `MPI_IN_PLACE` where `in_place_ok` (elsewhere
/// `MPI_IN_PLACE` is an error).
fn unless_in_place(
    cx: &Cx<'_>,
    in_place_ok: bool,
    buf: *const c_void,
    n: c_int,
    dt: MPI_Datatype,
    blocks: usize,
    side: &Side,
) -> MpiResult<Option<Part>> {
    if in_place_ok && in_place(buf) {
        return Ok(None);
    }
    part(cx, buf, n, dt, blocks, side).map(Some)
}

/// One block per process of `buf` from the `counts_` and `displs` arrays (displacements in
/// extents of `dt`): each block's address and count, and the layout of `dt`.
#[allow(clippy::too_many_arguments)]
fn v_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: *const c_int,
    displs: *const c_int,
    displs_name: &str,
    dt: MPI_Datatype,
    size: usize,
    side: &Side,
) -> MpiResult<(Vec<(*mut u8, usize)>, Layout)> {
    let c = counts(counts_, size, side.counts)?;
    let d = ints(displs, size, displs_name)?;
    let lay = data(cx, buf, c.iter().sum(), dt, side.buf)?;
    let blocks = (0..size).map(|i| (elem(buf, &lay, d[i]), c[i])).collect();
    Ok((blocks, lay))
}

/// [`v_blocks`] as alltoall blocks, each with its layout.
fn typed((blocks, lay): (Vec<(*mut u8, usize)>, Layout)) -> Vec<Block> {
    blocks
        .into_iter()
        .map(|(p, n)| (p, n, lay.clone()))
        .collect()
}

/// A rooted collective's root (checked), this process's rank and the communicator's size.
fn rooted(cx: &Cx<'_>, idx: CommIdx, r: c_int) -> MpiResult<(usize, usize, usize)> {
    let r = root(cx, idx, r)?;
    let c = cx.comms.get(idx);
    Ok((r, c.rank, c.size))
}

/// Runs `f` and routes its error to the communicator's handler.
fn on<T>(idx: CommIdx, r: MpiResult<T>) -> MpiResult<T> {
    r.map_err(|e| if e.comm.is_none() { e.on(idx) } else { e })
}

/// The intracommunicator `comm` and what `check` makes of the other arguments; the errors
/// of `check` go to the communicator's handler.
fn checked<T>(
    cx: &Cx<'_>,
    comm: MPI_Comm,
    check: impl FnOnce(&Cx<'_>, CommIdx) -> MpiResult<T>,
) -> MpiResult<(CommIdx, T)> {
    let idx = intra(cx, comm)?;
    Ok((idx, on(idx, check(cx, idx))?))
}

fn builder(cx: &mut Cx<'_>, idx: CommIdx) -> Builder {
    cx.builder(idx)
}

/// Starts a nonblocking collective and stores its request in `request`.
fn begin(cx: &mut Cx<'_>, s: Schedule, request: Out<MPI_Request>) -> MpiResult<()> {
    let comm = s.comm;
    let id = on(comm, super::start(cx.engine, s))?;
    request.set(crate::p2p::request::handle(&cx.engine, id));
    Ok(())
}

/// Makes the blocking and nonblocking entry points of a collective from its schedule builder.
macro_rules! collective {
    (
        $(#[$doc:meta])* $mpi:ident / $pmpi:ident,
        $(#[$idoc:meta])* $impi:ident / $ipmpi:ident,
        $build:ident ( $($arg:ident : $ty:ty),* ) on $comm:ident
    ) => {
        mpi_fn! {
            $(#[$doc])*
            fn $mpi / $pmpi($($arg: $ty),*) |st| {
                let cx = &mut st.runtime()?.coll();
                let s = $build(cx, $($arg),*)?;
                let idx = s.comm;
                on(idx, cx.run(s))
            }
        }
        mpi_fn! {
            $(#[$idoc])*
            fn $impi / $ipmpi($($arg: $ty,)* request: *mut MPI_Request) |st| {
                let cx = &mut st.runtime()?.coll();
                let (idx, _) = cx.comms.lookup($comm)?;
                let out = on(idx, Out::new(request, "request"))?;
                let s = $build(cx, $($arg),*)?;
                begin(cx, s, out)
            }
        }
    };
}

// ---- Barrier and broadcast ----

fn barrier_s(cx: &mut Cx<'_>, comm: MPI_Comm) -> MpiResult<Schedule> {
    let idx = intra(cx, comm)?;
    let mut b = builder(cx, idx);
    bcast::barrier(&mut b);
    Ok(b.finish())
}

collective! {
    /// `MPI_Barrier`: returns once every process of `comm` has called it.
    MPI_Barrier / PMPI_Barrier,
    /// `MPI_Ibarrier`: a barrier that completes when every process has started it.
    MPI_Ibarrier / PMPI_Ibarrier,
    barrier_s(comm: MPI_Comm) on comm
}

fn bcast_s(
    cx: &mut Cx<'_>,
    buffer: *mut c_void,
    n: c_int,
    datatype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (n, lay, r)) = checked(cx, comm, |cx, idx| {
        let n = count(n, "count")?;
        let lay = data(cx, buffer, n, datatype, "buffer")?;
        Ok((n, lay, root(cx, idx, r)?))
    })?;
    let mut b = builder(cx, idx);
    bcast::bcast(&mut b, buffer.cast(), n, &lay, r);
    Ok(b.finish())
}

collective! {
    /// `MPI_Bcast`: `root`'s buffer to every process.
    MPI_Bcast / PMPI_Bcast,
    /// `MPI_Ibcast`: nonblocking `MPI_Bcast`.
    MPI_Ibcast / PMPI_Ibcast,
    bcast_s(buffer: *mut c_void, count: c_int, datatype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

// ---- Gather and scatter ----

#[allow(clippy::too_many_arguments)]
fn gather_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (mine, recv, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let recv = (me == r)
            .then(|| part(cx, recvbuf, recvcount, recvtype, size, &RECV))
            .transpose()?;
        let mine = match &recv {
            // In place: the root's own block is already in its receive buffer.
            Some(rp) if in_place(sendbuf) => Part {
                base: rp.lay.at_mut(rp.base, me * rp.count),
                count: rp.count,
                lay: rp.lay.clone(),
            },
            _ => {
                let m = part(cx, sendbuf, sendcount, sendtype, 1, &SEND)?;
                if let Some(rp) = &recv {
                    aliased(sendbuf, recvbuf, m.count.min(rp.count))?;
                }
                m
            }
        };
        Ok((mine, recv, r))
    })?;
    let mut b = builder(cx, idx);
    gather::gather(&mut b, &mine, recv.as_ref(), r);
    Ok(b.finish())
}

collective! {
    /// `MPI_Gather`: every process's block to `root`, in rank order.
    MPI_Gather / PMPI_Gather,
    /// `MPI_Igather`: nonblocking `MPI_Gather`.
    MPI_Igather / PMPI_Igather,
    gather_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn gatherv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (mine, recv, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let recv = (me == r)
            .then(|| {
                v_blocks(
                    cx, recvbuf, recvcounts, displs, "displs", recvtype, size, &RECV,
                )
            })
            .transpose()?;
        let mine = unless_in_place(cx, me == r, sendbuf, sendcount, sendtype, 1, &SEND)?;
        Ok((mine, recv, r))
    })?;
    let mut b = builder(cx, idx);
    let recv = recv.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    gather::gatherv(&mut b, mine.as_ref(), recv, r);
    Ok(b.finish())
}

collective! {
    /// `MPI_Gatherv`: every process's block to `root`, each of its own size and place.
    MPI_Gatherv / PMPI_Gatherv,
    /// `MPI_Igatherv`: nonblocking `MPI_Gatherv`.
    MPI_Igatherv / PMPI_Igatherv,
    gatherv_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn scatter_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (send, mine, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let send = (me == r)
            .then(|| part(cx, sendbuf, sendcount, sendtype, size, &SEND))
            .transpose()?;
        let mine = unless_in_place(cx, me == r, recvbuf, recvcount, recvtype, 1, &RECV)?;
        if let (Some(sp), Some(m)) = (&send, &mine) {
            aliased(sendbuf, recvbuf, m.count.min(sp.count))?;
        }
        Ok((send, mine, r))
    })?;
    let mut b = builder(cx, idx);
    gather::scatter(&mut b, send.as_ref(), mine.as_ref(), r);
    Ok(b.finish())
}

collective! {
    /// `MPI_Scatter`: block `i` of `root`'s buffer to process `i`.
    MPI_Scatter / PMPI_Scatter,
    /// `MPI_Iscatter`: nonblocking `MPI_Scatter`.
    MPI_Iscatter / PMPI_Iscatter,
    scatter_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn scatterv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (send, mine, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, size) = rooted(cx, idx, r)?;
        let send = (me == r)
            .then(|| {
                v_blocks(
                    cx, sendbuf, sendcounts, displs, "displs", sendtype, size, &SEND,
                )
            })
            .transpose()?;
        let mine = unless_in_place(cx, me == r, recvbuf, recvcount, recvtype, 1, &RECV)?;
        Ok((send, mine, r))
    })?;
    let mut b = builder(cx, idx);
    let send = send.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    gather::scatterv(&mut b, send, mine.as_ref(), r);
    Ok(b.finish())
}

collective! {
    /// `MPI_Scatterv`: blocks of `root`'s buffer, each of its own size and place, to each process.
    MPI_Scatterv / PMPI_Scatterv,
    /// `MPI_Iscatterv`: nonblocking `MPI_Scatterv`.
    MPI_Iscatterv / PMPI_Iscatterv,
    scatterv_s(sendbuf: *const c_void, sendcounts: *const c_int, displs: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, root: c_int, comm: MPI_Comm) on comm
}

// ---- Allgather ----

#[allow(clippy::too_many_arguments)]
fn allgather_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (mine, recv)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let mine = unless_in_place(cx, true, sendbuf, sendcount, sendtype, 1, &SEND)?;
        let recv = part(cx, recvbuf, recvcount, recvtype, size, &RECV)?;
        if let Some(m) = &mine {
            aliased(sendbuf, recvbuf, m.count.min(recv.count))?;
        }
        Ok((mine, recv))
    })?;
    let mut b = builder(cx, idx);
    allgather::allgather(&mut b, mine.as_ref(), &recv);
    Ok(b.finish())
}

collective! {
    /// `MPI_Allgather`: every process's block to every process.
    MPI_Allgather / PMPI_Allgather,
    /// `MPI_Iallgather`: nonblocking `MPI_Allgather`.
    MPI_Iallgather / PMPI_Iallgather,
    allgather_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn allgatherv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (mine, (blocks, lay))) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let mine = unless_in_place(cx, true, sendbuf, sendcount, sendtype, 1, &SEND)?;
        let recv = v_blocks(
            cx, recvbuf, recvcounts, displs, "displs", recvtype, size, &RECV,
        )?;
        if mine.is_some() {
            aliased(sendbuf, recvbuf, 1)?;
        }
        Ok((mine, recv))
    })?;
    let mut b = builder(cx, idx);
    allgather::allgatherv(&mut b, mine.as_ref(), &blocks, &lay);
    Ok(b.finish())
}

collective! {
    /// `MPI_Allgatherv`: every process's block, each of its own size and place, to every process.
    MPI_Allgatherv / PMPI_Allgatherv,
    /// `MPI_Iallgatherv`: nonblocking `MPI_Allgatherv`.
    MPI_Iallgatherv / PMPI_Iallgatherv,
    allgatherv_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, displs: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

// ---- Alltoall ----

#[allow(clippy::too_many_arguments)]
fn alltoall_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (send, recv)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let recv = part(cx, recvbuf, recvcount, recvtype, size, &RECV)?;
        let send = unless_in_place(cx, true, sendbuf, sendcount, sendtype, size, &SEND)?;
        if let Some(s) = &send {
            aliased(sendbuf, recvbuf, s.count.min(recv.count))?;
        }
        Ok((send, recv))
    })?;
    let size = cx.comms.get(idx).size;
    let (rc, rlay) = (recv.count, recv.lay);
    let mut b = builder(cx, idx);
    let (sbase, sc, slay) = match send {
        Some(s) => (s.base, s.count, s.lay),
        None => {
            // In place: send from a copy of the receive buffer.
            let t = b.temp(rc * size, &rlay);
            b.copy(recvbuf.cast(), rc * size, &rlay, t, rc * size, &rlay);
            (t, rc, rlay.clone())
        }
    };
    let sblocks: Vec<Block> = (0..size)
        .map(|i| (slay.at_mut(sbase, i * sc), sc, slay.clone()))
        .collect();
    let rblocks: Vec<Block> = (0..size)
        .map(|i| (rlay.at_mut(recvbuf.cast(), i * rc), rc, rlay.clone()))
        .collect();
    alltoall::alltoall(&mut b, &sblocks, &rblocks, sc * slay.size);
    Ok(b.finish())
}

collective! {
    /// `MPI_Alltoall`: block `j` of process `i`'s send buffer to block `i` of process `j`'s
    /// receive buffer.
    MPI_Alltoall / PMPI_Alltoall,
    /// `MPI_Ialltoall`: nonblocking `MPI_Alltoall`.
    MPI_Ialltoall / PMPI_Ialltoall,
    alltoall_s(sendbuf: *const c_void, sendcount: c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcount: c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

/// For an in-place alltoallv/w: the receive buffer's blocks copied to a temporary, as send
/// blocks. `blocks[i]`: where block `i` is in the receive buffer.
fn in_place_copy(b: &mut Builder, blocks: &[Block]) -> Vec<Block> {
    let used = blocks.iter().filter(|x| x.1 > 0 && x.2.size > 0);
    let lo = used.clone().map(|x| x.0 as isize + x.2.true_lb).min();
    let hi = used
        .map(|x| x.0 as isize + x.2.true_lb + x.2.span(x.1) as isize)
        .max();
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return blocks.to_vec();
    };
    let bytes = (hi - lo) as usize;
    let t = b.temp_bytes(bytes);
    b.copy(
        lo as *const u8,
        bytes,
        &Layout::BYTES,
        t,
        bytes,
        &Layout::BYTES,
    );
    blocks
        .iter()
        .map(|(p, n, lay)| (t.wrapping_offset(*p as isize - lo), *n, lay.clone()))
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn alltoallv_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (sblocks, rblocks)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let rblocks = typed(v_blocks(
            cx, recvbuf, recvcounts, rdispls, "rdispls", recvtype, size, &RECV,
        )?);
        let sblocks = if in_place(sendbuf) {
            None
        } else {
            let sblocks = typed(v_blocks(
                cx, sendbuf, sendcounts, sdispls, "sdispls", sendtype, size, &SEND,
            )?);
            let sent: usize = sblocks.iter().map(|x| x.1).sum();
            aliased(sendbuf, recvbuf, sent.min(1))?;
            Some(sblocks)
        };
        Ok((sblocks, rblocks))
    })?;
    let mut b = builder(cx, idx);
    let sblocks = sblocks.unwrap_or_else(|| in_place_copy(&mut b, &rblocks));
    alltoall::windowed(&mut b, &sblocks, &rblocks);
    Ok(b.finish())
}

collective! {
    /// `MPI_Alltoallv`: `MPI_Alltoall` with a count and displacement per process.
    MPI_Alltoallv / PMPI_Alltoallv,
    /// `MPI_Ialltoallv`: nonblocking `MPI_Alltoallv`.
    MPI_Ialltoallv / PMPI_Ialltoallv,
    alltoallv_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtype: MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtype: MPI_Datatype, comm: MPI_Comm) on comm
}

/// The datatypes of an alltoallw, one per process: `MPI_ERR_ARG` if NULL.
fn types<'a>(p: *const MPI_Datatype, n: usize, what: &str) -> MpiResult<&'a [MPI_Datatype]> {
    if p.is_null() {
        return Err(MpiError::arg(format!("the {what} array is NULL")));
    }
    // SAFETY: one datatype per process (MPI's contract for this argument).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

#[allow(clippy::too_many_arguments)]
fn w_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: &[usize],
    displs: &[c_int],
    tys: &[MPI_Datatype],
    what: &str,
) -> MpiResult<Vec<Block>> {
    (0..counts_.len())
        .map(|i| {
            let lay = data(cx, buf, counts_[i], tys[i], what)?;
            Ok((
                buf.cast::<u8>()
                    .cast_mut()
                    .wrapping_offset(displs[i] as isize),
                counts_[i],
                lay,
            ))
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn alltoallw_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtypes: *const MPI_Datatype,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (sblocks, rblocks)) = checked(cx, comm, |cx, idx| {
        let size = cx.comms.get(idx).size;
        let rc = counts(recvcounts, size, RECV.counts)?;
        let rd = ints(rdispls, size, "rdispls")?;
        let rt_ = types(recvtypes, size, "recvtypes")?;
        let rblocks = w_blocks(cx, recvbuf, &rc, rd, rt_, RECV.buf)?;
        let sblocks = if in_place(sendbuf) {
            None
        } else {
            let sc = counts(sendcounts, size, SEND.counts)?;
            let sd = ints(sdispls, size, "sdispls")?;
            let st_ = types(sendtypes, size, "sendtypes")?;
            aliased(sendbuf, recvbuf, sc.iter().sum::<usize>().min(1))?;
            Some(w_blocks(cx, sendbuf, &sc, sd, st_, SEND.buf)?)
        };
        Ok((sblocks, rblocks))
    })?;
    let mut b = builder(cx, idx);
    let sblocks = sblocks.unwrap_or_else(|| in_place_copy(&mut b, &rblocks));
    alltoall::windowed(&mut b, &sblocks, &rblocks);
    Ok(b.finish())
}

collective! {
    /// `MPI_Alltoallw`: `MPI_Alltoallv` with a datatype per process and byte displacements.
    MPI_Alltoallw / PMPI_Alltoallw,
    /// `MPI_Ialltoallw`: nonblocking `MPI_Alltoallw`.
    MPI_Ialltoallw / PMPI_Ialltoallw,
    alltoallw_s(sendbuf: *const c_void, sendcounts: *const c_int, sdispls: *const c_int, sendtypes: *const MPI_Datatype, recvbuf: *mut c_void, recvcounts: *const c_int, rdispls: *const c_int, recvtypes: *const MPI_Datatype, comm: MPI_Comm) on comm
}

// ---- Reductions ----

/// The checked arguments of a reduction: count, layout, whether the operation commutes, and
/// the data to reduce (the receive buffer with `MPI_IN_PLACE`).
struct Red {
    n: usize,
    lay: Layout,
    commutative: bool,
    send: *const u8,
    in_place: bool,
}

/// Checks a reduction's arguments. `recv_used`: whether this rank's receive buffer matters;
/// `in_place_ok`: whether `MPI_IN_PLACE` is allowed here.
#[allow(clippy::too_many_arguments)]
fn red(
    cx: &Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    recv_n: Option<usize>,
    datatype: MPI_Datatype,
    op: MPI_Op,
    in_place_ok: bool,
) -> MpiResult<Red> {
    let n = count(n, "count")?;
    let lay = Layout::of(cx.types, datatype)?;
    let commutative = check_op(cx.ops, cx.types, op, datatype)?;
    if let Some(rn) = recv_n {
        data(cx, recvbuf, rn, datatype, "recvbuf")?;
    }
    let in_place = in_place(sendbuf);
    let send = if in_place {
        if !in_place_ok {
            return Err(MpiError::new(
                MPI_ERR_BUFFER,
                "sendbuf cannot be MPI_IN_PLACE here (only at the root)",
            ));
        }
        recvbuf.cast_const().cast()
    } else {
        data(cx, sendbuf, n, datatype, "sendbuf")?;
        if recv_n.is_some() {
            aliased(sendbuf, recvbuf, n)?;
        }
        sendbuf.cast()
    };
    Ok(Red {
        n,
        lay,
        commutative,
        send,
        in_place,
    })
}

/// The schedule builder of a reduction with `op` on `dt`.
fn reducer(cx: &mut Cx<'_>, idx: CommIdx, op: MPI_Op, dt: MPI_Datatype) -> MpiResult<Builder> {
    let r = on(idx, crate::op::Reduction::new(&cx.ops, &cx.types, op, dt))?;
    let mut b = builder(cx, idx);
    b.set_reducer(Reducer::Op(r));
    Ok(b)
}

/// Checks a reduction whose result every process receives (`MPI_IN_PLACE` allowed) and
/// starts its schedule.
fn red_everywhere(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<(Red, Builder)> {
    let (idx, x) = checked(cx, comm, |cx, _| {
        let cnt = count(n, "count")?;
        red(cx, sendbuf, recvbuf, n, Some(cnt), datatype, op, true)
    })?;
    Ok((x, reducer(cx, idx, op, datatype)?))
}

#[allow(clippy::too_many_arguments)]
fn reduce_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, (x, r)) = checked(cx, comm, |cx, idx| {
        let (r, me, _) = rooted(cx, idx, r)?;
        let at_root = me == r;
        let cnt = count(n, "count")?;
        let recv_n = at_root.then_some(cnt);
        let x = red(cx, sendbuf, recvbuf, n, recv_n, datatype, op, at_root)?;
        Ok((x, r))
    })?;
    let mut b = reducer(cx, idx, op, datatype)?;
    if x.n > 0 {
        reduce::reduce(
            &mut b,
            x.send,
            recvbuf.cast(),
            x.n,
            &x.lay,
            r,
            x.commutative,
        );
    }
    Ok(b.finish())
}

collective! {
    /// `MPI_Reduce`: the reduction of every process's data with `op`, at `root`.
    MPI_Reduce / PMPI_Reduce,
    /// `MPI_Ireduce`: nonblocking `MPI_Reduce`.
    MPI_Ireduce / PMPI_Ireduce,
    reduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) on comm
}

fn allreduce_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (x, mut b) = red_everywhere(cx, sendbuf, recvbuf, n, datatype, op, comm)?;
    let send = (!x.in_place).then_some(x.send);
    reduce::allreduce(&mut b, send, recvbuf.cast(), x.n, &x.lay, x.commutative);
    Ok(b.finish())
}

collective! {
    /// `MPI_Allreduce`: the reduction of every process's data with `op`, at every process.
    MPI_Allreduce / PMPI_Allreduce,
    /// `MPI_Iallreduce`: nonblocking `MPI_Allreduce`.
    MPI_Iallreduce / PMPI_Iallreduce,
    allreduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

fn reduce_scatter_counts(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    rc: MpiResult<Vec<usize>>,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<Schedule> {
    let (x, rc) = on(
        idx,
        (|| {
            let rc = rc?;
            let me = cx.comms.get(idx).rank;
            let total: usize = rc.iter().sum();
            let x = red(
                cx,
                sendbuf,
                recvbuf,
                total.min(c_int::MAX as usize) as c_int,
                Some(rc[me]),
                datatype,
                op,
                true,
            )?;
            Ok((x, rc))
        })(),
    )?;
    let mut b = reducer(cx, idx, op, datatype)?;
    reduce::reduce_scatter(&mut b, x.send, recvbuf.cast(), &rc, &x.lay, x.commutative);
    Ok(b.finish())
}

fn reduce_scatter_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let idx = intra(cx, comm)?;
    let size = cx.comms.get(idx).size;
    let rc = counts(recvcounts, size, "recvcounts");
    reduce_scatter_counts(cx, idx, sendbuf, recvbuf, rc, datatype, op)
}

collective! {
    /// `MPI_Reduce_scatter`: the reduction of every process's data, block `i` (of
    /// `recvcounts[i]` elements) to process `i`.
    MPI_Reduce_scatter / PMPI_Reduce_scatter,
    /// `MPI_Ireduce_scatter`: nonblocking `MPI_Reduce_scatter`.
    MPI_Ireduce_scatter / PMPI_Ireduce_scatter,
    reduce_scatter_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

fn reduce_scatter_block_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let idx = intra(cx, comm)?;
    let size = cx.comms.get(idx).size;
    let rc = count(recvcount, "recvcount").map(|c| vec![c; size]);
    reduce_scatter_counts(cx, idx, sendbuf, recvbuf, rc, datatype, op)
}

collective! {
    /// `MPI_Reduce_scatter_block`: `MPI_Reduce_scatter` with blocks of one size.
    MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block,
    /// `MPI_Ireduce_scatter_block`: nonblocking `MPI_Reduce_scatter_block`.
    MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block,
    reduce_scatter_block_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn scan_any(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    exclusive: bool,
) -> MpiResult<Schedule> {
    let (x, mut b) = red_everywhere(cx, sendbuf, recvbuf, n, datatype, op, comm)?;
    reduce::scan(
        &mut b,
        x.send,
        recvbuf.cast(),
        x.n,
        &x.lay,
        x.commutative,
        exclusive,
    );
    Ok(b.finish())
}

fn scan_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    scan_any(cx, sendbuf, recvbuf, count, datatype, op, comm, false)
}

fn exscan_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    scan_any(cx, sendbuf, recvbuf, count, datatype, op, comm, true)
}

collective! {
    /// `MPI_Scan`: at process `i`, the reduction of the data of processes `0..=i`.
    MPI_Scan / PMPI_Scan,
    /// `MPI_Iscan`: nonblocking `MPI_Scan`.
    MPI_Iscan / PMPI_Iscan,
    scan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

collective! {
    /// `MPI_Exscan`: at process `i > 0`, the reduction of the data of processes `0..i`
    /// (process 0's receive buffer is left alone).
    MPI_Exscan / PMPI_Exscan,
    /// `MPI_Iexscan`: nonblocking `MPI_Exscan`.
    MPI_Iexscan / PMPI_Iexscan,
    exscan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: c_int, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}
