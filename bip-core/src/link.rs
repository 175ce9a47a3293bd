//! Reliability over an unreliable device: sequence numbers, checksums, go-back-N
//! retransmission. Used only when the device says `reliable: false` (a fault injector is
//! wrapped around the NIC); over the plain NIC this module is never entered, so the fast path
//! pays one predictable branch for it.
//!
//! Each sequenced packet carries a per-(sender, receiver) sequence number and a CRC-32 of the
//! whole packet. The receiver accepts only the next expected number with a good checksum, and
//! acknowledges cumulatively; a gap or a bad checksum triggers a negative acknowledgement, and
//! a sender that hears nothing for a retransmission timeout resends everything unacknowledged.
//! Duplicates are recognized by their old sequence numbers and dropped. So data is delivered
//! exactly once, in order, uncorrupted, or the link fails with `LinkFailed`.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Unacknowledged packets a sender may have in flight per peer.
pub(crate) const WINDOW: usize = 32;
/// Retransmission timeout.
pub(crate) const RTO: Duration = Duration::from_millis(5);
/// Timeouts without any acknowledged progress before the link is declared failed.
pub(crate) const MAX_RETRIES: u32 = 400;
/// Acknowledge at least every this many accepted packets.
const ACK_EVERY: u32 = 8;

/// Sender and receiver state of the link to one peer.
pub(crate) struct Link {
    next_seq: u32,
    /// Copies of sent, unacknowledged packets, oldest first.
    pub unacked: VecDeque<(u32, Vec<u8>)>,
    last_ack_progress: Instant,
    pub retries: u32,
    last_nack_honored: Option<(u32, Instant)>,
    expected: u32,
    acked_upto: u32,
    pub ack_due: bool,
    last_nack_sent: Option<(u32, Instant)>,
}

/// What to do with an arrived sequenced packet.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Deliver,
    /// Already delivered: drop it (and re-acknowledge).
    Duplicate,
    /// Ahead of a gap: drop it; maybe ask for a resend from `expected`.
    Gap {
        nack: Option<u32>,
    },
}

impl Link {
    pub fn new() -> Self {
        Link {
            next_seq: 0,
            unacked: VecDeque::new(),
            last_ack_progress: Instant::now(),
            retries: 0,
            last_nack_honored: None,
            expected: 0,
            acked_upto: 0,
            ack_due: false,
            last_nack_sent: None,
        }
    }

    pub fn window_open(&self) -> bool {
        self.unacked.len() < WINDOW
    }

    /// Sequence number for the next packet (not consumed until `sent`).
    pub fn peek_seq(&self) -> u32 {
        self.next_seq
    }

    pub fn sent(&mut self, packet: Vec<u8>) {
        if self.unacked.is_empty() {
            self.last_ack_progress = Instant::now();
        }
        self.unacked.push_back((self.next_seq, packet));
        self.next_seq = self.next_seq.wrapping_add(1);
    }

    /// Cumulative acknowledgement: everything before `upto` arrived.
    pub fn on_ack(&mut self, upto: u32) {
        let mut progressed = false;
        while let Some((s, _)) = self.unacked.front() {
            if seq_lt(*s, upto) {
                self.unacked.pop_front();
                progressed = true;
            } else {
                break;
            }
        }
        if progressed {
            self.retries = 0;
            self.last_ack_progress = Instant::now();
        }
    }

    /// A resend request from `from`; returns true if it should be honored now (the same
    /// request is honored at most once per millisecond, to avoid resend storms).
    pub fn on_nack(&mut self, from: u32) -> bool {
        self.on_ack(from);
        let now = Instant::now();
        match self.last_nack_honored {
            Some((s, t)) if s == from && now - t < Duration::from_millis(1) => false,
            _ => {
                self.last_nack_honored = Some((from, now));
                true
            }
        }
    }

    /// True when the oldest unacknowledged packet has waited past the timeout.
    pub fn timed_out(&mut self) -> bool {
        if self.unacked.is_empty() || self.last_ack_progress.elapsed() < RTO {
            return false;
        }
        self.retries += 1;
        self.last_ack_progress = Instant::now();
        true
    }

    pub fn classify(&mut self, seq: u32) -> Verdict {
        if seq == self.expected {
            self.expected = self.expected.wrapping_add(1);
            if self.expected.wrapping_sub(self.acked_upto) >= ACK_EVERY {
                self.ack_due = true;
            }
            Verdict::Deliver
        } else if seq_lt(seq, self.expected) {
            self.ack_due = true;
            Verdict::Duplicate
        } else {
            Verdict::Gap {
                nack: self.nack_now(),
            }
        }
    }

    /// Makes the next `timed_out` call fire, to resend at once after a NACK.
    pub fn force_resend(&mut self) {
        self.last_ack_progress = Instant::now() - RTO;
    }

    /// A corrupted packet arrived: ask for a resend (rate-limited).
    pub fn on_corrupt(&mut self) -> Option<u32> {
        self.nack_now()
    }

    fn nack_now(&mut self) -> Option<u32> {
        let now = Instant::now();
        match self.last_nack_sent {
            Some((s, t)) if s == self.expected && now - t < Duration::from_micros(500) => None,
            _ => {
                self.last_nack_sent = Some((self.expected, now));
                Some(self.expected)
            }
        }
    }

    /// The cumulative acknowledgement to send, marking it sent.
    pub fn take_ack(&mut self) -> u32 {
        self.ack_due = false;
        self.acked_upto = self.expected;
        self.expected
    }

    /// Something accepted but not yet acknowledged.
    pub fn ack_pending(&self) -> bool {
        self.expected != self.acked_upto
    }
}

fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_in_order_duplicates_and_gaps() {
        let mut l = Link::new();
        assert_eq!(l.classify(0), Verdict::Deliver);
        assert_eq!(l.classify(0), Verdict::Duplicate);
        assert_eq!(l.classify(2), Verdict::Gap { nack: Some(1) });
        assert_eq!(
            l.classify(3),
            Verdict::Gap { nack: None },
            "nack is rate-limited"
        );
        assert_eq!(l.classify(1), Verdict::Deliver);
    }

    #[test]
    fn acks_release_copies_across_wraparound() {
        let mut l = Link::new();
        l.next_seq = u32::MAX - 1;
        for _ in 0..4 {
            l.sent(vec![]);
        }
        l.on_ack(1);
        assert_eq!(l.unacked.len(), 1);
    }
}
