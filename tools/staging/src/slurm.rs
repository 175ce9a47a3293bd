//! # A Slurm cluster in a temporary directory, for tests
//!
//! [`Cluster::start`] configures and starts Debian's Slurm (`slurmctld`, one `slurmd` per
//! node) and a `munged` of its own in a fresh directory, and waits until every node is idle;
//! [`Cluster::srun`] runs a job step on it with a time limit. Dropping the [`Cluster`] ends
//! every process that belongs to it (its daemons, and the `slurmstepd`s and tasks Slurm
//! started, found by `SLURM_CONF` in their environment or by their network namespace),
//! deletes its network namespaces and removes its directory, also when the test fails.
//! What a test killed outright (SIGKILL) left is ended and removed by the next
//! [`Cluster::start`] on the machine.
//!
//! - **One node**: everything runs in the machine's own network namespace on 127.0.0.1, with
//!   free ports chosen at start, so two test runs or a system Slurm do not clash.
//! - **Several nodes**: each `slurmd` runs in a network namespace of its own, a separate
//!   "host" with an address in 192.0.2.0/24 that exists only inside the namespaces;
//!   `slurmctld` and `srun` run in a hub namespace joined to the nodes by a bridge (see
//!   [below](self#several-nodes)). Tasks run in their node's namespace. The nodes share the
//!   machine's file system, so a program built in a test directory runs on all of them.
//!
//! ## Several nodes
//!
//! Debian's `slurmd` takes `-N <node>` and runs as that node; one per namespace needs no
//! `--enable-multiple-slurmd` build, since each binds its port in its own namespace. The
//! `munged` socket is a file, reachable from every namespace. The hub's bridge has
//! 192.0.2.1 (TEST-NET-1), node `i` has 192.0.2.(10+i) on a veth to the bridge; nothing
//! routes out, and the machine's own namespace gets no interface. Programs enter a namespace
//! with `nsenter --net`: `ip netns exec` would remount `/sys`, hiding `/sys/fs/cgroup`, and
//! slurmd 22.05 will not start without a cgroup file system even when no plugin uses it.
//!
//! ## Configuration
//!
//! The configuration (see `config.rs`): `ProctrackType=proctrack/linuxproc`,
//! `TaskPlugin=task/none`, no accounting, `SlurmUser=root`, `auth/munge` with
//! `AuthInfo=socket=<dir>/run/munge.sock`, `MpiDefault=none`, `SlurmdParameters=config_overrides`
//! (a node may claim more CPUs than the machine has), every state, spool, log and pid file
//! below the cluster's directory. Slurm needs root; a machine where it cannot run gives
//! [`SlurmError::Unavailable`], which a test reports and skips on.
//!
//! ## What a task sees under `srun --mpi=pmi2`
//!
//! `PMI_FD` (a socket to its node's slurmstepd), `PMI_RANK`, `PMI_SIZE` and `PMI_JOBID`
//! (`<job>.<step>`), and no other `PMI_*` variable; `SLURM_MPI_TYPE=pmi2` besides the usual
//! `SLURM_*`. The server on `PMI_FD` answers the PMI-1 wire protocol (`cmd=init
//! pmi_version=1 ...`, what Debian's MPICH 4.0 sends) and PMI-2 (`cmd=init pmi_version=2`,
//! then length-prefixed commands; its `fullinit` needs `pmijobid=<PMI_JOBID>`, else rc=3).

mod config;
mod network;
mod processes;
mod stale;

use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use std::{fs, io, thread};

use config::NodeLine;
use network::Namespaces;
use processes::{Daemon, Marks};

/// The longest [`Cluster::start`] waits for the daemons to come up and the nodes to be idle.
const STARTUP_LIMIT: Duration = Duration::from_secs(30);

/// The longest one `sinfo` may take while waiting for the nodes.
const QUERY_LIMIT: Duration = Duration::from_secs(5);

/// How long the cluster's processes get to end after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Where the programs are looked for besides `PATH` (the daemons live in `/usr/sbin`).
const PROGRAM_DIRS: [&str; 4] = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"];

/// One node of a test cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// The node's name: a letter, then letters and digits (`n0`, `node1`).
    pub name: String,
    /// CPUs Slurm believes the node has (it may be more than the machine has).
    pub cpus: u32,
}

impl NodeSpec {
    pub fn new(name: &str, cpus: u32) -> NodeSpec {
        NodeSpec {
            name: name.to_string(),
            cpus,
        }
    }
}

/// Why a cluster could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// This machine cannot run the cluster (packages missing, not root, namespaces refused):
    /// a test reports the reason and skips.
    #[error("this machine cannot run a Slurm test cluster: {0}")]
    Unavailable(String),
    /// The nodes asked for are not a valid cluster.
    #[error("bad node list: {0}")]
    BadNodes(String),
    /// A file operation or a program start failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A setup command failed.
    #[error("`{what}` failed ({status}): {stderr}")]
    Command {
        what: String,
        status: ExitStatus,
        stderr: String,
    },
    /// A daemon ended while the cluster was starting; its output and log say why.
    #[error("{name} ended while the cluster was starting ({status}); its last output:{tail}")]
    DaemonEnded {
        name: String,
        status: ExitStatus,
        tail: String,
    },
    /// The nodes were not all idle in time.
    #[error("the nodes were not idle after {waited:?} (sinfo: {states}); the daemons' last output:{tails}")]
    NotReady {
        waited: Duration,
        states: String,
        tails: String,
    },
}

impl SlurmError {
    /// Whether the machine cannot run Slurm, as opposed to the harness failing.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, SlurmError::Unavailable(_))
    }

    fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> SlurmError {
        let what = what.into();
        move |source| SlurmError::Io { what, source }
    }
}

/// The programs a cluster runs, found on this machine.
#[derive(Debug)]
struct Programs {
    munged: PathBuf,
    slurmctld: PathBuf,
    slurmd: PathBuf,
    sinfo: PathBuf,
}

impl Programs {
    fn find() -> Result<Programs, SlurmError> {
        Ok(Programs {
            munged: find_program("munged", "munge")?,
            slurmctld: find_program("slurmctld", "slurmctld")?,
            slurmd: find_program("slurmd", "slurmd")?,
            sinfo: find_program("sinfo", "slurm-client")?,
        })
    }
}

/// `name` in `PATH` or [`PROGRAM_DIRS`]; missing, it is [`SlurmError::Unavailable`] naming
/// the Debian package that has it.
fn find_program(name: &str, package: &str) -> Result<PathBuf, SlurmError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(PROGRAM_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            SlurmError::Unavailable(format!(
                "{name} is not installed (Debian package {package}; scripts/install-deps installs it)"
            ))
        })
}

/// A Slurm cluster of its own for a test. See the [module documentation](self).
#[derive(Debug)]
pub struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    nodes: Vec<NodeLine>,
    programs: Programs,
    namespaces: Option<Namespaces>,
    daemons: Vec<Daemon>,
    startup: Duration,
}

impl Cluster {
    /// Starts `munged`, `slurmctld` and a `slurmd` per node in a fresh temporary directory,
    /// and waits (at most 30 s) until every node is idle. One node runs on the loopback; more
    /// run in network namespaces (see the [module documentation](self)).
    /// [`SlurmError::Unavailable`] says this machine cannot run Slurm; any other error is a
    /// failure, with the daemons' last output.
    pub fn start(nodes: &[NodeSpec]) -> Result<Cluster, SlurmError> {
        let began = Instant::now();
        check_nodes(nodes)?;
        // SAFETY: geteuid(2) has no arguments and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(SlurmError::Unavailable(
                "Slurm's daemons must run as root, and this test does not".into(),
            ));
        }
        let programs = Programs::find()?;
        let several = nodes.len() > 1;
        let (ip, nsenter) = if several {
            (
                Some(find_program("ip", "iproute2")?),
                Some(find_program("nsenter", "util-linux")?),
            )
        } else {
            (None, None)
        };
        let ip_for_stale = ip.clone().or_else(|| find_program("ip", "iproute2").ok());
        stale::clean_up(&std::env::temp_dir(), ip_for_stale.as_deref());
        let dir = make_directory()?;
        let mut cluster = Cluster {
            conf: dir.join("slurm.conf"),
            dir,
            nodes: Vec::new(),
            programs,
            namespaces: None,
            daemons: Vec::new(),
            startup: Duration::ZERO,
        };
        let deadline = began + STARTUP_LIMIT;
        let munge_socket = cluster.start_munged(deadline)?;
        let controller_address = if let (Some(ip), Some(nsenter)) = (ip, nsenter) {
            let prefix = cluster
                .dir
                .file_name()
                .expect("the cluster directory has a name")
                .to_string_lossy()
                .into_owned();
            cluster.namespaces = Some(Namespaces::create(&prefix, nodes.len(), ip, nsenter)?);
            cluster.nodes = lines(nodes, network::node_address);
            network::HUB_ADDRESS
        } else {
            cluster.nodes = lines(nodes, |_| Ipv4Addr::LOCALHOST);
            Ipv4Addr::LOCALHOST
        };
        let (controller_port, slurmd_port) = free_ports()?;
        let text = config::render(&config::Settings {
            dir: &cluster.dir,
            controller_host: &short_host_name(),
            controller_address,
            controller_port,
            slurmd_port,
            munge_socket: &munge_socket,
            nodes: &cluster.nodes,
        });
        fs::write(&cluster.conf, text).map_err(SlurmError::io("cannot write slurm.conf"))?;
        fs::write(cluster.dir.join("plugstack.conf"), "")
            .map_err(SlurmError::io("cannot write plugstack.conf"))?;
        cluster.start_slurm_daemons()?;
        cluster.wait_until_idle(deadline)?;
        cluster.startup = began.elapsed();
        tracing::info!(
            "Slurm test cluster of {} node(s) in {} ready after {:?}",
            cluster.nodes.len(),
            cluster.dir.display(),
            cluster.startup
        );
        Ok(cluster)
    }

    /// Runs `srun args` (e.g. `["--mpi=pmi2", "-N", "2", "-n", "4", program]`) on the cluster,
    /// with [`Cluster::command`]'s environment, for at most `limit`. Past it srun gets SIGTERM
    /// (it cancels the step), then SIGKILL, and the result is an error of kind
    /// [`io::ErrorKind::TimedOut`] holding what srun had printed.
    pub fn srun(&self, args: &[&str], limit: Duration) -> io::Result<Output> {
        let mut command = self.command("srun");
        command.args(args);
        self.output(command, limit)
    }

    /// Runs `command` (made by [`Cluster::command`]) for at most `limit`, with stdin from
    /// /dev/null, collecting its output; past the limit as [`Cluster::srun`].
    pub fn output(&self, command: Command, limit: Duration) -> io::Result<Output> {
        processes::output_within(command, limit)
    }

    /// `program` (`srun`, `sbatch`, `scontrol`, ... or any program) set up as a client of
    /// the cluster: `SLURM_CONF` set, the caller's `SLURM_*` and `PMI_*` variables removed,
    /// and, with several nodes, in the hub network namespace where slurmctld runs.
    pub fn command(&self, program: impl AsRef<Path>) -> Command {
        let mut command = match &self.namespaces {
            Some(namespaces) => namespaces.enter(namespaces.hub(), program.as_ref()),
            None => Command::new(program.as_ref()),
        };
        self.set_environment(&mut command);
        command
    }

    /// The cluster's `slurm.conf` (what `SLURM_CONF` names).
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// The cluster's directory (configuration, state, spool, logs); removed on drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The node names, in the order given to [`Cluster::start`].
    pub fn node_names(&self) -> Vec<&str> {
        self.nodes.iter().map(|node| node.name.as_str()).collect()
    }

    /// Where node `name`'s slurmd and tasks are reached: 127.0.0.1 for a one-node cluster,
    /// its namespace's address otherwise.
    pub fn node_address(&self, name: &str) -> Option<Ipv4Addr> {
        self.nodes
            .iter()
            .find(|node| node.name == name)
            .map(|node| node.address)
    }

    /// The network namespaces the cluster made (none for one node); deleted on drop.
    pub fn namespaces(&self) -> Vec<String> {
        self.namespaces
            .as_ref()
            .map(|namespaces| namespaces.names().to_vec())
            .unwrap_or_default()
    }

    /// The process ids of the daemons (munged, slurmctld, the slurmds); ended on drop.
    pub fn daemon_pids(&self) -> Vec<u32> {
        self.daemons
            .iter()
            .map(|daemon| daemon.child.id())
            .collect()
    }

    /// How long [`Cluster::start`] took, until every node was idle.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// The last lines of every daemon's output and log, to print when a test fails.
    pub fn log_tails(&self) -> String {
        self.daemons
            .iter()
            .map(|daemon| format!("\n  {}:{}", daemon.name, daemon.tail()))
            .collect()
    }

    /// Sets `SLURM_CONF` and removes inherited `SLURM_*`/`PMI_*` variables (a test run
    /// inside a real Slurm job must not talk to that one).
    fn set_environment(&self, command: &mut Command) {
        for (name, _) in std::env::vars_os() {
            let bytes = name.as_bytes();
            if bytes.starts_with(b"SLURM_") || bytes.starts_with(b"PMI_") {
                command.env_remove(&name);
            }
        }
        command.env("SLURM_CONF", &self.conf);
    }

    /// What marks a process as this cluster's (see [`Marks`]).
    fn marks(&self) -> Marks {
        let mut environment = b"SLURM_CONF=".to_vec();
        environment.extend_from_slice(self.conf.as_os_str().as_bytes());
        Marks {
            environment,
            namespaces: self
                .namespaces
                .as_ref()
                .map(Namespaces::inodes)
                .unwrap_or_default(),
        }
    }

    /// Makes a munge key and starts `munged` on a socket in `run/`; returns the socket once
    /// it exists. munged wants every directory on the socket's path searchable by all, and
    /// the key's and log's directories closed to others.
    fn start_munged(&mut self, deadline: Instant) -> Result<PathBuf, SlurmError> {
        let munge_dir = self.dir.join("munge");
        let key = munge_dir.join("munge.key");
        let mut key_bytes = vec![0u8; 1024];
        {
            use std::io::Read;
            fs::File::open("/dev/urandom")
                .and_then(|mut random| random.read_exact(&mut key_bytes))
                .map_err(SlurmError::io("cannot read /dev/urandom for the munge key"))?;
        }
        fs::write(&key, &key_bytes).map_err(SlurmError::io("cannot write the munge key"))?;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o400))
            .map_err(SlurmError::io("cannot restrict the munge key"))?;
        let socket = self.dir.join("run").join("munge.sock");
        let mut command = Command::new(&self.programs.munged);
        command
            .arg("--foreground")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}/run/munged.pid", self.dir.display()))
            .arg(format!("--log-file={}/munged.log", munge_dir.display()))
            .arg(format!("--seed-file={}/munged.seed", munge_dir.display()));
        self.set_environment(&mut command);
        let log = Some(munge_dir.join("munged.log"));
        self.spawn("munged", command, "munged.out", log)?;
        let mut pause = processes::FIRST_PAUSE;
        while !socket.exists() {
            self.check_daemons()?;
            if Instant::now() >= deadline {
                return Err(SlurmError::NotReady {
                    waited: STARTUP_LIMIT,
                    states: "munged made no socket".into(),
                    tails: self.log_tails(),
                });
            }
            thread::sleep(pause);
            pause = (pause * 2).min(processes::LONGEST_PAUSE);
        }
        Ok(socket)
    }

    /// Starts slurmctld, then a slurmd per node (each in its namespace if there are several).
    fn start_slurm_daemons(&mut self) -> Result<(), SlurmError> {
        let conf = self.conf.clone();
        let mut command = self.in_namespace(None, &self.programs.slurmctld.clone());
        command.arg("-D").arg("-f").arg(&conf);
        self.set_environment(&mut command);
        let log = Some(self.dir.join("log").join("slurmctld.log"));
        self.spawn("slurmctld", command, "slurmctld.out", log)?;
        for index in 0..self.nodes.len() {
            let name = self.nodes[index].name.clone();
            let spool = self.dir.join("spool").join(&name);
            fs::create_dir_all(&spool)
                .map_err(SlurmError::io(format!("cannot make {}", spool.display())))?;
            let mut command = self.in_namespace(Some(index), &self.programs.slurmd.clone());
            command.arg("-D").arg("-N").arg(&name).arg("-f").arg(&conf);
            self.set_environment(&mut command);
            let log = Some(self.dir.join("log").join(format!("slurmd-{name}.log")));
            self.spawn(
                &format!("slurmd {name}"),
                command,
                &format!("slurmd-{name}.out"),
                log,
            )?;
        }
        Ok(())
    }

    /// `program` in node `index`'s namespace, or the hub's for `None` (with several nodes).
    fn in_namespace(&self, node: Option<usize>, program: &Path) -> Command {
        match (&self.namespaces, node) {
            (Some(namespaces), Some(index)) => namespaces.enter(namespaces.node(index), program),
            (Some(namespaces), None) => namespaces.enter(namespaces.hub(), program),
            (None, _) => Command::new(program),
        }
    }

    fn spawn(
        &mut self,
        name: &str,
        command: Command,
        output: &str,
        log: Option<PathBuf>,
    ) -> Result<(), SlurmError> {
        let output = self.dir.join("log").join(output);
        let daemon = Daemon::spawn(name, command, output, log)
            .map_err(SlurmError::io(format!("cannot start {name}")))?;
        self.daemons.push(daemon);
        Ok(())
    }

    /// An error if a daemon has ended: [`SlurmError::Unavailable`] where its output says the
    /// machine lacks what it needs, [`SlurmError::DaemonEnded`] otherwise.
    fn check_daemons(&mut self) -> Result<(), SlurmError> {
        for daemon in &mut self.daemons {
            if let Some(status) = daemon.exited() {
                let tail = daemon.tail();
                if tail.contains("Unable to initialize cgroup plugin") {
                    return Err(SlurmError::Unavailable(format!(
                        "{} needs a cgroup file system under /sys/fs/cgroup:{tail}",
                        daemon.name
                    )));
                }
                return Err(SlurmError::DaemonEnded {
                    name: daemon.name.clone(),
                    status,
                    tail,
                });
            }
        }
        Ok(())
    }

    /// Polls `sinfo` until every node is idle, a daemon ends, or `deadline` passes.
    fn wait_until_idle(&mut self, deadline: Instant) -> Result<(), SlurmError> {
        let mut pause = processes::FIRST_PAUSE;
        loop {
            self.check_daemons()?;
            let mut sinfo = self.command(&self.programs.sinfo);
            sinfo.args(["--noheader", "--Node", "--format=%N %T"]);
            let states = match processes::output_within(sinfo, QUERY_LIMIT) {
                Ok(output) if output.status.success() => {
                    let states = String::from_utf8_lossy(&output.stdout).trim().to_string();
                    if self.all_idle(&states) {
                        return Ok(());
                    }
                    states
                }
                Ok(output) => String::from_utf8_lossy(&output.stderr).trim().to_string(),
                Err(error) => error.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(SlurmError::NotReady {
                    waited: STARTUP_LIMIT,
                    states,
                    tails: self.log_tails(),
                });
            }
            thread::sleep(pause);
            pause = (pause * 2).min(processes::LONGEST_PAUSE);
        }
    }

    /// Whether `sinfo`'s `<node> <state>` lines say every node is idle.
    fn all_idle(&self, states: &str) -> bool {
        self.nodes.iter().all(|node| {
            states.lines().any(|line| {
                let mut words = line.split_whitespace();
                words.next() == Some(node.name.as_str()) && words.next() == Some("idle")
            })
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let marks = self.marks();
        let left = processes::end_all(&mut self.daemons, &marks, STOP_GRACE);
        if !left.is_empty() {
            tracing::warn!("processes of the Slurm test cluster still running: {left:?}");
        }
        if let Some(namespaces) = &mut self.namespaces {
            namespaces.delete();
        }
        if let Err(error) = fs::remove_dir_all(&self.dir) {
            tracing::warn!("cannot remove {}: {error}", self.dir.display());
        }
    }
}

/// Checks that `nodes` is a cluster Slurm accepts.
fn check_nodes(nodes: &[NodeSpec]) -> Result<(), SlurmError> {
    if nodes.is_empty() {
        return Err(SlurmError::BadNodes(
            "a cluster needs at least one node".into(),
        ));
    }
    if nodes.len() > network::MAX_NODES {
        return Err(SlurmError::BadNodes(format!(
            "at most {} nodes, not {}",
            network::MAX_NODES,
            nodes.len()
        )));
    }
    for (index, node) in nodes.iter().enumerate() {
        let mut chars = node.name.chars();
        let good_name = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric());
        if !good_name {
            return Err(SlurmError::BadNodes(format!(
                "node name {:?}: use a letter, then letters and digits",
                node.name
            )));
        }
        if node.cpus == 0 {
            return Err(SlurmError::BadNodes(format!(
                "node {} has no CPU",
                node.name
            )));
        }
        if nodes[..index].iter().any(|other| other.name == node.name) {
            return Err(SlurmError::BadNodes(format!("node {} twice", node.name)));
        }
    }
    Ok(())
}

/// The node lines for `nodes`, node `i` at `address(i)`.
fn lines(nodes: &[NodeSpec], address: impl Fn(usize) -> Ipv4Addr) -> Vec<NodeLine> {
    nodes
        .iter()
        .enumerate()
        .map(|(index, node)| NodeLine {
            name: node.name.clone(),
            cpus: node.cpus,
            address: address(index),
        })
        .collect()
}

/// Makes `<temp>/mpislurm-<pid>-<n>` (see `stale.rs`) with the layout the daemons want: the directory
/// searchable by all (munged's socket is below it), `run/` readable by all, the rest private.
fn make_directory() -> Result<PathBuf, SlurmError> {
    static SEQUENCE: AtomicU32 = AtomicU32::new(0);
    let temp = std::env::temp_dir();
    if temp
        .to_string_lossy()
        .contains(|c: char| c.is_whitespace() || c == '#' || c == '"')
    {
        return Err(SlurmError::Unavailable(format!(
            "the temporary directory {} has characters slurm.conf cannot hold; set TMPDIR",
            temp.display()
        )));
    }
    let dir = loop {
        let number = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let dir = temp.join(format!("{}{}-{number}", stale::PREFIX, std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => break dir,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && number < 1000 => {}
            Err(error) => {
                return Err(SlurmError::Io {
                    what: format!("cannot make {}", dir.display()),
                    source: error,
                })
            }
        }
    };
    let layout: [(&str, u32); 6] = [
        ("", 0o711),
        ("run", 0o755),
        ("munge", 0o700),
        ("state", 0o700),
        ("spool", 0o700),
        ("log", 0o700),
    ];
    for (name, mode) in layout {
        let path = dir.join(name);
        let made = if name.is_empty() {
            Ok(())
        } else {
            fs::create_dir(&path)
        };
        made.and_then(|()| fs::set_permissions(&path, fs::Permissions::from_mode(mode)))
            .map_err(SlurmError::io(format!("cannot make {}", path.display())))
            .inspect_err(|_| {
                let _ = fs::remove_dir_all(&dir);
            })?;
    }
    Ok(dir)
}

/// Two distinct TCP ports free on the loopback now (for slurmctld and slurmd).
fn free_ports() -> Result<(u16, u16), SlurmError> {
    let bind = || {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| Ok((listener.local_addr()?.port(), listener)))
            .map_err(SlurmError::io("cannot find a free port on 127.0.0.1"))
    };
    // Both listeners are held until both ports are known, so they differ.
    let (first, _held_first) = bind()?;
    let (second, _held_second) = bind()?;
    Ok((first, second))
}

/// The machine's host name up to its first dot: slurmctld runs only where its
/// `SlurmctldHost` names the host it is on.
fn short_host_name() -> String {
    let name = fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    let short = name.split('.').next().unwrap_or_default();
    if short.is_empty() {
        "localhost".to_string()
    } else {
        short.to_string()
    }
}
