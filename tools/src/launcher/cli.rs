//! The command line: what the user asked for, checked before anything starts.
//!
//! Options are clap's (`--np 4`, `-n 4`, `-n4`, `-n=4`, `--channel=fm`, ...). MPICH's hydra
//! spells its long options with one dash (`-np`, `-bind-to`, `-genv`, `-prepend-rank`), which
//! clap would read as clusters of short options, so [`normalize`] rewrites those tokens first,
//! and only before the program name, where it also puts a `--` so that clap never takes the
//! program's own arguments for options of ours. How many values each option takes is read from
//! clap's own model of [`Cli`], so the two cannot disagree.
//!
//! [`parse`] returns validated [`Options`]: the program found and executable, the profile
//! loadable, the channel known, the environment of the ranks assembled.

use super::hosts::{self, HostEntry, RankPlace};
use super::program::{self, Program};
use super::LaunchError;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use nic_model::placement::Policy;
use std::ffi::{OsStr, OsString};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The MPI channels the library implements (`mpich-channel`), as `MPI_CHANNEL` names them.
pub const CHANNELS: &[&str] = &["bip", "fm", "fm1"];

/// Environment variable the library reads to choose its channel.
const CHANNEL_ENV: &str = "MPI_CHANNEL";
/// Environment variable nic-model reads to choose its timing profile.
const PROFILE_ENV: &str = "MPI_NIC_PROFILE";
/// MPICH's name for the job time limit, in seconds.
const TIMEOUT_ENV: &str = "MPIEXEC_TIMEOUT";
/// Environment variable the library reads to choose how ranks reach each other.
pub const WIRE_ENV: &str = "MPI_WIRE";

/// MPICH-style single-dash long options and the spelling [`Cli`] knows them by.
const HYDRA_SPELLINGS: &[(&str, &str)] = &[
    ("-np", "--np"),
    ("-bind-to", "--bind-to"),
    ("-genv", "--genv"),
    ("-env", "--genv"),
    ("-prepend-rank", "--tag-output"),
    ("-channel", "--channel"),
    ("-timeout", "--timeout"),
    ("-hosts", "--hosts"),
    ("-host", "--hosts"),
    ("-hostfile", "--hostfile"),
    ("-machinefile", "--hostfile"),
    ("-launcher-exec", "--launcher-exec"),
    ("-report-bindings", "--report-bindings"),
];

#[derive(Parser, Debug)]
#[command(
    about = "Start an MPI job on this host, or on several hosts",
    long_about = "Start NP copies of PROGRAM as the ranks of one MPI job.\n\n\
        On one host (the default) the ranks share a memory fabric. With --hosts or --hostfile \
        the ranks are placed as MPICH's Hydra places them: each host's slots are filled in \
        order (a host without a count has one slot), wrapping around while ranks remain. Ranks \
        on this machine (localhost, or its host name) are started directly; the others as \
        `CMD HOST env NAME=VALUE... PROGRAM ARGS...` with CMD from --launcher-exec (ssh: with \
        -o BatchMode=yes -o ConnectTimeout=5 after your own options), passing this \
        environment except what only describes this host or session (DISPLAY, PWD, SSH_*, \
        ...), plus the -x/--genv settings. The program's path must be valid on every host; \
        remote ranks start in the launcher's directory there (for ssh, the home directory).\n\n\
        Every rank gets PMI-1 from mpirun: PMI_RANK, PMI_SIZE, and PMI_FD (an inherited \
        socket) on this machine or PMI_PORT, PMI_ID and the job's secret MPI_PMI_KEY on other \
        hosts; a rank that aborts through PMI ends the job with its code.\n\n\
        Standard input goes to rank 0; the output of every rank comes out here line by line. \
        The job ends when every rank has ended; a rank that fails (non-zero status or a signal) \
        ends the whole job, and the exit status is that of the first rank that failed \
        (128+N for signal N). A rank on another host whose launch command fails before the \
        rank reached mpirun is reported with its host. SIGINT, SIGTERM and SIGHUP are passed on \
        to the ranks.\n\n\
        Placement (--bind-to): by default (auto) each rank is bound to a CPU of its own when \
        the ranks on its host fit the CPUs mpirun may use there (its affinity: `taskset -c 0-3 \
        mpirun ...` restricts them); ranks that outnumber those CPUs are not bound and yield \
        while they wait. CPUs are handed out one physical core at a time before any second \
        hardware thread, spread over NUMA nodes when more than two ranks share a host. \
        `--bind-to core` binds even when ranks outnumber CPUs (round robin, with a warning); \
        `--bind-to numa` gives each rank all CPUs of one NUMA node, round robin over the nodes; \
        `--bind-to none` leaves placement to the scheduler. Ranks on other hosts are told the \
        policy and their place on their host (MPI_BIND_TO, MPI_LOCAL_RANK, MPI_LOCAL_SIZE) and \
        bind themselves in MPI_Init.\n\n\
        --report-bindings prints one line per rank on standard error before its output: \
        `[HOST:PID] MCW rank R bound to socket S core C (cpu N): MAP`, `... bound to numa node \
        K (cpus LIST): MAP` or `... is not bound (REASON) (cpus LIST): MAP`, where LIST is the \
        CPUs the rank may run on and MAP shows them per socket ([B/.]: B where it may run, \
        cores separated by /). Ranks on other hosts print their own line in MPI_Init \
        (MPI_REPORT_BINDINGS=1).\n\n\
        MPICH's spellings -np, -bind-to, -genv NAME VALUE, -prepend-rank, -hosts, -hostfile, \
        -machinefile and -launcher-exec are accepted too, and Open MPI's -report-bindings.",
    version
)]
struct Cli {
    /// Number of processes (ranks) to start.
    #[arg(short = 'n', long = "np", value_name = "NP", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    np: u32,

    /// NIC timing profile: native, a built-in name such as myrinet-lanai4, or a .toml file.
    #[arg(long, value_name = "NAME", env = PROFILE_ENV)]
    profile: Option<String>,

    /// MPI channel device: bip, fm or fm1 (default: the library's fastest).
    #[arg(long, value_name = "NAME", env = CHANNEL_ENV)]
    channel: Option<String>,

    /// End the job (status 255) if it runs longer than SECS seconds; 0 means no limit.
    #[arg(long, value_name = "SECS", env = TIMEOUT_ENV)]
    timeout: Option<f64>,

    /// Prefix every line of output with "[rank] ".
    #[arg(short = 'l', long = "tag-output")]
    tag_output: bool,

    /// Bind each rank to a CPU (core), to the CPUs of a NUMA node (numa), or not at all (none);
    /// auto: core when a host's ranks fit the CPUs allowed there, none otherwise.
    #[arg(long = "bind-to", value_name = "WHAT", value_enum, default_value_t = BindTo::Auto)]
    bind_to: BindTo,

    /// Print where each rank runs, one line per rank on standard error.
    #[arg(long = "report-bindings")]
    report_bindings: bool,

    /// Run on these hosts: HOST[:SLOTS],... (slots default to 1).
    #[arg(long, value_name = "HOSTS", conflicts_with = "hostfile")]
    hosts: Option<String>,

    /// Run on the hosts of FILE: one HOST[:SLOTS] per line, '#' comments, blank lines.
    #[arg(short = 'f', long = "hostfile", value_name = "FILE")]
    hostfile: Option<PathBuf>,

    /// The command that starts a rank on another host (split at spaces), run as
    /// CMD HOST env NAME=VALUE... PROGRAM ARGS...
    #[arg(long = "launcher-exec", value_name = "CMD", default_value = "ssh")]
    launcher_exec: String,

    /// How ranks reach each other: auto (shared memory on a host, the network between hosts)
    /// or tcp (the network for every pair, on one host too); sets MPI_WIRE in the ranks.
    #[arg(long, value_name = "WIRE", value_enum)]
    wire: Option<Wire>,

    /// The address ranks on other hosts connect to mpirun at (default: for each host, the
    /// address this machine sends to it from).
    #[arg(long = "pmi-address", value_name = "ADDR")]
    pmi_address: Option<IpAddr>,

    /// Set an environment variable in every rank (repeatable).
    #[arg(short = 'x', long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,

    /// Set an environment variable in every rank, MPICH style (repeatable).
    #[arg(long = "genv", num_args = 2, value_names = ["NAME", "VALUE"])]
    genv: Vec<String>,

    /// The program to run, and its arguments.
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM")]
    command: Vec<OsString>,
}

/// The values of `--bind-to`: [`Policy`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum BindTo {
    Auto,
    Core,
    Numa,
    None,
}

impl BindTo {
    fn policy(self) -> Policy {
        match self {
            BindTo::Auto => Policy::Auto,
            BindTo::Core => Policy::Core,
            BindTo::Numa => Policy::Numa,
            BindTo::None => Policy::None,
        }
    }
}

/// The values of `--wire`, which are `MPI_WIRE`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Wire {
    Auto,
    Tcp,
}

impl Wire {
    pub fn name(self) -> &'static str {
        match self {
            Wire::Auto => "auto",
            Wire::Tcp => "tcp",
        }
    }
}

/// Everything the job needs, checked.
#[derive(Debug)]
pub struct Options {
    pub nranks: usize,
    pub program: Program,
    pub args: Vec<OsString>,
    /// Variables set in every rank, on top of `mpirun`'s own environment.
    pub env: Vec<(OsString, OsString)>,
    pub timeout: Option<Duration>,
    pub tag_output: bool,
    /// How ranks are bound to CPUs on each host.
    pub bind_to: Policy,
    /// `--report-bindings`.
    pub report_bindings: bool,
    /// A timing profile other than `native` is in force (the fabric keeps the NIC's own
    /// packet size then; see `mpich_channel::job_config`).
    pub modeled: bool,
    /// Where each rank runs.
    pub places: Vec<RankPlace>,
    /// `--hosts` or `--hostfile` was given (messages then name hosts).
    pub hosts_given: bool,
    /// The command that starts ranks on other hosts, as words.
    pub launcher: Vec<OsString>,
    pub wire: Option<Wire>,
    pub pmi_address: Option<IpAddr>,
}

impl Options {
    /// Some rank runs on another host.
    pub fn any_remote(&self) -> bool {
        self.places.iter().any(|p| !p.local)
    }

    /// The job runs without a shared-memory fabric: ranks on several hosts, or TCP asked for.
    pub fn without_fabric(&self) -> bool {
        self.any_remote() || self.wire == Some(Wire::Tcp)
    }
}

/// Parses and validates `argv` (program name first). Help and version requests, and errors
/// clap detects itself, print clap's message and exit here.
pub fn parse(tool: &'static str, argv: Vec<OsString>) -> Result<Options, LaunchError> {
    let mut command = Cli::command()
        .name(tool)
        .bin_name(tool)
        .override_usage(format!("{tool} [OPTIONS] PROGRAM [ARGS]..."));
    command.build();
    let argv = normalize(&command, argv);
    let matches = command
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| e.exit());
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    validate(cli, &matches)
}

fn validate(cli: Cli, matches: &ArgMatches) -> Result<Options, LaunchError> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut modeled = false;
    if let Some(name) = &cli.profile {
        modeled = check_profile(name, from_env(matches, "profile"))?;
        env.push((PROFILE_ENV.into(), name.into()));
    }
    if let Some(name) = &cli.channel {
        check_channel(name, from_env(matches, "channel"))?;
        env.push((CHANNEL_ENV.into(), name.into()));
    }
    for setting in &cli.env {
        env.push(split_setting(setting)?);
    }
    for pair in cli.genv.chunks(2) {
        if let [name, value] = pair {
            check_var_name(name, "--genv")?;
            env.push((name.into(), value.into()));
        }
    }
    if let Some(wire) = cli.wire {
        env.push((WIRE_ENV.into(), wire.name().into()));
    }
    let timeout = match cli.timeout {
        None => None,
        Some(secs) => timeout_from(secs, from_env(matches, "timeout"))?,
    };
    let entries = host_entries(&cli)?;
    let nranks = cli.np as usize;
    let places = hosts::plan(entries.as_deref(), nranks, &hosts::this_hostname());
    let launcher: Vec<OsString> = cli
        .launcher_exec
        .split_whitespace()
        .map(OsString::from)
        .collect();
    if launcher.is_empty() {
        return Err(LaunchError::usage(
            "--launcher-exec: give the command that starts a rank on another host (ssh)",
        ));
    }
    let (name, args) = cli
        .command
        .split_first()
        .expect("clap requires the program");
    let program = program::find(name)?;
    Ok(Options {
        nranks,
        program,
        args: args.to_vec(),
        env,
        timeout,
        tag_output: cli.tag_output,
        bind_to: cli.bind_to.policy(),
        report_bindings: cli.report_bindings,
        modeled,
        places,
        hosts_given: entries.is_some(),
        launcher,
        wire: cli.wire,
        pmi_address: cli.pmi_address,
    })
}

/// The entries of `--hosts` or `--hostfile`, if either was given.
fn host_entries(cli: &Cli) -> Result<Option<Vec<HostEntry>>, LaunchError> {
    if let Some(list) = &cli.hosts {
        return hosts::parse_host_list(list)
            .map(Some)
            .map_err(LaunchError::usage);
    }
    let Some(path) = &cli.hostfile else {
        return Ok(None);
    };
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| LaunchError::usage(format!("--hostfile {shown}: cannot read it: {e}")))?;
    hosts::parse_hostfile(&text)
        .map(Some)
        .map_err(|e| LaunchError::usage(format!("--hostfile {shown}: {e}")))
}

/// True if the value of `id` came from its environment variable rather than the command line.
fn from_env(matches: &ArgMatches, id: &str) -> bool {
    matches.value_source(id) == Some(ValueSource::EnvVariable)
}

fn origin(option: &str, env: &str, came_from_env: bool) -> String {
    if came_from_env {
        format!("{env} (from the environment)")
    } else {
        option.to_string()
    }
}

/// Checks that profile `name` loads; true if it models a NIC (is not `native`).
fn check_profile(name: &str, came_from_env: bool) -> Result<bool, LaunchError> {
    nic_model::Profile::load(name)
        .map(|p| p.is_some())
        .map_err(|e| {
            LaunchError::usage(format!(
                "{}: {e}",
                origin("--profile", PROFILE_ENV, came_from_env)
            ))
        })
}

fn check_channel(name: &str, came_from_env: bool) -> Result<(), LaunchError> {
    if CHANNELS.contains(&name) {
        return Ok(());
    }
    Err(LaunchError::usage(format!(
        "{}: unknown channel '{name}'; the channels are {}",
        origin("--channel", CHANNEL_ENV, came_from_env),
        CHANNELS.join(", ")
    )))
}

fn timeout_from(secs: f64, came_from_env: bool) -> Result<Option<Duration>, LaunchError> {
    if secs == 0.0 {
        return Ok(None);
    }
    Duration::try_from_secs_f64(secs).map(Some).map_err(|_| {
        LaunchError::usage(format!(
            "{}: '{secs}' is not a number of seconds; give a positive number, or 0 for no limit",
            origin("--timeout", TIMEOUT_ENV, came_from_env)
        ))
    })
}

fn split_setting(setting: &str) -> Result<(OsString, OsString), LaunchError> {
    let Some((name, value)) = setting.split_once('=') else {
        return Err(LaunchError::usage(format!(
            "-x/--env '{setting}': expected NAME=VALUE (variables of mpirun's own environment \
             reach the ranks without being named)"
        )));
    };
    check_var_name(name, "-x/--env")?;
    Ok((name.into(), value.into()))
}

fn check_var_name(name: &str, option: &str) -> Result<(), LaunchError> {
    let valid = !name.is_empty() && !name.contains('=') && !name.contains('\0');
    if valid {
        Ok(())
    } else {
        Err(LaunchError::usage(format!(
            "{option}: '{name}' is not an environment variable name"
        )))
    }
}

/// Rewrites MPICH's single-dash long options into the spellings [`Cli`] declares, up to the
/// program name, and puts `--` before the program name. `command` must be built (so that
/// every argument knows how many values it takes).
fn normalize(command: &clap::Command, argv: Vec<OsString>) -> Vec<OsString> {
    let mut out = Vec::with_capacity(argv.len());
    let mut tokens = argv.into_iter();
    out.extend(tokens.next());
    while let Some(token) = tokens.next() {
        let Some(text) = token.to_str() else {
            out.extend(["--".into(), token]);
            break;
        };
        if text == "--" {
            out.push(token);
            break;
        }
        if !text.starts_with('-') || text == "-" {
            out.extend(["--".into(), token]);
            break;
        }
        let spelled = HYDRA_SPELLINGS
            .iter()
            .find(|(hydra, _)| *hydra == text)
            .map(|(_, ours)| *ours);
        let option = spelled.unwrap_or(text);
        let values = values_after(command, option);
        out.push(option.into());
        out.extend(tokens.by_ref().take(values));
    }
    out.extend(tokens);
    out
}

/// How many of the following tokens are values of the option token `option`.
fn values_after(command: &clap::Command, option: &str) -> usize {
    let takes = |arg: &clap::Arg| {
        if arg.get_action().takes_values() {
            arg.get_num_args().map_or(1, |range| range.min_values())
        } else {
            0
        }
    };
    if let Some(long) = option.strip_prefix("--") {
        if long.contains('=') {
            return 0;
        }
        let arg = command.get_arguments().find(|a| a.get_long() == Some(long));
        return arg.map_or(0, takes);
    }
    // A cluster of short options such as `-l`, `-ln`, `-n4`: the first one that takes a value
    // takes the rest of the token, or the next token if the cluster ends there.
    let shorts: Vec<char> = option.chars().skip(1).collect();
    for (i, c) in shorts.iter().enumerate() {
        let Some(arg) = command.get_arguments().find(|a| a.get_short() == Some(*c)) else {
            return 0;
        };
        let n = takes(arg);
        if n > 0 {
            return if i + 1 == shorts.len() { n } else { 0 };
        }
    }
    0
}

/// For messages: the program as the user wrote it.
pub fn shown(name: &OsStr) -> String {
    name.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(args: &[&str]) -> Vec<String> {
        let mut command = Cli::command();
        command.build();
        let argv = std::iter::once("mpirun")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        normalize(&command, argv)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    #[test]
    fn hydra_options_are_rewritten_up_to_the_program_only() {
        assert_eq!(
            rewrite(&["-np", "2", "-genv", "A", "B", "-l", "prog", "-np", "-genv"]),
            ["mpirun", "--np", "2", "--genv", "A", "B", "-l", "--", "prog", "-np", "-genv"]
        );
    }

    #[test]
    fn option_values_are_not_mistaken_for_the_program() {
        assert_eq!(
            rewrite(&[
                "-n",
                "3",
                "--channel",
                "fm",
                "-x",
                "A=1",
                "-np",
                "4",
                "prog",
                "-bind-to"
            ]),
            [
                "mpirun",
                "-n",
                "3",
                "--channel",
                "fm",
                "-x",
                "A=1",
                "--np",
                "4",
                "--",
                "prog",
                "-bind-to"
            ]
        );
        assert_eq!(
            rewrite(&["-ln", "2", "-bind-to", "core", "p"]),
            ["mpirun", "-ln", "2", "--bind-to", "core", "--", "p"]
        );
        assert_eq!(
            rewrite(&["-n2", "-prepend-rank", "p", "-l"]),
            ["mpirun", "-n2", "--tag-output", "--", "p", "-l"]
        );
        assert_eq!(
            rewrite(&["-n=2", "--", "p", "--", "-x"]),
            ["mpirun", "-n=2", "--", "p", "--", "-x"]
        );
    }
}
