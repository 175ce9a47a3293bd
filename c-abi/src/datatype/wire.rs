//! A datatype's flattened form as bytes, for a peer that must lay data out by it: the
//! target of a one-sided operation receives the target datatype this way (as MPICH ships
//! its dataloops), rebuilds it ([`Datatype::decode`]) and packs, unpacks or reduces with it
//! as with a type of its own. Predefined types inside it are named by their handles, which
//! every process of the job shares.
//!
//! Layout (little endian): size, lb, ub, true lb, true ub, alignment (8 bytes each), the run
//! count and the leaf count (4 bytes each), then each run (offset, length: 8 bytes each) and
//! each leaf (type handle 4, unit 8, parts 4, uniform 4, n 8 bytes).

use super::layout::{Leaf, Run};
use super::{Contents, Datatype};

const FIXED: usize = 6 * 8 + 2 * 4;
const RUN: usize = 16;
const LEAF: usize = 28;

impl Datatype {
    /// Bytes of [`Datatype::encode`]'s output.
    pub fn encoded_len(&self) -> usize {
        FIXED + self.runs.len() * RUN + self.leaves.len() * LEAF
    }

    /// The predefined type this type is exactly one element of (a shipped `MPI_INT`), if any.
    pub fn single_basic(&self) -> Option<crate::abi::MPI_Datatype> {
        match &*self.leaves {
            [l] if l.n == 1 && self.is_contiguous() => Some(l.ty),
            _ => None,
        }
    }

    /// Appends the flattened type to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        for v in [
            self.size as i64,
            self.lb as i64,
            self.ub as i64,
            self.true_lb as i64,
            self.true_ub as i64,
            self.align as i64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.runs.len() as u32).to_le_bytes());
        out.extend_from_slice(&(self.leaves.len() as u32).to_le_bytes());
        for r in self.runs.iter() {
            out.extend_from_slice(&(r.offset as i64).to_le_bytes());
            out.extend_from_slice(&(r.len as u64).to_le_bytes());
        }
        for l in self.leaves.iter() {
            out.extend_from_slice(&l.ty.to_le_bytes());
            out.extend_from_slice(&(l.unit as u64).to_le_bytes());
            out.extend_from_slice(&(l.parts as u32).to_le_bytes());
            out.extend_from_slice(&u32::from(l.uniform).to_le_bytes());
            out.extend_from_slice(&(l.n as u64).to_le_bytes());
        }
    }

    /// Rebuilds a committed type from [`Datatype::encode`]'s bytes; `None` if they are not
    /// one (short, or runs that do not add up to the size).
    pub fn decode(b: &[u8]) -> Option<Datatype> {
        let mut r = Reader { b, at: 0 };
        let size = usize::try_from(r.i64()?).ok()?;
        let (lb, ub, true_lb, true_ub) = (
            r.i64()? as isize,
            r.i64()? as isize,
            r.i64()? as isize,
            r.i64()? as isize,
        );
        let align = usize::try_from(r.i64()?).ok()?;
        let (nruns, nleaves) = (r.u32()? as usize, r.u32()? as usize);
        if b.len() != FIXED + nruns * RUN + nleaves * LEAF {
            return None;
        }
        let runs: Vec<Run> = (0..nruns)
            .map(|_| {
                Some(Run {
                    offset: r.i64()? as isize,
                    len: r.u64()? as usize,
                })
            })
            .collect::<Option<_>>()?;
        let leaves: Vec<Leaf> = (0..nleaves)
            .map(|_| {
                Some(Leaf {
                    ty: r.u32()? as i32,
                    unit: r.u64()? as usize,
                    parts: r.u32()? as usize,
                    uniform: r.u32()? != 0,
                    n: r.u64()? as usize,
                })
            })
            .collect::<Option<_>>()?;
        if runs.iter().map(|r| r.len).sum::<usize>() != size {
            return None;
        }
        Some(Datatype {
            size,
            lb,
            ub,
            true_lb,
            true_ub,
            lb_marked: false,
            ub_marked: false,
            align,
            runs: runs.into(),
            leaves: leaves.into(),
            committed: true,
            contents: Contents::default(),
            name: String::new(),
        })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let v = self.b.get(self.at..self.at + N)?.try_into().ok()?;
        self.at += N;
        Some(v)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
}
