//! The small exchanges communicator creation runs where no intracommunicator spans the
//! processes.
//!
//! On an intracommunicator the agreement is the collective module's
//! `allreduce_band_u64` (and `split` gathers colors and keys with its `allgather_bytes`).
//! Where no intracommunicator spans the processes (the local group of an intercommunicator,
//! the leaders of `MPI_Intercomm_create`, the groups a window or a file is made on), a [`Net`]
//! does it with plain blocking point-to-point on a collective context, with tags from
//! `0x3000_0000` up (the collectives use tags below `0x2000_0000`). Each of its algorithms is
//! deterministic and pairs the same (source, tag) in the same order on both sides, so the
//! engine's in-order matching keeps consecutive calls apart.
//!
//! **Waiting.** Each exchange reaches the engine and waits through a [`Progress`]: the
//! engine itself (its loop, holding the state, as every level below `MPI_THREAD_MULTIPLE`
//! does), or a blocking call's [`Calling`], whose waits let the process's lock go between
//! looks (`runtime::thread`): the same messages either way, so the two interoperate. The
//! buffers are the caller's own (not the state's), which is what lets the lock go.

use super::Comm;
use crate::error::{MpiError, MpiResult};
use crate::runtime::thread::Calling;
use mpich_channel::{Engine, ReqId, SendMode, Status};
use std::ffi::c_int;

/// How an exchange reaches the engine and waits (see the module's doc).
pub(crate) trait Progress {
    /// Runs `f` on the engine.
    fn on_engine<T>(&mut self, f: impl FnOnce(&mut Engine) -> MpiResult<T>) -> MpiResult<T>;

    /// Receives into `buf` (a blocking receive).
    fn recv(&mut self, buf: &mut [u8], src: c_int, tag: c_int, ctx: u16) -> MpiResult<Status>;

    /// Waits for request `id` and retires it.
    fn wait(&mut self, id: ReqId) -> MpiResult<Status>;

    /// Waits until `done` answers, the engine turning between looks.
    fn wait_for<T>(
        &mut self,
        done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T>;

    /// Runs `f`, which reaches nothing of the state (a wait on a socket to another job, the
    /// launcher's answer): a blocking call's [`Calling`] lets the process's lock go meanwhile
    /// ([`Calling::outside`]); the engine or the state held throughout just runs it.
    #[inline]
    fn outside<T>(&mut self, f: impl FnOnce() -> T) -> T {
        f()
    }
}

impl Progress for Engine {
    #[inline]
    fn on_engine<T>(&mut self, f: impl FnOnce(&mut Engine) -> MpiResult<T>) -> MpiResult<T> {
        f(self)
    }

    fn recv(&mut self, buf: &mut [u8], src: c_int, tag: c_int, ctx: u16) -> MpiResult<Status> {
        Ok(Engine::recv(self, buf, src, tag, ctx)?)
    }

    fn wait(&mut self, id: ReqId) -> MpiResult<Status> {
        Ok(Engine::wait(self, id)?)
    }

    fn wait_for<T>(
        &mut self,
        done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        self.block_on(done)
    }
}

impl Progress for Calling {
    fn on_engine<T>(&mut self, f: impl FnOnce(&mut Engine) -> MpiResult<T>) -> MpiResult<T> {
        f(&mut self.state().runtime()?.engine)
    }

    fn recv(&mut self, buf: &mut [u8], src: c_int, tag: c_int, ctx: u16) -> MpiResult<Status> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: `buf` outlives the request: it is waited for before this function returns
        // (or the process ends with an error, the engine failing).
        let id = self.on_engine(|e| Ok(unsafe { e.p2p().irecv(ptr, len, src, tag, ctx, 0) }?))?;
        Progress::wait(self, id)
    }

    fn wait(&mut self, id: ReqId) -> MpiResult<Status> {
        self.wait_for(|e| Ok(e.p2p().take(id)?))
    }

    fn wait_for<T>(
        &mut self,
        mut done: impl FnMut(&mut Engine) -> MpiResult<Option<T>>,
    ) -> MpiResult<T> {
        self.wait_until(|st| {
            let e = &mut st.runtime()?.engine;
            if let Some(t) = done(e)? {
                return Ok(Some(t));
            }
            e.poke()?;
            Ok(None)
        })
    }

    fn outside<T>(&mut self, f: impl FnOnce() -> T) -> T {
        Calling::outside(self, f)
    }
}

/// Tags of the exchanges (all >= 0x3000_0000; see the module documentation).
pub(crate) const TAG_ALLREDUCE: c_int = 0x3000_0000;
pub(crate) const TAG_BCAST: c_int = 0x3100_0000;
pub(crate) const TAG_ALLGATHER: c_int = 0x3200_0000;
pub(crate) const TAG_LEADERS: c_int = 0x3300_0000;

/// A set of processes exchanging on one context: `ranks[i]` is member i's engine rank.
pub(crate) struct Net {
    pub ranks: Vec<usize>,
    pub me: usize,
    pub ctx: u16,
}

impl Net {
    /// The local group of `c`, on its collective context.
    pub fn local(c: &Comm) -> Net {
        Net {
            ranks: (0..c.size).map(|i| c.local_global(i)).collect(),
            me: c.rank,
            ctx: c.coll_ctx,
        }
    }

    pub fn size(&self) -> usize {
        self.ranks.len()
    }

    /// Sends `out` to member `to` and receives `into` from member `from` (either may be absent).
    pub fn sendrecv(
        &self,
        engine: &mut (impl Progress + ?Sized),
        to: Option<usize>,
        out: &[u8],
        from: Option<usize>,
        into: &mut [u8],
        tag: c_int,
    ) -> MpiResult<()> {
        let sent = match to {
            // SAFETY: `out` outlives the request: it is waited for before this function returns.
            Some(t) => Some(engine.on_engine(|e| {
                Ok(unsafe {
                    e.p2p().isend(
                        crate::cptr::nonnull_or_dangling(out.as_ptr()),
                        out.len(),
                        self.ranks[t],
                        tag,
                        self.ctx,
                        SendMode::Standard,
                        0,
                    )
                }?)
            })?),
            None => None,
        };
        if let Some(f) = from {
            let s = engine.recv(into, self.ranks[f] as c_int, tag, self.ctx)?;
            if s.len != into.len() || s.truncated {
                return Err(MpiError::internal(format!(
                    "communicator set-up received {} bytes where {} were expected",
                    s.len,
                    into.len()
                )));
            }
        }
        if let Some(r) = sent {
            engine.wait(r)?;
        }
        Ok(())
    }

    /// Bitwise AND of every member's `words`, left in everyone's `words` (recursive doubling;
    /// the members beyond the largest power of two fold in first and get the result last).
    pub fn allreduce_band(
        &self,
        engine: &mut (impl Progress + ?Sized),
        words: &mut [u64],
        tag: c_int,
    ) -> MpiResult<()> {
        let n = self.size();
        let p = if n.is_power_of_two() {
            n
        } else {
            n.next_power_of_two() / 2
        };
        let me = self.me;
        let mut theirs = vec![0u64; words.len()];
        if me >= p {
            self.sendrecv(engine, Some(me - p), as_bytes(words), None, &mut [], tag)?;
            self.sendrecv(
                engine,
                None,
                &[],
                Some(me - p),
                as_bytes_mut(words),
                tag + 1,
            )?;
            return Ok(());
        }
        if me + p < n {
            self.sendrecv(
                engine,
                None,
                &[],
                Some(me + p),
                as_bytes_mut(&mut theirs),
                tag,
            )?;
            and_into(words, &theirs);
        }
        let mut distance = 1;
        let mut round = 2;
        while distance < p {
            let partner = me ^ distance;
            self.sendrecv(
                engine,
                Some(partner),
                as_bytes(words),
                Some(partner),
                as_bytes_mut(&mut theirs),
                tag + round,
            )?;
            and_into(words, &theirs);
            distance *= 2;
            round += 1;
        }
        if me + p < n {
            self.sendrecv(
                engine,
                Some(me + p),
                as_bytes(words),
                None,
                &mut [],
                tag + 1,
            )?;
        }
        Ok(())
    }

    /// Copies `root`'s `buf` into everyone's (binomial tree).
    pub fn bcast(
        &self,
        engine: &mut (impl Progress + ?Sized),
        root: usize,
        buf: &mut [u8],
        tag: c_int,
    ) -> MpiResult<()> {
        let n = self.size();
        let rel = (self.me + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if rel & mask != 0 {
                let parent = (rel - mask + root) % n;
                self.sendrecv(engine, None, &[], Some(parent), buf, tag)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if rel + mask < n {
                let child = (rel + mask + root) % n;
                self.sendrecv(engine, Some(child), buf, None, &mut [], tag)?;
            }
            mask >>= 1;
        }
        Ok(())
    }

    /// Every member's `mine` (all the same length), in member order, into `all` (ring).
    pub fn allgather(
        &self,
        engine: &mut (impl Progress + ?Sized),
        mine: &[u8],
        all: &mut [u8],
        tag: c_int,
    ) -> MpiResult<()> {
        let n = self.size();
        let b = mine.len();
        assert_eq!(
            all.len(),
            b * n,
            "allgather: the result holds one block per member"
        );
        all[self.me * b..(self.me + 1) * b].copy_from_slice(mine);
        let right = (self.me + 1) % n;
        let left = (self.me + n - 1) % n;
        let mut block = vec![0u8; b];
        for step in 0..n.saturating_sub(1) {
            let send_idx = (self.me + n - step) % n;
            let recv_idx = (self.me + n - step - 1) % n;
            let out = all[send_idx * b..(send_idx + 1) * b].to_vec();
            self.sendrecv(engine, Some(right), &out, Some(left), &mut block, tag)?;
            all[recv_idx * b..(recv_idx + 1) * b].copy_from_slice(&block);
        }
        Ok(())
    }
}

fn and_into(words: &mut [u64], other: &[u64]) {
    for (w, o) in words.iter_mut().zip(other) {
        *w &= o;
    }
}

pub(crate) fn as_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding and any alignment of u8 is satisfied; the length is exact.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), std::mem::size_of_val(words)) }
}

pub(crate) fn as_bytes_mut(words: &mut [u64]) -> &mut [u8] {
    // SAFETY: as above; every byte pattern is a valid u64, so writing bytes is sound.
    unsafe {
        std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), std::mem::size_of_val(words))
    }
}
