/* tests/test_recrawl: the re-crawl end to end, against the test site's
 * epochs (tests/site/epoch.c): crawl epoch 0, restart the site at epoch 1
 * on the same port, run crawld again on the same state.
 *
 * Hosts: a.test sends ETag/Last-Modified (304s), b.test sends none (the
 * payload digest decides). The site's request log and crawld's database
 * are the witnesses; warcio (tests/warc/check.sh) reads every WARC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "tests/support/crawlrun.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGES "60"

static testsite site;
static int port;

static int group_setup(void **state)
{
    (void)state;
    return crawlrun_setup("recrawl");
}

static int group_teardown(void **state)
{
    (void)state;
    crawlrun_teardown_site(&site);
    return 0;
}

#define sleep_ms crawlrun_sleep_ms

/* (Re)starts the site at epoch e (on the first port once there is one). */
static void site_at(int e, const char *latency_ms)
{
    char ep[16];
    snprintf(ep, sizeof ep, "%d", e);
    const char *args[] = { "--epoch", ep, "--pages", PAGES, "--hosts", "2", "--no-specials",
                           "--plain-host", "1", "--change-pct", "25", "--remove-pct", "10",
                           "--add-pages", "3", "--latency-ms", latency_ms ? latency_ms : "0",
                           NULL };
    testsite_stop(&site);
    int rc = port ? testsite_start_on(&site, port, args) : testsite_start(&site, args);
    assert_int_equal(rc, 0);
    port = site.port;
}

static const char *write_config(const char *name, const char *recrawl)
{
    return crawlrun_config(
            name,
            "[crawl]\nseeds = [\"http://a.test:%d/\", \"http://b.test:%d/\"]\nscope = \"domain\"\n"
            "[archive]\nwarc = true\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\"]\n"
            "timeout_ms = 5000\nconnections = 8\n"
            "[politeness]\ndelay_ms = 0\ndelay_factor = 0.0\nobey_robots = false\n"
            "[storage]\nstate_dir = \"%s/%s\"\n[control]\nlisten = \"\"\n[recrawl]\n%s\n",
            port, port, port, port, crawlrun_dir(), name, recrawl);
}

static void run_ok(const char *cfg, const char *const *extra)
{
    crawlrun_run_ok(cfg, extra, NULL);
}

/* The site's log: GET requests other than robots.txt, from line `from`. */
typedef struct reqs {
    testsite_req *v;
    size_t n;
} reqs;

static void read_log(reqs *r)
{
    assert_int_equal(testsite_log_read(&site, &r->v, &r->n), 0);
}

static size_t count_target(const reqs *r, const char *host, const char *target, int status)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->v[i].host, host) == 0 && strcmp(r->v[i].target, target) == 0 &&
            (status == 0 || r->v[i].status == status))
            k++;
    return k;
}

static int64_t sql_int(const char *state, const char *sql)
{
    const char *path = crawlrun_path(state, "/crawld.db");
    sqlite3 *c = NULL;
    sqlite3_stmt *s = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(path, &c, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(c, sql, -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(c);
    return v;
}

/* Epoch 0 crawled into state `name` with recrawl.after_s = 1 (a fresh
 * site, a fresh log); r0 gets its requests. Returns the config's path. */
static const char *first_crawl(const char *name, reqs *r0)
{
    site_at(0, NULL);
    const char *cfg = write_config(name, "after_s = 1");
    run_ok(cfg, NULL);
    read_log(r0);
    assert_true(r0->n > 100);
    return cfg;
}

/* Of the requests of r0, how many r1 does not have (*missing) and has more
 * than once (*twice). */
static void compare_fetches(const reqs *r0, const reqs *r1, size_t *missing, size_t *twice)
{
    *missing = *twice = 0;
    for (size_t i = 0; i < r0->n; i++) {
        size_t k = count_target(r1, r0->v[i].host, r0->v[i].target, 0);
        *missing += k == 0;
        *twice += k > 1;
    }
}

/* What the site's epoch e changed, removed and added ("KIND\tURL" lines). */
static char *epoch_lines(int e)
{
    char ep[16], pt[16];
    snprintf(ep, sizeof ep, "%d", e);
    snprintf(pt, sizeof pt, "%d", port);
    const char *args[] = { "--epoch", ep, "--pages", PAGES, "--hosts", "2", "--no-specials",
                           "--plain-host", "1", "--change-pct", "25", "--remove-pct", "10",
                           "--add-pages", "3", "--port", pt, "--print-epoch", NULL };
    char *out = NULL;
    assert_int_equal(testsite_run(args, &out, NULL), 0);
    return out;
}

/* Calls fn for each line of kind in text. */
static size_t each_line(const char *text, const char *kind,
                        void (*fn)(void *ud, const char *url), void *ud)
{
    size_t n = 0, kl = strlen(kind);
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > kl && strncmp(p, kind, kl) == 0 && p[kl] == '\t') {
            char url[512];
            snprintf(url, sizeof url, "%.*s", (int)(len - kl - 1), p + kl + 1);
            if (fn)
                fn(ud, url);
            n++;
        }
        p = eol ? eol + 1 : NULL;
    }
    return n;
}

typedef struct check_ctx {
    const char *state;
    const char *sql; /* ends in "url = ": the URL is appended, quoted */
    int64_t want;
    size_t bad;
} check_ctx;

static void check_row(void *ud, const char *url)
{
    check_ctx *c = ud;
    char sql[1024];
    snprintf(sql, sizeof sql, "%s'%s'", c->sql, url);
    int64_t got = sql_int(c->state, sql);
    if (got != c->want) {
        print_message("%s: got %lld, want %lld\n", sql, (long long)got, (long long)c->want);
        c->bad++;
    }
}

static void warcio_ok(const char *state, long *not_modified_ok)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "sh tests/warc/check.sh %s/warc/*.warc.gz",
             crawlrun_path(state, NULL));
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    int rc = proc_run(argv, NULL, 0, &out, &err);
    if (rc == 77) {
        print_message("SKIPPED the warcio read-back: node or npm is missing\n");
        *not_modified_ok = -1;
    } else {
        if (rc != 0)
            fail_msg("warcio check exited %d: %s %s", rc, out.data ? out.data : "",
                     err.data ? err.data : "");
        const char *p = strstr(out.data, "\"revisit_not_modified_ok\":");
        assert_non_null(p);
        *not_modified_ok = strtol(p + strlen("\"revisit_not_modified_ok\":"), NULL, 10);
        print_message("warcio: %s", out.data);
    }
    cr_buf_release(&out);
    cr_buf_release(&err);
}

/* Epoch 0, then epoch 1 on the same state: every known URL revisited once;
 * a.test's unchanged pages answered 304 and archived as server-not-modified
 * revisits; changed pages get new responses (and their change counted);
 * removed ones are gone; the added ones are found; warcio reads it all and
 * every revisit points at an original that exists. */
static void epoch_one_recrawl(void **state)
{
    (void)state;
    reqs r0;
    const char *cfg = first_crawl("e1", &r0);
    site_at(1, NULL); /* a fresh log */
    sleep_ms(1100);   /* every page is due */
    run_ok(cfg, NULL);
    reqs r1;
    read_log(&r1);
    /* every URL of epoch 0 exactly once at epoch 1 */
    size_t bad = 0, n304 = 0, b304 = 0;
    for (size_t i = 0; i < r0.n; i++) {
        size_t k = count_target(&r1, r0.v[i].host, r0.v[i].target, 0);
        if (k != 1) {
            print_message("%s%s requested %zu times at epoch 1\n", r0.v[i].host, r0.v[i].target, k);
            bad++;
        }
    }
    for (size_t i = 0; i < r1.n; i++) {
        n304 += r1.v[i].status == 304;
        b304 += r1.v[i].status == 304 && strcmp(r1.v[i].host, "b.test") == 0;
        bad += r1.v[i].status == 304 && count_target(&r0, r1.v[i].host, r1.v[i].target, 0) != 1;
    }
    assert_int_equal(bad, 0);
    assert_int_equal(b304, 0); /* b.test sends no validators */
    assert_true(n304 > 20);
    char *ep = epoch_lines(1);
    size_t added = each_line(ep, "added", NULL, NULL);
    assert_int_equal(r1.n, r0.n + added); /* the revisits and the new pages, nothing else */
    /* the database agrees with the site */
    check_ctx gone = { "e1", "SELECT gone FROM urls WHERE url = ", 1, 0 };
    size_t removed = each_line(ep, "removed", check_row, &gone);
    check_ctx changed = { "e1", "SELECT changes FROM urls WHERE url = ", 1, 0 };
    size_t nchanged = each_line(ep, "changed", check_row, &changed);
    check_ctx fresh = { "e1", "SELECT fetches FROM urls WHERE url = ", 1, 0 };
    each_line(ep, "added", check_row, &fresh);
    assert_int_equal(gone.bad + changed.bad + fresh.bad, 0);
    assert_true(removed > 0 && nchanged > 0);
    assert_int_equal(sql_int("e1", "SELECT count(*) FROM urls WHERE gone = 1"), (int64_t)removed);
    assert_int_equal(sql_int("e1", "SELECT count(*) FROM urls WHERE http_status = 304"),
                     (int64_t)n304);
    assert_int_equal(sql_int("e1", "SELECT count(*) FROM urls WHERE changes > 0"),
                     (int64_t)nchanged);
    /* the figures say the same (crawld stats --json) */
    cr_buf out;
    cr_buf_init(&out, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "stats", "--state",
                                                        crawlrun_path("e1", NULL), "--json",
                                                        NULL },
                                 NULL, &out, NULL),
                     0);
    char want[256];
    snprintf(want, sizeof want, "\"not_modified\": %zu", n304);
    if (strstr(out.data, want) == NULL) {
        snprintf(want, sizeof want, "\"not_modified\":%zu", n304);
        if (strstr(out.data, want) == NULL)
            fail_msg("stats lack %s: %.2000s", want, out.data);
    }
    cr_buf_release(&out);
    long nm_ok = 0;
    warcio_ok("e1", &nm_ok);
    if (nm_ok >= 0)
        assert_int_equal(nm_ok, (long)n304);
    cr_free(ep);
    testsite_log_free(r0.v, r0.n);
    testsite_log_free(r1.v, r1.n);
}

/* Adaptive intervals over three epochs: a page found changed comes back
 * after half its interval, an unchanged one after twice it (after_s 2,
 * within [1, 64]). */
static void adaptive_three_epochs(void **state)
{
    (void)state;
    site_at(0, NULL);
    const char *cfg = write_config("ad", "after_s = 2\nadaptive = true\nmin_s = 1\nmax_s = 64");
    run_ok(cfg, NULL);
    assert_int_equal(sql_int("ad", "SELECT count(*) FROM urls WHERE interval_s <> 2"), 0);
    site_at(1, NULL);
    sleep_ms(2100);
    run_ok(cfg, NULL);
    char *e1 = epoch_lines(1);
    check_ctx half = { "ad", "SELECT interval_s FROM urls WHERE url = ", 1, 0 };
    size_t nch = each_line(e1, "changed", check_row, &half);
    assert_int_equal(half.bad, 0);
    assert_true(nch > 0);
    assert_int_equal(sql_int("ad", "SELECT count(*) FROM urls WHERE gone = 0 AND changes = 0"
                                   " AND fetches = 2 AND interval_s <> 4"),
                     0);
    site_at(2, NULL);
    sleep_ms(4100);
    run_ok(cfg, NULL);
    /* the pairs of findings: changed twice 1 (clamped), changed then not
     * 2, not then changed 2, unchanged twice 8 */
    assert_int_equal(sql_int("ad", "SELECT count(*) FROM urls WHERE gone = 0 AND fetches = 3 AND"
                                   " changes = 0 AND interval_s <> 8"),
                     0);
    assert_true(sql_int("ad", "SELECT count(*) FROM urls WHERE fetches = 3 AND changes = 0") > 0);
    assert_int_equal(sql_int("ad", "SELECT count(*) FROM urls WHERE gone = 0 AND fetches = 3 AND"
                                   " changes = 1 AND interval_s <> 2"),
                     0);
    assert_int_equal(sql_int("ad", "SELECT count(*) FROM urls WHERE gone = 0 AND fetches = 3 AND"
                                   " changes = 2 AND interval_s <> 1"),
                     0);
    assert_true(sql_int("ad", "SELECT count(*) FROM urls WHERE fetches = 3 AND changes = 1") > 0);
    cr_free(e1);
}

static size_t log_lines(void)
{
    reqs r;
    read_log(&r);
    size_t n = r.n;
    testsite_log_free(r.v, r.n);
    return n;
}

/* SIGKILL in the middle of a re-crawl: the next run finishes it; no URL is
 * lost, none is fetched again but those crawld says were in flight, and
 * afterwards nothing is due twice (a run right after fetches nothing). */
static void sigkill_during_recrawl(void **state)
{
    (void)state;
    reqs r0;
    const char *cfg = first_crawl("kill", &r0);
    site_at(1, "5"); /* slower answers: the kill lands mid-crawl */
    sleep_ms(1100);
    const char *args[] = { "run", "-c", cfg, "--set", "recrawl.after_s=3600", NULL };
    pid_t pid = crawlrun_spawn(NULL, args, crawlrun_path("kill", ".err"), 0, NULL);
    for (int i = 0; i < 2000 && log_lines() < r0.n / 2; i++)
        sleep_ms(5);
    kill(pid, SIGKILL);
    crawlrun_wait_exit(pid);
    cr_buf err;
    cr_buf_init(&err, 0);
    assert_int_equal(proc_crawld(args, NULL, NULL, &err), 0);
    long again = crawlrun_refetch_reported(err.data, NULL);
    reqs r1;
    read_log(&r1);
    size_t missing, twice;
    compare_fetches(&r0, &r1, &missing, &twice);
    print_message("sigkill: %zu of %zu URLs fetched twice, %ld reported in flight\n", twice, r0.n,
                  again);
    if ((long)twice > again)
        print_message("second run said: %s\n", err.data ? err.data : "");
    assert_int_equal(missing, 0);
    assert_true((long)twice <= again);
    assert_int_equal(sql_int("kill", "SELECT count(*) FROM urls WHERE state IN (0, 1)"), 0);
    /* nothing is due now: a third run asks the site for nothing */
    size_t before = r1.n;
    assert_int_equal(proc_crawld(args, NULL, NULL, NULL), 0);
    assert_int_equal(log_lines(), before);
    cr_buf_release(&err);
    testsite_log_free(r0.v, r0.n);
    testsite_log_free(r1.v, r1.n);
}

/* With crawl.daemon = true, rows are fetched again as they fall due (after_s
 * 1), never before: the gap between two fetches of a URL is >= 1 s. */
static void daemon_serves_due_rows(void **state)
{
    (void)state;
    site_at(0, NULL);
    const char *cfg = write_config("dm", "after_s = 1");
    pid_t pid = crawlrun_spawn(NULL,
                               (const char *const[]){ "run", "-c", cfg, "--set",
                                                      "crawl.daemon=true", "--set",
                                                      "control.listen=\"unix\"", NULL },
                               NULL, 0, NULL);
    /* until most pages came back at least once (20 s at most: sanitizer
     * builds are slow) */
    for (int i = 0; i < 100; i++) {
        sleep_ms(200);
        reqs w;
        read_log(&w);
        size_t n = w.n;
        testsite_log_free(w.v, w.n);
        if (i >= 15 && n > 350)
            break;
    }
    /* stopped through the control API (POST /v1/shutdown) */
    assert_int_equal(proc_crawld((const char *const[]){ "shutdown", "--state",
                                                        crawlrun_path("dm", NULL), NULL },
                                 NULL, NULL, NULL),
                     0);
    assert_int_equal(crawlrun_wait_exit(pid), 0);
    reqs r;
    read_log(&r);
    size_t again = 0, early = 0;
    for (size_t i = 0; i < r.n; i++)
        for (size_t k = i + 1; k < r.n; k++)
            if (strcmp(r.v[i].host, r.v[k].host) == 0 && strcmp(r.v[i].target, r.v[k].target) == 0) {
                again++;
                early += r.v[k].ms - r.v[i].ms < 1000 - 50; /* the site logs arrival times */
                break;
            }
    print_message("daemon: %zu requests, %zu repeats, %zu too early\n", r.n, again, early);
    assert_true(again > 50);
    assert_int_equal(early, 0);
    testsite_log_free(r.v, r.n);
}

/* An outage during a re-crawl is not the end of its pages: with the site
 * down every revisit fails (connection refused, attempts used up) and its
 * row is failed; one interval later the next run fetches every one of them
 * again, and none stays failed. Only a 404/410 makes a page gone. */
static void recrawl_after_an_outage_fetches_again(void **state)
{
    (void)state;
    reqs r0;
    const char *cfg = first_crawl("outage", &r0);
    testsite_stop(&site); /* the outage: nothing listens on the port */
    sleep_ms(1100);       /* every page is due */
    const char *quick[] = { "--set", "politeness.max_attempts=2", "--set",
                            "politeness.backoff_ms=50", NULL };
    run_ok(cfg, quick);
    int64_t failed = sql_int("outage", "SELECT count(*) FROM urls WHERE state = 3");
    print_message("outage: %lld of %zu pages failed\n", (long long)failed, r0.n);
    assert_int_equal(failed, (int64_t)r0.n);
    assert_int_equal(sql_int("outage", "SELECT count(*) FROM urls WHERE gone = 1"), 0);
    site_at(0, NULL); /* back, with a fresh log */
    sleep_ms(1100);   /* one interval after the failures */
    run_ok(cfg, NULL);
    reqs r1;
    read_log(&r1);
    size_t missing, twice;
    compare_fetches(&r0, &r1, &missing, &twice);
    print_message("after the outage: %zu requests, %zu pages not fetched again\n", r1.n,
                  missing);
    assert_int_equal(missing, 0);
    assert_int_equal(twice, 0);
    assert_int_equal(r1.n, r0.n);
    assert_int_equal(sql_int("outage", "SELECT count(*) FROM urls WHERE state = 3"), 0);
    testsite_log_free(r0.v, r0.n);
    testsite_log_free(r1.v, r1.n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(epoch_one_recrawl),
        cmocka_unit_test(adaptive_three_epochs),
        cmocka_unit_test(sigkill_during_recrawl),
        cmocka_unit_test(daemon_serves_due_rows),
        cmocka_unit_test(recrawl_after_an_outage_fetches_again),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
