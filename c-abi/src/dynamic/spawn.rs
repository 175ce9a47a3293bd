//! `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple`: the root asks the launcher for the child
//! job (PMI-1 spawn, with the root's open port pre-put as `PARENT_ROOT_PORT_NAME`), tells the
//! other parents how it went, and every parent accepts the children's connection on that port.
//! The launcher's answer is waited for outside the process's lock (`Progress::outside`: under
//! `MPI_THREAD_MULTIPLE` the other threads' calls run meanwhile), as are the accept's waits.

use super::{link, make_intercomm, port};
use crate::abi::*;
use crate::comm::make::Steps;
use crate::comm::net::{Net, TAG_BCAST};
use crate::comm::CommIdx;
use crate::error::{MpiError, MpiResult};

/// The tag of the root's word about the spawn.
const TAG_SPAWNED: i32 = TAG_BCAST + 0x0060_0000;

/// The key the children find their parents' port under (MPICH's name).
pub(crate) const PARENT_PORT_KEY: &str = "PARENT_ROOT_PORT_NAME";

/// What a spawn gives every parent: the intercommunicator (`Err`: the spawn failed, nothing
/// runs) and the number of processes asked for (the length of `array_of_errcodes`).
pub(crate) struct Spawned {
    pub intercomm: MpiResult<MPI_Comm>,
    pub total: usize,
}

/// Asks the launcher to start `commands` (the root's; `None` elsewhere).
fn launch(commands: &[pmi::SpawnCommand], port: &str) -> MpiResult<()> {
    let preput = [(PARENT_PORT_KEY.to_string(), port.to_string())];
    match nic_model::net::launcher::with_client(|c| c.spawn(commands, &preput)) {
        None => Err(MpiError::new(
            MPI_ERR_SPAWN,
            "this process was not started by a launcher that can spawn (start it with mpirun or mpiexec.hydra)",
        )),
        Some(Err(e)) => Err(MpiError::new(MPI_ERR_SPAWN, format!("the launcher did not start the processes: {e}"))),
        Some(Ok(())) => Ok(()),
    }
}

/// The collective work of a spawn over the intracommunicator `idx`; `commands` is the root's.
pub(crate) fn spawn(
    a: &mut impl Steps,
    idx: CommIdx,
    root: usize,
    commands: Option<Vec<pmi::SpawnCommand>>,
) -> MpiResult<Spawned> {
    let net = a.cx(|cx| Ok(Net::local(cx.comms.get(idx))))?;
    let mut word = [0u64; 2];
    let mut open = None;
    let mut root_error = None;
    if net.me == root {
        let commands = commands.unwrap_or_default();
        let total: usize = commands.iter().map(|c| c.nprocs).sum();
        word[1] = total as u64;
        let started = a.outside(|| {
            port::open().and_then(|p| {
                launch(&commands, &p.name)?;
                Ok(p)
            })
        });
        match started {
            Ok(p) => open = Some(p),
            Err(e) => {
                word[0] = e.class as u64;
                root_error = Some(e);
            }
        }
    }
    let mut bytes: Vec<u8> = word.iter().flat_map(|w| w.to_le_bytes()).collect();
    net.bcast(a, root, &mut bytes, TAG_SPAWNED)?;
    let status = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    let total = u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes")) as usize;
    if status != 0 {
        let e = root_error.unwrap_or_else(|| {
            MpiError::new(
                status as i32,
                "the spawn failed at the root (its error says why)",
            )
        });
        return Ok(Spawned {
            intercomm: Err(e),
            total,
        });
    }
    let linked = link::accept(a, &net, root, open.as_ref())?;
    drop(open); // The port closes: the children are in.
    let intercomm = make_intercomm(a, idx, linked);
    Ok(Spawned { intercomm, total })
}
