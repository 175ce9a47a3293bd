/*
 * file_basics: opening, closing and managing files, every access-mode rule and error class,
 * explicit offsets and individual file pointers, hints, handles, error handlers (MPI 3.1
 * chapter 13, and §8.3 for files' error handlers). Every rank takes part; files live in
 * $FILE_TEST_DIR.
 *
 * Checked:
 *  - a missing file: MPI_ERR_NO_SUCH_FILE (on open and MPI_File_delete), with the system's
 *    reason in the error string; an existing file with MPI_MODE_EXCL: MPI_ERR_FILE_EXISTS;
 *    RDONLY with CREATE or EXCL, two access modes, none, RDWR with SEQUENTIAL: MPI_ERR_AMODE;
 *  - writing a read-only file: MPI_ERR_READ_ONLY; reading a write-only file: MPI_ERR_ACCESS;
 *    explicit offsets on a SEQUENTIAL file: MPI_ERR_UNSUPPORTED_OPERATION;
 *  - a read past the end returns a count of 0, one across it the bytes that were there;
 *  - MPI_FILE_NULL and a closed handle: MPI_ERR_FILE;
 *  - write_at/read_at of each rank's region, seek (SET, CUR, END) and get_position,
 *    read/write moving the individual pointer, get_byte_offset of the default view;
 *  - set_size (grow, shrink), get_size, preallocate; APPEND starts the pointer at the end;
 *    DELETE_ON_CLOSE removes the file; get_amode, get_group, atomicity;
 *  - info hints given at open and by set_info come back from get_info, ROMIO's names too;
 *  - MPI_File_c2f / MPI_File_f2c; MPI_FILE_NULL <-> 0;
 *  - error handlers: the default (MPI_ERRORS_RETURN) on files and MPI_FILE_NULL, a handler
 *    of the program's on a file (called with the file and the code) and on MPI_FILE_NULL
 *    (called for a failed open), MPI_File_call_errhandler;
 *  - set_view with an unknown representation: MPI_ERR_UNSUPPORTED_DATAREP ("external32"
 *    is accepted; file_datarep.c tests the representations);
 *
 * Where Debian's MPICH 4.0.2 (ROMIO) deviates (checked with scripts/file-check-mpich), the
 * check is skipped under it only (a NOTE line):
 *  - its get_info leaves out hints it does not know (a key of the program's, striping_unit on
 *    this file system);
 *  - a closed handle is a dangling pointer in ROMIO (not checked there: it would crash);
 *  - the error string of a missing file has its own words ("does not exist"), not the
 *    system's ("No such file or directory").
 */
#define TEST_NAME "file_basics"
#include "mpitest.h"
#include "file_util.h"

static int handler_calls = 0;
static int handler_class = -1;
static MPI_File handler_file = MPI_FILE_NULL;

static void on_file_error(MPI_File *fh, int *code, ...)
{
    handler_calls++;
    handler_class = error_class_of(*code);
    handler_file = *fh;
}

static MPI_File open_or_fail(const char *path, int amode, MPI_Info info)
{
    MPI_File fh = MPI_FILE_NULL;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, amode, info, &fh));
    CHECK(fh != MPI_FILE_NULL, "MPI_File_open succeeded but gave MPI_FILE_NULL");
    return fh;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void amode_rules_and_open_errors(void)
{
    MPI_File fh = MPI_FILE_NULL;
    const char *missing = test_path("no-such-file");
    int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(error_class_of(rc) == MPI_ERR_NO_SUCH_FILE, "open of a missing file returned %s",
          error_text(rc));
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    CHECK_MPI(MPI_Error_string(rc, text, &len));
    if (!(strstr(text, "does not exist") != NULL &&
          tolerated("MPICH", "the error string has its own words, not the system's")))
        CHECK(strstr(text, "No such file") != NULL,
              "the error string lacks the system's reason: %s", text);
    EXPECT_CLASS(MPI_File_delete(missing, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);

    const char *path = test_path("exists.dat");
    fh = open_or_fail(path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "close did not set the handle to MPI_FILE_NULL");
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path,
                               MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_EXCL,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_FILE_EXISTS);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_EXCL,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
                 MPI_ERR_AMODE);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_AMODE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(path), "MPI_File_delete left the file");
}

static void access_errors_and_short_reads(void)
{
    const char *path = test_path("data.dat");
    MPI_File fh = open_or_fail(path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL);
    char block[100];
    for (int i = 0; i < 100; i++)
        block[i] = (char)i;
    MPI_Status st;
    if (test_rank == 0)
        CHECK_MPI(MPI_File_write_at(fh, 0, block, 100, MPI_BYTE, &st));
    /* sync-barrier-sync: rank 0's write is visible to every rank after it (MPI 3.1 13.6.1) */
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    char in[10];
    CHECK_MPI(MPI_File_read_at(fh, 1000, in, 10, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == 0, "a read past the end moved %d bytes", moved_bytes(&st));
    CHECK_MPI(MPI_File_read_at(fh, 95, in, 10, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == 5, "a read across the end moved %d bytes, want 5",
          moved_bytes(&st));
    CHECK(in[0] == 95 && in[4] == 99, "a read across the end got the wrong bytes");
    int elements = -1;
    CHECK_MPI(MPI_Get_elements(&st, MPI_BYTE, &elements));
    CHECK(elements == 5, "MPI_Get_elements gave %d", elements);
    CHECK_MPI(MPI_File_close(&fh));

    fh = open_or_fail(path, MPI_MODE_RDONLY, MPI_INFO_NULL);
    EXPECT_CLASS(MPI_File_write_at(fh, 0, block, 10, MPI_BYTE, &st), MPI_ERR_READ_ONLY);
    EXPECT_CLASS(MPI_File_write(fh, block, 10, MPI_BYTE, &st), MPI_ERR_READ_ONLY);
    CHECK_MPI(MPI_File_close(&fh));
    fh = open_or_fail(path, MPI_MODE_WRONLY, MPI_INFO_NULL);
    EXPECT_CLASS(MPI_File_read_at(fh, 0, in, 10, MPI_BYTE, &st), MPI_ERR_ACCESS);
    EXPECT_CLASS(MPI_File_read(fh, in, 10, MPI_BYTE, &st), MPI_ERR_ACCESS);
    CHECK_MPI(MPI_File_close(&fh));
    fh = open_or_fail(path, MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL);
    EXPECT_CLASS(MPI_File_write_at(fh, 0, block, 10, MPI_BYTE, &st),
                 MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK_MPI(MPI_File_close(&fh));

    /* Bad handles. */
    MPI_Offset size = 0;
    EXPECT_CLASS(MPI_File_get_size(MPI_FILE_NULL, &size), MPI_ERR_FILE);
    MPI_File closed = open_or_fail(path, MPI_MODE_RDONLY, MPI_INFO_NULL);
    MPI_File copy = closed;
    CHECK_MPI(MPI_File_close(&closed));
    if (!tolerated("MPICH", "a closed file handle is a dangling pointer (not checked)"))
        EXPECT_CLASS(MPI_File_get_size(copy, &size), MPI_ERR_FILE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void offsets_pointers_and_sizes(void)
{
    const char *path = test_path("pointers.dat");
    MPI_File fh = open_or_fail(path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL);
    enum { REGION = 64 };
    unsigned char mine[REGION], back[REGION];
    fill_pattern(mine, REGION, (uint32_t)test_rank + 1);
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)test_rank * REGION, mine, REGION, MPI_BYTE,
                                    &st));
    CHECK(moved_bytes(&st) == REGION, "write_at_all moved %d bytes", moved_bytes(&st));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* Every rank reads its right neighbour's region, with the individual pointer. */
    int right = (test_rank + 1) % test_size;
    MPI_Offset pos = -1;
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == 0, "a new file's pointer is at %lld", (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, (MPI_Offset)right * REGION + 8, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_seek(fh, -8, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)right * REGION, "the pointer is at %lld", (long long)pos);
    CHECK_MPI(MPI_File_read_all(fh, back, REGION / 2, MPI_BYTE, &st));
    CHECK_MPI(MPI_File_read(fh, back + REGION / 2, REGION / 2, MPI_BYTE, &st));
    CHECK_PATTERN(back, REGION, (uint32_t)right + 1, "rank %d's region read back", right);
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)(right + 1) * REGION, "after reading the pointer is at %lld",
          (long long)pos);
    CHECK_MPI(MPI_File_seek(fh, 0, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == (MPI_Offset)test_size * REGION, "SEEK_END put the pointer at %lld",
          (long long)pos);
    EXPECT_CLASS(MPI_File_seek(fh, -1, MPI_SEEK_SET), MPI_ERR_ARG);
    MPI_Offset byte = -1;
    CHECK_MPI(MPI_File_get_byte_offset(fh, 77, &byte));
    CHECK(byte == 77, "the default view's byte offset of 77 is %lld", (long long)byte);

    MPI_Offset size = 0;
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == (MPI_Offset)test_size * REGION, "the size is %lld", (long long)size);
    CHECK_MPI(MPI_File_set_size(fh, 1000));
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == 1000, "after set_size(1000) the size is %lld", (long long)size);
    CHECK_MPI(MPI_File_set_size(fh, 10));
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == 10, "after set_size(10) the size is %lld", (long long)size);
    CHECK_MPI(MPI_File_preallocate(fh, 5000));
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == 5000, "after preallocate(5000) the size is %lld", (long long)size);
    CHECK_MPI(MPI_File_preallocate(fh, 100));
    CHECK_MPI(MPI_File_get_size(fh, &size));
    CHECK(size == 5000, "preallocate shrank the file to %lld", (long long)size);

    int amode = 0, flag = -1, cmp = -1;
    CHECK_MPI(MPI_File_get_amode(fh, &amode));
    CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_CREATE), "get_amode gave %d", amode);
    MPI_Group g, world;
    CHECK_MPI(MPI_File_get_group(fh, &g));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_compare(g, world, &cmp));
    CHECK(cmp == MPI_IDENT, "the file's group is not MPI_COMM_WORLD's (%d)", cmp);
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 0, "a new file is atomic");
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
    CHECK(flag == 1, "set_atomicity(1) did not stick");
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)test_rank * REGION, mine, REGION, MPI_BYTE,
                                &st));
    CHECK_MPI(MPI_File_read_at(fh, (MPI_Offset)test_rank * REGION, back, REGION, MPI_BYTE,
                               &st));
    CHECK_PATTERN(back, REGION, (uint32_t)test_rank + 1, "an atomic write read back");
    CHECK_MPI(MPI_File_close(&fh));

    /* APPEND: the pointer starts at the end. */
    fh = open_or_fail(path, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL);
    CHECK_MPI(MPI_File_get_position(fh, &pos));
    CHECK(pos == size, "APPEND put the pointer at %lld, want %lld", (long long)pos,
          (long long)size);
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));

    /* DELETE_ON_CLOSE. */
    const char *temp = test_path("temporary.dat");
    fh = open_or_fail(temp, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                      MPI_INFO_NULL);
    CHECK_MPI(MPI_File_write_at(fh, (MPI_Offset)test_rank * REGION, mine, REGION, MPI_BYTE,
                                &st));
    CHECK(exists(temp), "the file does not exist while open");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(!exists(temp), "DELETE_ON_CLOSE left the file");
}

static void hints_handles_and_handlers(void)
{
    const char *path = test_path("hints.dat");
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "cb_buffer_size", "1048576"));
    CHECK_MPI(MPI_Info_set(info, "romio_cb_write", "enable"));
    CHECK_MPI(MPI_Info_set(info, "striping_unit", "65536"));
    CHECK_MPI(MPI_Info_set(info, "file_test_key", "kept"));
    MPI_File fh = open_or_fail(path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                               info);
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "ind_wr_buffer_size", "8192"));
    CHECK_MPI(MPI_File_set_info(fh, info));
    CHECK_MPI(MPI_Info_free(&info));
    MPI_Info used;
    CHECK_MPI(MPI_File_get_info(fh, &used));
    struct {
        const char *key, *value;
        int romio_drops;
    } want[] = {
        {"cb_buffer_size", "1048576", 0},   {"romio_cb_write", "enable", 0},
        {"ind_wr_buffer_size", "8192", 0},  {"striping_unit", "65536", 1},
        {"file_test_key", "kept", 1},       {"romio_ds_read", NULL, 0},
        {"cb_nodes", NULL, 0},              {"ind_rd_buffer_size", NULL, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char value[MPI_MAX_INFO_VAL + 1];
        int found = 0;
        CHECK_MPI(MPI_Info_get(used, want[i].key, MPI_MAX_INFO_VAL, value, &found));
        if (!found && want[i].romio_drops &&
            tolerated("MPICH", "get_info leaves out hints it does not act on"))
            continue;
        CHECK(found, "get_info lacks %s", want[i].key);
        if (want[i].value != NULL)
            CHECK(strcmp(value, want[i].value) == 0, "get_info: %s = %s, want %s", want[i].key,
                  value, want[i].value);
    }
    CHECK_MPI(MPI_Info_free(&used));

    /* Fortran handles. */
    MPI_Fint f = MPI_File_c2f(fh);
    CHECK(f != 0, "MPI_File_c2f gave 0 for an open file");
    CHECK(MPI_File_f2c(f) == fh, "MPI_File_f2c(MPI_File_c2f(fh)) is not fh");
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0, "MPI_File_c2f(MPI_FILE_NULL) is not 0");
    CHECK(MPI_File_f2c(0) == MPI_FILE_NULL, "MPI_File_f2c(0) is not MPI_FILE_NULL");

    /* Data representations. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL));
    EXPECT_CLASS(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "no-such-rep", MPI_INFO_NULL),
                 MPI_ERR_UNSUPPORTED_DATAREP);
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));

    /* Error handlers: the defaults, a file's own, MPI_FILE_NULL's. */
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, mine;
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a file's default handler is not MPI_ERRORS_RETURN");
    CHECK_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "MPI_FILE_NULL's default handler is not MPI_ERRORS_RETURN");
    CHECK_MPI(MPI_File_create_errhandler(on_file_error, &mine));
    CHECK_MPI(MPI_File_set_errhandler(fh, mine));
    CHECK_MPI(MPI_File_get_errhandler(fh, &eh));
    CHECK(eh == mine, "get_errhandler does not give the file's handler");
    CHECK_MPI(MPI_Errhandler_free(&eh));
    char b[4] = {0};
    MPI_Status st;
    int rc = MPI_File_read_at(fh, -5, b, 4, MPI_BYTE, &st);
    CHECK(rc != MPI_SUCCESS, "a negative offset was accepted");
    CHECK(handler_calls == 1 && handler_file == fh, "the file's handler was called %d times",
          handler_calls);
    CHECK(handler_class == error_class_of(rc), "the handler saw class %d, the call returned %d",
          handler_class, error_class_of(rc));
    CHECK_MPI(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    CHECK(handler_calls == 2 && handler_class == MPI_ERR_OTHER,
          "MPI_File_call_errhandler did not call the handler with its code");
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));

    handler_calls = 0;
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    MPI_File none = MPI_FILE_NULL;
    rc = MPI_File_open(MPI_COMM_WORLD, test_path("no-such-file"), MPI_MODE_RDONLY,
                       MPI_INFO_NULL, &none);
    CHECK(error_class_of(rc) == MPI_ERR_NO_SUCH_FILE, "the failed open returned %s",
          error_text(rc));
    CHECK(handler_calls == 1 && handler_class == MPI_ERR_NO_SUCH_FILE &&
              handler_file == MPI_FILE_NULL,
          "MPI_FILE_NULL's handler was not called for the failed open (%d calls)",
          handler_calls);
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&mine));
    CHECK_MPI(MPI_File_close(&fh));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    amode_rules_and_open_errors();
    access_errors_and_short_reads();
    offsets_pointers_and_sizes();
    hints_handles_and_handlers();
    MPI_Barrier(MPI_COMM_WORLD);
    test_ok();
    MPI_Finalize();
    return 0;
}
