/*
 * lanes_self: 4 threads per rank, each on a duplicate of MPI_COMM_WORLD of its own (its own
 * lane under MPI_LANES=4), send to their own rank. On a lane, a message to the own process
 * lands in the lane's matching at once, without the shared channel (mpich-channel's lanes):
 * this checks what that must keep. Per round, on every thread at once:
 *   - order: MPI_Isend of 8 B, 200 KiB (rendezvous), 8 B, 0 B, 64 KiB with one tag, then the
 *     receives in that order: each gets its own message (MPI's non-overtaking rule);
 *   - posted first: MPI_Irecv, then MPI_Send and MPI_Ssend to self (MPI_Ssend completes once
 *     matched);
 *   - unexpected: MPI_Isend (eager and rendezvous), then MPI_Probe (size from the status),
 *     then MPI_Recv; MPI_ANY_SOURCE/MPI_ANY_TAG receives;
 *   - MPI_Sendrecv and MPI_Sendrecv_replace with the own rank;
 *   - a cancelled MPI_Irecv that nothing matches.
 * Every byte and status is checked.
 */
#define TEST_NAME "lanes_self"
#include "mpitest.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 30
#define BIG (200 * 1024)

static MPI_Comm comms[THREADS];

static const size_t order_sizes[] = {8, BIG, 8, 0, 64 * 1024};
#define ORDER_N ((int)(sizeof order_sizes / sizeof order_sizes[0]))

static void check_status(const MPI_Status *st, int tag, size_t bytes, const char *what, int t, int i)
{
    CHECK(st->MPI_SOURCE == test_rank, "%s (thread %d round %d): source %d, expected %d", what, t, i,
          st->MPI_SOURCE, test_rank);
    CHECK(st->MPI_TAG == tag, "%s (thread %d round %d): tag %d, expected %d", what, t, i, st->MPI_TAG, tag);
    CHECK(status_bytes(st) == (int)bytes, "%s (thread %d round %d): %d bytes, expected %zu", what, t, i,
          status_bytes(st), bytes);
}

static void order(MPI_Comm c, int t, int i, unsigned char **out, unsigned char *in)
{
    MPI_Request req[ORDER_N];
    for (int k = 0; k < ORDER_N; k++) {
        fill_pattern(out[k], order_sizes[k], message_seed(t, i, k));
        CHECK_MPI(MPI_Isend(out[k], (int)order_sizes[k], MPI_BYTE, test_rank, 7, c, &req[k]));
    }
    for (int k = 0; k < ORDER_N; k++) {
        MPI_Status st;
        CHECK_MPI(MPI_Recv(in, BIG, MPI_BYTE, test_rank, 7, c, &st));
        check_status(&st, 7, order_sizes[k], "in order", t, i);
        CHECK_PATTERN(in, order_sizes[k], message_seed(t, i, k), "message %d in order (thread %d round %d)",
                      k, t, i);
    }
    CHECK_MPI(MPI_Waitall(ORDER_N, req, MPI_STATUSES_IGNORE));
}

static void posted_first(MPI_Comm c, int t, int i, unsigned char *out, unsigned char *in)
{
    for (int sync = 0; sync < 2; sync++) {
        size_t bytes = (i % 3 == 2) ? BIG : 8 + (size_t)i;
        MPI_Request r;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(in, BIG, MPI_BYTE, test_rank, 20 + sync, c, &r));
        fill_pattern(out, bytes, message_seed(t, i, 100 + sync));
        if (sync)
            CHECK_MPI(MPI_Ssend(out, (int)bytes, MPI_BYTE, test_rank, 21, c));
        else
            CHECK_MPI(MPI_Send(out, (int)bytes, MPI_BYTE, test_rank, 20, c));
        CHECK_MPI(MPI_Wait(&r, &st));
        check_status(&st, 20 + sync, bytes, sync ? "Ssend to self" : "Send to self", t, i);
        CHECK_PATTERN(in, bytes, message_seed(t, i, 100 + sync), "posted first (thread %d round %d)", t, i);
    }
}

static void unexpected(MPI_Comm c, int t, int i, unsigned char *out, unsigned char *in)
{
    size_t bytes = (i % 2) ? BIG : 24;
    MPI_Request r;
    MPI_Status st;
    fill_pattern(out, bytes, message_seed(t, i, 200));
    CHECK_MPI(MPI_Isend(out, (int)bytes, MPI_BYTE, test_rank, 30 + i, c, &r));
    CHECK_MPI(MPI_Probe(test_rank, 30 + i, c, &st));
    check_status(&st, 30 + i, bytes, "probe", t, i);
    CHECK_MPI(MPI_Recv(in, status_bytes(&st), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st));
    check_status(&st, 30 + i, bytes, "any source, any tag", t, i);
    CHECK_PATTERN(in, bytes, message_seed(t, i, 200), "unexpected (thread %d round %d)", t, i);
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
}

static void sendrecv(MPI_Comm c, int t, int i, unsigned char *out, unsigned char *in)
{
    size_t bytes = (i % 4 == 3) ? BIG : 16;
    MPI_Status st;
    fill_pattern(out, bytes, message_seed(t, i, 300));
    CHECK_MPI(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, test_rank, 40, in, BIG, MPI_BYTE, test_rank, 40, c, &st));
    check_status(&st, 40, bytes, "Sendrecv", t, i);
    CHECK_PATTERN(in, bytes, message_seed(t, i, 300), "Sendrecv (thread %d round %d)", t, i);
    fill_pattern(out, bytes, message_seed(t, i, 301));
    CHECK_MPI(MPI_Sendrecv_replace(out, (int)bytes, MPI_BYTE, test_rank, 41, test_rank, 41, c, &st));
    check_status(&st, 41, bytes, "Sendrecv_replace", t, i);
    CHECK_PATTERN(out, bytes, message_seed(t, i, 301), "Sendrecv_replace (thread %d round %d)", t, i);
}

static void cancelled(MPI_Comm c, int t, int i, unsigned char *in)
{
    MPI_Request r;
    MPI_Status st;
    int flag = 0;
    CHECK_MPI(MPI_Irecv(in, 8, MPI_BYTE, test_rank, 99, c, &r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "thread %d round %d: an MPI_Irecv nothing matched was not cancelled", t, i);
}

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm c = comms[t];
    unsigned char *out[ORDER_N], *in = test_malloc(BIG);
    for (int k = 0; k < ORDER_N; k++)
        out[k] = test_malloc(BIG);
    for (int i = 0; i < ROUNDS; i++) {
        order(c, t, i, out, in);
        posted_first(c, t, i, out[0], in);
        unexpected(c, t, i, out[0], in);
        sendrecv(c, t, i, out[0], in);
        if (i % 10 == 0)
            cancelled(c, t, i, in);
    }
    for (int k = 0; k < ORDER_N; k++)
        free(out[k]);
    free(in);
    return NULL;
}

int main(int argc, char **argv)
{
    test_init_multiple(&argc, &argv);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    test_ok();
    MPI_Finalize();
    return 0;
}
