//! Whether the process attached as a peer rank still exists, for hosts where no launcher marks
//! dead ranks in the fabric (Hydra and Slurm start and reap the ranks; only `mpirun` writes
//! `DEAD`).
//!
//! The first time a peer is seen attached, its pid is turned into a pidfd (`pidfd_open`),
//! after checking that the process with that pid is the one that attached (its start time
//! matches the one in its rank block, so a reused pid is not mistaken for the peer). A pidfd
//! becomes readable when its process exits, zombie or reaped, so each later check is one
//! `poll` with no wait. Where pidfds are unavailable (old kernel, descriptor limit), each check
//! falls back to `kill(pid, 0)` plus the process's state and start time in `/proc`.

use super::layout::RankBlock;
use crate::error::Rank;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// No look at the peer yet.
const UNSEEN: i32 = -1;
/// No pidfd for the peer: check through `kill` and `/proc` each time.
const NO_PIDFD: i32 = -2;
/// The peer is known to be gone.
const GONE: i32 = -3;

/// One watch per peer rank: a pidfd, or one of the states above.
pub(crate) struct PeerWatch {
    watches: Vec<AtomicI32>,
}

impl PeerWatch {
    pub(crate) fn new(nranks: usize) -> PeerWatch {
        PeerWatch {
            watches: (0..nranks).map(|_| AtomicI32::new(UNSEEN)).collect(),
        }
    }

    /// True when the process that attached as `peer` (whose rank block says attached) has
    /// exited. False while its pid is not published yet, and when in doubt.
    pub(crate) fn has_exited(&self, peer: Rank, block: &RankBlock) -> bool {
        let pid = block.pid.load(Ordering::Acquire);
        if pid <= 0 {
            return false;
        }
        // Written before the pid (release above).
        let started = block.start_time.load(Ordering::Relaxed);
        let watch = &self.watches[peer];
        match watch.load(Ordering::Acquire) {
            GONE => true,
            NO_PIDFD => exited_by_proc(pid, started),
            UNSEEN => {
                let (value, exited) = first_look(pid, started);
                if let Err(winner) =
                    watch.compare_exchange(UNSEEN, value, Ordering::AcqRel, Ordering::Acquire)
                {
                    // Another thread looked first: keep its watch, close ours.
                    close_watch(value);
                    return self.has_exited_by(winner, pid, started);
                }
                exited
            }
            fd => pidfd_exited(fd),
        }
    }

    fn has_exited_by(&self, value: i32, pid: libc::pid_t, started: u64) -> bool {
        match value {
            GONE => true,
            NO_PIDFD | UNSEEN => exited_by_proc(pid, started),
            fd => pidfd_exited(fd),
        }
    }
}

impl Drop for PeerWatch {
    fn drop(&mut self) {
        for w in &self.watches {
            close_watch(w.swap(UNSEEN, Ordering::AcqRel));
        }
    }
}

/// Takes a pidfd for `pid` if it is still the process that started at `started`: returns the
/// value to keep in the watch and whether the process has exited.
fn first_look(pid: libc::pid_t, started: u64) -> (i32, bool) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::ESRCH) {
            return (GONE, true);
        }
        tracing::debug!(target: "nic", pid, %err, "no pidfd for a peer; checking it through /proc");
        return (NO_PIDFD, exited_by_proc(pid, started));
    }
    let fd = fd as i32;
    // The pidfd now pins the pid: if the process behind it started when the peer did, it is
    // the peer. (A start time that cannot be read proves nothing either way.)
    if started != 0 {
        if let Some(stat) = ProcStat::read(pid) {
            if stat.start_time != started {
                close_watch(fd);
                return (GONE, true);
            }
        }
    }
    (fd, pidfd_exited(fd))
}

/// A pidfd polls readable once its process has exited (zombie or reaped).
fn pidfd_exited(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on our stack, no wait.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & libc::POLLIN != 0
}

/// The check without a pidfd: the pid is free, or its process is a zombie, or another process
/// that started later now has the pid.
fn exited_by_proc(pid: libc::pid_t, started: u64) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    {
        return true;
    }
    match ProcStat::read(pid) {
        Some(stat) => {
            matches!(stat.state, 'Z' | 'X' | 'x') || (started != 0 && stat.start_time != started)
        }
        None => false,
    }
}

fn close_watch(value: i32) {
    if value >= 0 {
        // SAFETY: a value >= 0 in a watch is a pidfd this module opened and still owns.
        drop(unsafe { OwnedFd::from_raw_fd(value) });
    }
}

/// When this process started, for its rank block (0 if `/proc` cannot say).
pub(crate) fn own_start_time() -> u64 {
    // SAFETY: getpid has no preconditions.
    ProcStat::read(unsafe { libc::getpid() }).map_or(0, |s| s.start_time)
}

/// The two fields of `/proc/PID/stat` the checks need.
struct ProcStat {
    state: char,
    start_time: u64,
}

impl ProcStat {
    fn read(pid: libc::pid_t) -> Option<ProcStat> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Fields after the command name (which may hold spaces and parentheses, so the parse
    /// starts after its last `)`): 3 is the state, 22 the start time.
    fn parse(stat: &str) -> Option<ProcStat> {
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut fields = rest.split_ascii_whitespace();
        let state = fields.next()?.chars().next()?;
        let start_time = fields.nth(22 - 4)?.parse().ok()?;
        Some(ProcStat { state, start_time })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let line =
            "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let s = ProcStat::parse(line).unwrap();
        assert_eq!((s.state, s.start_time), ('S', 987654));
        assert!(ProcStat::parse("4242 (x) Z 1 2").is_none());
        assert!(ProcStat::parse("no parenthesis").is_none());
        assert!(ProcStat::parse("").is_none());
    }

    #[test]
    fn own_start_time_is_known_and_stable() {
        let t = own_start_time();
        assert_ne!(t, 0, "/proc/self/stat has no start time");
        assert_eq!(t, own_start_time());
    }

    /// A child that sleeps, killed and reaped on drop.
    struct Sleeper(std::process::Child);

    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_killed_child_is_seen_exited_while_a_zombie_and_a_reused_pid_is_not_the_peer() {
        let mut child = Sleeper(
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("starting sleep"),
        );
        let pid = child.0.id() as libc::pid_t;
        let started = ProcStat::read(pid).expect("the child's stat").start_time;
        // SAFETY: every field of a rank block is an integer or an atomic; zero is valid.
        let block: RankBlock = unsafe { std::mem::zeroed() };
        let watch = PeerWatch::new(2);
        assert!(!watch.has_exited(1, &block), "no pid published yet");
        block.start_time.store(started, Ordering::Relaxed);
        block.pid.store(pid, Ordering::Release);
        assert!(!watch.has_exited(1, &block));
        assert!(
            watch.watches[1].load(Ordering::Relaxed) >= 0,
            "no pidfd taken"
        );
        assert!(!exited_by_proc(pid, started));
        // A process with this pid that started at another time is not the peer.
        assert_eq!(first_look(pid, started + 1), (GONE, true));
        assert!(exited_by_proc(pid, started + 1));
        child.0.kill().unwrap();
        let since = std::time::Instant::now();
        while !watch.has_exited(1, &block) {
            assert!(since.elapsed() < std::time::Duration::from_secs(5));
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Not reaped yet: a zombie, which `kill(pid, 0)` alone still finds.
        assert_eq!(ProcStat::read(pid).map(|s| s.state), Some('Z'));
        // SAFETY: signal 0 only checks for existence.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0);
        assert!(exited_by_proc(pid, started));
        child.0.wait().unwrap();
        assert!(watch.has_exited(1, &block));
        assert!(exited_by_proc(pid, started));
        assert_eq!(first_look(pid, started), (GONE, true));
    }
}
