/*
 * killed_rank: rank 1 dies by SIGKILL while rank 0 (and every other rank) is
 * blocked in MPI_Recv from it. Never prints OK: the harness expects mpirun to
 * notice the death, end the job within a second or two with a nonzero status,
 * and name rank 1 in its message.
 *
 * Rank 1 prints "rank 1 dying" (flushed) just before it kills itself, so the
 * harness can time the reaction from that moment.
 */
#define TEST_NAME "killed_rank"
#include "mpitest.h"
#include <signal.h>

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    /* Everyone is up and connected before the death. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 1) {
        printf("rank 1 dying\n");
        fflush(stdout);
        raise(SIGKILL);
        FAIL("still alive after raise(SIGKILL)");
    }
    int v;
    MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    FAIL("MPI_Recv from a dead rank returned (value %d) instead of ending the job", v);
    return 1;
}
