//! Code written once for a blocking call's two ways of waiting ([`Reach`]): holding the
//! running state for the whole call ([`Runtime`] itself: every level below
//! `MPI_THREAD_MULTIPLE`, as before), or through the call's [`Calling`], which reaches the
//! state afresh at each step and whose waits let the process's lock go between looks.
//!
//! A body written on `impl Reach` does its work under the state in steps (`rt`), owning what
//! it carries from one step to the next (indices, handles, buffers of its own), and exchanges
//! through `comm::net` (whose [`Progress`] is the same object) or agrees on contexts
//! (`agree`) between steps. Monomorphized for `Runtime`, each step is a direct call.

use super::Calling;
use crate::comm::net::Progress;
use crate::comm::CommIdx;
use crate::error::MpiResult;
use crate::runtime::Runtime;
use mpich_channel::{Engine, ReqId, Status};
use std::ffi::c_int;

/// The running state reached in steps, and the waits between them (see the module's doc).
pub(crate) trait Reach: Progress {
    /// Runs `f` on the running state.
    fn rt<T>(&mut self, f: impl FnOnce(&mut Runtime) -> MpiResult<T>) -> MpiResult<T>;

    /// The agreement on a context pair over `parent` (`comm::make::agree`); `keep`: this
    /// process will use it.
    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)>;
}

impl Progress for Runtime {
    #[inline]
    fn on_engine<T>(&mut self, f: impl FnOnce(&mut Engine) -> MpiResult<T>) -> MpiResult<T> {
        f(&mut self.engine)
    }

    fn recv(&mut self, buf: &mut [u8], src: c_int, tag: c_int, ctx: u16) -> MpiResult<Status> {
        if self.lanes.off() {
            return Progress::recv(&mut self.engine, buf, src, tag, ctx);
        }
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: `buf` outlives the request: it is waited for before this function returns
        // (or the process ends with an error, the engine failing).
        let id = unsafe { self.engine.p2p().irecv(ptr, len, src, tag, ctx, 0) }?;
        Progress::wait(self, id)
    }

    fn wait(&mut self, id: ReqId) -> MpiResult<Status> {
        if self.lanes.off() {
            return Progress::wait(&mut self.engine, id);
        }
        self.wait_for(|e| Ok(e.p2p().take(id)?))
    }

    /// Lane 0's wait, holding the state; with lanes (a call nested in the program's callback
    /// under `MPI_THREAD_MULTIPLE`, or one that keeps the lock) it also turns the other lanes
    /// now and then, so that their operations move on meanwhile (MPI's progress rule).
    fn wait_for<T>(
        &mut self,
        mut done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        if self.lanes.off() {
            return self.engine.block_on(done);
        }
        let lanes = &mut self.lanes;
        let mut looks = 0u32;
        self.engine.block_on(|e| {
            looks = looks.wrapping_add(1);
            if looks.is_multiple_of(TURN_LANES_EVERY) {
                for other in lanes.iter_mut() {
                    other.poke()?;
                }
            }
            done(e)
        })
    }
}

/// A wait holding the state turns the other lanes once in this many looks.
const TURN_LANES_EVERY: u32 = 4;

impl Reach for Runtime {
    #[inline]
    fn rt<T>(&mut self, f: impl FnOnce(&mut Runtime) -> MpiResult<T>) -> MpiResult<T> {
        f(self)
    }

    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
        crate::comm::make::agree(&mut self.comm(), parent, keep)
    }
}

impl Reach for Calling {
    fn rt<T>(&mut self, f: impl FnOnce(&mut Runtime) -> MpiResult<T>) -> MpiResult<T> {
        f(self.state().runtime()?)
    }

    fn agree(&mut self, parent: CommIdx, keep: bool) -> MpiResult<(u16, u16)> {
        crate::comm::make::agreed(self, parent, keep)
    }
}
