//! # mpich-channel: the MPICH-style channel device (not yet implemented)
//!
//! This crate will hold the channel interface that MPICH devices were ported to (control messages
//! plus data transfer) with implementations over BIP (`bip`), FM 2.x (`fm`) and FM 1.x (`fm1`),
//! and above it the ADI point-to-point engine: requests, matching on (context, source, tag),
//! posted and unexpected queues, eager and rendezvous protocols.
//!
//! Nothing here works yet: the crate exists so the workspace has its final shape.
