//! `MPI_T_pvar_*`: the layers' counters, read through sessions and handles (see
//! [`crate::tool::pvars`]).

use super::{
    index_in, initialized, name_in, out, readings, set_if_wanted, string_out, tool_fn, TResult,
};
use crate::abi::*;
use crate::cptr;
use crate::runtime::Mpi;
use crate::tool::handles::{self, Kind, ALL_PVAR_HANDLES};
use crate::tool::pvars::{self, Which, PVARS};
use crate::tool::ToolState;
use std::ffi::{c_char, c_int, c_void};

tool_fn! {
    /// `MPI_T_pvar_get_num`: how many performance variables there are.
    fn MPI_T_pvar_get_num / PMPI_T_pvar_get_num(num_pvar: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(num_pvar)?.set(PVARS.len() as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_get_info`: a performance variable's name, verbosity, class, datatype
    /// (`MPI_UNSIGNED_LONG_LONG`), enumeration (none), description, binding
    /// (`MPI_T_BIND_NO_OBJECT`), and whether it is read-only, continuous, atomic (no).
    fn MPI_T_pvar_get_info / PMPI_T_pvar_get_info(
        pvar_index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        verbosity: *mut c_int,
        var_class: *mut c_int,
        datatype: *mut MPI_Datatype,
        enumtype: *mut MPI_T_enum,
        desc: *mut c_char,
        desc_len: *mut c_int,
        bind: *mut c_int,
        readonly: *mut c_int,
        continuous: *mut c_int,
        atomic: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let p = &PVARS[index_in(pvar_index, PVARS.len())?];
        string_out(name, name_len, p.name)?;
        string_out(desc, desc_len, p.desc)?;
        set_if_wanted(verbosity, p.verbosity);
        set_if_wanted(var_class, p.class);
        set_if_wanted(datatype, MPI_UNSIGNED_LONG_LONG);
        set_if_wanted(enumtype, std::ptr::null_mut());
        set_if_wanted(bind, MPI_T_BIND_NO_OBJECT);
        set_if_wanted(readonly, p.readonly() as c_int);
        set_if_wanted(continuous, p.continuous() as c_int);
        set_if_wanted(atomic, 0);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_get_index`: the index of the variable called `name` of class `var_class`
    /// (`MPI_T_ERR_INVALID_NAME` if there is none).
    fn MPI_T_pvar_get_index / PMPI_T_pvar_get_index(
        name: *const c_char,
        var_class: c_int,
        pvar_index: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let index = out(pvar_index)?;
        let i = pvars::index_of(&name_in(name)?, var_class).ok_or(MPI_T_ERR_INVALID_NAME)?;
        index.set(i as c_int);
        Ok(())
    }
}

/// The serial number of a session handle (any value not of a live session is refused later).
fn session_in(session: MPI_T_pvar_session) -> TResult<u64> {
    handles::decode(Kind::Session, session as usize).ok_or(MPI_T_ERR_INVALID_SESSION)
}

/// A handle argument that may be `MPI_T_PVAR_ALL_HANDLES`.
fn which_in(handle: MPI_T_pvar_handle) -> TResult<Which> {
    match handles::decode(Kind::PvarHandle, handle as usize) {
        Some(0) => Ok(Which::All),
        Some(serial) => Ok(Which::One(serial)),
        None => Err(MPI_T_ERR_INVALID_HANDLE),
    }
}

/// A handle argument that must be one handle: `MPI_T_PVAR_ALL_HANDLES` is `MPI_T_ERR_INVALID`
/// there (MPI 4.0 does not allow it for read, readreset, write or free; MPICH's class).
fn one_in(handle: MPI_T_pvar_handle) -> TResult<u64> {
    match which_in(handle)? {
        Which::One(serial) => Ok(serial),
        Which::All => Err(MPI_T_ERR_INVALID),
    }
}

tool_fn! {
    /// `MPI_T_pvar_session_create`: a new session, with no handle.
    fn MPI_T_pvar_session_create / PMPI_T_pvar_session_create(session: *mut MPI_T_pvar_session) |st, tool| {
        initialized(tool)?;
        let session = out(session)?;
        let serial = tool.sessions.create();
        session.set(handles::encode(Kind::Session, serial) as MPI_T_pvar_session);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_session_free`: frees a session and its handles; `*session` becomes
    /// `MPI_T_PVAR_SESSION_NULL`.
    fn MPI_T_pvar_session_free / PMPI_T_pvar_session_free(session: *mut MPI_T_pvar_session) |st, tool| {
        initialized(tool)?;
        let session = out(session)?;
        tool.sessions.free(session_in(session.get())?)?;
        session.set(std::ptr::null_mut());
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_handle_alloc`: a handle of variable `pvar_index` in `session` (stopped, at
    /// 0, for a counter; `obj_handle` is not used) and its number of elements (1).
    fn MPI_T_pvar_handle_alloc / PMPI_T_pvar_handle_alloc(
        session: MPI_T_pvar_session,
        pvar_index: c_int,
        obj_handle: *mut c_void,
        handle: *mut MPI_T_pvar_handle,
        count: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let session = session_in(session)?;
        let i = index_in(pvar_index, PVARS.len())?;
        let (handle, count) = (out(handle)?, out(count)?);
        let serial = tool.sessions.alloc(session, i)?;
        handle.set(handles::encode(Kind::PvarHandle, serial) as MPI_T_pvar_handle);
        count.set(1);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_handle_free`: frees a handle of `session`; `*handle` becomes
    /// `MPI_T_PVAR_HANDLE_NULL`.
    fn MPI_T_pvar_handle_free / PMPI_T_pvar_handle_free(
        session: MPI_T_pvar_session,
        handle: *mut MPI_T_pvar_handle,
    ) |st, tool| {
        initialized(tool)?;
        let session = session_in(session)?;
        let handle = out(handle)?;
        tool.sessions.free_handle(session, one_in(handle.get())?)?;
        handle.set(std::ptr::null_mut());
        Ok(())
    }
}

/// What a start, stop or reset of `handle` in `session` works on: the session, the handle(s),
/// and the current value of each variable they read (one snapshot of the counters).
fn prepare(
    st: &Mpi,
    tool: &mut ToolState,
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> TResult<(u64, Which, Vec<u64>)> {
    initialized(tool)?;
    let session = session_in(session)?;
    let which = which_in(handle)?;
    // Checks the session and the handle before the snapshot.
    tool.sessions.pvars_of(session, which)?;
    let counters = readings(st).map(|r| r.counters);
    let now = (0..PVARS.len())
        .map(|i| pvars::current(i, counters.as_ref()))
        .collect();
    Ok((session, which, now))
}

tool_fn! {
    /// `MPI_T_pvar_start`: starts a handle (or every startable handle of the session).
    fn MPI_T_pvar_start / PMPI_T_pvar_start(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) |st, tool| {
        let (session, which, now) = prepare(st, tool, session, handle)?;
        tool.sessions.start(session, which, &|i| now[i])
    }
}

tool_fn! {
    /// `MPI_T_pvar_stop`: stops a handle (or every startable handle of the session).
    fn MPI_T_pvar_stop / PMPI_T_pvar_stop(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) |st, tool| {
        let (session, which, now) = prepare(st, tool, session, handle)?;
        tool.sessions.stop(session, which, &|i| now[i])
    }
}

tool_fn! {
    /// `MPI_T_pvar_reset`: sets a handle's value (or that of every writable handle of the
    /// session) back to 0.
    fn MPI_T_pvar_reset / PMPI_T_pvar_reset(session: MPI_T_pvar_session, handle: MPI_T_pvar_handle) |st, tool| {
        let (session, which, now) = prepare(st, tool, session, handle)?;
        tool.sessions.reset(session, which, &|i| now[i])
    }
}

/// The session and the one handle of a read or write, and the current value of its variable.
fn prepare_one(
    st: &Mpi,
    tool: &mut ToolState,
    session: MPI_T_pvar_session,
    handle: MPI_T_pvar_handle,
) -> TResult<(u64, u64, u64)> {
    initialized(tool)?;
    let session = session_in(session)?;
    let handle = one_in(handle)?;
    let pvar = tool.sessions.pvar_of(session, handle)?;
    let counters = readings(st).map(|r| r.counters);
    Ok((session, handle, pvars::current(pvar, counters.as_ref())))
}

tool_fn! {
    /// `MPI_T_pvar_read`: the handle's value into `buf` (an `unsigned long long`).
    fn MPI_T_pvar_read / PMPI_T_pvar_read(
        session: MPI_T_pvar_session,
        handle: MPI_T_pvar_handle,
        buf: *mut c_void,
    ) |st, tool| {
        let (session, handle, now) = prepare_one(st, tool, session, handle)?;
        let buf = out(buf.cast::<u64>())?;
        buf.set(tool.sessions.read(session, handle, now)?);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_readreset`: reads the handle's value and sets it back to 0, at once.
    fn MPI_T_pvar_readreset / PMPI_T_pvar_readreset(
        session: MPI_T_pvar_session,
        handle: MPI_T_pvar_handle,
        buf: *mut c_void,
    ) |st, tool| {
        let (session, handle, now) = prepare_one(st, tool, session, handle)?;
        let buf = out(buf.cast::<u64>())?;
        let value = tool.sessions.read(session, handle, now)?;
        tool.sessions.reset(session, Which::One(handle), &|_| now)?;
        buf.set(value);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_pvar_write`: sets the handle's value (its own view; the layer's counter is not
    /// changed) from `buf` (an `unsigned long long`).
    fn MPI_T_pvar_write / PMPI_T_pvar_write(
        session: MPI_T_pvar_session,
        handle: MPI_T_pvar_handle,
        buf: *const c_void,
    ) |st, tool| {
        let (session, handle, now) = prepare_one(st, tool, session, handle)?;
        let value = cptr::read(buf.cast::<u64>(), "buf").map_err(|_| MPI_T_ERR_INVALID)?;
        tool.sessions.write(session, handle, value, now)
    }
}

/// `MPI_T_PVAR_ALL_HANDLES` is the pvar handle of serial 0 (see [`handles`]).
const _: () = assert!(ALL_PVAR_HANDLES != 0);
