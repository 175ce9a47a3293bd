//! The `fm` and `fm1` channels: the ADI over Fast Messages.
//!
//! `fm` uses the FM 2.x stream interface the way the FM 2.x paper's MPI did: every control
//! message is one FM message for one handler. The handler receives the envelope alone, asks the
//! ADI where the payload goes (the posted user buffer when the receive is already posted), and
//! then receives the payload straight there: no staging copy, and a long payload moves by FM's
//! single-copy bulk path. The sender gathers envelope and user data as two pieces.
//!
//! `fm1` is the FM 1.x baseline the paper measured against: a message must be one contiguous
//! buffer on both sides, so the sender first copies envelope and data together, and the
//! receiver's handler sees the message only once FM has staged it whole, then copies it again.
//!
//! Large messages of `fm` are BIP's rendezvous run through FM ([`Fm::export`], [`Fm::pull`]):
//! the RTS (an FM message) carries the key of the region holding the send buffer, and the
//! receiver reads it into the posted buffer. `fm1` has no rendezvous: every message, however
//! long, is one FM 1.x message, staged whole before its handler copies it out (the baseline).
//! FM sends block until FM has taken the data; FM keeps extracting meanwhile, so arrivals are
//! delivered to the sink while a send waits.

use super::{
    deliver_event, deliver_whole, Channel, ChannelCounters, ChannelError, CopyCount, Landing,
    Result, Sink,
};
use crate::envelope::{Envelope, ENVELOPE_LEN};
use fm_streams::{Fm, Stream};
use nic_model::{Device, DeviceStack, RegionKey};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The `fm` channel's eager limit unless `MPI_EAGER_MAX` overrides it: one byte below FM's
/// bulk threshold ([`Fm::bulk_min`], `FM_BULK_MIN`). Every payload that FM sends in packets
/// goes eagerly; one long enough for FM's bulk path (a region read by the receiver) goes by
/// rendezvous instead, which reads the same region but only once a receive matched (no
/// unexpected-message buffer) and in two packets instead of three. Measured with `layers
/// --layers mpi-fm`, alternating `MPI_EAGER_MAX=65536`, `32744` and `8168` three times:
/// streaming 32 KiB 6.6-8.2 GB/s eager against 9.8-10.1 by rendezvous, 64 KiB 11.3-12.5
/// against 11.7-14.8; below the bulk threshold eager wins (8 KiB 1.59-1.66 us one-way against
/// 2.78-3.27, 16 KiB 9.3-9.6 GB/s against 6.5-6.7).
fn default_eager_max(fm: &Fm<DeviceStack>) -> usize {
    fm.bulk_min() - 1
}
/// FM handler id of MPI messages.
const HANDLER: u32 = 1;

type SinkPtr = *mut (dyn Sink + 'static);

/// What the handlers share with the channel: the sink of the channel call under way, and the
/// first error a handler met (handlers cannot return one).
#[derive(Default)]
struct Shared {
    sink: Cell<Option<SinkPtr>>,
    error: RefCell<Option<ChannelError>>,
    /// The channel's own copies (FM 1.x: payloads out of the staged message into landings,
    /// and the send-side staging).
    copied: Cell<CopyCount>,
}

impl Shared {
    /// Runs `f` with the sink of the current channel call.
    fn with_sink<R>(&self, f: impl FnOnce(&mut dyn Sink) -> R) -> Option<R> {
        let p = self.sink.get()?;
        // SAFETY: `sink` is set only for the duration of a channel call that holds the
        // `&mut dyn Sink` it came from (see `FmChannel::with_sink`), and handlers run only
        // inside FM calls made by that channel call, so the pointer is live and not otherwise
        // borrowed while a handler uses it.
        Some(f(unsafe { &mut *p }))
    }

    fn count_copy(&self, bytes: usize) {
        let mut c = self.copied.get();
        c.add(bytes);
        self.copied.set(c);
    }

    fn fail(&self, e: ChannelError) {
        self.error.borrow_mut().get_or_insert(e);
    }
}

/// An FM endpoint used as an MPI channel.
pub struct FmChannel {
    fm: Fm<DeviceStack>,
    fm1: bool,
    eager_max: usize,
    shared: Rc<Shared>,
    /// FM 1.x sends: the contiguous copy of envelope and data.
    staging: Vec<u8>,
}

impl FmChannel {
    /// Opens FM over `nic`; `fm1` selects the FM 1.x interface. `eager_max` overrides the
    /// eager limit (default: FM's bulk threshold less one, measured in `default_eager_max`).
    pub fn new(nic: DeviceStack, fm1: bool, eager_max: Option<usize>) -> Result<Self> {
        let mut fm = Fm::new(nic)?;
        let shared = Rc::new(Shared::default());
        let sh = shared.clone();
        if fm1 {
            fm.set_handler1(HANDLER, move |src, msg| {
                match sh.with_sink(|sink| deliver_whole(sink, src, msg)) {
                    Some(Err(e)) => sh.fail(e),
                    Some(Ok(n)) => sh.count_copy(n),
                    None => {}
                }
            })?;
        } else {
            fm.set_handler(HANDLER, move |s| receive_message(&sh, s))?;
        }
        let eager_max = eager_max.unwrap_or_else(|| default_eager_max(&fm));
        Ok(FmChannel {
            fm,
            fm1,
            eager_max,
            shared,
            staging: Vec::new(),
        })
    }

    /// Runs `f` (FM calls that may run handlers) with `sink` available to the handlers.
    fn with_sink<R>(
        &mut self,
        sink: &mut dyn Sink,
        f: impl FnOnce(&mut Fm<DeviceStack>) -> R,
    ) -> Result<R> {
        let p: *mut (dyn Sink + '_) = sink;
        // SAFETY: only the lifetime is erased; the pointer is cleared again below, before
        // `sink`'s borrow ends, and handlers use it only in between (see `Shared::with_sink`).
        let p: SinkPtr = unsafe { std::mem::transmute(p) };
        let outer = self.shared.sink.replace(Some(p));
        let r = f(&mut self.fm);
        self.shared.sink.set(outer);
        match self.shared.error.borrow_mut().take() {
            Some(e) => Err(e),
            None => Ok(r),
        }
    }

    /// Sends one FM message: `env`, then `payload`.
    fn send_message(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<()> {
        let head = env.emit();
        if self.fm1 {
            let mut staging = std::mem::take(&mut self.staging);
            staging.clear();
            staging.extend_from_slice(&head);
            staging.extend_from_slice(payload);
            self.shared.count_copy(payload.len());
            let r = self.with_sink(sink, |fm| fm.send1(dest, HANDLER, &staging));
            self.staging = staging;
            return Ok(r??);
        }
        let r = self.with_sink(sink, |fm| -> fm_streams::Result<()> {
            let mut s = fm.begin_message(dest, (ENVELOPE_LEN + payload.len()) as u64, HANDLER)?;
            fm.send_piece(&mut s, &head)?;
            if !payload.is_empty() {
                fm.send_piece(&mut s, payload)?;
            }
            fm.end_message(s)
        });
        Ok(r??)
    }
}

/// The FM 2.x handler of MPI messages: envelope, then the payload straight into its landing.
fn receive_message(sh: &Shared, s: &mut Stream<'_>) {
    let mut head = [0u8; ENVELOPE_LEN];
    let src = s.sender();
    let env = match (s.receive(&mut head), Envelope::parse(&head)) {
        (ENVELOPE_LEN, Some(env)) if env.payload_len() as u64 == s.remaining() => env,
        _ => {
            sh.fail(ChannelError::Transport(format!(
                "malformed MPI message from rank {src} over FM"
            )));
            drain(s);
            return;
        }
    };
    let Some(landing) = sh.with_sink(|sink| sink.arrived(src, &env)) else {
        return drain(s);
    };
    let n = landing.cap.min(env.payload_len());
    if n > 0 {
        // SAFETY: the landing is valid for `cap` bytes of writing until `landed` (the
        // `Sink::arrived` contract); `n <= cap`.
        let dst = unsafe { std::slice::from_raw_parts_mut(landing.ptr, n) };
        s.receive(dst);
    }
    drain(s);
    if landing.token != Landing::NOWHERE.token {
        // The sink of the channel call under way now (the handler may have been suspended
        // across calls).
        sh.with_sink(|sink| sink.landed(src, landing.token));
    }
}

/// Receives and drops what is left of the message (the part past a truncated landing).
fn drain(s: &mut Stream<'_>) {
    let mut scratch = [0u8; 1024];
    while s.remaining() > 0 {
        let n = (s.remaining() as usize).min(scratch.len());
        s.receive(&mut scratch[..n]);
    }
}

impl Channel for FmChannel {
    fn name(&self) -> &'static str {
        if self.fm1 {
            "fm1"
        } else {
            "fm"
        }
    }

    fn rank(&self) -> usize {
        self.fm.rank()
    }

    fn size(&self) -> usize {
        self.fm.nranks()
    }

    fn eager_max(&self) -> usize {
        self.eager_max
    }

    fn send_control(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<bool> {
        self.send_message(dest, env, payload, sink)?;
        Ok(true)
    }

    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        let mut any = self.with_sink(sink, |fm| fm.extract(usize::MAX))?? > 0;
        while let Some(e) = self.fm.next_event() {
            deliver_event(sink, e);
            any = true;
        }
        Ok(any)
    }

    unsafe fn export(
        &mut self,
        dest: usize,
        buf: *const u8,
        len: usize,
        sreq: u32,
    ) -> Result<RegionKey> {
        // SAFETY: the caller's contract is FM's (BIP's).
        Ok(unsafe { self.fm.export(dest, buf, len, u64::from(sreq))? })
    }

    fn revoke(&mut self, key: RegionKey) -> Result<()> {
        Ok(self.fm.revoke(key)?)
    }

    unsafe fn pull(
        &mut self,
        src: usize,
        key: RegionKey,
        buf: *mut u8,
        len: usize,
        rreq: u32,
    ) -> Result<()> {
        // SAFETY: the caller's contract is FM's (BIP's).
        unsafe { self.fm.pull(src, key, buf, len, u64::from(rreq))? };
        Ok(())
    }

    fn check_peers(&mut self) -> Result<()> {
        Ok(self.fm.bip().check_peers()?)
    }

    fn finalize(self: Box<Self>) -> Result<()> {
        Ok(self.fm.finalize()?)
    }

    fn counters(&self) -> ChannelCounters {
        let bip = self.fm.bip();
        ChannelCounters {
            nic: *bip.device().counters(),
            bip: bip.counters(),
            fm: Some(self.fm.counters()),
            channel: self.shared.copied.get(),
        }
    }
}
