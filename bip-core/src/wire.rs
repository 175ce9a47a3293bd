//! The BIP packet header: a typed view at the start of every packet's payload, 24 bytes over
//! a reliable device and 32 over an unreliable one (the last 8 carry the link protocol).
//!
//! ```text
//!  0 kind u8   1 flags u8   2 id u16   4 tag u32
//!  8 len u64     message length (EAGER/RTS), credit bytes (CREDIT), cumulative ack (ACK/NACK),
//!                bytes asked for (GET), total bytes of the read (DATA)
//! 16 aux u64     EAGER_CONT/DATA: byte offset; GET: offset in the region; FIN: region key
//! 24 seq u32     link sequence number   (only over an unreliable device)
//! 28 csum u32    CRC-32 of the packet  (only over an unreliable device)
//! ```
//! With the NIC's 24-byte slot header in front, a 16-byte message fits in one cache line, and
//! so does an 8-byte FM message with FM's 8-byte header. An RTS and a GET carry the region's
//! 16-byte key ([`nic_model::RegionKey::emit`]) as their payload.
//!
//! The rendezvous of a long message is two packets: the sender's RTS names the region that
//! holds the message, the receiver reads it and answers FIN (the region is then withdrawn).
//! Where the receiver cannot read the sender's memory, it asks for the bytes with a GET, and
//! the sender answers with DATA packets (or GET_REFUSED) before the FIN.

/// Size of the header over a reliable device.
pub const HEADER: usize = 24;
/// Size of the header over an unreliable device (sequence number and checksum added).
pub const LINK_HEADER: usize = 32;

/// Packet kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// First packet of a short message (its data follows the header).
    Eager = 1,
    /// Further packets of a short message.
    EagerCont = 2,
    /// Request to send a long message (rendezvous): `tag`, `len`, and the key of the region
    /// that holds it as payload.
    Rts = 3,
    /// The receiver has read region `tag` (key `aux`): the exporter withdraws it, and the send
    /// it held is complete.
    Fin = 5,
    /// A piece of a region read with GET: read `tag`, byte offset `aux`, `len` bytes in all.
    Data = 6,
    /// The receiver returns buffer credits.
    Credit = 7,
    /// Cumulative acknowledgement (unreliable devices only).
    Ack = 8,
    /// Negative acknowledgement: resend from `len` (unreliable devices only).
    Nack = 9,
    /// "Send me `len` bytes from offset `aux` of the region whose key is the payload, as DATA
    /// for read `tag`": the receiver of a long message that cannot read the sender's memory.
    Get = 10,
    /// The exporter refuses GET `tag` (no such region, or bytes outside it): nothing is sent.
    GetRefused = 11,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            1 => Eager,
            2 => EagerCont,
            3 => Rts,
            5 => Fin,
            6 => Data,
            7 => Credit,
            8 => Ack,
            9 => Nack,
            10 => Get,
            11 => GetRefused,
            _ => return None,
        })
    }

    /// Link-layer kinds are not sequenced (they are idempotent).
    pub fn is_link(self) -> bool {
        matches!(self, Kind::Ack | Kind::Nack)
    }
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub flags: u8,
    pub id: u16,
    pub tag: u32,
    pub len: u64,
    pub aux: u64,
    pub seq: u32,
    pub csum: u32,
}

impl Header {
    pub fn new(kind: Kind) -> Self {
        Header {
            kind,
            flags: 0,
            id: 0,
            tag: 0,
            len: 0,
            aux: 0,
            seq: 0,
            csum: 0,
        }
    }

    /// Reads a reliable-device header (24 bytes). `None` if too short or of unknown kind.
    #[inline]
    pub fn parse(p: &[u8]) -> Option<Header> {
        if p.len() < HEADER {
            return None;
        }
        let u64_at = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().unwrap());
        Some(Header {
            kind: Kind::from_u8(p[0])?,
            flags: p[1],
            id: u16::from_le_bytes([p[2], p[3]]),
            tag: u32::from_le_bytes(p[4..8].try_into().unwrap()),
            len: u64_at(8),
            aux: u64_at(16),
            seq: 0,
            csum: 0,
        })
    }

    /// Reads an unreliable-device header (32 bytes, with sequence number and checksum).
    pub fn parse_link(p: &[u8]) -> Option<Header> {
        if p.len() < LINK_HEADER {
            return None;
        }
        let mut h = Header::parse(p)?;
        h.seq = u32::from_le_bytes(p[24..28].try_into().unwrap());
        h.csum = u32::from_le_bytes(p[28..32].try_into().unwrap());
        Some(h)
    }

    /// Writes a reliable-device header (24 bytes) to the start of a packet buffer.
    #[inline]
    pub fn emit(&self, p: &mut [u8]) {
        p[0] = self.kind as u8;
        p[1] = self.flags;
        p[2..4].copy_from_slice(&self.id.to_le_bytes());
        p[4..8].copy_from_slice(&self.tag.to_le_bytes());
        p[8..16].copy_from_slice(&self.len.to_le_bytes());
        p[16..24].copy_from_slice(&self.aux.to_le_bytes());
    }

    /// Writes the header of a short message's first packet (EAGER, `tag`, `len` bytes; every
    /// other field zero) over a reliable device: the send fast path's one store of the
    /// header, as three words with one bounds check, instead of a `Header` built field by
    /// field and emitted byte range by byte range.
    #[inline(always)]
    pub fn emit_eager(p: &mut [u8], tag: u32, len: usize) {
        let p: &mut [u8; HEADER] = (&mut p[..HEADER]).try_into().unwrap();
        p[0..8].copy_from_slice(&eager_word(tag).to_le_bytes());
        p[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        p[16..24].copy_from_slice(&0u64.to_le_bytes());
    }

    /// Writes an unreliable-device header (32 bytes).
    pub fn emit_link(&self, p: &mut [u8]) {
        self.emit(p);
        p[24..28].copy_from_slice(&self.seq.to_le_bytes());
        p[28..32].copy_from_slice(&self.csum.to_le_bytes());
    }
}

/// The first 8 bytes of an EAGER header for `tag` (kind, zero flags and id, tag), as one
/// little-endian word: a receiver recognises the common packet, a whole one-packet short
/// message, with one comparison of this word (and one of the length), without decoding the
/// header.
#[inline(always)]
pub fn eager_word(tag: u32) -> u64 {
    Kind::Eager as u64 | (tag as u64) << 32
}

/// If `pkt` (over a reliable device) is a whole one-packet short message for `tag`, as
/// [`Header::emit_eager`] writes it, its data; `None` for anything else (which then takes
/// the general path: a continued message, another tag, another kind, a malformed packet).
#[inline(always)]
pub fn whole_eager(pkt: &[u8], tag: u32) -> Option<&[u8]> {
    let (h, data) = pkt.split_first_chunk::<HEADER>()?;
    let word = u64::from_le_bytes(h[0..8].try_into().unwrap());
    let len = u64::from_le_bytes(h[8..16].try_into().unwrap());
    (word == eager_word(tag) && len == data.len() as u64).then_some(data)
}

/// As [`whole_eager`] for any tag: the tag and the data of a whole one-packet short message.
#[inline(always)]
pub fn whole_eager_any(pkt: &[u8]) -> Option<(u32, &[u8])> {
    let (h, data) = pkt.split_first_chunk::<HEADER>()?;
    let word = u64::from_le_bytes(h[0..8].try_into().unwrap());
    let len = u64::from_le_bytes(h[8..16].try_into().unwrap());
    (word as u32 == eager_word(0) as u32 && len == data.len() as u64)
        .then_some(((word >> 32) as u32, data))
}

/// CRC-32 of an unreliable-device packet with its checksum field taken as zero.
pub fn checksum(p: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&p[..28]);
    h.update(&[0; 4]);
    h.update(&p[LINK_HEADER..]);
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_garbage() {
        let mut h = Header::new(Kind::Rts);
        h.id = 7;
        h.tag = 0xdead;
        h.len = 1 << 40;
        h.aux = 0x7fff_0000_1234;
        h.seq = 99;
        let mut buf = [0u8; 40];
        h.emit_link(&mut buf);
        assert_eq!(Header::parse_link(&buf), Some(h));
        assert_eq!(
            Header::parse(&buf),
            Some(Header {
                seq: 0,
                csum: 0,
                ..h
            })
        );
        buf[0] = 200;
        assert_eq!(Header::parse(&buf), None);
        assert_eq!(Header::parse(&buf[..10]), None);
        assert_eq!(Header::parse_link(&buf[..30]), None);
    }

    #[test]
    fn short_eager_header_is_an_ordinary_eager_header_recognised_in_one_look() {
        let mut pkt = [0xaau8; HEADER + 5];
        Header::emit_eager(&mut pkt, 77, 5);
        pkt[HEADER..].copy_from_slice(b"hello");
        let mut h = Header::new(Kind::Eager);
        h.tag = 77;
        h.len = 5;
        assert_eq!(Header::parse(&pkt), Some(h));
        assert_eq!(whole_eager(&pkt, 77), Some(&b"hello"[..]));
        assert_eq!(whole_eager_any(&pkt), Some((77, &b"hello"[..])));
        assert_eq!(whole_eager(&pkt, 78), None, "another tag");
        assert_eq!(whole_eager(&pkt[..HEADER + 4], 77), None, "not whole");
        assert_eq!(whole_eager(&pkt[..10], 77), None, "too short");
        let mut cont = pkt;
        cont[0] = Kind::EagerCont as u8;
        assert_eq!(whole_eager_any(&cont), None, "another kind");
    }

    #[test]
    fn checksum_sees_payload_and_ignores_its_own_field() {
        let mut a = [1u8; 64];
        let c = checksum(&a);
        a[28] = 0xff;
        assert_eq!(checksum(&a), c);
        a[40] ^= 1;
        assert_ne!(checksum(&a), c);
    }
}
