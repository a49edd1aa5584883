/* storage/db: crawld.db, its schema, the single writer thread and readers.
 *
 * Design
 * - One SQLite file in WAL mode (synchronous=NORMAL: a COMMIT survives a
 *   killed process; only an OS crash may lose the last few). The state_dir
 *   lock (flock on state_dir/crawld.lock) keeps a second crawld out: two
 *   writers would reset each other's in-flight rows.
 * - The writer thread owns `conn` and the prepared statements in `st`. Work
 *   reaches it through `ring`, a bounded FIFO of struct op guarded by `mu`;
 *   producers wait on `notfull`, the writer on `nonempty`. The writer moves
 *   up to batch_size ops out of the ring (so producers can refill it while
 *   it works), applies them between BEGIN IMMEDIATE and COMMIT, then runs
 *   the callbacks and wakes the waiting callers, in queue order.
 * - An idle writer that is handed async work may wait up to gather_ms for
 *   more (producers then signal it only when the batch is full or an op is
 *   waited for): fewer, larger transactions write each hot page once.
 * - A failed statement or COMMIT rolls the whole batch back and every op in
 *   it gets the error: nothing is ever reported as stored that was not
 *   committed. The first error is kept (`sticky`) until db_flush() returns it.
 * - A synchronous call waits on a struct waiter on its own stack (a condvar
 *   used with `mu` and a count of its ops not yet done); the writer stores
 *   each result through out_status/out_id under `mu`. Its strings are
 *   borrowed, not copied, since the caller waits. Async ops own one
 *   allocation (`mem`) holding their strings.
 * - `counts` (committed rows per state) and the op/commit counters are
 *   updated by the writer after each COMMIT from the batch's `delta`;
 *   guarded by `mu`.
 * - Readers are separate read-only connections, one per thread.
 * Lock order: only `mu` exists; no SQLite call is made while holding it. */
#include "storage/db.h"

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/buf.h"
#include "common/clock.h"
#include "common/err.h"
#include "storage/fpruns.h"
#include "storage/samples.h"
#include "storage/urlfp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DB_FILE "crawld.db"
#define LOCK_FILE "crawld.lock"
#define SCHEMA_VERSION DB_SCHEMA_VERSION
#define APP_ID 0x43724c64 /* "CrLd" in PRAGMA application_id */
#define BUSY_MS 10000
#define ERRMSG_MAX 512
#define WAL_PAGES 16384 /* checkpoint every 64 MiB of WAL (4 KiB pages) */

/* The two frontier indexes leave seen_only rows out (the `crawld dedup`
 * tool stores millions of them): they cost only the table and the UNIQUE
 * url index. Every query meant to use these indexes repeats this term
 * literally, since that is how SQLite matches a partial index. */
#define INDEXED "state <> 4"
_Static_assert(DB_STATE_SEEN_ONLY == 4, "INDEXED names the seen_only state");
_Static_assert(DB_KIND_SEED == 2, "RST_STALE_QUEUED keeps the seeds (kind 2)");

/* Schema steps: migrations[v] takes a version-v database to v + 1; a NULL
 * step is C code (run_step). */
static const char *const migrations[SCHEMA_VERSION] = {
    /* 0 -> 1 */
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE urls("
    " id INTEGER PRIMARY KEY,"
    " url TEXT NOT NULL UNIQUE,"
    " host TEXT NOT NULL,"
    " depth INTEGER NOT NULL DEFAULT 0,"
    " parent INTEGER,"
    " kind INTEGER NOT NULL DEFAULT 0,"
    " state INTEGER NOT NULL DEFAULT 0,"
    " discovered_at INTEGER NOT NULL DEFAULT 0,"
    " fetched_at INTEGER,"
    " http_status INTEGER,"
    " bytes INTEGER,"
    " fetch_ms INTEGER,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " error TEXT,"
    " content_type TEXT);"
    "CREATE INDEX urls_state ON urls(state, depth, id) WHERE " INDEXED ";"
    "CREATE INDEX urls_host_state ON urls(host, state, depth, id) WHERE " INDEXED ";",
    /* 1 -> 2: the URL as the page wrote it (WHATWG-serialised, no fragment;
     * NULL when it equals the key in `url`), and the redirect hops that led
     * to a redirect target, so max_redirects holds across a restart. */
    "ALTER TABLE urls ADD COLUMN fetch_url TEXT;"
    "ALTER TABLE urls ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;",
    /* 2 -> 3: the fetch history a re-crawl needs (frontier/schedule):
     * when the row is next due (unix ms; NULL = not scheduled), the
     * interval that gave it, the validators and payload digest of the last
     * 200 and its payload size, the WARC record holding that payload (id
     * text, date, and its target URI when another URL's), gone
     * (a 404/410 after a 200: never due again), and how often it was
     * fetched and found changed. urls_due serves "due rows in due order". */
    "ALTER TABLE urls ADD COLUMN next_at INTEGER;"
    "ALTER TABLE urls ADD COLUMN interval_s INTEGER;"
    "ALTER TABLE urls ADD COLUMN etag TEXT;"
    "ALTER TABLE urls ADD COLUMN last_modified TEXT;"
    "ALTER TABLE urls ADD COLUMN digest TEXT;"
    "ALTER TABLE urls ADD COLUMN size INTEGER;"
    "ALTER TABLE urls ADD COLUMN warc_id TEXT;"
    "ALTER TABLE urls ADD COLUMN warc_date INTEGER;"
    "ALTER TABLE urls ADD COLUMN warc_uri TEXT;"
    "ALTER TABLE urls ADD COLUMN gone INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE urls ADD COLUMN fetches INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE urls ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX urls_due ON urls(state, next_at) WHERE next_at IS NOT NULL;",
    /* 3 -> 4: last_linked, the start (Unix seconds) of the retention window
     * in which a link to the URL was last confirmed (dedup/gens.h: the
     * stamp of the Bloom generation holding its key); with dedup.retention_s
     * the rows stamped before the oldest live window are forgotten. */
    "ALTER TABLE urls ADD COLUMN last_linked INTEGER NOT NULL DEFAULT 0;"
    "UPDATE urls SET last_linked = discovered_at / 1000;"
    "CREATE INDEX urls_last_linked ON urls(last_linked);",
    /* 4 -> 5: the seen-set is keyed by fingerprint: urls.fp (storage/urlfp)
     * with an index on it replaces the UNIQUE index on the URL text, which
     * is rebuilt away (rebuild_with_fp). Exactness: the writer looks a URL
     * up by fp AND url before inserting it. */
    NULL,
    /* 5 -> 6: the fp index becomes storage/fpruns' runs (fpruns_install):
     * new URLs go into a small active run instead of an index that grows
     * with the set; look-ups go through the view seen_fp. */
    NULL,
    /* 6 -> 7: the bare rows (db_url.bare: `crawld dedup`'s) get a narrow
     * table of their own, seen (SEEN_SQL); fpruns' triggers follow it.
     * Seen-only rows already in urls stay there: every look-up reads both
     * tables. */
    NULL,
};

/* A bare row: the URL text and its stamp, nothing else. Ids come from the
 * same sequence as urls' (the writer's next_id), so an id names one row of
 * either table. Its fingerprint is not stored twice: the runs hold it, and
 * the trigger that drops a deleted row's entry computes it from the text
 * (crawld_urlfp, registered on the writer's connection, the only one that
 * deletes bare rows). last_linked is 0 (not kept) unless the store is
 * opened for retention (db_opts.linked_index), which stamps the 0 rows
 * with the time it starts and indexes the stamps (seen_last_linked).
 * Measured (dbstat, 1M URLs of the seenscale generator, 58 B of URL text
 * each): such a row cost 136 B in urls (a 30 columns' header, its host,
 * two stamps), 83.6 B here with fp and a stamp, and 69.5 B now (the
 * file: 88.1 B/URL with the fingerprint runs, 0.96x the bound of 1.3x
 * the text + 16 B). */
#define SEEN_SQL                                                                           \
    "CREATE TABLE seen(id INTEGER PRIMARY KEY, url TEXT NOT NULL,"                         \
    " last_linked INTEGER NOT NULL DEFAULT 0)"

/* Figures over time (`crawld report`): additive tables that every db_open
 * creates when missing, so they need no schema version of their own and an
 * older crawld opens a newer file unharmed. Readers of a file that lacks
 * them see no rows. */
static const char figures_sql[] =
    "CREATE TABLE IF NOT EXISTS samples(t_ms INTEGER PRIMARY KEY, data TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS hosts(host TEXT PRIMARY KEY, pages INTEGER NOT NULL,"
    " data TEXT NOT NULL);";

enum { OP_INSERT, OP_OUTCOME, OP_STATE, OP_FLUSH, OP_META, OP_SAMPLE, OP_HOST, OP_PRUNE,
       OP_HISTORY, OP_DUE, OP_LINKED, OP_FORGET };

enum {
    ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_INSERT, ST_FIND, ST_GETSTATE,
    ST_OUTCOME, ST_SETSTATE, ST_META, ST_SAMPLE, ST_HOST, ST_HISTORY, ST_DUE, ST_REQUEUE,
    ST_LINKED, ST_FORGET_PICK, ST_FORGET_DEL, ST_FPADD, ST_INSERT_SEEN, ST_MAX_ID,
    ST_LINKED_SEEN, ST_FORGET_PICK_SEEN, ST_FORGET_DEL_SEEN, ST_COUNT
};

/* The highest id of either table (0 when both are empty). */
#define MAX_ID_SQL                                                                         \
    "SELECT max(coalesce((SELECT max(id) FROM urls), 0), coalesce((SELECT max(id) FROM seen), 0))"
/* The row with url ?1 and fingerprint ?2 in either table: its id. */
#define FIND_SQL                                                                           \
    "SELECT f.id FROM seen_fp f WHERE f.fp = ?2 AND"                                       \
    " (EXISTS (SELECT 1 FROM seen s WHERE s.id = f.id AND s.url = ?1) OR"                  \
    " EXISTS (SELECT 1 FROM urls u WHERE u.id = f.id AND u.url = ?1)) LIMIT 1"

static const char *const writer_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_INSERT] = "INSERT INTO urls(url, host, depth, parent, kind,"
                  " state, discovered_at, hops, fetch_url, last_linked, fp, id)"
                  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_INSERT_SEEN] = "INSERT INTO seen(id, url, last_linked) VALUES(?1, ?2, ?3)",
    [ST_MAX_ID] = MAX_ID_SQL,
    [ST_FIND] = FIND_SQL,
    [ST_GETSTATE] = "SELECT state FROM urls WHERE id = ?1",
    [ST_OUTCOME] = "UPDATE urls SET state = ?2, http_status = ?3, bytes = ?4,"
                   " fetch_ms = ?5, attempts = ?6, fetched_at = ?7, error = ?8,"
                   " content_type = ?9 WHERE id = ?1",
    [ST_SETSTATE] = "UPDATE urls SET state = ?2 WHERE id = ?1",
    [ST_META] = "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
    [ST_SAMPLE] = "INSERT OR REPLACE INTO samples(t_ms, data) VALUES(?1, ?2)",
    [ST_HOST] = "INSERT OR REPLACE INTO hosts(host, pages, data) VALUES(?1, ?2, ?3)",
    [ST_HISTORY] = "UPDATE urls SET next_at = ?2, interval_s = ?3, etag = ?4,"
                   " last_modified = ?5, digest = ?6, warc_id = ?7, warc_date = ?8,"
                   " gone = ?9, fetches = fetches + 1, changes = changes + ?10, size = ?11,"
                   " warc_uri = ?12 WHERE id = ?1",
    [ST_REQUEUE] = "UPDATE urls SET state = ?2, attempts = 0 WHERE id = ?1",
    [ST_DUE] = "UPDATE urls SET next_at = ?2 WHERE id = ?1 AND state = 2 AND gone = 0"
               " AND (?3 = 0 OR fetched_at IS NULL OR fetched_at < ?3)"
               " AND (next_at IS NULL OR next_at > ?2)",
    [ST_LINKED] = "UPDATE urls SET last_linked = ?2 WHERE id IN (SELECT id FROM seen_fp"
                  " WHERE fp = ?3) AND url = ?1 AND last_linked < ?2",
    [ST_LINKED_SEEN] = "UPDATE seen SET last_linked = ?2 WHERE id IN (SELECT id FROM seen_fp"
                       " WHERE fp = ?3) AND url = ?1 AND last_linked < ?2",
    /* rows nobody linked since the cutoff, unless queued, in flight or due
     * for a re-crawl (next_at reached, ?3 = now in ms) */
    [ST_FORGET_PICK] = "SELECT id, state FROM urls WHERE last_linked < ?1"
                       " AND state NOT IN (0, 1)"
                       " AND NOT (next_at IS NOT NULL AND gone = 0 AND next_at <= ?3) LIMIT ?2",
    [ST_FORGET_DEL] = "DELETE FROM urls WHERE id = ?1",
    [ST_FORGET_PICK_SEEN] = "SELECT id FROM seen WHERE last_linked < ?1 LIMIT ?2",
    [ST_FORGET_DEL_SEEN] = "DELETE FROM seen WHERE id = ?1",
    [ST_FPADD] = FPRUNS_ADD_SQL,
};
_Static_assert(DB_STATE_QUEUED == 0 && DB_STATE_IN_FLIGHT == 1, "ST_FORGET_PICK's states");

/* A caller waiting for `pending` of its ops (on its stack; guarded by mu). */
struct waiter {
    pthread_cond_t cv; /* used with db.mu */
    size_t pending;
};

struct op {
    int type;
    int status;     /* result, filled by the writer */
    int64_t id;     /* OUTCOME/STATE: the target row; INSERT: the result */
    const char *url;
    size_t url_len;
    const char *fetch_url; /* INSERT: NULL when the same as url */
    size_t fetch_url_len;
    const char *host;
    size_t host_len;
    const char *error; /* OUTCOME, may be NULL */
    const char *ctype; /* OUTCOME, may be NULL */
    void *mem;         /* owned copy of the strings, NULL when borrowed */
    int64_t parent;
    int64_t fp;         /* INSERT, LINKED: urlfp of url, computed by the producer */
    int64_t discovered_at;
    int64_t bytes;
    int64_t fetch_ms;
    int64_t fetched_at;
    int64_t linked;     /* INSERT, LINKED: last_linked; FORGET: the cutoff */
    int absent;         /* INSERT: the caller knows the url has no row */
    int keep_linked;    /* INSERT: a row already there is not restamped */
    int bare;           /* INSERT: a row of the seen table (db_url.bare) */
    int depth;
    int kind;
    int state;
    int http_status;
    int attempts;
    int hops;
    db_done_fn cb;
    void *ud;
    struct waiter *w;   /* a waiting caller, or NULL */
    int *out_status;    /* where the waiting caller wants status and id */
    int64_t *out_id;
};

struct db {
    char *dir;
    char *path;
    int lock_fd;
    int64_t recovered;
    char crawl_id[DB_CRAWL_ID_LEN + 1];
    int batch_size;
    int gather_ms;
    int max_stall_ms;   /* 0: retry a failing store forever */
    /* Writer thread only (the opening thread before it starts). */
    sqlite3 *conn;
    sqlite3_stmt *st[ST_COUNT];
    struct op *batch;
    struct op **order;  /* apply_batch's order of a batch's ops */
    struct keyed { uint64_t key; struct op *o; } *sortbuf; /* order_batch's, 2 * batch_size */
    int64_t delta[DB_STATE_COUNT];
    int64_t max_id;     /* highest committed row id */
    int64_t batch_max;  /* ... including the batch being applied */
    int64_t batch_new;  /* rows the batch being applied inserted */
    int64_t next_id;    /* the batch's next row id; 0 = read at its first insert */
    int has_seen;       /* the seen table may have rows (else its look-ups are skipped) */
    int linked_index;   /* db_opts.linked_index */
    int64_t fp_active;  /* rows in storage/fpruns' active run (about: deletes not seen) */
    int64_t run_rows;   /* db_opts.run_rows */
    int runs_settled;   /* the last upkeep step found nothing due: until a
                           freeze is due, none is (only upkeep changes runs) */
    pthread_t thread;
    int thread_started;
    /* Guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t nonempty;
    pthread_cond_t notfull;
    struct op *ring;
    size_t cap;
    size_t head;
    size_t count;
    int closing;
    int gathering;  /* the writer waits for a fuller batch */
    size_t urgent;  /* queued ops someone waits for */
    int sticky;
    int last_code;
    char errmsg[ERRMSG_MAX];
    int64_t counts[DB_STATE_COUNT];
    int64_t n_ops, n_commits, n_failed, n_forgotten;
    struct db_runs runs; /* storage/fpruns upkeep */
    /* A stall: the writer holds a batch the store refused and retries it. */
    pthread_cond_t retry_cv;  /* the writer's backoff wait; db_close wakes it */
    int stalled;
    int stall_code;           /* negative errno of the current stall */
    int64_t stall_since_ms;   /* monotonic */
    int64_t retry_at_ms;      /* monotonic */
    int64_t held;             /* ops in the held batch */
    int64_t n_stalls, stall_ms_total;
    int failed;               /* the writer gave up: every op fails with this */
    atomic_int pausing;       /* stalled or failed: read without mu (db_is_stalled) */
    int abandon;              /* db_give_up: end the stall now */
#ifdef CRAWLD_FAULT_HOOKS
    struct fault { int64_t at, times; int code; } faults[64];
    int nfaults;
    int64_t attempts;         /* transactions tried */
#endif
};

enum {
    RST_EXISTS, RST_MAXID, RST_SCAN, RST_Q_SAME, RST_Q_DEEPER, RST_QH_SAME,
    RST_QH_DEEPER, RST_HOSTS, RST_HOST1, RST_META, RST_ROW, RST_HIST, RST_DUE_FAILED, RST_DUE,
    RST_DUE_N, RST_DUE_NEXT, RST_INTERVALS, RST_SCAN_LINKED, RST_STALE_QUEUED, RST_STAMPS, RST_COUNT
};

#define ROW_COLS "id, url, host, depth, parent, kind, attempts, fetch_url"
static const char *const reader_sql[RST_COUNT] = {
    [RST_EXISTS] = FIND_SQL,
    [RST_MAXID] = MAX_ID_SQL,
    [RST_SCAN] = "SELECT id, url FROM urls WHERE id > ?1 UNION ALL"
                 " SELECT id, url FROM seen WHERE id > ?1 ORDER BY 1",
    /* seen's stamps are read where its index is (db_opts.linked_index):
     * without it they are left out rather than read by a full scan */
    [RST_STAMPS] = "SELECT last_linked FROM urls WHERE last_linked >= ?1 UNION"
                   " SELECT last_linked FROM seen WHERE EXISTS (SELECT 1 FROM sqlite_master"
                   " WHERE name = 'seen_last_linked') AND last_linked >= ?1 ORDER BY 1",
    /* with since = INT64_MAX (no retention) the second half of seen's is
     * a constant false term: only the rows after the mark are read */
    [RST_SCAN_LINKED] = "SELECT id, url, last_linked FROM urls WHERE id > ?1 OR last_linked >= ?2"
                        " UNION ALL SELECT id, url, last_linked FROM seen WHERE id > ?1"
                        " UNION ALL SELECT id, url, last_linked FROM seen WHERE id <= ?1"
                        " AND ?2 < 9223372036854775807 AND last_linked >= ?2",
    [RST_STALE_QUEUED] = "SELECT id, url, last_linked FROM urls WHERE last_linked < ?1"
                         " AND (state IN (0, 1) OR"
                         " (next_at IS NOT NULL AND gone = 0 AND next_at <= ?2) OR kind = 2 OR"
                         " EXISTS (SELECT 1 FROM urls p WHERE p.id = urls.parent"
                         " AND p.http_status = 304 AND p.fetched_at >= ?1 * 1000))",
    [RST_Q_SAME] = "SELECT " ROW_COLS " FROM urls WHERE " INDEXED " AND state = 0"
                   " AND depth = ?1 AND id > ?2 ORDER BY id",
    [RST_Q_DEEPER] = "SELECT " ROW_COLS " FROM urls WHERE " INDEXED " AND state = 0"
                     " AND depth > ?1 ORDER BY depth, id",
    [RST_QH_SAME] = "SELECT " ROW_COLS " FROM urls WHERE " INDEXED " AND host = ?3"
                    " AND state = 0 AND depth = ?1 AND id > ?2 ORDER BY id",
    [RST_QH_DEEPER] = "SELECT " ROW_COLS " FROM urls WHERE " INDEXED " AND host = ?3"
                      " AND state = 0 AND depth > ?1 ORDER BY depth, id",
    [RST_HOSTS] = "SELECT host, state, count(*) FROM urls WHERE " INDEXED
                  " GROUP BY host, state ORDER BY host, state",
    [RST_HOST1] = "SELECT host, state, count(*) FROM urls WHERE " INDEXED
                  " AND host = ?1 GROUP BY host, state",
    [RST_META] = "SELECT value FROM meta WHERE key = ?1",
    [RST_ROW] = "SELECT state, attempts, hops FROM urls WHERE id = ?1",
    [RST_HIST] = "SELECT next_at, interval_s, etag, last_modified, digest, warc_id, warc_date,"
                 " gone, fetches, changes, http_status, fetched_at, size, warc_uri FROM urls"
                 " WHERE id = ?1",
    /* a scheduled row whose re-crawl failed (no answer, or 5xx/429 to the
     * last attempt) is due again one interval after that failure: its
     * fetched_at; only a 404/410 makes a row gone (frontier/schedule.h) */
#define FAILED_ROW "next_at IS NOT NULL AND state = 3 AND interval_s > 0"
#define FAILED_AT "fetched_at + interval_s * 1000"
    [RST_DUE_FAILED] = "SELECT " ROW_COLS " FROM urls WHERE " FAILED_ROW " AND " FAILED_AT
                       " <= ?1 AND fetched_at < ?3 ORDER BY fetched_at LIMIT ?2",
    [RST_DUE] = "SELECT " ROW_COLS " FROM urls WHERE next_at IS NOT NULL AND state = 2"
                " AND next_at <= ?1 AND (fetched_at IS NULL OR fetched_at < ?3)"
                " ORDER BY next_at LIMIT ?2",
    [RST_DUE_N] = "SELECT (SELECT count(*) FROM urls WHERE next_at IS NOT NULL"
                  " AND state IN (0, 1, 2) AND next_at <= ?1) + (SELECT count(*) FROM urls"
                  " WHERE " FAILED_ROW " AND " FAILED_AT " <= ?1)",
    [RST_DUE_NEXT] = "SELECT min(t) FROM (SELECT min(next_at) AS t FROM urls"
                     " WHERE next_at IS NOT NULL AND state = 2 AND next_at > ?1 UNION ALL"
                     " SELECT min(" FAILED_AT ") FROM urls WHERE " FAILED_ROW " AND " FAILED_AT
                     " > ?1)",
    [RST_INTERVALS] = "SELECT interval_s, count(*) FROM urls WHERE next_at IS NOT NULL"
                      " GROUP BY interval_s",
};

struct db_reader {
    sqlite3 *conn;
    char *path;
    sqlite3_stmt *st[RST_COUNT];
};

/* ---- small helpers ---- */

#ifdef CRAWLD_FAULT_HOOKS
/* Test builds only: CRAWLD_FP_BITS=N (read by every db_open) keeps N low
 * bits of each fingerprint, so that many URLs share one and every look-up
 * must settle a match by the text. Process-wide, as the fingerprint is. */
static _Atomic int64_t fp_mask = -1;

static void fp_bits_parse(void)
{
    const char *e = getenv("CRAWLD_FP_BITS");
    char *end = NULL;
    long bits = e ? strtol(e, &end, 10) : 64;
    atomic_store(&fp_mask, e && end != e && bits >= 0 && bits < 63
                               ? (int64_t)((1ULL << bits) - 1) : -1);
}
#endif

/* The fingerprint urls.fp holds for a URL (storage/urlfp). */
static int64_t key_fp(const char *url, size_t len)
{
    int64_t fp = urlfp(url, len);
#ifdef CRAWLD_FAULT_HOOKS
    fp &= atomic_load(&fp_mask);
#endif
    return fp;
}

/* Maps an SQLite result code to a negative errno. */
static int sql_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_READONLY: return -EROFS;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return -EBADMSG;
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_CANTOPEN: return -EACCES;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return -EBUSY;
    case SQLITE_TOOBIG: return -E2BIG;
    default: return -EIO;
    }
}

/* One line explaining SQLite error rc on conn about path. */
static void sql_msg(char *err, size_t errlen, const char *path, const char *what,
                    sqlite3 *conn, int rc)
{
    const char *detail = conn ? sqlite3_errmsg(conn) : sqlite3_errstr(rc);

    switch (rc & 0xff) {
    case SQLITE_NOTADB:
        cr_errf(err, errlen, "%s is not an SQLite database (%s); refusing to use it:"
            " move it away or choose another state_dir", path, detail);
        break;
    case SQLITE_CORRUPT:
        cr_errf(err, errlen, "%s is corrupt (%s) while %s", path, detail, what);
        break;
    case SQLITE_FULL:
        cr_errf(err, errlen, "%s: the disk is full (%s) while %s", path, detail, what);
        break;
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
        cr_errf(err, errlen, "%s: cannot write (%s) while %s; is state_dir writable?",
            path, detail, what);
        break;
    default:
        cr_errf(err, errlen, "%s: %s while %s", path, detail, what);
        break;
    }
}

/* Creates dir and its missing parents with mode 0700. */
static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char *p = cr_strdup(dir);
    int rc = 0;
    struct stat sb;

    if (p == NULL) {
        cr_errf(err, errlen, "out of memory creating state_dir %s", dir);
        return -ENOMEM;
    }
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            rc = -errno;
            if (strcmp(p, dir) == 0)
                cr_errf(err, errlen, "cannot create state_dir %s: %s", dir, strerror(errno));
            else
                cr_errf(err, errlen, "cannot create state_dir %s: %s: %s", dir, p,
                    strerror(errno));
            goto out;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        rc = -ENOTDIR;
        cr_errf(err, errlen, "state_dir %s is not a directory", dir);
    }
out:
    cr_free(p);
    return rc;
}

static char *join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = cr_malloc(a + b + 2);

    if (p == NULL)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Runs a one-value query; *out gets column 0 as an integer (0 if NULL). */
static int query_int(sqlite3 *c, const char *sql, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c, sql, -1, &s, NULL);

    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        *out = 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc;
}

/* Row counts per state from the state index; seen_only rows (and the bare
 * ones in seen) are not in it, so they are max(id) minus the rest: ids are
 * 1..N, each new row taking max(id) + 1 of both tables, as long as no row
 * is deleted (retention's forgotten rows are counted after this, by the
 * caller's deltas, within a run). OUT: counts */
static int count_states(sqlite3 *c, int64_t counts[DB_STATE_COUNT])
{
    sqlite3_stmt *s = NULL;
    int64_t max = 0, sum = 0;
    int rc;

    memset(counts, 0, sizeof(int64_t) * DB_STATE_COUNT);
    rc = query_int(c, MAX_ID_SQL, &max);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_prepare_v2(c, "SELECT state, count(*) FROM urls WHERE " INDEXED
                            " GROUP BY state", -1, &s, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t st = sqlite3_column_int64(s, 0), n = sqlite3_column_int64(s, 1);
        if (st >= 0 && st < DB_STATE_COUNT)
            counts[st] = n;
        sum += n;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return rc;
    counts[DB_STATE_SEEN_ONLY] = max - sum;
    return SQLITE_OK;
}

/* Reads the schema version of a database that has tables; checks that it
 * is a crawld database. Returns 0 with *version set, or < 0 with err set. */
static int read_version(sqlite3 *c, const char *path, int64_t *version, char *err,
                        size_t errlen)
{
    int64_t app = 0;
    sqlite3_stmt *s = NULL;
    int rc;

    rc = query_int(c, "PRAGMA application_id", &app);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, path, "reading its header", c, rc);
        return sql_errno(rc);
    }
    if (app != APP_ID) {
        cr_errf(err, errlen, "%s is an SQLite database but not one crawld wrote"
            " (application_id %lld); refusing to use it", path, (long long)app);
        return -EBADMSG;
    }
    rc = sqlite3_prepare_v2(c, "SELECT value FROM meta WHERE key = 'schema_version'",
                            -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW || sqlite3_column_type(s, 0) != SQLITE_INTEGER) {
        cr_errf(err, errlen, "%s has no valid schema_version in its meta table;"
            " refusing to use it", path);
        sqlite3_finalize(s);
        return -EBADMSG;
    }
    *version = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (*version < 1) {
        cr_errf(err, errlen, "%s has an invalid schema_version %lld", path, (long long)*version);
        return -EBADMSG;
    }
    if (*version > SCHEMA_VERSION) {
        cr_errf(err, errlen, "%s was written by a newer crawld (schema version %lld;"
            " this build knows up to %d); refusing to touch it",
            path, (long long)*version, SCHEMA_VERSION);
        return -EPROTONOSUPPORT;
    }
    return 0;
}

/* Checks the file is readable as a database: the first read fails on a
 * foreign file without writing anything to it. *ntables gets the count. */
static int probe(sqlite3 *c, const char *path, int64_t *ntables, char *err, size_t errlen)
{
    int rc = query_int(c, "SELECT count(*) FROM sqlite_master", ntables);

    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, path, "reading it", c, rc);
        return sql_errno(rc);
    }
    return 0;
}

static int exec(sqlite3 *c, const char *sql, const char *path, const char *what,
                char *err, size_t errlen)
{
    int rc = sqlite3_exec(c, sql, NULL, NULL, NULL);

    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, path, what, c, rc);
        return sql_errno(rc);
    }
    return 0;
}

/* crawld_urlfp(url) in SQL: the fingerprint of urlfp.h (for the schema 5
 * rebuild, and for the bare rows' delete trigger, SEEN_SQL). */
static void sql_urlfp(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    const unsigned char *t = sqlite3_value_text(argv[0]);
    int n = sqlite3_value_bytes(argv[0]);

    (void)argc;
    if (t == NULL)
        sqlite3_result_null(cx);
    else
        sqlite3_result_int64(cx, key_fp((const char *)t, (size_t)n));
}

/* Appends "name" with its double quotes doubled. 0 or -ENOMEM. */
static int put_ident(cr_buf *b, const char *name)
{
    int rc = cr_buf_putc(b, '"');
    for (const char *p = name; rc == 0 && *p; p++)
        rc = *p == '"' ? cr_buf_puts(b, "\"\"") : cr_buf_putc(b, *p);
    return rc == 0 ? cr_buf_putc(b, '"') : rc;
}

/* Migration 2 -> 3, inside migrate's transaction. SQLite cannot drop a
 * UNIQUE constraint in place, so urls is copied into a new table without
 * it: the column list comes from PRAGMA table_info, so whatever columns
 * other steps added come along (name, type, NOT NULL, DEFAULT, the id
 * key), in id order, each row with its fp. The indexes on urls are
 * re-created from their SQL in sqlite_master, and urls_fp is added. The
 * copy needs about the table's size in free space until the COMMIT. */
static int rebuild_with_fp(sqlite3 *c, const char *path, char *err, size_t errlen)
{
    cr_buf defs, names, indexes, sql;
    sqlite3_stmt *s = NULL;
    int rc, mem = 0, has_url = 0;

    cr_buf_init(&defs, 0);
    cr_buf_init(&names, 0);
    cr_buf_init(&indexes, 0);
    cr_buf_init(&sql, 0);
    rc = sqlite3_create_function(c, "crawld_urlfp", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                 NULL, sql_urlfp, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(c, "PRAGMA table_info(urls)", -1, &s, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = sqlite3_step(s);
        if (rc != SQLITE_ROW)
            break;
        const char *name = (const char *)sqlite3_column_text(s, 1);
        const char *type = (const char *)sqlite3_column_text(s, 2);
        const char *dflt = (const char *)sqlite3_column_text(s, 4);
        if (name == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (strcmp(name, "fp") == 0) {
            cr_errf(err, errlen, "%s: urls already has a column fp at schema version 2;"
                " refusing to rebuild it", path);
            sqlite3_finalize(s);
            rc = -EBADMSG;
            goto out;
        }
        has_url |= strcmp(name, "url") == 0;
        if (names.len > 0)
            mem |= cr_buf_puts(&names, ", ") | cr_buf_puts(&defs, ", ");
        mem |= put_ident(&names, name) | put_ident(&defs, name);
        if (type != NULL && type[0] != '\0')
            mem |= cr_buf_printf(&defs, " %s", type);
        if (sqlite3_column_int(s, 5) > 0)
            mem |= cr_buf_puts(&defs, " PRIMARY KEY");
        if (sqlite3_column_int(s, 3))
            mem |= cr_buf_puts(&defs, " NOT NULL");
        if (dflt != NULL)
            mem |= cr_buf_printf(&defs, " DEFAULT %s", dflt);
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc == SQLITE_OK && !has_url) {
        cr_errf(err, errlen, "%s: urls has no url column; refusing to rebuild it", path);
        rc = -EBADMSG;
        goto out;
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(c, "SELECT sql FROM sqlite_master WHERE type = 'index'"
                                " AND tbl_name = 'urls' AND sql IS NOT NULL", -1, &s, NULL);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW)
            mem |= cr_buf_printf(&indexes, "%s;", (const char *)sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, path, "reading the urls table's shape", c, rc);
        rc = sql_errno(rc);
        goto out;
    }
    mem |= cr_buf_printf(&sql, "CREATE TABLE urls_rebuilt(%.*s, fp INTEGER NOT NULL DEFAULT 0);"
                         "INSERT INTO urls_rebuilt(%.*s, fp) SELECT %.*s, crawld_urlfp(url)"
                         " FROM urls ORDER BY rowid;"
                         "DROP TABLE urls; ALTER TABLE urls_rebuilt RENAME TO urls;"
                         "%.*s CREATE INDEX urls_fp ON urls(fp);",
                         (int)defs.len, defs.data, (int)names.len, names.data,
                         (int)names.len, names.data, (int)indexes.len,
                         indexes.len ? indexes.data : "");
    if (mem != 0) {
        cr_errf(err, errlen, "%s: out of memory rebuilding the urls table", path);
        rc = -ENOMEM;
        goto out;
    }
    rc = exec(c, sql.data, path, "rebuilding the urls table with fingerprints", err, errlen);
#ifdef CRAWLD_FAULT_HOOKS
    if (rc == 0 && getenv("CRAWLD_FAULT_REBUILD") != NULL) {
        sql_msg(err, errlen, path, "rebuilding the urls table with fingerprints", NULL,
                SQLITE_FULL);
        rc = sql_errno(SQLITE_FULL); /* a disk that fills up during the copy */
    }
#endif
out:
    sqlite3_create_function(c, "crawld_urlfp", 1, SQLITE_UTF8, NULL, NULL, NULL, NULL);
    cr_buf_release(&sql);
    cr_buf_release(&indexes);
    cr_buf_release(&names);
    cr_buf_release(&defs);
    return rc;
}

/* Brings the schema from version `from` to SCHEMA_VERSION in one transaction. */
static int migrate(sqlite3 *c, int64_t from, const char *path, char *err, size_t errlen)
{
    char sql[160];
    int rc;

    rc = exec(c, "BEGIN IMMEDIATE", path, "starting the schema update", err, errlen);
    if (rc < 0)
        return rc;
    for (int64_t v = from; v < SCHEMA_VERSION; v++) {
        if (migrations[v] == NULL && v == 4) {
            rc = rebuild_with_fp(c, path, err, errlen);
        } else if (migrations[v] == NULL && v == 6) {
            rc = exec(c, SEEN_SQL, path, "creating the seen table", err, errlen);
            int src = rc < 0 ? SQLITE_OK : fpruns_refresh(c);
#ifdef CRAWLD_FAULT_HOOKS
            if (src == SQLITE_OK && getenv("CRAWLD_FAULT_SEEN_TABLE") != NULL)
                src = SQLITE_FULL;
#endif
            if (src != SQLITE_OK) {
                sql_msg(err, errlen, path, "adding the seen table's triggers", c, src);
                rc = sql_errno(src);
            }
        } else if (migrations[v] == NULL) {
            int src = fpruns_install(c);
#ifdef CRAWLD_FAULT_HOOKS
            if (src == SQLITE_OK && getenv("CRAWLD_FAULT_FPRUNS_INSTALL") != NULL)
                src = SQLITE_FULL; /* a disk that fills up while the run is written */
#endif
            rc = src == SQLITE_OK ? 0 : sql_errno(src);
            if (rc < 0)
                sql_msg(err, errlen, path, "moving the fingerprint index into runs", c, src);
        } else
            rc = exec(c, migrations[v], path, "creating the schema", err, errlen);
        if (rc < 0)
            goto fail;
    }
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', %d);"
             "PRAGMA application_id = %d; PRAGMA user_version = %d;",
             SCHEMA_VERSION, APP_ID, SCHEMA_VERSION);
    rc = exec(c, sql, path, "writing the schema version", err, errlen);
    if (rc < 0)
        goto fail;
    if (from == 0) {
        snprintf(sql, sizeof sql,
                 "INSERT OR REPLACE INTO meta(key, value) VALUES('created_at', %lld)",
                 (long long)cr_wall_ms());
        rc = exec(c, sql, path, "writing the schema version", err, errlen);
        if (rc < 0)
            goto fail;
    }
    return exec(c, "COMMIT", path, "committing the schema", err, errlen);
fail:
    sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Process-wide, before SQLite's first use: no memory statistics (each
 * allocation would take a global mutex to count itself; nothing here
 * reads them). Refused harmlessly if SQLite was set up already. */
static void sqlite_setup(void)
{
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Opens path with flags and the settings every connection shares. */
static int open_conn(const char *path, int flags, sqlite3 **out, char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    sqlite3 *c = NULL;
    pthread_once(&once, sqlite_setup);
    int rc = sqlite3_open_v2(path, &c, flags | SQLITE_OPEN_NOMUTEX, NULL);

    if (rc != SQLITE_OK) {
        if (c == NULL) {
            cr_errf(err, errlen, "%s: out of memory opening it", path);
            return -ENOMEM;
        }
        sql_msg(err, errlen, path, "opening it", c, rc);
        sqlite3_close(c);
        return sql_errno(rc);
    }
    sqlite3_extended_result_codes(c, 0);
    sqlite3_busy_timeout(c, BUSY_MS);
    *out = c;
    return 0;
}

/* For retention (db_opts.linked_index): the bare rows stored without a
 * stamp count as linked now, so that their time runs from here rather than
 * from 1970, and their stamps are indexed (the first time a full pass and
 * a sort; after that the index finds the unstamped ones). One transaction:
 * a failure leaves the file as it was. */
static int stamp_bare_rows(db *d, char *err, size_t errlen)
{
    char sql[200];
    snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; UPDATE seen SET last_linked = %lld"
             " WHERE last_linked = 0; CREATE INDEX IF NOT EXISTS seen_last_linked"
             " ON seen(last_linked);", (long long)(cr_wall_ms() / 1000));
    const char *what = "stamping and indexing the bare rows";
    int rc = exec(d->conn, sql, d->path, what, err, errlen);
#ifdef CRAWLD_FAULT_HOOKS
    if (rc == 0 && getenv("CRAWLD_FAULT_LINKED_INDEX") != NULL) {
        sql_msg(err, errlen, d->path, what, NULL, SQLITE_FULL);
        rc = sql_errno(SQLITE_FULL); /* a disk that fills up while the index is written */
    }
#endif
    if (rc == 0)
        rc = exec(d->conn, "COMMIT", d->path, what, err, errlen);
    if (rc < 0)
        sqlite3_exec(d->conn, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* ---- open / close ---- */

static void *writer_main(void *arg);
#ifdef CRAWLD_FAULT_HOOKS
static void faults_parse(db *d);
#endif

static int check_opts(const db_opts *o, db_opts *out, char *err, size_t errlen)
{
    db_opts d = { 0 };

    if (o != NULL)
        d = *o;
    if (d.cache_mb == 0)
        d.cache_mb = 64;
    if (d.batch_size == 0)
        d.batch_size = 10000;
    if (d.queue_cap == 0)
        d.queue_cap = d.batch_size * 2 > 1024 ? d.batch_size * 2 : 1024;
    if (d.run_rows == 0)
        d.run_rows = FPRUNS_ACTIVE_MAX;
    if (d.run_rows < 2 || d.run_rows > 1000000000) {
        cr_errf(err, errlen, "run_rows %lld is out of range (2..1000000000)",
            (long long)d.run_rows);
        return -EINVAL;
    }
    if (d.cache_mb < 1 || d.cache_mb > 65536) {
        cr_errf(err, errlen, "cache_mb %d is out of range (1..65536)", d.cache_mb);
        return -EINVAL;
    }
    if (d.batch_size < 1 || d.batch_size > 100000) {
        cr_errf(err, errlen, "batch_size %d is out of range (1..100000)", d.batch_size);
        return -EINVAL;
    }
    if (d.gather_ms < 0 || d.gather_ms > 10000) {
        cr_errf(err, errlen, "gather_ms %d is out of range (0..10000)", d.gather_ms);
        return -EINVAL;
    }
    if (d.max_stall_ms < 0) {
        cr_errf(err, errlen, "max_stall_ms %d is out of range (0..)", d.max_stall_ms);
        return -EINVAL;
    }
    if (d.queue_cap < 1 || d.queue_cap > 1000000) {
        cr_errf(err, errlen, "queue_cap %d is out of range (1..1000000)", d.queue_cap);
        return -EINVAL;
    }
    *out = d;
    return 0;
}

static int take_lock(db *d, char *err, size_t errlen)
{
    char *lp = join_path(d->dir, LOCK_FILE);
    int rc = 0;

    if (lp == NULL) {
        cr_errf(err, errlen, "out of memory opening the database in %s", d->dir);
        return -ENOMEM;
    }
    d->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (d->lock_fd < 0) {
        rc = -errno;
        cr_errf(err, errlen, "cannot write to state_dir %s (%s: %s)", d->dir, lp, strerror(errno));
        goto out;
    }
    if (flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        cr_errf(err, errlen, "state_dir %s is in use by another crawld (%s is locked)",
            d->dir, lp);
    }
out:
    cr_free(lp);
    return rc;
}

static int setup_schema(db *d, const db_opts *o, char *err, size_t errlen)
{
    int64_t ntables = 0, version = 0, mode_ok = 0;
    char sql[256];
    sqlite3_stmt *s = NULL;
    int rc;

    rc = probe(d->conn, d->path, &ntables, err, errlen);
    if (rc < 0)
        return rc;
    if (ntables > 0) {
        rc = read_version(d->conn, d->path, &version, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (sqlite3_db_readonly(d->conn, "main") == 1) {
        cr_errf(err, errlen, "%s is read-only; crawld needs to write it", d->path);
        return -EROFS;
    }
    rc = sqlite3_prepare_v2(d->conn, "PRAGMA journal_mode = WAL", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const unsigned char *m = sqlite3_column_text(s, 0);
        mode_ok = m != NULL && strcmp((const char *)m, "wal") == 0;
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "switching to WAL mode", d->conn, rc);
        sqlite3_finalize(s);
        return sql_errno(rc);
    }
    sqlite3_finalize(s);
    if (!mode_ok) {
        cr_errf(err, errlen, "%s: cannot switch to WAL mode", d->path);
        return -EIO;
    }
    /* Page size 4096 (SQLite's default, never set), the 64 MiB cache
     * (storage.sqlite_cache_mb), WAL_PAGES and no mmap, measured against
     * each other (issue 22): `crawld dedup --verify always` on 10M lines,
     * 60% repeats (4.0M new rows), one variant changed at a time, wall s /
     * CPU s / peak RSS MiB, one run each on a shared 2-core box at load
     * 3-6 (so read CPU, and ~15% as noise): defaults 78/62/280, 65/64/280,
     * 74/57/280, 123/85/280; page 1024 162/134, 2048 114/93, 8192 103/87;
     * cache 256 MiB 125/99/492, 512 MiB 87/75/772; WAL 1 GiB 83/72,
     * 74/66; mmap 256 MiB 91/76/536, 80/72/536, 2 GiB 68/64/875,
     * 94/70/876. None beat the defaults by more than the noise. Likely
     * why (not measured apart): each commit rewrites every fp-index leaf
     * its sorted batch touched; smaller pages mean more leaves and levels,
     * larger ones more bytes per touched leaf, and a larger cache or mmap
     * spares only reads the OS page cache serves anyway. */
    snprintf(sql, sizeof sql,
             "PRAGMA synchronous = %s; PRAGMA foreign_keys = OFF;"
             " PRAGMA cache_size = -%d; PRAGMA wal_autocheckpoint = %d;"
             " PRAGMA journal_size_limit = %d;",
             o->scratch ? "OFF" : "NORMAL", o->cache_mb * 1024, WAL_PAGES, WAL_PAGES * 4096);
    rc = exec(d->conn, sql, d->path, "setting it up", err, errlen);
    if (rc < 0)
        return rc;
    if (version < SCHEMA_VERSION) {
        rc = migrate(d->conn, version, d->path, err, errlen);
        if (rc < 0)
            return rc;
    }
    int64_t indexed = 0;
    rc = query_int(d->conn, "SELECT count(*) FROM sqlite_master WHERE name = 'seen_last_linked'",
                   &indexed);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "reading the schema", d->conn, rc);
        return sql_errno(rc);
    }
    if (o->linked_index) {
        rc = stamp_bare_rows(d, err, errlen);
        if (rc < 0)
            return rc;
    }
    int64_t any = 0;
    rc = query_int(d->conn, "SELECT EXISTS (SELECT 1 FROM seen)", &any);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "reading the seen table", d->conn, rc);
        return sql_errno(rc);
    }
    d->has_seen = any != 0;
    d->linked_index = o->linked_index || indexed; /* an indexed store keeps its stamps */
    return exec(d->conn, figures_sql, d->path, "creating the figures tables", err, errlen);
}

/* 32 hex digits from the kernel's random source. */
static int random_id(char out[DB_CRAWL_ID_LEN + 1])
{
    unsigned char b[DB_CRAWL_ID_LEN / 2];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, b, sizeof b) : -1;

    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)sizeof b)
        return -EIO;
    for (size_t i = 0; i < sizeof b; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

/* The state folder's identity: meta.crawl_id, made once (at creation, or
 * the first time a file from before crawl ids is opened) and never changed.
 * A Bloom snapshot records it, so a snapshot from another state is known. */
static int load_crawl_id(db *d, char *err, size_t errlen)
{
    sqlite3_stmt *s = NULL;
    char sql[160];
    int rc = sqlite3_prepare_v2(d->conn, "SELECT value FROM meta WHERE key = 'crawl_id'", -1, &s,
                                NULL);

    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(s, 0);
        if (v != NULL && strlen((const char *)v) == DB_CRAWL_ID_LEN) {
            memcpy(d->crawl_id, v, DB_CRAWL_ID_LEN + 1);
            sqlite3_finalize(s);
            return 0;
        }
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        sql_msg(err, errlen, d->path, "reading the crawl id", d->conn, rc);
        return sql_errno(rc);
    }
    if (random_id(d->crawl_id) < 0) {
        cr_errf(err, errlen, "%s: cannot read /dev/urandom for a crawl id", d->path);
        return -EIO;
    }
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key, value) VALUES('crawl_id', '%s')",
             d->crawl_id);
    return exec(d->conn, sql, d->path, "writing the crawl id", err, errlen);
}

/* Resets rows left in flight by a crash and loads the per-state counts. */
static int recover(db *d, char *err, size_t errlen)
{
    int rc;

    rc = exec(d->conn, "UPDATE urls SET state = 0 WHERE " INDEXED " AND state = 1",
              d->path, "resetting rows left in flight", err, errlen);
    if (rc < 0)
        return rc;
    d->recovered = sqlite3_changes64(d->conn);
    rc = count_states(d->conn, d->counts);
    if (rc == SQLITE_OK)
        rc = query_int(d->conn, MAX_ID_SQL, &d->max_id);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "counting rows", d->conn, rc);
        return sql_errno(rc);
    }
    return 0;
}

static void db_free(db *d)
{
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(d->st[i]);
    if (d->conn != NULL)
        sqlite3_close(d->conn);
    if (d->lock_fd >= 0)
        close(d->lock_fd);
    pthread_cond_destroy(&d->notfull);
    pthread_cond_destroy(&d->nonempty);
    pthread_cond_destroy(&d->retry_cv);
    pthread_mutex_destroy(&d->mu);
    cr_free(d->batch);
    cr_free(d->order);
    cr_free(d->sortbuf);
    cr_free(d->ring);
    cr_free(d->path);
    cr_free(d->dir);
    cr_free(d);
}

db *db_open(const char *state_dir, const db_opts *o, char *err, size_t errlen)
{
    db_opts opts;
    db *d = NULL;
    int rc;

    cr_errf(err, errlen, "%s", "");
    if (state_dir == NULL || state_dir[0] == '\0') {
        cr_errf(err, errlen, "state_dir is empty");
        return NULL;
    }
    if (check_opts(o, &opts, err, errlen) < 0)
        return NULL;
#ifdef CRAWLD_FAULT_HOOKS
    fp_bits_parse();
#endif
    if (!sqlite3_threadsafe()) {
        cr_errf(err, errlen, "this SQLite library was built without thread support");
        return NULL;
    }
    d = cr_calloc(1, sizeof *d);
    if (d == NULL)
        goto oom;
    d->lock_fd = -1;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->nonempty, NULL);
    pthread_cond_init(&d->notfull, NULL);
    pthread_cond_init(&d->retry_cv, NULL);
    d->batch_size = opts.batch_size;
    d->gather_ms = opts.gather_ms;
    d->max_stall_ms = opts.max_stall_ms;
    d->run_rows = opts.run_rows;
    d->cap = (size_t)opts.queue_cap;
    d->dir = cr_strdup(state_dir);
    d->path = d->dir ? join_path(state_dir, DB_FILE) : NULL;
    d->ring = cr_calloc(d->cap, sizeof *d->ring);
    d->batch = cr_calloc((size_t)opts.batch_size, sizeof *d->batch);
    d->order = cr_calloc((size_t)opts.batch_size, sizeof *d->order);
    d->sortbuf = cr_malloc(2 * (size_t)opts.batch_size * sizeof *d->sortbuf);
    if (d->path == NULL || d->ring == NULL || d->batch == NULL || d->order == NULL
        || d->sortbuf == NULL)
        goto oom;
    if (make_dirs(state_dir, err, errlen) < 0)
        goto fail;
    if (take_lock(d, err, errlen) < 0)
        goto fail;
    if (open_conn(d->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &d->conn, err,
                  errlen) < 0)
        goto fail;
    if (setup_schema(d, &opts, err, errlen) < 0)
        goto fail;
#ifdef CRAWLD_FAULT_HOOKS
    faults_parse(d);
#endif
    if (load_crawl_id(d, err, errlen) < 0)
        goto fail;
    if (recover(d, err, errlen) < 0)
        goto fail;
    rc = fpruns_count(d->conn, &d->fp_active, &d->runs.runs);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "reading the fingerprint runs", d->conn, rc);
        goto fail;
    }
    /* the bare rows' delete trigger computes their fingerprints (SEEN_SQL) */
    rc = sqlite3_create_function(d->conn, "crawld_urlfp", 1,
                                 SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, sql_urlfp, NULL, NULL);
    if (rc != SQLITE_OK) {
        sql_msg(err, errlen, d->path, "registering crawld_urlfp", d->conn, rc);
        goto fail;
    }
    for (int i = 0; i < ST_COUNT; i++) {
        rc = sqlite3_prepare_v3(d->conn, writer_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                &d->st[i], NULL);
        if (rc != SQLITE_OK) {
            sql_msg(err, errlen, d->path, "preparing statements", d->conn, rc);
            goto fail;
        }
    }
    if (pthread_create(&d->thread, NULL, writer_main, d) != 0) {
        cr_errf(err, errlen, "%s: cannot start the writer thread", d->path);
        goto fail;
    }
    d->thread_started = 1;
    return d;
oom:
    cr_errf(err, errlen, "out of memory opening the database in %s", state_dir);
fail:
    if (d != NULL)
        db_free(d);
    return NULL;
}

int db_close(db *d)
{
    int rc;

    if (d == NULL)
        return 0;
    pthread_mutex_lock(&d->mu);
    d->closing = 1;
    pthread_cond_broadcast(&d->nonempty);
    pthread_cond_broadcast(&d->notfull);
    pthread_cond_broadcast(&d->retry_cv);
    pthread_mutex_unlock(&d->mu);
    if (d->thread_started)
        pthread_join(d->thread, NULL);
    /* The writer is gone: this thread owns conn again. */
    for (int i = 0; i < ST_COUNT; i++) {
        sqlite3_finalize(d->st[i]);
        d->st[i] = NULL;
    }
    sqlite3_exec(d->conn, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    rc = d->failed != 0 ? d->failed : d->sticky;
    db_free(d);
    return rc;
}

int64_t db_recovered_in_flight(const db *d) { return d->recovered; }

const char *db_crawl_id(const db *d) { return d->crawl_id; }

int db_is_stalled(db *d) { return atomic_load_explicit(&d->pausing, memory_order_relaxed); }

void db_give_up(db *d)
{
    pthread_mutex_lock(&d->mu);
    if (d->stalled) {
        d->abandon = 1;
        pthread_cond_broadcast(&d->retry_cv);
        pthread_cond_broadcast(&d->notfull);
    }
    pthread_mutex_unlock(&d->mu);
}

const char *db_path(const db *d) { return d->path; }

/* ---- the queue (producers) ---- */

static int on_writer(db *d)
{
    return d->thread_started && pthread_equal(pthread_self(), d->thread);
}

/* Copies *o into the ring (mu held), waiting while it is full. */
static int enqueue_locked(db *d, const struct op *o)
{
    while (d->count == d->cap && !d->closing && d->failed == 0 && !d->abandon)
        pthread_cond_wait(&d->notfull, &d->mu);
    if (d->failed != 0)
        return d->failed;
    if (d->abandon)
        return d->stall_code ? d->stall_code : -ECANCELED;
    if (d->closing)
        return -ESHUTDOWN;
    d->ring[(d->head + d->count) % d->cap] = *o;
    d->count++;
    if (o->w != NULL)
        d->urgent++;
    /* a gathering writer is woken only when its wait should end */
    if (!d->gathering || o->w != NULL || d->count >= (size_t)d->batch_size)
        pthread_cond_signal(&d->nonempty);
    return 0;
}

/* Queues *o without waiting for its result. On failure frees o->mem. */
static int enqueue(db *d, const struct op *o)
{
    int rc;

    if (on_writer(d)) {
        cr_free(o->mem);
        return -EDEADLK;
    }
    pthread_mutex_lock(&d->mu);
    rc = enqueue_locked(d, o);
    pthread_mutex_unlock(&d->mu);
    if (rc < 0)
        cr_free(o->mem);
    return rc;
}

/* Queues o (whose strings the caller keeps alive) and waits for it. */
static int enqueue_wait(db *d, struct op *o, int64_t *id)
{
    struct waiter w = { .pending = 0 };
    int status = 0, rc;

    if (on_writer(d))
        return -EDEADLK;
    pthread_cond_init(&w.cv, NULL);
    o->w = &w;
    o->out_status = &status;
    o->out_id = id;
    pthread_mutex_lock(&d->mu);
    rc = enqueue_locked(d, o);
    if (rc == 0)
        w.pending = 1;
    while (w.pending > 0)
        pthread_cond_wait(&w.cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    pthread_cond_destroy(&w.cv);
    return rc < 0 ? rc : status;
}

static int fill_insert(const db_url *u, struct op *o, int copy)
{
    size_t ul, hl, fl = 0;
    char *m;

    if (u == NULL || u->url == NULL || u->host == NULL || u->depth < 0 || u->parent < 0
        || u->hops < 0
        || u->kind < 0 || u->kind >= DB_KIND_COUNT || u->state < 0
        || u->state >= DB_STATE_COUNT || (u->bare && u->state != DB_STATE_SEEN_ONLY))
        return -EINVAL;
    ul = u->url_len ? u->url_len : strlen(u->url);
    hl = u->host_len ? u->host_len : strlen(u->host);
    if (u->fetch_url != NULL)
        fl = u->fetch_url_len ? u->fetch_url_len : strlen(u->fetch_url);
    if (ul == 0)
        return -EINVAL;
    if (ul > DB_URL_MAX || hl > DB_HOST_MAX || fl > DB_URL_MAX)
        return -E2BIG;
    if (fl == ul && memcmp(u->fetch_url, u->url, ul) == 0)
        fl = 0; /* stored as NULL: the same as the key */
    memset(o, 0, sizeof *o);
    o->type = OP_INSERT;
    o->depth = u->depth;
    o->parent = u->parent;
    o->kind = u->kind;
    o->state = u->state;
    o->discovered_at = u->discovered_at ? u->discovered_at : cr_wall_ms();
    o->linked = u->linked_s ? u->linked_s : o->discovered_at / 1000;
    o->hops = u->hops;
    o->absent = u->absent;
    o->keep_linked = u->keep_linked;
    o->bare = u->bare;
    o->url_len = ul;
    o->host_len = hl;
    o->fetch_url_len = fl;
    o->fp = key_fp(u->url, ul);
    if (!copy) {
        o->url = u->url;
        o->host = u->host;
        o->fetch_url = fl ? u->fetch_url : NULL;
        return 0;
    }
    m = cr_malloc(ul + hl + fl + 3);
    if (m == NULL)
        return -ENOMEM;
    memcpy(m, u->url, ul);
    m[ul] = '\0';
    memcpy(m + ul + 1, u->host, hl);
    m[ul + 1 + hl] = '\0';
    if (fl)
        memcpy(m + ul + hl + 2, u->fetch_url, fl);
    m[ul + hl + 2 + fl] = '\0';
    o->mem = m;
    o->url = m;
    o->host = m + ul + 1;
    o->fetch_url = fl ? m + ul + hl + 2 : NULL;
    return 0;
}

int db_insert_url(db *d, const db_url *u, db_done_fn cb, void *ud)
{
    struct op o;
    int rc = fill_insert(u, &o, 1);

    if (rc < 0)
        return rc;
    o.cb = cb;
    o.ud = ud;
    return enqueue(d, &o);
}

int db_insert_url_wait(db *d, const db_url *u, int64_t *id)
{
    struct op o;
    int rc = fill_insert(u, &o, 0);

    if (id != NULL)
        *id = 0;
    if (rc < 0)
        return rc;
    return enqueue_wait(d, &o, id);
}

int db_insert_urls_wait(db *d, const db_url *u, size_t n, int *status, int64_t *ids)
{
    struct waiter w = { .pending = 0 };
    int rc = 0;

    if (on_writer(d))
        return -EDEADLK;
    if (n > 0 && (u == NULL || status == NULL))
        return -EINVAL;
    pthread_cond_init(&w.cv, NULL);
    /* Held while queueing (released while the queue is full), so an idle
     * writer takes the whole lot, up to batch_size, in one transaction. */
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < n; i++) {
        struct op o;
        int r = fill_insert(&u[i], &o, 0);
        if (ids != NULL)
            ids[i] = 0;
        if (r < 0) {
            status[i] = r;
            continue;
        }
        o.w = &w;
        o.out_status = &status[i];
        o.out_id = ids != NULL ? &ids[i] : NULL;
        r = enqueue_locked(d, &o);
        if (r < 0) {
            for (size_t j = i; j < n; j++)
                status[j] = r;
            rc = r;
            break;
        }
        w.pending++;
    }
    /* the queued ops borrow u's strings: wait for all of them, even on error */
    while (w.pending > 0)
        pthread_cond_wait(&w.cv, &d->mu);
    pthread_mutex_unlock(&d->mu);
    pthread_cond_destroy(&w.cv);
    return rc;
}

static size_t capped_len(const char *s)
{
    return s == NULL ? 0 : strnlen(s, DB_TEXT_MAX);
}

int db_record_outcome(db *d, int64_t id, const db_outcome *oc)
{
    struct op o;
    size_t el, cl;
    char *m;

    if (oc == NULL || id <= 0 || oc->state < 0 || oc->state >= DB_STATE_COUNT)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.type = OP_OUTCOME;
    o.id = id;
    o.state = oc->state;
    o.http_status = oc->http_status;
    o.bytes = oc->bytes;
    o.fetch_ms = oc->fetch_ms;
    o.attempts = oc->attempts;
    o.fetched_at = oc->fetched_at ? oc->fetched_at : cr_wall_ms();
    el = capped_len(oc->error);
    cl = capped_len(oc->content_type);
    if (oc->error != NULL || oc->content_type != NULL) {
        m = cr_malloc(el + cl + 2);
        if (m == NULL)
            return -ENOMEM;
        if (oc->error != NULL) {
            memcpy(m, oc->error, el);
            o.error = m;
        }
        m[el] = '\0';
        if (oc->content_type != NULL) {
            memcpy(m + el + 1, oc->content_type, cl);
            o.ctype = m + el + 1;
        }
        m[el + 1 + cl] = '\0';
        o.mem = m;
    }
    return enqueue(d, &o);
}

int db_set_state(db *d, int64_t id, int state)
{
    struct op o;

    if (id <= 0 || state < 0 || state >= DB_STATE_COUNT)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.type = OP_STATE;
    o.id = id;
    o.state = state;
    return enqueue(d, &o);
}

/* ---- fetch history (re-crawl) ----
 * OP_HISTORY carries its four strings in mem and reuses op fields: url =
 * etag, fetch_url = last_modified, error = digest, ctype = warc_id (each
 * NULL when absent), host = warc_uri; fetched_at = next_at (< 0: NULL), fetch_ms =
 * interval_s, bytes = warc_date, hops = gone, attempts = changed,
 * parent = size.
 * OP_DUE: id, fetched_at = the due time, bytes = lastmod. */
int db_record_history(db *d, int64_t id, const db_history *h)
{
    struct op o;
    const char *in[5];
    size_t len[5], total = 0;
    char *m;

    if (h == NULL || id <= 0 || h->interval_s < 0)
        return -EINVAL;
    in[0] = h->etag;
    in[1] = h->last_modified;
    in[2] = h->digest;
    in[3] = h->warc_id;
    in[4] = h->warc_uri;
    for (int i = 0; i < 5; i++) {
        len[i] = i == 4 ? (in[i] ? strnlen(in[i], DB_URL_MAX) : 0) : capped_len(in[i]);
        total += len[i] + 1;
    }
    m = cr_malloc(total);
    if (m == NULL)
        return -ENOMEM;
    memset(&o, 0, sizeof o);
    o.type = OP_HISTORY;
    o.id = id;
    o.mem = m;
    const char **out[5] = {&o.url, &o.fetch_url, &o.error, &o.ctype, &o.host};
    for (int i = 0; i < 5; i++) {
        memcpy(m, in[i] ? in[i] : "", len[i]);
        m[len[i]] = '\0';
        *out[i] = in[i] ? m : NULL;
        m += len[i] + 1;
    }
    o.fetched_at = h->next_at;
    o.fetch_ms = h->interval_s;
    o.bytes = h->warc_date_ms;
    o.hops = h->gone ? 1 : 0;
    o.attempts = h->changed ? 1 : 0;
    o.parent = h->size;
    return enqueue(d, &o);
}

int db_requeue_due(db *d, int64_t id)
{
    struct op o;

    if (id <= 0)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.type = OP_STATE;
    o.id = id;
    o.state = DB_STATE_QUEUED;
    o.hops = 1;
    return enqueue(d, &o);
}

int db_make_due(db *d, int64_t id, int64_t lastmod_ms, int64_t now_ms)
{
    struct op o;

    if (id <= 0 || lastmod_ms < 0)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.type = OP_DUE;
    o.id = id;
    o.fetched_at = now_ms > 0 ? now_ms : cr_wall_ms();
    o.bytes = lastmod_ms;
    return enqueue(d, &o);
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    if (v != NULL)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

/* v when it is positive, else NULL (a value not known). */
static void bind_pos_or_null(sqlite3_stmt *s, int i, int64_t v)
{
    if (v > 0)
        sqlite3_bind_int64(s, i, v);
    else
        sqlite3_bind_null(s, i);
}

static int step_done(sqlite3_stmt *s);

static int apply_history(db *d, struct op *o)
{
    sqlite3_stmt *s = d->st[o->type == OP_HISTORY ? ST_HISTORY : ST_DUE];
    int rc;

    sqlite3_bind_int64(s, 1, o->id);
    if (o->type == OP_DUE) {
        sqlite3_bind_int64(s, 2, o->fetched_at);
        sqlite3_bind_int64(s, 3, o->bytes);
    } else {
        if (o->fetched_at >= 0)
            sqlite3_bind_int64(s, 2, o->fetched_at);
        else
            sqlite3_bind_null(s, 2);
        sqlite3_bind_int64(s, 3, o->fetch_ms);
        bind_text_or_null(s, 4, o->url);
        bind_text_or_null(s, 5, o->fetch_url);
        bind_text_or_null(s, 6, o->error);
        bind_text_or_null(s, 7, o->ctype);
        bind_pos_or_null(s, 8, o->bytes);
        sqlite3_bind_int(s, 9, o->hops);
        sqlite3_bind_int(s, 10, o->attempts);
        sqlite3_bind_int64(s, 11, o->parent);
        bind_text_or_null(s, 12, o->host);
    }
    rc = step_done(s);
    if (rc != SQLITE_OK)
        return rc;
    /* OP_DUE on a row that is not due-able is no error: it stays as it was */
    o->status = o->type == OP_HISTORY && sqlite3_changes(d->conn) == 0 ? -ENOENT : 0;
    return SQLITE_OK;
}

/* Queues an op carrying two strings (a and b, copied into one allocation). */
static int enqueue_text2(db *d, int type, int64_t num, const char *a, const char *b)
{
    struct op o;
    size_t al, bl;
    char *m;

    al = strlen(a);
    bl = strlen(b);
    if (al > DB_HOST_MAX || bl > DB_URL_MAX)
        return -E2BIG;
    m = cr_malloc(al + bl + 2);
    if (m == NULL)
        return -ENOMEM;
    memcpy(m, a, al + 1);
    memcpy(m + al + 1, b, bl + 1);
    memset(&o, 0, sizeof o);
    o.type = type;
    o.id = num;
    o.url = m;
    o.error = m + al + 1;
    o.mem = m;
    return enqueue(d, &o);
}

int db_put_meta(db *d, const char *key, const char *value)
{
    if (key == NULL || value == NULL || strcmp(key, "schema_version") == 0)
        return -EINVAL;
    return enqueue_text2(d, OP_META, 0, key, value);
}

/* OP_SAMPLE carries the packed row (storage/samples) in mem, its length in
 * url_len. */
int db_put_sample(db *d, int64_t t_ms, const char *data)
{
    struct op o;
    unsigned char *row;
    size_t len;
    int rc;

    if (t_ms < 0 || data == NULL)
        return -EINVAL;
    rc = samples_pack(data, strlen(data), &row, &len);
    if (rc < 0)
        return rc;
    memset(&o, 0, sizeof o);
    o.type = OP_SAMPLE;
    o.id = t_ms;
    o.mem = row;
    o.url_len = len;
    return enqueue(d, &o);
}

/* OP_PRUNE carries its tiers in mem, their count in kind, now_ms in id and
 * since_ms in parent; the writer hands them to samples_prune(). */
int db_prune_samples(db *d, const db_sample_tier *tiers, size_t n, int64_t now_ms,
                     int64_t since_ms)
{
    struct op o;

    if (samples_tiers_check(tiers, n) < 0 || now_ms < 0)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.mem = cr_malloc(n * sizeof *tiers);
    if (o.mem == NULL)
        return -ENOMEM;
    memcpy(o.mem, tiers, n * sizeof *tiers);
    o.type = OP_PRUNE;
    o.kind = (int)n;
    o.id = now_ms;
    o.parent = since_ms;
    return enqueue(d, &o);
}

int db_touch_linked(db *d, const char *url, size_t url_len, int64_t linked)
{
    struct op o;

    if (url == NULL || url_len == 0 || url_len > DB_URL_MAX)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.mem = cr_malloc(url_len + 1);
    if (o.mem == NULL)
        return -ENOMEM;
    memcpy(o.mem, url, url_len);
    ((char *)o.mem)[url_len] = '\0';
    o.type = OP_LINKED;
    o.url = o.mem;
    o.url_len = url_len;
    o.fp = key_fp(url, url_len);
    o.linked = linked;
    return enqueue(d, &o);
}

int db_forget(db *d, int64_t cutoff, int limit, db_done_fn cb, void *ud)
{
    struct op o;

    if (limit < 1 || limit > DB_FORGET_MAX)
        return -EINVAL;
    memset(&o, 0, sizeof o);
    o.mem = cr_calloc((size_t)limit, sizeof(int64_t)); /* the deleted ids */
    if (o.mem == NULL)
        return -ENOMEM;
    o.type = OP_FORGET;
    o.linked = cutoff;
    o.fetched_at = cr_wall_ms(); /* rows due by now are kept */
    o.kind = limit;
    o.cb = cb;
    o.ud = ud;
    return enqueue(d, &o);
}

int db_put_host_stats(db *d, const char *host, int64_t pages, const char *data)
{
    if (host == NULL || data == NULL || pages < 0)
        return -EINVAL;
    return enqueue_text2(d, OP_HOST, pages, host, data);
}

int db_flush(db *d)
{
    return db_flush_mark(d, NULL);
}

int db_flush_async(db *d, db_done_fn cb, void *ud)
{
    struct op o;

    memset(&o, 0, sizeof o);
    o.type = OP_FLUSH;
    o.cb = cb;
    o.ud = ud;
    return enqueue(d, &o);
}

int db_flush_mark(db *d, int64_t *mark)
{
    struct op o;

    memset(&o, 0, sizeof o);
    o.type = OP_FLUSH;
    if (mark != NULL)
        *mark = 0;
    return enqueue_wait(d, &o, mark);
}

int db_last_error(db *d, char *buf, size_t len)
{
    int code;

    pthread_mutex_lock(&d->mu);
    code = d->last_code;
    cr_errf(buf, len, "%s", d->errmsg);
    pthread_mutex_unlock(&d->mu);
    return code;
}

void db_get_stats(db *d, db_stats *st)
{
    pthread_mutex_lock(&d->mu);
    memcpy(st->rows, d->counts, sizeof d->counts);
    st->ops = d->n_ops;
    st->commits = d->n_commits;
    st->failed_ops = d->n_failed;
    st->forgotten = d->n_forgotten;
    st->runs = d->runs;
    st->queued = (int64_t)d->count;
    st->stalled = d->stalled;
    st->stall_code = d->stalled ? d->stall_code : 0;
    st->failed = d->failed;
    st->held = d->held + (int64_t)d->count;
    st->stalls = d->n_stalls;
    st->stall_ms = d->stall_ms_total + (d->stalled ? cr_mono_ms() - d->stall_since_ms : 0);
    st->retry_in_ms = d->stalled && d->retry_at_ms > cr_mono_ms() ? d->retry_at_ms - cr_mono_ms() : 0;
    pthread_mutex_unlock(&d->mu);
}

const char *db_error_reason(int code)
{
    switch (code) {
    case 0: return "no error";
    case -ENOSPC: return "disk full";
    case -EIO: return "I/O error";
    case -EBUSY: return "database busy";
    case -ENOMEM: return "out of memory";
    case -EROFS: return "read-only";
    case -EACCES: return "cannot write";
    case -EBADMSG: return "database corrupt";
    case -E2BIG: return "value too big";
    default: return "storage error";
    }
}

/* ---- the writer thread ---- */

/* Records an error (under mu): kept as the last message, and as the sticky
 * code until a flush reports it. */
static void note_error(db *d, int code, const char *text)
{
    pthread_mutex_lock(&d->mu);
    if (d->sticky == 0)
        d->sticky = code;
    d->last_code = code;
    cr_errf(d->errmsg, sizeof d->errmsg, "%s", text);
    pthread_mutex_unlock(&d->mu);
}

/* A stall's current error: the last message, not (yet) a sticky error,
 * since the held batch may still commit. */
static void note_stall(db *d, int code, const char *text)
{
    pthread_mutex_lock(&d->mu);
    d->last_code = code;
    cr_errf(d->errmsg, sizeof d->errmsg, "%s", text);
    pthread_mutex_unlock(&d->mu);
}

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);

    sqlite3_reset(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* ST_LINKED or ST_LINKED_SEEN for o. SQLite result code. */
static int step_linked(sqlite3_stmt *s, const struct op *o)
{
    sqlite3_bind_text(s, 1, o->url, (int)o->url_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, o->linked);
    sqlite3_bind_int64(s, 3, o->fp);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A row's last_linked moves forward to o->linked (never back); bare rows
 * keep a stamp only in a store opened for retention. */
static int apply_linked(db *d, struct op *o)
{
    int rc = step_linked(d->st[ST_LINKED], o);
    if (rc == SQLITE_OK && d->has_seen && d->linked_index)
        rc = step_linked(d->st[ST_LINKED_SEEN], o);
    return rc;
}

/* Deletes up to o->kind rows stamped before o->linked; o->status = how
 * many, their ids in o->mem. The batch's counts follow (delta). */
static int apply_forget(db *d, struct op *o)
{
    sqlite3_stmt *pick = d->st[ST_FORGET_PICK], *del = d->st[ST_FORGET_DEL];
    int64_t *ids = o->mem;
    int states[DB_FORGET_MAX];
    int n = 0, rc;
    sqlite3_bind_int64(pick, 1, o->linked);
    sqlite3_bind_int(pick, 2, o->kind);
    sqlite3_bind_int64(pick, 3, o->fetched_at);
    while (n < o->kind && (rc = sqlite3_step(pick)) == SQLITE_ROW) {
        ids[n] = sqlite3_column_int64(pick, 0);
        states[n] = sqlite3_column_int(pick, 1);
        n++;
    }
    sqlite3_reset(pick);
    if (n < o->kind && rc != SQLITE_DONE)
        return rc;
    int from_urls = n; /* then the bare rows, with what the limit leaves */
    if (n < o->kind && d->has_seen && d->linked_index) {
        pick = d->st[ST_FORGET_PICK_SEEN];
        sqlite3_bind_int64(pick, 1, o->linked);
        sqlite3_bind_int(pick, 2, o->kind - n);
        while (n < o->kind && (rc = sqlite3_step(pick)) == SQLITE_ROW) {
            ids[n] = sqlite3_column_int64(pick, 0);
            states[n] = DB_STATE_SEEN_ONLY;
            n++;
        }
        sqlite3_reset(pick);
        if (n < o->kind && rc != SQLITE_DONE)
            return rc;
    }
    for (int i = 0; i < n; i++) {
        del = d->st[i < from_urls ? ST_FORGET_DEL : ST_FORGET_DEL_SEEN];
        sqlite3_bind_int64(del, 1, ids[i]);
        rc = sqlite3_step(del);
        sqlite3_reset(del);
        if (rc != SQLITE_DONE)
            return rc;
        if (states[i] >= 0 && states[i] < DB_STATE_COUNT)
            d->delta[states[i]]--;
    }
    o->status = n;
    return SQLITE_OK;
}

/* The seen test's arbiter: a URL is inserted only when no row has its fp
 * and text (the writer is the only one inserting, so look-up-then-insert
 * is atomic within the transaction). An insert the caller marked absent
 * (its seen filter holds every stored key and said NO) skips the look-up:
 * one statement per new URL. */
static int apply_insert(db *d, struct op *o)
{
    sqlite3_stmt *s = d->st[ST_FIND];
    int64_t fp = o->fp;
    int rc;

    if (!o->absent) {
        sqlite3_bind_text(s, 1, o->url, (int)o->url_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, fp);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            o->id = sqlite3_column_int64(s, 0);
            o->status = 0;
        }
        sqlite3_reset(s);
        if (rc == SQLITE_ROW) /* linked again: the row takes the newer stamp */
            return o->keep_linked ? SQLITE_OK : apply_linked(d, o);
        if (rc != SQLITE_DONE)
            return rc;
    }
    if (d->next_id == 0) { /* the batch's first insert: ids go on from the highest */
        s = d->st[ST_MAX_ID];
        rc = sqlite3_step(s);
        d->next_id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) + 1 : 0;
        sqlite3_reset(s);
        if (rc != SQLITE_ROW)
            return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
    }
    o->id = d->next_id;
    if (o->bare) {
        s = d->st[ST_INSERT_SEEN];
        sqlite3_bind_int64(s, 1, o->id);
        sqlite3_bind_text(s, 2, o->url, (int)o->url_len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, d->linked_index ? o->linked : 0);
    } else {
        s = d->st[ST_INSERT];
        sqlite3_bind_text(s, 1, o->url, (int)o->url_len, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, o->host, (int)o->host_len, SQLITE_STATIC);
        sqlite3_bind_int(s, 3, o->depth);
        bind_pos_or_null(s, 4, o->parent);
        sqlite3_bind_int(s, 5, o->kind);
        sqlite3_bind_int(s, 6, o->state);
        sqlite3_bind_int64(s, 7, o->discovered_at);
        sqlite3_bind_int(s, 8, o->hops);
        if (o->fetch_url != NULL)
            sqlite3_bind_text(s, 9, o->fetch_url, (int)o->fetch_url_len, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 9);
        sqlite3_bind_int64(s, 10, o->linked);
        sqlite3_bind_int64(s, 11, fp);
        sqlite3_bind_int64(s, 12, o->id);
    }
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return rc;
    d->next_id++;
    d->has_seen |= o->bare;
    s = d->st[ST_FPADD]; /* the seen-set's entry, in the active run */
    sqlite3_bind_int64(s, 1, fp);
    sqlite3_bind_int64(s, 2, o->id);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return rc;
    if (o->id > d->batch_max)
        d->batch_max = o->id;
    o->status = 1;
    d->delta[o->state]++;
    d->batch_new++;
    return SQLITE_OK;
}

/* OUTCOME and STATE: reads the old state (for the counts), then updates. */
static int apply_update(db *d, struct op *o)
{
    sqlite3_stmt *s = d->st[ST_GETSTATE];
    int64_t old;
    int rc;

    sqlite3_bind_int64(s, 1, o->id);
    rc = sqlite3_step(s);
    old = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) {
        o->status = -ENOENT;
        return SQLITE_OK;
    }
    if (rc != SQLITE_ROW)
        return rc;
    if (o->type == OP_STATE) {
        s = d->st[o->hops == 1 ? ST_REQUEUE : ST_SETSTATE]; /* hops 1: db_requeue_due */
        sqlite3_bind_int64(s, 1, o->id);
        sqlite3_bind_int(s, 2, o->state);
    } else {
        s = d->st[ST_OUTCOME];
        sqlite3_bind_int64(s, 1, o->id);
        sqlite3_bind_int(s, 2, o->state);
        bind_pos_or_null(s, 3, o->http_status);
        sqlite3_bind_int64(s, 4, o->bytes);
        sqlite3_bind_int64(s, 5, o->fetch_ms);
        sqlite3_bind_int(s, 6, o->attempts);
        sqlite3_bind_int64(s, 7, o->fetched_at);
        bind_text_or_null(s, 8, o->error);
        bind_text_or_null(s, 9, o->ctype);
    }
    rc = step_done(s);
    if (rc != SQLITE_OK)
        return rc;
    if (old >= 0 && old < DB_STATE_COUNT)
        d->delta[old]--;
    d->delta[o->state]++;
    o->status = 0;
    return SQLITE_OK;
}

#ifdef CRAWLD_FAULT_HOOKS
/* Test builds only: CRAWLD_FAULTS="N:CODE:TIMES,..." makes transaction
 * attempts N .. N+TIMES-1 (counted from 1 per db_open) fail at COMMIT with
 * CODE (full, ioerr or busy), as a filling disk or a competing writer
 * would. */
static void faults_parse(db *d)
{
    const char *e = getenv("CRAWLD_FAULTS");

    while (e != NULL && *e != '\0' && d->nfaults < (int)(sizeof d->faults / sizeof d->faults[0])) {
        char name[16] = "";
        long long at = 0, times = 0;
        int used = 0;
        if (sscanf(e, "%lld:%15[a-z]:%lld%n", &at, name, &times, &used) != 3 || at < 1 || times < 1)
            break;
        struct fault *f = &d->faults[d->nfaults++];
        f->at = at;
        f->times = times;
        f->code = strcmp(name, "ioerr") == 0  ? SQLITE_IOERR
                  : strcmp(name, "busy") == 0 ? SQLITE_BUSY
                                              : SQLITE_FULL;
        e += used;
        if (*e == ',')
            e++;
    }
}

/* The injected result of this attempt's COMMIT, or SQLITE_OK. */
static int fault_now(db *d)
{
    d->attempts++;
    for (int i = 0; i < d->nfaults; i++)
        if (d->attempts >= d->faults[i].at && d->attempts < d->faults[i].at + d->faults[i].times)
            return d->faults[i].code;
    return SQLITE_OK;
}
#endif

static int is_seen_only_insert(const struct op *o)
{
    return o->type == OP_INSERT && o->state == DB_STATE_SEEN_ONLY;
}

/* Sorts order[0..n) by fingerprint: an LSD radix sort, a byte per pass
 * (a pass whose byte is the same in every key is skipped), stable. The
 * key is the fingerprint with its sign bit flipped, so that unsigned
 * order is SQLite's integer order. On 100,000 ops it replaced qsort,
 * which took ~5% of the writer's CPU in `crawld dedup`. */
static void sort_by_fp(db *d, struct op **order, size_t n)
{
    struct keyed *a = d->sortbuf, *b = d->sortbuf + n, *t;
    size_t count[256];

    for (size_t i = 0; i < n; i++)
        a[i] = (struct keyed){ (uint64_t)order[i]->fp ^ (1ULL << 63), order[i] };
    for (int shift = 0; shift < 64; shift += 8) {
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++)
            count[(a[i].key >> shift) & 0xff]++;
        if (count[(a[0].key >> shift) & 0xff] == n)
            continue;
        for (size_t c = 0, sum = 0; c < 256; c++) {
            size_t k = count[c];
            count[c] = sum;
            sum += k;
        }
        for (size_t i = 0; i < n; i++)
            b[count[(a[i].key >> shift) & 0xff]++] = a[i];
        t = a;
        a = b;
        b = t;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = a[i].o;
}

/* The order apply_batch applies batch[0..n) in: queue order, except that
 * each run of consecutive seen_only inserts (the `crawld dedup` rows, which
 * no frontier query orders by id) is sorted by fingerprint, so the fp index
 * is walked in key order, not at random (DRUM's sorted batch update). Their
 * ids then follow fp order within the run; every id of a batch is above
 * every id committed before it, which is all catch-up needs. */
static void order_batch(db *d, struct op *batch, size_t n)
{
    size_t i = 0;

    for (size_t k = 0; k < n; k++)
        d->order[k] = &batch[k];
    while (i < n) {
        size_t j = i;
        while (j < n && is_seen_only_insert(&batch[j]))
            j++;
        if (j - i > 1)
            sort_by_fp(d, d->order + i, j - i);
        i = j > i ? j : i + 1;
    }
}

/* Applies batch[0..n) in one transaction. On an SQLite failure rolls it
 * back, leaves the ops as they were (so the batch can be tried again) and
 * returns the error (a negative errno) with its message in text; 0 once
 * committed. */
static int apply_batch(db *d, struct op *batch, size_t n, char *text, size_t textlen)
{
    const char *what = "starting a transaction";
    int rc, op_err = 0;
    int64_t missing = 0;

    memset(d->delta, 0, sizeof d->delta);
    d->batch_max = d->max_id;
    d->batch_new = 0;
    d->next_id = 0; /* read again: a slot import may have added rows since */
    order_batch(d, batch, n);
    rc = step_done(d->st[ST_BEGIN]);
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        struct op *o = d->order[i];
        switch (o->type) {
        case OP_INSERT:
            what = "inserting a URL";
            rc = apply_insert(d, o);
            break;
        case OP_META:
            what = "writing a meta value";
            sqlite3_bind_text(d->st[ST_META], 1, o->url, -1, SQLITE_STATIC);
            sqlite3_bind_text(d->st[ST_META], 2, o->error, -1, SQLITE_STATIC);
            rc = step_done(d->st[ST_META]);
            o->status = 0;
            break;
        case OP_SAMPLE:
            what = "writing a sample";
            sqlite3_bind_int64(d->st[ST_SAMPLE], 1, o->id);
            sqlite3_bind_blob(d->st[ST_SAMPLE], 2, o->mem, (int)o->url_len, SQLITE_STATIC);
            rc = step_done(d->st[ST_SAMPLE]);
            o->status = 0;
            break;
        case OP_HOST:
            what = "writing a host's figures";
            sqlite3_bind_text(d->st[ST_HOST], 1, o->url, -1, SQLITE_STATIC);
            sqlite3_bind_int64(d->st[ST_HOST], 2, o->id);
            sqlite3_bind_text(d->st[ST_HOST], 3, o->error, -1, SQLITE_STATIC);
            rc = step_done(d->st[ST_HOST]);
            o->status = 0;
            break;
        case OP_LINKED:
            what = "stamping a URL linked again";
            rc = apply_linked(d, o);
            o->status = 0;
            break;
        case OP_FORGET:
            what = "forgetting URLs nobody links to";
            rc = apply_forget(d, o);
            break;
        case OP_PRUNE:
            what = "pruning old samples";
            rc = samples_prune(d->conn, o->mem, (size_t)o->kind, o->id, o->parent, NULL);
            o->status = 0;
            o->id = 0;
            break;
        case OP_OUTCOME:
        case OP_STATE:
            what = "updating a URL";
            rc = apply_update(d, o);
            if (rc == SQLITE_OK && o->status == -ENOENT && op_err == 0) {
                op_err = -ENOENT;
                missing = o->id;
            }
            break;
        case OP_HISTORY:
        case OP_DUE:
            what = "updating a URL's fetch history";
            rc = apply_history(d, o);
            if (rc == SQLITE_OK && o->status == -ENOENT && op_err == 0) {
                op_err = -ENOENT;
                missing = o->id;
            }
            break;
        case OP_FLUSH:
            o->id = d->batch_max; /* every row up to here commits with this batch */
            o->status = 0;
            break;
        default:
            o->status = 0;
            break;
        }
    }
    if (rc == SQLITE_OK) {
        what = "committing";
#ifdef CRAWLD_FAULT_HOOKS
        rc = fault_now(d);
        if (rc != SQLITE_OK) {
            step_done(d->st[ST_ROLLBACK]);
            sql_msg(text, textlen, d->path, what, NULL, rc);
            memset(d->delta, 0, sizeof d->delta);
            return sql_errno(rc);
        }
#endif
        rc = step_done(d->st[ST_COMMIT]);
    }
    if (rc != SQLITE_OK) {
        int code = sql_errno(rc);
        sql_msg(text, textlen, d->path, what, d->conn, rc);
        if (!sqlite3_get_autocommit(d->conn))
            step_done(d->st[ST_ROLLBACK]);
        memset(d->delta, 0, sizeof d->delta);
        return code;
    }
    d->max_id = d->batch_max;
    d->fp_active += d->batch_new;
    if (op_err != 0) {
        char msg[ERRMSG_MAX];
        cr_errf(msg, sizeof msg, "%s: no row with id %lld to update", d->path,
            (long long)missing);
        note_error(d, op_err, msg);
    }
    return 0;
}

/* Errors a store recovers from by itself (space freed, a lock released, a
 * device back): the writer holds its batch and tries again. */
static int transient(int code)
{
    return code == -ENOSPC || code == -EIO || code == -EBUSY || code == -ENOMEM
        || code == -EROFS || code == -EACCES;
}

/* The writer holds batch[0..n) that the store refused with code: retries
 * it with backoff until it commits (returns 0), or gives up (returns the
 * error) when the error is not transient, max_stall_ms has passed, or the
 * db is closing and one more try failed. Nothing queued after the batch
 * is applied before it, so the order of operations is kept: a page's
 * outcome never commits before the links found on it. */
static int stall(db *d, struct op *batch, size_t n, int code, char *text, size_t textlen)
{
    int64_t start = cr_mono_ms(), wait = 100;
    int last_try = 0;

    pthread_mutex_lock(&d->mu);
    atomic_store(&d->pausing, 1);
    d->stalled = 1;
    d->stall_code = code;
    d->stall_since_ms = start;
    d->held = (int64_t)n;
    d->n_stalls++;
    pthread_mutex_unlock(&d->mu);
    note_stall(d, code, text);
    for (;;) {
        pthread_mutex_lock(&d->mu);
        int abandon = d->abandon;
        pthread_mutex_unlock(&d->mu);
        if (!transient(code) || last_try || abandon
            || (d->max_stall_ms > 0 && cr_mono_ms() - start >= d->max_stall_ms))
            break;
        struct timespec until;
        cr_deadline(wait, &until);
        pthread_mutex_lock(&d->mu);
        d->retry_at_ms = cr_mono_ms() + wait;
        while (!d->closing && !d->abandon && cr_mono_ms() < d->retry_at_ms)
            if (pthread_cond_timedwait(&d->retry_cv, &d->mu, &until) == ETIMEDOUT)
                break;
        last_try = d->closing;
        if (d->abandon) {
            pthread_mutex_unlock(&d->mu);
            break;
        }
        pthread_mutex_unlock(&d->mu);
        wait = wait * 2 > 2000 ? 2000 : wait * 2;
        code = apply_batch(d, batch, n, text, textlen);
        if (code == 0)
            break;
        pthread_mutex_lock(&d->mu);
        d->stall_code = code;
        pthread_mutex_unlock(&d->mu);
        note_stall(d, code, text);
    }
    pthread_mutex_lock(&d->mu);
    d->stalled = 0;
    d->held = 0;
    d->stall_ms_total += cr_mono_ms() - start;
    if (code == 0)
        atomic_store(&d->pausing, 0); /* committed: dispatch may go on */
    if (code != 0) {
        char msg[ERRMSG_MAX];
        d->failed = code;
        cr_errf(msg, sizeof msg, "%s (gave up after %.1f s)", text,
            (double)(cr_mono_ms() - start) / 1000.0);
        cr_errf(d->errmsg, sizeof d->errmsg, "%s", msg);
        d->last_code = code;
        if (d->sticky == 0)
            d->sticky = code;
        pthread_cond_broadcast(&d->notfull);
    }
    pthread_mutex_unlock(&d->mu);
    return code;
}

/* Delivers the results of batch[0..n) in queue order and frees the ops. */
static void finish_batch(db *d, struct op *batch, size_t n, int batch_ok)
{
    pthread_mutex_lock(&d->mu);
    for (int s = 0; s < DB_STATE_COUNT; s++)
        d->counts[s] += d->delta[s];
    d->n_ops += (int64_t)n;
    if (batch_ok)
        d->n_commits++;
    for (size_t i = 0; i < n; i++) {
        d->n_failed += batch[i].status < 0;
        if (batch_ok && batch[i].type == OP_FORGET && batch[i].status > 0)
            d->n_forgotten += batch[i].status;
    }
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < n; i++) {
        struct op *o = &batch[i];
        if (o->cb != NULL) {
            db_result r = { o->status, o->id, o->url, o->url_len, NULL };
            if (o->type == OP_FORGET && o->status > 0)
                r.ids = o->mem;
            o->cb(o->ud, &r);
        }
    }
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < n; i++) {
        struct op *o = &batch[i];
        if (o->w == NULL)
            continue;
        if (o->type == OP_FLUSH) {
            o->status = d->failed != 0 ? d->failed : d->sticky;
            d->sticky = 0;
        }
        if (o->out_status != NULL)
            *o->out_status = o->status;
        if (o->out_id != NULL)
            *o->out_id = o->id;
        /* after this the caller may return: o->w is not touched again */
        if (--o->w->pending == 0)
            pthread_cond_signal(&o->w->cv);
    }
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < n; i++)
        cr_free(batch[i].mem);
}

/* With mu held and work queued: waits up to gather_ms for a full batch,
 * unless someone waits for a queued op or the db is closing. */
static void gather_batch(db *d)
{
    struct timespec until;

    if (d->gather_ms == 0 || d->urgent > 0 || d->closing
        || d->count >= (size_t)d->batch_size)
        return;
    cr_deadline(d->gather_ms, &until);
    d->gathering = 1;
    while (d->urgent == 0 && !d->closing && d->count < (size_t)d->batch_size)
        if (pthread_cond_timedwait(&d->nonempty, &d->mu, &until) == ETIMEDOUT)
            break;
    d->gathering = 0;
}

/* Gives every op of batch[0..n) the error code (nothing was stored). */
static void fail_ops(struct op *batch, size_t n, int code)
{
    for (size_t i = 0; i < n; i++) {
        batch[i].status = code;
        if (batch[i].type == OP_INSERT)
            batch[i].id = 0;
    }
}

/* After a committed batch (its callers answered): one step of the seen-set
 * runs' upkeep (storage/fpruns). A failure changes nothing and is only
 * counted: the runs stay as they were, every look-up stays exact, and the
 * next batch tries again. */
static void upkeep(db *d)
{
    fpruns_step st;
    if (d->runs_settled && d->fp_active < d->run_rows)
        return; /* no SQL on the commit path while nothing can be due */
    int64_t t0 = cr_mono_ms();
#ifdef CRAWLD_FAULT_HOOKS
    /* a disk that is full for the upkeep: no page beyond the file's size */
    int64_t pages = 0;
    int full = getenv("CRAWLD_FAULT_UPKEEP") != NULL
               && query_int(d->conn, "PRAGMA page_count", &pages) == 0;
    if (full) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld", (long long)pages);
        sqlite3_exec(d->conn, sql, NULL, NULL, NULL);
    }
#endif
    int rc = fpruns_maintain(d->conn, &d->fp_active, d->run_rows, FPRUNS_FANIN, &st);
#ifdef CRAWLD_FAULT_HOOKS
    if (full)
        sqlite3_exec(d->conn, "PRAGMA max_page_count = 4294967294", NULL, NULL, NULL);
#endif
    d->runs_settled = rc == SQLITE_OK && !st.rotated && !st.merged;
    if (d->runs_settled)
        return;
    int64_t ms = cr_mono_ms() - t0;
    int runs = 0;
    int64_t active = 0;
    if (rc == SQLITE_OK)
        fpruns_count(d->conn, &active, &runs);
    pthread_mutex_lock(&d->mu);
    if (rc != SQLITE_OK) {
        d->runs.failures++;
    } else {
        d->runs.runs = runs;
        d->runs.freezes += st.rotated;
        d->runs.merges += st.merged > 0;
        d->runs.merged_rows += st.rows;
        d->runs.upkeep_ms += ms;
        if (ms > d->runs.longest_ms)
            d->runs.longest_ms = ms;
    }
    pthread_mutex_unlock(&d->mu);
}

static void *writer_main(void *arg)
{
    db *d = arg;
    char text[ERRMSG_MAX];

    pthread_mutex_lock(&d->mu);
    for (;;) {
        size_t n;
        int rc, failed;

        while (d->count == 0 && !d->closing)
            pthread_cond_wait(&d->nonempty, &d->mu);
        if (d->count == 0)
            break; /* closing and drained */
        gather_batch(d);
        n = d->count < (size_t)d->batch_size ? d->count : (size_t)d->batch_size;
        for (size_t i = 0; i < n; i++) {
            d->batch[i] = d->ring[(d->head + i) % d->cap];
            d->urgent -= d->batch[i].w != NULL;
        }
        d->head = (d->head + n) % d->cap;
        d->count -= n;
        pthread_cond_broadcast(&d->notfull);
        failed = d->failed;
        pthread_mutex_unlock(&d->mu);
        rc = failed;
        if (rc == 0) {
            rc = apply_batch(d, d->batch, n, text, sizeof text);
            if (rc < 0)
                rc = stall(d, d->batch, n, rc, text, sizeof text);
        }
        if (rc < 0)
            fail_ops(d->batch, n, rc);
        finish_batch(d, d->batch, n, rc == 0);
        if (rc == 0)
            upkeep(d);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ---- readers ---- */

static db_reader *reader_open(const char *path, int check, char *err, size_t errlen)
{
    db_reader *rd = cr_calloc(1, sizeof *rd);
    int64_t ntables = 0, version = 0;
    int rc;

    cr_errf(err, errlen, "%s", "");
    if (rd == NULL)
        goto oom;
    rd->path = cr_strdup(path);
    if (rd->path == NULL)
        goto oom;
    if (open_conn(path, SQLITE_OPEN_READONLY, &rd->conn, err, errlen) < 0)
        goto fail;
    if (check) {
        if (probe(rd->conn, path, &ntables, err, errlen) < 0)
            goto fail;
        if (ntables == 0) {
            cr_errf(err, errlen, "%s is not a crawld database (it has no tables)", path);
            goto fail;
        }
        if (read_version(rd->conn, path, &version, err, errlen) < 0)
            goto fail;
        if (version != SCHEMA_VERSION) {
            cr_errf(err, errlen, "%s has schema version %lld; run crawld on it once to"
                " upgrade it to %d", path, (long long)version, SCHEMA_VERSION);
            goto fail;
        }
    }
    for (int i = 0; i < RST_COUNT; i++) {
        rc = sqlite3_prepare_v3(rd->conn, reader_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                &rd->st[i], NULL);
        if (rc != SQLITE_OK) {
            sql_msg(err, errlen, path, "preparing queries", rd->conn, rc);
            goto fail;
        }
    }
    return rd;
oom:
    cr_errf(err, errlen, "out of memory opening a reader on %s", path);
fail:
    db_reader_free(rd);
    return NULL;
}

db_reader *db_reader_open(db *d, char *err, size_t errlen)
{
    return reader_open(d->path, 0, err, errlen);
}

db_reader *db_reader_open_dir(const char *state_dir, char *err, size_t errlen)
{
    char *path;
    struct stat sb;
    db_reader *rd = NULL;

    if (state_dir == NULL || state_dir[0] == '\0') {
        cr_errf(err, errlen, "state_dir is empty");
        return NULL;
    }
    path = join_path(state_dir, DB_FILE);
    if (path == NULL) {
        cr_errf(err, errlen, "out of memory");
        return NULL;
    }
    if (stat(path, &sb) != 0)
        cr_errf(err, errlen, "%s: %s", path, strerror(errno));
    else
        rd = reader_open(path, 1, err, errlen);
    cr_free(path);
    return rd;
}

void db_reader_free(db_reader *rd)
{
    if (rd == NULL)
        return;
    for (int i = 0; i < RST_COUNT; i++)
        sqlite3_finalize(rd->st[i]);
    if (rd->conn != NULL)
        sqlite3_close(rd->conn);
    cr_free(rd->path);
    cr_free(rd);
}

int db_reader_exists(db_reader *rd, const char *url, size_t url_len, int64_t *id)
{
    sqlite3_stmt *s = rd->st[RST_EXISTS];
    int rc;

    if (id != NULL)
        *id = 0;
    if (url == NULL)
        return -EINVAL;
    if (url_len == 0)
        url_len = strlen(url);
    if (url_len > DB_URL_MAX)
        return 0; /* never stored */
    sqlite3_bind_text(s, 1, url, (int)url_len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, key_fp(url, url_len));
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && id != NULL)
        *id = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : sql_errno(rc);
}

int db_reader_get_meta(db_reader *rd, const char *key, char *buf, size_t len)
{
    sqlite3_stmt *s = rd->st[RST_META];
    int rc;

    sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        cr_errf(buf, len, "%s", v ? v : "");
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
    }
    sqlite3_reset(s);
    return rc;
}

int db_reader_row(db_reader *rd, int64_t id, int *state, int *attempts, int *hops)
{
    sqlite3_stmt *s = rd->st[RST_ROW];
    int rc;

    sqlite3_bind_int64(s, 1, id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        if (state != NULL)
            *state = sqlite3_column_int(s, 0);
        if (attempts != NULL)
            *attempts = sqlite3_column_int(s, 1);
        if (hops != NULL)
            *hops = sqlite3_column_int(s, 2);
    }
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
}

static void col_text(sqlite3_stmt *s, int i, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

int db_reader_history(db_reader *rd, int64_t id, db_history_row *h)
{
    sqlite3_stmt *s = rd->st[RST_HIST];
    int rc;

    memset(h, 0, sizeof *h);
    sqlite3_bind_int64(s, 1, id);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        h->next_at = sqlite3_column_type(s, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 0);
        h->interval_s = sqlite3_column_int64(s, 1);
        col_text(s, 2, h->etag, sizeof h->etag);
        col_text(s, 3, h->last_modified, sizeof h->last_modified);
        col_text(s, 4, h->digest, sizeof h->digest);
        col_text(s, 5, h->warc_id, sizeof h->warc_id);
        h->warc_date_ms = sqlite3_column_int64(s, 6);
        h->gone = sqlite3_column_int(s, 7) != 0;
        h->fetches = sqlite3_column_int64(s, 8);
        h->changes = sqlite3_column_int64(s, 9);
        h->http_status = sqlite3_column_int(s, 10);
        h->fetched_at = sqlite3_column_int64(s, 11);
        h->size = sqlite3_column_int64(s, 12);
        if (sqlite3_column_bytes(s, 13) < (int)sizeof h->warc_uri)
            col_text(s, 13, h->warc_uri, sizeof h->warc_uri);
    }
    sqlite3_reset(s);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
}

static int queued_pass(sqlite3_stmt *s, const db_queued_query *q, db_row_fn cb, void *ud,
                       int64_t *n);

int64_t db_reader_due(db_reader *rd, int64_t now_ms, int64_t fetched_before_ms, size_t max,
                      db_row_fn cb, void *ud)
{
    /* the failed rows first (few; their own sort), then the done rows in
     * the due index's order */
    static const int passes[2] = { RST_DUE_FAILED, RST_DUE };
    int64_t n = 0;

    if (cb == NULL)
        return -EINVAL;
    for (int i = 0; i < 2; i++) {
        sqlite3_stmt *s = rd->st[passes[i]];
        db_queued_query q = { .max = max ? max - (size_t)n : 0 };
        int64_t got = 0;
        sqlite3_bind_int64(s, 1, now_ms);
        sqlite3_bind_int64(s, 2, q.max ? (int64_t)q.max : -1);
        sqlite3_bind_int64(s, 3, fetched_before_ms > 0 ? fetched_before_ms : INT64_MAX);
        int rc = queued_pass(s, &q, cb, ud, &got);
        n += got;
        if (rc < 0)
            return rc;
        if (rc > 0 || (max > 0 && (size_t)n >= max))
            break; /* cb stopped, or max reached */
    }
    return n;
}

int64_t db_reader_intervals(db_reader *rd, void (*cb)(void *ud, int64_t interval_s, int64_t rows),
                            void *ud)
{
    sqlite3_stmt *s = rd->st[RST_INTERVALS];
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        cb(ud, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1));
        n++;
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? n : sql_errno(rc);
}

int db_reader_due_stats(db_reader *rd, int64_t now_ms, int64_t *due, int64_t *next_at)
{
    sqlite3_stmt *s = rd->st[RST_DUE_N];
    int rc;

    sqlite3_bind_int64(s, 1, now_ms);
    rc = sqlite3_step(s);
    *due = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW)
        return sql_errno(rc);
    s = rd->st[RST_DUE_NEXT];
    sqlite3_bind_int64(s, 1, now_ms);
    rc = sqlite3_step(s);
    *next_at = rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL
                   ? sqlite3_column_int64(s, 0)
                   : -1;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_errno(rc);
}

int db_reader_max_id(db_reader *rd, int64_t *id)
{
    sqlite3_stmt *s = rd->st[RST_MAXID];
    int rc = sqlite3_step(s);

    *id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_errno(rc);
}

int64_t db_reader_scan_after(db_reader *rd, int64_t mark, db_scan_fn cb, void *ud)
{
    sqlite3_stmt *s = rd->st[RST_SCAN];
    int64_t n = 0;
    int rc;

    if (cb == NULL)
        return -EINVAL;
    sqlite3_bind_int64(s, 1, mark);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *u = (const char *)sqlite3_column_text(s, 1);
        size_t len = (size_t)sqlite3_column_bytes(s, 1);
        int r;
        if (u == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        n++;
        r = cb(ud, sqlite3_column_int64(s, 0), u, len);
        if (r != 0) {
            sqlite3_reset(s);
            return r < 0 ? r : n;
        }
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? n : sql_errno(rc);
}

static int64_t scan_linked(sqlite3_stmt *s, db_linked_fn cb, void *ud)
{
    int64_t n = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *u = (const char *)sqlite3_column_text(s, 1);
        size_t len = (size_t)sqlite3_column_bytes(s, 1);
        if (u == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        n++;
        int r = cb(ud, sqlite3_column_int64(s, 0), u, len, sqlite3_column_int64(s, 2));
        if (r != 0) {
            sqlite3_reset(s);
            return r < 0 ? r : n;
        }
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? n : sql_errno(rc);
}

int64_t db_reader_scan_linked(db_reader *rd, int64_t mark, int64_t since, db_linked_fn cb,
                              void *ud)
{
    if (cb == NULL)
        return -EINVAL;
    sqlite3_stmt *s = rd->st[RST_SCAN_LINKED];
    sqlite3_bind_int64(s, 1, mark);
    sqlite3_bind_int64(s, 2, since);
    return scan_linked(s, cb, ud);
}

int64_t db_reader_stamps(db_reader *rd, int64_t since, int (*cb)(void *ud, int64_t stamp),
                         void *ud)
{
    sqlite3_stmt *s = rd->st[RST_STAMPS];
    int64_t n = 0;
    int rc;
    sqlite3_bind_int64(s, 1, since);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        n++;
        if (cb(ud, sqlite3_column_int64(s, 0)) != 0)
            break;
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? n : sql_errno(rc);
}

int64_t db_reader_stale_queued(db_reader *rd, int64_t cutoff, db_linked_fn cb, void *ud)
{
    if (cb == NULL)
        return -EINVAL;
    sqlite3_stmt *s = rd->st[RST_STALE_QUEUED];
    sqlite3_bind_int64(s, 1, cutoff);
    sqlite3_bind_int64(s, 2, cr_wall_ms());
    return scan_linked(s, cb, ud);
}

static int excluded(const db_queued_query *q, const char *host, size_t len)
{
    for (size_t i = 0; i < q->n_exclude; i++) {
        const char *e = q->exclude_hosts[i];
        if (e != NULL && strlen(e) == len && memcmp(e, host, len) == 0)
            return 1;
    }
    return 0;
}

/* Runs one queued-rows statement; *n counts rows given to cb. Returns 0 to
 * go on, 1 when done (limit or cb stop), < 0 on error or cb abort. */
static int queued_pass(sqlite3_stmt *s, const db_queued_query *q, db_row_fn cb, void *ud,
                       int64_t *n)
{
    int rc, r = 0;

    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        db_row row;
        row.id = sqlite3_column_int64(s, 0);
        row.url = (const char *)sqlite3_column_text(s, 1);
        row.url_len = (size_t)sqlite3_column_bytes(s, 1);
        row.host = (const char *)sqlite3_column_text(s, 2);
        row.host_len = (size_t)sqlite3_column_bytes(s, 2);
        row.depth = sqlite3_column_int(s, 3);
        row.parent = sqlite3_column_int64(s, 4);
        row.kind = sqlite3_column_int(s, 5);
        row.attempts = sqlite3_column_int(s, 6);
        row.fetch_url = row.url; /* NULL: the same as the key */
        row.fetch_url_len = row.url_len;
        if (sqlite3_column_type(s, 7) != SQLITE_NULL) {
            row.fetch_url = (const char *)sqlite3_column_text(s, 7);
            row.fetch_url_len = (size_t)sqlite3_column_bytes(s, 7);
        }
        if (row.url == NULL || row.host == NULL || row.fetch_url == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (q->host == NULL && q->n_exclude > 0 && excluded(q, row.host, row.host_len))
            continue;
        (*n)++;
        r = cb(ud, &row);
        if (r != 0 || (q->max > 0 && (uint64_t)*n >= q->max))
            break;
    }
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_errno(rc);
    if (r < 0)
        return r;
    return rc == SQLITE_ROW ? 1 : 0;
}

int64_t db_reader_next_queued(db_reader *rd, const db_queued_query *q, db_row_fn cb, void *ud)
{
    sqlite3_stmt *same, *deeper;
    int64_t n = 0;
    int rc;

    if (q == NULL || cb == NULL || q->after_depth < 0
        || (q->n_exclude > 0 && q->exclude_hosts == NULL))
        return -EINVAL;
    same = rd->st[q->host ? RST_QH_SAME : RST_Q_SAME];
    deeper = rd->st[q->host ? RST_QH_DEEPER : RST_Q_DEEPER];
    sqlite3_bind_int(same, 1, q->after_depth);
    sqlite3_bind_int64(same, 2, q->after_id);
    sqlite3_bind_int(deeper, 1, q->after_depth);
    if (q->host != NULL) {
        sqlite3_bind_text(same, 3, q->host, -1, SQLITE_STATIC);
        sqlite3_bind_text(deeper, 3, q->host, -1, SQLITE_STATIC);
    }
    /* (depth, id) > (after_depth, after_id) as two index range scans. */
    rc = queued_pass(same, q, cb, ud, &n);
    if (rc == 0)
        rc = queued_pass(deeper, q, cb, ud, &n);
    return rc < 0 ? rc : n;
}

int db_reader_count_by_state(db_reader *rd, int64_t counts[DB_STATE_COUNT])
{
    int rc;

    /* one read transaction, so max(id) and the counts agree */
    rc = sqlite3_exec(rd->conn, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = count_states(rd->conn, counts);
    sqlite3_exec(rd->conn, "COMMIT", NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sql_errno(rc);
}

int64_t db_reader_host_counts(db_reader *rd, const char *host, db_host_fn cb, void *ud)
{
    sqlite3_stmt *s = rd->st[host ? RST_HOST1 : RST_HOSTS];
    int64_t counts[DB_STATE_COUNT] = { 0 }, n = 0;
    char *cur = NULL; /* host being summed; owned */
    size_t cur_len = 0;
    int rc, r = 0;

    if (cb == NULL)
        return -EINVAL;
    if (host != NULL)
        sqlite3_bind_text(s, 1, host, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(s, 0);
        size_t hl = (size_t)sqlite3_column_bytes(s, 0);
        int64_t st = sqlite3_column_int64(s, 1);
        if (h == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (cur != NULL && (hl != cur_len || memcmp(h, cur, hl) != 0)) {
            n++;
            r = cb(ud, cur, cur_len, counts);
            cr_free(cur);
            cur = NULL;
            if (r != 0)
                break;
        }
        if (cur == NULL) {
            cur = cr_strndup(h, hl);
            if (cur == NULL) {
                rc = SQLITE_NOMEM;
                break;
            }
            cur_len = hl;
            memset(counts, 0, sizeof counts);
        }
        if (st >= 0 && st < DB_STATE_COUNT)
            counts[st] = sqlite3_column_int64(s, 2);
    }
    sqlite3_reset(s);
    if (rc == SQLITE_DONE && cur != NULL) {
        n++;
        r = cb(ud, cur, cur_len, counts);
    }
    cr_free(cur);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_errno(rc);
    return r < 0 ? r : n;
}

int db_reader_check(db_reader *rd, int quick, char *out, size_t len)
{
    sqlite3_stmt *s = NULL;
    int rc, res = 0;

    cr_errf(out, len, "%s", "");
    rc = sqlite3_prepare_v2(rd->conn, quick ? "PRAGMA quick_check" : "PRAGMA integrity_check",
                            -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(s, 0);
        if (t == NULL || strcmp(t, "ok") != 0) {
            cr_errf(out, len, "%s: %s", rd->path, t ? t : "(no answer)");
            res = -EBADMSG;
        }
    } else {
        sql_msg(out, len, rd->path, "checking it", rd->conn, rc);
        res = rc == SQLITE_DONE ? -EIO : sql_errno(rc);
    }
    sqlite3_finalize(s);
    return res;
}

/* Prepares a query on a table that an older file may lack: 0 with *s set,
 * 1 when the table is missing (no rows), < 0 on error. */
static int prepare_figures(db_reader *rd, const char *sql, sqlite3_stmt **s)
{
    int rc = sqlite3_prepare_v2(rd->conn, sql, -1, s, NULL);

    if (rc == SQLITE_OK)
        return 0;
    if ((rc & 0xff) == SQLITE_ERROR && strstr(sqlite3_errmsg(rd->conn), "no such table") != NULL)
        return 1;
    return sql_errno(rc);
}

int64_t db_reader_sample_count(db_reader *rd)
{
    sqlite3_stmt *s = NULL;
    int64_t n = 0;
    int rc = prepare_figures(rd, "SELECT count(*) FROM samples", &s);

    if (rc != 0)
        return rc > 0 ? 0 : rc;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? n : sql_errno(rc);
}

int64_t db_reader_samples(db_reader *rd, size_t max, db_sample_fn cb, void *ud)
{
    sqlite3_stmt *s = NULL;
    int64_t total, n = 0, first = 0, last = 0, step = 0, next = INT64_MIN;
    int rc, r = 0;
    cr_buf text;

    if (cb == NULL)
        return -EINVAL;
    cr_buf_init(&text, SAMPLES_TEXT_MAX + 1);
    /* one read transaction, so the count, the span and the rows agree */
    sqlite3_exec(rd->conn, "BEGIN", NULL, NULL, NULL);
    total = db_reader_sample_count(rd);
    if (total <= 0)
        goto out;
    if (max > 0 && max < 2)
        max = 2;
    if (max > 0 && (uint64_t)total > max) {
        rc = prepare_figures(rd, "SELECT min(t_ms), max(t_ms) FROM samples", &s);
        if (rc != 0) {
            total = rc > 0 ? 0 : rc;
            goto out;
        }
        if (sqlite3_step(s) == SQLITE_ROW) {
            first = sqlite3_column_int64(s, 0);
            last = sqlite3_column_int64(s, 1);
        }
        sqlite3_finalize(s);
        s = NULL;
        /* ceil((last - first) / (max - 1)): at most max steps reach cb */
        step = (last - first + (int64_t)max - 2) / ((int64_t)max - 1);
        if (step < 1)
            step = 1;
    }
    rc = prepare_figures(rd, "SELECT t_ms, data FROM samples ORDER BY t_ms", &s);
    if (rc != 0) {
        total = rc > 0 ? 0 : rc;
        goto out;
    }
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(s, 0);
        if (step > 0) {
            if (t < next && t != last)
                continue; /* thinned evenly over time; the first and the last are kept */
            next = first + ((t - first) / step + 1) * step;
        }
        const char *data;
        size_t len;
        if (sqlite3_column_type(s, 1) == SQLITE_BLOB) {
            cr_buf_clear(&text);
            int u = samples_unpack(sqlite3_column_blob(s, 1), (size_t)sqlite3_column_bytes(s, 1),
                                   &text);
            if (u == -ENOMEM) {
                rc = SQLITE_NOMEM;
                break;
            }
            if (u < 0)
                continue; /* a row that does not unpack: left out */
            data = text.data ? text.data : "";
            len = text.len;
        } else {
            data = (const char *)sqlite3_column_text(s, 1); /* written before packing */
            if (data == NULL) {
                rc = SQLITE_NOMEM;
                break;
            }
            len = (size_t)sqlite3_column_bytes(s, 1);
        }
        n++;
        r = cb(ud, t, data, len);
        if (r != 0)
            break;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        total = sql_errno(rc);
    else
        total = r < 0 ? r : n;
out:
    sqlite3_finalize(s);
    sqlite3_exec(rd->conn, "COMMIT", NULL, NULL, NULL);
    cr_buf_release(&text);
    return total;
}

int64_t db_reader_host_stats(db_reader *rd, size_t max, int64_t *total, db_hoststats_fn cb,
                             void *ud)
{
    sqlite3_stmt *s = NULL;
    int64_t n = 0;
    int rc, r = 0;

    if (cb == NULL)
        return -EINVAL;
    if (total != NULL) {
        *total = 0;
        rc = prepare_figures(rd, "SELECT count(*) FROM hosts", &s);
        if (rc < 0)
            return rc;
        if (rc == 0 && sqlite3_step(s) == SQLITE_ROW)
            *total = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        s = NULL;
    }
    rc = prepare_figures(rd, "SELECT host, pages, data FROM hosts ORDER BY pages DESC, host"
                             " LIMIT ?1", &s);
    if (rc != 0)
        return rc > 0 ? 0 : rc;
    sqlite3_bind_int64(s, 1, max > 0 ? (int64_t)max : -1);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *h = (const char *)sqlite3_column_text(s, 0);
        const char *data = (const char *)sqlite3_column_text(s, 2);
        if (h == NULL || data == NULL) {
            rc = SQLITE_NOMEM;
            break;
        }
        n++;
        r = cb(ud, h, sqlite3_column_int64(s, 1), data);
        if (r != 0)
            break;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_errno(rc);
    return r < 0 ? r : n;
}

/* ---- state names (the one copy; see db.h) -------------------------------- */

const char *db_state_name(int state)
{
    static const char *const names[DB_STATE_COUNT] = {
        [DB_STATE_QUEUED] = "queued",       [DB_STATE_IN_FLIGHT] = "in_flight",
        [DB_STATE_DONE] = "done",           [DB_STATE_FAILED] = "failed",
        [DB_STATE_SEEN_ONLY] = "seen_only", [DB_STATE_EXCLUDED] = "excluded",
    };
    return state >= 0 && state < DB_STATE_COUNT ? names[state] : "?";
}

/* ---- cluster slot moves ----
 * A slot's rows travel between two nodes' stores as a small SQLite file
 * (meta: the crawl id; urls: the rows as they are). Each call runs on a
 * connection of its own, beside the writer's (WAL: the export reads a
 * snapshot; import and drop take the write lock between two of the
 * writer's batches, which waits BUSY_MS at most), and moves the writer's
 * per-state counts by what it changed. */

/* Every urls column but id, in one order for the copy. */
#define SLOT_COLS                                                                        \
    "url, host, depth, parent, kind, state, discovered_at, fetched_at, http_status,"     \
    " bytes, fetch_ms, attempts, error, content_type, fetch_url, hops, next_at,"         \
    " interval_s, etag, last_modified, digest, size, warc_id, warc_date, warc_uri,"      \
    " gone, fetches, changes, last_linked, fp"
/* The same, as the import writes them: no parent, in flight queued again. */
#define SLOT_COLS_IN                                                                     \
    "url, host, depth, 0, kind, CASE state WHEN 1 THEN 0 ELSE state END,"                \
    " discovered_at, fetched_at, http_status, bytes, fetch_ms, attempts, error,"         \
    " content_type, fetch_url, hops, next_at, interval_s, etag, last_modified, digest,"  \
    " size, warc_id, warc_date, warc_uri, gone, fetches, changes, last_linked, fp"
#define SLOT_NEW                                                                         \
    "NOT EXISTS (SELECT 1 FROM main.seen_fp f JOIN main.urls u ON u.id = f.id"            \
    " WHERE f.fp = c.fp AND u.url = c.url)"

typedef struct slot_pick {
    db_host_pick_fn fn;
    void *arg;
} slot_pick;

/* crawld_pick(host) in SQL: the caller's pick. */
static void sql_pick(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    slot_pick *p = sqlite3_user_data(cx);
    const char *h = (const char *)sqlite3_value_text(argv[0]);
    (void)argc;
    sqlite3_result_int(cx, h != NULL && p->fn(p->arg, h, (size_t)sqlite3_value_bytes(argv[0])));
}

static int slot_conn_path(const char *path, slot_pick *pick, sqlite3 **out, char *err,
                          size_t errlen)
{
    /* CREATE: an attached checkpoint is made with the main file's flags */
    int rc = open_conn(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, out, err, errlen);
    if (rc == 0 && pick != NULL &&
        sqlite3_create_function(*out, "crawld_pick", 1, SQLITE_UTF8, pick, sql_pick, NULL,
                                NULL) != SQLITE_OK) {
        cr_errf(err, errlen, "%s: out of memory", path);
        sqlite3_close(*out);
        *out = NULL;
        rc = -ENOMEM;
    }
    return rc;
}

static int slot_conn(db *d, slot_pick *pick, sqlite3 **out, char *err, size_t errlen)
{
    return slot_conn_path(d->path, pick, out, err, errlen);
}

/* Runs sql with text ?1 (may be NULL: none) and ?2 and one int64 result
 * column read into *out (may be NULL). */
static int slot_step(sqlite3 *c, const char *sql, const char *t1, const char *t2, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c, sql, -1, &s, NULL);
    if (rc == SQLITE_OK && t1 != NULL)
        rc = sqlite3_bind_text(s, 1, t1, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK && t2 != NULL)
        rc = sqlite3_bind_text(s, 2, t2, -1, SQLITE_TRANSIENT);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (out != NULL)
            *out = sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Per-state counts of what sql (state, count) selects, into v. */
static int slot_counts(sqlite3 *c, const char *sql, int64_t v[DB_STATE_COUNT])
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c, sql, -1, &s, NULL);
    memset(v, 0, sizeof(int64_t) * DB_STATE_COUNT);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t st = sqlite3_column_int64(s, 0);
        if (st >= 0 && st < DB_STATE_COUNT)
            v[st] += sqlite3_column_int64(s, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void slot_count_add(db *d, const int64_t v[DB_STATE_COUNT], int sign)
{
    pthread_mutex_lock(&d->mu);
    for (int st = 0; st < DB_STATE_COUNT; st++)
        d->counts[st] += sign * v[st];
    pthread_mutex_unlock(&d->mu);
}

static int fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

#define SLOT_HOST_COLS \
    "host, next_at, paused_until, last_ms, pages, robots_status, robots_text, robots_expires"

/* hosts[0..n) into ck.hosts (in the export's transaction). */
static int slot_put_hosts(sqlite3 *c, const db_slot_host *hosts, size_t n)
{
    sqlite3_stmt *s = NULL;
    int step = sqlite3_exec(c, "CREATE TABLE ck.hosts(" SLOT_HOST_COLS ")", NULL, NULL, NULL);
    if (step == SQLITE_OK && n > 0)
        step = sqlite3_prepare_v2(c, "INSERT INTO ck.hosts VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                                  -1, &s, NULL);
    for (size_t i = 0; step == SQLITE_OK && i < n; i++) {
        const db_slot_host *h = &hosts[i];
        sqlite3_bind_text(s, 1, h->host, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, h->next_at);
        sqlite3_bind_int64(s, 3, h->paused_until);
        sqlite3_bind_int64(s, 4, h->last_ms);
        sqlite3_bind_int64(s, 5, h->pages);
        sqlite3_bind_int(s, 6, h->robots_status);
        if (h->robots_text != NULL)
            sqlite3_bind_blob64(s, 7, h->robots_text, h->robots_len, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 7);
        sqlite3_bind_int64(s, 8, h->robots_expires);
        step = sqlite3_step(s);
        step = step == SQLITE_DONE ? sqlite3_reset(s) : step;
    }
    sqlite3_finalize(s);
    return step;
}

/* db_slot_export from the store file src (with hosts[0..n)). */
static int slot_export(const char *src, const char *path, const char *crawl,
                       db_host_pick_fn pick, void *arg, const db_slot_host *hosts, size_t nhosts,
                       int64_t *rows, char *err, size_t errlen)
{
    char tmp[4200], dir[4200];
    slot_pick p = { pick, arg };
    sqlite3 *c = NULL;
    int rc, step = SQLITE_OK;
    const char *what = "opening the store";

    *rows = 0;
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        cr_errf(err, errlen, "%s: path too long", path);
        return -ENAMETOOLONG;
    }
    unlink(tmp);
    rc = slot_conn_path(src, &p, &c, err, errlen);
    if (rc < 0)
        return rc;
    what = "creating the checkpoint";
    step = slot_step(c, "ATTACH ?1 AS ck", tmp, NULL, NULL);
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "PRAGMA ck.journal_mode = DELETE; BEGIN;"
                               "CREATE TABLE ck.meta(key TEXT PRIMARY KEY, value);"
                               "CREATE TABLE ck.urls AS SELECT id, " SLOT_COLS
                               " FROM main.urls WHERE 0", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        step = slot_step(c, "INSERT INTO ck.meta VALUES('crawl_id', ?1), ('kind', ?2)",
                         crawl, "slot checkpoint", NULL);
    what = "copying the slot's rows";
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "INSERT INTO ck.urls SELECT id, " SLOT_COLS " FROM main.urls"
                               " WHERE crawld_pick(host)", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        *rows = sqlite3_changes(c);
    what = "copying the slot's host states";
    if (step == SQLITE_OK)
        step = slot_put_hosts(c, hosts, nhosts);
#ifdef CRAWLD_FAULT_HOOKS
    if (step == SQLITE_OK && getenv("CRAWLD_FAULT_SLOT_EXPORT") != NULL)
        step = SQLITE_FULL; /* a shared folder that fills up during the copy */
#endif
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
    if (step != SQLITE_OK) {
        sql_msg(err, errlen, tmp, what, c, step);
        rc = sql_errno(step);
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_exec(c, "DETACH ck", NULL, NULL, NULL);
    sqlite3_close(c);
    if (rc == 0 && (rc = fsync_path(tmp)) < 0)
        cr_errf(err, errlen, "%s: cannot sync it (%s)", tmp, strerror(-rc));
    if (rc == 0 && rename(tmp, path) < 0) {
        rc = -errno;
        cr_errf(err, errlen, "cannot rename %s to %s (%s)", tmp, path, strerror(-rc));
    }
    if (rc == 0) {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash != NULL)
            *slash = '\0';
        rc = cr_fsync_dir(slash != NULL ? (dir[0] ? dir : "/") : ".");
        if (rc < 0)
            cr_errf(err, errlen, "cannot sync the folder of %s (%s)", path, strerror(-rc));
    }
    if (rc < 0) {
        unlink(tmp);
        *rows = 0;
    }
    return rc;
}

int db_slot_export(db *d, const char *path, const char *crawl, db_host_pick_fn pick, void *arg,
                   int64_t *rows, char *err, size_t errlen)
{
    return slot_export(d->path, path, crawl, pick, arg, NULL, 0, rows, err, errlen);
}

int db_slot_export_hosts(db *d, const char *path, const char *crawl, db_host_pick_fn pick,
                         void *arg, const db_slot_host *hosts, size_t n, int64_t *rows,
                         char *err, size_t errlen)
{
    return slot_export(d->path, path, crawl, pick, arg, hosts, n, rows, err, errlen);
}

int db_slot_hosts(const char *path, db_slot_host_fn cb, void *arg, char *err, size_t errlen)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    int64_t have = 0;
    int rc = open_conn(path, SQLITE_OPEN_READONLY, &c, err, errlen);
    if (rc < 0)
        return rc;
    int step = slot_step(c, "SELECT count(*) FROM sqlite_master WHERE name = 'hosts'", NULL, NULL,
                         &have);
    if (step == SQLITE_OK && have > 0)
        step = sqlite3_prepare_v2(c, "SELECT " SLOT_HOST_COLS " FROM hosts", -1, &s, NULL);
    while (step == SQLITE_OK && s != NULL && (step = sqlite3_step(s)) == SQLITE_ROW) {
        db_slot_host h = {
            .host = (const char *)sqlite3_column_text(s, 0),
            .next_at = sqlite3_column_int64(s, 1),
            .paused_until = sqlite3_column_int64(s, 2),
            .last_ms = sqlite3_column_int64(s, 3),
            .pages = sqlite3_column_int64(s, 4),
            .robots_status = sqlite3_column_int(s, 5),
            .robots_text = sqlite3_column_blob(s, 6),
            .robots_len = (size_t)sqlite3_column_bytes(s, 6),
            .robots_expires = sqlite3_column_int64(s, 7),
        };
        step = h.host == NULL || cb(arg, &h) == 0 ? SQLITE_OK : SQLITE_DONE;
    }
    if (step != SQLITE_OK && step != SQLITE_DONE) {
        sql_msg(err, errlen, path, "reading the slot's host states", c, step);
        rc = sql_errno(step);
    }
    sqlite3_finalize(s);
    sqlite3_close(c);
    return rc;
}

int db_slot_export_store(const char *state_dir, const char *path, const char *crawl,
                         db_host_pick_fn pick, void *arg, int64_t *rows, char *err,
                         size_t errlen)
{
    char src[4200];
    *rows = 0;
    if (snprintf(src, sizeof src, "%s/" DB_FILE, state_dir) >= (int)sizeof src) {
        cr_errf(err, errlen, "%s: path too long", state_dir);
        return -ENAMETOOLONG;
    }
    /* never created here: open_conn's CREATE would make an empty store */
    if (access(src, R_OK | W_OK) < 0) {
        int e = errno;
        cr_errf(err, errlen, "%s: %s", src, strerror(e));
        return -e;
    }
    return slot_export(src, path, crawl, pick, arg, NULL, 0, rows, err, errlen);
}

int db_slot_lost(const char *path, const int64_t *ids, const int *attempts, size_t n,
                 int64_t *lost, char *err, size_t errlen)
{
    sqlite3 *c = NULL;
    sqlite3_stmt *ins = NULL;
    *lost = 0;
    int rc = open_conn(path, SQLITE_OPEN_READWRITE, &c, err, errlen);
    if (rc < 0)
        return rc;
    int step = sqlite3_exec(c, "CREATE TEMP TABLE started(id INTEGER, attempt INTEGER);"
                               "BEGIN", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        step = sqlite3_prepare_v2(c, "INSERT INTO temp.started VALUES(?1, ?2)", -1, &ins, NULL);
    for (size_t i = 0; step == SQLITE_OK && i < n; i++) {
        sqlite3_bind_int64(ins, 1, ids[i]);
        sqlite3_bind_int(ins, 2, attempts[i]);
        step = sqlite3_step(ins);
        step = step == SQLITE_DONE ? sqlite3_reset(ins) : step;
    }
    sqlite3_finalize(ins);
    /* started, and the row still has no outcome for that attempt: the
     * rule open_dispatch_log (crawler/crawl.c) applies at a restart */
    if (step == SQLITE_OK)
        step = slot_step(c, "SELECT count(DISTINCT u.id) FROM main.urls u JOIN temp.started s"
                            " ON u.id = s.id WHERE u.state IN (0, 1) AND u.attempts < s.attempt",
                         NULL, NULL, lost);
    if (step != SQLITE_OK) {
        sql_msg(err, errlen, path, "counting the slot's lost outcomes", c, step);
        rc = sql_errno(step);
    }
    sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(c);
    return rc;
}

int db_slot_import(db *d, const char *path, const char *crawl, int64_t *mark, int64_t *rows,
                   char *err, size_t errlen)
{
    sqlite3 *c = NULL;
    int64_t add[DB_STATE_COUNT];
    char owner[256] = "";
    int step;
    const char *what = "reading the checkpoint";

    *mark = 0;
    *rows = 0;
    if (access(path, R_OK) < 0) {
        int e = errno;
        cr_errf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    int rc = slot_conn(d, NULL, &c, err, errlen);
    if (rc < 0)
        return rc;
    step = slot_step(c, "ATTACH ?1 AS ck", path, NULL, NULL);
    if (step == SQLITE_OK) {
        sqlite3_stmt *s = NULL;
        step = sqlite3_prepare_v2(c, "SELECT value FROM ck.meta WHERE key = 'crawl_id'", -1, &s,
                                  NULL);
        if (step == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            snprintf(owner, sizeof owner, "%s", (const char *)sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
    }
    if (step == SQLITE_OK && strcmp(owner, crawl) != 0) {
        cr_errf(err, errlen, "%s is not a checkpoint of crawl %s (it says \"%s\"): refused",
                path, crawl, owner);
        rc = -EBADMSG;
        goto out;
    }
    what = "importing the slot's rows";
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        step = slot_step(c, "SELECT coalesce(max(id), 0) FROM main.urls", NULL, NULL, mark);
    if (step == SQLITE_OK)
        step = slot_counts(c, "SELECT CASE state WHEN 1 THEN 0 ELSE state END, count(*)"
                              " FROM ck.urls c WHERE " SLOT_NEW " GROUP BY 1", add);
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "INSERT INTO main.urls(" SLOT_COLS ") SELECT " SLOT_COLS_IN
                               " FROM ck.urls c WHERE " SLOT_NEW " ORDER BY c.id", NULL, NULL,
                            NULL);
    if (step == SQLITE_OK)
        *rows = sqlite3_changes(c);
    if (step == SQLITE_OK) { /* the imported rows' seen-set entries */
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO main." FPRUNS_ACTIVE_TABLE "(fp, id)"
                 " SELECT fp, id FROM main.urls WHERE id > %lld", (long long)*mark);
        step = sqlite3_exec(c, sql, NULL, NULL, NULL);
    }
#ifdef CRAWLD_FAULT_HOOKS
    if (step == SQLITE_OK && getenv("CRAWLD_FAULT_SLOT_IMPORT") != NULL)
        step = SQLITE_FULL; /* the new owner's disk fills up during the import */
#endif
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        slot_count_add(d, add, 1);
out:
    if (step != SQLITE_OK) {
        sql_msg(err, errlen, path, what, c, step);
        rc = sql_errno(step);
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
    }
    if (rc < 0)
        *rows = 0;
    sqlite3_exec(c, "DETACH ck", NULL, NULL, NULL);
    sqlite3_close(c);
    return rc;
}

int db_slot_drop(db *d, db_host_pick_fn pick, void *arg, db_id_fn told, void *told_arg,
                 int64_t *rows, char *err, size_t errlen)
{
    slot_pick p = { pick, arg };
    sqlite3 *c = NULL;
    int64_t gone[DB_STATE_COUNT];

    *rows = 0;
    int rc = slot_conn(d, &p, &c, err, errlen);
    if (rc < 0)
        return rc;
    int step = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        step = slot_counts(c, "SELECT state, count(*) FROM urls WHERE crawld_pick(host)"
                              " GROUP BY state", gone);
    if (step == SQLITE_OK && told != NULL) {
        sqlite3_stmt *s = NULL;
        step = sqlite3_prepare_v2(c, "SELECT id FROM urls WHERE crawld_pick(host)", -1, &s, NULL);
        while (step == SQLITE_OK && (step = sqlite3_step(s)) == SQLITE_ROW) {
            told(told_arg, sqlite3_column_int64(s, 0));
            step = SQLITE_OK;
        }
        sqlite3_finalize(s);
        step = step == SQLITE_DONE ? SQLITE_OK : step;
    }
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "DELETE FROM urls WHERE crawld_pick(host)", NULL, NULL, NULL);
    if (step == SQLITE_OK)
        *rows = sqlite3_changes(c);
    if (step == SQLITE_OK)
        step = sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
    if (step == SQLITE_OK) {
        slot_count_add(d, gone, -1);
    } else {
        sql_msg(err, errlen, d->path, "dropping a slot's rows", c, step);
        rc = sql_errno(step);
        sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
        *rows = 0;
    }
    sqlite3_close(c);
    return rc;
}
