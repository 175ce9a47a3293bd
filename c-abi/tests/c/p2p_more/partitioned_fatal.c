/*
 * partitioned_fatal: MPI_Pready on a partitioned send that was never started, under the
 * default error handler (MPI_ERRORS_ARE_FATAL): the job must end with a non-zero status and
 * a message that names the call and the error. Never prints OK.
 */
#define TEST_NAME "partitioned_fatal"
#include "../mpitest.h"

int main(int argc, char **argv)
{
    int x[4] = {0};
    MPI_Request s;
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Psend_init(x, 2, 2, MPI_INT, (test_rank + 1) % test_size, 1, MPI_COMM_WORLD,
                             MPI_INFO_NULL, &s));
    MPI_Pready(0, s); /* inactive: fatal */
    fprintf(stderr, "FAIL partitioned_fatal rank %d: MPI_Pready on an inactive request returned\n", test_rank);
    MPI_Finalize();
    return 0;
}
