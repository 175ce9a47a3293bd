//! One-sided communication: windows (`MPI_Win`), their operations and their synchronization
//! (MPI 3.1 chapter 11), on the progress engine's point-to-point messages.
//!
//! ```text
//!   MPI_Win_create / _allocate / _allocate_shared / _create_dynamic
//!     ──▶ Win (this table: handle, attributes, name, error handler, epochs, peers' sizes)
//!          └─ slot ──▶ WinState in the engine's Rma hook (state.rs): both sides' protocol
//!   MPI_Put / Get / Accumulate / ... ──▶ origin.rs: a request to the target (or done at once
//!          on this process's own window)
//!   every turn of the engine ──▶ Rma::progress ──▶ target.rs applies requests in per-origin
//!          order; replies and acknowledgements go back
//!   MPI_Win_fence / post-start-complete-wait / lock-unlock-flush ──▶ sync.rs: wait on counts
//! ```
//!
//! **The model.** Active messages, as MPICH's CH3 device does them: an operation is a
//! request message on the window's own context (a duplicate of its communicator), applied by
//! the target's progress engine whenever the target turns it (any MPI call that waits or
//! tests). Long data follows the request as a message of its own, so it moves as every long
//! message does here: BIP's rendezvous, one copy by the NIC layer, landing straight in the
//! target window (a put) or in the origin's buffer (a get) when the data is one block there.
//! Accumulates are applied one request at a time by one thread, so they are atomic against
//! each other. The target side needs nothing from the program between synchronization calls
//! except that it calls MPI now and then (passive target: MPI 3.1 §11.7 allows progress to
//! wait for that).
//!
//! **The device's data path (VMMC).** A message-path window whose memory is fixed (created,
//! allocated, shared; not dynamic) is also registered with the device under the channel, and
//! every process learns every key at creation (`api::create`). A put or get whose size the
//! route favours (`state::DeviceSizes`: single-copy puts of 16-64 KiB on one host; puts of
//! 4-64 KiB and gets from 4 KiB across hosts), to a target whose epoch is known to be open
//! (a lock granted, a fence or start under way: [`sync`]), is then no request at all: a
//! deliberate update into the target's window, or a read out of it, per block of the target
//! type ([`origin`]). On one host the bytes are in place when the call returns, with no action
//! by the target; across hosts they travel as frames on the connection the target's next
//! acknowledgement comes back on, applied by its device before it reads the flush, unlock or
//! complete request behind them. Accumulates stay requests (atomicity), and so does
//! everything when `MPI_RMA_VMMC=0` or the channel offers no device access (`fm`, `fm1`).
//!
//! **One host.** An allocated or shared window whose processes are all on one host lives in
//! one memory file they all map, and its operations are the origin's own loads and stores,
//! with locks in the file ([`direct`]): no message, nothing for the target to do.
//!
//! **Memory.** `MPI_Win_create` exposes the program's buffer; `MPI_Win_allocate` maps fresh
//! zeroed pages; `MPI_Win_allocate_shared` maps one memory file shared by the window's
//! processes (all on one host), so `MPI_Win_shared_query` hands out pointers the peers load
//! and store directly; a dynamic window exposes what is attached, addressed by
//! `MPI_Get_address` values. Every window is `MPI_WIN_UNIFIED`.
//!
//! **Owns** the window table ([`WinTable`]) and the engine hook ([`state::Rma`]). **Entry:**
//! the C functions in `api`; error handling asks the table for a window's handler
//! ([`WinTable::errhandler`]).

mod api;
mod direct;
mod incoming;
mod memory;
mod origin;
mod state;
mod sync;
mod target;
mod wire;

use crate::abi::*;
use crate::attr::Attrs;
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};
use crate::handle::{Kind, Table};
use crate::info::Hints;
use memory::Owned;
use mpich_channel::{Engine, HookId};
use state::{Rma, WinState};
use std::ffi::{c_int, c_void};

/// What a window knows of one of its processes.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Peer {
    /// Bytes of its window.
    pub size: usize,
    pub disp_unit: usize,
    /// Where its part of a shared window lies in this process (`MPI_Win_shared_query`).
    pub shared_base: usize,
}

/// The synchronization this process is in on a window, as an origin and as a target.
#[derive(Debug, Default)]
pub(crate) struct Epochs {
    /// A fence opened an epoch (every target accessible).
    pub fence: bool,
    /// Operations were issued since the last fence (the fence epoch is then under way, not
    /// just possible: MPI 3.1 §11.5.1, a fence starts an epoch only if operations follow).
    pub fence_used: bool,
    /// PSCW: the targets of the access epoch `MPI_Win_start` opened (window ranks).
    pub access: Option<Vec<usize>>,
    /// PSCW: the origins of the exposure epoch `MPI_Win_post` opened.
    pub exposure: Option<Vec<usize>>,
    /// Passive target: the lock held on each target (`MPI_LOCK_SHARED`/`EXCLUSIVE`), and
    /// whether it was taken with `MPI_MODE_NOCHECK` (no lock message).
    pub locks: Vec<Option<(c_int, bool)>>,
    /// `MPI_Win_lock_all` holds a shared lock on every target.
    pub lock_all: Option<bool>,
}

impl Epochs {
    /// Whether an operation on `target` is allowed now.
    pub fn can_access(&self, target: usize) -> bool {
        self.fence
            || self.lock_all.is_some()
            || self.locks.get(target).is_some_and(Option::is_some)
            || self.access.as_ref().is_some_and(|g| g.contains(&target))
    }

    /// Whether a passive-target epoch covers `target` (request-based operations need one).
    pub fn passive(&self, target: usize) -> bool {
        self.lock_all.is_some() || self.locks.get(target).is_some_and(Option::is_some)
    }

    /// Whether a flush of `target` (`None`: of every target) is allowed: a passive-target
    /// epoch covers it (for every target, any lock will do).
    pub fn flushable(&self, target: Option<usize>) -> bool {
        match target {
            Some(t) => self.passive(t),
            None => self.lock_all.is_some() || self.locks.iter().any(Option::is_some),
        }
    }

    /// Closes a fence epoch no operation used, for another kind of epoch to start; an error
    /// if operations were issued in it.
    pub fn leave_unused_fence(&mut self, call: &str) -> MpiResult<()> {
        if self.fence && self.fence_used {
            return Err(MpiError::new(
                MPI_ERR_RMA_SYNC,
                format!("{call} was called inside a fence epoch with operations in it (end it with MPI_Win_fence(MPI_MODE_NOSUCCEED, win))"),
            ));
        }
        self.fence = false;
        Ok(())
    }

    /// Whether any epoch other than a fence's is open.
    pub fn open(&self) -> bool {
        self.access.is_some()
            || self.exposure.is_some()
            || self.lock_all.is_some()
            || self.locks.iter().any(Option::is_some)
    }
}

/// A window.
pub(crate) struct Win {
    pub handle: MPI_Win,
    /// The window's own communicator (a duplicate of the one it was made on).
    pub comm: CommIdx,
    /// Its state in the engine's hook.
    pub slot: usize,
    pub flavor: c_int,
    /// The values `MPI_Win_get_attr` hands out (addresses of the last four).
    pub base: *mut c_void,
    pub size_attr: MPI_Aint,
    pub disp_unit_attr: c_int,
    pub flavor_attr: c_int,
    pub model_attr: c_int,
    pub peers: Vec<Peer>,
    /// Memory the window mapped (allocated and shared windows), unmapped when it is dropped.
    pub _mapped: Option<Owned>,
    /// A window on one host's shared memory: operations are loads and stores (`direct`).
    pub direct: Option<direct::Direct>,
    pub name: String,
    pub errhandler: MPI_Errhandler,
    pub attrs: Attrs,
    pub hints: Hints,
    pub epochs: Epochs,
}

/// Every window, and the engine hook they share.
pub(crate) struct WinTable {
    wins: Table<Box<Win>>,
    hook: Option<HookId>,
}

impl WinTable {
    pub fn new() -> WinTable {
        WinTable {
            wins: Table::new(Kind::Win),
            hook: None,
        }
    }

    /// The window `h` names, or `MPI_ERR_WIN`.
    pub fn get(&self, h: MPI_Win) -> MpiResult<&Win> {
        self.wins.get(h).map(|w| &**w).ok_or_else(|| invalid_win(h))
    }

    pub fn get_mut(&mut self, h: MPI_Win) -> MpiResult<&mut Win> {
        self.wins
            .get_mut(h)
            .map(|w| &mut **w)
            .ok_or_else(|| invalid_win(h))
    }

    /// The error handler of window `h` and its label, if it is a live window.
    pub fn errhandler(&self, h: MPI_Win) -> Option<(MPI_Errhandler, String)> {
        self.wins.get(h).map(|w| (w.errhandler, w.label()))
    }

    /// The engine's hook, registered on first use.
    fn hook(&mut self, engine: &mut Engine) -> HookId {
        *self
            .hook
            .get_or_insert_with(|| engine.register(Box::<Rma>::default()))
    }

    fn insert(&mut self, w: Win) -> MpiResult<MPI_Win> {
        let (idx, h) = self
            .wins
            .insert(Box::new(w))
            .ok_or_else(|| MpiError::new(MPI_ERR_NO_MEM, "the process has made 2^26 windows"))?;
        let _ = idx;
        self.wins.get_mut(h).expect("just inserted").handle = h;
        Ok(h)
    }

    fn remove(&mut self, h: MPI_Win) -> Option<Box<Win>> {
        self.wins.remove(h)
    }
}

impl Win {
    /// How messages name the window: its name, or its handle.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("window 0x{:08x}", self.handle)
        } else {
            format!("window {:?}", self.name)
        }
    }
}

/// The window's state in the engine's hook, with the point-to-point engine.
pub(crate) fn state(
    engine: &mut Engine,
    hook: HookId,
    slot: usize,
) -> (&mut WinState, &mut mpich_channel::Adi) {
    let (rma, adi) = engine
        .hook_with_p2p::<Rma>(hook)
        .expect("the window hook is registered");
    (rma.get_mut(slot).expect("a live window has its state"), adi)
}

#[cold]
fn invalid_win(h: MPI_Win) -> MpiError {
    let detail = if h == MPI_WIN_NULL {
        "the window is MPI_WIN_NULL".to_string()
    } else {
        format!("0x{h:08x} is not a window (freed, or never made)")
    };
    MpiError::new(MPI_ERR_WIN, detail)
}
