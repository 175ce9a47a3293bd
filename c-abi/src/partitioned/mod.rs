//! Partitioned point-to-point communication (MPI 4.0 §4): `MPI_Psend_init`, `MPI_Precv_init`,
//! `MPI_Pready`, `MPI_Pready_range`, `MPI_Pready_list`, `MPI_Parrived`, and their requests'
//! runs under `MPI_Start`/`MPI_Startall`, the completion calls and `MPI_Request_free`.
//!
//! ```text
//!   sender                                                receiver
//!   Psend_init ─ channel k (this process's next)          Precv_init
//!   Start #1 ──hello {tag, k, S partitions, bytes}──────▶ Start #1: hello receive posted
//!   Pready(p) ──partition p: tag DATA|k|p─────────────▶  hello arrives: S receives posted,
//!      (each partition its own message, as soon as        sender partition p at byte p·B/S
//!       it is ready, in any order)                         Parrived(r): the sender partitions
//!   round over: every partition ready and sent            covering r's bytes have arrived
//!   Start #2.. ──partition messages only──────────────▶  Start #2..: the S receives again
//! ```
//!
//! **Requests.** A partitioned request is a persistent engine request carrying a
//! [`crate::p2p::request::Foreign`] attachment, so `MPI_Start`, `MPI_Startall`, `MPI_Wait`,
//! `MPI_Test` (and the `all`/`any`/`some` forms) and `MPI_Request_free` treat it as any
//! persistent request. Each start runs one round: an engine [`Operation`]
//! (`Engine::start_persistent`) that the progress engine polls on every turn and that
//! completes the request when the round is over: for a send, once every partition was
//! marked ready and its message has left; for a receive, once every partition's message has
//! arrived (and, for a non-contiguous datatype, been unpacked). The request's state is shared
//! (`Rc<RefCell<Part>>`) between its attachment, which `MPI_Pready`/`MPI_Parrived` reach
//! through the handle, and the round's operation.
//!
//! **Matching.** A send and a receive request are matched once, at their first start, the way
//! MPICH's partitioned requests do with an initial handshake: the sender's first round sends a
//! hello on the communicator's collective context (tag `TAG_HELLO` plus the user's tag's low 24
//! bits), which the receiver's first round receives (in order, from that source: MPI's
//! matching order of the `_init` calls); it names the sender's channel `k` (a number of the
//! sending process), its partition count and its byte count. Every later message of the pair
//! carries `k` and the partition in its tag (`TAG_DATA | k << 18 | p`), so partitions may be
//! sent in any order and rounds stay apart (messages of one tag never overtake each other,
//! and a round's receives are posted only after the previous round completed). The sender
//! never waits for the receiver: its partition messages may arrive before the receiver has
//! started; they wait among the unexpected messages.
//!
//! **Different partition counts.** MPI lets the two sides cut the same data differently. The
//! receiver posts one receive per *sender* partition, each landing at its byte offset in the
//! receive buffer (or in a staging buffer for a non-contiguous datatype), so the data arrives
//! where it belongs whatever the counts; `MPI_Parrived(r)` is true once every sender partition
//! overlapping receive partition `r`'s bytes has arrived (then `r` is unpacked, if staged).
//! The byte counts must agree: a receive whose hello announces another size completes with
//! `MPI_ERR_TRUNCATE`.
//!
//! **Limits.** At most 2^18 partitions per send request, and 4096 send requests of one process
//! in use at once between the same pair of processes (channel numbers are reused after that).
//! Two pairs of requests between the same processes on the same communicator whose tags agree
//! in their low 24 bits must be started in the same order on both sides (as their `_init`
//! calls were); a hello of another tag is reported, not misrouted. MPICH 4.0 has no
//! `MPI_ERR_PARTITION` class: a partition out of range is `MPI_ERR_ARG`, `MPI_Pready` on an
//! inactive request or a receive request (and `MPI_Parrived` on a send request) is
//! `MPI_ERR_REQUEST`, a partition marked ready twice in one round `MPI_ERR_ARG`.

mod api;

use crate::abi::*;
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::p2p::args::{RecvOp, SendOp};
use crate::p2p::nonblocking::born_complete;
use crate::p2p::request::{self, Foreign, ForeignRun, Staging, Starter};
use crate::p2p::status::Completion;
use mpich_channel::{Adi, Engine, Operation, ReqId, SendMode, Standing, Status};
use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

/// Tag of a pair's hello on the collective context (plus the user's tag's low 24 bits);
/// above the files' two-phase exchanges (`0x3800_0000`).
const TAG_HELLO: c_int = 0x3900_0000;
/// Tags of partition messages: `TAG_DATA | channel << PARTITION_BITS | partition`.
const TAG_DATA: c_int = 0x4000_0000;
const PARTITION_BITS: u32 = 18;
const CHANNEL_BITS: u32 = 12;
/// The most partitions a send request may have.
pub(crate) const MAX_SEND_PARTITIONS: usize = 1 << PARTITION_BITS;
/// Bytes of a hello: user tag, channel, partitions, unused, total bytes (little-endian).
const HELLO_BYTES: usize = 24;

/// The next channel number of this process's send requests.
static NEXT_CHANNEL: AtomicU32 = AtomicU32::new(0);

fn hello_tag(tag: c_int) -> c_int {
    TAG_HELLO + (tag & 0x00ff_ffff)
}

fn data_tag(channel: u32, partition: usize) -> c_int {
    let channel = channel & ((1 << CHANNEL_BITS) - 1);
    TAG_DATA | (channel << PARTITION_BITS) as c_int | partition as c_int
}

/// One side of a partitioned pair: what both sides have, and the side's own state.
pub(crate) struct Part {
    comm: CommIdx,
    /// The peer's engine rank; `None` for `MPI_PROC_NULL` (every round completes at once).
    peer: Option<usize>,
    tag: c_int,
    /// The communicator's collective context, which the pair's messages use.
    ctx: u16,
    /// This side's partitions, and the bytes of each.
    partitions: usize,
    part_bytes: usize,
    /// Elements of the datatype per partition, and its extent (a partition's place in the
    /// buffer for a non-contiguous datatype).
    count: usize,
    extent: isize,
    side: Side,
}

enum Side {
    Send(SendSide),
    Recv(RecvSide),
}

struct SendSide {
    /// The whole buffer, `partitions * count` elements.
    op: SendOp,
    channel: u32,
    /// The hello, once sent (kept: its send reads it), and its request while it runs.
    hello: Option<Vec<u8>>,
    hello_req: Option<ReqId>,
    /// This round: which partitions are marked ready, and their sends.
    ready: Vec<bool>,
    sends: Vec<Option<ReqId>>,
}

struct RecvSide {
    op: RecvOp,
    hello_buf: Vec<u8>,
    hello_req: Option<ReqId>,
    /// What the hello said: the sender's channel and partition count.
    sender: Option<(u32, usize)>,
    /// Where a non-contiguous datatype's data lands before it is unpacked.
    staging: Option<Vec<u8>>,
    /// This round: the receive of each sender partition, and which receive partitions were
    /// unpacked (staged data).
    recvs: Vec<Option<ReqId>>,
    unpacked: Vec<bool>,
    /// Why the pair cannot proceed (an error class), once known.
    failed: Option<(c_int, String)>,
}

/// A partitioned request's attachment: its shared state.
struct PartRequest(Rc<RefCell<Part>>);

impl ForeignRun for PartRequest {
    fn starter(&mut self) -> Starter {
        let part = Rc::clone(&self.0);
        Box::new(move |engine: &mut Engine, id: ReqId| start(engine, id, part))
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The checked arguments of `MPI_Psend_init` / `MPI_Precv_init`.
pub(crate) struct Init {
    pub comm: CommIdx,
    pub peer: Option<usize>,
    pub tag: c_int,
    pub ctx: u16,
    pub partitions: usize,
    pub count: usize,
    pub extent: isize,
}

/// Makes an inactive partitioned send request: `op` is the whole buffer.
pub(crate) fn psend_init(engine: &mut Engine, init: Init, op: SendOp) -> MpiResult<ReqId> {
    let n = init.partitions;
    let side = Side::Send(SendSide {
        op,
        channel: NEXT_CHANNEL.fetch_add(1, Ordering::Relaxed),
        hello: None,
        hello_req: None,
        ready: vec![false; n],
        sends: vec![None; n],
    });
    make(engine, init, side)
}

/// Makes an inactive partitioned receive request: `op` is the whole buffer.
pub(crate) fn precv_init(engine: &mut Engine, init: Init, op: RecvOp) -> MpiResult<ReqId> {
    let n = init.partitions;
    let side = Side::Recv(RecvSide {
        op,
        hello_buf: vec![0; HELLO_BYTES],
        hello_req: None,
        sender: None,
        staging: None,
        recvs: Vec::new(),
        unpacked: vec![false; n],
        failed: None,
    });
    make(engine, init, side)
}

fn make(engine: &mut Engine, init: Init, side: Side) -> MpiResult<ReqId> {
    let total = init.partitions * init.count;
    let bytes = match &side {
        Side::Send(s) => s.op.bytes,
        Side::Recv(r) => r.op.cap,
    };
    let part = Part {
        comm: init.comm,
        peer: init.peer,
        tag: init.tag,
        ctx: init.ctx,
        partitions: init.partitions,
        part_bytes: if total == 0 {
            0
        } else {
            bytes / init.partitions
        },
        count: init.count,
        extent: init.extent,
        side,
    };
    let attachment = Foreign(Box::new(PartRequest(Rc::new(RefCell::new(part)))));
    engine
        .p2p()
        .persistent(init.comm, Box::new(attachment))
        .map_err(|e| MpiError::from(e).on(init.comm))
}

/// The shared state of partitioned request `id`, if it is one.
fn part_of(engine: &mut Engine, id: ReqId) -> Option<Rc<RefCell<Part>>> {
    let a = engine.p2p().attachment(id)?;
    let f = a.as_any_mut().downcast_mut::<Foreign>()?;
    let p = f.0.as_any_mut().downcast_mut::<PartRequest>()?;
    Some(Rc::clone(&p.0))
}

/// The partitioned request behind a handle, and its state.
pub(crate) fn lookup(engine: &mut Engine, h: MPI_Request) -> MpiResult<(ReqId, Rc<RefCell<Part>>)> {
    if h == MPI_REQUEST_NULL {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is MPI_REQUEST_NULL; pass a request of MPI_Psend_init or MPI_Precv_init",
        ));
    }
    let id = request::lookup(engine, h)?;
    match part_of(engine, id) {
        Some(p) => Ok((id, p)),
        None => Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is not a partitioned request (made by MPI_Psend_init or MPI_Precv_init)",
        )
        .on(request::comm_of(engine, id))),
    }
}

/// `MPI_Start` of a partitioned request: starts its next round.
fn start(engine: &mut Engine, id: ReqId, part: Rc<RefCell<Part>>) -> MpiResult<()> {
    let comm = part.borrow().comm;
    let on = |e: mpich_channel::AdiError| MpiError::from(e).on(comm);
    {
        let mut p = part.borrow_mut();
        match &mut p.side {
            Side::Send(s) => s.ready.iter_mut().for_each(|r| *r = false),
            Side::Recv(r) => r.unpacked.iter_mut().for_each(|u| *u = false),
        }
        let Some(peer) = p.peer else {
            drop(p);
            let done = born_complete(Completion::PROC_NULL);
            return engine.p2p().start_persistent_done(id, done).map_err(on);
        };
        let p = &mut *p;
        match &mut p.side {
            Side::Send(s) => {
                if s.hello.is_none() {
                    let mut hello = Vec::with_capacity(HELLO_BYTES);
                    hello.extend_from_slice(&p.tag.to_le_bytes());
                    hello.extend_from_slice(&s.channel.to_le_bytes());
                    hello.extend_from_slice(&(p.partitions as u32).to_le_bytes());
                    hello.extend_from_slice(&0u32.to_le_bytes());
                    hello.extend_from_slice(&(s.op.bytes as u64).to_le_bytes());
                    // SAFETY: the hello's heap buffer is kept in the request's state for as
                    // long as the request lives (it is never replaced), after its send.
                    let req = unsafe {
                        engine.p2p().isend(
                            hello.as_ptr(),
                            hello.len(),
                            peer,
                            hello_tag(p.tag),
                            p.ctx,
                            SendMode::Standard,
                            comm,
                        )
                    }
                    .map_err(on)?;
                    s.hello = Some(hello);
                    s.hello_req = Some(req);
                }
            }
            Side::Recv(r) => {
                if r.failed.is_none() {
                    match r.sender {
                        Some(_) => {
                            post_receives(engine.p2p(), p.comm, p.ctx, peer, r).map_err(on)?
                        }
                        None if r.hello_req.is_none() => {
                            // SAFETY: the hello buffer lives in the request's state, never
                            // replaced, until the receive completes.
                            let req = unsafe {
                                engine.p2p().irecv(
                                    r.hello_buf.as_mut_ptr(),
                                    HELLO_BYTES,
                                    peer as i32,
                                    hello_tag(p.tag),
                                    p.ctx,
                                    comm,
                                )
                            }
                            .map_err(on)?;
                            r.hello_req = Some(req);
                        }
                        None => {}
                    }
                }
            }
        }
    }
    engine
        .start_persistent(id, Box::new(Round(part)))
        .map_err(on)
}

/// Posts the receives of one round: one per sender partition, at its byte offset.
fn post_receives(
    p2p: &mut Adi,
    comm: CommIdx,
    ctx: u16,
    peer: usize,
    r: &mut RecvSide,
) -> mpich_channel::Result<()> {
    let Some((channel, sender_parts)) = r.sender else {
        return Ok(());
    };
    let total = r.op.cap;
    let each = total.checked_div(sender_parts).unwrap_or(0);
    let base = match &mut r.staging {
        Some(s) => s.as_mut_ptr(),
        None => crate::cptr::nonnull_or_dangling(r.op.buf).cast_mut(),
    };
    r.recvs.clear();
    for q in 0..sender_parts {
        // SAFETY: sender partition q lands in bytes q*each..(q+1)*each of the receive buffer
        // (the user's, untouched by the program while the round runs, by MPI's rule; or the
        // request's staging buffer, kept until the request is freed): inside its `total`.
        let req = unsafe {
            p2p.irecv(
                base.wrapping_add(q * each),
                each,
                peer as i32,
                data_tag(channel, q),
                ctx,
                comm,
            )
        }?;
        r.recvs.push(Some(req));
    }
    Ok(())
}

/// The range of sender partitions whose bytes overlap receive partition `r`. Without bytes
/// (a zero count) every receive partition waits for every sender partition: a partition has
/// arrived when the sender made it ready, not merely because there is nothing to move.
fn covering(part: &Part, sender_parts: usize, partition: usize) -> std::ops::Range<usize> {
    let total = part.partitions * part.part_bytes;
    if part.part_bytes == 0 || sender_parts == 0 {
        return 0..sender_parts;
    }
    let each = total / sender_parts;
    let (lo, hi) = (
        partition * part.part_bytes,
        (partition + 1) * part.part_bytes,
    );
    lo / each..(hi - 1) / each + 1
}

impl Part {
    /// Unpacks receive partition `r` from the staging buffer (once per round).
    fn unpack(&mut self, partition: usize) {
        let (count, extent, part_bytes) = (self.count, self.extent, self.part_bytes);
        let Side::Recv(r) = &mut self.side else {
            return;
        };
        let (Some(staging), Some(t)) = (&r.staging, &r.op.scattered) else {
            return;
        };
        if r.unpacked[partition] {
            return;
        }
        r.unpacked[partition] = true;
        // SAFETY: partition r's packed bytes are at r*part_bytes in the staging buffer
        // (arrived: its covering receives completed); its elements start r*count extents
        // into the user's receive buffer, which holds `partitions * count` elements.
        unsafe {
            t.unpack(
                staging.as_ptr().add(partition * part_bytes),
                part_bytes,
                r.op.buf
                    .wrapping_offset(partition as isize * count as isize * extent),
                count,
            )
        }
    }
}

/// One round of a partitioned request, polled by the progress engine.
struct Round(Rc<RefCell<Part>>);

impl Operation for Round {
    fn poll(&mut self, p2p: &mut Adi) -> mpich_channel::Result<Option<Status>> {
        let mut part = self.0.borrow_mut();
        let p = &mut *part;
        let peer = p.peer.unwrap_or(0);
        let done = Status {
            source: peer as i32,
            tag: p.tag,
            len: p.partitions * p.part_bytes,
            ..Status::default()
        };
        match &mut p.side {
            Side::Send(s) => {
                if let Some(h) = s.hello_req {
                    if !p2p.is_complete(h) {
                        return Ok(None);
                    }
                    p2p.take(h)?;
                    s.hello_req = None;
                }
                if !s.ready.iter().all(|&r| r) {
                    return Ok(None);
                }
                if !s.sends.iter().flatten().all(|&q| p2p.is_complete(q)) {
                    return Ok(None);
                }
                for q in s.sends.iter_mut() {
                    if let Some(q) = q.take() {
                        p2p.take(q)?;
                    }
                }
                Ok(Some(done))
            }
            Side::Recv(r) => {
                if r.sender.is_none() && r.failed.is_none() {
                    let Some(h) = r.hello_req.filter(|&h| p2p.is_complete(h)) else {
                        return Ok(None);
                    };
                    p2p.take(h)?;
                    r.hello_req = None;
                    let total = r.op.cap;
                    match read_hello(&r.hello_buf, p.tag, total) {
                        Ok((channel, parts)) => {
                            r.sender = Some((channel, parts));
                            if r.op.scattered.is_some() {
                                r.staging = Some(vec![0; total]);
                            }
                            post_receives(p2p, p.comm, p.ctx, peer, r)?;
                        }
                        Err(why) => r.failed = Some(why),
                    }
                }
                if let Some((class, _)) = &r.failed {
                    return Ok(Some(Status {
                        error: *class,
                        ..done
                    }));
                }
                if !r.recvs.iter().flatten().all(|&q| p2p.is_complete(q)) {
                    return Ok(None);
                }
                let mut truncated = false;
                for q in r.recvs.iter_mut() {
                    if let Some(q) = q.take() {
                        truncated |= p2p.take(q)?.is_some_and(|s| s.truncated);
                    }
                }
                for partition in 0..p.partitions {
                    p.unpack(partition);
                }
                Ok(Some(Status { truncated, ..done }))
            }
        }
    }
}

/// The sender's channel and partition count from a hello, or why it does not fit this
/// receive (an error class and a message).
fn read_hello(b: &[u8], tag: c_int, total: usize) -> Result<(u32, usize), (c_int, String)> {
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let their_tag = word(0) as c_int;
    let (channel, parts) = (word(4), word(8) as usize);
    let bytes = u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")) as usize;
    if their_tag != tag {
        return Err((
            MPI_ERR_OTHER,
            format!("the partitioned send matched first has tag {their_tag}, not {tag}: start partitioned pairs whose tags agree in their low 24 bits in the same order on both sides"),
        ));
    }
    if bytes != total {
        return Err((
            MPI_ERR_TRUNCATE,
            format!("the partitioned send has {bytes} bytes in all and this receive {total}; both sides must describe the same amount of data"),
        ));
    }
    if parts == 0 || (bytes > 0 && !bytes.is_multiple_of(parts)) {
        return Err((
            MPI_ERR_OTHER,
            format!("the partitioned send announced {parts} partitions of {bytes} bytes"),
        ));
    }
    Ok((channel, parts))
}

/// Checks a partition number against a request's count.
fn check_partition(part: &Part, partition: c_int) -> MpiResult<usize> {
    usize::try_from(partition)
        .ok()
        .filter(|&p| p < part.partitions)
        .ok_or_else(|| {
            MpiError::new(
                MPI_ERR_ARG,
                format!(
                    "partition {partition} is out of range: the request has {} partitions (0..={})",
                    part.partitions,
                    part.partitions as i64 - 1
                ),
            )
            .on(part.comm)
        })
}

/// `MPI_Pready`, `MPI_Pready_range`, `MPI_Pready_list`: marks `partitions` ready and sends
/// them. Every partition is checked first (range, not ready yet this round); then each is
/// sent, in the order given.
pub(crate) fn pready(
    engine: &mut Engine,
    h: MPI_Request,
    partitions: &mut dyn Iterator<Item = c_int>,
) -> MpiResult<()> {
    let (id, part) = lookup(engine, h)?;
    let mut p = part.borrow_mut();
    let p = &mut *p;
    let comm = p.comm;
    let Side::Send(s) = &mut p.side else {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the request is a partitioned receive; MPI_Pready and its forms take a partitioned send request",
        )
        .on(comm));
    };
    if engine.p2p_ref().standing(id) == Some(Standing::Inactive) {
        return Err(MpiError::new(
            MPI_ERR_REQUEST,
            "the partitioned send request is inactive; start it (MPI_Start) before marking partitions ready",
        )
        .on(comm));
    }
    let list: Vec<usize> = partitions
        .map(|q| {
            let q = usize::try_from(q)
                .ok()
                .filter(|&q| q < s.ready.len())
                .ok_or_else(|| {
                    MpiError::new(
                        MPI_ERR_ARG,
                        format!(
                            "partition {q} is out of range: the request has {} partitions (0..={})",
                            s.ready.len(),
                            s.ready.len() as i64 - 1
                        ),
                    )
                    .on(comm)
                })?;
            if s.ready[q] {
                return Err(MpiError::new(
                    MPI_ERR_ARG,
                    format!("partition {q} is marked ready already in this round (MPI_Pready once per partition and start)"),
                )
                .on(comm));
            }
            Ok(q)
        })
        .collect::<MpiResult<_>>()?;
    let mut seen = vec![false; s.ready.len()];
    for &q in &list {
        if std::mem::replace(&mut seen[q], true) {
            return Err(
                MpiError::new(MPI_ERR_ARG, format!("partition {q} is listed twice")).on(comm),
            );
        }
    }
    for q in list {
        s.ready[q] = true;
        let Some(dest) = p.peer else { continue };
        let piece = SendOp {
            buf: if s.op.scattered.is_some() {
                s.op.buf
                    .wrapping_offset(q as isize * p.count as isize * p.extent)
            } else {
                s.op.buf.wrapping_add(q * p.part_bytes)
            },
            bytes: p.part_bytes,
            count: p.count,
            ..s.op.clone()
        };
        let data = piece.outgoing()?;
        let (ptr, len) = (data.ptr(), data.len());
        let staging = data.is_owned().then(|| Box::new(Staging::Send(data)) as _);
        // SAFETY: the partition's bytes (the user's buffer, which MPI says stays untouched
        // until the request completes, or a packed copy the send request owns) stay valid
        // until the send completes; the round waits for it.
        let req = unsafe {
            engine.p2p().isend_attached(
                ptr,
                len,
                dest,
                data_tag(s.channel, q),
                p.ctx,
                SendMode::Standard,
                comm,
                staging,
            )
        }
        .map_err(|e| MpiError::from(e).on(comm))?;
        s.sends[q] = Some(req);
    }
    Ok(())
}

/// `MPI_Parrived`: whether receive partition `partition` has arrived (a request between
/// rounds has all of them).
pub(crate) fn parrived(engine: &mut Engine, h: MPI_Request, partition: c_int) -> MpiResult<bool> {
    let (id, part) = lookup(engine, h)?;
    let (comm, q) = {
        let p = part.borrow();
        if !matches!(p.side, Side::Recv(_)) {
            return Err(MpiError::new(
                MPI_ERR_REQUEST,
                "the request is a partitioned send; MPI_Parrived takes a partitioned receive request",
            )
            .on(p.comm));
        }
        (p.comm, check_partition(&p, partition)?)
    };
    if engine.p2p_ref().standing(id) == Some(Standing::Pending) {
        engine.poke().map_err(|e| MpiError::from(e).on(comm))?;
    }
    let mut p = part.borrow_mut();
    let arrived = match engine.p2p_ref().standing(id) {
        Some(Standing::Pending) => {
            let Side::Recv(r) = &p.side else {
                unreachable!("checked above")
            };
            match r.sender {
                None => false,
                Some((_, sender_parts)) => covering(&p, sender_parts, q).all(|i| {
                    r.recvs
                        .get(i)
                        .copied()
                        .flatten()
                        .is_some_and(|req| engine.p2p_ref().is_complete(req))
                }),
            }
        }
        _ => true,
    };
    if arrived {
        p.unpack(q);
    }
    Ok(arrived)
}
