//! One TCP connection to a peer on another host: frames out through a queue that the kernel
//! drains as fast as it takes them, frames in through a buffer that lends each one in place,
//! and the data of a region read received straight into the reader's buffer.
//!
//! **Sending.** A frame goes to the kernel at once (`send` with `MSG_NOSIGNAL`, so a closed peer
//! is an error, not a signal that kills a C program) when nothing is queued before it; what the
//! kernel does not take waits in the queue, in order, and [`Conn::flush`] (every turn of the
//! device's progress) sends more. A chunk of a region being served is sent with `sendmsg`
//! from the exporter's memory itself: header and data in one call, no copy in user space.
//! Back-pressure: [`Conn::has_room`] says no while more than [`TX_LIMIT`] bytes of packets wait.
//!
//! **Receiving.** [`Conn::next`] reads what the kernel has into a fixed buffer and returns the
//! frame at its head, which stays there until [`Conn::consume`] (a packet is lent to the layer
//! above in place). The data of a `ReadData` frame is not buffered: once the device names where
//! it goes ([`Conn::land`]), it is read with `readv` straight into that memory (the rest of the
//! `readv` fills the buffer with the frames that follow).
//!
//! **Liveness.** Keep-alive probes every second after a second of silence, and a user timeout,
//! make a cut link an error within about three seconds even while nothing is being sent.

use super::frame::{self, Header, Kind, ReadRequest, HEADER_LEN};
use crate::region::RegionKey;
use socket2::{SockRef, TcpKeepalive};
use std::collections::VecDeque;
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::net::TcpStream;
use std::time::Duration;

/// Bytes of queued frames (not counting region data being served) above which the sender must
/// wait.
pub const TX_LIMIT: usize = 4 << 20;
/// Bytes of the receive buffer: a packet of any mtu the fabric allows, a `Write` chunk, and
/// room to read several small frames per system call.
pub const RX_CAPACITY: usize = 256 << 10;
/// Largest `ReadData` chunk: a long read is cut into chunks so that packets queued meanwhile
/// are not held behind the whole region.
pub const CHUNK: usize = 256 << 10;
/// Largest data of one `Write` frame (deliberate update), so that it fits the receive buffer.
pub const WRITE_CHUNK: usize = 64 << 10;
/// Largest frame other than `ReadData` that a peer may send.
const MAX_FRAME: usize = RX_CAPACITY - HEADER_LEN;

/// How silence is turned into an error: probes after `IDLE`, every `INTERVAL`, `PROBES` of them.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(1);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
const KEEPALIVE_PROBES: u32 = 2;
/// Unacknowledged data older than this breaks the connection.
const USER_TIMEOUT: Duration = Duration::from_millis(3000);

/// What the peer's end of the connection has said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnState {
    Open,
    /// The peer sent `Bye`: it finalized; the end of the stream that follows is expected.
    Finalized,
    /// The connection failed, or closed without a `Bye`: why, for the error message.
    Broken(String),
}

/// A frame at the head of the receive buffer (or a step of a read's data).
#[derive(Debug)]
pub enum Incoming<'a> {
    Packet(&'a [u8]),
    ReadRequest {
        id: u32,
        req: ReadRequest,
    },
    /// The header of a `ReadData` chunk: the device must [`Conn::land`] it before `next`
    /// goes on.
    DataStart {
        id: u32,
        offset: u64,
        len: usize,
    },
    /// The data of the chunk announced by the last `DataStart` is all in place.
    DataDone {
        id: u32,
        len: usize,
    },
    ReadRefused {
        id: u32,
        why: String,
    },
    Write {
        key: RegionKey,
        offset: u64,
        bytes: &'a [u8],
        /// `Some(first byte of the update)` on the last chunk of an update that raises a
        /// notification.
        notify_from: Option<u64>,
    },
    WriteRefused(String),
    Bye,
    Lookup {
        id: u32,
        name: u64,
    },
    LookupFound {
        id: u32,
        key: RegionKey,
        len: u64,
        access: u32,
    },
    LookupRefused {
        id: u32,
        why: String,
    },
    Fence(u32),
    FenceDone(u32),
}

/// Where a chunk's data goes while it arrives.
struct Inbound {
    id: u32,
    /// The reader's memory (null: the transfer is unknown and the bytes are dropped).
    ptr: *mut u8,
    len: usize,
    got: usize,
}

/// Whole frames built in user space (packets, requests, small control frames), sent in order.
struct Frames {
    buf: Vec<u8>,
    sent: usize,
}

/// One chunk of a region being served: the header here, the data in the region.
struct Chunk {
    head: [u8; HEADER_LEN],
    data: ChunkData,
    sent: usize,
}

impl Chunk {
    fn len(&self) -> usize {
        HEADER_LEN + self.data.bytes().len()
    }
}

enum ChunkData {
    /// Still in the exporter's region, valid while the region is exported.
    Region { ptr: *const u8, len: usize },
    /// Copied out because the region was withdrawn before the chunk went.
    Owned(Vec<u8>),
}

impl ChunkData {
    fn bytes(&self) -> &[u8] {
        match self {
            // SAFETY: a region chunk is queued only for a live exported region, and the device
            // turns it into an owned copy (`detach`) before the region is withdrawn.
            ChunkData::Region { ptr, len } => unsafe { std::slice::from_raw_parts(*ptr, *len) },
            ChunkData::Owned(v) => v,
        }
    }
}

/// One connection to one remote peer.
pub struct Conn {
    sock: TcpStream,
    /// For messages: "rank 3 on host 192.0.2.2".
    pub peer_name: String,
    pub state: ConnState,
    /// Frames waiting for the kernel, in order.
    frames: VecDeque<Frames>,
    frame_bytes: usize,
    /// Chunks of region reads being served, in order. A chunk once started is finished before
    /// anything else goes; between chunks, waiting frames go first, so a packet never waits
    /// behind more than one chunk of a long read.
    chunks: VecDeque<Chunk>,
    /// Buffers of sent `Frames` items, for reuse.
    spare: Vec<Vec<u8>>,
    rx: Box<[u8]>,
    rx_start: usize,
    rx_end: usize,
    inbound: Option<Inbound>,
    /// Whether the frame at the head has been returned by `next` and not yet consumed: its
    /// length.
    head_len: Option<usize>,
    /// Why a send failed because the peer closed its end (`EPIPE`, `ECONNRESET`). Not yet a
    /// loss: a peer that finalized closes after its `Bye`, which stays readable after the
    /// reset, so the receive side decides: `Bye` makes the connection `Finalized`, the end of
    /// the stream without it makes it `Broken` for this reason.
    send_failed: Option<String>,
}

// SAFETY: the raw pointers a connection holds (region chunks, a reader's buffer) are owned by
// the process, not by a thread; the device that owns the connection is used by one thread at a
// time, as every device is.
unsafe impl Send for Conn {}

impl Conn {
    /// Takes over a connected stream (handshake done): non-blocking, no Nagle delay,
    /// keep-alive probes and a user timeout.
    pub fn new(sock: TcpStream, peer_name: String) -> io::Result<Conn> {
        sock.set_nodelay(true)?;
        sock.set_nonblocking(true)?;
        let s = SockRef::from(&sock);
        s.set_tcp_keepalive(
            &TcpKeepalive::new()
                .with_time(KEEPALIVE_IDLE)
                .with_interval(KEEPALIVE_INTERVAL)
                .with_retries(KEEPALIVE_PROBES),
        )?;
        s.set_tcp_user_timeout(Some(USER_TIMEOUT))?;
        Ok(Conn {
            sock,
            peer_name,
            state: ConnState::Open,
            frames: VecDeque::new(),
            frame_bytes: 0,
            chunks: VecDeque::new(),
            spare: Vec::new(),
            rx: vec![0u8; RX_CAPACITY].into_boxed_slice(),
            rx_start: 0,
            rx_end: 0,
            inbound: None,
            head_len: None,
            send_failed: None,
        })
    }

    fn broken(&mut self, why: String) {
        match self.state {
            // The peer said goodbye: whatever happens to the connection now (it closed its end,
            // so a late frame of ours is answered by a reset) is expected.
            ConnState::Finalized => {}
            ConnState::Broken(_) => {}
            ConnState::Open => {
                // The job is broken: say where, once, whatever the layers above make of it. One
                // write, so that the lines of ranks sharing the launcher's stderr do not mix.
                let line = format!("nic: lost {}: {why}\n", self.peer_name);
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
                self.state = ConnState::Broken(why);
            }
        }
    }

    fn io_failed(&mut self, what: &str, e: &io::Error) {
        self.broken(format!("{what} failed: {e}"));
    }

    // ---- Sending -------------------------------------------------------------------------

    /// Whether a packet may be queued now.
    #[inline]
    pub fn has_room(&self) -> bool {
        self.frame_bytes < TX_LIMIT
    }

    /// Whether anything waits to be sent.
    #[inline]
    pub fn tx_pending(&self) -> bool {
        !self.frames.is_empty() || !self.chunks.is_empty()
    }

    /// Sends (or queues) a frame of `len` payload bytes that `fill` writes.
    pub fn send_frame(
        &mut self,
        kind: Kind,
        len: usize,
        id: u32,
        offset: u64,
        fill: &mut dyn FnMut(&mut [u8]),
    ) {
        let total = HEADER_LEN + len;
        let mut buf = match self.frames.back_mut() {
            // Append to the frames already waiting (order is kept; one send for all of them).
            Some(Frames { buf, .. }) if buf.len() + total <= RX_CAPACITY => {
                let at = buf.len();
                buf.resize(at + total, 0);
                Header::new_checked(&mut buf[at..at + HEADER_LEN])
                    .expect("header room")
                    .emit(kind, len, id, offset);
                fill(&mut buf[at + HEADER_LEN..]);
                self.frame_bytes += total;
                return;
            }
            _ => self.spare.pop().unwrap_or_default(),
        };
        buf.clear();
        buf.resize(total, 0);
        Header::new_checked(&mut buf[..HEADER_LEN])
            .expect("header room")
            .emit(kind, len, id, offset);
        fill(&mut buf[HEADER_LEN..]);
        let was_idle = !self.tx_pending();
        self.frame_bytes += total;
        self.frames.push_back(Frames { buf, sent: 0 });
        if was_idle {
            self.flush();
        }
    }

    /// Queues the chunks of a region read being served: `len` bytes at `ptr`, going to
    /// `offset..` of the reader's transfer `id`.
    ///
    /// # Safety
    /// The bytes stay valid until sent or until [`Conn::detach`] names their region.
    pub unsafe fn send_region(&mut self, id: u32, ptr: *const u8, len: usize) {
        let was_idle = !self.tx_pending();
        let mut at = 0;
        while at < len {
            let n = (len - at).min(CHUNK);
            self.chunks.push_back(Chunk {
                head: frame::header(Kind::ReadData, n, id, at as u64),
                // SAFETY: `at < len`, inside the caller's range.
                data: ChunkData::Region {
                    ptr: unsafe { ptr.add(at) },
                    len: n,
                },
                sent: 0,
            });
            at += n;
        }
        if was_idle {
            self.flush();
        }
    }

    /// Copies out what is still to be sent from memory in `[addr, addr + len)`: the region is
    /// being withdrawn.
    pub fn detach(&mut self, addr: usize, len: usize) {
        for Chunk { data, .. } in &mut self.chunks {
            if let ChunkData::Region { ptr, .. } = *data {
                let p = ptr as usize;
                if p >= addr && p < addr + len {
                    *data = ChunkData::Owned(data.bytes().to_vec());
                }
            }
        }
    }

    /// Sends what the kernel takes now; `true` if anything went.
    pub fn flush(&mut self) -> bool {
        let mut any = false;
        loop {
            // A chunk already begun must end before anything else; then frames, then the
            // next chunk.
            let chunk_first = self.chunks.front().is_some_and(|c| c.sent > 0)
                || (self.frames.is_empty() && !self.chunks.is_empty());
            let r = if chunk_first {
                let c = self.chunks.front().expect("a chunk");
                let bytes = c.data.bytes();
                if c.sent < HEADER_LEN {
                    send(
                        &self.sock,
                        &[IoSlice::new(&c.head[c.sent..]), IoSlice::new(bytes)],
                    )
                } else {
                    send(&self.sock, &[IoSlice::new(&bytes[c.sent - HEADER_LEN..])])
                }
            } else if let Some(f) = self.frames.front() {
                send(&self.sock, &[IoSlice::new(&f.buf[f.sent..])])
            } else {
                break;
            };
            let n = match r {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if matches!(
                        e.kind(),
                        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                    ) && self.state == ConnState::Open
                    {
                        // Not yet a loss: a peer that finalized closes after its `Bye`, which
                        // stays readable after the reset; the receive side decides.
                        self.send_failed
                            .get_or_insert_with(|| format!("sending failed: {e}"));
                    } else {
                        self.io_failed("sending", &e);
                    }
                    self.frames.clear();
                    self.chunks.clear();
                    self.frame_bytes = 0;
                    break;
                }
            };
            any |= n > 0;
            if chunk_first {
                let c = self.chunks.front_mut().expect("a chunk");
                c.sent += n;
                if c.sent < c.len() {
                    break; // The kernel's buffer is full: the rest goes on a later turn.
                }
                self.chunks.pop_front();
            } else {
                let f = self.frames.front_mut().expect("a frame buffer");
                f.sent += n;
                if f.sent < f.buf.len() {
                    break;
                }
                let f = self.frames.pop_front().expect("a frame buffer");
                self.frame_bytes -= f.buf.len();
                if self.spare.len() < 4 {
                    self.spare.push(f.buf);
                }
            }
        }
        any
    }

    // ---- Receiving -----------------------------------------------------------------------

    /// The frame at the head of the stream, reading from the kernel if needed; `Ok(None)` when
    /// nothing (more) has arrived. The frame stays at the head until [`Conn::consume`].
    /// `Err` with the reason when the peer broke the protocol or the connection failed (the
    /// state says so too).
    pub fn next(&mut self) -> Result<Option<Incoming<'_>>, String> {
        if let ConnState::Broken(why) = &self.state {
            return Err(why.clone());
        }
        if let Some(inb) = &self.inbound {
            if inb.got < inb.len && !self.fill_inbound()? {
                return Ok(None);
            }
            let inb = self.inbound.take().expect("inbound");
            return Ok(Some(Incoming::DataDone {
                id: inb.id,
                len: inb.len,
            }));
        }
        if self.head_len.take().is_some() {
            // The frame returned last time was left at the head (a packet the caller could
            // not take yet): it is still whole there.
            return self.parse_head();
        }
        // The header first, then (once its length is known) the whole frame: a read may end
        // anywhere in it.
        loop {
            let avail = self.rx_end - self.rx_start;
            let need = if avail >= HEADER_LEN {
                let h = Header::new_checked(&self.rx[self.rx_start..self.rx_end]).expect("length");
                match h.kind() {
                    Some(Kind::ReadData) => HEADER_LEN,
                    _ if h.len() > MAX_FRAME => {
                        return Err(self.malformed(format!(
                            "a frame of {} bytes (at most {MAX_FRAME})",
                            h.len()
                        )))
                    }
                    _ => HEADER_LEN + h.len(),
                }
            } else {
                HEADER_LEN
            };
            if avail >= need {
                break;
            }
            if !self.fill(need)? {
                return Ok(None);
            }
        }
        self.parse_head()
    }

    /// Reads from the kernel until the buffer holds `need` bytes from its head; `Ok(false)` if
    /// they have not all arrived.
    fn fill(&mut self, need: usize) -> Result<bool, String> {
        if self.rx_start + need > self.rx.len() {
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
        }
        while self.rx_end - self.rx_start < need {
            match (&self.sock).read(&mut self.rx[self.rx_end..]) {
                Ok(0) => return Err(self.ended()),
                Ok(n) => self.rx_end += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io_failed("receiving", &e);
                    return Err(self.why());
                }
            }
        }
        Ok(true)
    }

    /// The end of the stream: expected after `Bye`, a failure otherwise.
    fn ended(&mut self) -> String {
        if self.state != ConnState::Finalized {
            let why = self
                .send_failed
                .take()
                .unwrap_or_else(|| "the connection closed without the peer finalizing".into());
            self.broken(why);
        }
        self.why()
    }

    fn why(&self) -> String {
        match &self.state {
            ConnState::Broken(why) => why.clone(),
            ConnState::Finalized => "it finalized and closed the connection".into(),
            ConnState::Open => "the connection is open".into(),
        }
    }

    fn malformed(&mut self, what: String) -> String {
        self.broken(format!(
            "malformed frame from {}: {what}; closing the connection",
            self.peer_name
        ));
        self.why()
    }

    /// Interprets the whole frame at the buffer's head.
    fn parse_head(&mut self) -> Result<Option<Incoming<'_>>, String> {
        let buf = &self.rx[self.rx_start..self.rx_end];
        let h = Header::new_checked(buf).expect("a whole header");
        let (len, id, offset) = (h.len(), h.id(), h.offset());
        let Some(kind) = h.kind() else {
            let k = h.raw_kind();
            return Err(self.malformed(format!("unknown kind {k}")));
        };
        if kind == Kind::ReadData {
            self.rx_start += HEADER_LEN;
            return Ok(Some(Incoming::DataStart { id, offset, len }));
        }
        let at = self.rx_start + HEADER_LEN;
        // Check the payload before lending it: a malformed frame breaks the connection.
        let malformed = match kind {
            Kind::ReadRequest if ReadRequest::parse(&self.rx[at..at + len]).is_none() => {
                Some("a read request of the wrong size")
            }
            Kind::Write if frame::parse_write(&self.rx[at..at + len]).is_none() => {
                Some("a write without its key")
            }
            Kind::Lookup if frame::parse_lookup(&self.rx[at..at + len]).is_none() => {
                Some("a lookup of the wrong size")
            }
            Kind::LookupFound if frame::parse_lookup_found(&self.rx[at..at + len]).is_none() => {
                Some("a lookup answer of the wrong size")
            }
            _ => None,
        };
        if let Some(what) = malformed {
            return Err(self.malformed(what.into()));
        }
        if kind == Kind::Bye {
            self.state = ConnState::Finalized;
        }
        self.head_len = Some(HEADER_LEN + len);
        let payload = &self.rx[at..at + len];
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        Ok(Some(match kind {
            Kind::Packet => Incoming::Packet(payload),
            Kind::ReadRequest => Incoming::ReadRequest {
                id,
                req: ReadRequest::parse(payload).expect("checked"),
            },
            Kind::ReadRefused => Incoming::ReadRefused {
                id,
                why: text(payload),
            },
            Kind::Write => {
                let (key, at, bytes) = frame::parse_write(payload).expect("checked");
                Incoming::Write {
                    key,
                    offset: at,
                    bytes,
                    notify_from: (id & frame::WRITE_NOTIFY != 0).then_some(offset),
                }
            }
            Kind::WriteRefused => Incoming::WriteRefused(text(payload)),
            Kind::Bye => Incoming::Bye,
            Kind::Lookup => Incoming::Lookup {
                id,
                name: frame::parse_lookup(payload).expect("checked"),
            },
            Kind::LookupFound => {
                let (key, len, access) = frame::parse_lookup_found(payload).expect("checked");
                Incoming::LookupFound {
                    id,
                    key,
                    len,
                    access,
                }
            }
            Kind::LookupRefused => Incoming::LookupRefused {
                id,
                why: text(payload),
            },
            Kind::Fence => Incoming::Fence(id),
            Kind::FenceDone => Incoming::FenceDone(id),
            Kind::ReadData => unreachable!("handled above"),
        }))
    }

    /// Drops the frame `next` returned (a packet's buffer is given back).
    #[inline]
    pub fn consume(&mut self) {
        if let Some(n) = self.head_len.take() {
            self.rx_start += n;
            if self.rx_start == self.rx_end {
                self.rx_start = 0;
                self.rx_end = 0;
            }
        }
    }

    /// Says where the chunk announced by `DataStart` goes: `len` bytes at `ptr`, or null to
    /// drop them (a transfer this process does not know).
    ///
    /// # Safety
    /// A non-null `ptr` is valid for `len` bytes of writing, and not otherwise accessed, until
    /// `next` returns `DataDone` for it.
    pub unsafe fn land(&mut self, id: u32, ptr: *mut u8, len: usize) {
        self.inbound = Some(Inbound {
            id,
            ptr,
            len,
            got: 0,
        });
    }

    /// Moves the chunk's data into place: first what the buffer already holds, then straight
    /// from the kernel. `Ok(true)` once all of it is there.
    fn fill_inbound(&mut self) -> Result<bool, String> {
        let inb = self.inbound.as_mut().expect("inbound");
        let buffered = (self.rx_end - self.rx_start).min(inb.len - inb.got);
        if buffered > 0 {
            if !inb.ptr.is_null() {
                // SAFETY: `land`'s contract: `ptr` is valid for `len` bytes; `got + buffered
                // <= len`; the receive buffer does not overlap the reader's memory.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.rx[self.rx_start..].as_ptr(),
                        inb.ptr.add(inb.got),
                        buffered,
                    )
                };
            }
            inb.got += buffered;
            self.rx_start += buffered;
            if self.rx_start == self.rx_end {
                self.rx_start = 0;
                self.rx_end = 0;
            }
        }
        while inb.got < inb.len {
            let left = inb.len - inb.got;
            let r = if inb.ptr.is_null() {
                // Unknown transfer: read into the buffer and drop.
                let n = left.min(self.rx.len());
                (&self.sock).read(&mut self.rx[..n])
            } else {
                // SAFETY: as above; the slice is the part of the reader's memory not yet
                // written.
                let dst = unsafe { std::slice::from_raw_parts_mut(inb.ptr.add(inb.got), left) };
                let spare = &mut self.rx[self.rx_end..];
                (&self.sock).read_vectored(&mut [IoSliceMut::new(dst), IoSliceMut::new(spare)])
            };
            match r {
                Ok(0) => return Err(self.ended()),
                Ok(n) => {
                    let to_dst = n.min(left);
                    inb.got += to_dst;
                    // What came after the chunk's data is the next frames, in the buffer.
                    if !inb.ptr.is_null() {
                        self.rx_end += n - to_dst;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io_failed("receiving", &e);
                    return Err(self.why());
                }
            }
        }
        Ok(true)
    }

    /// Sends the queue out before the process leaves, waiting at most `limit`.
    pub fn drain(&mut self, limit: Duration) {
        let end = std::time::Instant::now() + limit;
        let mut backoff = crate::wait::Backoff::new();
        while self.tx_pending() && !matches!(self.state, ConnState::Broken(_)) {
            if std::time::Instant::now() > end {
                break;
            }
            if !self.flush() {
                backoff.snooze();
            }
        }
    }
}

/// `sendmsg` with `MSG_NOSIGNAL`: a peer that closed its end gives `EPIPE`, not `SIGPIPE`.
fn send(sock: &TcpStream, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
    SockRef::from(sock).send_vectored_with_flags(bufs, libc::MSG_NOSIGNAL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A frame whose header arrives before its payload is not lent until all of it is there.
    #[test]
    fn a_frame_split_across_reads_is_lent_whole() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let mut conn = Conn::new(rx, "test peer".into()).unwrap();
        let payload: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        tx.write_all(&frame::header(Kind::Packet, payload.len(), 0, 0))
            .unwrap();
        tx.write_all(&payload[..100]).unwrap();
        tx.flush().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(matches!(conn.next(), Ok(None)), "a partial frame was lent");
        tx.write_all(&payload[100..]).unwrap();
        let end = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            match conn.next() {
                Ok(Some(Incoming::Packet(p))) => {
                    assert_eq!(p, &payload[..]);
                    break;
                }
                Ok(None) => assert!(std::time::Instant::now() < end, "the frame never came"),
                other => panic!("{other:?}"),
            }
        }
        conn.consume();
    }
}
