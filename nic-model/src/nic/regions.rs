//! The NIC's regions on one host: its own exports, published as descriptors in the fabric, and
//! the single-copy engine that reads and writes peers' regions after checking theirs.
//!
//! The protocol (see [`crate::region`] for the why):
//!
//! * **Export.** The region is recorded in the [`RegionTable`]; if its id is below
//!   `REGION_SLOTS`, its descriptor in the fabric gets address, length and access, then its key
//!   (release). Withdrawing clears the key first.
//! * **Read.** The importer loads the descriptor's key (acquire), compares it with the key it
//!   was given, reads the bounds, loads the key again (so that it saw one region, not a slot
//!   being reused), checks bounds and access, and only then copies (`process_vm_readv`). After
//!   the copy it checks the key once more: a region withdrawn meanwhile makes the read fail
//!   rather than hand back bytes of whatever replaced it.
//! * **Split.** For a long read the importer first takes the descriptor's handshake
//!   (`IDLE -> PREPARING`), writes where the second part goes, sets `ASKED` and rings the
//!   exporter's doorbell; then copies the first part. The exporter, on its next device poll,
//!   sees the doorbell moved, finds the `ASKED` descriptor, takes it (`ASKED -> TAKEN`),
//!   writes the part (`process_vm_writev`) and sets `DONE` (or `REFUSED` if it may not write).
//!   The importer, done with its part, tries `ASKED -> WITHDRAWN`: if that succeeds the
//!   exporter never started and the importer copies the second part too; if the exporter has
//!   it, the read is pending until `DONE`.
//!
//! All of it is plain loads and stores on the fabric's cache lines, besides the copies.

use crate::copy_jobs::{self, CopyJob, Outcome};
use crate::counters::Counters;
use crate::dma;
use crate::error::{NicError, Rank, Result};
use crate::fabric::layout::{RegionDesc, REGION_SLOTS};
use crate::fabric::Fabric;
use crate::region::{assist, Access, RegionInfo, RegionKey, RegionTable, Transfer, TransferId};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;

/// What the single-copy engine may do.
#[derive(Clone, Copy, Debug)]
pub(super) struct Engine {
    /// Read peers' memory (`process_vm_readv`); turned off when the kernel refuses.
    pub read: bool,
    /// Write into peers' memory (`process_vm_writev`); turned off when the kernel refuses.
    pub write: bool,
    /// Reads from this size up are split with the exporter (0: never).
    pub split_min: usize,
}

/// A read to copy: `len` bytes from byte `offset` of `peer`'s region `key` into `local`.
pub(super) struct Read {
    pub peer: Rank,
    pub key: RegionKey,
    pub offset: usize,
    pub local: *mut u8,
    pub len: usize,
}

/// A split read whose second part the exporter is copying.
#[derive(Clone, Copy)]
struct Pending {
    peer: Rank,
    key: RegionKey,
    /// The second part, should the exporter refuse it: where it goes, and where it comes from
    /// in the exporter's memory.
    dst: *mut u8,
    remote: usize,
    len: usize,
}

/// A read in flight.
enum InFlight {
    /// The exporter is copying the second part of a split read.
    Assisted(Pending),
    /// This process's part is a job run outside the library's lock ([`copy_jobs`]); `rest`,
    /// the part the exporter was asked for, if the read is split.
    Outside {
        job: Arc<CopyJob>,
        peer: Rank,
        key: RegionKey,
        len: usize,
        rest: Option<Pending>,
    },
}

/// This NIC's exports and its reads in flight.
pub(super) struct Regions {
    table: RegionTable,
    engine: Engine,
    /// A single-copy read has succeeded: the kernel lets this process read its peers, so a
    /// read may be left as a job whose failure would come too late to fall back on packets.
    read_proven: bool,
    /// Parts of split copies this exporter writes outside the lock, until they are over.
    assisting: Vec<Arc<CopyJob>>,
    /// The doorbell count when this NIC last looked for split-copy requests.
    seen_doorbell: u64,
    /// This NIC's doorbell in its rank block, found once at attach time since every
    /// `progress` call reads it. Points into the fabric, which the NIC drops after this.
    doorbell: *const AtomicU64,
    pending: Vec<Option<InFlight>>,
    nranks: usize,
}

impl Regions {
    /// # Safety
    /// `fabric` outlives the result (its doorbell pointer), and this process is `rank`.
    pub unsafe fn new(seed: u64, engine: Engine, fabric: &Fabric, rank: Rank) -> Regions {
        Regions {
            table: RegionTable::new(seed),
            engine,
            read_proven: false,
            assisting: Vec::new(),
            seen_doorbell: 0,
            doorbell: &fabric.rank_block(rank).doorbell,
            pending: Vec::new(),
            nranks: fabric.geometry().nranks,
        }
    }

    /// Exports a region; publishes it in the fabric if its id has a descriptor.
    pub fn register(&mut self, fabric: &Fabric, me: Rank, info: RegionInfo) -> RegionKey {
        let key = self.table.insert(info);
        if (key.id as usize) < REGION_SLOTS {
            let d = fabric.region_desc(me, key.id as usize);
            d.addr.store(info.addr as u64, Relaxed);
            d.len.store(info.len as u64, Relaxed);
            d.access.store(info.access.bits(), Relaxed);
            d.assist.store(assist::IDLE, Relaxed);
            d.key.store(key.key, Release);
        }
        key
    }

    /// Withdraws a region: from now on its key is refused.
    pub fn deregister(&mut self, fabric: &Fabric, me: Rank, key: RegionKey) -> Result<()> {
        if !self.table.remove(key) {
            return Err(NicError::RegionRefused {
                rank: me,
                why: format!("{key} is not exported here (never, or withdrawn already)"),
            });
        }
        if (key.id as usize) < REGION_SLOTS {
            fabric
                .region_desc(me, key.id as usize)
                .key
                .store(0, Release);
        }
        Ok(())
    }

    /// Withdraws every published region (the NIC is going away).
    pub fn withdraw_all(&mut self, fabric: &Fabric, me: Rank) {
        for (key, _) in self.table.live_below(REGION_SLOTS) {
            fabric
                .region_desc(me, key.id as usize)
                .key
                .store(0, Release);
        }
    }

    /// One of this NIC's own regions.
    pub fn local(&self, me: Rank, key: RegionKey) -> Result<RegionInfo> {
        self.table.get(key).ok_or_else(|| NicError::RegionRefused {
            rank: me,
            why: format!("{key} is not exported (never, or withdrawn)"),
        })
    }

    /// Whether an importer rang this NIC's doorbell since it last looked.
    #[inline]
    pub fn doorbell_rang(&mut self) -> bool {
        // SAFETY: the fabric outlives `self` (constructor contract).
        let now = unsafe { (*self.doorbell).load(Acquire) };
        if now == self.seen_doorbell {
            return false;
        }
        self.seen_doorbell = now;
        true
    }

    /// Copies the parts of this NIC's regions that importers asked it to write.
    #[cold]
    pub fn serve_assists(&mut self, fabric: &Fabric, me: Rank, counters: &mut Counters) -> bool {
        let mut any = false;
        for (key, info) in self.table.live_below(REGION_SLOTS) {
            let d = fabric.region_desc(me, key.id as usize);
            if d.assist.load(Relaxed) != assist::ASKED
                || d.assist
                    .compare_exchange(assist::ASKED, assist::TAKEN, Acquire, Relaxed)
                    .is_err()
            {
                continue;
            }
            any = true;
            let (dst, from, len) = (
                d.assist_dst.load(Relaxed) as usize,
                d.assist_from.load(Relaxed) as usize,
                d.assist_len.load(Relaxed) as usize,
            );
            let peer = d.assist_peer.load(Relaxed) as usize;
            let fits =
                from.checked_add(len).is_some_and(|end| end <= info.len) && peer < self.nranks;
            if self.engine.write && fits && len >= copy_jobs::DEFER_MIN && copy_jobs::deferring() {
                let pid = fabric.rank_block(peer).pid.load(Acquire);
                // SAFETY: bytes `from..from + len` lie inside the region (checked above), which
                // stays exported until the importer's FIN, which it sends only after it has
                // seen the handshake DONE or REFUSED, stored by the job after its write; the
                // handshake lives in the fabric, mapped as long as this NIC.
                let job = unsafe {
                    CopyJob::queue(copy_jobs::Copy::Write {
                        pid,
                        remote: dst,
                        local: (info.addr + from) as *const u8,
                        len,
                        handshake: &d.assist,
                        done: assist::DONE,
                        refused: assist::REFUSED,
                    })
                };
                counters.assists += 1;
                counters.copies_outside += 1;
                counters.dma_bytes += len as u64;
                self.assisting.push(job);
                continue;
            }
            let mut wrote = false;
            if self.engine.write && fits {
                // SAFETY: bytes `from..from + len` lie inside the region (checked above), which
                // the exporter keeps valid until it withdraws it (`Device::register`'s contract).
                let part =
                    unsafe { std::slice::from_raw_parts((info.addr + from) as *const u8, len) };
                let pid = fabric.rank_block(peer).pid.load(Acquire);
                match dma::write_to(pid, dst, part) {
                    Ok(()) => wrote = true,
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                        tracing::debug!(target: "nic", peer, "writing into peers refused by the kernel; importers copy alone");
                        self.engine.write = false;
                    }
                    Err(e) => {
                        tracing::debug!(target: "nic", peer, error = %e, "split copy failed; the importer copies the part")
                    }
                }
            }
            if wrote {
                counters.assists += 1;
                counters.dma_bytes += len as u64;
            }
            d.assist
                .store(if wrote { assist::DONE } else { assist::REFUSED }, Release);
        }
        any
    }

    /// Whether parts of split copies are being written outside the lock.
    #[inline]
    pub fn assisting(&self) -> bool {
        !self.assisting.is_empty()
    }

    /// Forgets the assist jobs that are over (one still queued whose maker never ran it runs
    /// now, unless this thread defers); true if one ended.
    #[cold]
    pub fn tend_assists(&mut self) -> bool {
        let before = self.assisting.len();
        let mut write_refused = false;
        self.assisting.retain(|job| {
            let _ = job.poll();
            if job.errno() == Some(libc::EPERM) {
                write_refused = true;
            }
            !job.finished()
        });
        if write_refused {
            tracing::debug!(target: "nic", "writing into peers refused by the kernel; importers copy alone");
            self.engine.write = false;
        }
        self.assisting.len() != before
    }

    fn keep_in_flight(&mut self, f: InFlight) -> TransferId {
        let slot = self
            .pending
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.pending.push(None);
                self.pending.len() - 1
            });
        self.pending[slot] = Some(f);
        TransferId(slot as u32)
    }

    /// Starts a read of a peer's region (see the module doc). In a deferring look
    /// ([`copy_jobs`]) a long read copies nothing now: its part is a job, and the read is
    /// pending until a poll finds the job done.
    ///
    /// # Safety
    /// `r.local` is valid for `r.len` bytes of writing until the transfer is done.
    pub unsafe fn read(
        &mut self,
        fabric: &Fabric,
        me: Rank,
        r: Read,
        split: bool,
        counters: &mut Counters,
    ) -> Result<Transfer> {
        let (d, info) = peer_region(fabric, r.peer, r.key)?;
        info.check(r.offset, r.len, Access::READ)
            .map_err(|why| refused(r.peer, r.key, why))?;
        if !self.engine.read {
            return Err(NicError::NoSingleCopy { rank: r.peer });
        }
        if r.len == 0 {
            return Ok(Transfer::Done);
        }
        let remote = info.addr + r.offset;
        let pid = fabric.rank_block(r.peer).pid.load(Acquire);
        let defer =
            split && self.read_proven && r.len >= copy_jobs::DEFER_MIN && copy_jobs::deferring();
        // A read of this process's own region is not split when deferred: the thread that runs
        // the job would also be the one that runs the exporter's part.
        let at = if defer && r.peer == me {
            r.len
        } else if split && self.engine.split_min > 0 && r.len >= self.engine.split_min {
            split_point(r.len)
        } else {
            r.len
        };
        let asked = at < r.len
            && d.assist
                .compare_exchange(assist::IDLE, assist::PREPARING, Acquire, Relaxed)
                .is_ok();
        if asked {
            d.assist_dst.store(r.local as u64 + at as u64, Relaxed);
            d.assist_from.store((r.offset + at) as u64, Relaxed);
            d.assist_len.store((r.len - at) as u64, Relaxed);
            d.assist_peer.store(me as u32, Relaxed);
            d.assist.store(assist::ASKED, Release);
            fabric.rank_block(r.peer).doorbell.fetch_add(1, Release);
        }
        // An exchange (both ranks reading each other's regions at once) would otherwise have
        // each importer withdraw the part it asked for, both being busy copying: serving the
        // peer's ask first splits both reads, and each exporter then reads half of its own
        // buffer itself, which leaves fewer of its lines shared with the peer's cache (the
        // next write to them is cheaper).
        if self.doorbell_rang() {
            self.serve_assists(fabric, me, counters);
        }
        let mine = if asked { at } else { r.len };
        if defer {
            let rest = asked.then(|| Pending {
                peer: r.peer,
                key: r.key,
                dst: r.local.wrapping_add(at),
                remote: remote + at,
                len: r.len - at,
            });
            // SAFETY: `local` is valid for `len >= mine` bytes of writing until the transfer
            // is done (the caller's contract), which it is not before the job is.
            let job = unsafe {
                CopyJob::queue(copy_jobs::Copy::Read {
                    pid,
                    remote,
                    local: r.local,
                    len: mine,
                })
            };
            return Ok(Transfer::Pending(self.keep_in_flight(InFlight::Outside {
                job,
                peer: r.peer,
                key: r.key,
                len: mine,
                rest,
            })));
        }
        // SAFETY: `local` is valid for `len >= mine` bytes of writing (the caller's contract).
        let first = unsafe { std::slice::from_raw_parts_mut(r.local, mine) };
        let copied = self
            .copy_in(pid, r.peer, remote, first, counters)
            .and_then(|()| still_there(d, r.peer, r.key));
        if !asked {
            return copied.map(|()| Transfer::Done);
        }
        let rest = Pending {
            peer: r.peer,
            key: r.key,
            dst: r.local.wrapping_add(at),
            remote: remote + at,
            len: r.len - at,
        };
        match d
            .assist
            .compare_exchange(assist::ASKED, assist::WITHDRAWN, AcqRel, Acquire)
        {
            Ok(_) => {
                // The exporter never started: our part and its part are ours.
                let rest_done = copied.and_then(|()| self.copy_rest(fabric, pid, rest, counters));
                d.assist.store(assist::IDLE, Release);
                rest_done.map(|()| Transfer::Done)
            }
            Err(assist::TAKEN) => {
                copied?;
                Ok(Transfer::Pending(
                    self.keep_in_flight(InFlight::Assisted(rest)),
                ))
            }
            Err(state) => {
                let done = copied.and_then(|()| self.finish(fabric, d, state, pid, rest, counters));
                done.map(|()| Transfer::Done)
            }
        }
    }

    /// Whether pending read `id` is done (the exporter wrote its part, or refused and we copied
    /// it).
    pub fn poll_transfer(
        &mut self,
        fabric: &Fabric,
        id: TransferId,
        counters: &mut Counters,
    ) -> Result<bool> {
        let slot = id.0 as usize;
        let p = match self.pending.get(slot) {
            Some(Some(InFlight::Assisted(p))) => *p,
            Some(Some(InFlight::Outside { .. })) => {
                return self.poll_outside(fabric, slot, counters)
            }
            _ => {
                return Err(NicError::Unsupported(
                    "polling a transfer that is not pending",
                ))
            }
        };
        let d = fabric.region_desc(p.peer, p.key.id as usize);
        let state = d.assist.load(Acquire);
        if state == assist::TAKEN {
            return Ok(false);
        }
        self.pending[id.0 as usize] = None;
        let pid = fabric.rank_block(p.peer).pid.load(Acquire);
        self.finish(fabric, d, state, pid, p, counters)?;
        Ok(true)
    }

    /// [`Regions::poll_transfer`] of a read whose part is a job: once the job is done, the
    /// region is checked as after an inline copy, and a split read goes on as one would.
    fn poll_outside(
        &mut self,
        fabric: &Fabric,
        slot: usize,
        counters: &mut Counters,
    ) -> Result<bool> {
        let Some(InFlight::Outside {
            job,
            peer,
            key,
            len,
            rest,
        }) = &self.pending[slot]
        else {
            unreachable!("poll_outside is called for jobs only");
        };
        let (peer, key, len, rest) = (*peer, *key, *len, *rest);
        let failed = match job.poll() {
            Outcome::Waiting => return Ok(false),
            Outcome::Done => None,
            Outcome::Failed(e) => Some(e),
        };
        self.pending[slot] = None;
        let d = fabric.region_desc(peer, key.id as usize);
        let copied = match failed {
            None => {
                counters.dma_ops += 1;
                counters.copies_outside += 1;
                counters.dma_bytes += len as u64;
                still_there(d, peer, key)
            }
            Some(e) => Err(dma_error(peer, "single-copy read (process_vm_readv)", e)),
        };
        let Some(rest) = rest else {
            return copied.map(|()| true);
        };
        match d
            .assist
            .compare_exchange(assist::ASKED, assist::WITHDRAWN, AcqRel, Acquire)
        {
            Ok(_) => {
                // The exporter never started: its part is ours too.
                if copied.is_err() || !copy_jobs::deferring() {
                    let rest_done = copied.and_then(|()| {
                        let pid = fabric.rank_block(peer).pid.load(Acquire);
                        self.copy_rest(fabric, pid, rest, counters)
                    });
                    d.assist.store(assist::IDLE, Release);
                    return rest_done.map(|()| true);
                }
                // Nobody else touches a withdrawn handshake: it is free again, and the rest is
                // another job of this look.
                d.assist.store(assist::IDLE, Release);
                let pid = fabric.rank_block(peer).pid.load(Acquire);
                // SAFETY: `rest.dst` lies `rest.len` bytes before the end of the read's buffer,
                // valid until the read is done, which it is not before this job is.
                let job = unsafe {
                    CopyJob::queue(copy_jobs::Copy::Read {
                        pid,
                        remote: rest.remote,
                        local: rest.dst,
                        len: rest.len,
                    })
                };
                self.pending[slot] = Some(InFlight::Outside {
                    job,
                    peer,
                    key,
                    len: rest.len,
                    rest: None,
                });
                Ok(false)
            }
            Err(assist::TAKEN) => {
                copied?;
                self.pending[slot] = Some(InFlight::Assisted(rest));
                Ok(false)
            }
            Err(state) => {
                let pid = fabric.rank_block(peer).pid.load(Acquire);
                let done = copied.and_then(|()| self.finish(fabric, d, state, pid, rest, counters));
                done.map(|()| true)
            }
        }
    }

    /// Ends a split read whose handshake is in `state` (`DONE` or `REFUSED`): copies the
    /// second part if the exporter did not, and frees the handshake.
    fn finish(
        &mut self,
        fabric: &Fabric,
        d: &RegionDesc,
        state: u32,
        pid: libc::pid_t,
        rest: Pending,
        counters: &mut Counters,
    ) -> Result<()> {
        let r = match state {
            assist::DONE => Ok(()),
            assist::REFUSED => self.copy_rest(fabric, pid, rest, counters),
            other => Err(refused(
                rest.peer,
                rest.key,
                format!(
                    "its split-copy handshake is in state {other}, which no importer leaves it in"
                ),
            )),
        };
        d.assist.store(assist::IDLE, Release);
        r
    }

    fn copy_rest(
        &mut self,
        fabric: &Fabric,
        pid: libc::pid_t,
        rest: Pending,
        counters: &mut Counters,
    ) -> Result<()> {
        // SAFETY: `dst` lies `len` bytes before the end of the read's buffer, which is valid
        // until the read is done (the caller of `read` promised it).
        let part = unsafe { std::slice::from_raw_parts_mut(rest.dst, rest.len) };
        self.copy_in(pid, rest.peer, rest.remote, part, counters)?;
        still_there(
            fabric.region_desc(rest.peer, rest.key.id as usize),
            rest.peer,
            rest.key,
        )
    }

    /// `process_vm_readv` of `local.len()` bytes at `remote` in `peer`'s memory.
    fn copy_in(
        &mut self,
        pid: libc::pid_t,
        peer: Rank,
        remote: usize,
        local: &mut [u8],
        counters: &mut Counters,
    ) -> Result<()> {
        if let Err(e) = dma::read_from(pid, remote, local) {
            let e = dma_error(peer, "single-copy read (process_vm_readv)", e);
            if matches!(e, NicError::NoSingleCopy { .. }) {
                tracing::debug!(target: "nic", peer, "single copy refused by the kernel; using packets");
                self.engine.read = false;
            }
            return Err(e);
        }
        counters.dma_ops += 1;
        counters.dma_bytes += local.len() as u64;
        self.read_proven = true;
        Ok(())
    }

    /// Writes `local` into byte `offset` of `peer`'s region `key` (deliberate update).
    pub fn write(
        &mut self,
        fabric: &Fabric,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
        counters: &mut Counters,
    ) -> Result<()> {
        let (d, info) = peer_region(fabric, peer, key)?;
        info.check(offset, local.len(), Access::WRITE)
            .map_err(|why| refused(peer, key, why))?;
        if !self.engine.write {
            return Err(NicError::NoSingleCopy { rank: peer });
        }
        if local.is_empty() {
            return Ok(());
        }
        let pid = fabric.rank_block(peer).pid.load(Acquire);
        if let Err(e) = dma::write_to(pid, info.addr + offset, local) {
            let e = dma_error(peer, "single-copy write (process_vm_writev)", e);
            if matches!(e, NicError::NoSingleCopy { .. }) {
                self.engine.write = false;
            }
            return Err(e);
        }
        counters.dma_ops += 1;
        counters.dma_bytes += local.len() as u64;
        still_there(d, peer, key)
    }
}

/// Looks up `peer`'s published region `key`: its descriptor and what it describes, read
/// consistently (the key before and after), or why it is refused.
fn peer_region(fabric: &Fabric, peer: Rank, key: RegionKey) -> Result<(&RegionDesc, RegionInfo)> {
    if key.id as usize >= REGION_SLOTS {
        // Not published: its exporter serves it over packets.
        return Err(NicError::NoSingleCopy { rank: peer });
    }
    let d = fabric.region_desc(peer, key.id as usize);
    if d.key.load(Acquire) != key.key {
        return Err(refused(
            peer,
            key,
            "no such region is exported (never, or withdrawn)".into(),
        ));
    }
    let info = RegionInfo {
        addr: d.addr.load(Relaxed) as usize,
        len: d.len.load(Relaxed) as usize,
        access: Access::from_bits(d.access.load(Relaxed)),
    };
    if d.key.load(Acquire) != key.key {
        return Err(refused(
            peer,
            key,
            "it was withdrawn while being looked up".into(),
        ));
    }
    Ok((d, info))
}

/// Checks a peer's region for an importer (VMMC's import).
pub(super) fn import(fabric: &Fabric, peer: Rank, key: RegionKey) -> Result<RegionInfo> {
    peer_region(fabric, peer, key).map(|(_, info)| info)
}

/// After a copy: the region must still be the one the key named, or the bytes are not its.
fn still_there(d: &RegionDesc, peer: Rank, key: RegionKey) -> Result<()> {
    if d.key.load(Acquire) == key.key {
        Ok(())
    } else {
        Err(refused(
            peer,
            key,
            "it was withdrawn during the transfer".into(),
        ))
    }
}

fn refused(peer: Rank, key: RegionKey, why: String) -> NicError {
    NicError::RegionRefused {
        rank: peer,
        why: format!("{key}: {why}"),
    }
}

/// Where a split read of `len` bytes divides: the importer reads `..at`, the exporter writes
/// `at..` (a page multiple near the middle). A read too short to give each side a page is
/// not split (`len`: the importer reads it all).
fn split_point(len: usize) -> usize {
    match (len / 2) & !4095 {
        0 => len,
        at => at,
    }
}

/// What a failed single-copy call to `peer` means: refused by the kernel (`EPERM`), the peer
/// gone (`ESRCH`), or another OS error while doing `what`.
fn dma_error(peer: Rank, what: &'static str, e: std::io::Error) -> NicError {
    match e.raw_os_error() {
        Some(libc::EPERM) => NicError::NoSingleCopy { rank: peer },
        Some(libc::ESRCH) => NicError::PeerDead {
            rank: peer,
            why: "process gone during a transfer",
        },
        _ => NicError::Os { what, source: e },
    }
}

#[cfg(test)]
mod tests {
    use super::split_point;

    #[test]
    fn a_split_gives_each_side_whole_pages_or_does_not_happen() {
        assert_eq!(split_point(1 << 20), 1 << 19);
        assert_eq!(split_point(64 * 1024 + 100), 32 * 1024);
        assert_eq!(split_point(8192), 4096);
        // Too short for a page each: the importer reads it all.
        assert_eq!(split_point(8191), 8191);
        assert_eq!(split_point(100), 100);
    }
}
