/*
 * fm.h -- the C interface of Fast Messages 2.x (and the FM 1.x calls).
 *
 * A job is `n` processes numbered 0..n-1, started together by a job launcher
 * (mpirun, or nic_model::Job). A sender composes a message from any number
 * of pieces of any size; the receiver's handler, registered under the same id
 * in every process, reads it with FM_receive calls of any sizes, which need
 * not match the sender's pieces:
 *
 *     FM_stream *s = FM_begin_message(dest, sizeof hdr + len, MY_HANDLER);
 *     FM_send_piece(s, &hdr, sizeof hdr);
 *     FM_send_piece(s, data, len);
 *     FM_end_message(s);
 *
 *     int my_handler(FM_stream *s, unsigned sender)
 *     {
 *         struct header hdr;
 *         FM_receive(&hdr, s, sizeof hdr);
 *         FM_receive(find_buffer(&hdr), s, hdr.len);
 *         return FM_CONTINUE;
 *     }
 *
 * Handlers run only inside FM calls: FM_extract, and also the sending calls
 * (FM_send_piece, FM_end_message, FM_send, FM_send_4), which keep extracting
 * while they wait, so that processes flooding each other cannot deadlock.
 *
 * A handler starts as soon as the first packet of its message arrives and
 * runs on a stack of its own (unless the message fits one packet). An FM_receive for data that has not arrived
 * yet deschedules the handler: the FM call that ran it goes on (other
 * handlers run, FM_extract may return) and the handler resumes inside a later
 * FM call, when the data is there, exactly where it stopped. Its local
 * variables and buffers stay valid meanwhile. A long piece sent with
 * FM_send_piece is moved straight into the buffer named by the FM_receive
 * that asks for it. Handler stacks are 256 KiB (FM_STACK_BYTES overrides);
 * keep large arrays off them.
 *
 * Inside a handler only FM_receive, FM_nodeid, FM_numnodes, FM_last_error
 * and FM_strerror may be called: other calls return FM_ERR_IN_HANDLER.
 * Handlers may not send.
 *
 * Errors: calls that return `int` return FM_OK or a negative FM_ERR_* code.
 * Every call except FM_last_error and FM_strerror also records its outcome
 * (FM_OK on success), which FM_last_error returns; it is the only way to
 * learn why FM_begin_message returned NULL or why FM_receive or FM_extract
 * returned 0.
 *
 * Threads: FM belongs to the thread that called FM_initialize; calls from
 * other threads return FM_ERR_WRONG_THREAD. Do not use bip.h in the same
 * process: FM runs its own BIP endpoint.
 *
 * Environment: as bip.h (BIP_EAGER_MAX, BIP_SHORT_LIMIT, BIP_TAGS,
 * MPI_NIC_DMA=off), plus FM_BULK_MIN (pieces at least this long move by
 * single copy, default 32 KiB) and FM_STACK_BYTES (handler stack size).
 */
#ifndef FM_H
#define FM_H

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Types --------------------------------------------------------------- */

/**
 * A message being sent (from FM_begin_message) or being received (given to
 * a handler). Opaque. A send stream is valid until FM_end_message; a receive
 * stream only inside the handler call it was given to.
 */
typedef struct FM_stream FM_stream;

/**
 * An FM 2.x handler: reads the message from `stream` with FM_receive, and
 * returns FM_CONTINUE (other values are reserved and currently treated the
 * same). `sender` is the sending rank. What the handler does not receive of
 * its message before returning is discarded.
 */
typedef int (*FM_handler)(FM_stream *stream, unsigned sender);

/** What a handler returns. */
#define FM_CONTINUE 0

/**
 * An FM 1.x handler: runs once the whole message has arrived, with the
 * message in `buf` (`size` bytes; `buf` is never NULL). The buffer is valid
 * only during the call and must not be modified.
 */
typedef void (*FM1_handler)(void *buf, unsigned long size, unsigned sender);

/* ---- Error codes --------------------------------------------------------- */

/** Success. */
#define FM_OK 0
/** FM is not initialized (FM_initialize not called, or failed), or was
 *  finalized. */
#define FM_ERR_NOT_INITIALIZED (-1)
/** FM_initialize was already called successfully in this process (FM
 *  cannot be re-initialized, not even after FM_finalize). */
#define FM_ERR_ALREADY_INITIALIZED (-2)
/** The process was not started by a job launcher: there is no fabric. */
#define FM_ERR_NOT_IN_JOB (-3)
/** A destination rank outside 0..FM_numnodes()-1. */
#define FM_ERR_BAD_RANK (-4)
/** A handler id out of range (0..2^24-1), or a NULL handler. */
#define FM_ERR_BAD_HANDLER (-5)
/** A message arrived for a handler id not registered in this process. */
#define FM_ERR_UNKNOWN_HANDLER (-6)
/** A message to this destination is already open: end it first. */
#define FM_ERR_STREAM_OPEN (-7)
/** The pieces sent do not add up to the size given to FM_begin_message
 *  (too many bytes at FM_send_piece, too few at FM_end_message). */
#define FM_ERR_SIZE_MISMATCH (-8)
/** NULL or invalid stream: not one FM gave out, already ended, a receive
 *  stream given to a sending call (or the reverse), or a receive stream used
 *  outside the handler call it was given to. */
#define FM_ERR_BAD_STREAM (-9)
/** A call that handlers may not make was made inside a handler. */
#define FM_ERR_IN_HANDLER (-10)
/** A peer process died, finalized or stopped answering while needed. */
#define FM_ERR_PEER_GONE (-11)
/** An invalid argument: a NULL buffer with a non-zero length, or a length
 *  too large for the address space. */
#define FM_ERR_INVALID_ARG (-12)
/** A malformed FM packet arrived (a bug, or a peer not speaking FM). */
#define FM_ERR_PROTOCOL (-13)
/** FM was initialized on another thread of this process. */
#define FM_ERR_WRONG_THREAD (-14)
/** Any other failure (operating-system error, bad configuration, internal
 *  error). After an internal error FM is unusable. */
#define FM_ERR_OTHER (-15)

/* ---- Setup --------------------------------------------------------------- */

/**
 * Attaches this process to its job and starts FM. Must be called once,
 * before any other call except FM_last_error and FM_strerror.
 * Configuration comes from the environment (see above). On failure also
 * prints one clear sentence saying why to stderr (once per process).
 * Returns FM_OK or a negative error code (FM_ERR_NOT_IN_JOB when not started
 * by a job launcher).
 */
int FM_initialize(void);

/** This process's rank, 0..FM_numnodes()-1, or a negative error code. */
int FM_nodeid(void);

/** The number of processes in the job, or a negative error code. */
int FM_numnodes(void);

/**
 * Registers `h` as FM 2.x handler `id` (0..2^24-1), replacing any earlier
 * one. Messages name handlers by id, so every process that receives them
 * must register the same handlers under the same ids, before the first such
 * message can arrive. FM 2.x and FM 1.x handler ids are separate.
 */
int FM_set_handler(unsigned id, FM_handler h);

/**
 * Frees FM's resources, including send streams not ended; handlers still
 * descheduled are abandoned, never resumed, and messages still arriving are
 * not handled any more. Then waits until every packet sent has been
 * delivered and detaches from the job, so that this process's exit is not
 * taken for a crash. Afterwards every call but FM_last_error and
 * FM_strerror returns FM_ERR_NOT_INITIALIZED. Returns FM_OK or a negative
 * error code (FM_ERR_PEER_GONE if a peer this process still owed data died).
 */
int FM_finalize(void);

/* ---- FM 2.x: sending ------------------------------------------------------- */

/**
 * Opens a message of exactly `size` bytes to `dest`, for its handler
 * `handler`. At most one message per destination may be open at a time.
 * Returns the stream, or NULL on error (see FM_last_error).
 */
FM_stream *FM_begin_message(unsigned dest, unsigned long size, unsigned handler);

/**
 * Appends `bytes` bytes at `buf` to the message (`buf` may be NULL only if
 * `bytes` is 0); returns when `buf` may be reused. Any number of pieces of
 * any sizes. Returns FM_OK or a negative error code; FM_ERR_SIZE_MISMATCH
 * if the piece would exceed the message's size (nothing is sent then).
 */
int FM_send_piece(FM_stream *stream, const void *buf, unsigned long bytes);

/**
 * Ends the message and frees the stream, whatever the outcome (unless the
 * stream is invalid or the call is refused inside a handler). Returns FM_OK
 * or a negative error code; FM_ERR_SIZE_MISMATCH if fewer bytes were sent
 * than announced: the message is then completed with zero bytes, so that
 * the receiver's handler finishes and later messages to `dest` go through.
 */
int FM_end_message(FM_stream *stream);

/* ---- FM 2.x: receiving ----------------------------------------------------- */

/**
 * Inside a handler, on the stream it was given: receives the next `bytes`
 * bytes of the message into `buf` (`buf` may be NULL only if `bytes` is 0).
 * Returns the number of bytes received: `bytes`, or fewer only if the
 * message ends first. If they have not all arrived, the handler is
 * descheduled here and resumed when they have. Returns 0 on error, with
 * FM_last_error saying why (FM_ERR_BAD_STREAM outside the handler).
 */
unsigned long FM_receive(void *buf, FM_stream *stream, unsigned long bytes);

/**
 * Processes arrived messages, running (or resuming) their handlers, until
 * about `max_bytes` bytes have been processed (rounded up to a whole packet;
 * a long piece counts whole) or nothing is left; never waits. `~0UL` means
 * no limit. Returns the number of bytes processed; 0 on error, with
 * FM_last_error saying why.
 */
unsigned long FM_extract(unsigned long max_bytes);

/* ---- FM 1.x ----------------------------------------------------------------- */

/** Registers `h` as FM 1.x handler `id` (0..2^24-1); as FM_set_handler. */
int FM_set_handler1(unsigned id, FM1_handler h);

/**
 * Sends the `size` bytes at `buf` as one message to FM 1.x handler `handler`
 * of `dest` (`buf` may be NULL only if `size` is 0). Returns FM_OK or a
 * negative error code.
 */
int FM_send(unsigned dest, unsigned handler, const void *buf, unsigned long size);

/**
 * Sends four words to FM 1.x handler `handler` of `dest`. The handler gets
 * them as 16 bytes, each word in little-endian byte order.
 */
int FM_send_4(unsigned dest, unsigned handler, unsigned i0, unsigned i1, unsigned i2, unsigned i3);

/* ---- Errors ----------------------------------------------------------------- */

/** The outcome of this thread's most recent FM call (FM_OK after success). */
int FM_last_error(void);

/**
 * A short English description of error code `code` (FM_OK included), as a
 * static string; never NULL. Unknown codes get a generic description.
 */
const char *FM_strerror(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FM_H */
