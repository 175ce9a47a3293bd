/*
 * lock_holder_dies: rank 1 takes an exclusive lock on rank 0's window and dies by SIGKILL
 * while holding it; every other rank then asks for the same lock. Never prints OK: the
 * harness expects the job to end within seconds with a nonzero status and a message naming
 * rank 1 (a dead rank ends the job, as it does in any other wait), not to hang.
 *
 * Rank 1 prints "rank 1 dying" (flushed) just before it kills itself, so the harness can
 * time the reaction from that moment. Run on the message path and on the direct path
 * (MPI_WIN_DIRECT), where the lock is a word in shared memory.
 */
#define TEST_NAME "lock_holder_dies"
#include "../mpitest.h"
#include <signal.h>

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    int *base;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    if (test_rank == 1) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int v = 1;
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    /* The lock is held before anyone else asks for it. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 1) {
        printf("rank 1 dying\n");
        fflush(stdout);
        raise(SIGKILL);
        FAIL("still alive after raise(SIGKILL)");
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    FAIL("MPI_Win_lock returned while a dead rank held the lock");
    return 1;
}
