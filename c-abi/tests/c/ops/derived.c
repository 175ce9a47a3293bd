/*
 * derived: predefined operations on derived datatypes whose data is all of one
 * predefined type, and user operations on any derived type, through
 * MPI_Reduce_local.
 *
 *  - A strided vector of doubles: only the vector's elements change; the gaps
 *    keep their values.
 *  - An indexed type of ints with a negative lower bound and a resized extent.
 *  - MPI_MAXLOC on a contiguous type of MPI_DOUBLE_INT and on a vector of
 *    MPI_SHORT_INT (whose data has holes inside each pair): the padding stays.
 *  - A struct of an int and a double: no predefined operation applies
 *    (MPI_ERR_OP), a user operation does, and gets the type's handle.
 */
#define TEST_NAME "derived"
#include "mpitest.h"

static MPI_Datatype seen_type;
static int seen_len;

static void swap_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    seen_len = *len;
    seen_type = *dt;
    memcpy(inout, in, sizeof(int)); /* the struct's int of the first element */
}

static void strided_doubles(void)
{
    enum { COUNT = 3, BLOCKS = 4, STRIDE = 3 };
    MPI_Datatype vec;
    CHECK_MPI(MPI_Type_vector(BLOCKS, 1, STRIDE, MPI_DOUBLE, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    MPI_Aint lb, extent;
    CHECK_MPI(MPI_Type_get_extent(vec, &lb, &extent));
    size_t n = (size_t)COUNT * (size_t)extent / sizeof(double);
    double a[64], b[64];
    CHECK(n <= 64, "extent too large");
    for (size_t i = 0; i < n; i++) {
        a[i] = (double)i;
        b[i] = 1000.0 + (double)i;
    }
    CHECK_MPI(MPI_Reduce_local(a, b, COUNT, vec, MPI_SUM));
    size_t per = (size_t)extent / sizeof(double);
    for (size_t i = 0; i < n; i++) {
        size_t at = i % per;
        int in_type = at % STRIDE == 0 && at / STRIDE < BLOCKS;
        double want = in_type ? 1000.0 + 2.0 * (double)i : 1000.0 + (double)i;
        CHECK(b[i] == want, "vector SUM: double %zu is %g, want %g", i, b[i], want);
    }
    CHECK_MPI(MPI_Type_free(&vec));
}

static void indexed_ints_with_offsets(void)
{
    /* ints at 1, 2 and 5 of each element, lower bound -4 bytes, extent 8 ints. */
    int blocklens[2] = {2, 1}, displs[2] = {1, 5};
    MPI_Datatype idx, resized;
    CHECK_MPI(MPI_Type_indexed(2, blocklens, displs, MPI_INT, &idx));
    CHECK_MPI(MPI_Type_create_resized(idx, -(MPI_Aint)sizeof(int), 8 * sizeof(int), &resized));
    CHECK_MPI(MPI_Type_commit(&resized));
    int a[1 + 16], b[1 + 16];
    for (int i = 0; i < 17; i++) {
        a[i] = 1 << (i % 8);
        b[i] = 0xff00;
    }
    /* The buffer passed is one int in: the lower bound reaches back to a[0]. */
    CHECK_MPI(MPI_Reduce_local(a + 1, b + 1, 2, resized, MPI_BXOR));
    for (int i = 0; i < 17; i++) {
        int pos = (i - 1 + 8) % 8; /* position within an element, from the passed buffer */
        int in_type = i >= 1 && (pos == 1 || pos == 2 || pos == 5);
        int want = in_type ? (0xff00 ^ (1 << (i % 8))) : 0xff00;
        CHECK(b[i] == want, "indexed BXOR: int %d is 0x%x, want 0x%x", i, b[i], want);
    }
    CHECK_MPI(MPI_Type_free(&idx));
    CHECK_MPI(MPI_Type_free(&resized));
}

static void pairs_in_derived_types(void)
{
    struct { double v; int i; } a[4], b[4];
    memset(a, 0x11, sizeof a);
    memset(b, 0x77, sizeof b);
    double va[4] = {1, 5, 3, -2}, vb[4] = {2, 5, 1, -2};
    int ia[4] = {0, 7, 2, 1}, ib[4] = {9, 4, 8, 3};
    for (int k = 0; k < 4; k++) {
        a[k].v = va[k]; a[k].i = ia[k];
        b[k].v = vb[k]; b[k].i = ib[k];
    }
    MPI_Datatype two;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_DOUBLE_INT, &two));
    CHECK_MPI(MPI_Type_commit(&two));
    CHECK_MPI(MPI_Reduce_local(a, b, 2, two, MPI_MAXLOC));
    double wv[4] = {2, 5, 3, -2};
    int wi[4] = {9, 4, 2, 1};
    for (int k = 0; k < 4; k++) {
        CHECK(b[k].v == wv[k] && b[k].i == wi[k], "contiguous DOUBLE_INT MAXLOC: pair %d is (%g, %d), want (%g, %d)",
              k, b[k].v, b[k].i, wv[k], wi[k]);
        unsigned char pad[4];
        memcpy(pad, (char *)&b[k] + 12, 4);
        CHECK(pad[0] == 0x77 && pad[3] == 0x77, "contiguous DOUBLE_INT MAXLOC wrote into pair %d's padding", k);
    }
    CHECK_MPI(MPI_Type_free(&two));

    /* Every other MPI_SHORT_INT: data at bytes 0-1 and 4-7 of each chosen pair. */
    struct { short v; int i; } sa[6], sb[6];
    memset(sa, 0x22, sizeof sa);
    memset(sb, 0x66, sizeof sb);
    for (int k = 0; k < 6; k++) {
        sa[k].v = (short)(k % 3); sa[k].i = 10 + k;
        sb[k].v = 1; sb[k].i = 20 + k;
    }
    MPI_Datatype every_other;
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_SHORT_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Reduce_local(sa, sb, 1, every_other, MPI_MINLOC));
    for (int k = 0; k < 6; k++) {
        short wv2 = 1;
        int wi2 = 20 + k;
        if (k % 2 == 0) {
            short v = (short)(k % 3);
            if (v < 1) { wv2 = v; wi2 = 10 + k; }
            else if (v == 1 && 10 + k < wi2) wi2 = 10 + k;
        }
        CHECK(sb[k].v == wv2 && sb[k].i == wi2, "vector SHORT_INT MINLOC: pair %d is (%d, %d), want (%d, %d)",
              k, sb[k].v, sb[k].i, wv2, wi2);
        unsigned char pad[2];
        memcpy(pad, (char *)&sb[k] + 2, 2);
        CHECK(pad[0] == 0x66 && pad[1] == 0x66, "vector SHORT_INT MINLOC wrote into pair %d's padding", k);
    }
    CHECK_MPI(MPI_Type_free(&every_other));
}

static void mixed_struct(void)
{
    struct mixed { int i; double d; } a[2] = {{1, 1.5}, {2, 2.5}}, b[2] = {{3, 3.5}, {4, 4.5}};
    int blocklens[2] = {1, 1};
    MPI_Aint displs[2] = {offsetof(struct mixed, i), offsetof(struct mixed, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, st;
    CHECK_MPI(MPI_Type_create_struct(2, blocklens, displs, types, &st));
    CHECK_MPI(MPI_Type_commit(&st));
    int rc = MPI_Reduce_local(a, b, 2, st, MPI_SUM);
    CHECK(error_class_of(rc) == MPI_ERR_OP, "SUM on an int+double struct returned %s, want MPI_ERR_OP", error_text(rc));
    CHECK(b[0].i == 3 && b[1].d == 4.5, "the failed call changed the buffer");
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(swap_first, 0, &op));
    CHECK_MPI(MPI_Reduce_local(a, b, 2, st, op));
    CHECK(seen_len == 2 && seen_type == st, "the user function got len %d, type 0x%x; want 2, 0x%x", seen_len,
          (unsigned)seen_type, (unsigned)st);
    CHECK(b[0].i == 1 && b[0].d == 3.5, "the user function's result is not in the buffer");
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&st));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    strided_doubles();
    indexed_ints_with_offsets();
    pairs_in_derived_types();
    mixed_struct();
    test_ok();
    MPI_Finalize();
    return 0;
}
