/*
 * thread_bw.c - aggregate bandwidth of threads streaming large messages, each
 * stream on its own communicator (MPI_THREAD_MULTIPLE), for comparing MPI
 * libraries side by side (standard MPI-3 calls and pthreads).
 *
 *   mpirun -n 1 ./thread_bw [SIZES] [STREAMS ...]   one rank: both ends in it
 *   mpirun -n 2 ./thread_bw [SIZES] [STREAMS ...]   rank 0 sends, rank 1 receives
 *
 * SIZES is a comma-separated list of message sizes in bytes (default
 * 65536,1048576,4194304), STREAMS the numbers of streams T (default 1 2 4).
 * A stream is a sender thread and a receiver thread on one duplicate of
 * MPI_COMM_WORLD: on one rank both threads are in the process (2T threads, the
 * process sends to itself), on two ranks thread t of rank 0 sends to thread t
 * of rank 1 (T threads per rank). The sender posts a window of MPI_Isend, the
 * receiver a window of MPI_Irecv, both MPI_Waitall, then the receiver sends a
 * zero-byte ack; each stream moves STREAM_BYTES per repetition. The figure is
 * the bytes of all streams / the repetition's time (MB/s, 1e6 bytes), median
 * of REPS repetitions, each between two barriers of the main threads.
 *
 * Output (rank 0): comment lines start with '#'; every result is one line
 *   result thread_bw SIZE STREAMS VALUE MB/s REPS
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 7
#define MAX_STREAMS 8
#define MAX_SIZES 8
#define STREAM_BYTES (32L << 20)
#define WINDOW_BYTES (8L << 20)
#define MAX_WINDOW 8

static int rank, nranks;
static MPI_Comm comms[MAX_STREAMS];
static long msg_size;

static int window_of(long size)
{
    long w = WINDOW_BYTES / size;
    return w < 1 ? 1 : (w > MAX_WINDOW ? MAX_WINDOW : (int)w);
}

/* One end of stream `arg / 2` (sender if arg is even). */
static void *stream_end(void *arg)
{
    int t = (int)(long)arg / 2, sender = ((long)arg % 2) == 0;
    int window = window_of(msg_size);
    long rounds = STREAM_BYTES / (msg_size * window);
    if (rounds < 1)
        rounds = 1;
    int peer = nranks == 1 ? 0 : 1 - rank;
    char *buf = malloc((size_t)msg_size * window);
    MPI_Request req[MAX_WINDOW];
    memset(buf, sender ? 1 : 0, (size_t)msg_size * window);
    for (long r = 0; r < rounds; r++) {
        for (int w = 0; w < window; w++) {
            if (sender)
                MPI_Isend(buf + w * msg_size, (int)msg_size, MPI_BYTE, peer, w, comms[t], &req[w]);
            else
                MPI_Irecv(buf + w * msg_size, (int)msg_size, MPI_BYTE, peer, w, comms[t], &req[w]);
        }
        MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
        if (sender)
            MPI_Recv(NULL, 0, MPI_BYTE, peer, MAX_WINDOW, comms[t], MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_BYTE, peer, MAX_WINDOW, comms[t]);
    }
    free(buf);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* MB/s of `streams` streams of `size`-byte messages at once, median of REPS. */
static double bandwidth(long size, int streams)
{
    double rates[REPS];
    pthread_t th[2 * MAX_STREAMS];
    msg_size = size;
    int window = window_of(size);
    long rounds = STREAM_BYTES / (size * window);
    if (rounds < 1)
        rounds = 1;
    double bytes = (double)streams * rounds * window * size;
    for (int rep = -1; rep < REPS; rep++) { /* rep -1: warm-up */
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        int n = 0;
        for (int t = 0; t < streams; t++) {
            /* One rank: both ends here; two: rank 0 the senders, rank 1 the receivers. */
            if (nranks == 1 || rank == 0)
                pthread_create(&th[n++], NULL, stream_end, (void *)(long)(2 * t));
            if (nranks == 1 || rank == 1)
                pthread_create(&th[n++], NULL, stream_end, (void *)(long)(2 * t + 1));
        }
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
        double elapsed = MPI_Wtime() - start;
        if (rep >= 0)
            rates[rep] = bytes / elapsed / 1e6;
    }
    qsort(rates, REPS, sizeof rates[0], by_value);
    return rates[REPS / 2];
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (provided != MPI_THREAD_MULTIPLE || nranks > 2) {
        if (rank == 0)
            fprintf(stderr, "thread_bw: needs MPI_THREAD_MULTIPLE (got %d) and 1 or 2 ranks (got %d)\n",
                    provided, nranks);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long sizes[MAX_SIZES] = {65536, 1048576, 4194304};
    int nsizes = 3, counts[MAX_STREAMS], n = 0, first = 1;
    if (argc > 1 && strchr(argv[1], ',') != NULL) {
        nsizes = 0;
        for (char *s = strtok(argv[1], ","); s && nsizes < MAX_SIZES; s = strtok(NULL, ","))
            if (atol(s) > 0)
                sizes[nsizes++] = atol(s);
        first = 2;
    } else if (argc > 1 && atol(argv[1]) > MAX_STREAMS) {
        sizes[0] = atol(argv[1]);
        nsizes = 1;
        first = 2;
    }
    for (int i = first; i < argc && n < MAX_STREAMS; i++) {
        int t = atoi(argv[i]);
        if (t >= 1 && t <= MAX_STREAMS)
            counts[n++] = t;
    }
    if (n == 0) {
        counts[0] = 1, counts[1] = 2, counts[2] = 4;
        n = 3;
    }
    for (int t = 0; t < MAX_STREAMS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    if (rank == 0) {
        char version[MPI_MAX_LIBRARY_VERSION_STRING];
        int len;
        MPI_Get_library_version(version, &len);
        for (char *c = version; *c; c++)
            if (*c == '\n' || *c == '\t')
                *c = ' ';
        printf("# thread_bw: %d rank(s), %ld MiB per stream per repetition, median of %d\n# %.60s\n",
               nranks, STREAM_BYTES >> 20, REPS, version);
    }
    for (int s = 0; s < nsizes; s++)
        for (int i = 0; i < n; i++) {
            double bw = bandwidth(sizes[s], counts[i]);
            if (rank == 0) {
                printf("result thread_bw %ld %d %.6g MB/s %d\n", sizes[s], counts[i], bw, REPS);
                fflush(stdout);
            }
        }
    for (int t = 0; t < MAX_STREAMS; t++)
        MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return 0;
}
