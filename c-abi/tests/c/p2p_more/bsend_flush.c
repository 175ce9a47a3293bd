/*
 * bsend_flush: MPI_Buffer_flush and MPI_Buffer_iflush (MPI 4.1).
 *
 * Each rank fills an attached buffer exactly (the standard's sizing rule) with buffered
 * sends to the next rank, small and large (rendezvous-sized) ones, posts the receives from
 * the previous rank, and flushes: afterwards the whole buffer is free again (a second round
 * of the same sends fits without MPI_ERR_BUFFER), and the data arrived intact. The second
 * round uses MPI_Buffer_iflush and MPI_Wait; flushing with nothing in flight, or no buffer
 * attached, returns at once. The buffer stays attached throughout and is detached at the end.
 */
#define TEST_NAME "bsend_flush"
#include "../mpitest.h"

enum { K = 4 };
static const int LENS[K] = {16, 3000, 200000, 1};

static void round_trip(char *attached, int use_iflush, int round)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    unsigned char *out[K], *in[K];
    MPI_Request recvs[K];
    (void)attached;
    for (int k = 0; k < K; k++) {
        out[k] = test_malloc(LENS[k]);
        in[k] = test_malloc(LENS[k]);
        fill_pattern(out[k], LENS[k], message_seed(test_rank, next, k + 10 * round));
        memset(in[k], 0, LENS[k]);
    }
    for (int k = 0; k < K; k++) {
        CHECK_MPI(MPI_Bsend(out[k], LENS[k], MPI_BYTE, next, k, MPI_COMM_WORLD));
        memset(out[k], 0xEE, LENS[k]); /* the buffered copy is what goes */
    }
    for (int k = 0; k < K; k++)
        CHECK_MPI(MPI_Irecv(in[k], LENS[k], MPI_BYTE, prev, k, MPI_COMM_WORLD, &recvs[k]));
    if (use_iflush) {
        MPI_Request flush;
        CHECK_MPI(MPI_Buffer_iflush(&flush));
        CHECK(flush != MPI_REQUEST_NULL, "Buffer_iflush gave MPI_REQUEST_NULL");
        CHECK_MPI(MPI_Wait(&flush, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Buffer_flush());
    }
    CHECK_MPI(MPI_Waitall(K, recvs, MPI_STATUSES_IGNORE));
    for (int k = 0; k < K; k++) {
        CHECK_PATTERN(in[k], LENS[k], message_seed(prev, test_rank, k + 10 * round),
                      "round %d message %d", round, k);
        free(out[k]);
        free(in[k]);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    /* No buffer attached: both return at once. */
    CHECK_MPI(MPI_Buffer_flush());
    MPI_Request r;
    CHECK_MPI(MPI_Buffer_iflush(&r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));

    int size = 0;
    for (int k = 0; k < K; k++)
        size += LENS[k] + MPI_BSEND_OVERHEAD;
    char *buf = test_malloc(size);
    CHECK_MPI(MPI_Buffer_attach(buf, size));
    for (int round = 0; round < 4; round++)
        round_trip(buf, round % 2, round);
    /* Nothing in flight. */
    CHECK_MPI(MPI_Buffer_flush());
    CHECK_MPI(MPI_Buffer_iflush(&r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    void *back = NULL;
    int back_size = 0;
    CHECK_MPI(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == buf && back_size == size, "detach gave %p/%d, want %p/%d", back, back_size, (void *)buf, size);
    free(buf);
    test_ok();
    MPI_Finalize();
    return 0;
}
