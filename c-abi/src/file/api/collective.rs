//! Collective data access that does not complete in the call: the nonblocking collectives
//! `MPI_File_iread_all`, `MPI_File_iwrite_all`, `MPI_File_iread_at_all`,
//! `MPI_File_iwrite_at_all`, and the split collectives `MPI_File_read_all_begin` / `_end`,
//! `MPI_File_write_all_begin` / `_end`, `MPI_File_read_at_all_begin` / `_end`,
//! `MPI_File_write_at_all_begin` / `_end`; and [`prepare`], which every collective access
//! (the blocking `_all` calls of `data` too) starts with.
//!
//! Each is one two-phase access (`file::two_phase`), prepared here while the file table is
//! held (checks, the view's runs, the data, a duplicate of the descriptor; the individual
//! file pointer moves now, past the whole access, as the standard says for nonblocking and
//! split calls), then run by the progress engine without the table. A nonblocking call
//! returns the access's request (its status count: the bytes this process moved); a begin
//! call keeps it for its end call, which waits for it. One split collective at a time per
//! file, of any kind (the ordered ones of `shared` too: [`end`] ends them all): a second
//! begin, an end without a begin, or an end of another kind is `MPI_ERR_IO` (MPICH's class
//! for a second begin; its end calls check neither of the other two).

use super::{file_fn, reaching};
use crate::abi::*;
use crate::comm::CommIdx;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::file::datarep::Conversion;
use crate::file::two_phase::{self, Access, Data, Destination, Peers, Setup};
use crate::file::{files, hints, memory, Dir, OpenFile, SplitCollective, SplitProgress};
use crate::p2p::request::outcome_of;
use crate::p2p::status::{Completion, StatusOut};
use crate::runtime::thread::Reach;
use crate::runtime::Runtime;
use mpich_channel::{AdiError, ReqId, Standing};
use std::ffi::{c_int, c_void};

/// Prepares this process's part of collective access `call` (arguments as `data::access_call`'s):
/// the access, and the file's communicator.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<(Access, CommIdx)> {
    let mut t = files();
    let f = t.get(fh)?;
    let placed = f.place(&rt.types, call, dir, offset, count, datatype, false)?;
    let m = placed.message.clone();
    let pointer_after = placed.pointer_after(placed.file_bytes, f.view.etype_size);
    let file = f
        .file
        .try_clone()
        .map_err(|e| crate::file::sys::io_error(&format!("dup of {:?}", f.path), &e))?;
    let count = count as usize;
    let mut conversion = Conversion::new(
        &f.datarep,
        &rt.types,
        datatype,
        buf,
        count,
        &m,
        dir == Dir::Write,
    )?;
    // One block of native bytes: the access works in the caller's buffer itself.
    let block = (m.scattered.is_none() && conversion.is_none())
        .then(|| buf.cast::<u8>().wrapping_offset(m.offset));
    let (data, destination) = match (dir, block) {
        // SAFETY: the block is the caller's `m.bytes` bytes of data, the library's until the
        // access completes (the MPI call's contract; see `Data::caller`).
        (_, Some(at)) => (unsafe { Data::caller(at, m.bytes) }, None),
        // SAFETY: `buf` holds `count` elements of `datatype` (the caller's contract); the
        // data is only read, and copied (unless the conversion made its own: taken as is).
        (Dir::Write, None) => (
            Data::Owned(match conversion.take_converted() {
                Some(converted) => converted,
                None => unsafe { memory::with_data(buf, count, &m, &conversion, |d| d.to_vec()) },
            }),
            None,
        ),
        (Dir::Read, None) => (
            Data::Owned(Vec::new()),
            Some(Destination {
                buf,
                count,
                message: m.clone(),
                conversion,
            }),
        ),
    };
    let team = crate::coll::Team::of(&mut rt.comms, f.comm);
    let peers = Peers::new(team.globals, team.rank, team.ctx, team.seq);
    let sieve = match dir {
        Dir::Read => hints::read_sieve(&f.hints),
        Dir::Write => hints::write_sieve(&f.hints).filter(|_| f.can_read),
    };
    let setup = Setup {
        call: call.to_string(),
        dir,
        file,
        path: f.path.clone(),
        runs: placed.runs,
        data,
        bytes: placed.file_bytes,
        memory_bytes: m.bytes,
        destination,
        peers,
        settings: hints::collective(&f.hints, &f.hosts),
        sieve,
        atomic: f.atomic,
        can_read: f.can_read,
    };
    if offset.is_none() {
        f.pointer = pointer_after;
    }
    Ok((Access::new(setup), f.comm))
}

/// Starts collective access `call` and returns its request's engine id.
#[allow(clippy::too_many_arguments)]
fn start(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<ReqId> {
    let (access, comm) = prepare(rt, call, dir, fh, offset, buf, count, datatype)?;
    two_phase::start(&mut rt.engine, access, comm)
}

/// A nonblocking collective access: started, its request handed out.
#[allow(clippy::too_many_arguments)]
fn nonblocking(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> MpiResult<()> {
    let out = Out::new(request, "request")?;
    let id = start(rt, call, dir, fh, offset, buf, count, datatype)?;
    out.set(crate::p2p::request::handle(&rt.engine, id));
    // Remembered for MPI_File_close, which lets it finish.
    let p2p = rt.engine.p2p_ref();
    let mut t = files();
    let f = t.get(fh)?;
    let comm = f.comm;
    f.running
        .retain(|&r| p2p.is_pending(r) && p2p.owner(r) == Some(comm));
    f.running.push(id);
    Ok(())
}

/// A begin call: starts the access; its end call (`end`) waits for it.
#[allow(clippy::too_many_arguments)]
fn begin(
    rt: &mut Runtime,
    call: &str,
    end: &'static str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<()> {
    not_split(files().get(fh)?, call)?;
    let id = start(rt, call, dir, fh, offset, buf, count, datatype)?;
    files().get(fh)?.split = Some(SplitCollective {
        end,
        progress: SplitProgress::Running(id),
    });
    Ok(())
}

/// `MPI_ERR_IO` if a split collective is begun on `f` (one at a time: MPI 3.1 §13.4.5).
pub(super) fn not_split(f: &OpenFile, call: &str) -> MpiResult<()> {
    match f.split {
        None => Ok(()),
        Some(s) => Err(MpiError::new(
            MPI_ERR_IO,
            format!(
                "{call}: a split collective is already begun on the file (end it with {} first)",
                s.end
            ),
        )),
    }
}

/// An end call (`call`, of any split collective): completes the file's split collective,
/// waiting for it if it runs, and fills `status`. `MPI_ERR_IO` if none is begun or it ends
/// with another call.
pub(super) fn end(
    a: &mut impl Reach,
    call: &'static str,
    fh: MPI_File,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    let status = StatusOut::new(status)?;
    let begun = {
        let mut t = files();
        let f = t.get(fh)?;
        match f.split {
            Some(s) if s.end == call => f.split.take().expect("just matched"),
            Some(s) => {
                return Err(MpiError::new(
                    MPI_ERR_IO,
                    format!(
                        "{call}: the split collective begun on the file ends with {}",
                        s.end
                    ),
                ))
            }
            None => {
                return Err(MpiError::new(
                    MPI_ERR_IO,
                    format!("{call}: no split collective is begun on the file"),
                ))
            }
        }
    };
    let bytes = match begun.progress {
        SplitProgress::Done { bytes } => bytes,
        SplitProgress::Running(id) => {
            a.wait_for(|e| match e.p2p_ref().standing(id) {
                Some(Standing::Complete) => Ok(Some(())),
                Some(_) => Ok(None),
                None => Err(MpiError::from(AdiError::BadRequest(id))),
            })?;
            let retired = a
                .on_engine(|e| Ok(e.p2p().retire(id)?))?
                .ok_or_else(|| MpiError::internal("a complete split collective is not retired"))?;
            if let Some(e) = retired.attachment.and_then(outcome_of) {
                return Err(e);
            }
            if retired.status.error > 0 {
                return Err(MpiError::new(
                    retired.status.error,
                    format!("{call} failed"),
                ));
            }
            retired.status.len
        }
    };
    status.set(&Completion {
        bytes,
        ..Completion::EMPTY
    });
    Ok(())
}

file_fn! {
    /// `MPI_File_iread_all`: a collective read at the individual file pointer, nonblocking.
    fn MPI_File_iread_all / PMPI_File_iread_all, large MPI_File_iread_all_c / PMPI_File_iread_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        nonblocking(rt, "MPI_File_iread_all", Dir::Read, fh, None, buf, count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iwrite_all`: a collective write at the individual file pointer, nonblocking.
    fn MPI_File_iwrite_all / PMPI_File_iwrite_all, large MPI_File_iwrite_all_c / PMPI_File_iwrite_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        nonblocking(rt, "MPI_File_iwrite_all", Dir::Write, fh, None, buf.cast_mut(), count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iread_at_all`: a collective read at an explicit offset, nonblocking.
    fn MPI_File_iread_at_all / PMPI_File_iread_at_all, large MPI_File_iread_at_all_c / PMPI_File_iread_at_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        nonblocking(rt, "MPI_File_iread_at_all", Dir::Read, fh, Some(offset), buf, count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iwrite_at_all`: a collective write at an explicit offset, nonblocking.
    fn MPI_File_iwrite_at_all / PMPI_File_iwrite_at_all, large MPI_File_iwrite_at_all_c / PMPI_File_iwrite_at_all_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        nonblocking(rt, "MPI_File_iwrite_at_all", Dir::Write, fh, Some(offset), buf.cast_mut(), count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_read_all_begin`: starts a split collective read at the individual pointer.
    fn MPI_File_read_all_begin / PMPI_File_read_all_begin, large MPI_File_read_all_begin_c / PMPI_File_read_all_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) |rt, route| {
        *route = fh;
        begin(rt, "MPI_File_read_all_begin", "MPI_File_read_all_end", Dir::Read, fh, None, buf, count.into(), datatype)
    }
}

file_fn! {
    /// `MPI_File_read_all_end`: completes the file's split collective.
    fn MPI_File_read_all_end / PMPI_File_read_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| end(a, "MPI_File_read_all_end", fh, status))
    }
}

file_fn! {
    /// `MPI_File_write_all_begin`: starts a split collective write at the individual pointer.
    fn MPI_File_write_all_begin / PMPI_File_write_all_begin, large MPI_File_write_all_begin_c / PMPI_File_write_all_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) |rt, route| {
        *route = fh;
        begin(rt, "MPI_File_write_all_begin", "MPI_File_write_all_end", Dir::Write, fh, None, buf.cast_mut(), count.into(), datatype)
    }
}

file_fn! {
    /// `MPI_File_write_all_end`: completes the file's split collective.
    fn MPI_File_write_all_end / PMPI_File_write_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| end(a, "MPI_File_write_all_end", fh, status))
    }
}

file_fn! {
    /// `MPI_File_read_at_all_begin`: starts a split collective read at an explicit offset.
    fn MPI_File_read_at_all_begin / PMPI_File_read_at_all_begin, large MPI_File_read_at_all_begin_c / PMPI_File_read_at_all_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype) |rt, route| {
        *route = fh;
        begin(rt, "MPI_File_read_at_all_begin", "MPI_File_read_at_all_end", Dir::Read, fh, Some(offset), buf, count.into(), datatype)
    }
}

file_fn! {
    /// `MPI_File_read_at_all_end`: completes the file's split collective.
    fn MPI_File_read_at_all_end / PMPI_File_read_at_all_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| end(a, "MPI_File_read_at_all_end", fh, status))
    }
}

file_fn! {
    /// `MPI_File_write_at_all_begin`: starts a split collective write at an explicit offset.
    fn MPI_File_write_at_all_begin / PMPI_File_write_at_all_begin, large MPI_File_write_at_all_begin_c / PMPI_File_write_at_all_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype) |rt, route| {
        *route = fh;
        begin(rt, "MPI_File_write_at_all_begin", "MPI_File_write_at_all_end", Dir::Write, fh, Some(offset), buf.cast_mut(), count.into(), datatype)
    }
}

file_fn! {
    /// `MPI_File_write_at_all_end`: completes the file's split collective.
    fn MPI_File_write_at_all_end / PMPI_File_write_at_all_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| end(a, "MPI_File_write_at_all_end", fh, status))
    }
}
