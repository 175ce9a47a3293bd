/*
 * mpi_pingpong.c - two-rank MPI latency / bandwidth micro-benchmark.
 *
 * Used to compare our messaging stack against a reference MPI (MPICH) on the
 * same machine.  Only standard MPI-3 calls are used, so the same source can be
 * built against any MPI implementation exposing <mpi.h>.
 *
 * Latency (BIP paper method): after a warm-up, every round trip is timed on
 * its own; the reported latency is the median of (round trip / 2) in
 * microseconds.
 *
 * Bandwidth (streaming): rank 0 posts a window of MPI_Isend of equal size,
 * rank 1 the matching MPI_Irecv, both MPI_Waitall, then rank 1 returns a
 * small ack.  A repetition is a number of such windows; the reported value is
 * the median over repetitions, in 10^6 bytes per second.
 *
 * Bidirectional bandwidth: both ranks post a window of MPI_Irecv and a window
 * of MPI_Isend to each other at once and MPI_Waitall; rank 1 acks each
 * repetition; the figure is the bytes moved both ways per second.
 *
 * Counting mode (--roundtrips N): only N untimed round trips at each size,
 * then MPI_Finalize; with MPI_COUNTERS set, our library then dumps its
 * counters, and a run with N = 0 gives the fixed cost to subtract.
 *
 * Usage: mpirun -n 2 ./mpi_pingpong [--sizes a,b,c] [--json FILE]
 *                                   [--roundtrips N]
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024UL * 1024UL)

#define TAG_LAT 101
#define TAG_BW 102
#define TAG_ACK 103
#define TAG_CHECK 104
#define TAG_PLAN 105
#define TAG_BIDIR 106

/* Latency parameters. */
#define LAT_ITERS_SMALL 1000
#define LAT_WARMUP_SMALL 100
#define LAT_ITERS_LARGE 100 /* sizes >= 1 MiB; must stay >= 50 */
#define LAT_WARMUP_LARGE 5

/* Bandwidth parameters. */
#define BW_WINDOW_SMALL 64
#define BW_WINDOW_LARGE 16 /* sizes >= 1 MiB */
#define BW_WINDOW_MAX 64   /* max(BW_WINDOW_SMALL, BW_WINDOW_LARGE) */
#if BW_WINDOW_SMALL > BW_WINDOW_MAX || BW_WINDOW_LARGE > BW_WINDOW_MAX
#error "BW_WINDOW_MAX must be the largest window"
#endif
#if LAT_ITERS_SMALL < 1000 || LAT_ITERS_LARGE < 50
#error "latency iteration counts below the documented minimum"
#endif
#define BW_TARGET_TOTAL_S 0.050
#define BW_MIN_REPS 5
#define BW_MAX_REPS 10

static const size_t default_sizes[] = {
    0,      1,      8,       64,      512,     4096,
    16384,  65536,  262144,  1048576, 4194304, 8388608,
};

struct result {
    size_t size;
    double latency_us;
    double bandwidth_mb_s;
    double bidir_bandwidth_mb_s;
};

static int g_rank = -1;

static void die(const char *fmt, const char *arg)
{
    /* Format first and print with one call so that ranks do not interleave. */
    char msg[512];
    char line[600];
    snprintf(msg, sizeof msg, fmt, arg);
    snprintf(line, sizeof line, "mpi_pingpong[rank %d]: %s\n", g_rank, msg);
    fputs(line, stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n-1]; sorts v in place. */
static double median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(double), cmp_double);
    if (n % 2 == 1)
        return v[n / 2];
    return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Deterministic byte pattern depending on the message (seed) and offset. */
static unsigned char pattern_byte(uint32_t seed, size_t i)
{
    uint32_t x = seed * 2654435761u + (uint32_t)i * 40503u + (uint32_t)(i >> 16);
    x ^= x >> 13;
    return (unsigned char)(x & 0xffu);
}

static void fill_pattern(unsigned char *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pattern_byte(seed, i);
}

/* Returns the index of the first wrong byte, or n if all bytes are right. */
static size_t check_pattern(const unsigned char *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != pattern_byte(seed, i))
            return i;
    return n;
}

static void verify_or_die(const unsigned char *buf, size_t n, uint32_t seed,
                          const char *what)
{
    size_t bad = check_pattern(buf, n, seed);
    if (bad != n) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "%s: size %zu: byte %zu is 0x%02x, expected 0x%02x", what, n,
                 bad, (unsigned)buf[bad], (unsigned)pattern_byte(seed, bad));
        die("data verification failed: %s", msg);
    }
}

static void *alloc_aligned(size_t n)
{
    long page = sysconf(_SC_PAGESIZE);
    void *p = NULL;
    if (page <= 0)
        page = 4096;
    if (n == 0)
        n = 1;
    int rc = posix_memalign(&p, (size_t)page, n);
    if (rc != 0)
        die("posix_memalign failed: %s", strerror(rc));
    /* Touch every page so that first-touch faults are not timed. */
    memset(p, 0, n);
    return p;
}

static size_t parse_size(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
        die("invalid size '%s' in --sizes", s);
    if (v > (unsigned long long)INT32_MAX)
        die("size '%s' too large (max 2^31-1 bytes)", s);
    return (size_t)v;
}

/* Parses "a,b,c" into a newly allocated array; returns the count. */
static size_t parse_sizes(const char *arg, size_t **out)
{
    size_t cap = 1;
    for (const char *p = arg; *p; p++)
        if (*p == ',')
            cap++;
    size_t *v = malloc(cap * sizeof *v);
    char *copy = malloc(strlen(arg) + 1);
    if (!v || !copy)
        die("%s", "out of memory");
    strcpy(copy, arg);
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        v[n++] = parse_size(tok);
    free(copy);
    if (n == 0)
        die("--sizes '%s' names no size", arg);
    *out = v;
    return n;
}

static int lat_iters(size_t size)
{
    return size >= MIB ? LAT_ITERS_LARGE : LAT_ITERS_SMALL;
}

static int lat_warmup(size_t size)
{
    return size >= MIB ? LAT_WARMUP_LARGE : LAT_WARMUP_SMALL;
}

static int bw_window(size_t size)
{
    return size >= MIB ? BW_WINDOW_LARGE : BW_WINDOW_SMALL;
}

/* One untimed, verified round trip: 0 -> 1 -> 0 with distinct patterns. */
static void check_pingpong(unsigned char *sbuf, unsigned char *rbuf,
                           size_t size)
{
    int n = (int)size;
    uint32_t seed_fwd = (uint32_t)size * 7u + 1u;
    uint32_t seed_back = (uint32_t)size * 7u + 2u;
    if (g_rank == 0) {
        fill_pattern(sbuf, size, seed_fwd);
        memset(rbuf, 0, size);
        MPI_Send(sbuf, n, MPI_BYTE, 1, TAG_CHECK, MPI_COMM_WORLD);
        MPI_Status st;
        MPI_Recv(rbuf, n, MPI_BYTE, 1, TAG_CHECK, MPI_COMM_WORLD, &st);
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (count != n)
            die("%s", "ping-pong reply has wrong length");
        verify_or_die(rbuf, size, seed_back, "ping-pong reply (1 -> 0)");
    } else {
        memset(rbuf, 0, size);
        MPI_Status st;
        MPI_Recv(rbuf, n, MPI_BYTE, 0, TAG_CHECK, MPI_COMM_WORLD, &st);
        int count = -1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if (count != n)
            die("%s", "ping-pong request has wrong length");
        verify_or_die(rbuf, size, seed_fwd, "ping-pong request (0 -> 1)");
        fill_pattern(sbuf, size, seed_back);
        MPI_Send(sbuf, n, MPI_BYTE, 0, TAG_CHECK, MPI_COMM_WORLD);
    }
}

static double run_latency(unsigned char *sbuf, unsigned char *rbuf, size_t size)
{
    int n = (int)size;
    int warm = lat_warmup(size);
    int iters = lat_iters(size);
    double *half_rtt = NULL;

    check_pingpong(sbuf, rbuf, size);

    if (g_rank == 0) {
        half_rtt = malloc((size_t)iters * sizeof *half_rtt);
        if (!half_rtt)
            die("%s", "out of memory");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < warm + iters; i++) {
        if (g_rank == 0) {
            double t0 = now_s();
            MPI_Send(sbuf, n, MPI_BYTE, 1, TAG_LAT, MPI_COMM_WORLD);
            MPI_Recv(rbuf, n, MPI_BYTE, 1, TAG_LAT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            double t1 = now_s();
            if (i >= warm)
                half_rtt[i - warm] = (t1 - t0) * 0.5;
        } else {
            MPI_Recv(rbuf, n, MPI_BYTE, 0, TAG_LAT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf, n, MPI_BYTE, 0, TAG_LAT, MPI_COMM_WORLD);
        }
    }

    double lat_us = 0.0;
    if (g_rank == 0) {
        lat_us = median(half_rtt, (size_t)iters) * 1e6;
        free(half_rtt);
    }
    return lat_us;
}

/*
 * One window: rank 0 sends `window` messages of `size` bytes out of sbuf
 * (slot w at sbuf + w * sstride: consecutive slots for the verified window,
 * all from one buffer, sstride 0, for the timed ones, as the `layers`
 * benchmark measures every other layer), rank 1 receives them into
 * consecutive slots of rbuf, then rank 1 sends a one-byte ack.
 */
static void bw_window_once(unsigned char *sbuf, size_t sstride,
                           unsigned char *rbuf, size_t size, int window,
                           MPI_Request *reqs, MPI_Status *stats)
{
    int n = (int)size;
    char ack = 0;
    if (g_rank == 0) {
        for (int w = 0; w < window; w++)
            MPI_Isend(sbuf + (size_t)w * sstride, n, MPI_BYTE, 1, TAG_BW,
                      MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(window, reqs, stats);
        MPI_Recv(&ack, 1, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        for (int w = 0; w < window; w++)
            MPI_Irecv(rbuf + (size_t)w * size, n, MPI_BYTE, 0, TAG_BW,
                      MPI_COMM_WORLD, &reqs[w]);
        MPI_Waitall(window, reqs, stats);
        MPI_Send(&ack, 1, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
    }
}

/* One window of a streaming measurement (bw_window_once or bidir_window_once). */
typedef void (*window_fn)(unsigned char *sbuf, size_t sstride, unsigned char *rbuf,
                          size_t size, int window, MPI_Request *reqs, MPI_Status *stats);

/*
 * The timed part of a streaming measurement: one window to warm up and calibrate (timed on
 * rank 0, which plans windows per repetition and repetitions for both ranks), then the
 * repetitions; returns, on rank 0, the median rate in 10^6 B/s of `directions` times the
 * bytes of each window (0.0 on rank 1).
 */
static double timed_windows(window_fn once, unsigned char *sbuf, unsigned char *rbuf,
                            size_t size, int window, MPI_Request *reqs, MPI_Status *stats,
                            double directions)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s();
    once(sbuf, 0, rbuf, size, window, reqs, stats);
    double t_window = now_s() - t0;
    if (t_window <= 0.0)
        t_window = 1e-9;

    int plan[2] = {1, BW_MIN_REPS}; /* windows per repetition, repetitions */
    if (g_rank == 0) {
        double iters = (BW_TARGET_TOTAL_S / BW_MAX_REPS) / t_window;
        plan[0] = iters < 1.0 ? 1 : iters > 1e6 ? 1000000 : (int)iters;
        double reps = BW_TARGET_TOTAL_S / (plan[0] * t_window);
        plan[1] = reps < BW_MIN_REPS ? BW_MIN_REPS : reps > BW_MAX_REPS ? BW_MAX_REPS : (int)reps;
    }
    /* Point-to-point only, so that the benchmark needs nothing but the core of MPI. */
    if (g_rank == 0)
        MPI_Send(plan, 2, MPI_INT, 1, TAG_PLAN, MPI_COMM_WORLD);
    else
        MPI_Recv(plan, 2, MPI_INT, 0, TAG_PLAN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    double *mbs = malloc((size_t)plan[1] * sizeof *mbs);
    if (!mbs)
        die("%s", "out of memory");
    for (int r = 0; r < plan[1]; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = now_s();
        for (int it = 0; it < plan[0]; it++)
            once(sbuf, 0, rbuf, size, window, reqs, stats);
        double elapsed = now_s() - start;
        mbs[r] = directions * (double)plan[0] * (double)window * (double)size / elapsed / 1e6;
    }
    double result = median(mbs, (size_t)plan[1]);
    free(mbs);
    return g_rank == 0 ? result : 0.0;
}

static double run_bandwidth(unsigned char *sbuf, unsigned char *rbuf,
                            size_t size)
{
    if (size == 0)
        return 0.0;

    int window = bw_window(size);
    MPI_Request reqs[BW_WINDOW_MAX];
    /* A real status array rather than MPI_STATUSES_IGNORE: some GCC versions
     * emit a false -Wstringop-overflow for the sentinel pointer. */
    MPI_Status stats[BW_WINDOW_MAX];

    /* Verified window: each message carries its own pattern so that lost,
     * truncated or reordered messages are detected. */
    if (g_rank == 0) {
        for (int w = 0; w < window; w++)
            fill_pattern(sbuf + (size_t)w * size, size,
                         (uint32_t)size * 131u + (uint32_t)w + 17u);
    } else {
        memset(rbuf, 0, (size_t)window * size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bw_window_once(sbuf, size, rbuf, size, window, reqs, stats);
    if (g_rank == 1) {
        for (int w = 0; w < window; w++)
            verify_or_die(rbuf + (size_t)w * size, size,
                          (uint32_t)size * 131u + (uint32_t)w + 17u,
                          "streaming window (0 -> 1)");
    }

    return timed_windows(bw_window_once, sbuf, rbuf, size, window, reqs, stats, 1.0);
}

/*
 * One bidirectional window: each rank receives `window` messages from the
 * other into consecutive slots of rbuf while sending `window` out of sbuf
 * (slot w at sbuf + w * sstride); then rank 1 acks.
 */
static void bidir_window_once(unsigned char *sbuf, size_t sstride,
                              unsigned char *rbuf, size_t size, int window,
                              MPI_Request *reqs, MPI_Status *stats)
{
    int n = (int)size;
    int peer = 1 - g_rank;
    char ack = 0;
    for (int w = 0; w < window; w++)
        MPI_Irecv(rbuf + (size_t)w * size, n, MPI_BYTE, peer, TAG_BIDIR,
                  MPI_COMM_WORLD, &reqs[w]);
    for (int w = 0; w < window; w++)
        MPI_Isend(sbuf + (size_t)w * sstride, n, MPI_BYTE, peer, TAG_BIDIR,
                  MPI_COMM_WORLD, &reqs[window + w]);
    MPI_Waitall(2 * window, reqs, stats);
    if (g_rank == 0)
        MPI_Recv(&ack, 1, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    else
        MPI_Send(&ack, 1, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
}

/* The pattern seed of message w of a window sent by `rank`. */
static uint32_t bidir_seed(int rank, size_t size, int w)
{
    return (uint32_t)size * 197u + (uint32_t)w * 3u + (uint32_t)rank + 29u;
}

static double run_bidir(unsigned char *sbuf, unsigned char *rbuf, size_t size)
{
    if (size == 0)
        return 0.0;

    int window = bw_window(size);
    MPI_Request reqs[2 * BW_WINDOW_MAX];
    MPI_Status stats[2 * BW_WINDOW_MAX];

    /* Verified window: each message of each rank carries its own pattern. */
    for (int w = 0; w < window; w++)
        fill_pattern(sbuf + (size_t)w * size, size, bidir_seed(g_rank, size, w));
    memset(rbuf, 0, (size_t)window * size);
    MPI_Barrier(MPI_COMM_WORLD);
    bidir_window_once(sbuf, size, rbuf, size, window, reqs, stats);
    for (int w = 0; w < window; w++)
        verify_or_die(rbuf + (size_t)w * size, size,
                      bidir_seed(1 - g_rank, size, w),
                      "bidirectional window");

    return timed_windows(bidir_window_once, sbuf, rbuf, size, window, reqs, stats, 2.0);
}

/* Counting mode: `n` untimed round trips of `size` bytes, the last one checked. */
static void run_roundtrips(unsigned char *sbuf, unsigned char *rbuf,
                           size_t size, long n)
{
    int count = (int)size;
    int peer = 1 - g_rank;
    uint32_t seed = (uint32_t)size * 11u + 5u;
    fill_pattern(sbuf, size, seed);
    for (long i = 0; i < n; i++) {
        if (g_rank == 0) {
            MPI_Send(sbuf, count, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD);
            MPI_Recv(rbuf, count, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, count, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf, count, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD);
        }
    }
    if (n > 0)
        verify_or_die(rbuf, size, seed, "counting round trip");
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", (unsigned)*p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void write_json(const char *path, const char *library,
                       const struct result *res, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot open JSON output '%s'", path);
    fputs("{\"library\": ", f);
    json_string(f, library);
    fputs(", \"results\": [", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s{\"size\": %zu, \"latency_us\": %.4f, "
                   "\"bandwidth_mb_s\": %.3f, \"bidir_bandwidth_mb_s\": %.3f}",
                i ? ", " : "", res[i].size, res[i].latency_us,
                res[i].bandwidth_mb_s, res[i].bidir_bandwidth_mb_s);
    }
    fputs("]}\n", f);
    if (fclose(f) != 0)
        die("error writing JSON output '%s'", path);
}

static void usage_and_exit(const char *prog, int code)
{
    if (g_rank == 0)
        fprintf(code ? stderr : stdout,
                "usage: mpirun -n 2 %s [--sizes a,b,c] [--json FILE] "
                "[--roundtrips N]\n",
                prog);
    MPI_Finalize();
    exit(code);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nranks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    const char *json_path = NULL;
    const size_t *sizes = default_sizes;
    size_t nsizes = sizeof default_sizes / sizeof default_sizes[0];
    size_t *own_sizes = NULL;
    long roundtrips = -1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            free(own_sizes);
            nsizes = parse_sizes(argv[++i], &own_sizes);
            sizes = own_sizes;
        } else if (strncmp(argv[i], "--sizes=", 8) == 0) {
            free(own_sizes);
            nsizes = parse_sizes(argv[i] + 8, &own_sizes);
            sizes = own_sizes;
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json_path = argv[++i];
        } else if (strncmp(argv[i], "--json=", 7) == 0) {
            json_path = argv[i] + 7;
        } else if (strcmp(argv[i], "--roundtrips") == 0 && i + 1 < argc) {
            roundtrips = (long)parse_size(argv[++i]);
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            usage_and_exit(argv[0], 0);
        } else {
            if (g_rank == 0)
                fprintf(stderr, "mpi_pingpong: unknown argument '%s'\n",
                        argv[i]);
            usage_and_exit(argv[0], 2);
        }
    }

    if (nranks != 2) {
        if (g_rank == 0)
            fprintf(stderr,
                    "mpi_pingpong: needs exactly 2 ranks, got %d\n", nranks);
        MPI_Finalize();
        return 2;
    }

    char libver[MPI_MAX_LIBRARY_VERSION_STRING + 1];
    int liblen = 0;
    memset(libver, 0, sizeof libver);
    MPI_Get_library_version(libver, &liblen);
    libver[sizeof libver - 1] = '\0';
    libver[strcspn(libver, "\r\n")] = '\0';

    /* One pool per direction, big enough for the largest streaming window. */
    size_t pool = 1;
    for (size_t i = 0; i < nsizes; i++) {
        size_t need = sizes[i] * (size_t)bw_window(sizes[i]);
        if (need > pool)
            pool = need;
    }
    unsigned char *sbuf = alloc_aligned(pool);
    unsigned char *rbuf = alloc_aligned(pool);

    struct result *res = calloc(nsizes, sizeof *res);
    if (!res)
        die("%s", "out of memory");

    if (roundtrips >= 0) {
        for (size_t i = 0; i < nsizes; i++)
            run_roundtrips(sbuf, rbuf, sizes[i], roundtrips);
        free(res);
        free(sbuf);
        free(rbuf);
        free(own_sizes);
        MPI_Finalize();
        return 0;
    }

    if (g_rank == 0) {
        printf("# %s\n", libver);
        printf("# latency: median of round-trip/2 (%d iters, %d for >= 1 MiB)\n",
               LAT_ITERS_SMALL, LAT_ITERS_LARGE);
        printf("# bandwidth: median over repetitions, window %d (%d for >= 1 MiB), "
               "MB/s = 10^6 B/s\n",
               BW_WINDOW_SMALL, BW_WINDOW_LARGE);
        printf("%12s %14s %16s %16s\n", "size(B)", "latency(us)",
               "bandwidth(MB/s)", "bidir(MB/s)");
        fflush(stdout);
    }

    for (size_t i = 0; i < nsizes; i++) {
        size_t size = sizes[i];
        res[i].size = size;
        res[i].latency_us = run_latency(sbuf, rbuf, size);
        res[i].bandwidth_mb_s = run_bandwidth(sbuf, rbuf, size);
        res[i].bidir_bandwidth_mb_s = run_bidir(sbuf, rbuf, size);
        if (g_rank == 0) {
            printf("%12zu %14.3f %16.2f %16.2f\n", size, res[i].latency_us,
                   res[i].bandwidth_mb_s, res[i].bidir_bandwidth_mb_s);
            fflush(stdout);
        }
    }

    if (g_rank == 0 && json_path)
        write_json(json_path, libver, res, nsizes);

    free(res);
    free(sbuf);
    free(rbuf);
    free(own_sizes);
    MPI_Finalize();
    return 0;
}
