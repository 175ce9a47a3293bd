//! Data access with explicit offsets and individual file pointers: `MPI_File_read_at`,
//! `MPI_File_write_at`, `MPI_File_read`, `MPI_File_write`, and their collective twins
//! `MPI_File_read_at_all`, `MPI_File_write_at_all`, `MPI_File_read_all`,
//! `MPI_File_write_all`.
//!
//! The collective twins are two-phase accesses (`api::collective::prepare`, then
//! `file::two_phase` run to completion by the progress engine; under `MPI_THREAD_MULTIPLE`
//! stepped in a wait that lets the process's lock go, [`collective_waiting`]).
//!
//! One independent access: the memory side is the caller's buffer as bytes (in place if one block,
//! packed or unpacked otherwise: `file::memory`); the file side is the view's byte runs from
//! the position (`View::runs`), done by `file::access` (one system call per run, or data
//! sieving). The status's count is the memory bytes actually moved (`MPI_Get_count` and
//! `MPI_Get_elements` on it): a read that meets the end of the file is short, down to 0 (in a
//! representation that changes a value's size, the whole values read: a value cut by the end
//! of the file counts nothing). The individual file pointer moves by the etypes of the file
//! data moved.

use super::file_fn;
use crate::abi::*;
use crate::error::MpiResult;
use crate::file::datarep::Conversion;
use crate::file::memory::{self, Moved};
use crate::file::sys::io_error;
use crate::file::{access, files, hints, Dir};
use crate::p2p::status::{Completion, StatusOut};
use crate::runtime::thread::Calling;
use crate::runtime::Runtime;
use std::ffi::{c_int, c_void};

/// One data access of `call`: at `offset` (etypes; `None`: the individual file pointer,
/// which then moves past the data), `count` elements of `datatype` at `buf`.
#[allow(clippy::too_many_arguments)]
pub(super) fn access_call(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    access(
        rt, call, dir, fh, offset, buf, count, datatype, status, false,
    )
}

/// [`access_call`] at `offset`, where the shared file pointer was (`api::shared`): the
/// shared-pointer routines are the ones an `MPI_MODE_SEQUENTIAL` file allows.
#[allow(clippy::too_many_arguments)]
pub(super) fn shared_access_call(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: u64,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let at = Some(offset as MPI_Offset);
    access(rt, call, dir, fh, at, buf, count, datatype, status, true)
}

#[allow(clippy::too_many_arguments)]
fn access(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
    sequential_ok: bool,
) -> MpiResult<()> {
    let status = StatusOut::new(status)?;
    let mut t = files();
    let f = t.get(fh)?;
    let placed = f.place(&rt.types, call, dir, offset, count, datatype, sequential_ok)?;
    let (m, runs) = (&placed.message, &placed.runs);
    let count = count as usize;
    let what = |e: &std::io::Error, f: &crate::file::OpenFile| {
        let op = if dir == Dir::Read { "read" } else { "write" };
        io_error(&format!("{op} of {:?}", f.path), e)
    };
    let conversion = Conversion::new(
        &f.datarep,
        &rt.types,
        datatype,
        buf,
        count,
        m,
        dir == Dir::Write,
    )?;
    let moved = match dir {
        Dir::Read => {
            let sieve = hints::read_sieve(&f.hints);
            // SAFETY: `buf` holds `count` elements of `datatype` (the caller's contract).
            unsafe {
                memory::with_room(buf, count, m, &conversion, |room| {
                    access::read(&f.file, runs, room, sieve, f.atomic)
                })
            }
            .map_err(|e| what(&e, f))?
        }
        Dir::Write => {
            let sieve = hints::write_sieve(&f.hints).filter(|_| f.can_read);
            // SAFETY: as above; the data is only read.
            unsafe {
                memory::with_data(buf, count, m, &conversion, |data| {
                    access::write(&f.file, runs, data, sieve, f.atomic)
                })
            }
            .map_err(|e| what(&e, f))?;
            Moved {
                file: placed.file_bytes,
                memory: m.bytes,
            }
        }
    };
    if offset.is_none() {
        f.pointer = placed.pointer_after(moved.file, f.view.etype_size);
    }
    status.set(&Completion {
        bytes: moved.memory,
        ..Completion::EMPTY
    });
    Ok(())
}

/// One collective data access of `call` (the `_all` forms and what the split and
/// nonblocking collectives do): the same arguments as [`access_call`], called by every
/// process of the file's communicator.
#[allow(clippy::too_many_arguments)]
pub(super) fn collective_call(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    // Two-phase I/O (`file::two_phase`), run to its end here.
    let status = StatusOut::new(status)?;
    let (access, _) = super::collective::prepare(rt, call, dir, fh, offset, buf, count, datatype)?;
    let moved = crate::file::two_phase::run(&mut rt.engine, access)?;
    status.set(&Completion {
        bytes: moved,
        ..Completion::EMPTY
    });
    Ok(())
}

file_fn! {
    /// `MPI_File_read_at`: reads at an explicit offset (etypes of the view).
    fn MPI_File_read_at / PMPI_File_read_at, large MPI_File_read_at_c / PMPI_File_read_at_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read_at", Dir::Read, fh, Some(offset), buf, count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_read_at_all`: `MPI_File_read_at`, collective (see the module documentation).
    fn MPI_File_read_at_all / PMPI_File_read_at_all, large MPI_File_read_at_all_c / PMPI_File_read_at_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        collective_waiting(call, "MPI_File_read_at_all", Dir::Read, fh, Some(offset), buf, count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_at`: writes at an explicit offset (etypes of the view).
    fn MPI_File_write_at / PMPI_File_write_at, large MPI_File_write_at_c / PMPI_File_write_at_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write_at", Dir::Write, fh, Some(offset), buf.cast_mut(), count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_at_all`: `MPI_File_write_at`, collective (see the module documentation).
    fn MPI_File_write_at_all / PMPI_File_write_at_all, large MPI_File_write_at_all_c / PMPI_File_write_at_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        collective_waiting(call, "MPI_File_write_at_all", Dir::Write, fh, Some(offset), buf.cast_mut(), count.into(), datatype, status)
    }
}

/// [`collective_call`] for the blocking call `call`: under `MPI_THREAD_MULTIPLE` (when the
/// call's waits let the lock go) the two-phase access is prepared under the lock and stepped
/// in the looks of a wait that lets it go (it owns what it needs, as the nonblocking
/// accesses' engine operation does); otherwise [`collective_call`].
#[allow(clippy::too_many_arguments)]
pub(super) fn collective_waiting(
    call: &mut Calling,
    name: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    if !call.releases() {
        let rt = call.state().runtime()?;
        return collective_call(rt, name, dir, fh, offset, buf, count, datatype, status);
    }
    let status = StatusOut::new(status)?;
    let rt = call.state().runtime()?;
    let (mut access, _) =
        super::collective::prepare(rt, name, dir, fh, offset, buf, count, datatype)?;
    let outcome = call.wait_until(|st| {
        let rt = st.runtime()?;
        if let Some(r) = access.step(rt.engine.p2p())? {
            return Ok(Some(r));
        }
        rt.engine.poke()?;
        Ok(None)
    });
    let moved = match outcome {
        Ok(r) => r?,
        Err(e) => {
            // As `two_phase::run`: operations may still name the access's buffers.
            std::mem::forget(access);
            return Err(e);
        }
    };
    status.set(&Completion {
        bytes: moved,
        ..Completion::EMPTY
    });
    Ok(())
}

file_fn! {
    /// `MPI_File_read`: reads at the individual file pointer, and moves it past the data read.
    fn MPI_File_read / PMPI_File_read, large MPI_File_read_c / PMPI_File_read_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read", Dir::Read, fh, None, buf, count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_read_all`: `MPI_File_read`, collective (see the module documentation).
    fn MPI_File_read_all / PMPI_File_read_all, large MPI_File_read_all_c / PMPI_File_read_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        collective_waiting(call, "MPI_File_read_all", Dir::Read, fh, None, buf, count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write`: writes at the individual file pointer, and moves it past the data.
    fn MPI_File_write / PMPI_File_write, large MPI_File_write_c / PMPI_File_write_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write", Dir::Write, fh, None, buf.cast_mut(), count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_all`: `MPI_File_write`, collective (see the module documentation).
    fn MPI_File_write_all / PMPI_File_write_all, large MPI_File_write_all_c / PMPI_File_write_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        collective_waiting(call, "MPI_File_write_all", Dir::Write, fh, None, buf.cast_mut(), count.into(), datatype, status)
    }
}
