//! Every way the wrappers and the installer can fail, each worded to say what is wrong and what
//! to do about it. The binaries print them as `<tool>: <message>` on stderr.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// A failure of `mpicc`, `mpicxx` or `mpi-install`.
#[derive(Debug)]
pub enum WrapperError {
    /// The wrapper was run with no arguments at all.
    NoArguments,
    /// `-static-mpi` asks for a static MPI library, which this project does not build.
    NoStaticLibrary,
    /// `-cc=` or `-cxx=` with nothing after the `=`.
    EmptyCompilerOption { option: &'static str },
    /// The wrapper could not learn where its own executable is.
    CurrentExe(io::Error),
    /// `mpi.h` is in none of the places the wrapper looks.
    HeaderNotFound { looked_in: Vec<PathBuf> },
    /// `mpif.h` is in none of the places a Fortran wrapper looks.
    FortranHeaderNotFound { looked_in: Vec<PathBuf> },
    /// `libmpi.so` is in none of the places the wrapper looks.
    LibraryNotFound { looked_in: Vec<PathBuf> },
    /// `-profile=NAME` names a library that is not in the library directory.
    ProfileLibraryNotFound { name: String, lib_dir: PathBuf },
    /// The wrapper is running under itself: the compiler variable names a wrapper.
    Recursion { variable: &'static str },
    /// The compiler could not be started (not installed, not executable, ...).
    CompilerNotRunnable {
        compiler: String,
        language: &'static str,
        variable: &'static str,
        hint: &'static str,
        source: io::Error,
    },
    /// `mpi-install` found the build incomplete; nothing was installed.
    BuildOutputsMissing {
        build_dir: PathBuf,
        missing: Vec<String>,
    },
    /// `mpi-install` would copy a file onto itself (the prefix is the build directory).
    InstallOntoItself { path: PathBuf },
    /// A file-system operation of `mpi-install` failed.
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl WrapperError {
    /// The process exit status for this failure: 127 when the compiler cannot be started
    /// (as a shell reports a missing command), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            WrapperError::CompilerNotRunnable { .. } => 127,
            _ => 1,
        }
    }

    /// Wraps an I/O failure of `action` on `path`.
    pub fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        WrapperError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

/// Formats a list of paths as `a, b, c` for messages.
fn join_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for WrapperError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WrapperError::NoArguments => {
                write!(
                    f,
                    "no arguments: give the compiler's arguments (e.g. `-o prog prog.c`), or -help"
                )
            }
            WrapperError::NoStaticLibrary => write!(
                f,
                "-static-mpi is not supported: this MPI is built only as the shared library \
                 libmpi.so; drop -static-mpi"
            ),
            WrapperError::EmptyCompilerOption { option } => {
                write!(
                    f,
                    "{option} needs a compiler after the '=', e.g. {option}gcc"
                )
            }
            WrapperError::CurrentExe(source) => write!(
                f,
                "cannot find this program's own location ({source}), which is where mpi.h and \
                 libmpi.so are looked for; run it by its path rather than from a deleted file"
            ),
            WrapperError::HeaderNotFound { looked_in } => write!(
                f,
                "cannot find mpi.h (looked in: {}). In the source tree it is c-abi/include/mpi.h; \
                 in an installation it is PREFIX/include/mpi.h next to PREFIX/bin: reinstall with \
                 `mpi-install --prefix PREFIX` after `cargo build --release`",
                join_paths(looked_in)
            ),
            WrapperError::FortranHeaderNotFound { looked_in } => write!(
                f,
                "cannot find mpif.h (looked in: {}). The build generates it (with mpi.mod when \
                 gfortran is installed) into target/<profile>/include/: run `cargo build -p c-abi`, \
                 or reinstall with `mpi-install --prefix PREFIX`",
                join_paths(looked_in)
            ),
            WrapperError::LibraryNotFound { looked_in } => write!(
                f,
                "cannot find libmpi.so (looked in: {}). Build it with `cargo build --release` \
                 (it lands next to mpicc in target/release/), or reinstall with \
                 `mpi-install --prefix PREFIX`",
                join_paths(looked_in)
            ),
            WrapperError::ProfileLibraryNotFound { name, lib_dir } => write!(
                f,
                "-profile={name}: no lib{name}.so or lib{name}.a in {}; put the profiling library \
                 there or drop the option",
                lib_dir.display()
            ),
            WrapperError::Recursion { variable } => write!(
                f,
                "the wrapper is running itself: {variable} must name a real compiler (e.g. gcc), \
                 not mpicc or mpicxx"
            ),
            WrapperError::CompilerNotRunnable {
                compiler,
                language,
                variable,
                hint,
                source,
            } => write!(
                f,
                "cannot run the {language} compiler `{compiler}`: {source}. {hint}, or name \
                 another with {variable}"
            ),
            WrapperError::BuildOutputsMissing { build_dir, missing } => write!(
                f,
                "the build in {} is incomplete, missing: {}. Build it with \
                 `cargo build --release` and run mpi-install again; nothing was installed",
                build_dir.display(),
                missing.join(", ")
            ),
            WrapperError::InstallOntoItself { path } => write!(
                f,
                "refusing to copy {} onto itself: choose a prefix outside the build directory",
                path.display()
            ),
            WrapperError::Io {
                action,
                path,
                source,
            } => {
                write!(f, "cannot {action} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for WrapperError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WrapperError::CurrentExe(source)
            | WrapperError::CompilerNotRunnable { source, .. }
            | WrapperError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
