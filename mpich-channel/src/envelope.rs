//! The envelope: the ADI's header on every control message, as a typed view over 24 bytes.
//!
//! ```text
//!  0      1      2        4        8        12       16                24
//!  +------+------+--------+--------+--------+--------+-----------------+
//!  | kind | flags| context|  tag   |  sreq  |  rreq  |      len        |  (little endian)
//!  +------+------+--------+--------+--------+--------+-----------------+
//! ```
//! The source rank is not carried: every channel knows which peer a message came from. An
//! RTS carries the key of the region that holds the message as its payload (16 bytes).

/// Bytes of an envelope on the wire.
pub const ENVELOPE_LEN: usize = 24;

/// What a control message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A message whose `len` bytes of data follow the envelope (short and eager protocols).
    Eager = 1,
    /// Request to send `len` bytes (rendezvous): `sreq` names the send, and the key of the
    /// region the receiver reads the data from follows the envelope.
    Rts = 2,
    /// The synchronous send `sreq` has been matched.
    SyncAck = 5,
    /// Cancel the unmatched message of send `sreq`, if it is still unmatched.
    CancelReq = 6,
    /// Answer to `CancelReq`: flag `CANCELLED` says whether it was.
    CancelAck = 7,
}

/// `Eager`: the sender wants a `SyncAck` when the message is matched.
pub const FLAG_SYNC: u8 = 1;
/// `CancelAck`: the message was removed unmatched.
pub const FLAG_CANCELLED: u8 = 2;

/// A decoded envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub kind: Kind,
    pub flags: u8,
    /// The communicator's context id (point-to-point and collective traffic use different ones).
    pub ctx: u16,
    pub tag: i32,
    /// The sender's request (for answers that come back to it), 0 when none is needed.
    pub sreq: u32,
    /// Reserved (0).
    pub rreq: u32,
    /// Bytes of data the message is about.
    pub len: u64,
}

impl Envelope {
    pub fn new(kind: Kind) -> Self {
        Envelope {
            kind,
            flags: 0,
            ctx: 0,
            tag: 0,
            sreq: 0,
            rreq: 0,
            len: 0,
        }
    }

    /// Writes the envelope into its wire form.
    #[inline]
    pub fn emit(&self) -> [u8; ENVELOPE_LEN] {
        let mut b = [0u8; ENVELOPE_LEN];
        b[0] = self.kind as u8;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.ctx.to_le_bytes());
        b[4..8].copy_from_slice(&self.tag.to_le_bytes());
        b[8..12].copy_from_slice(&self.sreq.to_le_bytes());
        b[12..16].copy_from_slice(&self.rreq.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// Reads an envelope from the start of `b`; `None` if `b` is too short or the kind unknown.
    #[inline]
    pub fn parse(b: &[u8]) -> Option<Envelope> {
        let b: &[u8; ENVELOPE_LEN] = b.get(..ENVELOPE_LEN)?.try_into().ok()?;
        let kind = match b[0] {
            1 => Kind::Eager,
            2 => Kind::Rts,
            5 => Kind::SyncAck,
            6 => Kind::CancelReq,
            7 => Kind::CancelAck,
            _ => return None,
        };
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        Some(Envelope {
            kind,
            flags: b[1],
            ctx: u16::from_le_bytes([b[2], b[3]]),
            tag: u32_at(4) as i32,
            sreq: u32_at(8),
            rreq: u32_at(12),
            len: u64::from_le_bytes(b[16..24].try_into().unwrap()),
        })
    }

    /// Bytes of data that follow the envelope in the same message.
    #[inline]
    pub fn payload_len(&self) -> usize {
        match self.kind {
            Kind::Eager => self.len as usize,
            Kind::Rts => nic_model::RegionKey::LEN,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let e = Envelope {
            kind: Kind::Rts,
            flags: FLAG_SYNC,
            ctx: 513,
            tag: -1,
            sreq: 7,
            rreq: u32::MAX,
            len: 1 << 40,
        };
        assert_eq!(Envelope::parse(&e.emit()), Some(e));
        assert_eq!(Envelope::parse(&[9; 24]), None);
        assert_eq!(Envelope::parse(&[1; 23]), None);
    }
}
