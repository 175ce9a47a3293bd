//! Ping-pong correctness over real processes, from 0 B to 16 MiB at odd sizes and alignments.

use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(7) ^ (i >> 8)) as u8).collect()
}

const SIZES: &[usize] = &[0, 1, 7, 8, 63, 64, 1000, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 24575, 24576, 24577, 65537, 1 << 20, (1 << 20) + 3, 16 << 20];

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
                assert!(back[align..align + len] == data[align..], "echo mismatch at size {len} align {align}");
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

#[test]
fn pingpong_all_sizes_packet_fallback() {
    if is_rank() {
        return pingpong_body();
    }
    let out = run_ranks("pingpong_all_sizes_packet_fallback", 2, &[("MPI_NIC_DMA", "off")]);
    assert!(out.success(), "{out:?}");
}
