//! Where a test cluster's daemons talk: the machine's loopback (one node), or one network
//! namespace per node joined by a bridge in a hub namespace (several nodes, each a "host").
//!
//! The namespaces use addresses of 192.0.2.0/24 (TEST-NET-1) that exist only inside them: the
//! hub's bridge has 192.0.2.1, node `i` has 192.0.2.(10+i) on its `eth0`, a veth whose other
//! end is a port of the bridge. Nothing routes out of them, and the machine's own namespace
//! gets no interface. Programs enter a namespace with `nsenter --net`, not `ip netns exec`,
//! which would remount `/sys` and so hide `/sys/fs/cgroup` from slurmd (slurmd 22.05 will not
//! start without a cgroup file system, even with proctrack/linuxproc and task/none).

use std::net::Ipv4Addr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::processes::output_within;
use super::SlurmError;

/// The hub's address: slurmctld and srun run there.
pub const HUB_ADDRESS: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);

/// At most this many namespaced nodes (their addresses are 192.0.2.10 up to 192.0.2.249).
pub const MAX_NODES: usize = 240;

/// No `ip` command may take longer than this.
const IP_LIMIT: Duration = Duration::from_secs(10);

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Node `index`'s address in the namespaces.
pub fn node_address(index: usize) -> Ipv4Addr {
    assert!(index < MAX_NODES, "node index {index} out of range");
    Ipv4Addr::new(192, 0, 2, 10 + index as u8)
}

/// The namespaces of one cluster: made by [`Namespaces::create`], deleted by
/// [`Namespaces::delete`] (and on drop).
#[derive(Debug)]
pub struct Namespaces {
    ip: PathBuf,
    nsenter: PathBuf,
    hub: String,
    nodes: Vec<String>,
    /// The ones that exist now, in the order they were made.
    made: Vec<String>,
}

impl Namespaces {
    /// Makes the hub and `count` node namespaces named `<prefix>-hub`, `<prefix>-n<i>`. A
    /// refusal of the first one means this machine does not allow namespaces
    /// ([`SlurmError::Unavailable`]); on any error the ones made are deleted again.
    pub fn create(
        prefix: &str,
        count: usize,
        ip: PathBuf,
        nsenter: PathBuf,
    ) -> Result<Self, SlurmError> {
        assert!(count <= MAX_NODES, "at most {MAX_NODES} namespaced nodes");
        let mut namespaces = Namespaces {
            ip,
            nsenter,
            hub: format!("{prefix}-hub"),
            nodes: (0..count).map(|i| format!("{prefix}-n{i}")).collect(),
            made: Vec::new(),
        };
        let hub = namespaces.hub.clone();
        if let Err(error) = namespaces.ip(&["netns", "add", &hub]) {
            return Err(SlurmError::Unavailable(format!(
                "cannot make a network namespace for the nodes ({error})"
            )));
        }
        namespaces.made.push(hub.clone());
        namespaces.ip(&["-n", &hub, "link", "set", "lo", "up"])?;
        namespaces.ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        let hub_cidr = format!("{HUB_ADDRESS}/24");
        namespaces.ip(&["-n", &hub, "addr", "add", &hub_cidr, "dev", "br0"])?;
        namespaces.ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for index in 0..count {
            let node = namespaces.nodes[index].clone();
            namespaces.ip(&["netns", "add", &node])?;
            namespaces.made.push(node.clone());
            let port = format!("h{index}");
            namespaces.ip(&["-n", &node, "link", "set", "lo", "up"])?;
            namespaces.ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &node,
            ])?;
            namespaces.ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"])?;
            let cidr = format!("{}/24", node_address(index));
            namespaces.ip(&["-n", &node, "addr", "add", &cidr, "dev", "eth0"])?;
            namespaces.ip(&["-n", &node, "link", "set", "eth0", "up"])?;
        }
        Ok(namespaces)
    }

    /// The hub namespace's name.
    pub fn hub(&self) -> &str {
        &self.hub
    }

    /// Node `index`'s namespace name.
    pub fn node(&self, index: usize) -> &str {
        &self.nodes[index]
    }

    /// The names of every namespace that exists now.
    pub fn names(&self) -> &[String] {
        &self.made
    }

    /// `program` to be run in namespace `name` (its arguments follow).
    pub fn enter(&self, name: &str, program: &Path) -> Command {
        let mut command = Command::new(&self.nsenter);
        command
            .arg(format!(
                "--net={}",
                Path::new(NETNS_DIR).join(name).display()
            ))
            .arg("--")
            .arg(program);
        command
    }

    /// The namespace identities (`/proc/<pid>/ns/net` says `net:[<inode>]`) of every namespace
    /// that exists now: a process in one of them belongs to the cluster.
    pub fn inodes(&self) -> Vec<u64> {
        self.made
            .iter()
            .filter_map(|name| std::fs::metadata(Path::new(NETNS_DIR).join(name)).ok())
            .map(|metadata| metadata.ino())
            .collect()
    }

    /// Deletes every namespace made (with their veths and bridge), newest first. Failures
    /// are logged: a namespace that still has processes in it goes away with the last one.
    pub fn delete(&mut self) {
        while let Some(name) = self.made.pop() {
            if let Err(error) = self.ip(&["netns", "delete", &name]) {
                tracing::warn!("cannot delete network namespace {name}: {error}");
            }
        }
    }

    /// Runs `ip args`, bounded in time; the error says what failed.
    fn ip(&self, args: &[&str]) -> Result<(), SlurmError> {
        let mut command = Command::new(&self.ip);
        command.args(args);
        let what = format!("ip {}", args.join(" "));
        let output = output_within(command, IP_LIMIT).map_err(|source| SlurmError::Io {
            what: what.clone(),
            source,
        })?;
        if output.status.success() {
            Ok(())
        } else {
            Err(SlurmError::Command {
                what,
                status: output.status,
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.delete();
    }
}
