//! [`AnyNic`]: the NIC with the wrappers the environment asks for, chosen at run time.
//!
//! `Device` has generic methods and so cannot be a trait object; `AnyNic` is the closed set
//! of stacks a process can run with, as an enum. Over the plain NIC the extra cost is one
//! predictable branch per packet.
//!
//! * `MPI_NIC_FAULTS=drop=..,corrupt=..,dup=..,delay=..,seed=..` wraps a [`FaultInjector`];
//! * `MPI_NIC_PCAP=PREFIX` wraps a [`PcapWriter`] writing `PREFIX.rank<N>.pcap`, outermost, so
//!   it records what the layer above sees.

use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use crate::nic::Nic;
use crate::phy::{Capabilities, Device, FaultConfig, FaultInjector, PcapWriter, PeerStatus, RxToken, TxToken};
use crate::timing::Profile;

/// The NIC stack of this process.
pub enum AnyNic {
    Plain(Nic),
    Faulty(FaultInjector<Nic>),
    Traced(PcapWriter<Nic>),
    TracedFaulty(PcapWriter<FaultInjector<Nic>>),
}

impl AnyNic {
    /// Attaches to the job (as [`Nic::from_env`]) and wraps what the environment asks for.
    pub fn from_env() -> Result<AnyNic> {
        let nic = Nic::from_env()?;
        let faults = FaultConfig::from_env().map_err(NicError::Config)?;
        let pcap_err = |e: std::io::Error| NicError::Os { what: "opening the MPI_NIC_PCAP trace file", source: e };
        Ok(match faults.filter(FaultConfig::is_active) {
            None => match PcapWriter::from_env(nic).map_err(pcap_err)? {
                Ok(traced) => AnyNic::Traced(traced),
                Err(nic) => AnyNic::Plain(nic),
            },
            Some(cfg) => match PcapWriter::from_env(FaultInjector::new(nic, cfg)).map_err(pcap_err)? {
                Ok(traced) => AnyNic::TracedFaulty(traced),
                Err(faulty) => AnyNic::Faulty(faulty),
            },
        })
    }
}

/// Evaluates `$body` with `$d` bound to the variant's device.
macro_rules! each {
    ($self:expr, $d:ident => $body:expr) => {
        match $self {
            AnyNic::Plain($d) => $body,
            AnyNic::Faulty($d) => $body,
            AnyNic::Traced($d) => $body,
            AnyNic::TracedFaulty($d) => $body,
        }
    };
}

/// Declares a token enum over the four stacks' tokens.
macro_rules! token_enum {
    ($name:ident, $assoc:ident) => {
        pub enum $name<'a> {
            Plain(<Nic as Device>::$assoc<'a>),
            Faulty(<FaultInjector<Nic> as Device>::$assoc<'a>),
            Traced(<PcapWriter<Nic> as Device>::$assoc<'a>),
            TracedFaulty(<PcapWriter<FaultInjector<Nic>> as Device>::$assoc<'a>),
        }
    };
}

token_enum!(AnyTxToken, TxToken);
token_enum!(AnyRxToken, RxToken);

impl TxToken for AnyTxToken<'_> {
    #[inline]
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        match self {
            AnyTxToken::Plain(t) => t.consume(len, f),
            AnyTxToken::Faulty(t) => t.consume(len, f),
            AnyTxToken::Traced(t) => t.consume(len, f),
            AnyTxToken::TracedFaulty(t) => t.consume(len, f),
        }
    }
}

impl RxToken for AnyRxToken<'_> {
    #[inline]
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        match self {
            AnyRxToken::Plain(t) => t.consume(f),
            AnyRxToken::Faulty(t) => t.consume(f),
            AnyRxToken::Traced(t) => t.consume(f),
            AnyRxToken::TracedFaulty(t) => t.consume(f),
        }
    }
}

impl AnyNic {
    #[inline(never)]
    fn receive_wrapped(&mut self, src: Rank) -> Option<AnyRxToken<'_>> {
        match self {
            AnyNic::Plain(d) => d.receive(src).map(AnyRxToken::Plain),
            AnyNic::Faulty(d) => d.receive(src).map(AnyRxToken::Faulty),
            AnyNic::Traced(d) => d.receive(src).map(AnyRxToken::Traced),
            AnyNic::TracedFaulty(d) => d.receive(src).map(AnyRxToken::TracedFaulty),
        }
    }
}

impl Device for AnyNic {
    type TxToken<'a> = AnyTxToken<'a>;
    type RxToken<'a> = AnyRxToken<'a>;

    fn rank(&self) -> Rank {
        each!(self, d => d.rank())
    }
    fn nranks(&self) -> usize {
        each!(self, d => d.nranks())
    }
    fn capabilities(&self) -> Capabilities {
        each!(self, d => d.capabilities())
    }
    #[inline]
    fn transmit(&mut self, dest: Rank) -> Option<AnyTxToken<'_>> {
        match self {
            AnyNic::Plain(d) => d.transmit(dest).map(AnyTxToken::Plain),
            AnyNic::Faulty(d) => d.transmit(dest).map(AnyTxToken::Faulty),
            AnyNic::Traced(d) => d.transmit(dest).map(AnyTxToken::Traced),
            AnyNic::TracedFaulty(d) => d.transmit(dest).map(AnyTxToken::TracedFaulty),
        }
    }
    /// The plain NIC's check of a ring is inline in the caller's polling loop (every waiting
    /// loop of the stack runs through here); the wrapped NICs' are out of line.
    #[inline(always)]
    fn receive(&mut self, src: Rank) -> Option<AnyRxToken<'_>> {
        match self {
            AnyNic::Plain(d) => d.receive(src).map(AnyRxToken::Plain),
            wrapped => wrapped.receive_wrapped(src),
        }
    }
    fn dma_read(&mut self, peer: Rank, remote: usize, local: &mut [u8], packet: usize) -> Result<()> {
        each!(self, d => d.dma_read(peer, remote, local, packet))
    }
    fn dma_write(&mut self, peer: Rank, remote: usize, local: &[u8]) -> Result<()> {
        each!(self, d => d.dma_write(peer, remote, local))
    }
    fn peer_status(&self, peer: Rank) -> PeerStatus {
        each!(self, d => d.peer_status(peer))
    }
    fn counters(&self) -> &Counters {
        each!(self, d => d.counters())
    }
    fn profile(&self) -> Option<&Profile> {
        each!(self, d => d.profile())
    }
    fn set_protocol_header(&mut self, bytes: usize) {
        each!(self, d => d.set_protocol_header(bytes))
    }
    fn finalize(&mut self) {
        each!(self, d => d.finalize())
    }
}
