/*
 * op_errors: bad arguments of the operation calls under MPI_ERRORS_RETURN.
 *
 * Each bad call must return an error of the class MPICH returns (MPI_ERR_OP
 * for an invalid operation, or one not defined on the datatype, or
 * MPI_REPLACE / MPI_NO_OP outside one-sided calls; MPI_ERR_ARG for NULL
 * arguments; MPI_ERR_BUFFER for aliased buffers or MPI_IN_PLACE), with a
 * non-empty error string, and change nothing: the in-out buffer keeps its
 * values and a failed MPI_Op_free leaves the handle as it was.
 *
 * Validated against MPICH with OPS_MPICH=1, which skips the cases where MPICH
 * crashes or differs: a negative count (MPICH crashes; here MPI_ERR_COUNT), a
 * NULL buffer (crash; MPI_ERR_BUFFER), a freed or invalid user handle
 * (crash; MPI_ERR_OP), MPI_DATATYPE_NULL and an uncommitted type (MPICH says
 * MPI_ERR_OP; here MPI_ERR_TYPE, the class of a bad datatype).
 */
#define TEST_NAME "op_errors"
#include "mpitest.h"

static int bad_calls;

static void expect_at(const char *file, int line, const char *call, int rc, int want)
{
    bad_calls++;
    if (rc == MPI_SUCCESS)
        test_fail_at(file, line, "%s succeeded; want an error of class %d", call, want);
    int cls = error_class_of(rc);
    if (cls != want)
        test_fail_at(file, line, "%s returned %s; want class %d", call, error_text(rc), want);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    if (len <= 0)
        test_fail_at(file, line, "%s: empty error string", call);
}
#define EXPECT(call, want) expect_at(__FILE__, __LINE__, #call, (call), (want))

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)in; (void)inout; (void)len; (void)dt;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int mpich = getenv("OPS_MPICH") != NULL;

    int in[4] = {1, 2, 3, 4}, io[4] = {10, 20, 30, 40};
    double d_in[2] = {1, 2}, d_io[2] = {3, 4};

    /* Invalid operations, and operations undefined on the type. */
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_OP_NULL), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, (MPI_Op)0x12345), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_MAXLOC), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 2, MPI_2INT, MPI_SUM), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_BYTE, MPI_SUM), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_BYTE, MPI_LAND), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_C_BOOL, MPI_SUM), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_LOGICAL, MPI_MAX), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(d_in, d_io, 2, MPI_DOUBLE, MPI_BAND), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(d_in, d_io, 1, MPI_C_DOUBLE_COMPLEX, MPI_MAX), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_WCHAR, MPI_SUM), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_PACKED, MPI_BOR), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_REPLACE), MPI_ERR_OP);
    EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_NO_OP), MPI_ERR_OP);
    /* Even with nothing to reduce. */
    EXPECT(MPI_Reduce_local(in, io, 0, MPI_INT, MPI_MAXLOC), MPI_ERR_OP);

    /* Buffers. */
    EXPECT(MPI_Reduce_local(io, io, 4, MPI_INT, MPI_SUM), MPI_ERR_BUFFER);
    EXPECT(MPI_Reduce_local(MPI_IN_PLACE, io, 4, MPI_INT, MPI_SUM), MPI_ERR_BUFFER);
    CHECK_MPI(MPI_Reduce_local(io, io, 0, MPI_INT, MPI_SUM));

    /* The operation calls. */
    MPI_Op op = MPI_SUM;
    EXPECT(MPI_Op_free(&op), MPI_ERR_OP);
    CHECK(op == MPI_SUM, "a failed MPI_Op_free changed the handle to 0x%x", (unsigned)op);
    op = MPI_OP_NULL;
    EXPECT(MPI_Op_free(&op), MPI_ERR_OP);
    EXPECT(MPI_Op_free(NULL), MPI_ERR_ARG);
    EXPECT(MPI_Op_create(NULL, 1, &op), MPI_ERR_ARG);
    EXPECT(MPI_Op_create(user_fn, 1, NULL), MPI_ERR_ARG);
    int commute;
    EXPECT(MPI_Op_commutative(MPI_OP_NULL, &commute), MPI_ERR_OP);
    EXPECT(MPI_Op_commutative(MPI_SUM, NULL), MPI_ERR_ARG);

    if (!mpich) {
        EXPECT(MPI_Reduce_local(in, io, -1, MPI_INT, MPI_SUM), MPI_ERR_COUNT);
        EXPECT(MPI_Reduce_local(NULL, io, 4, MPI_INT, MPI_SUM), MPI_ERR_BUFFER);
        EXPECT(MPI_Reduce_local(in, NULL, 4, MPI_INT, MPI_SUM), MPI_ERR_BUFFER);
        EXPECT(MPI_Reduce_local(in, io, 4, MPI_DATATYPE_NULL, MPI_SUM), MPI_ERR_TYPE);
        EXPECT(MPI_Reduce_local(in, io, 4, (MPI_Datatype)0x4c00ffff, MPI_SUM), MPI_ERR_TYPE);
        MPI_Datatype vec;
        CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
        EXPECT(MPI_Reduce_local(in, io, 1, vec, MPI_SUM), MPI_ERR_TYPE);
        CHECK_MPI(MPI_Type_free(&vec));
        /* A freed user operation is no operation. */
        MPI_Op mine, freed;
        CHECK_MPI(MPI_Op_create(user_fn, 1, &mine));
        freed = mine;
        CHECK_MPI(MPI_Op_free(&mine));
        EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, freed), MPI_ERR_OP);
        EXPECT(MPI_Op_free(&freed), MPI_ERR_OP);
        EXPECT(MPI_Op_commutative(freed, &commute), MPI_ERR_OP);
        EXPECT(MPI_Reduce_local(in, io, 4, MPI_INT, (MPI_Op)0x98000777), MPI_ERR_OP);
    }

    /* Nothing changed the in-out buffers. */
    for (int i = 0; i < 4; i++)
        CHECK(io[i] == 10 * (i + 1), "a failed call changed io[%d] to %d", i, io[i]);
    CHECK(d_io[0] == 3 && d_io[1] == 4, "a failed call changed the double buffer");

    /* And good calls still work. */
    CHECK_MPI(MPI_Reduce_local(in, io, 4, MPI_INT, MPI_SUM));
    CHECK(io[0] == 11 && io[3] == 44, "SUM after the errors gave %d, %d", io[0], io[3]);

    if (test_rank == 0)
        printf("%d bad calls checked\n", bad_calls);
    test_ok();
    MPI_Finalize();
    return 0;
}
