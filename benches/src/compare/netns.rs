//! The side-by-side across hosts: `mpibench.c` (built with each library's `mpicc`, as
//! [`super::library`] builds it) run with one rank in each of two network namespace hosts
//! ([`mpi_staging::netns::Hosts`]: each host a namespace whose one interface is a veth link
//! to a bridge), so that every message crosses the veth links over TCP.
//!
//! How each library's job is started (all from host 0; host 1 is reached through the hosts'
//! launcher-exec script in the place of ssh):
//! - ours: MPICH's Hydra, which speaks PMI-1 to our library (the ranks' hosts differ, so our
//!   wire-up connects them over TCP), or our `mpirun --hosts --launcher-exec` ([`OurLauncher`]);
//! - MPICH (Debian's 4.0, ch4:ucx): Hydra with `UCX_TLS=tcp,self` on the hosts' interface
//!   ([`mpi_staging::netns::hydra_command`]);
//! - Open MPI: `mpirun.openmpi` with `--mca pml ob1 --mca btl tcp,self` on the hosts' subnet
//!   ([`mpi_staging::netns::openmpi_command`]); its RMA build with `OMPI_MCA_osc=pt2pt`
//!   (one-sided over that same ob1/tcp path; osc/sm would take the two namespace hosts,
//!   which share a hostname, for one node and go around the network).
//!
//! Placement ([`Binding`]): with [`Binding::Core`] every rank runs through a small wrapper
//! script that pins it with `taskset` to CPU (rank modulo the CPUs), the rank read from the
//! launcher's environment (`PMI_RANK` from Hydra and our `mpirun`, `OMPI_COMM_WORLD_RANK`
//! from Open MPI): host 0's rank on CPU 0, host 1's on CPU 1. No launcher binds by itself
//! (Hydra's default, Open MPI's `--bind-to none`, our `--bind-to none`): each host sees all
//! the machine's cores as its own, and a launcher's binding would put both ranks on core 0.
//! With [`Binding::Default`] the wrapper is left out and the kernel places the ranks.

use super::library::{Built, Library, Variant};
use mpi_staging::netns::{hydra_command, openmpi_command, Hosts};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Seconds a launcher lets a job run (`MPIEXEC_TIMEOUT`, honoured by all three launchers).
pub const JOB_TIMEOUT_S: u64 = 60;

/// How the ranks are placed on the machine's cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Binding {
    /// Each rank pinned to CPU (rank modulo the CPUs): one core per namespace host.
    Core,
    /// No binding: the kernel places the ranks.
    Default,
}

impl Binding {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Binding::Core => "core",
            Binding::Default => "default",
        }
    }

    /// One line saying how the ranks were placed.
    pub fn describe(self) -> &'static str {
        match self {
            Binding::Core => {
                "each rank pinned by taskset to CPU (rank mod CPUs): host 0's rank on CPU 0, \
                 host 1's on CPU 1 (rank from PMI_RANK / OMPI_COMM_WORLD_RANK); launchers bind nothing"
            }
            Binding::Default => {
                "no binding (Hydra's default, Open MPI --bind-to none, our --bind-to none): \
                 the kernel places the ranks"
            }
        }
    }
}

/// What starts our ranks across the hosts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OurLauncher {
    /// MPICH's `mpiexec.hydra` (PMI-1 to our library), as for MPICH.
    Hydra,
    /// Our `mpirun --hosts A,B --launcher-exec SCRIPT`.
    Mpirun,
}

impl OurLauncher {
    /// The name printed with the results.
    pub fn name(self) -> &'static str {
        match self {
            OurLauncher::Hydra => "mpiexec.hydra",
            OurLauncher::Mpirun => "mpirun",
        }
    }
}

/// The hosts and the binding wrapper of one side-by-side run.
pub struct NetnsBench {
    hosts: Hosts,
    /// A directory of our own holding the binding wrapper.
    dir: PathBuf,
    wrapper: PathBuf,
}

impl NetnsBench {
    /// Makes two hosts and the binding wrapper; Err(why) when namespaces cannot be made.
    pub fn create() -> Result<NetnsBench, String> {
        let hosts = Hosts::create(2)?;
        let dir = std::env::temp_dir().join(format!("netbench-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let wrapper = dir.join("bind-by-rank");
        let script = format!(
            "#!/bin/sh\n\
             # Pins this MPI rank to CPU (rank mod {cpus}), the rank from the launcher's\n\
             # environment, then runs the program.\n\
             rank=${{PMI_RANK:-${{OMPI_COMM_WORLD_RANK:-0}}}}\n\
             exec taskset -c $((rank % {cpus})) \"$@\"\n",
            cpus = super::library::cores()
        );
        std::fs::write(&wrapper, script)
            .and_then(|()| {
                std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("cannot write {}: {e}", wrapper.display()))?;
        Ok(NetnsBench {
            hosts,
            dir,
            wrapper,
        })
    }

    /// The hosts.
    pub fn hosts(&self) -> &Hosts {
        &self.hosts
    }

    /// The command running `built`'s executable with `args`, one rank on each host.
    pub fn job(
        &self,
        built: &Built,
        ours: OurLauncher,
        binding: Binding,
        args: &[String],
    ) -> Command {
        let (program, mut rest): (PathBuf, Vec<std::ffi::OsString>) = match binding {
            Binding::Core => (self.wrapper.clone(), vec![built.exe.clone().into()]),
            Binding::Default => (built.exe.clone(), Vec::new()),
        };
        rest.extend(args.iter().map(Into::into));
        let mut command = match (built.library, ours) {
            (Library::Ours, OurLauncher::Mpirun) => self.our_mpirun(&built.mpirun, &program),
            (Library::Ours, OurLauncher::Hydra) | (Library::Mpich, _) => {
                hydra_command(&self.hosts, &program)
            }
            (Library::OpenMpi, _) => openmpi_command(&self.hosts, &program),
        };
        if built.library == Library::OpenMpi && built.variant == Variant::Rma {
            // Not osc/rdma, which crashes in atomics (see `super::library`), and not osc/sm:
            // the namespace hosts share the machine's hostname, so Open MPI takes the two
            // ranks for neighbours and osc/sm would move the data through shared memory,
            // around the network. osc/pt2pt runs over the same ob1/tcp path as `bw`.
            command.env("OMPI_MCA_osc", "pt2pt");
        }
        command
            .args(rest)
            .env("MPIEXEC_TIMEOUT", JOB_TIMEOUT_S.to_string());
        if built.library == Library::Ours {
            // Our libmpi.so (beside our mpicc and mpirun) first on the loader's path: its
            // sonames are MPICH's, whose library is installed system-wide.
            if let Some(dir) = built.mpirun.parent() {
                command.env("LD_LIBRARY_PATH", dir);
            }
        }
        command
    }

    /// Our `mpirun`, started in host 0, one rank on each host.
    fn our_mpirun(&self, mpirun: &Path, program: &Path) -> Command {
        let hosts: Vec<String> = (0..self.hosts.len())
            .map(|i| self.hosts.addr(i).to_string())
            .collect();
        let mut command = self.hosts.command_in(0, mpirun);
        command
            .args(["--hosts", &hosts.join(",")])
            .arg("--launcher-exec")
            .arg(self.hosts.launcher_exec())
            .args(["-n", &self.hosts.len().to_string()])
            .args(["--bind-to", "none"])
            .arg(program);
        command
    }

    /// Runs `command` to its end, at most `limit`; on overrun kills it and everything left
    /// in the hosts. Returns (success, stdout, stderr).
    pub fn run(
        &self,
        mut command: Command,
        limit: Duration,
    ) -> Result<(bool, String, String), String> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break None,
            }
        };
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            for i in 0..self.hosts.len() {
                self.hosts.kill_host(i);
            }
            return Err(format!(
                "{command:?} ran longer than {limit:?} and was killed"
            ));
        };
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        Ok((status.success(), stdout, stderr))
    }
}

impl Drop for NetnsBench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads a pipe to its end on a thread.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}
