/*
 * neighbor_mixed: blocking MPI_Neighbor_alltoall and MPI_Neighbor_allgather where some ranks
 * take the library's direct path (contiguous MPI_INT blocks) and the others its schedule
 * (the same type signature through a strided derived type), on a 2-D periodic Cartesian grid
 * (on 1, 2 and 4 ranks periodic dimensions of size 1 or 2: the same neighbour both ways,
 * blocks paired by direction), a non-periodic one (MPI_PROC_NULL blocks left untouched),
 * interleaved with the persistent form; every block checked. Then a receive block too short
 * for what arrives is MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN on the direct path, and the
 * library stays usable.
 */
#define TEST_NAME "neighbor_mixed"
#include "../mpitest.h"

#define C 5
#define ROUNDS 4
#define SENTINEL (-1)

static int value(int rank, int block, int e, int round)
{
    return rank * 100000 + round * 1000 + block * 100 + e;
}

/* One exchange on `grid` (alltoall, or allgather when `gather`), this rank's blocks either
 * contiguous or every other int of a buffer twice as long (a strided type). */
static void exchange(MPI_Comm grid, int gather, int strided, int round, int persistent_too)
{
    int nbr[4];
    for (int d = 0; d < 2; d++)
        CHECK_MPI(MPI_Cart_shift(grid, d, 1, &nbr[2 * d], &nbr[2 * d + 1]));
    int me;
    CHECK_MPI(MPI_Comm_rank(grid, &me));
    MPI_Datatype vec = MPI_DATATYPE_NULL, t = MPI_INT;
    int count = C, stretch = 1;
    if (strided) {
        MPI_Datatype v;
        CHECK_MPI(MPI_Type_vector(C, 1, 2, MPI_INT, &v));
        CHECK_MPI(MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * C * sizeof(int)), &vec));
        CHECK_MPI(MPI_Type_free(&v));
        CHECK_MPI(MPI_Type_commit(&vec));
        t = vec;
        count = 1;
        stretch = 2;
    }
    int send[4 * 2 * C], recv[4 * 2 * C];
    for (int i = 0; i < 4 * 2 * C; i++)
        send[i] = -2, recv[i] = SENTINEL;
    for (int k = 0; k < 4; k++)
        for (int e = 0; e < C; e++)
            send[(k * C + e) * stretch] = value(me, gather ? 0 : k, e, round);
    int rc;
    if (persistent_too) {
        MPI_Request r;
        if (gather)
            CHECK_MPI(MPI_Neighbor_allgather_init(send, count, t, recv, count, t, grid,
                                                  MPI_INFO_NULL, &r));
        else
            CHECK_MPI(MPI_Neighbor_alltoall_init(send, count, t, recv, count, t, grid,
                                                 MPI_INFO_NULL, &r));
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Request_free(&r));
    } else {
        rc = gather ? MPI_Neighbor_allgather(send, count, t, recv, count, t, grid)
                    : MPI_Neighbor_alltoall(send, count, t, recv, count, t, grid);
        CHECK_MPI(rc);
    }
    for (int j = 0; j < 4; j++)
        for (int e = 0; e < C; e++) {
            int got = recv[(j * C + e) * stretch];
            int want = nbr[j] == MPI_PROC_NULL ? SENTINEL
                                               : value(nbr[j], gather ? 0 : j ^ 1, e, round);
            CHECK(got == want, "%s round %d (%s): block %d element %d is %d, expected %d",
                  gather ? "allgather" : "alltoall", round, strided ? "strided" : "contiguous",
                  j, e, got, want);
        }
    if (vec != MPI_DATATYPE_NULL)
        CHECK_MPI(MPI_Type_free(&vec));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    for (int periodic = 0; periodic < 2; periodic++) {
        int dims[2] = {0, 0}, periods[2] = {periodic, periodic};
        MPI_Comm grid;
        CHECK_MPI(MPI_Dims_create(test_size, 2, dims));
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
        for (int round = 0; round < ROUNDS; round++) {
            /* Odd ranks strided in even rounds, even ranks in odd rounds; round 3 all alike. */
            int strided = round == 3 ? 0 : (test_rank + round) % 2;
            exchange(grid, 0, strided, round, 0);
            exchange(grid, 1, strided, round, 0);
            exchange(grid, 0, strided, round, round == 1);
        }
        CHECK_MPI(MPI_Comm_free(&grid));
    }

    /* Truncation on the direct path: every rank sends C ints, receives into blocks of C - 1. */
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Comm grid;
    CHECK_MPI(MPI_Dims_create(test_size, 2, dims));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
    CHECK_MPI(MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN));
    int send[4 * C], recv[4 * C];
    for (int i = 0; i < 4 * C; i++)
        send[i] = i, recv[i] = SENTINEL;
    int rc = MPI_Neighbor_alltoall(send, C, MPI_INT, recv, C - 1, MPI_INT, grid);
    CHECK(error_class_of(rc) == MPI_ERR_TRUNCATE, "a short receive block returned %s, want MPI_ERR_TRUNCATE", error_text(rc));
    /* Still usable: a correct exchange after it. */
    exchange(grid, 0, 0, 9, 0);
    CHECK_MPI(MPI_Comm_free(&grid));
    test_ok();
    MPI_Finalize();
    return 0;
}
