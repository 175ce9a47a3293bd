//! Placement: which CPUs each rank of a host runs on, one policy for `mpirun` and the library.
//!
//! **The policy.** The ranks of one host are numbered 0..n on that host (their *local* rank
//! and size). The CPUs they may use are those the starting process may use
//! (`sched_getaffinity`, so `taskset -c 0 mpirun ...` or a cgroup cpuset restricts them), and
//! the machine's shape comes from sysfs ([`Topology::read`]: each CPU's NUMA node, package and
//! core). [`Policy::Core`] gives each rank one logical CPU. The CPUs are taken in an order that
//! uses every physical core once before any second hardware thread of a core; with one or two
//! ranks on the host the order fills the first NUMA node (or package) first, so that a pair
//! shares a cache, and with more it deals the ranks round robin over the NUMA nodes (over the
//! packages when the machine reports a single node), as Open MPI maps by core up to two
//! processes and by socket beyond. With more ranks than CPUs, core binding goes round the
//! order again (ranks share CPUs) and [`overload_warning`] says so. [`Policy::Numa`] gives
//! rank r every allowed CPU of NUMA node r mod (nodes with allowed CPUs). [`Policy::Auto`],
//! the launcher's default, is core binding when the ranks fit the allowed CPUs and no binding
//! otherwise: oversubscribed ranks are left to the scheduler, which moves a waiting rank off a
//! CPU its peer needs (their waiting loops yield, see [`crate::wait`]). [`Policy::None`] never
//! binds. [`choose`] is that policy as a pure function of the allowed CPUs, the topology and
//! the local rank and size, so it can be tested on made-up machines.
//!
//! **Who applies it.** `mpirun` binds the ranks it starts on its own host before they run
//! (`sched_setaffinity` between fork and exec, with a [`CpuMask`] made beforehand), and
//! prints their `--report-bindings` lines. It cannot see another host's CPUs, so a rank it
//! starts elsewhere gets the policy and its place on that host in its environment
//! ([`mod@env`]); the library calls [`bind_from_env`] once at the start of `MPI_Init`, which
//! applies the same policy on that host and, when asked, prints the rank's report line
//! itself. The single-host [`crate::Job`] launcher (tests, `layers`) binds with
//! [`Policy::Core`] when its [`crate::JobConfig::bind_cores`] is set.
//!
//! **The report line** ([`report_line`]), one per rank on standard error, close to Open MPI's:
//!
//! ```text
//! [HOST:PID] MCW rank R bound to socket S core C (cpu N): MAP
//! [HOST:PID] MCW rank R bound to numa node K (cpus LIST): MAP
//! [HOST:PID] MCW rank R is not bound (REASON) (cpus LIST): MAP
//! ```
//!
//! LIST is a kernel-style CPU list (`0-3,8`): the CPUs the rank may run on. MAP shows the
//! machine as Open MPI does: one `[...]` per package, its cores separated by `/`, one
//! character per hardware thread, `B` where the rank may run and `.` elsewhere. REASON is
//! `--bind-to none`, or `oversubscribed: N ranks on M cpus`.

use std::collections::BTreeMap;
use std::io;

/// The environment through which a launcher tells a rank on another host how to bind itself.
pub mod env {
    /// The policy: `auto`, `core`, `numa` or `none` ([`super::Policy::name`]).
    pub const BIND_TO: &str = "MPI_BIND_TO";
    /// The rank's index among the job's ranks on its host.
    pub const LOCAL_RANK: &str = "MPI_LOCAL_RANK";
    /// How many of the job's ranks run on its host.
    pub const LOCAL_SIZE: &str = "MPI_LOCAL_SIZE";
    /// `1`: print the rank's report line on standard error when it binds.
    pub const REPORT: &str = "MPI_REPORT_BINDINGS";
}

/// How the ranks of a host are bound to its CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Core when the ranks fit the allowed CPUs, none otherwise.
    Auto,
    /// One logical CPU per rank (round robin when ranks outnumber CPUs).
    Core,
    /// Every allowed CPU of one NUMA node per rank, round robin over the nodes.
    Numa,
    /// Leave placement to the scheduler.
    None,
}

impl Policy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [Policy; 4] = [Policy::Auto, Policy::Core, Policy::Numa, Policy::None];

    /// The name on the command line and in [`env::BIND_TO`].
    pub fn name(self) -> &'static str {
        match self {
            Policy::Auto => "auto",
            Policy::Core => "core",
            Policy::Numa => "numa",
            Policy::None => "none",
        }
    }

    /// The policy called `name` (case-insensitive), if any.
    pub fn parse(name: &str) -> Option<Policy> {
        let name = name.trim().to_ascii_lowercase();
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One logical CPU as the kernel describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// The kernel's CPU number.
    pub id: usize,
    /// `topology/core_id`: the physical core within its package.
    pub core: usize,
    /// `topology/physical_package_id`: the socket.
    pub package: usize,
    /// The NUMA node whose `cpulist` names it.
    pub node: usize,
}

/// The CPUs of a machine, by number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    cpus: Vec<Cpu>,
}

impl Topology {
    /// A topology of these CPUs (in any order; a number given twice keeps its first entry).
    pub fn new(mut cpus: Vec<Cpu>) -> Topology {
        cpus.sort_by_key(|c| c.id);
        cpus.dedup_by_key(|c| c.id);
        Topology { cpus }
    }

    /// This machine's online CPUs as sysfs describes them. What sysfs does not say is filled
    /// in plainly: a CPU without topology files is a core of its own in package 0, a machine
    /// without `node*` directories is one NUMA node.
    pub fn read() -> Topology {
        let sys = std::path::Path::new("/sys/devices/system");
        let read = |path: std::path::PathBuf| std::fs::read_to_string(path).ok();
        let online = read(sys.join("cpu/online"))
            .and_then(|text| parse_cpu_list(&text))
            .unwrap_or_default();
        let mut node_of = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(sys.join("node")) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(node) = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("node"))
                    .and_then(|n| n.parse::<usize>().ok())
                else {
                    continue;
                };
                let list = read(entry.path().join("cpulist")).and_then(|t| parse_cpu_list(&t));
                for cpu in list.unwrap_or_default() {
                    node_of.insert(cpu, node);
                }
            }
        }
        let cpus = online
            .into_iter()
            .map(|id| {
                let topology = sys.join(format!("cpu/cpu{id}/topology"));
                // physical_package_id is -1 where the platform does not say.
                let number = |file: &str| {
                    read(topology.join(file))
                        .and_then(|t| t.trim().parse::<i64>().ok())
                        .and_then(|v| usize::try_from(v).ok())
                };
                Cpu {
                    id,
                    core: number("core_id").unwrap_or(id),
                    package: number("physical_package_id").unwrap_or(0),
                    node: node_of.get(&id).copied().unwrap_or(0),
                }
            })
            .collect();
        Topology::new(cpus)
    }

    /// Every CPU, by number.
    pub fn cpus(&self) -> &[Cpu] {
        &self.cpus
    }

    /// CPU `id`; one the topology does not know (an allowed CPU that sysfs did not list) is
    /// taken as a core of its own in package 0, node 0.
    pub fn cpu(&self, id: usize) -> Cpu {
        match self.cpus.binary_search_by_key(&id, |c| c.id) {
            Ok(i) => self.cpus[i],
            Err(_) => Cpu {
                id,
                core: id,
                package: 0,
                node: 0,
            },
        }
    }
}

/// Why a rank is not bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotBound {
    /// The policy is [`Policy::None`].
    NotAsked,
    /// Under [`Policy::Auto`], more ranks on the host than allowed CPUs.
    Oversubscribed { ranks: usize, cpus: usize },
}

/// Where one rank runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Binding {
    /// On one logical CPU.
    Core { cpu: Cpu },
    /// On every allowed CPU of one NUMA node (`cpus`, ascending).
    Numa { node: usize, cpus: Vec<usize> },
    /// Wherever the scheduler puts it among the allowed CPUs (`cpus`, ascending).
    Unbound { why: NotBound, cpus: Vec<usize> },
}

impl Binding {
    /// The CPUs the rank may run on, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        match self {
            Binding::Core { cpu } => vec![cpu.id],
            Binding::Numa { cpus, .. } | Binding::Unbound { cpus, .. } => cpus.clone(),
        }
    }

    /// Whether the rank's CPUs are to be set (an unbound rank keeps what it inherited).
    pub fn is_bound(&self) -> bool {
        !matches!(self, Binding::Unbound { .. })
    }

    /// The mask to apply, for a bound rank.
    pub fn mask(&self) -> Option<CpuMask> {
        self.is_bound().then(|| CpuMask::of(&self.cpus()))
    }
}

/// The binding of local rank `local_rank` of `local_size` under `policy`, on `topology`,
/// using only the CPUs of `allowed` (which must not be empty).
pub fn choose(
    policy: Policy,
    topology: &Topology,
    allowed: &[usize],
    local_rank: usize,
    local_size: usize,
) -> Binding {
    let mut allowed: Vec<usize> = allowed.to_vec();
    allowed.sort_unstable();
    allowed.dedup();
    let unbound = |why| Binding::Unbound {
        why,
        cpus: allowed.clone(),
    };
    if allowed.is_empty() {
        return unbound(NotBound::NotAsked);
    }
    match policy {
        Policy::None => unbound(NotBound::NotAsked),
        Policy::Auto if local_size > allowed.len() => unbound(NotBound::Oversubscribed {
            ranks: local_size,
            cpus: allowed.len(),
        }),
        Policy::Auto | Policy::Core => {
            let order = core_order(topology, &allowed, local_size <= 2);
            Binding::Core {
                cpu: topology.cpu(order[local_rank % order.len()]),
            }
        }
        Policy::Numa => {
            let mut by_node: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for &id in &allowed {
                by_node.entry(topology.cpu(id).node).or_default().push(id);
            }
            let nodes = by_node.len();
            let (node, cpus) = by_node
                .into_iter()
                .nth(local_rank % nodes)
                .expect("the allowed CPUs belong to at least one node");
            Binding::Numa { node, cpus }
        }
    }
}

/// The allowed CPUs in the order core binding hands them out: the first hardware thread of
/// every core, then the second of every core, and so on. Within each such level the CPUs are
/// grouped by NUMA node (by package when every allowed CPU is on one node); `pack` takes the
/// groups one after the other, otherwise they are dealt round robin.
fn core_order(topology: &Topology, allowed: &[usize], pack: bool) -> Vec<usize> {
    let cpus: Vec<Cpu> = allowed.iter().map(|&id| topology.cpu(id)).collect();
    let one_node = cpus.iter().all(|c| c.node == cpus[0].node);
    let group_of = |c: &Cpu| if one_node { c.package } else { c.node };
    // group -> core (package, core id) -> its threads; BTreeMaps keep everything ascending.
    let mut groups: BTreeMap<usize, BTreeMap<(usize, usize), Vec<usize>>> = BTreeMap::new();
    for cpu in &cpus {
        groups
            .entry(group_of(cpu))
            .or_default()
            .entry((cpu.package, cpu.core))
            .or_default()
            .push(cpu.id);
    }
    let threads = groups
        .values()
        .flat_map(|cores| cores.values().map(Vec::len))
        .max()
        .unwrap_or(0);
    let mut order = Vec::with_capacity(cpus.len());
    for level in 0..threads {
        let columns: Vec<Vec<usize>> = groups
            .values()
            .map(|cores| {
                cores
                    .values()
                    .filter_map(|t| t.get(level).copied())
                    .collect()
            })
            .collect();
        if pack {
            order.extend(columns.into_iter().flatten());
        } else {
            let longest = columns.iter().map(Vec::len).max().unwrap_or(0);
            for i in 0..longest {
                order.extend(columns.iter().filter_map(|column| column.get(i).copied()));
            }
        }
    }
    order
}

/// The warning for core binding of more ranks than CPUs (ranks then share CPUs), if it applies.
pub fn overload_warning(policy: Policy, ranks: usize, cpus: usize) -> Option<String> {
    (policy == Policy::Core && ranks > cpus).then(|| {
        format!(
            "--bind-to core with {ranks} ranks on {cpus} cpu(s) of this host: binding them round \
             robin, {} rank(s) per cpu; --bind-to none (or no --bind-to) leaves them to the \
             scheduler",
            ranks.div_ceil(cpus.max(1))
        )
    })
}

/// The `--report-bindings` line of MPI_COMM_WORLD rank `rank` (see the module doc).
pub fn report_line(
    host: &str,
    pid: u32,
    rank: usize,
    binding: &Binding,
    topology: &Topology,
) -> String {
    let cpus = binding.cpus();
    let what = match binding {
        Binding::Core { cpu } => format!(
            "bound to socket {} core {} (cpu {})",
            cpu.package, cpu.core, cpu.id
        ),
        Binding::Numa { node, cpus } => {
            format!("bound to numa node {node} (cpus {})", format_cpu_list(cpus))
        }
        Binding::Unbound { why, cpus } => {
            let why = match why {
                NotBound::NotAsked => "--bind-to none".to_string(),
                NotBound::Oversubscribed { ranks, cpus } => {
                    format!("oversubscribed: {ranks} ranks on {cpus} cpus")
                }
            };
            format!("is not bound ({why}) (cpus {})", format_cpu_list(cpus))
        }
    };
    format!(
        "[{host}:{pid}] MCW rank {rank} {what}: {}",
        cpu_map(topology, &cpus)
    )
}

/// Open MPI's picture of the machine: `[B./../..][../../..]`, `B` on the CPUs in `marked`.
fn cpu_map(topology: &Topology, marked: &[usize]) -> String {
    let mut known = topology.cpus().to_vec();
    for &id in marked {
        if !known.iter().any(|c| c.id == id) {
            known.push(topology.cpu(id));
        }
    }
    let mut packages: BTreeMap<usize, BTreeMap<usize, Vec<usize>>> = BTreeMap::new();
    for cpu in &known {
        packages
            .entry(cpu.package)
            .or_default()
            .entry(cpu.core)
            .or_default()
            .push(cpu.id);
    }
    let mut map = String::new();
    for cores in packages.values() {
        let mut cores: Vec<&Vec<usize>> = cores.values().collect();
        cores.sort_by_key(|threads| threads.iter().min().copied());
        let shown: Vec<String> = cores
            .iter()
            .map(|threads| {
                let mut threads = (*threads).clone();
                threads.sort_unstable();
                threads
                    .iter()
                    .map(|id| if marked.contains(id) { 'B' } else { '.' })
                    .collect()
            })
            .collect();
        map.push('[');
        map.push_str(&shown.join("/"));
        map.push(']');
    }
    map
}

/// Parses a kernel CPU list (`0-3,8,10-11`; `0-7:2` takes every second); `None` if malformed.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (range, stride) = match part.split_once(':') {
            Some((range, stride)) => (range, stride.parse::<usize>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (first, last) = match range.split_once('-') {
            Some((a, b)) => (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?),
            None => {
                let one = range.parse::<usize>().ok()?;
                (one, one)
            }
        };
        if last < first || last >= CpuMask::CAPACITY {
            return None;
        }
        cpus.extend((first..=last).step_by(stride));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Writes `cpus` as a kernel CPU list (`0-3,8`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// A set of CPUs in the kernel's form, made before a fork so that the child only has to make
/// the system call.
#[derive(Clone, Copy)]
pub struct CpuMask(libc::cpu_set_t);

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuMask({})", format_cpu_list(&self.cpus()))
    }
}

impl CpuMask {
    /// The highest CPU number plus one that a mask holds.
    pub const CAPACITY: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();

    /// The mask of `cpus` (numbers beyond [`CAPACITY`](Self::CAPACITY) are left out).
    pub fn of(cpus: &[usize]) -> CpuMask {
        // SAFETY: cpu_set_t is a plain bit array, for which all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus.iter().filter(|&&c| c < Self::CAPACITY) {
            // SAFETY: `cpu` is below the set's capacity (filtered above).
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        CpuMask(set)
    }

    /// The CPUs in the mask, ascending.
    pub fn cpus(&self) -> Vec<usize> {
        (0..Self::CAPACITY)
            // SAFETY: `c` is below the set's capacity.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &self.0) })
            .collect()
    }

    /// Restricts the calling thread (thread id `tid`, 0 for the caller) to the mask. Only a
    /// system call: safe to use between fork and exec.
    pub fn apply_to_thread(&self, tid: libc::pid_t) -> io::Result<()> {
        // SAFETY: the pointer and size describe `self.0`, a valid cpu_set_t that outlives the
        // call, which only reads it.
        let result = unsafe {
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &self.0)
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Restricts every thread of this process to the mask (threads started later inherit it).
    pub fn apply_to_process(&self) -> io::Result<()> {
        let mut tids: Vec<libc::pid_t> = std::fs::read_dir("/proc/self/task")?
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        if tids.is_empty() {
            tids.push(0);
        }
        for tid in tids {
            match self.apply_to_thread(tid) {
                // A thread that ended since the listing.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                other => other?,
            }
        }
        Ok(())
    }
}

/// The CPUs this process may run on (its own affinity, as restricted by `taskset`, a cpuset or
/// a launcher).
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: all zeroes is the empty cpu_set_t; sched_getaffinity writes at most `size` bytes
    // into it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above: the pointer and size describe `set`, which outlives the call.
    let result =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(CpuMask(set).cpus())
}

/// Where the ranks that this process starts on this host go: this process's allowed CPUs (all
/// online CPUs if the kernel will not say), this machine's topology, and the binding of each
/// local rank.
#[derive(Clone, Debug)]
pub struct Plan {
    pub policy: Policy,
    pub topology: Topology,
    pub allowed: Vec<usize>,
    /// One per local rank.
    pub bindings: Vec<Binding>,
}

impl Plan {
    /// The plan for `local_size` ranks under `policy` on this machine.
    pub fn here(policy: Policy, local_size: usize) -> Plan {
        let topology = Topology::read();
        let allowed = allowed_cpus()
            .ok()
            .filter(|cpus| !cpus.is_empty())
            .unwrap_or_else(|| topology.cpus().iter().map(|c| c.id).collect());
        let bindings = (0..local_size)
            .map(|rank| choose(policy, &topology, &allowed, rank, local_size))
            .collect();
        Plan {
            policy,
            topology,
            allowed,
            bindings,
        }
    }

    /// [`overload_warning`] for this plan.
    pub fn overload_warning(&self) -> Option<String> {
        overload_warning(self.policy, self.bindings.len(), self.allowed.len())
    }
}

/// Binds this process as [`mod@env`] asks, the way `mpirun` binds the ranks of its own host:
/// nothing happens (and `None` is returned) unless [`env::BIND_TO`] names a policy. The
/// library calls it once at the start of `MPI_Init`, before any thread or memory of its own,
/// for ranks that a launcher started on another host. With [`env::REPORT`] set to `1` it
/// prints the rank's [`report_line`] (rank from `PMI_RANK`) on standard error; problems
/// (a malformed variable, a refused system call) are said there too and leave the process as
/// it was.
pub fn bind_from_env() -> Option<Binding> {
    let value = std::env::var(env::BIND_TO).ok()?;
    let warn = |message: String| eprintln!("placement: {message}; the process stays unbound");
    let Some(policy) = Policy::parse(&value) else {
        warn(format!(
            "{}={value:?} is not a policy (auto, core, numa, none)",
            env::BIND_TO
        ));
        return None;
    };
    let number = |name: &str, default: usize| match std::env::var(name) {
        Err(_) => Some(default),
        Ok(text) => text.trim().parse::<usize>().ok(),
    };
    let (Some(local_rank), Some(local_size)) =
        (number(env::LOCAL_RANK, 0), number(env::LOCAL_SIZE, 1))
    else {
        warn(format!(
            "{} and {} must be numbers",
            env::LOCAL_RANK,
            env::LOCAL_SIZE
        ));
        return None;
    };
    let allowed = match allowed_cpus() {
        Ok(cpus) => cpus,
        Err(e) => {
            warn(format!("cannot read the CPUs this process may use: {e}"));
            return None;
        }
    };
    let topology = Topology::read();
    let local_size = local_size.max(local_rank + 1);
    let binding = choose(policy, &topology, &allowed, local_rank, local_size);
    if local_rank == 0 {
        if let Some(warning) = overload_warning(policy, local_size, allowed.len()) {
            eprintln!("placement: {warning}");
        }
    }
    if let Some(mask) = binding.mask() {
        if let Err(e) = mask.apply_to_process() {
            warn(format!(
                "cannot bind to cpus {}: {e}",
                format_cpu_list(&binding.cpus())
            ));
            return None;
        }
    }
    if std::env::var(env::REPORT).is_ok_and(|v| v.trim() == "1") {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let rank = number(pmi::env::RANK, 0).unwrap_or(0);
        eprintln!(
            "{}",
            report_line(host.trim(), std::process::id(), rank, &binding, &topology)
        );
    }
    Some(binding)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `packages` sockets of `cores` cores of `threads` hardware threads, numbered as Linux
    /// numbers x86 machines (first threads of every core, then the siblings), one NUMA node
    /// per package when `node_per_package`, else one node.
    fn machine(packages: usize, cores: usize, threads: usize, node_per_package: bool) -> Topology {
        let mut cpus = Vec::new();
        for thread in 0..threads {
            for package in 0..packages {
                for core in 0..cores {
                    cpus.push(Cpu {
                        id: thread * packages * cores + package * cores + core,
                        core,
                        package,
                        node: if node_per_package { package } else { 0 },
                    });
                }
            }
        }
        Topology::new(cpus)
    }

    fn all(topology: &Topology) -> Vec<usize> {
        topology.cpus().iter().map(|c| c.id).collect()
    }

    fn core_cpus(policy: Policy, topology: &Topology, allowed: &[usize], n: usize) -> Vec<usize> {
        (0..n)
            .map(|r| match choose(policy, topology, allowed, r, n) {
                Binding::Core { cpu } => cpu.id,
                other => panic!("rank {r} of {n}: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn two_sockets_spread_over_nodes_and_use_siblings_last() {
        // 2 sockets x 4 cores x 2 threads: cpus 0-7 first threads, 8-15 their siblings.
        let m = machine(2, 4, 2, true);
        let cpus = core_cpus(Policy::Core, &m, &all(&m), 16);
        // Round robin over the nodes, every physical core before any sibling.
        assert_eq!(&cpus[..8], &[0, 4, 1, 5, 2, 6, 3, 7]);
        assert_eq!(&cpus[8..], &[8, 12, 9, 13, 10, 14, 11, 15]);
        // One or two ranks share a socket (and its caches).
        assert_eq!(core_cpus(Policy::Core, &m, &all(&m), 2), [0, 1]);
        // Auto binds the same way while the ranks fit.
        assert_eq!(core_cpus(Policy::Auto, &m, &all(&m), 4), [0, 4, 1, 5]);
    }

    #[test]
    fn one_node_two_packages_spreads_over_packages() {
        let m = machine(2, 2, 1, false);
        assert_eq!(core_cpus(Policy::Core, &m, &all(&m), 4), [0, 2, 1, 3]);
    }

    #[test]
    fn hyperthreads_on_one_socket_come_after_the_cores() {
        // 1 socket x 2 cores x 2 threads, numbered 0,1 (cores) then 2,3 (siblings).
        let m = machine(1, 2, 2, false);
        assert_eq!(core_cpus(Policy::Core, &m, &all(&m), 4), [0, 1, 2, 3]);
        // Siblings numbered next to each other (0,1 one core; 2,3 the other).
        let paired = Topology::new(
            (0..4)
                .map(|id| Cpu {
                    id,
                    core: id / 2,
                    package: 0,
                    node: 0,
                })
                .collect(),
        );
        assert_eq!(core_cpus(Policy::Core, &paired, &[0, 1, 2, 3], 2), [0, 2]);
    }

    #[test]
    fn the_allowed_set_restricts_every_policy() {
        let m = machine(2, 4, 2, true);
        assert_eq!(core_cpus(Policy::Core, &m, &[5], 1), [5]);
        assert_eq!(core_cpus(Policy::Core, &m, &[3, 11, 7], 3), [3, 7, 11]);
        match choose(Policy::Numa, &m, &[1, 2, 9], 1, 2) {
            // Only node 0 has allowed CPUs: every rank goes there.
            Binding::Numa { node, cpus } => assert_eq!((node, cpus), (0, vec![1, 2, 9])),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn auto_leaves_oversubscribed_ranks_unbound_and_core_overloads() {
        let m = machine(1, 2, 1, false);
        for rank in 0..4 {
            assert_eq!(
                choose(Policy::Auto, &m, &[0, 1], rank, 4),
                Binding::Unbound {
                    why: NotBound::Oversubscribed { ranks: 4, cpus: 2 },
                    cpus: vec![0, 1]
                }
            );
        }
        assert_eq!(core_cpus(Policy::Core, &m, &[0, 1], 4), [0, 1, 0, 1]);
        assert!(
            overload_warning(Policy::Core, 4, 2).is_some_and(|w| w.contains("2 rank(s) per cpu"))
        );
        assert_eq!(overload_warning(Policy::Core, 2, 2), None);
        assert_eq!(overload_warning(Policy::Auto, 4, 2), None);
        assert!(!choose(Policy::None, &m, &[0, 1], 0, 1).is_bound());
    }

    #[test]
    fn numa_deals_whole_nodes_round_robin() {
        let m = machine(2, 4, 2, true);
        let nodes: Vec<(usize, Vec<usize>)> = (0..3)
            .map(|r| match choose(Policy::Numa, &m, &all(&m), r, 3) {
                Binding::Numa { node, cpus } => (node, cpus),
                other => panic!("{other:?}"),
            })
            .collect();
        let node0 = vec![0, 1, 2, 3, 8, 9, 10, 11];
        let node1 = vec![4, 5, 6, 7, 12, 13, 14, 15];
        assert_eq!(nodes, [(0, node0.clone()), (1, node1), (0, node0)]);
        // One node: every rank gets every allowed CPU.
        let one = machine(1, 2, 1, false);
        assert_eq!(
            choose(Policy::Numa, &one, &[0, 1], 1, 2),
            Binding::Numa {
                node: 0,
                cpus: vec![0, 1]
            }
        );
    }

    #[test]
    fn report_lines_say_where_each_rank_runs() {
        let m = machine(1, 2, 1, false);
        let line = report_line("h", 7, 0, &choose(Policy::Core, &m, &[0, 1], 0, 2), &m);
        assert_eq!(
            line,
            "[h:7] MCW rank 0 bound to socket 0 core 0 (cpu 0): [B/.]"
        );
        let line = report_line("h", 8, 3, &choose(Policy::Auto, &m, &[0, 1], 3, 4), &m);
        assert_eq!(
            line,
            "[h:8] MCW rank 3 is not bound (oversubscribed: 4 ranks on 2 cpus) (cpus 0-1): [B/B]"
        );
        let big = machine(2, 2, 2, true);
        let line = report_line(
            "h",
            9,
            1,
            &choose(Policy::Numa, &big, &all(&big), 1, 2),
            &big,
        );
        assert_eq!(
            line,
            "[h:9] MCW rank 1 bound to numa node 1 (cpus 2-3,6-7): [../..][BB/BB]"
        );
    }

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0-7:2"), Some(vec![0, 2, 4, 6]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
        let mask = CpuMask::of(&[0, 5, 6]);
        assert_eq!(mask.cpus(), [0, 5, 6]);
    }

    #[test]
    fn this_machine_is_read_and_its_affinity_known() {
        let topology = Topology::read();
        let allowed = allowed_cpus().unwrap();
        assert!(!allowed.is_empty());
        for id in &allowed {
            assert_eq!(topology.cpu(*id).id, *id);
        }
        assert!(
            topology.cpus().len() >= allowed.len(),
            "{topology:?} {allowed:?}"
        );
    }
}
