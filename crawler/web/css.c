/* crawler/web/css: URL references of a stylesheet (see css.h).
 *
 * One cursor walks the bytes once. Tokens that cannot hold a URL (numbers,
 * hashes, delimiters, whitespace, comments) are consumed without looking
 * further; names, strings and url tokens are decoded into the scratch
 * buffer only as far as needed: names up to NAME_MAX bytes (longer ones
 * match no keyword), strings and urls up to max_url (longer: too_long).
 *
 * State between tokens, all small scalars:
 *   depth       open '(' and function tokens (never below 0);
 *   iset        the depth of the innermost image-set() still open, or 0;
 *   want        a url( function token just came: the next string token (after
 *               whitespace and comments) is its URL, of kind want_kind;
 *   imp         @import was seen: its first token is the stylesheet to
 *               import (IMP_EXPECT) or, when @import is no longer allowed,
 *               is dropped (IMP_LATE);
 *   ns          inside an @namespace prelude: its url is a name, no fetch;
 *   imports_ok  no rule other than @charset/@import/@layer came yet.
 * ';' and '{' end an at-rule prelude. */
#include "css.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/alloc.h"

#define DEF_MAX_BYTES (4u << 20)
#define DEF_MAX_REFS 10000
#define DEF_MAX_URL 8192
#define MAX_MAX_URL (1u << 20)
#define NAME_MAX_BYTES 24 /* longest keyword we compare with: -webkit-image-set */
#define FFFD 0xFFFDu

enum { IMP_NONE, IMP_EXPECT, IMP_LATE };
enum { WANT_NONE, WANT_URL, WANT_IMPORT, WANT_LATE, WANT_NS };

typedef struct scan {
    const unsigned char *s;
    size_t n, i;
    css_cb cb;
    void *ud;
    css_stats *st;
    size_t max_refs, max_url;
    bool decls;
    /* value being decoded */
    char *val;
    size_t vlen;
    bool vlong;
    /* grammar state */
    long depth, iset;
    int want;
    int imp;
    bool ns;
    bool imports_ok;
} scan;

/* ---- code points ------------------------------------------------------- */

static bool is_nl(unsigned c) { return c == '\n' || c == '\r' || c == '\f'; }
static bool is_ws(unsigned c) { return c == ' ' || c == '\t' || is_nl(c); }
static bool is_digit(unsigned c) { return c >= '0' && c <= '9'; }
static bool is_hex(unsigned c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static unsigned hexval(unsigned c)
{
    return is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
}
static bool ident_start(unsigned c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool ident_char(unsigned c) { return ident_start(c) || is_digit(c) || c == '-'; }

/* Byte at i, or 0 past the end (callers check i < n where NUL matters). */
static unsigned at(const scan *k, size_t i) { return i < k->n ? k->s[i] : 0; }

/* The code point at i and its byte length (*len, OUT). A NUL or a byte that
 * starts no valid UTF-8 sequence is U+FFFD of length 1. */
static unsigned cp_at(scan *k, size_t i, size_t *len)
{
    const unsigned char *s = k->s + i;
    size_t left = k->n - i;
    unsigned c = s[0], cp, need, min;
    *len = 1;
    if (c == 0) {
        k->st->invalid++;
        return FFFD;
    }
    if (c < 0x80)
        return c;
    if (c >= 0xC2 && c <= 0xDF)
        need = 2, min = 0x80, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        need = 3, min = 0x800, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        need = 4, min = 0x10000, cp = c & 0x07;
    else
        goto bad;
    if (left < need)
        goto bad;
    for (size_t j = 1; j < need; j++) {
        if ((s[j] & 0xC0) != 0x80)
            goto bad;
        cp = (cp << 6) | (s[j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        goto bad;
    *len = need;
    return cp;
bad:
    k->st->invalid++;
    return FFFD;
}

/* Appends code point c to the value (UTF-8); past max_url only notes it. */
static void put_cp(scan *k, unsigned c)
{
    char b[4];
    size_t n;
    if (c < 0x80) {
        b[0] = (char)c, n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xC0 | (c >> 6)), b[1] = (char)(0x80 | (c & 0x3F)), n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xE0 | (c >> 12)), b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F)), n = 3;
    } else {
        b[0] = (char)(0xF0 | (c >> 18)), b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F)), b[3] = (char)(0x80 | (c & 0x3F)), n = 4;
    }
    if (k->vlen + n > k->max_url) {
        k->vlong = true;
        return;
    }
    memcpy(k->val + k->vlen, b, n);
    k->vlen += n;
}

static void val_reset(scan *k)
{
    k->vlen = 0;
    k->vlong = false;
}

/* A newline at i: 2 bytes for CR LF, else 1. */
static size_t nl_len(const scan *k, size_t i)
{
    return k->s[i] == '\r' && at(k, i + 1) == '\n' ? 2 : 1;
}

/* "Two code points are a valid escape": '\' not followed by a newline
 * (the end of the input counts as valid: it escapes to U+FFFD). */
static bool valid_escape(const scan *k, size_t i)
{
    return i < k->n && k->s[i] == '\\' && !(i + 1 < k->n && is_nl(k->s[i + 1]));
}

/* "Would start an ident sequence" at i. */
static bool starts_ident(const scan *k, size_t i)
{
    if (i >= k->n)
        return false;
    unsigned c = k->s[i];
    if (c == '-') {
        unsigned d = at(k, i + 1);
        return (i + 1 < k->n && (ident_start(d) || d == '-')) || valid_escape(k, i + 1);
    }
    if (ident_start(c))
        return true;
    return c == '\\' && valid_escape(k, i);
}

static bool starts_number(const scan *k, size_t i)
{
    unsigned c = at(k, i);
    if (i >= k->n)
        return false;
    if (c == '+' || c == '-') {
        c = at(k, i + 1);
        if (i + 1 < k->n && is_digit(c))
            return true;
        return c == '.' && i + 2 < k->n && is_digit(at(k, i + 2));
    }
    if (c == '.')
        return i + 1 < k->n && is_digit(at(k, i + 1));
    return is_digit(c);
}

/* "Consume an escaped code point", k->i just past the '\'. */
static unsigned consume_escape(scan *k)
{
    if (k->i >= k->n)
        return FFFD;
    unsigned c = k->s[k->i];
    if (is_hex(c)) {
        unsigned v = 0;
        for (int d = 0; d < 6 && k->i < k->n && is_hex(k->s[k->i]); d++)
            v = v * 16 + hexval(k->s[k->i++]);
        if (k->i < k->n && is_ws(k->s[k->i]))
            k->i += is_nl(k->s[k->i]) ? nl_len(k, k->i) : 1;
        if (v == 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            return FFFD;
        return v;
    }
    size_t len;
    unsigned cp = cp_at(k, k->i, &len);
    k->i += len;
    return cp;
}

/* "Consume an ident sequence" into the value (as far as it fits). */
static void consume_name(scan *k)
{
    val_reset(k);
    while (k->i < k->n) {
        unsigned c = k->s[k->i];
        if (ident_char(c)) {
            size_t len;
            unsigned cp = cp_at(k, k->i, &len);
            k->i += len;
            put_cp(k, cp);
        } else if (valid_escape(k, k->i)) {
            k->i++;
            put_cp(k, consume_escape(k));
        } else {
            break;
        }
    }
}

/* ASCII case-insensitive compare of the value with a lowercase keyword. */
static bool val_is(const scan *k, const char *kw)
{
    size_t n = strlen(kw);
    if (k->vlong || k->vlen != n)
        return false;
    for (size_t j = 0; j < n; j++) {
        unsigned char c = (unsigned char)k->val[j];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c | 0x20);
        if (c != (unsigned char)kw[j])
            return false;
    }
    return true;
}

/* ---- emitting ----------------------------------------------------------- */

static void drop(scan *k, int why) { k->st->dropped[why]++; }

static bool has_prefix_ci(const char *s, size_t n, const char *p)
{
    size_t m = strlen(p);
    if (n < m)
        return false;
    for (size_t j = 0; j < m; j++) {
        char c = s[j];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c | 0x20);
        if (c != p[j])
            return false;
    }
    return true;
}

/* The value is a reference of kind want (WANT_*). */
static void emit(scan *k, int want)
{
    if (want == WANT_NS || want == WANT_NONE)
        return;
    if (want == WANT_LATE) {
        drop(k, CSS_DROP_LATE_IMPORT);
        return;
    }
    if (k->vlong) {
        drop(k, CSS_DROP_TOO_LONG);
        return;
    }
    size_t b = 0, e = k->vlen;
    while (b < e && is_ws((unsigned char)k->val[b]))
        b++;
    while (e > b && is_ws((unsigned char)k->val[e - 1]))
        e--;
    char *v = k->val + b;
    size_t n = e - b;
    if (n == 0) {
        drop(k, CSS_DROP_EMPTY);
        return;
    }
    if (has_prefix_ci(v, n, "data:")) {
        drop(k, CSS_DROP_DATA);
        return;
    }
    if (v[0] == '#') {
        drop(k, CSS_DROP_FRAGMENT);
        return;
    }
    if (k->st->refs >= k->max_refs) {
        drop(k, CSS_DROP_MAX_REFS);
        return;
    }
    v[n] = '\0'; /* the buffer has max_url + 1 bytes */
    css_ref r = { want == WANT_IMPORT ? CSS_REF_IMPORT : CSS_REF_URL, v, n };
    k->st->refs++;
    if (r.kind == CSS_REF_IMPORT)
        k->st->imports++;
    k->cb(k->ud, &r);
}

/* What a url token or url( string at this point would be. Consumes the
 * @import expectation. */
static int url_position(scan *k)
{
    if (k->ns)
        return WANT_NS;
    if (k->imp == IMP_EXPECT) {
        k->imp = IMP_NONE;
        return WANT_IMPORT;
    }
    if (k->imp == IMP_LATE) {
        k->imp = IMP_NONE;
        return WANT_LATE;
    }
    return WANT_URL;
}

/* ---- tokens that matter -------------------------------------------------- */

/* A string token, k->i at its opening quote. */
static void consume_string(scan *k)
{
    unsigned q = k->s[k->i++];
    bool bad = false;
    val_reset(k);
    while (k->i < k->n) {
        unsigned c = k->s[k->i];
        if (c == q) {
            k->i++;
            break;
        }
        if (is_nl(c)) {
            bad = true; /* the newline is not consumed: it is whitespace next */
            break;
        }
        if (c == '\\') {
            if (k->i + 1 >= k->n) {
                k->i++;
                break; /* "\" at the end: nothing */
            }
            if (is_nl(k->s[k->i + 1])) {
                k->i += 1 + nl_len(k, k->i + 1); /* line continuation */
                continue;
            }
            k->i++;
            put_cp(k, consume_escape(k));
            continue;
        }
        size_t len;
        unsigned cp = cp_at(k, k->i, &len);
        k->i += len;
        put_cp(k, cp);
    }
    int want = WANT_NONE;
    if (k->want != WANT_NONE) {
        want = k->want;
    } else if (k->imp != IMP_NONE || k->ns) {
        want = url_position(k);
    } else if (k->iset > 0 && k->depth == k->iset) {
        want = WANT_URL;
    }
    k->want = WANT_NONE;
    if (k->imp != IMP_NONE)
        k->imp = IMP_NONE; /* the first token after @import was not a URL */
    if (want == WANT_NONE)
        return;
    if (bad) {
        if (want != WANT_NS)
            drop(k, CSS_DROP_BAD_URL);
        return;
    }
    emit(k, want);
}

static bool non_printable(unsigned c) /* NUL is U+FFFD, not this */
{
    return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F;
}

/* "Consume the remnants of a bad url": to ')' or the end, escapes skipped. */
static void bad_url_remnants(scan *k)
{
    while (k->i < k->n) {
        unsigned c = k->s[k->i];
        if (c == ')') {
            k->i++;
            return;
        }
        if (valid_escape(k, k->i)) {
            k->i++;
            consume_escape(k);
            continue;
        }
        k->i++;
    }
}

/* A url token, k->i just past "url(" and its leading whitespace. */
static void consume_url(scan *k)
{
    int want = url_position(k);
    val_reset(k);
    while (k->i < k->n) {
        unsigned c = k->s[k->i];
        if (c == ')') {
            k->i++;
            emit(k, want);
            return;
        }
        if (is_ws(c)) {
            while (k->i < k->n && is_ws(k->s[k->i]))
                k->i++;
            if (k->i >= k->n || k->s[k->i] == ')') {
                if (k->i < k->n)
                    k->i++;
                emit(k, want);
                return;
            }
            goto bad;
        }
        if (c == '"' || c == '\'' || c == '(' || (c != 0 && non_printable(c)))
            goto bad;
        if (c == '\\') {
            if (!valid_escape(k, k->i))
                goto bad;
            k->i++;
            put_cp(k, consume_escape(k));
            continue;
        }
        size_t len;
        unsigned cp = cp_at(k, k->i, &len);
        k->i += len;
        put_cp(k, cp);
    }
    emit(k, want); /* the end of the input closes it */
    return;
bad:
    if (want != WANT_NS)
        drop(k, want == WANT_LATE ? CSS_DROP_LATE_IMPORT : CSS_DROP_BAD_URL);
    bad_url_remnants(k);
}

/* An ident, function or url token, k->i at its start. */
static void consume_ident_like(scan *k)
{
    consume_name(k);
    if (at(k, k->i) != '(' || k->i >= k->n) {
        k->want = WANT_NONE;
        if (k->imp != IMP_NONE)
            k->imp = IMP_NONE;
        return;
    }
    k->i++; /* '(' */
    if (val_is(k, "url")) {
        while (k->i + 1 < k->n && is_ws(k->s[k->i]) && is_ws(k->s[k->i + 1]))
            k->i++;
        unsigned c = at(k, k->i);
        if (k->i < k->n && is_ws(c))
            c = at(k, k->i + 1);
        if (c == '"' || c == '\'') {
            /* a url( function: its string argument is the URL */
            k->want = url_position(k);
            k->depth++;
            return;
        }
        while (k->i < k->n && is_ws(k->s[k->i]))
            k->i++;
        k->want = WANT_NONE;
        consume_url(k);
        return;
    }
    k->depth++;
    if (val_is(k, "image-set") || val_is(k, "-webkit-image-set"))
        k->iset = k->depth;
    k->want = WANT_NONE;
    if (k->imp != IMP_NONE)
        k->imp = IMP_NONE;
}

/* An at-keyword, k->i just past '@'. */
static void at_keyword(scan *k)
{
    consume_name(k);
    k->want = WANT_NONE;
    k->imp = IMP_NONE;
    if (k->decls)
        return;
    if (val_is(k, "import")) {
        k->imp = k->imports_ok ? IMP_EXPECT : IMP_LATE;
    } else if (val_is(k, "namespace")) {
        k->ns = true;
    } else if (!val_is(k, "charset") && !val_is(k, "layer")) {
        k->imports_ok = false;
    }
}

/* A number, percentage or dimension, k->i at its start. */
static void consume_number(scan *k)
{
    if (k->s[k->i] == '+' || k->s[k->i] == '-')
        k->i++;
    while (k->i < k->n && is_digit(k->s[k->i]))
        k->i++;
    if (at(k, k->i) == '.' && k->i + 1 < k->n && is_digit(k->s[k->i + 1])) {
        k->i++;
        while (k->i < k->n && is_digit(k->s[k->i]))
            k->i++;
    }
    unsigned e = at(k, k->i);
    if (k->i < k->n && (e == 'e' || e == 'E')) {
        size_t j = k->i + 1;
        if (j < k->n && (k->s[j] == '+' || k->s[j] == '-'))
            j++;
        if (j < k->n && is_digit(k->s[j])) {
            k->i = j;
            while (k->i < k->n && is_digit(k->s[k->i]))
                k->i++;
        }
    }
    if (starts_ident(k, k->i))
        consume_name(k); /* the unit: "1url(" is a dimension and a '(' */
    else if (at(k, k->i) == '%' && k->i < k->n)
        k->i++;
}

/* Any other token: the effect on the grammar state of one significant token. */
static void other_token(scan *k)
{
    k->want = WANT_NONE;
    if (k->imp != IMP_NONE)
        k->imp = IMP_NONE;
}

static void run(scan *k)
{
    while (k->i < k->n) {
        unsigned c = k->s[k->i];
        if (c == '/' && k->i + 1 < k->n && k->s[k->i + 1] == '*') {
            size_t j = k->i + 2;
            for (;;) {
                const unsigned char *star = j < k->n ? memchr(k->s + j, '*', k->n - j) : NULL;
                if (star == NULL || (size_t)(star - k->s) + 1 >= k->n) {
                    j = k->n; /* unclosed: the comment runs to the end */
                    break;
                }
                j = (size_t)(star - k->s) + 1;
                if (k->s[j] == '/') {
                    j++;
                    break;
                }
            }
            k->i = j;
            continue;
        }
        if (is_ws(c)) {
            k->i++;
            continue;
        }
        switch (c) {
        case '"':
        case '\'':
            consume_string(k);
            continue;
        case '#':
            k->i++;
            if (k->i < k->n && (ident_char(k->s[k->i]) || valid_escape(k, k->i)))
                consume_name(k);
            other_token(k);
            continue;
        case '(':
            k->i++;
            k->depth++;
            other_token(k);
            continue;
        case ')':
            k->i++;
            if (k->depth > 0) {
                if (k->iset == k->depth)
                    k->iset = 0;
                k->depth--;
            }
            other_token(k);
            continue;
        case ';':
            k->i++;
            k->ns = false;
            other_token(k);
            continue;
        case '{':
            k->i++;
            k->ns = false;
            if (!k->decls)
                k->imports_ok = false;
            other_token(k);
            continue;
        case '<':
            if (k->i + 3 < k->n && memcmp(k->s + k->i, "<!--", 4) == 0) {
                k->i += 4;
                continue;
            }
            break;
        case '-':
            if (k->i + 2 < k->n && k->s[k->i + 1] == '-' && k->s[k->i + 2] == '>') {
                k->i += 3;
                continue;
            }
            break;
        case '@':
            if (starts_ident(k, k->i + 1)) {
                k->i++;
                at_keyword(k);
                continue;
            }
            break;
        default:
            break;
        }
        if (starts_number(k, k->i)) {
            consume_number(k);
            other_token(k);
        } else if (starts_ident(k, k->i)) {
            consume_ident_like(k);
        } else {
            size_t len = 1;
            if (c >= 0x80)
                cp_at(k, k->i, &len);
            k->i += len;
            other_token(k);
        }
    }
}

int css_scan(const char *s, size_t n, const css_opts *o, css_cb cb, void *ud, css_stats *st)
{
    css_stats local;
    css_opts d = { 0 };
    if (o == NULL)
        o = &d;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    st->bytes = n;
    size_t max_bytes = o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
    scan k = { 0 };
    k.max_refs = o->max_refs ? o->max_refs : DEF_MAX_REFS;
    k.max_url = o->max_url ? o->max_url : DEF_MAX_URL;
    if (k.max_url > MAX_MAX_URL)
        k.max_url = MAX_MAX_URL;
    k.val = cr_malloc(k.max_url + 1);
    if (k.val == NULL)
        return -ENOMEM;
    if (n > max_bytes) {
        n = max_bytes;
        st->truncated |= CSS_TRUNC;
    }
    k.s = (const unsigned char *)s;
    k.n = s ? n : 0;
    k.cb = cb;
    k.ud = ud;
    k.st = st;
    k.decls = o->declarations != 0;
    k.imports_ok = !k.decls;
    run(&k);
    cr_free(k.val);
    return 0;
}

const char *css_drop_name(int reason)
{
    static const char *const names[CSS_DROP__COUNT] = {
        [CSS_DROP_EMPTY] = "empty",         [CSS_DROP_DATA] = "data",
        [CSS_DROP_FRAGMENT] = "fragment",   [CSS_DROP_TOO_LONG] = "too_long",
        [CSS_DROP_MAX_REFS] = "max_refs",   [CSS_DROP_BAD_URL] = "bad_url",
        [CSS_DROP_LATE_IMPORT] = "late_import",
    };
    if (reason < 0 || reason >= CSS_DROP__COUNT)
        return "?";
    return names[reason];
}
