//! The ADI point-to-point engine: MPI's send and receive semantics over any [`Channel`].
//!
//! Protocols, chosen by message length against the channel's eager limit:
//! - **short/eager** (`len <= eager_max`): the data travels inside the control message and
//!   lands in the posted buffer, or in an unexpected-message buffer until a receive matches.
//!   A synchronous send asks for an acknowledgement of the match.
//! - **rendezvous**: the sender announces the message (RTS); once a receive matches, the
//!   receiver posts the user's buffer with the channel and answers CTS; the channel then moves
//!   the data straight into that buffer.
//!
//! A send the channel cannot take at once (no credit, full route) waits in a per-destination
//! queue, behind which later sends to the same destination line up, so MPI order holds and
//! `isend` never blocks. Blocking calls poll with back-off ([`nic_model::wait::Backoff`]):
//! spin, then yield, then nap, so that more ranks than cores still run well, and check now and
//! then that their peers are alive.

mod counters;
mod request;
mod state;

use crate::channel::{self, Channel, ChannelError};
use crate::envelope::{Envelope, Kind, FLAG_SYNC};
use nic_model::wait::Backoff;
use request::{wait, Op};
pub use counters::AdiCounters;
pub use request::MAX_REQUESTS;
use state::{Direct, PendingData, Posted, State};

/// Matches any source (same value as MPICH's `MPI_ANY_SOURCE`).
pub const ANY_SOURCE: i32 = -2;
/// Matches any tag (same value as MPICH's `MPI_ANY_TAG`).
pub const ANY_TAG: i32 = -1;
/// Largest tag a user may use (`MPI_TAG_UB`).
pub const TAG_UB: i32 = (1 << 30) - 1;
/// The channel used when `MPI_CHANNEL` names none: the fastest.
pub const DEFAULT_CHANNEL: &str = "bip";

/// A nonblocking operation of the engine. Valid from the call that made it until `test`/`wait`
/// reported it complete (or, after `request_free`, until it completes by itself).
pub type ReqId = u32;

/// How a send completes (buffered sends are a copy into the attached buffer followed by a
/// standard send, done by the MPI layer above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    /// Completes only once the receiver has matched the message.
    Synchronous,
    /// The receive is known to be posted (sent as standard).
    Ready,
}

/// What a completed operation reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Status {
    /// Sending rank (receives), or the destination (sends).
    pub source: i32,
    pub tag: i32,
    /// Bytes received (after truncation: the bytes written, which is the buffer's size).
    pub len: usize,
    /// The message was longer than the buffer: `len` bytes were written, the rest dropped.
    pub truncated: bool,
    /// The operation was cancelled.
    pub cancelled: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AdiError {
    #[error("rank {0} is out of range (the job has {1} ranks)")]
    BadRank(i32, usize),
    #[error("invalid request handle {0}")]
    BadRequest(ReqId),
    #[error("too many requests outstanding ({MAX_REQUESTS}); complete some before starting more")]
    TooManyRequests,
    #[error("rank {rank} is gone ({why}): ending this job")]
    PeerGone { rank: usize, why: String },
    #[error("channel: {0}")]
    Channel(String),
    #[error("no channel named {0:?}: use bip, fm or fm1")]
    UnknownChannel(String),
    #[error("cannot start MPI: {0}")]
    Start(String),
}

impl From<ChannelError> for AdiError {
    fn from(e: ChannelError) -> Self {
        match e {
            ChannelError::PeerGone { rank, why } => AdiError::PeerGone { rank, why },
            ChannelError::Transport(s) => AdiError::Channel(s),
        }
    }
}

pub type Result<T> = std::result::Result<T, AdiError>;

/// The engine: one per process.
pub struct Adi {
    ch: Box<dyn Channel>,
    st: State,
    rank: usize,
    size: usize,
    eager_max: usize,
    name: &'static str,
    /// The job this process made for itself when started without a launcher.
    _own_job: Option<nic_model::Job>,
}

/// A non-null pointer for an empty buffer (channels and slices want one).
#[inline]
fn nonnull<T>(p: *mut T) -> *mut T {
    if p.is_null() {
        std::ptr::NonNull::dangling().as_ptr()
    } else {
        p
    }
}

impl Adi {
    /// Starts the engine over the channel named by `MPI_CHANNEL` (default: the fastest). Run
    /// outside a job (no launcher), it starts a one-rank job of its own.
    pub fn init() -> Result<Adi> {
        let name = std::env::var("MPI_CHANNEL").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| DEFAULT_CHANNEL.into());
        let own_job = if std::env::var_os(nic_model::fabric::env::FABRIC_FD).is_none() {
            // The NIC reads the same variable; a bad name is its error to report, just below.
            let profile = std::env::var(nic_model::nic::PROFILE_ENV).unwrap_or_default();
            let modeled = nic_model::Profile::load(&profile).is_ok_and(|p| p.is_some());
            let job = nic_model::Job::new(&crate::job_config(1, modeled)).map_err(|e| AdiError::Start(e.to_string()))?;
            for (k, v) in job.env_for_self(0).map_err(|e| AdiError::Start(e.to_string()))? {
                std::env::set_var(k, v);
            }
            Some(job)
        } else {
            None
        };
        let ch = channel::open(&name).map_err(|e| match e {
            channel::OpenError::Unknown(n) => AdiError::UnknownChannel(n),
            e => AdiError::Start(e.to_string()),
        })?;
        Ok(Self::with_channel(ch, own_job))
    }

    /// Runs the engine over an open channel.
    pub fn with_channel(ch: Box<dyn Channel>, own_job: Option<nic_model::Job>) -> Adi {
        let (rank, size, eager_max, name) = (ch.rank(), ch.size(), ch.eager_max(), ch.name());
        tracing::debug!(target: "mpi", rank, size, channel = name, eager_max, "ADI up");
        Adi { st: State::new(size), ch, rank, size, eager_max, name, _own_job: own_job }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// `"bip"`, `"fm"` or `"fm1"`.
    pub fn channel_name(&self) -> &'static str {
        self.name
    }

    /// What the engine, its channel and the layers under it have counted so far.
    pub fn counters(&self) -> AdiCounters {
        AdiCounters { channel_name: self.name, rank: self.rank, channel: self.ch.counters(), adi: self.st.copied }
    }

    /// The eager limit in use: longer messages take the rendezvous protocol.
    pub fn eager_max(&self) -> usize {
        self.eager_max
    }

    fn check_dest(&self, dest: usize) -> Result<()> {
        if dest >= self.size {
            return Err(AdiError::BadRank(dest as i32, self.size));
        }
        Ok(())
    }

    /// Blocking send of `buf` to `dest` (returns when `buf` may be reused; a synchronous send
    /// returns once the receive has matched).
    #[inline]
    pub fn send(&mut self, buf: &[u8], dest: usize, tag: i32, ctx: u16, mode: SendMode) -> Result<()> {
        self.check_dest(dest)?;
        if mode != SendMode::Synchronous && buf.len() <= self.eager_max && self.st.queued[dest].is_empty() {
            let env = Envelope { kind: Kind::Eager, flags: 0, ctx, tag, sreq: 0, rreq: 0, len: buf.len() as u64 };
            if self.ch.send_control(dest, &env, buf, &mut self.st)? {
                if self.st.has_work() {
                    self.flush()?;
                }
                return Ok(());
            }
        }
        // SAFETY: `buf` outlives the request: we wait for it before returning.
        let r = unsafe { self.isend(buf.as_ptr(), buf.len(), dest, tag, ctx, mode)? };
        self.wait(r).map(|_| ())
    }

    /// Starts a send.
    /// # Safety
    /// `buf` is non-null and `len` bytes at it stay valid and unmodified until the request completes.
    pub unsafe fn isend(&mut self, buf: *const u8, len: usize, dest: usize, tag: i32, ctx: u16, mode: SendMode) -> Result<ReqId> {
        self.check_dest(dest)?;
        let id = self.st.reqs.alloc(Op::Send).ok_or(AdiError::TooManyRequests)?;
        let sreq = self.st.reqs.wire_id(id);
        let eager = len <= self.eager_max;
        let mut env = Envelope { kind: if eager { Kind::Eager } else { Kind::Rts }, flags: 0, ctx, tag, sreq, rreq: 0, len: len as u64 };
        let mut waiting = wait::DATA | wait::ENVELOPE;
        if mode == SendMode::Synchronous && eager {
            env.flags |= FLAG_SYNC;
            waiting |= wait::ACK;
        }
        let buf = nonnull(buf as *mut u8);
        let idle_route = self.st.queued[dest].is_empty();
        // A short message that wants no acknowledgement is complete once the channel took it.
        let fire_and_forget = eager && waiting & wait::ACK == 0;
        tracing::trace!(target: "mpi", dest, tag, len, eager, "isend");
        if fire_and_forget && idle_route {
            // Fast path: a short message the channel takes at once is complete on return.
            // SAFETY: `buf` is valid for `len` bytes (this function's contract).
            let payload = unsafe { std::slice::from_raw_parts(buf, len) };
            if self.ch.send_control(dest, &env, payload, &mut self.st)? {
                let r = self.st.reqs.get_mut(id).expect("just allocated");
                (r.buf, r.len, r.dest, r.env, r.done) = (buf, len, dest, env, true);
                r.status = Status { source: dest as i32, tag, len, truncated: false, cancelled: false };
                if self.st.has_work() {
                    self.flush()?;
                }
                return Ok(id);
            }
        }
        let r = self.st.reqs.get_mut(id).expect("just allocated");
        (r.buf, r.len, r.dest, r.env, r.waiting) = (buf, len, dest, env, waiting);
        r.status = Status { source: dest as i32, tag, len, truncated: false, cancelled: false };
        // (A fire-and-forget send that found the route busy was just refused: it queues.)
        if idle_route && !fire_and_forget && self.try_send_envelope(id)? {
            if self.st.has_work() {
                self.flush()?;
            }
        } else {
            self.queue_send(dest, id);
        }
        Ok(id)
    }

    fn queue_send(&mut self, dest: usize, id: u32) {
        if self.st.queued[dest].is_empty() {
            self.st.queued_dests += 1;
        }
        self.st.queued[dest].push_back(id);
    }

    /// Hands send `id`'s envelope (and eager data) to the channel; false if it cannot take it now.
    /// A rendezvous send first starts its data early where the channel can.
    fn try_send_envelope(&mut self, id: u32) -> Result<bool> {
        let r = self.st.reqs.get(id).expect("queued send is live");
        if r.env.kind == Kind::Rts && r.env.rreq == 0 {
            let (dest, buf, len, sreq) = (r.dest, r.buf, r.len, r.env.sreq);
            // SAFETY: the send's buffer stays valid until the send completes, which waits for
            // `DataDone::Send` (isend's contract).
            if let Some(ticket) = unsafe { self.ch.start_early_send(dest, sreq, buf, len)? } {
                self.st.reqs.get_mut(id).expect("live").env.rreq = ticket;
            }
        }
        let r = self.st.reqs.get(id).expect("queued send is live");
        let (dest, env) = (r.dest, r.env);
        let payload: &[u8] = if env.kind == Kind::Eager {
            // SAFETY: the send's buffer stays valid until the send completes (isend's contract).
            unsafe { std::slice::from_raw_parts(r.buf, r.len) }
        } else {
            &[]
        };
        if !self.ch.send_control(dest, &env, payload, &mut self.st)? {
            return Ok(false);
        }
        let sent = if env.kind == Kind::Eager { wait::DATA | wait::ENVELOPE } else { wait::ENVELOPE };
        self.st.send_progress(id, sent);
        Ok(true)
    }

    /// Blocking receive into `buf` from `src` (a rank or `ANY_SOURCE`) with `tag` (or `ANY_TAG`).
    #[inline]
    pub fn recv(&mut self, buf: &mut [u8], src: i32, tag: i32, ctx: u16) -> Result<Status> {
        if self.st.posted.is_empty() && self.st.unexpected.is_empty() && !self.st.has_work() {
            self.check_source(src)?;
            return self.recv_direct(buf, src, tag, ctx);
        }
        // SAFETY: `buf` outlives the request: we wait for it before returning.
        let r = unsafe { self.irecv(buf.as_mut_ptr(), buf.len(), src, tag, ctx)? };
        self.wait(r)
    }

    /// The fast path of `recv` while nothing is posted or unexpected: the receive is matched
    /// straight from the channel's arrivals, with no request and no queue.
    fn recv_direct(&mut self, buf: &mut [u8], src: i32, tag: i32, ctx: u16) -> Result<Status> {
        self.st.direct = Some(Direct { ctx, src, tag, buf: nonnull(buf.as_mut_ptr()), cap: buf.len(), status: None, done: false, became: None });
        let mut w = Waiter::new();
        let outcome = loop {
            if let Err(e) = self.progress() {
                break Err(e);
            }
            let d = self.st.direct.as_ref().expect("direct receive present");
            if d.done {
                break Ok(d.status.expect("a landed direct receive has matched"));
            }
            if let Some(id) = d.became {
                self.st.direct = None;
                return self.wait(id);
            }
            if d.status.is_none() && !self.st.unexpected.is_empty() {
                // Something arrived that the direct receive did not take (it could not): go
                // the usual way, which matches the unexpected queue first.
                self.st.direct = None;
                // SAFETY: `buf` outlives the request: we wait for it before returning.
                let r = unsafe { self.irecv(buf.as_mut_ptr(), buf.len(), src, tag, ctx)? };
                return self.wait(r);
            }
            if w.backoff.snooze() {
                if let Err(e) = self.ch.check_peers() {
                    break Err(e.into());
                }
            }
        };
        self.st.direct = None;
        outcome
    }

    /// Posts a receive.
    /// # Safety
    /// `buf` is non-null and `cap` bytes at it stay valid and untouched until the request completes.
    pub unsafe fn irecv(&mut self, buf: *mut u8, cap: usize, src: i32, tag: i32, ctx: u16) -> Result<ReqId> {
        self.check_source(src)?;
        let id = self.st.reqs.alloc(Op::Recv).ok_or(AdiError::TooManyRequests)?;
        let r = self.st.reqs.get_mut(id).expect("just allocated");
        r.buf = nonnull(buf);
        r.len = cap;
        r.ctx = ctx;
        r.src = src;
        r.tag = tag;
        if self.st.unexpected.is_empty() || !self.st.match_unexpected(id, ctx, src, tag) {
            self.st.posted.push_back(Posted { id, ctx, src, tag });
        }
        if self.st.has_work() {
            self.flush()?;
        }
        Ok(id)
    }

    /// Completes `r` if it is done (the id is then spent); drives progress once otherwise.
    #[inline]
    pub fn test(&mut self, r: ReqId) -> Result<Option<Status>> {
        if let Some(s) = self.take(r)? {
            return Ok(Some(s));
        }
        self.progress()?;
        self.take(r)
    }

    /// Whether `r` has completed, without driving progress or spending it.
    #[inline]
    pub fn is_complete(&self, r: ReqId) -> bool {
        self.st.reqs.get(r).is_some_and(|q| q.done)
    }

    /// Spends `r` if it is done.
    #[inline]
    fn take(&mut self, r: ReqId) -> Result<Option<Status>> {
        let q = self.st.reqs.get(r).ok_or(AdiError::BadRequest(r))?;
        if q.detached {
            return Err(AdiError::BadRequest(r));
        }
        if !q.done {
            return Ok(None);
        }
        let s = q.status;
        self.st.reqs.release(r);
        Ok(Some(s))
    }

    /// Waits for `r` and spends it.
    #[inline]
    pub fn wait(&mut self, r: ReqId) -> Result<Status> {
        if let Some(s) = self.take(r)? {
            return Ok(s);
        }
        let mut w = Waiter::new();
        loop {
            self.progress_or_idle(&mut w)?;
            if let Some(s) = self.take(r)? {
                return Ok(s);
            }
        }
    }

    /// Drives progress once; `true` if anything happened.
    #[inline]
    pub fn progress(&mut self) -> Result<bool> {
        let mut any = self.ch.poll(&mut self.st)?;
        if self.st.has_work() {
            any |= self.flush()?;
        }
        Ok(any)
    }

    /// For callers with their own waiting loop (wait-all/any/some): drives progress, and when
    /// nothing happened backs off (spin, then yield, then nap) and checks peers' liveness.
    #[inline]
    pub fn progress_or_idle(&mut self, w: &mut Waiter) -> Result<()> {
        if self.progress()? {
            w.backoff.reset();
        } else if w.backoff.snooze() {
            self.ch.check_peers()?;
        }
        Ok(())
    }

    /// Hands the channel what waits: CTSs for matched rendezvous receives, rendezvous data,
    /// replies, and queued sends. True if anything went.
    fn flush(&mut self) -> Result<bool> {
        let mut any = false;
        while let Some((src, ticket)) = self.st.drops.pop() {
            self.ch.drop_early(src, ticket)?;
        }
        while let Some(&p) = self.st.pending_cts.front() {
            let Some(r) = self.st.reqs.get(p.rreq) else {
                self.st.pending_cts.pop_front();
                continue;
            };
            let (buf, rwire) = (r.buf, self.st.reqs.wire_id(p.rreq));
            if p.early != 0 {
                // SAFETY: as below; the transfer ends with `DataDone::Recv`.
                unsafe { self.ch.post_early_recv(p.src, p.rreq, p.early, buf, p.len)? };
                self.st.pending_cts.pop_front();
                any = true;
                continue;
            }
            // SAFETY: the receive's buffer is valid for its capacity (>= p.len) until it
            // completes, which happens only on `DataDone::Recv` or the data landing.
            let Some(ticket) = (unsafe { self.ch.post_data_recv(p.src, p.rreq, buf, p.len)? }) else { break };
            self.st.pending_cts.pop_front();
            let cts = Envelope { kind: Kind::Cts, flags: 0, ctx: 0, tag: ticket as i32, sreq: p.sreq, rreq: rwire, len: p.len as u64 };
            self.st.outbox.push_back((p.src, cts));
            any = true;
        }
        while let Some(PendingData { dest, ticket, rreq, sreq, len }) = self.st.pending_data.pop_front() {
            let Some(r) = self.st.reqs.get(sreq) else { continue };
            // The receiver may take fewer bytes than announced (a shorter receive buffer).
            let (buf, want) = (r.buf, r.len.min(len));
            let cts = channel::Cts { ticket, rreq, sreq: self.st.reqs.wire_id(sreq) };
            // SAFETY: the send's buffer is valid until the send completes, which waits for
            // `DataDone::Send`.
            unsafe { self.ch.start_data_send(dest, cts, buf, want, &mut self.st)? };
            any = true;
        }
        let mut n = self.st.outbox.len();
        while n > 0 {
            n -= 1;
            let Some((dest, env)) = self.st.outbox.pop_front() else { break };
            if self.ch.send_control(dest, &env, &[], &mut self.st)? {
                any = true;
            } else {
                self.st.outbox.push_back((dest, env));
            }
        }
        if self.st.queued_dests > 0 {
            for dest in 0..self.size {
                while let Some(&id) = self.st.queued[dest].front() {
                    if !self.try_send_envelope(id)? {
                        break;
                    }
                    any = true;
                    self.st.queued[dest].pop_front();
                    if self.st.queued[dest].is_empty() {
                        self.st.queued_dests -= 1;
                    }
                }
            }
        }
        Ok(any)
    }

    /// `MPI_Request_free`: the request completes by itself, and its id is spent now.
    pub fn request_free(&mut self, r: ReqId) -> Result<()> {
        let q = self.st.reqs.get_mut(r).ok_or(AdiError::BadRequest(r))?;
        if q.detached {
            return Err(AdiError::BadRequest(r));
        }
        if q.done {
            self.st.reqs.release(r);
        } else {
            q.detached = true;
        }
        Ok(())
    }

    /// `MPI_Cancel`: tries to cancel; the request must still be completed with `test`/`wait`,
    /// whose status says whether it was cancelled.
    pub fn cancel(&mut self, r: ReqId) -> Result<()> {
        let q = *self.st.reqs.get(r).ok_or(AdiError::BadRequest(r))?;
        match q.op {
            Op::Recv => {
                if !q.done && self.st.unpost(r) {
                    let q = self.st.reqs.get_mut(r).unwrap();
                    q.status = Status { source: ANY_SOURCE, tag: ANY_TAG, len: 0, truncated: false, cancelled: true };
                    self.st.finish(r);
                }
            }
            Op::Send => {
                if q.status.cancelled || q.waiting & wait::CANCEL != 0 {
                    return Ok(());
                }
                // A queued send whose data has not started leaves at once; one whose early
                // data is already parked at the receiver is cancelled there.
                if q.env.rreq == 0 && self.st.unqueue(q.dest, r) {
                    // Never left this process.
                    let q = self.st.reqs.get_mut(r).unwrap();
                    q.status.cancelled = true;
                    q.waiting = 0;
                    self.st.finish(r);
                    return Ok(());
                }
                // Ask the receiver to drop it if it is still unmatched there.
                let q = self.st.reqs.get_mut(r).unwrap();
                q.waiting |= wait::CANCEL;
                q.done = false;
                let mut env = Envelope::new(Kind::CancelReq);
                env.sreq = q.env.sreq;
                env.ctx = q.env.ctx;
                env.tag = q.env.tag;
                self.st.outbox.push_back((q.dest, env));
                self.flush()?;
            }
            Op::Free => return Err(AdiError::BadRequest(r)),
        }
        Ok(())
    }

    /// `MPI_Iprobe`.
    pub fn iprobe(&mut self, src: i32, tag: i32, ctx: u16) -> Result<Option<Status>> {
        self.check_source(src)?;
        if let Some(s) = self.st.probe(ctx, src, tag) {
            return Ok(Some(s));
        }
        self.progress()?;
        Ok(self.st.probe(ctx, src, tag))
    }

    /// `MPI_Probe`.
    pub fn probe(&mut self, src: i32, tag: i32, ctx: u16) -> Result<Status> {
        self.check_source(src)?;
        let mut w = Waiter::new();
        loop {
            if let Some(s) = self.st.probe(ctx, src, tag) {
                return Ok(s);
            }
            self.progress_or_idle(&mut w)?;
        }
    }

    fn check_source(&self, src: i32) -> Result<()> {
        if src != ANY_SOURCE && (src < 0 || src as usize >= self.size) {
            return Err(AdiError::BadRank(src, self.size));
        }
        Ok(())
    }

    /// Completes outstanding sends, then leaves the job cleanly.
    pub fn finalize(mut self) -> Result<()> {
        let mut w = Waiter::new();
        while self.st.has_work() || self.st.reqs.busy_sends().next().is_some() {
            self.progress_or_idle(&mut w)?;
        }
        tracing::debug!(target: "mpi", rank = self.rank, "ADI finalize");
        self.ch.finalize()?;
        Ok(())
    }
}

/// The state of a caller's waiting loop (see [`Adi::progress_or_idle`]).
#[derive(Default)]
pub struct Waiter {
    backoff: Backoff,
}

impl Waiter {
    pub fn new() -> Self {
        Waiter::default()
    }
}
