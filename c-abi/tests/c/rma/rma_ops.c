/*
 * rma_ops: every one-sided communication call (MPI 3.1 chapter 11.3, MPI 4.0 chapter 12.3),
 * each result checked element by element against values computed here.
 *
 *  - MPI_Put / MPI_Get of 0, 1, 7 and 1000 ints to and from the right neighbour (fence), the
 *    ints around the target region untouched; 4 MiB Put, Get and (1 Mi ints) Accumulate;
 *  - MPI_Accumulate with every predefined operation on suitable types: SUM and PROD on int,
 *    unsigned (wrapping), long long, short, float and double; MAX and MIN on int, unsigned,
 *    long long, double and float; LAND, LOR, LXOR on int and MPI_C_BOOL; BAND, BOR, BXOR on
 *    int, unsigned, long long, unsigned char and MPI_UINT64_T; MAXLOC and MINLOC on MPI_2INT
 *    and MPI_DOUBLE_INT (ties: lowest index); every rank accumulates into every rank in one
 *    fence epoch, so each target combines all ranks' contributions;
 *  - MPI_REPLACE in MPI_Accumulate (into a vector target type), MPI_Get_accumulate with SUM,
 *    MPI_NO_OP (a fetch; the target unchanged) and MPI_REPLACE (a swap), its result through a
 *    derived type; MPI_Fetch_and_op with SUM, MAX, BXOR, NO_OP and REPLACE on int, long long,
 *    unsigned long and double; MPI_Compare_and_swap on int, long long and MPI_UINT64_T, the
 *    compare matching and not;
 *  - MPI_Rput, MPI_Rget, MPI_Raccumulate and MPI_Rget_accumulate in a lock_all epoch,
 *    completed by MPI_Wait, by MPI_Test polled (bounded in time) and by MPI_Waitall; an Rput's
 *    origin buffer reused after its request completes; the data checked after a flush;
 *  - derived datatypes on the origin side, the target side and both: vector, indexed,
 *    resized (extent bigger than the data), a 2-D subarray (C and Fortran order) and a struct
 *    of int, double and int[2] resized to its C size, for Put, Get, Accumulate and
 *    Get_accumulate; the expected image of the target (or origin) is the origin data packed
 *    with MPI_Pack and unpacked with MPI_Unpack in the other side's type, over the rest of the
 *    memory left as it was;
 *  - displacement units 4, 8 and 12 that differ between ranks (an origin scales by the
 *    target's unit), and 1 (byte displacements) on a window of doubles;
 *  - zero counts (Put, Get, Accumulate, Get_accumulate, Rput with count 0) change nothing,
 *    also towards a rank whose window has no memory at all.
 *
 * Runs on 1 rank and up (the "right neighbour" of a lone rank is itself).
 *
 * Known deviations (checked to the standard; skipped only under that library, with a NOTE):
 *  - MPICH 4.0.2: MPI_Accumulate with MPI_MAX / MPI_MIN compares unsigned types as signed
 *    ones; MPI_Win_fence does not always complete a 4 MiB MPI_Get on 4 or more ranks
 *    (bytes missing after the fence: that Get is done under a lock instead); MPI_Win_allocate
 *    sizes not a multiple of 16 bytes (see rma_util.h);
 *  - Open MPI 4.1.4 in its default configuration (osc/rdma): an 8-byte MPI_Compare_and_swap
 *    crashes in the vader BTL (not skipped: run it with --mca osc pt2pt,sm).
 */
#define TEST_NAME "rma_ops"
#include "../mpitest.h"

#include "rma_util.h"

/* ---------------------------------------------------------------- Put and Get */

static void test_put_get_counts(void)
{
    enum { SLOTS = 1200, AT = 50 };
    int *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(sizeof(int) * SLOTS, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &win));
    static const int counts[] = {0, 1, 7, 1000};
    int *out = test_malloc(sizeof(int) * 1000), *in = test_malloc(sizeof(int) * 1000);
    for (int c = 0; c < 4; c++) {
        int n = counts[c];
        for (int j = 0; j < SLOTS; j++)
            base[j] = -5;
        for (int j = 0; j < n; j++) {
            out[j] = cell(test_rank, j, c);
            in[j] = -9;
        }
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Put(out, n, MPI_INT, right_of(test_rank), AT, n, MPI_INT, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int j = 0; j < SLOTS; j++) {
            int want = (j >= AT && j < AT + n) ? cell(left_of(test_rank), j - AT, c) : -5;
            CHECK(base[j] == want, "Put of %d ints: target element %d is %d, want %d", n, j,
                  base[j], want);
        }
        CHECK_MPI(MPI_Get(in, n, MPI_INT, right_of(test_rank), AT, n, MPI_INT, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int j = 0; j < n; j++)
            CHECK(in[j] == out[j], "Get of %d ints: element %d is %d, want %d", n, j, in[j],
                  out[j]);
    }
    free(out);
    free(in);
    CHECK_MPI(MPI_Win_free(&win));
}

static void test_large(void)
{
    const size_t bytes = (size_t)4 << 20;
    const int n = (int)(bytes / sizeof(int));
    unsigned char *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    unsigned char *out = test_malloc(bytes), *in = test_malloc(bytes);
    uint32_t mine = message_seed(test_rank, right_of(test_rank), 1);
    uint32_t theirs = message_seed(left_of(test_rank), test_rank, 1);
    fill_pattern(out, bytes, mine);
    memset(base, 0, bytes);
    memset(in, 0, bytes);

    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, (int)bytes, MPI_BYTE, right_of(test_rank), 0, (int)bytes, MPI_BYTE,
                      win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_PATTERN(base, bytes, theirs, "4 MiB Put from rank %d", left_of(test_rank));
    if (test_size >= 4 && tolerated("MPICH", "MPI_Win_fence does not always complete a 4 MiB "
                                             "MPI_Get on 4 or more ranks (bytes still missing "
                                             "after the fence); done under a lock instead")) {
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right_of(test_rank), 0, win));
        CHECK_MPI(MPI_Get(in, (int)bytes, MPI_BYTE, right_of(test_rank), 0, (int)bytes,
                          MPI_BYTE, win));
        CHECK_MPI(MPI_Win_unlock(right_of(test_rank), win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    } else {
        CHECK_MPI(MPI_Get(in, (int)bytes, MPI_BYTE, right_of(test_rank), 0, (int)bytes,
                          MPI_BYTE, win));
        CHECK_MPI(MPI_Win_fence(0, win));
    }
    CHECK_PATTERN(in, bytes, mine, "4 MiB Get from rank %d", right_of(test_rank));

    /* 1 Mi ints accumulated (SUM) by the left neighbour onto ints of value j. */
    int *ibase = (int *)base, *iout = (int *)out;
    for (int j = 0; j < n; j++) {
        ibase[j] = j;
        iout[j] = (j % 1000) * (test_rank + 1);
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(iout, n, MPI_INT, right_of(test_rank), 0, n, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int j = 0; j < n; j++) {
        int want = j + (j % 1000) * (left_of(test_rank) + 1);
        CHECK(ibase[j] == want, "4 MiB Accumulate: element %d is %d, want %d", j, ibase[j], want);
    }
    free(out);
    free(in);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- the accumulate matrix */

enum { T_INT, T_UNSIGNED, T_LONG_LONG, T_SHORT, T_FLOAT, T_DOUBLE, T_BOOL, T_UCHAR, T_UINT64 };

typedef struct {
    int type;
    MPI_Op op;
    const char *name;
} acc_case;

static MPI_Datatype mpi_type(int t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_UNSIGNED: return MPI_UNSIGNED;
    case T_LONG_LONG: return MPI_LONG_LONG;
    case T_SHORT: return MPI_SHORT;
    case T_FLOAT: return MPI_FLOAT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_BOOL: return MPI_C_BOOL;
    case T_UCHAR: return MPI_UNSIGNED_CHAR;
    default: return MPI_UINT64_T;
    }
}

static size_t type_size(int t)
{
    switch (t) {
    case T_INT: return sizeof(int);
    case T_UNSIGNED: return sizeof(unsigned);
    case T_LONG_LONG: return sizeof(long long);
    case T_SHORT: return sizeof(short);
    case T_FLOAT: return sizeof(float);
    case T_DOUBLE: return sizeof(double);
    case T_BOOL: return sizeof(_Bool);
    case T_UCHAR: return 1;
    default: return sizeof(uint64_t);
    }
}

/* Values are carried as long long (uint64 as its bit pattern); floats hold small integers. */
static void store(void *buf, int t, int j, long long v)
{
    switch (t) {
    case T_INT: ((int *)buf)[j] = (int)v; break;
    case T_UNSIGNED: ((unsigned *)buf)[j] = (unsigned)v; break;
    case T_LONG_LONG: ((long long *)buf)[j] = v; break;
    case T_SHORT: ((short *)buf)[j] = (short)v; break;
    case T_FLOAT: ((float *)buf)[j] = (float)v; break;
    case T_DOUBLE: ((double *)buf)[j] = (double)v; break;
    case T_BOOL: ((_Bool *)buf)[j] = v != 0; break;
    case T_UCHAR: ((unsigned char *)buf)[j] = (unsigned char)v; break;
    default: ((uint64_t *)buf)[j] = (uint64_t)v; break;
    }
}

static long long load(const void *buf, int t, int j)
{
    switch (t) {
    case T_INT: return ((const int *)buf)[j];
    case T_UNSIGNED: return ((const unsigned *)buf)[j];
    case T_LONG_LONG: return ((const long long *)buf)[j];
    case T_SHORT: return ((const short *)buf)[j];
    case T_FLOAT: return (long long)((const float *)buf)[j];
    case T_DOUBLE: return (long long)((const double *)buf)[j];
    case T_BOOL: return ((const _Bool *)buf)[j];
    case T_UCHAR: return ((const unsigned char *)buf)[j];
    default: return (long long)((const uint64_t *)buf)[j];
    }
}

/* v as the type holds it (wrapping for unsigned kinds). */
static long long norm(int t, long long v)
{
    unsigned char tmp[16];
    store(tmp, t, 0, v);
    return load(tmp, t, 0);
}

static long long combine(MPI_Op op, int t, long long a, long long b)
{
    long long r;
    if (op == MPI_SUM)
        r = (long long)((unsigned long long)a + (unsigned long long)b);
    else if (op == MPI_PROD)
        r = (long long)((unsigned long long)a * (unsigned long long)b);
    else if (op == MPI_MAX || op == MPI_MIN) {
        int greater = (t == T_UINT64) ? (unsigned long long)a > (unsigned long long)b : a > b;
        r = (op == MPI_MAX) == greater ? a : b;
    } else if (op == MPI_LAND)
        r = a && b;
    else if (op == MPI_LOR)
        r = a || b;
    else if (op == MPI_LXOR)
        r = (!a) != (!b);
    else if (op == MPI_BAND)
        r = a & b;
    else if (op == MPI_BOR)
        r = a | b;
    else
        r = a ^ b;
    return norm(t, r);
}

/* Rank r's contribution to element j of case c, and the target's starting value. */
static long long contribution(const acc_case *k, int c, int r, int j)
{
    unsigned long long h = (unsigned long long)(r * 131 + j * 17 + c * 7 + 3);
    if (k->op == MPI_PROD)
        return 1 + (long long)((r + j + c) % 3); /* 1..3: 8 ranks stay within a short */
    if (k->op == MPI_LAND || k->op == MPI_LOR || k->op == MPI_LXOR)
        return (r + 2 * j + c) % 3 == 0 ? 0 : (k->type == T_BOOL ? 1 : r + 1);
    if (k->op == MPI_BAND || k->op == MPI_BOR || k->op == MPI_BXOR) {
        h *= 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
        if (k->op == MPI_BAND)
            h |= 0x8421084210842108ull; /* keep some bits set through every AND */
        return norm(k->type, (long long)h);
    }
    if (k->op == MPI_SUM) {
        switch (k->type) {
        case T_UNSIGNED: return norm(k->type, (long long)(0x9E3779B9ull * (unsigned)(r + 1) + j));
        case T_LONG_LONG: return (1LL << 40) + r * 1000 + j;
        default: return (r * 3 + j) % 50 + 1;
        }
    }
    /* MAX, MIN: negatives too for signed types; the spread makes ties rare but possible. */
    long long v = (long long)(h * 2654435761ull % 97) - 48;
    if (k->type == T_UNSIGNED || k->type == T_UINT64)
        v = norm(k->type, v * 0x10001);
    return v;
}

static long long start_value(const acc_case *k, int c, int j)
{
    if (k->op == MPI_PROD)
        return 2;
    if (k->op == MPI_LAND)
        return 1;
    if (k->op == MPI_LOR || k->op == MPI_LXOR)
        return j % 2;
    if (k->op == MPI_BAND)
        return norm(k->type, -1);
    if (k->op == MPI_BOR || k->op == MPI_BXOR)
        return norm(k->type, 0x1248 * (j + c));
    if (k->op == MPI_SUM)
        return j;
    int is_unsigned = k->type == T_UNSIGNED || k->type == T_UINT64;
    if (k->op == MPI_MAX)
        return is_unsigned ? 0 : -40;
    return is_unsigned ? norm(k->type, -1) : 40;
}

static const acc_case acc_cases[] = {
    {T_INT, MPI_SUM, "SUM int"},          {T_UNSIGNED, MPI_SUM, "SUM unsigned"},
    {T_LONG_LONG, MPI_SUM, "SUM long long"}, {T_SHORT, MPI_SUM, "SUM short"},
    {T_FLOAT, MPI_SUM, "SUM float"},      {T_DOUBLE, MPI_SUM, "SUM double"},
    {T_INT, MPI_PROD, "PROD int"},        {T_UNSIGNED, MPI_PROD, "PROD unsigned"},
    {T_LONG_LONG, MPI_PROD, "PROD long long"}, {T_SHORT, MPI_PROD, "PROD short"},
    {T_DOUBLE, MPI_PROD, "PROD double"},  {T_FLOAT, MPI_PROD, "PROD float"},
    {T_INT, MPI_MAX, "MAX int"},          {T_UNSIGNED, MPI_MAX, "MAX unsigned"},
    {T_LONG_LONG, MPI_MAX, "MAX long long"}, {T_DOUBLE, MPI_MAX, "MAX double"},
    {T_FLOAT, MPI_MAX, "MAX float"},      {T_INT, MPI_MIN, "MIN int"},
    {T_UNSIGNED, MPI_MIN, "MIN unsigned"}, {T_LONG_LONG, MPI_MIN, "MIN long long"},
    {T_DOUBLE, MPI_MIN, "MIN double"},    {T_UINT64, MPI_MIN, "MIN uint64"},
    {T_INT, MPI_LAND, "LAND int"},        {T_INT, MPI_LOR, "LOR int"},
    {T_INT, MPI_LXOR, "LXOR int"},        {T_BOOL, MPI_LAND, "LAND C_BOOL"},
    {T_BOOL, MPI_LOR, "LOR C_BOOL"},      {T_BOOL, MPI_LXOR, "LXOR C_BOOL"},
    {T_INT, MPI_BAND, "BAND int"},        {T_UNSIGNED, MPI_BOR, "BOR unsigned"},
    {T_LONG_LONG, MPI_BXOR, "BXOR long long"}, {T_UCHAR, MPI_BAND, "BAND unsigned char"},
    {T_UCHAR, MPI_BOR, "BOR unsigned char"}, {T_UCHAR, MPI_BXOR, "BXOR unsigned char"},
    {T_UINT64, MPI_BXOR, "BXOR uint64"},  {T_UNSIGNED, MPI_BAND, "BAND unsigned"},
    {T_INT, MPI_BXOR, "BXOR int"},        {T_LONG_LONG, MPI_BOR, "BOR long long"},
};

enum { N_ACC = sizeof acc_cases / sizeof acc_cases[0], ACC_N = 13, ACC_SLOT = 8 * ACC_N };

typedef struct {
    int v;
    int i;
} int_int;

typedef struct {
    double v;
    int i;
} double_int;

/* Rank r's MAXLOC/MINLOC pair j: value with ties across ranks, index r*10+j. */
static int loc_value(int r, int j)
{
    return (r * 5 + j * 3) % 4;
}

static void test_accumulate_ops(void)
{
    /* Byte displacements: one slot of ACC_SLOT bytes per case, then the two pair cases. */
    const size_t pairs_at = (size_t)N_ACC * ACC_SLOT;
    const size_t bytes = pairs_at + 2 * 2 * ACC_N * sizeof(double_int);
    unsigned char *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, bytes);
    for (int c = 0; c < N_ACC; c++)
        for (int j = 0; j < ACC_N; j++)
            store(base + (size_t)c * ACC_SLOT, acc_cases[c].type, j,
                  start_value(&acc_cases[c], c, j));
    int_int *ii = (int_int *)(base + pairs_at);
    double_int *di = (double_int *)(base + pairs_at + 2 * ACC_N * sizeof(double_int));
    for (int j = 0; j < 2 * ACC_N; j++) {
        ii[j].v = j < ACC_N ? -1 : 10; /* first half MAXLOC, second MINLOC */
        ii[j].i = 1000;
        di[j].v = j < ACC_N ? -1.0 : 10.0;
        di[j].i = 1000;
    }

    /* Every rank's contributions for every case, built once, sent to every rank. */
    unsigned char *mine = test_malloc((size_t)N_ACC * ACC_SLOT);
    for (int c = 0; c < N_ACC; c++)
        for (int j = 0; j < ACC_N; j++)
            store(mine + (size_t)c * ACC_SLOT, acc_cases[c].type, j,
                  contribution(&acc_cases[c], c, test_rank, j));
    int_int lii[2 * ACC_N];
    double_int ldi[2 * ACC_N];
    for (int j = 0; j < 2 * ACC_N; j++) {
        lii[j].v = loc_value(test_rank, j);
        lii[j].i = test_rank * 10 + j % ACC_N;
        ldi[j].v = loc_value(test_rank, j) + 0.5;
        ldi[j].i = test_rank * 10 + j % ACC_N;
    }

    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int step = 0; step < test_size; step++) {
        int t = (test_rank + step) % test_size; /* everyone starts at a different target */
        for (int c = 0; c < N_ACC; c++)
            CHECK_MPI(MPI_Accumulate(mine + (size_t)c * ACC_SLOT, ACC_N,
                                     mpi_type(acc_cases[c].type), t,
                                     (MPI_Aint)((size_t)c * ACC_SLOT), ACC_N,
                                     mpi_type(acc_cases[c].type), acc_cases[c].op, win));
        CHECK_MPI(MPI_Accumulate(lii, ACC_N, MPI_2INT, t, (MPI_Aint)pairs_at, ACC_N, MPI_2INT,
                                 MPI_MAXLOC, win));
        CHECK_MPI(MPI_Accumulate(lii + ACC_N, ACC_N, MPI_2INT, t,
                                 (MPI_Aint)(pairs_at + ACC_N * sizeof(int_int)), ACC_N, MPI_2INT,
                                 MPI_MINLOC, win));
        MPI_Aint dat = (MPI_Aint)(pairs_at + 2 * ACC_N * sizeof(double_int));
        CHECK_MPI(MPI_Accumulate(ldi, ACC_N, MPI_DOUBLE_INT, t, dat, ACC_N, MPI_DOUBLE_INT,
                                 MPI_MAXLOC, win));
        CHECK_MPI(MPI_Accumulate(ldi + ACC_N, ACC_N, MPI_DOUBLE_INT, t,
                                 dat + (MPI_Aint)(ACC_N * sizeof(double_int)), ACC_N,
                                 MPI_DOUBLE_INT, MPI_MINLOC, win));
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    for (int c = 0; c < N_ACC; c++) {
        const acc_case *k = &acc_cases[c];
        int unsigned_order = (k->op == MPI_MAX || k->op == MPI_MIN) &&
                             (k->type == T_UNSIGNED || k->type == T_UINT64);
        if (unsigned_order && tolerated("MPICH", "MPI_Accumulate with MAX or MIN compares "
                                                 "unsigned types as signed ones"))
            continue;
        for (int j = 0; j < ACC_N; j++) {
            long long want = start_value(k, c, j);
            for (int r = 0; r < test_size; r++)
                want = combine(k->op, k->type, want, contribution(k, c, r, j));
            long long got = load(base + (size_t)c * ACC_SLOT, k->type, j);
            CHECK(got == want, "Accumulate %s from %d ranks: element %d is %lld, want %lld",
                  k->name, test_size, j, got, want);
        }
        /* The bytes after the case's elements are untouched. */
        for (size_t b = ACC_N * type_size(k->type); b < ACC_SLOT; b++)
            CHECK(base[(size_t)c * ACC_SLOT + b] == 0,
                  "Accumulate %s wrote past its %d elements (byte %zu)", k->name, ACC_N, b);
    }
    for (int j = 0; j < 2 * ACC_N; j++) {
        int maxloc = j < ACC_N;
        int best = maxloc ? -1 : 10, at = 1000;
        for (int r = 0; r < test_size; r++) {
            int v = loc_value(r, j), i = r * 10 + j % ACC_N;
            if ((maxloc && v > best) || (!maxloc && v < best) || (v == best && i < at)) {
                best = v;
                at = i;
            }
        }
        CHECK(ii[j].v == best && ii[j].i == at,
              "%s on MPI_2INT element %d: (%d, %d), want (%d, %d)",
              maxloc ? "MAXLOC" : "MINLOC", j % ACC_N, ii[j].v, ii[j].i, best, at);
        CHECK(di[j].v == best + 0.5 && di[j].i == at,
              "%s on MPI_DOUBLE_INT element %d: (%g, %d), want (%g, %d)",
              maxloc ? "MAXLOC" : "MINLOC", j % ACC_N, di[j].v, di[j].i, best + 0.5, at);
    }
    free(mine);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- REPLACE, NO_OP, fetches */

static void test_fetching_ops(void)
{
    enum { N = 9 };
    /* Window of long longs, unit 8. Slots: [0,N) Get_accumulate SUM, [N,2N) NO_OP,
     * [2N,3N) REPLACE, [3N,6N) Accumulate REPLACE through a vector, 6N.. single elements. */
    const int slots = 6 * N + 16;
    long long *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)(sizeof(long long) * (size_t)slots), sizeof(long long),
                               MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    for (int j = 0; j < slots; j++)
        base[j] = 1000 * test_rank + j;
    int t = right_of(test_rank), from = left_of(test_rank);

    long long add[N], repl[N], got_sum[N], got_noop[N], got_repl[N], strided[3 * N];
    for (int j = 0; j < N; j++) {
        add[j] = cell(test_rank, j, 1);
        repl[j] = -cell(test_rank, j, 2);
        got_sum[j] = got_noop[j] = got_repl[j] = -1;
    }
    for (int j = 0; j < 3 * N; j++)
        strided[j] = -1;
    /* The result of the REPLACE swap lands every third element (a vector type). */
    MPI_Datatype every_third;
    CHECK_MPI(MPI_Type_vector(N, 1, 3, MPI_LONG_LONG, &every_third));
    CHECK_MPI(MPI_Type_commit(&every_third));

    int i_one = 5, i_old = -1, i_cmp, i_new;
    long long l_one = 1LL << 33, l_old = -1;
    unsigned long ul_bits = 0xF0F0F0F0ul, ul_old = 0;
    double d_add = 0.25, d_old = -1;
    uint64_t u_cmp, u_new, u_old = 0;

    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get_accumulate(add, N, MPI_LONG_LONG, got_sum, N, MPI_LONG_LONG, t, 0, N,
                                 MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_LONG_LONG, got_noop, N, MPI_LONG_LONG, t, N, N,
                                 MPI_LONG_LONG, MPI_NO_OP, win));
    CHECK_MPI(MPI_Get_accumulate(repl, N, MPI_LONG_LONG, strided, 1, every_third, t, 2 * N, N,
                                 MPI_LONG_LONG, MPI_REPLACE, win));
    /* Accumulate REPLACE into every other element of [3N, 5N). */
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(N, 1, 2, MPI_LONG_LONG, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Accumulate(repl, N, MPI_LONG_LONG, t, 3 * N, 1, every_other, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_fence(0, win));

    const long long mine0 = 1000LL * t; /* the target's starting values are mine0 + j */
    for (int j = 0; j < N; j++) {
        CHECK(got_sum[j] == mine0 + j, "Get_accumulate SUM fetched %lld at %d, want %lld",
              got_sum[j], j, mine0 + j);
        CHECK(got_noop[j] == mine0 + N + j, "Get_accumulate NO_OP fetched %lld at %d, want %lld",
              got_noop[j], j, mine0 + N + j);
        CHECK(strided[3 * j] == mine0 + 2 * N + j && strided[3 * j + 1] == -1 &&
                  strided[3 * j + 2] == -1,
              "Get_accumulate REPLACE result through a vector: element %d is %lld", j,
              strided[3 * j]);
    }
    const long long theirs0 = 1000LL * test_rank;
    for (int j = 0; j < N; j++) {
        CHECK(base[j] == theirs0 + j + cell(from, j, 1), "after Get_accumulate SUM: %lld at %d",
              base[j], j);
        CHECK(base[N + j] == theirs0 + N + j, "Get_accumulate NO_OP changed the target at %d", j);
        CHECK(base[2 * N + j] == -cell(from, j, 2), "after Get_accumulate REPLACE: %lld at %d",
              base[2 * N + j], j);
    }
    for (int j = 0; j < 2 * N; j++) {
        long long want = j % 2 ? theirs0 + 3 * N + j : -cell(from, j / 2, 2);
        CHECK(base[3 * N + j] == want, "Accumulate REPLACE via a vector: element %d is %lld, "
              "want %lld", j, base[3 * N + j], want);
    }

    /* Fetch_and_op and Compare_and_swap on single elements at 6N.. of other types: each slot
     * reinterpreted (the window memory is the target's to define by local stores). */
    int s = 6 * N;
    int *ip = (int *)&base[s];
    unsigned long *ulp = (unsigned long *)&base[s + 2];
    double *dp = (double *)&base[s + 3];
    uint64_t *up = (uint64_t *)&base[s + 4];
    ip[0] = 100 + test_rank; /* SUM */
    base[s + 1] = 1LL << 40; /* long long MAX */
    *ulp = 0x0FF00FF0ul;     /* BXOR */
    *dp = 1.5;               /* double SUM */
    *up = 0xDEADBEEFCAFEull; /* CAS not matching */
    base[s + 5] = 42;        /* NO_OP */
    base[s + 6] = 43;        /* REPLACE */
    base[s + 7] = -8;        /* long long CAS matching */
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Fetch_and_op(&i_one, &i_old, MPI_INT, t, s, MPI_SUM, win));
    CHECK_MPI(MPI_Fetch_and_op(&l_one, &l_old, MPI_LONG_LONG, t, s + 1, MPI_MAX, win));
    CHECK_MPI(MPI_Fetch_and_op(&ul_bits, &ul_old, MPI_UNSIGNED_LONG, t, s + 2, MPI_BXOR, win));
    CHECK_MPI(MPI_Fetch_and_op(&d_add, &d_old, MPI_DOUBLE, t, s + 3, MPI_SUM, win));
    long long noop_old = -1, repl_old = -1, repl_new = 9999;
    CHECK_MPI(MPI_Fetch_and_op(NULL, &noop_old, MPI_LONG_LONG, t, s + 5, MPI_NO_OP, win));
    CHECK_MPI(MPI_Fetch_and_op(&repl_new, &repl_old, MPI_LONG_LONG, t, s + 6, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(i_old == 100 + t, "Fetch_and_op SUM int fetched %d, want %d", i_old, 100 + t);
    CHECK(l_old == 1LL << 40, "Fetch_and_op MAX long long fetched %lld", l_old);
    CHECK(ul_old == 0x0FF00FF0ul, "Fetch_and_op BXOR unsigned long fetched %lx", ul_old);
    CHECK(d_old == 1.5, "Fetch_and_op SUM double fetched %g", d_old);
    CHECK(noop_old == 42 && repl_old == 43, "Fetch_and_op NO_OP / REPLACE fetched %lld / %lld",
          noop_old, repl_old);
    CHECK(ip[0] == 105 + test_rank, "after Fetch_and_op SUM: %d, want %d", ip[0], 105 + test_rank);
    CHECK(base[s + 1] == 1LL << 40, "MAX with a smaller value changed the target: %lld",
          base[s + 1]);
    CHECK(*ulp == (0x0FF00FF0ul ^ 0xF0F0F0F0ul), "after Fetch_and_op BXOR: %lx", *ulp);
    CHECK(*dp == 1.75, "after Fetch_and_op SUM double: %g", *dp);
    CHECK(base[s + 5] == 42 && base[s + 6] == 9999, "after NO_OP / REPLACE: %lld / %lld",
          base[s + 5], base[s + 6]);

    /* Compare_and_swap: an int that does not match (ip[0] holds 105 + t now), then an int
     * that matches (in slot s + 8), a uint64 that does not and a long long that does. */
    i_cmp = 7;
    i_new = 70 + test_rank;
    i_old = -1;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Compare_and_swap(&i_new, &i_cmp, &i_old, MPI_INT, t, s, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(i_old == 105 + t && ip[0] == 105 + test_rank, "CAS int, no match: fetched %d, target %d",
          i_old, ip[0]);
    base[s + 8] = 0;
    ((int *)&base[s + 8])[0] = 7;
    u_cmp = 1;
    u_new = 2;
    long long l_cmp = -8, l_new = -80 - test_rank;
    l_old = 0;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Compare_and_swap(&i_new, &i_cmp, &i_old, MPI_INT, t, s + 8, win));
    CHECK_MPI(MPI_Compare_and_swap(&u_new, &u_cmp, &u_old, MPI_UINT64_T, t, s + 4, win));
    CHECK_MPI(MPI_Compare_and_swap(&l_new, &l_cmp, &l_old, MPI_LONG_LONG, t, s + 7, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(i_old == 7 && ((int *)&base[s + 8])[0] == 70 + from,
          "CAS int, matching: fetched %d, target %d want %d", i_old, ((int *)&base[s + 8])[0],
          70 + from);
    CHECK(u_old == 0xDEADBEEFCAFEull && *up == 0xDEADBEEFCAFEull,
          "CAS uint64, no match: fetched %llx, target %llx", (unsigned long long)u_old,
          (unsigned long long)*up);
    CHECK(l_old == -8 && base[s + 7] == -80 - from, "CAS long long: fetched %lld, target %lld",
          l_old, base[s + 7]);

    CHECK_MPI(MPI_Type_free(&every_third));
    CHECK_MPI(MPI_Type_free(&every_other));
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- request-based operations */

static void wait_by_test(MPI_Request *req, const char *what)
{
    double until = now_s() + POLL_LIMIT_S;
    int done = 0;
    for (long polls = 0; !done; polls++) {
        CHECK_MPI(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (!done && now_s() > until)
            FAIL("%s: MPI_Test still false after %.0f s (%ld polls)", what, POLL_LIMIT_S, polls);
    }
    CHECK(*req == MPI_REQUEST_NULL, "%s: a completed request was not set to MPI_REQUEST_NULL",
          what);
}

static void test_request_ops(void)
{
    enum { N = 300 };
    /* Slots of ints: [0,N) Rput target, [N,2N) Rget source, [2N,3N) Raccumulate,
     * [3N,4N) Rget_accumulate, then one for a zero-count Rput. */
    int *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(alloc_size(sizeof(int) * (4 * N + 1)), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    for (int j = 0; j < 4 * N + 1; j++)
        base[j] = j < N ? -1 : cell(test_rank, j, 3);
    int t = right_of(test_rank), from = left_of(test_rank);
    int *out = test_malloc(sizeof(int) * N), *got = test_malloc(sizeof(int) * N);
    int *acc = test_malloc(sizeof(int) * N), *fetched = test_malloc(sizeof(int) * N);
    for (int j = 0; j < N; j++) {
        out[j] = cell(test_rank, j, 4);
        acc[j] = j + test_rank;
        got[j] = fetched[j] = -1;
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    CHECK_MPI(MPI_Win_lock_all(0, win));
    MPI_Request rq[4];
    /* The Rput's buffer is reused as soon as the request is done: the data sent is the old. */
    CHECK_MPI(MPI_Rput(out, N, MPI_INT, t, 0, N, MPI_INT, win, &rq[0]));
    CHECK_MPI(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    CHECK(rq[0] == MPI_REQUEST_NULL, "MPI_Wait left the Rput request set");
    for (int j = 0; j < N; j++)
        out[j] = -77;
    CHECK_MPI(MPI_Rget(got, N, MPI_INT, t, N, N, MPI_INT, win, &rq[1]));
    wait_by_test(&rq[1], "Rget");
    for (int j = 0; j < N; j++)
        CHECK(got[j] == cell(t, N + j, 3), "Rget element %d: %d, want %d", j, got[j],
              cell(t, N + j, 3));
    CHECK_MPI(MPI_Raccumulate(acc, N, MPI_INT, t, 2 * N, N, MPI_INT, MPI_SUM, win, &rq[2]));
    CHECK_MPI(MPI_Rget_accumulate(acc, N, MPI_INT, fetched, N, MPI_INT, t, 3 * N, N, MPI_INT,
                                  MPI_SUM, win, &rq[3]));
    int dummy = 5;
    CHECK_MPI(MPI_Rput(&dummy, 0, MPI_INT, t, 4 * N, 0, MPI_INT, win, &rq[0]));
    CHECK_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
    for (int j = 0; j < 4; j++)
        CHECK(rq[j] == MPI_REQUEST_NULL, "MPI_Waitall left request %d set", j);
    for (int j = 0; j < N; j++)
        CHECK(fetched[j] == cell(t, 3 * N + j, 3), "Rget_accumulate fetched %d at %d, want %d",
              fetched[j], j, cell(t, 3 * N + j, 3));
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, test_rank, 0, win));
    for (int j = 0; j < N; j++) {
        CHECK(base[j] == cell(from, j, 4), "Rput landed %d at %d, want %d", base[j], j,
              cell(from, j, 4));
        CHECK(base[2 * N + j] == cell(test_rank, 2 * N + j, 3) + j + from,
              "Raccumulate: %d at %d", base[2 * N + j], j);
        CHECK(base[3 * N + j] == cell(test_rank, 3 * N + j, 3) + j + from,
              "Rget_accumulate: %d at %d", base[3 * N + j], j);
    }
    CHECK(base[4 * N] == cell(test_rank, 4 * N, 3), "a zero-count Rput changed its target");
    CHECK_MPI(MPI_Win_unlock(test_rank, win));

    free(out);
    free(got);
    free(acc);
    free(fetched);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- derived datatypes */

typedef struct {
    int a;
    double b;
    int c[2];
} record;

typedef struct {
    const char *name;
    MPI_Datatype otype, ttype;
    int ocount, tcount;
    int ints_only; /* accumulate allowed: every basic element an int */
} dt_case;

enum { DT_CASES = 8, DT_BYTES = 2048, DT_AT = 64 };

static void make_dt_cases(dt_case *k, MPI_Datatype *to_free, int *n_free)
{
    MPI_Datatype vec, vec2, idx1, idx2, res3, res2, sub_c, sub_f, rec, rec_raw, contig24, packed;
    CHECK_MPI(MPI_Type_vector(8, 3, 5, MPI_INT, &vec)); /* 24 ints over 38 */
    CHECK_MPI(MPI_Type_vector(6, 4, 9, MPI_INT, &vec2)); /* 24 ints over 49 */
    CHECK_MPI(MPI_Type_contiguous(24, MPI_INT, &contig24));
    int l1[] = {1, 4, 2, 5}, d1[] = {0, 3, 10, 20};
    int l2[] = {3, 3, 3, 3}, d2[] = {30, 20, 10, 0};
    CHECK_MPI(MPI_Type_indexed(4, l1, d1, MPI_INT, &idx1));
    CHECK_MPI(MPI_Type_indexed(4, l2, d2, MPI_INT, &idx2));
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &res3));
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &res2));
    int big_c[] = {6, 8}, sub[] = {3, 4}, start_c[] = {1, 2};
    int big_f[] = {5, 5}, start_f[] = {2, 0};
    CHECK_MPI(MPI_Type_create_subarray(2, big_c, sub, start_c, MPI_ORDER_C, MPI_INT, &sub_c));
    CHECK_MPI(MPI_Type_create_subarray(2, big_f, sub, start_f, MPI_ORDER_FORTRAN, MPI_INT,
                                       &sub_f));
    int bl[] = {1, 1, 2};
    MPI_Aint bd[] = {offsetof(record, a), offsetof(record, b), offsetof(record, c)};
    MPI_Datatype bt[] = {MPI_INT, MPI_DOUBLE, MPI_INT};
    CHECK_MPI(MPI_Type_create_struct(3, bl, bd, bt, &rec_raw));
    CHECK_MPI(MPI_Type_create_resized(rec_raw, 0, sizeof(record), &rec));
    /* The same signature without padding: int at 0, double at 4 (unaligned), ints at 12. */
    MPI_Aint pd[] = {0, 4, 12};
    CHECK_MPI(MPI_Type_create_struct(3, bl, pd, bt, &packed));
    MPI_Datatype all[] = {vec,   vec2,  contig24, idx1, idx2,    res3,
                          res2,  sub_c, sub_f,    rec,  rec_raw, packed};
    for (int i = 0; i < 12; i++) {
        if (all[i] != rec_raw)
            CHECK_MPI(MPI_Type_commit(&all[i]));
        to_free[(*n_free)++] = all[i];
    }
    vec = all[0], vec2 = all[1], contig24 = all[2], idx1 = all[3], idx2 = all[4];
    res3 = all[5], res2 = all[6], sub_c = all[7], sub_f = all[8], rec = all[9];
    packed = all[11];
    dt_case cases[DT_CASES] = {
        {"vector -> contiguous", vec, contig24, 1, 1, 1},
        {"contiguous -> vector", MPI_INT, vec2, 24, 1, 1},
        {"vector -> vector", vec, vec2, 1, 1, 1},
        {"indexed -> indexed (descending)", idx1, idx2, 1, 1, 1},
        {"resized x10 -> resized x10", res3, res2, 10, 10, 1},
        {"subarray C -> subarray Fortran", sub_c, sub_f, 1, 1, 1},
        {"struct x5 -> struct x5", rec, rec, 5, 5, 0},
        {"struct x3 -> unpadded struct x3", rec, packed, 3, 3, 0},
    };
    memcpy(k, cases, sizeof cases);
}

/* An int/record buffer's initial bytes: ints (or records) with small values from `seed`. */
static void fill_values(unsigned char *buf, size_t bytes, int records, int seed)
{
    if (records) {
        record *r = (record *)buf;
        memset(buf, 0, bytes);
        for (size_t i = 0; i < bytes / sizeof(record); i++) {
            r[i].a = seed * 1000 + (int)i;
            r[i].b = seed + i * 0.5;
            r[i].c[0] = -(int)i;
            r[i].c[1] = seed;
        }
    } else {
        int *v = (int *)buf;
        for (size_t i = 0; i < bytes / sizeof(int); i++)
            v[i] = seed * 1000 + (int)i;
    }
}

/* image := image with the data of (src, scount, stype) laid out as (dcount, dtype) at `at`. */
static void relayout(const void *src, int scount, MPI_Datatype stype, void *image, int dcount,
                     MPI_Datatype dtype)
{
    int size = 0, pos = 0;
    CHECK_MPI(MPI_Pack_size(scount, stype, MPI_COMM_WORLD, &size));
    void *packed = test_malloc((size_t)size);
    CHECK_MPI(MPI_Pack(src, scount, stype, packed, size, &pos, MPI_COMM_WORLD));
    int in = 0;
    CHECK_MPI(MPI_Unpack(packed, pos, &in, image, dcount, dtype, MPI_COMM_WORLD));
    CHECK(in == pos, "unpacking used %d of %d packed bytes", in, pos);
    free(packed);
}

static void compare_bytes(const unsigned char *got, const unsigned char *want, size_t n,
                          const char *op, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            FAIL("%s with %s: byte %zu is 0x%02x, want 0x%02x (int there: %d, want %d)", op, what,
                 i, got[i], want[i], ((const int *)got)[i / sizeof(int)],
                 ((const int *)want)[i / sizeof(int)]);
}

static void test_datatypes(void)
{
    dt_case cases[DT_CASES];
    MPI_Datatype to_free[16];
    int n_free = 0;
    make_dt_cases(cases, to_free, &n_free);
    unsigned char *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(DT_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    unsigned char *origin = test_malloc(DT_BYTES), *want = test_malloc(DT_BYTES);
    unsigned char *theirs = test_malloc(DT_BYTES), *result = test_malloc(DT_BYTES);
    int t = right_of(test_rank), from = left_of(test_rank);

    for (int c = 0; c < DT_CASES; c++) {
        const dt_case *k = &cases[c];
        int rec = !k->ints_only;
        /* Put: the target's bytes from DT_AT on take the origin's data in the target type. */
        fill_values(base, DT_BYTES, rec, 10 + test_rank);
        fill_values(origin, DT_BYTES, rec, 50 + test_rank);
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Put(origin, k->ocount, k->otype, t, DT_AT, k->tcount, k->ttype, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        fill_values(want, DT_BYTES, rec, 10 + test_rank);
        fill_values(theirs, DT_BYTES, rec, 50 + from);
        relayout(theirs, k->ocount, k->otype, want + DT_AT, k->tcount, k->ttype);
        compare_bytes(base, want, DT_BYTES, "Put", k->name);

        /* Get: the origin's buffer takes the target's data in the origin type. */
        fill_values(result, DT_BYTES, rec, 70 + test_rank);
        CHECK_MPI(MPI_Get(result, k->ocount, k->otype, t, DT_AT, k->tcount, k->ttype, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        /* The target's memory now: its start values, with this rank's Put over them. */
        fill_values(theirs, DT_BYTES, rec, 10 + t);
        relayout(origin, k->ocount, k->otype, theirs + DT_AT, k->tcount, k->ttype);
        fill_values(want, DT_BYTES, rec, 70 + test_rank);
        relayout(theirs + DT_AT, k->tcount, k->ttype, want, k->ocount, k->otype);
        compare_bytes(result, want, DT_BYTES, "Get", k->name);
        if (rec)
            continue;

        /* Accumulate SUM: the target's ints plus the origin's, where the target type lands. */
        fill_values(base, DT_BYTES, 0, 10 + test_rank);
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Accumulate(origin, k->ocount, k->otype, t, DT_AT, k->tcount, k->ttype,
                                 MPI_SUM, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        memset(want, 0, DT_BYTES);
        fill_values(theirs, DT_BYTES, 0, 50 + from);
        relayout(theirs, k->ocount, k->otype, want + DT_AT, k->tcount, k->ttype);
        int *w = (int *)want;
        for (int i = 0; i < DT_BYTES / (int)sizeof(int); i++)
            w[i] += 10 * 1000 + test_rank * 1000 + i;
        compare_bytes(base, want, DT_BYTES, "Accumulate SUM", k->name);
        /* The window was read locally: no remote update may overlap that epoch. */
        CHECK_MPI(MPI_Win_fence(0, win));

        /* Get_accumulate SUM: fetched (in the origin type) are the values before it. */
        fill_values(result, DT_BYTES, 0, 90);
        CHECK_MPI(MPI_Get_accumulate(origin, k->ocount, k->otype, result, k->ocount, k->otype, t,
                                     DT_AT, k->tcount, k->ttype, MPI_SUM, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        fill_values(theirs, DT_BYTES, 0, 10 + t);
        int *th = (int *)theirs;
        memset(want, 0, DT_BYTES);
        relayout(origin, k->ocount, k->otype, want + DT_AT, k->tcount, k->ttype);
        for (int i = 0; i < DT_BYTES / (int)sizeof(int); i++)
            th[i] += w[i]; /* the target after the Accumulate above */
        fill_values(want, DT_BYTES, 0, 90);
        relayout(theirs + DT_AT, k->tcount, k->ttype, want, k->ocount, k->otype);
        compare_bytes(result, want, DT_BYTES, "Get_accumulate SUM (fetched)", k->name);
    }
    for (int i = 0; i < n_free; i++)
        CHECK_MPI(MPI_Type_free(&to_free[i]));
    free(origin);
    free(want);
    free(theirs);
    free(result);
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- displacement units */

static int unit_of(int r)
{
    return 4 * (1 + r % 3); /* 4, 8, 12 bytes */
}

static void test_disp_units(void)
{
    enum { UNITS = 40 };
    size_t bytes = (size_t)UNITS * (size_t)unit_of(test_rank);
    int *mem = test_malloc(bytes);
    for (size_t i = 0; i < bytes / sizeof(int); i++)
        mem[i] = -1;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(mem, (MPI_Aint)bytes, unit_of(test_rank), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    int t = right_of(test_rank), from = left_of(test_rank);
    static const int at[] = {0, 3, 10, UNITS - 1};
    int vals[4], got[4];
    for (int i = 0; i < 4; i++)
        vals[i] = cell(test_rank, at[i], 5);
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        CHECK_MPI(MPI_Put(&vals[i], 1, MPI_INT, t, at[i], 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int step = unit_of(test_rank) / (int)sizeof(int);
    for (size_t i = 0; i < bytes / sizeof(int); i++) {
        int want = -1;
        for (int k = 0; k < 4; k++)
            if ((int)i == at[k] * step)
                want = cell(from, at[k], 5);
        CHECK(mem[i] == want, "unit %d: int %zu is %d, want %d (origin rank %d, unit %d there)",
              unit_of(test_rank), i, mem[i], want, from, unit_of(test_rank));
    }
    for (int i = 0; i < 4; i++)
        CHECK_MPI(MPI_Get(&got[i], 1, MPI_INT, t, at[i], 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == vals[i], "Get with the target's unit %d at %d: %d, want %d", unit_of(t),
              at[i], got[i], vals[i]);
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);

    /* Unit 1 over doubles: displacements in bytes; Accumulate at byte 8*k. */
    double d[16];
    for (int i = 0; i < 16; i++)
        d[i] = i;
    CHECK_MPI(MPI_Win_create(d, sizeof d, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    double two[2] = {0.5, 0.25};
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(two, 2, MPI_DOUBLE, t, 8 * 5, 2, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) {
        double want = i + (i == 5 ? 0.5 : i == 6 ? 0.25 : 0.0);
        CHECK(d[i] == want, "unit 1: double %d is %g, want %g", i, d[i], want);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/* ---------------------------------------------------------------- zero counts */

static void test_zero_counts(void)
{
    /* Rank 0 exposes nothing; the others 4 ints. Every rank sends count-0 operations to every
     * rank, at displacement 0, then checks its ints are unchanged. */
    int n = test_rank == 0 ? 0 : 4;
    int *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate((MPI_Aint)(sizeof(int) * (size_t)n), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    for (int j = 0; j < n; j++)
        base[j] = 11 * j;
    int buf[4] = {1, 2, 3, 4}, res[4] = {-1, -1, -1, -1};
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int r = 0; r < test_size; r++) {
        CHECK_MPI(MPI_Put(buf, 0, MPI_INT, r, 0, 0, MPI_INT, win));
        CHECK_MPI(MPI_Get(res, 0, MPI_INT, r, 0, 0, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(buf, 0, MPI_INT, r, 0, 0, MPI_INT, MPI_SUM, win));
        /* Nothing is combined, so nothing is checked against the type (mpi4py probes for
         * MPI_Get_accumulate this way; MPICH and Open MPI accept it). */
        CHECK_MPI(MPI_Accumulate(buf, 0, MPI_BYTE, r, 0, 0, MPI_BYTE, MPI_SUM, win));
        CHECK_MPI(MPI_Get_accumulate(buf, 0, MPI_BYTE, res, 0, MPI_BYTE, r, 0, 0, MPI_BYTE,
                                     MPI_SUM, win));
        CHECK_MPI(MPI_Get_accumulate(buf, 0, MPI_INT, res, 0, MPI_INT, r, 0, 0, MPI_INT, MPI_SUM,
                                     win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int j = 0; j < n; j++)
        CHECK(base[j] == 11 * j, "a zero-count operation changed element %d to %d", j, base[j]);
    for (int j = 0; j < 4; j++)
        CHECK(res[j] == -1, "a zero-count Get changed the origin buffer at %d", j);
    /* Under a lock too, with request-based calls. */
    MPI_Request rq[2];
    CHECK_MPI(MPI_Win_lock_all(0, win));
    CHECK_MPI(MPI_Rput(buf, 0, MPI_INT, 0, 0, 0, MPI_INT, win, &rq[0]));
    CHECK_MPI(MPI_Rget(res, 0, MPI_INT, right_of(test_rank), 0, 0, MPI_INT, win, &rq[1]));
    CHECK_MPI(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int j = 0; j < n; j++)
        CHECK(base[j] == 11 * j, "a zero-count Rput changed element %d to %d", j, base[j]);
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    test_put_get_counts();
    test_large();
    test_accumulate_ops();
    test_fetching_ops();
    test_request_ops();
    test_datatypes();
    test_disp_units();
    test_zero_counts();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
