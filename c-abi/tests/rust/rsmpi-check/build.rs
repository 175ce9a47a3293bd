//! Build script of rsmpi-check: gives the binary the run path of the MPI library it links.
//!
//! mpi-sys's build script takes the library's name and directory from `$MPICC -show` but not
//! the wrapper's `-Wl,-rpath`, so a program linked that way would look for `libmpi.so.12` in
//! the system's directories at run time. This script asks the same wrapper and passes its
//! run-path options on to the linker, so the binary runs on the library it was built against.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MPICC");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".to_owned());
    let shown = match Command::new(&mpicc).arg("-show").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => panic!(
            "`{mpicc} -show` failed ({}): set MPICC to this project's target/release/mpicc",
            out.status
        ),
        Err(e) => panic!(
            "cannot run `{mpicc} -show` ({e}): set MPICC to this project's target/release/mpicc (after `cargo build --release`)"
        ),
    };
    for arg in shown.split_whitespace() {
        if arg.starts_with("-Wl,-rpath,") || arg.starts_with("-Wl,-rpath=") {
            println!("cargo:rustc-link-arg={arg}");
        }
    }
}
