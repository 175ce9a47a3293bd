//! MPI-IO, first part (issue 15): the C programs of `tests/c/file/`, built with our `mpicc`
//! and run with our `mpirun` on 1, 2 and 4 ranks, on real files in a directory each test
//! creates (under the system's temporary directory) and removes.
//!
//! * `file_basics`: every access-mode rule and the error classes of MPI-IO (a missing file,
//!   an existing file with `EXCL`, `RDONLY` with `CREATE`, writing a read-only file, reading
//!   a write-only one, explicit offsets on a sequential file, a bad handle), a read past the
//!   end (count 0), explicit offsets and individual pointers with seek and get_position,
//!   set_size / get_size / preallocate, `APPEND`, `DELETE_ON_CLOSE`, info hints, c2f/f2c,
//!   error handlers on a file and on `MPI_FILE_NULL`.
//! * `file_views`: vector, subarray and darray filetypes, each rank writing its interleaved part
//!   (the memory side noncontiguous too), read back by the program; this test then reads
//!   the files itself and checks every byte.
//! * `file_sieve`: every rank writing interleaved 3-byte runs at once, in small sieving
//!   blocks (read-modify-write under a byte-range lock) and with sieving off: no lost byte,
//!   checked by the program and by this test.
//!
//! The same programs built by MPICH's `mpicc.mpich` also pass on this library (the ABI).
//! The programs were checked against Debian's MPICH 4.0.2 (`scripts/file-check-mpich`
//! builds them with `mpicc.mpich` and runs them with `mpiexec.mpich`); where MPICH deviates,
//! the program skips that check under MPICH only (`tolerated()` in `file_util.h`).

mod common;

use common::{assert_ok, mpirun, program, Launch, Scratch};
use std::path::Path;
use std::sync::Mutex;

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `tests/c/file/<name>.c` on `ranks` ranks with its files in `dir`.
fn run(name: &str, ranks: usize, dir: &Path) {
    let exe = program(&format!("file/{name}"));
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let job = mpirun(
        &exe,
        &Launch {
            ranks,
            env: vec![("FILE_TEST_DIR", dir.as_os_str().to_owned())],
            ..Launch::default()
        },
    );
    assert_ok(&job, name);
}

/// The ints of a file (native byte order), checked to be 0, 1, 2, ... `want - 1`.
fn check_counting_ints(path: &Path, want: usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(
        bytes.len(),
        want * 4,
        "{} has the wrong size",
        path.display()
    );
    for (k, chunk) in bytes.chunks_exact(4).enumerate() {
        let v = i32::from_ne_bytes(chunk.try_into().unwrap());
        assert_eq!(v, k as i32, "{}: int {k}", path.display());
    }
}

/// Runs `tests/c/file/<name>.c` on each of `ranks` in a fresh directory and asserts that the
/// program left nothing there (hidden files included): it removes what it makes.
fn run_leaving_nothing(name: &str, ranks: &[usize]) {
    for &n in ranks {
        let dir = Scratch::new("file", &format!("{name}{n}"));
        run(name, n, &dir.0);
        let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
        assert!(
            left.is_empty(),
            "{name} on {n} ranks left files behind: {left:?}"
        );
    }
}

#[test]
fn access_modes_error_classes_pointers_sizes_hints_handles_and_error_handlers() {
    run_leaving_nothing("file_basics", &[1, 2, 4]);
}

#[test]
fn vector_subarray_and_darray_views_interleave_every_ranks_part() {
    // The program's constants (B, TILES, ROWS, COLS).
    const B: usize = 5;
    const TILES: usize = 37;
    const ROWS: usize = 23;
    const COLS: usize = 7;
    const DEALS: usize = 11;
    for ranks in [1, 2, 4] {
        let dir = Scratch::new("file", &format!("views{ranks}"));
        run("file_views", ranks, &dir.0);
        check_counting_ints(&dir.0.join(format!("views_{ranks}.dat")), B * TILES * ranks);
        check_counting_ints(
            &dir.0.join(format!("subarray_{ranks}.dat")),
            ROWS * COLS * ranks,
        );
        check_counting_ints(
            &dir.0.join(format!("darray_{ranks}.dat")),
            2 * DEALS * ranks,
        );
    }
}

#[test]
fn concurrent_sieving_writes_of_four_ranks_lose_no_byte() {
    // The program's constants and its expected byte.
    const PER_RANK: usize = 96 * 1024;
    let expected = |i: usize| ((i * 7) ^ (i >> 8) ^ 0x5a) as u8;
    for ranks in [1, 2, 4] {
        let dir = Scratch::new("file", &format!("sieve{ranks}"));
        run("file_sieve", ranks, &dir.0);
        for name in ["sieve", "plain"] {
            let path = dir.0.join(format!("{name}_{ranks}.dat"));
            let bytes = std::fs::read(&path).expect("the program's file");
            assert_eq!(bytes.len(), PER_RANK * ranks, "{}", path.display());
            let wrong = bytes
                .iter()
                .enumerate()
                .filter(|&(i, &b)| b != expected(i))
                .count();
            assert_eq!(
                wrong,
                0,
                "{}: {wrong} bytes are not what their rank wrote",
                path.display()
            );
        }
    }
}

/// The programs compiled by MPICH's own `mpicc` (against MPICH's `mpi.h` and ROMIO's
/// `mpio.h`) pass on this library, on 2 ranks: the `MPI_File` pointer handles, the
/// `MPI_MODE_*` and `MPI_SEEK_*` values and the error classes agree with MPICH's binary
/// interface. Skipped (with a note) when MPICH is not installed.
#[test]
fn programs_built_by_mpich_mpicc_pass_on_our_library() {
    let Some(mpich_cc) = common::installed("mpicc.mpich") else {
        println!("note: MPICH's mpicc.mpich is not installed (Debian: apt-get install mpich libmpich-dev); skipping");
        return;
    };
    for name in [
        "file_basics",
        "file_views",
        "file_sieve",
        "file_shared",
        "file_nonblocking",
        "file_collective",
        "file_datarep",
        "file_datarep_sizes",
    ] {
        let exe = common::build_with(
            &mpich_cc,
            &format!("file/{name}"),
            &format!("file_{name}-built-by-mpich"),
        );
        let dir = Scratch::new("file", &format!("mpich-{name}"));
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let job = mpirun(
            &exe,
            &Launch {
                ranks: 2,
                env: vec![("FILE_TEST_DIR", dir.0.as_os_str().to_owned())],
                ..Launch::default()
            },
        );
        assert_ok(&job, name);
        assert!(
            !job.output().contains("NOTE"),
            "{name} built by MPICH ran on MPICH, not on this library:{}",
            job.describe()
        );
    }
}

/// The MPI-IO constants of our `mpi.h` have MPICH's values (its `mpi.h` and ROMIO's
/// `mpio.h`): one C program printing them, compiled against each header. Skipped (with a
/// note) when MPICH's headers are not installed.
#[test]
fn file_constants_have_mpichs_values() {
    let mpich = Path::new("/usr/include/x86_64-linux-gnu/mpich");
    if !mpich.join("mpio.h").exists() {
        println!("note: MPICH's headers are not installed; skipping the comparison");
        return;
    }
    let names = [
        "MPI_MODE_RDONLY",
        "MPI_MODE_RDWR",
        "MPI_MODE_WRONLY",
        "MPI_MODE_CREATE",
        "MPI_MODE_EXCL",
        "MPI_MODE_DELETE_ON_CLOSE",
        "MPI_MODE_UNIQUE_OPEN",
        "MPI_MODE_APPEND",
        "MPI_MODE_SEQUENTIAL",
        "MPI_DISPLACEMENT_CURRENT",
        "MPI_SEEK_SET",
        "MPI_SEEK_CUR",
        "MPI_SEEK_END",
        "MPI_MAX_DATAREP_STRING",
        "MPI_DISTRIBUTE_BLOCK",
        "MPI_DISTRIBUTE_CYCLIC",
        "MPI_DISTRIBUTE_NONE",
        "MPI_DISTRIBUTE_DFLT_DARG",
        "MPI_ERR_ACCESS",
        "MPI_ERR_AMODE",
        "MPI_ERR_BAD_FILE",
        "MPI_ERR_CONVERSION",
        "MPI_ERR_DUP_DATAREP",
        "MPI_ERR_FILE_EXISTS",
        "MPI_ERR_FILE_IN_USE",
        "MPI_ERR_FILE",
        "MPI_ERR_IO",
        "MPI_ERR_NO_SPACE",
        "MPI_ERR_NO_SUCH_FILE",
        "MPI_ERR_QUOTA",
        "MPI_ERR_READ_ONLY",
        "MPI_ERR_UNSUPPORTED_DATAREP",
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "(int)sizeof(MPI_File)",
        "(int)sizeof(MPI_Offset)",
        "(MPI_FILE_NULL == 0)",
    ];
    let body: String = names
        .iter()
        .map(|n| format!("    printf(\"%s %ld\\n\", \"{n}\", (long)({n}));\n"))
        .collect();
    let source = format!(
        "#include <stdio.h>\n#include <mpi.h>\nint main(void)\n{{\n{body}    return 0;\n}}\n"
    );
    let dir = Scratch::new("file", "constants");
    std::fs::write(dir.0.join("constants.c"), source).unwrap();
    let values = |include: &Path, exe: &str| {
        let out = std::process::Command::new("cc")
            .arg("-I")
            .arg(include)
            .arg(dir.0.join("constants.c"))
            .arg("-o")
            .arg(dir.0.join(exe))
            .output()
            .expect("run cc");
        assert!(
            out.status.success(),
            "the constants program does not compile against {}:\n{}",
            include.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(dir.0.join(exe))
            .output()
            .expect("run the constants program");
        String::from_utf8(run.stdout).unwrap()
    };
    let ours = values(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("include"),
        "ours",
    );
    let theirs = values(mpich, "mpich");
    assert_eq!(ours.lines().count(), names.len());
    for (a, b) in ours.lines().zip(theirs.lines()) {
        assert_eq!(a, b, "a constant differs from MPICH's");
    }
}

/// Shared file pointers (`tests/c/file/file_shared.c`, on 1, 2, 4 and 8 ranks): records
/// written at the shared pointer by every rank at once are each in the file exactly once and
/// read back once each; ordered accesses (blocking and split) lie in rank order; seeks,
/// positions, `APPEND`, `set_view`'s reset, `iwrite_shared`/`iread_shared`, sequential files.
/// The program removes its files; this test checks that nothing at all is left in the
/// directory, hidden side files (`.name.shfp.*`) included.
#[test]
fn shared_file_pointers_serve_every_record_once_and_leave_no_side_file() {
    run_leaving_nothing("file_shared", &[1, 2, 4, 8]);
}

/// Nonblocking independent access (`tests/c/file/file_nonblocking.c`, on 1, 2, 4 and 8
/// ranks): iwrite_at/iread_at/iwrite/iread completed by Wait, Test, Waitall, Testany and
/// Request_get_status, the counts of their statuses, the individual pointer moving at the
/// call, reads across and past the end, errors returned by the starting call.
#[test]
fn nonblocking_independent_access_completes_with_counts() {
    run_leaving_nothing("file_nonblocking", &[1, 2, 4, 8]);
}

/// Data representations (`tests/c/file/file_datarep.c`, on 1, 2 and 4 ranks): external32
/// ints, strided doubles and collectively written shorts, every file byte checked to be
/// big-endian through a native view and read back; `MPI_File_get_type_extent`; a
/// representation of the program's (`MPI_Register_datarep`) adding a constant through its
/// extra_state, its conversion functions called in pieces; `MPI_ERR_DUP_DATAREP`,
/// `MPI_ERR_UNSUPPORTED_DATAREP`, `MPI_CONVERSION_FN_NULL`, a failing conversion, the file
/// extents of types that change size. (Built by MPICH's `mpicc`: with the others in
/// `programs_built_by_mpich_mpicc_pass_on_our_library`.)
#[test]
fn data_representations_external32_and_registered_convert_every_byte() {
    run_leaving_nothing("file_datarep", &[1, 2, 4]);
}

/// Data representations that change a type's size (`tests/c/file/file_datarep_sizes.c`, on
/// 1, 2 and 4 ranks): `MPI_LONG` in external32 (8 bytes in memory, 4 in the file) through
/// interleaved vector views whose strides scale to the file's sizes, with every access kind
/// (explicit offsets, individual pointer, collective, nonblocking, shared and ordered), every
/// file byte checked with POSIX reads; `MPI_File_get_type_extent`, `get_byte_offset`, the
/// pointers, counts in memory terms, a read cut by the end of the file; `MPI_LONG_INT`; a
/// registered representation whose ints are 8 bytes in the file. (MPICH's ROMIO gets none of
/// it right: under MPICH the program skips every part; built by MPICH's `mpicc` it runs whole
/// on this library, in `programs_built_by_mpich_mpicc_pass_on_our_library`.)
#[test]
fn data_representations_that_change_a_types_size_scale_views_and_convert_every_access() {
    run_leaving_nothing("file_datarep_sizes", &[1, 2, 4]);
}

/// Two-phase collective I/O (`tests/c/file/file_collective.c`, on 1, 2, 4 and 8 ranks): a
/// BT-IO-like 3-D block distribution through subarray views written with `write_all` and
/// read back with `read_at_all` under every collective-buffering hint set (automatic, enable,
/// disable, one aggregator, pieces of 4 KiB, striping, atomic mode, a ghost-cell memory
/// type); interleaved strided ints with every third rank writing nothing; collective reads
/// past the end (short counts); the nonblocking collectives with point-to-point traffic
/// before their waits, two in flight on one file; split collectives and their `MPI_ERR_IO`
/// cases; `get_info`. The first BT-IO file is checked again here, int by int; the run with
/// `MPI_FILE_TRACE=1` shows two-phase really ran (aggregators, several pieces) and
/// independent access for `disable`.
#[test]
fn collective_access_is_two_phase_and_every_byte_lands() {
    const BLOCK_INTS: usize = 26 * 22 * 19;
    for ranks in [1, 2, 4, 8] {
        let dir = Scratch::new("file", &format!("collective{ranks}"));
        let exe = program("file/file_collective");
        let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let job = mpirun(
            &exe,
            &Launch {
                ranks,
                env: vec![
                    ("FILE_TEST_DIR", dir.0.as_os_str().to_owned()),
                    ("MPI_FILE_TRACE", "1".into()),
                ],
                ..Launch::default()
            },
        );
        assert_ok(&job, "file_collective");
        check_counting_ints(&dir.0.join(format!("btio_{ranks}.dat")), BLOCK_INTS);
        let out = job.output();
        let traced: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("MPI_FILE_TRACE"))
            .collect();
        let two_phase_write = traced
            .iter()
            .any(|l| l.contains("MPI_File_write_all two-phase"));
        assert!(
            two_phase_write,
            "no write_all ran two-phase on {ranks} ranks:{}",
            job.describe()
        );
        let independent = traced.iter().any(|l| l.contains(" independent:"));
        assert!(
            independent,
            "no collective access ran independently (disable) on {ranks} ranks:{}",
            job.describe()
        );
        // cb_buffer_size = 4096: the aggregator did its domain in many pieces.
        let many_pieces = traced.iter().any(|l| {
            l.contains("two-phase")
                && l.split("pieces ")
                    .nth(1)
                    .and_then(|t| t.split_whitespace().next())
                    .and_then(|p| p.parse::<usize>().ok())
                    .is_some_and(|p| p >= 4)
        });
        assert!(
            many_pieces,
            "no aggregator worked in several pieces on {ranks} ranks:{}",
            job.describe()
        );
    }
}
