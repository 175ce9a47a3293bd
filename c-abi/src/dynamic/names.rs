//! The name service of `MPI_Publish_name`, `MPI_Lookup_name` and `MPI_Unpublish_name`: one
//! file per published service in a directory every job that should see the names can read.
//!
//! The directory is `MPI_NAME_SERVICE_DIR`, default `$TMPDIR/mpi-names-<uid>` (made with mode
//! 0700, so other users neither read nor plant names). A service name is stored as a file named
//! by the name's hex digits (any name is a safe file name then), holding the port name.
//! Publishing a name that is published already fails with `MPI_ERR_SERVICE` (creating the file
//! is exclusive, so two publishers never both succeed); looking up an unknown name with
//! `MPI_ERR_NAME`; unpublishing one that is not there (or with another port) with
//! `MPI_ERR_SERVICE`. Jobs on other hosts share names through a shared directory.

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

/// The directory of published names, made if missing.
fn directory() -> MpiResult<PathBuf> {
    let dir = match std::env::var_os("MPI_NAME_SERVICE_DIR").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        // SAFETY: getuid has no preconditions and cannot fail.
        None => std::env::temp_dir().join(format!("mpi-names-{}", unsafe { libc::getuid() })),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| {
            MpiError::new(
                MPI_ERR_SERVICE,
                format!(
                    "the name service directory {}: {e} (set MPI_NAME_SERVICE_DIR)",
                    dir.display()
                ),
            )
        })?;
    Ok(dir)
}

fn entry(service: &str) -> MpiResult<PathBuf> {
    if service.is_empty() {
        return Err(MpiError::new(MPI_ERR_ARG, "the service name is empty"));
    }
    let file: String = service.bytes().map(|b| format!("{b:02x}")).collect();
    Ok(directory()?.join(file))
}

pub(crate) fn publish(service: &str, port: &str) -> MpiResult<()> {
    let path = entry(service)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                MpiError::new(
                    MPI_ERR_SERVICE,
                    format!(
                        "the service name '{service}' is published already; unpublish it first"
                    ),
                )
            } else {
                MpiError::new(MPI_ERR_SERVICE, format!("publishing '{service}': {e}"))
            }
        })?;
    f.write_all(port.as_bytes()).map_err(|e| {
        let _ = std::fs::remove_file(&path);
        MpiError::new(MPI_ERR_SERVICE, format!("publishing '{service}': {e}"))
    })
}

pub(crate) fn lookup(service: &str) -> MpiResult<String> {
    let path = entry(service)?;
    match std::fs::read_to_string(&path) {
        Ok(port) if !port.is_empty() => Ok(port),
        _ => Err(MpiError::new(
            MPI_ERR_NAME,
            format!("no service named '{service}' is published (MPI_Publish_name)"),
        )),
    }
}

pub(crate) fn unpublish(service: &str, port: &str) -> MpiResult<()> {
    let path = entry(service)?;
    let unknown = || {
        MpiError::new(
            MPI_ERR_SERVICE,
            format!("the service name '{service}' is not published with port {port}"),
        )
    };
    match std::fs::read_to_string(&path) {
        Ok(p) if p == port => std::fs::remove_file(&path).map_err(|_| unknown()),
        _ => Err(unknown()),
    }
}
