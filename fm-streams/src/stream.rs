//! The receive side of a message as its handler sees it: a stream it reads with `receive`,
//! running on a coroutine of its own so that a `receive` for data not yet arrived suspends
//! the handler (and lets other handlers run) instead of blocking the process.

use corosensei::Yielder;
use nic_model::Rank;

/// What a suspended handler waits for.
#[derive(Debug)]
pub(crate) enum Need {
    /// The next packet of its message.
    Data,
    /// A bulk segment announced by the sender, to be moved straight into `dst` (`len` bytes).
    BulkInto { dst: *mut u8, len: usize },
    /// A bulk segment larger than what the handler asked for: stage it, then offer it as data.
    BulkStaged,
}

/// State shared by the extract loop (outside) and the handler's coroutine (inside). Lives in
/// a `Box` owned by the active message, so its address is stable while the coroutine runs.
pub(crate) struct Inbox {
    pub sender: Rank,
    pub size: u64,
    /// Bytes of the message the handler has not received yet.
    pub remaining: u64,
    /// The current chunk (a lent packet or a staging buffer): valid only while the
    /// coroutine is resumed by the code that set it.
    pub chunk: *const u8,
    pub chunk_len: usize,
    pub pos: usize,
    /// Length of a bulk segment announced and not yet moved.
    pub bulk_announced: u64,
    /// Bytes the handler copied (for the counters).
    pub copied: u64,
    /// Copies the handler made (for the counters).
    pub copies: u64,
    /// Times the handler was suspended.
    pub suspensions: u64,
}

impl Inbox {
    pub fn new(sender: Rank, size: u64) -> Self {
        Inbox {
            sender,
            size,
            remaining: size,
            chunk: std::ptr::null(),
            chunk_len: 0,
            pos: 0,
            bulk_announced: 0,
            copied: 0,
            copies: 0,
            suspensions: 0,
        }
    }

    pub fn set_chunk(&mut self, data: &[u8]) {
        self.chunk = data.as_ptr();
        self.chunk_len = data.len();
        self.pos = 0;
    }

    pub fn clear_chunk(&mut self) {
        self.chunk = std::ptr::null();
        self.chunk_len = 0;
        self.pos = 0;
    }

    /// Unread bytes of the current chunk.
    pub fn unread(&self) -> usize {
        self.chunk_len - self.pos
    }
}

/// A message being received, as its handler sees it (FM 2.x's `FM_stream`).
pub struct Stream<'y> {
    pub(crate) inbox: *mut Inbox,
    /// `None` when the whole message is already here (one packet): the handler then runs
    /// directly, on the extracting thread's own stack, and never needs to suspend.
    pub(crate) yielder: Option<&'y Yielder<(), Need>>,
}

impl Stream<'_> {
    fn inbox(&mut self) -> &mut Inbox {
        // SAFETY: the inbox outlives the coroutine running this handler (the active message
        // owns both and drops the coroutine first), and the extract loop does not touch it
        // while the coroutine runs.
        unsafe { &mut *self.inbox }
    }

    /// The sending rank.
    pub fn sender(&mut self) -> Rank {
        self.inbox().sender
    }

    /// The message's size, as the sender declared it.
    pub fn size(&mut self) -> u64 {
        self.inbox().size
    }

    /// Bytes of the message not received yet.
    pub fn remaining(&mut self) -> u64 {
        self.inbox().remaining
    }

    /// Receives the next `buf.len()` bytes of the message into `buf` (fewer only if the
    /// message ends first; returns how many). If they have not all arrived, the handler is
    /// suspended here and resumed when they have; other handlers run meanwhile. Piece sizes
    /// need not match the sender's.
    pub fn receive(&mut self, buf: &mut [u8]) -> usize {
        let mut got = 0;
        while got < buf.len() {
            let ib = self.inbox();
            if ib.remaining == 0 {
                break;
            }
            let unread = ib.unread();
            if unread > 0 {
                let n = unread.min(buf.len() - got).min(ib.remaining as usize);
                // SAFETY: the chunk is valid while we run (set by whoever resumed us), and
                // `pos + n <= chunk_len`.
                let src = unsafe { std::slice::from_raw_parts(ib.chunk.add(ib.pos), n) };
                buf[got..got + n].copy_from_slice(src);
                ib.pos += n;
                ib.remaining -= n as u64;
                ib.copied += n as u64;
                ib.copies += 1;
                got += n;
                continue;
            }
            let need = if ib.bulk_announced > 0 {
                let len = ib.bulk_announced;
                if (buf.len() - got) as u64 >= len {
                    Need::BulkInto {
                        dst: buf[got..].as_mut_ptr(),
                        len: len as usize,
                    }
                } else {
                    Need::BulkStaged
                }
            } else {
                Need::Data
            };
            let direct = match need {
                Need::BulkInto { len, .. } => Some(len),
                _ => None,
            };
            ib.suspensions += 1;
            let Some(yielder) = self.yielder else {
                // Unreachable: without a yielder the whole message is in the chunk.
                break;
            };
            yielder.suspend(need);
            if let Some(len) = direct {
                // Resumed after the bulk segment landed in `buf[got..got + len]`.
                let ib = self.inbox();
                ib.remaining -= len as u64;
                ib.bulk_announced = 0;
                got += len;
            }
        }
        got
    }
}
