/* tests/test_url: the WHATWG parser (fetch form) and the key.
 *
 * Each case gives the fetch form and the key it expects (or the reason for
 * a rejection); every accepted result must be a fixed point: its fetch form
 * parses to itself with the same key, and its key parses to itself.
 *
 * The differential test at the end feeds Node's URL (Debian's nodejs, the
 * WHATWG implementation browsers share the test suite of) the same inputs
 * against several bases and requires crawld's fetch form to equal Node's
 * href minus the fragment, except for the deliberate differences listed
 * there (DIFFS), each with its reason. The inputs are hand-written cases
 * from the standard's text plus generated and mutated ones from a seed it
 * prints (CRAWLD_URL_SEED=N repeats a run). */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <idn2.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/url.h"
#include "tests/support/proc.h"
#include "tests/support/seed.h"

#define RFC_BASE "http://a/b/c/d;p?q"

/* ---- libidn2, interposed: failures on demand, the flags seen ------------ */

static int idn_fail_rc;   /* != 0: idn2_lookup_u8 returns this */
static int idn_flags_seen = -1;

int idn2_lookup_u8(const uint8_t *src, uint8_t **lookupname, int flags)
{
    static int (*real)(const uint8_t *, uint8_t **, int);
    idn_flags_seen = flags;
    if (idn_fail_rc != 0)
        return idn_fail_rc;
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "idn2_lookup_u8");
    return real(src, lookupname, flags);
}

/* ---- running cases -------------------------------------------------------- */

typedef struct tcase {
    const char *base;  /* NULL: no base */
    const char *ref;
    size_t rlen;       /* 0: strlen(ref) */
    const char *fetch; /* NULL: rejected with `why` */
    const char *key;   /* NULL: the same as fetch */
    url_reject why;
} tcase;

#define F(b, r, f) { b, r, 0, f, NULL, URL_OK }
#define FK(b, r, f, k) { b, r, 0, f, k, URL_OK }
#define REJ(b, r, y) { b, r, 0, NULL, NULL, y }

static url_canon *canon_with(const url_policy *p)
{
    url_canon *c = url_canon_new(p);
    assert_non_null(c);
    return c;
}

/* Parses u (no base); 0 when it gives back fetch form f and key k. */
static int same_again(url_canon *c, const char *u, size_t n, const char *f, size_t fl,
                      const char *k, size_t kl)
{
    cr_buf f2, k2;
    url_reject w;
    cr_buf_init(&f2, 0);
    cr_buf_init(&k2, 0);
    int r = url_canon_forms(c, NULL, 0, u, n, &f2, &k2, &w);
    int bad = r != 0 || f2.len != fl || memcmp(f2.data, f, fl) != 0 || k2.len != kl ||
              memcmp(k2.data, k, kl) != 0;
    cr_buf_release(&f2);
    cr_buf_release(&k2);
    return bad;
}

/* Checks one accepted result's fixed points; a message or NULL. */
static const char *fixed_points(url_canon *c, const cr_buf *f, const cr_buf *k)
{
    if (same_again(c, f->data, f->len, f->data, f->len, k->data, k->len))
        return "the fetch form does not parse to itself with the same key";
    if (same_again(c, k->data, k->len, k->data, k->len, k->data, k->len))
        return "the key does not parse to itself";
    return NULL;
}

static const char *run_one(url_canon *c, const tcase *t, char *msg, size_t msz)
{
    cr_buf f, k;
    url_reject why;
    url_canon_stats s0, s1;
    size_t rlen = t->rlen ? t->rlen : strlen(t->ref);
    const char *want_key = t->key ? t->key : t->fetch;
    cr_buf_init(&f, 0);
    cr_buf_init(&k, 0);
    url_canon_get_stats(c, &s0);
    int r = url_canon_forms(c, t->base, t->base ? strlen(t->base) : 0, t->ref, rlen, &f, &k,
                            &why);
    url_canon_get_stats(c, &s1);
    const char *err = NULL;
    if (t->fetch != NULL) {
        if (r != 0 || why != URL_OK || strcmp(f.data ? f.data : "", t->fetch) != 0 ||
            strcmp(k.data ? k.data : "", want_key) != 0) {
            snprintf(msg, msz, "got r=%d (%s) fetch \"%s\" key \"%s\", want \"%s\" \"%s\"", r,
                     url_reject_str(why), f.data ? f.data : "", k.data ? k.data : "", t->fetch,
                     want_key);
            err = msg;
        } else if (s1.accepted != s0.accepted + 1) {
            err = "acceptance not counted";
        } else {
            err = fixed_points(c, &f, &k);
        }
    } else if (r != -EINVAL || why != t->why || f.len != 0 || k.len != 0) {
        snprintf(msg, msz, "got r=%d (%s) \"%s\", want rejection (%s)", r, url_reject_str(why),
                 f.data ? f.data : "", url_reject_str(t->why));
        err = msg;
    } else if (s1.rejected != s0.rejected + 1 ||
               s1.rejected_by[t->why] != s0.rejected_by[t->why] + 1) {
        err = "rejection not counted under its reason";
    }
    cr_buf_release(&f);
    cr_buf_release(&k);
    return err;
}

static void run_cases(const tcase *cases, size_t n, const url_policy *policy)
{
    url_canon *c = canon_with(policy);
    char msg[6000];
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        const tcase *t = &cases[i];
        const char *e = run_one(c, t, msg, sizeof msg);
        if (e != NULL) {
            size_t rl = t->rlen ? t->rlen : strlen(t->ref);
            print_error("case %zu base=%s ref=\"%.*s\": %s\n", i, t->base ? t->base : "(none)",
                        rl > 200 ? 200 : (int)rl, t->ref, e);
            bad++;
        }
    }
    url_canon_free(c);
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

/* ---- the standard's parser, case by case --------------------------------- */

static void input_cleanup(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "  http://a/x  ", "http://a/x"),
        F(NULL, "\t\r\n http://a/x\n", "http://a/x"),
        F(NULL, "http://a/\tx\ny\rz", "http://a/xyz"),
        F(NULL, "ht\ntp://exa\tmple.com/", "http://example.com/"),
        F(NULL, "\x01http://a/x\x1f", "http://a/x"), /* C0 trimmed at the ends */
        { NULL, "http://a/x\0", 11, "http://a/x", NULL, URL_OK },
        /* C0 controls inside are percent-encoded, not fatal */
        FK(NULL, "http://a/x\x01y", "http://a/x%01y", "http://a/x%01y"),
        F(NULL, "http://a/x\x7f", "http://a/x%7F"),
        { NULL, "http://a/\0x", 11, "http://a/%00x", NULL, URL_OK },
        F(NULL, "http://a/?\x0bx", "http://a/?%0Bx"),
        /* the fragment is dropped, whatever is in it */
        F(NULL, "http://a/#\x01x", "http://a/"),
        F(NULL, "http://a#x", "http://a/"),
        FK(NULL, "http://a/x?#", "http://a/x?", "http://a/x"),
        F(NULL, "http://a/x?y#z?w", "http://a/x?y"),
        F(NULL, "http://u#@a/", "http://u/"),
        F(RFC_BASE, "#x", "http://a/b/c/d;p?q"),
        F(RFC_BASE, " \n ", "http://a/b/c/d;p?q"),
        REJ(NULL, " \t\n", URL_REJ_EMPTY),
        REJ(NULL, "", URL_REJ_EMPTY),
        REJ(NULL, "http://exa mple.com/", URL_REJ_HOST_CODEPOINT),
    };
    RUN(cases, NULL);
}

static void special_scheme_repairs(void **state)
{
    (void)state;
    static const tcase cases[] = {
        /* "http:" and the base's scheme: the rest is a relative reference */
        F("http://b/c/d", "http:foo.com", "http://b/c/foo.com"),
        F("http://b/c/d", "HTTP:/x", "http://b/x"),
        F("http://b/c/d", "http:?q", "http://b/c/d?q"),
        F("http://b/c/d", "http:", "http://b/c/d"),
        F("http://b/c/d", "http://e/f", "http://e/f"),
        F(RFC_BASE, "http:g", "http://a/b/c/g"),
        /* another scheme (or none): any run of slashes, then the host */
        F("http://b/c", "https:/x", "https://x/"),
        F("http://b/c", "https:x", "https://x/"),
        F(NULL, "http:foo.com", "http://foo.com/"),
        F(NULL, "http:/x", "http://x/"),
        F(NULL, "http:///x", "http://x/"),
        F(NULL, "http:\\\\a\\b\\c", "http://a/b/c"),
        F(NULL, "https:\\/\\/\\a/", "https://a/"),
        /* relative references */
        F("http://b/", "///host/path", "http://host/path"),
        F("http://b/", "\\\\host\\path", "http://host/path"),
        F("http://b/x", "/\\host/path", "http://host/path"),
        F("http://b/c/d", ":foo", "http://b/c/:foo"),
        REJ("http://b/c/d", "a:b", URL_REJ_SCHEME), /* the scheme "a": not crawled */
        F("https://b/c", "//x/y", "https://x/y"),
        REJ(NULL, "http:", URL_REJ_NO_HOST),
        REJ(NULL, "http://", URL_REJ_NO_HOST),
        REJ(NULL, "http:///", URL_REJ_NO_HOST),
        REJ(NULL, "http://?x", URL_REJ_NO_HOST),
        REJ(NULL, "http://:80/", URL_REJ_NO_HOST),
        REJ("http://b/", "//", URL_REJ_NO_HOST),
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
        REJ(NULL, "ws://a/x", URL_REJ_SCHEME),
        REJ(NULL, "data:text/plain,x", URL_REJ_SCHEME),
        REJ(NULL, "file:///etc/passwd", URL_REJ_SCHEME),
        REJ(RFC_BASE, "tel:+123", URL_REJ_SCHEME),
        REJ(RFC_BASE, "g:h", URL_REJ_SCHEME),
        REJ(NULL, "httpx://a/", URL_REJ_SCHEME),
        REJ(RFC_BASE, "localhost:8080/x", URL_REJ_SCHEME),
        REJ(NULL, "g", URL_REJ_NO_BASE),
        REJ(NULL, "//g/x", URL_REJ_NO_BASE),
        REJ(NULL, "?x", URL_REJ_NO_BASE),
        REJ("mailto:x@y", "g", URL_REJ_BAD_BASE),
        REJ("/relative/base", "g", URL_REJ_BAD_BASE),
        REJ("http://", "", URL_REJ_BAD_BASE),
        REJ("ftp://f/p/", "x", URL_REJ_BAD_BASE),
        F("ftp://f/p/", "http:x", "http://x/"), /* no http base: "x" is the host */
        F("mailto:x@y", "http://a/", "http://a/"),
        FK("HTTP://A:80/B/./C/../D?Z=1&utm_source=x&A=2#frag", "e", "http://a/B/e",
           "http://a/B/e"),
        FK("HTTP://A:80/B/./C/../D?Z=1&utm_source=x&A=2#frag", "",
           "http://a/B/D?Z=1&utm_source=x&A=2", "http://a/B/D?A=2&Z=1"),
        FK("http://a/b/c;jsessionid=ABC", "d", "http://a/b/d", "http://a/b/d"),
        FK("http://a/b/c;jsessionid=ABC", "", "http://a/b/c;jsessionid=ABC", "http://a/b/c"),
    };
    RUN(cases, NULL);
}

static void userinfo(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "http://u:p@a/x", "http://u:p@a/x"),
        F(NULL, "http://U:P@A/x", "http://U:P@a/x"),
        F(NULL, "http://@a/x", "http://a/x"),
        F(NULL, "http://:@a/x", "http://a/x"),
        F(NULL, "http://u:@a/x", "http://u@a/x"),
        F(NULL, "http://:p@a/x", "http://:p@a/x"),
        FK(NULL, "http://%75:%7e%3a@a/", "http://%75:%7e%3a@a/", "http://u:~%3A@a/"),
        F(NULL, "http://u:p:q@a/", "http://u:p%3Aq@a/"),
        /* user info with more than one '@': all but the last are data */
        F(NULL, "http://u@v@a/", "http://u%40v@a/"),
        F(NULL, "http://u@v:w@x@a/", "http://u%40v:w%40x@a/"),
        F(NULL, "http://evil.example@good.example/", "http://evil.example@good.example/"),
        F(NULL, "http://a b;c=d[e]^f|g@a/", "http://a%20b%3Bc%3Dd%5Be%5D%5Ef%7Cg@a/"),
        /* '\' ends the authority of a special URL, as '/' does */
        F(NULL, "http://u\\v@a/", "http://u/v@a/"),
        F(NULL, "http://g\xc3\xbcnter@a/", "http://g%C3%BCnter@a/"),
        F(NULL, "http://!$&'()*+,~@a/", "http://!$&'()*+,~@a/"),
        REJ(NULL, "http://u@/x", URL_REJ_NO_HOST),
        REJ(NULL, "http://u:p@/x", URL_REJ_NO_HOST),
        REJ(NULL, "http://@/", URL_REJ_NO_HOST),
    };
    RUN(cases, NULL);
}

static void ports(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "HTTP://WWW.EXAMPLE.COM/A/B?C=D", "http://www.example.com/A/B?C=D"),
        F(NULL, "http://example.com", "http://example.com/"),
        F(NULL, "http://example.com?x", "http://example.com/?x"),
        F(NULL, "http://example.com:80/", "http://example.com/"),
        F(NULL, "https://example.com:443/x", "https://example.com/x"),
        F(NULL, "https://example.com:80/x", "https://example.com:80/x"),
        F(NULL, "http://example.com:443/x", "http://example.com:443/x"),
        F(NULL, "http://example.com:8080", "http://example.com:8080/"),
        F(NULL, "http://a:65535/", "http://a:65535/"),
        F(NULL, "http://a:080/", "http://a/"),
        F(NULL, "http://a:/", "http://a/"),
        F(NULL, "http://a:00008080/", "http://a:8080/"),
        F(NULL, "http://a:0000000000000000000000000080/", "http://a/"),
        F(NULL, "http://a:8080\\x", "http://a:8080/x"),
        REJ(NULL, "http://a:0/", URL_REJ_BAD_PORT), /* deliberate (see DIFFS) */
        REJ(NULL, "http://a:65536/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:99999999999999999999/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:-1/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:8x/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a:1:2/", URL_REJ_BAD_PORT),
        REJ(NULL, "http://a: 80/", URL_REJ_BAD_PORT),
    };
    RUN(cases, NULL);
}

static void ipv4_hosts(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "http://1.2.3.4/", "http://1.2.3.4/"),
        F(NULL, "http://10.0.0.255:81/x", "http://10.0.0.255:81/x"),
        F(NULL, "http://1.2.3.4./", "http://1.2.3.4/"), /* a trailing dot */
        F(NULL, "http://127.1/", "http://127.0.0.1/"),
        F(NULL, "http://0x7f.1/", "http://127.0.0.1/"),
        F(NULL, "http://0X7F.0.0.1/", "http://127.0.0.1/"),
        F(NULL, "http://0300.0250.0.1/", "http://192.168.0.1/"), /* octal */
        F(NULL, "http://01.2.3.4/", "http://1.2.3.4/"),
        F(NULL, "http://4294967295/", "http://255.255.255.255/"),
        F(NULL, "http://1.256/", "http://1.0.1.0/"),
        F(NULL, "http://1.2.65535/", "http://1.2.255.255/"),
        F(NULL, "http://0/", "http://0.0.0.0/"),
        F(NULL, "http://0x/", "http://0.0.0.0/"), /* an empty 0x part is 0 */
        F(NULL, "http://0x.0x.0/", "http://0.0.0.0/"),
        F(NULL, "http://%31%32%37.1/", "http://127.0.0.1/"), /* numeric once decoded */
        F(NULL, "http://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1/", "http://127.0.0.1/"),
        F(NULL, "http://1.2.3.4../", "http://1.2.3.4../"), /* last label empty: a name */
        F(NULL, "http://0xg/", "http://0xg/"),
        F(NULL, "http://a.1b/", "http://a.1b/"),
        /* ends in a number, is no address */
        REJ(NULL, "http://1.2.3.256/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://256.0.0.1/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://4294967296/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://999999999999999999999/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://1.2.3.4.5/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://1.2.3.09/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://09.2.3.4/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://1..2/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://a.1/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://a.0x1/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://example.123/", URL_REJ_BAD_IPV4),
        REJ(NULL, "http://1.2.3.4.5./", URL_REJ_BAD_IPV4),
    };
    RUN(cases, NULL);
}

static void ipv6_hosts(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "http://[::1]:8080/x", "http://[::1]:8080/x"),
        F(NULL, "http://[0:0::1]/", "http://[::1]/"),
        F(NULL, "http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
        F(NULL, "http://[::]/", "http://[::]/"),
        F(NULL, "http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/"),
        F(NULL, "http://[1:0:0:2:0:0:3:4]/", "http://[1::2:0:0:3:4]/"), /* the first run */
        F(NULL, "http://[1:2:3:4:5:6:0:8]/", "http://[1:2:3:4:5:6:0:8]/"), /* one zero stays */
        F(NULL, "http://[2001:DB8::0001]:443/", "http://[2001:db8::1]:443/"),
        F(NULL, "https://[2001:DB8::1]:443/", "https://[2001:db8::1]/"),
        /* embedded IPv4 is written as hex: one address, one spelling */
        F(NULL, "http://[::127.0.0.1]/", "http://[::7f00:1]/"),
        F(NULL, "http://[::FFFF:1.2.3.4]/", "http://[::ffff:102:304]/"),
        F(NULL, "http://[1:2:3:4:5:6:1.2.3.4]/", "http://[1:2:3:4:5:6:102:304]/"),
        REJ(NULL, "http://[::1/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[::g]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[fe80::1%25eth0]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[::1]x/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[1:2:3:4:5:6:7:8:9]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[1:2:3:4:5:6:7]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[1:::2]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[:1]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[1:]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[::01.2.3.4]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[::1.2.3]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[::1.2.3.256]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[1:2:3:4:5:6:7:1.2.3.4]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[12345::]/", URL_REJ_BAD_IPV6),
        REJ(NULL, "http://[]/", URL_REJ_BAD_IPV6),
    };
    RUN(cases, NULL);
}

static void paths_and_encode_sets(void **state)
{
    (void)state;
    static const tcase cases[] = {
        /* dot segments, also escaped, in any case */
        F(NULL, "http://a/%2e%2E/b/%2e/c", "http://a/b/c"),
        F(NULL, "http://a/b/./%2E/c/%2e./d", "http://a/b/d"),
        F(NULL, "http://a/b/%2E%2E/../c", "http://a/c"),
        F(NULL, "http://a/b/..", "http://a/"),
        F(NULL, "http://a/b/.", "http://a/b/"),
        F(NULL, "http://a/..//x", "http://a//x"),
        F(NULL, "http://a/b\\..\\c", "http://a/c"),
        FK(NULL, "http://a/\\x\\y?\\z", "http://a//x/y?\\z", "http://a//x/y?%5Cz"),
        FK(NULL, "http://example.com/foo/%2e%2", "http://example.com/foo/%2e%2",
           "http://example.com/foo/.%252"),
        /* the path set: C0, space " # < > ? ` { } and non-ASCII; '%' as it is */
        FK(NULL, "http://a/{}|[]`^\"<>", "http://a/%7B%7D|[]%60^%22%3C%3E",
           "http://a/%7B%7D%7C%5B%5D%60%5E%22%3C%3E"),
        FK(NULL, "http://a/%7e%7E%41%2f%2F%zz%4", "http://a/%7e%7E%41%2f%2F%zz%4",
           "http://a/~~A%2F%2F%25zz%254"),
        FK(NULL, "http://a/x%", "http://a/x%", "http://a/x%25"),
        F(NULL, "http://a/ b?c d", "http://a/%20b?c%20d"),
        F(NULL, "http://a/x+y?a+b=c+d", "http://a/x+y?a+b=c+d"),
        F(NULL, "http://a/\xc3\xbc?\xc3\xbc=\xc3\xbc", "http://a/%C3%BC?%C3%BC=%C3%BC"),
        F(NULL, "http://a/!$&'()*+,;=:@/-._~", "http://a/!$&'()*+,;=:@/-._~"),
        /* the special-query set: C0, space " # < > ' and non-ASCII */
        FK(NULL, "http://a/x?{}|[]`^\\'\"<>", "http://a/x?{}|[]`^\\%27%22%3C%3E",
           "http://a/x?%7B%7D%7C%5B%5D%60%5E%5C%27%22%3C%3E"),
        F(NULL, "http://a/x?/?:@", "http://a/x?/?:@"),
        FK(NULL, "http://a/x?%26=%3d&b", "http://a/x?%26=%3d&b", "http://a/x?%26=%3D&b"),
        /* bytes that are not UTF-8 are kept and escaped as they are */
        F(NULL, "http://a/\xff\xfe?\xc3", "http://a/%FF%FE?%C3"),
    };
    RUN(cases, NULL);
}

/* RFC 3986 5.4: browsers agree with the RFC on these, bar the schemes */
static void rfc3986_examples(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(RFC_BASE, "g", "http://a/b/c/g"),
        F(RFC_BASE, "./g", "http://a/b/c/g"),
        F(RFC_BASE, "g/", "http://a/b/c/g/"),
        F(RFC_BASE, "/g", "http://a/g"),
        F(RFC_BASE, "//g", "http://g/"),
        F(RFC_BASE, "?y", "http://a/b/c/d;p?y"),
        F(RFC_BASE, "g?y", "http://a/b/c/g?y"),
        F(RFC_BASE, "#s", "http://a/b/c/d;p?q"),
        F(RFC_BASE, "g#s", "http://a/b/c/g"),
        F(RFC_BASE, "g?y#s", "http://a/b/c/g?y"),
        F(RFC_BASE, ";x", "http://a/b/c/;x"),
        F(RFC_BASE, "g;x", "http://a/b/c/g;x"),
        F(RFC_BASE, "g;x?y#s", "http://a/b/c/g;x?y"),
        F(RFC_BASE, "", "http://a/b/c/d;p?q"),
        F(RFC_BASE, ".", "http://a/b/c/"),
        F(RFC_BASE, "./", "http://a/b/c/"),
        F(RFC_BASE, "..", "http://a/b/"),
        F(RFC_BASE, "../", "http://a/b/"),
        F(RFC_BASE, "../g", "http://a/b/g"),
        F(RFC_BASE, "../..", "http://a/"),
        F(RFC_BASE, "../../", "http://a/"),
        F(RFC_BASE, "../../g", "http://a/g"),
        F(RFC_BASE, "../../../g", "http://a/g"),
        F(RFC_BASE, "../../../../g", "http://a/g"),
        F(RFC_BASE, "/./g", "http://a/g"),
        F(RFC_BASE, "/../g", "http://a/g"),
        F(RFC_BASE, "g.", "http://a/b/c/g."),
        F(RFC_BASE, ".g", "http://a/b/c/.g"),
        F(RFC_BASE, "g..", "http://a/b/c/g.."),
        F(RFC_BASE, "..g", "http://a/b/c/..g"),
        F(RFC_BASE, "./../g", "http://a/b/g"),
        F(RFC_BASE, "./g/.", "http://a/b/c/g/"),
        F(RFC_BASE, "g/./h", "http://a/b/c/g/h"),
        F(RFC_BASE, "g/../h", "http://a/b/c/h"),
        F(RFC_BASE, "g;x=1/./y", "http://a/b/c/g;x=1/y"),
        F(RFC_BASE, "g;x=1/../y", "http://a/b/c/y"),
        F(RFC_BASE, "g?y/./x", "http://a/b/c/g?y/./x"),
        F(RFC_BASE, "g?y/../x", "http://a/b/c/g?y/../x"),
        F(RFC_BASE, "g#s/./x", "http://a/b/c/g"),
        F(RFC_BASE, "g#s/../x", "http://a/b/c/g"),
        F(RFC_BASE, ".//x", "http://a/b/c//x"),
        F(RFC_BASE, "..//x", "http://a/b//x"),
        F(RFC_BASE, "./?x", "http://a/b/c/?x"),
        FK(RFC_BASE, "?", "http://a/b/c/d;p?", "http://a/b/c/d;p"),
        F(RFC_BASE, "??", "http://a/b/c/d;p??"),
        F("http://a//b", "x", "http://a//x"),
        F("http://a///", "../x", "http://a//x"),
        F(RFC_BASE, "./1a:b", "http://a/b/c/1a:b"),
        F(RFC_BASE, "\\\\g\\x", "http://g/x"),
        FK(RFC_BASE, "a\\b?c\\d", "http://a/b/c/a/b?c\\d", "http://a/b/c/a/b?c%5Cd"),
        F(RFC_BASE, "%2e%2E/x", "http://a/b/x"),
        F("http://u:p@a/x/y", "z", "http://u:p@a/x/z"),
        F("http://u:p@a/x/y", "//b/z", "http://b/z"),
        F("https://a/x/y", "//B:443/z", "https://b/z"),
        F("https://a/x/y", "//b:80/z", "https://b:80/z"),
    };
    RUN(cases, NULL);
}

/* A <base href> is resolved against the document first, then links
 * against its fetch form. */
static void base_href(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
    static const struct {
        const char *doc, *href, *link, *want;
    } t[] = {
        { "http://a/b/c", "/other/", "x", "http://a/other/x" },
        { "http://a/b/c", "//cdn.example/lib/", "x.js?v=2", "http://cdn.example/lib/x.js?v=2" },
        { "https://a/b/c", "sub/", "../y", "https://a/b/y" },
        { "http://a/b/c", "http://B.example/base/index.html", "#top",
          "http://b.example/base/index.html" },
        { "http://a/b/c", "https://b/d/", "//e/f", "https://e/f" },
        { "http://a/b/c?z=1&y=2", "?q", "", "http://a/b/c?q" },
        { "http://a/b/c", "http:x/", "y", "http://a/b/x/y" },
    };
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            cr_buf base, out;
            url_reject why;
            cr_buf_init(&base, 0);
            cr_buf_init(&out, 0);
            assert_int_equal(url_canon_forms(c, t[i].doc, strlen(t[i].doc), t[i].href,
                                             strlen(t[i].href), &base, NULL, &why), 0);
            assert_int_equal(url_canon_forms(c, base.data, base.len, t[i].link,
                                             strlen(t[i].link), &out, NULL, &why), 0);
            assert_string_equal(out.data, t[i].want);
            cr_buf_release(&base);
            cr_buf_release(&out);
        }
    }
    url_canon_free(c);
}

/* ---- hosts through IDNA ---------------------------------------------------- */

static void idn_hosts(void **state)
{
    (void)state;
    static const tcase cases[] = {
        F(NULL, "http://b\xc3\xbc" "cher.example/", "http://xn--bcher-kva.example/"),
        /* mapped: upper case folds, so BÜCHER and bücher are one host */
        F(NULL, "http://B\xc3\x9c" "CHER.test/upper", "http://xn--bcher-kva.test/upper"),
        F(NULL, "http://b%C3%BCcher.example/", "http://xn--bcher-kva.example/"),
        F(NULL, "http://b\xc3\xbc" "cher\xe3\x80\x82" "example/", "http://xn--bcher-kva.example/"),
        F(RFC_BASE, "//b\xc3\xbc" "cher.example/x", "http://xn--bcher-kva.example/x"),
        /* full-width letters are mapped to ASCII, not punycoded */
        F(NULL, "http://\xef\xbc\xa7\xef\xbd\x8f.com/", "http://go.com/"),
        /* zero-width characters and soft hyphens are ignored */
        F(NULL, "http://a\xe2\x80\x8b" "b.test/", "http://ab.test/"),
        F(NULL, "http://a\xc2\xad" "b.test/", "http://ab.test/"),
        F(NULL, "http://\xe2\x84\xaa.test/", "http://k.test/"), /* KELVIN SIGN */
        /* non-transitional: sharp s and final sigma stay */
        F(NULL, "http://stra\xc3\x9f" "e.test/", "http://xn--strae-oqa.test/"),
        F(NULL, "http://\xcf\x82.test/", "http://xn--3xa.test/"),
        /* NFC: e + COMBINING ACUTE is é */
        F(NULL, "http://e\xcc\x81.test/", "http://xn--9ca.test/"),
        F(NULL, "http://\xe4\xbe\x8b\xe3\x81\x88.\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88/",
          "http://xn--r8jz45g.xn--zckzah/"),
        F(NULL, "http://\xd0\xbf\xd0\xbe\xd1\x87\xd0\xb5\xd0\xbc\xd1\x83\xd0\xb6\xd0\xb5\xd0\xbe"
                "\xd0\xbd\xd0\xb8\xd0\xbd\xd0\xb5\xd0\xb3\xd0\xbe\xd0\xb2\xd0\xbe\xd1\x80\xd1\x8f"
                "\xd1\x82\xd0\xbf\xd0\xbe\xd1\x80\xd1\x83\xd1\x81\xd1\x81\xd0\xba\xd0\xb8.ru/",
          "http://xn--b1abfaaepdrnnbgefbadotcwatmq2g4l.ru/"),
        /* A-labels are checked, and case-folded */
        F(NULL, "http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"),
        F(NULL, "http://ex%41mple.com/", "http://example.com/"),
        F(NULL, "http://a%2eb/", "http://a.b/"),
        F(NULL, "http://a~b_c/", "http://a~b_c/"),
        F(NULL, "http://a..b/", "http://a..b/"),
        F(NULL, "http://a./", "http://a./"),
        REJ(NULL, "http://xn--a/", URL_REJ_IDNA),
        REJ(NULL, "http://xn--/", URL_REJ_IDNA),
        REJ(NULL, "http://xn--bcher-2pa.test/", URL_REJ_IDNA), /* "bÜcher": not mapped */
        /* code points browsers refuse in a host */
        REJ(NULL, "http://\xef\xb7\x90.test/", URL_REJ_IDNA),              /* U+FDD0 */
        REJ(NULL, "http://\xef\xbf\xbd.test/", URL_REJ_IDNA),              /* U+FFFD */
        REJ(NULL, "http://a\xc2\xa0" "b.test/", URL_REJ_HOST_CODEPOINT), /* NBSP: a space */
        REJ(NULL, "http://a%C2%85b/", URL_REJ_IDNA),                       /* C1 control */
        REJ(NULL, "http://a\xe2\x80\x8c/", URL_REJ_IDNA),                  /* ZWNJ, no context */
        REJ(NULL, "http://a%C3b/", URL_REJ_HOST_CODEPOINT),                /* not UTF-8 */
        REJ(NULL, "http://a\xffz/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a%20b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a%00b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a|b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a^b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a%b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://ex%2Fample.com/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a\xef\xbc\x9a" "b\xc3\xbc/", URL_REJ_IDNA), /* ： maps to ':' */
        /* accepted by WHATWG, refused by libcurl (see DIFFS) */
        REJ(NULL, "http://a*b/", URL_REJ_HOST_CODEPOINT),
        REJ(NULL, "http://a!b/", URL_REJ_HOST_CODEPOINT),
        /* what IDNA2008 refuses and UTS #46 allows (see DIFFS) */
        REJ(NULL, "http://\xe2\x98\x83.test/", URL_REJ_IDNA),
        REJ(NULL, "http://-\xc3\xbc/", URL_REJ_IDNA),
    };
    RUN(cases, NULL);

    /* n x U+00FC becomes "xn--tda" and n - 1 'a': 57 make a 63-byte label,
     * the most DNS allows; 58 are rejected (see DIFFS) */
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
        tcase one[] = { F(NULL, url, n == 57 ? want : NULL) };
        one[0].why = n == 57 ? URL_OK : URL_REJ_HOST_TOO_LONG;
        RUN(one, NULL);
    }
    char *l63 = repeat("http://", 'a', 7 + 63), *l64 = repeat("http://", 'b', 7 + 64);
    char *n253 = repeat("http://", 'c', 7 + 253), *n254 = repeat("http://", 'd', 7 + 254);
    for (int i = 0; i < 4; i++) /* labels of 50 */
        n253[7 + 50 + i * 51] = n254[7 + 50 + i * 51] = '.';
    tcase lens[] = {
        F(NULL, l63, NULL), REJ(NULL, l64, URL_REJ_HOST_TOO_LONG),
        F(NULL, n253, NULL), REJ(NULL, n254, URL_REJ_HOST_TOO_LONG),
    };
    char w63[100], w253[300];
    snprintf(w63, sizeof w63, "%s/", l63);
    snprintf(w253, sizeof w253, "%s/", n253);
    lens[0].fetch = w63;
    lens[2].fetch = w253;
    RUN(lens, NULL);
    free(l63);
    free(l64);
    free(n253);
    free(n254);
}

/* The result of IDNA does not depend on the locale, and libidn2 is asked
 * for non-transitional UTS #46 processing with NFC. */
static void idna_ignores_the_locale(void **state)
{
    (void)state;
    static const char *const hosts[] = {
        "http://b\xc3\xbc" "cher.test/", "http://\xef\xbc\xa7\xef\xbd\x8f.com/",
        "http://stra\xc3\x9f" "e.test/", "http://\xe4\xbe\x8b.test/",
    };
    static const char *const locales[] = { "C", "C.UTF-8", "POSIX" };
    char first[4][128];
    for (size_t l = 0; l < sizeof locales / sizeof locales[0]; l++) {
        setlocale(LC_ALL, locales[l]);
        url_canon *c = canon_with(NULL);
        for (size_t i = 0; i < 4; i++) {
            cr_buf f;
            url_reject why;
            cr_buf_init(&f, 0);
            idn_flags_seen = -1;
            assert_int_equal(url_canon_forms(c, NULL, 0, hosts[i], strlen(hosts[i]), &f, NULL,
                                             &why), 0);
            assert_int_equal(idn_flags_seen, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
            if (l == 0)
                snprintf(first[i], sizeof first[i], "%s", f.data);
            else
                assert_string_equal(f.data, first[i]);
            cr_buf_release(&f);
        }
        url_canon_free(c);
    }
    setlocale(LC_ALL, "C");
}

/* ---- the key's policy ---------------------------------------------------- */

static void query_sort_and_strip(void **state)
{
    (void)state;
    static const tcase cases[] = {
        FK(NULL, "http://a/?b=2&a=1&c", "http://a/?b=2&a=1&c", "http://a/?a=1&b=2&c"),
        FK(NULL, "http://a/?a=2&a=1&a=2", "http://a/?a=2&a=1&a=2", "http://a/?a=1&a=2&a=2"),
        FK(NULL, "http://a/?b=&a&a=", "http://a/?b=&a&a=", "http://a/?a&a=&b="),
        FK(NULL, "http://a/?a=1&a", "http://a/?a=1&a", "http://a/?a&a=1"),
        FK(NULL, "http://a/?ab=1&a=2&a-b=3", "http://a/?ab=1&a=2&a-b=3",
           "http://a/?a=2&a-b=3&ab=1"),
        FK(NULL, "http://a/?&&a=1&&", "http://a/?&&a=1&&", "http://a/?a=1"),
        FK(NULL, "http://a/?&", "http://a/?&", "http://a/"),
        FK(NULL, "http://a/?=x&=", "http://a/?=x&=", "http://a/?=&=x"),
        F(NULL, "http://a/?B=1&a=1", "http://a/?B=1&a=1"), /* bytes: 'B' < 'a' */
        FK(NULL, "http://a/?b=%41&a=%2f", "http://a/?b=%41&a=%2f", "http://a/?a=%2F&b=A"),
        FK(NULL, "http://a/?utm_source=x&utm_medium=y&a=1&fbclid=z&gclid=w",
           "http://a/?utm_source=x&utm_medium=y&a=1&fbclid=z&gclid=w", "http://a/?a=1"),
        FK(NULL, "http://a/?UTM_Source=x&FBCLID=y", "http://a/?UTM_Source=x&FBCLID=y",
           "http://a/"),
        FK(NULL, "http://a/?utm%5Fsource=x&b", "http://a/?utm%5Fsource=x&b", "http://a/?b"),
        FK(NULL, "http://a/?utm=1&xutm_a=2&utm_=3", "http://a/?utm=1&xutm_a=2&utm_=3",
           "http://a/?utm=1&xutm_a=2"),
        FK(NULL, "http://a/?fbclid", "http://a/?fbclid", "http://a/"),
        FK(NULL, "http://a/?PHPSESSID=abc&x=1", "http://a/?PHPSESSID=abc&x=1", "http://a/?x=1"),
        FK(NULL, "http://a/?sid=1&side=2&SID=3", "http://a/?sid=1&side=2&SID=3",
           "http://a/?side=2"),
        FK(NULL, "http://a/?JSESSIONID=1&jsessionid", "http://a/?JSESSIONID=1&jsessionid",
           "http://a/"),
        FK(NULL, "http://a/x;jsessionid=ABC?y=1", "http://a/x;jsessionid=ABC?y=1",
           "http://a/x?y=1"),
        FK(NULL, "http://a/x;JSESSIONID=ABC;other=1/y", "http://a/x;JSESSIONID=ABC;other=1/y",
           "http://a/x;other=1/y"),
        FK(NULL, "http://a/x;a=1;jsessionid=2", "http://a/x;a=1;jsessionid=2", "http://a/x;a=1"),
        FK(NULL, "http://a/b/..;jsessionid=1/x", "http://a/b/..;jsessionid=1/x", "http://a/x"),
        F(NULL, "http://a/x;jsessionid", "http://a/x;jsessionid"),
        /* robots.txt sees the fetch form: the order the page wrote */
        FK(NULL, "http://a/p?b=1&a=2", "http://a/p?b=1&a=2", "http://a/p?a=2&b=1"),
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
        FK(NULL, "http://a/?b=2&a=1&utm_x=3", "http://a/?b=2&a=1&utm_x=3", "http://a/?b=2&a=1"),
        F(NULL, "http://a/x;jsessionid=1?sid=2", "http://a/x;jsessionid=1?sid=2"),
    };
    RUN(keep, &p);

    static const char *const pats[] = { "ref*", "*_id", "exact" };
    url_policy_defaults(&p);
    p.strip_params = pats;
    p.n_strip_params = 3;
    static const tcase custom[] = {
        FK(NULL, "http://a/?ref=1&referrer=2&x=1&utm_source=3",
           "http://a/?ref=1&referrer=2&x=1&utm_source=3", "http://a/?utm_source=3&x=1"),
        FK(NULL, "http://a/?user_id=1&id=2&EXACT=3&exactly=4",
           "http://a/?user_id=1&id=2&EXACT=3&exactly=4", "http://a/?exactly=4&id=2"),
    };
    RUN(custom, &p);

    url_policy_defaults(&p);
    p.max_url_bytes = 100;
    char *fits = repeat("http://a/", 'x', 100), *over = repeat("http://a/", 'x', 101);
    tcase small[] = {
        F(NULL, fits, fits),
        REJ(NULL, over, URL_REJ_TOO_LONG),
        /* 31 bytes in, 75 out: fits; 41 in, 105 out: does not */
        F(NULL, "http://a/\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc",
          "http://a/%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC%C3%BC"),
        REJ(NULL, "http://a/\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc", URL_REJ_TOO_LONG),
        /* the fetch form fits, the key (a stray '%' becomes %25) does not */
        REJ(NULL, "http://a/%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%%", URL_REJ_TOO_LONG),
    };
    RUN(small, &p);
    free(fits);
    free(over);
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
        F(NULL, at, at),
        REJ(NULL, over, URL_REJ_TOO_LONG),
        REJ(NULL, enc, URL_REJ_TOO_LONG),
        F(lbase, "?q=1", NULL),
        REJ(lbase, "?q=123456789", URL_REJ_TOO_LONG),
        REJ(mb, "g", URL_REJ_BAD_BASE),
        F(mb, "http://a/", "http://a/"),
    };
    char want[2100];
    snprintf(want, sizeof want, "%s?q=1", lbase);
    cases[4].fetch = want;
    RUN(cases, NULL);
    free(mb);
    free(at);
    free(over);
    free(enc);
    free(lbase);
}

/* ---- the rest of the API ------------------------------------------------ */

static void either_output_may_be_omitted(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
    cr_buf f, k;
    url_reject why;
    cr_buf_init(&f, 0);
    cr_buf_init(&k, 0);
    const char *u = "http://a/?b=1&a=2";
    assert_int_equal(url_canon_forms(c, NULL, 0, u, strlen(u), &f, NULL, &why), 0);
    assert_string_equal(f.data, "http://a/?b=1&a=2");
    assert_int_equal(url_canon_forms(c, NULL, 0, u, strlen(u), NULL, &k, &why), 0);
    assert_string_equal(k.data, "http://a/?a=2&b=1");
    assert_int_equal(url_canon_resolve(c, NULL, 0, u, strlen(u), &k, &why), 0);
    assert_string_equal(k.data, "http://a/?a=2&b=1");
    assert_int_equal(url_canon_forms(c, NULL, 0, "x", 1, NULL, NULL, &why), -EINVAL);
    assert_int_equal(why, URL_REJ_NO_BASE);
    cr_buf_release(&f);
    cr_buf_release(&k);
    url_canon_free(c);
}

/* Two bases are cached: a page and its <base href> alternate freely. */
static void base_cache(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 0);
    const char *b1 = "http://one/a/b", *b2 = "http://two/c/d", *b3 = "http://three/e/f",
               *bad = "ftp://x/";
    for (int round = 0; round < 3; round++) {
        assert_int_equal(url_canon_resolve(c, b1, strlen(b1), "x", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://one/a/x");
        assert_int_equal(url_canon_resolve(c, b2, strlen(b2), "x", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://two/c/x");
        assert_int_equal(url_canon_resolve(c, b1, strlen(b1), "y", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://one/a/y");
        assert_int_equal(url_canon_resolve(c, b3, strlen(b3), "y", 1, &out, &why), 0);
        assert_string_equal(out.data, "http://three/e/y");
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
        { "http://u%40v@h/", "h" },
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
    for (int r = URL_OK; r < URL_REJ_COUNT; r++) {
        const char *s = url_reject_str((url_reject)r), *n = url_reject_name((url_reject)r);
        assert_true(strlen(s) > 0 && strlen(n) > 0);
        assert_int_equal(strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789_"), strlen(n));
        for (int q = URL_OK; q < r; q++) {
            assert_string_not_equal(s, url_reject_str((url_reject)q));
            assert_string_not_equal(n, url_reject_name((url_reject)q));
        }
    }
    assert_string_equal(url_reject_str(URL_REJ_SCHEME), "scheme is not http(s)");
    assert_string_equal(url_reject_name(URL_REJ_BAD_IPV4), "bad_ipv4");
    assert_string_equal(url_reject_name(URL_REJ_COUNT), "unknown");
}

static void rejections_are_counted_by_reason(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
    static const char *const refs[] = { "mailto:x", "http://1.2.3.256/", "ftp://a/",
                                        "http://a:0/", "http://ok/", "http://\xef\xbf\xbd/" };
    cr_buf out;
    url_reject why;
    url_canon_stats st;
    cr_buf_init(&out, 0);
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        url_canon_resolve(c, NULL, 0, refs[i], strlen(refs[i]), &out, &why);
    url_canon_get_stats(c, &st);
    assert_int_equal(st.accepted, 1);
    assert_int_equal(st.rejected, 5);
    assert_int_equal(st.rejected_by[URL_REJ_SCHEME], 2);
    assert_int_equal(st.rejected_by[URL_REJ_BAD_IPV4], 1);
    assert_int_equal(st.rejected_by[URL_REJ_BAD_PORT], 1);
    assert_int_equal(st.rejected_by[URL_REJ_IDNA], 1);
    assert_int_equal(st.rejected_by[URL_OK], 0);
    assert_true(st.idna_labels >= 1);
    cr_buf_release(&out);
    url_canon_free(c);
}

static void out_buffer_cap_is_respected(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
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
    assert_true(nulls >= 15); /* every buffer and pattern copy was a failure point */

    url_canon *c = url_canon_new(&p);
    assert_non_null(c);
    cr_buf out, f;
    url_reject why;
    cr_buf_init(&out, 0);
    cr_buf_init(&f, 0);
    cr_alloc_fail_after(1);
    int r = url_canon_resolve(c, RFC_BASE, strlen(RFC_BASE), "g", 1, &out, &why);
    long failures = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(r, -ENOMEM);
    assert_int_equal(out.len, 0);
    assert_true(failures > 0);
    /* the key's buffer fails after the fetch form's got its bytes */
    assert_int_equal(url_canon_forms(c, NULL, 0, "http://x/", 9, &f, NULL, &why), 0);
    cr_alloc_fail_after(1);
    r = url_canon_forms(c, NULL, 0, "http://y/", 9, &f, &out, &why);
    cr_alloc_fail_after(0);
    assert_int_equal(r, -ENOMEM);
    assert_int_equal(f.len, 0);
    /* libidn2 out of memory, for a link and for a base */
    const char *idn = "http://b\xc3\xbc" "cher.test/";
    idn_fail_rc = IDN2_MALLOC;
    assert_int_equal(url_canon_resolve(c, NULL, 0, idn, strlen(idn), &out, &why), -ENOMEM);
    assert_int_equal(url_canon_resolve(c, idn, strlen(idn), "x", 1, &out, &why), -ENOMEM);
    idn_fail_rc = 0;
    /* and it all works afterwards: the failed base was not cached */
    assert_int_equal(url_canon_resolve(c, idn, strlen(idn), "x", 1, &out, &why), 0);
    assert_string_equal(out.data, "http://xn--bcher-kva.test/x");
    assert_int_equal(url_canon_resolve(c, RFC_BASE, strlen(RFC_BASE), "g", 1, &out, &why), 0);
    assert_string_equal(out.data, "http://a/b/c/g");
    cr_buf_release(&out);
    cr_buf_release(&f);
    url_canon_free(c);
}

static void idna_errors_map_to_reasons(void **state)
{
    (void)state;
    url_canon *c = canon_with(NULL);
    cr_buf out;
    url_reject why;
    cr_buf_init(&out, 0);
    const char *idn = "http://\xc3\xbc.test/";
    static const struct {
        int rc;
        url_reject why;
    } t[] = { { IDN2_TOO_BIG_LABEL, URL_REJ_HOST_TOO_LONG },
              { IDN2_TOO_BIG_DOMAIN, URL_REJ_HOST_TOO_LONG },
              { IDN2_PUNYCODE_BIG_OUTPUT, URL_REJ_HOST_TOO_LONG },
              { IDN2_DISALLOWED, URL_REJ_IDNA },
              { IDN2_BIDI, URL_REJ_IDNA },
              { IDN2_PUNYCODE_BAD_INPUT, URL_REJ_IDNA } };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        idn_fail_rc = t[i].rc;
        assert_int_equal(url_canon_resolve(c, NULL, 0, idn, strlen(idn), &out, &why), -EINVAL);
        assert_int_equal(why, t[i].why);
    }
    idn_fail_rc = 0;
    /* plain ASCII hosts never reach libidn2 */
    idn_fail_rc = IDN2_DISALLOWED;
    assert_int_equal(url_canon_resolve(c, NULL, 0, "http://Plain-Host.test/", 23, &out, &why), 0);
    idn_fail_rc = 0;
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

/* ==== the differential test against Node's URL ============================= */

/* Deliberate differences: Node accepts, crawld rejects with `why`. Node
 * marks each input with the flags of its result (NODE_SCRIPT); a mismatch
 * is deliberate only when a flag it carries is listed here with the very
 * reason crawld gave. Anything else is a failure: a different href, crawld
 * accepting what Node rejects, or a rejection no flag explains. Non-special
 * schemes (mailto:, javascript:, ...) and the special ones that are not
 * http(s) are not crawled: Node's result for them counts as a rejection
 * that crawld must share. */
static const struct diff {
    char flag;
    url_reject why;
    const char *reason;
} DIFFS[] = {
    { 'P', URL_REJ_BAD_PORT, "port 0: WHATWG accepts it; nothing can be fetched there" },
    { 'L', URL_REJ_HOST_TOO_LONG,
      "a label over 63 bytes or a name over 253: WHATWG's domain to ASCII sets "
      "VerifyDnsLength=false; such a name cannot be looked up, and libidn2 applies the label "
      "limit to IDN labels anyway, so crawld applies it to every host" },
    { 'C', URL_REJ_HOST_CODEPOINT,
      "! \" $ & ' ( ) * + , ; = ` { } in a host: allowed by WHATWG, refused by libcurl "
      "(CURLUE_BAD_HOSTNAME), so such a URL could never be fetched" },
    { 'S', URL_REJ_IDNA,
      "code points UTS #46 marks valid but NV8 (not valid in IDNA2008): symbols, punctuation "
      "and emoji, and conjoining Hangul jamo (RFC 5892 OldHangulJamo); libidn2 applies "
      "IDNA2008's tables" },
    { 'H', URL_REJ_IDNA,
      "a label written with non-ASCII code points that starts or ends with '-' or has \"--\" "
      "in positions 3-4 once mapped: WHATWG sets CheckHyphens=false, libidn2 always applies "
      "IDNA2008's hyphen rules (plain ASCII labels never reach libidn2 and are accepted)" },
    { 'B', URL_REJ_IDNA,
      "right-to-left and Arabic-Indic digit labels that fail RFC 5893's Bidi rule as libidn2 "
      "applies it per label" },
    { 'O', URL_REJ_IDNA,
      "CONTEXTO code points (U+00B7, U+0375, U+05F3, U+05F4, U+30FB, Arabic-Indic digits) "
      "outside the context IDNA2008 requires; UTS #46 has no CONTEXTO rules" },
    { 'A', URL_REJ_IDNA,
      "a non-ASCII label with ASCII other than letters, digits and '-': libidn2's A-label "
      "round trip refuses it" },
    { 'X', URL_REJ_IDNA,
      "an A-label (xn--) that is not the canonical encoding of its decoding (\"xn---zca\" for "
      "\"xn--zca\"), or that decodes to ASCII only: libidn2's strict decoder refuses it, and "
      "a second spelling of one host is what spoofing needs" },
};

/* The Node side: reads a JSON array of [input, base|null], prints one line
 * per input: "ERR", "SCHEME" (not http/https), or "OK FLAGS HREF" with the
 * fragment cut off and FLAGS (or "-") saying which DIFFS may apply. */
static const char NODE_SCRIPT[] =
    "const url = require('url');\n"
    "const inp = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
    "const sym = /[\\p{S}\\p{Extended_Pictographic}\\u1100-\\u11ff\\ua960-\\ua97f"
    "\\ud7b0-\\ud7ff]|[^\\P{P}\\-]/u;\n"
    "const rtl = /[\\p{Script=Arabic}\\p{Script=Hebrew}\\p{Script=Syriac}\\p{Script=Thaana}"
    "\\p{Script=Nko}\\u0660-\\u0669\\u06f0-\\u06f9]/u;\n"
    "const ctxo = /[\\u00b7\\u0375\\u05f3\\u05f4\\u30fb\\u0660-\\u0669\\u06f0-\\u06f9]/u;\n"
    "function flags(u) {\n"
    "  let f = '';\n"
    "  const h = u.hostname;\n"
    "  if (u.port === '0') f += 'P';\n"
    "  if (!h.startsWith('[') && !/^[0-9.]+$/.test(h)) {\n"
    "    const d = h.endsWith('.') ? h.slice(0, -1) : h;\n"
    "    if (d.length > 253 || d.split('.').some(l => l.length > 63)) f += 'L';\n"
    "  }\n"
    "  if (/[!\"$&'()*+,;=`{}]/.test(h)) f += 'C';\n"
    "  const uni = url.domainToUnicode(h);\n"
    "  const bidiDomain = rtl.test(uni);\n"
    "  for (const l of h.split('.')) {\n"
    "    const d = url.domainToUnicode(l);\n"
    "    if (d.startsWith('-') || d.endsWith('-') || d.slice(2, 4) === '--') f += 'H';\n"
    "    if (!l.startsWith('xn--')) continue;\n"
    "    if (sym.test(d)) f += 'S';\n"
    "    if (ctxo.test(d)) f += 'O';\n"
    "    if (/[^\\x00-\\x7f]/.test(d) && /[^a-z0-9\\-\\u0080-\\u{10ffff}]/u.test(d)) f += 'A';\n"
    "    if (!/[^\\x00-\\x7f]/.test(d) || url.domainToASCII(d) !== l) f += 'X';\n"
    "  }\n"
    "  if (bidiDomain) f += 'B';\n"
    "  return f || '-';\n"
    "}\n"
    "const out = [];\n"
    "for (const [i, b] of inp) {\n"
    "  let r = 'ERR';\n"
    "  try {\n"
    "    const u = b === null ? new URL(i) : new URL(i, b);\n"
    "    if (u.protocol !== 'http:' && u.protocol !== 'https:') r = 'SCHEME';\n"
    "    else { const k = u.href.indexOf('#'); r = 'OK ' + flags(u) + ' ' +"
    " (k < 0 ? u.href : u.href.slice(0, k)); }\n"
    "  } catch (e) {}\n"
    "  out.push(r);\n"
    "}\n"
    "process.stdout.write(out.join('\\n') + '\\n');\n";

/* the path of the first of node / nodejs on PATH, or NULL */
static const char *find_node(char *buf, size_t cap)
{
    const char *path = getenv("PATH");
    static const char *const names[] = { "node", "nodejs" };
    if (path == NULL)
        path = "/usr/bin:/bin";
    for (size_t k = 0; k < 2; k++) {
        const char *p = path;
        while (*p) {
            size_t n = strcspn(p, ":");
            snprintf(buf, cap, "%.*s/%s", (int)n, p, names[k]);
            if (n > 0 && access(buf, X_OK) == 0)
                return buf;
            p += n;
            if (*p == ':')
                p++;
        }
    }
    return NULL;
}

/* ---- inputs ---- */

typedef struct inputs {
    char **v;
    size_t n, cap;
} inputs;

static void in_add(inputs *in, const char *s, size_t n)
{
    if (in->n == in->cap) {
        in->cap = in->cap ? in->cap * 2 : 1024;
        in->v = realloc(in->v, in->cap * sizeof *in->v);
        assert_non_null(in->v);
    }
    char *c = malloc(n + 1);
    assert_non_null(c);
    memcpy(c, s, n);
    c[n] = '\0';
    in->v[in->n++] = c;
}

static void in_free(inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->v[i]);
    free(in->v);
}

/* Hand-written inputs: the standard's text (its examples and the repairs
 * it describes), with the bases below. */
static const char *const HAND[] = {
    "https://example.org/", "https://EXAMPLE.org", "https://example.org:443/", "http://example.org:80",
    "https://example.org:8080/", "https://example.org:0/", "https://example.org:65535/",
    "https://example.org:65536/", "https://example.org:00443/", "https://example.org:/x",
    "https://example.org:x/", "https://example.org/ foo", "https://example.org/%",
    "https://example.org/%zz", "https://example.org/%2e/x", "https://example.org/%2e%2e/x",
    "https://example.org/.%2E/x", "https://example.org/a/%2e./b", "https://example.org/a/.././b",
    "https://example.org/a/..", "https://example.org/a/.", "https://example.org//a//b",
    "https://example.org/\\a\\b", "https://example.org/a?b\\c#d\\e", "https://example.org/?",
    "https://example.org/?#", "https://example.org/#", "https://example.org/??a=b&c",
    "https://example.org/?a=b c", "https://example.org/?'\"<>`{}|^",
    "https://example.org/'\"<>`{}|^[]", "https://example.org/\x01\x1f\x7f",
    "https://example.org/?\x01\x1f\x7f", "https://example.org/#\x01\x1f\x7f",
    "https://example.org/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "https://example.org/?\xc3\xa9",
    "  https://example.org/  ", "\x01\x02https://example.org/\x03", "\t\nhttps://ex\tample.org/\r",
    "https://ex\nample.org/p\ta\rth", "HTTPS://EXAMPLE.ORG/PATH", "hTtP://example.org/",
    "https:example.org", "https:/example.org", "https:///example.org", "https:\\\\example.org\\x",
    "http:example.org", "http:/example.org", "http://////example.org", "http:\\/\\/example.org",
    "//example.org/x", "///example.org/x", "\\\\example.org\\x", "/\\example.org/x",
    "\\/example.org/x", "/x", "\\x", "x", "./x", "../x", "../../../../x", ".", "..", "", " ",
    "?", "?x", "#", "#x", ":x", "::", ":@x", "@x", "x:y", "x:/y", "1x:y", "a+b:c", "C:/x",
    "foo/bar?baz#qux", ";x", "%2e", "%2e%2e", "%2E%2E/%2e", "http:", "https:", "http:?x",
    "http:#x", "http:/", "http://", "http:///", "http://?", "http://#", "http://:",
    "http://:80", "http://@", "http://u@", "http://u:p@", "http://@x", "http://:@x",
    "http://u@x", "http://u:p@x", "http://u:p:q@x", "http://u@v@x", "http://u@v:w@x@y",
    "http://a b@x", "http://a;b=c@x", "http://%40@x", "http://a%2fb@x", "http://\xc3\xa9@x",
    "http://u@x:81", "http://x@:81", "http://user:pass@host:99/p?q#f",
    "http://evil.example@good.example/", "http://a@b@c/", "http://[::1]@x/",
    "http://x:80@y/", "http://1.2.3.4/", "http://1.2.3.4./", "http://1.2.3.4../",
    "http://1.2.3/", "http://1.2/", "http://1/", "http://0/", "http://0x/", "http://0x.0x.0/",
    "http://0X7F.1/", "http://0x7f000001/", "http://2130706433/", "http://017700000001/",
    "http://0300.0250.0.1/", "http://1.2.3.256/", "http://256.0.0.1/", "http://1.256/",
    "http://1.65536/", "http://1.2.65536/", "http://4294967295/", "http://4294967296/",
    "http://99999999999999999999999/", "http://1.2.3.4.5/", "http://1.2.3.09/", "http://09/",
    "http://08.1/", "http://0x1g/", "http://0xg/", "http://a.1/", "http://a.0x1/",
    "http://1.a/", "http://1a/", "http://a.1a/", "http://1..2/", "http://.1/", "http://1./",
    "http://example.123/", "http://example.0x7f/", "http://%31%32%37.1/", "http://%30x7f.1/",
    "http://127.0.0.1%2e/", "http://\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1/",
    "http://[::1]/", "http://[::1]:8080/", "http://[::]/", "http://[0:0:0:0:0:0:0:1]/",
    "http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2:0:0:3:4]/", "http://[1:2:3:4:5:6:7:8]/",
    "http://[1:2:3:4:5:6:7:8:9]/", "http://[1:2:3:4:5:6:7]/", "http://[1::2::3]/",
    "http://[1:::2]/", "http://[:1]/", "http://[1:]/", "http://[::127.0.0.1]/",
    "http://[::ffff:1.2.3.4]/", "http://[::ffff:1.2.3]/", "http://[::1.2.3.4.5]/",
    "http://[::01.2.3.4]/", "http://[::1.2.3.256]/", "http://[1:2:3:4:5:6:1.2.3.4]/",
    "http://[1:2:3:4:5:6:7:1.2.3.4]/", "http://[FFFF::ABCD]/", "http://[12345::]/",
    "http://[::1%25eth0]/", "http://[::1/", "http://::1]/", "http://[::1]x/", "http://[]/",
    "http://[x]/", "http://[::1]:/", "http://[2001:db8:0:0:1:0:0:1]/", "http://[0::0:0]/",
    "http://exa mple.org/", "http://exa%20mple.org/", "http://a%00b/", "http://a%/",
    "http://a%zz/", "http://a%41/", "http://%41%42/", "http://a%2eb/", "http://a%2fb/",
    "http://a<b/", "http://a>b/", "http://a^b/", "http://a|b/", "http://a\\b/", "http://a[b/",
    "http://a]b/", "http://a*b/", "http://a!b/", "http://a$b/", "http://a&b/", "http://a'b/",
    "http://a(b)/", "http://a+b/", "http://a,b/", "http://a;b/", "http://a=b/", "http://a_b/",
    "http://a~b/", "http://a\"b/", "http://a{b}/", "http://a`b/", "http://a\x7f" "b/",
    "http://a..b/", "http://.a/", "http://a./", "http://./", "http://../", "http://.../",
    "http://-a-/", "http://ab--c/", "http://_a_/",
    "http://b\xc3\xbc" "cher.test/", "http://B\xc3\x9c" "CHER.test/", "http://b%C3%BCcher.test/",
    "http://xn--bcher-kva.test/", "http://XN--BCHER-KVA.test/", "http://xn--bcher-2pa.test/",
    "http://xn--a/", "http://xn--/", "http://xn--zz/", "http://xn--a.xn--b/",
    "http://xn--zca/", "http://xn--tda/", "http://xn--1ug/", "http://xn--vh7cwc.com/",
    "http://\xef\xbc\xa7\xef\xbd\x8f.com", "http://a\xe2\x80\x8b" "b.test/",
    "http://a\xc2\xad" "b.test/", "http://a\xe2\x81\xa0" "b.test/", "http://a\xef\xb8\x8f" "b/",
    "http://\xc2\xad.test/", "http://\xc2\xad/", "http://a.\xc2\xad/",
    "http://a\xc2\xa0" "b.test/", "http://\xef\xb7\x90/", "http://\xef\xbf\xbd/",
    "http://\xc2\x80/", "http://\xee\x80\x80/", "http://\xef\xbf\xbf/",
    "http://a\xe2\x80\xa8" "b/", "http://a\xe2\x80\x8c/", "http://a\xe2\x80\x8d/",
    "http://\xe2\x84\xaa/", "http://\xe2\x84\xa6/", "http://\xef\xac\x81/",
    "http://\xe2\x91\xa0.com/", "http://\xe2\x84\xa1/", "http://\xe2\x92\x88" "com/",
    "http://a\xe2\x80\xa4" "b/", "http://stra\xc3\x9f" "e/", "http://\xcf\x82/", "http://\xc4\xb1/",
    "http://e\xcc\x81.test/", "http://\xcc\x81" "a/", "http://\xc3\x80.com/",
    "http://A\xcc\x80.com/", "http://\xe4\xbe\x8b\xe3\x81\x88.\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88/",
    "http://\xe4\xb8\xad\xe6\x96\x87.\xe4\xb8\xad\xe5\x9b\xbd/", "http://\xed\x95\x9c\xea\xb5\xad.kr/",
    "http://\xd7\x90.test/", "http://a.\xd7\x90/", "http://\xd9\xa1.com/", "http://\xd8\xa7\xd9\x84.test/",
    "http://\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8\xe0\xa5\x8d\xe0\xa4\xa6\xe0\xa5\x80.test/",
    "http://\xe0\xb9\x84\xe0\xb8\x97\xe0\xb8\xa2.test/", "http://\xce\xb5\xce\xbb.test/",
    "http://\xd1\x80\xd1\x84/", "http://a\xe3\x80\x82" "b/", "http://a\xef\xbc\x8e" "b/",
    "http://a\xef\xbd\xa1" "b/", "http://\xe2\x98\x83/", "http://\xf0\x9f\x92\xa9/",
    "http://ab--\xc3\xbc/", "http://-\xc3\xbc/", "http://\xc3\xbc-/", "http://a*\xc3\xbc/",
    "http://a_\xc3\xbc/", "http://a~\xc3\xbc/", "http://\xc2\xb7" "a/", "http://l\xc2\xb7l/",
    "http://a\xef\xbc\x9a" "b/", "http://\xef\xbc\x85\xef\xbc\x94\xef\xbc\x91.com/",
    "http://a%C3/", "http://a%C3%28/", "http://%F0%9F%92%A9/",
};

static const char *const BASES[] = {
    NULL,
    "http://example.org/foo/bar",
    "https://a.example/b/c/d;p?q=1&r=2#f",
    "http://u:p@h.test:8080/x/y/?z",
    "http://[::1]/a/",
    "http://1.2.3.4/dir/page.html",
    "ftp://f.test/p/q",
};

/* a small seeded PRNG: xorshift64* */
static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 33) % n;
}

#define PICK(a) (a)[rnd(sizeof(a) / sizeof((a)[0]))]

static const char *const G_LEAD[] = { "", "", "", "", " ", "\t", "\x01", "\n " };
static const char *const G_SCHEME[] = {
    "http://", "https://", "HTTP://", "http:", "https:", "http:/", "https:\\\\", "http:///",
    "//", "\\\\", "/\\", "", "", "", "/", "ftp://", "mailto:", "ws://", "h\tttp://", "file:///",
};
static const char *const G_USER[] = { "", "", "", "", "u@", "u:p@", "u@v@", ":@", "a b@",
                                      "%41:%zz@", "\xc3\xa9@", "x:y:z@", "@", "u:@" };
static const char *const G_LABEL[] = {
    "a", "example", "WWW", "xn--bcher-kva", "xn--zz", "b\xc3\xbc" "cher", "B\xc3\x9c" "CHER",
    "\xef\xbc\xa7\xef\xbd\x8f", "stra\xc3\x9f" "e", "\xe4\xbe\x8b", "\xd0\xbf\xd1\x80",
    "\xce\xb1\xce\xb2", "\xe3\x83\x86\xe3\x82\xb9", "a\xe2\x80\x8b" "b", "a\xc2\xad" "b",
    "%41b", "a%2eb", "1", "0x7f", "077", "256", "09", "0x", "a-b", "-a", "a_b", "ab--cd",
    "\xd7\x90", "\xe2\x84\xaa", "\xef\xbc\x91", "a%20b", "a*b", "\xc3\xbc-x", "",
};
static const char *const G_HOST_SPECIAL[] = {
    "[::1]", "[1::2:3]", "[::127.0.0.1]", "[::ffff:1.2.3.4]", "[1:2:3:4:5:6:7:8]", "[::1",
    "1.2.3.4", "4294967295", "0x7f.1", "1.2.3.4.", "0300.0250.0.1", "[::1]:x",
};
static const char *const G_PORT[] = { "", "", "", "", ":", ":80", ":443", ":0080", ":8080",
                                      ":65535", ":65536", ":0", ":x", ":\xc3\xa9" };
static const char *const G_SEG[] = {
    "a", "b", "index.html", ".", "..", "%2e", "%2E%2e", ".%2e", "", "a b", "\xc3\xbc",
    "%zz", "%41", "{}", "^", "|", "'", "\"", "<>", "`", ";x=1", "a:b", "@", "%",
    "\x01", "\x7f", "[x]", "%2F",
};
static const char *const G_SEP[] = { "/", "/", "/", "\\", "//" };
static const char *const G_QUERY[] = { "", "", "?", "?a=1&b=2", "?b=2&a=1", "?'\"<>",
                                        "? x", "?\xc3\xbc=\xc3\xa9", "?%zz", "?a\\b",
                                        "?#", "??", "?{}|^`", "?utm_source=x&id=1" };
static const char *const G_FRAG[] = { "", "", "", "#", "#x", "#\x01 y", "#\xc3\xa9" };

static void gen_one(cr_buf *b)
{
    cr_buf_clear(b);
    cr_buf_puts(b, PICK(G_LEAD));
    const char *sch = PICK(G_SCHEME);
    cr_buf_puts(b, sch);
    bool authority = strstr(sch, "//") != NULL || strstr(sch, "\\\\") != NULL ||
                     strcmp(sch, "http:") == 0 || strcmp(sch, "https:") == 0 ||
                     strcmp(sch, "/\\") == 0;
    if (authority && rnd(4) != 0) {
        cr_buf_puts(b, PICK(G_USER));
        if (rnd(6) == 0) {
            cr_buf_puts(b, PICK(G_HOST_SPECIAL));
        } else {
            int labels = 1 + (int)rnd(3);
            for (int i = 0; i < labels; i++) {
                if (i)
                    cr_buf_putc(b, '.');
                cr_buf_puts(b, PICK(G_LABEL));
            }
            if (rnd(4) == 0)
                cr_buf_puts(b, rnd(2) ? ".test" : ".");
        }
        cr_buf_puts(b, PICK(G_PORT));
    }
    int segs = (int)rnd(4);
    for (int i = 0; i < segs; i++) {
        if (i > 0 || authority || rnd(2))
            cr_buf_puts(b, PICK(G_SEP));
        cr_buf_puts(b, PICK(G_SEG));
    }
    cr_buf_puts(b, PICK(G_QUERY));
    cr_buf_puts(b, PICK(G_FRAG));
    cr_buf_puts(b, PICK(G_LEAD));
}

/* One code-point-level mutation; keeps the text valid UTF-8. */
static const char *const M_INSERT[] = { "/", "\\", ".", "..", "%", "%2e", "@", ":", "?", "#",
                                        "[", "]", " ", "\t", "\n", "\x01", "\x7f", "\xc3\xa9",
                                        "\xe3\x80\x82", "\xe2\x80\x8b", "0x", "1", "-", "xn--",
                                        "\xef\xbc\xa1", "\\\\", "%00", "%41" };

static void mutate(const char *s, cr_buf *b)
{
    size_t n = strlen(s);
    cr_buf_clear(b);
    size_t at = n ? rnd((uint32_t)n + 1) : 0;
    while (at > 0 && at < n && ((unsigned char)s[at] & 0xc0) == 0x80)
        at--; /* not inside a UTF-8 sequence */
    size_t next = at;
    if (next < n) {
        next++;
        while (next < n && ((unsigned char)s[next] & 0xc0) == 0x80)
            next++;
    }
    cr_buf_append(b, s, at);
    switch (rnd(4)) {
    case 0: /* insert */
        cr_buf_puts(b, PICK(M_INSERT));
        cr_buf_append(b, s + at, n - at);
        break;
    case 1: /* delete */
        cr_buf_append(b, s + next, n - next);
        break;
    case 2: /* replace */
        cr_buf_puts(b, PICK(M_INSERT));
        cr_buf_append(b, s + next, n - next);
        break;
    default: /* duplicate, or flip the case of an ASCII letter */
        if (at < n && ((s[at] | 0x20) >= 'a' && (s[at] | 0x20) <= 'z')) {
            cr_buf_putc(b, (char)(s[at] ^ 0x20));
        } else {
            cr_buf_append(b, s + at, next - at);
        }
        cr_buf_append(b, s + at, n - at);
        break;
    }
}

static void json_str(cr_buf *b, const char *s)
{
    cr_buf_putc(b, '"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            cr_buf_printf(b, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            cr_buf_printf(b, "\\u%04x", ch);
        else
            cr_buf_putc(b, (char)ch);
    }
    cr_buf_putc(b, '"');
}

static const struct diff *diff_for(const char *flags, url_reject why)
{
    for (const char *f = flags; *f && *f != ' '; f++)
        for (size_t i = 0; i < sizeof DIFFS / sizeof DIFFS[0]; i++)
            if (DIFFS[i].flag == *f && DIFFS[i].why == why)
                return &DIFFS[i];
    return NULL;
}

static void printable(char *out, size_t cap, const char *s)
{
    size_t k = 0;
    for (; *s && k + 5 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
        else
            out[k++] = (char)ch;
    }
    out[k] = '\0';
}

/* url_ref_span's promise, which the crawl's per-page link memo relies on:
 * a reference with a fragment gives what its span followed by any other
 * fragment gives, against every base (generated references, random
 * fragments heavy in the bytes trimming and prep care about). */
static const char *const F_BYTES[] = { "#", " ", "\t", "\n", "\r", "\x01", "x", "%", "/",
                                       "?", "\xc3\xa9", "\x7f", "" };

static void fragment_never_changes_the_result(void **state)
{
    (void)state;
    uint64_t seed = test_seed("CRAWLD_URL_SEED", "span");
    rng = seed * 2 + 1;
    url_policy p;
    url_policy_defaults(&p);
    url_canon *c = url_canon_new(&p);
    assert_non_null(c);
    cr_buf in, in2, f1, k1, f2, k2;
    cr_buf *all[] = { &in, &in2, &f1, &k1, &f2, &k2 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        cr_buf_init(all[i], 0);
    size_t with_fragment = 0, accepted = 0;
    for (int i = 0; i < 20000; i++) {
        gen_one(&in);
        if (rnd(3) == 0) {
            cr_buf_puts(&in, "#");
            for (int k = (int)rnd(4); k > 0; k--)
                cr_buf_puts(&in, PICK(F_BYTES));
        }
        bool frag = false;
        size_t span = url_ref_span(in.data, in.len, &frag);
        const char *h = in.len ? memchr(in.data, '#', in.len) : NULL;
        assert_int_equal(span, h ? (size_t)(h - in.data) : in.len);
        assert_true(frag == (h != NULL));
        if (!frag)
            continue;
        with_fragment++;
        cr_buf_clear(&in2);
        cr_buf_append(&in2, in.data, span);
        cr_buf_puts(&in2, "#");
        for (int k = (int)rnd(5); k > 0; k--)
            cr_buf_puts(&in2, PICK(F_BYTES));
        const char *b = PICK(BASES);
        size_t bl = b ? strlen(b) : 0;
        url_reject w1, w2;
        int r1 = url_canon_forms(c, b, bl, in.data, in.len, &f1, &k1, &w1);
        int r2 = url_canon_forms(c, b, bl, in2.data, in2.len, &f2, &k2, &w2);
        if (r1 != r2 || w1 != w2 || f1.len != f2.len || k1.len != k2.len ||
            (f1.len && memcmp(f1.data, f2.data, f1.len) != 0) ||
            (k1.len && memcmp(k1.data, k2.data, k1.len) != 0))
            fail_msg("seed %llu: \"%s\" and \"%s\" against %s differ: %d/%d vs %d/%d",
                     (unsigned long long)seed, in.data, in2.data, b ? b : "(none)", r1, (int)w1,
                     r2, (int)w2);
        accepted += r1 == 0;
    }
    print_message("%zu references with a fragment, %zu accepted\n", with_fragment, accepted);
    assert_true(with_fragment > 1000 && accepted > 100);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        cr_buf_release(all[i]);
    url_canon_free(c);
}

static void whatwg_against_node(void **state)
{
    (void)state;
    char node[4096];
    if (find_node(node, sizeof node) == NULL) {
        print_message("node (Debian's nodejs) not found on PATH: differential test skipped\n");
        skip();
    }
    uint64_t seed = test_seed("CRAWLD_URL_SEED", "URL differential");
    rng = seed * 2 + 1;

    inputs in = { 0 };
    size_t nhand = sizeof HAND / sizeof HAND[0];
    for (size_t i = 0; i < nhand; i++)
        in_add(&in, HAND[i], strlen(HAND[i]));
    cr_buf b;
    cr_buf_init(&b, 0);
    for (int i = 0; i < 1100; i++) {
        gen_one(&b);
        in_add(&in, b.data ? b.data : "", b.len);
    }
    size_t ngen = in.n;
    for (int i = 0; i < 1100; i++) {
        const char *src = in.v[rnd((uint32_t)ngen)];
        mutate(src, &b);
        if (rnd(3) == 0) { /* twice, sometimes */
            char *once = strdup(b.data ? b.data : "");
            mutate(once, &b);
            free(once);
        }
        in_add(&in, b.data ? b.data : "", b.len);
    }
    size_t nbases = sizeof BASES / sizeof BASES[0];
    print_message("%zu inputs (%zu hand-written, %zu generated, %zu mutated) x %zu bases\n",
                  in.n, nhand, ngen - nhand, in.n - ngen, nbases);

    cr_buf js, out, err;
    cr_buf_init(&js, 0);
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    cr_buf_putc(&js, '[');
    for (size_t i = 0; i < in.n; i++)
        for (size_t k = 0; k < nbases; k++) {
            cr_buf_puts(&js, i || k ? ",[" : "[");
            json_str(&js, in.v[i]);
            cr_buf_putc(&js, ',');
            if (BASES[k])
                json_str(&js, BASES[k]);
            else
                cr_buf_puts(&js, "null");
            cr_buf_putc(&js, ']');
        }
    cr_buf_putc(&js, ']');
    const char *argv[] = { node, "-e", NODE_SCRIPT, NULL };
    int rc = proc_run(argv, js.data, js.len, &out, &err);
    if (rc != 0)
        fail_msg("node exited %d: %s", rc, err.data ? err.data : "");

    url_canon *c = canon_with(NULL);
    cr_buf f, key;
    cr_buf_init(&f, 0);
    cr_buf_init(&key, 0);
    size_t compared = 0, equal = 0, both_rejected = 0, bad = 0;
    size_t per_diff[sizeof DIFFS / sizeof DIFFS[0]] = { 0 };
    char *line = out.data;
    for (size_t i = 0; i < in.n; i++) {
        for (size_t k = 0; k < nbases; k++) {
            assert_non_null(line);
            char *nl = strchr(line, '\n');
            assert_non_null(nl);
            *nl = '\0';
            url_reject why;
            const char *base = BASES[k];
            int r = url_canon_forms(c, base, base ? strlen(base) : 0, in.v[i], strlen(in.v[i]),
                                    &f, &key, &why);
            assert_true(r == 0 || r == -EINVAL);
            compared++;
            const char *problem = NULL;
            if (strncmp(line, "OK ", 3) == 0) {
                const char *flags = line + 3;
                const char *href = strchr(flags, ' ');
                assert_non_null(href);
                href++;
                if (r == 0 && strcmp(f.data, href) == 0) {
                    equal++;
                } else if (r == 0) {
                    problem = "different href";
                } else {
                    const struct diff *d = diff_for(flags, why);
                    if (d != NULL)
                        per_diff[d - DIFFS]++;
                    else
                        problem = "crawld rejects what Node accepts";
                }
            } else if (r == 0) {
                problem = "crawld accepts what Node rejects";
            } else {
                both_rejected++;
            }
            if (r == 0 && problem == NULL && fixed_points(c, &f, &key) != NULL)
                problem = fixed_points(c, &f, &key);
            if (problem != NULL && bad++ < 40) {
                char p1[600], p2[300];
                printable(p1, sizeof p1, in.v[i]);
                printable(p2, sizeof p2, line);
                print_error("%s: input \"%s\" base %s\n  node:   %s\n  crawld: %s\n", problem,
                            p1, base ? base : "(none)", p2,
                            r == 0 ? f.data : url_reject_name(why));
            }
            line = nl + 1;
        }
    }
    print_message("%zu comparisons: %zu equal, %zu rejected by both, %zu deliberate "
                  "differences, %zu failures\n",
                  compared, equal, both_rejected, compared - equal - both_rejected - bad, bad);
    for (size_t d = 0; d < sizeof DIFFS / sizeof DIFFS[0]; d++)
        if (per_diff[d])
            print_message("  %zu x [%c] %.70s...\n", per_diff[d], DIFFS[d].flag,
                          DIFFS[d].reason);
    /* the generated and mutated inputs must reach well past the trivial */
    assert_true(equal > compared / 4);
    assert_true(in.n >= 2000);
    cr_buf_release(&f);
    cr_buf_release(&key);
    url_canon_free(c);
    cr_buf_release(&js);
    cr_buf_release(&out);
    cr_buf_release(&err);
    cr_buf_release(&b);
    in_free(&in);
    if (bad)
        fail_msg("%zu differences from Node's URL that are not deliberate (seed %llu)", bad,
                 (unsigned long long)seed);
}

int main(void)
{
    setlocale(LC_ALL, "C");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(input_cleanup),
        cmocka_unit_test(special_scheme_repairs),
        cmocka_unit_test(schemes_and_bases),
        cmocka_unit_test(userinfo),
        cmocka_unit_test(ports),
        cmocka_unit_test(ipv4_hosts),
        cmocka_unit_test(ipv6_hosts),
        cmocka_unit_test(paths_and_encode_sets),
        cmocka_unit_test(rfc3986_examples),
        cmocka_unit_test(base_href),
        cmocka_unit_test(idn_hosts),
        cmocka_unit_test(idna_ignores_the_locale),
        cmocka_unit_test(query_sort_and_strip),
        cmocka_unit_test(policy_options),
        cmocka_unit_test(lengths),
        cmocka_unit_test(either_output_may_be_omitted),
        cmocka_unit_test(base_cache),
        cmocka_unit_test(host_span),
        cmocka_unit_test(reject_strings),
        cmocka_unit_test(rejections_are_counted_by_reason),
        cmocka_unit_test(out_buffer_cap_is_respected),
        cmocka_unit_test(out_of_memory),
        cmocka_unit_test(idna_errors_map_to_reasons),
        cmocka_unit_test(null_policy_means_defaults),
        cmocka_unit_test(fragment_never_changes_the_result),
        cmocka_unit_test(whatwg_against_node),
    };
    return cmocka_run_group_tests_name("url", tests, NULL, NULL);
}
