//! The waiting forms of the creating steps, for blocking creating calls under
//! `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go, [`crate::runtime::thread`]):
//! the agreement on a context pair and the split's allgather run in the looks of
//! [`Calling::wait_until`], with the same schedules and protocol as the steps that wait holding
//! the lock (`comm::make::agree`, `comm::create::split`), so that the two interoperate rank by
//! rank. They own what they wait on (the agreement, the schedule and its buffers) and reach the
//! state afresh after each wait.

use crate::abi::*;
use crate::comm::create::{
    guided_color, pair_bytes, pairs_of, split_group, this_location, unguided_choice, HardwareSplit,
};
use crate::comm::hardware::Level;
use crate::comm::make::{agreed, install};
use crate::comm::CommIdx;
use crate::error::MpiResult;
use crate::group::Group;
use crate::runtime::thread::Calling;
use std::ffi::c_int;

/// Under `MPI_THREAD_MULTIPLE`: everyone's `mine` (one block each, in rank order) in
/// `parent`, exchanged in a wait that lets the lock go (the schedule `coll::allgather_bytes`
/// runs).
pub(crate) fn gathered(call: &mut Calling, parent: CommIdx, mine: &[u8]) -> MpiResult<Vec<u8>> {
    let rt = call.state().runtime()?;
    let mut all = vec![0u8; mine.len() * rt.comms.get(parent).size];
    let mut plan = crate::coll::allgather_bytes_schedule(
        &mut rt.comms,
        &mut rt.coll_spare,
        parent,
        mine,
        &mut all,
    )?;
    // The schedule reads `mine` and writes into `all` (a heap block that stays put) until it
    // completes.
    call.wait_until(|st| {
        let rt = st.runtime()?;
        rt.engine.poke()?;
        Ok(plan.poll(rt.engine.p2p())?.then_some(()))
    })?;
    if let Some(e) = plan.take_error() {
        return Err(e);
    }
    Ok(all)
}

/// Under `MPI_THREAD_MULTIPLE`: everyone's `(color, key)` in `parent` for `MPI_Comm_split`.
fn gathered_pairs(
    call: &mut Calling,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<Vec<(c_int, c_int)>> {
    Ok(pairs_of(&gathered(call, parent, &pair_bytes(color, key))?))
}

/// Under `MPI_THREAD_MULTIPLE`: `create::split_by_hardware` (`MPI_Comm_split_type` by
/// hardware resource), its exchanges in waits that let the lock go.
pub(crate) fn split_by_hardware_waiting(
    call: &mut Calling,
    parent: CommIdx,
    how: HardwareSplit,
    key: c_int,
) -> MpiResult<(MPI_Comm, Option<Level>)> {
    if let HardwareSplit::Guided(level) = how {
        return Ok((
            split_waiting(call, parent, guided_color(level), key)?,
            level,
        ));
    }
    let rank = call.state().runtime()?.comms.get(parent).rank;
    let all = gathered(call, parent, &this_location().to_bytes())?;
    let (color, level) = unguided_choice(&all, rank);
    Ok((split_waiting(call, parent, color, key)?, level))
}

/// Under `MPI_THREAD_MULTIPLE`: `MPI_Comm_split` of intracommunicator `parent`, its allgather
/// and agreement run in waits that let the lock go (the same steps as `create::split`).
pub(crate) fn split_waiting(
    call: &mut Calling,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<MPI_Comm> {
    let everyone = gathered_pairs(call, parent, color, key)?;
    let rt = call.state().runtime()?;
    let group =
        (color != MPI_UNDEFINED).then(|| split_group(rt.comms.get(parent), &everyone, color));
    let ctxs = agreed(call, parent, group.is_some())?;
    let rt = call.state().runtime()?;
    Ok(group.map_or(MPI_COMM_NULL, |g| {
        install(&mut rt.comm(), parent, ctxs, g).1
    }))
}

/// Under `MPI_THREAD_MULTIPLE`: `create::create_from` (a communicator over `group`, `None`
/// where this process is not in it), its agreement run in a wait that lets the lock go.
pub(crate) fn create_from_waiting(
    call: &mut Calling,
    parent: CommIdx,
    group: Option<Group>,
) -> MpiResult<Option<(CommIdx, MPI_Comm)>> {
    let ctxs = agreed(call, parent, group.is_some())?;
    let rt = call.state().runtime()?;
    Ok(group.map(|g| install(&mut rt.comm(), parent, ctxs, g)))
}
