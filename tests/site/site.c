/* tests/site/site: the synthetic web of the test site (see site.h).
 *
 * Layout of every host (see also `testsite --help`):
 *   /                         home (page 0); /secK/ section indexes (pages 1..8)
 *   /secK/ArticleN.html       regular page N (N % 8 == K), or
 *   /list?cat=C&n=N           regular page N when N % 10 == 9 (C = N / 10 % 5)
 *   /robots.txt, /style.css, /app.js, /img/N.png, /doc/N.pdf[?download=1]
 *   /special/ ...             everything odd, all linked from /special/
 *   /replay/ ...              a page for replay tests: a stylesheet (with an
 *                             @import loop) that sets the background and loads
 *                             a font (from the next host) and an image only
 *                             through url(), a <style>, a style attribute, an
 *                             <img srcset>; /replay/chain.html starts an
 *                             endless @import chain. Linked from nowhere: only
 *                             a seed reaches it, so no other page set changes.
 * Each regular page links to: the navigation (home, sections, /special/, the
 * calendar) repeated on every page; its children 2N+1 and 2N+2 in a binary
 * tree (so every page is reachable); a dozen Zipf-distributed pages of the
 * same host; sometimes one page of another host; its requisites.
 *
 * Randomness: a splitmix64 stream seeded by (seed, host, target), so a page is
 * the same whoever renders it and in whatever order. Link forms (relative,
 * absolute, protocol-relative, dot segments, %XX escapes, tracking
 * parameters, fragments ...) are drawn from the same stream; the link list
 * always holds the canonical target.
 *
 * Why one file of about 1,600 lines: the URL layout and the link renderer
 * share the seeded stream and the canonical-target rules above, and only
 * the layout calls the renderer (about half the file); a test fixture, so
 * it was left whole. */
#include "tests/site/site.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tests/site/sitemaps.h"
#include "tests/site/epoch.h"

#define ROBOTS_RULES 6

struct site {
    site_opts o;
    char names[SITE_MAX_HOSTS][8];
    uint64_t mult;              /* Zipf rank -> page permutation, coprime with pages */
    char rule_norm[ROBOTS_RULES][64]; /* robots.txt patterns, unreserved escapes decoded */
};

/* ---- options, hosts ---------------------------------------------------- */

void site_opts_default(site_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    o->hosts = 4;
    o->pages = 5000;
    o->port = 0;
    o->specials = 1;
    o->delay_ms = 2000;
    o->retry_after_s = 1;
    o->flaky = 2;
    snprintf(o->crawl_delay, sizeof(o->crawl_delay), "1");
    o->big_bytes = 12u << 20;
    o->bomb_mib = 1024;
    o->epoch = -1;
    o->change_pct = 20;
    o->remove_pct = 5;
    o->add_pages = 3;
    o->keep_epochs = 0;
    o->plain_host = 1;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int normalize_rules(site *s);

site *site_new(const site_opts *o)
{
    site *s = cr_calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->o = *o;
    if (normalize_rules(s) != 0) {
        cr_free(s);
        return NULL;
    }
    for (int h = 0; h < o->hosts && h < SITE_MAX_HOSTS; h++) {
        if (h < 26)
            snprintf(s->names[h], sizeof(s->names[h]), "%c.test", 'a' + h);
        else
            snprintf(s->names[h], sizeof(s->names[h]), "%c%c.test",
                     'a' + (h - 26) / 26, 'a' + (h - 26) % 26);
    }
    uint64_t p = (uint64_t)o->pages;
    s->mult = (p * 618) / 1000 + 1;
    while (p > 1 && gcd_u64(s->mult, p) != 1)
        s->mult++;
    return s;
}

void site_free(site *s)
{
    cr_free(s);
}

const site_opts *site_options(const site *s)
{
    return &s->o;
}

int site_host_count(const site *s)
{
    return s->o.hosts;
}

const char *site_host_name(const site *s, int h)
{
    return s->names[h];
}

int site_host_index(const site *s, const char *name, size_t len)
{
    const char *colon = memchr(name, ':', len);
    if (colon != NULL)
        len = (size_t)(colon - name);
    if (len > 0 && name[len - 1] == '.')
        len--; /* a fully qualified "a.test." */
    for (int h = 0; h < s->o.hosts; h++) {
        if (strlen(s->names[h]) == len && strncasecmp(s->names[h], name, len) == 0)
            return h;
    }
    return -1;
}

int site_authority(const site *s, int h, char *out, size_t cap)
{
    int n = s->o.port == 80 ? snprintf(out, cap, "%s", s->names[h])
                            : snprintf(out, cap, "%s:%d", s->names[h], s->o.port);
    return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

/* ---- randomness -------------------------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_next(uint64_t *st)
{
    *st += 0x9E3779B97F4A7C15ull;
    uint64_t z = *st;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned rng_below(uint64_t *st, unsigned n)
{
    return n == 0 ? 0 : (unsigned)(rng_next(st) % n);
}

static uint64_t hash_str(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p != '\0'; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t seed_for(const site *s, int h, const char *target)
{
    return mix64(s->o.seed ^ mix64((uint64_t)h + 1) ^ hash_str(target));
}

/* A page of host h, Zipf-distributed (exponent 1) over popularity ranks,
 * ranks spread over pages by a per-host affine permutation. */
static long zipf_page(const site *s, int h, uint64_t *st)
{
    long p = s->o.pages;
    double u = (double)(rng_next(st) >> 11) * (1.0 / 9007199254740992.0);
    double x = exp(u * log((double)p + 1.0));
    long r = (long)x - 1;
    if (r < 0)
        r = 0;
    if (r >= p)
        r = p - 1;
    uint64_t off = mix64(s->o.seed * 31 + (uint64_t)h) % (uint64_t)p;
    return (long)(((uint64_t)r * s->mult + off) % (uint64_t)p);
}

/* ---- canonical targets ------------------------------------------------- */

static int is_unreserved(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Appends p[0..n) with unreserved escapes decoded, others upper-cased. */
static int decode_unreserved(const char *p, size_t n, cr_buf *out)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int hi = p[i] == '%' && i + 2 < n ? hexval((unsigned char)p[i + 1]) : -1;
        int lo = hi >= 0 ? hexval((unsigned char)p[i + 2]) : -1;
        if (lo < 0) {
            rc = cr_buf_putc(out, p[i]);
            continue;
        }
        int c = hi * 16 + lo;
        if (is_unreserved(c)) {
            rc = cr_buf_putc(out, (char)c);
        } else {
            char esc[3] = { '%', (char)toupper((unsigned char)p[i + 1]),
                            (char)toupper((unsigned char)p[i + 2]) };
            rc = cr_buf_append(out, esc, 3);
        }
        i += 2;
    }
    return rc;
}

/* RFC 3986 section 5.2.4 on in[0..n), appended to out. */
static int remove_dots(const char *in, size_t n, cr_buf *out)
{
    char *buf = cr_strndup(in, n);
    if (buf == NULL)
        return -ENOMEM;
    size_t start = out->len;
    size_t i = 0;
    int rc = 0;
    while (i < n && rc == 0) {
        const char *p = buf + i;
        size_t left = n - i;
        if (left >= 3 && memcmp(p, "../", 3) == 0) {
            i += 3;
        } else if (left >= 2 && memcmp(p, "./", 2) == 0) {
            i += 2;
        } else if (left >= 3 && memcmp(p, "/./", 3) == 0) {
            i += 2;
        } else if (left == 2 && memcmp(p, "/.", 2) == 0) {
            i += 1;
            buf[i] = '/';
        } else if ((left >= 4 && memcmp(p, "/../", 4) == 0) ||
                   (left == 3 && memcmp(p, "/..", 3) == 0)) {
            i += 2;
            buf[i] = '/';
            while (out->len > start && out->data[out->len - 1] != '/')
                out->len--;
            if (out->len > start)
                out->len--;
            out->data[out->len] = '\0';
        } else if ((left == 1 && p[0] == '.') || (left == 2 && memcmp(p, "..", 2) == 0)) {
            i = n;
        } else {
            size_t j = p[0] == '/' ? 1 : 0;
            while (j < left && p[j] != '/')
                j++;
            rc = cr_buf_append(out, p, j);
            i += j;
        }
    }
    cr_free(buf);
    return rc;
}

static int is_tracking(const char *param)
{
    size_t k = strcspn(param, "=");
    return (k >= 4 && strncmp(param, "utm_", 4) == 0) ||
           (k == 6 && strncmp(param, "fbclid", 6) == 0) ||
           (k == 5 && strncmp(param, "gclid", 5) == 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

#define CANON_MAX_PARAMS 1024

int site_canon_target(const char *raw, size_t len, cr_buf *out)
{
    cr_buf tmp, params;
    char **pv = NULL;
    int rc = 0;
    cr_buf_init(&tmp, SITE_TARGET_MAX * 4);
    cr_buf_init(&params, SITE_TARGET_MAX * 4);
    cr_buf_clear(out);
    if (len == 0 || raw[0] != '/') {
        rc = -EINVAL;
        goto out;
    }
    const char *hash = memchr(raw, '#', len);
    size_t end = hash != NULL ? (size_t)(hash - raw) : len;
    const char *q = memchr(raw, '?', end);
    size_t plen = q != NULL ? (size_t)(q - raw) : end;

    rc = decode_unreserved(raw, plen, &tmp);
    if (rc == 0)
        rc = remove_dots(tmp.data != NULL ? tmp.data : "", tmp.len, out);
    if (rc == 0 && out->len == 0)
        rc = cr_buf_putc(out, '/');
    if (rc != 0 || q == NULL)
        goto out;

    /* Query: decode each parameter, drop tracking ones, sort the rest. */
    pv = cr_calloc(CANON_MAX_PARAMS, sizeof(*pv));
    if (pv == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    size_t offs[CANON_MAX_PARAMS];
    size_t np = 0;
    const char *p = q + 1;
    const char *qend = raw + end;
    while (p <= qend && rc == 0) {
        const char *amp = memchr(p, '&', (size_t)(qend - p));
        const char *e = amp != NULL ? amp : qend;
        if (e > p) {
            if (np == CANON_MAX_PARAMS) {
                rc = -E2BIG;
                break;
            }
            offs[np] = params.len;
            rc = decode_unreserved(p, (size_t)(e - p), &params);
            if (rc == 0)
                rc = cr_buf_putc(&params, '\0');
            np++;
        }
        p = e + 1;
    }
    if (rc != 0)
        goto out;
    size_t kept = 0;
    for (size_t i = 0; i < np; i++) {
        char *param = params.data + offs[i];
        if (!is_tracking(param))
            pv[kept++] = param;
    }
    qsort(pv, kept, sizeof(*pv), cmp_str);
    for (size_t i = 0; i < kept && rc == 0; i++) {
        rc = cr_buf_putc(out, i == 0 ? '?' : '&');
        if (rc == 0)
            rc = cr_buf_puts(out, pv[i]);
    }
out:
    cr_free(pv);
    cr_buf_release(&params);
    cr_buf_release(&tmp);
    if (rc != 0)
        cr_buf_clear(out);
    return rc;
}

/* ---- the URL layout ---------------------------------------------------- */

enum {
    H_REGULAR,
    H_INDEX,
    H_NAVONLY,
    H_MALFORMED,
    H_XHTML,
    H_FAKEPNG,
    H_UPPERCT,
    H_LATIN1,
    H_METANOFOLLOW,
    H_REFRESH,
    H_FRAMES,
    H_BASE,
    H_CALENDAR,
    H_REPLAY,
    H_CHAIN,
    H_LOOP,
    H_SEARCH,
    H_NEW            /* a page added at an epoch (epoch.h) */
};

#define CT_HTML "text/html; charset=utf-8"
#define CT_TEXT "text/plain; charset=utf-8"

static const char *const hidden_names[] = {
    "nofollow", "nofollow2", "meta-nofollow-child", "refresh-target",
    "iframe-target", "area-target", "from-plain", "from-xhtml", "from-fake-png",
    "from-upper-ctype", "latin1-target", "blocked", "from-js", "from-pdf",
    "mal-unquoted", "mal-upper", "mal-table", "mal-unclosed-a", "mal-gt-attr",
    "mal-spaced", "mal-after-bytes", "mal-dup", "mal-dup2", "mal-eof",
    "mal-in-comment", "mal-in-script",
};

/* Which stylesheet an SK_CSS is (site_res.n). */
enum { CSS_PLAIN, CSS_REPLAY, CSS_MORE, CSS_CHAIN };

typedef struct fixed_res {
    const char *target;
    site_kind kind;
    int status;
    int n;
    int html;
    const char *ctype;
    int special;           /* only with specials on */
} fixed_res;

static const fixed_res fixed[] = {
    { "/robots.txt", SK_ROBOTS, 200, 0, 0, "text/plain", 0 },
    { "/style.css", SK_CSS, 200, 0, 0, "text/css", 0 },
    { "/app.js", SK_JS, 200, 0, 0, "application/javascript", 0 },
    { "/replay/", SK_HTML, 200, 0, H_REPLAY, CT_HTML, 0 },
    { "/replay/chain.html", SK_HTML, 200, 0, H_CHAIN, CT_HTML, 0 },
    { "/replay/style.css", SK_CSS, 200, CSS_REPLAY, 0, "text/css", 0 },
    { "/replay/more.css", SK_CSS, 200, CSS_MORE, 0, "text/css", 0 },
    { "/replay/font.woff2", SK_FONT, 200, 0, 0, "font/woff2", 0 },
    { "/replay/tile.png", SK_PNG, 200, 11, 0, "image/png", 0 },
    { "/replay/photo-1x.png", SK_PNG, 200, 12, 0, "image/png", 0 },
    { "/replay/photo-2x.png", SK_PNG, 200, 13, 0, "image/png", 0 },
    { "/replay/inline.png", SK_PNG, 200, 14, 0, "image/png", 0 },
    { "/replay/attr.png", SK_PNG, 200, 15, 0, "image/png", 0 },
    { "/special/", SK_HTML, 200, 0, H_INDEX, CT_HTML, 1 },
    { "/special/malformed.html", SK_HTML, 200, 0, H_MALFORMED, "text/html", 1 },
    { "/special/page.xhtml", SK_HTML, 200, 0, H_XHTML, "application/xhtml+xml", 1 },
    { "/special/fake.png", SK_HTML, 200, 0, H_FAKEPNG, "text/html", 1 },
    { "/special/upper-ctype.html", SK_HTML, 200, 0, H_UPPERCT, "Text/HTML; Charset=UTF-8", 1 },
    { "/special/latin1.html", SK_HTML, 200, 0, H_LATIN1, "text/html; charset=iso-8859-1", 1 },
    { "/special/meta-nofollow.html", SK_HTML, 200, 0, H_METANOFOLLOW, CT_HTML, 1 },
    { "/special/refresh.html", SK_HTML, 200, 0, H_REFRESH, CT_HTML, 1 },
    { "/special/frames.html", SK_HTML, 200, 0, H_FRAMES, CT_HTML, 1 },
    { "/special/base.html", SK_HTML, 200, 0, H_BASE, CT_HTML, 1 },
    { "/special/plain.txt", SK_TEXT, 200, 0, 0, CT_TEXT, 1 },
    { "/special/image.html", SK_PNG, 200, 7, 0, "image/png", 1 },
    { "/redirect/short", SK_REDIRECT, 301, 0, 0, CT_TEXT, 1 },
    { "/redirect/short2", SK_REDIRECT, 302, 0, 0, CT_TEXT, 1 },
    { "/redirect/landing.html", SK_HTML, 200, 0, H_NAVONLY, CT_HTML, 1 },
    { "/redirect/loop/a", SK_REDIRECT, 302, 0, 0, CT_TEXT, 1 },
    { "/redirect/loop/b", SK_REDIRECT, 302, 0, 0, CT_TEXT, 1 },
    { "/redirect/self", SK_REDIRECT, 301, 0, 0, CT_TEXT, 1 },
    { "/redirect/messy", SK_REDIRECT, 301, 0, 0, CT_TEXT, 1 },
    { "/redirect/offsite", SK_REDIRECT, 302, 0, 0, CT_TEXT, 1 },
    { "/redirect/no-location", SK_REDIRECT, 302, 0, 0, CT_TEXT, 1 },
    { "/status/403", SK_STATUS, 403, 0, 0, CT_TEXT, 1 },
    { "/status/404", SK_STATUS, 404, 0, 0, CT_TEXT, 1 },
    { "/status/410", SK_STATUS, 410, 0, 0, CT_TEXT, 1 },
    { "/status/500", SK_STATUS, 500, 0, 0, CT_TEXT, 1 },
    { "/status/503", SK_RETRY, 503, 0, 0, CT_TEXT, 1 },
    { "/status/503-date", SK_RETRY, 503, 1, 0, CT_TEXT, 1 },
    { "/status/429", SK_RETRY, 429, 0, 0, CT_TEXT, 1 },
    { "/slow/delay.html", SK_SLOW, 200, 0, H_NAVONLY, CT_HTML, 1 },
    { "/slow/trickle.html", SK_TRICKLE, 200, 0, H_NAVONLY, CT_HTML, 1 },
    { "/big/huge.html", SK_BIG, 200, 0, 0, CT_HTML, 1 },
    { "/big/chunked.html", SK_CHUNKED, 200, 0, 0, CT_HTML, 1 },
    { "/big/bomb.html", SK_BOMB, 200, 0, 0, "text/html", 1 },
    { "/private/public.html", SK_HTML, 200, 0, H_NAVONLY, CT_HTML, 1 },
    { "/hidden/based/child.html", SK_HTML, 200, 0, H_NAVONLY, CT_HTML, 1 },
};

/* Strict decimal: no sign, no leading zero (except "0"), at most 15 digits. */
static int parse_num(const char *p, size_t n, long *out)
{
    if (n == 0 || n > 15 || (n > 1 && p[0] == '0'))
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)p[i]))
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 0;
}

/* "prefix<num>suffix" with the whole string consumed. */
static int match_num(const char *t, const char *prefix, const char *suffix, long *out)
{
    size_t pl = strlen(prefix), sl = strlen(suffix), tl = strlen(t);
    if (tl < pl + sl + 1 || strncmp(t, prefix, pl) != 0 || strcmp(t + tl - sl, suffix) != 0)
        return -1;
    return parse_num(t + pl, tl - pl - sl, out);
}

/* Target of regular page i (0 <= i < pages) into out. */
static void page_target(long i, char *out, size_t cap)
{
    if (i == 0)
        snprintf(out, cap, "/");
    else if (i <= 8)
        snprintf(out, cap, "/sec%ld/", i - 1);
    else if (i % 10 == 9)
        snprintf(out, cap, "/list?cat=%ld&n=%ld", (i / 10) % 5, i);
    else
        snprintf(out, cap, "/sec%ld/Article%ld.html", i % 8, i);
}

/* Regular page number of a canonical target, or -1. */
static long page_of(const site *s, const char *t)
{
    long n = -1, k;
    char want[96];
    if (strcmp(t, "/") == 0)
        n = 0;
    else if (match_num(t, "/sec", "/", &k) == 0 && k < 8)
        n = k + 1;
    else if (strncmp(t, "/sec", 4) == 0 && isdigit((unsigned char)t[4]) && t[5] == '/' &&
             match_num(t + 5, "/Article", ".html", &k) == 0)
        n = k;
    else if (strncmp(t, "/list?cat=", 10) == 0) {
        const char *amp = strstr(t, "&n=");
        if (amp != NULL && parse_num(amp + 3, strlen(amp + 3), &k) == 0)
            n = k;
    }
    if (n < 0 || n >= s->o.pages)
        return -1;
    page_target(n, want, sizeof(want));
    return strcmp(want, t) == 0 ? n : -1;
}

static void calendar_target(long month_index, char *out, size_t cap)
{
    snprintf(out, cap, "/calendar/%04ld/%02ld", month_index / 12, month_index % 12 + 1);
}

#define CAL_MAX_YEAR 999999L

static long calendar_of(const char *t)
{
    long y, m;
    char want[64];
    if (strncmp(t, "/calendar/", 10) != 0)
        return -1;
    const char *p = t + 10;
    const char *slash = strchr(p, '/');
    if (slash == NULL || slash - p < 4 || slash - p > 6 || strlen(slash + 1) != 2)
        return -1;
    y = 0;
    for (const char *c = p; c < slash; c++) {
        if (!isdigit((unsigned char)*c))
            return -1;
        y = y * 10 + (*c - '0');
    }
    if (!isdigit((unsigned char)slash[1]) || !isdigit((unsigned char)slash[2]))
        return -1;
    m = (slash[1] - '0') * 10 + (slash[2] - '0');
    if (y < 1 || y > CAL_MAX_YEAR || m < 1 || m > 12)
        return -1;
    calendar_target(y * 12 + m - 1, want, sizeof(want));
    return strcmp(want, t) == 0 ? y * 12 + m - 1 : -1;
}

/* "/loop/" repeated: the number of extra "loop/" segments, or -1. */
static long loop_of(const char *t)
{
    if (strncmp(t, "/loop/", 6) != 0)
        return -1;
    long k = 0;
    const char *p = t + 6;
    while (strncmp(p, "loop/", 5) == 0) {
        p += 5;
        k++;
    }
    return *p == '\0' && k <= SITE_TRAP_MAX ? k : -1;
}

/* "/search?f01=1&...&fNN=1&q=trap": NN, or -1. */
static long search_of(const char *t)
{
    if (strncmp(t, "/search?", 8) != 0)
        return -1;
    const char *p = t + 8;
    long k = 0;
    char want[16];
    for (;;) {
        if (strcmp(p, "q=trap") == 0)
            return k;
        snprintf(want, sizeof(want), "f%02ld=1&", k + 1);
        if (strncmp(p, want, strlen(want)) != 0 || k >= SITE_TRAP_MAX)
            return -1;
        p += strlen(want);
        k++;
    }
}

static void search_target(long k, cr_buf *out)
{
    cr_buf_clear(out);
    cr_buf_puts(out, "/search?");
    for (long i = 1; i <= k; i++)
        cr_buf_printf(out, "f%02ld=1&", i);
    cr_buf_puts(out, "q=trap");
}

static void res_set(site_res *r, site_kind kind, int status, int html, const char *ctype)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->status = status;
    r->html = html;
    r->ctype = ctype;
    r->parsed = (kind == SK_HTML || kind == SK_FLAKY || kind == SK_SLOW || kind == SK_TRICKLE);
}

void site_page_target(long i, char *out, size_t cap)
{
    page_target(i, out, cap);
}

long site_page_of(const site *s, const char *target)
{
    return page_of(s, target);
}

int site_lookup(const site *s, int h, const char *t, site_res *r)
{
    long k;
    if (s->o.sitemaps && site_sitemap_lookup(s, h, t, r) == 0)
        return 0;
    long pg = page_of(s, t);
    if (pg >= 0 && epoch_removed(s, h, pg)) {
        res_set(r, SK_STATUS, epoch_removed(s, h, pg), 0, CT_TEXT);
        return 0;
    }
    if (pg >= 0) {
        res_set(r, SK_HTML, 200, H_REGULAR, CT_HTML);
        r->page = pg;
        return 0;
    }
    int ek, ej;
    if (epoch_new_of(s, t, &ek, &ej) == 0) {
        res_set(r, SK_HTML, 200, H_NEW, CT_HTML);
        r->page = ek;
        r->n = ej;
        return 0;
    }
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        const fixed_res *f = &fixed[i];
        if (strcmp(f->target, t) != 0 || (f->special && !s->o.specials))
            continue;
        if (strcmp(t, "/redirect/offsite") == 0 && s->o.hosts < 2)
            return -ENOENT;
        res_set(r, f->kind, f->status, f->html, f->ctype);
        r->n = f->n;
        return 0;
    }
    if (match_num(t, "/img/", ".png", &k) == 0 && k < SITE_IMAGES) {
        res_set(r, SK_PNG, 200, 0, "image/png");
        r->n = (int)k;
        return 0;
    }
    if (match_num(t, "/replay/chain/", ".css", &k) == 0 && k >= 1 && k <= SITE_TRAP_MAX) {
        res_set(r, SK_CSS, 200, 0, "text/css");
        r->n = CSS_CHAIN;
        r->page = k;
        return 0;
    }
    if ((match_num(t, "/doc/", ".pdf", &k) == 0 ||
         match_num(t, "/doc/", ".pdf?download=1", &k) == 0) && k < SITE_DOCS) {
        res_set(r, SK_PDF, 200, 0, "application/pdf");
        r->n = (int)k;
        return 0;
    }
    if (!s->o.specials)
        return -ENOENT;
    if (match_num(t, "/redirect/hop/", "", &k) == 0 && k >= 1 && k <= SITE_CHAIN_LEN) {
        static const int codes[] = { 301, 302, 303, 307, 308 };
        if (k == SITE_CHAIN_LEN) {
            res_set(r, SK_HTML, 200, H_NAVONLY, CT_HTML);
        } else {
            res_set(r, SK_REDIRECT, codes[(k - 1) % 5], 0, CT_TEXT);
            r->n = (int)k;
        }
        return 0;
    }
    if (match_num(t, "/flaky/", ".html", &k) == 0 && k >= 1 && k <= SITE_FLAKY_PAGES) {
        res_set(r, SK_FLAKY, 200, H_NAVONLY, CT_HTML);
        return 0;
    }
    if (match_num(t, "/private/", ".html", &k) == 0 && k >= 1 && k <= 3) {
        res_set(r, SK_HTML, 200, H_NAVONLY, CT_HTML);
        return 0;
    }
    if (strncmp(t, "/hidden/", 8) == 0) {
        for (size_t i = 0; i < sizeof(hidden_names) / sizeof(hidden_names[0]); i++) {
            size_t nl = strlen(hidden_names[i]);
            if (strncmp(t + 8, hidden_names[i], nl) == 0 && strcmp(t + 8 + nl, ".html") == 0) {
                res_set(r, SK_HTML, 200, H_NAVONLY, CT_HTML);
                return 0;
            }
        }
        return -ENOENT;
    }
    k = calendar_of(t);
    if (k >= 0) {
        res_set(r, SK_HTML, 200, H_CALENDAR, CT_HTML);
        r->page = k;
        return 0;
    }
    k = loop_of(t);
    if (k >= 0) {
        res_set(r, SK_HTML, 200, H_LOOP, CT_HTML);
        r->page = k;
        return 0;
    }
    k = search_of(t);
    if (k >= 0) {
        res_set(r, SK_HTML, 200, H_SEARCH, CT_HTML);
        r->page = k;
        return 0;
    }
    return -ENOENT;
}

/* ---- rendering links --------------------------------------------------- */

/* Base forms of a rendered link (low bits) and decorations (high bits). */
enum {
    F_ABS_PATH,      /* /sec1/Article9.html */
    F_ABSOLUTE,      /* http://a.test:PORT/sec1/Article9.html */
    F_PROTO_REL,     /* //a.test:PORT/sec1/Article9.html */
    F_RELATIVE,      /* ../sec1/Article9.html (against the base directory) */
    F_UPPER,         /* HTTP://A.TEST:PORT/sec1/Article9.html */
    F_DOTSEG,        /* /sec9/../sec1/./Article9.html and friends */
    F_DEFAULT_PORT,  /* http://a.test:80/... when the port is 80, else F_ABSOLUTE */
    F_NBASE,
    F_BASE_MASK = 0xf,
    D_ESCAPE = 0x10,   /* some unreserved characters %XX-escaped (A as %41) */
    D_FRAGMENT = 0x20, /* #fragment */
    D_TRACKING = 0x40, /* utm_*, fbclid, gclid parameters added */
    D_REORDER = 0x80,  /* query parameters in reverse order */
    D_SPACES = 0x100   /* leading/trailing white space in the attribute */
};

typedef struct gen {
    const site *s;
    int host;
    uint64_t rng;
    char dir[SITE_TARGET_MAX];   /* directory relative links resolve against */
    cr_buf *out;                 /* the HTML */
    site_links *links;           /* may be NULL */
    int nofollow_page;
    int err;
} gen;

static void g_append(gen *g, const char *p, size_t n)
{
    if (g->err == 0)
        g->err = cr_buf_append(g->out, p, n);
}

static void g_puts(gen *g, const char *p)
{
    g_append(g, p, strlen(p));
}

static void g_printf(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void g_printf(gen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g->err == 0)
        g->err = cr_buf_vprintf(g->out, fmt, ap);
    va_end(ap);
}

static void g_record(gen *g, int th, const char *target, site_elem e, int nofollow)
{
    if (g->err != 0 || g->links == NULL)
        return;
    site_links *l = g->links;
    if (l->n == l->cap) {
        size_t cap = l->cap == 0 ? 64 : l->cap * 2;
        site_link *v = cr_realloc(l->v, cap * sizeof(*v));
        if (v == NULL) {
            g->err = -ENOMEM;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    char *copy = cr_strdup(target);
    if (copy == NULL) {
        g->err = -ENOMEM;
        return;
    }
    site_link *k = &l->v[l->n++];
    k->host = th;
    k->target = copy;
    k->elem = e;
    k->requisite = (e == SE_IMG || e == SE_IMG_SRCSET || e == SE_SCRIPT ||
                    e == SE_LINK_STYLESHEET || e == SE_LINK_ICON || e == SE_STYLE ||
                    e == SE_STYLE_ATTR || e == SE_CSS_URL || e == SE_CSS_IMPORT);
    k->nofollow = nofollow || g->nofollow_page;
}

void site_links_release(site_links *l)
{
    for (size_t i = 0; i < l->n; i++)
        cr_free(l->v[i].target);
    cr_free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Relative reference from directory dir ("/a/b/") to path ("/a/c/d.html"). */
static int rel_path(const char *dir, const char *path, size_t plen, cr_buf *u)
{
    /* directory segments of both */
    const char *last = path + plen;
    while (last > path && last[-1] != '/')
        last--;
    const char *d = dir + 1, *p = path + 1;
    /* skip the common leading directory segments */
    for (;;) {
        const char *ds = strchr(d, '/');
        const char *ps = memchr(p, '/', (size_t)(last - p));
        if (ds == NULL || ps == NULL || ds - d != ps - p || memcmp(d, p, (size_t)(ds - d)) != 0)
            break;
        d = ds + 1;
        p = ps + 1;
    }
    int rc = 0;
    size_t before = u->len;
    for (const char *c = d; *c != '\0' && rc == 0; c++) {
        if (*c == '/')
            rc = cr_buf_puts(u, "../");
    }
    if (rc == 0)
        rc = cr_buf_append(u, p, (size_t)(path + plen - p));
    if (rc == 0 && u->len == before)
        rc = cr_buf_puts(u, "./");
    return rc;
}

typedef struct qpart {
    const char *p;
    size_t n;
    int tracking;
} qpart;

#define RENDER_MAX_PARAMS (SITE_TRAP_MAX + 8)

static int append_escaped(gen *g, cr_buf *u, const char *p, size_t n, int escape)
{
    int rc = 0;
    int budget = escape ? 3 : 0;
    if (!escape)
        return cr_buf_append(u, p, n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        unsigned char c = (unsigned char)p[i];
        int esc = 0;
        if (budget > 0 && (isalnum(c) || c == '.')) {
            /* always the first 'A' (as %41), else about one in six */
            esc = c == 'A' ? 1 : rng_below(&g->rng, 6) == 0;
        }
        if (esc) {
            budget--;
            rc = cr_buf_printf(u, rng_below(&g->rng, 4) == 0 ? "%%%02x" : "%%%02X", c);
        } else {
            rc = cr_buf_putc(u, (char)c);
        }
    }
    return rc;
}

static int query_rule_applies(const site *s, const char *target);

/* Renders target (on host th) in the given form into u (raw, not HTML-escaped). */
static int render_url(gen *g, int th, const char *target, int form, cr_buf *u)
{
    static const char *const tracking[] = {
        "utm_source=newsletter", "utm_medium=email", "utm_campaign=spring-sale",
        "fbclid=IwAR", "gclid=EAIaIQob",
    };
    static const char *const frags[] = { "#top", "#", "#s-3", "#a%20b", "#Article" };
    qpart ps[RENDER_MAX_PARAMS];
    char trk[2][48];
    size_t np = 0;
    int rc = 0;
    char auth[64];
    int base = form & F_BASE_MASK;
    int escape = (form & D_ESCAPE) != 0;
    cr_buf path;
    cr_buf_init(&path, SITE_TARGET_MAX * 4);

    const char *q = strchr(target, '?');
    size_t plen = q != NULL ? (size_t)(q - target) : strlen(target);
    /* robots.txt is matched against the URL as requested (RFC 9309), and a
     * crawler requests the first spelling it finds: where a rule names a
     * query, the link keeps the query as the rule expects, so the expected
     * set does not depend on which spelling comes first */
    if (q != NULL && query_rule_applies(g->s, target))
        form &= ~(D_TRACKING | D_REORDER);
    if (q != NULL) {
        const char *p = q + 1;
        while (*p != '\0' && np < RENDER_MAX_PARAMS - 2) {
            size_t n = strcspn(p, "&");
            ps[np].p = p;
            ps[np].n = n;
            ps[np].tracking = 0;
            np++;
            p += n;
            if (*p == '&')
                p++;
        }
    }
    if (form & D_TRACKING) {
        unsigned k = 1 + rng_below(&g->rng, 2);
        for (unsigned i = 0; i < k; i++) {
            const char *t = tracking[rng_below(&g->rng, 5)];
            if (strncmp(t, "utm_", 4) == 0)
                snprintf(trk[i], sizeof(trk[i]), "%s", t);
            else
                snprintf(trk[i], sizeof(trk[i]), "%s%08llx", t,
                         (unsigned long long)(rng_next(&g->rng) & 0xffffffffu));
            size_t at = rng_below(&g->rng, (unsigned)np + 1);
            memmove(&ps[at + 1], &ps[at], (np - at) * sizeof(ps[0]));
            ps[at].p = trk[i];
            ps[at].n = strlen(trk[i]);
            ps[at].tracking = 1;
            np++;
        }
    }
    if ((form & D_REORDER) && np >= 2) {
        for (size_t i = 0; i < np / 2; i++) {
            qpart t = ps[i];
            ps[i] = ps[np - 1 - i];
            ps[np - 1 - i] = t;
        }
    }
    rc = append_escaped(g, &path, target, plen, escape);
    if (rc != 0)
        goto out;
    if (th != g->host && (base == F_RELATIVE || base == F_ABS_PATH))
        base = F_ABSOLUTE;
    if (base == F_DEFAULT_PORT && g->s->o.port != 80)
        base = F_ABSOLUTE;
    rc = site_authority(g->s, th, auth, sizeof(auth));
    if (rc != 0)
        goto out;

    switch (base) {
    case F_ABS_PATH:
        rc = cr_buf_puts(u, path.data);
        break;
    case F_ABSOLUTE:
        rc = cr_buf_printf(u, "http://%s%s", auth, path.data);
        break;
    case F_DEFAULT_PORT:
        rc = cr_buf_printf(u, "http://%s:80%s", g->s->names[th], path.data);
        break;
    case F_PROTO_REL:
        rc = cr_buf_printf(u, "//%s%s", auth, path.data);
        break;
    case F_UPPER: {
        char up[64];
        size_t i;
        for (i = 0; auth[i] != '\0' && i + 1 < sizeof(up); i++)
            up[i] = (char)toupper((unsigned char)auth[i]);
        up[i] = '\0';
        if (rng_below(&g->rng, 2) == 0)
            up[0] = (char)tolower((unsigned char)up[0]);
        rc = cr_buf_printf(u, "%s://%s%s", rng_below(&g->rng, 2) ? "HTTP" : "Http", up, path.data);
        break;
    }
    case F_RELATIVE:
        rc = rel_path(g->dir, path.data, path.len, u);
        break;
    case F_DOTSEG:
    default: {
        unsigned v = rng_below(&g->rng, 4);
        if (th != g->host)
            rc = cr_buf_printf(u, "http://%s/x/..%s", auth, path.data);
        else if (v == 0)
            rc = cr_buf_printf(u, "/sec9/..%s", path.data);
        else if (v == 1) {
            const char *slash = strrchr(path.data, '/');
            rc = cr_buf_append(u, path.data, (size_t)(slash - path.data) + 1);
            if (rc == 0)
                rc = cr_buf_printf(u, "./%s", slash + 1);
        } else if (v == 2) {
            rc = cr_buf_puts(u, "./");
            if (rc == 0)
                rc = rel_path(g->dir, path.data, path.len, u);
        } else {
            rc = cr_buf_printf(u, "/a/b/../..%s", path.data);
        }
        break;
    }
    }
    for (size_t i = 0; i < np && rc == 0; i++) {
        rc = cr_buf_putc(u, i == 0 ? '?' : '&');
        if (rc == 0 && ps[i].tracking)
            rc = cr_buf_append(u, ps[i].p, ps[i].n);
        else if (rc == 0)
            rc = append_escaped(g, u, ps[i].p, ps[i].n, escape);
    }
    if (rc == 0 && (form & D_FRAGMENT))
        rc = cr_buf_puts(u, frags[rng_below(&g->rng, 5)]);
out:
    cr_buf_release(&path);
    return rc;
}

/* Writes the rendered URL, HTML-escaped, as an attribute value (no quotes). */
static void g_url(gen *g, int th, const char *target, int form)
{
    cr_buf u;
    if (g->err != 0)
        return;
    cr_buf_init(&u, SITE_TARGET_MAX * 8);
    g->err = render_url(g, th, target, form, &u);
    if (g->err == 0 && (form & D_SPACES))
        g_puts(g, "  ");
    for (size_t i = 0; i < u.len && g->err == 0;) {
        size_t run = strcspn(u.data + i, "&");
        g_append(g, u.data + i, run);
        i += run;
        if (i < u.len) {
            g_puts(g, "&amp;");
            i++;
        }
    }
    if (g->err == 0 && (form & D_SPACES))
        g_puts(g, "\n ");
    cr_buf_release(&u);
}

/* 1 when the space-separated list has the token (ASCII case-insensitive). */
static int has_token(const char *list, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = list; *p != '\0';) {
        size_t n = strcspn(p, " \t\n");
        if (n == tl && strncasecmp(p, token, tl) == 0)
            return 1;
        p += n;
        p += strspn(p, " \t\n");
    }
    return 0;
}

static void g_a(gen *g, int th, const char *target, int form, const char *text, const char *rel)
{
    g_puts(g, "<a");
    if (rel != NULL)
        g_printf(g, " rel=\"%s\"", rel);
    g_puts(g, " href=\"");
    g_url(g, th, target, form);
    g_printf(g, "\">%s</a>", text);
    g_record(g, th, target, SE_A, rel != NULL && has_token(rel, "nofollow"));
}

static void g_tag(gen *g, site_elem e, const char *target, int form)
{
    static const char *const open[] = {
        [SE_IMG] = "<img alt=\"\" src=\"",
        [SE_SCRIPT] = "<script src=\"",
        [SE_LINK_STYLESHEET] = "<link rel=\"stylesheet\" href=\"",
        [SE_LINK_ICON] = "<link rel=\"icon\" href=\"",
        [SE_LINK_CANONICAL] = "<link rel=\"canonical\" href=\"",
        [SE_IFRAME] = "<iframe title=\"frame\" src=\"",
    };
    g_puts(g, open[e]);
    g_url(g, g->host, target, form);
    g_puts(g, e == SE_SCRIPT ? "\"></script>\n" : e == SE_IFRAME ? "\"></iframe>\n" : "\">\n");
    g_record(g, g->host, target, e, 0);
}

/* A random form for a link of this page; decorations are rarer. */
static int random_form(gen *g, int th)
{
    int f = (int)rng_below(&g->rng, F_NBASE);
    if (th != g->host && (f == F_RELATIVE || f == F_DOTSEG || f == F_ABS_PATH))
        f = rng_below(&g->rng, 2) ? F_ABSOLUTE : F_PROTO_REL;
    if (rng_below(&g->rng, 5) == 0)
        f |= D_ESCAPE;
    if (rng_below(&g->rng, 6) == 0)
        f |= D_FRAGMENT;
    if (rng_below(&g->rng, 6) == 0)
        f |= D_TRACKING;
    if (rng_below(&g->rng, 4) == 0)
        f |= D_REORDER;
    if (rng_below(&g->rng, 12) == 0)
        f |= D_SPACES;
    return f;
}

static const char *const words[] = {
    "crawl", "frontier", "bloom", "seen", "host", "queue", "page", "link", "robots",
    "delay", "polite", "fetch", "archive", "canonical", "filter", "shard", "index",
    "river", "stone", "maple", "cloud", "lamp", "orbit", "pixel", "amber", "violet",
};

static void g_filler(gen *g, unsigned nwords)
{
    g_puts(g, "<p>");
    for (unsigned i = 0; i < nwords; i++) {
        g_puts(g, words[rng_below(&g->rng, sizeof(words) / sizeof(words[0]))]);
        g_puts(g, i + 1 < nwords ? " " : ".");
    }
    g_puts(g, "</p>\n");
}

static void g_head(gen *g, const char *title)
{
    g_printf(g, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                "<title>%s - %s</title>\n", title, g->s->names[g->host]);
}

/* The navigation: the same links, in the same forms, on every page. */
static void g_nav(gen *g)
{
    char t[32];
    g_puts(g, "<nav>");
    g_a(g, g->host, "/", F_ABS_PATH, "Home", NULL);
    for (long k = 0; k < 8 && k + 1 < g->s->o.pages; k++) {
        snprintf(t, sizeof(t), "/sec%ld/", k);
        g_puts(g, " ");
        g_a(g, g->host, t, k % 2 == 0 ? F_ABSOLUTE : F_PROTO_REL, "Section", NULL);
    }
    if (g->s->o.specials) {
        g_puts(g, " ");
        g_a(g, g->host, "/special/", F_ABS_PATH, "Specials", NULL);
        g_puts(g, " ");
        g_a(g, g->host, "/calendar/2024/01", F_ABS_PATH, "Events", NULL);
    }
    g_puts(g, "</nav>\n");
}

/* The site over time (epoch.h), after the rest of a regular page (so the
 * seeded stream draws the same links at every epoch): the revision, and on
 * the home page the pages added so far. */
static void gen_epoch_tail(gen *g, long i)
{
    const site_opts *o = &g->s->o;
    int rev = epoch_revision(g->s, g->host, i, NULL);
    if (rev > 0)
        g_printf(g, "<p class=\"rev\">revision %d</p>\n", rev);
    int first = o->keep_epochs > 0 && o->epoch - o->keep_epochs + 1 > 1
                    ? o->epoch - o->keep_epochs + 1
                    : 1;
    for (int k = first; i == 0 && k <= o->epoch; k++)
        for (int j = 0; j < o->add_pages; j++) {
            char t[64];
            snprintf(t, sizeof t, "/new/%d-%d.html", k, j);
            g_puts(g, "<p>");
            g_a(g, g->host, t, F_ABS_PATH, "new", NULL);
            g_puts(g, "</p>\n");
        }
}

static void gen_new(gen *g, long k, int j)
{
    g_head(g, "new page");
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_printf(g, "<h1>Added at epoch %ld, number %d</h1>\n", k, j);
    g_filler(g, 30);
    g_puts(g, "</body></html>\n");
}

static void gen_regular(gen *g, long i)
{
    const site *s = g->s;
    char t[SITE_TARGET_MAX];
    char self[96];
    page_target(i, self, sizeof(self));
    snprintf(t, sizeof(t), "page %ld", i);
    g_head(g, t);
    if (i >= 9 && i % 7 == 3) {
        /* a <base> moves relative links to another directory */
        snprintf(g->dir, sizeof(g->dir), "/sec%ld/", (i + 3) % 8);
        g_puts(g, "<base href=\"");
        g_url(g, g->host, g->dir, rng_below(&g->rng, 2) ? F_ABSOLUTE : F_ABS_PATH);
        g_puts(g, "\">\n");
        if (i % 14 == 3)
            g_puts(g, "<base href=\"/wrong/\">\n"); /* only the first one counts */
    }
    g_tag(g, SE_LINK_STYLESHEET, "/style.css", rng_below(&g->rng, 2) ? F_RELATIVE : F_ABS_PATH);
    g_tag(g, SE_LINK_ICON, "/img/0.png", F_ABS_PATH);
    g_tag(g, SE_LINK_CANONICAL, self, random_form(g, g->host));
    g_tag(g, SE_SCRIPT, "/app.js", F_ABS_PATH);
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_printf(g, "<h1>Page %ld of %s</h1>\n", i, s->names[g->host]);
    g_filler(g, 20 + rng_below(&g->rng, 40));
    snprintf(t, sizeof(t), "/img/%u.png", rng_below(&g->rng, SITE_IMAGES));
    g_tag(g, SE_IMG, t, random_form(g, g->host));
    if (i % 13 == 6) {
        unsigned a = rng_below(&g->rng, SITE_IMAGES), b = rng_below(&g->rng, SITE_IMAGES);
        char ta[32], tb[32];
        snprintf(ta, sizeof(ta), "/img/%u.png", a);
        snprintf(tb, sizeof(tb), "/img/%u.png", b);
        g_puts(g, "<img alt=\"\" srcset=\"");
        g_url(g, g->host, ta, F_ABS_PATH);
        g_puts(g, " 1x, ");
        g_url(g, g->host, tb, F_RELATIVE);
        g_puts(g, " 2x\">\n");
        g_record(g, g->host, ta, SE_IMG_SRCSET, 0);
        g_record(g, g->host, tb, SE_IMG_SRCSET, 0);
    }
    g_puts(g, "<ul>\n");
    for (long c = 2 * i + 1; c <= 2 * i + 2 && c < s->o.pages; c++) {
        page_target(c, t, sizeof(t));
        g_puts(g, "<li>");
        g_a(g, g->host, t, random_form(g, g->host), "child", NULL);
        g_puts(g, "</li>\n");
    }
    for (int z = 0; z < 12; z++) {
        page_target(zipf_page(s, g->host, &g->rng), t, sizeof(t));
        g_puts(g, "<li>");
        g_a(g, g->host, t, random_form(g, g->host), "see also", NULL);
        g_puts(g, "</li>\n");
    }
    if (s->o.hosts > 1 && rng_below(&g->rng, 4) == 0) {
        int oh = (g->host + 1 + (int)rng_below(&g->rng, (unsigned)s->o.hosts - 1)) % s->o.hosts;
        page_target(zipf_page(s, oh, &g->rng), t, sizeof(t));
        g_puts(g, "<li>");
        g_a(g, oh, t, random_form(g, oh), "elsewhere", NULL);
        g_puts(g, "</li>\n");
    }
    if (i % 11 == 4) {
        snprintf(t, sizeof(t), "/doc/%ld.pdf", i % SITE_DOCS);
        g_puts(g, "<li>");
        g_a(g, g->host, t, random_form(g, g->host), "document", NULL);
        g_puts(g, "</li>\n");
    }
    g_puts(g, "</ul>\n");
    g_filler(g, 10 + rng_below(&g->rng, 30));
    if (epoch_on(s))
        gen_epoch_tail(g, i);
    g_puts(g, "</body></html>\n");
}

/* /replay/: what a replay test checks (see tests/test_replay.c): the
 * background colour and the font come from the stylesheet, the tile image
 * only through its url(), the photo through srcset. */
static void gen_replay(gen *g)
{
    g_head(g, "Replay check");
    g_tag(g, SE_LINK_STYLESHEET, "/replay/style.css", F_RELATIVE);
    g_puts(g, "<style>.inline { background: url(inline.png) repeat; }</style>\n");
    g_record(g, g->host, "/replay/inline.png", SE_STYLE, 0);
    g_puts(g, "</head><body>\n<h1>Archived by crawld</h1>\n"
              "<p>Replayed from a WACZ package. The background colour and the tiled squares\n"
              "come from a stylesheet the crawler found through a &lt;link&gt;; it also names a\n"
              "font on another host (bytes no browser accepts as a font, so a fallback shows).\n"
              "The strips come from a &lt;style&gt; element and a style attribute, the photo\n"
              "through srcset.</p>\n<div class=\"tile\"></div>\n"
              "<div class=\"inline\"></div>\n<p class=\"attr\" style=\"background: "
              "url('/replay/attr.png')\">a style attribute</p>\n"
              "<img id=\"photo\" alt=\"photo\" src=\"photo-1x.png\" "
              "srcset=\"photo-1x.png 1x, /replay/photo-2x.png 2x\">\n");
    g_record(g, g->host, "/replay/attr.png", SE_STYLE_ATTR, 0);
    g_record(g, g->host, "/replay/photo-1x.png", SE_IMG, 0);
    g_record(g, g->host, "/replay/photo-1x.png", SE_IMG_SRCSET, 0);
    g_record(g, g->host, "/replay/photo-2x.png", SE_IMG_SRCSET, 0);
    g_puts(g, "</body></html>\n");
}

static void gen_chain(gen *g)
{
    g_head(g, "Import chain");
    g_tag(g, SE_LINK_STYLESHEET, "/replay/chain/1.css", F_RELATIVE);
    g_puts(g, "</head><body><p>Each stylesheet imports the next, without end.</p></body></html>\n");
}

static void gen_navonly(gen *g, const char *target)
{
    g_head(g, target);
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_printf(g, "<h1>%s</h1>\n", target);
    g_filler(g, 12);
    g_puts(g, "</body></html>\n");
}

static void gen_index(gen *g)
{
    static const struct {
        const char *target;
        int form;
        const char *text;
    } items[] = {
        { "/redirect/short", F_ABS_PATH, "short redirect chain" },
        { "/redirect/hop/1", F_RELATIVE, "long redirect chain" },
        { "/redirect/loop/a", F_ABS_PATH, "redirect loop" },
        { "/redirect/self", F_ABSOLUTE, "redirect to itself" },
        { "/redirect/messy", F_PROTO_REL, "redirect to a messy URL" },
        { "/redirect/offsite", F_ABS_PATH, "redirect to another host" },
        { "/redirect/no-location", F_ABS_PATH, "3xx without Location" },
        { "/status/403", F_ABS_PATH, "403" },
        { "/status/404", F_RELATIVE, "404" },
        { "/status/410", F_ABS_PATH, "410" },
        { "/status/500", F_ABS_PATH, "500" },
        { "/status/503", F_ABS_PATH, "503 Retry-After seconds" },
        { "/status/503-date", F_ABS_PATH, "503 Retry-After date" },
        { "/status/429", F_ABS_PATH, "429" },
        { "/missing/nowhere.html", F_ABS_PATH, "missing page" },
        { "/flaky/1.html", F_ABS_PATH, "flaky 1" },
        { "/flaky/2.html", F_RELATIVE, "flaky 2" },
        { "/flaky/3.html", F_ABSOLUTE, "flaky 3" },
        { "/slow/delay.html", F_ABS_PATH, "slow" },
        { "/slow/trickle.html", F_ABS_PATH, "trickle" },
        { "/big/huge.html", F_ABS_PATH, "oversized" },
        { "/big/chunked.html", F_ABS_PATH, "oversized, chunked" },
        { "/big/bomb.html", F_ABS_PATH, "gzip bomb" },
        { "/img/5.png", F_RELATIVE, "an image" },
        { "/doc/3.pdf", F_ABS_PATH, "a PDF" },
        { "/doc/9.pdf", F_ABS_PATH, "a PDF robots.txt blocks" },
        { "/doc/9.pdf?download=1", F_ABS_PATH, "the same with a query" },
        { "/special/plain.txt", F_RELATIVE, "text/plain" },
        { "/special/image.html", F_RELATIVE, "an image named .html" },
        { "/special/page.xhtml", F_RELATIVE, "XHTML" },
        { "/special/fake.png", F_RELATIVE, "HTML named .png" },
        { "/special/upper-ctype.html", F_RELATIVE, "Text/HTML" },
        { "/special/latin1.html", F_RELATIVE, "ISO-8859-1" },
        { "/special/malformed.html", F_RELATIVE, "malformed HTML" },
        { "/special/meta-nofollow.html", F_RELATIVE, "meta robots nofollow" },
        { "/special/refresh.html", F_RELATIVE, "meta refresh" },
        { "/special/frames.html", F_RELATIVE, "iframe" },
        { "/special/base.html", F_RELATIVE, "two base elements" },
        { "/private/1.html", F_ABS_PATH, "private 1" },
        { "/private/2.html", F_ABS_PATH, "private 2" },
        { "/private/3.html", F_ABS_PATH, "private 3" },
        { "/private/public.html", F_ABS_PATH, "private but allowed" },
        { "/hidden/blocked.html", F_ABS_PATH, "blocked by an escaped rule" },
        { "/loop/", F_ABS_PATH, "relative-link loop" },
        { "/search?q=trap", F_ABS_PATH, "growing query" },
    };
    char auth[64];
    g_head(g, "Special pages");
    g_tag(g, SE_LINK_STYLESHEET, "/style.css", F_RELATIVE);
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_puts(g, "<h1>Special pages</h1>\n<ul>\n");
    for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
        if (strcmp(items[i].target, "/redirect/offsite") == 0 && g->s->o.hosts < 2)
            continue;
        g_puts(g, "<li>");
        g_a(g, g->host, items[i].target, items[i].form, items[i].text, NULL);
        g_puts(g, "</li>\n");
    }
    g_puts(g, "<li>");
    g_a(g, g->host, "/hidden/nofollow.html", F_ABS_PATH, "nofollow", "nofollow");
    g_puts(g, "</li>\n<li>");
    g_a(g, g->host, "/hidden/nofollow2.html", F_RELATIVE, "nofollow", "noopener NoFollow");
    /* links no crawler follows, each refused for its own reason */
    g_puts(g, "</li>\n<li><a href=\"mailto:webmaster@example.test\">mail</a></li>\n"
              "<li><a href=\"javascript:void(0)\">script</a></li>\n"
              "<li><a href=\"http://1.2.3.256/\">ends in a number, is no IPv4 address</a></li>\n"
              "<li><a href=\"http://exa*mple.test/\">a host no URL can fetch</a></li>\n"
              "<li><a href=\"http://[::1/\">an unclosed IPv6 address</a></li>\n");
    g_puts(g, "</ul>\n<map name=\"m\"><area shape=\"rect\" coords=\"0,0,9,9\" alt=\"x\" href=\"");
    g_url(g, g->host, "/hidden/area-target.html", F_ABS_PATH);
    g_puts(g, "\"></map>\n");
    g_record(g, g->host, "/hidden/area-target.html", SE_AREA, 0);
    if (g->s->o.hosts > 1 && site_authority(g->s, 1, auth, sizeof(auth)) == 0) {
        /* a requisite on another host, as from a CDN */
        g_printf(g, "<img alt=\"cdn\" src=\"http://%s/img/1.png\">\n", auth);
        g_record(g, 1, "/img/1.png", SE_IMG, 0);
    }
    g_puts(g, "</body></html>\n");
}

static void gen_malformed(gen *g)
{
    static const char *const links[] = {
        "mal-unquoted", "mal-upper", "mal-table", "mal-unclosed-a", "mal-gt-attr",
        "mal-spaced", "mal-after-bytes", "mal-dup", "mal-eof",
    };
    char t[64];
    g_puts(g,
           "<html><head><title>broken page\n<body>\n"
           "<p><b><i>unclosed formatting\n"
           "<a href=/hidden/mal-unquoted.html>unquoted</a>\n"
           "<A HREF='/hidden/mal-upper.html'>upper case</A>\n"
           "<div><table><tr><td><a href=\"/hidden/mal-table.html\">cell\n"
           "<p>para <a href=\"/hidden/mal-unclosed-a.html\">unclosed anchor\n"
           "<!-- <a href=\"/hidden/mal-in-comment.html\">commented out</a> -->\n"
           "<script>var s = '<a href=\"/hidden/mal-in-script.html\">'; if (a < b && c > d) {}</script>\n"
           "<a href=\"/hidden/mal-gt-attr.html\" title=\"a > b\" class=x>attr with gt</a>\n"
           "</div></span></div></td></p>\n"
           "<a href = \"/hidden/mal-spaced.html\" >spaces around =</a>\n"
           "&nbsp; &bogus; &#xZZ; bad bytes: \xff\xfe\xc3 and a NUL-free tail\n"
           "<a href=\"/hidden/mal-after-bytes.html\"\n   >newline before close</a>\n"
           "<a href=\"/hidden/mal-dup.html\" href=\"/hidden/mal-dup2.html\">dup</a>\n"
           "<a href=\"/hidden/mal-eof.html\">eof\n");
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        snprintf(t, sizeof(t), "/hidden/%s.html", links[i]);
        g_record(g, g->host, t, SE_A, 0);
    }
}

static void gen_small(gen *g, const char *title, const char *head_extra, const char *link,
                      site_elem e)
{
    g_head(g, title);
    if (head_extra != NULL)
        g_puts(g, head_extra);
    if (e == SE_META_REFRESH)
        g_record(g, g->host, link, SE_META_REFRESH, 0);
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_printf(g, "<h1>%s</h1>\n", title);
    if (e == SE_A) {
        g_puts(g, "<p>");
        g_a(g, g->host, link, F_ABS_PATH, "onward", NULL);
        g_puts(g, "</p>\n");
    } else if (e == SE_IFRAME) {
        g_tag(g, SE_IFRAME, link, F_ABS_PATH);
    }
    g_puts(g, "</body></html>\n");
}

static void gen_calendar(gen *g, long mi)
{
    char t[64], title[64];
    calendar_target(mi, title, sizeof(title));
    g_head(g, title + 10);
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_printf(g, "<h1>Events of %s</h1>\n<p>", title + 10);
    if (mi > 12) { /* 0001/01 has no previous month */
        calendar_target(mi - 1, t, sizeof(t));
        g_a(g, g->host, t, F_RELATIVE, "previous month", NULL);
        g_puts(g, " ");
    }
    if (mi < CAL_MAX_YEAR * 12 + 11) {
        calendar_target(mi + 1, t, sizeof(t));
        g_a(g, g->host, t, F_ABS_PATH, "next month", NULL);
    }
    g_puts(g, "</p>\n</body></html>\n");
}

static void gen_trap(gen *g, const char *target, int search, long k)
{
    g_head(g, search ? "search" : "loop");
    g_puts(g, "</head><body>\n");
    g_nav(g);
    g_puts(g, "<p>");
    if (!search && k < SITE_TRAP_MAX) {
        cr_buf next;
        cr_buf_init(&next, 0);
        if (cr_buf_printf(&next, "%sloop/", target) != 0) {
            g->err = -ENOMEM;
        } else {
            g_puts(g, "<a href=\"loop/\">deeper</a>"); /* the classic relative-link bug */
            g_record(g, g->host, next.data, SE_A, 0);
        }
        cr_buf_release(&next);
    } else if (search && k < SITE_TRAP_MAX) {
        cr_buf next;
        cr_buf_init(&next, 0);
        search_target(k + 1, &next);
        if (next.data == NULL) {
            g->err = -ENOMEM;
        } else {
            g_puts(g, "<a href=\"");
            for (const char *c = next.data + strlen("/search"); *c != '\0'; c++) {
                if (*c == '&')
                    g_puts(g, "&amp;");
                else
                    g_append(g, c, 1);
            }
            g_puts(g, "\">refine</a>"); /* a query-only relative reference */
            g_record(g, g->host, next.data, SE_A, 0);
        }
        cr_buf_release(&next);
    }
    g_puts(g, "</p>\n</body></html>\n");
}

static void dir_of(const char *target, char *dir, size_t cap)
{
    size_t n = strcspn(target, "?");
    while (n > 0 && target[n - 1] != '/')
        n--;
    if (n >= cap)
        n = cap - 1;
    memcpy(dir, target, n);
    dir[n] = '\0';
}

int site_html(const site *s, int h, const char *target, const site_res *r, cr_buf *html,
              site_links *links)
{
    cr_buf scratch;
    gen g;
    memset(&g, 0, sizeof(g));
    cr_buf_init(&scratch, 0);
    g.s = s;
    g.host = h;
    g.rng = seed_for(s, h, target);
    g.out = html != NULL ? html : &scratch;
    g.links = links;
    dir_of(target, g.dir, sizeof(g.dir));

    switch (r->html) {
    case H_REGULAR:
        gen_regular(&g, r->page);
        break;
    case H_INDEX:
        gen_index(&g);
        break;
    case H_MALFORMED:
        gen_malformed(&g);
        break;
    case H_REPLAY:
        gen_replay(&g);
        break;
    case H_CHAIN:
        gen_chain(&g);
        break;
    case H_XHTML:
        g_puts(&g, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n"
                   "<html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title>xhtml</title></head>\n"
                   "<body><p><a href=\"/hidden/from-xhtml.html\">xhtml link</a></p></body></html>\n");
        g_record(&g, h, "/hidden/from-xhtml.html", SE_A, 0);
        break;
    case H_FAKEPNG:
        gen_small(&g, "HTML named .png", NULL, "/hidden/from-fake-png.html", SE_A);
        break;
    case H_UPPERCT:
        gen_small(&g, "Text/HTML", NULL, "/hidden/from-upper-ctype.html", SE_A);
        break;
    case H_LATIN1:
        g_puts(&g, "<!DOCTYPE html>\n<html><head><title>caf\xe9</title></head><body>\n"
                   "<p>D\xe9j\xe0 vu: <a href=\"/hidden/latin1-target.html\">suite</a></p>\n"
                   "</body></html>\n");
        g_record(&g, h, "/hidden/latin1-target.html", SE_A, 0);
        break;
    case H_METANOFOLLOW:
        g.nofollow_page = 1;
        gen_small(&g, "meta robots nofollow", "<meta name=\"robots\" content=\"noindex, nofollow\">\n",
                  "/hidden/meta-nofollow-child.html", SE_A);
        break;
    case H_REFRESH:
        gen_small(&g, "meta refresh",
                  "<meta http-equiv=\"refresh\" content=\"0; url=/hidden/refresh-target.html\">\n",
                  "/hidden/refresh-target.html", SE_META_REFRESH);
        break;
    case H_FRAMES:
        gen_small(&g, "iframe", NULL, "/hidden/iframe-target.html", SE_IFRAME);
        break;
    case H_BASE:
        g_head(&g, "two base elements");
        g_puts(&g, "<base href=\"/hidden/based/\">\n<base href=\"/wrong/\">\n</head><body>\n");
        snprintf(g.dir, sizeof(g.dir), "/hidden/based/");
        g_nav(&g);
        g_puts(&g, "<p><a href=\"child.html\">child</a> <a href=\"../../special/\">up</a></p>\n"
                   "</body></html>\n");
        g_record(&g, h, "/hidden/based/child.html", SE_A, 0);
        g_record(&g, h, "/special/", SE_A, 0);
        break;
    case H_CALENDAR:
        gen_calendar(&g, r->page);
        break;
    case H_LOOP:
        gen_trap(&g, target, 0, r->page);
        break;
    case H_SEARCH:
        gen_trap(&g, target, 1, r->page);
        break;
    case H_NEW:
        gen_new(&g, r->page, r->n);
        break;
    case H_NAVONLY:
    default:
        gen_navonly(&g, target);
        break;
    }
    cr_buf_release(&scratch);
    return g.err;
}

/* ---- redirects --------------------------------------------------------- */

int site_redirect(const site *s, int h, const char *target, const site_res *r, cr_buf *loc,
                  int *to_host, cr_buf *to)
{
    gen g;
    const char *dest = NULL;
    int form = F_ABS_PATH;
    char t[96];
    memset(&g, 0, sizeof(g));
    g.s = s;
    g.host = h;
    g.rng = seed_for(s, h, target);
    dir_of(target, g.dir, sizeof(g.dir));
    cr_buf_clear(loc);
    cr_buf_clear(to);
    *to_host = h;

    if (strcmp(target, "/redirect/short") == 0) {
        dest = "/redirect/short2";
        form = F_RELATIVE;
    } else if (strcmp(target, "/redirect/short2") == 0) {
        dest = "/redirect/landing.html";
        form = F_ABSOLUTE;
    } else if (strcmp(target, "/redirect/loop/a") == 0) {
        dest = "/redirect/loop/b";
        form = F_RELATIVE;
    } else if (strcmp(target, "/redirect/loop/b") == 0) {
        dest = "/redirect/loop/a";
    } else if (strcmp(target, "/redirect/self") == 0) {
        dest = "/redirect/self";
    } else if (strcmp(target, "/redirect/messy") == 0) {
        page_target(s->o.pages > 17 ? 17 : 0, t, sizeof(t));
        dest = t;
        form = F_DOTSEG | D_ESCAPE | D_TRACKING | D_FRAGMENT;
    } else if (strcmp(target, "/redirect/offsite") == 0) {
        *to_host = (h + 1) % s->o.hosts;
        dest = "/";
        form = F_ABSOLUTE;
    } else if (r->n >= 1 && r->n < SITE_CHAIN_LEN) {
        snprintf(t, sizeof(t), "/redirect/hop/%d", r->n + 1);
        dest = t;
        form = r->n % 2 ? F_RELATIVE : F_ABS_PATH;
    }
    if (dest == NULL)
        return 0; /* /redirect/no-location */
    int rc = render_url(&g, *to_host, dest, form, loc);
    if (rc == 0)
        rc = cr_buf_puts(to, dest);
    return rc;
}

/* ---- small bodies ------------------------------------------------------ */

typedef struct robots_rule {
    int allow;
    const char *pattern;
} robots_rule;

static const robots_rule rules[ROBOTS_RULES] = {
    { 1, "/private/public.html" },
    { 0, "/private/" },
    { 0, "/sec3/Article1" },
    { 0, "/list?cat=4" },
    { 0, "/*9.pdf$" },
    { 0, "/hidden/%62locked.html" },
};

/* The patterns as compared: percent-encoding of unreserved characters
 * decoded, the same normalization the targets have. */
static int normalize_rules(site *s)
{
    for (size_t i = 0; i < ROBOTS_RULES; i++) {
        cr_buf b;
        cr_buf_init(&b, sizeof(s->rule_norm[i]) - 1);
        int rc = decode_unreserved(rules[i].pattern, strlen(rules[i].pattern), &b);
        if (rc == 0)
            snprintf(s->rule_norm[i], sizeof(s->rule_norm[i]), "%s", b.data);
        cr_buf_release(&b);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Host kinds: a.test rules, b.test rules + Crawl-delay, c.test robots.txt 404,
 * d.test robots.txt 500, every further host rules. */
int site_robots_status(const site *s, int h)
{
    (void)s;
    return h == 2 ? 404 : h == 3 ? 500 : 200;
}

static int robots_text(const site *s, int h, cr_buf *out)
{
    int rc = cr_buf_printf(out, "# robots.txt of %s (crawld testsite, seed %llu)\n"
                                "User-agent: BadBot\nDisallow: /\n\nUser-agent: *\n",
                           s->names[h], (unsigned long long)s->o.seed);
    if (rc == 0 && h == 1)
        rc = cr_buf_printf(out, "Crawl-delay: %s\n", s->o.crawl_delay);
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) && rc == 0; i++)
        rc = cr_buf_printf(out, "%s: %s\n", rules[i].allow ? "Allow" : "Disallow", rules[i].pattern);
    if (rc == 0 && s->o.sitemaps)
        rc = site_sitemap_robots(s, h, out);
    return rc;
}

/* 1 when pattern p ('*' any run, '$' at the end anchors) matches a prefix of t. */
static int pattern_match(const char *p, const char *t)
{
    for (;;) {
        if (*p == '\0')
            return 1;
        if (p[0] == '$' && p[1] == '\0')
            return *t == '\0';
        if (*p == '*') {
            p++;
            for (;; t++) {
                if (pattern_match(p, t))
                    return 1;
                if (*t == '\0')
                    return 0;
            }
        }
        if (*p != *t)
            return 0;
        p++;
        t++;
    }
}

/* 1 when a rule with a query in its pattern matches target. */
static int query_rule_applies(const site *s, const char *target)
{
    for (size_t i = 0; i < ROBOTS_RULES; i++)
        if (strchr(s->rule_norm[i], '?') != NULL && pattern_match(s->rule_norm[i], target))
            return 1;
    return 0;
}

int site_robots_allowed(const site *s, int h, const char *target)
{
    int st = site_robots_status(s, h);
    if (st >= 500)
        return 0;
    if (st != 200)
        return 1;
    size_t best = 0;
    int allowed = 1;
    for (size_t i = 0; i < ROBOTS_RULES; i++) {
        const char *pat = s->rule_norm[i];
        size_t len = strlen(pat);
        if (pattern_match(pat, target) && (len > best || (len == best && rules[i].allow))) {
            best = len;
            allowed = rules[i].allow;
        }
    }
    return allowed;
}

int site_body(const site *s, int h, const char *target, const site_res *r, cr_buf *out)
{
    (void)target;
    switch (r->kind) {
    case SK_ROBOTS:
        if (site_robots_status(s, h) == 200)
            return robots_text(s, h, out);
        return cr_buf_printf(out, "robots.txt answers %d on this host\n", site_robots_status(s, h));
    case SK_CSS:
        return site_css(s, h, target, r, out, NULL);
    case SK_FONT:
        /* "wOF2" and filler: enough for a crawler and a replay tool, which
         * only carry the bytes; a browser rejects it and uses a fallback */
        return cr_buf_printf(out, "wOF2%060d", 0);
    case SK_JS:
        return cr_buf_puts(out, "/* not parsed for links by a crawler */\n"
                                "document.write('<a href=\"/hidden/from-js.html\">js</a>');\n");
    case SK_TEXT:
        return cr_buf_puts(out, "This is text/plain, so this markup is not a link:\n"
                                "<a href=\"/hidden/from-plain.html\">plain</a>\n");
    case SK_RETRY:
        return cr_buf_printf(out, "%d: come back later\n", r->status);
    case SK_STATUS:
        return cr_buf_printf(out, "%d\n", r->status);
    case SK_SITEMAP:
        return site_sitemap_body(s, h, target, r, out);
    default:
        return 0; /* PNG and PDF come from payload.c */
    }
}

int site_css(const site *s, int h, const char *target, const site_res *r, cr_buf *css,
             site_links *links)
{
    cr_buf scratch;
    gen g;
    char t[64], auth[64];
    memset(&g, 0, sizeof(g));
    cr_buf_init(&scratch, 0);
    g.s = s;
    g.host = h;
    g.out = css != NULL ? css : &scratch;
    g.links = links;
    (void)target;
    switch (r->n) {
    case CSS_REPLAY:
        g_puts(&g, "@import url(\"more.css\");\n"
                   "body { background-color: #1e6b52; color: #f4f1e8; margin: 2em;\n"
                   "       font-family: \"Crawld Replay\", Georgia, serif; }\n"
                   ".tile { width: 192px; height: 48px; background: url(tile.png) repeat;\n"
                   "        background-size: 48px 48px; image-rendering: pixelated; }\n"
                   ".inline, .attr { height: 24px; background-size: 24px 24px !important;\n"
                   "                 image-rendering: pixelated; }\n"
                   "#photo { width: 96px; height: 96px; image-rendering: pixelated; }\n");
        g_record(&g, h, "/replay/more.css", SE_CSS_IMPORT, 0);
        g_record(&g, h, "/replay/tile.png", SE_CSS_URL, 0);
        break;
    case CSS_MORE: {
        /* the font is on the next host, as on a CDN; the import loops back */
        int fh = s->o.hosts > 1 ? (h + 1) % s->o.hosts : h;
        g_puts(&g, "@import \"style.css\";\n@font-face { font-family: \"Crawld Replay\";\n  src: ");
        if (fh != h && site_authority(s, fh, auth, sizeof(auth)) == 0)
            g_printf(&g, "url(http://%s/replay/font.woff2)", auth);
        else
            g_puts(&g, "url(font.woff2)");
        g_puts(&g, " format(\"woff2\"); }\nh1 { font-weight: normal; letter-spacing: 0.05em; }\n");
        g_record(&g, h, "/replay/style.css", SE_CSS_IMPORT, 0);
        g_record(&g, fh, "/replay/font.woff2", SE_CSS_URL, 0);
        break;
    }
    case CSS_CHAIN:
        if (r->page < SITE_TRAP_MAX) {
            snprintf(t, sizeof(t), "/replay/chain/%ld.css", r->page + 1);
            g_printf(&g, "@import \"%ld.css\";\n", r->page + 1);
            g_record(&g, h, t, SE_CSS_IMPORT, 0);
        }
        g_printf(&g, ".c%ld { color: #%06lx; }\n", r->page, (unsigned long)(r->page * 2654435761u) & 0xffffff);
        break;
    default:
        g_puts(&g, "body { font: 16px/1.4 serif; margin: 2em; }\n"
                   "nav a { margin-right: 1em; }\n"
                   ".logo { background: #eee no-repeat; }\n");
        break;
    }
    cr_buf_release(&scratch);
    return g.err;
}

void site_big_fill(const site *s, uint64_t pos, char *buf, size_t n)
{
    static const char head[] = "<!DOCTYPE html>\n<html><head><title>huge</title></head><body>\n";
    static const char line[] = "<p>This page is bigger than a body cap should allow.</p>\n";
    const size_t hl = sizeof(head) - 1, ll = sizeof(line) - 1;
    (void)s;
    for (size_t i = 0; i < n; i++) {
        uint64_t p = pos + i;
        buf[i] = p < hl ? head[p] : line[(p - hl) % ll];
    }
}
