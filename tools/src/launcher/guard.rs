//! The guard: a small helper process that kills what the ranks started if `mpirun` is killed.
//!
//! The kernel's parent-death signal kills the ranks themselves when `mpirun` dies, even by
//! SIGKILL, but not the processes a rank started (a rank run as `sh -c 'prog'` forks `prog`;
//! wrappers such as `time` or `valgrind` do the same). Those would survive, holding the job's
//! fabric open. So `mpirun` starts a copy of itself in guard mode before the first rank, in a
//! process group of its own and without a parent-death signal, and tells it through a pipe the
//! process group of every rank it starts. When the pipe closes (`mpirun` is done, or has
//! died, in which case the kernel closes it) the guard sends SIGKILL to every one of those
//! groups and exits.

use super::os::signal_group;
use std::io::{self, BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// Set in the guard's environment (only there) to start `mpirun` in guard mode.
pub const GUARD_ENV: &str = "MPIRUN_GUARD_FOR";

/// `mpirun`'s end of the guard.
pub struct Guard {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Guard {
    /// Starts the guard (this same executable, in guard mode).
    pub fn start() -> io::Result<Guard> {
        let mut child = Command::new("/proc/self/exe")
            .arg0("mpirun-guard")
            .env(GUARD_ENV, std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Guard { child, pipe })
    }

    /// Asks the guard to kill the process group `pgid` if `mpirun` dies.
    pub fn watch(&mut self, pgid: u32) {
        let written = self.pipe.as_mut().map(|p| writeln!(p, "{pgid}"));
        if let Some(Err(e)) = written {
            tracing::warn!(target: "mpirun", error = %e, "the guard process is gone; processes started by ranks may outlive mpirun if it is killed");
            self.pipe = None;
        }
    }

    /// Lets the guard do its last sweep and waits (briefly) for it to exit.
    pub async fn finish(mut self) {
        drop(self.pipe.take());
        for _ in 0..200 {
            match self.child.try_wait() {
                Ok(None) => tokio::time::sleep(Duration::from_millis(5)).await,
                _ => return,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Guard mode: collect process groups from stdin until it closes, then kill them all.
pub fn main() -> ! {
    let mut groups: Vec<u32> = Vec::new();
    for line in io::stdin().lock().lines() {
        match line.map(|l| l.trim().parse::<u32>()) {
            Ok(Ok(pgid)) => groups.push(pgid),
            Ok(Err(_)) => {}
            Err(_) => break,
        }
    }
    for pgid in groups {
        signal_group(pgid, libc::SIGKILL);
    }
    std::process::exit(0);
}
