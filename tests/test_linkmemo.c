/* crawler/linkmemo: exact answers (a hit is always the value recorded for
 * that very key on this page), forgetting at a page boundary, the limits
 * on what is kept, and out of memory. The random test prints its seed;
 * CRAWLD_MEMO_SEED=N repeats it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "crawler/linkmemo.h"
#include "tests/support/seed.h"

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 33) % n;
}

static void repeats_get_the_first_answer(void **state)
{
    (void)state;
    linkmemo *m = linkmemo_new();
    assert_non_null(m);
    linkmemo_reset(m);
    uint32_t v = 0;
    assert_false(linkmemo_get(m, 1, "a.html", 6, &v));
    linkmemo_put(m, 77);
    assert_true(linkmemo_get(m, 1, "a.html", 6, &v));
    assert_int_equal(v, 77);
    /* the tag is part of the key, and so is every byte and the length */
    assert_false(linkmemo_get(m, 2, "a.html", 6, &v));
    assert_false(linkmemo_get(m, 1, "a.htmx", 6, &v));
    assert_false(linkmemo_get(m, 1, "a.htm", 5, &v));
    /* an empty span is a key like any other (a bare "#top") */
    assert_false(linkmemo_get(m, 3, "", 0, &v));
    linkmemo_put(m, 5);
    assert_true(linkmemo_get(m, 3, "", 0, &v));
    assert_int_equal(v, 5);
    /* a put without a preceding miss records nothing */
    assert_true(linkmemo_get(m, 1, "a.html", 6, &v));
    linkmemo_put(m, 99);
    assert_true(linkmemo_get(m, 1, "a.html", 6, &v));
    assert_int_equal(v, 77);
    /* a new page forgets */
    linkmemo_reset(m);
    assert_false(linkmemo_get(m, 1, "a.html", 6, &v));
    assert_false(linkmemo_get(m, 3, "", 0, &v));
    linkmemo_free(m);
    linkmemo_free(NULL);
}

static void long_spans_and_a_full_arena_are_not_kept(void **state)
{
    (void)state;
    linkmemo *m = linkmemo_new();
    assert_non_null(m);
    linkmemo_reset(m);
    static char big[LINKMEMO_SPAN_MAX + 1];
    memset(big, 'x', sizeof big);
    uint32_t v;
    assert_false(linkmemo_get(m, 0, big, LINKMEMO_SPAN_MAX + 1, &v));
    linkmemo_put(m, 1);
    assert_false(linkmemo_get(m, 0, big, LINKMEMO_SPAN_MAX + 1, &v));
    assert_false(linkmemo_get(m, 0, big, LINKMEMO_SPAN_MAX, &v));
    linkmemo_put(m, 2);
    assert_true(linkmemo_get(m, 0, big, LINKMEMO_SPAN_MAX, &v));
    assert_int_equal(v, 2);
    /* fill the arena with distinct long spans: the ones past it miss, the
     * ones kept still answer */
    size_t fits = LINKMEMO_ARENA / LINKMEMO_SPAN_MAX, kept = 0;
    for (size_t i = 0; i < fits + 8; i++) {
        snprintf(big, sizeof big, "%06zu", i);
        big[6] = 'x';
        if (!linkmemo_get(m, 1, big, LINKMEMO_SPAN_MAX, &v))
            linkmemo_put(m, (uint32_t)i);
    }
    for (size_t i = 0; i < fits + 8; i++) {
        snprintf(big, sizeof big, "%06zu", i);
        big[6] = 'x';
        if (linkmemo_get(m, 1, big, LINKMEMO_SPAN_MAX, &v)) {
            assert_int_equal(v, i);
            kept++;
        }
    }
    assert_true(kept > 0 && kept < fits); /* one span went in before the loop */
    /* the next page has the whole arena again */
    linkmemo_reset(m);
    assert_false(linkmemo_get(m, 1, big, LINKMEMO_SPAN_MAX, &v));
    linkmemo_put(m, 3);
    assert_true(linkmemo_get(m, 1, big, LINKMEMO_SPAN_MAX, &v));
    linkmemo_free(m);
}

/* Pages of random links from a small vocabulary, checked against a plain
 * list: a hit must carry the value recorded for that key on this page;
 * a miss is allowed (a slot reused), and the hit rate is reported. */
static void random_pages_against_a_list(void **state)
{
    (void)state;
    uint64_t seed = test_seed("CRAWLD_MEMO_SEED", "memo");
    rng = seed * 2 + 1;
    linkmemo *m = linkmemo_new();
    assert_non_null(m);
    enum { VOCAB = 3000, PER_PAGE = 2000 };
    static char words[VOCAB][24];
    static size_t wlen[VOCAB];
    for (int i = 0; i < VOCAB; i++)
        wlen[i] = (size_t)snprintf(words[i], sizeof words[i], "../p%u/c%d.html", rnd(50), i);
    static uint32_t want[VOCAB][4]; /* per key (word, tag): value + 1, 0 = not recorded */
    size_t hits = 0, repeats = 0;
    for (int page = 0; page < 200; page++) {
        memset(want, 0, sizeof want);
        linkmemo_reset(m);
        int distinct = 1 + (int)rnd(page % 2 ? 60 : 1500);
        for (int k = 0; k < PER_PAGE; k++) {
            int w = (int)rnd((uint32_t)distinct);
            unsigned tag = rnd(4);
            uint32_t v;
            bool hit = linkmemo_get(m, tag, words[w], wlen[w], &v);
            if (want[w][tag] != 0)
                repeats++;
            if (hit) {
                if (want[w][tag] == 0 || v != want[w][tag] - 1)
                    fail_msg("seed %llu page %d: a hit for %s/%u that was never recorded so",
                             (unsigned long long)seed, page, words[w], tag);
                hits++;
            } else {
                uint32_t nv = rnd(1u << 20);
                linkmemo_put(m, nv);
                want[w][tag] = nv + 1;
            }
        }
    }
    print_message("%zu repeats, %zu answered by the memo (%.1f%%)\n", repeats, hits,
                  repeats ? 100.0 * (double)hits / (double)repeats : 0.0);
    assert_true(hits > repeats / 2); /* small pages fit whole; big ones keep some */
    linkmemo_free(m);
}

static void out_of_memory(void **state)
{
    (void)state;
    cr_alloc_fail_after(1);
    linkmemo *m = linkmemo_new();
    cr_alloc_fail_after(0);
    assert_null(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(repeats_get_the_first_answer),
        cmocka_unit_test(long_spans_and_a_full_arena_are_not_kept),
        cmocka_unit_test(random_pages_against_a_list),
        cmocka_unit_test(out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
