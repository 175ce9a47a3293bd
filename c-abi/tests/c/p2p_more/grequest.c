/*
 * grequest: generalized requests (MPI 4.0 §13.2) and the status setters.
 *
 *  - a generalized request completed by another part of the program: after a message from the
 *    previous rank arrives (polled with MPI_Test on both), query_fn fills the status with
 *    MPI_Status_set_elements / set_cancelled and a source and tag; checked with MPI_Get_count,
 *    MPI_Get_elements(_x), MPI_Test_cancelled; query and free each ran once;
 *  - MPI_Request_get_status of a complete one calls query_fn but frees nothing;
 *  - MPI_Waitall mixing generalized requests with sends and receives;
 *  - MPI_Request_free of an incomplete one: free_fn runs at MPI_Grequest_complete;
 *  - MPI_Cancel calls cancel_fn with complete = false / true; a cancel_fn that completes;
 *  - a query_fn that fails: its code comes back from MPI_Wait (MPI_ERRORS_RETURN);
 *  - MPI_Grequest_complete of a non-generalized request: MPI_ERR_REQUEST.
 *
 * Deviation of MPICH 4.0.2 (tolerated): it calls free_fn at MPI_Request_free of an incomplete
 * request instead of at MPI_Grequest_complete.
 */
#define TEST_NAME "grequest"
#include "../mpitest.h"

struct counts {
    int query, free, cancel, last_complete;
    int elements;    /* what query_fn reports */
    int fail;        /* query_fn returns this if non-zero */
    MPI_Request self; /* for a cancel_fn that completes the request */
};

static void reset(struct counts *c)
{
    memset(c, 0, sizeof *c);
    c->self = MPI_REQUEST_NULL;
}

static int query_fn(void *extra, MPI_Status *status)
{
    struct counts *c = extra;
    c->query++;
    MPI_Status_set_elements(status, MPI_INT, c->elements);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = 42;
    status->MPI_TAG = 24;
    return c->fail;
}

static int free_fn(void *extra)
{
    ((struct counts *)extra)->free++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct counts *c = extra;
    c->cancel++;
    c->last_complete = complete;
    if (!complete && c->self != MPI_REQUEST_NULL)
        MPI_Grequest_complete(c->self);
    return MPI_SUCCESS;
}

static void completed_after_message(void)
{
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    struct counts c;
    reset(&c);
    c.elements = 7;
    MPI_Request g, r, s;
    int in = -1, out = test_rank * 3, flag = 0;
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, prev, 5, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Test(&g, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag && c.query == 0, "an incomplete generalized request tested complete");
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, next, 5, MPI_COMM_WORLD, &s));
    int done = 0;
    for (long i = 0; i < 20000000 && !done; i++) {
        CHECK_MPI(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
        if (!done) {
            CHECK_MPI(MPI_Test(&g, &flag, MPI_STATUS_IGNORE));
            CHECK(!flag, "the generalized request completed by itself");
        }
    }
    CHECK(done && in == prev * 3, "the message did not arrive (%d)", in);
    CHECK_MPI(MPI_Grequest_complete(g));
    MPI_Status st;
    CHECK_MPI(MPI_Request_get_status(g, &flag, &st));
    CHECK(flag && c.query == 1 && c.free == 0, "get_status: flag %d query %d free %d", flag, c.query, c.free);
    flag = 0;
    for (int i = 0; i < 100 && !flag; i++)
        CHECK_MPI(MPI_Test(&g, &flag, &st));
    CHECK(flag && g == MPI_REQUEST_NULL, "the completed generalized request did not test complete");
    CHECK(c.query == 2 && c.free == 1 && c.cancel == 0, "query %d free %d cancel %d", c.query, c.free, c.cancel);
    CHECK(st.MPI_SOURCE == 42 && st.MPI_TAG == 24, "status source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
    int n = -1, cancelled = 1;
    MPI_Count nx = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 7, "Get_count %d, want 7", n);
    CHECK_MPI(MPI_Get_elements(&st, MPI_INT, &n));
    CHECK(n == 7, "Get_elements %d", n);
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_INT, &nx));
    CHECK(nx == 7, "Get_elements_x %lld", (long long)nx);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == 7 * (int)sizeof(int), "Get_count in bytes %d", n);
    CHECK_MPI(MPI_Test_cancelled(&st, &cancelled));
    CHECK(!cancelled, "Test_cancelled says cancelled");
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
}

static void waitall_mixed(void)
{
    enum { G = 3 };
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    struct counts c[G];
    MPI_Request reqs[G + 2];
    MPI_Status sts[G + 2];
    int out = 1000 + test_rank, in = -1;
    for (int i = 0; i < G; i++) {
        reset(&c[i]);
        c[i].elements = i + 1;
        CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c[i], &reqs[i]));
    }
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, prev, 6, MPI_COMM_WORLD, &reqs[G]));
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, next, 6, MPI_COMM_WORLD, &reqs[G + 1]));
    for (int i = G - 1; i >= 0; i--)
        CHECK_MPI(MPI_Grequest_complete(reqs[i]));
    CHECK_MPI(MPI_Waitall(G + 2, reqs, sts));
    for (int i = 0; i < G; i++) {
        int n = -1;
        CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        CHECK(c[i].query == 1 && c[i].free == 1, "request %d: query %d free %d", i, c[i].query, c[i].free);
        CHECK_MPI(MPI_Get_count(&sts[i], MPI_INT, &n));
        CHECK(n == i + 1 && sts[i].MPI_TAG == 24, "request %d: count %d tag %d", i, n, sts[i].MPI_TAG);
    }
    CHECK(in == 1000 + prev && sts[G].MPI_SOURCE == prev, "the receive got %d from %d", in, sts[G].MPI_SOURCE);
}

static void free_and_cancel(void)
{
    struct counts c;
    MPI_Request g, keep;
    reset(&c);
    /* Freed before it completes: free_fn when it completes. */
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    keep = g;
    CHECK_MPI(MPI_Request_free(&g));
    CHECK(g == MPI_REQUEST_NULL, "Request_free did not null the handle");
    if (!tolerated("MPICH", "MPI_Request_free of an incomplete generalized request calls free_fn at once, "
                            "not at MPI_Grequest_complete (MPI 4.0 13.2: whichever happens last)")) {
        CHECK(c.free == 0, "free of an incomplete grequest: free %d", c.free);
        CHECK_MPI(MPI_Grequest_complete(keep));
    } else {
        CHECK_MPI(MPI_Grequest_complete(keep));
    }
    CHECK(c.free == 1 && c.query == 0, "after completing a freed grequest: free %d query %d", c.free, c.query);

    /* Completed, then freed: free_fn at once. */
    reset(&c);
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    CHECK_MPI(MPI_Grequest_complete(g));
    CHECK_MPI(MPI_Request_free(&g));
    CHECK(c.free == 1, "free of a complete grequest: free %d", c.free);

    /* Cancel before and after completion. */
    reset(&c);
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    CHECK_MPI(MPI_Cancel(&g));
    CHECK(c.cancel == 1 && c.last_complete == 0, "cancel: %d calls, complete %d", c.cancel, c.last_complete);
    CHECK_MPI(MPI_Grequest_complete(g));
    CHECK_MPI(MPI_Cancel(&g));
    CHECK(c.cancel == 2 && c.last_complete == 1, "cancel after completion: complete %d", c.last_complete);
    CHECK_MPI(MPI_Wait(&g, MPI_STATUS_IGNORE));
    CHECK(c.query == 1 && c.free == 1, "query %d free %d", c.query, c.free);

    /* A cancel_fn that completes the request (it calls MPI). */
    reset(&c);
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    c.self = g;
    CHECK_MPI(MPI_Cancel(&g));
    CHECK_MPI(MPI_Wait(&g, MPI_STATUS_IGNORE));
    CHECK(c.cancel == 1 && c.query == 1 && c.free == 1, "cancel-completes: %d %d %d", c.cancel, c.query, c.free);
}

static void errors(void)
{
    struct counts c;
    MPI_Request g, s;
    reset(&c);
    int x = 0, rc;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    c.fail = MPI_ERR_OTHER;
    CHECK_MPI(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &g));
    CHECK_MPI(MPI_Grequest_complete(g));
    rc = MPI_Wait(&g, MPI_STATUS_IGNORE);
    CHECK(error_class_of(rc) == MPI_ERR_OTHER, "a failing query_fn: %s", error_text(rc));
    CHECK(c.free == 1, "free_fn did not run after a failing query_fn");
    CHECK_MPI(MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &s));
    rc = MPI_Grequest_complete(s);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Grequest_complete of a send: %s", error_text(rc));
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    rc = MPI_Grequest_complete(MPI_REQUEST_NULL);
    CHECK(error_class_of(rc) == MPI_ERR_REQUEST, "Grequest_complete(NULL): %s", error_text(rc));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void status_setters(void)
{
    MPI_Status st;
    int n = -1, flag = -1;
    MPI_Count nx = -1;
    memset(&st, 0, sizeof st);
    CHECK_MPI(MPI_Status_set_elements(&st, MPI_DOUBLE, 5));
    CHECK_MPI(MPI_Status_set_cancelled(&st, 1));
    CHECK_MPI(MPI_Get_elements(&st, MPI_DOUBLE, &n));
    CHECK(n == 5, "set_elements 5 doubles: Get_elements %d", n);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == 40, "5 doubles are %d bytes", n);
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "set_cancelled(1): Test_cancelled %d", flag);
    CHECK_MPI(MPI_Status_set_cancelled(&st, 0));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK_MPI(MPI_Get_elements(&st, MPI_DOUBLE, &n));
    CHECK(flag == 0 && n == 5, "set_cancelled(0): flag %d count %d", flag, n);
    CHECK_MPI(MPI_Status_set_elements_x(&st, MPI_CHAR, (MPI_Count)3000000000LL));
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_CHAR, &nx));
    CHECK(nx == 3000000000LL, "set_elements_x 3e9: %lld", (long long)nx);
    CHECK_MPI(MPI_Get_elements(&st, MPI_CHAR, &n));
    CHECK(n == MPI_UNDEFINED, "an int count above INT_MAX is MPI_UNDEFINED, got %d", n);
    CHECK_MPI(MPI_Status_set_cancelled(&st, 1));
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_CHAR, &nx));
    CHECK(nx == 3000000000LL, "set_cancelled changed the count: %lld", (long long)nx);
    MPI_Datatype three;
    CHECK_MPI(MPI_Type_contiguous(3, MPI_INT, &three));
    CHECK_MPI(MPI_Type_commit(&three));
    CHECK_MPI(MPI_Status_set_elements(&st, three, 2));
    CHECK_MPI(MPI_Get_count(&st, three, &n));
    CHECK(n == 2, "2 elements of a 3-int type: Get_count %d", n);
    CHECK_MPI(MPI_Get_elements(&st, MPI_INT, &n));
    CHECK(n == 6, "... are 6 ints, got %d", n);
    CHECK_MPI(MPI_Type_free(&three));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int rc = MPI_Status_set_elements(&st, MPI_INT, -1);
    CHECK(error_class_of(rc) == MPI_ERR_COUNT, "negative count: %s", error_text(rc));
    rc = MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1);
    CHECK(error_class_of(rc) == MPI_ERR_TYPE, "null type: %s", error_text(rc));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    status_setters();
    completed_after_message();
    waitall_mixed();
    free_and_cancel();
    errors();
    test_ok();
    MPI_Finalize();
    return 0;
}
