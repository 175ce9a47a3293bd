//! Ping-pong correctness over real processes, from 0 B to 16 MiB at odd sizes and alignments.

use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7) ^ (i >> 8)) as u8)
        .collect()
}

const SIZES: &[usize] = &[
    0,
    1,
    7,
    8,
    63,
    64,
    1000,
    4095,
    4096,
    4097,
    8191,
    8192,
    8193,
    16383,
    16384,
    16385,
    24575,
    24576,
    24577,
    65537,
    1 << 20,
    (1 << 20) + 3,
    16 << 20,
];

fn pingpong_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let me = bip.mynode();
    let peer = 1 - me;
    for (i, &len) in SIZES.iter().enumerate() {
        for align in [0usize, 1, 3] {
            let data = pattern(len + align, i);
            let mut back = vec![0u8; len + 8 + align];
            if me == 0 {
                bip.send(peer, 5, &data[align..]).unwrap();
                let (n, src) = bip.recv(5, &mut back[align..]).unwrap();
                assert_eq!((n, src), (len, peer));
                assert!(
                    back[align..align + len] == data[align..],
                    "echo mismatch at size {len} align {align}"
                );
            } else {
                let (n, src) = bip.recv(5, &mut back[align..]).unwrap();
                assert_eq!((n, src), (len, peer));
                bip.send(peer, 5, &back[align..align + n]).unwrap();
            }
        }
    }
    bip.finalize().unwrap();
}

#[test]
fn pingpong_all_sizes() {
    if is_rank() {
        return pingpong_body();
    }
    let out = run_ranks("pingpong_all_sizes", 2, &[]);
    assert!(out.success(), "{out:?}");
}

/// Split transfers whose sender may not write (`MPI_NIC_DMA=read`): the receiver reads the
/// second half itself.
#[test]
fn pingpong_all_sizes_receiver_reads_all() {
    if is_rank() {
        return pingpong_body();
    }
    let out = run_ranks(
        "pingpong_all_sizes_receiver_reads_all",
        2,
        &[("MPI_NIC_DMA", "read")],
    );
    assert!(out.success(), "{out:?}");
}

/// Long messages into shorter buffers: the first bytes arrive, the receive reports the
/// truncation, and the route stays usable; with transfers split and not.
fn truncation_body() {
    let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
    let me = bip.mynode();
    for (i, (len, cap)) in [
        (1usize << 20, 300_000usize),
        (100_000, 40_000),
        (50_000, 10),
    ]
    .into_iter()
    .enumerate()
    {
        let data = pattern(len, i);
        if me == 0 {
            bip.send(1, 2, &data).unwrap();
            bip.send(1, 2, &data[..100]).unwrap();
        } else {
            let mut buf = vec![0u8; cap];
            match bip.recv(2, &mut buf) {
                Err(bip_core::BipError::Truncated {
                    len: l, capacity, ..
                }) => assert_eq!((l, capacity), (len, cap)),
                other => panic!("expected truncation of {len} into {cap}, got {other:?}"),
            }
            assert!(buf == data[..cap], "kept bytes differ ({len} into {cap})");
            let mut small = [0u8; 100];
            assert_eq!(bip.recv(2, &mut small).unwrap(), (100, 0));
            assert!(small[..] == data[..100]);
        }
    }
    bip.finalize().unwrap();
}

#[test]
fn long_messages_truncate_cleanly() {
    if is_rank() {
        return truncation_body();
    }
    for split in ["16384", "0"] {
        let out = run_ranks(
            "long_messages_truncate_cleanly",
            2,
            &[("MPI_NIC_SPLIT_MIN", split)],
        );
        assert!(out.success(), "MPI_NIC_SPLIT_MIN={split}: {out:?}");
    }
}

#[test]
fn pingpong_all_sizes_packet_fallback() {
    if is_rank() {
        return pingpong_body();
    }
    let out = run_ranks(
        "pingpong_all_sizes_packet_fallback",
        2,
        &[("MPI_NIC_DMA", "off")],
    );
    assert!(out.success(), "{out:?}");
}
