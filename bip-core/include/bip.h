/*
 * bip.h -- the C interface of BIP, the Basic Interface for Parallelism.
 *
 * A job is `n` processes numbered 0..n-1, started together by a job launcher
 * (mpirun, or nic_model::Job). A message goes to one receive queue, named by a
 * tag, of its destination; messages are received in order within a queue and
 * in any order across queues. Short messages are buffered at the receiver;
 * long ones move in one copy from the sender's buffer to the receiver's once a
 * receive is posted. Buffers may have any alignment and any number of sends
 * and receives may be outstanding.
 *
 * Typical use:
 *
 *     if (bip_init() != BIP_OK) return 1;
 *     if (bip_mynode() == 0) bip_send(1, 0, buf, len);
 *     else { int src; long n = bip_recv(0, buf, sizeof buf, &src); }
 *     bip_finalize();
 *
 * Errors are negative return values (the BIP_ERR_* codes below); bip_strerror
 * names them. A call that fails because of a bad argument changes nothing.
 *
 * Threads: BIP is not thread-safe beyond one thread at a time. Calls may come
 * from any thread, but are serialized: a call made while another thread is
 * inside BIP (for instance blocked in bip_wait) waits until that call returns.
 *
 * Environment: BIP_EAGER_MAX (largest short message, bytes), BIP_SHORT_LIMIT
 * (bytes of short messages buffered per receiver), BIP_TAGS (number of
 * receive queues, default 4096); MPI_NIC_DMA=off turns single copy off (long
 * messages are then pushed in packets).
 */
#ifndef BIP_H
#define BIP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Error codes ------------------------------------------------------- */

/** Success. */
#define BIP_OK 0
/** BIP is not initialized (bip_init not called, or failed), or was finalized. */
#define BIP_ERR_NOT_INITIALIZED (-1)
/** bip_init was already called successfully (BIP cannot be re-initialized,
 *  not even after bip_finalize). */
#define BIP_ERR_ALREADY_INITIALIZED (-2)
/** The process was not started by a job launcher: there is no fabric. */
#define BIP_ERR_NOT_IN_JOB (-3)
/** A destination rank outside 0..bip_numnodes()-1. */
#define BIP_ERR_BAD_RANK (-4)
/** A tag outside 0..BIP_TAGS-1. */
#define BIP_ERR_BAD_TAG (-5)
/** The message was longer than the receive buffer; the buffer was filled
 *  and the rest of the message dropped. Length and source are still
 *  reported where the call reports them. */
#define BIP_ERR_TRUNCATED (-6)
/** A peer process died or finalized while an operation still needed it. */
#define BIP_ERR_PEER_GONE (-7)
/** A request handle that is not valid, or was already completed. */
#define BIP_ERR_INVALID_REQUEST (-8)
/** Too many requests outstanding at once; complete some first. */
#define BIP_ERR_TOO_MANY_REQUESTS (-9)
/** Over an unreliable link, a peer stopped acknowledging packets. */
#define BIP_ERR_LINK_FAILED (-10)
/** Any other failure (operating-system error, bad configuration, internal
 *  error). */
#define BIP_ERR_OTHER (-11)
/** An invalid argument: a NULL buffer with a non-zero length, or a length
 *  too large for the address space. */
#define BIP_ERR_INVALID_ARG (-12)

/* ---- Setup --------------------------------------------------------------- */

/**
 * Attaches this process to its job and starts BIP. Must be called once,
 * before any other call except bip_strerror. Configuration comes from the
 * environment (see above). On failure also prints one clear sentence saying
 * why to stderr (once per process). Returns BIP_OK or a negative error code
 * (BIP_ERR_NOT_IN_JOB when not started by a job launcher).
 */
int bip_init(void);

/** This process's rank, 0..bip_numnodes()-1, or a negative error code. */
int bip_mynode(void);

/** The number of processes in the job, or a negative error code. */
int bip_numnodes(void);

/**
 * Waits until every send has completed and every packet has been delivered,
 * then detaches from the job, so that this process's exit is not taken for a
 * crash. Receives still outstanding are abandoned. Afterwards every call but
 * bip_strerror returns BIP_ERR_NOT_INITIALIZED. Returns BIP_OK or a negative
 * error code (BIP_ERR_PEER_GONE if a peer this process still owed data died).
 */
int bip_finalize(void);

/* ---- Blocking communication ---------------------------------------------- */

/**
 * Sends `len` bytes at `buf` to queue `tag` of process `dest`, and returns
 * when `buf` may be reused (long messages: once the receiver has taken
 * them). `buf` may be NULL only if `len` is 0. Returns BIP_OK or a negative
 * error code.
 */
int bip_send(int dest, int tag, const void *buf, size_t len);

/**
 * Receives the next message of queue `tag` into `buf`, which holds `maxlen`
 * bytes (`buf` may be NULL only if `maxlen` is 0). Returns the message's
 * length (>= 0) and, if `source` is not NULL, stores the sender's rank in
 * `*source`. Returns a negative error code on failure; for
 * BIP_ERR_TRUNCATED the first `maxlen` bytes were stored and `*source` is
 * still set.
 */
long bip_recv(int tag, void *buf, size_t maxlen, int *source);

/* ---- Non-blocking communication ------------------------------------------ */

/*
 * bip_isend and bip_irecv return a request handle (>= 0) or a negative error
 * code. A handle is completed exactly once, by bip_test returning 1 or by
 * bip_wait; it is then spent, and a later use returns
 * BIP_ERR_INVALID_REQUEST. A request that ends in an error is also spent.
 * Buffers must stay valid, and must not be modified (send) or accessed
 * (receive), until their request completes.
 */

/**
 * Starts sending `len` bytes at `buf` to queue `tag` of `dest`. Returns a
 * request handle (>= 0) or a negative error code.
 */
int bip_isend(int dest, int tag, const void *buf, size_t len);

/**
 * Posts a receive of at most `maxlen` bytes into `buf` on queue `tag`.
 * Returns a request handle (>= 0) or a negative error code.
 */
int bip_irecv(int tag, void *buf, size_t maxlen);

/**
 * Checks whether `request` is complete, moving messages along meanwhile.
 * Returns 1 if it completed (the handle is then spent), 0 if not yet, or a
 * negative error code. On completion, if not NULL, `*len` receives the
 * number of bytes sent or received and `*source` the destination (send) or
 * the sender (receive). On BIP_ERR_TRUNCATED, `*len` receives the full
 * length of the message (more than the buffer, which holds its first
 * `maxlen` bytes) and `*source` the sender.
 */
int bip_test(int request, long *len, int *source);

/**
 * Waits until `request` completes. Returns BIP_OK or a negative error code;
 * `*len` and `*source` are set as for bip_test. A peer that dies meanwhile
 * ends the wait with BIP_ERR_PEER_GONE within about a second.
 */
int bip_wait(int request, long *len, int *source);

/* ---- Errors ----------------------------------------------------------------- */

/**
 * A short English description of error code `code` (BIP_OK included), as a
 * static string; never NULL. Unknown codes get a generic description.
 */
const char *bip_strerror(int code);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BIP_H */
