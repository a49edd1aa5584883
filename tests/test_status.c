/* tests/test_status: the status formatter (crawler/report/status.c).
 *
 * Each case fills a crawl_status with random figures (the seed is printed;
 * CRAWLD_TEST_SEED=N replays it) and checks that the JSON and the
 * Prometheus text carry those figures, that optional parts follow the
 * struct, and that running out of memory in jansson gives NULL, not a
 * crash or a leak. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "crawler/report/status.h"

#define FILL_CELLS 12

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t rnd_below(uint64_t n) { return rnd() % n; }

static crawl_fill cells[FILL_CELLS];

/* Random figures; fills every field the formatter reads. */
static void random_status(crawl_status *st)
{
    memset(st, 0, sizeof *st);
    st->elapsed_s = (double)rnd_below(100000) / 8.0;
    st->pages = rnd_below(1u << 30);
    st->fetch_errors = rnd_below(1u << 20);
    for (int i = 0; i < 20; i++)
        st->status_counts[100 + rnd_below(500)] = 1 + rnd_below(1000);
    for (int e = 0; e < FETCH_ERR_COUNT; e++)
        st->errors_by_kind[e] = rnd_below(3) ? 0 : 1 + rnd_below(100);
    st->bytes = rnd_below(1ull << 40);
    st->links = rnd_below(1u << 30);
    st->links_rejected = rnd_below(1000);
    st->links_out_of_scope = rnd_below(1000);
    st->nofollow_skipped = rnd_below(1000);
    st->redirects = rnd_below(1000);
    st->redirects_too_long = rnd_below(1000);
    st->truncated = rnd_below(1000);
    st->archiving = rnd_below(2);
    st->archived = rnd_below(1000);
    st->revisits = rnd_below(1000);
    st->frontier_mem = (int64_t)rnd_below(1000);
    st->queued = (int64_t)rnd_below(1000);
    st->hosts_active = (int64_t)rnd_below(1000);
    st->in_flight = (int64_t)rnd_below(1000);
    st->recovered_in_flight = (int64_t)rnd_below(1000);
    st->paused = rnd_below(2);
    st->stopping = rnd_below(2);
    st->done = rnd_below(2);
    st->dedup.keys = 1000 + rnd_below(1000);
    st->dedup.new_bloom = rnd_below(1000);
    st->dedup.new_verified = rnd_below(1000);
    st->dedup.dup_trusted = rnd_below(1000);
    st->dedup.dup_recent = rnd_below(1000);
    st->dedup.dup_verified = rnd_below(1000);
    st->dedup.dup_pending = rnd_below(1000);
    st->dedup.dup_page = rnd_below(1000);
    st->fpr_bound = 0.01;
    st->frontier.done = (int64_t)rnd_below(1000);
    st->frontier.failed = (int64_t)rnd_below(1000);
    st->frontier.retries = (int64_t)rnd_below(1000);
    st->frontier.robots_disallowed = (int64_t)rnd_below(1000);
    st->frontier.robots_unavailable = (int64_t)rnd_below(1000);
    st->frontier.politeness_waits = (int64_t)rnd_below(1000);
    st->frontier.hosts = (int64_t)rnd_below(1000);
    for (int v = 0; v < SCOPE_VERDICT_COUNT; v++)
        st->scope_verdicts[v] = rnd_below(1000);
    st->db.ops = (int64_t)rnd_below(1000);
    st->db.commits = (int64_t)rnd_below(1000);
    st->db.failed_ops = (int64_t)rnd_below(1000);
    st->db.runs.runs = 1 + (int)rnd_below(20);
    st->db.runs.merges = (int64_t)rnd_below(1000);
    st->db.runs.merged_rows = (int64_t)rnd_below(1000000);
    st->db.runs.failures = (int64_t)rnd_below(1000);
    st->cluster.on = rnd_below(2);
    st->cluster.slots = 64;
    st->cluster.handed_over = rnd_below(1000);
    st->cluster.loads = rnd_below(1000);
    st->cluster.rescues = rnd_below(1000);
    st->cluster.stranded = rnd_below(1000);
    st->cluster.loads_lost = rnd_below(1000);
    st->cluster.orphans_dropped = rnd_below(1000);
    st->cluster.ckpt_sent = rnd_below(1000);
    st->cluster.ckpt_too_big = rnd_below(1000);
    st->fill = cells;
    st->fill_len = 1 + rnd_below(FILL_CELLS);
    st->fill_total = st->fill_len;
    for (size_t i = 0; i < st->fill_len; i++)
        cells[i] = (crawl_fill){ .shard = (unsigned)(i / 3), .stage = (unsigned)(i % 3),
                                 .fill = (double)rnd_below(1000000) / 1e6 };
}

static json_int_t int_at(const json_t *j, const char *key)
{
    const json_t *v = json_object_get(j, key);
    assert_non_null(v);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static void test_json_carries_the_figures(void **state)
{
    (void)state;
    for (int round = 0; round < 50; round++) {
        crawl_status st;
        random_status(&st);
        json_t *j = status_json(&st);
        assert_non_null(j);
        assert_int_equal(int_at(j, "pages"), (json_int_t)st.pages);
        assert_int_equal(int_at(j, "fetch_errors"), (json_int_t)st.fetch_errors);
        assert_int_equal(int_at(j, "bytes"), (json_int_t)st.bytes);
        assert_int_equal(int_at(j, "links"), (json_int_t)st.links);
        assert_int_equal(int_at(j, "truncated"), (json_int_t)st.truncated);
        assert_int_equal(int_at(j, "recovered_in_flight"), (json_int_t)st.recovered_in_flight);
        assert_true(json_is_true(json_object_get(j, "paused")) == st.paused);
        assert_true(json_is_true(json_object_get(j, "done")) == st.done);
        const json_t *by = json_object_get(j, "pages_by_status");
        size_t nonzero = 0;
        for (int i = 100; i < 600; i++) {
            if (!st.status_counts[i])
                continue;
            nonzero++;
            char k[8];
            snprintf(k, sizeof k, "%d", i);
            assert_int_equal(int_at(by, k), (json_int_t)st.status_counts[i]);
        }
        assert_int_equal(json_object_size(by), nonzero);
        const json_t *fr = json_object_get(j, "frontier");
        assert_int_equal(int_at(fr, "memory"), st.frontier_mem);
        assert_int_equal(int_at(fr, "sqlite_queued"), st.queued);
        assert_int_equal(int_at(fr, "done"), st.frontier.done);
        assert_int_equal(int_at(fr, "robots_excluded"),
                         st.frontier.robots_disallowed + st.frontier.robots_unavailable);
        const json_t *rej = json_object_get(j, "scope_rejects");
        for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++)
            assert_int_equal(int_at(rej, scope_verdict_name(v)), (json_int_t)st.scope_verdicts[v]);
        assert_int_equal(int_at(json_object_get(j, "storage"), "commits"), st.db.commits);
        const json_t *sr = json_object_get(json_object_get(j, "storage"), "seen_runs");
        assert_int_equal(int_at(sr, "runs"), st.db.runs.runs);
        assert_int_equal(int_at(sr, "merges"), st.db.runs.merges);
        assert_int_equal(int_at(sr, "merged_rows"), st.db.runs.merged_rows);
        assert_int_equal(int_at(sr, "failed_steps"), st.db.runs.failures);
        const json_t *kinds = json_object_get(j, "fetch_errors_by_kind");
        for (int e = 0; e < FETCH_ERR_COUNT; e++) {
            const json_t *v = json_object_get(kinds, fetch_error_name((fetch_error)e));
            if (st.errors_by_kind[e])
                assert_int_equal(json_integer_value(v), (json_int_t)st.errors_by_kind[e]);
            else
                assert_null(v);
        }
        const json_t *ar = json_object_get(j, "archive");
        if (st.archiving)
            assert_int_equal(int_at(ar, "revisits"), (json_int_t)st.revisits);
        else
            assert_null(ar);
        const json_t *dup = json_object_get(json_object_get(j, "dedup"), "duplicate");
        assert_int_equal(int_at(dup, "recent_cache"), (json_int_t)st.dedup.dup_recent);
        assert_int_equal(int_at(dup, "pending"), (json_int_t)st.dedup.dup_pending);
        assert_int_equal(int_at(dup, "same_page"), (json_int_t)st.dedup.dup_page);
        const json_t *cl = json_object_get(j, "cluster");
        if (st.cluster.on) {
            const json_t *mv = json_object_get(cl, "slot_moves");
            assert_int_equal(int_at(mv, "handed_over"), (json_int_t)st.cluster.handed_over);
            assert_int_equal(int_at(mv, "loaded"), (json_int_t)st.cluster.loads);
            assert_int_equal(int_at(mv, "rescued"), (json_int_t)st.cluster.rescues);
            assert_int_equal(int_at(mv, "stranded"), (json_int_t)st.cluster.stranded);
            assert_int_equal(int_at(mv, "loads_lost"), (json_int_t)st.cluster.loads_lost);
            assert_int_equal(int_at(mv, "orphans_dropped"), (json_int_t)st.cluster.orphans_dropped);
            assert_int_equal(int_at(mv, "via_redis"), (json_int_t)st.cluster.ckpt_sent);
            assert_int_equal(int_at(mv, "too_big_for_redis"), (json_int_t)st.cluster.ckpt_too_big);
        } else {
            assert_null(cl);
        }
        json_decref(j);
    }
}

/* The text of status_metrics, NUL-terminated; caller frees. */
static char *metrics_text(const crawl_status *st)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    assert_non_null(f);
    status_metrics(f, st);
    assert_int_equal(fclose(f), 0);
    return text;
}

static size_t count_lines_starting(const char *text, const char *prefix)
{
    size_t n = 0, len = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, len) == 0)
            n++;
    return n;
}

static void test_metrics_carry_the_figures(void **state)
{
    (void)state;
    for (int round = 0; round < 50; round++) {
        crawl_status st;
        random_status(&st);
        char *text = metrics_text(&st);
        char line[160];
        for (size_t i = 0; i < st.fill_len; i++) {
            snprintf(line, sizeof line, "crawld_bloom_fill{shard=\"%u\",stage=\"%u\"} %.6f\n",
                     cells[i].shard, cells[i].stage, cells[i].fill);
            assert_non_null(strstr(text, line));
        }
        assert_int_equal(count_lines_starting(text, "crawld_bloom_fill{"), st.fill_len);
        size_t nonzero = 0;
        for (int i = 100; i < 600; i++)
            if (st.status_counts[i]) {
                nonzero++;
                snprintf(line, sizeof line, "crawld_pages_total{status=\"%d\"} %llu\n", i,
                         (unsigned long long)st.status_counts[i]);
                assert_non_null(strstr(text, line));
            }
        assert_int_equal(count_lines_starting(text, "crawld_pages_total{"), nonzero);
        snprintf(line, sizeof line, "crawld_frontier_urls{where=\"sqlite\"} %lld\n",
                 (long long)st.queued);
        assert_non_null(strstr(text, line));
        for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++) {
            snprintf(line, sizeof line, "crawld_scope_rejects_total{reason=\"%s\"} %llu\n",
                     scope_verdict_name(v), (unsigned long long)st.scope_verdicts[v]);
            assert_non_null(strstr(text, line));
        }
        const struct { const char *what; uint64_t v; } moves[] = {
            { "handed_over", st.cluster.handed_over }, { "loaded", st.cluster.loads },
            { "rescued", st.cluster.rescues }, { "stranded", st.cluster.stranded },
            { "loads_lost", st.cluster.loads_lost },
            { "orphans_dropped", st.cluster.orphans_dropped },
            { "via_redis", st.cluster.ckpt_sent }, { "too_big_for_redis", st.cluster.ckpt_too_big },
        };
        const struct { const char *result, *layer; uint64_t v; } layers[] = {
            { "new", "bloom_no", st.dedup.new_bloom },
            { "new", "sqlite", st.dedup.new_verified },
            { "duplicate", "bloom_trusted", st.dedup.dup_trusted },
            { "duplicate", "recent_cache", st.dedup.dup_recent },
            { "duplicate", "sqlite", st.dedup.dup_verified },
            { "duplicate", "pending", st.dedup.dup_pending },
            { "duplicate", "same_page", st.dedup.dup_page },
        };
        for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
            snprintf(line, sizeof line,
                     "crawld_dedup_decisions_total{result=\"%s\",layer=\"%s\"} %llu\n",
                     layers[i].result, layers[i].layer, (unsigned long long)layers[i].v);
            assert_non_null(strstr(text, line));
        }
        assert_int_equal(count_lines_starting(text, "crawld_dedup_decisions_total{"),
                         sizeof layers / sizeof layers[0]);
        snprintf(line, sizeof line, "crawld_seen_runs %d\n", st.db.runs.runs);
        assert_non_null(strstr(text, line));
        snprintf(line, sizeof line, "crawld_seen_run_upkeep_failures_total %lld\n",
                 (long long)st.db.runs.failures);
        assert_non_null(strstr(text, line));
        for (size_t i = 0; i < sizeof moves / sizeof moves[0]; i++) {
            snprintf(line, sizeof line, "crawld_cluster_slot_moves_total{what=\"%s\"} %llu\n",
                     moves[i].what, (unsigned long long)moves[i].v);
            assert_true((strstr(text, line) != NULL) == st.cluster.on);
        }
        free(text);
    }
}

static long json_allocs_left;

static void *failing_malloc(size_t n)
{
    if (json_allocs_left-- <= 0)
        return NULL;
    return malloc(n);
}

/* Every jansson allocation failing in turn: NULL or a whole object, never
 * a crash (ASan: never a leak). */
static void test_json_out_of_memory(void **state)
{
    (void)state;
    crawl_status st;
    random_status(&st);
    st.archiving = true;
    bool saw_null = false, saw_object = false;
    for (long budget = 0; budget < 2000 && !saw_object; budget++) {
        json_allocs_left = budget;
        json_set_alloc_funcs(failing_malloc, free);
        json_t *j = status_json(&st);
        json_set_alloc_funcs(malloc, free);
        if (j == NULL)
            saw_null = true;
        else if (json_allocs_left >= 0)
            saw_object = true;
        json_decref(j);
    }
    assert_true(saw_null);
    assert_true(saw_object);
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    if (seed == 0)
        seed = 1;
    printf("test_status: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_carries_the_figures),
        cmocka_unit_test(test_metrics_carry_the_figures),
        cmocka_unit_test(test_json_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
