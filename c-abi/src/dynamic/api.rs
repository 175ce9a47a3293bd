//! The C entry points of dynamic processes (see the module documentation of `dynamic`).

use super::spawn::{spawn, Spawned};
use super::{accept, connect, foreign_ranks, join, names, port};
use crate::abi::*;
use crate::comm::net::{Net, TAG_ALLREDUCE, TAG_BCAST, TAG_LEADERS};
use crate::comm::{require_intra, CommIdx};
use crate::cptr::{input_string, write_c_string, Out};
use crate::error::{MpiError, MpiResult};
use crate::runtime::export::mpi_fn;
use crate::runtime::thread::Reach;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int};

/// The most arguments read from one `argv` (it is NULL-terminated; this bounds a missing end).
const MAX_ARGS: usize = 4096;

/// Checks `comm` (an intracommunicator) and `root`; returns the index and this process's rank.
fn checked(rt: &Runtime, comm: MPI_Comm, root: c_int, what: &str) -> MpiResult<(CommIdx, usize)> {
    let (idx, c) = rt.comms.lookup(comm)?;
    require_intra(c, what).map_err(|e| e.on(idx))?;
    if root < 0 || root as usize >= c.size {
        return Err(MpiError::new(
            MPI_ERR_ROOT,
            format!(
                "{what}: root {root} is not a rank of {} (size {})",
                c.label(),
                c.size
            ),
        )
        .on(idx));
    }
    Ok((idx, c.rank))
}

/// The checks of `MPI_Comm_accept` / `MPI_Comm_connect` and the port name, which only the root
/// reads (`None` on the other members).
fn checked_port(
    rt: &Runtime,
    comm: MPI_Comm,
    root: c_int,
    port_name: *const c_char,
    what: &str,
) -> MpiResult<(CommIdx, Option<String>)> {
    let (idx, me) = checked(rt, comm, root, what)?;
    if me != root as usize {
        return Ok((idx, None));
    }
    let name = input_string(port_name, "port_name").map_err(|e| e.on(idx))?;
    Ok((idx, Some(name)))
}

/// A NULL-terminated `argv` (`MPI_ARGV_NULL`: none).
fn read_argv(argv: *mut *mut c_char) -> MpiResult<Vec<String>> {
    let mut out = Vec::new();
    if argv.is_null() {
        return Ok(out);
    }
    for i in 0..MAX_ARGS {
        // SAFETY: a non-NULL argv is an array of string pointers ending with NULL (the caller's
        // contract); we read up to and including that NULL.
        let p = unsafe { *argv.add(i) };
        if p.is_null() {
            return Ok(out);
        }
        out.push(input_string(p, "argv")?);
    }
    Err(MpiError::new(
        MPI_ERR_ARG,
        format!("argv has no NULL entry within {MAX_ARGS} arguments"),
    ))
}

/// One command as the launcher gets it.
fn command(
    rt: &Runtime,
    cmd: *const c_char,
    argv: *mut *mut c_char,
    maxprocs: c_int,
    info: MPI_Info,
) -> MpiResult<pmi::SpawnCommand> {
    let command = input_string(cmd, "command")?;
    if command.trim().is_empty() {
        return Err(MpiError::new(
            MPI_ERR_SPAWN,
            "the command to spawn is empty",
        ));
    }
    if maxprocs <= 0 {
        return Err(MpiError::new(
            MPI_ERR_ARG,
            format!("maxprocs is {maxprocs}; spawn at least one process"),
        ));
    }
    let hints = rt.infos.hints(info)?;
    let info = hints
        .pairs()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ok(pmi::SpawnCommand {
        command,
        args: read_argv(argv)?,
        nprocs: maxprocs as usize,
        info,
    })
}

/// Hands a spawn's outcome to the caller: the intercommunicator and the error codes.
fn finish(
    s: Spawned,
    idx: CommIdx,
    intercomm: &Out<MPI_Comm>,
    errcodes: *mut c_int,
) -> MpiResult<()> {
    let code = match &s.intercomm {
        Ok(_) => MPI_SUCCESS,
        Err(_) => MPI_ERR_SPAWN,
    };
    if !errcodes.is_null() {
        for i in 0..s.total {
            // SAFETY: array_of_errcodes holds one entry per process asked for (the caller's
            // contract; MPI_ERRCODES_IGNORE is NULL and skipped).
            unsafe { errcodes.add(i).write(code) };
        }
    }
    let h = s.intercomm.map_err(|e| e.on(idx))?;
    intercomm.set(h);
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_spawn`: starts `maxprocs` processes of `command` as a new job and connects
    /// them to the group of `comm` (see the module documentation).
    fn MPI_Comm_spawn / PMPI_Comm_spawn(
        command_name: *const c_char,
        argv: *mut *mut c_char,
        maxprocs: c_int,
        info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        intercomm: *mut MPI_Comm,
        array_of_errcodes: *mut c_int,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let out = Out::new(intercomm, "intercomm")?;
        out.set(MPI_COMM_NULL);
        let (idx, me) = checked(rt, comm, root, "MPI_Comm_spawn")?;
        let commands = if me == root as usize {
            Some(vec![command(rt, command_name, argv, maxprocs, info).map_err(|e| e.on(idx))?])
        } else {
            None
        };
        // Under MPI_THREAD_MULTIPLE its waits let the lock go.
        let s = if releases {
            spawn(call, idx, root as usize, commands)
        } else {
            spawn(&mut rt.comm(), idx, root as usize, commands)
        };
        finish(s.map_err(|e| e.on(idx))?, idx, &out, array_of_errcodes)
    }
}

mpi_fn! {
    /// `MPI_Comm_spawn_multiple`: as `MPI_Comm_spawn`, with several commands whose processes
    /// share one `MPI_COMM_WORLD` (in the order of the commands; `MPI_APPNUM` tells them apart).
    fn MPI_Comm_spawn_multiple / PMPI_Comm_spawn_multiple(
        count: c_int,
        array_of_commands: *mut *mut c_char,
        array_of_argv: *mut *mut *mut c_char,
        array_of_maxprocs: *const c_int,
        array_of_info: *const MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        intercomm: *mut MPI_Comm,
        array_of_errcodes: *mut c_int,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let out = Out::new(intercomm, "intercomm")?;
        out.set(MPI_COMM_NULL);
        let (idx, me) = checked(rt, comm, root, "MPI_Comm_spawn_multiple")?;
        let commands = if me == root as usize {
            if count <= 0 {
                return Err(MpiError::new(MPI_ERR_ARG, format!("count is {count}; give at least one command")).on(idx));
            }
            let n = count as usize;
            let cmds = crate::cptr::input_array(array_of_commands.cast_const(), n, "array_of_commands").map_err(|e| e.on(idx))?;
            let procs = crate::cptr::input_array(array_of_maxprocs, n, "array_of_maxprocs").map_err(|e| e.on(idx))?;
            let infos = crate::cptr::input_array(array_of_info, n, "array_of_info").map_err(|e| e.on(idx))?;
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                let argv = if array_of_argv.is_null() {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: a non-NULL array_of_argv has `count` entries (the caller's contract).
                    unsafe { *array_of_argv.add(i) }
                };
                v.push(command(rt, cmds[i], argv, procs[i], infos[i]).map_err(|e| e.on(idx))?);
            }
            Some(v)
        } else {
            None
        };
        let s = if releases {
            spawn(call, idx, root as usize, commands)
        } else {
            spawn(&mut rt.comm(), idx, root as usize, commands)
        };
        finish(s.map_err(|e| e.on(idx))?, idx, &out, array_of_errcodes)
    }
}

mpi_fn! {
    /// `MPI_Comm_get_parent`: the intercommunicator to the parents of a spawned process, else
    /// `MPI_COMM_NULL` (also after it was disconnected or freed).
    fn MPI_Comm_get_parent / PMPI_Comm_get_parent(parent: *mut MPI_Comm) |st| {
        let rt = st.runtime()?;
        let h = rt
            .dynamic
            .parent
            .filter(|&h| rt.comms.lookup(h).is_ok())
            .unwrap_or(MPI_COMM_NULL);
        Out::new(parent, "parent")?.set(h);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Open_port`: a new port (an address and a secret; see `port`).
    fn MPI_Open_port / PMPI_Open_port(_info: MPI_Info, port_name: *mut c_char) |st| {
        let rt = st.runtime()?;
        if port_name.is_null() {
            return Err(MpiError::new(MPI_ERR_ARG, "port_name is NULL"));
        }
        let p = port::open()?;
        write_c_string(port_name, MPI_MAX_PORT_NAME as usize, &p.name, "port_name")?;
        rt.dynamic.ports.push(p);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Close_port`: stops listening on a port this process opened.
    fn MPI_Close_port / PMPI_Close_port(port_name: *const c_char) |st| {
        let rt = st.runtime()?;
        let name = input_string(port_name, "port_name")?;
        let before = rt.dynamic.ports.len();
        rt.dynamic.ports.retain(|p| p.name != name.trim());
        if rt.dynamic.ports.len() == before {
            return Err(MpiError::new(MPI_ERR_PORT, format!("'{name}' is not a port this process opened")));
        }
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_accept`: waits for a group that connects to `port_name` (an open port of the
    /// root) and makes the intercommunicator with it.
    fn MPI_Comm_accept / PMPI_Comm_accept(
        port_name: *const c_char,
        _info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        newcomm: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let out = Out::new(newcomm, "newcomm")?;
        out.set(MPI_COMM_NULL);
        let (idx, name) = checked_port(rt, comm, root, port_name, "MPI_Comm_accept")?;
        // The root's own copy of its port: the waits keep nothing of the state.
        let port = name
            .and_then(|n| rt.dynamic.ports.iter().find(|p| p.name == n.trim()))
            .map(|p| p.try_clone())
            .transpose()
            .map_err(|e| e.on(idx))?;
        // Under MPI_THREAD_MULTIPLE its waits let the lock go.
        let made = if releases {
            accept(call, idx, root as usize, port)
        } else {
            accept(&mut rt.comm(), idx, root as usize, port)
        };
        out.set(made.map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_connect`: connects the group of `comm` to the group accepting on `port_name`.
    fn MPI_Comm_connect / PMPI_Comm_connect(
        port_name: *const c_char,
        _info: MPI_Info,
        root: c_int,
        comm: MPI_Comm,
        newcomm: *mut MPI_Comm,
    ) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let out = Out::new(newcomm, "newcomm")?;
        out.set(MPI_COMM_NULL);
        let (idx, name) = checked_port(rt, comm, root, port_name, "MPI_Comm_connect")?;
        // Under MPI_THREAD_MULTIPLE its waits let the lock go.
        let made = if releases {
            connect(call, idx, root as usize, name.as_deref())
        } else {
            connect(&mut rt.comm(), idx, root as usize, name.as_deref())
        };
        out.set(made.map_err(|e| e.on(idx))?);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_join`: the intercommunicator between this process and the one at the other
    /// end of the connected socket `fd` (each side offers a port over it; the lower name
    /// accepts, the other connects).
    fn MPI_Comm_join / PMPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) waits |call| {
        let releases = call.releases();
        let rt = call.state().runtime()?;
        let out = Out::new(intercomm, "intercomm")?;
        out.set(MPI_COMM_NULL);
        // Under MPI_THREAD_MULTIPLE its waits let the lock go.
        let made = if releases {
            join(call, fd)
        } else {
            join(&mut rt.comm(), fd)
        };
        out.set(made?);
        Ok(())
    }
}

/// Waits until every member of `idx` (both groups of an intercommunicator) has arrived.
fn barrier(a: &mut impl Reach, idx: CommIdx) -> MpiResult<()> {
    let (net, link, inter) = a.rt(|rt| {
        let c = rt.comms.get(idx);
        let link = Net {
            ranks: vec![c.to_global(0)],
            me: 0,
            ctx: c.coll_ctx,
        };
        Ok((Net::local(c), link, c.is_inter()))
    })?;
    let mut word = [1u64];
    net.allreduce_band(a, &mut word, TAG_ALLREDUCE + 0x70)?;
    if inter {
        if net.me == 0 {
            let mut theirs = [0u8; 8];
            link.sendrecv(
                a,
                Some(0),
                &[1u8; 8],
                Some(0),
                &mut theirs,
                TAG_LEADERS + 0x70,
            )?;
        }
        let mut b = [0u8; 8];
        net.bcast(a, 0, &mut b, TAG_BCAST + 0x70)?;
    }
    Ok(())
}

mpi_fn! {
    /// `MPI_Comm_disconnect`: waits for every member, frees `*comm`, and closes the
    /// connections to processes of other jobs that no communicator names any more.
    fn MPI_Comm_disconnect / PMPI_Comm_disconnect(comm: *mut MPI_Comm) waits |call| {
        let h = Out::new(comm, "comm")?;
        let (idx, _) = call.state().runtime()?.comms.lookup(h.get())?;
        // Under MPI_THREAD_MULTIPLE the barrier waits with the lock let go.
        if call.releases() {
            barrier(call, idx)
        } else {
            barrier(call.state().runtime()?, idx)
        }
        .map_err(|e| e.on(idx))?;
        let rt = call.state().runtime()?;
        let job = rt.engine.p2p_ref().size();
        let gone = foreign_ranks(rt.comms.get(idx), job);
        crate::comm::create::free(&mut rt.comm(), idx).map_err(|e| e.on(idx))?;
        let still: Vec<usize> = rt.comms.live().flat_map(|c| foreign_ranks(c, job)).collect();
        let closing: Vec<usize> = gone.into_iter().filter(|r| !still.contains(r)).collect();
        rt.engine.p2p().remove_peers(&closing);
        h.set(MPI_COMM_NULL);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Publish_name`: publishes `port_name` under `service_name` (see `names`).
    fn MPI_Publish_name / PMPI_Publish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) |st| {
        st.runtime()?;
        let service = input_string(service_name, "service_name")?;
        let port = input_string(port_name, "port_name")?;
        names::publish(&service, &port)
    }
}

mpi_fn! {
    /// `MPI_Lookup_name`: the port published under `service_name`; `MPI_ERR_NAME` if none.
    fn MPI_Lookup_name / PMPI_Lookup_name(service_name: *const c_char, _info: MPI_Info, port_name: *mut c_char) |st| {
        st.runtime()?;
        let service = input_string(service_name, "service_name")?;
        let port = names::lookup(&service)?;
        write_c_string(port_name, MPI_MAX_PORT_NAME as usize, &port, "port_name")?;
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Unpublish_name`: withdraws `service_name`, published with `port_name`.
    fn MPI_Unpublish_name / PMPI_Unpublish_name(service_name: *const c_char, _info: MPI_Info, port_name: *const c_char) |st| {
        st.runtime()?;
        let service = input_string(service_name, "service_name")?;
        let port = input_string(port_name, "port_name")?;
        names::unpublish(&service, &port)
    }
}
