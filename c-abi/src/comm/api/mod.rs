//! The C entry points of communicators, in groups: here the calls that ask about one
//! (`MPI_Comm_size`, `MPI_Comm_rank`, `MPI_Comm_compare`, `MPI_Comm_set_name`,
//! `MPI_Comm_get_name`, `MPI_Comm_test_inter`, `MPI_Comm_remote_size`,
//! `MPI_Comm_remote_group`, `MPI_Comm_set_info`, `MPI_Comm_get_info`); [`create`] (making
//! and freeing intracommunicators), [`inter`] (intercommunicators). The calls that make
//! communicators build the creation context (`Runtime::comm`) and call `comm::create` or
//! `comm::inter`.

mod create;
mod inter;

use super::compare;
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::runtime::export::mpi_fn;
use std::ffi::{c_char, c_int};

mpi_fn! {
    /// `MPI_Comm_size`: the number of processes in `comm` (its local group).
    fn MPI_Comm_size / PMPI_Comm_size(comm: MPI_Comm, size: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        Out::new(size, "size").map_err(|e| e.on(idx))?.set(c.size as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_rank`: this process's rank in `comm` (its local group).
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        Out::new(rank, "rank").map_err(|e| e.on(idx))?.set(c.rank as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_compare`.
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: MPI_Comm, comm2: MPI_Comm, result: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (_, a) = rt.comms.lookup(comm1)?;
        let (_, b) = rt.comms.lookup(comm2)?;
        Out::new(result, "result")?.set(compare(a, b));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_set_name`: names `comm` (up to `MPI_MAX_OBJECT_NAME - 1` bytes, longer names
    /// are truncated).
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: MPI_Comm, comm_name: *const c_char) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let name = crate::info::read_c_string(comm_name, MPI_MAX_OBJECT_NAME as usize - 1, "comm_name")
            .map_err(|e| e.on(idx))?;
        rt.comms.get_mut(idx).name = name;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_name`: the name of `comm` ("" if it has none).
    fn MPI_Comm_get_name / PMPI_Comm_get_name(comm: MPI_Comm, comm_name: *mut c_char, resultlen: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let len = Out::new(resultlen, "resultlen").map_err(|e| e.on(idx))?;
        let n = write_c_string(comm_name, MPI_MAX_OBJECT_NAME as usize, &c.name, "comm_name").map_err(|e| e.on(idx))?;
        len.set(n);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_test_inter`: whether `comm` is an intercommunicator.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: MPI_Comm, flag: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        Out::new(flag, "flag").map_err(|e| e.on(idx))?.set(c.is_inter() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_remote_size`: the size of an intercommunicator's remote group (of the group,
    /// for an intracommunicator, as MPICH answers).
    fn MPI_Comm_remote_size / PMPI_Comm_remote_size(comm: MPI_Comm, size: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        Out::new(size, "size").map_err(|e| e.on(idx))?.set(c.remote_size() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_remote_group`: an intercommunicator's remote group (the group, for an
    /// intracommunicator, as MPICH answers).
    fn MPI_Comm_remote_group / PMPI_Comm_remote_group(comm: MPI_Comm, group: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let out = Out::new(group, "group").map_err(|e| e.on(idx))?;
        let g = c.peer_group();
        out.set(rt.groups.insert(g)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_set_info`: records the hints `comm` keeps (MPI 4.0's assertions: with
    /// `mpi_assert_no_any_tag` its receives refuse `MPI_ANY_TAG`; its lanes go by tag only
    /// when the assertion is given at creation, `comm::tag_lanes`); other keys are ignored.
    fn MPI_Comm_set_info / PMPI_Comm_set_info(comm: MPI_Comm, info: MPI_Info) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let hints = rt.infos.hints(info).map_err(|e| e.on(idx))?;
        rt.comms.get_mut(idx).set_hints(crate::comm::kept_hints(&hints));
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_info`: a new info object holding the hints `comm` keeps, with their
    /// values.
    fn MPI_Comm_get_info / PMPI_Comm_get_info(comm: MPI_Comm, info_used: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let (idx, c) = rt.comms.lookup(comm)?;
        let out = Out::new(info_used, "info_used").map_err(|e| e.on(idx))?;
        let hints = crate::comm::hints_in_use(&c.hints);
        out.set(rt.infos.insert(hints)?);
        Ok(())
    }
}
