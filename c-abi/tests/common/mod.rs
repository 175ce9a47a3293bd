//! Building the C test programs of `tests/c/` and running them as MPI jobs.
//!
//! The programs are compiled by the project's own `mpicc` (or, for the binary-compatibility
//! test, by MPICH's) into `CARGO_TARGET_TMPDIR/c-programs/`, each once per test binary run
//! (a cache guarded by a mutex, so parallel tests share the build). A job is started with the
//! project's `mpirun`, its output collected line by line, and bounded by a guard timeout: a
//! hung job fails its test with everything it printed, instead of hanging the suite.
//!
//! Each program is self-checking: rank 0 prints `OK <name>` when every check passed, and a
//! failed check prints `FAIL <name> rank <r>: ...` and ends the job with `MPI_Abort`.

// Each test binary that includes this module uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// Copies this build's tools (binaries of `mpi-tools`, found and kept up to date by the
/// test-support crate `mpi-staging`, which the tests of `mpi-tools` share) and this test
/// build's `libmpi.so` into a directory laid out like `target/<profile>/`.
pub use mpi_staging::stage_build;

/// This build's `mpirun` (see [`mpi_staging::tool`]).
pub fn mpirun_path() -> PathBuf {
    mpi_staging::tool("mpirun")
}

/// Flags every test program is compiled with. `-Werror`: a program that compiles cleanly
/// against MPICH's `mpi.h` must compile cleanly against ours. GCC's `stringop-overflow`
/// misreads the sentinel `MPI_STATUSES_IGNORE` passed as an array (with MPICH's header too).
const CFLAGS: &[&str] = &[
    "-std=c99",
    "-O2",
    "-Wall",
    "-Werror",
    "-Wno-stringop-overflow",
];

/// How long a job may run before the harness gives up on it. Every program takes well under
/// a second when things work; this only bounds a hang.
pub const JOB_GUARD: Duration = Duration::from_secs(30);

/// `tests/c/`, where the programs and their shared header `mpitest.h` live.
pub fn source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("c")
}

/// The directory holding this build's `libmpi.so` (with `libmpi.so.12`, `libmpich.so.12` and
/// `libmpich.so` pointing to it) and a copy of `mpicc` beside it, so that `mpicc` links
/// against exactly that library and gives programs an rpath to it.
///
/// Why not `target/debug/` itself: a test build leaves the library it built in
/// `target/debug/deps/` and does not update `target/debug/libmpi.so`, which is whatever the
/// last `cargo build` left there (stale, or missing on a fresh checkout).
pub fn library_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = mpi_staging::private_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "mpi-tools");
        stage_build(&dir, &["mpicc"]);
        dir
    })
    .clone()
}

/// This build's `mpicc`, beside this build's library (see [`library_dir`]).
pub fn mpicc() -> PathBuf {
    library_dir().join("mpicc")
}

fn output_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-programs");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// Programs built so far in this run, by output name.
static BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());

/// `tests/c/<program>.c` compiled with our `mpicc`; built once per run. `program` may name a
/// file in a subdirectory (`"coll/bcast"`); its programs include `mpitest.h` as usual.
pub fn program(program: &str) -> PathBuf {
    build_with(&mpicc(), program, &program.replace('/', "_"))
}

/// `tests/c/<program>.c` compiled by `compiler` into `<output_name>`; built once per run.
/// Panics with the compiler's messages if the build fails.
pub fn build_with(compiler: &Path, program: &str, output_name: &str) -> PathBuf {
    // One build at a time: the machine has two cores, and a second test wanting the same
    // program must wait for the first build rather than start its own.
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = built.get(output_name) {
        return path.clone();
    }
    let source = source_dir().join(format!("{program}.c"));
    let target = output_dir().join(output_name);
    // Compile to a private name, then rename: a concurrent `cargo test` never runs a half-written file.
    let partial = output_dir().join(format!("{output_name}.{}.partial", std::process::id()));
    let result = retry_busy(|| {
        Command::new(compiler)
            .args(CFLAGS)
            .arg("-I")
            .arg(source_dir())
            .arg(&source)
            .arg("-o")
            .arg(&partial)
            .output()
    })
    .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(
        result.status.success(),
        "{} failed to build {} ({}):\n{}{}",
        compiler.display(),
        source.display(),
        result.status,
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::rename(&partial, &target).unwrap_or_else(|e| {
        panic!(
            "cannot move {} to {}: {e}",
            partial.display(),
            target.display()
        )
    });
    built.insert(output_name.to_owned(), target.clone());
    target
}

/// Runs `f` again while it fails with "text file busy": a freshly copied executable can be
/// briefly held open for writing by a child another test thread is forking.
fn retry_busy<T>(mut f: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut tries = 0;
    loop {
        match f() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                thread::sleep(Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// How one job ended and what it printed.
#[derive(Debug)]
pub struct JobRun {
    pub command: String,
    /// `None` if the harness had to kill `mpirun` (see `timed_out`).
    pub status: Option<ExitStatus>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// When the line given as `watch_for` first appeared on stdout.
    pub watched_line_at: Option<Instant>,
    pub ended_at: Instant,
}

impl JobRun {
    /// The exit code of `mpirun`, if it exited (rather than being killed).
    pub fn code(&self) -> Option<i32> {
        self.status.and_then(|s| s.code())
    }

    /// Everything the job printed, stdout then stderr.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// A report for a failed assertion: the command, how it ended, and its output.
    pub fn describe(&self) -> String {
        let ended = match (self.timed_out, self.status) {
            (true, _) => format!("killed by the harness after {:?}", self.elapsed),
            (false, Some(s)) => format!("{s} after {:.2?}", self.elapsed),
            (false, None) => "status unknown".to_owned(),
        };
        format!(
            "\n  command: {}\n  ended:   {ended}\n---- stdout ----\n{}---- stderr ----\n{}----------------",
            self.command, self.stdout, self.stderr
        )
    }
}

/// Options of one `mpirun` invocation.
#[derive(Debug, Default, Clone)]
pub struct Launch<'a> {
    pub ranks: usize,
    /// `--channel NAME`; `None` leaves the library's default.
    pub channel: Option<&'a str>,
    /// Extra environment for `mpirun` (and so for the ranks).
    pub env: Vec<(&'a str, OsString)>,
    /// A stdout line whose arrival time to record (see [`JobRun::watched_line_at`]).
    pub watch_for: Option<&'a str>,
}

/// Runs `program` under our `mpirun`, waits at most [`JOB_GUARD`], and collects the result.
pub fn mpirun(program: &Path, launch: &Launch) -> JobRun {
    let mpirun_path = mpirun_path();
    let mut command = Command::new(&mpirun_path);
    command.arg("-n").arg(launch.ranks.to_string());
    if let Some(channel) = launch.channel {
        command.arg("--channel").arg(channel);
    }
    // mpirun's own limit a little before ours, so that it cleans up after itself.
    command
        .arg("--timeout")
        .arg((JOB_GUARD.as_secs() - 5).to_string());
    command.arg(program);
    // `cargo test` puts target/<profile>/ on the library search path, ahead of the programs'
    // rpath, and the library there is whatever the last `cargo build` left (stale, or missing
    // on a fresh checkout): the ranks must load this build's library (a test may override).
    command.env("LD_LIBRARY_PATH", library_dir());
    for (name, value) in &launch.env {
        command.env(name, value);
    }
    let description = format!("{command:?}");
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so that a hung job can be signalled as a whole.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);

    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", mpirun_path.display()));
    let stdout = collect_lines(
        child.stdout.take().expect("piped stdout"),
        launch.watch_for.map(str::to_owned),
    );
    let stderr = collect_lines(child.stderr.take().expect("piped stderr"), None);

    let deadline = started + JOB_GUARD;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                timed_out = true;
                stop_group(child.id());
                let _ = child.wait();
                break None;
            }
            Err(e) => panic!("cannot wait for mpirun: {e}"),
        }
    };
    let ended_at = Instant::now();
    let (stdout, watched_line_at) = stdout.join().expect("stdout reader");
    let (stderr, _) = stderr.join().expect("stderr reader");
    JobRun {
        command: description,
        status,
        timed_out,
        stdout,
        stderr,
        elapsed: ended_at - started,
        watched_line_at,
        ended_at,
    }
}

/// Ends a hung `mpirun` (which passes SIGTERM on to its ranks), then makes sure of it.
fn stop_group(pid: u32) {
    let group = -(pid as libc::pid_t);
    // SAFETY: kill(2) with a negative pid signals the process group that this harness created
    // for the mpirun it started (process_group(0) above); it touches no memory of ours.
    unsafe { libc::kill(group, libc::SIGTERM) };
    thread::sleep(Duration::from_secs(2));
    // SAFETY: as above; SIGKILL to the same group, in case SIGTERM was not enough.
    unsafe { libc::kill(group, libc::SIGKILL) };
}

type Collected = thread::JoinHandle<(String, Option<Instant>)>;

/// Reads a pipe to its end on a thread of its own, noting when `watch_for` appears.
fn collect_lines(pipe: impl Read + Send + 'static, watch_for: Option<String>) -> Collected {
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut text = String::new();
        let mut seen_at = None;
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let decoded = String::from_utf8_lossy(&line);
                    if seen_at.is_none()
                        && watch_for
                            .as_deref()
                            .is_some_and(|w| decoded.trim_end() == w)
                    {
                        seen_at = Some(Instant::now());
                    }
                    text.push_str(&decoded);
                }
            }
        }
        (text, seen_at)
    })
}

/// Asserts that the job succeeded and rank 0 printed `OK <name>` exactly once.
pub fn assert_ok(run: &JobRun, name: &str) {
    // A program in a subdirectory ("coll/bcast") prints its own name ("OK bcast").
    let ok_line = format!("OK {}", name.rsplit('/').next().unwrap_or(name));
    assert!(!run.timed_out, "{name} hung:{}", run.describe());
    assert_eq!(run.code(), Some(0), "{name} failed:{}", run.describe());
    let oks = run
        .stdout
        .lines()
        .filter(|l| l.trim_end() == ok_line)
        .count();
    assert_eq!(
        oks,
        1,
        "{name}: expected one '{ok_line}' line, found {oks}:{}",
        run.describe()
    );
}

/// Builds `name` with our mpicc, runs it on `ranks` ranks, and asserts it passed.
pub fn run_ok(name: &str, ranks: usize, channel: Option<&str>) -> JobRun {
    let exe = program(name);
    let run = mpirun(
        &exe,
        &Launch {
            ranks,
            channel,
            ..Launch::default()
        },
    );
    assert_ok(&run, name);
    run
}

/// Builds `name` with our mpicc and runs it as a job of each of `sizes` ranks, asserting each
/// passed.
pub fn run_ok_at(name: &str, sizes: &[usize]) {
    for &ranks in sizes {
        run_ok(name, ranks, None);
    }
}

/// The Fortran programs built so far in this run, by file name.
static FORTRAN_BUILT: Mutex<BTreeMap<String, PathBuf>> = Mutex::new(BTreeMap::new());

/// `tests/f/<file>` compiled with this build's `mpifort` (staged once per test binary with
/// this build's library, `mpif.h`, `mpi.mod` and `mpi_f08.mod`), once per run; its path.
/// Fails with a clear message when gfortran is missing (CI installs it).
pub fn fortran_program(file: &str) -> PathBuf {
    // One build at a time, as for the C programs; a second test wanting it waits.
    let mut built = FORTRAN_BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(path) = built.get(file) {
        return path.clone();
    }
    let found = Command::new("gfortran")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "gfortran is not installed: the Fortran tests need it (Debian: apt-get install gfortran)"
    );
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = mpi_staging::private_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "f-programs");
        stage_build(&dir, &["mpifort"]);
        dir
    });
    let sources = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("f");
    let exe = dir.join(Path::new(file).file_stem().expect("a file name"));
    // -I: the programs' shared include file; -J keeps gfortran's .mod files of the programs
    // out of the source tree.
    let out = Command::new(dir.join("mpifort"))
        .env_remove("MPICH_FC")
        .arg("-I")
        .arg(&sources)
        .args(["-O1", "-Wall", "-J"])
        .arg(dir)
        .arg(sources.join(file))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run mpifort");
    assert!(
        out.status.success(),
        "mpifort failed to build tests/f/{file}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    built.insert(file.to_string(), exe.clone());
    exe
}

/// The path of `tool` if it is installed (found on `PATH`).
pub fn installed(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// A directory for one test's files under the system's temporary directory (named after the
/// test binary's `kind`, the `name` and this process), made empty when created and removed
/// when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(kind: &str, name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("mpi-{kind}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
