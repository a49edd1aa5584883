/* tests/test_db: storage/db, the SQLite seen-set, its writer thread and
 * readers. Each test runs in its own temporary state_dir, removed after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "storage/db.h"
#include "storage/urlfp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char dir[64];   /* the temporary folder */
    char state[96]; /* dir/state: the state_dir (created by db_open) */
} fixture;

static void rm_rf(const char *path)
{
    struct stat sb;
    DIR *dp;
    struct dirent *e;
    char sub[512];

    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(path, 0700);
        dp = opendir(path);
        while (dp != NULL && (e = readdir(dp)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        if (dp != NULL)
            closedir(dp);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);

    if (f == NULL)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/crawld-test-db-XXXXXX");
    if (mkdtemp(f->dir) == NULL) {
        free(f);
        return -1;
    }
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    rm_rf(f->dir);
    free(f);
    return 0;
}

static db *open_ok(const char *dir, const db_opts *o)
{
    char err[512];
    db *d = db_open(dir, o, err, sizeof err);

    if (d == NULL)
        fail_msg("db_open(%s): %s", dir, err);
    return d;
}

static db_url url_of(const char *url, const char *host, int depth)
{
    db_url u = { .url = url, .host = host, .depth = depth, .kind = DB_KIND_NAVIGATION,
                 .state = DB_STATE_QUEUED };
    return u;
}

/* "https://hN.example/p/I" for host n, index i. */
static void make_url(char *buf, size_t len, int host, int i)
{
    snprintf(buf, len, "https://h%d.example/p/%d", host, i);
}

/* Runs sql on the file with a raw connection; returns column 0 of the first
 * row as an integer (or -1). For checks the API does not offer. */
static int64_t raw_int(const char *dir, const char *sql)
{
    char path[256];
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    int64_t v = -1;

    snprintf(path, sizeof path, "%s/crawld.db", dir);
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK
        && sqlite3_prepare_v2(c, sql, -1, &s, NULL) == SQLITE_OK
        && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(c);
    return v;
}

static int raw_exec(const char *dir, const char *sql)
{
    char path[256];
    sqlite3 *c = NULL;
    int rc;

    snprintf(path, sizeof path, "%s/crawld.db", dir);
    rc = sqlite3_open_v2(path, &c, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
    sqlite3_close(c);
    return rc;
}

/* ---- schema ---- */

static void test_create_and_reopen(void **state)
{
    fixture *f = *state;
    struct stat sb;
    char nested[160], path[200];
    db *d;
    int64_t id = 0, id2 = 0;
    db_url u = url_of("https://a.example/", "a.example", 0);

    snprintf(nested, sizeof nested, "%s/deep/er", f->state);
    d = open_ok(nested, NULL);
    assert_int_equal(stat(nested, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0700);
    snprintf(path, sizeof path, "%s/crawld.db", nested);
    assert_string_equal(db_path(d), path);
    assert_int_equal(db_recovered_in_flight(d), 0);
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    assert_true(id > 0);
    assert_int_equal(db_close(d), 0);

    assert_int_equal(raw_int(nested, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    /* the seen-set is keyed by fingerprint, in runs (storage/fpruns): one
     * active run holds the new row; the URL text has no index */
    assert_int_equal(raw_int(nested, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                     " AND name = 'urls_fp'"), 0);
    assert_int_equal(raw_int(nested, "SELECT count(*) FROM fp_runs WHERE tier = -1"), 1);
    assert_int_equal(raw_int(nested, "SELECT count(*) FROM seen_fp"), 1);
    assert_int_equal(raw_int(nested, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                     " AND tbl_name = 'urls' AND sql IS NULL"), 0);
    assert_int_equal(raw_int(nested, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                     " AND name IN ('urls_state','urls_host_state')"), 2);
    d = open_ok(nested, NULL);
    assert_int_equal(db_insert_url_wait(d, &u, &id2), 0);
    assert_int_equal(id2, id);
    assert_int_equal(db_close(d), 0);
}

static void test_meta_values(void **state)
{
    fixture *f = *state;
    char buf[64], err[256];
    db *d = open_ok(f->state, NULL);

    assert_int_equal(db_put_meta(d, "stats", "{\"pages\": 1}"), 0);
    assert_int_equal(db_put_meta(d, "stats", "{\"pages\": 2}"), 0);
    assert_int_equal(db_put_meta(d, "schema_version", "9"), -EINVAL);
    assert_int_equal(db_flush(d), 0);
    db_reader *rd = db_reader_open(d, err, sizeof err);
    assert_non_null(rd);
    assert_int_equal(db_reader_get_meta(rd, "stats", buf, sizeof buf), 0);
    assert_string_equal(buf, "{\"pages\": 2}");
    assert_int_equal(db_reader_get_meta(rd, "nothing", buf, sizeof buf), -ENOENT);
    assert_int_equal(db_reader_get_meta(rd, "schema_version", buf, sizeof buf), 0);
    char want[16];
    snprintf(want, sizeof want, "%d", DB_SCHEMA_VERSION);
    assert_string_equal(buf, want);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

static void test_wal_mode(void **state)
{
    fixture *f = *state;
    char path[256];
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    db *d = open_ok(f->state, NULL);

    snprintf(path, sizeof path, "%s/crawld.db", f->state);
    assert_int_equal(sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(c, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    sqlite3_close(c);
    db_close(d);
}

static void test_newer_schema_refused(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d = open_ok(f->state, NULL);

    db_close(d);
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE meta SET value = %d WHERE key = 'schema_version'",
             DB_SCHEMA_VERSION + 1);
    assert_int_equal(raw_exec(f->state, sql), SQLITE_OK);
    d = db_open(f->state, NULL, err, sizeof err);
    assert_null(d);
    assert_non_null(strstr(err, "newer crawld"));
    assert_non_null(strstr(err, "crawld.db"));
    /* left untouched */
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION + 1);
    assert_null(db_reader_open_dir(f->state, err, sizeof err));
    assert_non_null(strstr(err, "newer crawld"));
}

static void test_foreign_sqlite_refused(void **state)
{
    fixture *f = *state;
    char err[512];

    assert_int_equal(mkdir(f->state, 0700), 0);
    assert_int_equal(raw_exec(f->state, "CREATE TABLE t(x); INSERT INTO t VALUES(42);"),
                     SQLITE_OK);
    assert_null(db_open(f->state, NULL, err, sizeof err));
    assert_non_null(strstr(err, "not one crawld wrote"));
    assert_int_equal(raw_int(f->state, "SELECT x FROM t"), 42);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master"), 1);
}

static void test_garbage_file_refused(void **state)
{
    fixture *f = *state;
    static const char junk[] = "this is a text file that merely happens to be called"
                               " crawld.db; it must never be modified or used\n";
    char path[256], err[512], back[sizeof junk];
    FILE *fp;
    struct stat sb;

    assert_int_equal(mkdir(f->state, 0700), 0);
    snprintf(path, sizeof path, "%s/crawld.db", f->state);
    fp = fopen(path, "wb");
    assert_non_null(fp);
    for (int i = 0; i < 40; i++)
        fwrite(junk, 1, sizeof junk - 1, fp);
    fclose(fp);

    assert_null(db_open(f->state, NULL, err, sizeof err));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not an SQLite database"));
    assert_null(db_reader_open_dir(f->state, err, sizeof err));
    assert_non_null(strstr(err, "not an SQLite database"));

    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 40 * (sizeof junk - 1));
    fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(back, 1, sizeof junk - 1, fp), sizeof junk - 1);
    fclose(fp);
    assert_memory_equal(back, junk, sizeof junk - 1);
    snprintf(path, sizeof path, "%s/crawld.db-wal", f->state);
    assert_int_not_equal(access(path, F_OK), 0);
}

static void test_state_dir_is_a_file(void **state)
{
    fixture *f = *state;
    char err[512];
    FILE *fp = fopen(f->state, "w");

    assert_non_null(fp);
    fclose(fp);
    assert_null(db_open(f->state, NULL, err, sizeof err));
    assert_non_null(strstr(err, f->state));
}

/* Opens dir as an unprivileged user in a child (root ignores permissions)
 * and sends back db_open's message. Returns the message in err. */
static void open_as_nobody(const char *dir, char *err, size_t len)
{
    int fds[2];
    pid_t pid;
    int status;
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char e[512] = "";
        db *d;
        close(fds[0]);
        if (geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0
                               || setuid(65534) != 0))
            _exit(3);
        d = db_open(dir, NULL, e, sizeof e);
        if (write(fds[1], e, strlen(e)) < 0)
            _exit(4);
        _exit(d == NULL ? 0 : 2); /* no cleanup: the parent removes the folder */
    }
    close(fds[1]);
    n = read(fds[0], err, len - 1);
    err[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* db_open refused */
}

static void test_read_only_state_dir(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d;

    /* A new database in a folder we may not write. */
    assert_int_equal(chmod(f->dir, 0755), 0);
    assert_int_equal(mkdir(f->state, 0555), 0);
    assert_int_equal(chmod(f->state, 0555), 0);
    open_as_nobody(f->state, err, sizeof err);
    assert_non_null(strstr(err, f->state));
    assert_non_null(strstr(err, "cannot write"));

    /* An existing database in a folder that became read-only. */
    assert_int_equal(chmod(f->state, 0700), 0);
    d = open_ok(f->state, NULL);
    db_close(d);
    assert_int_equal(chmod(f->state, 0555), 0);
    open_as_nobody(f->state, err, sizeof err);
    assert_non_null(strstr(err, f->state));
    assert_non_null(strstr(err, "cannot write"));
    assert_int_equal(chmod(f->state, 0700), 0);
}

static void test_second_open_refused(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d = open_ok(f->state, NULL);

    assert_null(db_open(f->state, NULL, err, sizeof err));
    assert_non_null(strstr(err, "in use by another crawld"));
    db_close(d);
    d = open_ok(f->state, NULL);
    db_close(d);
}

static void test_bad_options(void **state)
{
    fixture *f = *state;
    char err[512];
    db_opts o = { .batch_size = -1 };

    assert_null(db_open(f->state, &o, err, sizeof err));
    assert_non_null(strstr(err, "batch_size"));
    o = (db_opts){ .cache_mb = 100000 };
    assert_null(db_open(f->state, &o, err, sizeof err));
    assert_non_null(strstr(err, "cache_mb"));
    assert_null(db_open("", NULL, err, sizeof err));
}

/* ---- inserts ---- */

static void test_insert_sync_new_vs_existing(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url a = url_of("https://a.example/x", "a.example", 0);
    db_url b = url_of("https://a.example/y", "a.example", 1);
    int64_t ida = 0, idb = 0, id = 0;
    static char big[DB_URL_MAX + 2];

    assert_int_equal(db_insert_url_wait(d, &a, &ida), 1);
    assert_int_equal(db_insert_url_wait(d, &a, &id), 0);
    assert_int_equal(id, ida);
    assert_int_equal(db_insert_url_wait(d, &b, &idb), 1);
    assert_true(idb > ida);
    /* (bytes, len): only the first len bytes count */
    b.url = "https://a.example/xyz";
    b.url_len = strlen("https://a.example/x");
    assert_int_equal(db_insert_url_wait(d, &b, &id), 0);
    assert_int_equal(id, ida);
    /* a different state on an existing URL changes nothing */
    a.state = DB_STATE_SEEN_ONLY;
    assert_int_equal(db_insert_url_wait(d, &a, NULL), 0);

    memset(big, 'a', sizeof big - 1);
    b = url_of(big, "a.example", 0);
    assert_int_equal(db_insert_url_wait(d, &b, &id), -E2BIG);
    assert_int_equal(id, 0);
    b = url_of("https://a.example/", NULL, 0);
    assert_int_equal(db_insert_url_wait(d, &b, NULL), -EINVAL);
    b = url_of("https://a.example/", "a.example", -1);
    assert_int_equal(db_insert_url_wait(d, &b, NULL), -EINVAL);
    b = url_of("https://a.example/", "a.example", 0);
    b.state = DB_STATE_COUNT;
    assert_int_equal(db_insert_url(d, &b, NULL, NULL), -EINVAL);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_close(d), 0);
}

/* absent: the caller vouches that no row has the URL (its seen filter
 * said NO), so the writer inserts without looking it up: one statement per
 * new URL. The look-up really is skipped (a false vouch makes a second
 * row, which is why only a filter without retention vouches). */
static void test_insert_absent_skips_lookup(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url a = url_of("https://a.example/absent", "a.example", 0);
    int64_t id1 = 0, id2 = 0, id3 = 0;

    a.absent = true;
    assert_int_equal(db_insert_url_wait(d, &a, &id1), 1);
    a.absent = false; /* the default looks it up and finds it */
    assert_int_equal(db_insert_url_wait(d, &a, &id2), 0);
    assert_int_equal(id2, id1);
    a.absent = true;
    assert_int_equal(db_insert_url_wait(d, &a, &id3), 1);
    assert_true(id3 > id1);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE url = 'https://a.example/absent'"), 2);
}

static void test_insert_batch_wait(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 7, .queue_cap = 16 }; /* n is far above both */
    db *d = open_ok(f->state, &o);
    enum { N = 1000 };
    static char urls[N][64];
    static db_url u[N];
    static int status[N];
    static int64_t ids[N];
    int64_t first = 0;

    /* even i: a new URL; odd i: the URL of i - 1 again (in the same call) */
    for (int i = 0; i < N; i++) {
        make_url(urls[i], sizeof urls[i], 6, i - i % 2);
        u[i] = url_of(urls[i], "h6.example", 0);
    }
    u[10].host = NULL; /* invalid: not queued, the rest goes on */
    make_url(urls[11], sizeof urls[11], 6, 10); /* so 11 is new */
    assert_int_equal(db_insert_url_wait(d, &u[500], &first), 1); /* already there */
    assert_int_equal(db_insert_urls_wait(d, u, N, status, ids), 0);
    for (int i = 0; i < N; i++) {
        if (i == 10) {
            assert_int_equal(status[i], -EINVAL);
            assert_int_equal(ids[i], 0);
        } else if (i == 11 || (i % 2 == 0 && i != 500)) {
            assert_int_equal(status[i], 1);
        } else {
            assert_int_equal(status[i], 0);
            assert_int_equal(ids[i], i == 500 || i == 501 ? first : ids[i - 1]);
        }
    }
    assert_true(ids[2] < ids[4] && ids[4] < ids[998]); /* committed in input order */
    assert_int_equal(db_insert_urls_wait(d, u, 0, status, NULL), 0);
    assert_int_equal(db_insert_urls_wait(d, NULL, 3, status, NULL), -EINVAL);
    assert_int_equal(db_close(d), 0);
}

typedef struct cb_log {
    int n;
    int status[8];
    int64_t id[8];
    char url[8][64];
    pthread_t thread[8];
    int reentry;
    db *d;
} cb_log;

static void log_cb(void *ud, const db_result *r)
{
    cb_log *l = ud;

    if (l->n < 8) {
        l->status[l->n] = r->status;
        l->id[l->n] = r->id;
        snprintf(l->url[l->n], sizeof l->url[0], "%.*s", (int)r->url_len, r->url);
        l->thread[l->n] = pthread_self();
    }
    l->n++;
    if (l->d != NULL)
        l->reentry = db_flush(l->d);
}

static void test_insert_async_callback(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    cb_log l = { 0 };
    db_url a = url_of("https://a.example/1", "a.example", 0);
    db_url b = url_of("https://b.example/2", "b.example", 0);
    db_stats st;

    assert_int_equal(db_insert_url(d, &a, log_cb, &l), 0);
    assert_int_equal(db_insert_url(d, &b, log_cb, &l), 0);
    assert_int_equal(db_insert_url(d, &a, log_cb, &l), 0);
    assert_int_equal(db_insert_url(d, &b, NULL, NULL), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.status[0], 1);
    assert_int_equal(l.status[1], 1);
    assert_int_equal(l.status[2], 0);
    assert_int_equal(l.id[2], l.id[0]);
    assert_true(l.id[1] > l.id[0]);
    assert_string_equal(l.url[0], "https://a.example/1");
    assert_string_equal(l.url[1], "https://b.example/2");
    assert_false(pthread_equal(l.thread[0], pthread_self()));
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 2);
    assert_int_equal(st.failed_ops, 0);

    /* a callback may not call back into db */
    l.d = d;
    assert_int_equal(db_insert_url(d, &a, log_cb, &l), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(l.reentry, -EDEADLK);
    assert_int_equal(db_close(d), 0);
}

static void test_batching(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 100, .queue_cap = 1000 };
    db *d = open_ok(f->state, &o);
    db_reader *rd;
    char url[64];
    int64_t counts[DB_STATE_COUNT], max = 0;
    db_stats st;
    enum { N = 20000 };

    for (int i = 0; i < N; i++) {
        db_url u = url_of(url, "h0.example", i % 3);
        make_url(url, sizeof url, 0, i);
        assert_int_equal(db_insert_url(d, &u, NULL, NULL), 0);
    }
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], N);
    assert_int_equal(st.ops, N + 1);
    assert_int_equal(st.queued, 0);
    /* at most batch_size ops per COMMIT, and more than one per COMMIT on average
     * is not promised, so only the bound is asserted */
    assert_true(st.commits >= (N + 1 + 99) / 100);
    assert_true(st.commits <= N + 1);

    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_QUEUED], N);
    assert_int_equal(counts[DB_STATE_DONE], 0);
    assert_int_equal(db_reader_max_id(rd, &max), 0);
    assert_int_equal(max, N);
    for (int i = 0; i < N; i += 997) {
        make_url(url, sizeof url, 0, i);
        assert_int_equal(db_reader_exists(rd, url, 0, NULL), 1);
    }
    assert_int_equal(db_reader_exists(rd, "https://h0.example/p/x", 0, NULL), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

typedef struct gate {
    atomic_int entered;
    atomic_int open;
} gate;

/* Holds the writer thread inside a callback until the test opens the gate. */
static void gate_cb(void *ud, const db_result *r)
{
    gate *g = ud;
    struct timespec ms = { 0, 1000000 };

    (void)r;
    atomic_store(&g->entered, 1);
    while (!atomic_load(&g->open))
        nanosleep(&ms, NULL);
}

/* With the writer held, 500 ops queue up; released, it must commit them in
 * batches of at most batch_size, and take whatever is queued in one go. */
static int64_t commits_for_500(const char *dir, int batch_size)
{
    db_opts o = { .batch_size = batch_size, .queue_cap = 1000 };
    db *d = open_ok(dir, &o);
    gate g = { 0 };
    struct timespec ms = { 0, 1000000 };
    char url[64];
    db_url u = url_of("https://gate.example/", "gate.example", 0);
    db_stats st;

    assert_int_equal(db_insert_url(d, &u, gate_cb, &g), 0);
    while (!atomic_load(&g.entered))
        nanosleep(&ms, NULL);
    for (int i = 0; i < 500; i++) {
        u = url_of(url, "h0.example", 0);
        make_url(url, sizeof url, 0, batch_size * 1000 + i);
        assert_int_equal(db_insert_url(d, &u, NULL, NULL), 0);
    }
    db_get_stats(d, &st);
    assert_int_equal(st.queued, 500);
    atomic_store(&g.open, 1);
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.ops, 502);
    assert_int_equal(db_close(d), 0);
    return st.commits;
}

static void test_batch_size_respected(void **state)
{
    fixture *f = *state;
    int64_t c;

    /* gate alone, 5 x 100, then the flush (500 is a multiple of 100) */
    assert_int_equal(commits_for_500(f->state, 100), 1 + 5 + 1);
    /* gate alone, the 500 together, the flush alone or with them */
    c = commits_for_500(f->state, 1000);
    assert_true(c == 2 || c == 3);
}

static void test_tiny_queue_and_batch(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 1000, .queue_cap = 3 };
    db *d = open_ok(f->state, &o);
    char url[64];
    db_stats st;

    for (int i = 0; i < 300; i++) {
        db_url u = url_of(url, "h0.example", 0);
        make_url(url, sizeof url, 0, i);
        assert_int_equal(db_insert_url(d, &u, NULL, NULL), 0);
    }
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 300);
    assert_true(st.commits >= 301 / 3); /* a batch never holds more than the queue */
    assert_int_equal(db_close(d), 0);
}

static void test_close_drains_queue(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 7 };
    db *d = open_ok(f->state, &o);
    char url[64];

    for (int i = 0; i < 500; i++) {
        db_url u = url_of(url, "h0.example", 0);
        make_url(url, sizeof url, 0, i);
        assert_int_equal(db_insert_url(d, &u, NULL, NULL), 0);
    }
    assert_int_equal(db_close(d), 0); /* no flush */
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 500);
    /* and the WAL was checkpointed into the main file */
    {
        char path[256];
        struct stat sb;
        snprintf(path, sizeof path, "%s/crawld.db-wal", f->state);
        assert_true(stat(path, &sb) != 0 || sb.st_size == 0);
    }
}

/* An idle writer gathers async work for gather_ms; a waited-for op (here a
 * flush) and closing end the wait at once (else this test would take 10 s:
 * the window is far longer than the test). */
static void test_gather_window(void **state)
{
    fixture *f = *state;
    db_opts o = { .gather_ms = 10000 };
    db *d = open_ok(f->state, &o);
    cb_log l = { 0 };
    char url[64];
    db_stats st;

    for (int i = 0; i < 50; i++) {
        make_url(url, sizeof url, 0, i);
        db_url u = url_of(url, "h0.example", 0);
        assert_int_equal(db_insert_url(d, &u, i < 10 ? log_cb : NULL, &l), 0);
    }
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.commits, 1);  /* 50 inserts and the flush, one transaction */
    assert_int_equal(st.rows[DB_STATE_QUEUED], 50);
    assert_int_equal(l.n, 10);
    for (int i = 50; i < 80; i++) {
        make_url(url, sizeof url, 0, i);
        db_url u = url_of(url, "h0.example", 0);
        assert_int_equal(db_insert_url(d, &u, NULL, NULL), 0);
    }
    assert_int_equal(db_close(d), 0); /* while the writer gathers */
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 80);

    o = (db_opts){ .gather_ms = 10001 };
    char err[512];
    assert_null(db_open(f->state, &o, err, sizeof err));
    assert_non_null(strstr(err, "gather_ms"));
}

/* ---- concurrency ---- */

enum { PRODUCERS = 4, SPAN = 2000, STRIDE = 1000, DISTINCT = STRIDE * (PRODUCERS - 1) + SPAN };

typedef struct shared shared;
typedef struct slot {
    shared *s;
    int i;
} slot;

struct shared {
    db *d;
    atomic_int news[DISTINCT];
    _Atomic int64_t ids[DISTINCT];
    slot slots[DISTINCT];
    atomic_int answers;
    atomic_int bad;
};

typedef struct producer {
    shared *s;
    int t;
    pthread_t th;
} producer;

static void check_answer(shared *s, int i, int status, int64_t id)
{
    int64_t expected = 0;

    if (status < 0 || id <= 0) {
        atomic_fetch_add(&s->bad, 1);
        return;
    }
    if (status == 1)
        atomic_fetch_add(&s->news[i], 1);
    /* every answer for one URL names the same row */
    if (!atomic_compare_exchange_strong(&s->ids[i], &expected, id) && expected != id)
        atomic_fetch_add(&s->bad, 1);
    atomic_fetch_add(&s->answers, 1);
}

static void slot_cb(void *ud, const db_result *r)
{
    slot *sl = ud;
    char want[64];

    make_url(want, sizeof want, 1, sl->i);
    if (r->url_len != strlen(want) || memcmp(r->url, want, r->url_len) != 0)
        atomic_fetch_add(&sl->s->bad, 1);
    check_answer(sl->s, sl->i, r->status, r->id);
}

/* Thread 3: db_insert_urls_wait in chunks of 100. */
static void produce_batches(producer *p)
{
    enum { CHUNK = 100 };
    char urls[CHUNK][64];
    db_url u[CHUNK];
    int status[CHUNK];
    int64_t ids[CHUNK];

    for (int k = 0; k < SPAN; k += CHUNK) {
        for (int j = 0; j < CHUNK; j++) {
            make_url(urls[j], sizeof urls[j], 1, p->t * STRIDE + k + j);
            u[j] = url_of(urls[j], "h1.example", 0);
        }
        if (db_insert_urls_wait(p->s->d, u, CHUNK, status, ids) != 0)
            atomic_fetch_add(&p->s->bad, 1);
        for (int j = 0; j < CHUNK; j++)
            check_answer(p->s, p->t * STRIDE + k + j, status[j], ids[j]);
    }
}

static void *produce(void *arg)
{
    producer *p = arg;
    char url[64];

    if (p->t == 3) {
        produce_batches(p);
        return NULL;
    }
    for (int k = 0; k < SPAN; k++) {
        /* odd threads walk their range backwards: more collisions */
        int i = p->t * STRIDE + (p->t % 2 ? SPAN - 1 - k : k);
        db_url u = url_of(url, "h1.example", 0);
        make_url(url, sizeof url, 1, i);
        if (p->t < 2) {
            if (db_insert_url(p->s->d, &u, slot_cb, &p->s->slots[i]) != 0)
                atomic_fetch_add(&p->s->bad, 1);
        } else {
            int64_t id = 0;
            int rc = db_insert_url_wait(p->s->d, &u, &id);
            check_answer(p->s, i, rc, id);
        }
    }
    return NULL;
}

static void test_concurrent_producers(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 64, .queue_cap = 256 };
    shared *s = calloc(1, sizeof *s);
    producer p[PRODUCERS];
    db_reader *rd;
    int64_t counts[DB_STATE_COUNT];
    char url[64];

    assert_non_null(s);
    s->d = open_ok(f->state, &o);
    for (int i = 0; i < DISTINCT; i++)
        s->slots[i] = (slot){ s, i };
    for (int t = 0; t < PRODUCERS; t++) {
        p[t] = (producer){ .s = s, .t = t };
        assert_int_equal(pthread_create(&p[t].th, NULL, produce, &p[t]), 0);
    }
    for (int t = 0; t < PRODUCERS; t++)
        pthread_join(p[t].th, NULL);
    assert_int_equal(db_flush(s->d), 0);

    assert_int_equal(atomic_load(&s->bad), 0);
    assert_int_equal(atomic_load(&s->answers), PRODUCERS * SPAN);
    for (int i = 0; i < DISTINCT; i++)
        assert_int_equal(atomic_load(&s->news[i]), 1);
    rd = db_reader_open(s->d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_QUEUED], DISTINCT);
    for (int i = 0; i < DISTINCT; i++) {
        int64_t id = 0;
        make_url(url, sizeof url, 1, i);
        assert_int_equal(db_reader_exists(rd, url, 0, &id), 1);
        assert_int_equal(id, atomic_load(&s->ids[i]));
    }
    db_reader_free(rd);
    assert_int_equal(db_close(s->d), 0);
    free(s);
}

/* ---- updates ---- */

static void test_record_outcome(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url u = url_of("https://a.example/page", "a.example", 2);
    db_outcome oc = { .state = DB_STATE_DONE, .http_status = 200, .bytes = 12345,
                      .fetch_ms = 87, .attempts = 2, .fetched_at = 1700000000123LL,
                      .content_type = "text/html; charset=utf-8" };
    db_outcome bad = { .state = DB_STATE_FAILED, .attempts = 5,
                       .error = "connection refused" };
    int64_t id = 0, id2 = 0;
    db_stats st;
    char err[512], sql[256];

    u.parent = 0;
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    u.url = "https://a.example/other";
    u.parent = id;
    u.kind = DB_KIND_REQUISITE;
    assert_int_equal(db_insert_url_wait(d, &u, &id2), 1);
    assert_int_equal(db_set_state(d, id, DB_STATE_IN_FLIGHT), 0);
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 1);
    assert_int_equal(st.rows[DB_STATE_IN_FLIGHT], 1);
    assert_int_equal(db_record_outcome(d, id, &oc), 0);
    assert_int_equal(db_record_outcome(d, id2, &bad), 0);
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 0);
    assert_int_equal(st.rows[DB_STATE_IN_FLIGHT], 0);
    assert_int_equal(st.rows[DB_STATE_DONE], 1);
    assert_int_equal(st.rows[DB_STATE_FAILED], 1);

    /* a missing row: reported by the next flush, once */
    assert_int_equal(db_set_state(d, 999, DB_STATE_DONE), 0);
    assert_int_equal(db_flush(d), -ENOENT);
    assert_int_equal(db_last_error(d, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "999"));
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_set_state(d, id, 17), -EINVAL);
    assert_int_equal(db_record_outcome(d, 0, &oc), -EINVAL);
    assert_int_equal(db_close(d), 0);

#define COL(c, which) (snprintf(sql, sizeof sql, "SELECT " c " FROM urls WHERE id = %lld", \
                                (long long)(which)), raw_int(f->state, sql))
    assert_int_equal(COL("state", id), DB_STATE_DONE);
    assert_int_equal(COL("http_status", id), 200);
    assert_int_equal(COL("bytes", id), 12345);
    assert_int_equal(COL("fetch_ms", id), 87);
    assert_int_equal(COL("attempts", id), 2);
    assert_int_equal(COL("fetched_at", id), 1700000000123LL);
    assert_int_equal(COL("depth", id), 2);
    assert_int_equal(COL("parent IS NULL", id), 1);
    assert_int_equal(COL("error IS NULL", id), 1);
    assert_int_equal(COL("content_type = 'text/html; charset=utf-8'", id), 1);
    assert_int_equal(COL("discovered_at > 1600000000000", id), 1);
    assert_int_equal(COL("state", id2), DB_STATE_FAILED);
    assert_int_equal(COL("http_status IS NULL", id2), 1);
    assert_int_equal(COL("error = 'connection refused'", id2), 1);
    assert_int_equal(COL("parent", id2), id);
    assert_int_equal(COL("kind", id2), DB_KIND_REQUISITE);
    assert_int_equal(COL("fetched_at > 1600000000000", id2), 1);
#undef COL
}

/* ---- readers ---- */

typedef struct scan_log {
    int n;
    int64_t ids[32];
    char urls[32][48];
    int stop_at; /* return 1 at this row; 0 never */
    int fail_at; /* return -42 at this row */
} scan_log;

static int scan_cb(void *ud, int64_t id, const char *url, size_t len)
{
    scan_log *l = ud;

    if (l->n < 32) {
        l->ids[l->n] = id;
        snprintf(l->urls[l->n], sizeof l->urls[0], "%.*s", (int)len, url);
    }
    l->n++;
    if (l->stop_at && l->n == l->stop_at)
        return 1;
    if (l->fail_at && l->n == l->fail_at)
        return -42;
    return 0;
}

static void test_scan_after(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_reader *rd;
    int64_t ids[10], max = -1;
    char url[64];
    scan_log l = { 0 };

    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_max_id(rd, &max), 0);
    assert_int_equal(max, 0);
    assert_int_equal(db_reader_scan_after(rd, 0, scan_cb, &l), 0);
    for (int i = 0; i < 10; i++) {
        db_url u = url_of(url, "h2.example", 0);
        make_url(url, sizeof url, 2, 9 - i); /* ids do not follow url order */
        assert_int_equal(db_insert_url_wait(d, &u, &ids[i]), 1);
    }
    assert_int_equal(db_reader_max_id(rd, &max), 0);
    assert_int_equal(max, ids[9]);

    assert_int_equal(db_reader_scan_after(rd, 0, scan_cb, &l), 10);
    assert_int_equal(l.n, 10);
    for (int i = 0; i < 10; i++) {
        make_url(url, sizeof url, 2, 9 - i);
        assert_int_equal(l.ids[i], ids[i]);
        assert_string_equal(l.urls[i], url);
    }
    l = (scan_log){ 0 };
    assert_int_equal(db_reader_scan_after(rd, ids[4], scan_cb, &l), 5);
    assert_int_equal(l.ids[0], ids[5]);
    assert_int_equal(l.ids[4], ids[9]);
    l = (scan_log){ .stop_at = 3 };
    assert_int_equal(db_reader_scan_after(rd, 0, scan_cb, &l), 3);
    l = (scan_log){ .fail_at = 2 };
    assert_int_equal(db_reader_scan_after(rd, 0, scan_cb, &l), -42);
    l = (scan_log){ 0 };
    assert_int_equal(db_reader_scan_after(rd, ids[9], scan_cb, &l), 0);
    /* the reader works again after an interrupted scan */
    assert_int_equal(db_reader_exists(rd, l.urls[0], 0, NULL), 0);
    make_url(url, sizeof url, 2, 0);
    assert_int_equal(db_reader_exists(rd, url, 0, NULL), 1);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

typedef struct row_log {
    int n;
    int64_t ids[32];
    char hosts[32][16];
    int depth[32];
} row_log;

static int row_cb(void *ud, const db_row *r)
{
    row_log *l = ud;

    if (l->n < 32) {
        l->ids[l->n] = r->id;
        snprintf(l->hosts[l->n], sizeof l->hosts[0], "%.*s", (int)r->host_len, r->host);
        l->depth[l->n] = r->depth;
    }
    l->n++;
    return 0;
}

/* Checks that the rows logged are exactly the 1-based insert numbers in want. */
static void expect_rows(const row_log *l, const int64_t *id, const int *want, int n)
{
    assert_int_equal(l->n, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(l->ids[i], id[want[i]]);
}

typedef struct host_log {
    int n;
    char host[8][16];
    int64_t counts[8][DB_STATE_COUNT];
} host_log;

static int host_cb(void *ud, const char *host, size_t len, const int64_t counts[DB_STATE_COUNT])
{
    host_log *l = ud;

    if (l->n < 8) {
        snprintf(l->host[l->n], sizeof l->host[0], "%.*s", (int)len, host);
        memcpy(l->counts[l->n], counts, sizeof l->counts[0]);
    }
    l->n++;
    return 0;
}

static void test_queued_order(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    static const struct { const char *host; int depth; } rows[] = {
        { NULL, 0 }, /* 1-based */
        { "a", 2 }, { "b", 0 }, { "a", 1 }, { "a", 0 },
        { "b", 1 }, { "c", 0 }, { "a", 1 }, { "c", 2 },
    };
    int64_t id[9];
    const char *ex_b[] = { "b" }, *ex_bc[] = { "c", "b" };
    db_reader *rd;
    row_log l;
    host_log hl = { 0 };
    char url[64];

    for (int i = 1; i <= 8; i++) {
        db_url u = url_of(url, rows[i].host, rows[i].depth);
        snprintf(url, sizeof url, "https://%s/%d", rows[i].host, i);
        assert_int_equal(db_insert_url_wait(d, &u, &id[i]), 1);
    }
    assert_int_equal(db_set_state(d, id[8], DB_STATE_DONE), 0);
    assert_int_equal(db_set_state(d, id[6], DB_STATE_IN_FLIGHT), 0);
    assert_int_equal(db_flush(d), 0);
    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);

    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ 0 }, row_cb, &l), 6);
    expect_rows(&l, id, (const int[]){ 2, 4, 3, 5, 7, 1 }, 6);
    assert_string_equal(l.hosts[0], "b");
    assert_int_equal(l.depth[5], 2);

    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .host = "a" }, row_cb, &l), 4);
    expect_rows(&l, id, (const int[]){ 4, 3, 7, 1 }, 4);

    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .max = 2 }, row_cb, &l), 2);
    expect_rows(&l, id, (const int[]){ 2, 4 }, 2);

    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .exclude_hosts = ex_b,
                                                                   .n_exclude = 1 },
                                           row_cb, &l), 4);
    expect_rows(&l, id, (const int[]){ 4, 3, 7, 1 }, 4);
    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .exclude_hosts = ex_bc,
                                                                   .n_exclude = 2, .max = 3 },
                                           row_cb, &l), 3);
    expect_rows(&l, id, (const int[]){ 4, 3, 7 }, 3);

    /* resume after a position: (0, id of row 4) */
    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .after_depth = 0,
                                                                   .after_id = id[4] },
                                           row_cb, &l), 4);
    expect_rows(&l, id, (const int[]){ 3, 5, 7, 1 }, 4);
    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .host = "a", .after_depth = 1,
                                                                   .after_id = id[3] },
                                           row_cb, &l), 2);
    expect_rows(&l, id, (const int[]){ 7, 1 }, 2);
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .after_depth = -1 },
                                           row_cb, &l), -EINVAL);

    assert_int_equal(db_reader_host_counts(rd, NULL, host_cb, &hl), 3);
    assert_string_equal(hl.host[0], "a");
    assert_int_equal(hl.counts[0][DB_STATE_QUEUED], 4);
    assert_string_equal(hl.host[1], "b");
    assert_int_equal(hl.counts[1][DB_STATE_QUEUED], 2);
    assert_string_equal(hl.host[2], "c");
    assert_int_equal(hl.counts[2][DB_STATE_QUEUED], 0);
    assert_int_equal(hl.counts[2][DB_STATE_IN_FLIGHT], 1);
    assert_int_equal(hl.counts[2][DB_STATE_DONE], 1);
    hl = (host_log){ 0 };
    assert_int_equal(db_reader_host_counts(rd, "c", host_cb, &hl), 1);
    assert_int_equal(hl.counts[0][DB_STATE_DONE], 1);
    assert_int_equal(db_reader_host_counts(rd, "zzz", host_cb, &hl), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

typedef struct fetch_log {
    int n;
    char key[4][64], fetch[4][64];
} fetch_log;

static int fetch_cb(void *ud, const db_row *r)
{
    fetch_log *l = ud;

    if (l->n < 4) {
        snprintf(l->key[l->n], sizeof l->key[0], "%.*s", (int)r->url_len, r->url);
        snprintf(l->fetch[l->n], sizeof l->fetch[0], "%.*s", (int)r->fetch_url_len,
                 r->fetch_url);
    }
    l->n++;
    return 0;
}

/* The fetch form is stored beside the key (NULL when the two are equal)
 * and comes back with the queued rows; the key alone decides what is new. */
static void test_fetch_url_column(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url a = url_of("http://h/p?a=1&b=2", "h", 0), b = url_of("http://h/q", "h", 0);
    db_url c = url_of("http://h/r", "h", 0), dup = url_of("http://h/p?a=1&b=2", "h", 0);
    a.fetch_url = "http://h/p?b=2&a=1"; /* sync insert: borrowed */
    b.fetch_url = "http://h/q";         /* the same as the key */
    c.fetch_url = "http://h/r#not-stored";
    c.fetch_url_len = 10;               /* a length, not a NUL: the key again */
    dup.fetch_url = "http://h/p?a=1&b=2&";
    assert_int_equal(db_insert_url_wait(d, &a, NULL), 1);
    assert_int_equal(db_insert_url(d, &b, NULL, NULL), 0); /* async: copied */
    assert_int_equal(db_insert_url(d, &c, NULL, NULL), 0);
    assert_int_equal(db_insert_url_wait(d, &dup, NULL), 0); /* a later spelling: a duplicate */
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE fetch_url IS NULL"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE fetch_url ="
                                       " 'http://h/p?b=2&a=1'"), 1);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    fetch_log l = { 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ 0 }, fetch_cb, &l), 3);
    assert_string_equal(l.key[0], "http://h/p?a=1&b=2");
    assert_string_equal(l.fetch[0], "http://h/p?b=2&a=1"); /* the first spelling */
    assert_string_equal(l.key[1], "http://h/q");
    assert_string_equal(l.fetch[1], "http://h/q");
    assert_string_equal(l.fetch[2], "http://h/r");
    db_reader_free(rd);
    /* a fetch form over the cap is refused like a key over it */
    char *big = malloc(DB_URL_MAX + 2);
    assert_non_null(big);
    memset(big, 'x', DB_URL_MAX + 1);
    big[DB_URL_MAX + 1] = '\0';
    db_url e = url_of("http://h/s", "h", 0);
    e.fetch_url = big;
    assert_int_equal(db_insert_url(d, &e, NULL, NULL), -E2BIG);
    free(big);
    assert_int_equal(db_close(d), 0);
}

/* seen_only rows (the dedup tool's) stay out of the frontier indexes: they
 * are counted, never selected as queued, and come back when re-queued. */
static void test_seen_only_rows(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_reader *rd;
    int64_t id[8], counts[DB_STATE_COUNT];
    row_log l = { 0 };
    host_log hl = { 0 };
    db_stats st;
    char url[64];

    for (int i = 0; i < 8; i++) {
        db_url u = url_of(url, "s.example", 0);
        make_url(url, sizeof url, 5, i);
        u.state = i < 3 ? DB_STATE_QUEUED : DB_STATE_SEEN_ONLY;
        assert_int_equal(db_insert_url_wait(d, &u, &id[i]), 1);
    }
    assert_int_equal(db_set_state(d, id[0], DB_STATE_DONE), 0);
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 5);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 2);
    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_SEEN_ONLY], 5);
    assert_int_equal(counts[DB_STATE_QUEUED], 2);
    assert_int_equal(counts[DB_STATE_DONE], 1);
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ .host = "s.example" },
                                           row_cb, &l), 2);
    expect_rows(&l, id, (const int[]){ 1, 2 }, 2);
    assert_int_equal(db_reader_host_counts(rd, NULL, host_cb, &hl), 1);
    assert_int_equal(hl.counts[0][DB_STATE_QUEUED], 2);
    assert_int_equal(hl.counts[0][DB_STATE_SEEN_ONLY], 0); /* not per host */

    /* moved to queued: the partial index picks it up */
    assert_int_equal(db_set_state(d, id[5], DB_STATE_QUEUED), 0);
    assert_int_equal(db_flush(d), 0);
    l = (row_log){ 0 };
    assert_int_equal(db_reader_next_queued(rd, &(db_queued_query){ 0 }, row_cb, &l), 3);
    expect_rows(&l, id, (const int[]){ 1, 2, 5 }, 3);
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_SEEN_ONLY], 4);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);

    /* counts survive a reopen */
    d = open_ok(f->state, NULL);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 4);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 3);
    assert_int_equal(st.rows[DB_STATE_DONE], 1);
    assert_int_equal(db_close(d), 0);
}

static void test_reader_open_dir(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d;
    db_reader *rd;
    int64_t counts[DB_STATE_COUNT];
    db_url u = url_of("https://a.example/", "a.example", 0);

    assert_null(db_reader_open_dir(f->state, err, sizeof err));
    assert_non_null(strstr(err, "crawld.db"));
    d = open_ok(f->state, NULL);
    assert_int_equal(db_insert_url_wait(d, &u, NULL), 1);
    /* while the crawl runs (another process would do the same) */
    rd = db_reader_open_dir(f->state, err, sizeof err);
    assert_non_null(rd);
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_QUEUED], 1);
    assert_int_equal(db_reader_check(rd, 1, err, sizeof err), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    /* and after it ended */
    rd = db_reader_open_dir(f->state, err, sizeof err);
    assert_non_null(rd);
    assert_int_equal(db_reader_exists(rd, "https://a.example/", 0, NULL), 1);
    assert_int_equal(db_reader_check(rd, 0, err, sizeof err), 0);
    db_reader_free(rd);
}

/* ---- crash safety ---- */

enum { CRASH_FLUSHED = 3000, CRASH_IN_FLIGHT = 25, CRASH_MORE = 2000 };

/* The child: inserts, marks some rows in flight, flushes and says how many
 * rows are durable, then keeps inserting until it is killed. */
static void crash_child(const char *dir, int fd)
{
    db_opts o = { .batch_size = 500 };
    char err[512], url[64];
    db *d = db_open(dir, &o, err, sizeof err);
    int32_t n = CRASH_FLUSHED;

    if (d == NULL)
        _exit(10);
    for (int i = 0; i < CRASH_FLUSHED; i++) {
        db_url u = url_of(url, "h3.example", i % 4);
        make_url(url, sizeof url, 3, i);
        if (i < CRASH_IN_FLIGHT) {
            int64_t id = 0;
            if (db_insert_url_wait(d, &u, &id) != 1 || db_set_state(d, id, DB_STATE_IN_FLIGHT) != 0)
                _exit(11);
        } else if (db_insert_url(d, &u, NULL, NULL) != 0) {
            _exit(12);
        }
    }
    if (db_flush(d) != 0)
        _exit(13);
    if (write(fd, &n, sizeof n) != (ssize_t)sizeof n)
        _exit(14);
    for (int i = CRASH_FLUSHED; i < 100000000; i++) {
        db_url u = url_of(url, "h3.example", 0);
        make_url(url, sizeof url, 3, i);
        if (db_insert_url(d, &u, NULL, NULL) != 0)
            _exit(15);
        if (i == CRASH_FLUSHED + CRASH_MORE && write(fd, &n, sizeof n) != (ssize_t)sizeof n)
            _exit(16);
    }
    _exit(17); /* not reached: the parent kills us */
}

static void test_crash_safety(void **state)
{
    fixture *f = *state;
    int fds[2], status;
    int32_t flushed = 0, again = 0;
    pid_t pid;
    db *d;
    db_reader *rd;
    int64_t counts[DB_STATE_COUNT], max = 0, later;
    char url[64], err[512];

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        crash_child(f->state, fds[1]);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &flushed, sizeof flushed), (ssize_t)sizeof flushed);
    assert_int_equal(read(fds[0], &again, sizeof again), (ssize_t)sizeof again);
    kill(pid, SIGKILL);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_int_equal(flushed, CRASH_FLUSHED);

    d = open_ok(f->state, NULL);
    assert_int_equal(db_recovered_in_flight(d), CRASH_IN_FLIGHT);
    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_check(rd, 0, err, sizeof err), 0);
    for (int i = 0; i < CRASH_FLUSHED; i++) {
        make_url(url, sizeof url, 3, i);
        assert_int_equal(db_reader_exists(rd, url, 0, NULL), 1);
    }
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    assert_int_equal(counts[DB_STATE_IN_FLIGHT], 0);
    assert_int_equal(db_reader_max_id(rd, &max), 0);
    assert_int_equal(counts[DB_STATE_QUEUED], max);
    assert_true(max >= CRASH_FLUSHED);
    /* what was committed after the flush is a prefix of the queue order */
    later = max - CRASH_FLUSHED;
    if (later > 0) {
        make_url(url, sizeof url, 3, (int)(CRASH_FLUSHED + later - 1));
        assert_int_equal(db_reader_exists(rd, url, 0, NULL), 1);
    }
    make_url(url, sizeof url, 3, (int)(CRASH_FLUSHED + later));
    assert_int_equal(db_reader_exists(rd, url, 0, NULL), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    d = open_ok(f->state, NULL);
    assert_int_equal(db_recovered_in_flight(d), 0);
    assert_int_equal(db_close(d), 0);
}

/* ---- write errors ---- */

typedef struct err_count {
    int ok, failed;
} err_count;

static void count_cb(void *ud, const db_result *r)
{
    err_count *c = ud;

    if (r->status < 0)
        c->failed++;
    else
        c->ok++;
}

/* A file size limit makes SQLite's writes fail as on a full disk: the
 * writer reports the error with the path and keeps running. In a child, so
 * the limit stays there. */
static void test_write_error_reported(void **state)
{
    fixture *f = *state;
    int fds[2], status;
    pid_t pid;
    char msgbuf[600] = "";
    ssize_t n;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = { 256 * 1024, 256 * 1024 };
        db_opts o = { .batch_size = 200, .max_stall_ms = 300 };
        char err[512] = "", url[300];
        err_count c = { 0 };
        int rc = 0, code;
        db *d;

        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN);
        d = db_open(f->state, &o, err, sizeof err);
        if (d == NULL || setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(20);
        for (int i = 0; i < 20000 && rc == 0; i++) {
            db_url u = url_of(url, "h4.example", 0);
            snprintf(url, sizeof url, "https://h4.example/%0250d", i);
            if (db_insert_url(d, &u, count_cb, &c) != 0)
                _exit(21);
            if (i % 500 == 499)
                rc = db_flush(d);
        }
        code = db_last_error(d, err, sizeof err);
        if (rc >= 0 || code >= 0 || c.failed == 0 || c.ok == 0)
            _exit(22);
        if (write(fds[1], err, strlen(err)) < 0)
            _exit(23);
        db_close(d);
        _exit(0);
    }
    close(fds[1]);
    n = read(fds[0], msgbuf, sizeof msgbuf - 1);
    msgbuf[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_non_null(strstr(msgbuf, f->state));
    assert_non_null(strstr(msgbuf, "crawld.db"));
}

/* ---- stalls: the store refuses a batch (CRAWLD_FAULTS, test builds) ---- */

/* Opens d with CRAWLD_FAULTS=faults (read once, by db_open). */
static db *open_faulty(const char *dir, const db_opts *o, const char *faults)
{
    assert_int_equal(setenv("CRAWLD_FAULTS", faults, 1), 0);
    db *d = open_ok(dir, o);
    unsetenv("CRAWLD_FAULTS");
    return d;
}

/* Waits (a bound, not a speed goal) until the writer's stalled flag is want. */
static void wait_stalled(db *d, int want)
{
    struct timespec ms = { 0, 2000000 };
    db_stats st;
    for (int i = 0; i < 15000; i++) {
        db_get_stats(d, &st);
        if (st.stalled == want)
            return;
        nanosleep(&ms, NULL);
    }
    fail_msg("the writer's stalled flag never became %d", want);
}

/* Callback results in arrival order, written on the writer thread. */
typedef struct order_log {
    atomic_int n;
    int status[256];
    int64_t id[256];
    char url[256][48];
} order_log;

static void order_cb(void *ud, const db_result *r)
{
    order_log *l = ud;
    int i = atomic_load(&l->n);
    if (i < 256) {
        l->status[i] = r->status;
        l->id[i] = r->id;
        snprintf(l->url[i], sizeof l->url[i], "%.*s", (int)r->url_len, r->url);
    }
    atomic_store(&l->n, i + 1);
}

/* A producer that queues n inserts (urls "https://p.example/I") and keeps
 * the return codes: it blocks while the queue is full. */
typedef struct producer_job {
    db *d;
    int n;
    order_log *log;
    int rc[64];
    atomic_int done;
} producer_job;

static void *producer_main(void *arg)
{
    producer_job *p = arg;
    char url[64];
    for (int i = 0; i < p->n; i++) {
        snprintf(url, sizeof url, "https://p.example/%d", i);
        db_url u = url_of(url, "p.example", 1);
        p->rc[i] = db_insert_url(p->d, &u, order_cb, p->log);
    }
    atomic_store(&p->done, 1);
    return NULL;
}

/* Attempts 2..4 fail with a full disk, the 5th commits. While it lasts,
 * the stall shows in the stats and db_is_stalled; nothing queued is lost
 * or runs ahead: an outcome queued after an insert does not commit before
 * it, a producer blocked on the full queue goes on after, and every result
 * arrives in queue order. db_flush waits through it and succeeds. */
static void test_stall_holds_then_recovers(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 4, .queue_cap = 8 };
    db *d = open_faulty(f->state, &o, "2:full:3");
    order_log l = { 0 };
    db_url a = url_of("https://a.example/", "a.example", 0);
    db_url b = url_of("https://a.example/b", "a.example", 1);
    db_outcome done = { .state = DB_STATE_DONE, .http_status = 200, .attempts = 1 };
    int64_t ida = 0;
    db_stats st;
    char msg[512];

    assert_int_equal(db_insert_url_wait(d, &a, &ida), 1); /* attempt 1 commits */
    assert_int_equal(db_is_stalled(d), 0);
    assert_int_equal(db_insert_url(d, &b, order_cb, &l), 0); /* attempt 2 is refused */
    wait_stalled(d, 1);
    assert_int_equal(db_is_stalled(d), 1);
    /* queued during the stall: the page's outcome, after its link */
    assert_int_equal(db_record_outcome(d, ida, &done), 0);
    producer_job p = { .d = d, .n = 30, .log = &l };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer_main, &p), 0);
    /* the producer fills the queue (8) and blocks: wait until it is full */
    struct timespec ms = { 0, 2000000 };
    for (int i = 0; i < 15000; i++) {
        db_get_stats(d, &st);
        if (st.queued == 8)
            break;
        nanosleep(&ms, NULL);
    }
    db_get_stats(d, &st);
    assert_int_equal(st.stalled, 1);
    assert_int_equal(st.stall_code, -ENOSPC);
    assert_string_equal(db_error_reason(st.stall_code), "disk full");
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.stalls, 1);
    assert_int_equal(st.queued, 8);
    assert_true(st.held >= 1 + 8); /* the refused batch and the queue */
    assert_true(st.retry_in_ms <= 2000);
    assert_int_equal(atomic_load(&p.done), 0);
    assert_int_equal(atomic_load(&l.n), 0); /* nothing answered yet */
    assert_true(db_last_error(d, msg, sizeof msg) == -ENOSPC);
    assert_non_null(strstr(msg, "crawld.db"));
    /* what a reader sees: only what committed */
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 1);
    assert_int_equal(raw_int(f->state, "SELECT state FROM urls WHERE url = 'https://a.example/'"),
                     DB_STATE_QUEUED);

    assert_int_equal(db_flush(d), 0); /* waits out the stall */
    pthread_join(t, NULL);
    for (int i = 0; i < p.n; i++)
        assert_int_equal(p.rc[i], 0);
    assert_int_equal(db_flush(d), 0);
    db_get_stats(d, &st);
    assert_int_equal(st.stalled, 0);
    assert_int_equal(st.stall_code, 0);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.stalls, 1);
    assert_int_equal(st.held, 0);
    assert_int_equal(st.retry_in_ms, 0);
    assert_true(st.stall_ms >= 100 + 200 + 400); /* three backoff waits, at the least */
    assert_int_equal(st.failed_ops, 0);
    assert_int_equal(db_is_stalled(d), 0); /* dispatch may go on */
    /* every result, in queue order: b, then the producer's 30 */
    assert_int_equal(atomic_load(&l.n), 1 + p.n);
    assert_string_equal(l.url[0], "https://a.example/b");
    for (int i = 0; i < 1 + p.n; i++) {
        assert_int_equal(l.status[i], 1);
        if (i > 0) {
            char want[64];
            snprintf(want, sizeof want, "https://p.example/%d", i - 1);
            assert_string_equal(l.url[i], want);
            assert_true(l.id[i] > l.id[i - 1]);
        }
    }
    assert_true(l.id[0] > ida);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 2 + p.n);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT state FROM urls WHERE url = 'https://a.example/'"),
                     DB_STATE_DONE);
    assert_int_equal(raw_int(f->state, "SELECT http_status FROM urls WHERE url = 'https://a.example/'"),
                     200);
}

/* Each transient code stalls with its own reason and recovers; a later
 * stall is counted as a second one. */
static void test_stall_codes(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *fault;
        int code;
        const char *reason;
    } cases[] = {
        { "2:full:1,4:ioerr:2", -ENOSPC, "disk full" },
        { "2:ioerr:1,4:busy:2", -EIO, "I/O error" },
        { "2:busy:1,4:full:2", -EBUSY, "database busy" },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char dir[160];
        snprintf(dir, sizeof dir, "%s/%zu", f->state, c);
        db *d = open_faulty(dir, NULL, cases[c].fault);
        order_log l = { 0 };
        db_url u = url_of("https://c.example/1", "c.example", 0);
        db_stats st;
        assert_int_equal(db_insert_url_wait(d, &u, NULL), 1); /* 1 */
        u.url = "https://c.example/2";
        assert_int_equal(db_insert_url(d, &u, order_cb, &l), 0); /* 2 refused, 3 commits */
        wait_stalled(d, 1);
        db_get_stats(d, &st);
        assert_int_equal(st.stall_code, cases[c].code);
        assert_string_equal(db_error_reason(st.stall_code), cases[c].reason);
        assert_int_equal(db_flush(d), 0);
        assert_int_equal(atomic_load(&l.n), 1);
        assert_int_equal(l.status[0], 1);
        u.url = "https://c.example/3";
        assert_int_equal(db_insert_url_wait(d, &u, NULL), 1); /* 4, 5 refused, 6 commits */
        assert_int_equal(db_flush(d), 0);
        db_get_stats(d, &st);
        assert_int_equal(st.stalls, 2);
        assert_int_equal(st.stalled, 0);
        assert_int_equal(st.failed_ops, 0);
        assert_int_equal(db_is_stalled(d), 0);
        assert_int_equal(db_close(d), 0);
        assert_int_equal(raw_int(dir, "SELECT count(*) FROM urls"), 3);
    }
}

/* A stall that outlasts max_stall_ms: the writer gives up; the held batch,
 * the queue and every later operation fail with the store's error, a
 * producer blocked on the full queue returns, db_flush and db_close report
 * it, and the file holds what committed before. */
static void test_give_up_after_max_stall(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 2, .queue_cap = 4, .max_stall_ms = 300 };
    db *d = open_faulty(f->state, &o, "2:full:100000");
    order_log l = { 0 };
    db_url a = url_of("https://a.example/", "a.example", 0);
    db_stats st;
    char msg[512];

    assert_int_equal(db_insert_url_wait(d, &a, NULL), 1);
    db_url b = url_of("https://a.example/b", "a.example", 1);
    assert_int_equal(db_insert_url(d, &b, order_cb, &l), 0);
    producer_job p = { .d = d, .n = 20, .log = &l };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer_main, &p), 0);
    assert_int_equal(db_flush(d), -ENOSPC);
    pthread_join(t, NULL); /* it returned */
    int first_err = -1;
    for (int i = 0; i < p.n; i++) {
        if (p.rc[i] < 0 && first_err < 0)
            first_err = i;
        if (first_err >= 0 && i >= first_err)
            assert_int_equal(p.rc[i], -ENOSPC); /* and every one after */
    }
    assert_true(first_err >= 0); /* 20 cannot all fit in 4 + the batch */
    /* every queued one is answered, with the error. A flush that waited
     * for room in the full queue returns at the give-up, perhaps before
     * the writer has failed what was queued: wait for it (a bound). */
    struct timespec ms = { 0, 2000000 };
    for (int i = 0; i < 15000 && atomic_load(&l.n) < 1 + first_err; i++)
        nanosleep(&ms, NULL);
    assert_int_equal(atomic_load(&l.n), 1 + first_err);
    for (int i = 0; i < atomic_load(&l.n); i++) {
        assert_int_equal(l.status[i], -ENOSPC);
        assert_int_equal(l.id[i], 0);
    }
    db_get_stats(d, &st);
    assert_int_equal(st.failed, -ENOSPC);
    assert_int_equal(st.stalled, 0);
    assert_int_equal(st.stalls, 1);
    assert_true(st.stall_ms >= 300);
    /* b, the producer's queued inserts, and the flush if it was queued
     * rather than still waiting for room when the writer gave up */
    assert_true(st.failed_ops == 1 + first_err || st.failed_ops == 2 + first_err);
    assert_int_equal(db_is_stalled(d), 1); /* still no dispatch */
    assert_int_equal(db_last_error(d, msg, sizeof msg), -ENOSPC);
    assert_non_null(strstr(msg, "gave up"));
    assert_non_null(strstr(msg, "crawld.db"));
    /* later operations fail at once */
    db_url c = url_of("https://a.example/c", "a.example", 1);
    assert_int_equal(db_insert_url(d, &c, order_cb, &l), -ENOSPC);
    assert_int_equal(db_insert_url_wait(d, &c, NULL), -ENOSPC);
    assert_int_equal(db_set_state(d, 1, DB_STATE_IN_FLIGHT), -ENOSPC);
    assert_int_equal(db_flush(d), -ENOSPC);
    assert_int_equal(db_close(d), -ENOSPC);
    /* a later run on the same state: what committed is there */
    d = open_ok(f->state, NULL);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 1);
    assert_int_equal(db_insert_url_wait(d, &b, NULL), 1);
    assert_int_equal(db_close(d), 0);
}

/* db_give_up ends a stall that would last for ever (max_stall_ms = 0),
 * producers blocked on the full queue included; without a stall it does
 * nothing. */
static void test_give_up_now(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 2, .queue_cap = 4 };
    char dir[160];
    snprintf(dir, sizeof dir, "%s/calm", f->state);
    db *d = open_ok(dir, &o);
    db_url a = url_of("https://a.example/", "a.example", 0);
    db_give_up(d); /* not stalled: no effect */
    assert_int_equal(db_insert_url_wait(d, &a, NULL), 1);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_close(d), 0);

    d = open_faulty(f->state, &o, "1:ioerr:100000");
    order_log l = { 0 };
    assert_int_equal(db_insert_url(d, &a, order_cb, &l), 0);
    wait_stalled(d, 1);
    producer_job p = { .d = d, .n = 20, .log = &l };
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, producer_main, &p), 0);
    struct timespec ms = { 0, 2000000 };
    db_stats st;
    for (int i = 0; i < 15000; i++) {
        db_get_stats(d, &st);
        if (st.queued == 4)
            break;
        nanosleep(&ms, NULL);
    }
    assert_int_equal(st.queued, 4);
    assert_int_equal(atomic_load(&p.done), 0); /* blocked */
    db_give_up(d);
    pthread_join(t, NULL);
    assert_int_equal(p.rc[0], 0);
    assert_int_equal(p.rc[p.n - 1], -EIO);
    assert_int_equal(db_flush(d), -EIO);
    /* callers return at once; the writer fails what it holds after them */
    for (int i = 0; i < 15000; i++) {
        db_get_stats(d, &st);
        if (st.failed != 0 && st.queued == 0 && atomic_load(&l.n) >= 1 + 4)
            break;
        nanosleep(&ms, NULL);
    }
    assert_int_equal(st.failed, -EIO);
    assert_int_equal(st.stalled, 0);
    int answered = atomic_load(&l.n);
    assert_true(answered >= 1 + 4);
    for (int i = 0; i < answered; i++)
        assert_int_equal(l.status[i], -EIO);
    assert_int_equal(db_close(d), -EIO);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 0);
}

/* db_close during a stall tries once more: if that commits, nothing is
 * lost and it returns 0; if not, it gives up and returns the error. */
static void test_close_during_stall(void **state)
{
    fixture *f = *state;
    char dir[160];
    for (int lasting = 0; lasting < 2; lasting++) {
        snprintf(dir, sizeof dir, "%s/%d", f->state, lasting);
        db *d = open_faulty(dir, NULL, lasting ? "1:busy:100000" : "1:busy:1");
        order_log l = { 0 };
        db_url a = url_of("https://a.example/", "a.example", 0);
        assert_int_equal(db_insert_url(d, &a, order_cb, &l), 0);
        wait_stalled(d, 1);
        int rc = db_close(d);
        assert_int_equal(atomic_load(&l.n), 1);
        if (lasting) {
            assert_int_equal(rc, -EBUSY);
            assert_int_equal(l.status[0], -EBUSY);
            assert_int_equal(raw_int(dir, "SELECT count(*) FROM urls"), 0);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(l.status[0], 1);
            assert_int_equal(raw_int(dir, "SELECT count(*) FROM urls"), 1);
        }
    }
}

/* ---- flush marks, identity, migration, hops ---- */

typedef struct mark_log {
    int64_t max_seen; /* the highest id a callback was given */
    int n;
} mark_log;

static void mark_cb(void *ud, const db_result *r)
{
    mark_log *m = ud;
    if (r->id > m->max_seen)
        m->max_seen = r->id;
    m->n++;
}

/* db_flush_mark's mark: every row up to it committed and its callback run;
 * an existing URL does not move it; through a stall too. */
static void test_flush_mark(void **state)
{
    fixture *f = *state;
    db_opts o = { .batch_size = 7 };
    db *d = open_faulty(f->state, &o, "3:full:2");
    mark_log m = { 0 };
    char url[64];
    int64_t mark = -1;

    assert_int_equal(db_flush_mark(d, &mark), 0); /* attempt 1 */
    assert_int_equal(mark, 0);
    for (int i = 0; i < 50; i++) {
        db_url u = url_of(url, "m.example", 0);
        make_url(url, sizeof url, 1, i);
        assert_int_equal(db_insert_url(d, &u, mark_cb, &m), 0);
    }
    assert_int_equal(db_flush_mark(d, &mark), 0); /* through the stall at attempt 3 */
    assert_int_equal(m.n, 50);
    assert_int_equal(mark, m.max_seen);
    assert_int_equal(mark, raw_int(f->state, "SELECT max(id) FROM urls"));
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 50);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.stalls, 1);
    /* duplicates: no new rows, the same mark */
    for (int i = 0; i < 10; i++) {
        db_url u = url_of(url, "m.example", 0);
        make_url(url, sizeof url, 1, i);
        assert_int_equal(db_insert_url(d, &u, mark_cb, &m), 0);
    }
    int64_t again = -1;
    assert_int_equal(db_flush_mark(d, &again), 0);
    assert_int_equal(again, mark);
    assert_int_equal(m.n, 60);
    /* async inserts then the mark, with no flush between: the mark covers them */
    for (int i = 50; i < 53; i++) {
        db_url u = url_of(url, "m.example", 0);
        make_url(url, sizeof url, 1, i);
        assert_int_equal(db_insert_url(d, &u, mark_cb, &m), 0);
    }
    assert_int_equal(db_flush_mark(d, &again), 0);
    assert_int_equal(again, mark + 3);
    assert_int_equal(m.max_seen, again);
    assert_int_equal(db_close(d), 0);
}

static int is_hex_id(const char *s)
{
    if (s == NULL || strlen(s) != DB_CRAWL_ID_LEN)
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

/* The crawl id: made once, stored in meta, the same after a reopen, and
 * another state folder's is another. */
static void test_crawl_id_stable(void **state)
{
    fixture *f = *state;
    char id[DB_CRAWL_ID_LEN + 1], other[160], meta[64];
    db *d = open_ok(f->state, NULL);
    assert_true(is_hex_id(db_crawl_id(d)));
    snprintf(id, sizeof id, "%s", db_crawl_id(d));
    assert_int_equal(db_close(d), 0);
    d = open_ok(f->state, NULL);
    assert_string_equal(db_crawl_id(d), id);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_get_meta(rd, "crawl_id", meta, sizeof meta), 0);
    assert_string_equal(meta, id);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    snprintf(other, sizeof other, "%s/other", f->dir);
    d = open_ok(other, NULL);
    assert_true(is_hex_id(db_crawl_id(d)));
    assert_string_not_equal(db_crawl_id(d), id);
    assert_int_equal(db_close(d), 0);
}

/* Schema version 1 as crawld wrote it (its migration 0 and header). */
static const char v1_schema[] =
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
    "CREATE INDEX urls_state ON urls(state, depth, id) WHERE state <> 4;"
    "CREATE INDEX urls_host_state ON urls(host, state, depth, id) WHERE state <> 4;"
    "INSERT INTO meta(key, value) VALUES('schema_version', 1);"
    "INSERT INTO meta(key, value) VALUES('created_at', 1700000000000);"
    "PRAGMA application_id = 1131564132; PRAGMA user_version = 1;"
    "INSERT INTO urls(url, host, depth, state, attempts) VALUES"
    " ('https://old.example/', 'old.example', 0, 2, 1),"
    " ('https://old.example/a', 'old.example', 1, 0, 0),"
    " ('https://old.example/b', 'old.example', 1, 1, 1);";

/* A v1 file (before crawl ids and hops) is migrated: rows kept, the new
 * columns there with their defaults, a crawl id made and kept. */
static void test_migrate_from_v1(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->state, 0700), 0);
    assert_int_equal(raw_exec(f->state, v1_schema), SQLITE_OK);
    db *d = open_ok(f->state, NULL);
    assert_int_equal(db_recovered_in_flight(d), 1);
    assert_true(is_hex_id(db_crawl_id(d)));
    char id[DB_CRAWL_ID_LEN + 1];
    snprintf(id, sizeof id, "%s", db_crawl_id(d));
    db_url u = url_of("https://old.example/a", "old.example", 1);
    int64_t rid = 0;
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 0); /* still known */
    assert_int_equal(rid, 2);
    db_url n = url_of("https://old.example/r", "old.example", 2);
    n.hops = 3;
    n.kind = DB_KIND_REDIRECT;
    assert_int_equal(db_insert_url_wait(d, &n, &rid), 1);
    db_reader *rd = db_reader_open(d, NULL, 0);
    int st = -1, att = -1, hops = -1;
    assert_int_equal(db_reader_row(rd, 1, &st, &att, &hops), 0);
    assert_int_equal(st, DB_STATE_DONE);
    assert_int_equal(att, 1);
    assert_int_equal(hops, 0); /* the default for old rows */
    assert_int_equal(db_reader_row(rd, rid, &st, &att, &hops), 0);
    assert_int_equal(hops, 3);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    /* 3 -> 4: old rows stamped from discovered_at (0 here; /a was linked
     * again above and took that insert's stamp), the index there */
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE last_linked = 0"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                       " AND name = 'urls_last_linked'"), 1);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='created_at'"),
                     1700000000000LL);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE fetch_url IS NULL"), 4);
    d = open_ok(f->state, NULL);
    assert_string_equal(db_crawl_id(d), id);
    assert_int_equal(db_close(d), 0);
}

/* A v2 file (the UNIQUE index on the URL text), with a column and an
 * index that another step added: crawld 1 -> 2 as shipped, then one more. */
static void make_v2(const char *state)
{
    assert_int_equal(mkdir(state, 0700), 0);
    assert_int_equal(raw_exec(state, v1_schema), SQLITE_OK);
    assert_int_equal(raw_exec(state,
        "ALTER TABLE urls ADD COLUMN fetch_url TEXT;"
        "ALTER TABLE urls ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE urls ADD COLUMN linked_at INTEGER NOT NULL DEFAULT 77;"
        "CREATE INDEX urls_linked ON urls(linked_at) WHERE state <> 4;"
        "UPDATE urls SET hops = 2, fetch_url = 'https://old.example/B' WHERE id = 3;"
        "UPDATE urls SET linked_at = 5 WHERE id = 2;"
        "UPDATE meta SET value = 2 WHERE key = 'schema_version';"
        "PRAGMA user_version = 2;"), SQLITE_OK);
}

/* 2 -> 3 rebuilds urls: every column (also ones this build does not know)
 * and value kept, ids kept, the other indexes re-created, each row with
 * its fingerprint, and the old URLs still known. */
static void test_migrate_from_v2_keeps_columns(void **state)
{
    fixture *f = *state;
    make_v2(f->state);
    db *d = open_ok(f->state, NULL);
    int64_t rid = 0;
    db_url u = url_of("https://old.example/b", "old.example", 1);
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
    assert_int_equal(rid, 3);
    db_url n = url_of("https://old.example/c", "old.example", 1);
    assert_int_equal(db_insert_url_wait(d, &n, &rid), 1);
    assert_int_equal(rid, 4);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_exists(rd, "https://old.example/", 0, &rid), 1);
    assert_int_equal(rid, 1);
    assert_int_equal(db_reader_exists(rd, "https://old.example/zz", 0, &rid), 0);
    int st = -1, att = -1, hops = -1;
    assert_int_equal(db_reader_row(rd, 3, &st, &att, &hops), 0);
    assert_int_equal(hops, 2);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 4);
    assert_int_equal(raw_int(f->state, "SELECT linked_at FROM urls WHERE id = 2"), 5);
    assert_int_equal(raw_int(f->state, "SELECT linked_at FROM urls WHERE id = 4"), 77);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls WHERE id = 3 AND"
                                       " fetch_url = 'https://old.example/B'"), 1);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                       " AND name IN ('urls_state', 'urls_host_state',"
                                       " 'urls_linked')"), 3);
    /* 5 -> 6: the three old rows are a frozen run, the new one is active */
    assert_int_equal(raw_int(f->state, "SELECT rows FROM fp_runs WHERE tier = 0"), 3);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 4);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE type='index'"
                                       " AND tbl_name = 'urls' AND sql IS NULL"), 0);
    const char *url = "https://old.example/a";
    char q[160];
    snprintf(q, sizeof q, "SELECT fp = %lld FROM urls WHERE url = '%s'",
             (long long)urlfp(url, strlen(url)), url);
    assert_int_equal(raw_int(f->state, q), 1);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM pragma_integrity_check"
                                       " WHERE integrity_check = 'ok'"), 1);
}

/* A rebuild that fails (the disk fills during the copy) leaves the file
 * at version 2, whole, and says why; the next open migrates it. */
static void test_migrate_failure_keeps_v2(void **state)
{
    fixture *f = *state;
    char err[512];
    make_v2(f->state);
    setenv("CRAWLD_FAULT_REBUILD", "1", 1);
    db *d = db_open(f->state, NULL, err, sizeof err);
    unsetenv("CRAWLD_FAULT_REBUILD");
    assert_null(d);
    assert_non_null(strstr(err, "disk is full"));
    assert_non_null(strstr(err, "rebuilding the urls table"));
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 3);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE name = 'urls_fp'"
                                       " OR name = 'urls_rebuilt'"), 0);
    d = open_ok(f->state, NULL);
    int64_t rid = 0;
    db_url u = url_of("https://old.example/a", "old.example", 1);
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
    assert_int_equal(rid, 2);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
}

static void count_forgotten(void *ud, const db_result *r) { *(int64_t *)ud = r->status; }

/* The writer's upkeep of the fingerprint runs (run_rows 5): runs are
 * frozen and merged between batches, the figures say so, and every URL
 * stays known under its id, also after a forget deleted rows from runs
 * of every age. */
static void test_runs_upkeep(void **state)
{
    fixture *f = *state;
    db_opts o = { .run_rows = 5 };
    db *d = open_ok(f->state, &o);
    char url[64];
    int64_t rid = 0;
    for (int i = 0; i < 120; i++) {
        make_url(url, sizeof url, i % 3, i);
        db_url u = url_of(url, "h.example", 0);
        u.state = DB_STATE_DONE;
        u.linked_s = 100;
        assert_int_equal(db_insert_url_wait(d, &u, &rid), 1);
        assert_int_equal(rid, i + 1);
    }
    db_stats st;
    db_get_stats(d, &st);
    assert_true(st.runs.freezes >= 20);
    assert_true(st.runs.merges >= 5);
    assert_true(st.runs.merged_rows >= 20 * st.runs.merges);
    assert_int_equal(st.runs.failures, 0);
    assert_true(st.runs.runs >= 2 && st.runs.runs <= 12);
    for (int i = 0; i < 120; i++) {
        make_url(url, sizeof url, i % 3, i);
        db_url u = url_of(url, "h.example", 0);
        u.linked_s = 100;
        assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
        assert_int_equal(rid, i + 1);
    }
    assert_int_equal(db_close(d), 0);
    /* forgetting: every row was stamped 100; a cutoff of 200 forgets them all */
    d = open_ok(f->state, &o);
    int64_t gone = 0;
    for (int step = 0; step < 10 && gone < 120; step++) {
        int64_t n = -1;
        assert_int_equal(db_forget(d, 200, 50, count_forgotten, &n), 0);
        assert_int_equal(db_flush(d), 0);
        assert_true(n > 0);
        gone += n;
    }
    assert_int_equal(gone, 120);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 0);
}

/* A disk full for the upkeep (CRAWLD_FAULT_UPKEEP: no page past the
 * file's size during the step) fails each step: counted, nothing frozen,
 * every URL still known; once there is room the runs catch up. */
static void test_runs_upkeep_failure(void **state)
{
    fixture *f = *state;
    db_opts o = { .run_rows = 5 };
    char url[64];
    int64_t rid = 0;
    setenv("CRAWLD_FAULT_UPKEEP", "1", 1);
    db *d = open_ok(f->state, &o);
    for (int i = 0; i < 30; i++) {
        make_url(url, sizeof url, 1, i);
        db_url u = url_of(url, "h1.example", 0);
        assert_int_equal(db_insert_url_wait(d, &u, &rid), 1);
    }
    db_stats st;
    db_get_stats(d, &st);
    assert_true(st.runs.failures >= 20);
    assert_int_equal(st.runs.freezes, 0);
    assert_int_equal(st.runs.runs, 1);
    assert_int_equal(db_last_error(d, url, sizeof url), 0); /* the store did not fail */
    unsetenv("CRAWLD_FAULT_UPKEEP");
    for (int i = 0; i < 30; i++) {
        make_url(url, sizeof url, 1, i);
        db_url u = url_of(url, "h1.example", 0);
        assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
        assert_int_equal(rid, i + 1);
    }
    make_url(url, sizeof url, 2, 0);
    db_url u = url_of(url, "h2.example", 0);
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 1);
    db_get_stats(d, &st);
    assert_int_equal(st.runs.freezes, 1);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 31);
}

/* A v5 file as crawld 5 left it: one fp index on urls. Made here from a
 * new file by taking the runs away again (the rows stay as they are). */
static void make_v5(const char *state)
{
    db *d = open_ok(state, NULL);
    const char *urls[] = { "https://five.example/", "https://five.example/a",
                           "https://five.example/b" };
    for (size_t i = 0; i < 3; i++) {
        db_url u = url_of(urls[i], "five.example", 0);
        int64_t rid = 0;
        assert_int_equal(db_insert_url_wait(d, &u, &rid), 1);
    }
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(state, "SELECT run FROM fp_runs"), 2); /* a new file's active run */
    assert_int_equal(raw_exec(state,
        "DROP TRIGGER seen_fp_drop; DROP TRIGGER seen_fp_move; DROP TRIGGER seen_fp_drop_bare;"
        "DROP TABLE seen;"
        "DROP VIEW seen_fp; DROP TABLE fp_active; DROP TABLE fp_runs;"
        "CREATE INDEX urls_fp ON urls(fp);"
        "UPDATE meta SET value = 5 WHERE key = 'schema_version'; PRAGMA user_version = 5;"),
        SQLITE_OK);
}

/* 5 -> 6 moves the fp index into a frozen run: every old URL still
 * known (same id), new ones go to the active run, the index is gone. */
static void test_migrate_from_v5_moves_the_index(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->state, 0700), 0);
    make_v5(f->state);
    db *d = open_ok(f->state, NULL);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.runs.runs, 2);
    int64_t rid = 0;
    db_url u = url_of("https://five.example/b", "five.example", 1);
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
    assert_int_equal(rid, 3);
    db_url n = url_of("https://five.example/c", "five.example", 1);
    assert_int_equal(db_insert_url_wait(d, &n, &rid), 1);
    assert_int_equal(rid, 4);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_exists(rd, "https://five.example/", 0, &rid), 1);
    assert_int_equal(rid, 1);
    assert_int_equal(db_reader_exists(rd, "https://five.example/c", 0, &rid), 1);
    assert_int_equal(rid, 4);
    assert_int_equal(db_reader_exists(rd, "https://five.example/zz", 0, &rid), 0);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE name = 'urls_fp'"), 0);
    assert_int_equal(raw_int(f->state, "SELECT rows FROM fp_runs WHERE tier = 0"), 3);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM fp_runs"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 4);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM pragma_integrity_check"
                                       " WHERE integrity_check = 'ok'"), 1);
}

/* A move into runs that fails (the disk fills while the run is written)
 * leaves the file at version 5 with its index, and says why; the next
 * open migrates it. */
static void test_migrate_failure_keeps_v5(void **state)
{
    fixture *f = *state;
    char err[512];
    assert_int_equal(mkdir(f->state, 0700), 0);
    make_v5(f->state);
    setenv("CRAWLD_FAULT_FPRUNS_INSTALL", "1", 1);
    db *d = db_open(f->state, NULL, err, sizeof err);
    unsetenv("CRAWLD_FAULT_FPRUNS_INSTALL");
    assert_null(d);
    assert_non_null(strstr(err, "disk is full"));
    assert_non_null(strstr(err, "fingerprint index into runs"));
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"), 5);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE name = 'urls_fp'"), 1);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE name = 'fp_runs'"
                                       " OR name GLOB 'fp_*' OR name = 'seen_fp'"), 0);
    d = open_ok(f->state, NULL);
    int64_t rid = 0;
    db_url u = url_of("https://five.example/a", "five.example", 1);
    assert_int_equal(db_insert_url_wait(d, &u, &rid), 0);
    assert_int_equal(rid, 2);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
}

/* Two URLs with one fingerprint are two rows: a fingerprint match is
 * settled by the text (a planted row stands in for a real collision). */
static void test_fingerprint_match_compares_text(void **state)
{
    fixture *f = *state;
    const char *url = "https://c.example/collides";
    char sql[256];
    db *d = open_ok(f->state, NULL);
    assert_int_equal(db_close(d), 0);
    snprintf(sql, sizeof sql, "INSERT INTO urls(url, host, fp) VALUES('https://c.example/other',"
             " 'c.example', %lld)", (long long)urlfp(url, strlen(url)));
    assert_int_equal(raw_exec(f->state, sql), SQLITE_OK);
    d = open_ok(f->state, NULL);
    int64_t id = 0, again = 0;
    db_url u = url_of(url, "c.example", 0);
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    assert_int_equal(id, 2);
    assert_int_equal(db_insert_url_wait(d, &u, &again), 0);
    assert_int_equal(again, 2);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_int_equal(db_reader_exists(rd, url, 0, &again), 1);
    assert_int_equal(again, 2);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* keep_linked: a row already there is found (0, its id) and left as it
 * is; without it the row takes the newer stamp. */
static void test_keep_linked_leaves_the_row(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    int64_t id = 0, again = 0;
    db_url u = url_of("https://k.example/a", "k.example", 0);
    u.linked_s = 100;
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    u.linked_s = 200;
    u.keep_linked = true;
    assert_int_equal(db_insert_url_wait(d, &u, &again), 0);
    assert_int_equal(again, id);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls"), 100);
    u.keep_linked = false;
    assert_int_equal(db_insert_url_wait(d, &u, &again), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls"), 200);
    assert_int_equal(db_close(d), 0);
}

typedef struct probe_ack {
    int status[4096];
    int64_t id[4096];
} probe_ack;

static probe_ack probes;

static void on_probe(void *ud, const db_result *r)
{
    size_t i = (size_t)(uintptr_t)ud;
    probes.status[i] = r->status;
    probes.id[i] = r->id;
}

/* Seeded: URLs from a small space, with 4 bits of fingerprint left
 * (CRAWLD_FP_BITS, test builds), queued as "insert unless present" in
 * small batches that the writer sorts by fingerprint: each is new exactly
 * when no earlier line had its text, and a repeat gets the first's id. */
static void test_colliding_fingerprints_stay_exact(void **state)
{
    fixture *f = *state;
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t st = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_colliding_fingerprints_stay_exact: seed %llu\n", (unsigned long long)st);
    assert_int_equal(setenv("CRAWLD_FP_BITS", "4", 1), 0);
    db_opts o = { .batch_size = 97, .gather_ms = 5 };
    db *d = open_ok(f->state, &o);
    enum { N = 4096, SPACE = 1500 };
    static char urls[N][64];
    int first[SPACE];
    for (int k = 0; k < SPACE; k++)
        first[k] = -1;
    for (size_t i = 0; i < N; i++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int k = (int)((st >> 33) % SPACE);
        make_url(urls[i], sizeof urls[i], k % 7, k);
        db_url u = url_of(urls[i], "h.example", 0);
        u.state = DB_STATE_SEEN_ONLY;
        u.keep_linked = true;
        probes.status[i] = -999;
        assert_int_equal(db_insert_url(d, &u, on_probe, (void *)(uintptr_t)i), 0);
        if (first[k] < 0)
            first[k] = (int)i;
    }
    assert_int_equal(db_flush(d), 0);
    for (size_t i = 0; i < N; i++) {
        int k = -1;
        sscanf(urls[i] + strlen("https://h0.example/p/"), "%d", &k);
        assert_true(k >= 0 && k < SPACE);
        if (first[k] == (int)i) {
            assert_int_equal(probes.status[i], 1);
        } else {
            assert_int_equal(probes.status[i], 0);
            assert_int_equal(probes.id[i], probes.id[first[k]]);
        }
    }
    assert_int_equal(db_close(d), 0);
    unsetenv("CRAWLD_FP_BITS");
    assert_true(raw_int(f->state, "SELECT count(DISTINCT fp) FROM urls") <= 16);
}

/* A batch of seen_only inserts is applied in fingerprint order (signed,
 * as SQLite orders integers): within it, ids ascend with fp. A frontier
 * row among them keeps its place in the queue. */
static void test_seen_only_batch_in_fp_order(void **state)
{
    fixture *f = *state;
    enum { N = 600 };
    static char urls[N][64];
    db_url u[N];
    int status[N];
    int64_t ids[N];
    db *d = open_ok(f->state, NULL);
    for (int i = 0; i < N; i++) {
        make_url(urls[i], sizeof urls[i], i % 5, i);
        u[i] = url_of(urls[i], "h.example", 0);
        u[i].state = i == N / 2 ? DB_STATE_QUEUED : DB_STATE_SEEN_ONLY;
    }
    assert_int_equal(db_insert_urls_wait(d, u, N, status, ids), 0);
    for (int i = 0; i < N; i++)
        assert_int_equal(status[i], 1);
    assert_int_equal(db_close(d), 0);
    assert_true(raw_int(f->state, "SELECT count(*) FROM urls WHERE fp < 0") > 0);
    assert_true(raw_int(f->state, "SELECT count(*) FROM urls WHERE fp > 0") > 0);
    /* the queued row splits the batch in two runs, each sorted */
    int64_t mid = ids[N / 2];
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls a JOIN urls b"
                                       " ON a.id < b.id AND a.fp > b.fp"
                                       " WHERE a.state = 4 AND b.state = 4 AND"
                                       " (a.id < (SELECT id FROM urls WHERE state = 0))"
                                       " = (b.id < (SELECT id FROM urls WHERE state = 0))"),
                     0);
    for (int i = 0; i < N; i++)
        assert_true(i < N / 2 ? ids[i] < mid : i == N / 2 || ids[i] > mid);
}

/* Redirect hops are stored with the row and read back (the limit holds
 * across a restart); a negative count is refused. */
static void test_hops_read_back(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url u = url_of("https://h.example/redirect/hop/4", "h.example", 3);
    int64_t id = 0, id0 = 0;
    u.hops = 4;
    u.kind = DB_KIND_REDIRECT;
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    db_url z = url_of("https://h.example/", "h.example", 0);
    assert_int_equal(db_insert_url_wait(d, &z, &id0), 1);
    db_url bad = url_of("https://h.example/bad", "h.example", 0);
    bad.hops = -1;
    assert_int_equal(db_insert_url(d, &bad, NULL, NULL), -EINVAL);
    db_outcome oc = { .state = DB_STATE_QUEUED, .attempts = 2, .error = "timeout" };
    assert_int_equal(db_record_outcome(d, id, &oc), 0);
    assert_int_equal(db_close(d), 0);

    d = open_ok(f->state, NULL);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    int st = -1, att = -1, hops = -1;
    assert_int_equal(db_reader_row(rd, id, &st, &att, &hops), 0);
    assert_int_equal(st, DB_STATE_QUEUED);
    assert_int_equal(att, 2);
    assert_int_equal(hops, 4);
    assert_int_equal(db_reader_row(rd, id0, NULL, NULL, &hops), 0);
    assert_int_equal(hops, 0);
    assert_int_equal(db_reader_row(rd, id0 + 100, &st, &att, &hops), -ENOENT);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* ---- out of memory ---- */

static void test_out_of_memory(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d = NULL;
    long n;
    db_url u = url_of("https://a.example/", "a.example", 0);
    db_outcome oc = { .state = DB_STATE_FAILED, .error = "x" };

    for (n = 1; n < 50 && d == NULL; n++) {
        err[0] = '\0';
        cr_alloc_fail_after(n);
        d = db_open(f->state, NULL, err, sizeof err);
        cr_alloc_fail_after(0);
        if (d == NULL)
            assert_true(err[0] != '\0');
    }
    assert_non_null(d);
    assert_true(n > 2); /* some runs did fail */
    cr_alloc_fail_after(1);
    assert_int_equal(db_insert_url(d, &u, NULL, NULL), -ENOMEM);
    cr_alloc_fail_after(1);
    assert_int_equal(db_record_outcome(d, 1, &oc), -ENOMEM);
    cr_alloc_fail_after(0);
    assert_int_equal(db_insert_url_wait(d, &u, NULL), 1); /* borrows: no allocation */
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_close(d), 0);
}

/* The one copy of the state names: each state has its own, outside is "?". */
static void test_state_names(void **state)
{
    (void)state;
    assert_string_equal(db_state_name(DB_STATE_QUEUED), "queued");
    assert_string_equal(db_state_name(DB_STATE_IN_FLIGHT), "in_flight");
    assert_string_equal(db_state_name(DB_STATE_DONE), "done");
    assert_string_equal(db_state_name(DB_STATE_FAILED), "failed");
    assert_string_equal(db_state_name(DB_STATE_SEEN_ONLY), "seen_only");
    assert_string_equal(db_state_name(DB_STATE_EXCLUDED), "excluded");
    assert_string_equal(db_state_name(DB_STATE_COUNT), "?");
    assert_string_equal(db_state_name(-1), "?");
}

/* ---- retention (dedup.retention_s): last_linked, touch, forget ---- */

static int64_t forget_status;
static int forget_calls;

static int64_t forget_ids[16];
static int n_forget_ids;

static void on_forget(void *ud, const db_result *r)
{
    (void)ud;
    forget_status = r->status;
    forget_calls++;
    assert_true(r->status <= 0 || r->ids != NULL);
    for (int i = 0; i < r->status && n_forget_ids < 16; i++)
        forget_ids[n_forget_ids++] = r->ids[i];
}

static int count_linked(void *ud, int64_t id, const char *url, size_t len, int64_t linked)
{
    (void)id;
    (void)url;
    (void)len;
    (void)linked;
    (*(int *)ud)++;
    return 0;
}

/* Rows carry the stamp they were recorded with; a link again moves it
 * forward (never back), also through an insert of a row already there. */
static void test_last_linked_moves_forward(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url u = url_of("https://a.example/", "a.example", 0);
    u.linked_s = 100;
    int64_t id = 0;
    assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
    assert_int_equal(db_touch_linked(d, u.url, strlen(u.url), 50), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls"), 100);
    assert_int_equal(db_touch_linked(d, u.url, strlen(u.url), 300), 0);
    assert_int_equal(db_touch_linked(d, "https://none.example/", 21, 300), 0); /* no row: fine */
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls"), 300);
    u.linked_s = 400;
    assert_int_equal(db_insert_url_wait(d, &u, &id), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls"), 400);
    assert_int_equal(db_touch_linked(d, NULL, 3, 1), -EINVAL);
    /* without a stamp, the discovery time in seconds */
    db_url v = url_of("https://b.example/", "b.example", 0);
    v.discovered_at = 1700000000123LL;
    assert_int_equal(db_insert_url_wait(d, &v, &id), 1);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM urls WHERE host = 'b.example'"),
                     1700000000LL);
    assert_int_equal(db_close(d), 0);
}

/* db_forget deletes, in steps of at most limit rows, the rows stamped
 * before the cutoff, keeping queued and in-flight ones; the counts and the
 * forgotten counter follow, and the kept queued rows are listed. */
static void test_forget_in_bounded_steps(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    char name[64];
    for (int i = 0; i < 7; i++) {
        snprintf(name, sizeof name, "https://f.example/%d", i);
        db_url u = url_of(name, "f.example", 1);
        u.state = i == 6 ? DB_STATE_QUEUED : DB_STATE_DONE;
        u.linked_s = i < 5 || i == 6 ? 100 : 200;
        assert_int_equal(db_insert_url_wait(d, &u, NULL), 1);
    }
    assert_int_equal(db_touch_linked(d, "https://f.example/0", 19, 250), 0);
    assert_int_equal(db_forget(d, 200, 0, on_forget, NULL), -EINVAL);
    assert_int_equal(db_forget(d, 200, DB_FORGET_MAX + 1, on_forget, NULL), -EINVAL);
    int64_t steps[3];
    forget_calls = 0;
    n_forget_ids = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(db_forget(d, 200, 2, on_forget, NULL), 0);
        assert_int_equal(db_flush(d), 0);
        steps[i] = forget_status;
    }
    assert_int_equal(forget_calls, 3);
    assert_int_equal(steps[0], 2); /* rows 1..4 are stamped 100: 2, 2, then none */
    assert_int_equal(steps[1], 2);
    assert_int_equal(steps[2], 0);
    /* each step names the rows it deleted: ids 2..5 (f.example/1..4) */
    assert_int_equal(n_forget_ids, 4);
    int64_t seen_ids = 0;
    for (int i = 0; i < n_forget_ids; i++) {
        assert_true(forget_ids[i] >= 2 && forget_ids[i] <= 5);
        seen_ids |= (int64_t)1 << forget_ids[i];
    }
    assert_int_equal(seen_ids, 0x3c);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.forgotten, 4);
    assert_int_equal(st.rows[DB_STATE_DONE], 2);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 1);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 3);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    int n = 0;
    assert_int_equal(db_reader_stale_queued(rd, 200, count_linked, &n), 1);
    assert_int_equal(n, 1);
    n = 0; /* catch-up: rows after id 6, or stamped at or after 250 */
    assert_int_equal(db_reader_scan_linked(rd, 6, 250, count_linked, &n), 2);
    assert_int_equal(n, 2);
    db_reader_free(rd);
    /* a forgotten URL is new again */
    db_url again = url_of("https://f.example/1", "f.example", 1);
    assert_int_equal(db_insert_url_wait(d, &again, NULL), 1);
    /* the last row's id comes again once it is deleted: why the ids are told */
    db_url last = url_of("https://f.example/last", "f.example", 1);
    last.state = DB_STATE_DONE;
    last.linked_s = 100;
    int64_t last_id = 0, next_id = 0;
    assert_int_equal(db_insert_url_wait(d, &last, &last_id), 1);
    n_forget_ids = 0;
    assert_int_equal(db_forget(d, 200, 2, on_forget, NULL), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(n_forget_ids, 1);
    assert_int_equal(forget_ids[0], last_id);
    db_url other = url_of("https://f.example/other", "f.example", 1);
    assert_int_equal(db_insert_url_wait(d, &other, &next_id), 1);
    assert_int_equal(next_id, last_id);
    assert_int_equal(db_close(d), 0);
}

/* A 304 re-reads no links: the rows its page discovered stay linked, so
 * retention keeps them; a parent that answered 200 re-linked what it
 * still links, and one that answered 304 before the cutoff covers none. */
static void test_stale_rows_of_unchanged_pages_are_kept(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    const char *names[] = { "https://k.example/p304", "https://k.example/p200",
                            "https://k.example/old304", "https://k.example/c1",
                            "https://k.example/c2", "https://k.example/c3" };
    for (int i = 0; i < 6; i++) {
        db_url u = url_of(names[i], "k.example", 1);
        u.state = DB_STATE_DONE;
        u.linked_s = i < 3 ? 500 : 100;
        assert_int_equal(db_insert_url_wait(d, &u, NULL), 1);
    }
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_exec(f->state,
                              "UPDATE urls SET http_status = 304, fetched_at = 300000 WHERE id = 1;"
                              "UPDATE urls SET http_status = 200, fetched_at = 300000 WHERE id = 2;"
                              "UPDATE urls SET http_status = 304, fetched_at = 100000 WHERE id = 3;"
                              "UPDATE urls SET parent = id - 3 WHERE id > 3;"),
                     SQLITE_OK);
    d = open_ok(f->state, NULL);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    int n = 0;
    assert_int_equal(db_reader_stale_queued(rd, 200, count_linked, &n), 1);
    assert_int_equal(n, 1); /* c1 only: its parent answered 304 at 300 s */
    db_reader_free(rd);
    /* a seed is kept however old its stamp: nothing else links to it */
    db_url seed = url_of("https://k.example/", "k.example", 0);
    seed.kind = DB_KIND_SEED;
    seed.state = DB_STATE_DONE;
    seed.linked_s = 100;
    assert_int_equal(db_insert_url_wait(d, &seed, NULL), 1);
    rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    n = 0;
    assert_int_equal(db_reader_stale_queued(rd, 200, count_linked, &n), 2);
    assert_int_equal(n, 2);
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
}

/* ---- bare rows (db_url.bare: `crawld dedup`'s), the seen table ---- */

static db_url bare_of(const char *url)
{
    db_url u = { .url = url, .host = "", .kind = DB_KIND_SEED, .state = DB_STATE_SEEN_ONLY,
                 .bare = true };
    return u;
}

/* Bare rows go to the narrow seen table, crawl rows to urls, with ids from
 * one sequence; either table answers the seen test for a URL of the other,
 * and the counts, the catch-up scan and a reopen see both. */
static void test_bare_rows_share_the_seen_set(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    const char *names[] = { "https://b.example/crawl1", "https://b.example/bare1",
                            "https://b.example/bare2", "https://b.example/crawl2" };
    for (int i = 0; i < 4; i++) {
        db_url u = i == 0 || i == 3 ? url_of(names[i], "b.example", 0) : bare_of(names[i]);
        int64_t id = 0;
        assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
        assert_int_equal(id, i + 1);
    }
    db_url bad = bare_of("https://b.example/queued");
    bad.state = DB_STATE_QUEUED;
    assert_int_equal(db_insert_url_wait(d, &bad, NULL), -EINVAL);
    /* known in the other table: not inserted again, whichever form asks */
    int64_t id = 0;
    db_url as_crawl = url_of(names[1], "b.example", 0);
    assert_int_equal(db_insert_url_wait(d, &as_crawl, &id), 0);
    assert_int_equal(id, 2);
    db_url as_bare = bare_of(names[3]);
    assert_int_equal(db_insert_url_wait(d, &as_bare, &id), 0);
    assert_int_equal(id, 4);
    db_url again = bare_of(names[2]);
    assert_int_equal(db_insert_url_wait(d, &again, &id), 0);
    assert_int_equal(id, 3);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 2);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 2);
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    assert_int_equal(db_reader_exists(rd, names[2], 0, &id), 1);
    assert_int_equal(id, 3);
    assert_int_equal(db_reader_exists(rd, "https://b.example/none", 0, &id), 0);
    assert_int_equal(db_reader_max_id(rd, &id), 0);
    assert_int_equal(id, 4);
    scan_log l = { 0 };
    assert_int_equal(db_reader_scan_after(rd, 1, scan_cb, &l), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(l.ids[i], i + 2);
        assert_string_equal(l.urls[i], names[i + 1]);
    }
    db_reader_free(rd);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM urls"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen"), 2);
    /* no stamp is kept without retention; the fingerprint lives in the runs */
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen WHERE last_linked = 0"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 4);
    d = open_ok(f->state, NULL);
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 2);
    db_url next = bare_of("https://b.example/bare3");
    assert_int_equal(db_insert_url_wait(d, &next, &id), 1);
    assert_int_equal(id, 5);
    assert_int_equal(db_close(d), 0);
}

/* Opened for retention, a store stamps its unstamped bare rows with the
 * time and indexes them; forgetting deletes bare rows with their run
 * entries (the trigger computes their fingerprints), and a forgotten bare
 * URL is new again. */
static void test_bare_rows_under_retention(void **state)
{
    fixture *f = *state;
    db *d = open_ok(f->state, NULL);
    db_url keep = url_of("https://r.example/queued", "r.example", 0);
    assert_int_equal(db_insert_url_wait(d, &keep, NULL), 1);
    db_url b1 = bare_of("https://r.example/b1"), b2 = bare_of("https://r.example/b2");
    assert_int_equal(db_insert_url_wait(d, &b1, NULL), 1);
    assert_int_equal(db_insert_url_wait(d, &b2, NULL), 1);
    assert_int_equal(db_close(d), 0);
    int64_t before = cr_wall_ms() / 1000;
    db_opts o = { .linked_index = 1 };
    d = open_ok(f->state, &o);
    assert_true(raw_int(f->state, "SELECT min(last_linked) FROM seen") >= before);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master"
                                       " WHERE name = 'seen_last_linked'"), 1);
    /* stamps now move forward as for crawl rows */
    assert_int_equal(db_touch_linked(d, "https://r.example/b2", strlen("https://r.example/b2"),
                                     before + 100000), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM seen WHERE id = 3"),
                     before + 100000);
    n_forget_ids = 0;
    assert_int_equal(db_forget(d, before + 50000, 10, on_forget, NULL), 0);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(n_forget_ids, 1);
    assert_int_equal(forget_ids[0], 2);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.forgotten, 1);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 1);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp"), 2);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM seen_fp WHERE id = 2"), 0);
    db_url back = bare_of("https://r.example/b1");
    int64_t id = 0;
    assert_int_equal(db_insert_url_wait(d, &back, &id), 1);
    assert_true(id > 3);
    assert_true(raw_int(f->state, "SELECT last_linked FROM seen WHERE id = (SELECT max(id)"
                                  " FROM seen)") >= before);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM pragma_integrity_check"
                                       " WHERE integrity_check = 'ok'"), 1);
}

/* A failure while the bare rows are stamped and indexed (a full disk)
 * fails the open with the reason and leaves them as they were. */
static void test_bare_stamping_failure_changes_nothing(void **state)
{
    fixture *f = *state;
    char err[512];
    db *d = open_ok(f->state, NULL);
    db_url b = bare_of("https://s.example/b");
    assert_int_equal(db_insert_url_wait(d, &b, NULL), 1);
    assert_int_equal(db_close(d), 0);
    db_opts o = { .linked_index = 1 };
    setenv("CRAWLD_FAULT_LINKED_INDEX", "1", 1);
    d = db_open(f->state, &o, err, sizeof err);
    unsetenv("CRAWLD_FAULT_LINKED_INDEX");
    assert_null(d);
    assert_non_null(strstr(err, "disk is full"));
    assert_non_null(strstr(err, "stamping and indexing the bare rows"));
    assert_int_equal(raw_int(f->state, "SELECT last_linked FROM seen"), 0);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master"
                                       " WHERE name = 'seen_last_linked'"), 0);
    d = open_ok(f->state, &o);
    assert_int_equal(db_close(d), 0);
    assert_true(raw_int(f->state, "SELECT last_linked FROM seen") > 0);
}

/* A v6 file (no seen table; `crawld dedup`'s rows in urls as seen_only). */
static void make_v6(const char *state)
{
    db *d = open_ok(state, NULL);
    db_url u = url_of("https://six.example/", "six.example", 0);
    assert_int_equal(db_insert_url_wait(d, &u, NULL), 1);
    db_url old = url_of("https://six.example/old-bare", "six.example", 0);
    old.state = DB_STATE_SEEN_ONLY;
    assert_int_equal(db_insert_url_wait(d, &old, NULL), 1);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_exec(state, "DROP TRIGGER seen_fp_drop_bare; DROP TABLE seen;"
        "UPDATE meta SET value = 6 WHERE key = 'schema_version'; PRAGMA user_version = 6;"),
        SQLITE_OK);
}

/* 6 -> 7 adds the seen table and its trigger; the seen_only rows already
 * in urls stay there and are still found; new bare rows go to seen. */
static void test_migrate_from_v6_adds_the_seen_table(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->state, 0700), 0);
    make_v6(f->state);
    db *d = open_ok(f->state, NULL);
    int64_t id = 0;
    db_url old = bare_of("https://six.example/old-bare");
    assert_int_equal(db_insert_url_wait(d, &old, &id), 0);
    assert_int_equal(id, 2);
    db_url n = bare_of("https://six.example/new-bare");
    assert_int_equal(db_insert_url_wait(d, &n, &id), 1);
    assert_int_equal(id, 3);
    db_stats st;
    db_get_stats(d, &st);
    assert_int_equal(st.rows[DB_STATE_SEEN_ONLY], 2);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
    assert_int_equal(raw_int(f->state, "SELECT id FROM seen"), 3);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master"
                                       " WHERE name = 'seen_fp_drop_bare'"), 1);
}

/* A failed 6 -> 7 (the disk fills) leaves a v6 file, and says why; the
 * next open migrates it. */
static void test_migrate_failure_keeps_v6(void **state)
{
    fixture *f = *state;
    char err[512];
    assert_int_equal(mkdir(f->state, 0700), 0);
    make_v6(f->state);
    setenv("CRAWLD_FAULT_SEEN_TABLE", "1", 1);
    db *d = db_open(f->state, NULL, err, sizeof err);
    unsetenv("CRAWLD_FAULT_SEEN_TABLE");
    assert_null(d);
    assert_non_null(strstr(err, "disk is full"));
    assert_non_null(strstr(err, "seen table"));
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"), 6);
    assert_int_equal(raw_int(f->state, "SELECT count(*) FROM sqlite_master WHERE name = 'seen'"),
                     0);
    d = open_ok(f->state, NULL);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(raw_int(f->state, "SELECT value FROM meta WHERE key='schema_version'"),
                     DB_SCHEMA_VERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_names),
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
        T(test_create_and_reopen),
        T(test_wal_mode),
        T(test_meta_values),
        T(test_newer_schema_refused),
        T(test_foreign_sqlite_refused),
        T(test_garbage_file_refused),
        T(test_state_dir_is_a_file),
        T(test_read_only_state_dir),
        T(test_second_open_refused),
        T(test_bad_options),
        T(test_insert_sync_new_vs_existing),
        T(test_insert_absent_skips_lookup),
        T(test_insert_batch_wait),
        T(test_insert_async_callback),
        T(test_batching),
        T(test_batch_size_respected),
        T(test_tiny_queue_and_batch),
        T(test_close_drains_queue),
        T(test_gather_window),
        T(test_concurrent_producers),
        T(test_record_outcome),
        T(test_scan_after),
        T(test_queued_order),
        T(test_fetch_url_column),
        T(test_seen_only_rows),
        T(test_reader_open_dir),
        T(test_crash_safety),
        T(test_write_error_reported),
        T(test_out_of_memory),
        T(test_stall_holds_then_recovers),
        T(test_stall_codes),
        T(test_give_up_after_max_stall),
        T(test_give_up_now),
        T(test_close_during_stall),
        T(test_flush_mark),
        T(test_crawl_id_stable),
        T(test_migrate_from_v1),
        T(test_migrate_from_v2_keeps_columns),
        T(test_migrate_failure_keeps_v2),
        T(test_migrate_from_v5_moves_the_index),
        T(test_runs_upkeep),
        T(test_runs_upkeep_failure),
        T(test_migrate_failure_keeps_v5),
        T(test_fingerprint_match_compares_text),
        T(test_keep_linked_leaves_the_row),
        T(test_colliding_fingerprints_stay_exact),
        T(test_seen_only_batch_in_fp_order),
        T(test_hops_read_back),
        T(test_last_linked_moves_forward),
        T(test_forget_in_bounded_steps),
        T(test_stale_rows_of_unchanged_pages_are_kept),
        T(test_bare_rows_share_the_seen_set),
        T(test_bare_rows_under_retention),
        T(test_bare_stamping_failure_changes_nothing),
        T(test_migrate_from_v6_adds_the_seen_table),
        T(test_migrate_failure_keeps_v6),
#undef T
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
