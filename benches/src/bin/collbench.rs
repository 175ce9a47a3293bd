//! `collbench`: neighbourhood and persistent collectives against the code they replace,
//! measured in one job of our library, alternating (`benches/c/collbench.c`).
//!
//! ```text
//! collbench                  # 4 ranks, 61 rounds per pair and size
//! collbench --np 8 --quick   # a short, rough run
//! ```
//!
//! Pairs, A against B: `halo` (a 2-D periodic Cartesian halo exchange: `MPI_Neighbor_alltoall`
//! against `MPI_Isend`/`MPI_Irecv`/`MPI_Waitall`), `halo_init` (`MPI_Neighbor_alltoall_init` +
//! `MPI_Start`/`MPI_Wait` against the same hand-written exchange), `allreduce`
//! (`MPI_Allreduce_init` + Start/Wait against `MPI_Allreduce`, 8 B and 64 KiB) and `bcast`
//! (`MPI_Bcast_init` against `MPI_Bcast`). Each round times a batch of A and a batch of B
//! (order swapped every round), so that both variants see the same load on a shared machine;
//! the table gives each variant's median time per call (the slowest rank's) and the median of
//! the per-round ratios A/B (below 1: A is faster). The C program checks the data.
//!
//! The program is built with our `mpicc` (beside this executable) into `--out` and run with
//! our `mpirun`.

use benches::tools::our_tool;
use clap::Parser;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The kernel, carried inside the binary so it builds from anywhere.
const SOURCE: &str = include_str!("../../c/collbench.c");

#[derive(Parser, Debug)]
#[command(
    about = "Neighbourhood and persistent collectives against hand-written and blocking ones"
)]
struct Args {
    /// Ranks.
    #[arg(long, default_value_t = 4)]
    np: usize,
    /// Fewer rounds: rough figures.
    #[arg(long)]
    quick: bool,
    /// Directory for the source and the executable [default: collbench-build beside this
    /// executable].
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("collbench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let (mpicc, mpirun) = (our_tool("mpicc")?, our_tool("mpirun")?);
    let out = match args.out {
        Some(dir) => dir,
        None => our_tool("mpirun")?.with_file_name("collbench-build"),
    };
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let source = out.join("collbench.c");
    std::fs::write(&source, SOURCE)
        .map_err(|e| format!("cannot write {}: {e}", source.display()))?;
    let exe = out.join("collbench");
    let built = Command::new(&mpicc)
        .args(["-std=c99", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg(&source)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", mpicc.display()))?;
    if !built.status.success() {
        return Err(format!(
            "{} failed:\n{}",
            mpicc.display(),
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    let mut job = Command::new(&mpirun);
    job.env("MPIEXEC_TIMEOUT", "600")
        .arg("-n")
        .arg(args.np.to_string())
        .arg(&exe);
    if args.quick {
        job.arg("--quick");
    }
    let status = job
        .status()
        .map_err(|e| format!("cannot run {}: {e}", mpirun.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the job failed ({status})"))
    }
}
