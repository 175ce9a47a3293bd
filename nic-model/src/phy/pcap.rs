//! Packet capture: a [`Device`] wrapper that writes every packet to a pcap file.
//!
//! [`PcapWriter`] records each packet this rank transmits (as the layer above wrote it) and
//! each packet it receives (as the layer above saw it, so after any fault injection below).
//! Region transfers (single copies) move no packets and are not recorded.
//!
//! The file is a classic pcap file (not pcapng) with link type `USER0` (147), microsecond
//! wall-clock timestamps, in the host's byte order. Every record is a 16-byte pseudo-header
//! followed by the packet's payload; the fields of the pseudo-header are little-endian:
//!
//! | offset | size | field                                                                  |
//! |-------:|-----:|------------------------------------------------------------------------|
//! |      0 |    1 | magic, `0xB1`                                                          |
//! |      1 |    1 | direction: 0 = transmitted by this rank, 1 = received by it            |
//! |      2 |    2 | source rank (`u16`)                                                    |
//! |      4 |    2 | destination rank (`u16`)                                               |
//! |      6 |    4 | payload length in bytes (`u32`)                                        |
//! |     10 |    4 | packet counter: index of the packet among those of its direction in this file, from 0 (`u32`, wraps) |
//! |     14 |    1 | pseudo-header version, 1                                               |
//! |     15 |    1 | reserved, 0                                                            |
//!
//! Ranks above 65535 are written as 65535. A record is cut at the file's snapshot length (at
//! least 65535 bytes and at least the mtu plus the pseudo-header), so records are complete in
//! practice.
//!
//! To look at the packets in Wireshark or tshark, map `DLT_USER0` to a dissector of the
//! pseudo-header, for instance this Lua one (`tshark -X lua_script:bip.lua -r rank0.pcap`):
//!
//! ```text
//! local p = Proto("nicpcap", "NIC pseudo-header")
//! local f_dir = ProtoField.uint8("nicpcap.dir", "Direction", base.DEC, {[0] = "tx", [1] = "rx"})
//! local f_src = ProtoField.uint16("nicpcap.src", "Source rank")
//! local f_dst = ProtoField.uint16("nicpcap.dst", "Destination rank")
//! local f_len = ProtoField.uint32("nicpcap.len", "Payload length")
//! local f_seq = ProtoField.uint32("nicpcap.seq", "Packet counter")
//! p.fields = { f_dir, f_src, f_dst, f_len, f_seq }
//! function p.dissector(buf, pinfo, tree)
//!   pinfo.cols.protocol = "NIC"
//!   local t = tree:add(p, buf(0, 16))
//!   t:add(f_dir, buf(1, 1)); t:add_le(f_src, buf(2, 2)); t:add_le(f_dst, buf(4, 2))
//!   t:add_le(f_len, buf(6, 4)); t:add_le(f_seq, buf(10, 4))
//!   Dissector.get("data"):call(buf(16):tvb(), pinfo, tree)
//! end
//! DissectorTable.get("wtap_encap"):add(wtap.USER0, p)
//! ```
//!
//! [`PcapWriter::from_env`] turns tracing on from `MPI_NIC_PCAP=PREFIX`, writing to
//! `PREFIX.rank<N>.pcap`.

use super::{forward_regions, Capabilities, Device, PeerStatus};
use crate::counters::Counters;
use crate::error::{Rank, Result};
use pcap_file::pcap::{PcapHeader, PcapPacket};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// Environment variable holding the path prefix of the pcap files.
pub const PCAP_ENV: &str = "MPI_NIC_PCAP";
/// Length of the pseudo-header before each payload.
pub const PSEUDO_HEADER_LEN: usize = 16;
/// First byte of every pseudo-header.
pub const PSEUDO_HEADER_MAGIC: u8 = 0xB1;
/// Version of the pseudo-header layout, its byte 14.
pub const PSEUDO_HEADER_VERSION: u8 = 1;

/// The pcap file a rank writes to under `MPI_NIC_PCAP=PREFIX`: `PREFIX.rank<N>.pcap`, or
/// `None` when the variable is unset or empty.
pub fn pcap_path_from_env(rank: Rank) -> Option<PathBuf> {
    let prefix = std::env::var_os(PCAP_ENV).filter(|p| !p.is_empty())?;
    let mut path = prefix;
    path.push(format!(".rank{rank}.pcap"));
    Some(PathBuf::from(path))
}

/// Direction of a recorded packet, byte 1 of the pseudo-header.
#[derive(Clone, Copy)]
enum Direction {
    Tx = 0,
    Rx = 1,
}

/// The buffered file, shared between `pcap_file`'s writer (which owns one handle and offers
/// no way to flush) and the [`Trace`], which flushes through the other.
#[derive(Clone)]
struct SharedFile(Arc<Mutex<BufWriter<File>>>);

impl SharedFile {
    fn with<R>(&self, f: impl FnOnce(&mut BufWriter<File>) -> io::Result<R>) -> io::Result<R> {
        let mut file = self
            .0
            .lock()
            .map_err(|_| io::Error::other("pcap file lock poisoned"))?;
        f(&mut file)
    }
}

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.with(|f| f.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.with(|f| f.flush())
    }
}

/// The recording side of a [`PcapWriter`].
struct Trace {
    /// `None` after a write error: tracing stops, communication goes on.
    out: Option<pcap_file::pcap::PcapWriter<SharedFile>>,
    file: SharedFile,
    path: PathBuf,
    rank: Rank,
    snaplen: usize,
    /// Packets recorded so far, per direction.
    counts: [u32; 2],
    /// The record being assembled.
    record: Vec<u8>,
}

impl Trace {
    fn write(&mut self, dir: Direction, src: Rank, dst: Rank, payload: &[u8]) {
        let Some(out) = self.out.as_mut() else { return };
        let rank16 = |r: Rank| u16::try_from(r).unwrap_or(u16::MAX);
        let count = &mut self.counts[dir as usize];
        let seq = *count;
        *count = count.wrapping_add(1);
        let r = &mut self.record;
        r.clear();
        r.extend_from_slice(&[PSEUDO_HEADER_MAGIC, dir as u8]);
        r.extend_from_slice(&rank16(src).to_le_bytes());
        r.extend_from_slice(&rank16(dst).to_le_bytes());
        r.extend_from_slice(
            &u32::try_from(payload.len())
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        r.extend_from_slice(&seq.to_le_bytes());
        r.extend_from_slice(&[PSEUDO_HEADER_VERSION, 0]);
        r.extend_from_slice(payload);
        let orig_len = u32::try_from(r.len()).unwrap_or(u32::MAX);
        let captured = &r[..r.len().min(self.snaplen)];
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        if let Err(e) = out.write_packet(&PcapPacket::new(now, orig_len, captured)) {
            tracing::warn!(target: "nic", path = %self.path.display(), error = %e, "pcap trace stopped");
            self.out = None;
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(target: "nic", path = %self.path.display(), error = %e, "pcap trace not flushed");
        }
    }
}

fn io_error(e: PcapError) -> io::Error {
    match e {
        PcapError::IoError(e) => e,
        other => io::Error::other(other),
    }
}

/// A [`Device`] wrapper that writes every packet sent and received to a pcap file.
pub struct PcapWriter<D: Device> {
    inner: D,
    trace: Trace,
}

impl<D: Device> PcapWriter<D> {
    /// Wraps `inner`, creating (or truncating) the pcap file at `path`.
    pub fn new(inner: D, path: &Path) -> io::Result<Self> {
        let file = SharedFile(Arc::new(Mutex::new(BufWriter::new(File::create(path)?))));
        let snaplen = (inner.capabilities().mtu + PSEUDO_HEADER_LEN).max(65535);
        let header = PcapHeader {
            datalink: DataLink::USER0,
            snaplen: u32::try_from(snaplen).unwrap_or(u32::MAX),
            ts_resolution: TsResolution::MicroSecond,
            endianness: Endianness::native(),
            ..PcapHeader::default()
        };
        let out =
            pcap_file::pcap::PcapWriter::with_header(file.clone(), header).map_err(io_error)?;
        let trace = Trace {
            out: Some(out),
            file,
            path: path.to_path_buf(),
            rank: inner.rank(),
            snaplen,
            counts: [0; 2],
            record: Vec::new(),
        };
        Ok(PcapWriter { inner, trace })
    }

    /// Wraps `inner` if `MPI_NIC_PCAP=PREFIX` asks for tracing (see [`pcap_path_from_env`]);
    /// otherwise hands `inner` back as `Ok(Err(inner))`.
    pub fn from_env(inner: D) -> io::Result<Result<Self, D>> {
        match pcap_path_from_env(inner.rank()) {
            Some(path) => PcapWriter::new(inner, &path).map(Ok),
            None => Ok(Err(inner)),
        }
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.trace.path
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.trace.flush()
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably. Packets sent or received through it are not recorded.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Flushes and closes the file, and unwraps the device.
    pub fn into_inner(self) -> D {
        let PcapWriter { inner, trace } = self;
        drop(trace);
        inner
    }
}

impl<D: Device> super::Wraps for PcapWriter<D> {
    type Inner = D;
    fn inner(&self) -> &D {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }
}

impl<D: Device> Device for PcapWriter<D> {
    fn rank(&self) -> Rank {
        self.inner.rank()
    }

    fn nranks(&self) -> usize {
        self.inner.nranks()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let trace = &mut self.trace;
        self.inner.send(dest, len, &mut |buf| {
            fill(buf);
            trace.write(Direction::Tx, trace.rank, dest, buf);
        })
    }

    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        let trace = &mut self.trace;
        self.inner.poll(&mut |src, data| {
            take(src, data);
            trace.write(Direction::Rx, src, trace.rank, data);
        })
    }

    fn progress(&mut self) -> bool {
        self.inner.progress()
    }

    forward_regions!();

    fn peer_status(&self, peer: Rank) -> PeerStatus {
        self.inner.peer_status(peer)
    }

    fn counters(&self) -> &Counters {
        self.inner.counters()
    }

    fn set_protocol_header(&mut self, bytes: usize) {
        self.inner.set_protocol_header(bytes)
    }

    fn profile(&self) -> Option<&crate::timing::Profile> {
        self.inner.profile()
    }

    fn finalize(&mut self) {
        if let Err(e) = self.flush() {
            tracing::warn!(target: "nic", path = %self.trace.path.display(), error = %e, "pcap trace not flushed");
        }
        self.inner.finalize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::test_device::TestDevice;
    use crate::phy::{FaultConfig, FaultInjector};
    use pcap_file::pcap::PcapReader;

    /// A fresh path in the temporary directory; the file is removed when dropped.
    struct TempPath(PathBuf);

    impl TempPath {
        fn new(name: &str) -> TempPath {
            TempPath(
                std::env::temp_dir().join(format!("nic-model-{}-{name}.pcap", std::process::id())),
            )
        }
    }

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    /// One record: direction, source, destination, packet counter, payload.
    type Record = (u8, u16, u16, u32, Vec<u8>);

    /// Reads back a trace, checking the file header and each pseudo-header's fixed fields.
    fn read(path: &Path) -> Vec<Record> {
        let mut reader = PcapReader::new(File::open(path).unwrap()).unwrap();
        let header = reader.header();
        assert_eq!(header.datalink, DataLink::USER0);
        assert_eq!(u32::from(header.datalink), 147);
        assert_eq!(header.ts_resolution, TsResolution::MicroSecond);
        let mut records = Vec::new();
        while let Some(packet) = reader.next_packet() {
            let packet = packet.unwrap();
            let d = &packet.data;
            assert_eq!(packet.orig_len as usize, d.len());
            assert!(
                packet.timestamp.as_secs() > 1_600_000_000,
                "wall-clock timestamp"
            );
            assert_eq!(
                (d[0], d[14], d[15]),
                (PSEUDO_HEADER_MAGIC, PSEUDO_HEADER_VERSION, 0)
            );
            let u16_at = |i: usize| u16::from_le_bytes([d[i], d[i + 1]]);
            let u32_at = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().unwrap());
            let payload = d[PSEUDO_HEADER_LEN..].to_vec();
            assert_eq!(u32_at(6) as usize, payload.len());
            records.push((d[1], u16_at(2), u16_at(4), u32_at(10), payload));
        }
        records
    }

    fn send(dev: &mut impl Device, dest: Rank, payload: &[u8]) {
        assert!(crate::phy::send_bytes(dev, dest, payload));
    }

    fn recv(dev: &mut impl Device, src: Rank) -> Vec<u8> {
        let (from, p) = crate::phy::poll_bytes(dev).unwrap();
        assert_eq!(from, src);
        p
    }

    #[test]
    fn records_every_packet_sent_and_received() {
        let tmp = TempPath::new("both");
        let mut w = PcapWriter::new(TestDevice::new(0, 2, 2048), &tmp.0).unwrap();
        assert_eq!(w.path(), tmp.0);
        let big: Vec<u8> = (0..2000u32).map(|i| i as u8).collect();
        send(&mut w, 1, b"hello");
        send(&mut w, 0, &big);
        send(&mut w, 1, b"");
        assert_eq!(recv(&mut w, 0), big);
        w.inner_mut().push(1, b"xyz");
        assert_eq!(recv(&mut w, 1), b"xyz");
        assert!(crate::phy::poll_bytes(&mut w).is_none());
        assert_eq!(w.counters().packets_tx, 3);
        let dev = w.into_inner();
        assert_eq!(dev.sent.len(), 3);
        let expect: Vec<Record> = vec![
            (0, 0, 1, 0, b"hello".to_vec()),
            (0, 0, 0, 1, big.clone()),
            (0, 0, 1, 2, Vec::new()),
            (1, 0, 0, 0, big),
            (1, 1, 0, 1, b"xyz".to_vec()),
        ];
        assert_eq!(read(&tmp.0), expect);
    }

    #[test]
    fn finalize_flushes_and_finalizes_the_inner_device() {
        let tmp = TempPath::new("finalize");
        let mut w = PcapWriter::new(TestDevice::new(1, 2, 64), &tmp.0).unwrap();
        for i in 0..10u8 {
            send(&mut w, 0, &[i; 7]);
        }
        w.finalize();
        assert!(w.inner().finalized);
        let records = read(&tmp.0);
        assert_eq!(records.len(), 10);
        assert!(records
            .iter()
            .enumerate()
            .all(|(i, r)| *r == (0, 1, 0, i as u32, vec![i as u8; 7])));
    }

    #[test]
    fn records_what_the_layer_above_saw() {
        let tmp = TempPath::new("faults");
        let mut dev = TestDevice::new(0, 2, 64);
        dev.push(1, b"original");
        let faulty = FaultInjector::new(
            dev,
            FaultConfig {
                corrupt: 1.0,
                ..FaultConfig::default()
            },
        );
        let mut w = PcapWriter::new(faulty, &tmp.0).unwrap();
        let seen = recv(&mut w, 1);
        assert_ne!(seen, b"original");
        drop(w);
        assert_eq!(read(&tmp.0), vec![(1, 1, 0, 0, seen)]);
    }

    #[test]
    fn from_env_hands_the_device_back_when_unset() {
        if std::env::var_os(PCAP_ENV).is_some() {
            return;
        }
        assert!(pcap_path_from_env(3).is_none());
        let dev = PcapWriter::from_env(TestDevice::new(0, 1, 64))
            .unwrap()
            .err()
            .unwrap();
        assert_eq!(dev.rank(), 0);
    }
}
