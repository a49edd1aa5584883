/* tests/test_striped: common/striped gives exact totals under concurrent
 * adds, and each thread keeps one stripe in range. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/striped.h"

#define THREADS 12
#define ADDS 20000

static cr_striped counters;

struct arg {
    unsigned id;
    unsigned stripe_first, stripe_last;
};

static void *adder(void *p)
{
    struct arg *a = p;
    a->stripe_first = cr_stripe();
    for (unsigned i = 0; i < ADDS; i++) {
        cr_striped_add(&counters, a->id % 3, 1);
        cr_striped_add(&counters, CR_STRIPED_MAX - 1, a->id);
    }
    a->stripe_last = cr_stripe();
    return NULL;
}

static void concurrent_adds_sum_exactly(void **state)
{
    (void)state;
    pthread_t t[THREADS];
    struct arg a[THREADS];
    cr_striped_init(&counters);
    for (unsigned i = 0; i < THREADS; i++) {
        a[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, adder, &a[i]), 0);
    }
    uint64_t want[3] = { 0, 0, 0 }, weighted = 0;
    for (unsigned i = 0; i < THREADS; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(a[i].stripe_first < CR_STRIPES);
        assert_int_equal(a[i].stripe_first, a[i].stripe_last);
        want[i % 3] += ADDS;
        weighted += (uint64_t)i * ADDS;
    }
    for (unsigned k = 0; k < 3; k++)
        assert_int_equal(cr_striped_sum(&counters, k), want[k]);
    assert_int_equal(cr_striped_sum(&counters, CR_STRIPED_MAX - 1), weighted);
    assert_int_equal(cr_striped_sum(&counters, 5), 0);
}

static void init_zeroes(void **state)
{
    (void)state;
    cr_striped_add(&counters, 4, 9);
    assert_int_equal(cr_striped_sum(&counters, 4), 9);
    cr_striped_init(&counters);
    assert_int_equal(cr_striped_sum(&counters, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_adds_sum_exactly),
        cmocka_unit_test(init_zeroes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
