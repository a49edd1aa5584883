/* tests/test_sitemaps: crawler/sitemaps, sitemaps in the crawl, without a
 * network: robots.txt answers and sitemap bodies are handed in, and a fake
 * admit function records what the crawl would have queued ("K depth url"
 * lines, K = M for a sitemap row, P for a listed page). Covers where
 * sitemaps come from (well-known, Sitemap lines, in-scope hosts only), the
 * protocol's scope rule, the robots.txt cross-submit grant, index depth and
 * per-host limits, what every entry is counted as, and the figures as
 * status JSON and /metrics print them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <libxml/parser.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/report/status.h"
#include "crawler/sitemaps.h"
#include "storage/db.h"

#define NS "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\""

/* What the fake crawl admitted, and which fetch forms it already knows. */
typedef struct crawlsim {
    cr_buf log;
    const char *known[8];    /* fetch forms answered SITEMAPS_KNOWN */
    const char *outside;     /* prefix answered SITEMAPS_OUT_OF_SCOPE */
    int fail;                /* answer < 0 (a storage error) */
    int quiet;               /* no log (the allocator may be failing) */
    int64_t last_lastmod;
} crawlsim;

static int fake_admit(void *ud, const char *fetch, size_t flen, const char *key, size_t klen,
                      int depth, int kind, int64_t lastmod_ms)
{
    crawlsim *c = ud;
    assert_int_equal(strlen(fetch), flen);
    assert_int_equal(strlen(key), klen);
    assert_true(kind == DB_KIND_SITEMAP || kind == DB_KIND_SEED);
    c->last_lastmod = lastmod_ms;
    if (c->fail)
        return -EIO;
    if (c->outside && strncmp(fetch, c->outside, strlen(c->outside)) == 0)
        return SITEMAPS_OUT_OF_SCOPE;
    for (int i = 0; i < 8 && c->known[i]; i++)
        if (strcmp(c->known[i], fetch) == 0)
            return SITEMAPS_KNOWN;
    if (!c->quiet)
        assert_int_equal(cr_buf_printf(&c->log, "%c %d %s\n",
                                       kind == DB_KIND_SITEMAP ? 'M' : 'P', depth, fetch),
                         0);
    return SITEMAPS_NEW;
}

typedef struct env {
    scope *sc;
    url_canon *uc;
    sitemaps *sm;
    crawlsim c;
} env;

static void env_open(env *e, const sitemaps_opts *over)
{
    memset(e, 0, sizeof *e);
    scope_opts so;
    scope_opts_defaults(&so);
    e->sc = scope_new(&so, NULL, 0);
    assert_non_null(e->sc);
    const char *seed = "http://a.test/";
    assert_int_equal(scope_add_seed(e->sc, seed, strlen(seed)), 0);
    e->uc = url_canon_new(NULL);
    assert_non_null(e->uc);
    sitemaps_opts o = { .well_known = true, .max_index_depth = 1, .max_per_host = 1000 };
    if (over)
        o = *over;
    o.sc = e->sc;
    cr_buf_init(&e->c.log, 0);
    e->sm = sitemaps_new(&o, fake_admit, &e->c);
    assert_non_null(e->sm);
}

static void env_close(env *e)
{
    sitemaps_free(e->sm);
    url_canon_free(e->uc);
    scope_free(e->sc);
    cr_buf_release(&e->c.log);
}

static const char *take_log(env *e)
{
    static char copy[8192];
    snprintf(copy, sizeof copy, "%s", e->c.log.data ? e->c.log.data : "");
    cr_buf_clear(&e->c.log);
    return copy;
}

/* Feeds body (in pieces of 7 bytes) as the answer to the sitemap row url. */
static void fetch(env *e, const char *url, int depth, const void *body, size_t len)
{
    sitemaps_fetch *f = sitemaps_fetch_begin(e->sm, e->uc, url, strlen(url), depth);
    assert_non_null(f);
    const char *p = body;
    for (size_t i = 0; i < len; i += 7)
        sitemaps_fetch_feed(f, p + i, len - i < 7 ? len - i : 7);
    sitemaps_fetch_end(f, false, NULL);
}

static void fetch_str(env *e, const char *url, int depth, const char *body)
{
    fetch(e, url, depth, body, strlen(body));
}

static sitemaps_stats stats(env *e)
{
    sitemaps_stats st;
    sitemaps_stats_get(e->sm, &st);
    return st;
}

/* ---- where sitemaps come from ------------------------------------------ */

static void robots_gives_well_known_and_sitemap_lines(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    const char *robots = "User-agent: *\nDisallow: /x\nSitemap: /maps/one.xml\n"
                         "sitemap: http://a.test/maps/two.xml.gz\nSitemap: ftp://a.test/no.xml\n";
    sitemaps_robots(e.sm, e.uc, "http://a.test/robots.txt", 200, robots, strlen(robots));
    assert_string_equal(take_log(&e), "M 0 http://a.test/sitemap.xml\n"
                                      "M 0 http://a.test/maps/two.xml.gz\n");
    /* a relative or non-http Sitemap line is not a URL the protocol allows */
    assert_int_equal(stats(&e).invalid, 2);
    assert_int_equal(stats(&e).queued, 2);
    /* a 404 robots.txt: /sitemap.xml still; a 5xx body is not read */
    sitemaps_robots(e.sm, e.uc, "http://a.test:8080/robots.txt", 404, NULL, 0);
    assert_string_equal(take_log(&e), "M 0 http://a.test:8080/sitemap.xml\n");
    sitemaps_robots(e.sm, e.uc, "https://a.test/robots.txt", 500, robots, strlen(robots));
    assert_string_equal(take_log(&e), "M 0 https://a.test/sitemap.xml\n");
    env_close(&e);
}

static void hosts_outside_scope_give_nothing(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    const char *robots = "Sitemap: http://cdn.test/sitemap.xml\n";
    sitemaps_robots(e.sm, e.uc, "http://cdn.test/robots.txt", 200, robots, strlen(robots));
    assert_string_equal(take_log(&e), "");
    assert_int_equal(stats(&e).queued, 0);
    env_close(&e);
}

static void well_known_can_be_off(void **s)
{
    (void)s;
    sitemaps_opts o = { .well_known = false, .max_index_depth = 1, .max_per_host = 10 };
    env e;
    env_open(&e, &o);
    const char *robots = "Sitemap: http://a.test/s.xml\n";
    sitemaps_robots(e.sm, e.uc, "http://a.test/robots.txt", 200, robots, strlen(robots));
    assert_string_equal(take_log(&e), "M 0 http://a.test/s.xml\n");
    env_close(&e);
}

/* ---- entries ------------------------------------------------------------ */

static void urlset_entries_are_scoped_by_the_protocol(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    e.c.known[0] = "http://a.test/news/";
    fetch_str(&e, "http://a.test/news/sitemap.xml", 0,
              "<urlset " NS ">"
              "<url><loc>http://a.test/news/</loc></url>"
              "<url><loc>http://A.TEST/news/a.html</loc><lastmod>2020-01-02</lastmod></url>"
              "<url><loc>http://a.test/news/b.html#frag</loc></url>"
              "<url><loc>http://a.test/other/c.html</loc></url>"
              "<url><loc>https://a.test/news/d.html</loc></url>"
              "<url><loc>http://b.test/news/e.html</loc></url>"
              "<url><loc>/news/f.html</loc></url>"
              "<url><loc>http://[bad/</loc></url>"
              "<url><loc></loc></url>"
              "</urlset>");
    assert_string_equal(take_log(&e), "P 0 http://a.test/news/a.html\nP 0 http://a.test/news/b.html\n");
    sitemaps_stats st = stats(&e);
    assert_int_equal(st.fetched, 1);
    assert_int_equal(st.urlsets, 1);
    assert_int_equal(st.urls_listed, 8);
    assert_int_equal(st.urls_new, 2);
    assert_int_equal(st.urls_known, 1);
    assert_int_equal(st.rejected_scope, 3);
    assert_int_equal(st.invalid, 2);
    assert_int_equal(st.dropped_loc, 1);
    assert_int_equal(st.lastmod, 1);
    assert_int_equal(st.parse_errors, 0);
    env_close(&e);
}

static void lastmod_goes_to_admit(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    fetch_str(&e, "http://a.test/sitemap.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/x</loc>"
              "<lastmod>2004-10-01T18:23:17+00:00</lastmod></url></urlset>");
    assert_int_equal(e.c.last_lastmod, 1096654997000LL);
    assert_int_equal(stats(&e).lastmod_known, 0);
    /* a known page's <lastmod> goes to the crawl too (the re-crawl hook) */
    e.c.known[0] = "http://a.test/x";
    fetch_str(&e, "http://a.test/sitemap1.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/x</loc>"
              "<lastmod>2005-01-01</lastmod></url></urlset>");
    assert_int_equal(e.c.last_lastmod, 1104537600000LL);
    assert_int_equal(stats(&e).lastmod_known, 1);
    assert_int_equal(stats(&e).urls_known, 1);
    fetch_str(&e, "http://a.test/sitemap2.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/y</loc></url></urlset>");
    assert_int_equal(e.c.last_lastmod, -1);
    env_close(&e);
}

static void crawl_scope_and_storage_answers_counted(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    e.c.outside = "http://a.test/private/";
    fetch_str(&e, "http://a.test/sitemap.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/private/1</loc></url>"
              "<url><loc>http://a.test/ok</loc></url></urlset>");
    assert_int_equal(stats(&e).out_of_scope, 1);
    assert_int_equal(stats(&e).urls_new, 1);
    assert_int_equal(stats(&e).storage_errors, 0);
    e.c.fail = 1;
    fetch_str(&e, "http://a.test/sitemap3.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/z</loc></url></urlset>");
    assert_int_equal(stats(&e).storage_errors, 1);
    env_close(&e);
}

/* ---- indexes ------------------------------------------------------------ */

static void index_children_one_level_and_same_site(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    const char *index = "<sitemapindex " NS ">"
                        "<sitemap><loc>http://a.test/maps/1.xml.gz</loc></sitemap>"
                        "<sitemap><loc>http://a.test/maps/sub/2.xml</loc></sitemap>"
                        "<sitemap><loc>http://a.test/elsewhere/3.xml</loc></sitemap>"
                        "<sitemap><loc>http://b.test/maps/4.xml</loc></sitemap>"
                        "</sitemapindex>";
    fetch_str(&e, "http://a.test/maps/index.xml", 0, index);
    assert_string_equal(take_log(&e), "M 1 http://a.test/maps/1.xml.gz\n"
                                      "M 1 http://a.test/maps/sub/2.xml\n");
    assert_int_equal(stats(&e).indexes, 1);
    assert_int_equal(stats(&e).children_listed, 4);
    assert_int_equal(stats(&e).rejected_scope, 2);
    /* an index met at depth 1 (a child that is itself an index): its
     * children are past max_index_depth */
    fetch_str(&e, "http://a.test/maps/sub/2.xml", 1,
              "<sitemapindex " NS "><sitemap><loc>http://a.test/maps/sub/5.xml</loc></sitemap>"
              "</sitemapindex>");
    assert_string_equal(take_log(&e), "");
    assert_int_equal(stats(&e).dropped_depth, 1);
    env_close(&e);
}

static void max_per_host_limits_sitemaps(void **s)
{
    (void)s;
    sitemaps_opts o = { .well_known = true, .max_index_depth = 1, .max_per_host = 2 };
    env e;
    env_open(&e, &o);
    fetch_str(&e, "http://a.test/index.xml", 0,
              "<sitemapindex " NS ">"
              "<sitemap><loc>http://a.test/1.xml</loc></sitemap>"
              "<sitemap><loc>http://a.test/2.xml</loc></sitemap>"
              "<sitemap><loc>http://a.test/3.xml</loc></sitemap>"
              "</sitemapindex>");
    assert_string_equal(take_log(&e), "M 1 http://a.test/1.xml\nM 1 http://a.test/2.xml\n");
    assert_int_equal(stats(&e).dropped_host, 1);
    /* other hosts have their own count */
    sitemaps_robots(e.sm, e.uc, "http://a.test:81/robots.txt", 404, NULL, 0);
    assert_string_equal(take_log(&e), "M 0 http://a.test:81/sitemap.xml\n");
    env_close(&e);
}

static void max_urls_and_cut_files_counted(void **s)
{
    (void)s;
    sitemaps_opts o = { .well_known = true, .max_index_depth = 1, .max_per_host = 10,
                        .max_urls = 2, .max_bytes = 200 };
    env e;
    env_open(&e, &o);
    fetch_str(&e, "http://a.test/s.xml", 0,
              "<urlset " NS "><url><loc>http://a.test/1</loc></url>"
              "<url><loc>http://a.test/2</loc></url><url><loc>http://a.test/3</loc></url>"
              "</urlset>");
    assert_int_equal(stats(&e).dropped_urls, 1);
    assert_int_equal(stats(&e).urls_new, 2);
    cr_buf big;
    cr_buf_init(&big, 0);
    assert_int_equal(cr_buf_puts(&big, "<urlset " NS ">"), 0);
    for (int i = 0; i < 20; i++)
        assert_int_equal(cr_buf_printf(&big, "<url><loc>http://a.test/b%d</loc></url>", i), 0);
    assert_int_equal(cr_buf_puts(&big, "</urlset>"), 0);
    fetch(&e, "http://a.test/big.xml", 0, big.data, big.len);
    assert_int_equal(stats(&e).cut, 1);
    assert_int_equal(stats(&e).parse_errors, 0);
    cr_buf_release(&big);
    env_close(&e);
}

static void malformed_and_gzip(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    fetch_str(&e, "http://a.test/bad.xml", 0, "<urlset " NS "><url><loc>x</lo></url>");
    fetch_str(&e, "http://a.test/html.xml", 0, "<html><body>not a sitemap</body></html>");
    assert_int_equal(stats(&e).parse_errors, 2);
    const char *doc = "<urlset " NS "><url><loc>http://a.test/gz</loc></url></urlset>";
    unsigned char gz[512];
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (unsigned char *)doc;
    z.avail_in = (uInt)strlen(doc);
    z.next_out = gz;
    z.avail_out = sizeof gz;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t glen = sizeof gz - z.avail_out;
    deflateEnd(&z);
    fetch(&e, "http://a.test/s.xml.gz", 0, gz, glen);
    assert_string_equal(take_log(&e), "P 0 http://a.test/gz\n");
    assert_int_equal(stats(&e).gzip, 1);
    assert_int_equal(stats(&e).parse_errors, 2);
    env_close(&e);
}

/* ---- cross-submit -------------------------------------------------------- */

static void robots_cross_submit_grants_its_host(void **s)
{
    (void)s;
    env e;
    env_open(&e, NULL);
    const char *robots = "Sitemap: http://maps.test/a/sitemap.xml\n";
    sitemaps_robots(e.sm, e.uc, "http://a.test/robots.txt", 200, robots, strlen(robots));
    assert_string_equal(take_log(&e), "M 0 http://a.test/sitemap.xml\n"
                                      "M 0 http://maps.test/a/sitemap.xml\n");
    assert_int_equal(stats(&e).grants, 1);
    const char *urls = "<urlset " NS ">"
                       "<url><loc>http://a.test/any/page.html</loc></url>"
                       "<url><loc>http://maps.test/a/own.html</loc></url>"
                       "<url><loc>http://maps.test/b/not.html</loc></url>"
                       "<url><loc>https://a.test/other-scheme.html</loc></url>"
                       "<url><loc>http://b.test/not-granted.html</loc></url>"
                       "</urlset>";
    fetch_str(&e, "http://maps.test/a/sitemap.xml", 0, urls);
    assert_string_equal(take_log(&e), "P 0 http://a.test/any/page.html\n"
                                      "P 0 http://maps.test/a/own.html\n");
    assert_int_equal(stats(&e).rejected_scope, 3);
    /* the same sitemap without the grant (not named by a.test's robots.txt) */
    fetch_str(&e, "http://maps.test/a/other.xml", 0, urls);
    assert_string_equal(take_log(&e), "P 0 http://maps.test/a/own.html\n");
    /* an index's children inherit the grant */
    const char *index = "<sitemapindex " NS "><sitemap><loc>http://maps.test/a/child.xml</loc>"
                        "</sitemap></sitemapindex>";
    robots = "Sitemap: http://maps.test/a/index.xml\n";
    sitemaps_robots(e.sm, e.uc, "http://a.test/robots.txt", 200, robots, strlen(robots));
    take_log(&e);
    fetch_str(&e, "http://maps.test/a/index.xml", 0, index);
    assert_string_equal(take_log(&e), "M 1 http://maps.test/a/child.xml\n");
    fetch_str(&e, "http://maps.test/a/child.xml", 1,
              "<urlset " NS "><url><loc>http://a.test/deep.html</loc></url></urlset>");
    assert_string_equal(take_log(&e), "P 0 http://a.test/deep.html\n");
    env_close(&e);
}

/* ---- out of memory ------------------------------------------------------- */

static void out_of_memory_is_counted_never_a_crash(void **s)
{
    (void)s;
    scope_opts so;
    scope_opts_defaults(&so);
    scope *sc = scope_new(&so, NULL, 0);
    assert_non_null(sc);
    sitemaps_opts o = { .well_known = true, .max_index_depth = 1, .max_per_host = 10, .sc = sc };
    crawlsim c = { .last_lastmod = 0 };
    cr_buf_init(&c.log, 0);
    cr_alloc_fail_after(1);
    assert_null(sitemaps_new(&o, fake_admit, &c));
    cr_alloc_fail_after(0);
    env e;
    env_open(&e, NULL);
    e.c.quiet = 1;
    const char *doc = "<urlset " NS "><url><loc>http://a.test/1</loc></url>"
                      "<url><loc>http://a.test/2</loc></url></urlset>";
    /* every allocation of a fetch in turn: begin fails (counted), or the
     * parse runs out (counted), or it all fits */
    bool clean = false;
    for (long n = 1; n < 40 && !clean; n++) {
        sitemaps_stats before = stats(&e);
        cr_buf_clear(&e.c.log);
        cr_alloc_fail_after(n);
        sitemaps_fetch *f = sitemaps_fetch_begin(e.sm, e.uc, "http://a.test/s.xml", 19, 0);
        if (f) {
            sitemaps_fetch_feed(f, doc, strlen(doc));
            sitemaps_fetch_end(f, false, NULL);
        }
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        sitemaps_stats after = stats(&e);
        if (failures == 0) {
            clean = true;
            assert_int_equal(after.parse_errors, before.parse_errors);
            assert_int_equal(after.urls_new - before.urls_new, 2);
        } else {
            /* what failed is a counted error or a lost entry, never silent
             * success for both */
            assert_true(after.parse_errors > before.parse_errors ||
                        after.invalid > before.invalid ||
                        after.urls_new - before.urls_new < 2);
        }
    }
    assert_true(clean);
    cr_buf_release(&c.log);
    scope_free(sc);
    env_close(&e);
}

/* ---- figures ------------------------------------------------------------ */

static void figures_in_status_json_and_metrics(void **s)
{
    (void)s;
    crawl_status *st = calloc(1, sizeof *st);
    assert_non_null(st);
    json_t *j = status_json(st);
    assert_non_null(j);
    assert_null(json_object_get(j, "sitemaps")); /* off: not shown */
    json_decref(j);
    st->sitemaps_on = true;
    st->sitemaps.fetched = 5;
    st->sitemaps.urls_new = 6;
    st->sitemaps.urls_known = 1;
    st->sitemaps.dropped_urls = 2;
    st->sitemaps.cut = 1;
    st->sitemaps.rejected_scope = 4;
    j = status_json(st);
    json_t *o = json_object_get(j, "sitemaps");
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "fetched")), 5);
    assert_int_equal(json_integer_value(json_object_get(o, "urls_admitted")), 7);
    assert_int_equal(json_integer_value(json_object_get(o, "dropped_by_limits")), 3);
    assert_int_equal(json_integer_value(json_object_get(o, "rejected_scope")), 4);
    json_decref(j);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    status_metrics(f, st);
    fclose(f);
    assert_non_null(strstr(text, "crawld_sitemaps_total{what=\"fetched\"} 5\n"));
    assert_non_null(strstr(text, "crawld_sitemaps_total{what=\"rejected_scope\"} 4\n"));
    free(text);
    free(st);
}

int main(void)
{
    xmlInitParser();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(robots_gives_well_known_and_sitemap_lines),
        cmocka_unit_test(hosts_outside_scope_give_nothing),
        cmocka_unit_test(well_known_can_be_off),
        cmocka_unit_test(urlset_entries_are_scoped_by_the_protocol),
        cmocka_unit_test(lastmod_goes_to_admit),
        cmocka_unit_test(crawl_scope_and_storage_answers_counted),
        cmocka_unit_test(index_children_one_level_and_same_site),
        cmocka_unit_test(max_per_host_limits_sitemaps),
        cmocka_unit_test(max_urls_and_cut_files_counted),
        cmocka_unit_test(malformed_and_gzip),
        cmocka_unit_test(robots_cross_submit_grants_its_host),
        cmocka_unit_test(out_of_memory_is_counted_never_a_crash),
        cmocka_unit_test(figures_in_status_json_and_metrics),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    xmlCleanupParser();
    return rc;
}
