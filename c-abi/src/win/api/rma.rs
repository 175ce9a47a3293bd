//! The one-sided operations: `MPI_Put`, `MPI_Get`, `MPI_Accumulate`,
//! `MPI_Get_accumulate`, `MPI_Fetch_and_op`, `MPI_Compare_and_swap`, and the request-based
//! `MPI_Rput`, `MPI_Rget`, `MPI_Raccumulate`, `MPI_Rget_accumulate`.
//!
//! Each checks its arguments (window, epoch, rank, counts, types, operation, the target range
//! of a window whose size it knows) and hands the operation to the window's origin side
//! (`win::origin`). A request-based operation's request completes when the operation is
//! complete at the origin (its buffers may be reused; a get's data is in place).

use crate::abi::*;
use crate::cptr::Out;
use crate::datatype::TypeTable;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use crate::win::direct::Direct;
use crate::win::origin::{Access, Local};
use crate::win::state::OpFlag;
use crate::win::target::span;
use crate::win::{state, sync, WinTable};
use mpich_channel::{Adi, Operation, Status};
use std::ffi::{c_int, c_void};
use std::rc::Rc;

/// What an operation's checks found: the target (`None`: `MPI_PROC_NULL`, nothing to do).
struct Checked<'a> {
    slot: usize,
    comm: u32,
    access: Option<Access<'a>>,
}

/// Checks the window, the epoch, the target and its range; resolves the target type.
#[allow(clippy::too_many_arguments)]
fn check_target<'a>(
    wins: &mut WinTable,
    types: &'a TypeTable,
    win: MPI_Win,
    rank: c_int,
    disp: MPI_Aint,
    count: MPI_Count,
    dt: MPI_Datatype,
    request_based: bool,
) -> MpiResult<Checked<'a>> {
    let w = wins.get_mut(win)?;
    w.epochs.fence_used |= w.epochs.fence;
    let w = &*w;
    let (slot, comm) = (w.slot, w.comm);
    if rank == MPI_PROC_NULL {
        return Ok(Checked {
            slot,
            comm,
            access: None,
        });
    }
    let target = sync::target_rank(w, rank)?;
    if !w.epochs.can_access(target) {
        return Err(MpiError::new(
            MPI_ERR_RMA_SYNC,
            format!("an operation on rank {target} of the window outside any epoch that includes it (call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first)"),
        ));
    }
    if request_based && !w.epochs.passive(target) {
        return Err(MpiError::new(
            MPI_ERR_RMA_SYNC,
            "request-based operations (MPI_Rput, ...) need a passive-target epoch (MPI_Win_lock or MPI_Win_lock_all)",
        ));
    }
    if count < 0 {
        return Err(crate::datatype::negative_count(count));
    }
    let ty = types.committed(dt)?;
    let peer = w.peers[target];
    let offset = if w.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        disp as i128
    } else {
        let offset = disp as i128 * peer.disp_unit as i128;
        let (lo, hi) = span(ty, offset, count as usize).unwrap_or((-1, -1));
        if count > 0 && ty.size() > 0 && (lo < 0 || hi > peer.size as i128) {
            return Err(MpiError::new(
                MPI_ERR_RMA_RANGE,
                format!(
                    "the target data (displacement {disp}, {count} elements) reaches bytes {lo}..{hi} of rank {target}'s window, which has {} bytes",
                    peer.size
                ),
            ));
        }
        offset
    };
    Ok(Checked {
        slot,
        comm,
        access: Some(Access {
            target,
            offset: offset as u64,
            count: count as usize,
            ty,
        }),
    })
}

/// The origin buffer `(addr, count, dt)`.
fn local<'a>(
    types: &'a TypeTable,
    addr: *const c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
) -> MpiResult<Local<'a>> {
    if count < 0 {
        return Err(crate::datatype::negative_count(count));
    }
    Ok(Local {
        addr: addr.cast_mut().cast(),
        count: count as usize,
        ty: types.committed(dt)?,
    })
}

/// A predefined operation an accumulate may use, or `MPI_ERR_OP`.
fn check_op(op: MPI_Op) -> MpiResult<()> {
    if (0x5800_0001..=0x5800_000e).contains(&(op as u32)) {
        return Ok(());
    }
    Err(MpiError::new(
        MPI_ERR_OP,
        format!("0x{op:08x} cannot be used in a one-sided accumulate: only the predefined operations, MPI_REPLACE and MPI_NO_OP can"),
    ))
}

/// A request-based operation's request: complete when its parts are.
struct Pending(Rc<OpFlag>);

impl Operation for Pending {
    fn poll(&mut self, _p2p: &mut Adi) -> mpich_channel::Result<Option<Status>> {
        if self.0.parts.get() > 0 {
            return Ok(None);
        }
        Ok(Some(Status {
            error: self.0.error.get(),
            ..Status::default()
        }))
    }
}

/// Runs the operation: `direct` on a window of one host's shared memory, else `op` on the
/// window's message state; for a request-based call, returns its request handle.
fn run(
    engine: &mut mpich_channel::Engine,
    wins: &mut WinTable,
    win: MPI_Win,
    checked: &Checked,
    request: Option<*mut MPI_Request>,
    direct: impl FnOnce(&Direct) -> MpiResult<()>,
    op: impl FnOnce(&mut crate::win::state::WinState, &mut Adi, Option<&Rc<OpFlag>>) -> MpiResult<()>,
) -> MpiResult<()> {
    let out = request.map(|r| Out::new(r, "request")).transpose()?;
    let flag = out.as_ref().map(|_| Rc::new(OpFlag::default()));
    if checked.access.is_some() {
        if let Some(d) = &wins.get(win)?.direct {
            direct(d)?;
        } else {
            let hook = wins.hook(engine);
            let (w, adi) = state(engine, hook, checked.slot);
            op(w, adi, flag.as_ref())?;
        }
    }
    if let (Some(out), Some(flag)) = (out, flag) {
        let id = engine.start(Box::new(Pending(flag)), checked.comm)?;
        out.set(crate::p2p::request::handle(engine, id));
    }
    Ok(())
}

/// Which way a put or a get moves the data.
#[derive(Clone, Copy)]
enum Way {
    Put,
    Get,
}

/// A buffer of a one-sided call as the program gives it: address, count, datatype.
#[derive(Clone, Copy)]
struct Buf {
    addr: *mut c_void,
    count: MPI_Count,
    dt: MPI_Datatype,
}

impl Buf {
    fn new(addr: *const c_void, count: MPI_Count, dt: MPI_Datatype) -> Buf {
        Buf {
            addr: addr.cast_mut(),
            count,
            dt,
        }
    }
}

/// The target of a one-sided call: rank, displacement, count, datatype.
#[derive(Clone, Copy)]
struct Target {
    rank: c_int,
    disp: MPI_Aint,
    count: MPI_Count,
    dt: MPI_Datatype,
}

/// `MPI_Put` and `MPI_Get` (and their request forms): the origin buffer and the target.
/// The common call on a direct window is done here, in one pass; everything else (and every
/// error) takes the general path.
#[inline(always)]
fn transfer(
    rt: &mut Runtime,
    way: Way,
    o: Buf,
    t: Target,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> MpiResult<()> {
    if request.is_none() && (o.count, o.dt) == (t.count, t.dt) {
        let put = matches!(way, Way::Put);
        // SAFETY: the origin buffer holds its elements (MPI's contract).
        let done = unsafe {
            rt.wins
                .transfer_direct(put, o.addr.cast(), (t.count, t.dt), (t.rank, t.disp), win)
        };
        if done.is_some() {
            return Ok(());
        }
    }
    transfer_checked(rt, way, o, t, win, request)
}

/// `transfer`'s general path: every check, then the window's direct or message path.
#[inline(never)]
fn transfer_checked(
    rt: &mut Runtime,
    way: Way,
    o: Buf,
    t: Target,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> MpiResult<()> {
    let c = check_target(
        &mut rt.wins,
        &rt.types,
        win,
        t.rank,
        t.disp,
        t.count,
        t.dt,
        request.is_some(),
    )?;
    let o = local(&rt.types, o.addr, o.count, o.dt)?;
    let t = c.access.as_ref();
    run(
        &mut rt.engine,
        &mut rt.wins,
        win,
        &c,
        request,
        |d| match way {
            Way::Put => d.put(&o, t.unwrap()),
            Way::Get => d.get(&o, t.unwrap()),
        },
        |w, adi, f| match way {
            Way::Put => w.put(adi, &o, t.unwrap(), f),
            Way::Get => w.get(adi, &o, t.unwrap(), f),
        },
    )
}

/// `MPI_Accumulate` (`result` `None`) and `MPI_Get_accumulate` / `MPI_Fetch_and_op` (the
/// target's old data into `result`), with or without a request. As for `transfer`, the
/// common call on a direct window is done here in one pass.
#[inline(always)]
fn accumulate(
    rt: &mut Runtime,
    (o, result): (Buf, Option<Buf>),
    t: Target,
    op: MPI_Op,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> MpiResult<()> {
    let same = |b: &Buf| (b.count, b.dt) == (t.count, t.dt);
    if request.is_none() && same(&o) && result.as_ref().is_none_or(same) {
        let r = result.map(|b| b.addr.cast());
        let what = (t.count, t.dt, op);
        // SAFETY: the origin and result buffers hold their elements (MPI's contract).
        let done = unsafe {
            rt.wins
                .accumulate_direct(o.addr.cast_const().cast(), r, what, (t.rank, t.disp), win)
        };
        if done.is_some() {
            return Ok(());
        }
    }
    accumulate_checked(rt, (o, result), t, op, win, request)
}

/// `accumulate`'s general path: every check, then the window's direct or message path.
#[inline(never)]
fn accumulate_checked(
    rt: &mut Runtime,
    (o, result): (Buf, Option<Buf>),
    t: Target,
    op: MPI_Op,
    win: MPI_Win,
    request: Option<*mut MPI_Request>,
) -> MpiResult<()> {
    check_op(op)?;
    let c = check_target(
        &mut rt.wins,
        &rt.types,
        win,
        t.rank,
        t.disp,
        t.count,
        t.dt,
        request.is_some(),
    )?;
    // A fetching MPI_NO_OP reads only: its origin buffer is not used (it may be NULL).
    let o = if op == MPI_NO_OP && result.is_some() {
        local(&rt.types, o.addr, 0, t.dt)?
    } else {
        local(&rt.types, o.addr, o.count, o.dt)?
    };
    let r = result
        .map(|b| local(&rt.types, b.addr, b.count, b.dt))
        .transpose()?;
    let t = c.access.as_ref();
    run(
        &mut rt.engine,
        &mut rt.wins,
        win,
        &c,
        request,
        |d| d.accumulate(&o, r.as_ref(), t.unwrap(), op),
        |w, adi, f| match &r {
            Some(r) => w.get_accumulate(adi, &o, r, t.unwrap(), op, f),
            None => w.accumulate(adi, &o, t.unwrap(), op, f),
        },
    )
}

/// Runs `body` and routes its error to window `win`'s handler.
fn on_win(win: MPI_Win, r: MpiResult<()>) -> MpiResult<()> {
    r.map_err(|e| e.on_win(win))
}

mpi_fn! {
    /// `MPI_Put`: writes the origin data into the target's window.
    fn MPI_Put / PMPI_Put, large MPI_Put_c / PMPI_Put_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, transfer(rt, Way::Put, Buf::new(origin_addr, origin_count.into(), origin_datatype), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, win, None))
    }
}

mpi_fn! {
    /// `MPI_Get`: reads the target's window into the origin buffer.
    fn MPI_Get / PMPI_Get, large MPI_Get_c / PMPI_Get_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, transfer(rt, Way::Get, Buf::new(origin_addr, origin_count.into(), origin_datatype), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, win, None))
    }
}

mpi_fn! {
    /// `MPI_Accumulate`: combines the origin data into the target's window with `op`.
    fn MPI_Accumulate / PMPI_Accumulate, large MPI_Accumulate_c / PMPI_Accumulate_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, accumulate(rt, (Buf::new(origin_addr, origin_count.into(), origin_datatype), None), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, op, win, None))
    }
}

mpi_fn! {
    /// `MPI_Get_accumulate`: the target's data into `result_addr`, then `op` combines the
    /// origin data into it, atomically.
    fn MPI_Get_accumulate / PMPI_Get_accumulate, large MPI_Get_accumulate_c / PMPI_Get_accumulate_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, accumulate(rt, (Buf::new(origin_addr, origin_count.into(), origin_datatype), Some(Buf::new(result_addr, result_count.into(), result_datatype))), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, op, win, None))
    }
}

mpi_fn! {
    /// `MPI_Fetch_and_op`: `MPI_Get_accumulate` of one element of a predefined type.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(
        origin_addr: *const c_void, result_addr: *mut c_void, datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, op: MPI_Op, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, accumulate(rt, (Buf::new(origin_addr, 1, datatype), Some(Buf::new(result_addr, 1, datatype))), Target { rank: target_rank, disp: target_disp, count: 1, dt: datatype }, op, win, None))
    }
}

/// `MPI_Compare_and_swap`'s general path: every check, then the window's direct or message
/// path.
#[inline(never)]
fn compare_and_swap_checked(
    rt: &mut Runtime,
    (o, cmp, res): (*const u8, *const u8, *mut u8),
    datatype: MPI_Datatype,
    (rank, disp): (c_int, MPI_Aint),
    win: MPI_Win,
) -> MpiResult<()> {
    let c = check_target(&mut rt.wins, &rt.types, win, rank, disp, 1, datatype, false)?;
    if !TypeTable::is_predefined(datatype) {
        return Err(MpiError::new(
            MPI_ERR_TYPE,
            "MPI_Compare_and_swap needs a predefined datatype",
        ));
    }
    let t = c.access.as_ref();
    run(
        &mut rt.engine,
        &mut rt.wins,
        win,
        &c,
        None,
        |d| {
            d.compare_and_swap(o, cmp, res, t.unwrap());
            Ok(())
        },
        |w, adi, _| w.compare_and_swap(adi, o, cmp, res, t.unwrap()),
    )
}

mpi_fn! {
    /// `MPI_Compare_and_swap`: the target element into `result_addr`; replaced by the
    /// origin's if it equals `compare_addr`'s, atomically.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(
        origin_addr: *const c_void, compare_addr: *const c_void, result_addr: *mut c_void,
        datatype: MPI_Datatype, target_rank: c_int, target_disp: MPI_Aint, win: MPI_Win,
    ) |st| {
        let rt = st.runtime()?;
        let bufs = (origin_addr.cast(), compare_addr.cast(), result_addr.cast());
        let target = (target_rank, target_disp);
        // SAFETY: each buffer holds one element (MPI's contract).
        if unsafe { rt.wins.compare_and_swap_direct(bufs, datatype, target, win) }.is_some() {
            return Ok(());
        }
        on_win(win, compare_and_swap_checked(rt, bufs, datatype, target, win))
    }
}

mpi_fn! {
    /// `MPI_Rput`: `MPI_Put` with a request, complete when the origin buffer may be reused.
    fn MPI_Rput / PMPI_Rput, large MPI_Rput_c / PMPI_Rput_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, transfer(rt, Way::Put, Buf::new(origin_addr, origin_count.into(), origin_datatype), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, win, Some(request)))
    }
}

mpi_fn! {
    /// `MPI_Rget`: `MPI_Get` with a request, complete when the data is in the origin buffer.
    fn MPI_Rget / PMPI_Rget, large MPI_Rget_c / PMPI_Rget_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *mut c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, win: MPI_Win, request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, transfer(rt, Way::Get, Buf::new(origin_addr, origin_count.into(), origin_datatype), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, win, Some(request)))
    }
}

mpi_fn! {
    /// `MPI_Raccumulate`: `MPI_Accumulate` with a request.
    fn MPI_Raccumulate / PMPI_Raccumulate, large MPI_Raccumulate_c / PMPI_Raccumulate_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, accumulate(rt, (Buf::new(origin_addr, origin_count.into(), origin_datatype), None), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, op, win, Some(request)))
    }
}

mpi_fn! {
    /// `MPI_Rget_accumulate`: `MPI_Get_accumulate` with a request.
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate, large MPI_Rget_accumulate_c / PMPI_Rget_accumulate_c
    where [Count = c_int | MPI_Count] (
        origin_addr: *const c_void, origin_count: Count, origin_datatype: MPI_Datatype,
        result_addr: *mut c_void, result_count: Count, result_datatype: MPI_Datatype,
        target_rank: c_int, target_disp: MPI_Aint, target_count: Count,
        target_datatype: MPI_Datatype, op: MPI_Op, win: MPI_Win, request: *mut MPI_Request,
    ) |st| {
        let rt = st.runtime()?;
        on_win(win, accumulate(rt, (Buf::new(origin_addr, origin_count.into(), origin_datatype), Some(Buf::new(result_addr, result_count.into(), result_datatype))), Target { rank: target_rank, disp: target_disp, count: target_count.into(), dt: target_datatype }, op, win, Some(request)))
    }
}
