//! The channel interface: what a transport must provide for the ADI to run over it.
//!
//! It is the interface MPICH's early devices were ported to (and BIP-MPI with them), in two
//! parts:
//!
//! - **Control messages**: an [`Envelope`] with, for short messages, the data right behind it.
//!   [`Channel::send_control`] sends one (or says it cannot yet), [`Channel::poll`] is the
//!   "receive any control message / is one available" of the original: it hands every message
//!   that has arrived to the ADI's [`Sink`].
//! - **Large-message transfer**, as MPICH's later devices offer it beside the control
//!   messages: the stack's one rendezvous over registered memory. The sender exports the
//!   user's buffer ([`Channel::export`]) and sends the region's key in its RTS; the receiver,
//!   once a receive matches, reads the region straight into the posted buffer
//!   ([`Channel::pull`]); the channel tells both ends when it is over
//!   ([`Sink::data_done`]). The channel runs BIP's rendezvous underneath (one copy on a host,
//!   two packets on the NIC); the ADI runs no protocol of its own on top.
//!
//! Arrival is a two-step conversation so that a channel can put the data *straight where it
//! belongs*: the channel reads the envelope, asks the sink where the payload goes
//! ([`Sink::arrived`] returns a [`Landing`]: the posted user buffer when the receive is already
//! posted, else a buffer for the unexpected message), writes the payload there, and says so
//! ([`Sink::landed`]). That is the lesson of the FM 2.x paper: with a stream interface the
//! header can be read before the payload, so the payload needs no staging copy. Over BIP the
//! payload is copied once, from the NIC's packet buffer to the landing; over FM 1.x it is
//! staged whole first, as that interface demands.
//!
//! Implementations: [`bip::BipChannel`] (BIP directly), [`fm::FmChannel`] (FM 2.x streams, or
//! the FM 1.x interface with `fm1`). A new transport is a new implementation of this trait.

use crate::envelope::Envelope;
use nic_model::RegionKey;

pub mod bip;
mod counters;
pub mod fm;
pub mod foreign;

pub use counters::{ChannelCounters, CopyCount};

/// Errors of a channel: its transport failed, or a peer is gone.
#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    /// A peer died (or left) while this process still needed it.
    #[error("rank {rank} is gone ({why})")]
    PeerGone { rank: usize, why: String },
    /// Anything else from the transport.
    #[error("{0}")]
    Transport(String),
}

pub type Result<T, E = ChannelError> = std::result::Result<T, E>;

impl From<bip_core::BipError> for ChannelError {
    fn from(e: bip_core::BipError) -> Self {
        match e {
            bip_core::BipError::PeerGone { rank, why } => ChannelError::PeerGone {
                rank,
                why: why.to_string(),
            },
            e => ChannelError::Transport(format!("BIP: {e}")),
        }
    }
}

impl From<fm_streams::FmError> for ChannelError {
    fn from(e: fm_streams::FmError) -> Self {
        match e {
            fm_streams::FmError::Bip(b) => b.into(),
            e => ChannelError::Transport(format!("FM: {e}")),
        }
    }
}

/// Where the payload of an arriving message goes: `cap` bytes at `ptr` (the payload beyond
/// `cap` is dropped: truncation), then [`Sink::landed`] with `token`.
#[derive(Clone, Copy, Debug)]
pub struct Landing {
    pub ptr: *mut u8,
    pub cap: usize,
    pub token: u64,
}

impl Landing {
    /// For messages without payload, or whose payload is dropped.
    pub const NOWHERE: Landing = Landing {
        ptr: std::ptr::null_mut(),
        cap: 0,
        token: u64::MAX,
    };
}

/// The end of a large-message transfer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataDone {
    /// The read started with `pull` for this receive (the ADI's request id) is over: the data
    /// is in the buffer, or, with `Some(why)`, the sender's region was refused and nothing
    /// was written.
    Recv(u32, Option<String>),
    /// The region exported for this send (its wire id) was read: the buffer is the sender's
    /// again.
    Send(u32),
}

/// The ADI side of a channel: told of every arriving message and finished transfer.
pub trait Sink {
    /// A message from `src` has arrived with envelope `env`: where do its `env.payload_len()`
    /// bytes go? The landing must stay valid for `cap` bytes of writing until `landed` is
    /// called with its token (never, for `Landing::NOWHERE`).
    fn arrived(&mut self, src: usize, env: &Envelope) -> Landing;
    /// The payload of the message that `arrived` gave `token` for has been written.
    fn landed(&mut self, src: usize, token: u64);
    /// A data transfer has finished.
    fn data_done(&mut self, done: DataDone);
    /// A whole message from `src` lies in memory (a packet, a staging buffer): its envelope
    /// `env` and its payload. Does what `arrived`, a copy into the landing and `landed` do, in
    /// one step (a sink that can match and copy straight into the receive's buffer overrides
    /// it); returns the bytes copied.
    #[inline]
    fn arrived_whole(&mut self, src: usize, env: &Envelope, payload: &[u8]) -> usize {
        arrive_in_two_steps(self, src, env, payload)
    }
    /// Whether posted receives are waiting for data, so that a channel's poll should go on
    /// delivering what has arrived (up to its batch) rather than return after one message:
    /// each further message then lands straight in its receive, and the fixed cost of a poll
    /// is paid once for the batch. When nothing waits, a poll delivers one message, and what
    /// arrived behind it stays in the transport until a receive is posted for it (taking it
    /// now would make it unexpected: buffered, then copied a second time).
    #[inline]
    fn hungry(&self) -> bool {
        false
    }
}

/// What [`Sink::arrived_whole`] does by default: `arrived`, a copy of the payload into the
/// landing, then `landed`; returns the bytes copied. A sink that overrides `arrived_whole`
/// falls back on it for what its own fast path does not take.
#[inline]
pub(crate) fn arrive_in_two_steps<S: Sink + ?Sized>(
    sink: &mut S,
    src: usize,
    env: &Envelope,
    payload: &[u8],
) -> usize {
    let landing = sink.arrived(src, env);
    let n = landing.cap.min(payload.len());
    if n > 0 {
        // SAFETY: a sink's landing is valid for `cap` bytes of writing until `landed` (the
        // `Sink::arrived` contract), and `n <= cap`; the payload does not overlap it.
        unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), landing.ptr, n) };
    }
    if landing.token != Landing::NOWHERE.token {
        sink.landed(src, landing.token);
    }
    n
}

/// A transport the ADI runs over. Every method may run arrivals through `sink` (a channel that
/// must make progress to send, such as FM, delivers what arrives meanwhile).
pub trait Channel {
    /// The channel's name, as `MPI_CHANNEL` spells it.
    fn name(&self) -> &'static str;
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// The largest payload sent inside a control message; longer messages use rendezvous.
    fn eager_max(&self) -> usize;
    /// Sends a control message: the envelope, then `payload`. `Ok(false)` when it cannot go now
    /// (no buffer or credit; nothing was sent: try again after `poll`). Once `Ok(true)`,
    /// `payload` may be reused.
    fn send_control(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<bool>;
    /// Delivers arrived messages and finished transfers to `sink`, and moves the transport
    /// on; never blocks. True if anything happened.
    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool>;
    /// Exports `len` bytes at `buf`, the data of a rendezvous send, for `dest` to read; the
    /// key goes in the RTS. `DataDone::Send(sreq)` is delivered when `dest` has read it.
    ///
    /// # Safety
    /// `buf` is valid for `len` bytes of reading, unmodified, until then (or [`Channel::revoke`]).
    unsafe fn export(
        &mut self,
        dest: usize,
        buf: *const u8,
        len: usize,
        sreq: u32,
    ) -> Result<RegionKey>;
    /// Withdraws an export whose message was cancelled before any receive matched it.
    fn revoke(&mut self, key: RegionKey) -> Result<()>;
    /// Reads `len` bytes of `src`'s region `key` into `buf`, for receive `rreq`;
    /// `DataDone::Recv(rreq, ..)` is delivered when it is over.
    ///
    /// # Safety
    /// `buf` is valid for `len` bytes of writing, and not otherwise accessed, until then.
    unsafe fn pull(
        &mut self,
        src: usize,
        key: RegionKey,
        buf: *mut u8,
        len: usize,
        rreq: u32,
    ) -> Result<()>;
    /// Errors out if a peer that an operation waits for is dead (called by waiting loops now
    /// and then).
    fn check_peers(&mut self) -> Result<()>;
    /// Waits until everything sent has been delivered and leaves the job cleanly.
    fn finalize(self: Box<Self>) -> Result<()>;
    /// What the channel and the layers under it have counted so far (all zero for a channel
    /// that counts nothing).
    fn counters(&self) -> ChannelCounters {
        ChannelCounters::default()
    }
    /// The device's memory operations ([`crate::remote`]), if this channel lets the layer
    /// above use them beside its messages; `None` (the default) keeps one-sided
    /// communication on messages.
    fn remote_memory(&mut self) -> Option<&mut dyn crate::remote::RemoteMemory> {
        None
    }
    /// Adds connected peers of another job ([`foreign`]); returns their ranks. Only
    /// [`foreign::Joined`] can.
    fn add_peers(&mut self, socks: Vec<std::net::TcpStream>) -> Result<Vec<usize>> {
        drop(socks);
        Err(ChannelError::Transport(
            "this channel has no peers of other jobs".into(),
        ))
    }
    /// Says goodbye to peers of another job and closes their connections.
    fn remove_peers(&mut self, ranks: &[usize]) {
        let _ = ranks;
    }
}

/// Hands a BIP rendezvous event to the sink: the channels' tokens are the ADI's request ids.
pub(crate) fn deliver_event(sink: &mut dyn Sink, e: bip_core::Event) {
    match e {
        bip_core::Event::Exported { token } => sink.data_done(DataDone::Send(token as u32)),
        bip_core::Event::Pulled { token, result } => sink.data_done(DataDone::Recv(
            token as u32,
            result.err().map(|e| e.to_string()),
        )),
    }
}

/// Opens the channel named `name` (`bip`, `fm` or `fm1`) over this process's NIC.
pub fn open(name: &str) -> std::result::Result<Box<dyn Channel>, OpenError> {
    // A fabric this process's host makes itself (under Hydra, Slurm, or mpirun across hosts)
    // gets an MPI job's geometry, as one mpirun hands down does.
    let modeled = crate::profile_is_modeled();
    let nic = nic_model::DeviceStack::from_env_with(&|n| crate::job_config(n, modeled))
        .map_err(|e| OpenError::Nic(e.to_string()))?;
    let eager = || {
        std::env::var("MPI_EAGER_MAX")
            .ok()
            .and_then(|v| v.parse().ok())
    };
    Ok(match name {
        "bip" => {
            let ch = bip::BipChannel::new(nic, None)?;
            let max = eager().unwrap_or(ch.eager_max());
            Box::new(ch.with_eager_max(max))
        }
        "fm" => Box::new(fm::FmChannel::new(nic, false, eager())?),
        // FM 1.x moves every message whole (staged, then handed to its handler): there is no
        // rendezvous at this layer over it.
        "fm1" => Box::new(fm::FmChannel::new(
            nic,
            true,
            Some(eager().unwrap_or(usize::MAX)),
        )?),
        other => return Err(OpenError::Unknown(other.to_string())),
    })
}

/// Why a channel could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("no channel named {0:?}: the channels are bip, fm and fm1")]
    Unknown(String),
    #[error("cannot attach to the job's NIC: {0}")]
    Nic(String),
    #[error(transparent)]
    Channel(#[from] ChannelError),
}

/// Hands a whole control message that lies in memory (a BIP packet, an FM 1.x staging buffer)
/// to `sink`: envelope first, then the payload copied once into the landing. Returns the bytes
/// copied (for the channel's counters).
#[inline]
pub(crate) fn deliver_whole(sink: &mut dyn Sink, src: usize, msg: &[u8]) -> Result<usize> {
    let bad = |why: &str| {
        ChannelError::Transport(format!("malformed control message from rank {src}: {why}"))
    };
    let env = Envelope::parse(msg).ok_or_else(|| bad("bad envelope"))?;
    let payload = &msg[crate::envelope::ENVELOPE_LEN..];
    if payload.len() != env.payload_len() {
        return Err(bad("payload length differs from the envelope's"));
    }
    Ok(sink.arrived_whole(src, &env, payload))
}
