//! The `vmmc` layer of `layers`: VMMC's deliberate update (nic_model::vmmc) measured by the
//! method of [`crate::measure`], so that it sits beside the raw NIC's figures as a share of
//! them, the way the VMMC paper put its bandwidth beside the hardware's limit (98%).
//!
//! VMMC has no receive operation, so it does not fit [`crate::transport::Transport`]: a
//! message is an update of the peer's exported region, and the peer learns of it from a
//! notification, with the bytes already in place. Both ranks export a region for each size
//! (as many slots of that size as the streaming window, as the NIC layer's receiver has
//! buffers) and import the other's by name.
//!
//! * Latency: an update with a notification, the peer answering the same way once it sees
//!   the notification; the figure is the median of round trip / 2 (at least 1000 round trips
//!   up to 64 KiB, as for every layer).
//! * Bandwidth: rank 0 streams updates into consecutive slots of rank 1's region, only the
//!   last one notifying; rank 1 answers that notification with an empty notifying update of
//!   rank 0's control region, which closes the timed repetition. Both ways: both stream at
//!   once, each waits for the other's last update, then rank 1 answers.
//! * Agreement between the ranks (iteration counts, phase changes) goes through the control
//!   regions too: nothing here but VMMC.

use crate::measure::{median, window_for, Point};
use nic_model::vmmc::{Import, Name, Vmmc};
use nic_model::{Access, Device, DeviceStack};
use std::time::{Duration, Instant};

/// The control region: the value of the last agreement.
const CONTROL: Name = Name::new(u64::from_le_bytes(*b"ctl\0\0\0\0\0"));
/// Data regions are named `DATA_BASE + phase`.
const DATA_BASE: u64 = 0x5644_0000_0000_0000;
/// How long a rank waits for its peer's notification before it gives up.
const PATIENCE: Duration = Duration::from_secs(120);

/// One rank's side of the VMMC measurement.
pub struct VmmcBench {
    v: Vmmc<DeviceStack>,
    me: usize,
    peer: usize,
    /// This rank's control region (exported writable) and the peer's, imported.
    control: Box<[u8; 64]>,
    peer_control: Import,
    /// This rank's data region of the current phase, and the peer's.
    data: Vec<u8>,
    peer_data: Option<Import>,
    phase: u64,
}

impl VmmcBench {
    /// Exports this rank's control region and imports the peer's (a two-rank job).
    pub fn new(dev: DeviceStack) -> VmmcBench {
        let mut v = Vmmc::new(dev);
        let me = v.rank();
        assert_eq!(
            v.nranks(),
            2,
            "the vmmc layer is measured between two ranks"
        );
        let peer = 1 - me;
        let mut control = Box::new([0u8; 64]);
        // SAFETY: the box lives in `self` until `finish` withdraws the export.
        unsafe { v.export(CONTROL, control.as_mut_ptr(), 64, Access::WRITE) }
            .expect("exporting the control region");
        let peer_control = v
            .import_when_exported(peer, CONTROL, PATIENCE)
            .expect("importing the peer's control region");
        VmmcBench {
            v,
            me,
            peer,
            control,
            peer_control,
            data: Vec::new(),
            peer_data: None,
            phase: 0,
        }
    }

    pub fn rank(&self) -> usize {
        self.me
    }

    /// Waits for the peer's next notification, which must be about `name`.
    fn wait_for(&mut self, name: Name) {
        let n = self
            .v
            .wait_notification(PATIENCE)
            .unwrap_or_else(|| panic!("no notification from rank {}", self.peer));
        assert_eq!(
            (n.from, n.name),
            (self.peer, name),
            "unexpected notification {n:?}"
        );
    }

    /// Rank 0's `value`, on both ranks: a notifying update of the peer's control region,
    /// answered the same way (so that neither writes it twice before the other read it).
    fn agree(&mut self, value: u64) -> u64 {
        let imp = self.peer_control;
        if self.me == 0 {
            self.v
                .update(&imp, 0, &value.to_le_bytes(), true)
                .expect("control update");
            self.wait_for(CONTROL);
            value
        } else {
            self.wait_for(CONTROL);
            // SAFETY: the control box is live; the peer wrote these bytes from its process
            // before the notification just seen (a volatile read: not a value cached earlier).
            let got = u64::from_le_bytes(unsafe {
                std::ptr::read_volatile(self.control.as_ptr() as *const [u8; 8])
            });
            self.v
                .update(&imp, 0, &got.to_le_bytes(), true)
                .expect("control update");
            got
        }
    }

    /// Exports a fresh data region of `len` bytes, imports the peer's, withdrawing the last.
    fn new_phase(&mut self, len: usize) {
        self.agree(0);
        if self.peer_data.take().is_some() {
            let old = Name::new(DATA_BASE + self.phase);
            self.v.withdraw(old).expect("withdrawing a data region");
        }
        self.phase += 1;
        let name = Name::new(DATA_BASE + self.phase);
        self.data = vec![0u8; len.max(1)];
        // SAFETY: `data` is replaced only after the export is withdrawn (above, next phase),
        // and dropped after `finish` withdraws it.
        unsafe {
            self.v.export(
                name,
                self.data.as_mut_ptr(),
                self.data.len(),
                Access::READ_WRITE,
            )
        }
        .expect("exporting a data region");
        self.agree(0);
        self.peer_data = Some(
            self.v
                .import_when_exported(self.peer, name, PATIENCE)
                .expect("importing the peer's data region"),
        );
    }

    fn data_name(&self) -> Name {
        Name::new(DATA_BASE + self.phase)
    }

    /// One round trip of `out`: an update with a notification, answered the same way.
    fn round_trip(&mut self, out: &[u8]) {
        let imp = self.peer_data.expect("a data phase");
        let name = self.data_name();
        if self.me == 0 {
            self.v.update(&imp, 0, out, true).expect("update");
            self.wait_for(name);
        } else {
            self.wait_for(name);
            self.v.update(&imp, 0, out, true).expect("update");
        }
    }

    /// Streams `count` updates of `out` into the peer's slots (`both`: each way at once), the
    /// last one notifying; rank 1 answers with an empty update of the control region. Returns
    /// the time rank 0 saw.
    fn one_rep(&mut self, out: &[u8], count: usize, slots: usize, both: bool) -> Duration {
        let imp = self.peer_data.expect("a data phase");
        let (name, control) = (self.data_name(), self.peer_control);
        let size = out.len();
        let t0 = Instant::now();
        if self.me == 0 || both {
            for i in 0..count {
                self.v
                    .update(&imp, (i % slots) * size, out, i + 1 == count)
                    .expect("streamed update");
            }
        }
        if self.me == 1 || both {
            self.wait_for(name);
        }
        if self.me == 0 {
            self.wait_for(CONTROL);
        } else {
            self.v.update(&control, 0, &[], true).expect("answer");
        }
        t0.elapsed()
    }

    /// Bytes per second (10^6) of streaming `size`-byte updates; `both`: each way at once.
    fn stream(&mut self, out: &[u8], both: bool) -> f64 {
        let size = out.len();
        let window = window_for(size);
        let slots = self.data.len() / size;
        let probe = self.one_rep(out, window, slots, both);
        let count = ((Duration::from_millis(30).as_nanos() * window as u128
            / probe.as_nanos().max(1)) as usize)
            .clamp(window, 1 << 20);
        let count = self.agree(count as u64) as usize;
        let reps = self.agree(if probe > Duration::from_millis(200) {
            3
        } else {
            7
        }) as usize;
        let directions = if both { 2 } else { 1 };
        let mut rates: Vec<f64> = (0..reps)
            .map(|_| {
                let d = self.one_rep(out, count, slots, both);
                (directions * count * size) as f64 / d.as_secs_f64() / 1e6
            })
            .collect();
        median(&mut rates)
    }

    /// Latency and bandwidth at each size, as [`crate::measure::sweep`] measures the other
    /// layers. Rank 0 returns the points; rank 1 an empty list.
    pub fn sweep(&mut self, sizes: &[usize], min_iters: usize) -> Vec<Point> {
        let max = sizes.iter().copied().max().unwrap_or(0);
        let sendbuf: Vec<u8> = (0..max).map(|i| (i * 7 + 3) as u8).collect();
        // Warm up the path for about 100 ms.
        self.new_phase(64);
        let t0 = Instant::now();
        while self.agree((t0.elapsed() < Duration::from_millis(100)) as u64) == 1 {
            self.round_trip(&sendbuf[..8.min(max)]);
        }
        let mut points = Vec::new();
        for &size in sizes {
            self.new_phase(size * window_for(size));
            let out = &sendbuf[..size];
            let warm = Instant::now();
            for _ in 0..5 {
                self.round_trip(out);
            }
            let per = warm.elapsed() / 5;
            let iters = if size <= 65536 {
                min_iters
            } else {
                ((Duration::from_millis(500).as_nanos() / per.as_nanos().max(1)) as usize)
                    .clamp(20, min_iters)
            };
            let iters = self.agree(iters as u64) as usize;
            let mut samples = Vec::with_capacity(iters);
            for _ in 0..iters {
                let t = Instant::now();
                self.round_trip(out);
                samples.push(t.elapsed().as_nanos() as f64 / 2.0 / 1000.0);
            }
            // The peer's last update is in place: the bytes are the ones sent.
            assert!(self.data[..size] == *out, "data corrupted at {size} bytes");
            let latency_us = median(&mut samples);
            let (bandwidth_mb_s, bidir_bandwidth_mb_s) = if size == 0 {
                (0.0, 0.0)
            } else {
                let one = self.stream(out, false);
                let both = self.stream(out, true);
                (one, both)
            };
            // Both ranks streamed into each other's first slot last.
            assert!(
                self.data[..size] == *out,
                "data corrupted at {size} bytes (streaming)"
            );
            if self.me == 0 {
                points.push(Point {
                    size,
                    latency_us,
                    bandwidth_mb_s,
                    bidir_bandwidth_mb_s,
                });
            }
        }
        points
    }

    /// Counts of `round_trips` round trips of `size` bytes between two reads of the device's
    /// counters: `{"nic": {...}, "layer": {"copies": 0, "bytes_copied": 0}}` (VMMC itself
    /// copies nothing: the NIC's single copies are the data's only ones).
    pub fn count_round_trips(&mut self, size: usize, round_trips: usize) -> serde_json::Value {
        self.new_phase(size.max(1));
        let out: Vec<u8> = (0..size).map(|i| (i * 13 + 1) as u8).collect();
        for _ in 0..2 {
            self.round_trip(&out);
        }
        self.agree(0);
        let before = self.counters();
        for _ in 0..round_trips {
            self.round_trip(&out);
        }
        let after = self.counters();
        assert!(
            self.data[..size] == out[..],
            "data corrupted at {size} bytes"
        );
        self.agree(0);
        crate::counters::difference(&after, &before)
    }

    fn counters(&mut self) -> serde_json::Value {
        serde_json::json!({
            "nic": serde_json::to_value(self.v.device().counters()).unwrap(),
            "layer": { "copies": 0, "bytes_copied": 0 },
        })
    }

    /// Withdraws both regions (once the peer is done with them) and finalizes the device.
    pub fn finish(mut self) {
        self.agree(0);
        let mut dev = self.v.finish();
        dev.finalize();
        drop(self.control);
        drop(self.data);
    }
}
