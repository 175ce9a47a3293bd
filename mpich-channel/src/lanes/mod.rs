//! Lanes: several progress engines in one process, over its one channel, so that threads
//! working on different communicators progress in parallel (MPICH's VCIs).
//!
//! ```text
//!   thread A ─▶ Engine (lane 0)   thread B ─▶ Engine (lane 1)   ...   Engine (lane n-1)
//!                │ Adi: queues, requests │ Adi: queues, requests        │
//!                └─ LaneChannel 0 ───────┴─ LaneChannel 1 ─── ... ──────┘
//!                          │ Shared: Mutex<the channel> + one inbox per lane
//!                          ▼
//!                   bip | fm | fm1 (| peers of other jobs)
//! ```
//!
//! **Routing.** A message belongs to the lane `route(ctx, tag) % n` of its envelope's context
//! id and tag, a function the layer above gives ([`Route`]): no lane bits on the wire, and
//! processes with different lane counts interoperate. Each process routes only what it
//! receives, so what a process must keep is that its own sends of a message go out on the
//! lane its router gives the answers to it, and that it posts its receives on the lane its
//! router gives their messages: `route` may change its answer for a context only while no
//! message on it is in flight to or from this process. Answers (a synchronous send's
//! acknowledgement, a cancel request and its answer) carry the context and tag of the message
//! they answer, so everything about one message stays in one lane at each end.
//! [`pair_route`] is the rule for MPI's context pairs (by context only); a layer above may
//! spread one context's tags over lanes (MPI's `mpi_assert_no_any_tag`: no receive on it
//! matches any tag).
//!
//! **The shared channel** is one mutex; each lane's [`LaneChannel`] implements
//! [`Channel`](crate::Channel) over it. Sends, exports, pulls and revokes hold it for the call.
//! A poll first takes what other lanes queued in this lane's inbox, then, if the channel is
//! free (`try_lock`: a lane that finds another polling does not wait: that one queues its
//! messages), polls it through a router: a message for this lane goes straight to this lane's
//! matching (received in place, as with one engine); one for another lane is copied into an
//! owned buffer in that lane's inbox; a finished transfer goes to the lane that started it
//! (the lane rides in bits 20..24 of the transfer's token, which request ids leave free). A
//! lane delivers its inbox while it holds the channel before it takes anything from the
//! channel itself, so each peer's messages reach a lane in the order they were sent.
//!
//! **What stays with lane 0**: the operations and hooks the engine had, the channel's device
//! memory operations ([`crate::RemoteMemory`]) and its counters (counted once: other lanes
//! report only their own copies). Peers of other jobs may be added through any lane: they join
//! the shared channel, and every lane's reach grows with it. Finalize is per lane, in any
//! order; the last lane finalized finalizes the channel.
//!
//! **Progress.** A lane moves only when its own thread turns it (the layer above may turn
//! other lanes it finds free). A lane that nobody turns still has its messages taken off the
//! channel by the others and kept in its inbox, so the transport never stalls on it; they are
//! matched at its next turn.
//!
//! Entry: [`crate::Engine::into_lanes`], or [`crate::Engine::split_lanes`], which keeps the
//! engine in place as lane 0.

mod channel;

pub use channel::LaneChannel;
use channel::Shared;

use crate::adi::{Adi, AdiError, Result};

/// The most lanes a process can have (the lane rides in 4 bits of a transfer's token).
pub const MAX_LANES: usize = channel::MAX_LANES;

/// Where a message goes: the lane (modulo the lane count) of a message on context `ctx` with
/// tag `tag`, the same for the answers to it.
pub type Route = fn(u16, i32) -> usize;

/// The lane rule for MPI's context pairs (the tag is not looked at): a communicator's point-to-point context is even
/// and its collective context the odd one after it; world's are 0 and 1, self's 2 and 3.
/// Collective contexts and those of world and self go to lane 0; the point-to-point context
/// of every other communicator to its pair's number (`ctx / 2`, taken modulo the lane count).
pub fn pair_route(ctx: u16, _tag: i32) -> usize {
    if ctx < 4 || ctx % 2 == 1 {
        0
    } else {
        usize::from(ctx / 2)
    }
}

/// The point-to-point contexts (past world's and self's) that [`pair_route`] gives to lane
/// `lane` of `n`, in increasing order: for tests and benchmarks that want traffic on a given
/// lane.
pub fn contexts_of(lane: usize, n: usize) -> impl Iterator<Item = u16> {
    (4..=u16::MAX - 1)
        .step_by(2)
        .filter(move |&c| pair_route(c, 0) % n.max(1) == lane)
}

/// Splits `adi` into `n` lanes: `adi` becomes lane 0 over a [`LaneChannel`], and the others
/// are returned, new and empty, over theirs ([`crate::Engine::into_lanes`] says what may be
/// split).
pub(crate) fn split(adi: &mut Adi, n: usize, route: Route) -> Result<Vec<Adi>> {
    if n == 0 || n > MAX_LANES {
        return Err(AdiError::Lanes(format!(
            "{n} lanes asked for: a process has 1 to {MAX_LANES}"
        )));
    }
    let lane_of = move |ctx: u16, tag: i32| route(ctx, tag) % n;
    adi.check_split(&lane_of)?;
    let (ch, own_job, joined) = adi.detach_channel();
    let mut channels = Shared::lanes_over(ch, own_job, joined, n, route).into_iter();
    adi.attach_lane(Box::new(channels.next().expect("lane 0")));
    let mut lanes: Vec<Adi> = channels
        .map(|ch| Adi::lane_twin(adi, Box::new(ch)))
        .collect();
    adi.move_unexpected(&mut lanes, &lane_of);
    tracing::debug!(target: "mpi", rank = adi.rank(), lanes = n, "engine split into lanes");
    Ok(lanes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_route_point_to_point_contexts_apart() {
        let route = |c| pair_route(c, 7);
        assert_eq!((0..4).map(route).collect::<Vec<_>>(), [0, 0, 0, 0]);
        assert_eq!(route(5), 0, "a collective context");
        assert_eq!((route(4), route(6), route(8)), (2, 3, 4));
        let of_1: Vec<u16> = contexts_of(1, 4).take(2).collect();
        assert_eq!(of_1, [10, 18]);
    }
}
