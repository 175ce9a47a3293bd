//! The launcher this process was started by, when it speaks PMI (our `mpirun`, MPICH's Hydra,
//! Slurm's `srun --mpi=pmi2`): the client is kept for the whole run, since the layers above
//! end the job through it (`MPI_Abort`) and say goodbye through it (`MPI_Finalize`).

use super::wireup::Exchange;
use crate::error::Rank;
use std::sync::Mutex;

static CLIENT: Mutex<Option<pmi::Client>> = Mutex::new(None);

/// Whether this process was started by a PMI launcher (it has the environment of one).
pub fn present() -> bool {
    matches!(pmi::env::read(|name| std::env::var(name).ok()), Ok(Some(_)))
}

/// Connects to the launcher named by the environment, if any; the client is then kept here.
/// `Ok(false)` when no launcher is named.
pub fn connect() -> Result<bool, String> {
    let mut slot = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        return Ok(true);
    }
    match pmi::Client::from_env().map_err(|e| e.to_string())? {
        Some(c) => {
            *slot = Some(c);
            Ok(true)
        }
        None => Ok(false),
    }
}

/// Runs `f` with the launcher's client as an [`Exchange`]; `None` when there is none.
pub fn with_exchange<R>(f: impl FnOnce(&mut dyn Exchange) -> R) -> Option<R> {
    let mut slot = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    slot.as_mut().map(|c| f(&mut PmiExchange(c)))
}

/// Runs `f` with the launcher's PMI client itself (spawning, pre-put keys, appnum); `None`
/// when there is none.
pub fn with_client<R>(f: impl FnOnce(&mut pmi::Client) -> R) -> Option<R> {
    let mut slot = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    slot.as_mut().map(f)
}

/// Asks the launcher to end the job with `code` (`MPI_Abort`); `false` when there is no
/// launcher to ask, or it did not take the request.
pub fn abort(code: i32, message: &str) -> bool {
    let mut slot = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    match slot.as_mut() {
        Some(c) => c.abort(code, message).is_ok(),
        None => false,
    }
}

/// Tells the launcher this process finished cleanly (`MPI_Finalize`), and lets it go.
pub fn finalize() -> Result<(), String> {
    let client = CLIENT.lock().unwrap_or_else(|p| p.into_inner()).take();
    match client {
        Some(c) => c.finalize().map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

/// A PMI client seen as the wire-up's key-value space.
struct PmiExchange<'a>(&'a mut pmi::Client);

impl Exchange for PmiExchange<'_> {
    fn rank(&self) -> Rank {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), String> {
        self.0.put(key, value).map_err(|e| e.to_string())
    }
    fn fence(&mut self) -> Result<(), String> {
        self.0.fence().map_err(|e| e.to_string())
    }
    fn get(&mut self, rank: Rank, key: &str) -> Result<String, String> {
        self.0.get(rank, key).map_err(|e| e.to_string())
    }
}
