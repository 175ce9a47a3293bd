/*
 * coll_bench: latency of MPI_Allreduce (MPI_SUM of doubles) and MPI_Alltoall (bytes) at
 * 8 B and 1 MiB per rank (per block for alltoall), as the median over repetitions of the
 * slowest rank's time per call. Rank 0 prints one line per case:
 *     <collective> <bytes> <microseconds>
 * Not a test: a benchmark, run by hand (see the crate's README or the report).
 */
#define TEST_NAME "coll_bench"
#include "../mpitest.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(double), cmp);
    return t[n / 2];
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int size = test_size;
    size_t sizes[2] = {8, 1 << 20};
    enum { REPS = 15 };
    double t[REPS];
    for (int c = 0; c < 2; c++) {
        for (int k = 0; k < 2; k++) {
            size_t bytes = sizes[k];
            int inner = bytes <= 8 ? 1000 : 5;
            char *s = test_malloc(bytes * (size_t)size), *r = test_malloc(bytes * (size_t)size);
            memset(s, 1, bytes * (size_t)size);
            for (int rep = -2; rep < REPS; rep++) {
                CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
                double t0 = MPI_Wtime();
                for (int i = 0; i < inner; i++) {
                    if (c == 0)
                        CHECK_MPI(MPI_Allreduce(s, r, (int)(bytes / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
                    else
                        CHECK_MPI(MPI_Alltoall(s, (int)bytes, MPI_BYTE, r, (int)bytes, MPI_BYTE, MPI_COMM_WORLD));
                }
                double dt = (MPI_Wtime() - t0) / inner, worst = 0;
                CHECK_MPI(MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
                if (rep >= 0)
                    t[rep] = worst;
            }
            if (test_rank == 0)
                printf("%s %zu %.2f\n", c == 0 ? "allreduce" : "alltoall", bytes, median(t, REPS) * 1e6);
            free(s);
            free(r);
        }
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
