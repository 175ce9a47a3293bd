//! Build script of `libmpi.so`.
//!
//! 1. **The header is the single source of truth.** bindgen reads `include/mpi.h` and writes
//!    `$OUT_DIR/mpi_h.rs`: every constant (handles, error classes, limits), the `MPI_Status`
//!    struct and the handle types, plus the function prototypes (`src/abi.rs` includes it; the
//!    prototypes are used only to check at compile time that each exported function has the
//!    type the header declares). Handle constants are cast macros such as
//!    `((MPI_Comm)0x44000000)`, which bindgen's own macro parser does not evaluate; its
//!    `clang_macro_fallback` lets libclang evaluate them instead.
//! 2. **Library names.** The cdylib gets the soname `libmpi.so.12` (MPICH's ABI version), and
//!    the target profile directory gets `libmpi.so.12`, `libmpich.so.12`, `libmpich.so` and
//!    `libmpichfort.so.12` as symlinks to `libmpi.so`, so that a program linked with `-lmpi`
//!    here, or built by MPICH's own `mpicc` (which records `libmpich.so.12`) or `mpifort`
//!    (`libmpichfort.so.12` too: the Fortran entry points are in `libmpi.so`), finds this
//!    library there.
//! 3. **Fortran.** `fortran/generate.rs` turns the bindings into `mpif.h` and `mpi.mod`
//!    (and `fortran/generate_f08.rs` into `mpi_f08.mod`, `pmpi_f08.mod` and their few entry
//!    points)
//!    (`$OUT_DIR/fortran/`, copied to `target/<profile>/include/` where `mpifort` finds them)
//!    and into the Fortran entry points `mpi_x_` of every implemented C function
//!    (`$OUT_DIR/fortran_entry_points.rs`, included by `src/fortran/`).

use std::env;
use std::path::{Path, PathBuf};

#[path = "fortran/generate.rs"]
mod fortran;
#[path = "fortran/generate_f08.rs"]
mod fortran_f08;

const HEADER: &str = "include/mpi.h";

/// The names under which the profile directory offers `libmpi.so`.
const LIBRARY_ALIASES: &[&str] = &[
    "libmpi.so.12",
    "libmpich.so.12",
    "libmpich.so",
    "libmpichfort.so.12",
];

fn main() {
    println!("cargo:rerun-if-changed={HEADER}");
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    generate_bindings(&out_dir);
    generate_fortran(&out_dir);

    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmpi.so.12");
    link_library_aliases(&out_dir);
}

/// Runs bindgen over `mpi.h` into `$OUT_DIR/mpi_h.rs`.
fn generate_bindings(out_dir: &Path) {
    let builder = bindgen::Builder::default()
        .header(HEADER)
        // Evaluate cast macros like `((MPI_Comm)0x44000000)` through libclang.
        .clang_macro_fallback()
        .clang_macro_fallback_build_dir(out_dir)
        .allowlist_item("P?MPIX?_.*")
        // Pointer-valued macros (MPI_BOTTOM, MPI_STATUS_IGNORE, ...) are not bound by bindgen;
        // `src/abi.rs` defines them, and its tests compare them with what C sees.
        // Every integer constant of mpi.h is a C `int` (handles included): type them so.
        .parse_callbacks(Box::new(IntConstants))
        .derive_default(true)
        .derive_debug(true)
        .derive_eq(true)
        .layout_tests(false);
    // bindgen loads libclang at run time and panics if it is missing: say what to install.
    let generated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| builder.generate()))
        .unwrap_or_else(|panic| {
            println!("cargo:warning=bindgen needs libclang to read {HEADER}: install it (Debian: apt-get install libclang-dev)");
            std::panic::resume_unwind(panic)
        });
    let bindings = generated.unwrap_or_else(|e| panic!("bindgen could not read {HEADER}: {e}"));
    bindings
        .write_to_file(out_dir.join("mpi_h.rs"))
        .expect("could not write the bindings to OUT_DIR");
}

/// Gives every integer macro of `mpi.h` the Rust type `c_int`, as C gives it (bindgen would
/// otherwise pick `u32` or `i32` from the value alone). A value outside `int` is a mistake in
/// the header and stops the build.
#[derive(Debug)]
struct IntConstants;

impl bindgen::callbacks::ParseCallbacks for IntConstants {
    fn int_macro(&self, name: &str, value: i64) -> Option<bindgen::callbacks::IntKind> {
        assert!(
            i32::try_from(value).is_ok(),
            "{HEADER}: {name} = {value} does not fit a C int"
        );
        Some(bindgen::callbacks::IntKind::Int)
    }
}

/// The Fortran binding (see `fortran/generate.rs`). It scans `src/` for the functions the
/// library implements, so it reruns when `src/` changes.
fn generate_fortran(out_dir: &Path) {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=fortran/generate.rs");
    println!("cargo:rerun-if-changed=fortran/generate_f08.rs");
    let bindings =
        std::fs::read_to_string(out_dir.join("mpi_h.rs")).expect("bindings were just written");
    // The f08 generator first: it also writes `mpi_interfaces.h`, which the `mpi` module
    // (compiled by `fortran::run`) includes.
    fortran_f08::run(&bindings, Path::new("src"), out_dir);
    fortran::run(&bindings, Path::new("src"), Path::new("fortran"), out_dir);
    // Beside the tools, as `include/`: where mpifort looks in a build directory.
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        return;
    };
    let include = profile_dir.join("include");
    let _ = std::fs::create_dir_all(&include);
    for file in ["mpif.h", "mpi.mod", "mpi_f08.mod", "pmpi_f08.mod"] {
        let from = out_dir.join("fortran").join(file);
        if from.is_file() {
            if let Err(e) = std::fs::copy(&from, include.join(file)) {
                println!("cargo:warning=could not copy {file} to {include:?}: {e}");
            }
        } else {
            // Not built this time (no gfortran): no stale copy either.
            let _ = std::fs::remove_file(include.join(file));
        }
    }
}

/// Makes the MPICH-compatible library names point at `libmpi.so` in the profile directory
/// (`target/<profile>/`, three levels above `OUT_DIR = target/<profile>/build/<pkg>/out`).
fn link_library_aliases(out_dir: &Path) {
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        println!("cargo:warning=cannot find the target profile directory above {out_dir:?}");
        return;
    };
    for alias in LIBRARY_ALIASES {
        let link = profile_dir.join(alias);
        // A stale file or link of that name is replaced; a relative target keeps the
        // directory relocatable (the install command copies it whole).
        let _ = std::fs::remove_file(&link);
        if let Err(e) = std::os::unix::fs::symlink("libmpi.so", &link) {
            println!("cargo:warning=could not create {link:?} -> libmpi.so: {e}");
        }
    }
}
