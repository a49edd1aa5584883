/* tests/test_pendset: dedup/pendset, the exact set of keys recorded but not
 * committed yet. Linear probing with backward-shift deletion is checked on
 * hand-placed clusters that wrap around a shard's end, growth on one shard
 * filled far past its first size (and with the growth's allocation failing),
 * and everything against a plain reference under random operations. The
 * random cases print their seed; CRAWLD_TEST_SEED=N replays them. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <errno.h>

#include "common/alloc.h"
#include "dedup/pendset.h"

/* What the module says of its layout, used to place keys on purpose: the
 * shard is the top 6 bits of lo, the home slot its low bits, and a shard
 * starts with 64 slots and doubles once 3/4 full. */
#define SHARD_BITS 58
#define FIRST_SLOTS 64
#define FIRST_FULL (FIRST_SLOTS * 3 / 4) /* keys it holds before the next add grows it */

static uint64_t seed;
static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A key of shard sh whose home slot (in a 64-slot shard) is home. */
static uint64_t lo_at(unsigned sh, unsigned home, unsigned salt)
{
    return ((uint64_t)sh << SHARD_BITS) | ((uint64_t)salt << 12) | (home & (FIRST_SLOTS - 1));
}

static void add_has_del(void **state)
{
    (void)state;
    pendset *p = pendset_new();
    assert_non_null(p);
    assert_int_equal(pendset_count(p), 0);
    assert_int_equal(pendset_has(p, 1, 2), 0);
    assert_int_equal(pendset_add(p, 1, 2), 1);
    assert_int_equal(pendset_add(p, 1, 2), 0);
    assert_int_equal(pendset_add(p, 2, 1), 1); /* halves are not interchangeable */
    assert_int_equal(pendset_has(p, 1, 2), 1);
    assert_int_equal(pendset_has(p, 2, 1), 1);
    assert_int_equal(pendset_has(p, 1, 3), 0);
    assert_int_equal(pendset_count(p), 2);
    pendset_del(p, 1, 3); /* absent: no effect */
    assert_int_equal(pendset_count(p), 2);
    pendset_del(p, 1, 2);
    assert_int_equal(pendset_has(p, 1, 2), 0);
    assert_int_equal(pendset_has(p, 2, 1), 1);
    assert_int_equal(pendset_count(p), 1);
    pendset_del(p, 1, 2); /* twice: no effect */
    assert_int_equal(pendset_count(p), 1);
    pendset_free(p);
    pendset_free(NULL);
}

/* The all-zero fingerprint marks an empty slot inside; as a key it works. */
static void zero_key_is_a_key(void **state)
{
    (void)state;
    pendset *p = pendset_new();
    assert_non_null(p);
    assert_int_equal(pendset_add(p, 0, 0), 1);
    assert_int_equal(pendset_has(p, 0, 0), 1);
    assert_int_equal(pendset_add(p, 0, 0), 0);
    assert_int_equal(pendset_count(p), 1);
    pendset_del(p, 0, 0);
    assert_int_equal(pendset_has(p, 0, 0), 0);
    assert_int_equal(pendset_count(p), 0);
    pendset_free(p);
}

/* A cluster around the shard's last slots, wrapping to slot 0: keys at
 * home 61..63 and 0..1 with several per home, so a deletion has to pull
 * later entries back across the wrap, but never one past its home. Every
 * deletion order of every subset is tried (2^8 subsets; the orders by
 * rotation), and after each step every key still in is found, every key
 * deleted is not, and re-adding is possible. */
static void backward_shift_across_wrap(void **state)
{
    (void)state;
    static const unsigned homes[] = { 62, 62, 63, 61, 0, 62, 1, 0 };
    enum { N = sizeof homes / sizeof homes[0] };
    uint64_t lo[N], hi[N];

    for (unsigned i = 0; i < N; i++) {
        lo[i] = lo_at(7, homes[i], i + 1);
        hi[i] = 1000 + i;
    }
    for (unsigned subset = 1; subset < (1u << N); subset++) {
        for (unsigned rot = 0; rot < N; rot++) {
            pendset *p = pendset_new();
            int in[N];
            assert_non_null(p);
            for (unsigned i = 0; i < N; i++) {
                assert_int_equal(pendset_add(p, lo[i], hi[i]), 1);
                in[i] = 1;
            }
            for (unsigned k = 0; k < N; k++) {
                unsigned i = (k + rot) % N;
                if (!(subset & (1u << i)))
                    continue;
                pendset_del(p, lo[i], hi[i]);
                in[i] = 0;
                size_t left = 0;
                for (unsigned j = 0; j < N; j++) {
                    if (pendset_has(p, lo[j], hi[j]) != in[j])
                        fail_msg("subset %#x rot %u: after deleting %u, key %u (home %u) is %s",
                                 subset, rot, i, j, homes[j], in[j] ? "lost" : "still there");
                    left += (size_t)in[j];
                }
                assert_int_equal(pendset_count(p), left);
            }
            /* the slots freed are reusable: every key goes back in once */
            for (unsigned i = 0; i < N; i++)
                assert_int_equal(pendset_add(p, lo[i], hi[i]), !in[i]);
            assert_int_equal(pendset_count(p), N);
            pendset_free(p);
        }
    }
}

/* 20,000 keys in one shard: it doubles many times, keeps every key and
 * forgets exactly the ones deleted. */
static void one_shard_grows(void **state)
{
    (void)state;
    enum { N = 20000 };
    pendset *p = pendset_new();
    assert_non_null(p);
    for (unsigned i = 0; i < N; i++)
        assert_int_equal(pendset_add(p, lo_at(3, i * 7u, i), i), 1);
    assert_int_equal(pendset_count(p), N);
    for (unsigned i = 0; i < N; i += 2)
        pendset_del(p, lo_at(3, i * 7u, i), i);
    assert_int_equal(pendset_count(p), N / 2);
    for (unsigned i = 0; i < N; i++)
        if (pendset_has(p, lo_at(3, i * 7u, i), i) != (int)(i & 1))
            fail_msg("key %u: has %d", i, pendset_has(p, lo_at(3, i * 7u, i), i));
    pendset_free(p);
}

/* The add that needs a bigger shard cannot get it: -ENOMEM, nothing added,
 * nothing lost, and the next add (memory back) grows and succeeds. */
static void growth_out_of_memory(void **state)
{
    (void)state;
    pendset *p = pendset_new();
    assert_non_null(p);
    for (unsigned i = 0; i < FIRST_FULL; i++)
        assert_int_equal(pendset_add(p, lo_at(9, i, i), i), 1);
    assert_int_equal(pendset_count(p), FIRST_FULL);
    cr_alloc_fail_after(1);
    int rc = pendset_add(p, lo_at(9, 5, 999), 999);
    long failed = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(rc, -ENOMEM);
    assert_int_equal(failed, 1);
    assert_int_equal(pendset_has(p, lo_at(9, 5, 999), 999), 0);
    assert_int_equal(pendset_count(p), FIRST_FULL);
    for (unsigned i = 0; i < FIRST_FULL; i++)
        assert_int_equal(pendset_has(p, lo_at(9, i, i), i), 1);
    /* a present key needs no growth: still answered while memory is out */
    cr_alloc_fail_after(1);
    rc = pendset_add(p, lo_at(9, 0, 0), 0);
    cr_alloc_fail_after(0);
    assert_int_equal(rc, 0);
    /* another shard is not full: its adds need no memory */
    cr_alloc_fail_after(1);
    rc = pendset_add(p, lo_at(10, 0, 0), 0);
    cr_alloc_fail_after(0);
    assert_int_equal(rc, 1);
    assert_int_equal(pendset_add(p, lo_at(9, 5, 999), 999), 1);
    assert_int_equal(pendset_count(p), FIRST_FULL + 2);
    for (unsigned i = 0; i < FIRST_FULL; i++)
        assert_int_equal(pendset_has(p, lo_at(9, i, i), i), 1);
    pendset_free(p);
}

static void new_out_of_memory(void **state)
{
    (void)state;
    long n;
    pendset *p = NULL;
    for (n = 1; n < 1000 && p == NULL; n++) {
        cr_alloc_fail_after(n);
        p = pendset_new();
        cr_alloc_fail_after(0);
    }
    assert_non_null(p);
    assert_true(n > 2); /* the first allocations did fail, and were undone */
    assert_int_equal(pendset_add(p, 4, 4), 1);
    assert_int_equal(pendset_has(p, 4, 4), 1);
    pendset_free(p);
}

/* Random adds, lookups and deletions against a flat array. Keys come from a
 * small pool crowded into two shards and a few home slots, so probe runs
 * are long, wrap, and the shards grow and refill. */
static void random_against_reference(void **state)
{
    (void)state;
    enum { POOL = 3000, STEPS = 300000 };
    uint64_t(*key)[2] = malloc(POOL * sizeof *key);
    unsigned char *in = calloc(POOL, 1);
    size_t count = 0;
    pendset *p = pendset_new();
    assert_non_null(key);
    assert_non_null(in);
    assert_non_null(p);
    rng_state = seed ^ 0x70656e64ull;
    for (unsigned i = 0; i < POOL; i++) {
        unsigned sh = (unsigned)(rnd() % 2) * 63;
        unsigned home = (unsigned)(rnd() % 4) + 60; /* 60..63: wraps at every size */
        key[i][0] = ((uint64_t)sh << SHARD_BITS) | ((rnd() & 0xFFFFFFull) << 20) | home;
        key[i][1] = rnd();
        if (i % 500 == 0) { /* the all-zero key and neighbours */
            key[i][0] = 0;
            key[i][1] = i == 0 ? 0 : i;
        }
    }
    for (unsigned step = 0; step < STEPS; step++) {
        unsigned i = (unsigned)(rnd() % POOL);
        unsigned op = (unsigned)(rnd() % 8);
        if (op < 4) {
            int rc = pendset_add(p, key[i][0], key[i][1]);
            if (rc != !in[i])
                fail_msg("seed %llu step %u: add %u returned %d, reference %d",
                         (unsigned long long)seed, step, i, rc, !in[i]);
            count += !in[i];
            in[i] = 1;
        } else if (op < 7) {
            pendset_del(p, key[i][0], key[i][1]);
            count -= in[i];
            in[i] = 0;
        } else if (pendset_has(p, key[i][0], key[i][1]) != in[i]) {
            fail_msg("seed %llu step %u: has %u is %d, reference %d", (unsigned long long)seed,
                     step, i, !in[i], in[i]);
        }
        if (step % 10007 == 0) {
            assert_int_equal(pendset_count(p), count);
            for (unsigned j = 0; j < POOL; j++)
                if (pendset_has(p, key[j][0], key[j][1]) != in[j])
                    fail_msg("seed %llu step %u: key %u is %d, reference %d",
                             (unsigned long long)seed, step, j, !in[j], in[j]);
        }
    }
    assert_int_equal(pendset_count(p), count);
    pendset_free(p);
    free(in);
    free(key);
}

/* Threads adding and deleting their own keys in shared shards: each sees
 * exactly its own keys, and nothing is left at the end. */
typedef struct worker {
    pendset *p;
    unsigned id;
    int bad;
} worker;

static void *churn(void *arg)
{
    worker *w = arg;
    for (unsigned round = 0; round < 4; round++) {
        for (unsigned i = 0; i < 5000; i++)
            w->bad += pendset_add(w->p, lo_at(i % 4, i, i), ((uint64_t)w->id << 32) | i) != 1;
        for (unsigned i = 0; i < 5000; i++)
            w->bad += pendset_has(w->p, lo_at(i % 4, i, i), ((uint64_t)w->id << 32) | i) != 1;
        for (unsigned i = 0; i < 5000; i++)
            pendset_del(w->p, lo_at(i % 4, i, i), ((uint64_t)w->id << 32) | i);
        for (unsigned i = 0; i < 5000; i += 7)
            w->bad += pendset_has(w->p, lo_at(i % 4, i, i), ((uint64_t)w->id << 32) | i) != 0;
    }
    return NULL;
}

static void threads_share_shards(void **state)
{
    (void)state;
    pendset *p = pendset_new();
    pthread_t t[4];
    worker w[4];
    assert_non_null(p);
    for (unsigned i = 0; i < 4; i++) {
        w[i] = (worker){ p, i + 1, 0 };
        assert_int_equal(pthread_create(&t[i], NULL, churn, &w[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    assert_int_equal(pendset_count(p), 0);
    pendset_free(p);
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("test_pendset: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_has_del),
        cmocka_unit_test(zero_key_is_a_key),
        cmocka_unit_test(backward_shift_across_wrap),
        cmocka_unit_test(one_shard_grows),
        cmocka_unit_test(growth_out_of_memory),
        cmocka_unit_test(new_out_of_memory),
        cmocka_unit_test(random_against_reference),
        cmocka_unit_test(threads_share_shards),
    };
    return cmocka_run_group_tests_name("pendset", tests, NULL, NULL);
}
