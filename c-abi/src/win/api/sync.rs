//! The synchronization calls: `MPI_Win_fence`, `MPI_Win_post`, `MPI_Win_start`,
//! `MPI_Win_complete`, `MPI_Win_wait`, `MPI_Win_test`, `MPI_Win_lock`, `MPI_Win_unlock`,
//! `MPI_Win_lock_all`, `MPI_Win_unlock_all`, `MPI_Win_flush`, `MPI_Win_flush_local`,
//! `MPI_Win_flush_all`, `MPI_Win_flush_local_all`, `MPI_Win_sync` (over `win::sync`).

use crate::abi::*;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use crate::win::{sync, Win};
use mpich_channel::{Engine, HookId};
use std::ffi::c_int;

/// Runs `f` on window `win` with the engine (and the communicators, for the barriers); its
/// errors go to the window's handler.
fn with_win<T>(
    rt: &mut Runtime,
    win: MPI_Win,
    f: impl FnOnce(&mut Engine, &mut crate::comm::CommTable, HookId, &mut Win) -> MpiResult<T>,
) -> MpiResult<T> {
    let hook = rt.wins.hook(&mut rt.engine);
    let w = rt.wins.get_mut(win)?;
    f(&mut rt.engine, &mut rt.comms, hook, w).map_err(|e| e.on_win(win))
}

mpi_fn! {
    /// `MPI_Win_fence`: ends the epoch (every operation of every process complete) and
    /// starts the next unless `MPI_MODE_NOSUCCEED`.
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, comms, hook, w| sync::fence(e, comms, hook, w, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_post`: exposes the window to the processes of `group`.
    fn MPI_Win_post / PMPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group).map_err(|e| e.on_win(win))?.clone();
        with_win(rt, win, |e, _, hook, w| sync::post(e, hook, w, &g, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_start`: starts accessing the windows of the processes of `group` (once
    /// each has posted).
    fn MPI_Win_start / PMPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group).map_err(|e| e.on_win(win))?.clone();
        with_win(rt, win, |e, _, hook, w| sync::start(e, hook, w, &g, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_complete`: ends the access epoch `MPI_Win_start` began.
    fn MPI_Win_complete / PMPI_Win_complete(win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| sync::complete(e, hook, w))
    }
}

mpi_fn! {
    /// `MPI_Win_wait`: waits until every process of the posted group completed its epoch.
    fn MPI_Win_wait / PMPI_Win_wait(win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| sync::wait_posted(e, hook, w, true)).map(drop)
    }
}

mpi_fn! {
    /// `MPI_Win_test`: whether `MPI_Win_wait` would return now (then the epoch is over).
    fn MPI_Win_test / PMPI_Win_test(win: MPI_Win, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let out = Out::new(flag, "flag").map_err(|e| e.on_win(win))?;
        let done = with_win(rt, win, |e, _, hook, w| sync::wait_posted(e, hook, w, false))?;
        out.set(c_int::from(done));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Win_lock`: a passive-target epoch on `rank`'s window, under a shared or
    /// exclusive lock.
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| {
            if rank == MPI_PROC_NULL {
                return Ok(());
            }
            let t = sync::target_rank(w, rank)?;
            sync::lock(e, hook, w, lock_type, t, assert)
        })
    }
}

mpi_fn! {
    /// `MPI_Win_unlock`: ends the epoch; every operation on `rank` is complete there.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| {
            if rank == MPI_PROC_NULL {
                return Ok(());
            }
            let t = sync::target_rank(w, rank)?;
            sync::unlock(e, hook, w, t)
        })
    }
}

mpi_fn! {
    /// `MPI_Win_lock_all`: a shared-lock epoch on every process's window.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| sync::lock_all(e, hook, w, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_unlock_all`: ends the epoch `MPI_Win_lock_all` began.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: MPI_Win) |st| {
        let rt = st.runtime()?;
        with_win(rt, win, |e, _, hook, w| sync::unlock_all(e, hook, w))
    }
}

/// The flushes: of `rank` (`None`: every process), to completion at the target or (`local`)
/// at the origin only.
fn flush(rt: &mut Runtime, win: MPI_Win, rank: Option<c_int>, local: bool) -> MpiResult<()> {
    if rt.wins.flush_direct(win, rank).is_some() {
        return Ok(());
    }
    with_win(rt, win, |e, _, hook, w| {
        let target = match rank {
            Some(MPI_PROC_NULL) => return Ok(()),
            Some(r) => Some(sync::target_rank(w, r)?),
            None => None,
        };
        sync::flush(e, hook, w, target, local)
    })
}

mpi_fn! {
    /// `MPI_Win_flush`: every operation on `rank` so far is complete there.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: MPI_Win) |st| {
        flush(st.runtime()?, win, Some(rank), false)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local`: every operation on `rank` so far is complete at the origin.
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: MPI_Win) |st| {
        flush(st.runtime()?, win, Some(rank), true)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_all`: every operation so far is complete at its target.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: MPI_Win) |st| {
        flush(st.runtime()?, win, None, false)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local_all`: every operation so far is complete at the origin.
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: MPI_Win) |st| {
        flush(st.runtime()?, win, None, true)
    }
}

mpi_fn! {
    /// `MPI_Win_sync`: orders this process's loads and stores of the window against the
    /// library's (a full memory fence: every window here is unified).
    fn MPI_Win_sync / PMPI_Win_sync(win: MPI_Win) |st| {
        let rt = st.runtime()?;
        rt.wins.get(win)?;
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}
