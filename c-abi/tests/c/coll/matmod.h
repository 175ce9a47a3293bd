/*
 * matmod.h: the non-commutative reduction the collective tests share: 2x2 integer matrices
 * multiplied modulo a prime (associative, not commutative), and each rank's matrices, so that
 * a reduction's result can be checked against M_0 * M_1 * ... in rank order.
 */
#ifndef MATMOD_H
#define MATMOD_H

#define P 10007

typedef struct {
    int a, b, c, d;
} mat;

static mat mmul(mat x, mat y)
{
    mat r;
    r.a = (int)(((long)x.a * y.a + (long)x.b * y.c) % P);
    r.b = (int)(((long)x.a * y.b + (long)x.b * y.d) % P);
    r.c = (int)(((long)x.c * y.a + (long)x.d * y.c) % P);
    r.d = (int)(((long)x.c * y.b + (long)x.d * y.d) % P);
    return r;
}

/* Rank r's matrix for element j. */
static mat mine(int r, int j)
{
    mat m;
    m.a = (r * 3 + j + 1) % P;
    m.b = (r + 2 * j + 5) % P;
    m.c = (r * r + j + 7) % P;
    m.d = (r + j * j + 11) % P;
    return m;
}

/* M_lo * ... * M_{hi-1} for element j. */
static mat product(int lo, int hi, int j)
{
    mat r = {1, 0, 0, 1};
    for (int i = lo; i < hi; i++)
        r = mmul(r, mine(i, j));
    return r;
}

#endif
