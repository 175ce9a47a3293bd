/*
 * hello: the smallest MPI program; each rank says who it is, rank 0 adds the
 * OK line the harness looks for.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("Hello from rank %d of %d\n", rank, size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("OK hello\n");
    MPI_Finalize();
    return 0;
}
