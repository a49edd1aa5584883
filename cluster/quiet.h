/* cluster/quiet: when a shared crawl is over, agreed through Redis.
 *
 * Each node publishes, every round, a report in the hash P"quiet" (field:
 * its node id): a sequence number that changes with every publish, whether
 * it is idle (nothing queued, in flight or in its outbox) and a count of
 * the things it did (pushes, dispatches, forwards: see crawl_quiet). A
 * round of the check reads, in one MULTI (one moment): P"done", the
 * members, the reports and, per slot, the stream's length and last id and
 * the group's pending count and last delivered id, and how many slots are
 * in transit (P"ckpts": handed over, checkpoint not loaded yet; their rows
 * are in no node's frontier). The crawl is over when two rounds in a row
 * see every member idle, every stream delivered and acked and no slot in
 * transit, and between them every member published again (a new sequence)
 * with the same count: then at the first round's moment no node had work
 * (each was idle at its publish before that moment and did nothing until
 * its publish after it), no link was in a stream and no slot's rows in a
 * checkpoint, and only a node, a stream or a checkpoint can create work. A link in flight between an outbox and a stream
 * is in the outbox (its node is not idle) until XADD has put it in the
 * stream. The node that sees it sets P"done"; the others see that. One
 * owner thread. */
#ifndef CRAWLD_CLUSTER_QUIET_H
#define CRAWLD_CLUSTER_QUIET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct quiet quiet;

int quiet_open(const char *redis, const char *crawl_id, const char *node_id, uint32_t slots,
               int timeout_ms, quiet **out /* OUT */, char *err, size_t errlen);
void quiet_free(quiet *q);

/* This node's report. 0 or -EPIPE. */
int quiet_publish(quiet *q, bool idle, uint64_t gen);
/* One round: 1 when the crawl is over (P"done" set, by this node or
 * another), 0 not yet, -EPIPE (Redis unreachable; the rounds start over). */
int quiet_check(quiet *q);
/* Drops this node's report (a node leaving). 0 or -EPIPE. */
int quiet_leave(quiet *q);

#endif
