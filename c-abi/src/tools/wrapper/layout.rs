//! Where the MPI headers and library are, found relative to the running executable.
//!
//! Two layouts are supported by the same binary, with nothing configured:
//!
//! - **installed** (`mpi-install --prefix PREFIX`): `PREFIX/bin/mpicc`, `PREFIX/include/mpi.h`,
//!   `PREFIX/lib/libmpi.so`. Looked for first, so an installation never refers back to the
//!   source tree.
//! - **in place** (`cargo build [--release]`): `target/<profile>/mpicc` with `libmpi.so` in the
//!   same directory, and the headers in the source tree's `c-abi/include`, whose path is baked
//!   in at compile time.
//!
//! `std::env::current_exe` resolves symbolic links, so a link to an installed wrapper from
//! elsewhere (say `/usr/local/bin/mpicc`) still finds the installation it points into.
//!
//! The file names the installer lays down live here too, so the wrappers and `mpi-install`
//! cannot disagree about them.

use std::path::{Path, PathBuf};

use super::error::WrapperError;

/// The MPI library, the file `-lmpi` finds.
pub const LIBRARY_FILE: &str = "libmpi.so";

/// Other names of the library: the soname, and MPICH's names, so that programs linked by
/// MPICH's `mpicc` (`-lmpich`, `NEEDED libmpich.so.12`) find this library too.
pub const LIBRARY_ALIASES: [&str; 3] = ["libmpi.so.12", "libmpich.so.12", "libmpich.so"];

/// The header every MPI C program includes.
pub const MAIN_HEADER: &str = "mpi.h";

/// Headers installed when the build has them.
pub const OPTIONAL_HEADERS: [&str; 3] = ["mpif.h", "bip.h", "fm.h"];

/// Programs an installation must have.
pub const REQUIRED_TOOLS: [&str; 4] = ["mpicc", "mpicxx", "mpirun", "mpiexec"];

/// Programs installed when the build has them.
pub const OPTIONAL_TOOLS: [&str; 1] = ["mpifort"];

/// The source tree's header directory, `c-abi/include`, as it was when this binary was built.
pub const SOURCE_INCLUDE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");

/// The directory holding the running executable, with symbolic links resolved.
pub fn executable_dir() -> Result<PathBuf, WrapperError> {
    let exe = std::env::current_exe().map_err(WrapperError::CurrentExe)?;
    let exe = exe.canonicalize().unwrap_or(exe);
    match exe.parent() {
        Some(dir) => Ok(dir.to_owned()),
        None => Err(WrapperError::CurrentExe(std::io::Error::other(
            "executable has no directory",
        ))),
    }
}

/// Where `mpi.h` may be, best first: the installed layout, then the source tree.
pub fn include_dir_candidates(exe_dir: &Path) -> Vec<PathBuf> {
    let mut candidates = vec![exe_dir.join("../include"), exe_dir.join("include")];
    candidates.push(PathBuf::from(SOURCE_INCLUDE_DIR));
    candidates
}

/// Where `libmpi.so` may be, best first: the installed layout, then next to the executable.
pub fn lib_dir_candidates(exe_dir: &Path) -> Vec<PathBuf> {
    vec![exe_dir.join("../lib"), exe_dir.to_owned()]
}

/// The directory to pass as `-I`: the first candidate that holds `mpi.h`.
pub fn find_include_dir(exe_dir: &Path) -> Result<PathBuf, WrapperError> {
    let candidates = include_dir_candidates(exe_dir);
    first_holding(&candidates, MAIN_HEADER).ok_or_else(|| WrapperError::HeaderNotFound {
        looked_in: candidates.iter().map(|c| tidy(c)).collect(),
    })
}

/// The directory to pass as `-L` and rpath: the first candidate that holds `libmpi.so`.
pub fn find_lib_dir(exe_dir: &Path) -> Result<PathBuf, WrapperError> {
    let candidates = lib_dir_candidates(exe_dir);
    first_holding(&candidates, LIBRARY_FILE).ok_or_else(|| WrapperError::LibraryNotFound {
        looked_in: candidates.iter().map(|c| tidy(c)).collect(),
    })
}

/// The first directory of `candidates` that contains the file `name`, without `..` parts.
fn first_holding(candidates: &[PathBuf], name: &str) -> Option<PathBuf> {
    candidates
        .iter()
        .find(|dir| dir.join(name).is_file())
        .map(|dir| tidy(dir))
}

/// `path` without `.`/`..` parts or links when it exists (for readable `-show` output and
/// messages), unchanged otherwise.
fn tidy(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_layout_comes_before_the_source_tree() {
        let candidates = include_dir_candidates(Path::new("/opt/mpi/bin"));
        assert_eq!(candidates[0], Path::new("/opt/mpi/bin/../include"));
        assert_eq!(
            candidates.last().map(PathBuf::as_path),
            Some(Path::new(SOURCE_INCLUDE_DIR))
        );
        let lib = lib_dir_candidates(Path::new("/opt/mpi/bin"));
        assert_eq!(
            lib,
            [Path::new("/opt/mpi/bin/../lib"), Path::new("/opt/mpi/bin")]
        );
    }
}
