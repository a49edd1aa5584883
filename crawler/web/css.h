/* crawler/web/css: the URLs a stylesheet makes a browser fetch.
 *
 * Bytes in (a whole stylesheet, a <style> element's text or a style
 * attribute's value), references out through a callback, in order; no I/O,
 * no allocation beyond one scratch buffer per call. A small tokenizer of our
 * own that follows the tokenization of CSS Syntax Level 3 (section 4) where
 * it decides what is a URL: comments, strings (escapes, line continuations,
 * a bad string at an unescaped newline), escapes in names, numbers and
 * dimensions ("1url(" is not a url function), hash tokens, url tokens and
 * bad-url tokens. It does not build rules; the little grammar it needs on
 * top of the tokens is:
 *
 *   url(x), url("x")        CSS_REF_URL    anywhere but in @namespace
 *   image-set("x" 1x, ...)  CSS_REF_URL    strings directly inside
 *                                          image-set() / -webkit-image-set()
 *   @import "x" / url(x)    CSS_REF_IMPORT the first token after @import,
 *                                          only while @import is allowed:
 *                                          before the first rule other than
 *                                          @charset, @import and @layer
 *                                          statements (a later @import is
 *                                          ignored by browsers, and counted
 *                                          here as CSS_DROP_LATE_IMPORT)
 *
 * Input is read as UTF-8; a NUL or a byte that starts no valid sequence is
 * read as U+FFFD (counted in css_stats.invalid), as are escapes of 0,
 * surrogates and code points past U+10FFFF. @charset is not honoured (URLs
 * are ASCII in practice). References come out decoded (escapes resolved),
 * as UTF-8, surrounding whitespace removed, NOT resolved against any base.
 *
 * Cost: one pass, O(n) time for n bytes scanned, memory O(max_url). Bytes
 * past max_bytes are not scanned (CSS_TRUNC set). */
#ifndef CRAWLD_CSS_H
#define CRAWLD_CSS_H

#include <stddef.h>
#include <stdint.h>

typedef enum css_ref_kind {
    CSS_REF_URL = 0,    /* url() or an image-set() string: an image, font ... */
    CSS_REF_IMPORT = 1  /* @import: another stylesheet */
} css_ref_kind;

typedef struct css_ref {
    css_ref_kind kind;
    const char *url;    /* decoded, UTF-8, NUL-terminated, never empty */
    size_t len;
} css_ref;

/* Called once per reference; r and its url are valid during the call only. */
typedef void (*css_cb)(void *ud, const css_ref *r);

/* Why a reference was not given to the callback (css_stats.dropped[]). */
enum css_drop {
    CSS_DROP_EMPTY = 0,   /* url() or "" */
    CSS_DROP_DATA,        /* a data: URL: nothing to fetch */
    CSS_DROP_FRAGMENT,    /* "#id": an element of the document, not a fetch */
    CSS_DROP_TOO_LONG,    /* decoded longer than max_url */
    CSS_DROP_MAX_REFS,    /* past max_refs in this input */
    CSS_DROP_BAD_URL,     /* a bad-url token (quote, '(' or bad escape in
                             an unquoted url, text after it) */
    CSS_DROP_LATE_IMPORT, /* @import after a rule: ignored by browsers */
    CSS_DROP__COUNT
};

#define CSS_TRUNC 1u      /* css_stats.truncated: input past max_bytes */

typedef struct css_stats {
    uint64_t bytes;       /* bytes given, also those not scanned */
    uint64_t refs;        /* references given to the callback */
    uint64_t imports;     /* of which CSS_REF_IMPORT */
    uint64_t dropped[CSS_DROP__COUNT];
    uint64_t invalid;     /* NULs and invalid UTF-8 read as U+FFFD */
    unsigned truncated;   /* CSS_TRUNC or 0 */
} css_stats;

/* Every field 0 means its default. */
typedef struct css_opts {
    size_t max_bytes;     /* bytes scanned (4 MiB) */
    size_t max_refs;      /* references given per call (10000) */
    size_t max_url;       /* bytes of one decoded URL (8192, at most 1 MiB) */
    int declarations;     /* 1: the input is a style attribute (a declaration
                             list): @import means nothing there */
} css_opts;

/* Scans s[0..n) and calls cb for every reference. st (OUT, may be NULL) is
 * filled, not added to. 0, or -ENOMEM when the scratch buffer cannot be
 * had (nothing is emitted then). o may be NULL (defaults). */
int css_scan(const char *s, size_t n, const css_opts *o, css_cb cb, void *ud,
             css_stats *st /* OUT */);

/* "empty", "data", "fragment", "too_long", "max_refs", "bad_url",
 * "late_import"; "?" for anything else. */
const char *css_drop_name(int reason);

#endif
