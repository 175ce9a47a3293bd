//! Reading this process's environment: is there a process manager, how to reach it, which
//! protocol to speak, how long to wait.
//!
//! | variable | set by | meaning |
//! |---|---|---|
//! | `PMI_FD` | Hydra, Slurm (pmi2), our `mpirun` (ranks on its host) | inherited connected socket |
//! | `PMI_PORT`, `PMI_ID` | our `mpirun` (ranks on other hosts) | `host:port` to connect to, and the id to present |
//! | `MPI_PMI_KEY` | our `mpirun` (with `PMI_PORT`) | the job's secret, hex, presented in `initack` |
//! | `PMI_RANK`, `PMI_SIZE` | all of them | this rank, the job's size |
//! | `PMI_JOBID` | Slurm's pmi2 plugin | the job id (`fullinit`'s `pmijobid`) |
//! | `MPI_PMI_VERSION` | the user | `1` or `2`: overrides the choice below |
//! | `MPI_PMI_TIMEOUT` | the user | seconds an exchange may take (default 60; 0: no limit) |
//! | `MPI_PMI_FENCE_TIMEOUT` | the user | seconds a fence/barrier may wait (default: no limit) |
//!
//! **Protocol choice** ([`choose_version`]): `MPI_PMI_VERSION` if set; otherwise PMI-2 when
//! the environment is Slurm's pmi2 plugin's (`PMI_JOBID` or `PMI2_SUN_PATH` set: Hydra and our
//! `mpirun` set neither); otherwise PMI-1 (Hydra, our `mpirun`, Slurm's PMI-1). `PMI_FD` wins
//! over `PMI_PORT` when both are set, as in MPICH. Neither set: a singleton, no process manager.
//!
//! Fences and barriers wait for the slowest rank, which may legitimately compute for hours
//! before it reaches the next one, so by default only the ordinary requests have a time
//! limit; a fence still ends when the process manager closes the connection, and over TCP
//! keepalive notices a vanished host (the client sets 10 s idle, 3 probes 5 s apart).

use crate::conn::Patience;
use crate::error::PmiError;
use crate::Version;
use std::os::fd::RawFd;
use std::time::Duration;

pub const FD: &str = "PMI_FD";
pub const PORT: &str = "PMI_PORT";
pub const ID: &str = "PMI_ID";
pub const RANK: &str = "PMI_RANK";
pub const SIZE: &str = "PMI_SIZE";
pub const JOBID: &str = "PMI_JOBID";
pub const PMI2_SUN_PATH: &str = "PMI2_SUN_PATH";
pub const KEY: &str = "MPI_PMI_KEY";
pub const VERSION: &str = "MPI_PMI_VERSION";
pub const TIMEOUT: &str = "MPI_PMI_TIMEOUT";
pub const FENCE_TIMEOUT: &str = "MPI_PMI_FENCE_TIMEOUT";

/// Default for `MPI_PMI_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How to reach the process manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// An inherited connected descriptor.
    Fd(RawFd),
    /// A TCP address, with the id and job key to present in `initack`.
    Port {
        address: String,
        id: usize,
        key: Option<String>,
    },
}

/// Everything the environment says about the process manager.
#[derive(Debug, Clone)]
pub struct Settings {
    pub endpoint: Endpoint,
    pub version: Version,
    pub rank: Option<usize>,
    pub size: Option<usize>,
    pub jobid: Option<String>,
    pub request: Patience,
    pub fence: Patience,
}

/// Reads the settings through `var` (the process environment, or a map in tests).
/// `Ok(None)`: no process manager (a singleton).
pub fn read(var: impl Fn(&str) -> Option<String>) -> Result<Option<Settings>, PmiError> {
    let endpoint = if let Some(fd) = var(FD) {
        let fd = fd.trim().parse::<RawFd>().map_err(|_| {
            PmiError::Environment(format!("{FD}={fd:?} is not a descriptor number"))
        })?;
        Endpoint::Fd(fd)
    } else if let Some(address) = var(PORT) {
        check_address(&address)?;
        let id = match var(ID).or_else(|| var(RANK)) {
            Some(id) => number(ID, &id)?,
            None => {
                return Err(PmiError::Environment(format!(
                    "{PORT} is set but {ID} (the id to present to the process manager) is not"
                )))
            }
        };
        Endpoint::Port {
            address,
            id,
            key: var(KEY).filter(|k| !k.is_empty()),
        }
    } else {
        return Ok(None);
    };
    let rank = var(RANK).map(|v| number(RANK, &v)).transpose()?;
    let size = var(SIZE).map(|v| number(SIZE, &v)).transpose()?;
    if size == Some(0) {
        return Err(PmiError::Environment(format!("{SIZE}=0: a job has ranks")));
    }
    Ok(Some(Settings {
        endpoint,
        version: choose_version(&var)?,
        rank,
        size,
        jobid: var(JOBID),
        request: Patience {
            limit: seconds(TIMEOUT, var(TIMEOUT), Some(DEFAULT_TIMEOUT))?,
            variable: TIMEOUT,
        },
        fence: Patience {
            limit: seconds(FENCE_TIMEOUT, var(FENCE_TIMEOUT), None)?,
            variable: FENCE_TIMEOUT,
        },
    }))
}

/// The protocol to speak (see the module doc).
pub fn choose_version(var: &impl Fn(&str) -> Option<String>) -> Result<Version, PmiError> {
    match var(VERSION).as_deref().map(str::trim) {
        Some("1") => Ok(Version::V1),
        Some("2") => Ok(Version::V2),
        Some(other) => Err(PmiError::Environment(format!(
            "{VERSION}={other:?}: give 1 (PMI-1) or 2 (PMI-2), or unset it to follow the \
             process manager"
        ))),
        None if var(JOBID).is_some() || var(PMI2_SUN_PATH).is_some() => Ok(Version::V2),
        None => Ok(Version::V1),
    }
}

fn number(name: &str, value: &str) -> Result<usize, PmiError> {
    value
        .trim()
        .parse()
        .map_err(|_| PmiError::Environment(format!("{name}={value:?} is not a number")))
}

/// `host:port` or `[v6]:port` with a numeric port.
fn check_address(address: &str) -> Result<(), PmiError> {
    let valid = address
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(())
    } else {
        Err(PmiError::Environment(format!(
            "{PORT}={address:?} is not HOST:PORT"
        )))
    }
}

/// A limit in seconds; 0 means none.
fn seconds(
    name: &str,
    value: Option<String>,
    default: Option<Duration>,
) -> Result<Option<Duration>, PmiError> {
    let Some(value) = value else {
        return Ok(default);
    };
    let secs: f64 = value.trim().parse().map_err(|_| {
        PmiError::Environment(format!(
            "{name}={value:?} is not a number of seconds (0 for no limit)"
        ))
    })?;
    if secs == 0.0 {
        return Ok(None);
    }
    Duration::try_from_secs_f64(secs).map(Some).map_err(|_| {
        PmiError::Environment(format!(
            "{name}={value:?} is not a number of seconds (0 for no limit)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<Settings>, PmiError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        read(|name| map.get(name).cloned())
    }

    #[test]
    fn no_process_manager_is_a_singleton() {
        assert!(settings(&[("PMI_RANK", "0")]).unwrap().is_none());
    }

    #[test]
    fn hydra_is_pmi1_and_slurm_pmi2_is_pmi2() {
        let hydra = settings(&[("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "2")])
            .unwrap()
            .unwrap();
        assert_eq!(hydra.endpoint, Endpoint::Fd(6));
        assert_eq!(hydra.version, Version::V1);
        assert_eq!((hydra.rank, hydra.size), (Some(1), Some(2)));
        assert_eq!(hydra.request.limit, Some(DEFAULT_TIMEOUT));
        assert_eq!(hydra.fence.limit, None);
        let slurm = [
            ("PMI_FD", "6"),
            ("PMI_RANK", "1"),
            ("PMI_SIZE", "2"),
            ("PMI_JOBID", "77.0"),
        ];
        assert_eq!(settings(&slurm).unwrap().unwrap().version, Version::V2);
        let forced: Vec<_> = slurm
            .iter()
            .copied()
            .chain([("MPI_PMI_VERSION", "1")])
            .collect();
        assert_eq!(settings(&forced).unwrap().unwrap().version, Version::V1);
        assert!(settings(&[("PMI_FD", "6"), ("MPI_PMI_VERSION", "3")]).is_err());
    }

    #[test]
    fn port_needs_an_id_and_a_port_number() {
        let s = settings(&[
            ("PMI_PORT", "10.0.0.1:4000"),
            ("PMI_ID", "3"),
            ("MPI_PMI_KEY", "ab"),
            ("MPI_PMI_TIMEOUT", "0"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            s.endpoint,
            Endpoint::Port {
                address: "10.0.0.1:4000".into(),
                id: 3,
                key: Some("ab".into())
            }
        );
        assert_eq!(s.request.limit, None);
        assert!(settings(&[("PMI_PORT", "10.0.0.1:4000")]).is_err());
        assert!(settings(&[("PMI_PORT", "10.0.0.1"), ("PMI_ID", "0")]).is_err());
        assert!(settings(&[("PMI_PORT", "[::1]:99"), ("PMI_ID", "0")]).is_ok());
        assert!(settings(&[("PMI_FD", "x")]).is_err());
        assert!(settings(&[("PMI_FD", "5"), ("MPI_PMI_TIMEOUT", "soon")]).is_err());
    }
}
