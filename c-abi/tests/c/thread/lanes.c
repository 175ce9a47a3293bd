/*
 * lanes: 4 threads per rank, each on a duplicate of MPI_COMM_WORLD of its own (consecutive
 * duplicates route to different lanes under MPI_THREAD_MULTIPLE, runtime::lanes), at once:
 * ping-pongs with the partner rank (rank ^ 1) of eager (8 bytes) and rendezvous (256 KiB)
 * sizes, MPI_Sendrecv, MPI_Ssend, an MPI_ANY_SOURCE/MPI_ANY_TAG receive after MPI_Probe and
 * MPI_Iprobe, MPI_Isend/MPI_Irecv windows completed by MPI_Waitall and MPI_Test, a cancelled
 * unmatched MPI_Isend, and an MPI_Allreduce on the same communicator between rounds (its
 * collective context is lane 0's) while the other threads do point-to-point. Then the main
 * thread completes requests of every communicator (several lanes) in one MPI_Waitall and
 * one MPI_Waitany loop. Every byte is checked. With MPI_T it reads MPI_LANES (the lanes in
 * use) and, when there are several, checks that the pvar mpi_lane_calls counted calls.
 */
#define TEST_NAME "lanes"
#include "mpitest.h"
#include <pthread.h>
#include <sched.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 40
#define BIG (256 * 1024)
#define WINDOW 8
/* How long a polling loop (MPI_Test, MPI_Iprobe; each yields the core between polls: 4 ranks
 * of 5 threads share 2 cores) may wait before the test fails. */
#define LIMIT_S 20
#include "lanes_common.h"

static MPI_Comm comms[THREADS];

static void ping_pong(MPI_Comm c, int t, int i, unsigned char *buf, size_t bytes, int partner)
{
    uint32_t seed = message_seed(test_rank, t, i), back = message_seed(partner, t, i);
    if (test_rank % 2 == 0) {
        fill_pattern(buf, bytes, seed);
        CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, i, c));
        CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, i, c, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, i, c, MPI_STATUS_IGNORE));
        CHECK_PATTERN(buf, bytes, back, "thread %d round %d (ping)", t, i);
        fill_pattern(buf, bytes, seed);
        CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, i, c));
        return;
    }
    CHECK_PATTERN(buf, bytes, back, "thread %d round %d (pong)", t, i);
}

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    MPI_Comm c = comms[t];
    int partner = test_rank ^ 1;
    unsigned char *buf = test_malloc(BIG), *other = test_malloc(BIG);
    for (int i = 0; i < ROUNDS && partner < test_size; i++) {
        size_t bytes = (i % 8 == 7) ? BIG : 8;
        ping_pong(c, t, i, buf, bytes, partner);

        /* MPI_Sendrecv both ways at once. */
        fill_pattern(buf, bytes, message_seed(test_rank, t, 1000 + i));
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(buf, (int)bytes, MPI_BYTE, partner, 1000 + i, other, (int)bytes,
                               MPI_BYTE, partner, 1000 + i, c, &st));
        CHECK(st.MPI_SOURCE == partner && status_bytes(&st) == (int)bytes, "sendrecv status");
        CHECK_PATTERN(other, bytes, message_seed(partner, t, 1000 + i), "thread %d sendrecv %d", t, i);

        /* Synchronous send; ANY_SOURCE/ANY_TAG receive found by MPI_Probe / MPI_Iprobe. */
        if (test_rank % 2 == 0) {
            fill_pattern(buf, 8, message_seed(test_rank, t, 2000 + i));
            CHECK_MPI(MPI_Ssend(buf, 8, MPI_BYTE, partner, 2000 + i, c));
        } else {
            probe_for(MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st, i % 2);
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == 2000 + i, "probe %d/%d", st.MPI_SOURCE, st.MPI_TAG);
            CHECK_MPI(MPI_Recv(buf, 8, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &st));
            CHECK(st.MPI_TAG == 2000 + i, "any-tag receive tag %d", st.MPI_TAG);
            CHECK_PATTERN(buf, 8, message_seed(partner, t, 2000 + i), "thread %d ssend %d", t, i);
        }

        /* A window of nonblocking messages, completed by MPI_Waitall (even) or MPI_Test. */
        MPI_Request reqs[WINDOW];
        unsigned char win[WINDOW][8];
        for (int w = 0; w < WINDOW; w++) {
            if (test_rank % 2 == 0) {
                fill_pattern(win[w], 8, message_seed(test_rank, t, 3000 + w));
                CHECK_MPI(MPI_Isend(win[w], 8, MPI_BYTE, partner, 3000 + w, c, &reqs[w]));
            } else {
                CHECK_MPI(MPI_Irecv(win[w], 8, MPI_BYTE, partner, 3000 + w, c, &reqs[w]));
            }
        }
        if (i % 2 == 0) {
            CHECK_MPI(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE));
        } else {
            for (int w = 0; w < WINDOW; w++) {
                int done = 0;
                double start = MPI_Wtime();
                for (;;) {
                    CHECK_MPI(MPI_Test(&reqs[w], &done, MPI_STATUS_IGNORE));
                    if (done)
                        break;
                    CHECK(MPI_Wtime() - start < LIMIT_S, "MPI_Test did not complete request %d in %d s", w, LIMIT_S);
                    sched_yield();
                }
            }
        }
        if (test_rank % 2 == 1)
            for (int w = 0; w < WINDOW; w++)
                CHECK_PATTERN(win[w], 8, message_seed(partner, t, 3000 + w), "thread %d window %d", t, w);

        /* A collective on this communicator (lane 0) between the point-to-point rounds. */
        if (i % 10 == 0) {
            long in = test_rank + t, sum = 0;
            CHECK_MPI(MPI_Allreduce(&in, &sum, 1, MPI_LONG, MPI_SUM, c));
            long want = (long)test_size * (test_size - 1) / 2 + (long)test_size * t;
            CHECK(sum == want, "thread %d allreduce %ld, not %ld", t, sum, want);
        }
    }

    /* Cancel an Isend nobody receives (tag 9999): it must be cancelled. */
    if (partner < test_size) {
        MPI_Request r;
        CHECK_MPI(MPI_Isend(buf, 8, MPI_BYTE, partner, 9999, c, &r));
        CHECK_MPI(MPI_Cancel(&r));
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&r, &st));
        int cancelled = 0;
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "thread %d: the unmatched send was not cancelled", t);
        CHECK_MPI(MPI_Barrier(c));
        int flag = 1;
        CHECK_MPI(MPI_Iprobe(partner, 9999, c, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "thread %d: a cancelled message arrived", t);
    }
    free(buf);
    free(other);
    return NULL;
}

/* Requests of every communicator (every lane) in one MPI_Waitall, then in MPI_Waitany. */
static void several_lanes(void)
{
    int partner = test_rank ^ 1;
    if (partner >= test_size)
        return;
    for (int round = 0; round < 2; round++) {
        MPI_Request reqs[2 * THREADS];
        unsigned char out[THREADS][64], in[THREADS][64];
        for (int t = 0; t < THREADS; t++) {
            size_t n = 64;
            fill_pattern(out[t], n, message_seed(test_rank, t, 4000 + round));
            CHECK_MPI(MPI_Irecv(in[t], (int)n, MPI_BYTE, partner, 4000 + round, comms[t], &reqs[2 * t]));
            CHECK_MPI(MPI_Isend(out[t], (int)n, MPI_BYTE, partner, 4000 + round, comms[t], &reqs[2 * t + 1]));
        }
        if (round == 0) {
            MPI_Status st[2 * THREADS];
            CHECK_MPI(MPI_Waitall(2 * THREADS, reqs, st));
            for (int t = 0; t < THREADS; t++)
                CHECK(st[2 * t].MPI_SOURCE == partner && st[2 * t].MPI_TAG == 4000, "waitall status %d", t);
        } else {
            for (int k = 0; k < 2 * THREADS; k++) {
                int index = -1;
                CHECK_MPI(MPI_Waitany(2 * THREADS, reqs, &index, MPI_STATUS_IGNORE));
                CHECK(index >= 0 && index < 2 * THREADS && reqs[index] == MPI_REQUEST_NULL, "waitany index %d", index);
            }
            int index = 0;
            CHECK_MPI(MPI_Waitany(2 * THREADS, reqs, &index, MPI_STATUS_IGNORE));
            CHECK(index == MPI_UNDEFINED, "waitany over nothing active: %d", index);
        }
        for (int t = 0; t < THREADS; t++)
            CHECK_PATTERN(in[t], 64, message_seed(partner, t, 4000 + round), "several lanes, comm %d", t);
    }
}

int main(int argc, char **argv)
{
    test_init_multiple(&argc, &argv);
    int tprov;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov));
    unsigned long long lanes = lanes_checked();
    /* The calls that run on lanes other than 0, counted from here on (pvar mpi_lane_calls). */
    lane_counter counter = counter_open("mpi_lane_calls");
    counter_start(&counter);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    several_lanes();
    unsigned long long calls = counter_close(&counter);
    if (lanes > 1 && test_size > 1)
        CHECK(calls > 0, "no call ran on a lane other than 0 (lane_calls %llu)", calls);
    if (lanes == 1)
        CHECK(calls == 0, "%llu calls ran on lanes with one lane", calls);
    if (test_rank == 0)
        printf("# lanes %llu, calls on lanes other than 0: %llu\n", lanes, calls);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    CHECK_MPI(MPI_T_finalize());
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
