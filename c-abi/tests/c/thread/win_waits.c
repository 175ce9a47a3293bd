/*
 * win_waits: one-sided synchronization under MPI_THREAD_MULTIPLE does not wait holding the
 * library's lock. Ranks are paired (even rank r with r + 1). On the even rank, one thread
 * enters a synchronization call that can return only once the odd partner has entered its
 * own (MPI_Win_create and MPI_Win_allocate, MPI_Win_fence, MPI_Win_start waiting for the
 * post, MPI_Win_lock waiting for the partner's exclusive lock on itself to end,
 * MPI_Win_free's barrier), while another thread
 * must first answer a point-to-point message from the partner, which makes its call only
 * after the answer. If the waiting call held the lock, the answering thread could not make
 * its MPI_Recv and the job would hang. Windows made by MPI_Win_create (requests) and by
 * MPI_Win_allocate (loads and stores on one host); the values put are checked.
 * WIN_WAITS_PART=create runs the creations only (to show that they hang on a build that
 * waits holding the lock).
 */
#define TEST_NAME "win_waits"
#include "mpitest.h"
#include <pthread.h>

#define ROUNDS 3
#define DELAY_MS 20
#define TAG 7
#include "answering.h"

static MPI_Win win;
static int *base;   /* this rank's window: one int */
static MPI_Group partner_group;

/* The value `rank` puts in round `round_no`. */
static int value_of(int rank) { return 1000 * round_no + rank; }

static void put_mine(void)
{
    int v = value_of(test_rank);
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, partner, 0, 1, MPI_INT, win));
}

static void fence_put(void)
{
    CHECK_MPI(MPI_Win_fence(0, win));
    put_mine();
    CHECK_MPI(MPI_Win_fence(0, win));
}

static void start_put_complete(void)
{
    CHECK_MPI(MPI_Win_start(partner_group, 0, win));
    put_mine();
    CHECK_MPI(MPI_Win_complete(win));
}

static void lock_put_unlock(void)
{
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, partner, 0, win));
    put_mine();
    CHECK_MPI(MPI_Win_unlock(partner, win));
}

static void free_win(void) { CHECK_MPI(MPI_Win_free(&win)); }

static int read_own(void)
{
    int v;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, test_rank, 0, win));
    v = *(volatile int *)base;
    CHECK_MPI(MPI_Win_unlock(test_rank, win));
    return v;
}

static int create_only; /* WIN_WAITS_PART=create: only the creations wait beside answers */
static int allocating; /* the windows: MPI_Win_allocate'd, or MPI_Win_create'd on `mem` */
static int *mem;

static void make_window(void)
{
    if (allocating) {
        CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                   &base, &win));
    } else {
        CHECK_MPI(MPI_Win_create(mem, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                                 &win));
        base = mem;
    }
}

static void rounds(int allocate)
{
    const char *kind = allocate ? "allocated" : "created";
    for (round_no = 0; round_no < ROUNDS; round_no++) {
        /* Creation: the even rank's waits for the partner's. */
        allocating = allocate;
        mem = test_malloc(sizeof(int));
        *mem = -1;
        beside_answer(make_window);
        *base = -1;
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (create_only) {
            CHECK_MPI(MPI_Win_free(&win));
            free(mem);
            continue;
        }
        round_no += ROUNDS;

        /* Fence: the even rank's fence waits for the partner's. */
        beside_answer(fence_put);
        CHECK(*(volatile int *)base == value_of(partner), "%s, fence, round %d: %d", kind,
              round_no, *base);

        /* Post/start: the even rank's start waits for the partner's post. */
        round_no += ROUNDS;
        if (is_even) {
            beside_answer(start_put_complete);
        } else {
            ask();
            CHECK_MPI(MPI_Win_post(partner_group, 0, win));
            CHECK_MPI(MPI_Win_wait(win));
            CHECK(*(volatile int *)base == value_of(partner), "%s, post/start, round %d: %d",
                  kind, round_no, *base);
        }

        /* Lock: the even rank's exclusive lock waits for the partner's lock on itself. */
        round_no += ROUNDS;
        if (is_even) {
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            beside_answer(lock_put_unlock);
        } else {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, test_rank, 0, win));
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
            ask();
            CHECK_MPI(MPI_Win_unlock(test_rank, win));
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (!is_even)
            CHECK(read_own() == value_of(partner), "%s, lock, round %d", kind, round_no);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

        /* Free: the even rank's free waits for the partner's. */
        round_no += ROUNDS;
        if (is_even) {
            beside_answer(free_win);
        } else {
            ask();
            free_win();
        }
        CHECK(win == MPI_WIN_NULL, "the freed window is MPI_WIN_NULL");
        round_no -= 4 * ROUNDS;
        free(mem);
    }
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
    MPI_Group world;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &partner, &partner_group));
    CHECK_MPI(MPI_Group_free(&world));

    const char *part = getenv("WIN_WAITS_PART");
    create_only = part && strcmp(part, "create") == 0;
    rounds(0);
    rounds(1);

    CHECK_MPI(MPI_Group_free(&partner_group));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
