//! Making and freeing windows: `MPI_Win_create`, `MPI_Win_allocate`,
//! `MPI_Win_allocate_shared`, `MPI_Win_shared_query`, `MPI_Win_create_dynamic`,
//! `MPI_Win_attach`, `MPI_Win_detach`, `MPI_Win_free`.
//!
//! Creation is collective over the communicator: the processes make the window's own
//! communicator (same group, fresh contexts, no attributes copied), exchange their window
//! sizes and displacement units (and for a shared window, the memory file), and each opens
//! its state in the engine's hook, whose standing receives take requests from then on.
//!
//! A window on the message path whose memory is fixed (created, allocated, shared: not
//! dynamic) is also exposed to the device for VMMC's deliberate update and fetch, unless
//! `MPI_RMA_VMMC=0` or the channel offers no device access: each process registers its
//! memory, readable and writable, and the keys are gathered, so that long puts and gets
//! move their data without a request (`win::origin`).
//!
//! Creation is written once on `runtime::thread::Reach` ([`make`]): under
//! `MPI_THREAD_MULTIPLE` its agreement and exchanges wait with the process's lock let go
//! (the call's `Calling`), otherwise they hold the state as before (`Runtime`); so does
//! `MPI_Win_free`'s wait for the other processes (`win::sync::Releasing`).

use crate::abi::*;
use crate::comm::make::install;
use crate::comm::net::Net;
use crate::comm::CommIdx;
use crate::count::CountOut;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::{Calling, Reach};
use crate::runtime::Runtime;
use crate::win::memory::{self, Owned};
use crate::win::state::{DeviceData, DeviceSizes, Memory, WinState};
use crate::win::{direct, state, sync, Epochs, Peer, Win};
use mpich_channel::Reach as DeviceReach;
use nic_model::RegionKey;
use std::ffi::{c_int, c_void};

/// Tag of the exchanges of window creation on the new communicator's collective context
/// (the range `comm::net` leaves to its users, above its own).
const TAG_SETUP: c_int = 0x3400_0000;

/// What a creating call asks for.
struct Spec {
    flavor: c_int,
    size: MPI_Aint,
    /// An `MPI_Aint` for the int and the large-count (`_c`) forms alike.
    disp_unit: MPI_Aint,
}

fn check_spec(s: &Spec) -> MpiResult<()> {
    if s.size < 0 {
        return Err(MpiError::new(
            MPI_ERR_SIZE,
            format!("the window size is {}; it must be 0 or more", s.size),
        ));
    }
    if s.disp_unit <= 0 {
        return Err(MpiError::new(
            MPI_ERR_DISP,
            format!(
                "the displacement unit is {}; it must be positive",
                s.disp_unit
            ),
        ));
    }
    Ok(())
}

/// The collective part of every creating call: the window's communicator, everyone's size
/// and unit, the memory (`base` for a created window; allocated here otherwise), the state
/// in the hook. Returns the handle and the base.
fn make(
    a: &mut impl Reach,
    comm: MPI_Comm,
    info: MPI_Info,
    spec: Spec,
    base: *mut c_void,
) -> MpiResult<(MPI_Win, *mut c_void)> {
    let (parent, hints, group) = a.rt(|rt| {
        let (parent, c) = rt.comms.lookup(comm)?;
        crate::comm::require_intra(c, "a window").map_err(|e| e.on(parent))?;
        let hints = if info == MPI_INFO_NULL {
            Default::default()
        } else {
            rt.infos.hints(info).map_err(|e| e.on(parent))?
        };
        check_spec(&spec).map_err(|e| e.on(parent))?;
        Ok((parent, hints, rt.comms.get(parent).group()))
    })?;
    // The window's own communicator (`comm::create::create_from`, every member in it).
    let ctxs = a.agree(parent, true)?;
    let (idx, me, n, ctx, ranks, net) = a.rt(|rt| {
        let (idx, _) = install(&mut rt.comm(), parent, ctxs, group);
        let c = rt.comms.get(idx);
        let ranks: Vec<usize> = (0..c.size).map(|i| c.to_global(i)).collect();
        // The window's traffic goes through its hook on lane 0: on the lane-0 alias of its
        // communicator's point-to-point context (`runtime::lanes`), in every process.
        let ctx = crate::comm::context::lane_zero_alias(c.ctx);
        Ok((idx, c.rank, c.size, ctx, ranks, Net::local(c)))
    })?;

    // Everyone's size and unit (and, for a shared window, host).
    let shared = spec.flavor == MPI_WIN_FLAVOR_SHARED;
    let allocated = shared || spec.flavor == MPI_WIN_FLAVOR_ALLOCATE;
    let host = if allocated {
        crate::comm::create::host_color()
    } else {
        0
    };
    let mut mine = Vec::with_capacity(24);
    mine.extend_from_slice(&(spec.size as u64).to_le_bytes());
    mine.extend_from_slice(&(spec.disp_unit as u64).to_le_bytes());
    mine.extend_from_slice(&(host as u64).to_le_bytes());
    let mut all = vec![0u8; 24 * n];
    net.allgather(a, &mine, &mut all, TAG_SETUP)?;
    let word = |i: usize, k: usize| {
        u64::from_le_bytes(all[24 * i + 8 * k..24 * i + 8 * k + 8].try_into().unwrap())
    };
    let mut peers: Vec<Peer> = (0..n)
        .map(|i| Peer {
            size: word(i, 0) as usize,
            disp_unit: word(i, 1) as usize,
            shared_base: 0,
        })
        .collect();

    let size = spec.size as usize;
    let one_host = (0..n).all(|i| word(i, 2) == host as u64);
    let mut direct = None;
    let (owned, base) = match spec.flavor {
        MPI_WIN_FLAVOR_CREATE => (None, base),
        MPI_WIN_FLAVOR_DYNAMIC => (None, MPI_BOTTOM),
        MPI_WIN_FLAVOR_ALLOCATE if !(one_host && direct::enabled()) => {
            let m = memory::private(size)?;
            let b = m.addr().cast();
            (Some(m), b)
        }
        _ => {
            if !one_host {
                return Err(MpiError::new(
                    MPI_ERR_RMA_SHARED,
                    "MPI_Win_allocate_shared needs every process of the communicator on one host (split it with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) first)",
                )
                .on(parent));
            }
            let m = share(a, &net, &peers)?;
            let (offsets, _) =
                memory::shared_layout(&peers.iter().map(|p| p.size).collect::<Vec<_>>());
            for (p, o) in peers.iter_mut().zip(&offsets) {
                p.shared_base = m.addr() as usize + o;
            }
            if direct::enabled() {
                let parts = peers.iter().map(|p| p.shared_base).collect();
                direct = Some(direct::Direct::new(m.addr() as usize, parts));
            }
            let b = peers[me].shared_base as *mut c_void;
            (Some(m), b)
        }
    };

    let mem = if spec.flavor == MPI_WIN_FLAVOR_DYNAMIC {
        Memory::Dynamic {
            regions: Vec::new(),
        }
    } else {
        Memory::Static {
            base: base as usize,
            size,
        }
    };
    let mut ws = WinState::new(ctx, idx, me, ranks, mem);
    if spec.flavor != MPI_WIN_FLAVOR_DYNAMIC && direct.is_none() && device_data_enabled() {
        ws.vmmc = expose(a, &net, &ws, base as usize, size)?;
    }
    a.rt(|rt| {
        let hook = rt.wins.hook(&mut rt.engine);
        ws.open(rt.engine.p2p())?;
        let slot = rt
            .engine
            .hook_mut::<crate::win::state::Rma>(hook)
            .expect("registered")
            .insert(ws);
        let errhandler = MPI_ERRORS_ARE_FATAL;
        let h = rt.wins.insert(Win {
            handle: MPI_WIN_NULL,
            comm: idx,
            slot,
            flavor: spec.flavor,
            base,
            size_attr: spec.size,
            disp_unit_attr: c_int::try_from(spec.disp_unit).unwrap_or(c_int::MAX),
            flavor_attr: spec.flavor,
            model_attr: MPI_WIN_UNIFIED,
            peers,
            _mapped: owned,
            direct,
            name: String::new(),
            errhandler,
            attrs: Default::default(),
            hints,
            epochs: Epochs {
                locks: vec![None; n],
                ..Epochs::default()
            },
        })?;
        Ok((h, base))
    })
}

/// [`make`] for the blocking call `call`: holding the state as before, or, when the call's
/// waits let the lock go (`MPI_THREAD_MULTIPLE`), in steps with waits between them that do.
fn made(
    call: &mut Calling,
    comm: MPI_Comm,
    info: MPI_Info,
    spec: Spec,
    base: *mut c_void,
) -> MpiResult<(MPI_Win, *mut c_void)> {
    if call.releases() {
        make(call, comm, info, spec, base)
    } else {
        make(call.state().runtime()?, comm, info, spec, base)
    }
}

/// `MPI_RMA_VMMC`: `0` keeps every put and get on messages (the same value on every process).
fn device_data_enabled() -> bool {
    std::env::var("MPI_RMA_VMMC").map_or(true, |v| v.trim() != "0")
}

/// The sizes of the puts and gets that go through the device, as measured (put or get of
/// SIZE then flush, the target waiting in `MPI_Barrier`; `netbench --put-bw-sizes` across two
/// namespace hosts; figures in the README):
///
/// - one host, put: a single-copy write costs 1.8-1.9 us up to 4 KiB against a request's 1.0-1.2
///   us (request and acknowledgement), 2.8 against 3.9 us at 16 KiB and 4.0 against 4.6 at
///   32 KiB; from 64 KiB the request's rendezvous wins (BIP's read is split between the
///   two processes' cores: 5.7 against 6.2 us at 64 KiB, 43 against 82 us at 1 MiB);
/// - one host, get: the request's reply (the same split rendezvous) is as fast or faster at
///   every size: gets stay requests;
/// - across hosts, put: frames of updates carry 4-16 KiB puts at 2-3 times the requests'
///   bandwidth, the two are even at 64 KiB, and from 256 KiB the requests' rendezvous (no
///   copy in user space on either side, several read at once) is 1.2-1.6 times faster;
/// - across hosts, get: a device read (served from the target's window with no copy, landing
///   in the origin's buffer) saves the request's round trip: from 4 KiB.
///
/// `MPI_RMA_VMMC_MIN=N` sends every put and get of N bytes and more through the device (no
/// upper limit), for tests and measurements.
const DEVICE_SIZES: DeviceSizes = DeviceSizes {
    put_local: (16 << 10, 64 << 10),
    get_local: (usize::MAX, usize::MAX),
    put_remote: (4 << 10, 64 << 10),
    get_remote: (4 << 10, usize::MAX),
};

fn device_sizes() -> DeviceSizes {
    let forced = std::env::var("MPI_RMA_VMMC_MIN")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    match forced {
        Some(min) => {
            let all = (min, usize::MAX);
            DeviceSizes {
                put_local: all,
                get_local: all,
                put_remote: all,
                get_remote: all,
            }
        }
        None => DEVICE_SIZES,
    }
}

/// Exposes this process's window memory (`size` bytes at `base`) to the device and gathers
/// every process's key (collective). `None` when the channel offers no device access.
fn expose(
    a: &mut impl Reach,
    net: &Net,
    ws: &WinState,
    base: usize,
    size: usize,
) -> MpiResult<Option<DeviceData>> {
    let own = a.rt(|rt| {
        let Some(rm) = rt.engine.p2p().remote_memory() else {
            // The same channel everywhere: nobody exposes anything.
            return Ok(None);
        };
        // SAFETY: the window memory stays valid until the window is freed, which withdraws
        // the region first (`WinState::close`); MPI lets the window's bytes change under the
        // program during an exposure epoch.
        Ok(Some(if size > 0 && base != 0 {
            unsafe { rm.expose(base, size) }
                .inspect_err(|e| tracing::debug!(target: "mpi", error = %e, "window memory not exposed to the device: its puts and gets stay messages"))
                .ok()
        } else {
            None
        }))
    })?;
    let Some(own) = own else {
        return Ok(None);
    };
    let mut mine = [0u8; 16];
    if let Some(k) = own {
        mine[..4].copy_from_slice(&1u32.to_le_bytes());
        mine[4..8].copy_from_slice(&k.id.to_le_bytes());
        mine[8..].copy_from_slice(&k.key.to_le_bytes());
    }
    let n = ws.size();
    let mut all = vec![0u8; 16 * n];
    net.allgather(a, &mine, &mut all, TAG_SETUP + 3)?;
    let mut keys: Vec<Option<RegionKey>> = all
        .chunks_exact(16)
        .map(|b| {
            (u32::from_le_bytes(b[..4].try_into().unwrap()) == 1).then(|| RegionKey {
                id: u32::from_le_bytes(b[4..8].try_into().unwrap()),
                key: u64::from_le_bytes(b[8..].try_into().unwrap()),
            })
        })
        .collect();
    let single_copy = a.rt(|rt| {
        let rm = rt
            .engine
            .p2p()
            .remote_memory()
            .expect("the channel offered it above");
        let mut single_copy = vec![false; n];
        for t in (0..n).filter(|&t| t != ws.me) {
            let Some(k) = keys[t] else { continue };
            match rm.reach(ws.ranks[t], k) {
                DeviceReach::SingleCopy => single_copy[t] = true,
                DeviceReach::Posted => {}
                DeviceReach::Unreachable => keys[t] = None,
            }
        }
        Ok(single_copy)
    })?;
    Ok(Some(DeviceData {
        own,
        keys,
        single_copy,
        open: vec![false; n],
        sizes: device_sizes(),
    }))
}

/// A shared window's memory: rank 0 makes the file and hands its descriptor out; everyone
/// maps it. The file is freed with the last mapping.
fn share(a: &mut impl Reach, net: &Net, peers: &[Peer]) -> MpiResult<Owned> {
    let sizes: Vec<usize> = peers.iter().map(|p| p.size).collect();
    let (_, total) = memory::shared_layout(&sizes);
    let file = if net.me == 0 {
        Some(memory::shared_file(total))
    } else {
        None
    };
    // Rank 0 says where the file is (pid, descriptor), or that it failed (pid 0).
    let mut where_ = [0u8; 8];
    if let Some(Ok(fd)) = &file {
        where_[..4].copy_from_slice(&(std::process::id() as i32).to_le_bytes());
        where_[4..].copy_from_slice(&std::os::fd::AsRawFd::as_raw_fd(fd).to_le_bytes());
    }
    net.bcast(a, 0, &mut where_, TAG_SETUP + 1)?;
    let pid = i32::from_le_bytes(where_[..4].try_into().unwrap());
    let fd = i32::from_le_bytes(where_[4..].try_into().unwrap());
    // Rank 0's descriptor stays open (in `file`) until everyone has taken it.
    let mapped = match &file {
        Some(Ok(f)) => memory::map_shared(f, total),
        Some(Err(e)) => Err(e.clone()),
        None if pid == 0 => Err(MpiError::new(
            MPI_ERR_RMA_SHARED,
            "rank 0 of the window could not make its shared memory",
        )),
        None => memory::take_shared_file(pid, fd).and_then(|f| memory::map_shared(&f, total)),
    };
    // Everyone must have mapped (or failed) before rank 0 closes its descriptor; the
    // outcome is agreed so that all fail together.
    let mut ok = [u64::from(mapped.is_ok())];
    net.allreduce_band(a, &mut ok, TAG_SETUP + 2)?;
    drop(file);
    match (mapped, ok[0]) {
        (Ok(m), 1) => Ok(m),
        (Err(e), _) => Err(e),
        (Ok(_), _) => Err(MpiError::new(
            MPI_ERR_RMA_SHARED,
            "another process of the window could not map its shared memory",
        )),
    }
}

mpi_fn! {
    /// `MPI_Win_create`: exposes `size` bytes at `base` of every process.
    fn MPI_Win_create / PMPI_Win_create, large MPI_Win_create_c / PMPI_Win_create_c
    where [Unit = c_int | MPI_Aint] (
        base: *mut c_void, size: MPI_Aint, disp_unit: Unit, info: MPI_Info, comm: MPI_Comm,
        win: *mut MPI_Win,
    ) waits |call| {
        let out = Out::new(win, "win")?;
        let spec = Spec { flavor: MPI_WIN_FLAVOR_CREATE, size, disp_unit: disp_unit.into() };
        let (h, _) = made(call, comm, info, spec, base)?;
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_allocate`: a window of fresh memory; its address in `*baseptr`.
    fn MPI_Win_allocate / PMPI_Win_allocate, large MPI_Win_allocate_c / PMPI_Win_allocate_c
    where [Unit = c_int | MPI_Aint] (
        size: MPI_Aint, disp_unit: Unit, info: MPI_Info, comm: MPI_Comm,
        baseptr: *mut c_void, win: *mut MPI_Win,
    ) waits |call| {
        let spec = Spec { flavor: MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit: disp_unit.into() };
        allocate(call, spec, info, comm, baseptr, win)
    }
}

/// `MPI_Win_allocate` and `MPI_Win_allocate_shared`: the window in `*win`, this process's
/// memory at `*baseptr`.
fn allocate(
    call: &mut Calling,
    spec: Spec,
    info: MPI_Info,
    comm: MPI_Comm,
    baseptr: *mut c_void,
    win: *mut MPI_Win,
) -> MpiResult<()> {
    let out = Out::new(win, "win")?;
    let base_out = Out::new(baseptr.cast::<*mut c_void>(), "baseptr")?;
    let (h, base) = made(call, comm, info, spec, std::ptr::null_mut())?;
    base_out.set(base);
    out.set(h);
    Ok(())
}

mpi_fn! {
    /// `MPI_Win_allocate_shared`: a window of memory every process of the (one-host)
    /// communicator can load and store directly; this process's part at `*baseptr`.
    fn MPI_Win_allocate_shared / PMPI_Win_allocate_shared, large MPI_Win_allocate_shared_c / PMPI_Win_allocate_shared_c
    where [Unit = c_int | MPI_Aint] (
        size: MPI_Aint, disp_unit: Unit, info: MPI_Info, comm: MPI_Comm,
        baseptr: *mut c_void, win: *mut MPI_Win,
    ) waits |call| {
        let spec = Spec { flavor: MPI_WIN_FLAVOR_SHARED, size, disp_unit: disp_unit.into() };
        allocate(call, spec, info, comm, baseptr, win)
    }
}

mpi_fn! {
    /// `MPI_Win_shared_query`: where process `rank`'s part of a shared window is in this
    /// process (`MPI_PROC_NULL`: the first part that is not empty).
    fn MPI_Win_shared_query / PMPI_Win_shared_query, large MPI_Win_shared_query_c / PMPI_Win_shared_query_c
    where [Unit = c_int | MPI_Aint] (
        win: MPI_Win, rank: c_int, size: *mut MPI_Aint, disp_unit: *mut Unit, baseptr: *mut c_void,
    ) |st| {
        let rt = st.runtime()?;
        let w = rt.wins.get(win)?;
        let on = |e: MpiError| e.on_win(win);
        if w.flavor != MPI_WIN_FLAVOR_SHARED {
            return Err(on(MpiError::new(MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query needs a window made by MPI_Win_allocate_shared")));
        }
        let r = if rank == MPI_PROC_NULL {
            w.peers.iter().position(|p| p.size > 0).unwrap_or(0)
        } else {
            sync::target_rank(w, rank).map_err(on)?
        };
        let p = w.peers[r];
        Out::new(size, "size").map_err(on)?.set(p.size as MPI_Aint);
        Out::new(disp_unit, "disp_unit").map_err(on)?.set(Unit::from_count(p.disp_unit as MPI_Aint));
        Out::new(baseptr.cast::<*mut c_void>(), "baseptr").map_err(on)?.set(p.shared_base as *mut c_void);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_create_dynamic`: a window exposing no memory until some is attached.
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(info: MPI_Info, comm: MPI_Comm, win: *mut MPI_Win) waits |call| {
        let out = Out::new(win, "win")?;
        let spec = Spec { flavor: MPI_WIN_FLAVOR_DYNAMIC, size: 0, disp_unit: 1 };
        let (h, _) = made(call, comm, info, spec, std::ptr::null_mut())?;
        out.set(h);
        Ok(())
    }
}

/// The attached regions of dynamic window `win`, or `MPI_ERR_RMA_FLAVOR`.
fn regions(rt: &mut Runtime, win: MPI_Win) -> MpiResult<&mut Vec<(usize, usize)>> {
    let w = rt.wins.get(win)?;
    if w.flavor != MPI_WIN_FLAVOR_DYNAMIC {
        return Err(MpiError::new(
            MPI_ERR_RMA_FLAVOR,
            "memory can be attached only to a window made by MPI_Win_create_dynamic",
        )
        .on_win(win));
    }
    let slot = w.slot;
    let hook = rt.wins.hook(&mut rt.engine);
    match &mut state(&mut rt.engine, hook, slot).0.memory {
        Memory::Dynamic { regions } => Ok(regions),
        Memory::Static { .. } => unreachable!("a dynamic window has dynamic memory"),
    }
}

mpi_fn! {
    /// `MPI_Win_attach`: exposes `size` bytes at `base` through dynamic window `win`.
    fn MPI_Win_attach / PMPI_Win_attach(win: MPI_Win, base: *mut c_void, size: MPI_Aint) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_win(win);
        if size < 0 {
            return Err(on(MpiError::new(MPI_ERR_SIZE, format!("the size is {size}; it must be 0 or more"))));
        }
        if base.is_null() && size > 0 {
            return Err(on(MpiError::new(MPI_ERR_RMA_ATTACH, "the memory to attach is NULL")));
        }
        let (b, len) = (base as usize, size as usize);
        let list = regions(rt, win)?;
        if list.iter().any(|&(rb, rl)| b < rb + rl && rb < b + len) {
            return Err(on(MpiError::new(MPI_ERR_RMA_ATTACH, "the memory overlaps memory attached to the window already")));
        }
        list.push((b, len));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_detach`: withdraws the memory attached at `base`.
    fn MPI_Win_detach / PMPI_Win_detach(win: MPI_Win, base: *const c_void) |st| {
        let rt = st.runtime()?;
        let list = regions(rt, win)?;
        let Some(i) = list.iter().position(|&(b, _)| b == base as usize) else {
            return Err(MpiError::new(MPI_ERR_RMA_ATTACH, "no memory is attached to the window at that address").on_win(win));
        };
        list.remove(i);
        Ok(())
    }
}

/// Frees window `h` (collective): waits until nothing is in flight for it, then releases its
/// state, attributes, communicator and memory.
pub(super) fn free(rt: &mut Runtime, h: MPI_Win) -> MpiResult<()> {
    let hook = rt.wins.hook(&mut rt.engine);
    {
        let w = rt.wins.get_mut(h)?;
        let a = &mut sync::Holding::new(&mut rt.engine, &mut rt.comms, hook, w);
        sync::quiesce(a).map_err(|e| e.on_win(h))?;
    }
    release(rt, h)
}

/// The end of [`free`], once the window is quiet everywhere: its attributes, state,
/// communicator and memory released.
fn release(rt: &mut Runtime, h: MPI_Win) -> MpiResult<()> {
    let hook = rt.wins.hook(&mut rt.engine);
    super::attrs::delete_all(rt, h)?;
    let w = rt.wins.remove(h).expect("checked live above");
    let (ws, adi) = state(&mut rt.engine, hook, w.slot);
    ws.close(adi)?;
    rt.engine
        .hook_mut::<crate::win::state::Rma>(hook)
        .expect("registered")
        .remove(w.slot);
    free_comm(rt, w.comm)?;
    drop(w); // unmaps the window's own memory
    Ok(())
}

fn free_comm(rt: &mut Runtime, idx: CommIdx) -> MpiResult<()> {
    crate::comm::create::free(&mut rt.comm(), idx)
}

mpi_fn! {
    /// `MPI_Win_free`: frees the window (collective); `*win` becomes `MPI_WIN_NULL`. Under
    /// `MPI_THREAD_MULTIPLE` its wait for the other processes lets the process's lock go
    /// (`sync::Releasing`).
    fn MPI_Win_free / PMPI_Win_free(win: *mut MPI_Win) waits |call| {
        let out = Out::new(win, "win")?;
        let h = out.get();
        if call.releases() {
            call.state().runtime()?.wins.get(h)?;
            sync::quiesce(&mut sync::Releasing::new(call, h)).map_err(|e| e.on_win(h))?;
            release(call.state().runtime()?, h)?;
        } else {
            free(call.state().runtime()?, h)?;
        }
        out.set(MPI_WIN_NULL);
        Ok(())
    }
}
