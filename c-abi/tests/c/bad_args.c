/*
 * bad_args: argument checking under MPI_ERRORS_RETURN, and cancel.
 *
 * Each bad call must return an error code (not crash, not hang) whose class
 * is the one MPICH gives, with a non-empty MPI_Error_string; and it must
 * change nothing: a bad send sends nothing and a bad receive posts nothing,
 * which the ordinary messages that follow prove (they arrive, in order, to
 * the receive meant for them, and nothing else is left over).
 *
 * Classes covered: MPI_ERR_RANK, MPI_ERR_TAG, MPI_ERR_COUNT, MPI_ERR_COMM,
 * MPI_ERR_TYPE, MPI_ERR_BUFFER, MPI_ERR_REQUEST. Then MPI_Cancel: an
 * unmatched MPI_Irecv is cancelled (MPI_Test_cancelled true), a matched one is
 * not (false, and its data arrived). MPI_PROC_NULL is valid and does nothing.
 */
#define TEST_NAME "bad_args"
#include "mpitest.h"
#include <limits.h>

enum { TAG_GOOD = 6, TAG_DONE = 7, TAG_UNSENT = 77, TAG_MATCHED = 78, TAG_AFTER = 79 };

static int bad_calls;

static const char *class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_TAG: return "MPI_ERR_TAG";
    case MPI_ERR_COMM: return "MPI_ERR_COMM";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    default: return "another class";
    }
}

static void expect_error_at(const char *file, int line, const char *call, int rc, int want_class)
{
    bad_calls++;
    if (rc == MPI_SUCCESS)
        test_fail_at(file, line, "%s succeeded; want an error of class %s", call, class_name(want_class));
    int cls = -1;
    int crc = MPI_Error_class(rc, &cls);
    if (crc != MPI_SUCCESS || cls != want_class)
        test_fail_at(file, line, "%s returned %s, class %s; want class %s (%d)", call, error_text(rc),
                     class_name(cls), class_name(want_class), want_class);
    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    text[0] = '\0';
    crc = MPI_Error_string(rc, text, &len);
    if (crc != MPI_SUCCESS || len <= 0 || len >= MPI_MAX_ERROR_STRING || (int)strlen(text) != len)
        test_fail_at(file, line, "%s: MPI_Error_string(%d) gave rc %d, length %d, text \"%s\"", call, rc,
                     crc, len, text);
}

#define EXPECT_ERROR(call, cls) expect_error_at(__FILE__, __LINE__, #call, (call), (cls))

static void error_classes_are_their_own_class(void)
{
    const int classes[] = {MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM,
                           MPI_ERR_RANK,   MPI_ERR_REQUEST, MPI_ERR_TRUNCATE, MPI_ERR_IN_STATUS};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        int cls = -1, len = -1;
        char text[MPI_MAX_ERROR_STRING];
        CHECK_MPI(MPI_Error_class(classes[i], &cls));
        CHECK(cls == classes[i], "MPI_Error_class(%d) = %d", classes[i], cls);
        CHECK_MPI(MPI_Error_string(classes[i], text, &len));
        CHECK(len > 0 && (int)strlen(text) == len, "MPI_Error_string(%d) is empty or its length is wrong", classes[i]);
    }
    int len = -1;
    char text[MPI_MAX_ERROR_STRING];
    CHECK_MPI(MPI_Error_string(MPI_SUCCESS, text, &len));
    CHECK(len > 0, "MPI_Error_string(MPI_SUCCESS) is empty");
}

/* Rank 1: bad sends towards rank 0, then the one good message. */
static void bad_sends(void)
{
    int v[4] = {1, 2, 3, 4};
    int *tag_ub = NULL, flag = 0;
    MPI_Request req;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && tag_ub, "MPI_TAG_UB attribute missing");

    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, test_size, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, -5, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Isend(v, 1, MPI_INT, test_size, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, 0, -7, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
    if (*tag_ub < INT_MAX)
        EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, 0, *tag_ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_ERROR(MPI_Ssend(v, 1, MPI_INT, 0, -7, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_ERROR(MPI_Send(v, -1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_ERROR(MPI_Isend(v, -1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_COUNT);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, 0, TAG_GOOD, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_INT, 0, TAG_GOOD, (MPI_Comm)12345), MPI_ERR_COMM);
    EXPECT_ERROR(MPI_Send(v, 1, MPI_DATATYPE_NULL, 0, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_ERROR(MPI_Send(v, 1, (MPI_Datatype)12345, 0, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_ERROR(MPI_Isend(v, 1, MPI_DATATYPE_NULL, 0, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_TYPE);
    EXPECT_ERROR(MPI_Send(NULL, 1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_ERROR(MPI_Isend(NULL, 1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER);
    /* Buffered send with no buffer attached. */
    EXPECT_ERROR(MPI_Bsend(v, 1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD), MPI_ERR_BUFFER);

    /* Sending to MPI_PROC_NULL is valid and sends nothing. */
    CHECK_MPI(MPI_Send(v, 4, MPI_INT, MPI_PROC_NULL, TAG_GOOD, MPI_COMM_WORLD));

    int good = 4242;
    CHECK_MPI(MPI_Send(&good, 1, MPI_INT, 0, TAG_GOOD, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(&good, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD));
}

/* Rank 0: bad receives from rank 1, then the good message must still be there. */
static void bad_receives(void)
{
    int v[4] = {0, 0, 0, 0}, flag = 1;
    MPI_Status st;
    MPI_Request req;
    EXPECT_ERROR(MPI_Recv(v, 1, MPI_INT, test_size, TAG_GOOD, MPI_COMM_WORLD, &st), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Irecv(v, 1, MPI_INT, -5, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Iprobe(test_size, TAG_GOOD, MPI_COMM_WORLD, &flag, &st), MPI_ERR_RANK);
    EXPECT_ERROR(MPI_Recv(v, 1, MPI_INT, 1, -7, MPI_COMM_WORLD, &st), MPI_ERR_TAG);
    EXPECT_ERROR(MPI_Irecv(v, 1, MPI_INT, 1, -7, MPI_COMM_WORLD, &req), MPI_ERR_TAG);
    /* These name the right source and tag: posted by mistake, they would take the good message. */
    EXPECT_ERROR(MPI_Irecv(v, -1, MPI_INT, 1, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_COUNT);
    EXPECT_ERROR(MPI_Recv(v, -1, MPI_INT, 1, TAG_GOOD, MPI_COMM_WORLD, &st), MPI_ERR_COUNT);
    EXPECT_ERROR(MPI_Irecv(v, 1, MPI_DATATYPE_NULL, 1, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_TYPE);
    EXPECT_ERROR(MPI_Recv(v, 1, (MPI_Datatype)12345, 1, TAG_GOOD, MPI_COMM_WORLD, &st), MPI_ERR_TYPE);
    EXPECT_ERROR(MPI_Irecv(v, 1, MPI_INT, 1, TAG_GOOD, MPI_COMM_NULL, &req), MPI_ERR_COMM);
    EXPECT_ERROR(MPI_Recv(v, 1, MPI_INT, 1, TAG_GOOD, (MPI_Comm)12345, &st), MPI_ERR_COMM);
    EXPECT_ERROR(MPI_Irecv(NULL, 1, MPI_INT, 1, TAG_GOOD, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER);
    EXPECT_ERROR(MPI_Recv(NULL, 1, MPI_INT, 1, TAG_GOOD, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER);

    /* Receiving from MPI_PROC_NULL completes at once with an empty status. */
    CHECK_MPI(MPI_Recv(v, 4, MPI_INT, MPI_PROC_NULL, TAG_GOOD, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && status_bytes(&st) == 0,
          "receive from MPI_PROC_NULL: status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
          status_bytes(&st));

    /* The first message from rank 1 must be the good one, whole and on the right tag. */
    CHECK_MPI(MPI_Recv(v, 4, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_TAG == TAG_GOOD && status_bytes(&st) == (int)sizeof(int) && v[0] == 4242,
          "first message from rank 1 after the bad calls: tag %d, %d bytes, value %d; want tag %d, %d bytes, 4242",
          st.MPI_TAG, status_bytes(&st), v[0], TAG_GOOD, (int)sizeof(int));
    CHECK_MPI(MPI_Recv(v, 4, MPI_INT, 1, TAG_DONE, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "a bad send delivered something: a message from %d with tag %d is waiting", st.MPI_SOURCE, st.MPI_TAG);
}

static void bad_handles(void)
{
    int size = -1, rank = -1, count = -1, flag = 0;
    MPI_Status st;
    MPI_Request req;
    EXPECT_ERROR(MPI_Comm_size(MPI_COMM_NULL, &size), MPI_ERR_COMM);
    EXPECT_ERROR(MPI_Comm_rank((MPI_Comm)12345, &rank), MPI_ERR_COMM);
    req = (MPI_Request)12345;
    EXPECT_ERROR(MPI_Wait(&req, &st), MPI_ERR_REQUEST);
    req = (MPI_Request)12345;
    EXPECT_ERROR(MPI_Test(&req, &flag, &st), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    EXPECT_ERROR(MPI_Start(&req), MPI_ERR_REQUEST);
    req = MPI_REQUEST_NULL;
    EXPECT_ERROR(MPI_Request_free(&req), MPI_ERR_REQUEST);

    /* Waiting on MPI_REQUEST_NULL is valid: an empty status at once. */
    req = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Wait(&req, &st));
    CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "Wait on MPI_REQUEST_NULL: status source %d tag %d, want an empty status", st.MPI_SOURCE, st.MPI_TAG);

    CHECK_MPI(MPI_Recv(&count, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    EXPECT_ERROR(MPI_Get_count(&st, MPI_DATATYPE_NULL, &count), MPI_ERR_TYPE);
}

static void cancel(void)
{
    if (test_rank == 0) {
        /* Nobody sends this: the cancel succeeds. */
        int v = -1, flag = 0;
        MPI_Request req;
        MPI_Status st;
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, TAG_UNSENT, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "MPI_Test_cancelled is false for a cancelled receive that nothing matched");
        CHECK(req == MPI_REQUEST_NULL, "Wait on a cancelled request left it active");

        /* This one is matched before we cancel it (rank 1 sends it, then TAG_AFTER). */
        CHECK_MPI(MPI_Irecv(&v, 1, MPI_INT, 1, TAG_MATCHED, MPI_COMM_WORLD, &req));
        int go = 1, after = 0;
        CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 1, TAG_MATCHED, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(&after, 1, MPI_INT, 1, TAG_AFTER, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Cancel(&req));
        CHECK_MPI(MPI_Wait(&req, &st));
        flag = 1;
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(!flag, "MPI_Test_cancelled is true for a receive that was already matched");
        CHECK(v == 7878 && st.MPI_SOURCE == 1 && st.MPI_TAG == TAG_MATCHED,
              "matched receive after a failed cancel: value %d source %d tag %d", v, st.MPI_SOURCE, st.MPI_TAG);
    } else if (test_rank == 1) {
        int go, v = 7878;
        CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 0, TAG_MATCHED, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, TAG_MATCHED, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, 0, TAG_AFTER, MPI_COMM_WORLD));
    }
}

static void ordinary_exchange(void)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    int out = test_rank * 11, in = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 3, &in, 1, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
    CHECK(in == left * 11 && st.MPI_SOURCE == left, "exchange after the bad calls: got %d from %d", in, st.MPI_SOURCE);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    error_classes_are_their_own_class();
    if (test_rank == 1)
        bad_sends();
    else if (test_rank == 0)
        bad_receives();
    bad_handles();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    cancel();
    ordinary_exchange();
    if (test_rank == 0) {
        printf("%d bad calls rejected\n", bad_calls);
        fflush(stdout);
    }
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
