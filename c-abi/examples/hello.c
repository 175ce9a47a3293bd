/*
 * hello.c - the README's first MPI program: every rank says hello, a token
 * goes once around the ring (each rank adds its number), and rank 0 checks
 * the sum.
 *
 *   ./target/release/mpicc -o target/hello c-abi/examples/hello.c
 *   ./target/release/mpirun -n 4 target/hello
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    printf("hello from rank %d of %d on %s\n", rank, size, name);

    int token = 0;
    if (rank == 0) {
        MPI_Get_library_version(version, &len);
        printf("library: %s\n", version);
        if (size > 1) {
            MPI_Send(&token, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        int want = size * (size - 1) / 2;
        printf("token came back as %d (expected %d): %s\n", token, want, token == want ? "OK" : "WRONG");
        if (token != want)
            MPI_Abort(MPI_COMM_WORLD, 1);
    } else {
        MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += rank;
        MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
