/*
 * f90_types: MPI_Type_create_f90_integer / _real / _complex, compared with MPICH 4.0.2's
 * answers (measured with mpicc.mpich): for each (p, r) the size of the type, or no type.
 *
 *   integer: r <= 2 -> 1 byte, <= 4 -> 2, <= 9 -> 4, <= 18 -> 8, more: none
 *   real:    p <= 6 and r <= 37 -> 4 bytes, p <= 15 and r <= 307 -> 8, more: none
 *   complex: twice the real's size
 *
 * (MPI_UNDEFINED for p or r asks nothing of it.) Also: the envelope is
 * MPI_COMBINER_F90_INTEGER / _REAL / _COMPLEX with the arguments as contents; the same
 * (p, r) gives the same handle again, a different one another; MPI_Type_free sets the
 * handle to MPI_DATATYPE_NULL and the type comes back on the next call; a duplicate has
 * the DUP combiner; the types carry data (a ring and an allreduce of each kind);
 * MPI_Type_match_size gives MPICH's types. No such type: MPI_ERR_ARG (MPICH's documented
 * class; MPICH 4.0.2 returns MPI_ERR_OTHER, tolerated under MPICH) and MPI_DATATYPE_NULL.
 * MPICH 4.0.2 also returns a broken type (size MPI_UNDEFINED) for a (p, r) whose type was
 * freed before (tolerated under MPICH only).
 * Rank 0 prints "OK f90_types".
 */
#define TEST_NAME "f90_types"
#include "../mpitest.h"

#define U MPI_UNDEFINED

struct want {
    int p, r, size; /* size 0: no such type */
};

static const struct want integers[] = {
    {0, U, 1}, {0, -1, 1}, {0, 0, 1}, {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {0, 5, 4},
    {0, 9, 4}, {0, 10, 8}, {0, 18, 8}, {0, 19, 0}, {0, 38, 0},
};
static const struct want reals[] = {
    {U, U, 4},   {U, 37, 4},   {U, 38, 8},  {U, 307, 8}, {U, 308, 0}, {U, 4931, 0},
    {6, U, 4},   {7, U, 8},    {15, U, 8},  {16, U, 0},  {33, U, 0},  {0, 0, 4},
    {1, 1, 4},   {6, 37, 4},   {6, 38, 8},  {15, 307, 8}, {15, 308, 0}, {7, 37, 8},
    {-1, 5, 4},  {5, -1, 4},   {100, U, 0},
};

static void check_type(const char *what, int p, int r, int rc, MPI_Datatype t, int size,
                       int combiner)
{
    if (size == 0) {
        int cls = error_class_of(rc);
        CHECK(rc != MPI_SUCCESS, "%s(%d, %d) gave a type", what, p, r);
        if (!(cls == MPI_ERR_OTHER && tolerated("MPICH", "no such F90 type: MPI_ERR_OTHER")))
            CHECK(cls == MPI_ERR_ARG, "%s(%d, %d): %s", what, p, r, error_text(rc));
        return;
    }
    CHECK(rc == MPI_SUCCESS, "%s(%d, %d): %s", what, p, r, error_text(rc));
    int got, ni, na, nd, comb;
    CHECK_MPI(MPI_Type_size(t, &got));
    CHECK(got == size, "%s(%d, %d): %d bytes, MPICH gives %d", what, p, r, got, size);
    MPI_Aint lb, extent;
    CHECK_MPI(MPI_Type_get_extent(t, &lb, &extent));
    CHECK(lb == 0 && extent == size, "%s(%d, %d): extent %ld", what, p, r, (long)extent);
    CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    int want_ni = combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2;
    CHECK(comb == combiner && ni == want_ni && na == 0 && nd == 0,
          "%s(%d, %d): envelope %d %d %d combiner %d", what, p, r, ni, na, nd, comb);
    int ints[2] = {-9, -9};
    MPI_Aint aints[1];
    MPI_Datatype types[1];
    CHECK_MPI(MPI_Type_get_contents(t, ni, na, nd, ints, aints, types));
    if (combiner == MPI_COMBINER_F90_INTEGER)
        CHECK(ints[0] == r, "contents: r %d", ints[0]);
    else
        CHECK(ints[0] == p && ints[1] == r, "contents: %d %d", ints[0], ints[1]);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype t;
    for (size_t i = 0; i < sizeof integers / sizeof integers[0]; i++) {
        t = MPI_INT;
        int rc = MPI_Type_create_f90_integer(integers[i].r, &t);
        check_type("create_f90_integer", 0, integers[i].r, rc, t, integers[i].size,
                   MPI_COMBINER_F90_INTEGER);
    }
    for (size_t i = 0; i < sizeof reals / sizeof reals[0]; i++) {
        int p = reals[i].p, r = reals[i].r, rc;
        rc = MPI_Type_create_f90_real(p, r, &t);
        check_type("create_f90_real", p, r, rc, t, reals[i].size, MPI_COMBINER_F90_REAL);
        rc = MPI_Type_create_f90_complex(p, r, &t);
        check_type("create_f90_complex", p, r, rc, t, 2 * reals[i].size,
                   MPI_COMBINER_F90_COMPLEX);
    }

    /* One handle per (p, r). */
    MPI_Datatype a, b, c;
    CHECK_MPI(MPI_Type_create_f90_real(6, U, &a));
    CHECK_MPI(MPI_Type_create_f90_real(6, U, &b));
    CHECK_MPI(MPI_Type_create_f90_real(5, U, &c));
    CHECK(a == b, "the same (p, r) gave two handles");
    CHECK(a != c, "(5, U) and (6, U) gave one handle");
    CHECK_MPI(MPI_Type_free(&b));
    CHECK(b == MPI_DATATYPE_NULL, "Type_free did not clear the handle");
    CHECK_MPI(MPI_Type_create_f90_real(6, U, &b));
    int size;
    CHECK_MPI(MPI_Type_size(b, &size));
    CHECK(size == 4 || tolerated("MPICH", "a F90 type made again after MPI_Type_free is broken"),
          "the type after a free has %d bytes", size);
    MPI_Datatype d;
    int ni, na, nd, comb;
    CHECK_MPI(MPI_Type_dup(a, &d));
    CHECK_MPI(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb));
    CHECK(comb == MPI_COMBINER_DUP, "a duplicate's combiner is %d", comb);
    CHECK_MPI(MPI_Type_free(&d));

    /* Data: a ring of 8-byte integers, an allreduce of 8-byte reals and 16-byte complexes. */
    MPI_Datatype i8, r8, c16;
    CHECK_MPI(MPI_Type_create_f90_integer(15, &i8));
    CHECK_MPI(MPI_Type_create_f90_real(12, U, &r8));
    CHECK_MPI(MPI_Type_create_f90_complex(12, U, &c16));
    int64_t out[5], in[5];
    for (int i = 0; i < 5; i++) {
        out[i] = ((int64_t)test_rank << 40) + i;
        in[i] = -1;
    }
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    CHECK_MPI(MPI_Sendrecv(out, 5, i8, right, 0, in, 5, i8, left, 0, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    for (int i = 0; i < 5; i++)
        CHECK(in[i] == ((int64_t)left << 40) + i, "ring element %d", i);
    double x[2] = {test_rank + 0.5, 1.0}, sum[2];
    CHECK_MPI(MPI_Allreduce(x, sum, 2, r8, MPI_SUM, MPI_COMM_WORLD));
    double want = test_size * (test_size - 1) / 2.0 + 0.5 * test_size;
    CHECK(sum[0] == want && sum[1] == test_size, "real allreduce: %g %g", sum[0], sum[1]);
    double z[2] = {1.0, test_rank}, zsum[2];
    CHECK_MPI(MPI_Allreduce(z, zsum, 1, c16, MPI_SUM, MPI_COMM_WORLD));
    CHECK(zsum[0] == test_size && zsum[1] == test_size * (test_size - 1) / 2.0,
          "complex allreduce: %g %g", zsum[0], zsum[1]);

    /* MPI_Type_match_size, as MPICH answers. */
    MPI_Datatype m;
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 4, &m));
    CHECK(m == MPI_INTEGER4, "match_size(integer, 4) = 0x%x", (unsigned)m);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 8, &m));
    CHECK(m == MPI_INTEGER8, "match_size(integer, 8) = 0x%x", (unsigned)m);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m));
    CHECK(m == MPI_REAL8, "match_size(real, 8) = 0x%x", (unsigned)m);
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_COMPLEX, 16, &m));
    CHECK(m == MPI_COMPLEX16, "match_size(complex, 16) = 0x%x", (unsigned)m);
    int rc = MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &m);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "match_size(integer, 3): %s", error_text(rc));

    /* No such type: the handle is MPI_DATATYPE_NULL. */
    t = MPI_INT;
    rc = MPI_Type_create_f90_integer(40, &t);
    CHECK(rc != MPI_SUCCESS, "an integer of range 40");
    CHECK(t == MPI_DATATYPE_NULL || tolerated("MPICH", "newtype left unset on error"),
          "the handle after a failed call is 0x%x", (unsigned)t);
    test_ok();
    MPI_Finalize();
    return 0;
}
