/*
 * large: derived datatypes in messages large enough for the engine's rendezvous
 * path (1 MiB and more), and the completion calls on requests that stage data.
 *
 * Rank 0 sends 131072 doubles with stride 2 (a vector); rank 1 receives them
 * with stride 3 (another vector) through Recv, Irecv + Waitany, Irecv +
 * MPI_Request_get_status polling (the data must be in place when it says
 * complete), and Irecv + Testsome; every value and every gap is checked. Then
 * a struct of a large block and a small one, both ways at once with Isend/Irecv
 * and Waitall. A cancelled staged receive completes as cancelled.
 */
#define TEST_NAME "large"
#include "mpitest.h"

#define N 131072

static void check_strided(const double *buf, int stride, int seed, const char *how)
{
    for (long i = 0; i < (long)N * stride; i++) {
        double want = (i % stride == 0) ? (double)(i / stride) * 3.0 + seed : -1.0;
        if (buf[i] != want)
            FAIL("%s: element %ld is %g, want %g", how, i, buf[i], want);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    MPI_Datatype by2, by3;
    CHECK_MPI(MPI_Type_vector(N, 1, 2, MPI_DOUBLE, &by2));
    CHECK_MPI(MPI_Type_vector(N, 1, 3, MPI_DOUBLE, &by3));
    CHECK_MPI(MPI_Type_commit(&by2));
    CHECK_MPI(MPI_Type_commit(&by3));
    double *src = test_malloc(sizeof(double) * 2 * N), *dst = test_malloc(sizeof(double) * 3 * N);
    MPI_Status st;

    for (int how = 0; how < 4; how++) {
        if (test_rank == 0) {
            for (long i = 0; i < 2L * N; i++) src[i] = (i % 2 == 0) ? (double)(i / 2) * 3.0 + how : 1e9;
            CHECK_MPI(MPI_Send(src, 1, by2, 1, how, MPI_COMM_WORLD));
        } else if (test_rank == 1) {
            for (long i = 0; i < 3L * N; i++) dst[i] = -1.0;
            MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            const char *name = "?";
            switch (how) {
            case 0:
                name = "Recv";
                CHECK_MPI(MPI_Recv(dst, 1, by3, 0, how, MPI_COMM_WORLD, &st));
                break;
            case 1: {
                name = "Irecv + Waitany";
                int idx;
                CHECK_MPI(MPI_Irecv(dst, 1, by3, 0, how, MPI_COMM_WORLD, &r[1]));
                CHECK_MPI(MPI_Waitany(2, r, &idx, &st));
                CHECK(idx == 1 && r[1] == MPI_REQUEST_NULL, "Waitany index %d", idx);
                break;
            }
            case 2: {
                name = "Irecv + Request_get_status";
                int flag = 0;
                CHECK_MPI(MPI_Irecv(dst, 1, by3, 0, how, MPI_COMM_WORLD, &r[0]));
                while (!flag)
                    CHECK_MPI(MPI_Request_get_status(r[0], &flag, &st));
                check_strided(dst, 3, how, "after MPI_Request_get_status said complete");
                CHECK_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
                break;
            }
            case 3: {
                name = "Irecv + Testsome";
                int out = 0, idx[2];
                MPI_Status sts[2];
                CHECK_MPI(MPI_Irecv(dst, 1, by3, 0, how, MPI_COMM_WORLD, &r[0]));
                while (out == 0)
                    CHECK_MPI(MPI_Testsome(1, r, &out, idx, sts));
                st = sts[0];
                break;
            }
            }
            check_strided(dst, 3, how, name);
            int n;
            CHECK_MPI(MPI_Get_count(&st, by3, &n));
            CHECK(n == 1, "%s: count %d", name, n);
            CHECK_MPI(MPI_Get_elements(&st, by3, &n));
            CHECK(n == N, "%s: elements %d", name, n);
        }
    }

    /* A struct of a large block and a small one, exchanged both ways at once. */
    if (test_rank < 2) {
        int other = 1 - test_rank;
        static char big_s[1 << 20], big_r[1 << 20];
        int small_s[3], small_r[3] = {0, 0, 0};
        MPI_Aint a_big, a_small;
        MPI_Datatype sty, rty;
        fill_pattern(big_s, sizeof big_s, message_seed(test_rank, other, 0));
        for (int i = 0; i < 3; i++) small_s[i] = test_rank * 10 + i;
        CHECK_MPI(MPI_Get_address(big_s, &a_big));
        CHECK_MPI(MPI_Get_address(small_s, &a_small));
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1 << 20, 3}, (MPI_Aint[]){a_big, a_small},
                                         (MPI_Datatype[]){MPI_CHAR, MPI_INT}, &sty));
        CHECK_MPI(MPI_Get_address(big_r, &a_big));
        CHECK_MPI(MPI_Get_address(small_r, &a_small));
        CHECK_MPI(MPI_Type_create_struct(2, (int[]){1 << 20, 3}, (MPI_Aint[]){a_big, a_small},
                                         (MPI_Datatype[]){MPI_CHAR, MPI_INT}, &rty));
        CHECK_MPI(MPI_Type_commit(&sty));
        CHECK_MPI(MPI_Type_commit(&rty));
        MPI_Request r[2];
        CHECK_MPI(MPI_Irecv(MPI_BOTTOM, 1, rty, other, 9, MPI_COMM_WORLD, &r[0]));
        CHECK_MPI(MPI_Isend(MPI_BOTTOM, 1, sty, other, 9, MPI_COMM_WORLD, &r[1]));
        /* The types may be freed while the operations are pending. */
        CHECK_MPI(MPI_Type_free(&sty));
        CHECK_MPI(MPI_Type_free(&rty));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK_PATTERN(big_r, sizeof big_r, message_seed(other, test_rank, 0), "struct's large block");
        for (int i = 0; i < 3; i++)
            CHECK(small_r[i] == other * 10 + i, "struct's small block [%d] = %d", i, small_r[i]);

        /* A staged receive that nothing matches, cancelled. */
        MPI_Request c;
        int flag;
        CHECK_MPI(MPI_Irecv(dst, 1, by3, other, 999, MPI_COMM_WORLD, &c));
        CHECK_MPI(MPI_Cancel(&c));
        CHECK_MPI(MPI_Wait(&c, &st));
        CHECK_MPI(MPI_Test_cancelled(&st, &flag));
        CHECK(flag, "the cancelled staged receive is not marked cancelled");
    }
    CHECK_MPI(MPI_Type_free(&by2));
    CHECK_MPI(MPI_Type_free(&by3));
    free(src);
    free(dst);
    test_ok();
    MPI_Finalize();
    return 0;
}
