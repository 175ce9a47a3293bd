//! The ADI point-to-point engine: MPI's send and receive semantics over any [`Channel`].
//!
//! Protocols, chosen by message length against the channel's eager limit:
//! - **short/eager** (`len <= eager_max`): the data travels inside the control message and
//!   lands in the posted buffer, or in an unexpected-message buffer until a receive matches.
//!   A synchronous send asks for an acknowledgement of the match.
//! - **rendezvous**: the stack's one rendezvous ([`Channel::export`], [`Channel::pull`]): the
//!   sender exports its buffer and announces the message with the region's key (RTS); once a
//!   receive matches, the receiver reads the region straight into the posted buffer, and the
//!   channel tells both ends when it is over. Nothing here waits for a reply before the data
//!   moves, and the RTS is the only control message of the ADI's own.
//!
//! A send the channel cannot take at once (no credit, full route) waits in a per-destination
//! queue, behind which later sends to the same destination line up, so MPI order holds and
//! `isend` never blocks.
//!
//! Everything here is nonblocking: the calls that wait (blocking sends and receives, `wait`,
//! `probe`, finalize) are the progress engine's ([`crate::engine::Engine`]), which drives this
//! one, and every other operation of the library, from one place.

mod counters;
mod request;
mod state;

use crate::channel::{self, Channel, ChannelError};
use crate::envelope::{Envelope, Kind, FLAG_SYNC};
pub use counters::AdiCounters;
use request::{wait, Op};
pub use request::{Attachment, MAX_REQUESTS};
use state::{Direct, Posted, State};

/// Matches any source (same value as MPICH's `MPI_ANY_SOURCE`).
pub const ANY_SOURCE: i32 = -2;
/// Matches any tag (same value as MPICH's `MPI_ANY_TAG`).
pub const ANY_TAG: i32 = -1;
/// Largest tag a user may use (`MPI_TAG_UB`).
pub const TAG_UB: i32 = (1 << 30) - 1;
/// The channel used when `MPI_CHANNEL` names none: the fastest.
pub const DEFAULT_CHANNEL: &str = "bip";
/// [`Status::error`] of a receive whose sender's region was refused (nothing was written).
pub const ERR_REFUSED: i32 = -1;

/// A request of the engine: valid from the call that made it until it was retired (or, after
/// `request_free`, until it completes by itself).
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
    /// 0, or why the operation failed: [`ERR_REFUSED`], or a positive code that whoever
    /// completed an external request gave (the MPI library: an error class).
    pub error: i32,
}

/// Where a request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Running.
    Pending,
    /// Complete; retiring it gives its status.
    Complete,
    /// A persistent request between runs.
    Inactive,
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
    /// Splitting the engine into lanes ([`crate::Engine::into_lanes`]) was refused.
    #[error("cannot make lanes: {0}")]
    Lanes(String),
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

/// The point-to-point engine: one per process, inside the progress engine.
pub struct Adi {
    ch: Box<dyn Channel>,
    st: State,
    rank: usize,
    /// The ranks of the job (`0..size`).
    size: usize,
    /// Every rank this process can reach: the job's, then peers of other jobs met later
    /// ([`Adi::add_peers`]).
    reach: usize,
    /// Whether the channel is wrapped with peers of other jobs.
    joined: bool,
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
        let name = std::env::var("MPI_CHANNEL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_CHANNEL.into());
        let launched = std::env::var_os(nic_model::fabric::env::FABRIC_FD).is_some()
            || nic_model::net::launcher::present();
        let own_job = if !launched {
            let job = nic_model::Job::new(&crate::job_config(1, crate::profile_is_modeled()))
                .map_err(|e| AdiError::Start(e.to_string()))?;
            for (k, v) in job
                .env_for_self(0)
                .map_err(|e| AdiError::Start(e.to_string()))?
            {
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
        Adi {
            st: State::new(size),
            ch,
            rank,
            size,
            reach: size,
            joined: false,
            eager_max,
            name,
            _own_job: own_job,
        }
    }

    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The ranks of the job this process was started in (peers of other jobs not counted).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Every engine rank this process can name: the job's, then peers of other jobs.
    pub fn reach(&self) -> usize {
        self.reach
    }

    /// Adds connected peers of other jobs (`channel::foreign`): each stream becomes the next
    /// engine rank past the ones in use; returns them, in the streams' order. The job's
    /// channel is wrapped at the first call only.
    pub fn add_peers(&mut self, socks: Vec<std::net::TcpStream>) -> Result<Vec<usize>> {
        if !self.joined {
            channel::foreign::Joined::wrap(&mut self.ch);
            self.joined = true;
        }
        let ranks = self.ch.add_peers(socks)?;
        self.reach = self.ch.size();
        while self.st.queued.len() < self.reach {
            self.st.queued.push(std::collections::VecDeque::new());
        }
        Ok(ranks)
    }

    /// Says goodbye to peers of other jobs (after what was sent to them) and closes their
    /// connections; their engine ranks are not used again.
    pub fn remove_peers(&mut self, ranks: &[usize]) {
        let ranks: Vec<usize> = ranks.iter().copied().filter(|&r| r >= self.size).collect();
        if self.joined && !ranks.is_empty() {
            self.ch.remove_peers(&ranks);
        }
    }

    /// `"bip"`, `"fm"` or `"fm1"`.
    pub fn channel_name(&self) -> &'static str {
        self.name
    }

    /// What the engine, its channel and the layers under it have counted so far.
    pub fn counters(&self) -> AdiCounters {
        AdiCounters {
            channel_name: self.name,
            rank: self.rank,
            channel: self.ch.counters(),
            adi: self.st.copied,
        }
    }

    /// The device's memory operations under the channel, for one-sided communication's
    /// deliberate updates and reads; `None` when the channel offers none (`fm`, `fm1`).
    pub fn remote_memory(&mut self) -> Option<&mut dyn crate::remote::RemoteMemory> {
        self.ch.remote_memory()
    }

    /// The eager limit in use: longer messages take the rendezvous protocol.
    pub fn eager_max(&self) -> usize {
        self.eager_max
    }

    #[inline(always)]
    fn check_dest(&mut self, dest: usize) -> Result<()> {
        if dest < self.reach {
            return Ok(());
        }
        self.check_dest_grown(dest)
    }

    /// [`Adi::check_dest`] for a rank past the engine's reach: another lane may have added
    /// it to the shared channel since (kept off the sends' fast path).
    #[cold]
    #[inline(never)]
    fn check_dest_grown(&mut self, dest: usize) -> Result<()> {
        self.grow_reach();
        if dest >= self.reach {
            return Err(AdiError::BadRank(dest as i32, self.reach));
        }
        Ok(())
    }

    fn check_source(&self, src: i32) -> Result<()> {
        if src != ANY_SOURCE && (src < 0 || src as usize >= self.reach) {
            // A lane learns of peers that another lane added from their shared channel.
            let reach = self.ch.size().max(self.reach);
            if src < 0 || src as usize >= reach {
                return Err(AdiError::BadRank(src, reach));
            }
        }
        Ok(())
    }

    /// Takes in peers of other jobs that another lane added to the shared channel
    /// ([`crate::lanes`]): a lane's engine ranks grow with its channel's.
    #[cold]
    fn grow_reach(&mut self) {
        let reach = self.ch.size();
        if reach > self.reach {
            self.reach = reach;
            while self.st.queued.len() < reach {
                self.st.queued.push(std::collections::VecDeque::new());
            }
        }
    }

    // ---- Sends ----------------------------------------------------------------------

    /// The fast path of a blocking send: a short, non-synchronous message the channel takes
    /// at once, with nothing queued before it. `Ok(true)` when it is sent (and `buf` may be
    /// reused); `Ok(false)` when nothing was done and the caller should `isend` and wait.
    #[inline]
    pub fn send_now(
        &mut self,
        buf: &[u8],
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
    ) -> Result<bool> {
        self.check_dest(dest)?;
        if mode == SendMode::Synchronous
            || buf.len() > self.eager_max
            || !self.st.queued[dest].is_empty()
        {
            return Ok(false);
        }
        let env = Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            tag,
            sreq: 0,
            rreq: 0,
            len: buf.len() as u64,
        };
        if !self.ch.send_control(dest, &env, buf, &mut self.st)? {
            return Ok(false);
        }
        if self.st.has_work() {
            self.flush()?;
        }
        Ok(true)
    }

    /// Starts a send for the layer above's `owner`.
    /// # Safety
    /// `buf` is non-null and `len` bytes at it stay valid and unmodified until the request completes.
    #[allow(clippy::too_many_arguments)] // One argument per field of an MPI send (c-abi's call).
    pub unsafe fn isend(
        &mut self,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
        owner: u32,
    ) -> Result<ReqId> {
        if dest < self.reach
            && len <= self.eager_max
            && mode != SendMode::Synchronous
            && self.st.queued[dest].is_empty()
        {
            if let Some((id, _)) = self.st.reqs.alloc_mut(Op::Send) {
                // SAFETY: the caller's contract is passed on.
                return unsafe { self.isend_eager(id, buf, len, dest, tag, ctx, owner) };
            }
        }
        // SAFETY: the caller's contract is passed on.
        unsafe { self.isend_attached(buf, len, dest, tag, ctx, mode, owner, None) }
    }

    /// The shortest path of a send: a short message, standard or ready, to a route with
    /// nothing queued, in new request `id` (no attachment). The request is filled in one go,
    /// born complete, and the envelope and data are gathered into one packet; only if the
    /// channel refuses (no room on the route) does it queue like any other send.
    ///
    /// # Safety
    /// As for [`Adi::isend`].
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn isend_eager(
        &mut self,
        id: u32,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        ctx: u16,
        owner: u32,
    ) -> Result<ReqId> {
        let buf = nonnull(buf as *mut u8);
        let r = self.st.reqs.slot_mut(id);
        let env = Envelope {
            kind: Kind::Eager,
            flags: 0,
            ctx,
            tag,
            sreq: request::wire_name(id, r.gen),
            rreq: 0,
            len: len as u64,
        };
        (r.owner, r.buf, r.len, r.dest, r.env, r.done) = (owner, buf, len, dest, env, true);
        r.status = Status {
            source: dest as i32,
            tag,
            len,
            ..Status::default()
        };
        // SAFETY: `buf` is valid for `len` bytes (this function's contract).
        let payload = unsafe { std::slice::from_raw_parts(buf, len) };
        if self.ch.send_control(dest, &env, payload, &mut self.st)? {
            if self.st.has_work() {
                self.flush()?;
            }
        } else {
            let r = self.st.reqs.slot_mut(id);
            (r.waiting, r.done) = (wait::DATA | wait::ENVELOPE, false);
            self.queue_send(dest, id);
        }
        Ok(id)
    }

    /// As [`Adi::isend`], with what the layer above keeps with the request (attached before
    /// the send can complete).
    /// # Safety
    /// As for [`Adi::isend`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isend_attached(
        &mut self,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
        owner: u32,
        attachment: Option<Box<dyn Attachment>>,
    ) -> Result<ReqId> {
        self.check_dest(dest)?;
        let (id, r) = self
            .st
            .reqs
            .alloc_mut(Op::Send)
            .ok_or(AdiError::TooManyRequests)?;
        r.owner = owner;
        if attachment.is_some() {
            r.attachment = attachment;
        }
        // SAFETY: the caller's contract is passed on. (After a failure the request stays
        // allocated: queues may name it, and the job is ending.)
        unsafe { self.start_send(id, buf, len, dest, tag, ctx, mode) }?;
        Ok(id)
    }

    /// Runs a send in request `id` (new, or a persistent one being started).
    ///
    /// # Safety
    /// As for [`Adi::isend`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn start_send(
        &mut self,
        id: u32,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
    ) -> Result<()> {
        let eager = len <= self.eager_max;
        let sync = eager && mode == SendMode::Synchronous;
        // A short message that wants no acknowledgement is complete once the channel took it.
        let fire_and_forget = eager && !sync;
        let buf = nonnull(buf as *mut u8);
        let idle_route = self.st.queued[dest].is_empty();
        tracing::trace!(target: "mpi", dest, tag, len, eager, "isend");
        // The request is filled in one go, and born complete when it will go at once (nobody
        // looks at it before the channel answers: no reply can name a send not yet sent).
        let r = self.st.reqs.get_mut(id).expect("a live request");
        let env = Envelope {
            kind: if eager { Kind::Eager } else { Kind::Rts },
            flags: if sync { FLAG_SYNC } else { 0 },
            ctx,
            tag,
            sreq: request::wire_name(id, r.gen),
            rreq: 0,
            len: len as u64,
        };
        let born_complete = fire_and_forget && idle_route;
        (r.op, r.buf, r.len, r.dest, r.env) = (Op::Send, buf, len, dest, env);
        (r.waiting, r.done) = if born_complete {
            (0, true)
        } else {
            (
                wait::DATA | wait::ENVELOPE | if sync { wait::ACK } else { 0 },
                false,
            )
        };
        r.status = Status {
            source: dest as i32,
            tag,
            len,
            ..Status::default()
        };
        let attached = r.attachment.is_some();
        if born_complete {
            // Fast path: envelope and data gathered into one packet, nothing else to do.
            // SAFETY: `buf` is valid for `len` bytes (this function's contract).
            let payload = unsafe { std::slice::from_raw_parts(buf, len) };
            if self.ch.send_control(dest, &env, payload, &mut self.st)? {
                if attached {
                    self.st.finish(id);
                }
                if self.st.has_work() {
                    self.flush()?;
                }
                return Ok(());
            }
            // Refused (no room on the route): it queues like any other.
            let r = self.st.reqs.get_mut(id).expect("a live request");
            (r.waiting, r.done) = (wait::DATA | wait::ENVELOPE, false);
        }
        if idle_route && !fire_and_forget && self.try_send_envelope(id)? {
            if self.st.has_work() {
                self.flush()?;
            }
        } else {
            self.queue_send(dest, id);
        }
        Ok(())
    }

    fn queue_send(&mut self, dest: usize, id: u32) {
        if self.st.queued[dest].is_empty() {
            self.st.queued_dests += 1;
        }
        self.st.queued[dest].push_back(id);
    }

    /// Hands send `id`'s envelope (and eager data, or the region of a rendezvous) to the
    /// channel; false if it cannot take it now. A rendezvous send exports its buffer first.
    fn try_send_envelope(&mut self, id: u32) -> Result<bool> {
        let r = self.st.reqs.get(id).expect("queued send is live");
        let (dest, env, buf, len, region) = (r.dest, r.env, r.buf, r.len, r.region);
        if env.kind == Kind::Rts {
            let key = match region {
                Some(key) => key,
                None => {
                    // SAFETY: the send's buffer stays valid and unmodified until the send
                    // completes, which waits for the channel's `DataDone::Send` (isend's
                    // contract).
                    let key = unsafe { self.ch.export(dest, buf, len, env.sreq)? };
                    self.st.reqs.get_mut(id).expect("live").region = Some(key);
                    key
                }
            };
            if !self
                .ch
                .send_control(dest, &env, &key.emit(), &mut self.st)?
            {
                return Ok(false);
            }
            self.st.send_progress(id, wait::ENVELOPE);
            return Ok(true);
        }
        // SAFETY: the send's buffer stays valid until the send completes (isend's contract).
        let payload = unsafe { std::slice::from_raw_parts(buf, len) };
        if !self.ch.send_control(dest, &env, payload, &mut self.st)? {
            return Ok(false);
        }
        self.st.send_progress(id, wait::DATA | wait::ENVELOPE);
        Ok(true)
    }

    // ---- Receives -------------------------------------------------------------------

    /// Posts a receive for the layer above's `owner`.
    /// # Safety
    /// `buf` is non-null and `cap` bytes at it stay valid and untouched until the request completes.
    pub unsafe fn irecv(
        &mut self,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
        ctx: u16,
        owner: u32,
    ) -> Result<ReqId> {
        if (src == ANY_SOURCE || (src >= 0 && (src as usize) < self.reach))
            && self.st.unexpected.is_empty()
        {
            // The shortest path: nothing has arrived to match, so the receive is posted.
            let Some((id, r)) = self.st.reqs.alloc_mut(Op::Recv) else {
                return Err(AdiError::TooManyRequests);
            };
            (r.owner, r.buf, r.len, r.ctx, r.src, r.tag) =
                (owner, nonnull(buf), cap, ctx, src, tag);
            self.st.posted.push_back(Posted { id, ctx, src, tag });
            return Ok(id);
        }
        // SAFETY: the caller's contract is passed on.
        unsafe { self.irecv_attached(buf, cap, src, tag, ctx, owner, None) }
    }

    /// As [`Adi::irecv`], with what the layer above keeps with the request (attached before
    /// the receive can complete: a staging buffer to unpack, say).
    /// # Safety
    /// As for [`Adi::irecv`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn irecv_attached(
        &mut self,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
        ctx: u16,
        owner: u32,
        attachment: Option<Box<dyn Attachment>>,
    ) -> Result<ReqId> {
        self.check_source(src)?;
        let (id, r) = self
            .st
            .reqs
            .alloc_mut(Op::Recv)
            .ok_or(AdiError::TooManyRequests)?;
        r.owner = owner;
        if attachment.is_some() {
            r.attachment = attachment;
        }
        (r.buf, r.len, r.ctx, r.src, r.tag) = (nonnull(buf), cap, ctx, src, tag);
        self.post_recv(id, ctx, src, tag)?;
        Ok(id)
    }

    /// Runs a receive in request `id` (new, or a persistent one being started).
    ///
    /// # Safety
    /// As for [`Adi::irecv`].
    unsafe fn start_recv(
        &mut self,
        id: u32,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
        ctx: u16,
    ) -> Result<()> {
        let r = self.st.reqs.get_mut(id).expect("a live request");
        (r.op, r.buf, r.len, r.ctx, r.src, r.tag, r.done) =
            (Op::Recv, nonnull(buf), cap, ctx, src, tag, false);
        r.status = Status::default();
        self.post_recv(id, ctx, src, tag)
    }

    /// Matches receive `id` against the unexpected messages, or posts it. Nothing is flushed
    /// unless matching made work (an acknowledgement, a read to start): posting a receive
    /// while nothing has arrived is a push onto the posted queue.
    #[inline]
    fn post_recv(&mut self, id: u32, ctx: u16, src: i32, tag: i32) -> Result<()> {
        if self.st.unexpected.is_empty() {
            self.st.posted.push_back(Posted { id, ctx, src, tag });
            return Ok(());
        }
        if !self.st.match_unexpected(id, ctx, src, tag) {
            self.st.posted.push_back(Posted { id, ctx, src, tag });
        } else if self.st.has_work() {
            self.flush()?;
        }
        Ok(())
    }

    /// Whether a blocking receive may take the direct path: nothing posted, unexpected or
    /// queued, so that a message can be matched straight from the channel's arrivals.
    #[inline]
    pub fn direct_possible(&self) -> bool {
        self.st.posted.is_empty() && self.st.unexpected.is_empty() && !self.st.has_work()
    }

    /// Starts the direct path of a blocking receive (see [`Adi::direct_possible`]): the
    /// receive is matched in place of the posted queue, with no request.
    ///
    /// # Safety
    /// `buf` is valid for `cap` bytes of writing until [`Adi::direct_end`].
    pub unsafe fn direct_begin(
        &mut self,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
        ctx: u16,
    ) -> Result<()> {
        self.check_source(src)?;
        self.st.direct = Some(Direct {
            ctx,
            src,
            tag,
            buf: nonnull(buf),
            cap,
            status: None,
            done: false,
            became: None,
        });
        Ok(())
    }

    /// Where the direct receive stands.
    #[inline]
    pub fn direct_state(&self) -> DirectState {
        let d = self
            .st
            .direct
            .as_ref()
            .expect("a direct receive is under way");
        if d.done {
            DirectState::Done(d.status.expect("a landed direct receive has matched"))
        } else if let Some(id) = d.became {
            DirectState::Became(id)
        } else if d.status.is_none() && !self.st.unexpected.is_empty() {
            // Something arrived that the direct receive did not take (it could not): it must
            // go the usual way, which matches the unexpected queue first.
            DirectState::Abandon
        } else {
            DirectState::Waiting
        }
    }

    /// Ends the direct receive.
    #[inline]
    pub fn direct_end(&mut self) {
        self.st.direct = None;
    }

    // ---- Requests ---------------------------------------------------------------------

    /// A request born complete with `status` (a send to `MPI_PROC_NULL`, a buffered send).
    pub fn completed(&mut self, status: Status, owner: u32) -> Result<ReqId> {
        let id = self
            .st
            .reqs
            .alloc(Op::Idle)
            .ok_or(AdiError::TooManyRequests)?;
        let r = self.st.reqs.get_mut(id).expect("just allocated");
        (r.status, r.owner, r.done) = (status, owner, true);
        Ok(id)
    }

    /// A request completed later by [`Adi::complete_external`] (a nonblocking collective).
    pub fn external(&mut self, owner: u32) -> Result<ReqId> {
        let id = self
            .st
            .reqs
            .alloc(Op::External)
            .ok_or(AdiError::TooManyRequests)?;
        self.st.reqs.get_mut(id).expect("just allocated").owner = owner;
        Ok(id)
    }

    /// Completes external request `id` with `status`.
    pub fn complete_external(&mut self, id: ReqId, status: Status) {
        if let Some(r) = self
            .st
            .reqs
            .get_mut(id)
            .filter(|r| r.op == Op::External && !r.done)
        {
            r.status = status;
            self.st.finish(id);
        }
    }

    /// A persistent request, inactive until started, with what the layer above keeps for its
    /// runs.
    pub fn persistent(&mut self, owner: u32, attachment: Box<dyn Attachment>) -> Result<ReqId> {
        let id = self
            .st
            .reqs
            .alloc(Op::Idle)
            .ok_or(AdiError::TooManyRequests)?;
        let r = self.st.reqs.get_mut(id).expect("just allocated");
        (r.persistent, r.owner, r.attachment) = (true, owner, Some(attachment));
        Ok(id)
    }

    /// Starts a send in inactive persistent request `id`.
    /// # Safety
    /// As for [`Adi::isend`].
    #[allow(clippy::too_many_arguments)] // The request, then one argument per field of an MPI send.
    pub unsafe fn start_persistent_send(
        &mut self,
        id: ReqId,
        buf: *const u8,
        len: usize,
        dest: usize,
        tag: i32,
        ctx: u16,
        mode: SendMode,
    ) -> Result<()> {
        self.check_dest(dest)?;
        self.check_inactive(id)?;
        // SAFETY: the caller's contract is passed on.
        unsafe { self.start_send(id, buf, len, dest, tag, ctx, mode) }
    }

    /// Starts a receive in inactive persistent request `id`.
    /// # Safety
    /// As for [`Adi::irecv`].
    pub unsafe fn start_persistent_recv(
        &mut self,
        id: ReqId,
        buf: *mut u8,
        cap: usize,
        src: i32,
        tag: i32,
        ctx: u16,
    ) -> Result<()> {
        self.check_source(src)?;
        self.check_inactive(id)?;
        // SAFETY: the caller's contract is passed on.
        unsafe { self.start_recv(id, buf, cap, src, tag, ctx) }
    }

    /// Starts inactive persistent request `id` as an external request: the layer above
    /// completes this run with [`Adi::complete_external`] (a persistent collective, whose
    /// operation the progress engine advances: `Engine::start_persistent`).
    pub fn start_persistent_external(&mut self, id: ReqId) -> Result<()> {
        self.check_inactive(id)?;
        self.st.reqs.get_mut(id).expect("checked live").op = Op::External;
        Ok(())
    }

    /// Makes inactive persistent request `id` complete at once with `status` (a run to
    /// `MPI_PROC_NULL`, a buffered send).
    pub fn start_persistent_done(&mut self, id: ReqId, status: Status) -> Result<()> {
        self.check_inactive(id)?;
        let r = self.st.reqs.get_mut(id).expect("checked live");
        (r.status, r.done) = (status, true);
        Ok(())
    }

    fn check_inactive(&self, id: ReqId) -> Result<()> {
        match self.st.reqs.get(id) {
            Some(r) if r.persistent && r.op == Op::Idle && !r.done => Ok(()),
            _ => Err(AdiError::BadRequest(id)),
        }
    }

    /// Where request `id` stands; `None` if it is not a live request.
    #[inline]
    pub fn standing(&self, id: ReqId) -> Option<Standing> {
        let r = self.st.reqs.get(id)?;
        Some(if r.done {
            Standing::Complete
        } else if r.persistent && r.op == Op::Idle {
            Standing::Inactive
        } else {
            Standing::Pending
        })
    }

    /// The generation of request `id`: the layer above puts its low bits in its handles, so
    /// that a stale handle is refused ([`Adi::by_handle`]).
    #[inline]
    pub fn generation(&self, id: ReqId) -> Option<u8> {
        self.st.reqs.get(id).map(|r| r.gen)
    }

    /// The live request with index `index` whose generation ends in `gen` (`gen_bits` bits).
    #[inline]
    pub fn by_handle(&self, index: u32, gen: u32, gen_bits: u32) -> Option<ReqId> {
        self.st.reqs.by_handle(index, gen, gen_bits)
    }

    /// Requests allocated now (live, complete or inactive).
    pub fn requests_live(&self) -> usize {
        self.st.reqs.live()
    }

    /// Whether request `id` is running (neither complete nor an inactive persistent request);
    /// false for an id that names no live request.
    #[inline]
    pub fn is_pending(&self, id: ReqId) -> bool {
        self.st
            .reqs
            .get(id)
            .is_some_and(|r| !(r.done || r.persistent && r.op == Op::Idle))
    }

    /// The batch end of the completion calls: retires `id` if it is complete and carries
    /// nothing of the layer above's, handing over its status, owner and whether it is
    /// persistent (then it becomes inactive). `None` when it needs [`Adi::retire`] (running,
    /// inactive, attached, freed, or no live request): nothing was done.
    #[inline]
    pub fn retire_plain(&mut self, id: ReqId) -> Option<(Status, u32, bool)> {
        let q = self.st.reqs.get_mut(id)?;
        if !q.done || q.detached || q.attachment.is_some() {
            return None;
        }
        let (status, owner, persistent) = (q.status, q.owner, q.persistent);
        if persistent {
            (q.op, q.done, q.status) = (Op::Idle, false, Status::default());
        } else {
            self.st.reqs.release_plain(id);
        }
        Some((status, owner, persistent))
    }

    /// Whether `id` has completed, without driving progress or retiring it.
    #[inline]
    pub fn is_complete(&self, id: ReqId) -> bool {
        self.st.reqs.get(id).is_some_and(|q| q.done)
    }

    /// The layer above's word on request `id`.
    #[inline]
    pub fn owner(&self, id: ReqId) -> Option<u32> {
        self.st.reqs.get(id).map(|r| r.owner)
    }

    /// Whether `id` is persistent.
    pub fn is_persistent(&self, id: ReqId) -> bool {
        self.st.reqs.get(id).is_some_and(|r| r.persistent)
    }

    /// The status of a complete request, without retiring it (`MPI_Request_get_status`).
    pub fn peek_status(&self, id: ReqId) -> Option<Status> {
        self.st.reqs.get(id).filter(|r| r.done).map(|r| r.status)
    }

    /// What the layer above attached to request `id`.
    pub fn attachment(&mut self, id: ReqId) -> Option<&mut (dyn Attachment + 'static)> {
        self.st.reqs.get_mut(id)?.attachment.as_deref_mut()
    }

    /// Attaches what the layer above keeps with request `id` until it is released.
    pub fn attach(&mut self, id: ReqId, a: Box<dyn Attachment>) {
        if let Some(r) = self.st.reqs.get_mut(id) {
            r.attachment = Some(a);
        }
    }

    /// Retires `id` if it is complete: frees it (the id is spent), or makes a persistent one
    /// inactive. `Ok(None)` while it runs.
    #[inline]
    pub fn take(&mut self, id: ReqId) -> Result<Option<Status>> {
        let q = self.st.reqs.get_mut(id).ok_or(AdiError::BadRequest(id))?;
        if q.detached {
            return Err(AdiError::BadRequest(id));
        }
        if !q.done {
            return Ok(None);
        }
        let s = q.status;
        if q.persistent {
            (q.op, q.done, q.status) = (Op::Idle, false, Status::default());
        } else {
            self.st.reqs.release(id);
        }
        Ok(Some(s))
    }

    /// Retires `id` if it is complete, handing over everything the layer above keeps with it
    /// in one look: its status, its owner, whether it is persistent (then it becomes inactive
    /// and keeps its attachment) and, for a request that is freed, its attachment. `Ok(None)`
    /// while it runs (or is inactive).
    #[inline]
    pub fn retire(&mut self, id: ReqId) -> Result<Option<Retired>> {
        let q = self.st.reqs.get_mut(id).ok_or(AdiError::BadRequest(id))?;
        if q.detached {
            return Err(AdiError::BadRequest(id));
        }
        if !q.done {
            return Ok(None);
        }
        let (status, owner, persistent) = (q.status, q.owner, q.persistent);
        if persistent {
            (q.op, q.done, q.status) = (Op::Idle, false, Status::default());
            return Ok(Some(Retired {
                status,
                owner,
                persistent,
                attachment: None,
            }));
        }
        let attachment = q.attachment.take();
        self.st.reqs.release(id);
        Ok(Some(Retired {
            status,
            owner,
            persistent,
            attachment,
        }))
    }

    /// `MPI_Request_free`: the request completes by itself (then it and its attachment are
    /// released), and its id is spent now.
    pub fn request_free(&mut self, id: ReqId) -> Result<()> {
        let q = self.st.reqs.get_mut(id).ok_or(AdiError::BadRequest(id))?;
        if q.detached {
            return Err(AdiError::BadRequest(id));
        }
        let idle = q.persistent && q.op == Op::Idle;
        if q.done || idle {
            self.st.reqs.release(id);
        } else {
            q.detached = true;
        }
        Ok(())
    }

    /// `MPI_Cancel`: tries to cancel; the request must still be completed with `test`/`wait`,
    /// whose status says whether it was cancelled.
    pub fn cancel(&mut self, id: ReqId) -> Result<()> {
        let q = self.st.reqs.get(id).ok_or(AdiError::BadRequest(id))?;
        let (op, done, cancelled, waiting, region, dest, env) = (
            q.op,
            q.done,
            q.status.cancelled,
            q.waiting,
            q.region,
            q.dest,
            q.env,
        );
        match op {
            Op::Recv => {
                if !done && self.st.unpost(id) {
                    let q = self.st.reqs.get_mut(id).unwrap();
                    q.status = Status {
                        source: ANY_SOURCE,
                        tag: ANY_TAG,
                        cancelled: true,
                        ..Status::default()
                    };
                    self.st.finish(id);
                }
            }
            Op::Send => {
                // A short send is complete once its data left; it may still be unmatched at
                // the receiver, and cancelling it asks there (as MPICH does).
                if cancelled || waiting & wait::CANCEL != 0 {
                    return Ok(());
                }
                if self.st.unqueue(dest, id) {
                    // Its envelope never left this process.
                    if let Some(key) = region {
                        self.ch.revoke(key)?;
                    }
                    let q = self.st.reqs.get_mut(id).unwrap();
                    (q.status.cancelled, q.waiting, q.region) = (true, 0, None);
                    self.st.finish(id);
                    return Ok(());
                }
                // Ask the receiver to drop it if it is still unmatched there.
                let q = self.st.reqs.get_mut(id).unwrap();
                q.waiting |= wait::CANCEL;
                q.done = false;
                let mut req = Envelope::new(Kind::CancelReq);
                req.sreq = env.sreq;
                req.ctx = env.ctx;
                req.tag = env.tag;
                self.st.outbox.push_back((dest, req));
                self.flush()?;
                if dest == self.rank {
                    self.settle_cancel_to_self(id)?;
                }
            }
            Op::Idle | Op::External | Op::Free => {}
        }
        Ok(())
    }

    /// Finishes the cancellation of a send to this very process before `cancel` returns, as
    /// MPICH does: the message, the request to drop it and the answer all go through this
    /// process's own queues, so a few turns of progress settle it without anyone else. Then
    /// `MPI_Request_get_status` or `MPI_Test` right after `MPI_Cancel` already tell whether it
    /// was cancelled, and a program that receives the message when it was not (mpi4py's
    /// `testProbeCancel`) does not wait for a message the cancellation removed.
    fn settle_cancel_to_self(&mut self, id: ReqId) -> Result<()> {
        const MAX_TURNS: usize = 1024;
        for _ in 0..MAX_TURNS {
            match self.st.reqs.get(id) {
                Some(q) if q.waiting & wait::CANCEL != 0 => {
                    self.progress()?;
                }
                _ => break,
            }
        }
        Ok(())
    }

    /// `MPI_Iprobe` without progress: the first unexpected message that matches, described.
    pub fn probe_arrived(&self, src: i32, tag: i32, ctx: u16) -> Result<Option<Status>> {
        self.check_source(src)?;
        Ok(self.st.probe(ctx, src, tag))
    }

    // ---- Progress ---------------------------------------------------------------------

    /// Drives the channel once and hands it what waits; `true` if anything happened.
    #[inline]
    pub fn progress(&mut self) -> Result<bool> {
        let mut any = self.ch.poll(&mut self.st)?;
        if self.st.has_work() {
            any |= self.flush()?;
        }
        Ok(any)
    }

    /// Errors out if a peer is dead (waiting loops ask now and then).
    pub fn check_peers(&mut self) -> Result<()> {
        Ok(self.ch.check_peers()?)
    }

    /// Whether sends or replies are still to be delivered (finalize waits for them).
    pub fn busy(&self) -> bool {
        self.st.has_work() || self.st.reqs.busy_sends().next().is_some()
    }

    /// Hands the channel what waits: rendezvous reads of matched receives, withdrawn regions,
    /// replies, and queued sends. True if anything went.
    fn flush(&mut self) -> Result<bool> {
        let mut any = false;
        while let Some(key) = self.st.revoked.pop() {
            self.ch.revoke(key)?;
        }
        while let Some(p) = self.st.pulls.pop_front() {
            let Some(r) = self.st.reqs.get(p.rreq) else {
                continue;
            };
            let buf = r.buf;
            // SAFETY: the receive's buffer is valid for its capacity (>= p.len) until it
            // completes, which happens only on the channel's `DataDone::Recv`.
            unsafe { self.ch.pull(p.src, p.key, buf, p.len, p.rreq)? };
            any = true;
        }
        let mut n = self.st.outbox.len();
        while n > 0 {
            n -= 1;
            let Some((dest, env)) = self.st.outbox.pop_front() else {
                break;
            };
            if self.ch.send_control(dest, &env, &[], &mut self.st)? {
                any = true;
            } else {
                self.st.outbox.push_back((dest, env));
            }
        }
        if self.st.queued_dests > 0 {
            for dest in 0..self.reach {
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
        if any {
            self.st.events = self.st.events.wrapping_add(1);
        }
        Ok(any)
    }

    /// A count that changes whenever a request may have completed other than in its
    /// owner's own call: an arrival or finished transfer delivered, or queued work handed to
    /// the channel. An operation whose requests are all its own
    /// ([`crate::engine::Operation::moves_on_events`]) cannot move while it stays the same.
    #[inline]
    pub fn events(&self) -> u64 {
        self.st.events
    }

    // ---- Lanes (crate::lanes) --------------------------------------------------------

    /// Refuses to split into lanes while this engine holds a request on a context that
    /// `lane_of` gives to another lane: its answers and data would reach that lane's engine,
    /// which does not know it. An unexpected message for another lane is fine when it has
    /// landed whole ([`Adi::move_unexpected`] moves it); one still landing is not.
    pub(crate) fn check_split(&self, lane_of: &dyn Fn(u16, i32) -> usize) -> Result<()> {
        let live = self.st.reqs.iter_live().find_map(|(id, r)| {
            let (ctx, tag) = match r.op {
                request::Op::Recv => (r.ctx, r.tag),
                request::Op::Send => (r.env.ctx, r.env.tag),
                _ => return None,
            };
            (lane_of(ctx, tag) != 0).then_some((id, ctx))
        });
        if let Some((id, ctx)) = live {
            return Err(AdiError::Lanes(format!(
                "request {id} on context {ctx} (another lane's) is still live: make the lanes \
                 before any point-to-point traffic on the contexts they take over"
            )));
        }
        if let Some(u) = self
            .st
            .unexpected
            .iter()
            .find(|u| lane_of(u.env.ctx, u.env.tag) != 0 && !u.is_whole())
        {
            return Err(AdiError::Lanes(format!(
                "a message on context {} from rank {} is still landing: make the lanes when \
                 the engine is idle",
                u.env.ctx, u.src
            )));
        }
        Ok(())
    }

    /// Hands the channel (and the one-rank job this process may have made for itself) over
    /// to the lanes, leaving a placeholder until [`Adi::attach_lane`]; whether the channel
    /// already has peers of other jobs.
    pub(crate) fn detach_channel(&mut self) -> (Box<dyn Channel>, Option<nic_model::Job>, bool) {
        let ch = std::mem::replace(
            &mut self.ch,
            Box::new(channel::foreign::Unplugged) as Box<dyn Channel>,
        );
        (ch, self._own_job.take(), self.joined)
    }

    /// Runs this engine over its lane's channel from now on. The lane's channel adds peers of
    /// other jobs itself (to the channel every lane shares), so it is never wrapped here.
    pub(crate) fn attach_lane(&mut self, ch: Box<dyn Channel>) {
        self.ch = ch;
        self.joined = true;
    }

    /// A new, empty engine beside `like` (same rank, job, reach and eager limit) over lane
    /// channel `ch`.
    pub(crate) fn lane_twin(like: &Adi, ch: Box<dyn Channel>) -> Adi {
        Adi {
            st: State::new(like.reach),
            ch,
            rank: like.rank,
            size: like.size,
            reach: like.reach,
            joined: true,
            eager_max: like.eager_max,
            name: like.name,
            _own_job: None,
        }
    }

    /// Moves every unexpected message whose context `lane_of` gives to lane `k > 0` to
    /// `lanes[k - 1]`, in arrival order ([`Adi::check_split`] has made sure they are whole).
    pub(crate) fn move_unexpected(
        &mut self,
        lanes: &mut [Adi],
        lane_of: &dyn Fn(u16, i32) -> usize,
    ) {
        if self.st.unexpected.is_empty() {
            return;
        }
        let all = std::mem::take(&mut self.st.unexpected);
        for u in all {
            match lane_of(u.env.ctx, u.env.tag) {
                0 => self.st.unexpected.push_back(u),
                k => lanes[k - 1].st.adopt_unexpected(u),
            }
        }
    }

    /// Leaves the job cleanly (the engine has waited for outstanding sends).
    pub fn finalize(self) -> Result<()> {
        tracing::debug!(target: "mpi", rank = self.rank, "ADI finalize");
        self.ch.finalize()?;
        Ok(())
    }
}

/// A retired request ([`Adi::retire`]).
pub struct Retired {
    pub status: Status,
    pub owner: u32,
    pub persistent: bool,
    /// What the layer above attached, for a request that is gone now.
    pub attachment: Option<Box<dyn Attachment>>,
}

/// Where the direct path of a blocking receive stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectState {
    Waiting,
    /// The message landed.
    Done(Status),
    /// It matched a rendezvous message and became request `id`.
    Became(ReqId),
    /// Something arrived that it could not take: post a receive the usual way.
    Abandon,
}
