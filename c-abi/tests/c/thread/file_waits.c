/*
 * file_waits: the collective calls of MPI-IO (MPI_File_open, MPI_File_set_view,
 * MPI_File_write_at_all, MPI_File_read_at_all, MPI_File_write_all, MPI_File_read_all,
 * MPI_File_write_ordered, MPI_File_seek_shared, MPI_File_read_ordered,
 * MPI_File_write_at_all_end, MPI_File_sync, MPI_File_set_atomicity, MPI_File_set_size,
 * MPI_File_close) under MPI_THREAD_MULTIPLE do not wait holding the library's lock. Ranks are paired (even r with r + 1). On the even
 * rank, one thread enters the collective access (two-phase I/O: it needs every process of
 * the file's communicator) while another thread must first answer a point-to-point message
 * of the partner, which makes its own access only after the answer. If the access held the
 * lock while it waited, the answering thread could not make its MPI_Recv and the job would
 * hang. Each rank writes its own block; everything read back is checked. The file is in
 * $FILE_TEST_DIR. FILE_WAITS_PART=open runs the open, view and close only (to show that they
 * hang on a build that waits holding the lock).
 */
#define TEST_NAME "file_waits"
#include "mpitest.h"
#include "../file/file_util.h"
#include <pthread.h>

#define ROUNDS 3
#define BLOCK 4096
#define DELAY_MS 20
#define TAG 13
#include "answering.h"

static int slot; /* slot: the round whose blocks are accessed */
static MPI_File fh;
static unsigned char block[BLOCK], back[BLOCK];

static MPI_Offset my_offset(void) { return (MPI_Offset)(slot * test_size + test_rank) * BLOCK; }

static void write_at_all(void)
{
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all(fh, my_offset(), block, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "wrote %d", moved_bytes(&st));
}

static void read_at_all(void)
{
    MPI_Status st;
    memset(back, 0, BLOCK);
    CHECK_MPI(MPI_File_read_at_all(fh, my_offset(), back, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "read %d", moved_bytes(&st));
}

static void write_all(void)
{
    MPI_Status st;
    CHECK_MPI(MPI_File_seek(fh, my_offset(), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_write_all(fh, block, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "wrote %d", moved_bytes(&st));
}

static void read_all(void)
{
    MPI_Status st;
    memset(back, 0, BLOCK);
    CHECK_MPI(MPI_File_seek(fh, my_offset(), MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all(fh, back, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "read %d", moved_bytes(&st));
}

static void write_ordered(void)
{
    MPI_Status st;
    CHECK_MPI(MPI_File_write_ordered(fh, block, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "wrote %d", moved_bytes(&st));
}

static void seek_shared_start(void) { CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET)); }

static void read_ordered(void)
{
    MPI_Status st;
    memset(back, 0, BLOCK);
    CHECK_MPI(MPI_File_read_ordered(fh, back, BLOCK, MPI_BYTE, &st));
    CHECK(moved_bytes(&st) == BLOCK, "read %d", moved_bytes(&st));
}

static void write_at_all_end(void)
{
    MPI_Status st;
    CHECK_MPI(MPI_File_write_at_all_end(fh, block, &st));
    CHECK(moved_bytes(&st) == BLOCK, "wrote %d", moved_bytes(&st));
}

static void sync_file(void) { CHECK_MPI(MPI_File_sync(fh)); }

static void atomic_on(void) { CHECK_MPI(MPI_File_set_atomicity(fh, 1)); }

static void grow(void)
{
    CHECK_MPI(MPI_File_set_size(fh, (MPI_Offset)(4 * ROUNDS + 1) * test_size * BLOCK));
}

static const char *path;

static void open_file(void)
{
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                            MPI_INFO_NULL, &fh));
}

static void set_view(void)
{
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
}

static void close_file(void)
{
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "the closed file is MPI_FILE_NULL");
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK(test_size % 2 == 0, "run with an even number of ranks");
    is_even = test_rank % 2 == 0;
    partner = is_even ? test_rank + 1 : test_rank - 1;
    path = test_path("file_waits.dat");
    const char *part = getenv("FILE_WAITS_PART");
    int accesses = !part || strcmp(part, "open") != 0;
    round_no = 1000;
    beside_answer(open_file);
    round_no = 1001;
    beside_answer(set_view);

    for (round_no = 0; round_no < ROUNDS && accesses; round_no++) {
        slot = round_no;
        uint32_t seed = message_seed(test_rank, round_no, 1);
        fill_pattern(block, BLOCK, seed);
        beside_answer(round_no % 2 ? write_all : write_at_all);
        round_no += ROUNDS;
        beside_answer(round_no % 2 ? read_all : read_at_all);
        round_no -= ROUNDS;
        CHECK_PATTERN(back, BLOCK, seed, "round %d", round_no);
    }

    if (accesses) {
        /* In rank order from the shared pointer (0 after the view was set), then back. */
        uint32_t seed = message_seed(test_rank, 77, 2);
        fill_pattern(block, BLOCK, seed);
        round_no = 2000;
        beside_answer(write_ordered);
        round_no = 2001;
        beside_answer(seek_shared_start);
        round_no = 2002;
        beside_answer(read_ordered);
        CHECK_PATTERN(back, BLOCK, seed, "ordered");

        /* A split collective's end waits for the others' begins. */
        slot = 2 * ROUNDS;
        seed = message_seed(test_rank, 78, 3);
        fill_pattern(block, BLOCK, seed);
        CHECK_MPI(MPI_File_write_at_all_begin(fh, my_offset(), block, BLOCK, MPI_BYTE));
        round_no = 2003;
        beside_answer(write_at_all_end);
        round_no = 2004;
        beside_answer(sync_file);
        round_no = 2005;
        beside_answer(atomic_on);
        int flag = 0;
        CHECK_MPI(MPI_File_get_atomicity(fh, &flag));
        CHECK(flag == 1, "atomicity %d", flag);
        round_no = 2006;
        beside_answer(grow);
        MPI_Offset size = -1;
        CHECK_MPI(MPI_File_get_size(fh, &size));
        CHECK(size == (MPI_Offset)(4 * ROUNDS + 1) * test_size * BLOCK, "size %lld",
              (long long)size);
        round_no = 2007;
        beside_answer(read_at_all);
        CHECK_PATTERN(back, BLOCK, seed, "split write");
    }
    round_no = 1002;
    beside_answer(close_file);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (test_rank == 0)
        CHECK_MPI(MPI_File_delete(path, MPI_INFO_NULL));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
