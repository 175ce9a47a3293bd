//! The MPI-IO comparison of the `iobench` binary: the benchmarks of `benches/c/iobench.c`
//! (built as [`super::library::Variant::Io`]), the arguments they take, the parsing of their
//! `result NAME BYTES VALUE UNIT SAMPLES` lines, and the report: medians over rounds per
//! (directory, placement, figure, library), the ratios ours/theirs, a Markdown table per
//! directory and placement, and one JSON document.
//!
//! The figures are not those of `mpibench` (a sweep of message sizes per benchmark): each I/O
//! benchmark moves one amount of data, set by its options ([`IoSettings`]), into files in a
//! directory given per run, and `write_at_64m` yields three figures (the MPI call, the `pwrite`
//! baseline measured in the same program, and their ratio). Hence a report of its own, made of
//! the same parts: [`super::Library`], [`super::Placement`], [`super::Built::job`] to start
//! jobs, medians over rounds that start with a different library each time.

use super::library::{Built, Library, Placement};
use super::report::figure;
use crate::measure::median;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// How the benchmarks measure, for the report (and `iobench --help`).
pub const IO_METHOD: &str = "Method: every figure is the median over the timed steps of a run \
    (one untimed warm-up step first) of the bytes of a step / the slowest rank's time, MB/s = \
    10^6 bytes/s; MPI_Barrier before every step; the table gives the median over rounds. \
    btio_write / btio_read: the NAS BT-IO pattern, a GRID^3 array of doubles block-distributed \
    over an MPI_Dims_create(np, 3) grid of ranks, each rank's block its filetype \
    (MPI_Type_create_subarray), contiguous in memory; one MPI_File_write_all / \
    MPI_File_read_all per step, step k at displacement k * GRID^3 * 8 (time steps appended to \
    the file); btio_read's file is written beforehand with pwrite and fsynced. strided_write: \
    blocks of BLOCK bytes dealt round robin to the ranks, each rank writing its BLOCKS blocks \
    with one independent MPI_File_write through a vector view (MPI_Type_vector), a fresh region \
    of the file per step. write_at_64m: at np=1, one MPI_File_write_at of MIB MiB at offset 0 \
    and, in the same program, one pwrite of the same buffer to another file; both files \
    truncated to 0 (untimed) before every step so both allocate fresh pages, their order \
    alternating; write_at_over_pwrite is the median over steps of pwrite time / write_at time \
    (1 = parity; the target is at least 0.9); pwrite_64m is the same system call in every \
    library's program, so its ours/theirs ratio shows how far noise alone moves a figure. No hints (MPI_INFO_NULL): each library's \
    defaults (MPICH: ROMIO; Open MPI: ompio, --mca io ompio). File caching: without --sync the \
    timed region ends when the call returns (the data are in the page cache) and an untimed \
    MPI_File_sync / fsync follows every step, so no dirty pages pile up across steps or runs; \
    with --sync the sync is inside the timed region. Reads come from the page cache unless \
    --drop-cache (posix_fadvise DONTNEED after fdatasync before every read step; tmpfs keeps its \
    pages whatever). Every run gets a fresh directory, removed after it; after the timing the \
    programs read every written step back with pread and check it (btio_read checks its \
    buffer every step).";

/// An MPI-IO benchmark of `iobench.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IoBenchmark {
    /// Collective write of a block-distributed 3-D array (BT-IO).
    BtioWrite,
    /// Collective read of the same.
    BtioRead,
    /// Independent strided writes through a vector view.
    StridedWrite,
    /// One large `MPI_File_write_at` against `pwrite`.
    WriteAt,
}

impl IoBenchmark {
    /// Every benchmark, in the order of the table.
    pub const ALL: [IoBenchmark; 4] = [
        IoBenchmark::BtioWrite,
        IoBenchmark::BtioRead,
        IoBenchmark::StridedWrite,
        IoBenchmark::WriteAt,
    ];

    /// The name `iobench.c` and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            IoBenchmark::BtioWrite => "btio_write",
            IoBenchmark::BtioRead => "btio_read",
            IoBenchmark::StridedWrite => "strided_write",
            IoBenchmark::WriteAt => "write_at_64m",
        }
    }

    /// Parses a `--benchmarks` entry.
    pub fn from_name(name: &str) -> Result<IoBenchmark, String> {
        IoBenchmark::ALL
            .into_iter()
            .find(|b| b.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = IoBenchmark::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown I/O benchmark {name:?}: choose from {}",
                    names.join(",")
                )
            })
    }

    /// The figures its run prints, in order.
    pub fn figures(self) -> &'static [&'static str] {
        match self {
            IoBenchmark::BtioWrite => &["btio_write"],
            IoBenchmark::BtioRead => &["btio_read"],
            IoBenchmark::StridedWrite => &["strided_write"],
            IoBenchmark::WriteAt => &["write_at_64m", "pwrite_64m", "write_at_over_pwrite"],
        }
    }

    /// Ranks: `write_at_64m` is one process's call (np=1: no rank waiting beside it on the
    /// cores); the others run at `np`.
    pub fn ranks(self, np: usize) -> usize {
        match self {
            IoBenchmark::WriteAt => 1,
            _ => np.max(1),
        }
    }
}

/// The sizes and the caching policy, the same for every library.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IoSettings {
    /// btio: the global array is `grid`^3 doubles.
    pub grid: u64,
    /// Timed steps per run.
    pub steps: u64,
    /// strided_write: bytes per block.
    pub block: u64,
    /// strided_write: blocks per rank.
    pub blocks: u64,
    /// write_at_64m: MiB of the one call.
    pub mib: u64,
    /// The sync is inside the timed region.
    pub sync: bool,
    /// btio_read evicts the file's pages before every step.
    pub drop_cache: bool,
}

impl IoSettings {
    /// The program's arguments for `benchmark` with its files in `dir`.
    pub fn args(&self, benchmark: IoBenchmark, dir: &Path) -> Vec<String> {
        let mut args = vec![
            benchmark.name().to_string(),
            "--dir".into(),
            dir.display().to_string(),
            "--steps".into(),
            self.steps.to_string(),
        ];
        let mut add = |name: &str, value: u64| {
            args.push(name.to_string());
            args.push(value.to_string());
        };
        match benchmark {
            IoBenchmark::BtioWrite | IoBenchmark::BtioRead => add("--grid", self.grid),
            IoBenchmark::StridedWrite => {
                add("--block", self.block);
                add("--blocks", self.blocks);
            }
            IoBenchmark::WriteAt => add("--mib", self.mib),
        }
        if self.sync {
            args.push("--sync".into());
        }
        if self.drop_cache && benchmark == IoBenchmark::BtioRead {
            args.push("--drop-cache".into());
        }
        args
    }
}

/// One figure of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IoFigure {
    pub name: String,
    /// Bytes moved by one timed step, all ranks together.
    pub bytes: u64,
    pub value: f64,
    pub unit: String,
    /// Timed steps behind the median.
    pub samples: u64,
}

/// One run of one benchmark under one library, as stored in `iobench.json`.
#[derive(Clone, Debug, Serialize)]
pub struct IoRun {
    pub round: usize,
    pub dir: String,
    pub placement: Placement,
    pub library: String,
    pub benchmark: String,
    pub np: usize,
    pub figures: Vec<IoFigure>,
}

/// Reads the `result` lines of `iobench.c` for `benchmark`, after checking that its header
/// (`# iobench BENCHMARK np=N`) appears once with the `np` the job was started with (a program
/// that loaded another library than its launcher's runs as `np` singletons), and that every
/// figure the benchmark prints is there.
pub fn parse_io_results(
    output: &str,
    benchmark: IoBenchmark,
    np: usize,
) -> Result<Vec<IoFigure>, String> {
    super::run::check_one_job(output, "iobench", benchmark.name(), np)?;
    let mut figures = Vec::new();
    for line in output.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() != Some(&"result") {
            continue;
        }
        let bad = || {
            format!(
                "malformed result line {line:?}: expected `result NAME BYTES VALUE UNIT SAMPLES`"
            )
        };
        if fields.len() != 6 {
            return Err(bad());
        }
        if !benchmark.figures().contains(&fields[1]) {
            return Err(format!(
                "figure {} while running {}: {line:?}",
                fields[1],
                benchmark.name()
            ));
        }
        let value: f64 = fields[3].parse().map_err(|_| bad())?;
        if !value.is_finite() || value <= 0.0 {
            return Err(format!("not a positive figure in {line:?}"));
        }
        figures.push(IoFigure {
            name: fields[1].to_string(),
            bytes: fields[2].parse().map_err(|_| bad())?,
            value,
            unit: fields[4].to_string(),
            samples: fields[5].parse().map_err(|_| bad())?,
        });
    }
    let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
    if names != benchmark.figures() {
        return Err(format!(
            "{} printed figures {names:?}, expected {:?}; its output was:\n{output}",
            benchmark.name(),
            benchmark.figures()
        ));
    }
    Ok(figures)
}

/// Runs `benchmark` built against one library at `np` ranks placed as `placement`, with its
/// files in `dir` (which must exist), and returns its figures.
pub fn run_io_benchmark(
    built: &Built,
    benchmark: IoBenchmark,
    np: usize,
    placement: Placement,
    settings: &IoSettings,
    dir: &Path,
) -> Result<Vec<IoFigure>, String> {
    let args = settings.args(benchmark, dir);
    let what = format!("{} in {}", benchmark.name(), dir.display());
    let stdout = super::run::run_job(built, np, &args, placement, &what)?;
    parse_io_results(&stdout, benchmark, np)
}

/// One line of a table: the medians of one figure in one directory at one placement.
#[derive(Clone, Debug, Serialize)]
pub struct IoRow {
    pub dir: String,
    pub placement: Placement,
    pub figure: String,
    pub np: usize,
    pub bytes: u64,
    pub unit: String,
    /// Median over rounds, by library name.
    pub medians: BTreeMap<String, f64>,
    /// ours / theirs, by the other library's name (bandwidths only: higher is better).
    pub ratios: BTreeMap<String, f64>,
}

/// A directory the files went to, with its file system type (`df --output=fstype`).
#[derive(Clone, Debug, Serialize)]
pub struct IoDir {
    pub path: String,
    pub fstype: String,
}

/// Every run of an `iobench` invocation and the medians computed from them.
#[derive(Clone, Debug, Serialize)]
pub struct IoComparison {
    pub np: usize,
    pub repeat: usize,
    pub cores: usize,
    pub libraries: Vec<String>,
    pub settings: IoSettings,
    pub dirs: Vec<IoDir>,
    pub placements: Vec<Placement>,
    pub method: &'static str,
    pub runs: Vec<IoRun>,
    pub rows: Vec<IoRow>,
}

impl IoComparison {
    /// Computes the medians and ratios of `runs`: one row per directory, placement and figure,
    /// in the order of `dirs`, `placements` and [`IoBenchmark::ALL`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        np: usize,
        repeat: usize,
        libraries: &[Library],
        settings: IoSettings,
        dirs: Vec<IoDir>,
        placements: Vec<Placement>,
        runs: Vec<IoRun>,
    ) -> IoComparison {
        let mut rows = Vec::new();
        for dir in &dirs {
            for &placement in &placements {
                for name in IoBenchmark::ALL.iter().flat_map(|b| b.figures()) {
                    let mut by_library: BTreeMap<String, Vec<f64>> = BTreeMap::new();
                    let mut shape = None;
                    for run in runs
                        .iter()
                        .filter(|r| r.dir == dir.path && r.placement == placement)
                    {
                        for f in run.figures.iter().filter(|f| f.name == *name) {
                            shape = Some((run.np, f.bytes, f.unit.clone()));
                            by_library
                                .entry(run.library.clone())
                                .or_default()
                                .push(f.value);
                        }
                    }
                    let Some((np, bytes, unit)) = shape else {
                        continue;
                    };
                    let medians: BTreeMap<String, f64> = by_library
                        .into_iter()
                        .map(|(lib, mut values)| (lib, median(&mut values)))
                        .collect();
                    let mut ratios = BTreeMap::new();
                    if let (Some(&ours), true) = (medians.get(Library::Ours.name()), unit == "MB/s")
                    {
                        for (lib, &theirs) in &medians {
                            if lib != Library::Ours.name() && theirs > 0.0 {
                                ratios.insert(lib.clone(), ours / theirs);
                            }
                        }
                    }
                    rows.push(IoRow {
                        dir: dir.path.clone(),
                        placement,
                        figure: name.to_string(),
                        np,
                        bytes,
                        unit,
                        medians,
                        ratios,
                    });
                }
            }
        }
        IoComparison {
            np,
            repeat,
            cores: super::library::cores(),
            libraries: libraries.iter().map(|l| l.name().to_string()).collect(),
            settings,
            dirs,
            placements,
            method: IO_METHOD,
            runs,
            rows,
        }
    }

    /// The libraries ours is compared with (none when ours did not run).
    fn others(&self) -> Vec<&str> {
        if !self.libraries.iter().any(|l| l == Library::Ours.name()) {
            return Vec::new();
        }
        self.libraries
            .iter()
            .map(String::as_str)
            .filter(|l| *l != Library::Ours.name())
            .collect()
    }

    /// The Markdown report: the settings and the method once, then one table per directory
    /// and placement, each followed by the write_at/pwrite verdict per library.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let others = self.others();
        let against = if others.is_empty() {
            format!(": {}", self.libraries.join(", "))
        } else {
            format!(": ours against {}", others.join(" and "))
        };
        let _ = writeln!(s, "# MPI-IO benchmarks{against}\n");
        let st = &self.settings;
        let _ = writeln!(
            s,
            "Medians over {} round(s); each round runs every library once in turn. btio and \
             strided_write at np={}, write_at_64m at np=1, on {} core(s). Sizes: btio {}^3 \
             doubles ({} bytes a step), strided_write {} blocks of {} B per rank, write_at_64m \
             {} MiB; {} timed step(s) per run. Sync {} the timed region{}.\n",
            self.repeat,
            self.np,
            self.cores,
            st.grid,
            st.grid.pow(3) * 8,
            st.blocks,
            st.block,
            st.mib,
            st.steps,
            if st.sync { "inside" } else { "outside (after)" },
            if st.drop_cache {
                "; btio_read drops the file's cached pages before every step"
            } else {
                ""
            },
        );
        let _ = writeln!(s, "{IO_METHOD}\n");
        if self.np > self.cores {
            let _ = writeln!(
                s,
                "np={} is more ranks than this machine's {} core(s): ranks share cores, and a \
                 library whose waiting ranks spin (MPICH) slows the ranks doing the I/O.\n",
                self.np, self.cores
            );
        }
        let _ = writeln!(
            s,
            "Ratios are ours/theirs of bandwidths (MB/s, 10^6 bytes/s): above 1 means ours is \
             faster; a `!` marks a row where ours is slower.\n"
        );
        for dir in &self.dirs {
            for &placement in &self.placements {
                let rows: Vec<&IoRow> = self
                    .rows
                    .iter()
                    .filter(|r| r.dir == dir.path && r.placement == placement)
                    .collect();
                if rows.is_empty() {
                    continue;
                }
                let _ = writeln!(
                    s,
                    "## {} ({}), {} placement\n",
                    dir.path,
                    dir.fstype,
                    placement.name()
                );
                self.table(&mut s, &rows);
            }
        }
        let _ = writeln!(s, "Placements: {}", Placement::Default.describe());
        let _ = writeln!(s, "{}", Placement::Bound.describe());
        s
    }

    fn table(&self, s: &mut String, rows: &[&IoRow]) {
        let others = self.others();
        let mut header = String::from("| figure | np | bytes | unit |");
        let mut rule = String::from("|---|---:|---:|---|");
        for lib in &self.libraries {
            let _ = write!(header, " {lib} |");
            rule.push_str("---:|");
        }
        for other in &others {
            let _ = write!(header, " ours/{other} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for row in rows {
            let mut line = format!(
                "| {} | {} | {} | {} |",
                row.figure, row.np, row.bytes, row.unit
            );
            for lib in &self.libraries {
                match row.medians.get(lib) {
                    Some(v) => {
                        let _ = write!(line, " {} |", figure(*v));
                    }
                    None => line.push_str(" - |"),
                }
            }
            for other in &others {
                match row.ratios.get(*other) {
                    Some(r) => {
                        let _ = write!(line, " {r:.3}{} |", if *r < 1.0 { " !" } else { "" });
                    }
                    None => line.push_str(" - |"),
                }
            }
            let _ = writeln!(s, "{line}");
        }
        s.push('\n');
        if let Some(row) = rows.iter().find(|r| r.figure == "write_at_over_pwrite") {
            let verdicts: Vec<String> = self
                .libraries
                .iter()
                .filter_map(|lib| {
                    let r = row.medians.get(lib)?;
                    let verdict = if *r >= 0.9 {
                        "meets the target, at least 0.9"
                    } else {
                        "misses the target of 0.9"
                    };
                    Some(format!("{lib} {r:.3} ({verdict})"))
                })
                .collect();
            let _ = writeln!(
                s,
                "- MPI_File_write_at against pwrite (pwrite time / write_at time): {}.\n",
                verdicts.join(", ")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITE_AT: &str = "# iobench write_at_64m np=1 sync=0 drop_cache=0 dir=/x\n\
        result write_at_64m 67108864 900 MB/s 5\n\
        result pwrite_64m 67108864 1000 MB/s 5\n\
        result write_at_over_pwrite 67108864 0.9 ratio 5\n";

    #[test]
    fn parses_every_figure_of_a_benchmark_and_refuses_missing_ones() {
        let got = parse_io_results(WRITE_AT, IoBenchmark::WriteAt, 1).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[2].unit, "ratio");
        assert_eq!((got[1].bytes, got[1].value), (67108864, 1000.0));
        let short: String = WRITE_AT.lines().take(3).collect::<Vec<_>>().join("\n");
        assert!(parse_io_results(&short, IoBenchmark::WriteAt, 1).is_err());
        // Another benchmark's figure, or a job of singletons, is refused.
        assert!(parse_io_results(WRITE_AT, IoBenchmark::BtioWrite, 1).is_err());
        let one = "# iobench btio_read np=1\nresult btio_read 8 1 MB/s 1\n";
        assert!(parse_io_results(&one.repeat(2), IoBenchmark::BtioRead, 2).is_err());
    }

    #[test]
    fn arguments_carry_the_sizes_of_each_benchmark() {
        let settings = IoSettings {
            grid: 16,
            steps: 2,
            block: 512,
            blocks: 8,
            mib: 1,
            sync: true,
            drop_cache: true,
        };
        let dir = Path::new("/tmp/x");
        let btio = settings.args(IoBenchmark::BtioRead, dir);
        assert_eq!(
            btio,
            [
                "btio_read",
                "--dir",
                "/tmp/x",
                "--steps",
                "2",
                "--grid",
                "16",
                "--sync",
                "--drop-cache"
            ]
        );
        let strided = settings.args(IoBenchmark::StridedWrite, dir).join(" ");
        assert!(
            strided.ends_with("--block 512 --blocks 8 --sync"),
            "{strided}"
        );
        assert_eq!(IoBenchmark::WriteAt.ranks(4), 1);
        assert_eq!(IoBenchmark::BtioWrite.ranks(4), 4);
    }

    #[test]
    fn rows_per_directory_and_placement_with_medians_and_ratios() {
        let run = |round, dir: &str, library: &str, value: f64| IoRun {
            round,
            dir: dir.into(),
            placement: Placement::Default,
            library: library.into(),
            benchmark: "write_at_64m".into(),
            np: 1,
            figures: parse_io_results(
                &WRITE_AT.replace("900 MB/s", &format!("{value} MB/s")),
                IoBenchmark::WriteAt,
                1,
            )
            .unwrap(),
        };
        let runs = vec![
            run(0, "/a", "ours", 800.0),
            run(1, "/a", "ours", 600.0),
            run(2, "/a", "ours", 700.0),
            run(0, "/a", "mpich", 350.0),
            run(0, "/b", "mpich", 100.0),
        ];
        let dirs = ["/a", "/b"].map(|p| IoDir {
            path: p.into(),
            fstype: "tmpfs".into(),
        });
        let settings = IoSettings {
            grid: 8,
            steps: 1,
            block: 8,
            blocks: 1,
            mib: 64,
            sync: false,
            drop_cache: false,
        };
        let c = IoComparison::new(
            4,
            3,
            &[Library::Ours, Library::Mpich],
            settings,
            dirs.to_vec(),
            vec![Placement::Default],
            runs,
        );
        assert_eq!(c.rows.len(), 6, "three figures in each directory");
        let a = &c.rows[0];
        assert_eq!((a.dir.as_str(), a.figure.as_str()), ("/a", "write_at_64m"));
        assert_eq!(a.medians["ours"], 700.0);
        assert_eq!(a.ratios["mpich"], 2.0);
        assert!(c.rows[2].ratios.is_empty(), "no ours/theirs of a ratio");
        assert!(c.rows[3].ratios.is_empty(), "ours did not run in /b");
        let text = c.markdown();
        assert!(text.contains("## /b (tmpfs), default placement"), "{text}");
        assert!(
            text.contains("| write_at_64m | 1 | 67108864 | MB/s | 700.0 | 350.0 | 2.000 |"),
            "{text}"
        );
        assert!(text.contains("ours 0.900 (meets the target"), "{text}");
    }
}
