/* crawler/url: URL canonicalization (see url.h for the rules).
 *
 * Pipeline, the same for both implementations:
 *
 *   prep      trim / drop tab-LF-CR / reject controls / cut the fragment /
 *             '\' -> '/' before the query / encode space and bytes >= 0x80
 *   classify  scheme (only http, https), "//" authority present and not
 *             empty, else the kind of relative reference
 *   resolve   fast path (ours, declines what it does not know) or the curl
 *             path (curl_url_set of the canonical base, then of the
 *             reference): both yield scheme, canonical authority, path
 *             with literal dot segments removed (RFC 3986 5.2), query
 *   finish    percent-normalize the path, strip ;jsessionid=, remove dot
 *             segments again (RFC 3986 6.2.2.3), normalize / filter /
 *             sort the query, enforce max_url_bytes
 *
 * prep, classify and finish are shared; only the parse-and-resolve step
 * differs, and that is what the tests and the fuzzer compare. The base is
 * canonicalized once and cached (raw bytes -> canonical form), so a page's
 * links are resolved against its canonical base; resolving against the
 * canonical base gives the same result as against the raw one because every
 * normalization step is idempotent and works segment by segment.
 *
 * All scratch space is allocated by url_canon_new and sized from
 * max_url_bytes, so resolving allocates nothing of ours (curl allocates
 * its own parts). A url_canon belongs to one thread. */
#include "crawler/web/url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

#define DEFAULT_MAX_URL 2048
#define MIN_MAX_URL 64
#define MAX_MAX_URL 65536
#define MAX_HOST 255 /* longest host we accept, in bytes, before and after IDN */

/* character classes */
enum {
    C_UNRES = 1,   /* ALPHA DIGIT - . _ ~ */
    C_PATH = 2,    /* literal in a canonical path: unreserved, sub-delims, : @ / */
    C_QUERY = 4,   /* literal in a canonical query: path set and ? */
    C_USER = 8,    /* literal in canonical userinfo: unreserved, sub-delims */
    C_HOSTF = 16,  /* host bytes the fast path accepts: ALPHA DIGIT - . _ */
    C_HEX = 32,
    C_SCHEME = 64, /* ALPHA DIGIT + - . */
    C_DIGIT = 128,
    C_PREP = 256   /* prep must look: controls, space, '#', '\\', >= 0x7F */
};

enum ref_kind { K_ABS, K_NET, K_PATH_ABS, K_PATH_REL, K_QUERY, K_EMPTY };

typedef struct qparam {
    const char *p;
    size_t len;   /* whole "name=value" */
    size_t nlen;  /* name only */
} qparam;

/* output writer over a fixed buffer: overflow is sticky and means "too long" */
typedef struct wr {
    char *p;
    size_t len;
    size_t cap;
    bool over;
} wr;

struct url_canon {
    CURLU *h;
    size_t max;       /* max_url_bytes */
    size_t wcap;      /* capacity of each work buffer */
    char *pbuf;       /* prepared reference, NUL-terminated */
    char *mbuf;       /* fast path: merged path */
    char *dbuf;       /* fast path: path without dot segments */
    char *nbuf;       /* percent-normalized path */
    char *qbuf;       /* percent-normalized query */
    char *abuf;       /* canonical authority */
    char *obuf;       /* result, max + 1 */
    qparam *params;
    qparam *ptmp;
    size_t nparams;   /* capacity of params and ptmp */
    /* base cache: the last raw base and what it became */
    char *braw;
    size_t braw_len;
    bool bset;
    url_reject bwhy;
    char *bcanon;
    size_t bcanon_len;
    int bscheme;      /* 0 http, 1 https */
    size_t bauth_off, bauth_len, bpath_off, bpath_len, bquery_off;
    /* policy */
    char **strip;     /* lower-cased patterns */
    size_t *striplen;
    size_t nstrip;
    bool strip_sess;
    bool sort;
    bool curl_only;
    bool used_curl;   /* the last reference went through curl */
    url_canon_stats st;
    uint16_t cls[256];
};

static const char *const default_strip[] = { "utm_*", "fbclid", "gclid" };
static const char hexu[] = "0123456789ABCDEF";
static const char *const scheme_str[2] = { "http://", "https://" };
static const size_t scheme_len[2] = { 7, 8 };
static const unsigned default_port[2] = { 80, 443 };

/* ---- small helpers ---------------------------------------------------- */

static void wr_put(wr *w, const char *s, size_t n)
{
    if (w->over || n > w->cap - w->len) {
        w->over = true;
        return;
    }
    memcpy(w->p + w->len, s, n);
    w->len += n;
}

static void wr_c(wr *w, char ch)
{
    if (w->over || w->len == w->cap) {
        w->over = true;
        return;
    }
    w->p[w->len++] = ch;
}

static void wr_pct(wr *w, unsigned char b)
{
    char e[3] = { '%', hexu[b >> 4], hexu[b & 15] };
    wr_put(w, e, 3);
}

static unsigned char lower(unsigned char b)
{
    return (b >= 'A' && b <= 'Z') ? (unsigned char)(b + 32) : b;
}

static int hexval(unsigned char b)
{
    if (b >= '0' && b <= '9')
        return b - '0';
    b = lower(b);
    return b - 'a' + 10;
}

static bool ieq(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

static void cls_init(uint16_t *cls)
{
    memset(cls, 0, 256 * sizeof *cls);
    for (int b = 0; b < 256; b++) {
        bool alpha = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        bool digit = b >= '0' && b <= '9';
        if (alpha || digit || b == '-' || b == '.' || b == '_' || b == '~')
            cls[b] |= C_UNRES;
        if (alpha || digit || b == '-' || b == '.' || b == '_')
            cls[b] |= C_HOSTF;
        if (alpha || digit || b == '+' || b == '-' || b == '.')
            cls[b] |= C_SCHEME;
        if (digit || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'))
            cls[b] |= C_HEX;
        if (digit)
            cls[b] |= C_DIGIT;
        if (b <= 0x20 || b >= 0x7f || b == '#' || b == '\\')
            cls[b] |= C_PREP;
    }
    for (int b = 0; b < 256; b++)
        if (cls[b] & C_UNRES)
            cls[b] |= C_PATH | C_QUERY | C_USER;
    for (const char *s = "!$&'()*+,;="; *s; s++)
        cls[(unsigned char)*s] |= C_PATH | C_QUERY | C_USER;
    for (const char *s = ":@/"; *s; s++)
        cls[(unsigned char)*s] |= C_PATH | C_QUERY;
    cls['?'] |= C_QUERY;
}

/* Percent-normalization: valid escapes upper-cased, or decoded when they
 * stand for an unreserved character; a '%' that starts no valid escape
 * becomes %25; bytes outside `mask` are encoded. */
static void pct_norm(const url_canon *c, wr *w, const char *in, size_t n,
                     unsigned mask)
{
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && in[run] != '%' && (c->cls[(unsigned char)in[run]] & mask))
            run++;
        wr_put(w, in + i, run - i);
        i = run;
        if (i == n)
            break;
        unsigned char b = (unsigned char)in[i];
        if (b == '%' && i + 2 < n && (c->cls[(unsigned char)in[i + 1]] & C_HEX) &&
            (c->cls[(unsigned char)in[i + 2]] & C_HEX)) {
            unsigned char v = (unsigned char)(hexval((unsigned char)in[i + 1]) * 16 +
                                              hexval((unsigned char)in[i + 2]));
            if (c->cls[v] & C_UNRES)
                wr_c(w, (char)v);
            else
                wr_pct(w, v);
            i += 3;
            continue;
        }
        wr_pct(w, b);
        i++;
    }
}

/* RFC 3986 5.2.4 for a path that starts with '/', segment by segment:
 * "." is dropped, ".." drops the previous output segment, and a path ending
 * in either keeps a trailing '/'. Appends to w. */
static void remove_dots(wr *w, const char *in, size_t n)
{
    size_t start = w->len;
    size_t i = 0;
    while (i < n) {
        size_t s = i + 1;
        const char *slash = s < n ? memchr(in + s, '/', n - s) : NULL;
        size_t e = slash ? (size_t)(slash - in) : n;
        size_t sl = e - s;
        bool last = e == n;
        if (sl == 1 && in[s] == '.') {
            if (last)
                wr_c(w, '/');
        } else if (sl == 2 && in[s] == '.' && in[s + 1] == '.') {
            size_t k = w->len;
            while (k > start && w->p[k - 1] != '/')
                k--;
            if (k > start)
                k--;
            w->len = k;
            if (last)
                wr_c(w, '/');
        } else {
            wr_c(w, '/');
            wr_put(w, in + s, sl);
        }
        i = e;
    }
    if (w->len == start)
        wr_c(w, '/');
}

/* Does the path contain a "." or ".." segment? */
static bool has_dot_segment(const char *p, size_t n)
{
    const char *end = p + n, *q = p;
    while (q < end) {
        q = memchr(q, '.', (size_t)(end - q));
        if (q == NULL)
            return false;
        if (q > p && q[-1] == '/') {
            const char *r = q + 1;
            if (r < end && *r == '.')
                r++;
            if (r == end || *r == '/')
                return true;
        }
        q++;
    }
    return false;
}

/* glob with '*' as the only wildcard; pat is lower-case, s compared
 * ASCII case-insensitively */
static bool glob_ci(const char *pat, size_t pl, const char *s, size_t n)
{
    size_t pi = 0, si = 0, star = (size_t)-1, mark = 0;
    if (pl > 0 && pat[0] != '*' && (n == 0 || lower((unsigned char)s[0]) != (unsigned char)pat[0]))
        return false;
    while (si < n) {
        if (pi < pl && pat[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < pl && lower((unsigned char)s[si]) == (unsigned char)pat[pi]) {
            pi++;
            si++;
        } else if (star != (size_t)-1) {
            pi = star + 1;
            si = ++mark;
        } else {
            return false;
        }
    }
    while (pi < pl && pat[pi] == '*')
        pi++;
    return pi == pl;
}

/* ---- query ------------------------------------------------------------ */

static bool param_dropped(const url_canon *c, const char *name, size_t n)
{
    if (c->strip_sess && ((n == 10 && ieq(name, "jsessionid", 10)) ||
                          (n == 9 && ieq(name, "phpsessid", 9)) || (n == 3 && ieq(name, "sid", 3))))
        return true;
    for (size_t i = 0; i < c->nstrip; i++)
        if (glob_ci(c->strip[i], c->striplen[i], name, n))
            return true;
    return false;
}

/* order: name bytes, then "no '='" before "'='", then value bytes */
static int param_cmp(const qparam *a, const qparam *b)
{
    size_t m = a->nlen < b->nlen ? a->nlen : b->nlen;
    int r = memcmp(a->p, b->p, m);
    if (r != 0 || a->nlen != b->nlen)
        return r != 0 ? r : (a->nlen < b->nlen ? -1 : 1);
    bool ae = a->len > a->nlen, be = b->len > b->nlen;
    if (ae != be)
        return ae ? 1 : -1;
    size_t al = a->len - a->nlen, bl = b->len - b->nlen;
    m = al < bl ? al : bl;
    r = memcmp(a->p + a->nlen, b->p + b->nlen, m);
    if (r != 0 || al == bl)
        return r;
    return al < bl ? -1 : 1;
}

/* stable bottom-up merge sort of a[0..n) using tmp[0..n) */
static void param_sort(qparam *a, qparam *tmp, size_t n)
{
    if (n < 2)
        return;
    qparam *src = a, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = param_cmp(&src[j], &src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        qparam *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

static url_reject query_out(url_canon *c, wr *w, const char *q, size_t qn)
{
    wr t = { c->qbuf, 0, c->wcap, false };
    pct_norm(c, &t, q, qn, C_QUERY);
    if (t.over)
        return URL_REJ_TOO_LONG;
    size_t np = 0;
    size_t i = 0;
    while (i < t.len) {
        const char *amp = memchr(t.p + i, '&', t.len - i);
        size_t e = amp ? (size_t)(amp - t.p) : t.len;
        if (e > i) {
            const char *eq = memchr(t.p + i, '=', e - i);
            size_t nl = eq ? (size_t)(eq - (t.p + i)) : e - i;
            if (!param_dropped(c, t.p + i, nl)) {
                if (np == c->nparams)
                    return URL_REJ_TOO_LONG;
                c->params[np].p = t.p + i;
                c->params[np].len = e - i;
                c->params[np].nlen = nl;
                np++;
            }
        }
        i = e + 1;
    }
    if (c->sort)
        param_sort(c->params, c->ptmp, np);
    for (size_t k = 0; k < np; k++) {
        wr_c(w, k == 0 ? '?' : '&');
        wr_put(w, c->params[k].p, c->params[k].len);
    }
    return URL_OK;
}

/* ---- finish: shared by both paths -------------------------------------- */

/* ";jsessionid=..." path parameters (up to the next ';' or '/'), in place */
static size_t strip_jsessionid(char *p, size_t n)
{
    const char *semi = memchr(p, ';', n);
    if (semi == NULL)
        return n;
    size_t r = (size_t)(semi - p), o = r;
    while (r < n) {
        if (p[r] == ';' && n - r >= 12 && ieq(p + r + 1, "jsessionid=", 11)) {
            r += 12;
            while (r < n && p[r] != ';' && p[r] != '/')
                r++;
            continue;
        }
        p[o++] = p[r++];
    }
    return o;
}

/* Writes scheme, authority (already canonical), path (starts with '/',
 * literal dot segments already removed) and query into c->obuf. */
static url_reject finish(url_canon *c, int scheme, const char *auth, size_t alen,
                         const char *path, size_t plen, const char *q, size_t qlen,
                         size_t *olen)
{
    wr w = { c->obuf, 0, c->max, false };
    if (plen == 0 || path[0] != '/')
        return URL_REJ_UNPARSABLE;
    wr_put(&w, scheme_str[scheme], scheme_len[scheme]);
    wr_put(&w, auth, alen);
    wr t = { c->nbuf, 0, c->wcap, false };
    pct_norm(c, &t, path, plen, C_PATH);
    if (t.over)
        return URL_REJ_TOO_LONG;
    if (c->strip_sess)
        t.len = strip_jsessionid(t.p, t.len);
    if (has_dot_segment(t.p, t.len))
        remove_dots(&w, t.p, t.len);
    else
        wr_put(&w, t.p, t.len);
    if (q != NULL) {
        url_reject r = query_out(c, &w, q, qlen);
        if (r != URL_OK)
            return r;
    }
    if (w.over)
        return URL_REJ_TOO_LONG;
    c->obuf[w.len] = '\0';
    *olen = w.len;
    return URL_OK;
}

/* ---- prep and classify: shared ----------------------------------------- */

/* The reference as the parsers see it: *op points into `in` when nothing
 * had to change, else into c->pbuf (NUL-terminated). */
static url_reject prep(url_canon *c, const char *in, size_t len, const char **op, size_t *on)
{
    if (len > c->max)
        return URL_REJ_TOO_LONG;
    size_t s = 0, e = len;
    while (s < e && (unsigned char)in[s] <= 0x20)
        s++;
    while (e > s && (unsigned char)in[e - 1] <= 0x20)
        e--;
    size_t i = s;
    while (i < e && !(c->cls[(unsigned char)in[i]] & C_PREP))
        i++;
    if (i == e) {
        *op = in + s;
        *on = e - s;
        return URL_OK;
    }
    bool copy = false;
    size_t frag = e;
    for (; i < e; i++) {
        unsigned char b = (unsigned char)in[i];
        if (b < 0x20 || b == 0x7f) {
            if (b != '\t' && b != '\n' && b != '\r')
                return URL_REJ_CONTROL;
            copy = true;
        } else if (b >= 0x80 || b == ' ' || b == '\\') {
            copy = true;
        } else if (b == '#' && frag == e) {
            frag = i;
        }
    }
    if (!copy) {
        *op = in + s;
        *on = frag - s;
        return URL_OK;
    }
    wr w = { c->pbuf, 0, c->wcap, false };
    bool query = false;
    for (i = s; i < frag; i++) {
        unsigned char b = (unsigned char)in[i];
        if (b == '\t' || b == '\n' || b == '\r')
            continue;
        if (b == '?')
            query = true;
        if (b == '\\' && !query)
            b = '/';
        if (b >= 0x80 || b == ' ')
            wr_pct(&w, b);
        else
            wr_c(&w, (char)b);
    }
    if (w.over)
        return URL_REJ_TOO_LONG;
    c->pbuf[w.len] = '\0';
    *op = c->pbuf;
    *on = w.len;
    return URL_OK;
}

/* Kind of reference; for K_ABS the scheme, and for K_ABS / K_NET the offset
 * where the authority starts. */
static url_reject classify(const url_canon *c, const char *p, size_t n, int *kind,
                           int *scheme, size_t *auth)
{
    size_t i = 0;
    if (n > 0 && (unsigned)((p[0] | 0x20) - 'a') < 26) {
        while (i < n && (c->cls[(unsigned char)p[i]] & C_SCHEME))
            i++;
        if (i == n || p[i] != ':')
            i = 0;
    }
    if (i > 0) {
        if (i == 4 && ieq(p, "http", 4))
            *scheme = 0;
        else if (i == 5 && ieq(p, "https", 5))
            *scheme = 1;
        else
            return URL_REJ_SCHEME;
        if (n - i < 3 || p[i + 1] != '/' || p[i + 2] != '/')
            return URL_REJ_NO_HOST;
        *kind = K_ABS;
        *auth = i + 3;
    } else if (n >= 2 && p[0] == '/' && p[1] == '/') {
        *kind = K_NET;
        *auth = 2;
    } else if (n == 0) {
        *kind = K_EMPTY;
        return URL_OK;
    } else if (p[0] == '/') {
        *kind = K_PATH_ABS;
        return URL_OK;
    } else if (p[0] == '?') {
        *kind = K_QUERY;
        return URL_OK;
    } else {
        /* RFC 3986 4.2: a relative path's first segment has no ':' */
        for (size_t k = 0; k < n && p[k] != '/' && p[k] != '?'; k++)
            if (p[k] == ':')
                return URL_REJ_UNPARSABLE;
        *kind = K_PATH_REL;
        return URL_OK;
    }
    if (*auth == n || p[*auth] == '/' || p[*auth] == '?')
        return URL_REJ_NO_HOST;
    return URL_OK;
}

/* ---- the fast path ----------------------------------------------------- */

static bool dotted_quad(const char *h, size_t n)
{
    int parts = 0;
    size_t i = 0;
    while (i <= n) {
        size_t s = i;
        unsigned v = 0;
        while (i < n && h[i] >= '0' && h[i] <= '9' && i - s < 3) {
            v = v * 10 + (unsigned)(h[i] - '0');
            i++;
        }
        size_t l = i - s;
        if (l == 0 || v > 255 || (l > 1 && h[s] == '0'))
            return false;
        parts++;
        if (i == n)
            break;
        if (h[i] != '.')
            return false;
        i++;
    }
    return parts == 4;
}

/* Could curl read this host as an IPv4 address in some form and rewrite it?
 * True when its last label starts with a digit, unless it is already a
 * canonical dotted quad. */
static bool numeric_host(const url_canon *c, const char *h, size_t n)
{
    size_t e = n;
    while (e > 0 && h[e - 1] == '.')
        e--;
    if (e == 0)
        return false;
    size_t s = e;
    while (s > 0 && h[s - 1] != '.')
        s--;
    return (c->cls[(unsigned char)h[s]] & C_DIGIT) && !(e == n && dotted_quad(h, n));
}

/* Plain ASCII host [A-Za-z0-9._-] and an optional port without leading
 * zeros in 1..65535. Declines (false) userinfo, IPv6, escapes, anything
 * curl might rewrite: a host whose last label starts with a digit is taken
 * only as a canonical dotted quad. Writes the canonical authority. */
static bool fast_auth(const url_canon *c, int scheme, const char *a, size_t n, wr *w)
{
    size_t colon = n;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)a[i];
        if (colon == n) {
            if (b == ':')
                colon = i;
            else if (!(c->cls[b] & C_HOSTF))
                return false;
        } else if (!(c->cls[b] & C_DIGIT)) {
            return false;
        }
    }
    if (colon == 0 || colon > MAX_HOST || numeric_host(c, a, colon))
        return false;
    unsigned port = 0;
    if (colon < n) {
        size_t pl = n - colon - 1;
        if (pl == 0 || pl > 5 || a[colon + 1] == '0')
            return false;
        for (size_t i = colon + 1; i < n; i++)
            port = port * 10 + (unsigned)(a[i] - '0');
        if (port > 65535)
            return false;
    }
    if (w->cap - w->len < colon) {
        w->over = true;
        return true;
    }
    for (size_t i = 0; i < colon; i++)
        w->p[w->len + i] = (char)lower((unsigned char)a[i]);
    w->len += colon;
    if (port != 0 && port != default_port[scheme])
        wr_put(w, a + colon, n - colon);
    return true;
}

/* path (starts with '/' or is empty) with literal dot segments removed (into
 * dbuf when there are any); returns the span to use */
static void fast_path_dots(url_canon *c, const char *path, size_t plen, const char **op,
                           size_t *on)
{
    if (plen == 0) {
        *op = "/";
        *on = 1;
        return;
    }
    if (!has_dot_segment(path, plen)) {
        *op = path;
        *on = plen;
        return;
    }
    wr w = { c->dbuf, 0, c->wcap, false };
    remove_dots(&w, path, plen);
    *op = c->dbuf;
    *on = w.len; /* cannot overflow: never longer than the input */
}

/* Returns 1 when handled (*why set), 0 when declined. */
static int fast_resolve(url_canon *c, int kind, int scheme, size_t auth_off, const char *p,
                        size_t n, url_reject *why, size_t *olen)
{
    const char *auth;
    size_t alen;
    size_t ps; /* start of the reference's path */
    wr aw = { c->abuf, 0, c->wcap, false };
    if (kind == K_ABS || kind == K_NET) {
        if (kind == K_NET)
            scheme = c->bscheme;
        size_t ae = auth_off;
        while (ae < n && p[ae] != '/' && p[ae] != '?')
            ae++;
        if (!fast_auth(c, scheme, p + auth_off, ae - auth_off, &aw))
            return 0;
        if (aw.over) {
            *why = URL_REJ_TOO_LONG;
            return 1;
        }
        auth = aw.p;
        alen = aw.len;
        ps = ae;
    } else {
        scheme = c->bscheme;
        auth = c->bcanon + c->bauth_off;
        alen = c->bauth_len;
        ps = 0;
    }
    const char *qm = memchr(p + ps, '?', n - ps);
    size_t pe = qm ? (size_t)(qm - p) : n;
    const char *q = qm ? qm + 1 : NULL;
    size_t qlen = qm ? n - pe - 1 : 0;
    const char *path;
    size_t plen;
    if (kind == K_QUERY) {
        path = c->bcanon + c->bpath_off;
        plen = c->bpath_len;
    } else {
        const char *rp = p + ps;
        size_t rl = pe - ps;
        if (kind == K_PATH_REL) {
            /* RFC 3986 5.2.3 merge: base path up to its last '/', then ours */
            const char *bp = c->bcanon + c->bpath_off;
            size_t keep = c->bpath_len;
            while (keep > 0 && bp[keep - 1] != '/')
                keep--;
            if (keep + pe > c->wcap) {
                *why = URL_REJ_TOO_LONG;
                return 1;
            }
            memcpy(c->mbuf, bp, keep);
            memcpy(c->mbuf + keep, p, pe);
            rp = c->mbuf;
            rl = keep + pe;
        }
        fast_path_dots(c, rp, rl, &path, &plen);
    }
    *why = finish(c, scheme, auth, alen, path, plen, q, qlen, olen);
    return 1;
}

/* ---- the curl path ----------------------------------------------------- */

/* strict UTF-8; returns bytes used or 0 */
static size_t utf8_dec(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t len;
    uint32_t v, min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
        len = 2, v = b & 0x1f, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3, v = b & 0x0f, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4, v = b & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

static uint32_t puny_adapt(uint32_t delta, uint32_t numpoints, bool first)
{
    delta = first ? delta / 700 : delta / 2;
    delta += delta / numpoints;
    uint32_t k = 0;
    while (delta > ((36 - 1) * 26) / 2) {
        delta /= 36 - 1;
        k += 36;
    }
    return k + (36 * delta) / (delta + 38);
}

static char puny_digit(uint32_t d)
{
    return (char)(d < 26 ? 'a' + d : '0' + (d - 26));
}

/* RFC 3492 encoder for one label of code points (ASCII already lower-cased);
 * writes the "xn--" form. false on overflow of the arithmetic. */
static bool punycode(const uint32_t *cp, size_t n, wr *w)
{
    uint32_t next = 128, delta = 0, bias = 72, h, b = 0;
    wr_put(w, "xn--", 4);
    for (size_t i = 0; i < n; i++)
        if (cp[i] < 0x80) {
            wr_c(w, (char)cp[i]);
            b++;
        }
    h = b;
    if (b > 0)
        wr_c(w, '-');
    while (h < n) {
        uint32_t m = UINT32_MAX;
        for (size_t i = 0; i < n; i++)
            if (cp[i] >= next && cp[i] < m)
                m = cp[i];
        if (m - next > (UINT32_MAX - delta) / (h + 1))
            return false;
        delta += (m - next) * (h + 1);
        next = m;
        for (size_t i = 0; i < n; i++) {
            if (cp[i] < next && ++delta == 0)
                return false;
            if (cp[i] != next)
                continue;
            uint32_t q = delta;
            for (uint32_t k = 36;; k += 36) {
                uint32_t t = k <= bias ? 1 : (k >= bias + 26 ? 26 : k - bias);
                if (q < t)
                    break;
                wr_c(w, puny_digit(t + (q - t) % (36 - t)));
                q = (q - t) / (36 - t);
            }
            wr_c(w, puny_digit(q));
            bias = puny_adapt(delta, h + 1, h == b);
            delta = 0;
            h++;
        }
        delta++;
        next++;
    }
    return true;
}

/* Host as curl returns it (escapes decoded, IPv4 forms normalized): lower-
 * cased; non-ASCII labels to punycode; IPv6 kept in brackets. */
static url_reject host_norm(const url_canon *c, wr *w, const char *h, size_t n)
{
    if (n == 0)
        return URL_REJ_NO_HOST;
    if (n > MAX_HOST)
        return URL_REJ_BAD_HOST;
    if (h[0] == '[') {
        if (n < 3 || h[n - 1] != ']')
            return URL_REJ_BAD_HOST;
        for (size_t i = 1; i + 1 < n; i++) {
            unsigned char b = (unsigned char)h[i];
            if (!(c->cls[b] & C_HEX) && b != ':' && b != '.')
                return URL_REJ_BAD_HOST;
        }
        for (size_t i = 0; i < n; i++)
            wr_c(w, (char)lower((unsigned char)h[i]));
        return URL_OK;
    }
    size_t start = w->len;
    uint32_t cps[MAX_HOST];
    size_t i = 0;
    bool more = true;
    while (more) {
        /* one label: code points up to '.' or an IDNA full stop */
        size_t k = 0;
        bool ascii = true;
        more = false;
        while (i < n) {
            uint32_t cp;
            size_t used = utf8_dec((const unsigned char *)h + i, n - i, &cp);
            if (used == 0)
                return URL_REJ_BAD_HOST;
            i += used;
            if (cp == '.' || cp == 0x3002 || cp == 0xff0e || cp == 0xff61) {
                more = true;
                break;
            }
            if (cp < 0x80) {
                if (!(c->cls[cp] & C_UNRES))
                    return URL_REJ_BAD_HOST;
                cp = lower((unsigned char)cp);
            } else if (cp < 0xa0) {
                return URL_REJ_BAD_HOST; /* C1 controls */
            } else {
                ascii = false;
            }
            cps[k++] = cp;
        }
        if (ascii) {
            for (size_t j = 0; j < k; j++)
                wr_c(w, (char)cps[j]);
        } else {
            size_t ls = w->len;
            if (!punycode(cps, k, w) || w->len - ls > 63)
                return URL_REJ_BAD_HOST;
        }
        if (more)
            wr_c(w, '.');
    }
    if (w->len - start > MAX_HOST)
        return URL_REJ_BAD_HOST;
    return URL_OK;
}

static url_reject curl_reason(CURLUcode rc)
{
    switch (rc) {
    case CURLUE_BAD_PORT_NUMBER:
        return URL_REJ_BAD_PORT;
    case CURLUE_NO_HOST:
        return URL_REJ_NO_HOST;
    case CURLUE_BAD_HOSTNAME:
    case CURLUE_BAD_IPV6:
    case CURLUE_LACKS_IDN:
        return URL_REJ_BAD_HOST;
    case CURLUE_UNSUPPORTED_SCHEME:
    case CURLUE_BAD_SCHEME:
        return URL_REJ_SCHEME;
    default:
        return URL_REJ_UNPARSABLE;
    }
}

/* libcurl 7.88's relative-path resolution (concat_url) departs from RFC
 * 3986 5.2 in two cases, where we do the 5.2.3 merge ourselves and hand curl
 * the absolute URL: (1) it skips one leading "./" and any "../" itself and
 * joins the rest without a '/' when the rest starts with '/' or '?' (".//x"
 * against /b/c/d gives /b/c/x, not /b/c//x; "./?x" gives /b/c?x); (2) it
 * drops an empty first segment of the base path ("x" against //b gives /x,
 * not //x). True when the reference, against this base, is one of those. */
static bool curl_merge_bug(const url_canon *c, const char *r)
{
    if (c->bpath_len >= 2 && c->bcanon[c->bpath_off + 1] == '/')
        return true;
    if (r[0] == '.' && r[1] == '/')
        r += 2;
    while (r[0] == '.' && r[1] == '.' && r[2] == '/')
        r += 3;
    return r[0] == '/' || r[0] == '?';
}

enum { P_SCHEME, P_USER, P_PASSWORD, P_HOST, P_ZONEID, P_PORT, P_PATH, P_QUERY, P_N };

static int curl_resolve(url_canon *c, int kind, const char *p, size_t n, url_reject *why,
                        size_t *olen)
{
    static const CURLUPart part[P_N] = {
        CURLUPART_SCHEME, CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_HOST,
        CURLUPART_ZONEID, CURLUPART_PORT, CURLUPART_PATH, CURLUPART_QUERY
    };
    char *v[P_N] = { NULL };
    int ret = 0;
    int scheme;
    CURLUcode rc;
    wr w = { c->abuf, 0, c->wcap, false };
    c->used_curl = true;
    if (p != c->pbuf) {
        memcpy(c->pbuf, p, n);
        c->pbuf[n] = '\0';
    }
    if (kind == K_PATH_REL && curl_merge_bug(c, c->pbuf)) {
        /* base up to and including the last '/' of its path, then ours */
        size_t keep = c->bpath_off + c->bpath_len;
        while (c->bcanon[keep - 1] != '/')
            keep--;
        if (keep + n > c->wcap) {
            *why = URL_REJ_TOO_LONG;
            goto out;
        }
        memmove(c->pbuf + keep, c->pbuf, n + 1);
        memcpy(c->pbuf, c->bcanon, keep);
        kind = K_ABS;
    }
    if (kind == K_ABS) {
        rc = curl_url_set(c->h, CURLUPART_URL, c->pbuf, 0);
    } else {
        rc = curl_url_set(c->h, CURLUPART_URL, c->bcanon, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_set(c->h, CURLUPART_URL, c->pbuf, 0);
    }
    if (rc != CURLUE_OK)
        goto curl_fail;
    for (int i = 0; i < P_N; i++) {
        rc = curl_url_get(c->h, part[i], &v[i], i == P_PORT ? CURLU_NO_DEFAULT_PORT : 0);
        if (rc == CURLUE_OUT_OF_MEMORY)
            goto curl_fail;
        if (rc != CURLUE_OK)
            v[i] = NULL;
    }
    if (v[P_SCHEME] && strcmp(v[P_SCHEME], "http") == 0) {
        scheme = 0;
    } else if (v[P_SCHEME] && strcmp(v[P_SCHEME], "https") == 0) {
        scheme = 1;
    } else {
        *why = URL_REJ_SCHEME;
        goto out;
    }
    if (v[P_HOST] == NULL) {
        *why = URL_REJ_NO_HOST;
        goto out;
    }
    if (v[P_ZONEID] != NULL) {
        *why = URL_REJ_BAD_HOST;
        goto out;
    }
    if (v[P_PATH] == NULL) {
        *why = URL_REJ_UNPARSABLE;
        goto out;
    }
    bool user = v[P_USER] && v[P_USER][0];
    bool pass = v[P_PASSWORD] && v[P_PASSWORD][0];
    if (user || pass) {
        if (user)
            pct_norm(c, &w, v[P_USER], strlen(v[P_USER]), C_USER);
        if (pass) {
            wr_c(&w, ':');
            pct_norm(c, &w, v[P_PASSWORD], strlen(v[P_PASSWORD]), C_USER);
        }
        wr_c(&w, '@');
    }
    size_t hstart = w.len;
    *why = host_norm(c, &w, v[P_HOST], strlen(v[P_HOST]));
    if (*why != URL_OK)
        goto out;
    if (!w.over && numeric_host(c, w.p + hstart, w.len - hstart)) {
        /* curl reads IPv4 forms before it decodes escapes in the host, so
         * "%327.1" stays "27.1" while "27.1" becomes 27.0.0.1: let curl
         * look at the decoded host once more so the result is a fixed point */
        int len = snprintf(c->pbuf, c->wcap, "http://%.*s/", (int)(w.len - hstart), w.p + hstart);
        char *h2 = NULL;
        rc = curl_url_set(c->h, CURLUPART_URL, c->pbuf, 0);
        if (rc == CURLUE_OK)
            rc = curl_url_get(c->h, CURLUPART_HOST, &h2, 0);
        if (rc != CURLUE_OK || len < 0) {
            curl_free(h2);
            goto curl_fail;
        }
        w.len = hstart;
        *why = host_norm(c, &w, h2, strlen(h2));
        curl_free(h2);
        if (*why != URL_OK)
            goto out;
    }
    if (v[P_PORT] != NULL) {
        if (strcmp(v[P_PORT], "0") == 0) {
            *why = URL_REJ_BAD_PORT;
            goto out;
        }
        wr_c(&w, ':');
        wr_put(&w, v[P_PORT], strlen(v[P_PORT]));
    }
    if (w.over) {
        *why = URL_REJ_TOO_LONG;
        goto out;
    }
    *why = finish(c, scheme, w.p, w.len, v[P_PATH], strlen(v[P_PATH]), v[P_QUERY],
                  v[P_QUERY] ? strlen(v[P_QUERY]) : 0, olen);
    goto out;
curl_fail:
    if (rc == CURLUE_OUT_OF_MEMORY)
        ret = -ENOMEM;
    else
        *why = curl_reason(rc);
out:
    for (int i = P_N - 1; i >= 0; i--)
        curl_free(v[i]);
    return ret;
}

/* ---- resolution -------------------------------------------------------- */

static int resolve(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                   url_reject *why, size_t *olen);

/* Canonicalizes a new base into the cache (or finds it there). */
static int base_get(url_canon *c, const char *base, size_t blen)
{
    if (c->bset && blen == c->braw_len && memcmp(base, c->braw, blen) == 0)
        return 0;
    c->bset = false;
    size_t olen = 0;
    url_reject why = URL_OK;
    int r = resolve(c, NULL, 0, base, blen, &why, &olen);
    if (r != 0)
        return r;
    c->bwhy = why;
    if (why == URL_OK) {
        memcpy(c->bcanon, c->obuf, olen + 1);
        c->bcanon_len = olen;
        c->bscheme = c->bcanon[4] == 's';
        c->bauth_off = scheme_len[c->bscheme];
        const char *slash = memchr(c->bcanon + c->bauth_off, '/', olen - c->bauth_off);
        c->bpath_off = (size_t)(slash - c->bcanon);
        c->bauth_len = c->bpath_off - c->bauth_off;
        const char *qm = memchr(slash, '?', olen - c->bpath_off);
        c->bquery_off = qm ? (size_t)(qm - c->bcanon) : olen;
        c->bpath_len = c->bquery_off - c->bpath_off;
    }
    if (blen <= c->max) {
        memcpy(c->braw, base, blen);
        c->braw_len = blen;
        c->bset = true;
    }
    return 0;
}

/* Result in c->obuf[0..*olen) when *why is URL_OK. 0 or -ENOMEM. */
static int resolve(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                   url_reject *why, size_t *olen)
{
    if (base != NULL) {
        int r = base_get(c, base, blen);
        if (r != 0)
            return r;
    }
    c->used_curl = false;
    const char *p;
    size_t n;
    int kind = K_EMPTY, scheme = 0;
    size_t auth = 0;
    *why = prep(c, ref, rlen, &p, &n);
    if (*why != URL_OK)
        return 0;
    *why = classify(c, p, n, &kind, &scheme, &auth);
    if (*why != URL_OK)
        return 0;
    if (kind != K_ABS) {
        if (base == NULL) {
            *why = kind == K_EMPTY ? URL_REJ_EMPTY : URL_REJ_NO_BASE;
            return 0;
        }
        if (c->bwhy != URL_OK) {
            *why = URL_REJ_BAD_BASE;
            return 0;
        }
        if (kind == K_EMPTY) {
            memcpy(c->obuf, c->bcanon, c->bcanon_len + 1);
            *olen = c->bcanon_len;
            return 0;
        }
    }
    if (!c->curl_only && fast_resolve(c, kind, scheme, auth, p, n, why, olen))
        return 0;
    return curl_resolve(c, kind, p, n, why, olen);
}

/* ---- public API -------------------------------------------------------- */

void url_policy_defaults(url_policy *p)
{
    memset(p, 0, sizeof *p);
    p->max_url_bytes = DEFAULT_MAX_URL;
    p->strip_params = default_strip;
    p->n_strip_params = sizeof default_strip / sizeof default_strip[0];
    p->strip_session_ids = true;
    p->sort_query = true;
    p->curl_only = false;
}

void url_canon_free(url_canon *c)
{
    if (c == NULL)
        return;
    if (c->strip != NULL) {
        for (size_t i = 0; i < c->nstrip; i++)
            cr_free(c->strip[i]);
        cr_free(c->strip);
    }
    cr_free(c->striplen);
    cr_free(c->bcanon);
    cr_free(c->braw);
    cr_free(c->ptmp);
    cr_free(c->params);
    cr_free(c->obuf);
    cr_free(c->abuf);
    cr_free(c->qbuf);
    cr_free(c->nbuf);
    cr_free(c->dbuf);
    cr_free(c->mbuf);
    cr_free(c->pbuf);
    if (c->h != NULL)
        curl_url_cleanup(c->h);
    cr_free(c);
}

url_canon *url_canon_new(const url_policy *pol)
{
    url_policy def;
    if (pol == NULL) {
        url_policy_defaults(&def);
        pol = &def;
    }
    url_canon *c = cr_calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    size_t max = pol->max_url_bytes ? pol->max_url_bytes : DEFAULT_MAX_URL;
    if (max < MIN_MAX_URL)
        max = MIN_MAX_URL;
    if (max > MAX_MAX_URL)
        max = MAX_MAX_URL;
    c->max = max;
    /* the prepared reference is at most 3 max (every byte escaped), a merged
     * path adds the base, and percent-normalization can triple it again */
    c->wcap = 12 * max + 64;
    c->nparams = max / 2 + 8;
    c->strip_sess = pol->strip_session_ids;
    c->sort = pol->sort_query;
    c->curl_only = pol->curl_only;
    cls_init(c->cls);
    c->h = curl_url();
    if (c->h == NULL)
        goto fail;
    c->pbuf = cr_malloc(c->wcap + 1);
    c->mbuf = cr_malloc(c->wcap + 1);
    c->dbuf = cr_malloc(c->wcap + 1);
    c->nbuf = cr_malloc(c->wcap + 1);
    c->qbuf = cr_malloc(c->wcap + 1);
    c->abuf = cr_malloc(c->wcap + 1);
    c->obuf = cr_malloc(max + 1);
    c->braw = cr_malloc(max + 1);
    c->bcanon = cr_malloc(max + 1);
    c->params = cr_malloc(c->nparams * sizeof *c->params);
    c->ptmp = cr_malloc(c->nparams * sizeof *c->ptmp);
    if (!c->pbuf || !c->mbuf || !c->dbuf || !c->nbuf || !c->qbuf || !c->abuf || !c->obuf || !c->braw ||
        !c->bcanon || !c->params || !c->ptmp)
        goto fail;
    if (pol->strip_params != NULL && pol->n_strip_params > 0) {
        c->strip = cr_calloc(pol->n_strip_params, sizeof *c->strip);
        c->striplen = cr_calloc(pol->n_strip_params, sizeof *c->striplen);
        if (c->strip == NULL || c->striplen == NULL)
            goto fail;
        for (size_t i = 0; i < pol->n_strip_params; i++) {
            c->strip[i] = cr_strdup(pol->strip_params[i]);
            if (c->strip[i] == NULL)
                goto fail;
            c->nstrip = i + 1;
            c->striplen[i] = strlen(c->strip[i]);
            for (size_t k = 0; k < c->striplen[i]; k++)
                c->strip[i][k] = (char)lower((unsigned char)c->strip[i][k]);
        }
    }
    c->bwhy = URL_REJ_BAD_BASE;
    return c;
fail:
    url_canon_free(c);
    return NULL;
}

int url_canon_resolve(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                      cr_buf *out, url_reject *why)
{
    size_t olen = 0;
    *why = URL_OK;
    cr_buf_clear(out);
    int r = resolve(c, base, blen, ref, rlen, why, &olen);
    if (r != 0)
        return r;
    if (*why == URL_OK) {
        r = cr_buf_append(out, c->obuf, olen);
        if (r == -E2BIG) {
            *why = URL_REJ_TOO_LONG;
        } else if (r != 0) {
            cr_buf_clear(out);
            return r;
        }
    }
    if (*why != URL_OK) {
        c->st.rejected++;
        return -EINVAL;
    }
    if (c->used_curl)
        c->st.curl++;
    else
        c->st.fast++;
    return 0;
}

void url_canon_get_stats(const url_canon *c, url_canon_stats *s)
{
    *s = c->st;
}

int url_host(const char *u, size_t n, size_t *off, size_t *hlen)
{
    size_t s;
    if (n >= 7 && memcmp(u, "http://", 7) == 0)
        s = 7;
    else if (n >= 8 && memcmp(u, "https://", 8) == 0)
        s = 8;
    else
        return -EINVAL;
    size_t e = s;
    while (e < n && u[e] != '/' && u[e] != '?' && u[e] != '#')
        e++;
    for (size_t i = e; i > s; i--) {
        if (u[i - 1] == '@') {
            s = i;
            break;
        }
    }
    size_t he = s;
    if (s < e && u[s] == '[') {
        while (he < e && u[he] != ']')
            he++;
        if (he == e)
            return -EINVAL;
        he++;
    } else {
        while (he < e && u[he] != ':')
            he++;
    }
    if (he == s)
        return -EINVAL;
    *off = s;
    *hlen = he - s;
    return 0;
}

const char *url_reject_str(url_reject r)
{
    switch (r) {
    case URL_OK:
        return "ok";
    case URL_REJ_EMPTY:
        return "empty URL";
    case URL_REJ_TOO_LONG:
        return "URL too long";
    case URL_REJ_CONTROL:
        return "control character in URL";
    case URL_REJ_SCHEME:
        return "scheme is not http(s)";
    case URL_REJ_NO_BASE:
        return "relative URL without a base";
    case URL_REJ_BAD_BASE:
        return "base URL rejected";
    case URL_REJ_NO_HOST:
        return "missing or empty host";
    case URL_REJ_BAD_HOST:
        return "bad host";
    case URL_REJ_BAD_PORT:
        return "bad port";
    case URL_REJ_UNPARSABLE:
        return "unparsable URL";
    }
    return "unknown reason";
}
