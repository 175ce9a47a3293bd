/*
 * describe: what the datatype calls say about types, against values worked out
 * by hand; MPI_Pack / MPI_Unpack; envelopes and contents; names; addresses and
 * MPI_BOTTOM; MPI_Get_elements of a partial element. Runs on any number of
 * ranks (each checks by itself, sending to itself).
 */
#define TEST_NAME "describe"
#include "mpitest.h"

static void check_bounds(MPI_Datatype t, const char *what, long lb, long extent, long true_lb, long true_extent,
                         int size)
{
    MPI_Aint l, e;
    MPI_Count lx, ex;
    int s;
    CHECK_MPI(MPI_Type_get_extent(t, &l, &e));
    CHECK(l == lb && e == extent, "%s: lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e, lb, extent);
    CHECK_MPI(MPI_Type_get_true_extent(t, &l, &e));
    CHECK(l == true_lb && e == true_extent, "%s: true lb %ld extent %ld, want %ld %ld", what, (long)l, (long)e,
          true_lb, true_extent);
    CHECK_MPI(MPI_Type_get_extent_x(t, &lx, &ex));
    CHECK(lx == lb && ex == extent, "%s: extent_x", what);
    CHECK_MPI(MPI_Type_get_true_extent_x(t, &lx, &ex));
    CHECK(lx == true_lb && ex == true_extent, "%s: true_extent_x", what);
    CHECK_MPI(MPI_Type_size(t, &s));
    CHECK(s == size, "%s: size %d, want %d", what, s, size);
    CHECK_MPI(MPI_Type_extent(t, &e));
    CHECK(e == extent, "%s: MPI_Type_extent %ld", what, (long)e);
    CHECK_MPI(MPI_Type_lb(t, &l));
    CHECK(l == lb, "%s: MPI_Type_lb %ld", what, (long)l);
    CHECK_MPI(MPI_Type_ub(t, &l));
    CHECK(l == lb + extent, "%s: MPI_Type_ub %ld", what, (long)l);
}

static void check_envelope(MPI_Datatype t, const char *what, int combiner, int ni, const int *ints, int na,
                           const MPI_Aint *aints, int nd, const MPI_Datatype *types)
{
    int a, b, c, comb;
    CHECK_MPI(MPI_Type_get_envelope(t, &a, &b, &c, &comb));
    CHECK(comb == combiner && a == ni && b == na && c == nd, "%s: envelope %d %d %d combiner %d, want %d %d %d %d",
          what, a, b, c, comb, ni, na, nd, combiner);
    int gi[32];
    MPI_Aint ga[32];
    MPI_Datatype gt[32];
    CHECK_MPI(MPI_Type_get_contents(t, 32, 32, 32, gi, ga, gt));
    for (int i = 0; i < ni; i++)
        CHECK(gi[i] == ints[i], "%s: integer %d is %d, want %d", what, i, gi[i], ints[i]);
    for (int i = 0; i < na; i++)
        CHECK(ga[i] == aints[i], "%s: address %d is %ld, want %ld", what, i, (long)ga[i], (long)aints[i]);
    for (int i = 0; i < nd; i++) {
        CHECK(gt[i] == types[i], "%s: datatype %d differs", what, i);
        int x, y, z, k;
        CHECK_MPI(MPI_Type_get_envelope(gt[i], &x, &y, &z, &k));
        if (k != MPI_COMBINER_NAMED)
            CHECK_MPI(MPI_Type_free(&gt[i]));
    }
}

/* Whether global index i of a dimension belongs to process coordinate c (the standard's rules). */
static int owns(int i, int g, int distrib, int darg, int p, int c)
{
    if (distrib == MPI_DISTRIBUTE_NONE) return 1;
    if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + p - 1) / p : darg;
        return i / b == c;
    }
    int k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
    return (i / k) % p == c;
}

/* MPI_Type_create_darray on a 3-d array, every rank of the grid, both orders: packing the
 * array a[i] = i gives the owned indices in memory order. */
static void check_darray(const int *g, const int *distrib, const int *darg, const int *p)
{
    int size = p[0] * p[1] * p[2], total = g[0] * g[1] * g[2];
    int *a = test_malloc(total * sizeof(int)), *packed = test_malloc(total * sizeof(int));
    for (int i = 0; i < total; i++) a[i] = i;
    for (int order = MPI_ORDER_C; order <= MPI_ORDER_FORTRAN; order++)
        for (int rank = 0; rank < size; rank++) {
            int c[3] = {rank / (p[1] * p[2]), (rank / p[2]) % p[1], rank % p[2]};
            MPI_Datatype t;
            CHECK_MPI(MPI_Type_create_darray(size, rank, 3, g, distrib, darg, p, order, MPI_INT, &t));
            CHECK_MPI(MPI_Type_commit(&t));
            MPI_Aint lb, ext;
            CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
            CHECK(lb == 0 && ext == (MPI_Aint)(total * sizeof(int)), "darray extent %ld", (long)ext);
            int pos = 0, tsize;
            CHECK_MPI(MPI_Type_size(t, &tsize));
            CHECK_MPI(MPI_Pack(a, 1, t, packed, total * (int)sizeof(int), &pos, MPI_COMM_WORLD));
            int k = 0;
            for (int lin = 0; lin < total; lin++) {
                int i0, i1, i2; /* lin runs through memory order */
                if (order == MPI_ORDER_C) { i0 = lin / (g[1] * g[2]); i1 = (lin / g[2]) % g[1]; i2 = lin % g[2]; }
                else { i0 = lin % g[0]; i1 = (lin / g[0]) % g[1]; i2 = lin / (g[0] * g[1]); }
                if (owns(i0, g[0], distrib[0], darg[0], p[0], c[0]) && owns(i1, g[1], distrib[1], darg[1], p[1], c[1]) &&
                    owns(i2, g[2], distrib[2], darg[2], p[2], c[2])) {
                    CHECK(k < tsize / 4 && packed[k] == lin, "darray rank %d order %d: element %d is %d, want %d", rank,
                          order, k, k < tsize / 4 ? packed[k] : -1, lin);
                    k++;
                }
            }
            CHECK(k * 4 == tsize && pos == tsize, "darray rank %d order %d: %d elements, size %d", rank, order, k, tsize);
            CHECK_MPI(MPI_Type_free(&t));
        }
    free(a);
    free(packed);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Datatype v, hv, rs, lbub, sub, dup, idx, hidx, ib, hib, st, cont;

    /* vector(3, 2, 4) of int: 3 blocks of 2 ints, 4 ints apart. */
    CHECK_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &v));
    check_bounds(v, "vector(3,2,4) int", 0, 40, 0, 40, 24);
    check_envelope(v, "vector", MPI_COMBINER_VECTOR, 3, (int[]){3, 2, 4}, 0, NULL, 1, (MPI_Datatype[]){MPI_INT});

    /* hvector with a negative stride: blocks at 0 and -16. */
    CHECK_MPI(MPI_Type_create_hvector(2, 1, -16, MPI_DOUBLE, &hv));
    check_bounds(hv, "hvector(2,1,-16) double", -16, 24, -16, 24, 16);
    check_envelope(hv, "hvector", MPI_COMBINER_HVECTOR, 2, (int[]){2, 1}, 1, (MPI_Aint[]){-16}, 1,
                   (MPI_Datatype[]){MPI_DOUBLE});

    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -4, 16, &rs));
    check_bounds(rs, "int resized(-4, 16)", -4, 16, 0, 4, 4);
    check_envelope(rs, "resized", MPI_COMBINER_RESIZED, 0, NULL, 2, (MPI_Aint[]){-4, 16}, 1,
                   (MPI_Datatype[]){MPI_INT});
    CHECK_MPI(MPI_Type_dup(rs, &dup));
    check_bounds(dup, "dup of resized", -4, 16, 0, 4, 4);
    check_envelope(dup, "dup", MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, (MPI_Datatype[]){rs});

    /* MPI-1 bounds markers. */
    int bl3[3] = {1, 1, 1};
    MPI_Aint d3[3] = {-8, 0, 20};
    MPI_Datatype t3[3] = {MPI_LB, MPI_INT, MPI_UB};
    CHECK_MPI(MPI_Type_struct(3, bl3, d3, t3, &lbub));
    check_bounds(lbub, "struct {LB@-8, int@0, UB@20}", -8, 28, 0, 4, 4);
    /* The markers stick: a contiguous of two has extent 56. */
    CHECK_MPI(MPI_Type_contiguous(2, lbub, &cont));
    check_bounds(cont, "contiguous(2) of the marked struct", -8, 56, 0, 32, 8);
    check_envelope(cont, "contiguous", MPI_COMBINER_CONTIGUOUS, 1, (int[]){2}, 0, NULL, 1, (MPI_Datatype[]){lbub});

    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub));
    check_bounds(sub, "subarray", 0, 80, 28, 32, 24);
    check_envelope(sub, "subarray", MPI_COMBINER_SUBARRAY, 8, (int[]){2, 4, 5, 2, 3, 1, 2, MPI_ORDER_C}, 0, NULL, 1,
                   (MPI_Datatype[]){MPI_INT});

    int bl[2] = {2, 1}, dp[2] = {3, 0};
    CHECK_MPI(MPI_Type_indexed(2, bl, dp, MPI_SHORT, &idx));
    check_bounds(idx, "indexed", 0, 10, 0, 10, 6);
    check_envelope(idx, "indexed", MPI_COMBINER_INDEXED, 5, (int[]){2, 2, 1, 3, 0}, 0, NULL, 1,
                   (MPI_Datatype[]){MPI_SHORT});
    MPI_Aint hd[2] = {6, 0};
    CHECK_MPI(MPI_Type_create_hindexed(2, bl, hd, MPI_SHORT, &hidx));
    check_bounds(hidx, "hindexed", 0, 10, 0, 10, 6);
    check_envelope(hidx, "hindexed", MPI_COMBINER_HINDEXED, 3, (int[]){2, 2, 1}, 2, hd, 1, (MPI_Datatype[]){MPI_SHORT});
    CHECK_MPI(MPI_Type_create_indexed_block(2, 2, dp, MPI_SHORT, &ib));
    check_bounds(ib, "indexed_block", 0, 10, 0, 10, 8);
    check_envelope(ib, "indexed_block", MPI_COMBINER_INDEXED_BLOCK, 4, (int[]){2, 2, 3, 0}, 0, NULL, 1,
                   (MPI_Datatype[]){MPI_SHORT});
    CHECK_MPI(MPI_Type_create_hindexed_block(2, 2, hd, MPI_SHORT, &hib));
    check_envelope(hib, "hindexed_block", MPI_COMBINER_HINDEXED_BLOCK, 2, (int[]){2, 2}, 2, hd, 1,
                   (MPI_Datatype[]){MPI_SHORT});

    /* A struct is padded to its alignment, as the C struct is. */
    MPI_Aint sd[2] = {0, 8};
    MPI_Datatype sty[2] = {MPI_DOUBLE, MPI_CHAR};
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, sd, sty, &st));
    check_bounds(st, "struct {double; char}", 0, 16, 0, 9, 9);
    check_envelope(st, "struct", MPI_COMBINER_STRUCT, 3, (int[]){2, 1, 1}, 2, sd, 2, sty);

    /* MPICH's bound rules (worked out against it): markers set the bounds of the struct they
     * are placed in and are not sticky beyond it; a resized type's bounds are ordinary bounds;
     * a struct of one type is not padded. */
    {
        MPI_Datatype x, y, r;
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){1, 8}, (MPI_Datatype[]){MPI_CHAR, MPI_DOUBLE}, &x));
        check_bounds(x, "struct {char@1, double@8}", 1, 16, 1, 15, 9);
        CHECK_MPI(MPI_Type_free(&x));
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 2}, (MPI_Datatype[]){lbub, MPI_DOUBLE}, &x));
        check_bounds(x, "struct {marked struct@0, double@2}", -8, 32, 0, 10, 12);
        CHECK_MPI(MPI_Type_free(&x));
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 6}, (MPI_Datatype[]){MPI_INT, MPI_INT}, &x));
        check_bounds(x, "struct {int@0, int@6}", 0, 10, 0, 10, 8);
        CHECK_MPI(MPI_Type_free(&x));
        CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 10, &r));
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){0, 20}, (MPI_Datatype[]){r, MPI_CHAR}, &x));
        check_bounds(x, "struct {resized(int,0,10)@0, char@20}", 0, 24, 0, 21, 5);
        CHECK_MPI(MPI_Type_free(&x));
        CHECK_MPI(MPI_Type_free(&r));
        CHECK_MPI(MPI_Type_struct(3, (int[]){1, 1, 1}, (MPI_Aint[]){-4, 0, 4}, (MPI_Datatype[]){MPI_LB, MPI_DOUBLE, MPI_CHAR}, &y));
        check_bounds(y, "struct {LB@-4, double@0, char@4}", -4, 12, 0, 8, 9);
        CHECK_MPI(MPI_Type_free(&y));
    }

    int a, b, c, comb;
    CHECK_MPI(MPI_Type_get_envelope(MPI_INT, &a, &b, &c, &comb));
    CHECK(comb == MPI_COMBINER_NAMED && a == 0 && b == 0 && c == 0, "MPI_INT is named");
    check_bounds(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", 0, 16, 0, 12, 12);
    check_bounds(MPI_SHORT_INT, "MPI_SHORT_INT", 0, 8, 0, 8, 6);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    CHECK_MPI(MPI_Type_get_name(MPI_DOUBLE, name, &len));
    CHECK(strcmp(name, "MPI_DOUBLE") == 0 && len == 10, "MPI_DOUBLE is named '%s'", name);
    CHECK_MPI(MPI_Type_get_name(v, name, &len));
    CHECK(len == 0 && name[0] == 0, "an unnamed type's name is empty, got '%s'", name);
    CHECK_MPI(MPI_Type_set_name(v, "my vector"));
    CHECK_MPI(MPI_Type_get_name(v, name, &len));
    CHECK(strcmp(name, "my vector") == 0 && len == 9, "set name: got '%s'", name);

    /* Pack / Unpack of a vector, appending at a position. */
    CHECK_MPI(MPI_Type_commit(&v));
    int src[12], back[12], psize, pos = 0;
    char packed[64];
    for (int i = 0; i < 12; i++) src[i] = 100 + i;
    CHECK_MPI(MPI_Pack_size(1, v, MPI_COMM_WORLD, &psize));
    CHECK(psize == 24, "MPI_Pack_size of the vector: %d", psize);
    int one = 7;
    CHECK_MPI(MPI_Pack(&one, 1, MPI_INT, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Pack(src, 1, v, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == 28, "position after packing: %d", pos);
    int want[7] = {7, 100, 101, 104, 105, 108, 109};
    CHECK(memcmp(packed, want, sizeof want) == 0, "packed data differs");
    for (int i = 0; i < 12; i++) back[i] = -1;
    pos = 4;
    CHECK_MPI(MPI_Unpack(packed, 28, &pos, back, 1, v, MPI_COMM_WORLD));
    CHECK(pos == 28, "position after unpacking: %d", pos);
    for (int i = 0; i < 12; i++) {
        int w = (i % 4 < 2 && i < 10) ? 100 + i : -1;
        CHECK(back[i] == w, "unpacked[%d] = %d, want %d", i, back[i], w);
    }

    /* Absolute addresses from MPI_BOTTOM. */
    struct { int x; double y; } obj = {42, 2.5}, got = {0, 0};
    MPI_Aint ax, ay, gx, gy;
    CHECK_MPI(MPI_Get_address(&obj.x, &ax));
    CHECK_MPI(MPI_Get_address(&obj.y, &ay));
    CHECK_MPI(MPI_Get_address(&got.x, &gx));
    CHECK_MPI(MPI_Get_address(&got.y, &gy));
    CHECK(MPI_Aint_diff(ay, ax) == (MPI_Aint)((char *)&obj.y - (char *)&obj.x), "MPI_Aint_diff");
    CHECK(MPI_Aint_add(ax, 8) == ax + 8, "MPI_Aint_add");
    MPI_Datatype abs_s, abs_r;
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){ax, ay}, (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &abs_s));
    CHECK_MPI(MPI_Type_create_struct(2, (int[]){1, 1}, (MPI_Aint[]){gx, gy}, (MPI_Datatype[]){MPI_INT, MPI_DOUBLE}, &abs_r));
    CHECK_MPI(MPI_Type_commit(&abs_s));
    CHECK_MPI(MPI_Type_commit(&abs_r));
    MPI_Status s;
    CHECK_MPI(MPI_Sendrecv(MPI_BOTTOM, 1, abs_s, test_rank, 0, MPI_BOTTOM, 1, abs_r, test_rank, 0, MPI_COMM_WORLD, &s));
    CHECK(got.x == 42 && got.y == 2.5, "MPI_BOTTOM struct: got %d %g", got.x, got.y);

    /* Elements of a partial element: 5 doubles into a vector of 3 blocks of 2. */
    MPI_Datatype dv;
    CHECK_MPI(MPI_Type_vector(3, 2, 4, MPI_DOUBLE, &dv));
    CHECK_MPI(MPI_Type_commit(&dv));
    double five[5] = {1, 2, 3, 4, 5}, into[10];
    for (int i = 0; i < 10; i++) into[i] = -1;
    CHECK_MPI(MPI_Sendrecv(five, 5, MPI_DOUBLE, test_rank, 1, into, 1, dv, test_rank, 1, MPI_COMM_WORLD, &s));
    int n;
    CHECK_MPI(MPI_Get_count(&s, dv, &n));
    CHECK(n == MPI_UNDEFINED, "Get_count of a partial element: %d", n);
    CHECK_MPI(MPI_Get_elements(&s, dv, &n));
    CHECK(n == 5, "Get_elements of a partial element: %d", n);
    MPI_Count nx;
    CHECK_MPI(MPI_Get_elements_x(&s, dv, &nx));
    CHECK(nx == 5, "Get_elements_x: %ld", (long)nx);
    double wantd[10] = {1, 2, -1, -1, 3, 4, -1, -1, 5, -1};
    for (int i = 0; i < 10; i++)
        CHECK(into[i] == wantd[i], "partial unpack [%d] = %g, want %g", i, into[i], wantd[i]);

    check_darray((int[]){5, 7, 3}, (int[]){MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_NONE},
                 (int[]){MPI_DISTRIBUTE_DFLT_DARG, 2, MPI_DISTRIBUTE_DFLT_DARG}, (int[]){2, 3, 1});
    check_darray((int[]){6, 4, 9}, (int[]){MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
                 (int[]){MPI_DISTRIBUTE_DFLT_DARG, 3, 4}, (int[]){4, 2, 2});

    MPI_Datatype m;
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    int ms;
    CHECK_MPI(MPI_Type_size(m, &ms));
    CHECK(ms == 8, "match_size");

    MPI_Datatype all[] = {v, hv, rs, dup, lbub, cont, sub, idx, hidx, ib, hib, st, abs_s, abs_r, dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK_MPI(MPI_Type_free(&all[i]));
        CHECK(all[i] == MPI_DATATYPE_NULL, "MPI_Type_free sets the handle to MPI_DATATYPE_NULL");
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
