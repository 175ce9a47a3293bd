//! Checks that `tshark` reads the pcap files of `PcapWriter`, and that the Lua dissector given
//! in the `phy::pcap` module documentation decodes their pseudo-header. Skipped (with a note)
//! when `tshark` is not installed.

use nic_model::phy::PcapWriter;
use nic_model::{poll_bytes, send_bytes, Capabilities, Counters, Device, PeerStatus, Rank};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Rank 0 of two; whatever it sends comes back as if sent by rank 1.
#[derive(Default)]
struct Echo {
    queue: VecDeque<Vec<u8>>,
    counters: Counters,
}

impl Device for Echo {
    fn rank(&self) -> Rank {
        0
    }
    fn nranks(&self) -> usize {
        2
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mtu: 4096,
            reliable: true,
        }
    }
    fn send(&mut self, _dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let mut buf = vec![0; len];
        fill(&mut buf);
        self.queue.push_back(buf);
        true
    }
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        match self.queue.pop_front() {
            Some(p) => {
                take(1, &p);
                true
            }
            None => false,
        }
    }
    fn peer_status(&self, _: Rank) -> PeerStatus {
        PeerStatus::Alive
    }
    fn counters(&self) -> &Counters {
        &self.counters
    }
    fn finalize(&mut self) {}
}

const LENGTHS: [usize; 5] = [0, 1, 5, 100, 4096];

/// `tshark -v`, or `None` when tshark cannot be run.
fn tshark_version() -> Option<String> {
    let out = Command::new("tshark")
        .arg("-v")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs tshark with `args`, returning its standard output.
fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Sends packets of `LENGTHS` to rank 1 and receives their echoes, tracing to `path`.
fn write_trace(path: &Path) {
    let mut dev = PcapWriter::new(Echo::default(), path).unwrap();
    for len in LENGTHS {
        assert!(send_bytes(&mut dev, 1, &vec![len as u8; len]));
        let (from, got) = poll_bytes(&mut dev).unwrap();
        assert_eq!(from, 1);
        assert_eq!(got.len(), len);
    }
    dev.finalize();
}

/// The Lua dissector from the `phy::pcap` module documentation.
fn documented_dissector() -> String {
    let src = include_str!("../src/phy/pcap.rs");
    let block = src
        .split("//! ```text\n")
        .nth(1)
        .unwrap()
        .split("//! ```\n")
        .next()
        .unwrap();
    block
        .lines()
        .map(|l| l.strip_prefix("//! ").unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn tshark_reads_the_trace() {
    let Some(version) = tshark_version() else {
        eprintln!("note: tshark not found on PATH; skipping the pcap/tshark check");
        return;
    };
    let tmp = |ext: &str| {
        Temp(std::env::temp_dir().join(format!("nic-model-tshark-{}.{ext}", std::process::id())))
    };
    let (pcap, lua) = (tmp("pcap"), tmp("lua"));
    write_trace(&pcap.0);
    let file = pcap.0.to_str().unwrap();

    // Each packet appears twice (sent, then received), with the 16-byte pseudo-header.
    let lens: Vec<usize> = tshark(&["-r", file, "-T", "fields", "-e", "frame.len"])
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let expect: Vec<usize> = LENGTHS.iter().flat_map(|&l| [l + 16, l + 16]).collect();
    assert_eq!(lens, expect);

    // The documented dissector decodes direction, ranks, length and counter.
    if !version.contains("with Lua") {
        eprintln!("note: this tshark has no Lua; skipping the dissector check");
        return;
    }
    std::fs::write(&lua.0, documented_dissector()).unwrap();
    let script = format!("lua_script:{}", lua.0.display());
    let fields = [
        "nicpcap.dir",
        "nicpcap.src",
        "nicpcap.dst",
        "nicpcap.len",
        "nicpcap.seq",
    ];
    let mut args = vec![
        "-X",
        &script,
        "-r",
        file,
        "-T",
        "fields",
        "-E",
        "separator=,",
    ];
    fields.iter().for_each(|f| args.extend(["-e", f]));
    let rows: Vec<String> = tshark(&args).lines().map(str::to_owned).collect();
    let expect: Vec<String> = LENGTHS
        .iter()
        .enumerate()
        .flat_map(|(i, l)| [format!("0,0,1,{l},{i}"), format!("1,1,0,{l},{i}")])
        .collect();
    assert_eq!(rows, expect);
}
