//! The messages of one-sided communication, as typed views over bytes.
//!
//! Every message travels on the window's own context (a duplicate of the communicator the
//! window was made on), so no message of the program can match it:
//!
//! ```text
//!   origin ──TAG_REQUEST──▶ target   a Request header [+ target type] [+ data], at most
//!                                    REQUEST_MAX bytes; the target keeps one receive posted
//!   origin ──TAG_FOLLOW───▶ target   what did not fit: the target type, then the data (a long
//!                                    put lands straight in the window when it can)
//!   target ──TAG_CONTROL──▶ origin   a Control: lock granted, flush/unlock done, post (PSCW)
//!   target ──reply_tag(id)▶ origin   the data of a get, or the old data of a fetching op,
//!                                    received straight into the origin's buffer when it can
//! ```
//!
//! Messages between two processes on one context arrive in the order they were sent, which
//! the protocol relies on: a flush that arrives after a put is answered after the put is
//! applied, and a request's follow-ups are the next TAG_FOLLOW messages from its origin.

/// Tag of the requests (origin to target).
pub(super) const TAG_REQUEST: i32 = 1;
/// Tag of a request's follow-up messages (origin to target).
pub(super) const TAG_FOLLOW: i32 = 2;
/// Tag of control messages (target to origin, and PSCW's post).
pub(super) const TAG_CONTROL: i32 = 3;
/// Tags of reply data: `REPLY_BASE | (id & REPLY_MASK)`.
const REPLY_BASE: i32 = 0x1000_0000;
const REPLY_MASK: u64 = 0x0fff_ffff;

/// The tag of the reply to request `id`.
pub(super) fn reply_tag(id: u64) -> i32 {
    REPLY_BASE | (id & REPLY_MASK) as i32
}

/// The largest request message (header, target type and data it carries inline).
pub(super) const REQUEST_MAX: usize = 4096;
/// The longest target type sent inside the request.
pub(super) const INLINE_TYPE_MAX: usize = 1024;

/// What a request asks of the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Action {
    Put = 1,
    Get = 2,
    Accumulate = 3,
    /// Get_accumulate and Fetch_and_op: the old data comes back, then the operation applies.
    GetAccumulate = 4,
    CompareAndSwap = 5,
    Lock = 6,
    Unlock = 7,
    Flush = 8,
    /// PSCW: the origin's access epoch to this target is over.
    Complete = 9,
}

impl Action {
    fn from_u8(v: u8) -> Option<Action> {
        use Action::*;
        Some(match v {
            1 => Put,
            2 => Get,
            3 => Accumulate,
            4 => GetAccumulate,
            5 => CompareAndSwap,
            6 => Lock,
            7 => Unlock,
            8 => Flush,
            9 => Complete,
            _ => return None,
        })
    }

    /// Whether the request names window memory (and carries a target type).
    pub fn touches_memory(self) -> bool {
        matches!(
            self,
            Action::Put
                | Action::Get
                | Action::Accumulate
                | Action::GetAccumulate
                | Action::CompareAndSwap
        )
    }
}

/// Flags of a request.
pub(super) const FLAG_TYPE_INLINE: u8 = 1;
pub(super) const FLAG_DATA_INLINE: u8 = 2;

/// A request's header: 48 bytes.
///
/// ```text
///   0 action u8 | 1 flags u8 | 2..4 reserved | 4..8 op or lock type (i32)
///   8..16 id (u64): the origin's number for the reply or acknowledgement
///   16..24 target offset (u64): bytes from the window's base (a dynamic window: an address)
///   24..32 target count (u64) | 32..40 data bytes (u64): what the origin sends, or wants back
///   40..44 target type bytes (u32) | 44..48 reserved
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Request {
    pub action: Action,
    pub flags: u8,
    /// The reduction (`MPI_Op`) of an accumulate, or the lock type of a lock.
    pub op: i32,
    pub id: u64,
    pub offset: u64,
    pub count: u64,
    pub data_len: u64,
    pub type_len: u32,
}

impl Request {
    pub const LEN: usize = 48;

    pub fn new(action: Action, id: u64) -> Request {
        Request {
            action,
            flags: 0,
            op: 0,
            id,
            offset: 0,
            count: 0,
            data_len: 0,
            type_len: 0,
        }
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(self.action as u8);
        out.push(self.flags);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.op.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.data_len.to_le_bytes());
        out.extend_from_slice(&self.type_len.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
    }

    /// The header at the start of `b`, or `None` if `b` is not a request.
    pub fn parse(b: &[u8]) -> Option<Request> {
        let b = b.get(..Self::LEN)?;
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Some(Request {
            action: Action::from_u8(b[0])?,
            flags: b[1],
            op: i32::from_le_bytes(b[4..8].try_into().unwrap()),
            id: u64_at(8),
            offset: u64_at(16),
            count: u64_at(24),
            data_len: u64_at(32),
            type_len: u32::from_le_bytes(b[40..44].try_into().unwrap()),
        })
    }
}

/// What a control message says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Say {
    /// The lock the origin asked for is granted.
    Granted = 1,
    /// Everything up to the flush or unlock `id` is applied (`code`: the first error met).
    Done = 2,
    /// PSCW: the target posted an exposure epoch that includes the origin.
    Post = 3,
}

/// A control message: 16 bytes (what, reserved, code i32, id u64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Control {
    pub say: Say,
    /// 0, or the MPI error class of the first request of this origin that failed.
    pub code: i32,
    pub id: u64,
}

impl Control {
    pub const LEN: usize = 16;

    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0] = self.say as u8;
        b[4..8].copy_from_slice(&self.code.to_le_bytes());
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    pub fn parse(b: &[u8]) -> Option<Control> {
        let b = b.get(..Self::LEN)?;
        let say = match b[0] {
            1 => Say::Granted,
            2 => Say::Done,
            3 => Say::Post,
            _ => return None,
        };
        Some(Control {
            say,
            code: i32::from_le_bytes(b[4..8].try_into().unwrap()),
            id: u64::from_le_bytes(b[8..16].try_into().unwrap()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_written() {
        let mut r = Request::new(Action::GetAccumulate, 0x1234_5678_9abc);
        (r.flags, r.op, r.offset, r.count, r.data_len, r.type_len) =
            (FLAG_DATA_INLINE, 0x5800_0003, 4096, 7, 56, 120);
        let mut b = Vec::new();
        r.emit(&mut b);
        assert_eq!(b.len(), Request::LEN);
        assert_eq!(Request::parse(&b), Some(r));
        assert_eq!(Request::parse(&b[..40]), None);
        b[0] = 0;
        assert_eq!(Request::parse(&b), None, "an unknown action is no request");
    }

    #[test]
    fn a_control_reads_back_as_written() {
        let c = Control {
            say: Say::Done,
            code: 55,
            id: 9,
        };
        assert_eq!(Control::parse(&c.emit()), Some(c));
    }

    /// Tags above this are not the engine's (`mpich_channel::TAG_UB`).
    const TAG_UB_LIMIT: i32 = mpich_channel::TAG_UB;

    #[test]
    fn reply_tags_stay_clear_of_the_other_tags() {
        for id in [0, 1, REPLY_MASK, REPLY_MASK + 1, u64::MAX] {
            let t = reply_tag(id);
            assert!((REPLY_BASE..=TAG_UB_LIMIT).contains(&t), "{id}: {t:#x}");
        }
    }
}
