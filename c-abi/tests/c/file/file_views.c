/*
 * file_views: views with derived filetypes, each rank writing its interleaved part of one
 * file, checked byte by byte by reading the file back (and by the harness reading the files
 * this program leaves in $FILE_TEST_DIR: in both, the int at index k of the file is k).
 *
 *  - views_<n>.dat (n = ranks): etype MPI_INT, filetype B ints resized to an extent of n*B
 *    ints, displacement rank*B ints: rank r owns ints [r*B, (r+1)*B) of every n*B. Written
 *    with write_at_all from a contiguous buffer, read back with read_at_all; get_byte_offset,
 *    get_type_extent, get_view checked. The program frees its filetype right after set_view
 *    (the view keeps it), and get_view's filetype is a new type (a duplicate) it frees.
 *  - subarray_<n>.dat: a ROWS x (n*COLS) array of ints in C order; rank r owns the column
 *    block [r*COLS, (r+1)*COLS) (MPI_Type_create_subarray filetype). The memory side is
 *    noncontiguous too: a ROWS x (COLS+2) local array with halo columns, described by a
 *    subarray memory type. Written with the individual pointer (write_all), read back after
 *    a seek to 0 (read_all).
 *  - darray_<n>.dat: MPI_Type_create_darray, 2*n*DEALS ints dealt out cyclically in pairs
 *    (MPI_DISTRIBUTE_CYCLIC, darg 2): rank r owns ints k with (k / 2) % n == r.
 *  - rank 0 then reads each file whole with the default view and checks every int.
 *
 * No deviation of Debian's MPICH 4.0.2 is known here (checked with scripts/file-check-mpich).
 */
#define TEST_NAME "file_views"
#include "mpitest.h"
#include "file_util.h"

enum { B = 5, TILES = 37, ROWS = 23, COLS = 7, DEALS = 11 };

static void check_whole_file(const char *path, int ints)
{
    if (test_rank != 0)
        return;
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    MPI_Offset size = 0;
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)ints * 4, "%s has %lld bytes, want %d", path, (long long)size,
          ints * 4);
    int *all = test_malloc((size_t)ints * sizeof(int));
    MPI_Status st;
    CHECK_MPI(MPI_File_read_at(fh, 0, all, ints, MPI_INT, &st));
    int got = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &got));
    CHECK(got == ints, "read %d ints of %s, want %d", got, path, ints);
    for (int k = 0; k < ints; k++)
        CHECK(all[k] == k, "%s: int %d is %d", path, k, all[k]);
    free(all);
    CHECK_MPI(MPI_File_close(&fh));
}

static void vector_view(void)
{
    const char *path = test_path(test_size == 1 ? "views_1.dat"
                                 : test_size == 2 ? "views_2.dat"
                                 : test_size == 4 ? "views_4.dat"
                                                  : "views_n.dat");
    MPI_Datatype block, tile;
    CHECK_MPI(MPI_Type_contiguous(B, MPI_INT, &block));
    CHECK_MPI(MPI_Type_create_resized(block, 0, (MPI_Aint)test_size * B * 4, &tile));
    CHECK_MPI(MPI_Type_commit(&tile));
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE,
                            MPI_INFO_NULL, &fh));
    MPI_Offset disp = (MPI_Offset)test_rank * B * 4;
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, tile, "native", MPI_INFO_NULL));
    /* The view keeps its types: the program may free its handles now (MPI 3.1 13.3). */
    CHECK_MPI(MPI_Type_free(&tile));
    CHECK_MPI(MPI_Type_free(&block));

    int mine[TILES * B], back[TILES * B];
    for (int j = 0; j < TILES * B; j++)
        mine[j] = (j / B) * test_size * B + test_rank * B + j % B;
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, mine, TILES * B, MPI_INT, &st));
    int count = -1;
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == TILES * B, "write_at_all wrote %d ints", count);
    CHECK_MPI(MPI_File_sync(fh));
    memset(back, 0xff, sizeof back);
    CHECK_MPI(MPI_File_read_at_all(fh, 0, back, TILES * B, MPI_INT, &st));
    for (int j = 0; j < TILES * B; j++)
        CHECK(back[j] == mine[j], "read back int %d of my view: %d, want %d", j, back[j],
              mine[j]);

    MPI_Offset byte = -1;
    CHECK_MPI(MPI_File_get_byte_offset(fh, B + 2, &byte));
    CHECK(byte == disp + (MPI_Offset)test_size * B * 4 + 8,
          "get_byte_offset(%d) is %lld", B + 2, (long long)byte);
    MPI_Offset got_disp = -1;
    MPI_Datatype etype, filetype;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK_MPI(MPI_File_get_view(fh, &got_disp, &etype, &filetype, rep));
    CHECK(got_disp == disp && etype == MPI_INT && strcmp(rep, "native") == 0,
          "get_view gave disp %lld, rep %s", (long long)got_disp, rep);
    int size = 0;
    CHECK_MPI(MPI_Type_size(filetype, &size));
    CHECK(size == B * 4, "get_view's filetype has %d bytes", size);
    /* A derived filetype comes back as a new type the program owns: a duplicate. */
    int ni, na, nt, combiner = -1;
    CHECK_MPI(MPI_Type_get_envelope(filetype, &ni, &na, &nt, &combiner));
    CHECK(combiner == MPI_COMBINER_DUP, "get_view's filetype has combiner %d, want MPI_COMBINER_DUP",
          combiner);
    MPI_Aint extent = 0;
    CHECK_MPI(MPI_File_get_type_extent(fh, filetype, &extent));
    CHECK(extent == (MPI_Aint)test_size * B * 4, "get_type_extent gave %ld", (long)extent);
    CHECK_MPI(MPI_Type_free(&filetype));
    /* The pointer moves in etypes of the view. */
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_seek(fh, 3, MPI_SEEK_SET));
    int one = -1;
    CHECK_MPI(MPI_File_read(fh, &one, 1, MPI_INT, &st));
    CHECK(one == mine[3], "read at position 3 gave %d", one);
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 4, "after one int the position is %lld", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == TILES * B, "SEEK_END of the view is %lld, want %d", (long long)pos, TILES * B);
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    check_whole_file(path, TILES * B * test_size);
}

static void subarray_view(void)
{
    const char *path = test_path(test_size == 1 ? "subarray_1.dat"
                                 : test_size == 2 ? "subarray_2.dat"
                                 : test_size == 4 ? "subarray_4.dat"
                                                  : "subarray_n.dat");
    int gsizes[2] = {ROWS, test_size * COLS}, gsub[2] = {ROWS, COLS},
        gstart[2] = {0, test_rank * COLS};
    MPI_Datatype filetype, memtype;
    CHECK_MPI(MPI_Type_create_subarray(2, gsizes, gsub, gstart, MPI_ORDER_C, MPI_INT,
                                       &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    int lsizes[2] = {ROWS, COLS + 2}, lstart[2] = {0, 1};
    CHECK_MPI(MPI_Type_create_subarray(2, lsizes, gsub, lstart, MPI_ORDER_C, MPI_INT,
                                       &memtype));
    CHECK_MPI(MPI_Type_commit(&memtype));
    int local[ROWS][COLS + 2], back[ROWS][COLS + 2];
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS + 2; j++) {
            local[i][j] = -1; /* the halo must not reach the file */
            if (j >= 1 && j <= COLS)
                local[i][j] = i * test_size * COLS + test_rank * COLS + j - 1;
        }
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL));
    MPI_Status st;
    CHECK_MPI(MPI_File_write_all(fh, local, 1, memtype, &st));
    int elements = -1;
    CHECK_MPI(MPI_Get_elements(&st, MPI_INT, &elements));
    CHECK(elements == ROWS * COLS, "write_all wrote %d ints", elements);
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == ROWS * COLS, "after write_all the position is %lld", (long long)pos);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_SET));
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS + 2; j++)
            back[i][j] = -7;
    CHECK_MPI(MPI_File_read_all(fh, back, 1, memtype, &st));
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS + 2; j++) {
            int want = (j >= 1 && j <= COLS) ? local[i][j] : -7;
            CHECK(back[i][j] == want, "read back [%d][%d] = %d, want %d", i, j, back[i][j],
                  want);
        }
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Type_free(&filetype));
    CHECK_MPI(MPI_Type_free(&memtype));
    MPI_Barrier(MPI_COMM_WORLD);
    check_whole_file(path, ROWS * COLS * test_size);
}

static void darray_view(void)
{
    const char *path = test_path(test_size == 1 ? "darray_1.dat"
                                 : test_size == 2 ? "darray_2.dat"
                                 : test_size == 4 ? "darray_4.dat"
                                                  : "darray_n.dat");
    /* N ints dealt out cyclically in pairs: rank r owns ints k with (k / 2) % n == r. */
    int n = test_size, total = 2 * n * DEALS;
    int gsizes[1] = {total}, distribs[1] = {MPI_DISTRIBUTE_CYCLIC}, dargs[1] = {2},
        psizes[1] = {n};
    MPI_Datatype filetype;
    CHECK_MPI(MPI_Type_create_darray(n, test_rank, 1, gsizes, distribs, dargs, psizes,
                                     MPI_ORDER_C, MPI_INT, &filetype));
    CHECK_MPI(MPI_Type_commit(&filetype));
    int mine[2 * DEALS];
    for (int j = 0; j < 2 * DEALS; j++)
        mine[j] = (j / 2) * 2 * n + test_rank * 2 + j % 2;
    MPI_File fh;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL));
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, mine, 2 * DEALS, MPI_INT, &st));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Type_free(&filetype));
    MPI_Barrier(MPI_COMM_WORLD);
    check_whole_file(path, total);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    vector_view();
    subarray_view();
    darray_view();
    MPI_Barrier(MPI_COMM_WORLD);
    test_ok();
    MPI_Finalize();
    return 0;
}
