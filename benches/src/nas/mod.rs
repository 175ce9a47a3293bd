//! The NAS kernels' runner: build the C kernels of `benches/nas/` with an MPI compiler
//! wrapper ([`build`]), run them under a launcher with a time limit and read the one result
//! line each prints ([`run`]), and measure the shared-memory fabric that our `mpirun` sets up
//! for a job ([`fabric`]). The `nas` binary is the command line over these.

pub mod build;
pub mod fabric;
pub mod run;

use std::path::PathBuf;

/// The five kernels, in the order they are run and reported.
pub const KERNELS: [&str; 5] = ["ep", "is", "cg", "mg", "ft"];

/// Where the runner keeps what it builds: `nas-kernels/` beside its own executable (so
/// under the target directory).
pub fn work_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dir = exe
        .parent()
        .ok_or("the executable has no directory")?
        .join("nas-kernels");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}
