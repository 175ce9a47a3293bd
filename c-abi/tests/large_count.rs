//! Large counts (MPI 4.0's `_c` functions): C programs in `tests/c/large/`, built with our
//! `mpicc` and run with our `mpirun`, and a check of the library's exported symbols.
//!
//! * `every_c_comm` (1, 2, 4 ranks): every `_c` function of point-to-point, the collectives
//!   (blocking, nonblocking, persistent), the neighbourhood collectives, `MPI_Op_create_c`
//!   and `MPI_Reduce_local_c`, with small counts and checked data.
//! * `every_c_data` (1, 2, 4 ranks): every `_c` function of datatypes (and their envelopes
//!   and contents), packing, one-sided communication and MPI-IO; a type above 2 GiB whose
//!   int size is `MPI_UNDEFINED`; bad arguments of the `_c` forms and their classes.
//! * `big_transfers` (2 ranks): messages above 2 GiB end to end, one phase per job, one job
//!   at a time (each phase holds 2 x 2.2 GB at most): `MPI_Send_c`/`MPI_Recv_c` of 2200 MiB,
//!   600M ints through the int API, `MPI_Bcast_c`, `MPI_Allreduce_c`, `MPI_Put_c`/`MPI_Get_c`,
//!   `MPI_File_write_at_c`/`MPI_File_read_at_c`, all checked word for word; the send also
//!   over the `bip` and `fm` channels, the one-sided phase also by messages instead of the
//!   direct copy. Rank 0 prints each phase's GB/s (`NOTE` lines; speed is not asserted).
//! * `every_mpich_function_is_exported`: every prototype (`_c` ones included) of MPICH's `mpi_proto.h` and
//!   `mpio.h` (ours, `include/mpi.h`, when MPICH's headers are not installed) is a symbol of
//!   `libmpi.so`, with its `PMPI_` twin.

mod common;

use common::{assert_ok, library_dir, mpirun, program, Launch, Scratch};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// One job at a time: the transfers above 2 GiB need the machine's memory to themselves, and
/// the others are short.
static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(name: &str, ranks: usize, env: Vec<(&str, std::ffi::OsString)>) -> common::JobRun {
    run_on(name, ranks, None, env)
}

fn run_on(
    name: &str,
    ranks: usize,
    channel: Option<&str>,
    env: Vec<(&str, std::ffi::OsString)>,
) -> common::JobRun {
    let exe = program(&format!("large/{name}"));
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let job = mpirun(
        &exe,
        &Launch {
            ranks,
            channel,
            env,
            ..Launch::default()
        },
    );
    assert_ok(&job, name);
    job
}

#[test]
fn every_c_function_of_communication_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        run("every_c_comm", ranks, vec![]);
    }
}

#[test]
fn every_c_function_of_data_on_1_2_4_ranks() {
    for ranks in [1, 2, 4] {
        let dir = Scratch::new("large", &format!("data{ranks}"));
        run(
            "every_c_data",
            ranks,
            vec![("LARGE_TEST_DIR", dir.0.as_os_str().to_owned())],
        );
        let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
        assert!(left.is_empty(), "every_c_data left files: {left:?}");
    }
}

/// A job of `big_transfers`: its phase, channel (`None`: the default) and extra environment.
type Run<'a> = (&'a str, Option<&'a str>, &'a [(&'a str, &'a str)]);

#[test]
fn transfers_above_2_gib_on_2_ranks() {
    let dir = Scratch::new("large", "big");
    // (phase, channel, extra environment): every phase on the default channel; the send
    // through the other channels' wire formats too (BIP, and FM's streams), and the one-sided
    // phase through the message path instead of the direct copy into a shared window.
    let no_direct_rma = [("MPI_WIN_DIRECT", "0"), ("MPI_RMA_VMMC", "0")];
    let runs: &[Run] = &[
        ("send_c", None, &[]),
        ("send_int", None, &[]),
        ("bcast_c", None, &[]),
        ("allreduce_c", None, &[]),
        ("rma_c", None, &[]),
        ("file_c", None, &[]),
        ("send_c", Some("bip"), &[]),
        ("send_c", Some("fm"), &[]),
        ("rma_c", Some("bip"), &no_direct_rma),
    ];
    for &(phase, channel, extra) in runs {
        let mut env = vec![
            ("BIG_PHASE", phase.into()),
            ("LARGE_TEST_DIR", dir.0.as_os_str().to_owned()),
        ];
        env.extend(extra.iter().map(|&(k, v)| (k, v.into())));
        let job = run_on("big_transfers", 2, channel, env);
        for line in job.stdout.lines().filter(|l| l.starts_with("NOTE")) {
            println!("{line} (channel {})", channel.unwrap_or("default"));
        }
    }
    let left: Vec<_> = std::fs::read_dir(&dir.0).unwrap().collect();
    assert!(left.is_empty(), "big_transfers left files: {left:?}");
}

/// The names of the `MPI_` functions a C header declares (`int MPI_X(`), but `MPI_DUP_FN`,
/// which MPICH's `mpi.h` (and ours) makes a macro for `MPIR_Dup_fn`.
fn mpi_functions(header: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    text.split("int ")
        .filter_map(|rest| rest.split_once('(').map(|(name, _)| name.trim()))
        .filter(|name| {
            name.starts_with("MPI_")
                && *name != "MPI_DUP_FN"
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// Every function MPICH 4.0.2's headers declare is exported (`mpi.h` says the library is
/// MPICH 4.0.2's function set: configure tools and mpi4py then assume all of them).
#[test]
fn every_mpich_function_is_exported() {
    let mpich = Path::new("/usr/include/x86_64-linux-gnu/mpich");
    let headers: Vec<_> = if mpich.join("mpi_proto.h").is_file() {
        vec![mpich.join("mpi_proto.h"), mpich.join("mpio.h")]
    } else {
        vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("include/mpi.h")]
    };
    let wanted: BTreeSet<String> = headers.iter().flat_map(|h| mpi_functions(h)).collect();
    let large = wanted.iter().filter(|name| name.ends_with("_c")).count();
    assert!(
        large >= 124 && wanted.len() >= 500,
        "only {} functions ({large} _c ones) found in {headers:?}",
        wanted.len()
    );
    let lib = library_dir().join("libmpi.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("cannot run nm: {e}"));
    assert!(out.status.success(), "nm -D {} failed", lib.display());
    let exported: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    let missing: Vec<String> = wanted
        .iter()
        .flat_map(|name| [name.clone(), format!("P{name}")])
        .filter(|symbol| !exported.contains(symbol))
        .collect();
    assert!(
        missing.is_empty(),
        "libmpi.so does not export {} of the {} functions (and PMPI_ twins) of {headers:?}: {missing:?}",
        missing.len(),
        wanted.len() * 2
    );
}
