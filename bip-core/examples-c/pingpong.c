/*
 * pingpong.c -- BIP from C: ranks 0 and 1 bounce messages of several sizes
 * and alignments back and forth, with blocking and non-blocking calls, and
 * check every byte. Also shows how errors are reported (bad rank, spent
 * request handle, truncated receive).
 *
 * Run as two (or more) ranks of a job, e.g. `mpirun -n 2 bip-c-example`.
 * Rank 0 prints "bip c example: OK" at the end; any mismatch or error is
 * printed and makes the program exit with status 1.
 */
#include "bip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_PING = 1, TAG_PONG = 2, TAG_TRUNC = 3 };

/* Message sizes: small, a page, a long message, 1 MiB, and odd sizes around them. */
static const size_t sizes[] = {8, 1, 4096, 4097, 100000, 100003, 1048576, 1048576 + 3};
/* Offsets of the messages in their buffers, so that most are not aligned. */
static const size_t offsets[] = {0, 1, 3};

#define NSIZES (sizeof sizes / sizeof sizes[0])
#define NOFFSETS (sizeof offsets / sizeof offsets[0])
#define MAXSIZE (1048576 + 3)
#define SLACK 16

static int me = -1;

/* Reports a failed BIP call and returns 1 (the exit status). */
static int fail(const char *what, long code)
{
    fprintf(stderr, "bip c example: rank %d: %s failed: %s (%ld)\n", me, what, bip_strerror((int)code), code);
    return 1;
}

/* Reports a wrong result and returns 1. */
static int mismatch(const char *what, size_t len, size_t off)
{
    fprintf(stderr, "bip c example: rank %d: %s (size %zu, offset %zu)\n", me, what, len, off);
    return 1;
}

/* The content of message `seed` of `len` bytes. */
static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i * 31u + seed * 7u + (i >> 8));
}

/* True if `p` holds the first `len` bytes of message `seed`. */
static int check(const unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)(i * 31u + seed * 7u + (i >> 8)))
            return 0;
    return 1;
}

/* Blocking ping-pong: rank 0 sends, rank 1 echoes. */
static int blocking(unsigned char *sbuf, unsigned char *rbuf, int peer)
{
    for (size_t s = 0; s < NSIZES; s++) {
        for (size_t o = 0; o < NOFFSETS; o++) {
            size_t len = sizes[s], off = offsets[o];
            unsigned seed = (unsigned)(s * NOFFSETS + o);
            int src = -1;
            long n;
            int rc;
            memset(rbuf, 0, MAXSIZE + SLACK);
            if (me == 0) {
                fill(sbuf + off, len, seed);
                if ((rc = bip_send(peer, TAG_PING, sbuf + off, len)) != BIP_OK)
                    return fail("bip_send", rc);
                if ((n = bip_recv(TAG_PONG, rbuf + off, len, &src)) < 0)
                    return fail("bip_recv", n);
            } else {
                if ((n = bip_recv(TAG_PING, rbuf + off, MAXSIZE, &src)) < 0)
                    return fail("bip_recv", n);
                if ((size_t)n == len && (rc = bip_send(peer, TAG_PONG, rbuf + off, (size_t)n)) != BIP_OK)
                    return fail("bip_send", rc);
            }
            if ((size_t)n != len || src != peer)
                return mismatch("blocking: wrong length or source", len, off);
            if (!check(rbuf + off, len, seed))
                return mismatch("blocking: data differ", len, off);
        }
    }
    return 0;
}

/* Non-blocking ping-pong: rank 0 posts its receive and send and waits for
 * both; rank 1 polls with bip_test. */
static int nonblocking(unsigned char *sbuf, unsigned char *rbuf, int peer)
{
    for (size_t s = 0; s < NSIZES; s++) {
        for (size_t o = 0; o < NOFFSETS; o++) {
            size_t len = sizes[s], off = offsets[o];
            unsigned seed = 1000u + (unsigned)(s * NOFFSETS + o);
            long n = -1;
            int src = -1, rc;
            memset(rbuf, 0, MAXSIZE + SLACK);
            if (me == 0) {
                int r, w;
                long sent = -1;
                int to = -1;
                fill(sbuf + off, len, seed);
                if ((r = bip_irecv(TAG_PONG, rbuf + off, len)) < 0)
                    return fail("bip_irecv", r);
                if ((w = bip_isend(peer, TAG_PING, sbuf + off, len)) < 0)
                    return fail("bip_isend", w);
                if ((rc = bip_wait(w, &sent, &to)) != BIP_OK)
                    return fail("bip_wait (send)", rc);
                if ((size_t)sent != len || to != peer)
                    return mismatch("isend: wrong length or destination", len, off);
                /* The handle is spent now. */
                if ((rc = bip_test(w, NULL, NULL)) != BIP_ERR_INVALID_REQUEST)
                    return mismatch("bip_test accepted a spent handle", len, off);
                if ((rc = bip_wait(r, &n, &src)) != BIP_OK)
                    return fail("bip_wait (receive)", rc);
            } else {
                int r, w;
                if ((r = bip_irecv(TAG_PING, rbuf + off, MAXSIZE)) < 0)
                    return fail("bip_irecv", r);
                while ((rc = bip_test(r, &n, &src)) == 0) {
                    /* Other work could go here. */
                }
                if (rc != 1)
                    return fail("bip_test (receive)", rc);
                if ((size_t)n != len)
                    return mismatch("irecv: wrong length", len, off);
                if ((w = bip_isend(peer, TAG_PONG, rbuf + off, (size_t)n)) < 0)
                    return fail("bip_isend", w);
                while ((rc = bip_test(w, NULL, NULL)) == 0) {
                }
                if (rc != 1)
                    return fail("bip_test (send)", rc);
            }
            if ((size_t)n != len || src != peer)
                return mismatch("non-blocking: wrong length or source", len, off);
            if (!check(rbuf + off, len, seed))
                return mismatch("non-blocking: data differ", len, off);
        }
    }
    return 0;
}

/* Errors: bad arguments, and messages longer than the receive buffer (one
 * short, one long), whose length and source are still reported. */
static int errors(unsigned char *sbuf, unsigned char *rbuf, int peer)
{
    enum { SHORT = 100, SHORT_CAP = 10, LONG = 100000, LONG_CAP = 50001 };
    int rc;
    if ((rc = bip_send(bip_numnodes(), TAG_PING, sbuf, 1)) != BIP_ERR_BAD_RANK)
        return mismatch("bip_send to a rank out of range was not refused", 1, 0);
    if ((rc = bip_send(peer, -1, sbuf, 1)) != BIP_ERR_BAD_TAG)
        return mismatch("bip_send with a negative tag was not refused", 1, 0);
    if ((rc = bip_isend(peer, TAG_PING, NULL, 1)) != BIP_ERR_INVALID_ARG)
        return mismatch("bip_isend of a NULL buffer was not refused", 1, 0);
    if ((rc = bip_wait(-1, NULL, NULL)) != BIP_ERR_INVALID_REQUEST)
        return mismatch("bip_wait of a negative handle was not refused", 0, 0);

    if (me == 1) {
        fill(sbuf, LONG, 7);
        if ((rc = bip_send(peer, TAG_TRUNC, sbuf, SHORT)) != BIP_OK)
            return fail("bip_send (short, to be truncated)", rc);
        if ((rc = bip_send(peer, TAG_TRUNC, sbuf + 1, LONG)) != BIP_OK)
            return fail("bip_send (long, to be truncated)", rc);
        /* An empty message, without a buffer. */
        if ((rc = bip_send(peer, TAG_TRUNC, NULL, 0)) != BIP_OK)
            return fail("bip_send (empty)", rc);
    } else {
        int src = -1, r;
        long n;
        memset(rbuf, 0xee, MAXSIZE + SLACK);
        n = bip_recv(TAG_TRUNC, rbuf, SHORT_CAP, &src);
        if (n < 0 && n != BIP_ERR_TRUNCATED)
            return fail("bip_recv (short, truncated)", n);
        if (n != BIP_ERR_TRUNCATED || src != peer)
            return mismatch("short message: truncation not reported", SHORT, 0);
        if (!check(rbuf, SHORT_CAP, 7) || rbuf[SHORT_CAP] != 0xee)
            return mismatch("short message: truncated data wrong", SHORT, 0);

        memset(rbuf, 0xee, MAXSIZE + SLACK);
        src = -1;
        n = -1;
        if ((r = bip_irecv(TAG_TRUNC, rbuf, LONG_CAP)) < 0)
            return fail("bip_irecv", r);
        if ((rc = bip_wait(r, &n, &src)) != BIP_ERR_TRUNCATED && rc < 0)
            return fail("bip_wait (long, truncated)", rc);
        if (rc != BIP_ERR_TRUNCATED || n != LONG || src != peer)
            return mismatch("long message: truncation not reported with its length and source", LONG, 1);
        fill(sbuf, LONG + 1, 7);
        if (memcmp(rbuf, sbuf + 1, LONG_CAP) != 0 || rbuf[LONG_CAP] != 0xee)
            return mismatch("long message: truncated data wrong", LONG, 1);
        if ((rc = bip_wait(r, NULL, NULL)) != BIP_ERR_INVALID_REQUEST)
            return mismatch("a request that failed was not spent", LONG, 1);

        if ((n = bip_recv(TAG_TRUNC, NULL, 0, &src)) != 0 || src != peer)
            return mismatch("empty message", 0, 0);
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned char *sbuf, *rbuf;
    int rc, n, peer, status = 0;
    (void)argc;
    (void)argv;

    if ((rc = bip_init()) != BIP_OK)
        return fail("bip_init", rc);
    me = bip_mynode();
    n = bip_numnodes();
    if (me < 0 || n < 0)
        return fail("bip_mynode/bip_numnodes", me < 0 ? me : n);
    if (n < 2) {
        fprintf(stderr, "bip c example: needs at least 2 processes, got %d\n", n);
        return 1;
    }

    if (me < 2) {
        peer = 1 - me;
        sbuf = malloc(MAXSIZE + SLACK);
        rbuf = malloc(MAXSIZE + SLACK);
        if (sbuf == NULL || rbuf == NULL) {
            fprintf(stderr, "bip c example: out of memory\n");
            return 1;
        }
        status = blocking(sbuf, rbuf, peer);
        if (status == 0)
            status = nonblocking(sbuf, rbuf, peer);
        if (status == 0)
            status = errors(sbuf, rbuf, peer);
        /* Finalize before freeing: no request may still use the buffers. */
        if ((rc = bip_finalize()) != BIP_OK && status == 0)
            status = fail("bip_finalize", rc);
        free(sbuf);
        free(rbuf);
    } else if ((rc = bip_finalize()) != BIP_OK) {
        status = fail("bip_finalize", rc);
    }

    if (status == 0 && bip_mynode() != BIP_ERR_NOT_INITIALIZED)
        status = mismatch("BIP still usable after bip_finalize", 0, 0);
    if (status == 0 && me == 0) {
        printf("bip c example: OK\n");
        fflush(stdout);
    }
    return status;
}
