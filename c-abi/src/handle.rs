//! The handle table every kind of MPI object lives in: communicators, groups, datatypes,
//! operations, info objects, attribute keys, error handlers (and next, windows and files:
//! one more [`Kind`] each). Requests are the progress engine's; their handles use the same
//! layout with a generation in the index bits (`p2p::request`).
//!
//! A handle is an `int` in MPICH's encoding, so that programs compiled against MPICH's
//! `mpi.h` pass the values they expect: the top two bits say "direct" (`0b10`), the next four
//! the object's kind ([`Kind`]), the low 26 bits the object's index in its table. Predefined
//! objects (`MPI_COMM_WORLD`, `MPI_INT`, ...) are MPICH's "builtin" handles; each table that
//! has them recognizes them before it looks here.
//!
//! An object's slot goes through three states:
//!
//! ```text
//!   insert ──▶ Live (the handle names it) ──remove──▶ free (the index is reused)
//!                  └──retire──▶ Retired: the handle is refused, but operations that took the
//!                               object while it was live still reach it by index (MPI lets a
//!                               program free a communicator, an operation or a datatype that a
//!                               pending operation uses) ──release──▶ free
//! ```
//! Indices of freed slots are reused (lowest-last, through a stack), so a stale handle of a
//! removed object may name a later one: MPICH has the same property; programs must not use a
//! freed handle.

use std::ffi::c_int;

/// MPICH's object kinds, bits 26..30 of a handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Kind {
    Comm = 0x1,
    Group = 0x2,
    Datatype = 0x3,
    Errhandler = 0x5,
    Op = 0x6,
    Info = 0x7,
    Win = 0x8,
    Keyval = 0x9,
    Request = 0xb,
    Session = 0xe,
}

/// The "direct" handle kind bits.
const DIRECT: u32 = 0b10 << 30;
const KIND_SHIFT: u32 = 26;
const KIND_MASK: u32 = 0xfc00_0000;
/// Indices fit in the 26 low bits.
pub(crate) const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// The direct handle of object `index` of kind `kind`.
#[inline(always)]
pub(crate) const fn direct(kind: Kind, index: u32) -> c_int {
    (DIRECT | (kind as u32) << KIND_SHIFT | index) as c_int
}

/// The index a direct handle of kind `kind` names, if `h` is one.
#[inline(always)]
pub(crate) const fn index_of(kind: Kind, h: c_int) -> Option<u32> {
    let h = h as u32;
    if h & KIND_MASK == DIRECT | (kind as u32) << KIND_SHIFT {
        Some(h & INDEX_MASK)
    } else {
        None
    }
}

enum Slot<T> {
    Free,
    Live(T),
    Retired(T),
}

/// The objects of one kind, by index.
pub(crate) struct Table<T> {
    kind: Kind,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Table<T> {
    pub const fn new(kind: Kind) -> Table<T> {
        Table {
            kind,
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// Stores `value` and returns its index and handle; `None` when the 26-bit index space is
    /// used up.
    pub fn insert(&mut self, value: T) -> Option<(u32, c_int)> {
        let index = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Slot::Live(value);
                i
            }
            None => {
                if self.slots.len() > INDEX_MASK as usize {
                    return None;
                }
                self.slots.push(Slot::Live(value));
                (self.slots.len() - 1) as u32
            }
        };
        self.live += 1;
        Some((index, direct(self.kind, index)))
    }

    /// The index of the live object `h` names.
    #[inline]
    pub fn index(&self, h: c_int) -> Option<u32> {
        let i = index_of(self.kind, h)?;
        matches!(self.slots.get(i as usize), Some(Slot::Live(_))).then_some(i)
    }

    /// The live object `h` names.
    #[inline]
    pub fn get(&self, h: c_int) -> Option<&T> {
        match self.slots.get(index_of(self.kind, h)? as usize)? {
            Slot::Live(v) => Some(v),
            _ => None,
        }
    }

    #[inline]
    pub fn get_mut(&mut self, h: c_int) -> Option<&mut T> {
        match self.slots.get_mut(index_of(self.kind, h)? as usize)? {
            Slot::Live(v) => Some(v),
            _ => None,
        }
    }

    /// The object at `index`, live or retired (for an operation that took it while it was
    /// live).
    #[inline]
    pub fn at(&self, index: u32) -> Option<&T> {
        match self.slots.get(index as usize)? {
            Slot::Live(v) | Slot::Retired(v) => Some(v),
            Slot::Free => None,
        }
    }

    #[inline]
    pub fn at_mut(&mut self, index: u32) -> Option<&mut T> {
        match self.slots.get_mut(index as usize)? {
            Slot::Live(v) | Slot::Retired(v) => Some(v),
            Slot::Free => None,
        }
    }

    /// Removes the live object `h` names; its index is free for reuse.
    pub fn remove(&mut self, h: c_int) -> Option<T> {
        let i = self.index(h)?;
        let Slot::Live(v) = std::mem::replace(&mut self.slots[i as usize], Slot::Free) else {
            unreachable!("index() found it live")
        };
        self.free.push(i);
        self.live -= 1;
        Some(v)
    }

    /// Retires the live object `h` names: its handle is refused from now on, but it stays
    /// reachable by index until [`Table::release`]. Returns its index.
    pub fn retire(&mut self, h: c_int) -> Option<u32> {
        let i = self.index(h)?;
        let slot = &mut self.slots[i as usize];
        let Slot::Live(v) = std::mem::replace(slot, Slot::Free) else {
            unreachable!("index() found it live")
        };
        *slot = Slot::Retired(v);
        self.live -= 1;
        Some(i)
    }

    /// Frees a retired object's slot for reuse.
    pub fn release(&mut self, index: u32) -> Option<T> {
        let slot = self.slots.get_mut(index as usize)?;
        if !matches!(slot, Slot::Retired(_)) {
            return None;
        }
        let Slot::Retired(v) = std::mem::replace(slot, Slot::Free) else {
            unreachable!("checked retired")
        };
        self.free.push(index);
        Some(v)
    }

    /// Live objects (the tests count them).
    #[cfg(test)]
    pub fn live(&self) -> usize {
        self.live
    }

    /// The indices of retired objects.
    /// Every live object.
    pub fn live_values(&self) -> impl Iterator<Item = &T> + '_ {
        self.slots.iter().filter_map(|s| match s {
            Slot::Live(v) => Some(v),
            _ => None,
        })
    }

    pub fn retired(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Slot::Retired(_)))
            .map(|(i, _)| i as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::*;

    #[test]
    fn handles_are_mpichs_direct_handles() {
        assert_eq!(direct(Kind::Comm, 5) as u32, 0x8400_0005);
        assert_eq!(direct(Kind::Group, 0) as u32, 0x8800_0000);
        assert_eq!(direct(Kind::Datatype, 1) as u32, 0x8c00_0001);
        assert_eq!(direct(Kind::Op, 2) as u32, 0x9800_0002);
        assert_eq!(direct(Kind::Info, 2) as u32, 0x9c00_0002);
        assert_eq!(direct(Kind::Keyval, 7) as u32, 0xa400_0007);
        assert_eq!(direct(Kind::Request, 7) as u32, 0xac00_0007);
        assert_eq!(index_of(Kind::Comm, direct(Kind::Comm, 9)), Some(9));
        assert_eq!(
            index_of(Kind::Group, direct(Kind::Comm, 9)),
            None,
            "another kind"
        );
        assert_eq!(
            index_of(Kind::Comm, MPI_COMM_WORLD),
            None,
            "a builtin handle"
        );
    }

    #[test]
    fn live_retired_and_freed_objects() {
        let mut t = Table::new(Kind::Info);
        let (ia, a) = t.insert("a").unwrap();
        let (_, b) = t.insert("b").unwrap();
        assert_eq!((t.get(a), t.get(b), t.live()), (Some(&"a"), Some(&"b"), 2));
        assert_eq!(t.retire(a), Some(ia));
        assert_eq!(t.get(a), None, "a retired handle is refused");
        assert_eq!(t.at(ia), Some(&"a"), "but reachable by index");
        let (ic, _) = t.insert("c").unwrap();
        assert_ne!(ic, ia, "a retired index is not reused");
        assert_eq!(t.release(ia), Some("a"));
        let (id, _) = t.insert("d").unwrap();
        assert_eq!(id, ia, "released, it is");
        assert_eq!(t.remove(b), Some("b"));
        assert_eq!(t.remove(b), None);
        assert_eq!(t.live(), 2);
    }
}
