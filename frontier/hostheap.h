/* frontier/hostheap: a host's record (fhost) and the indexed binary heaps
 * of hosts, private to frontier/.
 *
 * Three heaps order the hosts (see frontier.c): HEAP_TIME by the time a host
 * may next be asked, HEAP_READY by the key of its next URL, HEAP_SIZE by
 * queue length, largest first; ties go to the older host (seq). Each host
 * keeps its index + 1 in each heap in pos[], so removal and re-keying are
 * O(log n). A heap never allocates on push: hostheap_reserve() makes room
 * when a host is created. Not thread-safe: called under the frontier's lock. */
#ifndef CRAWLD_HOSTHEAP_H
#define CRAWLD_HOSTHEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier/fqueue.h"
#include "frontier/robots.h"

enum { HEAP_TIME, HEAP_READY, HEAP_SIZE, HEAP_COUNT };

typedef struct fhost {
    struct fhost *hnext;     /* hash chain */
    char *name;
    uint64_t key;            /* hash_str(name): its bucket, frontier_host_key */
    char *origin;            /* "scheme://authority" of a URL seen; robots.txt */
    uint64_t seq;            /* creation order: heap tie-break */
    size_t pos[HEAP_COUNT];  /* index + 1 in each heap; 0 = not in it */
    int64_t sched_t;         /* TIME key */
    int32_t rdepth;          /* READY key */
    int64_t rid;

    fqueue q;
    fentry *retry;           /* sorted by not_before */
    size_t nretry, capretry;
    bool more;               /* SQLite may hold queued rows not in memory */
    int32_t cur_depth;       /* ... and all of them lie after this key */
    int64_t cur_id;
    bool active;             /* counted in f->hosts_active */

    int in_flight;
    int64_t next_ok, last_start, last_ms, paused_until;
    int64_t gated_until;     /* the gate said no (cluster: a slot not held) */
    bool waiting;            /* a politeness wait is being counted */

    robots *rules;
    bool robots_fetching;
    int robots_fails;
    int64_t robots_expires, robots_retry_at;
    long crawl_delay;
    char *robots_text;       /* the body the rules came from (keep_robots_text) */
    size_t robots_len;
    int robots_status;       /* its HTTP status; -1 disallow all; 0 none kept */

    int fail_streak, fail_pauses;
    bool given_up, capped;
    int64_t pages, jobs, robots_ok, robots_no, waits, retries, failed;
    int64_t answers, no_answer, http_errors, bytes, links, links_new; /* for reports */
} fhost;

typedef struct fheap {
    fhost **v;
    size_t n, cap;
} fheap;

/* Room for n hosts in hp, so that hostheap_push never fails. 0 or -ENOMEM. */
int hostheap_reserve(fheap *hp, size_t n);
/* Adds h to heap `which` (hp is that heap) unless it is in it already. */
void hostheap_push(fheap *hp, int which, fhost *h);
/* Removes h from heap `which` if it is in it. */
void hostheap_remove(fheap *hp, int which, fhost *h);
/* Restores the order after h's key for heap `which` changed; h is in it. */
void hostheap_fix(fheap *hp, int which, fhost *h);
/* The first host of hp, NULL when empty. */
fhost *hostheap_top(const fheap *hp);

#endif
