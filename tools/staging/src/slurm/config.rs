//! The `slurm.conf` of a test cluster: everything in the cluster's directory, no cgroups, no
//! accounting, root as the Slurm user, and the cluster's own `munged` for authentication.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::Path;

/// The partition every node is in, the default one.
pub const PARTITION: &str = "test";

/// One node line of the configuration.
#[derive(Debug, Clone)]
pub struct NodeLine {
    /// The node's name (`slurmd -N`, what `srun -w` and `SLURMD_NODENAME` say).
    pub name: String,
    /// CPUs Slurm believes the node has (more than the machine's is fine: `config_overrides`).
    pub cpus: u32,
    /// Where slurmctld and the other nodes reach its slurmd.
    pub address: Ipv4Addr,
}

/// What the configuration depends on.
#[derive(Debug)]
pub struct Settings<'a> {
    /// The cluster's directory: state, spool, logs and pid files go below it.
    pub dir: &'a Path,
    /// The name slurmctld checks against the machine's host name (the short host name).
    pub controller_host: &'a str,
    /// Where the clients and slurmds reach slurmctld.
    pub controller_address: Ipv4Addr,
    pub controller_port: u16,
    pub slurmd_port: u16,
    /// The socket of the cluster's own `munged`.
    pub munge_socket: &'a Path,
    pub nodes: &'a [NodeLine],
}

/// Renders `slurm.conf` for `settings`.
pub fn render(settings: &Settings) -> String {
    let dir = settings.dir.display();
    let mut text = String::new();
    let mut line = |key: &str, value: &dyn std::fmt::Display| {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{key}={value}");
    };
    line("ClusterName", &"mpitest");
    line(
        "SlurmctldHost",
        &format_args!(
            "{}({})",
            settings.controller_host, settings.controller_address
        ),
    );
    line("SlurmctldPort", &settings.controller_port);
    line("SlurmdPort", &settings.slurmd_port);
    line("SlurmUser", &"root");
    line("SlurmdUser", &"root");
    line("AuthType", &"auth/munge");
    line("CredType", &"cred/munge");
    line(
        "AuthInfo",
        &format_args!("socket={}", settings.munge_socket.display()),
    );
    line("StateSaveLocation", &format_args!("{dir}/state"));
    line("SlurmdSpoolDir", &format_args!("{dir}/spool/%n"));
    line("SlurmctldPidFile", &format_args!("{dir}/run/slurmctld.pid"));
    line("SlurmdPidFile", &format_args!("{dir}/run/slurmd-%n.pid"));
    line("SlurmctldLogFile", &format_args!("{dir}/log/slurmctld.log"));
    line("SlurmdLogFile", &format_args!("{dir}/log/slurmd-%n.log"));
    line("PlugStackConfig", &format_args!("{dir}/plugstack.conf"));
    line("MailProg", &"/bin/true");
    line("ProctrackType", &"proctrack/linuxproc");
    line("TaskPlugin", &"task/none");
    line("JobAcctGatherType", &"jobacct_gather/none");
    line("AccountingStorageType", &"accounting_storage/none");
    line("SwitchType", &"switch/none");
    line("MpiDefault", &"none");
    line("SchedulerType", &"sched/builtin");
    line("SelectType", &"select/cons_tres");
    line("SelectTypeParameters", &"CR_Core");
    // Trust the node lines below over the hardware slurmd sees (tests ask for more CPUs
    // than the machine has).
    line("SlurmdParameters", &"config_overrides");
    line("ReturnToService", &2);
    // A cancelled or timed-out step is killed 2 s after its SIGTERM, not 30 s.
    line("KillWait", &2);
    for node in settings.nodes {
        let _ = writeln!(
            text,
            "NodeName={} NodeAddr={} CPUs={} State=UNKNOWN",
            node.name, node.address, node.cpus
        );
    }
    let _ = writeln!(
        text,
        "PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_is_below_the_cluster_directory() {
        let nodes = [NodeLine {
            name: "n0".into(),
            cpus: 4,
            address: Ipv4Addr::LOCALHOST,
        }];
        let text = render(&Settings {
            dir: Path::new("/tmp/c"),
            controller_host: "vm",
            controller_address: Ipv4Addr::LOCALHOST,
            controller_port: 40001,
            slurmd_port: 40002,
            munge_socket: Path::new("/tmp/c/run/munge.sock"),
            nodes: &nodes,
        });
        assert!(text.contains("SlurmctldHost=vm(127.0.0.1)\n"), "{text}");
        assert!(text.contains("AuthInfo=socket=/tmp/c/run/munge.sock\n"));
        assert!(text.contains("NodeName=n0 NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN\n"));
        for line in text.lines() {
            if let Some((_, value)) = line.split_once('=') {
                if value.starts_with('/') && !value.starts_with("/bin/") {
                    assert!(value.starts_with("/tmp/c/"), "{line}");
                }
            }
        }
    }
}
