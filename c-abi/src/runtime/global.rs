//! The one process-wide [`Mpi`] state, reached without a lock.
//!
//! MPI is a process-wide library: `MPI_Init` creates one engine, and every call works on it.
//! The fast path (`MPI_Send`, `MPI_Recv`, ...) must not pay for a mutex, so the state lives in
//! an `UnsafeCell` in a `static`. What makes that sound is the thread level this library
//! provides: at most `MPI_THREAD_SERIALIZED` (`MPI_Init_thread` never grants
//! `MPI_THREAD_MULTIPLE`), under which the program promises that no two threads are inside MPI
//! at the same time, and orders its own calls (with whatever synchronization it uses between
//! its threads, which also orders the memory this state is in).
//!
//! **The progress thread.** With `MPI_ASYNC_PROGRESS=1` the library's own progress thread
//! also turns the engine ([`crate::runtime::progress`]); the program's calls and the thread's
//! rounds then hold one process-wide lock while they use the state, so that it is still used
//! by one thread at a time, and the lock orders the memory between them.
//!
//! Inside the library, [`state`] is called once per C entry point, by
//! [`crate::runtime::export::call`], and by the error handler after the call's own borrow has ended:
//! there is never more than one live `&mut Mpi`; and by the progress thread under the lock.

use crate::runtime::Mpi;
use std::cell::UnsafeCell;

struct Global(UnsafeCell<Mpi>);

// SAFETY: the program calls MPI from one thread at a time (MPI_THREAD_SERIALIZED at most, see
// the module documentation), and the progress thread only under the lock those calls then
// hold; the cell is never accessed concurrently.
unsafe impl Sync for Global {}

static GLOBAL: Global = Global(UnsafeCell::new(Mpi::new()));

/// The process's MPI state.
///
/// # Safety
/// The caller must hold no other reference obtained from this function (one per MPI call, see
/// the module documentation), and the program must respect `MPI_THREAD_SERIALIZED` (while the
/// progress thread runs, the caller holds its lock).
pub(crate) unsafe fn state() -> &'static mut Mpi {
    // SAFETY: exclusive by the caller's contract: one live reference, one thread at a time.
    unsafe { &mut *GLOBAL.0.get() }
}
