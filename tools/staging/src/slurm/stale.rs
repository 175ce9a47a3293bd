//! What test clusters of dead test processes left: a test killed outright (SIGKILL, a CI
//! time limit) never runs its drops, so its daemons, namespaces and directory outlive it.
//! [`clean_up`] ends and removes them before a new cluster starts.
//!
//! A cluster's directory is `<temp>/mpislurm-<pid>-<n>` and its namespaces start with the
//! same name; a cluster is stale when process `<pid>` no longer runs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::processes::{end_all, is_running, output_within, Marks};

/// The prefix of every test cluster's directory and namespace names.
pub const PREFIX: &str = "mpislurm-";

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

/// Ends and removes the clusters in `temp` whose test process is gone; `ip` deletes their
/// namespaces (without it they are left). Failures are logged, never fatal.
pub fn clean_up(temp: &Path, ip: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = creator(&name) else {
            continue;
        };
        if is_running(pid) {
            continue;
        }
        let dir = entry.path();
        tracing::info!("removing the stale Slurm test cluster {}", dir.display());
        let namespaces = namespaces_of(&name);
        let mut environment = b"SLURM_CONF=".to_vec();
        environment.extend_from_slice(dir.join("slurm.conf").to_string_lossy().as_bytes());
        let marks = Marks {
            environment,
            namespaces: namespaces.iter().map(|(_, inode)| *inode).collect(),
        };
        end_all(&mut [], &marks, Duration::from_secs(1));
        if let Some(ip) = ip {
            for (namespace, _) in &namespaces {
                let mut command = Command::new(ip);
                command.args(["netns", "delete", namespace]);
                let _ = output_within(command, Duration::from_secs(10));
            }
        }
        if let Err(error) = std::fs::remove_dir_all(&dir) {
            tracing::warn!("cannot remove {}: {error}", dir.display());
        }
    }
}

/// The test process that made the cluster named `name` (`mpislurm-<pid>-<n>`).
fn creator(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, number) = rest.split_once('-')?;
    number.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// The namespaces (name and inode) of the cluster named `cluster`.
fn namespaces_of(cluster: &str) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let prefix = format!("{cluster}-");
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&prefix) {
                return None;
            }
            // The namespace mounted on the entry, not the entry itself.
            let inode = std::fs::metadata(entry.path()).ok()?.ino();
            Some((name, inode))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_creator_is_read_from_cluster_names_only() {
        assert_eq!(creator("mpislurm-123-0"), Some(123));
        assert_eq!(creator("mpislurm-123-0-hub"), None);
        assert_eq!(creator("mpislurm-123"), None);
        assert_eq!(creator("other-123-0"), None);
    }
}
