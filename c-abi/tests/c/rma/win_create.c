/*
 * win_create: every way of making an MPI window (MPI 3.1 chapter 11.2, MPI 4.0 chapter 12.2)
 * and everything a window carries besides its memory.
 *
 *  - MPI_Win_create over user memory of a different size on every rank (rank 1 exposes
 *    nothing: size 0, base NULL) and a displacement unit of sizeof(int); MPI_Win_allocate
 *    (an odd number of ints, different on every rank), and of 0 bytes with unit 1; both
 *    used for a Put and a Get between neighbours;
 *  - MPI_Win_allocate_shared on the ranks sharing memory (MPI_Comm_split_type): segments
 *    contiguous by default (rank r's segment follows rank r-1's), MPI_Win_shared_query of
 *    every rank and of MPI_PROC_NULL (the first segment that is not empty), and direct loads
 *    and stores into the other ranks' segments, ordered by MPI_Win_sync + MPI_Barrier;
 *    then again with "alloc_shared_noncontig" (each rank's pointer still works);
 *  - MPI_Win_create_dynamic: base MPI_BOTTOM and size 0; two regions attached, their
 *    addresses (MPI_Get_address) exchanged and used as target displacements by the
 *    neighbours under passive-target locks; one region detached while the other stays in use;
 *  - the predefined attributes MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT,
 *    MPI_WIN_CREATE_FLAVOR and MPI_WIN_MODEL (MPI_WIN_UNIFIED: both MPICH and Open MPI on one
 *    host report it, and the issue asks for it) for every flavor;
 *  - MPI_Win_free sets the handle to MPI_WIN_NULL;
 *  - user keyvals: MPI_Win_create_keyval with copy and delete callbacks and an extra state;
 *    set/get/delete_attr; the delete callback runs on delete_attr, when set_attr replaces a
 *    value, and for every attribute still set when the window is freed, always with the
 *    window, the keyval, the value and the extra state; the copy callback never runs (windows
 *    are never duplicated); MPI_Win_free_keyval leaves MPI_KEYVAL_INVALID, and an attribute of
 *    a freed keyval is still removed by MPI_Win_delete_attr (the old handle) or by
 *    MPI_Win_free, its delete callback running;
 *  - MPI_Win_set_name / MPI_Win_get_name (empty before any name; a name of
 *    MPI_MAX_OBJECT_NAME - 1 characters kept whole; names are per window);
 *  - MPI_Win_get_group on a window over a communicator whose ranks are reversed: MPI_IDENT
 *    to the communicator's group;
 *  - info: windows created with no_locks, accumulate_ordering, accumulate_ops, same_size and
 *    same_disp_unit; MPI_Win_get_info returns a new info object in which every one of these
 *    keys that is present has a value the standard allows, and the keys this program set have
 *    the values it set (an implementation may leave out a hint it ignores, as MPI 4.0 12.2.7
 *    allows); MPI_Win_set_info of a user key and of accumulate_ordering is accepted;
 *  - error handlers: a new window's is MPI_ERRORS_ARE_FATAL; MPI_Win_create_errhandler,
 *    MPI_Win_set_errhandler / get_errhandler (the same handler back), MPI_Win_call_errhandler
 *    runs it with the window and the code and returns MPI_SUCCESS; the handler outlives
 *    MPI_Errhandler_free while a window uses it; with MPI_ERRORS_RETURN,
 *    MPI_Win_call_errhandler returns MPI_SUCCESS too.
 *
 * Runs on 1 rank and up; every window is made on MPI_COMM_WORLD unless said otherwise.
 *
 * Known deviations (checked to the standard; skipped only under that library, with a NOTE):
 *  - Open MPI 4.1.4: MPI_Win_shared_query(MPI_PROC_NULL) fails with MPI_ERR_RANK; with
 *    alloc_shared_noncontig it reports each segment's size rounded up to a page; a window
 *    that was never named has a name ("rdma window N"); and in its default configuration
 *    (osc/rdma) MPI_Win_create fails on 1 rank with MPI_ERR_WIN (nothing to skip there: run
 *    it with --mca osc pt2pt,sm);
 *  - MPICH 4.0.2: MPI_Win_allocate segments whose size is not a multiple of 16 bytes are
 *    reached at the wrong address by the other ranks (alloc_size() in rma_util.h rounds).
 */
#define TEST_NAME "win_create"
#include "../mpitest.h"

#include "rma_util.h"

/* ---------------------------------------------------------------- attributes */

static void check_attributes(MPI_Win win, void *want_base, MPI_Aint want_size, int want_unit,
                             int want_flavor, const char *what)
{
    void *base = (void *)&base; /* anything but the expected value */
    MPI_Aint *size = NULL;
    int *unit = NULL, *flavor = NULL, *model = NULL;
    int flag = 0;

    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag, "%s: MPI_WIN_BASE not set", what);
    CHECK(base == want_base, "%s: MPI_WIN_BASE is %p, want %p", what, base, want_base);

    flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && size, "%s: MPI_WIN_SIZE not set", what);
    CHECK(*size == want_size, "%s: MPI_WIN_SIZE is %ld, want %ld", what, (long)*size,
          (long)want_size);

    flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && unit, "%s: MPI_WIN_DISP_UNIT not set", what);
    CHECK(*unit == want_unit, "%s: MPI_WIN_DISP_UNIT is %d, want %d", what, *unit, want_unit);

    flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && flavor, "%s: MPI_WIN_CREATE_FLAVOR not set", what);
    CHECK(*flavor == want_flavor, "%s: MPI_WIN_CREATE_FLAVOR is %d, want %d", what, *flavor,
          want_flavor);

    flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && model, "%s: MPI_WIN_MODEL not set", what);
    CHECK(*model == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL is %d, want MPI_WIN_UNIFIED (%d)", what,
          *model, MPI_WIN_UNIFIED);
}


/* Each rank puts n ints into its right neighbour's window at displacement 0 and gets n ints
 * back from its right neighbour's, under fence; every rank's window must expose at least n
 * ints with unit sizeof(int). */
static void put_get_ring(MPI_Win win, int *local, int n, int round, const char *what)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    int *out = test_malloc(sizeof(int) * (size_t)n), *in = test_malloc(sizeof(int) * (size_t)n);
    for (int j = 0; j < n; j++) {
        out[j] = cell(test_rank, j, round);
        in[j] = -1;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, n, MPI_INT, right, 0, n, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int j = 0; j < n; j++)
        CHECK(local[j] == cell(left, j, round), "%s: after Put, element %d is %d, want %d", what,
              j, local[j], cell(left, j, round));
    /* Now read back what this rank put into the right neighbour. */
    CHECK_MPI(MPI_Get(in, n, MPI_INT, right, 0, n, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int j = 0; j < n; j++)
        CHECK(in[j] == out[j], "%s: Get returned %d at %d, want %d", what, in[j], j, out[j]);
    free(out);
    free(in);
}

/* ---------------------------------------------------------------- Win_create, Win_allocate */

static void test_create(void)
{
    /* Rank 1 exposes no memory at all (size 0, base NULL): legal, and others see it. */
    int n = test_rank == 1 ? 0 : 64 + 16 * test_rank;
    int *mem = n ? test_malloc(sizeof(int) * (size_t)n) : NULL;
    for (int j = 0; j < n; j++)
        mem[j] = -7;
    MPI_Win win = MPI_WIN_NULL;
    CHECK_MPI(MPI_Win_create(mem, (MPI_Aint)(sizeof(int) * (size_t)n), sizeof(int), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    CHECK(win != MPI_WIN_NULL, "MPI_Win_create gave MPI_WIN_NULL");
    check_attributes(win, mem, (MPI_Aint)(sizeof(int) * (size_t)n), (int)sizeof(int),
                     MPI_WIN_FLAVOR_CREATE, "Win_create");

    /* A ring of puts among the ranks that expose memory (all but rank 1), done with fence. */
    int right = (test_rank + 1) % test_size;
    if (right == 1 && test_size > 1)
        right = (right + 1) % test_size;
    int out[64], in[64];
    for (int j = 0; j < 64; j++) {
        out[j] = cell(test_rank, j, 1);
        in[j] = -1;
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    if (test_rank != 1 || test_size == 1)
        CHECK_MPI(MPI_Put(out, 64, MPI_INT, right, 0, 64, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (test_rank != 1 || test_size == 1)
        CHECK_MPI(MPI_Get(in, 64, MPI_INT, right, 0, 64, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    if (test_rank != 1 || test_size == 1) {
        for (int j = 0; j < 64; j++)
            CHECK(in[j] == out[j], "Win_create: Get returned %d at %d, want %d", in[j], j, out[j]);
        /* Whoever put into this rank (the nearest exposing rank to the left). */
        int left = (test_rank + test_size - 1) % test_size;
        if (left == 1 && test_size > 1)
            left = (left + test_size - 1) % test_size;
        for (int j = 0; j < 64; j++)
            CHECK(mem[j] == cell(left, j, 1), "Win_create: element %d is %d, want %d", j, mem[j],
                  cell(left, j, 1));
        for (int j = 64; j < n; j++)
            CHECK(mem[j] == -7, "Win_create: element %d past the Put changed to %d", j, mem[j]);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free did not set the handle to MPI_WIN_NULL");
    free(mem);
}

static void test_allocate(void)
{
    /* Unit sizeof(int) everywhere but a window size that differs per rank (an odd number of
     * ints: segments need not be multiples of anything). */
    MPI_Aint bytes = alloc_size((MPI_Aint)(sizeof(int) * (size_t)(129 + 6 * test_rank)));
    int *base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    CHECK_MPI(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(base != NULL, "MPI_Win_allocate returned a NULL base for %ld bytes", (long)bytes);
    check_attributes(win, base, bytes, (int)sizeof(int), MPI_WIN_FLAVOR_ALLOCATE, "Win_allocate");
    /* The memory is this rank's to write. */
    for (int j = 0; j < 129 + 6 * test_rank; j++)
        base[j] = -3;
    put_get_ring(win, base, 128, 2, "Win_allocate");
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free (allocate) did not set MPI_WIN_NULL");

    /* Zero bytes on every rank, and a displacement unit of 1: legal, and freed cleanly. */
    void *none = NULL;
    CHECK_MPI(MPI_Win_allocate(0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &none, &win));
    MPI_Aint *size = NULL;
    int flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag));
    CHECK(flag && *size == 0, "a zero-byte MPI_Win_allocate reports size %ld",
          flag ? (long)*size : -1L);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- shared memory */

static int seg_ints(int r)
{
    return 33 + 4 * r;
}

/* Loads and stores across the segments of a shared window over `node` (its ranks share
 * memory). Segment of rank r: 33 + 4r ints (an odd number: the next segment follows at an
 * address that is not a multiple of 8), unit sizeof(int). */
static void shared_load_store(MPI_Comm node, int noncontig)
{
    int nr, ns;
    CHECK_MPI(MPI_Comm_rank(node, &nr));
    CHECK_MPI(MPI_Comm_size(node, &ns));
    MPI_Info info = MPI_INFO_NULL;
    if (noncontig) {
        CHECK_MPI(MPI_Info_create(&info));
        CHECK_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    }
    int mine = seg_ints(nr);
    int *base = NULL;
    MPI_Win win = MPI_WIN_NULL;
    CHECK_MPI(MPI_Win_allocate_shared((MPI_Aint)(sizeof(int) * (size_t)mine), sizeof(int), info,
                                      node, &base, &win));
    if (info != MPI_INFO_NULL)
        CHECK_MPI(MPI_Info_free(&info));
    check_attributes(win, base, (MPI_Aint)(sizeof(int) * (size_t)mine), (int)sizeof(int),
                     MPI_WIN_FLAVOR_SHARED, noncontig ? "Win_allocate_shared noncontig"
                                                      : "Win_allocate_shared");

    int **seg = test_malloc(sizeof(int *) * (size_t)ns);
    for (int r = 0; r < ns; r++) {
        MPI_Aint size = -1;
        int unit = -1;
        seg[r] = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &size, &unit, &seg[r]));
        MPI_Aint want = (MPI_Aint)(sizeof(int) * (size_t)seg_ints(r));
        CHECK(size == want ||
                  (noncontig && size > want &&
                   tolerated("Open MPI", "shared_query of a noncontig segment reports its size "
                                         "rounded up to a page")),
              "shared_query(%d): size %ld, want %ld", r, (long)size, (long)want);
        CHECK(unit == (int)sizeof(int), "shared_query(%d): unit %d", r, unit);
        CHECK(seg[r] != NULL, "shared_query(%d): NULL base", r);
        if (r == nr)
            CHECK(seg[r] == base, "shared_query of this rank gives %p, its base is %p",
                  (void *)seg[r], (void *)base);
        if (!noncontig && r > 0)
            CHECK(seg[r] == seg[r - 1] + seg_ints(r - 1),
                  "contiguous shared window: segment %d at %p does not follow segment %d at %p "
                  "(%d ints)", r, (void *)seg[r], r - 1, (void *)seg[r - 1], seg_ints(r - 1));
    }
    /* MPI_PROC_NULL: the segment of the lowest rank with a non-empty one (rank 0 here). */
    if (!tolerated("Open MPI", "MPI_Win_shared_query(MPI_PROC_NULL) fails with MPI_ERR_RANK")) {
        MPI_Aint size = -1;
        int unit = -1;
        int *first = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &first));
        CHECK(first == seg[0] && (size == (MPI_Aint)(sizeof(int) * 33) || noncontig),
              "shared_query(MPI_PROC_NULL) gave %p size %ld, want rank 0's %p size %ld",
              (void *)first, (long)size, (void *)seg[0], (long)(sizeof(int) * 33));
    }

    /* Round 1: each rank stores into its own segment, every rank loads everybody's.
     * Round 2: each rank stores into its right neighbour's segment, which checks it. */
    CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    for (int j = 0; j < mine; j++)
        base[j] = cell(nr, j, 3);
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 0; r < ns; r++)
        for (int j = 0; j < seg_ints(r); j++)
            CHECK(seg[r][j] == cell(r, j, 3), "shared load of rank %d's element %d: %d, want %d",
                  r, j, seg[r][j], cell(r, j, 3));
    CHECK_MPI(MPI_Barrier(node)); /* every rank has read before anyone overwrites */
    int right = (nr + 1) % ns, left = (nr + ns - 1) % ns;
    for (int j = 0; j < seg_ints(right); j++)
        seg[right][j] = cell(nr, j, 4);
    CHECK_MPI(MPI_Win_sync(win));
    CHECK_MPI(MPI_Barrier(node));
    CHECK_MPI(MPI_Win_sync(win));
    for (int j = 0; j < mine; j++)
        CHECK(base[j] == cell(left, j, 4), "shared store by rank %d at element %d: %d, want %d",
              left, j, base[j], cell(left, j, 4));
    CHECK_MPI(MPI_Win_unlock_all(win));

    /* The shared window is an ordinary window too: Put and Get through it. */
    CHECK_MPI(MPI_Win_fence(0, win));
    int v = cell(nr, 0, 5), got = -1;
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(base[1] == cell(left, 0, 5), "Put into a shared window: %d, want %d", base[1],
          cell(left, 0, 5));
    CHECK_MPI(MPI_Get(&got, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(got == v, "Get from a shared window: %d, want %d", got, v);

    free(seg);
    CHECK_MPI(MPI_Win_free(&win));
}

/* A shared window where rank 0 has no memory: MPI_PROC_NULL finds rank 1's segment. */
static void shared_first_empty(MPI_Comm node)
{
    int nr, ns;
    CHECK_MPI(MPI_Comm_rank(node, &nr));
    CHECK_MPI(MPI_Comm_size(node, &ns));
    if (ns < 2 ||
        tolerated("Open MPI", "MPI_Win_shared_query(MPI_PROC_NULL) fails with MPI_ERR_RANK"))
        return;
    int *base = NULL;
    MPI_Win win;
    MPI_Aint mine = nr == 0 ? 0 : (MPI_Aint)(sizeof(double) * 8);
    CHECK_MPI(MPI_Win_allocate_shared(mine, sizeof(double), MPI_INFO_NULL, node, &base, &win));
    MPI_Aint size = -1;
    int unit = -1;
    double *first = NULL, *one = NULL;
    CHECK_MPI(MPI_Win_shared_query(win, 1, &size, &unit, &one));
    CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &first));
    CHECK(first == one && size == (MPI_Aint)(sizeof(double) * 8) && unit == (int)sizeof(double),
          "shared_query(MPI_PROC_NULL) with rank 0 empty: %p size %ld unit %d, want rank 1's %p",
          (void *)first, (long)size, unit, (void *)one);
    CHECK_MPI(MPI_Win_free(&win));
}

static void test_shared(void)
{
    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    shared_load_store(node, 0);
    shared_load_store(node, 1);
    shared_first_empty(node);
    CHECK_MPI(MPI_Comm_free(&node));
}

/* ---------------------------------------------------------------- dynamic windows */

static void test_dynamic(void)
{
    MPI_Win win = MPI_WIN_NULL;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    check_attributes(win, MPI_BOTTOM, 0, 1, MPI_WIN_FLAVOR_DYNAMIC, "Win_create_dynamic");

    enum { NA = 100, NB = 37 };
    int *a = test_malloc(sizeof(int) * NA);
    long long *b = test_malloc(sizeof(long long) * NB);
    for (int j = 0; j < NA; j++)
        a[j] = -1;
    for (int j = 0; j < NB; j++)
        b[j] = -1;
    CHECK_MPI(MPI_Win_attach(win, a, (MPI_Aint)(sizeof(int) * NA)));
    CHECK_MPI(MPI_Win_attach(win, b, (MPI_Aint)(sizeof(long long) * NB)));
    MPI_Aint mine[2], *all = test_malloc(sizeof(MPI_Aint) * 2 * (size_t)test_size);
    CHECK_MPI(MPI_Get_address(a, &mine[0]));
    CHECK_MPI(MPI_Get_address(b, &mine[1]));
    CHECK_MPI(MPI_Allgather(mine, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD));

    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    int out[NA];
    long long outb[NB];
    for (int j = 0; j < NA; j++)
        out[j] = cell(test_rank, j, 6);
    for (int j = 0; j < NB; j++)
        outb[j] = (long long)cell(test_rank, j, 7) << 20;
    /* Into the middle of region a (displacement = address + offset), and all of b. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(out, NA - 10, MPI_INT, right,
                      MPI_Aint_add(all[2 * right], (MPI_Aint)(sizeof(int) * 10)), NA - 10,
                      MPI_INT, win));
    CHECK_MPI(MPI_Put(outb, NB, MPI_LONG_LONG, right, all[2 * right + 1], NB, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, test_rank, 0, win));
    for (int j = 0; j < 10; j++)
        CHECK(a[j] == -1, "dynamic window: element %d before the Put's start changed to %d", j,
              a[j]);
    for (int j = 10; j < NA; j++)
        CHECK(a[j] == cell(left, j - 10, 6), "dynamic window region a[%d] = %d, want %d", j, a[j],
              cell(left, j - 10, 6));
    for (int j = 0; j < NB; j++)
        CHECK(b[j] == (long long)cell(left, j, 7) << 20, "dynamic window region b[%d] = %lld", j,
              b[j]);
    CHECK_MPI(MPI_Win_unlock(test_rank, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Region a goes; region b keeps working: Get it back from the right neighbour. */
    CHECK_MPI(MPI_Win_detach(win, a));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    long long back[NB];
    for (int j = 0; j < NB; j++)
        back[j] = 0;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Get(back, NB, MPI_LONG_LONG, right, all[2 * right + 1], NB, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    for (int j = 0; j < NB; j++)
        CHECK(back[j] == outb[j],
              "Get from a dynamic window after a detach: [%d] = %lld, want %lld",
              j, back[j], outb[j]);
    /* A region attached again after a detach works too (memory reused). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_attach(win, a, (MPI_Aint)(sizeof(int) * NA)));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int got = 0;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Get(&got, 1, MPI_INT, right, MPI_Aint_add(all[2 * right], sizeof(int) * 20), 1,
                      MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK(got == cell(test_rank, 10, 6), "Get from a re-attached region: %d, want %d", got,
          cell(test_rank, 10, 6));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_detach(win, a));
    CHECK_MPI(MPI_Win_detach(win, b));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free (dynamic) did not set MPI_WIN_NULL");
    free(a);
    free(b);
    free(all);
}

/* ---------------------------------------------------------------- keyvals */

static int copies, deletes;
static MPI_Win delete_saw_win;
static int delete_saw_keyval;
static void *delete_saw_value;
static int extra_state_tag = 4242;

static int win_copy(MPI_Win old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    (void)extra;
    (void)in;
    (void)out;
    *flag = 0;
    copies++;
    return MPI_SUCCESS;
}

static int win_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    deletes++;
    delete_saw_win = win;
    delete_saw_keyval = keyval;
    delete_saw_value = value;
    if (extra != &extra_state_tag)
        FAIL("delete callback got extra state %p, want %p", extra, (void *)&extra_state_tag);
    return MPI_SUCCESS;
}

static void test_keyvals(void)
{
    MPI_Win win;
    int *base;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    int key = MPI_KEYVAL_INVALID, other = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Win_create_keyval(win_copy, win_delete, &key, &extra_state_tag));
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &other, NULL));
    CHECK(key != MPI_KEYVAL_INVALID && other != MPI_KEYVAL_INVALID && key != other,
          "MPI_Win_create_keyval gave keyvals %d and %d", key, other);

    static int v1 = 1, v2 = 2, v3 = 3;
    void *got = NULL;
    int flag = 1;
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(!flag, "an attribute never set is reported as set");

    CHECK_MPI(MPI_Win_set_attr(win, key, &v1));
    CHECK_MPI(MPI_Win_set_attr(win, other, &v3));
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag && got == &v1, "get_attr after set_attr: flag %d value %p, want %p", flag, got,
          (void *)&v1);
    CHECK(deletes == 0, "delete callback ran %d times before any delete", deletes);

    /* Replacing a value deletes the old one. */
    CHECK_MPI(MPI_Win_set_attr(win, key, &v2));
    CHECK(deletes == 1 && delete_saw_value == &v1 && delete_saw_keyval == key &&
              delete_saw_win == win,
          "replacing an attribute: %d deletes, last of value %p keyval %d", deletes,
          delete_saw_value, delete_saw_keyval);
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(flag && got == &v2, "after replacing, get_attr gives %p, want %p", got, (void *)&v2);

    /* Deleting runs the callback once, and the attribute is gone. */
    CHECK_MPI(MPI_Win_delete_attr(win, key));
    CHECK(deletes == 2 && delete_saw_value == &v2, "delete_attr: %d deletes, value %p", deletes,
          delete_saw_value);
    CHECK_MPI(MPI_Win_get_attr(win, key, &got, &flag));
    CHECK(!flag, "attribute still set after MPI_Win_delete_attr");

    /* Set again, free the keyval: the attribute stays; the program removes it with
     * MPI_Win_delete_attr (MPI 4.0 7.7.2: freeing a keyval in use is not erroneous, and "these
     * references need to be explicitly freed by the program, either via calls to
     * MPI_COMM_DELETE_ATTR ... or by calls to MPI_COMM_FREE"; windows are alike). */
    CHECK_MPI(MPI_Win_set_attr(win, key, &v1));
    int key_copy = key;
    CHECK_MPI(MPI_Win_free_keyval(&key));
    CHECK(key == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval left %d", key);
    CHECK(deletes == 2, "freeing the keyval ran the delete callback");
    CHECK_MPI(MPI_Win_delete_attr(win, key_copy));
    CHECK(deletes == 3 && delete_saw_value == &v1 && delete_saw_keyval == key_copy,
          "delete_attr with a freed keyval: %d deletes (want 3), value %p", deletes,
          delete_saw_value);

    /* An attribute still set when the window is freed is deleted then, keyval freed or not. */
    int key2 = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Win_create_keyval(win_copy, win_delete, &key2, &extra_state_tag));
    CHECK_MPI(MPI_Win_set_attr(win, key2, &v2));
    int key2_copy = key2;
    CHECK_MPI(MPI_Win_free_keyval(&key2));
    MPI_Win freed = win;
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(deletes == 4 && delete_saw_value == &v2 && delete_saw_win == freed &&
              delete_saw_keyval == key2_copy,
          "MPI_Win_free: %d deletes (want 4), value %p (want %p)", deletes, delete_saw_value,
          (void *)&v2);
    CHECK(copies == 0, "the copy callback of a window keyval ran %d times", copies);
    CHECK_MPI(MPI_Win_free_keyval(&other));
    CHECK(other == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval left %d", other);
}

/* ---------------------------------------------------------------- names, groups */

static void test_names(void)
{
    MPI_Win a, b;
    int *pa, *pb;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &pa, &a));
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &pb, &b));
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 'x', sizeof name);
    CHECK_MPI(MPI_Win_get_name(a, name, &len));
    CHECK((len == 0 && name[0] == '\0') ||
              tolerated("Open MPI", "a window without a name has one (\"rdma window N\")"),
          "a window without a name reports \"%.*s\" (length %d)",
          len > 0 ? len : 0, name, len);

    CHECK_MPI(MPI_Win_set_name(a, "halo window"));
    CHECK_MPI(MPI_Win_set_name(b, "other"));
    CHECK_MPI(MPI_Win_get_name(a, name, &len));
    CHECK(len == 11 && strcmp(name, "halo window") == 0, "get_name: \"%s\" length %d", name, len);
    CHECK_MPI(MPI_Win_get_name(b, name, &len));
    CHECK(len == 5 && strcmp(name, "other") == 0, "second window's name: \"%s\"", name);

    /* The longest name that fits, and a rename. */
    char longest[MPI_MAX_OBJECT_NAME];
    for (int i = 0; i < MPI_MAX_OBJECT_NAME - 1; i++)
        longest[i] = (char)('a' + i % 26);
    longest[MPI_MAX_OBJECT_NAME - 1] = '\0';
    CHECK_MPI(MPI_Win_set_name(a, longest));
    CHECK_MPI(MPI_Win_get_name(a, name, &len));
    CHECK(len == MPI_MAX_OBJECT_NAME - 1 && strcmp(name, longest) == 0,
          "a name of %d characters came back with length %d", MPI_MAX_OBJECT_NAME - 1, len);
    CHECK_MPI(MPI_Win_set_name(a, "renamed"));
    CHECK_MPI(MPI_Win_get_name(a, name, &len));
    CHECK(len == 7 && strcmp(name, "renamed") == 0, "after a rename: \"%s\"", name);
    CHECK_MPI(MPI_Win_free(&a));
    CHECK_MPI(MPI_Win_free(&b));
}

static void test_group(void)
{
    MPI_Comm reversed;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, test_size - test_rank, &reversed));
    MPI_Win win;
    int *base;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, reversed, &base, &win));
    MPI_Group wg, cg, world;
    CHECK_MPI(MPI_Win_get_group(win, &wg));
    CHECK_MPI(MPI_Comm_group(reversed, &cg));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    int cmp = -1, gsize = -1, grank = -1;
    CHECK_MPI(MPI_Group_compare(wg, cg, &cmp));
    CHECK(cmp == MPI_IDENT, "window group vs its communicator's group: %d, want MPI_IDENT", cmp);
    CHECK_MPI(MPI_Group_size(wg, &gsize));
    CHECK_MPI(MPI_Group_rank(wg, &grank));
    CHECK(gsize == test_size && grank == test_size - 1 - test_rank,
          "window group size %d rank %d, want %d and %d", gsize, grank, test_size,
          test_size - 1 - test_rank);
    int zero = 0, world_rank_of_zero = -1;
    CHECK_MPI(MPI_Group_translate_ranks(wg, 1, &zero, world, &world_rank_of_zero));
    CHECK(world_rank_of_zero == test_size - 1, "window rank 0 is world rank %d, want %d",
          world_rank_of_zero, test_size - 1);
    if (test_size > 1) {
        CHECK_MPI(MPI_Group_compare(wg, world, &cmp));
        CHECK(cmp == MPI_SIMILAR, "reversed window group vs world: %d, want MPI_SIMILAR", cmp);
    }
    /* A Put addressed by rank in the window's communicator: window rank 0 is world's last. */
    CHECK_MPI(MPI_Win_fence(0, win));
    if (grank == gsize - 1) {
        int v = 777;
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    if (test_rank == test_size - 1)
        CHECK(*base == 777, "Put to window rank 0 landed elsewhere: %d", *base);
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK_MPI(MPI_Group_free(&cg));
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&reversed));
}

/* ---------------------------------------------------------------- info */

/* value of `key` in `info`, or NULL when absent. */
static const char *info_value(MPI_Info info, const char *key)
{
    static char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
    return flag ? value : NULL;
}

static int is_bool(const char *v)
{
    return strcmp(v, "true") == 0 || strcmp(v, "false") == 0;
}

/* Every key of accumulate_ordering is one of rar, raw, war, waw (or the value is "none"). */
static int is_ordering(const char *v)
{
    if (strcmp(v, "none") == 0)
        return 1;
    char copy[MPI_MAX_INFO_VAL + 1];
    snprintf(copy, sizeof copy, "%s", v);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (strcmp(t, "rar") && strcmp(t, "raw") && strcmp(t, "war") && strcmp(t, "waw"))
            return 0;
        n++;
    }
    return n > 0;
}

/* The hints the standard defines are well-formed wherever they appear; and those in
 * `set_keys`/`set_values` (n of them) have the values set, when the library reports them. */
static void check_info(MPI_Win win, int n, const char *const *set_keys,
                       const char *const *set_values, const char *what)
{
    MPI_Info used = MPI_INFO_NULL;
    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK(used != MPI_INFO_NULL, "%s: MPI_Win_get_info gave MPI_INFO_NULL", what);
    const char *v;
    if ((v = info_value(used, "no_locks")))
        CHECK(is_bool(v), "%s: no_locks = \"%s\"", what, v);
    if ((v = info_value(used, "same_size")))
        CHECK(is_bool(v), "%s: same_size = \"%s\"", what, v);
    if ((v = info_value(used, "same_disp_unit")))
        CHECK(is_bool(v), "%s: same_disp_unit = \"%s\"", what, v);
    if ((v = info_value(used, "accumulate_ops")))
        CHECK(strcmp(v, "same_op") == 0 || strcmp(v, "same_op_no_op") == 0,
              "%s: accumulate_ops = \"%s\"", what, v);
    if ((v = info_value(used, "accumulate_ordering")))
        CHECK(is_ordering(v), "%s: accumulate_ordering = \"%s\"", what, v);
    for (int i = 0; i < n; i++)
        if ((v = info_value(used, set_keys[i])))
            CHECK(strcmp(v, set_values[i]) == 0, "%s: hint %s was set to \"%s\", reported \"%s\"",
                  what, set_keys[i], set_values[i], v);
    /* A new object each time: freeing it leaves the window alone. */
    CHECK_MPI(MPI_Info_free(&used));
    CHECK(used == MPI_INFO_NULL, "MPI_Info_free did not reset the handle");
}

static void test_info(void)
{
    static const char *const keys[] = {"no_locks", "accumulate_ordering", "accumulate_ops",
                                       "same_size", "same_disp_unit"};
    static const char *const values[] = {"true", "none", "same_op", "true", "true"};
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    for (int i = 0; i < 5; i++)
        CHECK_MPI(MPI_Info_set(info, keys[i], values[i]));

    /* Defaults first: no hints given. */
    MPI_Win win;
    int *base;
    CHECK_MPI(MPI_Win_allocate(sizeof(int) * 4, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    check_info(win, 0, keys, values, "window without hints");
    CHECK_MPI(MPI_Win_free(&win));

    /* Every hint, on an allocated window (same size on every rank, as promised). */
    CHECK_MPI(MPI_Win_allocate(sizeof(int) * 4, sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    check_info(win, 5, keys, values, "Win_allocate with hints");
    /* no_locks: fence only; the window works. */
    base[0] = -1;
    CHECK_MPI(MPI_Win_fence(0, win));
    int v = cell(test_rank, 0, 8);
    CHECK_MPI(MPI_Accumulate(&v, 1, MPI_INT, (test_rank + 1) % test_size, 0, 1, MPI_INT,
                             MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(base[0] == cell((test_rank + test_size - 1) % test_size, 0, 8),
          "window with no_locks: %d", base[0]);

    /* set_info: a user key and an ordering hint are accepted; the window keeps working. */
    MPI_Info later;
    CHECK_MPI(MPI_Info_create(&later));
    CHECK_MPI(MPI_Info_set(later, "rmatests_user_key", "kept or ignored"));
    CHECK_MPI(MPI_Info_set(later, "accumulate_ordering", "none"));
    CHECK_MPI(MPI_Win_set_info(win, later));
    CHECK_MPI(MPI_Info_free(&later));
    check_info(win, 5, keys, values, "after MPI_Win_set_info");
    CHECK_MPI(MPI_Win_free(&win));

    /* The same hints on Win_create and on a dynamic window (no_locks only there). */
    int mem[4];
    CHECK_MPI(MPI_Win_create(mem, sizeof mem, sizeof(int), info, MPI_COMM_WORLD, &win));
    check_info(win, 5, keys, values, "Win_create with hints");
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Info dyn;
    CHECK_MPI(MPI_Info_create(&dyn));
    CHECK_MPI(MPI_Info_set(dyn, "accumulate_ordering", "rar,waw"));
    CHECK_MPI(MPI_Win_create_dynamic(dyn, MPI_COMM_WORLD, &win));
    static const char *const dkeys[] = {"accumulate_ordering"};
    static const char *const dvalues[] = {"rar,waw"};
    check_info(win, 1, dkeys, dvalues, "Win_create_dynamic with accumulate_ordering");
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Info_free(&dyn));
    CHECK_MPI(MPI_Info_free(&info));
}

/* ---------------------------------------------------------------- error handlers */

static int handler_calls;
static MPI_Win handler_saw_win;
static int handler_saw_code;

static void win_handler(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_saw_win = *win;
    handler_saw_code = *code;
}

static void test_errhandlers(void)
{
    MPI_Win win;
    int *base;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    MPI_Errhandler got = MPI_ERRHANDLER_NULL;
    CHECK_MPI(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a new window's error handler is not MPI_ERRORS_ARE_FATAL");
    CHECK_MPI(MPI_Errhandler_free(&got));

    MPI_Errhandler mine = MPI_ERRHANDLER_NULL;
    CHECK_MPI(MPI_Win_create_errhandler(win_handler, &mine));
    CHECK(mine != MPI_ERRHANDLER_NULL, "MPI_Win_create_errhandler gave MPI_ERRHANDLER_NULL");
    CHECK_MPI(MPI_Win_set_errhandler(win, mine));
    CHECK_MPI(MPI_Win_get_errhandler(win, &got));
    CHECK(got == mine, "MPI_Win_get_errhandler does not return the handler just set");
    CHECK_MPI(MPI_Errhandler_free(&got));
    /* The user's handle can go; the window keeps the handler. */
    CHECK_MPI(MPI_Errhandler_free(&mine));
    CHECK(mine == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not reset the handle");

    int rc = MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS, "MPI_Win_call_errhandler returned %s", error_text(rc));
    CHECK(handler_calls == 1 && handler_saw_win == win && handler_saw_code == MPI_ERR_OTHER,
          "the window's handler ran %d times, with code %d", handler_calls, handler_saw_code);

    /* A user-defined error code goes through unchanged. */
    int cls, code;
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    rc = MPI_Win_call_errhandler(win, code);
    CHECK(rc == MPI_SUCCESS && handler_calls == 2 && handler_saw_code == code,
          "call_errhandler with a user code: rc %d, %d calls, code %d want %d", rc, handler_calls,
          handler_saw_code, code);

    /* MPI_ERRORS_RETURN: the call still returns MPI_SUCCESS, our handler no longer runs. */
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    rc = MPI_Win_call_errhandler(win, MPI_ERR_WIN);
    CHECK(rc == MPI_SUCCESS, "call_errhandler under MPI_ERRORS_RETURN returned %s",
          error_text(rc));
    CHECK(handler_calls == 2, "a replaced handler still ran");

    /* The handler set on one window is not another's. */
    MPI_Win other;
    int *obase;
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &obase,
                               &other));
    CHECK_MPI(MPI_Win_get_errhandler(other, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a second window inherited another's error handler");
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK_MPI(MPI_Win_free(&other));
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    test_create();
    test_allocate();
    test_shared();
    test_dynamic();
    test_keyvals();
    test_names();
    test_group();
    test_info();
    test_errhandlers();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
