//! Nonblocking independent data access: `MPI_File_iread`, `MPI_File_iwrite`,
//! `MPI_File_iread_at`, `MPI_File_iwrite_at` (and, for `api::shared`, the request of
//! `MPI_File_iread_shared` / `MPI_File_iwrite_shared`).
//!
//! **The access is done at the call.** Each call does its access exactly as the blocking call
//! does (`data::access_call`: the same checks, data sieving, locks) and returns a request born
//! complete (`Adi::completed`) whose status carries the bytes moved, so `MPI_Wait`, `MPI_Test`,
//! `MPI_Waitall`, `MPI_Testany`, `MPI_Request_get_status` and `MPI_Get_count` /
//! `MPI_Get_elements` on its status work as on any request. The individual file pointer moves
//! at the call, past the data, as the standard asks ("the file pointer is updated when the
//! operation is started"). An error of the access is returned by the call itself, not by the
//! completion: the request is made only once the data has moved.
//!
//! This is what ROMIO does on a file system without asynchronous I/O: its `ADIO_IreadContig` /
//! `ADIO_IwriteContig` fall back to the blocking access (`ADIOI_FAKE_IreadContig`) and hand
//! back a completed request, and its errors come back from the call that started it. The
//! standard allows it: a nonblocking call may complete the operation before it returns, and
//! nothing may be assumed about the buffer or the file between start and completion. The
//! gain of a real background access (overlap with computation) is left for later: the
//! progress engine would have to run the system calls in steps, or a helper thread would, and
//! the buffer would have to stay untouched until the wait, which programs already guarantee.

use super::data;
use super::file_fn;
use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::file::{files, Dir};
use crate::runtime::Runtime;
use std::ffi::{c_int, c_void};

/// The bytes a status written by a file access says were moved.
fn moved_bytes(s: &MPI_Status) -> usize {
    let lo = s.count_lo as u32 as u64;
    let hi = (s.count_hi_and_cancelled as u32 >> 1) as u64;
    (lo | hi << 32) as usize
}

/// Runs `access` (an access of file `fh` that fills the status it is given) now, and stores
/// in `*request` a request born complete with the status it produced.
pub(super) fn complete_now(
    rt: &mut Runtime,
    fh: MPI_File,
    request: *mut MPI_Request,
    access: impl FnOnce(&mut Runtime, *mut MPI_Status) -> MpiResult<()>,
) -> MpiResult<()> {
    let out = Out::new(request, "request")?;
    // SAFETY: MPI_Status is a plain C struct of integers; all zeroes is a valid value.
    let mut status: MPI_Status = unsafe { std::mem::zeroed() };
    access(rt, &mut status)?;
    let owner = files().get(fh)?.comm;
    let done = mpich_channel::Status {
        source: MPI_ANY_SOURCE,
        tag: MPI_ANY_TAG,
        len: moved_bytes(&status),
        ..Default::default()
    };
    let id = rt
        .engine
        .p2p()
        .completed(done, owner)
        .map_err(MpiError::from)?;
    out.set(crate::p2p::request::handle(&rt.engine, id));
    Ok(())
}

/// A nonblocking independent access: `access_call`'s arguments, a request instead of a
/// status.
#[allow(clippy::too_many_arguments)]
fn start(
    rt: &mut Runtime,
    call: &'static str,
    dir: Dir,
    fh: MPI_File,
    offset: Option<MPI_Offset>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    request: *mut MPI_Request,
) -> MpiResult<()> {
    complete_now(rt, fh, request, |rt, status| {
        data::access_call(rt, call, dir, fh, offset, buf, count, datatype, status)
    })
}

file_fn! {
    /// `MPI_File_iread`: `MPI_File_read` as a request (done at the call: see the module
    /// documentation).
    fn MPI_File_iread / PMPI_File_iread, large MPI_File_iread_c / PMPI_File_iread_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        start(rt, "MPI_File_iread", Dir::Read, fh, None, buf, count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iwrite`: `MPI_File_write` as a request (done at the call).
    fn MPI_File_iwrite / PMPI_File_iwrite, large MPI_File_iwrite_c / PMPI_File_iwrite_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        start(rt, "MPI_File_iwrite", Dir::Write, fh, None, buf.cast_mut(), count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iread_at`: `MPI_File_read_at` as a request (done at the call).
    fn MPI_File_iread_at / PMPI_File_iread_at, large MPI_File_iread_at_c / PMPI_File_iread_at_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *mut c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        start(rt, "MPI_File_iread_at", Dir::Read, fh, Some(offset), buf, count.into(), datatype, request)
    }
}

file_fn! {
    /// `MPI_File_iwrite_at`: `MPI_File_write_at` as a request (done at the call).
    fn MPI_File_iwrite_at / PMPI_File_iwrite_at, large MPI_File_iwrite_at_c / PMPI_File_iwrite_at_c
    where [Count = c_int | MPI_Count] (fh: MPI_File, offset: MPI_Offset, buf: *const c_void, count: Count, datatype: MPI_Datatype, request: *mut MPI_Request) |rt, route| {
        *route = fh;
        start(rt, "MPI_File_iwrite_at", Dir::Write, fh, Some(offset), buf.cast_mut(), count.into(), datatype, request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_byte_count_comes_back_from_the_status() {
        for bytes in [0usize, 1, 4096, (1 << 33) + 5] {
            let s = crate::p2p::status::Completion {
                bytes,
                ..crate::p2p::status::Completion::EMPTY
            }
            .to_status();
            assert_eq!(moved_bytes(&s), bytes);
        }
    }
}
