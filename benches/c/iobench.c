/*
 * iobench.c - MPI-IO benchmarks for comparing MPI libraries side by side.
 *
 * The same source builds against this project's mpi.h, MPICH's (ROMIO) and
 * Open MPI's (ompio): standard MPI-3.1 calls only, plus POSIX for the baseline
 * and the data checks.  One benchmark per run, chosen by the first argument;
 * the `iobench` tool (benches/src/bin/iobench.rs) builds this file with each
 * library's mpicc, runs the libraries alternately and compares them.
 *
 * Usage:  mpirun -n NP ./iobench BENCHMARK --dir DIR [options]
 *   BENCHMARK: btio_write | btio_read | strided_write | write_at_64m
 *   --dir DIR      where the files go (required); they are removed at the end
 *   --grid N       btio: the global array is N x N x N doubles (default 128)
 *   --steps K      timed steps / repetitions of every benchmark (default 5)
 *   --block B      strided_write: bytes per block (default 4096)
 *   --blocks M     strided_write: blocks per rank (default 1024)
 *   --mib S        write_at_64m: MiB written by the one call (default 64)
 *   --sync         put MPI_File_sync (fsync for the POSIX baseline) inside
 *                  the timed region; without it the sync runs after the
 *                  timing, untimed (see "File caching" below)
 *   --drop-cache   btio_read: evict the file's pages (fdatasync then
 *                  posix_fadvise DONTNEED) before every timed read
 *
 * Output: comment lines start with '#'; every result is one line
 *   result NAME BYTES VALUE UNIT SAMPLES
 * with BYTES the bytes moved by one timed step (all ranks together), VALUE the
 * median over the timed steps of BYTES / time, UNIT "MB/s" (10^6 bytes per
 * second).  Only rank 0 prints.  write_at_64m prints three results:
 * write_at_64m (the MPI call), pwrite_64m (the POSIX baseline measured in the
 * same program) and write_at_over_pwrite (UNIT "ratio": the median over steps
 * of the pwrite time / the MPI_File_write_at time; 1 is parity, above 0.9 is
 * within 10% of pwrite).
 *
 * Method (every time by MPI_Wtime; one untimed warm-up step first; a step's
 * time is the slowest rank's, MPI_Barrier before each step):
 *   btio_write     the NAS BT-IO pattern: a 3-D array of N^3 doubles (C order)
 *                  block-distributed over a MPI_Dims_create(NP, 3) grid of
 *                  ranks; each rank's block is its filetype, made by
 *                  MPI_Type_create_subarray, and is contiguous in memory.  Step
 *                  k sets the view at displacement k * N^3 * 8 (a time step
 *                  appended to the file, as BT-IO does) and calls
 *                  MPI_File_write_all once.
 *   btio_read      the same view; the file is first written by rank 0 with
 *                  pwrite (not through MPI) and fsynced; each step calls
 *                  MPI_File_read_all once and checks every element.
 *   strided_write  independent writes through a vector view: the file is
 *                  blocks of B bytes dealt round robin, rank r owning blocks
 *                  r, r + NP, r + 2 NP, ... (filetype MPI_Type_vector(M, B,
 *                  NP * B, MPI_BYTE), displacement r * B); each rank writes
 *                  its M blocks with one MPI_File_write from a contiguous
 *                  buffer.  Step k writes a fresh region of the file.
 *   write_at_64m   rank 0 writes S MiB with one MPI_File_write_at at offset
 *                  0 of one file, and the same buffer with pwrite (looped
 *                  until done) to a second file opened with open(2); both
 *                  files are truncated to 0 before every step (untimed), so
 *                  both calls allocate fresh pages; the order of the two
 *                  alternates from step to step.  Meant for np=1.
 * File caching: writes land in the page cache unless --sync is given.
 * Without --sync the figures measure each library's path to the page cache
 * (the same kernel work for all libraries) and every step is followed by an
 * untimed MPI_File_sync (fsync) so that dirty pages never pile up across
 * steps or runs; with --sync the flush to the device is timed too (on tmpfs a
 * sync does nothing).  Reads of a file just written come from the page cache
 * unless --drop-cache is given.
 * Data check: after the timing, the write benchmarks read every timed step
 * back with pread and compare it with what was written (one wrong byte ends
 * the program with MPI_Abort and status 3); btio_read checks its buffer after
 * every step.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, nprocs;

static struct {
    const char *dir;
    long grid;
    int steps;
    long block;
    long blocks;
    long mib;
    int sync;
    int drop_cache;
} opt = {NULL, 128, 5, 4096, 1024, 64, 0, 0};

static void die(const char *what)
{
    fprintf(stderr, "iobench (rank %d): %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

/* Ends the program when an MPI call did not succeed (files return errors by default). */
static void check_mpi(int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING], msg[MPI_MAX_ERROR_STRING + 100];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        snprintf(msg, sizeof msg, "%s failed: %s", call, text);
        die(msg);
    }
}

static void die_errno(const char *call, const char *path)
{
    char msg[600];
    snprintf(msg, sizeof msg, "%s %s: %s", call, path, strerror(errno));
    die(msg);
}

static void *checked_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        die("out of memory");
    return p;
}

static void file_path(char *out, size_t size, const char *name)
{
    int n = snprintf(out, size, "%s/iobench-%s", opt.dir, name);
    if (n < 0 || (size_t)n >= size)
        die("--dir is too long");
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

/* The slowest rank's time. */
static double slowest(double seconds)
{
    double max = 0;
    MPI_Allreduce(&seconds, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return max;
}

static void report(const char *name, long bytes, double value, const char *unit, int samples)
{
    if (rank == 0) {
        printf("result %s %ld %.6g %s %d\n", name, bytes, value, unit, samples);
        fflush(stdout);
    }
}

/* pread of exactly `bytes` (looping over short reads). */
static void pread_all(int fd, void *buf, size_t bytes, off_t offset, const char *path)
{
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = pread(fd, (char *)buf + done, bytes - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die_errno("pread", path);
        if (n == 0)
            die("file shorter than what was written");
        done += (size_t)n;
    }
}

/* pwrite of exactly `bytes` (looping over short writes). */
static void pwrite_all(int fd, const void *buf, size_t bytes, off_t offset, const char *path)
{
    size_t done = 0;
    while (done < bytes) {
        ssize_t n = pwrite(fd, (const char *)buf + done, bytes - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die_errno("pwrite", path);
        done += (size_t)n;
    }
}

/* Rank 0 drops the file's cached pages (every rank waits for it). */
static void drop_cache(const char *path)
{
    if (rank == 0) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            die_errno("open", path);
        if (fdatasync(fd) != 0)
            die_errno("fdatasync", path);
        /* Advice, not a command: a file system may keep the pages (tmpfs does). */
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- btio: a block-distributed 3-D array of doubles ------------------------------------ */

struct btio {
    long n;           /* global array: n x n x n doubles */
    int dims[3];      /* ranks per dimension */
    int sub[3];       /* this rank's block */
    int start[3];     /* where it starts in the global array */
    long local;       /* doubles in the block */
    MPI_Datatype filetype;
    double *buf;
};

/* The value of global element `gi` at time step `step`: exact in a double. */
static double btio_value(long gi, int step)
{
    return (double)gi + 0.25 * (double)step;
}

static void btio_setup(struct btio *b)
{
    b->n = opt.grid;
    b->dims[0] = b->dims[1] = b->dims[2] = 0;
    MPI_Dims_create(nprocs, 3, b->dims);
    int coords[3] = {rank / (b->dims[1] * b->dims[2]), (rank / b->dims[2]) % b->dims[1], rank % b->dims[2]};
    b->local = 1;
    for (int d = 0; d < 3; d++) {
        if (b->n < b->dims[d])
            die("--grid is smaller than the grid of ranks: every rank needs a block");
        long base = b->n / b->dims[d], rest = b->n % b->dims[d];
        b->sub[d] = (int)(base + (coords[d] < rest));
        b->start[d] = (int)(coords[d] * base + (coords[d] < rest ? coords[d] : rest));
        b->local *= b->sub[d];
    }
    int sizes[3] = {(int)b->n, (int)b->n, (int)b->n};
    check_mpi(MPI_Type_create_subarray(3, sizes, b->sub, b->start, MPI_ORDER_C, MPI_DOUBLE, &b->filetype),
              "MPI_Type_create_subarray");
    check_mpi(MPI_Type_commit(&b->filetype), "MPI_Type_commit");
    b->buf = checked_malloc(sizeof(double) * (size_t)b->local);
}

static long btio_global_index(const struct btio *b, long i, long j, long k)
{
    return ((b->start[0] + i) * b->n + (b->start[1] + j)) * b->n + (b->start[2] + k);
}

static void btio_fill(struct btio *b, int step)
{
    long at = 0;
    for (long i = 0; i < b->sub[0]; i++)
        for (long j = 0; j < b->sub[1]; j++)
            for (long k = 0; k < b->sub[2]; k++)
                b->buf[at++] = btio_value(btio_global_index(b, i, j, k), step);
}

/* Compares one row of the block (sub[2] doubles) with the values due at `step`. */
static void btio_check_row(const struct btio *b, const double *row, long i, long j, int step, const char *bench)
{
    for (long k = 0; k < b->sub[2]; k++) {
        long gi = btio_global_index(b, i, j, k);
        if (row[k] != btio_value(gi, step)) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s: step %d element %ld is %.17g, expected %.17g", bench, step, gi, row[k],
                     btio_value(gi, step));
            die(msg);
        }
    }
}

static void btio_set_view(MPI_File fh, const struct btio *b, int step)
{
    MPI_Offset disp = (MPI_Offset)step * b->n * b->n * b->n * (MPI_Offset)sizeof(double);
    check_mpi(MPI_File_set_view(fh, disp, MPI_DOUBLE, b->filetype, "native", MPI_INFO_NULL), "MPI_File_set_view");
}

static void bench_btio_write(void)
{
    struct btio b;
    btio_setup(&b);
    char path[512];
    file_path(path, sizeof path, "btio.dat");
    MPI_File fh;
    check_mpi(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
              "MPI_File_open");
    long total = b.n * b.n * b.n * (long)sizeof(double);
    double *rates = checked_malloc(sizeof(double) * (size_t)opt.steps);
    for (int step = 0; step <= opt.steps; step++) { /* step 0 is the warm-up */
        btio_fill(&b, step);
        btio_set_view(fh, &b, step);
        MPI_Status status;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        check_mpi(MPI_File_write_all(fh, b.buf, (int)b.local, MPI_DOUBLE, &status), "MPI_File_write_all");
        if (opt.sync)
            check_mpi(MPI_File_sync(fh), "MPI_File_sync");
        double t = slowest(MPI_Wtime() - t0);
        if (!opt.sync)
            check_mpi(MPI_File_sync(fh), "MPI_File_sync");
        if (step > 0)
            rates[step - 1] = (double)total / t / 1e6;
    }
    check_mpi(MPI_File_close(&fh), "MPI_File_close");

    /* Every step back with pread, one row of the block at a time. */
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die_errno("open", path);
    double *row = checked_malloc(sizeof(double) * (size_t)b.sub[2]);
    for (int step = 0; step <= opt.steps; step++)
        for (long i = 0; i < b.sub[0]; i++)
            for (long j = 0; j < b.sub[1]; j++) {
                off_t at = ((off_t)step * total + btio_global_index(&b, i, j, 0) * (off_t)sizeof(double));
                pread_all(fd, row, sizeof(double) * (size_t)b.sub[2], at, path);
                btio_check_row(&b, row, i, j, step, "btio_write");
            }
    close(fd);
    free(row);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        check_mpi(MPI_File_delete(path, MPI_INFO_NULL), "MPI_File_delete");
    report("btio_write", total, rank == 0 ? median(rates, opt.steps) : 0, "MB/s", opt.steps);
    free(rates);
    free(b.buf);
    MPI_Type_free(&b.filetype);
}

static void bench_btio_read(void)
{
    struct btio b;
    btio_setup(&b);
    char path[512];
    file_path(path, sizeof path, "btio.dat");
    long total = b.n * b.n * b.n * (long)sizeof(double);
    long plane = b.n * b.n;

    /* The file, written by rank 0 with pwrite one plane at a time: every step, warm-up included. */
    if (rank == 0) {
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0)
            die_errno("open", path);
        double *values = checked_malloc(sizeof(double) * (size_t)plane);
        for (int step = 0; step <= opt.steps; step++)
            for (long i = 0; i < b.n; i++) {
                for (long x = 0; x < plane; x++)
                    values[x] = btio_value(i * plane + x, step);
                off_t at = (off_t)step * total + (off_t)(i * plane) * (off_t)sizeof(double);
                pwrite_all(fd, values, sizeof(double) * (size_t)plane, at, path);
            }
        if (fsync(fd) != 0)
            die_errno("fsync", path);
        close(fd);
        free(values);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_File fh;
    check_mpi(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open");
    double *rates = checked_malloc(sizeof(double) * (size_t)opt.steps);
    for (int step = 0; step <= opt.steps; step++) {
        btio_set_view(fh, &b, step);
        memset(b.buf, 0, sizeof(double) * (size_t)b.local);
        if (opt.drop_cache)
            drop_cache(path);
        MPI_Status status;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        check_mpi(MPI_File_read_all(fh, b.buf, (int)b.local, MPI_DOUBLE, &status), "MPI_File_read_all");
        double t = slowest(MPI_Wtime() - t0);
        if (step > 0)
            rates[step - 1] = (double)total / t / 1e6;
        for (long i = 0; i < b.sub[0]; i++)
            for (long j = 0; j < b.sub[1]; j++)
                btio_check_row(&b, b.buf + (i * b.sub[1] + j) * b.sub[2], i, j, step, "btio_read");
    }
    check_mpi(MPI_File_close(&fh), "MPI_File_close");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        check_mpi(MPI_File_delete(path, MPI_INFO_NULL), "MPI_File_delete");
    report("btio_read", total, rank == 0 ? median(rates, opt.steps) : 0, "MB/s", opt.steps);
    free(rates);
    free(b.buf);
    MPI_Type_free(&b.filetype);
}

/* ---- strided independent writes ------------------------------------------------------- */

/* The byte at offset i of rank `owner`'s data at step `step`. */
static unsigned char strided_pattern(int owner, int step, long i)
{
    return (unsigned char)((i * 131 + owner * 29 + step * 7 + 1) & 0xff);
}

static void bench_strided_write(void)
{
    long block = opt.block, blocks = opt.blocks;
    if (block > INT32_MAX || (long)nprocs * block > INT32_MAX || block * blocks > INT32_MAX)
        die("--block x --blocks must stay below 2 GiB");
    long mine = block * blocks, total = mine * nprocs;
    MPI_Datatype filetype;
    check_mpi(MPI_Type_vector((int)blocks, (int)block, (int)((long)nprocs * block), MPI_BYTE, &filetype),
              "MPI_Type_vector");
    check_mpi(MPI_Type_commit(&filetype), "MPI_Type_commit");
    unsigned char *buf = checked_malloc((size_t)mine);
    char path[512];
    file_path(path, sizeof path, "strided.dat");
    MPI_File fh;
    check_mpi(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
              "MPI_File_open");
    double *rates = checked_malloc(sizeof(double) * (size_t)opt.steps);
    for (int step = 0; step <= opt.steps; step++) { /* step 0 is the warm-up */
        for (long i = 0; i < mine; i++)
            buf[i] = strided_pattern(rank, step, i);
        MPI_Offset disp = (MPI_Offset)step * total + (MPI_Offset)rank * block;
        check_mpi(MPI_File_set_view(fh, disp, MPI_BYTE, filetype, "native", MPI_INFO_NULL), "MPI_File_set_view");
        MPI_Status status;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        check_mpi(MPI_File_write(fh, buf, (int)mine, MPI_BYTE, &status), "MPI_File_write");
        if (opt.sync)
            check_mpi(MPI_File_sync(fh), "MPI_File_sync");
        double t = slowest(MPI_Wtime() - t0);
        if (!opt.sync)
            check_mpi(MPI_File_sync(fh), "MPI_File_sync");
        if (step > 0)
            rates[step - 1] = (double)total / t / 1e6;
    }
    check_mpi(MPI_File_close(&fh), "MPI_File_close");

    /* Every block of this rank at every step, read back with pread. */
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        die_errno("open", path);
    unsigned char *got = checked_malloc((size_t)block);
    for (int step = 0; step <= opt.steps; step++)
        for (long m = 0; m < blocks; m++) {
            off_t at = (off_t)step * total + (off_t)(m * nprocs + rank) * block;
            pread_all(fd, got, (size_t)block, at, path);
            for (long i = 0; i < block; i++)
                if (got[i] != strided_pattern(rank, step, m * block + i)) {
                    char msg[200];
                    snprintf(msg, sizeof msg, "strided_write: step %d, block %ld of rank %d, byte %ld is %u, expected %u",
                             step, m, rank, i, got[i], strided_pattern(rank, step, m * block + i));
                    die(msg);
                }
        }
    close(fd);
    free(got);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        check_mpi(MPI_File_delete(path, MPI_INFO_NULL), "MPI_File_delete");
    report("strided_write", total, rank == 0 ? median(rates, opt.steps) : 0, "MB/s", opt.steps);
    free(rates);
    free(buf);
    MPI_Type_free(&filetype);
}

/* ---- one large contiguous write against pwrite ---------------------------------------- */

static void bench_write_at(void)
{
    if (opt.mib < 1 || opt.mib > 2047)
        die("--mib must be between 1 and 2047 (one call of an int count of bytes)");
    long bytes = opt.mib * 1024 * 1024;
    unsigned char *buf = checked_malloc((size_t)bytes);
    for (long i = 0; i < bytes; i++)
        buf[i] = (unsigned char)((i * 131 + 7) & 0xff);
    char mpi_path[512], posix_path[512];
    file_path(mpi_path, sizeof mpi_path, "write_at.mpi");
    file_path(posix_path, sizeof posix_path, "write_at.posix");
    MPI_File fh;
    check_mpi(MPI_File_open(MPI_COMM_WORLD, mpi_path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
              "MPI_File_open");
    int fd = -1;
    if (rank == 0) {
        fd = open(posix_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0)
            die_errno("open", posix_path);
    }
    double *mpi_rates = checked_malloc(sizeof(double) * (size_t)opt.steps);
    double *posix_rates = checked_malloc(sizeof(double) * (size_t)opt.steps);
    double *ratios = checked_malloc(sizeof(double) * (size_t)opt.steps);
    for (int step = 0; step <= opt.steps; step++) { /* step 0 is the warm-up */
        double mpi_time = 0, posix_time = 0;
        check_mpi(MPI_File_set_size(fh, 0), "MPI_File_set_size");
        if (rank == 0 && ftruncate(fd, 0) != 0)
            die_errno("ftruncate", posix_path);
        for (int turn = 0; turn < 2; turn++) {
            int mpi_now = (turn + step) % 2 == 0;
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (mpi_now) {
                if (rank == 0) {
                    MPI_Status status;
                    check_mpi(MPI_File_write_at(fh, 0, buf, (int)bytes, MPI_BYTE, &status), "MPI_File_write_at");
                }
                if (opt.sync)
                    check_mpi(MPI_File_sync(fh), "MPI_File_sync");
                mpi_time = MPI_Wtime() - t0;
                if (!opt.sync)
                    check_mpi(MPI_File_sync(fh), "MPI_File_sync");
            } else if (rank == 0) {
                pwrite_all(fd, buf, (size_t)bytes, 0, posix_path);
                if (opt.sync && fsync(fd) != 0)
                    die_errno("fsync", posix_path);
                posix_time = MPI_Wtime() - t0;
                if (!opt.sync && fsync(fd) != 0)
                    die_errno("fsync", posix_path);
            }
        }
        if (step > 0 && rank == 0) {
            mpi_rates[step - 1] = (double)bytes / mpi_time / 1e6;
            posix_rates[step - 1] = (double)bytes / posix_time / 1e6;
            ratios[step - 1] = posix_time / mpi_time;
        }
    }
    check_mpi(MPI_File_close(&fh), "MPI_File_close");

    /* Both files back with pread. */
    if (rank == 0) {
        close(fd);
        unsigned char *got = checked_malloc((size_t)bytes);
        const char *paths[2] = {mpi_path, posix_path};
        for (int f = 0; f < 2; f++) {
            int rfd = open(paths[f], O_RDONLY);
            if (rfd < 0)
                die_errno("open", paths[f]);
            memset(got, 0, (size_t)bytes);
            pread_all(rfd, got, (size_t)bytes, 0, paths[f]);
            close(rfd);
            if (memcmp(got, buf, (size_t)bytes) != 0)
                die(f == 0 ? "write_at_64m: the MPI file does not hold what was written"
                           : "write_at_64m: the pwrite file does not hold what was written");
        }
        free(got);
        check_mpi(MPI_File_delete(mpi_path, MPI_INFO_NULL), "MPI_File_delete");
        if (unlink(posix_path) != 0)
            die_errno("unlink", posix_path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        report("write_at_64m", bytes, median(mpi_rates, opt.steps), "MB/s", opt.steps);
        report("pwrite_64m", bytes, median(posix_rates, opt.steps), "MB/s", opt.steps);
        report("write_at_over_pwrite", bytes, median(ratios, opt.steps), "ratio", opt.steps);
    }
    free(mpi_rates);
    free(posix_rates);
    free(ratios);
    free(buf);
}

/* ---- driver -------------------------------------------------------------------------- */

static long number_option(const char *name, const char *text, long least, long most)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < least || v > most) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s wants a whole number from %ld to %ld, got %s", name, least, most, text);
        die(msg);
    }
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    const char *bench = argc > 1 ? argv[1] : "";
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--sync"))
            opt.sync = 1;
        else if (!strcmp(a, "--drop-cache"))
            opt.drop_cache = 1;
        else if (!strcmp(a, "--dir") && has_value)
            opt.dir = argv[++i];
        else if (!strcmp(a, "--grid") && has_value)
            opt.grid = number_option(a, argv[++i], 1, 1024);
        else if (!strcmp(a, "--steps") && has_value)
            opt.steps = (int)number_option(a, argv[++i], 1, 1000);
        else if (!strcmp(a, "--block") && has_value)
            opt.block = number_option(a, argv[++i], 1, 1L << 30);
        else if (!strcmp(a, "--blocks") && has_value)
            opt.blocks = number_option(a, argv[++i], 1, 1L << 30);
        else if (!strcmp(a, "--mib") && has_value)
            opt.mib = number_option(a, argv[++i], 1, 2047);
        else
            die("usage: iobench btio_write|btio_read|strided_write|write_at_64m --dir DIR [--grid N] "
                "[--steps K] [--block B] [--blocks M] [--mib S] [--sync] [--drop-cache]");
    }
    if (!opt.dir)
        die("--dir DIR is required: the directory for the benchmark's files");
    struct stat st;
    if (stat(opt.dir, &st) != 0 || !S_ISDIR(st.st_mode))
        die_errno("no directory", opt.dir);

    void (*run)(void) = NULL;
    if (!strcmp(bench, "btio_write"))
        run = bench_btio_write;
    else if (!strcmp(bench, "btio_read"))
        run = bench_btio_read;
    else if (!strcmp(bench, "strided_write"))
        run = bench_strided_write;
    else if (!strcmp(bench, "write_at_64m"))
        run = bench_write_at;
    else
        die("unknown benchmark: choose btio_write, btio_read, strided_write or write_at_64m");

    if (rank == 0) {
        printf("# iobench %s np=%d sync=%d drop_cache=%d dir=%s\n", bench, nprocs, opt.sync, opt.drop_cache,
               opt.dir);
        fflush(stdout);
    }
    run();
    MPI_Finalize();
    return 0;
}
