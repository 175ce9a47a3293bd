//! Buffered sends: the buffer of `MPI_Buffer_attach`, its accounting, `MPI_Buffer_attach` and
//! `MPI_Buffer_detach`.
//!
//! A buffered send (`MPI_Bsend`, `MPI_Ibsend`, a started `MPI_Bsend_init`) copies its message
//! into the buffer the program attached and returns; the copy is then sent as a standard send
//! from the buffer. Each message holds `len + MPI_BSEND_OVERHEAD` bytes of the buffer until its
//! send completes, which is exactly the MPI standard's rule for sizing the buffer: a program
//! that attaches the sum of its messages' sizes plus the overhead for each always fits, and a
//! message that does not fit is `MPI_ERR_BUFFER` (after the space of completed sends has been
//! reclaimed). The bookkeeping itself is kept here, not in the overhead bytes.
//!
//! Space is allocated first-fit among the messages in flight, kept sorted by offset; sends
//! mostly complete in order, so the buffer behaves like a ring. `MPI_Buffer_detach` (and
//! `MPI_Finalize`) wait until every buffered message has been sent; so does
//! `MPI_Buffer_flush` (MPI 4.1), which keeps the buffer attached. `MPI_Buffer_iflush` is its
//! nonblocking form: an engine operation over the sends in flight when it was called.
//!
//! **Lanes.** A buffered send on a communicator of lane `k` is sent by lane `k`'s engine (its
//! answers come back there); each message in flight remembers its lane, and the calls that
//! look at them all take every lane's engine ([`LaneEngines`]). `MPI_Buffer_iflush`'s
//! operation lives on lane 0: it first waits (holding the lock) for the buffered sends in
//! flight on other lanes, then watches lane 0's.

use crate::abi::*;
use crate::error::{MpiError, MpiResult};
use mpich_channel::{Adi, Engine, Operation, ReqId, SendMode, Status};
use std::ffi::c_int;

/// Bytes of the buffer each message needs besides its data.
const OVERHEAD: usize = MPI_BSEND_OVERHEAD as usize;

/// The program's attached buffer.
#[derive(Debug, Clone, Copy)]
struct Region {
    base: *mut u8,
    size: usize,
}

/// A message in flight from the buffer: bytes `offset..offset + len` (data then overhead),
/// sent by lane `lane`'s engine as its request `req`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    offset: usize,
    len: usize,
    req: ReqId,
    lane: usize,
}

/// Every lane's engine, by lane (lane 0 is the process's first engine).
pub(crate) trait LaneEngines {
    fn lane(&mut self, k: usize) -> &mut Engine;
}

/// One engine is lane 0 (the buffered sends of lanes other than 0 are not reached).
impl LaneEngines for Engine {
    fn lane(&mut self, k: usize) -> &mut Engine {
        debug_assert_eq!(
            k, 0,
            "a buffered send on lane {k} looked at with lane 0 only"
        );
        self
    }
}

/// The attached buffer and the buffered sends in flight from it.
pub(crate) struct BsendBuffer {
    region: Option<Region>,
    /// Sorted by offset, non-overlapping.
    pending: Vec<Pending>,
}

/// The first run of `need` free bytes in a buffer of `size` bytes whose used runs are
/// `pending`: its offset, and where it goes in `pending` to keep the order.
fn first_fit(pending: &[Pending], size: usize, need: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    for (i, p) in pending.iter().enumerate() {
        if p.offset - start >= need {
            return Some((start, i));
        }
        start = p.offset + p.len;
    }
    (size.checked_sub(start)? >= need).then_some((start, pending.len()))
}

impl BsendBuffer {
    pub const fn new() -> BsendBuffer {
        BsendBuffer {
            region: None,
            pending: Vec::new(),
        }
    }

    pub(crate) fn attach(&mut self, base: *mut u8, size: usize) -> MpiResult<()> {
        if let Some(r) = self.region {
            return Err(MpiError::new(
                MPI_ERR_BUFFER,
                format!("a buffer of {} bytes is attached already; detach it (MPI_Buffer_detach) before attaching another", r.size),
            ));
        }
        if base.is_null() && size > 0 {
            return Err(MpiError::new(
                MPI_ERR_BUFFER,
                format!("the buffer is NULL but its size is {size}"),
            ));
        }
        self.region = Some(Region { base, size });
        Ok(())
    }

    /// Copies `data` into the buffer and starts sending the copy (a standard send to the
    /// engine rank `dest`). Returns once the data is copied.
    pub fn send(
        &mut self,
        engine: &mut Engine,
        lane: usize,
        data: &[u8],
        dest: usize,
        tag: c_int,
        ctx: u16,
    ) -> MpiResult<()> {
        let Some(region) = self.region else {
            return Err(MpiError::new(
                MPI_ERR_BUFFER,
                format!(
                    "no buffer is attached; attach one of at least {} bytes with MPI_Buffer_attach",
                    data.len() + OVERHEAD
                ),
            ));
        };
        let need = data.len() + OVERHEAD;
        let fit = match first_fit(&self.pending, region.size, need) {
            Some(fit) => fit,
            None => {
                self.reap(engine, lane)?;
                first_fit(&self.pending, region.size, need)
                    .ok_or_else(|| self.full(need, region.size))?
            }
        };
        let (offset, position) = fit;
        // SAFETY: the region is the program's attached buffer of `size` bytes, which MPI lets
        // only the library touch while attached; offset + data.len() < offset + need <= size.
        let copy = unsafe { region.base.add(offset) };
        // SAFETY: `data` is the caller's send buffer and `copy` is in the attached one; they do
        // not overlap (MPI forbids passing the attached buffer as a send buffer).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), copy, data.len()) };
        // SAFETY: `copy` is non-NULL (inside the attached buffer), and its `data.len()` bytes
        // stay valid and unmodified until the send completes: this allocation is kept until
        // then, and detach waits for it.
        let req = unsafe {
            engine
                .p2p()
                .isend(copy, data.len(), dest, tag, ctx, SendMode::Standard, 0)
        }?;
        self.pending.insert(
            position,
            Pending {
                offset,
                len: need,
                req,
                lane,
            },
        );
        Ok(())
    }

    #[cold]
    fn full(&self, need: usize, size: usize) -> MpiError {
        let held: usize = self.pending.iter().map(|p| p.len).sum();
        MpiError::new(
            MPI_ERR_BUFFER,
            format!(
                "the attached buffer ({size} bytes) has no room for this message ({need} bytes with MPI_BSEND_OVERHEAD): {} buffered sends in progress hold {held} bytes; attach a larger buffer",
                self.pending.len()
            ),
        )
    }

    /// Turns lane `lane`'s engine once and frees the space of its buffered sends that
    /// completed (the caller reaches that lane only; [`BsendBuffer::reclaim`] frees the
    /// others' beforehand).
    fn reap(&mut self, engine: &mut Engine, lane: usize) -> MpiResult<()> {
        engine.poke()?;
        self.retire_on(engine, lane)
    }

    /// Frees the space of lane `lane`'s buffered sends that completed.
    fn retire_on(&mut self, engine: &mut Engine, lane: usize) -> MpiResult<()> {
        let mut i = 0;
        while i < self.pending.len() {
            let Pending { req, lane: l, .. } = self.pending[i];
            if l == lane && engine.p2p_ref().is_complete(req) {
                engine.p2p().take(req)?;
                self.pending.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Frees the space of every buffered send that completed, on every lane.
    pub fn reclaim(&mut self, engines: &mut impl LaneEngines) -> MpiResult<()> {
        let mut i = 0;
        while i < self.pending.len() {
            let Pending { req, lane, .. } = self.pending[i];
            let engine = engines.lane(lane);
            if engine.p2p_ref().is_complete(req) {
                engine.p2p().take(req)?;
                self.pending.remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Whether a buffered send is in flight on a lane other than 0.
    fn beyond_lane_zero(&self) -> bool {
        self.pending.iter().any(|p| p.lane != 0)
    }

    /// Whether every buffered message has been sent (the space of those that were is freed):
    /// one look of [`BsendBuffer::drain`], for a wait that lets the process's lock go (the
    /// look turns the lanes).
    pub fn settled(&mut self, engines: &mut impl LaneEngines) -> MpiResult<bool> {
        self.reclaim(engines)?;
        Ok(self.pending.is_empty())
    }

    /// Waits until every buffered message has been sent.
    pub fn drain(&mut self, engines: &mut impl LaneEngines) -> MpiResult<()> {
        if self.beyond_lane_zero() {
            // Sends on several lanes: turn each lane that has one, until none is left.
            let mut backoff = nic_model::wait::Backoff::new();
            loop {
                self.reclaim(engines)?;
                if self.pending.is_empty() {
                    return Ok(());
                }
                let mut lanes: Vec<usize> = self.pending.iter().map(|p| p.lane).collect();
                lanes.dedup();
                for k in lanes {
                    engines.lane(k).poke()?;
                }
                backoff.snooze();
            }
        }
        engines.lane(0).block_on(|e| {
            self.retire_on(e, 0)?;
            Ok::<_, MpiError>(self.pending.is_empty().then_some(()))
        })
    }

    /// `MPI_Buffer_iflush`: a request that completes once every buffered message in flight
    /// now has been sent out of the buffer (later ones are not waited for). Those in flight on
    /// lanes other than 0 are waited for here.
    pub fn iflush(&mut self, engines: &mut impl LaneEngines) -> MpiResult<ReqId> {
        if self.beyond_lane_zero() {
            self.drain(engines)?;
        }
        let engine = engines.lane(0);
        self.retire_on(engine, 0)?;
        let sends = self
            .pending
            .iter()
            .filter_map(|p| Some((p.req, engine.p2p_ref().generation(p.req)?)))
            .collect();
        engine
            .start(Box::new(Flush { sends }), crate::comm::WORLD)
            .map_err(MpiError::from)
    }

    /// Waits for the buffered sends, then gives the buffer back (`None` if none is attached).
    pub(crate) fn detach(
        &mut self,
        engines: &mut impl LaneEngines,
    ) -> MpiResult<Option<(*mut u8, usize)>> {
        self.drain(engines)?;
        Ok(self.region.take().map(|r| (r.base, r.size)))
    }
}

/// The operation of `MPI_Buffer_iflush`: over when each of the buffered sends it was given
/// is complete, or was retired by the buffer (its request's slot then no longer has the
/// generation it had: a slot reused exactly 256 times between two turns of the engine would
/// be mistaken for the send, which cannot happen while this operation is polled every turn).
struct Flush {
    sends: Vec<(ReqId, u8)>,
}

impl Operation for Flush {
    fn poll(&mut self, p2p: &mut Adi) -> mpich_channel::Result<Option<Status>> {
        self.sends
            .retain(|&(id, gen)| p2p.generation(id) == Some(gen) && !p2p.is_complete(id));
        Ok(self.sends.is_empty().then(Status::default))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(offset: usize, len: usize) -> Pending {
        Pending {
            offset,
            len,
            req: 0,
            lane: 0,
        }
    }

    #[test]
    fn first_fit_finds_gaps_in_order() {
        assert_eq!(first_fit(&[], 100, 100), Some((0, 0)));
        assert_eq!(first_fit(&[], 100, 101), None);
        let used = [p(0, 40), p(60, 20)];
        assert_eq!(first_fit(&used, 100, 20), Some((40, 1)));
        assert_eq!(first_fit(&used, 100, 21), None);
        assert_eq!(first_fit(&used, 101, 21), Some((80, 2)));
        assert_eq!(first_fit(&used, 101, 20), Some((40, 1)));
        let used = [p(10, 40)];
        assert_eq!(first_fit(&used, 100, 10), Some((0, 0)));
        assert_eq!(first_fit(&used, 100, 50), Some((50, 1)));
    }

    #[test]
    fn the_standard_sizing_rule_fits_exactly() {
        // Three messages of 1, 7 and 100 bytes fit a buffer of their sizes plus 3 overheads,
        // and a fourth message of any size does not.
        let mut used = Vec::new();
        let size = 1 + 7 + 100 + 3 * OVERHEAD;
        for len in [1, 7, 100] {
            let (offset, at) = first_fit(&used, size, len + OVERHEAD).expect("fits");
            used.insert(at, p(offset, len + OVERHEAD));
        }
        assert_eq!(first_fit(&used, size, OVERHEAD), None);
    }

    #[test]
    fn attach_rules() {
        let mut b = BsendBuffer::new();
        let mut mem = [0u8; 256];
        assert_eq!(
            b.attach(std::ptr::null_mut(), 10).unwrap_err().class,
            MPI_ERR_BUFFER
        );
        b.attach(mem.as_mut_ptr(), mem.len()).unwrap();
        assert_eq!(
            b.attach(mem.as_mut_ptr(), mem.len()).unwrap_err().class,
            MPI_ERR_BUFFER
        );
    }
}
