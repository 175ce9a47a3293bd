//! Peers of other jobs: the channel a process's engine runs over once it has met processes that
//! `mpirun` did not start with it (`MPI_Comm_spawn`, `MPI_Comm_accept`/`connect`,
//! `MPI_Comm_join`).
//!
//! ```text
//!   Adi ──▶ Joined ─┬─ rank < job size ──▶ the job's own channel (bip, fm, fm1), untouched
//!                   └─ rank ≥ job size ──▶ peers[rank - job size]: one TCP stream each
//!                                          frames: Control (envelope + payload)
//!                                                  Read (a rendezvous pull) ─▶ Data | Refused
//!                                                  Bye (the peer has disconnected)
//! ```
//!
//! A job's ranks keep the engine ranks `0..size` they were started with; a peer met later
//! takes the next free engine rank past them, in this process's numbering only (each process
//! numbers the peers it meets itself; the layer above keeps the translation in its groups).
//! The job's channel is wrapped only when the first peer arrives ([`Adi::add_peers`]), so a
//! job that never meets another keeps its channel as it was: not one branch more on its paths.
//!
//! Sockets are non-blocking and polled on the engine's turns, like the network device's. A
//! control message is one `Control` frame; a rendezvous export is remembered under a key of
//! this channel, and the receiver's pull is a `Read` frame answered by one `Data` frame with the
//! whole message (copied once out of the sender's buffer into the socket's queue). Peers of
//! other jobs are few and rare; this path favours being simple over the last copy.
//!
//! [`Adi::add_peers`]: crate::Adi::add_peers

use super::{deliver_whole, Channel, ChannelCounters, ChannelError, DataDone, Result, Sink};
use crate::envelope::Envelope;
use nic_model::RegionKey;
use std::collections::{HashMap, VecDeque};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Frame kinds.
const CONTROL: u8 = 1;
const READ: u8 = 2;
const DATA: u8 = 3;
const REFUSED: u8 = 4;
const BYE: u8 = 5;
/// Bytes of a frame header: kind, three zero bytes, body length (u32, little endian).
const HEADER: usize = 8;
/// The top bit of this channel's region ids (a job channel's never have it).
const FOREIGN_KEY: u32 = 1 << 30;
/// How long a goodbye waits for queued frames to leave.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);
/// Reads per peer and poll, so one busy peer cannot hold a turn forever.
const READS_PER_POLL: usize = 16;

/// One peer of another job.
struct Peer {
    sock: TcpStream,
    /// Frames waiting for the kernel, from `sent` on.
    out: VecDeque<u8>,
    /// Bytes received and not yet parsed.
    inbuf: Vec<u8>,
    /// The peer said goodbye: its end of the stream may close.
    said_bye: bool,
    /// Who it is, for messages: its rank in its group and its address.
    label: String,
    /// Where reads land first (made once: zeroing 64 KiB on every poll cost microseconds).
    scratch: Box<[u8]>,
}

impl Peer {
    fn queue(&mut self, kind: u8, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.out.extend([kind, 0, 0, 0]);
        self.out.extend((len as u32).to_le_bytes());
        for p in parts {
            self.out.extend(p.iter());
        }
    }

    /// Writes what the kernel takes now.
    fn flush(&mut self) -> std::io::Result<bool> {
        let mut any = false;
        while !self.out.is_empty() {
            let (a, _) = self.out.as_slices();
            match self.sock.write(a) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out.drain(..n);
                    any = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(any)
    }

    /// Reads what has arrived; `Ok(false)` at the end of the stream.
    fn fill(&mut self) -> std::io::Result<(bool, bool)> {
        let mut any = false;
        for _ in 0..READS_PER_POLL {
            match self.sock.read(&mut self.scratch) {
                Ok(0) => return Ok((any, false)),
                Ok(n) => {
                    self.inbuf.extend_from_slice(&self.scratch[..n]);
                    any = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((any, true))
    }
}

/// A rendezvous send's buffer, readable by one peer.
struct Export {
    dest: usize,
    key: u64,
    buf: *const u8,
    len: usize,
    sreq: u32,
}

/// A rendezvous receive waiting for its data.
struct Pull {
    buf: *mut u8,
    len: usize,
}

/// The job's channel plus the peers of other jobs.
pub struct Joined {
    local: Box<dyn Channel>,
    local_size: usize,
    /// By engine rank minus `local_size`; `None` once the peer is gone (ranks are not reused).
    peers: Vec<Option<Peer>>,
    exports: HashMap<u32, Export>,
    next_export: u32,
    pulls: HashMap<u32, Pull>,
    /// Streams this side said goodbye on, read (and what comes dropped) until the peer
    /// closes its end too, so that neither end resets a connection with data in flight.
    closing: Vec<TcpStream>,
}

// SAFETY: the raw pointers held are the user's buffers of requests in flight, valid until
// those complete (the `Channel::export` and `Channel::pull` contracts); one thread at a time
// uses the engine.
unsafe impl Send for Joined {}

impl Joined {
    /// Wraps the job's channel `ch` in place (the first peer of another job is coming).
    pub(crate) fn wrap(ch: &mut Box<dyn Channel>) {
        let local = std::mem::replace(ch, Box::new(Unplugged) as Box<dyn Channel>);
        *ch = Box::new(Joined::new(local));
    }

    pub fn new(local: Box<dyn Channel>) -> Joined {
        let local_size = local.size();
        Joined {
            local,
            local_size,
            peers: Vec::new(),
            exports: HashMap::new(),
            next_export: 0,
            pulls: HashMap::new(),
            closing: Vec::new(),
        }
    }

    fn gone(&self, rank: usize, why: &str) -> ChannelError {
        let who = self
            .peers
            .get(rank - self.local_size)
            .and_then(|p| p.as_ref())
            .map_or("a process of another job", |p| p.label.as_str());
        ChannelError::PeerGone {
            rank,
            why: format!("{who}: {why}"),
        }
    }

    fn peer(&mut self, rank: usize) -> Result<&mut Peer> {
        let i = rank - self.local_size;
        match self.peers.get_mut(i) {
            Some(Some(p)) => Ok(p),
            _ => Err(ChannelError::PeerGone {
                rank,
                why: "the process of another job has disconnected".into(),
            }),
        }
    }

    /// Adds connected peers; returns their engine ranks.
    pub fn add(&mut self, socks: Vec<TcpStream>) -> Result<Vec<usize>> {
        // A poll now reads sockets: the waiting loops' spin phase is shortened as for the
        // network device (4096 polls of a system call each would hold the core for ms).
        nic_model::wait::note_polls_are_system_calls();
        let mut ranks = Vec::with_capacity(socks.len());
        for (i, sock) in socks.into_iter().enumerate() {
            let label = match sock.peer_addr() {
                Ok(a) => format!("process {i} of another job (at {a})"),
                Err(_) => format!("process {i} of another job"),
            };
            sock.set_nonblocking(true)
                .and_then(|_| sock.set_nodelay(true))
                .map_err(|e| ChannelError::Transport(format!("a peer's socket: {e}")))?;
            ranks.push(self.local_size + self.peers.len());
            self.peers.push(Some(Peer {
                sock,
                out: VecDeque::new(),
                inbuf: Vec::new(),
                said_bye: false,
                scratch: vec![0u8; 64 * 1024].into_boxed_slice(),
                label,
            }));
        }
        Ok(ranks)
    }

    /// Says goodbye to peers `ranks` (after what was queued to them) and closes their
    /// streams; waits at most `DRAIN_LIMIT` for the queued bytes to leave.
    pub fn remove(&mut self, ranks: &[usize]) {
        let deadline = Instant::now() + DRAIN_LIMIT;
        for &rank in ranks {
            let Some(slot) = self.peers.get_mut(rank - self.local_size) else {
                continue;
            };
            let Some(mut p) = slot.take() else { continue };
            p.queue(BYE, &[]);
            let mut backoff = nic_model::wait::Backoff::new();
            while !p.out.is_empty() && Instant::now() < deadline {
                match p.flush() {
                    Ok(true) => {}
                    Ok(false) => {
                        backoff.snooze();
                    }
                    Err(_) => break,
                }
            }
            let _ = p.sock.shutdown(std::net::Shutdown::Write);
            // The peer closes its end after our goodbye; what it still sends is dropped.
            self.closing.push(p.sock);
        }
        self.exports.retain(|_, e| !ranks.contains(&e.dest));
    }

    /// Reads the closing streams; drops those the peer has closed. True if any is left.
    fn drain_closing(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        self.closing.retain_mut(|s| loop {
            match s.read(&mut chunk) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        });
        !self.closing.is_empty()
    }

    /// Parses and handles every whole frame from peer `i`.
    fn handle_frames(&mut self, i: usize, sink: &mut dyn Sink) -> Result<bool> {
        let rank = self.local_size + i;
        let mut at = 0;
        let mut any = false;
        let mut inbuf = match self.peers[i].as_mut() {
            Some(p) => std::mem::take(&mut p.inbuf),
            None => return Ok(false),
        };
        while inbuf.len() - at >= HEADER {
            let kind = inbuf[at];
            let len =
                u32::from_le_bytes(inbuf[at + 4..at + 8].try_into().expect("4 bytes")) as usize;
            if inbuf.len() - at - HEADER < len {
                break;
            }
            let body = &inbuf[at + HEADER..at + HEADER + len];
            at += HEADER + len;
            any = true;
            match kind {
                CONTROL => {
                    deliver_whole(sink, rank, body)?;
                }
                READ if body.len() == 28 => {
                    let id = u32::from_le_bytes(body[0..4].try_into().expect("4"));
                    let key = u64::from_le_bytes(body[4..12].try_into().expect("8"));
                    let rreq = u32::from_le_bytes(body[12..16].try_into().expect("4"));
                    let want = u64::from_le_bytes(body[16..24].try_into().expect("8")) as usize;
                    let ok =
                        matches!(self.exports.get(&id), Some(e) if e.dest == rank && e.key == key);
                    let p = self.peers[i].as_mut().expect("a live peer");
                    if ok {
                        let e = self.exports.remove(&id).expect("checked above");
                        let n = want.min(e.len);
                        // SAFETY: an export's buffer is valid for `len` bytes of reading until
                        // its send completes, which is the `DataDone::Send` delivered below.
                        let data = unsafe { std::slice::from_raw_parts(e.buf, n) };
                        p.queue(DATA, &[&rreq.to_le_bytes(), data]);
                        sink.data_done(DataDone::Send(e.sreq));
                    } else {
                        p.queue(REFUSED, &[&rreq.to_le_bytes()]);
                    }
                }
                DATA if body.len() >= 4 => {
                    let rreq = u32::from_le_bytes(body[0..4].try_into().expect("4"));
                    if let Some(pull) = self.pulls.remove(&rreq) {
                        let n = pull.len.min(body.len() - 4);
                        // SAFETY: a pull's buffer is valid for `len` bytes of writing until
                        // its `DataDone::Recv`, delivered right after.
                        unsafe { std::ptr::copy_nonoverlapping(body[4..].as_ptr(), pull.buf, n) };
                        sink.data_done(DataDone::Recv(rreq, None));
                    }
                }
                REFUSED if body.len() == 4 => {
                    let rreq = u32::from_le_bytes(body[0..4].try_into().expect("4"));
                    if self.pulls.remove(&rreq).is_some() {
                        sink.data_done(DataDone::Recv(
                            rreq,
                            Some("the sender of another job refused the read".into()),
                        ));
                    }
                }
                BYE => {
                    if let Some(p) = self.peers[i].as_mut() {
                        p.said_bye = true;
                    }
                }
                _ => {
                    return Err(ChannelError::Transport(format!(
                        "malformed frame (kind {kind}, {len} bytes) from rank {rank} of another job"
                    )))
                }
            }
        }
        inbuf.drain(..at);
        if let Some(p) = self.peers[i].as_mut() {
            p.inbuf = inbuf;
        }
        Ok(any)
    }

    fn poll_peers(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        let mut any = false;
        for i in 0..self.peers.len() {
            let rank = self.local_size + i;
            let Some(p) = self.peers[i].as_mut() else {
                continue;
            };
            let flushed = p.flush();
            let filled = p.fill();
            // What did arrive is handled first: a goodbye may be in it.
            any |= self.handle_frames(i, sink)?;
            let said_bye = self.peers[i].as_ref().is_some_and(|p| p.said_bye);
            let trouble = match (flushed, filled) {
                (Ok(a), Ok((b, true))) => {
                    any |= a | b;
                    None
                }
                (Ok(_), Ok((_, false))) => {
                    Some("its connection closed (the process ended)".to_string())
                }
                (Err(e), _) => Some(format!("sending failed: {e}")),
                (_, Err(e)) => Some(format!("receiving failed: {e}")),
            };
            if let Some(why) = trouble {
                if said_bye {
                    // Its goodbye came: the stream ends here, and so does the peer.
                    self.peers[i] = None;
                    any = true;
                } else {
                    return Err(self.gone(rank, &why));
                }
            }
        }
        Ok(any)
    }
}

impl Channel for Joined {
    fn name(&self) -> &'static str {
        self.local.name()
    }

    fn rank(&self) -> usize {
        self.local.rank()
    }

    fn size(&self) -> usize {
        self.local_size + self.peers.len()
    }

    fn eager_max(&self) -> usize {
        self.local.eager_max()
    }

    fn send_control(
        &mut self,
        dest: usize,
        env: &Envelope,
        payload: &[u8],
        sink: &mut dyn Sink,
    ) -> Result<bool> {
        if dest < self.local_size {
            return self.local.send_control(dest, env, payload, sink);
        }
        let p = self.peer(dest)?;
        p.queue(CONTROL, &[&env.emit(), payload]);
        if let Err(e) = p.flush() {
            return Err(self.gone(dest, &format!("sending failed: {e}")));
        }
        Ok(true)
    }

    fn poll(&mut self, sink: &mut dyn Sink) -> Result<bool> {
        let a = self.local.poll(sink)?;
        if !self.closing.is_empty() {
            self.drain_closing();
        }
        Ok(self.poll_peers(sink)? || a)
    }

    unsafe fn export(
        &mut self,
        dest: usize,
        buf: *const u8,
        len: usize,
        sreq: u32,
    ) -> Result<RegionKey> {
        if dest < self.local_size {
            // SAFETY: the caller's contract is passed on.
            return unsafe { self.local.export(dest, buf, len, sreq) };
        }
        self.peer(dest)?;
        let id = FOREIGN_KEY | (self.next_export & (FOREIGN_KEY - 1));
        self.next_export = self.next_export.wrapping_add(1);
        let key = (u64::from(sreq) << 32) | u64::from(id) ^ 0x5bd1_e995;
        self.exports.insert(
            id,
            Export {
                dest,
                key,
                buf,
                len,
                sreq,
            },
        );
        Ok(RegionKey { id, key })
    }

    fn revoke(&mut self, key: RegionKey) -> Result<()> {
        if key.id & FOREIGN_KEY != 0 && self.exports.remove(&key.id).is_some() {
            return Ok(());
        }
        self.local.revoke(key)
    }

    unsafe fn pull(
        &mut self,
        src: usize,
        key: RegionKey,
        buf: *mut u8,
        len: usize,
        rreq: u32,
    ) -> Result<()> {
        if src < self.local_size {
            // SAFETY: the caller's contract is passed on.
            return unsafe { self.local.pull(src, key, buf, len, rreq) };
        }
        let p = self.peer(src)?;
        let mut body = [0u8; 28];
        body[0..4].copy_from_slice(&key.id.to_le_bytes());
        body[4..12].copy_from_slice(&key.key.to_le_bytes());
        body[12..16].copy_from_slice(&rreq.to_le_bytes());
        body[16..24].copy_from_slice(&(len as u64).to_le_bytes());
        p.queue(READ, &[&body]);
        self.pulls.insert(rreq, Pull { buf, len });
        Ok(())
    }

    fn check_peers(&mut self) -> Result<()> {
        self.local.check_peers()
    }

    fn finalize(mut self: Box<Self>) -> Result<()> {
        let live: Vec<usize> = (0..self.peers.len())
            .filter(|&i| self.peers[i].is_some())
            .map(|i| self.local_size + i)
            .collect();
        self.remove(&live);
        let deadline = Instant::now() + DRAIN_LIMIT;
        let mut backoff = nic_model::wait::Backoff::new();
        while self.drain_closing() && Instant::now() < deadline {
            backoff.snooze();
        }
        let Joined { local, .. } = *self;
        local.finalize()
    }

    fn counters(&self) -> ChannelCounters {
        self.local.counters()
    }

    fn remote_memory(&mut self) -> Option<&mut dyn crate::remote::RemoteMemory> {
        self.local.remote_memory()
    }

    fn add_peers(&mut self, socks: Vec<TcpStream>) -> Result<Vec<usize>> {
        self.add(socks)
    }

    fn remove_peers(&mut self, ranks: &[usize]) {
        self.remove(ranks)
    }
}

/// Stands in for the job's channel for the instant it is moved into a [`Joined`].
pub(crate) struct Unplugged;

impl Channel for Unplugged {
    fn name(&self) -> &'static str {
        "unplugged"
    }
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        0
    }
    fn eager_max(&self) -> usize {
        0
    }
    fn send_control(&mut self, _: usize, _: &Envelope, _: &[u8], _: &mut dyn Sink) -> Result<bool> {
        Err(ChannelError::Transport("no channel".into()))
    }
    fn poll(&mut self, _: &mut dyn Sink) -> Result<bool> {
        Ok(false)
    }
    unsafe fn export(&mut self, _: usize, _: *const u8, _: usize, _: u32) -> Result<RegionKey> {
        Err(ChannelError::Transport("no channel".into()))
    }
    fn revoke(&mut self, _: RegionKey) -> Result<()> {
        Ok(())
    }
    unsafe fn pull(&mut self, _: usize, _: RegionKey, _: *mut u8, _: usize, _: u32) -> Result<()> {
        Err(ChannelError::Transport("no channel".into()))
    }
    fn check_peers(&mut self) -> Result<()> {
        Ok(())
    }
    fn finalize(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}
