//! Parallel HDF5 as a real client of our MPI-IO (issue 15, "Real clients").
//!
//! `tests/c/apps/hdf5_dataset.c` opens a file through HDF5's MPI-IO driver
//! (`H5Pset_fapl_mpio`, with hints that force collective buffering through a small buffer),
//! writes a contiguous 2-D dataset of doubles and a chunked one of ints split by rows among
//! the ranks and a third one of ints whose columns are dealt out to the ranks (their data
//! interleave in the file), all with collective transfers, adds attributes, then reopens the
//! file read-only and reads it back collectively (other ranks' rows, a strided selection) and
//! independently, checking every value. It is built twice, against Debian's parallel HDF5 for
//! MPICH (`libhdf5-mpich-dev`):
//!
//! * by MPICH's `h5pcc.mpich` (which calls `mpicc.mpich` and links HDF5's static library):
//!   the binary records `libmpich.so.12` without a directory and finds ours under that name
//!   through the `LD_LIBRARY_PATH` that `common::mpirun` gives every job: MPICH's ABI;
//! * by our `mpicc` with HDF5's include and library directories (those `h5pcc.mpich -show`
//!   names), linking HDF5's shared library, which itself needs `libmpich.so.12` (ours again).
//!
//! Each binary runs with our `mpirun` on 1, 2 and 4 ranks. Rank 0 prints the MPI libraries
//! mapped into its process: there must be exactly one, this build's `libmpi.so` (so HDF5's
//! MPI calls went to our library, not to MPICH's). Then `h5dump` (Debian's `hdf5-tools`, a
//! serial program that knows nothing of MPI) reads the file and this test checks every value,
//! the types, the dimensions and the attributes in its output.
//!
//! When HDF5 for MPICH or `h5dump` is missing the test says so and does nothing
//! (`scripts/install-deps` installs both, so in CI it runs).

mod common;

use common::{assert_ok, installed, mpirun, source_dir, JobRun, Launch, Scratch};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program's shape (its ROWS, COLS, IROWS, ICOLS, PROWS, PCOLS) and values.
const ROWS: usize = 37;
const COLS: usize = 11;
const IROWS: usize = 3;
const ICOLS: usize = 5;
const PROWS: usize = 64;
const PCOLS: usize = 48;
fn temperature(i: usize, j: usize) -> f64 {
    i as f64 * 1000.0 + j as f64 + 0.25
}
fn count_value(i: usize, j: usize) -> i64 {
    7 * (i * ICOLS + j) as i64 - 100
}

/// Flags the program is compiled with by either compiler (as `common`'s, `-Werror` included:
/// HDF5's headers must compile cleanly with our `mpi.h` as with MPICH's).
const CFLAGS: &[&str] = &[
    "-std=c99",
    "-O2",
    "-Wall",
    "-Werror",
    "-Wno-stringop-overflow",
];

/// What is needed from Debian's parallel HDF5 for MPICH.
struct Hdf5 {
    /// `h5pcc.mpich`.
    h5pcc: PathBuf,
    /// `h5dump`.
    h5dump: PathBuf,
    /// HDF5's include and library directories, as `h5pcc.mpich -show` gives them.
    include_dirs: Vec<String>,
    library_dirs: Vec<String>,
}

/// HDF5 for MPICH and h5dump, or `None` (with a note on stderr) if they are not installed.
fn hdf5() -> Option<Hdf5> {
    let (Some(h5pcc), Some(h5dump)) = (installed("h5pcc.mpich"), installed("h5dump")) else {
        eprintln!(
            "note: parallel HDF5 for MPICH (h5pcc.mpich) or h5dump is not installed \
             (Debian: apt-get install libhdf5-mpich-dev hdf5-tools, or scripts/install-deps); \
             skipping the HDF5 test"
        );
        return None;
    };
    let show = Command::new(&h5pcc)
        .arg("-show")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} -show: {e}", h5pcc.display()));
    assert!(show.status.success(), "{} -show failed", h5pcc.display());
    let words = String::from_utf8_lossy(&show.stdout).into_owned();
    let flag_values = |flag: &str| -> Vec<String> {
        words
            .split_whitespace()
            .filter_map(|w| w.strip_prefix(flag).map(str::to_owned))
            .collect()
    };
    let (include_dirs, library_dirs) = (flag_values("-I"), flag_values("-L"));
    assert!(
        !include_dirs.is_empty() && !library_dirs.is_empty(),
        "{} -show names no -I or -L directory: {words}",
        h5pcc.display()
    );
    Some(Hdf5 {
        h5pcc,
        h5dump,
        include_dirs,
        library_dirs,
    })
}

/// Compiles `tests/c/apps/hdf5_dataset.c` with `compiler` into `output`, with `flags` before
/// the source (include directories) and `libraries` after the output (library flags). The
/// compiler runs in the output's directory: `h5pcc` leaves its object file in the current one.
fn compile(compiler: &Path, flags: &[String], libraries: &[String], output: &Path) {
    let source = source_dir().join("apps").join("hdf5_dataset.c");
    let result = Command::new(compiler)
        .current_dir(output.parent().expect("an output directory"))
        .args(CFLAGS)
        .arg("-I")
        .arg(source_dir())
        .args(flags)
        .arg(&source)
        .arg("-o")
        .arg(output)
        .args(libraries)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(
        result.status.success(),
        "{} failed to build {} ({}):\n{}{}",
        compiler.display(),
        source.display(),
        result.status,
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
}

/// The `mpi library:` lines rank 0 printed must name exactly one library: this build's.
fn assert_ran_on_our_library(run: &JobRun, built_by: &str) {
    let ours = std::fs::canonicalize(common::library_dir().join("libmpi.so"))
        .expect("this build's staged libmpi.so");
    let loaded: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("mpi library: "))
        .collect();
    assert_eq!(
        loaded,
        [ours.to_str().expect("a UTF-8 path")],
        "the program built by {built_by} must have exactly one MPI library mapped, ours:{}",
        run.describe()
    );
}

/// The text of the first `DATA { ... }` block after `header` in an h5dump output (`-y -w 0`
/// form: no indices, values separated by commas and newlines), split into values.
fn data_after<'a>(dump: &'a str, header: &str) -> Vec<&'a str> {
    let at = dump
        .find(header)
        .unwrap_or_else(|| panic!("h5dump shows no {header}:\n{dump}"));
    let rest = &dump[at..];
    let data = rest.find("DATA {").expect("a DATA block") + "DATA {".len();
    let end = rest[data..].find('}').expect("the end of the DATA block");
    rest[data..data + end]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The first line starting with `key` after `header`, trimmed.
fn line_after<'a>(dump: &'a str, header: &str, key: &str) -> &'a str {
    let at = dump
        .find(header)
        .unwrap_or_else(|| panic!("h5dump shows no {header}:\n{dump}"));
    dump[at..]
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("h5dump shows no {key} after {header}:\n{dump}"))
}

/// Reads `file` with h5dump and checks everything the program wrote.
fn check_with_h5dump(h5dump: &Path, file: &Path, ranks: usize) {
    let out = Command::new(h5dump)
        .args(["-y", "-w", "0", "-m", "%.17g"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", h5dump.display()));
    let dump = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "h5dump {} failed ({}):\n{dump}{}",
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );

    let temperature_header = "DATASET \"temperature\" {";
    assert_eq!(
        line_after(&dump, temperature_header, "DATATYPE"),
        "DATATYPE  H5T_IEEE_F64LE"
    );
    assert_eq!(
        line_after(&dump, temperature_header, "DATASPACE"),
        format!("DATASPACE  SIMPLE {{ ( {ROWS}, {COLS} ) / ( {ROWS}, {COLS} ) }}")
    );
    let values = data_after(&dump, temperature_header);
    assert_eq!(values.len(), ROWS * COLS, "temperature's values:\n{dump}");
    for (k, text) in values.iter().enumerate() {
        let (i, j) = (k / COLS, k % COLS);
        let value: f64 = text
            .parse()
            .unwrap_or_else(|e| panic!("temperature[{i}][{j}] = {text:?}: {e}"));
        assert_eq!(
            value,
            temperature(i, j),
            "{}: temperature[{i}][{j}]",
            file.display()
        );
    }
    let ranks_attribute = data_after(&dump, "ATTRIBUTE \"ranks\" {");
    assert_eq!(ranks_attribute, [ranks.to_string()], "attribute ranks");
    let units = data_after(&dump, "ATTRIBUTE \"units\" {");
    assert_eq!(units, ["\"kelvin\""], "attribute units");

    let counts_header = "DATASET \"counts\" {";
    assert_eq!(
        line_after(&dump, counts_header, "DATATYPE"),
        "DATATYPE  H5T_STD_I32LE"
    );
    assert_eq!(
        line_after(&dump, counts_header, "DATASPACE"),
        format!("DATASPACE  SIMPLE {{ ( {IROWS}, {ICOLS} ) / ( {IROWS}, {ICOLS} ) }}")
    );
    let values = data_after(&dump, counts_header);
    let want: Vec<String> = (0..IROWS * ICOLS)
        .map(|k| count_value(k / ICOLS, k % ICOLS).to_string())
        .collect();
    assert_eq!(values, want, "{}: counts", file.display());

    let interleaved_header = "DATASET \"interleaved\" {";
    assert_eq!(
        line_after(&dump, interleaved_header, "DATASPACE"),
        format!("DATASPACE  SIMPLE {{ ( {PROWS}, {PCOLS} ) / ( {PROWS}, {PCOLS} ) }}")
    );
    let values = data_after(&dump, interleaved_header);
    let want: Vec<String> = (0..PROWS * PCOLS).map(|k| k.to_string()).collect();
    assert_eq!(values, want, "{}: interleaved", file.display());
}

/// Runs `exe` on 1, 2 and 4 ranks, each in a fresh directory, and checks its file.
fn run_and_check(exe: &Path, built_by: &str, hdf5: &Hdf5) {
    for ranks in [1, 2, 4] {
        let dir = Scratch::new("hdf5", &format!("{built_by}-{ranks}"));
        let run = mpirun(
            exe,
            &Launch {
                ranks,
                env: vec![("FILE_TEST_DIR", dir.0.as_os_str().to_owned())],
                ..Launch::default()
            },
        );
        assert_ok(&run, "hdf5_dataset");
        assert_ran_on_our_library(&run, built_by);
        check_with_h5dump(
            &hdf5.h5dump,
            &dir.0.join(format!("hdf5_dataset_{ranks}.h5")),
            ranks,
        );
        println!(
            "built by {built_by}, {ranks} ranks: passed on our library, h5dump read back every value"
        );
    }
}

#[test]
fn hdf5_built_by_mpich_h5pcc_and_by_our_mpicc_writes_and_reads_collectively() {
    let Some(hdf5) = hdf5() else {
        return;
    };
    let build = Scratch::new("hdf5", "build");

    // MPICH's h5pcc: MPICH's mpi.h, HDF5 linked statically, libmpich.so.12 found at run time.
    let theirs = build.0.join("hdf5_dataset-built-by-h5pcc.mpich");
    compile(&hdf5.h5pcc, &[], &[], &theirs);
    run_and_check(&theirs, "h5pcc.mpich", &hdf5);

    // Our mpicc: our mpi.h, HDF5's headers and its shared library (which needs libmpich.so.12).
    let ours = build.0.join("hdf5_dataset-built-by-our-mpicc");
    let includes: Vec<String> = hdf5.include_dirs.iter().map(|d| format!("-I{d}")).collect();
    let mut libraries: Vec<String> = hdf5.library_dirs.iter().map(|d| format!("-L{d}")).collect();
    libraries.push("-lhdf5".to_owned());
    compile(&common::mpicc(), &includes, &libraries, &ours);
    run_and_check(&ours, "our mpicc", &hdf5);
}
