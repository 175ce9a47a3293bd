//! The wire: how packets travel from one process to another inside the host's fabric.
//!
//! Every rank has an inbox ([`inbox`]): one receive queue that all its senders share
//! ([`queue`], multi-producer, lock-free) and a bounded pool of fast boxes, small
//! single-producer rings ([`ring`]) that senders claim the first time they send it a small
//! packet. Memory per rank is constant, whatever the job's size. Delivery is in order per
//! (source, destination) pair (each packet carries its number in that pair; the receiver
//! merges the two paths back by it), and a full queue stalls the sender: nothing is ever
//! dropped by the wire itself.

pub(crate) mod inbox;
pub(crate) mod queue;
pub(crate) mod ring;
