/* storage/db: the crawl's SQLite database, `crawld.db` in state_dir.
 *
 * The `urls` table is both the authoritative URL-seen set and the frontier's
 * durable state (one row per URL with its host, depth, state, fetch outcome);
 * the narrow `seen` table holds the bare rows (db_url.bare: `crawld dedup`'s,
 * a URL and nothing to fetch), and the seen-set is both. It is keyed by a
 * 64-bit fingerprint (storage/urlfp.h, indexed by storage/fpruns); the
 * writer, the only inserter, looks a URL up by fp AND text in both tables
 * before inserting it, which is the final arbiter of what is new (exact:
 * two URLs sharing a fingerprint are two rows). Older files are migrated
 * at the first db_open (schema 2's UNIQUE text index is rebuilt away).
 * Row ids only grow, one sequence over both tables, and only retention
 * deletes rows, so "every row with id > mark" is exactly what was added
 * after a Bloom snapshot taken at max id = mark.
 * Rows in state seen_only are left out of the frontier indexes, so they
 * are the cheapest to insert, and bare ones the smallest to keep.
 *
 * Threads and ownership
 * - db_open() starts ONE writer thread that owns the only write connection.
 *   Any thread may call db_insert_url(), db_insert_url_wait(),
 *   db_record_outcome(), db_set_state() and db_flush(): they copy their
 *   arguments into a bounded FIFO queue (blocking while it is full, which
 *   keeps memory bounded) and the writer applies them in queue order, up to
 *   batch_size operations per transaction, never holding one open while idle.
 * - One FIFO for all callers: an insert is answered after every operation
 *   queued before it, so a URL still waiting in the queue is already "seen"
 *   by a later insert of the same URL.
 * - Async results (db_done_fn) are delivered on the writer thread after the
 *   COMMIT that made them durable, in queue order. A callback must be quick
 *   and must not call any db_* function of the same db (those calls return
 *   -EDEADLK on the writer thread). Strings in the result are valid only
 *   during the callback.
 * - A db_reader is a read-only connection for one thread at a time (open one
 *   per thread). It sees committed rows only, not operations still queued;
 *   call db_flush() first when that matters.
 * - db_close() must be called once, after every producer has stopped and
 *   every db_reader of it has been freed.
 *
 * What the store holds (the invariant the in-memory layers above rely on,
 * DESIGN.md invariant 7): an operation that db_insert_url() & co. accepted
 * (returned 0) is either committed, or held by the writer until it
 * commits; it is never dropped while the process runs. Operations commit
 * in queue order, so an outcome queued after a page's link inserts never
 * commits before them. When the store refuses a batch (disk full, I/O
 * error, busy or locked past the busy timeout), the writer keeps the batch
 * and retries it with backoff (0.1 s doubling to 2 s): a stall, visible in
 * db_get_stats(). Producers block once the queue is full. The writer gives
 * up only when the error is not transient (corruption, a misuse), when a
 * stall lasts max_stall_ms, or when db_close() is called during a stall
 * and one more try fails: then every held and later operation fails with
 * that error, and db_flush()/db_close() return it from then on.
 *
 * Errors: functions return 0 (or a count) on success, a negative errno
 * otherwise: -EINVAL bad argument, -E2BIG a string over its cap, -ENOMEM,
 * -ENOSPC disk full, -EROFS read-only, -EBADMSG not a (crawld) database or
 * corrupt, -EIO other SQLite errors, -ENOENT no such row, -ESHUTDOWN the db
 * is closing, -EDEADLK called from a callback on the writer thread.
 * Nothing from SQLite appears in this header. */
#ifndef CRAWLD_STORAGE_DB_H
#define CRAWLD_STORAGE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct db db;
typedef struct db_reader db_reader;

/* Stored in the file: never renumber. */
enum db_kind {
    DB_KIND_NAVIGATION = 0, /* a link followed from a page */
    DB_KIND_REQUISITE = 1,  /* an image, stylesheet or script of a page */
    DB_KIND_SEED = 2,
    DB_KIND_REDIRECT = 3,   /* the target of a redirect */
    DB_KIND_SITEMAP = 4,    /* a sitemap: robots.txt Sitemap line, /sitemap.xml,
                               a sitemap index's child (crawler/sitemaps) */
    DB_KIND_COUNT
};

/* Stored in the file: never renumber. */
enum db_state {
    DB_STATE_QUEUED = 0,    /* waiting to be fetched */
    DB_STATE_IN_FLIGHT = 1, /* handed to a fetcher; reset to queued by db_open */
    DB_STATE_DONE = 2,
    DB_STATE_FAILED = 3,
    DB_STATE_SEEN_ONLY = 4, /* known (crawld dedup), never to be fetched */
    DB_STATE_EXCLUDED = 5,  /* out of scope, robots.txt, trap... */
    DB_STATE_COUNT
};

/* The name users see for a state ("queued", "in_flight", ...; the one
 * copy), or "?" for a value outside the enum. */
const char *db_state_name(int state);

#define DB_URL_MAX 65536u  /* bytes of a URL; longer is -E2BIG */
#define DB_HOST_MAX 1024u  /* bytes of a host; longer is -E2BIG */
#define DB_TEXT_MAX 1024u  /* error and content_type are truncated to this */

/* The schema this crawld writes (meta schema_version, PRAGMA user_version):
 * older files are migrated by db_open, newer ones refused. */
#define DB_SCHEMA_VERSION 7

typedef struct db_opts {
    int cache_mb;   /* writer page cache in MiB; 0 = 64 (1..65536) */
    int batch_size; /* most operations per transaction; 0 = 10000 (1..100000) */
    int queue_cap;  /* queued operations before producers block;
                       0 = max(1024, 2 * batch_size) (1..1000000) */
    int gather_ms;  /* an idle writer that gets async work waits up to this
                       long for more before it commits (a synchronous call
                       or a full batch ends the wait at once): fewer, larger
                       transactions; 0 = commit at once (0..10000) */
    int max_stall_ms; /* give up a stall after this long; 0 = never */
    int64_t run_rows; /* rows the seen-set's active fingerprint run takes
                         before it is frozen (storage/fpruns); 0 =
                         FPRUNS_ACTIVE_MAX (2..1e9) */
    int scratch;      /* 1: a throw-away database (crawld dedup without
                         --state, removed at exit): nothing is synced
                         (synchronous = OFF), since no run reads it again */
    int linked_index; /* 1: retention reads the bare rows' stamps: their
                         index is made at open if missing (else they have
                         none, and db_forget and the stamp reads pass them by) */
} db_opts;

typedef struct db_url {
    const char *url;       /* the key: canonical URL bytes (need not be
                              NUL-terminated); the seen-set key */
    size_t url_len;        /* 0 = strlen(url) */
    const char *fetch_url; /* the fetch form (the URL as written, what is
                              requested); NULL = the same as url. Stored as
                              NULL when equal to url */
    size_t fetch_url_len;  /* 0 = strlen(fetch_url) */
    const char *host;      /* its host, NOT NULL ("" allowed) */
    size_t host_len;       /* 0 = strlen(host) */
    int depth;             /* >= 0 */
    int hops;              /* redirects that led here (a redirect target), >= 0 */
    int64_t parent;        /* id of the page it came from; 0 = none */
    int kind;              /* enum db_kind */
    int state;             /* initial state, usually DB_STATE_QUEUED */
    int64_t discovered_at; /* unix ms; 0 = now */
    int64_t linked_s;      /* last_linked, unix s (dedup/gens.h stamp); 0 = discovered_at.
                              A row already there takes it if newer. */
    bool absent;           /* the caller knows no row has this url (its seen
                              filter said so): no look-up before the insert */
    bool keep_linked;      /* a row already there is left as it is (its
                              last_linked too): "insert unless present" and
                              nothing else, as a seen test's look-up is */
    bool bare;             /* a seen-set entry and nothing more (`crawld
                              dedup`'s rows): state must be SEEN_ONLY; kept in
                              the narrow seen table with the url and linked_s
                              only (its fingerprint in the runs; host, kind, depth,
                              parent, hops and fetch_url are not stored), and
                              not moved by the db_slot_* calls, which are a
                              crawl's */
} db_url;

typedef struct db_outcome {
    int state;                /* new state: DB_STATE_DONE, _FAILED, _QUEUED (retry) */
    int http_status;          /* 0 = no response (stored as NULL) */
    int64_t bytes;
    int64_t fetch_ms;
    int attempts;
    int64_t fetched_at;       /* unix ms; 0 = now */
    const char *error;        /* NUL-terminated or NULL; copied, truncated */
    const char *content_type; /* NUL-terminated or NULL; copied, truncated */
} db_outcome;

typedef struct db_result {
    int status;      /* 1 new row, 0 it already existed, < 0 error (not stored) */
    int64_t id;      /* the row's id, new or existing; 0 on error */
    const char *url; /* the URL that was inserted (valid during the callback) */
    size_t url_len;
    const int64_t *ids; /* db_forget: the ids of the rows it deleted (status of them) */
} db_result;

/* Called on the writer thread after COMMIT; quick, no db_* calls. */
typedef void (*db_done_fn)(void *ud, const db_result *r);

/* Opens (creating state_dir with mode 0700 and the database if missing)
 * state_dir/crawld.db, takes the state_dir lock (one crawld per state_dir),
 * creates or migrates the schema, resets rows left in flight to queued, and
 * starts the writer. o may be NULL (defaults). On failure returns NULL with
 * a one-line message naming the path in err. Caller owns the result; release
 * it with db_close(). */
db *db_open(const char *state_dir, const db_opts *o, char *err, size_t errlen);

/* Applies everything queued, commits, stops the writer, checkpoints the WAL
 * and frees d. Returns 0, or the first writer error no db_flush() reported. */
int db_close(db *d);

/* How many rows db_open() found in flight (left by a crash) and reset. */
int64_t db_recovered_in_flight(const db *d);

/* The state folder's identity: DB_CRAWL_ID_LEN hex digits, random, made
 * when the database is created and never changed. Valid until db_close(). */
#define DB_CRAWL_ID_LEN 32
const char *db_crawl_id(const db *d);

/* 1 while the writer is stalled (retrying a refused batch) or has given
 * up: callers that would add work (a fetch whose outcome must be stored)
 * should wait. Lock-free, cheap enough to ask per dispatch. */
int db_is_stalled(db *d);

/* During a stall: give up now (as if max_stall_ms had passed): the held
 * batch and every later operation fail, producers blocked on the full
 * queue return. For a shutdown that cannot wait for the store. No effect
 * when not stalled. */
void db_give_up(db *d);

/* Path of the database file; valid until db_close(). */
const char *db_path(const db *d);

/* Queues an INSERT OR IGNORE of u; cb (may be NULL) gets the outcome. u's
 * strings are copied. Returns 0 once queued. */
int db_insert_url(db *d, const db_url *u, db_done_fn cb, void *ud);

/* Inserts u and waits for the COMMIT. Returns 1 new, 0 it existed, < 0
 * error. *id (may be NULL) receives the row id. OUT: id */
int db_insert_url_wait(db *d, const db_url *u, int64_t *id);

/* Inserts u[0..n) in order and waits until all are committed: one wait for
 * the lot, no copies, answers in input order. status[i] gets 1 new, 0
 * existed, < 0 error (a bad u[i] is not queued); ids (may be NULL) the row
 * ids. Returns 0, or < 0 when it had to stop queueing (the statuses of the
 * rest say so). This is the fast way to ask "which of these are new?".
 * OUT: status, ids */
int db_insert_urls_wait(db *d, const db_url *u, size_t n, int *status, int64_t *ids);

/* Queues the outcome of a fetch of row id (all of o's columns are written).
 * A missing row is reported by the next db_flush() as -ENOENT. */
int db_record_outcome(db *d, int64_t id, const db_outcome *o);

/* Queues a state change of row id (e.g. to DB_STATE_IN_FLIGHT). */
int db_set_state(db *d, int64_t id, int state);

/* ---- fetch history (re-crawl, see frontier schedule.h) ----
 * Each row carries when it is next due (next_at, unix ms; rows without one
 * are never due), the interval that set it, the validators and payload
 * digest of its last 200, the WARC record holding that payload, a gone flag
 * (a 404/410 after a 200: never due again) and fetch/change counts. The
 * last fetch time is the outcome's fetched_at. */
typedef struct db_history {
    int64_t next_at;           /* unix ms; < 0 = not scheduled (NULL) */
    int64_t interval_s;        /* the interval next_at came from, >= 0 */
    const char *etag;          /* NUL-terminated or NULL; copied, truncated */
    const char *last_modified; /* the server's Last-Modified text, or NULL */
    const char *digest;        /* payload digest "sha1:..." or NULL */
    const char *warc_id;       /* "<urn:uuid:...>" of the record with the
                                  payload, or NULL */
    int64_t warc_date_ms;      /* that record's WARC-Date; 0 = none */
    const char *warc_uri;      /* its WARC-Target-URI when not the row's own
                                  (the payload was archived for another URL);
                                  NULL = the row's own */
    int64_t size;              /* payload bytes of that 200 (what a 304 saves) */
    bool gone;
    bool changed;              /* adds 1 to the row's change count */
} db_history;

/* Queues the fetch history of row id (every column written; fetches + 1).
 * Queue it BEFORE the fetch's db_record_outcome: a crash between the two
 * then leaves a row that is fetched again (as any in-flight row), never a
 * done row with its old, past due time. A missing row is reported by the
 * next db_flush() as -ENOENT. */
int db_record_history(db *d, int64_t id, const db_history *h);

/* Queues a due row (done) back to queued for its next fetch, its attempt
 * count reset (a fresh fetch: its retries, and the dispatch log's "fetched
 * again" count, start over). Like db_set_state otherwise. */
int db_requeue_due(db *d, int64_t id);

/* Makes row id due at now_ms (0 = now) if it is done, not gone, was last
 * fetched before lastmod_ms (unix ms; 0 = always) and is not already due
 * earlier: the hook for a sitemap's <lastmod>. Queued like db_set_state;
 * a row that does not qualify is left alone (no error). The daemon picks
 * it up at its next due scan (frontier/schedule). */
int db_make_due(db *d, int64_t id, int64_t lastmod_ms, int64_t now_ms);

/* Queues key = value into the meta table (e.g. the daemon's counters for
 * `crawld stats`); both copied; "schema_version" is refused (-EINVAL). */
int db_put_meta(db *d, const char *key, const char *value);

/* Figures over time, for `crawld report` (tables `samples` and `hosts`,
 * created by db_open when missing). Both queue like db_put_meta and copy
 * their strings; data is the caller's text (crawld stores JSON objects). A
 * sample's text is stored deflated (about a quarter of its size; at most
 * 64 KiB of text, else -E2BIG) and read back as text.
 * A sample is keyed by t_ms (ms since the crawl started; the same t_ms
 * replaces the row). A host row is replaced whole; pages is its sort key. */
int db_put_sample(db *d, int64_t t_ms, const char *data);
int db_put_host_stats(db *d, const char *host, int64_t pages, const char *data);

/* Retention. db_touch_linked queues "row url was linked again at stamp
 * linked" (last_linked moves forward only; no row is no error).
 * db_forget queues the deletion of up to limit (1..DB_FORGET_MAX) rows
 * stamped before cutoff that are not queued, in flight or due for a
 * re-crawl; cb gets
 * status = rows deleted (fewer than limit: none are left), or < 0, and
 * the deleted rows' ids (db_result.ids): SQLite gives a later insert the
 * id of a deleted last row again, so whoever remembers rows by id (the
 * frontier's known set) must forget these before the next batch. Call
 * it again while it deletes limit rows: each call is one bounded step in
 * the writer's queue, so the crawl's own writes go on in between. */
#define DB_FORGET_MAX 256
int db_touch_linked(db *d, const char *url, size_t url_len, int64_t linked);
int db_forget(db *d, int64_t cutoff, int limit, db_done_fn cb, void *ud);

/* Downsampling of the samples with age: a tier keeps, of the rows at least
 * age_ms old (age = now_ms - t_ms), only the earliest of each every_ms
 * bucket (buckets aligned on multiples of every_ms). Tiers go from the
 * youngest to the oldest; each every_ms is a multiple of the one before. */
typedef struct db_sample_tier {
    int64_t age_ms;
    int64_t every_ms;
} db_sample_tier;
#define DB_SAMPLE_TIERS_MAX 8

/* Queues one pruning pass (like db_put_meta; tiers copied): the rows that
 * reached a tier's age since the previous pass at since_ms (0: every row,
 * as for a first pass) are thinned to that tier. Passes at any intervals
 * leave the same rows as one pass over the whole history, so a caller that
 * passes every minute keeps the table at its steady size. 0, -EINVAL for bad
 * tiers (see db_sample_tier), or a queueing error. */
int db_prune_samples(db *d, const db_sample_tier *tiers, size_t n, int64_t now_ms,
                     int64_t since_ms);

/* Returns once everything queued before it is committed and its callbacks
 * ran: 0, or the first error the writer met since the previous db_flush()
 * (db_last_error() has the message). */
int db_flush(db *d);

/* db_flush without waiting: cb(ud, r) runs on the writer thread once
 * everything queued before it is committed and its callbacks ran;
 * r->status is 0, or the error if the writer gave up. For a caller that
 * must keep running (and saying why) while the store stalls. 0 once queued. */
int db_flush_async(db *d, db_done_fn cb, void *ud);

/* db_flush(), and *mark gets the highest row id committed at that point:
 * every row up to it is committed and its insert callback has run (the
 * mark of a Bloom snapshot). OUT: mark */
int db_flush_mark(db *d, int64_t *mark);

/* Copies the message of the writer's most recent error ("" if none) into
 * buf and returns its code (0 if none). OUT: buf */
int db_last_error(db *d, char *buf, size_t len);

/* The seen-set's fingerprint runs (storage/fpruns), since db_open. */
struct db_runs {
    int runs;            /* runs now, the active one included */
    int64_t freezes;     /* active runs frozen */
    int64_t merges;      /* merges of frozen runs */
    int64_t merged_rows; /* entries those merges wrote */
    int64_t upkeep_ms;   /* writer time spent on both */
    int64_t longest_ms;  /* the longest single step (the writer waits for it) */
    int64_t failures;    /* steps that failed and changed nothing (retried) */
};

typedef struct db_stats {
    int64_t rows[DB_STATE_COUNT]; /* committed rows per state */
    int64_t ops;                  /* operations applied (flushes included) */
    int64_t commits;              /* transactions committed */
    int64_t failed_ops;           /* operations that got an error */
    int64_t queued;               /* operations waiting in the queue now */
    int stalled;                  /* 1 while the writer retries a refused batch */
    int stall_code;               /* that batch's error (negative errno), 0 if none */
    int failed;                   /* the writer gave up with this error, 0 if not */
    int64_t held;                 /* operations held: the batch and the queue */
    int64_t stalls;               /* stalls so far */
    int64_t stall_ms;             /* their total length, the current one included */
    int64_t retry_in_ms;          /* until the next try, while stalled */
    int64_t forgotten;            /* rows deleted by db_forget (retention) */
    struct db_runs runs;          /* the seen-set's fingerprint runs */
} db_stats;

/* A few words for a stall's error code: "disk full", "I/O error",
 * "database busy", ... (static string). */
const char *db_error_reason(int code);

/* The writer's figures, kept in memory (no query, O(1)); rows[] starts from
 * a count at db_open and follows every COMMIT. OUT: st */
void db_get_stats(db *d, db_stats *st);

/* ---- readers: one per thread, read-only, committed rows only ---- */

/* A reader on d's database. NULL when memory runs out or SQLite fails
 * (err, may be NULL, says why). Free with db_reader_free() before db_close(). */
db_reader *db_reader_open(db *d, char *err, size_t errlen);
/* A reader on state_dir/crawld.db without a db (e.g. `crawld stats` of a
 * crawl that another process is running). Refuses foreign files and other
 * schema versions with a message in err. */
db_reader *db_reader_open_dir(const char *state_dir, char *err, size_t errlen);
void db_reader_free(db_reader *rd);

/* 1 if url has a row (its id in *id, may be NULL), 0 if not, < 0 error. OUT: id */
int db_reader_exists(db_reader *rd, const char *url, size_t url_len, int64_t *id);

/* The meta value of key into buf (NUL-terminated, truncated to len).
 * 0, -ENOENT when there is none, < 0 error. OUT: buf */
int db_reader_get_meta(db_reader *rd, const char *key, char *buf, size_t len);

/* Row id's state, attempts and redirect hops (each may be NULL). 0,
 * -ENOENT, or < 0. OUT: state, attempts, hops */
int db_reader_row(db_reader *rd, int64_t id, int *state, int *attempts, int *hops);

/* The largest row id (0 for an empty table). OUT: id */
int db_reader_max_id(db_reader *rd, int64_t *id);

/* Per-row callbacks: return 0 to go on, > 0 to stop (the call returns the
 * rows seen so far), < 0 to abort (the call returns that value). They must
 * not use the same reader. Pointers are valid during the callback only. */
typedef int (*db_scan_fn)(void *ud, int64_t id, const char *url, size_t url_len);

typedef struct db_row {
    int64_t id;
    const char *url;       /* the key */
    size_t url_len;
    const char *fetch_url; /* the fetch form; points at url when it is the same */
    size_t fetch_url_len;
    const char *host;
    size_t host_len;
    int depth;
    int64_t parent; /* 0 = none */
    int kind;
    int attempts;
} db_row;
typedef int (*db_row_fn)(void *ud, const db_row *row);

/* Calls cb for every row with id > mark, in id order (Bloom filter rebuild
 * and catch-up). Returns the number of rows passed to cb, or < 0. */
int64_t db_reader_scan_after(db_reader *rd, int64_t mark, db_scan_fn cb, void *ud);

/* Retention (dedup/gens.h). cb gets each row with its last_linked. */
typedef int (*db_linked_fn)(void *ud, int64_t id, const char *url, size_t url_len,
                            int64_t linked);
/* Rows with id > mark or last_linked >= since (catch-up of a generation
 * ring: the rows added, and the rows stamped again, after a snapshot). */
int64_t db_reader_scan_linked(db_reader *rd, int64_t mark, int64_t since, db_linked_fn cb,
                              void *ud);
/* The distinct last_linked stamps >= since, in order (the windows a ring
 * must hold before a catch-up). Returns how many cb saw, or < 0. */
int64_t db_reader_stamps(db_reader *rd, int64_t since, int (*cb)(void *ud, int64_t stamp),
                         void *ud);
/* Queued, in-flight or due (next_at reached) rows stamped before cutoff,
 * the seeds (the configuration links them for as long as it lists them;
 * forgetting one would cut off everything below it), and the rows whose
 * parent (db_url.parent: the page the crawler found it on) answered 304
 * since cutoff (a 304 re-reads no links, so the links its page held when
 * last parsed still stand). Only the discovering parent is known: a row
 * whose discovering page dropped the link while another unchanged page
 * still links it is forgotten, and found again when that page next
 * answers 200. These rows are kept when the rest are forgotten, so their
 * keys must move to the newest generation. */
int64_t db_reader_stale_queued(db_reader *rd, int64_t cutoff, db_linked_fn cb, void *ud);

typedef struct db_queued_query {
    const char *host;                 /* only this host; NULL = any host */
    const char *const *exclude_hosts; /* skipped (any-host queries only) */
    size_t n_exclude;
    int after_depth;                  /* resume strictly after (after_depth, */
    int64_t after_id;                 /* after_id); zeros = from the start */
    size_t max;                       /* most rows to return; 0 = no limit */
} db_queued_query;

/* Calls cb for queued rows in priority order (depth, then id), up to q->max.
 * Returns the number of rows passed to cb, or < 0. Excluded hosts are
 * filtered while scanning: their rows still cost a step each. */
int64_t db_reader_next_queued(db_reader *rd, const db_queued_query *q, db_row_fn cb, void *ud);

/* A row's fetch history (strings "" when NULL; next_at -1 when NULL).
 * 0, -ENOENT, or < 0. OUT: h */
typedef struct db_history_row {
    int64_t next_at, interval_s, warc_date_ms, fetches, changes, fetched_at, size;
    int http_status; /* of the last answer; 0 = none */
    bool gone;
    char etag[DB_TEXT_MAX + 1], last_modified[DB_TEXT_MAX + 1];
    char digest[64], warc_id[64];
    char warc_uri[4096];       /* "" = the row's own (or one too long to keep) */
} db_history_row;
int db_reader_history(db_reader *rd, int64_t id, db_history_row *h);

/* Calls cb for done rows whose next_at <= now_ms, and for scheduled rows
 * whose re-crawl failed one interval_s or more before now_ms, that were
 * last fetched before fetched_before_ms (0 = any time: a daemon; a one-pass
 * run gives its start, so no page is fetched twice in it): the failed ones
 * first, then in due order, up to max (0 = all). Returns the number passed
 * to cb, or < 0. */
int64_t db_reader_due(db_reader *rd, int64_t now_ms, int64_t fetched_before_ms, size_t max,
                      db_row_fn cb, void *ud);

/* How many rows are due at now_ms and not yet fetched (queued, in flight or
 * done with next_at <= now_ms, or failed as db_reader_due says), and the
 * next due time after now_ms (-1 = none). 0 or < 0. OUT: due, next_at */
int db_reader_due_stats(db_reader *rd, int64_t now_ms, int64_t *due, int64_t *next_at);

/* Calls cb once per distinct interval_s among scheduled rows (next_at set)
 * with how many rows have it. Returns the number of calls, or < 0. */
int64_t db_reader_intervals(db_reader *rd, void (*cb)(void *ud, int64_t interval_s, int64_t rows),
                            void *ud);

/* Exact row counts per state: a scan of the state index, which holds every
 * row but the seen_only ones (those are max(id) minus the rest). OUT: counts */
int db_reader_count_by_state(db_reader *rd, int64_t counts[DB_STATE_COUNT]);

/* Calls cb once per host (host NULL = every host, in host order; else that
 * host only, if it has rows) with its row counts per state; seen_only rows
 * are not counted per host (they are not in the host index). Returns the
 * number of hosts, or < 0; cb's return as above. */
typedef int (*db_host_fn)(void *ud, const char *host, size_t host_len,
                          const int64_t counts[DB_STATE_COUNT]);
int64_t db_reader_host_counts(db_reader *rd, const char *host, db_host_fn cb, void *ud);

/* Samples stored with db_put_sample, as t_ms order. When more than max
 * (> 1; 0 = all) are stored, at most max are passed, spread evenly over
 * time (the first row at or after each of max - 1 equal steps from the first
 * t_ms to the last), the first and the last always among them: a run whose
 * old samples were thinned by db_prune_samples is still drawn whole. data is
 * valid during the callback only; cb's return as above. A row that does not
 * unpack is left out. Returns the number passed to cb (0 for a file without
 * samples), or < 0. */
typedef int (*db_sample_fn)(void *ud, int64_t t_ms, const char *data, size_t len);
int64_t db_reader_samples(db_reader *rd, size_t max, db_sample_fn cb, void *ud);
/* How many samples are stored (0 for a file without the table), or < 0. */
int64_t db_reader_sample_count(db_reader *rd);

/* Host rows stored with db_put_host_stats, busiest (pages) first, at most
 * max (0 = all); *total (may be NULL) gets how many rows there are. Strings
 * valid during the callback only. Returns the number passed to cb, or < 0.
 * OUT: total */
typedef int (*db_hoststats_fn)(void *ud, const char *host, int64_t pages, const char *data);
int64_t db_reader_host_stats(db_reader *rd, size_t max, int64_t *total, db_hoststats_fn cb,
                             void *ud);

/* PRAGMA quick_check (quick != 0) or integrity_check: 0 if the file is
 * sound, -EBADMSG with the first problem in msg, other < 0 on error. OUT: msg */
int db_reader_check(db_reader *rd, int quick, char *msg, size_t len);

/* ---- cluster slot moves (issue 23) ---- */

/* Picks the rows of a slot by host: 1 for a host of the slot, else 0. */
typedef int (*db_host_pick_fn)(void *arg, const char *host, size_t host_len);

/* Writes every urls row whose host pick accepts (done, queued, failed,
 * excluded: with their fetch history) and crawl (the shared crawl's
 * name, which db_slot_import checks) to a fresh SQLite
 * file at path: built as path.tmp, synced, renamed over path, its folder
 * synced. Reads committed rows on its own connection: db_flush first. 0
 * with *rows, or < 0 with err (path.tmp removed). OUT: rows */
int db_slot_export(db *d, const char *path, const char *crawl, db_host_pick_fn pick, void *arg,
                   int64_t *rows, char *err, size_t errlen);
/* A host's politeness state in a checkpoint (the frontier's, its times
 * made wall-clock ms so that another process can read them). */
typedef struct db_slot_host {
    const char *host;
    int64_t next_at;        /* its next request may start then */
    int64_t paused_until;   /* a Retry-After or failure pause ends then */
    int64_t last_ms;        /* its latest response time; -1 none */
    int64_t pages;          /* URLs handed out (max_pages_per_host) */
    int robots_status;      /* 0 none; the status its rules came from; -1 disallow all */
    const char *robots_text;
    size_t robots_len;
    int64_t robots_expires; /* the rules are fresh until then */
} db_slot_host;
/* db_slot_export, and hosts[0..n) in the checkpoint's table hosts, in
 * the same file and commit. */
int db_slot_export_hosts(db *d, const char *path, const char *crawl, db_host_pick_fn pick,
                         void *arg, const db_slot_host *hosts, size_t n, int64_t *rows,
                         char *err, size_t errlen);
/* Calls cb for each host state of the checkpoint at path (none in one
 * written without them); a non-zero return stops. 0, or < 0 with err. */
typedef int (*db_slot_host_fn)(void *arg, const db_slot_host *h);
int db_slot_hosts(const char *path, db_slot_host_fn cb, void *arg, char *err, size_t errlen);
/* db_slot_export from another node's store, state_dir/crawld.db (a node
 * gone for good, whose state_dir the others reach: shared storage): its
 * committed rows only, so a page it fetched without its outcome committed
 * is queued there and fetched again by the importer. Never creates that
 * store (-ENOENT). OUT: rows */
int db_slot_export_store(const char *state_dir, const char *path, const char *crawl,
                         db_host_pick_fn pick, void *arg, int64_t *rows, char *err,
                         size_t errlen);
/* Of the fetches a node started (ids[i], attempt attempts[i], read from
 * its dispatch log), how many rows of the checkpoint at path still have
 * no outcome for them: requested, never recorded, so fetched again by
 * whoever imports it. OUT: lost */
int db_slot_lost(const char *path, const int64_t *ids, const int *attempts, size_t n,
                 int64_t *lost, char *err, size_t errlen);
/* Inserts, in one transaction on its own connection, the rows of a file
 * db_slot_export wrote for crawl that this store lacks (the seen
 * test: fp and url), with new ids after *mark (the largest id before), no
 * parent, in flight made queued. Refuses a file of another crawl. 0 with
 * *mark and *rows, or < 0 with err. OUT: mark, rows */
int db_slot_import(db *d, const char *path, const char *crawl, int64_t *mark, int64_t *rows,
                   char *err, size_t errlen);
/* Deletes every row whose host pick accepts, in one transaction (the slot
 * moved away; the caller's frontier forgot its hosts first). told (may be
 * NULL) is given each deleted row's id first: SQLite gives a later insert
 * the id of a deleted last row again, and a frontier that remembers the
 * old row by its id would skip the new one. OUT: rows */
typedef void (*db_id_fn)(void *arg, int64_t id);
int db_slot_drop(db *d, db_host_pick_fn pick, void *arg, db_id_fn told, void *told_arg,
                 int64_t *rows, char *err, size_t errlen);

#endif
