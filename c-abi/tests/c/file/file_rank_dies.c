/*
 * file_rank_dies: a rank killed while the others are in a collective write ends the job, and
 * what was synced before is intact.
 *
 * Every rank writes its BLOCK bytes of the first region with MPI_File_write_at_all (byte i of
 * the file is expected(i)) and the file is synced (MPI_File_sync, collective); then every
 * rank starts a second collective write into the region after it, except the last rank,
 * which prints "rank <n> dying" and kills itself (SIGKILL: no handler, no MPI_Finalize) just
 * before it would have joined. The others wait in the collective write for a peer that is
 * gone: the job must end (the launcher names the dead rank), and the harness
 * (tests/file_faults.rs) checks the file's first region byte by byte. This program never
 * prints OK.
 */
#define TEST_NAME "file_rank_dies"
#include "mpitest.h"
#include "file_util.h"
#include <signal.h>

enum { BLOCK = 256 * 1024 };

static unsigned char expected(long i)
{
    return (unsigned char)((i * 7) ^ (i >> 8) ^ 0x5a);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    require_ranks(2);
    const char *path = test_path("dies.dat");
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                            &fh));
    unsigned char *block = test_malloc(BLOCK);
    long first = (long)test_rank * BLOCK;
    for (long j = 0; j < BLOCK; j++)
        block[j] = expected(first + j);
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, first, block, BLOCK, MPI_BYTE, &st));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == test_size - 1) {
        printf("rank %d dying\n", test_rank);
        fflush(stdout);
        raise(SIGKILL);
    }
    long second = (long)test_size * BLOCK + first;
    memset(block, 0xee, BLOCK);
    /* A collective write need not synchronize, so it may return here; closing the file (which
     * does) cannot complete either way. */
    MPI_File_write_at_all(fh, second, block, BLOCK, MPI_BYTE, &st);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
