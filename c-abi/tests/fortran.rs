//! The Fortran binding, tested as Fortran programs: `tests/f/*.f` (fixed form,
//! `include 'mpif.h'`) and `tests/f/*.f90` (`use mpi`), compiled by this build's `mpifort`
//! and run as real MPI jobs with `mpirun`. Each program checks its own results; rank 0 prints
//! `OK <name>` (see `tests/common/mod.rs`). Also tests of the Fortran wrappers themselves.
//!
//! gfortran is required: CI installs it, and without it these tests fail with a message
//! saying so rather than passing silently.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// This build's tools and library staged together (see `common::stage_build`): `mpifort`
/// finds `mpif.h` and `mpi.mod` in the build script's output of this build.
fn tools_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fortran-tools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the tools directory");
        common::stage_build(&dir, &["mpifort", "mpif77", "mpif90"]);
        dir
    })
    .clone()
}

/// Fails the test with a clear message when gfortran is missing.
fn require_gfortran() {
    let found = Command::new("gfortran")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "gfortran is not installed: the Fortran tests need it (Debian: apt-get install gfortran)"
    );
}

/// One build at a time (two cores); each program once per run.
static BUILD: Mutex<()> = Mutex::new(());

/// `tests/f/<file>` compiled with this build's `wrapper` (`mpifort`, `mpif77`, `mpif90`).
fn build(wrapper: &str, file: &str) -> PathBuf {
    let stem = Path::new(file)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    build_with_path(
        &tools_dir().join(wrapper),
        file,
        &format!("{stem}-{wrapper}"),
    )
}

/// `tests/f/<file>` compiled with the wrapper at `wrapper` into `<output>`.
fn build_with_path(wrapper: &Path, file: &str, output: &str) -> PathBuf {
    require_gfortran();
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/f")
        .join(file);
    let out_dir = tools_dir().join("programs");
    std::fs::create_dir_all(&out_dir).expect("create the programs directory");
    let exe = out_dir.join(output);
    let wrapper_name = wrapper.display();
    // The -J directory keeps gfortran's .mod files of the programs out of the source tree.
    let out = Command::new(wrapper)
        .env_remove("MPICH_FC")
        .env_remove("MPICH_F77")
        .env_remove("MPICH_F90")
        // -I: the programs' shared include file (tests/f/mpitest.fh).
        .arg("-I")
        .arg(source.parent().expect("tests/f"))
        .args(["-O1", "-Wall", "-J"])
        .arg(&out_dir)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {wrapper_name}: {e}"));
    assert!(
        out.status.success(),
        "{wrapper_name} failed to build {}:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run_ok(wrapper: &str, file: &str, name: &str, ranks: usize) {
    let exe = build(wrapper, file);
    let run = common::mpirun(
        &exe,
        &common::Launch {
            ranks,
            ..Default::default()
        },
    );
    common::assert_ok(&run, name);
}

#[test]
fn point_to_point_ring_with_statuses() {
    run_ok("mpifort", "ring.f", "ring", 3);
}

#[test]
fn point_to_point_on_one_rank() {
    run_ok("mpif77", "ring.f", "ring", 1);
}

#[test]
fn collectives_in_place_and_user_op() {
    run_ok("mpifort", "coll.f", "coll", 4);
}

#[test]
fn collectives_on_an_odd_number_of_ranks() {
    run_ok("mpifort", "coll.f", "coll", 3);
}

#[test]
fn derived_types_vector_and_struct_from_mpi_bottom() {
    run_ok("mpifort", "dtype.f", "dtype", 2);
}

#[test]
fn communicators_names_topologies_attributes() {
    run_ok("mpifort", "comm.f", "comm", 4);
}

#[test]
fn attributes_with_fortran_callbacks() {
    run_ok("mpifort", "attr.f", "attr", 2);
}

#[test]
fn fortran_90_use_mpi() {
    run_ok("mpif90", "modern.f90", "modern", 3);
}

/// `mpif.h` must be valid fixed form: every line within 72 columns, so that nothing is cut
/// off silently (gfortran only warns about truncated lines).
#[test]
fn mpif_h_fits_fixed_form() {
    let out = Command::new(tools_dir().join("mpifort"))
        .arg("-show-compile-info")
        .output()
        .expect("run mpifort");
    let flags = String::from_utf8_lossy(&out.stdout).into_owned();
    let include = flags
        .split_whitespace()
        .find_map(|w| w.strip_prefix("-I"))
        .unwrap_or_else(|| panic!("no -I in mpifort's flags: {flags}"));
    let header = std::fs::read_to_string(Path::new(include).join("mpif.h")).expect("read mpif.h");
    for (i, line) in header.lines().enumerate() {
        assert!(
            line.len() <= 72,
            "mpif.h:{}: longer than 72 columns: {line}",
            i + 1
        );
        assert!(
            line.starts_with('!') || line.starts_with("       "),
            "mpif.h:{}: neither a comment nor a statement from column 8: {line}",
            i + 1
        );
    }
    for needed in [
        "MPI_STATUS_SIZE=5",
        "MPI_SOURCE=3",
        "MPI_ADDRESS_KIND=8",
        "COMMON /MPIPRIV1/",
    ] {
        assert!(header.contains(needed), "mpif.h lacks {needed}");
    }
    // Every value both headers define must be MPICH's: a program compiled against MPICH's
    // mpif.h passes those values to this library.
    let mpich = Path::new("/usr/include/x86_64-linux-gnu/mpich/mpif.h");
    let Ok(theirs) = std::fs::read_to_string(mpich) else {
        println!("note: MPICH's mpif.h is not installed; skipping the comparison");
        return;
    };
    let (ours, theirs) = (parameters(&header), parameters(&theirs));
    let mut compared = 0;
    for (name, value) in &theirs {
        if let Some(our_value) = ours.get(name) {
            assert_eq!(our_value, value, "{name} differs from MPICH's mpif.h");
            compared += 1;
        }
    }
    assert!(
        compared > 200,
        "only {compared} constants in common with MPICH's mpif.h"
    );
}

/// The integer `PARAMETER`s of an `mpif.h`: `PARAMETER (NAME=value)` with a number or
/// `a-b` (MPICH writes `128-1`); other forms are left out.
fn parameters(header: &str) -> std::collections::BTreeMap<String, i64> {
    header
        .lines()
        .filter_map(|line| {
            let inner = line.trim().strip_prefix("PARAMETER (")?.strip_suffix(')')?;
            let (name, value) = inner.split_once('=')?;
            Some((name.trim().to_owned(), evaluate(value)?))
        })
        .collect()
}

/// A number, or `a-b`, possibly in parentheses.
fn evaluate(expression: &str) -> Option<i64> {
    let e = expression
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')');
    if let Ok(n) = e.parse() {
        return Some(n);
    }
    let i = e.get(1..)?.find('-')? + 1;
    Some(evaluate(&e[..i])? - evaluate(&e[i + 1..])?)
}

#[test]
fn mpifort_show_names_gfortran_and_the_library() {
    let out = Command::new(tools_dir().join("mpifort"))
        .env_remove("MPICH_FC")
        .args(["-show", "-o", "prog", "prog.f"])
        .output()
        .expect("run mpifort");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let dir = tools_dir();
    assert!(line.starts_with("gfortran -o prog prog.f -I"), "{line}");
    assert!(line.contains(&format!("-L{}", dir.display())), "{line}");
    assert!(
        line.contains(&format!("-Wl,-rpath,{}", dir.display())),
        "{line}"
    );
    assert!(line.trim_end().ends_with("-lmpi"), "{line}");
}

#[test]
fn each_wrapper_honours_its_variable() {
    for (wrapper, variable) in [
        ("mpifort", "MPICH_FC"),
        ("mpif77", "MPICH_F77"),
        ("mpif90", "MPICH_F90"),
    ] {
        let out = Command::new(tools_dir().join(wrapper))
            .env(variable, "my-fortran -m64")
            .args(["-show", "-c", "x.f"])
            .output()
            .expect("run the wrapper");
        let line = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            line.starts_with("my-fortran -m64 -c x.f -I"),
            "{wrapper}: {line}"
        );
        assert!(
            !line.contains("-lmpi"),
            "{wrapper} -c must not link: {line}"
        );
    }
}

#[test]
fn missing_compiler_says_to_install_gfortran() {
    let out = Command::new(tools_dir().join("mpifort"))
        .env("MPICH_FC", "no-such-fortran-compiler")
        .args(["-c", "x.f"])
        .output()
        .expect("run mpifort");
    assert_eq!(out.status.code(), Some(127));
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(
        message.contains("gfortran") && message.contains("MPICH_FC"),
        "{message}"
    );
}

/// `mpi-install` lays out `mpif.h`, `mpi.mod` and the Fortran wrappers, and the installed
/// `mpifort` builds a program that runs, finding everything under the prefix.
#[test]
fn installed_mpifort_builds_and_runs() {
    require_gfortran();
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fortran-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let build_dir = root.join("build");
    std::fs::create_dir_all(&build_dir).expect("create the build directory");
    common::stage_build(
        &build_dir,
        &[
            "mpicc",
            "mpicxx",
            "mpirun",
            "mpiexec",
            "mpi-install",
            "mpifort",
            "mpif77",
            "mpif90",
        ],
    );
    let prefix = root.join("prefix");
    let out = Command::new(build_dir.join("mpi-install"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--build-dir")
        .arg(&build_dir)
        .output()
        .expect("run mpi-install");
    assert!(
        out.status.success(),
        "mpi-install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in [
        "include/mpif.h",
        "include/mpi.mod",
        "bin/mpifort",
        "bin/mpif77",
        "bin/mpif90",
    ] {
        assert!(prefix.join(file).is_file(), "{file} was not installed");
    }

    let prefix = prefix.canonicalize().expect("canonical prefix");
    let show = Command::new(prefix.join("bin/mpif90"))
        .env_remove("MPICH_F90")
        .args(["-show", "x.f90"])
        .output()
        .expect("run mpif90");
    let line = String::from_utf8_lossy(&show.stdout).into_owned();
    assert!(
        line.contains(&format!("-I{}", prefix.join("include").display())),
        "{line}"
    );
    assert!(
        line.contains(&format!("-L{}", prefix.join("lib").display())),
        "{line}"
    );

    let exe = root.join("modern");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/f/modern.f90");
    let built = Command::new(prefix.join("bin/mpif90"))
        .env_remove("MPICH_F90")
        .arg("-J")
        .arg(&root)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the installed mpif90");
    assert!(
        built.status.success(),
        "installed mpif90 failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = common::mpirun(
        &exe,
        &common::Launch {
            ranks: 2,
            ..Default::default()
        },
    );
    common::assert_ok(&run, "modern");
}

/// A Fortran program built by MPICH's own `mpif77` (MPICH's `mpif.h`, linked with
/// `libmpichfort.so.12` and `libmpich.so.12`) runs on this library: the constants, the
/// common blocks and the entry points are MPICH's. Skipped, with a note, without MPICH.
#[test]
fn program_built_by_mpich_mpif77_runs_on_our_library() {
    let Some(mpich_f77) = common::installed("mpif77.mpich") else {
        println!("note: MPICH's mpif77.mpich is not installed (Debian: apt-get install mpich libmpich-dev); skipping");
        return;
    };
    let exe = build_with_path(&mpich_f77, "ring.f", "ring-built-by-mpich");
    // The library under MPICH's Fortran name, beside the others.
    let dir = tools_dir();
    let alias = dir.join("libmpichfort.so.12");
    if !alias.exists() {
        let _ = std::os::unix::fs::symlink("libmpi.so", &alias);
    }
    let mut search = std::ffi::OsString::from(&dir);
    if let Some(previous) = std::env::var_os("LD_LIBRARY_PATH") {
        search.push(":");
        search.push(previous);
    }
    let launch = common::Launch {
        ranks: 2,
        env: vec![("LD_LIBRARY_PATH", search)],
        ..Default::default()
    };
    let run = common::mpirun(&exe, &launch);
    common::assert_ok(&run, "ring");
    let library = run
        .stdout
        .lines()
        .find(|l| l.starts_with("library: "))
        .unwrap_or_default();
    assert!(
        !library.is_empty() && !library.starts_with("library: MPICH"),
        "the MPICH-built program did not load our library:{}",
        run.describe()
    );
}

/// The C side: status conversions and the exported handle conversion functions.
#[test]
fn c_status_and_handle_conversions() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/f/convert.c");
    let exe = tools_dir().join("convert");
    let out = Command::new(common::mpicc())
        .env_remove("MPICH_CC")
        .args(["-std=c99", "-Wall", "-Werror"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg("-ldl")
        .output()
        .expect("run mpicc");
    assert!(
        out.status.success(),
        "mpicc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = common::mpirun(
        &exe,
        &common::Launch {
            ranks: 1,
            ..Default::default()
        },
    );
    common::assert_ok(&run, "convert");
}
