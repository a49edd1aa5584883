/* tests/test_gens: dedup/gens, the ring of Bloom generations, and the seen
 * test's refresh rule over it.
 *
 * The invariant (gens.h): every key added or refreshed within the last
 * retention_s answers MAYBE, through rotations and a snapshot round trip;
 * the false-positive rate over all live generations stays within fp_rate;
 * a MAYBE from an older generation costs one refresh per key per window.
 * Time is passed in, so windows are exact. The random case prints its
 * seed; CRAWLD_TEST_SEED=N replays it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <errno.h>

#include "dedup/bloom.h"
#include "dedup/gens.h"
#include "dedup/hash.h"
#include "dedup/seen.h"

static uint64_t seed;

static uint64_t mix(uint64_t *st)
{
    uint64_t z = (*st += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static hash_fp key_fp(uint64_t k) { return hash_fingerprint(&k, sizeof k); }

static bloom_params params(uint64_t n, double p)
{
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = n;
    bp.fp_rate = p;
    bp.shards = 4;
    return bp;
}

static gens *ring(uint64_t n, double p, int64_t retention, unsigned generations, int64_t now)
{
    bloom_params bp = params(n, p);
    gens_opts o = { retention, generations };
    gens *g = NULL;
    assert_int_equal(gens_new(&bp, &o, now, &g), 0);
    return g;
}

/* One clock step: start a window when due, drop what expired. */
static void tick(gens *g, int64_t now)
{
    assert_true(gens_push(g, now) >= 0);
    gens_drop(g, now, NULL);
}

static void options_are_checked(void **state)
{
    (void)state;
    char err[128];
    gens_opts ok = { 0, 0 }, two = { 10, 2 }, one = { 10, 1 }, nine = { 10, 9 },
              short_ = { 3, 4 }, neg = { -1, 2 };
    assert_int_equal(gens_opts_check(&ok, err, sizeof err), 0);
    assert_int_equal(gens_opts_check(&two, err, sizeof err), 0);
    assert_int_equal(gens_opts_check(&one, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "generations"));
    assert_int_equal(gens_opts_check(&nine, err, sizeof err), -EINVAL);
    assert_int_equal(gens_opts_check(&short_, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "shorter"));
    assert_int_equal(gens_opts_check(&neg, err, sizeof err), -EINVAL);
    bloom_params bp = params(1000, 0.01), gp;
    gens_gen_params(&bp, &two, &gp);
    assert_true(gp.fp_rate < 0.01 / 2.9 && gp.fp_rate > 0.01 / 3.1); /* 3 can be live */
    gens_gen_params(&bp, &ok, &gp);
    assert_true(gp.fp_rate == 0.01);
    gens *g = NULL;
    assert_int_equal(gens_new(&bp, &one, 0, &g), -EINVAL);
    assert_null(g);
}

/* Windows start on the first one's grid; a ring holds at most
 * generations + 1 filters; a long pause skips the empty windows. */
static void windows_rotate_on_a_grid(void **state)
{
    (void)state;
    gens *g = ring(1000, 0.01, 100, 4, 1000); /* windows of 25 s */
    gens_stats st;
    assert_int_equal(gens_window_s(g), 25);
    assert_int_equal(gens_push(g, 1024), 0);
    assert_int_equal(gens_push(g, 1025), 1);
    assert_int_equal(gens_stamp(g, 0), 1025);
    for (int64_t t = 1025; t <= 2000; t += 5) {
        tick(g, t);
        gens_stats_get(g, &st);
        assert_true(st.live <= 5);
        assert_true(st.gen[st.live - 1].start <= t && st.gen[st.live - 1].start > t - 25);
        assert_int_equal((st.gen[st.live - 1].start - 1000) % 25, 0);
    }
    gens_stats_get(g, &st);
    assert_int_equal(st.live, 5);
    assert_int_equal(gens_next_cutoff(g, 2000), st.gen[0].start);
    /* a long pause: one new window on the grid; the others are dropped but
     * the last one written, which took keys until this push */
    tick(g, 100000 + 3);
    gens_stats_get(g, &st);
    assert_int_equal(st.live, 2);
    assert_int_equal(st.gen[1].start, 100000);
    assert_true(st.dropped >= 4);
    tick(g, 100000 + 100);
    gens_stats_get(g, &st);
    assert_int_equal(st.live, 2);
    assert_int_equal(st.gen[0].start, 100000);
    gens_free(g);
}

/* Without retention: one generation, never rotating, stamps are now. */
static void no_retention_is_one_filter(void **state)
{
    (void)state;
    gens *g = ring(1000, 0.01, 0, 0, 0);
    assert_false(gens_rotating(g));
    assert_int_equal(gens_push(g, 1 << 30), 0);
    int64_t cut = 0;
    assert_int_equal(gens_drop(g, 1 << 30, &cut), 0);
    assert_true(cut == INT64_MIN);
    assert_int_equal(gens_stamp(g, 77), 77);
    assert_int_equal(gens_add_fp(g, key_fp(1), NULL), 0);
    assert_int_equal(gens_query_fp(g, key_fp(1)), GENS_NEWEST);
    gens_free(g);
}

/* The Bloom memory cap is the ring's: the live generations share it (one
 * share per generation the ring can hold), also after gens_set_max_bytes,
 * which is how a ring loaded from a snapshot gets it; without retention
 * the one filter has all of it. */
static void the_memory_cap_is_shared(void **state)
{
    (void)state;
    bloom_params bp = params(1000, 0.01), got;
    bp.max_bytes = 5u << 20;
    gens_opts o = { 100, 4 };
    gens *g = NULL;
    assert_int_equal(gens_new(&bp, &o, 1000, &g), 0);
    bloom_get_params(gens_newest(g), &got);
    assert_int_equal(got.max_bytes, 1u << 20);
    assert_int_equal(gens_push(g, 1000 + 25), 1);
    bloom_get_params(gens_newest(g), &got);
    assert_int_equal(got.max_bytes, 1u << 20);
    gens_set_max_bytes(g, 10u << 20);
    gens_stats gs;
    gens_stats_get(g, &gs);
    assert_int_equal(gs.live, 2);
    assert_int_equal(gens_push(g, 1000 + 50), 1);
    bloom_get_params(gens_newest(g), &got);
    assert_int_equal(got.max_bytes, 2u << 20);
    gens_free(g);

    g = ring(1000, 0.01, 0, 0, 0);
    gens_set_max_bytes(g, 3u << 20);
    bloom_get_params(gens_newest(g), &got);
    assert_int_equal(got.max_bytes, 3u << 20);
    gens_free(g);
}

/* The invariant over a random history of links: every key linked within
 * the retention answers MAYBE; a key whose last link is older than
 * retention + one window answers NO unless a false positive (counted, and
 * bounded by the rate). Links follow the seen rule: NO -> add, OLDER ->
 * refresh (add to the newest), NEWEST -> nothing. */
static void invariant_within_retention(void **state)
{
    (void)state;
    enum { KEYS = 4000, STEPS = 400 };
    const int64_t retention = 60, t0 = 10000;
    const unsigned ngen = 3;
    int64_t *last = calloc(KEYS, sizeof *last); /* last link time, 0 = never */
    assert_non_null(last);
    uint64_t st = seed;
    gens *g = ring(2000, 0.01, retention, ngen, t0);
    long refreshes = 0, old_maybe = 0, old_checked = 0;
    for (int step = 0; step < STEPS; step++) {
        int64_t now = t0 + step;
        tick(g, now);
        for (int i = 0; i < 20; i++) {
            /* keys drift: the hot set moves through the key space */
            uint64_t k = (uint64_t)(step * 8 + (int)(mix(&st) % 400)) % KEYS;
            int q = gens_query_fp(g, key_fp(k));
            if (last[k] != 0 && now - last[k] <= retention)
                assert_int_not_equal(q, GENS_NO);
            if (q == GENS_NO || q == GENS_OLDER) {
                gens_add_fp(g, key_fp(k), NULL);
                refreshes += q == GENS_OLDER;
            }
            last[k] = now;
        }
        for (uint64_t k = 0; k < KEYS; k++) {
            if (last[k] == 0)
                continue;
            int q = gens_query_fp(g, key_fp(k));
            if (now - last[k] <= retention) {
                if (q == GENS_NO)
                    fail_msg("seed %llu: key %llu linked at %lld answers NO at %lld",
                             (unsigned long long)seed, (unsigned long long)k,
                             (long long)last[k], (long long)now);
            } else if (now - last[k] > retention + retention / ngen) {
                old_checked++;
                old_maybe += q != GENS_NO;
            }
        }
    }
    assert_true(refreshes > 0);
    assert_true(old_checked > 10000);
    /* forgotten keys answer NO but for false positives */
    assert_true((double)old_maybe / (double)old_checked <= 0.01);
    gens_stats gs;
    gens_stats_get(g, &gs);
    assert_true(gs.dropped > 0 && gs.dropped_keys > 0);
    assert_true(gs.live <= ngen + 1);
    gens_free(g);
    free(last);
}

/* With every live generation full (each at its capacity), the observed
 * false-positive rate of the ring stays within fp_rate. */
static void fpr_over_all_generations(void **state)
{
    (void)state;
    const double p = 0.01;
    const uint64_t n = 20000;
    gens *g = ring(n, p, 40, 4, 0); /* windows of 10 s, up to 5 live */
    uint64_t k = 0;
    for (int64_t t = 0; t < 50; t += 10) {
        tick(g, t);
        for (uint64_t i = 0; i < n; i++, k++)
            gens_add_fp(g, key_fp(k), NULL);
    }
    gens_stats st;
    gens_stats_get(g, &st);
    assert_int_equal(st.live, 5);
    long fp = 0, probes = 400000;
    for (long i = 0; i < probes; i++)
        fp += gens_query_fp(g, key_fp((uint64_t)1 << 40 | (uint64_t)i)) != GENS_NO;
    double rate = (double)fp / (double)probes;
    printf("test_gens: observed FPR %.5f over %u generations (bound %.3f, model %.5f)\n", rate,
           st.live, p, st.fpr_model);
    assert_true(rate <= p);
    assert_true(st.fpr_model <= p);
    for (uint64_t i = 0; i < k; i++) /* and no false negative */
        assert_int_not_equal(gens_query_fp(g, key_fp(i)), GENS_NO);
    gens_free(g);
}

/* gens_add_at: a key goes into the window of its stamp, or the oldest. */
static void add_at_picks_the_stamps_window(void **state)
{
    (void)state;
    gens *g = ring(1000, 0.01, 20, 2, 100); /* windows of 10 s */
    tick(g, 110);
    tick(g, 120); /* windows 100, 110, 120 */
    assert_int_equal(gens_add_at(g, key_fp(1), 115), 0);
    assert_int_equal(gens_add_at(g, key_fp(2), 50), 0);  /* older: the oldest */
    assert_int_equal(gens_add_at(g, key_fp(3), 125), 0); /* the newest */
    assert_int_equal(gens_query_fp(g, key_fp(1)), GENS_OLDER);
    assert_int_equal(gens_query_fp(g, key_fp(3)), GENS_NEWEST);
    tick(g, 130); /* 100 ends at 110 <= 130 - 20: dropped */
    int64_t cut = 0;
    gens_drop(g, 130, &cut);
    assert_int_equal(cut, 110);
    assert_int_equal(gens_query_fp(g, key_fp(2)), GENS_NO);
    assert_int_equal(gens_was_dropped(g, key_fp(2)), 1);
    assert_int_equal(gens_query_fp(g, key_fp(1)), GENS_OLDER);
    gens_free(g);
}

/* ---- snapshots of a ring ---- */

static char tmpdir[256];

static void snap_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", tmpdir, name);
}

static void snapshot_holds_every_generation(void **state)
{
    (void)state;
    char path[300], err[256];
    snap_path(path, sizeof path, "ring.bloom");
    gens *g = ring(1000, 0.01, 30, 3, 0);
    for (uint64_t k = 0; k < 300; k++) {
        tick(g, (int64_t)k / 10);
        gens_add_fp(g, key_fp(k), NULL);
    }
    gens_stats before;
    gens_stats_get(g, &before);
    assert_int_equal(before.live, 3);
    uint8_t owner[BLOOM_OWNER_BYTES] = { 7 }, got_owner[BLOOM_OWNER_BYTES];
    assert_int_equal(gens_save(g, path, 42, owner, err, sizeof err), 0);

    bloom_ring r;
    uint64_t hwm = 0;
    assert_int_equal(bloom_load_ring(path, &r, &hwm, got_owner, err, sizeof err), 0);
    assert_int_equal(hwm, 42);
    assert_memory_equal(owner, got_owner, sizeof owner);
    assert_int_equal(r.n, 3);
    bloom_params bp = params(1000, 0.01);
    gens_opts other = { 60, 3 }, same = { 30, 3 };
    gens *back = NULL;
    assert_int_equal(gens_adopt(&r, &bp, &other, &back, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "configuration"));
    bloom_params wider = params(5000, 0.01);
    assert_int_equal(gens_adopt(&r, &wider, &same, &back, err, sizeof err), -EINVAL);
    assert_int_equal(gens_adopt(&r, &bp, &same, &back, err, sizeof err), 0);
    gens_stats after;
    gens_stats_get(back, &after);
    assert_int_equal(after.live, before.live);
    for (unsigned i = 0; i < after.live; i++) {
        assert_int_equal(after.gen[i].start, before.gen[i].start);
        assert_int_equal(after.gen[i].keys, before.gen[i].keys);
    }
    /* every key the live generations held answers as before */
    for (uint64_t k = 0; k < 300; k++)
        assert_int_equal(gens_query_fp(back, key_fp(k)), gens_query_fp(g, key_fp(k)));
    /* a ring is not one filter: bloom_load refuses it */
    bloom *one = NULL;
    assert_int_equal(bloom_load(path, &one, &hwm, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "generations"));
    gens_free(back);
    gens_free(g);
    unlink(path);
}

/* ---- the refresh rule through dedup/seen ---- */

typedef struct counting {
    long records, refreshes, checks, vouched; /* vouched: records marked absent */
    int64_t last_stamp;
} counting;

static int c_record(void *ctx, const char *key, size_t len, int64_t linked, bool absent,
                    void *row, seen_ack_fn ack, void *ack_arg)
{
    counting *c = ctx;
    (void)row;
    c->records++;
    c->vouched += absent;
    ack(ack_arg, key, len, linked, 1); /* stored at once */
    return 0;
}

static int c_check(void *ctx, const char *key, size_t len, int64_t linked, void *row)
{
    counting *c = ctx;
    (void)key;
    (void)len;
    (void)linked;
    (void)row;
    c->checks++;
    return 0; /* it exists */
}

static int c_refresh(void *ctx, const char *key, size_t len, int64_t linked)
{
    counting *c = ctx;
    (void)key;
    (void)len;
    c->refreshes++;
    c->last_stamp = linked;
    return 0;
}

static void one_refresh_per_key_per_window(void **state)
{
    (void)state;
    counting c = { 0 };
    seen_verifier v = { &c, c_record, c_check, c_refresh, NULL };
    seen_opts o = { SEEN_VERIFY_NEVER, 0 };
    gens *g = ring(1000, 0.001, 20, 2, 1000);
    seen *s = seen_new_gens(g, &o, &v);
    assert_non_null(s);
    assert_int_equal(seen_test(s, "a", 1, true, NULL), SEEN_NEW_BLOOM);
    assert_int_equal(seen_test(s, "a", 1, true, NULL), SEEN_DUP_TRUSTED);
    assert_int_equal(c.refreshes, 0); /* in the newest: a query only */
    tick(g, 1010);
    for (int i = 0; i < 5; i++)
        assert_int_equal(seen_test(s, "a", 1, true, NULL), SEEN_DUP_TRUSTED);
    assert_int_equal(c.refreshes, 1);
    assert_int_equal(c.last_stamp, 1010);
    tick(g, 1020);
    tick(g, 1030); /* window 1000 dropped; "a" lives in 1010's */
    assert_int_equal(seen_test(s, "a", 1, true, NULL), SEEN_DUP_TRUSTED);
    assert_int_equal(c.refreshes, 2);
    seen_counters sc;
    seen_counters_get(s, &sc);
    assert_int_equal(sc.refreshed, 2);
    assert_int_equal(sc.found_again, 0);
    assert_int_equal(c.records, 1);
    seen_free(s);
}

/* A key nobody links is forgotten: new again, counted found again. */
static void forgotten_key_is_found_again(void **state)
{
    (void)state;
    counting c = { 0 };
    seen_verifier v = { &c, c_record, c_check, c_refresh, NULL };
    seen_opts o = { SEEN_VERIFY_ALWAYS, 0 };
    gens *g = ring(1000, 0.001, 20, 2, 1000);
    seen *s = seen_new_gens(g, &o, &v);
    assert_non_null(s);
    assert_int_equal(seen_test(s, "b", 1, true, NULL), SEEN_NEW_BLOOM);
    tick(g, 1010);
    tick(g, 1020);
    assert_int_equal(gens_query_fp(g, hash_fingerprint("b", 1)), GENS_OLDER);
    tick(g, 1030); /* 1000's window ended at 1010 = 1030 - 20 */
    assert_int_equal(gens_query_fp(g, hash_fingerprint("b", 1)), GENS_NO);
    assert_int_equal(seen_test(s, "b", 1, true, NULL), SEEN_NEW_BLOOM);
    assert_int_equal(c.records, 2);
    /* a ring that forgets never vouches a NO as absent from the store:
     * the forgotten row may still be there */
    assert_int_equal(c.vouched, 0);
    seen_counters sc;
    seen_counters_get(s, &sc);
    assert_int_equal(sc.found_again, 1);
    assert_int_equal(sc.refreshed, 0);
    /* the new record went into the newest window */
    assert_int_equal(gens_query_fp(g, hash_fingerprint("b", 1)), GENS_NEWEST);
    seen_free(s);
}

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_gens.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_gens: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options_are_checked),
        cmocka_unit_test(windows_rotate_on_a_grid),
        cmocka_unit_test(no_retention_is_one_filter),
        cmocka_unit_test(the_memory_cap_is_shared),
        cmocka_unit_test(invariant_within_retention),
        cmocka_unit_test(fpr_over_all_generations),
        cmocka_unit_test(add_at_picks_the_stamps_window),
        cmocka_unit_test(snapshot_holds_every_generation),
        cmocka_unit_test(one_refresh_per_key_per_window),
        cmocka_unit_test(forgotten_key_is_found_again),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
