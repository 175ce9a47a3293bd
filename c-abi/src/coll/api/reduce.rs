//! `MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter(_block)`, `MPI_Scan`, `MPI_Exscan` and
//! their nonblocking forms.

use super::checks::{aliased, checked, count, counts, data, in_place, on, rooted};
use super::{begin, inter, reducer, reduction};
use crate::abi::*;
use crate::coll::buf::{check_op, Layout};
use crate::coll::sched::Builder;
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::coll::{direct, reduce};
use crate::comm::CommIdx;
use crate::count::CountArray;
use crate::cptr::Out;
use crate::error::MpiError;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use std::ffi::{c_int, c_void};

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
    n: MPI_Count,
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

/// Checks a reduction whose result every process receives (`MPI_IN_PLACE` allowed) and
/// starts its schedule.
fn red_everywhere(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<(Red, Builder)> {
    let (idx, x) = red_everywhere_checked(cx, sendbuf, recvbuf, n, datatype, op, comm)?;
    Ok((x, reducer(cx, idx, op, datatype)?))
}

/// The checks of [`red_everywhere`], nothing started.
fn red_everywhere_checked(
    cx: &Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<(CommIdx, Red)> {
    checked(cx, comm, |cx, _| {
        let cnt = count(n, "count")?;
        red(cx, sendbuf, recvbuf, n, Some(cnt), datatype, op, true)
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn reduce_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    r: c_int,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::reduce(cx, idx, sendbuf, recvbuf, n, datatype, op, r);
    }
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
    b.finish()
}

collective! {
    /// `MPI_Reduce`: the reduction of every process's data with `op`, at `root`.
    MPI_Reduce / PMPI_Reduce, MPI_Reduce_c / PMPI_Reduce_c,
    /// `MPI_Ireduce`: nonblocking `MPI_Reduce`.
    MPI_Ireduce / PMPI_Ireduce, MPI_Ireduce_c / PMPI_Ireduce_c,
    reduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, root: c_int, comm: MPI_Comm) on comm
}

pub(super) fn allreduce_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    if let Some(idx) = inter::inter(cx, comm)? {
        return inter::allreduce(cx, idx, sendbuf, recvbuf, n, datatype, op);
    }
    let (x, mut b) = red_everywhere(cx, sendbuf, recvbuf, n, datatype, op, comm)?;
    let send = (!x.in_place).then_some(x.send);
    reduce::allreduce(&mut b, send, recvbuf.cast(), x.n, &x.lay, x.commutative);
    b.finish()
}

/// Blocking `MPI_Allreduce` of short contiguous data without a schedule
/// ([`direct::allreduce`]); `false` (nothing done) for the others.
fn allreduce_direct(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<bool> {
    if inter::inter(cx, comm)?.is_some() {
        return Ok(false);
    }
    let (idx, x) = red_everywhere_checked(cx, sendbuf, recvbuf, n, datatype, op, comm)?;
    if !direct::allreduce_fits(x.n, &x.lay) {
        return Ok(false);
    }
    let r = reduction(cx, idx, op, datatype)?;
    let send = (!x.in_place).then_some(x.send);
    // SAFETY: the checked buffers of an MPI_Allreduce of `x.n` elements of `x.lay` (MPI's
    // contract for their sizes).
    let done = unsafe {
        direct::allreduce(
            cx.engine,
            cx.comms,
            idx,
            send,
            recvbuf.cast(),
            x.n,
            &x.lay,
            &r,
            x.commutative,
        )
    };
    on(idx, done).map(|()| true)
}

collective! {
    /// `MPI_Allreduce`: the reduction of every process's data with `op`, at every process.
    MPI_Allreduce / PMPI_Allreduce, MPI_Allreduce_c / PMPI_Allreduce_c,
    /// `MPI_Iallreduce`: nonblocking `MPI_Allreduce`.
    MPI_Iallreduce / PMPI_Iallreduce, MPI_Iallreduce_c / PMPI_Iallreduce_c,
    allreduce_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm,
    fast allreduce_direct
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
                total as MPI_Count,
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
    b.finish()
}

pub(super) fn reduce_scatter_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, c) = cx.comms.lookup(comm)?;
    let rc = counts(recvcounts, c.size, "recvcounts");
    if c.is_inter() {
        return inter::reduce_scatter(cx, idx, sendbuf, recvbuf, rc, datatype, op);
    }
    reduce_scatter_counts(cx, idx, sendbuf, recvbuf, rc, datatype, op)
}

collective! {
    /// `MPI_Reduce_scatter`: the reduction of every process's data, block `i` (of
    /// `recvcounts[i]` elements) to process `i`.
    MPI_Reduce_scatter / PMPI_Reduce_scatter, MPI_Reduce_scatter_c / PMPI_Reduce_scatter_c,
    /// `MPI_Ireduce_scatter`: nonblocking `MPI_Reduce_scatter`.
    MPI_Ireduce_scatter / PMPI_Ireduce_scatter, MPI_Ireduce_scatter_c / PMPI_Ireduce_scatter_c,
    reduce_scatter_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcounts: *const Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

pub(super) fn reduce_scatter_block_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    let (idx, c) = cx.comms.lookup(comm)?;
    let rc = count(recvcount, "recvcount").map(|n| vec![n; c.size]);
    if c.is_inter() {
        return inter::reduce_scatter(cx, idx, sendbuf, recvbuf, rc, datatype, op);
    }
    reduce_scatter_counts(cx, idx, sendbuf, recvbuf, rc, datatype, op)
}

collective! {
    /// `MPI_Reduce_scatter_block`: `MPI_Reduce_scatter` with blocks of one size.
    MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block, MPI_Reduce_scatter_block_c / PMPI_Reduce_scatter_block_c,
    /// `MPI_Ireduce_scatter_block`: nonblocking `MPI_Reduce_scatter_block`.
    MPI_Ireduce_scatter_block / PMPI_Ireduce_scatter_block, MPI_Ireduce_scatter_block_c / PMPI_Ireduce_scatter_block_c,
    reduce_scatter_block_s(sendbuf: *const c_void, recvbuf: *mut c_void, recvcount: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

#[allow(clippy::too_many_arguments)]
fn scan_any(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
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
    b.finish()
}

pub(super) fn scan_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    scan_any(cx, sendbuf, recvbuf, count, datatype, op, comm, false)
}

pub(super) fn exscan_s(
    cx: &mut Cx<'_>,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
) -> MpiResult<Schedule> {
    scan_any(cx, sendbuf, recvbuf, count, datatype, op, comm, true)
}

collective! {
    /// `MPI_Scan`: at process `i`, the reduction of the data of processes `0..=i`.
    MPI_Scan / PMPI_Scan, MPI_Scan_c / PMPI_Scan_c,
    /// `MPI_Iscan`: nonblocking `MPI_Scan`.
    MPI_Iscan / PMPI_Iscan, MPI_Iscan_c / PMPI_Iscan_c,
    scan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}

collective! {
    /// `MPI_Exscan`: at process `i > 0`, the reduction of the data of processes `0..i`
    /// (process 0's receive buffer is left alone).
    MPI_Exscan / PMPI_Exscan, MPI_Exscan_c / PMPI_Exscan_c,
    /// `MPI_Iexscan`: nonblocking `MPI_Exscan`.
    MPI_Iexscan / PMPI_Iexscan, MPI_Iexscan_c / PMPI_Iexscan_c,
    exscan_s(sendbuf: *const c_void, recvbuf: *mut c_void, count: Count, datatype: MPI_Datatype, op: MPI_Op, comm: MPI_Comm) on comm
}
