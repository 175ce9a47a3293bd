//! Data access with explicit offsets and individual file pointers: `MPI_File_read_at`,
//! `MPI_File_write_at`, `MPI_File_read`, `MPI_File_write`, and their collective twins
//! `MPI_File_read_at_all`, `MPI_File_write_at_all`, `MPI_File_read_all`,
//! `MPI_File_write_all`.
//!
//! The collective twins are collective in the call sense only, for now: each process does its
//! own access, exactly as the independent call, and nothing else (no exchange: MPI does not
//! require a collective data access to synchronize). Two-phase aggregation (collective
//! buffering) will replace this.
//!
//! One access: the memory side is the caller's buffer as bytes (in place if one block,
//! packed or unpacked otherwise: `file::memory`); the file side is the view's byte runs from
//! the position (`View::runs`), done by `file::access` (one system call per run, or data
//! sieving). The status's count is the bytes actually moved (`MPI_Get_count` and
//! `MPI_Get_elements` on it): a read that meets the end of the file is short, down to 0.

use super::file_fn;
use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use crate::file::sys::{io_error, RangeLock};
use crate::file::{access, amode, files, hints, memory};
use crate::p2p::status::{Completion, StatusOut};
use crate::runtime::Runtime;
use std::ffi::{c_int, c_void};

/// Which way the data goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Read,
    Write,
}

/// One data access of `call`: at `offset` (etypes; `None`: the individual file pointer,
/// which then moves past the data), `count` elements of `datatype` at `buf`.
#[allow(clippy::too_many_arguments)]
fn access_call(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let status = StatusOut::new(status)?;
    let mut t = files();
    let f = t.get(fh)?;
    amode::not_sequential(f.amode, call)?;
    match dir {
        Dir::Read => amode::readable(f.amode)?,
        Dir::Write => amode::writable(f.amode)?,
    }
    let m = rt.types.message(count, datatype)?;
    let etype = f.view.etype_size;
    if !m.bytes.is_multiple_of(etype) {
        return Err(MpiError::new(
            MPI_ERR_TYPE,
            format!(
                "{call} moves {} bytes, not a whole number of the view's etypes ({etype} bytes)",
                m.bytes
            ),
        ));
    }
    let pos = match offset {
        Some(o) => u64::try_from(o)
            .map_err(|_| MpiError::arg(format!("the offset is {o}; it must be 0 or more")))?,
        None => f.pointer,
    };
    let runs = f.view.runs(pos * etype as u64, m.bytes);
    let count = count as usize;
    let what = |e: &std::io::Error, f: &crate::file::OpenFile| {
        let op = if dir == Dir::Read { "read" } else { "write" };
        io_error(&format!("{op} of {:?}", f.path), e)
    };
    let moved = match dir {
        Dir::Read => {
            let sieve = hints::read_sieve(&f.hints);
            // SAFETY: `buf` holds `count` elements of `datatype` (the caller's contract).
            unsafe {
                memory::with_room(buf, count, &m, |room| {
                    access::read(&f.file, &runs, room, sieve)
                })
            }
            .map_err(|e| what(&e, f))?
        }
        Dir::Write => {
            let sieve = hints::write_sieve(&f.hints).filter(|_| f.can_read);
            let atomic_lock = match (f.atomic, runs.first(), runs.last()) {
                (true, Some(a), Some(z)) => Some(
                    RangeLock::write(&f.file, a.offset, z.offset + z.len as u64 - a.offset)
                        .map_err(|e| what(&e, f))?,
                ),
                _ => None,
            };
            // SAFETY: as above; the data is only read.
            unsafe {
                memory::with_data(buf, count, &m, |data| {
                    access::write(&f.file, &runs, data, sieve, f.atomic)
                })
            }
            .map_err(|e| what(&e, f))?;
            drop(atomic_lock);
            m.bytes
        }
    };
    if offset.is_none() {
        f.pointer = pos + (moved / etype) as u64;
    }
    status.set(&Completion {
        bytes: moved,
        ..Completion::EMPTY
    });
    Ok(())
}

file_fn! {
    /// `MPI_File_read_at`: reads at an explicit offset (etypes of the view).
    fn MPI_File_read_at / PMPI_File_read_at(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read_at", Dir::Read, fh, Some(offset), buf, count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_read_at_all`: `MPI_File_read_at`, collective (see the module documentation).
    fn MPI_File_read_at_all / PMPI_File_read_at_all(fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read_at_all", Dir::Read, fh, Some(offset), buf, count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_at`: writes at an explicit offset (etypes of the view).
    fn MPI_File_write_at / PMPI_File_write_at(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write_at", Dir::Write, fh, Some(offset), buf.cast_mut(), count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_at_all`: `MPI_File_write_at`, collective (see the module documentation).
    fn MPI_File_write_at_all / PMPI_File_write_at_all(fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write_at_all", Dir::Write, fh, Some(offset), buf.cast_mut(), count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_read`: reads at the individual file pointer, and moves it past the data read.
    fn MPI_File_read / PMPI_File_read(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read", Dir::Read, fh, None, buf, count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_read_all`: `MPI_File_read`, collective (see the module documentation).
    fn MPI_File_read_all / PMPI_File_read_all(fh: MPI_File, buf: *mut c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_read_all", Dir::Read, fh, None, buf, count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write`: writes at the individual file pointer, and moves it past the data.
    fn MPI_File_write / PMPI_File_write(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write", Dir::Write, fh, None, buf.cast_mut(), count, datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_all`: `MPI_File_write`, collective (see the module documentation).
    fn MPI_File_write_all / PMPI_File_write_all(fh: MPI_File, buf: *const c_void, count: c_int, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        access_call(rt, "MPI_File_write_all", Dir::Write, fh, None, buf.cast_mut(), count, datatype, status)
    }
}
