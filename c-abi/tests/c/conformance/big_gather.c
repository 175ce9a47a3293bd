/*
 * big_gather: a collective on large buffers costs the root no extra copy of them (issue 17:
 * a gather of 1 GiB from each of 8 ranks ran the root out of memory, the binomial tree
 * keeping a temporary as large as the whole receive buffer).
 *
 * Each rank gathers and scatters BLOCK bytes per rank (root 0 and the last rank, in place
 * and not) and checks every byte; around each call the root's peak resident memory
 * (getrusage) may grow by at most SLACK, less than one rank's block, where a copy of the
 * receive buffer would be (ranks - 1) blocks. Buffers are touched before the calls so that
 * they count in the peak already.
 */
#define TEST_NAME "big_gather"
#include "mpitest.h"
#include <sys/resource.h>

enum { BLOCK = 16 << 20, SLACK = 8 << 20 };

static long peak_bytes(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss * 1024L;
}

static void fill_block(unsigned char *p, int owner, int salt)
{
    for (size_t i = 0; i < BLOCK; i += 4096)
        p[i] = (unsigned char)(owner * 31 + salt + i / 4096);
    p[BLOCK - 1] = (unsigned char)(owner + salt);
}

static void check_block(const unsigned char *p, int owner, int salt, const char *what)
{
    for (size_t i = 0; i < BLOCK; i += 4096)
        CHECK(p[i] == (unsigned char)(owner * 31 + salt + i / 4096), "%s: block of rank %d wrong at %zu", what, owner, i);
    CHECK(p[BLOCK - 1] == (unsigned char)(owner + salt), "%s: block of rank %d wrong at its end", what, owner);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    unsigned char *mine = test_malloc(BLOCK), *all = NULL;
    int roots[2] = {0, test_size - 1};
    for (int k = 0; k < 2; k++) {
        int root = roots[k];
        if (k == 1 && root == 0)
            break;
        if (test_rank == root) {
            all = test_malloc((size_t)BLOCK * test_size);
            memset(all, 0, (size_t)BLOCK * test_size);
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            int salt = 2 * k + inplace;
            fill_block(mine, test_rank, salt);
            const void *send = mine;
            if (inplace && test_rank == root) {
                fill_block(all + (size_t)BLOCK * root, root, salt);
                send = MPI_IN_PLACE;
            }
            long before = peak_bytes();
            CHECK_MPI(MPI_Gather(send, BLOCK, MPI_BYTE, all, BLOCK, MPI_BYTE, root, MPI_COMM_WORLD));
            long grew = peak_bytes() - before;
            if (test_rank == root) {
                for (int i = 0; i < test_size; i++)
                    check_block(all + (size_t)BLOCK * i, i, salt, "gather");
                CHECK(grew <= SLACK, "MPI_Gather of %d x %d bytes grew the root's peak memory by %ld bytes", test_size, BLOCK, grew);
                for (int i = 0; i < test_size; i++)
                    fill_block(all + (size_t)BLOCK * i, i, salt + 100);
            }
            memset(mine, 0, BLOCK);
            before = peak_bytes();
            void *recv = inplace && test_rank == root ? MPI_IN_PLACE : mine;
            CHECK_MPI(MPI_Scatter(all, BLOCK, MPI_BYTE, recv, BLOCK, MPI_BYTE, root, MPI_COMM_WORLD));
            grew = peak_bytes() - before;
            if (test_rank == root)
                CHECK(grew <= SLACK, "MPI_Scatter of %d x %d bytes grew the root's peak memory by %ld bytes", test_size, BLOCK, grew);
            if (recv == mine)
                check_block(mine, test_rank, salt + 100, "scatter");
        }
        free(all);
        all = NULL;
    }
    free(mine);
    test_ok();
    MPI_Finalize();
    return 0;
}
