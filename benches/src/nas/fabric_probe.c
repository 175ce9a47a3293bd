/* fabric_probe.c: a tiny MPI job that holds still so `nas --fabric-memory` can measure it.
 *
 * Every rank exchanges one integer with every other rank (MPI_Alltoall, so each ring of the
 * fabric that a real job would use has carried traffic), prints "pid RANK PID" and waits,
 * sleeping, until the file named by argv[1] exists. Rank 0 prints "ready" once every rank
 * has reported. The runner reads /proc/PID/smaps of each rank meanwhile, then creates the
 * file; the job ends with a barrier. It gives up after 120 s if the file never appears.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: fabric_probe GO_FILE\n");
        MPI_Finalize();
        return 2;
    }
    int *out = malloc(sizeof(int) * (size_t)np), *in = malloc(sizeof(int) * (size_t)np);
    if (!out || !in)
        MPI_Abort(MPI_COMM_WORLD, 3);
    for (int p = 0; p < np; p++)
        out[p] = rank * np + p;
    MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
    int good = 1;
    for (int p = 0; p < np; p++)
        good &= in[p] == p * np + rank;
    printf("pid %d %ld\n", rank, (long)getpid());
    fflush(stdout);
    int all_good = 0;
    MPI_Reduce(&good, &all_good, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(all_good ? "ready\n" : "alltoall returned wrong data\n");
        fflush(stdout);
    }
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (int waited = 0; access(argv[1], F_OK) != 0 && waited < 6000; waited++)
        nanosleep(&nap, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
