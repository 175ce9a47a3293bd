/*
 * thread_rate.c - message rate of threads exchanging on separate communicators
 * (MPI_THREAD_MULTIPLE), for comparing MPI libraries side by side.
 *
 * Builds against this project's mpi.h, MPICH's and Open MPI's (standard MPI-3
 * calls and pthreads).  Run on 2 ranks:
 *
 *   mpirun -n 2 ./thread_rate [assert|plain] [THREADS ...]      (default: 1 2 4)
 *
 * For each thread count T, the main thread of each rank makes T duplicates of
 * MPI_COMM_WORLD, then starts T threads; thread t of rank 0 streams windows of
 * WINDOW MPI_Isend of SIZE bytes to thread t of rank 1 on communicator t
 * (MPI_Irecv there), both sides MPI_Waitall, then rank 1 sends a zero-byte
 * ack (as mpibench's bw).  A repetition runs ROUNDS windows on every thread at
 * once between two barriers of the main threads; the figure is the messages of
 * all threads / the repetition's time at rank 0, median over REPS repetitions.
 *
 * On 1 rank (mpirun -n 1) each thread streams to itself instead: a window of
 * WINDOW MPI_Irecv and WINDOW MPI_Isend to its own rank on its communicator,
 * one MPI_Waitall.  Nothing then waits for another process, so the figure is
 * the library's own work per message and shows how much of it threads on
 * different communicators do at once (on 2 cores, 2 threads).
 * With `assert` or `plain`, every thread works on ONE communicator instead, thread t
 * on tag t (its ack on tag MAX_THREADS + t): duplicated with the MPI 4.0 info assertion
 * mpi_assert_no_any_tag=true (`assert`: a library may then run tags apart, as this
 * project's lanes by tag do) or with an empty info (`plain`). The result lines are then
 * named thread_rate_assert / thread_rate_plain.
 *
 * Output (rank 0): comment lines start with '#'; every result is one line
 *   result thread_rate THREADS VALUE msg/s REPS
 * in mpibench's style (its SIZE column holds the thread count here).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 8
#define WINDOW 64
#define ROUNDS 200
#define REPS 7
#define MAX_THREADS 16

static int rank, size;
static MPI_Comm comms[MAX_THREADS];
/* Every thread on comms[0], thread t on tag t (the `assert` and `plain` modes). */
static int one_comm;

static void *stream(void *arg)
{
    int t = (int)(long)arg;
    MPI_Comm c = one_comm ? comms[0] : comms[t];
    char buf[WINDOW][SIZE];
    MPI_Request req[WINDOW];
    if (size == 1) {
        char in[WINDOW][SIZE];
        MPI_Request both[2 * WINDOW];
        for (int r = 0; r < ROUNDS; r++) {
            for (int w = 0; w < WINDOW; w++)
                MPI_Irecv(in[w], SIZE, MPI_BYTE, 0, one_comm ? t : w, c, &both[w]);
            for (int w = 0; w < WINDOW; w++)
                MPI_Isend(buf[w], SIZE, MPI_BYTE, 0, one_comm ? t : w, c, &both[WINDOW + w]);
            MPI_Waitall(2 * WINDOW, both, MPI_STATUSES_IGNORE);
        }
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int w = 0; w < WINDOW; w++) {
            int tag = one_comm ? t : w;
            if (rank == 0)
                MPI_Isend(buf[w], SIZE, MPI_BYTE, 1, tag, c, &req[w]);
            else
                MPI_Irecv(buf[w], SIZE, MPI_BYTE, 0, tag, c, &req[w]);
        }
        MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
        int ack = one_comm ? MAX_THREADS + t : WINDOW;
        if (rank == 0)
            MPI_Recv(NULL, 0, MPI_BYTE, 1, ack, c, MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_BYTE, 0, ack, c);
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Messages per second of `threads` threads at once, median of REPS. */
static double rate(int threads)
{
    double rates[REPS];
    pthread_t th[MAX_THREADS];
    for (int rep = -1; rep < REPS; rep++) { /* rep -1: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int t = 0; t < threads; t++)
            pthread_create(&th[t], NULL, stream, (void *)(long)t);
        for (int t = 0; t < threads; t++)
            pthread_join(th[t], NULL);
        double elapsed = MPI_Wtime() - start;
        if (rep >= 0)
            rates[rep] = (double)threads * ROUNDS * WINDOW / elapsed;
    }
    qsort(rates, REPS, sizeof rates[0], by_value);
    return rates[REPS / 2];
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE || (size != 1 && size != 2)) {
        if (rank == 0)
            fprintf(stderr, "thread_rate: needs MPI_THREAD_MULTIPLE (got %d) and 1 or 2 ranks (got %d)\n",
                    provided, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int counts[MAX_THREADS], n = 0;
    const char *mode = NULL;
    for (int i = 1; i < argc && n < MAX_THREADS; i++) {
        if (strcmp(argv[i], "assert") == 0 || strcmp(argv[i], "plain") == 0) {
            mode = argv[i];
            continue;
        }
        int t = atoi(argv[i]);
        if (t >= 1 && t <= MAX_THREADS)
            counts[n++] = t;
    }
    if (n == 0) {
        counts[0] = 1, counts[1] = 2, counts[2] = 4;
        n = 3;
    }
    if (mode) {
        one_comm = 1;
        MPI_Info info;
        MPI_Info_create(&info);
        if (strcmp(mode, "assert") == 0)
            MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comms[0]);
        MPI_Info_free(&info);
    } else {
        for (int t = 0; t < MAX_THREADS; t++)
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    }
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(version, &len);
        printf("# thread_rate: %d B messages, windows of %d, %d windows per thread per repetition, median of %d, %s\n# %.60s\n",
               SIZE, WINDOW, ROUNDS, REPS,
               mode ? (strcmp(mode, "assert") == 0 ? "one communicator with mpi_assert_no_any_tag, a tag per thread"
                                                  : "one communicator without the assertion, a tag per thread")
                    : "a communicator per thread",
               version);
    }
    for (int i = 0; i < n; i++) {
        double r = rate(counts[i]);
        if (rank == 0) {
            printf("result thread_rate%s%s %d %.6g msg/s %d\n", mode ? "_" : "", mode ? mode : "", counts[i], r,
                   REPS);
            fflush(stdout);
        }
    }
    for (int t = 0; t < (one_comm ? 1 : MAX_THREADS); t++)
        MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return 0;
}
