/*
 * every_c_comm: every large-count (_c) function of point-to-point, the collectives
 * (blocking, nonblocking and persistent), the neighbourhood collectives, MPI_Op_create_c and
 * MPI_Reduce_local_c, each called with small MPI_Count counts and its data checked. Runs on
 * any number of ranks (1 included: the ring's neighbour is then the rank itself).
 *
 * Checked against MPICH 4.0.2 (mpicc.mpich, MPIR_CVAR_DEVICE_COLLECTIVES=none): it passes on
 * 4 ranks; on 1 and 2 ranks, where a ring process is both neighbours of another, MPICH's
 * MPI_Neighbor_alltoallv_c pairs the two blocks the other way round (ours pairs block k with
 * block k^1, as MPI 4.0's erratum says and as the int forms here do: see README).
 */
#define TEST_NAME "every_c_comm"
#include "mpitest.h"

#define N 7 /* elements per block */

static int left, right;

/* The value of element i of the block rank `from` made for rank `to` in test `t`. */
static int val(int t, int from, int to, int i) { return t * 100000 + from * 1000 + to * 50 + i; }

static void check_ints(const int *got, int n, int t, int from, int to, const char *what)
{
    for (int i = 0; i < n; i++)
        CHECK(got[i] == val(t, from, to, i), "%s: element %d from rank %d is %d, want %d", what, i,
              from, got[i], val(t, from, to, i));
}

static void fill(int *buf, int n, int t, int from, int to)
{
    for (int i = 0; i < n; i++)
        buf[i] = val(t, from, to, i);
}

/* ---- point-to-point ----------------------------------------------------------------- */

enum { SEND, SSEND, BSEND, RSEND, ISEND, ISSEND, IBSEND, IRSEND, SEND_INIT, SSEND_INIT,
       BSEND_INIT, RSEND_INIT, SENDS };

static void one_send(int how, int t)
{
    int out[N], in[N];
    MPI_Request rr, sr;
    MPI_Status st;
    fill(out, N, t, test_rank, right);
    memset(in, 0, sizeof in);
    if (how == SEND_INIT + 100) /* never */
        return;
    /* The receive is posted before any send starts (a ready send needs it). */
    if (how % 2 == 0)
        CHECK_MPI(MPI_Irecv_c(in, N, MPI_INT, left, t, MPI_COMM_WORLD, &rr));
    else {
        CHECK_MPI(MPI_Recv_init_c(in, N, MPI_INT, left, t, MPI_COMM_WORLD, &rr));
        CHECK_MPI(MPI_Start(&rr));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    switch (how) {
    case SEND: CHECK_MPI(MPI_Send_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD)); break;
    case SSEND: CHECK_MPI(MPI_Ssend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD)); break;
    case BSEND: CHECK_MPI(MPI_Bsend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD)); break;
    case RSEND: CHECK_MPI(MPI_Rsend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD)); break;
    case ISEND: case ISSEND: case IBSEND: case IRSEND:
        if (how == ISEND) CHECK_MPI(MPI_Isend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == ISSEND) CHECK_MPI(MPI_Issend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == IBSEND) CHECK_MPI(MPI_Ibsend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == IRSEND) CHECK_MPI(MPI_Irsend_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        CHECK_MPI(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        break;
    default:
        if (how == SEND_INIT) CHECK_MPI(MPI_Send_init_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == SSEND_INIT) CHECK_MPI(MPI_Ssend_init_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == BSEND_INIT) CHECK_MPI(MPI_Bsend_init_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        if (how == RSEND_INIT) CHECK_MPI(MPI_Rsend_init_c(out, N, MPI_INT, right, t, MPI_COMM_WORLD, &sr));
        CHECK_MPI(MPI_Start(&sr));
        CHECK_MPI(MPI_Wait(&sr, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Request_free(&sr));
    }
    CHECK_MPI(MPI_Wait(&rr, &st));
    if (how % 2 == 1)
        CHECK_MPI(MPI_Request_free(&rr));
    check_ints(in, N, t, left, test_rank, "a send of the _c family");
    MPI_Count c = -1;
    CHECK_MPI(MPI_Get_count_c(&st, MPI_INT, &c));
    CHECK(c == N, "MPI_Get_count_c: %lld", (long long)c);
    CHECK_MPI(MPI_Get_elements_c(&st, MPI_INT, &c));
    CHECK(c == N, "MPI_Get_elements_c: %lld", (long long)c);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void p2p(void)
{
    static char bsend_buffer[1 << 16];
    CHECK_MPI(MPI_Buffer_attach_c(bsend_buffer, sizeof bsend_buffer));
    for (int how = 0; how < SENDS; how++)
        one_send(how, 10 + how);
    void *addr = NULL;
    MPI_Count size = 0;
    CHECK_MPI(MPI_Buffer_detach_c(&addr, &size));
    CHECK(addr == bsend_buffer && size == (MPI_Count)sizeof bsend_buffer,
          "MPI_Buffer_detach_c: %p, %lld", addr, (long long)size);

    int out[N], in[N];
    MPI_Status st;
    MPI_Request r;
    /* Sendrecv_c, Isendrecv_c */
    fill(out, N, 30, test_rank, right);
    CHECK_MPI(MPI_Sendrecv_c(out, N, MPI_INT, right, 30, in, N, MPI_INT, left, 30, MPI_COMM_WORLD, &st));
    check_ints(in, N, 30, left, test_rank, "MPI_Sendrecv_c");
    fill(out, N, 31, test_rank, right);
    CHECK_MPI(MPI_Isendrecv_c(out, N, MPI_INT, right, 31, in, N, MPI_INT, left, 31, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Wait(&r, &st));
    check_ints(in, N, 31, left, test_rank, "MPI_Isendrecv_c");
    /* Sendrecv_replace_c, Isendrecv_replace_c */
    fill(in, N, 32, test_rank, right);
    CHECK_MPI(MPI_Sendrecv_replace_c(in, N, MPI_INT, right, 32, left, 32, MPI_COMM_WORLD, &st));
    check_ints(in, N, 32, left, test_rank, "MPI_Sendrecv_replace_c");
    fill(in, N, 33, test_rank, right);
    CHECK_MPI(MPI_Isendrecv_replace_c(in, N, MPI_INT, right, 33, left, 33, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Wait(&r, &st));
    check_ints(in, N, 33, left, test_rank, "MPI_Isendrecv_replace_c");
    /* Mrecv_c, Imrecv_c */
    for (int k = 0; k < 2; k++) {
        MPI_Message m;
        fill(out, N, 34 + k, test_rank, right);
        CHECK_MPI(MPI_Isend_c(out, N, MPI_INT, right, 34 + k, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Mprobe(left, 34 + k, MPI_COMM_WORLD, &m, &st));
        memset(in, 0, sizeof in);
        if (k == 0) {
            CHECK_MPI(MPI_Mrecv_c(in, N, MPI_INT, &m, &st));
        } else {
            MPI_Request q;
            CHECK_MPI(MPI_Imrecv_c(in, N, MPI_INT, &m, &q));
            CHECK_MPI(MPI_Wait(&q, &st));
        }
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        check_ints(in, N, 34 + k, left, test_rank, k ? "MPI_Imrecv_c" : "MPI_Mrecv_c");
    }
}

/* ---- collectives ---------------------------------------------------------------------- */

/* One collective as mode 0 (blocking), 1 (nonblocking: I...) or 2 (persistent: ..._init). */
#define COLL3(mode, name, iname, initname, ...)                                              \
    do {                                                                                     \
        MPI_Request rq_;                                                                     \
        if ((mode) == 0) {                                                                   \
            CHECK_MPI(name(__VA_ARGS__));                                                    \
        } else if ((mode) == 1) {                                                            \
            CHECK_MPI(iname(__VA_ARGS__, &rq_));                                             \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                                    \
        } else {                                                                             \
            CHECK_MPI(initname(__VA_ARGS__, MPI_INFO_NULL, &rq_));                           \
            CHECK_MPI(MPI_Start(&rq_));                                                      \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                                    \
            CHECK_MPI(MPI_Request_free(&rq_));                                               \
        }                                                                                    \
    } while (0)

static const char *mode_name[] = {"blocking", "nonblocking", "persistent"};

static void collectives(int mode)
{
    const int p = test_size, me = test_rank, root = p - 1;
    /* Room for a block per rank, and for the 2 neighbours of a ring (1 rank included). */
    const int blocks = p > 2 ? p : 2;
    int *send = test_malloc(sizeof(int) * N * blocks), *recv = test_malloc(sizeof(int) * N * blocks);
    MPI_Count *counts = test_malloc(sizeof(MPI_Count) * p);
    MPI_Aint *displs = test_malloc(sizeof(MPI_Aint) * p);
    MPI_Datatype *types = test_malloc(sizeof(MPI_Datatype) * p);
    char what[64];
    int t = 40 + mode * 20;
#define WHAT(s) (snprintf(what, sizeof what, "%s %s", mode_name[mode], s), what)
    for (int r = 0; r < p; r++) {
        counts[r] = N;
        displs[r] = (MPI_Aint)r * N; /* in elements (v forms) */
        types[r] = MPI_INT;
    }

    /* Bcast_c */
    if (me == root) fill(recv, N, t, root, 0); else memset(recv, 0, sizeof(int) * N);
    COLL3(mode, MPI_Bcast_c, MPI_Ibcast_c, MPI_Bcast_init_c, recv, N, MPI_INT, root, MPI_COMM_WORLD);
    check_ints(recv, N, t, root, 0, WHAT("MPI_Bcast_c"));
    t++;
    /* Gather_c, Gatherv_c */
    fill(send, N, t, me, root);
    COLL3(mode, MPI_Gather_c, MPI_Igather_c, MPI_Gather_init_c, send, N, MPI_INT, recv, N, MPI_INT, root, MPI_COMM_WORLD);
    if (me == root) for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, root, WHAT("MPI_Gather_c"));
    COLL3(mode, MPI_Gatherv_c, MPI_Igatherv_c, MPI_Gatherv_init_c, send, N, MPI_INT, recv, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
    if (me == root) for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, root, WHAT("MPI_Gatherv_c"));
    t++;
    /* Scatter_c, Scatterv_c */
    if (me == root) for (int r = 0; r < p; r++) fill(send + r * N, N, t, root, r);
    COLL3(mode, MPI_Scatter_c, MPI_Iscatter_c, MPI_Scatter_init_c, send, N, MPI_INT, recv, N, MPI_INT, root, MPI_COMM_WORLD);
    check_ints(recv, N, t, root, me, WHAT("MPI_Scatter_c"));
    memset(recv, 0, sizeof(int) * N);
    COLL3(mode, MPI_Scatterv_c, MPI_Iscatterv_c, MPI_Scatterv_init_c, send, counts, displs, MPI_INT, recv, N, MPI_INT, root, MPI_COMM_WORLD);
    check_ints(recv, N, t, root, me, WHAT("MPI_Scatterv_c"));
    t++;
    /* Allgather_c, Allgatherv_c */
    fill(send, N, t, me, 0);
    COLL3(mode, MPI_Allgather_c, MPI_Iallgather_c, MPI_Allgather_init_c, send, N, MPI_INT, recv, N, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, 0, WHAT("MPI_Allgather_c"));
    memset(recv, 0, sizeof(int) * N * p);
    COLL3(mode, MPI_Allgatherv_c, MPI_Iallgatherv_c, MPI_Allgatherv_init_c, send, N, MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, 0, WHAT("MPI_Allgatherv_c"));
    t++;
    /* Alltoall_c, Alltoallv_c, Alltoallw_c (w: byte displacements) */
    for (int r = 0; r < p; r++) fill(send + r * N, N, t, me, r);
    COLL3(mode, MPI_Alltoall_c, MPI_Ialltoall_c, MPI_Alltoall_init_c, send, N, MPI_INT, recv, N, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, me, WHAT("MPI_Alltoall_c"));
    memset(recv, 0, sizeof(int) * N * p);
    COLL3(mode, MPI_Alltoallv_c, MPI_Ialltoallv_c, MPI_Alltoallv_init_c, send, counts, displs, MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, me, WHAT("MPI_Alltoallv_c"));
    memset(recv, 0, sizeof(int) * N * p);
    for (int r = 0; r < p; r++) displs[r] = (MPI_Aint)r * N * sizeof(int);
    COLL3(mode, MPI_Alltoallw_c, MPI_Ialltoallw_c, MPI_Alltoallw_init_c, send, counts, displs, types, recv, counts, displs, types, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) check_ints(recv + r * N, N, t, r, me, WHAT("MPI_Alltoallw_c"));
    for (int r = 0; r < p; r++) displs[r] = (MPI_Aint)r * N;
    t++;
    /* Reductions: every rank contributes rank + 1 + i; the sum over ranks is known. */
    for (int i = 0; i < N * p; i++) send[i] = me + 1 + i;
#define SUM_UPTO(k, i) ((k) * ((k) + 1) / 2 + (k) * (i)) /* sum over ranks 0..k-1 */
    COLL3(mode, MPI_Reduce_c, MPI_Ireduce_c, MPI_Reduce_init_c, send, recv, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    if (me == root) for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(p, i), "%s: %d", WHAT("MPI_Reduce_c"), recv[i]);
    COLL3(mode, MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c, send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(p, i), "%s: %d", WHAT("MPI_Allreduce_c"), recv[i]);
    COLL3(mode, MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c, send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(p, me * N + i), "%s: %d", WHAT("MPI_Reduce_scatter_block_c"), recv[i]);
    COLL3(mode, MPI_Reduce_scatter_c, MPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c, send, recv, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(p, me * N + i), "%s: %d", WHAT("MPI_Reduce_scatter_c"), recv[i]);
    COLL3(mode, MPI_Scan_c, MPI_Iscan_c, MPI_Scan_init_c, send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(me + 1, i), "%s: %d", WHAT("MPI_Scan_c"), recv[i]);
    COLL3(mode, MPI_Exscan_c, MPI_Iexscan_c, MPI_Exscan_init_c, send, recv, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me > 0) for (int i = 0; i < N; i++) CHECK(recv[i] == SUM_UPTO(me, i), "%s: %d", WHAT("MPI_Exscan_c"), recv[i]);
    t++;

    /* Neighbourhood collectives on a periodic ring: neighbours left (source) and right. */
    MPI_Comm ring;
    int dims[1] = {p}, periods[1] = {1};
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    int rme, rleft, rright;
    CHECK_MPI(MPI_Comm_rank(ring, &rme));
    CHECK_MPI(MPI_Cart_shift(ring, 0, 1, &rleft, &rright));
    /* A 1-D Cartesian communicator has 2 neighbours each way: left then right. */
    MPI_Count nc[2] = {N, N};
    MPI_Aint nd[2] = {0, N}, nbd[2] = {0, N * sizeof(int)};
    MPI_Datatype nt[2] = {MPI_INT, MPI_INT};
    fill(send, N, t, rme, 0);
    COLL3(mode, MPI_Neighbor_allgather_c, MPI_Ineighbor_allgather_c, MPI_Neighbor_allgather_init_c, send, N, MPI_INT, recv, N, MPI_INT, ring);
    check_ints(recv, N, t, rleft, 0, WHAT("MPI_Neighbor_allgather_c (left)"));
    check_ints(recv + N, N, t, rright, 0, WHAT("MPI_Neighbor_allgather_c (right)"));
    memset(recv, 0, sizeof(int) * 2 * N);
    COLL3(mode, MPI_Neighbor_allgatherv_c, MPI_Ineighbor_allgatherv_c, MPI_Neighbor_allgatherv_init_c, send, N, MPI_INT, recv, nc, nd, MPI_INT, ring);
    check_ints(recv, N, t, rleft, 0, WHAT("MPI_Neighbor_allgatherv_c"));
    check_ints(recv + N, N, t, rright, 0, WHAT("MPI_Neighbor_allgatherv_c"));
    t++;
    /* Block 0 goes to the left neighbour, block 1 to the right; tagged with the receiver's
     * view: what rank a receives from its left neighbour was made "to the right" (1). */
    fill(send, N, t, rme, 0);
    fill(send + N, N, t, rme, 1);
    COLL3(mode, MPI_Neighbor_alltoall_c, MPI_Ineighbor_alltoall_c, MPI_Neighbor_alltoall_init_c, send, N, MPI_INT, recv, N, MPI_INT, ring);
    check_ints(recv, N, t, rleft, 1, WHAT("MPI_Neighbor_alltoall_c (from left)"));
    check_ints(recv + N, N, t, rright, 0, WHAT("MPI_Neighbor_alltoall_c (from right)"));
    memset(recv, 0, sizeof(int) * 2 * N);
    COLL3(mode, MPI_Neighbor_alltoallv_c, MPI_Ineighbor_alltoallv_c, MPI_Neighbor_alltoallv_init_c, send, nc, nd, MPI_INT, recv, nc, nd, MPI_INT, ring);
    check_ints(recv, N, t, rleft, 1, WHAT("MPI_Neighbor_alltoallv_c"));
    check_ints(recv + N, N, t, rright, 0, WHAT("MPI_Neighbor_alltoallv_c"));
    memset(recv, 0, sizeof(int) * 2 * N);
    COLL3(mode, MPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw_c, MPI_Neighbor_alltoallw_init_c, send, nc, nbd, nt, recv, nc, nbd, nt, ring);
    check_ints(recv, N, t, rleft, 1, WHAT("MPI_Neighbor_alltoallw_c"));
    check_ints(recv + N, N, t, rright, 0, WHAT("MPI_Neighbor_alltoallw_c"));
    CHECK_MPI(MPI_Comm_free(&ring));
    free(send); free(recv); free(counts); free(displs); free(types);
#undef WHAT
}

/* ---- user operations ------------------------------------------------------------------- */

static MPI_Count large_calls, large_len;

/* A large-count user operation: the decimal digits of in, then those of inout (associative,
 * not commutative), counting its calls. */
static void shift_add(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    large_calls++;
    large_len = *len;
    for (MPI_Count i = 0; i < *len; i++) {
        long long a = ((long long *)in)[i], b = ((long long *)inout)[i], scale = 10;
        while (scale <= b)
            scale *= 10;
        ((long long *)inout)[i] = a * scale + b;
    }
}

static void ops(void)
{
    MPI_Op op;
    CHECK_MPI(MPI_Op_create_c(shift_add, 0, &op));
    long long a[N], b[N];
    for (int i = 0; i < N; i++) { a[i] = i; b[i] = 7; }
    CHECK_MPI(MPI_Reduce_local_c(a, b, N, MPI_LONG_LONG, op));
    for (int i = 0; i < N; i++) CHECK(b[i] == i * 10 + 7, "MPI_Reduce_local_c: %lld", b[i]);
    CHECK(large_calls == 1 && large_len == N, "the _c user function was called %lld times, len %lld",
          (long long)large_calls, (long long)large_len);
    /* In rank order: ((r0 * 10 + r1) * 10 + r2) ... with digits rank + 1. */
    long long mine = test_rank + 1, all = 0, want = 0;
    for (int r = 0; r < test_size; r++) want = want * 10 + r + 1;
    CHECK_MPI(MPI_Allreduce_c(&mine, &all, 1, MPI_LONG_LONG, op, MPI_COMM_WORLD));
    CHECK(all == want, "MPI_Allreduce_c with the _c operation: %lld, want %lld", all, want);
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Reduce_local_c(a, b, 0, MPI_LONG_LONG, MPI_SUM));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    left = (test_rank + test_size - 1) % test_size;
    right = (test_rank + 1) % test_size;
    p2p();
    for (int mode = 0; mode < 3; mode++)
        collectives(mode);
    ops();
    test_ok();
    MPI_Finalize();
    return 0;
}
