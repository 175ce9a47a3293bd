/*
 * isendrecv: MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.0 §3.10).
 *
 *  - a ring: each rank sends to the next and receives from the previous, with a strided
 *    (vector) send type and a contiguous receive type, then the reverse: checked data and the
 *    receive's status (source, tag, count);
 *  - MPI_PROC_NULL on the send side, on the receive side and on both;
 *  - MPI_Isendrecv_replace around the ring, several rounds, with a derived type (the buffer
 *    keeps the stride gaps untouched);
 *  - several Isendrecv requests at once completed by MPI_Waitall, and one polled with MPI_Test;
 *  - a truncated receive: MPI_ERR_TRUNCATE from MPI_Wait under MPI_ERRORS_RETURN.
 *
 * Deviation of MPICH 4.0.2 (tolerated): the status of MPI_Isendrecv is empty, not the receive's.
 */
#define TEST_NAME "isendrecv"
#include "../mpitest.h"

#define N 1000

/* Whether the library gives MPI_Isendrecv's request the receive's status (MPICH 4.0.2 does not). */
static int statuses_kept(void)
{
    return !tolerated("MPICH", "the status of MPI_Isendrecv is empty, not the receive's");
}

static void ring_vector(void)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(N, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    int *src = test_malloc(2 * N * sizeof(int)), *dst = test_malloc(N * sizeof(int));
    for (int i = 0; i < 2 * N; i++)
        src[i] = (i % 2) ? -1 : test_rank * 100000 + i / 2;
    for (int i = 0; i < N; i++)
        dst[i] = -7;
    MPI_Request req;
    MPI_Status st;
    CHECK_MPI(MPI_Isendrecv(src, 1, every_other, next, 11, dst, N, MPI_INT, prev, 11,
                            MPI_COMM_WORLD, &req));
    CHECK(req != MPI_REQUEST_NULL, "Isendrecv gave MPI_REQUEST_NULL");
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(req == MPI_REQUEST_NULL, "the request was not freed by MPI_Wait");
    if (statuses_kept()) {
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == 11, "status source %d tag %d, want %d 11",
              st.MPI_SOURCE, st.MPI_TAG, prev);
        int count = -1;
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
        CHECK(count == N, "count %d, want %d", count, N);
    }
    for (int i = 0; i < N; i++)
        CHECK(dst[i] == prev * 100000 + i, "ring: dst[%d] = %d, want %d", i, dst[i], prev * 100000 + i);

    /* The reverse direction, received into the strided type. */
    for (int i = 0; i < N; i++)
        dst[i] = test_rank * 7 + i;
    for (int i = 0; i < 2 * N; i++)
        src[i] = -3;
    CHECK_MPI(MPI_Isendrecv(dst, N, MPI_INT, prev, 12, src, 1, every_other, next, 12,
                            MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    for (int i = 0; i < 2 * N; i++) {
        int want = (i % 2) ? -3 : next * 7 + i / 2;
        CHECK(src[i] == want, "reverse: src[%d] = %d, want %d", i, src[i], want);
    }
    CHECK_MPI(MPI_Type_free(&every_other));
    free(src);
    free(dst);
}

static void proc_null(void)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    int out = test_rank, in = -1;
    MPI_Request req;
    MPI_Status st;
    /* Receive from PROC_NULL: the status is PROC_NULL's, the send still goes. */
    CHECK_MPI(MPI_Isendrecv(&out, 1, MPI_INT, next, 3, &in, 1, MPI_INT, MPI_PROC_NULL, 3,
                            MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(!statuses_kept() || (st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG),
          "PROC_NULL status %d %d", st.MPI_SOURCE, st.MPI_TAG);
    CHECK(in == -1, "a receive from MPI_PROC_NULL wrote %d", in);
    /* Send to PROC_NULL, receive the message above. */
    CHECK_MPI(MPI_Isendrecv(&out, 1, MPI_INT, MPI_PROC_NULL, 3, &in, 1, MPI_INT, prev, 3,
                            MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(in == prev && (!statuses_kept() || st.MPI_SOURCE == prev), "got %d from %d, want %d", in,
          st.MPI_SOURCE, prev);
    /* Both. */
    CHECK_MPI(MPI_Isendrecv(&out, 1, MPI_INT, MPI_PROC_NULL, 3, &in, 1, MPI_INT, MPI_PROC_NULL, 3,
                            MPI_COMM_WORLD, &req));
    int flag = 0;
    for (int i = 0; i < 1000 && !flag; i++)
        CHECK_MPI(MPI_Test(&req, &flag, &st));
    CHECK(flag, "an Isendrecv with MPI_PROC_NULL on both sides did not complete");
    CHECK_MPI(MPI_Isendrecv_replace(&out, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_PROC_NULL, 3,
                                    MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(out == test_rank, "replace with MPI_PROC_NULL changed the buffer");
}

static void replace_ring(void)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    MPI_Datatype pairs; /* 2 ints every 3 */
    CHECK_MPI(MPI_Type_vector(N, 2, 3, MPI_INT, &pairs));
    CHECK_MPI(MPI_Type_commit(&pairs));
    int *buf = test_malloc(3 * N * sizeof(int));
    /* The token starts as the rank's own and travels the ring once. */
    for (int i = 0; i < 3 * N; i++)
        buf[i] = (i % 3 == 2) ? -5 : test_rank * 10000 + i;
    for (int round = 1; round <= test_size; round++) {
        MPI_Request req;
        MPI_Status st;
        CHECK_MPI(MPI_Isendrecv_replace(buf, 1, pairs, next, round, prev, round, MPI_COMM_WORLD,
                                        &req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK(!statuses_kept() || (st.MPI_SOURCE == prev && st.MPI_TAG == round),
              "replace status %d %d", st.MPI_SOURCE, st.MPI_TAG);
        int owner = ((test_rank - round) % test_size + test_size) % test_size;
        for (int i = 0; i < 3 * N; i++) {
            int want = (i % 3 == 2) ? -5 : owner * 10000 + i;
            CHECK(buf[i] == want, "round %d: buf[%d] = %d, want %d", round, i, buf[i], want);
        }
    }
    CHECK_MPI(MPI_Type_free(&pairs));
    free(buf);
}

static void many_at_once(void)
{
    enum { K = 6, LEN = 5000 };
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    static unsigned char out[K][LEN], in[K][LEN];
    MPI_Request reqs[K];
    MPI_Status sts[K];
    for (int k = 0; k < K; k++) {
        fill_pattern(out[k], LEN, message_seed(test_rank, next, k));
        memset(in[k], 0, LEN);
        CHECK_MPI(MPI_Isendrecv(out[k], LEN, MPI_BYTE, next, 100 + k, in[k], LEN, MPI_BYTE, prev,
                                100 + k, MPI_COMM_WORLD, &reqs[k]));
    }
    CHECK_MPI(MPI_Waitall(K, reqs, sts));
    for (int k = 0; k < K; k++) {
        CHECK_PATTERN(in[k], LEN, message_seed(prev, test_rank, k), "message %d", k);
        CHECK(!statuses_kept() || (sts[k].MPI_TAG == 100 + k && status_bytes(&sts[k]) == LEN),
              "status %d", k);
    }
    /* One polled with MPI_Test (bounded). */
    MPI_Request req;
    int flag = 0;
    CHECK_MPI(MPI_Isendrecv(out[0], LEN, MPI_BYTE, next, 200, in[0], LEN, MPI_BYTE, prev, 200,
                            MPI_COMM_WORLD, &req));
    for (long i = 0; i < 10000000 && !flag; i++)
        CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    CHECK(flag, "Isendrecv polled with MPI_Test never completed");
    CHECK_PATTERN(in[0], LEN, message_seed(prev, test_rank, 0), "polled message");
}

static void truncated(void)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    int out[4] = {1, 2, 3, 4}, in[2] = {0, 0};
    MPI_Request req;
    MPI_Status st;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Isendrecv(out, 4, MPI_INT, next, 9, in, 2, MPI_INT, prev, 9, MPI_COMM_WORLD,
                            &req));
    int rc = MPI_Wait(&req, &st);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "truncated Isendrecv: %s", error_text(rc));
    rc = MPI_Isendrecv(out, 1, MPI_INT, test_size, 9, in, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &req);
    CHECK(error_class_of(rc) == MPI_ERR_RANK, "bad dest: %s", error_text(rc));
    rc = MPI_Isendrecv(out, 1, MPI_INT, next, -4, in, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &req);
    CHECK(error_class_of(rc) == MPI_ERR_TAG, "bad tag: %s", error_text(rc));
    rc = MPI_Isendrecv_replace(out, 1, MPI_DATATYPE_NULL, next, 1, prev, 1, MPI_COMM_WORLD, &req);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "bad type: %s", error_text(rc));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    ring_vector();
    proc_null();
    replace_ring();
    many_at_once();
    truncated();
    test_ok();
    MPI_Finalize();
    return 0;
}
