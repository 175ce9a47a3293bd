//! The launcher's system calls that the standard library does not wrap: starting each rank in
//! a session of its own, tying a child's life to `mpirun`'s, handing a child the PMI socket,
//! signalling a rank's process group, binding a child to CPUs, and asking the kernel whether
//! a file may be executed.
//! The only `unsafe` code of the launcher.

use nic_model::placement::CpuMask;
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

/// Makes the child of `command` die with `mpirun` (parent-death signal, as
/// [`nic_model::Job::prepare`] does for ranks on a fabric). For processes started without a
/// fabric: ranks of a job across hosts, and the commands that start ranks on other hosts.
pub fn die_with_parent(command: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            // mpirun may have died between fork and prctl.
            if libc::getppid() == 1 {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Makes the child of `command` run on the CPUs of `mask` only, from before its `exec`.
pub fn bind_to_cpus(command: &mut Command, mask: CpuMask) {
    // SAFETY: the closure runs in the child between fork and exec; it makes one system call
    // (sched_setaffinity) on a mask built before the fork, and allocates nothing.
    unsafe {
        command.pre_exec(move || mask.apply_to_thread(0));
    }
}

/// Lets the child of `command` inherit descriptor `fd` (which, like every descriptor the
/// standard library opens, is close-on-exec in `mpirun`, so no other child gets it).
pub fn inherit_fd(command: &mut Command, fd: std::os::fd::RawFd) {
    // SAFETY: runs in the child between fork and exec; fcntl is async-signal-safe and changes
    // only the flags of the child's copy of `fd`.
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
