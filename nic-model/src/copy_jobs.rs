//! Copies run outside the caller's lock: the bulk of a long message moved by the thread that
//! asked for it while other threads use the library.
//!
//! ```text
//!   a look of a waiting thread (the library's lock held, Deferring::on)
//!     └─ read_region (one host, a long read) ── no copy now: a CopyJob, QUEUED,
//!          │                                      kept in this thread's list and in the read
//!          └─ Transfer::Pending                   in flight (the NIC's pending table)
//!   end of the look: claim_mine() ── each job QUEUED ─▶ RUNNING (still under the lock)
//!   lock let go:      Claimed::run() ── process_vm_readv/writev ─▶ DONE or FAILED (release)
//!   lock taken again: the next look polls the transfer ── DONE seen (acquire) ─▶ the read ends
//!                     as one the kernel copied inline would (FIN, the receive completes)
//! ```
//!
//! The multithreaded MPI library holds one process-wide lock while a call uses its state, and
//! a blocking call lets it go between two looks. Without this module the copy of a long
//! message's data (a rendezvous read of megabytes, the exporter's half of a split copy) runs
//! inside a look, so every other thread of the process waits for it. A look run with
//! [`Deferring::on`] instead leaves each long copy as a [`CopyJob`]: the source and the
//! destination as raw addresses and a length, which the thread runs after the look with the
//! lock let go, then marks done; the read that owns it ends on a later poll, under the lock.
//!
//! **Why it is sound.** A job owns no reference into the library's state: only addresses
//! whose validity does not depend on the state's lock. The destination of a read is the
//! receive's buffer, which the ADI hands to the channel until the read's end is reported
//! (`Channel::pull`'s contract), and the read cannot end before the job is `DONE` (the poll
//! that ends it sees the job's state first); the source lies in the exporting process, which
//! keeps the region exported until the importer's FIN, sent only once the read has ended (the
//! kernel checks the range anyway and fails instead of touching anything else). An
//! exporter's assist job writes the importer's buffer, which stays valid until the importer
//! sees the handshake `DONE`, which the job stores only after its write. A job runs exactly
//! once: whoever runs it first moves it `QUEUED -> RUNNING` with a compare-exchange. The
//! thread that made it claims it before it lets the lock go; a poll under the lock by a thread
//! that does not defer (an `MPI_Test` loop, a subsystem's wait, the progress thread) runs a
//! job still `QUEUED` inline, so that a job its maker never ran (a look that panicked) is not
//! lost. The outcome is published with a release store and read with an acquire load, which
//! orders the copied bytes before the completion of the request that owns them.
//!
//! Below `MPI_THREAD_MULTIPLE` nothing defers (the flag is off): the copies run inline, as
//! before, for the cost of one thread-local read per long read.

use std::cell::{Cell, RefCell};
use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;

/// Reads shorter than this are copied inline even while deferring: below it the extra trip
/// through the lock costs about what the copy does.
pub const DEFER_MIN: usize = 32 * 1024;

const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;
const FAILED: u8 = 3;

/// What a job copies.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Copy {
    /// `len` bytes at `remote` in process `pid` into `local` (`process_vm_readv`).
    Read {
        pid: libc::pid_t,
        remote: usize,
        local: *mut u8,
        len: usize,
    },
    /// `len` bytes at `local` into `remote` in process `pid` (`process_vm_writev`), an
    /// exporter's part of a split copy; `handshake` (the region descriptor's, in the fabric)
    /// gets `done` or `refused` afterwards.
    Write {
        pid: libc::pid_t,
        remote: usize,
        local: *const u8,
        len: usize,
        handshake: *const AtomicU32,
        done: u32,
        refused: u32,
    },
}

/// One copy to run outside the lock (see the module doc).
#[derive(Debug)]
pub struct CopyJob {
    what: Copy,
    state: AtomicU8,
    /// The OS error of a failed copy (`-1`: the kernel moved nothing).
    errno: AtomicI32,
}

// SAFETY: a job's pointers are plain addresses that its runner passes to the kernel (the
// destination is valid for writing until the job is done, by the contract of whoever made
// it), and its state is atomic; exactly one thread runs it (the QUEUED -> RUNNING exchange).
unsafe impl Send for CopyJob {}
// SAFETY: as above: every shared access goes through the atomics.
unsafe impl Sync for CopyJob {}

/// Where a job stands, for the one who polls it.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Not run yet, or running.
    Waiting,
    Done,
    Failed(io::Error),
}

impl CopyJob {
    /// A job for `what`, queued on this thread's list to be claimed after the look.
    ///
    /// # Safety
    /// The memory `what` names must stay valid for the copy until the job is done (its
    /// destination not otherwise accessed meanwhile).
    pub(crate) unsafe fn queue(what: Copy) -> Arc<CopyJob> {
        let job = Arc::new(CopyJob {
            what,
            state: AtomicU8::new(QUEUED),
            errno: AtomicI32::new(0),
        });
        MINE.with(|m| m.borrow_mut().push(job.clone()));
        job
    }

    /// The job's outcome so far; a job still queued is run now, inline, unless this thread is
    /// in a deferring look (its maker is then about to claim it).
    pub(crate) fn poll(&self) -> Outcome {
        if self.state.load(Ordering::Relaxed) == QUEUED && !deferring() {
            self.run_if_queued();
        }
        match self.state.load(Ordering::Acquire) {
            DONE => Outcome::Done,
            FAILED => Outcome::Failed(match self.errno.load(Ordering::Relaxed) {
                -1 => io::Error::new(io::ErrorKind::UnexpectedEof, "the kernel moved nothing"),
                e => io::Error::from_raw_os_error(e),
            }),
            _ => Outcome::Waiting,
        }
    }

    /// Whether the job is over (its outcome published).
    pub(crate) fn finished(&self) -> bool {
        self.state.load(Ordering::Acquire) >= DONE
    }

    /// The job's OS error, once it has failed.
    pub(crate) fn errno(&self) -> Option<i32> {
        (self.state.load(Ordering::Acquire) == FAILED).then(|| self.errno.load(Ordering::Relaxed))
    }

    /// Runs the job if nobody has: exactly once, whoever calls.
    pub(crate) fn run_if_queued(&self) {
        if self
            .state
            .compare_exchange(QUEUED, RUNNING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            self.run_claimed();
        }
    }

    /// Copies, then publishes the outcome. The caller moved the job to RUNNING.
    fn run_claimed(&self) {
        let result = match self.what {
            Copy::Read {
                pid,
                remote,
                local,
                len,
            } => {
                // SAFETY: `local` is valid for `len` bytes of writing, and nothing else
                // touches it, until this job is done (`queue`'s contract).
                let dst = unsafe { std::slice::from_raw_parts_mut(local, len) };
                crate::dma::read_from(pid, remote, dst)
            }
            Copy::Write {
                pid,
                remote,
                local,
                len,
                ..
            } => {
                // SAFETY: `local` is valid for `len` bytes of reading until the job is done
                // (`queue`'s contract: the exporter's region lives until the importer's FIN).
                let src = unsafe { std::slice::from_raw_parts(local, len) };
                crate::dma::write_to(pid, remote, src)
            }
        };
        let ok = result.is_ok();
        if let Err(e) = result {
            self.errno
                .store(e.raw_os_error().unwrap_or(-1), Ordering::Relaxed);
        }
        self.state
            .store(if ok { DONE } else { FAILED }, Ordering::Release);
        if let Copy::Write {
            handshake,
            done,
            refused,
            ..
        } = self.what
        {
            // SAFETY: the handshake is a descriptor of the fabric, mapped for as long as the
            // NIC that made the job lives, which is past every MPI call (finalize comes last).
            let h = unsafe { &*handshake };
            h.store(if ok { done } else { refused }, Ordering::Release);
        }
    }
}

thread_local! {
    /// Whether this thread's current look leaves long copies as jobs.
    static DEFER: Cell<bool> = const { Cell::new(false) };
    /// The jobs this thread made and has not claimed yet.
    static MINE: RefCell<Vec<Arc<CopyJob>>> = const { RefCell::new(Vec::new()) };
}

/// Whether this thread is in a deferring look.
#[inline]
pub(crate) fn deferring() -> bool {
    DEFER.with(Cell::get)
}

/// This thread's deferring mode for a while; the previous one comes back when dropped.
#[must_use]
pub struct Deferring(bool);

impl Deferring {
    /// Long copies made on this thread become jobs until the guard is dropped: for a look
    /// whose thread holds the lock itself and will claim and run them with it let go.
    pub fn on() -> Deferring {
        Deferring(DEFER.with(|d| d.replace(true)))
    }

    /// Copies run inline until the guard is dropped: for a wait that keeps the lock (a
    /// subsystem's `block_on`, a call nested in a look), which would otherwise wait for a
    /// job that only runs after it.
    pub fn off() -> Deferring {
        Deferring(DEFER.with(|d| d.replace(false)))
    }
}

impl Drop for Deferring {
    fn drop(&mut self) {
        DEFER.with(|d| d.set(self.0));
    }
}

/// The jobs this thread claimed, to run with the lock let go.
#[must_use]
#[derive(Default)]
pub struct Claimed(Vec<Arc<CopyJob>>);

/// Claims the jobs this thread made (under the lock, before letting it go): each one still
/// queued is this thread's to run.
pub fn claim_mine() -> Claimed {
    MINE.with(|m| {
        let mut m = m.borrow_mut();
        if m.is_empty() {
            return Claimed::default();
        }
        let mut jobs = std::mem::take(&mut *m);
        jobs.retain(|j| {
            j.state
                .compare_exchange(QUEUED, RUNNING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        Claimed(jobs)
    })
}

impl Claimed {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes the jobs copy.
    pub fn bytes(&self) -> usize {
        self.0
            .iter()
            .map(|j| match j.what {
                Copy::Read { len, .. } | Copy::Write { len, .. } => len,
            })
            .sum()
    }

    /// Runs the jobs (the lock let go: they touch nothing of the library's state).
    pub fn run(mut self) {
        for job in self.0.drain(..) {
            job.run_claimed();
        }
    }
}

impl Drop for Claimed {
    fn drop(&mut self) {
        // Claimed jobs must run: their reads wait for them. Dropped unrun (a caller that
        // unwinds), they run here.
        for job in self.0.drain(..) {
            job.run_claimed();
        }
    }
}
