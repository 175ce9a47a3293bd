/*
 * mpit_layers: prints each rank's counters of every layer of the stack (NIC, BIP, FM, channel,
 * MPI) at the end of any MPI program, using only the MPI tool information interface (MPI_T)
 * and the profiling interface (PMPI). Nothing of the library's internals is used: the layers,
 * their descriptions and their counters are discovered through MPI_T's categories.
 *
 * It wraps MPI_Init / MPI_Init_thread (after PMPI_Init: one MPI_T session with a started
 * handle of every counter) and MPI_Finalize (before PMPI_Finalize: stop, read, print), so the
 * figures are those of the program between its MPI_Init and its MPI_Finalize. Output, one
 * line per rank and layer, only counters that moved:
 *
 *   mpit_layers rank 0 nic: packets_tx=41 bytes_tx=82000 packets_rx=2 ...
 *   mpit_layers rank 0 bip: messages_sent=40 copies=80 bytes_copied=160000 ...
 *
 * Use it linked in or preloaded:
 *   mpicc -o prog prog.c mpit_layers.c && mpirun -n 2 ./prog
 *   mpicc -shared -fPIC -o libmpit_layers.so mpit_layers.c
 *   mpirun -n 2 -x LD_PRELOAD=$PWD/libmpit_layers.so ./prog
 * MPIT_LAYERS_ALL=1 prints the counters that stayed 0 too.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle *handles; /* by pvar index; NULL where not a counter */
static int num_pvars;
static int tool_on;

/* After the library started: a session with a started handle of every counter. */
static void layers_start(void)
{
    int provided;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_pvar_get_num(&num_pvars) != MPI_SUCCESS || num_pvars <= 0 ||
        MPI_T_pvar_session_create(&session) != MPI_SUCCESS) {
        MPI_T_finalize();
        return;
    }
    handles = calloc((size_t)num_pvars, sizeof *handles);
    for (int i = 0; handles && i < num_pvars; i++) {
        int cls, bind, count;
        MPI_Datatype dt;
        if (MPI_T_pvar_get_info(i, NULL, NULL, NULL, &cls, &dt, NULL, NULL, NULL, &bind, NULL,
                                NULL, NULL) != MPI_SUCCESS)
            continue;
        if (cls != MPI_T_PVAR_CLASS_COUNTER || dt != MPI_UNSIGNED_LONG_LONG ||
            bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_pvar_handle_alloc(session, i, NULL, &handles[i], &count);
    }
    MPI_T_pvar_start(session, MPI_T_PVAR_ALL_HANDLES);
    tool_on = 1;
}

/* Before the library ends: one line per category that has counters. */
static void layers_report(void)
{
    if (!tool_on)
        return;
    tool_on = 0;
    MPI_T_pvar_stop(session, MPI_T_PVAR_ALL_HANDLES);
    int rank = 0, ncat = 0, all = getenv("MPIT_LAYERS_ALL") != NULL;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_category_get_num(&ncat);
    for (int c = 0; c < ncat; c++) {
        char cat[64];
        int len = sizeof cat, np = 0;
        if (MPI_T_category_get_info(c, cat, &len, NULL, NULL, NULL, &np, NULL) != MPI_SUCCESS || np == 0)
            continue;
        int *idx = malloc(sizeof(int) * (size_t)np);
        if (!idx || MPI_T_category_get_pvars(c, np, idx) != MPI_SUCCESS) {
            free(idx);
            continue;
        }
        char line[4096];
        size_t used = (size_t)snprintf(line, sizeof line, "mpit_layers rank %d %s:", rank, cat);
        int shown = 0;
        for (int k = 0; k < np; k++) {
            char name[128];
            int nlen = sizeof name;
            unsigned long long value = 0;
            int i = idx[k];
            if (i < 0 || i >= num_pvars || handles[i] == MPI_T_PVAR_HANDLE_NULL)
                continue;
            if (MPI_T_pvar_read(session, handles[i], &value) != MPI_SUCCESS ||
                MPI_T_pvar_get_info(i, name, &nlen, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                    NULL, NULL, NULL) != MPI_SUCCESS)
                continue;
            if (value == 0 && !all)
                continue;
            /* The counters are named <layer>_<counter>: print the counter's part. */
            const char *shortname = name;
            size_t catlen = strlen(cat);
            if (strncmp(name, cat, catlen) == 0 && name[catlen] == '_')
                shortname = name + catlen + 1;
            if (used < sizeof line)
                used += (size_t)snprintf(line + used, sizeof line - used, " %s=%llu", shortname, value);
            shown++;
        }
        free(idx);
        if (shown > 0)
            printf("%s\n", line);
    }
    fflush(stdout);
    MPI_T_pvar_session_free(&session);
    free(handles);
    handles = NULL;
    MPI_T_finalize();
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        layers_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        layers_start();
    return rc;
}

int MPI_Finalize(void)
{
    layers_report();
    return PMPI_Finalize();
}
