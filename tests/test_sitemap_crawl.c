/* tests/test_sitemap_crawl: `crawld run` with [sitemaps] against the test
 * site's sitemap host (testsite --sitemaps, see tests/site/sitemaps.h).
 *
 * The site prints the exact set a correct crawl fetches; with --sitemaps
 * that set also holds the sitemaps (the well-known /sitemap.xml, the index
 * its robots.txt names, the index's gzip, plain and broken children) and
 * the pages only they list. The request log shows what crawld fetched.
 * Each test runs crawld in its own state folder. */
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/buf.h"
#include "tests/support/crawlrun.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"
#include "tests/support/urlset.h"

static testsite site;

#define PAGES "20"
#define HOSTS "3"
#define MAX_DEPTH "4"

static const char *const site_args[] = { "--pages", PAGES, "--hosts", HOSTS, "--no-specials",
                                         "--sitemaps", NULL };

static int group_setup(void **state)
{
    (void)state;
    return crawlrun_setup_site("sitemap", &site, site_args);
}

static int group_teardown(void **state)
{
    (void)state;
    crawlrun_teardown_site(&site);
    return 0;
}

static const char *state_dir(const char *name)
{
    return crawlrun_path(name, NULL);
}

/* A config for the site on port p; sitemaps on or off. Returns its path. */
static const char *write_config_on(int p, const char *name, bool sitemaps, bool warc)
{
    return crawlrun_config(
            name,
            "[crawl]\nseeds = [\"http://a.test:%d/\"]\nmax_depth = %s\n"
            "[sitemaps]\nenabled = %s\n"
            "[archive]\nwarc = %s\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\", "
            "\"c.test:%d:127.0.0.1\"]\ntimeout_ms = 5000\nconnections = 8\n"
            "[politeness]\ndelay_ms = 0\ndelay_factor = 0.0\nbackoff_ms = 50\n"
            "[storage]\nstate_dir = \"%s\"\n[control]\nlisten = \"\"\n",
            p, MAX_DEPTH, sitemaps ? "true" : "false", warc ? "true" : "false", p, p, p,
            state_dir(name));
}

static const char *write_config(const char *name, bool sitemaps, bool warc)
{
    return write_config_on(site.port, name, sitemaps, warc);
}

/* The site's exact answer for a crawl from a.test's root with the config's
 * limits; with_sitemaps: by a crawler that reads sitemaps. */
static void expected(urlset *out, bool with_sitemaps)
{
    char port[16];
    snprintf(port, sizeof port, "%d", site.port);
    const char *args[] = { "--pages", PAGES, "--hosts", HOSTS, "--no-specials", "--port", port,
                           "--print-expected", "host", "--max-depth", MAX_DEPTH,
                           "--with-robots", "--fetch-requisites", "--requisite-depth", "3",
                           with_sitemaps ? "--sitemaps" : NULL, NULL };
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

static size_t log_lines(void)
{
    return crawlrun_log_lines(&site);
}

/* The keys of what the log shows requested since line `from` (into an
 * empty set); *dups: requests that repeated a key, whatever the answer. */
static void fetched_since(size_t from, urlset *fetched, size_t *dups)
{
    long n = urlset_fetched_since(&site, from, fetched, NULL, NULL);
    assert_true(n >= 0);
    if (dups)
        *dups = (size_t)n - from - fetched->n;
}

static void assert_same(const urlset *want, const urlset *got)
{
    size_t bad = urlset_diff(want, got);
    if (bad)
        fail_msg("%zu differences between the expected and the fetched set", bad);
}

static char *url(const char *target)
{
    static char u[8][256];
    static int k;
    k = (k + 1) % 8;
    snprintf(u[k], sizeof u[k], "http://a.test:%d%s", site.port, target);
    return u[k];
}

/* crawld stats --json of a state, parsed. */
static json_t *stats_json(const char *name)
{
    return crawlrun_stats_json(state_dir(name));
}

static long long sm_get(const json_t *j, const char *k)
{
    const json_t *v = json_object_get(json_object_get(j, "sitemaps"), k);
    if (!json_is_integer(v))
        fail_msg("stats has no sitemaps.%s", k);
    return (long long)json_integer_value(v);
}

static void run_ok(const char *cfg, const char *const *sets, cr_buf *err)
{
    const char *extra[16];
    int n = 0;
    for (int i = 0; sets && sets[i] && n < 14; i++) {
        extra[n++] = "--set";
        extra[n++] = sets[i];
    }
    extra[n] = NULL;
    crawlrun_run_ok(cfg, extra, err);
    assert_non_null(strstr(err->data, "frontier drained"));
}

/* ---- tests ------------------------------------------------------------- */

/* The pages only sitemaps list, and the sitemaps themselves, are exactly
 * what a sitemap crawl adds to a link crawl. */
static const char *const sitemap_only[] = {
    "/sitemap.xml", "/sitemaps/index.xml", "/sitemaps/child.xml.gz", "/sitemaps/plain.xml",
    "/sitemaps/broken.xml", "/sm/only/1.html", "/sm/only/2.html", "/sm/only/3.html",
    "/sitemaps/only/1.html", "/sitemaps/only/2.html", "/sitemaps/only/3.html",
};

static void crawl_finds_exactly_the_sitemap_only_pages(void **state)
{
    (void)state;
    size_t from = log_lines();
    const char *cfg = write_config("on", true, true);
    cr_buf err;
    cr_buf_init(&err, 0);
    run_ok(cfg, NULL, &err);
    urlset with = { 0 }, without = { 0 }, got = { 0 };
    expected(&with, true);
    expected(&without, false);
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&with, &got);
    assert_int_equal(dups, 0);
    /* what sitemaps add: the files and the pages only they list, and
     * nothing they list that the protocol refuses */
    size_t added = 0;
    for (size_t i = 0; i < with.n; i++)
        added += !urlset_has(&without, with.v[i]);
    assert_int_equal(added, sizeof sitemap_only / sizeof *sitemap_only);
    for (size_t i = 0; i < sizeof sitemap_only / sizeof *sitemap_only; i++) {
        if (!urlset_has(&got, url(sitemap_only[i])) || urlset_has(&without, url(sitemap_only[i])))
            fail_msg("%s: not sitemap-only, or not fetched", sitemap_only[i]);
    }
    assert_false(urlset_has(&got, url("/sm/outside.html"))); /* outside /sitemaps/ */
    assert_false(urlset_has(&got, url("/sm/only/7.html")));  /* a relative loc */

    /* the figures: 5 sitemaps (4 urlsets, broken.xml one too, as its root
     * says; 1 index), one gzip */
    json_t *j = stats_json("on");
    assert_int_equal(sm_get(j, "queued"), 5);
    assert_int_equal(sm_get(j, "fetched"), 5);
    assert_int_equal(sm_get(j, "urlsets"), 4);
    assert_int_equal(sm_get(j, "indexes"), 1);
    assert_int_equal(sm_get(j, "gzip"), 1);
    assert_int_equal(sm_get(j, "parse_errors"), 1);
    assert_int_equal(sm_get(j, "urls_listed"), 11);
    assert_int_equal(sm_get(j, "urls_new"), 6);
    assert_int_equal(sm_get(j, "urls_admitted"), 7);
    assert_int_equal(sm_get(j, "children_listed"), 4);
    /* b.test's page and child, the https page, /sm/outside.html */
    assert_int_equal(sm_get(j, "rejected_scope"), 4);
    assert_int_equal(sm_get(j, "invalid"), 1);
    assert_int_equal(sm_get(j, "dropped_by_limits"), 0);
    json_decref(j);
    /* the summary says it; the broken sitemap is named with line:col */
    assert_non_null(strstr(err.data, "  sitemaps: 5 queued, 5 fetched (4 urlsets, 1 indexes, 1 gzip)"));
    char want[256];
    snprintf(want, sizeof want, "crawld: sitemap %s: 3:", url("/sitemaps/broken.xml"));
    if (strstr(err.data, want) == NULL)
        fail_msg("no parse error line \"%s\" in:\n%s", want, err.data);

    /* the report has the sitemaps card, with the same figures */
    const char *rpath = crawlrun_path("report.html", NULL);
    assert_int_equal(proc_crawld((const char *const[]){ "report", "--state", state_dir("on"), "-o",
                                                        rpath, NULL },
                                 NULL, NULL, NULL),
                     0);
    cr_buf html;
    cr_buf_init(&html, 0);
    FILE *rf = fopen(rpath, "r");
    assert_non_null(rf);
    char chunk[4096];
    size_t got_n;
    while ((got_n = fread(chunk, 1, sizeof chunk, rf)) > 0)
        assert_int_equal(cr_buf_append(&html, chunk, got_n), 0);
    fclose(rf);
    assert_non_null(strstr(html.data, "id=\"sitemaps\""));
    assert_non_null(strstr(html.data, "data-key=\"urls_new\" data-value=\"6\""));
    assert_non_null(strstr(html.data, "data-key=\"rejected_scope\" data-value=\"4\""));
    cr_buf_release(&html);

    /* archived like any fetch: the gzip child's response record */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "zcat %s/warc/*.warc.gz | grep -c '^WARC-Target-URI: %s'",
             state_dir("on"), url("/sitemaps/child.xml.gz"));
    cr_buf out;
    cr_buf_init(&out, 0);
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    assert_int_equal(proc_run(argv, NULL, 0, &out, NULL), 0);
    assert_true(strtol(out.data, NULL, 10) >= 1);
    cr_buf_release(&out);

    /* a second run on the same state fetches nothing again: no sitemap,
     * and no page, though / is listed with a <lastmod> (2026-01-01) that
     * is older than its fetch */
    from = log_lines();
    cr_buf_clear(&err);
    run_ok(cfg, NULL, &err);
    urlset again = { 0 };
    fetched_since(from, &again, NULL);
    for (size_t i = 0; i < again.n; i++)
        print_error("fetched again: %s\n", again.v[i]);
    assert_int_equal(again.n, 0);
    urlset_free(&again);
    urlset_free(&with);
    urlset_free(&without);
    urlset_free(&got);
    cr_buf_release(&err);
}

/* Off (the default): the crawl is the link crawl, not one sitemap request. */
static void off_by_default_fetches_no_sitemap(void **state)
{
    (void)state;
    size_t from = log_lines();
    const char *cfg = write_config("off", false, false);
    cr_buf err;
    cr_buf_init(&err, 0);
    run_ok(cfg, NULL, &err);
    urlset want = { 0 }, got = { 0 };
    expected(&want, false);
    fetched_since(from, &got, NULL);
    assert_same(&want, &got);
    for (size_t i = 0; i < got.n; i++)
        assert_null(strstr(got.v[i], "sitemap"));
    json_t *j = stats_json("off");
    assert_null(json_object_get(j, "sitemaps"));
    json_decref(j);
    assert_null(strstr(err.data, "  sitemaps: "));
    urlset_free(&want);
    urlset_free(&got);
    cr_buf_release(&err);
}

/* Limits drop what they must and count it: max_urls per file and
 * max_index_depth 0 in one run, max_per_host in another. */
static void limits_are_enforced_and_counted(void **state)
{
    (void)state;
    size_t from = log_lines();
    const char *cfg = write_config("limits", true, false);
    cr_buf err;
    cr_buf_init(&err, 0);
    run_ok(cfg, (const char *const[]){ "sitemaps.max_urls=2", "sitemaps.max_index_depth=0", NULL },
           &err);
    urlset got = { 0 };
    fetched_since(from, &got, NULL);
    /* /sitemap.xml's first two entries are / and /sm/only/1.html */
    assert_true(urlset_has(&got, url("/sm/only/1.html")));
    assert_false(urlset_has(&got, url("/sm/only/2.html")));
    assert_false(urlset_has(&got, url("/sm/only/3.html")));
    assert_true(urlset_has(&got, url("/sitemaps/index.xml")));
    assert_false(urlset_has(&got, url("/sitemaps/child.xml.gz")));
    assert_false(urlset_has(&got, url("/sitemaps/plain.xml")));
    /* 5 of /sitemap.xml's 7 entries and 2 of the index's 4 children are
     * past max_urls; the 2 children left are past max_index_depth */
    json_t *j = stats_json("limits");
    assert_int_equal(sm_get(j, "dropped_urls"), 7);
    assert_int_equal(sm_get(j, "dropped_depth"), 2);
    assert_int_equal(sm_get(j, "dropped_by_limits"), 9);
    assert_int_equal(sm_get(j, "queued"), 2);
    json_decref(j);
    assert_non_null(strstr(err.data, "dropped by limits: 7 past max_urls"));
    urlset_free(&got);

    from = log_lines();
    cfg = write_config("per-host", true, false);
    cr_buf_clear(&err);
    run_ok(cfg, (const char *const[]){ "sitemaps.max_per_host=3", NULL }, &err);
    fetched_since(from, &got, NULL);
    j = stats_json("per-host");
    assert_int_equal(sm_get(j, "queued"), 3);
    assert_int_equal(sm_get(j, "dropped_host"), 2);
    json_decref(j);
    size_t sitemaps = 0;
    for (size_t i = 0; i < sizeof sitemap_only / sizeof *sitemap_only; i++)
        sitemaps += strstr(sitemap_only[i], ".xml") != NULL && urlset_has(&got, url(sitemap_only[i]));
    assert_int_equal(sitemaps, 3);
    urlset_free(&got);
    cr_buf_release(&err);
}

/* A <lastmod> later than a known page's stored fetch makes it due now:
 * on a site whose /sitemap.xml gives / the lastmod 2999-01-01, / (fetched
 * first, as the seed) is due after the crawl and the next run fetches it
 * again (the re-crawl promotes it); nothing else is fetched again. */
static void later_lastmod_makes_a_known_page_due(void **state)
{
    (void)state;
    testsite s2;
    const char *args[] = { "--pages", PAGES, "--hosts", HOSTS, "--no-specials", "--sitemaps",
                           "--sitemap-lastmod", "2999-01-01T00:00:00Z", NULL };
    assert_int_equal(testsite_start(&s2, args), 0);
    const char *cfg = write_config_on(s2.port, "lastmod", true, false);
    cr_buf err;
    cr_buf_init(&err, 0);
    run_ok(cfg, NULL, &err);
    json_t *j = stats_json("lastmod");
    assert_int_equal(sm_get(j, "lastmod_known"), 1); /* / is the only known page listed */
    json_decref(j);
    size_t before = crawlrun_log_lines(&s2), n;
    testsite_req *v;
    cr_buf_clear(&err);
    run_ok(cfg, NULL, &err);
    assert_int_equal(testsite_log_read(&s2, &v, &n), 0);
    size_t pages = 0, root = 0;
    for (size_t i = before; i < n; i++) {
        if (strcmp(v[i].target, "/robots.txt") == 0)
            continue;
        pages++;
        root += strcmp(v[i].target, "/") == 0;
        if (strcmp(v[i].target, "/") != 0)
            print_error("fetched again: %s\n", v[i].target);
    }
    testsite_log_free(v, n);
    assert_int_equal(root, 1);
    assert_int_equal(pages, 1);
    j = stats_json("lastmod");
    json_t *rc = json_object_get(j, "recrawl");
    assert_int_equal(json_integer_value(json_object_get(rc, "promoted")), 1);
    json_decref(j);
    assert_int_equal(testsite_stop(&s2), 0);
    cr_buf_release(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crawl_finds_exactly_the_sitemap_only_pages),
        cmocka_unit_test(off_by_default_fetches_no_sitemap),
        cmocka_unit_test(limits_are_enforced_and_counted),
        cmocka_unit_test(later_lastmod_makes_a_known_page_due),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
