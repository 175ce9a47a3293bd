//! Intercommunicators: what `MPI_Intercomm_create`, `MPI_Intercomm_merge`, and `MPI_Comm_split`
//! of an intercommunicator do (their entry points are in `api::inter`).
//!
//! An intercommunicator joins two disjoint groups; point-to-point ranks name the remote group.
//! Both groups use one context pair, chosen free on every process of both. `MPI_Intercomm_create`:
//! the two leaders swap their groups' members over the peer communicator and broadcast them to
//! their groups, then every process of both runs the agreement protocol over the union
//! (`make::agree_among`). Once an intercommunicator exists (merge, split), the protocol runs on
//! it (`make::agree`, its rounds spanning both groups). Messages from the other group are told
//! apart from the local group's own set-up traffic by their sources (the groups are disjoint).
//! Each function is written once on `make::Steps`: the communicators held throughout, or a
//! blocking call's `Calling` whose waits let the process's lock go.

use super::make::{self, agree_across, by_key, install, Steps};
use super::net::{as_bytes, as_bytes_mut, Net, Progress, TAG_ALLGATHER, TAG_BCAST, TAG_LEADERS};
use super::{Comm, CommIdx, Members};
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::group::GroupData;
use std::ffi::c_int;

/// What the leader of `Intercomm_create` learns from the remote leader and tells its group:
/// the remote group's engine ranks (after their count).
fn leaders_swap(
    a: &mut impl Progress,
    peer: &Net,
    tag: c_int,
    local: &[usize],
) -> MpiResult<Vec<u64>> {
    let mut out: Vec<u64> = vec![local.len() as u64];
    out.extend(local.iter().map(|&r| r as u64));
    let mut len = [0u64; 1];
    peer.sendrecv(
        a,
        Some(0),
        as_bytes(&[out.len() as u64]),
        Some(0),
        as_bytes_mut(&mut len),
        tag,
    )?;
    let mut theirs = vec![0u64; len[0] as usize];
    peer.sendrecv(
        a,
        Some(0),
        as_bytes(&out),
        Some(0),
        as_bytes_mut(&mut theirs),
        tag,
    )?;
    Ok(theirs)
}

/// `MPI_Intercomm_create`'s collective work; returns the new handle. The leaders swap their
/// groups' members over the peer communicator and tell their groups; then every process of
/// both groups runs the context agreement over their union (`make::agree_among`, named by
/// the tag and the union), which never holds a process's mask lock while a member has not
/// joined.
pub(crate) fn intercomm_create(
    a: &mut impl Steps,
    local_idx: CommIdx,
    local_leader: usize,
    peer: Option<(usize, u16)>,
    tag: c_int,
) -> MpiResult<MPI_Comm> {
    let (net, me) = a.cx(|cx| {
        Ok((
            Net::local(cx.comms.get(local_idx)),
            cx.engine.p2p_ref().rank(),
        ))
    })?;
    let mut summary = Vec::new();
    if let Some((remote_leader, ctx)) = peer {
        let link = Net {
            ranks: vec![remote_leader],
            me: 0,
            ctx,
        };
        let leaders_tag = TAG_LEADERS + 0x40 + (tag & 0x00ff_ffff).min(0x00ff_ff00);
        summary = leaders_swap(a, &link, leaders_tag, &net.ranks)?;
        let n = summary.first().copied().unwrap_or(0) as usize;
        if summary.len() != 1 + n {
            return Err(MpiError::internal(
                "MPI_Intercomm_create: the remote leader sent a malformed reply",
            ));
        }
    }
    let mut len = [summary.len() as u64];
    net.bcast(a, local_leader, as_bytes_mut(&mut len), TAG_BCAST)?;
    summary.resize(len[0] as usize, 0);
    net.bcast(a, local_leader, as_bytes_mut(&mut summary), TAG_BCAST + 1)?;
    let n = summary[0] as usize;
    let remote_ranks: Vec<u32> = summary[1..1 + n].iter().map(|&r| r as u32).collect();
    // Every process of both groups computes the same union, in engine-rank order.
    let mut union: Vec<u32> = net
        .ranks
        .iter()
        .map(|&r| r as u32)
        .chain(remote_ranks.iter().copied())
        .collect();
    union.sort_unstable();
    let at = union
        .binary_search(&(me as u32))
        .expect("this process is in its local group");
    let name =
        crate::session::from_group::bootstrap_name(&format!("MPI_Intercomm_create {tag}"), &union);
    let ctxs = make::agree_among(a, &union, at, name)?;
    let remote = GroupData::new(remote_ranks);
    a.cx(|cx| Ok(make::install_inter(cx, local_idx, ctxs, remote)))
}

/// `MPI_Intercomm_merge` of the intercommunicator `idx`: an intracommunicator of both
/// groups, the group that passed `high = false` first (on a tie, the group whose leader has the
/// lower rank in the job).
pub(crate) fn merge(a: &mut impl Steps, idx: CommIdx, high: bool) -> MpiResult<MPI_Comm> {
    let net = a.cx(|cx| Ok(Net::local(cx.comms.get(idx))))?;
    let my_leader = net.ranks[0] as u64;
    // Who goes first: swapped without the mask lock (nothing is taken yet).
    let mut extra = [high as u64, my_leader];
    agree_across(a, idx, &net, &mut [], &mut extra)?;
    let [their_high, their_leader] = extra;
    let mine_first = match (high as u64, their_high) {
        (a, b) if a != b => a < b,
        _ => my_leader < their_leader,
    };
    let (local, remote) = a.cx(|cx| {
        let c = cx.comms.get(idx);
        Ok((c.group(), c.peer_group()))
    })?;
    let (first, second) = if mine_first {
        (local, remote)
    } else {
        (remote, local)
    };
    let merged = first.union(&second);
    let ctxs = a.agree(idx, true)?;
    a.cx(|cx| Ok(install(cx, idx, ctxs, merged).1))
}

/// Decodes `(color, key)` pairs.
fn pairs(bytes: &[u8]) -> Vec<(c_int, c_int)> {
    bytes
        .chunks_exact(8)
        .map(|b| {
            (
                c_int::from_ne_bytes(b[..4].try_into().expect("4 bytes")),
                c_int::from_ne_bytes(b[4..].try_into().expect("4 bytes")),
            )
        })
        .collect()
}

/// The engine ranks of the members of `g` with color `color`, by (key, rank in `g`).
fn pick(g: &GroupData, everyone: &[(c_int, c_int)], color: c_int) -> std::rc::Rc<GroupData> {
    GroupData::new(
        by_key(everyone, color)
            .into_iter()
            .map(|r| g.global(r) as u32)
            .collect(),
    )
}

/// `MPI_Comm_split` of the intercommunicator `idx`: an intercommunicator between the
/// processes of each color on both sides (`MPI_COMM_NULL` if either side has none).
pub(crate) fn split(
    a: &mut impl Steps,
    idx: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<MPI_Comm> {
    let (net, local, remote, link) = a.cx(|cx| {
        let c = cx.comms.get(idx);
        let link = Net {
            ranks: vec![c.to_global(0)],
            me: 0,
            ctx: c.coll_ctx,
        };
        Ok((Net::local(c), c.group(), c.peer_group(), link))
    })?;
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.to_ne_bytes());
    mine[4..].copy_from_slice(&key.to_ne_bytes());
    let mut ours = vec![0u8; 8 * local.size()];
    net.allgather(a, &mine, &mut ours, TAG_ALLGATHER)?;
    let mut theirs = vec![0u8; 8 * remote.size()];
    if net.me == 0 {
        link.sendrecv(a, Some(0), &ours, Some(0), &mut theirs, TAG_LEADERS + 1)?;
    }
    net.bcast(a, 0, &mut theirs, TAG_BCAST + 2)?;
    let local_sub = pick(&local, &pairs(&ours), color);
    let remote_sub = pick(&remote, &pairs(&theirs), color);
    let member = color != MPI_UNDEFINED && remote_sub.size() > 0;
    // One pair for every new intercommunicator: free on all of both groups (the protocol of
    // `agree`, which holds no lock while waiting for the other group).
    let ctxs = a.agree(idx, member)?;
    if !member {
        return Ok(MPI_COMM_NULL);
    }
    a.cx(|cx| {
        let rank = local_sub
            .local(cx.engine.p2p_ref().rank())
            .expect("this process has the color it gave");
        let n = remote_sub.size();
        let mut new = Comm::new(
            String::new(),
            ctxs,
            rank,
            Members::List(remote_sub),
            n,
            Some(local_sub),
        );
        new.errhandler = cx.comms.get(idx).errhandler;
        let idle = cx.idle();
        Ok(cx.comms.insert(new, idle).1)
    })
}
