/*
 * accept_waits: MPI_Comm_accept under MPI_THREAD_MULTIPLE waits with the library's lock let
 * go, while the other threads of the process (and the other ranks) go on communicating.
 * Run as   mpirun -n A accept_waits server SERVICE   and   mpirun -n B accept_waits client SERVICE
 * (the name service directory shared, MPI_NAME_SERVICE_DIR).
 *
 * Server (MPI_THREAD_MULTIPLE): rank 0 opens a port. On every rank one thread enters
 * MPI_Comm_accept (root 0, on a duplicate of the world) while two worker threads, each on a
 * communicator of its own, run ring exchanges and allreduces (dyn_work.h). When the workers
 * of every rank are done (an allreduce among them), rank 0's first worker publishes the port
 * under SERVICE: only then can the client find it, so the accept returns only after the other
 * threads have communicated while it waited. A build whose accept held the lock while it
 * waited hangs here: the workers cannot make their calls, the name is never published.
 * Client (plain MPI_Init: the path that holds the lock throughout, which must interoperate
 * with the server's): looks SERVICE up (bounded retries: the client job connects only once
 * the server's workers are done), connects. Then both exchange data both ways with every
 * remote process, merge, run an allreduce over both jobs, and disconnect.
 */
#define TEST_NAME "accept_waits"
#include "mpitest.h"
#include <pthread.h>
#include "dyn_work.h"

static char port[MPI_MAX_PORT_NAME];
static const char *service;
static MPI_Comm accept_comm;
static int accepted; /* set with __atomic builtins */

static void *accepting(void *arg)
{
    MPI_Comm *inter = arg;
    CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, accept_comm, inter));
    __atomic_store_n(&accepted, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Once every rank's workers are done (rank 0): the port is published. */
static void publish(void)
{
    CHECK(!__atomic_load_n(&accepted, __ATOMIC_SEQ_CST),
          "the accept returned before the port was published");
    CHECK_MPI(MPI_Publish_name(service, MPI_INFO_NULL, port));
}

static void server(void)
{
    MPI_Comm comms[2];
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &accept_comm));
    for (int i = 0; i < 2; i++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
    if (test_rank == 0)
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
    MPI_Comm inter = MPI_COMM_NULL;
    pthread_t acc, workers[2];
    struct worker w[2];
    CHECK(pthread_create(&acc, NULL, accepting, &inter) == 0, "pthread_create");
    sleep_ms(50); /* the accept is inside its wait (the test holds without this too) */
    for (int i = 0; i < 2; i++) {
        w[i] = (struct worker){.comm = comms[i], .id = i, .then = i == 0 ? publish : NULL};
        CHECK(pthread_create(&workers[i], NULL, work, &w[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(workers[i], NULL);
        CHECK(w[i].rounds == WORK_ROUNDS, "worker %d did %d rounds", i, w[i].rounds);
    }
    pthread_join(acc, NULL);
    CHECK(inter != MPI_COMM_NULL, "no intercommunicator");
    exchange(inter, 10, 20, 1, 1);
    CHECK_MPI(MPI_Comm_disconnect(&inter));
    if (test_rank == 0) {
        CHECK_MPI(MPI_Unpublish_name(service, MPI_INFO_NULL, port));
        CHECK_MPI(MPI_Close_port(port));
    }
    for (int i = 0; i < 2; i++)
        CHECK_MPI(MPI_Comm_free(&comms[i]));
    CHECK_MPI(MPI_Comm_free(&accept_comm));
}

static void client(void)
{
    if (test_rank == 0)
        lookup_port(service, port, 800);
    MPI_Comm inter;
    CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter));
    exchange(inter, 20, 10, 1, 0);
    CHECK_MPI(MPI_Comm_disconnect(&inter));
}

int main(int argc, char **argv)
{
    int is_server = argc == 3 && strcmp(argv[1], "server") == 0;
    if (is_server)
        init_multiple(&argc, &argv);
    else
        test_init(&argc, &argv);
    CHECK(argc == 3, "usage: accept_waits server|client SERVICE");
    service = argv[2];
    if (is_server)
        server();
    else
        client();
    test_ok();
    MPI_Finalize();
    return 0;
}
