//! More ranks than cores (8 ranks on this 2-core machine): waits must yield, or the job crawls.
//! Every rank exchanges with its neighbours in a ring and then with everyone, checking data.

use bip_core::{Bip, BipConfig};
use nic_model::testing::{is_rank, run_ranks};
use nic_model::Nic;
use std::time::{Duration, Instant};

const RANKS: usize = 8;
const ROUNDS: usize = 300;

fn word(from: usize, to: usize, round: usize) -> [u8; 16] {
    let mut w = [0u8; 16];
    w[..8].copy_from_slice(&((from * 1000 + to) as u64).to_le_bytes());
    w[8..].copy_from_slice(&(round as u64).to_le_bytes());
    w
}

#[test]
fn eight_ranks_on_two_cores() {
    if is_rank() {
        let mut bip = Bip::new(Nic::from_env().unwrap(), BipConfig::from_env()).unwrap();
        let (me, n) = (bip.mynode(), bip.numnodes());
        let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
        let mut buf = [0u8; 16];
        for round in 0..ROUNDS {
            bip.send(next, 1, &word(me, next, round)).unwrap();
            let (len, src) = bip.recv(1, &mut buf).unwrap();
            assert_eq!((len, src), (16, prev));
            assert_eq!(buf, word(prev, me, round));
        }
        // Everyone to everyone, long messages (rendezvous under contention): post every
        // receive, start every send, then wait for all.
        let big: Vec<u8> = (0..100_000).map(|i| (i * 7 + me) as u8).collect();
        let mut bufs: Vec<Vec<u8>> = (1..n).map(|_| vec![0u8; big.len()]).collect();
        let recvs: Vec<_> = bufs
            .iter_mut()
            // SAFETY: each buffer outlives its request, waited for below, and is not touched
            // meanwhile.
            .map(|b| unsafe { bip.irecv(2, b.as_mut_ptr(), b.len()) }.unwrap())
            .collect();
        let sends: Vec<_> = (0..n)
            .filter(|&p| p != me)
            // SAFETY: `big` outlives the requests, waited for below.
            .map(|p| unsafe { bip.isend(p, 2, big.as_ptr(), big.len()) }.unwrap())
            .collect();
        let mut from = Vec::new();
        for (r, b) in recvs.into_iter().zip(&bufs) {
            let c = bip.wait(r).unwrap();
            assert_eq!(c.len, big.len());
            assert!(
                b.iter()
                    .enumerate()
                    .all(|(i, &x)| x == (i * 7 + c.peer) as u8),
                "data from {}",
                c.peer
            );
            from.push(c.peer);
        }
        for s in sends {
            bip.wait(s).unwrap();
        }
        from.sort_unstable();
        assert_eq!(from, (0..n).filter(|&p| p != me).collect::<Vec<_>>());
        bip.finalize().unwrap();
        return;
    }
    let t = Instant::now();
    let out = run_ranks("eight_ranks_on_two_cores", RANKS, &[]);
    assert!(out.success(), "{out:?}");
    eprintln!("8 ranks: {:?}", t.elapsed());
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "the oversubscribed job crawled: {:?}",
        t.elapsed()
    );
}
