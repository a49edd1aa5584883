/* tests/test_crawl: `crawld run` end to end against the local test site.
 *
 * The site prints the exact set of URLs a correct crawl fetches
 * (--print-expected, with the same limits the crawl uses); its request log
 * shows what the crawl really fetched. Each test runs crawld in its own
 * state folder. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "tests/support/crawlrun.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"
#include "tests/support/urlset.h"

static testsite site;

#define PAGES "40"
#define MAX_DEPTH "5"

static const char *const site_args[] = { "--pages", PAGES, "--hosts", "4", "--delay-ms", "300",
                                         "--big-bytes", "1500000", "--bomb-mib", "8", NULL };

static int group_setup(void **state)
{
    (void)state;
    return crawlrun_setup_site("crawl", &site, site_args);
}

static int group_teardown(void **state)
{
    (void)state;
    crawlrun_teardown_site(&site);
    return 0;
}

typedef struct cfgopts {
    const char *scope;     /* NULL: host */
    const char *seed;      /* target on a.test; NULL: "/" */
    bool warc;
    int delay_ms;
    const char *max_depth; /* NULL: MAX_DEPTH */
    bool daemon;
    const char *listen;    /* NULL: API off */
    const char *token;
    const char *commit_ms; /* NULL: the default storage.commit_interval_ms */
    const char *crawl_extra; /* more [crawl] lines, or NULL */
    bool wacz;
} cfgopts;

/* A config for this site. Returns its path. */
static const char *write_config(const char *name, const char *state_dir, const cfgopts *o)
{
    static const cfgopts none = { 0 };
    if (o == NULL)
        o = &none;
    int p = site.port;
    return crawlrun_config(
            name,
            "[crawl]\nseeds = [\"http://a.test:%d%s\"]\nscope = \"%s\"\nmax_depth = %s\n"
            "daemon = %s\n%s\n[archive]\nwarc = %s\nwacz = %s\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\", "
            "\"c.test:%d:127.0.0.1\", \"d.test:%d:127.0.0.1\"]\n"
            "timeout_ms = 5000\nmax_body_bytes = 1048576\nconnections = 16\n"
            "[politeness]\ndelay_ms = %d\ndelay_factor = 0.0\nbackoff_ms = 50\n"
            "max_retry_after_s = 2\n"
            "[storage]\nstate_dir = \"%s\"\n%s%s%s"
            "[dedup]\nsnapshot_interval_s = 1\n"
            "[control]\nlisten = \"%s\"\ntoken = \"%s\"\n",
            p, o->seed ? o->seed : "/", o->scope ? o->scope : "host",
            o->max_depth ? o->max_depth : MAX_DEPTH, o->daemon ? "true" : "false",
            o->crawl_extra ? o->crawl_extra : "", o->warc ? "true" : "false",
            o->wacz ? "true" : "false", p, p, p, p,
            o->delay_ms, state_dir, o->commit_ms ? "commit_interval_ms = " : "",
            o->commit_ms ? o->commit_ms : "", o->commit_ms ? "\n" : "", o->listen ? o->listen : "",
            o->token ? o->token : "");
}

static const char *state_dir(const char *name)
{
    return crawlrun_path(name, NULL);
}

/* ---- sets of URLs ------------------------------------------------------ */

typedef urlset set;

/* The site's exact answer for a crawl of scope (host, domain, prefix, all)
 * from a.test's seed target with the limits and trap defaults of
 * write_config. */
static void expected_for(set *out, const char *scope, const char *seed)
{
    char port[16], from[128];
    snprintf(port, sizeof port, "%d", site.port);
    snprintf(from, sizeof from, "http://a.test:%d%s", site.port, seed);
    const char *args[] = { "--pages", PAGES, "--hosts", "4", "--port", port, "--from", from,
                           "--print-expected", scope, "--max-depth", MAX_DEPTH,
                           "--with-robots", "--fetch-requisites", "--requisite-depth", "3",
                           "--max-path-depth", "32",
                           "--max-repeat-segment", "3", "--max-query-params", "32",
                           "--max-url-length", "2048", NULL };
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(testsite_run(args, &text, &len), 0);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        urlset_add(out, line);
    free(text);
    urlset_sort(out, NULL);
    assert_true(out->n > 10);
}

/* The site's answer for a crawl from a.test's seed target with max_depth
 * depth (and the default requisite_depth 3); same_host for
 * requisites_scope = "same-host". */
static void expected_requisites(set *out, const char *seed, const char *depth, bool same_host)
{
    char port[16], from[128];
    snprintf(port, sizeof port, "%d", site.port);
    snprintf(from, sizeof from, "http://a.test:%d%s", site.port, seed);
    const char *args[] = { "--pages", PAGES, "--hosts", "4", "--port", port, "--from", from,
                           "--print-expected", "host", "--max-depth", depth, "--with-robots",
                           "--fetch-requisites", "--requisite-depth", "3",
                           same_host ? "--requisites-same-host" : NULL, NULL };
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(testsite_run(args, &text, &len), 0);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        urlset_add(out, line);
    free(text);
    urlset_sort(out, NULL);
}

static void expected(set *out)
{
    expected_for(out, "host", "/");
    assert_true(out->n > 100);
}

/* Requests spelled as the pages wrote them (crawld fetches the first
 * spelling it finds) that differ from their key: counted by fetched_since. */
static size_t as_written;

/* What the log shows fetched since line `from` (log lines before it belong
 * to earlier tests): the keys of the URLs requested into fetched; *dups the
 * keys fetched more than once with a final answer, not counting robots.txt
 * (see urlset_fetched_since). */
static size_t fetched_since(size_t from, set *fetched, size_t *dups)
{
    long n = urlset_fetched_since(&site, from, fetched, dups, &as_written);
    assert_true(n >= 0);
    return (size_t)n;
}

static size_t log_lines(void)
{
    return crawlrun_log_lines(&site);
}

static void assert_same(const set *want, const set *got)
{
    size_t bad = urlset_diff(want, got);
    if (bad)
        fail_msg("%zu differences between the expected and the fetched set", bad);
}

static int run_crawl(const char *cfg, cr_buf *err)
{
    return proc_crawld((const char *const[]){ "run", "-c", cfg, NULL }, NULL, NULL, err);
}

/* ---- tests ------------------------------------------------------------- */

static void full_crawl_fetches_the_exact_set_once(void **state)
{
    (void)state;
    size_t from = log_lines();
    const char *cfg = write_config("full", state_dir("full"), NULL);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = run_crawl(cfg, &err);
    if (rc != 0)
        fail_msg("crawld run exited %d: %s", rc, err.data);
    assert_non_null(strstr(err.data, "frontier drained"));
    set want = { 0 }, got = { 0 };
    expected(&want);
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&want, &got);
    assert_int_equal(dups, 0);
    /* the site writes %XX escapes and tracking parameters into its links:
     * crawld requested those spellings, the first it found of each URL */
    print_message("%zu requests spelled as written, not as their key\n", as_written);
    assert_true(as_written > 0);

    /* crawld stats prints the same summary from the database */
    cr_buf out;
    cr_buf_init(&out, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "stats", "--state", state_dir("full"),
                                                        NULL },
                                 NULL, &out, NULL),
                     0);
    /* the links the URL parser refused, by reason: the site's /special/ has
     * one of each kind on every host crawled */
    assert_non_null(strstr(out.data, "rejected by reason: scheme "));
    assert_non_null(strstr(out.data, "bad_ipv4 "));
    assert_non_null(strstr(err.data, "rejected by reason: scheme "));
    cr_buf js;
    cr_buf_init(&js, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "stats", "--state", state_dir("full"),
                                                        "--json", NULL },
                                 NULL, &js, NULL),
                     0);
    json_error_t jerr;
    json_t *root = json_loads(js.data, 0, &jerr);
    assert_non_null(root);
    json_t *st = root;
    json_t *by = json_object_get(st, "links_rejected_by");
    assert_non_null(by);
    json_int_t sum = 0;
    const char *k;
    json_t *v;
    json_object_foreach(by, k, v) sum += json_integer_value(v);
    assert_int_equal(sum, json_integer_value(json_object_get(st, "links_rejected")));
    assert_true(json_integer_value(json_object_get(by, "scheme")) >= 2);
    assert_true(json_integer_value(json_object_get(by, "bad_ipv4")) >= 1);
    assert_true(json_integer_value(json_object_get(by, "host_code_point")) >= 1);
    assert_true(json_integer_value(json_object_get(by, "bad_ipv6")) >= 1);
    /* every URL decided once, by one layer; some of the site's pages
     * repeat a link, so the page memo settled some */
    json_t *dd = json_object_get(st, "dedup");
    json_t *dn = json_object_get(dd, "new"), *du = json_object_get(dd, "duplicate");
    json_int_t layers = 0;
    json_object_foreach(dn, k, v) layers += json_integer_value(v);
    json_object_foreach(du, k, v) layers += json_integer_value(v);
    assert_int_equal(layers, json_integer_value(json_object_get(dd, "urls")));
    print_message("%lld of %lld URLs settled by the page memo\n",
                  (long long)json_integer_value(json_object_get(du, "same_page")),
                  (long long)layers);
    assert_true(json_integer_value(json_object_get(du, "same_page")) > 0);
    json_decref(root);
    cr_buf_release(&js);
    const char *dedup = strstr(err.data, "dedup:\n");
    assert_non_null(dedup);
    assert_non_null(strstr(out.data, "dedup:\n"));
    assert_memory_equal(strstr(out.data, "dedup:\n"), dedup, strlen(dedup));
    cr_buf_release(&out);
    cr_buf_release(&err);
    urlset_free(&want);
    urlset_free(&got);
}

/* domain, prefix and any: each fetches exactly the site's answer. */
static void every_scope_fetches_its_exact_set(void **state)
{
    (void)state;
    struct {
        const char *scope, *site_scope, *seed;
    } cases[] = {
        { "domain", "domain", "/" },
        { "prefix", "prefix", "/special/" },
        { "any", "all", "/" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        char name[32];
        snprintf(name, sizeof name, "scope-%s", cases[k].scope);
        cfgopts o = { .scope = cases[k].scope, .seed = cases[k].seed };
        const char *cfg = write_config(name, state_dir(name), &o);
        size_t from = log_lines();
        cr_buf err;
        cr_buf_init(&err, 0);
        int rc = run_crawl(cfg, &err);
        if (rc != 0)
            fail_msg("scope %s: crawld run exited %d: %s", cases[k].scope, rc, err.data);
        set want = { 0 }, got = { 0 };
        expected_for(&want, cases[k].site_scope, cases[k].seed);
        fetched_since(from, &got, NULL);
        print_message("scope %s: %zu URLs expected, %zu fetched\n", cases[k].scope, want.n, got.n);
        assert_same(&want, &got);
        urlset_free(&want);
        urlset_free(&got);
        cr_buf_release(&err);
    }
}

/* Requisites from CSS: the /replay/ page's stylesheet, its @import loop,
 * the image only its url() names, the font on the next host, <style> and
 * style attribute images, srcset: exactly the site's answer, past
 * max_depth 0, once each; with requisites_scope = "same-host" the other
 * host's font is left alone (and its robots.txt never fetched); an endless
 * @import chain stops at max_depth + requisite_depth. */
static void css_requisites_fetch_the_exact_set(void **state)
{
    (void)state;
    struct {
        const char *name, *seed, *extra;
        bool same_host;
        size_t want;
    } cases[] = {
        { "req-any", "/replay/", NULL, false, 11 },
        { "req-same", "/replay/", "requisites_scope = \"same-host\"", true, 9 },
        { "req-chain", "/replay/chain.html", NULL, false, 5 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        cfgopts o = { .seed = cases[k].seed, .max_depth = "0", .crawl_extra = cases[k].extra };
        const char *cfg = write_config(cases[k].name, state_dir(cases[k].name), &o);
        size_t from = log_lines();
        cr_buf err;
        cr_buf_init(&err, 0);
        int rc = run_crawl(cfg, &err);
        if (rc != 0)
            fail_msg("%s: crawld run exited %d: %s", cases[k].name, rc, err.data);
        set want = { 0 }, got = { 0 };
        expected_requisites(&want, cases[k].seed, "0", cases[k].same_host);
        size_t dups = 0;
        fetched_since(from, &got, &dups);
        print_message("%s: %zu URLs expected, %zu fetched\n", cases[k].name, want.n, got.n);
        assert_same(&want, &got);
        assert_int_equal(dups, 0);
        assert_int_equal(want.n, cases[k].want); /* the site's answer is what we think */
        char font[128];
        snprintf(font, sizeof font, "http://b.test:%d/replay/font.woff2", site.port);
        assert_int_equal(urlset_has(&got, font), k == 0);
        /* the figures say so too */
        cr_buf out;
        cr_buf_init(&out, 0);
        assert_int_equal(proc_crawld((const char *const[]){ "stats", "--state",
                                                            state_dir(cases[k].name), "--json",
                                                            NULL },
                                     NULL, &out, NULL),
                         0);
        json_error_t je;
        json_t *j = json_loads(out.data, 0, &je);
        assert_non_null(j);
        json_t *req = json_object_get(json_object_get(j, "crawl"), "requisites");
        if (req == NULL)
            req = json_object_get(j, "requisites");
        assert_non_null(req);
        long long sheets = json_integer_value(json_object_get(req, "stylesheets"));
        long long imports = json_integer_value(json_object_get(req, "css_imports"));
        long long past = json_integer_value(json_object_get(req, "past_max_depth"));
        if (k < 2) {
            assert_int_equal(sheets, 2);
            assert_int_equal(imports, 2); /* more.css, and the loop back to style.css */
        } else {
            assert_int_equal(sheets, 3);
            assert_int_equal(imports, 3); /* 1 -> 2 -> 3 -> 4, which is too deep */
        }
        assert_int_equal(past, (long long)(cases[k].want - 1 - (k == 0 ? 2 : 1)));
        assert_non_null(strstr(err.data, "requisites: "));
        json_decref(j);
        cr_buf_release(&out);
        urlset_free(&want);
        urlset_free(&got);
        cr_buf_release(&err);
    }
}

/* archive.wacz writes a package at the end of each run, a new one each
 * time; `crawld wacz` writes one where asked and never replaces a file. */
static void wacz_packages(void **state)
{
    (void)state;
    cfgopts o = { .seed = "/replay/", .max_depth = "0", .warc = true, .wacz = true };
    const char *cfg = write_config("wacz", state_dir("wacz"), &o);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = run_crawl(cfg, &err);
    if (rc != 0)
        fail_msg("crawld run exited %d: %s", rc, err.data);
    assert_non_null(strstr(err.data, "crawld: WACZ "));
    assert_non_null(strstr(err.data, ": 1 WARC files, 1 pages"));
    cr_buf_release(&err);
    sleep(1); /* the next package's name has another second */
    cr_buf_init(&err, 0);
    assert_int_equal(run_crawl(cfg, &err), 0); /* a resumed run: nothing new, a new package */
    assert_non_null(strstr(err.data, "crawld: WACZ "));
    cr_buf_release(&err);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls %s/wacz/*.wacz | wc -l", state_dir("wacz"));
    cr_buf out;
    cr_buf_init(&out, 0);
    const char *sh[] = { "/bin/sh", "-c", cmd, NULL };
    assert_int_equal(proc_run(sh, NULL, 0, &out, NULL), 0);
    assert_int_equal(strtol(out.data, NULL, 10), 2);
    cr_buf_release(&out);

    char pkg[300];
    snprintf(pkg, sizeof pkg, "%s", crawlrun_path("site.wacz", NULL));
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "wacz", "-c", cfg, "-o", pkg, NULL }, NULL,
                                 &out, &err),
                     0);
    assert_non_null(strstr(out.data, "site.wacz: "));
    assert_non_null(strstr(out.data, "1 pages (1 with a title)"));
    struct stat sb;
    assert_int_equal(stat(pkg, &sb), 0);
    cr_buf_release(&out);
    cr_buf_release(&err);
    cr_buf_init(&err, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "wacz", "-c", cfg, "-o", pkg, NULL }, NULL,
                                 NULL, &err),
                     1);
    assert_non_null(strstr(err.data, "never replaced"));
    cr_buf_release(&err);
    cr_buf_init(&err, 0);
    assert_int_equal(proc_crawld((const char *const[]){ "wacz", "--state", "/nonexistent/state",
                                                        NULL },
                                 NULL, NULL, &err),
                     1);
    assert_non_null(strstr(err.data, "/nonexistent/state"));
    cr_buf_release(&err);
    assert_int_equal(proc_crawld((const char *const[]){ "wacz", "--bogus", NULL }, NULL, NULL, NULL),
                     2);
}

/* With archiving on, warcio (a parser we did not write) reads every record
 * back, digests verify, and there is one response or revisit per fetch. */
static void archive_reads_back_with_warcio(void **state)
{
    (void)state;
    cfgopts o = { .warc = true };
    const char *cfg = write_config("warc", state_dir("warc"), &o);
    size_t from = log_lines();
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = run_crawl(cfg, &err);
    if (rc != 0)
        fail_msg("crawld run exited %d: %s", rc, err.data);
    set got = { 0 };
    size_t total = fetched_since(from, &got, NULL) - from;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh tests/warc/check.sh %s/warc/*.warc.gz", state_dir("warc"));
    cr_buf out, cerr;
    cr_buf_init(&out, 0);
    cr_buf_init(&cerr, 0);
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    rc = proc_run(argv, NULL, 0, &out, &cerr);
    if (rc == 77) {
        print_message("SKIPPED the warcio read-back: node or npm is missing\n");
        skip();
    }
    if (rc != 0)
        fail_msg("warcio check exited %d: %s %s", rc, out.data, cerr.data);
    json_error_t jerr;
    json_t *j = json_loads(out.data, 0, &jerr);
    assert_non_null(j);
    long responses = (long)json_integer_value(json_object_get(j, "response"));
    long revisits = (long)json_integer_value(json_object_get(j, "revisit"));
    long bad = (long)json_integer_value(json_object_get(j, "bad"));
    print_message("warcio: %ld responses, %ld revisits for %zu requests\n", responses, revisits,
                  total);
    assert_int_equal(bad, 0);
    assert_int_equal(responses + revisits, (long)total);
    assert_true(revisits > 0); /* the site serves some payloads under several URLs */
    assert_int_equal(json_integer_value(json_object_get(j, "cdxj_lines")),
                     json_integer_value(json_object_get(j, "cdxj_ok")));
    json_decref(j);
    urlset_free(&got);
    cr_buf_release(&out);
    cr_buf_release(&cerr);
    cr_buf_release(&err);
}

/* What a limit drops is counted where users look: links past
 * crawl.max_links_per_page in the summary and /v1/status (via stats), and
 * the summary names HTML pages and responses apart. */
static void limits_are_counted(void **state)
{
    (void)state;
    const char *cfg = write_config("limits", state_dir("limits"), NULL);
    cr_buf err, out;
    cr_buf_init(&err, 1 << 20);
    cr_buf_init(&out, 1 << 20);
    int rc = proc_crawld((const char *const[]){ "run", "-c", cfg, "--set",
                                                "crawl.max_links_per_page=3", "--set",
                                                "crawl.max_pages=8", NULL },
                         NULL, NULL, &err);
    assert_int_equal(rc, 0);
    const char *d = strstr(err.data, "links the parser dropped:");
    if (d == NULL)
        fail_msg("no drop line in the summary:\n%s", err.data);
    long n = 0;
    const char *m = strstr(d, "max_links ");
    assert_non_null(m);
    assert_int_equal(sscanf(m, "max_links %ld", &n), 1);
    assert_true(n > 0);
    assert_non_null(strstr(err.data, " HTML pages in "));
    assert_non_null(strstr(err.data, " responses in all ("));
    rc = proc_crawld((const char *const[]){ "stats", "--state", state_dir("limits"), "--json",
                                            NULL },
                     NULL, &out, NULL);
    assert_int_equal(rc, 0);
    json_error_t jerr;
    json_t *j = json_loads(out.data, 0, &jerr);
    assert_non_null(j);
    json_t *mx = json_object_get(json_object_get(j, "links_dropped"), "max_links");
    if (!json_is_integer(mx) || json_integer_value(mx) != n)
        fail_msg("stats' links_dropped.max_links is not the summary's %ld:\n%s", n, out.data);
    assert_true(json_integer_value(json_object_get(j, "html_pages")) > 0);
    json_decref(j);
    cr_buf_release(&err);
    cr_buf_release(&out);
}

/* Its own state folder, crawled to the end first: it does not lean on what
 * an earlier test left behind, and passes run alone. */
static void second_run_fetches_nothing_again(void **state)
{
    (void)state;
    const char *cfg = write_config("again", state_dir("again"), NULL);
    cr_buf err;
    cr_buf_init(&err, 0);
    assert_int_equal(run_crawl(cfg, &err), 0);
    cr_buf_clear(&err);
    size_t from = log_lines();
    assert_int_equal(run_crawl(cfg, &err), 0);
    set got = { 0 };
    fetched_since(from, &got, NULL);
    for (size_t i = 0; i < got.n; i++)
        if (strstr(got.v[i], "/robots.txt") == NULL)
            fail_msg("fetched again on resume: %s", got.v[i]);
    urlset_free(&got);
    cr_buf_release(&err);
}

/* Starts crawld in the background with stderr appended to a file. */
static pid_t spawn_crawl(const char *cfg, const char *errfile)
{
    return crawlrun_spawn(NULL, (const char *const[]){ "run", "-c", cfg, NULL }, errfile,
                          CRAWLRUN_APPEND, NULL);
}

#define sleep_ms crawlrun_sleep_ms

/* Waits until the site logged `more` requests since `from` (or 20 s). */
static void wait_requests(size_t from, size_t more)
{
    for (int i = 0; i < 2000 && log_lines() < from + more; i++)
        sleep_ms(10);
}

#define wait_exit crawlrun_wait_exit

/* Runs the crawl of cfg to its end (its stderr in err), checks that the
 * site's requests since log line `from` are exactly the expected set, and
 * returns how many of them repeated an earlier one. */
static size_t resume_to_the_end(const char *cfg, size_t from, cr_buf *err)
{
    assert_int_equal(run_crawl(cfg, err), 0);
    set want = { 0 }, got = { 0 };
    expected(&want);
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&want, &got);
    urlset_free(&want);
    urlset_free(&got);
    return dups;
}

static void sigterm_stops_cleanly_and_resume_completes(void **state)
{
    (void)state;
    const char *cfg = write_config("term", state_dir("term"), NULL);
    const char *errfile = crawlrun_path("term", ".err");
    size_t from = log_lines();
    pid_t pid = spawn_crawl(cfg, errfile);
    wait_requests(from, 60);
    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid), 0);
    cr_buf err;
    cr_buf_init(&err, 0);
    size_t dups = resume_to_the_end(cfg, from, &err);
    assert_int_equal(dups, 0); /* a graceful stop loses and repeats nothing */
    cr_buf_release(&err);
}

/* A second SIGTERM aborts the fetches in flight: the stop is still clean,
 * and the next run says how many URLs it fetches again (the dispatch log
 * outlives a clean close), and fetches no others twice. */
static void second_sigterm_aborts_and_the_next_run_says_so(void **state)
{
    (void)state;
    cfgopts o = { .seed = "/slow/delay.html" }; /* answered after 300 ms */
    const char *cfg = write_config("term2", state_dir("term2"), &o);
    const char *errfile = crawlrun_path("term2", ".err");
    size_t from = log_lines();
    pid_t pid = spawn_crawl(cfg, errfile);
    wait_requests(from, 1); /* robots.txt: the slow page is asked next */
    sleep_ms(100);
    kill(pid, SIGTERM);
    sleep_ms(5);
    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid), 0);
    cr_buf err;
    cr_buf_init(&err, 0);
    assert_int_equal(run_crawl(cfg, &err), 0);
    set got = { 0 };
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    urlset_free(&got);
    int lines = 0;
    long reported = crawlrun_refetch_reported(err.data, &lines);
    print_message("second SIGTERM: %zu URLs fetched twice, %ld reported by the next run\n", dups,
                  reported);
    if ((long)dups > reported)
        fail_msg("%zu URLs fetched twice, the next run said %ld", dups, reported);
    assert_true(lines == 1 && reported >= 1); /* the slow page, at least */
    cr_buf_release(&err);
}

/* The seed of the kill points: CRAWLD_TEST_SEED when set (to replay a
 * run), else from the clock; printed either way. */
static unsigned kill_seed(void)
{
    const char *e = getenv("CRAWLD_TEST_SEED");
    if (e != NULL && *e != '\0') {
        char *end;
        unsigned long v = strtoul(e, &end, 10);
        if (*end != '\0')
            fail_msg("CRAWLD_TEST_SEED='%s' is not a number", e);
        return (unsigned)v;
    }
    return (unsigned)time(NULL);
}

/* Three SIGKILLs, then a resume: the union of what was fetched is exactly
 * the site, every run after a kill says how many URLs it fetches again (the
 * dispatch log: in flight, or inside the commit window), and no page is
 * fetched twice beyond what was said, with or without a commit window. */
static void kill_three_times(const char *name, const char *commit_ms)
{
    cfgopts o = { .commit_ms = commit_ms };
    const char *cfg = write_config(name, state_dir(name), &o);
    char errfile[300];
    snprintf(errfile, sizeof errfile, "%s", crawlrun_path(name, ".err"));
    size_t from = log_lines();
    unsigned seed = kill_seed();
    print_message("%s: kill points from seed %u (replay with CRAWLD_TEST_SEED=%u)\n", name, seed,
                  seed);
    int killed = 0; /* a run may end by itself before its kill */
    for (int k = 0; k < 3; k++) {
        size_t now = log_lines();
        pid_t pid = spawn_crawl(cfg, errfile);
        wait_requests(now, 10 + (size_t)(rand_r(&seed) % 40));
        kill(pid, SIGKILL);
        killed += crawlrun_wait_exit(pid) == 128 + SIGKILL;
    }
    cr_buf err;
    cr_buf_init(&err, 0);
    size_t dups = resume_to_the_end(cfg, from, &err);
    /* only URLs in flight at a kill are fetched again, and crawld says so */
    int l1 = 0, l2 = 0;
    long reported = crawlrun_refetch_reported(crawlrun_slurp(errfile), &l1) +
                    crawlrun_refetch_reported(err.data, &l2);
    print_message("%s: %zu URLs fetched twice, %ld reported in flight at the kills\n", name, dups,
                  reported);
    if (l1 + l2 < killed)
        fail_msg("%d of the %d runs after a kill said how many URLs they fetch again", l1 + l2,
                 killed);
    if ((long)dups > reported)
        fail_msg("%zu URLs fetched twice, %ld reported in flight at the crashes", dups, reported);
    cr_buf_release(&err);
}

static void sigkill_at_random_points_loses_nothing(void **state)
{
    (void)state;
    kill_three_times("kill", "0");
    kill_three_times("kill-gather", "20");
}

/* Every request in the site's log since line from and the next one to the
 * same host start at least delay ms apart (else the test fails, naming
 * them); returns how many such pairs there were, *closest (may be NULL)
 * the smallest gap. */
static size_t check_host_gaps(size_t from, int delay, long long *closest)
{
    testsite_req *v;
    size_t total, checked = 0;
    assert_int_equal(testsite_log_read(&site, &v, &total), 0);
    for (size_t i = from; i < total; i++)
        for (size_t j = i + 1; j < total; j++) {
            if (strcmp(v[i].host, v[j].host) != 0)
                continue;
            /* the request after i on this host */
            long long gap = v[j].ms - v[i].ms;
            if (gap < delay)
                fail_msg("%s: %s then %s only %lld ms apart (delay %d ms)", v[i].host,
                         v[i].target, v[j].target, gap, delay);
            if (closest != NULL && (*closest < 0 || gap < *closest))
                *closest = gap;
            checked++;
            break;
        }
    testsite_log_free(v, total);
    return checked;
}

static void politeness_spacing_is_kept(void **state)
{
    (void)state;
    const int delay = 120;
    cfgopts o = { .delay_ms = delay, .max_depth = "1" };
    const char *cfg = write_config("polite", state_dir("polite"), &o);
    size_t from = log_lines();
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = run_crawl(cfg, &err);
    if (rc != 0)
        fail_msg("crawld run: %s", err.data);
    assert_true(check_host_gaps(from, delay, NULL) > 10);
    cr_buf_release(&err);
}

/* Politeness across restarts: a run killed (SIGKILL) or stopped (SIGTERM)
 * right after its requests, and started again at once, asks no host
 * sooner than the delay after the last run's last request to it (the
 * dispatch log holds the hosts; robots.txt, the first request of a new
 * run, waits too). Every pair of successive requests to a host, across
 * the restarts, is at least the delay apart. */
static void politeness_holds_across_restarts(void **state)
{
    (void)state;
    const int delay = 700;
    cfgopts o = { .delay_ms = delay, .scope = "any" };
    const char *cfg = write_config("polite-restart", state_dir("polite-restart"), &o);
    const char *errfile = crawlrun_path("polite-restart", ".err");
    size_t from = log_lines();
    const int sigs[] = { SIGKILL, SIGTERM, SIGKILL };
    for (int k = 0; k < 3; k++) {
        size_t now = log_lines();
        pid_t pid = spawn_crawl(cfg, errfile);
        wait_requests(now, 6);
        kill(pid, sigs[k]);
        int st = crawlrun_wait_exit(pid);
        if (st != (sigs[k] == SIGKILL ? 128 + SIGKILL : 0))
            fail_msg("run %d ended with %d after signal %d: %s", k + 1, st, sigs[k],
                     crawlrun_slurp(errfile));
    }
    pid_t pid = spawn_crawl(cfg, errfile); /* the last one, at once too */
    size_t now = log_lines();
    wait_requests(now, 4);
    kill(pid, SIGTERM);
    assert_int_equal(crawlrun_wait_exit(pid), 0);
    const char *said = crawlrun_slurp(errfile);
    assert_non_null(strstr(said, "the last run's requests hold their hosts"));

    long long closest = -1;
    size_t checked = check_host_gaps(from, delay, &closest);
    print_message("politeness across restarts: %zu successive pairs, the closest %lld ms apart"
                  " (delay %d ms)\n", checked, closest, delay);
    assert_true(checked > 15);
}

/* A Retry-After pause outlives a kill: a.test answers its seed with 503
 * and Retry-After: 1 (the site's default); killed just
 * after and started again at once, crawld asks a.test nothing, robots.txt
 * included, until the pause is over. */
static void retry_after_holds_across_a_kill(void **state)
{
    (void)state;
    const long long pause = 1000;
    cfgopts o = { .seed = "/status/503", .max_depth = "0" };
    const char *cfg = write_config("pause-kill", state_dir("pause-kill"), &o);
    const char *errfile = crawlrun_path("pause-kill", ".err");
    size_t from = log_lines();
    pid_t pid = spawn_crawl(cfg, errfile);
    wait_requests(from, 2); /* robots.txt, then the 503 */
    sleep_ms(300);          /* its answer handled: the pause is decided */
    kill(pid, SIGKILL);
    assert_int_equal(crawlrun_wait_exit(pid), 128 + SIGKILL);
    size_t now = log_lines();
    pid = spawn_crawl(cfg, errfile);
    wait_requests(now, 1);
    kill(pid, SIGKILL);
    crawlrun_wait_exit(pid);

    testsite_req *v;
    size_t total;
    assert_int_equal(testsite_log_read(&site, &v, &total), 0);
    long long at503 = -1, next = -1;
    const char *what = "";
    for (size_t i = from; i < total; i++) {
        if (strcmp(v[i].host, "a.test") != 0)
            continue;
        if (at503 < 0 && strcmp(v[i].target, "/status/503") == 0) {
            at503 = v[i].ms;
        } else if (at503 >= 0) {
            next = v[i].ms;
            what = v[i].target;
            break;
        }
    }
    assert_true(at503 >= 0 && next >= 0);
    print_message("Retry-After across a kill: %s %lld ms after the 503 (pause %lld ms)\n", what,
                  next - at503, pause);
    if (next - at503 < pause)
        fail_msg("%s only %lld ms after the 503 (Retry-After pause %lld ms)", what, next - at503,
                 pause);
    testsite_log_free(v, total);
}

/* ---- the control API --------------------------------------------------- */

typedef struct http {
    long status;
    cr_buf body;
} http;

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
    cr_buf_append(ud, p, size * n);
    return size * n;
}

static http request(const char *addr, const char *method, const char *path, const char *body,
                    const char *token)
{
    http h = { 0, { 0 } };
    cr_buf_init(&h.body, 0);
    CURL *e = curl_easy_init();
    char url[256], auth[256];
    snprintf(url, sizeof url, "http://%s%s", addr, path);
    struct curl_slist *hdr = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        hdr = curl_slist_append(hdr, auth);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &h.body);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h.status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(e);
    if (h.body.data == NULL)
        cr_buf_puts(&h.body, "");
    return h;
}

/* Starts a daemon-mode crawl with the API on a free port; addr gets it. */
static pid_t start_daemon(const char *name, const char *token, char *addr)
{
    cfgopts o = { .daemon = true, .listen = "127.0.0.1:0", .token = token };
    const char *cfg = write_config(name, state_dir(name), &o);
    const char *errfile = crawlrun_path(name, ".err");
    pid_t pid = spawn_crawl(cfg, errfile);
    const char *p = crawlrun_await(pid, errfile, "control API on ", 10000);
    if (p && sscanf(p, "control API on %63[0-9.:]", addr) == 1)
        return pid;
    crawlrun_wait(pid, 0); /* kills it unless it has ended */
    fail_msg("the daemon printed no control address: %s", crawlrun_slurp(errfile));
    return -1;
}

static void control_api_endpoints(void **state)
{
    (void)state;
    char addr[64];
    pid_t pid = start_daemon("api", NULL, addr);
    http h = request(addr, "GET", "/metrics", NULL, NULL);
    assert_int_equal(h.status, 200);
    assert_non_null(strstr(h.body.data, "crawld_dedup_decisions_total{"));
    assert_non_null(strstr(h.body.data, "crawld_fpr_bound"));
    cr_buf_release(&h.body);

    h = request(addr, "GET", "/v1/status", NULL, NULL);
    assert_int_equal(h.status, 200);
    json_error_t jerr;
    json_t *j = json_loads(h.body.data, 0, &jerr);
    assert_non_null(j);
    assert_non_null(json_object_get(j, "dedup"));
    json_decref(j);
    cr_buf_release(&h.body);

    char body[256];
    snprintf(body, sizeof body, "{\"urls\": [\"http://b.test:%d/\", \"mailto:x@y\"]}", site.port);
    h = request(addr, "POST", "/v1/seeds", body, NULL);
    assert_int_equal(h.status, 200);
    j = json_loads(h.body.data, 0, &jerr);
    assert_int_equal(json_integer_value(json_object_get(j, "queued")), 1);
    assert_int_equal(json_array_size(json_object_get(j, "rejected")), 1);
    json_decref(j);
    cr_buf_release(&h.body);

    snprintf(body, sizeof body,
             "{\"urls\": [\"http://x.example/1\", \"http://x.example/1#f\", \"http://x.example/2\"]}");
    h = request(addr, "POST", "/v1/dedup", body, NULL);
    assert_int_equal(h.status, 200);
    j = json_loads(h.body.data, 0, &jerr);
    assert_int_equal(json_array_size(json_object_get(j, "new")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "duplicates")), 1);
    json_decref(j);
    cr_buf_release(&h.body);
    h = request(addr, "POST", "/v1/dedup", body, NULL); /* asked again: nothing new */
    j = json_loads(h.body.data, 0, &jerr);
    assert_int_equal(json_array_size(json_object_get(j, "new")), 0);
    json_decref(j);
    cr_buf_release(&h.body);

    /* a new in-scope URL asked about is queued and fetched by the daemon */
    snprintf(body, sizeof body, "{\"urls\": [\"http://a.test:%d/only-asked-about\"]}", site.port);
    h = request(addr, "POST", "/v1/dedup", body, NULL);
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    bool fetched = false;
    for (int i = 0; i < 1000 && !fetched; i++) {
        testsite_req *v;
        size_t n;
        assert_int_equal(testsite_log_read(&site, &v, &n), 0);
        for (size_t k = 0; k < n; k++)
            fetched = fetched || strcmp(v[k].target, "/only-asked-about") == 0;
        testsite_log_free(v, n);
        if (!fetched)
            sleep_ms(20);
    }
    if (!fetched)
        fail_msg("an in-scope URL given to POST /v1/dedup was never fetched");

    struct {
        const char *method, *path, *body;
        long status;
    } bad[] = {
        { "POST", "/v1/seeds", "{not json", 400 },
        { "POST", "/v1/seeds", "{\"urls\": [1]}", 400 },
        { "POST", "/v1/dedup", "[]", 400 },
        { "GET", "/v1/seeds", NULL, 405 },
        { "POST", "/metrics", "", 405 },
        { "GET", "/nope", NULL, 404 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        h = request(addr, bad[i].method, bad[i].path, bad[i].body, NULL);
        if (h.status != bad[i].status)
            fail_msg("%s %s: %ld, want %ld", bad[i].method, bad[i].path, h.status, bad[i].status);
        j = json_loads(h.body.data, 0, &jerr);
        assert_non_null(json_object_get(j, "error"));
        json_decref(j);
        cr_buf_release(&h.body);
    }
    char *big = malloc(2 << 20);
    memset(big, 'x', (2 << 20) - 1);
    big[(2 << 20) - 1] = '\0';
    h = request(addr, "POST", "/v1/seeds", big, NULL);
    assert_int_equal(h.status, 413);
    cr_buf_release(&h.body);
    free(big);

    h = request(addr, "POST", "/v1/pause", "", NULL);
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    h = request(addr, "GET", "/v1/status", NULL, NULL);
    assert_non_null(strstr(h.body.data, "\"paused\":true"));
    cr_buf_release(&h.body);
    h = request(addr, "POST", "/v1/resume", "", NULL);
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    h = request(addr, "POST", "/v1/shutdown", "", NULL);
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    assert_int_equal(wait_exit(pid), 0);
}

static void control_api_token(void **state)
{
    (void)state;
    char addr[64];
    pid_t pid = start_daemon("token", "s3cret", addr);
    http h = request(addr, "GET", "/v1/status", NULL, NULL);
    assert_int_equal(h.status, 401);
    cr_buf_release(&h.body);
    h = request(addr, "GET", "/v1/status", NULL, "wrong");
    assert_int_equal(h.status, 401);
    cr_buf_release(&h.body);
    h = request(addr, "GET", "/v1/status", NULL, "s3cret");
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    h = request(addr, "POST", "/v1/shutdown", "", "s3cret");
    assert_int_equal(h.status, 200);
    cr_buf_release(&h.body);
    assert_int_equal(wait_exit(pid), 0);
}

static void non_loopback_api_needs_a_token(void **state)
{
    (void)state;
    const char *cfg = write_config("open", state_dir("open"), NULL);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = proc_crawld((const char *const[]){ "run", "-c", cfg, "--set",
                                                "control.listen=\"0.0.0.0:0\"", NULL },
                         NULL, NULL, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err.data, "set control.token"));
    cr_buf_release(&err);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_crawl_fetches_the_exact_set_once),
        cmocka_unit_test(second_run_fetches_nothing_again),
        cmocka_unit_test(limits_are_counted),
        cmocka_unit_test(every_scope_fetches_its_exact_set),
        cmocka_unit_test(archive_reads_back_with_warcio),
        cmocka_unit_test(css_requisites_fetch_the_exact_set),
        cmocka_unit_test(wacz_packages),
        cmocka_unit_test(sigterm_stops_cleanly_and_resume_completes),
        cmocka_unit_test(second_sigterm_aborts_and_the_next_run_says_so),
        cmocka_unit_test(sigkill_at_random_points_loses_nothing),
        cmocka_unit_test(politeness_spacing_is_kept),
        cmocka_unit_test(politeness_holds_across_restarts),
        cmocka_unit_test(retry_after_holds_across_a_kill),
        cmocka_unit_test(control_api_endpoints),
        cmocka_unit_test(control_api_token),
        cmocka_unit_test(non_loopback_api_needs_a_token),
    };
    const char *only = getenv("CRAWLD_TEST_ONLY"); /* e.g. "*restart*" */
    if (only != NULL)
        cmocka_set_test_filter(only);
    int rc = cmocka_run_group_tests_name("crawl", tests, group_setup, group_teardown);
    curl_global_cleanup();
    return rc;
}
