/*
 * child_dies.c: a spawned child that dies (exit 3 right after MPI_Init, no MPI_Finalize)
 * while its parent waits for a message from it: the job must end, the launcher naming the
 * spawned job, and nothing may be left behind.
 */
#define TEST_NAME "dynamic_child_dies"
#include "../mpitest.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) {
        MPI_Comm inter;
        CHECK_MPI(MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter,
                                 MPI_ERRCODES_IGNORE));
        int x = 0;
        MPI_Recv(&x, 1, MPI_INT, 0, 0, inter, MPI_STATUS_IGNORE);
        FAIL("the receive from a dead child returned");
    } else {
        exit(3);
    }
    return 0;
}
