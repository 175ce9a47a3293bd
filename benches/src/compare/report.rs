//! From runs to a comparison: the median over rounds of every (benchmark, size, library), the
//! ratio ours/theirs, and the outputs: a Markdown table, `mpibench.json` and the charts drawn
//! with [`crate::plot::draw`]. `mpibench` makes one [`Comparison`] per [`Placement`] (each
//! with its own table and charts, file names carrying the placement) and writes them as one
//! [`PlacedReport`], in which every run and row says its placement. When one-sided rows are
//! present the table says how they were measured ([`ONE_SIDED_METHOD`]).

use super::library::{Library, Placement};
use super::run::{Benchmark, RunRecord};
use crate::measure::median;
use crate::plot::{self, Chart, Series};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How the one-sided benchmarks measure, for the report (and `mpibench --help`).
pub const ONE_SIDED_METHOD: &str = "One-sided benchmarks (put_lat, get_lat, acc_lat, fop_lat, \
    cas_lat, put_bw, get_bw) run at np=2, passive target: origin rank 0, target rank 1. The \
    window is made by MPI_Win_allocate (MPI_INFO_NULL, disp_unit 1, size rounded up to whole \
    4 KiB pages) once per size, so that each library places the window memory as it likes. The \
    origin holds MPI_Win_lock_all(MPI_MODE_NOCHECK) across the warm-up and the timed loop; the \
    target makes no RMA call meanwhile and waits in MPI_Bcast (warm-up) and MPI_Barrier (timed \
    loop), so any progress a library needs at the target comes from a blocking collective. \
    Latency rows: each operation (MPI_Put / MPI_Get of SIZE bytes, MPI_Accumulate MPI_SUM of \
    SIZE/8 longs, MPI_Fetch_and_op MPI_SUM of one MPI_LONG, MPI_Compare_and_swap of one \
    MPI_LONG that succeeds) is followed by MPI_Win_flush; a sample times a batch of them (about \
    10 us, 1 to 100 operations); the figure is the median over samples of the time per \
    operation. Bandwidth rows: a window of 64 operations (16 from 1 MiB, at most 64 MiB in \
    all), each to its own part of the target window, then one MPI_Win_flush; a repetition is \
    a few windows after an MPI_Barrier; the figure is the median over repetitions of bytes / \
    time at the origin. The data are checked after the timing (put: the target's window; get: \
    the origin's buffer; atomics: every fetched value and the target's final count). Open MPI \
    runs them with `--mca osc ^rdma` (its default osc/rdma over vader segfaults in \
    MPI_Compare_and_swap and MPI_Fetch_and_op; osc/sm, its shared-memory component, is picked \
    instead).";

/// One line of the table: the medians of one benchmark at one size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub benchmark: String,
    pub np: usize,
    pub size: u64,
    pub unit: String,
    /// `true` for times (lower is better), `false` for bandwidths (higher is better).
    pub lower_is_better: bool,
    /// Median over rounds, by library name.
    pub medians: BTreeMap<String, f64>,
    /// ours / theirs, by the other library's name.
    pub ratios: BTreeMap<String, f64>,
}

impl Row {
    /// Whether ours is at least as good as `other` in this row (`None` if either is missing).
    pub fn ours_at_least_equal(&self, other: &str) -> Option<bool> {
        let ratio = *self.ratios.get(other)?;
        Some(if self.lower_is_better {
            ratio <= 1.0
        } else {
            ratio >= 1.0
        })
    }

    /// How much faster ours is than `other`: above 1 means ours is faster, whatever the unit.
    pub fn speedup(&self, other: &str) -> Option<f64> {
        let ratio = *self.ratios.get(other)?;
        Some(if self.lower_is_better {
            1.0 / ratio
        } else {
            ratio
        })
    }
}

/// All runs of a comparison and the medians computed from them.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub np: usize,
    pub repeat: usize,
    pub quick: bool,
    pub cores: usize,
    pub libraries: Vec<String>,
    /// Where the ranks of every run ran, when the comparison is one of several placements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
    pub runs: Vec<RunRecord>,
    pub rows: Vec<Row>,
    /// What the reader should know beyond the figures (e.g. a library that could not build
    /// the one-sided benchmarks), printed under the table.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Comparison {
    /// Computes the medians and ratios of `runs`.
    pub fn new(
        np: usize,
        repeat: usize,
        quick: bool,
        libraries: &[Library],
        runs: Vec<RunRecord>,
    ) -> Comparison {
        let mut rows = Vec::new();
        for benchmark in Benchmark::ALL {
            let of_benchmark: Vec<&RunRecord> = runs
                .iter()
                .filter(|r| r.benchmark == benchmark.name())
                .collect();
            let Some(first) = of_benchmark.first() else {
                continue;
            };
            let mut figures: BTreeMap<u64, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
            for run in &of_benchmark {
                for m in &run.results {
                    figures
                        .entry(m.size)
                        .or_default()
                        .entry(run.library.clone())
                        .or_default()
                        .push(m.value);
                }
            }
            for (size, by_library) in figures {
                let medians: BTreeMap<String, f64> = by_library
                    .into_iter()
                    .map(|(lib, mut values)| (lib, median(&mut values)))
                    .collect();
                let mut ratios = BTreeMap::new();
                if let Some(&ours) = medians.get(Library::Ours.name()) {
                    for (lib, &theirs) in &medians {
                        if lib != Library::Ours.name() && theirs > 0.0 {
                            ratios.insert(lib.clone(), ours / theirs);
                        }
                    }
                }
                rows.push(Row {
                    benchmark: benchmark.name().to_string(),
                    np: first.np,
                    size,
                    unit: benchmark.unit().to_string(),
                    lower_is_better: benchmark.is_time(),
                    medians,
                    ratios,
                });
            }
        }
        Comparison {
            np,
            repeat,
            quick,
            cores: super::library::cores(),
            libraries: libraries.iter().map(|l| l.name().to_string()).collect(),
            placement: None,
            runs,
            rows,
            notes: Vec::new(),
        }
    }

    /// The same comparison with `notes` added.
    pub fn with_notes(mut self, notes: &[String]) -> Comparison {
        self.notes.extend_from_slice(notes);
        self
    }

    /// The same comparison, saying that every run was at `placement`.
    pub fn at(mut self, placement: Placement) -> Comparison {
        self.placement = Some(placement);
        self
    }

    /// A chart's file name (without extension): `mpibench-NAME`, or with a placement
    /// `mpibench-PLACEMENT-NAME`.
    pub fn chart_stem(&self, name: &str) -> String {
        match self.placement {
            Some(p) => format!("mpibench-{}-{name}", p.name()),
            None => format!("mpibench-{name}"),
        }
    }

    /// A chart's title, with the placement when there is one.
    fn chart_title(&self, title: &str) -> String {
        match self.placement {
            Some(p) => format!("{title}, {} placement", p.name()),
            None => title.to_string(),
        }
    }

    fn others(&self) -> Vec<&str> {
        self.libraries
            .iter()
            .map(String::as_str)
            .filter(|l| *l != Library::Ours.name())
            .collect()
    }

    /// The Markdown table, with a header saying how to read the ratios and a summary per library.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let placement = match self.placement {
            Some(p) => format!(", {} placement", p.name()),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "# MPI micro-benchmarks: ours against {}{placement}\n",
            self.others().join(" and ")
        );
        let _ =
            writeln!(
            s,
            "Medians over {} round(s); each round runs every library once in turn. Point-to-point \
             latency, bw and bibw at np=2; multibw and the collectives at np={} on {} core(s){}. \
             {}\n",
            self.repeat,
            self.np,
            self.cores,
            if self.quick { "; quick mode (short runs, figures are rough)" } else { "" },
            self.placement.map_or("Ranks are bound one per core.", Placement::describe)
        );
        if self
            .rows
            .iter()
            .any(|r| Benchmark::from_name(&r.benchmark).is_ok_and(Benchmark::is_one_sided))
        {
            let _ = writeln!(s, "{ONE_SIDED_METHOD}\n");
        }
        if self.np > self.cores {
            let _ = writeln!(
                s,
                "np={} is more ranks than this machine's {} core(s): ranks share cores. MPICH waits \
                 for messages by spinning without yielding, so a waiting rank can burn its whole time \
                 slice while the rank it waits for sits descheduled on the same core; Open MPI, \
                 started with `--oversubscribe`, yields when idle. Oversubscribed figures measure the \
                 scheduler as much as the library.\n",
                self.np, self.cores
            );
        }
        let _ = writeln!(
            s,
            "Ratios are ours/theirs. Times (us): below 1 means ours is faster. \
             Bandwidths (MB/s, 10^6 bytes/s): above 1 means ours is faster. \
             A `!` marks a row where ours is slower.\n"
        );
        let mut header = String::from("| benchmark | np | size (B) | unit |");
        let mut rule = String::from("|---|---:|---:|---|");
        for lib in &self.libraries {
            let _ = write!(header, " {lib} |");
            rule.push_str("---:|");
        }
        for other in self.others() {
            let _ = write!(header, " ours/{other} |");
            rule.push_str("---:|");
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for row in &self.rows {
            let mut line = format!(
                "| {} | {} | {} | {} |",
                row.benchmark, row.np, row.size, row.unit
            );
            for lib in &self.libraries {
                match row.medians.get(lib) {
                    Some(v) => {
                        let _ = write!(line, " {} |", figure(*v));
                    }
                    None => line.push_str(" - |"),
                }
            }
            for other in self.others() {
                match (row.ratios.get(other), row.ours_at_least_equal(other)) {
                    (Some(r), Some(ok)) => {
                        let _ = write!(line, " {r:.3}{} |", if ok { "" } else { " !" });
                    }
                    _ => line.push_str(" - |"),
                }
            }
            let _ = writeln!(s, "{line}");
        }
        s.push('\n');
        for other in self.others() {
            let compared: Vec<&Row> = self
                .rows
                .iter()
                .filter(|r| r.ratios.contains_key(other))
                .collect();
            let slower: Vec<String> = compared
                .iter()
                .filter(|r| r.ours_at_least_equal(other) == Some(false))
                .map(|r| format!("{} {} B", r.benchmark, r.size))
                .collect();
            let _ = writeln!(
                s,
                "- Against {other}: ours at least equal in {} of {} rows{}",
                compared.len() - slower.len(),
                compared.len(),
                if slower.is_empty() {
                    ".".to_string()
                } else {
                    format!("; slower in: {}.", slower.join(", "))
                }
            );
        }
        for note in &self.notes {
            let _ = writeln!(s, "- Note: {note}");
        }
        s
    }

    /// Draws the charts into `dir` and returns the files written and the errors met (a chart
    /// that cannot be drawn does not stop the others).
    pub fn draw_charts(&self, dir: &Path) -> (Vec<PathBuf>, Vec<String>) {
        let mut written = Vec::new();
        let mut errors = Vec::new();
        let mut draw = |chart: Chart, stem: &str| match plot::draw(&chart, &dir.join(stem)) {
            Ok(paths) => written.extend(paths),
            Err(e) => errors.push(format!("{stem}: {e}")),
        };
        for benchmark in Benchmark::ALL {
            let series = self.library_series(benchmark);
            if series.is_empty() {
                continue;
            }
            let title = self.chart_title(&chart_title(benchmark, self.np));
            let stem = self.chart_stem(benchmark.name());
            let y_label = if benchmark.is_time() {
                "time per call (us)"
            } else {
                "bandwidth (MB/s)"
            };
            if !benchmark.takes_sizes() {
                let rounds = self.rounds_of(benchmark);
                draw(
                    Chart {
                        title: &title,
                        x_label: "round",
                        y_label,
                        log_x: false,
                        log_y: false,
                        series: &rounds,
                    },
                    &stem,
                );
            } else {
                let y_label = if benchmark == Benchmark::Latency {
                    "latency (us)"
                } else {
                    y_label
                };
                draw(
                    Chart {
                        title: &title,
                        x_label: "message size (bytes)",
                        y_label,
                        log_x: true,
                        log_y: true,
                        series: &series,
                    },
                    &stem,
                );
            }
        }
        for other in self.others() {
            let series = self.speedup_series(other);
            if series.is_empty() {
                continue;
            }
            let title =
                self.chart_title(&format!("Ours relative to {other} (above 1: ours faster)"));
            let y_label = format!("{other} time / ours, or ours bandwidth / {other}");
            draw(
                Chart {
                    title: &title,
                    x_label: "message size (bytes)",
                    y_label: &y_label,
                    log_x: true,
                    log_y: true,
                    series: &series,
                },
                &self.chart_stem(&format!("ratio-{other}")),
            );
        }
        (written, errors)
    }

    /// One line per library of `benchmark`'s medians against size (size 0 left out: log axis).
    fn library_series(&self, benchmark: Benchmark) -> Vec<Series> {
        self.libraries
            .iter()
            .filter_map(|lib| {
                let points: Vec<(f64, f64)> = self
                    .rows
                    .iter()
                    .filter(|r| {
                        r.benchmark == benchmark.name()
                            && (r.size > 0 || benchmark == Benchmark::Barrier)
                    })
                    .filter_map(|r| r.medians.get(lib).map(|v| (r.size as f64, *v)))
                    .filter(|(_, v)| *v > 0.0)
                    .collect();
                (!points.is_empty()).then(|| Series {
                    label: lib.clone(),
                    points,
                    dashed: false,
                })
            })
            .collect()
    }

    /// Barrier and the atomics have one size: their charts show each round's figure per
    /// library instead.
    fn rounds_of(&self, benchmark: Benchmark) -> Vec<Series> {
        self.libraries
            .iter()
            .filter_map(|lib| {
                let points: Vec<(f64, f64)> = self
                    .runs
                    .iter()
                    .filter(|r| &r.library == lib && r.benchmark == benchmark.name())
                    .filter_map(|r| r.results.first().map(|m| ((r.round + 1) as f64, m.value)))
                    .collect();
                (!points.is_empty()).then(|| Series {
                    label: lib.clone(),
                    points,
                    dashed: false,
                })
            })
            .collect()
    }

    /// One line per benchmark (except those of one size: barrier, the atomics) of ours' speed
    /// relative to `other`.
    fn speedup_series(&self, other: &str) -> Vec<Series> {
        let mut series: Vec<Series> = Benchmark::ALL
            .iter()
            .filter(|b| b.takes_sizes())
            .filter_map(|b| {
                let points: Vec<(f64, f64)> = self
                    .rows
                    .iter()
                    .filter(|r| r.benchmark == b.name() && r.size > 0)
                    .filter_map(|r| r.speedup(other).map(|x| (r.size as f64, x)))
                    .collect();
                (!points.is_empty()).then(|| Series {
                    label: b.name().to_string(),
                    points,
                    dashed: false,
                })
            })
            .collect();
        // A dashed line at 1 marks parity across the sizes drawn.
        let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let (low, high) = xs.fold((f64::INFINITY, 0.0_f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        if low < high {
            series.push(Series {
                label: "equal".to_string(),
                points: vec![(low, 1.0), (high, 1.0)],
                dashed: true,
            });
        }
        series
    }
}

/// Comparisons at several placements as one document (`mpibench.json`): the settings once,
/// what each placement means, and every run and row of every comparison with its placement.
#[derive(Debug, Serialize)]
pub struct PlacedReport<'a> {
    pub np: usize,
    pub repeat: usize,
    pub quick: bool,
    pub cores: usize,
    pub libraries: &'a [String],
    /// Each placement's name and meaning, in the order of the tables.
    pub placements: Vec<PlacementInfo>,
    pub runs: Vec<Placed<'a, RunRecord>>,
    pub rows: Vec<Placed<'a, Row>>,
    /// The notes of the first comparison (every placement has the same).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub notes: &'a [String],
}

/// A placement as the JSON describes it.
#[derive(Debug, Serialize)]
pub struct PlacementInfo {
    pub name: &'static str,
    pub description: &'static str,
}

/// A run or a row with the placement it was measured at.
#[derive(Debug, Serialize)]
pub struct Placed<'a, T> {
    pub placement: &'static str,
    #[serde(flatten)]
    pub item: &'a T,
}

impl<'a> PlacedReport<'a> {
    /// The report of `comparisons`, which must all have a placement (and the same settings).
    pub fn new(comparisons: &'a [Comparison]) -> Option<PlacedReport<'a>> {
        let first = comparisons.first()?;
        let mut report = PlacedReport {
            np: first.np,
            repeat: first.repeat,
            quick: first.quick,
            cores: first.cores,
            libraries: &first.libraries,
            notes: &first.notes,
            placements: Vec::new(),
            runs: Vec::new(),
            rows: Vec::new(),
        };
        for comparison in comparisons {
            let placement = comparison.placement?;
            let name = placement.name();
            report.placements.push(PlacementInfo {
                name,
                description: placement.describe(),
            });
            let runs = comparison.runs.iter();
            report.runs.extend(runs.map(|item| Placed {
                placement: name,
                item,
            }));
            let rows = comparison.rows.iter();
            report.rows.extend(rows.map(|item| Placed {
                placement: name,
                item,
            }));
        }
        Some(report)
    }
}

fn chart_title(benchmark: Benchmark, np: usize) -> String {
    let ranks = benchmark.ranks(np);
    match benchmark {
        Benchmark::Latency => "Latency (half round trip), np=2".to_string(),
        Benchmark::Bandwidth => "Streaming bandwidth, np=2".to_string(),
        Benchmark::BidirectionalBandwidth => "Bidirectional bandwidth, np=2".to_string(),
        Benchmark::MultiPairBandwidth => {
            format!("Multi-pair bandwidth ({} pairs), np={ranks}", ranks / 2)
        }
        Benchmark::Allreduce => format!("MPI_Allreduce (sum of doubles), np={ranks}"),
        Benchmark::Bcast => format!("MPI_Bcast, np={ranks}"),
        Benchmark::Alltoall => format!("MPI_Alltoall (bytes per pair), np={ranks}"),
        Benchmark::Barrier => format!("MPI_Barrier by round, np={ranks}"),
        Benchmark::PutLatency => "MPI_Put + MPI_Win_flush, np=2".to_string(),
        Benchmark::GetLatency => "MPI_Get + MPI_Win_flush, np=2".to_string(),
        Benchmark::AccumulateLatency => {
            "MPI_Accumulate (sum of longs) + MPI_Win_flush, np=2".to_string()
        }
        Benchmark::FetchAndOpLatency => {
            "MPI_Fetch_and_op (8 B) + MPI_Win_flush by round, np=2".to_string()
        }
        Benchmark::CompareAndSwapLatency => {
            "MPI_Compare_and_swap (8 B) + MPI_Win_flush by round, np=2".to_string()
        }
        Benchmark::PutBandwidth => "MPI_Put bandwidth (window, one flush), np=2".to_string(),
        Benchmark::GetBandwidth => "MPI_Get bandwidth (window, one flush), np=2".to_string(),
    }
}

/// A figure with about four significant digits.
pub(crate) fn figure(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::run::Measurement;

    fn run(round: usize, library: &str, benchmark: &str, size: u64, value: f64) -> RunRecord {
        RunRecord {
            round,
            library: library.into(),
            benchmark: benchmark.into(),
            np: 2,
            results: vec![Measurement {
                size,
                value,
                unit: "us".into(),
                samples: 10,
            }],
        }
    }

    #[test]
    fn medians_and_ratios_over_rounds() {
        let runs = vec![
            run(0, "ours", "latency", 8, 1.0),
            run(1, "ours", "latency", 8, 3.0),
            run(2, "ours", "latency", 8, 2.0),
            run(0, "mpich", "latency", 8, 4.0),
            run(1, "mpich", "latency", 8, 4.0),
            run(2, "mpich", "latency", 8, 5.0),
        ];
        let c = Comparison::new(2, 3, false, &[Library::Ours, Library::Mpich], runs);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(c.rows[0].medians["ours"], 2.0);
        assert_eq!(c.rows[0].ratios["mpich"], 0.5);
        assert_eq!(c.rows[0].ours_at_least_equal("mpich"), Some(true));
        assert!(c
            .markdown()
            .contains("| latency | 2 | 8 | us | 2.00 | 4.00 | 0.500 |"));
    }

    #[test]
    fn one_sided_rows_bring_their_method_and_the_notes() {
        let mut bw = run(0, "mpich", "put_bw", 1048576, 9000.0);
        bw.results[0].unit = "MB/s".into();
        let runs = vec![run(0, "mpich", "fop_lat", 8, 0.5), bw];
        let note = "ours did not build the one-sided benchmarks".to_string();
        let c = Comparison::new(2, 1, false, &[Library::Ours, Library::Mpich], runs)
            .at(Placement::Bound)
            .with_notes(std::slice::from_ref(&note));
        let put = c.rows.iter().find(|r| r.benchmark == "put_bw").unwrap();
        assert!(!put.lower_is_better && put.unit == "MB/s");
        let fop = c.rows.iter().find(|r| r.benchmark == "fop_lat").unwrap();
        assert!(fop.lower_is_better && fop.ratios.is_empty());
        let text = c.markdown();
        assert!(text.contains(ONE_SIDED_METHOD), "{text}");
        assert!(text.contains(&format!("- Note: {note}")), "{text}");
        assert!(
            text.contains("| fop_lat | 2 | 8 | us | - | 0.500 | - |"),
            "{text}"
        );
        let comparisons = [c];
        let json = serde_json::to_value(PlacedReport::new(&comparisons).unwrap()).unwrap();
        assert_eq!(json["notes"][0], note.as_str());
        // A table without one-sided rows does not describe them.
        let p2p = Comparison::new(
            2,
            1,
            false,
            &[Library::Mpich],
            vec![run(0, "mpich", "latency", 8, 1.0)],
        );
        assert!(!p2p.markdown().contains(ONE_SIDED_METHOD));
        assert!(serde_json::to_value(&p2p).unwrap().get("notes").is_none());
    }

    #[test]
    fn placements_name_tables_charts_and_every_run_and_row() {
        let libs = [Library::Ours, Library::Mpich];
        let comparisons: Vec<Comparison> = Placement::ALL
            .into_iter()
            .map(|p| {
                let value = if p == Placement::Bound { 1.0 } else { 2.0 };
                let runs = vec![
                    run(0, "ours", "latency", 8, value),
                    run(0, "mpich", "latency", 8, 4.0),
                ];
                Comparison::new(2, 1, false, &libs, runs).at(p)
            })
            .collect();
        assert!(comparisons[0]
            .markdown()
            .starts_with("# MPI micro-benchmarks: ours against mpich, default placement"));
        assert_eq!(
            comparisons[1].chart_stem("latency"),
            "mpibench-bound-latency"
        );
        let report = PlacedReport::new(&comparisons).unwrap();
        let json = serde_json::to_value(&report).unwrap();
        let runs = json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[0]["placement"], "default");
        assert_eq!(runs[3]["placement"], "bound");
        assert_eq!(runs[3]["library"], "mpich");
        let rows = json["rows"].as_array().unwrap();
        assert_eq!(rows[1]["placement"], "bound");
        assert_eq!(rows[1]["ratios"]["mpich"], 0.25);
        assert_eq!(json["placements"][0]["name"], "default");
        // A comparison without a placement (netbench's) cannot be placed.
        let plain = [Comparison::new(2, 1, false, &libs, Vec::new())];
        assert!(PlacedReport::new(&plain).is_none());
    }
}
