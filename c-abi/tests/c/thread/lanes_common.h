/*
 * lanes_common.h: what the lane tests (lanes.c, lanes_tags.c) share: the lanes in use
 * through MPI_T (checked against LANES_EXPECTED when set), a counter pvar read over a
 * session, and a probe that blocks (MPI_Probe) or polls (MPI_Iprobe, yielding the
 * core between polls, at most LIMIT_S seconds). Include after mpitest.h and <sched.h>, with
 * LIMIT_S defined.
 */
#ifndef LANES_COMMON_H
#define LANES_COMMON_H
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

/* The lanes in use, checked against the environment's LANES_EXPECTED if set. */
static unsigned long long lanes_checked(void)
{
    unsigned long long lanes = lanes_in_use();
    const char *want = getenv("LANES_EXPECTED");
    if (want)
        CHECK(lanes == strtoull(want, NULL, 10), "MPI_LANES reads %llu, expected %s", lanes, want);
    return lanes;
}

/* A counter pvar read over a session of its own: opened, started, read once when closed. */
typedef struct {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
} lane_counter;

static lane_counter counter_open(const char *name)
{
    lane_counter c;
    int idx, count;
    CHECK_MPI(MPI_T_pvar_session_create(&c.session));
    CHECK_MPI(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &idx));
    CHECK_MPI(MPI_T_pvar_handle_alloc(c.session, idx, NULL, &c.handle, &count));
    return c;
}

static void counter_start(lane_counter *c) { CHECK_MPI(MPI_T_pvar_start(c->session, c->handle)); }

static unsigned long long counter_close(lane_counter *c)
{
    unsigned long long v = 0;
    CHECK_MPI(MPI_T_pvar_read(c->session, c->handle, &v));
    CHECK_MPI(MPI_T_pvar_handle_free(c->session, &c->handle));
    CHECK_MPI(MPI_T_pvar_session_free(&c->session));
    return v;
}

/* A message from `source` with `tag` on `c`, found by MPI_Probe, or by polling MPI_Iprobe. */
static void probe_for(int source, int tag, MPI_Comm c, MPI_Status *st, int poll)
{
    if (!poll) {
        CHECK_MPI(MPI_Probe(source, tag, c, st));
        return;
    }
    int flag = 0;
    double start = MPI_Wtime();
    for (;;) {
        CHECK_MPI(MPI_Iprobe(source, tag, c, &flag, st));
        if (flag)
            return;
        CHECK(MPI_Wtime() - start < LIMIT_S, "MPI_Iprobe found nothing in %d s", LIMIT_S);
        sched_yield();
    }
}

#endif
