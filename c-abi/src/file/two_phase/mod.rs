//! Two-phase collective I/O (ROMIO's collective buffering): what every collective data access
//! (`MPI_File_write_all`, `..._at_all`, the nonblocking `MPI_File_iwrite_all` & co and the
//! split `..._begin` / `..._end`) does.
//!
//! ```text
//!   rank 0: ##..##..##..      rank 1: ..##..##..##      interleaved accesses of one file
//!   ───────────────── exchange (first, last byte) of every access ─────────────────
//!   global range [lo, hi) ── split into file domains, one per aggregator ──▶
//!        domain 0 (aggregator A0)         |        domain 1 (aggregator A1)
//!   every process sends each aggregator its (offset, len) runs that fall in its domain,
//!   then, piece by piece (at most cb_buffer_size bytes of a domain at a time):
//!     write: data ──▶ aggregator: holes in the piece? read it first; one pwrite
//!     read:  aggregator: one pread of the piece ──▶ each owner its bytes
//!   every process learns every other's outcome (an aggregator's I/O error reaches all)
//! ```
//!
//! **Why.** Many small interleaved requests (a 3-D array distributed in blocks, each process
//! writing its block through a subarray view: BT-IO) become a few large contiguous system
//! calls, one per piece, done by a few processes; the rest is messages.
//!
//! **The algorithm**, per call, by every process of the file's communicator:
//! 1. *Ranges.* Each process sends every other its access's first and end file byte, and
//!    whether it is one run (`Stage::Ranges`). Everyone then knows the same things and decides
//!    alike: two-phase or independent (the `romio_cb_read`/`romio_cb_write` hints: `enable`
//!    always two-phase, `disable` never (then there is no exchange at all), `automatic` when
//!    the ranges of consecutive ranks interleave or some access is noncontiguous: ROMIO's
//!    rule); and the file domains: the global range split in equal shares, one per
//!    aggregator, boundaries rounded to `striping_unit` when set ([`domains::file_domains`]).
//! 2. *Lists.* Each process sends each aggregator the runs of its access that fall in the
//!    aggregator's domain (a count, then the (offset, len) pairs).
//! 3. *Rounds.* Domain `j` is done in pieces of at most `cb_buffer_size` bytes; round `r` is
//!    piece `r` of every domain (every process counts the same rounds). Because a view goes
//!    forward through the file, the data of one process in one piece is one contiguous
//!    stretch of its data: sent straight from (or received straight into) its buffer.
//!    Write: owners send their stretch; the aggregator places each run in the piece's buffer
//!    (in rank order: where accesses overlap, the higher rank's bytes win), reads the piece
//!    first if the runs leave holes in it (read-modify-write, under a byte-range lock, as
//!    data sieving does; a descriptor that cannot read writes the covered stretches one by
//!    one instead), and writes it with one `pwrite`. Read: the aggregator reads the piece
//!    with one `pread` and sends each owner its bytes, up to the end of the file: a short
//!    message tells the owner where the file ended, so its count is the data before it.
//! 4. *Verdict.* Each process sends every other its outcome (0 or an error class); every
//!    process returns the lowest failing rank's class (its own detail if it failed), so an
//!    I/O error of one aggregator fails the call everywhere, and nobody hangs on it: a
//!    failed aggregator goes on with the exchanges, without I/O.
//!
//! Aggregators are placed per host (`hints::aggregators`): one per host unless `cb_nodes` or
//! `cb_config_list` says otherwise, spread over the hosts.
//!
//! **Progress.** An access is an [`Access`], a state machine advanced by
//! [`Access::step`]: it starts and tests point-to-point operations on the file's
//! communicator's collective context (tags from [`TAG_TWO_PHASE`] up, by the communicator's
//! collective sequence number, so concurrent nonblocking accesses stay apart), does its own
//! `pread`/`pwrite` (blocking: local), and never waits for another process. A blocking call
//! turns the progress engine until it is done; a nonblocking one hands it to the engine as an
//! [`mpich_channel::Operation`] ([`start`]) under a request whose status count is the bytes
//! this process moved. Everything it needs (a duplicate of the file's descriptor, the runs,
//! the data) is taken when it starts: the file table is never touched while it runs. The
//! data is the caller's buffer itself when it is one block of native bytes (no copy either
//! way: [`Data`]), else the packed and converted copy (a write) or room unpacked into the
//! caller's buffer at the end (a read). What travels to and from the aggregators is file
//! bytes (in the view's data representation): the process that owns the memory converts
//! them, so the status count is in memory bytes (the whole values a short read got).
//!
//! **Trace.** With `MPI_FILE_TRACE=1` in the environment, each collective access prints one
//! line to stderr per process: two-phase or independent, aggregators, rounds, pieces this
//! process did as an aggregator, bytes.

mod data;
mod domains;

use crate::abi::*;
use crate::datatype::Message;
use crate::error::{MpiError, MpiResult};
use crate::file::hints::{Buffering, Collective};
use crate::file::sys::{self, io_error, RangeLock};
use crate::file::{access, memory, Dir};
use crate::p2p::request::Outcome;
pub(crate) use data::Data;
use domains::{coverage, file_domains, piece, pieces, Runs};
use mpich_channel::{Adi, AdiError, Engine, Operation, ReqId, SendMode, Status};
use std::ffi::{c_int, c_void};
use std::fs::File;

pub(crate) use crate::file::view::Extent;

/// Tags of two-phase messages on the file communicator's collective context: above
/// `comm::net`'s (`0x3000_0000`..) and the files' other exchanges (`0x3500_0000`); the
/// collective sequence number (18 bits) and the step (6 bits) below.
pub(crate) const TAG_TWO_PHASE: c_int = 0x3800_0000;

const STEP_RANGES: c_int = 0;
const STEP_HEADER: c_int = 1;
const STEP_LIST: c_int = 2;
const STEP_DATA: c_int = 3;
const STEP_VERDICT: c_int = 4;

/// The processes of the access: engine rank of each rank of the file's communicator, this
/// process's rank, the collective context, and the call's tag base.
pub(crate) struct Peers {
    pub engine_ranks: Vec<usize>,
    pub me: usize,
    pub ctx: u16,
    pub tag: c_int,
}

impl Peers {
    /// `globals`, `me`, `ctx` of the file's communicator and its collective sequence number
    /// `seq` for this call.
    pub fn new(engine_ranks: Vec<usize>, me: usize, ctx: u16, seq: u32) -> Peers {
        Peers {
            engine_ranks,
            me,
            ctx,
            tag: TAG_TWO_PHASE | ((seq & 0x3_ffff) << 6) as c_int,
        }
    }

    fn size(&self) -> usize {
        self.engine_ranks.len()
    }
}

/// Where the data of a read goes when it ends: the caller's buffer.
pub(crate) struct Destination {
    pub buf: *mut c_void,
    pub count: usize,
    pub message: Message,
    /// From the file's data representation to memory (`file::datarep`).
    pub conversion: crate::file::datarep::Conversion,
}

/// Everything one process's part of a collective access needs, taken when it starts.
pub(crate) struct Setup {
    pub call: String,
    pub dir: Dir,
    /// A duplicate of the file's descriptor.
    pub file: File,
    pub path: String,
    /// The access's file runs, in order.
    pub runs: Vec<Extent>,
    /// Write: the data (the caller's block, or packed and converted). Read: where it lands
    /// (the caller's block, or room of the access's own, made for `bytes` when empty).
    pub data: Data,
    /// Bytes of the data in the file.
    pub bytes: usize,
    /// Bytes of the data in memory (`bytes` unless the view's representation changes a
    /// value's size): a write's status count.
    pub memory_bytes: usize,
    /// Read: where the data goes.
    pub destination: Option<Destination>,
    pub peers: Peers,
    pub settings: Collective,
    /// Data sieving block for the independent path.
    pub sieve: Option<usize>,
    pub atomic: bool,
    pub can_read: bool,
}

/// A pending point-to-point operation of the access, and what its completion means.
struct Pending {
    id: ReqId,
    then: Then,
}

enum Then {
    Nothing,
    /// An aggregator got sender `s`'s run count: post the list's receive.
    Header(usize),
    /// A read's stretch of data bytes from `at` (`want` long) arrived.
    Stretch {
        at: u64,
        want: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Start,
    Ranges,
    Lists,
    Round(usize),
    Verdict,
    Done,
}

/// One process's part of a collective access: a state machine ([`Access::step`]).
pub(crate) struct Access {
    s: Setup,
    mine: Runs,
    stage: Stage,
    pending: Vec<Pending>,
    /// Ranges: this process's word and everyone's (flags, first, end).
    my_range: Box<[u64; 3]>,
    ranges: Vec<u64>,
    /// The file domains' bounds (one domain per aggregator), once decided.
    bounds: Vec<u64>,
    /// This process's aggregator index, if it is one.
    my_domain: Option<usize>,
    rounds: usize,
    /// What this process sends each aggregator: count, then (offset, len) pairs.
    lists_out: Vec<Vec<u64>>,
    /// As an aggregator: each sender's count, and runs.
    headers: Vec<u64>,
    lists_in: Vec<Vec<u64>>,
    senders: Vec<Runs>,
    /// As an aggregator, this round: each sender's bytes (write) or what it is sent (read).
    round_bufs: Vec<Vec<u8>>,
    /// As an aggregator: the piece's bytes (kept from round to round: no new allocation).
    piece_buf: Vec<u8>,
    /// Read: the data bytes before the first one the file did not have.
    short_at: u64,
    two_phase: bool,
    /// This process's own error (its I/O), and the verdict words.
    error: Option<MpiError>,
    my_class: Box<u64>,
    classes: Vec<u64>,
    /// Whether the outcomes were exchanged (not when nobody had data, nor with `disable`).
    judged_together: bool,
    pieces_done: usize,
}

impl Access {
    pub fn new(s: Setup) -> Access {
        let mut s = s;
        let mine = Runs::new(std::mem::take(&mut s.runs));
        let n = s.peers.size();
        if s.dir == Dir::Read && !s.data.is_callers() {
            s.data = Data::Owned(vec![0u8; s.bytes]);
        }
        Access {
            short_at: s.bytes as u64,
            s,
            mine,
            stage: Stage::Start,
            pending: Vec::new(),
            my_range: Box::new([0; 3]),
            ranges: vec![0; 3 * n],
            bounds: Vec::new(),
            my_domain: None,
            rounds: 0,
            lists_out: Vec::new(),
            headers: vec![0; n],
            lists_in: vec![Vec::new(); n],
            senders: Vec::new(),
            round_bufs: vec![Vec::new(); n],
            piece_buf: Vec::new(),
            two_phase: false,
            error: None,
            my_class: Box::new(0),
            classes: vec![0; n],
            judged_together: false,
            pieces_done: 0,
        }
    }

    /// Moves the access on as far as it goes without waiting: `Some(outcome)` once it is over
    /// (the bytes this process moved, or the call's error).
    pub fn step(&mut self, p2p: &mut Adi) -> Result<Option<MpiResult<usize>>, AdiError> {
        loop {
            let mut i = 0;
            while i < self.pending.len() {
                match p2p.take(self.pending[i].id)? {
                    Some(st) => {
                        let done = self.pending.swap_remove(i);
                        self.completed(p2p, done.then, &st)?;
                    }
                    None => i += 1,
                }
            }
            if !self.pending.is_empty() {
                return Ok(None);
            }
            match self.stage {
                Stage::Start => self.begin(p2p)?,
                Stage::Ranges => self.decide(p2p)?,
                Stage::Lists => {
                    self.take_lists();
                    self.next_round(p2p, 0)?;
                }
                Stage::Round(r) => {
                    self.finish_round(r);
                    self.next_round(p2p, r + 1)?;
                }
                Stage::Verdict => {
                    self.stage = Stage::Done;
                    return Ok(Some(self.outcome()));
                }
                Stage::Done => return Ok(Some(self.outcome())),
            }
        }
    }

    fn n(&self) -> usize {
        self.s.peers.size()
    }

    fn me(&self) -> usize {
        self.s.peers.me
    }

    fn buffering(&self) -> Buffering {
        match self.s.dir {
            Dir::Read => self.s.settings.read,
            Dir::Write => self.s.settings.write,
        }
    }

    // ---- point-to-point ----

    /// Sends `len` bytes at `buf` to rank `to`; the bytes stay put until it completes.
    fn send(
        &mut self,
        p2p: &mut Adi,
        buf: *const u8,
        len: usize,
        to: usize,
        step: c_int,
    ) -> Result<(), AdiError> {
        let p = &self.s.peers;
        // SAFETY: every buffer sent from is a heap block of this access (a Vec or Box field)
        // that is neither resized nor freed until the request completes (the access keeps
        // stepping until nothing is pending; a failed access is leaked, never freed).
        let id = unsafe {
            p2p.isend(
                crate::cptr::nonnull_or_dangling(buf),
                len,
                p.engine_ranks[to],
                p.tag + step,
                p.ctx,
                SendMode::Standard,
                0,
            )
        }?;
        self.pending.push(Pending {
            id,
            then: Then::Nothing,
        });
        Ok(())
    }

    /// Receives at most `cap` bytes into `buf` from rank `from`.
    fn recv(
        &mut self,
        p2p: &mut Adi,
        buf: *mut u8,
        cap: usize,
        from: usize,
        step: c_int,
        then: Then,
    ) -> Result<(), AdiError> {
        let p = &self.s.peers;
        // SAFETY: as for `send`: the block received into stays put and untouched until the
        // request completes.
        let id = unsafe {
            p2p.irecv(
                crate::cptr::nonnull_or_dangling(buf.cast_const()).cast_mut(),
                cap,
                p.engine_ranks[from] as i32,
                p.tag + step,
                p.ctx,
                0,
            )
        }?;
        self.pending.push(Pending { id, then });
        Ok(())
    }

    fn completed(&mut self, p2p: &mut Adi, then: Then, st: &Status) -> Result<(), AdiError> {
        match then {
            Then::Nothing => {}
            Then::Header(s) => {
                let count = self.headers[s] as usize;
                if count > 0 {
                    self.lists_in[s] = vec![0u64; 2 * count];
                    let (ptr, len) = (self.lists_in[s].as_mut_ptr(), 16 * count);
                    self.recv(p2p, ptr.cast(), len, s, STEP_LIST, Then::Nothing)?;
                }
            }
            Then::Stretch { at, want } => {
                if st.len < want {
                    self.short_at = self.short_at.min(at + st.len as u64);
                }
            }
        }
        Ok(())
    }

    // ---- stages ----

    fn begin(&mut self, p2p: &mut Adi) -> Result<(), AdiError> {
        if self.buffering() == Buffering::Disable {
            self.independent();
            self.stage = Stage::Done;
            return Ok(());
        }
        let (first, end) = self.mine.range().unwrap_or((0, 0));
        let flags = (self.mine.total > 0) as u64 | ((!self.mine.contiguous()) as u64) << 1;
        *self.my_range = [flags, first, end];
        let me = self.me();
        self.ranges[3 * me..3 * me + 3].copy_from_slice(&*self.my_range);
        let mine_ptr = self.my_range.as_ptr().cast::<u8>();
        for k in (0..self.n()).filter(|&k| k != me) {
            let into = self.ranges[3 * k..].as_mut_ptr().cast::<u8>();
            self.recv(p2p, into, 24, k, STEP_RANGES, Then::Nothing)?;
            self.send(p2p, mine_ptr, 24, k, STEP_RANGES)?;
        }
        self.stage = Stage::Ranges;
        Ok(())
    }

    /// Everyone's ranges are in: two-phase or not, the domains, and the lists go out.
    fn decide(&mut self, p2p: &mut Adi) -> Result<(), AdiError> {
        let (mut lo, mut hi) = (u64::MAX, 0u64);
        let (mut interleaved, mut scattered, mut prev_end) = (false, false, None::<u64>);
        for k in 0..self.n() {
            let w = &self.ranges[3 * k..3 * k + 3];
            if w[0] & 1 == 0 {
                continue;
            }
            scattered |= w[0] & 2 != 0;
            if prev_end.is_some_and(|e| w[1] < e) {
                interleaved = true;
            }
            prev_end = Some(prev_end.map_or(w[2], |e| e.max(w[2])));
            (lo, hi) = (lo.min(w[1]), hi.max(w[2]));
        }
        if prev_end.is_none() {
            // Nobody has data: nothing to do, and everyone knows it.
            self.stage = Stage::Done;
            return Ok(());
        }
        self.two_phase = match self.buffering() {
            Buffering::Enable => true,
            Buffering::Disable => false,
            Buffering::Automatic => interleaved || scattered,
        };
        if !self.two_phase {
            self.independent();
            return self.verdict(p2p);
        }
        let aggs = self.s.settings.aggregators.clone();
        self.bounds = file_domains(lo, hi, aggs.len(), self.s.settings.striping_unit);
        self.my_domain = aggs.iter().position(|&a| a == self.me());
        let buffer = self.s.settings.buffer.max(1);
        self.rounds = (0..aggs.len())
            .map(|j| pieces(self.bounds[j], self.bounds[j + 1], buffer))
            .max()
            .unwrap_or(0);
        // This process's runs in each domain.
        self.lists_out = (0..aggs.len())
            .map(|j| {
                let mut words = vec![0u64];
                for e in self.mine.clipped(self.bounds[j], self.bounds[j + 1]) {
                    words.push(e.offset);
                    words.push(e.len as u64);
                }
                words[0] = (words.len() as u64 - 1) / 2;
                words
            })
            .collect();
        if self.my_domain.is_some() {
            for s in 0..self.n() {
                let into = (&mut self.headers[s] as *mut u64).cast::<u8>();
                self.recv(p2p, into, 8, s, STEP_HEADER, Then::Header(s))?;
            }
        }
        for (j, &agg) in aggs.iter().enumerate() {
            let words = &self.lists_out[j];
            let (ptr, count) = (words.as_ptr(), words[0] as usize);
            self.send(p2p, ptr.cast(), 8, agg, STEP_HEADER)?;
            if count > 0 {
                // SAFETY: the list's pairs follow its count in the same vector.
                let pairs = unsafe { ptr.add(1) };
                self.send(p2p, pairs.cast(), 16 * count, agg, STEP_LIST)?;
            }
        }
        self.stage = Stage::Lists;
        Ok(())
    }

    /// As an aggregator: every sender's runs in this domain, from the lists received.
    fn take_lists(&mut self) {
        if self.my_domain.is_none() {
            return;
        }
        self.senders = self
            .lists_in
            .iter_mut()
            .map(|w| {
                let runs = w
                    .chunks_exact(2)
                    .map(|p| Extent {
                        offset: p[0],
                        len: p[1] as usize,
                    })
                    .collect();
                *w = Vec::new();
                Runs::new(runs)
            })
            .collect();
    }

    /// Starts round `r` (or the verdict after the last).
    fn next_round(&mut self, p2p: &mut Adi, r: usize) -> Result<(), AdiError> {
        if r >= self.rounds {
            return self.verdict(p2p);
        }
        self.stage = Stage::Round(r);
        let buffer = self.s.settings.buffer.max(1);
        let aggs = self.s.settings.aggregators.clone();
        // As an aggregator: the piece, and each sender's share of it.
        if let Some(j) = self.my_domain {
            let (p0, p1) = piece(self.bounds[j], self.bounds[j + 1], buffer, r);
            match self.s.dir {
                Dir::Write => {
                    // (This process's own bytes are taken from its data: `write_piece`.)
                    let me = self.me();
                    for s in (0..self.n()).filter(|&s| s != me) {
                        let len: usize = self.senders[s].clipped(p0, p1).map(|e| e.len).sum();
                        if len > 0 {
                            self.round_bufs[s].resize(len, 0);
                            let ptr = self.round_bufs[s].as_mut_ptr();
                            self.recv(p2p, ptr, len, s, STEP_DATA, Then::Nothing)?;
                        }
                    }
                }
                Dir::Read => self.read_piece(p2p, p0, p1)?,
            }
        }
        // As an owner of data: its stretch of every domain's piece r.
        for (j, &agg) in aggs.iter().enumerate() {
            let (p0, p1) = piece(self.bounds[j], self.bounds[j + 1], buffer, r);
            let (d0, d1) = self.mine.data_within(p0, p1);
            if d1 <= d0 || agg == self.me() {
                // (An aggregator's own bytes do not travel: see `read_piece`, `write_piece`.)
                continue;
            }
            let len = (d1 - d0) as usize;
            match self.s.dir {
                Dir::Write => {
                    // SAFETY: d0 + len <= the data's length (data_within stays in the access).
                    let ptr = unsafe { self.s.data.as_ptr().add(d0 as usize) };
                    self.send(p2p, ptr, len, agg, STEP_DATA)?;
                }
                Dir::Read => {
                    // SAFETY: as above; the stretches of one round do not overlap.
                    let ptr = unsafe { self.s.data.as_mut_ptr().add(d0 as usize) };
                    let then = Then::Stretch { at: d0, want: len };
                    self.recv(p2p, ptr, len, agg, STEP_DATA, then)?;
                }
            }
        }
        Ok(())
    }

    /// As an aggregator of a read: reads piece `[p0, p1)` (the part the senders want) and
    /// sends each its bytes, up to the end of the file.
    fn read_piece(&mut self, p2p: &mut Adi, p0: u64, p1: u64) -> Result<(), AdiError> {
        let wanted: Vec<Extent> = self
            .senders
            .iter()
            .flat_map(|r| r.clipped(p0, p1))
            .collect();
        let Some((lo, hi, _)) = coverage(wanted) else {
            return Ok(());
        };
        let mut buf = std::mem::take(&mut self.piece_buf);
        buf.resize((hi - lo) as usize, 0);
        let mut valid_end = lo;
        if self.error.is_none() {
            match sys::read_full(&self.s.file, &mut buf, lo) {
                Ok(got) => valid_end = lo + got as u64,
                Err(e) => self.fail_io("read", &e),
            }
            self.pieces_done += 1;
        }
        for s in 0..self.n() {
            if s == self.me() {
                self.read_own(&buf, lo, valid_end, p0, p1);
                continue;
            }
            let mut out = std::mem::take(&mut self.round_bufs[s]);
            let mut any = false;
            for e in self.senders[s].clipped(p0, p1) {
                any = true;
                let end = (e.offset + e.len as u64).min(valid_end);
                if end <= e.offset {
                    break;
                }
                let from = (e.offset - lo) as usize;
                out.extend_from_slice(&buf[from..from + (end - e.offset) as usize]);
                if end < e.offset + e.len as u64 {
                    break;
                }
            }
            if any {
                self.round_bufs[s] = out;
                let (ptr, len) = (self.round_bufs[s].as_ptr(), self.round_bufs[s].len());
                self.send(p2p, ptr, len, s, STEP_DATA)?;
            } else {
                self.round_bufs[s] = out;
            }
        }
        self.piece_buf = buf;
        Ok(())
    }

    /// As an aggregator of a read: its own bytes of piece `[p0, p1)`, from the piece's buffer
    /// (`buf`, file bytes from `lo`, the file's data ending at `valid_end`) to its data.
    fn read_own(&mut self, buf: &[u8], lo: u64, valid_end: u64, p0: u64, p1: u64) {
        let mut at = self.mine.data_before(p0) as usize;
        for e in self.mine.clipped(p0, p1) {
            let end = (e.offset + e.len as u64).min(valid_end);
            let have = end.saturating_sub(e.offset) as usize;
            let from = (e.offset - lo) as usize;
            self.s.data[at..at + have].copy_from_slice(&buf[from..from + have]);
            if have < e.len {
                self.short_at = self.short_at.min((at + have) as u64);
                break;
            }
            at += e.len;
        }
    }

    /// Round `r`'s messages are all in: an aggregator of a write writes its piece.
    fn finish_round(&mut self, r: usize) {
        if let (Some(j), Dir::Write) = (self.my_domain, self.s.dir) {
            let buffer = self.s.settings.buffer.max(1);
            let (p0, p1) = piece(self.bounds[j], self.bounds[j + 1], buffer, r);
            if self.error.is_none() {
                if let Err(e) = self.write_piece(p0, p1) {
                    self.fail_io("write", &e);
                }
            }
        }
        for b in &mut self.round_bufs {
            b.clear();
        }
    }

    /// Places the senders' bytes of piece `[p0, p1)` and writes them.
    fn write_piece(&mut self, p0: u64, p1: u64) -> std::io::Result<()> {
        let runs: Vec<Extent> = self
            .senders
            .iter()
            .flat_map(|r| r.clipped(p0, p1))
            .collect();
        let Some((lo, hi, whole)) = coverage(runs.clone()) else {
            return Ok(());
        };
        self.pieces_done += 1;
        let f = &self.s.file;
        let span = (hi - lo) as usize;
        let mut buf = std::mem::take(&mut self.piece_buf);
        buf.clear();
        buf.resize(span, 0);
        let modify = !whole && self.s.can_read;
        let _lock = if self.s.atomic || modify {
            Some(RangeLock::write(f, lo, span as u64)?)
        } else {
            None
        };
        if modify {
            // Past the end of the file the holes stay zero, which is what a hole reads as.
            sys::read_full(f, &mut buf, lo)?;
        }
        let me = self.s.peers.me;
        for (s, data) in self.round_bufs.iter().enumerate() {
            let (data, mut at) = if s == me {
                (&self.s.data[..], self.mine.data_before(p0) as usize)
            } else {
                (&data[..], 0)
            };
            for e in self.senders[s].clipped(p0, p1) {
                let to = (e.offset - lo) as usize;
                buf[to..to + e.len].copy_from_slice(&data[at..at + e.len]);
                at += e.len;
            }
        }
        if whole || modify {
            sys::write_full(f, &buf, lo)?;
            self.piece_buf = buf;
            return Ok(());
        }
        // A descriptor that cannot read: the covered stretches one by one.
        let mut sorted = runs;
        sorted.sort_unstable_by_key(|e| e.offset);
        let mut i = 0;
        while i < sorted.len() {
            let start = sorted[i].offset;
            let mut end = start + sorted[i].len as u64;
            i += 1;
            while i < sorted.len() && sorted[i].offset <= end {
                end = end.max(sorted[i].offset + sorted[i].len as u64);
                i += 1;
            }
            let from = (start - lo) as usize;
            sys::write_full(f, &buf[from..from + (end - start) as usize], start)?;
        }
        Ok(())
    }

    /// This process's access alone (no aggregation): as the independent calls do it.
    fn independent(&mut self) {
        let (f, runs) = (&self.s.file, &self.mine.runs);
        match self.s.dir {
            Dir::Read => {
                match access::read(f, runs, &mut self.s.data, self.s.sieve, self.s.atomic) {
                    Ok(got) => self.short_at = got as u64,
                    Err(e) => self.fail_io("read", &e),
                }
            }
            Dir::Write => {
                let r = access::write(f, runs, &self.s.data, self.s.sieve, self.s.atomic);
                if let Err(e) = r {
                    self.fail_io("write", &e);
                }
            }
        }
    }

    fn fail_io(&mut self, op: &str, e: &std::io::Error) {
        if self.error.is_none() {
            self.error = Some(io_error(&format!("{op} of {:?}", self.s.path), e));
        }
    }

    /// Everyone's outcome to everyone.
    fn verdict(&mut self, p2p: &mut Adi) -> Result<(), AdiError> {
        self.stage = Stage::Verdict;
        self.judged_together = true;
        *self.my_class = self.error.as_ref().map_or(0, |e| e.class as u64);
        let me = self.me();
        self.classes[me] = *self.my_class;
        let mine = (&*self.my_class as *const u64).cast::<u8>();
        for k in (0..self.n()).filter(|&k| k != me) {
            let into = (&mut self.classes[k] as *mut u64).cast::<u8>();
            self.recv(p2p, into, 8, k, STEP_VERDICT, Then::Nothing)?;
            self.send(p2p, mine, 8, k, STEP_VERDICT)?;
        }
        Ok(())
    }

    /// The access is over: the bytes moved, or the call's error. A read's data goes to the
    /// caller's buffer here.
    fn outcome(&mut self) -> MpiResult<usize> {
        let result = self.judge();
        if trace_on() {
            eprintln!(
                "MPI_FILE_TRACE rank {} {} {}: aggregators {} rounds {} pieces {} bytes {}{}",
                self.me(),
                self.s.call,
                if self.two_phase {
                    "two-phase"
                } else {
                    "independent"
                },
                if self.two_phase {
                    self.s.settings.aggregators.len()
                } else {
                    0
                },
                self.rounds,
                self.pieces_done,
                result.as_ref().map_or(0, |&b| b),
                if result.is_err() { " (failed)" } else { "" },
            );
        }
        let moved = result?;
        if let (Dir::Read, Some(d)) = (self.s.dir, self.s.destination.take()) {
            let staging = &self.s.data;
            // SAFETY: the caller's buffer holds `count` elements of the message's type and is
            // the program's to fill until the access completes (the MPI call's contract).
            // (A conversion function of the program that fails is the read's error.)
            let placed = unsafe {
                memory::with_room(d.buf, d.count, &d.message, &d.conversion, |room| {
                    room[..moved].copy_from_slice(&staging[..moved]);
                    Ok::<usize, MpiError>(moved)
                })
            }?;
            return Ok(placed.memory);
        }
        Ok(match self.s.dir {
            Dir::Write => self.s.memory_bytes,
            Dir::Read => moved,
        })
    }

    fn judge(&mut self) -> MpiResult<usize> {
        // Without an exchange of outcomes (no data anywhere, or `disable`): this process's own.
        let failed = if self.judged_together {
            self.classes.iter().position(|&c| c != 0)
        } else {
            None
        };
        if failed.is_none() {
            if let Some(e) = self.error.take() {
                return Err(e);
            }
        }
        if let Some(rank) = failed {
            let class = self.classes[rank] as c_int;
            return Err(match self.error.take() {
                Some(e) if e.class == class => e,
                _ => MpiError::new(
                    class,
                    format!(
                        "{}: the I/O failed on rank {rank} of the file's communicator",
                        self.s.call
                    ),
                ),
            });
        }
        Ok(match self.s.dir {
            Dir::Write => self.s.bytes,
            Dir::Read => self.short_at.min(self.s.bytes as u64) as usize,
        })
    }
}

fn trace_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("MPI_FILE_TRACE").is_ok_and(|v| v != "0" && !v.is_empty()))
}

/// Runs an access to its end in the progress engine's waiting loop (a blocking call): the
/// bytes moved, or the call's error.
pub(crate) fn run(engine: &mut Engine, mut access: Access) -> MpiResult<usize> {
    match engine.block_on(|e| access.step(e.p2p())) {
        Ok(r) => r,
        Err(e) => {
            // The job is failing (a peer died): operations may still name the access's
            // buffers, so it is leaked rather than freed.
            std::mem::forget(access);
            Err(MpiError::from(e))
        }
    }
}

/// A nonblocking access as an operation of the progress engine: its status count is the
/// bytes moved; an error's detail goes to the request's [`Outcome`].
struct Nonblocking {
    access: Access,
    outcome: Outcome,
}

impl Operation for Nonblocking {
    fn poll(&mut self, p2p: &mut Adi) -> Result<Option<Status>, AdiError> {
        let Some(result) = self.access.step(p2p)? else {
            return Ok(None);
        };
        let mut status = Status {
            source: MPI_ANY_SOURCE,
            tag: MPI_ANY_TAG,
            ..Default::default()
        };
        match result {
            Ok(bytes) => status.len = bytes,
            Err(e) => {
                status.error = e.class;
                *self.outcome.0.borrow_mut() = Some(e);
            }
        }
        Ok(Some(status))
    }
}

/// Starts an access under a new request of communicator `owner` (the file's); its first
/// steps run now, the engine does the rest.
pub(crate) fn start(engine: &mut Engine, access: Access, owner: u32) -> MpiResult<ReqId> {
    let outcome = Outcome::default();
    let op = Box::new(Nonblocking {
        access,
        outcome: outcome.clone(),
    });
    let id = engine.start(op, owner).map_err(MpiError::from)?;
    engine.p2p().attach(id, Box::new(outcome));
    Ok(id)
}
