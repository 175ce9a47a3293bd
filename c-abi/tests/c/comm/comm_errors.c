/*
 * comm_errors: every kind of bad argument to the communicator, group, topology, attribute
 * and info calls, under MPI_ERRORS_RETURN: each must return the error class MPICH returns
 * and change nothing. Afterwards the library must still work: new communicators, groups,
 * topologies and point-to-point on them. Every mismatch is reported before the test fails.
 */
#define TEST_NAME "comm_errors"
#include "../mpitest.h"

static int mismatches;

#define EXPECT(call, class)                                                               \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        if (error_class_of(rc_) != (class)) {                                             \
            fprintf(stderr, "rank %d: %s returned %s, want class %s (%d)\n", test_rank, #call, \
                    error_text(rc_), #class, (class));                                    \
            mismatches++;                                                                 \
        }                                                                                 \
    } while (0)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_Comm c = MPI_COMM_NULL, world = MPI_COMM_WORLD;
    MPI_Group wg, g = MPI_GROUP_NULL;
    int n = 0, flag = 0;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    /* Communicators */
    EXPECT(MPI_Comm_dup(MPI_COMM_NULL, &c), MPI_ERR_COMM);
    EXPECT(MPI_Comm_size(MPI_COMM_NULL, &n), MPI_ERR_COMM);
    EXPECT(MPI_Comm_free(&world), MPI_ERR_COMM);
    CHECK(world == MPI_COMM_WORLD, "a failed free changed the handle");
    EXPECT(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c), MPI_ERR_GROUP);
    EXPECT(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_NULL, &n), MPI_ERR_COMM);
    EXPECT(MPI_Intercomm_create(MPI_COMM_WORLD, test_size, MPI_COMM_WORLD, 0, 0, &c), MPI_ERR_RANK);
    EXPECT(MPI_Comm_set_name(MPI_COMM_NULL, "x"), MPI_ERR_COMM);
    CHECK(c == MPI_COMM_NULL, "a failed call wrote a communicator");

    /* Groups */
    int big = test_size;
    int zero_stride[1][3] = {{0, 0, 0}};
    EXPECT(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP);
    EXPECT(MPI_Group_incl(wg, 1, &big, &g), MPI_ERR_RANK);
    EXPECT(MPI_Group_excl(wg, 1, &big, &g), MPI_ERR_RANK);
    EXPECT(MPI_Group_range_incl(wg, 1, zero_stride, &g), MPI_ERR_ARG);
    EXPECT(MPI_Group_translate_ranks(wg, 1, &big, wg, &n), MPI_ERR_RANK);
    EXPECT(MPI_Group_union(wg, MPI_GROUP_NULL, &g), MPI_ERR_GROUP);
    CHECK(g == MPI_GROUP_NULL, "a failed call wrote a group");

    /* Topologies */
    int coords[3], dims[2] = {0, 0}, periods[2] = {0, 0}, src, dst;
    EXPECT(MPI_Cart_coords(MPI_COMM_WORLD, 0, 3, coords), MPI_ERR_TOPOLOGY);
    EXPECT(MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst), MPI_ERR_TOPOLOGY);
    EXPECT(MPI_Cartdim_get(MPI_COMM_WORLD, &n), MPI_ERR_TOPOLOGY);
    EXPECT(MPI_Graphdims_get(MPI_COMM_WORLD, &n, &flag), MPI_ERR_TOPOLOGY);
    int toobig[1] = {test_size + 1}, five[2] = {5, 0}, neg[2] = {-1, 0};
    EXPECT(MPI_Cart_create(MPI_COMM_WORLD, 1, toobig, periods, 0, &c), MPI_ERR_ARG);
    EXPECT(MPI_Dims_create(12, 2, five), MPI_ERR_DIMS);
    EXPECT(MPI_Dims_create(6, 2, neg), MPI_ERR_DIMS);
    dims[0] = test_size;
    dims[1] = 1;
    MPI_Comm cart;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    int out_of_grid[2] = {test_size, 0};
    EXPECT(MPI_Cart_rank(cart, out_of_grid, &n), MPI_ERR_ARG);
    EXPECT(MPI_Cart_coords(cart, test_size, 2, coords), MPI_ERR_RANK);
    EXPECT(MPI_Cart_shift(cart, 2, 1, &src, &dst), MPI_ERR_ARG);
    EXPECT(MPI_Graph_neighbors_count(cart, 0, &n), MPI_ERR_TOPOLOGY);
    int index[1] = {1}, edges[1] = {test_size + 3};
    EXPECT(MPI_Graph_create(MPI_COMM_WORLD, 1, index, edges, 0, &c), MPI_ERR_ARG);

    /* Attributes */
    void *v;
    int key;
    EXPECT(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag), MPI_ERR_KEYVAL);
    EXPECT(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, NULL), MPI_ERR_KEYVAL);
    EXPECT(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID), MPI_ERR_KEYVAL);
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    int stale = key;
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    EXPECT(MPI_Comm_set_attr(MPI_COMM_NULL, stale, NULL), MPI_ERR_COMM);

    /* Info */
    MPI_Info info;
    char longkey[MPI_MAX_INFO_KEY + 20], longval[MPI_MAX_INFO_VAL + 20], keybuf[MPI_MAX_INFO_KEY + 1];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    memset(longval, 'v', sizeof longval - 1);
    longval[sizeof longval - 1] = 0;
    CHECK_MPI(MPI_Info_create(&info));
    EXPECT(MPI_Info_set(info, "", "x"), MPI_ERR_INFO_KEY);
    EXPECT(MPI_Info_set(info, longkey, "x"), MPI_ERR_INFO_KEY);
    EXPECT(MPI_Info_set(info, "k", longval), MPI_ERR_INFO_VALUE);
    EXPECT(MPI_Info_delete(info, "missing"), MPI_ERR_INFO_NOKEY);
    EXPECT(MPI_Info_get_nthkey(info, 0, keybuf), MPI_ERR_ARG);
    CHECK_MPI(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 0, "failed Info_set calls added %d keys", n);
    CHECK_MPI(MPI_Info_free(&info));

    /* Still usable: a new communicator, its group, a topology, messages. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -test_rank, &c));
    int r, s;
    CHECK_MPI(MPI_Comm_rank(c, &r));
    CHECK_MPI(MPI_Comm_size(c, &s));
    CHECK(r == test_size - 1 - test_rank && s == test_size, "split after errors: %d of %d", r, s);
    int token = r, got = -1;
    CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (r + 1) % s, 0, &got, 1, MPI_INT, (r + s - 1) % s, 0, c, MPI_STATUS_IGNORE));
    CHECK(got == (r + s - 1) % s, "ring after errors: got %d", got);
    CHECK_MPI(MPI_Cart_shift(cart, 0, 1, &src, &dst));
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Comm_free(&cart));
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK(mismatches == 0, "%d calls returned the wrong error class (listed above)", mismatches);
    test_ok();
    MPI_Finalize();
    return 0;
}
