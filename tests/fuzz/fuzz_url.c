/* tests/fuzz/fuzz_url: fuzzer for crawler/url (the WHATWG parser and the key).
 *
 * Every input is parsed into its fetch form and its key, and the results
 * must hold the module's promises: the return is 0 or -EINVAL (with a
 * reason in range, and empty outputs when rejected); an accepted fetch form
 * and key fit max_url_bytes, contain only printable ASCII and have a host
 * url_host() finds; the fetch form parses to itself with the same key; the
 * key parses to itself (fetch form and key); asking for one output alone
 * gives the same bytes as asking for both.
 *
 * Input layout: byte 0 picks the base (none, one of a few fixed ones, or the
 * bytes up to the first '\n' when bit 2 is set) and, with bit 3, a policy
 * with a 64-byte cap so the length limits get exercised; the rest is the
 * reference. Any broken promise aborts with the input printed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/web/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static url_canon *canon[2]; /* [small cap] */

static const char *const bases[4] = {
    NULL,
    "http://a/b/c/d;p?q",
    "https://Example.COM:443/dir/sub/page.html;jsessionid=X?b=2&utm_x=1&a=1#f",
    "http://u:p@[::1]:8080/x/%7Ey/",
};

static void die(const char *what, const char *base, size_t blen, const char *ref, size_t rlen,
                const cr_buf *f, const cr_buf *k)
{
    fprintf(stderr, "fuzz_url: %s\n  base: %.*s\n  ref:  %.*s\n  fetch: %s\n  key:   %s\n", what,
            (int)blen, base ? base : "(none)", (int)rlen, ref, f->data ? f->data : "",
            k->data ? k->data : "");
    abort();
}

static void setup(void)
{
    for (int small = 0; small < 2; small++) {
        url_policy p;
        url_policy_defaults(&p);
        if (small)
            p.max_url_bytes = 64;
        canon[small] = url_canon_new(&p);
        if (canon[small] == NULL)
            abort();
    }
}

static bool printable_url(const cr_buf *b, size_t cap)
{
    size_t off, hl;
    if (b->len == 0 || b->len > cap || url_host(b->data, b->len, &off, &hl) != 0)
        return false;
    for (size_t i = 0; i < b->len; i++)
        if ((unsigned char)b->data[i] <= 0x20 || (unsigned char)b->data[i] >= 0x7f)
            return false;
    return true;
}

static bool same(const cr_buf *a, const cr_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void check(int small, const char *base, size_t blen, const char *ref, size_t rlen)
{
    url_canon *c = canon[small];
    size_t cap = small ? 64u : 2048u;
    cr_buf f, k, f2, k2;
    url_reject w, w2;
    cr_buf_init(&f, 0);
    cr_buf_init(&k, 0);
    cr_buf_init(&f2, 0);
    cr_buf_init(&k2, 0);
    int r = url_canon_forms(c, base, blen, ref, rlen, &f, &k, &w);
    if ((r != 0 && r != -EINVAL) || (unsigned)w >= URL_REJ_COUNT || (r == 0) != (w == URL_OK))
        die("bad return or reason", base, blen, ref, rlen, &f, &k);
    if (r != 0) {
        if (f.len != 0 || k.len != 0)
            die("output left after a rejection", base, blen, ref, rlen, &f, &k);
        goto out;
    }
    if (!printable_url(&f, cap) || !printable_url(&k, cap))
        die("a result too long, unprintable or without a host", base, blen, ref, rlen, &f, &k);
    /* one output alone: the same bytes */
    if (url_canon_forms(c, base, blen, ref, rlen, &f2, NULL, &w2) != 0 || !same(&f, &f2) ||
        url_canon_resolve(c, base, blen, ref, rlen, &k2, &w2) != 0 || !same(&k, &k2))
        die("one output alone differs", base, blen, ref, rlen, &f, &k);
    /* fixed points */
    if (url_canon_forms(c, NULL, 0, f.data, f.len, &f2, &k2, &w2) != 0 || !same(&f, &f2) ||
        !same(&k, &k2))
        die("the fetch form does not parse to itself with the same key", base, blen, ref, rlen,
            &f, &k);
    if (url_canon_forms(c, NULL, 0, k.data, k.len, &f2, &k2, &w2) != 0 || !same(&k, &f2) ||
        !same(&k, &k2))
        die("the key does not parse to itself", base, blen, ref, rlen, &f, &k);
out:
    cr_buf_release(&f);
    cr_buf_release(&k);
    cr_buf_release(&f2);
    cr_buf_release(&k2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (canon[0] == NULL)
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
