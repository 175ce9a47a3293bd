/*
 * misc: the environment calls and a few collective-free conveniences.
 *
 *  - MPI_Initialized / MPI_Finalized before MPI_Init_thread, between, after
 *    MPI_Finalize; MPI_Init_thread's provided level is a valid level (and, as
 *    MPICH requests MULTIPLE here, at most that) and MPI_Query_thread agrees;
 *  - MPI_Wtime never goes backwards and sees a 10 ms sleep; MPI_Wtick > 0;
 *  - MPI_Get_processor_name, MPI_Get_version (3.0 or later),
 *    MPI_Get_library_version non-empty; MPI_TAG_UB attribute >= 32767;
 *  - MPI_Sendrecv and MPI_Sendrecv_replace around a ring (short and long);
 *  - MPI_COMM_SELF: size 1, rank 0, a message to oneself; a message to
 *    oneself on MPI_COMM_WORLD; MPI_Barrier.
 */
#define TEST_NAME "misc"
#include "mpitest.h"

static void check_flags(int want_initialized, int want_finalized, const char *when)
{
    int initialized = -1, finalized = -1;
    if (MPI_Initialized(&initialized) != MPI_SUCCESS || MPI_Finalized(&finalized) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL misc: MPI_Initialized or MPI_Finalized failed %s\n", when);
        exit(1);
    }
    if (initialized != want_initialized || finalized != want_finalized) {
        fprintf(stderr, "FAIL misc rank %d: %s: MPI_Initialized %d, MPI_Finalized %d; want %d and %d\n",
                test_rank, when, initialized, finalized, want_initialized, want_finalized);
        exit(1);
    }
}

static void threads(int provided)
{
    int queried = -1;
    CHECK(provided == MPI_THREAD_SINGLE || provided == MPI_THREAD_FUNNELED ||
              provided == MPI_THREAD_SERIALIZED || provided == MPI_THREAD_MULTIPLE,
          "MPI_Init_thread provided %d, not a thread level", provided);
    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "thread level constants are not in increasing order");
    CHECK(provided <= MPI_THREAD_MULTIPLE, "provided %d above the requested MPI_THREAD_MULTIPLE", provided);
    CHECK_MPI(MPI_Query_thread(&queried));
    CHECK(queried == provided, "MPI_Query_thread says %d, MPI_Init_thread provided %d", queried, provided);
}

static void clocks(void)
{
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick < 1.0, "MPI_Wtick() = %g", tick);
    double prev = MPI_Wtime();
    for (int i = 0; i < 10000; i++) {
        double now = MPI_Wtime();
        CHECK(now >= prev, "MPI_Wtime went backwards: %.9f then %.9f", prev, now);
        prev = now;
    }
    double before = MPI_Wtime();
    sleep_ms(10);
    double slept = MPI_Wtime() - before;
    CHECK(slept >= 0.009 && slept < 5.0, "a 10 ms sleep measured %.6f s with MPI_Wtime", slept);
}

static void identity(void)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = -1;
    CHECK_MPI(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len,
          "MPI_Get_processor_name: length %d, text \"%s\"", len, name);

    int version = -1, subversion = -1;
    CHECK_MPI(MPI_Get_version(&version, &subversion));
    CHECK(version >= 3 && subversion >= 0, "MPI_Get_version says %d.%d, want 3.0 or later", version, subversion);

    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    CHECK_MPI(MPI_Get_library_version(library, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING && (int)strlen(library) == len,
          "MPI_Get_library_version: length %d, strlen %zu", len, strlen(library));

    int *tag_ub = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && tag_ub && *tag_ub >= 32767, "MPI_TAG_UB: flag %d, value %d", flag, tag_ub ? *tag_ub : -1);

    if (test_rank == 0) {
        printf("processor %s, MPI %d.%d, tag_ub %d\n", name, version, subversion, *tag_ub);
        fflush(stdout);
    }
}

static void rings(void)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    MPI_Status st;

    int out[3] = {test_rank, 2 * test_rank, 3 * test_rank}, in[3] = {-1, -1, -1};
    CHECK_MPI(MPI_Sendrecv(out, 3, MPI_INT, right, 11, in, 3, MPI_INT, left, 11, MPI_COMM_WORLD, &st));
    CHECK(in[0] == left && in[1] == 2 * left && in[2] == 3 * left && st.MPI_SOURCE == left && st.MPI_TAG == 11,
          "Sendrecv: got {%d, %d, %d} from %d tag %d", in[0], in[1], in[2], st.MPI_SOURCE, st.MPI_TAG);

    const int sizes[] = {8, 300000};
    for (int k = 0; k < 2; k++) {
        int n = sizes[k];
        unsigned char *buf = test_malloc((size_t)n);
        fill_pattern(buf, (size_t)n, message_seed(test_rank, right, k));
        CHECK_MPI(MPI_Sendrecv_replace(buf, n, MPI_BYTE, right, 12, left, 12, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == left && status_bytes(&st) == n, "Sendrecv_replace of %d bytes: source %d count %d",
              n, st.MPI_SOURCE, status_bytes(&st));
        CHECK_PATTERN(buf, (size_t)n, message_seed(left, test_rank, k), "Sendrecv_replace of %d bytes", n);
        free(buf);
    }
}

static void self(void)
{
    int size = -1, rank = -1;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &rank));
    CHECK(size == 1 && rank == 0, "MPI_COMM_SELF: size %d rank %d", size, rank);

    int out = 100 + test_rank, in = -1;
    MPI_Status st;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, 0, 5, &in, 1, MPI_INT, 0, 5, MPI_COMM_SELF, &st));
    CHECK(in == out && st.MPI_SOURCE == 0, "message to self on MPI_COMM_SELF: got %d from %d", in, st.MPI_SOURCE);

    MPI_Request req;
    in = -1;
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, test_rank, 6, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Recv(&in, 1, MPI_INT, test_rank, 6, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(in == out && st.MPI_SOURCE == test_rank, "message to self on MPI_COMM_WORLD: got %d from %d", in,
          st.MPI_SOURCE);
}

int main(int argc, char **argv)
{
    int provided = -1;
    check_flags(0, 0, "before MPI_Init_thread");
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    check_flags(1, 0, "after MPI_Init_thread");
    threads(provided);
    clocks();
    identity();
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    rings();
    self();
    for (int i = 0; i < 5; i++)
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Finalize());
    check_flags(1, 1, "after MPI_Finalize");
    if (test_rank == 0) {
        printf("thread level provided: %d\n", provided);
        printf("OK %s\n", TEST_NAME);
    }
    return 0;
}
