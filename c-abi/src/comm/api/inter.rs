//! The C entry points of intercommunicators: `MPI_Intercomm_create`, `MPI_Intercomm_merge`.
//!
//! Under `MPI_THREAD_MULTIPLE` (when the call's waits let the lock go,
//! [`crate::runtime::thread`]) both run their exchanges through the call's `Calling`
//! (`comm::make::Steps`), letting the process's lock go while they wait.

use crate::abi::*;
use crate::comm::inter::{intercomm_create, merge};
use crate::comm::require_intra;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use std::ffi::c_int;

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
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
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
        let made = if releases {
            intercomm_create(call, idx, leader, peer, tag)
        } else {
            intercomm_create(&mut rt.comm(), idx, leader, peer, tag)
        };
        out.set(made.map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Intercomm_merge`: an intracommunicator of both groups, the group that passed
    /// `high = false` first (on a tie, the group whose leader has the lower rank in the job).
    fn MPI_Intercomm_merge / PMPI_Intercomm_merge(intercomm: MPI_Comm, high: c_int, newintracomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let (idx, c) = rt.comms.lookup(intercomm)?;
        if !c.is_inter() {
            return Err(MpiError::new(MPI_ERR_COMM, format!("MPI_Intercomm_merge needs an intercommunicator; {} is not one", c.label())).on(idx));
        }
        let out = Out::new(newintracomm, "newintracomm").map_err(|e| e.on(idx))?;
        let made = if releases {
            merge(call, idx, high != 0)
        } else {
            merge(&mut rt.comm(), idx, high != 0)
        };
        out.set(made.map_err(|e| e.on(idx))?);
        Ok(())
    }
}
