//! Finding the program before any rank starts, so that a typo gives one clear message
//! instead of N failed ranks.
//!
//! A name with a slash is a path; any other name is searched in `PATH` (an empty entry means
//! the current directory), as `execvp` would. The ranks are then started with the path found,
//! and with the name as the user wrote it as their `argv[0]`.

use super::cli::shown;
use super::os;
use super::LaunchError;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A program that exists and that this user may execute.
#[derive(Debug, Clone)]
pub struct Program {
    /// What the ranks execute.
    pub path: PathBuf,
    /// Their `argv[0]`: the name as given on the command line.
    pub argv0: OsString,
}

/// Exit statuses a shell gives for the same problems.
const NOT_FOUND: i32 = 127;
const NOT_EXECUTABLE: i32 = 126;

pub fn find(name: &OsStr) -> Result<Program, LaunchError> {
    let program = |path: PathBuf| Program {
        path,
        argv0: name.to_os_string(),
    };
    if name.is_empty() {
        return Err(LaunchError {
            message: "the program name is empty".into(),
            exit_code: NOT_FOUND,
        });
    }
    if name.as_bytes().contains(&b'/') {
        let path = PathBuf::from(name);
        return check(&path).map(|()| program(path));
    }
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut refused = None;
    for dir in std::env::split_paths(&search) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(name);
        match check(&candidate) {
            Ok(()) => return Ok(program(candidate)),
            Err(e) if e.exit_code == NOT_EXECUTABLE && refused.is_none() => refused = Some(e),
            Err(_) => {}
        }
    }
    Err(refused.unwrap_or_else(|| LaunchError {
        message: format!(
            "cannot find the program '{}' in PATH; give its path (for example ./{})",
            shown(name),
            shown(name)
        ),
        exit_code: NOT_FOUND,
    }))
}

/// Checks that `path` is a file this user may execute.
fn check(path: &Path) -> Result<(), LaunchError> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) => Err(LaunchError {
            message: format!("cannot run '{shown}': {e}"),
            exit_code: NOT_FOUND,
        }),
        Ok(meta) if meta.is_dir() => Err(LaunchError {
            message: format!("cannot run '{shown}': it is a directory, not a program"),
            exit_code: NOT_EXECUTABLE,
        }),
        Ok(_) if !os::may_execute(path) => Err(LaunchError {
            message: format!(
                "cannot run '{shown}': it is not executable by you (chmod +x '{shown}'?)"
            ),
            exit_code: NOT_EXECUTABLE,
        }),
        Ok(_) => Ok(()),
    }
}
