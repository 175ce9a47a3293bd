//! The C entry points that make and free intracommunicators: `MPI_Comm_dup`, `MPI_Comm_idup`,
//! `MPI_Comm_dup_with_info`, `MPI_Comm_idup_with_info`, `MPI_Comm_split`,
//! `MPI_Comm_split_type`, `MPI_Comm_create`, `MPI_Comm_create_group` and `MPI_Comm_free`
//! (`MPI_Comm_disconnect` and `MPI_Comm_get_parent` are in `dynamic`).
//!
//! Under `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go,
//! [`crate::runtime::thread`]) every blocking one runs its exchanges (the split's allgather,
//! the agreement on a context pair, an intercommunicator's `comm::net` exchanges) in waits
//! that let the process's lock go (`comm::waiting`, `comm::make::Steps`), so that threads
//! creating communicators on different parents do not wait for each other; the same
//! schedules and protocol as the calls that wait holding the lock, so the two interoperate
//! rank by rank.

use crate::abi::*;
use crate::comm::create::{
    check_subset, create_from, create_group, dup, dup_agreed, free, group_agreement, guided_color,
    host_color, idup, split, split_by_hardware, HardwareSplit,
};
use crate::comm::hardware::Level;
use crate::comm::make::install;
use crate::comm::make::{agreed, agreed_on};
use crate::comm::waiting::{split_by_hardware_waiting, split_waiting};
use crate::comm::{inter, require_intra, CommIdx};
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::Runtime;
use std::ffi::c_int;

/// The info key naming a hardware resource type (MPI 4.0 §7.4.2).
const HW_RESOURCE_TYPE: &str = "mpi_hw_resource_type";

/// Checks `comm` and the `newcomm` output of a creating call, and sets the output to
/// `MPI_COMM_NULL`: a call that fails after its checks (a copy callback that refuses, a
/// peer that fails) leaves no stale handle there, as MPICH does.
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
        let out = Out::new(newcomm, "newcomm")?;
        out.set(MPI_COMM_NULL);
        Ok(out)
    };
    Ok((idx, checks().map_err(|e| e.on(idx))?))
}

mpi_fn! {
    /// `MPI_Comm_dup`: a communicator with the same group, its own message space, and copies
    /// of the attributes, error handler and topology.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: MPI_Comm, newcomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_dup", false)?;
        if !releases {
            let (_, h) = dup(&mut rt.comm(), idx).map_err(|e| e.on(idx))?;
            out.set(h);
            return Ok(());
        }
        let ctxs = agreed(call, idx, true).map_err(|e| e.on(idx))?;
        let rt = call.state().runtime()?;
        let (_, h) = dup_agreed(&mut rt.comm(), idx, ctxs).map_err(|e| e.on(idx))?;
        out.set(h);
        Ok(())
    }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info` (`hints`: the latter's) on `comm`.
///
/// Nonblocking (`create::idup`): the call returns at once, and the new communicator's
/// handle is written to `*newcomm` before it returns, as MPICH does; the standard lets the
/// program use it only once the request has completed (MPI 3.1 §6.4.2), and only then does it
/// work (its contexts arrive with the completion). On an intercommunicator the agreement
/// spans both groups (`coll::band_u64_schedule` over the two groups), in the engine too.
fn idup_handle(
    rt: &mut Runtime,
    comm: MPI_Comm,
    newcomm: *mut MPI_Comm,
    request: *mut MPI_Request,
    what: &str,
    hints: Option<MPI_Info>,
) -> MpiResult<()> {
    let (idx, out) = begin(rt, comm, newcomm, what, false)?;
    let req = Out::new(request, "request").map_err(|e| e.on(idx))?;
    let hints = match hints {
        Some(info) => Some(crate::comm::kept_hints(
            &rt.infos.hints(info).map_err(|e| e.on(idx))?,
        )),
        None => None,
    };
    let (h, id) = idup(&mut rt.comm(), idx, hints).map_err(|e| e.on(idx))?;
    req.set(crate::p2p::request::handle(&rt.engine, id));
    out.set(h);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_idup`: `MPI_Comm_dup` as a nonblocking collective (see [`idup_handle`]).
    fn MPI_Comm_idup / PMPI_Comm_idup(comm: MPI_Comm, newcomm: *mut MPI_Comm, request: *mut MPI_Request) |st| {
        idup_handle(st.runtime()?, comm, newcomm, request, "MPI_Comm_idup", None)
    }
}

mpi_fn! {
    /// `MPI_Comm_split`: one new communicator per color, ranks ordered by key then old rank.
    /// Any color other than `MPI_UNDEFINED` is accepted, negative ones included (as MPICH). On
    /// an intercommunicator, each color's processes of both groups form an intercommunicator.
    fn MPI_Comm_split / PMPI_Comm_split(comm: MPI_Comm, color: c_int, key: c_int, newcomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_split", false)?;
        if rt.comms.get(idx).is_inter() {
            let made = if releases {
                inter::split(call, idx, color, key)
            } else {
                inter::split(&mut rt.comm(), idx, color, key)
            };
            out.set(made.map_err(|e| e.on(idx))?);
            return Ok(());
        }
        if !releases {
            out.set(split(&mut rt.comm(), idx, color, key).map_err(|e| e.on(idx))?);
            return Ok(());
        }
        out.set(split_waiting(call, idx, color, key).map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_split_type`: `MPI_COMM_TYPE_SHARED` groups the processes of each host (every
    /// rank of a job started here shares memory with the others of its host);
    /// `MPI_COMM_TYPE_HW_GUIDED` those of each resource the `mpi_hw_resource_type` info key
    /// names, `MPI_COMM_TYPE_HW_UNGUIDED` those of each resource of the coarsest level that
    /// splits `comm` (`comm::hardware`).
    fn MPI_Comm_split_type / PMPI_Comm_split_type(
        comm: MPI_Comm,
        split_type: c_int,
        key: c_int,
        info: MPI_Info,
        newcomm: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_split_type", false)?;
        if info != MPI_INFO_NULL {
            rt.infos.get(info).map_err(|e| e.on(idx))?;
        }
        if rt.comms.get(idx).is_inter() {
            // Each group split by its own colors, as MPI_Comm_split does on an
            // intercommunicator (MPICH accepts this too).
            let color = match split_type {
                MPI_UNDEFINED => MPI_UNDEFINED,
                MPI_COMM_TYPE_SHARED => host_color(),
                MPI_COMM_TYPE_HW_GUIDED => {
                    let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
                    guided_color(hints.get(HW_RESOURCE_TYPE).and_then(Level::parse))
                }
                other => {
                    return Err(MpiError::new(
                        MPI_ERR_COMM,
                        format!("split_type {other} on an intercommunicator: only MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED and MPI_UNDEFINED split one; use an intracommunicator (MPI_Intercomm_merge)"),
                    )
                    .on(idx))
                }
            };
            let made = if releases {
                inter::split(call, idx, color, key)
            } else {
                inter::split(&mut rt.comm(), idx, color, key)
            };
            out.set(made.map_err(|e| e.on(idx))?);
            return Ok(());
        }
        let how = match split_type {
            MPI_UNDEFINED | MPI_COMM_TYPE_SHARED => None,
            MPI_COMM_TYPE_HW_GUIDED => {
                let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
                let level = hints.get(HW_RESOURCE_TYPE).and_then(Level::parse);
                Some(HardwareSplit::Guided(level))
            }
            MPI_COMM_TYPE_HW_UNGUIDED => Some(HardwareSplit::Unguided),
            other => {
                return Err(MpiError::arg(format!(
                    "split_type {other} is not one of MPI_COMM_TYPE_SHARED, MPI_COMM_TYPE_HW_GUIDED, MPI_COMM_TYPE_HW_UNGUIDED, MPI_UNDEFINED"
                ))
                .on(idx))
            }
        };
        let Some(how) = how else {
            let color = if split_type == MPI_UNDEFINED { MPI_UNDEFINED } else { host_color() };
            let h = if releases {
                split_waiting(call, idx, color, key)
            } else {
                split(&mut rt.comm(), idx, color, key)
            };
            out.set(h.map_err(|e| e.on(idx))?);
            return Ok(());
        };
        let unguided = matches!(how, HardwareSplit::Unguided);
        let (h, level) = if releases {
            split_by_hardware_waiting(call, idx, how, key)
        } else {
            split_by_hardware(&mut rt.comm(), idx, how, key)
        }
        .map_err(|e| e.on(idx))?;
        let rt = call.state().runtime()?;
        if let (Some(level), Ok((new, _))) = (level, rt.comms.lookup(h)) {
            // The new communicator says which resource it is (MPI 4.0 §7.4.2).
            rt.comms.get_mut(new).hints.set(HW_RESOURCE_TYPE.to_string(), level.name().to_string());
            // Unguided, the info argument says it too (MPICH does this; mpi4py checks it).
            if unguided && info != MPI_INFO_NULL {
                rt.infos.set_key(info, HW_RESOURCE_TYPE, level.name()).map_err(|e| e.on(idx))?;
            }
        }
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_create`: a communicator over `group` (a subset of `comm`'s group, the same on
    /// every process); the others get `MPI_COMM_NULL`. On an intercommunicator each side
    /// passes a subset of its local group, and the members get an intercommunicator between
    /// the two subsets (`MPI_COMM_NULL` if either is empty).
    fn MPI_Comm_create / PMPI_Comm_create(comm: MPI_Comm, group: MPI_Group, newcomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_create", false)?;
        let g = rt.groups.get(group).map_err(|e| e.on(idx))?.clone();
        check_subset(rt.comms.get(idx), &g).map_err(|e| e.on(idx))?;
        if rt.comms.get(idx).is_inter() {
            // A split: the members in group order, everyone else MPI_UNDEFINED.
            let (color, key) = match g.local(rt.engine.p2p_ref().rank()) {
                Some(r) => (0, r as c_int),
                None => (MPI_UNDEFINED, 0),
            };
            let made = if releases {
                inter::split(call, idx, color, key)
            } else {
                inter::split(&mut rt.comm(), idx, color, key)
            };
            out.set(made.map_err(|e| e.on(idx))?);
            return Ok(());
        }
        let mine = g.local(rt.engine.p2p_ref().rank()).map(|_| g);
        if releases {
            let ctxs = agreed(call, idx, mine.is_some()).map_err(|e| e.on(idx))?;
            let rt = call.state().runtime()?;
            out.set(mine.map_or(MPI_COMM_NULL, |g| install(&mut rt.comm(), idx, ctxs, g).1));
            return Ok(());
        }
        out.set(create_from(&mut rt.comm(), idx, mine).map_err(|e| e.on(idx))?.map_or(MPI_COMM_NULL, |(_, h)| h));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_create_group`: like `MPI_Comm_create`, but collective only over the members of
    /// `group` (others get `MPI_COMM_NULL` at once).
    fn MPI_Comm_create_group / PMPI_Comm_create_group(comm: MPI_Comm, group: MPI_Group, tag: c_int, newcomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
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
        if !releases {
            out.set(create_group(&mut rt.comm(), idx, g, me, tag).map_err(|e| e.on(idx))?);
            return Ok(());
        }
        let agreement = group_agreement(&mut rt.comm(), idx, &g, me, tag).among_threads();
        let ctxs = agreed_on(call, agreement).map_err(|e| e.on(idx))?;
        out.set(install(&mut call.state().runtime()?.comm(), idx, ctxs, g).1);
        Ok(())
    }
}

/// Frees the communicator `*comm` and sets `*comm` to `MPI_COMM_NULL`.
fn free_handle(rt: &mut Runtime, comm: *mut MPI_Comm) -> MpiResult<()> {
    let h = Out::new(comm, "comm")?;
    let (idx, _) = rt.comms.lookup(h.get())?;
    free(&mut rt.comm(), idx).map_err(|e| e.on(idx))?;
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
    fn MPI_Comm_dup_with_info / PMPI_Comm_dup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, out) = begin(rt, comm, newcomm, "MPI_Comm_dup_with_info", false)?;
        let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
        let (new, h) = if releases {
            let ctxs = agreed(call, idx, true).map_err(|e| e.on(idx))?;
            dup_agreed(&mut call.state().runtime()?.comm(), idx, ctxs).map_err(|e| e.on(idx))?
        } else {
            dup(&mut rt.comm(), idx).map_err(|e| e.on(idx))?
        };
        let rt = call.state().runtime()?;
        rt.comms.get_mut(new).set_hints(crate::comm::kept_hints(&hints));
        crate::comm::tag_lanes::take_assertion(call, new).map_err(|e| e.on(idx))?;
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_idup_with_info`: `MPI_Comm_idup`, with `info` as the new hints.
    fn MPI_Comm_idup_with_info / PMPI_Comm_idup_with_info(comm: MPI_Comm, info: MPI_Info, newcomm: *mut MPI_Comm, request: *mut MPI_Request) |st| {
        idup_handle(st.runtime()?, comm, newcomm, request, "MPI_Comm_idup_with_info", Some(info))
    }
}
