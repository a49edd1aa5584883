/* crawler/crawl: the daemon's core, the composition root's engine.
 *
 * It wires the pieces DESIGN.md draws into one process: seeds and links are
 * canonicalized (crawler/url), checked against the scope (frontier/scope),
 * passed through the seen test (dedup/seen over storage/db), and the rows
 * SQLite confirms new go to the frontier; the main loop hands the
 * frontier's jobs to the fetcher threads, whose hooks extract links
 * (crawler/links), archive (storage/warc) and report outcomes back.
 *
 * Threads: crawl_run() runs on the calling thread (the scheduler); the
 * fetcher threads run the hooks; the db writer thread runs insert
 * callbacks (they only push to the frontier). crawl_stop(), crawl_pause(),
 * crawl_resume(), crawl_add_seed() and crawl_status() may be called from
 * any thread (the control API); crawl_stop_signal() is async-signal-safe. */
#ifndef CRAWLD_CRAWL_H
#define CRAWLD_CRAWL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "config/config.h"
#include "crawler/web/url.h"
#include "dedup/seen.h"

typedef struct crawl crawl;

/* Opens the state (SQLite, Bloom snapshot + catch-up, WARC) and starts the
 * fetcher threads. cfg must outlive the crawl. Prints what it recovered on
 * log (e.g. URLs in flight at a crash). NULL with a message in err. */
crawl *crawl_open(const crawl_config *cfg, FILE *log, char *err, size_t errlen);

/* Canonicalizes url, puts its host in scope and queues it (depth 0).
 * 1 queued, 0 already known, -EINVAL rejected (why says why), -EIO. */
int crawl_add_seed(crawl *c, const char *url, size_t len, char *why, size_t whylen);

/* Runs until the frontier is drained (exit 0) or, in daemon mode, until
 * crawl_stop(). Returns 0, or < 0 on a fatal storage error. */
int crawl_run(crawl *c);

/* First call: stop handing out URLs and let in-flight fetches finish within
 * the grace period. Second call: abort them at once. */
void crawl_stop(crawl *c);
/* The same from a signal handler: sets a flag the loop reads. */
void crawl_stop_signal(crawl *c);
void crawl_pause(crawl *c);
void crawl_resume(crawl *c);

/* The duplicate filter as a service (POST /v1/dedup): canonicalizes url and
 * asks the seen test; URLs outside the crawl's scope are trusted to the
 * Bloom filter under verify = in-scope. 1 new, 0 duplicate, -EINVAL
 * rejected. New URLs are recorded (and queued when in scope). */
int crawl_dedup_url(crawl *c, const char *url, size_t len);

typedef struct crawl_status {
    double elapsed_s;
    uint64_t pages;            /* fetches finished with an HTTP answer */
    uint64_t fetch_errors;     /* fetches with no usable answer */
    uint64_t by_class[6];      /* pages by status class: [1] 1xx .. [5] 5xx */
    uint64_t status_counts[600];
    uint64_t bytes;            /* body bytes on the wire */
    uint64_t links;            /* links extracted */
    uint64_t links_rejected;   /* refused by the URL parser */
    uint64_t links_rejected_by[URL_REJ_COUNT]; /* the same by reason (enum url_reject) */
    uint64_t links_out_of_scope; /* refused by scope, depth or a trap */
    uint64_t nofollow_skipped;
    uint64_t redirects;
    uint64_t redirects_too_long;
    uint64_t truncated;        /* bodies cut at max_body_bytes */
    uint64_t archived;         /* WARC response records */
    uint64_t revisits;         /* WARC revisit records (duplicate content) */
    int64_t frontier_mem;      /* URLs queued in memory */
    int64_t queued;            /* URLs queued in SQLite */
    int64_t hosts_active;
    int64_t in_flight;
    int64_t recovered_in_flight;
    bool paused, stopping, done;
    seen_counters dedup;
    double fpr_bound, fpr_predicted, bloom_fill;
    unsigned bloom_stages;
} crawl_status;

void crawl_status_get(crawl *c, crawl_status *out /* OUT */);
/* The figures as JSON (GET /v1/status, stored for `crawld stats`).
 * New reference, NULL when memory runs out. */
json_t *crawl_status_json(crawl *c);
/* Writes the Prometheus text exposition of the crawl's figures. */
void crawl_metrics(crawl *c, FILE *f);
/* End-of-crawl summary: the crawl outcome and the dedup layers. */
void crawl_summary(crawl *c, FILE *f);

/* Flushes the writer, snapshots the Bloom filter, closes everything.
 * Returns 0 or the first error. */
int crawl_close(crawl *c);

#endif
