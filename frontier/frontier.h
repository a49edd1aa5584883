/* frontier/frontier: which URL to fetch next, and when.
 *
 * Per-host queues in priority order (depth, then row id = discovery order)
 * holding at most max_in_memory URLs in all; the rest stay queued in SQLite
 * (storage/db) and are read back per host in the same order when a host's
 * queue runs dry. Hosts wait in a heap keyed by the time each may next be
 * asked; among the hosts that are ready, the one whose next URL is the
 * shallowest goes first, so the crawl stays close to breadth-first.
 *
 * Politeness, per host:
 * - robots.txt first: before any other URL of a host is handed out (and when
 *   its copy is older than robots_cache_s) the frontier hands out a robots
 *   job for it; the daemon fetches it and calls frontier_robots_done().
 *   2xx is parsed, 4xx allows all (RFC 9309 §2.3.1.3). A 5xx, 429 or no
 *   answer is retried after backoff_ms × 2^(n-1) (or Retry-After) while the
 *   host's URLs wait, queued, not dropped; after max_attempts such answers in
 *   a row the host is treated as "disallow all" (RFC 9309 §2.3.1.4) for
 *   robots_cache_s and its URLs are excluded. A host that had rules keeps
 *   using them while a refetch fails. A URL the rules disallow is never
 *   handed out: its row becomes DB_STATE_EXCLUDED and it is counted.
 * - at most max_per_host jobs in flight (the robots job counts);
 * - between the end of one response and the next request start (and
 *   between two starts) at least
 *       max(delay_ms, Crawl-delay, min(max_delay_ms, delay_factor × last_ms))
 *   where last_ms is the host's most recent response time (Heritrix-like);
 * - 429 and 503 pause the host until Retry-After (capped by
 *   max_retry_after_s; backoff_ms × 2^(attempt-1) when absent) and retry the
 *   URL then; other 5xx and network errors retry the URL after
 *   backoff_ms × 2^(attempt-1); after max_attempts the row is failed with
 *   the reason. host_max_failures failed requests in a row (5xx or network)
 *   pause the host for backoff_ms × 2^(k-1) (k = such pauses in a row,
 *   capped by max_retry_after_s); after max_attempts such pauses with no
 *   answer in between, the host is given up and its URLs are failed without
 *   a request ("host gave up").
 *
 * Durable state: handing a URL out sets its row to DB_STATE_IN_FLIGHT; its
 * outcome is written with db_record_outcome (done, failed, or queued again
 * for a retry, with the attempt count); disallowed URLs become excluded.
 * These calls only enqueue. Limits max_pages and max_pages_per_host count
 * distinct URLs handed out (rows already done or failed in SQLite count at
 * frontier_new); at the limit no new URL is handed out (retries still are)
 * and the rest stay queued in SQLite.
 *
 * Memory: at most max_in_memory URL entries in all (queues, retries and
 * returned jobs; only when nothing at all can be evicted does a refill or a
 * retry take one more), each its URL plus ~40 bytes; per known host a few
 * hundred bytes and its robots rules (hosts are kept until frontier_free);
 * and one bit per row id handed out or held (1.25 MB per 10M rows). Refills
 * read SQLite per host, a batch of the host's fair share at a time
 * (max_in_memory / hosts with work, at most 1024), never all of it.
 *
 * Time: every call that needs the time takes now_ms from the caller's
 * monotonic clock, so tests drive time without sleeping. The frontier stores
 * no wall-clock time.
 *
 * Threads: every function may be called from any thread; one mutex guards
 * the frontier's state. Under it the frontier reads SQLite through its own
 * db_reader (a reader never waits for the writer) but never calls a db_*
 * function that enqueues or waits: state changes are put in an internal
 * FIFO under the mutex and handed to db_set_state / db_record_outcome after
 * it is released, in the order they were decided, before the call returns
 * (a second mutex lets one thread at a time do that; it is taken before the
 * main one, never after). So a call blocked on a full db queue holds no
 * frontier lock, and frontier_push() (which writes nothing) may be called
 * from a db_done_fn on the writer thread. robots.txt bodies are parsed
 * outside the lock. Nothing here calls back into the caller, except
 * frontier_foreach_host's cb (under the lock).
 *
 * What the daemon does:
 * 1. frontier_new() after db_open(); frontier_free() before db_close().
 * 2. For every row it inserts in DB_STATE_QUEUED (seeds, links, redirect
 *    targets) and that SQLite confirms as new, call frontier_push() once,
 *    in any order, from any thread. A row never pushed waits until the next
 *    run (frontier_new finds every queued row).
 * 3. Loop: frontier_next(now). FRONTIER_JOB: fetch job.url; a robots job
 *    (job.is_robots) is fetched following at most 5 redirects by the daemon
 *    itself, then frontier_robots_done() with the final status and body
 *    (status 3xx if the chain did not end, 0 when there was no answer); any
 *    other job gets exactly one frontier_done() (or frontier_return() if it
 *    was not fetched). FRONTIER_WAIT: sleep until *wake_ms (-1: until a
 *    job finishes, a push, or frontier_resume). FRONTIER_DRAINED: nothing
 *    queued anywhere and nothing in flight: the crawl is over (or idle in
 *    daemon mode until the next push).
 * 4. Redirects of ordinary jobs are the daemon's: it records the 3xx with
 *    frontier_done() and inserts the Location as a new row (depth + 1). */
#ifndef CRAWLD_FRONTIER_H
#define CRAWLD_FRONTIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/db.h"

typedef struct frontier frontier;

typedef struct frontier_opts {
    bool obey_robots;
    const char *robots_agent;   /* product token for robots.txt groups; copied;
                                   NULL = only `*` groups apply */
    int64_t robots_max_bytes;   /* of robots.txt parsed; 0 = ROBOTS_DEFAULT_MAX_BYTES */
    int64_t robots_cache_s;     /* rules are refetched after this long */
    int64_t delay_ms;           /* least time from a response's end (and from a
                                   request's start) to the next request start */
    double delay_factor;        /* adaptive term: factor × last response time */
    int64_t max_delay_ms;       /* cap on the adaptive term */
    int max_per_host;           /* jobs in flight per host, >= 1 */
    int64_t max_retry_after_s;  /* cap on a Retry-After or failure pause */
    int max_attempts;           /* per URL (and per robots.txt), >= 1 */
    int64_t backoff_ms;         /* first retry delay, doubled each attempt */
    int host_max_failures;      /* failed requests in a row that pause a host;
                                   0 = never */
    int64_t max_in_memory;      /* URLs held in memory in all, >= 1 */
    int64_t max_pages;          /* distinct URLs handed out in all; 0 = no limit */
    int64_t max_pages_per_host; /* 0 = no limit */
    bool keep_robots_text;      /* keep each host's robots.txt body beside its
                                   rules (cluster mode: the rules travel with
                                   the host's slot); costs its size per host */
} frontier_opts;

/* crawl.toml's defaults: robots on (agent "crawld"), 512000 bytes, 24 h
 * cache, delay 1000 ms, factor 2.0, cap 30000 ms, 1 per host, Retry-After
 * cap 3600 s, 3 attempts, backoff 5000 ms, host_max_failures 10,
 * max_in_memory 100000, no page limits. OUT: o */
void frontier_opts_defaults(frontier_opts *o);

/* A frontier over d's database: opens its own db_reader and reads the
 * queued and finished row counts per host (one scan of the host index), so
 * a resumed crawl starts with every host that has queued rows. d must stay
 * open until frontier_free(). NULL on bad options, out of memory or a
 * SQLite error, with a one-line message in err. Caller owns the result. */
frontier *frontier_new(const frontier_opts *o, db *d, char *err, size_t errlen);
/* Frees everything (no db_* call; in-flight rows stay in_flight in SQLite,
 * which the next db_open resets to queued). */
void frontier_free(frontier *f);

/* A row SQLite confirmed new and queued: url (url_len bytes, its fetch
 * form: what is requested and matched against robots.txt; refills read the
 * row's fetch_url for the same),
 * host (NUL-terminated, as stored in the row), depth >= 0, kind (enum
 * db_kind). Kept in memory when the budget allows, else left in SQLite for
 * a later refill. A row the frontier already knows (read back from SQLite
 * before its push arrived) is ignored. Returns 1 kept in memory, 0 left in
 * SQLite or already known, -EINVAL bad argument, -ENOMEM (the host could not
 * be created: the row waits until the next run). */
int frontier_push(frontier *f, int64_t id, const char *url, size_t url_len, const char *host,
                  int depth, int kind);

/* A done row made queued again because it is due (re-crawl; see
 * frontier/schedule.h): like frontier_push, but the row may have been
 * handed out before in this run. Call it only after its queued state is
 * committed (db_flush), never for a row the frontier may still hold. */
int frontier_push_due(frontier *f, int64_t id, const char *url, size_t url_len,
                      const char *host, int depth, int kind);

typedef struct frontier_job {
    int64_t id;         /* row id; 0 for a robots.txt job */
    char *url;          /* owned by the job until done/return */
    const char *host;   /* owned by the frontier; valid until frontier_free */
    int depth;          /* 0 for a robots job */
    int kind;           /* enum db_kind (DB_KIND_NAVIGATION for robots) */
    int attempt;        /* 1 for the first try */
    bool is_robots;
    int64_t started_ms; /* the now_ms it was handed out at */
    int64_t spacing_ms; /* the host's spacing between requests then */
    uint64_t host_key;  /* frontier_host_key(host) */
} frontier_job;

enum frontier_next_result {
    FRONTIER_DRAINED = 0, /* nothing queued (memory or SQLite), nothing in flight */
    FRONTIER_JOB = 1,     /* *job filled */
    FRONTIER_WAIT = 2     /* nothing ready at now_ms; see *wake_ms */
};

/* The next job at now_ms (monotonic milliseconds), or why there is none.
 * On FRONTIER_WAIT, *wake_ms (may be NULL) is the earliest time a host may
 * be ready, or -1 when only a finishing job, a push or frontier_resume can
 * change anything (also while paused). May read SQLite (refill) and, after
 * releasing the lock, enqueue state changes. Returns an enum
 * frontier_next_result, or < 0 (-ENOMEM, or a SQLite reader error).
 * OUT: job, wake_ms */
int frontier_next(frontier *f, int64_t now_ms, frontier_job *job, int64_t *wake_ms);

enum frontier_fetch_error {
    FRONTIER_ERR_NONE = 0,  /* an HTTP answer (status > 0) */
    FRONTIER_ERR_NETWORK,   /* no answer, worth retrying: DNS, connect,
                               reset, timeout */
    FRONTIER_ERR_FATAL      /* no usable answer, not retried (e.g. a
                               protocol error, a refused URL) */
};

typedef struct frontier_outcome {
    int status;             /* final HTTP status; 0 = no answer */
    int error;              /* enum frontier_fetch_error */
    const char *error_text; /* stored with a failed or retried row; NULL = built
                               from status/error */
    int64_t response_ms;    /* request start to end of response; < 0 unknown */
    int64_t retry_after_s;  /* Retry-After in seconds (an HTTP-date already
                               converted); < 0 = absent */
    int64_t bytes;          /* body bytes */
    const char *content_type; /* NULL = none */
    int64_t links;          /* links of the page that reached the seen test */
    int64_t links_new;      /* ... of which new (the rest were duplicates) */
} frontier_outcome;

enum frontier_done_result {
    FRONTIER_DONE_OK = 0,   /* row done (any 1xx-4xx answer but 429) */
    FRONTIER_DONE_RETRY = 1,/* row queued again; retried after a backoff */
    FRONTIER_DONE_FAILED = 2/* row failed: attempts used up, fatal error, or
                               the host was given up */
};

/* Records the outcome of an ordinary job handed out by frontier_next and
 * releases job (its url is freed, the struct zeroed). Returns an enum
 * frontier_done_result, or -EINVAL (a robots job, or a job not in flight). */
int frontier_done(frontier *f, frontier_job *job, const frontier_outcome *o, int64_t now_ms);

/* The answer to a robots job (after the daemon followed up to 5 redirects):
 * o->status and the body of the final response (body may be NULL when len
 * is 0). Releases job. Returns 0, or -EINVAL / -ENOMEM (then the fetch
 * counts as failed and is retried). */
int frontier_robots_done(frontier *f, frontier_job *job, const frontier_outcome *o,
                         const char *body, size_t len, int64_t now_ms);

/* Gives back a job that was not fetched (shutdown, a cancelled transfer):
 * the URL is queued again at once, no attempt counted; a robots job is
 * simply forgotten. Releases job. 0, or -EINVAL. */
int frontier_return(frontier *f, frontier_job *job);

/* Frees a job's URL without telling the frontier (e.g. jobs still held at
 * shutdown, after frontier_free: their rows stay in_flight in SQLite and the
 * next run fetches them again). job may be NULL. */
void frontier_job_release(frontier_job *job);

/* Stops / restarts handing out jobs (POST /v1/pause, /v1/resume). Outcomes
 * are still recorded while paused. */
void frontier_pause(frontier *f);
void frontier_resume(frontier *f);

/* A gate on hosts (cluster mode: only hosts of the slots this node holds
 * may be fetched). Called under the frontier's lock, before a ready host
 * is asked for a job: 0 keeps the host waiting retry_ms, then it is asked
 * again; its URLs stay queued. gate must not call into the frontier.
 * NULL removes it. Set it before the first frontier_next. */
typedef int (*frontier_gate_fn)(void *arg, const char *host);
void frontier_set_gate(frontier *f, frontier_gate_fn gate, void *arg, int64_t retry_ms);

/* Cluster slot moves (issue 23). frontier_forget_host: host's slot moved
 * to another node; its URLs in memory (queue and retries) are dropped and
 * SQLite is no longer read for it (the caller deletes its rows). Returns
 * the entries dropped, or -EBUSY (nothing changed) while a job of host is
 * in flight. frontier_wake_host: rows of host were added to SQLite behind
 * the frontier's back (a slot's checkpoint loaded here): read them from
 * the start at the next refill. 0, or -ENOMEM. */
int frontier_forget_host(frontier *f, const char *host);
int frontier_wake_host(frontier *f, const char *host);
/* frontier_forget_id: the row with this id was deleted (its slot moved
 * away): its bit in the known set is cleared, so a new row that gets the
 * id again is read. */
void frontier_forget_id(frontier *f, int64_t id);

/* A host's politeness state, to travel with its slot to another node.
 * Times are spans from now_ms (the frontier has no wall clock: the caller
 * converts for the other process). */
typedef struct frontier_host_state {
    int64_t wait_ms;          /* until its next request may start, >= 0 */
    int64_t paused_ms;        /* until a Retry-After or failure pause ends, >= 0 */
    int64_t last_ms;          /* its latest response time; -1 none */
    int64_t pages;            /* distinct URLs handed out (max_pages_per_host) */
    int robots_status;        /* 0: no rules passed on; else the status the
                                 rules came from (-1: disallow all, after
                                 robots.txt stayed unreachable) */
    char *robots_text;        /* that robots.txt body, robots_len bytes */
    size_t robots_len;
    int64_t robots_fresh_ms;  /* how long the rules stay fresh, > 0 */
} frontier_host_state;

/* frontier_host_state_get: host's state at now_ms into out (rules only
 * with keep_robots_text and while fresh); out->robots_text is the
 * caller's (frontier_host_state_free). 0, -ENOENT for an unknown host,
 * -ENOMEM. frontier_host_state_set: a host arriving with its slot takes
 * st at now_ms: its next request no sooner than st allows, the rules
 * unless it has fresher ones (they are parsed again here), the larger
 * page count. Creates the host. 0, -EINVAL, or -ENOMEM (nothing set). */
int frontier_host_state_get(frontier *f, const char *host, int64_t now_ms,
                            frontier_host_state *out);
int frontier_host_state_set(frontier *f, const char *host, const frontier_host_state *st,
                            int64_t now_ms);
void frontier_host_state_free(frontier_host_state *st);

/* Politeness across runs: the requests of an earlier run (crawler/crawl
 * reads them from storage/dispatchlog) hold their hosts. A host is named
 * by its key (a 64-bit hash of its name: another host of the same key is
 * held too, which is only slower). frontier_hold: each v[i].wait_ms is a
 * span from now_ms (<= 0: none) during which no request, robots.txt
 * included, starts to that host; for hosts known now and for those made
 * later. Adds to the holds given before (for a key, the longest counts).
 * 0 or -ENOMEM (nothing held). */
typedef struct frontier_hold_entry {
    uint64_t host_key;
    int64_t wait_ms;
} frontier_hold_entry;
uint64_t frontier_host_key(const char *host);
/* How long from now_ms host stays paused (a Retry-After, failures in a
 * row, robots.txt's retry): what the daemon logs so that a pause outlives
 * a restart too. 0: none, or an unknown host. */
int64_t frontier_host_pause_ms(frontier *f, const char *host, int64_t now_ms);
int frontier_hold(frontier *f, const frontier_hold_entry *v, size_t n, int64_t now_ms);

typedef struct frontier_stats {
    int64_t mem_entries;      /* URLs held in memory (queues and retries) */
    int64_t mem_peak;         /* the most ever held */
    int64_t max_in_memory;
    int64_t hosts;            /* known hosts */
    int64_t hosts_active;     /* with URLs queued in memory or SQLite */
    int64_t hosts_ready;      /* ready at the last frontier_next */
    int64_t hosts_waiting;    /* waiting for their next allowed time */
    int64_t in_flight;        /* jobs out, robots jobs included */
    int64_t robots_in_flight;
    int64_t jobs;             /* URL jobs handed out (retries included) */
    int64_t pages;            /* distinct URLs handed out (counts for max_pages) */
    int64_t done;             /* rows finished done */
    int64_t retries;          /* retries scheduled */
    int64_t failed;           /* rows finished failed */
    int64_t robots_jobs;
    int64_t robots_fetch_failures; /* 5xx, 429 or no answer */
    int64_t robots_allowed;   /* URLs checked and allowed */
    int64_t robots_disallowed;/* URLs excluded by a rule */
    int64_t robots_unavailable; /* URLs excluded because robots.txt stayed unreachable */
    int64_t retry_after_pauses; /* 429 / 503 pauses */
    int64_t failure_pauses;   /* host_max_failures pauses */
    int64_t hosts_given_up;
    int64_t politeness_waits; /* times a host with work waited for its delay */
    int64_t limit_skipped;    /* URLs not handed out because of max_pages(_per_host) */
    int64_t pushes;           /* frontier_push calls */
    int64_t gated;            /* times the gate held a ready host back */
    int64_t pushes_dropped;   /* left in SQLite because memory was full */
    int64_t pushes_known;     /* already known (read back before the push) */
    int64_t refills;          /* per-host SQLite reads */
    int64_t refill_rows;      /* URLs those reads brought into memory */
    int64_t evictions;        /* URLs dropped from memory to make room */
    int64_t db_errors;        /* db_* calls that failed */
    bool paused;
    bool limit_reached;       /* max_pages reached */
} frontier_stats;

/* A consistent snapshot of the counters. OUT: st */
void frontier_get_stats(frontier *f, frontier_stats *st);

enum frontier_robots_state {
    FRONTIER_ROBOTS_NONE = 0,   /* not fetched yet (or obey_robots off) */
    FRONTIER_ROBOTS_FETCHING,
    FRONTIER_ROBOTS_RULES,      /* rules in use */
    FRONTIER_ROBOTS_RETRYING    /* unreachable, retried later; URLs wait */
};

typedef struct frontier_host_stats {
    const char *host;         /* owned by the frontier */
    int64_t queued_mem;       /* in memory (queue + retries) */
    int64_t retries_waiting;
    bool more_in_db;          /* SQLite may hold more queued URLs */
    int in_flight;
    int64_t pages;
    int64_t jobs;
    int64_t next_ok_ms;       /* earliest next request start (politeness) */
    int64_t paused_until_ms;  /* Retry-After or failure pause; 0 = none */
    int64_t last_response_ms; /* -1 = none yet */
    int64_t delay_ms;         /* the spacing now in force */
    long crawl_delay_ms;      /* robots.txt Crawl-delay; -1 = none */
    int robots_state;         /* enum frontier_robots_state */
    int64_t robots_allowed, robots_disallowed;
    int64_t politeness_waits;
    int64_t retries, failed;
    int fail_streak;
    bool given_up;
    bool capped;              /* max_pages_per_host reached */
    /* Outcomes as reported to frontier_done / frontier_robots_done: */
    int64_t answers;          /* HTTP answers, robots.txt and retries included */
    int64_t no_answer;        /* fetches without one (network, fatal) */
    int64_t http_errors;      /* answers with status >= 400 */
    int64_t bytes;            /* body bytes of the answers */
    int64_t links, links_new; /* sums of frontier_outcome's */
} frontier_host_stats;

/* One host's figures. 0, or -ENOENT for a host the frontier does not know.
 * OUT: out */
int frontier_host_stats_get(frontier *f, const char *host, frontier_host_stats *out);
/* Calls cb for every host (in no particular order) under the frontier lock:
 * cb must be quick and must not call frontier_*; a non-zero return stops.
 * Returns the number of hosts visited. */
size_t frontier_foreach_host(frontier *f, int (*cb)(void *ud, const frontier_host_stats *hs),
                             void *ud);

#endif
