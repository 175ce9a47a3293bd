/*
 * completion: what the calls that complete operations leave behind (issue 17).
 *
 *  - A call that completes one operation returns its error itself and does not write the
 *    status's MPI_ERROR field (MPI 3.1 §3.2.5): MPI_Recv, MPI_Sendrecv, MPI_Wait, MPI_Test,
 *    MPI_Probe, MPI_Iprobe, MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv + MPI_Wait,
 *    MPI_Waitany, MPI_Testany, MPI_Request_get_status, on real messages and on
 *    MPI_PROC_NULL.
 *  - A send or receive of count 0 never uses its datatype: MPI_DATATYPE_NULL is accepted
 *    there (to MPI_PROC_NULL and to a real rank), as MPICH does; with count 1 it is
 *    MPI_ERR_TYPE.
 *  - Every Wait/Test variant on a mix of nonblocking collective and point-to-point requests
 *    sets each request it completes to MPI_REQUEST_NULL (MPI 3.1 §3.7.3, §3.7.5).
 *
 * Runs on any number of ranks; ring neighbours exchange messages. Checked against MPICH
 * 4.0.2 (`mpicc.mpich`, `mpiexec.mpich`), which deviates in one place: its MPI_Probe and
 * MPI_Iprobe write MPI_ERROR = 0 (compile with -DPEER_WRITES_PROBE_ERROR to skip those two
 * checks; everything else passes there).
 */
#define TEST_NAME "completion"
#include "mpitest.h"

enum { UNTOUCHED = 12345 };

static void fresh(MPI_Status *st)
{
    memset(st, 0, sizeof *st);
    st->MPI_ERROR = UNTOUCHED;
}

#define CHECK_UNTOUCHED(st, call)                                                          \
    CHECK((st).MPI_ERROR == UNTOUCHED, "%s wrote MPI_ERROR = %d into its status", call,    \
          (st).MPI_ERROR)

static void single_completions_leave_mpi_error(void)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    int out = test_rank, in = -1, flag = 0, index = -1;
    MPI_Status st;
    MPI_Request r;
    MPI_Message m;

    fresh(&st);
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 1, &in, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
    CHECK(in == left, "Sendrecv got %d, want %d", in, left);
    CHECK_UNTOUCHED(st, "MPI_Sendrecv");

    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, 2, MPI_COMM_WORLD, &r));
    fresh(&st);
    CHECK_MPI(MPI_Probe(left, 2, MPI_COMM_WORLD, &st));
#ifndef PEER_WRITES_PROBE_ERROR
    CHECK_UNTOUCHED(st, "MPI_Probe");
#endif
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 2, "Probe found %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    fresh(&st);
    do
        CHECK_MPI(MPI_Iprobe(left, 2, MPI_COMM_WORLD, &flag, &st));
    while (!flag);
#ifndef PEER_WRITES_PROBE_ERROR
    CHECK_UNTOUCHED(st, "MPI_Iprobe");
#endif
    fresh(&st);
    CHECK_MPI(MPI_Recv(&in, 1, MPI_INT, left, 2, MPI_COMM_WORLD, &st));
    CHECK_UNTOUCHED(st, "MPI_Recv");
    fresh(&st);
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK_UNTOUCHED(st, "MPI_Wait");

    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, 3, MPI_COMM_WORLD, &r));
    fresh(&st);
    CHECK_MPI(MPI_Mprobe(left, 3, MPI_COMM_WORLD, &m, &st));
    CHECK_UNTOUCHED(st, "MPI_Mprobe");
    fresh(&st);
    CHECK_MPI(MPI_Mrecv(&in, 1, MPI_INT, &m, &st));
    CHECK_UNTOUCHED(st, "MPI_Mrecv");
    CHECK(m == MPI_MESSAGE_NULL, "MPI_Mrecv left the message handle set");
    fresh(&st);
    do
        CHECK_MPI(MPI_Test(&r, &flag, &st));
    while (!flag);
    CHECK_UNTOUCHED(st, "MPI_Test");

    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, 4, MPI_COMM_WORLD, &r));
    fresh(&st);
    do
        CHECK_MPI(MPI_Improbe(left, 4, MPI_COMM_WORLD, &flag, &m, &st));
    while (!flag);
    CHECK_UNTOUCHED(st, "MPI_Improbe");
    MPI_Request rr;
    CHECK_MPI(MPI_Imrecv(&in, 1, MPI_INT, &m, &rr));
    fresh(&st);
    do
        CHECK_MPI(MPI_Request_get_status(rr, &flag, &st));
    while (!flag);
    CHECK_UNTOUCHED(st, "MPI_Request_get_status");
    fresh(&st);
    CHECK_MPI(MPI_Wait(&rr, &st));
    CHECK_UNTOUCHED(st, "MPI_Wait after MPI_Imrecv");
    fresh(&st);
    CHECK_MPI(MPI_Waitany(1, &r, &index, &st));
    CHECK_UNTOUCHED(st, "MPI_Waitany");
    CHECK(index == 0 && r == MPI_REQUEST_NULL, "Waitany: index %d", index);

    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Recv(&in, 1, MPI_INT, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    fresh(&st);
    do
        CHECK_MPI(MPI_Testany(1, &r, &index, &flag, &st));
    while (!flag);
    CHECK_UNTOUCHED(st, "MPI_Testany");

    /* MPI_PROC_NULL: the status is the empty one, MPI_ERROR still the program's. */
    fresh(&st);
    CHECK_MPI(MPI_Recv(&in, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_UNTOUCHED(st, "MPI_Recv from MPI_PROC_NULL");
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
    fresh(&st);
    CHECK_MPI(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
    CHECK_UNTOUCHED(st, "MPI_Mprobe of MPI_PROC_NULL");
    CHECK(m == MPI_MESSAGE_NO_PROC, "Mprobe of MPI_PROC_NULL gave no MPI_MESSAGE_NO_PROC");
    fresh(&st);
    CHECK_MPI(MPI_Mrecv(&in, 1, MPI_INT, &m, &st));
    CHECK_UNTOUCHED(st, "MPI_Mrecv of MPI_MESSAGE_NO_PROC");
}

static void count_zero_never_uses_the_datatype(void)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    MPI_Status st;
    MPI_Request r[2];
    int count = -1;

    CHECK_MPI(MPI_Recv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Send(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, NULL, 0, MPI_DATATYPE_NULL,
                           MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    /* A real zero-byte message described the same way. */
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 6, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, right, 6, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Wait(&r[0], &st));
    CHECK_MPI(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == 0 && st.MPI_SOURCE == left, "zero-byte message: count %d from %d", count, st.MPI_SOURCE);

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int e = MPI_Recv(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st);
    CHECK(error_class_of(e) == MPI_ERR_TYPE, "a receive of 1 MPI_DATATYPE_NULL returned %s", error_text(e));
    e = MPI_Send(NULL, 1, MPI_DATATYPE_NULL, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
    CHECK(error_class_of(e) == MPI_ERR_TYPE, "a send of 1 MPI_DATATYPE_NULL returned %s", error_text(e));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Four requests: a barrier, an allreduce, a receive and a send (the ring). */
static void start_mix(MPI_Request r[4], int *sum, int *in, int *out)
{
    int right = (test_rank + 1) % test_size, left = (test_rank + test_size - 1) % test_size;
    static int one = 1;
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Iallreduce(&one, sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Irecv(in, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &r[2]));
    *out = test_rank;
    CHECK_MPI(MPI_Isend(out, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &r[3]));
}

static void check_mix(MPI_Request r[4], int sum, int in, const char *how)
{
    int left = (test_rank + test_size - 1) % test_size;
    for (int i = 0; i < 4; i++)
        CHECK(r[i] == MPI_REQUEST_NULL, "%s left request %d (of a barrier, an allreduce, a receive, a send) set", how, i);
    CHECK(sum == test_size && in == left, "%s: sum %d, received %d", how, sum, in);
}

static void mixed_requests_become_null(void)
{
    MPI_Request r[4];
    MPI_Status sts[4];
    int sum, in, out, flag, index, done, indices[4];

    start_mix(r, &sum, &in, &out);
    CHECK_MPI(MPI_Waitall(4, r, sts));
    check_mix(r, sum, in, "MPI_Waitall");

    start_mix(r, &sum, &in, &out);
    do
        CHECK_MPI(MPI_Testall(4, r, &flag, sts));
    while (!flag);
    check_mix(r, sum, in, "MPI_Testall");

    start_mix(r, &sum, &in, &out);
    for (int k = 0; k < 4; k++) {
        CHECK_MPI(MPI_Waitany(4, r, &index, MPI_STATUS_IGNORE));
        CHECK(index >= 0 && index < 4 && r[index] == MPI_REQUEST_NULL, "MPI_Waitany: index %d not freed", index);
    }
    CHECK_MPI(MPI_Waitany(4, r, &index, MPI_STATUS_IGNORE));
    CHECK(index == MPI_UNDEFINED, "MPI_Waitany on null requests gave index %d", index);
    check_mix(r, sum, in, "MPI_Waitany");

    start_mix(r, &sum, &in, &out);
    for (int k = 0; k < 4;) {
        CHECK_MPI(MPI_Testany(4, r, &index, &flag, MPI_STATUS_IGNORE));
        if (flag) {
            CHECK(index >= 0 && index < 4 && r[index] == MPI_REQUEST_NULL, "MPI_Testany: index %d not freed", index);
            k++;
        }
    }
    check_mix(r, sum, in, "MPI_Testany");

    start_mix(r, &sum, &in, &out);
    for (int k = 0; k < 4; k += done) {
        CHECK_MPI(MPI_Waitsome(4, r, &done, indices, sts));
        for (int i = 0; i < done; i++)
            CHECK(r[indices[i]] == MPI_REQUEST_NULL, "MPI_Waitsome: request %d not freed", indices[i]);
    }
    check_mix(r, sum, in, "MPI_Waitsome");

    start_mix(r, &sum, &in, &out);
    for (int k = 0; k < 4; k += done) {
        CHECK_MPI(MPI_Testsome(4, r, &done, indices, sts));
        for (int i = 0; i < done; i++)
            CHECK(r[indices[i]] == MPI_REQUEST_NULL, "MPI_Testsome: request %d not freed", indices[i]);
    }
    check_mix(r, sum, in, "MPI_Testsome");

    start_mix(r, &sum, &in, &out);
    for (int i = 0; i < 4; i++) {
        do
            CHECK_MPI(MPI_Test(&r[i], &flag, MPI_STATUS_IGNORE));
        while (!flag);
    }
    check_mix(r, sum, in, "MPI_Test");
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    single_completions_leave_mpi_error();
    count_zero_never_uses_the_datatype();
    mixed_requests_become_null();
    test_ok();
    MPI_Finalize();
    return 0;
}
