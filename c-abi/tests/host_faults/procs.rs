//! The processes of a job, found in `/proc` by the tag in their environment, and what a job
//! may leave behind: processes, files in `/dev/shm`, abstract sockets of host leaders.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A live process.
#[derive(Clone, Debug)]
pub struct Proc {
    pub pid: i32,
    pub cmdline: String,
}

/// The pids in `/proc`.
fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` is a zombie (ended, not yet reaped) or gone.
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// The live processes whose environment holds `TAG_VAR=tag`.
pub fn tagged(tag: &str) -> Vec<Proc> {
    let marker = format!("{}={tag}", super::job::TAG_VAR).into_bytes();
    let me = std::process::id() as i32;
    pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == marker.as_slice()))
        })
        .filter(|&pid| !ended(pid))
        .map(|pid| Proc {
            pid,
            cmdline: cmdline(pid),
        })
        .collect()
}

/// The command line of `pid`, words joined by spaces.
pub fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

/// The processes of job `tag` still there after waiting up to `grace` for them to go.
pub fn left_after(tag: &str, grace: Duration) -> Vec<Proc> {
    let end = Instant::now() + grace;
    loop {
        let left = tagged(tag);
        if left.is_empty() || Instant::now() >= end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What was in the places a job could leave something, before it started.
pub struct Snapshot {
    shm: BTreeSet<String>,
    sockets: BTreeSet<String>,
}

/// The names in `/dev/shm`.
fn shm_names() -> BTreeSet<String> {
    std::fs::read_dir("/dev/shm")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The host leaders' abstract sockets (`@nic-leader-...`) in a `/proc/net/unix` listing,
/// as `name inode`.
fn leader_sockets(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let name = words.last()?;
            name.starts_with("@nic-leader-")
                .then(|| format!("{name} {}", words.get(6).unwrap_or(&"?")))
        })
        .collect()
}

/// `/proc/net/unix` of this test's network namespace.
fn own_unix_listing() -> String {
    std::fs::read_to_string("/proc/net/unix").unwrap_or_default()
}

/// `/proc/net/unix` of network namespace `ns`.
pub fn unix_listing_in(ns: &str) -> String {
    Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/unix"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Whether a process other than those of job `tag` holds socket `inode` (another test's
/// job, running now, owns it).
fn held_by_another_job(inode: &str, tag: &str) -> bool {
    let target = format!("socket:[{inode}]");
    let ours: BTreeSet<i32> = tagged(tag).iter().map(|p| p.pid).collect();
    pids().into_iter().filter(|p| !ours.contains(p)).any(|pid| {
        std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == target.as_str())
            })
        })
    })
}

/// Whether a file in `/dev/shm` is mapped or open by any live process.
fn shm_in_use(name: &str) -> bool {
    let path = Path::new("/dev/shm").join(name);
    let path = path.to_string_lossy();
    pids().into_iter().any(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .is_ok_and(|maps| maps.contains(path.as_ref()))
            || std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
                fds.flatten().any(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|l| l.to_string_lossy() == path.as_ref())
                })
            })
    })
}

impl Snapshot {
    /// What is there now (in this test's network namespace).
    pub fn take() -> Snapshot {
        Snapshot {
            shm: shm_names(),
            sockets: leader_sockets(&own_unix_listing()),
        }
    }

    /// What job `tag` left in this test's namespace: files in `/dev/shm` that appeared
    /// since the snapshot and no live process holds, and leader sockets that appeared since
    /// and are not another job's. Empty when nothing was left.
    pub fn left_by(&self, tag: &str) -> Vec<String> {
        let mut left: Vec<String> = shm_names()
            .difference(&self.shm)
            .filter(|name| !shm_in_use(name))
            .map(|name| format!("/dev/shm/{name}"))
            .collect();
        for socket in leader_sockets(&own_unix_listing()).difference(&self.sockets) {
            let inode = socket.rsplit(' ').next().unwrap_or("?");
            if !held_by_another_job(inode, tag) {
                left.push(format!("abstract socket {socket}"));
            }
        }
        left
    }
}

/// The leader sockets in namespace `ns` (every one is left behind: the namespace is the
/// test's own and its job has ended).
pub fn leader_sockets_in(ns: &str) -> Vec<String> {
    leader_sockets(&unix_listing_in(ns)).into_iter().collect()
}
