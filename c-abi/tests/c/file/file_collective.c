/*
 * file_collective: collective data access (two-phase I/O), every byte checked.
 *
 *  1. BT-IO-like: a 3-D array of ints (value = its global index) distributed in blocks over
 *     a process grid (MPI_Dims_create), each rank's block a subarray filetype; written with
 *     MPI_File_write_all, read back with MPI_File_read_all, and the whole file read by rank 0
 *     and checked int by int. Under several hint sets: none (automatic), romio_cb_write /
 *     romio_cb_read = enable, = disable, cb_nodes = 1, cb_buffer_size = 4096 (a domain in
 *     many pieces), striping_unit + cb_nodes = 2, atomic mode; one set with the memory side
 *     a subarray too (the block inside ghost cells). The file of the first set stays for the
 *     harness, which checks it again (btio_<n>.dat: int i is i).
 *  2. Interleaved strided vectors: int k*n + r of the file is rank r's k-th int; every third
 *     rank writes nothing (count 0); write_at_all then read_all, and rank 0 checks the file
 *     (the ints of ranks that wrote nothing are holes: 0).
 *  3. Reads past the end of the file, collective (romio_cb_read = enable and automatic): each
 *     rank's count is the bytes before the end.
 *  4. Nonblocking: MPI_File_iwrite_all, iwrite_at_all, iread_all, iread_at_all with
 *     point-to-point traffic (a ring exchange) between start and wait; two collective
 *     accesses of one file in flight at once, waited for in reverse order.
 *  5. Split collectives: write_all_begin/end, read_at_all_begin/end, write_at_all_begin/end,
 *     read_all_begin/end; an end without a begin, a second begin and closing the file with
 *     one begun are MPI_ERR_IO.
 *  6. MPI_File_get_info reports the hints in force (cb_nodes, cb_buffer_size, romio_cb_*).
 *  7. The one aggregator's write fails (a file size limit on rank 0: EFBIG): every rank's
 *     write_all fails with the same class; so does MPI_Wait on an iwrite_all (the file's
 *     handler, MPI_ERRORS_RETURN, not MPI_COMM_WORLD's); with a handler function set on
 *     the file, MPI_Wait calls it once with the file's handle and the error.
 *  8. MPI_File_close while an iwrite_all and an iread_at_all still run (erroneous, so no
 *     program should, but nothing may be lost or hang): the close lets them finish, the
 *     requests complete afterwards with their counts, the data is in the file.
 *
 * Deviations of Debian's MPICH 4.0.2 (tolerated): ROMIO's two-phase read reports the whole
 * request as the count even when the file ends before it (section 3); the holes a two-phase
 * write leaves between the data of a new file are not zero (its read-modify-write buffer is
 * not cleared where the file has no bytes yet; section 2); two nonblocking collective reads
 * of one file in flight at once, completed by polling MPI_Testall, fail or read wrong data
 * (MPI_Waitall is used under MPICH; section 4); a file with a split collective begun closes
 * (section 5); MPI_Wait on a failed iwrite_all returns success and calls no handler
(section 7); section 8 is not run under MPICH (closing with accesses running is erroneous).
 */
#define TEST_NAME "file_collective"
#include "mpitest.h"
#include "file_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

enum { NX = 26, NY = 22, NZ = 19 };

static MPI_Info hints(const char *k1, const char *v1, const char *k2, const char *v2)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    if (k1)
        CHECK_MPI(MPI_Info_set(info, k1, v1));
    if (k2)
        CHECK_MPI(MPI_Info_set(info, k2, v2));
    return info;
}

/* This rank's block of the global array: start and size per dimension. */
static void my_block(int starts[3], int sizes[3])
{
    const int g[3] = {NX, NY, NZ};
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3];
    CHECK_MPI(MPI_Dims_create(test_size, 3, dims));
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    CHECK_MPI(MPI_Cart_coords(cart, test_rank, 3, coords));
    CHECK_MPI(MPI_Comm_free(&cart));
    for (int d = 0; d < 3; d++) {
        int base = g[d] / dims[d], extra = g[d] % dims[d];
        starts[d] = coords[d] * base + (coords[d] < extra ? coords[d] : extra);
        sizes[d] = base + (coords[d] < extra ? 1 : 0);
    }
}

static int global_index(int x, int y, int z)
{
    return (x * NY + y) * NZ + z;
}

/* Section 1 under one set of hints; `ghosts`: the memory side is the block inside one
 * ghost cell on every side (a subarray of the local array). */
static void btio(const char *name, MPI_Info info, int atomic, int ghosts)
{
    const int g[3] = {NX, NY, NZ};
    int starts[3], sizes[3];
    my_block(starts, sizes);
    MPI_Datatype filetype, memtype = MPI_INT;
    CHECK_MPI(MPI_Type_create_subarray(3, g, sizes, starts, MPI_ORDER_C, MPI_INT, &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    int n = sizes[0] * sizes[1] * sizes[2];
    int mem[3] = {sizes[0] + 2 * ghosts, sizes[1] + 2 * ghosts, sizes[2] + 2 * ghosts};
    int inner[3] = {ghosts, ghosts, ghosts};
    int mem_n = mem[0] * mem[1] * mem[2];
    int count = n;
    if (ghosts) {
        CHECK_MPI(MPI_Type_create_subarray(3, mem, sizes, inner, MPI_ORDER_C, MPI_INT, &memtype));
        CHECK_MPI(MPI_Type_commit(&memtype));
        count = 1;
    }
    int *out = test_malloc((size_t)mem_n * sizeof(int));
    int *back = test_malloc((size_t)mem_n * sizeof(int));
    for (int i = 0; i < mem_n; i++)
        out[i] = -7;
    for (int x = 0; x < sizes[0]; x++)
        for (int y = 0; y < sizes[1]; y++)
            for (int z = 0; z < sizes[2]; z++)
                out[((x + ghosts) * mem[1] + y + ghosts) * mem[2] + z + ghosts] =
                    global_index(starts[0] + x, starts[1] + y, starts[2] + z);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    if (atomic)
        CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL));
    MPI_Status st;
    CHECK_MPI(MPI_File_write_all(fh, out, count, memtype, &st));
    CHECK(moved_bytes(&st) == n * 4, "%s: write_all moved %d bytes, want %d", name,
          moved_bytes(&st), n * 4);
    MPI_Offset pos;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == n, "%s: the pointer is at %lld after write_all, want %d", name, (long long)pos, n);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    for (int i = 0; i < mem_n; i++)
        back[i] = -7;
    CHECK_MPI(MPI_File_read_at_all(fh, 0, back, count, memtype, &st));
    CHECK(moved_bytes(&st) == n * 4, "%s: read_at_all moved %d bytes", name, moved_bytes(&st));
    for (int i = 0; i < mem_n; i++)
        CHECK(back[i] == out[i], "%s: int %d of the block read back is %d, want %d", name, i,
              back[i], out[i]);
    CHECK_MPI(MPI_File_close(&fh));
    /* Rank 0 checks the whole file, byte view. */
    if (test_rank == 0) {
        int total = NX * NY * NZ;
        int *all = test_malloc((size_t)total * sizeof(int));
        CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_Offset size;
        CHECK_MPI(MPI_File_get_size(fh, &size));
        CHECK(size == (MPI_Offset)total * 4, "%s: the file has %lld bytes, want %d", name,
              (long long)size, total * 4);
        CHECK_MPI(MPI_File_read_at(fh, 0, all, total, MPI_INT, &st));
        for (int i = 0; i < total; i++)
            CHECK(all[i] == i, "%s: int %d of the file is %d", name, i, all[i]);
        CHECK_MPI(MPI_File_close(&fh));
        free(all);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(out);
    free(back);
    CHECK_MPI(MPI_Type_free(&filetype));
    if (ghosts)
        CHECK_MPI(MPI_Type_free(&memtype));
}

static void section_btio(void)
{
    char name[64];
    snprintf(name, sizeof name, "btio_%d.dat", test_size);
    btio(name, MPI_INFO_NULL, 0, 0);
    struct {
        const char *tag, *k1, *v1, *k2, *v2;
        int atomic, ghosts;
    } sets[] = {
        {"enable", "romio_cb_write", "enable", "romio_cb_read", "enable", 0, 0},
        {"disable", "romio_cb_write", "disable", "romio_cb_read", "disable", 0, 0},
        {"one", "cb_nodes", "1", "romio_cb_write", "enable", 0, 0},
        {"pieces", "cb_buffer_size", "4096", "romio_cb_read", "enable", 0, 1},
        {"stripes", "striping_unit", "1000", "cb_nodes", "2", 0, 0},
        {"atomic", "cb_buffer_size", "8192", NULL, NULL, 1, 0},
        {"ghosts", NULL, NULL, NULL, NULL, 0, 1},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        MPI_Info info = hints(sets[i].k1, sets[i].v1, sets[i].k2, sets[i].v2);
        snprintf(name, sizeof name, "btio_%s_%d.dat", sets[i].tag, test_size);
        btio(name, info, sets[i].atomic, sets[i].ghosts);
        CHECK_MPI(MPI_Info_free(&info));
        if (test_rank == 0)
            CHECK_MPI(MPI_File_delete(test_path(name), MPI_INFO_NULL));
    }
}

enum { PER_RANK = 3001 };

/* Whether rank r writes in section 2. */
static int contributes(int r)
{
    return r % 3 != 2;
}

static int strided_value(int r, int k)
{
    return r * 1000003 + k * 7 + 1;
}

static void section_strided(const char *cb)
{
    MPI_Info info = hints("romio_cb_write", cb, "cb_buffer_size", "5000");
    char name[64];
    snprintf(name, sizeof name, "strided_%s_%d.dat", cb, test_size);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    MPI_Datatype one, tile;
    CHECK_MPI(MPI_Type_contiguous(1, MPI_INT, &one));
    CHECK_MPI(MPI_Type_create_resized(one, 0, (MPI_Aint)test_size * 4, &tile));
    CHECK_MPI(MPI_Type_commit(&tile));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * 4, MPI_INT, tile, "native",
                                MPI_INFO_NULL));
    int *mine = test_malloc(PER_RANK * sizeof(int)), *back = test_malloc(PER_RANK * sizeof(int));
    for (int k = 0; k < PER_RANK; k++)
        mine[k] = strided_value(test_rank, k);
    int count = contributes(test_rank) ? PER_RANK : 0;
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, mine, count, MPI_INT, &st));
    CHECK(moved_bytes(&st) == count * 4, "write_at_all moved %d bytes", moved_bytes(&st));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    memset(back, 0, PER_RANK * sizeof(int));
    CHECK_MPI(MPI_File_read_all(fh, back, count, MPI_INT, &st));
    CHECK(moved_bytes(&st) == count * 4, "read_all moved %d bytes", moved_bytes(&st));
    for (int k = 0; k < count; k++)
        CHECK(back[k] == mine[k], "strided %s: int %d read back is %d, want %d", cb, k, back[k],
              mine[k]);
    CHECK_MPI(MPI_File_close(&fh));
    if (test_rank == 0) {
        int last = -1;
        for (int r = 0; r < test_size; r++)
            if (contributes(r))
                last = r;
        long ints = (long)(PER_RANK - 1) * test_size + last + 1;
        int *all = test_malloc((size_t)ints * sizeof(int));
        CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        MPI_Offset size;
        CHECK_MPI(MPI_File_get_size(fh, &size));
        CHECK(size == ints * 4, "strided %s: the file has %lld bytes, want %ld", cb,
              (long long)size, ints * 4);
        CHECK_MPI(MPI_File_read_at(fh, 0, all, (int)ints, MPI_INT, &st));
        for (long i = 0; i < ints; i++) {
            int r = (int)(i % test_size), k = (int)(i / test_size);
            int want = contributes(r) ? strided_value(r, k) : 0;
            if (!contributes(r) && all[i] != 0 &&
                tolerated("MPICH", "the holes a two-phase write leaves in a new file are not zero"))
                continue;
            CHECK(all[i] == want, "strided %s: int %ld of the file is %d, want %d", cb, i, all[i],
                  want);
        }
        CHECK_MPI(MPI_File_close(&fh));
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
        free(all);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(mine);
    free(back);
    CHECK_MPI(MPI_Type_free(&one));
    CHECK_MPI(MPI_Type_free(&tile));
    CHECK_MPI(MPI_Info_free(&info));
}

enum { EOF_SIZE = 1000, EOF_READ = 100 };

static void section_past_eof(const char *cb)
{
    MPI_Info info = hints("romio_cb_read", cb, NULL, NULL);
    char name[64];
    snprintf(name, sizeof name, "eof_%s_%d.dat", cb, test_size);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    unsigned char *data = test_malloc(EOF_SIZE), *back = test_malloc(EOF_READ);
    fill_pattern(data, EOF_SIZE, 77);
    MPI_Status st;
    if (test_rank == 0)
        CHECK_MPI(MPI_File_write_at(fh, 0, data, EOF_SIZE, MPI_BYTE, &st));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    /* Overlapping reads around the end: rank r from EOF_SIZE - 130 + 40 r. */
    long off = EOF_SIZE - 130 + 40L * test_rank;
    long want = EOF_SIZE - off;
    want = want < 0 ? 0 : want > EOF_READ ? EOF_READ : want;
    memset(back, 0, EOF_READ);
    CHECK_MPI(MPI_File_read_at_all(fh, off, back, EOF_READ, MPI_BYTE, &st));
    int got = moved_bytes(&st);
    if (!(got == EOF_READ && want < EOF_READ &&
          tolerated("MPICH", "a two-phase read past the end of the file counts the whole request")))
        CHECK(got == want, "read_at_all at %ld (%s) moved %d bytes, want %ld", off, cb, got, want);
    for (long i = 0; i < want; i++)
        CHECK(back[i] == data[off + i], "read_at_all past the end (%s): byte %ld wrong", cb, i);
    /* Through the individual pointer: it moves past the whole request. */
    CHECK_MPI(MPI_File_seek(fh, off, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all(fh, back, EOF_READ, MPI_BYTE, &st));
    got = moved_bytes(&st);
    if (!(got == EOF_READ && want < EOF_READ &&
          tolerated("MPICH", "a two-phase read past the end of the file counts the whole request")))
        CHECK(got == want, "read_all at %ld (%s) moved %d bytes, want %ld", off, cb, got, want);
    MPI_Offset pos;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == off + EOF_READ, "after read_all the pointer is at %lld, want %ld",
          (long long)pos, off + EOF_READ);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    CHECK_MPI(MPI_Info_free(&info));
    free(data);
    free(back);
}

enum { NB = 20000, RING = 4096 };

/* A ring exchange of RING bytes (point-to-point traffic while a collective access runs). */
static void ring_traffic(int round)
{
    unsigned char *out = test_malloc(RING), *in = test_malloc(RING);
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    fill_pattern(out, RING, message_seed(test_rank, right, round));
    CHECK_MPI(MPI_Sendrecv(out, RING, MPI_BYTE, right, 5, in, RING, MPI_BYTE, left, 5,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, RING, message_seed(left, test_rank, round), "ring round %d", round);
    free(out);
    free(in);
}

static int nb_value(int r, int k, int salt)
{
    return (r + 1) * 100000 + k * 3 + salt;
}

static void section_nonblocking(void)
{
    MPI_Info info = hints("romio_cb_write", "enable", "cb_buffer_size", "16384");
    char name[64];
    snprintf(name, sizeof name, "nonblocking_%d.dat", test_size);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    /* Strided view: rank r owns int k*n + r. */
    MPI_Datatype one, tile;
    CHECK_MPI(MPI_Type_contiguous(1, MPI_INT, &one));
    CHECK_MPI(MPI_Type_create_resized(one, 0, (MPI_Aint)test_size * 4, &tile));
    CHECK_MPI(MPI_Type_commit(&tile));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * 4, MPI_INT, tile, "native",
                                MPI_INFO_NULL));
    int *a = test_malloc(NB * sizeof(int)), *b = test_malloc(NB * sizeof(int));
    int *ra = test_malloc(NB * sizeof(int)), *rb = test_malloc(NB * sizeof(int));
    for (int k = 0; k < NB; k++) {
        a[k] = nb_value(test_rank, k, 1);
        b[k] = nb_value(test_rank, k, 2);
    }
    MPI_Request req[2];
    MPI_Status st[2];
    /* First half by the pointer, second half at an explicit offset: in flight together. */
    CHECK_MPI(MPI_File_iwrite_all(fh, a, NB / 2, MPI_INT, &req[0]));
    CHECK_MPI(MPI_File_iwrite_at_all(fh, NB / 2, a + NB / 2, NB - NB / 2, MPI_INT, &req[1]));
    ring_traffic(1);
    CHECK_MPI(MPI_Wait(&req[1], &st[1]));
    CHECK_MPI(MPI_Wait(&req[0], &st[0]));
    CHECK(moved_bytes(&st[0]) == NB / 2 * 4, "iwrite_all moved %d bytes", moved_bytes(&st[0]));
    CHECK(moved_bytes(&st[1]) == (NB - NB / 2) * 4, "iwrite_at_all moved %d bytes",
          moved_bytes(&st[1]));
    MPI_Offset pos;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == NB / 2, "after iwrite_all the pointer is at %lld", (long long)pos);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    /* Read back both halves at once, with traffic, Waitall. */
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_iread_all(fh, ra, NB / 2, MPI_INT, &req[0]));
    CHECK_MPI(MPI_File_iread_at_all(fh, NB / 2, ra + NB / 2, NB - NB / 2, MPI_INT, &req[1]));
    ring_traffic(2);
    /* Completed by polling (MPI_Testall turns the progress engine), bounded in time. */
    int done = 0;
    double give_up = MPI_Wtime() + 60.0;
    if (tolerated("MPICH", "two nonblocking collective reads of one file in flight, completed "
                           "by MPI_Testall, fail or read wrong data (MPI_Waitall is used)")) {
        CHECK_MPI(MPI_Waitall(2, req, st));
        done = 1;
    }
    while (!done && MPI_Wtime() < give_up)
        CHECK_MPI(MPI_Testall(2, req, &done, st));
    CHECK(done, "iread_all / iread_at_all did not complete by MPI_Testall in 60 s");
    CHECK(moved_bytes(&st[0]) == NB / 2 * 4, "iread_all moved %d bytes", moved_bytes(&st[0]));
    for (int k = 0; k < NB; k++)
        CHECK(ra[k] == a[k], "nonblocking: int %d read back is %d, want %d", k, ra[k], a[k]);
    /* Split collectives: overwrite with b, read back. */
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_write_all_begin(fh, b, NB / 2, MPI_INT));
    ring_traffic(3);
    CHECK_MPI(MPI_File_write_all_end(fh, b, &st[0]));
    CHECK(moved_bytes(&st[0]) == NB / 2 * 4, "write_all_end: %d bytes", moved_bytes(&st[0]));
    CHECK_MPI(MPI_File_write_at_all_begin(fh, NB / 2, b + NB / 2, NB - NB / 2, MPI_INT));
    CHECK_MPI(MPI_File_write_at_all_end(fh, b + NB / 2, &st[0]));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    memset(rb, 0, NB * sizeof(int));
    CHECK_MPI(MPI_File_read_at_all_begin(fh, 0, rb, NB / 2, MPI_INT));
    ring_traffic(4);
    CHECK_MPI(MPI_File_read_at_all_end(fh, rb, &st[0]));
    CHECK(moved_bytes(&st[0]) == NB / 2 * 4, "read_at_all_end: %d bytes", moved_bytes(&st[0]));
    CHECK_MPI(MPI_File_seek(fh, NB / 2, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all_begin(fh, rb + NB / 2, NB - NB / 2, MPI_INT));
    CHECK_MPI(MPI_File_read_all_end(fh, rb + NB / 2, &st[0]));
    for (int k = 0; k < NB; k++)
        CHECK(rb[k] == b[k], "split: int %d read back is %d, want %d", k, rb[k], b[k]);
    /* The errors of split collectives (MPICH: MPI_ERR_IO for both). */
    EXPECT_CLASS(MPI_File_read_all_end(fh, rb, &st[0]), MPI_ERR_IO);
    CHECK_MPI(MPI_File_read_at_all_begin(fh, 0, rb, 10, MPI_INT));
    EXPECT_CLASS(MPI_File_read_at_all_begin(fh, 0, rb, 10, MPI_INT), MPI_ERR_IO);
    EXPECT_CLASS(MPI_File_write_all_begin(fh, b, 10, MPI_INT), MPI_ERR_IO);
    if (!tolerated("MPICH", "a file with a split collective begun closes"))
        EXPECT_CLASS(MPI_File_close(&fh), MPI_ERR_IO);
    CHECK_MPI(MPI_File_read_at_all_end(fh, rb, &st[0]));
    CHECK(moved_bytes(&st[0]) == 40, "read_at_all_end after the refused begin: %d bytes",
          moved_bytes(&st[0]));
    EXPECT_CLASS(MPI_File_write_at_all_end(fh, b, &st[0]), MPI_ERR_IO);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    CHECK_MPI(MPI_Type_free(&one));
    CHECK_MPI(MPI_Type_free(&tile));
    CHECK_MPI(MPI_Info_free(&info));
    free(a);
    free(b);
    free(ra);
    free(rb);
}

static void expect_hint(MPI_Info info, const char *key, const char *want)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag, "get_info has no %s", key);
    CHECK(strcmp(value, want) == 0, "get_info: %s = \"%s\", want \"%s\"", key, value, want);
}

static void section_info(void)
{
    char name[64];
    snprintf(name, sizeof name, "info_%d.dat", test_size);
    const char *path = test_path(name);
    MPI_File fh;
    MPI_Info used;
    /* Defaults: one aggregator per host (ROMIO's cb_config_list "*:1"). */
    MPI_Comm host;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host));
    int host_rank, hosts = 0;
    CHECK_MPI(MPI_Comm_rank(host, &host_rank));
    int leader = host_rank == 0;
    CHECK_MPI(MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Comm_free(&host));
    char hosts_text[16];
    snprintf(hosts_text, sizeof hosts_text, "%d", hosts);
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_info(fh, &used));
    expect_hint(used, "cb_buffer_size", "16777216");
    expect_hint(used, "romio_cb_read", "automatic");
    expect_hint(used, "romio_cb_write", "automatic");
    expect_hint(used, "cb_nodes", hosts_text);
    expect_hint(used, "cb_config_list", "*:1");
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Info info = hints("cb_buffer_size", "65536", "romio_cb_write", "enable");
    CHECK_MPI(MPI_Info_set(info, "romio_cb_read", "disable"));
    CHECK_MPI(MPI_Info_set(info, "cb_nodes", "1"));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh));
    CHECK_MPI(MPI_File_get_info(fh, &used));
    expect_hint(used, "cb_buffer_size", "65536");
    expect_hint(used, "romio_cb_write", "enable");
    expect_hint(used, "romio_cb_read", "disable");
    expect_hint(used, "cb_nodes", "1");
    CHECK_MPI(MPI_Info_free(&used));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
}

/* Rank 0 (the one aggregator of section 7) may write at most 4096 bytes to a file while
 * `on` is set (RLIMIT_FSIZE: its writes past that fail with EFBIG); off restores its limit. */
static void limit_rank0_file_size(int on)
{
    static struct rlimit old;
    if (test_rank != 0)
        return;
    if (on) {
        signal(SIGXFSZ, SIG_IGN);
        CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0, "getrlimit");
        struct rlimit small = old;
        small.rlim_cur = 4096;
        CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0, "setrlimit");
    } else {
        CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0, "setrlimit back");
    }
}

/* MPI_File_iwrite_all of `n` bytes with rank 0 limited, and MPI_Wait: the wait's result. */
static int iwrite_all_past_limit(MPI_File fh, const void *data, int n)
{
    MPI_Request req;
    MPI_Status st;
    limit_rank0_file_size(1);
    CHECK_MPI(MPI_File_iwrite_all(fh, data, n, MPI_BYTE, &req));
    int rc = MPI_Wait(&req, &st);
    limit_rank0_file_size(0);
    return rc;
}

/* What section 7's file error handler function saw. */
static int file_errors, error_code;
static MPI_File error_file;

static void count_file_error(MPI_File *fh, int *code, ...)
{
    file_errors++;
    error_file = *fh;
    error_code = *code;
}

/* Section 7: the aggregator's write fails (its file size limit: EFBIG); every rank of the
 * call gets the error, of the same class, and nobody hangs. */
static void section_aggregator_error(void)
{
    enum { EACH = 64 * 1024 };
    MPI_Info info = hints("romio_cb_write", "enable", "cb_nodes", "1");
    char name[64];
    snprintf(name, sizeof name, "toolarge_%d.dat", test_size);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    /* Interleaved 1 KiB blocks: two-phase, one aggregator (rank 0: the first of the host). */
    MPI_Datatype block, tile;
    CHECK_MPI(MPI_Type_contiguous(1024, MPI_BYTE, &block));
    CHECK_MPI(MPI_Type_create_resized(block, 0, (MPI_Aint)test_size * 1024, &tile));
    CHECK_MPI(MPI_Type_commit(&tile));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * 1024, MPI_BYTE, tile, "native",
                                MPI_INFO_NULL));
    unsigned char *data = test_malloc(EACH);
    fill_pattern(data, EACH, 5);
    limit_rank0_file_size(1);
    MPI_Status st;
    int rc = MPI_File_write_all(fh, data, EACH, MPI_BYTE, &st);
    limit_rank0_file_size(0);
    CHECK(rc != MPI_SUCCESS, "write_all past the aggregator's file size limit succeeded");
    int class = error_class_of(rc);
    int classes[2] = {class, -class};
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, classes, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(classes[0] == -classes[1], "the ranks got different classes (%d .. %d)", -classes[1],
          classes[0]);
    CHECK(class == MPI_ERR_IO || class == MPI_ERR_NO_SPACE || class == MPI_ERR_QUOTA ||
              class == MPI_ERR_FILE_IN_USE || class == MPI_ERR_OTHER,
          "write_all failed with %s", error_text(rc));
    /* The failing aggregator reports the system's reason; the others name it. */
    if (!library_is("MPICH")) {
        const char *text = error_text(rc);
        if (test_rank == 0)
            CHECK(strstr(text, "too large") != NULL, "rank 0's error: %s", text);
        else
            CHECK(strstr(text, "rank 0") != NULL, "rank %d's error: %s", test_rank, text);
    }
    /* The same through MPI_File_iwrite_all: MPI_Wait returns the error, as the file's handler
     * (MPI_ERRORS_RETURN) says, instead of the job ending by MPI_COMM_WORLD's. */
    rc = iwrite_all_past_limit(fh, data, EACH);
    if (!tolerated("MPICH", "MPI_Wait on a failed nonblocking collective write returns success"))
        CHECK(rc != MPI_SUCCESS && error_class_of(rc) == class,
              "MPI_Wait on the failed iwrite_all returned %s", error_text(rc));
    /* Again with a handler function on the file: MPI_Wait calls it, with this file. */
    MPI_Errhandler counting;
    CHECK_MPI(MPI_File_create_errhandler(count_file_error, &counting));
    CHECK_MPI(MPI_File_set_errhandler(fh, counting));
    file_errors = 0;
    rc = iwrite_all_past_limit(fh, data, EACH);
    if (!tolerated("MPICH", "MPI_Wait on a failed nonblocking collective write calls no handler")) {
        CHECK(rc != MPI_SUCCESS && error_class_of(rc) == class,
              "MPI_Wait on the failed iwrite_all (handler function) returned %s", error_text(rc));
        CHECK(file_errors == 1, "the file's handler function ran %d times", file_errors);
        CHECK(error_file == fh, "the file's handler got another file");
        CHECK(error_class_of(error_code) == class, "the handler got %s", error_text(error_code));
    }
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&counting));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    CHECK_MPI(MPI_Type_free(&block));
    CHECK_MPI(MPI_Type_free(&tile));
    CHECK_MPI(MPI_Info_free(&info));
    free(data);
}

/* Section 8: MPI_File_close with two nonblocking collective accesses running. */
static void section_close_running(void)
{
    enum { N = 50000 };
    MPI_Info info = hints("romio_cb_write", "enable", "romio_cb_read", "enable");
    char name[64];
    snprintf(name, sizeof name, "close_running_%d.dat", test_size);
    const char *path = test_path(name);
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh));
    int *mine = test_malloc(N * sizeof(int)), *back = test_malloc(N * sizeof(int));
    for (int k = 0; k < N; k++)
        mine[k] = nb_value(test_rank, k, 3);
    /* Rank r writes ints [r*N, (r+1)*N) and, at the same time, reads them as rank r-1
     * wrote them in an earlier write: first make that earlier file content. */
    CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)test_rank * N * 4, mine, N, MPI_INT,
                                    MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Request req[2];
    MPI_Status st[2];
    int left = (test_rank + test_size - 1) % test_size;
    CHECK_MPI(MPI_File_iread_at_all(fh, (MPI_Offset)left * N * 4, back, N, MPI_INT, &req[0]));
    CHECK_MPI(MPI_File_iwrite_at_all(fh, ((MPI_Offset)test_size + test_rank) * N * 4, mine, N,
                                     MPI_INT, &req[1]));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "the closed file's handle is not MPI_FILE_NULL");
    /* A new communicator (it may get the closed file's context) with wildcard receives:
     * nothing of the accesses may reach it. */
    MPI_Comm other;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &other));
    for (int round = 0; round < 3; round++) {
        int token = test_rank * 100 + round, got = -1;
        MPI_Status rs;
        CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (test_rank + 1) % test_size, round, &got, 1,
                               MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, other, &rs));
        CHECK(got == left * 100 + round && rs.MPI_TAG == round && rs.MPI_SOURCE == left,
              "after the close, a wildcard receive got %d (tag %d from %d)", got, rs.MPI_TAG,
              rs.MPI_SOURCE);
    }
    CHECK_MPI(MPI_Comm_free(&other));
    CHECK_MPI(MPI_Waitall(2, req, st));
    CHECK(moved_bytes(&st[0]) == N * 4, "the iread_at_all moved %d bytes", moved_bytes(&st[0]));
    CHECK(moved_bytes(&st[1]) == N * 4, "the iwrite_at_all moved %d bytes", moved_bytes(&st[1]));
    for (int k = 0; k < N; k++)
        CHECK(back[k] == nb_value(left, k, 3), "close_running: int %d read is %d, want %d", k,
              back[k], nb_value(left, k, 3));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* The written half, read by POSIX means. */
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0, "open %s", path);
    CHECK(pread(fd, back, N * 4, ((off_t)test_size + test_rank) * N * 4) == N * 4, "pread");
    close(fd);
    for (int k = 0; k < N; k++)
        CHECK(back[k] == mine[k], "close_running: int %d in the file is %d, want %d", k, back[k],
              mine[k]);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    CHECK_MPI(MPI_Info_free(&info));
    free(mine);
    free(back);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    section_btio();
    section_strided("enable");
    section_strided("automatic");
    section_strided("disable");
    section_past_eof("enable");
    section_past_eof("automatic");
    section_nonblocking();
    section_info();
    section_aggregator_error();
    if (!library_is("MPICH"))
        section_close_running();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
