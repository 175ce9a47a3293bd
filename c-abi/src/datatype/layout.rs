//! Composing type maps: the [`Builder`] every constructor uses.
//!
//! Every constructor is, in the end, "place `n` copies of type `t` at displacement `d`, one
//! extent apart", repeated over its blocks in type-map order ([`Builder::push`]). The builder
//! appends the copies' runs, merging a run into the previous one when they touch, and their
//! leaves, merging runs of one predefined type. Bounds follow MPICH (which the programs this
//! library runs were written against): the lower and upper bounds are the least and greatest
//! bounds of the copies, except that an `MPI_LB` / `MPI_UB` marker placed by this very
//! constructor (`MPI_Type_struct`) sets them; markers are not sticky beyond that, and a
//! resized type's bounds are ordinary bounds. A struct of different types is padded to the
//! alignment of its most aligned part, as the C struct is, unless it has a marker.

use super::{Contents, Datatype};
use crate::abi::MPI_Datatype;

/// One contiguous run of data: `len` bytes at `offset` from the element's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub offset: isize,
    pub len: usize,
}

/// `n` consecutive units of one predefined type in the type map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leaf {
    pub ty: MPI_Datatype,
    /// Bytes of data in one unit (12 for `MPI_DOUBLE_INT`).
    pub unit: usize,
    /// Basic elements in one unit (2 for the pairs).
    pub parts: usize,
    /// Whether the parts have one size, so a partial unit can be counted in parts.
    pub uniform: bool,
    pub n: usize,
}

/// A type map under construction.
#[derive(Default)]
pub(super) struct Builder {
    runs: Vec<Run>,
    leaves: Vec<Leaf>,
    size: usize,
    marked_lb: Option<isize>,
    marked_ub: Option<isize>,
    data_lb: Option<isize>,
    data_ub: Option<isize>,
    true_lb: Option<isize>,
    true_ub: Option<isize>,
    align: usize,
}

fn min(a: Option<isize>, b: isize) -> Option<isize> {
    Some(a.map_or(b, |a| a.min(b)))
}

fn max(a: Option<isize>, b: isize) -> Option<isize> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            align: 1,
            ..Builder::default()
        }
    }

    /// Appends `n` copies of `t`, the first at displacement `disp`, each one extent of `t`
    /// after the previous.
    pub fn push(&mut self, disp: isize, n: usize, t: &Datatype) {
        if n == 0 {
            return;
        }
        let ext = t.extent();
        let last = disp + (n as isize - 1) * ext;
        let (first_copy, last_copy) = (disp.min(last), disp.max(last));
        if t.lb_marked {
            self.marked_lb = min(self.marked_lb, t.lb + first_copy);
        } else if t.ub_marked {
            self.marked_ub = max(self.marked_ub, t.ub + last_copy);
        } else {
            self.data_lb = min(self.data_lb, t.lb + first_copy);
            self.data_ub = max(self.data_ub, t.ub + last_copy);
        }
        if t.size > 0 {
            self.true_lb = min(self.true_lb, t.true_lb + first_copy);
            self.true_ub = max(self.true_ub, t.true_ub + last_copy);
        }
        self.align = self.align.max(t.align);
        self.size += n * t.size;
        self.push_runs(disp, n, t);
        self.push_leaves(n, t);
    }

    fn push_runs(&mut self, disp: isize, n: usize, t: &Datatype) {
        if let [r] = &*t.runs {
            if t.size as isize == t.extent() {
                // Copies of a contiguous type are one run.
                return self.add_run(disp + r.offset, n * r.len);
            }
        }
        let ext = t.extent();
        for k in 0..n as isize {
            let base = disp + k * ext;
            for r in t.runs.iter() {
                self.add_run(base + r.offset, r.len);
            }
        }
    }

    #[inline]
    fn add_run(&mut self, offset: isize, len: usize) {
        if len == 0 {
            return;
        }
        if let Some(last) = self.runs.last_mut() {
            if last.offset + last.len as isize == offset {
                last.len += len;
                return;
            }
        }
        self.runs.push(Run { offset, len });
    }

    fn push_leaves(&mut self, n: usize, t: &Datatype) {
        if let [leaf] = &*t.leaves {
            return self.add_leaf(Leaf {
                n: leaf.n * n,
                ..*leaf
            });
        }
        for _ in 0..n {
            for leaf in t.leaves.iter() {
                self.add_leaf(*leaf);
            }
        }
    }

    fn add_leaf(&mut self, leaf: Leaf) {
        if let Some(last) = self.leaves.last_mut() {
            if last.ty == leaf.ty {
                last.n += leaf.n;
                return;
            }
        }
        self.leaves.push(leaf);
    }

    /// The finished type (not committed). `pad` rounds the extent up to the alignment of the
    /// parts, as a C struct is, unless a marker set a bound (`MPI_Type_create_struct` of
    /// different types).
    pub fn finish(self, contents: Contents, pad: bool) -> Datatype {
        // The standard's rule (MPI 3.1 §4.1.6): lb is the least marker or data displacement,
        // ub the greatest marker or data end; with nothing to take them from, 0. A map of only
        // an MPI_LB marker at 5 has lb 5, ub 0, extent -5 (as MPICH computes).
        let lb = self.marked_lb.or(self.data_lb).unwrap_or(0);
        let mut ub = self.marked_ub.or(self.data_ub).unwrap_or(0);
        let marked = self.marked_lb.is_some() || self.marked_ub.is_some();
        if pad && !marked && self.align > 1 {
            let a = self.align as isize;
            let ext = ub - lb;
            ub = lb + (ext + a - 1).div_euclid(a) * a;
        }
        // No data: true lb and true extent are 0.
        let true_lb = self.true_lb.unwrap_or(0);
        Datatype {
            size: self.size,
            lb,
            ub,
            true_lb,
            true_ub: self.true_ub.unwrap_or(true_lb),
            lb_marked: false,
            ub_marked: false,
            align: self.align,
            runs: self.runs.into(),
            leaves: self.leaves.into(),
            committed: false,
            contents,
            name: String::new(),
        }
    }
}

/// `t` with its bounds set explicitly (`MPI_Type_create_resized`).
pub(super) fn resized(t: &Datatype, lb: isize, extent: isize, contents: Contents) -> Datatype {
    Datatype {
        lb,
        ub: lb + extent,
        lb_marked: false,
        ub_marked: false,
        committed: false,
        contents,
        name: String::new(),
        ..t.clone()
    }
}
