//! Threads: `MPI_THREAD_MULTIPLE`, any thread calling any MPI function at any time.
//!
//! ```text
//!   level < MULTIPLE, no progress thread:  call ─▶ body on the state (no lock: one load)
//!   MULTIPLE (or the progress thread):     call ─▶ lock ─▶ body on the state ─▶ unlock
//!   a blocking call under MULTIPLE:        call ─▶ lock ─▶ start (an engine request, ids)
//!                                               ─▶ wait_until: look (test) ── done? ─▶ finish
//!                                                   └─ no: unlock, back off, lock, look again
//! ```
//!
//! **One lock while the state is used.** The process's state is one `static` cell
//! ([`crate::runtime::global`]) that every call's body borrows mutably. Under
//! `MPI_THREAD_MULTIPLE` every call holds one process-wide lock ([`lock`]) while it uses
//! the state, so the state is still used by one thread at a time and the lock orders the
//! memory between them. Below that level (and without the asynchronous progress thread) the
//! lock is off: a call pays one relaxed load and a branch, as before this module.
//!
//! **Waiting outside the state.** A blocking call must not hold the lock while it waits, or
//! legal programs deadlock (a thread in `MPI_Recv` waiting for the `MPI_Send` of another
//! thread of the same process; a blocking collective on one communicator while another
//! thread works on another). But a body that waits while it holds borrows of the state (and
//! of its tables' elements) must not let another thread take the state meanwhile: two live
//! `&mut` to one place are undefined behaviour in Rust, and a table another thread grows
//! would move the element the waiting body points to. So a blocking call is split:
//! *start* under the lock (post an engine request: `MPI_Irecv`'s, `MPI_Isend`'s, a
//! collective's schedule as an engine operation), keeping only what it owns (a request
//! handle, the caller's raw pointers, indices); then [`Calling::wait_until`] looks at the
//! state under the lock (one `MPI_Test`: a turn of the engine and a look at the request),
//! and between two looks lets the lock go and backs off (spins a little, yields, naps, so
//! that 8 threads on 2 cores finish quickly); the last look *finishes* (retires the request,
//! writes the status) under the lock. The engine is shared: whichever thread turns it moves
//! every thread's operations on.
//!
//! **Why it is sound, by types.** Such a body (`mpi_fn!`'s `waits` form) gets a [`Calling`]
//! instead of the state: it reaches the state only through `Calling::state`, whose borrow
//! ends before `Calling::wait_until` (which needs the `Calling` mutably) can be called, and
//! `wait_until`'s look gets the state afresh each time, for that look only. A body that
//! keeps a reference into the state across a wait does not compile.
//!
//! **Written once for both paths.** A call with several steps and waits between them (a
//! window's synchronization or creation, a file's open or ordered access, an
//! intercommunicator's set-up) is written on a trait whose two implementations are the old
//! path and the new: [`Reach`] (the running state in steps, `comm::net`'s exchanges and the
//! context agreement between them), `comm::make::Steps` (the same for the communicator
//! code's `Cx`), `win::sync::Access` (a window's engine state). Monomorphized for the state
//! held throughout (`Runtime`, `Cx`, `Holding`), each step is a direct call and each wait the
//! engine's loop, as before; for the call's `Calling` (only when [`Calling::releases`]), each
//! step reaches the state afresh and each wait is a [`Calling::wait_until`]. The exchanges are
//! the same messages either way, so processes on either path interoperate.
//!
//! **What waits outside the state** (under `MPI_THREAD_MULTIPLE`): point-to-point:
//! `MPI_Send`, `MPI_Ssend`, `MPI_Rsend`, `MPI_Recv`, `MPI_Sendrecv`, `MPI_Sendrecv_replace`
//! (their nonblocking twins' requests), `MPI_Wait`, `MPI_Waitall`, `MPI_Waitany`,
//! `MPI_Waitsome` (looks as their `Test` forms until what they wait for is over, then their
//! bodies, which find it over), `MPI_Probe` and `MPI_Mprobe` (looks as
//! `MPI_Iprobe`/`MPI_Improbe`), `MPI_Buffer_detach` and `MPI_Buffer_flush` (looks at the
//! buffered sends); every blocking collective made by `coll::api`'s `collective!` (intra- and
//! intercommunicator, neighbourhood: the schedule started as the nonblocking call starts it);
//! every communicator constructor: `MPI_Comm_dup`, `MPI_Comm_dup_with_info`, `MPI_Comm_split`,
//! `MPI_Comm_split_type` (every type), `MPI_Comm_create`, `MPI_Comm_create_group`, on intra-
//! and intercommunicators, `MPI_Intercomm_create`, `MPI_Intercomm_merge`, `MPI_Cart_create`,
//! `MPI_Cart_sub`, `MPI_Graph_create`, `MPI_Dist_graph_create_adjacent`,
//! `MPI_Dist_graph_create`, `MPI_Comm_create_from_group`, `MPI_Intercomm_create_from_groups`,
//! and `MPI_Comm_disconnect` (the split's allgather, the `comm::net` exchanges and the
//! agreement stepped in the looks); the dynamic-process calls that join jobs:
//! `MPI_Comm_accept`, `MPI_Comm_connect`, `MPI_Comm_join`, `MPI_Comm_spawn`,
//! `MPI_Comm_spawn_multiple` (their exchanges within a group and the context agreement in
//! the looks; their socket work, which touches nothing of the state, with the lock let go
//! throughout: the accepting root's polling of its port, the handshakes, the members'
//! connections, the join's swap of port names, the launcher's answer to a spawn, each
//! through [`Calling::outside`]); windows: `MPI_Win_create`, `MPI_Win_allocate`,
//! `MPI_Win_allocate_shared`, `MPI_Win_create_dynamic`, `MPI_Win_fence`, `MPI_Win_start`,
//! `MPI_Win_complete`, `MPI_Win_wait`, `MPI_Win_lock`, `MPI_Win_unlock`, `MPI_Win_lock_all`,
//! `MPI_Win_unlock_all`, the flushes, `MPI_Win_free`; files: `MPI_File_open`,
//! `MPI_File_close`, `MPI_File_set_view`, the blocking collective accesses
//! (`MPI_File_read_all`, `write_all`, `read_at_all`, `write_at_all`: the two-phase access
//! stepped in the looks) and the split collectives' ends, the ordered accesses
//! (`MPI_File_read_ordered`, `write_ordered` and their begins), `MPI_File_seek_shared`,
//! `MPI_File_sync`, `MPI_File_set_atomicity`, `MPI_File_set_size`, `MPI_File_preallocate`.
//!
//! **What still waits holding the lock**: `MPI_Mrecv` and `MPI_Mprobe`'s receive of the
//! message it found (the message has arrived: only its data transfer remains, which this
//! process's own engine turns move on); `MPI_Finalize` (MPI requires every other thread to
//! have finished its MPI calls by then); `MPI_Comm_disconnect`'s goodbye on the streams to
//! another job no communicator names any more (after its barrier, which waits outside: the
//! bytes still queued on those streams are flushed, bounded by the channel's drain limit);
//! `MPI_Init` of a spawned process connecting to its parents (no other thread can be in MPI
//! yet). Holding the lock there is sound and can only deadlock, when the wait needs another
//! thread of the process to make an MPI call meanwhile. `MPI_Bsend` does
//! not wait (a message the attached buffer has no room for, once the space of the completed
//! sends is reclaimed, is `MPI_ERR_BUFFER` at once). The context-id lock (the process's mask
//! lock, `comm::agree`) is held for one round of the agreement protocol at most by every
//! constructor, `MPI_Comm_create_group`, `MPI_Intercomm_create`, the sessions' calls and the
//! dynamic-process calls included (over their members on contexts of their own; the
//! dynamic ones over every process of both jobs' groups, named by the connection's token).
//!
//! **Nested calls.** A callback of the program (a reduction operation, an attribute copy or
//! delete function, a generalized request's function, an error handler) that calls MPI runs
//! on the thread that holds the lock, nested in the call that runs it: it does not take the
//! lock again, and its waits do not let it go (the outer call's borrows are alive below it).
//!
//! **The cost.** Below `MPI_THREAD_MULTIPLE` a blocking body tests [`Calling::releases`]
//! (a field) and takes its old path: no request, no allocation, no lock. Measured with
//! callgrind on a ping-pong of 8-byte messages (instructions per call, with what each calls,
//! before and after this module): `MPI_Send` 530 to 536, `MPI_Isend` 571 to 567,
//! `MPI_Irecv` 258 to 254, `MPI_Wait` of a complete request 120 to 128. Under
//! `MPI_THREAD_MULTIPLE` each call takes and releases an uncontended mutex (two atomic
//! operations and a few thread-local accesses), and a blocking call that does not complete
//! at once makes an engine request (as its nonblocking twin does); one that completes at once
//! returns from its first look, with no back-off.
//!
//! **Misuse of the lower levels** is checked on request only (`MPI_THREAD_CHECK=1`,
//! [`lock`]): a call from a thread other than the main one under `MPI_THREAD_SINGLE` or
//! `FUNNELED` returns `MPI_ERR_OTHER`, a call while another thread is inside MPI under
//! `SERIALIZED` ends the job, each with a message naming the level. Checking by default would
//! cost every call of every program a thread-local read (the caller's thread) or the lock's
//! atomic operations, which the fast path's budget has no room for; without the variable the
//! checks cost nothing (the flag `call` reads already).
//!
//! **The bulk of a long message outside the lock.** The long part of moving a large message
//! on one host, the copy of a rendezvous's data (`process_vm_readv` from the sender's
//! exported buffer into the posted one, and the sender's half of a split copy,
//! `process_vm_writev`), does not run under the lock: a look of a waiting call turns the
//! engine with `nic_model::copy_jobs::Deferring::on`, and each copy of 32 KiB or more that it
//! starts becomes a *copy job* (raw source and destination addresses and a length: nothing of
//! the state) kept in the read in flight; the thread claims its jobs before it lets the lock
//! go, runs them unlocked, and a later look (at once) ends their reads under the lock as an
//! inline copy would have (FIN to the sender, the receive complete). Meanwhile the other
//! threads match, send and copy for their own communicators. Why it is sound (buffers that
//! outlive the job, exactly-once by a compare-exchange, release/acquire of the outcome) is in
//! `nic_model::copy_jobs`. Looks that keep the lock (a call nested in a look, a subsystem's
//! `Engine::block_on`, `MPI_Test` loops, the progress thread) copy inline, as every call does
//! below `MPI_THREAD_MULTIPLE` (one thread-local read per long read).
//!
//! **Still serialized** behind the one lock (with one lane, and on lane 0): matching (the
//! ADI's posted and unexpected queues, one per lane), the request table, the engine's operations and hooks, the
//! channel's rings (an eager message, at most a packet, is copied out of the ring under the
//! lock), the rendezvous over packets (`MPI_NIC_DMA=off`, or across hosts), the packing and
//! unpacking of non-contiguous datatypes (`p2p::args`' staging buffers), reductions, and the
//! copies of `MPI_Test` loops.
//!
//! **Lanes** (MPICH's VCIs, [`crate::runtime::lanes`]). Under `MPI_THREAD_MULTIPLE` the
//! point-to-point traffic of communicators whose point-to-point context routes to lane `k != 0`
//! runs on lane `k`'s engine, behind its own mutex: the lock above is a readers-writer lock,
//! and the *lane path* ([`lane`]: `MPI_Send`, `MPI_Recv`, their nonblocking and synchronous and
//! ready forms, `MPI_Sendrecv(_replace)`, `MPI_Isendrecv(_replace)`, `MPI_Probe`,
//! `MPI_Iprobe`, the matched probes and their receives, `MPI_Wait`, `MPI_Test`, the
//! `all`/`any`/`some` forms over one lane's requests, `MPI_Cancel`, `MPI_Request_free`,
//! `MPI_Request_get_status`, the persistent constructors but `MPI_Bsend_init`, and
//! `MPI_Start`/`MPI_Startall` of one lane's requests) holds it shared plus the lane's mutex,
//! reaching the communicator and datatype tables read-only, so threads on different lanes
//! never meet. Every other call holds it exclusively and reaches every lane (its waits turn
//! them all, and so do the waits that hold the running state, `Reach for Runtime`, and the
//! progress thread's rounds); lane-path waits turn, now and then, the lanes no thread is in
//! and, when the lock is free, lane 0. An error of the lane path goes to its handler under the exclusive lock. What stays
//! serialized is listed in `docs/threads.md`. The cost of finding the lane below
//! `MPI_THREAD_MULTIPLE` (callgrind, 8-byte ping-pong, instructions per call with callees,
//! before and after the lanes): `MPI_Send` 537 to 582, `MPI_Isend` 565 to 605, `MPI_Irecv`
//! 258 to 294, `MPI_Wait` 272 to 404 (the bodies grew: LLVM no longer inlines their
//! `catch_unwind` closure into the entry point; to be won back). Since the locked entry of
//! the lane form is a cold function of its own (`export::mpi_fn!`), and a request's lane is
//! read from its handle before any lock (`lane::LaneProbe`): `MPI_Isend` 591 to 586,
//! `MPI_Irecv` 274 to 266, `MPI_Wait` of a complete request 259 to 250, `MPI_Waitany` (now a
//! lane-path call) 510 to 524; under `MPI_THREAD_MULTIPLE` with `MPI_LANES=4`, one thread on
//! `MPI_COMM_WORLD`: `MPI_Wait` 817 to 792, `MPI_Waitany` 1048 to 1206, `MPI_Isend` 983 to
//! 1011, `MPI_Irecv` 516 to 546.

pub(crate) mod lane;
pub(crate) mod lock;
mod reach;
mod striped;
mod wait;

pub(crate) use lane::{LaneCall, LaneProbe};
pub(crate) use reach::Reach;
pub(crate) use wait::Calling;

use crate::abi::{MPI_THREAD_MULTIPLE, MPI_THREAD_SINGLE};
use std::ffi::c_int;

/// The highest thread level the library provides.
pub(crate) const MAX_LEVEL: c_int = MPI_THREAD_MULTIPLE;

/// The environment variable that asks for the checks of the lower levels' rules.
pub(crate) const CHECK_ENV: &str = "MPI_THREAD_CHECK";

/// The level granted for `required`: `required` itself, within the levels MPI defines. Granting
/// `MPI_THREAD_MULTIPLE` turns the lock on for good (before the call that grants it returns);
/// granting a lower one with [`CHECK_ENV`] set turns the checks of its rule on, the calling
/// thread being the main one.
pub(crate) fn grant(required: c_int) -> c_int {
    let level = required.clamp(MPI_THREAD_SINGLE, MAX_LEVEL);
    if level == MPI_THREAD_MULTIPLE {
        lock::set_multiple();
    } else if checks_asked() {
        lock::set_check(level);
    }
    level
}

/// Whether [`CHECK_ENV`] asks for the checks (`1`, `true`, `yes`, `on`).
fn checks_asked() -> bool {
    std::env::var(CHECK_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}
