//! Communicators whose point-to-point messages run on lanes by tag: MPI 4.0's assertion
//! `mpi_assert_no_any_tag` (§7.4.4: no receive or probe on the communicator matches any
//! tag) lets a message's lane be chosen from its context *and tag* (`context::lane_of`), so
//! that threads working on different tags of one communicator progress apart (issue 16).
//!
//! ```text
//!   MPI_Comm_dup_with_info(info: mpi_assert_no_any_tag=true)
//!     agree on contexts ─▶ install ─▶ hints kept ─▶ context::route_by_tag(ctx, true)
//!     ─▶ fence: a one-byte allgather over the new communicator (every member calls it,
//!        whatever its info says) ─▶ return
//!   MPI_Comm_free ─▶ CommTable::remove ─▶ route_by_tag(ctx, false) ─▶ context released
//! ```
//!
//! **Why at creation, and why the fence.** Each process routes what it receives by its own
//! view of the context, and posts its own sends and receives by that view (the answers to a
//! send carry its tag and so come back to its lane): processes may differ in their view, but
//! one process's view of a context must not change while a message on it is in flight to or
//! from it. A member that returns from the call may send on the new context at once; the
//! fence makes sure that by then every member has set its view (it set it before it joined
//! the fence). So the assertion routes by tag only when given to `MPI_Comm_dup_with_info`;
//! `MPI_Comm_set_info` later, `MPI_Comm_dup` of such a communicator, and
//! `MPI_Comm_idup_with_info` (whose communicator is usable, without a fence, as soon as its
//! request completes) and intercommunicators keep the hint, and `MPI_ANY_TAG` is refused on them all
//! (`p2p::args`), but they route by context, which is always correct. A communicator's
//! routing is cleared when it is freed, before its contexts can be agreed on again.

use super::CommIdx;
use crate::error::MpiResult;
use crate::runtime::thread::Calling;

/// Routes `idx`'s point-to-point context by tag in this process if `idx` (just made by
/// `MPI_Comm_dup_with_info`, before any member can have sent on it) holds the assertion,
/// then fences with the other members (every member calls this, whatever its assertion).
pub(crate) fn take_assertion(call: &mut Calling, idx: CommIdx) -> MpiResult<()> {
    let rt = call.state().runtime()?;
    let c = rt.comms.get(idx);
    if c.is_inter() {
        // Both groups make it, each with its own info: routed by context (no fence needed).
        return Ok(());
    }
    if c.no_any_tag {
        super::context::route_by_tag(c.ctx, true);
        tracing::debug!(target: "mpi", ctx = c.ctx, "point-to-point lanes by tag");
    }
    // The fence: every member's byte, exchanged in a wait that lets the lock go.
    super::waiting::gathered(call, idx, &[1]).map(drop)
}
