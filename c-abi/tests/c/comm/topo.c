/*
 * topo: virtual topologies as the NAS benchmarks (LU, BT, SP) and stencil codes use them.
 * MPI_Dims_create against MPICH's factorizations; a 2D periodic grid (Cart_create,
 * Cart_coords, Cart_rank round trips with wrap-around, Cart_shift, a halo exchange with real
 * data, Cart_get, Cartdim_get, Topo_test), a 3D non-periodic grid (MPI_PROC_NULL at the
 * edges), Cart_sub rows and columns, a grid smaller than the communicator, Comm_dup keeping
 * the topology; graph topologies (Graph_create and its queries, Graph_map, Cart_map) and
 * distributed graphs (Dist_graph_create_adjacent with weights, Dist_graph_create).
 */
#define TEST_NAME "topo"
#include "../mpitest.h"

static void check_dims(int nnodes, int ndims, const int *given, const int *want)
{
    int d[8];
    memcpy(d, given, sizeof(int) * ndims);
    CHECK_MPI(MPI_Dims_create(nnodes, ndims, d));
    for (int i = 0; i < ndims; i++)
        CHECK(d[i] == want[i], "Dims_create(%d, %d): dims[%d] = %d, want %d", nnodes, ndims, i, d[i], want[i]);
}

/* Exchanges one int with both neighbours along every dimension and checks them. */
static void halo(MPI_Comm cart, int ndims)
{
    int me;
    CHECK_MPI(MPI_Comm_rank(cart, &me));
    for (int dim = 0; dim < ndims; dim++) {
        int src, dst;
        CHECK_MPI(MPI_Cart_shift(cart, dim, 1, &src, &dst));
        int out = 1000 * me + dim, in = -1;
        /* forward: send to dst, receive from src */
        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, dst, dim, &in, 1, MPI_INT, src, dim, cart, MPI_STATUS_IGNORE));
        if (src != MPI_PROC_NULL)
            CHECK(in == 1000 * src + dim, "halo dim %d: got %d from %d", dim, in, src);
        else
            CHECK(in == -1, "halo from MPI_PROC_NULL changed the buffer");
    }
}

static void check_cart2d(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    CHECK_MPI(MPI_Dims_create(test_size, 2, dims));
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart));
    int status, nd, me;
    CHECK_MPI(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "Topo_test = %d", status);
    CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "Topo_test(world) = %d", status);
    CHECK_MPI(MPI_Cartdim_get(cart, &nd));
    CHECK(nd == 2, "Cartdim_get = %d", nd);
    CHECK_MPI(MPI_Comm_rank(cart, &me));
    for (int r = 0; r < test_size; r++) {
        int c[2], back;
        CHECK_MPI(MPI_Cart_coords(cart, r, 2, c));
        CHECK(c[0] == r / dims[1] && c[1] == r % dims[1], "coords of %d: %d,%d", r, c[0], c[1]);
        CHECK_MPI(MPI_Cart_rank(cart, c, &back));
        CHECK(back == r, "Cart_rank(coords(%d)) = %d", r, back);
        int wrapped[2] = {c[0] + dims[0], c[1] - dims[1]};
        CHECK_MPI(MPI_Cart_rank(cart, wrapped, &back));
        CHECK(back == r, "Cart_rank wraps: %d, want %d", back, r);
    }
    int gd[2], gp[2], gc[2];
    CHECK_MPI(MPI_Cart_get(cart, 2, gd, gp, gc));
    CHECK(gd[0] == dims[0] && gd[1] == dims[1] && gp[0] == 1 && gp[1] == 1, "Cart_get dims/periods");
    CHECK(gc[0] == me / dims[1] && gc[1] == me % dims[1], "Cart_get coords");
    int src, dst;
    CHECK_MPI(MPI_Cart_shift(cart, 1, 1, &src, &dst));
    int row = me / dims[1], col = me % dims[1];
    CHECK(dst == row * dims[1] + (col + 1) % dims[1], "shift +1 dst %d", dst);
    CHECK(src == row * dims[1] + (col + dims[1] - 1) % dims[1], "shift +1 src %d", src);
    halo(cart, 2);

    /* Rows and columns, as BT and SP make them. */
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Comm rowc, colc;
    CHECK_MPI(MPI_Cart_sub(cart, keep_row, &rowc));
    CHECK_MPI(MPI_Cart_sub(cart, keep_col, &colc));
    int rs, rr, cs, cr;
    CHECK_MPI(MPI_Comm_size(rowc, &rs));
    CHECK_MPI(MPI_Comm_rank(rowc, &rr));
    CHECK_MPI(MPI_Comm_size(colc, &cs));
    CHECK_MPI(MPI_Comm_rank(colc, &cr));
    CHECK(rs == dims[1] && rr == col && cs == dims[0] && cr == row, "Cart_sub: row %d/%d col %d/%d", rr, rs, cr, cs);
    CHECK_MPI(MPI_Cartdim_get(rowc, &nd));
    CHECK(nd == 1, "a row has %d dimensions", nd);
    halo(rowc, 1);
    halo(colc, 1);
    /* Sum of the column indices along the row, by point-to-point around it. */
    int sum = col, token;
    for (int step = 1; step < rs; step++) {
        int s2, d2;
        CHECK_MPI(MPI_Cart_shift(rowc, 0, step, &s2, &d2));
        CHECK_MPI(MPI_Sendrecv(&col, 1, MPI_INT, d2, 0, &token, 1, MPI_INT, s2, 0, rowc, MPI_STATUS_IGNORE));
        sum += token;
    }
    CHECK(sum == rs * (rs - 1) / 2, "row sum %d", sum);

    MPI_Comm d;
    CHECK_MPI(MPI_Comm_dup(cart, &d));
    CHECK_MPI(MPI_Topo_test(d, &status));
    CHECK(status == MPI_CART, "a dup lost the topology");
    halo(d, 2);
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK_MPI(MPI_Comm_free(&rowc));
    CHECK_MPI(MPI_Comm_free(&colc));
    CHECK_MPI(MPI_Comm_free(&cart));
}

static void check_cart3d(void)
{
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0};
    CHECK_MPI(MPI_Dims_create(test_size, 3, dims));
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    int c[3], me;
    CHECK_MPI(MPI_Comm_rank(cart, &me));
    CHECK_MPI(MPI_Cart_coords(cart, me, 3, c));
    for (int dim = 0; dim < 3; dim++) {
        int src, dst;
        CHECK_MPI(MPI_Cart_shift(cart, dim, 1, &src, &dst));
        CHECK((c[dim] == 0) == (src == MPI_PROC_NULL), "dim %d: source %d at coordinate %d", dim, src, c[dim]);
        CHECK((c[dim] == dims[dim] - 1) == (dst == MPI_PROC_NULL), "dim %d: dest %d at coordinate %d", dim, dst, c[dim]);
    }
    halo(cart, 3);
    int keep[3] = {0, 0, 0};
    MPI_Comm point;
    CHECK_MPI(MPI_Cart_sub(cart, keep, &point));
    if (me == 0) {
        int s;
        CHECK_MPI(MPI_Comm_size(point, &s));
        CHECK(s == 1, "a 0-dimensional sub-grid has %d processes", s);
        CHECK_MPI(MPI_Comm_free(&point));
    } else {
        CHECK(point == MPI_COMM_NULL, "only rank 0 is in a 0-dimensional sub-grid");
    }
    CHECK_MPI(MPI_Comm_free(&cart));

    /* A grid smaller than the communicator. */
    if (test_size >= 2) {
        int d1[1] = {test_size - 1}, p1[1] = {1};
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &cart));
        if (test_rank == test_size - 1) {
            CHECK(cart == MPI_COMM_NULL, "a rank beyond the grid got a communicator");
        } else {
            halo(cart, 1);
            CHECK_MPI(MPI_Comm_free(&cart));
        }
        int newrank;
        CHECK_MPI(MPI_Cart_map(MPI_COMM_WORLD, 1, d1, p1, &newrank));
        CHECK(newrank == (test_rank == test_size - 1 ? MPI_UNDEFINED : test_rank), "Cart_map = %d", newrank);
    }
}

static void check_graphs(void)
{
    int n = test_size;
    /* A ring as a graph: node i has neighbours i-1 and i+1 (once if n <= 2). */
    int *index = test_malloc(sizeof(int) * n), *edges = test_malloc(sizeof(int) * 2 * n);
    int e = 0;
    for (int i = 0; i < n; i++) {
        if (n > 1)
            edges[e++] = (i + 1) % n;
        if (n > 2)
            edges[e++] = (i + n - 1) % n;
        index[i] = e;
    }
    MPI_Comm g;
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g));
    int status, nn, ne, cnt;
    CHECK_MPI(MPI_Topo_test(g, &status));
    CHECK(status == MPI_GRAPH, "Topo_test = %d", status);
    CHECK_MPI(MPI_Graphdims_get(g, &nn, &ne));
    CHECK(nn == n && ne == e, "Graphdims_get %d %d", nn, ne);
    CHECK_MPI(MPI_Graph_neighbors_count(g, test_rank, &cnt));
    int want = n > 2 ? 2 : n - 1;
    CHECK(cnt == want, "neighbours count %d", cnt);
    int nb[2];
    CHECK_MPI(MPI_Graph_neighbors(g, test_rank, 2, nb));
    if (cnt > 0)
        CHECK(nb[0] == (test_rank + 1) % n, "first neighbour %d", nb[0]);
    int *gi = test_malloc(sizeof(int) * n), *ge = test_malloc(sizeof(int) * 2 * n);
    CHECK_MPI(MPI_Graph_get(g, n, 2 * n, gi, ge));
    for (int i = 0; i < n; i++)
        CHECK(gi[i] == index[i], "Graph_get index[%d]", i);
    for (int i = 0; i < e; i++)
        CHECK(ge[i] == edges[i], "Graph_get edges[%d]", i);
    int newrank;
    CHECK_MPI(MPI_Graph_map(MPI_COMM_WORLD, n, index, edges, &newrank));
    CHECK(newrank == test_rank, "Graph_map = %d", newrank);
    CHECK_MPI(MPI_Comm_free(&g));

    /* Distributed graph: each rank receives from its left and sends to its right, weighted. */
    int left = (test_rank + n - 1) % n, right = (test_rank + 1) % n;
    int sw = 10 + left, dw = 10 + test_rank;
    MPI_Comm dg;
    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, &sw, 1, &right, &dw, MPI_INFO_NULL, 0, &dg));
    int indeg, outdeg, weighted;
    CHECK_MPI(MPI_Topo_test(dg, &status));
    CHECK(status == MPI_DIST_GRAPH, "Topo_test = %d", status);
    CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && weighted, "counts %d %d %d", indeg, outdeg, weighted);
    int s1, w1, d1, w2;
    CHECK_MPI(MPI_Dist_graph_neighbors(dg, 1, &s1, &w1, 1, &d1, &w2));
    CHECK(s1 == left && w1 == sw && d1 == right && w2 == dw, "neighbours %d/%d %d/%d", s1, w1, d1, w2);
    CHECK_MPI(MPI_Comm_free(&dg));

    /* Dist_graph_create: rank 0 declares every edge i -> i+1, unweighted. */
    int cnt0 = test_rank == 0 ? n : 0;
    int *srcs = test_malloc(sizeof(int) * n), *degs = test_malloc(sizeof(int) * n), *dsts = test_malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) {
        srcs[i] = i;
        degs[i] = 1;
        dsts[i] = (i + 1) % n;
    }
    CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, cnt0, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg));
    CHECK_MPI(MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted));
    CHECK(indeg == 1 && outdeg == 1 && !weighted, "Dist_graph_create counts %d %d %d", indeg, outdeg, weighted);
    CHECK_MPI(MPI_Dist_graph_neighbors(dg, 1, &s1, MPI_UNWEIGHTED, 1, &d1, MPI_UNWEIGHTED));
    CHECK(s1 == left && d1 == right, "Dist_graph_create neighbours %d %d", s1, d1);
    /* Messages along the graph. */
    int out = 7 * test_rank, in = -1;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, d1, 0, &in, 1, MPI_INT, s1, 0, dg, MPI_STATUS_IGNORE));
    CHECK(in == 7 * left, "message along the graph: %d", in);
    CHECK_MPI(MPI_Comm_free(&dg));
    free(index);
    free(edges);
    free(gi);
    free(ge);
    free(srcs);
    free(degs);
    free(dsts);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    check_dims(6, 2, (int[]){0, 0}, (int[]){3, 2});
    check_dims(12, 3, (int[]){0, 0, 0}, (int[]){3, 2, 2});
    check_dims(16, 2, (int[]){0, 0}, (int[]){4, 4});
    check_dims(24, 3, (int[]){0, 0, 0}, (int[]){4, 3, 2});
    check_dims(8, 3, (int[]){0, 0, 0}, (int[]){2, 2, 2});
    check_dims(12, 2, (int[]){0, 4}, (int[]){3, 4});
    check_dims(30, 3, (int[]){0, 0, 0}, (int[]){5, 3, 2});
    check_dims(7, 2, (int[]){0, 0}, (int[]){7, 1});
    check_dims(64, 3, (int[]){0, 0, 0}, (int[]){4, 4, 4});
    check_dims(1, 1, (int[]){0}, (int[]){1});
    /* As close to each other as possible (MPI 3.1 §7.5.2): MPICH's answers, where splitting
     * the largest prime factors first gives 12 x 6, 18 x 10 and 20 x 12. */
    check_dims(72, 2, (int[]){0, 0}, (int[]){9, 8});
    check_dims(180, 2, (int[]){0, 0}, (int[]){15, 12});
    check_dims(240, 2, (int[]){0, 0}, (int[]){16, 15});
    check_dims(360, 3, (int[]){0, 0, 0}, (int[]){10, 6, 6});
    check_dims(2160, 4, (int[]){0, 0, 0, 0}, (int[]){10, 6, 6, 6});
    check_dims(2880, 4, (int[]){0, 3, 0, 0}, (int[]){12, 3, 10, 8});
    check_cart2d();
    check_cart3d();
    check_graphs();
    test_ok();
    MPI_Finalize();
    return 0;
}
