//! The C entry points of sessions: `MPI_Session_init`, `MPI_Session_finalize`,
//! `MPI_Session_get_num_psets`, `MPI_Session_get_nth_pset`, `MPI_Session_get_pset_info`,
//! `MPI_Session_get_info`, `MPI_Group_from_session_pset`; and of the communicators made from
//! groups, `MPI_Comm_create_from_group` and `MPI_Intercomm_create_from_groups`.

use super::from_group::{check_leader, comm_from_group, intercomm_from_groups};
use super::{pset_members, thread_level_asked, thread_level_name, Session, PSETS};
use crate::abi::*;
use crate::cptr::{write_c_string, Out};
use crate::errhandler::check_errhandler;
use crate::error::{MpiError, MpiResult};
use crate::group::GroupData;
use crate::info::{read_c_string, Hints};
use crate::runtime::export::mpi_fn;
use crate::runtime::init::bring_up;
use crate::runtime::{Mpi, Phase, World};
use std::ffi::{c_char, c_int};

/// The highest thread level a session is granted (as for `MPI_Init_thread`).
const MAX_THREAD_LEVEL: c_int = crate::runtime::thread::MAX_LEVEL;

/// A process-set name argument.
fn pset_name_arg(name: *const c_char) -> MpiResult<String> {
    read_c_string(name, MPI_MAX_PSET_NAME_LEN as usize, "pset_name")
}

/// A string-tag argument.
fn stringtag_arg(tag: *const c_char) -> MpiResult<String> {
    read_c_string(tag, MPI_MAX_STRINGTAG_LEN as usize, "stringtag")
}

mpi_fn! {
    /// `MPI_Session_init`: opens a session (bringing the library up if neither `MPI_Init`
    /// nor another session has). The `thread_level` info key asks for a thread level (the one
    /// asked for is granted, up to `MPI_THREAD_MULTIPLE`; `MPI_Session_get_info` says which).
    fn MPI_Session_init / PMPI_Session_init(info: MPI_Info, errhandler: MPI_Errhandler, session: *mut MPI_Session) |st| {
        let out = Out::new(session, "session")?;
        let hints = st.infos().hints(info)?;
        let asked = match hints.get("thread_level") {
            Some(v) => thread_level_asked(v).ok_or_else(|| MpiError::new(MPI_ERR_INFO_VALUE, format!("thread_level is \"{v}\"; use MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE")))?,
            None => MPI_THREAD_SINGLE,
        };
        let level = asked.clamp(MPI_THREAD_SINGLE, MAX_THREAD_LEVEL);
        // Before the library is up only the predefined handlers exist.
        let running = matches!(st.phase, Phase::Running(_));
        if !running && ![MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT].contains(&errhandler) {
            return Err(MpiError::arg(format!("0x{errhandler:08x} is not an error handler (use MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN or MPI_ERRORS_ABORT, or one made by MPI_Session_create_errhandler while MPI runs)")));
        }
        if running {
            check_errhandler(&st.runtime()?.errhandlers, errhandler)?;
        } else {
            bring_up(st, level)?;
            st.main_thread.get_or_insert(std::thread::current().id());
        }
        let h = st.runtime()?.sessions.insert(Session { errhandler, thread_level: level })?;
        crate::runtime::thread::grant(level);
        out.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_finalize`: closes the session (`*session` becomes `MPI_SESSION_NULL`);
    /// after the last one, unless the world model runs, the library idles until the process
    /// exits (a new session may be opened meanwhile; see `runtime::init`). The program
    /// frees the communicators, groups and other objects it derived from the session first.
    fn MPI_Session_finalize / PMPI_Session_finalize(session: *mut MPI_Session) |st| {
        let out = Out::new(session, "session")?;
        let h = out.get();
        let world = st.world;
        let rt = st.runtime()?;
        rt.sessions.remove(h).map_err(|e| e.on_session(h))?;
        out.set(MPI_SESSION_NULL);
        if rt.sessions.is_empty() && world != World::Running {
            // Kept up for a later MPI_Session_init (MPI 4.0 §11.3.1); down at exit.
            crate::runtime::init::idle_until_exit();
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_num_psets`: how many process sets the session knows (2).
    fn MPI_Session_get_num_psets / PMPI_Session_get_num_psets(session: MPI_Session, info: MPI_Info, npset_names: *mut c_int) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        rt.sessions.get(session).map_err(on)?;
        rt.infos.hints(info).map_err(on)?;
        Out::new(npset_names, "npset_names").map_err(on)?.set(PSETS.len() as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_nth_pset`: the name of process set `n`. With `*pset_len` 0 it only
    /// sets `*pset_len` to the length the name needs (with its NUL); otherwise it writes at
    /// most `*pset_len - 1` characters and a NUL.
    fn MPI_Session_get_nth_pset / PMPI_Session_get_nth_pset(session: MPI_Session, info: MPI_Info, n: c_int, pset_len: *mut c_int, pset_name: *mut c_char) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        rt.sessions.get(session).map_err(on)?;
        rt.infos.hints(info).map_err(on)?;
        let len = Out::new(pset_len, "pset_len").map_err(on)?;
        let Some(name) = usize::try_from(n).ok().and_then(|i| PSETS.get(i)) else {
            return Err(on(MpiError::arg(format!("n is {n}; the session has {} process sets (0..={})", PSETS.len(), PSETS.len() - 1))));
        };
        let cap = len.get();
        if cap == 0 {
            len.set(name.len() as c_int + 1);
            return Ok(());
        }
        if cap < 0 {
            return Err(on(MpiError::arg(format!("*pset_len is {cap}; pass the size of pset_name, or 0 to ask for it"))));
        }
        write_c_string(pset_name, cap as usize, name, "pset_name").map_err(on)?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_pset_info`: a new info object about a process set (`mpi_size`).
    fn MPI_Session_get_pset_info / PMPI_Session_get_pset_info(session: MPI_Session, pset_name: *const c_char, info: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        rt.sessions.get(session).map_err(on)?;
        let out = Out::new(info, "info").map_err(on)?;
        let name = pset_name_arg(pset_name).map_err(on)?;
        let adi = rt.engine.p2p_ref();
        let members = pset_members(&name, adi.rank(), adi.size()).map_err(on)?;
        let mut hints = Hints::default();
        hints.set("mpi_size".into(), members.len().to_string());
        out.set(rt.infos.insert(hints).map_err(on)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Session_get_info`: a new info object with the session's `thread_level`.
    fn MPI_Session_get_info / PMPI_Session_get_info(session: MPI_Session, info_used: *mut MPI_Info) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        let level = rt.sessions.get(session).map_err(on)?.thread_level;
        let out = Out::new(info_used, "info_used").map_err(on)?;
        let mut hints = Hints::default();
        hints.set("thread_level".into(), thread_level_name(level).into());
        out.set(rt.infos.insert(hints).map_err(on)?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Group_from_session_pset`: a new group of the processes of a process set
    /// (`mpi://WORLD`, `mpi://SELF`); an unknown name is `MPI_ERR_ARG`.
    fn MPI_Group_from_session_pset / PMPI_Group_from_session_pset(session: MPI_Session, pset_name: *const c_char, newgroup: *mut MPI_Group) |st| {
        let rt = st.runtime()?;
        let on = |e: MpiError| e.on_session(session);
        rt.sessions.get(session).map_err(on)?;
        let out = Out::new(newgroup, "newgroup").map_err(on)?;
        let name = pset_name_arg(pset_name).map_err(on)?;
        let adi = rt.engine.p2p_ref();
        let members = pset_members(&name, adi.rank(), adi.size()).map_err(on)?;
        out.set(rt.groups.insert(GroupData::new(members)).map_err(on)?);
        Ok(())
    }
}

/// The error handler argument of the creating calls: a predefined one or the program's.
fn errhandler_arg(st: &mut Mpi, errhandler: MPI_Errhandler) -> MpiResult<MPI_Errhandler> {
    check_errhandler(&st.runtime()?.errhandlers, errhandler)
}

mpi_fn! {
    /// `MPI_Comm_create_from_group`: a new communicator over `group`, collective over the
    /// group's processes only (no parent communicator); `stringtag` tells concurrent
    /// creations apart. An empty group gives `MPI_COMM_NULL`.
    fn MPI_Comm_create_from_group / PMPI_Comm_create_from_group(
        group: MPI_Group,
        stringtag: *const c_char,
        info: MPI_Info,
        errhandler: MPI_Errhandler,
        newcomm: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let handler = errhandler_arg(call.state(), errhandler)?;
        let rt = call.state().runtime()?;
        let out = Out::new(newcomm, "newcomm")?;
        let g = rt.groups.get(group)?.clone();
        let tag = stringtag_arg(stringtag)?;
        rt.infos.hints(info)?;
        if g.size() == 0 {
            out.set(MPI_COMM_NULL);
            return Ok(());
        }
        out.set(if releases {
            comm_from_group(call, g, &tag, handler)?
        } else {
            comm_from_group(&mut rt.comm(), g, &tag, handler)?
        });
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Intercomm_create_from_groups`: a new intercommunicator between two disjoint
    /// groups, collective over the processes of both (no parent or peer communicator).
    fn MPI_Intercomm_create_from_groups / PMPI_Intercomm_create_from_groups(
        local_group: MPI_Group,
        local_leader: c_int,
        remote_group: MPI_Group,
        remote_leader: c_int,
        stringtag: *const c_char,
        info: MPI_Info,
        errhandler: MPI_Errhandler,
        newintercomm: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let handler = errhandler_arg(call.state(), errhandler)?;
        let rt = call.state().runtime()?;
        let out = Out::new(newintercomm, "newintercomm")?;
        let local = rt.groups.get(local_group)?.clone();
        let remote = rt.groups.get(remote_group)?.clone();
        check_leader(local_leader, local.size(), "local")?;
        check_leader(remote_leader, remote.size(), "remote")?;
        let tag = stringtag_arg(stringtag)?;
        rt.infos.hints(info)?;
        out.set(if releases {
            intercomm_from_groups(call, local, remote, &tag, handler)?
        } else {
            intercomm_from_groups(&mut rt.comm(), local, remote, &tag, handler)?
        });
        Ok(())
    }
}
