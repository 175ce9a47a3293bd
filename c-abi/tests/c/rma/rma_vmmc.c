/*
 * rma_vmmc: Put and Get at sizes on both sides of the threshold above which the library
 * moves one-sided data through the device (VMMC's deliberate update and fetch) instead of
 * inside request messages, with every synchronization mode and many origins on one target.
 * Nothing here depends on which path an operation takes: the tests run it with
 * MPI_RMA_VMMC=0 (messages only), MPI_RMA_VMMC_MIN=1 (the device for every size) and the
 * default, on one host and across hosts.
 *
 *  - fence: every rank puts to and gets from its right neighbour blocks of 8 B to 1 MiB + 8
 *    (both windows of MPI_Win_create and MPI_Win_allocate), checked byte for byte on both
 *    sides; puts at an odd displacement unit;
 *  - derived types: a target vector of 4 blocks of 20000 bytes (stride 24000), a target
 *    vector of 512 blocks of 16 bytes (many small blocks), an origin vector into a
 *    contiguous target, a get into an origin vector: every byte of the target window checked,
 *    the gaps untouched;
 *  - lock epochs, many origins on one target: every origin in turn takes an exclusive lock on
 *    rank 0, puts 192 KiB of its own pattern over the whole region, flushes, reads it back
 *    with a Get and checks it is still all its own (another origin's write landing inside the
 *    epoch shows), then unlocks; 4 rounds each, all origins contending at once; then shared
 *    locks, each origin its own slice, MPI_Rput / MPI_Rget with MPI_Wait;
 *  - PSCW: a ring of 100 KiB puts between post/start and complete/wait.
 */
#define TEST_NAME "rma_vmmc"
#include "../mpitest.h"

#include "rma_util.h"

static const size_t sizes[] = {8, 1000, 4096, 4100, 16384, 16400, 65536, 300000, 1048584};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAX_SIZE 1048584

/* ---------------------------------------------------------------- fence, contiguous */

static void fence_sizes(int allocate)
{
    int right = right_of(test_rank), left = (test_rank + test_size - 1) % test_size;
    unsigned char *base;
    MPI_Win win;
    /* Room for the put (first half) and the data gets read (second half). */
    MPI_Aint bytes = 2 * (MPI_Aint)MAX_SIZE;
    unsigned char *own = NULL;
    if (allocate) {
        CHECK_MPI(MPI_Win_allocate(alloc_size(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                   &win));
    } else {
        own = test_malloc((size_t)bytes);
        base = own;
        CHECK_MPI(MPI_Win_create(base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    unsigned char *out = test_malloc(MAX_SIZE), *in = test_malloc(MAX_SIZE);
    for (size_t k = 0; k < NSIZES; k++) {
        size_t n = sizes[k];
        memset(base, 0xee, (size_t)bytes);
        /* What others will get from me, in the second half. */
        fill_pattern(base + MAX_SIZE, n, message_seed(test_rank, 99, (int)k));
        fill_pattern(out, n, message_seed(test_rank, right, (int)k));
        memset(in, 0, n);
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Put(out, (int)n, MPI_BYTE, right, 0, (int)n, MPI_BYTE, win));
        CHECK_MPI(MPI_Get(in, (int)n, MPI_BYTE, right, MAX_SIZE, (int)n, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_PATTERN(base, n, message_seed(left, test_rank, (int)k),
                      "%s window: %zu bytes put by rank %d", allocate ? "allocated" : "created",
                      n, left);
        CHECK(n == MAX_SIZE || base[n] == 0xee, "%zu-byte put wrote past its end", n);
        CHECK_PATTERN(in, n, message_seed(right, 99, (int)k),
                      "%s window: %zu bytes got from rank %d",
                      allocate ? "allocated" : "created", n, right);
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(own);

    /* A displacement unit of 8: the target offset is disp * 8. */
    long long *lbase;
    enum { LN = 40000 };
    CHECK_MPI(MPI_Win_allocate(sizeof(long long) * 2 * LN, sizeof(long long), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &lbase, &win));
    for (int j = 0; j < 2 * LN; j++)
        lbase[j] = -1;
    long long *lout = test_malloc(sizeof(long long) * LN);
    for (int j = 0; j < LN; j++)
        lout[j] = (long long)test_rank * 1000000 + j;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(lout, LN, MPI_LONG_LONG, right, LN / 2, LN, MPI_LONG_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int j = 0; j < 2 * LN; j++) {
        long long want = (j >= LN / 2 && j < LN / 2 + LN) ? (long long)left * 1000000 + (j - LN / 2)
                                                         : -1;
        CHECK(lbase[j] == want, "disp_unit 8: element %d is %lld, want %lld", j, lbase[j], want);
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(lout);
    free(out);
    free(in);
}

/* ---------------------------------------------------------------- derived types */

static void derived_types(void)
{
    int right = right_of(test_rank), left = (test_rank + test_size - 1) % test_size;
    enum { BLOCKS = 4, BLOCK = 20000, STRIDE = 24000, WIN = BLOCKS * STRIDE + 64 };
    unsigned char *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(alloc_size(WIN), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    unsigned char *out = test_malloc(WIN), *in = test_malloc(WIN);

    /* Few large target blocks. */
    MPI_Datatype big;
    CHECK_MPI(MPI_Type_vector(BLOCKS, BLOCK, STRIDE, MPI_BYTE, &big));
    CHECK_MPI(MPI_Type_commit(&big));
    /* Many small target blocks: 512 x 16 bytes, stride 32. */
    MPI_Datatype small;
    CHECK_MPI(MPI_Type_vector(512, 16, 32, MPI_BYTE, &small));
    CHECK_MPI(MPI_Type_commit(&small));

    struct {
        MPI_Datatype ty;
        int blocks, block, stride;
        const char *name;
    } cases[] = {{big, BLOCKS, BLOCK, STRIDE, "4 x 20000 B"}, {small, 512, 16, 32, "512 x 16 B"}};
    for (int c = 0; c < 2; c++) {
        int nb = cases[c].blocks, bl = cases[c].block, st = cases[c].stride;
        size_t data = (size_t)nb * (size_t)bl;
        memset(base, 0xee, WIN);
        fill_pattern(out, data, message_seed(test_rank, right, 10 + c));
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Put(out, (int)data, MPI_BYTE, right, 8, 1, cases[c].ty, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        unsigned char *want = test_malloc(data);
        fill_pattern(want, data, message_seed(left, test_rank, 10 + c));
        for (int i = 0; i < WIN; i++) {
            int rel = i - 8, b = rel / st, at = rel % st;
            int inside = rel >= 0 && b < nb && at < bl;
            unsigned char w = inside ? want[(size_t)b * bl + at] : 0xee;
            CHECK(base[i] == w, "put into a target vector of %s: byte %d is 0x%02x, want 0x%02x",
                  cases[c].name, i, base[i], w);
        }
        /* And back: a get of the same target layout into a contiguous buffer. */
        memset(in, 0, data);
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Get(in, (int)data, MPI_BYTE, left, 8, 1, cases[c].ty, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        /* Rank left's window holds what ITS left neighbour put. */
        int leftleft = (left + test_size - 1) % test_size;
        CHECK_PATTERN(in, data, message_seed(leftleft, left, 10 + c),
                      "get from a target vector of %s", cases[c].name);
        free(want);
    }

    /* An origin vector into a contiguous target, and a get into an origin vector. */
    size_t data = (size_t)BLOCKS * BLOCK;
    memset(out, 0, WIN);
    unsigned char *packed = test_malloc(data);
    fill_pattern(packed, data, message_seed(test_rank, right, 20));
    for (int b = 0; b < BLOCKS; b++)
        memcpy(out + (size_t)b * STRIDE, packed + (size_t)b * BLOCK, BLOCK);
    memset(base, 0xee, WIN);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(out, 1, big, right, 0, (int)data, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_PATTERN(base, data, message_seed(left, test_rank, 20), "put from an origin vector");
    CHECK(base[data] == 0xee, "the put from an origin vector wrote past its end");
    memset(in, 0x11, WIN);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(in, 1, big, right, 0, (int)data, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    unsigned char *want = test_malloc(data);
    fill_pattern(want, data, message_seed(test_rank, right, 20));
    for (int i = 0; i < BLOCKS * STRIDE; i++) {
        int b = i / STRIDE, at = i % STRIDE;
        unsigned char w = at < BLOCK ? want[(size_t)b * BLOCK + at] : 0x11;
        CHECK(in[i] == w, "get into an origin vector: byte %d is 0x%02x, want 0x%02x", i, in[i],
              w);
    }
    free(want);
    free(packed);
    CHECK_MPI(MPI_Type_free(&big));
    CHECK_MPI(MPI_Type_free(&small));
    CHECK_MPI(MPI_Win_free(&win));
    free(out);
    free(in);
}

/* ---------------------------------------------------------------- lock epochs */

static void lock_epochs(void)
{
    enum { REGION = 192 * 1024, ROUNDS = 4, SLICE = 40000 };
    unsigned char *base;
    MPI_Win win;
    MPI_Aint bytes = REGION + (MPI_Aint)SLICE * test_size;
    CHECK_MPI(MPI_Win_allocate(alloc_size(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, (size_t)bytes);
    unsigned char *out = test_malloc(REGION), *in = test_malloc(REGION);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Exclusive: the region must hold only this origin's data for the whole epoch. */
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t seed = message_seed(test_rank, 0, 30 + round);
        fill_pattern(out, REGION, seed);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Put(out, REGION, MPI_BYTE, 0, 0, REGION, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        /* Small puts too, over the start, on the message path below the threshold. */
        CHECK_MPI(MPI_Put(out, 64, MPI_BYTE, 0, 0, 64, MPI_BYTE, win));
        memset(in, 0, REGION);
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK_MPI(MPI_Get(in, REGION, MPI_BYTE, 0, 0, REGION, MPI_BYTE, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
        CHECK_PATTERN(in, REGION, seed,
                      "rank %d round %d: the region read back inside its exclusive epoch (another "
                      "origin's write landed in it)",
                      test_rank, round);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0) {
        /* Whole, and one origin's: the last epoch's. */
        int whose = -1;
        for (int r = 0; r < test_size && whose < 0; r++)
            if (pattern_mismatch(base, REGION, message_seed(r, 0, 30 + ROUNDS - 1)) == REGION)
                whose = r;
        CHECK(whose >= 0, "after the exclusive epochs rank 0's region is no origin's last put");
    }

    /* Shared: each origin its own slice of rank 0, request-based. */
    uint32_t seed = message_seed(test_rank, 0, 40);
    fill_pattern(out, SLICE, seed);
    MPI_Aint at = REGION + (MPI_Aint)SLICE * test_rank;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    MPI_Request req;
    CHECK_MPI(MPI_Rput(out, SLICE, MPI_BYTE, 0, at, SLICE, MPI_BYTE, win, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_flush(0, win));
    memset(in, 0, SLICE);
    CHECK_MPI(MPI_Rget(in, SLICE, MPI_BYTE, 0, at, SLICE, MPI_BYTE, win, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK_PATTERN(in, SLICE, seed, "rank %d's slice under a shared lock", test_rank);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        for (int r = 0; r < test_size; r++)
            CHECK_PATTERN(base + REGION + (size_t)SLICE * r, SLICE, message_seed(r, 0, 40),
                          "rank %d's slice at the target", r);

    /* lock_all: a get from every rank's region. */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int r = 0; r < test_size; r++) {
        memset(in, 0, SLICE);
        CHECK_MPI(MPI_Get(in, SLICE, MPI_BYTE, 0, REGION + (MPI_Aint)SLICE * r, SLICE, MPI_BYTE,
                          win));
        CHECK_MPI(MPI_Win_flush_all(win));
        CHECK_PATTERN(in, SLICE, message_seed(r, 0, 40), "lock_all get of rank %d's slice", r);
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Win_free(&win));
    free(out);
    free(in);
}

/* ---------------------------------------------------------------- PSCW */

static void pscw_ring(void)
{
    enum { N = 100 * 1024 };
    int right = right_of(test_rank), left = (test_rank + test_size - 1) % test_size;
    unsigned char *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(alloc_size(N), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    memset(base, 0, N);
    unsigned char *out = test_malloc(N);
    fill_pattern(out, N, message_seed(test_rank, right, 50));
    MPI_Group world, to, from;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &right, &to));
    CHECK_MPI(MPI_Group_incl(world, 1, &left, &from));
    CHECK_MPI(MPI_Win_post(from, 0, win));
    CHECK_MPI(MPI_Win_start(to, 0, win));
    CHECK_MPI(MPI_Put(out, N, MPI_BYTE, right, 0, N, MPI_BYTE, win));
    CHECK_MPI(MPI_Win_complete(win));
    CHECK_MPI(MPI_Win_wait(win));
    CHECK_PATTERN(base, N, message_seed(left, test_rank, 50), "PSCW put from rank %d", left);
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Group_free(&to));
    CHECK_MPI(MPI_Group_free(&from));
    CHECK_MPI(MPI_Win_free(&win));
    free(out);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    fence_sizes(0);
    fence_sizes(1);
    derived_types();
    lock_epochs();
    pscw_ring();
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
