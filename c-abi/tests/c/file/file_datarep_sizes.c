/*
 * file_datarep_sizes: data representations that change a type's size (MPI 3.1 §13.5.1), on
 * any number of ranks. A view is in file bytes: its displacement as given, its etype and
 * filetype (portable types) with every predefined type at its size in the representation;
 * an access moves the values of its memory type, each taking its file size in the file.
 *
 *  - MPI_LONG in external32 (8 bytes in memory, 4 in the file): each rank's view is a vector
 *    of MPI_LONG blocks interleaved with the other ranks' (stride in elements: scaled to 4
 *    bytes), written with write_at, write_all, iwrite_at into three regions of one file and
 *    read back with read_at, read, read_at_all, iread_at; a common gapped vector view through
 *    the shared pointer, written with write_ordered then write_shared, read back with
 *    read_ordered and read_shared; rank 0 then reads the whole file with POSIX
 *    reads and checks every byte (4-byte big-endian values at the scaled positions, zeroes
 *    in the gaps);
 *  - MPI_File_get_type_extent (MPI_LONG 4, the vector's scaled extent, MPI_LONG_INT 8),
 *    MPI_File_get_byte_offset, the file pointer after write_all (etypes of the view),
 *    MPI_Get_count / MPI_Get_elements of the statuses in MPI_LONGs (memory terms);
 *  - a read at the end of the file (read_at and read_at_all): a value cut by the end counts
 *    nothing (3 longs asked, 6 bytes left: one whole long and half of one, count 1);
 *    MPI_SEEK_END counts the view's etypes in the file;
 *  - a long that does not fit in external32's 4 bytes: MPI_ERR_CONVERSION, the file
 *    untouched;
 *  - MPI_LONG_INT in external32 (16 bytes in memory, 12 of them data; 8 in the file)
 *    through an interleaved vector view, write_at and read_at, every file byte checked;
 *  - a representation of the program's (MPI_Register_datarep) whose extent function makes
 *    MPI_INT 8 bytes in the file (its write function stores each int as an 8-byte
 *    big-endian integer, its read function converts back), through an interleaved vector
 *    view: write_at and write_at_all, read back with read_at_all and read_at,
 *    get_type_extent, every file byte checked.
 *
 * With FILE_TEST_KEEP set in the environment the files are left in FILE_TEST_DIR (to
 * compare the bytes two libraries wrote). Debian's MPICH 4.0.2 (ROMIO) does none of this
 * right, so under it each part is skipped (a NOTE line) and the program checks nothing
 * (built by MPICH's mpicc it still runs whole on this library):
 *  - MPI_LONG in external32: ROMIO converts the data to 4-byte values but places them with
 *    the memory's sizes (MPI_File_get_type_extent(MPI_LONG) is 8, a vector view's strides
 *    are not scaled): a write of 4 longs through a vector view puts the 16 converted bytes
 *    at the start of the view's first 32 data bytes and fills the rest with bytes of its
 *    buffer that are not the data (read back by ROMIO itself, the values come back); even
 *    through a contiguous view of MPI_LONG the 16 bytes of 4 longs, the same as this
 *    library's, are followed by 16 such bytes (a 32-byte file) and
 *    MPI_File_get_byte_offset counts 8 bytes a long: no file of MPI_LONGs is the same;
 *  - MPI_LONG_INT: a view of it in external32 aborts the job (ROMIO calls
 *    MPI_Type_get_contents on the named type: "Named predefined datatypes are not
 *    permitted");
 *  - registered representations: conversion functions are refused at registration and any
 *    registered name in a view.
 */
#define TEST_NAME "file_datarep_sizes"
#include "mpitest.h"
#include "file_util.h"
#include <fcntl.h>
#include <sys/stat.h>

#define B 3              /* values per block of a rank */
#define NBLK 5           /* blocks of a rank in a region */
#define PER (B * NBLK)   /* values of a rank in a region */
#define REGIONS 3        /* regions of the interleaved views */

/* The value of element i of rank r in region k (fits in 32 bits, negative ones too). */
static long value(int k, int r, int i)
{
    long v = (long)(k + 1) * 1000003L + (long)r * 10007L + (long)i * 131L;
    return (i % 2) ? -v : v;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

/* The whole file, read with POSIX calls (the caller frees it). */
static unsigned char *posix_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open(%s) for the byte check failed", path);
    struct stat sb;
    CHECK(fstat(fd, &sb) == 0, "fstat(%s) failed", path);
    *len = (size_t)sb.st_size;
    unsigned char *bytes = test_malloc(*len + 1);
    size_t got = 0;
    while (got < *len) {
        ssize_t n = pread(fd, bytes + got, *len - got, (off_t)got);
        CHECK(n > 0, "pread(%s) at %zu failed", path, got);
        got += (size_t)n;
    }
    close(fd);
    return bytes;
}

static void remove_file(const char *path)
{
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0 && getenv("FILE_TEST_KEEP") == NULL)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
}

static void check_extent(MPI_File fh, MPI_Datatype t, long want, const char *what)
{
    MPI_Aint e = -1;
    CHECK_MPI(MPI_File_get_type_extent(fh, t, &e));
    CHECK(e == want, "MPI_File_get_type_extent(%s) is %ld, want %ld", what, (long)e, want);
}

/* The status of an access of n values of `type` (memory terms). */
static void check_count(const MPI_Status *st, MPI_Datatype type, int n, const char *what)
{
    int count = -1, elements = -1;
    CHECK_MPI(MPI_Get_count(st, type, &count));
    CHECK_MPI(MPI_Get_elements(st, type, &elements));
    CHECK(count == n, "%s: MPI_Get_count says %d values, want %d", what, count, n);
    int per = type == MPI_LONG_INT ? 2 : 1;
    CHECK(elements == n * per, "%s: MPI_Get_elements says %d, want %d", what, elements, n * per);
}

static void check_longs(const long *got, int k, const char *what)
{
    for (int i = 0; i < PER; i++)
        CHECK(got[i] == value(k, test_rank, i), "%s: long %d read back as %ld, want %ld", what, i, got[i],
              value(k, test_rank, i));
}

/* ---- MPI_LONG in external32 ------------------------------------------------------------ */

/* Bytes of one region of the interleaved views. */
#define REGION_BYTES ((MPI_Offset)PER * test_size * 4)
/* The common view of the shared pointer: 2 blocks of B longs in every 3B. */
#define SHARED_BASE (REGIONS * REGION_BYTES)

/* This rank's interleaved view of region k: blocks of B longs, B * size longs apart. */
static void interleaved_view(MPI_File fh, int k, MPI_Datatype filetype)
{
    MPI_Offset disp = k * REGION_BYTES + (MPI_Offset)test_rank * B * 4;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_LONG, filetype, "external32", MPI_INFO_NULL));
}

static void longs_interleaved(MPI_File fh, MPI_Datatype filetype)
{
    MPI_Status st;
    MPI_Request req;
    long out[PER], in[PER];
    MPI_Offset disp0 = (MPI_Offset)test_rank * B * 4;

    /* Region 0: write_at, read_at, read. */
    interleaved_view(fh, 0, filetype);
    check_extent(fh, MPI_LONG, 4, "MPI_LONG");
    check_extent(fh, MPI_LONG_INT, 8, "MPI_LONG_INT");
    check_extent(fh, filetype, ((long)(NBLK - 1) * B * test_size + B) * 4, "a vector of MPI_LONG");
    for (int j = 0; j < PER; j += 4) {
        MPI_Offset at = -1;
        CHECK_MPI(MPI_File_get_byte_offset(fh, j, &at));
        MPI_Offset want = disp0 + ((MPI_Offset)(j / B) * B * test_size + j % B) * 4;
        CHECK(at == want, "MPI_File_get_byte_offset(%d) is %lld, want %lld", j, (long long)at, (long long)want);
    }
    for (int i = 0; i < PER; i++)
        out[i] = value(0, test_rank, i);
    CHECK_MPI(MPI_File_write_at(fh, 0, out, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "write_at");
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read_at(fh, 0, in, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "read_at");
    check_longs(in, 0, "read_at");
    /* The individual pointer, in two reads: B + 1 values then the rest. */
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read(fh, in, B + 1, MPI_LONG, &st));
    check_count(&st, MPI_LONG, B + 1, "read");
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == B + 1, "after reading %d longs the file pointer is %lld", B + 1, (long long)pos);
    CHECK_MPI(MPI_File_read(fh, in + B + 1, PER - B - 1, MPI_LONG, &st));
    check_longs(in, 0, "read");

    /* A long that does not fit in 4 bytes: nothing written. */
    long big = 1L << 40;
    EXPECT_CLASS(MPI_File_write_at(fh, 1, &big, 1, MPI_LONG, &st), MPI_ERR_CONVERSION);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Region 1: write_all, read_at_all. */
    interleaved_view(fh, 1, filetype);
    for (int i = 0; i < PER; i++)
        out[i] = value(1, test_rank, i);
    CHECK_MPI(MPI_File_write_all(fh, out, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "write_all");
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == PER, "after write_all of %d longs the file pointer is %lld", PER, (long long)pos);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read_at_all(fh, 0, in, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "read_at_all");
    check_longs(in, 1, "read_at_all");

    /* Region 2: iwrite_at, iread_at. */
    interleaved_view(fh, 2, filetype);
    for (int i = 0; i < PER; i++)
        out[i] = value(2, test_rank, i);
    CHECK_MPI(MPI_File_iwrite_at(fh, 0, out, PER, MPI_LONG, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    check_count(&st, MPI_LONG, PER, "iwrite_at");
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_iread_at(fh, 0, in, PER, MPI_LONG, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    check_count(&st, MPI_LONG, PER, "iread_at");
    check_longs(in, 2, "iread_at");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* The common view of the shared pointer: etype MPI_LONG, 2 blocks of B longs in every 3B. */
static void shared_view(MPI_File fh, MPI_Datatype gapped)
{
    CHECK_MPI(MPI_File_set_view(fh, SHARED_BASE, MPI_LONG, gapped, "external32", MPI_INFO_NULL));
}

/* The file long (from SHARED_BASE) of data position d of the gapped view. */
static long gapped_slot(long d)
{
    long tile = d / (2 * B), w = d % (2 * B);
    return tile * 3 * B + (w < B ? w : w + B);
}

static void longs_shared(MPI_File fh, MPI_Datatype gapped)
{
    MPI_Status st;
    long out[PER], in[PER];
    shared_view(fh, gapped);
    check_extent(fh, gapped, 3 * B * 4, "the gapped vector");
    for (int i = 0; i < PER; i++)
        out[i] = value(3, test_rank, i);
    CHECK_MPI(MPI_File_write_ordered(fh, out, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "write_ordered");
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position_shared(fh, &pos));
    CHECK(pos == (MPI_Offset)PER * test_size, "after write_ordered the shared pointer is %lld, want %d",
          (long long)pos, PER * test_size);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* every rank saw it before any moves it on */
    for (int i = 0; i < PER; i++)
        out[i] = value(4, test_rank, i);
    CHECK_MPI(MPI_File_write_shared(fh, out, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "write_shared");
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read_ordered(fh, in, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "read_ordered");
    check_longs(in, 3, "read_ordered");
    /* read_shared: one of the slots write_shared filled, whole. */
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read_shared(fh, in, PER, MPI_LONG, &st));
    check_count(&st, MPI_LONG, PER, "read_shared");
    int writer = -1;
    for (int r = 0; r < test_size; r++)
        if (in[0] == value(4, r, 0))
            writer = r;
    CHECK(writer >= 0, "read_shared got %ld first, no rank's first value", in[0]);
    for (int i = 0; i < PER; i++)
        CHECK(in[i] == value(4, writer, i), "read_shared: long %d is %ld, want rank %d's %ld", i, in[i], writer,
              value(4, writer, i));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Rank 0: every byte of the file the interleaved and shared accesses wrote. */
static void check_long_file(const char *path)
{
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank != 0)
        return;
    size_t len = 0;
    unsigned char *f = posix_file(path, &len);
    long shared_longs = gapped_slot(2L * PER * test_size - 1) + 1;
    size_t want_len = (size_t)SHARED_BASE + (size_t)shared_longs * 4;
    CHECK(len == want_len, "the external32 file has %zu bytes, want %zu", len, want_len);
    for (int k = 0; k < REGIONS; k++)
        for (int r = 0; r < test_size; r++)
            for (int i = 0; i < PER; i++) {
                size_t at = (size_t)(k * REGION_BYTES) + ((size_t)((i / B) * test_size + r) * B + i % B) * 4;
                int32_t got = (int32_t)be32(f + at);
                CHECK(got == value(k, r, i), "region %d: rank %d's long %d at byte %zu is %d, want %ld", k, r, i,
                      at, got, value(k, r, i));
            }
    /* The shared region: the ordered data in rank order, then each rank's write_shared slot
     * (in some order), zeroes in the gaps. */
    unsigned char *s = f + SHARED_BASE;
    int seen[64] = {0};
    for (long d = 0; d < 2L * PER * test_size; d++) {
        long slot = d / PER, i = d % PER;
        int32_t got = (int32_t)be32(s + 4 * gapped_slot(d));
        if (slot < test_size) {
            CHECK(got == value(3, (int)slot, (int)i), "ordered long %ld is %d, want %ld", d, got,
                  value(3, (int)slot, (int)i));
        } else {
            int r = 0;
            if (i == 0) {
                while (r < test_size && value(4, r, 0) != got)
                    r++;
                CHECK(r < test_size && !seen[r], "write_shared slot %ld starts with %d", slot - test_size, got);
                seen[r] = 1;
            }
        }
    }
    for (long d = PER * test_size; d < 2L * PER * test_size; d++) {
        long slot = d / PER, i = d % PER;
        int32_t first = (int32_t)be32(s + 4 * gapped_slot(slot * PER));
        int r = 0;
        while (value(4, r, 0) != first)
            r++;
        int32_t got = (int32_t)be32(s + 4 * gapped_slot(d));
        CHECK(got == value(4, r, (int)i), "write_shared slot %ld long %ld is %d, want %ld", slot, i, got,
              value(4, r, (int)i));
    }
    for (long x = 0; x < shared_longs; x++) {
        long w = x % (3 * B);
        if (w >= B && w < 2 * B)
            CHECK(be32(s + 4 * x) == 0, "the gap long %ld of the shared region is not zero", x);
    }
    free(f);
}

/* The end of the file: a view of longs from 6 bytes before it. */
static void read_at_the_end(MPI_File fh, const char *path)
{
    MPI_Offset size = 0;
    MPI_Status st;
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK_MPI(MPI_File_set_view(fh, size - 6, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL));
    long in[3] = {7, 7, 7};
    CHECK_MPI(MPI_File_read_at(fh, 0, in, 3, MPI_LONG, &st));
    check_count(&st, MPI_LONG, 1, "a read of 6 bytes before the end");
    int bytes = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &bytes));
    CHECK(bytes == 8, "a read of one whole long at the end counts %d bytes, want 8 (memory)", bytes);
    size_t len = 0;
    unsigned char *f = posix_file(path, &len);
    CHECK(in[0] == (int32_t)be32(f + len - 6), "the long at the end read as %ld, want %d", in[0],
          (int32_t)be32(f + len - 6));
    CHECK(in[2] == 7, "the long past the end was changed to %ld", in[2]);
    /* The same, collectively (two-phase: the aggregators ship file bytes, each rank
     * converts its own). */
    long all[3] = {7, 7, 7};
    CHECK_MPI(MPI_File_read_at_all(fh, 0, all, 3, MPI_LONG, &st));
    check_count(&st, MPI_LONG, 1, "a read_at_all of 6 bytes before the end");
    CHECK(all[0] == in[0] && all[2] == 7, "read_at_all at the end read %ld, %ld", all[0], all[2]);
    free(f);
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 2, "MPI_SEEK_END with 6 bytes left is etype %lld, want 2", (long long)pos);
}

static void external32_longs(void)
{
    if (tolerated("MPICH", "MPI_LONG in external32 is placed with its memory size (8 bytes) and the "
                           "converted 4-byte values land at the wrong file bytes"))
        return;
    const char *path = test_path("sizes_long.dat");
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype filetype, gapped;
    CHECK_MPI(MPI_Type_vector(NBLK, B, B * test_size, MPI_LONG, &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    CHECK_MPI(MPI_Type_vector(2, B, 2 * B, MPI_LONG, &gapped));
    CHECK_MPI(MPI_Type_commit(&gapped));
    longs_interleaved(fh, filetype);
    longs_shared(fh, gapped);
    check_long_file(path);
    read_at_the_end(fh, path);
    CHECK_MPI(MPI_Type_free(&filetype));
    CHECK_MPI(MPI_Type_free(&gapped));
    CHECK_MPI(MPI_File_close(&fh));
    remove_file(path);
}

/* ---- MPI_LONG_INT in external32 ----------------------------------------------------------- */

struct long_int {
    long l;
    int i;
};

static void external32_long_ints(void)
{
    if (tolerated("MPICH", "a view of MPI_LONG_INT in external32 aborts (MPI_Type_get_contents of a named type)"))
        return;
    const char *path = test_path("sizes_long_int.dat");
    MPI_File fh;
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype filetype;
    CHECK_MPI(MPI_Type_vector(NBLK, B, B * test_size, MPI_LONG_INT, &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * B * 8, MPI_LONG_INT, filetype, "external32",
                                MPI_INFO_NULL));
    check_extent(fh, filetype, ((long)(NBLK - 1) * B * test_size + B) * 8, "a vector of MPI_LONG_INT");
    struct long_int out[PER], in[PER];
    memset(out, 0, sizeof out);
    for (int i = 0; i < PER; i++) {
        out[i].l = value(5, test_rank, i);
        out[i].i = (int)value(6, test_rank, i);
    }
    CHECK_MPI(MPI_File_write_at(fh, 0, out, PER, MPI_LONG_INT, &st));
    check_count(&st, MPI_LONG_INT, PER, "write_at of MPI_LONG_INT");
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_File_read_at(fh, 0, in, PER, MPI_LONG_INT, &st));
    check_count(&st, MPI_LONG_INT, PER, "read_at of MPI_LONG_INT");
    for (int i = 0; i < PER; i++)
        CHECK(in[i].l == out[i].l && in[i].i == out[i].i, "MPI_LONG_INT %d read back as (%ld, %d), want (%ld, %d)",
              i, in[i].l, in[i].i, out[i].l, out[i].i);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0) {
        size_t len = 0;
        unsigned char *f = posix_file(path, &len);
        CHECK(len == (size_t)PER * test_size * 8, "the MPI_LONG_INT file has %zu bytes, want %d", len,
              PER * test_size * 8);
        for (int r = 0; r < test_size; r++)
            for (int i = 0; i < PER; i++) {
                size_t at = ((size_t)((i / B) * test_size + r) * B + i % B) * 8;
                CHECK((int32_t)be32(f + at) == value(5, r, i) && (int32_t)be32(f + at + 4) == value(6, r, i),
                      "rank %d's MPI_LONG_INT %d at byte %zu is (%d, %d)", r, i, at, (int32_t)be32(f + at),
                      (int32_t)be32(f + at + 4));
            }
        free(f);
    }
    CHECK_MPI(MPI_Type_free(&filetype));
    CHECK_MPI(MPI_File_close(&fh));
    remove_file(path);
}

/* ---- a registered representation with 8-byte ints ---------------------------------------- */

static int wide_calls;

static int wide_write(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                      void *extra_state)
{
    (void)extra_state;
    if (datatype != MPI_INT)
        return MPI_ERR_TYPE;
    wide_calls++;
    const int *user = (const int *)userbuf + position;
    unsigned char *file = filebuf;
    for (int i = 0; i < count; i++) {
        uint64_t v = (uint64_t)(int64_t)user[i];
        for (int b = 0; b < 8; b++)
            file[8 * i + b] = (unsigned char)(v >> (56 - 8 * b));
    }
    return MPI_SUCCESS;
}

static int wide_read(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                     void *extra_state)
{
    (void)extra_state;
    if (datatype != MPI_INT)
        return MPI_ERR_TYPE;
    wide_calls++;
    int *user = (int *)userbuf + position;
    const unsigned char *file = filebuf;
    for (int i = 0; i < count; i++)
        user[i] = (int)be64(file + 8 * i);
    return MPI_SUCCESS;
}

static int wide_extent(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)
{
    (void)extra_state;
    int size = 0;
    if (MPI_Type_size(datatype, &size) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    *extent = datatype == MPI_INT ? 8 : size;
    return MPI_SUCCESS;
}

static void registered_wide_ints(void)
{
    if (tolerated("MPICH", "registered representations are refused (conversion functions at registration, "
                           "any registered name in a view)"))
        return;
    CHECK_MPI(MPI_Register_datarep("wide_int_sizes", wide_read, wide_write, wide_extent, NULL));
    const char *path = test_path("sizes_wide.dat");
    MPI_File fh;
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    MPI_Datatype filetype;
    CHECK_MPI(MPI_Type_vector(NBLK, B, B * test_size, MPI_INT, &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    MPI_Offset region = (MPI_Offset)PER * test_size * 8;
    int out[2][PER], in[PER];
    for (int k = 0; k < 2; k++) {
        MPI_Offset disp = k * region + (MPI_Offset)test_rank * B * 8;
        CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "wide_int_sizes", MPI_INFO_NULL));
        check_extent(fh, MPI_INT, 8, "MPI_INT in wide_int_sizes");
        check_extent(fh, filetype, ((long)(NBLK - 1) * B * test_size + B) * 8, "a vector of MPI_INT");
        for (int i = 0; i < PER; i++)
            out[k][i] = (int)value(7 + k, test_rank, i);
        wide_calls = 0;
        if (k == 0)
            CHECK_MPI(MPI_File_write_at(fh, 0, out[k], PER, MPI_INT, &st));
        else
            CHECK_MPI(MPI_File_write_at_all(fh, 0, out[k], PER, MPI_INT, &st));
        CHECK(wide_calls > 0, "the write conversion was not called");
        check_count(&st, MPI_INT, PER, k == 0 ? "wide write_at" : "wide write_at_all");
    }
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < 2; k++) {
        MPI_Offset disp = k * region + (MPI_Offset)test_rank * B * 8;
        CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "wide_int_sizes", MPI_INFO_NULL));
        memset(in, 0, sizeof in);
        if (k == 0)
            CHECK_MPI(MPI_File_read_at_all(fh, 0, in, PER, MPI_INT, &st));
        else
            CHECK_MPI(MPI_File_read_at(fh, 0, in, PER, MPI_INT, &st));
        check_count(&st, MPI_INT, PER, k == 0 ? "wide read_at_all" : "wide read_at");
        for (int i = 0; i < PER; i++)
            CHECK(in[i] == out[k][i], "wide int %d of region %d read back as %d, want %d", i, k, in[i], out[k][i]);
    }
    if (test_rank == 0) {
        size_t len = 0;
        unsigned char *f = posix_file(path, &len);
        CHECK(len == (size_t)(2 * region), "the wide file has %zu bytes, want %lld", len, (long long)(2 * region));
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < test_size; r++)
                for (int i = 0; i < PER; i++) {
                    size_t at = (size_t)(k * region) + ((size_t)((i / B) * test_size + r) * B + i % B) * 8;
                    CHECK(be64(f + at) == value(7 + k, r, i), "region %d: rank %d's wide int %d at byte %zu is %lld",
                          k, r, i, at, (long long)be64(f + at));
                }
        free(f);
    }
    CHECK_MPI(MPI_Type_free(&filetype));
    CHECK_MPI(MPI_File_close(&fh));
    remove_file(path);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK(test_size <= 64, "at most 64 ranks");
    external32_longs();
    external32_long_ints();
    registered_wide_ints();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
