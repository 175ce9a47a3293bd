/*
 * jacobi2d: a small application in the way real MPI codes are written, using many parts of
 * the library together: a 2-D Cartesian grid of processes (MPI_Dims_create, MPI_Cart_create,
 * MPI_Cart_shift, MPI_Cart_coords, MPI_Cart_sub), halo exchange with a derived vector type
 * for the columns (MPI_Type_vector) and MPI_Sendrecv, a convergence test with MPI_Allreduce,
 * row communicators with MPI_Bcast, and the final field collected with MPI_Gatherv of a
 * subarray type. Rank 0 repeats the whole computation serially and compares bit for bit
 * (Jacobi's update is the same arithmetic in the same order on every point).
 */
#define TEST_NAME "jacobi2d"
#include "mpitest.h"

#define NX 37 /* global interior points, deliberately not divisible by most grids */
#define NY 29
#define STEPS 40

/* The share of n points that block b of nblocks gets, and where it starts. */
static int share(int n, int nblocks, int b) { return n / nblocks + (b < n % nblocks); }
static int start(int n, int nblocks, int b) {
    int s = 0;
    for (int i = 0; i < b; i++)
        s += share(n, nblocks, i);
    return s;
}

/* The fixed boundary and initial value of global point (i, j), i in [-1, NX], j in [-1, NY]. */
static double initial(int i, int j) {
    if (i < 0 || j < 0 || i >= NX || j >= NY)
        return (double)((i * 7 + j * 13) % 11) / 11.0;
    return 0.0;
}

int main(int argc, char **argv) {
    test_init(&argc, &argv);
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int dims[2] = {0, 0}, periods[2] = {0, 0};
    CHECK_MPI(MPI_Dims_create(size, 2, dims));
    CHECK(dims[0] * dims[1] == size, "Dims_create gave %d x %d for %d ranks", dims[0], dims[1], size);
    MPI_Comm grid;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &grid));
    CHECK_MPI(MPI_Comm_rank(grid, &rank));
    int coords[2];
    CHECK_MPI(MPI_Cart_coords(grid, rank, 2, coords));
    int up, down, left, right;
    CHECK_MPI(MPI_Cart_shift(grid, 0, 1, &up, &down));
    CHECK_MPI(MPI_Cart_shift(grid, 1, 1, &left, &right));

    /* This rank's block: nx rows (dimension 0 splits i), ny columns, plus a halo of one. */
    int nx = share(NX, dims[0], coords[0]), i0 = start(NX, dims[0], coords[0]);
    int ny = share(NY, dims[1], coords[1]), j0 = start(NY, dims[1], coords[1]);
    int w = ny + 2;
    double *u = malloc(sizeof(double) * (nx + 2) * w), *v = malloc(sizeof(double) * (nx + 2) * w);
    for (int i = -1; i <= nx; i++)
        for (int j = -1; j <= ny; j++)
            u[(i + 1) * w + j + 1] = v[(i + 1) * w + j + 1] = initial(i0 + i, j0 + j);

    MPI_Datatype column;
    CHECK_MPI(MPI_Type_vector(nx, 1, w, MPI_DOUBLE, &column));
    CHECK_MPI(MPI_Type_commit(&column));

    double change = 0;
    for (int step = 0; step < STEPS; step++) {
        /* Halo exchange: rows are contiguous, columns strided. */
        CHECK_MPI(MPI_Sendrecv(&u[1 * w + 1], ny, MPI_DOUBLE, up, 0, &u[(nx + 1) * w + 1], ny, MPI_DOUBLE, down, 0, grid, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Sendrecv(&u[nx * w + 1], ny, MPI_DOUBLE, down, 1, &u[0 * w + 1], ny, MPI_DOUBLE, up, 1, grid, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Sendrecv(&u[1 * w + 1], 1, column, left, 2, &u[1 * w + ny + 1], 1, column, right, 2, grid, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Sendrecv(&u[1 * w + ny], 1, column, right, 3, &u[1 * w + 0], 1, column, left, 3, grid, MPI_STATUS_IGNORE));
        double local = 0;
        for (int i = 1; i <= nx; i++)
            for (int j = 1; j <= ny; j++) {
                double x = 0.25 * (u[(i - 1) * w + j] + u[(i + 1) * w + j] + u[i * w + j - 1] + u[i * w + j + 1]);
                double d = x > u[i * w + j] ? x - u[i * w + j] : u[i * w + j] - x;
                if (d > local)
                    local = d;
                v[i * w + j] = x;
            }
        double *t = u;
        u = v;
        v = t;
        CHECK_MPI(MPI_Allreduce(&local, &change, 1, MPI_DOUBLE, MPI_MAX, grid));
    }

    /* Row communicators: the first process of each row tells its row the row's checksum. */
    MPI_Comm row;
    int keep[2] = {0, 1};
    CHECK_MPI(MPI_Cart_sub(grid, keep, &row));
    int row_size, row_rank;
    MPI_Comm_size(row, &row_size);
    MPI_Comm_rank(row, &row_rank);
    CHECK(row_size == dims[1] && row_rank == coords[1], "row communicator: size %d rank %d, expected %d %d", row_size, row_rank, dims[1], coords[1]);
    double mine = 0, row_sum = 0, told = 0;
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++)
            mine += u[i * w + j];
    CHECK_MPI(MPI_Reduce(&mine, &row_sum, 1, MPI_DOUBLE, MPI_SUM, 0, row));
    if (row_rank == 0)
        told = row_sum;
    CHECK_MPI(MPI_Bcast(&told, 1, MPI_DOUBLE, 0, row));

    /* Collect the interiors on grid rank 0 with one subarray type per sender. */
    MPI_Datatype interior;
    int sizes[2] = {nx + 2, w}, subsizes[2] = {nx, ny}, starts[2] = {1, 1};
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &interior));
    CHECK_MPI(MPI_Type_commit(&interior));
    double *all = NULL;
    int *counts = NULL, *displs = NULL;
    if (rank == 0) {
        all = malloc(sizeof(double) * NX * NY);
        counts = malloc(sizeof(int) * size);
        displs = malloc(sizeof(int) * size);
        int d = 0;
        for (int r = 0; r < size; r++) {
            int c[2];
            MPI_Cart_coords(grid, r, 2, c);
            counts[r] = share(NX, dims[0], c[0]) * share(NY, dims[1], c[1]);
            displs[r] = d;
            d += counts[r];
        }
    }
    CHECK_MPI(MPI_Gatherv(u, 1, interior, all, counts, displs, MPI_DOUBLE, 0, grid));

    if (rank == 0) {
        /* The serial computation on the whole grid. */
        int W = NY + 2;
        double *s = malloc(sizeof(double) * (NX + 2) * W), *s2 = malloc(sizeof(double) * (NX + 2) * W);
        for (int i = -1; i <= NX; i++)
            for (int j = -1; j <= NY; j++)
                s[(i + 1) * W + j + 1] = s2[(i + 1) * W + j + 1] = initial(i, j);
        double serial_change = 0;
        for (int step = 0; step < STEPS; step++) {
            serial_change = 0;
            for (int i = 1; i <= NX; i++)
                for (int j = 1; j <= NY; j++) {
                    double x = 0.25 * (s[(i - 1) * W + j] + s[(i + 1) * W + j] + s[i * W + j - 1] + s[i * W + j + 1]);
                    double d = x > s[i * W + j] ? x - s[i * W + j] : s[i * W + j] - x;
                    if (d > serial_change)
                        serial_change = d;
                    s2[i * W + j] = x;
                }
            double *t = s;
            s = s2;
            s2 = t;
        }
        CHECK(serial_change == change, "convergence measure %.17g, serial %.17g", change, serial_change);
        for (int r = 0; r < size; r++) {
            int c[2];
            MPI_Cart_coords(grid, r, 2, c);
            int rx = share(NX, dims[0], c[0]), ry = share(NY, dims[1], c[1]);
            int ri = start(NX, dims[0], c[0]), rj = start(NY, dims[1], c[1]);
            for (int i = 0; i < rx; i++)
                for (int j = 0; j < ry; j++) {
                    double got = all[displs[r] + i * ry + j], want = s[(ri + i + 1) * W + rj + j + 1];
                    CHECK(got == want, "point (%d, %d) from rank %d: %.17g, serial %.17g", ri + i, rj + j, r, got, want);
                }
        }
        free(s);
        free(s2);
    }
    /* Every row agrees with what its first process computed. */
    double check_sum = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &check_sum, 1, MPI_DOUBLE, MPI_SUM, row));
    CHECK(check_sum == told || (check_sum - told < 1e-12 && told - check_sum < 1e-12), "row sum %.17g, told %.17g", check_sum, told);

    MPI_Type_free(&column);
    MPI_Type_free(&interior);
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);
    free(u);
    free(v);
    free(all);
    free(counts);
    free(displs);
    test_ok();
    MPI_Finalize();
    return 0;
}
