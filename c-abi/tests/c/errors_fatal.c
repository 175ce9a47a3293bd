/*
 * errors_fatal: under the default error handler (MPI_ERRORS_ARE_FATAL), rank 0
 * sends to rank `size`, which does not exist. The job must fail (nonzero exit
 * status, no hang) with a message that names the error (invalid rank); the
 * other ranks are blocked in MPI_Recv from rank 0 meanwhile. Never prints OK.
 */
#define TEST_NAME "errors_fatal"
#include "mpitest.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    int v = 1;
    if (test_rank == 0) {
        MPI_Send(&v, 1, MPI_INT, test_size, 0, MPI_COMM_WORLD);
        FAIL("MPI_Send to rank %d returned under MPI_ERRORS_ARE_FATAL", test_size);
    }
    MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    FAIL("MPI_Recv from rank 0 returned (value %d)", v);
    return 1;
}
