//! Argument checking of the point-to-point calls, and the checked operations it produces.
//!
//! A send or receive call is checked completely before anything happens, in MPICH's order:
//! communicator (`MPI_ERR_COMM`), count (`MPI_ERR_COUNT`), datatype (`MPI_ERR_TYPE`: invalid,
//! or derived and not committed), buffer (`MPI_ERR_BUFFER`: NULL with data to move, for a
//! predefined type; a derived type may address absolute memory from `MPI_BOTTOM`), tag
//! (`MPI_ERR_TAG`), rank (`MPI_ERR_RANK`). What comes out is a [`SendOp`] or [`RecvOp`] in the
//! engine's terms (bytes, engine ranks, context id), which the blocking, nonblocking and
//! persistent calls all execute the same way, and which a persistent request stores.
//!
//! **Scattered data.** When the data of `count` elements is one block of memory (every
//! predefined type, and contiguous derived types) the operation points at it and the engine
//! moves it straight from or to the user's buffer. Otherwise the operation keeps the type
//! (`scattered`): a send packs the data into a buffer it owns ([`SendOp::outgoing`]), a
//! receive lands in a staging buffer that is unpacked into the user's when it completes
//! ([`RecvOp::incoming`], [`Incoming::finish`]).

use crate::abi::*;
use crate::comm::{Comm, CommIdx, CommTable};
use crate::cptr;
use crate::datatype::{Datatype, Message, TypeTable};
use crate::error::{MpiError, MpiResult};
use crate::p2p::Cx;
use mpich_channel::{SendMode, ANY_TAG, TAG_UB};
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The four send modes of MPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendKind {
    Standard,
    Synchronous,
    Ready,
    /// Copied into the attached buffer, then sent from there (see [`crate::p2p::bsend`]).
    Buffered,
}

impl SendKind {
    /// The engine's mode for the non-buffered kinds.
    #[inline(always)]
    pub fn engine_mode(self) -> SendMode {
        match self {
            SendKind::Standard | SendKind::Buffered => SendMode::Standard,
            SendKind::Synchronous => SendMode::Synchronous,
            SendKind::Ready => SendMode::Ready,
        }
    }
}

/// A checked send.
#[derive(Debug, Clone)]
pub(crate) struct SendOp {
    pub comm: CommIdx,
    /// The data: `bytes` bytes, not NULL unless `bytes` is 0. With `scattered`, the user's
    /// buffer, holding `count` elements of that type.
    pub buf: *const u8,
    pub bytes: usize,
    /// Engine rank of the destination; `None` for `MPI_PROC_NULL`.
    pub dest: Option<usize>,
    pub tag: c_int,
    pub ctx: u16,
    pub scattered: Option<Arc<Datatype>>,
    pub count: usize,
}

/// A checked receive.
#[derive(Debug, Clone)]
pub(crate) struct RecvOp {
    pub comm: CommIdx,
    /// Room for `cap` bytes, not NULL unless `cap` is 0. With `scattered`, the user's buffer,
    /// with room for `count` elements of that type.
    pub buf: *mut u8,
    pub cap: usize,
    /// Engine rank of the source or `ANY_SOURCE`; `None` for `MPI_PROC_NULL`.
    pub source: Option<c_int>,
    /// A tag or `ANY_TAG`.
    pub tag: c_int,
    pub ctx: u16,
    pub scattered: Option<Arc<Datatype>>,
    pub count: usize,
}

/// The bytes a send hands to the engine: the user's, or a packed copy it owns.
#[derive(Debug)]
pub(crate) struct Outgoing {
    ptr: *const u8,
    len: usize,
    /// The copy, when the data is one (kept alive here; `ptr` points into it).
    owned: Option<Vec<u8>>,
}

impl Outgoing {
    /// The data (valid while `self` lives and, for the user's buffer, while MPI says so).
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        cptr::send_bytes(self.ptr, self.len)
    }
    /// A non-NULL pointer to the data, for the engine's nonblocking send.
    #[inline(always)]
    pub fn ptr(&self) -> *const u8 {
        cptr::nonnull_or_dangling(self.ptr)
    }
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the data is a copy the send owns (which must live until the send completes).
    pub fn is_owned(&self) -> bool {
        self.owned.is_some()
    }
    /// Data the send owns.
    pub fn owned(v: Vec<u8>) -> Outgoing {
        Outgoing {
            ptr: v.as_ptr(),
            len: v.len(),
            owned: Some(v),
        }
    }
}

impl SendOp {
    /// The bytes to send: the user's buffer, or, for scattered data, a packed copy.
    #[inline(always)]
    pub fn outgoing(&self) -> MpiResult<Outgoing> {
        match &self.scattered {
            None => Ok(Outgoing {
                ptr: self.buf,
                len: self.bytes,
                owned: None,
            }),
            Some(t) => pack(t, self.buf, self.count, self.bytes).map_err(|e| e.on(self.comm)),
        }
    }
}

#[inline(never)]
fn pack(t: &Datatype, buf: *const u8, count: usize, bytes: usize) -> MpiResult<Outgoing> {
    let mut v = staging_buffer(bytes)?;
    // SAFETY: the send buffer holds `count` elements of `t` (the caller's contract); `v` has
    // their `count * size == bytes` bytes of data.
    unsafe { t.pack(buf, count, v.as_mut_ptr()) };
    Ok(Outgoing::owned(v))
}

/// Where a receive's data lands: the user's buffer, or a staging buffer to unpack.
pub(crate) struct Incoming {
    ptr: *mut u8,
    cap: usize,
    staged: Option<Staged>,
}

/// A staging buffer and where its data goes at completion.
#[derive(Debug)]
pub(crate) struct Staged {
    buf: Vec<u8>,
    ty: Arc<Datatype>,
    dst: *mut u8,
    count: usize,
}

impl Incoming {
    /// A non-NULL pointer to room for [`Incoming::cap`] bytes.
    #[inline(always)]
    pub fn ptr(&self) -> *mut u8 {
        cptr::nonnull_or_dangling(self.ptr).cast_mut()
    }
    #[inline(always)]
    pub fn cap(&self) -> usize {
        self.cap
    }
    #[inline(always)]
    pub fn bytes(&mut self) -> &mut [u8] {
        cptr::recv_bytes(self.ptr, self.cap)
    }
    /// The staging part, which must live until the receive completes, then be finished.
    pub fn into_staged(self) -> Option<Staged> {
        self.staged
    }
    /// Completes a receive of `received` bytes: unpacks staged data into the user's buffer.
    #[inline(always)]
    pub fn finish(self, received: usize) {
        if let Some(s) = self.staged {
            s.finish(received);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.buf));
    }
}

impl Drop for Outgoing {
    fn drop(&mut self) {
        if let Some(v) = self.owned.take() {
            recycle(v);
        }
    }
}

impl Staged {
    /// Unpacks the first `received` bytes into the user's buffer.
    pub fn finish(self, received: usize) {
        self.unpack(received);
    }

    /// Unpacks the first `received` bytes into the user's buffer (once per receive).
    pub fn unpack(&self, received: usize) {
        // SAFETY: the staging buffer holds `received <= cap` bytes of the message; `dst` is the
        // receive buffer, with room for `count` elements (the caller's contract), untouched by
        // the program until the receive completes.
        unsafe {
            self.ty.unpack(
                self.buf.as_ptr(),
                received.min(self.buf.len()),
                self.dst,
                self.count,
            )
        }
    }
}

impl RecvOp {
    /// Where to receive: the user's buffer, or, for scattered data, a staging buffer.
    #[inline(always)]
    pub fn incoming(&self) -> MpiResult<Incoming> {
        match &self.scattered {
            None => Ok(Incoming {
                ptr: self.buf,
                cap: self.cap,
                staged: None,
            }),
            Some(t) => stage(t, self.buf, self.count, self.cap).map_err(|e| e.on(self.comm)),
        }
    }
}

#[inline(never)]
fn stage(t: &Arc<Datatype>, dst: *mut u8, count: usize, cap: usize) -> MpiResult<Incoming> {
    let mut buf = staging_buffer(cap)?;
    Ok(Incoming {
        ptr: buf.as_mut_ptr(),
        cap,
        staged: Some(Staged {
            buf,
            ty: Arc::clone(t),
            dst,
            count,
        }),
    })
}

thread_local! {
    /// Staging buffers of completed operations, kept for the next ones: a program that sends
    /// or receives the same large derived-type message repeatedly then pays no allocation, page
    /// faults or zeroing for it.
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// How many spare staging buffers are kept, and the largest kept.
const SPARE_BUFFERS: usize = 4;
const SPARE_MAX_BYTES: usize = 64 << 20;

/// A buffer of `len` initialized bytes (their values unspecified): a spare one if one is large
/// enough, else a new one; `MPI_ERR_NO_MEM` if the memory cannot be had.
fn staging_buffer(len: usize) -> MpiResult<Vec<u8>> {
    let spare = SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let i = s.iter().position(|b| b.capacity() >= len)?;
        Some(s.swap_remove(i))
    });
    let mut v = spare.unwrap_or_default();
    // Zero-fills only what was never initialized; a spare buffer is initialized up to its len.
    crate::error::grow(&mut v, len, "the packed copy of a message")?;
    Ok(v)
}

/// Keeps a finished staging buffer for later, if it is worth keeping (replacing a smaller
/// spare when all slots are taken).
fn recycle(v: Vec<u8>) {
    if v.capacity() < 4096 || v.capacity() > SPARE_MAX_BYTES {
        return;
    }
    SPARE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            return;
        };
        if s.len() < SPARE_BUFFERS {
            s.push(v);
        } else if let Some(smallest) = s.iter_mut().min_by_key(|b| b.capacity()) {
            if smallest.capacity() < v.capacity() {
                *smallest = v;
            }
        }
    });
}

/// The data's address in a buffer for a one-block message (`buf + offset`, possibly from
/// `MPI_BOTTOM`).
#[inline(always)]
fn data_at(buf: *const c_void, m: &Message) -> *const u8 {
    buf.cast::<u8>().wrapping_offset(m.offset)
}

/// Checks the arguments of a send.
#[inline(always)]
pub(crate) fn send_op(
    cx: &Cx<'_>,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<SendOp> {
    send_op_in(cx.comms, cx.types, buf, count, datatype, dest, tag, comm)
}

/// [`send_op`] on the tables themselves.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn send_op_in(
    comms: &CommTable,
    types: &TypeTable,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<SendOp> {
    let (idx, c) = comms.lookup(comm)?;
    send_checks(c, types, idx, buf, count, datatype, dest, tag).map_err(|e| e.on(idx))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn send_checks(
    c: &Comm,
    types: &TypeTable,
    idx: CommIdx,
    buf: *const c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
) -> MpiResult<SendOp> {
    let m = message(types, count, datatype)?;
    check_buffer(buf, &m)?;
    if !(0..=TAG_UB).contains(&tag) {
        return Err(bad_tag(tag, false));
    }
    let dest = c.dest(dest)?;
    Ok(SendOp {
        comm: idx,
        buf: data_at(buf, &m),
        bytes: m.bytes,
        dest,
        tag,
        ctx: c.ctx,
        scattered: m.scattered,
        count: count as usize,
    })
}

/// Checks the arguments of a receive.
#[inline(always)]
pub(crate) fn recv_op(
    cx: &Cx<'_>,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<RecvOp> {
    recv_op_in(cx.comms, cx.types, buf, count, datatype, source, tag, comm)
}

/// [`recv_op`] on the tables themselves.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn recv_op_in(
    comms: &CommTable,
    types: &TypeTable,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<RecvOp> {
    let (idx, c) = comms.lookup(comm)?;
    recv_checks(c, types, idx, buf, count, datatype, source, tag).map_err(|e| e.on(idx))
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn recv_checks(
    c: &Comm,
    types: &TypeTable,
    idx: CommIdx,
    buf: *mut c_void,
    count: MPI_Count,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
) -> MpiResult<RecvOp> {
    let m = message(types, count, datatype)?;
    check_buffer(buf, &m)?;
    check_recv_tag(c, tag)?;
    let source = c.source(source)?;
    Ok(RecvOp {
        comm: idx,
        buf: data_at(buf, &m).cast_mut(),
        cap: m.bytes,
        source,
        tag,
        ctx: c.ctx,
        scattered: m.scattered,
        count: count as usize,
    })
}

/// A checked probe: the communicator, the source (`None` for `MPI_PROC_NULL`), tag, context.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProbeOp {
    pub comm: CommIdx,
    pub source: Option<c_int>,
    pub tag: c_int,
    pub ctx: u16,
}

/// Checks the arguments of a probe.
pub(crate) fn probe_op(
    comms: &CommTable,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<ProbeOp> {
    let (idx, c) = comms.lookup(comm)?;
    let source = check_recv_tag(c, tag)
        .and_then(|()| c.source(source))
        .map_err(|e| e.on(idx))?;
    Ok(ProbeOp {
        comm: idx,
        source,
        tag,
        ctx: c.ctx,
    })
}

/// What `count` elements of `datatype` are as a message. No element of `MPI_DATATYPE_NULL`
/// is no data: a send or receive of count 0 never uses its type, and MPICH accepts that
/// pair (a receive from `MPI_PROC_NULL` written that way is common).
#[inline(always)]
pub(crate) fn message(
    types: &TypeTable,
    count: MPI_Count,
    datatype: MPI_Datatype,
) -> MpiResult<Message> {
    if count == 0 && datatype == MPI_DATATYPE_NULL {
        return Ok(Message {
            bytes: 0,
            offset: 0,
            scattered: None,
            derived: false,
        });
    }
    types.message(count, datatype)
}

/// A NULL buffer with data to move is an error for a predefined type (a derived type may
/// address absolute memory from `MPI_BOTTOM`).
#[inline(always)]
fn check_buffer(buf: *const c_void, m: &Message) -> MpiResult<()> {
    if buf.is_null() && m.bytes > 0 && !m.derived {
        return Err(null_buffer(m.bytes));
    }
    Ok(())
}

/// A receive's or probe's tag: in range, or `MPI_ANY_TAG` unless the communicator asserted
/// `mpi_assert_no_any_tag`.
#[inline(always)]
fn check_recv_tag(c: &Comm, tag: c_int) -> MpiResult<()> {
    if (0..=TAG_UB).contains(&tag) || (tag == ANY_TAG && !c.no_any_tag) {
        Ok(())
    } else if tag == ANY_TAG {
        Err(any_tag_asserted())
    } else {
        Err(bad_tag(tag, true))
    }
}

#[cold]
fn any_tag_asserted() -> MpiError {
    MpiError::new(
        MPI_ERR_TAG,
        "MPI_ANY_TAG on a communicator with the info assertion mpi_assert_no_any_tag=true \
         (MPI 4.0 7.4.4): its messages may run apart by tag; receive or probe with the tag \
         you expect, or use a communicator without the assertion"
            .to_string(),
    )
}

#[cold]
fn null_buffer(bytes: usize) -> MpiError {
    MpiError::new(
        MPI_ERR_BUFFER,
        format!("the buffer is NULL but the message has {bytes} bytes"),
    )
}

#[cold]
fn bad_tag(tag: c_int, receive: bool) -> MpiError {
    let any = if receive { ", or MPI_ANY_TAG" } else { "" };
    MpiError::new(
        MPI_ERR_TAG,
        format!("tag {tag} is out of range (valid: 0..={TAG_UB}{any})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_argument_gets_its_class() {
        let t = CommTable::new(0, 2);
        let types = TypeTable::new();
        let x = [0u8; 8];
        let buf = x.as_ptr().cast::<c_void>();
        let send = |buf, count, ty, dest, tag, comm| {
            send_op_in(&t, &types, buf, count, ty, dest, tag, comm).map(|_| ())
        };
        assert!(send(buf, 2, MPI_INT, 1, 5, MPI_COMM_WORLD).is_ok());
        assert_eq!(
            send(buf, 2, MPI_INT, 1, 5, MPI_COMM_NULL)
                .unwrap_err()
                .class,
            MPI_ERR_COMM
        );
        assert_eq!(
            send(buf, -2, MPI_INT, 1, 5, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_COUNT
        );
        assert_eq!(
            send(buf, 2, MPI_DATATYPE_NULL, 1, 5, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_TYPE
        );
        assert_eq!(
            send(std::ptr::null(), 2, MPI_INT, 1, 5, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_BUFFER
        );
        assert!(send(std::ptr::null(), 0, MPI_INT, 1, 5, MPI_COMM_WORLD).is_ok());
        assert_eq!(
            send(buf, 2, MPI_INT, 1, -3, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_TAG
        );
        assert_eq!(
            send(buf, 2, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_TAG
        );
        assert_eq!(
            send(buf, 2, MPI_INT, 1, TAG_UB + 1, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_TAG
        );
        assert_eq!(
            send(buf, 2, MPI_INT, 2, 5, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_RANK
        );
        assert_eq!(
            send(buf, 2, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_RANK
        );
        let e = send(buf, 2, MPI_INT, 2, 5, MPI_COMM_SELF).unwrap_err();
        assert_eq!(
            e.comm,
            Some(crate::comm::SELF),
            "raised on the call's communicator"
        );
        let op = send_op_in(
            &t,
            &types,
            buf,
            2,
            MPI_INT,
            MPI_PROC_NULL,
            5,
            MPI_COMM_WORLD,
        )
        .unwrap();
        assert_eq!((op.bytes, op.dest, op.ctx), (8, None, 0));

        let mut y = [0u8; 8];
        let rbuf = y.as_mut_ptr().cast::<c_void>();
        let op = recv_op_in(
            &t,
            &types,
            rbuf,
            2,
            MPI_INT,
            MPI_ANY_SOURCE,
            MPI_ANY_TAG,
            MPI_COMM_SELF,
        )
        .unwrap();
        assert_eq!(
            (op.cap, op.source, op.tag, op.ctx),
            (8, Some(mpich_channel::ANY_SOURCE), ANY_TAG, 2)
        );
        assert_eq!(
            recv_op_in(&t, &types, rbuf, 2, MPI_INT, 0, -7, MPI_COMM_WORLD)
                .unwrap_err()
                .class,
            MPI_ERR_TAG
        );
        assert_eq!(
            probe_op(&t, 5, 0, MPI_COMM_WORLD).unwrap_err().class,
            MPI_ERR_RANK
        );
    }
}
