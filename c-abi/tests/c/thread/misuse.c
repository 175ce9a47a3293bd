/*
 * misuse: the checks of the lower thread levels' rules (MPI_THREAD_CHECK=1).
 *
 *   (default)          MPI_THREAD_FUNNELED: a call from another thread returns MPI_ERR_OTHER
 *                      under MPI_ERRORS_RETURN, with a message naming the level; the calls MPI
 *                      lets any thread make (MPI_Query_thread, MPI_Is_thread_main,
 *                      MPI_Initialized) still work there; the main thread goes on.
 *   MISUSE_MODE=serialized in the environment: MPI_THREAD_SERIALIZED, 2 ranks: a thread of rank 0 waits in MPI_Recv
 *                      while another calls MPI_Comm_rank: the job ends with a message naming
 *                      the level (the harness checks the message and the failing exit).
 */
#define TEST_NAME "misuse"
#include "mpitest.h"
#include <pthread.h>

static int other_code = -1, other_level = -1, other_main = -1, other_init = -1;

static void *other_thread(void *arg)
{
    (void)arg;
    int rank = -1;
    other_code = MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    other_level = -1;
    CHECK_MPI(MPI_Query_thread(&other_level));
    CHECK_MPI(MPI_Is_thread_main(&other_main));
    CHECK_MPI(MPI_Initialized(&other_init));
    return NULL;
}

static void funneled(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_FUNNELED, "provided %d", provided);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(error_class_of(other_code) == MPI_ERR_OTHER, "a call from another thread gave %s",
          error_text(other_code));
    char text[MPI_MAX_ERROR_STRING];
    int len;
    CHECK_MPI(MPI_Error_string(other_code, text, &len));
    CHECK(strstr(text, "MPI_THREAD_FUNNELED") != NULL, "the message names the level: %s", text);
    CHECK(other_level == MPI_THREAD_FUNNELED && other_main == 0 && other_init == 1,
          "query calls from the other thread: level %d, main %d, initialized %d", other_level,
          other_main, other_init);
    test_ok();
    CHECK_MPI(MPI_Finalize());
}

static void *receiver(void *arg)
{
    (void)arg;
    int v;
    MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

static void serialized(int argc, char **argv)
{
    int provided;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_SERIALIZED && test_size == 2, "serialized on 2 ranks");
    if (test_rank == 0) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, receiver, NULL) == 0, "pthread_create");
        sleep_ms(300); /* the receiver is waiting inside MPI by now */
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* ends the job */
        printf("NOT DETECTED\n");
        fflush(stdout);
        pthread_join(t, NULL);
    } else {
        sleep_ms(5000);
        int v = 1;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    const char *mode = getenv("MISUSE_MODE");
    if (mode && strcmp(mode, "serialized") == 0)
        serialized(argc, argv);
    else
        funneled(argc, argv);
    return 0;
}
