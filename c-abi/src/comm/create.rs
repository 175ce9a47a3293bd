//! Making and freeing intracommunicators: what `MPI_Comm_dup` (and `idup`, `dup_with_info`),
//! `MPI_Comm_split` (and `split_type`), `MPI_Comm_create`, `MPI_Comm_create_group` and
//! `MPI_Comm_free` do (their entry points are in `api::create`).
//!
//! Every creating call is collective over the parent: the members first agree on a context
//! pair (`make::agree`; for `idup`, an operation of the progress engine, `make::start_idup`,
//! and the communicator waits in `late` for its contexts), then each process that is in the
//! new communicator builds it
//! locally from what it knows (the parent's group, and for `split` everyone's color and key,
//! exchanged with an allgather). A process left out gets `MPI_COMM_NULL` but has taken part in
//! the agreement. New communicators inherit the parent's error handler; `dup` also copies the
//! attributes (through their copy callbacks), the topology and the info hints.

use super::agree::Agreement;
use super::hardware::{self, Level, Location};
use super::make::{self, by_key, install, Cx};
use super::{Comm, CommIdx, SELF, WORLD};
use crate::abi::*;
use crate::attr::comm_attrs;
use crate::error::{MpiError, MpiResult};
use crate::group::{Group, GroupData};
use std::ffi::c_int;

/// The collective part of every intracommunicator-creating call over `parent`: agree on a
/// context pair, then build this process's communicator over `group` if it has one.
pub(crate) fn create_from(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    group: Option<Group>,
) -> MpiResult<Option<(CommIdx, MPI_Comm)>> {
    let ctxs = make::agree(cx, parent, group.is_some())?;
    Ok(group.map(|g| install(cx, parent, ctxs, g)))
}

/// What a duplicate of `parent` copies from it (but the attributes): the group(s), the error
/// handler, the topology and the info hints, with contexts `ctxs`.
fn copy_of(c: &Comm, ctxs: (u16, u16)) -> Comm {
    let mut new = Comm::new(
        String::new(),
        ctxs,
        c.rank,
        c.peers.clone(),
        c.peer_size,
        c.local.clone(),
    );
    new.errhandler = c.errhandler;
    new.topo = c.topo.clone();
    new.set_hints(c.hints.clone());
    new
}

/// Copies `parent`'s attributes to its new duplicate `idx`; if a copy callback fails, the
/// duplicate is freed again (the copies made before the failure are deleted with it, their
/// callbacks run).
fn copy_attrs(cx: &mut Cx<'_>, parent: CommIdx, idx: CommIdx) -> MpiResult<()> {
    if let Err(e) = comm_attrs::copy_all(cx.comms, cx.keyvals, parent, idx) {
        let _ = comm_attrs::delete_all(cx.comms, cx.keyvals, idx);
        cx.comms.remove(idx);
        return Err(e);
    }
    Ok(())
}

/// `MPI_Comm_dup`: a new communicator with the same group(s), attributes copied.
pub(crate) fn dup(cx: &mut Cx<'_>, parent: CommIdx) -> MpiResult<(CommIdx, MPI_Comm)> {
    let ctxs = make::agree(cx, parent, true)?;
    dup_agreed(cx, parent, ctxs)
}

/// `MPI_Comm_dup` once its members agreed on `ctxs` (its agreement run by the caller).
pub(crate) fn dup_agreed(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    ctxs: (u16, u16),
) -> MpiResult<(CommIdx, MPI_Comm)> {
    let new = copy_of(cx.comms.get(parent), ctxs);
    let idle = cx.idle();
    let (idx, handle) = cx.comms.insert(new, idle);
    copy_attrs(cx, parent, idx)?;
    Ok((idx, handle))
}

/// `MPI_Comm_idup` of `parent`, an intra- or intercommunicator (`hints`: the new
/// communicator's, for `MPI_Comm_idup_with_info`; else the parent's are copied). Everything but the contexts is
/// done now, as `MPI_Comm_dup` at the time of the call would (MPI 3.1 §6.4.2: attributes set
/// later are not copied): the error handler, topology and hints copied, the attributes copied
/// through their callbacks. The agreement on the contexts runs in the progress engine
/// (`make::start_idup`) and delivers them when it ends, which completes the request. Returns
/// the new handle (usable once the request completes) and the request.
pub(crate) fn idup(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    hints: Option<crate::info::Hints>,
) -> MpiResult<(MPI_Comm, mpich_channel::ReqId)> {
    let mut new = copy_of(cx.comms.get(parent), (u16::MAX - 1, u16::MAX));
    if let Some(h) = hints {
        new.set_hints(h);
    }
    let idle = cx.idle();
    let (idx, handle) = cx.comms.insert_late(new, idle);
    copy_attrs(cx, parent, idx)?;
    match make::start_idup(cx, parent, idx) {
        Ok(id) => Ok((handle, id)),
        Err(e) => {
            let _ = comm_attrs::delete_all(cx.comms, cx.keyvals, idx);
            cx.comms.remove(idx);
            Err(e)
        }
    }
}

/// The members of `parent`'s group with color `color`, ordered by (key, rank in `parent`),
/// from everyone's `(color, key)`.
pub(crate) fn split_group(c: &Comm, everyone: &[(c_int, c_int)], color: c_int) -> Group {
    GroupData::new(
        by_key(everyone, color)
            .into_iter()
            .map(|r| c.local_global(r) as u32)
            .collect(),
    )
}

/// Everyone's `(color, key)` in `parent`.
fn gather_pairs(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<Vec<(c_int, c_int)>> {
    let mine = pair_bytes(color, key);
    let mut all = vec![0u8; 8 * cx.comms.get(parent).size];
    crate::coll::allgather_bytes(cx.engine, cx.comms, cx.spare, parent, &mine, &mut all)?;
    Ok(pairs_of(&all))
}

/// This process's `(color, key)` as `MPI_Comm_split` exchanges it.
pub(crate) fn pair_bytes(color: c_int, key: c_int) -> Vec<u8> {
    let mut mine = vec![0u8; 8];
    mine[..4].copy_from_slice(&color.to_ne_bytes());
    mine[4..].copy_from_slice(&key.to_ne_bytes());
    mine
}

/// Everyone's `(color, key)` from the gathered bytes.
pub(crate) fn pairs_of(all: &[u8]) -> Vec<(c_int, c_int)> {
    all.chunks_exact(8)
        .map(|b| {
            (
                c_int::from_ne_bytes(b[..4].try_into().expect("4 bytes")),
                c_int::from_ne_bytes(b[4..].try_into().expect("4 bytes")),
            )
        })
        .collect()
}

/// `MPI_Comm_split` on an intracommunicator: `MPI_COMM_NULL` for `MPI_UNDEFINED`.
pub(crate) fn split(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<MPI_Comm> {
    let everyone = gather_pairs(cx, parent, color, key)?;
    let group =
        (color != MPI_UNDEFINED).then(|| split_group(cx.comms.get(parent), &everyone, color));
    Ok(create_from(cx, parent, group)?.map_or(MPI_COMM_NULL, |(_, h)| h))
}

/// How `MPI_Comm_split_type` splits by hardware (see [`super::hardware`]).
pub(crate) enum HardwareSplit {
    /// `MPI_COMM_TYPE_HW_GUIDED`: by the level the info names (`None`: a name this library
    /// does not know, or no name: nobody is split off).
    Guided(Option<Level>),
    /// `MPI_COMM_TYPE_HW_UNGUIDED`: by the coarsest level that gives strict subsets.
    Unguided,
}

/// `MPI_Comm_split_type` by hardware on an intracommunicator: `split` by the resource at the
/// chosen level. Guided, each process's color is its own resource's (`local_color`: a plain
/// split, so it mixes with callers passing `MPI_UNDEFINED`); unguided, every process's
/// location is exchanged first to find the level. Returns the new handle
/// (`MPI_COMM_NULL` for a process in no resource of that level, or if there is no level)
/// and the level.
pub(crate) fn split_by_hardware(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    how: HardwareSplit,
    key: c_int,
) -> MpiResult<(MPI_Comm, Option<Level>)> {
    if let HardwareSplit::Guided(level) = how {
        return Ok((split(cx, parent, guided_color(level), key)?, level));
    }
    let me = this_location();
    let (n, rank) = {
        let c = cx.comms.get(parent);
        (c.size, c.rank)
    };
    let mut all = vec![0u8; Location::BYTES * n];
    crate::coll::allgather_bytes(
        cx.engine,
        cx.comms,
        cx.spare,
        parent,
        &me.to_bytes(),
        &mut all,
    )?;
    let (color, level) = unguided_choice(&all, rank);
    Ok((split(cx, parent, color, key)?, level))
}

/// Where this process is: its host and its hardware resources.
pub(crate) fn this_location() -> Location {
    Location {
        host: host_color(),
        resources: hardware::this_process(),
    }
}

/// `MPI_COMM_TYPE_HW_UNGUIDED`'s choice from everyone's location (`all`: one
/// [`Location`] each, in rank order): the color of rank `rank` (`MPI_UNDEFINED` in no
/// resource of the level) and the level, which depends on where everyone is.
pub(crate) fn unguided_choice(all: &[u8], rank: usize) -> (c_int, Option<Level>) {
    let everyone: Vec<Location> = all
        .chunks_exact(Location::BYTES)
        .map(Location::from_bytes)
        .collect();
    let level = hardware::unguided_level(&everyone);
    let color = level
        .and_then(|l| hardware::color(&everyone, rank, l))
        .unwrap_or(MPI_UNDEFINED);
    (color, level)
}

/// This process's color for `MPI_COMM_TYPE_HW_GUIDED` at `level`: its resource's
/// (`hardware::local_color`), or `MPI_UNDEFINED` if it is in none or there is no level.
pub(crate) fn guided_color(level: Option<Level>) -> c_int {
    let me = this_location();
    level
        .and_then(|l| hardware::local_color(&me, l))
        .unwrap_or(MPI_UNDEFINED)
}

/// A color shared by the processes of one host: a hash of its id (never `MPI_UNDEFINED`).
pub(crate) fn host_color() -> c_int {
    // The host as the NIC sees it (host name and network namespace, or MPI_HOST_ID): the
    // ranks that share a fabric, and so memory.
    let id = nic_model::net::host_id();
    // FNV-1a, kept non-negative: a stable value every process of the host computes alike.
    let mut h: u32 = 0x811c_9dc5;
    for &b in id.as_bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h & 0x3fff_ffff) as c_int
}

/// `MPI_ERR_GROUP` unless every member of `g` is in `c`'s group.
pub(crate) fn check_subset(c: &Comm, g: &GroupData) -> MpiResult<()> {
    let parent = c.group();
    match g.ranks().iter().find(|&&r| parent.local(r as usize).is_none()) {
        None => Ok(()),
        Some(_) => Err(MpiError::new(
            MPI_ERR_GROUP,
            format!("the group has a process that is not in {}; use a group made from it (MPI_Comm_group)", c.label()),
        )),
    }
}

/// `MPI_Comm_create_group` at a member of `group` (a subset of `parent`'s group; this process
/// is its member `me`): the agreement runs among the members only.
pub(crate) fn create_group(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    group: Group,
    me: usize,
    tag: c_int,
) -> MpiResult<MPI_Comm> {
    let mut agreement = group_agreement(cx, parent, &group, me, tag);
    let ctxs = cx
        .engine
        .block_on(|e| Ok::<_, MpiError>(agreement.step(e.p2p())?))??;
    Ok(install(cx, parent, ctxs, group).1)
}

/// The agreement of `MPI_Comm_create_group` among the members of `group` (this process is
/// its member `me`), named by the program's `tag`: `agree`'s protocol over the subgroup
/// (`coll::Team::subgroup`), so that it never holds this process's mask lock while a member
/// has not joined (two threads creating communicators over different groups at once, or
/// beside a `MPI_Comm_idup`, do not deadlock).
pub(crate) fn group_agreement(
    cx: &mut Cx<'_>,
    parent: CommIdx,
    group: &Group,
    me: usize,
    tag: c_int,
) -> Agreement {
    let members = group.ranks().iter().map(|&r| r as usize).collect();
    let team = crate::coll::Team::subgroup(cx.comms, parent, members, me, tag);
    Agreement::new(team, false, true, cx.comms.contexts.clone())
}

/// Frees a created communicator: its attributes' delete callbacks run first.
pub(crate) fn free(cx: &mut Cx<'_>, idx: CommIdx) -> MpiResult<()> {
    if idx == WORLD || idx == SELF {
        let name = &cx.comms.get(idx).name;
        return Err(MpiError::new(
            MPI_ERR_COMM,
            format!("{name} is predefined and cannot be freed"),
        ));
    }
    comm_attrs::delete_all(cx.comms, cx.keyvals, idx)?;
    cx.comms.remove(idx);
    Ok(())
}
