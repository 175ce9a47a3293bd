//! Access modes (`MPI_MODE_*`): the standard's rules, and the `open(2)` flags they become.

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use std::ffi::c_int;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;

/// Every bit an access mode may have.
const KNOWN: c_int = MPI_MODE_RDONLY
    | MPI_MODE_RDWR
    | MPI_MODE_WRONLY
    | MPI_MODE_CREATE
    | MPI_MODE_EXCL
    | MPI_MODE_DELETE_ON_CLOSE
    | MPI_MODE_UNIQUE_OPEN
    | MPI_MODE_APPEND
    | MPI_MODE_SEQUENTIAL;

/// The rules of MPI 3.1 §13.2.1: exactly one of `RDONLY`, `RDWR`, `WRONLY`; no `CREATE` or
/// `EXCL` with `RDONLY`; no `SEQUENTIAL` with `RDWR`; no unknown bit. `MPI_ERR_AMODE` names
/// the broken rule.
pub(crate) fn check(amode: c_int) -> MpiResult<()> {
    let bad = |why: String| Err(MpiError::new(MPI_ERR_AMODE, why));
    if amode & !KNOWN != 0 {
        return bad(format!(
            "the access mode {amode:#x} has bits no MPI_MODE_* constant has ({:#x})",
            amode & !KNOWN
        ));
    }
    let access = [MPI_MODE_RDONLY, MPI_MODE_RDWR, MPI_MODE_WRONLY]
        .iter()
        .filter(|&&m| amode & m != 0)
        .count();
    if access != 1 {
        return bad(format!(
            "the access mode {amode:#x} must have exactly one of MPI_MODE_RDONLY, MPI_MODE_RDWR and MPI_MODE_WRONLY (it has {access})"
        ));
    }
    if amode & MPI_MODE_RDONLY != 0 && amode & (MPI_MODE_CREATE | MPI_MODE_EXCL) != 0 {
        return bad("MPI_MODE_RDONLY cannot go with MPI_MODE_CREATE or MPI_MODE_EXCL".into());
    }
    if amode & MPI_MODE_RDWR != 0 && amode & MPI_MODE_SEQUENTIAL != 0 {
        return bad("MPI_MODE_SEQUENTIAL cannot go with MPI_MODE_RDWR".into());
    }
    Ok(())
}

/// How to open the file for `amode`; `create` for the one process that creates it (the
/// others open what it created, so `EXCL` fails only there); `read_too` opens a write-only
/// file for reading as well, for the read-modify-write of data sieving (as ROMIO does: the
/// access checks go by `amode`, not by the descriptor).
pub(crate) fn open_options(amode: c_int, create: bool, read_too: bool) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(read_too || amode & (MPI_MODE_RDONLY | MPI_MODE_RDWR) != 0)
        .write(amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR) != 0)
        .mode(0o666);
    if create && amode & MPI_MODE_CREATE != 0 {
        if amode & MPI_MODE_EXCL != 0 {
            o.create_new(true);
        } else {
            o.create(true);
        }
    }
    o
}

/// `MPI_ERR_ACCESS` for a read of a write-only file.
pub(crate) fn readable(amode: c_int) -> MpiResult<()> {
    if amode & MPI_MODE_WRONLY != 0 {
        return Err(MpiError::new(
            MPI_ERR_ACCESS,
            "the file was opened MPI_MODE_WRONLY; it cannot be read",
        ));
    }
    Ok(())
}

/// `MPI_ERR_READ_ONLY` for a write to a read-only file (as MPICH's ROMIO answers).
pub(crate) fn writable(amode: c_int) -> MpiResult<()> {
    if amode & MPI_MODE_RDONLY != 0 {
        return Err(MpiError::new(
            MPI_ERR_READ_ONLY,
            "the file was opened MPI_MODE_RDONLY; it cannot be written",
        ));
    }
    Ok(())
}

/// `MPI_ERR_UNSUPPORTED_OPERATION` for explicit-offset and individual-pointer calls on a file
/// opened `MPI_MODE_SEQUENTIAL` (only shared file pointers may access it).
pub(crate) fn not_sequential(amode: c_int, call: &str) -> MpiResult<()> {
    if amode & MPI_MODE_SEQUENTIAL != 0 {
        return Err(MpiError::new(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("{call} cannot be used on a file opened MPI_MODE_SEQUENTIAL (only the shared file pointer calls can)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_rules() {
        assert!(check(MPI_MODE_RDONLY).is_ok());
        assert!(check(MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL).is_ok());
        assert!(check(MPI_MODE_WRONLY | MPI_MODE_APPEND | MPI_MODE_DELETE_ON_CLOSE).is_ok());
        assert!(check(MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_UNIQUE_OPEN).is_ok());
        for bad in [
            0,
            MPI_MODE_CREATE,
            MPI_MODE_RDONLY | MPI_MODE_RDWR,
            MPI_MODE_RDWR | MPI_MODE_WRONLY,
            MPI_MODE_RDONLY | MPI_MODE_CREATE,
            MPI_MODE_RDONLY | MPI_MODE_EXCL,
            MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
            MPI_MODE_RDWR | 0x1000,
        ] {
            assert_eq!(check(bad).unwrap_err().class, MPI_ERR_AMODE, "{bad:#x}");
        }
    }

    #[test]
    fn access_checks() {
        assert_eq!(readable(MPI_MODE_WRONLY).unwrap_err().class, MPI_ERR_ACCESS);
        assert!(readable(MPI_MODE_RDWR).is_ok());
        assert_eq!(
            writable(MPI_MODE_RDONLY).unwrap_err().class,
            MPI_ERR_READ_ONLY
        );
        assert!(writable(MPI_MODE_WRONLY).is_ok());
        assert_eq!(
            not_sequential(MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, "MPI_File_write_at")
                .unwrap_err()
                .class,
            MPI_ERR_UNSUPPORTED_OPERATION
        );
    }
}
