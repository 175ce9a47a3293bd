/*
 * connect_loop.c - the cost of joining two jobs: MPI_Comm_connect + MPI_Comm_disconnect
 * in a loop (single-threaded, MPI_Init), for comparing builds or libraries.
 *
 *   mpirun -n A ./connect_loop server SERVICE [ITERS]   (accepts ITERS times)
 *   mpirun -n B ./connect_loop client SERVICE [ITERS]   (connects ITERS times)
 *
 * The two jobs find each other through the name service (MPI_Publish_name /
 * MPI_Lookup_name; with this library set MPI_NAME_SERVICE_DIR for both). Each iteration,
 * the client's MPI_Comm_connect (root 0, MPI_COMM_WORLD) meets the server's MPI_Comm_accept,
 * the two roots swap one int over the new intercommunicator (checked), and both disconnect. The
 * client times each iteration (between two barriers of its world, rank 0's MPI_Wtime).
 *
 * Output (client rank 0): comment lines start with '#'; the result is one line
 *   result connect_loop CLIENT_RANKS MEDIAN_US MIN_US ITERS
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(const char *what)
{
    fprintf(stderr, "connect_loop: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3)
        die("usage: connect_loop server|client SERVICE [ITERS]");
    int server = strcmp(argv[1], "server") == 0;
    int iters = argc > 3 ? atoi(argv[3]) : 50;
    if (iters < 1 || iters > 100000)
        die("ITERS must be 1 to 100000");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char port[MPI_MAX_PORT_NAME] = {0};
    if (server && rank == 0) {
        MPI_Open_port(MPI_INFO_NULL, port);
        MPI_Publish_name(argv[2], MPI_INFO_NULL, port);
    }
    if (!server && rank == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_ERR_NAME;
        for (int i = 0; i < 2000 && rc != MPI_SUCCESS; i++) {
            rc = MPI_Lookup_name(argv[2], MPI_INFO_NULL, port);
            if (rc != MPI_SUCCESS) {
                struct timespec ts = {0, 10 * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        if (rc != MPI_SUCCESS)
            die("the service was never published");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
    double *t = malloc(sizeof(double) * (size_t)iters);
    if (!t)
        die("out of memory");
    for (int i = 0; i < iters; i++) {
        MPI_Comm inter;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (server)
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        else
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        if (rank == 0) {
            int out = 1000 * i + (server ? 0 : 500), in = -1;
            MPI_Sendrecv(&out, 1, MPI_INT, 0, 1, &in, 1, MPI_INT, 0, 1, inter,
                         MPI_STATUS_IGNORE);
            if (in != 1000 * i + (server ? 500 : 0))
                die("wrong data over the intercommunicator");
        }
        MPI_Comm_disconnect(&inter);
        MPI_Barrier(MPI_COMM_WORLD);
        t[i] = (MPI_Wtime() - t0) * 1e6;
    }
    if (!server && rank == 0) {
        qsort(t, (size_t)iters, sizeof(double), cmp);
        printf("# connect + sendrecv + disconnect, single-threaded, microseconds\n");
        printf("result connect_loop %d %.1f %.1f %d\n", size, t[iters / 2], t[0], iters);
        fflush(stdout);
    }
    if (server && rank == 0) {
        MPI_Unpublish_name(argv[2], MPI_INFO_NULL, port);
        MPI_Close_port(port);
    }
    free(t);
    MPI_Finalize();
    return 0;
}
