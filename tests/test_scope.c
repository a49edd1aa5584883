/* tests/test_scope: frontier/scope: modes, patterns, requisites, depth,
 * traps and their counters, the public suffix list, seeds added while other
 * threads check, and out of memory. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "frontier/scope.h"
#include "storage/db.h"

/* ---- helpers ---------------------------------------------------------- */

static scope *make(int mode, const char *const *seeds)
{
    scope_opts o;
    char err[128];
    scope_opts_defaults(&o);
    o.mode = mode;
    scope *s = scope_new(&o, err, sizeof(err));
    assert_non_null(s);
    for (; seeds != NULL && *seeds != NULL; seeds++)
        assert_int_equal(scope_add_seed(s, *seeds, strlen(*seeds)), 0);
    return s;
}

static scope *make_opts(const scope_opts *o, const char *seed)
{
    char err[128];
    scope *s = scope_new(o, err, sizeof(err));
    if (s == NULL)
        fail_msg("scope_new: %s", err);
    if (seed != NULL)
        assert_int_equal(scope_add_seed(s, seed, strlen(seed)), 0);
    return s;
}

static scope_verdict nav(scope *s, const char *url, int64_t depth)
{
    return scope_check(s, url, strlen(url), depth, DB_KIND_NAVIGATION);
}

#define assert_verdict(s, url, depth, want)                                              \
    do {                                                                                 \
        scope_verdict got_ = nav((s), (url), (depth));                                   \
        if (got_ != (want))                                                              \
            fail_msg("%s: got %s, want %s", (url), scope_verdict_name(got_),             \
                     scope_verdict_name(want));                                          \
    } while (0)

/* ---- modes -------------------------------------------------------------- */

static void host_mode_is_the_seeds_hosts(void **state)
{
    (void)state;
    const char *seeds[] = { "http://a.test:8080/start.html", "https://c.test/", NULL };
    scope *s = make(SCOPE_MODE_HOST, seeds);
    assert_verdict(s, "http://a.test:8080/sec1/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "https://a.test/other-port-and-scheme", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://c.test/x?y=1", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://b.test:8080/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://sub.a.test:8080/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://user:pw@a.test/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test.evil/", 1, SCOPE_OUT_OF_SCOPE);
    assert_int_equal(scope_seed_count(s), 2);
    scope_free(s);
}

/* Each thread keeps the verdict of its last host (scope.c, host_memo): a
 * seed added since, or another scope judging the same host, must not get
 * the kept one. */
static void the_last_hosts_verdict_goes_stale(void **state)
{
    (void)state;
    const char *one[] = { "http://a.test/", NULL };
    const char *two[] = { "http://a.test/", "http://c.test/", NULL }; /* as many adds */
    for (int mode = SCOPE_MODE_HOST; mode <= SCOPE_MODE_DOMAIN; mode++) {
        scope *s = make(mode, one), *t = make(mode, two);
        assert_verdict(s, "http://b.test/1", 1, SCOPE_OUT_OF_SCOPE);
        assert_verdict(s, "http://b.test/2", 1, SCOPE_OUT_OF_SCOPE);
        assert_int_equal(scope_add_seed(s, "http://b.test/", 14), 0);
        assert_verdict(s, "http://b.test/3", 1, SCOPE_ALLOWED);
        assert_verdict(t, "http://b.test/3", 1, SCOPE_OUT_OF_SCOPE); /* the same host */
        assert_verdict(s, "http://b.test/4", 1, SCOPE_ALLOWED);
        assert_verdict(s, "http://a.test/5", 1, SCOPE_ALLOWED);
        assert_verdict(s, "http://a.testx/6", 1, SCOPE_OUT_OF_SCOPE); /* not a prefix match */
        scope_free(t);
        scope_free(s);
    }
}

static void domain_mode_uses_the_public_suffix_list(void **state)
{
    (void)state;
    const char *seeds[] = { "http://a.example.co.uk/", "https://www.example.com/", NULL };
    scope *s = make(SCOPE_MODE_DOMAIN, seeds);
    assert_verdict(s, "http://b.example.co.uk/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://example.co.uk/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://deep.sub.example.co.uk/x", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://other.co.uk/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://co.uk/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://cdn.example.com/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://example.org/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://www.example.org/", 1, SCOPE_OUT_OF_SCOPE);
    assert_int_equal(scope_seed_count(s), 2); /* example.co.uk, example.com */
    scope_free(s);
}

static void registrable_domain_cases(void **state)
{
    (void)state;
    static const struct { const char *host, *want; } cases[] = {
        { "a.example.co.uk", "example.co.uk" },
        { "b.example.co.uk", "example.co.uk" },
        { "example.com", "example.com" },
        { "www.example.org", "example.org" },
        { "a.test", "a.test" },               /* unknown TLD: the default rule */
        { "localhost", "localhost" },         /* none: the host itself */
        { "192.168.0.1", "192.168.0.1" },     /* an IP address is its own domain */
        { "[::1]", "[::1]" },
        { "x.y.blogspot.com", "y.blogspot.com" }, /* a private suffix */
    };
    char out[256];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(scope_registrable_domain(cases[i].host, strlen(cases[i].host), out,
                                                  sizeof(out)), 0);
        if (strcmp(out, cases[i].want) != 0)
            fail_msg("%s: got %s, want %s", cases[i].host, out, cases[i].want);
    }
    assert_int_equal(scope_registrable_domain("example.com", 11, out, 5), -ENOSPC);
    assert_int_equal(scope_registrable_domain("", 0, out, sizeof(out)), -EINVAL);
}

static void domain_mode_keeps_ip_hosts_apart(void **state)
{
    (void)state;
    const char *seeds[] = { "http://192.168.0.1:8080/", NULL };
    scope *s = make(SCOPE_MODE_DOMAIN, seeds);
    assert_verdict(s, "http://192.168.0.1/x", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://10.0.0.1/", 1, SCOPE_OUT_OF_SCOPE);   /* not "0.1" */
    assert_verdict(s, "http://172.16.0.1/", 1, SCOPE_OUT_OF_SCOPE);
    scope_free(s);
}

static void prefix_mode_is_the_seed_up_to_its_last_slash(void **state)
{
    (void)state;
    const char *seeds[] = { "http://a.test:8080/sec1/Article9.html?from=/x/y",
                            "http://b.test/", NULL };
    scope *s = make(SCOPE_MODE_PREFIX, seeds);
    assert_verdict(s, "http://a.test:8080/sec1/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test:8080/sec1/Article17.html", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test:8080/sec1/deeper/x?q=1", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test:8080/sec10/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test:8080/sec2/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test:8080/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test:8081/sec1/", 1, SCOPE_OUT_OF_SCOPE); /* other port */
    assert_verdict(s, "https://a.test:8080/sec1/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test:8080/x/y", 1, SCOPE_OUT_OF_SCOPE); /* query's '/' ignored */
    assert_verdict(s, "http://b.test/anything/at/all", 1, SCOPE_ALLOWED);
    assert_int_equal(scope_seed_count(s), 2);
    /* the same prefix twice counts once */
    assert_int_equal(scope_add_seed(s, "http://a.test:8080/sec1/other.html", 34), 0);
    assert_int_equal(scope_seed_count(s), 2);
    scope_free(s);
}

static void any_mode_takes_every_http_url(void **state)
{
    (void)state;
    scope *s = make(SCOPE_MODE_ANY, NULL);
    assert_verdict(s, "http://anything.example/", 3, SCOPE_ALLOWED);
    assert_verdict(s, "https://x.y.z/", 3, SCOPE_ALLOWED);
    assert_verdict(s, "ftp://x.y.z/", 3, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http:///nohost", 3, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "mailto:a@b.c", 3, SCOPE_OUT_OF_SCOPE);
    scope_free(s);
}

/* ---- patterns ----------------------------------------------------------- */

static void glob_matches_the_whole_url(void **state)
{
    (void)state;
    static const struct { const char *pat, *s; int want; } cases[] = {
        { "http://a.test/*", "http://a.test/", 1 },
        { "http://a.test/*", "http://a.test/x/y?z", 1 },
        { "http://a.test/*", "http://a.test", 0 },
        { "*/private/*", "http://a.test/private/1.html", 1 },
        { "*/private/*", "http://a.test/privateer/1.html", 0 },
        { "*.pdf", "http://a.test/doc/1.pdf", 1 },
        { "*.pdf", "http://a.test/doc/1.pdf?download=1", 0 },
        { "*.pdf*", "http://a.test/doc/1.pdf?download=1", 1 },
        { "exact", "exact", 1 },
        { "exact", "exactly", 0 },
        { "a*b*c", "abc", 1 },
        { "a*b*c", "aXbYbZc", 1 },
        { "a*b*c", "aXbYbZ", 0 },
        { "**", "", 1 },
        { "*", "", 1 },
        { "a", "", 0 },
        { "*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = scope_glob_match(cases[i].pat, strlen(cases[i].pat), cases[i].s,
                                   strlen(cases[i].s));
        if (got != cases[i].want)
            fail_msg("glob %s ~ %s: got %d", cases[i].pat, cases[i].s, got);
    }
}

static void include_widens_and_exclude_wins(void **state)
{
    (void)state;
    const char *inc[] = { "http://cdn.test/*", "http://a.test/private/public*" };
    const char *exc[] = { "*/private/*", "*.pdf" };
    scope_opts o;
    scope_opts_defaults(&o);
    o.include = inc;
    o.n_include = 2;
    o.exclude = exc;
    o.n_exclude = 2;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/sec1/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://cdn.test/lib.js", 1, SCOPE_ALLOWED);       /* include */
    assert_verdict(s, "http://b.test/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test/private/1.html", 1, SCOPE_EXCLUDED);
    assert_verdict(s, "http://a.test/private/public.html", 1, SCOPE_EXCLUDED); /* both */
    assert_verdict(s, "http://cdn.test/doc/1.pdf", 1, SCOPE_EXCLUDED);
    assert_int_equal(scope_in_scope(s, "http://cdn.test/x", 17), 1);
    assert_int_equal(scope_in_scope(s, "http://a.test/private/2", 23), 0);
    assert_int_equal(scope_in_scope(s, "http://b.test/", 14), 0);
    /* a seed is in scope by itself, but exclude still wins */
    assert_int_equal(scope_check(s, "http://z.test/", 14, 0, DB_KIND_SEED), SCOPE_ALLOWED);
    assert_int_equal(scope_check(s, "http://z.test/private/", 22, 0, DB_KIND_SEED),
                     SCOPE_EXCLUDED);
    scope_free(s);
}

static void bad_options_are_refused(void **state)
{
    (void)state;
    const char *empty[] = { "" };
    char err[128];
    scope_opts o;
    scope_opts_defaults(&o);
    o.mode = 7;
    assert_null(scope_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "mode"));
    scope_opts_defaults(&o);
    o.exclude = empty;
    o.n_exclude = 1;
    assert_null(scope_new(&o, err, sizeof(err)));
    assert_non_null(strstr(err, "exclude pattern 1"));
    assert_null(scope_new(NULL, NULL, 0));
    scope *s = make(SCOPE_MODE_HOST, NULL);
    assert_int_equal(scope_add_seed(s, "ftp://a.test/", 13), -EINVAL);
    assert_int_equal(scope_add_seed(s, "http://", 7), -EINVAL);
    assert_int_equal(scope_add_seed(s, "http://[::1/", 12), -EINVAL);
    assert_int_equal(scope_seed_count(s), 0);
    scope_free(s);
}

/* ---- requisites and depth ----------------------------------------------- */

static void requisites_come_from_any_host(void **state)
{
    (void)state;
    const char *exc[] = { "*/tracker.js" };
    scope_opts o;
    scope_opts_defaults(&o);
    o.exclude = exc;
    o.n_exclude = 1;
    o.max_depth = 2;
    o.max_path_depth = 4;
    scope *s = make_opts(&o, "http://a.test/");
    const char *img = "http://cdn.other/img/1.png";
    assert_int_equal(scope_check(s, img, strlen(img), 1, DB_KIND_REQUISITE), SCOPE_ALLOWED);
    assert_int_equal(scope_check(s, img, strlen(img), 1, DB_KIND_NAVIGATION),
                     SCOPE_OUT_OF_SCOPE);
    assert_int_equal(scope_check(s, img, strlen(img), 1, DB_KIND_REDIRECT), SCOPE_OUT_OF_SCOPE);
    /* exclude, depth and traps still apply to requisites */
    assert_int_equal(scope_check(s, "http://x.y/tracker.js", 21, 1, DB_KIND_REQUISITE),
                     SCOPE_EXCLUDED);
    assert_int_equal(scope_check(s, img, strlen(img), 3, DB_KIND_REQUISITE), SCOPE_TOO_DEEP);
    assert_int_equal(scope_check(s, "http://x.y/a/b/c/d/e.png", 24, 1, DB_KIND_REQUISITE),
                     SCOPE_TRAP_PATH_DEPTH);
    scope_free(s);

    o.fetch_requisites = false;
    s = make_opts(&o, "http://a.test/");
    assert_int_equal(scope_check(s, img, strlen(img), 1, DB_KIND_REQUISITE),
                     SCOPE_OUT_OF_SCOPE);
    assert_int_equal(scope_check(s, "http://a.test/x.png", 19, 1, DB_KIND_REQUISITE),
                     SCOPE_ALLOWED);
    scope_free(s);
}

static void requisites_past_max_depth_and_same_host(void **state)
{
    (void)state;
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_depth = 2;
    o.requisite_depth = 3;
    scope *s = make_opts(&o, "http://a.test/");
    const char *img = "http://a.test/img/1.png", *cdn = "http://cdn.other/f.woff2";
    const char *page = "http://a.test/p.html";
    /* requisites get requisite_depth more levels, navigation links do not */
    assert_int_equal(scope_check(s, img, strlen(img), 5, DB_KIND_REQUISITE), SCOPE_ALLOWED);
    assert_int_equal(scope_check(s, img, strlen(img), 6, DB_KIND_REQUISITE), SCOPE_TOO_DEEP);
    assert_int_equal(scope_check(s, img, strlen(img), 3, DB_KIND_NAVIGATION), SCOPE_TOO_DEEP);
    /* any host: a CDN's font passes from a page of a.test */
    assert_int_equal(scope_check_requisite(s, cdn, strlen(cdn), 4, page, strlen(page)),
                     SCOPE_ALLOWED);
    scope_free(s);

    o.requisites_same_host = true;
    s = make_opts(&o, "http://a.test/");
    assert_int_equal(scope_check_requisite(s, cdn, strlen(cdn), 1, page, strlen(page)),
                     SCOPE_OUT_OF_SCOPE);
    /* the same host (another port is the same host) keeps the requisite pass */
    const char *img2 = "http://a.test:8080/img/2.png";
    assert_int_equal(scope_check_requisite(s, img2, strlen(img2), 5, page, strlen(page)),
                     SCOPE_ALLOWED);
    /* from a stylesheet on the CDN, the CDN's own fonts are its host's */
    const char *css = "http://cdn.other/site.css";
    assert_int_equal(scope_check_requisite(s, cdn, strlen(cdn), 2, css, strlen(css)),
                     SCOPE_ALLOWED);
    /* a bad referrer: checked as navigation */
    assert_int_equal(scope_check_requisite(s, cdn, strlen(cdn), 1, "nope", 4),
                     SCOPE_OUT_OF_SCOPE);
    scope_free(s);

    /* without fetch_requisites, requisites obey max_depth */
    o.fetch_requisites = false;
    s = make_opts(&o, "http://a.test/");
    assert_int_equal(scope_check(s, img, strlen(img), 3, DB_KIND_REQUISITE), SCOPE_TOO_DEEP);
    scope_free(s);
}

static void depth_limit(void **state)
{
    (void)state;
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_depth = 2;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/x", 0, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/x", 2, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/x", 3, SCOPE_TOO_DEEP);
    /* out of scope is reported before too deep */
    assert_verdict(s, "http://b.test/x", 3, SCOPE_OUT_OF_SCOPE);
    scope_free(s);

    o.max_depth = 0; /* seeds only */
    s = make_opts(&o, "http://a.test/");
    assert_int_equal(scope_check(s, "http://a.test/", 14, 0, DB_KIND_SEED), SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/x", 1, SCOPE_TOO_DEEP);
    scope_free(s);

    o.max_depth = -1; /* no limit */
    s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/x", 1000000, SCOPE_ALLOWED);
    scope_free(s);
}

/* ---- traps -------------------------------------------------------------- */

static void trap_url_length(void **state)
{
    (void)state;
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_url_length = 20;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/123456", 1, SCOPE_ALLOWED);   /* 20 bytes */
    assert_verdict(s, "http://a.test/1234567", 1, SCOPE_TRAP_URL_LENGTH);
    scope_free(s);
}

static void trap_path_depth_counts_slashes(void **state)
{
    (void)state;
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_path_depth = 3;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/a/b/c", 1, SCOPE_ALLOWED);        /* 3 */
    assert_verdict(s, "http://a.test/a/b/c?x=/1/2/3", 1, SCOPE_ALLOWED); /* query not counted */
    assert_verdict(s, "http://a.test/a/b/c/", 1, SCOPE_TRAP_PATH_DEPTH); /* 4 */
    assert_verdict(s, "http://a.test/a//b/", 1, SCOPE_TRAP_PATH_DEPTH);
    scope_free(s);
}

static void trap_repeated_segment_is_the_longest_run(void **state)
{
    (void)state;
    static const struct { const char *url; scope_verdict want; } cases[] = {
        { "http://a.test/loop/loop/", SCOPE_ALLOWED },          /* run 2 */
        { "http://a.test/loop/loop/loop/", SCOPE_TRAP_REPEATED_SEGMENT }, /* run 3 */
        { "http://a.test/loop/loop/x.html", SCOPE_ALLOWED },
        { "http://a.test/a/b/a/b/a/b/", SCOPE_ALLOWED },        /* never twice in a row */
        { "http://a.test/a/a/b/b/a/a/", SCOPE_ALLOWED },
        { "http://a.test/x/a/a/a", SCOPE_TRAP_REPEATED_SEGMENT },
        { "http://a.test/a//a//a/", SCOPE_ALLOWED },            /* "//" breaks a run */
        { "http://a.test/a/a?p=/a/a/a", SCOPE_ALLOWED },        /* the query is not path */
        { "http://a.test/aa/a/a", SCOPE_ALLOWED },
    };
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_repeated_segment = 2;
    scope *s = make_opts(&o, "http://a.test/");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_verdict(s, cases[i].url, 1, cases[i].want);
    scope_free(s);

    o.max_repeated_segment = 1; /* no segment twice in a row */
    s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/a/b/a/", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/a/b/b/", 1, SCOPE_TRAP_REPEATED_SEGMENT);
    scope_free(s);
}

static void trap_query_params(void **state)
{
    (void)state;
    scope_opts o;
    scope_opts_defaults(&o);
    o.max_query_params = 2;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/search", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/search?q=trap", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/search?f01=1&q=trap", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/search?f01=1&f02=1&q=trap", 1, SCOPE_TRAP_QUERY_PARAMS);
    scope_free(s);

    o.max_query_params = 0; /* no query at all */
    s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/search", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/search?q=1", 1, SCOPE_TRAP_QUERY_PARAMS);
    scope_free(s);
}

static void verdicts_are_counted_by_reason(void **state)
{
    (void)state;
    const char *exc[] = { "*/private/*" };
    scope_opts o;
    uint64_t c[SCOPE_VERDICT_COUNT];
    scope_opts_defaults(&o);
    o.exclude = exc;
    o.n_exclude = 1;
    o.max_depth = 5;
    o.max_url_length = 60;
    o.max_path_depth = 6;
    o.max_repeated_segment = 2;
    o.max_query_params = 1;
    scope *s = make_opts(&o, "http://a.test/");
    assert_verdict(s, "http://a.test/ok", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://a.test/ok2", 1, SCOPE_ALLOWED);
    assert_verdict(s, "http://b.test/", 1, SCOPE_OUT_OF_SCOPE);
    assert_verdict(s, "http://a.test/private/x", 1, SCOPE_EXCLUDED);
    assert_verdict(s, "http://a.test/deep", 6, SCOPE_TOO_DEEP);
    assert_verdict(s, "http://a.test/0123456789012345678901234567890123456789012345678", 1,
                   SCOPE_TRAP_URL_LENGTH);
    assert_verdict(s, "http://a.test/1/2/3/4/5/6/7", 1, SCOPE_TRAP_PATH_DEPTH);
    assert_verdict(s, "http://a.test/x/x/x", 1, SCOPE_TRAP_REPEATED_SEGMENT);
    assert_verdict(s, "http://a.test/?a=1&b=2", 1, SCOPE_TRAP_QUERY_PARAMS);
    assert_verdict(s, "http://a.test/?a=1&b=2&c", 1, SCOPE_TRAP_QUERY_PARAMS);
    scope_get_counts(s, c);
    assert_int_equal(c[SCOPE_ALLOWED], 2);
    assert_int_equal(c[SCOPE_OUT_OF_SCOPE], 1);
    assert_int_equal(c[SCOPE_EXCLUDED], 1);
    assert_int_equal(c[SCOPE_TOO_DEEP], 1);
    assert_int_equal(c[SCOPE_TRAP_URL_LENGTH], 1);
    assert_int_equal(c[SCOPE_TRAP_PATH_DEPTH], 1);
    assert_int_equal(c[SCOPE_TRAP_REPEATED_SEGMENT], 1);
    assert_int_equal(c[SCOPE_TRAP_QUERY_PARAMS], 2);
    /* scope_in_scope does not count */
    assert_int_equal(scope_in_scope(s, "http://a.test/ok", 16), 1);
    scope_get_counts(s, c);
    assert_int_equal(c[SCOPE_ALLOWED], 2);
    scope_free(s);
}

static void verdict_names(void **state)
{
    (void)state;
    assert_string_equal(scope_verdict_name(SCOPE_ALLOWED), "allowed");
    assert_string_equal(scope_verdict_name(SCOPE_OUT_OF_SCOPE), "out_of_scope");
    assert_string_equal(scope_verdict_name(SCOPE_EXCLUDED), "excluded");
    assert_string_equal(scope_verdict_name(SCOPE_TOO_DEEP), "too_deep");
    assert_string_equal(scope_verdict_name(SCOPE_TRAP_URL_LENGTH), "trap_url_length");
    assert_string_equal(scope_verdict_name(SCOPE_TRAP_PATH_DEPTH), "trap_path_depth");
    assert_string_equal(scope_verdict_name(SCOPE_TRAP_REPEATED_SEGMENT),
                        "trap_repeated_segment");
    assert_string_equal(scope_verdict_name(SCOPE_TRAP_QUERY_PARAMS), "trap_query_params");
    assert_string_equal(scope_verdict_name(SCOPE_VERDICT_COUNT), "unknown");
    assert_string_equal(scope_verdict_name(-1), "unknown");
}

/* ---- threads and memory ------------------------------------------------- */

#define ADD_HOSTS 2000

static void *adder(void *arg)
{
    scope *s = arg;
    char url[64];
    for (int i = 0; i < ADD_HOSTS; i++) {
        int n = snprintf(url, sizeof(url), "http://h%d.test/", i);
        if (scope_add_seed(s, url, (size_t)n) != 0)
            return (void *)1;
    }
    return NULL;
}

static void *checker(void *arg)
{
    scope *s = arg;
    char url[64];
    long allowed = 0;
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < ADD_HOSTS; i++) {
            int n = snprintf(url, sizeof(url), "http://h%d.test/page", i);
            allowed += scope_check(s, url, (size_t)n, 1, DB_KIND_NAVIGATION) == SCOPE_ALLOWED;
        }
    }
    return (void *)allowed;
}

static void seeds_added_while_others_check(void **state)
{
    (void)state;
    scope *s = make(SCOPE_MODE_HOST, NULL);
    pthread_t a, c1, c2;
    void *ra, *r1, *r2;
    assert_int_equal(pthread_create(&c1, NULL, checker, s), 0);
    assert_int_equal(pthread_create(&a, NULL, adder, s), 0);
    assert_int_equal(pthread_create(&c2, NULL, checker, s), 0);
    pthread_join(a, &ra);
    pthread_join(c1, &r1);
    pthread_join(c2, &r2);
    assert_null(ra);
    assert_int_equal(scope_seed_count(s), ADD_HOSTS);
    /* after the adder: every host is in scope */
    assert_int_equal((long)checker(s), 5L * ADD_HOSTS);
    uint64_t c[SCOPE_VERDICT_COUNT];
    scope_get_counts(s, c);
    assert_int_equal(c[SCOPE_ALLOWED] + c[SCOPE_OUT_OF_SCOPE], 3 * 5 * ADD_HOSTS);
    assert_int_equal(c[SCOPE_ALLOWED], (uint64_t)(long)r1 + (uint64_t)(long)r2 + 5 * ADD_HOSTS);
    scope_free(s);
}

static void out_of_memory(void **state)
{
    (void)state;
    const char *inc[] = { "http://x/*", "http://y/*" };
    scope_opts o;
    char err[128];
    scope *s = NULL;
    long n;
    scope_opts_defaults(&o);
    o.mode = SCOPE_MODE_PREFIX;
    o.include = inc;
    o.n_include = 2;
    o.exclude = inc;
    o.n_exclude = 1;
    for (n = 1; n < 100; n++) {
        cr_alloc_fail_after(n);
        s = scope_new(&o, err, sizeof(err));
        cr_alloc_fail_after(0);
        if (s != NULL)
            break;
        assert_non_null(strstr(err, "out of memory"));
    }
    assert_non_null(s);
    assert_true(n > 1);
    int rc = -ENOMEM;
    for (n = 1; n < 100 && rc == -ENOMEM; n++) {
        cr_alloc_fail_after(n);
        rc = scope_add_seed(s, "http://a.test/sec1/x", 20);
        cr_alloc_fail_after(0);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(scope_seed_count(s), 1);
    assert_verdict(s, "http://a.test/sec1/y", 1, SCOPE_ALLOWED);
    scope_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_mode_is_the_seeds_hosts),
        cmocka_unit_test(domain_mode_uses_the_public_suffix_list),
        cmocka_unit_test(registrable_domain_cases),
        cmocka_unit_test(domain_mode_keeps_ip_hosts_apart),
        cmocka_unit_test(prefix_mode_is_the_seed_up_to_its_last_slash),
        cmocka_unit_test(any_mode_takes_every_http_url),
        cmocka_unit_test(glob_matches_the_whole_url),
        cmocka_unit_test(include_widens_and_exclude_wins),
        cmocka_unit_test(bad_options_are_refused),
        cmocka_unit_test(requisites_come_from_any_host),
        cmocka_unit_test(requisites_past_max_depth_and_same_host),
        cmocka_unit_test(depth_limit),
        cmocka_unit_test(trap_url_length),
        cmocka_unit_test(trap_path_depth_counts_slashes),
        cmocka_unit_test(trap_repeated_segment_is_the_longest_run),
        cmocka_unit_test(trap_query_params),
        cmocka_unit_test(verdicts_are_counted_by_reason),
        cmocka_unit_test(verdict_names),
        cmocka_unit_test(the_last_hosts_verdict_goes_stale),
        cmocka_unit_test(seeds_added_while_others_check),
        cmocka_unit_test(out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
