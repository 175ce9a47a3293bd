//! The C interface `bip.h` (being written).
