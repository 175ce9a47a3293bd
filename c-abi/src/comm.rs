//! Communicators: the handle table, rank translation, and `MPI_Comm_size`, `MPI_Comm_rank`,
//! `MPI_Comm_get_attr`.
//!
//! A communicator is a group of processes with its own message space. Here that space is a
//! pair of engine context ids: one for point-to-point traffic and one for the library's own
//! collective traffic (so a barrier never matches a user's receive). `MPI_COMM_WORLD` uses
//! contexts 0 and 1, `MPI_COMM_SELF` 2 and 3; communicators created later (the next issue)
//! take pairs from 4 up. Ranks in a communicator ("local") are translated to ranks in the job
//! ("global", the engine's) on the way down, and back in statuses on the way up.

use crate::abi::*;
use crate::cptr::Out;
use crate::error::{MpiError, MpiResult};
use crate::export::mpi_fn;
use mpich_channel::{ANY_SOURCE, TAG_UB};
use std::ffi::{c_int, c_void};

/// The index of a communicator in the [`CommTable`].
pub(crate) type CommIdx = u32;
pub(crate) const WORLD: CommIdx = 0;
pub(crate) const SELF: CommIdx = 1;

/// Who is in a communicator, as engine (global) ranks.
#[derive(Debug, Clone, Copy)]
enum Members {
    /// Every rank of the job, local rank = global rank.
    All,
    /// One process: local rank 0 is global rank `0`.
    One(usize),
}

/// One communicator.
#[derive(Debug)]
pub(crate) struct Comm {
    /// Its name in messages (`MPI_COMM_WORLD`).
    pub name: &'static str,
    /// Engine context of point-to-point messages.
    pub ctx: u16,
    /// Engine context of the library's collective messages.
    pub coll_ctx: u16,
    pub size: usize,
    /// This process's rank in it.
    pub rank: usize,
    members: Members,
    pub errhandler: MPI_Errhandler,
}

impl Comm {
    /// The engine rank of local rank `local` (< size).
    #[inline(always)]
    pub fn to_global(&self, local: usize) -> usize {
        match self.members {
            Members::All => local,
            Members::One(me) => me,
        }
    }

    /// The local rank of an engine rank, for statuses (`MPI_ANY_SOURCE` and `MPI_PROC_NULL`
    /// pass through).
    #[inline(always)]
    pub fn to_local(&self, global: c_int) -> c_int {
        match self.members {
            Members::One(me) if global == me as c_int => 0,
            _ => global,
        }
    }

    /// A destination rank: `None` for `MPI_PROC_NULL`, else its engine rank.
    #[inline(always)]
    pub fn dest(&self, rank: c_int) -> MpiResult<Option<usize>> {
        if rank >= 0 && (rank as usize) < self.size {
            Ok(Some(self.to_global(rank as usize)))
        } else if rank == MPI_PROC_NULL {
            Ok(None)
        } else {
            Err(self.bad_rank(rank, "MPI_PROC_NULL"))
        }
    }

    /// A source rank: `None` for `MPI_PROC_NULL`, else its engine rank or `MPI_ANY_SOURCE`.
    #[inline(always)]
    pub fn source(&self, rank: c_int) -> MpiResult<Option<c_int>> {
        if rank >= 0 && (rank as usize) < self.size {
            Ok(Some(self.to_global(rank as usize) as c_int))
        } else if rank == MPI_ANY_SOURCE {
            Ok(Some(ANY_SOURCE))
        } else if rank == MPI_PROC_NULL {
            Ok(None)
        } else {
            Err(self.bad_rank(rank, "MPI_ANY_SOURCE, MPI_PROC_NULL"))
        }
    }

    #[cold]
    fn bad_rank(&self, rank: c_int, specials: &str) -> MpiError {
        MpiError::new(
            MPI_ERR_RANK,
            format!(
                "rank {rank} is not in {} (valid: 0..={}, {specials})",
                self.name,
                self.size - 1
            ),
        )
    }
}

/// Every communicator of the process.
pub(crate) struct CommTable {
    comms: [Comm; 2],
}

impl CommTable {
    /// The predefined communicators of a job of `size` ranks in which this process is `rank`.
    pub fn new(rank: usize, size: usize) -> CommTable {
        let world = Comm {
            name: "MPI_COMM_WORLD",
            ctx: 0,
            coll_ctx: 1,
            size,
            rank,
            members: Members::All,
            errhandler: MPI_ERRORS_ARE_FATAL,
        };
        let self_ = Comm {
            name: "MPI_COMM_SELF",
            ctx: 2,
            coll_ctx: 3,
            size: 1,
            rank: 0,
            members: Members::One(rank),
            errhandler: MPI_ERRORS_ARE_FATAL,
        };
        CommTable {
            comms: [world, self_],
        }
    }

    /// Decodes a handle: `MPI_ERR_COMM` unless it names a communicator of this process.
    #[inline(always)]
    pub fn lookup(&self, handle: MPI_Comm) -> MpiResult<(CommIdx, &Comm)> {
        let idx = match handle {
            MPI_COMM_WORLD => WORLD,
            MPI_COMM_SELF => SELF,
            _ => return Err(invalid_comm(handle)),
        };
        Ok((idx, &self.comms[idx as usize]))
    }

    pub fn lookup_mut(&mut self, handle: MPI_Comm) -> MpiResult<&mut Comm> {
        let (idx, _) = self.lookup(handle)?;
        Ok(&mut self.comms[idx as usize])
    }

    #[inline(always)]
    pub fn get(&self, idx: CommIdx) -> &Comm {
        &self.comms[idx as usize]
    }
}

#[cold]
fn invalid_comm(handle: MPI_Comm) -> MpiError {
    let detail = if handle == MPI_COMM_NULL {
        "the communicator is MPI_COMM_NULL".to_string()
    } else {
        format!("0x{handle:08x} is not a communicator (this library has MPI_COMM_WORLD and MPI_COMM_SELF)")
    };
    MpiError::new(MPI_ERR_COMM, detail)
}

// ---- Values of the predefined attributes (MPI_Comm_get_attr hands out their addresses) ----

static ATTR_TAG_UB: c_int = TAG_UB;
/// No process is the "host" (MPI's definition: `MPI_PROC_NULL`).
static ATTR_HOST: c_int = MPI_PROC_NULL;
/// Every process can do I/O.
static ATTR_IO: c_int = MPI_ANY_SOURCE;
/// `MPI_Wtime` reads each host's own monotonic clock; ranks on different hosts (the TCP wire)
/// do not share it, so the library does not promise a global clock.
static ATTR_WTIME_IS_GLOBAL: c_int = 0;
static ATTR_APPNUM: c_int = 0;
static ATTR_LASTUSEDCODE: c_int = MPI_ERR_LASTCODE;

mpi_fn! {
    /// `MPI_Comm_size`: the number of processes in `comm`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: MPI_Comm, size: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (_, c) = rt.comms.lookup(comm)?;
        Out::new(size, "size")?.set(c.size as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_rank`: this process's rank in `comm`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: MPI_Comm, rank: *mut c_int) |st| {
        let rt = st.runtime()?;
        let (_, c) = rt.comms.lookup(comm)?;
        Out::new(rank, "rank")?.set(c.rank as c_int);
        Ok(())
    }
}

mpi_fn! {
    /// `MPI_Comm_get_attr` for the predefined attributes (`MPI_TAG_UB`, `MPI_HOST`, `MPI_IO`,
    /// `MPI_WTIME_IS_GLOBAL`, `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`, `MPI_LASTUSEDCODE`). As the C
    /// binding says, `attribute_val` is really a `void **`: it receives a pointer to the value.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: MPI_Comm,
        comm_keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) |st| {
        let rt = st.runtime()?;
        let (idx, _) = rt.comms.lookup(comm)?;
        let value_out = Out::new(attribute_val.cast::<*const c_int>(), "attribute_val").map_err(|e| e.on(idx))?;
        let flag_out = Out::new(flag, "flag").map_err(|e| e.on(idx))?;
        let value: &c_int = match comm_keyval {
            MPI_TAG_UB => &ATTR_TAG_UB,
            MPI_HOST => &ATTR_HOST,
            MPI_IO => &ATTR_IO,
            MPI_WTIME_IS_GLOBAL => &ATTR_WTIME_IS_GLOBAL,
            MPI_UNIVERSE_SIZE => &rt.universe_size,
            MPI_APPNUM => &ATTR_APPNUM,
            MPI_LASTUSEDCODE => &ATTR_LASTUSEDCODE,
            MPI_KEYVAL_INVALID => {
                return Err(MpiError::new(MPI_ERR_KEYVAL, "the keyval is MPI_KEYVAL_INVALID").on(idx))
            }
            other => {
                return Err(MpiError::new(
                    MPI_ERR_KEYVAL,
                    format!("0x{other:08x} is not an attribute key (predefined keys: MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE)"),
                )
                .on(idx))
            }
        };
        value_out.set(value as *const c_int);
        flag_out.set(1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_translate_both_ways() {
        let t = CommTable::new(3, 4);
        let (_, world) = t.lookup(MPI_COMM_WORLD).unwrap();
        let (_, me) = t.lookup(MPI_COMM_SELF).unwrap();
        assert_eq!(world.dest(2).unwrap(), Some(2));
        assert_eq!(me.dest(0).unwrap(), Some(3));
        assert_eq!(me.to_local(3), 0);
        assert_eq!(world.to_local(3), 3);
        assert_eq!(world.dest(MPI_PROC_NULL).unwrap(), None);
        assert_eq!(world.source(MPI_ANY_SOURCE).unwrap(), Some(ANY_SOURCE));
        assert_eq!(world.dest(4).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(world.dest(MPI_ANY_SOURCE).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(me.source(1).unwrap_err().class, MPI_ERR_RANK);
        assert_eq!(t.lookup(MPI_COMM_NULL).unwrap_err().class, MPI_ERR_COMM);
        assert_eq!(t.lookup(12345).unwrap_err().class, MPI_ERR_COMM);
    }
}
