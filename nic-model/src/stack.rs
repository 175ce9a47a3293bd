//! [`DeviceStack`]: this process's device, attached as its launcher says (a fabric handed
//! down, or the wire-up through PMI: the plain [`Nic`] on one host, a [`HostNet`](crate::net::HostNet) across
//! hosts), with the wrappers the environment asks for, chosen at run time.
//!
//! Wrappers are generic over any [`Device`], a boxed one included, so a stack is built by
//! boxing the device and wrapping the box as many times as asked: no list of combinations.
//! The common case, the plain NIC with no wrapper, stays a variant of its own so that its
//! send and poll are inlined into the caller's loops (a wrapped stack pays one virtual call
//! per layer and packet).
//!
//! * `MPI_NIC_FAULTS=drop=..,corrupt=..,dup=..,delay=..,seed=..` wraps a [`FaultInjector`];
//! * `MPI_NIC_PCAP=PREFIX` wraps a [`PcapWriter`] writing `PREFIX.rank<N>.pcap`, outermost, so
//!   it records what the layer above sees.

use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use crate::fabric::JobConfig;
use crate::net::{launcher, wire_up, Wired};
use crate::nic::Nic;
use crate::phy::{
    pcap_path_from_env, Capabilities, Device, FaultConfig, FaultInjector, PcapWriter, PeerStatus,
    Wraps,
};
use crate::timing::Profile;

/// The device stack of this process.
#[allow(clippy::large_enum_variant)] // The plain NIC stays inline: no pointer chase per packet.
pub enum DeviceStack {
    /// The NIC alone.
    Plain(Nic),
    /// The NIC (or another device) under one or more wrappers.
    Composed(Box<dyn Device>),
}

impl DeviceStack {
    /// Attaches to the job as [`DeviceStack::from_env_with`] does, with the NIC's default
    /// fabric geometry for a fabric this process's host makes itself.
    pub fn from_env() -> Result<DeviceStack> {
        Self::from_env_with(&JobConfig::new)
    }

    /// Attaches to the job this process was started in, and wraps what the environment asks
    /// for:
    ///
    /// - a fabric handed down by the launcher (`NIC_FABRIC_FD`, our `mpirun` on one host):
    ///   the plain NIC over it;
    /// - a PMI launcher (our `mpirun` across hosts, Hydra, Slurm): the wire-up through its
    ///   key-value space ([`crate::net::wire_up`]) makes this host's fabric, with `config(n)`
    ///   as its geometry for `n` ranks, and the TCP connections to other hosts. All ranks on
    ///   this host: the plain NIC; otherwise a [`crate::net::HostNet`].
    pub fn from_env_with(config: &dyn Fn(usize) -> JobConfig) -> Result<DeviceStack> {
        let dev = attach(config)?;
        let rank = match &dev {
            Wired::OneHost(nic) => nic.rank(),
            Wired::Hosts(net) => net.rank(),
        };
        let faults = FaultConfig::from_env()
            .map_err(NicError::Config)?
            .filter(FaultConfig::is_active);
        let pcap = pcap_path_from_env(rank);
        let mut dev: Box<dyn Device> = match dev {
            Wired::OneHost(nic) if faults.is_none() && pcap.is_none() => {
                return Ok(DeviceStack::Plain(nic))
            }
            Wired::OneHost(nic) => Box::new(nic),
            Wired::Hosts(net) => net,
        };
        if let Some(cfg) = faults {
            dev = Box::new(FaultInjector::new(dev, cfg));
        }
        if let Some(path) = pcap {
            let traced = PcapWriter::new(dev, &path).map_err(|e| NicError::Os {
                what: "opening the MPI_NIC_PCAP trace file",
                source: e,
            })?;
            dev = Box::new(traced);
        }
        Ok(DeviceStack::Composed(dev))
    }
}

fn attach(config: &dyn Fn(usize) -> JobConfig) -> Result<Wired> {
    // A PMI launcher is this process's launcher whatever else it handed down: the job ends
    // (MPI_Abort) and is left (MPI_Finalize) through it.
    let started_by_pmi = launcher::connect()
        .map_err(|e| NicError::Network(format!("cannot reach the launcher's PMI service: {e}")))?;
    if std::env::var_os(crate::fabric::env::FABRIC_FD).is_some() || !started_by_pmi {
        // Our mpirun on one host hands the fabric down: every rank is on it.
        return Nic::from_env().map(Wired::OneHost);
    }
    launcher::with_exchange(|ex| wire_up(ex, config)).expect("connected")
}

/// The device, whatever its stack.
impl Wraps for DeviceStack {
    type Inner = dyn Device;
    #[inline(always)]
    fn inner(&self) -> &(dyn Device + 'static) {
        match self {
            DeviceStack::Plain(d) => d,
            DeviceStack::Composed(d) => d.as_ref(),
        }
    }
    #[inline(always)]
    fn inner_mut(&mut self) -> &mut (dyn Device + 'static) {
        match self {
            DeviceStack::Plain(d) => d,
            DeviceStack::Composed(d) => d.as_mut(),
        }
    }
}

impl Device for DeviceStack {
    fn rank(&self) -> Rank {
        self.inner().rank()
    }
    fn nranks(&self) -> usize {
        self.inner().nranks()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner().capabilities()
    }
    /// The plain NIC's send is inline in the caller; a wrapped stack's goes through its box.
    #[inline(always)]
    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        match self {
            DeviceStack::Plain(d) => d.send(dest, len, fill),
            DeviceStack::Composed(d) => d.send(dest, len, fill),
        }
    }
    /// As `send`: every waiting loop of the stack polls through here.
    #[inline(always)]
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        match self {
            DeviceStack::Plain(d) => d.poll(take),
            DeviceStack::Composed(d) => d.poll(take),
        }
    }
    #[inline(always)]
    fn progress(&mut self) -> bool {
        match self {
            DeviceStack::Plain(d) => d.progress(),
            DeviceStack::Composed(d) => d.progress(),
        }
    }
    crate::phy::forward_regions!();
    fn peer_status(&self, peer: Rank) -> PeerStatus {
        self.inner().peer_status(peer)
    }
    fn counters(&self) -> &Counters {
        self.inner().counters()
    }
    fn profile(&self) -> Option<&Profile> {
        self.inner().profile()
    }
    fn set_protocol_header(&mut self, bytes: usize) {
        self.inner_mut().set_protocol_header(bytes)
    }
    fn finalize(&mut self) {
        self.inner_mut().finalize()
    }
}
