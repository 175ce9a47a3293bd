/*
 * init_report: MPI_Init, and a report of how it went. For the harness's fake
 * process managers and peers: MPI_Init is expected to fail there, and the
 * library (MPI_ERRORS_ARE_FATAL) prints why and ends the process. Should
 * MPI_Init return an error instead, this prints it and exits with status 2;
 * if it succeeds, "rank R of N: MPI_Init succeeded", then MPI_Finalize.
 */
#define TEST_NAME "init_report"
#include "mpitest.h"

int main(int argc, char **argv)
{
    int rc = MPI_Init(&argc, &argv);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init returned %s\n", error_text(rc));
        return 2;
    }
    int rank = -1, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d: MPI_Init succeeded\n", rank, size);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
