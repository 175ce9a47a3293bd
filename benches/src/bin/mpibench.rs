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
//! mpibench --libs mpich,openmpi --benchmarks rma --sizes 8,1048576   # the one-sided ones
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
//! The one-sided benchmarks (`put_lat`, `get_lat`, `acc_lat`, `fop_lat`, `cas_lat`, `put_bw`,
//! `get_bw`; `--benchmarks rma` names them all) are not in the default list: they are built
//! into a second executable per library (`mpibench.c` with `-DMPIBENCH_RMA`), made only when
//! one of them is asked for, so that the point-to-point and collective benchmarks never depend
//! on a library's RMA support. A library that cannot build that executable (ours until its
//! `mpi.h` has MPI-3 RMA) is reported with the compiler's words, its one-sided runs count as
//! failed (exit status 1), and every other run goes on. How they measure:
//! [`benches::compare::report::ONE_SIDED_METHOD`] (also in `--help` and under the table).
//!
//! The files: `OUT/mpibench.json` (every run and row, each with its placement), `OUT/mpibench.md`
//! (one table per placement), `OUT/mpibench-PLACEMENT-*.svg|png` (charts), and `OUT/build/`
//! (the source and the executables, `mpibench-LIB` and `mpibench-rma-LIB`).

use benches::compare::library::Variant;
use benches::compare::report::{PlacedReport, ONE_SIDED_METHOD};
use benches::compare::run::run_benchmark;
use benches::compare::{Benchmark, Built, Comparison, Library, Placement, RunRecord};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    about = "Compare our MPI with MPICH and Open MPI on C micro-benchmarks, side by side",
    after_long_help = ONE_SIDED_METHOD
)]
struct Args {
    /// Ranks for multibw and the collectives (latency, bw, bibw and the one-sided benchmarks
    /// always use 2).
    #[arg(long, default_value_t = 2)]
    np: usize,
    /// Rounds; each round runs every benchmark under every library in turn [default: 3, or 1 with --quick].
    #[arg(long)]
    repeat: Option<usize>,
    /// Benchmarks, comma-separated: latency, bw, bibw, multibw, allreduce, bcast, alltoall,
    /// barrier, and the one-sided put_lat, get_lat, acc_lat, fop_lat, cas_lat, put_bw, get_bw
    /// (`rma` names those seven; they are not in the default list).
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
    /// Message sizes in bytes, comma-separated, for every benchmark but barrier, fop_lat and
    /// cas_lat (one size each) [default: point-to-point 0 B to 4 MiB by powers of 4 (plus 8 B),
    /// collectives and one-sided latencies 8 B to 1 MiB by powers of 8, one-sided bandwidths as
    /// point-to-point].
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
    let benchmarks = parse_list(&expand_groups(&args.benchmarks), Benchmark::from_name)?;
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
    let builds: Vec<Builds> = libraries
        .iter()
        .map(|&library| Builds::make(library, &benchmarks, &out.join("build")))
        .collect::<Result<_, _>>()?;
    let notes: Vec<String> = builds
        .iter()
        .filter_map(|b| match &b.rma {
            Some(Err(e)) => Some(format!(
                "{} did not build the one-sided benchmarks, so it has no figure in their rows: {}.",
                b.library.name(),
                e.lines()
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches("; first errors:")
            )),
            _ => None,
        })
        .collect();

    let mut runs: Vec<Vec<RunRecord>> = vec![Vec::new(); placements.len()];
    let mut failures = Vec::new();
    for round in 0..repeat {
        for (p, &placement) in placements.iter().enumerate() {
            for &benchmark in &benchmarks {
                // Start each round with a different library so none always runs first.
                for i in 0..builds.len() {
                    let of_library = &builds[(i + round) % builds.len()];
                    let Some(built) = of_library.for_benchmark(benchmark) else {
                        failures.push(format!(
                            "round {} {} {} {} (not built)",
                            round + 1,
                            placement.name(),
                            benchmark.name(),
                            of_library.library.name()
                        ));
                        continue;
                    };
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
            Comparison::new(args.np, repeat, args.quick, &libraries, runs)
                .at(placement)
                .with_notes(&notes)
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

/// One library's executables: the base build (when a point-to-point or collective benchmark is
/// asked for) and the RMA build (when a one-sided one is), the latter's failure kept as a
/// message so that the library's other benchmarks still run.
struct Builds {
    library: Library,
    base: Option<Built>,
    rma: Option<Result<Built, String>>,
}

impl Builds {
    /// Builds what `benchmarks` need; a failed base build is an error, a failed RMA build is
    /// reported on stderr and kept.
    fn make(library: Library, benchmarks: &[Benchmark], dir: &Path) -> Result<Builds, String> {
        let report_warnings = |built: &Built| {
            if !built.warnings.is_empty() {
                eprintln!(
                    "mpibench: {} compiler messages:\n{}",
                    library.name(),
                    built.warnings
                );
            }
        };
        let base = if benchmarks.iter().any(|b| !b.is_one_sided()) {
            let built = library.build_variant(dir, Variant::Base)?;
            report_warnings(&built);
            Some(built)
        } else {
            None
        };
        let rma = benchmarks.iter().any(|b| b.is_one_sided()).then(|| {
            let built = library.build_variant(dir, Variant::Rma);
            match &built {
                Ok(built) => report_warnings(built),
                Err(e) => eprintln!(
                    "mpibench: {}: the one-sided benchmarks cannot run: {e}",
                    library.name()
                ),
            }
            built
        });
        Ok(Builds { library, base, rma })
    }

    /// The executable that runs `benchmark`, if it was built.
    fn for_benchmark(&self, benchmark: Benchmark) -> Option<&Built> {
        if benchmark.is_one_sided() {
            self.rma.as_ref()?.as_ref().ok()
        } else {
            self.base.as_ref()
        }
    }
}

/// Replaces the group name `rma` by the one-sided benchmarks' names.
fn expand_groups(items: &[String]) -> Vec<String> {
    items
        .iter()
        .flat_map(|item| {
            if item.trim() == "rma" {
                Benchmark::ONE_SIDED
                    .iter()
                    .map(|b| b.name().to_string())
                    .collect()
            } else {
                vec![item.clone()]
            }
        })
        .collect()
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
