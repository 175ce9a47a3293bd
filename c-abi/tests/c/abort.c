/*
 * abort: rank 1 calls MPI_Abort(MPI_COMM_WORLD, 42) while every other rank is
 * blocked in MPI_Recv from it. Never prints OK: the harness expects the job to
 * end promptly with exit status 42.
 */
#define TEST_NAME "abort"
#include "mpitest.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 1) {
        printf("rank 1 aborting with 42\n");
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 42);
        FAIL("MPI_Abort returned");
    }
    int v;
    MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    FAIL("MPI_Recv from an aborting rank returned (value %d)", v);
    return 1;
}
