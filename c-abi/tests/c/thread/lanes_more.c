/*
 * lanes_more: the point-to-point calls beyond send/receive/wait on lanes (runtime::lanes,
 * MPI_LANES), under MPI_THREAD_MULTIPLE, with the partner rank (rank ^ 1, or this rank
 * itself when it has none).
 *
 * 1. One thread, a communicator on a lane other than 0 (found by the pvar mpi_lane_calls:
 *    an MPI_Iprobe on it counts), each call checked to have run there (the counter grows by
 *    one per call): MPI_Waitany, MPI_Waitsome, MPI_Testany, MPI_Testsome, MPI_Testall over
 *    requests of that lane; MPI_Mprobe + MPI_Mrecv, MPI_Improbe + MPI_Imrecv (+ MPI_Wait of
 *    its request, on the lane too); MPI_Cancel, MPI_Request_get_status and MPI_Request_free;
 *    MPI_Isendrecv and MPI_Isendrecv_replace; MPI_Send_init/MPI_Recv_init + MPI_Start and
 *    MPI_Startall. MPI_Bsend_init + MPI_Start (the attached buffer: the exclusive path) and
 *    the multiple-completion calls over requests of several lanes (the exclusive path) must
 *    work as well. With one lane, no call may be counted.
 * 2. THREADS threads, each on a duplicate of its own, doing the same at once.
 * 3. Progress (MPI's rule): an even rank posts a rendezvous MPI_Irecv on a lane
 *    communicator, then sits in MPI_Barrier on MPI_COMM_WORLD (then in MPI_Win_fence) while
 *    its partner first sends that message from another thread, then joins the barrier: the
 *    send completes only once the receiver's lane has matched the message and pulled its
 *    data, so if the barrier did not turn the lane both would wait for ever. With
 *    PROGRESS_SLEEP=S (run under MPI_ASYNC_PROGRESS=1) the receiver makes no MPI call for S
 *    seconds and the send must complete before that (the progress thread turns the lane).
 * Every byte is checked; every loop is bounded in count and time.
 */
#define TEST_NAME "lanes_more"
#include "mpitest.h"
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#define THREADS 4
#define ROUNDS 6
#define N 16
#define BIG (512 * 1024)
/* How long a polling loop may run before the test fails. */
#define LIMIT_S 30

static int lanes;
static MPI_T_pvar_session session;
static MPI_T_pvar_handle lane_calls;
/* Whether phase 1 checks the counter (only one thread calls MPI then). */
static int counting;

static unsigned long long calls_now(void)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(session, lane_calls, &v));
    return v;
}

/* Checks that the calls since `*mark` ran on a lane (`on` of them) or none did, then moves
 * the mark. */
static void expect_lane_calls(unsigned long long *mark, unsigned long long on, const char *what)
{
    if (!counting)
        return;
    unsigned long long now = calls_now();
    CHECK(now - *mark == on, "%s: %llu calls ran on a lane other than 0, expected %llu",
          what, now - *mark, on);
    *mark = now;
}

/* Polls until `cond` (a statement expression that makes the call) holds, with a bound on
 * the time. */
#define POLL(what, cond)                                                                    \
    do {                                                                                    \
        double start_ = MPI_Wtime();                                                        \
        while (!(cond)) {                                                                   \
            CHECK(MPI_Wtime() - start_ < LIMIT_S, "%s: not done in %d s", what, LIMIT_S);   \
            sched_yield();                                                                  \
        }                                                                                   \
    } while (0)

/* Requests to receive N messages of 8 bytes from `peer` and send N to it on `c` (tags
 * `base`..), the receives at even indices. */
static void post(MPI_Comm c, int peer, int t, int base, unsigned char (*in)[8],
                 unsigned char (*out)[8], MPI_Request *reqs)
{
    for (int k = 0; k < N; k++) {
        fill_pattern(out[k], 8, message_seed(test_rank, t, base + k));
        CHECK_MPI(MPI_Irecv(in[k], 8, MPI_BYTE, peer, base + k, c, &reqs[2 * k]));
        CHECK_MPI(MPI_Isend(out[k], 8, MPI_BYTE, peer, base + k, c, &reqs[2 * k + 1]));
    }
}

static void check_in(int peer, int t, int base, unsigned char (*in)[8], const char *what)
{
    for (int k = 0; k < N; k++)
        CHECK_PATTERN(in[k], 8, message_seed(peer, t, base + k), "%s: message %d", what, k);
}

static int all_null(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] != MPI_REQUEST_NULL)
            return 0;
    return 1;
}

/* The multiple-completion calls over requests of one communicator: each call counted
 * when `on` (the communicator is on a lane other than 0). */
static void completions(MPI_Comm c, int peer, int t, int base, int on, unsigned long long *mark)
{
    unsigned char in[N][8], out[N][8];
    MPI_Request reqs[2 * N];
    unsigned long long calls;
    /* MPI_Waitany until all are done, then once more: MPI_UNDEFINED. */
    post(c, peer, t, base, in, out, reqs);
    expect_lane_calls(mark, on ? 2 * N : 0, "Irecv/Isend");
    for (int k = 0; k < 2 * N; k++) {
        int index = -1;
        MPI_Status st;
        CHECK_MPI(MPI_Waitany(2 * N, reqs, &index, &st));
        CHECK(index >= 0 && reqs[index] == MPI_REQUEST_NULL, "waitany index %d", index);
        if (index % 2 == 0)
            CHECK(st.MPI_TAG == base + index / 2 && status_bytes(&st) == 8, "waitany status");
    }
    int index = 0;
    CHECK_MPI(MPI_Waitany(2 * N, reqs, &index, MPI_STATUS_IGNORE));
    CHECK(index == MPI_UNDEFINED, "waitany over nothing active: %d", index);
    /* The last call names no request: no lane, the exclusive path. */
    expect_lane_calls(mark, on ? 2 * N : 0, "Waitany");
    check_in(peer, t, base, in, "waitany");

    /* MPI_Waitsome. */
    post(c, peer, t, base + 100, in, out, reqs);
    calls = 0;
    while (!all_null(reqs, 2 * N)) {
        int outcount = 0, idx[2 * N];
        MPI_Status st[2 * N];
        CHECK(calls++ < 4 * N, "waitsome: too many calls");
        CHECK_MPI(MPI_Waitsome(2 * N, reqs, &outcount, idx, st));
        CHECK(outcount >= 1, "waitsome outcount %d", outcount);
        for (int i = 0; i < outcount; i++)
            CHECK(reqs[idx[i]] == MPI_REQUEST_NULL, "waitsome index %d", idx[i]);
    }
    expect_lane_calls(mark, on ? 2 * N + calls : 0, "Waitsome");
    check_in(peer, t, base + 100, in, "waitsome");

    /* MPI_Testany. */
    post(c, peer, t, base + 200, in, out, reqs);
    calls = 0;
    POLL("testany", ({
        int i = -1, flag = 0;
        calls++;
        CHECK_MPI(MPI_Testany(2 * N, reqs, &i, &flag, MPI_STATUS_IGNORE));
        flag && i == MPI_UNDEFINED;
    }));
    expect_lane_calls(mark, on ? 2 * N + calls - 1 : 0, "Testany");
    check_in(peer, t, base + 200, in, "testany");

    /* MPI_Testsome. */
    post(c, peer, t, base + 300, in, out, reqs);
    calls = 0;
    POLL("testsome", ({
        int outcount = 0, idx[2 * N];
        calls++;
        CHECK_MPI(MPI_Testsome(2 * N, reqs, &outcount, idx, MPI_STATUSES_IGNORE));
        outcount == MPI_UNDEFINED;
    }));
    expect_lane_calls(mark, on ? 2 * N + calls - 1 : 0, "Testsome");
    check_in(peer, t, base + 300, in, "testsome");

    /* MPI_Testall. */
    post(c, peer, t, base + 400, in, out, reqs);
    calls = 0;
    MPI_Status st[2 * N];
    POLL("testall", ({
        int flag = 0;
        calls++;
        CHECK_MPI(MPI_Testall(2 * N, reqs, &flag, st));
        flag;
    }));
    CHECK(all_null(reqs, 2 * N), "testall left requests");
    for (int k = 0; k < N; k++)
        CHECK(st[2 * k].MPI_SOURCE == peer && st[2 * k].MPI_TAG == base + 400 + k, "testall status %d", k);
    expect_lane_calls(mark, on ? 2 * N + calls : 0, "Testall");
    check_in(peer, t, base + 400, in, "testall");
}

/* Matched probes, cancel, request status and free, Isendrecv(_replace), persistent requests
 * on `c`. */
static void others(MPI_Comm c, int peer, int t, int base, int on, unsigned long long *mark)
{
    unsigned char out[64], in[64];
    MPI_Request r, s;
    MPI_Status st;
    /* MPI_Mprobe + MPI_Mrecv (8 bytes and a rendezvous), MPI_Improbe + MPI_Imrecv. */
    unsigned char *big = test_malloc(BIG), *bigin = test_malloc(BIG);
    fill_pattern(big, BIG, message_seed(test_rank, t, base));
    fill_pattern(out, 8, message_seed(test_rank, t, base + 1));
    CHECK_MPI(MPI_Isend(big, BIG, MPI_BYTE, peer, base, c, &s));
    CHECK_MPI(MPI_Isend(out, 8, MPI_BYTE, peer, base + 1, c, &r));
    MPI_Message m;
    CHECK_MPI(MPI_Mprobe(peer, base, c, &m, &st));
    CHECK(st.MPI_TAG == base && status_bytes(&st) == BIG, "mprobe status");
    CHECK_MPI(MPI_Mrecv(bigin, BIG, MPI_BYTE, &m, &st));
    CHECK(m == MPI_MESSAGE_NULL && status_bytes(&st) == BIG, "mrecv");
    CHECK_PATTERN(bigin, BIG, message_seed(peer, t, base), "mrecv data");
    int flag = 0;
    unsigned long long probes = 0;
    POLL("improbe", ({
        probes++;
        CHECK_MPI(MPI_Improbe(peer, base + 1, c, &flag, &m, &st));
        flag;
    }));
    CHECK(st.MPI_TAG == base + 1 && status_bytes(&st) == 8, "improbe status");
    MPI_Request ir;
    CHECK_MPI(MPI_Imrecv(in, 8, MPI_BYTE, &m, &ir));
    CHECK_MPI(MPI_Wait(&ir, &st));
    CHECK(st.MPI_TAG == base + 1 && status_bytes(&st) == 8, "imrecv status");
    CHECK_PATTERN(in, 8, message_seed(peer, t, base + 1), "imrecv data");
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    expect_lane_calls(mark, on ? 2 + 2 + probes + 2 + 2 : 0, "matched probes");

    /* MPI_Cancel of a send nobody receives; MPI_Request_get_status until it is over. */
    CHECK_MPI(MPI_Isend(out, 8, MPI_BYTE, peer, base + 9999, c, &r));
    CHECK_MPI(MPI_Cancel(&r));
    unsigned long long looks = 0;
    POLL("get_status", ({
        looks++;
        CHECK_MPI(MPI_Request_get_status(r, &flag, &st));
        flag;
    }));
    CHECK(r != MPI_REQUEST_NULL, "get_status freed the request");
    CHECK_MPI(MPI_Wait(&r, &st));
    int cancelled = 0;
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "the unmatched send was not cancelled");
    expect_lane_calls(mark, on ? 3 + looks : 0, "cancel");

    /* MPI_Request_free of a send its partner receives (freed before or after it is over). */
    fill_pattern(out, 64, message_seed(test_rank, t, base + 2));
    CHECK_MPI(MPI_Isend(out, 64, MPI_BYTE, peer, base + 2, c, &r));
    CHECK_MPI(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "request_free left the handle");
    CHECK_MPI(MPI_Recv(in, 64, MPI_BYTE, peer, base + 2, c, MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, 64, message_seed(peer, t, base + 2), "freed send's data");
    expect_lane_calls(mark, on ? 3 : 0, "request_free");

    /* MPI_Isendrecv and MPI_Isendrecv_replace. */
    fill_pattern(out, 64, message_seed(test_rank, t, base + 3));
    CHECK_MPI(MPI_Isendrecv(out, 64, MPI_BYTE, peer, base + 3, in, 64, MPI_BYTE, peer, base + 3, c, &r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == peer && status_bytes(&st) == 64, "isendrecv status");
    CHECK_PATTERN(in, 64, message_seed(peer, t, base + 3), "isendrecv data");
    fill_pattern(in, 64, message_seed(test_rank, t, base + 4));
    CHECK_MPI(MPI_Isendrecv_replace(in, 64, MPI_BYTE, peer, base + 4, peer, base + 4, c, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, 64, message_seed(peer, t, base + 4), "isendrecv_replace data");
    expect_lane_calls(mark, on ? 4 : 0, "isendrecv");

    /* Persistent requests: MPI_Start of each, then MPI_Startall, each round checked. */
    MPI_Request p[2];
    CHECK_MPI(MPI_Recv_init(in, 64, MPI_BYTE, peer, base + 5, c, &p[0]));
    CHECK_MPI(MPI_Send_init(out, 64, MPI_BYTE, peer, base + 5, c, &p[1]));
    for (int i = 0; i < ROUNDS; i++) {
        fill_pattern(out, 64, message_seed(test_rank, t, base + 10 + i));
        if (i % 2 == 0) {
            CHECK_MPI(MPI_Start(&p[0]));
            CHECK_MPI(MPI_Start(&p[1]));
        } else {
            CHECK_MPI(MPI_Startall(2, p));
        }
        CHECK_MPI(MPI_Waitall(2, p, MPI_STATUSES_IGNORE));
        CHECK(p[0] != MPI_REQUEST_NULL && p[1] != MPI_REQUEST_NULL, "persistent handles freed");
        CHECK_PATTERN(in, 64, message_seed(peer, t, base + 10 + i), "persistent round %d", i);
    }
    CHECK_MPI(MPI_Request_free(&p[0]));
    CHECK_MPI(MPI_Request_free(&p[1]));
    expect_lane_calls(mark, on ? 2 + ROUNDS / 2 * 3 + (ROUNDS - ROUNDS / 2) * 2 + 2 : 0, "persistent");

    /* A persistent buffered send (the attached buffer: the exclusive path). */
    CHECK_MPI(MPI_Recv_init(in, 64, MPI_BYTE, peer, base + 6, c, &p[0]));
    CHECK_MPI(MPI_Bsend_init(out, 64, MPI_BYTE, peer, base + 6, c, &p[1]));
    for (int i = 0; i < 2; i++) {
        fill_pattern(out, 64, message_seed(test_rank, t, base + 20 + i));
        CHECK_MPI(MPI_Start(&p[1]));
        CHECK_MPI(MPI_Start(&p[0]));
        CHECK_MPI(MPI_Wait(&p[1], MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&p[0], MPI_STATUS_IGNORE));
        CHECK_PATTERN(in, 64, message_seed(peer, t, base + 20 + i), "bsend_init round %d", i);
    }
    CHECK_MPI(MPI_Request_free(&p[0]));
    CHECK_MPI(MPI_Request_free(&p[1]));
    if (counting)
        *mark = calls_now();
    free(big);
    free(bigin);
}

/* Requests of several communicators (several lanes, and MPI_COMM_WORLD's lane 0) in one
 * call of each multiple-completion function. */
static void mixed(MPI_Comm *cs, int ncs, int peer)
{
    unsigned char in[4][N][8], out[4][N][8];
    MPI_Request reqs[4][2 * N], all[8 * N];
    int n = 0;
    for (int round = 0; round < 5; round++) {
        for (int j = 0; j < ncs; j++)
            post(cs[j], peer, j, 5000 + 100 * round, in[j], out[j], reqs[j]);
        n = 0;
        /* Interleaved, so that consecutive handles are of different lanes. */
        for (int k = 0; k < 2 * N; k++)
            for (int j = 0; j < ncs; j++)
                all[n++] = reqs[j][k];
        int calls = 0;
        switch (round) {
        case 0:
            for (int k = 0; k < n; k++) {
                int i = -1;
                CHECK_MPI(MPI_Waitany(n, all, &i, MPI_STATUS_IGNORE));
                CHECK(i >= 0 && all[i] == MPI_REQUEST_NULL, "mixed waitany %d", i);
            }
            break;
        case 1:
            while (!all_null(all, n)) {
                int outcount = 0, idx[8 * N];
                CHECK(calls++ < 2 * n, "mixed waitsome: too many calls");
                CHECK_MPI(MPI_Waitsome(n, all, &outcount, idx, MPI_STATUSES_IGNORE));
                CHECK(outcount >= 1, "mixed waitsome outcount %d", outcount);
            }
            break;
        case 2:
            POLL("mixed testall", ({
                int flag = 0;
                CHECK_MPI(MPI_Testall(n, all, &flag, MPI_STATUSES_IGNORE));
                flag;
            }));
            break;
        case 3:
            POLL("mixed testany", ({
                int i = -1, flag = 0;
                CHECK_MPI(MPI_Testany(n, all, &i, &flag, MPI_STATUS_IGNORE));
                flag && i == MPI_UNDEFINED;
            }));
            break;
        default:
            POLL("mixed testsome", ({
                int outcount = 0, idx[8 * N];
                CHECK_MPI(MPI_Testsome(n, all, &outcount, idx, MPI_STATUSES_IGNORE));
                outcount == MPI_UNDEFINED;
            }));
        }
        CHECK(all_null(all, n), "mixed round %d left requests", round);
        for (int j = 0; j < ncs; j++)
            check_in(peer, j, 5000 + 100 * round, in[j], "mixed");
    }
}

static MPI_Comm comms[THREADS];

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    int peer = (test_rank ^ 1) < test_size ? test_rank ^ 1 : test_rank;
    unsigned long long mark = 0;
    for (int i = 0; i < 2; i++) {
        completions(comms[t], peer, t, 10000 + 1000 * i, 0, &mark);
        others(comms[t], peer, t, 20000 + 1000 * i, 0, &mark);
    }
    return NULL;
}

/* Phase 3: a rendezvous on lane communicator `progress_comm` that the even rank's
 * MPI_Barrier (or MPI_Win_fence, or its progress thread) must move on: the even rank has
 * posted the receive; the odd rank's MPI_Send of it completes only once the even rank's lane
 * has matched the message and pulled its data, and only then does the odd rank join. */
static MPI_Comm progress_comm;

static void *send_big(void *arg)
{
    int to = (int)(intptr_t)arg;
    unsigned char *big = test_malloc(BIG);
    fill_pattern(big, BIG, message_seed(test_rank, 77, 0));
    double t0 = MPI_Wtime();
    CHECK_MPI(MPI_Send(big, BIG, MPI_BYTE, to, 77, progress_comm));
    double took = MPI_Wtime() - t0;
    const char *sleep_s = getenv("PROGRESS_SLEEP");
    if (sleep_s)
        CHECK(took < atof(sleep_s) * 0.75,
              "the send took %.2f s: the receiver's lane did not move while it computed for %s s", took, sleep_s);
    free(big);
    return NULL;
}

/* One round: the even rank waits in `wait` (0: MPI_Barrier, 1: MPI_Win_fence, 2: no MPI
 * call for PROGRESS_SLEEP seconds, then MPI_Barrier). */
static void progress(MPI_Win win, int wait)
{
    int partner = test_rank ^ 1;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (partner >= test_size) {
        if (wait == 1)
            CHECK_MPI(MPI_Win_fence(0, win));
        else
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        return;
    }
    if (test_rank % 2 == 0) {
        unsigned char *big = test_malloc(BIG);
        MPI_Request r;
        CHECK_MPI(MPI_Irecv(big, BIG, MPI_BYTE, partner, 77, progress_comm, &r));
        if (wait == 2) {
            double secs = atof(getenv("PROGRESS_SLEEP"));
            struct timespec nap = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
            while (nanosleep(&nap, &nap) != 0) {
            }
        }
        if (wait == 1)
            CHECK_MPI(MPI_Win_fence(0, win));
        else
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_PATTERN(big, BIG, message_seed(partner, 77, 0), "progress message (wait %d)", wait);
        free(big);
    } else {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, send_big, (void *)(intptr_t)partner) == 0, "pthread_create");
        pthread_join(th, NULL);
        if (wait == 1)
            CHECK_MPI(MPI_Win_fence(0, win));
        else
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
}

int main(int argc, char **argv)
{
    test_init_multiple(&argc, &argv);
    int tprov, idx, count;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &tprov));
    {
        unsigned long long v = 0;
        MPI_T_cvar_handle ch;
        CHECK_MPI(MPI_T_cvar_get_index("MPI_LANES", &idx));
        CHECK_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &ch, &count));
        CHECK_MPI(MPI_T_cvar_read(ch, &v));
        CHECK_MPI(MPI_T_cvar_handle_free(&ch));
        lanes = (int)v;
    }
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    CHECK_MPI(MPI_T_pvar_get_index("mpi_lane_calls", MPI_T_PVAR_CLASS_COUNTER, &idx));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, idx, NULL, &lane_calls, &count));
    CHECK_MPI(MPI_T_pvar_start(session, lane_calls));
    int peer = (test_rank ^ 1) < test_size ? test_rank ^ 1 : test_rank;
    static char bsend_space[4096 + 4 * MPI_BSEND_OVERHEAD];
    CHECK_MPI(MPI_Buffer_attach(bsend_space, sizeof bsend_space));

    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    /* Which duplicates are on a lane other than 0: an MPI_Iprobe on them is counted. */
    int on[THREADS], on_lanes = 0, first = -1;
    for (int t = 0; t < THREADS; t++) {
        unsigned long long before = calls_now();
        int flag;
        CHECK_MPI(MPI_Iprobe(peer, 12345, comms[t], &flag, MPI_STATUS_IGNORE));
        on[t] = calls_now() - before == 1;
        on_lanes += on[t];
        if (on[t] && first < 0)
            first = t;
    }
    if (lanes > 1)
        CHECK(on_lanes >= 2, "%d of %d duplicates on lanes other than 0 with %d lanes", on_lanes, THREADS, lanes);
    else
        CHECK(on_lanes == 0, "a call ran on a lane with one lane");

    /* 1. One thread, each call checked to run on its lane. */
    /* LANES_NO_COUNT=1: the calls only (to run this program on a library that keeps some
     * of them off the lanes). */
    counting = getenv("LANES_NO_COUNT") == NULL;
    unsigned long long mark = calls_now();
    for (int t = 0; t < THREADS; t++) {
        completions(comms[t], peer, t, 100 + 1000 * t, on[t], &mark);
        others(comms[t], peer, t, 700 + 1000 * t, on[t], &mark);
    }
    MPI_Comm several[3] = {comms[0], comms[1], MPI_COMM_WORLD};
    mixed(several, 3, peer);
    counting = 0;

    /* 2. Every thread at once, on its own communicator. */
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);

    /* 3. Progress of a lane while the sender sits in a collective or a fence. */
    progress_comm = comms[first >= 0 ? first : 0];
    MPI_Win win;
    long wbuf = 0;
    CHECK_MPI(MPI_Win_create(&wbuf, sizeof wbuf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (getenv("PROGRESS_SLEEP")) {
        progress(win, 2);
    } else {
        for (int round = 0; round < 2; round++) {
            progress(win, 0);
            progress(win, 1);
        }
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_free(&win));

    void *detached;
    int dsize;
    CHECK_MPI(MPI_Buffer_detach(&detached, &dsize));
    CHECK_MPI(MPI_T_pvar_handle_free(session, &lane_calls));
    CHECK_MPI(MPI_T_pvar_session_free(&session));
    if (test_rank == 0)
        printf("# lanes %d, duplicates on lanes other than 0: %d\n", lanes, on_lanes);
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    CHECK_MPI(MPI_T_finalize());
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
