/* tests/test_schedule: frontier/schedule, the re-crawl interval policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "frontier/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define U(s) s, strlen(s)

static void test_one_pass_schedules_nothing(void **state)
{
    (void)state;
    schedule_opts o = { .after_s = 0, .min_s = 60, .max_s = 3600 };
    schedule *s = schedule_new(&o);
    assert_non_null(s);
    assert_false(schedule_enabled(s));
    assert_int_equal(schedule_base_s(s, U("http://a.test/")), 0);
    assert_int_equal(schedule_next_s(s, U("http://a.test/"), 0, SCHEDULE_FIRST), 0);
    schedule_free(s);
}

/* Rules override after_s, first match wins; a pattern with "://" globs the
 * whole URL, others the path and query. */
static void test_rules_override(void **state)
{
    (void)state;
    schedule_rule r[] = {
        { U("/news/*"), 3600 },
        { U("http://b.test/*"), 7 },
        { U("*?page=*"), 99 },
    };
    schedule_opts o = { .after_s = 86400, .min_s = 1, .max_s = 864000, .rules = r, .n_rules = 3 };
    schedule *s = schedule_new(&o);
    assert_true(schedule_enabled(s));
    assert_int_equal(schedule_base_s(s, U("http://a.test/news/x.html")), 3600);
    assert_int_equal(schedule_base_s(s, U("http://a.test/news")), 86400);
    assert_int_equal(schedule_base_s(s, U("http://b.test/news/x")), 3600);
    assert_int_equal(schedule_base_s(s, U("http://b.test/other")), 7);
    assert_int_equal(schedule_base_s(s, U("http://a.test/list?page=2")), 99);
    assert_int_equal(schedule_base_s(s, U("http://a.test:8080/news/")), 3600);
    /* without adaptive the base is the interval whatever was found */
    assert_int_equal(schedule_next_s(s, U("http://a.test/news/1"), 3600, SCHEDULE_CHANGED), 3600);
    assert_int_equal(schedule_next_s(s, U("http://a.test/news/1"), 3600, SCHEDULE_GONE), 0);
    schedule_free(s);
}

/* Adaptive: changed halves, unchanged doubles, within [min_s, max_s]; the
 * first fetch starts from the base. */
static void test_adaptive_moves_and_clamps(void **state)
{
    (void)state;
    schedule_opts o = { .after_s = 1000, .min_s = 300, .max_s = 3000, .adaptive = true };
    schedule *s = schedule_new(&o);
    const char *u = "http://a.test/p";
    assert_int_equal(schedule_next_s(s, U(u), 0, SCHEDULE_FIRST), 1000);
    assert_int_equal(schedule_next_s(s, U(u), 1000, SCHEDULE_CHANGED), 500);
    assert_int_equal(schedule_next_s(s, U(u), 500, SCHEDULE_CHANGED), 300);
    assert_int_equal(schedule_next_s(s, U(u), 300, SCHEDULE_CHANGED), 300);
    assert_int_equal(schedule_next_s(s, U(u), 1000, SCHEDULE_UNCHANGED), 2000);
    assert_int_equal(schedule_next_s(s, U(u), 2000, SCHEDULE_UNCHANGED), 3000);
    assert_int_equal(schedule_next_s(s, U(u), 3000, SCHEDULE_UNCHANGED), 3000);
    assert_int_equal(schedule_next_s(s, U(u), 2000, SCHEDULE_OTHER), 2000);
    assert_int_equal(schedule_next_s(s, U(u), 2000, SCHEDULE_GONE), 0);
    /* no overflow at the top of the range */
    schedule_opts big = { .after_s = 1, .min_s = 1, .max_s = INT64_MAX, .adaptive = true };
    schedule *b = schedule_new(&big);
    assert_int_equal(schedule_next_s(b, U(u), INT64_MAX / 2 + 1, SCHEDULE_UNCHANGED), INT64_MAX);
    schedule_free(b);
    schedule_free(s);
}

static void test_bad_options(void **state)
{
    (void)state;
    schedule_opts o = { .after_s = 1, .min_s = 10, .max_s = 5 };
    assert_null(schedule_new(&o));
    o.max_s = 20;
    o.min_s = 0;
    assert_null(schedule_new(&o));
    schedule_rule r = { U("/x"), 0 };
    schedule_opts o2 = { .after_s = 1, .min_s = 1, .max_s = 5, .rules = &r, .n_rules = 1 };
    assert_null(schedule_new(&o2));
    assert_null(schedule_new(NULL));
}

/* The glob against a plain recursive reference matcher, on random inputs
 * over a small alphabet (seed printed; SCHEDULE_SEED replays). */
static bool ref_glob(const char *p, size_t pl, const char *t, size_t tl)
{
    if (pl == 0)
        return tl == 0;
    if (p[0] == '*')
        return ref_glob(p + 1, pl - 1, t, tl) || (tl > 0 && ref_glob(p, pl, t + 1, tl - 1));
    return tl > 0 && p[0] == t[0] && ref_glob(p + 1, pl - 1, t + 1, tl - 1);
}

static void test_glob_matches_reference(void **state)
{
    (void)state;
    const char *env = getenv("SCHEDULE_SEED");
    unsigned seed = env ? (unsigned)strtoul(env, NULL, 10) : 20261202u;
    printf("test_glob_matches_reference: SCHEDULE_SEED=%u\n", seed);
    srand(seed);
    char p[12], t[14];
    for (int n = 0; n < 20000; n++) {
        size_t pl = (size_t)rand() % sizeof p, tl = (size_t)rand() % sizeof t;
        for (size_t i = 0; i < pl; i++)
            p[i] = "ab*/"[rand() % 4];
        for (size_t i = 0; i < tl; i++)
            t[i] = "ab/"[rand() % 3];
        if (schedule_glob(p, pl, t, tl) != ref_glob(p, pl, t, tl))
            fail_msg("glob '%.*s' on '%.*s' (SCHEDULE_SEED=%u)", (int)pl, p, (int)tl, t, seed);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_pass_schedules_nothing),
        cmocka_unit_test(test_rules_override),
        cmocka_unit_test(test_adaptive_moves_and_clamps),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_glob_matches_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
