//! Jobs that span "hosts" without a launcher: each rank is a process of the test binary with
//! its own host id (`MPI_HOST_ID`) and loopback address (127.0.0.h), and the ranks meet
//! through a key-value space kept in a temporary directory ([`FileExchange`]), so the network
//! device and its wire-up are tested without PMI.

use crate::error::Rank;
use crate::net::{Exchange, ADDR_ENV, HOST_ID_ENV};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

const DIR_ENV: &str = "NIC_TEST_KVS";
const KVS_RANK_ENV: &str = "NIC_TEST_KVS_RANK";
const SIZE_ENV: &str = "NIC_TEST_KVS_SIZE";
/// How long a fence or a get waits for the other ranks.
const WAIT: Duration = Duration::from_secs(30);

/// A key-value space in a directory: a put is a file, a fence is a file per rank and round.
pub struct FileExchange {
    dir: PathBuf,
    rank: Rank,
    size: usize,
    round: u32,
}

impl FileExchange {
    /// The exchange of a rank started by [`run_on_hosts`]; `None` elsewhere.
    pub fn from_env() -> Option<FileExchange> {
        Some(FileExchange {
            dir: std::env::var_os(DIR_ENV)?.into(),
            rank: std::env::var(KVS_RANK_ENV).ok()?.parse().ok()?,
            size: std::env::var(SIZE_ENV).ok()?.parse().ok()?,
            round: 0,
        })
    }

    fn wait_for(&self, path: &std::path::Path) -> Result<(), String> {
        let end = Instant::now() + WAIT;
        while !path.exists() {
            if Instant::now() > end {
                return Err(format!("{} did not appear in time", path.display()));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
}

impl Exchange for FileExchange {
    fn rank(&self) -> Rank {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), String> {
        let tmp = self.dir.join(format!(".{key}.{}", self.rank));
        std::fs::write(&tmp, value).map_err(|e| e.to_string())?;
        std::fs::rename(&tmp, self.dir.join(format!("kv-{key}"))).map_err(|e| e.to_string())
    }
    fn fence(&mut self) -> Result<(), String> {
        self.round += 1;
        let mark = |r: Rank| self.dir.join(format!("fence-{}-{r}", self.round));
        std::fs::write(mark(self.rank), b"").map_err(|e| e.to_string())?;
        (0..self.size).try_for_each(|r| self.wait_for(&mark(r)))
    }
    fn get(&mut self, _rank: Rank, key: &str) -> Result<String, String> {
        let path = self.dir.join(format!("kv-{key}"));
        self.wait_for(&path)?;
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    }
}

/// How the ranks of [`run_on_hosts`] ended, with their output.
#[derive(Debug)]
pub struct HostsOutcome {
    pub status: Vec<Option<i32>>,
    pub output: Vec<String>,
}

impl HostsOutcome {
    pub fn success(&self) -> bool {
        self.status.iter().all(|s| *s == Some(0))
    }
}

/// Runs test `test_name` of this binary as a job with `hosts[h]` ranks on host `h` (ranks
/// numbered host by host), with extra environment `env`; each rank gets `timeout`. Rank `r`
/// finds the others through [`FileExchange::from_env`].
pub fn run_on_hosts(
    test_name: &str,
    hosts: &[usize],
    env: &[(&str, &str)],
    timeout: Duration,
) -> HostsOutcome {
    let exe = std::env::current_exe().expect("current test binary");
    let size: usize = hosts.iter().sum();
    let dir = std::env::temp_dir().join(format!(
        "nic-kvs-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let logs: Vec<PathBuf> = (0..size)
        .map(|r| dir.join(format!("rank{r}.log")))
        .collect();
    let mut children: Vec<Child> = Vec::new();
    let mut rank = 0;
    for (h, &count) in hosts.iter().enumerate() {
        for _ in 0..count {
            let log = std::fs::File::create(&logs[rank]).expect("a log file");
            let mut c = Command::new(&exe);
            c.args([test_name, "--exact", "--nocapture", "--test-threads", "1"])
                .env(super::RANK_ENV, test_name)
                .env(DIR_ENV, &dir)
                .env(KVS_RANK_ENV, rank.to_string())
                .env(SIZE_ENV, size.to_string())
                .env(HOST_ID_ENV, format!("testhost{h}"))
                .env(ADDR_ENV, format!("127.0.0.{}", h + 1))
                .envs(env.iter().copied())
                .stdout(log.try_clone().expect("dup"))
                .stderr(log);
            children.push(c.spawn().expect("starting a rank"));
            rank += 1;
        }
    }
    let end = Instant::now() + timeout;
    let mut status: Vec<Option<i32>> = vec![None; size];
    let mut done = vec![false; size];
    while done.iter().any(|d| !d) {
        for (r, c) in children.iter_mut().enumerate() {
            if !done[r] {
                if let Ok(Some(s)) = c.try_wait() {
                    status[r] = s.code();
                    done[r] = true;
                }
            }
        }
        if Instant::now() > end {
            for (r, c) in children.iter_mut().enumerate() {
                if !done[r] {
                    let _ = c.kill();
                    let _ = c.wait();
                    done[r] = true;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let output = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap_or_default())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    let out = HostsOutcome { status, output };
    if !out.success() {
        for (r, o) in out.output.iter().enumerate() {
            println!("---- rank {r} ({:?}) ----\n{o}", out.status[r]);
        }
    }
    out
}
