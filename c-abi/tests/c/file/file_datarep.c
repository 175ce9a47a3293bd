/*
 * file_datarep: data representations of file views (MPI 3.1 §13.5), on any number of ranks,
 * each rank in its own block of a shared file (the displacement of its view).
 *
 *  - external32: ints (explicit offsets), strided doubles from memory (a vector memory type,
 *    individual file pointer), shorts written and read collectively; the file's bytes are
 *    read back through a native MPI_BYTE view and every byte is checked to be the value's
 *    big-endian bytes; then read back through the external32 view and compared;
 *  - MPI_File_get_view names the representation; MPI_File_get_type_extent in external32
 *    (MPI_INT 4, MPI_DOUBLE 8, MPI_SHORT 2, a vector's extent);
 *  - a representation of the program's (MPI_Register_datarep) whose file form is the native
 *    int plus a constant taken from extra_state: the file holds value + K (checked through a
 *    native view), reads give the values back, the conversion functions are called in pieces
 *    that cover every item once in order (counted through extra_state), the extent function
 *    is asked and get_type_extent reports its answer;
 *  - a second registration of a name: MPI_ERR_DUP_DATAREP; an unknown name in set_view:
 *    MPI_ERR_UNSUPPORTED_DATAREP; MPI_CONVERSION_FN_NULL: the file holds the native bytes;
 *  - a read conversion function that fails makes the read fail;
 *  - MPI_File_get_type_extent(MPI_LONG) in external32 is 4, and a registered
 *    representation whose extent for MPI_INT is 8 reports 8 (types that change size are
 *    file_datarep_sizes.c's subject).
 *
 * Where Debian's MPICH 4.0.2 (ROMIO) deviates, the check is skipped under it only (a NOTE
 * line):
 *  - its MPI_File_get_type_extent(MPI_LONG) in external32 is 8 (the memory size);
 *  - its MPI_Register_datarep refuses conversion functions (MPI_ERR_CONVERSION, "not
 *    supported by MPI-IO") and its set_view refuses registered representations ("only
 *    native data representation currently supported"): registration, DUP_DATAREP and an
 *    unknown name are checked on both, the use of registered representations on this
 *    library only.
 */
#define TEST_NAME "file_datarep"
#include "mpitest.h"
#include "file_util.h"

#define N_INT 3000
#define N_DOUBLE 500
#define N_SHORT 777
#define N_PLUS 40000 /* 160000 bytes: more than one piece of conversion */
#define PLUS_K 1000

static void be_bytes(unsigned char *out, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        out[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

/* Reads `n` bytes at `disp` through a native byte view and compares them with `want`. */
static void check_file_bytes(MPI_File fh, MPI_Offset disp, const unsigned char *want, int n, const char *what)
{
    unsigned char *got = test_malloc((size_t)n);
    MPI_Status st;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, 0, got, n, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == n, "%s: read %d bytes of the file, want %d", what, moved_bytes(&st), n);
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            FAIL("%s: file byte %d (rank %d's block) is 0x%02x, want 0x%02x", what, i, test_rank, got[i], want[i]);
    free(got);
}

static void check_rep_name(MPI_File fh, const char *want)
{
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset disp;
    MPI_Datatype et, ft;
    CHECK_MPI(MPI_File_get_view(fh, &disp, &et, &ft, rep));
    CHECK(strcmp(rep, want) == 0, "get_view says representation \"%s\", want \"%s\"", rep, want);
}

static void check_extent(MPI_File fh, MPI_Datatype t, long want, const char *what)
{
    MPI_Aint e = -1;
    CHECK_MPI(MPI_File_get_type_extent(fh, t, &e));
    CHECK(e == want, "MPI_File_get_type_extent(%s) is %ld, want %ld", what, (long)e, want);
}

/* ---- external32 ---------------------------------------------------------------------- */

static void external32_ints_doubles_shorts(void)
{
    MPI_File fh;
    MPI_Status st;
    const char *path = test_path("ext32.dat");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));

    /* ints, explicit offsets */
    int *ints = test_malloc(N_INT * sizeof(int));
    for (int i = 0; i < N_INT; i++)
        ints[i] = test_rank * 1000003 + i * 7919 - 5000000;
    MPI_Offset disp = (MPI_Offset)test_rank * N_INT * 4;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    check_rep_name(fh, "external32");
    check_extent(fh, MPI_INT, 4, "MPI_INT");
    check_extent(fh, MPI_DOUBLE, 8, "MPI_DOUBLE");
    check_extent(fh, MPI_SHORT, 2, "MPI_SHORT");
    CHECK_MPI(MPI_File_write_at(fh, 0, ints, N_INT, MPI_INT, &st));
    CHECK(moved_bytes(&st) == N_INT * 4, "external32 write of ints moved %d bytes", moved_bytes(&st));
    unsigned char *want = test_malloc(N_INT * 4);
    for (int i = 0; i < N_INT; i++)
        be_bytes(want + 4 * i, (uint32_t)ints[i], 4);
    check_file_bytes(fh, disp, want, N_INT * 4, "external32 ints");
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    int *back = test_malloc(N_INT * sizeof(int));
    memset(back, 0, N_INT * sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, back, N_INT, MPI_INT, &st));
    for (int i = 0; i < N_INT; i++)
        CHECK(back[i] == ints[i], "external32 int %d read back as %d, want %d", i, back[i], ints[i]);
    free(want);
    free(back);
    free(ints);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* doubles from a strided memory type, individual file pointer; after all the ints */
    MPI_Offset base = (MPI_Offset)test_size * N_INT * 4;
    disp = base + (MPI_Offset)test_rank * N_DOUBLE * 8;
    double *mem = test_malloc(2 * N_DOUBLE * sizeof(double));
    for (int i = 0; i < 2 * N_DOUBLE; i++)
        mem[i] = (i % 2) ? -99.0 : (test_rank + 1) * 0.5 + i * 1.25 - 300.0;
    MPI_Datatype strided;
    CHECK_MPI(MPI_Type_vector(N_DOUBLE, 1, 2, MPI_DOUBLE, &strided));
    CHECK_MPI(MPI_Type_commit(&strided));
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    check_extent(fh, strided, (long)(2 * N_DOUBLE - 1) * 8, "vector of doubles");
    CHECK_MPI(MPI_File_write(fh, mem, 1, strided, &st));
    CHECK(moved_bytes(&st) == N_DOUBLE * 8, "external32 write of doubles moved %d bytes", moved_bytes(&st));
    want = test_malloc(N_DOUBLE * 8);
    for (int i = 0; i < N_DOUBLE; i++) {
        uint64_t bits;
        memcpy(&bits, &mem[2 * i], 8);
        be_bytes(want + 8 * i, bits, 8);
    }
    check_file_bytes(fh, disp, want, N_DOUBLE * 8, "external32 doubles");
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    double *dback = test_malloc(2 * N_DOUBLE * sizeof(double));
    for (int i = 0; i < 2 * N_DOUBLE; i++)
        dback[i] = 12345.0;
    CHECK_MPI(MPI_File_read(fh, dback, 1, strided, &st));
    for (int i = 0; i < 2 * N_DOUBLE; i++) {
        double w = (i % 2) ? 12345.0 : mem[i];
        CHECK(dback[i] == w, "external32 double slot %d read back as %g, want %g", i, dback[i], w);
    }
    CHECK_MPI(MPI_Type_free(&strided));
    free(want);
    free(mem);
    free(dback);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* shorts, collectively; after all the doubles */
    base += (MPI_Offset)test_size * N_DOUBLE * 8;
    disp = base + (MPI_Offset)test_rank * N_SHORT * 2;
    short *sh = test_malloc(N_SHORT * sizeof(short));
    for (int i = 0; i < N_SHORT; i++)
        sh[i] = (short)(test_rank * 4099 + i * 37 - 16000);
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_SHORT, MPI_SHORT, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_write_at_all(fh, 0, sh, N_SHORT, MPI_SHORT, &st));
    CHECK(moved_bytes(&st) == N_SHORT * 2, "external32 write_at_all of shorts moved %d bytes", moved_bytes(&st));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    want = test_malloc(N_SHORT * 2);
    for (int i = 0; i < N_SHORT; i++)
        be_bytes(want + 2 * i, (uint16_t)sh[i], 2);
    check_file_bytes(fh, disp, want, N_SHORT * 2, "external32 shorts");
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_SHORT, MPI_SHORT, "external32", MPI_INFO_NULL));
    short *sback = test_malloc(N_SHORT * sizeof(short));
    memset(sback, 0, N_SHORT * sizeof(short));
    CHECK_MPI(MPI_File_read_at_all(fh, 0, sback, N_SHORT, MPI_SHORT, &st));
    for (int i = 0; i < N_SHORT; i++)
        CHECK(sback[i] == sh[i], "external32 short %d read back (collectively) as %d, want %d", i, sback[i], sh[i]);
    free(want);
    free(sh);
    free(sback);

    /* A type that changes size in external32 (MPI_LONG: 8 bytes here, 4 in the file). */
    if (!tolerated("MPICH", "MPI_File_get_type_extent(MPI_LONG) in external32 is 8 (the memory size)")) {
        MPI_Aint e = -1;
        CHECK_MPI(MPI_File_get_type_extent(fh, MPI_LONG, &e));
        CHECK(e == 4, "MPI_File_get_type_extent(MPI_LONG) in external32 is %ld, want 4", (long)e);
    }
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
}

/* ---- a representation of the program's --------------------------------------------- */

struct plus_state {
    int k;           /* the constant the file adds */
    int extent;      /* what the extent function answers for MPI_INT */
    int calls;       /* conversion calls */
    long next;       /* the position the next call should start at */
    long items;      /* items converted */
    int out_of_order;
    int extent_calls;
    int fail_reads;  /* the read function returns an error */
};

static int plus_convert(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                        void *extra_state, int to_file)
{
    struct plus_state *s = extra_state;
    if (datatype != MPI_INT)
        return MPI_ERR_TYPE;
    if (position != s->next)
        s->out_of_order = 1;
    s->calls++;
    s->next = position + count;
    s->items += count;
    int *user = (int *)userbuf + position;
    int *file = filebuf;
    for (int i = 0; i < count; i++) {
        if (to_file)
            file[i] = user[i] + s->k;
        else
            user[i] = file[i] - s->k;
    }
    return MPI_SUCCESS;
}

static int plus_read(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                     void *extra_state)
{
    struct plus_state *s = extra_state;
    if (s->fail_reads)
        return MPI_ERR_CONVERSION;
    return plus_convert(userbuf, datatype, count, filebuf, position, extra_state, 0);
}

static int plus_write(void *userbuf, MPI_Datatype datatype, int count, void *filebuf, MPI_Offset position,
                      void *extra_state)
{
    return plus_convert(userbuf, datatype, count, filebuf, position, extra_state, 1);
}

static int plus_extent(MPI_Datatype datatype, MPI_Aint *extent, void *extra_state)
{
    struct plus_state *s = extra_state;
    s->extent_calls++;
    int size = 0;
    if (MPI_Type_size(datatype, &size) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    *extent = datatype == MPI_INT ? s->extent : size;
    return MPI_SUCCESS;
}

static void reset(struct plus_state *s)
{
    s->calls = 0;
    s->next = 0;
    s->items = 0;
    s->out_of_order = 0;
}

/* The conversion functions of plus_k on this rank's block of the file. */
static void plus_k_and_wide_int(MPI_File fh, struct plus_state *plus, struct plus_state *wide)
{
    MPI_Status st;
    CHECK_MPI(MPI_Register_datarep("plus_k", plus_read, plus_write, plus_extent, plus));
    EXPECT_CLASS(MPI_Register_datarep("plus_k", plus_read, plus_write, plus_extent, plus), MPI_ERR_DUP_DATAREP);
    CHECK_MPI(MPI_Register_datarep("wide_int", plus_read, plus_write, plus_extent, wide));

    int *vals = test_malloc(N_PLUS * sizeof(int));
    int *back = test_malloc(N_PLUS * sizeof(int));
    for (int i = 0; i < N_PLUS; i++)
        vals[i] = test_rank * 7000001 + i * 3 - 60000;
    MPI_Offset disp = (MPI_Offset)test_rank * N_PLUS * 4;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "plus_k", MPI_INFO_NULL));
    check_rep_name(fh, "plus_k");
    CHECK(plus->extent_calls > 0, "the extent function of plus_k was never called");
    check_extent(fh, MPI_INT, 4, "MPI_INT in plus_k");
    reset(plus);
    CHECK_MPI(MPI_File_write_at(fh, 0, vals, N_PLUS, MPI_INT, &st));
    CHECK(moved_bytes(&st) == N_PLUS * 4, "plus_k write moved %d bytes", moved_bytes(&st));
    CHECK(plus->items == N_PLUS && !plus->out_of_order,
          "the write conversion converted %ld items (want %d), in order: %s", plus->items, N_PLUS,
          plus->out_of_order ? "no" : "yes");
    CHECK(plus->calls >= 2, "the write conversion of %d bytes was called %d time(s), not in pieces",
          N_PLUS * 4, plus->calls);

    /* The file holds value + K, native ints. */
    unsigned char *want = test_malloc(N_PLUS * 4);
    for (int i = 0; i < N_PLUS; i++) {
        int f = vals[i] + PLUS_K;
        memcpy(want + 4 * i, &f, 4);
    }
    check_file_bytes(fh, disp, want, N_PLUS * 4, "plus_k ints");

    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "plus_k", MPI_INFO_NULL));
    reset(plus);
    memset(back, 0, N_PLUS * sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, back, N_PLUS, MPI_INT, &st));
    CHECK(moved_bytes(&st) == N_PLUS * 4, "plus_k read moved %d bytes", moved_bytes(&st));
    for (int i = 0; i < N_PLUS; i++)
        CHECK(back[i] == vals[i], "plus_k int %d read back as %d, want %d", i, back[i], vals[i]);
    CHECK(plus->items == N_PLUS && !plus->out_of_order && plus->calls >= 2,
          "the read conversion converted %ld items (want %d) in %d calls", plus->items, N_PLUS, plus->calls);

    /* A read conversion that fails makes the read fail. */
    plus->fail_reads = 1;
    int rc = MPI_File_read_at(fh, 0, back, 16, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS, "a read whose conversion function failed succeeded");
    plus->fail_reads = 0;

    /* A representation whose extent for MPI_INT is 8: its view is in 8-byte ints. */
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "wide_int", MPI_INFO_NULL));
    check_rep_name(fh, "wide_int");
    check_extent(fh, MPI_INT, 8, "MPI_INT in wide_int");
    free(want);
    free(vals);
    free(back);
}

static void registered_representation(void)
{
    static struct plus_state plus = {PLUS_K, 4, 0, 0, 0, 0, 0, 0};
    static struct plus_state wide = {0, 8, 0, 0, 0, 0, 0, 0};
    static struct plus_state same = {0, 4, 0, 0, 0, 0, 0, 0};
    CHECK_MPI(MPI_Register_datarep("as_native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, plus_extent,
                                   &same));
    EXPECT_CLASS(MPI_Register_datarep("as_native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, plus_extent,
                                      &same),
                 MPI_ERR_DUP_DATAREP);

    MPI_File fh;
    MPI_Status st;
    const char *path = test_path("plus.dat");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    EXPECT_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no_such_representation", MPI_INFO_NULL),
                 MPI_ERR_UNSUPPORTED_DATAREP);

    if (tolerated("MPICH", "a registered representation is refused in a view (only native and "
                           "external32) and conversion functions are refused at registration")) {
        CHECK_MPI(MPI_File_close(&fh));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (test_rank == 0)
            CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
        return;
    }

    /* MPI_CONVERSION_FN_NULL: the file holds the memory's bytes. */
    int vals[64], back[64];
    for (int i = 0; i < 64; i++)
        vals[i] = test_rank * 1000 - i * 77;
    MPI_Offset disp = (MPI_Offset)test_rank * 64 * 4;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, MPI_INT, "as_native", MPI_INFO_NULL));
    check_rep_name(fh, "as_native");
    CHECK_MPI(MPI_File_write_at(fh, 0, vals, 64, MPI_INT, &st));
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at(fh, 0, back, 64, MPI_INT, &st));
    CHECK(memcmp(back, vals, sizeof vals) == 0, "as_native ints read back differ");
    check_file_bytes(fh, disp, (const unsigned char *)vals, 64 * 4, "as_native ints");
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    plus_k_and_wide_int(fh, &plus, &wide);

    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    external32_ints_doubles_shorts();
    registered_representation();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
