//! Statuses: what a completed operation reports, its encoding in MPICH's `MPI_Status`, and
//! `MPI_Get_count`, `MPI_Get_elements(_x)`, `MPI_Test_cancelled`.
//!
//! The byte count lives in two ints as MPICH lays it out: `count_lo` holds the low 32 bits,
//! `count_hi_and_cancelled` the bits above, shifted left by one, with the cancelled flag in its
//! bit 0. Keeping MPICH's exact encoding means a status filled here reads the same to code
//! compiled against MPICH's header.

use crate::abi::*;
use crate::comm::Comm;
use crate::cptr::{read, Array};
use crate::error::{MpiError, MpiResult};
use mpich_channel::Status;
use std::ffi::c_int;
use std::ptr::NonNull;

/// A completed operation, as the library keeps it until it is written into an `MPI_Status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completion {
    /// Sender's rank in the communicator (receives).
    pub source: c_int,
    pub tag: c_int,
    /// Bytes received.
    pub bytes: usize,
    pub cancelled: bool,
    /// `MPI_SUCCESS`, or `MPI_ERR_TRUNCATE` for a receive whose message did not fit.
    pub error: c_int,
}

impl Completion {
    /// The "empty" status of MPI_REQUEST_NULL and inactive persistent requests.
    pub const EMPTY: Completion = Completion {
        source: MPI_ANY_SOURCE,
        tag: MPI_ANY_TAG,
        bytes: 0,
        cancelled: false,
        error: MPI_SUCCESS,
    };

    /// A send to or receive from `MPI_PROC_NULL`: complete at once, nothing moved.
    pub const PROC_NULL: Completion = Completion {
        source: MPI_PROC_NULL,
        tag: MPI_ANY_TAG,
        bytes: 0,
        cancelled: false,
        error: MPI_SUCCESS,
    };

    /// An engine status, with the source translated to a rank of `comm`.
    #[inline(always)]
    pub fn from_engine(s: &Status, comm: &Comm) -> Completion {
        Completion {
            source: comm.to_local(s.source),
            tag: s.tag,
            bytes: s.len,
            cancelled: s.cancelled,
            error: if s.error > 0 {
                s.error
            } else if s.error == mpich_channel::ERR_REFUSED {
                MPI_ERR_OTHER
            } else if s.truncated {
                MPI_ERR_TRUNCATE
            } else {
                MPI_SUCCESS
            },
        }
    }

    /// MPICH's `MPI_Status` for this completion.
    #[inline(always)]
    pub fn to_status(self) -> MPI_Status {
        let bytes = self.bytes as u64;
        MPI_Status {
            count_lo: bytes as u32 as c_int,
            count_hi_and_cancelled: (((bytes >> 32) << 1) as u32 | self.cancelled as u32) as c_int,
            MPI_SOURCE: self.source,
            MPI_TAG: self.tag,
            MPI_ERROR: self.error,
        }
    }

    /// The error the call that completed this operation must raise, if any.
    pub fn check(&self) -> MpiResult<()> {
        if self.error == MPI_SUCCESS {
            Ok(())
        } else {
            Err(self.failure())
        }
    }

    #[cold]
    pub fn failure(&self) -> MpiError {
        if self.error == MPI_ERR_TRUNCATE {
            MpiError::new(
                MPI_ERR_TRUNCATE,
                format!(
                    "a message from rank {} with tag {} was longer than the receive buffer ({} bytes); the buffer holds its first {} bytes",
                    self.source, self.tag, self.bytes, self.bytes
                ),
            )
        } else if self.error == MPI_ERR_OTHER {
            MpiError::new(
                MPI_ERR_OTHER,
                format!("rank {} announced a long message in a memory region it does not export (or not for that many bytes); nothing was received", self.source),
            )
        } else {
            MpiError::new(self.error, "the operation failed")
        }
    }
}

/// A status output argument: `MPI_STATUS_IGNORE` (nothing is written) or a status to fill.
pub(crate) struct StatusOut(Option<NonNull<MPI_Status>>);

impl StatusOut {
    #[inline(always)]
    pub fn new(p: *mut MPI_Status) -> MpiResult<StatusOut> {
        if p == MPI_STATUS_IGNORE {
            return Ok(StatusOut(None));
        }
        match NonNull::new(p) {
            Some(p) => Ok(StatusOut(Some(p))),
            None => Err(MpiError::arg(
                "the status argument is NULL; pass MPI_STATUS_IGNORE if you do not want the status",
            )),
        }
    }

    /// Fills the status, all but its `MPI_ERROR`: a call that completes one operation
    /// returns its error itself and leaves that field as the program set it (MPI 3.1 §3.2.5;
    /// only the calls that complete several set it, with `MPI_ERR_IN_STATUS`).
    #[inline(always)]
    pub fn set(&self, c: &Completion) {
        if let Some(p) = self.0 {
            let s = c.to_status();
            // SAFETY: a status argument other than MPI_STATUS_IGNORE points to a writable
            // MPI_Status (the caller's contract); its fields are written one by one.
            unsafe {
                let p = p.as_ptr();
                (*p).count_lo = s.count_lo;
                (*p).count_hi_and_cancelled = s.count_hi_and_cancelled;
                (*p).MPI_SOURCE = s.MPI_SOURCE;
                (*p).MPI_TAG = s.MPI_TAG;
            }
        }
    }
}

/// The statuses of a multiple-completion call, or `MPI_STATUSES_IGNORE`.
pub(crate) struct Statuses<'a>(Option<Array<'a, MPI_Status>>);

impl<'a> Statuses<'a> {
    pub fn new(p: *mut MPI_Status, len: usize) -> MpiResult<Statuses<'a>> {
        if p == MPI_STATUSES_IGNORE {
            return Ok(Statuses(None));
        }
        Ok(Statuses(Some(Array::new(p, len, "array_of_statuses")?)))
    }

    #[inline(always)]
    pub fn set(&self, i: usize, c: &Completion) {
        if let Some(a) = &self.0 {
            a.set(i, c.to_status());
        }
    }

    /// Whether the caller wants statuses (not `MPI_STATUSES_IGNORE`).
    #[inline(always)]
    pub fn wanted(&self) -> bool {
        self.0.is_some()
    }
}

/// The byte count and cancelled flag stored in a status.
pub(crate) fn decode(s: &MPI_Status) -> (u64, bool) {
    let hi = (s.count_hi_and_cancelled as u32 >> 1) as u64;
    (
        (hi << 32) | s.count_lo as u32 as u64,
        s.count_hi_and_cancelled & 1 == 1,
    )
}

/// Writes byte count `bytes` into a status, keeping its cancelled flag.
pub(crate) fn set_byte_count(s: &mut MPI_Status, bytes: u64) {
    s.count_lo = bytes as u32 as c_int;
    s.count_hi_and_cancelled =
        (((bytes >> 32) << 1) as u32 | (s.count_hi_and_cancelled as u32 & 1)) as c_int;
}

/// Sets or clears a status's cancelled flag, keeping its byte count.
pub(crate) fn set_cancelled(s: &mut MPI_Status, cancelled: bool) {
    s.count_hi_and_cancelled = (s.count_hi_and_cancelled & !1) | cancelled as c_int;
}

pub(crate) fn status_in(status: *const MPI_Status) -> MpiResult<MPI_Status> {
    if std::ptr::eq(status, MPI_STATUS_IGNORE) {
        return Err(MpiError::arg(
            "the status is MPI_STATUS_IGNORE, which holds nothing to read",
        ));
    }
    read(status, "status")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_round_trip_through_mpich_layout() {
        for bytes in [0usize, 1, 4096, (1 << 31) + 5, (1 << 32) + 7, (1 << 40) + 3] {
            for cancelled in [false, true] {
                let c = Completion {
                    bytes,
                    cancelled,
                    ..Completion::EMPTY
                };
                let s = c.to_status();
                assert_eq!(decode(&s), (bytes as u64, cancelled));
            }
        }
        let s = Completion {
            bytes: 12,
            cancelled: true,
            source: 3,
            tag: 7,
            error: 0,
        }
        .to_status();
        assert_eq!(
            (
                s.count_lo,
                s.count_hi_and_cancelled,
                s.MPI_SOURCE,
                s.MPI_TAG
            ),
            (12, 1, 3, 7)
        );
        let s = Completion {
            bytes: 1 << 32,
            ..Completion::EMPTY
        }
        .to_status();
        assert_eq!((s.count_lo, s.count_hi_and_cancelled), (0, 2));
    }

    #[test]
    fn special_statuses() {
        let e = Completion::EMPTY.to_status();
        assert_eq!(
            (e.MPI_SOURCE, e.MPI_TAG, e.MPI_ERROR, e.count_lo),
            (MPI_ANY_SOURCE, MPI_ANY_TAG, 0, 0)
        );
        let p = Completion::PROC_NULL.to_status();
        assert_eq!((p.MPI_SOURCE, p.MPI_TAG), (MPI_PROC_NULL, MPI_ANY_TAG));
    }
}
