/* tests/test_css: crawler/web/css, the stylesheet reference scanner.
 *
 * Each case scans a stylesheet and compares the references as text, one
 * line each: "U url" for url() and image-set() strings, "I url" for
 * @import. Cases follow CSS Syntax Level 3's tokenization where it decides
 * what is a URL, then the caps and hostile inputs. A random part scans
 * random mixtures of the tokens; it prints its seed and takes one back from
 * CRAWLD_TEST_SEED. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/css.h"

static void collect(void *ud, const css_ref *r)
{
    cr_buf *b = ud;
    assert_non_null(r->url);
    assert_true(r->len > 0);
    assert_int_equal(strlen(r->url), r->len);
    assert_int_equal(cr_buf_printf(b, "%c %s\n", r->kind == CSS_REF_IMPORT ? 'I' : 'U', r->url),
                     0);
}

/* Scans css with options o (NULL: defaults) and checks the references. */
static void check_opts(const char *css, size_t len, const css_opts *o, const char *want,
                       css_stats *st)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    css_stats local;
    assert_int_equal(css_scan(css, len, o, collect, &out, st ? st : &local), 0);
    const char *got = out.data ? out.data : "";
    if (strcmp(got, want) != 0)
        fail_msg("css:\n%s\nwant:\n%sgot:\n%s", css, want, got);
    cr_buf_release(&out);
}

static void check(const char *css, const char *want)
{
    check_opts(css, strlen(css), NULL, want, NULL);
}

static void check_decls(const char *css, const char *want)
{
    css_opts o = { .declarations = 1 };
    check_opts(css, strlen(css), &o, want, NULL);
}

/* ---- url() ------------------------------------------------------------------ */

static void url_forms(void **state)
{
    (void)state;
    check("a { background: url(a.png) }", "U a.png\n");
    check("a{background:url( b.png )}", "U b.png\n");
    check("a { background: url(\"c d.png\") }", "U c d.png\n");
    check("a { background: url( 'e.png' ) }", "U e.png\n");
    check("a { background: URL(F.png) }", "U F.png\n");
    check("a { b: url(/x/y.png?q=1#f) }", "U /x/y.png?q=1#f\n");
    check("a { b: url(http://cdn.test/i.png) url(//cdn.test/j.png) }",
          "U http://cdn.test/i.png\nU //cdn.test/j.png\n");
    check("@font-face { src: local(x), url(f.woff2) format(\"woff2\"), url('f.woff') }",
          "U f.woff2\nU f.woff\n");
    /* escapes in the url token and in the name */
    check("a { b: url(a\\)b.png) }", "U a)b.png\n");
    check("a { b: url(\\61 .png) }", "U a.png\n");
    check("a { b: \\75 rl(esc.png) }", "U esc.png\n");
    check("a { b: u\\72l(\"esc2.png\") }", "U esc2.png\n");
    check("a { b: url(caf\\e9.png) }", "U caf\xc3\xa9.png\n");
    check("a { b: url(\"caf\xc3\xa9.png\") }", "U caf\xc3\xa9.png\n");
    /* url at the very end closes itself */
    check("a { b: url(end.png", "U end.png\n");
    check("a { b: url(\"end2.png\"", "U end2.png\n");
}

static void not_urls(void **state)
{
    (void)state;
    /* comments, strings, other functions, dimensions and hashes */
    check("/* url(a.png) */ a { content: \"url(b.png)\" }", "");
    check("a { b: 1url(c.png) }", "");
    check("a { b: #url(d.png) }", "");
    check("a { b: -url(e.png) --url(f.png) myurl(g.png) }", "");
    check("a { b: attr(url) }", "");
    check("a { content: 'x' \"y\" }", "");
    /* @namespace names a namespace, nothing to fetch */
    check("@namespace svg url(http://www.w3.org/2000/svg);\n"
          "@namespace \"http://www.w3.org/1999/xhtml\";\na { b: url(h.png) }",
          "U h.png\n");
}

static void drops(void **state)
{
    (void)state;
    css_stats st;
    const char *css = "a { b: url() url('') url(  ) url(data:image/png;base64,AA==) "
                      "url(\"DATA:x\") url(#filter) url('#m') url(x\"y) url(p q) url(ok.png) }";
    check_opts(css, strlen(css), NULL, "U ok.png\n", &st);
    assert_int_equal(st.dropped[CSS_DROP_EMPTY], 3);
    assert_int_equal(st.dropped[CSS_DROP_DATA], 2);
    assert_int_equal(st.dropped[CSS_DROP_FRAGMENT], 2);
    assert_int_equal(st.dropped[CSS_DROP_BAD_URL], 2);
    assert_int_equal(st.refs, 1);
    /* a bad url swallows up to its ')' and no further */
    check("a { b: url(x(y) url(after.png) }", "U after.png\n");
    check("a { b: url(x\\\ny) url(after2.png) }", "U after2.png\n");
    /* a bad string (an unescaped newline) is no URL; the line goes on */
    const char *bad = "a { b: url(\"bad\n.png); c: url(z.png) }";
    check_opts(bad, strlen(bad), NULL, "U z.png\n", &st);
    assert_int_equal(st.dropped[CSS_DROP_BAD_URL], 1);
}

static void strings_and_escapes(void **state)
{
    (void)state;
    /* a line continuation inside a string */
    check("a { b: url(\"long\\\nname.png\") }", "U longname.png\n");
    check("a { b: url(\"crlf\\\r\nname.png\") }", "U crlfname.png\n");
    /* hex escapes eat one whitespace; 0 and surrogates become U+FFFD */
    check("a { b: url(\"\\41  B.png\") }", "U A B.png\n");
    check("a { b: url(\"\\0.png\") }", "U \xef\xbf\xbd.png\n");
    check("a { b: url(\"\\d800.png\") }", "U \xef\xbf\xbd.png\n");
    check("a { b: url(\"\\110000.png\") }", "U \xef\xbf\xbd.png\n");
    /* a NUL byte and invalid UTF-8 become U+FFFD, counted */
    css_stats st;
    static const char nul[] = "a { b: url(n\0l.png) url(\"\xff.png\") }";
    check_opts(nul, sizeof nul - 1, NULL,
               "U n\xef\xbf\xbdl.png\nU \xef\xbf\xbd.png\n", &st);
    assert_int_equal(st.invalid, 2);
}

/* ---- image-set ---------------------------------------------------------------- */

static void image_set(void **state)
{
    (void)state;
    check("a { b: image-set(\"a.png\" 1x, \"a2.png\" 2x) }", "U a.png\nU a2.png\n");
    check("a { b: -webkit-image-set(url(w.png) 1x, 'w2.png' 2x) }", "U w.png\nU w2.png\n");
    /* strings nested deeper are not URLs: type() names a MIME type */
    check("a { b: image-set(\"t.avif\" type(\"image/avif\"), \"t.png\" 1x) }",
          "U t.avif\nU t.png\n");
    /* after the image-set closes, strings are text again */
    check("a { b: image-set(\"i.png\" 1x); content: \"not.png\" }", "U i.png\n");
}

/* ---- @import -------------------------------------------------------------- */

static void imports(void **state)
{
    (void)state;
    check("@import \"a.css\";\n@import url(b.css) screen;\n@import url('c.css') layer(x);\n"
          "@import 'd.css' supports(display: grid) print;",
          "I a.css\nI b.css\nI c.css\nI d.css\n");
    check("@charset \"utf-8\";\n@layer base;\n@import \"e.css\";", "I e.css\n");
    check("@IMPORT \"f.css\";", "I f.css\n");
    /* the media list's own strings and urls are not imports */
    check("@import \"g.css\" \"h.css\";", "I g.css\n");
    /* not a string or url after @import: nothing */
    check("@import foo \"i.css\";", "");
}

static void late_imports_ignored(void **state)
{
    (void)state;
    css_stats st;
    const char *css = "a { color: red }\n@import \"late.css\";\n@import url(late2.css);\n"
                      "b { background: url(ok.png) }";
    check_opts(css, strlen(css), NULL, "U ok.png\n", &st);
    assert_int_equal(st.dropped[CSS_DROP_LATE_IMPORT], 2);
    assert_int_equal(st.imports, 0);
    check("@media print { a { b: c } }\n@import \"late3.css\";", "");
    /* in a style attribute, @import means nothing */
    check_decls("@import \"x.css\"; background: url(y.png)", "U y.png\n");
}

static void style_attribute(void **state)
{
    (void)state;
    check_decls("background-image: url('bg.png'); color: red", "U bg.png\n");
    check_decls("background: url(a.png), url(\"b.png\")", "U a.png\nU b.png\n");
}

static void cdo_cdc_and_comments(void **state)
{
    (void)state;
    check("<!-- a { b: url(x.png) } -->", "U x.png\n");
    check("a { b: url(y.png) } /* unclosed url(z.png)", "U y.png\n");
    check("/**/a{b:url(q.png)}/***/", "U q.png\n");
    check("a { b: url(/*x*/y.png) }", "U /*x*/y.png\n");
    check("a { b: url(/*not a comment*/x.png) }", "");
}

/* ---- caps and hostile input ------------------------------------------------ */

static void max_refs_cap(void **state)
{
    (void)state;
    cr_buf css;
    cr_buf_init(&css, 0);
    for (int i = 0; i < 50; i++)
        assert_int_equal(cr_buf_printf(&css, "a%d { b: url(i%d.png) }\n", i, i), 0);
    css_opts o = { .max_refs = 7 };
    css_stats st;
    cr_buf want;
    cr_buf_init(&want, 0);
    for (int i = 0; i < 7; i++)
        assert_int_equal(cr_buf_printf(&want, "U i%d.png\n", i), 0);
    check_opts(css.data, css.len, &o, want.data, &st);
    assert_int_equal(st.refs, 7);
    assert_int_equal(st.dropped[CSS_DROP_MAX_REFS], 43);
    cr_buf_release(&css);
    cr_buf_release(&want);
}

static void max_url_cap(void **state)
{
    (void)state;
    char css[200];
    css_opts o = { .max_url = 10 };
    css_stats st;
    snprintf(css, sizeof css, "a { b: url(0123456789) url(0123456789a) url(\"%s\") }",
             "0123456789b");
    check_opts(css, strlen(css), &o, "U 0123456789\n", &st);
    assert_int_equal(st.dropped[CSS_DROP_TOO_LONG], 2);
    /* a multi-byte character that would pass the cap counts as too long */
    check_opts("url(123456789\xc3\xa9)", strlen("url(123456789\xc3\xa9)"), &o, "", &st);
    assert_int_equal(st.dropped[CSS_DROP_TOO_LONG], 1);
}

static void max_bytes_cap(void **state)
{
    (void)state;
    const char *css = "a { b: url(first.png) } c { d: url(second.png) }";
    css_opts o = { .max_bytes = 24 };
    css_stats st;
    check_opts(css, strlen(css), &o, "U first.png\n", &st);
    assert_int_equal(st.truncated, CSS_TRUNC);
    assert_int_equal(st.bytes, strlen(css));
    /* cut inside a url: what was scanned closes it, as at the end */
    o.max_bytes = 16;
    check_opts(css, strlen(css), &o, "U first\n", &st);
}

/* Inputs built to make a careless tokenizer quadratic or stuck: all run in
 * one pass (the test would time out otherwise) and find what they should. */
static void hostile_inputs(void **state)
{
    (void)state;
    size_t n = 4u << 20;
    char *big = malloc(n + 64);
    assert_non_null(big);
    css_stats st;
    /* an unclosed comment full of stars */
    memcpy(big, "/*", 2);
    memset(big + 2, '*', n - 2);
    check_opts(big, n, NULL, "", &st);
    /* an unclosed url of 4 MiB: too long, nothing else */
    memcpy(big, "url(", 4);
    memset(big + 4, 'a', n - 4);
    check_opts(big, n, NULL, "", &st);
    assert_int_equal(st.dropped[CSS_DROP_TOO_LONG], 1);
    /* 4 MiB of open parentheses, then an image-set string */
    memset(big, '(', n);
    check_opts(big, n, NULL, "", &st);
    /* a million bad urls */
    size_t k = 0;
    while (k + 8 <= n) {
        memcpy(big + k, "url(a\"b)", 8);
        k += 8;
    }
    check_opts(big, k, NULL, "", &st);
    assert_int_equal(st.dropped[CSS_DROP_BAD_URL], k / 8);
    /* backslashes and escapes everywhere */
    for (size_t i = 0; i < n; i++)
        big[i] = i % 3 == 0 ? '\\' : i % 3 == 1 ? 'f' : '\n';
    check_opts(big, n, NULL, "", &st);
    free(big);
}

static void null_input_and_defaults(void **state)
{
    (void)state;
    css_stats st;
    cr_buf out;
    cr_buf_init(&out, 0);
    assert_int_equal(css_scan(NULL, 0, NULL, collect, &out, &st), 0);
    assert_int_equal(st.refs, 0);
    assert_int_equal(css_scan("", 0, NULL, collect, &out, NULL), 0);
    assert_null(out.data);
    assert_string_equal(css_drop_name(CSS_DROP_LATE_IMPORT), "late_import");
    assert_string_equal(css_drop_name(CSS_DROP_EMPTY), "empty");
    assert_string_equal(css_drop_name(CSS_DROP__COUNT), "?");
    assert_string_equal(css_drop_name(-1), "?");
}

static void out_of_memory(void **state)
{
    (void)state;
    cr_buf out;
    cr_buf_init(&out, 0);
    cr_alloc_fail_after(1);
    int rc = css_scan("a { b: url(x.png) }", 19, NULL, collect, &out, NULL);
    cr_alloc_fail_after(0);
    assert_int_equal(rc, -ENOMEM);
    assert_null(out.data);
}

/* ---- random mixtures ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* Pieces that hold a known number of references, and noise that holds
 * none and cannot join its neighbours into one (each ends in a blank or
 * a closed construct). The scanner must find exactly the references. */
static void random_mixtures(void **state)
{
    (void)state;
    uint64_t seed = (uint64_t)time(NULL);
    const char *env = getenv("CRAWLD_TEST_SEED");
    if (env != NULL)
        seed = strtoull(env, NULL, 10);
    print_message("random_mixtures: seed %llu (CRAWLD_TEST_SEED=%llu to repeat)\n",
                  (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed | 1;
    static const struct piece {
        const char *text;
        int refs;
    } pieces[] = {
        { "a { b: url(x.png) } ", 1 },
        { "c{d:url( \"y z.png\" )} ", 1 },
        { "e { f: image-set('i.png' 1x, url(j.png) 2x) } ", 2 },
        { "/* url(no.png) */ ", 0 },
        { "g { content: \"url(no.png)\" } ", 0 },
        { "h { w: 10px; u: 1url(no.png) } ", 0 },
        { "k { b: url(data:x) url(#f) } ", 0 },
        { "m { b: url(bad\"x) } ", 0 },
        { "n { b: \\75 rl(esc.png) } ", 1 },
        { "<!-- --> ", 0 },
        { "@media screen { o { b: url(m.png) } } ", 1 },
        { "p::after { content: '\\'' } ", 0 },
    };
    const size_t np = sizeof pieces / sizeof pieces[0];
    for (int round = 0; round < 300; round++) {
        cr_buf css;
        cr_buf_init(&css, 0);
        int want = 0;
        int len = 1 + (int)(rng() % 40);
        for (int i = 0; i < len; i++) {
            const struct piece *p = &pieces[rng() % np];
            assert_int_equal(cr_buf_puts(&css, p->text), 0);
            want += p->refs;
        }
        cr_buf out;
        cr_buf_init(&out, 0);
        css_stats st;
        assert_int_equal(css_scan(css.data, css.len, NULL, collect, &out, &st), 0);
        if (st.refs != (uint64_t)want)
            fail_msg("seed %llu round %d: %llu references, want %d in:\n%s",
                     (unsigned long long)seed, round, (unsigned long long)st.refs, want,
                     css.data);
        cr_buf_release(&out);
        cr_buf_release(&css);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(url_forms),
        cmocka_unit_test(not_urls),
        cmocka_unit_test(drops),
        cmocka_unit_test(strings_and_escapes),
        cmocka_unit_test(image_set),
        cmocka_unit_test(imports),
        cmocka_unit_test(late_imports_ignored),
        cmocka_unit_test(style_attribute),
        cmocka_unit_test(cdo_cdc_and_comments),
        cmocka_unit_test(max_refs_cap),
        cmocka_unit_test(max_url_cap),
        cmocka_unit_test(max_bytes_cap),
        cmocka_unit_test(hostile_inputs),
        cmocka_unit_test(null_input_and_defaults),
        cmocka_unit_test(out_of_memory),
        cmocka_unit_test(random_mixtures),
    };
    return cmocka_run_group_tests_name("css", tests, NULL, NULL);
}
