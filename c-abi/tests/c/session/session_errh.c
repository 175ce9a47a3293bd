/*
 * session_errh: errors of session calls go to the session's error handler.
 *
 * A handler made by MPI_Session_create_errhandler counts its calls and records the session
 * and the error class it was given; a session opened with it (no MPI_Init) gets an unknown
 * process set (MPI_ERR_ARG) and an out-of-range MPI_Session_get_nth_pset (MPI_ERR_ARG): the
 * handler runs once for each, with this session, and the calls return the code.
 * MPI_Session_call_errhandler runs it with the code given. MPI_Session_get_errhandler gives
 * it back; after MPI_Session_set_errhandler(MPI_ERRORS_RETURN) errors are only returned.
 * Errors of another session go to that session's handler, not this one's.
 * Rank 0 prints "OK session_errh".
 */
#define TEST_NAME "session_errh"
#include "../mpitest.h"

static int calls = 0;
static MPI_Session last_session = MPI_SESSION_NULL;
static int last_class = -1;

static void count_errors(MPI_Session *session, int *code, ...)
{
    calls++;
    last_session = *session;
    MPI_Error_class(*code, &last_class);
}

int main(void)
{
    MPI_Session plain;
    /* A session with the default handler first, so that the library is up. */
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &plain));
    MPI_Errhandler counting;
    CHECK_MPI(MPI_Session_create_errhandler(count_errors, &counting));
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, counting, &s));
    MPI_Errhandler got;
    CHECK_MPI(MPI_Session_get_errhandler(s, &got));
    CHECK(got == counting, "get_errhandler gave 0x%x, not the session's", (unsigned)got);

    MPI_Group g;
    int rc = MPI_Group_from_session_pset(s, "mpi://NOT_A_SET", &g);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "unknown pset: %s", error_text(rc));
    CHECK(calls == 1 && last_session == s && last_class == MPI_ERR_ARG,
          "handler: %d calls, session 0x%x, class %d", calls, (unsigned)last_session, last_class);

    int len = 0;
    rc = MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 1000, &len, NULL);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "pset 1000: %s", error_text(rc));
    CHECK(calls == 2 && last_class == MPI_ERR_ARG, "handler after nth_pset: %d calls", calls);

    CHECK_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(calls == 3 && last_class == MPI_ERR_OTHER && last_session == s,
          "call_errhandler: %d calls, class %d", calls, last_class);

    /* Another session's errors are its own. */
    rc = MPI_Group_from_session_pset(plain, "mpi://NOT_A_SET", &g);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "plain session: %s", error_text(rc));
    CHECK(calls == 3, "the other session's error reached this handler");

    CHECK_MPI(MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN));
    rc = MPI_Group_from_session_pset(s, "mpi://NOT_A_SET", &g);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "after set_errhandler: %s", error_text(rc));
    CHECK(calls == 3, "the handler ran after it was replaced");
    CHECK_MPI(MPI_Session_call_errhandler(s, MPI_ERR_OTHER));
    CHECK(calls == 3, "call_errhandler ran the replaced handler");
    CHECK_MPI(MPI_Errhandler_free(&counting));

    /* The rank, for the OK line: a communicator of the session. */
    MPI_Comm c;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, "session_errh", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Comm_rank(c, &test_rank));
    int total = 0;
    CHECK_MPI(MPI_Allreduce(&calls, &total, 1, MPI_INT, MPI_SUM, c));
    int size;
    CHECK_MPI(MPI_Comm_size(c, &size));
    CHECK(total == 3 * size, "handler calls over the job: %d", total);
    if (test_rank == 0) {
        printf("OK %s\n", TEST_NAME);
        fflush(stdout);
    }
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Session_finalize(&s));
    CHECK_MPI(MPI_Session_finalize(&plain));
    return 0;
}
