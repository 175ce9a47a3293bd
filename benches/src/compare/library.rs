//! The three MPI libraries being compared: how to find their compiler wrapper and launcher,
//! how to build `mpibench.c` with them, and how to start a job with each at one of two
//! [`Placement`]s: each launcher's default, or every rank bound to a core of its own.
//!
//! What each launcher needs on this kind of machine (found by trying, and made automatic):
//! - ours: nothing by default (`mpirun` binds one rank per core while the ranks fit the cores,
//!   and leaves them unbound beyond); bound: `--bind-to core` (round robin beyond the cores).
//! - MPICH (Hydra): binds nothing by default; bound: `-bind-to core` (with more ranks than
//!   cores Hydra binds round-robin).
//! - Open MPI 4: as root it refuses to start without `--allow-run-as-root` (we also set
//!   `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`); beyond the number of cores
//!   it needs `--oversubscribe`, which also makes its default placement unbound (up to the
//!   cores it binds to core for 1-2 ranks, to socket beyond); bound: `--bind-to core`, or
//!   `core:overload-allowed` beyond the cores. Its shared-memory transport (vader, with CMA
//!   single copy) works here without `--mca` options. Its one-sided runs (the [`Variant::Rma`]
//!   build) get `--mca osc ^rdma`: its default one-sided component on one host, osc/rdma over
//!   btl/vader, segfaults in `MPI_Compare_and_swap` and `MPI_Fetch_and_op` (Open MPI 4.1.4;
//!   open-mpi/ompi#11349, the OSU atomics fail the same way); without it Open MPI picks osc/sm,
//!   its shared-memory component, which is also its faster one here (1 MiB `MPI_Get`s at about
//!   5x osc/rdma's bandwidth).
//!
//! `mpibench.c` is built twice per library ([`Variant`]): the point-to-point and collective
//! benchmarks alone, and with `-DMPIBENCH_RMA` the one-sided ones too, so that a library whose
//! `mpi.h` lacks MPI-3 RMA (ours, until issue 14) still builds and runs the others. The MPI-IO
//! benchmarks of the `iobench` binary are another program, `iobench.c` ([`Variant::Io`]); Open
//! MPI runs it with `--mca io ompio` (its default I/O component, named so that the comparison
//! cannot silently fall back to its bundled ROMIO).
//!
//! Every job gets `MPIEXEC_TIMEOUT` (honoured by all three launchers) so that a hung library
//! cannot stall a comparison.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tools::{our_tool, system_tool};

/// The C source of the micro-benchmarks, carried inside the binary so it builds from anywhere.
pub const SOURCE: &str = include_str!("../../c/mpibench.c");

/// The C source of the MPI-IO benchmarks (`iobench`).
pub const IO_SOURCE: &str = include_str!("../../c/iobench.c");

/// Seconds after which a launcher ends a job that has not finished.
pub const JOB_TIMEOUT_S: u32 = 600;

/// Where the ranks of a job run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// No placement option: whatever each launcher does by default.
    Default,
    /// Every rank bound to a core of its own (round robin when ranks outnumber cores).
    Bound,
}

impl Placement {
    /// Both, in the order of the report.
    pub const ALL: [Placement; 2] = [Placement::Default, Placement::Bound];

    /// The name used on the command line, in tables, file names and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Default => "default",
            Placement::Bound => "bound",
        }
    }

    /// Parses a `--placement` entry.
    pub fn from_name(name: &str) -> Result<Placement, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "default" => Ok(Placement::Default),
            "bound" | "core" => Ok(Placement::Bound),
            other => Err(format!(
                "unknown placement {other:?}: choose from default, bound"
            )),
        }
    }

    /// What the placement means for each launcher, in a sentence.
    pub fn describe(self) -> &'static str {
        match self {
            Placement::Default => {
                "Each launcher's default placement (no binding option): ours binds one rank per \
                 core while a host's ranks fit its cores and leaves them unbound beyond; MPICH's \
                 Hydra binds nothing; Open MPI binds to core up to 2 ranks, to socket beyond, and \
                 nothing when oversubscribed (`--oversubscribe`)."
            }
            Placement::Bound => {
                "Every library's ranks bound one per core (`--bind-to core`, Hydra's `-bind-to \
                 core`, Open MPI's `--bind-to core`, `core:overload-allowed` beyond the cores)."
            }
        }
    }
}

/// Which build of `mpibench.c`: the one-sided benchmarks are compiled only into their own
/// executable, so that the others never depend on the library's RMA support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Variant {
    /// Point-to-point and collective benchmarks (`mpibench-LIB`).
    Base,
    /// Every benchmark, the one-sided ones included (`-DMPIBENCH_RMA`, `mpibench-rma-LIB`).
    Rma,
    /// The MPI-IO benchmarks, another program: `iobench.c` (`iobench-LIB`).
    Io,
}

impl Variant {
    /// The executable's name for `library`.
    fn executable(self, library: Library) -> String {
        match self {
            Variant::Base => format!("mpibench-{}", library.name()),
            Variant::Rma => format!("mpibench-rma-{}", library.name()),
            Variant::Io => format!("iobench-{}", library.name()),
        }
    }

    /// The source file's name and text.
    fn source(self) -> (&'static str, &'static str) {
        match self {
            Variant::Base | Variant::Rma => ("mpibench.c", SOURCE),
            Variant::Io => ("iobench.c", IO_SOURCE),
        }
    }
}

/// One MPI library under comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Library {
    /// This project's `libmpi.so`, with `mpicc` and `mpirun` found beside the running tool.
    Ours,
    /// Debian's MPICH (`mpicc.mpich`, `mpirun.mpich`).
    Mpich,
    /// Debian's Open MPI (`mpicc.openmpi`, `mpirun.openmpi`).
    OpenMpi,
}

impl Library {
    /// Every library, ours first.
    pub const ALL: [Library; 3] = [Library::Ours, Library::Mpich, Library::OpenMpi];

    /// The name used on the command line, in tables and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Library::Ours => "ours",
            Library::Mpich => "mpich",
            Library::OpenMpi => "openmpi",
        }
    }

    /// Parses a `--libs` entry.
    pub fn from_name(name: &str) -> Result<Library, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "ours" => Ok(Library::Ours),
            "mpich" => Ok(Library::Mpich),
            "openmpi" | "open-mpi" | "ompi" => Ok(Library::OpenMpi),
            other => Err(format!(
                "unknown library {other:?}: choose from ours, mpich, openmpi"
            )),
        }
    }

    /// The compiler wrapper and the launcher (ours beside this executable).
    pub fn tools(self) -> Result<(PathBuf, PathBuf), String> {
        match self {
            Library::Ours => Ok((our_tool("mpicc")?, our_tool("mpirun")?)),
            Library::Mpich => Ok((
                system_tool("mpicc.mpich", "mpich libmpich-dev")?,
                system_tool("mpirun.mpich", "mpich libmpich-dev")?,
            )),
            Library::OpenMpi => Ok((
                system_tool("mpicc.openmpi", "openmpi-bin libopenmpi-dev")?,
                system_tool("mpirun.openmpi", "openmpi-bin libopenmpi-dev")?,
            )),
        }
    }

    /// Builds the point-to-point and collective benchmarks with this library's `mpicc` into
    /// `dir/mpibench-<name>`.
    pub fn build(self, dir: &Path) -> Result<Built, String> {
        self.build_variant(dir, Variant::Base)
    }

    /// Builds `variant` of the benchmark with this library's `mpicc` into `dir`.
    pub fn build_variant(self, dir: &Path, variant: Variant) -> Result<Built, String> {
        let (mpicc, mpirun) = self.tools()?;
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let (source_name, source_text) = variant.source();
        let source = dir.join(source_name);
        std::fs::write(&source, source_text)
            .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
        let exe = dir.join(variant.executable(self));
        let mut compile = Command::new(&mpicc);
        if self != Library::Ours {
            without_our_library_path(&mut compile);
        }
        if variant == Variant::Rma {
            compile.arg("-DMPIBENCH_RMA");
        }
        let out = compile
            .args(["-std=c99", "-O2", "-Wall", "-Wextra", "-o"])
            .arg(&exe)
            .arg(&source)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", mpicc.display()))?;
        let messages = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(build_failure(&mpicc, &source, &exe, variant, &messages));
        }
        Ok(Built {
            library: self,
            variant,
            exe,
            mpirun,
            warnings: messages.trim().to_string(),
        })
    }
}

/// The message of a failed build. The base build's shows the compiler's whole output; the RMA
/// build's (expected to fail while a library lacks MPI-3 RMA) says what it needs, quotes the
/// compiler's first errors and leaves the whole output in `EXE.log`.
fn build_failure(
    mpicc: &Path,
    source: &Path,
    exe: &Path,
    variant: Variant,
    messages: &str,
) -> String {
    let head = format!("{} failed to build {}", mpicc.display(), source.display());
    if variant != Variant::Rma {
        return format!("{head}:\n{messages}");
    }
    let log = exe.with_extension("log");
    let kept = match std::fs::write(&log, messages) {
        Ok(()) => format!("the compiler's whole output is in {}", log.display()),
        Err(e) => format!("cannot write {}: {e}", log.display()),
    };
    let errors: Vec<&str> = messages
        .lines()
        .filter(|l| l.contains("error"))
        .take(5)
        .collect();
    format!(
        "{head} with the one-sided benchmarks (-DMPIBENCH_RMA): its mpi.h needs MPI-3 RMA \
         (MPI_Win_allocate, MPI_Win_lock_all, MPI_Win_flush, MPI_Put, MPI_Get, MPI_Accumulate, \
         MPI_Fetch_and_op, MPI_Compare_and_swap, MPI_MODE_NOCHECK); {kept}; first errors:\n{}",
        errors.join("\n")
    )
}

/// Our `libmpi.so` answers to MPICH's library names (same ABI), so a directory of ours on
/// `LD_LIBRARY_PATH` (as `cargo test` sets it) would make an MPICH-built program load our
/// library under MPICH's launcher. Such directories are left out of the command's path.
fn without_our_library_path(cmd: &mut Command) {
    let Some(path) = std::env::var_os("LD_LIBRARY_PATH") else {
        return;
    };
    let ours = |dir: &Path| {
        ["libmpi.so.12", "libmpich.so.12", "libmpi.so"]
            .iter()
            .any(|n| dir.join(n).exists())
            && !dir.starts_with("/usr")
    };
    let kept: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|dir| !ours(dir))
        .collect();
    match std::env::join_paths(kept) {
        Ok(joined) if !joined.is_empty() => cmd.env("LD_LIBRARY_PATH", joined),
        _ => cmd.env_remove("LD_LIBRARY_PATH"),
    };
}

/// The number of CPUs this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// A benchmark executable built against one library, with the launcher that runs it.
#[derive(Clone, Debug)]
pub struct Built {
    pub library: Library,
    pub variant: Variant,
    pub exe: PathBuf,
    pub mpirun: PathBuf,
    /// What the compiler printed (empty when the build was clean).
    pub warnings: String,
}

impl Built {
    /// The command that starts `np` ranks of the benchmark with `args` at `placement`.
    pub fn job(&self, np: usize, args: &[String], placement: Placement) -> Command {
        let mut cmd = Command::new(&self.mpirun);
        cmd.env("MPIEXEC_TIMEOUT", JOB_TIMEOUT_S.to_string());
        if self.library != Library::Ours {
            without_our_library_path(&mut cmd);
        }
        let np_text = np.to_string();
        let bound = placement == Placement::Bound;
        match self.library {
            Library::Ours => {
                cmd.args(["-n", &np_text]);
                if bound {
                    cmd.args(["--bind-to", "core"]);
                }
            }
            Library::Mpich => {
                cmd.args(["-n", &np_text]);
                if bound {
                    cmd.args(["-bind-to", "core"]);
                }
            }
            Library::OpenMpi => {
                cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
                cmd.args(["--allow-run-as-root", "-n", &np_text]);
                if self.variant == Variant::Rma {
                    cmd.args(["--mca", "osc", "^rdma"]);
                }
                if self.variant == Variant::Io {
                    cmd.args(["--mca", "io", "ompio"]);
                }
                let oversubscribed = np > cores();
                if oversubscribed {
                    cmd.arg("--oversubscribe");
                }
                if bound {
                    let how = if oversubscribed {
                        "core:overload-allowed"
                    } else {
                        "core"
                    };
                    cmd.args(["--bind-to", how]);
                }
            }
        }
        cmd.arg(&self.exe).args(args);
        cmd
    }
}
