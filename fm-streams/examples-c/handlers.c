/*
 * handlers.c -- FM 2.x from C: a handler that reads a message's header, then
 * receives the payload straight into a buffer it chooses from that header
 * (the paper's example: `FM_receive(&hdr, ...)`, then
 * `FM_receive(findBuf(hdr.len), ...)`), being descheduled inside FM_receive
 * while the rest of the message is still on its way.
 *
 * Rank 0 sends rank 1 messages made of a header { len, seq }, sent as one
 * piece, and a payload sent in several pieces of odd sizes (0 B to 1 MiB+3),
 * then one FM 1.x message. Rank 1 extracts until it has received and checked
 * them all (at first with a small budget, to show a handler descheduled
 * between two FM_extract calls), then acknowledges with FM_send_4, which rank
 * 0 receives in an FM 1.x handler; rank 0 says goodbye the same way, so
 * that rank 1 does not finalize while rank 0 may still be completing its
 * last send to it. Also shows how misuse is reported.
 *
 * Run as two (or more) ranks of a job, e.g. `mpirun -n 2 fm-c-example`.
 * Rank 0 prints "fm c example: OK" at the end; any mismatch or error is
 * printed and makes the program exit with status 1.
 */
#include "fm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Handler ids (FM 2.x and FM 1.x ids are separate tables). */
enum { H_DATA = 1, H_HELLO = 2, H_ACK = 3, H_BYE = 4, H_JUNK = 5 };

/* The header every data message starts with. */
struct header {
    unsigned len; /* payload bytes after the header */
    unsigned seq; /* message number, 0..NMSG-1 */
};

/* How rank 0 cuts each payload into pieces. Message 0 is long, so that its
 * handler has to wait for most of it. */
#define MAXPIECES 6
static const struct plan {
    unsigned npieces;
    unsigned long pieces[MAXPIECES];
} plans[] = {
    {5, {1, 4000, 100000, 1048576 + 3, 0}},
    {1, {0}},
    {3, {7, 0, 5}},
    {2, {4000, 1}},
    {3, {100000, 3, 40000}},
    {4, {1048576 + 3, 1, 4000, 1}},
};
#define NMSG (sizeof plans / sizeof plans[0])
#define MAXPAYLOAD (2 * 1048576)

/* The FM 1.x message rank 0 sends after the data messages. */
#define HELLO_LEN 100003u
#define HELLO_SEED 99u
/* The last word of the acknowledgement. */
#define ACK_MAGIC 0xf00du
/* How long to wait for the peer before giving up, in seconds. */
#define DEADLINE 60

static int me = -1;

/* Reports a failed FM call and returns 1 (the exit status). */
static int fail(const char *what, int code)
{
    fprintf(stderr, "fm c example: rank %d: %s failed: %s (%d)\n", me, what, FM_strerror(code), code);
    return 1;
}

/* Reports a wrong result and returns 1. */
static int mismatch(const char *what)
{
    fprintf(stderr, "fm c example: rank %d: %s\n", me, what);
    return 1;
}

/* Checks that a call failed with `want`. */
static int expect_error(const char *what, int got, int want)
{
    if (got == want)
        return 0;
    fprintf(stderr, "fm c example: rank %d: %s: expected %s (%d), got %s (%d)\n", me, what, FM_strerror(want), want,
            FM_strerror(got), got);
    return 1;
}

/* The content of byte `i` of message `seed`. */
static unsigned char pattern(size_t i, unsigned seed)
{
    return (unsigned char)(i * 131u + seed * 17u + (i >> 9));
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = pattern(i, seed);
}

static int check(const unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != pattern(i, seed))
            return 0;
    return 1;
}

static unsigned long payload_len(unsigned seq)
{
    unsigned long total = 0;
    for (unsigned k = 0; k < plans[seq].npieces; k++)
        total += plans[seq].pieces[k];
    return total;
}

static int past_deadline(time_t start)
{
    return time(NULL) - start > DEADLINE;
}

/* ---- Rank 1: the receiving side ------------------------------------------ */

/* Small payloads go to a pool of little buffers, large ones to a buffer
 * allocated for them (the paper's `littlebuf++` and `findBuf(msglen)`). */
#define LITTLE 4096
#define NLITTLE 4
static unsigned char littlebuf[NLITTLE][LITTLE];
static unsigned next_little;

static unsigned counted;             /* data messages received and checked */
static unsigned long bytes_counted;  /* their payload bytes */
static unsigned started, finished;   /* data handlers started and returned */
static int hello_ok;                 /* the FM 1.x message arrived intact */
static int bye;                      /* rank 0 is done */
static int handler_failed;           /* a handler found an error */

/* Handlers cannot return errors: they record the first one here. */
static void handler_error(const char *what, int code)
{
    if (handler_failed)
        return;
    handler_failed = 1;
    if (code != FM_OK)
        fail(what, code);
    else
        mismatch(what);
}

static unsigned char *buffer_for(const struct header *h, int *allocated)
{
    *allocated = h->len > LITTLE;
    if (*allocated)
        return malloc(h->len);
    return littlebuf[next_little++ % NLITTLE];
}

/* Inside a handler only receiving is allowed; other calls are refused. */
static void check_handler_rules(FM_stream *stream)
{
    unsigned char byte = 0;
    if (FM_nodeid() != me)
        handler_error("FM_nodeid inside a handler", FM_last_error());
    if (FM_extract(~0UL) != 0 || FM_last_error() != FM_ERR_IN_HANDLER)
        handler_error("FM_extract inside a handler was not refused", FM_OK);
    if (FM_send_piece(stream, &byte, 1) != FM_ERR_IN_HANDLER)
        handler_error("FM_send_piece inside a handler was not refused", FM_OK);
}

static int data_handler(FM_stream *stream, unsigned sender)
{
    struct header hdr;
    unsigned char *buf;
    unsigned long got;
    int allocated;

    started++;
    /* Get the header... */
    if ((got = FM_receive(&hdr, stream, sizeof hdr)) != sizeof hdr) {
        handler_error("FM_receive (header)", FM_last_error());
        finished++;
        return FM_CONTINUE;
    }
    if (sender != 0 || hdr.seq >= NMSG || hdr.len != payload_len(hdr.seq)) {
        handler_error("data handler: unexpected sender or header", FM_OK);
        finished++;
        return FM_CONTINUE;
    }
    if (hdr.seq == 0)
        check_handler_rules(stream);
    /* ...choose where the payload goes from it, and receive it there. Most
     * of it has not arrived yet: this is where the handler is descheduled. */
    buf = buffer_for(&hdr, &allocated);
    if (buf == NULL) {
        handler_error("data handler: out of memory", FM_OK);
        finished++;
        return FM_CONTINUE;
    }
    got = FM_receive(buf, stream, hdr.len);
    if (got != hdr.len)
        handler_error("FM_receive (payload)", FM_last_error());
    else if (!check(buf, hdr.len, hdr.seq))
        handler_error("data handler: payload differs", FM_OK);
    else {
        counted++;
        bytes_counted += hdr.len;
    }
    if (allocated)
        free(buf);
    finished++;
    return FM_CONTINUE;
}

static void hello_handler(void *buf, unsigned long size, unsigned sender)
{
    if (sender != 0 || size != HELLO_LEN || !check(buf, size, HELLO_SEED))
        handler_error("FM 1.x handler: wrong message", FM_OK);
    else
        hello_ok = 1;
}

/* Takes what it is given of the message rank 0 ends too early, and drops it. */
static int junk_handler(FM_stream *stream, unsigned sender)
{
    unsigned char sink[16];
    (void)sender;
    FM_receive(sink, stream, sizeof sink);
    return FM_CONTINUE;
}

static void bye_handler(void *buf, unsigned long size, unsigned sender)
{
    (void)buf;
    if (sender != 0 || size != 16)
        handler_error("FM 1.x goodbye handler: wrong message", FM_OK);
    bye = 1;
}

static int receiver(void)
{
    time_t start = time(NULL);
    int descheduled = 0;
    int rc;

    /* Paced: at most about 1 KiB per call. The first packet of message 0 is
     * more than that, so the call that starts its handler returns while the
     * handler waits, descheduled inside its second FM_receive. */
    while (finished == 0 && !handler_failed) {
        if (FM_extract(1024) == 0 && (rc = FM_last_error()) != FM_OK)
            return fail("FM_extract(1024)", rc);
        if (started > finished)
            descheduled = 1;
        if (past_deadline(start))
            return mismatch("timed out waiting for the first message");
    }
    /* Then everything that comes. */
    while ((counted < NMSG || !hello_ok) && !handler_failed) {
        if (FM_extract(~0UL) == 0 && (rc = FM_last_error()) != FM_OK)
            return fail("FM_extract", rc);
        if (past_deadline(start))
            return mismatch("timed out waiting for the messages");
    }
    if (handler_failed)
        return 1;
    if (!descheduled)
        return mismatch("the handler of the long message was never seen descheduled");
    if ((rc = FM_send_4(0, H_ACK, counted, (unsigned)bytes_counted, (unsigned)hello_ok, ACK_MAGIC)) != FM_OK)
        return fail("FM_send_4", rc);
    while (!bye && !handler_failed) {
        if (FM_extract(~0UL) == 0 && (rc = FM_last_error()) != FM_OK)
            return fail("FM_extract", rc);
        if (past_deadline(start))
            return mismatch("timed out waiting for the goodbye");
    }
    return handler_failed;
}

/* ---- Rank 0: the sending side -------------------------------------------- */

static unsigned ack[4];
static int acked, ack_bad;

static void ack_handler(void *buf, unsigned long size, unsigned sender)
{
    const unsigned char *b = buf;
    acked = 1;
    if (sender != 1 || size != 16) {
        ack_bad = 1;
        return;
    }
    /* FM_send_4's words arrive little-endian. */
    for (int w = 0; w < 4; w++)
        ack[w] = (unsigned)b[4 * w] | (unsigned)b[4 * w + 1] << 8 | (unsigned)b[4 * w + 2] << 16 |
                 (unsigned)b[4 * w + 3] << 24;
}

/* Misuse is refused with an error code, and changes nothing. */
static int errors(void)
{
    unsigned char buf[16] = {0};
    FM_stream *s;
    int bad = 0;

    s = FM_begin_message((unsigned)FM_numnodes(), 1, H_DATA);
    bad |= expect_error("FM_begin_message to a rank out of range", s ? FM_OK : FM_last_error(), FM_ERR_BAD_RANK);
    s = FM_begin_message(1, 1, 1u << 24);
    bad |= expect_error("FM_begin_message for a handler id out of range", s ? FM_OK : FM_last_error(),
                        FM_ERR_BAD_HANDLER);
    bad |= expect_error("FM_send_piece on NULL", FM_send_piece(NULL, buf, 1), FM_ERR_BAD_STREAM);
    bad |= expect_error("FM_end_message on NULL", FM_end_message(NULL), FM_ERR_BAD_STREAM);
    bad |= expect_error("FM_send of a NULL buffer", FM_send(1, H_HELLO, NULL, 5), FM_ERR_INVALID_ARG);
    bad |= expect_error("FM_set_handler of NULL", FM_set_handler(7, NULL), FM_ERR_BAD_HANDLER);
    if (bad)
        return 1;

    /* A message of 10 bytes, ended with none sent: an error, and whatever
     * reaches rank 1 of it goes to a handler that discards it. */
    if ((s = FM_begin_message(1, 10, H_JUNK)) == NULL)
        return fail("FM_begin_message", FM_last_error());
    bad |= expect_error("a second FM_begin_message to the same rank",
                        FM_begin_message(1, 1, H_DATA) ? FM_OK : FM_last_error(), FM_ERR_STREAM_OPEN);
    bad |= expect_error("FM_receive on a send stream",
                        FM_receive(buf, s, 1) != 0 ? FM_OK : FM_last_error(), FM_ERR_BAD_STREAM);
    bad |= expect_error("FM_send_piece beyond the message's size", FM_send_piece(s, buf, 11),
                        FM_ERR_SIZE_MISMATCH);
    bad |= expect_error("FM_end_message of a short message", FM_end_message(s), FM_ERR_SIZE_MISMATCH);
    return bad;
}

static int sender(void)
{
    unsigned char *payload = malloc(MAXPAYLOAD);
    time_t start;
    int rc;

    if (payload == NULL)
        return mismatch("out of memory");
    for (unsigned seq = 0; seq < NMSG; seq++) {
        struct header hdr;
        unsigned long len = payload_len(seq), at = 0;
        FM_stream *s;

        hdr.len = (unsigned)len;
        hdr.seq = seq;
        fill(payload, len, seq);
        if ((s = FM_begin_message(1, sizeof hdr + len, H_DATA)) == NULL) {
            free(payload);
            return fail("FM_begin_message", FM_last_error());
        }
        rc = FM_send_piece(s, &hdr, sizeof hdr);
        for (unsigned k = 0; rc == FM_OK && k < plans[seq].npieces; k++) {
            rc = FM_send_piece(s, payload + at, plans[seq].pieces[k]);
            at += plans[seq].pieces[k];
        }
        if (rc != FM_OK) {
            FM_end_message(s);
            free(payload);
            return fail("FM_send_piece", rc);
        }
        if ((rc = FM_end_message(s)) != FM_OK) {
            free(payload);
            return fail("FM_end_message", rc);
        }
    }
    fill(payload, HELLO_LEN, HELLO_SEED);
    rc = FM_send(1, H_HELLO, payload, HELLO_LEN);
    free(payload);
    if (rc != FM_OK)
        return fail("FM_send", rc);

    /* Wait for the acknowledgement, a little at a time. */
    start = time(NULL);
    while (!acked) {
        if (FM_extract(4096) == 0 && (rc = FM_last_error()) != FM_OK)
            return fail("FM_extract(4096)", rc);
        if (past_deadline(start))
            return mismatch("timed out waiting for the acknowledgement");
    }
    if (ack_bad || ack[0] != NMSG || ack[2] != 1 || ack[3] != ACK_MAGIC)
        return mismatch("wrong acknowledgement");
    {
        unsigned long total = 0;
        for (unsigned seq = 0; seq < NMSG; seq++)
            total += payload_len(seq);
        if (ack[1] != (unsigned)total)
            return mismatch("acknowledged byte count differs");
    }
    if ((rc = FM_send_4(1, H_BYE, 0, 0, 0, 0)) != FM_OK)
        return fail("FM_send_4", rc);
    return 0;
}

int main(int argc, char **argv)
{
    int rc, n, status = 0;
    (void)argc;
    (void)argv;

    if ((rc = FM_initialize()) != FM_OK)
        return fail("FM_initialize", rc);
    me = FM_nodeid();
    n = FM_numnodes();
    if (me < 0 || n < 0)
        return fail("FM_nodeid/FM_numnodes", me < 0 ? me : n);
    if (n < 2) {
        fprintf(stderr, "fm c example: needs at least 2 processes, got %d\n", n);
        return 1;
    }

    /* Handlers first: the peer's messages may arrive in our first FM call. */
    if (me == 0) {
        if ((rc = FM_set_handler1(H_ACK, ack_handler)) != FM_OK)
            return fail("FM_set_handler1", rc);
        status = errors();
        if (status == 0)
            status = sender();
    } else if (me == 1) {
        if ((rc = FM_set_handler(H_DATA, data_handler)) != FM_OK ||
            (rc = FM_set_handler(H_JUNK, junk_handler)) != FM_OK)
            return fail("FM_set_handler", rc);
        if ((rc = FM_set_handler1(H_HELLO, hello_handler)) != FM_OK ||
            (rc = FM_set_handler1(H_BYE, bye_handler)) != FM_OK)
            return fail("FM_set_handler1", rc);
        status = receiver();
    }

    if ((rc = FM_finalize()) != FM_OK && status == 0)
        status = fail("FM_finalize", rc);
    if (status == 0 && FM_nodeid() != FM_ERR_NOT_INITIALIZED)
        status = mismatch("FM still usable after FM_finalize");
    if (status == 0 && me == 0) {
        printf("fm c example: OK\n");
        fflush(stdout);
    }
    return status;
}
