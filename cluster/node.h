/* cluster/node: one crawld node's cluster side, on its own thread.
 *
 * Owns a member (leases, the slot map) and two xchg (the forwarder's and
 * the reader's connections) and runs, in a loop: the membership tick on
 * time; the forwarder over the outbox; for every slot newly held, a claim
 * of the entries other consumers left pending for more than a lease; a
 * read of the streams of the held slots whose lease is fresh (a fenced
 * node admits nothing) (BLOCK at most a tenth of the lease, so
 * ticks stay on time), applied through the caller's apply; now and then a
 * trim. While Redis is unreachable it retries every tick, its leases run
 * out (it fences itself) and node_info says why.
 * node_may_fetch is lock-free and may be called from
 * any thread (fetchers ask before each dispatch); apply and drained run on
 * the node thread. */
#ifndef CRAWLD_CLUSTER_NODE_H
#define CRAWLD_CLUSTER_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster/member.h"
#include "cluster/xchg.h"
#include "storage/outbox.h"

typedef struct node node;

typedef struct node_opts {
    member_opts member;    /* redis, crawl_id, node_id, slots, lease_ms, hand-over hooks */
    outbox *outbox;        /* borrowed; links this node found for foreign slots */
    xchg_apply_fn apply;   /* links for this node's slots: admit them */
    void *apply_arg;
    /* The end of the crawl (NULL: never, as in daemon mode): quiet says
     * whether this node is idle (1), busy (0) or not started yet (< 0),
     * with a count of what it did (see cluster/quiet); once every node is
     * idle and every stream empty, agreed through Redis, ended is called
     * once, on the node thread. */
    int (*quiet)(void *arg, uint64_t *gen /* OUT */);
    void (*ended)(void *arg);
    void *end_arg;
    /* Test hook (the faults build's CRAWLD_CLUSTER_FAULT): an enum
     * xchg_fault, set on both xchg once fault_armed (end_arg) says 1 (asked
     * every round); the first forward or consume that then stops there
     * with rows or entries calls faulted (on the node thread, with
     * end_arg), which is expected not to return (the process dies). */
    int fault;
    int (*fault_armed)(void *arg);
    void (*faulted)(void *arg);
} node_opts;

typedef struct node_info {
    member_info member;
    xchg_info reader;
    xchg_info forwarder;
    int64_t outbox;        /* rows waiting */
    bool paused;           /* Redis unreachable: not fetching, retrying */
    bool settled;          /* the map held still for a lease and this node holds its share */
    bool ended;            /* the whole crawl was found quiescent */
    int64_t paused_ms;     /* how long the current pause has lasted (0: not paused) */
    uint64_t pauses;       /* pauses since the start */
    char why[300];         /* when paused: the message users see */
} node_info;

/* Joins and starts the thread. 0, or negative errno with why in err.
 * Caller owns *out; node_stop() then frees it. */
int node_start(const node_opts *o, node **out /* OUT */, char *err, size_t errlen);
/* Stops the thread; with leave, leaves the crawl (SIGTERM, or its end):
 * unless the crawl ended, with hand-over hooks, first hands every slot
 * over (member_depart, then ticks, at most ten leases); then releases
 * every lease left. Without leave, lets them run out (as a crash would).
 * Frees n. */
void node_stop(node *n, bool leave);

/* 1 once the slot map held still for a lease (the nodes that start
 * together have joined) and this node holds every slot the map gives it:
 * then seeds may be routed. Any thread. */
int node_settled(const node *n);

/* 1 when links of slot are admitted here (held, its checkpoint loaded,
 * not being handed over), else 0. Any thread. */
int node_holds(const node *n, uint32_t slot);

/* The slot of a host. */
uint32_t node_slot_of(const node *n, const char *host, size_t len);
/* 1 when this node may fetch a URL of host now (its slot lease is fresh). */
int node_may_fetch(const node *n, const char *host, size_t len);

void node_get_info(node *n, node_info *out /* OUT */);

#endif
