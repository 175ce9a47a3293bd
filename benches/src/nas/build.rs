//! Building a kernel: `benches/nas/<kernel>.c` compiled with an MPI compiler wrapper (ours or
//! MPICH's) into `<work dir>/<flavour>/<kernel>`, again only when the source or `nas.h` is
//! newer than the binary. Builds go to a temporary name and are renamed into place, so runners
//! started at the same time (the tests) never see a half-written binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// The directory holding the kernel sources: `NAS_SOURCE_DIR` if set, else `benches/nas` of
/// the checkout this runner was built from.
pub fn source_dir() -> PathBuf {
    match std::env::var_os("NAS_SOURCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("nas"),
    }
}

/// The source file of `kernel`, or an error that says where it was looked for.
pub fn kernel_source(sources: &Path, kernel: &str) -> Result<PathBuf, String> {
    let file = sources.join(format!("{kernel}.c"));
    if file.is_file() {
        Ok(file)
    } else {
        Err(format!(
            "kernel source {} not found (set NAS_SOURCE_DIR to the directory holding the kernels' .c files)",
            file.display()
        ))
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Compiles `source` (plus anything else it needs, such as `-lm`) with `compiler` into
/// `out_dir/name`, unless that binary is newer than the source and every file in `depends`.
pub fn build_c(
    compiler: &Path,
    source: &Path,
    depends: &[PathBuf],
    out_dir: &Path,
    name: &str,
) -> Result<PathBuf, String> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let exe = out_dir.join(name);
    let newest_input = std::iter::once(source.to_path_buf())
        .chain(depends.iter().cloned())
        .filter_map(|p| modified(&p))
        .max();
    if let (Some(built), Some(input)) = (modified(&exe), newest_input) {
        if built >= input {
            return Ok(exe);
        }
    }
    static BUILDS: AtomicU64 = AtomicU64::new(0);
    let temp = out_dir.join(format!(
        ".{name}.{}.{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let out = Command::new(compiler)
        .args(["-O3", "-Wall", "-Wextra", "-o"])
        .arg(&temp)
        .arg(source)
        .arg("-lm")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", compiler.display()))?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&temp);
        return Err(format!(
            "{} failed to build {}:\n{}",
            compiler.display(),
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::rename(&temp, &exe)
        .map_err(|e| format!("cannot move the build to {}: {e}", exe.display()))?;
    Ok(exe)
}

/// Builds `kernel` from `sources` with `compiler` into `out_dir`.
pub fn build_kernel(
    compiler: &Path,
    sources: &Path,
    kernel: &str,
    out_dir: &Path,
) -> Result<PathBuf, String> {
    let source = kernel_source(sources, kernel)?;
    build_c(compiler, &source, &[sources.join("nas.h")], out_dir, kernel)
}
