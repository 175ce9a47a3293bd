/*
 * sync_send: the send modes other than standard, between ranks 0 and 1.
 *
 *  - MPI_Issend is not complete until the receiver has posted the matching
 *    receive. Rank 1 posts it only after a go-ahead message from rank 0, so
 *    every MPI_Test rank 0 makes before sending the go-ahead must say "not
 *    complete" (checked for 30 ms of polling), whatever the protocol: short
 *    and long messages. Blocking MPI_Ssend delivers the data too.
 *  - MPI_Bsend with MPI_Buffer_attach: sends complete before the receiver
 *    posts anything (long ones included), the send buffer may be reused at
 *    once, MPI_Buffer_detach waits for delivery and returns the buffer.
 *  - MPI_Rsend against a receive the receiver has pre-posted and announced.
 */
#define TEST_NAME "sync_send"
#include "mpitest.h"

enum { TAG_DATA = 1, TAG_GO = 2, LONG = 1048576 };

static const int sizes[] = {8, 1000, 70000, LONG};
enum { NSIZES = sizeof sizes / sizeof sizes[0] };

static void issend_waits_for_receiver(void)
{
    unsigned char *buf = test_malloc(LONG);
    for (int k = 0; k < NSIZES; k++) {
        int size = sizes[k];
        uint32_t seed = message_seed(0, 1, k);
        if (test_rank == 0) {
            MPI_Request req;
            fill_pattern(buf, (size_t)size, seed);
            CHECK_MPI(MPI_Issend(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req));
            double until = MPI_Wtime() + 0.03;
            int polls = 0;
            while (MPI_Wtime() < until || polls < 100) {
                int flag = 1;
                CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                CHECK(!flag, "Issend of %d bytes completed before the receiver posted its receive", size);
                polls++;
            }
            CHECK_MPI(MPI_Send(&k, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            int go;
            MPI_Status st;
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            memset(buf, 0, (size_t)size);
            CHECK_MPI(MPI_Recv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &st));
            CHECK(status_bytes(&st) == size, "Issend of %d bytes arrived as %d", size, status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)size, seed, "Issend of %d bytes", size);
        }
    }
    free(buf);
}

static void blocking_ssend(void)
{
    unsigned char *buf = test_malloc(LONG);
    for (int k = 0; k < NSIZES; k++) {
        int size = sizes[k];
        uint32_t seed = message_seed(1, 0, k);
        if (test_rank == 1) {
            fill_pattern(buf, (size_t)size, seed);
            CHECK_MPI(MPI_Ssend(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD));
        } else {
            MPI_Status st;
            sleep_ms(2); /* let the sender wait a little */
            CHECK_MPI(MPI_Recv(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &st));
            CHECK(status_bytes(&st) == size, "Ssend of %d bytes arrived as %d", size, status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)size, seed, "Ssend of %d bytes", size);
        }
    }
    free(buf);
}

static void buffered_sends(void)
{
    int total = 0;
    for (int k = 0; k < NSIZES; k++)
        total += sizes[k] + MPI_BSEND_OVERHEAD;
    if (test_rank == 0) {
        void *attached = test_malloc((size_t)total);
        CHECK_MPI(MPI_Buffer_attach(attached, total));
        unsigned char *buf = test_malloc(LONG);
        for (int k = 0; k < NSIZES; k++) {
            fill_pattern(buf, (size_t)sizes[k], message_seed(0, 1, 10 + k));
            CHECK_MPI(MPI_Bsend(buf, sizes[k], MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD));
            memset(buf, 0xAA, (size_t)sizes[k]); /* reusable at once */
        }
        /* Only now may rank 1 post its receives. */
        int go = 1;
        CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD));
        void *detached = NULL;
        int detached_size = 0;
        CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
        CHECK(detached == attached && detached_size == total,
              "Buffer_detach gave back %p (%d bytes), attached %p (%d bytes)", detached,
              detached_size, attached, total);
        free(attached);
        free(buf);
    } else {
        int go;
        unsigned char *buf = test_malloc(LONG);
        CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int k = 0; k < NSIZES; k++) {
            MPI_Status st;
            CHECK_MPI(MPI_Recv(buf, sizes[k], MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &st));
            CHECK(status_bytes(&st) == sizes[k], "Bsend of %d bytes arrived as %d", sizes[k], status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)sizes[k], message_seed(0, 1, 10 + k), "Bsend of %d bytes", sizes[k]);
        }
        free(buf);
    }
}

static void ready_sends(void)
{
    unsigned char *buf = test_malloc(LONG);
    for (int k = 0; k < NSIZES; k++) {
        int size = sizes[k];
        uint32_t seed = message_seed(1, 0, 20 + k);
        if (test_rank == 0) {
            MPI_Request req;
            MPI_Status st;
            int ready = k;
            memset(buf, 0, (size_t)size);
            CHECK_MPI(MPI_Irecv(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Send(&ready, 1, MPI_INT, 1, TAG_GO, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, &st));
            CHECK(status_bytes(&st) == size, "Rsend of %d bytes arrived as %d", size, status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)size, seed, "Rsend of %d bytes", size);
        } else {
            int ready;
            fill_pattern(buf, (size_t)size, seed);
            CHECK_MPI(MPI_Recv(&ready, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Rsend(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD));
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (test_rank < 2) {
        issend_waits_for_receiver();
        blocking_ssend();
        buffered_sends();
        ready_sends();
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
