/*
 * connect_pair: two threads of one process accept and connect at once, on different ports,
 * under MPI_THREAD_MULTIPLE in both jobs.
 * Run as   mpirun -n A connect_pair a PREFIX   and   mpirun -n B connect_pair b PREFIX
 * (the name service directory shared, MPI_NAME_SERVICE_DIR).
 *
 * Each job opens a port (rank 0) and publishes it as PREFIX-a or PREFIX-b. On every rank
 * two threads start together, each on a duplicate of the world of its own (root 0): one
 * accepts on this job's port, the other connects to the other job's (looked up with bounded
 * retries). So each process is in an accept and a connect at once, each waiting for the other
 * job's thread: a build whose calls held the library's lock (or the context-id lock) across
 * their waits can hang here. On both new intercommunicators at once, the two threads then
 * exchange data both ways with every remote process, merge, run an allreduce, disconnect.
 */
#define TEST_NAME "connect_pair"
#include "mpitest.h"
#include <pthread.h>
#include "dyn_work.h"

static char my_port[MPI_MAX_PORT_NAME], their_port[MPI_MAX_PORT_NAME];
static char their_service[256];
static int job_a;

struct side {
    MPI_Comm comm;
    MPI_Comm inter;
    int accepting;
};

static void *run_side(void *arg)
{
    struct side *s = arg;
    if (s->accepting) {
        CHECK_MPI(MPI_Comm_accept(my_port, MPI_INFO_NULL, 0, s->comm, &s->inter));
    } else {
        if (test_rank == 0)
            lookup_port(their_service, their_port, 800);
        CHECK_MPI(MPI_Comm_connect(their_port, MPI_INFO_NULL, 0, s->comm, &s->inter));
    }
    int remote;
    CHECK_MPI(MPI_Comm_remote_size(s->inter, &remote));
    /* Channel 1: a's port (a accepts), channel 2: b's port. Ids: a's ranks from 10, b's from
     * 20. The accepting group comes first in the merge. */
    int chan = s->accepting == job_a ? 1 : 2;
    exchange(s->inter, job_a ? 10 : 20, job_a ? 20 : 10, chan, s->accepting);
    CHECK_MPI(MPI_Comm_disconnect(&s->inter));
    return NULL;
}

int main(int argc, char **argv)
{
    init_multiple(&argc, &argv);
    CHECK(argc == 3, "usage: connect_pair a|b PREFIX");
    job_a = strcmp(argv[1], "a") == 0;
    char mine[256];
    snprintf(mine, sizeof mine, "%s-%s", argv[2], job_a ? "a" : "b");
    snprintf(their_service, sizeof their_service, "%s-%s", argv[2], job_a ? "b" : "a");
    if (test_rank == 0) {
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, my_port));
        CHECK_MPI(MPI_Publish_name(mine, MPI_INFO_NULL, my_port));
    }
    struct side sides[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        sides[i] = (struct side){.inter = MPI_COMM_NULL, .accepting = i == 0};
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &sides[i].comm));
    }
    /* Job a starts its accepting thread first, job b its connecting one. */
    for (int k = 0; k < 2; k++) {
        int i = job_a ? k : 1 - k;
        CHECK(pthread_create(&t[i], NULL, run_side, &sides[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK(sides[i].inter == MPI_COMM_NULL, "disconnect left the handle");
        CHECK_MPI(MPI_Comm_free(&sides[i].comm));
    }
    if (test_rank == 0) {
        CHECK_MPI(MPI_Unpublish_name(mine, MPI_INFO_NULL, my_port));
        CHECK_MPI(MPI_Close_port(my_port));
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
