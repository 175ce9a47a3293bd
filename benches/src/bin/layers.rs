//! `layers`: measures each layer of the stack between two processes, the same way for every
//! layer, and prints a table (and the JSON of ../shared/DESIGN.md).
//!
//! ```text
//! layers --layers nic,bip,fm,fm1 --profile native --json layers.json
//! layers --layers bip --profile myrinet-lanai4
//! layers --layers bip,mpi-bip,mpi-fm      # our MPI over each channel (benches/c/mpi_pingpong.c
//!                                        # built with our mpicc, run with our mpirun)
//! layers --compare-mpich --repeat 3      # and MPICH's MPI, alternating, in the same run
//! layers --calibrate                     # BIP's copy / single-copy threshold on this machine
//! ```

use benches::measure::{self, n_half, pingpong_mb_s, Point};
use benches::transport::{BipLayer, FmLayer, NicLayer, Transport};
use clap::Parser;
use nic_model::{AnyNic, Job, JobConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "Measure latency and bandwidth of every layer of the stack between two processes")]
struct Args {
    /// Layers to measure, comma-separated: nic, bip, fm, fm1, mpi-bip, mpi-fm, mpi-fm1.
    #[arg(long, default_value = "nic,bip,fm,fm1", value_delimiter = ',')]
    layers: Vec<String>,
    /// NIC timing profile: native, myrinet-lanai4, rdma-100g, or a path to a .toml file.
    #[arg(long, env = "MPI_NIC_PROFILE", default_value = "native")]
    profile: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
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
    /// Internal: run as a rank measuring this layer.
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Internal: where the worker writes its result.
    #[arg(long, hide = true)]
    out: Option<PathBuf>,
}

const KNOWN: &[&str] = &["nic", "bip", "fm", "fm1", "mpi-bip", "mpi-fm", "mpi-fm1"];

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
    let nic = AnyNic::from_env().unwrap_or_else(|e| panic!("layers worker: {e}"));
    let mut t: Box<dyn Transport> = match layer {
        "nic" => Box::new(NicLayer::new(nic)),
        "bip" => Box::new(BipLayer::new(nic)),
        "fm" => Box::new(FmLayer::new(nic, false)),
        "fm1" => Box::new(FmLayer::new(nic, true)),
        other => panic!("unknown layer {other}"),
    };
    let sizes = args.sizes.clone().unwrap_or_else(|| measure::SIZES.to_vec());
    let points = measure::sweep(t.as_mut(), &sizes, args.iters);
    if t.rank() == 0 {
        let out = serde_json::json!({ "points": points, "counters": t.counters() });
        std::fs::write(args.out.as_ref().expect("--out"), out.to_string()).expect("writing the result");
    }
    t.finish();
}

/// Runs one layer as a two-process job; returns rank 0's points and counters.
fn run_layer(layer: &str, args: &Args, extra_env: &[(&str, String)]) -> Result<(Vec<Point>, serde_json::Value), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::env::temp_dir().join(format!("layers-{}-{layer}-{}.json", std::process::id(), fastrand_u64()));
    let mut cfg = JobConfig::new(2);
    cfg.bind_cores = !args.no_bind;
    let job = Job::new(&cfg).map_err(|e| e.to_string())?;
    let mut worker_args = vec!["--worker".to_string(), layer.to_string(), "--out".into(), out.display().to_string(), "--iters".into(), args.iters.to_string()];
    if let Some(s) = &args.sizes {
        worker_args.push("--sizes".into());
        worker_args.push(s.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","));
    }
    let outcome = job
        .run(
            |_| {
                let mut c = Command::new(&exe);
                c.args(&worker_args).env("MPI_NIC_PROFILE", &args.profile);
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
        return Err(format!("the {layer} measurement failed: {:?}", outcome.exits));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("reading {}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let points: Vec<Point> = serde_json::from_value(v["points"].clone()).map_err(|e| e.to_string())?;
    Ok((points, v["counters"].clone()))
}

fn fastrand_u64() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos() as u64).unwrap_or(0)
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
        })
        .collect()
}

fn run(args: Args) -> Result<(), String> {
    for l in &args.layers {
        if !KNOWN.contains(&l.as_str()) {
            return Err(format!("unknown layer {l:?}; the layers are {KNOWN:?}"));
        }
    }
    nic_model::Profile::load(&args.profile).map_err(|e| e.to_string())?;
    if args.iters < 1000 {
        eprintln!("layers: note: {} round trips per latency figure; the method asks for at least 1000", args.iters);
    }
    if args.calibrate {
        return calibrate(&args);
    }
    let mpich = if args.compare_mpich { Some(build_mpich_bench()?) } else { None };
    let ours = if args.layers.iter().any(|l| l.starts_with("mpi-")) { Some(build_our_mpi_bench()?) } else { None };
    let mut runs: BTreeMap<String, Vec<Vec<Point>>> = BTreeMap::new();
    let mut counters = serde_json::Map::new();
    for _ in 0..args.repeat.max(1) {
        for layer in &args.layers {
            if let (Some(channel), Some(exe)) = (layer.strip_prefix("mpi-"), &ours) {
                runs.entry(layer.clone()).or_default().push(run_our_mpi(exe, channel, &args)?);
                continue;
            }
            let (pts, c) = run_layer(layer, &args, &[])?;
            runs.entry(layer.clone()).or_default().push(pts);
            counters.insert(layer.clone(), c);
        }
        if let Some(exe) = &mpich {
            runs.entry("mpich".into()).or_default().push(run_mpich(exe, &args)?);
        }
    }
    let results: BTreeMap<String, Vec<Point>> = runs.iter().map(|(k, v)| (k.clone(), median_points(v))).collect();
    print_table(&args, &results);
    if let Some(m) = runs.get("mpich") {
        print_pairwise(&runs, m, "MPICH");
    }
    if args.repeat > 1 && args.layers.len() > 1 {
        // Each layer against the first one named (the layer below), run by run.
        let base = &runs[&args.layers[0]];
        let others: BTreeMap<String, Vec<Vec<Point>>> =
            runs.iter().filter(|(k, _)| **k != args.layers[0] && *k != "mpich").map(|(k, v)| (k.clone(), v.clone())).collect();
        print_pairwise(&others, base, &args.layers[0]);
    }
    if let Some(path) = &args.json {
        let layers: serde_json::Map<String, serde_json::Value> =
            results.iter().filter(|(k, _)| *k != "mpich").map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap())).collect();
        let mut doc = serde_json::json!({ "profile": args.profile, "layers": layers });
        let summary: serde_json::Map<String, serde_json::Value> = results
            .iter()
            .map(|(k, v)| {
                (k.clone(), serde_json::json!({
                    "peak_bandwidth_mb_s": v.iter().map(|p| p.bandwidth_mb_s).fold(0.0, f64::max),
                    "n_half_streaming_bytes": n_half(v, |p| p.bandwidth_mb_s),
                    "n_half_pingpong_bytes": n_half(v, pingpong_mb_s),
                }))
            })
            .collect();
        doc["summary"] = summary.into();
        doc["counters"] = counters.into();
        if let Some(m) = results.get("mpich") {
            doc["reference"] = serde_json::json!({ "mpich": m });
        }
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("JSON written to {}", path.display());
    }
    Ok(())
}

fn human(size: usize) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1024 && s % 1024 == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

fn print_table(args: &Args, results: &BTreeMap<String, Vec<Point>>) {
    let order: Vec<&str> = args.layers.iter().map(String::as_str).chain(results.contains_key("mpich").then_some("mpich")).collect();
    // The layering ratio: what the second layer delivers of the first's performance.
    let pair = (args.layers.len() >= 2).then(|| (args.layers[0].as_str(), args.layers[1].as_str()));
    println!("profile: {}   (latency: median of round trip / 2; bandwidth: streaming, 10^6 B/s)", args.profile);
    let mut head = format!("{:>9}", "size");
    for l in &order {
        head += &format!(" | {:>10} {:>10}", format!("{l} us"), "MB/s");
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
            line += &format!(" | {:>10.3} {:>10.1}", p.latency_us, p.bandwidth_mb_s);
        }
        if let Some((a, b)) = pair {
            let (a, b) = (&results[a][i], &results[b][i]);
            let bw = if a.bandwidth_mb_s > 0.0 { format!("{:>5.0}%", 100.0 * b.bandwidth_mb_s / a.bandwidth_mb_s) } else { "    -".into() };
            line += &format!(" | {:>18.0}% {bw}", 100.0 * a.latency_us / b.latency_us.max(1e-9));
        }
        println!("{line}");
    }
    for l in &order {
        let v = &results[*l];
        let peak = v.iter().map(|p| p.bandwidth_mb_s).fold(0.0, f64::max);
        let fmt = |x: Option<f64>| x.map(|b| format!("{:.0} B", b)).unwrap_or_else(|| "-".into());
        println!(
            "{l:>6}: peak {peak:.1} MB/s, N1/2 {} (streaming), {} (ping-pong, the paper's method)",
            fmt(n_half(v, |p| p.bandwidth_mb_s)),
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
            let lat = med(lruns.iter().zip(mpich).map(|(o, m)| m[i].latency_us / o[i].latency_us.max(1e-9)).collect());
            let bw = if p.size > 0 {
                format!("{:.2}", med(lruns.iter().zip(mpich).map(|(o, m)| o[i].bandwidth_mb_s / m[i].bandwidth_mb_s.max(1e-9)).collect()))
            } else {
                "-".into()
            };
            println!("{layer:>6} {:>9}: latency x{lat:.2}  bandwidth x{bw}", human(p.size));
        }
    }
}

fn calibrate(args: &Args) -> Result<(), String> {
    let sizes: Vec<usize> = args.sizes.clone().unwrap_or_else(|| vec![1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 131072, 262144]);
    let a = Args { sizes: Some(sizes.clone()), ..clone_args(args) };
    let mut copy_runs = Vec::new();
    let mut zc_runs = Vec::new();
    for _ in 0..args.repeat.max(3) {
        copy_runs.push(run_layer("bip", &a, &[("BIP_EAGER_MAX", (1usize << 30).to_string()), ("BIP_SHORT_LIMIT", (1usize << 31).to_string())])?.0);
        zc_runs.push(run_layer("bip", &a, &[("BIP_EAGER_MAX", "0".to_string())])?.0);
    }
    // The mean over runs, not the median: on a machine whose speed shifts between runs (this
    // shared VM has two levels), the threshold should minimize the expected time.
    let (copy, zc) = (mean_points(&copy_runs), mean_points(&zc_runs));
    println!("mean of {} alternating runs of each path", copy_runs.len());
    println!("{:>9} | {:>22} | {:>22}", "size", "short (copy) us  MB/s", "long (1 copy) us  MB/s");
    let mut threshold = None;
    let mut last_copy_win = None;
    for (c, z) in copy.iter().zip(&zc) {
        println!("{:>9} | {:>10.3} {:>11.1} | {:>10.3} {:>11.1}", human(c.size), c.latency_us, c.bandwidth_mb_s, z.latency_us, z.bandwidth_mb_s);
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
        sizes: a.sizes.clone(),
        iters: a.iters,
        repeat: a.repeat,
        compare_mpich: false,
        calibrate: false,
        no_bind: a.no_bind,
        worker: None,
        out: None,
    }
}

/// Builds benches/c/mpi_pingpong.c with `mpicc` into `target/<dir>/mpi_pingpong`.
fn build_mpi_bench(mpicc: &Path, dir: &str) -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("c/mpi_pingpong.c");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target").join(dir);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let exe = dir.join("mpi_pingpong");
    let st = Command::new(mpicc).args(["-O2", "-o"]).arg(&exe).arg(&src).status().map_err(|e| format!("running {}: {e}", mpicc.display()))?;
    if !st.success() {
        return Err(format!("building the MPI benchmark with {} failed", mpicc.display()));
    }
    Ok(exe)
}

/// Builds the benchmark with Debian's MPICH wrapper.
fn build_mpich_bench() -> Result<PathBuf, String> {
    let cc = which("mpicc.mpich").ok_or("mpicc.mpich not found: install Debian's mpich and libmpich-dev (apt-get install mpich libmpich-dev)")?;
    build_mpi_bench(&cc, "mpich-baseline")
}

/// Our tools live beside this binary (`cargo build --release` puts them all in target/release).
fn our_tool(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tool = exe.with_file_name(name);
    if tool.is_file() {
        Ok(tool)
    } else {
        Err(format!("{} not found: build the whole workspace first (cargo build --release)", tool.display()))
    }
}

/// Builds the benchmark with our `mpicc`.
fn build_our_mpi_bench() -> Result<PathBuf, String> {
    build_mpi_bench(&our_tool("mpicc")?, "mpi-bench")
}

/// The sizes argument of the C benchmark.
fn sizes_arg(args: &Args) -> String {
    args.sizes.as_deref().unwrap_or(measure::SIZES).iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

/// Runs the C benchmark under `launcher` and reads its JSON.
fn run_mpi_bench(mut launcher: Command, exe: &Path, args: &Args, what: &str) -> Result<Vec<Point>, String> {
    let out = std::env::temp_dir().join(format!("layers-mpi-{}-{}.json", std::process::id(), fastrand_u64()));
    launcher.arg(exe).arg("--json").arg(&out).arg("--sizes").arg(sizes_arg(args));
    let st = launcher.stdout(std::process::Stdio::null()).status().map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("the {what} benchmark failed ({st})"));
    }
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&out);
    serde_json::from_value(v["results"].clone()).map_err(|e| e.to_string())
}

/// MPICH's MPI, ranks pinned to cores as ours are.
fn run_mpich(exe: &Path, args: &Args) -> Result<Vec<Point>, String> {
    let mut c = Command::new(which("mpirun.mpich").ok_or("mpirun.mpich not found: apt-get install mpich")?);
    c.args(["-n", "2"]);
    if !args.no_bind {
        c.args(["-bind-to", "core"]);
    }
    run_mpi_bench(c, exe, args, "MPICH")
}

/// Our MPI over `channel`, under our `mpirun`.
fn run_our_mpi(exe: &Path, channel: &str, args: &Args) -> Result<Vec<Point>, String> {
    let mut c = Command::new(our_tool("mpirun")?);
    c.args(["-n", "2", "--channel", channel, "--profile", &args.profile]);
    c.args(["--bind-to", if args.no_bind { "none" } else { "core" }]);
    run_mpi_bench(c, exe, args, &format!("mpi-{channel}"))
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|f| f.is_file()))
}
