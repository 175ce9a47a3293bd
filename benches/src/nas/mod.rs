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

/// One of this project's tools (`mpicc`, `mpirun`), found beside the running executable as
/// `cargo build` lays them out.
pub fn our_tool(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let tool = exe.with_file_name(name);
    if tool.is_file() {
        Ok(tool)
    } else {
        Err(format!(
            "{} not found: build the whole workspace first (cargo build --release)",
            tool.display()
        ))
    }
}

/// A program on `PATH`, or an error that says which package provides it.
pub fn on_path(program: &str, package_hint: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("{program} not found: {package_hint}"))
}

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
