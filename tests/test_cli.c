/* tests/test_cli: bin/crawld's command line: help, errors, exit codes,
 * check-config. Runs the real binary (CRAWLD_BIN). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cmocka.h>

#include "common/buf.h"
#include "storage/db.h"
#include "tests/support/testbuf.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"

typedef struct result {
    int rc;
    cr_buf out, err;
} result;

static result run(const char *const args[])
{
    result r;
    cr_buf_init(&r.out, 0);
    cr_buf_init(&r.err, 0);
    r.rc = proc_crawld(args, NULL, &r.out, &r.err);
    if (r.out.data == NULL)
        cr_buf_puts(&r.out, "");
    if (r.err.data == NULL)
        cr_buf_puts(&r.err, "");
    return r;
}

static void done(result *r)
{
    cr_buf_release(&r->out);
    cr_buf_release(&r->err);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static const char *const subcommands[] = { "run", "dedup", "stats", "report", "check-config", "cluster",
                                           "canon", "links", "robots" };

static void help_lists_every_subcommand(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "--help", NULL });
    assert_int_equal(r.rc, 0);
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        assert_non_null(strstr(r.out.data, subcommands[i]));
    done(&r);
}

static void every_subcommand_has_help(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++) {
        result r = run((const char *const[]){ subcommands[i], "--help", NULL });
        assert_int_equal(r.rc, 0);
        char want[64];
        snprintf(want, sizeof want, "usage: crawld %s", subcommands[i]);
        if (strstr(r.out.data, want) == NULL)
            fail_msg("%s --help printed: %s", subcommands[i], r.out.data);
        done(&r);
    }
}

static void no_arguments_is_a_usage_error(void **state)
{
    (void)state;
    result r = run((const char *const[]){ NULL });
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err.data, "usage:"));
    done(&r);
}

static void unknown_subcommand_is_one_line_exit_2(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "crawl", NULL });
    assert_int_equal(r.rc, 2);
    assert_int_equal(count_lines(r.err.data), 1);
    assert_string_equal(r.err.data, "crawld: unknown command 'crawl' (try 'crawld --help')\n");
    done(&r);
    r = run((const char *const[]){ "--verbose", NULL });
    assert_int_equal(r.rc, 2);
    assert_int_equal(count_lines(r.err.data), 1);
    done(&r);
}

static void unknown_flag_is_one_line_exit_2(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "check-config", "--frobnicate", NULL });
    assert_int_equal(r.rc, 2);
    assert_int_equal(count_lines(r.err.data), 1);
    assert_non_null(strstr(r.err.data, "'--frobnicate'"));
    done(&r);
    r = run((const char *const[]){ "check-config", "-c", NULL });
    assert_int_equal(r.rc, 2);
    assert_int_equal(count_lines(r.err.data), 1);
    done(&r);
}

static void every_subcommand_rejects_unknown_flags(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++) {
        result r = run((const char *const[]){ subcommands[i], "--bogus-flag-x", NULL });
        assert_int_equal(r.rc, 2);
        assert_int_equal(count_lines(r.err.data), 1);
        done(&r);
    }
}

static void check_config_accepts_a_good_file(void **state)
{
    (void)state;
    const char *t = "[fetch]\nthreads = 5\n";
    const char *p = proc_temp_file(0, t, strlen(t));
    result r = run((const char *const[]){ "check-config", "-c", p, NULL });
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out.data, "threads = 5\n"));
    assert_non_null(strstr(r.out.data, "configuration OK\n"));
    done(&r);
    unlink(p);
}

static void check_config_reports_file_line_col(void **state)
{
    (void)state;
    const char *t = "[fetch]\nthreads = 5\n\n[dedup]\n  fp_rat = 0.1\n";
    const char *p = proc_temp_file(0, t, strlen(t));
    result r = run((const char *const[]){ "check-config", "-c", p, NULL });
    assert_int_equal(r.rc, 1);
    char want[256];
    snprintf(want, sizeof want,
             "crawld check-config: %s:5:3: unknown key 'dedup.fp_rat'; did you mean "
             "'dedup.fp_rate'?\n",
             p);
    assert_string_equal(r.err.data, want);
    assert_int_equal(r.out.len, 0);
    done(&r);
    unlink(p);
}

static void check_config_set_overrides_file(void **state)
{
    (void)state;
    const char *t = "[fetch]\nthreads = 5\n";
    const char *p = proc_temp_file(0, t, strlen(t));
    result r = run((const char *const[]){ "check-config", "-c", p, "--set", "fetch.threads=6",
                                          "--set", "crawl.seeds=[\"http://a/\"]", NULL });
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out.data, "threads = 6\n"));
    assert_non_null(strstr(r.out.data, "seeds = [\"http://a/\"]\n"));
    done(&r);
    r = run((const char *const[]){ "check-config", "-c", p, "--set", "fetch.threads=0", NULL });
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err.data, "--set:1:7: fetch.threads = 0 is out of range"));
    done(&r);
    unlink(p);
}

static void check_config_syntax_only(void **state)
{
    (void)state;
    const char *t = "[whatever]\nkey = 1\n";
    const char *p = proc_temp_file(0, t, strlen(t));
    result r = run((const char *const[]){ "check-config", "-c", p, "--syntax-only", NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "configuration OK\n");
    done(&r);
    r = run((const char *const[]){ "check-config", "-c", p, NULL });
    assert_int_equal(r.rc, 1);
    done(&r);
    unlink(p);
}

static void check_config_missing_file(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "check-config", "-c", "/nonexistent.toml", NULL });
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err.data, "crawld check-config: /nonexistent.toml: cannot open: No "
                                    "such file or directory\n");
    done(&r);
}

static void defaults_print_a_loadable_config(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "check-config", "--defaults", NULL });
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out.data, "[dedup]\n"));
    assert_non_null(strstr(r.out.data, "# default: 0.01"));
    const char *p = proc_temp_file(0, r.out.data, r.out.len);
    result r2 = run((const char *const[]){ "check-config", "-c", p, NULL });
    assert_int_equal(r2.rc, 0);
    done(&r2);
    done(&r);
    unlink(p);
}

static void canon_prints_one_line_per_input(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "canon", "--base", "http://a.example/x/y",
                                          "HTTP://A.EXAMPLE:80/./a/../b?z=1&a=2&utm_source=q#f",
                                          "../c", "mailto:q@r", "//b.example", NULL });
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out.data, "http://a.example/b?a=2&z=1\n"
                                    "http://a.example/c\n"
                                    "-\tscheme is not http(s)\n"
                                    "http://b.example/\n");
    done(&r);
    r = run((const char *const[]){ "canon", "--", "http://x.example", NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "http://x.example/\n");
    done(&r);
    /* --form fetch: the URL as browsers parse it, the query as written */
    r = run((const char *const[]){ "canon", "--form", "fetch", "--base", "http://a.example/x/y",
                                   "HTTP://A.EXAMPLE:80/./a/../b?z=1&a=2&utm_source=q#f",
                                   "http:c", "http://B\xc3\x9c" "CHER.test/", NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "http://a.example/b?z=1&a=2&utm_source=q\n"
                                    "http://a.example/x/c\n"
                                    "http://xn--bcher-kva.test/\n");
    done(&r);
    r = run((const char *const[]){ "canon", "--form", "fetch", "--form", "key", "http://a/?b&a",
                                   NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "http://a/?a&b\n");
    done(&r);
    r = run((const char *const[]){ "canon", "--form", "href", "http://a/", NULL });
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err.data, "--form is key or fetch"));
    done(&r);
}

static void canon_policy_comes_from_config(void **state)
{
    (void)state;
    result r = run((const char *const[]){ "canon", "--set", "canon.sort_query=false", "--set",
                                          "canon.strip_params=[]", "http://a.example/?z=1&utm_x=2&a=3",
                                          NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "http://a.example/?z=1&utm_x=2&a=3\n");
    done(&r);
}

static void links_prints_kind_and_fetch_form(void **state)
{
    (void)state;
    const char *html = "<html><head><base href=\"/d/\"></head><body>"
                       "<a href=\"x.html#f\">x</a><img srcset=\"a.png 1x, b.png 2x\">"
                       "<a href=\"mailto:q\">m</a>"
                       "<link rel=\"stylesheet\" href=\"//cdn.example/s.css\">"
                       "<a href=\"?utm_source=x&amp;b=2&amp;a=1\">q</a>"
                       "<a href=\"http://1.2.3.256/\">ip</a><a href=\"http:z\">z</a>"
                       "</body></html>";
    const char *p = proc_temp_file(0, html, strlen(html));
    result r = run((const char *const[]){ "links", "--base", "http://Example.com/p/q.html", p,
                                          NULL });
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "a\thttp://example.com/d/x.html\n"
                                    "img\thttp://example.com/d/a.png\n"
                                    "img\thttp://example.com/d/b.png\n"
                                    "link:stylesheet\thttp://cdn.example/s.css\n"
                                    "a\thttp://example.com/d/?utm_source=x&b=2&a=1\n"
                                    "a\thttp://example.com/d/z\n");
    assert_non_null(strstr(r.err.data, "2 rejected by canonicalization (scheme 1, bad_ipv4 1)"));
    done(&r);
    unlink(p);
    r = run((const char *const[]){ "links", "/nonexistent.html", NULL });
    assert_int_equal(r.rc, 1);
    assert_non_null(strstr(r.err.data, "cannot open /nonexistent.html"));
    done(&r);
    r = run((const char *const[]){ "links", NULL });
    assert_int_equal(r.rc, 2);
    done(&r);
}

static void robots_decides_from_a_file(void **state)
{
    (void)state;
    const char *txt = "User-agent: *\nDisallow: /private/\n\nUser-agent: crawld\nDisallow: /x$\n";
    const char *p = proc_temp_file(0, txt, strlen(txt));
    result r = run((const char *const[]){ "robots", "--file", p, "http://a.example/private/1",
                                          "http://a.example/x", "http://a.example/x/y", NULL });
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out.data, "allowed\thttp://a.example/private/1\t-\n"
                                    "disallowed\thttp://a.example/x\tdisallow: /x$\n"
                                    "allowed\thttp://a.example/x/y\t-\n");
    done(&r);
    r = run((const char *const[]){ "robots", "--file", p, "--agent", "other",
                                   "http://a.example/private/1", NULL });
    assert_string_equal(r.out.data, "disallowed\thttp://a.example/private/1\tdisallow: /private/\n");
    done(&r);
    r = run((const char *const[]){ "robots", "http://a.example/", NULL });
    assert_int_equal(r.rc, 2);
    done(&r);
    unlink(p);
}

/* --url fetches as the crawler does: 2xx rules, 4xx allow all, 5xx disallow all. */
static void robots_fetches_from_the_site(void **state)
{
    (void)state;
    testsite ts;
    assert_int_equal(testsite_start(&ts, (const char *const[]){ "--pages", "20", NULL }), 0);
    const char *host[] = { "a.test", "c.test", "d.test" };
    const char *want[] = { "disallowed", "allowed", "disallowed" };
    for (int i = 0; i < 3; i++) {
        char pin[128], set[160], origin[128], url[160];
        testsite_resolve(&ts, host[i], pin, sizeof pin);
        snprintf(set, sizeof set, "fetch.resolve=[\"%s\"]", pin);
        testsite_url(&ts, host[i], "/", origin, sizeof origin);
        testsite_url(&ts, host[i], "/private/1.html", url, sizeof url);
        result r = run((const char *const[]){ "robots", "--set", set, "--url", origin, url, NULL });
        if (strncmp(r.out.data, want[i], strlen(want[i])) != 0)
            fail_msg("%s: %s (stderr %s)", host[i], r.out.data, r.err.data);
        done(&r);
    }
    testsite_stop(&ts);
}

/* Every value option of every subcommand, given last with no value, gets
 * the same one-line error and exit 2 (one option table, one parser). */
static void missing_value_is_handled_the_same_everywhere(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        { "run", "--seeds" },        { "dedup", "--verify" },   { "dedup", "--state" },
        { "dedup", "--stats-json" }, { "stats", "--state" },    { "report", "--state" },
        { "report", "-o" },          { "report", "--output" },  { "check-config", "-c" },
        { "check-config", "--set" }, { "canon", "--base" },     { "links", "--base" },
        { "links", "--content-type" }, { "robots", "--file" },  { "robots", "--url" },
        { "robots", "--agent" },     { "run", "--config" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *args[] = { cases[k][0], cases[k][1], NULL };
        result r = run(args);
        char want[160];
        snprintf(want, sizeof want, "crawld %s: option '%s' needs a value", cases[k][0],
                 cases[k][1]);
        if (r.rc != 2 || strncmp(r.err.data, want, strlen(want)) != 0 || count_lines(r.err.data) != 1)
            fail_msg("crawld %s %s: exit %d, stderr '%s'", cases[k][0], cases[k][1], r.rc,
                     r.err.data);
        done(&r);
    }
}

/* --name=value works for every value option; a flag given a value is an error. */
static void equals_form_and_flag_values(void **state)
{
    (void)state;
    const char *a1[] = { "canon", "--base=http://a.example/x/", "y", NULL };
    result r = run(a1);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "http://a.example/x/y\n");
    done(&r);
    const char *a2[] = { "stats", "--json=yes", NULL };
    r = run(a2);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err.data, "crawld stats: option '--json' takes no value"));
    done(&r);
    const char *a3[] = { "links", "a.html", "b.html", NULL };
    r = run(a3);
    assert_int_equal(r.rc, 2);
    assert_non_null(strstr(r.err.data, "'b.html' is a second"));
    done(&r);
    const char *a4[] = { "report", "--help", NULL }; /* options listed from the table */
    r = run(a4);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.out.data, "-o, --output FILE"));
    assert_non_null(strstr(r.out.data, "--state DIR"));
    done(&r);
}

/* A state folder whose stored figures are value (NULL: none). */
static void make_state(char *dir, size_t len, const char *value)
{
    char err[256];
    snprintf(dir, len, "/tmp/crawld-cli-stats-XXXXXX");
    assert_non_null(mkdtemp(dir));
    db *d = db_open(dir, NULL, err, sizeof err);
    assert_non_null(d);
    if (value != NULL && strlen(value) < 60000)
        assert_int_equal(db_put_meta(d, "stats", value), 0);
    assert_int_equal(db_close(d), 0);
    if (value != NULL && strlen(value) >= 60000) { /* past what db_put_meta takes */
        char path[512];
        sqlite3 *h = NULL;
        sqlite3_stmt *st = NULL;
        snprintf(path, sizeof path, "%s/crawld.db", dir);
        assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
        assert_int_equal(sqlite3_prepare_v2(h, "INSERT OR REPLACE INTO meta(key, value) VALUES('stats', ?)",
                                            -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        sqlite3_close(h);
    }
}

static void remove_state(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* crawld stats says why it shows no figures: unreadable or too large. */
static void stats_says_why_figures_are_missing(void **state)
{
    (void)state;
    char dir[64];
    make_state(dir, sizeof dir, "{\"pages\": 3, broken");
    const char *a1[] = { "stats", "--state", dir, NULL };
    result r = run(a1);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.err.data, "the stored figures are not readable"));
    assert_non_null(strstr(r.out.data, "database ("));
    done(&r);
    remove_state(dir);

    size_t big = (size_t)3 << 19; /* 1.5 MiB of valid JSON */
    char *v = malloc(big + 1);
    assert_non_null(v);
    memset(v, ' ', big);
    memcpy(v, "{\"pages\": 3}", 12);
    v[big] = '\0';
    make_state(dir, sizeof dir, v);
    free(v);
    result r2 = run(a1);
    assert_int_equal(r2.rc, 0);
    assert_non_null(strstr(r2.err.data, "were not read"));
    assert_non_null(strstr(r2.out.data, "database ("));
    done(&r2);
    remove_state(dir);

    make_state(dir, sizeof dir, NULL); /* no figures yet: no complaint */
    result r3 = run(a1);
    assert_int_equal(r3.rc, 0);
    assert_null(strstr(r3.err.data, "stored figures"));
    done(&r3);
    remove_state(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stats_says_why_figures_are_missing),
        cmocka_unit_test(missing_value_is_handled_the_same_everywhere),
        cmocka_unit_test(equals_form_and_flag_values),
        cmocka_unit_test(help_lists_every_subcommand),
        cmocka_unit_test(every_subcommand_has_help),
        cmocka_unit_test(no_arguments_is_a_usage_error),
        cmocka_unit_test(unknown_subcommand_is_one_line_exit_2),
        cmocka_unit_test(unknown_flag_is_one_line_exit_2),
        cmocka_unit_test(every_subcommand_rejects_unknown_flags),
        cmocka_unit_test(check_config_accepts_a_good_file),
        cmocka_unit_test(check_config_reports_file_line_col),
        cmocka_unit_test(check_config_set_overrides_file),
        cmocka_unit_test(check_config_syntax_only),
        cmocka_unit_test(check_config_missing_file),
        cmocka_unit_test(defaults_print_a_loadable_config),
        cmocka_unit_test(canon_prints_one_line_per_input),
        cmocka_unit_test(canon_policy_comes_from_config),
        cmocka_unit_test(links_prints_kind_and_fetch_form),
        cmocka_unit_test(robots_decides_from_a_file),
        cmocka_unit_test(robots_fetches_from_the_site),
    };
    return cmocka_run_group_tests_name("cli", tests, NULL, NULL);
}
