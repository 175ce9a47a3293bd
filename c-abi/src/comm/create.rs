//! Making and freeing intracommunicators: what `MPI_Comm_dup` (and `idup`, `dup_with_info`),
//! `MPI_Comm_split` (and `split_type`), `MPI_Comm_create`, `MPI_Comm_create_group` and
//! `MPI_Comm_free` do (their entry points are in `api::create`).
//!
//! Every creating call is collective over the parent: the members first agree on a context
//! pair (`make::agree`), then each process that is in the new communicator builds it
//! locally from what it knows (the parent's group, and for `split` everyone's color and key,
//! exchanged with an allgather). A process left out gets `MPI_COMM_NULL` but has taken part in
//! the agreement. New communicators inherit the parent's error handler; `dup` also copies the
//! attributes (through their copy callbacks), the topology and the info hints.

use super::make::{self, by_key, install, Cx};
use super::net::Net;
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

/// `MPI_Comm_dup`: a new communicator with the same group(s), attributes copied.
pub(crate) fn dup(cx: &mut Cx<'_>, parent: CommIdx) -> MpiResult<(CommIdx, MPI_Comm)> {
    let ctxs = make::agree(cx, parent, true)?;
    let c = cx.comms.get(parent);
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
    new.hints = c.hints.clone();
    let idle = cx.idle();
    let (idx, handle) = cx.comms.insert(new, idle);
    if let Err(e) = comm_attrs::copy_all(cx.comms, cx.keyvals, parent, idx) {
        // The copies made before the failure are deleted (their callbacks run) with it.
        let _ = comm_attrs::delete_all(cx.comms, cx.keyvals, idx);
        cx.comms.remove(idx);
        return Err(e);
    }
    Ok((idx, handle))
}

/// The members of `parent`'s group with color `color`, ordered by (key, rank in `parent`),
/// from everyone's `(color, key)`.
fn split_group(c: &Comm, everyone: &[(c_int, c_int)], color: c_int) -> Group {
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
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.to_ne_bytes());
    mine[4..].copy_from_slice(&key.to_ne_bytes());
    let mut all = vec![0u8; 8 * cx.comms.get(parent).size];
    crate::coll::allgather_bytes(cx.engine, cx.comms, cx.spare, parent, &mine, &mut all)?;
    Ok(all
        .chunks_exact(8)
        .map(|b| {
            (
                c_int::from_ne_bytes(b[..4].try_into().expect("4 bytes")),
                c_int::from_ne_bytes(b[4..].try_into().expect("4 bytes")),
            )
        })
        .collect())
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

/// Tags of `MPI_Comm_create_group`'s agreement: the user's tag keeps concurrent calls apart.
fn create_group_tag(tag: c_int) -> c_int {
    0x3400_0000 + ((tag & 0x3_ffff) << 6)
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
    let net = Net {
        ranks: group.ranks().iter().map(|&r| r as usize).collect(),
        me,
        ctx: cx.comms.get(parent).coll_ctx,
    };
    let mut words = cx.comms.contexts.words();
    net.allreduce_band(cx.engine, &mut words, create_group_tag(tag))?;
    let ctxs = make::take(cx, &words, true)?;
    Ok(install(cx, parent, ctxs, group).1)
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
