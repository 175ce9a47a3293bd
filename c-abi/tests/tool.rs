//! The MPI tool information interface (`MPI_T`, `tests/c/tool/*.c`), built with our `mpicc` and
//! run with our `mpirun` on 1 and 2 ranks.
//!
//! * `mpit_catalog`: every cvar, pvar, category and enumeration enumerated and checked for
//!   consistency; the cvars equal the settings given here through the environment (and
//!   `mpirun --channel`); the error classes; MPI_T before `MPI_Init` and after `MPI_Finalize`.
//! * `mpit_sessions`: sessions and handles over real traffic (start, stop, reset, readreset,
//!   write, two independent sessions); every counter read after `MPI_Finalize` through a handle
//!   started before `MPI_Init` equals the value in the library's `MPI_COUNTERS` dump.
//! * `mpit_cvar_write`: the channel and the eager limit written between `MPI_T_init_thread`
//!   and `MPI_Init` are what `MPI_Init` uses.
//! * The example tool `examples/mpit_layers.c`, linked into `ring` and preloaded into it.
//! * Every `MPI_T` function of MPICH 4.0's `mpi_proto.h` is exported, with its `PMPI_` twin,
//!   and the programs compiled against MPICH's `mpi.h` run on our library.
//!
//! The jobs run one at a time (a lock): the machine has two cores.

mod common;

use common::{assert_ok, mpicc, mpirun, program, source_dir, JobRun, Launch, Scratch};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static ONE_JOB_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(name: &str, ranks: usize, channel: Option<&str>, env: Vec<(&str, OsString)>) -> JobRun {
    run_exe(&program(name), name, ranks, channel, env)
}

fn run_exe(
    exe: &Path,
    name: &str,
    ranks: usize,
    channel: Option<&str>,
    env: Vec<(&str, OsString)>,
) -> JobRun {
    let _turn = ONE_JOB_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let run = mpirun(
        exe,
        &Launch {
            ranks,
            channel,
            env,
            ..Launch::default()
        },
    );
    assert_ok(&run, name);
    run
}

/// The settings `mpit_catalog` expects to read back as cvars.
fn settings() -> Vec<(&'static str, OsString)> {
    vec![
        ("MPI_EAGER_MAX", "3000".into()),
        ("BIP_SHORT_LIMIT", "2097152".into()),
        ("MPI_NIC_SPLIT_MIN", "65536".into()),
    ]
}

#[test]
fn catalog_settings_and_errors_on_1_rank() {
    run("tool/mpit_catalog", 1, None, settings());
}

#[test]
fn catalog_settings_and_errors_on_2_ranks() {
    run("tool/mpit_catalog", 2, None, settings());
}

#[test]
fn catalog_reads_the_channel_mpirun_chose() {
    run(
        "tool/mpit_catalog",
        2,
        Some("fm1"),
        vec![("TOOL_EXPECT_CHANNEL", "fm1".into())],
    );
}

/// The value of `"field": N` inside the object `"layer": {...}` of a counters dump (`None` if
/// the layer is `null`).
fn dump_value(json: &str, layer: &str, field: &str) -> Option<u64> {
    let at = json.find(&format!("\"{layer}\": "))? + layer.len() + 4;
    let rest = &json[at..];
    if rest.starts_with("null") {
        return None;
    }
    let object = &rest[..rest.find('}')?];
    let key = format!("\"{field}\": ");
    let start = object.find(&key)? + key.len();
    let digits: String = object[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Runs `mpit_sessions` and compares every counter it printed after `MPI_Finalize` with the
/// library's own dump of the same counters (`MPI_COUNTERS`).
fn sessions(ranks: usize, channel: Option<&str>, exact_bip: bool) {
    let scratch = Scratch::new("tool", &format!("sessions{ranks}{}", channel.unwrap_or("")));
    let base = scratch.0.join("counters");
    let mut env = vec![("MPI_COUNTERS", base.clone().into_os_string())];
    if exact_bip {
        env.push(("TOOL_EXACT_BIP", "1".into()));
    }
    let run = run("tool/mpit_sessions", ranks, channel, env);
    let mut compared = 0;
    let mut moved: BTreeMap<String, u64> = BTreeMap::new();
    for rank in 0..ranks {
        let path = PathBuf::from(format!("{}.{rank}.json", base.display()));
        let json = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("no counters dump {}: {e}{}", path.display(), run.describe())
        });
        let lines: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with(&format!("PVAR {rank} ")))
            .collect();
        assert!(
            lines.len() >= 30,
            "rank {rank} printed {} counters:{}",
            lines.len(),
            run.describe()
        );
        for line in lines {
            let parts: Vec<&str> = line.split_whitespace().collect();
            let (name, value): (&str, u64) = (parts[2], parts[3].parse().expect("a count"));
            let (layer, field) = name.split_once('_').expect("layer_counter");
            let layer = if layer == "mpi" { "adi" } else { layer };
            if field.starts_with("buffered") {
                continue; // a level and a peak: not in the dump
            }
            let dumped = dump_value(&json, layer, field).unwrap_or(0);
            assert_eq!(
                value, dumped,
                "rank {rank}: MPI_T's {name} against the dump's {layer}.{field}\n{json}"
            );
            *moved.entry(name.to_string()).or_default() += value;
            compared += 1;
        }
    }
    assert!(compared >= 30 * ranks, "compared {compared}");
    assert!(
        moved["nic_packets_tx"] > 0 && moved["bip_messages_sent"] > 0,
        "{moved:?}"
    );
    if channel.is_some_and(|c| c.starts_with("fm")) && ranks > 1 {
        assert!(moved["fm_messages_sent"] > 0, "{moved:?}");
    }
}

#[test]
fn sessions_count_real_traffic_on_1_rank() {
    sessions(1, None, false);
}

#[test]
fn sessions_count_real_traffic_on_2_ranks() {
    sessions(2, None, true);
}

#[test]
fn sessions_count_real_traffic_over_fm() {
    sessions(2, Some("fm"), false);
}

#[test]
fn cvars_written_before_init_are_used_on_1_rank() {
    run("tool/mpit_cvar_write", 1, None, vec![]);
}

#[test]
fn cvars_written_before_init_are_used_on_2_ranks() {
    run("tool/mpit_cvar_write", 2, None, vec![]);
}

/// Compiles with our `mpicc` (the test programs' flags), panicking with its messages.
fn compile(args: &[&Path], extra: &[&str], output: &Path) {
    let result = Command::new(mpicc())
        .args(["-std=c99", "-O2", "-Wall", "-Werror"])
        .args(extra)
        .arg("-I")
        .arg(source_dir())
        .args(args)
        .arg("-o")
        .arg(output)
        .output()
        .expect("mpicc runs");
    assert!(
        result.status.success(),
        "mpicc failed: {}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
}

/// The example tool's lines of rank `rank` and layer `layer`: `counter -> value`.
fn tool_lines(run: &JobRun, rank: usize, layer: &str) -> BTreeMap<String, u64> {
    let prefix = format!("mpit_layers rank {rank} {layer}:");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line '{prefix}':{}", run.describe()));
    line[prefix.len()..]
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("counter=value");
            (k.to_string(), v.parse().expect("a count"))
        })
        .collect()
}

fn check_tool_output(run: &JobRun, ranks: usize) {
    for rank in 0..ranks {
        let nic = tool_lines(run, rank, "nic");
        let bip = tool_lines(run, rank, "bip");
        assert!(
            nic["packets_tx"] > 0 && nic["bytes_tx"] > 0 && nic["packets_rx"] > 0,
            "rank {rank}: {nic:?}"
        );
        assert!(
            bip["messages_sent"] > 0 && bip["messages_received"] > 0,
            "rank {rank}: {bip:?}"
        );
        assert!(
            !nic.values().any(|&v| v == 0),
            "only counters that moved are printed: {nic:?}"
        );
    }
}

#[test]
fn example_tool_linked_into_a_program() {
    let scratch = Scratch::new("tool", "linked");
    let exe = scratch.0.join("ring_with_layers");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    compile(
        &[
            &source_dir().join("ring.c"),
            &examples.join("mpit_layers.c"),
        ],
        &[],
        &exe,
    );
    let run = run_exe(&exe, "ring", 2, None, vec![]);
    check_tool_output(&run, 2);
}

#[test]
fn example_tool_preloaded_into_a_program() {
    let scratch = Scratch::new("tool", "preloaded");
    let lib = scratch.0.join("libmpit_layers.so");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    compile(
        &[&examples.join("mpit_layers.c")],
        &["-shared", "-fPIC"],
        &lib,
    );
    let exe = program("ring");
    let run = run_exe(
        &exe,
        "ring",
        2,
        None,
        vec![("LD_PRELOAD", lib.into_os_string())],
    );
    check_tool_output(&run, 2);
}

/// Every `MPI_T` function MPICH 4.0 declares, from its `mpi_proto.h` (if installed).
fn mpich_mpi_t_functions() -> Option<Vec<String>> {
    let header = "/usr/include/x86_64-linux-gnu/mpich/mpi_proto.h";
    let text = std::fs::read_to_string(header).ok()?;
    // The prototypes: "int MPI_T_name(" (the PMPI_ ones are found as "int PMPI_T_...").
    let mut names: Vec<String> = text
        .match_indices("int MPI_T_")
        .map(|(at, _)| {
            text[at + 4..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .collect();
    names.sort();
    names.dedup();
    Some(names)
}

#[test]
fn every_mpi_t_function_of_mpich_is_exported_with_its_pmpi_twin() {
    let Some(functions) = mpich_mpi_t_functions() else {
        eprintln!("MPICH's mpi_proto.h is not installed: nothing to compare with");
        return;
    };
    assert!(functions.len() >= 50, "{functions:?}");
    let lib = common::library_dir().join("libmpi.so");
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm runs");
    assert!(nm.status.success(), "nm {}", lib.display());
    let symbols: std::collections::BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    let missing: Vec<String> = functions
        .iter()
        .flat_map(|f| [f.clone(), format!("P{f}")])
        .filter(|s| !symbols.contains(s))
        .collect();
    assert!(
        missing.is_empty(),
        "not exported by {}: {missing:?}",
        lib.display()
    );
    assert!(symbols.contains("MPI_T_PVAR_ALL_HANDLES"));
}

/// The tool programs compiled against MPICH's `mpi.h` (its `MPI_T` handle types, constants and
/// the `extern` `MPI_T_PVAR_ALL_HANDLES`) run on our library: MPICH's ABI.
#[test]
fn programs_built_against_mpich_headers_run_on_our_library() {
    let Some(mpich_cc) = common::installed("mpicc.mpich") else {
        eprintln!("MPICH's mpicc.mpich is not installed: skipped");
        return;
    };
    for name in [
        "tool/mpit_catalog",
        "tool/mpit_sessions",
        "tool/mpit_cvar_write",
    ] {
        let exe = common::build_with(
            &mpich_cc,
            name,
            &format!("{}-built-by-mpich", name.replace('/', "_")),
        );
        run_exe(&exe, name, 2, None, settings());
    }
}
