//! bip-core (being written)
