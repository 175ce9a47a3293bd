//! Jobs started at run time (`MPI_Comm_spawn`, `MPI_Comm_spawn_multiple`): a rank's PMI
//! `mcmd=spawn` reaches the supervisor as [`pmi::server::ServerEvent::Spawn`], and the new job
//! is one more `mpirun` (this same program) started as a child of this one.
//!
//! ```text
//!   parent rank ──PMI spawn──▶ mpirun ──▶ checks every command (found? executable?)
//!                                 │        └─ no: spawn_result rc=-1 "cannot run ..." (nothing starts)
//!                                 └─▶ mpirun -n N [--hosts HOST:N] PROGRAM ARGS   (a child job)
//!                                        env MPIRUN_SPAWN_PREPUT: the parent's pre-put keys,
//!                                        stored in the child job's PMI key-value space;
//!                                        its ranks get PMI_SPAWNED=1
//! ```
//!
//! The child job has its own fabric, its own PMI server and its own `MPI_COMM_WORLD`; its
//! ranks reach the parents over TCP (the library's `dynamic` module). The parent `mpirun`
//! watches the child `mpirun` like a rank: it waits for it before ending, a failure of the
//! child job (a child rank that dies) ends the whole job with a message naming the child job,
//! and ending the job ends the child job (SIGTERM, then SIGKILL; the guard process covers a
//! killed `mpirun`). Where the children run: on this machine, or on the host the `host` info
//! key names (through the same remote start as `--hosts`). `wdir` is the child job's working
//! directory; `path` a list of directories searched for the program before `PATH`. Different
//! commands of one `spawn_multiple` become the ranks of one child job in order
//! (`MPIRUN_SPAWN_APPS`), each with its `appnum`.

use super::program;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The environment variable that carries pre-put keys to a child `mpirun`: `key=value`
/// pairs separated by the ASCII record separator.
pub const PREPUT_ENV: &str = "MPIRUN_SPAWN_PREPUT";
/// The environment variable that carries the commands of a `spawn_multiple` with several
/// programs to a child `mpirun`: per command, `nprocs`, the program path and its arguments,
/// separated by the unit separator; commands separated by the record separator.
pub const APPS_ENV: &str = "MPIRUN_SPAWN_APPS";
const RECORD: char = '\u{1e}';
const UNIT: char = '\u{1f}';

/// One resolved command of a child job.
#[derive(Debug, Clone)]
pub struct App {
    pub nprocs: usize,
    pub program: program::Program,
    pub args: Vec<OsString>,
}

/// A child job, as the supervisor tracks it.
pub struct SpawnedJob {
    pub pid: u32,
    pub ended: bool,
    pub signalled: bool,
    /// What it runs, for messages.
    pub what: String,
}

/// The info value of `key` in one command's info.
fn info<'a>(c: &'a pmi::SpawnCommand, key: &str) -> Option<&'a str> {
    c.info
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// Finds `c`'s program: a path (relative to `wdir`), or a name searched in `path`'s
/// directories and then `PATH`.
fn resolve(c: &pmi::SpawnCommand) -> Result<program::Program, String> {
    let name = OsStr::new(&c.command);
    let wdir = info(c, "wdir").map(PathBuf::from);
    if c.command.contains('/') {
        let path = match &wdir {
            Some(dir) if !Path::new(&c.command).is_absolute() => dir.join(&c.command),
            _ => PathBuf::from(&c.command),
        };
        return program::find(path.as_os_str())
            .map(|mut p| {
                p.argv0 = name.to_os_string();
                p
            })
            .map_err(|e| e.message);
    }
    if let Some(dirs) = info(c, "path") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            let candidate = Path::new(dir).join(&c.command);
            if let Ok(mut p) = program::find(candidate.as_os_str()) {
                p.argv0 = name.to_os_string();
                return Ok(p);
            }
        }
    }
    program::find(name).map_err(|e| e.message)
}

/// Checks every command; the child `mpirun`'s command line and environment, or why nothing
/// can start.
pub fn child_command(
    commands: &[pmi::SpawnCommand],
    preput: &[(String, String)],
) -> Result<(std::process::Command, String), String> {
    if commands.is_empty() || commands.iter().any(|c| c.nprocs == 0) {
        return Err("a spawn needs at least one process per command".into());
    }
    let mut apps = Vec::new();
    for c in commands {
        let program = resolve(c).map_err(|e| format!("cannot spawn '{}': {e}", c.command))?;
        apps.push(App {
            nprocs: c.nprocs,
            program,
            args: c.args.iter().map(OsString::from).collect(),
        });
    }
    let total: usize = apps.iter().map(|a| a.nprocs).sum();
    let me = std::env::current_exe()
        .map_err(|e| format!("cannot find mpirun's own program to start the child job: {e}"))?;
    let mut command = std::process::Command::new(me);
    command.arg("-n").arg(total.to_string());
    let hosts: Vec<&str> = commands.iter().filter_map(|c| info(c, "host")).collect();
    if let Some(host) = hosts.first() {
        command.arg("--hosts").arg(format!("{host}:{total}"));
    }
    if let Some(dir) = info(&commands[0], "wdir") {
        command.current_dir(dir);
    }
    command.arg(&apps[0].program.path).args(&apps[0].args);
    let pre: String = preput
        .iter()
        .map(|(k, v)| format!("{k}={v}{RECORD}"))
        .collect();
    command.env(PREPUT_ENV, pre);
    if apps.len() > 1 {
        let mut plan = String::new();
        for a in &apps {
            plan.push_str(&a.nprocs.to_string());
            plan.push(UNIT);
            plan.push_str(&a.program.path.to_string_lossy());
            for arg in &a.args {
                plan.push(UNIT);
                plan.push_str(&arg.to_string_lossy());
            }
            plan.push(RECORD);
        }
        command.env(APPS_ENV, plan);
    } else {
        command.env_remove(APPS_ENV);
    }
    let what = commands
        .iter()
        .map(|c| format!("{} x{}", c.command, c.nprocs))
        .collect::<Vec<_>>()
        .join(", ");
    Ok((command, what))
}

/// The pre-put keys this `mpirun` was given by its parent `mpirun` (empty for a job started
/// by hand).
pub fn preput_from_env() -> Vec<(String, String)> {
    let Ok(text) = std::env::var(PREPUT_ENV) else {
        return Vec::new();
    };
    text.split(RECORD)
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The commands of a several-program child job, by rank: the program, its arguments and its
/// appnum (`None` for an ordinary job).
pub fn apps_from_env() -> Option<Vec<(PathBuf, Vec<OsString>, u32)>> {
    let text = std::env::var(APPS_ENV).ok()?;
    let mut by_rank = Vec::new();
    for (appnum, record) in text.split(RECORD).filter(|r| !r.is_empty()).enumerate() {
        let mut units = record.split(UNIT);
        let n: usize = units.next()?.parse().ok()?;
        let path = PathBuf::from(units.next()?);
        let args: Vec<OsString> = units.map(OsString::from).collect();
        for _ in 0..n {
            by_rank.push((path.clone(), args.clone(), appnum as u32));
        }
    }
    Some(by_rank)
}
