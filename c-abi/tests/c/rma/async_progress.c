/*
 * async_progress: passive-target one-sided operations completing while the target computes
 * and makes no MPI call, which needs the library's asynchronous progress thread
 * (MPI_ASYNC_PROGRESS=1) on the message path.
 *
 * Rank 0 is the target, every other rank an origin. After the window exists and a barrier,
 * the target spins, reading its window through a volatile pointer, without any MPI call,
 * until every origin's values are there or ASYNC_TEST_WAIT_S seconds (default 20) have
 * passed. Each origin meanwhile locks the target exclusively, puts its own value in its own
 * element, adds its rank to element 0 with MPI_Accumulate(MPI_SUM), and unlocks (after a
 * pause of 100 ms, so that the target is computing by then). The target
 * prints one line, "target: values seen after <ms> ms" or "target: values not seen within
 * <s> s" (the harness looks at which), checks what it saw, then calls MPI_Barrier (which
 * lets origins still waiting finish) and checks the final values under a lock of its own.
 *
 * ASYNC_TEST_WINDOW: "create" (MPI_Win_create over the program's memory, the default) or
 * "allocate" (MPI_Win_allocate; run it with MPI_WIN_DIRECT=0 for the message path).
 *
 * Before the windows, calls whose user code calls MPI again (an error handler, a reduction
 * operation, blocking and nonblocking) check that such nested calls work with the thread's
 * lock held.
 */
#define TEST_NAME "async_progress"
#include "mpitest.h"

enum { TAG_BAD = 7 };

/* A value an origin puts: distinct per origin. */
static int put_value(int origin)
{
    return 1000 + 17 * origin;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* --- user code that calls MPI inside MPI calls ------------------------------------------- */

static int handler_calls, handler_rank = -1;

static void calling_handler(MPI_Comm *comm, int *code, ...)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    handler_calls++;
    MPI_Comm_rank(*comm, &handler_rank);
    MPI_Error_string(*code, text, &len);
}

static int op_inner_size;

/* Sums ints, and asks MPI for the world's size while at it. */
static void calling_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    MPI_Comm_size(MPI_COMM_WORLD, &op_inner_size);
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

static void nested_calls(void)
{
    MPI_Comm comm;
    MPI_Errhandler handler;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_create_errhandler(calling_handler, &handler));
    CHECK_MPI(MPI_Comm_set_errhandler(comm, handler));
    int x = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, test_size + 5, TAG_BAD, comm);
    CHECK(rc != MPI_SUCCESS, "a send to rank %d succeeded", test_size + 5);
    CHECK(handler_calls == 1 && handler_rank == test_rank,
          "the error handler ran %d times and saw rank %d", handler_calls, handler_rank);

    MPI_Op op;
    CHECK_MPI(MPI_Op_create(calling_sum, 1, &op));
    int mine = test_rank + 1, sum = 0, want = test_size * (test_size + 1) / 2;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, op, comm));
    CHECK(sum == want, "user-op allreduce gave %d, want %d", sum, want);
    MPI_Request req;
    sum = 0;
    CHECK_MPI(MPI_Iallreduce(&mine, &sum, 1, MPI_INT, op, comm, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(sum == want, "user-op iallreduce gave %d, want %d", sum, want);
    CHECK(test_size == 1 || op_inner_size == test_size,
          "MPI_Comm_size inside the operation gave %d", op_inner_size);
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Errhandler_free(&handler));
    CHECK_MPI(MPI_Comm_free(&comm));
}

/* --- the target that computes ----------------------------------------------------------- */

/* Whether the window of the target holds every origin's value and the full sum. */
static int all_there(volatile int *slots)
{
    int want_sum = test_size * (test_size - 1) / 2;
    if (slots[0] != want_sum)
        return 0;
    for (int r = 1; r < test_size; r++)
        if (slots[r] != put_value(r))
            return 0;
    return 1;
}

static void check_values(const char *when, volatile int *slots)
{
    int want_sum = test_size * (test_size - 1) / 2;
    CHECK(slots[0] == want_sum, "%s: element 0 is %d, want the sum %d", when, slots[0], want_sum);
    for (int r = 1; r < test_size; r++)
        CHECK(slots[r] == put_value(r), "%s: element %d is %d, want %d", when, r, slots[r],
              put_value(r));
}

/* Spins without calling MPI until the values are there or `limit_s` passes. Returns the
 * seconds it took, or a negative number if they never came. */
static double compute_until_seen(volatile int *slots, double limit_s)
{
    double start = seconds_now();
    volatile double work = 1.0;
    for (unsigned long i = 0;; i++) {
        if (all_there(slots))
            return seconds_now() - start;
        work = work * 1.000001 + 1e-9; /* the "computation" */
        if ((i & 1023) == 0 && seconds_now() - start > limit_s)
            return -1.0;
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    nested_calls();

    const char *flavor = getenv("ASYNC_TEST_WINDOW");
    if (flavor == NULL || *flavor == '\0')
        flavor = "create";
    const char *limit_text = getenv("ASYNC_TEST_WAIT_S");
    double limit_s = limit_text != NULL ? atof(limit_text) : 20.0;
    CHECK(limit_s > 0.0 && limit_s <= 20.0, "ASYNC_TEST_WAIT_S=%s: want 0 < s <= 20",
          limit_text);

    /* The target exposes one int per rank; origins expose nothing. */
    MPI_Aint bytes = test_rank == 0 ? (MPI_Aint)(test_size * sizeof(int)) : 0;
    int *base = NULL;
    int *own = NULL;
    MPI_Win win;
    if (strcmp(flavor, "create") == 0) {
        own = calloc((size_t)test_size, sizeof(int));
        CHECK(own != NULL, "out of memory");
        base = own;
        CHECK_MPI(MPI_Win_create(base, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    } else if (strcmp(flavor, "allocate") == 0) {
        CHECK_MPI(MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                                   &win));
        if (test_rank == 0)
            memset(base, 0, (size_t)bytes);
    } else {
        FAIL("ASYNC_TEST_WINDOW=%s: want create or allocate", flavor);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    if (test_rank == 0) {
        /* No MPI call from here until every origin's values are seen (or time is up). */
        volatile int *slots = base;
        double took = compute_until_seen(slots, limit_s);
        if (took >= 0.0) {
            printf("target: values seen after %.1f ms\n", took * 1e3);
            check_values("while computing", slots);
        } else {
            printf("target: values not seen within %.1f s\n", limit_s);
        }
        fflush(stdout);
    } else {
        /* Gives the target time to leave the barrier and start computing, so that nothing is
         * applied by its own last MPI call. */
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        int value = put_value(test_rank), addend = test_rank;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Put(&value, 1, MPI_INT, 0, test_rank, 1, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(&addend, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        check_values("after the barrier", base);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));
    free(own);
    test_ok();
    MPI_Finalize();
    return 0;
}
