/*
 * inter_bench: MPI_Allreduce on an intercommunicator between two halves of MPI_COMM_WORLD
 * against MPI_Allreduce on MPI_COMM_WORLD itself, same job, same process placement. Not a
 * test (prints figures; checks only the results): run it by hand, e.g. `mpirun -n 4`.
 *
 * For each message size (8 B and 64 KiB of doubles) it takes SAMPLES samples, alternating
 * intra and inter so that the machine's noise falls on both alike; a sample is the time of
 * ITERS back-to-back allreduces (after a barrier) divided by ITERS, the maximum over the ranks.
 * Rank 0 prints the median sample of each, in microseconds per call.
 */
#define TEST_NAME "inter_bench"
#include "../mpitest.h"

enum { SAMPLES = 21, ITERS = 50, WARMUP = 20 };

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double sample(MPI_Comm comm, double *s, double *d, int n)
{
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    for (int i = 0; i < ITERS; i++)
        CHECK_MPI(MPI_Allreduce(s, d, n, MPI_DOUBLE, MPI_SUM, comm));
    t = (MPI_Wtime() - t) / ITERS;
    double worst;
    CHECK_MPI(MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return worst;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    int k = test_size / 2, group = test_rank < k ? 0 : 1;
    MPI_Comm local, inter;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, group, test_rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, group ? 0 : k, 1, &inter));
    const int sizes[] = {1, 8192}; /* doubles: 8 B, 64 KiB */
    double *s = test_malloc(8192 * sizeof(double)), *d = test_malloc(8192 * sizeof(double));
    for (int i = 0; i < 8192; i++)
        s[i] = 1.0;
    for (int z = 0; z < 2; z++) {
        int n = sizes[z];
        double intra_t[SAMPLES], inter_t[SAMPLES];
        for (int w = 0; w < WARMUP; w++) {
            CHECK_MPI(MPI_Allreduce(s, d, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Allreduce(s, d, n, MPI_DOUBLE, MPI_SUM, inter));
        }
        for (int i = 0; i < SAMPLES; i++) {
            intra_t[i] = sample(MPI_COMM_WORLD, s, d, n);
            CHECK(d[n - 1] == (double)test_size, "intra allreduce gave %g", d[n - 1]);
            inter_t[i] = sample(inter, s, d, n);
            CHECK(d[n - 1] == (double)(group ? k : test_size - k), "inter allreduce gave %g", d[n - 1]);
        }
        qsort(intra_t, SAMPLES, sizeof(double), cmp);
        qsort(inter_t, SAMPLES, sizeof(double), cmp);
        if (test_rank == 0)
            printf("allreduce %6zu B on %d ranks: intracomm %8.1f us, intercomm (%d+%d) %8.1f us (medians of %d samples of %d calls)\n",
                   n * sizeof(double), test_size, intra_t[SAMPLES / 2] * 1e6, k, test_size - k,
                   inter_t[SAMPLES / 2] * 1e6, SAMPLES, ITERS);
    }
    free(s);
    free(d);
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
    test_ok();
    MPI_Finalize();
    return 0;
}
