/* tests/test_history: storage/db's fetch history (schema 3, re-crawl):
 * db_record_history / db_reader_history, due rows in due order, the due
 * figures, db_make_due (the sitemap <lastmod> hook), the v2 -> v3
 * migration, and a refused commit of history ops (CRAWLD_FAULTS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "storage/db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fixture {
    char dir[64];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/crawld-test-hist-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static db *open_ok(const char *dir)
{
    char err[512];
    db *d = db_open(dir, NULL, err, sizeof err);
    if (d == NULL)
        fail_msg("db_open(%s): %s", dir, err);
    return d;
}

static int raw_exec(const char *dir, const char *sql)
{
    char path[256];
    sqlite3 *c = NULL;
    snprintf(path, sizeof path, "%s/crawld.db", dir);
    int rc = sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    sqlite3_close(c);
    return rc;
}

static int64_t raw_int(const char *dir, const char *sql)
{
    char path[256];
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    int64_t v = -1;
    snprintf(path, sizeof path, "%s/crawld.db", dir);
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(c);
    return v;
}

/* n done rows "https://h.example/I" (ids 1..n). */
static void add_done(db *d, int n)
{
    for (int i = 1; i <= n; i++) {
        char url[64];
        snprintf(url, sizeof url, "https://h.example/%d", i);
        db_url u = { .url = url, .host = "h.example", .state = DB_STATE_QUEUED };
        int64_t id = 0;
        assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
        assert_int_equal(id, i);
        db_outcome o = { .state = DB_STATE_DONE, .http_status = 200, .attempts = 1,
                         .fetched_at = 1000 };
        assert_int_equal(db_record_outcome(d, id, &o), 0);
    }
    assert_int_equal(db_flush(d), 0);
}

/* History written is read back whole; a second write replaces it and the
 * fetch and change counts add up. */
static void test_history_round_trip(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 1);
    db_history h = { .next_at = 5000, .interval_s = 60, .etag = "\"e1\"",
                     .last_modified = "Mon, 01 Jan 2024 00:00:00 GMT", .digest = "sha1:ABC",
                     .warc_id = "<urn:uuid:1>", .warc_date_ms = 1234, .size = 2294,
                     .warc_uri = "http://other.example/",
                     .changed = true };
    assert_int_equal(db_record_history(d, 1, &h), 0);
    assert_int_equal(db_flush(d), 0);
    db_reader *rd = db_reader_open(d, NULL, 0);
    db_history_row r;
    assert_int_equal(db_reader_history(rd, 1, &r), 0);
    assert_int_equal(r.next_at, 5000);
    assert_int_equal(r.interval_s, 60);
    assert_string_equal(r.etag, "\"e1\"");
    assert_string_equal(r.last_modified, "Mon, 01 Jan 2024 00:00:00 GMT");
    assert_string_equal(r.digest, "sha1:ABC");
    assert_string_equal(r.warc_id, "<urn:uuid:1>");
    assert_int_equal(r.warc_date_ms, 1234);
    assert_int_equal(r.size, 2294);
    assert_string_equal(r.warc_uri, "http://other.example/");
    assert_int_equal(r.fetches, 1);
    assert_int_equal(r.changes, 1);
    assert_false(r.gone);
    assert_int_equal(r.http_status, 200);
    db_history g = { .next_at = -1, .gone = true };
    assert_int_equal(db_record_history(d, 1, &g), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_reader_history(rd, 1, &r), 0);
    assert_int_equal(r.next_at, -1);
    assert_true(r.gone);
    assert_string_equal(r.etag, "");
    assert_int_equal(r.fetches, 2);
    assert_int_equal(r.changes, 1);
    assert_int_equal(db_reader_history(rd, 99, &r), -ENOENT);
    db_reader_free(rd);
    /* a missing row is reported by the flush, like an outcome */
    assert_int_equal(db_record_history(d, 99, &h), 0);
    assert_int_equal(db_flush(d), -ENOENT);
    assert_int_equal(db_record_history(d, 0, &h), -EINVAL);
    assert_int_equal(db_close(d), 0);
}

typedef struct ids {
    int64_t v[16];
    int n;
} ids;

static int collect(void *ud, const db_row *row)
{
    ids *x = ud;
    if (x->n < 16)
        x->v[x->n++] = row->id;
    return 0;
}

/* Due rows come in due order, only done ones whose time has come; the due
 * figures count them and name the next due time; max caps a scan. */
static void test_due_order_and_figures(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 5);
    const int64_t at[5] = { 300, 100, -1, 200, 900 };
    for (int i = 0; i < 5; i++) {
        db_history h = { .next_at = at[i], .interval_s = 10 };
        assert_int_equal(db_record_history(d, i + 1, &h), 0);
    }
    assert_int_equal(db_flush(d), 0);
    db_reader *rd = db_reader_open(d, NULL, 0);
    ids x = { .n = 0 };
    assert_int_equal(db_reader_due(rd, 300, 0, 0, collect, &x), 3);
    assert_int_equal(x.v[0], 2);
    assert_int_equal(x.v[1], 4);
    assert_int_equal(x.v[2], 1);
    x.n = 0;
    assert_int_equal(db_reader_due(rd, 300, 0, 2, collect, &x), 2);
    x.n = 0; /* all were fetched at 1000: none before 1000 */
    assert_int_equal(db_reader_due(rd, 300, 1000, 0, collect, &x), 0);
    assert_int_equal(db_reader_due(rd, 300, 1001, 0, collect, &x), 3);
    int64_t due = 0, next = 0;
    assert_int_equal(db_reader_due_stats(rd, 300, &due, &next), 0);
    assert_int_equal(due, 3);
    assert_int_equal(next, 900);
    /* a queued (promoted) row is still due until it is fetched; a failed
     * one (its re-crawl met an outage) not until one interval after its
     * failure (fetched_at 1000 + 10 s), then first */
    assert_int_equal(db_set_state(d, 2, DB_STATE_QUEUED), 0);
    assert_int_equal(db_set_state(d, 4, DB_STATE_FAILED), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_reader_due_stats(rd, 300, &due, &next), 0);
    assert_int_equal(due, 2);
    x.n = 0;
    assert_int_equal(db_reader_due(rd, 300, 0, 0, collect, &x), 1);
    assert_int_equal(x.v[0], 1);
    assert_int_equal(db_reader_due_stats(rd, 1000, &due, &next), 0);
    assert_int_equal(next, 11000);
    assert_int_equal(db_reader_due_stats(rd, 11000, &due, &next), 0);
    assert_int_equal(due, 4);
    assert_int_equal(next, -1);
    x.n = 0;
    assert_int_equal(db_reader_due(rd, 11000, 0, 0, collect, &x), 3);
    assert_int_equal(x.v[0], 4);
    assert_int_equal(x.v[1], 1);
    assert_int_equal(x.v[2], 5);
    x.n = 0;
    assert_int_equal(db_reader_due(rd, 11000, 0, 1, collect, &x), 1); /* max counts both */
    assert_int_equal(x.v[0], 4);
    x.n = 0; /* a one-pass run does not retry what failed in it */
    assert_int_equal(db_reader_due(rd, 11000, 1000, 0, collect, &x), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* db_make_due: a done row fetched before lastmod becomes due at now; one
 * fetched after it, a gone one, or one already due earlier stays. */
static void test_make_due(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 4); /* fetched_at 1000 */
    db_history later = { .next_at = 100000, .interval_s = 99 };
    db_history gone = { .next_at = -1, .gone = true };
    db_history early = { .next_at = 10, .interval_s = 1 };
    assert_int_equal(db_record_history(d, 1, &later), 0);
    assert_int_equal(db_record_history(d, 2, &later), 0);
    assert_int_equal(db_record_history(d, 3, &gone), 0);
    assert_int_equal(db_record_history(d, 4, &early), 0);
    assert_int_equal(db_make_due(d, 1, 2000, 50), 0);  /* changed after the fetch */
    assert_int_equal(db_make_due(d, 2, 500, 50), 0);   /* not since */
    assert_int_equal(db_make_due(d, 3, 2000, 50), 0);  /* gone */
    assert_int_equal(db_make_due(d, 4, 2000, 50), 0);  /* due earlier already */
    assert_int_equal(db_make_due(d, 77, 2000, 50), 0); /* unknown: no error */
    assert_int_equal(db_make_due(d, 1, -1, 50), -EINVAL);
    assert_int_equal(db_flush(d), 0);
    db_reader *rd = db_reader_open(d, NULL, 0);
    db_history_row r;
    const int64_t want[4] = { 50, 100000, -1, 10 };
    for (int i = 0; i < 4; i++) {
        assert_int_equal(db_reader_history(rd, i + 1, &r), 0);
        assert_int_equal(r.next_at, want[i]);
    }
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* A v2 file gains the history columns (rows kept, nothing scheduled) and
 * the due index, and reports the current schema version. */
static void test_migrate_v2(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 2);
    assert_int_equal(db_close(d), 0);
    /* make it a v2 file again: drop what migrations 2 to 5 added */
    const char *down =
        "DROP TRIGGER seen_fp_drop; DROP TRIGGER seen_fp_move; DROP TRIGGER seen_fp_drop_bare;"
        "DROP TABLE seen;"
        "DROP VIEW seen_fp; DROP TABLE fp_active; DROP TABLE fp_runs;"
        "ALTER TABLE urls DROP COLUMN fp;"
        "DROP INDEX urls_last_linked; ALTER TABLE urls DROP COLUMN last_linked;"
        "DROP INDEX urls_due;"
        "ALTER TABLE urls DROP COLUMN next_at; ALTER TABLE urls DROP COLUMN interval_s;"
        "ALTER TABLE urls DROP COLUMN etag; ALTER TABLE urls DROP COLUMN last_modified;"
        "ALTER TABLE urls DROP COLUMN digest; ALTER TABLE urls DROP COLUMN warc_id;"
        "ALTER TABLE urls DROP COLUMN warc_date; ALTER TABLE urls DROP COLUMN gone;"
        "ALTER TABLE urls DROP COLUMN fetches; ALTER TABLE urls DROP COLUMN changes;"
        "ALTER TABLE urls DROP COLUMN size; ALTER TABLE urls DROP COLUMN warc_uri;"
        "UPDATE meta SET value = 2 WHERE key = 'schema_version'; PRAGMA user_version = 2;";
    assert_int_equal(raw_exec(f->dir, down), SQLITE_OK);
    assert_int_equal(raw_int(f->dir, "SELECT value FROM meta WHERE key='schema_version'"), 2);
    d = open_ok(f->dir);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->dir, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM urls WHERE next_at IS NULL"
                                     " AND gone = 0 AND fetches = 0 AND state = 2"), 2);
    assert_int_equal(raw_int(f->dir, "SELECT count(*) FROM sqlite_master WHERE name='urls_due'"),
                     1);
    /* the due scan is served by the index, not a table scan */
    char path[256];
    snprintf(path, sizeof path, "%s/crawld.db", f->dir);
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(c,
                                        "EXPLAIN QUERY PLAN SELECT id FROM urls WHERE next_at IS"
                                        " NOT NULL AND state = 2 AND next_at <= 5 ORDER BY next_at",
                                        -1, &s, NULL),
                     SQLITE_OK);
    bool uses = false;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *detail = (const char *)sqlite3_column_text(s, 3);
        if (detail && strstr(detail, "urls_due") && !strstr(detail, "TEMP B-TREE"))
            uses = true;
    }
    sqlite3_finalize(s);
    sqlite3_close(c);
    assert_true(uses);
}

/* Fault hook: the commit holding history ops is refused (disk full) twice;
 * the writer holds them and retries, and they land once it succeeds. */
static void test_history_commit_refused(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 1);
    assert_int_equal(db_close(d), 0);
    /* attempt 1 is the reset at open; 2 and 3 fail */
    assert_int_equal(setenv("CRAWLD_FAULTS", "1:full:2", 1), 0);
    d = open_ok(f->dir);
    unsetenv("CRAWLD_FAULTS");
    db_history h = { .next_at = 777, .interval_s = 5, .etag = "\"x\"" };
    assert_int_equal(db_record_history(d, 1, &h), 0);
    assert_int_equal(db_make_due(d, 1, 0, 500), 0);
    assert_int_equal(db_requeue_due(d, 1), 0);
    assert_int_equal(db_flush(d), 0);

    db_stats st;
    db_get_stats(d, &st);
    assert_true(st.stalls >= 1);
    db_reader *rd = db_reader_open(d, NULL, 0);
    db_history_row r;
    assert_int_equal(db_reader_history(rd, 1, &r), 0);
    assert_int_equal(r.next_at, 500);
    assert_string_equal(r.etag, "\"x\"");
    int st_ = -1, att = -1;
    assert_int_equal(db_reader_row(rd, 1, &st_, &att, NULL), 0);
    assert_int_equal(st_, DB_STATE_QUEUED); /* requeued, attempts reset */
    assert_int_equal(att, 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 1);
    assert_int_equal(st.rows[DB_STATE_DONE], 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* Fault hook: a store that keeps refusing past max_stall_ms: the history
 * op fails (db_flush says so) and nothing of it is stored. */
static void test_history_store_gives_up(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->dir);
    add_done(d, 1);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(setenv("CRAWLD_FAULTS", "1:full:1000000", 1), 0);
    char err[256];
    db_opts o = { .max_stall_ms = 300 };
    d = db_open(f->dir, &o, err, sizeof err);
    unsetenv("CRAWLD_FAULTS");
    assert_non_null(d);
    db_history h = { .next_at = 999, .interval_s = 9, .digest = "sha1:Z" };
    /* refused when queued (the writer gave up already) or by the flush */
    int rc = db_record_history(d, 1, &h);
    if (rc == 0)
        rc = db_flush(d);
    assert_int_equal(rc, -ENOSPC);
    db_close(d); /* the error was reported above */
    d = open_ok(f->dir);
    db_reader *rd = db_reader_open(d, NULL, 0);
    db_history_row r;
    assert_int_equal(db_reader_history(rd, 1, &r), 0);
    assert_int_equal(r.next_at, -1);
    assert_string_equal(r.digest, "");
    assert_int_equal(r.fetches, 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_history_round_trip),
        T(test_due_order_and_figures),
        T(test_make_due),
        T(test_migrate_v2),
        T(test_history_commit_refused),
        T(test_history_store_gives_up),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
