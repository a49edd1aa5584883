/* crawler/url: links read as browsers read them, and the crawl's URL identity.
 *
 * Bytes in (a reference and an optional base), two forms out; no I/O.
 *
 * The fetch form is what the WHATWG URL Standard's parser (the one browsers
 * implement) makes of the reference against the base, serialised, without
 * its fragment: the URL as the page wrote it. It is what the crawl
 * requests, matches robots.txt and scope rules against, follows redirects
 * from, and archives. Only http and https results are accepted. Per the
 * standard: leading/trailing C0 controls and spaces are trimmed and tab/LF/CR
 * removed anywhere; '\' is read as '/' before the query; "http:foo" against
 * an http base is relative; any run of slashes introduces the authority;
 * userinfo splits at the last '@'; hosts are percent-decoded and go through
 * UTS #46 (libidn2: non-transitional, with mapping, IDNA2008 validity; no
 * STD3 rules, no hyphen rules for ASCII labels), then the forbidden domain
 * code point check; a host whose last label is a number is parsed as IPv4
 * (hex, octal, fewer than four parts, a trailing dot) or rejected; IPv6 is
 * serialised compressed, embedded IPv4 written as hex; the default port is
 * dropped; dot segments (also %2e) are resolved; the userinfo, path and
 * query percent-encode sets apply (existing escapes are kept as written).
 *
 * The key is our canonical policy applied on top of the fetch form's
 * components, and is used only for the seen test: two URLs are "the same"
 * for the crawl exactly when their keys are byte-equal. From the fetch
 * form: percent-escapes upper-cased, escapes of unreserved characters
 * decoded, everything outside RFC 3986's literal sets (and a '%' that starts
 * no escape) percent-encoded; ";jsessionid=" path parameters dropped; dot
 * segments removed again; tracking and session parameters stripped and the
 * query sorted (policy below); an empty query dropped. The key is itself a
 * URL whose key is itself, and key(fetch form) = key(reference).
 *
 * Deliberate differences from the standard (the full list, with reasons, is
 * in tests/test_url.c next to the differential test against Node's URL):
 * only http(s) is accepted (other schemes are not crawled); port 0 is
 * rejected; hosts longer than DNS allows (a label over 63 bytes, a name
 * over 253) are rejected; host characters libcurl refuses (! " $ & ' ( ) *
 * + , ; = ` { }) are rejected; libidn2's IDNA2008 rules are stricter than
 * UTS #46 as browsers apply it (symbols and emoji, hyphens and the Bidi rule
 * in non-ASCII labels); bytes that are not UTF-8 are percent-encoded as
 * they are (a browser would have decoded the page to U+FFFD first).
 *
 * IDNA goes through idn2_lookup_u8, whose result does not depend on the
 * locale. Threads: a url_canon is owned by one thread (scratch buffers and a
 * small base cache); make one per thread. */
#ifndef CRAWLD_URL_H
#define CRAWLD_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

typedef enum url_reject {
    URL_OK = 0,
    URL_REJ_EMPTY,          /* nothing left after trimming, and no base */
    URL_REJ_TOO_LONG,       /* input, fetch form or key longer than max_url_bytes */
    URL_REJ_SCHEME,         /* not http or https (mailto:, javascript:, ftp:, ...) */
    URL_REJ_NO_BASE,        /* relative reference and no base given */
    URL_REJ_BAD_BASE,       /* relative reference and the base was rejected */
    URL_REJ_NO_HOST,        /* missing or empty host */
    URL_REJ_HOST_CODEPOINT, /* a code point not allowed in a host (forbidden
                               by WHATWG, or refused by libcurl), or a host
                               that is not UTF-8 once decoded */
    URL_REJ_IDNA,           /* UTS #46 / IDNA2008 processing refused the host */
    URL_REJ_HOST_TOO_LONG,  /* a label over 63 bytes or a name over 253 */
    URL_REJ_BAD_IPV4,       /* ends in a number but is no IPv4 address */
    URL_REJ_BAD_IPV6,       /* [...] that is no IPv6 address */
    URL_REJ_BAD_PORT,       /* not digits, over 65535, or 0 */
    URL_REJ_COUNT
} url_reject;

#define URL_MIN_BYTES 64u     /* the range of max_url_bytes (and of */
#define URL_MAX_BYTES 65536u  /* canon.max_url_bytes in crawl.toml) */

typedef struct url_policy {
    size_t max_url_bytes;  /* cap on input and on both results; 0 = 2048;
                              outside URL_MIN_BYTES..URL_MAX_BYTES
                              url_canon_new refuses the policy (config checks
                              the same range where it reads canon.max_url_bytes) */
    /* Query parameters whose name matches one of these are dropped from the
       key. A pattern is a glob where '*' matches any run of bytes ("utm_*");
       names compare ASCII case-insensitively, after percent-normalization.
       The strings are copied by url_canon_new. Default: utm_*, fbclid,
       gclid. */
    const char *const *strip_params;
    size_t n_strip_params;
    bool strip_session_ids; /* key: drop jsessionid / phpsessid / sid query
                               parameters and ";jsessionid=..." path
                               parameters (names case-insensitive) */
    bool sort_query;        /* key: sort parameters by name, then value, as
                               bytes; duplicates kept */
} url_policy;

typedef struct url_canon url_canon;

typedef struct url_canon_stats {
    uint64_t accepted;                     /* references that gave a URL */
    uint64_t rejected;                     /* ... that were rejected */
    uint64_t rejected_by[URL_REJ_COUNT];   /* the same by reason */
    uint64_t idna_labels;                  /* host labels libidn2 converted */
} url_canon_stats;

/* Fills *p with the defaults: 2048 bytes, strip utm_* fbclid gclid, strip
 * session ids, sort the query. */
void url_policy_defaults(url_policy *p /* OUT */);

/* p may be NULL for the defaults. NULL when memory runs out (errno
 * ENOMEM) or p->max_url_bytes is outside URL_MIN_BYTES..URL_MAX_BYTES
 * (errno EINVAL). Caller owns the result; free with url_canon_free(). */
url_canon *url_canon_new(const url_policy *p);
void url_canon_free(url_canon *c);

/* Parses ref (rlen bytes, need not be NUL-terminated, may contain NULs)
 * against base (may be NULL when ref is absolute; it is parsed itself, and
 * the last two bases are cached, so pass the same page URL or <base href>
 * result for every link of a page) into the fetch form and the key. Either
 * output may be NULL when not wanted; each is cleared first. A <base href>
 * that is itself relative is resolved against the document URL with one
 * call first (its fetch form is the base for the page's links).
 * Returns 0 with *why = URL_OK, -EINVAL with *why saying why the input was
 * rejected (the outputs are then empty), or -ENOMEM. */
int url_canon_forms(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                    cr_buf *fetch /* OUT */, cr_buf *key /* OUT */, url_reject *why /* OUT */);

/* url_canon_forms for the key alone. */
int url_canon_resolve(url_canon *c, const char *base, size_t blen,
                      const char *ref, size_t rlen,
                      cr_buf *out /* OUT */, url_reject *why /* OUT */);

/* The part of a reference its parse depends on: the bytes before its first
 * '#' (the prep cuts there in every state; trimming stops at the '#'),
 * with *fragment telling whether there was one. Two references of the
 * same span and fragment flag, each at most max_url_bytes long, give the
 * same forms or the same rejection against the same base (crawler's
 * per-page link memo relies on it; test_url checks it). */
size_t url_ref_span(const char *ref, size_t rlen, bool *fragment /* OUT */);

/* Counters since url_canon_new. */
void url_canon_get_stats(const url_canon *c, url_canon_stats *s /* OUT */);

/* The host of a fetch form or key: bytes [*off, *off + *hlen) of url (IPv6
 * with its brackets; no userinfo, no port). 0, or -EINVAL when url does
 * not start with http:// or https:// or has an empty host. */
int url_host(const char *url, size_t len,
             size_t *off /* OUT */, size_t *hlen /* OUT */);

/* Short English text for a reason, e.g. "scheme is not http(s)". */
const char *url_reject_str(url_reject r);
/* A stable identifier for a reason, for JSON keys and metric labels, e.g.
 * "bad_ipv4"; "ok" for URL_OK. */
const char *url_reject_name(url_reject r);

#endif
