//! The argument checks of the collectives, in MPICH's classes (see the `api` module), and the
//! buffers they describe.

use crate::abi::*;
use crate::coll::alltoall::Block;
use crate::coll::buf::Layout;
use crate::coll::gather::Part;
use crate::coll::Cx;
use crate::comm::CommIdx;
use crate::count::CountArray;
use crate::error::{MpiError, MpiResult};
use std::ffi::{c_int, c_void};

pub(super) fn in_place(p: *const c_void) -> bool {
    p as usize == usize::MAX
}

/// The communicator of a collective: `MPI_ERR_COMM` unless it is an intracommunicator.
pub(super) fn intra(cx: &Cx<'_>, comm: MPI_Comm) -> MpiResult<CommIdx> {
    let (idx, c) = cx.comms.lookup(comm)?;
    if c.is_inter() {
        return Err(MpiError::new(
            MPI_ERR_COMM,
            format!("{} is an intercommunicator; MPI defines this collective (MPI_Scan, MPI_Exscan) on intracommunicators only (MPI_Intercomm_merge makes one)", c.label()),
        )
        .on(idx));
    }
    Ok(idx)
}

pub(super) fn count(n: MPI_Count, what: &str) -> MpiResult<usize> {
    usize::try_from(n).map_err(|_| {
        MpiError::new(
            MPI_ERR_COUNT,
            format!("{what} is {n}; it must be 0 or more"),
        )
    })
}

pub(super) fn root(cx: &Cx<'_>, idx: CommIdx, root: c_int) -> MpiResult<usize> {
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
pub(super) fn data(
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

/// `MPI_ERR_BUFFER` when the send and receive buffers are one (`MPI_IN_PLACE` is the way to
/// say that), judged only when `n`, the elements sent, is not zero and the buffer is not
/// `MPI_BOTTOM`: with zero counts nothing is read or written (mpi4py passes one empty
/// buffer for both), and with `MPI_BOTTOM` the addresses are in the datatypes.
pub(super) fn aliased(send: *const c_void, recv: *const c_void, n: usize) -> MpiResult<()> {
    if n > 0 && !send.is_null() && std::ptr::eq(send, recv) {
        return Err(MpiError::new(
            MPI_ERR_BUFFER,
            "the send and receive buffers are the same; pass MPI_IN_PLACE as the send buffer to work in place",
        ));
    }
    Ok(())
}

/// An array argument of `n` counts or displacements (of either form's width), or
/// `MPI_ERR_ARG` if NULL.
pub(super) fn ints(p: CountArray, n: usize, what: &str) -> MpiResult<Vec<MPI_Count>> {
    if p.is_null() {
        return Err(MpiError::arg(format!("the {what} array is NULL")));
    }
    // The caller's array has one entry per rank (MPI's contract for this argument).
    p.read(n, what)
}

pub(super) fn counts(p: CountArray, n: usize, what: &str) -> MpiResult<Vec<usize>> {
    ints(p, n, what)?.iter().map(|&c| count(c, what)).collect()
}

/// Element `disp` of a buffer (displacements in extents, possibly negative).
pub(super) fn elem(base: *const c_void, lay: &Layout, disp: MPI_Count) -> *mut u8 {
    base.cast::<u8>()
        .cast_mut()
        .wrapping_offset(disp as isize * lay.extent)
}

/// The argument names one side of a transfer reports in its errors.
pub(super) struct Side {
    pub count: &'static str,
    pub counts: &'static str,
    pub buf: &'static str,
}

pub(super) const SEND: Side = Side {
    count: "sendcount",
    counts: "sendcounts",
    buf: "sendbuf",
};

pub(super) const RECV: Side = Side {
    count: "recvcount",
    counts: "recvcounts",
    buf: "recvbuf",
};

/// `n` elements of `dt` at `buf`, the count and buffer of `side`: the buffer is checked as
/// `blocks` such parts end to end (a root's or an alltoall's buffer has one per process).
pub(super) fn part(
    cx: &Cx<'_>,
    buf: *const c_void,
    n: MPI_Count,
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
pub(super) fn unless_in_place(
    cx: &Cx<'_>,
    in_place_ok: bool,
    buf: *const c_void,
    n: MPI_Count,
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
pub(super) fn v_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: CountArray,
    displs: CountArray,
    displs_name: &str,
    dt: MPI_Datatype,
    size: usize,
    side: &Side,
) -> MpiResult<(Vec<(*mut u8, usize)>, Layout)> {
    let c = counts(counts_, size, side.counts)?;
    let d = ints(displs, size, displs_name)?;
    let total = c.iter().try_fold(0usize, |t, &n| t.checked_add(n));
    let lay = data(cx, buf, total.unwrap_or(usize::MAX), dt, side.buf)?;
    let blocks = (0..size).map(|i| (elem(buf, &lay, d[i]), c[i])).collect();
    Ok((blocks, lay))
}

/// [`v_blocks`] as alltoall blocks, each with its layout.
pub(super) fn typed((blocks, lay): (Vec<(*mut u8, usize)>, Layout)) -> Vec<Block> {
    blocks
        .into_iter()
        .map(|(p, n)| (p, n, lay.clone()))
        .collect()
}

/// A rooted collective's root (checked), this process's rank and the communicator's size.
pub(super) fn rooted(cx: &Cx<'_>, idx: CommIdx, r: c_int) -> MpiResult<(usize, usize, usize)> {
    let r = root(cx, idx, r)?;
    let c = cx.comms.get(idx);
    Ok((r, c.rank, c.size))
}

/// Runs `f` and routes its error to the communicator's handler.
pub(super) fn on<T>(idx: CommIdx, r: MpiResult<T>) -> MpiResult<T> {
    r.map_err(|e| if e.comm.is_none() { e.on(idx) } else { e })
}

/// The intracommunicator `comm` and what `check` makes of the other arguments; the errors
/// of `check` go to the communicator's handler.
pub(super) fn checked<T>(
    cx: &Cx<'_>,
    comm: MPI_Comm,
    check: impl FnOnce(&Cx<'_>, CommIdx) -> MpiResult<T>,
) -> MpiResult<(CommIdx, T)> {
    let idx = intra(cx, comm)?;
    Ok((idx, on(idx, check(cx, idx))?))
}

/// The datatypes of an alltoallw, one per process: `MPI_ERR_ARG` if NULL.
pub(super) fn types<'a>(
    p: *const MPI_Datatype,
    n: usize,
    what: &str,
) -> MpiResult<&'a [MPI_Datatype]> {
    if p.is_null() {
        return Err(MpiError::arg(format!("the {what} array is NULL")));
    }
    // SAFETY: one datatype per process (MPI's contract for this argument).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

#[allow(clippy::too_many_arguments)]
pub(super) fn w_blocks(
    cx: &Cx<'_>,
    buf: *const c_void,
    counts_: &[usize],
    displs: &[MPI_Count],
    tys: &[MPI_Datatype],
    what: &str,
) -> MpiResult<Vec<Block>> {
    (0..counts_.len())
        .map(|i| {
            let at = buf.cast::<u8>().wrapping_offset(displs[i] as isize);
            // The NULL check judges the block's own address: with MPI_BOTTOM the byte
            // displacements are the addresses (MPI_IN_PLACE is judged as given).
            let judged = if in_place(buf) { buf } else { at.cast() };
            let lay = data(cx, judged, counts_[i], tys[i], what)?;
            Ok((at.cast_mut(), counts_[i], lay))
        })
        .collect()
}
