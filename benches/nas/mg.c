/* mg.c: the NAS MG kernel (V-cycle multigrid on a periodic 3-D grid), written from the NAS
 * Parallel Benchmarks specification, in C99 with MPI.
 *
 * The problem: approximate the solution of the discrete Poisson problem A u = v on an
 * n x n x n periodic grid, where v is zero except +1 at the ten points where a grid of the
 * specification's pseudo-random numbers (seed 314159265, multiplier 5^13, filled with the
 * first index fastest) is largest and -1 at the ten where it is smallest. Starting from
 * u = 0, each of nit iterations computes r = v - A u and u = u + M r, where M is one V-cycle:
 *
 *     M^k r_k:  if k > 1:  r_{k-1} = P r_k;  z_{k-1} = M^{k-1} r_{k-1};  z_k = Q z_{k-1};
 *                          r_k = r_k - A z_k;  z_k = z_k + S r_k
 *               else:      z_1 = S r_1
 *
 * with the specification's 27-point operators, each given by four coefficients (centre,
 * the 6 face, the 12 edge and the 8 corner neighbours): A (residual), P (restriction),
 * Q (trilinear interpolation) and S (smoother). Coarse point c of a level lies on fine point
 * 2c+1 of the level above. The result is the root-mean-square of the final residual, checked
 * against the specification's value to a relative 1e-8. Mop/s counts 58 operations per
 * point per iteration.
 *
 * Parallelization: the processes (a power of two) form a 3-D grid as in the specification's
 * MPI version (np = 2: 1x1x2, 4: 1x2x2, 8: 2x2x2, ...); each owns a block of every fine
 * level with one layer of ghost points, refreshed by one nonblocking exchange per
 * dimension (neighbour faces, edges and corners follow from doing the dimensions in turn).
 * The coarse levels (16^3 points and below) are tiny: instead of exchanging ghost layers on
 * them at every step, one MPI_Allgather assembles the coarse residual on every process,
 * each process runs the bottom of the V-cycle on the whole coarse grid (a few thousand
 * points, no messages) and interpolates its own block back up. The interpolation also
 * computes the fine ghost points, so only residuals and smoothed corrections are exchanged.
 *
 * Usage: mpirun -n NP ./mg CLASS   (CLASS S, W, A or B; NP a power of two)
 */
#include "nas.h"

#include <math.h>

/* Coarsest level size at which the V-cycle stops being distributed and runs, whole, on
 * every process. */
#define MG_REPLICATED_SIZE 16

/* One grid (or a window into one): p points at interior point (0, 0, 0); index
 * (i, j, k) with each in [-1, m] (the ghost layers are -1 and m). */
typedef struct {
    double *p;
    long s1, s2;
    int m[3];
} Grid;

#define AT(g, i, j, k) ((g).p[(i) + (g).s1 * (long)(j) + (g).s2 * (long)(k)])

/* One multigrid level: its arrays, whether they are distributed blocks (else whole grids
 * held by every process), and the window of u the next finer level interpolates from. */
typedef struct {
    int n;
    int distributed;
    Grid u, r, coarse_view;
} Level;

/* The process grid and this process's place in it. */
static int np, rank, pgrid[3], coord[3], left[3], right[3];
/* Exchange buffers (large enough for any face of the finest level). */
static double *send_lo, *send_hi, *recv_lo, *recv_hi;

static Grid grid_new(int m1, int m2, int m3)
{
    Grid g;
    long s1 = m1 + 2, s2 = s1 * (m2 + 2), len = s2 * (m3 + 2);
    double *base = calloc((size_t)len, sizeof(double));
    if (!base) {
        fprintf(stderr, "mg: out of memory allocating a %dx%dx%d grid\n", m1, m2, m3);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    g.p = base + 1 + s1 + s2;
    g.s1 = s1;
    g.s2 = s2;
    g.m[0] = m1;
    g.m[1] = m2;
    g.m[2] = m3;
    return g;
}

static void grid_free(Grid g)
{
    free(g.p - 1 - g.s1 - g.s2);
}

static void grid_zero(Grid g)
{
    long len = g.s2 * (g.m[2] + 2);
    memset(g.p - 1 - g.s1 - g.s2, 0, (size_t)len * sizeof(double));
}

/* Stride of dimension d of g. */
static long stride(Grid g, int d)
{
    return d == 0 ? 1 : d == 1 ? g.s1 : g.s2;
}

/* Copies face `from` of dimension d to plane `to` (over the full extent, ghosts included, of
 * the other two dimensions): a periodic ghost fill within one process. */
static void copy_plane(Grid g, int d, int from, int to)
{
    int e = d == 0 ? 1 : 0, f = d == 2 ? 1 : 2; /* the other dimensions, e the faster */
    long sd = stride(g, d), se = stride(g, e), sf = stride(g, f);
    for (int b = -1; b <= g.m[f]; b++)
        for (int a = -1; a <= g.m[e]; a++) {
            double *x = g.p + a * se + b * sf;
            x[to * sd] = x[from * sd];
        }
}

/* Packs (dir > 0) plane `at` of dimension d into buf, or unpacks buf into it (dir < 0). */
static long pack_plane(Grid g, int d, int at, double *buf, int dir)
{
    int e = d == 0 ? 1 : 0, f = d == 2 ? 1 : 2;
    long sd = stride(g, d), se = stride(g, e), sf = stride(g, f), n = 0;
    for (int b = -1; b <= g.m[f]; b++)
        for (int a = -1; a <= g.m[e]; a++) {
            double *x = g.p + a * se + b * sf + at * sd;
            if (dir > 0)
                buf[n++] = *x;
            else
                *x = buf[n++];
        }
    return n;
}

/* Whether level L's first dimension is whole on this process, so that the kernels writing
 * its rows fill their periodic ghost ends themselves (saving a strided pass over the grid). */
static int x_whole(const Level *L)
{
    return !L->distributed || pgrid[0] == 1;
}

/* Sets the periodic ghost ends of row (j, k) of g when fill is true. */
static inline void fill_row_ends(Grid g, int j, int k, int fill)
{
    if (fill) {
        double *row = &AT(g, 0, j, k);
        row[-1] = row[g.m[0] - 1];
        row[g.m[0]] = row[0];
    }
}

/* Refreshes the ghost layers of g. Dimension by dimension, each full face plane (the ghosts
 * of the dimensions already done included) goes to the neighbour, so edges and corners
 * arrive too. The third dimension's planes are contiguous and move without packing. When
 * x_filled, the kernel that wrote g has already set the first dimension's ghosts. */
static void exchange(const Level *L, Grid g, int x_filled)
{
    for (int d = x_filled && x_whole(L) ? 1 : 0; d < 3; d++) {
        int m = g.m[d];
        if (!L->distributed || pgrid[d] == 1) {
            copy_plane(g, d, m - 1, -1);
            copy_plane(g, d, 0, m);
            continue;
        }
        MPI_Request req[4];
        MPI_Status statuses[4];
        int up = 10 + d, down = 20 + d; /* tags: a face travelling up / down the dimension */
        if (d == 2) {
            long count = g.s2;
            double *plane0 = g.p - 1 - g.s1;
            MPI_Irecv(plane0 - g.s2, (int)count, MPI_DOUBLE, left[d], up, MPI_COMM_WORLD, &req[0]);
            MPI_Irecv(plane0 + m * g.s2, (int)count, MPI_DOUBLE, right[d], down, MPI_COMM_WORLD, &req[1]);
            MPI_Isend(plane0 + (m - 1) * g.s2, (int)count, MPI_DOUBLE, right[d], up, MPI_COMM_WORLD, &req[2]);
            MPI_Isend(plane0, (int)count, MPI_DOUBLE, left[d], down, MPI_COMM_WORLD, &req[3]);
            MPI_Waitall(4, req, statuses);
            continue;
        }
        long count = (long)(g.m[d == 0 ? 1 : 0] + 2) * (g.m[d == 2 ? 1 : 2] + 2);
        MPI_Irecv(recv_lo, (int)count, MPI_DOUBLE, left[d], up, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(recv_hi, (int)count, MPI_DOUBLE, right[d], down, MPI_COMM_WORLD, &req[1]);
        pack_plane(g, d, m - 1, send_hi, 1);
        pack_plane(g, d, 0, send_lo, 1);
        MPI_Isend(send_hi, (int)count, MPI_DOUBLE, right[d], up, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(send_lo, (int)count, MPI_DOUBLE, left[d], down, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, statuses);
        pack_plane(g, d, -1, recv_lo, -1);
        pack_plane(g, d, m, recv_hi, -1);
    }
}

/* Sums along a row (j, k) of g, for i in [-1, m1]: face[i] the four neighbours in the
 * (j, k) plane at distance 1, diag[i] the four at distance sqrt(2). */
static void row_sums(Grid g, int j, int k, double *face, double *diag)
{
    const double *c = &AT(g, 0, j, k);
    long s1 = g.s1, s2 = g.s2;
    for (int i = -1; i <= g.m[0]; i++) {
        face[i] = c[i - s1] + c[i + s1] + c[i - s2] + c[i + s2];
        diag[i] = c[i - s1 - s2] + c[i + s1 - s2] + c[i - s1 + s2] + c[i + s1 + s2];
    }
}

/* r = v - A u on the interior (r may be v). A's face coefficient is zero. */
static void resid(Grid u, Grid v, Grid r, const double a[4], double *face, double *diag, int fill)
{
    for (int k = 0; k < u.m[2]; k++)
        for (int j = 0; j < u.m[1]; j++) {
            row_sums(u, j, k, face, diag);
            const double *uc = &AT(u, 0, j, k), *vc = &AT(v, 0, j, k);
            double *rc = &AT(r, 0, j, k);
            for (int i = 0; i < u.m[0]; i++)
                rc[i] = vc[i] - a[0] * uc[i] - a[2] * (diag[i] + face[i - 1] + face[i + 1])
                    - a[3] * (diag[i - 1] + diag[i + 1]);
            fill_row_ends(r, j, k, fill);
        }
}

/* u = u + S r on the interior. S's corner coefficient is zero. */
static void psinv(Grid r, Grid u, const double c[4], double *face, double *diag, int fill)
{
    for (int k = 0; k < r.m[2]; k++)
        for (int j = 0; j < r.m[1]; j++) {
            row_sums(r, j, k, face, diag);
            const double *rc = &AT(r, 0, j, k);
            double *uc = &AT(u, 0, j, k);
            for (int i = 0; i < r.m[0]; i++)
                uc[i] += c[0] * rc[i] + c[1] * (rc[i - 1] + rc[i + 1] + face[i])
                    + c[2] * (diag[i] + face[i - 1] + face[i + 1]);
            fill_row_ends(u, j, k, fill);
        }
}

/* s = P r: coarse point c takes the weighted 27 fine points around fine point 2c+1. Writes
 * the interior of s (and, when fill, the periodic ends of its rows). */
static void rprj3(Grid r, Grid s, double *face, double *diag, int fill)
{
    for (int c3 = 0; c3 < s.m[2]; c3++)
        for (int c2 = 0; c2 < s.m[1]; c2++) {
            int k = 2 * c3 + 1, j = 2 * c2 + 1;
            row_sums(r, j, k, face, diag);
            const double *rc = &AT(r, 0, j, k);
            double *sc = &AT(s, 0, c2, c3);
            for (int c1 = 0; c1 < s.m[0]; c1++) {
                int i = 2 * c1 + 1;
                sc[c1] = 0.5 * rc[i] + 0.25 * (rc[i - 1] + rc[i + 1] + face[i])
                    + 0.125 * (face[i - 1] + face[i + 1] + diag[i]) + 0.0625 * (diag[i - 1] + diag[i + 1]);
            }
            fill_row_ends(s, c2, c3, fill);
        }
}

/* u = u + Q z (trilinear interpolation from the coarse window z). Coarse point c lies on
 * fine point 2c+1; fine points between two coarse ones take their mean. Coarse indices
 * -1 .. m-1 cover every fine point -1 .. 2m, ghosts included, so u needs no exchange
 * afterwards (the ghost values equal their periodic images exactly). */
static void interp(Grid z, Grid u, double *z1, double *z2, double *z3)
{
    for (int k = -1; k < z.m[2]; k++)
        for (int j = -1; j < z.m[1]; j++) {
            const double *c = &AT(z, 0, j, k);
            long s1 = z.s1, s2 = z.s2;
            for (int i = -1; i <= z.m[0]; i++) {
                z1[i] = c[i + s1] + c[i];
                z2[i] = c[i + s2] + c[i];
                z3[i] = c[i + s1 + s2] + c[i + s2] + z1[i];
            }
            double *f00 = &AT(u, 0, 2 * j + 1, 2 * k + 1), *f10 = &AT(u, 0, 2 * j + 2, 2 * k + 1);
            double *f01 = &AT(u, 0, 2 * j + 1, 2 * k + 2), *f11 = &AT(u, 0, 2 * j + 2, 2 * k + 2);
            for (int i = -1; i < z.m[0]; i++) {
                f00[2 * i + 1] += c[i];
                f00[2 * i + 2] += 0.5 * (c[i + 1] + c[i]);
                f10[2 * i + 1] += 0.5 * z1[i];
                f10[2 * i + 2] += 0.25 * (z1[i] + z1[i + 1]);
                f01[2 * i + 1] += 0.5 * z2[i];
                f01[2 * i + 2] += 0.25 * (z2[i] + z2[i + 1]);
                f11[2 * i + 1] += 0.25 * z3[i];
                f11[2 * i + 2] += 0.125 * (z3[i] + z3[i + 1]);
            }
        }
}

/* The multigrid levels 1 (2^3 points) .. lt (n^3); levels <= kr are whole on every process. */
static Level *lev;
static int lt, kr;
/* The coarse residual gather: this process's part of level kr, and every process's. */
static Grid part;
static double *gathered;
/* Row scratch, indexable from -1. */
static double *scratch_a, *scratch_b, *scratch_c;

/* Level kr's residual on every process: project into this process's part, gather all
 * parts, place each at its owner's offsets. */
static void gather_coarse(void)
{
    Level *F = &lev[kr + 1], *C = &lev[kr];
    rprj3(F->r, part, scratch_a, scratch_b, 0);
    int cnt = part.m[0] * part.m[1] * part.m[2];
    MPI_Allgather(part.p, cnt, MPI_DOUBLE, gathered, cnt, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int q = 0; q < np; q++) {
        int qc[3] = {q % pgrid[0], (q / pgrid[0]) % pgrid[1], q / (pgrid[0] * pgrid[1])};
        const double *src = gathered + (long)q * cnt;
        for (int k = 0; k < part.m[2]; k++)
            for (int j = 0; j < part.m[1]; j++) {
                double *dst = &AT(C->r, qc[0] * part.m[0], qc[1] * part.m[1] + j, qc[2] * part.m[2] + k);
                memcpy(dst, src, (size_t)part.m[0] * sizeof(double));
                src += part.m[0];
            }
    }
    exchange(C, C->r, 0);
}

/* One V-cycle at the finest level: given r = v - A u there, u = u + M r. The finest r is
 * overwritten on the way (by the residual of the interpolated correction, as the
 * specification's algorithm does); the caller recomputes r = v - A u afterwards. */
static void mg3p(Grid v, const double a[4], const double c[4])
{
    double *fa = scratch_a, *fb = scratch_b;
    for (int k = lt; k > kr + 1; k--) {
        rprj3(lev[k].r, lev[k - 1].r, fa, fb, x_whole(&lev[k - 1]));
        exchange(&lev[k - 1], lev[k - 1].r, 1);
    }
    gather_coarse();
    for (int k = kr; k > 1; k--) {
        rprj3(lev[k].r, lev[k - 1].r, fa, fb, x_whole(&lev[k - 1]));
        exchange(&lev[k - 1], lev[k - 1].r, 1);
    }
    grid_zero(lev[1].u);
    psinv(lev[1].r, lev[1].u, c, fa, fb, 1);
    exchange(&lev[1], lev[1].u, 1);
    for (int k = 2; k < lt; k++) {
        Level *L = &lev[k];
        grid_zero(L->u);
        interp(lev[k - 1].coarse_view, L->u, fa, fb, scratch_c);
        resid(L->u, L->r, L->r, a, fa, fb, x_whole(L));
        exchange(L, L->r, 1);
        psinv(L->r, L->u, c, fa, fb, x_whole(L));
        exchange(L, L->u, 1);
    }
    Level *T = &lev[lt];
    interp(lev[lt - 1].coarse_view, T->u, fa, fb, scratch_c);
    resid(T->u, v, T->r, a, fa, fb, x_whole(T));
    exchange(T, T->r, 1);
    psinv(T->r, T->u, c, fa, fb, x_whole(T));
    exchange(T, T->u, 1);
}

/* Root mean square of the interior of g over all processes (n^3 points). */
static double norm2(Grid g, int n)
{
    double local = 0.0, total = 0.0;
    for (int k = 0; k < g.m[2]; k++)
        for (int j = 0; j < g.m[1]; j++) {
            const double *x = &AT(g, 0, j, k);
            for (int i = 0; i < g.m[0]; i++)
                local += x[i] * x[i];
        }
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sqrt(total / ((double)n * n * n));
}

/* A candidate extreme of the random grid: its value and global linear index. */
typedef struct {
    double value, index;
} Candidate;

static int by_value_descending(const void *x, const void *y)
{
    double a = ((const Candidate *)x)->value, b = ((const Candidate *)y)->value;
    return (a < b) - (a > b);
}

/* Keeps list[0..10) the ten largest of value*sign seen (sorted, largest first). */
static void keep_extreme(Candidate *list, int *len, double value, double index, double sign)
{
    double key = value * sign;
    if (*len == 10 && key <= list[9].value * sign)
        return;
    int at = *len < 10 ? (*len)++ : 9;
    while (at > 0 && list[at - 1].value * sign < key) {
        list[at] = list[at - 1];
        at--;
    }
    list[at].value = value;
    list[at].index = index;
}

/* v = the specification's right-hand side: the random grid's ten largest points +1, its ten
 * smallest -1, zero elsewhere. Each process draws its own block (jumping the generator to the
 * start of each row) and offers its ten largest and smallest; all processes pick the same
 * global twenty from the gathered offers. */
static void make_rhs(Grid v, int n, const int off[3])
{
    Candidate mine[20];
    int nhi = 0, nlo = 0;
    double *row = malloc((size_t)v.m[0] * sizeof(double));
    grid_zero(v);
    for (int k = 0; k < v.m[2]; k++)
        for (int j = 0; j < v.m[1]; j++) {
            uint64_t first = (uint64_t)off[0] + (uint64_t)n * ((uint64_t)(off[1] + j) + (uint64_t)n * (off[2] + k));
            double x = (double)nas_mulmod46((uint64_t)nas_power(NAS_A, first), (uint64_t)NAS_SEED);
            vranlc(v.m[0], &x, NAS_A, row);
            for (int i = 0; i < v.m[0]; i++) {
                keep_extreme(mine, &nhi, row[i], (double)(first + i), 1.0);
                keep_extreme(mine + 10, &nlo, row[i], (double)(first + i), -1.0);
            }
        }
    free(row);
    Candidate *all = malloc((size_t)np * 20 * sizeof(Candidate));
    MPI_Allgather(mine, 40, MPI_DOUBLE, all, 40, MPI_DOUBLE, MPI_COMM_WORLD);
    Candidate *hi = malloc((size_t)np * 10 * sizeof(Candidate)), *lo = malloc((size_t)np * 10 * sizeof(Candidate));
    for (int q = 0; q < np; q++)
        for (int t = 0; t < 10; t++) {
            hi[q * 10 + t] = all[q * 20 + t];
            lo[q * 10 + t] = all[q * 20 + 10 + t];
        }
    qsort(hi, (size_t)np * 10, sizeof(Candidate), by_value_descending);
    qsort(lo, (size_t)np * 10, sizeof(Candidate), by_value_descending);
    for (int t = 0; t < 20; t++) {
        Candidate pick = t < 10 ? hi[t] : lo[np * 10 - 1 - (t - 10)];
        uint64_t g = (uint64_t)pick.index;
        int gi = (int)(g % (uint64_t)n), gj = (int)(g / (uint64_t)n % (uint64_t)n), gk = (int)(g / ((uint64_t)n * n));
        int i = gi - off[0], j = gj - off[1], k = gk - off[2];
        if (i >= 0 && i < v.m[0] && j >= 0 && j < v.m[1] && k >= 0 && k < v.m[2])
            AT(v, i, j, k) = t < 10 ? 1.0 : -1.0;
    }
    free(all);
    free(hi);
    free(lo);
}

static int log2_exact(int x)
{
    int l = 0;
    while ((1 << l) < x)
        l++;
    return (1 << l) == x ? l : -1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char cls = nas_class(argc, argv, "mg", "SWAB");

    int n = cls == 'S' ? 32 : cls == 'W' ? 128 : 256;
    int nit = cls == 'B' ? 20 : 4;
    double verify = cls == 'S' ? 0.5307707005734e-04 : cls == 'W' ? 0.6467329375339e-05
        : cls == 'A'           ? 0.2433365309069e-05
                               : 0.1800564401355e-05;
    const double a[4] = {-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0};
    const double c_swa[4] = {-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0};
    const double c_b[4] = {-3.0 / 17.0, 1.0 / 33.0, -1.0 / 61.0, 0.0};
    const double *c = cls == 'B' ? c_b : c_swa;

    /* The process grid: the specification's split of a power of two over three dimensions. */
    int logp = log2_exact(np);
    lt = log2_exact(n);
    kr = log2_exact(MG_REPLICATED_SIZE);
    if (kr >= lt)
        kr = lt - 1;
    if (logp >= 0) {
        int dx = logp / 3, dy = (logp - dx) / 2;
        pgrid[0] = 1 << dx;
        pgrid[1] = 1 << dy;
        pgrid[2] = np / pgrid[0] / pgrid[1];
    }
    if (logp < 0 || pgrid[2] > (1 << kr)) {
        if (rank == 0)
            fprintf(stderr, "mg: the process count must be a power of two, at most %d for class %c (got %d)\n",
                1 << (3 * kr), cls, np);
        MPI_Finalize();
        return 2;
    }
    coord[0] = rank % pgrid[0];
    coord[1] = rank / pgrid[0] % pgrid[1];
    coord[2] = rank / (pgrid[0] * pgrid[1]);
    for (int d = 0; d < 3; d++) {
        int lo[3] = {coord[0], coord[1], coord[2]}, hi[3] = {coord[0], coord[1], coord[2]};
        lo[d] = (coord[d] + pgrid[d] - 1) % pgrid[d];
        hi[d] = (coord[d] + 1) % pgrid[d];
        left[d] = lo[0] + pgrid[0] * (lo[1] + pgrid[1] * lo[2]);
        right[d] = hi[0] + pgrid[0] * (hi[1] + pgrid[1] * hi[2]);
    }

    /* The levels: distributed blocks above kr, whole grids at and below it. */
    lev = calloc((size_t)lt + 1, sizeof(Level));
    for (int k = 1; k <= lt; k++) {
        Level *L = &lev[k];
        L->n = 1 << k;
        L->distributed = k > kr;
        int m[3];
        for (int d = 0; d < 3; d++)
            m[d] = L->distributed ? L->n / pgrid[d] : L->n;
        L->u = grid_new(m[0], m[1], m[2]);
        L->r = grid_new(m[0], m[1], m[2]);
        L->coarse_view = L->u;
        if (k == kr) {
            /* The finer level interpolates from this process's window of the whole grid. */
            Grid w = L->u;
            for (int d = 0; d < 3; d++)
                w.m[d] = L->n / pgrid[d];
            w.p = &AT(L->u, coord[0] * w.m[0], coord[1] * w.m[1], coord[2] * w.m[2]);
            L->coarse_view = w;
        }
    }
    /* This process's part of level kr travels as a dense block: a window without ghosts. */
    part.m[0] = lev[kr].n / pgrid[0];
    part.m[1] = lev[kr].n / pgrid[1];
    part.m[2] = lev[kr].n / pgrid[2];
    part.s1 = part.m[0];
    part.s2 = (long)part.m[0] * part.m[1];
    part.p = malloc((size_t)part.s2 * part.m[2] * sizeof(double));
    gathered = malloc((size_t)lev[kr].n * lev[kr].n * lev[kr].n * sizeof(double));
    Grid top = lev[lt].u;
    long face_max = (long)(top.m[0] + 2) * (top.m[1] + 2);
    if ((long)(top.m[1] + 2) * (top.m[2] + 2) > face_max)
        face_max = (long)(top.m[1] + 2) * (top.m[2] + 2);
    if ((long)(top.m[0] + 2) * (top.m[2] + 2) > face_max)
        face_max = (long)(top.m[0] + 2) * (top.m[2] + 2);
    send_lo = malloc((size_t)face_max * sizeof(double));
    send_hi = malloc((size_t)face_max * sizeof(double));
    recv_lo = malloc((size_t)face_max * sizeof(double));
    recv_hi = malloc((size_t)face_max * sizeof(double));
    long row_max = n + 4; /* a row of any level, indices -1 .. n + 2 */
    double *scratch = malloc((size_t)(3 * row_max) * sizeof(double));
    if (!part.p || !gathered || !send_lo || !send_hi || !recv_lo || !recv_hi || !scratch) {
        fprintf(stderr, "mg: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    scratch_a = scratch + 1;
    scratch_b = scratch + 1 + row_max;
    scratch_c = scratch + 1 + 2 * row_max;

    int off[3] = {coord[0] * top.m[0], coord[1] * top.m[1], coord[2] * top.m[2]};
    Grid v = grid_new(top.m[0], top.m[1], top.m[2]);
    make_rhs(v, n, off);
    Level *T = &lev[lt];

    /* One untimed iteration touches every array and page, then the timed run starts over. */
    resid(T->u, v, T->r, a, scratch_a, scratch_b, x_whole(T));
    exchange(T, T->r, 1);
    mg3p(v, a, c);
    resid(T->u, v, T->r, a, scratch_a, scratch_b, x_whole(T));
    exchange(T, T->r, 1);
    grid_zero(T->u);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    resid(T->u, v, T->r, a, scratch_a, scratch_b, x_whole(T));
    exchange(T, T->r, 1);
    double rnm2 = norm2(T->r, n);
    for (int it = 0; it < nit; it++) {
        mg3p(v, a, c);
        resid(T->u, v, T->r, a, scratch_a, scratch_b, x_whole(T));
        exchange(T, T->r, 1);
    }
    rnm2 = norm2(T->r, n);
    double elapsed = MPI_Wtime() - t0, t = 0.0;
    MPI_Reduce(&elapsed, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    int verified = nas_close(rnm2, verify, 1e-8);
    if (rank == 0 && !verified)
        fprintf(stderr, "mg: residual norm %.13e, expected %.13e\n", rnm2, verify);
    double mops = t > 0.0 ? 58.0 * nit * (double)n * n * n / t / 1e6 : 0.0;
    int status = nas_report("MG", cls, verified, t, mops);

    for (int k = 1; k <= lt; k++) {
        grid_free(lev[k].u);
        grid_free(lev[k].r);
    }
    grid_free(v);
    free(lev);
    free(part.p);
    free(gathered);
    free(send_lo);
    free(send_hi);
    free(recv_lo);
    free(recv_hi);
    free(scratch);
    MPI_Finalize();
    return status;
}
