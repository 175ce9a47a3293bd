/*
 * lanes_mpit.h: what the lane tests read through MPI_T (lanes.c, lanes_tags.c).
 */
#ifndef LANES_MPIT_H
#define LANES_MPIT_H
#include "mpitest.h"

/* The lanes in use (cvar MPI_LANES). */
static unsigned long long lanes_in_use(void)
{
    int idx, count;
    unsigned long long lanes = 0;
    MPI_T_cvar_handle ch;
    CHECK_MPI(MPI_T_cvar_get_index("MPI_LANES", &idx));
    CHECK_MPI(MPI_T_cvar_handle_alloc(idx, NULL, &ch, &count));
    CHECK_MPI(MPI_T_cvar_read(ch, &lanes));
    CHECK_MPI(MPI_T_cvar_handle_free(&ch));
    return lanes;
}

#endif
