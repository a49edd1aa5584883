/* cluster/xchg: the link exchange between nodes, over Redis Streams.
 *
 * Each slot N has a stream P"links:N" and one consumer group, "owners";
 * each node is a consumer named by its node id.
 * - The forwarder (xchg_forward) takes the oldest rows of this node's
 *   outbox (storage/outbox), pipelines one XADD per row to its slot's
 *   stream, and deletes the rows only after every reply came back. A crash
 *   in between sends them again; the receiver's seen test drops the copy.
 * - The reader (xchg_consume) reads the streams of the slots this node
 *   holds with XREADGROUP COUNT BLOCK, hands the batch to apply (which must
 *   commit it in one transaction: Bloom and SQLite seen test, frontier
 *   insert), and only then XACKs. Entries delivered to this consumer and
 *   never acked (a crash after the commit) are read again first, from the
 *   pending list; their second apply finds them seen.
 * - xchg_claim takes over another consumer's pending entries of a slot
 *   (XAUTOCLAIM), for a slot that moved here; xchg_trim drops a stream's
 *   entries below its oldest pending one (or all that were delivered and
 *   acked).
 * The connection's timeout is block_ms plus a second, so a BLOCK is never
 * mistaken for a dead server. A call that cannot reach Redis returns
 * -EPIPE and loses nothing (outbox rows stay, entries stay pending); the
 * next call reconnects. One owner thread per xchg. */
#ifndef CRAWLD_CLUSTER_XCHG_H
#define CRAWLD_CLUSTER_XCHG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/outbox.h"

typedef struct xchg xchg;

/* Test hooks: stop where a crash would (the caller then drops the xchg). */
enum xchg_fault {
    XCHG_FAULT_NONE = 0,
    XCHG_FAULT_AFTER_XADD,  /* forward: the XADDs are acknowledged, the outbox rows stay */
    XCHG_FAULT_AFTER_APPLY, /* consume: apply committed, no XACK sent */
};

typedef struct xchg_opts {
    const char *redis;
    const char *crawl_id;
    const char *node_id;
    int block_ms;        /* XREADGROUP BLOCK (0: do not block) */
    size_t batch;        /* rows per forward, entries per stream per read */
    int fault;           /* enum xchg_fault */
} xchg_opts;

/* One link as read from a stream; strings valid during apply only. */
typedef struct xchg_link {
    uint32_t slot;
    const char *url;
    size_t url_len;
    const char *fetch_url; /* NULL: the same as url */
    size_t fetch_url_len;
    const char *host;
    int depth;
    int kind;
} xchg_link;

/* Commits v[0..n) in one transaction: 0 once durable (then the entries are
 * acked), < 0 to leave them pending (they are delivered again). */
typedef int (*xchg_apply_fn)(void *arg, const xchg_link *v, size_t n);

typedef struct xchg_info {
    bool redis_up;
    uint64_t forwarded;   /* outbox rows sent and deleted */
    uint64_t applied;     /* entries applied and acked */
    uint64_t redelivered; /* entries read again from the pending list */
    uint64_t claimed;     /* entries taken over from another consumer */
    char error[256];      /* while Redis is unreachable: why */
} xchg_info;

int xchg_open(const xchg_opts *o, xchg **out /* OUT */, char *err, size_t errlen);
void xchg_free(xchg *x);

/* Sends up to batch outbox rows. Returns rows sent and deleted (0: outbox
 * empty), or negative errno (-EPIPE: Redis unreachable; rows kept). */
int xchg_forward(xchg *x, outbox *ob);

/* Reads the streams of slots[0..n) (own pending entries first), applies,
 * acks. Returns entries applied (0: none within block_ms), or negative
 * errno: -EPIPE (Redis), or apply's error (entries left pending). */
int xchg_consume(xchg *x, const uint32_t *slots, size_t n, xchg_apply_fn apply, void *arg);

/* Claims for this node the entries of slot's stream pending at other
 * consumers for at least min_idle_ms. Returns how many, or -EPIPE. */
int xchg_claim(xchg *x, uint32_t slot, int64_t min_idle_ms);

/* Trims slot's stream below its oldest pending entry (or below everything
 * delivered, when nothing is pending). Returns entries dropped, or -EPIPE. */
int xchg_trim(xchg *x, uint32_t slot);

void xchg_get_info(const xchg *x, xchg_info *out /* OUT */);

/* Sets opts.fault from now on (a test arming its hook mid-run). */
void xchg_set_fault(xchg *x, int fault);

#endif
