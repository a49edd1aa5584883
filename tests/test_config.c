/* tests/test_config: the option table, loading, --set, errors, writing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "config/config.h"
#include "config/toml.h"
#include "crawler/web/url.h"
#include "crawler/wire.h"
#include "frontier/scope.h"
#include "tests/support/proc.h"

static crawl_config cfg;

static int setup(void **state)
{
    (void)state;
    return config_init(&cfg);
}

static int teardown(void **state)
{
    (void)state;
    config_release(&cfg);
    return 0;
}

static int load(const char *text, config_error *err)
{
    return config_load_text(&cfg, "x.toml", text, strlen(text), false, err);
}

static void expect_error(const char *text, const char *msg)
{
    config_error err;
    assert_true(load(text, &err) < 0);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("for %s\n  got:  %s\n  want: %s", text, err.msg, msg);
}

static void defaults_are_set(void **state)
{
    (void)state;
    assert_int_equal(cfg.fetch.threads, 2);
    assert_true(cfg.dedup.fp_rate == 0.01);
    assert_int_equal(cfg.dedup.verify, VERIFY_IN_SCOPE);
    assert_int_equal(cfg.crawl.scope, SCOPE_HOST);
    assert_int_equal(cfg.canon.strip_params.n, 3);
    assert_string_equal(cfg.canon.strip_params.v[0], "utm_*");
    assert_string_equal(cfg.storage.state_dir, "state");
    assert_int_equal(cfg.crawl.seeds.n, 0);
    assert_false(cfg.crawl.follow_nofollow);
    assert_true(cfg.politeness.obey_robots);
    assert_int_equal(cfg.canon.max_url_bytes, 2048);
}

static void file_values_override_defaults(void **state)
{
    (void)state;
    config_error err;
    int rc = load("[crawl]\nseeds = [\"http://a/\", \"http://b/\"]\nscope = \"domain\"\n"
                  "[fetch]\nthreads = 4\n[dedup]\nfp_rate = 0.001\ngrowth = 3\nverify = \"always\"\n",
                  &err);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.crawl.seeds.n, 2);
    assert_string_equal(cfg.crawl.seeds.v[1], "http://b/");
    assert_int_equal(cfg.crawl.scope, SCOPE_DOMAIN);
    assert_int_equal(cfg.fetch.threads, 4);
    assert_true(cfg.dedup.fp_rate == 0.001);
    assert_true(cfg.dedup.growth == 3.0);
    assert_int_equal(cfg.dedup.verify, VERIFY_ALWAYS);
}

static void dotted_keys_reach_options(void **state)
{
    (void)state;
    config_error err;
    assert_int_equal(load("fetch.threads = 7\ndedup = { shards = 32 }\n", &err), 0);
    assert_int_equal(cfg.fetch.threads, 7);
    assert_int_equal(cfg.dedup.shards, 32);
}

static void unknown_key_suggests_nearest(void **state)
{
    (void)state;
    expect_error("[fetch]\nthread = 3\n",
                 "x.toml:2:1: unknown key 'fetch.thread'; did you mean 'fetch.threads'?");
    expect_error("[dedup]\n  fprate = 0.1\n",
                 "x.toml:2:3: unknown key 'dedup.fprate'; did you mean 'dedup.fp_rate'?");
}

static void unknown_section_suggests_nearest(void **state)
{
    (void)state;
    expect_error("[fech]\nthreads = 1\n", "x.toml:1:2: unknown section 'fech'; did you mean 'fetch'?");
}

static void wrong_type_is_an_error(void **state)
{
    (void)state;
    expect_error("[fetch]\nthreads = \"2\"\n",
                 "x.toml:2:1: fetch.threads must be an integer, not string");
    expect_error("[crawl]\nseeds = \"http://a/\"\n",
                 "x.toml:2:1: crawl.seeds must be an array of strings, not string");
    expect_error("[crawl]\nseeds = [1]\n",
                 "x.toml:2:10: crawl.seeds[0] must be a string, not integer");
    expect_error("crawl = 1\n", "x.toml:1:1: 'crawl' must be a table of options, not integer");
}

static void out_of_range_is_an_error(void **state)
{
    (void)state;
    expect_error("[fetch]\nthreads = 0\n", "x.toml:2:1: fetch.threads = 0 is out of range 1..64");
    expect_error("[dedup]\nfp_rate = 1\n", "x.toml:2:1: dedup.fp_rate = 1 is out of range 1e-09..0.5");
    expect_error("[dedup]\nfp_rate = nan\n",
                 "x.toml:2:1: dedup.fp_rate = nan is out of range 1e-09..0.5");
    expect_error("[dedup]\nverify = \"sometimes\"\n",
                 "x.toml:2:1: dedup.verify: 'sometimes' is not one of never, always, in-scope");
}

/* fetch.connections takes an integer in range or "auto" (its default), with
 * the same strict checks and error positions as any integer option. */
static void integer_or_auto(void **state)
{
    (void)state;
    config_error err;
    assert_int_equal(cfg.fetch.connections, CONFIG_AUTO);
    assert_int_equal(load("[fetch]\nconnections = 300\n", &err), 0);
    assert_int_equal(cfg.fetch.connections, 300);
    assert_int_equal(config_set(&cfg, "fetch.connections = \"auto\"", &err), 0);
    assert_int_equal(cfg.fetch.connections, CONFIG_AUTO);
    expect_error("[fetch]\n connections = \"Auto\"\n",
                 "x.toml:2:2: fetch.connections must be an integer or \"auto\", not 'Auto'");
    expect_error("[fetch]\nconnections = 2.5\n",
                 "x.toml:2:1: fetch.connections must be an integer or \"auto\", not float");
    expect_error("[fetch]\nconnections = [\"auto\"]\n",
                 "x.toml:2:1: fetch.connections must be an integer or \"auto\", not array");
    expect_error("[fetch]\nconnections = 0\n",
                 "x.toml:2:1: fetch.connections = 0 is out of range 1..65536");
    assert_true(config_set(&cfg, "fetch.connections=\"\"", &err) < 0);
    assert_string_equal(err.msg,
                        "--set:1:7: fetch.connections must be an integer or \"auto\", not ''");
    assert_int_equal(cfg.fetch.connections, CONFIG_AUTO); /* the failures changed nothing */

    /* written back as it was given, and read again the same */
    assert_int_equal(load("[fetch]\nconnections = 77\n", &err), 0);
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    assert_int_equal(config_write(&cfg, f, true), 0);
    fclose(f);
    assert_non_null(strstr(p, "\nconnections = 77\n"));
    assert_non_null(strstr(p, "# default: \"auto\"; range 1..65536 or \"auto\"\n"));
    free(p);
    assert_int_equal(load("[fetch]\nconnections = \"auto\"\n", &err), 0);
    p = NULL;
    f = open_memstream(&p, &n);
    assert_int_equal(config_write(&cfg, f, false), 0);
    fclose(f);
    assert_non_null(strstr(p, "\nconnections = \"auto\"\n"));
    free(p);
}

static void nul_in_string_is_rejected(void **state)
{
    (void)state;
    expect_error("[crawl]\nuser_agent = \"a\\u0000b\"\n",
                 "x.toml:2:1: crawl.user_agent: strings must not contain NUL");
}

static void bad_document_changes_nothing(void **state)
{
    (void)state;
    config_error err;
    assert_true(load("[fetch]\nthreads = 9\nconnections = 0\n", &err) < 0);
    assert_int_equal(cfg.fetch.threads, 2);
    assert_int_equal(cfg.fetch.connections, CONFIG_AUTO);
}

static void toml_errors_carry_position(void **state)
{
    (void)state;
    config_error err;
    assert_true(load("[fetch]\nthreads = 3\nthreads = 4\n", &err) < 0);
    assert_non_null(strstr(err.msg, "x.toml:3:"));
    assert_true(load("[crawl]\nuser_agent = \"abc\n", &err) < 0);
    assert_non_null(strstr(err.msg, "x.toml:2:"));
}

static void set_overrides(void **state)
{
    (void)state;
    config_error err;
    assert_int_equal(config_set(&cfg, "dedup.fp_rate=0.001", &err), 0);
    assert_true(cfg.dedup.fp_rate == 0.001);
    assert_int_equal(config_set(&cfg, "crawl.seeds=[\"http://a/\"]", &err), 0);
    assert_int_equal(cfg.crawl.seeds.n, 1);
    assert_string_equal(cfg.crawl.seeds.v[0], "http://a/");
    assert_int_equal(config_set(&cfg, "crawl.scope = 'any'", &err), 0);
    assert_int_equal(cfg.crawl.scope, SCOPE_ANY);
}

/* canon.max_url_bytes has url.c's range, enforced where it is read, and
 * url and scope get the same value. */
static void max_url_bytes_range_is_urls(void **state)
{
    (void)state;
    config_error err;
    assert_true(config_set(&cfg, "canon.max_url_bytes=63", &err) < 0);
    assert_non_null(strstr(err.msg, "max_url_bytes"));
    assert_true(config_set(&cfg, "canon.max_url_bytes=65537", &err) < 0);
    assert_int_equal(config_set(&cfg, "canon.max_url_bytes=64", &err), 0);
    assert_int_equal(config_set(&cfg, "canon.max_url_bytes=65536", &err), 0);
    url_policy pol;
    scope_opts so;
    wire_url_policy(&cfg, &pol);
    wire_scope_opts(&cfg, &so);
    assert_int_equal(pol.max_url_bytes, 65536);
    assert_int_equal(so.max_url_length, 65536);
    url_canon *uc = url_canon_new(&pol); /* url.c takes every value config takes */
    assert_non_null(uc);
    url_canon_free(uc);
    pol.max_url_bytes = URL_MAX_BYTES + 1; /* and refuses, not clamps, the rest */
    assert_null(url_canon_new(&pol));
    pol.max_url_bytes = URL_MIN_BYTES - 1;
    assert_null(url_canon_new(&pol));
}

static void set_errors(void **state)
{
    (void)state;
    config_error err;
    assert_true(config_set(&cfg, "fetch.threads", &err) < 0);
    assert_string_equal(err.msg, "--set: 'fetch.threads' is not section.key=value");
    assert_true(config_set(&cfg, "fetch.threds=3", &err) < 0);
    assert_string_equal(err.msg,
                        "--set:1:7: unknown key 'fetch.threds'; did you mean 'fetch.threads'?");
    assert_true(config_set(&cfg, "fetch.threads=abc", &err) < 0);
    assert_non_null(strstr(err.msg, "--set:1:"));
    assert_true(config_set(&cfg, "threads=3", &err) < 0);
    assert_non_null(strstr(err.msg, "unknown section 'threads'"));
}

static void syntax_only_ignores_unknown_keys(void **state)
{
    (void)state;
    config_error err;
    const char *t = "[nope]\nwhat = 1\n";
    assert_int_equal(config_load_text(&cfg, "x.toml", t, strlen(t), true, &err), 0);
    t = "[nope\n";
    assert_true(config_load_text(&cfg, "x.toml", t, strlen(t), true, &err) < 0);
}

static char *write_to_string(const crawl_config *c, bool docs)
{
    char *p = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&p, &n);
    assert_non_null(f);
    assert_int_equal(config_write(c, f, docs), 0);
    fclose(f);
    return p;
}

static void write_round_trips(void **state)
{
    (void)state;
    config_error err;
    assert_int_equal(load("[crawl]\nseeds = [\"http://a/\\\"q\\\"\", \"x\\ty\"]\n"
                          "[politeness]\ndelay_factor = 0.1\n[dedup]\ntightening = 0.9\n",
                          &err),
                     0);
    char *first = write_to_string(&cfg, true);
    crawl_config again;
    assert_int_equal(config_init(&again), 0);
    assert_int_equal(config_load_text(&again, "w", first, strlen(first), false, &err), 0);
    char *second = write_to_string(&again, true);
    assert_string_equal(first, second);
    assert_true(again.politeness.delay_factor == 0.1);
    assert_string_equal(again.crawl.seeds.v[0], "http://a/\"q\"");
    free(first);
    free(second);
    config_release(&again);
}

/* The shipped crawl.toml holds every option the code knows, and loads. */
static void shipped_crawl_toml_is_complete(void **state)
{
    (void)state;
    const char *root = getenv("CRAWLD_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/crawl.toml", root ? root : ".");
    config_error err;
    int rc = config_load_file(&cfg, path, false, &err);
    if (rc < 0)
        fail_msg("%s", err.msg);
    char *all = write_to_string(&cfg, false);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    toml_error terr;
    toml_value *shipped = toml_parse(text, n, &terr);
    toml_value *every = toml_parse(all, strlen(all), &terr);
    assert_non_null(shipped);
    assert_non_null(every);
    size_t options = 0;
    for (size_t i = 0; i < toml_count(every); i++) {
        const char *sec = toml_key_at(every, i);
        const toml_value *s = toml_get(shipped, sec);
        if (s == NULL)
            fail_msg("crawl.toml lacks section [%s]", sec);
        for (size_t j = 0; j < toml_count(toml_at(every, i)); j++) {
            const char *key = toml_key_at(toml_at(every, i), j);
            if (toml_get(s, key) == NULL)
                fail_msg("crawl.toml lacks %s.%s", sec, key);
            options++;
        }
    }
    assert_true(options > 40);
    toml_free(shipped);
    toml_free(every);
    free(all);
}

static void file_errors_are_clear(void **state)
{
    (void)state;
    config_error err;
    assert_true(config_load_file(&cfg, "/nonexistent/crawl.toml", false, &err) < 0);
    assert_string_equal(err.msg, "/nonexistent/crawl.toml: cannot open: No such file or directory");
    assert_true(config_load_file(&cfg, "/tmp", false, &err) < 0);
    assert_string_equal(err.msg, "/tmp: is a directory, not a configuration file");

    /* 100 MB (sparse): refused by size before reading */
    const char *big = proc_temp_file(0, "", 0);
    assert_non_null(big);
    assert_int_equal(truncate(big, 100 << 20), 0);
    assert_true(config_load_file(&cfg, big, false, &err) < 0);
    assert_non_null(strstr(err.msg, "file too large"));
    unlink(big);

    /* binary: a TOML error with a position, not a crash */
    char bin[4096];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (char)((i * 7919u) >> 3);
    const char *b = proc_temp_file(1, bin, sizeof bin);
    assert_true(config_load_file(&cfg, b, false, &err) < 0);
    assert_non_null(strstr(err.msg, b));
    assert_non_null(strstr(err.msg, ":1:"));
    unlink(b);
}

static void deep_nesting_is_an_error(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *t = malloc(2 * depth + 64);
    assert_non_null(t);
    size_t n = (size_t)snprintf(t, 64, "[crawl]\nseeds = ");
    memset(t + n, '[', depth);
    memset(t + n + depth, ']', depth);
    t[n + 2 * depth] = '\0';
    config_error err;
    assert_true(load(t, &err) < 0);
    assert_non_null(strstr(err.msg, "x.toml:2:"));
    free(t);
}

/* [recrawl]: defaults keep the one pass; rules are PATTERN=SECONDS, each
 * bad one named with its position; min_s above max_s is refused. */
static void recrawl_section(void **state)
{
    (void)state;
    assert_int_equal(cfg.recrawl.after_s, 0);
    assert_false(cfg.recrawl.adaptive);
    assert_int_equal(cfg.recrawl.min_s, 60);
    assert_int_equal(cfg.recrawl.max_s, 2592000);
    config_error err;
    assert_int_equal(load("[recrawl]\nafter_s = 86400\nadaptive = true\n"
                          "rules = [\"/news/*=3600\", \"http://a.test/x=a=7\"]\n", &err), 0);
    assert_int_equal(cfg.recrawl.after_s, 86400);
    assert_true(cfg.recrawl.adaptive);
    assert_int_equal(cfg.recrawl.rules.n, 2);
    size_t pl;
    int64_t secs;
    assert_int_equal(config_recrawl_rule(cfg.recrawl.rules.v[1], &pl, &secs), 0);
    assert_int_equal(pl, strlen("http://a.test/x=a"));
    assert_int_equal(secs, 7);
    assert_int_equal(config_recrawl_rule("=5", &pl, &secs), -EINVAL);
    assert_int_equal(config_recrawl_rule("/x=", &pl, &secs), -EINVAL);
    assert_int_equal(config_recrawl_rule("/x=0", &pl, &secs), -EINVAL);
    assert_int_equal(config_recrawl_rule("/x=99999999999", &pl, &secs), -EINVAL);
    assert_int_equal(config_recrawl_rule("/x=1h", &pl, &secs), -EINVAL);
    expect_error("[recrawl]\nrules = [\"/a=1\", \"/news/*\"]\n",
                 "x.toml:2:18: recrawl.rules[1] = \"/news/*\" is not PATTERN=SECONDS"
                 " (SECONDS 1..315360000)");
    expect_error("[recrawl]\nmin_s = 100\nmax_s = 50\n",
                 "x.toml:1:2: recrawl.min_s (100) is above recrawl.max_s (50)");
    expect_error("[recrawl]\nafter_s = -1\n",
                 "x.toml:2:1: recrawl.after_s = -1 is out of range 0..315360000");
}

static void init_survives_out_of_memory(void **state)
{
    (void)state;
    for (long n = 1;; n++) {
        crawl_config c;
        cr_alloc_fail_after(n);
        int rc = config_init(&c);
        long failed = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (rc == 0) {
            assert_int_equal(failed, 0);
            config_release(&c);
            break;
        }
        assert_int_equal(rc, -12);
        assert_true(n < 100000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(defaults_are_set, setup, teardown),
        cmocka_unit_test_setup_teardown(max_url_bytes_range_is_urls, setup, teardown),
        cmocka_unit_test_setup_teardown(file_values_override_defaults, setup, teardown),
        cmocka_unit_test_setup_teardown(dotted_keys_reach_options, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_key_suggests_nearest, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_section_suggests_nearest, setup, teardown),
        cmocka_unit_test_setup_teardown(wrong_type_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_range_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(integer_or_auto, setup, teardown),
        cmocka_unit_test_setup_teardown(nul_in_string_is_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_document_changes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(toml_errors_carry_position, setup, teardown),
        cmocka_unit_test_setup_teardown(set_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(set_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(syntax_only_ignores_unknown_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(write_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(shipped_crawl_toml_is_complete, setup, teardown),
        cmocka_unit_test_setup_teardown(file_errors_are_clear, setup, teardown),
        cmocka_unit_test_setup_teardown(deep_nesting_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(recrawl_section, setup, teardown),
        cmocka_unit_test(init_survives_out_of_memory),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
