//! Lanes (MPICH's VCIs): point-to-point traffic on different communicators runs on separate
//! engines, each behind a lock of its own, so that threads working on different
//! communicators match, send and receive in parallel.
//!
//! ```text
//!   Runtime.engine ── lane 0: collectives, windows, files, dynamic processes, sessions,
//!                     generalized requests, MPI_COMM_WORLD's and MPI_COMM_SELF's p2p
//!   Runtime.lanes ─── lane 1 .. n-1: Slot { lock, engine }: the p2p of communicators whose
//!                     point-to-point context routes there (comm::context::lane_of)
//!   one channel (rings, NIC) under them all: mpich_channel's lanes demultiplex by context
//! ```
//!
//! **When.** Lanes are made when the library comes up granting `MPI_THREAD_MULTIPLE`
//! (`MPI_Init_thread`, `MPI_Session_init` with that thread level), right after the engine's
//! start: [`LANES_ENV`] (`MPI_LANES`) says how many (default [`DEFAULT_LANES`], at most
//! [`MAX_LANES`]; 1 turns them off). Below that level there is one lane and nothing changes
//! (the single-threaded fast path pays one field load per point-to-point call to find that the
//! slots are empty).
//!
//! **Routing** is a function of the envelope's context ([`route`]), the same in every
//! process, so no lane bits travel on the wire: everything about one message (its answers
//! carry its context and tag) lands in one lane at each end. A communicator made with the
//! assertion `mpi_assert_no_any_tag` (`MPI_Comm_dup_with_info`) routes its point-to-point
//! context by tag as well (`comm::context::lane_of`, [`crate::comm::tag_lanes`]), so that
//! threads working on different tags of one communicator progress apart.
//!
//! **Locks.** The process lock becomes a readers-writer lock (`thread::lock`): a
//! point-to-point call on a lane other than 0 takes it shared plus its lane's mutex
//! ([`Lanes::lock`]) and reaches the rest of the state read-only (`thread::lane`); every other
//! call takes it exclusively and reaches every lane's engine ([`Lanes::get_mut`]).

mod slots;

pub(crate) use slots::Lanes;

use crate::comm::context::lane_of;
use mpich_channel::Engine;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable with the number of lanes.
pub(crate) const LANES_ENV: &str = "MPI_LANES";
/// Lanes when [`LANES_ENV`] is not set: one (no lanes), as MPICH's default of one VCI; a
/// program that runs threads on separate communicators asks for more.
pub(crate) const DEFAULT_LANES: usize = 1;
/// The most lanes: request handles carry the lane in 3 bits (`p2p::request`).
pub(crate) const MAX_LANES: usize = crate::p2p::request::MAX_LANES;

/// The lanes in use (1 until the library comes up under `MPI_THREAD_MULTIPLE`): what
/// [`route`] divides by. Written once, before any lane exists.
static COUNT: AtomicUsize = AtomicUsize::new(1);

/// The lane of a message on context `ctx` with tag `tag` in this process (the channel's
/// demultiplexer calls it).
pub(crate) fn route(ctx: u16, tag: i32) -> usize {
    lane_of(ctx, tag, COUNT.load(Ordering::Relaxed))
}

/// The lanes this process runs (for `MPI_T`).
pub(crate) fn count() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// How many lanes [`LANES_ENV`] asks for (`DEFAULT_LANES` when unset; a value that is not a
/// number from 1 to [`MAX_LANES`] is clamped, with a warning).
pub(crate) fn asked() -> usize {
    let Ok(v) = std::env::var(LANES_ENV) else {
        return DEFAULT_LANES;
    };
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_LANES).contains(&n) => n,
        _ => {
            let n = DEFAULT_LANES;
            tracing::warn!(
                value = %v,
                lanes = n,
                "{LANES_ENV} must be a number from 1 to {MAX_LANES}; using {n}"
            );
            n
        }
    }
}

/// Splits a freshly started engine into `n` lanes: lane 0 stays `engine` (with everything
/// it had), the others go into the slots. With `n == 1` (or a channel that cannot be split)
/// there is one lane.
pub(crate) fn make(engine: Engine, n: usize) -> mpich_channel::Result<(Engine, Lanes)> {
    let n = n.clamp(1, MAX_LANES.min(mpich_channel::lanes::MAX_LANES));
    if n == 1 {
        return Ok((engine, Lanes::none()));
    }
    // Before any lane exists: `route` divides by it from now on, in every lane's router.
    COUNT.store(n, Ordering::Relaxed);
    // Calls on lanes hold the process lock shared: exclusive holds must wait for them.
    crate::runtime::thread::lock::allow_shared();
    match engine.into_lanes(n, route) {
        Ok(mut engines) => {
            let zero = engines.remove(0);
            tracing::debug!(lanes = n, "point-to-point runs on lanes");
            Ok((zero, Lanes::new(engines)))
        }
        Err(e) => {
            COUNT.store(1, Ordering::Relaxed);
            Err(e)
        }
    }
}
