/*
 * persistent_coll_fatal: under MPI_ERRORS_ARE_FATAL (the default), a neighbourhood collective
 * on a communicator without a topology ends the job with a message that names the problem;
 * the harness checks the exit status and the message. Nothing after the call may run.
 */
#define TEST_NAME "persistent_coll_fatal"
#include "../mpitest.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int a[2] = {0, 0}, b[128];
    MPI_Request q;
    MPI_Neighbor_alltoall_init(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &q);
    FAIL("MPI_Neighbor_alltoall_init on MPI_COMM_WORLD returned under MPI_ERRORS_ARE_FATAL");
    return 1;
}
