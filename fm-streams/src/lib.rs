//! # fm-streams: Fast Messages 2.x (and the FM 1.x baseline) on top of BIP
//!
//! ```text
//!   mpich-channel "fm" / "fm1", C programs (fm.h)
//!                 │  begin_message, send_piece, end_message; handlers: receive; extract
//!            fm-streams   ← you are here
//!                 │  BIP: isend on FM's tag, lend (a packet in place), export/pull for bulk
//!             bip-core
//! ```
//!
//! **What it does.** The FM 2.x interface of Lauria, Pakin and Chien (seed 001): a sender
//! composes a message from any number of pieces of any size (`begin_message`, `send_piece`,
//! `end_message`); the receiver's handler, registered by id, reads it with `receive` calls of
//! any sizes. A handler starts when the first packet of its message arrives and runs on a
//! coroutine of its own (corosensei): a `receive` for data not yet arrived suspends it, other
//! handlers run, and it resumes when the data comes. `extract(max_bytes)` runs handlers on at
//! most about `max_bytes` of arrived data: the receiver paces the sender.
//!
//! Beyond the paper: a piece of at least `FM_BULK_MIN` bytes (32 KiB) is exported as a region
//! and announced in the packet stream (in the message's first packet when it starts the
//! message); the handler's `receive` reads it by BIP's rendezvous, in one copy, straight into
//! the buffer the handler names (or staged, if the handler asks for less than the whole
//! piece). Packets are lent by BIP in place, so a handler's `receive` is the one copy of small
//! messages. A layer above may run BIP's rendezvous through FM ([`Fm::export`], [`Fm::pull`]).
//!
//! The FM 1.x interface (`send1`, `send4`, handlers of a whole contiguous message staged
//! before they run) is kept beside it as the paper's baseline.
//!
//! **What it promises.** Reliable delivery in order per sender (BIP's); a sender never has
//! more unconsumed data at a receiver than the receiver's credit (BIP's credits, granted per
//! sender); one sender's long message never blocks other senders' messages. Blocking sends
//! keep extracting while they wait, so processes flooding each other cannot deadlock; handlers
//! therefore may run inside `send_piece`/`end_message` as well as in `extract`. Handlers may
//! not send.
//!
//! **What it needs from below.** BIP's `isend`/`test`, `lend` on one tag, and its rendezvous
//! (`export`, `pull`, events).
//!
//! **Modules.** `fm`: the endpoint (send side, `extract`, handler scheduling); `stream`: the
//! handler's view of a message; `wire`: the 8-byte FM packet header; [`ffi`]: the C interface
//! `fm.h`.

mod error;
pub mod ffi;
mod fm;
mod stream;
mod wire;

pub use error::{FmError, Result};
pub use fm::{Fm, FmCounters, Handler, Handler1, SendStream, DEFAULT_BULK_MIN};
pub use stream::Stream;
