/*
 * persistent_coll: every persistent collective of MPI 4.0 (MPI_*_init), each started several
 * times with new data in its buffers before every start and its results checked after every
 * completion; completion by MPI_Wait and by polling MPI_Test; several started together with
 * MPI_Startall and completed with MPI_Waitall; MPI_IN_PLACE forms; a non-contiguous derived
 * type (packed anew at every start); a blocking collective between two starts of a persistent
 * one; MPI_Request_free of an inactive request; and the request staying valid (not
 * MPI_REQUEST_NULL) and inactive after each completion (MPI_Wait on it again returns at once).
 */
#define TEST_NAME "persistent_coll"
#include "../mpitest.h"

#define RUNS 4
#define C 3
#define BIG 20000

static int n, me;

/* Completes a started persistent request, by MPI_Wait or (odd runs) by polling MPI_Test. */
static void complete(MPI_Request *q, int run)
{
    if (run % 2 == 0) {
        CHECK_MPI(MPI_Wait(q, MPI_STATUS_IGNORE));
    } else {
        int done = 0;
        for (long polls = 0; !done; polls++) {
            CHECK(polls < 100000000L, "MPI_Test never completed the request");
            CHECK_MPI(MPI_Test(q, &done, MPI_STATUS_IGNORE));
        }
    }
    CHECK(*q != MPI_REQUEST_NULL, "a persistent request stays allocated after completion");
    /* Inactive now: waiting again returns at once with an empty status. */
    MPI_Status st;
    CHECK_MPI(MPI_Wait(q, &st));
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "an inactive request's status is empty (source %d, tag %d)", st.MPI_SOURCE,
          st.MPI_TAG);
}

static void go(MPI_Request *q, int run)
{
    CHECK_MPI(MPI_Start(q));
    complete(q, run);
}

static int v(int rank, int i, int run)
{
    return rank * 1000 + i * 10 + run * 100000;
}

static void allgathers(void)
{
    int sb[C], *rb = test_malloc(sizeof(int) * (size_t)(n * C));
    int *counts = test_malloc(sizeof(int) * (size_t)n), *displs = test_malloc(sizeof(int) * (size_t)n);
    int total = 0;
    for (int i = n - 1; i >= 0; i--) {
        counts[i] = i % 3 + 1;
        displs[i] = total;
        total += counts[i];
    }
    int *rv = test_malloc(sizeof(int) * (size_t)total);
    MPI_Request q[2];
    CHECK_MPI(MPI_Allgather_init(sb, C, MPI_INT, rb, C, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(MPI_Allgatherv_init(sb, counts[me], MPI_INT, rv, counts, displs, MPI_INT,
                                  MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    for (int run = 0; run < RUNS; run++) {
        for (int e = 0; e < C; e++)
            sb[e] = v(me, e, run);
        memset(rb, 0, sizeof(int) * (size_t)(n * C));
        go(&q[0], run);
        for (int r = 0; r < n; r++)
            for (int e = 0; e < C; e++)
                CHECK(rb[r * C + e] == v(r, e, run), "allgather run %d: [%d][%d] = %d", run, r,
                      e, rb[r * C + e]);
        memset(rv, 0, sizeof(int) * (size_t)total);
        go(&q[1], run);
        for (int r = 0; r < n; r++)
            for (int e = 0; e < counts[r]; e++)
                CHECK(rv[displs[r] + e] == v(r, e, run), "allgatherv run %d: [%d][%d] = %d",
                      run, r, e, rv[displs[r] + e]);
    }
    CHECK_MPI(MPI_Request_free(&q[0]));
    CHECK_MPI(MPI_Request_free(&q[1]));
    CHECK(q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "freed requests become null");
    free(rb);
    free(rv);
    free(counts);
    free(displs);
}

static void reductions(void)
{
    static int sb[BIG], rb[BIG], inplace[BIG];
    int counts[] = {1, 5, BIG};
    for (int c = 0; c < 3; c++) {
        int count = counts[c];
        MPI_Request q[2];
        CHECK_MPI(MPI_Allreduce_init(sb, rb, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                     MPI_INFO_NULL, &q[0]));
        CHECK_MPI(MPI_Allreduce_init(MPI_IN_PLACE, inplace, count, MPI_INT, MPI_MAX,
                                     MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
        for (int run = 0; run < RUNS; run++) {
            for (int i = 0; i < count; i++) {
                sb[i] = (me + 1) * (run + 1) + i;
                inplace[i] = me * 3 + i + run;
                rb[i] = -1;
            }
            CHECK_MPI(MPI_Startall(2, q));
            if (run % 2)
                CHECK_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
            else
                for (int k = 1; k >= 0; k--)
                    complete(&q[k], run);
            for (int i = 0; i < count; i++) {
                int want = (run + 1) * n * (n + 1) / 2 + n * i;
                CHECK(rb[i] == want, "allreduce(%d) run %d: [%d] = %d, want %d", count, run, i,
                      rb[i], want);
                CHECK(inplace[i] == (n - 1) * 3 + i + run, "in-place allreduce(%d) run %d: [%d] = %d",
                      count, run, i, inplace[i]);
            }
            /* A blocking collective between two starts. */
            int one = 1, all = 0;
            CHECK_MPI(MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
            CHECK(all == n, "blocking allreduce between starts");
        }
        CHECK_MPI(MPI_Request_free(&q[0]));
        CHECK_MPI(MPI_Request_free(&q[1]));
    }

    /* Reduce to a middle root, scan, exscan, reduce_scatter(_block). */
    int root = n / 2, x[C], r[C], s[C], ex[C];
    int *rsb = test_malloc(sizeof(int) * (size_t)(n * C)), rsr[C];
    int *counts_rs = test_malloc(sizeof(int) * (size_t)n), total = 0;
    for (int i = 0; i < n; i++)
        total += counts_rs[i] = i % 2 + 1;
    int *vsb = test_malloc(sizeof(int) * (size_t)total), vsr[2];
    MPI_Request q[5];
    CHECK_MPI(MPI_Reduce_init(x, r, C, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(MPI_Scan_init(x, s, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    CHECK_MPI(MPI_Exscan_init(x, ex, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
    CHECK_MPI(MPI_Reduce_scatter_block_init(rsb, rsr, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                            MPI_INFO_NULL, &q[3]));
    CHECK_MPI(MPI_Reduce_scatter_init(vsb, vsr, counts_rs, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                      MPI_INFO_NULL, &q[4]));
    for (int run = 0; run < RUNS; run++) {
        for (int e = 0; e < C; e++) {
            x[e] = me + e * run + 1;
            r[e] = s[e] = ex[e] = -5;
        }
        for (int i = 0; i < n * C; i++)
            rsb[i] = me + i + run;
        for (int i = 0; i < total; i++)
            vsb[i] = me * 2 + i + run;
        if (run % 2 == 0) {
            CHECK_MPI(MPI_Startall(5, q));
            CHECK_MPI(MPI_Waitall(5, q, MPI_STATUSES_IGNORE));
        } else {
            for (int k = 0; k < 5; k++)
                go(&q[k], run);
        }
        for (int e = 0; e < C; e++) {
            int sum_upto = me * (me + 1) / 2 + (me + 1) * (e * run + 1);
            if (me == root)
                CHECK(r[e] == n * (n - 1) / 2 + n * (e * run + 1), "reduce run %d: [%d] = %d",
                      run, e, r[e]);
            else
                CHECK(r[e] == -5, "reduce wrote a non-root's receive buffer");
            CHECK(s[e] == sum_upto, "scan run %d: [%d] = %d, want %d", run, e, s[e], sum_upto);
            if (me > 0)
                CHECK(ex[e] == sum_upto - x[e], "exscan run %d: [%d] = %d", run, e, ex[e]);
            int want = n * (n - 1) / 2 + n * (me * C + e + run);
            CHECK(rsr[e] == want, "reduce_scatter_block run %d: [%d] = %d, want %d", run, e,
                  rsr[e], want);
        }
        int first = 0;
        for (int i = 0; i < me; i++)
            first += counts_rs[i];
        for (int e = 0; e < counts_rs[me]; e++) {
            int want = n * (n - 1) + n * (first + e + run);
            CHECK(vsr[e] == want, "reduce_scatter run %d: [%d] = %d, want %d", run, e, vsr[e],
                  want);
        }
    }
    for (int k = 0; k < 5; k++)
        CHECK_MPI(MPI_Request_free(&q[k]));
    free(rsb);
    free(vsb);
    free(counts_rs);
}

static void rooted(void)
{
    int root = n - 1;
    int *all = test_malloc(sizeof(int) * (size_t)(n * C));
    int *counts = test_malloc(sizeof(int) * (size_t)n), *displs = test_malloc(sizeof(int) * (size_t)n);
    int total = 0;
    for (int i = n - 1; i >= 0; i--) {
        counts[i] = (i + 1) % 3 + 1;
        displs[i] = total;
        total += counts[i] + 1;
    }
    int *allv = test_malloc(sizeof(int) * (size_t)total);
    int mine[C], got[C], bc[1000];
    /* A vector type for the broadcast: every other int of 2 * 500. */
    int strided[1000];
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(500, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    MPI_Request q[7];
    CHECK_MPI(MPI_Gather_init(mine, C, MPI_INT, all, C, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(MPI_Gatherv_init(mine, counts[me], MPI_INT, allv, counts, displs, MPI_INT, root,
                               MPI_COMM_WORLD, MPI_INFO_NULL, &q[1]));
    CHECK_MPI(MPI_Scatter_init(all, C, MPI_INT, got, C, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[2]));
    CHECK_MPI(MPI_Scatterv_init(allv, counts, displs, MPI_INT, got, counts[me], MPI_INT, root,
                                MPI_COMM_WORLD, MPI_INFO_NULL, &q[3]));
    CHECK_MPI(MPI_Bcast_init(bc, 1000, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[4]));
    /* The root sends 500 ints from a strided buffer, the others receive them contiguous. */
    if (me == root)
        CHECK_MPI(MPI_Bcast_init(strided, 1, every_other, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[5]));
    else
        CHECK_MPI(MPI_Bcast_init(strided, 500, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &q[5]));
    CHECK_MPI(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &q[6]));
    CHECK_MPI(MPI_Type_free(&every_other)); /* the requests keep what they need */
    for (int run = 0; run < RUNS; run++) {
        for (int e = 0; e < C; e++)
            mine[e] = v(me, e, run);
        memset(all, 0, sizeof(int) * (size_t)(n * C));
        for (int i = 0; i < total; i++)
            allv[i] = -3;
        go(&q[0], run);
        go(&q[1], run);
        if (me == root) {
            for (int r = 0; r < n; r++) {
                for (int e = 0; e < C; e++)
                    CHECK(all[r * C + e] == v(r, e, run), "gather run %d: [%d][%d]", run, r, e);
                for (int e = 0; e < counts[r]; e++)
                    CHECK(allv[displs[r] + e] == v(r, e, run), "gatherv run %d: [%d][%d]", run, r, e);
                CHECK(allv[displs[r] + counts[r]] == -3, "gatherv wrote a gap");
            }
            for (int i = 0; i < n * C; i++)
                all[i] = 7 * i + run;
            for (int i = 0; i < total; i++)
                allv[i] = 11 * i + run;
        }
        go(&q[2], run);
        for (int e = 0; e < C; e++)
            CHECK(got[e] == 7 * (me * C + e) + run, "scatter run %d: [%d] = %d", run, e, got[e]);
        go(&q[3], run);
        for (int e = 0; e < counts[me]; e++)
            CHECK(got[e] == 11 * (displs[me] + e) + run, "scatterv run %d: [%d] = %d", run, e, got[e]);
        for (int i = 0; i < 1000; i++) {
            bc[i] = me == root ? i * 3 + run : -1;
            strided[i] = me == root ? i + run : -1;
        }
        CHECK_MPI(MPI_Startall(3, &q[4]));
        CHECK_MPI(MPI_Waitall(3, &q[4], MPI_STATUSES_IGNORE));
        for (int i = 0; i < 1000; i++)
            CHECK(bc[i] == i * 3 + run, "bcast run %d: [%d] = %d", run, i, bc[i]);
        if (me != root)
            for (int i = 0; i < 500; i++)
                CHECK(strided[i] == 2 * i + run, "strided bcast run %d: [%d] = %d", run, i, strided[i]);
    }
    for (int k = 0; k < 7; k++)
        CHECK_MPI(MPI_Request_free(&q[k]));
    free(all);
    free(allv);
    free(counts);
    free(displs);
}

static void alltoalls(void)
{
    int *sb = test_malloc(sizeof(int) * (size_t)(n * C)), *rb = test_malloc(sizeof(int) * (size_t)(n * C));
    int *sc = test_malloc(sizeof(int) * (size_t)n), *sd = test_malloc(sizeof(int) * (size_t)n);
    int *rc = test_malloc(sizeof(int) * (size_t)n), *rd = test_malloc(sizeof(int) * (size_t)n);
    int *sdb = test_malloc(sizeof(int) * (size_t)n), *rdb = test_malloc(sizeof(int) * (size_t)n);
    MPI_Datatype *types = test_malloc(sizeof(MPI_Datatype) * (size_t)n);
    int stotal = 0, rtotal = 0;
    for (int j = n - 1; j >= 0; j--) {
        sc[j] = (me + j) % 3;
        sd[j] = stotal;
        sdb[j] = stotal * (int)sizeof(int);
        stotal += sc[j] + 1;
        rc[j] = (j + me) % 3;
        rd[j] = rtotal;
        rdb[j] = rtotal * (int)sizeof(int);
        rtotal += rc[j] + 1;
        types[j] = MPI_INT;
    }
    int *vsb = test_malloc(sizeof(int) * (size_t)stotal), *vrb = test_malloc(sizeof(int) * (size_t)rtotal);
    int *wrb = test_malloc(sizeof(int) * (size_t)rtotal);
    MPI_Request q[3];
    CHECK_MPI(MPI_Alltoall_init(sb, C, MPI_INT, rb, C, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q[0]));
    CHECK_MPI(MPI_Alltoallv_init(vsb, sc, sd, MPI_INT, vrb, rc, rd, MPI_INT, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &q[1]));
    CHECK_MPI(MPI_Alltoallw_init(vsb, sc, sdb, types, wrb, rc, rdb, types, MPI_COMM_WORLD,
                                 MPI_INFO_NULL, &q[2]));
    for (int run = 0; run < RUNS; run++) {
        for (int j = 0; j < n; j++)
            for (int e = 0; e < C; e++)
                sb[j * C + e] = v(me, j * C + e, run);
        for (int j = 0; j < n; j++)
            for (int e = 0; e < sc[j]; e++)
                vsb[sd[j] + e] = v(me, j * 4 + e, run);
        for (int i = 0; i < rtotal; i++)
            vrb[i] = wrb[i] = -2;
        memset(rb, 0, sizeof(int) * (size_t)(n * C));
        CHECK_MPI(MPI_Startall(3, q));
        for (int k = 2; k >= 0; k--)
            complete(&q[k], run);
        for (int i = 0; i < n; i++) {
            for (int e = 0; e < C; e++)
                CHECK(rb[i * C + e] == v(i, me * C + e, run), "alltoall run %d: [%d][%d]", run, i, e);
            for (int e = 0; e < rc[i]; e++) {
                CHECK(vrb[rd[i] + e] == v(i, me * 4 + e, run), "alltoallv run %d: [%d][%d] = %d",
                      run, i, e, vrb[rd[i] + e]);
                CHECK(wrb[rd[i] + e] == v(i, me * 4 + e, run), "alltoallw run %d: [%d][%d]", run, i, e);
            }
            CHECK(vrb[rd[i] + rc[i]] == -2 && wrb[rd[i] + rc[i]] == -2, "alltoallv/w wrote a gap");
        }
    }
    for (int k = 0; k < 3; k++)
        CHECK_MPI(MPI_Request_free(&q[k]));
    free(sb); free(rb); free(sc); free(sd); free(rc); free(rd); free(sdb); free(rdb);
    free(types); free(vsb); free(vrb); free(wrb);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    n = test_size;
    me = test_rank;
    allgathers();
    reductions();
    rooted();
    alltoalls();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
