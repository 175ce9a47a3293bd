/*
 * big_transfers: messages above 2 GiB end to end, on 2 ranks, one phase after the other
 * (each allocates, checks word for word and frees before the next):
 *
 *   send_c     one MPI_Send_c / MPI_Recv_c of 2200 MiB of MPI_BYTE; MPI_Get_count_c gives the
 *              byte count, MPI_Get_count gives MPI_UNDEFINED (an int cannot hold it)
 *   send_int   600M MPI_INTs through the int API: count 150M of a contiguous type of 4 ints;
 *              MPI_Get_count of MPI_INT and of the type fit an int, of MPI_BYTE does not
 *   bcast_c    MPI_Bcast_c of 2200 MiB from rank 1
 *   allreduce_c MPI_Allreduce_c in place of 2 GiB + 64 bytes of MPI_BYTE with a bitwise-xor
 *              operation of MPI_Op_create_c (its MPI_Count length reaches past INT_MAX: the
 *              library hands it whole blocks, and the data is combined at C's speed whatever
 *              the library's build)
 *   rma_c      MPI_Put_c of 2200 MiB into rank 1's window (MPI_Win_allocate_c), then
 *              MPI_Get_c of it back into a cleared buffer
 *   file_c     rank 0 writes 2200 MiB with MPI_File_write_at_c at offset 8, reads it back
 *              with MPI_File_read_at_c (in the directory $LARGE_TEST_DIR)
 *
 * $BIG_PHASE names the phase to run (one job per phase keeps each within the harness's
 * time guard); unset, every phase runs in turn.
 * Rank 0 prints "NOTE big_transfers: <phase> ... GB/s" for each phase. The pattern is one
 * 64-bit word per 8 bytes (cheap to make and check at memory speed).
 */
#define TEST_NAME "big_transfers"
#include "mpitest.h"

#define BIG ((MPI_Count)2200 << 20) /* bytes: more than 2^31 */

static uint64_t word_at(uint64_t seed, size_t i) { return (uint64_t)i * 0x9E3779B97F4A7C15ull ^ seed; }

static void fill_words(void *buf, size_t bytes, uint64_t seed)
{
    uint64_t *w = buf;
    for (size_t i = 0; i < bytes / 8; i++)
        w[i] = word_at(seed, i);
}

static void check_words(const void *buf, size_t bytes, uint64_t seed, const char *what)
{
    const uint64_t *w = buf;
    for (size_t i = 0; i < bytes / 8; i++)
        if (w[i] != word_at(seed, i))
            FAIL("%s: word %zu of %zu differs: 0x%016llx, want 0x%016llx", what, i, bytes / 8,
                 (unsigned long long)w[i], (unsigned long long)word_at(seed, i));
}

static void *big_alloc(size_t bytes)
{
    void *p = test_malloc(bytes);
    memset(p, 0, bytes); /* touch every page before timing */
    return p;
}

static void note(const char *phase, double bytes, double seconds)
{
    if (test_rank == 0) {
        printf("NOTE big_transfers: %-11s %.2f GB in %.3f s: %.2f GB/s\n", phase, bytes / 1e9,
               seconds, bytes / 1e9 / seconds);
        fflush(stdout);
    }
}

static void send_c(void)
{
    char *buf = big_alloc(BIG);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    if (test_rank == 0) {
        fill_words(buf, BIG, 11);
        t = MPI_Wtime();
        CHECK_MPI(MPI_Send_c(buf, BIG, MPI_BYTE, 1, 5, MPI_COMM_WORLD));
        t = MPI_Wtime() - t;
    } else if (test_rank == 1) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv_c(buf, BIG, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st));
        check_words(buf, BIG, 11, "MPI_Recv_c");
        MPI_Count c = -1;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        CHECK(c == BIG, "MPI_Get_count_c: %lld, want %lld", (long long)c, (long long)BIG);
        CHECK_MPI(MPI_Get_elements_c(&st, MPI_BYTE, &c));
        CHECK(c == BIG, "MPI_Get_elements_c: %lld", (long long)c);
        int n = 0;
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
        CHECK(n == MPI_UNDEFINED, "MPI_Get_count of %lld bytes: %d, want MPI_UNDEFINED",
              (long long)BIG, n);
        CHECK_MPI(MPI_Get_count_c(&st, MPI_DOUBLE, &c));
        CHECK(c == BIG / 8, "MPI_Get_count_c in doubles: %lld", (long long)c);
    }
    note("send_c", (double)BIG, t);
    free(buf);
}

static void send_int(void)
{
    const long long n_ints = 600000000LL;
    MPI_Datatype four;
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &four));
    CHECK_MPI(MPI_Type_commit(&four));
    int *buf = big_alloc((size_t)n_ints * sizeof(int));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = 0;
    if (test_rank == 0) {
        fill_words(buf, (size_t)n_ints * 4, 12);
        t = MPI_Wtime();
        CHECK_MPI(MPI_Send(buf, (int)(n_ints / 4), four, 1, 6, MPI_COMM_WORLD));
        t = MPI_Wtime() - t;
    } else if (test_rank == 1) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, (int)(n_ints / 4), four, 0, 6, MPI_COMM_WORLD, &st));
        check_words(buf, (size_t)n_ints * 4, 12, "MPI_Recv of 150M x 4 ints");
        int n = -1;
        CHECK_MPI(MPI_Get_count(&st, four, &n));
        CHECK(n == n_ints / 4, "MPI_Get_count in the 4-int type: %d", n);
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
        CHECK(n == n_ints, "MPI_Get_count in MPI_INT: %d", n);
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
        CHECK(n == MPI_UNDEFINED, "MPI_Get_count in MPI_BYTE: %d, want MPI_UNDEFINED", n);
        CHECK_MPI(MPI_Get_elements(&st, four, &n));
        CHECK(n == n_ints, "MPI_Get_elements: %d", n);
        MPI_Count c = -1;
        CHECK_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &c));
        CHECK(c == n_ints * 4, "MPI_Get_elements_x in MPI_BYTE: %lld", (long long)c);
    }
    note("send_int", (double)n_ints * 4, t);
    free(buf);
    CHECK_MPI(MPI_Type_free(&four));
}

static void bcast_c(void)
{
    char *buf = big_alloc(BIG);
    if (test_rank == 1)
        fill_words(buf, BIG, 13);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    CHECK_MPI(MPI_Bcast_c(buf, BIG, MPI_BYTE, 1, MPI_COMM_WORLD));
    t = MPI_Wtime() - t;
    check_words(buf, BIG, 13, "MPI_Bcast_c");
    note("bcast_c", (double)BIG, t);
    free(buf);
}

static MPI_Count longest_piece;

/* Bitwise xor of `*len` bytes, eight at a time (the blocks need not be aligned). */
static void xor_bytes(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt)
{
    (void)dt;
    unsigned char *a = in, *b = inout;
    MPI_Count i = 0;
    if (*len > longest_piece)
        longest_piece = *len;
    for (; i + 8 <= *len; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        y ^= x;
        memcpy(b + i, &y, 8);
    }
    for (; i < *len; i++)
        b[i] ^= a[i];
}

static void allreduce_c(void)
{
    MPI_Op xor_op;
    CHECK_MPI(MPI_Op_create_c(xor_bytes, 1, &xor_op));
    const MPI_Count n = ((MPI_Count)1 << 31) + 64;
    uint64_t *buf = big_alloc(n);
    fill_words(buf, n, 100 + test_rank);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    double t = MPI_Wtime();
    CHECK_MPI(MPI_Allreduce_c(MPI_IN_PLACE, buf, n, MPI_BYTE, xor_op, MPI_COMM_WORLD));
    t = MPI_Wtime() - t;
    CHECK_MPI(MPI_Op_free(&xor_op));
    for (size_t i = 0; i < (size_t)n / 8; i++) {
        uint64_t want = 0;
        for (int r = 0; r < test_size; r++)
            want ^= word_at(100 + r, i);
        if (buf[i] != want)
            FAIL("MPI_Allreduce_c: word %zu differs: 0x%016llx, want 0x%016llx", i,
                 (unsigned long long)buf[i], (unsigned long long)want);
    }
    note("allreduce_c", (double)n, t);
    if (test_rank == 0) {
        printf("NOTE big_transfers: the longest block the operation got: %lld bytes\n",
               (long long)longest_piece);
        fflush(stdout);
    }
    free(buf);
}

static void rma_c(void)
{
    char *base = NULL;
    MPI_Win win;
    MPI_Aint size = test_rank == 1 ? (MPI_Aint)BIG : 0;
    CHECK_MPI(MPI_Win_allocate_c(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    char *buf = test_rank == 0 ? big_alloc(BIG) : NULL;
    if (test_rank == 0)
        fill_words(buf, BIG, 14);
    CHECK_MPI(MPI_Win_fence(0, win));
    double t = MPI_Wtime();
    if (test_rank == 0)
        CHECK_MPI(MPI_Put_c(buf, BIG, MPI_BYTE, 1, 0, BIG, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    double put = MPI_Wtime() - t;
    if (test_rank == 1)
        check_words(base, BIG, 14, "the window after MPI_Put_c");
    if (test_rank == 0)
        memset(buf, 0, BIG);
    CHECK_MPI(MPI_Win_fence(0, win));
    t = MPI_Wtime();
    if (test_rank == 0)
        CHECK_MPI(MPI_Get_c(buf, BIG, MPI_BYTE, 1, 0, BIG, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    double get = MPI_Wtime() - t;
    if (test_rank == 0)
        check_words(buf, BIG, 14, "MPI_Get_c");
    note("put_c", (double)BIG, put);
    note("get_c", (double)BIG, get);
    CHECK_MPI(MPI_Win_free(&win));
    free(buf);
}

static void file_c(const char *path)
{
    if (test_rank == 0) {
        MPI_File fh;
        CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                                MPI_INFO_NULL, &fh));
        char *buf = big_alloc(BIG);
        fill_words(buf, BIG, 15);
        MPI_Status st;
        double t = MPI_Wtime();
        CHECK_MPI(MPI_File_write_at_c(fh, 8, buf, BIG, MPI_BYTE, &st));
        double w = MPI_Wtime() - t;
        MPI_Count c = -1;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        CHECK(c == BIG, "MPI_File_write_at_c wrote %lld bytes", (long long)c);
        MPI_Offset size = -1;
        CHECK_MPI(MPI_File_get_size(fh, &size));
        CHECK(size == BIG + 8, "the file has %lld bytes, want %lld", (long long)size,
              (long long)BIG + 8);
        memset(buf, 0, BIG);
        t = MPI_Wtime();
        CHECK_MPI(MPI_File_read_at_c(fh, 8, buf, BIG, MPI_BYTE, &st));
        double r = MPI_Wtime() - t;
        CHECK_MPI(MPI_Get_count_c(&st, MPI_BYTE, &c));
        CHECK(c == BIG, "MPI_File_read_at_c read %lld bytes", (long long)c);
        check_words(buf, BIG, 15, "MPI_File_read_at_c");
        note("write_at_c", (double)BIG, w);
        note("read_at_c", (double)BIG, r);
        free(buf);
        CHECK_MPI(MPI_File_close(&fh));
    }
}

/* Whether phase `name` is to run ($BIG_PHASE unset: all). */
static int wanted(const char *name)
{
    const char *only = getenv("BIG_PHASE");
    return only == NULL || strcmp(only, name) == 0;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    const char *dir = getenv("LARGE_TEST_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/big_file_c.dat", dir ? dir : ".");
    if (wanted("send_c")) send_c();
    if (wanted("send_int")) send_int();
    if (wanted("bcast_c")) bcast_c();
    if (wanted("allreduce_c")) allreduce_c();
    if (wanted("rma_c")) rma_c();
    if (wanted("file_c")) file_c(path);
    test_ok();
    MPI_Finalize();
    return 0;
}
