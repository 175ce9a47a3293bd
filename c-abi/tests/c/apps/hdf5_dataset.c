/*
 * hdf5_dataset: parallel HDF5 (the MPI-IO driver, H5FD_MPIO) as a real client of MPI-IO.
 *
 * Every rank opens one file through H5Pset_fapl_mpio on MPI_COMM_WORLD (metadata written
 * collectively too: H5Pset_coll_metadata_write) and writes its part of three 2-D datasets
 * (hyperslabs), with collective transfers (H5Pset_dxpl_mpio(H5FD_MPIO_COLLECTIVE)):
 *   - "temperature": ROWS x COLS doubles, contiguous, split by rows, value (i, j) =
 *     i * 1000 + j + 0.25;
 *   - "counts": IROWS x ICOLS ints, chunked (CHUNK_ROWS x ICOLS chunks), split by rows,
 *     value (i, j) = 7 * (i * ICOLS + j) - 100. IROWS is small, so on 4 ranks one rank has no
 *     rows and takes part in the collective write with an empty selection;
 *   - "interleaved": PROWS x PCOLS ints, contiguous, value (i, j) = i * PCOLS + j, each rank
 *     writing the columns j = rank, rank + size, ... of every row: the ranks' data interleave
 *     in the file, which is what collective buffering (two-phase I/O) is for.
 * "temperature" carries two attributes: "ranks" (the number of ranks that wrote it) and
 * "units" (a string). The file is closed, reopened read-only (metadata read by one rank and
 * broadcast: H5Pset_all_coll_metadata_ops), and read back:
 *   - collectively, each rank the rows another rank wrote (the next rank's block);
 *   - collectively, a strided hyperslab: every size-th column starting at the rank's own
 *     number (a noncontiguous selection in the file);
 *   - independently (H5FD_MPIO_INDEPENDENT), the whole of "counts" on every rank;
 *   - collectively, the next rank's block of rows of "interleaved" (written by every rank);
 * every value checked. The file is left for the harness, which reads it with h5dump.
 *
 * The file is opened with hints that force collective buffering through a 1 KiB buffer on 2
 * aggregators (several rounds of two-phase I/O per transfer).
 *
 * Rank 0 prints the paths of the MPI libraries mapped into the process ("mpi library: ..."),
 * so that the harness can tell which libmpi the program (and HDF5 in it) ran on, HDF5's
 * version ("hdf5: ..."), and finally "OK hdf5_dataset".
 *
 * The file is $FILE_TEST_DIR/hdf5_dataset_<ranks>.h5.
 */
#define TEST_NAME "hdf5_dataset"
#include "mpitest.h"
#include "file/file_util.h"

#include <hdf5.h>

#define ROWS 37 /* not divisible by 2 or 4: the blocks differ in size */
#define COLS 11
#define IROWS 3 /* fewer rows than ranks on 4 ranks */
#define ICOLS 5
#define CHUNK_ROWS 2
#define PROWS 64
#define PCOLS 48

/* An HDF5 call that must succeed (HDF5 returns a negative value on failure, after printing its
 * error stack to stderr). */
#define CHECK_H5(call)                                                         \
    do {                                                                       \
        if ((call) < 0)                                                        \
            FAIL("%s failed (HDF5's error stack is above)", #call);           \
    } while (0)

/* An HDF5 call returning an identifier that must be valid. */
static hid_t valid_id(hid_t id, const char *what, int line)
{
    if (id < 0)
        test_fail_at(__FILE__, line, "%s failed (HDF5's error stack is above)", what);
    return id;
}
#define H5ID(call) valid_id((call), #call, __LINE__)

static double temperature(int i, int j) { return (double)i * 1000.0 + (double)j + 0.25; }
static int count_value(int i, int j) { return 7 * (i * ICOLS + j) - 100; }
static int interleaved_value(int i, int j) { return i * PCOLS + j; }

/* How many of `cols` columns rank r of `size` has when they are dealt out one by one. */
static int dealt_columns(int cols, int size, int r)
{
    return r < cols ? (cols - 1 - r) / size + 1 : 0;
}

/* Selects columns rank, rank + size, ... of every one of `rows` rows (none if it has none). */
static void select_dealt_columns(hid_t space, int rows, int ncols)
{
    if (ncols == 0) {
        CHECK_H5(H5Sselect_none(space));
        return;
    }
    hsize_t start[2] = {0, (hsize_t)test_rank}, stride[2] = {1, (hsize_t)test_size};
    hsize_t count[2] = {(hsize_t)rows, (hsize_t)ncols};
    CHECK_H5(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, NULL));
}

/* The rows block b of nblocks gets out of n, and where they start. */
static int share(int n, int nblocks, int b) { return n / nblocks + (b < n % nblocks); }
static int first_row(int n, int nblocks, int b)
{
    int s = 0;
    for (int i = 0; i < b; i++)
        s += share(n, nblocks, i);
    return s;
}

/* Prints every distinct mapped file whose name starts with "libmpi" (libmpi.so, libmpich.so.12,
 * ...): the harness checks that exactly one MPI library is in the process, and which. */
static void print_mpi_libraries(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "cannot open /proc/self/maps");
    char seen[8][1024];
    int n_seen = 0;
    char line[2048];
    while (fgets(line, sizeof line, maps) != NULL) {
        char *path = strchr(line, '/');
        if (path == NULL)
            continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, "libmpi", 6) != 0)
            continue;
        int known = 0;
        for (int k = 0; k < n_seen; k++)
            known |= strcmp(seen[k], path) == 0;
        if (!known && n_seen < 8) {
            snprintf(seen[n_seen++], sizeof seen[0], "%s", path);
            printf("mpi library: %s\n", path);
        }
    }
    fclose(maps);
    fflush(stdout);
}

/* Selects rows [row0, row0 + nrows) of a 2-D dataspace of `cols` columns (none if nrows is 0). */
static void select_rows(hid_t space, int row0, int nrows, int cols)
{
    if (nrows == 0) {
        CHECK_H5(H5Sselect_none(space));
        return;
    }
    hsize_t start[2] = {(hsize_t)row0, 0}, count[2] = {(hsize_t)nrows, (hsize_t)cols};
    CHECK_H5(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
}

/* A memory dataspace of nrows x cols (a null-sized selection if nrows is 0). */
static hid_t memory_space(int nrows, int cols)
{
    hsize_t dims[2] = {(hsize_t)(nrows > 0 ? nrows : 1), (hsize_t)cols};
    hid_t space = H5ID(H5Screate_simple(2, dims, NULL));
    if (nrows == 0)
        CHECK_H5(H5Sselect_none(space));
    return space;
}

/* Hints HDF5 passes on to MPI_File_open: collective buffering always on, through a small
 * buffer on 2 aggregators, so that HDF5's collective transfers take several rounds of
 * two-phase I/O (ROMIO's hint names, which MPICH takes too). */
static MPI_Info collective_buffering_hints(void)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "romio_cb_write", "enable"));
    CHECK_MPI(MPI_Info_set(info, "romio_cb_read", "enable"));
    CHECK_MPI(MPI_Info_set(info, "cb_buffer_size", "1024"));
    CHECK_MPI(MPI_Info_set(info, "cb_nodes", "2"));
    return info;
}

static hid_t transfer(H5FD_mpio_xfer_t mode)
{
    hid_t dxpl = H5ID(H5Pcreate(H5P_DATASET_XFER));
    CHECK_H5(H5Pset_dxpl_mpio(dxpl, mode));
    return dxpl;
}

static void write_file(const char *path)
{
    hid_t fapl = H5ID(H5Pcreate(H5P_FILE_ACCESS));
    MPI_Info hints = collective_buffering_hints();
    CHECK_H5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, hints));
    CHECK_MPI(MPI_Info_free(&hints));
    /* Metadata written collectively too (HDF5 gathers the dirty entries into one
     * write_at_all of a struct/hindexed type at flush). */
    CHECK_H5(H5Pset_coll_metadata_write(fapl, 1));
    hid_t file = H5ID(H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    CHECK_H5(H5Pclose(fapl));
    hid_t collective = transfer(H5FD_MPIO_COLLECTIVE);

    /* temperature: contiguous doubles, this rank's rows. */
    hsize_t dims[2] = {ROWS, COLS};
    hid_t fspace = H5ID(H5Screate_simple(2, dims, NULL));
    hid_t dset = H5ID(H5Dcreate2(file, "temperature", H5T_NATIVE_DOUBLE, fspace, H5P_DEFAULT,
                                 H5P_DEFAULT, H5P_DEFAULT));
    int nrows = share(ROWS, test_size, test_rank), row0 = first_row(ROWS, test_size, test_rank);
    double *rows = test_malloc(sizeof(double) * (size_t)(nrows > 0 ? nrows : 1) * COLS);
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < COLS; j++)
            rows[i * COLS + j] = temperature(row0 + i, j);
    select_rows(fspace, row0, nrows, COLS);
    hid_t mspace = memory_space(nrows, COLS);
    CHECK_H5(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, collective, rows));
    CHECK_H5(H5Sclose(mspace));
    free(rows);

    /* Its attributes: every rank makes the same calls with the same values. */
    hid_t scalar = H5ID(H5Screate(H5S_SCALAR));
    hid_t attr = H5ID(H5Acreate2(dset, "ranks", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT));
    CHECK_H5(H5Awrite(attr, H5T_NATIVE_INT, &test_size));
    CHECK_H5(H5Aclose(attr));
    hid_t text = H5ID(H5Tcopy(H5T_C_S1));
    CHECK_H5(H5Tset_size(text, 6));
    attr = H5ID(H5Acreate2(dset, "units", text, scalar, H5P_DEFAULT, H5P_DEFAULT));
    CHECK_H5(H5Awrite(attr, text, "kelvin"));
    CHECK_H5(H5Aclose(attr));
    CHECK_H5(H5Tclose(text));
    CHECK_H5(H5Sclose(scalar));
    CHECK_H5(H5Dclose(dset));
    CHECK_H5(H5Sclose(fspace));

    /* counts: chunked ints; on 4 ranks the last rank writes nothing. */
    hsize_t idims[2] = {IROWS, ICOLS}, chunk[2] = {CHUNK_ROWS, ICOLS};
    fspace = H5ID(H5Screate_simple(2, idims, NULL));
    hid_t dcpl = H5ID(H5Pcreate(H5P_DATASET_CREATE));
    CHECK_H5(H5Pset_chunk(dcpl, 2, chunk));
    dset = H5ID(H5Dcreate2(file, "counts", H5T_NATIVE_INT, fspace, H5P_DEFAULT, dcpl,
                           H5P_DEFAULT));
    CHECK_H5(H5Pclose(dcpl));
    nrows = share(IROWS, test_size, test_rank);
    row0 = first_row(IROWS, test_size, test_rank);
    int *irows = test_malloc(sizeof(int) * (size_t)(nrows > 0 ? nrows : 1) * ICOLS);
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < ICOLS; j++)
            irows[i * ICOLS + j] = count_value(row0 + i, j);
    select_rows(fspace, row0, nrows, ICOLS);
    mspace = memory_space(nrows, ICOLS);
    CHECK_H5(H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, collective, irows));
    CHECK_H5(H5Sclose(mspace));
    free(irows);
    CHECK_H5(H5Dclose(dset));
    CHECK_H5(H5Sclose(fspace));

    /* interleaved: every rank's columns dealt out one by one. */
    hsize_t pdims[2] = {PROWS, PCOLS};
    fspace = H5ID(H5Screate_simple(2, pdims, NULL));
    dset = H5ID(H5Dcreate2(file, "interleaved", H5T_NATIVE_INT, fspace, H5P_DEFAULT, H5P_DEFAULT,
                           H5P_DEFAULT));
    int ncols = dealt_columns(PCOLS, test_size, test_rank);
    int *columns = test_malloc(sizeof(int) * PROWS * (size_t)(ncols > 0 ? ncols : 1));
    for (int i = 0; i < PROWS; i++)
        for (int c = 0; c < ncols; c++)
            columns[i * ncols + c] = interleaved_value(i, test_rank + c * test_size);
    select_dealt_columns(fspace, PROWS, ncols);
    hsize_t cdims[2] = {PROWS, (hsize_t)(ncols > 0 ? ncols : 1)};
    mspace = H5ID(H5Screate_simple(2, cdims, NULL));
    if (ncols == 0)
        CHECK_H5(H5Sselect_none(mspace));
    CHECK_H5(H5Dwrite(dset, H5T_NATIVE_INT, mspace, fspace, collective, columns));
    CHECK_H5(H5Sclose(mspace));
    free(columns);
    CHECK_H5(H5Dclose(dset));
    CHECK_H5(H5Sclose(fspace));

    CHECK_H5(H5Pclose(collective));
    CHECK_H5(H5Fclose(file));
}

/* The dataset's dimensions must be rows x cols. */
static void check_dims(hid_t dset, int rows, int cols, const char *name)
{
    hid_t space = H5ID(H5Dget_space(dset));
    hsize_t dims[2] = {0, 0};
    CHECK(H5Sget_simple_extent_ndims(space) == 2, "%s: not 2-D", name);
    CHECK_H5(H5Sget_simple_extent_dims(space, dims, NULL));
    CHECK(dims[0] == (hsize_t)rows && dims[1] == (hsize_t)cols,
          "%s: dimensions %llu x %llu, want %d x %d", name, (unsigned long long)dims[0],
          (unsigned long long)dims[1], rows, cols);
    CHECK_H5(H5Sclose(space));
}

static void read_file(const char *path)
{
    hid_t fapl = H5ID(H5Pcreate(H5P_FILE_ACCESS));
    MPI_Info hints = collective_buffering_hints();
    CHECK_H5(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, hints));
    CHECK_MPI(MPI_Info_free(&hints));
    /* Metadata reads done by one rank and broadcast. */
    CHECK_H5(H5Pset_all_coll_metadata_ops(fapl, 1));
    hid_t file = H5ID(H5Fopen(path, H5F_ACC_RDONLY, fapl));
    CHECK_H5(H5Pclose(fapl));
    hid_t collective = transfer(H5FD_MPIO_COLLECTIVE);
    hid_t independent = transfer(H5FD_MPIO_INDEPENDENT);

    hid_t dset = H5ID(H5Dopen2(file, "temperature", H5P_DEFAULT));
    check_dims(dset, ROWS, COLS, "temperature");

    /* The attributes. */
    int ranks = -1;
    hid_t attr = H5ID(H5Aopen(dset, "ranks", H5P_DEFAULT));
    CHECK_H5(H5Aread(attr, H5T_NATIVE_INT, &ranks));
    CHECK_H5(H5Aclose(attr));
    CHECK(ranks == test_size, "attribute ranks = %d, want %d", ranks, test_size);
    char units[7] = {0};
    hid_t text = H5ID(H5Tcopy(H5T_C_S1));
    CHECK_H5(H5Tset_size(text, 6));
    attr = H5ID(H5Aopen(dset, "units", H5P_DEFAULT));
    CHECK_H5(H5Aread(attr, text, units));
    CHECK_H5(H5Aclose(attr));
    CHECK_H5(H5Tclose(text));
    CHECK(strcmp(units, "kelvin") == 0, "attribute units = '%s', want 'kelvin'", units);

    /* Collectively, the next rank's block of rows. */
    int other = (test_rank + 1) % test_size;
    int nrows = share(ROWS, test_size, other), row0 = first_row(ROWS, test_size, other);
    hid_t fspace = H5ID(H5Dget_space(dset));
    select_rows(fspace, row0, nrows, COLS);
    hid_t mspace = memory_space(nrows, COLS);
    double *rows = test_malloc(sizeof(double) * (size_t)(nrows > 0 ? nrows : 1) * COLS);
    for (int k = 0; k < nrows * COLS; k++)
        rows[k] = -1.0;
    CHECK_H5(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, collective, rows));
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < COLS; j++)
            CHECK(rows[i * COLS + j] == temperature(row0 + i, j),
                  "collective read of rank %d's rows: temperature[%d][%d] = %g, want %g", other,
                  row0 + i, j, rows[i * COLS + j], temperature(row0 + i, j));
    free(rows);
    CHECK_H5(H5Sclose(mspace));

    /* Collectively, a strided selection: columns rank, rank + size, ... of every row. */
    int ncols = dealt_columns(COLS, test_size, test_rank);
    select_dealt_columns(fspace, ROWS, ncols);
    hsize_t mdims[2] = {ROWS, (hsize_t)(ncols > 0 ? ncols : 1)};
    mspace = H5ID(H5Screate_simple(2, mdims, NULL));
    if (ncols == 0)
        CHECK_H5(H5Sselect_none(mspace));
    double *columns = test_malloc(sizeof(double) * ROWS * (size_t)(ncols > 0 ? ncols : 1));
    for (int k = 0; k < ROWS * ncols; k++)
        columns[k] = -1.0;
    CHECK_H5(H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, collective, columns));
    for (int i = 0; i < ROWS; i++)
        for (int c = 0; c < ncols; c++) {
            int j = test_rank + c * test_size;
            CHECK(columns[i * ncols + c] == temperature(i, j),
                  "strided collective read: temperature[%d][%d] = %g, want %g", i, j,
                  columns[i * ncols + c], temperature(i, j));
        }
    free(columns);
    CHECK_H5(H5Sclose(mspace));
    CHECK_H5(H5Sclose(fspace));
    CHECK_H5(H5Dclose(dset));

    /* counts: collectively the next rank's rows (perhaps none), then independently all. */
    dset = H5ID(H5Dopen2(file, "counts", H5P_DEFAULT));
    check_dims(dset, IROWS, ICOLS, "counts");
    nrows = share(IROWS, test_size, other);
    row0 = first_row(IROWS, test_size, other);
    fspace = H5ID(H5Dget_space(dset));
    select_rows(fspace, row0, nrows, ICOLS);
    mspace = memory_space(nrows, ICOLS);
    int counts[IROWS * ICOLS];
    for (int k = 0; k < IROWS * ICOLS; k++)
        counts[k] = -1;
    CHECK_H5(H5Dread(dset, H5T_NATIVE_INT, mspace, fspace, collective, counts));
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < ICOLS; j++)
            CHECK(counts[i * ICOLS + j] == count_value(row0 + i, j),
                  "collective read of rank %d's rows: counts[%d][%d] = %d, want %d", other,
                  row0 + i, j, counts[i * ICOLS + j], count_value(row0 + i, j));
    CHECK_H5(H5Sclose(mspace));
    CHECK_H5(H5Sclose(fspace));

    for (int k = 0; k < IROWS * ICOLS; k++)
        counts[k] = -1;
    CHECK_H5(H5Dread(dset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, independent, counts));
    for (int i = 0; i < IROWS; i++)
        for (int j = 0; j < ICOLS; j++)
            CHECK(counts[i * ICOLS + j] == count_value(i, j),
                  "independent read: counts[%d][%d] = %d, want %d", i, j, counts[i * ICOLS + j],
                  count_value(i, j));
    CHECK_H5(H5Dclose(dset));

    /* interleaved: collectively, the next rank's block of rows. */
    dset = H5ID(H5Dopen2(file, "interleaved", H5P_DEFAULT));
    check_dims(dset, PROWS, PCOLS, "interleaved");
    nrows = share(PROWS, test_size, other);
    row0 = first_row(PROWS, test_size, other);
    fspace = H5ID(H5Dget_space(dset));
    select_rows(fspace, row0, nrows, PCOLS);
    mspace = memory_space(nrows, PCOLS);
    int *block = test_malloc(sizeof(int) * (size_t)(nrows > 0 ? nrows : 1) * PCOLS);
    for (int k = 0; k < nrows * PCOLS; k++)
        block[k] = -1;
    CHECK_H5(H5Dread(dset, H5T_NATIVE_INT, mspace, fspace, collective, block));
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < PCOLS; j++)
            CHECK(block[i * PCOLS + j] == interleaved_value(row0 + i, j),
                  "collective read of rows %d..%d: interleaved[%d][%d] = %d, want %d", row0,
                  row0 + nrows, row0 + i, j, block[i * PCOLS + j], interleaved_value(row0 + i, j));
    free(block);
    CHECK_H5(H5Sclose(mspace));
    CHECK_H5(H5Sclose(fspace));
    CHECK_H5(H5Dclose(dset));

    CHECK_H5(H5Pclose(independent));
    CHECK_H5(H5Pclose(collective));
    CHECK_H5(H5Fclose(file));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    if (test_rank == 0) {
        unsigned major = 0, minor = 0, release = 0;
        CHECK_H5(H5get_libversion(&major, &minor, &release));
        printf("hdf5: %u.%u.%u\n", major, minor, release);
        print_mpi_libraries();
    }
    char name[64];
    snprintf(name, sizeof name, "hdf5_dataset_%d.h5", test_size);
    const char *path = test_path(name);

    write_file(path);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    read_file(path);

    /* Everything HDF5 opened is closed: no identifier may be left. */
    ssize_t open_ids = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
    CHECK(open_ids == 0, "%zd HDF5 objects are still open", open_ids);
    CHECK_H5(H5close());
    test_ok();
    MPI_Finalize();
    return 0;
}
