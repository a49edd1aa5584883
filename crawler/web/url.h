/* crawler/url: URL canonicalization, the rule that decides URL identity.
 *
 * Bytes in (a reference and an optional base), canonical bytes out; no I/O.
 * Two URLs are "the same" for the crawl exactly when their canonical forms
 * are byte-equal. The canonical form of an http(s) URL is
 *
 *     scheme "://" [userinfo "@"] host [":" port] path ["?" query]
 *
 * with: the reference resolved against the base (RFC 3986 section 5);
 * scheme and host lower-cased; IDN hosts in punycode; the default port
 * (80/443), the fragment and an empty "?" dropped; dot segments removed;
 * percent-escapes upper-cased, escapes of unreserved characters decoded,
 * and everything outside the allowed set (space, non-ASCII bytes, "<>{}|^`
 * \ [ ], a stray '%') percent-encoded; an empty path is "/". Then the policy
 * below strips tracking and session parameters and sorts the query.
 * Canonicalization is idempotent: canonical input comes back unchanged.
 *
 * Input handling follows browsers (WHATWG) where it matters for hrefs:
 * leading/trailing C0 controls and spaces are trimmed, tab/LF/CR removed
 * anywhere, '\' read as '/' before the query. Any other control byte
 * (< 0x20, 0x7F) is rejected. Stricter than browsers (RFC 3986 instead):
 * "http:x", "http:/x" and "http:///x" have no host and are rejected.
 *
 * Two implementations decide the same thing: libcurl's URL API (curl_url)
 * parses and resolves, or a fast path of our own handles the common shapes
 * (http(s) URLs with plain ASCII hosts and relative references against a
 * base) and hands anything unusual (userinfo, IPv6, IDN, numeric IPv4
 * forms, escapes in the host) to the curl path. Tests and the fuzzer
 * tests/fuzz/fuzz_url.c check that both give byte-identical results.
 *
 * Known limits: IDN hosts are converted with our own RFC 3492 encoder and
 * only ASCII letters are lower-cased (no Unicode case folding or NFC), so
 * "BÜCHER.example" and "bücher.example" are different hosts; libcurl
 * 7.88's CURLU_PUNYCODE is not used because it only works under a UTF-8
 * LC_CTYPE locale. Percent-escapes in a host are decoded by curl.
 *
 * Threads: a url_canon is owned by one thread (it holds a CURLU handle and
 * scratch buffers); make one per thread. curl_global_init runs in main. */
#ifndef CRAWLD_URL_H
#define CRAWLD_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef enum url_reject {
    URL_OK = 0,
    URL_REJ_EMPTY,      /* nothing left after trimming, and no base */
    URL_REJ_TOO_LONG,   /* input or result longer than max_url_bytes */
    URL_REJ_CONTROL,    /* control byte that is not trimmable whitespace */
    URL_REJ_SCHEME,     /* not http or https (mailto:, javascript:, ...) */
    URL_REJ_NO_BASE,    /* relative reference and no base given */
    URL_REJ_BAD_BASE,   /* relative reference and the base was rejected */
    URL_REJ_NO_HOST,    /* missing or empty host */
    URL_REJ_BAD_HOST,   /* host with characters or a form we do not accept */
    URL_REJ_BAD_PORT,   /* port not in 1..65535 */
    URL_REJ_UNPARSABLE  /* anything else the parser refused */
} url_reject;

typedef struct url_policy {
    size_t max_url_bytes;  /* cap on input and result; 0 = 2048; clamped
                              to 64..65536 */
    /* Query parameters whose name matches one of these are dropped. A
       pattern is a glob where '*' matches any run of bytes ("utm_*");
       names compare ASCII case-insensitively, after percent-normalization.
       The strings are copied by url_canon_new. Default: utm_*, fbclid,
       gclid. */
    const char *const *strip_params;
    size_t n_strip_params;
    bool strip_session_ids; /* drop jsessionid / phpsessid / sid query
                               parameters and ";jsessionid=..." path
                               parameters (names case-insensitive) */
    bool sort_query;        /* sort parameters by name, then value, as
                               bytes; duplicates kept */
    bool curl_only;         /* never take the fast path (tests, fuzzer) */
} url_policy;

typedef struct url_canon url_canon;

typedef struct url_canon_stats {
    uint64_t fast;      /* results produced without curl */
    uint64_t curl;      /* results that went through curl_url */
    uint64_t rejected;  /* inputs rejected (either path) */
} url_canon_stats;

/* Fills *p with the defaults: 2048 bytes, strip utm_* fbclid gclid, strip
 * session ids, sort the query, fast path on. */
void url_policy_defaults(url_policy *p /* OUT */);

/* p may be NULL for the defaults. NULL only when memory runs out.
 * Caller owns the result; free with url_canon_free(). */
url_canon *url_canon_new(const url_policy *p);
void url_canon_free(url_canon *c);

/* Resolves ref (rlen bytes, need not be NUL-terminated, may contain NULs)
 * against base (may be NULL when ref is absolute; it is canonicalized
 * itself, and the last base is cached, so pass the same page URL or
 * <base href> result for every link of a page) and canonicalizes the
 * result into out (cleared first). A <base href> that is itself relative is
 * resolved against the document URL with one call first.
 * Returns 0 with *why = URL_OK, -EINVAL with *why saying why the input was
 * rejected (out is then empty), or -ENOMEM. */
int url_canon_resolve(url_canon *c, const char *base, size_t blen,
                      const char *ref, size_t rlen,
                      cr_buf *out /* OUT */, url_reject *why /* OUT */);

/* Counters since url_canon_new. */
void url_canon_get_stats(const url_canon *c, url_canon_stats *s /* OUT */);

/* The host of a canonical URL: bytes [*off, *off + *hlen) of url (IPv6
 * with its brackets; no userinfo, no port). 0, or -EINVAL when url does
 * not start with http:// or https:// or has an empty host. */
int url_host(const char *url, size_t len,
             size_t *off /* OUT */, size_t *hlen /* OUT */);

/* Short English text for a reason, e.g. "scheme is not http(s)". */
const char *url_reject_str(url_reject r);

#endif
