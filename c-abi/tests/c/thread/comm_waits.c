/*
 * comm_waits: communicator constructors under MPI_THREAD_MULTIPLE do not wait holding the
 * library's lock, and MPI_Comm_create_group and MPI_Comm_create_from_group do not hold the
 * process's context-id lock across their exchange.
 *
 * 1. Two threads of every rank create communicators at once with MPI_Comm_create_group (or,
 *    in odd rounds, MPI_Comm_create_from_group), over two different groups (the world in order and reversed, tags 1 and 2): even ranks start
 *    the first group's call first, odd ranks the second's, so that a call that held the lock
 *    (or the context-id lock) while waiting for the others would hang the job. Each new
 *    communicator's group order and an allreduce on it are checked.
 * 2, 3. Ranks are paired (even r with r + 1). The even rank's thread enters a topology
 *    constructor (MPI_Cart_create, MPI_Cart_sub, MPI_Graph_create,
 *    MPI_Dist_graph_create_adjacent, MPI_Dist_graph_create), MPI_Comm_split_type by
 *    hardware, MPI_Comm_create_group or MPI_Comm_disconnect on the pair,
 *    MPI_Intercomm_create (each rank's MPI_COMM_SELF joined to its partner's),
 *    MPI_Intercomm_merge or MPI_Comm_split of that intercommunicator, which can return only
 *    once the partner has entered it, while another thread must first answer a message of
 *    the partner, which makes its call only after the answer (part 3: the intercommunicator
 *    calls; also two threads of each rank making intercommunicators with the partner at
 *    once, in opposite orders on the two ranks).
 * COMM_WAITS_PART=1, 2 or 3 runs one part only (to show which hangs on a build that waits
 * holding the lock).
 */
#define TEST_NAME "comm_waits"
#include "mpitest.h"
#include <pthread.h>

#define ROUNDS 4
#define DELAY_MS 20
#define TAG 9
#include "answering.h"

static MPI_Group world_group;

struct create_job {
    int reversed; /* the group: the world reversed, or in order */
    int from_group; /* MPI_Comm_create_from_group (string tag "t<tag>") instead */
    int tag;
    int delay_ms;
    MPI_Comm made;
};

static void *create_over(void *arg)
{
    struct create_job *j = arg;
    int n = test_size, ranks[64];
    for (int i = 0; i < n; i++)
        ranks[i] = j->reversed ? n - 1 - i : i;
    MPI_Group g;
    CHECK_MPI(MPI_Group_incl(world_group, n, ranks, &g));
    sleep_ms(j->delay_ms);
    if (j->from_group) {
        char tag[32];
        snprintf(tag, sizeof tag, "t%d", j->tag);
        CHECK_MPI(MPI_Comm_create_from_group(g, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN,
                                             &j->made));
    } else {
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, g, j->tag, &j->made));
    }
    CHECK_MPI(MPI_Group_free(&g));
    return NULL;
}

static void check_made(MPI_Comm c, int reversed)
{
    int rank = -1, size = -1, sum = -1;
    CHECK(c != MPI_COMM_NULL, "a member got MPI_COMM_NULL");
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK_MPI(MPI_Comm_size(c, &size));
    CHECK(size == test_size, "size %d", size);
    CHECK(rank == (reversed ? test_size - 1 - test_rank : test_rank), "rank %d (reversed %d)",
          rank, reversed);
    int mine = test_rank + 1;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == test_size * (test_size + 1) / 2, "allreduce %d", sum);
}

/* Part 1: two create_group calls at once on every rank, in opposite orders on odd ranks. */
static void two_groups_at_once(void)
{
    for (int round = 0; round < ROUNDS; round++) {
        int even = test_rank % 2 == 0;
        int from_group = round % 2; /* MPI_Comm_create_from_group in odd rounds */
        struct create_job in_order = {0, from_group, 1 + 2 * round, even ? 0 : DELAY_MS,
                                      MPI_COMM_NULL};
        struct create_job reversed = {1, from_group, 2 + 2 * round, even ? DELAY_MS : 0,
                                      MPI_COMM_NULL};
        pthread_t a, b;
        CHECK(pthread_create(&a, NULL, create_over, &in_order) == 0, "pthread_create");
        CHECK(pthread_create(&b, NULL, create_over, &reversed) == 0, "pthread_create");
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        check_made(in_order.made, 0);
        check_made(reversed.made, 1);
        CHECK_MPI(MPI_Comm_free(&in_order.made));
        CHECK_MPI(MPI_Comm_free(&reversed.made));
    }
}

/* Part 2: a constructor on one thread of the even rank while another answers the partner. */
static MPI_Comm pair;      /* this rank and its partner (even first) */
static MPI_Comm made;      /* what the constructor made */

static int value_of(int rank) { return 100 * round_no + rank; }

static void cart_create(void)
{
    int dims[1] = {2}, periods[1] = {1};
    CHECK_MPI(MPI_Cart_create(pair, 1, dims, periods, 0, &made));
}

static MPI_Comm grid; /* a 2x1 grid on the pair, for MPI_Cart_sub */

static void cart_sub(void)
{
    int remain[2] = {1, 0};
    CHECK_MPI(MPI_Cart_sub(grid, remain, &made));
}

static void graph_create(void)
{
    int index[2] = {1, 2}, edges[2] = {1, 0};
    CHECK_MPI(MPI_Graph_create(pair, 2, index, edges, 0, &made));
}

static void dist_graph_create(void)
{
    int other = 1 - (test_rank % 2);
    CHECK_MPI(MPI_Dist_graph_create_adjacent(pair, 1, &other, MPI_UNWEIGHTED, 1, &other,
                                             MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &made));
}

static void dist_graph_create_edges(void)
{
    int me = test_rank % 2, other = 1 - me, one = 1;
    CHECK_MPI(MPI_Dist_graph_create(pair, 1, &me, &one, &other, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                    0, &made));
}

static void split_type_guided(void)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    CHECK_MPI(MPI_Comm_split_type(pair, MPI_COMM_TYPE_HW_GUIDED, 0, info, &made));
    CHECK_MPI(MPI_Info_free(&info));
}

static MPI_Comm to_disconnect;

static void disconnect(void)
{
    CHECK_MPI(MPI_Comm_disconnect(&to_disconnect));
    CHECK(to_disconnect == MPI_COMM_NULL, "the disconnected communicator is MPI_COMM_NULL");
}

static void create_group(void)
{
    MPI_Group g;
    CHECK_MPI(MPI_Comm_group(pair, &g));
    CHECK_MPI(MPI_Comm_create_group(pair, g, 5, &made));
    CHECK_MPI(MPI_Group_free(&g));
}

static MPI_Comm inter; /* this rank's MPI_COMM_SELF joined to its partner's */

static void intercomm_create(void)
{
    CHECK_MPI(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, partner, 6, &made));
}

static void intercomm_merge(void) { CHECK_MPI(MPI_Intercomm_merge(inter, 0, &made)); }

static void intercomm_split(void) { CHECK_MPI(MPI_Comm_split(inter, 0, 0, &made)); }

/* An intercommunicator of this rank and its partner; an exchange across checks it. */
static void check_inter(MPI_Comm c, const char *what)
{
    int flag = 0, remote = -1, got = -1, mine = value_of(test_rank);
    CHECK(c != MPI_COMM_NULL, "%s made MPI_COMM_NULL", what);
    CHECK_MPI(MPI_Comm_test_inter(c, &flag));
    CHECK_MPI(MPI_Comm_remote_size(c, &remote));
    CHECK(flag && remote == 1, "%s: inter %d, remote size %d", what, flag, remote);
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, 0, 4, &got, 1, MPI_INT, 0, 4, c,
                           MPI_STATUS_IGNORE));
    CHECK(got == value_of(partner), "%s: got %d", what, got);
}

/* Two processes, the even rank first; a ring exchange on it checks it. */
static void check_pair_comm(MPI_Comm c, const char *what)
{
    int rank = -1, size = -1, got = -1, mine = value_of(test_rank);
    CHECK(c != MPI_COMM_NULL, "%s made MPI_COMM_NULL", what);
    CHECK_MPI(MPI_Comm_size(c, &size));
    CHECK_MPI(MPI_Comm_rank(c, &rank));
    CHECK(size == 2 && rank == test_rank % 2, "%s: rank %d of %d", what, rank, size);
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, 1 - rank, 3, &got, 1, MPI_INT, 1 - rank, 3, c,
                           MPI_STATUS_IGNORE));
    CHECK(got == value_of(partner), "%s: got %d", what, got);
}

/* Runs `make` on the even rank beside a thread that answers the partner (on the odd rank,
 * after asking), and returns what it made. */
static MPI_Comm made_beside_answer(void (*make)(void))
{
    made = MPI_COMM_NULL;
    beside_answer(make);
    return made;
}

/* `make` beside an answer (see answering.h), then checks and frees what it made. */
static void make_beside_answer(void (*make)(void), const char *what)
{
    (void)made_beside_answer(make);
    check_pair_comm(made, what);
    CHECK_MPI(MPI_Comm_free(&made));
}

struct inter_job {
    int tag;
    int delay_ms;
    MPI_Comm made;
};

static void *intercomm_after(void *arg)
{
    struct inter_job *j = arg;
    sleep_ms(j->delay_ms);
    CHECK_MPI(MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, partner, j->tag, &j->made));
    return NULL;
}

/* Part 3: two threads of each rank make an intercommunicator with the partner at once, the
 * two ranks starting them in opposite orders (a call that held the context-id lock across
 * its exchange would deadlock with the partner's). */
static void two_intercomms_at_once(void)
{
    struct inter_job x = {21, is_even ? 0 : DELAY_MS, MPI_COMM_NULL};
    struct inter_job y = {22, is_even ? DELAY_MS : 0, MPI_COMM_NULL};
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, intercomm_after, &x) == 0, "pthread_create");
    CHECK(pthread_create(&b, NULL, intercomm_after, &y) == 0, "pthread_create");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    check_inter(x.made, "MPI_Intercomm_create (tag 21)");
    check_inter(y.made, "MPI_Intercomm_create (tag 22)");
    CHECK_MPI(MPI_Comm_free(&x.made));
    CHECK_MPI(MPI_Comm_free(&y.made));
}

static void constructors_beside_answers(void)
{
    is_even = test_rank % 2 == 0;
    partner = is_even ? test_rank + 1 : test_rank - 1;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, test_rank / 2, test_rank, &pair));
    int dims[2] = {2, 1}, periods[2] = {0, 0};
    CHECK_MPI(MPI_Cart_create(pair, 2, dims, periods, 0, &grid));
    const char *part = getenv("COMM_WAITS_PART");
    int constructors = !part || strcmp(part, "2") == 0, inters = !part || strcmp(part, "3") == 0;
    for (round_no = 0; round_no < ROUNDS && constructors; round_no++) {
        make_beside_answer(cart_create, "MPI_Cart_create");
        make_beside_answer(cart_sub, "MPI_Cart_sub");
        make_beside_answer(graph_create, "MPI_Graph_create");
        make_beside_answer(dist_graph_create, "MPI_Dist_graph_create_adjacent");
        make_beside_answer(dist_graph_create_edges, "MPI_Dist_graph_create");
        make_beside_answer(split_type_guided, "MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED)");
        make_beside_answer(create_group, "MPI_Comm_create_group");
        CHECK_MPI(MPI_Comm_dup(pair, &to_disconnect));
        check_pair_comm(to_disconnect, "MPI_Comm_dup");
        (void)made_beside_answer(disconnect);
    }
    for (round_no = 0; round_no < ROUNDS && inters; round_no++) {
        two_intercomms_at_once();
        inter = made_beside_answer(intercomm_create);
        check_inter(inter, "MPI_Intercomm_create");
        MPI_Comm merged = made_beside_answer(intercomm_merge);
        check_pair_comm(merged, "MPI_Intercomm_merge");
        CHECK_MPI(MPI_Comm_free(&merged));
        MPI_Comm split = made_beside_answer(intercomm_split);
        check_inter(split, "MPI_Comm_split of an intercommunicator");
        CHECK_MPI(MPI_Comm_free(&split));
        CHECK_MPI(MPI_Comm_free(&inter));
    }
    CHECK_MPI(MPI_Comm_free(&grid));
    CHECK_MPI(MPI_Comm_free(&pair));
}

int main(int argc, char **argv)
{
    int provided = -1;
    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &test_rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &test_size));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK(test_size % 2 == 0 && test_size <= 64, "run with an even number of ranks, up to 64");
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));

    const char *part = getenv("COMM_WAITS_PART");
    if (!part || strcmp(part, "2") != 0)
        two_groups_at_once();
    if (!part || strcmp(part, "1") != 0)
        constructors_beside_answers(); /* parts 2 and 3 */

    CHECK_MPI(MPI_Group_free(&world_group));
    test_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
