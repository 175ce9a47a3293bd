/*
 * mpibench.c - MPI micro-benchmarks for comparing MPI libraries side by side.
 *
 * The same source builds against this project's mpi.h, MPICH's and Open MPI's
 * (only standard MPI-3.0 calls).  One benchmark per run, chosen by the first
 * argument; the `mpibench` tool (benches/src/bin/mpibench.rs) builds this file
 * with each library's mpicc, runs the libraries alternately and compares them.
 *
 * Two builds of this one file: the plain build has the point-to-point and
 * collective benchmarks only; `-DMPIBENCH_RMA` adds the one-sided (RMA)
 * benchmarks, so that a library without MPI_Win still builds and runs the
 * others (the `mpibench` tool makes a separate `mpibench-rma-LIB` executable).
 *
 * Usage:  mpirun -n NP ./mpibench BENCHMARK [--sizes a,b,c] [--quick]
 *   BENCHMARK: latency | bw | bibw | multibw | allreduce | bcast | alltoall | barrier
 *              put_lat | get_lat | acc_lat | fop_lat | cas_lat | put_bw | get_bw
 *              (the last seven with -DMPIBENCH_RMA only)
 *
 * Output: comment lines start with '#'; every result is one line
 *   result BENCHMARK SIZE VALUE UNIT ITERATIONS
 * with UNIT "us" (a time, lower is better) or "MB/s" (10^6 bytes per second,
 * higher is better).  Only rank 0 prints.
 *
 * Method (every timing with MPI_Wtime; a warm-up precedes every size; the
 * number of iterations is chosen by rank 0 from the warm-up so that a size
 * takes about TIME_BUDGET seconds, within fixed bounds, and broadcast):
 *   latency   ranks 0 and 1 ping-pong; every round trip is timed on its own;
 *             the figure is the median of (round trip / 2).
 *   bw        rank 0 posts a window of WINDOW MPI_Isend, rank 1 the matching
 *             MPI_Irecv; both wait for all, then rank 1 sends a zero-byte ack.
 *             A repetition is a few windows; the figure is the median over
 *             repetitions of bytes moved / time at rank 0.
 *   bibw      as bw, but both ranks send a window to the other at once; bytes
 *             counted both ways.
 *   multibw   np/2 pairs (rank r sends to r + np/2) stream as bw at once; the
 *             figure is the aggregate bytes of all pairs / the slowest sender's
 *             time, median over repetitions.  An odd last rank idles.
 *   allreduce MPI_SUM of SIZE/8 doubles; bcast SIZE bytes from rank 0;
 *   alltoall  SIZE bytes to each rank; barrier (size 0).
 *             A repetition times a short batch of calls on every rank
 *             (time per call); the repetition's figure is the maximum over
 *             ranks (the slowest rank), and the figure is the median over
 *             repetitions.  MPI_Barrier separates repetitions.
 * One-sided, passive target, origin rank 0, target rank 1 (other ranks only
 * join the collective calls).  The window is made by MPI_Win_allocate
 * (MPI_INFO_NULL, disp_unit 1) once per size, so that each library places its
 * window memory as it likes (shared memory on one host where it can).  Rank 0
 * holds MPI_Win_lock_all(MPI_MODE_NOCHECK) across the warm-up and the timed
 * loop; the target makes no RMA call meanwhile and waits in MPI_Bcast (during
 * the warm-up) and in MPI_Barrier (during the timed loop), so a library whose
 * passive-target operations need the target's progress engine gets it only from
 * a blocking collective, as in a program whose target waits in MPI.
 *   put_lat   MPI_Put of SIZE bytes then MPI_Win_flush(target), in a row; a
 *   get_lat   sample times a batch of such put+flush (about 10 us, 1 to 100 of
 *             them: the clock costs tens of ns, as much as a put on one host);
 *             the figure is the median over samples of the time per operation
 *             (us).  get_lat is the same with MPI_Get.
 *   acc_lat   MPI_Accumulate of SIZE/8 longs with MPI_SUM, then flush; as put_lat.
 *   fop_lat   MPI_Fetch_and_op(MPI_SUM, 1 MPI_LONG) then flush; as put_lat
 *             (size 8, --sizes does not apply).
 *   cas_lat   MPI_Compare_and_swap on one MPI_LONG that always succeeds, then
 *             flush; as put_lat (size 8).
 *   put_bw    a window of WINDOW MPI_Put of SIZE bytes each to its own part of
 *   get_bw    the target window (at most RMA_WINDOW_BYTES in all), then one
 *             MPI_Win_flush; a repetition is a few windows, MPI_Barrier (target
 *             included) before each; the figure is the median over repetitions
 *             of bytes moved / time at rank 0.  get_bw the same with MPI_Get.
 * Data check: for every size the received data are compared with what the
 * sender wrote (a known pattern) after the timed loop; one wrong byte ends the
 * program with MPI_Abort and status 3.  The RMA benchmarks put a different
 * pattern in the warm-up than in the timed loop (or clear the destination
 * between them), and the atomics check every fetched value and the target's
 * final value, so that the check covers the timed operations.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_DATA 201
#define TAG_ACK 202

#define WINDOW 64
#define WINDOW_LARGE 16      /* messages of LARGE_MESSAGE bytes and more */
#define LARGE_MESSAGE (1024 * 1024)
#define TIME_BUDGET 0.20     /* seconds per size, normal runs */
#define TIME_BUDGET_QUICK 0.02
#define MAX_SAMPLES 1000     /* latency round trips / repetitions kept per size */
#define MIN_SAMPLES 20
#define MIN_SAMPLES_QUICK 5

static int rank, nprocs;
static int quick;

static const long pt2pt_sizes[] = {1,     4,     16,     64,     256,     1024,
                                   4096,  16384, 65536,  262144, 1048576, 4194304};
static const long latency_sizes[] = {0,     1,     4,     8,     16,     64,      256,
                                     1024,  4096,  16384, 65536, 262144, 1048576, 4194304};
static const long collective_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
static const long rma_latency_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};

static const char *const rma_benchmarks[] = {"put_lat", "get_lat", "acc_lat", "fop_lat",
                                             "cas_lat", "put_bw",  "get_bw"};

static void die(const char *what)
{
    fprintf(stderr, "mpibench (rank %d): %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

static void *checked_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        die("out of memory");
    return p;
}

/* The byte at offset i of a message from `sender` to `receiver` of `size` bytes. */
static unsigned char pattern(long size, int sender, int receiver, long i)
{
    return (unsigned char)((i * 131 + size * 7 + sender * 17 + receiver * 29 + 1) & 0xff);
}

static void fill(unsigned char *buf, long size, int sender, int receiver)
{
    for (long i = 0; i < size; i++)
        buf[i] = pattern(size, sender, receiver, i);
}

static void check(const unsigned char *buf, long size, int sender, int receiver, const char *bench)
{
    for (long i = 0; i < size; i++) {
        if (buf[i] != pattern(size, sender, receiver, i)) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s: wrong data from rank %d at byte %ld of %ld (got %u, expected %u)",
                     bench, sender, i, size, buf[i], pattern(size, sender, receiver, i));
            die(msg);
        }
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Rank 0 turns the time of one warm-up unit into a sample count for the size; all ranks get it. */
static int samples_for(double unit_seconds, int max_samples)
{
    int n = 0;
    if (rank == 0) {
        double budget = quick ? TIME_BUDGET_QUICK : TIME_BUDGET;
        int least = quick ? MIN_SAMPLES_QUICK : MIN_SAMPLES;
        double want = unit_seconds > 0 ? budget / unit_seconds : max_samples;
        n = want > max_samples ? max_samples : (int)want;
        if (n < least)
            n = least;
    }
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return n;
}

static void report(const char *bench, long size, double value, const char *unit, int samples)
{
    if (rank == 0) {
        printf("result %s %ld %.6g %s %d\n", bench, size, value, unit, samples);
        fflush(stdout);
    }
}

/* ---- point to point ------------------------------------------------------------------ */

static double ping_pong(unsigned char *sbuf, unsigned char *rbuf, long size)
{
    double t0 = MPI_Wtime();
    if (rank == 0) {
        MPI_Send(sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
    }
    return MPI_Wtime() - t0;
}

static void bench_latency(long size)
{
    unsigned char *sbuf = checked_malloc((size_t)size), *rbuf = checked_malloc((size_t)size);
    int peer = rank == 0 ? 1 : 0;
    fill(sbuf, size, rank, peer);
    memset(rbuf, 0, (size_t)size);
    int warm = quick ? 5 : 20;
    for (int i = 0; i < warm; i++) /* untimed: first touches of buffers and connections */
        ping_pong(sbuf, rbuf, size);
    double warm_time = 0;
    for (int i = 0; i < warm; i++)
        warm_time += ping_pong(sbuf, rbuf, size);
    int n = samples_for(warm_time / warm, MAX_SAMPLES);
    double *times = checked_malloc(sizeof(double) * (size_t)n);
    memset(rbuf, 0, (size_t)size);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        times[i] = ping_pong(sbuf, rbuf, size);
    if (rank <= 1)
        check(rbuf, size, peer, rank, "latency");
    report("latency", size, median(times, n) / 2 * 1e6, "us", n);
    free(times);
    free(sbuf);
    free(rbuf);
}

/* One window of `window` messages from each sender to its receiver; `both` makes the pair
 * send both ways at once.  `peer` < 0 means this rank sits out. */
static void stream_window(unsigned char *sbuf, unsigned char *rbuf, long size, int window, int peer,
                          int sender, int both)
{
    /* A real status array: MPICH's MPI_STATUSES_IGNORE trips gcc's -Wstringop-overflow. */
    static MPI_Status statuses[2 * WINDOW];
    MPI_Request reqs[2 * WINDOW];
    int n = 0;
    if (peer < 0)
        return;
    if (!sender || both)
        for (int i = 0; i < window; i++)
            MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[n++]);
    if (sender || both)
        for (int i = 0; i < window; i++)
            MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[n++]);
    MPI_Waitall(n, reqs, statuses);
    if (sender)
        MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
}

/* bw, bibw and multibw: `pairs` pairs, rank r < pairs sending to r + pairs. */
static void bench_stream(const char *bench, long size, int pairs, int both)
{
    int peer = -1, sender = 0;
    if (rank < pairs) {
        peer = rank + pairs;
        sender = 1;
    } else if (rank < 2 * pairs) {
        peer = rank - pairs;
    }
    int window = size >= LARGE_MESSAGE ? WINDOW_LARGE : WINDOW;
    unsigned char *sbuf = checked_malloc((size_t)size), *rbuf = checked_malloc((size_t)size);
    if (peer >= 0)
        fill(sbuf, size, rank, peer);
    memset(rbuf, 0, (size_t)size);

    /* Warm-up: one window untimed, then two timed to size the repetitions. */
    stream_window(sbuf, rbuf, size, window, peer, sender, both);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 2; i++)
        stream_window(sbuf, rbuf, size, window, peer, sender, both);
    double per_window = (MPI_Wtime() - t0) / 2;
    /* A repetition is `windows` windows, about a fiftieth of the budget: short enough that on a
     * loaded machine many repetitions run without being descheduled, so the median is stable. */
    int windows = 1;
    if (rank == 0) {
        double rep_time = (quick ? TIME_BUDGET_QUICK : TIME_BUDGET) / 50;
        windows = per_window > 0 ? (int)(rep_time / per_window) : 1;
        if (windows < 1)
            windows = 1;
        if (windows > 100)
            windows = 100;
    }
    MPI_Bcast(&windows, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int reps = samples_for(per_window * windows, 100);

    double *times = checked_malloc(sizeof(double) * (size_t)reps);
    double *slowest = checked_malloc(sizeof(double) * (size_t)reps);
    memset(rbuf, 0, (size_t)size);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int w = 0; w < windows; w++)
            stream_window(sbuf, rbuf, size, window, peer, sender, both);
        times[r] = sender ? MPI_Wtime() - start : 0.0;
    }
    if (peer >= 0 && (!sender || both))
        check(rbuf, size, peer, rank, bench);
    MPI_Reduce(times, slowest, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    double bytes = (double)size * window * windows * pairs * (both ? 2 : 1);
    if (rank == 0) {
        for (int r = 0; r < reps; r++)
            slowest[r] = bytes / slowest[r] / 1e6;
    }
    report(bench, size, rank == 0 ? median(slowest, reps) : 0, "MB/s", reps);
    free(times);
    free(slowest);
    free(sbuf);
    free(rbuf);
}

/* ---- collectives --------------------------------------------------------------------- */

struct collective {
    const char *name;
    long size;
    void *send, *recv;
};

static void collective_call(struct collective *c)
{
    if (!strcmp(c->name, "allreduce"))
        MPI_Allreduce(c->send, c->recv, (int)(c->size / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(c->name, "bcast"))
        MPI_Bcast(rank == 0 ? c->send : c->recv, (int)c->size, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(c->name, "alltoall"))
        MPI_Alltoall(c->send, (int)c->size, MPI_BYTE, c->recv, (int)c->size, MPI_BYTE, MPI_COMM_WORLD);
    else
        MPI_Barrier(MPI_COMM_WORLD);
}

/* Fills the send buffer and clears the receive buffer of a collective. */
static void collective_prepare(struct collective *c)
{
    if (!strcmp(c->name, "allreduce")) {
        double *v = c->send;
        for (long i = 0; i < c->size / 8; i++)
            v[i] = (double)(rank + 1) * (double)(i % 13 + 1);
        memset(c->recv, 0, (size_t)c->size);
    } else if (!strcmp(c->name, "bcast")) {
        fill(c->send, c->size, 0, 0);
        memset(c->recv, 0, (size_t)c->size);
    } else if (!strcmp(c->name, "alltoall")) {
        for (int to = 0; to < nprocs; to++)
            fill((unsigned char *)c->send + (size_t)to * (size_t)c->size, c->size, rank, to);
        memset(c->recv, 0, (size_t)c->size * (size_t)nprocs);
    }
}

static void collective_check(struct collective *c)
{
    if (!strcmp(c->name, "allreduce")) {
        const double *v = c->recv;
        double ranks_sum = (double)nprocs * (nprocs + 1) / 2;
        for (long i = 0; i < c->size / 8; i++)
            if (v[i] != ranks_sum * (double)(i % 13 + 1)) {
                char msg[160];
                snprintf(msg, sizeof msg, "allreduce: element %ld of %ld is %g, expected %g", i, c->size / 8,
                         v[i], ranks_sum * (double)(i % 13 + 1));
                die(msg);
            }
    } else if (!strcmp(c->name, "bcast")) {
        if (rank != 0)
            check(c->recv, c->size, 0, 0, "bcast");
    } else if (!strcmp(c->name, "alltoall")) {
        for (int from = 0; from < nprocs; from++)
            check((unsigned char *)c->recv + (size_t)from * (size_t)c->size, c->size, from, rank, "alltoall");
    }
}

static void bench_collective(const char *bench, long size)
{
    size_t bytes = (size_t)size * (!strcmp(bench, "alltoall") ? (size_t)nprocs : 1);
    struct collective c = {bench, size, checked_malloc(bytes), checked_malloc(bytes)};
    collective_prepare(&c);

    int warm = quick ? 5 : 20;
    for (int i = 0; i < warm; i++) /* untimed */
        collective_call(&c);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < warm; i++)
        collective_call(&c);
    double per_call = (MPI_Wtime() - t0) / warm;
    MPI_Allreduce(MPI_IN_PLACE, &per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* A repetition is a batch of calls lasting about 100 us (at least one call), so that
     * the clock's resolution and the barrier's skew do not dominate the smallest cases. */
    int batch = 1;
    if (rank == 0) {
        batch = per_call > 0 ? (int)(100e-6 / per_call) : 1;
        if (batch < 1)
            batch = 1;
        if (batch > 50)
            batch = 50;
    }
    MPI_Bcast(&batch, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int reps = samples_for(per_call * batch, 200);

    double *times = checked_malloc(sizeof(double) * (size_t)reps);
    double *slowest = checked_malloc(sizeof(double) * (size_t)reps);
    collective_prepare(&c);
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int b = 0; b < batch; b++)
            collective_call(&c);
        times[r] = (MPI_Wtime() - start) / batch;
    }
    collective_check(&c);
    MPI_Reduce(times, slowest, reps, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    report(bench, size, rank == 0 ? median(slowest, reps) * 1e6 : 0, "us", reps);
    free(times);
    free(slowest);
    free(c.send);
    free(c.recv);
}

/* ---- one-sided (RMA), with -DMPIBENCH_RMA ------------------------------------------- */

#ifdef MPIBENCH_RMA

#define RMA_ORIGIN 0
#define RMA_TARGET 1
#define RMA_WINDOW_BYTES (64L * 1024 * 1024) /* most bytes a bandwidth window spans */
#define RMA_BATCH_TIME 10e-6                  /* seconds per latency sample, about */
#define RMA_BATCH_MAX 100                     /* operations per latency sample, at most */

/* A window of `bytes` on every rank, made by MPI_Win_allocate, its size rounded up to whole
 * pages of RMA_WINDOW_ROUND bytes (at least one).  The rounding is a workaround as much as a
 * habit: MPICH 4.0.2 (ch4) places the target's local view of an allocated window elsewhere
 * than where other ranks' operations land when the size is not a multiple of 16 (an 8-byte
 * window loses every put and atomic), and page multiples let it map windows symmetrically. */
#define RMA_WINDOW_ROUND 4096L
static MPI_Win rma_allocate(long bytes, unsigned char **base)
{
    MPI_Win win;
    void *memory = NULL;
    long rounded = (bytes + RMA_WINDOW_ROUND - 1) / RMA_WINDOW_ROUND * RMA_WINDOW_ROUND;
    if (rounded == 0)
        rounded = RMA_WINDOW_ROUND;
    MPI_Win_allocate((MPI_Aint)rounded, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win);
    *base = memory;
    return win;
}

/* Local access of the target to its own window memory, in an epoch of its own, while the
 * origin holds no lock (barriers separate the two).  A shared lock: Open MPI 4.1's osc/pt2pt
 * never grants the target an exclusive lock on itself after the origin's
 * lock_all(MPI_MODE_NOCHECK) epoch has ended. */
static void rma_local_begin(MPI_Win win)
{
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
}

static void rma_local_end(MPI_Win win)
{
    MPI_Win_unlock(rank, win);
}

/* What a latency benchmark's operations work on. */
struct rma_op {
    const char *name;
    long size;
    MPI_Win win;
    unsigned char *local; /* origin buffer (source of put/acc, destination of get) */
    long fetched;         /* atomics: the value fetched by the last call */
    long wrong;           /* atomics: fetched values that differed from the due one */
};

/* One operation of a latency benchmark: the call, then MPI_Win_flush. `k` counts the
 * operations done so far (the atomics use it to know what they should fetch). */
static void rma_op_flushed(struct rma_op *op, long k)
{
    if (!strcmp(op->name, "put_lat")) {
        MPI_Put(op->local, (int)op->size, MPI_BYTE, RMA_TARGET, 0, (int)op->size, MPI_BYTE, op->win);
    } else if (!strcmp(op->name, "get_lat")) {
        MPI_Get(op->local, (int)op->size, MPI_BYTE, RMA_TARGET, 0, (int)op->size, MPI_BYTE, op->win);
    } else if (!strcmp(op->name, "acc_lat")) {
        int n = (int)(op->size / (long)sizeof(long));
        MPI_Accumulate(op->local, n, MPI_LONG, RMA_TARGET, 0, n, MPI_LONG, MPI_SUM, op->win);
    } else if (!strcmp(op->name, "fop_lat")) {
        long one = 1;
        MPI_Fetch_and_op(&one, &op->fetched, MPI_LONG, RMA_TARGET, 0, MPI_SUM, op->win);
    } else { /* cas_lat: the target holds k, so swapping k for k + 1 succeeds */
        long compare = k, replace = k + 1;
        MPI_Compare_and_swap(&replace, &compare, &op->fetched, MPI_LONG, RMA_TARGET, 0, op->win);
    }
    MPI_Win_flush(RMA_TARGET, op->win);
    if (!strcmp(op->name, "fop_lat") || !strcmp(op->name, "cas_lat")) {
        if (op->fetched != k)
            op->wrong++;
    }
}

/* The time of `count` operations in a row, each flushed; `done` counts operations. */
static double rma_op_batch(struct rma_op *op, int count, long *done)
{
    double t0 = MPI_Wtime();
    for (int i = 0; i < count; i++)
        rma_op_flushed(op, (*done)++);
    return MPI_Wtime() - t0;
}

/* The value of element i of an accumulate's origin buffer. */
static long acc_increment(long i)
{
    return i % 13 + 1;
}

/* put_lat, get_lat, acc_lat, fop_lat, cas_lat between rank 0 (origin) and rank 1 (target). */
static void bench_rma_latency(const char *bench, long size)
{
    int atomic = !strcmp(bench, "fop_lat") || !strcmp(bench, "cas_lat");
    int acc = !strcmp(bench, "acc_lat");
    if (atomic)
        size = (long)sizeof(long);
    if (acc && (size < (long)sizeof(long) || size % (long)sizeof(long)))
        size = (size / (long)sizeof(long) + 1) * (long)sizeof(long); /* whole longs */
    unsigned char *base;
    struct rma_op op = {bench, size, rma_allocate(size, &base), checked_malloc((size_t)size), 0, 0};
    long n_elements = size / (long)sizeof(long);
    int warm = quick ? 5 : 20;

    /* The target's window starts zeroed for put, acc and the atomics, patterned for get. */
    if (rank == RMA_TARGET) {
        rma_local_begin(op.win);
        if (!strcmp(bench, "get_lat"))
            fill(base, size, RMA_TARGET, RMA_ORIGIN);
        else
            memset(base, 0, (size_t)(size < 8 ? 8 : size));
        rma_local_end(op.win);
    }
    /* The warm-up puts another pattern than the timed loop, so the check sees the timed puts. */
    if (!strcmp(bench, "put_lat"))
        fill(op.local, size, RMA_ORIGIN + 2, RMA_TARGET);
    else if (acc)
        for (long i = 0; i < n_elements; i++)
            ((long *)(void *)op.local)[i] = acc_increment(i);
    else
        memset(op.local, 0, (size_t)size);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Warm-up, at the origin: `warm` operations untimed (first touches of the window and its
     * paths), then `warm` timed to choose the batch (a sample lasts about RMA_BATCH_TIME, 1 to
     * RMA_BATCH_MAX operations, so that the clock's cost and resolution stay small beside
     * operations of tens of nanoseconds) and the number of samples. */
    long done = 0;
    double per_op = 0;
    int batch = 1;
    if (rank == RMA_ORIGIN) {
        MPI_Win_lock_all(MPI_MODE_NOCHECK, op.win);
        rma_op_batch(&op, warm, &done);
        per_op = rma_op_batch(&op, warm, &done) / warm;
        batch = per_op > 0 ? (int)(RMA_BATCH_TIME / per_op) : RMA_BATCH_MAX;
        if (batch < 1)
            batch = 1;
        if (batch > RMA_BATCH_MAX)
            batch = RMA_BATCH_MAX;
    }
    MPI_Bcast(&batch, 1, MPI_INT, 0, MPI_COMM_WORLD); /* the target waits here in MPI_Bcast */
    int n = samples_for(per_op * batch, MAX_SAMPLES);
    double *times = checked_malloc(sizeof(double) * (size_t)n);
    if (rank == RMA_ORIGIN) {
        if (!strcmp(bench, "put_lat"))
            fill(op.local, size, RMA_ORIGIN, RMA_TARGET);
        else if (!strcmp(bench, "get_lat"))
            memset(op.local, 0, (size_t)size);
        for (int i = 0; i < n; i++)
            times[i] = rma_op_batch(&op, batch, &done) / batch;
        MPI_Win_unlock_all(op.win);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* the target waits here while the origin runs the timed loop */

    /* Data check, after the timing. */
    long total = 2L * warm + (long)n * batch;
    if (rank == RMA_ORIGIN) {
        if (!strcmp(bench, "get_lat"))
            check(op.local, size, RMA_TARGET, RMA_ORIGIN, bench);
        if (atomic && op.wrong) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s: %ld of %ld fetched values were wrong", bench, op.wrong, total);
            die(msg);
        }
    } else if (rank == RMA_TARGET) {
        rma_local_begin(op.win);
        if (!strcmp(bench, "put_lat"))
            check(base, size, RMA_ORIGIN, RMA_TARGET, bench);
        if (acc || atomic) {
            const long *v = (const long *)(void *)base;
            for (long i = 0; i < n_elements; i++) {
                long due = atomic ? total : total * acc_increment(i);
                if (v[i] != due) {
                    char msg[160];
                    snprintf(msg, sizeof msg, "%s: target element %ld is %ld after %ld operations, expected %ld",
                             bench, i, v[i], total, due);
                    die(msg);
                }
            }
        }
        rma_local_end(op.win);
    }
    report(bench, size, rank == RMA_ORIGIN ? median(times, n) * 1e6 : 0, "us", n);
    MPI_Win_free(&op.win);
    free(times);
    free(op.local);
}

/* One window of put_bw or get_bw: `ops` operations of `size` bytes, operation i on bytes
 * [i*size, (i+1)*size) of the target window (and, for get, of the origin buffer), then one
 * flush.  Origin only, inside its lock_all epoch. */
static void rma_stream_window(int put, unsigned char *local, long size, int ops, MPI_Win win)
{
    for (int i = 0; i < ops; i++) {
        MPI_Aint disp = (MPI_Aint)i * (MPI_Aint)size;
        if (put)
            MPI_Put(local, (int)size, MPI_BYTE, RMA_TARGET, disp, (int)size, MPI_BYTE, win);
        else
            MPI_Get(local + disp, (int)size, MPI_BYTE, RMA_TARGET, disp, (int)size, MPI_BYTE, win);
    }
    MPI_Win_flush(RMA_TARGET, win);
}

/* put_bw and get_bw from rank 0 (origin) to rank 1 (target). */
static void bench_rma_stream(const char *bench, long size)
{
    int put = !strcmp(bench, "put_bw");
    int ops = size >= LARGE_MESSAGE ? WINDOW_LARGE : WINDOW;
    if (size > 0 && (long)ops * size > RMA_WINDOW_BYTES)
        ops = RMA_WINDOW_BYTES / size > 0 ? (int)(RMA_WINDOW_BYTES / size) : 1;
    long span = (long)ops * size;
    unsigned char *base;
    MPI_Win win = rma_allocate(span, &base);
    /* Put reads one source buffer for every operation; get fills one slot per operation. */
    long local_bytes = put ? size : span;
    unsigned char *local = checked_malloc((size_t)local_bytes);
    if (rank == RMA_TARGET) {
        rma_local_begin(win);
        for (int i = 0; i < ops; i++) {
            if (put)
                memset(base + (size_t)i * (size_t)size, 0, (size_t)size);
            else
                fill(base + (size_t)i * (size_t)size, size, RMA_TARGET, RMA_ORIGIN);
        }
        rma_local_end(win);
    }
    if (put)
        fill(local, size, RMA_ORIGIN + 2, RMA_TARGET); /* warm-up pattern */
    else
        memset(local, 0, (size_t)local_bytes);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Warm-up: one window untimed, then two timed to size the repetitions. */
    double per_window = 0;
    if (rank == RMA_ORIGIN) {
        MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
        rma_stream_window(put, local, size, ops, win);
        double t0 = MPI_Wtime();
        for (int i = 0; i < 2; i++)
            rma_stream_window(put, local, size, ops, win);
        per_window = (MPI_Wtime() - t0) / 2;
    }
    int windows = 1;
    if (rank == RMA_ORIGIN) {
        double rep_time = (quick ? TIME_BUDGET_QUICK : TIME_BUDGET) / 50;
        windows = per_window > 0 ? (int)(rep_time / per_window) : 1;
        if (windows < 1)
            windows = 1;
        if (windows > 100)
            windows = 100;
    }
    MPI_Bcast(&windows, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int reps = samples_for(per_window * windows, 100);

    double *rates = checked_malloc(sizeof(double) * (size_t)reps);
    if (rank == RMA_ORIGIN) {
        if (put)
            fill(local, size, RMA_ORIGIN, RMA_TARGET);
        else
            memset(local, 0, (size_t)local_bytes);
    }
    double bytes = (double)size * ops * windows;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD); /* the target waits in the next barrier meanwhile */
        if (rank == RMA_ORIGIN) {
            double start = MPI_Wtime();
            for (int w = 0; w < windows; w++)
                rma_stream_window(put, local, size, ops, win);
            rates[r] = bytes / (MPI_Wtime() - start) / 1e6;
        }
    }
    if (rank == RMA_ORIGIN)
        MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Data check, after the timing: every slot written by a timed window. */
    if (rank == RMA_ORIGIN && !put)
        for (int i = 0; i < ops; i++)
            check(local + (size_t)i * (size_t)size, size, RMA_TARGET, RMA_ORIGIN, bench);
    if (rank == RMA_TARGET && put) {
        rma_local_begin(win);
        for (int i = 0; i < ops; i++)
            check(base + (size_t)i * (size_t)size, size, RMA_ORIGIN, RMA_TARGET, bench);
        rma_local_end(win);
    }
    report(bench, size, rank == RMA_ORIGIN ? median(rates, reps) : 0, "MB/s", reps);
    MPI_Win_free(&win);
    free(rates);
    free(local);
}

#endif /* MPIBENCH_RMA */

/* ---- driver -------------------------------------------------------------------------- */

static long *parse_sizes(const char *text, int *count)
{
    long *sizes = checked_malloc(sizeof(long) * (strlen(text) / 2 + 2));
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > (1L << 28) || (*end && *end != ','))
            die("--sizes wants comma-separated byte counts between 0 and 268435456, e.g. --sizes 8,1024");
        sizes[n++] = v;
        p = *end ? end + 1 : end;
    }
    *count = n;
    return sizes;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    const char *bench = argc > 1 ? argv[1] : "";
    long *sizes = NULL;
    int nsizes = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            sizes = parse_sizes(argv[++i], &nsizes);
        else
            die("usage: mpibench latency|bw|bibw|multibw|allreduce|bcast|alltoall|barrier|"
                "put_lat|get_lat|acc_lat|fop_lat|cas_lat|put_bw|get_bw [--sizes a,b] [--quick]");
    }

    int pt2pt = !strcmp(bench, "latency") || !strcmp(bench, "bw") || !strcmp(bench, "bibw") ||
                !strcmp(bench, "multibw");
    int coll = !strcmp(bench, "allreduce") || !strcmp(bench, "bcast") || !strcmp(bench, "alltoall") ||
               !strcmp(bench, "barrier");
    int rma = 0;
    for (size_t i = 0; i < sizeof rma_benchmarks / sizeof *rma_benchmarks; i++)
        rma |= !strcmp(bench, rma_benchmarks[i]);
#ifndef MPIBENCH_RMA
    if (rma)
        die("this mpibench was built without the one-sided benchmarks: build it with -DMPIBENCH_RMA "
            "against an mpi.h with MPI-3 RMA");
#endif
    if (!pt2pt && !coll && !rma)
        die("unknown benchmark: choose latency, bw, bibw, multibw, allreduce, bcast, alltoall, barrier, "
            "put_lat, get_lat, acc_lat, fop_lat, cas_lat, put_bw or get_bw");
    if ((pt2pt || rma) && nprocs < 2)
        die("point-to-point and one-sided benchmarks need at least 2 ranks (mpirun -n 2)");
    /* The atomics move one long: their size is fixed. */
    int fixed_size = !strcmp(bench, "barrier") || !strcmp(bench, "fop_lat") || !strcmp(bench, "cas_lat");

    const long *list;
    int count;
    long fixed = !strcmp(bench, "barrier") ? 0 : (long)sizeof(long);
    if (fixed_size) {
        list = &fixed;
        count = 1;
    } else if (sizes) {
        list = sizes;
        count = nsizes;
    } else if (!strcmp(bench, "latency")) {
        list = latency_sizes;
        count = (int)(sizeof latency_sizes / sizeof *latency_sizes);
    } else if (rma && strstr(bench, "_lat")) {
        list = rma_latency_sizes;
        count = (int)(sizeof rma_latency_sizes / sizeof *rma_latency_sizes);
    } else if (pt2pt || rma) {
        list = pt2pt_sizes;
        count = (int)(sizeof pt2pt_sizes / sizeof *pt2pt_sizes);
    } else {
        list = collective_sizes;
        count = (int)(sizeof collective_sizes / sizeof *collective_sizes);
    }

    /* Start-up warm-up, untimed: lets every library set up its connections between all pairs
     * before the first size is measured. */
    {
        unsigned char out[64], in[64];
        int one = 1, total = 0;
        memset(out, 1, sizeof out);
        for (int i = 0; i < 20; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int k = 1; k < nprocs; k++) /* a shift: send k ranks up, receive from k down */
                MPI_Sendrecv(out, 64, MPI_BYTE, (rank + k) % nprocs, TAG_ACK, in, 64, MPI_BYTE,
                             (rank - k + nprocs) % nprocs, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        if (total != nprocs)
            die("start-up allreduce gave a wrong sum");
    }
    if (rank == 0)
        printf("# mpibench %s np=%d%s\n", bench, nprocs, quick ? " quick" : "");
    for (int s = 0; s < count; s++) {
        long size = list[s];
        if (!strcmp(bench, "allreduce") && size % 8)
            size += 8 - size % 8; /* whole doubles */
        if (!strcmp(bench, "latency"))
            bench_latency(size);
        else if (!strcmp(bench, "bw"))
            bench_stream(bench, size, 1, 0);
        else if (!strcmp(bench, "bibw"))
            bench_stream(bench, size, 1, 1);
        else if (!strcmp(bench, "multibw"))
            bench_stream(bench, size, nprocs / 2, 0);
#ifdef MPIBENCH_RMA
        else if (rma && strstr(bench, "_lat"))
            bench_rma_latency(bench, size);
        else if (rma)
            bench_rma_stream(bench, size);
#endif
        else
            bench_collective(bench, size);
    }
    free(sizes);
    MPI_Finalize();
    return 0;
}
