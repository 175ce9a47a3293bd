/*
 * persistent_neighbor: MPI_Neighbor_alltoall_init, _allgather_init, _alltoallv_init and
 * _alltoallw_init started many times with new data before every start and every block
 * checked after every completion (our library runs these, on contiguous blocks, as an
 * exchange: receives posted and sends sent at MPI_Start, no schedule).
 *
 * Topologies: a 2-D periodic Cartesian grid (MPI_Dims_create: on 1, 2 and 4 ranks a
 * dimension of size 1 or 2 has the same neighbour both ways), a 1-D non-periodic one (the
 * ends have MPI_PROC_NULL neighbours, whose receive blocks must keep the sentinel), and a
 * distributed graph with uneven degrees (0 to 3 destinations), self-loops and a repeated edge.
 * Sizes: 0, 8, 1024 bytes and 64 KiB per block (past the eager limit: sends that do not go
 * out at once). Each run is one of: Start + Wait; the messages arrive before the receivers
 * start (even ranks start, a barrier, then odd ranks start); Start + a bounded MPI_Test loop;
 * other traffic while the run is active (a ring MPI_Sendrecv on MPI_COMM_WORLD and a
 * blocking MPI_Neighbor_alltoall on the same communicator, both checked); Start then
 * MPI_Waitall of the request with a point-to-point exchange. The alltoallw form has odd
 * ranks send and receive through a strided type (the schedule's path) while even ranks use
 * contiguous ints (the exchange): the two paths meet in every run. A receive block shorter
 * than what arrives is MPI_ERR_TRUNCATE (MPI_ERRORS_RETURN) and the request runs again.
 *
 * Which block lands where: on a Cartesian topology the block sent in direction k is
 * received in direction k ^ 1 (MPI 4.0); on a distributed graph the n-th edge from a process
 * to another is matched with the n-th time the receiver lists it as a source.
 *
 * Tolerated: MPICH 4.0.2 pairs the blocks of two edges between the same two processes (a
 * periodic dimension of size 1 or 2, the repeated edge of the graph) by another rule (see
 * neighbor.c): those blocks are not checked under MPICH; MPICH's persistent truncation error
 * is not checked either. The rest passes
 * under MPICH (mpicc.mpich, mpiexec.mpich) at 1, 2 and 4 ranks (8 oversubscribed ranks of
 * MPICH's busy polling take minutes on two cores).
 */
#define TEST_NAME "persistent_neighbor"
#include "../mpitest.h"

#define MAXD 8
#define RING_TAG 5
#define SENTINEL 0xEE
#define JUNK 0x5A

static int n, me;

enum kind { ALLTOALL, ALLGATHER, ALLTOALLV, ALLTOALLW, NKIND };
static const char *kind_name[NKIND] = {"alltoall", "allgather", "alltoallv", "alltoallw"};

struct topo {
    const char *name;
    MPI_Comm comm;
    int indeg, outdeg;
    int src[MAXD], dst[MAXD];
    /* Receive block j holds the sender's block sendblk[j]; crossed[j]: one of two edges
     * between the same two processes, which MPICH 4.0.2 pairs by another rule. */
    int sendblk[MAXD], crossed[MAXD];
};

/* The distributed graph: rank r sends to the first (r * 5 + 1) % 4 of r + 1, r + 2 and
 * r + 1 again (mod n): degrees 0 to 3, a repeated edge, and self-loops on 1 and 2 ranks. */
static const int graph_offset[3] = {1, 2, 1};
static int graph_outdeg(int r)
{
    return (r * 5 + 1) % 4;
}

static void make_cart(struct topo *t, int ndims, int periodic, const char *name)
{
    int dims[2] = {0, 0}, periods[2] = {periodic, periodic};
    CHECK_MPI(MPI_Dims_create(n, ndims, dims));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &t->comm));
    t->name = name;
    t->indeg = t->outdeg = 2 * ndims;
    for (int d = 0; d < ndims; d++)
        CHECK_MPI(MPI_Cart_shift(t->comm, d, 1, &t->src[2 * d], &t->src[2 * d + 1]));
    for (int j = 0; j < t->indeg; j++) {
        t->dst[j] = t->src[j];
        t->sendblk[j] = j ^ 1;
        t->crossed[j] = t->src[j] != MPI_PROC_NULL && t->src[j] == t->src[j ^ 1];
    }
}

static void make_graph(struct topo *t)
{
    t->name = "dist_graph";
    t->outdeg = graph_outdeg(me);
    for (int k = 0; k < t->outdeg; k++)
        t->dst[k] = (me + graph_offset[k]) % n;
    t->indeg = 0;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < graph_outdeg(s); k++)
            if ((s + graph_offset[k]) % n == me) {
                CHECK(t->indeg < MAXD, "too many sources");
                t->src[t->indeg] = s;
                t->sendblk[t->indeg] = k;
                t->crossed[t->indeg] = 0;
                t->indeg++;
            }
    /* Blocks of an edge repeated between two processes. */
    for (int j = 0; j < t->indeg; j++)
        for (int i = 0; i < t->indeg; i++)
            t->crossed[j] |= i != j && t->src[i] == t->src[j];
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->indeg, t->src, MPI_UNWEIGHTED,
                                             t->outdeg, t->dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                             &t->comm));
}

/* Bytes of the alltoallv block `k` that rank `s` sends, for size class `base`. */
static int vbytes(int base, int s, int k)
{
    return base == 0 ? 0 : base + ((s * 7 + k) % 3) * 8;
}

/* The seed of the data rank `s` sends in its block `k` in run `run`. */
static uint32_t seed_of(enum kind kind, int s, int k, int run)
{
    return message_seed(s, kind == ALLGATHER ? -1 : k, run);
}

/* One persistent neighbourhood collective: its buffers and layouts. */
struct coll {
    enum kind kind;
    int base;          /* bytes per block (size class) */
    int strided;       /* alltoallw through the strided type on this rank */
    unsigned char *sbuf, *rbuf;
    size_t sbytes, rbytes;
    int scount[MAXD], sdispl[MAXD], rcount[MAXD], rdispl[MAXD];
    MPI_Aint swdispl[MAXD], rwdispl[MAXD];
    MPI_Datatype stype[MAXD], rtype[MAXD], vec;
    MPI_Request q;
};

/* Block bytes (packed) of send block k and of receive block j. */
static int send_bytes(const struct coll *c, int k)
{
    return c->kind == ALLTOALLV ? vbytes(c->base, me, k) : c->base;
}

static int recv_bytes(const struct coll *c, const struct topo *t, int j)
{
    return c->kind == ALLTOALLV ? vbytes(c->base, t->src[j], t->sendblk[j]) : c->base;
}

static void init_coll(struct coll *c, const struct topo *t, enum kind kind, int base)
{
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->base = base;
    c->strided = kind == ALLTOALLW && me % 2 == 1;
    int ints = base / 4;
    /* One slot per block, the strided ones twice as wide; v blocks in reverse order with an
     * 8-byte gap after each. */
    size_t slot = (size_t)(c->strided ? 2 * base : base) + 24;
    c->sbytes = slot * (size_t)(t->outdeg ? t->outdeg : 1);
    c->rbytes = slot * (size_t)(t->indeg ? t->indeg : 1);
    c->sbuf = test_malloc(c->sbytes);
    c->rbuf = test_malloc(c->rbytes);
    if (c->strided) {
        CHECK_MPI(MPI_Type_vector(ints, 1, 2, MPI_INT, &c->vec));
        CHECK_MPI(MPI_Type_commit(&c->vec));
    }
    for (int k = 0; k < t->outdeg; k++) {
        int at = kind == ALLTOALLV ? t->outdeg - 1 - k : k;
        c->scount[k] = kind == ALLTOALLV ? vbytes(base, me, k) : base;
        /* alltoall and allgather blocks lie back to back (block k at k * base). */
        c->sdispl[k] = kind == ALLTOALLV ? (int)slot * at : base * k;
        c->swdispl[k] = (MPI_Aint)slot * k;
        c->stype[k] = c->strided ? c->vec : MPI_INT;
        if (kind == ALLTOALLW)
            c->scount[k] = c->strided ? (ints > 0) : ints;
    }
    for (int j = 0; j < t->indeg; j++) {
        int at = kind == ALLTOALLV ? t->indeg - 1 - j : j;
        c->rcount[j] = recv_bytes(c, t, j);
        c->rdispl[j] = kind == ALLTOALLV ? (int)slot * at : base * j;
        c->rwdispl[j] = (MPI_Aint)slot * j;
        c->rtype[j] = c->strided ? c->vec : MPI_INT;
        if (kind == ALLTOALLW)
            c->rcount[j] = c->strided ? (ints > 0) : ints;
    }
    switch (kind) {
    case ALLTOALL:
        CHECK_MPI(MPI_Neighbor_alltoall_init(c->sbuf, base, MPI_BYTE, c->rbuf, base, MPI_BYTE,
                                             t->comm, MPI_INFO_NULL, &c->q));
        break;
    case ALLGATHER:
        CHECK_MPI(MPI_Neighbor_allgather_init(c->sbuf, base, MPI_BYTE, c->rbuf, base, MPI_BYTE,
                                              t->comm, MPI_INFO_NULL, &c->q));
        break;
    case ALLTOALLV:
        CHECK_MPI(MPI_Neighbor_alltoallv_init(c->sbuf, c->scount, c->sdispl, MPI_BYTE, c->rbuf,
                                              c->rcount, c->rdispl, MPI_BYTE, t->comm,
                                              MPI_INFO_NULL, &c->q));
        break;
    default:
        CHECK_MPI(MPI_Neighbor_alltoallw_init(c->sbuf, c->scount, c->swdispl, c->stype, c->rbuf,
                                              c->rcount, c->rwdispl, c->rtype, t->comm,
                                              MPI_INFO_NULL, &c->q));
        break;
    }
}

static void free_coll(struct coll *c)
{
    CHECK_MPI(MPI_Request_free(&c->q));
    CHECK(c->q == MPI_REQUEST_NULL, "a freed request becomes null");
    if (c->strided)
        CHECK_MPI(MPI_Type_free(&c->vec));
    free(c->sbuf);
    free(c->rbuf);
}

/* Where send block k starts (allgather: the one block). */
static unsigned char *send_block(struct coll *c, int k)
{
    if (c->kind == ALLGATHER)
        return c->sbuf;
    return c->kind == ALLTOALLW ? c->sbuf + c->swdispl[k] : c->sbuf + c->sdispl[k];
}

static unsigned char *recv_block(struct coll *c, int j)
{
    return c->kind == ALLTOALLW ? c->rbuf + c->rwdispl[j] : c->rbuf + c->rdispl[j];
}

static void fill_sends(struct coll *c, const struct topo *t, int run)
{
    memset(c->sbuf, JUNK, c->sbytes);
    memset(c->rbuf, SENTINEL, c->rbytes);
    int blocks = c->kind == ALLGATHER ? 1 : t->outdeg;
    for (int k = 0; k < blocks; k++) {
        int bytes = send_bytes(c, k);
        uint32_t seed = seed_of(c->kind, me, k, run);
        if (!c->strided) {
            fill_pattern(send_block(c, k), (size_t)bytes, seed);
            continue;
        }
        unsigned char packed[65536 + 64];
        fill_pattern(packed, (size_t)bytes, seed);
        for (int i = 0; i < bytes / 4; i++)
            memcpy(send_block(c, k) + 8 * i, packed + 4 * i, 4);
    }
}

static void check_recvs(struct coll *c, const struct topo *t, int run, int mode)
{
    for (int j = 0; j < t->indeg; j++) {
        unsigned char *b = recv_block(c, j);
        int bytes = recv_bytes(c, t, j);
        int s = t->src[j];
        if (s == MPI_PROC_NULL) {
            for (int i = 0; i < bytes; i++)
                CHECK(b[i] == SENTINEL, "%s %s: the block of MPI_PROC_NULL was written",
                      t->name, kind_name[c->kind]);
            continue;
        }
        if (t->crossed[j] &&
            tolerated("MPICH", "blocks of two edges between the same two processes "
                               "(not checked)"))
            continue;
        unsigned char got[65536 + 64];
        if (c->strided) {
            for (int i = 0; i < bytes / 4; i++) {
                memcpy(got + 4 * i, b + 8 * i, 4);
                for (int g = 4; g < 8 && i + 1 < bytes / 4; g++)
                    CHECK(b[8 * i + g] == SENTINEL, "%s alltoallw: a gap of the strided type "
                          "was written", t->name);
            }
        } else {
            memcpy(got, b, (size_t)bytes);
        }
        CHECK_PATTERN(got, (size_t)bytes, seed_of(c->kind, s, t->sendblk[j], run),
                      "%s %s of %d bytes, run %d (mode %d): block %d from %d", t->name,
                      kind_name[c->kind], c->base, run, mode, j, s);
        /* The gap after a v or w block keeps the sentinel (past the last block, all do). */
        int gapped = c->kind == ALLTOALLV || c->kind == ALLTOALLW || j == t->indeg - 1;
        for (int g = 0; g < 8 && gapped; g++)
            CHECK(b[c->strided ? 2 * bytes + g : bytes + g] == SENTINEL,
                  "%s %s: written past block %d", t->name, kind_name[c->kind], j);
    }
}

static void test_until_done(MPI_Request *q)
{
    int done = 0;
    for (long polls = 0; !done; polls++) {
        CHECK(polls < 100000000L, "MPI_Test never completed the neighbourhood collective");
        CHECK_MPI(MPI_Test(q, &done, MPI_STATUS_IGNORE));
    }
}

/* A ring exchange on MPI_COMM_WORLD and a blocking neighbourhood alltoall on the topology
 * while the persistent run is active, both checked. */
static void other_traffic(const struct topo *t, int run)
{
    int right = (me + 1) % n, left = (me + n - 1) % n, out = me * 1000 + run, in = -1;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, RING_TAG, &in, 1, MPI_INT, left, RING_TAG,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(in == left * 1000 + run, "ring exchange during a persistent run: got %d", in);
    int sv[MAXD], rv[MAXD];
    for (int k = 0; k < t->outdeg; k++)
        sv[k] = me * 100 + k + run * 10000;
    for (int j = 0; j < t->indeg; j++)
        rv[j] = -1;
    CHECK_MPI(MPI_Neighbor_alltoall(sv, 1, MPI_INT, rv, 1, MPI_INT, t->comm));
    for (int j = 0; j < t->indeg; j++) {
        int s = t->src[j];
        if (s == MPI_PROC_NULL || t->crossed[j])
            continue;
        CHECK(rv[j] == s * 100 + t->sendblk[j] + run * 10000,
              "blocking neighbour alltoall during a persistent run: block %d got %d", j, rv[j]);
    }
}

static void run_once(struct coll *c, const struct topo *t, int run, int mode)
{
    switch (mode) {
    case 0: /* plain */
        CHECK_MPI(MPI_Start(&c->q));
        CHECK_MPI(MPI_Wait(&c->q, MPI_STATUS_IGNORE));
        break;
    case 1: /* the messages of even ranks arrive before odd ranks start */
        if (me % 2 == 0)
            CHECK_MPI(MPI_Start(&c->q));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me % 2 == 1)
            CHECK_MPI(MPI_Start(&c->q));
        CHECK_MPI(MPI_Wait(&c->q, MPI_STATUS_IGNORE));
        break;
    case 2: /* polled */
        CHECK_MPI(MPI_Start(&c->q));
        test_until_done(&c->q);
        break;
    case 3: /* other traffic while active */
        CHECK_MPI(MPI_Start(&c->q));
        other_traffic(t, run);
        CHECK_MPI(MPI_Wait(&c->q, MPI_STATUS_IGNORE));
        break;
    default: { /* completed together with point-to-point requests */
        int right = (me + 1) % n, left = (me + n - 1) % n, out = run, in = -1;
        MPI_Request q[3];
        MPI_Status st[3];
        CHECK_MPI(MPI_Start(&c->q));
        q[0] = c->q;
        CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, left, RING_TAG, MPI_COMM_WORLD, &q[1]));
        CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, RING_TAG, MPI_COMM_WORLD, &q[2]));
        CHECK_MPI(MPI_Waitall(3, q, st));
        CHECK(q[0] == c->q && c->q != MPI_REQUEST_NULL, "MPI_Waitall keeps a persistent request");
        CHECK(in == run, "ring message with a persistent run: got %d", in);
        break;
    }
    }
}

static void many_runs(const struct topo *t)
{
    static const int sizes[] = {0, 8, 1024, 65536};
    for (int si = 0; si < 4; si++)
        for (int kind = 0; kind < NKIND; kind++) {
            struct coll c;
            init_coll(&c, t, (enum kind)kind, sizes[si]);
            int runs = sizes[si] > 1024 ? 10 : 40;
            for (int run = 0; run < runs; run++) {
                int mode = run % 5;
                fill_sends(&c, t, run);
                run_once(&c, t, run, mode);
                check_recvs(&c, t, run, mode);
            }
            free_coll(&c);
        }
}

/* Rank 0 has room for half of each block it receives: its runs end with MPI_ERR_TRUNCATE,
 * the others' succeed, and every run starts again. */
static void truncated(const struct topo *t)
{
    if (tolerated("MPICH", "the error of a truncated persistent neighbourhood collective "
                           "(not checked)"))
        return;
    CHECK_MPI(MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_RETURN));
    unsigned char sbuf[MAXD * 16], rbuf[MAXD * 16];
    MPI_Request q;
    int rcount = me == 0 ? 8 : 16;
    CHECK_MPI(MPI_Neighbor_alltoall_init(sbuf, 16, MPI_BYTE, rbuf, rcount, MPI_BYTE, t->comm,
                                         MPI_INFO_NULL, &q));
    int live = 0;
    for (int j = 0; j < t->indeg; j++)
        live |= t->src[j] != MPI_PROC_NULL;
    for (int run = 0; run < 4; run++) {
        for (int k = 0; k < t->outdeg; k++)
            fill_pattern(sbuf + 16 * k, 16, seed_of(ALLTOALL, me, k, run));
        memset(rbuf, SENTINEL, sizeof rbuf);
        CHECK_MPI(MPI_Start(&q));
        int rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (me == 0 && live)
            CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "%s run %d: want MPI_ERR_TRUNCATE, "
                  "got %s", t->name, run, rc == MPI_SUCCESS ? "MPI_SUCCESS" : error_text(rc));
        else
            CHECK(rc == MPI_SUCCESS, "%s run %d: %s", t->name, run, error_text(rc));
        for (int j = 0; j < t->indeg; j++) {
            if (t->src[j] == MPI_PROC_NULL || t->crossed[j])
                continue;
            CHECK_PATTERN(rbuf + rcount * j, (size_t)rcount,
                          seed_of(ALLTOALL, t->src[j], t->sendblk[j], run),
                          "%s truncated run %d block %d", t->name, run, j);
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Request_free(&q));
    CHECK_MPI(MPI_Comm_set_errhandler(t->comm, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    n = test_size;
    me = test_rank;
    struct topo topos[3];
    make_cart(&topos[0], 2, 1, "cart_2d_periodic");
    make_cart(&topos[1], 1, 0, "cart_1d_open");
    make_graph(&topos[2]);
    for (int i = 0; i < 3; i++) {
        many_runs(&topos[i]);
        truncated(&topos[i]);
        CHECK_MPI(MPI_Comm_free(&topos[i].comm));
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
