/* tests/test_charset: the charset decision (crawler/web/charset.c) on its
 * own: BOM before header before <meta> before the default, the prescan's
 * rules (http-equiv needed for content=, comments skipped, the 1024-byte
 * window, UTF-16 labels read as UTF-8), the Content-Type parameter, and
 * random input. Random cases print their seed; CRAWLD_TEST_SEED=N replays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "crawler/web/charset.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static charset_choice sniff(const char *page, const char *header_label)
{
    charset_choice c;
    const char *name = charset_sniff(page, strlen(page), header_label, &c);
    assert_ptr_equal(name, c.name);
    return c;
}

static void test_bom_wins(void **state)
{
    (void)state;
    const char *meta = "<meta charset=\"koi8-r\">";
    char page[64];
    snprintf(page, sizeof page, "\xEF\xBB\xBF%s", meta);
    charset_choice c = sniff(page, "windows-1251");
    assert_string_equal(c.name, "UTF-8");
    assert_int_equal(c.source, CHARSET_FROM_BOM);
    assert_int_equal(c.bom_len, 3);
    snprintf(page, sizeof page, "\xFF\xFE%s", meta);
    c = sniff(page, "windows-1251");
    assert_string_equal(c.name, "UTF-16LE");
    assert_int_equal(c.bom_len, 2);
    assert_int_equal(c.unit, 2);
    assert_int_equal(c.mode, CHARSET_ICONV);
    snprintf(page, sizeof page, "\xFE\xFF%s", meta);
    c = sniff(page, NULL);
    assert_string_equal(c.name, "UTF-16BE");
    assert_int_equal(c.source, CHARSET_FROM_BOM);
}

static void test_header_before_meta(void **state)
{
    (void)state;
    const char *page = "<html><meta charset=\"koi8-r\"><a href=x>";
    charset_choice c = sniff(page, "windows-1251");
    assert_string_equal(c.name, "CP1251");
    assert_int_equal(c.source, CHARSET_FROM_HEADER);
    assert_int_equal(c.bom_len, 0);
    /* an unknown header label counts as none */
    c = sniff(page, "x-no-such-charset");
    assert_string_equal(c.name, "KOI8-R");
    assert_int_equal(c.source, CHARSET_FROM_META);
    /* windows-1252 is read as ISO-8859-1, by hand */
    c = sniff(page, "windows-1252");
    assert_string_equal(c.name, "ISO-8859-1");
    assert_int_equal(c.mode, CHARSET_LATIN1);
}

static void test_prescan_rules(void **state)
{
    (void)state;
    charset_choice c = sniff("<meta http-equiv=\"Content-Type\" "
                             "content=\"text/html; charset=ISO-8859-2\">", "");
    assert_string_equal(c.name, "ISO-8859-2");
    assert_int_equal(c.source, CHARSET_FROM_META);
    /* content= without the http-equiv pragma is not a declaration */
    c = sniff("<meta content=\"text/html; charset=ISO-8859-2\">", "");
    assert_int_equal(c.source, CHARSET_FROM_DEFAULT);
    assert_string_equal(c.name, "UTF-8");
    /* inside a comment it does not count */
    c = sniff("<!-- <meta charset=koi8-r> --><p>", NULL);
    assert_int_equal(c.source, CHARSET_FROM_DEFAULT);
    /* an unclosed comment ends the prescan */
    c = sniff("<!-- <p> <meta charset=koi8-r>", NULL);
    assert_int_equal(c.source, CHARSET_FROM_DEFAULT);
    /* a page in UTF-16 could not have said so in ASCII */
    assert_string_equal(charset_prescan("<meta charset=utf-16le>", 23), "UTF-8");
    /* unquoted, upper case, after other tags */
    assert_string_equal(charset_prescan("<head><title>x</title><META CHARSET=Shift_JIS>", 46),
                        "CP932");
    assert_null(charset_prescan("<p>no declaration</p>", 21));
    assert_null(charset_prescan("", 0));
}

static void test_header_label(void **state)
{
    (void)state;
    char out[CHARSET_LABEL_MAX];
    charset_header_label("text/html; foo=bar; Charset=\" ISO-8859-2 \"; charset=koi8-r", out);
    assert_string_equal(out, "iso-8859-2");
    charset_header_label("text/html", out);
    assert_string_equal(out, "");
    charset_header_label(NULL, out);
    assert_string_equal(out, "");
    char ct[200];
    snprintf(ct, sizeof ct, "text/html; charset=%0*d", CHARSET_LABEL_MAX, 0);
    charset_header_label(ct, out);
    assert_string_equal(out, ""); /* too long to be a label */
    assert_true(charset_label_known("utf-8"));
    assert_true(charset_label_known("latin1"));
    assert_false(charset_label_known(""));
    assert_false(charset_label_known("utf-7"));
}

/* A <meta> counts exactly when the whole tag lies in the first 1024 bytes. */
static void test_window_edge(void **state)
{
    (void)state;
    const char *tag = "<meta charset=\"koi8-r\">";
    size_t tl = strlen(tag);
    char *page = malloc(CHARSET_SNIFF_MAX + 200);
    assert_non_null(page);
    for (int round = 0; round < 200; round++) {
        size_t pad = (size_t)(rnd() % (CHARSET_SNIFF_MAX + 100 - tl));
        memset(page, 'x', pad);
        memcpy(page + pad, tag, tl + 1);
        const char *got = charset_prescan(page, pad + tl);
        if (pad + tl <= CHARSET_SNIFF_MAX)
            assert_non_null(got);
        else
            assert_null(got);
        if (got)
            assert_string_equal(got, "KOI8-R");
    }
    free(page);
}

/* Random bytes (with many '<', quotes and meta-ish words): an answer from
 * the table, never a crash or a read past len (ASan). */
static void test_random_bytes(void **state)
{
    (void)state;
    static const char *const bits[] = { "<", ">", "\"", "'", "=", " ", "/", "meta", "charset",
                                        "content", "http-equiv", "<!--", "-->", "utf-8", "koi8-r",
                                        ";", "\xFF", "\xFE" };
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(rnd() % 1500), len = 0;
        unsigned char *buf = malloc(n + 16);
        assert_non_null(buf);
        while (len < n) {
            const char *b = bits[rnd() % (sizeof bits / sizeof bits[0])];
            size_t bl = strlen(b);
            if (len + bl > n)
                break;
            memcpy(buf + len, b, bl);
            len += bl;
        }
        unsigned char *exact = malloc(len ? len : 1); /* so ASan sees overreads */
        assert_non_null(exact);
        memcpy(exact, buf, len);
        charset_choice c;
        const char *name = charset_sniff(exact, len, NULL, &c);
        assert_non_null(name);
        assert_true(c.unit == 1 || c.unit == 2);
        assert_true(c.bom_len <= len);
        free(exact);
        free(buf);
    }
}

int main(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    if (seed == 0)
        seed = 1;
    printf("test_charset: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bom_wins),
        cmocka_unit_test(test_header_before_meta),
        cmocka_unit_test(test_prescan_rules),
        cmocka_unit_test(test_header_label),
        cmocka_unit_test(test_window_edge),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
