/*
 * inter_coll: every collective MPI defines on intercommunicators, blocking and nonblocking,
 * with data checked, on intercommunicators made by MPI_Intercomm_create from splits of
 * MPI_COMM_WORLD into uneven halves (1 + (n-1), n/2 + n/2, 3 + 5 on 8 ranks). Rooted
 * collectives run with the root in either group. Derived datatypes on both sides of bcast,
 * gather, allgather and alltoallw. Several nonblocking collectives in flight at once,
 * completed in reverse order. On 1 rank there is no intercommunicator: the program says OK.
 */
#define TEST_NAME "inter_coll"
#include "../mpitest.h"

/* An intercommunicator and where this process stands in it. */
typedef struct {
    MPI_Comm comm;
    int group; /* 0: the lower ranks of WORLD, 1: the upper ones */
    int rank, size, rsize;
} Inter;

/* The value element i of (group g, rank r) contributes. */
static int val(int g, int r, int i)
{
    return g * 1000000 + r * 1000 + i;
}

/* A blocking collective, or its nonblocking form waited for at once. */
#define COLL(nb, blocking, nonblocking, ...)                                   \
    do {                                                                       \
        if (nb) {                                                              \
            MPI_Request rq_;                                                   \
            CHECK_MPI(nonblocking(__VA_ARGS__, &rq_));                         \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                      \
        } else {                                                               \
            CHECK_MPI(blocking(__VA_ARGS__));                                  \
        }                                                                      \
    } while (0)

/* The root argument of a rooted collective whose root is rank `rr` of group `rg`. */
static int root_arg(const Inter *x, int rg, int rr)
{
    if (x->group == rg)
        return x->rank == rr ? MPI_ROOT : MPI_PROC_NULL;
    return rr;
}

static void test_barrier(const Inter *x, int nb)
{
    COLL(nb, MPI_Barrier, MPI_Ibarrier, x->comm);
}

/* A vector type: `n` ints, every other one (stride 2). */
static MPI_Datatype strided(int n)
{
    MPI_Datatype t;
    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

static void test_bcast(const Inter *x, int nb)
{
    enum { N = 1000 };
    static int buf[2 * N];
    for (int rg = 0; rg < 2; rg++) {
        int rgsize = x->group == rg ? x->size : x->rsize;
        int rr = rgsize - 1;
        int root = root_arg(x, rg, rr);
        for (int i = 0; i < N; i++)
            buf[i] = root == MPI_ROOT ? val(rg, rr, i) : -1;
        COLL(nb, MPI_Bcast, MPI_Ibcast, buf, N, MPI_INT, root, x->comm);
        if (x->group != rg)
            for (int i = 0; i < N; i++)
                CHECK(buf[i] == val(rg, rr, i), "bcast from group %d: [%d] = %d", rg, i, buf[i]);
        if (root == MPI_PROC_NULL)
            CHECK(buf[0] == -1, "bcast touched a PROC_NULL buffer");
        /* Derived type at the receivers: N ints arrive every other int. */
        MPI_Datatype v = strided(N);
        for (int i = 0; i < 2 * N; i++)
            buf[i] = root == MPI_ROOT ? val(rg, rr, i) : -1;
        if (root == MPI_ROOT)
            COLL(nb, MPI_Bcast, MPI_Ibcast, buf, N, MPI_INT, root, x->comm);
        else
            COLL(nb, MPI_Bcast, MPI_Ibcast, buf, 1, v, root, x->comm);
        if (x->group != rg)
            for (int i = 0; i < N; i++) {
                CHECK(buf[2 * i] == val(rg, rr, i), "strided bcast [%d] = %d", i, buf[2 * i]);
                CHECK(buf[2 * i + 1] == -1, "strided bcast wrote a hole at %d", 2 * i + 1);
            }
        MPI_Type_free(&v);
    }
}

static void test_gather_scatter(const Inter *x, int nb)
{
    enum { N = 7 };
    for (int rg = 0; rg < 2; rg++) {
        int rgsize = x->group == rg ? x->size : x->rsize;
        int rr = rg == 0 ? 0 : rgsize - 1;
        int root = root_arg(x, rg, rr);
        int m = x->rsize;
        int *all = test_malloc(sizeof(int) * (size_t)(2 * N * m + 2));
        int mine[2 * N];
        /* Gather, the root receiving with a strided type. */
        for (int i = 0; i < N; i++)
            mine[i] = val(x->group, x->rank, i);
        for (int i = 0; i < 2 * N * m; i++)
            all[i] = -1;
        if (root == MPI_ROOT) {
            MPI_Datatype v = strided(N);
            MPI_Datatype vr;
            CHECK_MPI(MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * N * sizeof(int)), &vr));
            CHECK_MPI(MPI_Type_commit(&vr));
            COLL(nb, MPI_Gather, MPI_Igather, NULL, 0, MPI_INT, all, 1, vr, root, x->comm);
            for (int j = 0; j < m; j++)
                for (int i = 0; i < N; i++)
                    CHECK(all[2 * N * j + 2 * i] == val(1 - rg, j, i), "gather block %d [%d] = %d", j,
                          i, all[2 * N * j + 2 * i]);
            MPI_Type_free(&v);
            MPI_Type_free(&vr);
        } else {
            COLL(nb, MPI_Gather, MPI_Igather, mine, N, MPI_INT, NULL, 0, MPI_INT, root, x->comm);
        }
        /* Gatherv: remote rank j sends j + 1 ints, placed in reverse order. */
        int cnt[64], dsp[64];
        int at = 0;
        for (int j = m - 1; j >= 0; j--) {
            cnt[j] = j + 1;
            dsp[j] = at;
            at += j + 1;
        }
        for (int i = 0; i < at; i++)
            all[i] = -1;
        if (root == MPI_ROOT) {
            COLL(nb, MPI_Gatherv, MPI_Igatherv, NULL, 0, MPI_INT, all, cnt, dsp, MPI_INT, root, x->comm);
            for (int j = 0; j < m; j++)
                for (int i = 0; i <= j; i++)
                    CHECK(all[dsp[j] + i] == val(1 - rg, j, i), "gatherv block %d [%d] = %d", j, i,
                          all[dsp[j] + i]);
        } else {
            COLL(nb, MPI_Gatherv, MPI_Igatherv, mine, x->rank + 1, MPI_INT, NULL, NULL, NULL, MPI_INT,
                 root, x->comm);
        }
        /* Scatter: block j of the root's buffer to remote rank j. */
        for (int i = 0; i < N * m; i++)
            all[i] = val(rg, rr, i);
        for (int i = 0; i < N; i++)
            mine[i] = -1;
        if (root == MPI_ROOT || root == MPI_PROC_NULL) {
            COLL(nb, MPI_Scatter, MPI_Iscatter, all, N, MPI_INT, NULL, 0, MPI_INT, root, x->comm);
        } else {
            COLL(nb, MPI_Scatter, MPI_Iscatter, NULL, 0, MPI_INT, mine, N, MPI_INT, root, x->comm);
            for (int i = 0; i < N; i++)
                CHECK(mine[i] == val(rg, rr, x->rank * N + i), "scatter [%d] = %d", i, mine[i]);
        }
        /* Scatterv: block j (j + 1 ints, reverse order) to remote rank j. */
        if (root == MPI_ROOT || root == MPI_PROC_NULL) {
            COLL(nb, MPI_Scatterv, MPI_Iscatterv, all, cnt, dsp, MPI_INT, NULL, 0, MPI_INT, root, x->comm);
        } else {
            for (int i = 0; i < N; i++)
                mine[i] = -1;
            COLL(nb, MPI_Scatterv, MPI_Iscatterv, NULL, NULL, NULL, MPI_INT, mine, x->rank + 1, MPI_INT,
                 root, x->comm);
            /* Where remote rank x->rank's block sits at the root (same formula as above). */
            int d = 0;
            for (int j = x->size - 1; j > x->rank; j--)
                d += j + 1;
            for (int i = 0; i <= x->rank; i++)
                CHECK(mine[i] == val(rg, rr, d + i), "scatterv [%d] = %d, want %d", i, mine[i],
                      val(rg, rr, d + i));
        }
        free(all);
    }
}

static void test_allgather(const Inter *x, int nb)
{
    enum { N = 5 };
    int m = x->rsize;
    int mine[64];
    int *all = test_malloc(sizeof(int) * (size_t)(2 * N * m + 2));
    for (int i = 0; i < 64; i++)
        mine[i] = val(x->group, x->rank, i);
    for (int i = 0; i < N * m; i++)
        all[i] = -1;
    COLL(nb, MPI_Allgather, MPI_Iallgather, mine, N, MPI_INT, all, N, MPI_INT, x->comm);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < N; i++)
            CHECK(all[N * j + i] == val(1 - x->group, j, i), "allgather block %d [%d] = %d", j, i,
                  all[N * j + i]);
    /* Received with a strided type (resized to two blocks' span). */
    MPI_Datatype v = strided(N), vr;
    CHECK_MPI(MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * N * sizeof(int)), &vr));
    CHECK_MPI(MPI_Type_commit(&vr));
    for (int i = 0; i < 2 * N * m; i++)
        all[i] = -1;
    COLL(nb, MPI_Allgather, MPI_Iallgather, mine, N, MPI_INT, all, 1, vr, x->comm);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < N; i++)
            CHECK(all[2 * N * j + 2 * i] == val(1 - x->group, j, i), "strided allgather %d [%d]", j, i);
    MPI_Type_free(&v);
    MPI_Type_free(&vr);
    /* Allgatherv: remote rank j contributes j + 1 ints, at displacement 10 * j. */
    int cnt[64], dsp[64];
    for (int j = 0; j < m; j++) {
        cnt[j] = j + 1;
        dsp[j] = 10 * j;
    }
    int *allv = test_malloc(sizeof(int) * (size_t)(10 * m + 10));
    for (int i = 0; i < 10 * m + 10; i++)
        allv[i] = -1;
    COLL(nb, MPI_Allgatherv, MPI_Iallgatherv, mine, x->rank + 1, MPI_INT, allv, cnt, dsp, MPI_INT,
         x->comm);
    for (int j = 0; j < m; j++) {
        for (int i = 0; i <= j; i++)
            CHECK(allv[10 * j + i] == val(1 - x->group, j, i), "allgatherv %d [%d] = %d", j, i,
                  allv[10 * j + i]);
        CHECK(allv[10 * j + j + 1] == -1, "allgatherv wrote past block %d", j);
    }
    free(allv);
    free(all);
}

/* What (group g, rank r) sends to remote rank j, element i. */
static int code(int g, int r, int j, int i)
{
    return g * 1000000 + r * 10000 + j * 100 + i;
}

static void test_alltoall(const Inter *x, int nb)
{
    enum { N = 3 };
    int m = x->rsize, g = x->group, r = x->rank;
    int *s = test_malloc(sizeof(int) * (size_t)(N * m * 2 + 8));
    int *d = test_malloc(sizeof(int) * (size_t)(N * m * 2 + 8));
    for (int j = 0; j < m; j++)
        for (int i = 0; i < N; i++)
            s[N * j + i] = code(g, r, j, i);
    for (int i = 0; i < N * m; i++)
        d[i] = -1;
    COLL(nb, MPI_Alltoall, MPI_Ialltoall, s, N, MPI_INT, d, N, MPI_INT, x->comm);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < N; i++)
            CHECK(d[N * j + i] == code(1 - g, j, r, i), "alltoall from %d [%d] = %d", j, i, d[N * j + i]);
    /* Alltoallv: (r + j) % 3 + 1 ints between local r and remote j, packed in order. */
    int sc[64], sd[64], rc[64], rd[64], sat = 0, rat = 0;
    for (int j = 0; j < m; j++) {
        sc[j] = rc[j] = (r + j) % 3 + 1;
        sd[j] = sat;
        rd[j] = rat;
        for (int i = 0; i < sc[j]; i++)
            s[sat + i] = code(g, r, j, i);
        sat += sc[j];
        rat += rc[j];
    }
    for (int i = 0; i < rat; i++)
        d[i] = -1;
    COLL(nb, MPI_Alltoallv, MPI_Ialltoallv, s, sc, sd, MPI_INT, d, rc, rd, MPI_INT, x->comm);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < rc[j]; i++)
            CHECK(d[rd[j] + i] == code(1 - g, j, r, i), "alltoallv from %d [%d] = %d", j, i, d[rd[j] + i]);
    /* Alltoallw: 2 ints each way; odd remote ranks' blocks arrive as one 2-int type. */
    MPI_Datatype pair;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    MPI_Datatype st[64], rt[64];
    for (int j = 0; j < m; j++) {
        sc[j] = 2;
        sd[j] = (int)sizeof(int) * 2 * j;
        st[j] = MPI_INT;
        rc[j] = j % 2 ? 1 : 2;
        rt[j] = j % 2 ? pair : MPI_INT;
        rd[j] = (int)sizeof(int) * 2 * (m - 1 - j);
        s[2 * j] = code(g, r, j, 0);
        s[2 * j + 1] = code(g, r, j, 1);
    }
    for (int i = 0; i < 2 * m; i++)
        d[i] = -1;
    COLL(nb, MPI_Alltoallw, MPI_Ialltoallw, s, sc, sd, st, d, rc, rd, rt, x->comm);
    for (int j = 0; j < m; j++)
        for (int i = 0; i < 2; i++)
            CHECK(d[2 * (m - 1 - j) + i] == code(1 - g, j, r, i), "alltoallw from %d [%d]", j, i);
    MPI_Type_free(&pair);
    free(s);
    free(d);
}

static void test_reductions(const Inter *x, int nb)
{
    int m = x->rsize, g = x->group, r = x->rank;
    const int counts[] = {1, 5, 3000};
    for (int c = 0; c < 3; c++) {
        int n = counts[c];
        int *s = test_malloc(sizeof(int) * (size_t)n);
        int *d = test_malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            s[i] = val(g, r, i);
        /* Allreduce: the sum of the other group's data. */
        for (int i = 0; i < n; i++)
            d[i] = -1;
        COLL(nb, MPI_Allreduce, MPI_Iallreduce, s, d, n, MPI_INT, MPI_SUM, x->comm);
        for (int i = 0; i < n; i++) {
            int want = 0;
            for (int j = 0; j < m; j++)
                want += val(1 - g, j, i);
            CHECK(d[i] == want, "allreduce(%d) [%d] = %d, want %d", n, i, d[i], want);
        }
        /* Reduce (MAX) to a root in either group. */
        for (int rg = 0; rg < 2; rg++) {
            int rgsize = g == rg ? x->size : x->rsize;
            int rr = rgsize / 2;
            int root = root_arg(x, rg, rr);
            for (int i = 0; i < n; i++)
                d[i] = -1;
            COLL(nb, MPI_Reduce, MPI_Ireduce, s, d, n, MPI_INT, MPI_MAX, root, x->comm);
            if (root == MPI_ROOT)
                for (int i = 0; i < n; i++)
                    CHECK(d[i] == val(1 - rg, m - 1, i), "reduce(%d) [%d] = %d", n, i, d[i]);
            else
                CHECK(d[0] == -1, "reduce wrote at a non-root");
        }
        free(s);
        free(d);
    }
    /* The idle members of the root's group pass nothing significant but `root` (mpi4py passes
     * NULL buffers, count 0, MPI_BYTE and MPI_SUM, a pair no rank could reduce). */
    for (int rg = 0; rg < 2; rg++) {
        int root = root_arg(x, rg, 0);
        int one = 1, sum = -1;
        if (root == MPI_PROC_NULL)
            COLL(nb, MPI_Reduce, MPI_Ireduce, NULL, NULL, 0, MPI_BYTE, MPI_SUM, root, x->comm);
        else
            COLL(nb, MPI_Reduce, MPI_Ireduce, &one, &sum, 1, MPI_INT, MPI_SUM, root, x->comm);
        if (root == MPI_ROOT)
            CHECK(sum == m, "reduce with idle members: %d, want %d", sum, m);
    }
    /* Reduce_scatter_block: 840 elements in each group, 840 / size per rank. */
    enum { T = 840 };
    int *s = test_malloc(sizeof(int) * T), *d = test_malloc(sizeof(int) * T);
    for (int i = 0; i < T; i++)
        s[i] = val(g, r, i) % 100000;
    int per = T / x->size;
    for (int i = 0; i < per; i++)
        d[i] = -1;
    COLL(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, s, d, per, MPI_INT, MPI_SUM, x->comm);
    for (int i = 0; i < per; i++) {
        int want = 0;
        for (int j = 0; j < m; j++)
            want += val(1 - g, j, r * per + i) % 100000;
        CHECK(d[i] == want, "reduce_scatter_block [%d] = %d, want %d", i, d[i], want);
    }
    /* Reduce_scatter: 24 elements, rank k of a group of n gets 24 / n (+1 for the first 24 % n). */
    int rc[64], off = 0, mine_off = 0;
    for (int k = 0; k < x->size; k++) {
        rc[k] = 24 / x->size + (k < 24 % x->size);
        if (k == r)
            mine_off = off;
        off += rc[k];
    }
    for (int i = 0; i < rc[r]; i++)
        d[i] = -1;
    COLL(nb, MPI_Reduce_scatter, MPI_Ireduce_scatter, s, d, rc, MPI_INT, MPI_SUM, x->comm);
    for (int i = 0; i < rc[r]; i++) {
        int want = 0;
        for (int j = 0; j < m; j++)
            want += val(1 - g, j, mine_off + i) % 100000;
        CHECK(d[i] == want, "reduce_scatter [%d] = %d, want %d", i, d[i], want);
    }
    free(s);
    free(d);
}

/* Several nonblocking collectives in flight at once, completed in reverse order. */
static void test_in_flight(const Inter *x)
{
    int m = x->rsize, g = x->group;
    int a = val(g, x->rank, 0), sum = -1, bc = -1, all[64];
    MPI_Request rq[4];
    CHECK_MPI(MPI_Iallreduce(&a, &sum, 1, MPI_INT, MPI_SUM, x->comm, &rq[0]));
    int root = root_arg(x, 0, 0);
    bc = root == MPI_ROOT ? 4242 : -1;
    CHECK_MPI(MPI_Ibcast(&bc, 1, MPI_INT, root, x->comm, &rq[1]));
    CHECK_MPI(MPI_Iallgather(&a, 1, MPI_INT, all, 1, MPI_INT, x->comm, &rq[2]));
    CHECK_MPI(MPI_Ibarrier(x->comm, &rq[3]));
    for (int k = 3; k >= 0; k--)
        CHECK_MPI(MPI_Wait(&rq[k], MPI_STATUS_IGNORE));
    int want = 0;
    for (int j = 0; j < m; j++) {
        want += val(1 - g, j, 0);
        CHECK(all[j] == val(1 - g, j, 0), "in-flight allgather [%d] = %d", j, all[j]);
    }
    CHECK(sum == want, "in-flight allreduce = %d, want %d", sum, want);
    if (g == 1)
        CHECK(bc == 4242, "in-flight bcast = %d", bc);
}

/* The intercommunicator between WORLD ranks [0, k) and [k, n). */
static Inter make_inter(int k)
{
    Inter x;
    MPI_Comm local;
    x.group = test_rank < k ? 0 : 1;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, x.group, test_rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, x.group == 0 ? k : 0, 77, &x.comm));
    CHECK_MPI(MPI_Comm_free(&local));
    CHECK_MPI(MPI_Comm_rank(x.comm, &x.rank));
    CHECK_MPI(MPI_Comm_size(x.comm, &x.size));
    CHECK_MPI(MPI_Comm_remote_size(x.comm, &x.rsize));
    CHECK(x.size == (x.group == 0 ? k : test_size - k), "local size %d", x.size);
    return x;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int n = test_size;
    if (n >= 2) {
        int splits[3] = {1, n / 2, n >= 8 ? 3 : 0};
        for (int s = 0; s < 3; s++) {
            int k = splits[s];
            if (k <= 0 || k >= n || (s == 1 && k == 1))
                continue;
            Inter x = make_inter(k);
            for (int nb = 0; nb < 2; nb++) {
                test_barrier(&x, nb);
                test_bcast(&x, nb);
                test_gather_scatter(&x, nb);
                test_allgather(&x, nb);
                test_alltoall(&x, nb);
                test_reductions(&x, nb);
            }
            test_in_flight(&x);
            CHECK_MPI(MPI_Comm_free(&x.comm));
        }
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
