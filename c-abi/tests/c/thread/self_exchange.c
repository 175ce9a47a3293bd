/*
 * self_exchange: MPI_THREAD_MULTIPLE is granted and reported; threads of one rank exchange
 * messages with each other through MPI_COMM_SELF and through their own rank in
 * MPI_COMM_WORLD, in the pattern that deadlocks if a blocking call holds the library's lock
 * while it waits: thread A's MPI_Recv waits for the message thread B sends only after B's
 * own blocking receive has completed (small messages, and 1 MiB ones that need the
 * receiver). Every byte is checked.
 */
#define TEST_NAME "self_exchange"
#include "mpitest.h"
#include <pthread.h>

#define ROUNDS 200
#define BIG (1 << 20)

struct pair {
    MPI_Comm comm;
    int peer; /* the rank both threads talk to: their own */
    int first; /* 1: receives first */
    size_t bytes;
};

static void *ping(void *arg)
{
    struct pair *p = arg;
    unsigned char *buf = test_malloc(p->bytes);
    for (int i = 0; i < ROUNDS; i++) {
        MPI_Status st;
        uint32_t mine = message_seed(p->first, i, (int)p->bytes);
        uint32_t theirs = message_seed(!p->first, i, (int)p->bytes);
        if (p->first) {
            CHECK_MPI(MPI_Recv(buf, (int)p->bytes, MPI_BYTE, p->peer, 1, p->comm, &st));
            CHECK_PATTERN(buf, p->bytes, theirs, "round %d", i);
            CHECK(status_bytes(&st) == (int)p->bytes, "count %d", status_bytes(&st));
            fill_pattern(buf, p->bytes, mine);
            CHECK_MPI(MPI_Send(buf, (int)p->bytes, MPI_BYTE, p->peer, 2, p->comm));
        } else {
            fill_pattern(buf, p->bytes, mine);
            CHECK_MPI(MPI_Send(buf, (int)p->bytes, MPI_BYTE, p->peer, 1, p->comm));
            CHECK_MPI(MPI_Recv(buf, (int)p->bytes, MPI_BYTE, p->peer, 2, p->comm, &st));
            CHECK_PATTERN(buf, p->bytes, theirs, "round %d", i);
        }
    }
    free(buf);
    return NULL;
}

static void *not_main(void *arg)
{
    int *flag = arg;
    CHECK_MPI(MPI_Is_thread_main(flag));
    return NULL;
}

static void exchange(MPI_Comm comm, int peer, size_t bytes)
{
    struct pair a = {comm, peer, 1, bytes}, b = {comm, peer, 0, bytes};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, ping, &a) == 0, "pthread_create");
    CHECK(pthread_create(&tb, NULL, ping, &b) == 0, "pthread_create");
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    int level = -1, is_main = -1, other = -1;
    CHECK_MPI(MPI_Query_thread(&level));
    CHECK(level == MPI_THREAD_MULTIPLE, "MPI_Query_thread says %d", level);
    CHECK_MPI(MPI_Is_thread_main(&is_main));
    CHECK(is_main == 1, "the thread that called MPI_Init_thread is the main one");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, not_main, &other) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(other == 0, "another thread is not the main one (%d)", other);

    exchange(MPI_COMM_SELF, 0, 64);
    exchange(MPI_COMM_WORLD, test_rank, 64);
    exchange(MPI_COMM_SELF, 0, BIG);
    exchange(MPI_COMM_WORLD, test_rank, BIG);
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
