/* tests/test_recent: the exact FIFO fingerprint cache, against a model. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "dedup/recent.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void second_add_is_a_hit(void **state)
{
    (void)state;
    recent *r = recent_new(1000);
    assert_non_null(r);
    assert_false(recent_check_add(r, 1, 2));
    assert_true(recent_check_add(r, 1, 2));
    assert_true(recent_contains(r, 1, 2));
    assert_false(recent_contains(r, 2, 1));
    assert_false(recent_check_add(r, 0, 0)); /* the all-zero fingerprint is a key too */
    assert_true(recent_check_add(r, 0, 0));
    assert_int_equal(recent_size(r), 2);
    recent_free(r);
}

static void zero_capacity_always_misses(void **state)
{
    (void)state;
    recent *r = recent_new(0);
    assert_non_null(r);
    assert_false(recent_check_add(r, 5, 5));
    assert_false(recent_check_add(r, 5, 5));
    assert_int_equal(recent_size(r), 0);
    recent_free(r);
}

/* Model: per shard (hi >> 60), a FIFO of at most `per` fingerprints. */
#define SHARDS 16
typedef struct model {
    uint64_t (*keys)[2];
    size_t per, n[SHARDS], head[SHARDS];
} model;

static bool model_check_add(model *m, uint64_t lo, uint64_t hi)
{
    size_t s = hi >> 60;
    uint64_t(*ring)[2] = m->keys + s * m->per;
    for (size_t i = 0; i < m->n[s]; i++) {
        size_t at = (m->head[s] + i) % m->per;
        if (ring[at][0] == lo && ring[at][1] == hi)
            return true;
    }
    if (m->n[s] == m->per) {
        m->head[s] = (m->head[s] + 1) % m->per;
        m->n[s]--;
    }
    size_t at = (m->head[s] + m->n[s]) % m->per;
    ring[at][0] = lo;
    ring[at][1] = hi;
    m->n[s]++;
    return false;
}

static void matches_fifo_model_under_churn(void **state)
{
    (void)state;
    size_t cap = 16 * 50;
    recent *r = recent_new(cap);
    model m = { calloc(cap, sizeof(uint64_t[2])), cap / SHARDS, { 0 }, { 0 } };
    assert_non_null(r);
    assert_non_null(m.keys);
    /* draw from a pool a few times larger than the cache: hits and evictions */
    size_t pool = 3000;
    uint64_t(*keys)[2] = malloc(pool * sizeof *keys);
    assert_non_null(keys);
    for (size_t i = 0; i < pool; i++) {
        keys[i][0] = rnd();
        keys[i][1] = rnd();
        if (i % 7 == 0) /* low bits colliding: long probe chains */
            keys[i][0] &= ~(uint64_t)0xFFF;
    }
    size_t hits = 0;
    for (int i = 0; i < 200000; i++) {
        size_t k = (size_t)(rnd() % pool);
        if (i % 3 == 0)
            k %= 200; /* a hot subset, so hits are frequent */
        bool want = model_check_add(&m, keys[k][0], keys[k][1]);
        bool got = recent_check_add(r, keys[k][0], keys[k][1]);
        if (want != got)
            fail_msg("step %d key %zu: model %d cache %d", i, k, want, got);
        hits += got;
    }
    assert_true(hits > 10000);
    assert_true(recent_size(r) <= cap);
    free(keys);
    free(m.keys);
    recent_free(r);
}

static recent *shared;

static void *adder(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < 20000; i++)
        recent_check_add(shared, base * 1000003 + i, (i * 0x9E3779B97F4A7C15ull) ^ base);
    return NULL;
}

static void concurrent_adds_are_all_held(void **state)
{
    (void)state;
    shared = recent_new(1 << 20);
    assert_non_null(shared);
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, adder, (void *)(i + 1)), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(recent_size(shared), 80000);
    for (uint64_t b = 1; b <= 4; b++)
        for (uint64_t i = 0; i < 20000; i += 997)
            assert_true(recent_contains(shared, b * 1000003 + i, (i * 0x9E3779B97F4A7C15ull) ^ b));
    recent_free(shared);
}

static void new_survives_out_of_memory(void **state)
{
    (void)state;
    for (long n = 1; n < 1000; n++) {
        cr_alloc_fail_after(n);
        recent *r = recent_new(4096);
        cr_alloc_fail_after(0);
        if (r != NULL) {
            assert_false(recent_check_add(r, 3, 4));
            recent_free(r);
            return;
        }
    }
    fail_msg("recent_new never succeeded");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_add_is_a_hit),
        cmocka_unit_test(zero_capacity_always_misses),
        cmocka_unit_test(matches_fifo_model_under_churn),
        cmocka_unit_test(concurrent_adds_are_all_held),
        cmocka_unit_test(new_survives_out_of_memory),
    };
    return cmocka_run_group_tests_name("recent", tests, NULL, NULL);
}
