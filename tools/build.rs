//! Build script of the MPI tools: bakes into the wrappers the two directories they fall back
//! on when they do not run from an installation (see `src/wrapper/layout.rs`).
//!
//! - `MPI_TOOLS_SOURCE_INCLUDE`: the source tree's `c-abi/include`, where `mpi.h` is written
//!   by hand (the tools are built in `tools/`, beside `c-abi/`).
//! - `MPI_TOOLS_BUILD_INCLUDE`: `target/<profile>/include`, where `c-abi`'s build script copies
//!   the `mpif.h` and `mpi.mod` it generates. It is found three levels above
//!   `OUT_DIR = target/<profile>/build/<pkg>/out`, as `c-abi/build.rs` finds it; a copy of a
//!   wrapper made elsewhere (the tests stage some) still finds the Fortran files of its build.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .expect("tools/ lives in the workspace");
    let source_include = workspace.join("c-abi").join("include");
    println!(
        "cargo:rustc-env=MPI_TOOLS_SOURCE_INCLUDE={}",
        source_include.display()
    );

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let profile_dir = out_dir
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is target/<profile>/build/<pkg>/out");
    let build_include = profile_dir.join("include");
    println!(
        "cargo:rustc-env=MPI_TOOLS_BUILD_INCLUDE={}",
        build_include.display()
    );
}
