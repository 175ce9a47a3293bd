//! Network namespaces as test hosts.
//!
//! [`Hosts::create`] makes `n` "hosts" on this one machine: each is a network namespace with
//! loopback up and one interface, [`INTERFACE`], whose address from TEST-NET-1 ([`SUBNET`],
//! host `i` at `192.0.2.(i+1)`) exists only inside these namespaces. Each host's interface is
//! one end of a veth pair whose other end is a port of a bridge in a "switch" namespace, so any
//! number of hosts see each other and cutting one host's link ([`Hosts::set_link`]) affects that
//! host only. Nothing is created in the namespace of the test itself; dropping the [`Hosts`]
//! kills what runs in its namespaces and removes them, their links, and the files it wrote.
//!
//! Launchers reach the hosts through [`Hosts::launcher_exec`], a script that takes the place of
//! `ssh`; [`hydra_command`] and [`openmpi_command`] are the command lines with which MPICH's and
//! Open MPI's launchers run one rank on each host over the veth links.
//!
//! Names are `mpins-<pid>-<counter>-...`, unique per test process and per call, so tests in
//! parallel do not clash; namespaces, `/etc/netns/` entries and temporary directories left by a
//! crashed earlier run (whose pid is gone) are removed by the next [`Hosts::create`].

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The first part of every name this module gives a namespace, directory or file.
const PREFIX: &str = "mpins";

/// The hosts' subnet (TEST-NET-1, RFC 5737: never routed, so it exists only in these namespaces).
pub const SUBNET: &str = "192.0.2.0/24";

/// The name of each host's network interface (its end of the veth pair to the switch).
pub const INTERFACE: &str = "eth0";

/// The most hosts one [`Hosts`] can hold (192.0.2.1 to 192.0.2.253).
pub const MAX_HOSTS: usize = 253;

/// The bridge in the switch namespace.
const BRIDGE: &str = "br0";

/// Where `ip netns exec NS` finds files to bind-mount over those in `/etc`.
const ETC_NETNS: &str = "/etc/netns";

/// How long killing the processes of a namespace may take before it is given up.
const KILL_LIMIT: Duration = Duration::from_secs(5);

/// Numbers the [`Hosts`] of this process.
static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Hosts made of network namespaces; see the module documentation.
#[derive(Debug)]
pub struct Hosts {
    /// `mpins-<pid>-<counter>`: the start of every name this instance gives.
    prefix: String,
    /// The switch namespace, once created.
    switch: Option<String>,
    /// The host namespaces created so far, host `i` at index `i`.
    namespaces: Vec<String>,
    /// The temporary directory holding the launcher-exec script, once created.
    dir: Option<PathBuf>,
    /// `/etc/netns/<ns>` directories written.
    etc_dirs: Vec<PathBuf>,
    /// The launcher-exec script.
    script: PathBuf,
}

impl Hosts {
    /// Creates `n` hosts. Err(reason) when they cannot be made, above all when the kernel or
    /// the sandbox forbids network namespaces (tests then skip, printing the reason).
    pub fn create(n: usize) -> Result<Hosts, String> {
        if n == 0 || n > MAX_HOSTS {
            return Err(format!(
                "cannot make {n} hosts: between 1 and {MAX_HOSTS} fit in {SUBNET}"
            ));
        }
        remove_stale();
        let prefix = format!(
            "{PREFIX}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(&prefix);
        let mut hosts = Hosts {
            script: dir.join("launcher-exec"),
            prefix,
            switch: None,
            namespaces: Vec::new(),
            dir: None,
            etc_dirs: Vec::new(),
        };
        // On an error, dropping `hosts` removes whatever was made.
        hosts.build(n, dir)?;
        tracing::debug!(prefix = %hosts.prefix, n, "network namespace hosts created");
        Ok(hosts)
    }

    /// Makes the switch, the `n` hosts, their hosts files and the launcher-exec script.
    fn build(&mut self, n: usize, dir: PathBuf) -> Result<(), String> {
        let switch = format!("{}-sw", self.prefix);
        ip(&["netns", "add", &switch]).map_err(|e| {
            format!("network namespaces are not available here (needs root or CAP_SYS_ADMIN): {e}")
        })?;
        self.switch = Some(switch.clone());
        ip(&["-n", &switch, "link", "set", "lo", "up"])?;
        ip(&["-n", &switch, "link", "add", BRIDGE, "type", "bridge"])?;
        ip(&["-n", &switch, "link", "set", BRIDGE, "up"])?;
        for i in 0..n {
            let ns = format!("{}-h{i}", self.prefix);
            ip(&["netns", "add", &ns])?;
            self.namespaces.push(ns.clone());
            let port = switch_port(i);
            let address = format!("{}/24", host_addr(i));
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&[
                "-n", &switch, "link", "add", &port, "type", "veth", "peer", "name", INTERFACE,
                "netns", &ns,
            ])?;
            ip(&["-n", &switch, "link", "set", &port, "master", BRIDGE])?;
            ip(&["-n", &switch, "link", "set", &port, "up"])?;
            ip(&["-n", &ns, "addr", "add", &address, "dev", INTERFACE])?;
            ip(&["-n", &ns, "link", "set", INTERFACE, "up"])?;
        }
        self.write_hosts_files()?;
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        self.dir = Some(dir);
        std::fs::write(&self.script, self.launcher_exec_script())
            .and_then(|()| {
                std::fs::set_permissions(&self.script, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("cannot write {}: {e}", self.script.display()))?;
        Ok(())
    }

    /// Writes `/etc/netns/<ns>/hosts` for every host: this machine's `/etc/hosts` and a line
    /// `192.0.2.(i+1) host<i>` per host, so that inside the namespaces (for programs started
    /// with `ip netns exec`, which bind-mounts the file over `/etc/hosts`) the host names
    /// resolve.
    fn write_hosts_files(&mut self) -> Result<(), String> {
        let mut text = std::fs::read_to_string("/etc/hosts").unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = writeln!(text, "# network namespace hosts {}", self.prefix);
        for i in 0..self.len() {
            let _ = writeln!(text, "{} {}", host_addr(i), host_name(i));
        }
        for ns in self.namespaces.clone() {
            let dir = Path::new(ETC_NETNS).join(&ns);
            let path = dir.join("hosts");
            // Another test may remove an empty /etc/netns between our creating and using it.
            self.etc_dirs.push(dir.clone());
            let mut tries = 0;
            loop {
                match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &text)) {
                    Ok(()) => break,
                    Err(_) if tries < 3 => tries += 1,
                    Err(e) => return Err(format!("cannot write {}: {e}", path.display())),
                }
            }
        }
        Ok(())
    }

    /// The text of the launcher-exec script.
    fn launcher_exec_script(&self) -> String {
        let mut cases = String::new();
        let mut known = Vec::new();
        for (i, ns) in self.namespaces.iter().enumerate() {
            let _ = writeln!(cases, "    {}|{}) ns={ns} ;;", host_addr(i), host_name(i));
            known.push(format!("{} ({})", host_addr(i), host_name(i)));
        }
        format!(
            r#"#!/bin/sh
# launcher-exec of the network namespace hosts {prefix}.
# Called as ssh is, `SCRIPT [SSH-OPTIONS] [USER@]HOST COMMAND...`, it runs COMMAND in HOST's
# network namespace: like ssh, it joins the words of COMMAND with spaces for a shell to read.
# That shell is bash where there is one (as root's login shell, and it replaces itself with a
# lone command, so signals to this script's process reach the command), else sh.
while [ "$#" -gt 0 ]; do
    case "$1" in
        -[BbcDEeFIiJLlmOoPpQRSWw]) [ "$#" -ge 2 ] || break; shift 2 ;;
        --) shift; break ;;
        -*) shift ;;
        *) break ;;
    esac
done
if [ "$#" -eq 0 ]; then
    echo "launcher-exec: no host given" >&2
    exit 255
fi
host=${{1##*@}}
shift
case "$host" in
{cases}    *)
        echo "launcher-exec: unknown host '$host': the hosts are {known}" >&2
        exit 255 ;;
esac
if [ "$#" -eq 0 ]; then
    echo "launcher-exec: no command for $host (there are no interactive logins)" >&2
    exit 255
fi
if command -v bash >/dev/null 2>&1; then shell=bash; else shell=sh; fi
exec ip netns exec "$ns" "$shell" -c "$*"
"#,
            prefix = self.prefix,
            known = known.join(", "),
        )
    }

    /// The number of hosts.
    pub fn len(&self) -> usize {
        self.namespaces.len()
    }

    /// Whether there are no hosts (never, for a created [`Hosts`]).
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
    }

    /// Host `i`'s address, `192.0.2.(i+1)`; use it as its host name.
    pub fn addr(&self, i: usize) -> Ipv4Addr {
        assert!(i < self.len(), "host {i} of {}", self.len());
        host_addr(i)
    }

    /// Host `i`'s name, `host<i>`, which resolves to [`Hosts::addr`] inside the namespaces and
    /// which the launcher-exec script knows.
    pub fn name(&self, i: usize) -> String {
        assert!(i < self.len(), "host {i} of {}", self.len());
        host_name(i)
    }

    /// Host `i`'s network namespace.
    pub fn netns(&self, i: usize) -> &str {
        &self.namespaces[i]
    }

    /// The launcher-exec script: `SCRIPT [SSH-OPTIONS] HOST CMD ARGS...` runs `CMD ARGS...` in
    /// HOST's namespace (HOST its address or its name), with ssh's semantics: the words are
    /// joined with spaces and read by `bash -c` (`sh -c` without bash), so a launcher's quoting
    /// works as over ssh, and a lone command replaces the shell (signals to the script's
    /// process reach it). An
    /// unknown host exits with 255 and a message naming it, as ssh does. Unlike ssh, the
    /// caller's environment and working directory pass through to the command.
    pub fn launcher_exec(&self) -> &Path {
        &self.script
    }

    /// A command that runs `program` in host `i` (`ip netns exec NS program`; add arguments
    /// with `.arg`/`.args`).
    pub fn command_in(&self, i: usize, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", self.netns(i)]).arg(program);
        command
    }

    /// Cuts (`up == false`) or restores host `i`'s link: its port on the switch goes down or
    /// up, as if its cable were pulled or plugged back. The host keeps its address and route;
    /// what it sends is lost while the link is down. Panics if `ip` fails.
    pub fn set_link(&self, i: usize, up: bool) {
        let switch = self
            .switch
            .as_deref()
            .expect("a created Hosts has a switch");
        let state = if up { "up" } else { "down" };
        if let Err(e) = ip(&["-n", switch, "link", "set", &switch_port(i), state]) {
            panic!("cannot set host {i}'s link {state}: {e}");
        }
    }

    /// Kills (SIGKILL) every process in host `i`'s namespace and waits, a few seconds at most,
    /// until none is left.
    pub fn kill_host(&self, i: usize) {
        kill_all_in(self.netns(i));
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        let all: Vec<String> = self
            .namespaces
            .iter()
            .chain(&self.switch)
            .cloned()
            .collect();
        for ns in &all {
            kill_all_in(ns);
        }
        // Deleting a namespace destroys the veth ends and the bridge in it.
        for ns in &all {
            let _ = ip(&["netns", "del", ns]);
        }
        for dir in &self.etc_dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
        if !self.etc_dirs.is_empty() {
            // Only succeeds when empty, i.e. when no one else uses it.
            let _ = std::fs::remove_dir(ETC_NETNS);
        }
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        tracing::debug!(prefix = %self.prefix, "network namespace hosts removed");
    }
}

/// Host `i`'s address.
fn host_addr(i: usize) -> Ipv4Addr {
    let last = u8::try_from(i + 1).expect("at most MAX_HOSTS hosts");
    Ipv4Addr::new(192, 0, 2, last)
}

/// Host `i`'s name.
fn host_name(i: usize) -> String {
    format!("host{i}")
}

/// The switch's port for host `i`.
fn switch_port(i: usize) -> String {
    format!("h{i}")
}

/// Runs `ip ARGS`; Err(what failed and why).
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip` (install iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The processes in namespace `ns` (none if it cannot be read).
fn pids_in(ns: &str) -> Vec<String> {
    Command::new("ip")
        .args(["netns", "pids", ns])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|out| {
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Kills every process in namespace `ns`, again as long as new ones appear, for
/// [`KILL_LIMIT`] at most.
fn kill_all_in(ns: &str) {
    let start = Instant::now();
    loop {
        let pids = pids_in(ns);
        if pids.is_empty() || start.elapsed() > KILL_LIMIT {
            return;
        }
        let _ = Command::new("kill")
            .arg("-KILL")
            .args(&pids)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid in a name `mpins-<pid>-...`, if it is one of ours.
fn creator_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?
        .strip_prefix('-')?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Whether `name` is one of ours whose creator is gone.
fn is_stale(name: &str) -> bool {
    creator_pid(name).is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// The names in `dir` that [`is_stale`].
fn stale_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(is_stale))
        .map(|entry| entry.path())
        .collect()
}

/// Removes the namespaces, `/etc/netns/` entries and temporary directories of earlier runs
/// that ended without dropping their [`Hosts`].
fn remove_stale() {
    let listing = Command::new("ip")
        .args(["netns", "list"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    for ns in listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
    {
        if is_stale(ns) {
            tracing::info!(
                ns,
                "removing a network namespace left by an ended test process"
            );
            kill_all_in(ns);
            let _ = ip(&["netns", "del", ns]);
        }
    }
    for dir in stale_entries(Path::new(ETC_NETNS))
        .into_iter()
        .chain(stale_entries(&std::env::temp_dir()))
    {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// MPICH's launcher (`mpiexec.hydra`, Debian's MPICH 4.0 with the ch4:ucx device) running
/// `program`, one rank on each host, started from host 0; add the program's arguments.
///
/// What it takes across namespace hosts:
/// - Hydra runs in host 0: its proxies connect back to it at host 0's address, which only the
///   hosts reach. The hosts are given by address; Hydra starts host 0's proxy itself and the
///   others through the launcher-exec script in the place of ssh.
/// - `UCX_TLS=tcp,self`: all the hosts are one machine, so UCX would otherwise take shared
///   memory between them and nothing would cross the veth links. `UCX_NET_DEVICES` keeps
///   its TCP on the hosts' interface.
/// - `LD_LIBRARY_PATH` is removed: under `cargo test` it names the directory of our
///   `libmpi.so`, which answers to MPICH's library names.
pub fn hydra_command(hosts: &Hosts, program: impl AsRef<OsStr>) -> Command {
    let addresses: Vec<String> = (0..hosts.len())
        .map(|i| hosts.addr(i).to_string())
        .collect();
    let mut command = hosts.command_in(0, "mpiexec.hydra");
    command
        .env_remove("LD_LIBRARY_PATH")
        .arg("-launcher")
        .arg("ssh")
        .arg("-launcher-exec")
        .arg(hosts.launcher_exec())
        .args(["-hosts", &addresses.join(",")])
        .args(["-n", &hosts.len().to_string(), "-ppn", "1"])
        .args(["-iface", INTERFACE])
        .args(["-genv", "UCX_TLS", "tcp,self"])
        .args(["-genv", "UCX_NET_DEVICES", INTERFACE])
        .arg(program);
    command
}

/// Open MPI's launcher (`mpirun.openmpi`, Debian's Open MPI 4.1) running `program`, one rank
/// on each host, started from host 0; add the program's arguments.
///
/// What it takes across namespace hosts:
/// - as for [`hydra_command`], `mpirun` runs in host 0 and reaches the others through the
///   launcher-exec script (`plm_rsh_agent`); its daemons and the ranks talk over [`SUBNET`]
///   only (`oob_tcp_if_include`, `btl_tcp_if_include`);
/// - `pml ob1` with `btl tcp,self`: shared memory (vader) would join the ranks of different
///   hosts, being one machine;
/// - `--bind-to none`: every host has the same cores, and Open MPI's default binding puts
///   rank 0 of each host on core 0 of the one machine: the ranks then share a core and a
///   round trip takes a scheduler tick (4 ms).
/// - `--allow-run-as-root` (and its variables) when run as root; `LD_LIBRARY_PATH` removed.
pub fn openmpi_command(hosts: &Hosts, program: impl AsRef<OsStr>) -> Command {
    let addresses: Vec<String> = (0..hosts.len())
        .map(|i| hosts.addr(i).to_string())
        .collect();
    let mut command = hosts.command_in(0, "mpirun.openmpi");
    command
        .env_remove("LD_LIBRARY_PATH")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .arg("--allow-run-as-root")
        .args(["--host", &addresses.join(",")])
        .args(["-n", &hosts.len().to_string()])
        .args(["--bind-to", "none"])
        .arg("--mca")
        .arg("plm_rsh_agent")
        .arg(hosts.launcher_exec())
        .args(["--mca", "pml", "ob1"])
        .args(["--mca", "btl", "tcp,self"])
        .args(["--mca", "btl_tcp_if_include", SUBNET])
        .args(["--mca", "oob_tcp_if_include", SUBNET])
        .arg(program);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creator_pid_reads_our_names_only() {
        assert_eq!(creator_pid("mpins-123-4-h0"), Some(123));
        assert_eq!(creator_pid("mpins-123-4"), Some(123));
        assert_eq!(creator_pid("mpinsx-123-4"), None);
        assert_eq!(creator_pid("other-123"), None);
        assert_eq!(creator_pid("mpins-abc-1"), None);
    }

    #[test]
    fn own_names_are_not_stale() {
        assert!(!is_stale(&format!("mpins-{}-0-h1", std::process::id())));
        assert!(!is_stale("unrelated"));
    }

    #[test]
    fn addresses_are_in_test_net_1() {
        assert_eq!(host_addr(0), Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(host_addr(MAX_HOSTS - 1), Ipv4Addr::new(192, 0, 2, 253));
    }
}
