//! [`HostNet`]: the device of a rank whose job spans hosts. Peers on this host are reached
//! through the host's shared-memory fabric (the plain [`Nic`], in its local numbering); peers on
//! other hosts through one TCP connection each ([`Conn`]). The layers above see one device with
//! the job's ranks, as MPICH's hierarchical shm + tcp netmods do.
//!
//! ```text
//!  rank r ──▶ routes[r] ─┬─ Local(l)  ──▶ Nic (inboxes, regions, single copy), local rank l
//!                        └─ Remote(c) ──▶ conns[c]: packets as frames; region reads as a
//!                                         ReadRequest answered by ReadData chunks that the
//!                                         exporter sends from the region itself and the
//!                                         reader receives into its buffer (no user-space copy)
//! ```
//!
//! Regions are always the local NIC's: an exporter registers a buffer there, and serves
//! remote readers from it. A read of a remote region is a transfer that completes later
//! ([`Transfer::Pending`]); its id has the top bit set, so it never meets the NIC's own.
//!
//! VMMC across hosts ([`crate::vmmc`]): an import by name is a `Lookup` frame answered by the
//! exporter's device from its NIC's names; a deliberate update is posted as `Write` frames,
//! the last one flagged when it raises a notification, which the exporter's device queues
//! once that chunk is applied (TCP keeps the chunks in order, so the whole update is in
//! place by then); `complete_updates` is a `Fence` answered after every write before it.

use super::conn::{Conn, ConnState, Incoming, WRITE_CHUNK};
use super::frame::{self, Kind, ReadRequest, READ_REQUEST_LEN, WRITE_PREFIX_LEN};
use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use crate::nic::Nic;
use crate::phy::{Capabilities, Device, PeerStatus};
use crate::region::{Access, RegionInfo, RegionKey, Transfer, TransferId};
use crate::timing::Profile;
use crate::vmmc::{Name, Notification};
use std::collections::VecDeque;
use std::time::Duration;

/// Marks the transfer ids of remote reads.
const REMOTE: u32 = 1 << 31;
/// How long `finalize` waits for queued frames to leave.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// How a rank is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Through this host's fabric, where it is local rank `.0`.
    Local(Rank),
    /// Through connection `.0`.
    Remote(usize),
}

/// Where a polled packet is lent, with its source's job rank.
type Take<'a> = &'a mut dyn FnMut(Rank, &[u8]);

/// A read of a remote region, in flight.
struct RemoteRead {
    conn: usize,
    local: *mut u8,
    len: usize,
    got: usize,
    refused: Option<String>,
}

/// The device of a rank of a job that spans hosts.
pub struct HostNet {
    local: Nic,
    rank: Rank,
    nranks: usize,
    routes: Vec<Route>,
    /// The job rank of each local rank of the NIC.
    local_rank: Vec<Rank>,
    /// Which receive path the next poll looks at first: 0 the NIC, `1 + c` connection `c`.
    turn: usize,
    conns: Vec<Conn>,
    /// The job rank behind each connection.
    conn_rank: Vec<Rank>,
    reads: Vec<Option<RemoteRead>>,
    free_reads: Vec<u32>,
    /// Packets taken off a connection, in order, by a pump that was after what lay behind
    /// them (read data, a peer's read request): the next polls lend these first.
    parked: Vec<std::collections::VecDeque<Vec<u8>>>,
    /// Connections polled for packets since the last `progress`, which then need no other
    /// look (one receive call per connection and turn of the layer above).
    polled: Vec<bool>,
    /// A refusal of a deliberate update, reported by the next write to that peer.
    write_refused: Vec<Option<String>>,
    /// Notifications raised by remote importers' updates, in the order applied.
    notes: VecDeque<Notification>,
    /// Answers to this device's lookups and fences, by request id, until taken.
    replies: Vec<(u32, Reply)>,
    /// The id of the next lookup or fence.
    next_request: u32,
    /// Counts of the network side; `merged` adds the NIC's.
    net: Counters,
    merged: Counters,
}

// SAFETY: the raw pointers held (readers' buffers) belong to the process; a device is used by
// one thread at a time.
unsafe impl Send for HostNet {}

impl HostNet {
    /// A device over this host's `local` NIC and a connection to every remote peer.
    /// `routes[r]` says how rank `r` is reached; `conns` are `(rank, connection)` pairs, in the
    /// order `Route::Remote` indexes them.
    pub fn new(local: Nic, rank: Rank, routes: Vec<Route>, conns: Vec<(Rank, Conn)>) -> HostNet {
        let n = conns.len();
        let (conn_rank, conns) = conns.into_iter().unzip();
        crate::wait::note_polls_are_system_calls();
        let mut local_rank = vec![0; local.nranks()];
        for (r, route) in routes.iter().enumerate() {
            if let Route::Local(l) = *route {
                local_rank[l] = r;
            }
        }
        HostNet {
            local,
            rank,
            nranks: routes.len(),
            routes,
            local_rank,
            turn: 0,
            conns,
            conn_rank,
            reads: Vec::new(),
            free_reads: Vec::new(),
            polled: vec![false; n],
            parked: vec![Default::default(); n],
            write_refused: vec![None; n],
            notes: VecDeque::new(),
            replies: Vec::new(),
            next_request: 0,
            net: Counters::default(),
            merged: Counters::default(),
        }
    }

    /// How `rank` is reached.
    pub fn route(&self, rank: Rank) -> Route {
        self.routes[rank]
    }

    fn check(&self, peer: Rank) -> Result<Route> {
        self.routes.get(peer).copied().ok_or(NicError::BadRank {
            rank: peer,
            nranks: self.nranks,
        })
    }

    fn gone(&self, c: usize) -> NicError {
        NicError::PeerDead {
            rank: self.conn_rank[c],
            why: "its connection is broken",
        }
    }

    /// Handles what arrived on connection `c` until a packet is lent to `take` (`true`), or,
    /// without `take`, until nothing more has arrived (packets on the way are parked).
    fn pump(&mut self, c: usize, mut take: Option<Take<'_>>) -> bool {
        let HostNet {
            local,
            conns,
            conn_rank,
            reads,
            write_refused,
            net,
            parked,
            notes,
            replies,
            ..
        } = self;
        if let Some(take) = take.as_mut() {
            if let Some(p) = parked[c].pop_front() {
                take(conn_rank[c], &p);
                return true;
            }
        }
        let conn = &mut conns[c];
        loop {
            let incoming = match conn.next() {
                Ok(Some(i)) => i,
                Ok(None) => return false,
                // Broken: the state says so, and reads on it fail in `poll_transfer`.
                Err(_) => return false,
            };
            match incoming {
                Incoming::Packet(p) => {
                    net.packets_rx += 1;
                    net.bytes_rx += p.len() as u64;
                    match take {
                        Some(take) => {
                            take(conn_rank[c], p);
                            conn.consume();
                            return true;
                        }
                        None => {
                            parked[c].push_back(p.to_vec());
                            conn.consume();
                        }
                    }
                }
                Incoming::ReadRequest { id, req } => {
                    conn.consume();
                    serve_read(local, conn, id, req);
                }
                Incoming::DataStart { id, offset, len } => {
                    let slot = reads
                        .get((id & !REMOTE) as usize)
                        .and_then(Option::as_ref)
                        .filter(|r| id & REMOTE != 0 && r.conn == c);
                    let ptr = match slot {
                        Some(r)
                            if (offset as usize)
                                .checked_add(len)
                                .is_some_and(|e| e <= r.len) =>
                        {
                            // SAFETY: inside the reader's buffer (checked just above).
                            unsafe { r.local.add(offset as usize) }
                        }
                        _ => std::ptr::null_mut(),
                    };
                    // SAFETY: `read_region`'s caller keeps the buffer valid until the
                    // transfer completes, which is after every chunk of it.
                    unsafe { conn.land(id, ptr, len) };
                }
                Incoming::DataDone { id, len } => {
                    net.dma_ops += 1;
                    net.dma_bytes += len as u64;
                    if let Some(Some(r)) = reads.get_mut((id & !REMOTE) as usize) {
                        r.got += len;
                    }
                }
                Incoming::ReadRefused { id, why } => {
                    conn.consume();
                    if let Some(Some(r)) = reads.get_mut((id & !REMOTE) as usize) {
                        r.refused = Some(why);
                    }
                }
                Incoming::Write {
                    key,
                    offset,
                    bytes,
                    notify_from,
                } => {
                    let end = offset + bytes.len() as u64;
                    let refused = apply_write(local, key, offset, bytes).err();
                    conn.consume();
                    match (refused, notify_from) {
                        (Some(why), _) => {
                            conn.send_frame(Kind::WriteRefused, why.len(), 0, 0, &mut |b| {
                                b.copy_from_slice(why.as_bytes())
                            })
                        }
                        // The data is in place: the notification may be seen.
                        (None, Some(from)) => notes.push_back(Notification {
                            from: conn_rank[c],
                            name: local.name_of(key).unwrap_or(Name::new(0)),
                            offset: from as usize,
                            len: end.saturating_sub(from) as usize,
                        }),
                        (None, None) => {}
                    }
                }
                Incoming::Lookup { id, name } => {
                    conn.consume();
                    match local.find_named(Name::new(name)) {
                        Ok((key, info)) => {
                            let b = frame::lookup_found(key, info.len as u64, info.access.bits());
                            conn.send_frame(Kind::LookupFound, b.len(), id, 0, &mut |p| {
                                p.copy_from_slice(&b)
                            });
                        }
                        Err(e) => {
                            let why = e.to_string();
                            conn.send_frame(Kind::LookupRefused, why.len(), id, 0, &mut |p| {
                                p.copy_from_slice(why.as_bytes())
                            });
                        }
                    }
                }
                Incoming::LookupFound {
                    id,
                    key,
                    len,
                    access,
                } => {
                    conn.consume();
                    let info = RegionInfo {
                        // Not ours to know: the region lies in the other host's memory.
                        addr: 0,
                        len: len as usize,
                        access: Access::from_bits(access),
                    };
                    replies.push((id, Reply::Found(key, info)));
                }
                Incoming::LookupRefused { id, why } => {
                    conn.consume();
                    replies.push((id, Reply::Refused(why)));
                }
                Incoming::Fence(id) => {
                    conn.consume();
                    conn.send_frame(Kind::FenceDone, 0, id, 0, &mut |_| {});
                }
                Incoming::FenceDone(id) => {
                    conn.consume();
                    replies.push((id, Reply::Done));
                }
                Incoming::WriteRefused(why) => {
                    conn.consume();
                    write_refused[c] = Some(why);
                }
                Incoming::Bye => conn.consume(),
            }
        }
    }

    /// Sends a lookup or fence to connection `c` (`fill` writes its payload) and waits for
    /// the answer, doing the device's work meanwhile; an error if the connection breaks.
    fn request(&mut self, c: usize, kind: Kind, payload: &[u8]) -> Result<Reply> {
        if self.conns[c].state != ConnState::Open {
            return Err(self.gone(c));
        }
        let id = self.next_request;
        self.next_request = self.next_request.wrapping_add(1);
        self.conns[c].send_frame(kind, payload.len(), id, 0, &mut |b| {
            b.copy_from_slice(payload)
        });
        let mut backoff = crate::wait::Backoff::new();
        loop {
            self.pump(c, None);
            if let Some(i) = self.replies.iter().position(|(r, _)| *r == id) {
                return Ok(self.replies.swap_remove(i).1);
            }
            if matches!(self.conns[c].state, ConnState::Broken(_)) {
                return Err(self.gone(c));
            }
            if !self.progress() {
                backoff.snooze();
            }
        }
    }

    /// Posts a deliberate update (or a plain write) to connection `c` as `Write` chunks, the
    /// last one flagged if it raises a notification. A chunk waits while the connection's
    /// queue is over its limit (the device's work goes on meanwhile, the peer's writes to us
    /// included, so that two ranks streaming to each other do not wait on each other).
    fn post_write(&mut self, c: usize, key: RegionKey, offset: usize, local: &[u8], notify: bool) {
        let chunks = local.len().div_ceil(WRITE_CHUNK).max(1);
        for i in 0..chunks {
            let mut backoff = crate::wait::Backoff::new();
            while !self.conns[c].has_room() && self.conns[c].state == ConnState::Open {
                if !self.conns[c].flush() {
                    self.pump(c, None);
                    backoff.snooze();
                }
            }
            let part = &local
                [(i * WRITE_CHUNK).min(local.len())..((i + 1) * WRITE_CHUNK).min(local.len())];
            let at = (offset + i * WRITE_CHUNK) as u64;
            let prefix = frame::write_prefix(key, at);
            let flags = if notify && i + 1 == chunks {
                frame::WRITE_NOTIFY
            } else {
                0
            };
            self.conns[c].send_frame(
                Kind::Write,
                WRITE_PREFIX_LEN + part.len(),
                flags,
                offset as u64,
                &mut |b| {
                    b[..WRITE_PREFIX_LEN].copy_from_slice(&prefix);
                    b[WRITE_PREFIX_LEN..].copy_from_slice(part);
                },
            );
        }
    }

    fn free_read(&mut self, id: u32) -> Option<RemoteRead> {
        let r = self.reads.get_mut(id as usize)?.take()?;
        self.free_reads.push(id);
        Some(r)
    }
}

/// The answer to a lookup or a fence.
enum Reply {
    Found(RegionKey, RegionInfo),
    Refused(String),
    Done,
}

/// Serves a peer's read of one of our regions: its chunks go from the region itself, or a
/// refusal.
fn serve_read(local: &Nic, conn: &mut Conn, id: u32, req: ReadRequest) {
    let checked = local
        .local_region(req.key)
        .map_err(|e| e.to_string())
        .and_then(|info| {
            let (offset, len) = (req.offset as usize, req.len as usize);
            info.check(offset, len, Access::READ)
                .map(|()| (info.addr + offset, len))
                .map_err(|why| format!("{} refused: {why}", req.key))
        });
    match checked {
        // SAFETY: the region is exported, so its bytes stay valid until it is withdrawn, and
        // `HostNet::deregister` detaches the chunks still queued before it withdraws it.
        Ok((addr, len)) => unsafe { conn.send_region(id, addr as *const u8, len) },
        Err(why) => conn.send_frame(Kind::ReadRefused, why.len(), id, 0, &mut |b| {
            b.copy_from_slice(why.as_bytes())
        }),
    }
}

/// Applies a peer's deliberate update to one of our regions.
fn apply_write(local: &Nic, key: RegionKey, offset: u64, bytes: &[u8]) -> Result<(), String> {
    let info = local.local_region(key).map_err(|e| e.to_string())?;
    info.check(offset as usize, bytes.len(), Access::WRITE)
        .map_err(|why| format!("{key} refused: {why}"))?;
    // SAFETY: the region is exported writable and the bytes lie inside it (checked); the
    // exporter agreed that its bytes change under it while exported (`register`'s contract).
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            (info.addr + offset as usize) as *mut u8,
            bytes.len(),
        )
    };
    Ok(())
}

impl Device for HostNet {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    fn capabilities(&self) -> Capabilities {
        // TCP delivers in order without loss, so the local NIC's promise holds for every route.
        self.local.capabilities()
    }

    #[inline]
    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        match self.routes[dest] {
            Route::Local(l) => self.local.send(l, len, fill),
            Route::Remote(c) => {
                let mtu = self.local.capabilities().mtu;
                assert!(len <= mtu, "packet of {len} bytes exceeds the mtu of {mtu}");
                let conn = &mut self.conns[c];
                if conn.state != ConnState::Open {
                    return false;
                }
                if !conn.has_room() {
                    conn.flush();
                    if !conn.has_room() {
                        self.net.stalls += 1;
                        return false;
                    }
                }
                conn.send_frame(Kind::Packet, len, 0, 0, fill);
                self.net.packets_tx += 1;
                self.net.bytes_tx += len as u64;
                true
            }
        }
    }

    /// Takes turns between the host's fabric and each connection, one packet per turn, so
    /// that neither a local flood nor a remote one holds the other back.
    #[inline]
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        let paths = self.conns.len() + 1;
        for _ in 0..paths {
            let t = self.turn;
            self.turn = if t + 1 == paths { 0 } else { t + 1 };
            let got = if t == 0 {
                let job_rank = &self.local_rank;
                self.local.poll(&mut |l, p| take(job_rank[l], p))
            } else {
                self.polled[t - 1] = true;
                self.pump(t - 1, Some(&mut *take))
            };
            if got {
                return true;
            }
        }
        false
    }

    fn progress(&mut self) -> bool {
        let mut did = self.local.progress();
        for c in 0..self.conns.len() {
            if self.conns[c].tx_pending() {
                did |= self.conns[c].flush();
            }
            // Serve peers' reads and take in read data even when nobody polls for packets.
            if !std::mem::take(&mut self.polled[c]) {
                self.pump(c, None);
            }
        }
        let mut m = *self.local.counters();
        let n = &self.net;
        m.packets_tx += n.packets_tx;
        m.bytes_tx += n.bytes_tx;
        m.packets_rx += n.packets_rx;
        m.bytes_rx += n.bytes_rx;
        m.stalls += n.stalls;
        m.dma_ops += n.dma_ops;
        m.dma_bytes += n.dma_bytes;
        self.merged = m;
        did
    }

    unsafe fn register(&mut self, addr: usize, len: usize, access: Access) -> Result<RegionKey> {
        // SAFETY: the caller's contract is passed on.
        unsafe { self.local.register(addr, len, access) }
    }

    fn deregister(&mut self, region: RegionKey) -> Result<()> {
        if let Ok(info) = self.local.local_region(region) {
            for conn in self.conns.iter_mut().filter(|c| c.tx_pending()) {
                conn.detach(info.addr, info.len);
            }
        }
        self.local.deregister(region)
    }

    fn import(&mut self, peer: Rank, key: RegionKey) -> Result<RegionInfo> {
        match self.check(peer)? {
            Route::Local(l) => self.local.import(l, key),
            Route::Remote(_) => Err(NicError::NoSingleCopy { rank: peer }),
        }
    }

    fn local_region(&self, key: RegionKey) -> Result<RegionInfo> {
        self.local.local_region(key)
    }

    unsafe fn read_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: *mut u8,
        len: usize,
    ) -> Result<Transfer> {
        let c = match self.check(peer)? {
            // SAFETY: the caller's contract is passed on.
            Route::Local(l) => {
                return unsafe { self.local.read_region(l, key, offset, local, len) }
            }
            Route::Remote(c) => c,
        };
        if self.conns[c].state != ConnState::Open {
            return Err(self.gone(c));
        }
        if len == 0 {
            return Ok(Transfer::Done);
        }
        let read = RemoteRead {
            conn: c,
            local,
            len,
            got: 0,
            refused: None,
        };
        let slot = match self.free_reads.pop() {
            Some(i) => {
                self.reads[i as usize] = Some(read);
                i
            }
            None => {
                self.reads.push(Some(read));
                (self.reads.len() - 1) as u32
            }
        };
        let id = slot | REMOTE;
        let req = ReadRequest {
            key,
            offset: offset as u64,
            len: len as u64,
        }
        .emit();
        self.conns[c].send_frame(Kind::ReadRequest, READ_REQUEST_LEN, id, 0, &mut |b| {
            b.copy_from_slice(&req)
        });
        Ok(Transfer::Pending(TransferId(id)))
    }

    fn write_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
    ) -> Result<()> {
        let c = match self.check(peer)? {
            Route::Local(l) => return self.local.write_region(l, key, offset, local),
            Route::Remote(c) => c,
        };
        if let Some(why) = self.write_refused[c].take() {
            return Err(NicError::RegionRefused { rank: peer, why });
        }
        if self.conns[c].state != ConnState::Open {
            return Err(self.gone(c));
        }
        // Posted: the exporter's device applies it when it reads the frame; a refusal comes
        // back and is reported by the next write to that peer.
        if !local.is_empty() {
            self.post_write(c, key, offset, local, false);
        }
        Ok(())
    }

    unsafe fn export_named(
        &mut self,
        name: Name,
        addr: usize,
        len: usize,
        access: Access,
    ) -> Result<RegionKey> {
        // SAFETY: the caller's contract is passed on.
        unsafe { self.local.export_named(name, addr, len, access) }
    }

    fn import_named(&mut self, peer: Rank, name: Name) -> Result<(RegionKey, RegionInfo)> {
        let c = match self.check(peer)? {
            Route::Local(l) => return self.local.import_named(l, name),
            Route::Remote(c) => c,
        };
        match self.request(c, Kind::Lookup, &name.get().to_le_bytes())? {
            Reply::Found(key, info) => Ok((key, info)),
            Reply::Refused(why) => Err(NicError::RegionRefused { rank: peer, why }),
            Reply::Done => unreachable!("a lookup is answered by a lookup answer"),
        }
    }

    fn update(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
        notify: Option<Name>,
    ) -> Result<()> {
        let c = match self.check(peer)? {
            Route::Local(l) => return self.local.update(l, key, offset, local, notify),
            Route::Remote(c) => c,
        };
        if let Some(why) = self.write_refused[c].take() {
            return Err(NicError::RegionRefused { rank: peer, why });
        }
        if self.conns[c].state != ConnState::Open {
            return Err(self.gone(c));
        }
        if !local.is_empty() || notify.is_some() {
            self.post_write(c, key, offset, local, notify.is_some());
        }
        Ok(())
    }

    fn poll_notification(&mut self) -> Option<Notification> {
        if let Some(mut n) = self.local.poll_notification() {
            n.from = self.local_rank[n.from];
            return Some(n);
        }
        if self.notes.is_empty() {
            self.progress();
        }
        self.notes.pop_front()
    }

    fn complete_updates(&mut self, peer: Rank) -> Result<()> {
        let c = match self.check(peer)? {
            Route::Local(l) => return self.local.complete_updates(l),
            Route::Remote(c) => c,
        };
        self.request(c, Kind::Fence, &[])?;
        match self.write_refused[c].take() {
            Some(why) => Err(NicError::RegionRefused { rank: peer, why }),
            None => Ok(()),
        }
    }

    fn poll_transfer(&mut self, id: TransferId) -> Result<bool> {
        if id.0 & REMOTE == 0 {
            return self.local.poll_transfer(id);
        }
        let slot = id.0 & !REMOTE;
        let Some(Some(r)) = self.reads.get(slot as usize) else {
            return Err(NicError::Config(format!("no transfer {}", id.0)));
        };
        let c = r.conn;
        if r.got < r.len && r.refused.is_none() {
            self.pump(c, None);
        }
        let r = self.reads[slot as usize].as_ref().expect("still there");
        if r.refused.is_none() && r.got < r.len {
            if let ConnState::Broken(_) = self.conns[c].state {
                self.free_read(slot);
                return Err(self.gone(c));
            }
        }
        if let Some(why) = &r.refused {
            let (rank, why) = (self.conn_rank[c], why.clone());
            self.free_read(slot);
            return Err(NicError::RegionRefused { rank, why });
        }
        if r.got == r.len {
            self.free_read(slot);
            return Ok(true);
        }
        Ok(false)
    }

    fn peer_status(&self, peer: Rank) -> PeerStatus {
        match self.routes.get(peer) {
            Some(Route::Local(l)) => self.local.peer_status(*l),
            Some(Route::Remote(c)) => match self.conns[*c].state {
                ConnState::Open => PeerStatus::Alive,
                ConnState::Finalized => PeerStatus::Finalized,
                ConnState::Broken(_) => PeerStatus::Dead,
            },
            None => PeerStatus::Dead,
        }
    }

    fn counters(&self) -> &Counters {
        &self.merged
    }

    fn profile(&self) -> Option<&Profile> {
        self.local.profile()
    }

    fn set_protocol_header(&mut self, bytes: usize) {
        self.local.set_protocol_header(bytes)
    }

    fn finalize(&mut self) {
        for conn in &mut self.conns {
            if conn.state == ConnState::Open {
                conn.send_frame(Kind::Bye, 0, 0, 0, &mut |_| {});
            }
            conn.drain(DRAIN_LIMIT);
        }
        self.local.finalize();
    }
}
