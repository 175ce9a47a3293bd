//! # The job launcher behind `mpirun` and `mpiexec`
//!
//! `mpirun -n N prog args...` starts N processes of `prog` on this host as the ranks of one
//! MPI job over a shared-memory fabric created by [`nic_model::Job`], forwards their standard
//! streams, and ends with the status of the first rank that failed. With `--hosts` or
//! `--hostfile` the ranks spread over hosts: those on other hosts are started through a
//! remote-start command (ssh), there is no fabric, and the ranks build their own from what
//! they exchange over PMI. Every rank gets PMI-1 from `mpirun` (the [`pmi`] crate's server):
//! an inherited socket on this machine, TCP with the job's secret key from other hosts.
//! Both binaries are this module under two names.
//!
//! ```text
//!   cli ──▶ Options ──▶ supervise::run ──spawn──▶ rank 0 .. rank N-1   (each its own process group)
//!                         │  ▲ ▲ │   ◀──PMI-1────── (PMI_FD here, PMI_PORT from other hosts)
//!                         │  │ │ └── signals ──▶    │ stdout/stderr pipes
//!                         │  │ └─ pmi::server events (abort, finalize, lost)
//!                         │  └─ exits       output::forward (one task per pipe, whole lines)
//!                         │                         │ bounded channel
//!                         └────────────────▶ output::Writer threads ──▶ mpirun's stdout/stderr
//! ```
//!
//! **Design.** One tokio `current_thread` runtime on the main thread does everything that
//! involves the children: it spawns them (so the kernel's parent-death signal, which is tied to
//! the thread that forked, fires exactly when `mpirun` itself dies), reaps them, forwards
//! signals and enforces the timeout. The two writers that copy rank output to `mpirun`'s own
//! stdout and stderr are plain threads fed through bounded channels: a slow reader of
//! `mpirun`'s output then holds back the ranks (their pipes fill) but never the supervisor.
//!
//! **Modules.** `cli`: the command line (clap, plus MPICH's single-dash spellings) and its
//! validation; `hosts`: host lists, placement, local hosts and the remote-start command;
//! `program`: finding the program before anything starts; `supervise`: starting
//! the ranks and the event loop that ends the job; `output`: line-by-line forwarding;
//! `status`: how a rank ended and what `mpirun` exits with; `guard`: the helper process
//! that cleans up after the ranks if `mpirun` is killed; `os`: the system calls that need
//! `unsafe`.
//!
//! **Placement.** `--bind-to auto|core|numa|none` and `--report-bindings` follow
//! [`nic_model::placement`], the one policy shared with the library: `supervise` binds the
//! ranks it starts here (between fork and exec) and prints their report lines; ranks on other
//! hosts get the policy and their place on their host in their environment and bind
//! themselves in `MPI_Init`.

mod cli;
mod guard;
mod hosts;
mod os;
mod output;
mod program;
mod spawn;
mod status;
mod supervise;

use std::fmt;

/// Something that stops the job before or while it starts, with the exit status `mpirun`
/// reports for it (shell conventions: 2 for a usage error, 126 for a program that cannot be
/// executed, 127 for one that cannot be found, 1 otherwise).
#[derive(Debug)]
pub struct LaunchError {
    pub message: String,
    pub exit_code: i32,
}

impl LaunchError {
    pub fn usage(message: impl Into<String>) -> Self {
        LaunchError {
            message: message.into(),
            exit_code: 2,
        }
    }

    pub fn other(message: impl Into<String>) -> Self {
        LaunchError {
            message: message.into(),
            exit_code: 1,
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The whole program: parses the command line, runs the job and exits with its status.
/// `tool` is the name the messages use (`mpirun` or `mpiexec`).
pub fn main(tool: &'static str) -> ! {
    if std::env::var_os(guard::GUARD_ENV).is_some() {
        guard::main();
    }
    nic_model::init_tracing();
    let options = match cli::parse(tool, std::env::args_os().collect()) {
        Ok(o) => o,
        Err(e) => fail(tool, &e),
    };
    tracing::debug!(target: "mpirun", ?options, "starting the job");
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => fail(
            tool,
            &LaunchError::other(format!("cannot start the event loop: {e}")),
        ),
    };
    let code = runtime.block_on(supervise::run(tool, options));
    // The task forwarding stdin may sit in a blocking read of a terminal; do not wait for it.
    runtime.shutdown_background();
    std::process::exit(code);
}

fn fail(tool: &str, e: &LaunchError) -> ! {
    eprintln!("{tool}: {e}");
    std::process::exit(e.exit_code);
}
