/*
 * lanes_tags: 4 threads per rank on ONE communicator, each thread on tags of its own
 * (issue 16). The communicator is MPI_COMM_WORLD duplicated with MPI_Comm_dup_with_info and
 * the assertion mpi_assert_no_any_tag=true (unless ASSERT_NO_ANY_TAG=0: then plain info, and
 * the same program runs with lanes by communicator), so under MPI_THREAD_MULTIPLE with
 * MPI_LANES > 1 each message runs on the lane of its (context, tag) at both ends.
 * Each thread, with the partner rank (rank ^ 1), at once with the others: ping-pongs of
 * eager (8 bytes) and rendezvous (256 KiB) sizes, an MPI_Sendrecv whose send tag and receive
 * tag are different (possibly on two lanes), MPI_Ssend received after MPI_Probe or MPI_Iprobe
 * with the tag, MPI_Isend/MPI_Irecv windows completed by MPI_Waitall or MPI_Test, and a
 * cancelled unmatched MPI_Isend (its cancel request and answer ride its tag's lane). Every
 * byte is checked. Before the threads start: MPI_Comm_get_info reports the assertion, and
 * under MPI_ERRORS_RETURN MPI_Recv, MPI_Irecv, MPI_Probe, MPI_Iprobe and MPI_Improbe with
 * MPI_ANY_TAG return MPI_ERR_TAG (with the assertion only). With MPI_T: the pvar
 * mpi_lanes_used (lanes other than 0 that ran calls) shows several lanes with the assertion
 * and MPI_LANES=4, at most one without it, none with MPI_LANES=1.
 */
#define TEST_NAME "lanes_tags"
#include "mpitest.h"
#include <pthread.h>
#include <sched.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 40
#define BIG (256 * 1024)
#define WINDOW 8
/* How long a polling loop (each poll yields the core: 4 ranks of 5 threads share 2 cores)
 * may wait before the test fails. */
#define LIMIT_S 20
#include "lanes_common.h"

static MPI_Comm comm;

/* Thread t's tags: its own, and a second one for MPI_Sendrecv's other direction. */
static int tag_of(int t) { return 10 + t; }
static int other_tag_of(int t) { return 101 + 7 * t; }

static void ping_pong(int t, int i, unsigned char *buf, size_t bytes, int partner)
{
    int tag = tag_of(t);
    uint32_t seed = message_seed(test_rank, t, i), back = message_seed(partner, t, i);
    if (test_rank % 2 == 0) {
        fill_pattern(buf, bytes, seed);
        CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, tag, comm));
        MPI_Status st;
        CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, tag, comm, &st));
        CHECK(st.MPI_TAG == tag && status_bytes(&st) == (int)bytes, "thread %d pong status", t);
        CHECK_PATTERN(buf, bytes, back, "thread %d round %d (pong)", t, i);
    } else {
        CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, partner, tag, comm, MPI_STATUS_IGNORE));
        CHECK_PATTERN(buf, bytes, back, "thread %d round %d (ping)", t, i);
        fill_pattern(buf, bytes, seed);
        CHECK_MPI(MPI_Send(buf, (int)bytes, MPI_BYTE, partner, tag, comm));
    }
}

static void wait_polling(MPI_Request *r, int t, const char *what)
{
    int done = 0;
    double start = MPI_Wtime();
    for (;;) {
        CHECK_MPI(MPI_Test(r, &done, MPI_STATUS_IGNORE));
        if (done)
            return;
        CHECK(MPI_Wtime() - start < LIMIT_S, "thread %d: MPI_Test did not complete %s in %d s", t, what, LIMIT_S);
        sched_yield();
    }
}

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg, tag = tag_of(t);
    int partner = test_rank ^ 1;
    unsigned char *buf = test_malloc(BIG), *other = test_malloc(BIG);
    for (int i = 0; i < ROUNDS && partner < test_size; i++) {
        size_t bytes = (i % 8 == 7) ? BIG : 8;
        ping_pong(t, i, buf, bytes, partner);

        /* MPI_Sendrecv both ways at once, each direction on its own tag. */
        int stag = test_rank % 2 == 0 ? tag : other_tag_of(t);
        int rtag = test_rank % 2 == 0 ? other_tag_of(t) : tag;
        fill_pattern(buf, bytes, message_seed(test_rank, t, 1000 + i));
        MPI_Status st;
        CHECK_MPI(MPI_Sendrecv(buf, (int)bytes, MPI_BYTE, partner, stag, other, (int)bytes, MPI_BYTE,
                               partner, rtag, comm, &st));
        CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == rtag && status_bytes(&st) == (int)bytes,
              "thread %d sendrecv status", t);
        CHECK_PATTERN(other, bytes, message_seed(partner, t, 1000 + i), "thread %d sendrecv %d", t, i);

        /* Synchronous send, found by MPI_Probe / MPI_Iprobe with the tag. */
        if (test_rank % 2 == 0) {
            fill_pattern(buf, bytes, message_seed(test_rank, t, 2000 + i));
            CHECK_MPI(MPI_Ssend(buf, (int)bytes, MPI_BYTE, partner, tag, comm));
        } else {
            probe_for(i % 4 == 1 ? MPI_ANY_SOURCE : partner, tag, comm, &st, i % 2);
            CHECK(st.MPI_SOURCE == partner && st.MPI_TAG == tag && status_bytes(&st) == (int)bytes,
                  "thread %d probe %d/%d", t, st.MPI_SOURCE, st.MPI_TAG);
            CHECK_MPI(MPI_Recv(buf, (int)bytes, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &st));
            CHECK_PATTERN(buf, bytes, message_seed(partner, t, 2000 + i), "thread %d ssend %d", t, i);
        }

        /* A window of nonblocking messages on the thread's tag, matched in order. */
        MPI_Request reqs[WINDOW];
        unsigned char win[WINDOW][8];
        for (int w = 0; w < WINDOW; w++) {
            if (test_rank % 2 == 0) {
                fill_pattern(win[w], 8, message_seed(test_rank, t, 3000 + w));
                CHECK_MPI(MPI_Isend(win[w], 8, MPI_BYTE, partner, tag, comm, &reqs[w]));
            } else {
                CHECK_MPI(MPI_Irecv(win[w], 8, MPI_BYTE, partner, tag, comm, &reqs[w]));
            }
        }
        if (i % 2 == 0) {
            CHECK_MPI(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE));
        } else {
            for (int w = 0; w < WINDOW; w++)
                wait_polling(&reqs[w], t, "a window's request");
        }
        if (test_rank % 2 == 1)
            for (int w = 0; w < WINDOW; w++)
                CHECK_PATTERN(win[w], 8, message_seed(partner, t, 3000 + w), "thread %d window %d", t, w);
    }

    /* Cancel an Isend nobody receives (a tag of its own): it must be cancelled. */
    if (partner < test_size) {
        MPI_Request r;
        CHECK_MPI(MPI_Isend(buf, 8, MPI_BYTE, partner, 5000 + t, comm, &r));
        CHECK_MPI(MPI_Cancel(&r));
        MPI_Status st;
        CHECK_MPI(MPI_Wait(&r, &st));
        int cancelled = 0;
        CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
        CHECK(cancelled, "thread %d: the unmatched send was not cancelled", t);
    }
    free(buf);
    free(other);
    return NULL;
}

/* MPI_ANY_TAG on the communicator: MPI_ERR_TAG with the assertion, for every receive and
 * probe (none reaches the engine, so nothing is consumed). */
static void any_tag_refused(int asserted)
{
    CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    int flag = 0, cls = 0, x = 0;
    MPI_Request r;
    MPI_Message m;
    MPI_Status st;
    if (asserted) {
        int rc[5];
        rc[0] = MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, comm, MPI_STATUS_IGNORE);
        rc[1] = MPI_Irecv(&x, 1, MPI_INT, 0, MPI_ANY_TAG, comm, &r);
        rc[2] = MPI_Probe(MPI_PROC_NULL, MPI_ANY_TAG, comm, &st);
        rc[3] = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st);
        rc[4] = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &m, &st);
        for (int k = 0; k < 5; k++) {
            CHECK(rc[k] != MPI_SUCCESS, "call %d with MPI_ANY_TAG succeeded despite the assertion", k);
            CHECK_MPI(MPI_Error_class(rc[k], &cls));
            CHECK(cls == MPI_ERR_TAG, "call %d with MPI_ANY_TAG: class %d, not MPI_ERR_TAG", k, cls);
        }
    } else {
        /* Allowed (whether it finds the partner's first message depends on timing). */
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &st));
    }
    CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    const char *a = getenv("ASSERT_NO_ANY_TAG");
    int asserted = !(a && strcmp(a, "0") == 0);
    int tprov;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov));
    unsigned long long lanes = lanes_checked();
    lane_counter counter = counter_open("mpi_lanes_used");

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_assert_no_any_tag", asserted ? "true" : "false"));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
    CHECK_MPI(MPI_Info_free(&info));
    MPI_Info got;
    char value[16] = "";
    int found = 0;
    CHECK_MPI(MPI_Comm_get_info(comm, &got));
    CHECK_MPI(MPI_Info_get(got, "mpi_assert_no_any_tag", (int)sizeof value - 1, value, &found));
    CHECK(found && strcmp(value, asserted ? "true" : "false") == 0, "get_info: %s", value);
    CHECK_MPI(MPI_Info_free(&got));
    any_tag_refused(asserted);

    counter_start(&counter);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    unsigned long long used = counter_close(&counter);
    if (lanes == 1)
        CHECK(used == 0, "%llu lanes used with one lane", used);
    else if (test_size > 1 && asserted && lanes >= 3)
        CHECK(used >= 2, "one communicator with the assertion used %llu lanes other than 0", used);
    else if (!asserted)
        CHECK(used <= 1, "one communicator without the assertion used %llu lanes", used);
    if (test_rank == 0)
        printf("# lanes %llu, assertion %d, lanes other than 0 used: %llu\n", lanes, asserted, used);
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_T_finalize());
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
