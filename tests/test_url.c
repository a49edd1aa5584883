/* tests/test_url: URL canonicalization. Every case runs through the fast
 * path and through the curl path (url_policy.curl_only) and both must give
 * the expected result; accepted results must come back unchanged when
 * canonicalized again; cases marked FAST must be taken by the fast path. */
#include <errno.h>
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
#include "common/buf.h"
#include "crawler/web/url.h"

#define RFC_BASE "http://a/b/c/d;p?q"

typedef struct tcase {
    const char *base;  /* NULL: no base */
    const char *ref;
    size_t rlen;       /* 0: strlen(ref) */
    const char *want;  /* NULL: rejected with `why` */
    url_reject why;
    bool fast;         /* the fast path must take it */
} tcase;

#define OK(b, r, w) { b, r, 0, w, URL_OK, false }
#define FAST(b, r, w) { b, r, 0, w, URL_OK, true }
#define REJ(b, r, y) { b, r, 0, NULL, y, false }

static url_canon *canon_with(const url_policy *base_policy, bool curl_only)
{
    url_policy p;
    if (base_policy != NULL)
        p = *base_policy;
    else
        url_policy_defaults(&p);
    p.curl_only = curl_only;
    url_canon *c = url_canon_new(&p);
    assert_non_null(c);
    return c;
}

/* Runs one case on one canon; returns a message on mismatch, NULL if fine. */
static const char *run_one(url_canon *c, const tcase *t, bool check_fast, char *msg, size_t msz)
{
    cr_buf out;
    url_reject why;
    url_canon_stats s0, s1;
    size_t rlen = t->rlen ? t->rlen : strlen(t->ref);
    cr_buf_init(&out, 0);
    url_canon_get_stats(c, &s0);
    int r = url_canon_resolve(c, t->base, t->base ? strlen(t->base) : 0, t->ref, rlen, &out,
                              &why);
    url_canon_get_stats(c, &s1);
    const char *err = NULL;
    if (t->want != NULL) {
        if (r != 0 || why != URL_OK || out.len != strlen(t->want) ||
            memcmp(out.data, t->want, out.len) != 0) {
            snprintf(msg, msz, "got r=%d (%s) \"%s\", want \"%s\"", r, url_reject_str(why),
                     out.data ? out.data : "", t->want);
            err = msg;
        } else if (check_fast && t->fast && s1.fast != s0.fast + 1) {
            snprintf(msg, msz, "fast path not taken for \"%s\"", t->want);
            err = msg;
        } else {
            /* a fixed point: canonical input comes back unchanged */
            cr_buf again;
            url_reject w2;
            cr_buf_init(&again, 0);
            int r2 = url_canon_resolve(c, NULL, 0, out.data, out.len, &again, &w2);
            if (r2 != 0 || again.len != out.len || memcmp(again.data, out.data, out.len) != 0) {
                snprintf(msg, msz, "not idempotent: \"%s\" -> \"%s\" (%s)", out.data,
                         again.data ? again.data : "", url_reject_str(w2));
                err = msg;
            }
            cr_buf_release(&again);
        }
    } else if (r != -EINVAL || why != t->why || out.len != 0) {
        snprintf(msg, msz, "got r=%d (%s) \"%s\", want rejection (%s)", r, url_reject_str(why),
                 out.data ? out.data : "", url_reject_str(t->why));
        err = msg;
    } else if (s1.rejected != s0.rejected + 1) {
        snprintf(msg, msz, "rejection not counted");
        err = msg;
    }
    cr_buf_release(&out);
    return err;
}

static void run_cases(const tcase *cases, size_t n, const url_policy *policy)
{
    url_canon *fast = canon_with(policy, false);
    url_canon *slow = canon_with(policy, true);
    char msg[6000];
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const tcase *t = &cases[i];
        for (int k = 0; k < 2; k++) {
            const char *e = run_one(k ? slow : fast, t, k == 0, msg, sizeof msg);
            if (e != NULL) {
                size_t rl = t->rlen ? t->rlen : strlen(t->ref);
                print_error("case %zu (%s path) base=%s ref=\"%.*s\": %s\n", i,
                            k ? "curl" : "fast", t->base ? t->base : "(none)",
                            rl > 200 ? 200 : (int)rl, t->ref, e);
                bad++;
            }
        }
    }
    url_canon_free(fast);
    url_canon_free(slow);
    assert_int_equal(bad, 0);
}

#define RUN(cases, policy) run_cases(cases, sizeof cases / sizeof cases[0], policy)

static char *repeat(const char *prefix, char fill, size_t total)
{
    char *s = malloc(total + 1);
    assert_non_null(s);
    size_t pl = strlen(prefix);
    memcpy(s, prefix, pl);
    memset(s + pl, fill, total - pl);
    s[total] = '\0';
    return s;
}

/* ---- RFC 3986 5.4 ------------------------------------------------------ */

static void rfc3986_normal_examples(void **state)
{
    (void)state;
    static const tcase cases[] = {
        REJ(RFC_BASE, "g:h", URL_REJ_SCHEME), /* only http(s) is crawled */
        FAST(RFC_BASE, "g", "http://a/b/c/g"),
        FAST(RFC_BASE, "./g", "http://a/b/c/g"),
        FAST(RFC_BASE, "g/", "http://a/b/c/g/"),
        FAST(RFC_BASE, "/g", "http://a/g"),
        FAST(RFC_BASE, "//g", "http://g/"),
        FAST(RFC_BASE, "?y", "http://a/b/c/d;p?y"),
        FAST(RFC_BASE, "g?y", "http://a/b/c/g?y"),
        FAST(RFC_BASE, "#s", "http://a/b/c/d;p?q"),
        FAST(RFC_BASE, "g#s", "http://a/b/c/g"),
        FAST(RFC_BASE, "g?y#s", "http://a/b/c/g?y"),
        FAST(RFC_BASE, ";x", "http://a/b/c/;x"),
        FAST(RFC_BASE, "g;x", "http://a/b/c/g;x"),
        FAST(RFC_BASE, "g;x?y#s", "http://a/b/c/g;x?y"),
        FAST(RFC_BASE, "", "http://a/b/c/d;p?q"),
        FAST(RFC_BASE, ".", "http://a/b/c/"),
        FAST(RFC_BASE, "./", "http://a/b/c/"),
        FAST(RFC_BASE, "..", "http://a/b/"),
        FAST(RFC_BASE, "../", "http://a/b/"),
        FAST(RFC_BASE, "../g", "http://a/b/g"),
        FAST(RFC_BASE, "../..", "http://a/"),
        FAST(RFC_BASE, "../../", "http://a/"),
        FAST(RFC_BASE, "../../g", "http://a/g"),
    };
    RUN(cases, NULL);
}

static void rfc3986_abnormal_examples(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(RFC_BASE, "../../../g", "http://a/g"),
        FAST(RFC_BASE, "../../../../g", "http://a/g"),
        FAST(RFC_BASE, "/./g", "http://a/g"),
        FAST(RFC_BASE, "/../g", "http://a/g"),
        FAST(RFC_BASE, "g.", "http://a/b/c/g."),
        FAST(RFC_BASE, ".g", "http://a/b/c/.g"),
        FAST(RFC_BASE, "g..", "http://a/b/c/g.."),
        FAST(RFC_BASE, "..g", "http://a/b/c/..g"),
        FAST(RFC_BASE, "./../g", "http://a/b/g"),
        FAST(RFC_BASE, "./g/.", "http://a/b/c/g/"),
        FAST(RFC_BASE, "g/./h", "http://a/b/c/g/h"),
        FAST(RFC_BASE, "g/../h", "http://a/b/c/h"),
        FAST(RFC_BASE, "g;x=1/./y", "http://a/b/c/g;x=1/y"),
        FAST(RFC_BASE, "g;x=1/../y", "http://a/b/c/y"),
        FAST(RFC_BASE, "g?y/./x", "http://a/b/c/g?y/./x"),
        FAST(RFC_BASE, "g?y/../x", "http://a/b/c/g?y/../x"),
        FAST(RFC_BASE, "g#s/./x", "http://a/b/c/g"),
        FAST(RFC_BASE, "g#s/../x", "http://a/b/c/g"),
        /* strict parsers read "http:g" as a URI with no host */
        REJ(RFC_BASE, "http:g", URL_REJ_NO_HOST),
    };
    RUN(cases, NULL);
}

/* where libcurl 7.88's own merge departs from RFC 3986 (see url.c) */
static void relative_edge_cases(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(RFC_BASE, ".//x", "http://a/b/c//x"),
        FAST(RFC_BASE, "..//x", "http://a/b//x"),
        FAST(RFC_BASE, "./?x", "http://a/b/c/?x"),
        FAST(RFC_BASE, "../?x", "http://a/b/?x"),
        FAST("http://a//b", "x", "http://a//x"),
        FAST("http://a///", "../x", "http://a//x"),
        FAST("http://a/b//c", "x", "http://a/b//x"),
        FAST(RFC_BASE, "?", "http://a/b/c/d;p"),
        FAST(RFC_BASE, "??", "http://a/b/c/d;p??"),
        FAST("https://a/x/y", "//b/z", "https://b/z"),
        FAST("https://a/x/y", "//B:443/z", "https://b/z"),
        FAST("https://a/x/y", "//b:80/z", "https://b:80/z"),
        OK("http://u:p@a/x/y", "z", "http://u:p@a/x/z"),
        OK("http://u:p@a/x/y", "//b/z", "http://b/z"),
        REJ(RFC_BASE, "///x", URL_REJ_NO_HOST),
        REJ(RFC_BASE, "//", URL_REJ_NO_HOST),
        REJ(RFC_BASE, "1a:b", URL_REJ_UNPARSABLE), /* ':' in a first segment */
        FAST(RFC_BASE, "./1a:b", "http://a/b/c/1a:b"),
        REJ(RFC_BASE, "localhost:8080/x", URL_REJ_SCHEME),
        FAST(RFC_BASE, "\\\\g\\x", "http://g/x"), /* browsers read '\' as '/' */
        FAST(RFC_BASE, "a\\b?c\\d", "http://a/b/c/a/b?c%5Cd"),
        FAST(RFC_BASE, "%2e%2E/x", "http://a/b/x"), /* a ".." once decoded */
        /* RFC 3986 6.2.2: dot segments removed when resolving, then again
         * after decoding %2E, so "%2E%2E" does not eat a literal ".." */
        FAST("http://a/b/%2E%2E/../c", "", "http://a/b/c"),
    };
    RUN(cases, NULL);
}

/* ---- absolute URLs ------------------------------------------------------ */

static void case_port_and_empty_path(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(NULL, "HTTP://WWW.EXAMPLE.COM/A/B?C=D", "http://www.example.com/A/B?C=D"),
        FAST(NULL, "HTTPS://A/", "https://a/"),
        FAST(NULL, "http://example.com", "http://example.com/"),
        FAST(NULL, "http://example.com?x", "http://example.com/?x"),
        FAST(NULL, "http://example.com:80/", "http://example.com/"),
        FAST(NULL, "https://example.com:443/x", "https://example.com/x"),
        FAST(NULL, "https://example.com:80/x", "https://example.com:80/x"),
        FAST(NULL, "http://example.com:443/x", "http://example.com:443/x"),
        FAST(NULL, "http://example.com:8080", "http://example.com:8080/"),
        FAST(NULL, "http://a:65535/", "http://a:65535/"),
        FAST(NULL, "http://a_b.example./x", "http://a_b.example./x"),
        OK(NULL, "http://a:080/", "http://a/"),
        OK(NULL, "http://a:/", "http://a/"),
        OK(NULL, "http://a:00008080/", "http://a:8080/"),
        REJ(NULL, "http://a:0/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:65536/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:99999999999999999999/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:-1/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:8x/", URL_REJ_BAD_PORT),
        REJ(NULL, "http:///x", URL_REJ_NO_HOST),
        REJ(NULL, "http:/x", URL_REJ_NO_HOST),
        REJ(NULL, "http://", URL_REJ_NO_HOST),
        REJ(NULL, "http://?x", URL_REJ_NO_HOST),
        REJ(NULL, "http://:80/", URL_REJ_NO_HOST),
        REJ(NULL, "http://u@/x", URL_REJ_NO_HOST),
    };
    RUN(cases, NULL);
}

static void ip_hosts(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(NULL, "http://1.2.3.4/", "http://1.2.3.4/"),
        FAST(NULL, "http://10.0.0.255:81/x", "http://10.0.0.255:81/x"),
        OK(NULL, "http://127.1/", "http://127.0.0.1/"),
        OK(NULL, "http://0x7f.1/", "http://127.0.0.1/"),
        OK(NULL, "http://0x7F.0.0.1/", "http://127.0.0.1/"),
        OK(NULL, "http://01.2.3.4/", "http://1.2.3.4/"),
        OK(NULL, "http://4294967295/", "http://255.255.255.255/"),
        OK(NULL, "http://0/", "http://0.0.0.0/"),
        OK(NULL, "http://%327.1/", "http://27.0.0.1/"), /* numeric once decoded */
        OK(NULL, "http://1.2.3.256/", "http://1.2.3.256/"), /* not IPv4: a name */
        OK(NULL, "http://[::1]:8080/x", "http://[::1]:8080/x"),
        OK(NULL, "http://[0:0::1]/", "http://[::1]/"),
        OK(NULL, "http://[::FFFF:1.2.3.4]/", "http://[::ffff:1.2.3.4]/"),
        OK(NULL, "http://[2001:DB8::1]:443/", "http://[2001:db8::1]:443/"),
        OK(NULL, "https://[2001:DB8::1]:443/", "https://[2001:db8::1]/"),
        REJ(NULL, "http://[::1/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://[::g]/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://[fe80::1%25eth0]/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://[::1]x/", URL_REJ_BAD_PORT),
    };
    RUN(cases, NULL);
}

static void userinfo(void **state)
{
    (void)state;
    static const tcase cases[] = {
        OK(NULL, "http://u:p@a/x", "http://u:p@a/x"),
        OK(NULL, "http://U:P@A/x", "http://U:P@a/x"),
        OK(NULL, "http://@a/x", "http://a/x"),
        OK(NULL, "http://:@a/x", "http://a/x"),
        OK(NULL, "http://u:@a/x", "http://u@a/x"),
        OK(NULL, "http://:p@a/x", "http://:p@a/x"),
        OK(NULL, "http://%75:%7e%3a@a/", "http://u:~%3A@a/"),
        OK(NULL, "http://u:p:q@a/", "http://u:p%3Aq@a/"),
        OK(NULL, "http://g%C3%BCnter@a/", "http://g%C3%BCnter@a/"),
        OK(NULL, "http://evil.example@good.example/", "http://evil.example@good.example/"),
        REJ(NULL, "http://u@v@a/", URL_REJ_BAD_HOST),
    };
    RUN(cases, NULL);
}

static void percent_encoding(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(NULL, "http://a/%7e%7E%41%2f%2F%zz%4", "http://a/~~A%2F%2F%25zz%254"),
        FAST(NULL, "http://a/%00", "http://a/%00"),
        FAST(NULL, "http://a/x%", "http://a/x%25"),
        FAST(NULL, "http://a/%", "http://a/%25"),
        FAST(NULL, "http://a/%%41", "http://a/%25A"),
        FAST(NULL, "http://a/%c3%a9?%c3%a9=%e2%82%ac", "http://a/%C3%A9?%C3%A9=%E2%82%AC"),
        FAST(NULL, "http://a/%2e%2e/x", "http://a/x"),
        FAST(NULL, "http://a/b/./%2E/c/%2e./d", "http://a/b/d"),
        FAST(NULL, "http://a/ b?c d", "http://a/%20b?c%20d"),
        FAST(NULL, "http://a/x+y?a+b=c+d", "http://a/x+y?a+b=c+d"),
        FAST(NULL, "http://a/\xc3\xbc?\xc3\xbc=\xc3\xbc", "http://a/%C3%BC?%C3%BC=%C3%BC"),
        FAST(NULL, "http://a/\xff\xfe", "http://a/%FF%FE"),
        FAST(NULL, "http://a/[x]{y}|^`\"<>", "http://a/%5Bx%5D%7By%7D%7C%5E%60%22%3C%3E"),
        FAST(NULL, "http://a/x?[y]{z}|^`\\\"<>'", "http://a/x?%5By%5D%7Bz%7D%7C%5E%60%5C%22%3C%3E'"),
        FAST(NULL, "http://a/!$&'()*+,;=:@/-._~", "http://a/!$&'()*+,;=:@/-._~"),
        FAST(NULL, "http://a/x?/?:@", "http://a/x?/?:@"),
        FAST(NULL, "http://a/x?%26=%3d&b", "http://a/x?%26=%3D&b"),
    };
    RUN(cases, NULL);
}

static void whitespace_and_controls(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(NULL, "  http://a/x  ", "http://a/x"),
        FAST(NULL, "\t\r\n http://a/x\n", "http://a/x"),
        FAST(NULL, "http://a/\tx\ny\rz", "http://a/xyz"),
        FAST(NULL, "ht\ntp://exa\tmple.com/", "http://example.com/"),
        FAST(NULL, "\x01http://a/x\x1f", "http://a/x"), /* C0 trimmed at the ends */
        { NULL, "http://a/x\0", 11, "http://a/x", URL_OK, true },
        REJ(NULL, "http://a/x\x01y", URL_REJ_CONTROL),
        REJ(NULL, "http://a/x\x7f", URL_REJ_CONTROL),
        REJ(NULL, "http://a/x\x0by", URL_REJ_CONTROL),
        REJ(NULL, "http://a/#\x01x", URL_REJ_CONTROL),
        { NULL, "http://a/\0x", 11, NULL, URL_REJ_CONTROL, false },
        { RFC_BASE, "g\0h", 3, NULL, URL_REJ_CONTROL, false },
        REJ(NULL, "http://exa mple.com/", URL_REJ_BAD_HOST),
        REJ(NULL, " \t\n", URL_REJ_EMPTY),
        REJ(NULL, "", URL_REJ_EMPTY),
        FAST(RFC_BASE, " \n ", "http://a/b/c/d;p?q"),
        FAST(RFC_BASE, "#x", "http://a/b/c/d;p?q"),
        FAST(NULL, "http://a#x", "http://a/"),
        FAST(NULL, "http://a/x?#", "http://a/x"),
        FAST(NULL, "http://a/x?y#z?w", "http://a/x?y"),
        FAST(NULL, "http:\\\\a\\b\\c", "http://a/b/c"),
    };
    RUN(cases, NULL);
}

static void schemes_and_bases(void **state)
{
    (void)state;
    static const tcase cases[] = {
        REJ(NULL, "mailto:x@example.com", URL_REJ_SCHEME),
        REJ(NULL, "javascript:void(0)", URL_REJ_SCHEME),
        REJ(RFC_BASE, "JavaScript:alert(1)", URL_REJ_SCHEME),
        REJ(NULL, "ftp://a/x", URL_REJ_SCHEME),
        REJ(NULL, "data:text/plain,x", URL_REJ_SCHEME),
        REJ(NULL, "file:///etc/passwd", URL_REJ_SCHEME),
        REJ(RFC_BASE, "tel:+123", URL_REJ_SCHEME),
        REJ(NULL, "httpx://a/", URL_REJ_SCHEME),
        REJ(NULL, "g", URL_REJ_NO_BASE),
        REJ(NULL, "//g/x", URL_REJ_NO_BASE),
        REJ(NULL, "?x", URL_REJ_NO_BASE),
        REJ("mailto:x@y", "g", URL_REJ_BAD_BASE),
        REJ("/relative/base", "g", URL_REJ_BAD_BASE),
        REJ("http:///x", "", URL_REJ_BAD_BASE),
        FAST("mailto:x@y", "http://a/", "http://a/"),
        FAST("HTTP://A:80/B/./C/../D?Z=1&utm_source=x&A=2#frag", "e",
             "http://a/B/e"),
        FAST("HTTP://A:80/B/./C/../D?Z=1&utm_source=x&A=2#frag", "", "http://a/B/D?A=2&Z=1"),
        FAST("http://a/b/c;jsessionid=ABC", "d", "http://a/b/d"),
    };
    RUN(cases, NULL);
}

/* a <base href> is resolved against the document first, then links
 * against the result */
static void base_href(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL, false);
    url_canon *s = canon_with(NULL, true);
    static const struct {
        const char *doc, *href, *link, *want;
    } t[] = {
        { "http://a/b/c", "/other/", "x", "http://a/other/x" },
        { "http://a/b/c", "//cdn.example/lib/", "x.js?v=2", "http://cdn.example/lib/x.js?v=2" },
        { "https://a/b/c", "sub/", "../y", "https://a/b/y" },
        { "http://a/b/c", "http://B.example/base/index.html", "#top",
          "http://b.example/base/index.html" },
        { "http://a/b/c", "https://b/d/", "//e/f", "https://e/f" },
    };
    for (int k = 0; k < 2; k++) {
        url_canon *u = k ? s : c;
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            cr_buf base, out;
            url_reject why;
            cr_buf_init(&base, 0);
            cr_buf_init(&out, 0);
            assert_int_equal(url_canon_resolve(u, t[i].doc, strlen(t[i].doc), t[i].href,
                                               strlen(t[i].href), &base, &why), 0);
            assert_int_equal(url_canon_resolve(u, base.data, base.len, t[i].link,
                                               strlen(t[i].link), &out, &why), 0);
            assert_string_equal(out.data, t[i].want);
            cr_buf_release(&base);
            cr_buf_release(&out);
        }
    }
    url_canon_free(c);
    url_canon_free(s);
}

/* ---- query policy ------------------------------------------------------- */

static void query_sort_and_strip(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FAST(NULL, "http://a/?b=2&a=1&c", "http://a/?a=1&b=2&c"),
        FAST(NULL, "http://a/?a=2&a=1&a=2", "http://a/?a=1&a=2&a=2"),
        FAST(NULL, "http://a/?b=&a&a=", "http://a/?a&a=&b="),
        FAST(NULL, "http://a/?a=1&a", "http://a/?a&a=1"),
        FAST(NULL, "http://a/?ab=1&a=2&a-b=3", "http://a/?a=2&a-b=3&ab=1"),
        FAST(NULL, "http://a/?&&a=1&&", "http://a/?a=1"),
        FAST(NULL, "http://a/?&", "http://a/"),
        FAST(NULL, "http://a/?=x&=", "http://a/?=&=x"),
        FAST(NULL, "http://a/?B=1&a=1", "http://a/?B=1&a=1"), /* bytes: 'B' < 'a' */
        FAST(NULL, "http://a/?b=%41&a=%2f", "http://a/?a=%2F&b=A"),
        FAST(NULL, "http://a/?utm_source=x&utm_medium=y&a=1&fbclid=z&gclid=w",
             "http://a/?a=1"),
        FAST(NULL, "http://a/?UTM_Source=x&FBCLID=y", "http://a/"),
        FAST(NULL, "http://a/?utm%5Fsource=x&b", "http://a/?b"),
        FAST(NULL, "http://a/?utm=1&xutm_a=2&utm_=3", "http://a/?utm=1&xutm_a=2"),
        FAST(NULL, "http://a/?fbclid", "http://a/"),
        FAST(NULL, "http://a/?PHPSESSID=abc&x=1", "http://a/?x=1"),
        FAST(NULL, "http://a/?sid=1&side=2&SID=3", "http://a/?side=2"),
        FAST(NULL, "http://a/?JSESSIONID=1&jsessionid", "http://a/"),
        FAST(NULL, "http://a/x;jsessionid=ABC?y=1", "http://a/x?y=1"),
        FAST(NULL, "http://a/x;JSESSIONID=ABC;other=1/y", "http://a/x;other=1/y"),
        FAST(NULL, "http://a/x;a=1;jsessionid=2", "http://a/x;a=1"),
        FAST(NULL, "http://a/b/..;jsessionid=1/x", "http://a/x"),
        FAST(NULL, "http://a/x;jsessionid", "http://a/x;jsessionid"),
    };
    RUN(cases, NULL);
}

static void policy_options(void **state)
{
    (void)state;
    url_policy p;
    url_policy_defaults(&p);
    p.sort_query = false;
    p.strip_session_ids = false;
    static const tcase keep[] = {
        FAST(NULL, "http://a/?b=2&a=1&utm_x=3", "http://a/?b=2&a=1"),
        FAST(NULL, "http://a/x;jsessionid=1?sid=2", "http://a/x;jsessionid=1?sid=2"),
    };
    RUN(keep, &p);

    static const char *const pats[] = { "ref*", "*_id", "exact" };
    url_policy_defaults(&p);
    p.strip_params = pats;
    p.n_strip_params = 3;
    static const tcase custom[] = {
        FAST(NULL, "http://a/?ref=1&referrer=2&x=1&utm_source=3",
             "http://a/?utm_source=3&x=1"),
        FAST(NULL, "http://a/?user_id=1&id=2&EXACT=3&exactly=4", "http://a/?exactly=4&id=2"),
    };
    RUN(custom, &p);

    url_policy_defaults(&p);
    p.max_url_bytes = 100;
    char *fits = repeat("http://a/", 'x', 100), *over = repeat("http://a/", 'x', 101);
    tcase small[] = {
        FAST(NULL, fits, fits),
        REJ(NULL, over, URL_REJ_TOO_LONG),
        /* 31 bytes in, 75 out: fits; 41 in, 105 out: does not */
        FAST(NULL, "http://a/\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc",
             "http://a/%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC"),
        REJ(NULL, "http://a/\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc", URL_REJ_TOO_LONG),
    };
    RUN(small, &p);
    free(fits);
    free(over);
}

/* ---- hosts -------------------------------------------------------------- */

static void idn_hosts(void **state)
{
    (void)state;
    static const tcase cases[] = {
        OK(NULL, "http://b\xc3\xbc" "cher.example/", "http://xn--bcher-kva.example/"),
        OK(NULL, "http://B\xc3\xbc" "cher.EXAMPLE/", "http://xn--bcher-kva.example/"),
        OK(NULL, "http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
        OK(NULL, "http://b\xc3\xbc" "cher\xe3\x80\x82" "example/", "http://xn--bcher-kva.example/"),
        OK(RFC_BASE, "//b\xc3\xbc" "cher.example/x", "http://xn--bcher-kva.example/x"),
        OK(NULL, "http://m\xc3\xbcnchen.de/", "http://xn--mnchen-3ya.de/"),
        OK(NULL, "http://\xe4\xbe\x8b\xe3\x81\x88.\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88/",
           "http://xn--r8jz45g.xn--zckzah/"),
        /* RFC 3492 7.1 samples (L) and (I), as labels */
        OK(NULL, "http://3\xe5\xb9\xb4" "B\xe7\xb5\x84\xe9\x87\x91\xe5\x85\xab\xe5\x85\x88\xe7\x94\x9f.jp/",
           "http://xn--3b-ww4c5e180e575a65lsy2b.jp/"),
        OK(NULL, "http://\xd0\xbf\xd0\xbe\xd1\x87\xd0\xb5\xd0\xbc\xd1\x83\xd0\xb6\xd0\xb5\xd0\xbe"
                 "\xd0\xbd\xd0\xb8\xd0\xbd\xd0\xb5\xd0\xb3\xd0\xbe\xd0\xb2\xd0\xbe\xd1\x80\xd1\x8f"
                 "\xd1\x82\xd0\xbf\xd0\xbe\xd1\x80\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8.ru/",
           "http://xn--b1abfaaepdrnnbgefbadotcwatmq2g4l.ru/"),
        FAST(NULL, "http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"),
        OK(NULL, "http://ex%41mple.com/", "http://example.com/"),
        OK(NULL, "http://a~b/", "http://a~b/"),
        REJ(NULL, "http://a%C3b/", URL_REJ_BAD_HOST),      /* invalid UTF-8 */
        REJ(NULL, "http://a%C2%85b/", URL_REJ_BAD_HOST),   /* C1 control */
        REJ(NULL, "http://a%20b/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://a|b/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://a!b/", URL_REJ_BAD_HOST),
        REJ(NULL, "http://ex%2Fample.com/", URL_REJ_BAD_HOST),
    };
    RUN(cases, NULL);

    /* n x U+00FC becomes "xn--tda" and n - 1 'a': 57 make a 63-byte label,
     * the most DNS allows; 58 are rejected */
    for (int n = 57; n <= 58; n++) {
        char url[200], want[100];
        size_t k = 0;
        k += (size_t)snprintf(url, sizeof url, "http://");
        for (int i = 0; i < n; i++) {
            url[k++] = (char)0xc3;
            url[k++] = (char)0xbc;
        }
        snprintf(url + k, sizeof url - k, ".x/");
        k = (size_t)snprintf(want, sizeof want, "http://xn--tda");
        for (int i = 1; i < n; i++)
            want[k++] = 'a';
        snprintf(want + k, sizeof want - k, ".x/");
        tcase one[] = { OK(NULL, url, n == 57 ? want : NULL) };
        one[0].why = n == 57 ? URL_OK : URL_REJ_BAD_HOST;
        RUN(one, NULL);
    }
}

/* ---- lengths ------------------------------------------------------------ */

static void lengths(void **state)
{
    (void)state;
    char *mb = repeat("http://a/", 'x', 1 << 20);
    char *at = repeat("http://a/", 'x', 2048);
    char *over = repeat("http://a/", 'x', 2049);
    char *enc = repeat("http://a/", '<', 1000); /* 1000 in, 2982 out */
    char *lbase = repeat("http://a/", 'b', 2040);
    tcase cases[] = {
        REJ(NULL, mb, URL_REJ_TOO_LONG),
        FAST(NULL, at, at),
        REJ(NULL, over, URL_REJ_TOO_LONG),
        REJ(NULL, enc, URL_REJ_TOO_LONG),
        FAST(lbase, "?q=1", NULL),
        REJ(lbase, "?q=123456789", URL_REJ_TOO_LONG),
        REJ(mb, "g", URL_REJ_BAD_BASE),
        FAST(mb, "http://a/", "http://a/"),
    };
    char want[2100];
    snprintf(want, sizeof want, "%s?q=1", lbase);
    cases[4].want = want;
    RUN(cases, NULL);
    free(mb);
    free(at);
    free(over);
    free(enc);
    free(lbase);
}

/* ---- the rest of the API ------------------------------------------------ */

static void fast_path_takes_common_shapes(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL, false);
    static const char *const refs[] = {
        "https://www.example.com/news/2024/item.html", "/about/team", "page2.html",
        "../index.html", "?page=3", "#main", "//cdn.example.net/app.js",
        "https://example.org/search?q=crawler&utm_source=x", "HTTP://Example.COM:80",
    };
    const char *base = "https://www.example.com/news/2024/";
    cr_buf out;
    url_reject why;
    url_canon_stats st;
    cr_buf_init(&out, 0);
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        assert_int_equal(url_canon_resolve(c, base, strlen(base), refs[i], strlen(refs[i]),
                                           &out, &why), 0);
    url_canon_get_stats(c, &st);
    assert_int_equal(st.fast, sizeof refs / sizeof refs[0]);
    assert_int_equal(st.curl, 0);
    assert_int_equal(st.rejected, 0);
    /* and the unusual ones go to curl */
    assert_int_equal(url_canon_resolve(c, NULL, 0, "http://[::1]/", 13, &out, &why), 0);
    assert_int_equal(url_canon_resolve(c, NULL, 0, "http://u@a/", 11, &out, &why), 0);
    url_canon_get_stats(c, &st);
    assert_int_equal(st.curl, 2);
    cr_buf_release(&out);
    url_canon_free(c);
}

static void base_cache_switches(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL, false);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 0);
    const char *b1 = "http://one/a/b", *b2 = "http://two/c/d", *bad = "ftp://x/";
    for (int round = 0; round < 2; round++) {
        assert_int_equal(url_canon_resolve(c, b1, strlen(b1), "x", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://one/a/x");
        assert_int_equal(url_canon_resolve(c, b2, strlen(b2), "x", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://two/c/x");
        assert_int_equal(url_canon_resolve(c, bad, strlen(bad), "x", 1, &out, &why), -EINVAL);
        assert_int_equal(why, URL_REJ_BAD_BASE);
        assert_int_equal(out.len, 0);
        /* same bytes, different length: a prefix of b1 */
        assert_int_equal(url_canon_resolve(c, b1, 10, "x", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://one/x");
    }
    cr_buf_release(&out);
    url_canon_free(c);
}

static void host_span(void **state)
{
    (void)state;
    static const struct {
        const char *url, *host;
    } t[] = {
        { "http://a.example/x", "a.example" },
        { "https://a.example:8443/x?y", "a.example" },
        { "http://u:p@h/", "h" },
        { "http://evil.example@good.example/", "good.example" },
        { "http://[::1]:8080/", "[::1]" },
        { "https://xn--bcher-kva.example", "xn--bcher-kva.example" },
        { "http://h?x@y", "h" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t off = 0, len = 0;
        assert_int_equal(url_host(t[i].url, strlen(t[i].url), &off, &len), 0);
        assert_int_equal(len, strlen(t[i].host));
        assert_memory_equal(t[i].url + off, t[i].host, len);
    }
    static const char *const bad[] = { "ftp://a/", "http:/a", "http:///a", "http://:80/",
                                       "http://[::1/", "", "https://u@/" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t off, len;
        assert_int_equal(url_host(bad[i], strlen(bad[i]), &off, &len), -EINVAL);
    }
}

static void reject_strings(void **state)
{
    (void)state;
    for (int r = URL_OK; r <= URL_REJ_UNPARSABLE; r++) {
        const char *s = url_reject_str((url_reject)r);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        for (int q = URL_OK; q < r; q++)
            assert_string_not_equal(s, url_reject_str((url_reject)q));
    }
    assert_string_equal(url_reject_str(URL_REJ_SCHEME), "scheme is not http(s)");
}

static void out_buffer_cap_is_respected(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL, false);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 12);
    assert_int_equal(url_canon_resolve(c, NULL, 0, "http://a/b", 10, &out, &why), 0);
    assert_string_equal(out.data, "http://a/b");
    assert_int_equal(url_canon_resolve(c, NULL, 0, "http://a/bcdef", 14, &out, &why), -EINVAL);
    assert_int_equal(why, URL_REJ_TOO_LONG);
    assert_int_equal(out.len, 0);
    cr_buf_release(&out);
    url_canon_free(c);
}

static void out_of_memory(void **state)
{
    (void)state;
    url_policy p;
    url_policy_defaults(&p);
    int nulls = 0;
    for (long n = 1; n < 40; n++) {
        cr_alloc_fail_after(n);
        url_canon *c = url_canon_new(&p);
        cr_alloc_fail_after(0);
        if (c == NULL) {
            nulls++;
            continue;
        }
        url_canon_free(c);
    }
    assert_true(nulls >= 10); /* every buffer and pattern copy was a failure point */

    url_canon *c = url_canon_new(&p);
    assert_non_null(c);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 0);
    cr_alloc_fail_after(1);
    int r = url_canon_resolve(c, RFC_BASE, strlen(RFC_BASE), "g", 1, &out, &why);
    long failures = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(r, -ENOMEM);
    assert_int_equal(out.len, 0);
    assert_true(failures > 0);
    /* and it still works afterwards */
    assert_int_equal(url_canon_resolve(c, RFC_BASE, strlen(RFC_BASE), "g", 1, &out, &why), 0);
    assert_string_equal(out.data, "http://a/b/c/g");
    cr_buf_release(&out);
    url_canon_free(c);
}

static void null_policy_means_defaults(void **state)
{
    (void)state;
    url_canon *c = url_canon_new(NULL);
    assert_non_null(c);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 0);
    const char *u = "http://a/?utm_campaign=1&b=1&a=1";
    assert_int_equal(url_canon_resolve(c, NULL, 0, u, strlen(u), &out, &why), 0);
    assert_string_equal(out.data, "http://a/?a=1&b=1");
    cr_buf_release(&out);
    url_canon_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc3986_normal_examples),
        cmocka_unit_test(rfc3986_abnormal_examples),
        cmocka_unit_test(relative_edge_cases),
        cmocka_unit_test(case_port_and_empty_path),
        cmocka_unit_test(ip_hosts),
        cmocka_unit_test(userinfo),
        cmocka_unit_test(percent_encoding),
        cmocka_unit_test(whitespace_and_controls),
        cmocka_unit_test(schemes_and_bases),
        cmocka_unit_test(base_href),
        cmocka_unit_test(query_sort_and_strip),
        cmocka_unit_test(policy_options),
        cmocka_unit_test(idn_hosts),
        cmocka_unit_test(lengths),
        cmocka_unit_test(fast_path_takes_common_shapes),
        cmocka_unit_test(base_cache_switches),
        cmocka_unit_test(host_span),
        cmocka_unit_test(reject_strings),
        cmocka_unit_test(out_buffer_cap_is_respected),
        cmocka_unit_test(out_of_memory),
        cmocka_unit_test(null_policy_means_defaults),
    };
    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
