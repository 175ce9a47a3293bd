//! The wire: fixed routes between every pair of NICs of a job, each a ring of packet buffers.
//!
//! Routes are fixed when the fabric is laid out (ring `src -> dst` sits at a computed offset),
//! delivery is in order per (source, destination) pair because each pair has its own FIFO
//! ring, and a full ring stalls the sender: nothing is ever dropped by the wire itself.

pub(crate) mod ring;
