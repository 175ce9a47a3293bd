//! Intercommunicators: `MPI_Intercomm_create`, `MPI_Intercomm_merge`, and `MPI_Comm_split` of
//! an intercommunicator.
//!
//! An intercommunicator joins two disjoint groups; point-to-point ranks name the remote group.
//! Both groups use one context pair, chosen free on every process of both: each group ANDs its
//! masks (an allreduce over its local group), the two leaders swap their results over the peer
//! communicator (or, once the intercommunicator exists, over it), and each leader broadcasts
//! the final mask to its group. Messages from the other group are told apart from the local
//! group's own set-up traffic by their sources (the groups are disjoint).

use super::context::{
    self, as_bytes, as_bytes_mut, Net, MASK_WORDS, TAG_ALLREDUCE, TAG_BCAST, TAG_LEADERS,
};
use super::{require_intra, Comm, CommIdx, Members};
use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::group::GroupData;
use crate::runtime::Runtime;
use std::ffi::c_int;

/// For an existing intercommunicator `idx` (whose local group is `net`): ANDs `words` over both
/// groups and swaps `extra` with the other group's (everyone gets the remote leader's).
pub(crate) fn agree_across(
    rt: &mut Runtime,
    idx: CommIdx,
    net: &Net,
    words: &mut [u64],
    extra: &mut [u64],
) -> MpiResult<()> {
    net.allreduce_band(&mut rt.engine, words, TAG_ALLREDUCE)?;
    let c = rt.comms.get(idx);
    let leader = Net {
        ranks: vec![c.to_global(0)],
        me: 0,
        ctx: c.coll_ctx,
    };
    let mut both: Vec<u64> = words.iter().chain(extra.iter()).copied().collect();
    if net.me == 0 {
        let mine = both.clone();
        leader.sendrecv(
            &mut rt.engine,
            Some(0),
            as_bytes(&mine),
            Some(0),
            as_bytes_mut(&mut both),
            TAG_LEADERS,
        )?;
        for (w, m) in both.iter_mut().zip(&mine).take(words.len()) {
            *w &= m;
        }
    }
    net.bcast(&mut rt.engine, 0, as_bytes_mut(&mut both), TAG_BCAST)?;
    words.copy_from_slice(&both[..words.len()]);
    extra.copy_from_slice(&both[words.len()..]);
    Ok(())
}

/// What the leader of `Intercomm_create` learns from the remote leader and tells its group:
/// the remote group's engine ranks, then the agreed mask.
fn leaders_swap(
    rt: &mut Runtime,
    peer: &Net,
    tag: c_int,
    local: &[usize],
    words: &[u64],
) -> MpiResult<Vec<u64>> {
    let mut out: Vec<u64> = vec![local.len() as u64];
    out.extend(local.iter().map(|&r| r as u64));
    out.extend_from_slice(words);
    let mut len = [0u64; 1];
    peer.sendrecv(
        &mut rt.engine,
        Some(0),
        as_bytes(&[out.len() as u64]),
        Some(0),
        as_bytes_mut(&mut len),
        tag,
    )?;
    let mut theirs = vec![0u64; len[0] as usize];
    peer.sendrecv(
        &mut rt.engine,
        Some(0),
        as_bytes(&out),
        Some(0),
        as_bytes_mut(&mut theirs),
        tag,
    )?;
    Ok(theirs)
}

/// `MPI_Intercomm_create`'s collective work; returns the new handle.
#[allow(clippy::too_many_arguments)]
fn intercomm_create(
    rt: &mut Runtime,
    local_idx: CommIdx,
    local_leader: usize,
    peer: Option<(usize, u16)>,
    tag: c_int,
) -> MpiResult<MPI_Comm> {
    let net = Net::local(rt.comms.get(local_idx));
    let mut words = rt.comms.contexts.words().to_vec();
    net.allreduce_band(&mut rt.engine, &mut words, TAG_ALLREDUCE)?;
    // The leader swaps (group, mask) with the remote leader, then tells its group.
    let mut summary = Vec::new();
    if let Some((remote_leader, ctx)) = peer {
        let link = Net {
            ranks: vec![remote_leader],
            me: 0,
            ctx,
        };
        let leaders_tag = TAG_LEADERS + 0x40 + (tag & 0x00ff_ffff).min(0x00ff_ff00);
        let theirs = leaders_swap(rt, &link, leaders_tag, &net.ranks, &words)?;
        let n = theirs.first().copied().unwrap_or(0) as usize;
        if theirs.len() != 1 + n + MASK_WORDS {
            return Err(MpiError::internal(
                "MPI_Intercomm_create: the remote leader sent a malformed reply",
            ));
        }
        summary = theirs;
        for (w, t) in words.iter_mut().zip(&summary[1 + n..]) {
            *w &= t;
        }
        summary.truncate(1 + n);
        summary.extend_from_slice(&words);
    }
    let mut len = [summary.len() as u64];
    net.bcast(&mut rt.engine, local_leader, as_bytes_mut(&mut len), TAG_BCAST)?;
    summary.resize(len[0] as usize, 0);
    net.bcast(
        &mut rt.engine,
        local_leader,
        as_bytes_mut(&mut summary),
        TAG_BCAST + 1,
    )?;
    let n = summary[0] as usize;
    let remote = GroupData::new(summary[1..1 + n].iter().map(|&r| r as u32).collect());
    let ctxs = context::take(rt, &summary[1 + n..], true)?;
    let lc = rt.comms.get(local_idx);
    let local_group = lc.group();
    let mut c = Comm::new(
        String::new(),
        ctxs,
        lc.rank,
        Members::List(remote),
        n,
        Some(local_group),
    );
    c.errhandler = lc.errhandler;
    Ok(rt.comms.insert(c, rt.engine.p2p_ref().requests_live() == 0).1)
}

mpi_fn! {
    /// `MPI_Intercomm_create`: joins the group of `local_comm` with another disjoint group,
    /// whose leader is `remote_leader` in `peer_comm` (significant at `local_leader` only).
    fn MPI_Intercomm_create / PMPI_Intercomm_create(
        local_comm: MPI_Comm,
        local_leader: c_int,
        peer_comm: MPI_Comm,
        remote_leader: c_int,
        tag: c_int,
        newintercomm: *mut MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, lc) = rt.comms.lookup(local_comm)?;
        let checks = || -> MpiResult<(usize, Out<MPI_Comm>)> {
            require_intra(lc, "MPI_Intercomm_create")?;
            let out = Out::new(newintercomm, "newintercomm")?;
            if local_leader < 0 || local_leader as usize >= lc.size {
                return Err(MpiError::new(MPI_ERR_RANK, format!("local_leader {local_leader} is not a rank of {}", lc.label())));
            }
            if !(0..=mpich_channel::TAG_UB).contains(&tag) {
                return Err(MpiError::new(MPI_ERR_TAG, format!("tag {tag} is outside 0..=MPI_TAG_UB")));
            }
            Ok((local_leader as usize, out))
        };
        let (leader, out) = checks().map_err(|e| e.on(idx))?;
        let peer = if lc.rank == leader {
            let (pidx, pc) = rt.comms.lookup(peer_comm).map_err(|e| e.on(idx))?;
            let remote = pc.dest(remote_leader).map_err(|e| e.on(pidx))?.ok_or_else(|| {
                MpiError::new(MPI_ERR_RANK, "remote_leader is MPI_PROC_NULL; name the other group's leader").on(pidx)
            })?;
            if remote == rt.engine.p2p_ref().rank() {
                return Err(MpiError::new(MPI_ERR_RANK, "remote_leader is this process: the two groups must be disjoint").on(idx));
            }
            Some((remote, pc.coll_ctx))
        } else {
            None
        };
        out.set(intercomm_create(rt, idx, leader, peer, tag).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Intercomm_merge`: an intracommunicator of both groups, the group that passed
    /// `high = false` first (on a tie, the group whose leader has the lower rank in the job).
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(intercomm)?;
        if !c.is_inter() {
            return Err(MpiError::new(MPI_ERR_COMM, format!("MPI_Intercomm_merge needs an intercommunicator; {} is not one", c.label())).on(idx));
        }
        let out = Out::new(newintracomm, "newintracomm").map_err(|e| e.on(idx))?;
        let net = Net::local(c);
        let my_leader = net.ranks[0] as u64;
        let mut words = rt.comms.contexts.words().to_vec();
        let mut extra = [(high != 0) as u64, my_leader];
        agree_across(rt, idx, &net, &mut words, &mut extra).map_err(|e| e.on(idx))?;
        let [their_high, their_leader] = extra;
        let mine_first = match ((high != 0) as u64, their_high) {
            (a, b) if a != b => a < b,
            _ => my_leader < their_leader,
        };
        let c = rt.comms.get(idx);
        let (local, remote) = (c.group(), c.peer_group());
        let (first, second) = if mine_first { (local, remote) } else { (remote, local) };
        let merged = first.union(&second);
        let ctxs = context::take(rt, &words, true).map_err(|e| e.on(idx))?;
        out.set(super::create::install(rt, idx, ctxs, merged).1);
        Ok(())
    }
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
        super::create::by_key(everyone, color)
            .into_iter()
            .map(|r| g.global(r) as u32)
            .collect(),
    )
}

/// `MPI_Comm_split` of the intercommunicator `idx`: an intercommunicator between the
/// processes of each color on both sides (`MPI_COMM_NULL` if either side has none).
pub(crate) fn split(
    rt: &mut Runtime,
    idx: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<MPI_Comm> {
    let c = rt.comms.get(idx);
    let net = Net::local(c);
    let (local, remote) = (c.group(), c.peer_group());
    let link = Net {
        ranks: vec![c.to_global(0)],
        me: 0,
        ctx: c.coll_ctx,
    };
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.to_ne_bytes());
    mine[4..].copy_from_slice(&key.to_ne_bytes());
    let mut ours = vec![0u8; 8 * local.size()];
    net.allgather(&mut rt.engine, &mine, &mut ours, context::TAG_ALLGATHER)?;
    let mut theirs = vec![0u8; 8 * remote.size()];
    if net.me == 0 {
        link.sendrecv(
            &mut rt.engine,
            Some(0),
            &ours,
            Some(0),
            &mut theirs,
            TAG_LEADERS + 1,
        )?;
    }
    net.bcast(&mut rt.engine, 0, &mut theirs, TAG_BCAST + 2)?;
    let mut words = rt.comms.contexts.words().to_vec();
    agree_across(rt, idx, &net, &mut words, &mut [])?;
    if color == MPI_UNDEFINED {
        return Ok(MPI_COMM_NULL);
    }
    let local_sub = pick(&local, &pairs(&ours), color);
    let remote_sub = pick(&remote, &pairs(&theirs), color);
    if remote_sub.size() == 0 {
        return Ok(MPI_COMM_NULL);
    }
    let ctxs = context::take(rt, &words, true)?;
    let rank = local_sub
        .local(rt.engine.p2p_ref().rank())
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
    new.errhandler = rt.comms.get(idx).errhandler;
    let idle = rt.engine.p2p_ref().requests_live() == 0;
    Ok(rt.comms.insert(new, idle).1)
}
