//! Making and freeing communicators: `MPI_Comm_dup`, `MPI_Comm_idup`,
//! `MPI_Comm_dup_with_info`, `MPI_Comm_idup_with_info`, `MPI_Comm_split`,
//! `MPI_Comm_split_type`, `MPI_Comm_create`, `MPI_Comm_create_group`, `MPI_Comm_free`,
//! `MPI_Comm_disconnect`, and `MPI_Comm_get_parent`.
//!
//! Every creating call is collective over the parent: the members first agree on a context
//! pair ([`super::context`]), then each process that is in the new communicator builds it
//! locally from what it knows (the parent's group, and for `split` everyone's color and key,
//! exchanged with an allgather). A process left out gets `MPI_COMM_NULL` but has taken part in
//! the agreement. New communicators inherit the parent's error handler; `dup` also copies the
//! attributes (through their copy callbacks), the topology and the info hints.

use super::context::{self, Net};
use super::{require_intra, Comm, CommIdx, Members, SELF, WORLD};
use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::group::{Group, GroupData};
use crate::runtime::Runtime;
use std::ffi::c_int;

/// Builds and stores this process's communicator over `group` (which contains it) with the
/// agreed contexts, inheriting `parent`'s error handler. Returns its index and handle.
pub(crate) fn install(
    rt: &mut Runtime,
    parent: CommIdx,
    ctxs: (u16, u16),
    group: Group,
) -> (CommIdx, MPI_Comm) {
    let me = rt.engine.p2p_ref().rank();
    let rank = group
        .local(me)
        .expect("a process installs only communicators it is in");
    let size = group.size();
    let peers = Members::of(group, rt.engine.p2p_ref().size());
    let mut c = Comm::new(String::new(), ctxs, rank, peers, size, None);
    c.errhandler = rt.comms.get(parent).errhandler;
    rt.comms.insert(c, rt.engine.p2p_ref().requests_live() == 0)
}

/// The collective part of every intracommunicator-creating call over `parent`: agree on a
/// context pair, then build this process's communicator over `group` if it has one.
pub(crate) fn create_from(
    rt: &mut Runtime,
    parent: CommIdx,
    group: Option<Group>,
) -> MpiResult<Option<(CommIdx, MPI_Comm)>> {
    let ctxs = context::agree(rt, parent, group.is_some())?;
    Ok(group.map(|g| install(rt, parent, ctxs, g)))
}

/// `MPI_Comm_dup`: a new communicator with the same group(s), attributes copied.
pub(crate) fn dup(rt: &mut Runtime, parent: CommIdx) -> MpiResult<(CommIdx, MPI_Comm)> {
    let ctxs = context::agree(rt, parent, true)?;
    let c = rt.comms.get(parent);
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
    let idle = rt.engine.p2p_ref().requests_live() == 0;
    let (idx, handle) = rt.comms.insert(new, idle);
    if let Err(e) = crate::attr::copy_all(rt, parent, idx) {
        // The copies made before the failure are deleted (their callbacks run) with it.
        let _ = crate::attr::delete_all(rt, idx);
        rt.comms.remove(idx);
        return Err(e);
    }
    Ok((idx, handle))
}

/// The ranks (indices into `everyone`'s `(color, key)`) with color `color`, ordered by
/// (key, rank): the members of a split's new group, in their new rank order.
pub(super) fn by_key(everyone: &[(c_int, c_int)], color: c_int) -> Vec<usize> {
    let mut picked: Vec<(c_int, usize)> = everyone
        .iter()
        .enumerate()
        .filter(|(_, (col, _))| *col == color)
        .map(|(r, (_, key))| (*key, r))
        .collect();
    picked.sort();
    picked.into_iter().map(|(_, r)| r).collect()
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
    rt: &mut Runtime,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<Vec<(c_int, c_int)>> {
    let mut mine = [0u8; 8];
    mine[..4].copy_from_slice(&color.to_ne_bytes());
    mine[4..].copy_from_slice(&key.to_ne_bytes());
    let mut all = vec![0u8; 8 * rt.comms.get(parent).size];
    crate::coll::allgather_bytes(rt, parent, &mine, &mut all)?;
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
    rt: &mut Runtime,
    parent: CommIdx,
    color: c_int,
    key: c_int,
) -> MpiResult<MPI_Comm> {
    let everyone = gather_pairs(rt, parent, color, key)?;
    let group =
        (color != MPI_UNDEFINED).then(|| split_group(rt.comms.get(parent), &everyone, color));
    Ok(create_from(rt, parent, group)?.map_or(MPI_COMM_NULL, |(_, h)| h))
}

/// A color shared by the processes of one host: a hash of its name (never `MPI_UNDEFINED`).
fn host_color() -> c_int {
    let mut name = [0u8; 256];
    // SAFETY: gethostname writes at most name.len() bytes into our buffer.
    unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) };
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    // FNV-1a, kept non-negative: a stable value every process of the host computes alike.
    let mut h: u32 = 0x811c_9dc5;
    for &b in &name[..end] {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    (h & 0x3fff_ffff) as c_int
}

/// Checks `comm` and the `newcomm` output of a creating call.
fn begin(
    rt: &Runtime,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    what: &str,
    intra: bool,
) -> MpiResult<(CommIdx, Out<MPI_Comm>)> {
    let (idx, c) = rt.comms.lookup(comm)?;
    let checks = || -> MpiResult<Out<MPI_Comm>> {
        if intra {
            require_intra(c, what)?;
        }
        Out::new(newcomm, "newcomm")
    };
    Ok((idx, checks().map_err(|e| e.on(idx))?))
}

mpi_fn! {
    /// `MPI_Comm_dup`: a communicator with the same group, its own message space, and copies
    /// of the attributes, error handler and topology.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_dup", false)?;
        let (_, h) = dup(rt, idx).map_err(|e| e.on(idx))?;
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_idup`: `MPI_Comm_dup`, completed before it returns; the request is complete.
    /// (The duplication itself blocks: a program that makes a peer wait for it before that
    /// peer calls `MPI_Comm_idup` would hang, which no program in practice does.)
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_idup", false)?;
        let req = Out::new(request, "request").map_err(|e| e.on(idx))?;
        let (_, h) = dup(rt, idx).map_err(|e| e.on(idx))?;
        let done = rt.engine.p2p().completed(mpich_channel::Status { source: MPI_ANY_SOURCE, tag: MPI_ANY_TAG, ..Default::default() }, idx as u32);
        let done = done.map_err(|e| MpiError::from(e).on(idx))?;
        req.set(crate::p2p::request::handle(&rt.engine, done));
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_split`: one new communicator per color, ranks ordered by key then old rank.
    /// Any color other than `MPI_UNDEFINED` is accepted, negative ones included (as MPICH). On
    /// an intercommunicator, each color's processes of both groups form an intercommunicator.
    fn MPI_Comm_split / PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_split", false)?;
        if rt.comms.get(idx).is_inter() {
            out.set(super::inter::split(rt, idx, color, key).map_err(|e| e.on(idx))?);
            return Ok(());
        }
        out.set(split(rt, idx, color, key).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes of each host (every
    /// rank of a job started here shares memory with the others of its host).
    fn MPI_Comm_split_type / PMPI_Comm_split_type(
        comm: MPI_Comm,
        split_type: c_int,
        key: c_int,
        info: MPI_Info,
        newcomm: *mut MPI_Comm,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_split_type", true)?;
        if info != MPI_INFO_NULL {
            rt.infos.get(info).map_err(|e| e.on(idx))?;
        }
        let color = match split_type {
            MPI_UNDEFINED => MPI_UNDEFINED,
            MPI_COMM_TYPE_SHARED | MPI_COMM_TYPE_HW_GUIDED | MPI_COMM_TYPE_HW_UNGUIDED => host_color(),
            other => {
                return Err(MpiError::arg(format!(
                    "split_type {other} is not one of MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED, MPI_UNDEFINED"
                ))
                .on(idx))
            }
        };
        out.set(split(rt, idx, color, key).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

/// `MPI_ERR_GROUP` unless every member of `g` is in `c`'s group.
fn check_subset(c: &Comm, g: &GroupData) -> MpiResult<()> {
    let parent = c.group();
    match g.ranks().iter().find(|&&r| parent.local(r as usize).is_none()) {
        None => Ok(()),
        Some(_) => Err(MpiError::new(
            MPI_ERR_GROUP,
            format!("the group has a process that is not in {}; use a group made from it (MPI_Comm_group)", c.label()),
        )),
    }
}

mpi_fn! {
    /// `MPI_Comm_create`: a communicator over `group` (a subset of `comm`'s group, the same on
    /// every process); the others get `MPI_COMM_NULL`. On an intercommunicator each side
    /// passes a subset of its local group, and the members get an intercommunicator between
    /// the two subsets (`MPI_COMM_NULL` if either is empty).
    fn MPI_Comm_create / PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_create", false)?;
        let g = rt.groups.get(group).map_err(|e| e.on(idx))?.clone();
        check_subset(rt.comms.get(idx), &g).map_err(|e| e.on(idx))?;
        if rt.comms.get(idx).is_inter() {
            // A split: the members in group order, everyone else MPI_UNDEFINED.
            let (color, key) = match g.local(rt.engine.p2p_ref().rank()) {
                Some(r) => (0, r as c_int),
                None => (MPI_UNDEFINED, 0),
            };
            out.set(super::inter::split(rt, idx, color, key).map_err(|e| e.on(idx))?);
            return Ok(());
        }
        let mine = g.local(rt.engine.p2p_ref().rank()).map(|_| g);
        out.set(create_from(rt, idx, mine).map_err(|e| e.on(idx))?.map_or(MPI_COMM_NULL, |(_, h)| h));
        Ok(())
    }
}

/// Tags of `MPI_Comm_create_group`'s agreement: the user's tag keeps concurrent calls apart.
fn create_group_tag(tag: c_int) -> c_int {
    0x3400_0000 + ((tag & 0x3_ffff) << 6)
}

mpi_fn! {
    /// `MPI_Comm_create_group`: like `MPI_Comm_create`, but collective only over the members of
    /// `group` (others get `MPI_COMM_NULL` at once).
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_create_group", true)?;
        let g = rt.groups.get(group).map_err(|e| e.on(idx))?.clone();
        if !(0..=mpich_channel::TAG_UB).contains(&tag) {
            return Err(MpiError::new(MPI_ERR_TAG, format!("tag {tag} is outside 0..=MPI_TAG_UB")).on(idx));
        }
        check_subset(rt.comms.get(idx), &g).map_err(|e| e.on(idx))?;
        let Some(me) = g.local(rt.engine.p2p_ref().rank()) else {
            out.set(MPI_COMM_NULL);
            return Ok(());
        };
        let net = Net {
            ranks: g.ranks().iter().map(|&r| r as usize).collect(),
            me,
            ctx: rt.comms.get(idx).coll_ctx,
        };
        let mut words = rt.comms.contexts.words();
        net.allreduce_band(&mut rt.engine, &mut words, create_group_tag(tag)).map_err(|e| e.on(idx))?;
        let ctxs = context::take(rt, &words, true).map_err(|e| e.on(idx))?;
        out.set(install(rt, idx, ctxs, g).1);
        Ok(())
    }
}

/// Frees a created communicator: its attributes' delete callbacks run first.
pub(crate) fn free(rt: &mut Runtime, idx: CommIdx) -> MpiResult<()> {
    if idx == WORLD || idx == SELF {
        let name = &rt.comms.get(idx).name;
        return Err(MpiError::new(
            MPI_ERR_COMM,
            format!("{name} is predefined and cannot be freed"),
        ));
    }
    crate::attr::delete_all(rt, idx)?;
    rt.comms.remove(idx);
    Ok(())
}

/// Frees the communicator `*comm` and sets `*comm` to `MPI_COMM_NULL`.
fn free_handle(rt: &mut Runtime, comm: *mut MPI_Comm) -> MpiResult<()> {
    let h = Out::new(comm, "comm")?;
    let (idx, _) = rt.comms.lookup(h.get())?;
    free(rt, idx).map_err(|e| e.on(idx))?;
    h.set(MPI_COMM_NULL);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_free`: frees `*comm` and sets it to `MPI_COMM_NULL`.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut MPI_Comm) |st| {
        free_handle(st.runtime()?, comm)
    }
}

mpi_fn! {
    /// `MPI_Comm_dup_with_info`: `MPI_Comm_dup`, with `info` as the new hints.
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_dup_with_info", false)?;
        let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
        let (new, h) = dup(rt, idx).map_err(|e| e.on(idx))?;
        rt.comms.get_mut(new).hints = hints;
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_idup_with_info`: `MPI_Comm_idup`, with `info` as the new hints.
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) |st| {
        let rt = st.runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_idup_with_info", false)?;
        let req = Out::new(request, "request").map_err(|e| e.on(idx))?;
        let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
        let (new, h) = dup(rt, idx).map_err(|e| e.on(idx))?;
        rt.comms.get_mut(new).hints = hints;
        let done = rt.engine.p2p().completed(mpich_channel::Status { source: MPI_ANY_SOURCE, tag: MPI_ANY_TAG, ..Default::default() }, idx as u32);
        let done = done.map_err(|e| MpiError::from(e).on(idx))?;
        req.set(crate::p2p::request::handle(&rt.engine, done));
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_disconnect`: frees `*comm` like `MPI_Comm_free`. Operations still pending on
    /// it complete through their requests (this library has no dynamic processes to detach).
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut MPI_Comm) |st| {
        free_handle(st.runtime()?, comm)
    }
}

mpi_fn! {
    /// `MPI_Comm_get_parent`: `MPI_COMM_NULL` (no process of a job here was spawned).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut MPI_Comm) |st| {
        st.runtime()?;
        Out::new(parent, "parent")?.set(MPI_COMM_NULL);
        Ok(())
    }
}
