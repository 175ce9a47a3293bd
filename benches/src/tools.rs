//! Finding the programs the benchmarks run: this project's tools beside the running
//! executable (`cargo build` puts `mpicc`, `mpirun` and the benches binaries in one
//! directory), and other libraries' tools on `PATH`, with an error that says what to install.

use std::path::PathBuf;

/// One of this project's tools (`mpicc`, `mpirun`), found beside the running executable.
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

/// A program on `PATH`, or an error naming the Debian packages that provide it.
pub fn system_tool(program: &str, packages: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!("{program} not found: apt-get install {packages} (or run scripts/install-deps)")
        })
}
