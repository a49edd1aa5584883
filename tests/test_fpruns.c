/* tests/test_fpruns: storage/fpruns, the seen-set's fingerprint runs, on a
 * bare SQLite file with a urls table of its own. Checked: the install moves
 * an fp index into a frozen run in key order; freezes and merges keep every
 * row's (fp, id) in exactly one run, through inserts, deletes and fp
 * changes made by plain SQL (the triggers); look-ups compare the text when
 * fingerprints collide (the tests choose fingerprints from 0..15 on
 * purpose); a disk that fills during a freeze or a merge, and a store
 * locked by another connection, change nothing and a later step succeeds.
 * The random case prints its seed; CRAWLD_TEST_SEED=N replays it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <sqlite3.h>

#include "storage/fpruns.h"

static uint64_t seed;
static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct fixture {
    char path[64];
    sqlite3 *c;
} fixture;

static void exec_ok(sqlite3 *c, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(c, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : sqlite3_errstr(rc));
}

static int64_t q_int(sqlite3 *c, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int64_t v = -1;
    assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* A urls table as crawld's schema 5 has it, as far as fpruns reads it. */
static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->path, sizeof f->path, "/tmp/test_fpruns.XXXXXX");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(sqlite3_open(f->path, &f->c), SQLITE_OK);
    exec_ok(f->c, "PRAGMA journal_mode = WAL;"
                  "CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT NOT NULL,"
                  " fp INTEGER NOT NULL DEFAULT 0);"
                  "CREATE INDEX urls_fp ON urls(fp);");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char p[80];
    sqlite3_close(f->c);
    unlink(f->path);
    snprintf(p, sizeof p, "%s-wal", f->path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", f->path);
    unlink(p);
    free(f);
    return 0;
}

static void install(sqlite3 *c)
{
    exec_ok(c, "BEGIN");
    assert_int_equal(fpruns_install(c), SQLITE_OK);
    exec_ok(c, "COMMIT");
}

static void insert(sqlite3 *c, int64_t id, int64_t fp)
{
    char sql[128];
    snprintf(sql, sizeof sql, "INSERT INTO urls(id, url, fp) VALUES(%lld, 'u%lld', %lld)",
             (long long)id, (long long)id, (long long)fp);
    exec_ok(c, sql);
    if (q_int(c, "SELECT count(*) FROM sqlite_master WHERE name = 'fp_runs'") == 1) {
        snprintf(sql, sizeof sql, "INSERT INTO fp_active(fp, id) VALUES(%lld, %lld)",
                 (long long)fp, (long long)id); /* FPRUNS_ADD_SQL's duty */
        exec_ok(c, sql);
    }
}

/* The row id that the seen-set holds for url 'u<n>' under fp, 0 if none
 * (the look-up crawld's writer makes). */
static int64_t find(sqlite3 *c, int64_t n, int64_t fp)
{
    char url[32];
    sqlite3_stmt *s = NULL;
    int64_t id = 0;
    snprintf(url, sizeof url, "u%lld", (long long)n);
    assert_int_equal(sqlite3_prepare_v2(c, "SELECT u.id FROM seen_fp f JOIN urls u"
                                           " ON u.id = f.id WHERE f.fp = ?2 AND u.url = ?1"
                                           " LIMIT 1", -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_text(s, 1, url, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, fp);
    if (sqlite3_step(s) == SQLITE_ROW)
        id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return id;
}

/* Every urls row's (fp, id) is in exactly one run, and the runs hold
 * nothing else. */
static void check_runs(sqlite3 *c)
{
    assert_int_equal(q_int(c, "SELECT count(*) FROM seen_fp"), q_int(c, "SELECT count(*) FROM urls"));
    assert_int_equal(q_int(c, "SELECT count(*) FROM urls u WHERE (SELECT count(*) FROM seen_fp f"
                              " WHERE f.fp = u.fp AND f.id = u.id) <> 1"), 0);
    /* a table for each run in fp_runs, and no other */
    assert_int_equal(q_int(c, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                              " AND (name GLOB 'fp_[0-9]*' OR name = 'fp_active')"),
                     q_int(c, "SELECT count(*) FROM fp_runs"));
    assert_int_equal(q_int(c, "SELECT count(*) FROM fp_runs WHERE tier = -1"), 1);
}

static void install_moves_the_index(void **state)
{
    fixture *f = *state;
    for (int64_t i = 1; i <= 40; i++)
        insert(f->c, i, i % 16);
    install(f->c);
    assert_int_equal(q_int(f->c, "SELECT count(*) FROM sqlite_master WHERE name = 'urls_fp'"), 0);
    assert_int_equal(q_int(f->c, "SELECT count(*) FROM fp_runs"), 2);
    assert_int_equal(q_int(f->c, "SELECT rows FROM fp_runs WHERE tier = 0"), 40);
    check_runs(f->c);
    for (int64_t i = 1; i <= 40; i++) {
        assert_int_equal(find(f->c, i, i % 16), i);
        assert_int_equal(find(f->c, i, (i + 1) % 16), 0); /* another fp: not found */
    }
    /* the look-up settles a shared fingerprint by the text */
    assert_int_equal(find(f->c, 41, 41 % 16), 0);
    insert(f->c, 41, 41 % 16);
    assert_int_equal(find(f->c, 41, 41 % 16), 41);
    assert_int_equal(find(f->c, 25, 25 % 16), 25);
    int64_t active = -1;
    int runs = 0;
    assert_int_equal(fpruns_count(f->c, &active, &runs), SQLITE_OK);
    assert_int_equal(active, 1);
    assert_int_equal(runs, 2);
    check_runs(f->c);
}

static void install_on_an_empty_table(void **state)
{
    fixture *f = *state;
    install(f->c);
    assert_int_equal(q_int(f->c, "SELECT count(*) FROM fp_runs"), 1);
    check_runs(f->c);
    insert(f->c, 1, 3);
    assert_int_equal(find(f->c, 1, 3), 1);
}

/* Freezes and merges as the rows grow: tiers form, inputs are dropped, a
 * merged run is in key order, and the run count stays logarithmic. */
static void freezes_and_merges(void **state)
{
    fixture *f = *state;
    install(f->c);
    int64_t active = 0, id = 0, freezes = 0, merges = 0;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 5; i++) {
            id++;
            insert(f->c, id, (int64_t)(id * 7) % 16);
            active++;
        }
        fpruns_step st;
        do {
            assert_int_equal(fpruns_maintain(f->c, &active, 5, 2, &st), SQLITE_OK);
            freezes += st.rotated;
            merges += st.merged > 0;
            if (st.merged)
                assert_true(st.rows >= 10);
        } while (st.rotated || st.merged);
        assert_int_equal(active, 0);
        check_runs(f->c);
        /* fanin 2: at most one frozen run per tier once upkeep is done */
        assert_int_equal(q_int(f->c, "SELECT count(*) FROM (SELECT tier FROM fp_runs"
                                     " WHERE tier >= 0 GROUP BY tier HAVING count(*) > 1)"), 0);
    }
    assert_int_equal(freezes, 40);
    assert_int_equal(merges, 38); /* 40 runs of 5 became one per set bit of 40: 2 runs */
    assert_int_equal(q_int(f->c, "SELECT count(*) FROM fp_runs WHERE tier >= 0"), 2);
    for (int64_t i = 1; i <= id; i++)
        assert_int_equal(find(f->c, i, (i * 7) % 16), i);
    /* the biggest run (tier 5: 160 rows) holds all of its inputs (that it is
     * written in key order shows only in its speed: bench/bench_seenscale.sh) */
    int64_t big = q_int(f->c, "SELECT run FROM fp_runs WHERE tier = 5");
    assert_true(big > 0);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM fp_%lld", (long long)big);
    assert_int_equal(q_int(f->c, sql), 160);
    assert_int_equal(q_int(f->c, "SELECT count(*) FROM pragma_integrity_check"
                                 " WHERE integrity_check = 'ok'"), 1);
}

/* Random inserts, deletes, fp changes and upkeep against the urls table
 * itself and a reference of which ids live under which fp. */
static void random_against_reference(void **state)
{
    fixture *f = *state;
    enum { IDS = 600 };
    int64_t fp_of[IDS + 1] = { 0 }; /* -1: not there */
    rng_state = seed ^ 0x66707275ull;
    for (int i = 0; i <= IDS; i++)
        fp_of[i] = -1;
    for (int64_t i = 1; i <= 30; i++) {
        fp_of[i] = (int64_t)(rnd() % 16);
        insert(f->c, i, fp_of[i]);
    }
    install(f->c);
    int64_t active = 0, freezes = 0, merges = 0;
    for (unsigned step = 0; step < 3000; step++) {
        unsigned what = (unsigned)(rnd() % 10);
        int64_t id = 1 + (int64_t)(rnd() % IDS);
        char sql[128];
        if (what < 6 && fp_of[id] < 0) {
            fp_of[id] = (int64_t)(rnd() % 16);
            insert(f->c, id, fp_of[id]);
            active++;
        } else if (what < 8 && fp_of[id] >= 0) {
            snprintf(sql, sizeof sql, "DELETE FROM urls WHERE id = %lld", (long long)id);
            exec_ok(f->c, sql);
            fp_of[id] = -1;
        } else if (what < 9 && fp_of[id] >= 0) {
            fp_of[id] = (int64_t)(rnd() % 16);
            snprintf(sql, sizeof sql, "UPDATE urls SET fp = %lld WHERE id = %lld",
                     (long long)fp_of[id], (long long)id);
            exec_ok(f->c, sql);
        } else {
            fpruns_step st;
            assert_int_equal(fpruns_maintain(f->c, &active, 8, 3, &st), SQLITE_OK);
            freezes += st.rotated;
            merges += st.merged > 0;
        }
        if (step % 100 == 99) {
            check_runs(f->c);
            for (int64_t i = 1; i <= IDS; i++) {
                int64_t want = fp_of[i] >= 0 ? i : 0;
                int64_t got = find(f->c, i, fp_of[i] >= 0 ? fp_of[i] : (int64_t)(i % 16));
                if (got != want)
                    fail_msg("seed %llu step %u: id %lld found as %lld, reference %lld",
                             (unsigned long long)seed, step, (long long)i, (long long)got,
                             (long long)want);
            }
        }
    }
    assert_true(freezes > 10);
    assert_true(merges > 2);
}

/* Sets the file to its current size: the next new page fails (SQLITE_FULL). */
static void fill_disk(sqlite3 *c)
{
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA max_page_count = %lld",
             (long long)q_int(c, "PRAGMA page_count"));
    exec_ok(c, sql);
}

static void run_set(sqlite3 *c, char *out, size_t len)
{
    sqlite3_stmt *s = NULL;
    size_t at = 0;
    out[0] = '\0';
    assert_int_equal(sqlite3_prepare_v2(c, "SELECT run, tier, rows FROM fp_runs ORDER BY run",
                                        -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW && at + 64 < len)
        at += (size_t)snprintf(out + at, len - at, "%lld:%lld:%lld ",
                               (long long)sqlite3_column_int64(s, 0),
                               (long long)sqlite3_column_int64(s, 1),
                               (long long)sqlite3_column_int64(s, 2));
    sqlite3_finalize(s);
}

/* A full disk during a freeze, then during a merge big enough to need new
 * pages: the step fails, the run set and every entry stay, and the same
 * step succeeds once there is room. */
static void full_disk_changes_nothing(void **state)
{
    fixture *f = *state;
    char before[1024], after[1024];
    install(f->c);
    int64_t active = 0, id = 0;
    fpruns_step st;
    for (; id < 400; id++)
        insert(f->c, id + 1, (id * 5) % 16);
    active = 400;
    run_set(f->c, before, sizeof before);
    fill_disk(f->c);
    assert_int_equal(fpruns_maintain(f->c, &active, 400, 2, &st), SQLITE_FULL);
    assert_int_equal(active, 400);
    assert_int_equal(st.rotated, 0);
    run_set(f->c, after, sizeof after);
    assert_string_equal(before, after);
    check_runs(f->c);
    exec_ok(f->c, "PRAGMA max_page_count = 4294967294");
    assert_int_equal(fpruns_maintain(f->c, &active, 400, 2, &st), SQLITE_OK);
    assert_int_equal(st.rotated, 1);
    assert_int_equal(active, 0);
    /* a second run of 400, frozen; then the merge of the two fails */
    for (; id < 800; id++)
        insert(f->c, id + 1, (id * 5) % 16);
    active = 400;
    assert_int_equal(fpruns_maintain(f->c, &active, 400, 2, &st), SQLITE_OK);
    assert_int_equal(st.rotated, 1);
    run_set(f->c, before, sizeof before);
    fill_disk(f->c);
    assert_int_equal(fpruns_maintain(f->c, &active, 400, 2, &st), SQLITE_FULL);
    assert_int_equal(st.merged, 0);
    run_set(f->c, after, sizeof after);
    assert_string_equal(before, after);
    check_runs(f->c);
    for (int64_t i = 1; i <= id; i++)
        assert_int_equal(find(f->c, i, ((i - 1) * 5) % 16), i);
    exec_ok(f->c, "PRAGMA max_page_count = 4294967294");
    assert_int_equal(fpruns_maintain(f->c, &active, 400, 2, &st), SQLITE_OK);
    assert_int_equal(st.merged, 2);
    assert_int_equal(st.rows, 800);
    check_runs(f->c);
}

/* Another connection holds the write lock: the step fails with BUSY and
 * changes nothing. */
static void locked_store_changes_nothing(void **state)
{
    fixture *f = *state;
    char before[256], after[256];
    sqlite3 *other = NULL;
    install(f->c);
    for (int64_t i = 1; i <= 10; i++)
        insert(f->c, i, i % 16);
    int64_t active = 10;
    fpruns_step st;
    run_set(f->c, before, sizeof before);
    assert_int_equal(sqlite3_open(f->path, &other), SQLITE_OK);
    exec_ok(other, "BEGIN IMMEDIATE");
    sqlite3_busy_timeout(f->c, 0);
    assert_int_equal(fpruns_maintain(f->c, &active, 5, 2, &st), SQLITE_BUSY);
    assert_int_equal(active, 10);
    exec_ok(other, "ROLLBACK");
    sqlite3_close(other);
    run_set(f->c, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(fpruns_maintain(f->c, &active, 5, 2, &st), SQLITE_OK);
    assert_int_equal(st.rotated, 1);
    check_runs(f->c);
}

/* A file whose runs table lost its active run is refused, not guessed at. */
static void missing_active_run_is_corrupt(void **state)
{
    fixture *f = *state;
    install(f->c);
    exec_ok(f->c, "DELETE FROM fp_runs");
    int64_t active = 0;
    int runs = 0;
    fpruns_step st;
    assert_int_equal(fpruns_count(f->c, &active, &runs), SQLITE_CORRUPT);
    assert_int_equal(fpruns_maintain(f->c, &active, 5, 2, &st), SQLITE_CORRUPT);
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_fpruns: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(install_moves_the_index),
        T(install_on_an_empty_table),
        T(freezes_and_merges),
        T(random_against_reference),
        T(full_disk_changes_nothing),
        T(locked_store_changes_nothing),
        T(missing_active_run_is_corrupt),
    };
    return cmocka_run_group_tests_name("fpruns", tests, NULL, NULL);
}
