/*
 * session_reinit: a sessions-only program opens a new session after finalizing all of them
 * (MPI 4.0 section 11.3.1), three times over.
 *
 * Each round: Session_init -> a communicator over mpi://WORLD -> an allreduce and a ring of
 * pattern messages (data that differs per round) -> free -> Session_finalize. Round 1 has two
 * sessions open at once and closes both before round 2. Throughout, MPI_Initialized and
 * MPI_Finalized stay false (the world model never starts). With SESSION_REINIT_WORLD=1 the
 * program then starts the world model after the last session ended: MPI_Init, an allreduce
 * on MPI_COMM_WORLD, MPI_Finalize (MPI_Initialized and MPI_Finalized then true). Without it the
 * library goes down at exit. Rank 0 prints "OK session_reinit".
 */
#define TEST_NAME "session_reinit"
#include "../mpitest.h"

/* A communicator over mpi://WORLD of `s`, made with `tag`. */
static MPI_Comm world_comm(MPI_Session s, const char *tag)
{
    MPI_Group g;
    MPI_Comm c;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK(c != MPI_COMM_NULL, "Comm_create_from_group gave MPI_COMM_NULL");
    return c;
}

/* An allreduce and a ring of pattern messages on `c`; `salt` tells rounds apart. */
static void exercise(MPI_Comm c, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    test_rank = rank;
    test_size = size;
    long mine = (long)(rank + 1) * salt, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
    CHECK(sum == (long)size * (size + 1) / 2 * salt, "round %d allreduce: got %ld", salt, sum);
    enum { N = 5000 };
    unsigned char out[N], in[N];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    fill_pattern(out, N, message_seed(rank, right, salt));
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, N, MPI_BYTE, right, salt, in, N, MPI_BYTE, left, salt, c, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == salt, "ring status: source %d tag %d",
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_PATTERN(in, N, message_seed(left, rank, salt), "round %d ring message from %d", salt,
                  left);
}

/* MPI_Initialized and MPI_Finalized as expected. */
static void check_world_flags(int initialized, int finalized, const char *when)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == initialized, "MPI_Initialized is %d %s", flag, when);
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == finalized, "MPI_Finalized is %d %s", flag, when);
}

int main(int argc, char **argv)
{
    const char *world = getenv("SESSION_REINIT_WORLD");
    int then_world = world != NULL && strcmp(world, "1") == 0;
    check_world_flags(0, 0, "before anything");
    for (int round = 1; round <= 3; round++) {
        MPI_Session s;
        CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s));
        check_world_flags(0, 0, "with a session open");
        char tag[64];
        snprintf(tag, sizeof tag, "session_reinit.%d", round);
        MPI_Comm c = world_comm(s, tag);
        exercise(c, round);
        if (round == 1) {
            MPI_Session s2;
            CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
            MPI_Comm c2 = world_comm(s2, "session_reinit.second");
            exercise(c2, 100);
            CHECK_MPI(MPI_Comm_free(&c2));
            CHECK_MPI(MPI_Session_finalize(&s2));
        }
        CHECK_MPI(MPI_Comm_free(&c));
        CHECK_MPI(MPI_Session_finalize(&s));
        CHECK(s == MPI_SESSION_NULL, "Session_finalize did not clear the handle");
        check_world_flags(0, 0, "after the sessions were finalized");
    }
    if (then_world) {
        CHECK_MPI(MPI_Init(&argc, &argv));
        check_world_flags(1, 0, "after MPI_Init");
        CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
        CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
        exercise(MPI_COMM_WORLD, 7);
        test_ok();
        CHECK_MPI(MPI_Finalize());
        check_world_flags(1, 1, "after MPI_Finalize");
        return 0;
    }
    if (test_rank == 0) {
        printf("OK %s\n", TEST_NAME);
        fflush(stdout);
    }
    return 0;
}
