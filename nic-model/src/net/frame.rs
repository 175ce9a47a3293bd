//! The frames that travel on a TCP connection between two NICs: a typed view over the bytes,
//! in the manner of smoltcp's `wire` module (the header is read and written in place, never
//! copied into a struct first).
//!
//! ```text
//!  0      1      2             4                 8                12               16              24
//!  +------+------+-------------+-----------------+-----------------+----------------+---------------+
//!  | kind | 0    | 0           | len (payload)   | id              | 0              | offset        |
//!  +------+------+-------------+-----------------+-----------------+----------------+---------------+
//!  then `len` bytes of payload
//! ```
//!
//! All integers are little endian. What `id`, `offset` and the payload mean depends on the kind:
//!
//! | kind          | id            | offset                     | payload                               |
//! |---------------|---------------|----------------------------|---------------------------------------|
//! | `Packet`      | 0             | 0                          | one packet of the layer above         |
//! | `ReadRequest` | the transfer  | 0                          | region key (16), offset (8), len (8)  |
//! | `ReadData`    | the transfer  | where in the reader's buffer| the bytes (a chunk of the read)      |
//! | `ReadRefused` | the transfer  | 0                          | why, UTF-8                            |
//! | `Write`       | flags         | the update's first byte    | region key (16), offset (8), bytes    |
//! | `WriteRefused`| 0             | 0                          | why, UTF-8                            |
//! | `Bye`         | 0             | 0                          | nothing: the sender finalized cleanly |
//! | `Lookup`      | the request   | 0                          | a VMMC name (8)                       |
//! | `LookupFound` | the request   | 0                          | region key (16), len (8), access (4)  |
//! | `LookupRefused`| the request  | 0                          | why, UTF-8                            |
//! | `Fence`       | the request   | 0                          | nothing                               |
//! | `FenceDone`   | the request   | 0                          | nothing                               |
//!
//! A `Write` is one chunk of a deliberate update (VMMC, [`crate::vmmc`]); its flags say
//! [`WRITE_NOTIFY`] on the last chunk of an update that raises a notification, which the
//! exporter's device raises once the chunk is applied, for the whole update: from the offset
//! in the header to the end of the chunk. `Lookup` asks for the region a peer exports under a
//! name (VMMC's import by name), answered by the exporter's device. `Fence` is answered with
//! `FenceDone` once every frame before it is handled: every `Write` before it applied or
//! answered with `WriteRefused`, which then arrives first.

use crate::region::RegionKey;

/// Bytes of a frame header.
pub const HEADER_LEN: usize = 24;
/// Bytes of a `ReadRequest` payload.
pub const READ_REQUEST_LEN: usize = RegionKey::LEN + 16;
/// Bytes before the data in a `Write` payload.
pub const WRITE_PREFIX_LEN: usize = RegionKey::LEN + 8;
/// Bytes of a `Lookup` payload.
pub const LOOKUP_LEN: usize = 8;
/// Bytes of a `LookupFound` payload.
pub const LOOKUP_FOUND_LEN: usize = RegionKey::LEN + 12;
/// A `Write`'s flag (in its `id`): raise a notification once this chunk is applied.
pub const WRITE_NOTIFY: u32 = 1;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Packet = 1,
    ReadRequest = 2,
    ReadData = 3,
    ReadRefused = 4,
    Write = 5,
    WriteRefused = 6,
    Bye = 7,
    Lookup = 8,
    LookupFound = 9,
    LookupRefused = 10,
    Fence = 11,
    FenceDone = 12,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Packet,
            2 => Kind::ReadRequest,
            3 => Kind::ReadData,
            4 => Kind::ReadRefused,
            5 => Kind::Write,
            6 => Kind::WriteRefused,
            7 => Kind::Bye,
            8 => Kind::Lookup,
            9 => Kind::LookupFound,
            10 => Kind::LookupRefused,
            11 => Kind::Fence,
            12 => Kind::FenceDone,
            _ => return None,
        })
    }
}

/// A frame header over a byte buffer of at least [`HEADER_LEN`] bytes.
pub struct Header<T: AsRef<[u8]>>(T);

impl<T: AsRef<[u8]>> Header<T> {
    /// A view of `buf`'s first [`HEADER_LEN`] bytes; `None` if it is shorter.
    pub fn new_checked(buf: T) -> Option<Header<T>> {
        (buf.as_ref().len() >= HEADER_LEN).then_some(Header(buf))
    }

    fn u32_at(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.0.as_ref()[at..at + 4].try_into().expect("4 bytes"))
    }

    /// The kind, or `None` for a byte no sender of this version writes.
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_u8(self.0.as_ref()[0])
    }

    pub fn raw_kind(&self) -> u8 {
        self.0.as_ref()[0]
    }

    /// Payload bytes that follow the header.
    pub fn len(&self) -> usize {
        self.u32_at(4) as usize
    }

    pub fn id(&self) -> u32 {
        self.u32_at(8)
    }

    pub fn offset(&self) -> u64 {
        u64::from_le_bytes(self.0.as_ref()[16..24].try_into().expect("8 bytes"))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Writes a whole header.
    pub fn emit(mut self, kind: Kind, len: usize, id: u32, offset: u64) {
        let b = &mut self.0.as_mut()[..HEADER_LEN];
        b.fill(0);
        b[0] = kind as u8;
        b[4..8].copy_from_slice(&(len as u32).to_le_bytes());
        b[8..12].copy_from_slice(&id.to_le_bytes());
        b[16..24].copy_from_slice(&offset.to_le_bytes());
    }
}

/// A header as an array, for the frames that are built apart from their payload.
pub fn header(kind: Kind, len: usize, id: u32, offset: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    Header(&mut h[..]).emit(kind, len, id, offset);
    h
}

/// What a reader asks for: `len` bytes from `offset` of region `key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    pub key: RegionKey,
    pub offset: u64,
    pub len: u64,
}

impl ReadRequest {
    pub fn emit(&self) -> [u8; READ_REQUEST_LEN] {
        let mut b = [0u8; READ_REQUEST_LEN];
        b[..RegionKey::LEN].copy_from_slice(&self.key.emit());
        b[16..24].copy_from_slice(&self.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// `None` when the payload is not a read request (wrong length, a zero key).
    pub fn parse(b: &[u8]) -> Option<ReadRequest> {
        if b.len() != READ_REQUEST_LEN {
            return None;
        }
        Some(ReadRequest {
            key: RegionKey::parse(b)?,
            offset: u64::from_le_bytes(b[16..24].try_into().ok()?),
            len: u64::from_le_bytes(b[24..32].try_into().ok()?),
        })
    }
}

/// The prefix of a `Write` payload: where the bytes after it go.
pub fn write_prefix(key: RegionKey, offset: u64) -> [u8; WRITE_PREFIX_LEN] {
    let mut b = [0u8; WRITE_PREFIX_LEN];
    b[..RegionKey::LEN].copy_from_slice(&key.emit());
    b[16..24].copy_from_slice(&offset.to_le_bytes());
    b
}

/// Splits a `Write` payload into its key, offset and bytes.
pub fn parse_write(b: &[u8]) -> Option<(RegionKey, u64, &[u8])> {
    if b.len() < WRITE_PREFIX_LEN {
        return None;
    }
    let key = RegionKey::parse(b)?;
    let offset = u64::from_le_bytes(b[16..24].try_into().ok()?);
    Some((key, offset, &b[WRITE_PREFIX_LEN..]))
}

/// The answer to a `Lookup`: the region's key, length and access.
pub fn lookup_found(key: RegionKey, len: u64, access: u32) -> [u8; LOOKUP_FOUND_LEN] {
    let mut b = [0u8; LOOKUP_FOUND_LEN];
    b[..RegionKey::LEN].copy_from_slice(&key.emit());
    b[16..24].copy_from_slice(&len.to_le_bytes());
    b[24..28].copy_from_slice(&access.to_le_bytes());
    b
}

/// Reads a `LookupFound` payload; `None` if it is not one.
pub fn parse_lookup_found(b: &[u8]) -> Option<(RegionKey, u64, u32)> {
    if b.len() != LOOKUP_FOUND_LEN {
        return None;
    }
    Some((
        RegionKey::parse(b)?,
        u64::from_le_bytes(b[16..24].try_into().ok()?),
        u32::from_le_bytes(b[24..28].try_into().ok()?),
    ))
}

/// Reads a `Lookup` payload: the name.
pub fn parse_lookup(b: &[u8]) -> Option<u64> {
    let b: [u8; LOOKUP_LEN] = b.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = header(Kind::ReadData, 1 << 20, 7, 4096);
        let v = Header::new_checked(&h[..]).unwrap();
        assert_eq!(v.kind(), Some(Kind::ReadData));
        assert_eq!((v.len(), v.id(), v.offset()), (1 << 20, 7, 4096));
        assert!(Header::new_checked(&h[..23]).is_none());
        let mut bad = h;
        bad[0] = 99;
        assert_eq!(Header::new_checked(&bad[..]).unwrap().kind(), None);
    }

    #[test]
    fn read_request_round_trip() {
        let r = ReadRequest {
            key: RegionKey { id: 3, key: 0xfeed },
            offset: 10,
            len: 20,
        };
        assert_eq!(ReadRequest::parse(&r.emit()), Some(r));
        assert_eq!(ReadRequest::parse(&r.emit()[..31]), None);
        assert_eq!(ReadRequest::parse(&[0u8; READ_REQUEST_LEN]), None);
    }

    #[test]
    fn lookup_payloads_round_trip() {
        let key = RegionKey { id: 4, key: 77 };
        assert_eq!(
            parse_lookup_found(&lookup_found(key, 4096, 3)),
            Some((key, 4096, 3))
        );
        assert_eq!(parse_lookup_found(&[0u8; LOOKUP_FOUND_LEN]), None);
        assert_eq!(parse_lookup(&9u64.to_le_bytes()), Some(9));
        assert_eq!(parse_lookup(&[1, 2, 3]), None);
        let h = header(Kind::FenceDone, 0, 5, 0);
        assert_eq!(
            Header::new_checked(&h[..]).unwrap().kind(),
            Some(Kind::FenceDone)
        );
    }

    #[test]
    fn write_prefix_round_trip() {
        let key = RegionKey { id: 1, key: 2 };
        let mut b = write_prefix(key, 99).to_vec();
        b.extend_from_slice(b"abc");
        assert_eq!(parse_write(&b), Some((key, 99, &b"abc"[..])));
        assert_eq!(parse_write(&b[..10]), None);
    }
}
