//! `iobench`: the MPI-IO benchmarks of `benches/c/iobench.c` built with our `mpicc` and with
//! Debian's MPICH (ROMIO) and Open MPI (ompio) wrappers, run alternately with each library's
//! launcher, compared in one table per directory and placement.
//!
//! ```text
//! iobench                                      # all four, ours/mpich/openmpi, /dev/shm and /var/tmp
//! iobench --dir /dev/shm --libs ours,mpich --repeat 5
//! iobench --benchmarks btio_write,btio_read --grid 256 --steps 3
//! iobench --dir /var/tmp --sync                # the flush to the disk inside the timed region
//! iobench --quick --libs ours --out /tmp/iob   # tiny sizes, one round: a smoke test
//! ```
//!
//! The benchmarks (issue 15's targets): `btio_write` / `btio_read`, the NAS BT-IO pattern (a
//! 3-D array of doubles block-distributed over the ranks, each rank's block a subarray
//! filetype, one `MPI_File_write_all` / `MPI_File_read_all` per time step; 128^3 doubles =
//! 16 MiB a step by default); `strided_write`, independent writes of every NP-th 4 KiB block
//! through a vector view; `write_at_64m`, one 64 MiB `MPI_File_write_at` against a `pwrite` of
//! the same buffer in the same program (the target: MPI within 10% of `pwrite`). How they
//! measure and what is done about the page cache: [`benches::compare::io::IO_METHOD`] (also in
//! `--help` and at the head of the report). In short: by default the timed region ends when the
//! call returns (the data are in the page cache) and an untimed sync follows, so the figures
//! compare the libraries' paths to the kernel; `--sync` times the flush to the device too.
//!
//! A binary of its own rather than a family of `mpibench`: the I/O benchmarks move one amount
//! of data each into files in a directory (no sweep of message sizes), take their own options
//! (`--dir`, `--grid`, `--sync`, ...), run btio at 4 ranks and `write_at_64m` at one, and one of
//! them yields a within-library ratio (MPI against `pwrite`) beside the ours/theirs ratios;
//! `mpibench`'s table, charts and benchmark list stay as they are. What is shared is the
//! machinery: the libraries, their builds (`iobench.c` is [`Variant::Io`]), the launchers'
//! command lines and the two placements (each launcher's default, and every rank bound to a
//! core), all from [`benches::compare`].
//!
//! `--dir` takes a list of directories; every run gets a fresh subdirectory of one, removed
//! after the run whatever its outcome, and the report gives each directory's file system type.
//! The defaults are `/dev/shm` (tmpfs) and `/var/tmp` (on this machine's ext4 disk).
//!
//! The files: `OUT/iobench.json` (every run and row, with its directory and placement),
//! `OUT/iobench.md` (the report) and `OUT/build/` (the source and the executables
//! `iobench-LIB`). No charts: a handful of figures per table.

use benches::compare::io::{
    run_io_benchmark, IoBenchmark, IoComparison, IoDir, IoRun, IoSettings, IO_METHOD,
};
use benches::compare::library::Variant;
use benches::compare::{Library, Placement};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    about = "Compare our MPI-IO with MPICH's ROMIO and Open MPI's ompio, side by side",
    after_long_help = IO_METHOD
)]
struct Args {
    /// Ranks for btio and strided_write (write_at_64m always runs at 1).
    #[arg(long, default_value_t = 4)]
    np: usize,
    /// Rounds; each round runs every benchmark under every library in turn [default: 3, or 1 with --quick].
    #[arg(long)]
    repeat: Option<usize>,
    /// Benchmarks, comma-separated: btio_write, btio_read, strided_write, write_at_64m.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "btio_write,btio_read,strided_write,write_at_64m"
    )]
    benchmarks: Vec<String>,
    /// Libraries, comma-separated: ours, mpich, openmpi.
    #[arg(long, value_delimiter = ',', default_value = "ours,mpich,openmpi")]
    libs: Vec<String>,
    /// Placements, comma-separated: default (each launcher's own) and bound (every rank bound
    /// to a core).
    #[arg(long, value_delimiter = ',', default_value = "default,bound")]
    placement: Vec<String>,
    /// Directories for the files, comma-separated (each run uses a fresh subdirectory, removed
    /// after it).
    #[arg(long, value_delimiter = ',', default_value = "/dev/shm,/var/tmp")]
    dir: Vec<PathBuf>,
    /// btio: the global array is GRID^3 doubles [default: 128, or 32 with --quick].
    #[arg(long)]
    grid: Option<u64>,
    /// Timed steps per run, after one untimed warm-up step [default: 5, or 2 with --quick].
    #[arg(long)]
    steps: Option<u64>,
    /// strided_write: bytes per block.
    #[arg(long, default_value_t = 4096)]
    block: u64,
    /// strided_write: blocks per rank [default: 1024, or 64 with --quick].
    #[arg(long)]
    blocks: Option<u64>,
    /// write_at_64m: MiB of the one MPI_File_write_at (and of the pwrite) [default: 64, or 4
    /// with --quick].
    #[arg(long)]
    mib: Option<u64>,
    /// Put the sync (MPI_File_sync, fsync) inside the timed region of the writes.
    #[arg(long)]
    sync: bool,
    /// btio_read: evict the file's cached pages before every timed read.
    #[arg(long)]
    drop_cache: bool,
    /// Directory for the report, the JSON and the builds [default: iobench-report beside this
    /// executable].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Tiny sizes and one round: a smoke test, not figures.
    #[arg(long)]
    quick: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("iobench: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the comparison; `Ok(false)` when some runs failed (the report covers the others).
fn run(args: Args) -> Result<bool, String> {
    let libraries = parse_list(&args.libs, Library::from_name)?;
    let benchmarks = parse_list(&args.benchmarks, IoBenchmark::from_name)?;
    let placements = parse_list(&args.placement, Placement::from_name)?;
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
    if repeat == 0 || args.np == 0 {
        return Err("--repeat and --np must be at least 1".into());
    }
    let quick = |normal: u64, small: u64| if args.quick { small } else { normal };
    let settings = IoSettings {
        grid: args.grid.unwrap_or(quick(128, 32)),
        steps: args.steps.unwrap_or(quick(5, 2)),
        block: args.block,
        blocks: args.blocks.unwrap_or(quick(1024, 64)),
        mib: args.mib.unwrap_or(quick(64, 4)),
        sync: args.sync,
        drop_cache: args.drop_cache,
    };
    if settings.grid == 0 || settings.steps == 0 || settings.block == 0 || settings.blocks == 0 {
        return Err("--grid, --steps, --block and --blocks must be at least 1".into());
    }
    if settings.mib == 0 || settings.mib > 2047 {
        return Err("--mib must be from 1 to 2047 (one call's int count of bytes)".into());
    }
    let mut dirs = Vec::new();
    for dir in &args.dir {
        if !dir.is_dir() {
            return Err(format!("--dir {}: not a directory", dir.display()));
        }
        if !dirs.iter().any(|d: &IoDir| Path::new(&d.path) == dir) {
            dirs.push(IoDir {
                path: dir.display().to_string(),
                fstype: fstype(dir),
            });
        }
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let out = args.out.clone().unwrap_or_else(|| {
        exe.parent()
            .unwrap_or(Path::new("."))
            .join("iobench-report")
    });

    let missing: Vec<String> = libraries.iter().filter_map(|l| l.tools().err()).collect();
    if !missing.is_empty() {
        return Err(missing.join("\n"));
    }
    let mut builds = Vec::new();
    for &library in &libraries {
        let built = library.build_variant(&out.join("build"), Variant::Io)?;
        if !built.warnings.is_empty() {
            eprintln!(
                "iobench: {} compiler messages:\n{}",
                library.name(),
                built.warnings
            );
        }
        builds.push(built);
    }

    let mut runs = Vec::new();
    let mut failures = Vec::new();
    let mut scratch_count = 0;
    for round in 0..repeat {
        for dir in &dirs {
            for &placement in &placements {
                for &benchmark in &benchmarks {
                    // Start each round with a different library so none always runs first.
                    for i in 0..builds.len() {
                        let built = &builds[(i + round) % builds.len()];
                        let np = benchmark.ranks(args.np);
                        scratch_count += 1;
                        let scratch = Path::new(&dir.path)
                            .join(format!("iobench-{}-{scratch_count}", std::process::id()));
                        std::fs::create_dir_all(&scratch)
                            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
                        let started = Instant::now();
                        let measured =
                            run_io_benchmark(built, benchmark, np, placement, &settings, &scratch);
                        if let Err(e) = std::fs::remove_dir_all(&scratch) {
                            eprintln!("iobench: cannot remove {}: {e}", scratch.display());
                        }
                        let name = built.library.name();
                        match measured {
                            Ok(figures) => {
                                eprintln!(
                                    "round {}/{repeat}  {:<9} {:<7} {:<13} {name:<8} np={np}  {:.1} s",
                                    round + 1,
                                    dir.path,
                                    placement.name(),
                                    benchmark.name(),
                                    started.elapsed().as_secs_f64()
                                );
                                runs.push(IoRun {
                                    round,
                                    dir: dir.path.clone(),
                                    placement,
                                    library: name.to_string(),
                                    benchmark: benchmark.name().to_string(),
                                    np,
                                    figures,
                                });
                            }
                            Err(e) => {
                                eprintln!("iobench: {e}");
                                failures.push(format!(
                                    "round {} {} {} {} {name}",
                                    round + 1,
                                    dir.path,
                                    placement.name(),
                                    benchmark.name()
                                ));
                            }
                        }
                    }
                }
            }
        }
    }

    let comparison = IoComparison::new(
        args.np, repeat, &libraries, settings, dirs, placements, runs,
    );
    let report = comparison.markdown();
    println!("{report}");
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let md = out.join("iobench.md");
    std::fs::write(&md, &report).map_err(|e| format!("cannot write {}: {e}", md.display()))?;
    let json = out.join("iobench.json");
    let text = serde_json::to_string_pretty(&comparison).map_err(|e| e.to_string())?;
    std::fs::write(&json, text).map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    println!("wrote {} and {}", md.display(), json.display());
    if !failures.is_empty() {
        eprintln!(
            "iobench: {} run(s) failed: {}",
            failures.len(),
            failures.join("; ")
        );
    }
    Ok(failures.is_empty())
}

/// The file system type of `dir` as `df` names it (`tmpfs`, `ext4`, ...), or `unknown`.
fn fstype(dir: &Path) -> String {
    Command::new("df")
        .args(["--output=fstype"])
        .arg(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .nth(1)
                .map(|l| l.trim().to_string())
        })
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "unknown".into())
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
