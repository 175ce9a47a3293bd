//! Data access through the shared file pointer (MPI 3.1 §13.4.4): `MPI_File_read_shared`,
//! `MPI_File_write_shared`, `MPI_File_iread_shared`, `MPI_File_iwrite_shared`,
//! `MPI_File_read_ordered`, `MPI_File_write_ordered`, their split forms
//! `MPI_File_read_ordered_begin` / `_end` and `MPI_File_write_ordered_begin` / `_end`,
//! `MPI_File_seek_shared` and `MPI_File_get_position_shared`; and the open, set-view and close
//! steps of the pointer ([`first_pointer`] at open, [`reset`]; close is `manage`'s).
//!
//! The pointer itself is `file::shared` (a side file read-modify-written under a lock).
//!
//! **Independent** (`read_shared`, `write_shared` and their `i` forms): the access is checked
//! (access mode, a whole number of etypes) before the pointer moves; then one locked
//! fetch-and-add moves it past the data requested and gives where the access goes, and the
//! access is done there like an explicit-offset one (`data::shared_access_call`). The pointer
//! moves by what was asked, also for a read that meets the end of the file (as ROMIO does).
//! Concurrent calls of several processes each get their own slot, in some order.
//!
//! **Ordered** (collective, rank order): one exchange gathers every process's size in etypes
//! (or its error class, so a process whose arguments are wrong does not leave the others
//! waiting: every process then fails with that class); each process's place is the sum of
//! the sizes of the ranks before it; rank 0 moves the shared pointer once by the total and a
//! broadcast gives everyone the base. The accesses are then each process's own (independent)
//! ones. The split forms do the whole ordered access in `_begin` and keep the bytes moved
//! for `_end` (`OpenFile::split`: one split collective per file at a time, `MPI_ERR_IO`
//! otherwise, as ROMIO).
//!
//! **Seek** (collective): every process must give the same offset and whence
//! (`MPI_ERR_NOT_SAME` on every process otherwise); rank 0 sets the pointer and the others
//! wait for it (they learn its outcome), so no process moves the pointer before it is set.
//!
//! **`MPI_MODE_SEQUENTIAL`**: the data calls here are the ones such a file allows; seek and
//! get-position are refused (`MPI_ERR_UNSUPPORTED_OPERATION`), as ROMIO refuses them.

use super::data;
use super::nonblocking::complete_now;
use super::{agree, file_fn, gather, reaching, TAG_FILE};
use crate::abi::*;
use crate::comm::net::{as_bytes_mut, Net};
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::file::shared::{new_token, ordered_place, seek_target};
use crate::file::sys::io_error;
use crate::file::{files, Dir, OpenFile, SplitCollective, SplitProgress};
use crate::p2p::status::StatusOut;
use crate::runtime::thread::Reach;
use crate::runtime::Runtime;
use std::ffi::{c_int, c_void};

/// Marks a word of an exchange as an error class rather than a size or a pointer.
const FAILED: u64 = 1 << 63;

/// Rank 0's part of the open's exchange (`manage`'s): the side file's token it draws and
/// the pointer's first value (for `MPI_MODE_APPEND` the file's size, measured before any
/// process can write to it: the others are waiting in the exchange). Every process then
/// makes its [`SharedPointer`] from rank 0's pair.
pub(super) fn first_pointer(file: &std::fs::File, amode_arg: c_int) -> [u64; 2] {
    let end = if amode_arg & MPI_MODE_APPEND != 0 {
        file.metadata().map_or(0, |m| m.len())
    } else {
        0
    };
    [new_token(), end]
}

/// `MPI_File_set_view`'s step (collective, after the view changed): the shared pointer back
/// to 0. Rank 0 writes it where it is kept; the others wait, so no process moves the pointer
/// before it is reset.
pub(super) fn reset(a: &mut impl Reach, fh: MPI_File) -> MpiResult<()> {
    let comm = files().get(fh)?.comm;
    let root = a.rt(|rt| Ok(rt.comms.get(comm).rank == 0))?;
    let mine = {
        let mut t = files();
        let f = t.get(fh)?;
        f.shared
            .reset(0, root)
            .map_err(|e| pointer_error(f, "resetting", &e))
    };
    agree(a, comm, mine, "resetting the shared file pointer")
}

/// The error of a failed step on the shared pointer's side file.
fn pointer_error(f: &OpenFile, what: &str, e: &std::io::Error) -> MpiError {
    io_error(
        &format!(
            "{what} the shared file pointer of {:?} (in {:?})",
            f.path,
            f.shared.path()
        ),
        e,
    )
}

/// Checks an access of `count` elements of `datatype` through the shared pointer of `f`:
/// its size in etypes of the view (of its data in the file).
fn etypes_of(
    rt: &Runtime,
    f: &OpenFile,
    call: &str,
    dir: Dir,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<u64> {
    let bytes = f
        .check_access(&rt.types, call, dir, count, datatype, true)?
        .file_bytes;
    let etype = f.view.etype_size;
    Ok((bytes / etype) as u64)
}

/// An independent access at the shared pointer, which moves past the data requested.
#[allow(clippy::too_many_arguments)]
fn shared_access(
    rt: &mut Runtime,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
) -> MpiResult<()> {
    StatusOut::new(status)?;
    let at = {
        let mut t = files();
        let f = t.get(fh)?;
        let n = etypes_of(rt, f, call, dir, count, datatype)?;
        f.shared
            .fetch_add(n)
            .map_err(|e| pointer_error(f, "moving", &e))?
    };
    data::shared_access_call(rt, call, dir, fh, at, buf, count, datatype, status)
}

/// The error of a collective step that failed on rank `rank` with `word`'s class: this
/// process's own error if it is that rank.
fn failed_on(rank: usize, word: u64, own: Option<MpiError>, what: &str) -> MpiError {
    own.unwrap_or_else(|| {
        MpiError::new(
            (word & !FAILED) as c_int,
            format!("{what} failed on rank {rank} of the file's communicator"),
        )
    })
}

/// A word of an exchange: `v`, or the error's class marked [`FAILED`].
fn word_of(r: &MpiResult<u64>) -> u64 {
    match r {
        Ok(v) => *v,
        Err(e) => FAILED | e.class as u64,
    }
}

/// An ordered access (collective): every process's data in rank order from the shared
/// pointer, which moves once past all of it. `split`: the name of the end call of a split
/// form (which must not find another split collective begun).
#[allow(clippy::too_many_arguments)]
fn ordered(
    a: &mut impl Reach,
    call: &str,
    dir: Dir,
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    status: *mut MPI_Status,
    split: Option<&'static str>,
) -> MpiResult<()> {
    let comm = files().get(fh)?.comm;
    let (me, mine) = a.rt(|rt| {
        let mine = (|| {
            StatusOut::new(status)?;
            let mut t = files();
            let f = t.get(fh)?;
            if split.is_some() {
                super::collective::not_split(f, call)?;
            }
            etypes_of(rt, f, call, dir, count, datatype)
        })();
        Ok((rt.comms.get(comm).rank, mine))
    })?;
    let sizes = gather(a, comm, word_of(&mine))?;
    if let Some(r) = sizes.iter().position(|&w| w & FAILED != 0) {
        return Err(failed_on(r, sizes[r], mine.err(), call));
    }
    let (before, total) = ordered_place(&sizes, me);
    let moved = if me == 0 {
        files().get(fh).and_then(|f| {
            f.shared
                .fetch_add(total)
                .map_err(|e| pointer_error(f, "moving", &e))
        })
    } else {
        Ok(0)
    };
    let mut base = [word_of(&moved)];
    let net = a.rt(|rt| Ok(Net::local(rt.comms.get(comm))))?;
    net.bcast(a, 0, as_bytes_mut(&mut base), TAG_FILE)?;
    if base[0] & FAILED != 0 {
        return Err(failed_on(0, base[0], moved.err(), call));
    }
    a.rt(|rt| {
        data::shared_access_call(
            rt,
            call,
            dir,
            fh,
            base[0] + before,
            buf,
            count,
            datatype,
            status,
        )
    })
}

/// The begin of a split ordered access: the access, its bytes kept for `end`.
#[allow(clippy::too_many_arguments)]
fn ordered_begin(
    a: &mut impl Reach,
    call: &str,
    end: &'static str,
    dir: Dir,
    fh: MPI_File,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<()> {
    // SAFETY: MPI_Status is a plain C struct of integers; all zeroes is a valid value.
    let mut status: MPI_Status = unsafe { std::mem::zeroed() };
    ordered(
        a,
        call,
        dir,
        fh,
        buf,
        count,
        datatype,
        &mut status,
        Some(end),
    )?;
    let bytes = status.count_lo as u32 as usize
        | ((status.count_hi_and_cancelled as u32 >> 1) as usize) << 32;
    files().get(fh)?.split = Some(SplitCollective {
        end,
        progress: SplitProgress::Done { bytes },
    });
    Ok(())
}

/// Where a seek of the shared pointer leads, on this process: checks, and for `do_it` (rank
/// 0) sets the pointer.
fn seek_here(fh: MPI_File, offset: MPI_Offset, whence: c_int, do_it: bool) -> MpiResult<()> {
    let mut t = files();
    let f = t.get(fh)?;
    no_sequential(f, "MPI_File_seek_shared")?;
    if !matches!(whence, MPI_SEEK_SET | MPI_SEEK_CUR | MPI_SEEK_END) {
        return Err(MpiError::arg(format!(
            "whence is {whence}; it must be MPI_SEEK_SET, MPI_SEEK_CUR or MPI_SEEK_END"
        )));
    }
    if !do_it {
        return Ok(());
    }
    let base = match whence {
        MPI_SEEK_SET => 0,
        MPI_SEEK_CUR => f
            .shared
            .get()
            .map_err(|e| pointer_error(f, "reading", &e))?,
        _ => {
            let size = f
                .file
                .metadata()
                .map_err(|e| io_error(&format!("fstat of {:?}", f.path), &e))?
                .len();
            f.view.data_before(size).div_ceil(f.view.etype_size as u64)
        }
    };
    let to = seek_target(base, offset).ok_or_else(|| {
        MpiError::arg(format!(
            "the seek would move the shared file pointer to {}, before the start of the view",
            base as i128 + offset as i128
        ))
    })?;
    f.shared
        .set(to)
        .map_err(|e| pointer_error(f, "setting", &e))
}

/// `MPI_ERR_UNSUPPORTED_OPERATION` for the pointer's seek and position on a sequential file.
fn no_sequential(f: &OpenFile, call: &str) -> MpiResult<()> {
    if f.amode & MPI_MODE_SEQUENTIAL != 0 {
        return Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{call} cannot be used on a file opened MPI_MODE_SEQUENTIAL (it only reads or writes on from where it is)"),
        ));
    }
    Ok(())
}

file_fn! {
    /// `MPI_File_read_shared`: reads at the shared file pointer, which moves past the data
    /// requested.
    fn MPI_File_read_shared / PMPI_File_read_shared, large MPI_File_read_shared_c / PMPI_File_read_shared_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        shared_access(rt, "MPI_File_read_shared", Dir::Read, fh, buf, count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_write_shared`: writes at the shared file pointer, which moves past the data.
    fn MPI_File_write_shared / PMPI_File_write_shared, large MPI_File_write_shared_c / PMPI_File_write_shared_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) |rt, route| {
        *route = fh;
        shared_access(rt, "MPI_File_write_shared", Dir::Write, fh, buf.cast_mut(), count.into(), datatype, status)
    }
}

file_fn! {
    /// `MPI_File_iread_shared`: `MPI_File_read_shared` as a request, done at the call (see
    /// `api::nonblocking`).
    fn MPI_File_iread_shared / PMPI_File_iread_shared, large MPI_File_iread_shared_c / PMPI_File_iread_shared_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        complete_now(rt, fh, request, |rt, status| {
            shared_access(rt, "MPI_File_iread_shared", Dir::Read, fh, buf, count.into(), datatype, status)
        })
    }
}

file_fn! {
    /// `MPI_File_iwrite_shared`: `MPI_File_write_shared` as a request, done at the call.
    fn MPI_File_iwrite_shared / PMPI_File_iwrite_shared, large MPI_File_iwrite_shared_c / PMPI_File_iwrite_shared_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        complete_now(rt, fh, request, |rt, status| {
            shared_access(rt, "MPI_File_iwrite_shared", Dir::Write, fh, buf.cast_mut(), count.into(), datatype, status)
        })
    }
}

file_fn! {
    /// `MPI_File_read_ordered`: every process reads its part in rank order from the shared
    /// file pointer (collective).
    fn MPI_File_read_ordered / PMPI_File_read_ordered, large MPI_File_read_ordered_c / PMPI_File_read_ordered_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        reaching!(call, |a| ordered(a, "MPI_File_read_ordered", Dir::Read, fh, buf, count.into(), datatype, status, None))
    }
}

file_fn! {
    /// `MPI_File_write_ordered`: every process writes its part in rank order from the shared
    /// file pointer (collective).
    fn MPI_File_write_ordered / PMPI_File_write_ordered, large MPI_File_write_ordered_c / PMPI_File_write_ordered_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        reaching!(call, |a| ordered(a, "MPI_File_write_ordered", Dir::Write, fh, buf.cast_mut(), count.into(), datatype, status, None))
    }
}

file_fn! {
    /// `MPI_File_read_ordered_begin`: begins a split `MPI_File_read_ordered` (the access is
    /// done here; `_end` gives its status).
    fn MPI_File_read_ordered_begin / PMPI_File_read_ordered_begin, large MPI_File_read_ordered_begin_c / PMPI_File_read_ordered_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype) waits |call, route| {
        *route = fh;
        reaching!(call, |a| ordered_begin(a, "MPI_File_read_ordered_begin", "MPI_File_read_ordered_end", Dir::Read, fh, buf, count.into(), datatype))
    }
}

file_fn! {
    /// `MPI_File_read_ordered_end`: ends a split `MPI_File_read_ordered`; its status.
    fn MPI_File_read_ordered_end / PMPI_File_read_ordered_end(fh: MPI_File, buf: *mut c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| super::collective::end(a, "MPI_File_read_ordered_end", fh, status))
    }
}

file_fn! {
    /// `MPI_File_write_ordered_begin`: begins a split `MPI_File_write_ordered` (the access is
    /// done here; `_end` gives its status).
    fn MPI_File_write_ordered_begin / PMPI_File_write_ordered_begin, large MPI_File_write_ordered_begin_c / PMPI_File_write_ordered_begin_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype) waits |call, route| {
        *route = fh;
        reaching!(call, |a| ordered_begin(a, "MPI_File_write_ordered_begin", "MPI_File_write_ordered_end", Dir::Write, fh, buf.cast_mut(), count.into(), datatype))
    }
}

file_fn! {
    /// `MPI_File_write_ordered_end`: ends a split `MPI_File_write_ordered`; its status.
    fn MPI_File_write_ordered_end / PMPI_File_write_ordered_end(fh: MPI_File, buf: *const c_void, status: *mut MPI_Status) waits |call, route| {
        *route = fh;
        let _ = buf;
        reaching!(call, |a| super::collective::end(a, "MPI_File_write_ordered_end", fh, status))
    }
}

file_fn! {
    /// `MPI_File_seek_shared`: moves the shared file pointer (collective; the same offset and
    /// whence on every process), in etypes: `MPI_SEEK_SET`, `MPI_SEEK_CUR`, `MPI_SEEK_END`
    /// (from the view's end of the file's data).
    fn MPI_File_seek_shared / PMPI_File_seek_shared(fh: MPI_File, offset: MPI_Offset, whence: c_int) waits |call, route| {
        *route = fh;
        reaching!(call, |a| seek_shared(a, fh, offset, whence))
    }
}

/// `MPI_File_seek_shared`'s collective work.
fn seek_shared(
    a: &mut impl Reach,
    fh: MPI_File,
    offset: MPI_Offset,
    whence: c_int,
) -> MpiResult<()> {
    let comm = files().get(fh)?.comm;
    let offsets = gather(a, comm, offset as u64)?;
    let whences = gather(a, comm, whence as u32 as u64)?;
    if offsets.iter().any(|&o| o != offsets[0]) || whences.iter().any(|&w| w != whences[0]) {
        return Err(MpiError::new(
            MPI_ERR_NOT_SAME,
            "the processes gave MPI_File_seek_shared different offsets or whences",
        ));
    }
    let root = a.rt(|rt| Ok(rt.comms.get(comm).rank == 0))?;
    let mine = seek_here(fh, offset, whence, root);
    agree(a, comm, mine, "MPI_File_seek_shared")
}

file_fn! {
    /// `MPI_File_get_position_shared`: the shared file pointer, in etypes of the view.
    fn MPI_File_get_position_shared / PMPI_File_get_position_shared(fh: MPI_File, offset: *mut MPI_Offset) |_rt, route| {
        *route = fh;
        let out = Out::new(offset, "offset")?;
        let mut t = files();
        let f = t.get(fh)?;
        no_sequential(f, "MPI_File_get_position_shared")?;
        let at = f.shared.get().map_err(|e| pointer_error(f, "reading", &e))?;
        out.set(at as MPI_Offset);
        Ok(())
    }
}
