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
 * crawl_resume(), crawl_add_seed() and crawl_status_get() may be called from
 * any thread (the control API). */
#ifndef CRAWLD_CRAWL_H
#define CRAWLD_CRAWL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "crawler/recrawl.h"
#include "crawler/web/fetch.h"
#include "crawler/web/links.h"
#include "crawler/web/url.h"
#include "crawler/sitemaps.h"
#include "dedup/bloom.h"
#include "dedup/gens.h"
#include "dedup/seen.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "storage/db.h"
#include "storage/dispatchlog.h"
#include "storage/outbox.h"

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
/* crawl_stop, naming who asked ("signal (SIGTERM)", "the control API"):
 * the end of the crawl says "stopped by WHO with N queued". */
void crawl_stop_by(crawl *c, const char *who);
void crawl_pause(crawl *c);
void crawl_resume(crawl *c);

/* Cluster mode (crawler/clusterrun sets it up; the single node never
 * calls these). Every URL whose host is not local (cl.local says 0, with
 * its slot) goes to cl.ob for the owner of its slot, instead of the seen
 * test: found on a page, in one outbox commit before the page's outcome is
 * recorded; a seed or an API URL at once. The frontier hands out only
 * hosts cl.may_fetch allows now (else they wait gate_retry_ms). The run
 * does not end when this node drains: it ends at crawl_end_cluster. */
/* A cluster node's figures, for /v1/status and /metrics (on: cluster mode). */
typedef struct crawl_cluster_status {
    bool on;
    bool paused;               /* Redis unreachable: not fetching, retrying */
    bool settled, ended, coordinator;
    char why[300];             /* when paused: why */
    int64_t paused_ms;         /* length of the current pause */
    uint64_t pauses;           /* pauses since the start */
    uint32_t slots, held, wanted;
    uint64_t epoch;
    uint64_t leases_lost;      /* slot leases found gone at renewal (fenced) */
    uint64_t handed_over, loads, rescues; /* slot moves: checkpoints written, loaded;
                                             slots loaded from a gone node's store */
    uint64_t stranded;         /* hand-overs that found another node holding the slot */
    uint64_t loads_lost;       /* loads or rescues that outlasted the lease */
    uint64_t orphans_dropped;  /* stale rows of lost slots dropped */
    uint64_t ckpt_sent;        /* checkpoints sent through Redis (no shared_dir) */
    uint64_t ckpt_too_big;     /* hand-overs refused: over cluster.checkpoint_max_mib */
    uint64_t redis_errors;
    int64_t outbox;            /* links waiting in the outbox */
    uint64_t links_out;        /* links written to the outbox (crawl side) */
    uint64_t outbox_errors;    /* outbox writes that failed (page fetched again) */
    uint64_t unsent_fenced;    /* requests not sent: the slot's lease ran out between
                                  dispatch and send (a paused process); queued again */
    uint64_t forwarded, applied, redelivered, claimed; /* stream entries */
} crawl_cluster_status;

typedef struct crawl_cluster {
    int (*local)(void *arg, const char *host, size_t len, uint32_t *slot /* OUT */);
    int (*may_fetch)(void *arg, const char *host);
    void (*status)(void *arg, crawl_cluster_status *out /* OUT */);
    outbox *ob;
    void *arg;
} crawl_cluster;
/* Before crawl_add_seed and crawl_run. */
void crawl_set_cluster(crawl *c, const crawl_cluster *cl, int64_t gate_retry_ms);

/* A link another node found for a host of this node's slots. */
typedef struct crawl_link {
    const char *url;            /* the key */
    size_t url_len;
    const char *fetch_url;      /* NULL: the same as url */
    size_t fetch_url_len;
    int depth, kind;
} crawl_link;
/* The seen test and frontier insert of v[0..n), then a commit: 0 once
 * durable (and every new row is in the frontier), or -EIO. Any thread. */
int crawl_admit_remote(crawl *c, const crawl_link *v, size_t n);

/* Slot moves (crawler/clusterrun, issue 23): pick says whether a host is
 * of the slot that moves. The gate must already refuse its hosts.
 * crawl_slot_busy: 1 while a fetch of a picked host (robots.txt too) is in
 * flight, else 0.
 * crawl_slot_export: commits what is queued, then writes the picked rows
 * to the checkpoint at path (db_slot_export). crawl_slot_drop: the frontier
 * forgets the picked hosts, then their rows are deleted (-EBUSY: one had a
 * fetch in flight; nothing deleted). crawl_slot_import: the checkpoint's
 * rows this store lacks are inserted, their keys added to the Bloom filter
 * and the picked hosts read again by the frontier. The Bloom filter
 * cannot forget a dropped row's key: harmless, since a link to a host of a
 * foreign slot is forwarded before any seen test. 0 with *rows, or < 0
 * with err. Any thread but the scheduler's. OUT: rows */
int crawl_slot_busy(crawl *c, db_host_pick_fn pick, void *arg);
/* Politeness across runs: the fetches dispatch log l names hold their
 * hosts here (crawl_open does it with its own log; a rescue with the log
 * of a node gone for good). *longest (may be NULL) gets the longest hold.
 * 0 or -ENOMEM (none held). */
int crawl_hold_logged(crawl *c, dispatchlog *l, int64_t *longest);
int crawl_slot_export(crawl *c, const char *path, db_host_pick_fn pick, void *arg,
                      int64_t *rows, char *err, size_t errlen);
int crawl_slot_drop(crawl *c, db_host_pick_fn pick, void *arg, int64_t *rows, char *err,
                    size_t errlen);
int crawl_slot_import(crawl *c, const char *path, db_host_pick_fn pick, void *arg,
                      int64_t *rows, char *err, size_t errlen);

/* true when this node has nothing to do: the scheduler saw the frontier
 * drained twice (nothing in flight) and nothing was pushed, dispatched or
 * forwarded since. *gen counts those events: equal gens in two quiet
 * answers mean the node did nothing in between. Any thread. OUT: gen */
bool crawl_quiet(crawl *c, uint64_t *gen);
/* The cluster agreed it is quiescent: crawl_run ends ("frontier drained"). */
void crawl_end_cluster(crawl *c);

/* The duplicate filter as a service (POST /v1/dedup): canonicalizes url and
 * asks the seen test; URLs outside the crawl's scope are trusted to the
 * Bloom filter under verify = in-scope. 1 new, 0 duplicate, -EINVAL
 * rejected. New URLs are recorded (and queued when in scope). */
int crawl_dedup_url(crawl *c, const char *url, size_t len);

/* One Bloom stage's fill, for the per-shard/stage figures. */
typedef struct crawl_fill {
    unsigned shard, stage;
    double fill;               /* set bits / bits */
} crawl_fill;

/* Every figure the status outputs print (crawler/report/status.h formats
 * them); a plain copy, no pointers into the crawl except `fill`. */
typedef struct crawl_status {
    double elapsed_s;
    uint64_t pages;            /* responses: fetches finished with an HTTP answer */
    uint64_t html_pages;       /* HTML pages parsed for links (200, text/html) */
    uint64_t robots_fetched;   /* responses to robots.txt */
    uint64_t redirect_answers; /* 3xx responses */
    uint64_t requisite_answers; /* responses to requisites (images, CSS, ...) */
    uint64_t links_dropped[LINKS_DROP__COUNT]; /* links the parser dropped, by
                                  reason (max_links: crawl.max_links_per_page) */
    uint64_t fetch_errors;     /* fetches with no usable answer */
    uint64_t by_class[6];      /* pages by status class: [1] 1xx .. [5] 5xx */
    uint64_t status_counts[600];
    uint64_t errors_by_kind[FETCH_ERR_COUNT]; /* fetch errors by fetch_error */
    uint64_t bytes;            /* body bytes on the wire */
    uint64_t links;            /* links extracted */
    uint64_t links_rejected;   /* refused by the URL parser */
    uint64_t links_rejected_by[URL_REJ_COUNT]; /* the same by reason (enum url_reject) */
    uint64_t links_out_of_scope; /* refused by scope, depth or a trap */
    uint64_t nofollow_skipped;
    uint64_t redirects;
    uint64_t redirects_too_long;
    uint64_t truncated;        /* bodies cut at max_body_bytes */
    bool archiving;            /* a WARC writer is open (archived/revisits apply) */
    uint64_t archived;         /* WARC response records */
    uint64_t revisits;         /* WARC revisit records (duplicate content) */
    uint64_t spooled;          /* bodies past archive.spool_mem_bytes, spooled to a temp file */
    uint64_t spool_errors;     /* fetches not archived: their body could not be spooled */
    int64_t frontier_mem;      /* URLs queued in memory */
    int64_t queued;            /* URLs queued in SQLite */
    int64_t hosts_active;
    int64_t in_flight;
    int64_t recovered_in_flight;
    bool paused, stopping, done;
    seen_counters dedup;
    double fpr_bound, fpr_predicted, bloom_fill;
    unsigned bloom_stages;
    frontier_stats frontier;   /* the frontier's own counters */
    bloom_stats bloom;         /* the whole filter (with retention: the newest generation) */
    gens_stats gens;           /* the generation ring (generations 0: no retention) */
    uint64_t scope_verdicts[SCOPE_VERDICT_COUNT]; /* links per scope verdict */
    db_stats db;               /* the writer's figures */
    struct {
        uint64_t found, new_, past_depth; /* requisites found, new, new past max_depth */
        uint64_t sheets, refs, imports, dropped, truncated; /* stylesheets read, their
                                   references, @imports, refs dropped, sheets cut */
    } req;
    bool sitemaps_on;          /* sitemaps.enabled: the sitemaps figures apply */
    sitemaps_stats sitemaps;   /* crawler/sitemaps' counters */
    recrawl_stats recrawl;     /* the re-crawl's figures (crawler/recrawl.h) */
    char storage_error[512];   /* the store's last error, while stalled or failed */
    crawl_cluster_status cluster; /* cluster mode's figures (cluster.on) */
    char end[256];             /* how the crawl ended: "frontier drained", "stopped at
                                  max_pages with N queued", "stopped by signal with N
                                  queued", "storage failed: ..."; "" while running */
    /* Per shard and stage, in shard then stage order, into the caller's
     * buffer (crawl_status_get's fill, fill_cap): */
    crawl_fill *fill;          /* the caller's buffer; NULL when fill_cap was 0 */
    size_t fill_len;           /* cells written */
    size_t fill_total;         /* cells that exist; > fill_len: the buffer was short */
} crawl_status;

/* Fills *out. fill (may be NULL when fill_cap is 0) receives up to fill_cap
 * per-stage fill cells; crawl_fill_cells() is enough for all of them.
 * Any thread. OUT: out, fill */
void crawl_status_get(crawl *c, crawl_status *out /* OUT */, crawl_fill *fill, size_t fill_cap);
/* An upper bound on the fill cells of crawl_status_get (shards x max stages). */
size_t crawl_fill_cells(crawl *c);
/* End-of-crawl summary: the crawl outcome and the dedup layers. */
void crawl_summary(crawl *c, FILE *f);

/* Ends the crawl: stops the fetchers (after the grace period, or at once
 * after a second stop), stores the figures, snapshots the Bloom filter and
 * flushes the writer; the figures are final afterwards (crawl_summary).
 * During a storage stall it gives up what the writer holds (the next run
 * redoes it). 0, or < 0 when the store failed or, after "frontier drained",
 * URLs are still queued. Called by crawl_close when not called before. */
int crawl_finish(crawl *c);

/* crawl_finish if needed, then closes everything.
 * Returns 0 or the first error. */
int crawl_close(crawl *c);

#endif
