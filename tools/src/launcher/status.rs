//! How a rank ended, how to say it, and what `mpirun` exits with.
//!
//! Exit statuses follow the shell: a rank's own status when it exits, 128+N when signal N
//! killed it; `mpirun` itself ends with 128+N when signal N made it end the job, and with 255
//! when the job ran out of time (MPICH's hydra does the same).

use nic_model::RankExit;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// `mpirun`'s status when `--timeout` / `MPIEXEC_TIMEOUT` expired.
pub const TIMED_OUT: i32 = 255;

/// How one rank's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankEnd {
    Exited(i32),
    Signaled(i32),
}

impl RankEnd {
    pub fn from_status(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => RankEnd::Exited(code),
            (None, Some(signal)) => RankEnd::Signaled(signal),
            // Neither a code nor a signal: not a status waitpid reports for a dead process.
            _ => RankEnd::Exited(255),
        }
    }

    pub fn success(self) -> bool {
        self == RankEnd::Exited(0)
    }

    /// The status a shell would report for this process.
    pub fn shell_status(self) -> i32 {
        match self {
            RankEnd::Exited(code) => code,
            RankEnd::Signaled(signal) => 128 + signal,
        }
    }

    /// What to tell the fabric, so that peers blocked on this rank see it gone.
    pub fn for_fabric(self, killed_by_launcher: bool) -> RankExit {
        match self {
            _ if killed_by_launcher => RankExit::KilledByLauncher,
            RankEnd::Exited(code) => RankExit::Code(code),
            RankEnd::Signaled(signal) => RankExit::Signal(signal),
        }
    }

    /// "exited with status 7", "killed by signal 9 (SIGKILL)".
    pub fn describe(self) -> String {
        match self {
            RankEnd::Exited(code) => format!("exited with status {code}"),
            RankEnd::Signaled(signal) => {
                format!("killed by signal {signal} ({})", signal_name(signal))
            }
        }
    }
}

/// `mpirun`'s exit status for a PMI abort with `code`: the low byte, as `exit(code)` gives
/// it, except that a non-zero code never becomes 0 (an abort with 256 is not a success).
pub fn abort_status(code: i32) -> i32 {
    match code & 0xff {
        0 if code != 0 => 1,
        low => low,
    }
}

/// The conventional name of a Linux signal number.
pub fn signal_name(signal: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(signal) {
        Ok(n) if (1..NAMES.len()).contains(&n) => NAMES[n].to_string(),
        _ if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signal) => {
            format!("SIGRTMIN+{}", signal - libc::SIGRTMIN())
        }
        _ => format!("signal {signal}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_statuses_follow_the_shell() {
        assert_eq!(
            RankEnd::Signaled(9).describe(),
            "killed by signal 9 (SIGKILL)"
        );
        assert_eq!(RankEnd::Signaled(15).shell_status(), 143);
        assert_eq!(RankEnd::Exited(7).describe(), "exited with status 7");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGSYS), "SIGSYS");
        assert_eq!(abort_status(7), 7);
        assert_eq!(abort_status(0), 0);
        assert_eq!(abort_status(-1), 255);
        assert_eq!(abort_status(256), 1);
    }
}
