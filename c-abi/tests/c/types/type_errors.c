/*
 * type_errors: every bad argument of the datatype calls returns its class under
 * MPI_ERRORS_RETURN (the classes MPICH returns), creates nothing, and leaves
 * the library usable: a derived-type exchange works afterwards.
 */
#define TEST_NAME "type_errors"
#include "mpitest.h"

#define EXPECT(call, cls)                                                             \
    do {                                                                              \
        int rc_ = (call);                                                             \
        CHECK(error_class_of(rc_) == (cls), "%s returned %s, want class %d (%s)", #call, \
              error_text(rc_), (cls), #cls);                                          \
    } while (0)

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Datatype t = MPI_DATATYPE_NULL, v;
    int ints[4] = {1, 1, 1, 1}, neg[2] = {1, -1};
    MPI_Aint aints[2] = {0, 8};
    int buf[64] = {0};

    EXPECT(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_vector(2, -1, 2, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_vector(-2, 1, 2, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_create_hvector(2, -1, 8, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_indexed(2, neg, ints, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_create_hindexed(2, neg, aints, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_create_indexed_block(2, -3, ints, MPI_INT, &t), MPI_ERR_COUNT);
    EXPECT(MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_vector(2, 1, 2, (MPI_Datatype)0x12345678, &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_create_struct(2, ints, aints, ((MPI_Datatype[]){MPI_INT, MPI_DATATYPE_NULL}), &t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_contiguous(2, MPI_INT, NULL), MPI_ERR_ARG);
    EXPECT(MPI_Type_create_subarray(2, ((int[]){4, 4}), ((int[]){2, 2}), ((int[]){0, 0}), 99, MPI_INT, &t), MPI_ERR_ARG);
    CHECK(t == MPI_DATATYPE_NULL, "a failed constructor wrote a handle");

    EXPECT(MPI_Type_commit(&t), MPI_ERR_TYPE);
    MPI_Datatype predefined = MPI_INT;
    EXPECT(MPI_Type_free(&predefined), MPI_ERR_TYPE);
    EXPECT(MPI_Type_free(&t), MPI_ERR_TYPE);
    EXPECT(MPI_Type_size(MPI_DATATYPE_NULL, ints), MPI_ERR_TYPE);
    EXPECT(MPI_Type_get_extent(MPI_DATATYPE_NULL, aints, aints), MPI_ERR_TYPE);
    int a, b, c, d;
    EXPECT(MPI_Type_get_envelope(MPI_DATATYPE_NULL, &a, &b, &c, &d), MPI_ERR_TYPE);
    EXPECT(MPI_Type_get_contents(MPI_INT, 4, 4, 4, ints, aints, &t), MPI_ERR_TYPE);

    /* Uncommitted and freed types in communication. */
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    EXPECT(MPI_Type_get_contents(v, 1, 0, 0, ints, aints, &t), MPI_ERR_OTHER);
    EXPECT(MPI_Send(buf, 1, v, test_rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Request r = MPI_REQUEST_NULL;
    EXPECT(MPI_Irecv(buf, 1, v, test_rank, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE);
    CHECK(r == MPI_REQUEST_NULL, "a failed MPI_Irecv wrote a request");
    MPI_Datatype freed = v;
    CHECK_MPI(MPI_Type_free(&v));
#ifndef SKIP_FREED /* MPICH crashes on these (compile its build with -DSKIP_FREED) */
    EXPECT(MPI_Send(buf, 1, freed, test_rank, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Type_commit(&freed), MPI_ERR_TYPE);
#else
    (void)freed;
#endif
    int pos = 0;
    char packed[16];
    EXPECT(MPI_Pack(buf, -1, MPI_INT, packed, 16, &pos, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT(MPI_Pack(buf, 1, MPI_DATATYPE_NULL, packed, 16, &pos, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT(MPI_Pack(buf, 1, MPI_INT, packed, 16, &pos, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Pack_size(-1, MPI_INT, MPI_COMM_WORLD, &a), MPI_ERR_COUNT);

    /* Still usable: a vector exchange with itself. */
    CHECK_MPI(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
    CHECK_MPI(MPI_Type_commit(&v));
    int src[6] = {1, 2, 3, 4, 5, 6}, dst[3] = {0, 0, 0};
    CHECK_MPI(MPI_Sendrecv(src, 1, v, test_rank, 5, dst, 3, MPI_INT, test_rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(dst[0] == 1 && dst[1] == 3 && dst[2] == 5, "after the errors: got %d %d %d", dst[0], dst[1], dst[2]);
    CHECK_MPI(MPI_Type_free(&v));
    test_ok();
    MPI_Finalize();
    return 0;
}
