/*
 * from_group: MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups in the world
 * model (groups from MPI_Comm_group), collective over the groups' processes only.
 *
 *  - the even and the odd ranks each make a communicator of their half at the same time,
 *    with different string tags; only the members call, and the data they reduce is checked;
 *  - then, at every process, two creations one after the other with different tags over
 *    overlapping groups (its half, then everyone), used interleaved;
 *  - an intercommunicator between the lower and the upper half (leaders 0 and 0), checked
 *    with point-to-point across it (every local rank to the remote rank of the same number,
 *    and back) and MPI_Comm_remote_size / MPI_Comm_test_inter;
 *  - bad arguments under MPI_ERRORS_RETURN: a process outside the group (MPI_ERR_GROUP),
 *    overlapping local and remote groups (MPI_ERR_GROUP), a leader outside its group
 *    (MPI_ERR_RANK), a NULL string tag (MPI_ERR_ARG); MPI_GROUP_EMPTY gives MPI_COMM_NULL.
 * Rank 0 prints "OK from_group".
 */
#define TEST_NAME "from_group"
#include "../mpitest.h"

static MPI_Group range_group(MPI_Group world, int first, int last, int stride)
{
    MPI_Group g;
    int ranges[1][3] = {{first, last, stride}};
    CHECK_MPI(MPI_Group_range_incl(world, 1, ranges, &g));
    return g;
}

static void check_sum(MPI_Comm c, int salt)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    /* Each member contributes its world rank: the sum tells which processes are in. */
    long mine = (long)test_rank * 1000 + salt, sum = 0, want = 0;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c));
    MPI_Group g, wg;
    CHECK_MPI(MPI_Comm_group(c, &g));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int r = 0; r < size; r++) {
        int w;
        CHECK_MPI(MPI_Group_translate_ranks(g, 1, &r, wg, &w));
        want += (long)w * 1000 + salt;
    }
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK(sum == want, "allreduce over the new communicator: %ld, want %ld", sum, want);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Group world;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));

    /* Halves by parity, made at the same time with different tags. */
    int odd = test_rank % 2;
    int last = test_size - 1;
    MPI_Group parity = odd ? range_group(world, 1, last - (last % 2 == 0), 2)
                           : range_group(world, 0, last - (last % 2), 2);
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_create_from_group(parity, odd ? "from_group.odd" : "from_group.even",
                                         MPI_INFO_NULL, MPI_ERRORS_RETURN, &half));
    int hs, hr;
    CHECK_MPI(MPI_Comm_size(half, &hs));
    CHECK_MPI(MPI_Comm_rank(half, &hr));
    CHECK(hs == (odd ? test_size / 2 : (test_size + 1) / 2), "half of %d ranks", hs);
    CHECK(hr == test_rank / 2, "rank %d in the half", hr);
    check_sum(half, 1);

    /* Two creations in a row with different tags, over overlapping groups. */
    MPI_Comm again, all;
    CHECK_MPI(MPI_Comm_create_from_group(parity, "from_group.again", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &again));
    CHECK_MPI(MPI_Comm_create_from_group(world, "from_group.all", MPI_INFO_NULL,
                                         MPI_ERRORS_ARE_FATAL, &all));
    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_get_errhandler(all, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "the new communicator's handler is not the one passed");
    for (int i = 0; i < 3; i++) {
        check_sum(all, 10 + i);
        check_sum(again, 20 + i);
        check_sum(half, 30 + i);
    }
    int cmp;
    CHECK_MPI(MPI_Comm_compare(all, MPI_COMM_WORLD, &cmp));
    CHECK(cmp == MPI_CONGRUENT, "the communicator of the world group compares %d", cmp);

    /* An intercommunicator between the lower and the upper half. */
    if (test_size >= 2) {
        int lower_n = test_size / 2;
        int upper = test_rank >= lower_n;
        MPI_Group lo = range_group(world, 0, lower_n - 1, 1);
        MPI_Group hi = range_group(world, lower_n, test_size - 1, 1);
        MPI_Comm inter;
        CHECK_MPI(MPI_Intercomm_create_from_groups(upper ? hi : lo, 0, upper ? lo : hi, 0,
                                                   "from_group.inter", MPI_INFO_NULL,
                                                   MPI_ERRORS_RETURN, &inter));
        int is_inter = 0, rsize = 0, lsize = 0, lrank = -1;
        CHECK_MPI(MPI_Comm_test_inter(inter, &is_inter));
        CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
        CHECK_MPI(MPI_Comm_size(inter, &lsize));
        CHECK_MPI(MPI_Comm_rank(inter, &lrank));
        CHECK(is_inter, "not an intercommunicator");
        CHECK(lsize == (upper ? test_size - lower_n : lower_n), "local size %d", lsize);
        CHECK(rsize == (upper ? lower_n : test_size - lower_n), "remote size %d", rsize);
        CHECK(lrank == (upper ? test_rank - lower_n : test_rank), "local rank %d", lrank);
        /* Every local rank with a partner of the same number sends to it and hears back. */
        enum { N = 5000 };
        static unsigned char out[N], in[N];
        if (lrank < rsize) {
            fill_pattern(out, N, message_seed(test_rank, lrank, upper));
            MPI_Status st;
            CHECK_MPI(MPI_Sendrecv(out, N, MPI_BYTE, lrank, 7, in, N, MPI_BYTE, lrank, 7, inter,
                                   &st));
            CHECK(st.MPI_SOURCE == lrank, "source %d across", st.MPI_SOURCE);
            int partner_world = upper ? lrank : lrank + lower_n;
            CHECK_PATTERN(in, N, message_seed(partner_world, lrank, !upper),
                          "message across the intercommunicator");
        }
        /* Rank 0 of the upper half sends one more message to every lower rank. */
        if (upper && lrank == 0) {
            for (int r = 0; r < rsize; r++)
                CHECK_MPI(MPI_Send(&r, 1, MPI_INT, r, 9, inter));
        } else if (!upper) {
            int got = -1;
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE));
            CHECK(got == lrank, "got %d from the upper leader", got);
        }
        /* Overlapping groups, a bad leader. */
        MPI_Comm none = MPI_COMM_NULL;
        int rc = MPI_Intercomm_create_from_groups(world, 0, world, 0, "x", MPI_INFO_NULL,
                                                  MPI_ERRORS_RETURN, &none);
        CHECK(error_class_of(rc) == MPI_ERR_GROUP, "overlapping groups: %s", error_text(rc));
        rc = MPI_Intercomm_create_from_groups(upper ? hi : lo, lsize, upper ? lo : hi, 0, "x",
                                              MPI_INFO_NULL, MPI_ERRORS_RETURN, &none);
        CHECK(error_class_of(rc) == MPI_ERR_RANK, "bad leader: %s", error_text(rc));
        CHECK_MPI(MPI_Comm_free(&inter));
        CHECK_MPI(MPI_Group_free(&lo));
        CHECK_MPI(MPI_Group_free(&hi));
    }

    /* Bad arguments. */
    MPI_Comm none = MPI_COMM_NULL;
    if (test_size >= 2) {
        /* The other half's group: this process is not in it. */
        MPI_Group other = odd ? range_group(world, 0, 0, 1) : range_group(world, 1, 1, 1);
        int rc = MPI_Comm_create_from_group(other, "x", MPI_INFO_NULL, MPI_ERRORS_RETURN, &none);
        CHECK(error_class_of(rc) == MPI_ERR_GROUP, "not a member: %s", error_text(rc));
        CHECK_MPI(MPI_Group_free(&other));
    }
    int rc = MPI_Comm_create_from_group(world, NULL, MPI_INFO_NULL, MPI_ERRORS_RETURN, &none);
    CHECK(error_class_of(rc) == MPI_ERR_ARG, "NULL string tag: %s", error_text(rc));
    CHECK_MPI(MPI_Comm_create_from_group(MPI_GROUP_EMPTY, "empty", MPI_INFO_NULL,
                                         MPI_ERRORS_RETURN, &none));
    CHECK(none == MPI_COMM_NULL, "an empty group gave a communicator");

    CHECK_MPI(MPI_Comm_free(&all));
    CHECK_MPI(MPI_Comm_free(&again));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Group_free(&parity));
    CHECK_MPI(MPI_Group_free(&world));
    test_ok();
    MPI_Finalize();
    return 0;
}
