/*
 * coll_all: every blocking collective on MPI_COMM_WORLD (and on halves of it made by
 * MPI_Comm_split), at counts 0, 1, 1000 and a large count, for every root, with and
 * without MPI_IN_PLACE; every result is checked against values computed locally.
 *
 * The large count is COLL_BIG elements (default 1 MiB elements for the one-buffer
 * collectives, divided among the ranks for the ones with a block per rank); the harness
 * may lower it with the COLL_BIG environment variable, and with COLL_ROOTS=ends limit the
 * roots to the first and last rank, to bound the run time.
 */
#define TEST_NAME "coll_all"
#include "../mpitest.h"

static long big = 1L << 20;
/* COLL_ROOTS=ends: only the first and last rank as roots, at every count. */
static int ends_only = 0;

/* The value of element j contributed by rank r in test number salt. */
static int val(int r, long j, int salt)
{
    return (int)(((long)(r + 1) * 131 + j * 7 + (long)salt * 17) % 100003);
}

static int *ints(long n)
{
    return test_malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
}

static void fill(int *b, long n, int r, int salt)
{
    for (long j = 0; j < n; j++)
        b[j] = val(r, j, salt);
}

static void expect(const int *b, long n, int r, int salt, const char *what, long cnt, int root)
{
    for (long j = 0; j < n; j++)
        if (b[j] != val(r, j, salt))
            FAIL("%s count %ld root %d: element %ld from rank %d is %d, want %d", what, cnt, root, j,
                 r, b[j], val(r, j, salt));
}

/* The counts of one test: 0, 1, 1000, big (scaled down by div). */
static long counts[4];
static void set_counts(long div)
{
    counts[0] = 0;
    counts[1] = 1;
    counts[2] = 1000;
    counts[3] = big / div > 1000 ? big / div : 1001;
}

/* Roots tried at a count: every rank for small counts, first and last for large ones. */
static int root_skip(long cnt, int root, int size)
{
    return (cnt > 1000 || ends_only) && root != 0 && root != size - 1;
}

static void t_bcast(MPI_Comm comm, int rank, int size)
{
    set_counts(1);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        int *b = ints(n);
        for (int root = 0; root < size; root++) {
            if (root_skip(n, root, size))
                continue;
            if (rank == root)
                fill(b, n, root, 1 + k);
            else
                memset(b, 0xff, (size_t)n * sizeof(int));
            CHECK_MPI(MPI_Bcast(b, (int)n, MPI_INT, root, comm));
            expect(b, n, root, 1 + k, "bcast", n, root);
        }
        free(b);
    }
}

static void t_gather_scatter(MPI_Comm comm, int rank, int size)
{
    set_counts(size);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        int *s = ints(n), *all = ints(n * size), *r = ints(n);
        for (int root = 0; root < size; root++) {
            if (root_skip(n, root, size))
                continue;
            for (int inplace = 0; inplace < 2; inplace++) {
                /* Gather. */
                fill(s, n, rank, 10 + k);
                memset(all, 0xff, (size_t)(n * size) * sizeof(int));
                const void *sb = s;
                if (inplace && rank == root) {
                    fill(all + n * rank, n, rank, 10 + k);
                    sb = MPI_IN_PLACE;
                }
                CHECK_MPI(MPI_Gather(sb, (int)n, MPI_INT, all, (int)n, MPI_INT, root, comm));
                if (rank == root)
                    for (int i = 0; i < size; i++)
                        expect(all + n * i, n, i, 10 + k, inplace ? "gather in place" : "gather", n, root);
                /* Scatter. */
                if (rank == root)
                    for (int i = 0; i < size; i++)
                        fill(all + n * i, n, i, 20 + k);
                memset(r, 0xff, (size_t)n * sizeof(int));
                void *rb = r;
                if (inplace && rank == root)
                    rb = MPI_IN_PLACE;
                CHECK_MPI(MPI_Scatter(all, (int)n, MPI_INT, rb, (int)n, MPI_INT, root, comm));
                if (rb == r)
                    expect(r, n, rank, 20 + k, "scatter", n, root);
                else
                    expect(all + n * rank, n, rank, 20 + k, "scatter in place", n, root);
            }
        }
        free(s);
        free(all);
        free(r);
    }
}

/* Counts and displacements of the v-variants: rank i has (i % 3) * n / 2 + (i == 1) elements,
 * placed in reverse rank order with a gap of 3 elements between blocks. */
static long vcount(int i, long n)
{
    return (i % 3) * n / 2 + (i == 1);
}

static long vlayout(int size, long n, int *cnt, int *displ)
{
    long at = 0;
    for (int i = size - 1; i >= 0; i--) {
        cnt[i] = (int)vcount(i, n);
        displ[i] = (int)at;
        at += cnt[i] + 3;
    }
    return at;
}

static void t_gatherv_scatterv(MPI_Comm comm, int rank, int size)
{
    set_counts(size);
    int *cnt = test_malloc(sizeof(int) * (size_t)size), *displ = test_malloc(sizeof(int) * (size_t)size);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        long total = vlayout(size, n, cnt, displ);
        long mine = cnt[rank];
        int *s = ints(mine), *all = ints(total), *r = ints(mine);
        for (int root = 0; root < size; root++) {
            if (root_skip(n, root, size))
                continue;
            fill(s, mine, rank, 30 + k);
            memset(all, 0xff, (size_t)total * sizeof(int));
            CHECK_MPI(MPI_Gatherv(s, (int)mine, MPI_INT, all, cnt, displ, MPI_INT, root, comm));
            if (rank == root)
                for (int i = 0; i < size; i++)
                    expect(all + displ[i], cnt[i], i, 30 + k, "gatherv", n, root);
            if (rank == root)
                for (int i = 0; i < size; i++)
                    fill(all + displ[i], cnt[i], i, 40 + k);
            memset(r, 0xff, (size_t)mine * sizeof(int));
            CHECK_MPI(MPI_Scatterv(all, cnt, displ, MPI_INT, r, (int)mine, MPI_INT, root, comm));
            expect(r, mine, rank, 40 + k, "scatterv", n, root);
        }
        free(s);
        free(all);
        free(r);
    }
    free(cnt);
    free(displ);
}

static void t_allgather(MPI_Comm comm, int rank, int size)
{
    set_counts(size);
    int *cnt = test_malloc(sizeof(int) * (size_t)size), *displ = test_malloc(sizeof(int) * (size_t)size);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        int *s = ints(n), *all = ints(n * size);
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(s, n, rank, 50 + k);
            memset(all, 0xff, (size_t)(n * size) * sizeof(int));
            const void *sb = s;
            if (inplace) {
                fill(all + n * rank, n, rank, 50 + k);
                sb = MPI_IN_PLACE;
            }
            CHECK_MPI(MPI_Allgather(sb, (int)n, MPI_INT, all, (int)n, MPI_INT, comm));
            for (int i = 0; i < size; i++)
                expect(all + n * i, n, i, 50 + k, inplace ? "allgather in place" : "allgather", n, -1);
        }
        long total = vlayout(size, n, cnt, displ);
        int *v = ints(total);
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(s, cnt[rank], rank, 60 + k);
            memset(v, 0xff, (size_t)total * sizeof(int));
            const void *sb = s;
            if (inplace) {
                fill(v + displ[rank], cnt[rank], rank, 60 + k);
                sb = MPI_IN_PLACE;
            }
            CHECK_MPI(MPI_Allgatherv(sb, cnt[rank], MPI_INT, v, cnt, displ, MPI_INT, comm));
            for (int i = 0; i < size; i++)
                expect(v + displ[i], cnt[i], i, 60 + k, "allgatherv", n, -1);
        }
        free(v);
        free(s);
        free(all);
    }
    free(cnt);
    free(displ);
}

static void t_alltoall(MPI_Comm comm, int rank, int size)
{
    set_counts((long)size * size);
    /* Also the sizes where the algorithms switch: 8 ints (Bruck at 8+ ranks), 4096 (medium). */
    long extra[2] = {8, 4096};
    for (int k = 0; k < 6; k++) {
        long n = k < 4 ? counts[k] : extra[k - 4];
        int *s = ints(n * size), *r = ints(n * size);
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int j = 0; j < size; j++)
                fill((inplace ? r : s) + n * j, n, rank * size + j, 70 + k);
            if (!inplace)
                memset(r, 0xff, (size_t)(n * size) * sizeof(int));
            CHECK_MPI(MPI_Alltoall(inplace ? MPI_IN_PLACE : s, (int)n, MPI_INT, r, (int)n, MPI_INT, comm));
            for (int i = 0; i < size; i++)
                expect(r + n * i, n, i * size + rank, 70 + k, inplace ? "alltoall in place" : "alltoall", n, -1);
        }
        free(s);
        free(r);
    }
}

/* Alltoallv: rank r sends (r + j) % 3 * n / 2 + 1 elements to rank j. */
static void t_alltoallv(MPI_Comm comm, int rank, int size)
{
    set_counts((long)size * size);
    int *sc = test_malloc(sizeof(int) * (size_t)size * 6);
    int *sd = sc + size, *rc = sc + 2 * size, *rd = sc + 3 * size, *sdb = sc + 4 * size, *rdb = sc + 5 * size;
    MPI_Datatype *types = test_malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        long st = 0, rt = 0;
        for (int j = size - 1; j >= 0; j--) {
            sc[j] = (int)((rank + j) % 3 * n / 2 + 1);
            rc[j] = (int)((j + rank) % 3 * n / 2 + 1);
            sd[j] = (int)st;
            rd[j] = (int)rt;
            sdb[j] = (int)(st * sizeof(int));
            rdb[j] = (int)(rt * sizeof(int));
            types[j] = MPI_INT;
            st += sc[j] + 1;
            rt += rc[j] + 2;
        }
        int *s = ints(st), *r = ints(rt);
        for (int w = 0; w < 2; w++) {
            for (int inplace = 0; inplace < 2; inplace++) {
                memset(r, 0xff, (size_t)rt * sizeof(int));
                for (int j = 0; j < size; j++)
                    fill(inplace ? r + rd[j] : s + sd[j], inplace ? rc[j] : sc[j], rank * size + j, 80 + k);
                const void *sb = inplace ? MPI_IN_PLACE : s;
                if (w)
                    CHECK_MPI(MPI_Alltoallw(sb, sc, sdb, types, r, rc, rdb, types, comm));
                else
                    CHECK_MPI(MPI_Alltoallv(sb, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm));
                for (int i = 0; i < size; i++)
                    expect(r + rd[i], rc[i], i * size + rank, 80 + k, w ? "alltoallw" : "alltoallv", n, -1);
            }
        }
        free(s);
        free(r);
    }
    free(sc);
    free(types);
}

/* Sum over ranks [lo, hi) of val(r, j, salt). */
static int sum_of(int lo, int hi, long j, int salt)
{
    int s = 0;
    for (int r = lo; r < hi; r++)
        s += val(r, j, salt);
    return s;
}

static void expect_sum(const int *b, long n, int lo, int hi, int salt, const char *what, long cnt, int root)
{
    for (long j = 0; j < n; j++)
        if (b[j] != sum_of(lo, hi, j, salt))
            FAIL("%s count %ld root %d: element %ld is %d, want %d", what, cnt, root, j, b[j], sum_of(lo, hi, j, salt));
}

static void t_reduce(MPI_Comm comm, int rank, int size)
{
    set_counts(1);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        int *s = ints(n), *r = ints(n);
        for (int root = 0; root < size; root++) {
            if (root_skip(n, root, size))
                continue;
            for (int inplace = 0; inplace < 2; inplace++) {
                fill(s, n, rank, 90 + k);
                memset(r, 0xff, (size_t)n * sizeof(int));
                const void *sb = s;
                if (inplace && rank == root) {
                    fill(r, n, rank, 90 + k);
                    sb = MPI_IN_PLACE;
                }
                CHECK_MPI(MPI_Reduce(sb, r, (int)n, MPI_INT, MPI_SUM, root, comm));
                if (rank == root)
                    expect_sum(r, n, 0, size, 90 + k, "reduce", n, root);
            }
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(s, n, rank, 100 + k);
            if (inplace)
                fill(r, n, rank, 100 + k);
            CHECK_MPI(MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, (int)n, MPI_INT, MPI_SUM, comm));
            expect_sum(r, n, 0, size, 100 + k, inplace ? "allreduce in place" : "allreduce", n, -1);
            /* Scan and exscan. */
            fill(s, n, rank, 110 + k);
            if (inplace)
                fill(r, n, rank, 110 + k);
            CHECK_MPI(MPI_Scan(inplace ? MPI_IN_PLACE : s, r, (int)n, MPI_INT, MPI_SUM, comm));
            expect_sum(r, n, 0, rank + 1, 110 + k, "scan", n, -1);
            fill(s, n, rank, 120 + k);
            if (inplace)
                fill(r, n, rank, 120 + k);
            CHECK_MPI(MPI_Exscan(inplace ? MPI_IN_PLACE : s, r, (int)n, MPI_INT, MPI_SUM, comm));
            if (rank > 0)
                expect_sum(r, n, 0, rank, 120 + k, "exscan", n, -1);
        }
        free(s);
        free(r);
    }
    /* Doubles and MAX: the largest of the ranks' values. */
    long n = 1000;
    double *d = test_malloc(sizeof(double) * (size_t)n), *e = test_malloc(sizeof(double) * (size_t)n);
    for (long j = 0; j < n; j++)
        d[j] = (double)((rank * 37 + j) % size) + 0.5;
    CHECK_MPI(MPI_Allreduce(d, e, (int)n, MPI_DOUBLE, MPI_MAX, comm));
    for (long j = 0; j < n; j++)
        CHECK(e[j] == (double)(size - 1) + 0.5, "allreduce MAX double element %ld is %g", j, e[j]);
    free(d);
    free(e);
}

static void t_reduce_scatter(MPI_Comm comm, int rank, int size)
{
    set_counts(size);
    int *cnt = test_malloc(sizeof(int) * (size_t)size);
    for (int k = 0; k < 4; k++) {
        long n = counts[k];
        long total = n * size;
        int *s = ints(total), *r = ints(total);
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(inplace ? r : s, total, rank, 130 + k);
            CHECK_MPI(MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : s, r, (int)n, MPI_INT, MPI_SUM, comm));
            for (long j = 0; j < n; j++)
                CHECK(r[j] == sum_of(0, size, n * rank + j, 130 + k), "reduce_scatter_block count %ld: element %ld is %d, want %d", n, j, r[j], sum_of(0, size, n * rank + j, 130 + k));
        }
        long at = 0, before = 0;
        for (int i = 0; i < size; i++) {
            cnt[i] = (int)vcount(i, n);
            if (i < rank)
                before += cnt[i];
            at += cnt[i];
        }
        int *s2 = ints(at), *r2 = ints(at);
        for (int inplace = 0; inplace < 2; inplace++) {
            fill(inplace ? r2 : s2, at, rank, 140 + k);
            CHECK_MPI(MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : s2, r2, cnt, MPI_INT, MPI_SUM, comm));
            for (long j = 0; j < cnt[rank]; j++)
                CHECK(r2[j] == sum_of(0, size, before + j, 140 + k), "reduce_scatter count %ld: element %ld is %d", n, j, r2[j]);
        }
        free(s);
        free(r);
        free(s2);
        free(r2);
    }
    free(cnt);
}

static void all_tests(MPI_Comm comm)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    CHECK_MPI(MPI_Barrier(comm));
    t_bcast(comm, rank, size);
    t_gather_scatter(comm, rank, size);
    t_gatherv_scatterv(comm, rank, size);
    t_allgather(comm, rank, size);
    t_alltoall(comm, rank, size);
    t_alltoallv(comm, rank, size);
    t_reduce(comm, rank, size);
    t_reduce_scatter(comm, rank, size);
    CHECK_MPI(MPI_Barrier(comm));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *b = getenv("COLL_BIG");
    if (b)
        big = atol(b);
    const char *ends = getenv("COLL_ROOTS");
    ends_only = ends && strcmp(ends, "ends") == 0;
    all_tests(MPI_COMM_WORLD);
#ifndef NO_SPLIT
    /* Halves: even and odd ranks, the odd ones in reverse order. */
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank % 2, test_rank % 2 ? -test_rank : test_rank, &half));
    all_tests(half);
    CHECK_MPI(MPI_Comm_free(&half));
#endif
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
