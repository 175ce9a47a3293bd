//! Running one kernel: start it under a launcher (`mpirun -n N kernel CLASS`) in its own
//! process group, kill the whole group if it outlives its time limit, and find the result line
//! the kernel printed (`EP S np=2 VERIFIED 0.123 s 456.7 Mop/s`, see `benches/nas/nas.h`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A kernel's result line, parsed.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ResultLine {
    /// The line exactly as the kernel printed it.
    pub text: String,
    pub verified: bool,
    pub seconds: f64,
    pub mops: f64,
}

impl ResultLine {
    /// Parses `KERNEL CLASS np=N VERIFIED|FAILED SECONDS s MOPS Mop/s` for `kernel`.
    pub fn parse(line: &str, kernel: &str) -> Option<ResultLine> {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() != 8
            || !words[0].eq_ignore_ascii_case(kernel)
            || words[5] != "s"
            || words[7] != "Mop/s"
        {
            return None;
        }
        let verified = match words[3] {
            "VERIFIED" => true,
            "FAILED" => false,
            _ => return None,
        };
        Some(ResultLine {
            text: line.trim().to_string(),
            verified,
            seconds: words[4].parse().ok()?,
            mops: words[6].parse().ok()?,
        })
    }
}

/// How to start a job: the launcher program and the options it needs before the program.
#[derive(Clone, Debug)]
pub struct Launcher {
    pub program: PathBuf,
    pub options: Vec<String>,
}

impl Launcher {
    /// The command `launcher -n np [options] exe args...`.
    pub fn command(&self, np: usize, exe: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("-n")
            .arg(np.to_string())
            .args(&self.options)
            .arg(exe)
            .args(args);
        cmd
    }
}

/// What a finished (or killed) job left behind.
pub struct Finished {
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Kills every process of the process group led by `pid` (the job and all its ranks).
pub fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

/// Runs `cmd` in a new process group with its output captured; kills the group after `limit`.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> Result<Finished, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let mut out_pipe = child.stdout.take().expect("stdout is piped");
    let mut err_pipe = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > limit => {
                timed_out = true;
                kill_group(child.id());
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for the job: {e}")),
        }
    };
    // Ranks left behind by a launcher that died would hold the pipes open: end them too.
    if !status.is_some_and(|s| s.success()) {
        kill_group(child.id());
    }
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    Ok(Finished {
        status,
        timed_out,
        stdout,
        stderr,
    })
}

/// The last few lines of a text, for error messages.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs `exe CLASS` on `np` ranks and returns its result line. A job that times out, dies or
/// prints no result line is an error with the reason; a kernel whose line says VERIFIED but
/// whose job failed counts as FAILED.
pub fn run_kernel(
    launcher: &Launcher,
    exe: &Path,
    kernel: &str,
    class: char,
    np: usize,
    limit: Duration,
) -> Result<ResultLine, String> {
    let class_arg = class.to_string();
    let done = run_bounded(launcher.command(np, exe, &[&class_arg]), limit)?;
    let context = || {
        let err = tail(&done.stderr, 8);
        if err.is_empty() {
            String::new()
        } else {
            format!("; its stderr ends with:\n{err}")
        }
    };
    if done.timed_out {
        return Err(format!(
            "timed out after {} s and was killed{}",
            limit.as_secs(),
            context()
        ));
    }
    let line = done
        .stdout
        .lines()
        .find_map(|l| ResultLine::parse(l, kernel));
    let status = done
        .status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "unknown status".into());
    match line {
        None => Err(format!("printed no result line ({status}){}", context())),
        Some(mut line) => {
            if !done.status.is_some_and(|s| s.success()) && line.verified {
                eprintln!(
                    "{kernel}: the job failed ({status}) after printing its result{}",
                    context()
                );
                line.verified = false;
            } else if !line.verified {
                let err = tail(&done.stderr, 8);
                if !err.is_empty() {
                    eprintln!("{kernel}: {err}");
                }
            }
            Ok(line)
        }
    }
}

/// The default time limit of one run: generous, since 8 ranks on 2 cores are slow.
pub fn default_limit(class: char) -> Duration {
    Duration::from_secs(match class {
        'S' => 120,
        'W' => 600,
        'A' => 1800,
        _ => 3600,
    })
}

/// Median of a list of times (mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}
