//! Context ids: which engine contexts a communicator's messages travel on.
//!
//! Every communicator takes a pair of engine contexts `(2k, 2k + 1)`:
//! point-to-point and collective traffic. A new communicator takes the lowest pair that no
//! member uses (MPICH's method): each process offers the bitmask of the pairs it has free, the
//! members AND the masks (an allreduce over the parent), and everyone takes the lowest bit left.
//! A process that will not be in the new communicator still takes part in the agreement but
//! keeps the pair free: only members ever send on it, and any later communicator that
//! includes one of them avoids it. The agreement itself is `make::agree`'s, under the
//! protocol of `agree` (one agreement at a time may offer a process's mask).

use crate::error::{MpiError, MpiResult};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many context pairs exist: `MASK_WORDS * 64` (8192 contexts).
pub(crate) const MASK_WORDS: usize = 64;

/// The context pairs one process has free (bit set = free).
#[derive(Debug, Clone)]
pub(crate) struct ContextMask {
    words: [u64; MASK_WORDS],
}

impl ContextMask {
    pub fn new() -> ContextMask {
        ContextMask {
            words: [u64::MAX; MASK_WORDS],
        }
    }

    pub fn words(&self) -> [u64; MASK_WORDS] {
        self.words
    }

    /// Marks the pair of context `ctx` used.
    pub fn take(&mut self, ctx: u16) {
        let pair = ctx as usize / 2;
        self.words[pair / 64] &= !(1 << (pair % 64));
    }

    /// Marks the pair of context `ctx` free again.
    pub fn release(&mut self, ctx: u16) {
        let pair = ctx as usize / 2;
        self.words[pair / 64] |= 1 << (pair % 64);
    }
}

/// The lowest pair free in an agreed mask: its point-to-point context.
pub(crate) fn lowest_free(words: &[u64]) -> MpiResult<u16> {
    for (i, w) in words.iter().enumerate() {
        if *w != 0 {
            let pair = i * 64 + w.trailing_zeros() as usize;
            return Ok((pair * 2) as u16);
        }
    }
    Err(MpiError::new(
        crate::abi::MPI_ERR_OTHER,
        format!(
            "no context id is free on every member: at most {} communicators can exist at once; free some with MPI_Comm_free",
            MASK_WORDS * 64
        ),
    ))
}

/// The first context beyond every communicator's: contexts from here on are the library's
/// own (the sessions' bootstrap, the lane-0 aliases below), and travel on lane 0.
pub(crate) const COMM_CONTEXTS: u16 = (MASK_WORDS * 64 * 2) as u16;

/// Where a subsystem whose state lives on lane 0 (windows: their hooks) sends what it would
/// send on its own communicator's point-to-point context: `ctx + LANE_ZERO_ALIAS`, beyond
/// [`COMM_CONTEXTS`] and below the sessions' bootstrap context (0x7ff0), so [`lane_of`] puts
/// it on lane 0 in every process.
pub(crate) const LANE_ZERO_ALIAS: u16 = 0x4000;
const _: () =
    assert!(COMM_CONTEXTS <= LANE_ZERO_ALIAS && LANE_ZERO_ALIAS + COMM_CONTEXTS <= 0x7ff0);

/// The lane-0 alias of a communicator's point-to-point context `ctx` ([`LANE_ZERO_ALIAS`]).
pub(crate) fn lane_zero_alias(ctx: u16) -> u16 {
    debug_assert!(ctx < COMM_CONTEXTS);
    ctx + LANE_ZERO_ALIAS
}

/// The lane (of `lanes`) that messages on context `ctx` with tag `tag` travel on, the same
/// for the answers to them: a function of the context, and of the tag on a context whose
/// communicator routes by tag ([`route_by_tag`]). Each process routes only what it receives
/// (and posts what it sends and receives on the lane its own router gives the answers and the
/// messages), so processes with different lane counts, or different views of a communicator's
/// assertion, interoperate. Collective contexts (odd), `MPI_COMM_WORLD`'s and
/// `MPI_COMM_SELF`'s (0..3) and the library's own (from [`COMM_CONTEXTS`] on) are lane 0's; a
/// communicator's point-to-point context `2k` (k >= 2) is lane `1 + (k - 2) % (lanes - 1)`'s,
/// so consecutive duplicates land on different lanes and none on lane 0, whose calls take the
/// whole state; one that routes by tag spreads its tags over lanes
/// `1..lanes` (lane 0 is the one every call that is not point-to-point shares):
/// `1 + (k + tag) % (lanes - 1)`.
#[inline]
pub(crate) fn lane_of(ctx: u16, tag: i32, lanes: usize) -> usize {
    if lanes <= 1 || ctx & 1 == 1 || !(4..COMM_CONTEXTS).contains(&ctx) {
        return 0;
    }
    let pair = ctx as usize / 2;
    if by_tag(ctx) {
        return 1 + (pair + tag as u32 as usize) % (lanes - 1);
    }
    1 + (pair - 2) % (lanes - 1)
}

/// The point-to-point contexts whose messages are routed by tag ([`lane_of`]), one bit per
/// context pair. Set by the thread that makes the communicator and read by whichever thread
/// polls the channel: the fence that follows the setting ([`route_by_tag`]'s caller) goes
/// through the channel's mutex, which orders the store before any later poll.
static BY_TAG: [AtomicU64; MASK_WORDS] = [const { AtomicU64::new(0) }; MASK_WORDS];

#[inline]
fn by_tag(ctx: u16) -> bool {
    let pair = ctx as usize / 2;
    BY_TAG[pair / 64].load(Ordering::Relaxed) & (1 << (pair % 64)) != 0
}

/// Routes the messages of point-to-point context `ctx` by tag from now on (`on`), or by
/// context again. A process may change a context's routing only while no message on it is in
/// flight to or from it: when its communicator is made (before any member sends on it: the
/// maker fences) and once it is freed.
pub(crate) fn route_by_tag(ctx: u16, on: bool) {
    if ctx >= COMM_CONTEXTS {
        return;
    }
    let pair = ctx as usize / 2;
    let bit = 1u64 << (pair % 64);
    if on {
        BY_TAG[pair / 64].fetch_or(bit, Ordering::Relaxed);
    } else {
        BY_TAG[pair / 64].fetch_and(!bit, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_give_the_lowest_common_pair() {
        let mut a = ContextMask::new();
        a.take(0);
        a.take(2);
        assert_eq!(lowest_free(&a.words()).unwrap(), 4);
        a.take(4);
        let mut w = a.words();
        w[0] &= !(1 << 3);
        assert_eq!(lowest_free(&w).unwrap(), 8);
        a.release(4);
        assert_eq!(lowest_free(&a.words()).unwrap(), 4);
        assert!(lowest_free(&[0; MASK_WORDS]).is_err());
    }

    #[test]
    fn lanes_route_point_to_point_contexts_only() {
        for ctx in [
            0u16,
            1,
            2,
            3,
            5,
            7,
            9,
            COMM_CONTEXTS,
            0x7ff0,
            lane_zero_alias(8),
        ] {
            assert_eq!(lane_of(ctx, 3, 4), 0, "context {ctx}");
        }
        assert_eq!(lane_of(4, 3, 4), 1);
        assert_eq!(lane_of(6, 3, 4), 2);
        assert_eq!(lane_of(8, 3, 4), 3);
        assert_eq!(lane_of(10, 3, 4), 1);
        assert_eq!(lane_of(10, 3, 1), 0);
        assert_eq!(lane_of(10, 3, 2), 1);
    }

    #[test]
    fn a_context_routed_by_tag_spreads_its_tags_past_lane_0() {
        // A pair no other test uses (the bitmap is the process's).
        let ctx = 2 * 4001;
        route_by_tag(ctx, true);
        assert!(by_tag(ctx));
        let lanes: Vec<usize> = (0..6).map(|tag| lane_of(ctx, tag, 4)).collect();
        assert_eq!(lanes, [3, 1, 2, 3, 1, 2]);
        assert_eq!(lane_of(ctx, 5, 2), 1, "two lanes: all on lane 1");
        assert_eq!(lane_of(ctx, 5, 1), 0, "no lanes");
        assert_eq!(
            lane_of(ctx + 1, 5, 4),
            0,
            "its collective context stays on lane 0"
        );
        route_by_tag(ctx, false);
        assert!(!by_tag(ctx));
        assert_eq!(lane_of(ctx, 5, 4), 1, "by context: 1 + (4001 - 2) % 3");
    }
}
