//! Unit tests of the type table and layouts (the C programs of `tests/c/types` check the
//! calls end to end).

use super::layout::Builder;
use super::*;

#[test]
fn every_predefined_type_decodes_to_its_size() {
    let t = TypeTable::new();
    for &(h, parts, name) in BUILTIN {
        let d = t.get(h).unwrap();
        assert_eq!(d.size(), ((h as u32 >> 8) & 0xff) as usize, "{name}");
        assert_eq!(d.elements(), parts, "{name}");
        assert_eq!(d.name, name);
        assert!(d.is_committed() && d.is_contiguous());
    }
    let di = t.get(MPI_DOUBLE_INT).unwrap();
    assert_eq!((di.size(), di.extent(), di.runs().len()), (12, 16, 1));
    assert_eq!(di.basic(), Some(MPI_DOUBLE_INT));
    assert!(!di.is_contiguous());
    let si = t.get(MPI_SHORT_INT).unwrap();
    assert_eq!((si.size(), si.extent(), si.true_extent()), (6, 8, 8));
    assert_eq!(t.get(MPI_LONG_DOUBLE_INT).unwrap().true_extent(), 20);
}

#[test]
fn invalid_handles_are_refused() {
    let t = TypeTable::new();
    for h in [
        MPI_DATATYPE_NULL,
        0,
        -1,
        0x4c00_0405 + 0x100,
        0x4c00_00ff,
        0x8c00_0005u32 as i32,
        0x8c00_0008u32 as i32,
        MPI_COMM_WORLD,
        MPI_INTEGER16,
    ] {
        assert_eq!(t.get(h).unwrap_err().class, MPI_ERR_TYPE, "0x{h:08x}");
    }
}

#[test]
fn message_length_and_counts() {
    let t = TypeTable::new();
    let m = t.message(3, MPI_DOUBLE).unwrap();
    assert_eq!((m.bytes, m.offset, m.scattered.is_none()), (24, 0, true));
    assert_eq!(t.message(-1, MPI_DOUBLE).unwrap_err().class, MPI_ERR_COUNT);
    let m = t.message(2, MPI_DOUBLE_INT).unwrap();
    assert_eq!(m.bytes, 24);
    assert!(m.scattered.is_some());
    assert!(t.message(1, MPI_DOUBLE_INT).unwrap().scattered.is_none());
    let int = t.get(MPI_INT).unwrap();
    assert_eq!(int.count_in(12), Some(3));
    assert_eq!(int.count_in(13), None);
    let two = t.get(MPI_2INT).unwrap();
    assert_eq!(two.count_in(12), None);
    assert_eq!(two.elements_in(12), Some(3));
    assert_eq!(two.elements_in(16), Some(4));
    let di = t.get(MPI_DOUBLE_INT).unwrap();
    assert_eq!(di.count_in(24), Some(2));
    assert_eq!(di.elements_in(24), Some(4));
    assert_eq!(di.elements_in(20), None);
}

#[test]
fn vector_runs_merge_and_bounds() {
    let mut t = TypeTable::new();
    let dbl = t.get(MPI_DOUBLE).unwrap().clone();
    // vector(3, 2, 4) of doubles: runs of 16 bytes every 32.
    let mut b = Builder::new();
    for i in 0..3 {
        b.push(i * 32, 2, &dbl);
    }
    let v = b.finish(Contents::default(), false);
    assert_eq!(v.size(), 48);
    assert_eq!(v.extent(), 80);
    assert_eq!(v.runs().len(), 3);
    assert_eq!(
        v.runs()[1],
        Run {
            offset: 32,
            len: 16
        }
    );
    assert_eq!(v.basic(), Some(MPI_DOUBLE));
    assert_eq!(v.elements_in(48 + 8), Some(7));
    assert_eq!(v.elements_in(4), None);
    let h = t.insert(v).unwrap();
    assert_eq!(h as u32 & 0xfc00_0000, 0x8c00_0000);
    assert!(!t.get(h).unwrap().is_committed());
    assert_eq!(t.message(1, h).unwrap_err().class, MPI_ERR_TYPE);
    t.get_mut(h).unwrap().committed = true;
    let src: Vec<f64> = (0..10).map(|x| x as f64).collect();
    let mut packed = vec![0f64; 6];
    let vt = t.get(h).unwrap();
    // SAFETY: src holds one element (80 bytes), packed has 48.
    unsafe { vt.pack(src.as_ptr().cast(), 1, packed.as_mut_ptr().cast()) };
    assert_eq!(packed, [0., 1., 4., 5., 8., 9.]);
    let mut back = vec![-1f64; 10];
    // SAFETY: as above, reversed; 40 bytes are a partial element.
    unsafe { vt.unpack(packed.as_ptr().cast(), 40, back.as_mut_ptr().cast(), 1) };
    assert_eq!(back, [0., 1., -1., -1., 4., 5., -1., -1., 8., -1.]);
    t.release(h);
    assert_eq!(t.get(h).unwrap_err().class, MPI_ERR_TYPE);
}

#[test]
fn markers_and_struct_padding() {
    let t = TypeTable::new();
    let (dbl, chr, ub) = (
        t.get(MPI_DOUBLE).unwrap(),
        t.get(MPI_CHAR).unwrap(),
        t.get(MPI_UB).unwrap(),
    );
    let mut b = Builder::new();
    b.push(0, 1, dbl);
    b.push(8, 1, chr);
    let s = b.finish(Contents::default(), true);
    assert_eq!((s.size(), s.extent(), s.true_extent()), (9, 16, 9));
    let mut b = Builder::new();
    b.push(0, 1, dbl);
    b.push(8, 1, chr);
    b.push(40, 1, ub);
    let s = b.finish(Contents::default(), true);
    assert_eq!((s.extent(), s.true_extent()), (40, 9));
}
