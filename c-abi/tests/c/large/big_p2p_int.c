/*
 * big_p2p_int: 600M MPI_INTs (2.4 GB) through the int API: one MPI_Send / MPI_Recv of
 * count 150M of a contiguous type of 4 ints, checked word for word; MPI_Get_count of the
 * status in MPI_BYTE cannot be represented (MPI_UNDEFINED) while the type's and MPI_INT's can,
 * and MPI_Get_elements_x gives the exact counts. Runs on 2 ranks.
 */
#define TEST_NAME "big_p2p_int"
#include "mpitest.h"

#define N_INTS 600000000LL

static int int_at(long long i) { return (int)(i * 2654435761LL + 17); }

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    MPI_Datatype four;
    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &four));
    CHECK_MPI(MPI_Type_commit(&four));
    if (test_rank < 2) {
        int *buf = test_malloc((size_t)N_INTS * sizeof(int));
        if (test_rank == 0) {
            for (long long i = 0; i < N_INTS; i++)
                buf[i] = int_at(i);
            double t = MPI_Wtime();
            CHECK_MPI(MPI_Send(buf, (int)(N_INTS / 4), four, 1, 7, MPI_COMM_WORLD));
            t = MPI_Wtime() - t;
            printf("NOTE big_p2p_int: %.2f GB sent in %.3f s (%.2f GB/s)\n", N_INTS * 4 / 1e9, t,
                   N_INTS * 4 / 1e9 / t);
        } else {
            MPI_Status st;
            memset(buf, 0, (size_t)N_INTS * sizeof(int));
            CHECK_MPI(MPI_Recv(buf, (int)(N_INTS / 4), four, 0, 7, MPI_COMM_WORLD, &st));
            for (long long i = 0; i < N_INTS; i++)
                CHECK(buf[i] == int_at(i), "int %lld: got %d, want %d", i, buf[i], int_at(i));
            int n = -1;
            CHECK_MPI(MPI_Get_count(&st, four, &n));
            CHECK(n == N_INTS / 4, "MPI_Get_count in the 4-int type: %d", n);
            CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
            CHECK(n == N_INTS, "MPI_Get_count in MPI_INT: %d", n);
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
            CHECK(n == MPI_UNDEFINED, "MPI_Get_count in MPI_BYTE: %d, want MPI_UNDEFINED", n);
            CHECK_MPI(MPI_Get_elements(&st, four, &n));
            CHECK(n == N_INTS, "MPI_Get_elements: %d", n);
            MPI_Count c = -1;
            CHECK_MPI(MPI_Get_elements_x(&st, four, &c));
            CHECK(c == N_INTS, "MPI_Get_elements_x: %lld", (long long)c);
            CHECK_MPI(MPI_Get_elements_x(&st, MPI_BYTE, &c));
            CHECK(c == N_INTS * 4, "MPI_Get_elements_x in MPI_BYTE: %lld", (long long)c);
            CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7, "status source %d tag %d", st.MPI_SOURCE,
                  st.MPI_TAG);
        }
        free(buf);
    }
    CHECK_MPI(MPI_Type_free(&four));
    test_ok();
    MPI_Finalize();
    return 0;
}
