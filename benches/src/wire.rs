//! How `layers` connects its two ranks: over the shared-memory fabric of one host
//! ([`Wire::Shm`], the default: `nic_model::Job` starts the ranks and hands them the fabric)
//! or over the network device ([`Wire::Tcp`]: each rank its own host, one TCP connection on
//! loopback between them).
//!
//! Over TCP the ranks are started by a PMI launcher ([`Launcher`]), so that they get through
//! the same code path as an MPI program: `nic_model::DeviceStack::from_env()` connects to the
//! launcher's PMI service, publishes its card and makes the connection (`MPI_WIRE=tcp`,
//! `MPI_NET_ADDR=127.0.0.1`: no traffic leaves loopback). The launcher is our `mpirun` when it
//! knows `--wire` (it serves PMI-1 then), otherwise MPICH's `mpiexec.hydra`, which speaks
//! PMI-1 to our client too.

use crate::tools::{our_tool, system_tool};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The address both ranks listen on and publish over TCP.
pub const LOOPBACK: &str = "127.0.0.1";

/// Seconds after which the launcher ends a job that has not finished.
pub const JOB_TIMEOUT_S: u32 = 600;

/// What connects the two ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Wire {
    /// The host's shared-memory fabric (one host).
    Shm,
    /// The network device: TCP on loopback, each rank a host of its own.
    Tcp,
}

impl Wire {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Shm => "shm",
            Wire::Tcp => "tcp",
        }
    }
}

/// Which launcher starts the ranks over TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LauncherChoice {
    /// Our `mpirun` if it knows `--wire`, otherwise `mpiexec.hydra`.
    Auto,
    /// Our `mpirun --wire tcp` (PMI-1 from `mpirun`).
    Mpirun,
    /// MPICH's `mpiexec.hydra` (PMI-1 from Hydra).
    Hydra,
}

/// A PMI launcher found on this machine.
#[derive(Clone, Debug)]
pub enum Launcher {
    /// Our `mpirun`, at this path.
    Mpirun(PathBuf),
    /// `mpiexec.hydra`, at this path.
    Hydra(PathBuf),
}

/// The settings of a two-rank job over TCP.
#[derive(Clone, Debug)]
pub struct TcpJob<'a> {
    /// Pin rank r to CPU r (modulo the CPUs).
    pub bind: bool,
    /// The NIC timing profile (`MPI_NIC_PROFILE`).
    pub profile: &'a str,
    /// The MPI channel (`MPI_CHANNEL`), for MPI programs.
    pub channel: Option<&'a str>,
}

impl Launcher {
    /// Finds the launcher `choice` names; `Auto` takes our `mpirun` if its `--help` lists
    /// `--wire` (an `mpirun` that serves PMI), otherwise `mpiexec.hydra`.
    pub fn find(choice: LauncherChoice) -> Result<Launcher, String> {
        let hydra = || system_tool("mpiexec.hydra", "mpich").map(Launcher::Hydra);
        match choice {
            LauncherChoice::Hydra => hydra(),
            LauncherChoice::Mpirun => {
                let mpirun = our_tool("mpirun")?;
                if knows_wire(&mpirun) {
                    Ok(Launcher::Mpirun(mpirun))
                } else {
                    Err(format!(
                        "{} has no --wire option (it does not serve PMI yet): use --launcher hydra",
                        mpirun.display()
                    ))
                }
            }
            LauncherChoice::Auto => match our_tool("mpirun") {
                Ok(mpirun) if knows_wire(&mpirun) => Ok(Launcher::Mpirun(mpirun)),
                _ => hydra()
                    .map_err(|e| format!("no PMI launcher: our mpirun lacks --wire, and {e}")),
            },
        }
    }

    /// The name printed with the results.
    pub fn name(&self) -> &'static str {
        match self {
            Launcher::Mpirun(_) => "mpirun",
            Launcher::Hydra(_) => "mpiexec.hydra",
        }
    }

    /// A command that starts two ranks connected over TCP on loopback; append the program
    /// and its arguments. The environment given to the command reaches the ranks.
    pub fn tcp_job(&self, job: &TcpJob) -> Command {
        let mut c = match self {
            Launcher::Mpirun(path) => {
                let mut c = Command::new(path);
                c.args(["-n", "2", "--wire", "tcp"])
                    .args(["--bind-to", if job.bind { "core" } else { "none" }])
                    .args(["--timeout", &JOB_TIMEOUT_S.to_string()]);
                c
            }
            Launcher::Hydra(path) => {
                let mut c = Command::new(path);
                c.args(["-n", "2"]);
                if job.bind {
                    c.args(["-bind-to", "core"]);
                }
                c.env("MPIEXEC_TIMEOUT", JOB_TIMEOUT_S.to_string());
                c
            }
        };
        c.env(nic_model::net::WIRE_ENV, "tcp")
            .env(nic_model::net::ADDR_ENV, LOOPBACK)
            .env("MPI_NIC_PROFILE", job.profile);
        if let Some(channel) = job.channel {
            c.env("MPI_CHANNEL", channel);
        }
        c
    }
}

/// Whether `mpirun --help` lists the `--wire` option.
fn knows_wire(mpirun: &std::path::Path) -> bool {
    Command::new(mpirun)
        .arg("--help")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).contains("--wire"))
        .unwrap_or(false)
}
