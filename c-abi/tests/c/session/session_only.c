/*
 * session_only: the session model alone, no MPI_Init (MPI 4.0 section 11.3).
 *
 * Session_init (asking for MPI_THREAD_FUNNELED through the thread_level key) -> the process
 * sets (mpi://WORLD, mpi://SELF, their mpi_size) -> a group from mpi://WORLD ->
 * MPI_Comm_create_from_group -> an allreduce and a ring of pattern messages -> free ->
 * Session_finalize. Then two sessions at once, each with its own communicator from its own
 * group (different string tags), used interleaved and finalized in the order they were
 * opened. MPI_Initialized stays false throughout (the world model never starts), and an
 * unknown process-set name is MPI_ERR_ARG under the session's MPI_ERRORS_RETURN.
 * Rank 0 prints "OK session_only".
 */
#define TEST_NAME "session_only"
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

/* An allreduce and a ring of pattern messages on `c`; `salt` tells runs apart. */
static void exercise(MPI_Comm c, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    long mine = (long)(rank + 1) * salt, sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
    CHECK(sum == (long)size * (size + 1) / 2 * salt, "allreduce: got %ld, want %ld", sum,
          (long)size * (size + 1) / 2 * salt);
    enum { N = 3000 };
    unsigned char out[N], in[N];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    fill_pattern(out, N, message_seed(rank, right, salt));
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(out, N, MPI_BYTE, right, salt, in, N, MPI_BYTE, left, salt, c, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == salt, "ring status: source %d tag %d",
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_PATTERN(in, N, message_seed(left, rank, salt), "ring message from %d", left);
}

int main(void)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized is %d before anything", flag);

    MPI_Info asked;
    CHECK_MPI(MPI_Info_create(&asked));
    CHECK_MPI(MPI_Info_set(asked, "thread_level", "MPI_THREAD_FUNNELED"));
    MPI_Session s;
    CHECK_MPI(MPI_Session_init(asked, MPI_ERRORS_RETURN, &s));
    CHECK_MPI(MPI_Info_free(&asked));
    CHECK(s != MPI_SESSION_NULL, "Session_init gave MPI_SESSION_NULL");

    /* The world model has not started, though the library runs. */
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized is %d with only a session open", flag);

    MPI_Info used;
    char value[MPI_MAX_INFO_VAL + 1];
    CHECK_MPI(MPI_Session_get_info(s, &used));
    CHECK_MPI(MPI_Info_get(used, "thread_level", MPI_MAX_INFO_VAL, value, &flag));
    CHECK(flag && strcmp(value, "MPI_THREAD_FUNNELED") == 0, "thread_level is '%s'", value);
    CHECK_MPI(MPI_Info_free(&used));

    /* The process sets. */
    int npsets = 0;
    CHECK_MPI(MPI_Session_get_num_psets(s, MPI_INFO_NULL, &npsets));
    CHECK(npsets >= 2, "%d process sets", npsets);
    int seen_world = 0, seen_self = 0, world_size = -1;
    for (int i = 0; i < npsets; i++) {
        int len = 0;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL));
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "pset %d: length %d", i, len);
        char name[MPI_MAX_PSET_NAME_LEN];
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name));
        CHECK((int)strlen(name) == len - 1, "pset %d: '%s' is not %d long", i, name, len - 1);
        MPI_Info pinfo;
        CHECK_MPI(MPI_Session_get_pset_info(s, name, &pinfo));
        CHECK_MPI(MPI_Info_get(pinfo, "mpi_size", MPI_MAX_INFO_VAL, value, &flag));
        CHECK(flag, "pset %s has no mpi_size", name);
        CHECK_MPI(MPI_Info_free(&pinfo));
        if (strcmp(name, "mpi://WORLD") == 0) {
            seen_world = 1;
            world_size = atoi(value);
        } else if (strcmp(name, "mpi://SELF") == 0) {
            seen_self = 1;
            CHECK(atoi(value) == 1, "mpi://SELF has mpi_size %s", value);
        }
    }
    CHECK(seen_world && seen_self, "the psets lack mpi://WORLD or mpi://SELF");
    /* A short buffer gets a truncated, terminated name. */
    {
        char shortname[5];
        int len = (int)sizeof shortname;
        CHECK_MPI(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, shortname));
        CHECK(strlen(shortname) == 4, "truncated name '%s'", shortname);
    }

    /* An unknown set is MPI_ERR_ARG (the session returns errors). */
    MPI_Group bad = MPI_GROUP_NULL;
    int rc = MPI_Group_from_session_pset(s, "mpi://NO_SUCH_SET", &bad);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "unknown pset: %s", error_text(rc));

    MPI_Comm c = world_comm(s, "session_only.first");
    CHECK_MPI(MPI_Comm_rank(c, &test_rank));
    CHECK_MPI(MPI_Comm_size(c, &test_size));
    CHECK(test_size == world_size, "the communicator has %d ranks, mpi://WORLD %d", test_size,
          world_size);
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_get_errhandler(c, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "the communicator's handler is not the one passed");
    exercise(c, 1);

    /* mpi://SELF: a communicator of one. */
    MPI_Group selfg;
    MPI_Comm selfc;
    CHECK_MPI(MPI_Group_from_session_pset(s, "mpi://SELF", &selfg));
    CHECK_MPI(MPI_Comm_create_from_group(selfg, "session_only.self", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &selfc));
    int n = 0;
    CHECK_MPI(MPI_Comm_size(selfc, &n));
    CHECK(n == 1, "self communicator of %d", n);
    exercise(selfc, 2);
    CHECK_MPI(MPI_Comm_free(&selfc));
    CHECK_MPI(MPI_Group_free(&selfg));

    /* Two sessions at once. */
    MPI_Session s2;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2));
    CHECK(s2 != s, "two open sessions share a handle");
    MPI_Comm c2 = world_comm(s2, "session_only.second");
    int cmp;
    CHECK_MPI(MPI_Comm_compare(c, c2, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "two communicators over mpi://WORLD compare %d", cmp);
    for (int round = 0; round < 3; round++) {
        exercise(c, 10 + round);
        exercise(c2, 20 + round);
    }
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Session_finalize(&s));
    CHECK(s == MPI_SESSION_NULL, "Session_finalize did not clear the handle");
    /* The second session still works after the first ended. */
    exercise(c2, 30);
    CHECK_MPI(MPI_Barrier(c2));
    if (test_rank == 0) {
        printf("OK %s\n", TEST_NAME);
        fflush(stdout);
    }
    CHECK_MPI(MPI_Comm_free(&c2));
    CHECK_MPI(MPI_Session_finalize(&s2));
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK(flag == 0, "MPI_Initialized is %d after the sessions", flag);
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK(flag == 0, "MPI_Finalized is %d without MPI_Init", flag);
    return 0;
}
