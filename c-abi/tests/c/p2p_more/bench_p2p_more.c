/*
 * bench_p2p_more: figures for the MPI 4.0 point-to-point additions (not a test: it checks
 * nothing about speed and is not run by `cargo test`). Two ranks.
 *
 *  1. 1 MiB from rank 0 to rank 1, then an 8-byte reply: one MPI_Send/MPI_Recv, versus a
 *     partitioned send of 16 partitions of 64 KiB (MPI_Pready each, in order) into a
 *     partitioned receive of 16 partitions (requests made once, started each time).
 *  2. 8-byte exchange between the two ranks: MPI_Sendrecv versus MPI_Isendrecv + MPI_Wait.
 *
 * Each figure is the median of `reps` timed samples (a sample: one transfer for 1, a batch of
 * 100 exchanges for 2, divided by 100), methods alternated sample by sample so that a noisy
 * machine hurts both alike.
 *
 *   mpicc -O2 -o bench_p2p_more bench_p2p_more.c && mpirun -n 2 ./bench_p2p_more [reps]
 */
#define TEST_NAME "bench_p2p_more"
#include "../mpitest.h"

#define MIB (1 << 20)
#define PARTS 16

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    int reps = argc > 1 ? atoi(argv[1]) : 41;
    int peer = 1 - test_rank;
    char *buf = test_malloc(MIB);
    long ack = 0;
    double *t_send = test_malloc(reps * sizeof(double)), *t_part = test_malloc(reps * sizeof(double));
    double *t_sr = test_malloc(reps * sizeof(double)), *t_isr = test_malloc(reps * sizeof(double));
    memset(buf, test_rank, MIB);
    if (test_rank < 2) {
        MPI_Request part;
        if (test_rank == 0)
            CHECK_MPI(MPI_Psend_init(buf, PARTS, MIB / PARTS, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &part));
        else
            CHECK_MPI(MPI_Precv_init(buf, PARTS, MIB / PARTS, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_INFO_NULL, &part));
        for (int r = -3; r < reps; r++) { /* 3 warm-up samples */
            double t0 = MPI_Wtime();
            if (test_rank == 0) {
                CHECK_MPI(MPI_Send(buf, MIB, MPI_BYTE, 1, 1, MPI_COMM_WORLD));
                CHECK_MPI(MPI_Recv(&ack, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                CHECK_MPI(MPI_Recv(buf, MIB, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Send(&ack, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD));
            }
            double t1 = MPI_Wtime();
            CHECK_MPI(MPI_Start(&part));
            if (test_rank == 0) {
                for (int p = 0; p < PARTS; p++)
                    CHECK_MPI(MPI_Pready(p, part));
                CHECK_MPI(MPI_Wait(&part, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Recv(&ack, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            } else {
                CHECK_MPI(MPI_Wait(&part, MPI_STATUS_IGNORE));
                CHECK_MPI(MPI_Send(&ack, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD));
            }
            double t2 = MPI_Wtime();
            long a = test_rank, b = -1;
            for (int i = 0; i < 100; i++)
                CHECK_MPI(MPI_Sendrecv(&a, 1, MPI_LONG, peer, 3, &b, 1, MPI_LONG, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            double t3 = MPI_Wtime();
            for (int i = 0; i < 100; i++) {
                MPI_Request q;
                CHECK_MPI(MPI_Isendrecv(&a, 1, MPI_LONG, peer, 4, &b, 1, MPI_LONG, peer, 4, MPI_COMM_WORLD, &q));
                CHECK_MPI(MPI_Wait(&q, MPI_STATUS_IGNORE));
            }
            double t4 = MPI_Wtime();
            CHECK(b == peer, "exchange got %ld", b);
            if (r >= 0) {
                t_send[r] = t1 - t0;
                t_part[r] = t2 - t1;
                t_sr[r] = (t3 - t2) / 100;
                t_isr[r] = (t4 - t3) / 100;
            }
        }
        CHECK_MPI(MPI_Request_free(&part));
    }
    if (test_rank == 0) {
        printf("1 MiB + 8 B reply, median of %d: MPI_Send %.1f us (%.0f MB/s), partitioned 16 x 64 KiB %.1f us (%.0f MB/s)\n",
               reps, 1e6 * median(t_send, reps), MIB / median(t_send, reps) / 1e6,
               1e6 * median(t_part, reps), MIB / median(t_part, reps) / 1e6);
        printf("8 B exchange, median of %d batches of 100: MPI_Sendrecv %.2f us, MPI_Isendrecv+MPI_Wait %.2f us\n",
               reps, 1e6 * median(t_sr, reps), 1e6 * median(t_isr, reps));
    }
    free(buf);
    test_ok();
    MPI_Finalize();
    return 0;
}
