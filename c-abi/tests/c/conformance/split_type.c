/*
 * split_type: MPI_Comm_split_type by hardware, as MPI 4.0 §7.4.2 describes it (issue 17).
 *
 *  - MPI_COMM_TYPE_HW_GUIDED with mpi_hw_resource_type = "mpi_shared_memory" gives the
 *    groups MPI_COMM_TYPE_SHARED gives; without the key, or with a value the library does
 *    not know, every process gets MPI_COMM_NULL.
 *  - MPI_COMM_TYPE_HW_UNGUIDED gives either MPI_COMM_NULL or a communicator whose group is
 *    a strict subset of the parent's; MPI_Comm_get_info on it names the resource type, and
 *    MPI_COMM_TYPE_HW_GUIDED with that name gives the same group. Applied again to its own
 *    result it keeps shrinking until MPI_COMM_NULL.
 *
 * What a process gets depends on how it is bound (one rank per core under our mpirun's
 * default when the ranks fit the CPUs, unbound when they do not), so the checks are the
 * standard's relations, not sizes. Under MPICH 4.0.2 (no hardware levels but
 * "mpi_shared_memory"): passes.
 */
#define TEST_NAME "split_type"
#include "mpitest.h"

static MPI_Comm guided(MPI_Comm parent, const char *value)
{
    MPI_Info info = MPI_INFO_NULL;
    if (value) {
        CHECK_MPI(MPI_Info_create(&info));
        CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", value));
    }
    MPI_Comm c;
    CHECK_MPI(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_GUIDED, 0, info, &c));
    if (value)
        CHECK_MPI(MPI_Info_free(&info));
    return c;
}

static int same_group(MPI_Comm a, MPI_Comm b)
{
    MPI_Group ga, gb;
    int r;
    CHECK_MPI(MPI_Comm_group(a, &ga));
    CHECK_MPI(MPI_Comm_group(b, &gb));
    CHECK_MPI(MPI_Group_compare(ga, gb, &r));
    MPI_Group_free(&ga);
    MPI_Group_free(&gb);
    return r == MPI_IDENT;
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm shared, c;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
    CHECK(shared != MPI_COMM_NULL, "MPI_COMM_TYPE_SHARED gave MPI_COMM_NULL");

    c = guided(MPI_COMM_WORLD, "mpi_shared_memory");
    CHECK(c != MPI_COMM_NULL && same_group(c, shared), "HW_GUIDED mpi_shared_memory differs from MPI_COMM_TYPE_SHARED");
    CHECK_MPI(MPI_Comm_free(&c));
    c = guided(MPI_COMM_WORLD, NULL);
    CHECK(c == MPI_COMM_NULL, "HW_GUIDED without mpi_hw_resource_type gave a communicator");
    c = guided(MPI_COMM_WORLD, "no_such_resource_anywhere");
    CHECK(c == MPI_COMM_NULL, "HW_GUIDED with an unknown resource type gave a communicator");

    /* Unguided, down the levels: each result a strict subset, named, and reproducible. */
    MPI_Comm parent = MPI_COMM_WORLD;
    for (int depth = 0; depth < 8; depth++) {
        int psize, size;
        CHECK_MPI(MPI_Comm_size(parent, &psize));
        CHECK_MPI(MPI_Comm_split_type(parent, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &c));
        int got = c != MPI_COMM_NULL, all_got, any_got;
        CHECK_MPI(MPI_Allreduce(&got, &all_got, 1, MPI_INT, MPI_MIN, parent));
        CHECK_MPI(MPI_Allreduce(&got, &any_got, 1, MPI_INT, MPI_MAX, parent));
        if (c == MPI_COMM_NULL) {
            if (parent != MPI_COMM_WORLD)
                CHECK_MPI(MPI_Comm_free(&parent));
            break;
        }
        CHECK_MPI(MPI_Comm_size(c, &size));
        CHECK(size < psize, "HW_UNGUIDED at depth %d gave %d of %d processes: not a strict subset", depth, size, psize);
        MPI_Info used;
        char value[MPI_MAX_INFO_VAL];
        int flag = 0;
        CHECK_MPI(MPI_Comm_get_info(c, &used));
        CHECK_MPI(MPI_Info_get(used, "mpi_hw_resource_type", MPI_MAX_INFO_VAL - 1, value, &flag));
        CHECK_MPI(MPI_Info_free(&used));
        CHECK(flag, "the HW_UNGUIDED communicator does not name its resource type");
        /* Every process of the parent took part, so the guided split is collective too
           only if all of them got a communicator: then compare. */
        if (all_got) {
            MPI_Comm again = guided(parent, value);
            CHECK(again != MPI_COMM_NULL && same_group(again, c), "HW_GUIDED %s differs from the HW_UNGUIDED split", value);
            CHECK_MPI(MPI_Comm_free(&again));
        }
        if (parent != MPI_COMM_WORLD)
            CHECK_MPI(MPI_Comm_free(&parent));
        parent = c;
        if (!any_got)
            break;
    }
    CHECK_MPI(MPI_Comm_free(&shared));
    test_ok();
    MPI_Finalize();
    return 0;
}
