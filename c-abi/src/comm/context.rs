//! Context ids: which engine contexts a communicator's messages travel on.
//!
//! Every communicator takes a pair of engine contexts `(2k, 2k + 1)`:
//! point-to-point and collective traffic. A new communicator takes the lowest pair that no
//! member uses (MPICH's method): each process offers the bitmask of the pairs it has free, the
//! members AND the masks (an allreduce over the parent), and everyone takes the lowest bit left.
//! A process that will not be in the new communicator still takes part in the agreement but
//! keeps the pair free: only members ever send on it, and any later communicator that
//! includes one of them avoids it. The agreement itself is `make::agree`'s, under the
//! protocol of `agree` (one agreement at a time may offer a process's mask).

use crate::error::{MpiError, MpiResult};

/// How many context pairs exist: `MASK_WORDS * 64` (8192 contexts).
pub(crate) const MASK_WORDS: usize = 64;

/// The context pairs one process has free (bit set = free).
#[derive(Debug, Clone)]
pub(crate) struct ContextMask {
    words: [u64; MASK_WORDS],
}

impl ContextMask {
    pub fn new() -> ContextMask {
        ContextMask {
            words: [u64::MAX; MASK_WORDS],
        }
    }

    pub fn words(&self) -> [u64; MASK_WORDS] {
        self.words
    }

    /// Marks the pair of context `ctx` used.
    pub fn take(&mut self, ctx: u16) {
        let pair = ctx as usize / 2;
        self.words[pair / 64] &= !(1 << (pair % 64));
    }

    /// Marks the pair of context `ctx` free again.
    pub fn release(&mut self, ctx: u16) {
        let pair = ctx as usize / 2;
        self.words[pair / 64] |= 1 << (pair % 64);
    }
}

/// The lowest pair free in an agreed mask: its point-to-point context.
pub(crate) fn lowest_free(words: &[u64]) -> MpiResult<u16> {
    for (i, w) in words.iter().enumerate() {
        if *w != 0 {
            let pair = i * 64 + w.trailing_zeros() as usize;
            return Ok((pair * 2) as u16);
        }
    }
    Err(MpiError::new(
        crate::abi::MPI_ERR_OTHER,
        format!(
            "no context id is free on every member: at most {} communicators can exist at once; free some with MPI_Comm_free",
            MASK_WORDS * 64
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_give_the_lowest_common_pair() {
        let mut a = ContextMask::new();
        a.take(0);
        a.take(2);
        assert_eq!(lowest_free(&a.words()).unwrap(), 4);
        a.take(4);
        let mut w = a.words();
        w[0] &= !(1 << 3);
        assert_eq!(lowest_free(&w).unwrap(), 8);
        a.release(4);
        assert_eq!(lowest_free(&a.words()).unwrap(), 4);
        assert!(lowest_free(&[0; MASK_WORDS]).is_err());
    }
}
