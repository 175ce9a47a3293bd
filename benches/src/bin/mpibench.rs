//! `mpibench`: the MPI micro-benchmarks of `benches/c/mpibench.c` built with our `mpicc` and
//! with Debian's MPICH and Open MPI wrappers, run alternately, compared in one table and charts
//! per placement.
//!
//! ```text
//! mpibench                                   # all benchmarks, ours/mpich/openmpi, 3 rounds
//! mpibench --libs ours,mpich --benchmarks latency,bw --repeat 5
//! mpibench --np 4 --benchmarks allreduce,alltoall,barrier
//! mpibench --placement bound                 # only with every library's ranks bound
//! mpibench --quick --out /tmp/mb             # a short, rough run
//! ```
//!
//! Every figure is measured at two placements (`--placement default,bound`): each launcher's
//! default (no binding option: ours binds a rank per core while the ranks fit the cores,
//! Hydra binds nothing, Open MPI binds to core up to 2 ranks and nothing when oversubscribed),
//! and every library's ranks bound one per core. A library whose launcher leaves ranks to the
//! scheduler by default is then compared both as users run it and as tuned, and so is ours.
//! Each round runs every placement, and within it every benchmark under every library in turn.
//!
//! Latency, bw and bibw run at np=2; multibw and the collectives at `--np` (default 2). This
//! machine has 2 cores: at np=4 two ranks share each core. MPICH and Open MPI wait for messages
//! by spinning, so an oversubscribed rank burns its time slice while its core-mate, which may be
//! the one with the data, waits to be scheduled: their collective times at np=4 measure the
//! scheduler as much as the library (tens of microseconds where np=2 gives a few hundred
//! nanoseconds), and a library that yields while waiting gains a large advantage there.
//!
//! The files: `OUT/mpibench.json` (every run and row, each with its placement), `OUT/mpibench.md`
//! (one table per placement), `OUT/mpibench-PLACEMENT-*.svg|png` (charts), and `OUT/build/`
//! (the sources and the three executables).

use benches::compare::report::PlacedReport;
use benches::compare::run::run_benchmark;
use benches::compare::{Benchmark, Built, Comparison, Library, Placement, RunRecord};
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "Compare our MPI with MPICH and Open MPI on C micro-benchmarks, side by side")]
struct Args {
    /// Ranks for multibw and the collectives (latency, bw and bibw always use 2).
    #[arg(long, default_value_t = 2)]
    np: usize,
    /// Rounds; each round runs every benchmark under every library in turn [default: 3, or 1 with --quick].
    #[arg(long)]
    repeat: Option<usize>,
    /// Benchmarks, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "latency,bw,bibw,multibw,allreduce,bcast,alltoall,barrier"
    )]
    benchmarks: Vec<String>,
    /// Libraries, comma-separated: ours, mpich, openmpi.
    #[arg(long, value_delimiter = ',', default_value = "ours,mpich,openmpi")]
    libs: Vec<String>,
    /// Placements, comma-separated: default (each launcher's own) and bound (every rank bound
    /// to a core).
    #[arg(long, value_delimiter = ',', default_value = "default,bound")]
    placement: Vec<String>,
    /// Message sizes in bytes, comma-separated, for every benchmark [default: point-to-point 0 B
    /// to 4 MiB by powers of 4 (plus 8 B), collectives 8 B to 1 MiB].
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<u64>>,
    /// Directory for the table, the JSON, the charts and the builds [default: mpibench-report
    /// beside this executable].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Short runs (a fraction of the time per size) on a few sizes (8, 1024, 65536): rough figures.
    #[arg(long)]
    quick: bool,
}

/// The sizes used by `--quick` when `--sizes` is not given.
const QUICK_SIZES: [u64; 3] = [8, 1024, 65536];

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mpibench: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the comparison; `Ok(false)` when some runs failed (the report covers the others).
fn run(args: Args) -> Result<bool, String> {
    let libraries = parse_list(&args.libs, Library::from_name)?;
    let benchmarks = parse_list(&args.benchmarks, Benchmark::from_name)?;
    let placements = parse_list(&args.placement, Placement::from_name)?;
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
    if repeat == 0 || args.np == 0 {
        return Err("--repeat and --np must be at least 1".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let exe_dir = exe
        .parent()
        .ok_or("this executable has no directory")?
        .to_path_buf();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| exe_dir.join("mpibench-report"));
    let sizes = args
        .sizes
        .clone()
        .or_else(|| args.quick.then(|| QUICK_SIZES.to_vec()));

    // Every library's tools are looked for before anything is built, so that one message lists
    // everything missing.
    let missing: Vec<String> = libraries.iter().filter_map(|l| l.tools().err()).collect();
    if !missing.is_empty() {
        return Err(missing.join("\n"));
    }
    let mut builds: Vec<Built> = Vec::new();
    for library in &libraries {
        let built = library.build(&out.join("build"))?;
        if !built.warnings.is_empty() {
            eprintln!(
                "mpibench: {} compiler messages:\n{}",
                library.name(),
                built.warnings
            );
        }
        builds.push(built);
    }

    let mut runs: Vec<Vec<RunRecord>> = vec![Vec::new(); placements.len()];
    let mut failures = Vec::new();
    for round in 0..repeat {
        for (p, &placement) in placements.iter().enumerate() {
            for &benchmark in &benchmarks {
                // Start each round with a different library so none always runs first.
                for i in 0..builds.len() {
                    let built = &builds[(i + round) % builds.len()];
                    let np = benchmark.ranks(args.np);
                    let started = Instant::now();
                    let measured = run_benchmark(
                        built,
                        benchmark,
                        np,
                        placement,
                        sizes.as_deref(),
                        args.quick,
                    );
                    match measured {
                        Ok(results) => {
                            eprintln!(
                                "round {}/{repeat}  {:<7} {:<9} {:<8} np={np}  {:.1} s",
                                round + 1,
                                placement.name(),
                                benchmark.name(),
                                built.library.name(),
                                started.elapsed().as_secs_f64()
                            );
                            runs[p].push(RunRecord {
                                round,
                                library: built.library.name().to_string(),
                                benchmark: benchmark.name().to_string(),
                                np,
                                results,
                            });
                        }
                        Err(e) => {
                            eprintln!("mpibench: {e}");
                            failures.push(format!(
                                "round {} {} {} {}",
                                round + 1,
                                placement.name(),
                                benchmark.name(),
                                built.library.name()
                            ));
                        }
                    }
                }
            }
        }
    }

    let comparisons: Vec<Comparison> = placements
        .iter()
        .zip(runs)
        .map(|(&placement, runs)| {
            Comparison::new(args.np, repeat, args.quick, &libraries, runs).at(placement)
        })
        .collect();
    let tables: Vec<String> = comparisons.iter().map(Comparison::markdown).collect();
    let table = tables.join("\n");
    println!("{table}");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let md = out.join("mpibench.md");
    std::fs::write(&md, &table).map_err(|e| format!("cannot write {}: {e}", md.display()))?;
    let json = out.join("mpibench.json");
    let report = PlacedReport::new(&comparisons).ok_or("no placement was measured")?;
    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
    std::fs::write(&json, text).map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    println!("wrote {} and {}", md.display(), json.display());
    let (mut charts, mut chart_errors) = (Vec::new(), Vec::new());
    for comparison in &comparisons {
        let (written, errors) = comparison.draw_charts(&out);
        charts.extend(written);
        chart_errors.extend(errors);
    }
    if !charts.is_empty() {
        println!("wrote {} chart files in {}", charts.len(), out.display());
    }
    for e in &chart_errors {
        eprintln!("mpibench: chart not drawn: {e}");
    }
    if !failures.is_empty() {
        eprintln!(
            "mpibench: {} run(s) failed: {}",
            failures.len(),
            failures.join("; ")
        );
    }
    Ok(failures.is_empty())
}

/// Parses a comma-separated option, rejecting duplicates.
fn parse_list<T: PartialEq>(
    items: &[String],
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut list = Vec::new();
    for item in items.iter().filter(|i| !i.trim().is_empty()) {
        let value = parse(item)?;
        if !list.contains(&value) {
            list.push(value);
        }
    }
    if list.is_empty() {
        return Err("empty list: name at least one".into());
    }
    Ok(list)
}
