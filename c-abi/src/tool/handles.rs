//! `MPI_T` handle values: a kind tag and a serial number, never an address.
//!
//! MPICH's ABI makes every `MPI_T` handle a pointer to an opaque struct. The library hands out
//! integers in pointer form instead: bits 40-47 say what kind of handle it is (an enumeration, a
//! cvar handle, a pvar session, a pvar handle) and the low 40 bits are a serial number that is
//! never reused in the process's life. A handle is only ever looked up (in the tables of the
//! live objects), never dereferenced, so a freed or made-up handle is refused with an error.

use std::sync::atomic::{AtomicU64, Ordering};

/// What kind of object a handle names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Enum = 0xE7,
    CvarHandle = 0xC7,
    Session = 0x57,
    PvarHandle = 0xB7,
}

const TAG_SHIFT: u32 = 40;
const SERIAL_MASK: usize = (1 << TAG_SHIFT) - 1;

/// The value of `MPI_T_PVAR_ALL_HANDLES`: a pvar handle tag with serial 0, which no handle has.
pub(crate) const ALL_PVAR_HANDLES: usize = (Kind::PvarHandle as usize) << TAG_SHIFT;

/// The handle value of serial number `serial` of kind `kind`.
pub(crate) fn encode(kind: Kind, serial: u64) -> usize {
    ((kind as usize) << TAG_SHIFT) | (serial as usize & SERIAL_MASK)
}

/// The serial number in `raw` if it is a handle of kind `kind` (serial 0 included).
pub(crate) fn decode(kind: Kind, raw: usize) -> Option<u64> {
    (raw >> TAG_SHIFT == kind as usize).then_some((raw & SERIAL_MASK) as u64)
}

/// A serial number no handle has had yet in this process (from 1).
pub(crate) fn next_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_do_not_mix() {
        let s = next_serial();
        let h = encode(Kind::Session, s);
        assert_eq!(decode(Kind::Session, h), Some(s));
        assert_eq!(decode(Kind::PvarHandle, h), None);
        assert_eq!(decode(Kind::PvarHandle, ALL_PVAR_HANDLES), Some(0));
        assert_eq!(decode(Kind::Enum, 0), None);
        assert!(next_serial() > s);
    }
}
