//! The one rendezvous from the outside: a long message is two packets on the NIC (RTS and
//! FIN, the data read in one copy), and a peer that asks for bytes the sender did not export,
//! or asks after its FIN, is refused and gets nothing. The refusals are provoked with
//! hand-built packets from a process that speaks BIP's wire format itself.

use bip_core::{Bip, BipConfig, BipError};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::{poll_bytes, send_bytes, Access, Device, Nic, NicError, RegionKey};
use std::time::{Duration, Instant};

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 % 251) as u8).collect()
}

/// BIP's header, as its wire module documents it (24 bytes over a reliable device).
fn header(kind: u8, tag: u32, len: u64, aux: u64) -> Vec<u8> {
    let mut h = vec![kind, 0, 0, 0];
    h.extend_from_slice(&tag.to_le_bytes());
    h.extend_from_slice(&len.to_le_bytes());
    h.extend_from_slice(&aux.to_le_bytes());
    h
}

const EAGER: u8 = 1;
const RTS: u8 = 3;
const CREDIT: u8 = 7;
const FIN: u8 = 5;
const DATA: u8 = 6;
const GET: u8 = 10;
const GET_REFUSED: u8 = 11;

/// A parsed BIP packet: kind, tag, len, aux, payload.
type Packet = (u8, u32, u64, u64, Vec<u8>);

fn parse(p: &[u8]) -> Packet {
    let u64_at = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().unwrap());
    (
        p[0],
        u32::from_le_bytes(p[4..8].try_into().unwrap()),
        u64_at(8),
        u64_at(16),
        p[24..].to_vec(),
    )
}

fn raw_send(nic: &mut Nic, dest: usize, p: &[u8]) {
    let start = Instant::now();
    while !send_bytes(nic, dest, p) {
        assert!(start.elapsed() < Duration::from_secs(10), "route full");
    }
}

/// The next BIP packet from `src` that is not a credit grant.
fn raw_recv(nic: &mut Nic, src: usize) -> Packet {
    let start = Instant::now();
    loop {
        if let Some((from, p)) = poll_bytes(nic) {
            assert_eq!(from, src, "a packet from an unexpected rank");
            let p = parse(&p);
            if p.0 != CREDIT {
                return p;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "nothing from rank {src}"
        );
    }
}

/// Expects rank 0's refusal of GET `read`.
fn expect_refused(nic: &mut Nic, read: u32) {
    let (kind, tag, ..) = raw_recv(nic, 0);
    assert_eq!(
        (kind, tag),
        (GET_REFUSED, read),
        "GET {read} was not refused"
    );
}

#[test]
fn a_long_message_is_two_packets() {
    if !is_rank() {
        let out = run_ranks("a_long_message_is_two_packets", 2, &[]);
        assert!(out.success(), "{out:?}");
        return;
    }
    let mut bip = Bip::new(
        nic_model::DeviceStack::from_env().unwrap(),
        BipConfig::from_env(),
    )
    .unwrap();
    let me = bip.mynode();
    let data = pattern(1 << 20);
    // Settle the start-up credit grants first.
    let mut b = [0u8; 1];
    if me == 0 {
        bip.send(1, 1, &b).unwrap();
        bip.recv(1, &mut b).unwrap();
    } else {
        bip.recv(1, &mut b).unwrap();
        bip.send(0, 1, &b).unwrap();
    }
    let before = *bip.device().counters();
    if me == 0 {
        bip.send(1, 2, &data).unwrap();
    } else {
        let mut got = vec![0u8; data.len()];
        assert_eq!(bip.recv(2, &mut got).unwrap(), (data.len(), 0));
        assert!(got == data);
    }
    let after = *bip.device().counters();
    let sent = after.packets_tx - before.packets_tx;
    // Rank 0 sent the RTS, rank 1 the FIN; nothing else crossed.
    assert_eq!(
        sent, 1,
        "rank {me} sent {sent} packets for one 1 MiB message"
    );
    if me == 1 {
        assert!(
            after.dma_ops > before.dma_ops,
            "the data was not read in one copy"
        );
    }
    bip.finalize().unwrap();
}

#[test]
fn reads_outside_an_export_or_after_its_fin_are_refused() {
    if !is_rank() {
        let out = run_ranks(
            "reads_outside_an_export_or_after_its_fin_are_refused",
            2,
            &[],
        );
        assert!(out.success(), "{out:?}");
        return;
    }
    let data = pattern(65536);
    if std::env::var("NIC_RANK").unwrap() == "0" {
        // Rank 0 speaks BIP.
        let mut bip = Bip::new(
            nic_model::DeviceStack::from_env().unwrap(),
            BipConfig::from_env(),
        )
        .unwrap();
        // As a receiver: an RTS that names more bytes than the exporter gave, and one that
        // names no region at all, fail the receive and leave the buffer alone.
        for case in ["past its end", "a withdrawn region"] {
            let mut buf = vec![0x55u8; 1000];
            match bip.recv(4, &mut buf) {
                Err(BipError::Refused { rank: 1, why }) => assert!(
                    why.contains(if case == "past its end" {
                        "outside"
                    } else {
                        "no such region"
                    }),
                    "{case}: {why}"
                ),
                other => panic!("{case}: expected a refusal, got {other:?}"),
            }
            assert!(
                buf.iter().all(|&b| b == 0x55),
                "{case}: the refused read wrote into the buffer"
            );
            bip.send(1, 10, b"next").unwrap();
        }
        // As a sender: rank 1 reads our region with GETs, good and bad, then says FIN.
        // SAFETY: `data` outlives the request, waited for below.
        let r = unsafe { bip.isend(1, 3, data.as_ptr(), data.len()).unwrap() };
        assert_eq!(bip.wait(r).unwrap().len, data.len());
        // Keep answering (a GET after the FIN) until rank 1 says goodbye.
        let mut bye = [0u8; 3];
        assert_eq!(bip.recv(9, &mut bye).unwrap(), (3, 1));
        assert_eq!(&bye, b"bye");
        bip.finalize().unwrap();
        return;
    }
    // Rank 1 hand-builds its packets, starting with the credit BIP peers grant each other.
    let mut nic = Nic::from_env().unwrap();
    raw_send(&mut nic, 0, &header(CREDIT, 0, 1 << 20, 0));
    let mine = [7u8; 100];
    // SAFETY: `mine` outlives the region (withdrawn below).
    let key = unsafe {
        nic.register(mine.as_ptr() as usize, mine.len(), Access::READ)
            .unwrap()
    };
    raw_send(
        &mut nic,
        0,
        &[header(RTS, 4, 1000, 0), key.emit().to_vec()].concat(),
    );
    assert_eq!(raw_recv(&mut nic, 0), (EAGER, 10, 4, 0, b"next".to_vec()));
    nic.deregister(key).unwrap();
    raw_send(
        &mut nic,
        0,
        &[header(RTS, 4, 10, 0), key.emit().to_vec()].concat(),
    );
    assert_eq!(raw_recv(&mut nic, 0), (EAGER, 10, 4, 0, b"next".to_vec()));
    // Rank 0's long message.
    let (kind, tag, len, _, payload) = raw_recv(&mut nic, 0);
    assert_eq!((kind, tag, len), (RTS, 3, data.len() as u64));
    let theirs = RegionKey::parse(&payload).unwrap();
    let get = |read: u32, len: u64, offset: u64, key: RegionKey| {
        [header(GET, read, len, offset), key.emit().to_vec()].concat()
    };
    // Bytes past the end, and a key it never gave: refused, no data.
    raw_send(&mut nic, 0, &get(5, 100, 65536 - 50, theirs));
    expect_refused(&mut nic, 5);
    raw_send(
        &mut nic,
        0,
        &get(
            6,
            10,
            0,
            RegionKey {
                key: theirs.key ^ 1,
                ..theirs
            },
        ),
    );
    expect_refused(&mut nic, 6);
    // Bytes inside: DATA, exactly those bytes.
    raw_send(&mut nic, 0, &get(7, 5000, 1000, theirs));
    let mut got = vec![0u8; 5000];
    let mut n = 0;
    while n < 5000 {
        let (kind, tag, total, off, piece) = raw_recv(&mut nic, 0);
        assert_eq!((kind, tag, total), (DATA, 7, 5000));
        got[off as usize..off as usize + piece.len()].copy_from_slice(&piece);
        n += piece.len();
    }
    assert!(got == data[1000..6000], "DATA carried other bytes");
    // Reading in one copy works too, until the FIN.
    let mut direct = vec![0u8; 64];
    // SAFETY: `direct` is borrowed until the transfer is done (64 bytes are never split).
    unsafe {
        nic.read_region(0, theirs, 64, direct.as_mut_ptr(), 64)
            .unwrap()
    };
    assert_eq!(direct, data[64..128]);
    raw_send(&mut nic, 0, &header(FIN, theirs.id, 0, theirs.key));
    // After the FIN: the GET is refused, and single copy refuses the key.
    raw_send(&mut nic, 0, &get(8, 10, 0, theirs));
    expect_refused(&mut nic, 8);
    let mut untouched = vec![0xaau8; 64];
    // SAFETY: as above.
    match unsafe { nic.read_region(0, theirs, 0, untouched.as_mut_ptr(), 64) } {
        Err(NicError::RegionRefused { rank: 0, .. }) => {}
        other => panic!("a read after the FIN: expected a refusal, got {other:?}"),
    }
    assert!(untouched.iter().all(|&b| b == 0xaa));
    raw_send(
        &mut nic,
        0,
        &[header(EAGER, 9, 3, 0), b"bye".to_vec()].concat(),
    );
    nic.finalize();
}
