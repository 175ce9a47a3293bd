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
        Progress::recv(&mut self.engine, buf, src, tag, ctx)
    }

    fn wait(&mut self, id: ReqId) -> MpiResult<Status> {
        Progress::wait(&mut self.engine, id)
    }

    fn wait_for<T>(
        &mut self,
        done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        self.engine.block_on(done)
    }
}

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
