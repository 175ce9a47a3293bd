//! What the tests share: reports of the ranks and their times, checks of how a job ended,
//! of what it left behind and of its rank processes, and small helpers (temporary
//! directories, namespace hosts, a fake peer's handshake, a rank under the fake process
//! manager).

use super::job::Job;
use super::{common, fake_pmi, fault_program, mono_now, procs, EXIT_GRACE, JOB_GUARD};
use mpi_staging::netns::Hosts;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A directory of the test's own, removed when dropped.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(tag);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        TempDir(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether MPICH's Hydra is installed; prints that the test is skipped if not.
pub(crate) fn hydra_or_skip() -> bool {
    let found = common::installed("mpiexec.hydra").is_some();
    if !found {
        println!("skipped: MPICH's mpiexec.hydra is not installed (Debian: apt-get install mpich)");
    }
    found
}

/// Hosts made of network namespaces (and Hydra to run jobs on them), or `None` (with the
/// reason printed) where they cannot be made.
pub(crate) fn hosts_or_skip(n: usize) -> Option<Hosts> {
    if !hydra_or_skip() {
        return None;
    }
    match Hosts::create(n) {
        Ok(hosts) => Some(hosts),
        Err(why) => {
            println!("skipped: {why}");
            None
        }
    }
}

/// A survivor's report, as `peer_death` writes it: `rank R: CALL failed at T after S s: MESSAGE`.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    pub(crate) call: String,
    /// `CLOCK_MONOTONIC` seconds when the call failed.
    pub(crate) at: f64,
    pub(crate) message: String,
}

pub(crate) fn parse_report(line: &str) -> Option<(usize, Report)> {
    let (rank, rest) = line.strip_prefix("rank ")?.split_once(": ")?;
    let (call, rest) = rest.split_once(" failed at ")?;
    let (at, rest) = rest.split_once(" after ")?;
    let (_, message) = rest.split_once(": ")?;
    Some((
        rank.parse().ok()?,
        Report {
            call: call.to_owned(),
            at: at.parse().ok()?,
            message: message.to_owned(),
        },
    ))
}

/// The reports in `dir` (files `report.rank<R>`), the first of each rank.
pub(crate) fn read_reports(dir: &Path) -> BTreeMap<usize, Report> {
    let mut reports = BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        for (rank, report) in text.lines().filter_map(parse_report) {
            reports.entry(rank).or_insert(report);
        }
    }
    reports
}

/// The reports of `ranks`, waiting until every one has reported or `fault + limit` (plus a
/// second, so that a late report is measured rather than missed) has passed.
pub(crate) fn wait_reports(
    dir: &Path,
    ranks: &[usize],
    fault: f64,
    limit: Duration,
) -> BTreeMap<usize, Report> {
    let give_up = fault + limit.as_secs_f64() + 1.0;
    loop {
        let reports = read_reports(dir);
        if ranks.iter().all(|r| reports.contains_key(r)) || mono_now() > give_up {
            return reports;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that each of `ranks` reported its failed call within `limit` of `fault`; prints
/// the measured times.
pub(crate) fn assert_reported_within(
    reports: &BTreeMap<usize, Report>,
    ranks: &[usize],
    fault: f64,
    limit: Duration,
    job: &Job,
) {
    for r in ranks {
        let report = reports.get(r).unwrap_or_else(|| {
            panic!(
                "rank {r} did not report the fault within {limit:?} (reports: {reports:?}):{}",
                job.describe()
            )
        });
        let delay = report.at - fault;
        println!(
            "rank {r}: {} failed {delay:.2} s after the fault: {}",
            report.call, report.message
        );
        assert!(
            delay <= limit.as_secs_f64(),
            "rank {r} reported the fault after {delay:.2} s (limit {limit:?}):{}",
            job.describe()
        );
    }
}

/// Waits for the launcher to end; asserts that it ended within `limit` of `fault` with a
/// failure status (not killed by our guard); prints the time.
pub(crate) fn assert_job_failed_within(job: &mut Job, fault: f64, limit: Duration) {
    let status = job.wait_end(JOB_GUARD);
    let Some(status) = status else {
        panic!(
            "the launcher did not end within {JOB_GUARD:?} of its start (limit {limit:?} after \
             the fault):{}",
            job.describe()
        );
    };
    let delay = job.ended_mono().expect("ended") - fault;
    println!("the job (launcher) ended {delay:.2} s after the fault, {status}");
    assert!(
        delay <= limit.as_secs_f64(),
        "the launcher ended {delay:.2} s after the fault (limit {limit:?}):{}",
        job.describe()
    );
    assert!(
        !status.success(),
        "the launcher reports success for a broken job:{}",
        job.describe()
    );
    assert!(
        !job.output().lines().any(|l| l.starts_with("OK ")),
        "the program claims success:{}",
        job.describe()
    );
}

/// Asserts that job `job` left nothing: no process, no file in `/dev/shm`, no leader socket in
/// this namespace (per `before`) or in any of `namespaces`.
pub(crate) fn assert_nothing_left(job: &Job, before: &procs::Snapshot, namespaces: &[&str]) {
    let left = procs::left_after(job.tag(), EXIT_GRACE);
    assert!(
        left.is_empty(),
        "processes of the job still run {EXIT_GRACE:?} after it ended: {left:#?}{}",
        job.describe()
    );
    // What is left, looked at again for a short while: a socket another test's job is tearing
    // down at this moment (inode 0, or its owner exiting) is listed with no owner to find,
    // and goes away; what this job left stays.
    let leftovers = || {
        let mut things = before.left_by(job.tag());
        for ns in namespaces {
            things.extend(
                procs::leader_sockets_in(ns)
                    .into_iter()
                    .map(|s| format!("abstract socket {s} in {ns}")),
            );
        }
        things
    };
    let mut things = leftovers();
    for _ in 0..10 {
        if things.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        things = leftovers();
    }
    assert!(
        things.is_empty(),
        "the job left {things:?} behind:{}",
        job.describe()
    );
}

/// The pids of `peer_death`'s ranks, from their "rank R pid P ready" lines, once all `ranks`
/// have printed one.
pub(crate) fn wait_ready(job: &Job, ranks: usize) -> BTreeMap<usize, i32> {
    let end = Instant::now() + JOB_GUARD;
    loop {
        let ready: BTreeMap<usize, i32> = job
            .lines()
            .iter()
            .filter_map(|l| {
                let rest = l.text.strip_prefix("rank ")?.strip_suffix(" ready")?;
                let (rank, pid) = rest.split_once(" pid ")?;
                Some((rank.parse().ok()?, pid.parse().ok()?))
            })
            .collect();
        if ready.len() == ranks {
            return ready;
        }
        assert!(
            Instant::now() < end,
            "not every rank got ready ({ready:?}):{}",
            job.describe()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The monotonic time in the victim's "rank V dying at T" line.
pub(crate) fn wait_dying(job: &Job, victim: usize) -> f64 {
    let prefix = format!("rank {victim} dying at ");
    let line = job.wait_for(&format!("'{prefix}...' line"), JOB_GUARD, |l| {
        l.text.starts_with(&prefix)
    });
    line.text[prefix.len()..]
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a time in {:?}", line.text))
}

/// Kills process `pid` (a rank of a job of the test) with SIGKILL; the time just before.
pub(crate) fn kill_rank(pid: i32) -> f64 {
    let at = mono_now();
    // SAFETY: kill(2) on a rank of the test's own job (its pid from the rank's own line).
    let rc = unsafe { libc::kill(pid, libc::SIGKILL) };
    assert_eq!(rc, 0, "cannot kill rank process {pid}");
    at
}

/// The live rank processes of job `tag` running `program` (not the launcher, whose command
/// line names the program too).
pub(crate) fn rank_processes(job: &Job, program: &Path) -> Vec<procs::Proc> {
    let program = program.to_string_lossy();
    procs::tagged(job.tag())
        .into_iter()
        .filter(|p| p.pid != job.pid() as i32 && p.cmdline.contains(program.as_ref()))
        .collect()
}

/// Asserts that a line of `job`'s output says that one of `ranks`, on the host at `addr`, was
/// lost (`nic: lost rank R on host H (addr:port): why`), and prints it. A survivor names the
/// first broken peer it meets and ends, so not every lost rank need be named.
pub(crate) fn assert_lost_line(job: &Job, ranks: &[usize], addr: &str) {
    let at = format!("({addr}:");
    let line = job.lines().into_iter().find(|l| {
        l.text.contains(&at)
            && ranks
                .iter()
                .any(|r| l.text.contains(&format!("nic: lost rank {r} on host ")))
    });
    match line {
        Some(l) => println!("  {}", l.text),
        None => panic!(
            "no line says that rank {ranks:?} at {addr} was lost:{}",
            job.describe()
        ),
    }
}

/// Asserts that at least `n` rank processes of `job` run now (so that the checks of what is
/// left later find what they look for: the tag is in their environment).
pub(crate) fn assert_ranks_running(job: &Job, program: &Path, n: usize) {
    let running = rank_processes(job, program);
    assert!(
        running.len() >= n,
        "found {} rank processes of the job, want {n}: {running:#?}{}",
        running.len(),
        job.describe()
    );
}

/// Waits until no rank process of `job` is left; asserts it happens within `limit` of `fault`.
pub(crate) fn assert_ranks_gone_within(job: &Job, program: &Path, fault: f64, limit: Duration) {
    let give_up = fault + limit.as_secs_f64() + 5.0;
    loop {
        let left = rank_processes(job, program);
        let now = mono_now();
        if left.is_empty() {
            println!(
                "every rank process had ended {:.2} s after the fault",
                now - fault
            );
            assert!(
                now - fault <= limit.as_secs_f64() + 0.1,
                "the ranks took {:.2} s to end after the fault (limit {limit:?}):{}",
                now - fault,
                job.describe()
            );
            return;
        }
        assert!(
            now < give_up,
            "rank processes still run {:.2} s after the fault: {left:#?}{}",
            now - fault,
            job.describe()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first bytes of a connection between ranks (see nic-model's `net::handshake`): a hello
/// from rank `from` to rank `to`.
pub(crate) fn hello(from: u32, to: u32, job_key: [u8; 16], version: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"nic-net\0");
    b.extend_from_slice(&nic_model::net::WIRE_VERSION.to_le_bytes());
    b.extend_from_slice(&from.to_le_bytes());
    b.extend_from_slice(&to.to_le_bytes());
    b.extend_from_slice(&job_key);
    b.extend_from_slice(&(version.len() as u16).to_le_bytes());
    b.extend_from_slice(version.as_bytes());
    b
}

/// Reads the acceptor's verdict on a hello: `Ok(None)` accepted, `Ok(Some(reason))` refused,
/// `Err` if no verdict came within `limit`.
pub(crate) fn read_verdict(
    stream: &mut std::net::TcpStream,
    limit: Duration,
) -> Result<Option<String>, String> {
    use std::io::Read;
    stream
        .set_read_timeout(Some(limit))
        .map_err(|e| e.to_string())?;
    let mut fixed = [0u8; 11];
    stream
        .read_exact(&mut fixed)
        .map_err(|e| format!("no verdict: {e}"))?;
    if &fixed[..8] != b"nic-ack\0" {
        return Err(format!("not a verdict: {fixed:?}"));
    }
    let mut reason = vec![0u8; u16::from_le_bytes([fixed[9], fixed[10]]) as usize];
    stream
        .read_exact(&mut reason)
        .map_err(|e| format!("a truncated verdict: {e}"))?;
    let reason = String::from_utf8_lossy(&reason).into_owned();
    Ok((fixed[8] != 0).then_some(reason))
}

/// Connects to `to` as soon as something listens there (within `limit`).
pub(crate) fn connect_when_listening(
    to: std::net::SocketAddr,
    limit: Duration,
) -> std::net::TcpStream {
    let end = Instant::now() + limit;
    loop {
        match std::net::TcpStream::connect_timeout(&to, Duration::from_secs(1)) {
            Ok(s) => return s,
            Err(e) if Instant::now() >= end => panic!("nothing listens on {to}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// Runs `init_report` as rank `rank` of `size` under the fake process manager `script`;
/// returns the ended job (failing the test if it outlives [`JOB_GUARD`]) and the time of its
/// start.
pub(crate) fn run_under_fake_pmi(
    script: fake_pmi::Script,
    env: &[(&str, &str)],
    tag: &str,
) -> (Job, f64, fake_pmi::Server) {
    let exe = fault_program("init_report");
    let (rank, size) = (script.rank, script.size);
    let (server, client) = fake_pmi::Server::start(script);
    let mut command = Command::new(&exe);
    command
        .env("LD_LIBRARY_PATH", common::library_dir())
        .env("MPI_NET_ADDR", "127.0.0.1")
        .envs(env.iter().copied());
    client.pass_to(&mut command, rank, size);
    let start = mono_now();
    let job = Job::start(command, tag);
    drop(client);
    (job, start, server)
}
