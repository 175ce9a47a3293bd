//! benches (being written)
