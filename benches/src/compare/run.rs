//! One run of one benchmark under one library: the arguments `mpibench.c` takes, the number of
//! ranks it runs at, and the parsing of its `result BENCHMARK SIZE VALUE UNIT SAMPLES` lines.
//!
//! The one-sided benchmarks (`put_lat` ... `get_bw`, [`Benchmark::is_one_sided`]) run from the
//! library's RMA build of `mpibench.c` ([`super::library::Variant::Rma`]); the others from its
//! base build.

use super::library::{Built, Placement};
use serde::{Deserialize, Serialize};
use std::process::Stdio;

/// A micro-benchmark of `mpibench.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Benchmark {
    Latency,
    Bandwidth,
    BidirectionalBandwidth,
    MultiPairBandwidth,
    Allreduce,
    Bcast,
    Alltoall,
    Barrier,
    /// `MPI_Put` then `MPI_Win_flush`, time per operation.
    PutLatency,
    /// `MPI_Get` then `MPI_Win_flush`, time per operation.
    GetLatency,
    /// `MPI_Accumulate` (`MPI_SUM` of longs) then `MPI_Win_flush`, time per operation.
    AccumulateLatency,
    /// `MPI_Fetch_and_op` (`MPI_SUM`, one `MPI_LONG`) then `MPI_Win_flush`.
    FetchAndOpLatency,
    /// `MPI_Compare_and_swap` (one `MPI_LONG`) then `MPI_Win_flush`.
    CompareAndSwapLatency,
    /// Windows of `MPI_Put`, one `MPI_Win_flush` each, bytes per second.
    PutBandwidth,
    /// Windows of `MPI_Get`, one `MPI_Win_flush` each, bytes per second.
    GetBandwidth,
}

impl Benchmark {
    /// Every benchmark, in the order of the table.
    pub const ALL: [Benchmark; 15] = [
        Benchmark::Latency,
        Benchmark::Bandwidth,
        Benchmark::BidirectionalBandwidth,
        Benchmark::MultiPairBandwidth,
        Benchmark::Allreduce,
        Benchmark::Bcast,
        Benchmark::Alltoall,
        Benchmark::Barrier,
        Benchmark::PutLatency,
        Benchmark::GetLatency,
        Benchmark::AccumulateLatency,
        Benchmark::FetchAndOpLatency,
        Benchmark::CompareAndSwapLatency,
        Benchmark::PutBandwidth,
        Benchmark::GetBandwidth,
    ];

    /// The one-sided benchmarks, in the order of the table (`--benchmarks rma`).
    pub const ONE_SIDED: [Benchmark; 7] = [
        Benchmark::PutLatency,
        Benchmark::GetLatency,
        Benchmark::AccumulateLatency,
        Benchmark::FetchAndOpLatency,
        Benchmark::CompareAndSwapLatency,
        Benchmark::PutBandwidth,
        Benchmark::GetBandwidth,
    ];

    /// The name `mpibench.c` and the command line use.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Latency => "latency",
            Benchmark::Bandwidth => "bw",
            Benchmark::BidirectionalBandwidth => "bibw",
            Benchmark::MultiPairBandwidth => "multibw",
            Benchmark::Allreduce => "allreduce",
            Benchmark::Bcast => "bcast",
            Benchmark::Alltoall => "alltoall",
            Benchmark::Barrier => "barrier",
            Benchmark::PutLatency => "put_lat",
            Benchmark::GetLatency => "get_lat",
            Benchmark::AccumulateLatency => "acc_lat",
            Benchmark::FetchAndOpLatency => "fop_lat",
            Benchmark::CompareAndSwapLatency => "cas_lat",
            Benchmark::PutBandwidth => "put_bw",
            Benchmark::GetBandwidth => "get_bw",
        }
    }

    /// Parses a `--benchmarks` entry.
    pub fn from_name(name: &str) -> Result<Benchmark, String> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                format!(
                    "unknown benchmark {name:?}: choose from {}",
                    names.join(",")
                )
            })
    }

    /// Whether the figure is a time per operation (lower is better) rather than a bandwidth.
    pub fn is_time(self) -> bool {
        !matches!(
            self,
            Benchmark::Bandwidth
                | Benchmark::BidirectionalBandwidth
                | Benchmark::MultiPairBandwidth
                | Benchmark::PutBandwidth
                | Benchmark::GetBandwidth
        )
    }

    /// The unit of the figure.
    pub fn unit(self) -> &'static str {
        if self.is_time() {
            "us"
        } else {
            "MB/s"
        }
    }

    /// Ranks for this benchmark: latency, bw, bibw and the one-sided benchmarks use one pair
    /// (origin rank 0, target rank 1); multi-pair bandwidth and the collectives use the `np`
    /// asked for (multi-pair at least one pair).
    pub fn ranks(self, np: usize) -> usize {
        if self.is_one_sided() {
            return 2;
        }
        match self {
            Benchmark::Latency | Benchmark::Bandwidth | Benchmark::BidirectionalBandwidth => 2,
            Benchmark::MultiPairBandwidth => np.max(2),
            _ => np.max(1),
        }
    }

    /// Whether the benchmark is point-to-point (its sizes come from the point-to-point list).
    pub fn is_point_to_point(self) -> bool {
        matches!(
            self,
            Benchmark::Latency
                | Benchmark::Bandwidth
                | Benchmark::BidirectionalBandwidth
                | Benchmark::MultiPairBandwidth
        )
    }

    /// Whether the benchmark is one-sided (MPI RMA): it runs from the library's RMA build.
    pub fn is_one_sided(self) -> bool {
        Benchmark::ONE_SIDED.contains(&self)
    }

    /// Whether `--sizes` applies: barrier has no message and the two atomics move one
    /// `MPI_LONG` (their one row has size 0 and 8).
    pub fn takes_sizes(self) -> bool {
        !matches!(
            self,
            Benchmark::Barrier | Benchmark::FetchAndOpLatency | Benchmark::CompareAndSwapLatency
        )
    }
}

/// One figure from a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub size: u64,
    pub value: f64,
    pub unit: String,
    /// Round trips or repetitions behind the median.
    pub samples: u64,
}

/// One run of one benchmark under one library, as stored in `mpibench.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub round: usize,
    pub library: String,
    pub benchmark: String,
    pub np: usize,
    pub results: Vec<Measurement>,
}

/// Checks that the header line `# PROGRAM BENCHMARK np=N` of a benchmark program appears once
/// in `output`, with the `np` the job was started with: a binary that loaded another MPI
/// library than its launcher's runs as `np` singletons, each printing its own header.
pub fn check_one_job(
    output: &str,
    program: &str,
    benchmark: &str,
    np: usize,
) -> Result<(), String> {
    let header = format!("# {program} {benchmark} np={np}");
    let prefix = format!("# {program} ");
    let headers: Vec<&str> = output.lines().filter(|l| l.starts_with(&prefix)).collect();
    let ok = headers.len() == 1
        && headers[0]
            .split_whitespace()
            .take(4)
            .eq(header.split_whitespace());
    if ok {
        return Ok(());
    }
    Err(format!(
        "expected one `{header}` line but got {headers:?}: the ranks did not form one job of {np} \
         (did the program load another MPI library than its launcher's? check LD_LIBRARY_PATH)"
    ))
}

/// Reads the `result` lines of `mpibench.c` for `benchmark`, after checking that its header
/// line (`# mpibench BENCHMARK np=N`) appears once with the `np` the job was started with: a
/// binary that loaded another MPI library than its launcher's runs as `np` singletons.
pub fn parse_results(
    output: &str,
    benchmark: Benchmark,
    np: usize,
) -> Result<Vec<Measurement>, String> {
    check_one_job(output, "mpibench", benchmark.name(), np)?;
    let mut results = Vec::new();
    for line in output.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first() != Some(&"result") {
            continue;
        }
        let bad = || {
            format!("malformed result line {line:?}: expected `result BENCHMARK SIZE VALUE UNIT SAMPLES`")
        };
        if fields.len() != 6 {
            return Err(bad());
        }
        if fields[1] != benchmark.name() {
            return Err(format!(
                "result for {} while running {}: {line:?}",
                fields[1],
                benchmark.name()
            ));
        }
        let size = fields[2].parse().map_err(|_| bad())?;
        let value: f64 = fields[3].parse().map_err(|_| bad())?;
        let samples = fields[5].parse().map_err(|_| bad())?;
        if !value.is_finite() {
            return Err(format!("non-finite figure in {line:?}"));
        }
        results.push(Measurement {
            size,
            value,
            unit: fields[4].to_string(),
            samples,
        });
    }
    if results.is_empty() {
        return Err(format!(
            "no results from {}; its output was:\n{output}",
            benchmark.name()
        ));
    }
    Ok(results)
}

/// Runs `benchmark` built against one library at `np` ranks placed as `placement` and returns
/// its figures.
pub fn run_benchmark(
    built: &Built,
    benchmark: Benchmark,
    np: usize,
    placement: Placement,
    sizes: Option<&[u64]>,
    quick: bool,
) -> Result<Vec<Measurement>, String> {
    let mut args = vec![benchmark.name().to_string()];
    if let Some(sizes) = sizes.filter(|_| benchmark.takes_sizes()) {
        let list: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
        args.push("--sizes".into());
        args.push(list.join(","));
    }
    if quick {
        args.push("--quick".into());
    }
    let stdout = run_job(built, np, &args, placement, benchmark.name())?;
    parse_results(&stdout, benchmark, np)
}

/// Runs a benchmark program (`args`, `what` naming the run in messages) built against one
/// library at `np` ranks placed as `placement`; its standard output if the job succeeded.
pub fn run_job(
    built: &Built,
    np: usize,
    args: &[String],
    placement: Placement,
    what: &str,
) -> Result<String, String> {
    let out = built
        .job(np, args, placement)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", built.mpirun.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{} {what} at np={np}, {} placement, failed ({}):\n{}{}",
            built.library.name(),
            placement.name(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_result_lines_and_skips_comments() {
        let text = "# mpibench bw np=2\nresult bw 8 12.5 MB/s 20\nresult bw 1024 900 MB/s 21\n";
        let got = parse_results(text, Benchmark::Bandwidth, 2).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[1],
            Measurement {
                size: 1024,
                value: 900.0,
                unit: "MB/s".into(),
                samples: 21
            }
        );
    }

    #[test]
    fn rejects_results_of_another_benchmark_and_empty_output() {
        let header = "# mpibench latency np=2\n";
        assert!(parse_results(
            &format!("{header}result bw 8 1 MB/s 1\n"),
            Benchmark::Latency,
            2
        )
        .is_err());
        assert!(parse_results(header, Benchmark::Latency, 2).is_err());
    }

    #[test]
    fn one_sided_benchmarks_are_named_ranked_and_sized() {
        for b in Benchmark::ONE_SIDED {
            assert!(b.is_one_sided());
            assert_eq!(Benchmark::from_name(b.name()), Ok(b));
            assert_eq!(b.ranks(8), 2);
        }
        assert!(!Benchmark::Latency.is_one_sided());
        assert_eq!(Benchmark::PutBandwidth.unit(), "MB/s");
        assert_eq!(Benchmark::CompareAndSwapLatency.unit(), "us");
        assert!(Benchmark::GetLatency.takes_sizes() && !Benchmark::FetchAndOpLatency.takes_sizes());
        let text = "# mpibench fop_lat np=2\nresult fop_lat 8 0.5 us 1000\n";
        let got = parse_results(text, Benchmark::FetchAndOpLatency, 2).unwrap();
        assert_eq!((got[0].size, got[0].value), (8, 0.5));
    }

    #[test]
    fn rejects_a_job_that_ran_as_singletons() {
        let one = "# mpibench barrier np=1\nresult barrier 0 0.1 us 200\n";
        assert!(parse_results(&one.repeat(2), Benchmark::Barrier, 2).is_err());
        assert!(parse_results(one, Benchmark::Barrier, 1).is_ok());
    }
}
