/*
 * session_world: the session model and the world model in one program.
 *
 * Session A opens before MPI_Init (the library comes up with it), MPI_Init joins it, session
 * B opens after; communicators of both sessions and MPI_COMM_WORLD are used interleaved.
 * Session A ends, then MPI_Finalize ends the world model while B is open: B's communicator
 * still works (allreduce, ring) until B ends, which takes the library down.
 * MPI_Initialized / MPI_Finalized follow the world model only. An invalid session handle is
 * MPI_ERR_SESSION (raised on MPI_COMM_WORLD's handler, here MPI_ERRORS_RETURN).
 * Rank 0 prints "OK session_world".
 */
#define TEST_NAME "session_world"
#include "../mpitest.h"

static MPI_Comm world_comm(MPI_Session s, const char *tag)
{
    MPI_Group g;
    MPI_Comm c;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK_MPI(MPI_Group_free(&g));
    return c;
}

static void exercise(MPI_Comm c, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    int mine = rank + salt, max = -1;
    CHECK_MPI(MPI_Allreduce(&mine, &max, 1, MPI_INT, MPI_MAX, c));
    CHECK(max == size - 1 + salt, "allreduce max %d, want %d", max, size - 1 + salt);
    enum { N = 2048 };
    unsigned char out[N], in[N];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    fill_pattern(out, N, message_seed(rank, right, salt));
    CHECK_MPI(MPI_Sendrecv(out, N, MPI_BYTE, right, 3, in, N, MPI_BYTE, left, 3, c,
                           MPI_STATUS_IGNORE));
    CHECK_PATTERN(in, N, message_seed(left, rank, salt), "ring message from %d", left);
}

int main(int argc, char **argv)
{
    MPI_Session a, b;
    int flag = -1;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a));
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized is %d with a session only", flag);
    MPI_Comm ca = world_comm(a, "session_world.a");

    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 1, "MPI_Initialized is %d after MPI_Init", flag);
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b));
    MPI_Comm cb = world_comm(b, "session_world.b");
    int cmp;
    CHECK_MPI(MPI_Comm_compare(ca, MPI_COMM_WORLD, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "a's communicator vs MPI_COMM_WORLD: %d", cmp);
    for (int i = 0; i < 3; i++) {
        exercise(ca, i);
        exercise(MPI_COMM_WORLD, 10 + i);
        exercise(cb, 20 + i);
    }
    /* A communicator made from a world-model group in a session program is the same kind. */
    MPI_Group wg;
    MPI_Comm cw;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Comm_create_from_group(wg, "session_world.w", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &cw));
    exercise(cw, 40);
    CHECK_MPI(MPI_Comm_free(&cw));
    CHECK_MPI(MPI_Group_free(&wg));

    /* An invalid session handle. */
    int n = 0;
    int rc = MPI_Session_get_num_psets(MPI_SESSION_NULL, MPI_INFO_NULL, &n);
    CHECK(error_class_of(rc) == MPI_ERR_SESSION, "MPI_SESSION_NULL: %s", error_text(rc));

    CHECK_MPI(MPI_Comm_free(&ca));
    CHECK_MPI(MPI_Session_finalize(&a));
    rc = MPI_Session_get_num_psets(a, MPI_INFO_NULL, &n);
    CHECK(error_class_of(rc) == MPI_ERR_SESSION, "a finalized session: %s", error_text(rc));
    exercise(cb, 50);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Finalize());
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 1, "MPI_Finalized is %d after MPI_Finalize", flag);

    /* Session b keeps the library up. */
    exercise(cb, 60);
    CHECK_MPI(MPI_Barrier(cb));
    if (test_rank == 0) {
        printf("OK %s\n", TEST_NAME);
        fflush(stdout);
    }
    CHECK_MPI(MPI_Comm_free(&cb));
    CHECK_MPI(MPI_Session_finalize(&b));
    return 0;
}
