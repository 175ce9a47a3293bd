//! Performance variables: every counter of every layer, and the sessions that read them.
//!
//! The counters live in the layers (plain integers each layer increments where the event
//! happens) and are read as one snapshot (`mpich_channel::adi::AdiCounters`) when a call needs
//! them. A session's handle of a counter keeps only its own view: `kept`, the sum of the
//! intervals it was started for, and, while started, the counter's value when it was started
//! (or last reset or written). Its value is `kept + (now - started_from)`: starting, stopping,
//! resetting or writing one handle changes nothing for any other handle or session.

use crate::abi::*;
use crate::tool::catalog::{BIP, CHANNEL, FM, MPI, NIC};
use crate::tool::handles::next_serial;
use mpich_channel::adi::AdiCounters;
use std::collections::BTreeMap;
use std::ffi::c_int;

/// One performance variable.
pub(crate) struct Pvar {
    pub name: &'static str,
    pub desc: &'static str,
    pub verbosity: c_int,
    /// `MPI_T_PVAR_CLASS_COUNTER`, `_LEVEL` or `_HIGHWATERMARK`.
    pub class: c_int,
    pub category: usize,
    /// Its value in a snapshot of the counters.
    pub read: fn(&AdiCounters) -> u64,
}

impl Pvar {
    /// A level or a high-water mark is always on (cannot be started or stopped) and read-only;
    /// a counter is startable and each handle's view of it can be reset or written.
    pub fn continuous(&self) -> bool {
        self.class != MPI_T_PVAR_CLASS_COUNTER
    }

    pub fn readonly(&self) -> bool {
        self.continuous()
    }
}

const USER: c_int = MPI_T_VERBOSITY_USER_BASIC;
const TUNER: c_int = MPI_T_VERBOSITY_TUNER_BASIC;
const DETAIL: c_int = MPI_T_VERBOSITY_TUNER_DETAIL;
const COUNTER: c_int = MPI_T_PVAR_CLASS_COUNTER;

const fn pvar(
    name: &'static str,
    category: usize,
    class: c_int,
    verbosity: c_int,
    read: fn(&AdiCounters) -> u64,
    desc: &'static str,
) -> Pvar {
    Pvar {
        name,
        desc,
        verbosity,
        class,
        category,
        read,
    }
}

/// One lane's count of calls on the lane path, alone on its cache line (each is written by
/// the thread that holds its lane).
#[repr(align(128))]
pub(crate) struct LaneCalls(std::sync::atomic::AtomicU64);

/// The calls each lane ran on the lane path (`runtime::thread::lane`), by lane.
pub(crate) static LANE_CALLS: [LaneCalls; crate::p2p::request::MAX_LANES] =
    [const { LaneCalls(std::sync::atomic::AtomicU64::new(0)) }; crate::p2p::request::MAX_LANES];

/// Counts one call on lane `lane`'s path.
#[inline]
pub(crate) fn count_lane_call(lane: usize) {
    if let Some(c) = LANE_CALLS.get(lane) {
        c.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The calls every lane ran on the lane path.
fn lane_calls() -> u64 {
    LANE_CALLS
        .iter()
        .map(|c| c.0.load(std::sync::atomic::Ordering::Relaxed))
        .sum()
}

/// How many lanes other than 0 ran calls on the lane path.
fn lanes_used() -> u64 {
    LANE_CALLS
        .iter()
        .filter(|c| c.0.load(std::sync::atomic::Ordering::Relaxed) > 0)
        .count() as u64
}

/// FM's counters, 0 under the `bip` channel (which does not run FM).
fn fm(c: &AdiCounters) -> fm_streams::FmCounters {
    c.channel.fm.unwrap_or_default()
}

/// Every performance variable, by index (stable: new ones are appended). All are
/// `MPI_UNSIGNED_LONG_LONG`, one element, bound to no object.
pub(crate) const PVARS: &[Pvar] = &[
    pvar("nic_packets_tx", NIC, COUNTER, USER, |c| c.channel.nic.packets_tx, "packets this process's NIC handed to the wire"),
    pvar("nic_bytes_tx", NIC, COUNTER, USER, |c| c.channel.nic.bytes_tx, "payload bytes this process's NIC handed to the wire"),
    pvar("nic_packets_rx", NIC, COUNTER, USER, |c| c.channel.nic.packets_rx, "packets this process's NIC took off the wire"),
    pvar("nic_bytes_rx", NIC, COUNTER, USER, |c| c.channel.nic.bytes_rx, "payload bytes this process's NIC took off the wire"),
    pvar("nic_stalls", NIC, COUNTER, TUNER, |c| c.channel.nic.stalls, "times a send found the route's packet buffers full and waited"),
    pvar("nic_dma_ops", NIC, COUNTER, TUNER, |c| c.channel.nic.dma_ops, "single copies (DMA) this NIC made: reads of peers' regions, writes into them (each part of a split one)"),
    pvar("nic_dma_bytes", NIC, COUNTER, TUNER, |c| c.channel.nic.dma_bytes, "bytes moved by single copies, this NIC's and the parts it wrote for importers"),
    pvar("nic_assists", NIC, COUNTER, DETAIL, |c| c.channel.nic.assists, "parts of this NIC's regions it copied into an importer's memory (split single copies)"),
    pvar("nic_copies_outside", NIC, COUNTER, DETAIL, |c| c.channel.nic.copies_outside, "single copies run outside the library's lock by a waiting thread (MPI_THREAD_MULTIPLE: copy jobs)"),
    pvar("nic_faults", NIC, COUNTER, DETAIL, |c| c.channel.nic.faults, "packets dropped, corrupted, duplicated or delayed by the fault injector (MPI_NIC_FAULTS)"),
    pvar("bip_messages_sent", BIP, COUNTER, USER, |c| c.channel.bip.messages_sent, "messages BIP sent"),
    pvar("bip_messages_received", BIP, COUNTER, USER, |c| c.channel.bip.messages_received, "messages BIP received"),
    pvar("bip_copies", BIP, COUNTER, TUNER, |c| c.channel.bip.copies, "memory copies BIP made (into and out of packet buffers, into and out of its buffers for unexpected messages)"),
    pvar("bip_bytes_copied", BIP, COUNTER, TUNER, |c| c.channel.bip.bytes_copied, "bytes BIP's memory copies moved"),
    pvar("bip_rendezvous_single_copy", BIP, COUNTER, TUNER, |c| c.channel.bip.rendezvous_single_copy, "long messages read in one copy from the sender's region"),
    pvar("bip_rendezvous_packets", BIP, COUNTER, TUNER, |c| c.channel.bip.rendezvous_packets, "long messages fetched in packets because single copy was not available"),
    pvar("bip_credit_waits", BIP, COUNTER, TUNER, |c| c.channel.bip.credit_waits, "attempts to start a short message that found too little buffer credit at the receiver (a waiting sender counts once per attempt)"),
    pvar("bip_retransmits", BIP, COUNTER, DETAIL, |c| c.channel.bip.retransmits, "packets resent (unreliable devices only)"),
    pvar("bip_rejected", BIP, COUNTER, DETAIL, |c| c.channel.bip.rejected, "packets dropped for a bad checksum, as duplicates or after a gap (unreliable devices only)"),
    pvar("bip_buffered_bytes", BIP, MPI_T_PVAR_CLASS_LEVEL, DETAIL, |c| c.channel.bip.buffered_bytes, "bytes of short messages buffered now because no receive was posted for them"),
    pvar("bip_buffered_peak", BIP, MPI_T_PVAR_CLASS_HIGHWATERMARK, DETAIL, |c| c.channel.bip.buffered_peak, "the most bytes of short messages ever buffered at once since MPI_Init (bounded by the credit granted)"),
    pvar("fm_messages_sent", FM, COUNTER, USER, |c| fm(c).messages_sent, "messages FM sent (0 under the bip channel)"),
    pvar("fm_messages_received", FM, COUNTER, USER, |c| fm(c).messages_received, "messages FM received (0 under the bip channel)"),
    pvar("fm_packets_sent", FM, COUNTER, TUNER, |c| fm(c).packets_sent, "packets FM sent"),
    pvar("fm_packets_received", FM, COUNTER, TUNER, |c| fm(c).packets_received, "packets FM received"),
    pvar("fm_bulk_direct", FM, COUNTER, TUNER, |c| fm(c).bulk_direct, "bulk segments moved by single copy straight into a handler's buffer"),
    pvar("fm_bulk_staged", FM, COUNTER, TUNER, |c| fm(c).bulk_staged, "bulk segments staged first (the handler asked for less than the segment)"),
    pvar("fm_suspensions", FM, COUNTER, TUNER, |c| fm(c).suspensions, "times a handler was descheduled waiting for data"),
    pvar("fm_copies", FM, COUNTER, TUNER, |c| fm(c).copies, "memory copies FM made: handlers' copies out of packets, FM 1.x staging, short pieces copied into packets"),
    pvar("fm_bytes_copied", FM, COUNTER, TUNER, |c| fm(c).bytes_copied, "bytes handlers copied out of packets (FM 2.x) or out of staging (FM 1.x)"),
    pvar("fm_send_bytes_copied", FM, COUNTER, DETAIL, |c| fm(c).send_bytes_copied, "bytes of short pieces copied into the packet being built (send side)"),
    pvar("channel_copies", CHANNEL, COUNTER, TUNER, |c| c.channel.channel.copies, "copies the channel made itself (control payloads out of packets, staged messages)"),
    pvar("channel_bytes_copied", CHANNEL, COUNTER, TUNER, |c| c.channel.channel.bytes, "bytes the channel's own copies moved"),
    pvar("mpi_copies", MPI, COUNTER, TUNER, |c| c.adi.copies, "copies the MPI engine made (unexpected eager messages into the receive that matched)"),
    pvar("mpi_bytes_copied", MPI, COUNTER, TUNER, |c| c.adi.bytes, "bytes the MPI engine's copies moved"),
    pvar("mpi_lane_calls", MPI, COUNTER, TUNER, |_| lane_calls(), "point-to-point calls that ran on a lane other than 0, beside the other threads' (MPI_THREAD_MULTIPLE with MPI_LANES > 1)"),
    pvar("mpi_lanes_used", MPI, COUNTER, TUNER, |_| lanes_used(), "lanes other than 0 on which point-to-point calls ran beside the other threads' (by communicator, or by tag on a communicator made with mpi_assert_no_any_tag)"),
];

/// The indexes of the performance variables in category `cat`, in index order.
pub(crate) fn in_category(cat: usize) -> Vec<usize> {
    (0..PVARS.len())
        .filter(|&i| PVARS[i].category == cat)
        .collect()
}

/// The index of the performance variable called `name` of class `class`.
pub(crate) fn index_of(name: &str, class: c_int) -> Option<usize> {
    PVARS
        .iter()
        .position(|p| p.name == name && p.class == class)
}

/// The value of performance variable `index` in `counters` (`None`: MPI has not started, 0).
pub(crate) fn current(index: usize, counters: Option<&AdiCounters>) -> u64 {
    counters.map_or(0, |c| (PVARS[index].read)(c))
}

/// One handle: a session's view of one variable.
#[derive(Clone, Debug)]
struct Handle {
    pvar: usize,
    /// What the handle counted in its finished intervals (or was written or reset to).
    kept: u64,
    /// While started: the variable's value when the interval began.
    started_from: Option<u64>,
}

impl Handle {
    fn value(&self, now: u64) -> u64 {
        if PVARS[self.pvar].continuous() {
            return now;
        }
        let running = self.started_from.map_or(0, |from| now.saturating_sub(from));
        self.kept.saturating_add(running)
    }
}

/// Every live session with its handles.
#[derive(Default)]
pub(crate) struct Sessions {
    by_serial: BTreeMap<u64, BTreeMap<u64, Handle>>,
}

/// A handle argument: one handle, or `MPI_T_PVAR_ALL_HANDLES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Which {
    One(u64),
    All,
}

type Result<T> = std::result::Result<T, c_int>;

impl Sessions {
    /// No session (a `const fn`, for the interface's static state).
    pub const fn new_const() -> Sessions {
        Sessions {
            by_serial: BTreeMap::new(),
        }
    }

    pub fn create(&mut self) -> u64 {
        let serial = next_serial();
        self.by_serial.insert(serial, BTreeMap::new());
        serial
    }

    pub fn free(&mut self, session: u64) -> Result<()> {
        self.by_serial
            .remove(&session)
            .map(drop)
            .ok_or(MPI_T_ERR_INVALID_SESSION)
    }

    fn session(&mut self, session: u64) -> Result<&mut BTreeMap<u64, Handle>> {
        self.by_serial
            .get_mut(&session)
            .ok_or(MPI_T_ERR_INVALID_SESSION)
    }

    fn handle(&mut self, session: u64, handle: u64) -> Result<&mut Handle> {
        self.session(session)?
            .get_mut(&handle)
            .ok_or(MPI_T_ERR_INVALID_HANDLE)
    }

    /// A new handle of variable `pvar` in `session`: stopped, at 0 (a continuous one is
    /// started and reads the variable itself).
    pub fn alloc(&mut self, session: u64, pvar: usize) -> Result<u64> {
        let handles = self.session(session)?;
        let serial = next_serial();
        handles.insert(
            serial,
            Handle {
                pvar,
                kept: 0,
                started_from: None,
            },
        );
        Ok(serial)
    }

    pub fn free_handle(&mut self, session: u64, handle: u64) -> Result<()> {
        self.session(session)?
            .remove(&handle)
            .map(drop)
            .ok_or(MPI_T_ERR_INVALID_HANDLE)
    }

    /// The variables `which` names in `session` (to read their values before a change).
    pub fn pvars_of(&mut self, session: u64, which: Which) -> Result<Vec<usize>> {
        let handles = self.session(session)?;
        Ok(match which {
            Which::All => handles.values().map(|h| h.pvar).collect(),
            Which::One(h) => vec![handles.get(&h).ok_or(MPI_T_ERR_INVALID_HANDLE)?.pvar],
        })
    }

    /// Applies `change` to the handle or handles `which` names, the variable's value now
    /// given by `now`; with `All`, the handles `skip` says to are left alone; with `One`, such
    /// a handle is the error `refused`.
    fn each(
        &mut self,
        session: u64,
        which: Which,
        now: &dyn Fn(usize) -> u64,
        skip: fn(&Pvar) -> bool,
        refused: c_int,
        change: fn(&mut Handle, u64),
    ) -> Result<()> {
        let handles = self.session(session)?;
        match which {
            Which::All => {
                for h in handles.values_mut().filter(|h| !skip(&PVARS[h.pvar])) {
                    change(h, now(h.pvar));
                }
            }
            Which::One(serial) => {
                let h = handles.get_mut(&serial).ok_or(MPI_T_ERR_INVALID_HANDLE)?;
                if skip(&PVARS[h.pvar]) {
                    return Err(refused);
                }
                change(h, now(h.pvar));
            }
        }
        Ok(())
    }

    /// Starts counting (a started handle stays as it is).
    pub fn start(&mut self, session: u64, which: Which, now: &dyn Fn(usize) -> u64) -> Result<()> {
        self.each(
            session,
            which,
            now,
            Pvar::continuous,
            MPI_T_ERR_PVAR_NO_STARTSTOP,
            |h, v| {
                h.started_from.get_or_insert(v);
            },
        )
    }

    /// Stops counting, keeping what was counted (a stopped handle stays as it is).
    pub fn stop(&mut self, session: u64, which: Which, now: &dyn Fn(usize) -> u64) -> Result<()> {
        self.each(
            session,
            which,
            now,
            Pvar::continuous,
            MPI_T_ERR_PVAR_NO_STARTSTOP,
            |h, v| {
                h.kept = h.value(v);
                h.started_from = None;
            },
        )
    }

    /// Sets the handle's view back to 0 (it keeps running if it was started).
    pub fn reset(&mut self, session: u64, which: Which, now: &dyn Fn(usize) -> u64) -> Result<()> {
        self.each(
            session,
            which,
            now,
            Pvar::readonly,
            MPI_T_ERR_PVAR_NO_WRITE,
            |h, v| {
                h.kept = 0;
                if h.started_from.is_some() {
                    h.started_from = Some(v);
                }
            },
        )
    }

    /// The handle's value, the variable's being `now`.
    pub fn read(&mut self, session: u64, handle: u64, now: u64) -> Result<u64> {
        Ok(self.handle(session, handle)?.value(now))
    }

    /// Sets the handle's view to `value` (it keeps counting from there if started).
    pub fn write(&mut self, session: u64, handle: u64, value: u64, now: u64) -> Result<()> {
        let h = self.handle(session, handle)?;
        if PVARS[h.pvar].readonly() {
            return Err(MPI_T_ERR_PVAR_NO_WRITE);
        }
        h.kept = value;
        if h.started_from.is_some() {
            h.started_from = Some(now);
        }
        Ok(())
    }

    /// The variable a handle of `session` reads.
    pub fn pvar_of(&mut self, session: u64, handle: u64) -> Result<usize> {
        Ok(self.handle(session, handle)?.pvar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_report_counter_is_here() {
        for (i, p) in PVARS.iter().enumerate() {
            assert_eq!(index_of(p.name, p.class), Some(i), "{}", p.name);
            assert_eq!(PVARS.iter().filter(|q| q.name == p.name).count(), 1);
        }
        // The counters of the layering report (AdiCounters::to_json) all have a variable.
        for name in [
            "nic_packets_tx",
            "nic_bytes_tx",
            "nic_packets_rx",
            "nic_bytes_rx",
            "nic_stalls",
            "bip_copies",
            "bip_bytes_copied",
            "bip_credit_waits",
            "bip_retransmits",
            "fm_suspensions",
            "fm_copies",
            "channel_copies",
            "mpi_bytes_copied",
        ] {
            assert!(index_of(name, COUNTER).is_some(), "{name}");
        }
    }

    #[test]
    fn each_session_has_its_own_view() {
        let tx = index_of("nic_packets_tx", COUNTER).unwrap();
        let mut s = Sessions::default();
        let (a, b) = (s.create(), s.create());
        let (ha, hb) = (s.alloc(a, tx).unwrap(), s.alloc(b, tx).unwrap());
        let at = |v: u64| move |_: usize| v;
        s.start(a, Which::One(ha), &at(10)).unwrap();
        s.start(b, Which::All, &at(15)).unwrap();
        assert_eq!(s.read(a, ha, 25).unwrap(), 15);
        assert_eq!(s.read(b, hb, 25).unwrap(), 10);
        s.stop(a, Which::All, &at(30)).unwrap();
        assert_eq!(s.read(a, ha, 100).unwrap(), 20, "stopped: no longer counts");
        s.start(a, Which::One(ha), &at(100)).unwrap();
        assert_eq!(s.read(a, ha, 105).unwrap(), 25, "a second interval adds up");
        s.reset(b, Which::One(hb), &at(105)).unwrap();
        assert_eq!(
            s.read(b, hb, 107).unwrap(),
            2,
            "reset: from 0, still counting"
        );
        assert_eq!(
            s.read(a, ha, 107).unwrap(),
            27,
            "the other session is untouched"
        );
        s.write(a, ha, 1000, 107).unwrap();
        assert_eq!(s.read(a, ha, 110).unwrap(), 1003);
        assert_eq!(s.read(b, ha, 110), Err(MPI_T_ERR_INVALID_HANDLE));
        s.free(a).unwrap();
        assert_eq!(s.read(a, ha, 110), Err(MPI_T_ERR_INVALID_SESSION));
    }

    #[test]
    fn levels_are_continuous_and_read_only() {
        let level = index_of("bip_buffered_bytes", MPI_T_PVAR_CLASS_LEVEL).unwrap();
        let mut s = Sessions::default();
        let a = s.create();
        let h = s.alloc(a, level).unwrap();
        let at = |_: usize| 7;
        assert_eq!(
            s.start(a, Which::One(h), &at),
            Err(MPI_T_ERR_PVAR_NO_STARTSTOP)
        );
        assert_eq!(s.start(a, Which::All, &at), Ok(()));
        assert_eq!(s.reset(a, Which::One(h), &at), Err(MPI_T_ERR_PVAR_NO_WRITE));
        assert_eq!(s.write(a, h, 1, 7), Err(MPI_T_ERR_PVAR_NO_WRITE));
        assert_eq!(s.read(a, h, 7), Ok(7));
    }
}
