//! The FM packet header: 8 bytes at the start of every FM packet (a BIP message on FM's tag).
//!
//! ```text
//!  0 kind u8      FIRST (starts a message), CONT, BULK (the next bytes of the message are in
//!                 a region of the sender, read by BIP's rendezvous); bit 0x40: an FM 1.x
//!                 message; bit 0x80 on FIRST: the packet carries a bulk descriptor, as BULK
//!  1 handler u24  handler id (FIRST)
//!  4 size u32     message size (FIRST); 0xFFFF_FFFF: a u64 follows
//! ```
//! A bulk descriptor ([`Bulk`], 24 bytes) is the data of a BULK packet: the segment's length
//! and the key of the region that holds it. A message that begins with a bulk piece carries
//! it in its FIRST packet, so that such a message is two packets, as a long BIP message is.

pub const FIRST: u8 = 1;
pub const CONT: u8 = 2;
pub const BULK: u8 = 3;
/// Flag on FIRST: the message uses the FM 1.x interface (staged, whole-buffer handler).
pub const FM1: u8 = 0x40;
/// Flag on FIRST: a bulk descriptor follows the header instead of data.
pub const WITH_BULK: u8 = 0x80;
const KIND_MASK: u8 = 0x3f;
const SIZE_EXT: u32 = u32::MAX;

/// Bytes of the fixed header.
pub const HEADER: usize = 8;
/// Largest header (with the 64-bit size extension).
pub const MAX_HEADER: usize = HEADER + 8;

/// A decoded header and the offset where the packet's data starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: u8,
    pub fm1: bool,
    /// FIRST only: the packet's data is a bulk descriptor.
    pub with_bulk: bool,
    pub handler: u32,
    pub size: u64,
}

impl Header {
    /// Writes the header into `out`; returns its length.
    pub fn emit(&self, out: &mut [u8]) -> usize {
        out[0] =
            self.kind | if self.fm1 { FM1 } else { 0 } | if self.with_bulk { WITH_BULK } else { 0 };
        out[1..4].copy_from_slice(&self.handler.to_le_bytes()[..3]);
        if self.size < SIZE_EXT as u64 {
            out[4..8].copy_from_slice(&(self.size as u32).to_le_bytes());
            HEADER
        } else {
            out[4..8].copy_from_slice(&SIZE_EXT.to_le_bytes());
            out[8..16].copy_from_slice(&self.size.to_le_bytes());
            MAX_HEADER
        }
    }

    /// Parses a packet's header: `(header, data offset)`, or `None` if malformed.
    #[inline]
    pub fn parse(p: &[u8]) -> Option<(Header, usize)> {
        if p.len() < HEADER {
            return None;
        }
        let kind = p[0] & KIND_MASK;
        if !(FIRST..=BULK).contains(&kind) {
            return None;
        }
        let handler = u32::from_le_bytes([p[1], p[2], p[3], 0]);
        let small = u32::from_le_bytes(p[4..8].try_into().unwrap());
        let (size, off) = if small == SIZE_EXT {
            if p.len() < MAX_HEADER {
                return None;
            }
            (u64::from_le_bytes(p[8..16].try_into().unwrap()), MAX_HEADER)
        } else {
            (small as u64, HEADER)
        };
        Some((
            Header {
                kind,
                fm1: p[0] & FM1 != 0,
                with_bulk: kind == FIRST && p[0] & WITH_BULK != 0,
                handler,
                size,
            },
            off,
        ))
    }
}

/// A bulk segment's descriptor: its length and the key of the sender's region holding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bulk {
    pub len: u64,
    pub key: nic_model::RegionKey,
}

impl Bulk {
    pub const LEN: usize = 8 + nic_model::RegionKey::LEN;

    pub fn emit(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..].copy_from_slice(&self.key.emit());
        b
    }

    pub fn parse(b: &[u8]) -> Option<Bulk> {
        let len = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
        Some(Bulk {
            len,
            key: nic_model::RegionKey::parse(&b[8..])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_small_and_huge_sizes() {
        for (kind, fm1, with_bulk, size) in [
            (FIRST, false, false, 8u64),
            (BULK, false, false, 1 << 40),
            (FIRST, true, false, 0),
            (CONT, false, false, 0),
            (FIRST, false, true, 1 << 20),
        ] {
            let h = Header {
                kind,
                fm1,
                with_bulk,
                handler: 0x00ab_cdef,
                size,
            };
            let mut b = [0u8; 32];
            let n = h.emit(&mut b);
            assert_eq!(Header::parse(&b[..n]), Some((h, n)));
        }
        assert_eq!(Header::parse(&[9, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(Header::parse(&[1, 0, 0]), None);
        let b = Bulk {
            len: 1 << 33,
            key: nic_model::RegionKey { id: 3, key: 99 },
        };
        assert_eq!(Bulk::parse(&b.emit()), Some(b));
        assert_eq!(Bulk::parse(&b.emit()[..20]), None);
    }
}
