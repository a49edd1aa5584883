/* tests/test_samples: the samples table thinned with age (storage/samples,
 * db_prune_samples, the sampler's tiers) and read back spread over time.
 *
 * t_ms values are data here, not the clock: a year of samples is written in
 * seconds. Random cases print their seed; CRAWLD_TEST_SEED=N replays one. */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "common/alloc.h"
#include "crawler/sampler.h"
#include "dedup/bloom.h"
#include "storage/db.h"
#include "tests/support/proc.h"

#define DAY_MS (24LL * 3600 * 1000)

static char workdir[128];

static int group_setup(void **state)
{
    (void)state;
    snprintf(workdir, sizeof workdir, "/tmp/crawld-test-samples-XXXXXX");
    return mkdtemp(workdir) == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    (void)state;
    const char *argv[] = { "/bin/rm", "-rf", workdir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
    return 0;
}

static uint64_t rng_state;

static uint64_t seed_from_env(const char *test)
{
    const char *e = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    printf("  %s: seed %" PRIu64 " (CRAWLD_TEST_SEED=%" PRIu64 " replays it)\n", test, seed, seed);
    rng_state = seed ? seed : 1;
    return seed;
}

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static db *open_db(const char *name, char *dir, size_t len)
{
    char err[512];
    snprintf(dir, len, "%s/%s", workdir, name);
    db *d = db_open(dir, NULL, err, sizeof err);
    if (d == NULL)
        fail_msg("db_open %s: %s", dir, err);
    return d;
}

typedef struct tlist {
    int64_t *v;
    size_t n, cap;
} tlist;

static void tl_add(tlist *l, int64_t t)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        assert_non_null(l->v);
    }
    l->v[l->n++] = t;
}

static int collect_t(void *ud, int64_t t_ms, const char *data, size_t len)
{
    (void)data;
    (void)len;
    tl_add(ud, t_ms);
    return 0;
}

/* Every row's t_ms, in order. */
static tlist rows_of(const char *dir)
{
    char err[512];
    tlist l = { 0 };
    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    if (rd == NULL)
        fail_msg("reader: %s", err);
    assert_true(db_reader_samples(rd, 0, collect_t, &l) >= 0);
    db_reader_free(rd);
    return l;
}

/* ---- the tiers --------------------------------------------------------- */

static void bad_tiers_are_refused(void **state)
{
    (void)state;
    char dir[256];
    db *d = open_db("tiers", dir, sizeof dir);
    const db_sample_tier ok[] = { { 100, 10 }, { 1000, 100 } };
    const db_sample_tier not_multiple[] = { { 100, 10 }, { 1000, 15 } };
    const db_sample_tier not_older[] = { { 100, 10 }, { 100, 100 } };
    const db_sample_tier zero[] = { { 100, 0 } };
    db_sample_tier many[DB_SAMPLE_TIERS_MAX + 1];
    for (int i = 0; i <= DB_SAMPLE_TIERS_MAX; i++)
        many[i] = (db_sample_tier){ 100 * (i + 1), 10 };
    assert_int_equal(db_prune_samples(d, ok, 2, 5000, 0), 0);
    assert_int_equal(db_prune_samples(d, not_multiple, 2, 5000, 0), -EINVAL);
    assert_int_equal(db_prune_samples(d, not_older, 2, 5000, 0), -EINVAL);
    assert_int_equal(db_prune_samples(d, zero, 1, 5000, 0), -EINVAL);
    assert_int_equal(db_prune_samples(d, ok, 0, 5000, 0), -EINVAL);
    assert_int_equal(db_prune_samples(d, many, DB_SAMPLE_TIERS_MAX + 1, 5000, 0), -EINVAL);
    assert_int_equal(db_prune_samples(d, many, DB_SAMPLE_TIERS_MAX, 5000, 0), 0);
    assert_int_equal(db_prune_samples(d, ok, 2, -1, 0), -EINVAL);
    /* the sampler's own tiers are valid */
    assert_int_equal(db_prune_samples(d, sampler_tiers, SAMPLER_TIERS, 5000, 0), 0);
    cr_alloc_fail_after(1); /* the copy of the tiers */
    int rc = db_prune_samples(d, ok, 2, 5000, 0);
    long failures = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(failures, 1);
    assert_int_equal(rc, -ENOMEM);
    assert_int_equal(db_flush(d), 0);
    assert_int_equal(db_close(d), 0);
}

/* What must survive, by the rule itself: a row at least one tier's age old
 * (at the last pass, now) stays only if no row of the whole history lies
 * before it in its bucket of the oldest tier it reached. */
static int model_keeps(const tlist *all, size_t i, const db_sample_tier *tiers, size_t nt,
                       int64_t now)
{
    int64_t t = all->v[i];
    int tier = -1;
    for (size_t k = 0; k < nt; k++)
        if (now - t >= tiers[k].age_ms)
            tier = (int)k;
    if (tier < 0)
        return 1;
    int64_t b = tiers[tier].every_ms;
    return i == 0 || all->v[i - 1] < t - t % b;
}

/* Passes at random moments with random gaps between samples leave exactly
 * the rows the rule names, the same as one pass over the whole history. */
static void passes_leave_what_the_rule_says(void **state)
{
    (void)state;
    seed_from_env("passes_leave_what_the_rule_says");
    const db_sample_tier tiers[] = { { 300, 10 }, { 3000, 100 }, { 20000, 1000 } };
    char dir[256], dir1[256];
    db *d = open_db("passes", dir, sizeof dir);
    db *one = open_db("onepass", dir1, sizeof dir1);
    tlist all = { 0 };
    int64_t t = (int64_t)(rnd() % 1000), since = 0, now = 0;
    int passes = 0;
    for (int i = 0; i < 20000; i++) {
        t += 1 + (int64_t)(rnd() % (rnd() % 8 == 0 ? 40 : 6));
        tl_add(&all, t);
        assert_int_equal(db_put_sample(d, t, "{}"), 0);
        assert_int_equal(db_put_sample(one, t, "{}"), 0);
        if (rnd() % 50 == 0) {
            now = t;
            assert_int_equal(db_prune_samples(d, tiers, 3, now, since), 0);
            since = now;
            passes++;
        }
    }
    assert_int_equal(db_prune_samples(one, tiers, 3, now, 0), 0);
    assert_int_equal(db_close(d), 0);
    assert_int_equal(db_close(one), 0);
    assert_true(passes > 100);

    tlist got = rows_of(dir), got1 = rows_of(dir1);
    size_t k = 0, kept = 0;
    for (size_t i = 0; i < all.n; i++) {
        if (!model_keeps(&all, i, tiers, 3, now))
            continue;
        kept++;
        if (k >= got.n || got.v[k] != all.v[i])
            fail_msg("row t_ms=%" PRId64 " should be kept (the pass at %" PRId64 "); kept instead %" PRId64 " (before it %" PRId64 ")", all.v[i], now, k < got.n ? got.v[k] : -1, k ? got.v[k-1] : -1);
        k++;
    }
    assert_int_equal(got.n, kept);
    assert_true(kept < all.n / 2); /* the case did thin something */
    assert_int_equal(got1.n, got.n);
    assert_memory_equal(got1.v, got.v, got.n * sizeof *got.v);
    free(all.v);
    free(got.v);
    free(got1.v);
}

/* ---- packed rows ------------------------------------------------------- */

typedef struct texts {
    int64_t t[8];
    char *v[8];
    size_t n;
} texts;

static int collect_text(void *ud, int64_t t_ms, const char *data, size_t len)
{
    texts *x = ud;
    assert_true(x->n < 8);
    assert_int_equal(strlen(data), len);
    x->t[x->n] = t_ms;
    x->v[x->n++] = strdup(data);
    return 0;
}

/* Samples are stored packed and read back as the text they were; a row
 * written as plain text (an older crawld) reads as it is; a row that does
 * not unpack is left out, not passed on half-read. */
static void packed_rows_read_back(void **state)
{
    (void)state;
    char dir[256], err[512], path[300];
    db *d = open_db("packed", dir, sizeof dir);
    const char *a = "{\"pages\":12,\"bloom_fill\":[0.5,0.25],\"errors\":{\"DNS\":3}}";
    char big[70000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(db_put_sample(d, 1000, a), 0);
    assert_int_equal(db_put_sample(d, 4000, ""), 0);
    assert_int_equal(db_put_sample(d, 5000, big), -E2BIG);
    for (long n = 1;; n++) { /* every allocation of the packing may fail */
        cr_alloc_fail_after(n);
        int rc = db_put_sample(d, 6000, a);
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (failures == 0) {
            assert_int_equal(rc, 0);
            break;
        }
        assert_int_equal(rc, -ENOMEM);
        assert_true(n < 50);
    }
    assert_int_equal(db_close(d), 0);

    sqlite3 *conn;
    snprintf(path, sizeof path, "%s/crawld.db", dir);
    assert_int_equal(sqlite3_open(path, &conn), SQLITE_OK);
    assert_int_equal(sqlite3_exec(conn,
                                  "INSERT INTO samples VALUES(2000, '{\"old\":1}');"
                                  "INSERT INTO samples VALUES(3000, x'01ffff00');"
                                  "INSERT INTO samples VALUES(3500, x'07');",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(conn);

    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    assert_non_null(rd);
    texts x = { .n = 0 };
    assert_int_equal(db_reader_samples(rd, 0, collect_text, &x), 4);
    db_reader_free(rd);
    const int64_t want_t[] = { 1000, 2000, 4000, 6000 };
    const char *want[] = { a, "{\"old\":1}", "", a };
    for (size_t i = 0; i < 4; i++) {
        assert_true(x.t[i] == want_t[i]);
        assert_string_equal(x.v[i], want[i]);
        free(x.v[i]);
    }
}

/* ---- a year ------------------------------------------------------------ */

/* The figures of a crawl that has run for a year: counters in the billions,
 * every status class and error kind, an eight-stage Bloom chain. */
static const char year_status[] =
    "{\"elapsed_s\":31536000.123,\"pages\":9876543210,\"fetch_errors\":123456789,"
    "\"pages_by_status\":{\"200\":8765432109,\"204\":1234567,\"301\":345678901,\"302\":234567890,"
    "\"304\":12345678,\"403\":23456789,\"404\":345678901,\"410\":1234567,\"429\":2345678,"
    "\"500\":3456789,\"502\":456789,\"503\":5678901},\"bytes\":987654321098765,"
    "\"links\":98765432109,\"links_rejected\":123456789,\"links_out_of_scope\":9876543210,"
    "\"frontier\":{\"memory\":100000,\"sqlite_queued\":98765432,\"hosts_active\":123456},"
    "\"dedup\":{\"urls\":98765432109,\"new\":{\"bloom_no\":9876543210,"
    "\"false_positive_caught\":98765432},\"duplicate\":{\"bloom_maybe_trusted\":0,"
    "\"recent_cache\":76543210987,\"sqlite\":12345678901},\"checked_new\":9876543210,"
    "\"fpr\":{\"observed\":0.0099887766,\"bound\":0.01,\"predicted\":0.0098765432101},"
    "\"bloom\":{\"stages\":128}},"
    "\"fetch_errors_by_kind\":{\"DNS\":12345678,\"connect\":23456789,\"connect timeout\":3456789,"
    "\"TLS\":4567890,\"timeout\":5678901,\"low speed\":678901,\"network\":7890123,"
    "\"protocol\":890123,\"body too large\":901234,\"decode\":12345}}";

/* A year of samples, as the daemon writes them every 2 s and pruned every
 * ten minutes with the sampler's tiers, fits in under 50 MB, and what is
 * left is what the tiers say: every sample of the last day, then one a
 * minute, then one an hour. To take seconds, the test writes every 2 s only
 * for the last two days, every 40 s before that and every 20 minutes before
 * the last 31 days: each bucket of the tier a row ends in still gets more
 * than one, so as many rows survive as from a sample every 2 s (the rule
 * keeps the earliest of each bucket, whatever the rows were: see
 * passes_leave_what_the_rule_says). */
static void a_year_of_samples_stays_under_50_mb(void **state)
{
    (void)state;
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = 1000;
    bp.shards = 1;
    bloom *bf = NULL;
    assert_int_equal(bloom_new(&bp, &bf), 0);
    for (uint32_t i = 0; i < 200000; i++) /* past 127,000: an eighth stage */
        bloom_add(bf, &i, sizeof i);
    json_error_t jerr;
    json_t *st = json_loads(year_status, 0, &jerr);
    assert_non_null(st);
    json_t *sample = sampler_sample_json(st, bf, 9876543000.0, 2.0);
    assert_non_null(sample);
    assert_int_equal(json_array_size(json_object_get(sample, "bloom_fill")), 8);
    char *text = sampler_sample_text(sample);
    size_t bytes = strlen(text);
    json_decref(sample);
    json_decref(st);
    bloom_free(bf);

    char dir[256];
    db *d = open_db("year", dir, sizeof dir);
    const int64_t t0 = 1700000000000LL, end = t0 + 365 * DAY_MS, dense = end - 2 * DAY_MS;
    const int64_t month = end - 31 * DAY_MS;
    int64_t since = 0, next_pass = t0, n = 0;
    for (int64_t t = t0; t <= end; t += t < month ? 1200000 : t < dense ? 40000 : 2000) {
        assert_int_equal(db_put_sample(d, t, text), 0);
        n++;
        if (t >= next_pass) {
            assert_int_equal(db_prune_samples(d, sampler_tiers, SAMPLER_TIERS, t, since), 0);
            since = t;
            next_pass = t + 600000;
        }
    }
    assert_int_equal(db_prune_samples(d, sampler_tiers, SAMPLER_TIERS, end, since), 0);
    assert_int_equal(db_close(d), 0); /* checkpoints the WAL into the file */
    free(text);

    char path[300];
    struct stat sb;
    snprintf(path, sizeof path, "%s/crawld.db", dir);
    assert_int_equal(stat(path, &sb), 0);
    tlist rows = rows_of(dir);
    printf("  %" PRId64 " samples of %zu bytes written over 365 days; %zu kept, crawld.db %.1f MB\n",
           n, bytes, rows.n, (double)sb.st_size / 1e6);
    assert_true(sb.st_size < 50 * 1000 * 1000);

    /* the rows per tier, counted from the tiers themselves */
    int64_t edge[SAMPLER_TIERS + 1];
    edge[0] = end + 1;
    for (int k = 0; k < SAMPLER_TIERS; k++)
        edge[k + 1] = end - sampler_tiers[k].age_ms + 1; /* rows at or below are in tier k */
    int64_t count[SAMPLER_TIERS + 1] = { 0 };
    for (size_t i = 0; i < rows.n; i++) {
        int k = 0;
        while (k < SAMPLER_TIERS && rows.v[i] < edge[k + 1])
            k++;
        count[k]++;
    }
    assert_int_equal(count[0], (sampler_tiers[0].age_ms - 1) / 2000 + 1); /* every 2 s */
    for (int k = 1; k <= SAMPLER_TIERS; k++) {
        int64_t every = sampler_tiers[k - 1].every_ms;
        int64_t lo = k == SAMPLER_TIERS ? t0 : edge[k + 1];
        int64_t buckets = (edge[k] - 1) / every - lo / every + 1;
        /* one per bucket; a bucket cut by a tier's edge may hold two */
        if (count[k] < buckets - 1 || count[k] > buckets + 1)
            fail_msg("tier %d: %" PRId64 " rows for %" PRId64 " buckets", k, count[k], buckets);
    }
    free(rows.v);
}

/* The sampler queues a pass over the whole table with its first sample,
 * so the rows of an earlier, unpruned run are thinned too. */
static void the_first_sample_prunes_the_whole_history(void **state)
{
    (void)state;
    char dir[256];
    db *d = open_db("history", dir, sizeof dir);
    const int64_t now = 1700000000000LL, old = (now - 40 * DAY_MS) / 3600000 * 3600000;
    for (int64_t t = old; t < old + 3600000; t += 2000) /* an hour, 40 days ago */
        assert_int_equal(db_put_sample(d, t, "{}"), 0);
    sampler *s = sampler_new(d, NULL);
    assert_non_null(s);
    json_t *st = json_pack("{s:I}", "pages", (json_int_t)1);
    assert_int_equal(sampler_record_at(s, st, NULL, NULL, now), 0);
    json_decref(st);
    sampler_free(s);
    assert_int_equal(db_close(d), 0);
    tlist rows = rows_of(dir);
    assert_int_equal(rows.n, 2); /* the hour's first sample, and the new one */
    assert_true(rows.v[0] == old);
    assert_true(rows.v[1] == now);
    free(rows.v);
}

/* Read back with a cap, the samples are spread over time, not over rows:
 * a day of dense samples after a month of sparse ones gets its share of
 * the points and no more. */
static void reading_spreads_samples_over_time(void **state)
{
    (void)state;
    char dir[256], err[512];
    db *d = open_db("spread", dir, sizeof dir);
    const int64_t t0 = 1700000000000LL, mid = t0 + 30 * DAY_MS, end = mid + DAY_MS;
    int64_t total = 0;
    for (int64_t t = t0; t <= end; t += t < mid ? 3600000 : 2000, total++)
        assert_int_equal(db_put_sample(d, t, "{}"), 0);
    assert_int_equal(db_close(d), 0);
    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    assert_non_null(rd);
    tlist got = { 0 };
    const size_t max = 100;
    int64_t passed = db_reader_samples(rd, max, collect_t, &got);
    assert_int_equal(passed, (int64_t)got.n);
    db_reader_free(rd);
    assert_true(got.n <= max);
    assert_true(got.v[0] == t0);
    assert_true(got.v[got.n - 1] >= end - 2000);
    /* one point per step of (end - t0) / (max - 1) at most, and every step
     * that holds a sample has one: the last day gets about 1/31 of them */
    int64_t step = (end - t0 + (int64_t)max - 2) / ((int64_t)max - 1);
    size_t in_last_day = 0;
    for (size_t i = 1; i < got.n; i++) {
        assert_true(got.v[i] > got.v[i - 1]);
        if (i + 1 < got.n)
            assert_true((got.v[i] - t0) / step > (got.v[i - 1] - t0) / step);
        in_last_day += got.v[i] >= mid;
    }
    assert_true(got.n >= max - 2);
    assert_true(in_last_day <= max / 31 + 3);
    assert_true(total > 40000);
    free(got.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_tiers_are_refused),
        cmocka_unit_test(passes_leave_what_the_rule_says),
        cmocka_unit_test(packed_rows_read_back),
        cmocka_unit_test(a_year_of_samples_stays_under_50_mb),
        cmocka_unit_test(the_first_sample_prunes_the_whole_history),
        cmocka_unit_test(reading_spreads_samples_over_time),
    };
    return cmocka_run_group_tests_name("samples", tests, group_setup, group_teardown);
}
