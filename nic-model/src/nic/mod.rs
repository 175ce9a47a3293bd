//! The per-process NIC on one host: its inbox (a receive queue shared by every sender and the
//! fast boxes senders claimed, `wire::inbox`) and its routes into every peer's inbox, the
//! exported regions and the single-copy engine that reads and writes peers' regions (submodule
//! `regions`), the names and notifications of VMMC (submodule `vmmc`), the timing model, the
//! counters.

mod regions;
mod vmmc;

use crate::counters::Counters;
use crate::error::{NicError, Rank, Result};
use crate::fabric::layout::rank_state;
use crate::fabric::liveness::{own_start_time, PeerWatch};
use crate::fabric::{random_key, Fabric, HostFabric};
use crate::phy::{Capabilities, Device, PeerStatus};
use crate::region::{Access, RegionInfo, RegionKey, Transfer, TransferId};
use crate::timing::{now_ns, Profile};
use crate::vmmc::{Name, Notification};
use crate::wire::inbox::{Inbox, Outbox, Sent};
use std::sync::atomic::Ordering;

/// Environment variable naming the timing profile (`native` when unset).
pub const PROFILE_ENV: &str = "MPI_NIC_PROFILE";
/// Environment variable that turns the single-copy engine off (`MPI_NIC_DMA=off`), forcing
/// the packet path; for tests and for comparing the two paths. `MPI_NIC_DMA=read` keeps
/// reads but refuses to write into peers, so that every split copy is left to the importer.
pub const DMA_ENV: &str = "MPI_NIC_DMA";
/// Environment variable with the smallest read that is split between importer and exporter
/// (bytes; 0 turns splitting off). See [`crate::region`].
pub const SPLIT_ENV: &str = "MPI_NIC_SPLIT_MIN";
/// Reads from this size up are copied by both ends at once. Measured with `layers --layers
/// bip`, alternating `BIP_SPLIT_MIN=0` and `8192` when splitting was BIP's: even at 12 KiB,
/// ahead from 16 KiB (one-way 3.2-3.7 -> 2.9-3.7 us; 24 KiB 3.9-4.5 -> 3.2-4.0; 1 MiB 92-97
/// -> 51-61 us; 4 MiB 650-720 -> 270-310 us).
pub const DEFAULT_SPLIT_MIN: usize = 16 * 1024;

/// One process's network interface.
pub struct Nic {
    // The wire's ends and the regions (its doorbell) hold raw pointers into the fabric's
    // mapping, so they are declared (and dropped) before it.
    outbox: Outbox,
    inbox: Inbox,
    regions: regions::Regions,
    names: vmmc::Names,
    fabric: Fabric,
    rank: Rank,
    nranks: usize,
    /// Whether peers' processes still exist, where no launcher marks deaths.
    peers: PeerWatch,
    profile: Option<Box<Profile>>,
    counters: Counters,
    finalized: bool,
    /// Leading bytes of each packet the timing model counts as the modeled wire header.
    protocol_header: usize,
}

impl Nic {
    /// Attaches to the job's fabric as set up by the launcher (see [`HostFabric::from_env`]),
    /// then as [`Nic::open`].
    pub fn from_env() -> Result<Nic> {
        Nic::open(HostFabric::from_env()?)
    }

    /// Attaches to the fabric of this host as rank `fabric.rank()`: one inherited from a
    /// launcher ([`HostFabric::from_env`]) or handed over by the host's node leader
    /// ([`crate::fabric::leader`]). The fabric's descriptor is closed once mapped. The timing
    /// profile is the one `MPI_NIC_PROFILE` names, the single-copy engine as `MPI_NIC_DMA` and
    /// `MPI_NIC_SPLIT_MIN` say; tracing is turned on if `MPI_TRACE` asks for it.
    pub fn open(fabric: HostFabric) -> Result<Nic> {
        crate::trace::init_from_env();
        let rank = fabric.rank();
        let mapped = fabric.map()?;
        // The mapping keeps the memory; no descriptor of it stays open in this process.
        drop(fabric);
        let profile = Profile::load(&std::env::var(PROFILE_ENV).unwrap_or_default())?;
        let dma = std::env::var(DMA_ENV).unwrap_or_default();
        let split_min = match std::env::var(SPLIT_ENV) {
            Ok(v) => v.parse().map_err(|_| {
                NicError::Config(format!("{SPLIT_ENV}={v:?} is not a number of bytes"))
            })?,
            Err(_) => DEFAULT_SPLIT_MIN,
        };
        let engine = regions::Engine {
            read: !matches!(dma.as_str(), "off" | "0" | "no"),
            // `read`: single-copy reads only (tests the path where an exporter cannot write).
            write: !matches!(dma.as_str(), "off" | "0" | "no" | "read"),
            split_min,
        };
        Nic::attach(mapped, rank, profile, engine)
    }

    fn attach(
        fabric: Fabric,
        rank: Rank,
        profile: Option<Profile>,
        engine: regions::Engine,
    ) -> Result<Nic> {
        let n = fabric.geometry().nranks;
        // Every rank of a job attaches to this host's shared-memory fabric.
        crate::wait::note_ranks_on_host(n);
        let block = fabric.rank_block(rank);
        if block
            .state
            .compare_exchange(
                rank_state::EMPTY,
                rank_state::ATTACHED,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            return Err(NicError::BadFabric(format!(
                "rank {rank} is already attached by another process"
            )));
        }
        // The start time first: with the pid (release) it names this very process.
        block.start_time.store(own_start_time(), Ordering::Relaxed);
        // SAFETY: getpid has no preconditions.
        block
            .pid
            .store(unsafe { libc::getpid() }, Ordering::Release);
        crate::dma::allow_peers();
        // SAFETY: this process is the only one attached as `rank` (checked above), so it is the
        // one sender `rank` into every inbox and the one receiver of `rank`'s inbox; both live
        // in `fabric`, which the Nic owns and drops after them.
        let (outbox, inbox) = unsafe { (Outbox::new(&fabric, rank), Inbox::new(&fabric, rank)) };
        // Region keys must not be guessable from outside the process (a peer reads an
        // exported region only with its key), so their stream starts from the kernel's entropy.
        let seed = u64::from_le_bytes(random_key()?[..8].try_into().expect("8 of 16 bytes"));
        // SAFETY: the Nic owns `fabric` and drops it after `regions` (field order); this
        // process is `rank` (checked above).
        let regions = unsafe { regions::Regions::new(seed, engine, &fabric, rank) };
        tracing::debug!(target: "nic", rank, nranks = n, profile = profile.as_ref().map(|p| p.name.as_str()).unwrap_or("native"), "NIC attached");
        Ok(Nic {
            outbox,
            inbox,
            regions,
            names: vmmc::Names::new(),
            fabric,
            rank,
            nranks: n,
            peers: PeerWatch::new(n),
            profile: profile.map(Box::new),
            counters: Counters::default(),
            finalized: false,
            protocol_header: 0,
        })
    }

    /// The timing profile in force (`None` for `native`).
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    /// The seed this job's fault injectors derive their streams from.
    pub fn fault_seed(&self) -> u64 {
        self.fabric.header().fault_seed
    }

    /// Packets sent to `dest` so far.
    pub fn packets_sent_to(&self, dest: Rank) -> u64 {
        self.outbox.sent_to(dest)
    }
}

impl Drop for Nic {
    fn drop(&mut self) {
        self.names.withdraw_all(&self.fabric, self.rank);
        self.regions.withdraw_all(&self.fabric, self.rank);
        // Leaving without finalizing is a death as far as peers are concerned.
        if !self.finalized {
            self.fabric
                .rank_block(self.rank)
                .state
                .store(rank_state::DEAD, Ordering::Release);
        }
    }
}

impl Device for Nic {
    fn rank(&self) -> Rank {
        self.rank
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            mtu: self.fabric.geometry().mtu(),
            reliable: true,
        }
    }

    #[inline]
    fn send(&mut self, dest: Rank, len: usize, fill: &mut dyn FnMut(&mut [u8])) -> bool {
        let Nic {
            outbox,
            fabric,
            profile,
            rank,
            protocol_header,
            ..
        } = self;
        let when = || match profile {
            None => 0,
            Some(p) => p.schedule(
                fabric.rank_block(*rank),
                fabric.rank_block(dest),
                len.saturating_sub(*protocol_header),
                now_ns(),
            ),
        };
        match outbox.send(dest, len, fill, when) {
            Sent::Yes => {
                self.counters.packets_tx += 1;
                self.counters.bytes_tx += len as u64;
                true
            }
            Sent::Full { first } => {
                if first {
                    self.counters.stalls += 1;
                    tracing::trace!(target: "nic", dest, "route full, sender stalls");
                }
                false
            }
        }
    }

    #[inline]
    fn poll(&mut self, take: &mut dyn FnMut(Rank, &[u8])) -> bool {
        let Some(len) = self.inbox.poll(take) else {
            return false;
        };
        self.counters.packets_rx += 1;
        self.counters.bytes_rx += len as u64;
        true
    }

    #[inline]
    fn progress(&mut self) -> bool {
        let mut any = false;
        if self.regions.assisting() {
            any = self.regions.tend_assists();
        }
        if !self.regions.doorbell_rang() {
            return any;
        }
        self.regions
            .serve_assists(&self.fabric, self.rank, &mut self.counters)
            | any
    }

    unsafe fn register(&mut self, addr: usize, len: usize, access: Access) -> Result<RegionKey> {
        Ok(self
            .regions
            .register(&self.fabric, self.rank, RegionInfo { addr, len, access }))
    }

    fn deregister(&mut self, region: RegionKey) -> Result<()> {
        // The name first: an importer that finds it then finds the region, or is refused.
        self.names.withdraw(&self.fabric, self.rank, region);
        self.regions.deregister(&self.fabric, self.rank, region)
    }

    fn import(&mut self, peer: Rank, key: RegionKey) -> Result<RegionInfo> {
        self.check_peer(peer)?;
        regions::import(&self.fabric, peer, key)
    }

    fn local_region(&self, key: RegionKey) -> Result<RegionInfo> {
        self.regions.local(self.rank, key)
    }

    unsafe fn read_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: *mut u8,
        len: usize,
    ) -> Result<Transfer> {
        self.check_peer(peer)?;
        let _span = tracing::trace_span!(target: "nic", "read_region", peer, len).entered();
        let start = now_ns();
        let read = regions::Read {
            peer,
            key,
            offset,
            local,
            len,
        };
        let split = self.profile.is_none();
        // SAFETY: the caller's contract is passed on.
        let t = unsafe {
            self.regions
                .read(&self.fabric, self.rank, read, split, &mut self.counters)?
        };
        if len > 0 {
            self.modeled_wait(peer, self.rank, len, start);
        }
        Ok(t)
    }

    fn write_region(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
    ) -> Result<()> {
        self.check_peer(peer)?;
        self.regions
            .write(&self.fabric, peer, key, offset, local, &mut self.counters)
    }

    fn poll_transfer(&mut self, id: TransferId) -> Result<bool> {
        self.regions
            .poll_transfer(&self.fabric, id, &mut self.counters)
    }

    unsafe fn export_named(
        &mut self,
        name: Name,
        addr: usize,
        len: usize,
        access: Access,
    ) -> Result<RegionKey> {
        // SAFETY: the caller's contract is passed on.
        let key = unsafe { self.register(addr, len, access)? };
        let published = if (key.id as usize) < crate::fabric::layout::REGION_SLOTS {
            self.names.export(&self.fabric, self.rank, name, key)
        } else {
            Err(NicError::RegionRefused {
                rank: self.rank,
                why: format!(
                    "{} regions are exported already: a named one must have a descriptor in the fabric",
                    crate::fabric::layout::REGION_SLOTS
                ),
            })
        };
        match published {
            Ok(()) => Ok(key),
            Err(e) => {
                let _ = self.regions.deregister(&self.fabric, self.rank, key);
                Err(e)
            }
        }
    }

    fn import_named(&mut self, peer: Rank, name: Name) -> Result<(RegionKey, RegionInfo)> {
        self.check_peer(peer)?;
        let key = vmmc::lookup(&self.fabric, peer, name)?;
        let info = regions::import(&self.fabric, peer, key)?;
        Ok((key, info))
    }

    fn update(
        &mut self,
        peer: Rank,
        key: RegionKey,
        offset: usize,
        local: &[u8],
        notify: Option<Name>,
    ) -> Result<()> {
        self.check_peer(peer)?;
        let start = now_ns();
        self.regions
            .write(&self.fabric, peer, key, offset, local, &mut self.counters)?;
        self.modeled_wait(self.rank, peer, local.len(), start);
        let Some(name) = notify else {
            return Ok(());
        };
        let note = Notification {
            from: self.rank,
            name,
            offset,
            len: local.len(),
        };
        let Nic {
            names,
            fabric,
            peers,
            rank,
            ..
        } = self;
        let alive = || status(fabric, peers, *rank, peer) != PeerStatus::Dead;
        names.notify(fabric, *rank, peer, &note, &alive)
    }

    #[inline]
    fn poll_notification(&mut self) -> Option<Notification> {
        self.names.poll(&self.fabric, self.rank)
    }

    fn peer_status(&self, peer: Rank) -> PeerStatus {
        status(&self.fabric, &self.peers, self.rank, peer)
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn profile(&self) -> Option<&Profile> {
        self.profile.as_deref()
    }

    fn set_protocol_header(&mut self, bytes: usize) {
        self.protocol_header = bytes;
    }

    fn finalize(&mut self) {
        self.finalized = true;
        let _ = self.fabric.rank_block(self.rank).state.compare_exchange(
            rank_state::ATTACHED,
            rank_state::FINALIZED,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

/// Whether `peer` still takes part, as rank `me` sees it.
fn status(fabric: &Fabric, peers: &PeerWatch, me: Rank, peer: Rank) -> PeerStatus {
    let b = fabric.rank_block(peer);
    match b.state.load(Ordering::Acquire) {
        rank_state::FINALIZED => PeerStatus::Finalized,
        rank_state::DEAD => PeerStatus::Dead,
        // Attached, but perhaps killed where no launcher marks the dead: ask the kernel. It
        // may have finalized and exited cleanly since the state was read: read it again.
        rank_state::ATTACHED if peer != me && peers.has_exited(peer, b) => {
            match b.state.load(Ordering::Acquire) {
                rank_state::FINALIZED => PeerStatus::Finalized,
                _ => PeerStatus::Dead,
            }
        }
        _ => PeerStatus::Alive,
    }
}

impl Nic {
    /// The region `key` of this NIC that a peer on another host updates under `name`'s
    /// notification (for [`crate::net::HostNet`]): its name, if it has one.
    pub(crate) fn name_of(&self, key: RegionKey) -> Option<Name> {
        self.names.name_of(key)
    }

    /// The region this NIC exports under `name` (for a lookup from another host).
    pub(crate) fn find_named(&self, name: Name) -> Result<(RegionKey, RegionInfo)> {
        let key = self
            .names
            .find(name)
            .ok_or_else(|| NicError::RegionRefused {
                rank: self.rank,
                why: format!("no region is exported under {name} (never, or withdrawn)"),
            })?;
        Ok((key, self.regions.local(self.rank, key)?))
    }

    /// Under a timing profile, waits until `len` bytes sent from `src` to `dst` at `start`
    /// would have arrived through the modeled pipeline of packets (the data itself moved at
    /// memory speed).
    fn modeled_wait(&self, src: Rank, dst: Rank, len: usize, start: u64) {
        let Some(p) = &self.profile else {
            return;
        };
        let (src, dst) = (self.fabric.rank_block(src), self.fabric.rank_block(dst));
        let packet = crate::timing::PacketSizer::for_profile(Some(p))
            .packet_size(len, usize::MAX)
            .max(1);
        // One packet at least: an empty update still carries its notification.
        let mut done_at;
        let mut left = len;
        loop {
            let l = left.min(packet);
            done_at = p.schedule(src, dst, l, start);
            left -= l;
            if left == 0 {
                break;
            }
        }
        while now_ns() < done_at {
            std::hint::spin_loop();
        }
    }

    fn check_peer(&self, peer: Rank) -> Result<()> {
        if peer >= self.nranks {
            return Err(NicError::BadRank {
                rank: peer,
                nranks: self.nranks,
            });
        }
        Ok(())
    }
}
