/*
 * spawn_waits: MPI_Comm_spawn under MPI_THREAD_MULTIPLE waits with the library's lock let
 * go, while another thread of the process communicates.
 * Run as   mpirun -n P spawn_waits CHILDREN
 *
 * Parents (MPI_THREAD_MULTIPLE): one thread spawns CHILDREN copies of this program (root 0,
 * on a duplicate of the world) while a worker thread runs ring exchanges and allreduces on a
 * communicator of its own (dyn_work.h). The children wait before MPI_Init (bounded) until a
 * flag file exists, which rank 0's worker creates once every parent's worker is done: so the
 * spawn can return only after the worker communicated while it waited. A build whose spawn
 * held the lock while it waited hangs here. Then parents and children exchange data both
 * ways with every remote process, merge, run an allreduce, and disconnect; then rank 0
 * removes the flag file.
 */
#define TEST_NAME "spawn_waits"
#include "mpitest.h"
#include <pthread.h>
#include <unistd.h>
#include "dyn_work.h"

static char flag[256];
static char *test_program; /* argv[0]: what the parents spawn */

static int children;
static MPI_Comm spawn_comm;

static void *spawning(void *arg)
{
    MPI_Comm *inter = arg;
    char n[16];
    snprintf(n, sizeof n, "%d", children);
    char *args[] = {"child", flag, n, NULL};
    int *codes = test_malloc(sizeof(int) * (size_t)children);
    CHECK_MPI(MPI_Comm_spawn(test_program, args, children, MPI_INFO_NULL, 0, spawn_comm, inter,
                             codes));
    for (int i = 0; i < children; i++)
        CHECK(codes[i] == MPI_SUCCESS, "errcode %d is %d", i, codes[i]);
    free(codes);
    return NULL;
}

/* Once every parent's worker is done (rank 0): the flag the children wait for. */
static void make_flag(void)
{
    FILE *f = fopen(flag, "w");
    CHECK(f != NULL, "cannot create %s", flag);
    fclose(f);
}

static void parent(void)
{
    MPI_Comm work_comm;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &spawn_comm));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &work_comm));
    int id = (int)getpid();
    CHECK_MPI(MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD));
    snprintf(flag, sizeof flag, "/tmp/spawn_waits.%d.flag", id);
    MPI_Comm inter = MPI_COMM_NULL;
    pthread_t s, wt;
    struct worker w = {.comm = work_comm, .id = 0, .then = make_flag};
    CHECK(pthread_create(&s, NULL, spawning, &inter) == 0, "pthread_create");
    sleep_ms(50);
    CHECK(pthread_create(&wt, NULL, work, &w) == 0, "pthread_create");
    pthread_join(wt, NULL);
    CHECK(w.rounds == WORK_ROUNDS, "the worker did %d rounds", w.rounds);
    pthread_join(s, NULL);
    int remote;
    CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
    CHECK(remote == children, "remote size %d, expected %d", remote, children);
    exchange(inter, 10, 20, 3, 1);
    CHECK_MPI(MPI_Comm_disconnect(&inter));
    /* Every child has looked at the flag (before its MPI_Init, which the disconnect waited
     * for). */
    if (test_rank == 0)
        unlink(flag);
    CHECK_MPI(MPI_Comm_free(&work_comm));
    CHECK_MPI(MPI_Comm_free(&spawn_comm));
}

int main(int argc, char **argv)
{
    test_program = argv[0];
    if (argc == 4 && strcmp(argv[1], "child") == 0) {
        /* Wait (bounded) for the parents' workers before MPI_Init, which connects to them. */
        int found = 0;
        for (int i = 0; i < 1200 && !found; i++) {
            found = access(argv[2], F_OK) == 0;
            if (!found)
                sleep_ms(25);
        }
        test_init(&argc, &argv);
        CHECK(found, "the parents' workers never finished (%s)", argv[2]);
        MPI_Comm up;
        CHECK_MPI(MPI_Comm_get_parent(&up));
        CHECK(up != MPI_COMM_NULL, "a child without a parent");
        CHECK(test_size == atoi(argv[3]), "%d children, expected %s", test_size, argv[3]);
        exchange(up, 20, 10, 3, 0);
        CHECK_MPI(MPI_Comm_disconnect(&up));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (test_rank == 0) {
            printf("child ok\n");
            fflush(stdout);
        }
        MPI_Finalize();
        return 0;
    }
    init_multiple(&argc, &argv);
    CHECK(argc == 2, "usage: spawn_waits CHILDREN");
    children = atoi(argv[1]);
    CHECK(children > 0 && children <= 8, "1 to 8 children");
    parent();
    test_ok();
    MPI_Finalize();
    return 0;
}
