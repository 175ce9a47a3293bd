//! # fm-streams: Fast Messages 2.x on top of BIP (not yet implemented)
//!
//! This crate will hold the FM 2.x streaming interface of Lauria, Pakin and Chien
//! (`begin_message`, `send_piece`, `end_message`, handlers that `receive` pieces,
//! `extract(max_bytes)`) layered on `bip-core`, with the FM 1.x interface beside it as the
//! baseline the paper measured against.
//!
//! Nothing here works yet: the crate exists so the workspace has its final shape. See the
//! project README and `../shared/DESIGN.md` for the plan.
