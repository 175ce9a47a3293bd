//! The launcher's system calls that the standard library does not wrap: starting each rank in
//! a session of its own, signalling a rank's process group, and asking the kernel whether a
//! file may be executed. The only `unsafe` code of the launcher.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Makes the child of `command` lead a new session (and so a process group of its own, whose
/// id is its pid), as MPICH's launcher does. Under the scheduler's autogroups
/// (`/proc/sys/kernel/sched_autogroup_enabled`), each session is scheduled as one group: ranks
/// left in mpirun's session would share one group's share of the processors between them,
/// while a job of another library gets one share per rank.
pub fn in_new_session(command: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed; setsid is one, and the closure touches no memory of
    // the parent. It fails only if the child already leads a process group, which a freshly
    // forked child does not.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Sends `signal` to the process group `pgid` (each rank leads a group of its own, so this
/// reaches the rank and anything it started). Returns false if no such group exists any more.
pub fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        // kill(-1) or kill(0) would reach far more than one rank.
        return false;
    }
    // SAFETY: kill takes plain integers and has no memory effects; the guard above keeps the
    // target a single process group.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// True if this user may execute the file at `path` (as `execve` would decide, root included).
pub fn may_execute(path: &Path) -> bool {
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c_path` is a NUL-terminated string that outlives the call; access only reads it.
    unsafe { libc::access(c_path.as_ptr(), libc::X_OK) == 0 }
}
