/*
 * pingpong_rate.c - single-threaded 8-byte latency and message rate of one MPI library, for
 * comparing two builds of it by LD_LIBRARY_PATH (the fast path's cost budget):
 *
 *   mpirun -n 2 ./pingpong_rate       prints: lat <us> us rate <M msg/s> M/s
 *
 * 100000 ping-pongs (half the round trip is the latency), then 2000 windows of 64 MPI_Isend
 * / MPI_Irecv completed by MPI_Waitall and a zero-byte ack; the second of two passes counts.
 */
#include <mpi.h>
#include <stdio.h>
#define PP 100000
#define WIN 64
#define WINDOWS 2000
int main(int argc, char **argv) {
    int rank; char buf[WIN][8]; MPI_Request req[WIN];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int w = 0; w < 2; w++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < PP; i++) {
            if (rank == 0) { MPI_Send(buf[0], 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD); MPI_Recv(buf[0], 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
            else { MPI_Recv(buf[0], 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf[0], 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD); }
        }
        double lat = (MPI_Wtime() - t0) / PP / 2 * 1e6;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int k = 0; k < WINDOWS; k++) {
            for (int i = 0; i < WIN; i++) {
                if (rank == 0) MPI_Isend(buf[i], 8, MPI_BYTE, 1, i, MPI_COMM_WORLD, &req[i]);
                else MPI_Irecv(buf[i], 8, MPI_BYTE, 0, i, MPI_COMM_WORLD, &req[i]);
            }
            MPI_Waitall(WIN, req, MPI_STATUSES_IGNORE);
            if (rank == 0) MPI_Recv(NULL, 0, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(NULL, 0, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
        }
        double rate = (double)WINDOWS * WIN / (MPI_Wtime() - t0) / 1e6;
        if (rank == 0 && w == 1) printf("lat %.4f us rate %.2f M/s\n", lat, rate);
    }
    MPI_Finalize();
    return 0;
}
