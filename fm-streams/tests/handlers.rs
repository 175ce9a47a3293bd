//! FM 2.x handlers over real processes: many senders interleaving, a handler descheduled
//! mid-message while another completes, `extract`'s budget, a flood against a slow receiver
//! (credits), FM 1.x whole-message handlers, two processes flooding each other, and the
//! error cases. Each test re-runs this binary as the ranks of a job.

use bip_core::config::ENVELOPE_COST;
use fm_streams::{Fm, FmError, Stream};
use nic_model::testing::{is_rank, run_ranks_with};
use nic_model::{DeviceStack, JobConfig};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

// ---- helpers -------------------------------------------------------------------------

type Shared<T> = Rc<RefCell<T>>;

fn shared<T>(v: T) -> Shared<T> {
    Rc::new(RefCell::new(v))
}

thread_local! {
    /// Closing messages received (see `finish`).
    static FINISHED: Cell<u64> = const { Cell::new(0) };
}

/// Starts FM, with the closing message's handler registered.
fn open() -> Fm<DeviceStack> {
    let mut fm =
        Fm::new(DeviceStack::from_env().expect("attaching to the job")).expect("starting FM");
    fm.set_handler(H_DONE, |s: &mut Stream<'_>| {
        read_pieces(s, &[64]);
        FINISHED.with(|d| d.set(d.get() + 1));
    })
    .unwrap();
    fm
}

/// Pseudo-random bytes, different for every seed.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A message of `len` bytes naming its sender and sequence number in its first 8 bytes
/// (when it is that long), the rest a pattern of both.
fn stamped(len: usize, sender: usize, seq: usize) -> Vec<u8> {
    let mut v = pattern(len, (sender as u64) << 32 | seq as u64);
    if len >= 8 {
        v[..4].copy_from_slice(&(sender as u32).to_le_bytes());
        v[4..8].copy_from_slice(&(seq as u32).to_le_bytes());
    }
    v
}

/// Sends `data` as one message for `handler` at `dest`, in pieces of `pieces` (cycled).
fn send_pieces(fm: &mut Fm<DeviceStack>, dest: usize, handler: u32, data: &[u8], pieces: &[usize]) {
    let mut s = fm.begin_message(dest, data.len() as u64, handler).unwrap();
    let (mut at, mut k) = (0, 0);
    while at < data.len() {
        let n = pieces[k % pieces.len()].min(data.len() - at);
        fm.send_piece(&mut s, &data[at..at + n]).unwrap();
        at += n;
        k += 1;
    }
    fm.end_message(s).unwrap();
}

fn send_all(fm: &mut Fm<DeviceStack>, dest: usize, handler: u32, data: &[u8]) {
    send_pieces(fm, dest, handler, data, &[data.len().max(1)]);
}

/// Receives the whole message in pieces of `pieces` (cycled).
fn read_pieces(s: &mut Stream<'_>, pieces: &[usize]) -> Vec<u8> {
    let total = s.size() as usize;
    let mut buf = vec![0u8; total];
    let (mut at, mut k) = (0, 0);
    while at < total {
        let n = pieces[k % pieces.len()].min(total - at);
        assert_eq!(
            s.receive(&mut buf[at..at + n]),
            n,
            "short receive at {at} of {total}"
        );
        at += n;
        k += 1;
    }
    assert_eq!(s.remaining(), 0);
    buf
}

/// Runs handlers until `done()`; fails after 20 s.
fn extract_until(fm: &mut Fm<DeviceStack>, what: &str, mut done: impl FnMut() -> bool) {
    let t = Instant::now();
    while !done() {
        if fm.extract(usize::MAX).unwrap() == 0 {
            std::thread::yield_now();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
    }
}

/// Handler id of go-ahead messages (any content); the handler counts them.
const H_GO: u32 = 20;

fn go_counter(fm: &mut Fm<DeviceStack>) -> Rc<Cell<u32>> {
    let go = Rc::new(Cell::new(0u32));
    let g = go.clone();
    fm.set_handler(H_GO, move |s: &mut Stream<'_>| {
        read_pieces(s, &[64]);
        g.set(g.get() + 1);
    })
    .unwrap();
    go
}

/// Handler id of the closing message; its handler counts them (in `FINISHED`).
const H_DONE: u32 = 21;

/// Closing, after a test's work and its checks: rank 0 tells the others to exit, and they
/// wait for that. The ranks do not finalize, so the launcher takes each exit for a death and
/// a peer's blocked BIP wait fails when it notices one (at its next liveness check). So no
/// rank but 0 may exit while rank 0 might still wait, and rank 0 exits last of those it
/// waits on; the others then read only a short message, straight from their route.
fn finish(fm: &mut Fm<DeviceStack>) {
    if fm.rank() == 0 {
        for r in 1..fm.nranks() {
            send_all(fm, r, H_DONE, b"finish");
        }
    } else {
        extract_until(fm, "rank 0's finish", || finished() == 1);
    }
}

/// Closing messages handled so far (a peer may send its own while this rank still works).
fn finished() -> u64 {
    FINISHED.with(Cell::get)
}

/// Starts `name` as `n` ranks with `env` (and `slots` packet buffers per route, if given).
fn launch(name: &str, n: usize, env: &[(&str, &str)], slots: Option<usize>) {
    let mut cfg = JobConfig::new(n);
    if let Some(s) = slots {
        cfg.queue_slots = s;
    }
    let out = run_ranks_with(name, &cfg, env, Duration::from_secs(30));
    assert!(out.success(), "{name}: {out:?}");
}

// ---- 1. several senders interleaving ------------------------------------------------

const H_MIX: u32 = 1;
const MIX_MSGS: usize = 30;
const MIX_SIZES: &[usize] = &[
    16, 300, 4000, 4096, 9000, 20_000, 32_768, 50_000, 100_000, 300_000,
];

fn mix_size(sender: usize, seq: usize) -> usize {
    MIX_SIZES[(seq * 7 + sender * 3) % MIX_SIZES.len()]
}

/// How each sender cuts its messages (rank 1 and 3 with pieces of bulk size).
fn mix_pieces(sender: usize) -> &'static [usize] {
    match sender {
        1 => &[100, 40_000, 3],
        2 => &[4096],
        _ => &[33_000, 1, 999],
    }
}

fn many_senders_body() {
    let mut fm = open();
    let me = fm.rank();
    if me != 0 {
        let go = go_counter(&mut fm);
        extract_until(&mut fm, "the go-ahead", || go.get() == 1);
        for seq in 0..MIX_MSGS {
            send_pieces(
                &mut fm,
                0,
                H_MIX,
                &stamped(mix_size(me, seq), me, seq),
                mix_pieces(me),
            );
        }
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<(usize, Vec<u8>)>> = shared(Vec::new());
    let live = Rc::new(Cell::new(0usize));
    let most_live = Rc::new(Cell::new(0usize));
    {
        let (got, live, most_live) = (got.clone(), live.clone(), most_live.clone());
        fm.set_handler(H_MIX, move |s: &mut Stream<'_>| {
            live.set(live.get() + 1);
            most_live.set(most_live.get().max(live.get()));
            let data = read_pieces(s, &[8, 1000, 3, 65_536, 200_000]);
            live.set(live.get() - 1);
            let from = s.sender();
            got.borrow_mut().push((from, data));
        })
        .unwrap();
    }
    for r in 1..4 {
        send_all(&mut fm, r, H_GO, b"go");
    }
    // Let all three start sending before anything is taken, so that their messages interleave.
    std::thread::sleep(Duration::from_millis(100));
    extract_until(&mut fm, "90 messages", || {
        got.borrow().len() == 3 * MIX_MSGS
    });
    let mut next = [0usize; 4];
    for (from, data) in got.borrow().iter() {
        assert!((1..4).contains(from), "message from rank {from}");
        let seq = next[*from];
        next[*from] += 1;
        let want = stamped(mix_size(*from, seq), *from, seq);
        assert_eq!(
            data.len(),
            want.len(),
            "length of message {seq} from rank {from}"
        );
        assert!(
            *data == want,
            "message {seq} from rank {from} ({} B) differs (out of order or corrupt)",
            want.len()
        );
    }
    assert_eq!(next[1..], [MIX_MSGS; 3]);
    let c = fm.counters();
    assert_eq!(c.messages_received, 3 * MIX_MSGS as u64, "{c:?}");
    assert!(c.bulk_direct + c.bulk_staged > 0, "no bulk transfer: {c:?}");
    assert!(c.suspensions > 0, "no handler ever waited: {c:?}");
    assert!(
        most_live.get() >= 2,
        "messages of different senders never overlapped (at most {} handler live)",
        most_live.get()
    );
    finish(&mut fm);
}

#[test]
fn many_senders_interleave_in_order() {
    if is_rank() {
        return many_senders_body();
    }
    launch("many_senders_interleave_in_order", 4, &[], None);
}

// ---- 2. a handler descheduled mid-message while another completes ---------------------

const H_A: u32 = 2;
const H_B: u32 = 3;
const A_LEN: usize = 200_000;
/// What rank 1 sends of A before it waits: more than a packet, so at least one goes out.
const A_FIRST: usize = 5000;
const B_LEN: usize = 300;

fn deschedule_body() {
    let mut fm = open();
    match fm.rank() {
        0 => {
            let log: Shared<Vec<&'static str>> = shared(Vec::new());
            let a_got = Rc::new(Cell::new(0usize));
            let a_data: Shared<Option<Vec<u8>>> = shared(None);
            let b_data: Shared<Option<Vec<u8>>> = shared(None);
            {
                let (log, a_got, a_data) = (log.clone(), a_got.clone(), a_data.clone());
                fm.set_handler(H_A, move |s: &mut Stream<'_>| {
                    log.borrow_mut().push("A start");
                    let total = s.size() as usize;
                    let mut buf = vec![0u8; total];
                    let mut at = 0;
                    while at < total {
                        let n = 1000.min(total - at);
                        assert_eq!(s.receive(&mut buf[at..at + n]), n);
                        at += n;
                        a_got.set(at);
                    }
                    log.borrow_mut().push("A done");
                    *a_data.borrow_mut() = Some(buf);
                })
                .unwrap();
            }
            {
                let (log, b_data) = (log.clone(), b_data.clone());
                fm.set_handler(H_B, move |s: &mut Stream<'_>| {
                    log.borrow_mut().push("B start");
                    let data = read_pieces(s, &[7, 100]);
                    log.borrow_mut().push("B done");
                    *b_data.borrow_mut() = Some(data);
                })
                .unwrap();
            }
            extract_until(&mut fm, "the start of A", || a_got.get() >= 1000);
            assert_eq!(*log.borrow(), ["A start"]);
            // A's handler is suspended inside a receive: rank 1 has not sent the rest.
            assert!(
                a_got.get() <= A_FIRST,
                "A's handler read {} bytes, more than were sent",
                a_got.get()
            );
            send_all(&mut fm, 2, H_GO, b"go");
            extract_until(&mut fm, "B", || b_data.borrow().is_some());
            assert_eq!(
                *log.borrow(),
                ["A start", "B start", "B done"],
                "B must complete while A waits"
            );
            assert!(
                a_got.get() <= A_FIRST && a_data.borrow().is_none(),
                "A progressed without its data"
            );
            assert_eq!(fm.counters().messages_received, 1);
            send_all(&mut fm, 1, H_GO, b"go");
            extract_until(&mut fm, "the rest of A", || a_data.borrow().is_some());
            assert_eq!(*log.borrow(), ["A start", "B start", "B done", "A done"]);
            assert!(
                *a_data.borrow().as_ref().unwrap() == pattern(A_LEN, 0xA),
                "A differs"
            );
            assert!(
                *b_data.borrow().as_ref().unwrap() == pattern(B_LEN, 0xB),
                "B differs"
            );
            let c = fm.counters();
            assert_eq!(c.messages_received, 2, "{c:?}");
            assert!(c.suspensions > 0, "A's handler never suspended: {c:?}");
        }
        1 => {
            let go = go_counter(&mut fm);
            let a = pattern(A_LEN, 0xA);
            let mut s = fm.begin_message(0, A_LEN as u64, H_A).unwrap();
            fm.send_piece(&mut s, &a[..A_FIRST]).unwrap();
            // Rank 0 lets us go on only once B has been handled.
            extract_until(&mut fm, "the go-ahead", || go.get() == 1);
            fm.send_piece(&mut s, &a[A_FIRST..60_000]).unwrap(); // a bulk piece
            for chunk in a[60_000..].chunks(7000) {
                fm.send_piece(&mut s, chunk).unwrap();
            }
            fm.end_message(s).unwrap();
        }
        _ => {
            let go = go_counter(&mut fm);
            extract_until(&mut fm, "the go-ahead", || go.get() == 1);
            send_pieces(&mut fm, 0, H_B, &pattern(B_LEN, 0xB), &[50]);
        }
    }
    finish(&mut fm);
}

#[test]
fn handler_suspended_mid_message_while_another_completes() {
    if is_rank() {
        return deschedule_body();
    }
    launch(
        "handler_suspended_mid_message_while_another_completes",
        3,
        &[],
        None,
    );
}

// ---- 3. extract's budget ------------------------------------------------------------------

const H_HELLO: u32 = 4;
const H_EX: u32 = 5;
const EX_MSGS: usize = 200;
const EX_LEN: usize = 1000;
const BUDGET: usize = 2500;

fn budget_body() {
    let mut fm = open();
    if fm.rank() == 1 {
        let hello = Rc::new(Cell::new(false));
        let h = hello.clone();
        fm.set_handler(H_HELLO, move |s: &mut Stream<'_>| {
            read_pieces(s, &[64]);
            h.set(true);
        })
        .unwrap();
        extract_until(&mut fm, "hello", || hello.get());
        for seq in 0..EX_MSGS {
            send_all(&mut fm, 0, H_EX, &stamped(EX_LEN, 1, seq));
        }
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<Vec<u8>>> = shared(Vec::new());
    let g = got.clone();
    fm.set_handler(H_EX, move |s: &mut Stream<'_>| {
        // Read first: a handler waiting for pieces is suspended, and must not hold the borrow meanwhile.
        let m = read_pieces(s, &[EX_LEN]);
        g.borrow_mut().push(m)
    })
    .unwrap();
    send_all(&mut fm, 1, H_HELLO, b"hello");
    // Rank 1 sends its 200 messages at once (the routes have room for all); let them arrive.
    std::thread::sleep(Duration::from_millis(300));
    // Each message is one FM packet: an 8-byte header and its data.
    let pkt = EX_LEN + 8;
    let max_pkt = fm.bip().max_packet_message();
    assert!(pkt <= max_pkt);
    assert_eq!(fm.extract(0).unwrap(), 0, "a budget of 0 processes nothing");
    assert_eq!(got.borrow().len(), 0);
    assert_eq!(
        fm.extract(1).unwrap(),
        pkt,
        "a budget of 1 processes exactly one packet"
    );
    assert_eq!(got.borrow().len(), 1);
    let mut calls = 0;
    while got.borrow().len() < EX_MSGS {
        let before = got.borrow().len();
        let n = fm.extract(BUDGET).unwrap();
        let handled = got.borrow().len() - before;
        calls += 1;
        assert!(
            n > 0 && handled > 0,
            "call {calls}: no progress with {} messages waiting",
            EX_MSGS - before
        );
        assert!(
            n < BUDGET + pkt && n <= BUDGET + max_pkt,
            "call {calls}: {n} bytes for a budget of {BUDGET}"
        );
        assert_eq!(
            n,
            handled * pkt,
            "call {calls}: bytes reported against messages handled"
        );
        // Packets are taken until the budget is reached: ceil(2500 / 1008) = 3 a call.
        assert_eq!(
            handled,
            BUDGET.div_ceil(pkt).min(EX_MSGS - before),
            "call {calls}"
        );
    }
    assert_eq!(calls, (EX_MSGS - 1).div_ceil(BUDGET.div_ceil(pkt)));
    assert_eq!(fm.extract(BUDGET).unwrap(), 0, "nothing left");
    for (seq, m) in got.borrow().iter().enumerate() {
        assert!(*m == stamped(EX_LEN, 1, seq), "message {seq} differs");
    }
    assert_eq!(fm.counters().messages_received, EX_MSGS as u64);
    finish(&mut fm);
}

#[test]
fn extract_honors_its_budget() {
    if is_rank() {
        return budget_body();
    }
    // 256 packet buffers per route: all 200 messages fit before rank 0 takes any.
    launch("extract_honors_its_budget", 2, &[], Some(256));
}

// ---- 4. a flooding sender against a slow receiver -------------------------------------

const H_FLOOD: u32 = 6;
const H_BIG: u32 = 7;
const FLOOD_MSGS: usize = 3000;
const FLOOD_LEN: usize = 500;
const BIG_LEN: usize = 100_000;

fn flood_body() {
    let mut fm = open();
    let cfg = fm.bip().config().clone();
    assert_eq!(cfg.short_limit, 65536, "BIP_SHORT_LIMIT not taken");
    // As BipConfig::grant_per_sender computes it.
    let grant = (cfg.short_limit / fm.nranks()).max(cfg.eager_max + ENVELOPE_COST);
    if fm.rank() == 1 {
        let big: Shared<Option<Vec<u8>>> = shared(None);
        let b = big.clone();
        fm.set_handler(H_BIG, move |s: &mut Stream<'_>| {
            *b.borrow_mut() = Some(read_pieces(s, &[BIG_LEN]))
        })
        .unwrap();
        for seq in 0..FLOOD_MSGS {
            send_all(&mut fm, 0, H_FLOOD, &stamped(FLOOD_LEN, 1, seq));
        }
        extract_until(&mut fm, "rank 0's message", || big.borrow().is_some());
        assert!(
            *big.borrow().as_ref().unwrap() == pattern(BIG_LEN, 77),
            "rank 0's message differs"
        );
        let b = fm.bip().counters();
        assert!(
            b.credit_waits > 0,
            "the flood never waited for credit: {b:?}"
        );
        println!("rank 1: {b:?}");
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<Vec<u8>>> = shared(Vec::new());
    let g = got.clone();
    fm.set_handler(H_FLOOD, move |s: &mut Stream<'_>| {
        // Read first: a handler waiting for pieces is suspended, and must not hold the borrow meanwhile.
        let m = read_pieces(s, &[100, 400]);
        g.borrow_mut().push(m)
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // A blocking send polls the routes while it waits: BIP buffers what the flood left there.
    send_pieces(&mut fm, 1, H_BIG, &pattern(BIG_LEN, 77), &[BIG_LEN]);
    extract_until(&mut fm, "the flood", || got.borrow().len() == FLOOD_MSGS);
    for (seq, m) in got.borrow().iter().enumerate() {
        assert!(
            *m == stamped(FLOOD_LEN, 1, seq),
            "message {seq} differs (lost, reordered or corrupt)"
        );
    }
    assert_eq!(fm.counters().messages_received, FLOOD_MSGS as u64);
    let b = fm.bip().counters();
    println!("rank 0: grant {grant}, {b:?}");
    assert!(
        b.buffered_peak as usize <= grant,
        "buffered {} bytes, beyond the credit of {grant}",
        b.buffered_peak
    );
    assert!(
        b.buffered_peak > 0,
        "nothing was ever buffered; the bound was not exercised: {b:?}"
    );
    finish(&mut fm);
}

#[test]
fn flood_against_slow_receiver_stays_within_credit() {
    if is_rank() {
        return flood_body();
    }
    launch(
        "flood_against_slow_receiver_stays_within_credit",
        2,
        &[("BIP_SHORT_LIMIT", "65536")],
        None,
    );
}

// ---- 5. FM 1.x ----------------------------------------------------------------------------

const H1_DATA: u32 = 1;
const H1_WORDS: u32 = 2;
const FM1_SIZES: &[usize] = &[
    0,
    1,
    2,
    16,
    100,
    4000,
    4032,
    4033,
    8192,
    20_000,
    32_767,
    32_768,
    40_000,
    100_003,
    1 << 20,
    2 << 20,
];

fn fm1_words(i: usize) -> [u32; 4] {
    [i as u32, FM1_SIZES[i] as u32, 0xdead_beef, !(i as u32)]
}

fn fm1_body() {
    let mut fm = open();
    if fm.rank() == 1 {
        for (i, &len) in FM1_SIZES.iter().enumerate() {
            fm.send1(0, H1_DATA, &pattern(len, i as u64)).unwrap();
            fm.send4(0, H1_WORDS, fm1_words(i)).unwrap();
        }
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<(usize, Vec<u8>)>> = shared(Vec::new());
    let words: Shared<Vec<(usize, [u32; 4])>> = shared(Vec::new());
    {
        let got = got.clone();
        fm.set_handler1(H1_DATA, move |src, data: &[u8]| {
            got.borrow_mut().push((src, data.to_vec()))
        })
        .unwrap();
        let words = words.clone();
        fm.set_handler1(H1_WORDS, move |src, data: &[u8]| {
            assert_eq!(data.len(), 16, "send4 delivers 16 bytes");
            let w = |k: usize| u32::from_le_bytes(data[4 * k..4 * k + 4].try_into().unwrap());
            words.borrow_mut().push((src, [w(0), w(1), w(2), w(3)]));
        })
        .unwrap();
    }
    // FM 1.x and FM 2.x handler ids are separate spaces.
    fm.set_handler(H1_DATA, |_: &mut Stream<'_>| {
        panic!("an FM 2.x handler ran for an FM 1.x message")
    })
    .unwrap();
    let n = FM1_SIZES.len();
    extract_until(&mut fm, "the FM 1.x messages", || {
        got.borrow().len() == n && words.borrow().len() == n
    });
    for (i, (src, data)) in got.borrow().iter().enumerate() {
        assert_eq!(*src, 1);
        assert_eq!(data.len(), FM1_SIZES[i], "message {i}");
        assert!(
            *data == pattern(FM1_SIZES[i], i as u64),
            "message {i} ({} B) differs",
            FM1_SIZES[i]
        );
    }
    for (i, (src, w)) in words.borrow().iter().enumerate() {
        assert_eq!((*src, *w), (1, fm1_words(i)), "send4 number {i}");
    }
    let c = fm.counters();
    assert_eq!(c.messages_received, 2 * n as u64, "{c:?}");
    let bulk = FM1_SIZES
        .iter()
        .filter(|&&l| l >= fm_streams::DEFAULT_BULK_MIN)
        .count() as u64;
    assert_eq!(
        c.bulk_direct, bulk,
        "one single-copy segment per message of 32 KiB or more: {c:?}"
    );
    finish(&mut fm);
}

#[test]
fn fm1_whole_messages_0_to_2mib() {
    if is_rank() {
        return fm1_body();
    }
    launch("fm1_whole_messages_0_to_2mib", 2, &[], None);
}

#[test]
fn fm1_whole_messages_packet_fallback() {
    if is_rank() {
        return fm1_body();
    }
    launch(
        "fm1_whole_messages_packet_fallback",
        2,
        &[("MPI_NIC_DMA", "off")],
        None,
    );
}

// ---- 6. two processes flooding each other ---------------------------------------------

const H_MUT: u32 = 8;
const MUT_MSGS: usize = 505;

/// 500 messages of 3000 B and 5 of 100 KB (numbers 50, 151, 252, 353, 454).
fn mutual_len(seq: usize) -> usize {
    if seq % 101 == 50 {
        100_000
    } else {
        3000
    }
}

fn mutual_body() {
    let mut fm = open();
    let me = fm.rank();
    let peer = 1 - me;
    let got: Shared<Vec<(usize, Vec<u8>)>> = shared(Vec::new());
    let g = got.clone();
    fm.set_handler(H_MUT, move |s: &mut Stream<'_>| {
        let data = read_pieces(s, &[1000, 64 * 1024]);
        let from = s.sender();
        g.borrow_mut().push((from, data));
    })
    .unwrap();
    for seq in 0..MUT_MSGS {
        send_pieces(
            &mut fm,
            peer,
            H_MUT,
            &stamped(mutual_len(seq), me, seq),
            &[100_000],
        );
    }
    let during = got.borrow().len();
    extract_until(&mut fm, "the peer's messages", || {
        got.borrow().len() == MUT_MSGS
    });
    for (seq, (from, data)) in got.borrow().iter().enumerate() {
        assert_eq!(*from, peer);
        assert!(
            *data == stamped(mutual_len(seq), peer, seq),
            "message {seq} differs"
        );
    }
    let c = fm.counters();
    assert_eq!(
        (c.messages_sent, c.messages_received),
        (MUT_MSGS as u64, MUT_MSGS as u64 + finished()),
        "{c:?}"
    );
    println!(
        "rank {me}: {during} of the peer's messages handled while sending; {c:?}; {:?}",
        fm.bip().counters()
    );
    finish(&mut fm);
}

#[test]
fn mutual_flood_does_not_deadlock() {
    if is_rank() {
        return mutual_body();
    }
    launch("mutual_flood_does_not_deadlock", 2, &[], None);
}

#[test]
fn mutual_flood_small_credit_packet_fallback() {
    if is_rank() {
        return mutual_body();
    }
    launch(
        "mutual_flood_small_credit_packet_fallback",
        2,
        &[("BIP_SHORT_LIMIT", "65536"), ("MPI_NIC_DMA", "off")],
        None,
    );
}

// ---- 7. error cases ---------------------------------------------------------------------

const H_OK: u32 = 10;
const H_MISSING: u32 = 11;

fn errors_body() {
    let mut fm = open();
    if fm.rank() == 1 {
        let first = pattern(100, 1);
        // A piece beyond the declared size is refused, and the stream stays usable.
        let mut s = fm.begin_message(0, 100, H_OK).unwrap();
        fm.send_piece(&mut s, &first[..60]).unwrap();
        match fm.send_piece(&mut s, &[0u8; 50]) {
            Err(FmError::SizeMismatch {
                dest: 0,
                declared: 100,
                sent: 110,
            }) => {}
            other => panic!("send_piece beyond the size: {other:?}"),
        }
        // A second message to the same destination while one is open.
        match fm.begin_message(0, 10, H_OK) {
            Err(FmError::StreamOpen { dest: 0 }) => {}
            other => panic!("second begin_message: {:?}", other.map(|_| ())),
        }
        fm.send_piece(&mut s, &first[60..]).unwrap();
        fm.end_message(s).unwrap();
        // end_message short of the declared size (nothing of it has left yet): refused, and
        // the message completed with zeros.
        let mut s = fm.begin_message(0, 50, H_OK).unwrap();
        fm.send_piece(&mut s, &[9u8; 20]).unwrap();
        match fm.end_message(s) {
            Err(FmError::SizeMismatch {
                dest: 0,
                declared: 50,
                sent: 20,
            }) => {}
            other => panic!("short end_message: {other:?}"),
        }
        // Bad handler ids and ranks are refused without opening anything.
        assert!(matches!(
            fm.begin_message(0, 1, 1 << 24),
            Err(FmError::BadHandlerId(_))
        ));
        assert!(matches!(
            fm.set_handler(1 << 24, |_: &mut Stream<'_>| {}),
            Err(FmError::BadHandlerId(_))
        ));
        assert!(matches!(fm.begin_message(7, 1, H_OK), Err(FmError::Bip(_))));
        send_all(&mut fm, 0, H_OK, &pattern(30, 2));
        // Messages for handlers rank 0 never registered (FM 2.x, then FM 1.x), then a good one.
        send_all(&mut fm, 0, H_MISSING, &pattern(40, 3));
        fm.send1(0, H_MISSING, &pattern(40, 4)).unwrap();
        send_all(&mut fm, 0, H_OK, &pattern(50, 5));
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<Vec<u8>>> = shared(Vec::new());
    let g = got.clone();
    fm.set_handler(H_OK, move |s: &mut Stream<'_>| {
        // Read first: a handler waiting for pieces is suspended, and must not hold the borrow meanwhile.
        let m = read_pieces(s, &[16]);
        g.borrow_mut().push(m)
    })
    .unwrap();
    let mut errors = Vec::new();
    let t = Instant::now();
    while got.borrow().len() < 4 {
        match fm.extract(usize::MAX) {
            Ok(_) => {}
            Err(e) => errors.push((got.borrow().len(), e)),
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out; errors so far: {errors:?}"
        );
    }
    assert_eq!(errors.len(), 2, "{errors:?}");
    for (seen, e) in &errors {
        assert_eq!(*seen, 3, "the error came out of order: {e:?}");
        assert!(
            matches!(
                e,
                FmError::UnknownHandler {
                    src: 1,
                    id: H_MISSING
                }
            ),
            "{e:?}"
        );
    }
    let got = got.borrow();
    assert!(
        got[0] == pattern(100, 1),
        "the message with the refused piece differs"
    );
    let mut padded = vec![9u8; 20];
    padded.resize(50, 0);
    assert!(
        got[1] == padded,
        "the short message was not completed with zeros"
    );
    assert!(got[2] == pattern(30, 2));
    assert!(
        got[3] == pattern(50, 5),
        "the message after the unknown handlers differs"
    );
    assert_eq!(fm.counters().messages_received, 4);
    finish(&mut fm);
}

#[test]
fn error_cases() {
    if is_rank() {
        return errors_body();
    }
    launch("error_cases", 2, &[], None);
}

/// A message ended short after its first packet had left: the sender gets SizeMismatch, the
/// receiver gets the message completed with zeros, and the pair still works (the receiver's
/// next message from that sender arrives).
fn short_end_after_flush_body() {
    let mut fm = open();
    if fm.rank() == 1 {
        let big = pattern(10_000, 6);
        let mut s = fm.begin_message(0, 10_000, H_OK).unwrap();
        fm.send_piece(&mut s, &big[..6000]).unwrap(); // more than a packet: the first one leaves
        match fm.end_message(s) {
            Err(FmError::SizeMismatch {
                dest: 0,
                declared: 10_000,
                sent: 6000,
            }) => {}
            other => panic!("short end_message: {other:?}"),
        }
        send_all(&mut fm, 0, H_OK, &pattern(64, 7));
        finish(&mut fm);
        return;
    }
    let got: Shared<Vec<Vec<u8>>> = shared(Vec::new());
    let g = got.clone();
    fm.set_handler(H_OK, move |s: &mut Stream<'_>| {
        // Read first: a handler waiting for pieces is suspended, and must not hold the borrow meanwhile.
        let m = read_pieces(s, &[1000]);
        g.borrow_mut().push(m)
    })
    .unwrap();
    let t = Instant::now();
    while !got.borrow().iter().any(|m| m.len() == 64) {
        if let Err(e) = fm.extract(usize::MAX) {
            panic!("the message after a short end_message was refused: {e}");
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the message after a short end_message never arrived"
        );
    }
    assert!(*got.borrow().last().unwrap() == pattern(64, 7));
    let padded = got
        .borrow()
        .iter()
        .find(|m| m.len() == 10_000)
        .cloned()
        .expect("the short message was completed");
    assert!(
        padded[..6000] == pattern(10_000, 6)[..6000] && padded[6000..].iter().all(|&b| b == 0),
        "completed with zeros"
    );
    finish(&mut fm);
}

#[test]
fn short_end_message_after_flush_keeps_the_pair_usable() {
    if is_rank() {
        return short_end_after_flush_body();
    }
    launch(
        "short_end_message_after_flush_keeps_the_pair_usable",
        2,
        &[],
        None,
    );
}
