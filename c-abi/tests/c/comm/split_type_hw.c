/*
 * split_type_hw: MPI_Comm_split_type with MPI_COMM_TYPE_HW_GUIDED and
 * MPI_COMM_TYPE_HW_UNGUIDED (MPI 4.0 §7.4.2).
 *
 *  - HW_GUIDED with mpi_hw_resource_type = mpi_shared_memory groups the processes of the
 *    host, as MPI_COMM_TYPE_SHARED does (one host here: everyone), ranked by key.
 *  - HW_GUIDED with a value the library does not know, with no such key, or with
 *    MPI_INFO_NULL gives MPI_COMM_NULL on every process.
 *  - HW_GUIDED at each hardware level the library knows: every process gets MPI_COMM_NULL
 *    (its CPUs span several resources of that level) or a communicator whose members agree
 *    on their resource; the communicator says its level in mpi_hw_resource_type.
 *  - HW_UNGUIDED, repeated on its own result: each communicator is a strict subset of its
 *    parent and names its level in mpi_hw_resource_type, until MPI_COMM_NULL (at most 6
 *    levels down).
 */
#define TEST_NAME "split_type_hw"
#include "../mpitest.h"

static MPI_Comm guided(MPI_Comm parent, const char *value, int key)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Comm out;
    if (value) {
        CHECK_MPI(MPI_Info_create(&info));
        CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", value));
    }
    CHECK_MPI(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_GUIDED, key, info, &out));
    if (info != MPI_INFO_NULL)
        CHECK_MPI(MPI_Info_free(&info));
    return out;
}

/* The value of mpi_hw_resource_type on `comm` (empty if unset). */
static void resource_type(MPI_Comm comm, char *value)
{
    MPI_Info used;
    int flag;
    CHECK_MPI(MPI_Comm_get_info(comm, &used));
    CHECK_MPI(MPI_Info_get(used, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, value, &flag));
    if (!flag)
        value[0] = '\0';
    CHECK_MPI(MPI_Info_free(&used));
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    int n = test_size, me = test_rank;
    char value[MPI_MAX_INFO_VAL + 1];

    /* mpi_shared_memory: the host's processes (all of them), in reverse rank order by key. */
    MPI_Comm shm = guided(MPI_COMM_WORLD, "mpi_shared_memory", n - me);
    CHECK(shm != MPI_COMM_NULL, "mpi_shared_memory gave MPI_COMM_NULL");
    int size, rank;
    CHECK_MPI(MPI_Comm_size(shm, &size));
    CHECK_MPI(MPI_Comm_rank(shm, &rank));
    CHECK(size == n && rank == n - 1 - me, "mpi_shared_memory: size %d rank %d", size, rank);
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, shm));
    CHECK(sum == n * (n - 1) / 2, "allreduce on the shared-memory communicator = %d", sum);
    CHECK_MPI(MPI_Comm_free(&shm));

    /* Unknown value, no key, no info: MPI_COMM_NULL everywhere. */
    CHECK(guided(MPI_COMM_WORLD, "no_such_resource", 0) == MPI_COMM_NULL, "an unknown value split");
    CHECK(guided(MPI_COMM_WORLD, NULL, 0) == MPI_COMM_NULL, "MPI_INFO_NULL split");
    {
        MPI_Info other;
        MPI_Comm out;
        CHECK_MPI(MPI_Info_create(&other));
        CHECK_MPI(MPI_Info_set(other, "some_other_key", "x"));
        CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, other, &out));
        CHECK(out == MPI_COMM_NULL, "an info without mpi_hw_resource_type split");
        CHECK_MPI(MPI_Info_free(&other));
    }

    /* Each level: MPI_COMM_NULL, or members that agree on where they are. */
    const char *levels[] = {"hwloc://Package", "NUMANode", "Core", "PU"};
    for (int l = 0; l < 4; l++) {
        MPI_Comm c = guided(MPI_COMM_WORLD, levels[l], 0);
        if (c == MPI_COMM_NULL)
            continue;
        CHECK_MPI(MPI_Comm_size(c, &size));
        int ones = 0, one = 1;
        CHECK_MPI(MPI_Allreduce(&one, &ones, 1, MPI_INT, MPI_SUM, c));
        CHECK(ones == size && size <= n, "level %s: size %d, allreduce %d", levels[l], size, ones);
        resource_type(c, value);
        CHECK(value[0] != '\0', "level %s: no mpi_hw_resource_type on the result", levels[l]);
        CHECK_MPI(MPI_Comm_free(&c));
    }

    /* Unguided, level after level. */
    MPI_Comm parent = MPI_COMM_WORLD;
    int parent_size = n, depth = 0;
    for (; depth < 6; depth++) {
        MPI_Comm c;
        CHECK_MPI(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &c));
        /* Every member of the parent learns whether anyone got a communicator. */
        int got = c != MPI_COMM_NULL, any = 0;
        CHECK_MPI(MPI_Allreduce(&got, &any, 1, MPI_INT, MPI_MAX, parent));
        if (parent != MPI_COMM_WORLD)
            CHECK_MPI(MPI_Comm_free(&parent));
        if (!any)
            break;
        CHECK(got, "unguided level %d: MPI_COMM_NULL here, a communicator elsewhere", depth);
        CHECK_MPI(MPI_Comm_size(c, &size));
        CHECK(size < parent_size, "unguided level %d: size %d is not below the parent's %d", depth,
              size, parent_size);
        resource_type(c, value);
        CHECK(value[0] != '\0', "unguided level %d: no mpi_hw_resource_type", depth);
        parent = c;
        parent_size = size;
    }
    CHECK(depth < 6, "unguided splits did not end");
    if (me == 0)
        printf("unguided split levels: %d\n", depth);

    /* HW_GUIDED on one rank, MPI_UNDEFINED on the others (mpi4py's testSplitTypeHWGuided): the
     * root gets a communicator of itself alone, the others MPI_COMM_NULL, nobody hangs. */
    {
        MPI_Info shm;
        CHECK_MPI(MPI_Info_create(&shm));
        CHECK_MPI(MPI_Info_set(shm, "mpi_hw_resource_type", "mpi_shared_memory"));
        for (int root = 0; root < n; root++) {
            MPI_Comm c;
            CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD,
                                          me == root ? MPI_COMM_TYPE_HW_GUIDED : MPI_UNDEFINED, 0,
                                          shm, &c));
            if (me == root) {
                int sz = 0;
                CHECK(c != MPI_COMM_NULL, "the HW_GUIDED root %d got MPI_COMM_NULL", root);
                CHECK_MPI(MPI_Comm_size(c, &sz));
                CHECK(sz == 1, "the HW_GUIDED root's communicator has %d processes, want 1", sz);
                CHECK_MPI(MPI_Comm_free(&c));
            } else {
                CHECK(c == MPI_COMM_NULL, "an MPI_UNDEFINED caller got a communicator");
            }
        }
        CHECK_MPI(MPI_Info_free(&shm));
    }

    /* On an intercommunicator (even and odd ranks): each group split by host, as
     * MPI_Comm_split does there; MPI_UNDEFINED gives MPI_COMM_NULL (mpi4py's
     * test_comm_inter.testSplitTypeShared; MPICH accepts it too). */
    if (n > 1) {
        MPI_Comm half, inter, c;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half));
        CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, me % 2 ? 0 : 1, 77, &inter));
        CHECK_MPI(MPI_Comm_split_type(inter, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &c));
        CHECK(c != MPI_COMM_NULL, "split_type SHARED of an intercommunicator gave MPI_COMM_NULL");
        int is_inter = 0, local = 0, remote = 0, half_size = 0;
        CHECK_MPI(MPI_Comm_test_inter(c, &is_inter));
        CHECK_MPI(MPI_Comm_size(c, &local));
        CHECK_MPI(MPI_Comm_remote_size(c, &remote));
        CHECK_MPI(MPI_Comm_size(half, &half_size));
        CHECK(is_inter && local == half_size && remote == n - half_size,
              "split_type SHARED of an intercommunicator: inter %d, sizes %d+%d, want %d+%d",
              is_inter, local, remote, half_size, n - half_size);
        CHECK_MPI(MPI_Comm_free(&c));
        CHECK_MPI(MPI_Comm_split_type(inter, MPI_UNDEFINED, me, MPI_INFO_NULL, &c));
        CHECK(c == MPI_COMM_NULL, "split_type MPI_UNDEFINED of an intercommunicator gave a communicator");
        CHECK_MPI(MPI_Comm_free(&inter));
        CHECK_MPI(MPI_Comm_free(&half));
    }
    test_ok();
    MPI_Finalize();
    return 0;
}
