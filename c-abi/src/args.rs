//! Argument checking of the point-to-point calls, and the checked operations it produces.
//!
//! A send or receive call is checked completely before anything happens, in MPICH's order:
//! communicator (`MPI_ERR_COMM`), count (`MPI_ERR_COUNT`), datatype (`MPI_ERR_TYPE`), buffer
//! (`MPI_ERR_BUFFER`: NULL with data to move), tag (`MPI_ERR_TAG`), rank (`MPI_ERR_RANK`). What
//! comes out is a [`SendOp`] or [`RecvOp`] in the engine's terms (bytes, engine ranks, context
//! id), which the blocking, nonblocking and persistent calls all execute the same way, and
//! which a persistent request stores.

use crate::abi::*;
use crate::comm::{Comm, CommIdx, CommTable};
use crate::datatype::message_bytes;
use crate::error::{MpiError, MpiResult};
use mpich_channel::{SendMode, ANY_TAG, TAG_UB};
use std::ffi::{c_int, c_void};

/// The four send modes of MPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendKind {
    Standard,
    Synchronous,
    Ready,
    /// Copied into the attached buffer, then sent from there (see [`crate::bsend`]).
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
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendOp {
    pub comm: CommIdx,
    /// The data: `bytes` bytes, not NULL unless `bytes` is 0.
    pub buf: *const u8,
    pub bytes: usize,
    /// Engine rank of the destination; `None` for `MPI_PROC_NULL`.
    pub dest: Option<usize>,
    pub tag: c_int,
    pub ctx: u16,
}

/// A checked receive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvOp {
    pub comm: CommIdx,
    /// Room for `cap` bytes, not NULL unless `cap` is 0.
    pub buf: *mut u8,
    pub cap: usize,
    /// Engine rank of the source or `ANY_SOURCE`; `None` for `MPI_PROC_NULL`.
    pub source: Option<c_int>,
    /// A tag or `ANY_TAG`.
    pub tag: c_int,
    pub ctx: u16,
}

/// Checks the arguments of a send.
#[inline(always)]
pub(crate) fn send_op(
    comms: &CommTable,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<SendOp> {
    let (idx, c) = comms.lookup(comm)?;
    send_checks(c, idx, buf, count, datatype, dest, tag).map_err(|e| e.on(idx))
}

#[inline(always)]
fn send_checks(
    c: &Comm,
    idx: CommIdx,
    buf: *const c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    tag: c_int,
) -> MpiResult<SendOp> {
    let bytes = message_bytes(count, datatype)?;
    check_buffer(buf, bytes)?;
    if !(0..=TAG_UB).contains(&tag) {
        return Err(bad_tag(tag, false));
    }
    let dest = c.dest(dest)?;
    Ok(SendOp {
        comm: idx,
        buf: buf.cast(),
        bytes,
        dest,
        tag,
        ctx: c.ctx,
    })
}

/// Checks the arguments of a receive.
#[inline(always)]
pub(crate) fn recv_op(
    comms: &CommTable,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> MpiResult<RecvOp> {
    let (idx, c) = comms.lookup(comm)?;
    recv_checks(c, idx, buf, count, datatype, source, tag).map_err(|e| e.on(idx))
}

#[inline(always)]
fn recv_checks(
    c: &Comm,
    idx: CommIdx,
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
) -> MpiResult<RecvOp> {
    let cap = message_bytes(count, datatype)?;
    check_buffer(buf, cap)?;
    check_recv_tag(tag)?;
    let source = c.source(source)?;
    Ok(RecvOp {
        comm: idx,
        buf: buf.cast(),
        cap,
        source,
        tag,
        ctx: c.ctx,
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
    let source = check_recv_tag(tag)
        .and_then(|()| c.source(source))
        .map_err(|e| e.on(idx))?;
    Ok(ProbeOp {
        comm: idx,
        source,
        tag,
        ctx: c.ctx,
    })
}

#[inline(always)]
fn check_buffer(buf: *const c_void, bytes: usize) -> MpiResult<()> {
    if buf.is_null() && bytes > 0 {
        return Err(null_buffer(bytes));
    }
    Ok(())
}

#[inline(always)]
fn check_recv_tag(tag: c_int) -> MpiResult<()> {
    if (0..=TAG_UB).contains(&tag) || tag == ANY_TAG {
        Ok(())
    } else {
        Err(bad_tag(tag, true))
    }
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
        let x = [0u8; 8];
        let buf = x.as_ptr().cast::<c_void>();
        let send = |buf, count, ty, dest, tag, comm| {
            send_op(&t, buf, count, ty, dest, tag, comm).map(|_| ())
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
        let op = send_op(&t, buf, 2, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD).unwrap();
        assert_eq!((op.bytes, op.dest, op.ctx), (8, None, 0));

        let mut y = [0u8; 8];
        let rbuf = y.as_mut_ptr().cast::<c_void>();
        let op = recv_op(
            &t,
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
            recv_op(&t, rbuf, 2, MPI_INT, 0, -7, MPI_COMM_WORLD)
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
