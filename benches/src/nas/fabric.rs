//! Fabric memory per rank: how much shared memory our `mpirun` sets up for a job of N ranks.
//!
//! For each size the runner really starts a job (`fabric_probe.c`, built with our `mpicc`)
//! that exchanges data between every pair of ranks and then holds still. Meanwhile it reads,
//! from `/proc/PID/smaps` of every rank, the mapping of the job's memory file
//! (`/memfd:nic-fabric-...`): its size (the segment, mapped whole by every rank) and each
//! rank's proportional share of the pages in memory (Pss, which sums to what the job really
//! holds). It reads the fabric's header through `/proc/PID/map_files/` to say what the
//! segment is made of: one header page, a 256-byte control block, 512 region descriptors and
//! a VMMC block (names, notification ring) per rank, and one inbox per rank: a receive queue shared by the rank's senders and a pool
//! of fast boxes for small packets (see `nic_model::fabric::layout`).

use super::run::kill_group;
use nic_model::fabric::layout::{FabricHeader, Geometry, InboxShape, FABRIC_MAGIC, PAGE};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The probe's source, written to the work directory and built there.
const PROBE_SOURCE: &str = include_str!("fabric_probe.c");

/// What one job's fabric measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FabricMemory {
    pub ranks: usize,
    /// Size of the segment every rank maps.
    pub segment_bytes: u64,
    /// Sum over the ranks of their proportional share of its resident pages.
    pub resident_bytes: u64,
    /// From the fabric's header, when it could be read.
    pub queue_slots: Option<u64>,
    pub slot_bytes: Option<u64>,
    pub box_count: Option<u64>,
    pub box_slots: Option<u64>,
    pub box_slot_bytes: Option<u64>,
    pub inbox_offset: Option<u64>,
    pub inbox_stride: Option<u64>,
}

impl FabricMemory {
    pub fn per_rank(&self) -> u64 {
        self.segment_bytes / self.ranks as u64
    }

    /// The inbox shape the header describes, when it was read.
    fn shape(&self) -> Option<InboxShape> {
        Some(InboxShape {
            queue_slots: self.queue_slots? as usize,
            slot_bytes: self.slot_bytes? as usize,
            box_count: self.box_count? as usize,
            box_slots: self.box_slots? as usize,
            box_slot_bytes: self.box_slot_bytes? as usize,
        })
    }

    /// What the segment is made of, in words.
    pub fn composition(&self) -> String {
        match (self.shape(), self.inbox_offset, self.inbox_stride) {
            (Some(s), Some(offset), Some(stride)) => {
                let n = self.ranks as u64;
                format!(
                    "{} KiB header, rank blocks, region descriptors and VMMC blocks ({n} x 256 B + {n} x 32 KiB + {n} x 10 KiB) + {n} inboxes x {} KiB \
                     (queue {} slots x {} B + {} fast boxes x ({} slots x {} B + 64 B), page-rounded)",
                    offset / 1024,
                    stride / 1024,
                    s.queue_slots,
                    s.slot_bytes,
                    s.box_count,
                    s.box_slots,
                    s.box_slot_bytes,
                )
            }
            _ => "layout unavailable (could not read the fabric's header)".into(),
        }
    }
}

/// One mapping of the fabric in a rank: (start address, end address, Pss in bytes).
fn fabric_mapping(pid: u32) -> Result<(u64, u64, u64), String> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps"))
        .map_err(|e| format!("cannot read /proc/{pid}/smaps: {e}"))?;
    let mut lines = smaps.lines();
    while let Some(line) = lines.next() {
        if !line.contains("nic-fabric") {
            continue;
        }
        let range = line.split_whitespace().next().unwrap_or_default();
        let (start, end) = range.split_once('-').ok_or("malformed smaps line")?;
        let start = u64::from_str_radix(start, 16).map_err(|e| e.to_string())?;
        let end = u64::from_str_radix(end, 16).map_err(|e| e.to_string())?;
        let mut pss = 0;
        for detail in lines.by_ref() {
            if let Some(kb) = detail.strip_prefix("Pss:") {
                pss = kb
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0)
                    * 1024;
                break;
            }
        }
        return Ok((start, end, pss));
    }
    Err(format!(
        "rank process {pid} maps no nic-fabric segment (is it running over our library?)"
    ))
}

/// Reads the fabric's header through the rank's `map_files` entry (needs the rights to
/// inspect the process, which the owner of the job has on most systems).
fn read_header(pid: u32, start: u64, end: u64) -> Option<[u64; 7]> {
    let path = format!("/proc/{pid}/map_files/{start:x}-{end:x}");
    let mut page = vec![0u8; std::mem::size_of::<FabricHeader>()];
    std::fs::File::open(path).ok()?.read_exact(&mut page).ok()?;
    let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().unwrap()) as u64;
    let u64_at = |o: usize| u64::from_le_bytes(page[o..o + 8].try_into().unwrap());
    if u64_at(std::mem::offset_of!(FabricHeader, magic)) != FABRIC_MAGIC {
        return None;
    }
    Some([
        u32_at(std::mem::offset_of!(FabricHeader, queue_slots)),
        u32_at(std::mem::offset_of!(FabricHeader, slot_bytes)),
        u32_at(std::mem::offset_of!(FabricHeader, box_count)),
        u32_at(std::mem::offset_of!(FabricHeader, box_slots)),
        u32_at(std::mem::offset_of!(FabricHeader, box_slot_bytes)),
        u64_at(std::mem::offset_of!(FabricHeader, inbox_offset)),
        u64_at(std::mem::offset_of!(FabricHeader, inbox_stride)),
    ])
}

/// Builds the probe with our `mpicc` into `work_dir`.
pub fn build_probe(mpicc: &Path, work_dir: &Path) -> Result<std::path::PathBuf, String> {
    let source = work_dir.join("fabric_probe.c");
    if std::fs::read_to_string(&source).ok().as_deref() != Some(PROBE_SOURCE) {
        std::fs::write(&source, PROBE_SOURCE)
            .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    }
    super::build::build_c(mpicc, &source, &[], &work_dir.join("ours"), "fabric_probe")
}

/// Runs the probe on `ranks` ranks with our `mpirun` and measures its fabric.
pub fn measure(
    mpirun: &Path,
    probe: &Path,
    ranks: usize,
    limit: Duration,
) -> Result<FabricMemory, String> {
    let go = std::env::temp_dir().join(format!("nas-fabric-go-{}-{ranks}", std::process::id()));
    let _ = std::fs::remove_file(&go);
    let mut cmd = Command::new(mpirun);
    cmd.arg("-n").arg(ranks.to_string()).arg(probe).arg(&go);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", mpirun.display()))?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("stdout is piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });

    let start = Instant::now();
    let mut pids = vec![None; ranks];
    let mut ready = false;
    let outcome = (|| {
        while !ready || pids.iter().any(Option::is_none) {
            let left = limit.checked_sub(start.elapsed()).ok_or(format!(
                "the {ranks}-rank probe did not get ready in {} s",
                limit.as_secs()
            ))?;
            let line = rx.recv_timeout(left).map_err(|_| {
                format!("the {ranks}-rank probe ended or stalled before it was ready")
            })?;
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["pid", rank, pid] => {
                    let (rank, pid): (usize, u32) = (
                        rank.parse().map_err(|_| "bad rank")?,
                        pid.parse().map_err(|_| "bad pid")?,
                    );
                    if rank < ranks {
                        pids[rank] = Some(pid);
                    }
                }
                // Ranks' output is forwarded independently: "ready" may overtake a pid line.
                ["ready"] => ready = true,
                _ => return Err(format!("the probe said: {line}")),
            }
        }
        let mut segment = 0;
        let mut resident = 0;
        let mut header = None;
        for (rank, pid) in pids.iter().enumerate() {
            let pid = pid.ok_or(format!("rank {rank} never reported its pid"))?;
            let (from, to, pss) = fabric_mapping(pid)?;
            if segment != 0 && segment != to - from {
                return Err(format!(
                    "rank {rank} maps {} bytes, rank 0 {segment}",
                    to - from
                ));
            }
            segment = to - from;
            resident += pss;
            if header.is_none() {
                header = read_header(pid, from, to);
            }
        }
        Ok(FabricMemory {
            ranks,
            segment_bytes: segment,
            resident_bytes: resident,
            queue_slots: header.map(|h| h[0]),
            slot_bytes: header.map(|h| h[1]),
            box_count: header.map(|h| h[2]),
            box_slots: header.map(|h| h[3]),
            box_slot_bytes: header.map(|h| h[4]),
            inbox_offset: header.map(|h| h[5]),
            inbox_stride: header.map(|h| h[6]),
        })
    })();

    let _ = std::fs::write(&go, b"go\n");
    let end_by = Instant::now() + Duration::from_secs(30);
    let finished = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() > end_by => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let _ = std::fs::remove_file(&go);
    if !finished.is_some_and(|s| s.success()) {
        kill_group(child.id());
        let _ = child.wait();
        if outcome.is_ok() {
            return Err(format!(
                "the {ranks}-rank probe did not end cleanly ({finished:?})"
            ));
        }
    }
    let measured = outcome?;
    // The header's geometry must account for the whole segment.
    if let Some(shape) = measured.shape() {
        let geo = Geometry::new(ranks, shape)?;
        if round_to_page(geo.total_bytes as u64) != measured.segment_bytes {
            eprintln!(
                "note: the layout says {} bytes, the mapping is {} bytes",
                geo.total_bytes, measured.segment_bytes
            );
        }
    }
    Ok(measured)
}

fn round_to_page(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE as u64) * PAGE as u64
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The table `nas --fabric-memory` prints.
pub fn table(rows: &[FabricMemory]) -> String {
    let mut out = String::from(
        "fabric memory of our mpirun's job segment (shared memory, mapped whole by every rank)\n\
         ranks   segment bytes  segment MiB   per-rank bytes  per-rank MiB  resident MiB (all ranks)\n",
    );
    for r in rows {
        out += &format!(
            "{:>5} {:>15} {:>12.2} {:>16} {:>13.2} {:>25.2}\n",
            r.ranks,
            r.segment_bytes,
            mib(r.segment_bytes),
            r.per_rank(),
            mib(r.per_rank()),
            mib(r.resident_bytes)
        );
    }
    for r in rows {
        out += &format!("{:>5} ranks: {}\n", r.ranks, r.composition());
    }
    if let (Some(first), Some(last)) = (rows.first(), rows.last()) {
        if last.ranks > first.ranks {
            let rank_ratio = last.ranks as f64 / first.ranks as f64;
            let total_ratio = last.segment_bytes as f64 / first.segment_bytes as f64;
            out += &format!(
                "growth from {} to {} ranks ({rank_ratio:.0}x): segment {total_ratio:.1}x, per rank {:.1}x (linear in ranks would be {rank_ratio:.0}x in total, quadratic {:.0}x)\n",
                first.ranks,
                last.ranks,
                last.per_rank() as f64 / first.per_rank() as f64,
                rank_ratio * rank_ratio
            );
            out += "the segment holds one inbox per rank (a receive queue shared by its senders and a pool of \
                    fast boxes of at most 64 senders, neither growing with the job) plus 32 KiB of region descriptors \
                    and 10 KiB of VMMC names and notifications per rank: linear in total, flat per rank once the pool is full\n";
        }
    }
    out
}
