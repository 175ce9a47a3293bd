//! Receive queues selected by tag: receives posted and waiting for a message, and messages
//! that arrived before any receive was posted for them.

use nic_model::{Rank, RegionKey};
use std::collections::VecDeque;

/// A message that arrived before a matching receive was posted.
pub(crate) struct Unexpected {
    /// Identifies the entry while a short message is still arriving.
    pub uid: u64,
    pub src: Rank,
    pub body: Body,
}

pub(crate) enum Body {
    /// A short message, buffered here; `data.len() < total` while packets are still coming.
    Short { data: Vec<u8>, total: usize },
    /// A long message's announcement: the sender waits for us to read its region.
    Rts { len: usize, key: RegionKey },
}

/// One tag's queues. In order: messages are matched in arrival order, receives in post order.
#[derive(Default)]
pub(crate) struct TagQueue {
    pub posted: VecDeque<u32>,
    pub unexpected: VecDeque<Unexpected>,
}
