/*
 * any_source: several threads of one rank receive from one communicator at once, and one
 * thread completes requests others posted.
 *
 *  1. Every rank sends MSGS messages (tags 0..MSGS-1, payload naming sender and tag) to
 *     rank 0 on one communicator, from two sender threads; rank 0 receives them with three
 *     threads at once, by MPI_Recv(MPI_ANY_SOURCE, MPI_ANY_TAG), MPI_Mprobe + MPI_Mrecv, and
 *     (on a second communicator that only it receives from, beside the other two)
 *     MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG) + MPI_Recv of what it found: each message is
 *     received exactly once, with its status right.
 *  2. Threads post MPI_Irecv and MPI_Isend into one array; after they are joined, the main
 *     thread completes them with MPI_Waitany, then MPI_Waitsome, then MPI_Waitall.
 *  3. One thread loops over blocking collectives on one communicator while another does a
 *     ping-pong on another; the collectives' user-defined reduction calls MPI itself (a call
 *     nested in the one that runs it, on the thread that holds the library's lock).
 */
#define TEST_NAME "any_source"
#include "mpitest.h"
#include <pthread.h>

#define MSGS 48 /* per sender rank, divisible by 2 senders */
#define RECEIVERS 3

static MPI_Comm comm, probe_comm;
#define PROBED 2 /* messages per rank for the probing thread */
static int got[64][MSGS], got_probed[64][PROBED];
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;

static void record(const int *payload, const MPI_Status *st)
{
    CHECK(payload[0] == st->MPI_SOURCE && payload[1] == st->MPI_TAG,
          "payload (%d, %d) but status (%d, %d)", payload[0], payload[1], st->MPI_SOURCE, st->MPI_TAG);
    CHECK(payload[0] >= 0 && payload[0] < test_size && payload[1] >= 0 && payload[1] < MSGS,
          "payload (%d, %d)", payload[0], payload[1]);
    CHECK(payload[2] == payload[0] * 1000 + payload[1], "payload check word %d", payload[2]);
    pthread_mutex_lock(&got_lock);
    got[payload[0]][payload[1]]++;
    pthread_mutex_unlock(&got_lock);
}

/* How many messages each receiver thread takes. */
static int quota[RECEIVERS];

static void *receiver(void *arg)
{
    int r = (int)(intptr_t)arg;
    int payload[3];
    MPI_Status st;
    for (int i = 0; i < quota[r]; i++) {
        if (r == 0) {
            CHECK_MPI(MPI_Recv(payload, 3, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &st));
        } else if (r == 1) {
            MPI_Message m;
            CHECK_MPI(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &m, &st));
            MPI_Status st2;
            CHECK_MPI(MPI_Mrecv(payload, 3, MPI_INT, &m, &st2));
            CHECK(st2.MPI_SOURCE == st.MPI_SOURCE && st2.MPI_TAG == st.MPI_TAG, "Mrecv status");
        } else {
            /* The only receiver of probe_comm: what it probes is what it then receives. */
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, probe_comm, &st));
            int src = st.MPI_SOURCE, tag = st.MPI_TAG;
            CHECK_MPI(MPI_Recv(payload, 3, MPI_INT, src, tag, probe_comm, &st));
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && payload[0] == src && payload[1] == tag,
                  "probed (%d, %d), received (%d, %d)", src, tag, payload[0], payload[1]);
            CHECK(tag >= 0 && tag < PROBED && payload[2] == -src, "probed message (%d, %d, %d)", src, tag, payload[2]);
            pthread_mutex_lock(&got_lock);
            got_probed[src][tag]++;
            pthread_mutex_unlock(&got_lock);
            continue;
        }
        record(payload, &st);
    }
    return NULL;
}

static void *sender(void *arg)
{
    int half = (int)(intptr_t)arg;
    for (int tag = half; tag < MSGS; tag += 2) {
        int payload[3] = {test_rank, tag, test_rank * 1000 + tag};
        CHECK_MPI(MPI_Send(payload, 3, MPI_INT, 0, tag, comm));
    }
    return NULL;
}

/* Part 1's messages for the probing thread of rank 0. */
static void *probe_target_sender(void *arg)
{
    (void)arg;
    for (int tag = 0; tag < PROBED; tag++) {
        int payload[3] = {test_rank, tag, -test_rank};
        CHECK_MPI(MPI_Send(payload, 3, MPI_INT, 0, tag, probe_comm));
    }
    return NULL;
}

static void part1(void)
{
    memset(got, 0, sizeof got);
    memset(got_probed, 0, sizeof got_probed);
    int total = test_size * MSGS;
    quota[0] = total / 2;
    quota[1] = total - quota[0];
    quota[2] = PROBED * test_size;
    pthread_t s[3], r[RECEIVERS];
    CHECK(pthread_create(&s[0], NULL, sender, (void *)0) == 0, "pthread_create");
    CHECK(pthread_create(&s[1], NULL, sender, (void *)1) == 0, "pthread_create");
    CHECK(pthread_create(&s[2], NULL, probe_target_sender, NULL) == 0, "pthread_create");
    if (test_rank == 0)
        for (int i = 0; i < RECEIVERS; i++)
            CHECK(pthread_create(&r[i], NULL, receiver, (void *)(intptr_t)i) == 0, "pthread_create");
    for (int i = 0; i < 3; i++)
        pthread_join(s[i], NULL);
    if (test_rank == 0) {
        for (int i = 0; i < RECEIVERS; i++)
            pthread_join(r[i], NULL);
        for (int src = 0; src < test_size; src++)
            for (int tag = 0; tag < MSGS; tag++)
                CHECK(got[src][tag] == 1, "message (%d, %d) received %d times", src, tag, got[src][tag]);
        for (int src = 0; src < test_size; src++)
            for (int tag = 0; tag < PROBED; tag++)
                CHECK(got_probed[src][tag] == 1, "probed message (%d, %d) received %d times", src,
                      tag, got_probed[src][tag]);
    }
    CHECK_MPI(MPI_Barrier(comm));
}

#define SLOTS 8
static MPI_Request reqs[2 * SLOTS];
static int inbox[SLOTS], outbox[SLOTS];

static void *poster(void *arg)
{
    int k = (int)(intptr_t)arg; /* posts slots k, k+2, ... */
    int peer = (test_rank + 1) % test_size, from = (test_rank + test_size - 1) % test_size;
    for (int i = k; i < SLOTS; i += 2) {
        outbox[i] = test_rank * 100 + i;
        CHECK_MPI(MPI_Irecv(&inbox[i], 1, MPI_INT, from, 500 + i, MPI_COMM_WORLD, &reqs[i]));
        CHECK_MPI(MPI_Isend(&outbox[i], 1, MPI_INT, peer, 500 + i, MPI_COMM_WORLD, &reqs[SLOTS + i]));
    }
    return NULL;
}

static void part2(void)
{
    pthread_t p[2];
    for (int k = 0; k < 2; k++)
        CHECK(pthread_create(&p[k], NULL, poster, (void *)(intptr_t)k) == 0, "pthread_create");
    for (int k = 0; k < 2; k++)
        pthread_join(p[k], NULL);
    int from = (test_rank + test_size - 1) % test_size;
    /* Waitany for the first half, Waitsome for the rest of the receives, Waitall for all. */
    for (int n = 0; n < SLOTS / 2; n++) {
        int idx;
        MPI_Status st;
        CHECK_MPI(MPI_Waitany(SLOTS, reqs, &idx, &st));
        CHECK(idx >= 0 && idx < SLOTS, "Waitany index %d", idx);
        CHECK(inbox[idx] == from * 100 + idx, "slot %d has %d", idx, inbox[idx]);
    }
    int left = SLOTS / 2;
    while (left > 0) {
        int outcount, idx[SLOTS];
        CHECK_MPI(MPI_Waitsome(SLOTS, reqs, &outcount, idx, MPI_STATUSES_IGNORE));
        CHECK(outcount >= 1 && outcount <= left, "Waitsome outcount %d", outcount);
        for (int j = 0; j < outcount; j++)
            CHECK(inbox[idx[j]] == from * 100 + idx[j], "slot %d", idx[j]);
        left -= outcount;
    }
    CHECK_MPI(MPI_Waitall(2 * SLOTS, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 2 * SLOTS; i++)
        CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
}

static MPI_Comm coll_comm, p2p_comm;
static MPI_Op nested_sum;

/* A sum that asks MPI something on every call (a nested call). */
static void sum_asking_mpi(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int size = 0;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size == test_size, "nested MPI_Comm_size says %d", size);
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void *collectives(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100; i++) {
        int in = i + test_rank, sum;
        CHECK_MPI(MPI_Allreduce(&in, &sum, 1, MPI_INT, MPI_SUM, coll_comm));
        CHECK(sum == test_size * i + test_size * (test_size - 1) / 2, "allreduce %d", sum);
        CHECK_MPI(MPI_Barrier(coll_comm));
        int nested;
        CHECK_MPI(MPI_Allreduce(&in, &nested, 1, MPI_INT, nested_sum, coll_comm));
        CHECK(nested == sum, "user-op allreduce %d, not %d", nested, sum);
    }
    return NULL;
}

static void *pingpong(void *arg)
{
    (void)arg;
    int partner = test_rank ^ 1;
    if (partner >= test_size)
        return NULL;
    for (int i = 0; i < 100; i++) {
        int v = test_rank * 1000 + i, w = -1;
        CHECK_MPI(MPI_Sendrecv(&v, 1, MPI_INT, partner, i, &w, 1, MPI_INT, partner, i, p2p_comm,
                               MPI_STATUS_IGNORE));
        CHECK(w == partner * 1000 + i, "sendrecv got %d", w);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    test_init_multiple(&argc, &argv);
    CHECK(test_size <= 24, "at most 24 ranks");
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &probe_comm));
    for (int round = 0; round < 3; round++)
        part1();
    part2();
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &coll_comm));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm));
    CHECK_MPI(MPI_Op_create(sum_asking_mpi, 1, &nested_sum));
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, collectives, NULL) == 0, "pthread_create");
    CHECK(pthread_create(&b, NULL, pingpong, NULL) == 0, "pthread_create");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    CHECK_MPI(MPI_Op_free(&nested_sum));
    CHECK_MPI(MPI_Comm_free(&coll_comm));
    CHECK_MPI(MPI_Comm_free(&p2p_comm));
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Comm_free(&probe_comm));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
