//! The Fortran binding, tested as Fortran programs: `tests/f/*.f` (fixed form,
//! `include 'mpif.h'`) and `tests/f/*.f90` (`use mpi`), compiled by this build's `mpifort`
//! and run as real MPI jobs with `mpirun`. Each program checks its own results; rank 0 prints
//! `OK <name>` (see `tests/common/mod.rs`). Also tests of the Fortran wrappers themselves.
//! The MPI-IO programs (`file*.f90`, `file77.f`) make their files in a directory of their
//! own (`FILE_TEST_DIR`) and must leave it empty; they also run when built by MPICH's
//! `mpif77.mpich`/`mpif90.mpich`, on this library. They were checked against MPICH 4.0.2 too
//! (built by its wrappers, run by `mpiexec.mpich` with `FILE_TEST_DIR` set), except
//! `file_datarep.f90` (MPICH's `mpi` module has no `MPI_CONVERSION_FN_NULL`); where MPICH
//! deviates, the program says so and tolerates it under MPICH only.
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
        let dir = mpi_staging::private_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "fortran-tools");
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

/// Runs the MPI-IO program `exe` on `ranks` ranks with its files in a fresh directory, with
/// `env` added; asserts that it passed and left no file behind.
fn run_file_program(
    exe: &Path,
    name: &str,
    ranks: usize,
    env: &[(&'static str, std::ffi::OsString)],
) -> common::JobRun {
    let dir = common::Scratch::new("fortran", &format!("{name}-{ranks}"));
    let mut launch = common::Launch {
        ranks,
        ..Default::default()
    };
    launch
        .env
        .push(("FILE_TEST_DIR", dir.0.as_os_str().to_owned()));
    launch.env.extend(env.iter().cloned());
    let run = common::mpirun(exe, &launch);
    common::assert_ok(&run, name);
    // The programs delete their files (DELETE_ON_CLOSE, MPI_FILE_DELETE).
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .expect("read the job's directory")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{name} left files behind: {left:?}");
    run
}

/// MPI-IO with `use mpi` (`tests/f/file.f90`): open, a vector view, write_at_all, read_at,
/// seek/read/get_position, get_size/set_size, a read past the end, error classes, a file
/// error handler in Fortran, close, delete; on 1, 2 and 4 ranks.
#[test]
fn file_io_use_mpi_on_1_2_4_ranks() {
    let exe = build("mpif90", "file.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "file", ranks, &[]);
    }
}

/// The other data access calls from Fortran (`tests/f/file_more.f90`): nonblocking
/// (`MPI_WAIT` on their requests), split collectives, the shared file pointer; on 1, 2 and 4
/// ranks.
#[test]
fn file_nonblocking_split_and_shared_from_fortran() {
    let exe = build("mpif90", "file_more.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "file_more", ranks, &[]);
    }
}

/// `MPI_REGISTER_DATAREP` with Fortran conversion and extent functions and
/// `MPI_CONVERSION_FN_NULL` (`tests/f/file_datarep.f90`); on 1, 2 and 4 ranks.
#[test]
fn file_datarep_with_fortran_conversion_functions() {
    let exe = build("mpif90", "file_datarep.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "file_datarep", ranks, &[]);
    }
}

/// MPI-IO with `include 'mpif.h'` (`tests/f/file77.f`): 8-byte offsets and constants,
/// write_at_all/read_at between ranks, an exclusive create of an existing file; on 1, 2 and
/// 4 ranks.
#[test]
fn file_io_fortran_77_on_1_2_4_ranks() {
    let exe = build("mpif77", "file77.f");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "file77", ranks, &[]);
    }
}

/// The text of the `mpif.h` that this build's `mpifort` uses.
fn our_mpif_h() -> String {
    let out = Command::new(tools_dir().join("mpifort"))
        .arg("-show-compile-info")
        .output()
        .expect("run mpifort");
    let flags = String::from_utf8_lossy(&out.stdout).into_owned();
    let include = flags
        .split_whitespace()
        .find_map(|w| w.strip_prefix("-I"))
        .unwrap_or_else(|| panic!("no -I in mpifort's flags: {flags}"));
    std::fs::read_to_string(Path::new(include).join("mpif.h")).expect("read mpif.h")
}

/// `mpif.h` must be valid fixed form: every line within 72 columns, so that nothing is cut
/// off silently (gfortran only warns about truncated lines).
#[test]
fn mpif_h_fits_fixed_form() {
    let header = our_mpif_h();
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

/// The MPI-IO constants of `mpif.h`, with MPICH's values (its `mpif.h` of 4.0.2), so that a
/// missing one is noticed even where MPICH is not installed; `MPI_DISPLACEMENT_CURRENT` is
/// an `INTEGER(KIND=MPI_OFFSET_KIND)` (MPICH's `integer*8`): it is passed as an offset.
#[test]
fn mpif_h_has_the_file_constants() {
    let header = our_mpif_h();
    let ours = parameters(&header);
    for (name, value) in [
        ("MPI_FILE_NULL", 0),
        ("MPI_OFFSET_KIND", 8),
        ("MPI_MODE_RDONLY", 2),
        ("MPI_MODE_RDWR", 8),
        ("MPI_MODE_WRONLY", 4),
        ("MPI_MODE_CREATE", 1),
        ("MPI_MODE_EXCL", 64),
        ("MPI_MODE_DELETE_ON_CLOSE", 16),
        ("MPI_MODE_UNIQUE_OPEN", 32),
        ("MPI_MODE_APPEND", 128),
        ("MPI_MODE_SEQUENTIAL", 256),
        ("MPI_SEEK_SET", 600),
        ("MPI_SEEK_CUR", 602),
        ("MPI_SEEK_END", 604),
        ("MPI_ORDER_C", 56),
        ("MPI_ORDER_FORTRAN", 57),
        ("MPI_DISTRIBUTE_BLOCK", 121),
        ("MPI_DISTRIBUTE_CYCLIC", 122),
        ("MPI_DISTRIBUTE_NONE", 123),
        ("MPI_DISTRIBUTE_DFLT_DARG", -49767),
        ("MPI_DISPLACEMENT_CURRENT", -54278278),
        ("MPI_MAX_DATAREP_STRING", 127),
        ("MPI_ERR_FILE", 27),
        ("MPI_ERR_NO_SUCH_FILE", 37),
        ("MPI_ERR_FILE_EXISTS", 25),
        ("MPI_ERR_AMODE", 21),
        ("MPI_ERR_ACCESS", 20),
        ("MPI_ERR_READ_ONLY", 40),
        ("MPI_ERR_NO_SPACE", 36),
        ("MPI_ERR_QUOTA", 39),
        ("MPI_ERR_IO", 32),
        ("MPI_ERR_BAD_FILE", 22),
        ("MPI_ERR_FILE_IN_USE", 26),
        ("MPI_ERR_CONVERSION", 23),
        ("MPI_ERR_DUP_DATAREP", 24),
        ("MPI_ERR_UNSUPPORTED_DATAREP", 43),
    ] {
        assert_eq!(ours.get(name), Some(&value), "{name} in mpif.h");
    }
    assert!(
        header.contains("INTEGER(KIND=MPI_OFFSET_KIND) MPI_DISPLACEMENT_CURRENT"),
        "MPI_DISPLACEMENT_CURRENT must be an offset-kind integer"
    );
    assert!(header.contains("EXTERNAL MPI_CONVERSION_FN_NULL"));
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
/// `mpifort` builds a program that runs, finding everything under the prefix (`mpi.mod` and
/// `mpi_f08.mod` too: a `use mpi` and a `use mpi_f08` program).
#[test]
fn installed_mpifort_builds_and_runs() {
    require_gfortran();
    let root = mpi_staging::private_dir(Path::new(env!("CARGO_TARGET_TMPDIR")), "fortran-install");
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
        "include/mpi_f08.mod",
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

    // A `use mpi` program by the installed mpif90, a `use mpi_f08` one by its mpifort.
    for (wrapper, variable, program) in [
        ("mpif90", "MPICH_F90", "modern"),
        ("mpifort", "MPICH_FC", "f08_hello"),
    ] {
        let exe = root.join(program);
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/f")
            .join(format!("{program}.f90"));
        let built = Command::new(prefix.join("bin").join(wrapper))
            .env_remove(variable)
            .arg("-J")
            .arg(&root)
            .arg(&source)
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("run the installed wrapper");
        assert!(
            built.status.success(),
            "installed {wrapper} failed: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        let run = common::mpirun(
            &exe,
            &common::Launch {
                ranks: 2,
                ..Default::default()
            },
        );
        common::assert_ok(&run, program);
    }
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
    let launch = common::Launch {
        ranks: 2,
        env: vec![("LD_LIBRARY_PATH", our_library_first())],
        ..Default::default()
    };
    let run = common::mpirun(&exe, &launch);
    common::assert_ok(&run, "ring");
    assert_ran_on_our_library(&run);
}

/// The search path that makes a program linked by MPICH's wrappers load this library: the
/// staged directory (with `libmpichfort.so.12`, MPICH's Fortran name, beside the others).
fn our_library_first() -> std::ffi::OsString {
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
    search
}

/// The program printed `library: ...` with a version line that is not MPICH's.
fn assert_ran_on_our_library(run: &common::JobRun) {
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

/// The MPI-IO programs built by MPICH's own wrappers (`file77.f` by `mpif77.mpich` with
/// MPICH's `mpif.h`, `file.f90` and `file_more.f90` by `mpif90.mpich` with MPICH's `mpi`
/// module) run on this
/// library: MPICH's Fortran file handles are integers too (its `MPI_File_c2f` numbers), and
/// its `mpi_file_open_` & co take the same arguments. Skipped, with a note, without MPICH.
#[test]
fn file_io_programs_built_by_mpich_run_on_our_library() {
    let (Some(mpich_f77), Some(mpich_f90)) = (
        common::installed("mpif77.mpich"),
        common::installed("mpif90.mpich"),
    ) else {
        println!("note: MPICH's Fortran wrappers are not installed (Debian: apt-get install mpich libmpich-dev); skipping");
        return;
    };
    // (Not file_datarep.f90: MPICH's `mpi` module lacks MPI_CONVERSION_FN_NULL.)
    for (wrapper, file, name) in [
        (&mpich_f77, "file77.f", "file77"),
        (&mpich_f90, "file.f90", "file"),
        (&mpich_f90, "file_more.f90", "file_more"),
    ] {
        let exe = build_with_path(wrapper, file, &format!("{name}-built-by-mpich"));
        for ranks in [1, 2] {
            let env = [("LD_LIBRARY_PATH", our_library_first())];
            let run = run_file_program(&exe, name, ranks, &env);
            assert_ran_on_our_library(&run);
        }
    }
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

// ---- The Fortran 2008 binding (`use mpi_f08`) -------------------------------------------------

/// `tests/f/<file>` (a `use mpi_f08` program) built with this build's `mpifort`, run on 1, 2
/// and 4 ranks.
fn run_f08_on_1_2_4(file: &str) {
    run_f08_on(file, &[1, 2, 4]);
}

/// `tests/f/<file>` (a `use mpi_f08` program) built with this build's `mpifort`, run on each
/// number of ranks of `rank_counts`.
fn run_f08_on(file: &str, rank_counts: &[usize]) {
    let name = file.trim_end_matches(".f90");
    let exe = build("mpifort", file);
    for &ranks in rank_counts {
        let run = common::mpirun(
            &exe,
            &common::Launch {
                ranks,
                ..Default::default()
            },
        );
        common::assert_ok(&run, name);
    }
}

/// `use mpi_f08` start to end (`f08_hello.f90`): MPI_Init without ierror, CHARACTER and
/// LOGICAL outputs, MPI_Wtime, `==`/`/=` on predefined handles, an allreduce.
#[test]
fn f08_hello_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_hello.f90");
}

/// Point to point through `mpi_f08` (`f08_p2p.f90`): TYPE(MPI_Status) fields and
/// MPI_Get_count, MPI_STATUS(ES)_IGNORE, a contiguous array section, probe, nonblocking
/// requests completed by MPI_Waitall with statuses, the status conversions.
#[test]
fn f08_point_to_point_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_p2p.f90");
}

/// Collectives through `mpi_f08` (`f08_coll.f90`): MPI_IN_PLACE, a user operation with the
/// f08 MPI_User_function interface, nonblocking collectives.
#[test]
fn f08_collectives_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_coll.f90");
}

/// Derived datatypes through `mpi_f08` (`f08_types.f90`): vector, struct from MPI_BOTTOM,
/// names, pack/unpack.
#[test]
fn f08_derived_types_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_types.f90");
}

/// Communicators and groups through `mpi_f08` (`f08_comm.f90`): dup/split/create, `==` with
/// the null handles after frees, attributes with the f08 predefined copy functions, a
/// Cartesian communicator from LOGICAL periods.
#[test]
fn f08_communicators_and_groups_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_comm.f90");
}

/// One-sided communication through `mpi_f08` (`f08_rma.f90`): fence and lock epochs, and
/// MPI_Win_allocate's TYPE(C_PTR).
#[test]
fn f08_rma_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_rma.f90");
}

/// MPI-IO through `mpi_f08` (`f08_file.f90`), in a directory of its own that it must leave
/// empty.
#[test]
fn f08_file_io_on_1_2_4_ranks() {
    let exe = build("mpifort", "f08_file.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "f08_file", ranks, &[]);
    }
}

/// Error handling through `mpi_f08` (`f08_errors.f90`): errors in `ierror` and without it
/// under MPI_ERRORS_RETURN, an f08 error handler procedure; then with
/// `F08_ERRORS_MODE=fatal`, an error without `ierror` under MPI_ERRORS_ARE_FATAL ends the job
/// with a failure and a message naming the error.
#[test]
fn f08_error_handling_with_and_without_ierror() {
    run_f08_on_1_2_4("f08_errors.f90");
    let exe = build("mpifort", "f08_errors.f90");
    let mut launch = common::Launch {
        ranks: 2,
        ..Default::default()
    };
    launch.env.push(("F08_ERRORS_MODE", "fatal".into()));
    let run = common::mpirun(&exe, &launch);
    assert!(!run.timed_out, "fatal f08_errors hung:{}", run.describe());
    assert_ne!(
        run.code(),
        Some(0),
        "a fatal error let the job succeed:{}",
        run.describe()
    );
    assert!(
        !run.stdout.contains("OK f08_errors") && !run.stdout.contains("FAIL"),
        "the fatal error returned:{}",
        run.describe()
    );
    let said = format!("{}{}", run.stdout, run.stderr).to_ascii_lowercase();
    assert!(
        said.contains("rank"),
        "no message about the invalid rank:{}",
        run.describe()
    );
}

/// `mpi_f08.mod` is installed beside `mpi.mod` where `mpifort` looks, and a program using it
/// links against the library alone: the module has no object code.
#[test]
fn mpi_f08_module_beside_mpi_module() {
    let out = Command::new(tools_dir().join("mpifort"))
        .arg("-show-compile-info")
        .output()
        .expect("run mpifort");
    let flags = String::from_utf8_lossy(&out.stdout).into_owned();
    let include = flags
        .split_whitespace()
        .find_map(|w| w.strip_prefix("-I"))
        .unwrap_or_else(|| panic!("no -I in mpifort's flags: {flags}"));
    for module in ["mpi.mod", "mpi_f08.mod"] {
        assert!(
            Path::new(include).join(module).is_file(),
            "{module} is not in {include}"
        );
    }
}

/// MPI 4.0 point-to-point from Fortran: `MPI_ISENDRECV(_REPLACE)` and a generalized request
/// with Fortran query, free and cancel procedures (the hand-written `MPI_GREQUEST_START`).
#[test]
fn isendrecv_and_generalized_requests_from_fortran() {
    run_ok("mpif90", "p2p_more.f90", "p2p_more", 1);
    run_ok("mpif90", "p2p_more.f90", "p2p_more", 3);
}

/// Generalized requests through `mpi_f08` (`f08_grequest.f90`): query/free/cancel procedures
/// of the f08 abstract interfaces, the status the query procedure fills returned by MPI_Wait.
#[test]
fn f08_generalized_requests_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_grequest.f90");
}

/// The large-count overloads of `mpi_f08` (`f08_large_count.f90`): `MPI_Send`, `MPI_Recv`,
/// `MPI_Isend`/`MPI_Irecv`, `MPI_Get_count`, `MPI_Bcast`, `MPI_Allreduce`, `MPI_Type_size`,
/// `MPI_Type_contiguous` with `INTEGER(KIND=MPI_COUNT_KIND)` counts resolve to the `_c`
/// procedures; a 3 GiB type's `INTEGER` size is `MPI_UNDEFINED`.
#[test]
fn f08_large_count_overloads_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_large_count.f90");
}

/// MPI 4.0's additions through `mpi_f08` (`f08_mpi4.f90`) and `use mpi` (`mpi4.f90`, the same
/// program with INTEGER handles): MPI_Init_thread granting MULTIPLE, partitioned
/// communication restarted three times (Pready, Pready_range, Pready_list, Parrived), neighbor
/// collectives on a periodic ring (blocking, nonblocking, persistent), Isendrecv(_replace),
/// Comm_idup, split_type HW_GUIDED, Pack_external (big-endian bytes checked), datatype
/// attributes, Type_match_size, Type_create_f90_integer.
#[test]
fn mpi4_additions_from_f08_and_use_mpi_on_1_2_4_ranks() {
    run_f08_on_1_2_4("f08_mpi4.f90");
    run_f08_on_1_2_4("mpi4.f90");
}

// ---- Dynamic processes, large-count callbacks and pmpi_f08 from Fortran ----------------------

/// Processes whose command line names `program` (a spawned child left running).
fn processes_of(program: &Path) -> Vec<String> {
    let needle = program.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&needle) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// Runs the spawning program `exe` (`name`) with 1 and 2 parents and checks that no process
/// of it is left (waiting a moment for the kernel to reap).
fn run_spawning(exe: &Path, name: &str) {
    for ranks in [1, 2] {
        let run = common::mpirun(
            exe,
            &common::Launch {
                ranks,
                ..Default::default()
            },
        );
        common::assert_ok(&run, name);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        let left = processes_of(exe);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} left processes behind: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `MPI_COMM_SPAWN` and `MPI_COMM_SPAWN_MULTIPLE` through `use mpi`'s explicit interfaces
/// (`tests/f/spawn_f.f90`): blank-terminated `ARGV` with blanks stripped, `ARRAY_OF_ARGV(i, j)`,
/// `MPI_ARGV_NULL`, `MPI_ERRCODES_IGNORE`, `MPI_APPNUM`, data both ways over the
/// intercommunicators, from 1 and 2 parents; nothing left running.
#[test]
fn spawn_and_spawn_multiple_from_use_mpi() {
    let exe = build("mpif90", "spawn_f.f90");
    run_spawning(&exe, "spawn_f");
}

/// The same through `mpi_f08` (`tests/f/f08_spawn.f90`, `ierror` omitted but once).
#[test]
fn f08_spawn_and_spawn_multiple() {
    let exe = build("mpifort", "f08_spawn.f90");
    run_spawning(&exe, "f08_spawn");
}

/// `MPI_Op_create_c`, `MPI_Register_datarep_c` (with `MPI_CONVERSION_FN_NULL_C`) and
/// `MPI_Register_datarep` from `mpi_f08`, with Fortran callbacks whose counts are
/// `INTEGER(KIND=MPI_COUNT_KIND)` (`tests/f/f08_large_callbacks.f90`); on 1, 2 and 4 ranks.
#[test]
fn f08_op_create_c_and_register_datarep_c() {
    let exe = build("mpifort", "f08_large_callbacks.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "f08_large_callbacks", ranks, &[]);
    }
}

/// `MPI_OP_CREATE_C` and `MPI_REGISTER_DATAREP_C` with `use mpi` (`tests/f/large_callbacks.f90`);
/// on 1, 2 and 4 ranks.
#[test]
fn op_create_c_and_register_datarep_c_from_use_mpi() {
    let exe = build("mpif90", "large_callbacks.f90");
    for ranks in [1, 2, 4] {
        run_file_program(&exe, "large_callbacks", ranks, &[]);
    }
}

/// `use pmpi_f08` (`tests/f/f08_pmpi.f90`): a tool's wrappers forward to `PMPI_Send`,
/// `PMPI_Recv`, `PMPI_Allreduce` (large-count generic), and the program runs on `PMPI_` names
/// from `PMPI_Init` to `PMPI_Finalize`; on 1, 2 and 4 ranks.
#[test]
fn f08_profiling_names_from_pmpi_f08() {
    run_f08_on_1_2_4("f08_pmpi.f90");
}

// ---- The specific procedure names of mpi_f08 (MPI 4.0 §19.1.4, §19.1.5) ---------------------

/// A program calls specific procedures by name (`MPI_Send_f08ts`, `MPI_Comm_rank_f08`, ...)
/// and carries a profiling layer in Fortran that intercepts `MPI_Comm_rank_f08`,
/// `MPI_Barrier_f08`, `MPI_Send_f08ts` and `MPI_Send_c_f08ts` and calls the `PMPI_` ones; its
/// counts show that the generic `MPI_Send` with an `INTEGER(KIND=MPI_COUNT_KIND)` count
/// resolved to `MPI_Send_c_f08ts` (`tests/f/f08_specific.f90`); on 1, 2, 3 and 4 ranks.
#[test]
fn f08_specific_procedure_names_and_a_fortran_profiling_layer() {
    run_f08_on("f08_specific.f90", &[1, 2, 3, 4]);
}

/// The specific procedures of a generated module source (`mpi_f08.f90`, `pmpi_f08.f90`):
/// `(generic, specific, linker name)`, the linker name being the `BIND(C)` label or, without
/// one, gfortran's (lower case, one underscore). Abstract interfaces and the interfaces
/// outside a named generic (the predefined callbacks) are left out.
fn specific_procedures(source: &str) -> Vec<(String, String, String)> {
    let joined = source.replace("&\n", "");
    let mut generic: Option<String> = None;
    let mut found = Vec::new();
    for line in joined.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("interface ") {
            if !name.starts_with("operator") {
                generic = Some(name.trim().to_owned());
            }
            continue;
        }
        if t.starts_with("end interface") {
            generic = None;
            continue;
        }
        let Some(g) = &generic else { continue };
        let Some(after) = t
            .strip_prefix("subroutine ")
            .or_else(|| t.split_once(" function ").map(|(_, rest)| rest))
        else {
            continue;
        };
        let name = after.split('(').next().unwrap_or(after);
        let label = t
            .split("name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{}_", name.to_ascii_lowercase()));
        found.push((g.clone(), name.trim().to_owned(), label));
    }
    found
}

/// Every specific procedure of `mpi_f08` and `pmpi_f08` has the standard's name
/// (`MPI_X_f08`, `MPI_X_f08ts` with a choice buffer, `MPI_X_c_f08(ts)` for large counts,
/// `PMPI_` twins) under its generic `MPI_X`, and `libmpi.so` defines its linker name, so a
/// program links and a tool can intercept it. The large-count procedures are under their
/// base's generic except those a compiler cannot tell from it (procedure arguments only, or
/// `MPI_ADDRESS_KIND` against `MPI_COUNT_KIND`, both 8 bytes here), which keep a generic
/// `MPI_X_c` of their own.
#[test]
fn f08_specific_names_are_the_standards_and_all_defined() {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(common::library_dir().join("libmpi.so"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run nm: {e}"));
    assert!(out.status.success(), "nm -D libmpi.so failed");
    let exported: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let own_generic_c = [
        "MPI_Op_create_c",
        "MPI_Register_datarep_c",
        "MPI_Type_create_resized_c",
        "MPI_Type_get_extent_c",
        "MPI_Type_get_true_extent_c",
        "MPI_File_get_type_extent_c",
    ];
    let modules = [
        (
            "",
            include_str!(concat!(env!("OUT_DIR"), "/fortran/mpi_f08.f90")),
        ),
        (
            "P",
            include_str!(concat!(env!("OUT_DIR"), "/fortran/pmpi_f08.f90")),
        ),
    ];
    for (prefix, source) in modules {
        let specifics = specific_procedures(source);
        assert!(specifics.len() > 400, "only {} specifics", specifics.len());
        let mut large = 0;
        for (generic, specific, label) in &specifics {
            assert!(
                exported.contains(label),
                "libmpi.so does not define {label} ({specific} of {generic})"
            );
            let token = if source_has_choice(source, specific) {
                "_f08ts"
            } else {
                "_f08"
            };
            let base = specific
                .strip_suffix(token)
                .unwrap_or_else(|| panic!("{specific} (of {generic}) does not end in {token}"));
            let under = match base.strip_suffix("_c") {
                Some(short) if !own_generic_c.contains(&base.trim_start_matches('P')) => {
                    large += 1;
                    short
                }
                _ => base,
            };
            assert_eq!(generic, under, "{specific} is under the generic {generic}");
            assert!(generic.starts_with(&format!("{prefix}MPI_")), "{generic}");
        }
        assert!(
            large >= 100,
            "only {large} large-count specifics under their base"
        );
        for name in [
            "MPI_Send_c_f08ts",
            "MPI_Allreduce_c_f08ts",
            "MPI_Type_size_c_f08",
        ] {
            let name = format!("{prefix}{name}");
            assert!(
                specifics.iter().any(|(_, s, _)| *s == name),
                "{name} is missing"
            );
        }
    }
}

/// Whether the interface body of `specific` in `source` has a choice buffer.
fn source_has_choice(source: &str, specific: &str) -> bool {
    let start = source
        .find(&format!(" {specific}("))
        .unwrap_or_else(|| panic!("{specific} not found"));
    let body = &source[start..];
    let end = body
        .find("end subroutine")
        .or_else(|| body.find("end function"));
    body[..end.unwrap_or(body.len())].contains("type(*), dimension(..)")
}
