/*
 * file_sieve: concurrent noncontiguous writes of every rank into interleaved runs of one
 * file, small enough and close enough together that the library sieves them (reads a
 * covering block, modifies it, writes it back): no rank may lose another's bytes.
 *
 * Rank r owns the runs of RUN bytes at [(k*n + r)*RUN, ...) for every k (n = ranks): a
 * filetype of RUN bytes resized to n*RUN, displacement r*RUN. Hints keep the sieving blocks
 * small (ind_wr_buffer_size = ind_rd_buffer_size = 4096), so one access is many blocks, each
 * shared with every other rank's runs. Every rank writes its part in CHUNKS calls of
 * write_at, twice (first a wrong value, then the right one, so a lost second write shows),
 * all ranks at once; then every byte of the file is checked by rank 0 (and by the harness,
 * which reads sieve_<n>.dat: byte i is expected(i)). The file is opened MPI_MODE_WRONLY
 * for the writes (sieving still reads the blocks: the library opens the descriptor for
 * reading too, as ROMIO does) and read back through the view after reopening it read-only.
 * The same is done again with sieving turned off (romio_ds_write = disable, MPI_MODE_RDWR),
 * into plain_<n>.dat.
 *
 * No deviation of Debian's MPICH 4.0.2 is known here (checked with scripts/file-check-mpich).
 */
#define TEST_NAME "file_sieve"
#include "mpitest.h"
#include "file_util.h"

enum { RUN = 3, PER_RANK = 96 * 1024, CHUNKS = 8 };

static unsigned char expected(long i)
{
    return (unsigned char)((i * 7) ^ (i >> 8) ^ 0x5a);
}

static void round_of_writes(const char *name, const char *ds_write, int amode)
{
    char path_name[64];
    snprintf(path_name, sizeof path_name, "%s_%d.dat", name, test_size);
    const char *path = test_path(path_name);
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "ind_wr_buffer_size", "4096"));
    CHECK_MPI(MPI_Info_set(info, "ind_rd_buffer_size", "4096"));
    CHECK_MPI(MPI_Info_set(info, "romio_ds_write", ds_write));
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, amode | MPI_MODE_CREATE, info, &fh));
    MPI_Datatype run, tile;
    CHECK_MPI(MPI_Type_contiguous(RUN, MPI_BYTE, &run));
    CHECK_MPI(MPI_Type_create_resized(run, 0, (MPI_Aint)test_size * RUN, &tile));
    CHECK_MPI(MPI_Type_commit(&tile));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * RUN, MPI_BYTE, tile, "native",
                                MPI_INFO_NULL));
    unsigned char *mine = test_malloc(PER_RANK), *back = test_malloc(PER_RANK);
    for (long j = 0; j < PER_RANK; j++) {
        long file_byte = ((j / RUN) * test_size + test_rank) * RUN + j % RUN;
        mine[j] = expected(file_byte);
    }
    const long chunk = PER_RANK / CHUNKS;
    MPI_Status st;
    for (int pass = 0; pass < 2; pass++) {
        unsigned char *data = mine;
        unsigned char *wrong = NULL;
        if (pass == 0) {
            wrong = test_malloc(PER_RANK);
            for (long j = 0; j < PER_RANK; j++)
                wrong[j] = (unsigned char)~mine[j];
            data = wrong;
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        for (int c = 0; c < CHUNKS; c++) {
            CHECK_MPI(MPI_File_write_at(fh, c * chunk, data + c * chunk, (int)chunk, MPI_BYTE,
                                        &st));
            CHECK(moved_bytes(&st) == chunk, "write_at moved %d bytes", moved_bytes(&st));
        }
        free(wrong);
    }
    CHECK_MPI(MPI_File_close(&fh));
    /* Every rank reads its part back through the same view (sieved reads). */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_File_set_view(fh, (MPI_Offset)test_rank * RUN, MPI_BYTE, tile, "native",
                                MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, 0, back, PER_RANK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == PER_RANK, "read_at moved %d bytes", moved_bytes(&st));
    for (long j = 0; j < PER_RANK; j++)
        CHECK(back[j] == mine[j], "%s: my byte %ld reads %u, want %u", path, j, back[j],
              mine[j]);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Type_free(&run));
    CHECK_MPI(MPI_Type_free(&tile));
    free(mine);
    free(back);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0) {
        long total = (long)PER_RANK * test_size;
        unsigned char *all = test_malloc((size_t)total);
        CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
        CHECK_MPI(MPI_File_read_at(fh, 0, all, (int)total, MPI_BYTE, &st));
        CHECK(moved_bytes(&st) == total, "%s holds %d bytes, want %ld", path, moved_bytes(&st),
              total);
        for (long i = 0; i < total; i++)
            CHECK(all[i] == expected(i), "%s: byte %ld (rank %ld's) is %u, want %u", path, i,
                  (i / RUN) % test_size, all[i], expected(i));
        CHECK_MPI(MPI_File_close(&fh));
        free(all);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    round_of_writes("sieve", "enable", MPI_MODE_WRONLY);
    round_of_writes("plain", "disable", MPI_MODE_RDWR);
    MPI_Barrier(MPI_COMM_WORLD);
    test_ok();
    MPI_Finalize();
    return 0;
}
