/*
 * file_faults: what a file system that says no looks like through MPI-IO, on every rank.
 *
 *  - A full file system ($FULL_DIR, a tmpfs far smaller than what the ranks write): an
 *    independent write_at and a collective write_at_all of BLOCK bytes per rank both fail
 *    with MPI_ERR_NO_SPACE on every rank, the system's reason ("No space left on device")
 *    in the error string; the same through /dev/full on MPI_COMM_SELF. After the file is
 *    deleted the space is back: a small write succeeds.
 *  - A read-only file system ($RO_DIR): creating a file there is MPI_ERR_READ_ONLY.
 *  - Names that cannot name a file: a directory opened for writing, and a path through a
 *    regular file, are MPI_ERR_BAD_FILE (ROMIO's classes for EISDIR and ENOTDIR).
 *
 * MPI_ERR_QUOTA needs a file system with quotas, which a test cannot set up here: the
 * library's errno-to-class table is unit-tested for EDQUOT instead.
 *
 * The harness (tests/file_faults.rs) runs this under `unshare --mount`, in a mount namespace
 * of the job's own where it mounts the two tmpfs, so nothing outside the job sees them and
 * they vanish with it. Checked against Debian's MPICH 4.0.2 the same way; its deviation: a
 * write that meets ENOSPC is MPI_ERR_IO there (ROMIO maps errno to a class only on open).
 */
#define TEST_NAME "file_faults"
#include "mpitest.h"
#include "file_util.h"
#include <fcntl.h>
#include <string.h>

enum { BLOCK = 1 << 20 };

static const char *env_dir(const char *name)
{
    const char *d = getenv(name);
    if (d == NULL || d[0] == '\0')
        FAIL("%s is not set: the harness mounts it (see tests/file_faults.rs)", name);
    return d;
}

/* The call failed with NO_SPACE and says why. */
static void expect_no_space(int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        FAIL("%s on a full file system succeeded", what);
    CHECK(error_class_of(rc) == MPI_ERR_NO_SPACE ||
              (error_class_of(rc) == MPI_ERR_IO &&
               tolerated("MPICH", "a write that meets ENOSPC is MPI_ERR_IO, not MPI_ERR_NO_SPACE")),
          "%s returned %s; want MPI_ERR_NO_SPACE", what, error_text(rc));
    CHECK(strstr(error_text(rc), "No space") != NULL,
          "%s: the error string does not give the system's reason: %s", what, error_text(rc));
}

static void full_file_system(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/full.dat", env_dir("FULL_DIR"));
    char *block = test_malloc(BLOCK);
    fill_pattern(block, BLOCK, (uint32_t)test_rank);
    MPI_File fh;
    MPI_Status st;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                            &fh));
    expect_no_space(MPI_File_write_at(fh, (MPI_Offset)test_rank * BLOCK, block, BLOCK, MPI_BYTE,
                                      &st),
                    "MPI_File_write_at");
    expect_no_space(MPI_File_write_at_all(fh, (MPI_Offset)test_rank * BLOCK, block, BLOCK,
                                          MPI_BYTE, &st),
                    "MPI_File_write_at_all");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* The space is back: a small collective write and its read. */
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                            &fh));
    CHECK_MPI(MPI_File_write_at_all(fh, (MPI_Offset)test_rank * 1024, block, 1024, MPI_BYTE, &st));
    char back[1024];
    CHECK_MPI(MPI_File_read_at_all(fh, (MPI_Offset)test_rank * 1024, back, 1024, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == 1024 && memcmp(back, block, 1024) == 0,
          "the small write after the delete did not read back");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));

    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, "/dev/full", MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    expect_no_space(MPI_File_write(fh, block, 4096, MPI_BYTE, &st), "MPI_File_write to /dev/full");
    CHECK_MPI(MPI_File_close(&fh));
    free(block);
}

static void read_only_file_system(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/ro.dat", env_dir("RO_DIR"));
    MPI_File fh = MPI_FILE_NULL;
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_READ_ONLY);
    CHECK(fh == MPI_FILE_NULL, "a failed open left a file handle");
}

static void names_that_are_not_files(void)
{
    const char *dir = env_dir("FILE_TEST_DIR");
    MPI_File fh = MPI_FILE_NULL;
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, dir, MPI_MODE_RDWR, MPI_INFO_NULL, &fh),
                 MPI_ERR_BAD_FILE);
    const char *regular = test_path("regular.dat");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, regular, MPI_MODE_CREATE | MPI_MODE_RDWR,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_close(&fh));
    char through[1100];
    snprintf(through, sizeof through, "%s/inside.dat", regular);
    EXPECT_CLASS(MPI_File_open(MPI_COMM_WORLD, through, MPI_MODE_CREATE | MPI_MODE_RDWR,
                               MPI_INFO_NULL, &fh),
                 MPI_ERR_BAD_FILE);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(regular, MPI_INFO_NULL));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    full_file_system();
    read_only_file_system();
    names_that_are_not_files();
    test_ok();
    MPI_Finalize();
    return 0;
}
