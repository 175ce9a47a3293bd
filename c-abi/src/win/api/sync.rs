//! The synchronization calls: `MPI_Win_fence`, `MPI_Win_post`, `MPI_Win_start`,
//! `MPI_Win_complete`, `MPI_Win_wait`, `MPI_Win_test`, `MPI_Win_lock`, `MPI_Win_unlock`,
//! `MPI_Win_lock_all`, `MPI_Win_unlock_all`, `MPI_Win_flush`, `MPI_Win_flush_local`,
//! `MPI_Win_flush_all`, `MPI_Win_flush_local_all`, `MPI_Win_sync` (over `win::sync`).
//!
//! The calls that may wait take `mpi_fn!`'s `waits` form and run their `win::sync` function
//! through [`synchronized!`]: holding the state as before, or, under `MPI_THREAD_MULTIPLE`,
//! reaching the window afresh at each step with waits that let the process's lock go
//! (`sync::Releasing`).

use crate::abi::*;
use crate::cptr::Out;
use crate::error::MpiResult;
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use crate::win::sync::{self, Access, Holding, Releasing};
use crate::win::Win;
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

/// Runs `$body` (a `win::sync` call on `$a: &mut impl Access`) on window `$win` for the call
/// `$call`: with [`Holding`] when its waits keep the lock (the path of every level below
/// `MPI_THREAD_MULTIPLE`, as before), with [`Releasing`] when they let it go. Errors go to
/// the window's handler.
macro_rules! synchronized {
    ($call:ident, $win:expr, |$a:ident| $body:expr) => {{
        let win: MPI_Win = $win;
        if $call.releases() {
            let $a = &mut Releasing::new($call, win);
            $body.map_err(|e| e.on_win(win))
        } else {
            with_win($call.state().runtime()?, win, |e, comms, hook, w| {
                let $a = &mut Holding::new(e, comms, hook, w);
                $body
            })
        }
    }};
}

mpi_fn! {
    /// `MPI_Win_fence`: ends the epoch (every operation of every process complete) and
    /// starts the next unless `MPI_MODE_NOSUCCEED`.
    fn MPI_Win_fence / PMPI_Win_fence(assert: c_int, win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| sync::fence(a, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_post`: exposes the window to the processes of `group` (does not wait).
    fn MPI_Win_post / PMPI_Win_post(group: MPI_Group, assert: c_int, win: MPI_Win) |st| {
        let rt = st.runtime()?;
        let g = rt.groups.get(group).map_err(|e| e.on_win(win))?.clone();
        with_win(rt, win, |e, _, hook, w| sync::post(e, hook, w, &g, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_start`: starts accessing the windows of the processes of `group` (once
    /// each has posted).
    fn MPI_Win_start / PMPI_Win_start(group: MPI_Group, assert: c_int, win: MPI_Win) waits |call| {
        let g = call.state().runtime()?.groups.get(group).map_err(|e| e.on_win(win))?.clone();
        synchronized!(call, win, |a| sync::start(a, &g, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_complete`: ends the access epoch `MPI_Win_start` began.
    fn MPI_Win_complete / PMPI_Win_complete(win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| sync::complete(a))
    }
}

mpi_fn! {
    /// `MPI_Win_wait`: waits until every process of the posted group completed its epoch.
    fn MPI_Win_wait / PMPI_Win_wait(win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| sync::wait_posted(a, true)).map(drop)
    }
}

mpi_fn! {
    /// `MPI_Win_test`: whether `MPI_Win_wait` would return now (then the epoch is over).
    fn MPI_Win_test / PMPI_Win_test(win: MPI_Win, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let out = Out::new(flag, "flag").map_err(|e| e.on_win(win))?;
        let done = with_win(rt, win, |e, comms, hook, w| {
            sync::wait_posted(&mut Holding::new(e, comms, hook, w), false)
        })?;
        out.set(c_int::from(done));
        Ok(())
    }
}

/// The window rank `rank` names in the window `a` reaches (`None` for `MPI_PROC_NULL`).
fn target(a: &mut impl Access, rank: c_int) -> MpiResult<Option<usize>> {
    if rank == MPI_PROC_NULL {
        return Ok(None);
    }
    a.with(|_, _, _, w| sync::target_rank(w, rank).map(Some))
}

mpi_fn! {
    /// `MPI_Win_lock`: a passive-target epoch on `rank`'s window, under a shared or
    /// exclusive lock.
    fn MPI_Win_lock / PMPI_Win_lock(lock_type: c_int, rank: c_int, assert: c_int, win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| match target(a, rank)? {
            Some(t) => sync::lock(a, lock_type, t, assert),
            None => Ok(()),
        })
    }
}

mpi_fn! {
    /// `MPI_Win_unlock`: ends the epoch; every operation on `rank` is complete there.
    fn MPI_Win_unlock / PMPI_Win_unlock(rank: c_int, win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| match target(a, rank)? {
            Some(t) => sync::unlock(a, t),
            None => Ok(()),
        })
    }
}

mpi_fn! {
    /// `MPI_Win_lock_all`: a shared-lock epoch on every process's window.
    fn MPI_Win_lock_all / PMPI_Win_lock_all(assert: c_int, win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| sync::lock_all(a, assert))
    }
}

mpi_fn! {
    /// `MPI_Win_unlock_all`: ends the epoch `MPI_Win_lock_all` began.
    fn MPI_Win_unlock_all / PMPI_Win_unlock_all(win: MPI_Win) waits |call| {
        synchronized!(call, win, |a| sync::unlock_all(a))
    }
}

/// The flushes: of `rank` (`None`: every process), to completion at the target or (`local`)
/// at the origin only.
fn flush(
    call: &mut crate::runtime::thread::Calling,
    win: MPI_Win,
    rank: Option<c_int>,
    local: bool,
) -> MpiResult<()> {
    if call
        .state()
        .runtime()?
        .wins
        .flush_direct(win, rank)
        .is_some()
    {
        return Ok(());
    }
    synchronized!(call, win, |a| {
        let target = match rank {
            Some(r) => target(a, r)?,
            None => None,
        };
        match (rank, target) {
            (Some(_), None) => Ok(()),
            (_, t) => sync::flush(a, t, local),
        }
    })
}

mpi_fn! {
    /// `MPI_Win_flush`: every operation on `rank` so far is complete there.
    fn MPI_Win_flush / PMPI_Win_flush(rank: c_int, win: MPI_Win) waits |call| {
        flush(call, win, Some(rank), false)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local`: every operation on `rank` so far is complete at the origin.
    fn MPI_Win_flush_local / PMPI_Win_flush_local(rank: c_int, win: MPI_Win) waits |call| {
        flush(call, win, Some(rank), true)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_all`: every operation so far is complete at its target.
    fn MPI_Win_flush_all / PMPI_Win_flush_all(win: MPI_Win) waits |call| {
        flush(call, win, None, false)
    }
}

mpi_fn! {
    /// `MPI_Win_flush_local_all`: every operation so far is complete at the origin.
    fn MPI_Win_flush_local_all / PMPI_Win_flush_local_all(win: MPI_Win) waits |call| {
        flush(call, win, None, true)
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
