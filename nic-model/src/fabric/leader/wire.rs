//! The two messages of the hand-over, as fixed-size little-endian records:
//!
//! ```text
//! hello (follower -> leader, 16 bytes)     reply (leader -> follower, 40 bytes)
//!   0  magic "NICJOIN1"                      0  magic "NICHAND1"
//!   8  local rank (u32)                      8  status (u32; 0 = granted)
//!  12  zero (u32)                           12  local rank (u32)
//!                                           16  ranks on the host (u32)
//!                                           20  zero (u32)
//!                                           24  job key (16 bytes; zero unless granted)
//! ```
//!
//! A granted reply carries the fabric's descriptor as `SCM_RIGHTS` on its first byte. Parsing
//! never panics: a short, unknown or inconsistent record is an error that says what was wrong.

pub(super) const HELLO_LEN: usize = 16;
pub(super) const REPLY_LEN: usize = 40;
const HELLO_MAGIC: &[u8; 8] = b"NICJOIN1";
const REPLY_MAGIC: &[u8; 8] = b"NICHAND1";

/// A follower asks for the fabric as local rank `local_rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hello {
    pub local_rank: u32,
}

impl Hello {
    pub(super) fn emit(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[..8].copy_from_slice(HELLO_MAGIC);
        b[8..12].copy_from_slice(&self.local_rank.to_le_bytes());
        b
    }

    pub(super) fn parse(b: &[u8]) -> Result<Hello, String> {
        if b.len() != HELLO_LEN {
            return Err(format!("a hello has {HELLO_LEN} bytes, not {}", b.len()));
        }
        if &b[..8] != HELLO_MAGIC {
            return Err("not a hello (wrong magic)".into());
        }
        if u32_at(b, 12) != 0 {
            return Err("reserved field of the hello is not zero".into());
        }
        Ok(Hello {
            local_rank: u32_at(b, 8),
        })
    }
}

/// The leader's answer to a hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Status {
    Granted,
    /// The connecting process is not one of the followers the leader expects.
    NotExpected,
    /// The follower already got the fabric through another connection.
    AlreadyServed,
    /// The hello named another local rank than the one published for the follower's pid.
    WrongRank,
    /// The hello could not be understood.
    BadHello,
    /// The connecting process belongs to another user.
    OtherUser,
}

impl Status {
    const ALL: [Status; 6] = [
        Status::Granted,
        Status::NotExpected,
        Status::AlreadyServed,
        Status::WrongRank,
        Status::BadHello,
        Status::OtherUser,
    ];

    fn code(self) -> u32 {
        Self::ALL
            .iter()
            .position(|&s| s == self)
            .expect("listed in ALL") as u32
    }

    fn from_code(code: u32) -> Option<Status> {
        Self::ALL.get(code as usize).copied()
    }

    /// Why the leader refused, for the follower's error.
    pub(super) fn describe(self) -> &'static str {
        match self {
            Status::Granted => "granted",
            Status::NotExpected => {
                "this process is not one of the followers the leader expects (its pid was not published for this host)"
            }
            Status::AlreadyServed => "this process already got the fabric",
            Status::WrongRank => {
                "the local rank asked for is not the one published for this process"
            }
            Status::BadHello => "the leader could not understand the request",
            Status::OtherUser => "this process belongs to another user than the leader",
        }
    }
}

/// The leader's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reply {
    pub status: Status,
    pub local_rank: u32,
    pub nranks: u32,
    pub key: [u8; 16],
}

impl Reply {
    pub(super) fn refused(status: Status) -> Reply {
        Reply {
            status,
            local_rank: 0,
            nranks: 0,
            key: [0; 16],
        }
    }

    pub(super) fn emit(&self) -> [u8; REPLY_LEN] {
        let mut b = [0u8; REPLY_LEN];
        b[..8].copy_from_slice(REPLY_MAGIC);
        b[8..12].copy_from_slice(&self.status.code().to_le_bytes());
        b[12..16].copy_from_slice(&self.local_rank.to_le_bytes());
        b[16..20].copy_from_slice(&self.nranks.to_le_bytes());
        b[24..40].copy_from_slice(&self.key);
        b
    }

    pub(super) fn parse(b: &[u8]) -> Result<Reply, String> {
        if b.len() != REPLY_LEN {
            return Err(format!(
                "a reply has {REPLY_LEN} bytes, not {} (truncated)",
                b.len()
            ));
        }
        if &b[..8] != REPLY_MAGIC {
            return Err("not a hand-over reply (wrong magic)".into());
        }
        let code = u32_at(b, 8);
        let status =
            Status::from_code(code).ok_or_else(|| format!("unknown reply status {code}"))?;
        if u32_at(b, 20) != 0 {
            return Err("reserved field of the reply is not zero".into());
        }
        let mut key = [0u8; 16];
        key.copy_from_slice(&b[24..40]);
        Ok(Reply {
            status,
            local_rank: u32_at(b, 12),
            nranks: u32_at(b, 16),
            key,
        })
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_round_trips_and_garbage_is_an_error() {
        let h = Hello { local_rank: 7 };
        let b = h.emit();
        assert_eq!(Hello::parse(&b), Ok(h));
        for len in 0..HELLO_LEN {
            assert!(Hello::parse(&b[..len]).is_err(), "{len} bytes parsed");
        }
        let mut bad = b;
        bad[0] ^= 1;
        assert!(Hello::parse(&bad).unwrap_err().contains("magic"));
        let mut bad = b;
        bad[15] = 1;
        assert!(Hello::parse(&bad).is_err());
        assert!(Hello::parse(&[0xff; 40]).is_err());
    }

    #[test]
    fn reply_round_trips_and_garbage_is_an_error() {
        let r = Reply {
            status: Status::Granted,
            local_rank: 3,
            nranks: 4,
            key: std::array::from_fn(|i| i as u8 * 9),
        };
        let b = r.emit();
        assert_eq!(Reply::parse(&b), Ok(r));
        for s in Status::ALL {
            assert_eq!(Reply::parse(&Reply::refused(s).emit()).unwrap().status, s);
        }
        for len in 0..REPLY_LEN {
            assert!(Reply::parse(&b[..len]).is_err(), "{len} bytes parsed");
        }
        let mut bad = b;
        bad[8] = 200;
        assert!(Reply::parse(&bad).unwrap_err().contains("status"));
        let mut bad = b;
        bad[7] = b'2';
        assert!(Reply::parse(&bad).is_err());
        let mut bad = b;
        bad[21] = 1;
        assert!(Reply::parse(&bad).is_err());
        let mut rng = fastrand::Rng::with_seed(12);
        for _ in 0..1000 {
            let len = rng.usize(0..64);
            let junk: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let _ = Reply::parse(&junk);
            let _ = Hello::parse(&junk);
        }
    }
}
