/* crawler/recrawl: the re-crawl between the daemon and the store.
 *
 * It owns the schedule (frontier/schedule) built from [recrawl], a reader
 * of the fetch history (storage/db), and the figures. The daemon asks it:
 * - at dispatch, what an earlier fetch of the row left (recrawl_prepare:
 *   validators for the conditional request, the stored original for the
 *   WARC revisit);
 * - at a fetch's end, BEFORE frontier_done, to classify the answer (new,
 *   changed, unchanged by 304 or digest, gone, other), count it per host
 *   and queue the row's new history and due time (recrawl_done);
 * - on its scheduler thread, now and then, to make due rows queued and
 *   hand them to the frontier in due order (recrawl_promote). A one-pass
 *   run (crawl.daemon = false) takes only rows fetched before it started,
 *   so no page is fetched twice in it; a daemon takes each as it falls due.
 * Threads: recrawl_prepare and recrawl_done may run on any thread; one
 * mutex guards the reader and the counters (no db_* call that waits is
 * made under it). recrawl_promote runs on one thread (it waits for the
 * writer, never while holding the mutex). */
#ifndef CRAWLD_RECRAWL_H
#define CRAWLD_RECRAWL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "frontier/frontier.h"
#include "storage/db.h"
#include "storage/warc.h"

typedef struct recrawl recrawl;

#define RECRAWL_BUCKETS 24 /* interval histogram: [2^k, 2^(k+1)) seconds; the last open */

typedef struct recrawl_counts {
    int64_t revisited;     /* fetches of a row fetched before */
    int64_t unchanged;     /* ... answered 304 or with the same payload */
    int64_t not_modified;  /* ... of which 304 */
    int64_t same_digest;   /* ... of which a 200 with the stored digest */
    int64_t changed;       /* ... a 200 with a new payload */
    int64_t gone;          /* ... 404/410 after a 200: never due again */
    int64_t other;         /* ... any other answer */
    int64_t new_pages;     /* first fetches (with the schedule on) */
    int64_t bytes_saved;   /* payload bytes 304s did not send */
} recrawl_counts;

#define RECRAWL_TOP_HOSTS 32 /* hosts in recrawl_stats, most revisits first */

typedef struct recrawl_host {
    char host[256];        /* truncated past 255 bytes */
    recrawl_counts c;
} recrawl_host;

typedef struct recrawl_stats {
    bool enabled;          /* something can be scheduled ([recrawl]) */
    recrawl_counts total;
    int64_t promoted;      /* rows made queued because they were due */
    int64_t due_now;       /* rows due and not yet fetched (at the last look) */
    int64_t next_due_ms;   /* unix ms of the next due time after now; -1 none */
    int64_t intervals[RECRAWL_BUCKETS]; /* rows per current interval */
    int64_t interval_rows;  /* rows with an interval */
    recrawl_host top[RECRAWL_TOP_HOSTS]; /* the hosts with most revisits (then new) */
    size_t ntop;
    size_t hosts;           /* hosts with figures in all */
} recrawl_stats;

/* From cfg's [recrawl] (the rules parsed with config_recrawl_rule). d must
 * stay open until recrawl_free. NULL with a message in err on bad options,
 * no memory or a SQLite error. Caller owns the result. */
recrawl *recrawl_new(db *d, const crawl_config *cfg, char *err, size_t errlen);
void recrawl_free(recrawl *r);

/* Whether dispatch needs to ask (schedule on, or rows were made due). */
bool recrawl_active(const recrawl *r);

/* What an earlier fetch of a row left, for one fetch. */
typedef struct recrawl_job {
    db_history_row prior;  /* the row's history before this fetch */
    bool revisit;          /* the row was fetched before */
    bool conditional;      /* send the prior validators (If-None-Match, ...).
                              Not with dedup.retention_s when the last fetch
                              is older than the retention: the page's links
                              may have been forgotten since, and a 304 would
                              not say them again */
    char *etag, *last_modified; /* what this answer said (heap; may be NULL) */
} recrawl_job;

/* The job of row id: NULL when the re-crawl is not active or memory runs
 * out (then the fetch is a plain one). Caller owns it: recrawl_job_free. */
recrawl_job *recrawl_prepare(recrawl *r, int64_t id);
void recrawl_job_free(recrawl_job *j);

/* Reads ETag and Last-Modified from an answer's header block into j. */
void recrawl_note_headers(recrawl_job *j, const char *headers, size_t len);

/* The stored original for the WARC writer (pointers into j and uri); false
 * when there is none. OUT: out */
bool recrawl_warc_prior(const recrawl_job *j, const char *uri, warc_prior *out);

/* A fetch's end. answered: an HTTP status came; status; host (the
 * frontier's name); url, its fetch form; digest and record id/date of the
 * payload as archived (w, may be NULL when not archived: then digest is
 * computed from payload); now_ms wall clock. Queues the row's history and
 * counts. Returns the enum schedule_outcome it found, or -1 when nothing
 * was recorded (no answer, a retried status). */
typedef struct recrawl_fetch {
    int64_t id;
    const char *url;
    size_t url_len;
    const char *host;
    int status;
    bool answered, truncated;
    const warc_result *w;  /* NULL: not archived */
    const void *payload;   /* the body as on the wire, when w is NULL */
    size_t payload_len;
    const char *payload_digest; /* when w is NULL: the payload's "sha1:..."
                                   if known (then payload is not read) */
    int64_t now_ms;
} recrawl_fetch;
int recrawl_done(recrawl *r, recrawl_job *j, const recrawl_fetch *f);

/* Makes due rows queued (committed) and pushes them to fr, in due order,
 * at most max per call; a one-pass run only those fetched before its start
 * (run_start_ms; 0 for a daemon). Also refreshes due_now / next_due and the
 * interval histogram (at most every 2 s). Returns the rows pushed, or < 0
 * (a db error). Scheduler thread only. */
int64_t recrawl_promote(recrawl *r, frontier *fr, int64_t now_ms, int64_t run_start_ms,
                        size_t max);

/* Reads due_now / next_due again (e.g. at the end of a run, after a
 * db_flush). Scheduler thread (it uses recrawl_promote's reader). */
void recrawl_refresh(recrawl *r, int64_t now_ms);

void recrawl_stats_get(recrawl *r, recrawl_stats *st /* OUT */);
/* Calls cb for every host with figures (under the mutex: cb must be quick).
 * Returns how many. */
size_t recrawl_foreach_host(recrawl *r,
                            void (*cb)(void *ud, const char *host, const recrawl_counts *c),
                            void *ud);

#endif
