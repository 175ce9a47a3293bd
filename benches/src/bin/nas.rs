//! `nas`: builds the NAS kernels (`benches/nas/*.c`) with our `mpicc`, runs them with our
//! `mpirun` and prints each kernel's result line; with `--compare mpich` it also builds and
//! runs them with MPICH, alternating, and prints medians and the ratio MPICH / ours.
//! `nas --fabric-memory` measures the shared-memory fabric of jobs of 2 to 64 ranks instead.
//!
//! ```text
//! nas --class S --np 2                        # all five kernels
//! nas --class A --np 2 --kernels ep,is --compare mpich --repeat 3 --json nas.json
//! nas --fabric-memory --ranks 2,8,32,64
//! ```
//! Exit status: 0 when every kernel verified, 1 when one failed, 2 on bad usage.

use benches::nas::{self, build, fabric, run};
use benches::tools::{our_tool, system_tool};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "nas",
    about = "Build and run the NAS kernels over our MPI (and MPICH), or measure the fabric's memory"
)]
struct Args {
    /// Problem class: S, W, A (or B).
    #[arg(long)]
    class: Option<String>,
    /// Number of MPI processes.
    #[arg(long)]
    np: Option<usize>,
    /// Kernels to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "ep,is,cg,mg,ft")]
    kernels: Vec<String>,
    /// Also build and run the kernels with this MPI (only `mpich`).
    #[arg(long)]
    compare: Option<String>,
    /// Runs per kernel (and per MPI); default 3 when comparing, 1 otherwise.
    #[arg(long)]
    repeat: Option<usize>,
    /// Our MPI channel: bip, fm or fm1 (passed to our mpirun).
    #[arg(long)]
    channel: Option<String>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Time limit of one run in seconds (default by class: S 120, W 600, A 1800).
    #[arg(long)]
    timeout: Option<u64>,
    /// Measure the memory of the job's shared-memory fabric instead of running kernels.
    #[arg(long)]
    fabric_memory: bool,
    /// Job sizes for --fabric-memory.
    #[arg(long, value_delimiter = ',', default_value = "2,8,32,64")]
    ranks: Vec<usize>,
}

/// Bad usage: the message and exit status 2.
fn usage(message: &str) -> ExitCode {
    eprintln!("nas: {message}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.fabric_memory {
        return fabric_memory(&args);
    }
    let class = match args
        .class
        .as_deref()
        .map(str::to_ascii_uppercase)
        .as_deref()
    {
        Some(c @ ("S" | "W" | "A" | "B")) => c.chars().next().unwrap(),
        Some(other) => return usage(&format!("unknown class {other}: use S, W, A or B")),
        None => return usage("--class S|W|A is required (or --fabric-memory)"),
    };
    let Some(np) = args.np.filter(|&n| n > 0) else {
        return usage("--np N (at least 1) is required");
    };
    let mut kernels = Vec::new();
    for k in &args.kernels {
        let k = k.trim().to_ascii_lowercase();
        if !nas::KERNELS.contains(&k.as_str()) {
            return usage(&format!(
                "unknown kernel '{k}': choose from {}",
                nas::KERNELS.join(", ")
            ));
        }
        if !kernels.contains(&k) {
            kernels.push(k);
        }
    }
    if let Some(ch) = args.channel.as_deref() {
        if !matches!(ch, "bip" | "fm" | "fm1") {
            return usage(&format!("unknown channel {ch}: use bip, fm or fm1"));
        }
    }
    let compare = match args.compare.as_deref() {
        None => false,
        Some("mpich") => true,
        Some(other) => return usage(&format!("--compare {other}: only mpich is supported")),
    };
    let repeat = args.repeat.unwrap_or(if compare { 3 } else { 1 }).max(1);
    let limit = args
        .timeout
        .map(Duration::from_secs)
        .unwrap_or_else(|| run::default_limit(class));

    match run_all(&args, class, np, &kernels, compare, repeat, limit) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("nas: {e}");
            ExitCode::from(1)
        }
    }
}

/// The MPIs a run uses: ours always, MPICH when comparing.
struct Flavour {
    name: &'static str,
    compiler: PathBuf,
    launcher: run::Launcher,
    out_dir: PathBuf,
}

/// Builds from different source directories (`NAS_SOURCE_DIR`) go to different places.
fn build_dir(work: &Path, flavour: &str, sources: &Path) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    sources
        .canonicalize()
        .unwrap_or_else(|_| sources.to_path_buf())
        .hash(&mut h);
    work.join(format!("{flavour}-{:012x}", h.finish() & 0xffff_ffff_ffff))
}

fn flavours(args: &Args, compare: bool, sources: &Path) -> Result<Vec<Flavour>, String> {
    let work = nas::work_dir()?;
    let mut options = Vec::new();
    if let Some(ch) = &args.channel {
        options.extend(["--channel".to_string(), ch.clone()]);
    }
    let mut list = vec![Flavour {
        name: "ours",
        compiler: our_tool("mpicc")?,
        launcher: run::Launcher {
            program: our_tool("mpirun")?,
            options,
        },
        out_dir: build_dir(&work, "ours", sources),
    }];
    if compare {
        list.push(Flavour {
            name: "mpich",
            compiler: system_tool("mpicc.mpich", "mpich libmpich-dev")?,
            launcher: run::Launcher {
                program: system_tool("mpirun.mpich", "mpich libmpich-dev")?,
                options: Vec::new(),
            },
            out_dir: build_dir(&work, "mpich", sources),
        });
    }
    Ok(list)
}

/// One kernel's runs under one MPI.
#[derive(serde::Serialize, Default)]
struct Runs {
    lines: Vec<run::ResultLine>,
    failures: Vec<String>,
    median_seconds: Option<f64>,
}

impl Runs {
    fn all_verified(&self) -> bool {
        self.failures.is_empty() && self.lines.iter().all(|l| l.verified) && !self.lines.is_empty()
    }
}

fn run_all(
    args: &Args,
    class: char,
    np: usize,
    kernels: &[String],
    compare: bool,
    repeat: usize,
    limit: Duration,
) -> Result<bool, String> {
    let sources = build::source_dir();
    let flavours = flavours(args, compare, &sources)?;
    let mut all_good = true;
    let mut report = serde_json::Map::new();
    let mut summary = Vec::new();
    for kernel in kernels {
        let name = kernel.to_ascii_uppercase();
        let mut per_flavour: Vec<Runs> = flavours.iter().map(|_| Runs::default()).collect();
        let mut exes: Vec<Option<PathBuf>> = Vec::new();
        for (f, runs) in flavours.iter().zip(per_flavour.iter_mut()) {
            match build::build_kernel(&f.compiler, &sources, kernel, &f.out_dir) {
                Ok(exe) => exes.push(Some(exe)),
                Err(e) => {
                    let prefix = if f.name == "ours" { "" } else { "mpich: " };
                    println!("{prefix}{name} {class} np={np} FAILED");
                    eprintln!("{name} ({}): {e}", f.name);
                    runs.failures.push(e);
                    exes.push(None);
                }
            }
        }
        for _ in 0..repeat {
            for ((f, exe), runs) in flavours.iter().zip(&exes).zip(per_flavour.iter_mut()) {
                let Some(exe) = exe else { continue };
                let prefix = if f.name == "ours" { "" } else { "mpich: " };
                match run::run_kernel(&f.launcher, exe, kernel, class, np, limit) {
                    Ok(line) => {
                        println!("{prefix}{}", line.text);
                        runs.lines.push(line);
                    }
                    Err(e) => {
                        println!("{prefix}{name} {class} np={np} FAILED");
                        eprintln!("{name} ({}): {e}", f.name);
                        runs.failures.push(e);
                    }
                }
            }
        }
        let mut entry = serde_json::Map::new();
        for (f, runs) in flavours.iter().zip(per_flavour.iter_mut()) {
            let times: Vec<f64> = runs
                .lines
                .iter()
                .filter(|l| l.verified)
                .map(|l| l.seconds)
                .collect();
            runs.median_seconds = run::median(&times);
            all_good &= runs.all_verified();
            entry.insert(
                f.name.into(),
                serde_json::to_value(&*runs).map_err(|e| e.to_string())?,
            );
        }
        if compare {
            let ours = per_flavour[0].median_seconds;
            let mpich = per_flavour[1].median_seconds;
            let ratio = ours.zip(mpich).map(|(o, m)| m / o);
            entry.insert("ratio_mpich_over_ours".into(), serde_json::json!(ratio));
            summary.push((name.clone(), ours, mpich, ratio));
        }
        report.insert(kernel.clone(), serde_json::Value::Object(entry));
    }
    if compare {
        print_comparison(class, np, repeat, &summary);
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({ "class": class.to_string(), "np": np, "repeat": repeat,
            "channel": args.channel, "kernels": report });
        write_json(path, &doc)?;
    }
    Ok(all_good)
}

/// One kernel's comparison: its name, our median, MPICH's median, MPICH / ours.
type ComparisonRow = (String, Option<f64>, Option<f64>, Option<f64>);

fn print_comparison(class: char, np: usize, repeat: usize, rows: &[ComparisonRow]) {
    let show =
        |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |x| format!("{x:.digits$}"));
    println!("medians of {repeat} run(s), class {class}, np={np}; ratio = MPICH time / ours (above 1: ours is faster)");
    println!(
        "{:<6} {:>12} {:>12} {:>8}",
        "kernel", "ours s", "mpich s", "ratio"
    );
    for (name, ours, mpich, ratio) in rows {
        println!(
            "{name:<6} {:>12} {:>12} {:>8}",
            show(*ours, 3),
            show(*mpich, 3),
            show(*ratio, 2)
        );
    }
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn fabric_memory(args: &Args) -> ExitCode {
    if args.ranks.is_empty() || args.ranks.contains(&0) {
        return usage("--ranks needs job sizes of at least 1, such as 2,8,32,64");
    }
    let result = (|| -> Result<Vec<fabric::FabricMemory>, String> {
        let probe = fabric::build_probe(&our_tool("mpicc")?, &nas::work_dir()?)?;
        let mpirun = our_tool("mpirun")?;
        let limit = Duration::from_secs(args.timeout.unwrap_or(120));
        args.ranks
            .iter()
            .map(|&n| fabric::measure(&mpirun, &probe, n, limit))
            .collect()
    })();
    match result {
        Ok(rows) => {
            print!("{}", fabric::table(&rows));
            if let Some(path) = &args.json {
                let doc = serde_json::json!({ "fabric_memory": rows });
                if let Err(e) = write_json(path, &doc) {
                    eprintln!("nas: {e}");
                    return ExitCode::from(1);
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nas: fabric memory: {e}");
            ExitCode::from(1)
        }
    }
}
