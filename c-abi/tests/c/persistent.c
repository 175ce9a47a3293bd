/*
 * persistent: persistent requests between ranks 0 and 1 (other ranks only
 * join the final barrier).
 *
 *  - Send_init / Recv_init, then Start + Wait many times over the same
 *    buffers, new contents each time, for a short and a long message.
 *  - Startall of a send and a receive on both sides (an exchange), Waitall.
 *  - Wait and Test on an inactive persistent request return at once with an
 *    empty status; Request_free of inactive persistent requests.
 *  - Ssend_init (completes only once matched), Rsend_init against a
 *    pre-posted receive, Bsend_init with an attached buffer (completes before
 *    the receiver has posted anything, even for a long message).
 */
#define TEST_NAME "persistent"
#include "mpitest.h"

enum { ROUNDS = 20, SHORT = 100, LONG = 300000, TAG_DATA = 4, TAG_SYNC = 5 };

static void check_empty_status(const MPI_Status *st, const char *what)
{
    int count = -1;
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && count == 0,
          "%s on an inactive request: status source %d tag %d count %d, want an empty status",
          what, st->MPI_SOURCE, st->MPI_TAG, count);
}

static void start_wait_loop(int size)
{
    unsigned char *buf = test_malloc((size_t)size);
    MPI_Request req;
    int peer = 1 - test_rank;
    if (test_rank == 0)
        CHECK_MPI(MPI_Send_init(buf, size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req));
    else
        CHECK_MPI(MPI_Recv_init(buf, size, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req));
    CHECK(req != MPI_REQUEST_NULL, "persistent init returned MPI_REQUEST_NULL");
    for (int round = 0; round < ROUNDS; round++) {
        uint32_t seed = message_seed(size, 0, round);
        MPI_Status st;
        if (test_rank == 0)
            fill_pattern(buf, (size_t)size, seed);
        else
            memset(buf, 0, (size_t)size);
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK(req != MPI_REQUEST_NULL, "Wait freed a persistent request (round %d)", round);
        if (test_rank == 1) {
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == TAG_DATA && status_bytes(&st) == size,
                  "round %d: status source %d tag %d count %d", round, st.MPI_SOURCE,
                  st.MPI_TAG, status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)size, seed, "%d-byte persistent message, round %d", size, round);
        }
    }
    /* The request is inactive now: Wait and Test return at once, empty. */
    MPI_Status st;
    int flag = 0;
    CHECK_MPI(MPI_Wait(&req, &st));
    check_empty_status(&st, "Wait");
    CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK(flag, "Test on an inactive persistent request returned false");
    check_empty_status(&st, "Test");
    CHECK_MPI(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL, "Request_free did not set the handle to MPI_REQUEST_NULL");
    free(buf);
}

static void startall_exchange(void)
{
    int peer = 1 - test_rank;
    unsigned char *out = test_malloc(LONG), *in = test_malloc(LONG);
    MPI_Request reqs[2];
    MPI_Status sts[2];
    CHECK_MPI(MPI_Recv_init(in, LONG, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Send_init(out, LONG, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &reqs[1]));
    for (int round = 0; round < 5; round++) {
        fill_pattern(out, LONG, message_seed(test_rank, peer, round));
        memset(in, 0, LONG);
        CHECK_MPI(MPI_Startall(2, reqs));
        CHECK_MPI(MPI_Waitall(2, reqs, sts));
        CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL, "Waitall freed a persistent request");
        CHECK(status_bytes(&sts[0]) == LONG, "Startall exchange round %d: received %d bytes", round,
              status_bytes(&sts[0]));
        CHECK_PATTERN(in, LONG, message_seed(peer, test_rank, round), "Startall exchange round %d", round);
    }
    CHECK_MPI(MPI_Request_free(&reqs[0]));
    CHECK_MPI(MPI_Request_free(&reqs[1]));
    free(out);
    free(in);
}

static void ssend_init(void)
{
    int v[4];
    MPI_Request req;
    if (test_rank == 0) {
        CHECK_MPI(MPI_Ssend_init(v, 4, MPI_INT, 1, TAG_DATA, MPI_COMM_WORLD, &req));
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 4; i++)
                v[i] = round * 10 + i;
            CHECK_MPI(MPI_Start(&req));
            int flag = 1;
            CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            /* Rank 1 posts its receive only after our go-ahead, sent below. */
            CHECK(!flag, "Ssend_init request round %d complete before the receive was posted", round);
            CHECK_MPI(MPI_Send(&round, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        }
        CHECK_MPI(MPI_Request_free(&req));
    } else {
        for (int round = 0; round < 5; round++) {
            int go;
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(v, 4, MPI_INT, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            for (int i = 0; i < 4; i++)
                CHECK(v[i] == round * 10 + i, "Ssend_init round %d: int %d is %d", round, i, v[i]);
        }
    }
}

static void rsend_init(void)
{
    unsigned char *buf = test_malloc(LONG);
    MPI_Request req;
    for (int round = 0; round < 3; round++) {
        int size = round == 1 ? LONG : SHORT;
        uint32_t seed = message_seed(0, 1, 100 + round);
        if (test_rank == 0) {
            int ready;
            fill_pattern(buf, (size_t)size, seed);
            CHECK_MPI(MPI_Rsend_init(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Recv(&ready, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Start(&req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Request_free(&req));
        } else {
            int ready = 1;
            MPI_Status st;
            memset(buf, 0, (size_t)size);
            CHECK_MPI(MPI_Irecv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req));
            CHECK_MPI(MPI_Send(&ready, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Wait(&req, &st));
            CHECK(status_bytes(&st) == size, "Rsend_init round %d: %d bytes", round, status_bytes(&st));
            CHECK_PATTERN(buf, (size_t)size, seed, "Rsend_init round %d", round);
        }
    }
    free(buf);
}

static void bsend_init(void)
{
    if (test_rank == 0) {
        int attached_size = LONG + SHORT + 2 * MPI_BSEND_OVERHEAD;
        void *attached = test_malloc((size_t)attached_size);
        CHECK_MPI(MPI_Buffer_attach(attached, attached_size));
        unsigned char *small = test_malloc(SHORT), *big = test_malloc(LONG);
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Bsend_init(small, SHORT, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Bsend_init(big, LONG, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &reqs[1]));
        for (int round = 0; round < 3; round++) {
            fill_pattern(small, SHORT, message_seed(0, 1, 200 + round));
            fill_pattern(big, LONG, message_seed(0, 1, 300 + round));
            CHECK_MPI(MPI_Startall(2, reqs));
            /* Buffered sends complete locally: rank 1 has posted nothing yet. */
            CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
            /* Our buffers are ours again; scribbling on them must not reach rank 1. */
            memset(small, 0, SHORT);
            memset(big, 0, LONG);
            CHECK_MPI(MPI_Send(&round, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD));
            int ack;
            CHECK_MPI(MPI_Recv(&ack, 1, MPI_INT, 1, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        CHECK_MPI(MPI_Request_free(&reqs[0]));
        CHECK_MPI(MPI_Request_free(&reqs[1]));
        void *detached = NULL;
        int detached_size = 0;
        CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
        CHECK(detached == attached && detached_size == attached_size,
              "Buffer_detach gave back %p (%d bytes), attached %p (%d bytes)", detached,
              detached_size, attached, attached_size);
        free(attached);
        free(small);
        free(big);
    } else {
        unsigned char *small = test_malloc(SHORT), *big = test_malloc(LONG);
        for (int round = 0; round < 3; round++) {
            int go;
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(small, SHORT, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Recv(big, LONG, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_PATTERN(small, SHORT, message_seed(0, 1, 200 + round), "Bsend_init short, round %d", round);
            CHECK_PATTERN(big, LONG, message_seed(0, 1, 300 + round), "Bsend_init long, round %d", round);
            CHECK_MPI(MPI_Send(&round, 1, MPI_INT, 0, TAG_SYNC, MPI_COMM_WORLD));
        }
        free(small);
        free(big);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    if (test_rank < 2) {
        start_wait_loop(SHORT);
        start_wait_loop(LONG);
        startall_exchange();
        ssend_init();
        rsend_init();
        bsend_init();
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
