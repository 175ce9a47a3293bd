/*
 * collbench.c - neighbourhood and persistent collectives against what a program would
 * otherwise write, measured in one job, alternating (the `collbench` tool builds and runs it;
 * MPI 4.0 calls: MPI_Neighbor_alltoall(_init), MPI_Allreduce_init, MPI_Bcast_init).
 *
 * Usage:  mpirun -n NP ./collbench [--quick]
 *
 * Pairs (variant A against variant B):
 *   halo       a 2-D periodic Cartesian grid (MPI_Dims_create), SIZE bytes to each of the
 *              4 neighbours: A = MPI_Neighbor_alltoall, B = the same exchange written with
 *              MPI_Cart_shift, 4 MPI_Irecv, 4 MPI_Isend and MPI_Waitall;
 *   halo_init  A = MPI_Neighbor_alltoall_init once, then MPI_Start + MPI_Wait, B as above;
 *   allreduce  A = MPI_Allreduce_init once (SIZE/8 doubles, MPI_SUM), then MPI_Start +
 *              MPI_Wait; B = MPI_Allreduce;
 *   bcast      A = MPI_Bcast_init once (SIZE bytes from rank 0), then Start + Wait;
 *              B = MPI_Bcast.
 * Method: a sample is a batch of calls (chosen from a warm-up so a batch lasts about 200 us,
 * 1 to 200 calls) timed on every rank, time per call, the slowest rank's taken. Each round
 * takes one sample of A and one of B, the order swapping every round, so that both see the
 * same machine (the host is shared and noisy). Figures: the median over rounds of each
 * variant, and the median over rounds of the per-round ratio A/B (< 1: A faster).
 * Every call's data is checked after the timed loop (a wrong result ends the job).
 *
 * Output (rank 0): comment lines start with '#';
 *   result PAIR SIZE A_us B_us RATIO ROUNDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, quick;

static void die(const char *what)
{
    fprintf(stderr, "collbench: rank %d: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *checked_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("out of memory");
    return p;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum pair { HALO, HALO_INIT, ALLREDUCE, BCAST };
static const char *pair_name[] = {"halo", "halo_init", "allreduce", "bcast"};

struct bench {
    enum pair pair;
    long size;
    MPI_Comm grid;
    int nbr[4];
    unsigned char *send, *recv;
    double *dsend, *drecv;
    MPI_Request persistent;
};

/* The halo exchange written by hand: receive block 2d from the -1 neighbour (what it sent
 * forward), block 2d+1 from the +1 neighbour; tags name the direction of travel. */
static void halo_by_hand(struct bench *b)
{
    MPI_Request q[8];
    int n = 0;
    for (int k = 0; k < 4; k++)
        MPI_Irecv(b->recv + (size_t)k * (size_t)b->size, (int)b->size, MPI_BYTE, b->nbr[k],
                  k ^ 1, b->grid, &q[n++]);
    for (int k = 0; k < 4; k++)
        MPI_Isend(b->send + (size_t)k * (size_t)b->size, (int)b->size, MPI_BYTE, b->nbr[k], k,
                  b->grid, &q[n++]);
    MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
}

static void call(struct bench *b, int variant_a)
{
    if (variant_a && b->persistent != MPI_REQUEST_NULL) {
        MPI_Start(&b->persistent);
        MPI_Wait(&b->persistent, MPI_STATUS_IGNORE);
        return;
    }
    switch (b->pair) {
    case HALO:
    case HALO_INIT:
        if (variant_a)
            MPI_Neighbor_alltoall(b->send, (int)b->size, MPI_BYTE, b->recv, (int)b->size, MPI_BYTE,
                                  b->grid);
        else
            halo_by_hand(b);
        break;
    case ALLREDUCE:
        MPI_Allreduce(b->dsend, b->drecv, (int)(b->size / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(b->send, (int)b->size, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    }
}

static void prepare(struct bench *b)
{
    for (long i = 0; i < 4 * b->size; i++)
        b->send[i] = (unsigned char)(rank * 31 + i / b->size * 7 + i);
    memset(b->recv, 0, (size_t)(4 * b->size));
    for (long i = 0; i < b->size / 8; i++) {
        b->dsend[i] = (double)(rank + 1) * (double)(i % 7 + 1);
        b->drecv[i] = 0;
    }
    if (b->pair == BCAST && rank != 0)
        memset(b->send, 0, (size_t)b->size);
}

static void verify(struct bench *b)
{
    if (b->pair == HALO || b->pair == HALO_INIT) {
        for (int k = 0; k < 4; k++)
            for (long i = 0; i < b->size; i++) {
                int from = b->nbr[k], block = k ^ 1;
                unsigned char want = (unsigned char)(from * 31 + block * 7 + block * b->size + i);
                if (b->recv[(size_t)k * (size_t)b->size + (size_t)i] != want)
                    die("halo: wrong data");
            }
    } else if (b->pair == ALLREDUCE) {
        for (long i = 0; i < b->size / 8; i++)
            if (b->drecv[i] != (double)nprocs * (nprocs + 1) / 2 * (double)(i % 7 + 1))
                die("allreduce: wrong sum");
    } else {
        for (long i = 0; i < b->size; i++)
            if (b->send[i] != (unsigned char)(i))
                die("bcast: wrong data");
    }
}

/* Seconds per call of a batch of `count` calls, the slowest rank's. */
static double sample(struct bench *b, int variant_a, int count)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < count; i++)
        call(b, variant_a);
    double t = (MPI_Wtime() - t0) / count;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return t;
}

static void run(enum pair pair, long size)
{
    struct bench b = {pair, size, MPI_COMM_NULL, {0}, NULL, NULL, NULL, NULL, MPI_REQUEST_NULL};
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(nprocs, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &b.grid);
    for (int d = 0; d < 2; d++)
        MPI_Cart_shift(b.grid, d, 1, &b.nbr[2 * d], &b.nbr[2 * d + 1]);
    b.send = checked_malloc((size_t)(4 * size));
    b.recv = checked_malloc((size_t)(4 * size));
    b.dsend = checked_malloc((size_t)size);
    b.drecv = checked_malloc((size_t)size);
    prepare(&b);
    if (pair == HALO_INIT)
        MPI_Neighbor_alltoall_init(b.send, (int)size, MPI_BYTE, b.recv, (int)size, MPI_BYTE, b.grid,
                                   MPI_INFO_NULL, &b.persistent);
    else if (pair == ALLREDUCE)
        MPI_Allreduce_init(b.dsend, b.drecv, (int)(size / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                           MPI_INFO_NULL, &b.persistent);
    else if (pair == BCAST)
        MPI_Bcast_init(b.send, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &b.persistent);

    /* Warm-up, then the batch size from the slower variant. */
    double per_call = 0;
    for (int v = 0; v < 2; v++) {
        sample(&b, v, quick ? 5 : 20);
        double t = sample(&b, v, quick ? 5 : 20);
        per_call = t > per_call ? t : per_call;
    }
    int batch = per_call > 0 ? (int)(200e-6 / per_call) : 1;
    batch = batch < 1 ? 1 : batch > 200 ? 200 : batch;
    MPI_Bcast(&batch, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int rounds = quick ? 15 : 61;
    double *a = checked_malloc(sizeof(double) * (size_t)rounds);
    double *bb = checked_malloc(sizeof(double) * (size_t)rounds);
    double *ratio = checked_malloc(sizeof(double) * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            a[r] = sample(&b, 1, batch);
            bb[r] = sample(&b, 0, batch);
        } else {
            bb[r] = sample(&b, 0, batch);
            a[r] = sample(&b, 1, batch);
        }
        ratio[r] = a[r] / bb[r];
    }
    /* Check the data of one call of each variant. */
    for (int v = 0; v < 2; v++) {
        prepare(&b);
        if (pair == BCAST && rank == 0)
            for (long i = 0; i < size; i++)
                b.send[i] = (unsigned char)i;
        call(&b, v);
        verify(&b);
    }
    if (rank == 0) {
        printf("result %s %ld %.3f %.3f %.3f %d\n", pair_name[pair], size, median(a, rounds) * 1e6,
               median(bb, rounds) * 1e6, median(ratio, rounds), rounds);
        fflush(stdout);
    }
    if (b.persistent != MPI_REQUEST_NULL)
        MPI_Request_free(&b.persistent);
    MPI_Comm_free(&b.grid);
    free(b.send);
    free(b.recv);
    free(b.dsend);
    free(b.drecv);
    free(a);
    free(bb);
    free(ratio);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else
            die("usage: collbench [--quick]");
    }
    if (rank == 0) {
        printf("# collbench np=%d%s: A vs B, medians in us per call, ratio = median of A/B\n",
               nprocs, quick ? " quick" : "");
        printf("# pair size A_us B_us ratio rounds\n");
    }
    const long halo_sizes[] = {8, 1024, 65536};
    for (int i = 0; i < 3; i++) {
        run(HALO, halo_sizes[i]);
        run(HALO_INIT, halo_sizes[i]);
    }
    run(ALLREDUCE, 8);
    run(ALLREDUCE, 65536);
    run(BCAST, 8);
    run(BCAST, 65536);
    MPI_Finalize();
    return 0;
}
