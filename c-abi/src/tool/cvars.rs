//! Control variables: the library's settings, each named after its environment variable.
//!
//! A read gives, in this order: what the running engine uses, where it says so (the channel
//! and the eager limit while MPI runs); else the environment variable's value as the layer
//! that reads it would understand it; else the layer's default. A write (allowed between
//! `MPI_T_init_thread` and `MPI_Init` for the settings `MPI_Init` reads in this process) sets
//! the environment variable. No setting is copied into a second place: the layers keep reading
//! their environment as they always did, so a write has exactly the effect of starting the
//! program with that variable set.

use crate::abi::*;
use crate::tool::catalog::{self, CHANNELS, DMA_MODES, PROFILES, PROFILE_OTHER};
use crate::tool::readings::Readings;
use std::ffi::c_int;

/// The C type of a control variable's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    /// A byte count or a number (`MPI_UNSIGNED_LONG_LONG`).
    Count,
    /// 0 or 1 (`MPI_INT`).
    Flag,
    /// An item of enumeration `ENUMS[i]` (`MPI_INT`).
    Enum(usize),
    /// A string (`MPI_CHAR`, [`TEXT_COUNT`] elements with the terminating NUL).
    Text,
}

/// The buffer a string control variable is read into: at most this many chars with the NUL.
pub(crate) const TEXT_COUNT: c_int = 1024;

impl Type {
    /// The MPI datatype of the value.
    pub fn datatype(self) -> MPI_Datatype {
        match self {
            Type::Count => MPI_UNSIGNED_LONG_LONG,
            Type::Flag | Type::Enum(_) => MPI_INT,
            Type::Text => MPI_CHAR,
        }
    }

    /// The number of elements of the datatype a value is.
    pub fn count(self) -> c_int {
        match self {
            Type::Text => TEXT_COUNT,
            _ => 1,
        }
    }
}

/// Where a setting's value comes from when the engine does not say.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Default {
    Count(u64),
    Flag(bool),
    /// An enumeration's item, by name.
    Item(&'static str),
    Text(&'static str),
    /// The fabric geometry a launcher builds for an MPI job (`mpich_channel::job_config`).
    Geometry(fn(&nic_model::JobConfig) -> usize),
}

/// When a setting may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Writable {
    /// Read by the launcher, or fixed: never (`MPI_T_SCOPE_READONLY`).
    Never,
    /// Read by `MPI_Init` in this process, and must be the same in every process
    /// (`MPI_T_SCOPE_ALL_EQ`): before `MPI_Init`.
    BeforeInitAllEqual,
    /// Read by `MPI_Init` (or later) in this process only (`MPI_T_SCOPE_LOCAL`): before `MPI_Init`.
    BeforeInitLocal,
}

impl Writable {
    pub fn scope(self) -> c_int {
        match self {
            Writable::Never => MPI_T_SCOPE_READONLY,
            Writable::BeforeInitAllEqual => MPI_T_SCOPE_ALL_EQ,
            Writable::BeforeInitLocal => MPI_T_SCOPE_LOCAL,
        }
    }
}

/// One control variable.
pub(crate) struct Cvar {
    /// The environment variable that carries the setting, which is also the cvar's name.
    pub name: &'static str,
    pub desc: &'static str,
    pub verbosity: c_int,
    pub ty: Type,
    pub default: Default,
    pub writable: Writable,
    pub category: usize,
}

const fn cvar(
    name: &'static str,
    category: usize,
    ty: Type,
    default: Default,
    writable: Writable,
    verbosity: c_int,
    desc: &'static str,
) -> Cvar {
    Cvar {
        name,
        desc,
        verbosity,
        ty,
        default,
        writable,
        category,
    }
}

use catalog::{BIP, CHANNEL, FM, MPI, NIC};
use Writable::{BeforeInitAllEqual as AllEq, BeforeInitLocal as Local, Never};

const USER: c_int = MPI_T_VERBOSITY_USER_BASIC;
const TUNER: c_int = MPI_T_VERBOSITY_TUNER_BASIC;
const TUNER_DETAIL: c_int = MPI_T_VERBOSITY_TUNER_DETAIL;
const DEV: c_int = MPI_T_VERBOSITY_MPIDEV_DETAIL;

/// Every control variable, by index (stable: new ones are appended).
pub(crate) const CVARS: &[Cvar] = &[
    cvar("MPI_CHANNEL", CHANNEL, Type::Enum(CHANNELS), Default::Item(mpich_channel::DEFAULT_CHANNEL), AllEq, USER,
        "the MPICH channel that carries MPI's messages: bip (BIP directly), fm (FM 2.x streams over BIP) or fm1 (FM 1.x staged messages over BIP); every rank must use the same (mpirun --channel)"),
    cvar("MPI_EAGER_MAX", CHANNEL, Type::Count, Default::Count(0), AllEq, TUNER,
        "bytes: messages up to this size are sent eagerly, longer ones by rendezvous; while MPI runs, the limit the engine uses; before MPI_Init, the value asked for (0: the channel's own, one packet for bip, FM's bulk size for fm, no rendezvous for fm1)"),
    cvar("BIP_EAGER_MAX", BIP, Type::Count, Default::Count(bip_core::config::DEFAULT_EAGER_MAX as u64), AllEq, TUNER,
        "bytes: BIP's short/long threshold (short messages are copied through packet buffers, long ones read in one copy); the bip channel raises an unset one to what one packet carries"),
    cvar("BIP_SHORT_LIMIT", BIP, Type::Count, Default::Count(bip_core::config::DEFAULT_SHORT_LIMIT as u64), Local, TUNER,
        "bytes of unreceived short messages a receiver buffers before its senders wait for credit (split among the senders)"),
    cvar("BIP_TAGS", BIP, Type::Count, Default::Count(bip_core::config::DEFAULT_TAGS as u64), AllEq, TUNER_DETAIL,
        "number of BIP tag queues"),
    cvar("BIP_FORCE_LINK", BIP, Type::Flag, Default::Flag(false), AllEq, DEV,
        "1: run BIP's reliability protocol (sequence numbers, checksums, acknowledgements) even over a reliable device, to measure its cost"),
    cvar("FM_BULK_MIN", FM, Type::Count, Default::Count(fm_streams::DEFAULT_BULK_MIN as u64), AllEq, TUNER,
        "bytes: pieces of at least this size are moved by single copy instead of packets (never below BIP's short limit + 1)"),
    cvar("MPI_NIC_PROFILE", NIC, Type::Enum(PROFILES), Default::Item("native"), Never, USER,
        "the NIC's timing profile (mpirun --profile): native (as fast as the host goes), myrinet-lanai4 or rdma-100g (modeled), other (a file, see MPI_NIC_PROFILE_PATH)"),
    cvar("MPI_NIC_PROFILE_PATH", NIC, Type::Text, Default::Text(""), Never, TUNER_DETAIL,
        "colon-separated directories searched for NAME.toml timing profiles"),
    cvar("MPI_NIC_DMA", NIC, Type::Enum(DMA_MODES), Default::Item("on"), Local, TUNER_DETAIL,
        "the NIC's single-copy engine: on (reads and writes of peers' regions), read (reads only), off (every byte through packets)"),
    cvar("MPI_NIC_SPLIT_MIN", NIC, Type::Count, Default::Count(nic_model::nic::DEFAULT_SPLIT_MIN as u64), Local, TUNER,
        "bytes: single copies at least this long are split between both ends' cores"),
    cvar("MPI_NIC_SLOT_BYTES", NIC, Type::Count, Default::Geometry(|c| c.slot_bytes), Never, TUNER,
        "bytes per packet buffer of each rank's receive queue, header included: the largest packet (set for the launcher, which builds the fabric)"),
    cvar("MPI_NIC_SLOTS", NIC, Type::Count, Default::Geometry(|c| c.queue_slots), Never, TUNER,
        "packet buffers in each rank's shared receive queue"),
    cvar("MPI_NIC_BOXES", NIC, Type::Count, Default::Geometry(|c| c.box_count), Never, TUNER_DETAIL,
        "fast boxes per rank (small packets from one sender each), at most the job's size"),
    cvar("MPI_NIC_BOX_SLOTS", NIC, Type::Count, Default::Geometry(|c| c.box_slots), Never, TUNER_DETAIL,
        "packet buffers per fast box"),
    cvar("MPI_NIC_BOX_BYTES", NIC, Type::Count, Default::Geometry(|c| c.box_slot_bytes), Never, TUNER_DETAIL,
        "bytes per fast-box packet buffer, header included: packets up to this size less the header take the fast boxes"),
    cvar("MPI_WIRE", NIC, Type::Text, Default::Text("auto"), Never, USER,
        "the wire between processes: auto (shared memory within a host, TCP between hosts) or tcp (every pair over TCP)"),
    cvar("MPI_WAIT_SPIN", NIC, Type::Count, Default::Count(16), Local, DEV,
        "polls a waiting rank spins before it yields, when the job's ranks outnumber its cores"),
    cvar("MPI_WAIT_YIELD_US", NIC, Type::Count, Default::Count(100), Local, DEV,
        "microseconds a waiting rank yields for, when the job's ranks outnumber its cores"),
    cvar("MPI_ASYNC_PROGRESS", MPI, Type::Flag, Default::Flag(false), Local, USER,
        "1: a thread of the library advances communication while the program computes"),
    cvar("MPI_COUNTERS", MPI, Type::Text, Default::Text(""), Local, USER,
        "a path: MPI_Finalize writes this rank's counters of every layer to PATH.RANK.json"),
    cvar("MPI_TRACE", MPI, Type::Text, Default::Text(""), Local, DEV,
        "layers whose tracing output is on (e.g. nic,bip,fm)"),
    cvar("MPI_RMA_VMMC", MPI, Type::Flag, Default::Flag(true), AllEq, TUNER,
        "1: puts and gets of the sizes where it pays go through the device's deliberate update; 0: every one on messages"),
    cvar("MPI_RMA_VMMC_MIN", MPI, Type::Count, Default::Count(0), AllEq, DEV,
        "bytes: if set, every put and get of at least this size goes through the device (0: the measured sizes)"),
    cvar("MPI_WIN_DIRECT", MPI, Type::Flag, Default::Flag(true), AllEq, TUNER_DETAIL,
        "1: windows of ranks on one host are accessed directly in shared memory"),
    cvar("MPI_LANES", MPI, Type::Count, Default::Count(4), Local, TUNER,
        "lanes (separate engines, each behind its own lock) that point-to-point traffic on different communicators runs on under MPI_THREAD_MULTIPLE, 1 to 8 (1: one lane); while MPI runs, the lanes in use (1 below MPI_THREAD_MULTIPLE)"),
];

/// The indexes of the control variables in category `cat`, in index order.
pub(crate) fn in_category(cat: usize) -> Vec<usize> {
    (0..CVARS.len())
        .filter(|&i| CVARS[i].category == cat)
        .collect()
}

/// The index of the control variable called `name`.
pub(crate) fn index_of(name: &str) -> Option<usize> {
    CVARS.iter().position(|c| c.name == name)
}

/// A control variable's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    Count(u64),
    Int(c_int),
    Text(String),
}

/// The value of control variable `index` now: `running` is the engine's snapshot while MPI
/// runs (`None` before `MPI_Init` and after `MPI_Finalize`); `env` reads an environment
/// variable (the process's, except in unit tests).
pub(crate) fn read(
    index: usize,
    running: Option<&Readings>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Value {
    let cvar = &CVARS[index];
    if let Some(r) = running {
        match cvar.name {
            "MPI_CHANNEL" => {
                let e = &catalog::ENUMS[CHANNELS];
                return Value::Int(e.value_of(r.counters.channel_name).unwrap_or(0));
            }
            "MPI_EAGER_MAX" => return Value::Count(r.eager_max as u64),
            "MPI_LANES" => return Value::Count(r.lanes as u64),
            _ => {}
        }
    }
    let set = env(cvar.name).filter(|v| !v.is_empty());
    match (cvar.ty, cvar.default) {
        (Type::Count, Default::Geometry(field)) => {
            let parsed = set.and_then(|v| v.trim().parse::<u64>().ok());
            Value::Count(parsed.unwrap_or_else(|| {
                // What a launcher builds when the variable is unset (the fabric's own geometry
                // is not visible to the rank; the launcher made it from these same variables).
                let cfg = mpich_channel::job_config(usize::MAX, set_profile_is_modeled(env));
                field(&cfg) as u64
            }))
        }
        (Type::Count, d) => {
            let parsed = set.and_then(|v| v.trim().parse::<u64>().ok());
            Value::Count(parsed.unwrap_or(match d {
                Default::Count(n) => n,
                _ => 0,
            }))
        }
        (Type::Flag, d) => {
            let default = matches!(d, Default::Flag(true));
            Value::Int(set.map_or(default, |v| flag_is_on(&v, default)) as c_int)
        }
        (Type::Enum(e), d) => {
            let e = &catalog::ENUMS[e];
            let item = |name: &str| {
                if e.name == "nic_dma" {
                    // nic-model: "off", "0", "no" turn it off, "read" keeps reads only.
                    match name {
                        "off" | "0" | "no" => e.value_of("off"),
                        "read" => e.value_of("read"),
                        _ => e.value_of("on"),
                    }
                } else {
                    e.value_of(name)
                }
            };
            let default = match d {
                Default::Item(n) => item(n).unwrap_or(0),
                _ => 0,
            };
            Value::Int(set.map_or(default, |v| {
                item(v.trim()).unwrap_or(if e.name == "nic_profile" {
                    PROFILE_OTHER
                } else {
                    default
                })
            }))
        }
        (Type::Text, d) => Value::Text(set.unwrap_or_else(|| match d {
            Default::Text(t) => t.to_string(),
            _ => String::new(),
        })),
    }
}

/// How the layers read a yes/no variable: most say "0" is off and anything else on; the
/// reliability switch and the progress thread want an explicit yes.
fn flag_is_on(v: &str, default: bool) -> bool {
    match v.trim() {
        "0" | "no" | "off" | "false" => false,
        "1" | "yes" | "on" | "true" => true,
        _ => default,
    }
}

/// Whether `MPI_NIC_PROFILE` (as `env` gives it) names a modeled timing profile.
fn set_profile_is_modeled(env: &dyn Fn(&str) -> Option<String>) -> bool {
    let name = env(nic_model::nic::PROFILE_ENV).unwrap_or_default();
    nic_model::Profile::load(&name).is_ok_and(|p| p.is_some())
}

/// Why a write is refused (the `MPI_T` error class to return).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WriteRefused {
    /// A read-only setting (`MPI_T_ERR_CVAR_SET_NEVER`).
    Never,
    /// MPI has started (`MPI_T_ERR_CVAR_SET_NOT_NOW`).
    NotNow,
    /// The value is not one the setting takes (`MPI_T_ERR_INVALID`).
    BadValue(String),
}

/// The text to put in the environment for a write of `value` to control variable `index`,
/// `mpi_started` telling whether `MPI_Init` has been called.
pub(crate) fn text_to_write(
    index: usize,
    value: &Value,
    mpi_started: bool,
) -> Result<String, WriteRefused> {
    let cvar = &CVARS[index];
    if cvar.writable == Writable::Never {
        return Err(WriteRefused::Never);
    }
    if mpi_started {
        return Err(WriteRefused::NotNow);
    }
    match (cvar.ty, value) {
        (Type::Count, Value::Count(n)) => Ok(n.to_string()),
        (Type::Flag, Value::Int(v @ (0 | 1))) => Ok(v.to_string()),
        (Type::Enum(e), Value::Int(v)) => {
            let e = &catalog::ENUMS[e];
            e.name_of(*v)
                .filter(|_| !(e.name == "nic_profile" && *v == PROFILE_OTHER))
                .map(str::to_string)
                .ok_or_else(|| {
                    WriteRefused::BadValue(format!(
                        "{v} is not an item of enumeration {} of {}",
                        e.name, cvar.name
                    ))
                })
        }
        (Type::Text, Value::Text(t)) => Ok(t.clone()),
        (_, v) => Err(WriteRefused::BadValue(format!(
            "{v:?} is not a value of {}",
            cvar.name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn names_are_unique_and_types_consistent() {
        for (i, c) in CVARS.iter().enumerate() {
            assert_eq!(index_of(c.name), Some(i), "{}", c.name);
            match (c.ty, c.default) {
                (Type::Count, Default::Count(_) | Default::Geometry(_))
                | (Type::Flag, Default::Flag(_))
                | (Type::Enum(_), Default::Item(_))
                | (Type::Text, Default::Text(_)) => {}
                other => panic!("{}: type and default disagree: {other:?}", c.name),
            }
            assert!(c.desc.len() > 20, "{} needs a description", c.name);
        }
    }

    #[test]
    fn reads_environment_then_default_and_the_engine_first() {
        let ch = index_of("MPI_CHANNEL").unwrap();
        assert_eq!(read(ch, None, &env_of(&[])), Value::Int(0));
        assert_eq!(
            read(ch, None, &env_of(&[("MPI_CHANNEL", "fm1")])),
            Value::Int(2)
        );
        let eager = index_of("MPI_EAGER_MAX").unwrap();
        assert_eq!(
            read(eager, None, &env_of(&[("MPI_EAGER_MAX", "2048")])),
            Value::Count(2048)
        );
        let bip = index_of("BIP_EAGER_MAX").unwrap();
        assert_eq!(read(bip, None, &env_of(&[])), Value::Count(8192));
        let dma = index_of("MPI_NIC_DMA").unwrap();
        assert_eq!(
            read(dma, None, &env_of(&[("MPI_NIC_DMA", "no")])),
            Value::Int(2)
        );
        let prof = index_of("MPI_NIC_PROFILE").unwrap();
        assert_eq!(
            read(prof, None, &env_of(&[("MPI_NIC_PROFILE", "/x/y.toml")])),
            Value::Int(PROFILE_OTHER)
        );
        let fl = index_of("BIP_FORCE_LINK").unwrap();
        assert_eq!(
            read(fl, None, &env_of(&[("BIP_FORCE_LINK", "yes")])),
            Value::Int(1)
        );
    }

    #[test]
    fn writes_only_before_init_and_only_good_values() {
        let ch = index_of("MPI_CHANNEL").unwrap();
        assert_eq!(text_to_write(ch, &Value::Int(1), false), Ok("fm".into()));
        assert_eq!(
            text_to_write(ch, &Value::Int(1), true),
            Err(WriteRefused::NotNow)
        );
        assert!(matches!(
            text_to_write(ch, &Value::Int(7), false),
            Err(WriteRefused::BadValue(_))
        ));
        let slots = index_of("MPI_NIC_SLOTS").unwrap();
        assert_eq!(
            text_to_write(slots, &Value::Count(8), false),
            Err(WriteRefused::Never)
        );
        let eager = index_of("MPI_EAGER_MAX").unwrap();
        assert_eq!(
            text_to_write(eager, &Value::Count(4096), false),
            Ok("4096".into())
        );
    }
}
