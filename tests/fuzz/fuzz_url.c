/* tests/fuzz/fuzz_url: differential fuzzer for crawler/url.
 *
 * Every input is canonicalized twice, by the fast path and by the curl path
 * (url_policy.curl_only), and the two must agree exactly: same return code,
 * same reason, same bytes. Each accepted result must also be a fixed point
 * (canonicalizing it again gives it back, on both paths), fit max_url_bytes,
 * contain only printable ASCII and have a host url_host() finds.
 *
 * Input layout: byte 0 picks the base (none, one of a few fixed ones, or the
 * bytes up to the first '\n' when bit 2 is set) and, with bit 3, a policy
 * with a 64-byte cap so the length limits get exercised; the rest is the
 * reference. Any disagreement aborts with both results printed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/web/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static url_canon *canon[2][2]; /* [small cap][curl only] */

static const char *const bases[4] = {
    NULL,
    "http://a/b/c/d;p?q",
    "https://Example.COM:443/dir/sub/page.html;jsessionid=X?b=2&utm_x=1&a=1#f",
    "http://u:p@[::1]:8080/x/%7Ey/",
};

static void die(const char *what, const char *base, size_t blen, const char *ref, size_t rlen,
                int r1, url_reject w1, const cr_buf *o1, int r2, url_reject w2, const cr_buf *o2)
{
    fprintf(stderr, "fuzz_url: %s\n  base: %.*s\n  ref:  %.*s\n", what, (int)blen,
            base ? base : "(none)", (int)rlen, ref);
    fprintf(stderr, "  fast: %d %s %s\n  curl: %d %s %s\n", r1, url_reject_str(w1),
            o1->data ? o1->data : "", r2, url_reject_str(w2), o2->data ? o2->data : "");
    abort();
}

static void setup(void)
{
    for (int small = 0; small < 2; small++) {
        for (int slow = 0; slow < 2; slow++) {
            url_policy p;
            url_policy_defaults(&p);
            p.curl_only = slow;
            if (small)
                p.max_url_bytes = 64;
            canon[small][slow] = url_canon_new(&p);
            if (canon[small][slow] == NULL)
                abort();
        }
    }
}

static void check(int small, const char *base, size_t blen, const char *ref, size_t rlen)
{
    url_canon *f = canon[small][0], *s = canon[small][1];
    cr_buf o1, o2;
    url_reject w1, w2;
    cr_buf_init(&o1, 0);
    cr_buf_init(&o2, 0);
    int r1 = url_canon_resolve(f, base, blen, ref, rlen, &o1, &w1);
    int r2 = url_canon_resolve(s, base, blen, ref, rlen, &o2, &w2);
    if (r1 != r2 || w1 != w2 || o1.len != o2.len ||
        (o1.len > 0 && memcmp(o1.data, o2.data, o1.len) != 0))
        die("fast and curl paths disagree", base, blen, ref, rlen, r1, w1, &o1, r2, w2, &o2);
    if (r1 == 0) {
        size_t off, hl;
        if (o1.len > (small ? 64u : 2048u))
            die("result longer than the cap", base, blen, ref, rlen, r1, w1, &o1, r2, w2, &o2);
        for (size_t i = 0; i < o1.len; i++)
            if ((unsigned char)o1.data[i] <= 0x20 || (unsigned char)o1.data[i] >= 0x7f)
                die("non-printable byte in result", base, blen, ref, rlen, r1, w1, &o1, r2,
                    w2, &o2);
        if (url_host(o1.data, o1.len, &off, &hl) != 0)
            die("url_host fails on a result", base, blen, ref, rlen, r1, w1, &o1, r2, w2, &o2);
        for (int k = 0; k < 2; k++) {
            cr_buf o3;
            url_reject w3;
            cr_buf_init(&o3, 0);
            int r3 = url_canon_resolve(canon[small][k], NULL, 0, o1.data, o1.len, &o3, &w3);
            if (r3 != 0 || o3.len != o1.len || memcmp(o3.data, o1.data, o1.len) != 0)
                die(k ? "not a fixed point (curl)" : "not a fixed point (fast)", NULL, 0,
                    o1.data, o1.len, r1, w1, &o1, r3, w3, &o3);
            cr_buf_release(&o3);
        }
    }
    cr_buf_release(&o1);
    cr_buf_release(&o2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (canon[0][0] == NULL)
        setup();
    if (size == 0)
        return 0;
    unsigned sel = data[0];
    const char *rest = (const char *)data + 1;
    size_t rlen = size - 1;
    const char *base = bases[sel & 3];
    size_t blen = base ? strlen(base) : 0;
    if (sel & 4) {
        const char *nl = memchr(rest, '\n', rlen);
        if (nl != NULL) {
            base = rest;
            blen = (size_t)(nl - rest);
            rlen -= blen + 1;
            rest = nl + 1;
        }
    }
    check((sel & 8) != 0, base, blen, rest, rlen);
    return 0;
}
