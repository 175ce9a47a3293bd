//! `layers`: measures each layer of the stack between two processes, the same way for every
//! layer, and prints a table (and the JSON of ../shared/DESIGN.md).
//!
//! For every profile asked for, each layer gets a sweep (latency, streaming and bidirectional
//! bandwidth; N1/2 in the summary) and, at a few sizes, a short counted run of round trips
//! whose counters, per message and both ranks summed, say where the layer's time goes
//! (copies, bytes copied, packets, stalls: [`benches::counters`]). The MPI layers run
//! `benches/c/mpi_pingpong.c` under our `mpirun`; their counters come from the dump our
//! library writes at `MPI_Finalize` under `MPI_COUNTERS` (a run of N round trips minus a run
//! of none).
//!
//! The JSON document of one profile: `{"profile", "layers": {LAYER: [{"size", "latency_us",
//! "bandwidth_mb_s", "bidir_bandwidth_mb_s"}...]}, "summary": {LAYER: {...}}, "counters":
//! {LAYER: [per-message counts at each counted size]}, "reference": {"mpich": [...]}}`.
//!
//! The `vmmc` layer is VMMC's deliberate update on the NIC (`nic_model::vmmc`, measured by
//! [`benches::vmmc`]): an update with a notification answered the same way (latency), and
//! streamed updates with one notification at the end (bandwidth). Measured with `nic`, it is
//! shown as a share of the NIC's figures beside the VMMC paper's "98% of the hardware limit",
//! and the document gains `"vmmc": {"of": "nic", "paper_share": 0.98, "target_share": 0.95,
//! "target_from": 65536, "target_met": BOOL, "shares": [{"size", "bandwidth_share",
//! "latency_share"}...]}` (per-run ratios, median over the `--repeat` rounds).
//!
//! ```text
//! layers --layers nic,bip,fm,fm1 --profile native --json layers.json
//! layers --layers nic,bip,mpi-bip --profile all --report target/report   # every profile, report.md
//! layers --layers bip --profile myrinet-lanai4
//! layers --layers bip,mpi-bip,mpi-fm      # our MPI over each channel (benches/c/mpi_pingpong.c
//!                                        # built with our mpicc, run with our mpirun)
//! layers --compare-mpich --repeat 3      # and MPICH's MPI, alternating, in the same run
//! layers --calibrate                     # BIP's copy / single-copy threshold on this machine
//! layers --wire tcp --layers nic,bip,fm,mpi-bip,mpi-fm --repeat 5   # over the network device
//! layers --layers nic,vmmc --repeat 5     # VMMC's deliberate update as a share of the NIC
//! ```
//!
//! `--wire tcp` connects the two ranks through the network device instead of the shared
//! fabric: each rank is a host of its own and the pair talks over one TCP connection on
//! loopback. The ranks (this binary's workers and the C benchmark alike) are started by a PMI
//! launcher, our `mpirun --wire tcp` or `mpiexec.hydra` ([`benches::wire`]), so that the
//! device is made by the same wire-up as in any MPI program. The JSON document then has
//! `"wire": "tcp"` at its top level (absent: the shared fabric), and `--compare-mpich` runs
//! MPICH over its TCP transport too (`UCX_TLS=tcp,self` on `lo`).

use benches::counters::{difference, per_message, sum};
use benches::measure::{self, n_half, pingpong_mb_s, Point};
use benches::tools::{our_tool, system_tool};
use benches::transport::{BipLayer, FmLayer, NicLayer, Transport};
use benches::wire::{Launcher, LauncherChoice, TcpJob, Wire};
use clap::Parser;
use nic_model::{DeviceStack, Job, JobConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    about = "Measure latency and bandwidth of every layer of the stack between two processes"
)]
struct Args {
    /// Layers to measure, comma-separated: nic, vmmc, bip, fm, fm1, mpi-bip, mpi-fm, mpi-fm1.
    #[arg(long, default_value = "nic,bip,fm,fm1", value_delimiter = ',')]
    layers: Vec<String>,
    /// NIC timing profiles, comma-separated, measured one after the other: native,
    /// myrinet-lanai4, rdma-100g, paths to .toml files, or `all` (every built-in profile).
    #[arg(long, env = "MPI_NIC_PROFILE", default_value = "native")]
    profile: String,
    /// Write the results as JSON to this file (with several profiles: FILE-PROFILE.json each).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write DIR/layers-PROFILE.json for every profile and the report (DIR/report.md, plots).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Message sizes of the counted runs (copies, packets, stalls per message).
    #[arg(long, value_delimiter = ',', default_value = "8,4096,65536,1048576")]
    counter_sizes: Vec<usize>,
    /// Round trips of each counted run up to 64 KiB (a fifth of that, at least 4, above).
    #[arg(long, default_value_t = 50)]
    counter_round_trips: usize,
    /// Skip the counted runs.
    #[arg(long)]
    no_counters: bool,
    /// Message sizes in bytes, comma-separated (default: 0 B to 8 MiB).
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<usize>>,
    /// Round trips per latency figure (the method asks for at least 1000).
    #[arg(long, default_value_t = 1000)]
    iters: usize,
    /// Repeat every layer this many times, alternating, and report medians.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Also measure Debian's MPICH with benches/c/mpi_pingpong.c, alternating with our layers.
    #[arg(long)]
    compare_mpich: bool,
    /// Measure BIP's short (copy) and long (single-copy) paths at each size and print the
    /// threshold where single copy starts to win.
    #[arg(long)]
    calibrate: bool,
    /// Do not pin the two ranks to separate cores.
    #[arg(long)]
    no_bind: bool,
    /// What connects the two ranks: shm (this host's shared-memory fabric) or tcp (the
    /// network device, each rank its own host, TCP on loopback; ranks started by a PMI
    /// launcher, see --launcher).
    #[arg(long, value_enum, default_value_t = Wire::Shm)]
    wire: Wire,
    /// The PMI launcher of --wire tcp: auto (our mpirun if it knows --wire, else
    /// mpiexec.hydra), mpirun or hydra.
    #[arg(long, value_enum, default_value_t = LauncherChoice::Auto)]
    launcher: LauncherChoice,
    /// The launcher found for --wire tcp.
    #[arg(skip)]
    tcp_launcher: Option<Launcher>,
    /// Internal: run as a rank measuring this layer.
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Internal: where the worker writes its result.
    #[arg(long, hide = true)]
    out: Option<PathBuf>,
    /// Internal: the worker runs the counted round trips instead of the sweep.
    #[arg(long, hide = true)]
    count: bool,
}

const KNOWN: &[&str] = &[
    "nic", "vmmc", "bip", "fm", "fm1", "mpi-bip", "mpi-fm", "mpi-fm1",
];

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(layer) = &args.worker {
        worker(layer, &args);
        return ExitCode::SUCCESS;
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("layers: {e}");
            ExitCode::FAILURE
        }
    }
}

fn worker(layer: &str, args: &Args) {
    let nic = DeviceStack::from_env().unwrap_or_else(|e| panic!("layers worker: {e}"));
    if layer == "vmmc" {
        return vmmc_worker(nic, args);
    }
    let mut t: Box<dyn Transport> = match layer {
        "nic" => Box::new(NicLayer::new(nic)),
        "bip" => Box::new(BipLayer::new(nic)),
        "fm" => Box::new(FmLayer::new(nic, false)),
        "fm1" => Box::new(FmLayer::new(nic, true)),
        other => panic!("unknown layer {other}"),
    };
    let out = args.out.as_ref().expect("--out");
    if args.count {
        // Every rank writes its own counts; the parent sums them.
        let counts: Vec<serde_json::Value> = args
            .counter_sizes
            .iter()
            .map(|&size| {
                let n = round_trips_for(size, args.counter_round_trips);
                serde_json::json!({ "size": size, "round_trips": n, "counts": measure::count_round_trips(t.as_mut(), size, n) })
            })
            .collect();
        let path = format!("{}.{}", out.display(), t.rank());
        std::fs::write(path, serde_json::Value::from(counts).to_string())
            .expect("writing the counts");
    } else {
        let sizes = args
            .sizes
            .clone()
            .unwrap_or_else(|| measure::SIZES.to_vec());
        let points = measure::sweep(t.as_mut(), &sizes, args.iters);
        if t.rank() == 0 {
            std::fs::write(out, serde_json::json!({ "points": points }).to_string())
                .expect("writing the result");
        }
    }
    t.finish();
    // A PMI launcher (--wire tcp) is told that this rank ended cleanly; without one, no-op.
    if let Err(e) = nic_model::net::launcher::finalize() {
        panic!("layers worker: PMI finalize: {e}");
    }
}

/// The worker of the `vmmc` layer: the same outputs as the others', measured by
/// [`benches::vmmc`] (VMMC has no receive operation to fit the `Transport` interface).
fn vmmc_worker(nic: DeviceStack, args: &Args) {
    let mut b = benches::vmmc::VmmcBench::new(nic);
    let out = args.out.as_ref().expect("--out");
    if args.count {
        let counts: Vec<serde_json::Value> = args
            .counter_sizes
            .iter()
            .map(|&size| {
                let n = round_trips_for(size, args.counter_round_trips);
                serde_json::json!({ "size": size, "round_trips": n, "counts": b.count_round_trips(size, n) })
            })
            .collect();
        let path = format!("{}.{}", out.display(), b.rank());
        std::fs::write(path, serde_json::Value::from(counts).to_string())
            .expect("writing the counts");
    } else {
        let sizes = args
            .sizes
            .clone()
            .unwrap_or_else(|| measure::SIZES.to_vec());
        let points = b.sweep(&sizes, args.iters);
        if b.rank() == 0 {
            std::fs::write(out, serde_json::json!({ "points": points }).to_string())
                .expect("writing the result");
        }
    }
    b.finish();
    if let Err(e) = nic_model::net::launcher::finalize() {
        panic!("layers worker: PMI finalize: {e}");
    }
}

/// Round trips of a counted run at `size`: fewer for long messages (a modeled 1997 NIC takes
/// 8 ms per MiB), whose counts per message do not depend on how many there are.
fn round_trips_for(size: usize, n: usize) -> usize {
    if size > 65536 {
        (n / 5).max(4)
    } else {
        n.max(1)
    }
}

/// Runs one layer's sweep as a two-process job; returns rank 0's points.
fn run_layer(
    layer: &str,
    profile: &str,
    args: &Args,
    extra_env: &[(&str, String)],
) -> Result<Vec<Point>, String> {
    let out = temp_path(layer);
    let mut worker_args = vec!["--iters".to_string(), args.iters.to_string()];
    if let Some(s) = &args.sizes {
        worker_args.push("--sizes".into());
        worker_args.push(join(s));
    }
    run_worker_job(layer, profile, args, &out, &worker_args, extra_env)?;
    let text =
        std::fs::read_to_string(&out).map_err(|e| format!("reading {}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    serde_json::from_value(v["points"].clone()).map_err(|e| e.to_string())
}

/// Runs one layer's counted round trips as a two-process job; returns the counts per message
/// at each counted size (both ranks summed).
fn count_layer(layer: &str, profile: &str, args: &Args) -> Result<Vec<serde_json::Value>, String> {
    let out = temp_path(layer);
    let worker_args = vec![
        "--count".to_string(),
        "--counter-sizes".into(),
        join(&args.counter_sizes),
        "--counter-round-trips".into(),
        args.counter_round_trips.to_string(),
    ];
    run_worker_job(layer, profile, args, &out, &worker_args, &[])?;
    let mut ranks = Vec::new();
    for rank in 0..2 {
        let path = PathBuf::from(format!("{}.{rank}", out.display()));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let _ = std::fs::remove_file(&path);
        ranks.push(serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string())?);
    }
    let (r0, r1) = (
        ranks[0].as_array().cloned().unwrap_or_default(),
        ranks[1].as_array().cloned().unwrap_or_default(),
    );
    Ok(r0
        .iter()
        .zip(&r1)
        .map(|(a, b)| {
            let size = a["size"].as_u64().unwrap_or(0) as usize;
            let round_trips = a["round_trips"].as_u64().unwrap_or(0);
            per_message(&sum(&a["counts"], &b["counts"]), size, 2 * round_trips)
        })
        .collect())
}

fn temp_path(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "layers-{}-{what}-{}.json",
        std::process::id(),
        fastrand_u64()
    ))
}

fn join(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs this binary as the two ranks of a job measuring `layer`, writing to `out`.
fn run_worker_job(
    layer: &str,
    profile: &str,
    args: &Args,
    out: &Path,
    extra_args: &[String],
    extra_env: &[(&str, String)],
) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    if let Some(launcher) = &args.tcp_launcher {
        return run_tcp_worker_job(
            launcher, &exe, layer, profile, args, out, extra_args, extra_env,
        );
    }
    let mut cfg = JobConfig::new(2);
    cfg.bind_cores = !args.no_bind;
    let job = Job::new(&cfg).map_err(|e| e.to_string())?;
    let mut worker_args = vec![
        "--worker".to_string(),
        layer.to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    worker_args.extend(extra_args.iter().cloned());
    let outcome = job
        .run(
            |_| {
                let mut c = Command::new(&exe);
                c.args(&worker_args).env("MPI_NIC_PROFILE", profile);
                for (k, v) in extra_env {
                    c.env(k, v);
                }
                c
            },
            Duration::from_secs(2),
            Some(Duration::from_secs(600)),
        )
        .map_err(|e| e.to_string())?;
    if !outcome.success() {
        return Err(format!(
            "the {layer} measurement (profile {profile}) failed: {:?}",
            outcome.exits
        ));
    }
    Ok(())
}

/// Runs this binary as the two ranks of a job over TCP, started by a PMI launcher.
#[allow(clippy::too_many_arguments)]
fn run_tcp_worker_job(
    launcher: &Launcher,
    exe: &Path,
    layer: &str,
    profile: &str,
    args: &Args,
    out: &Path,
    extra_args: &[String],
    extra_env: &[(&str, String)],
) -> Result<(), String> {
    let mut c = launcher.tcp_job(&TcpJob {
        bind: !args.no_bind,
        profile,
        channel: None,
    });
    c.arg(exe)
        .args(["--worker", layer, "--out"])
        .arg(out)
        .args(extra_args);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let st = c
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("running {}: {e}", launcher.name()))?;
    if !st.success() {
        return Err(format!(
            "the {layer} measurement over tcp (profile {profile}, launcher {}) failed ({st})",
            launcher.name()
        ));
    }
    Ok(())
}

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}

/// Element-wise median of several runs of the same sweep.
fn median_points(runs: &[Vec<Point>]) -> Vec<Point> {
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    (0..runs[0].len())
        .map(|i| Point {
            size: runs[0][i].size,
            latency_us: med(runs.iter().map(|r| r[i].latency_us).collect()),
            bandwidth_mb_s: med(runs.iter().map(|r| r[i].bandwidth_mb_s).collect()),
            bidir_bandwidth_mb_s: med(runs.iter().map(|r| r[i].bidir_bandwidth_mb_s).collect()),
        })
        .collect()
}

/// Element-wise mean of several runs of the same sweep.
fn mean_points(runs: &[Vec<Point>]) -> Vec<Point> {
    let n = runs.len() as f64;
    (0..runs[0].len())
        .map(|i| Point {
            size: runs[0][i].size,
            latency_us: runs.iter().map(|r| r[i].latency_us).sum::<f64>() / n,
            bandwidth_mb_s: runs.iter().map(|r| r[i].bandwidth_mb_s).sum::<f64>() / n,
            bidir_bandwidth_mb_s: runs.iter().map(|r| r[i].bidir_bandwidth_mb_s).sum::<f64>() / n,
        })
        .collect()
}

fn run(mut args: Args) -> Result<(), String> {
    if args.wire == Wire::Tcp {
        let launcher = Launcher::find(args.launcher)?;
        println!(
            "wire: tcp (each rank its own host, TCP on {}); ranks started by {}",
            benches::wire::LOOPBACK,
            launcher.name()
        );
        args.tcp_launcher = Some(launcher);
    }
    for l in &args.layers {
        if !KNOWN.contains(&l.as_str()) {
            return Err(format!("unknown layer {l:?}; the layers are {KNOWN:?}"));
        }
    }
    let profiles = profile_list(&args.profile);
    for p in &profiles {
        nic_model::Profile::load(p).map_err(|e| {
            format!(
                "profile {p:?}: {e} (the built-in profiles are {:?})",
                nic_model::timing::built_in_names()
            )
        })?;
    }
    if args.iters < 1000 {
        eprintln!(
            "layers: note: {} round trips per latency figure; the method asks for at least 1000",
            args.iters
        );
    }
    if args.calibrate {
        return calibrate(&args, &profiles[0]);
    }
    let mpich = if args.compare_mpich {
        Some(build_mpich_bench()?)
    } else {
        None
    };
    let ours = if args.layers.iter().any(|l| l.starts_with("mpi-")) {
        Some(build_our_mpi_bench()?)
    } else {
        None
    };
    let mut docs = Vec::new();
    for (i, profile) in profiles.iter().enumerate() {
        if i > 0 {
            println!();
        }
        // MPICH runs on the host's shared memory whatever the profile: it is a reference for
        // the unmodeled profile only.
        let reference = mpich.as_deref().filter(|_| profile == "native");
        if mpich.is_some() && reference.is_none() {
            eprintln!("layers: note: MPICH is compared under the native profile only (it does not run on the modeled NIC)");
        }
        let doc = measure_profile(profile, &args, ours.as_deref(), reference)?;
        if let Some(path) = &args.json {
            let path = if profiles.len() == 1 {
                path.clone()
            } else {
                with_profile_suffix(path, profile)
            };
            write_json(&path, &doc)?;
        }
        if let Some(dir) = &args.report {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!("cannot create the report directory {}: {e}", dir.display())
            })?;
            write_json(
                &dir.join(format!("layers-{}.json", file_safe(profile))),
                &doc,
            )?;
        }
        docs.push(doc);
    }
    if let Some(dir) = &args.report {
        let page = benches::report::write_report(dir, &docs)?;
        println!("report written to {}", page.display());
    }
    Ok(())
}

/// The profiles named by `--profile`: a comma list, or `all` for every built-in one.
fn profile_list(arg: &str) -> Vec<String> {
    if arg.trim() == "all" {
        return nic_model::timing::built_in_names()
            .into_iter()
            .map(String::from)
            .collect();
    }
    let v: Vec<String> = arg
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if v.is_empty() {
        vec!["native".into()]
    } else {
        v
    }
}

/// A profile's name as a file name part (a profile may be a path to a .toml file).
fn file_safe(profile: &str) -> String {
    let stem = Path::new(profile)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| profile.to_string());
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `dir/name.json` becomes `dir/name-<profile>.json`.
fn with_profile_suffix(path: &Path, profile: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "layers".into());
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|| "json".into());
    path.with_file_name(format!("{stem}-{}.{ext}", file_safe(profile)))
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), String> {
    std::fs::write(path, serde_json::to_string_pretty(doc).unwrap())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("JSON written to {}", path.display());
    Ok(())
}

/// Measures every layer under `profile` (sweeps, `--repeat` times alternating, then the
/// counted runs); prints the tables and returns the profile's JSON document.
fn measure_profile(
    profile: &str,
    args: &Args,
    ours: Option<&Path>,
    mpich: Option<&Path>,
) -> Result<serde_json::Value, String> {
    let mut runs: BTreeMap<String, Vec<Vec<Point>>> = BTreeMap::new();
    for _ in 0..args.repeat.max(1) {
        for layer in &args.layers {
            let pts = match (layer.strip_prefix("mpi-"), ours) {
                (Some(channel), Some(exe)) => run_our_mpi(exe, channel, profile, args)?,
                _ => run_layer(layer, profile, args, &[])?,
            };
            runs.entry(layer.clone()).or_default().push(pts);
        }
        if let Some(exe) = mpich {
            runs.entry("mpich".into())
                .or_default()
                .push(run_mpich(exe, args)?);
        }
    }
    let results: BTreeMap<String, Vec<Point>> = runs
        .iter()
        .map(|(k, v)| (k.clone(), median_points(v)))
        .collect();
    print_table(profile, args, &results);
    if let Some(m) = runs.get("mpich") {
        print_pairwise(&runs, m, "MPICH");
    }
    if args.repeat > 1 && args.layers.len() > 1 {
        // Each layer against the first one named (the layer below), run by run.
        let base = &runs[&args.layers[0]];
        let others: BTreeMap<String, Vec<Vec<Point>>> = runs
            .iter()
            .filter(|(k, _)| **k != args.layers[0] && *k != "mpich")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        print_pairwise(&others, base, &args.layers[0]);
    }
    print_mpi_over_channels(&runs);
    let vmmc_share = vmmc_over_nic(&runs);
    let mut counters = serde_json::Map::new();
    if !args.no_counters {
        for layer in &args.layers {
            let counts = match (layer.strip_prefix("mpi-"), ours) {
                (Some(channel), Some(exe)) => count_our_mpi(exe, channel, profile, args)?,
                _ => count_layer(layer, profile, args)?,
            };
            counters.insert(layer.clone(), counts.into());
        }
        print_counters(args, &counters);
    }
    let layers: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .filter(|(k, _)| *k != "mpich")
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap()))
        .collect();
    let mut doc = serde_json::json!({ "profile": profile, "layers": layers });
    if args.wire != Wire::Shm {
        doc["wire"] = args.wire.name().into();
    }
    let summary: serde_json::Map<String, serde_json::Value> = results
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::json!({
                    "peak_bandwidth_mb_s": v.iter().map(|p| p.bandwidth_mb_s).fold(0.0, f64::max),
                    "peak_bidir_bandwidth_mb_s": v.iter().map(|p| p.bidir_bandwidth_mb_s).fold(0.0, f64::max),
                    "n_half_streaming_bytes": n_half(v, |p| p.bandwidth_mb_s),
                    "n_half_bidir_bytes": n_half(v, |p| p.bidir_bandwidth_mb_s),
                    "n_half_pingpong_bytes": n_half(v, pingpong_mb_s),
                    "latency_min_size_us": v.first().map(|p| p.latency_us),
                }),
            )
        })
        .collect();
    doc["summary"] = summary.into();
    doc["counters"] = counters.into();
    if let Some(m) = results.get("mpich") {
        doc["reference"] = serde_json::json!({ "mpich": m });
    }
    if let Some(v) = vmmc_share {
        doc["vmmc"] = v;
    }
    Ok(doc)
}

/// The counted runs' table: per message, both ranks summed.
fn print_counters(args: &Args, counters: &serde_json::Map<String, serde_json::Value>) {
    println!(
        "\ncounters per message (counted runs of {} round trips, {} above 64 KiB; both ranks summed)",
        args.counter_round_trips,
        round_trips_for(1 << 20, args.counter_round_trips)
    );
    println!(
        "{:>8} {:>9} | {:>7} {:>12} {:>7} | {:>8} {:>7} {:>7} {:>6}",
        "layer", "size", "copies", "bytes copied", "passes", "packets", "stalls", "credit", "dma"
    );
    for layer in &args.layers {
        for c in counters
            .get(layer)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
        {
            let f = |k: &str| c[k].as_f64().unwrap_or(0.0);
            let passes = c["copy_passes"]
                .as_f64()
                .map_or("-".to_string(), |p| format!("{p:.2}"));
            println!(
                "{layer:>8} {:>9} | {:>7.2} {:>12.1} {passes:>7} | {:>8.2} {:>7.2} {:>7.2} {:>6.2}",
                human(c["size"].as_u64().unwrap_or(0) as usize),
                f("copies_per_msg"),
                f("bytes_copied_per_msg"),
                f("packets_per_msg"),
                f("stalls_per_msg"),
                f("credit_waits_per_msg"),
                f("dma_per_msg")
            );
        }
    }
}

fn human(size: usize) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1024 && s % 1024 == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

fn print_table(profile: &str, args: &Args, results: &BTreeMap<String, Vec<Point>>) {
    let order: Vec<&str> = args
        .layers
        .iter()
        .map(String::as_str)
        .chain(results.contains_key("mpich").then_some("mpich"))
        .collect();
    // The layering ratio: what the second layer delivers of the first's performance.
    let pair = (args.layers.len() >= 2).then(|| (args.layers[0].as_str(), args.layers[1].as_str()));
    let wire = match args.wire {
        Wire::Shm => String::new(),
        w => format!("   wire: {}", w.name()),
    };
    println!("profile: {profile}{wire}   (latency: median of round trip / 2; bandwidth: streaming one way, then both ways at once; 10^6 B/s)");
    let mut head = format!("{:>9}", "size");
    for l in &order {
        head += &format!(" | {:>10} {:>9} {:>9}", format!("{l} us"), "MB/s", "bidir");
    }
    if let Some((a, b)) = pair {
        head += &format!(" | {b} as % of {a}: lat  bw");
    }
    println!("{head}");
    println!("{}", "-".repeat(head.len()));
    for (i, first) in results[order[0]].iter().enumerate() {
        let mut line = format!("{:>9}", human(first.size));
        for l in &order {
            let p = &results[*l][i];
            line += &format!(
                " | {:>10.3} {:>9.1} {:>9.1}",
                p.latency_us, p.bandwidth_mb_s, p.bidir_bandwidth_mb_s
            );
        }
        if let Some((a, b)) = pair {
            let (a, b) = (&results[a][i], &results[b][i]);
            let bw = if a.bandwidth_mb_s > 0.0 {
                format!("{:>5.0}%", 100.0 * b.bandwidth_mb_s / a.bandwidth_mb_s)
            } else {
                "    -".into()
            };
            line += &format!(
                " | {:>18.0}% {bw}",
                100.0 * a.latency_us / b.latency_us.max(1e-9)
            );
        }
        println!("{line}");
    }
    for l in &order {
        let v = &results[*l];
        let peak = v.iter().map(|p| p.bandwidth_mb_s).fold(0.0, f64::max);
        let fmt = |x: Option<f64>| {
            x.map(|b| format!("{:.0} B", b))
                .unwrap_or_else(|| "-".into())
        };
        let peak_bidir = v.iter().map(|p| p.bidir_bandwidth_mb_s).fold(0.0, f64::max);
        println!(
            "{l:>6}: peak {peak:.1} MB/s ({peak_bidir:.1} both ways), N1/2 {} (streaming), {} (both ways), {} (ping-pong, the paper's method)",
            fmt(n_half(v, |p| p.bandwidth_mb_s)),
            fmt(n_half(v, |p| p.bidir_bandwidth_mb_s)),
            fmt(n_half(v, pingpong_mb_s))
        );
    }
}

/// Ratios of each layer to a reference (MPICH, or the layer below) taken run by run (each run
/// against the reference's run of the same round), then the median: on this shared VM the
/// speed of the whole machine shifts between runs, and a ratio of neighbours cancels that.
fn print_pairwise(runs: &BTreeMap<String, Vec<Vec<Point>>>, mpich: &[Vec<Point>], reference: &str) {
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    println!(
        "\nper-run ratios to {reference} (median over {} alternating runs; latency: {reference}'s / the layer's, bandwidth: the layer's / {reference}'s; 1 = all of {reference}'s performance)",
        mpich.len()
    );
    for (layer, lruns) in runs.iter().filter(|(k, _)| *k != "mpich") {
        if layer == "mpich" {
            continue;
        }
        for (i, p) in lruns[0].iter().enumerate() {
            let lat = med(lruns
                .iter()
                .zip(mpich)
                .map(|(o, m)| m[i].latency_us / o[i].latency_us.max(1e-9))
                .collect());
            let bw = if p.size > 0 {
                format!(
                    "{:.2}",
                    med(lruns
                        .iter()
                        .zip(mpich)
                        .map(|(o, m)| o[i].bandwidth_mb_s / m[i].bandwidth_mb_s.max(1e-9))
                        .collect())
                )
            } else {
                "-".into()
            };
            println!(
                "{layer:>6} {:>9}: latency x{lat:.2}  bandwidth x{bw}",
                human(p.size)
            );
        }
    }
}

/// The share of its channel's bandwidth MPI must keep from 64 KiB up (the layering target).
const MPI_BANDWIDTH_TARGET: f64 = 0.95;
/// Where the layering target starts.
const MPI_TARGET_FROM: usize = 65536;

/// One size of a layer against the layer it is compared with: the medians over the rounds of
/// the per-round ratios (latency: the lower layer's / the upper's; bandwidth: the upper's /
/// the lower's, none at 0 bytes).
struct Share {
    size: usize,
    latency: f64,
    bandwidth: Option<f64>,
}

/// `upper`'s runs against `lower`'s, round by round (runs of one round against each other),
/// at every size both measured.
fn per_round_shares(upper: &[Vec<Point>], lower: &[Vec<Point>]) -> Vec<Share> {
    let med = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let mut shares = Vec::new();
    for (i, p) in upper[0].iter().enumerate() {
        let Some(j) = lower[0].iter().position(|q| q.size == p.size) else {
            continue;
        };
        let pairs = || upper.iter().zip(lower);
        let latency = med(pairs()
            .map(|(u, l)| l[j].latency_us / u[i].latency_us.max(1e-9))
            .collect());
        let bandwidth = (p.size > 0).then(|| {
            med(pairs()
                .map(|(u, l)| u[i].bandwidth_mb_s / l[j].bandwidth_mb_s.max(1e-9))
                .collect())
        });
        shares.push(Share {
            size: p.size,
            latency,
            bandwidth,
        });
    }
    shares
}

/// The lowest bandwidth share from [`MPI_TARGET_FROM`] up (the first size that has it), or
/// `None` when no size that large was measured.
fn lowest_share_from_target(shares: &[Share]) -> Option<(usize, f64)> {
    let mut worst: Option<(usize, f64)> = None;
    for s in shares.iter().filter(|s| s.size >= MPI_TARGET_FROM) {
        if let Some(b) = s.bandwidth {
            match worst {
                Some((_, w)) if w <= b => {}
                _ => worst = Some((s.size, b)),
            }
        }
    }
    worst
}

/// Prints whether `upper` keeps [`MPI_BANDWIDTH_TARGET`] of `lower`'s bandwidth from
/// [`MPI_TARGET_FROM`] up, given the lowest share there.
fn print_bandwidth_target(upper: &str, lower: &str, worst: Option<(usize, f64)>) {
    if let Some((size, w)) = worst {
        println!(
            "target: {upper} keeps >= {:.0}% of {lower}'s bandwidth from {} up: {} (lowest {:.1}% at {})",
            100.0 * MPI_BANDWIDTH_TARGET,
            human(MPI_TARGET_FROM),
            if w >= MPI_BANDWIDTH_TARGET {
                "met"
            } else {
                "NOT met"
            },
            100.0 * w,
            human(size)
        );
    }
}

/// Each MPI layer against the channel it runs over (mpi-bip/bip, mpi-fm/fm, mpi-fm1/fm1):
/// per-run ratios (runs of one round against each other), median over the rounds, and whether
/// MPI keeps [`MPI_BANDWIDTH_TARGET`] of the channel's bandwidth from [`MPI_TARGET_FROM`] up.
fn print_mpi_over_channels(runs: &BTreeMap<String, Vec<Vec<Point>>>) {
    for channel in ["bip", "fm", "fm1"] {
        let mpi = format!("mpi-{channel}");
        let (Some(lower), Some(upper)) = (runs.get(channel), runs.get(&mpi)) else {
            continue;
        };
        println!(
            "\n{mpi} against {channel} (median over {} rounds of the per-round ratios; latency: {channel}'s / {mpi}'s, bandwidth: {mpi}'s / {channel}'s)",
            lower.len().min(upper.len())
        );
        let shares = per_round_shares(upper, lower);
        for s in &shares {
            println!(
                "{mpi:>8} {:>9}: latency {:>5.1}%  bandwidth {}",
                human(s.size),
                100.0 * s.latency,
                s.bandwidth
                    .map_or("    -".into(), |b| format!("{:>5.1}%", 100.0 * b))
            );
        }
        print_bandwidth_target(&mpi, channel, lowest_share_from_target(&shares));
    }
}

/// What the VMMC paper delivered of its hardware's limit (108.4 of 110 MB/s).
const VMMC_PAPER_SHARE: f64 = 0.98;

/// VMMC's deliberate update against the raw NIC it runs on: per-run ratios (each round's
/// vmmc run against that round's nic run), median over the rounds, beside the paper's 98%,
/// and whether it keeps [`MPI_BANDWIDTH_TARGET`] of the NIC's bandwidth from
/// [`MPI_TARGET_FROM`] up (issue 14's target). Prints them and returns the JSON part.
fn vmmc_over_nic(runs: &BTreeMap<String, Vec<Vec<Point>>>) -> Option<serde_json::Value> {
    let (nic, vmmc) = (runs.get("nic")?, runs.get("vmmc")?);
    println!(
        "\nvmmc as a share of nic (median over {} rounds of the per-round ratios; bandwidth: vmmc's / nic's, latency: nic's / vmmc's; the VMMC paper delivered {:.0}% of its hardware's limit)",
        nic.len().min(vmmc.len()),
        100.0 * VMMC_PAPER_SHARE
    );
    let shares = per_round_shares(vmmc, nic);
    for s in &shares {
        println!(
            "{:>8} {:>9}: bandwidth {}  latency {:>5.1}%   (paper: {:.0}%)",
            "vmmc",
            human(s.size),
            s.bandwidth
                .map_or("     -".into(), |b| format!("{:>5.1}%", 100.0 * b)),
            100.0 * s.latency,
            100.0 * VMMC_PAPER_SHARE
        );
    }
    let worst = lowest_share_from_target(&shares);
    print_bandwidth_target("vmmc", "nic", worst);
    let json: Vec<_> = shares
        .iter()
        .map(|s| {
            serde_json::json!({
                "size": s.size,
                "bandwidth_share": s.bandwidth,
                "latency_share": s.latency,
            })
        })
        .collect();
    Some(serde_json::json!({
        "of": "nic",
        "paper_share": VMMC_PAPER_SHARE,
        "target_share": MPI_BANDWIDTH_TARGET,
        "target_from": MPI_TARGET_FROM,
        "target_met": worst.map(|(_, w)| w >= MPI_BANDWIDTH_TARGET),
        "shares": json,
    }))
}

fn calibrate(args: &Args, profile: &str) -> Result<(), String> {
    let sizes: Vec<usize> = args.sizes.clone().unwrap_or_else(|| {
        vec![
            1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 131072, 262144,
        ]
    });
    let a = Args {
        sizes: Some(sizes.clone()),
        ..clone_args(args)
    };
    let mut copy_runs = Vec::new();
    let mut zc_runs = Vec::new();
    for _ in 0..args.repeat.max(3) {
        copy_runs.push(run_layer(
            "bip",
            profile,
            &a,
            &[
                ("BIP_EAGER_MAX", (1usize << 30).to_string()),
                ("BIP_SHORT_LIMIT", (1usize << 31).to_string()),
            ],
        )?);
        zc_runs.push(run_layer(
            "bip",
            profile,
            &a,
            &[("BIP_EAGER_MAX", "0".to_string())],
        )?);
    }
    // The mean over runs, not the median: on a machine whose speed shifts between runs (this
    // shared VM has two levels), the threshold should minimize the expected time.
    let (copy, zc) = (mean_points(&copy_runs), mean_points(&zc_runs));
    println!("mean of {} alternating runs of each path", copy_runs.len());
    println!(
        "{:>9} | {:>22} | {:>22}",
        "size", "short (copy) us  MB/s", "long (1 copy) us  MB/s"
    );
    let mut threshold = None;
    let mut last_copy_win = None;
    for (c, z) in copy.iter().zip(&zc) {
        println!(
            "{:>9} | {:>10.3} {:>11.1} | {:>10.3} {:>11.1}",
            human(c.size),
            c.latency_us,
            c.bandwidth_mb_s,
            z.latency_us,
            z.bandwidth_mb_s
        );
        // The threshold: the first size from which single copy's one-way time is the lower at
        // every larger size (what a message of that size costs on its own; streaming overlaps
        // messages and hides the difference).
        if z.latency_us <= c.latency_us {
            threshold.get_or_insert(c.size);
        } else {
            threshold = None;
            last_copy_win = Some(c.size);
        }
    }
    match threshold {
        Some(t) => println!(
            "single copy wins from {} on; copy last won at {}: BIP_EAGER_MAX={} (the largest short message)",
            human(t),
            last_copy_win.map_or("-".into(), human),
            last_copy_win.unwrap_or(0)
        ),
        None => println!("single copy does not win consistently at these sizes; keep the default"),
    }
    Ok(())
}

fn clone_args(a: &Args) -> Args {
    Args {
        layers: a.layers.clone(),
        profile: a.profile.clone(),
        json: None,
        report: None,
        counter_sizes: a.counter_sizes.clone(),
        counter_round_trips: a.counter_round_trips,
        no_counters: a.no_counters,
        count: false,
        sizes: a.sizes.clone(),
        iters: a.iters,
        repeat: a.repeat,
        compare_mpich: false,
        calibrate: false,
        no_bind: a.no_bind,
        wire: a.wire,
        launcher: a.launcher,
        tcp_launcher: a.tcp_launcher.clone(),
        worker: None,
        out: None,
    }
}

/// Builds benches/c/mpi_pingpong.c with `mpicc` into `target/<dir>/mpi_pingpong`.
fn build_mpi_bench(mpicc: &Path, dir: &str) -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c/mpi_pingpong.c");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target")
        .join(dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = dir.join("mpi_pingpong");
    let st = Command::new(mpicc)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .map_err(|e| format!("running {}: {e}", mpicc.display()))?;
    if !st.success() {
        return Err(format!(
            "building the MPI benchmark with {} failed",
            mpicc.display()
        ));
    }
    Ok(exe)
}

/// Builds the benchmark with Debian's MPICH wrapper.
fn build_mpich_bench() -> Result<PathBuf, String> {
    let cc = system_tool("mpicc.mpich", "mpich libmpich-dev")?;
    build_mpi_bench(&cc, "mpich-baseline")
}

/// Builds the benchmark with our `mpicc`.
fn build_our_mpi_bench() -> Result<PathBuf, String> {
    build_mpi_bench(&our_tool("mpicc")?, "mpi-bench")
}

/// The sizes argument of the C benchmark.
fn sizes_arg(args: &Args) -> String {
    args.sizes
        .as_deref()
        .unwrap_or(measure::SIZES)
        .iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs the C benchmark under `launcher` and reads its JSON.
fn run_mpi_bench(
    mut launcher: Command,
    exe: &Path,
    args: &Args,
    what: &str,
) -> Result<Vec<Point>, String> {
    let out = std::env::temp_dir().join(format!(
        "layers-mpi-{}-{}.json",
        std::process::id(),
        fastrand_u64()
    ));
    launcher
        .arg(exe)
        .arg("--json")
        .arg(&out)
        .arg("--sizes")
        .arg(sizes_arg(args));
    let st = launcher
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("the {what} benchmark failed ({st})"));
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&out);
    serde_json::from_value(v["results"].clone()).map_err(|e| e.to_string())
}

/// MPICH's MPI, ranks pinned to cores as ours are.
fn run_mpich(exe: &Path, args: &Args) -> Result<Vec<Point>, String> {
    let mut c = Command::new(system_tool("mpirun.mpich", "mpich libmpich-dev")?);
    c.args(["-n", "2"]);
    if !args.no_bind {
        c.args(["-bind-to", "core"]);
    }
    if args.wire == Wire::Tcp {
        // Debian's MPICH is ch4:ucx: UCX's TCP transport on loopback instead of shared memory.
        c.env("UCX_TLS", "tcp,self").env("UCX_NET_DEVICES", "lo");
    }
    run_mpi_bench(c, exe, args, "MPICH")
}

/// Our `mpirun` starting two ranks over `channel` under `profile` (over TCP: the PMI
/// launcher of `--wire tcp`).
fn our_mpirun(channel: &str, profile: &str, args: &Args) -> Result<Command, String> {
    if let Some(launcher) = &args.tcp_launcher {
        return Ok(launcher.tcp_job(&TcpJob {
            bind: !args.no_bind,
            profile,
            channel: Some(channel),
        }));
    }
    let mut c = Command::new(our_tool("mpirun")?);
    c.args(["-n", "2", "--channel", channel, "--profile", profile]);
    c.args(["--bind-to", if args.no_bind { "none" } else { "core" }]);
    Ok(c)
}

/// Our MPI over `channel`, under our `mpirun`.
fn run_our_mpi(
    exe: &Path,
    channel: &str,
    profile: &str,
    args: &Args,
) -> Result<Vec<Point>, String> {
    run_mpi_bench(
        our_mpirun(channel, profile, args)?,
        exe,
        args,
        &format!("mpi-{channel}"),
    )
}

/// Counts per message of our MPI over `channel`: at each counted size a run of N round trips
/// minus a run of none (start-up and `MPI_Finalize` cost the same in both), from the counters
/// our library dumps at `MPI_Finalize` under `MPI_COUNTERS`.
fn count_our_mpi(
    exe: &Path,
    channel: &str,
    profile: &str,
    args: &Args,
) -> Result<Vec<serde_json::Value>, String> {
    let counted = |size: usize, round_trips: usize| -> Result<serde_json::Value, String> {
        let base = temp_path(&format!("mpi-{channel}-counters"));
        let mut c = our_mpirun(channel, profile, args)?;
        c.arg(exe)
            .args([
                "--sizes",
                &size.to_string(),
                "--roundtrips",
                &round_trips.to_string(),
            ])
            .env("MPI_COUNTERS", &base);
        let st = c
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !st.success() {
            return Err(format!("the mpi-{channel} counted run failed ({st})"));
        }
        let mut total = serde_json::json!({});
        for rank in 0..2 {
            let path = PathBuf::from(format!("{}.{rank}.json", base.display()));
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("reading {}: {e} (does this libmpi.so write MPI_COUNTERS? rebuild with cargo build --release)", path.display()))?;
            let _ = std::fs::remove_file(&path);
            let mut v: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            if let Some(o) = v.as_object_mut() {
                o.retain(|_, part| part.is_object());
            }
            total = sum(&total, &v);
        }
        Ok(total)
    };
    let none = counted(args.counter_sizes.first().copied().unwrap_or(8), 0)?;
    args.counter_sizes
        .iter()
        .map(|&size| {
            let n = round_trips_for(size, args.counter_round_trips);
            Ok(per_message(
                &difference(&counted(size, n)?, &none),
                size,
                2 * n as u64,
            ))
        })
        .collect()
}
