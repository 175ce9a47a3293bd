/*
 * types: datatype behaviours the standard fixes (issue 17).
 *
 *  - MPI_C_COMPLEX is another name for MPI_C_FLOAT_COMPLEX (one handle in MPICH's ABI);
 *    MPI_Type_get_name reports "MPI_C_COMPLEX" for it, as MPICH does.
 *  - Bounds (MPI 3.1 §4.1.6, and the MPI_LB / MPI_UB markers of MPI 1): lb is the least
 *    marker or data displacement, ub the greatest marker or data end, 0 where there is
 *    none: a struct of only an MPI_LB marker at 5 has lb 5 and extent -5; with an MPI_UB
 *    marker at 2 too, extent -3; a type without data has true lb and true extent 0.
 *  - MPI_Pack / MPI_Unpack of a struct type of absolute addresses from MPI_BOTTOM (a NULL
 *    buffer with absolute displacements is not an error, MPI 3.1 §4.1.5), and the packed
 *    bytes round-trip through a message.
 *
 * Checked against MPICH 4.0.2, which refuses the MPI_BOTTOM pack and unpack (compile with
 * -DPEER_REFUSES_PACK_BOTTOM to skip those; everything else passes there).
 */
#define TEST_NAME "types"
#include "mpitest.h"

static void names(void)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_MPI(MPI_Type_get_name(MPI_C_COMPLEX, name, &len));
    CHECK(strcmp(name, "MPI_C_COMPLEX") == 0 && len == (int)strlen(name), "MPI_C_COMPLEX is named %s (%d)", name, len);
    CHECK_MPI(MPI_Type_get_name(MPI_C_FLOAT_COMPLEX, name, &len));
    CHECK(strcmp(name, "MPI_C_COMPLEX") == 0, "MPI_C_FLOAT_COMPLEX is named %s", name);
    CHECK_MPI(MPI_Type_get_name(MPI_C_DOUBLE_COMPLEX, name, &len));
    CHECK(strcmp(name, "MPI_C_DOUBLE_COMPLEX") == 0, "MPI_C_DOUBLE_COMPLEX is named %s", name);
}

static void check_bounds(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, MPI_Aint true_lb, MPI_Aint true_extent, const char *what)
{
    MPI_Aint l = -99, e = -99, tl = -99, te = -99;
    CHECK_MPI(MPI_Type_get_extent(t, &l, &e));
    CHECK_MPI(MPI_Type_get_true_extent(t, &tl, &te));
    CHECK(l == lb && e == extent, "%s: lb %ld extent %ld, want %ld and %ld", what, (long)l, (long)e, (long)lb, (long)extent);
    CHECK(tl == true_lb && te == true_extent, "%s: true lb %ld true extent %ld, want %ld and %ld", what, (long)tl, (long)te,
          (long)true_lb, (long)true_extent);
}

static void marker_bounds(void)
{
    MPI_Datatype only_lb, lb_ub, lb_and_int, t;
    int one[3] = {1, 1, 1};
    MPI_Aint d1[1] = {5};
    MPI_Datatype ty1[1] = {MPI_LB};
    CHECK_MPI(MPI_Type_create_struct(1, one, d1, ty1, &only_lb));
    check_bounds(only_lb, 5, -5, 0, 0, "struct {MPI_LB at 5}");

    MPI_Aint d2[2] = {5, 2};
    MPI_Datatype ty2[2] = {MPI_LB, MPI_UB};
    CHECK_MPI(MPI_Type_create_struct(2, one, d2, ty2, &lb_ub));
    check_bounds(lb_ub, 5, -3, 0, 0, "struct {MPI_LB at 5, MPI_UB at 2}");

    MPI_Aint d3[2] = {-4, 8};
    MPI_Datatype ty3[2] = {MPI_LB, MPI_INT};
    CHECK_MPI(MPI_Type_create_struct(2, one, d3, ty3, &lb_and_int));
    check_bounds(lb_and_int, -4, 16, 8, 4, "struct {MPI_LB at -4, MPI_INT at 8}");

    CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &t));
    check_bounds(t, 0, 0, 0, 0, "contiguous(0, MPI_INT)");
    int size = -1;
    CHECK_MPI(MPI_Type_commit(&only_lb));
    CHECK_MPI(MPI_Type_size(only_lb, &size));
    CHECK(size == 0, "struct {MPI_LB} has size %d", size);
    MPI_Type_free(&only_lb);
    MPI_Type_free(&lb_ub);
    MPI_Type_free(&lb_and_int);
    MPI_Type_free(&t);
}

static void pack_from_bottom(void)
{
#ifndef PEER_REFUSES_PACK_BOTTOM
    struct { int a; double b; char c[3]; } x = {7, 2.5, {'x', 'y', 'z'}}, y = {0, 0, {0, 0, 0}};
    MPI_Aint at[3];
    MPI_Get_address(&x.a, &at[0]);
    MPI_Get_address(&x.b, &at[1]);
    MPI_Get_address(x.c, &at[2]);
    int len[3] = {1, 1, 3};
    MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, abs_x, abs_y;
    CHECK_MPI(MPI_Type_create_struct(3, len, at, ty, &abs_x));
    CHECK_MPI(MPI_Type_commit(&abs_x));
    char packed[64];
    int pos = 0, room = -1;
    CHECK_MPI(MPI_Pack_size(1, abs_x, MPI_COMM_WORLD, &room));
    CHECK(room >= 15 && room <= (int)sizeof packed, "Pack_size %d", room);
    CHECK_MPI(MPI_Pack(MPI_BOTTOM, 1, abs_x, packed, sizeof packed, &pos, MPI_COMM_WORLD));
    CHECK(pos == 15, "MPI_Pack from MPI_BOTTOM moved %d bytes, want 15", pos);

    /* Through a message to the next rank, which unpacks into its own y from MPI_BOTTOM. */
    MPI_Get_address(&y.a, &at[0]);
    MPI_Get_address(&y.b, &at[1]);
    MPI_Get_address(y.c, &at[2]);
    CHECK_MPI(MPI_Type_create_struct(3, len, at, ty, &abs_y));
    CHECK_MPI(MPI_Type_commit(&abs_y));
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    char got[64];
    CHECK_MPI(MPI_Sendrecv(packed, pos, MPI_PACKED, right, 3, got, sizeof got, MPI_PACKED, left, 3, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    int upos = 0;
    CHECK_MPI(MPI_Unpack(got, sizeof got, &upos, MPI_BOTTOM, 1, abs_y, MPI_COMM_WORLD));
    CHECK(upos == 15, "MPI_Unpack to MPI_BOTTOM took %d bytes", upos);
    CHECK(y.a == 7 && y.b == 2.5 && memcmp(y.c, "xyz", 3) == 0, "unpacked %d %g %.3s", y.a, y.b, y.c);
    MPI_Type_free(&abs_x);
    MPI_Type_free(&abs_y);
#endif
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    names();
    marker_bounds();
    pack_from_bottom();
    test_ok();
    MPI_Finalize();
    return 0;
}
