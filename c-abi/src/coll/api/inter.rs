//! The collectives on intercommunicators: argument checks and schedules
//! ([`crate::coll::inter`]). Each family's builder (`bcast_s`, `allreduce_s`, ...) hands an
//! intercommunicator here first thing ([`inter`]), so the blocking, nonblocking and
//! persistent forms all take this path.
//!
//! Arguments as MPI 4.0 defines them on intercommunicators: in a rooted collective the root
//! passes `MPI_ROOT`, the rest of its group `MPI_PROC_NULL` (their buffers are not looked
//! at), and the other group the root's rank in the remote group (anything else is
//! `MPI_ERR_ROOT`); the buffers that receive from the other group hold one block per
//! remote rank; `MPI_IN_PLACE` is not allowed (`MPI_ERR_BUFFER`, as MPICH).

use super::checks::{
    count, counts, data, ints, on, part, typed, types, v_blocks, w_blocks, RECV, SEND,
};
use super::reducer;
use crate::abi::*;
use crate::coll::buf::{check_op, Layout};
use crate::coll::inter::{self, Role};
use crate::coll::sched::Schedule;
use crate::coll::Cx;
use crate::comm::CommIdx;
use crate::count::CountArray;
use crate::error::{MpiError, MpiResult};
use std::ffi::{c_int, c_void};

/// `Some(index)` if `comm` is an intercommunicator (`MPI_ERR_COMM` if it is no communicator).
pub(super) fn inter(cx: &Cx<'_>, comm: MPI_Comm) -> MpiResult<Option<CommIdx>> {
    let (idx, c) = cx.comms.lookup(comm)?;
    Ok(c.is_inter().then_some(idx))
}

/// The role of this process given the `root` argument.
fn role(cx: &Cx<'_>, idx: CommIdx, root: c_int) -> MpiResult<Role> {
    let remote = cx.comms.get(idx).remote_size();
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r if r >= 0 && (r as usize) < remote => Ok(Role::Leaf(r as usize)),
        _ => Err(MpiError::new(
            MPI_ERR_ROOT,
            format!(
                "root {root} is not valid on an intercommunicator: pass MPI_ROOT at the root, MPI_PROC_NULL at the rest of its group, and the root's rank in the remote group (0..={}) in the other group",
                remote as i64 - 1
            ),
        )),
    }
}

/// This process's role in a rooted collective on intercommunicator `idx` (`root` as the process
/// passed it) and what its side needs: `at_root` made only at the root, `at_leaf` only in the
/// other group (the rest of the root's group needs neither); every error raised on `idx`.
fn rooted<R, L>(
    cx: &Cx<'_>,
    idx: CommIdx,
    root: c_int,
    at_root: impl FnOnce(&Cx<'_>) -> MpiResult<R>,
    at_leaf: impl FnOnce(&Cx<'_>) -> MpiResult<L>,
) -> MpiResult<(Role, Option<R>, Option<L>)> {
    on(
        idx,
        (|| {
            let role = role(cx, idx, root)?;
            let r = (role == Role::Root).then(|| at_root(cx)).transpose()?;
            let l = matches!(role, Role::Leaf(_))
                .then(|| at_leaf(cx))
                .transpose()?;
            Ok((role, r, l))
        })(),
    )
}

fn remote_size(cx: &Cx<'_>, idx: CommIdx) -> usize {
    cx.comms.get(idx).remote_size()
}

pub(super) fn barrier(cx: &mut Cx<'_>, idx: CommIdx) -> MpiResult<Schedule> {
    let mut b = cx.builder(idx);
    inter::barrier(&mut b);
    b.finish()
}

pub(super) fn bcast(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    buffer: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    root: c_int,
) -> MpiResult<Schedule> {
    let (role, n, lay) = on(
        idx,
        (|| {
            let role = role(cx, idx, root)?;
            let n = count(n, "count")?;
            let lay = match role {
                Role::Idle => Layout::BYTES,
                _ => data(cx, buffer, n, datatype, "buffer")?,
            };
            Ok((role, n, lay))
        })(),
    )?;
    let mut b = cx.builder(idx);
    inter::bcast(&mut b, role, buffer.cast(), n, &lay);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gather(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (role, recv, mine) = rooted(
        cx,
        idx,
        root,
        |cx| part(cx, recvbuf, recvcount, recvtype, m, &RECV),
        |cx| part(cx, sendbuf, sendcount, sendtype, 1, &SEND),
    )?;
    let mut b = cx.builder(idx);
    inter::gather(&mut b, role, mine.as_ref(), recv.as_ref());
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn gatherv(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (role, recv, mine) = rooted(
        cx,
        idx,
        root,
        |cx| {
            v_blocks(
                cx, recvbuf, recvcounts, displs, "displs", recvtype, m, &RECV,
            )
        },
        |cx| part(cx, sendbuf, sendcount, sendtype, 1, &SEND),
    )?;
    let mut b = cx.builder(idx);
    let recv = recv.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    inter::gatherv(&mut b, role, mine.as_ref(), recv);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn scatter(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (role, send, mine) = rooted(
        cx,
        idx,
        root,
        |cx| part(cx, sendbuf, sendcount, sendtype, m, &SEND),
        |cx| part(cx, recvbuf, recvcount, recvtype, 1, &RECV),
    )?;
    let mut b = cx.builder(idx);
    inter::scatter(&mut b, role, send.as_ref(), mine.as_ref());
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn scatterv(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    displs: CountArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
    root: c_int,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (role, send, mine) = rooted(
        cx,
        idx,
        root,
        |cx| {
            v_blocks(
                cx, sendbuf, sendcounts, displs, "displs", sendtype, m, &SEND,
            )
        },
        |cx| part(cx, recvbuf, recvcount, recvtype, 1, &RECV),
    )?;
    let mut b = cx.builder(idx);
    let send = send.as_ref().map(|(blocks, lay)| (&blocks[..], lay));
    inter::scatterv(&mut b, role, send, mine.as_ref());
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn allgather(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (mine, recv) = on(
        idx,
        (|| {
            let mine = part(cx, sendbuf, sendcount, sendtype, 1, &SEND)?;
            let recv = part(cx, recvbuf, recvcount, recvtype, m, &RECV)?;
            Ok((mine, recv))
        })(),
    )?;
    let mut b = cx.builder(idx);
    inter::allgather(&mut b, &mine, &recv);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn allgatherv(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    displs: CountArray,
    recvtype: MPI_Datatype,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (mine, (blocks, lay)) = on(
        idx,
        (|| {
            let mine = part(cx, sendbuf, sendcount, sendtype, 1, &SEND)?;
            let recv = v_blocks(
                cx, recvbuf, recvcounts, displs, "displs", recvtype, m, &RECV,
            )?;
            Ok((mine, recv))
        })(),
    )?;
    let mut b = cx.builder(idx);
    inter::allgatherv(&mut b, &mine, &blocks, &lay);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoall(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcount: MPI_Count,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: MPI_Count,
    recvtype: MPI_Datatype,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (send, recv) = on(
        idx,
        (|| {
            let send = part(cx, sendbuf, sendcount, sendtype, m, &SEND)?;
            let recv = part(cx, recvbuf, recvcount, recvtype, m, &RECV)?;
            Ok((send, recv))
        })(),
    )?;
    let blocks = |p: &crate::coll::gather::Part| -> Vec<crate::coll::alltoall::Block> {
        (0..m)
            .map(|j| (p.lay.at_mut(p.base, j * p.count), p.count, p.lay.clone()))
            .collect()
    };
    let (sblocks, rblocks) = (blocks(&send), blocks(&recv));
    let mut b = cx.builder(idx);
    inter::alltoall(&mut b, &sblocks, &rblocks);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoallv(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtype: MPI_Datatype,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (sblocks, rblocks) = on(
        idx,
        (|| {
            let s = typed(v_blocks(
                cx, sendbuf, sendcounts, sdispls, "sdispls", sendtype, m, &SEND,
            )?);
            let r = typed(v_blocks(
                cx, recvbuf, recvcounts, rdispls, "rdispls", recvtype, m, &RECV,
            )?);
            Ok((s, r))
        })(),
    )?;
    let mut b = cx.builder(idx);
    inter::alltoall(&mut b, &sblocks, &rblocks);
    b.finish()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn alltoallw(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    sendcounts: CountArray,
    sdispls: CountArray,
    sendtypes: *const MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: CountArray,
    rdispls: CountArray,
    recvtypes: *const MPI_Datatype,
) -> MpiResult<Schedule> {
    let m = remote_size(cx, idx);
    let (sblocks, rblocks) = on(
        idx,
        (|| {
            let sc = counts(sendcounts, m, SEND.counts)?;
            let sd = ints(sdispls, m, "sdispls")?;
            let st = types(sendtypes, m, "sendtypes")?;
            let s = w_blocks(cx, sendbuf, &sc, &sd, st, SEND.buf)?;
            let rc = counts(recvcounts, m, RECV.counts)?;
            let rd = ints(rdispls, m, "rdispls")?;
            let rt = types(recvtypes, m, "recvtypes")?;
            let r = w_blocks(cx, recvbuf, &rc, &rd, rt, RECV.buf)?;
            Ok((s, r))
        })(),
    )?;
    let mut b = cx.builder(idx);
    inter::alltoall(&mut b, &sblocks, &rblocks);
    b.finish()
}

/// The layout of a reduction's datatype and whether its operation commutes (checked).
fn reduction_args(cx: &Cx<'_>, datatype: MPI_Datatype, op: MPI_Op) -> MpiResult<(Layout, bool)> {
    let lay = Layout::of(cx.types, datatype)?;
    let commutative = check_op(cx.ops, cx.types, op, datatype)?;
    Ok((lay, commutative))
}

#[allow(clippy::too_many_arguments)]
pub(super) fn reduce(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
) -> MpiResult<Schedule> {
    let (role, n, lay, commutative) = on(
        idx,
        (|| {
            let role = role(cx, idx, root)?;
            if role == Role::Idle {
                // Only `root` is significant here: the count, datatype and operation are not
                // looked at (mpi4py passes MPI_BYTE with MPI_SUM), as in MPICH.
                return Ok((role, 0, Layout::BYTES, true));
            }
            let n = count(n, "count")?;
            let (lay, commutative) = reduction_args(cx, datatype, op)?;
            match role {
                Role::Root => {
                    data(cx, recvbuf, n, datatype, "recvbuf")?;
                }
                Role::Leaf(_) => {
                    data(cx, sendbuf, n, datatype, "sendbuf")?;
                }
                Role::Idle => {}
            }
            Ok((role, n, lay, commutative))
        })(),
    )?;
    let mut b = match role {
        Role::Idle => cx.builder(idx),
        _ => reducer(cx, idx, op, datatype)?,
    };
    if n > 0 {
        inter::reduce(
            &mut b,
            role,
            sendbuf.cast(),
            recvbuf.cast(),
            n,
            &lay,
            commutative,
        );
    }
    b.finish()
}

pub(super) fn allreduce(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    n: MPI_Count,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<Schedule> {
    let (n, lay, commutative) = on(
        idx,
        (|| {
            let n = count(n, "count")?;
            let (lay, commutative) = reduction_args(cx, datatype, op)?;
            data(cx, sendbuf, n, datatype, "sendbuf")?;
            data(cx, recvbuf, n, datatype, "recvbuf")?;
            Ok((n, lay, commutative))
        })(),
    )?;
    let mut b = reducer(cx, idx, op, datatype)?;
    if n > 0 {
        inter::allreduce(&mut b, sendbuf.cast(), recvbuf.cast(), n, &lay, commutative);
    }
    b.finish()
}

/// `MPI_Reduce_scatter` (and `_block`, `rc` all one count) on an intercommunicator: `rc`
/// has one count per rank of the local group; the other group's data has `sum(rc)` elements.
pub(super) fn reduce_scatter(
    cx: &mut Cx<'_>,
    idx: CommIdx,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    rc: MpiResult<Vec<usize>>,
    datatype: MPI_Datatype,
    op: MPI_Op,
) -> MpiResult<Schedule> {
    let me = cx.comms.get(idx).rank;
    let (rc, lay, commutative) = on(
        idx,
        (|| {
            let rc = rc?;
            let total: usize = rc.iter().sum();
            let (lay, commutative) = reduction_args(cx, datatype, op)?;
            data(cx, sendbuf, total, datatype, "sendbuf")?;
            data(cx, recvbuf, rc[me], datatype, "recvbuf")?;
            Ok((rc, lay, commutative))
        })(),
    )?;
    let mut b = reducer(cx, idx, op, datatype)?;
    if rc.iter().any(|&c| c > 0) {
        inter::reduce_scatter(
            &mut b,
            sendbuf.cast(),
            recvbuf.cast(),
            &rc,
            &lay,
            commutative,
        );
    }
    b.finish()
}
