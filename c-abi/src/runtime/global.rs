//! The one process-wide [`Mpi`] state, reached without a lock below `MPI_THREAD_MULTIPLE`.
//!
//! MPI is a process-wide library: `MPI_Init` creates one engine, and every call works on it.
//! The fast path (`MPI_Send`, `MPI_Recv`, ...) must not pay for a mutex when the program does
//! not need one, so the state lives in an `UnsafeCell` in a `static`. What makes that sound
//! is that it is used by one thread at a time:
//!
//! - below `MPI_THREAD_MULTIPLE` (and without the progress thread) the program promises that
//!   no two threads are inside MPI at the same time, and orders its own calls (with whatever
//!   synchronization it uses between its threads, which also orders the memory this state is
//!   in);
//! - under `MPI_THREAD_MULTIPLE`, and while the library's progress thread runs
//!   (`MPI_ASYNC_PROGRESS=1`, [`crate::runtime::progress`]), every call and every round of
//!   that thread hold one process-wide lock while they use the state
//!   ([`crate::runtime::thread`]), and the lock orders the memory between them. A blocking
//!   call lets the lock go while it waits, holding no reference into the state meanwhile
//!   (`thread::Calling`, which the borrow checker enforces).
//!
//! Inside the library, [`state`] is called once per C entry point, by
//! [`crate::runtime::export::call`] (or, for a call that waits, once per look by
//! `thread::Calling`, each reference ending before the next), and by the error handler after
//! the call's own borrow has ended: there is never more than one live `&mut Mpi` per call;
//! and by the progress thread under the lock. The lane path (`thread::lane`) reads it through
//! [`shared`] while it holds the lock shared: no `&mut Mpi` exists then.

use crate::runtime::Mpi;
use std::cell::UnsafeCell;

struct Global(UnsafeCell<Mpi>);

// SAFETY: the cell is used by one thread at a time: below MPI_THREAD_MULTIPLE the program
// calls MPI from one thread at a time; under it, and while the progress thread runs, every use
// holds the process-wide lock (see the module documentation).
unsafe impl Sync for Global {}

static GLOBAL: Global = Global(UnsafeCell::new(Mpi::new()));

/// The process's MPI state.
///
/// # Safety
/// The caller must hold no other reference obtained from this function (one per MPI call, see
/// the module documentation), and must hold the process-wide lock whenever calls take it
/// (`MPI_THREAD_MULTIPLE`, or the progress thread running; below that, the program calls MPI
/// from one thread at a time).
pub(crate) unsafe fn state() -> &'static mut Mpi {
    // SAFETY: exclusive by the caller's contract: one live reference, one thread at a time.
    unsafe { &mut *GLOBAL.0.get() }
}

/// The process's MPI state, read-only: for the lane path (`thread::lane`), which holds the
/// process lock shared.
///
/// # Safety
/// The caller must hold the process-wide lock shared (so that no thread holds it exclusively,
/// which is the only way to a `&mut Mpi` while calls take the lock), for as long as the
/// reference is used; the parts of the state it reads through it must not change through
/// interior mutability (the communicator and datatype tables' reads do not).
pub(crate) unsafe fn shared() -> &'static Mpi {
    // SAFETY: no `&mut` to the cell exists while the lock is held shared (caller's contract).
    unsafe { &*GLOBAL.0.get() }
}
