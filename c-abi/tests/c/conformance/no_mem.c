/*
 * no_mem: a request for more memory than the machine has is an error the program sees,
 * MPI_ERR_NO_MEM (MPI 3.1 section 8.3: the class for an allocation failure), not the process
 * killed, and the library works on afterwards.
 *
 *  - A collective whose temporary buffer cannot be had: MPI_Allreduce (a user operation, so
 *    any datatype goes) of HUGE_COUNT elements of a type resized to a 2^40-byte extent: the
 *    algorithm's temporary would span about 2^48 bytes, more than a process can map. Every
 *    rank fails alike, before anything is sent or touched, so the next collective (a normal
 *    allreduce) works.
 *  - A send whose packed copy cannot be had: REPEATS elements of a BLOCK-byte type resized
 *    to extent 0, so every element is the same BLOCK bytes (overlapping entries are allowed
 *    in a send) and the packed data is 2^48 bytes; MPI_Isend to itself fails with
 *    MPI_ERR_NO_MEM and returns no request.
 *
 * The communicator's error handler is MPI_ERRORS_RETURN here. Under MPICH 4.0.2 the
 * allreduce allocates with malloc, which fails, and returns MPI_ERR_OTHER ("Unable to
 * allocate ..." in its message), tolerated there; its send packs in pieces as it goes, so
 * needs no copy and is not tried there.
 */
#define TEST_NAME "no_mem"
#include "mpitest.h"

enum { HUGE_COUNT = 256, BLOCK = 1 << 24, REPEATS = 1 << 24 };

static void keep_first(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in;
    (void)inout;
    (void)len;
    (void)type;
}

static void expect_no_mem(int rc, const char *what)
{
    CHECK(rc != MPI_SUCCESS, "%s succeeded; it needs about 2^48 bytes", what);
    int cls = error_class_of(rc);
    CHECK(cls == MPI_ERR_NO_MEM ||
              (cls == MPI_ERR_OTHER && tolerated("MPICH", "an allocation failure is MPI_ERR_OTHER")),
          "%s returned %s; want MPI_ERR_NO_MEM", what, error_text(rc));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MPI_Datatype wide;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 40, &wide));
    CHECK_MPI(MPI_Type_commit(&wide));
    MPI_Op first;
    CHECK_MPI(MPI_Op_create(keep_first, 1, &first));
    int in[4] = {1, 2, 3, 4}, out[4] = {0};
    if (test_size > 1)
        expect_no_mem(MPI_Allreduce(in, out, HUGE_COUNT, wide, first, MPI_COMM_WORLD),
                      "MPI_Allreduce with a 2^48-byte temporary");
    int sum = 0, one = 1;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == test_size, "the allreduce after the failure gave %d, want %d", sum, test_size);

    MPI_Datatype block_type, again;
    CHECK_MPI(MPI_Type_contiguous(BLOCK, MPI_BYTE, &block_type));
    CHECK_MPI(MPI_Type_create_resized(block_type, 0, 0, &again));
    CHECK_MPI(MPI_Type_commit(&again));
    char *block = test_malloc(BLOCK);
    memset(block, 7, BLOCK);
    if (!tolerated("MPICH", "streams a 2^48-byte send in pieces (no packed copy): not tried")) {
        MPI_Request req = MPI_REQUEST_NULL;
        expect_no_mem(MPI_Isend(block, REPEATS, again, test_rank, 0, MPI_COMM_WORLD, &req),
                      "MPI_Isend of 2^48 packed bytes");
        CHECK(req == MPI_REQUEST_NULL, "the failed send returned a request");
    }
    /* Point-to-point works on. */
    int back = -1;
    CHECK_MPI(MPI_Sendrecv(&test_rank, 1, MPI_INT, test_rank, 1, &back, 1, MPI_INT, test_rank, 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(back == test_rank, "the sendrecv after the failure gave %d", back);

    free(block);
    MPI_Type_free(&again);
    MPI_Type_free(&block_type);
    MPI_Type_free(&wide);
    MPI_Op_free(&first);
    test_ok();
    MPI_Finalize();
    return 0;
}
