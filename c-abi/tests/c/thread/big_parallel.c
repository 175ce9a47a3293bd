/*
 * big_parallel: 4 threads per rank, each on a communicator of its own, moving large
 * (rendezvous) messages at once, every byte checked; under MPI_THREAD_MULTIPLE the
 * library copies their data with its lock let go, so the copies of different threads
 * overlap with each other and with the other threads' matching.
 *
 *  1. ring: each thread sends to the next rank and receives from the previous one on its
 *     communicator (MPI_Irecv, MPI_Isend, MPI_Waitall; itself on 1 rank), 256 KiB and
 *     3 MiB messages, a window of two, several rounds; then MPI_Sendrecv of 1 MiB;
 *  2. a strided datatype: a vector of 4-byte blocks every 12 bytes (1 MiB of data) sent
 *     to the next rank and received contiguous, and back as contiguous into the vector,
 *     the gaps left untouched;
 *  3. threads of one rank pairing with each other: thread 2k sends 2 MiB messages to thread
 *     2k+1 of the same rank on communicator k (blocking MPI_Send and MPI_Recv), which
 *     sends them back.
 *
 * Under this library the MPI_T counter nic_copies_outside shows that copies did run
 * outside the lock (copy jobs).
 */
#define TEST_NAME "big_parallel"
#include "mpitest.h"
#include <pthread.h>

#define THREADS 4
#define ROUNDS 4
#define SMALL_BIG (256 * 1024)
#define LARGE (3 * 1024 * 1024)
#define VEC_BLOCKS (256 * 1024)
#define VEC_STRIDE 3 /* in ints: 4 bytes of data every 12 */
#define PAIR_BYTES (2 * 1024 * 1024)

static MPI_Comm comms[THREADS];
static MPI_Comm pair_comms[THREADS / 2];
static MPI_Datatype vector;

static void ring(int t, unsigned char *out, unsigned char *in)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    for (int round = 0; round < ROUNDS; round++) {
        size_t bytes = round % 2 ? LARGE : SMALL_BIG;
        MPI_Request req[4];
        for (int w = 0; w < 2; w++) {
            int index = round * 2 + w;
            fill_pattern(out + w * LARGE, bytes, message_seed(test_rank, t, index));
            memset(in + w * LARGE, 0, bytes);
            CHECK_MPI(MPI_Irecv(in + w * LARGE, (int)bytes, MPI_BYTE, prev, index, comms[t], &req[w]));
        }
        for (int w = 0; w < 2; w++)
            CHECK_MPI(MPI_Isend(out + w * LARGE, (int)bytes, MPI_BYTE, next, round * 2 + w, comms[t],
                                &req[2 + w]));
        MPI_Status st[4];
        CHECK_MPI(MPI_Waitall(4, req, st));
        for (int w = 0; w < 2; w++) {
            CHECK(status_bytes(&st[w]) == (int)bytes, "thread %d round %d: %d bytes", t, round,
                  status_bytes(&st[w]));
            CHECK_PATTERN(in + w * LARGE, bytes, message_seed(prev, t, round * 2 + w),
                          "thread %d round %d window %d", t, round, w);
        }
    }
    size_t bytes = 1024 * 1024;
    fill_pattern(out, bytes, message_seed(test_rank, t, 100));
    CHECK_MPI(MPI_Sendrecv(out, (int)bytes, MPI_BYTE, next, 100, in, (int)bytes, MPI_BYTE, prev, 100,
                           comms[t], MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, bytes, message_seed(prev, t, 100), "thread %d sendrecv", t);
}

static void strided(int t, unsigned char *out, unsigned char *in)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    int *vec = (int *)out, *flat = (int *)in;
    size_t ints = (size_t)VEC_BLOCKS * VEC_STRIDE;
    /* Data ints are rank/thread/index coded, the gaps -1. */
    for (size_t i = 0; i < ints; i++)
        vec[i] = i % VEC_STRIDE ? -1 : (int)(i / VEC_STRIDE) * 7 + test_rank * 1000003 + t;
    CHECK_MPI(MPI_Sendrecv(vec, 1, vector, next, 200, flat, VEC_BLOCKS, MPI_INT, prev, 200, comms[t],
                           MPI_STATUS_IGNORE));
    for (size_t b = 0; b < VEC_BLOCKS; b++)
        CHECK(flat[b] == (int)b * 7 + prev * 1000003 + t, "thread %d: block %zu is %d", t, b, flat[b]);
    /* Back into the vector: the gaps stay -1. */
    for (size_t b = 0; b < VEC_BLOCKS; b++)
        flat[b] = (int)b * 5 + test_rank * 1000033 + t;
    for (size_t i = 0; i < ints; i++)
        vec[i] = -1;
    CHECK_MPI(MPI_Sendrecv(flat, VEC_BLOCKS, MPI_INT, next, 201, vec, 1, vector, prev, 201, comms[t],
                           MPI_STATUS_IGNORE));
    for (size_t i = 0; i < ints; i++) {
        int want = i % VEC_STRIDE ? -1 : (int)(i / VEC_STRIDE) * 5 + prev * 1000033 + t;
        CHECK(vec[i] == want, "thread %d: int %zu of the vector is %d, not %d", t, i, vec[i], want);
    }
}

static void pairs(int t, unsigned char *buf)
{
    MPI_Comm c = pair_comms[t / 2];
    for (int round = 0; round < ROUNDS; round++) {
        if (t % 2 == 0) {
            fill_pattern(buf, PAIR_BYTES, message_seed(t, round, 300));
            CHECK_MPI(MPI_Send(buf, PAIR_BYTES, MPI_BYTE, test_rank, round, c));
            memset(buf, 0, PAIR_BYTES);
            CHECK_MPI(MPI_Recv(buf, PAIR_BYTES, MPI_BYTE, test_rank, round, c, MPI_STATUS_IGNORE));
            CHECK_PATTERN(buf, PAIR_BYTES, message_seed(t + 1, round, 300), "thread %d pair round %d",
                          t, round);
        } else {
            CHECK_MPI(MPI_Recv(buf, PAIR_BYTES, MPI_BYTE, test_rank, round, c, MPI_STATUS_IGNORE));
            CHECK_PATTERN(buf, PAIR_BYTES, message_seed(t - 1, round, 300), "thread %d pair round %d",
                          t, round);
            fill_pattern(buf, PAIR_BYTES, message_seed(t, round, 300));
            CHECK_MPI(MPI_Send(buf, PAIR_BYTES, MPI_BYTE, test_rank, round, c));
        }
    }
}

static void *work(void *arg)
{
    int t = (int)(intptr_t)arg;
    size_t vec_bytes = (size_t)VEC_BLOCKS * VEC_STRIDE * sizeof(int);
    size_t n = 2 * LARGE > vec_bytes ? 2 * LARGE : vec_bytes;
    unsigned char *out = test_malloc(n), *in = test_malloc(n);
    ring(t, out, in);
    strided(t, out, in);
    pairs(t, in);
    free(out);
    free(in);
    return NULL;
}

static MPI_T_pvar_session session;
static MPI_T_pvar_handle outside;

/* Starts the MPI_T counter nic_copies_outside (this library's); 0 if there is none. */
static int start_counter(void)
{
    int idx, count;
    if (MPI_T_pvar_get_index("nic_copies_outside", MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS)
        return 0;
    CHECK_MPI(MPI_T_pvar_session_create(&session));
    CHECK_MPI(MPI_T_pvar_handle_alloc(session, idx, NULL, &outside, &count));
    CHECK_MPI(MPI_T_pvar_start(session, outside));
    return 1;
}

/* What the counter counted since it was started. */
static long long read_counter(void)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(session, outside, &v));
    CHECK_MPI(MPI_T_pvar_handle_free(session, &outside));
    CHECK_MPI(MPI_T_pvar_session_free(&session));
    return (long long)v;
}

int main(int argc, char **argv)
{
    int provided, t_provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &t_provided));
    int counted = library_is("c-abi") && start_counter();
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
    for (int k = 0; k < THREADS / 2; k++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &pair_comms[k]));
    CHECK_MPI(MPI_Type_vector(VEC_BLOCKS, 1, VEC_STRIDE, MPI_INT, &vector));
    CHECK_MPI(MPI_Type_commit(&vector));
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    if (counted) {
        long long n = read_counter();
        CHECK(n > 0, "no copy ran outside the lock (nic_copies_outside %lld)", n);
    }
    CHECK_MPI(MPI_T_finalize());
    CHECK_MPI(MPI_Type_free(&vector));
    for (int t = 0; t < THREADS; t++)
        CHECK_MPI(MPI_Comm_free(&comms[t]));
    for (int k = 0; k < THREADS / 2; k++)
        CHECK_MPI(MPI_Comm_free(&pair_comms[k]));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
