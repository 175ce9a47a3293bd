//! The `main` of `mpi-install`: copy a build into a prefix.
//!
//! ```text
//! PREFIX/bin/      mpicc mpicxx mpirun mpiexec [mpifort]
//! PREFIX/lib/      libmpi.so, and libmpi.so.12 libmpich.so.12 libmpich.so -> libmpi.so
//! PREFIX/include/  mpi.h [mpif.h bip.h fm.h]
//! ```
//!
//! The installer first plans every file and checks that the build is complete, so an
//! incomplete build installs nothing. The wrappers need no configuration afterwards: they find
//! `PREFIX/include` and `PREFIX/lib` from their own location (see [`super::layout`]).
//! Existing files in the prefix are replaced (removed, then written anew, so a running program
//! keeps its old copy and a link is never written through).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use super::error::WrapperError;
use super::layout::{
    executable_dir, LIBRARY_ALIASES, LIBRARY_FILE, MAIN_HEADER, OPTIONAL_HEADERS, OPTIONAL_TOOLS,
    REQUIRED_TOOLS, SOURCE_INCLUDE_DIR,
};

/// Command line of `mpi-install`.
#[derive(Parser, Debug)]
#[command(
    name = "mpi-install",
    version,
    about = "Install the MPI tools, libmpi.so and the headers under a prefix (bin/, lib/, include/)"
)]
pub struct InstallArgs {
    /// Where to install: tools go to DIR/bin, the library to DIR/lib, headers to DIR/include.
    #[arg(long, value_name = "DIR")]
    pub prefix: PathBuf,
    /// The build to install from [default: the directory holding mpi-install, e.g. target/release].
    #[arg(long, value_name = "DIR")]
    pub build_dir: Option<PathBuf>,
    /// Where mpi.h and the other headers are [default: the source tree's c-abi/include].
    #[arg(long, value_name = "DIR")]
    pub include_dir: Option<PathBuf>,
}

/// How one installed file comes to be.
#[derive(Debug)]
enum Action {
    /// A copy of the file at this path.
    Copy(PathBuf),
    /// A symbolic link with this (relative) target.
    Link(String),
}

/// One file of the installation: where it goes under the prefix, and how.
#[derive(Debug)]
struct Entry {
    /// Path under the prefix, such as `bin/mpicc`.
    relative: PathBuf,
    action: Action,
}

/// Runs `mpi-install` with the process's arguments.
pub fn main() -> ExitCode {
    let args = InstallArgs::parse();
    match install(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mpi-install: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

fn install(args: &InstallArgs) -> Result<(), WrapperError> {
    let build_dir = match &args.build_dir {
        Some(dir) => dir.clone(),
        None => executable_dir()?,
    };
    let include_dir = args
        .include_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(SOURCE_INCLUDE_DIR));
    let prefix = std::path::absolute(&args.prefix)
        .map_err(|source| WrapperError::io("resolve the prefix", &args.prefix, source))?;

    let entries = plan(&build_dir, &include_dir)?;
    refuse_copies_onto_themselves(&prefix, &entries)?;
    for sub in ["bin", "lib", "include"] {
        let dir = prefix.join(sub);
        fs::create_dir_all(&dir)
            .map_err(|source| WrapperError::io("create directory", &dir, source))?;
    }
    // Now that it exists, print and use the prefix without `..` parts or links.
    let prefix = prefix.canonicalize().unwrap_or(prefix);
    println!("mpi-install: installing into {}", prefix.display());
    for entry in &entries {
        write_entry(&prefix, entry)?;
        match &entry.action {
            Action::Copy(source) => {
                println!(
                    "  {:<24} from {}",
                    entry.relative.display(),
                    source.display()
                )
            }
            Action::Link(target) => println!("  {:<24} -> {target}", entry.relative.display()),
        }
    }
    println!(
        "mpi-install: done. Put {} on PATH; programs built with its mpicc find {} by rpath.",
        prefix.join("bin").display(),
        prefix.join("lib").display()
    );
    Ok(())
}

/// Every file to install, or the list of what the build lacks.
fn plan(build_dir: &Path, include_dir: &Path) -> Result<Vec<Entry>, WrapperError> {
    let mut entries = Vec::new();
    let mut missing = Vec::new();

    for tool in REQUIRED_TOOLS {
        match tool_entry(build_dir, tool) {
            Some(entry) => entries.push(entry),
            None => missing.push(tool.to_owned()),
        }
    }
    entries.extend(
        OPTIONAL_TOOLS
            .iter()
            .filter_map(|tool| tool_entry(build_dir, tool)),
    );

    let library = build_dir.join(LIBRARY_FILE);
    if library.is_file() {
        entries.push(Entry {
            relative: Path::new("lib").join(LIBRARY_FILE),
            action: Action::Copy(library),
        });
        for alias in LIBRARY_ALIASES {
            entries.push(Entry {
                relative: Path::new("lib").join(alias),
                action: Action::Link(LIBRARY_FILE.to_owned()),
            });
        }
    } else {
        missing.push(LIBRARY_FILE.to_owned());
    }

    let main_header = include_dir.join(MAIN_HEADER);
    if main_header.is_file() {
        entries.push(Entry {
            relative: Path::new("include").join(MAIN_HEADER),
            action: Action::Copy(main_header),
        });
    } else {
        missing.push(format!("{} (in {})", MAIN_HEADER, include_dir.display()));
    }
    for header in OPTIONAL_HEADERS {
        let source = include_dir.join(header);
        if source.is_file() {
            entries.push(Entry {
                relative: Path::new("include").join(header),
                action: Action::Copy(source),
            });
        }
    }

    if missing.is_empty() {
        Ok(entries)
    } else {
        Err(WrapperError::BuildOutputsMissing {
            build_dir: build_dir.to_owned(),
            missing,
        })
    }
}

/// The entry for one tool, if the build has it. A tool that is a link to another tool in the
/// same directory (such as `mpiexec -> mpirun`) is installed as the same link.
fn tool_entry(build_dir: &Path, tool: &str) -> Option<Entry> {
    let source = build_dir.join(tool);
    if !source.is_file() {
        return None;
    }
    let relative = Path::new("bin").join(tool);
    let sibling_link = fs::read_link(&source)
        .ok()
        .and_then(|target| target.to_str().map(str::to_owned))
        .filter(|target| {
            REQUIRED_TOOLS.contains(&target.as_str()) || OPTIONAL_TOOLS.contains(&target.as_str())
        });
    let action = match sibling_link {
        Some(target) => Action::Link(target),
        None => Action::Copy(source),
    };
    Some(Entry { relative, action })
}

/// Fails when the prefix overlaps the build so that a copy would read and write the same file.
fn refuse_copies_onto_themselves(prefix: &Path, entries: &[Entry]) -> Result<(), WrapperError> {
    for entry in entries {
        if let Action::Copy(source) = &entry.action {
            let destination = prefix.join(&entry.relative);
            if let (Ok(a), Ok(b)) = (source.canonicalize(), destination.canonicalize()) {
                if a == b {
                    return Err(WrapperError::InstallOntoItself {
                        path: source.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// Writes one entry, replacing whatever was at its place.
fn write_entry(prefix: &Path, entry: &Entry) -> Result<(), WrapperError> {
    let destination = prefix.join(&entry.relative);
    if fs::symlink_metadata(&destination).is_ok() {
        fs::remove_file(&destination)
            .map_err(|source| WrapperError::io("replace", &destination, source))?;
    }
    match &entry.action {
        Action::Copy(source) => fs::copy(source, &destination)
            .map(drop)
            .map_err(|error| WrapperError::io("copy to", &destination, error)),
        Action::Link(target) => std::os::unix::fs::symlink(target, &destination)
            .map_err(|error| WrapperError::io("create the link", &destination, error)),
    }
}
