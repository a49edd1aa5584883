/* crawler/url: the WHATWG URL parser for http(s), and the key (see url.h).
 *
 * One pass of a state machine over the reference writes the serialised
 * fetch form straight into a fixed buffer; it is the standard's basic URL
 * parser restricted to what an http(s) result can come from:
 *
 *   prep       trim C0/space at both ends; drop tab/LF/CR; cut at the first
 *              '#' (everything after it is the fragment in every state)
 *   scheme     "http:" / "https:", another scheme (rejected), or none
 *   relative   with a base of the same scheme: a path, a query, nothing
 *              (the base minus its fragment), or "//" (any mix of / and \)
 *   authority  userinfo up to the last '@', host, port
 *   host       IPv6 in brackets; else percent-decode, UTS #46 per label
 *              (libidn2, only for labels that are not plain ASCII or that
 *              start with "xn--"), the forbidden code point check, then
 *              IPv4 when the last label is a number
 *   path       segments split at '/' and '\', written as they are parsed:
 *              "." and ".." (also %2e) rewind the output
 *   query      the special-query percent-encode set
 *
 * A base is parsed by the same machine once and cached (two entries: a
 * page's URL and its <base href>); relative references copy spans of it.
 * The key is built afterwards from the fetch form's spans (userinfo, host
 * and port as they are, then the path and query normalized and filtered),
 * so it is a function of the fetch form alone.
 *
 * All scratch space is allocated by url_canon_new and sized from
 * max_url_bytes; parsing allocates nothing of ours (libidn2 allocates its
 * result for the rare label it converts). A url_canon belongs to one
 * thread. */
#include "crawler/web/url.h"

#include <errno.h>
#include <idn2.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"

#define DEFAULT_MAX_URL 2048
#define MAX_LABEL 63   /* DNS: bytes of one label */
#define MAX_NAME 253   /* DNS: bytes of a name, without a trailing dot */
#define IDNA_FLAGS (IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT)

/* character classes */
enum {
    C_UNRES = 1 << 0,   /* ALPHA DIGIT - . _ ~ */
    C_KPATH = 1 << 1,   /* literal in a key's path: unreserved, sub-delims, : @ / */
    C_KQUERY = 1 << 2,  /* literal in a key's query: the path set but ', and ? */
    C_KUSER = 1 << 3,   /* literal in a key's userinfo: unreserved, sub-delims */
    C_HEX = 1 << 4,
    C_SCHEME = 1 << 5,  /* ALPHA DIGIT + - . */
    C_DIGIT = 1 << 6,
    C_ALPHA = 1 << 7,
    C_PREP = 1 << 8,    /* prep must look: tab, LF, CR, '#' */
    C_PSTOP = 1 << 9,   /* the path percent-encode set, '/' and '\' */
    C_QENC = 1 << 10,   /* the special-query percent-encode set */
    C_UENC = 1 << 11,   /* the userinfo percent-encode set */
    C_AEND = 1 << 12,   /* ends the authority: / \ ? */
    C_HOSTOK = 1 << 13, /* host bytes we accept: ALPHA DIGIT - . _ ~ */
    C_AUTHX = 1 << 14,  /* needs a look in the authority: @ : [ */
    C_KPLAIN = 1 << 15  /* key: a path byte kept as it is (C_KPATH but '%' ';') */
};

/* Spans of a serialised URL (no fragment): the userinfo is
 * [scheme_len + 3, host_off) with its '@', the port [host_end, path_off)
 * with its ':', the query [query_off, len) with its '?'. */
typedef struct parts {
    int scheme;       /* 0 http, 1 https */
    size_t host_off, host_end, path_off, query_off, len;
} parts;

typedef struct base_rec {
    char *raw;        /* the base as given */
    size_t raw_len;
    bool used;
    uint64_t tick;    /* last use, for the choice of the slot to replace */
    url_reject why;   /* URL_OK: href and p hold its fetch form */
    char *href;
    parts p;
} base_rec;

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
    size_t max;       /* max_url_bytes */
    size_t wcap;      /* capacity of the key's work buffers */
    char *pbuf;       /* prepared reference (tab/LF/CR removed) */
    char *fbuf;       /* the fetch form */
    char *kbuf;       /* the key */
    char *nbuf;       /* key: percent-normalized path */
    char *qbuf;       /* key: percent-normalized query */
    char *hbuf;       /* host: percent-decoded */
    char *abuf;       /* host: after IDNA */
    char *lbuf;       /* host: one label for libidn2, NUL-terminated */
    qparam *params;
    qparam *ptmp;
    size_t nparams;   /* capacity of params and ptmp */
    base_rec bases[2];
    uint64_t tick;
    bool oom;         /* libidn2 ran out of memory during this call */
    /* policy */
    char **strip;     /* lower-cased patterns */
    size_t *striplen;
    size_t nstrip;
    bool strip_sess;
    bool sort;
    url_canon_stats st;
    uint32_t cls[256];
};

static const char *const default_strip[] = { "utm_*", "fbclid", "gclid" };
static const char hexu[] = "0123456789ABCDEF";
static const char hexl[] = "0123456789abcdef";
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

static void wr_uint(wr *w, unsigned v)
{
    char d[12];
    int n = snprintf(d, sizeof d, "%u", v);
    wr_put(w, d, (size_t)n);
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

static bool in_set(const char *set, int b)
{
    return b != 0 && strchr(set, b) != NULL;
}

static void cls_init(uint32_t *cls)
{
    memset(cls, 0, 256 * sizeof *cls);
    for (int b = 0; b < 256; b++) {
        bool alpha = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
        bool digit = b >= '0' && b <= '9';
        bool c0 = b < 0x20 || b > 0x7e; /* the C0 control percent-encode set */
        bool query = c0 || in_set(" \"#<>", b);
        bool path = query || in_set("?`{}", b);
        if (alpha || digit || b == '-' || b == '.' || b == '_' || b == '~')
            cls[b] |= C_UNRES | C_HOSTOK;
        if (alpha || digit || b == '+' || b == '-' || b == '.')
            cls[b] |= C_SCHEME;
        if (digit || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F'))
            cls[b] |= C_HEX;
        if (digit)
            cls[b] |= C_DIGIT;
        if (alpha)
            cls[b] |= C_ALPHA;
        if (in_set("\t\n\r#", b))
            cls[b] |= C_PREP;
        if (path || b == '/' || b == '\\')
            cls[b] |= C_PSTOP;
        if (query || b == '\'')
            cls[b] |= C_QENC;
        if (path || in_set("/:;=@[\\]^|", b))
            cls[b] |= C_UENC;
        if (in_set("/\\?", b))
            cls[b] |= C_AEND;
        if (in_set("@:[", b))
            cls[b] |= C_AUTHX;
    }
    for (int b = 0; b < 256; b++)
        if (cls[b] & C_UNRES)
            cls[b] |= C_KPATH | C_KQUERY | C_KUSER;
    for (const char *s = "!$&'()*+,;="; *s; s++)
        cls[(unsigned char)*s] |= C_KPATH | C_KQUERY | C_KUSER;
    for (const char *s = ":@/?"; *s; s++)
        cls[(unsigned char)*s] |= C_KPATH | C_KQUERY;
    cls['?'] &= ~(uint32_t)C_KPATH;
    cls['\''] &= ~(uint32_t)C_KQUERY; /* the fetch form's query has it escaped */
    for (int b = 0; b < 256; b++)
        if ((cls[b] & C_KPATH) && b != ';')
            cls[b] |= C_KPLAIN;
}

/* Appends s[0..n) with the bytes in `mask` percent-encoded. */
static void put_enc(const url_canon *c, wr *w, const char *s, size_t n, uint32_t mask)
{
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && !(c->cls[(unsigned char)s[run]] & mask))
            run++;
        wr_put(w, s + i, run - i);
        if (run == n)
            break;
        wr_pct(w, (unsigned char)s[run]);
        i = run + 1;
    }
}

/* ---- hosts ------------------------------------------------------------- */

/* The IPv4 number parser: decimal, 0x hex, 0 octal; "0x" alone is 0. Values
 * over 2^32 saturate there (every such value fails later). */
static bool ipv4_number(const char *s, size_t n, uint64_t *v)
{
    unsigned radix = 10;
    if (n == 0)
        return false;
    if (n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x') {
        radix = 16;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        radix = 8;
        s++;
        n--;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        unsigned d;
        if (b >= '0' && b <= '9')
            d = b - '0';
        else if (radix == 16 && (b | 0x20) >= 'a' && (b | 0x20) <= 'f')
            d = (unsigned)((b | 0x20) - 'a' + 10);
        else
            return false;
        if (d >= radix)
            return false;
        x = x * radix + d;
        if (x > (1ull << 32))
            x = 1ull << 32;
    }
    *v = x;
    return true;
}

/* The last label, less one trailing dot: [*s, *e). False when there is
 * none (a host that is only ".", or empty). */
static bool last_label(const char *h, size_t n, size_t *s, size_t *e)
{
    size_t end = n;
    if (end > 0 && h[end - 1] == '.')
        end--;
    if (end == 0)
        return false;
    size_t st = end;
    while (st > 0 && h[st - 1] != '.')
        st--;
    *s = st;
    *e = end;
    return true;
}

/* The standard's "ends in a number" test of an ASCII domain. */
static bool ends_in_number(const url_canon *c, const char *h, size_t n)
{
    size_t s, e;
    uint64_t v;
    if (!last_label(h, n, &s, &e) || s == e)
        return false;
    size_t i = s;
    while (i < e && (c->cls[(unsigned char)h[i]] & C_DIGIT))
        i++;
    return i == e || ipv4_number(h + s, e - s, &v);
}

static url_reject ipv4_parse(const char *h, size_t n, wr *w)
{
    size_t e = n;
    if (e > 0 && h[e - 1] == '.')
        e--;
    uint64_t num[4];
    int np = 0;
    size_t s = 0;
    for (;;) {
        size_t d = s;
        while (d < e && h[d] != '.')
            d++;
        if (np == 4 || !ipv4_number(h + s, d - s, &num[np]))
            return URL_REJ_BAD_IPV4;
        np++;
        if (d >= e)
            break;
        s = d + 1;
    }
    for (int i = 0; i + 1 < np; i++)
        if (num[i] > 255)
            return URL_REJ_BAD_IPV4;
    if (num[np - 1] >= (1ull << (8 * (5 - np))))
        return URL_REJ_BAD_IPV4;
    uint64_t v = num[np - 1];
    for (int i = 0; i + 1 < np; i++)
        v += num[i] << (8 * (3 - i));
    char out[16];
    int len = snprintf(out, sizeof out, "%u.%u.%u.%u", (unsigned)(v >> 24) & 255,
                       (unsigned)(v >> 16) & 255, (unsigned)(v >> 8) & 255, (unsigned)v & 255);
    wr_put(w, out, (size_t)len);
    return URL_OK;
}

/* The standard's IPv6 parser over s[0..n) (inside the brackets), then its
 * serialiser: lower-case hex, the first longest run of two or more zero
 * pieces compressed, embedded IPv4 written as hex. */
static url_reject ipv6_host(const url_canon *c, const char *s, size_t n, wr *w)
{
    uint16_t a[8] = { 0 };
    int piece = 0, compress = -1;
    size_t i = 0;
    if (i < n && s[i] == ':') {
        if (i + 1 >= n || s[i + 1] != ':')
            return URL_REJ_BAD_IPV6;
        i += 2;
        compress = ++piece;
    }
    while (i < n) {
        if (piece == 8)
            return URL_REJ_BAD_IPV6;
        if (s[i] == ':') {
            if (compress >= 0)
                return URL_REJ_BAD_IPV6;
            i++;
            compress = ++piece;
            continue;
        }
        unsigned value = 0, len = 0;
        while (len < 4 && i < n && (c->cls[(unsigned char)s[i]] & C_HEX)) {
            value = value * 16 + (unsigned)hexval((unsigned char)s[i]);
            i++;
            len++;
        }
        if (i < n && s[i] == '.') {
            if (len == 0 || piece > 6)
                return URL_REJ_BAD_IPV6;
            i -= len;
            int seen = 0;
            while (i < n) {
                int v4 = -1;
                if (seen > 0) {
                    if (s[i] == '.' && seen < 4)
                        i++;
                    else
                        return URL_REJ_BAD_IPV6;
                }
                if (i >= n || !(c->cls[(unsigned char)s[i]] & C_DIGIT))
                    return URL_REJ_BAD_IPV6;
                while (i < n && (c->cls[(unsigned char)s[i]] & C_DIGIT)) {
                    int d = s[i] - '0';
                    if (v4 < 0)
                        v4 = d;
                    else if (v4 == 0)
                        return URL_REJ_BAD_IPV6;
                    else
                        v4 = v4 * 10 + d;
                    if (v4 > 255)
                        return URL_REJ_BAD_IPV6;
                    i++;
                }
                a[piece] = (uint16_t)(a[piece] * 0x100 + v4);
                seen++;
                if (seen == 2 || seen == 4)
                    piece++;
            }
            if (seen != 4)
                return URL_REJ_BAD_IPV6;
            break;
        } else if (i < n && s[i] == ':') {
            i++;
            if (i == n)
                return URL_REJ_BAD_IPV6;
        } else if (i < n) {
            return URL_REJ_BAD_IPV6;
        }
        a[piece++] = (uint16_t)value;
    }
    if (compress >= 0) {
        int swaps = piece - compress;
        piece = 7;
        while (piece != 0 && swaps > 0) {
            uint16_t t = a[piece];
            a[piece] = a[compress + swaps - 1];
            a[compress + swaps - 1] = t;
            piece--;
            swaps--;
        }
    } else if (piece != 8) {
        return URL_REJ_BAD_IPV6;
    }
    /* serialise */
    int best = -1, best_len = 1;
    for (int k = 0; k < 8;) {
        if (a[k] != 0) {
            k++;
            continue;
        }
        int e = k;
        while (e < 8 && a[e] == 0)
            e++;
        if (e - k > best_len) {
            best = k;
            best_len = e - k;
        }
        k = e;
    }
    wr_c(w, '[');
    for (int k = 0; k < 8; k++) {
        if (k == best) {
            wr_put(w, k == 0 ? "::" : ":", k == 0 ? 2 : 1);
            k += best_len - 1;
            continue;
        }
        char h[4];
        int hl = 0;
        for (int sh = 12; sh >= 0; sh -= 4)
            if ((a[k] >> sh) || hl || sh == 0)
                h[hl++] = hexl[(a[k] >> sh) & 15];
        wr_put(w, h, (size_t)hl);
        if (k != 7)
            wr_c(w, ':');
    }
    wr_c(w, ']');
    return URL_OK;
}

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

static bool is_xn(const char *s, size_t n)
{
    return n >= 4 && (s[0] | 0x20) == 'x' && (s[1] | 0x20) == 'n' && s[2] == '-' && s[3] == '-';
}

/* One label through UTS #46 (libidn2), appended to w. */
static url_reject idna_label(url_canon *c, const char *s, size_t n, wr *w)
{
    memcpy(c->lbuf, s, n);
    c->lbuf[n] = '\0';
    uint8_t *res = NULL;
    int rc = idn2_lookup_u8((const uint8_t *)c->lbuf, &res, IDNA_FLAGS);
    c->st.idna_labels++;
    if (rc != IDN2_OK) {
        idn2_free(res);
        if (rc == IDN2_MALLOC)
            c->oom = true;
        if (rc == IDN2_TOO_BIG_LABEL || rc == IDN2_TOO_BIG_DOMAIN ||
            rc == IDN2_PUNYCODE_BIG_OUTPUT)
            return URL_REJ_HOST_TOO_LONG;
        return URL_REJ_IDNA;
    }
    wr_put(w, (const char *)res, strlen((const char *)res));
    idn2_free(res);
    return URL_OK;
}

/* Domain to ASCII for a host that is not plain ASCII: h[0..n) is percent-
 * decoded, every byte < 0x80 is one we accept; the result goes to abuf. */
static url_reject domain_to_ascii(url_canon *c, const char *h, size_t n, wr *a)
{
    size_t i = 0;
    bool more = true;
    while (more) {
        size_t s = i, e = i;
        bool ascii = true;
        more = false;
        while (i < n) {
            uint32_t cp;
            size_t used = utf8_dec((const unsigned char *)h + i, n - i, &cp);
            if (used == 0)
                return URL_REJ_HOST_CODEPOINT;
            e = i;
            i += used;
            if (cp == '.' || cp == 0x3002 || cp == 0xff0e || cp == 0xff61) {
                more = true;
                break;
            }
            e = i;
            if (cp >= 0x80)
                ascii = false;
        }
        if (ascii && !is_xn(h + s, e - s)) {
            for (size_t k = s; k < e; k++)
                wr_c(a, (char)lower((unsigned char)h[k]));
        } else if (e > s) {
            url_reject r = idna_label(c, h + s, e - s, a);
            if (r != URL_OK)
                return r;
        }
        if (more)
            wr_c(a, '.');
    }
    return URL_OK;
}

/* DNS lengths of an ASCII domain. */
static bool dns_lengths_ok(const char *h, size_t n)
{
    if (n > 0 && h[n - 1] == '.')
        n--;
    if (n > MAX_NAME)
        return false;
    size_t s = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (i - s > MAX_LABEL)
                return false;
            s = i + 1;
        }
    }
    return true;
}

/* The host parser for a special URL: h[0..n) (n > 0) as written. */
static url_reject host_parse(url_canon *c, wr *w, const char *h, size_t n)
{
    if (h[0] == '[') {
        if (n < 2 || h[n - 1] != ']')
            return URL_REJ_BAD_IPV6;
        return ipv6_host(c, h + 1, n - 2, w);
    }
    /* the common case, in one pass: plain ASCII, no "xn--" label, written
     * lower-cased as it is checked */
    if (!w->over && w->cap - w->len >= n) {
        char *o = w->p + w->len;
        size_t lab = 0, longest = 0, i = 0;
        for (; i < n; i++) {
            unsigned char b = (unsigned char)h[i];
            uint32_t k = c->cls[b];
            if (!(k & C_HOSTOK))
                break;
            if (b == '.') {
                if (i - lab > longest)
                    longest = i - lab;
                lab = i + 1;
            } else if (i == lab && (b | 0x20) == 'x' && is_xn(h + i, n - i)) {
                break;
            }
            o[i] = (char)((k & C_ALPHA) ? (b | 0x20) : b);
        }
        if (i == n) {
            /* a number in the last label (the one before a trailing dot) */
            size_t e = h[n - 1] == '.' ? n - 1 : n, last = e;
            while (last > 0 && h[last - 1] != '.')
                last--;
            if (last < e && (c->cls[(unsigned char)h[last]] & C_DIGIT) &&
                ends_in_number(c, h, n))
                return ipv4_parse(h, n, w);
            if (n - lab > longest)
                longest = n - lab;
            if (longest > MAX_LABEL || n - (h[n - 1] == '.') > MAX_NAME)
                return URL_REJ_HOST_TOO_LONG;
            w->len += n;
            return URL_OK;
        }
    }
    /* percent-decode, check the ASCII bytes, then UTS #46 */
    size_t k = 0;
    for (size_t j = 0; j < n; j++) {
        unsigned char b = (unsigned char)h[j];
        if (b == '%' && j + 2 < n && (c->cls[(unsigned char)h[j + 1]] & C_HEX) &&
            (c->cls[(unsigned char)h[j + 2]] & C_HEX)) {
            b = (unsigned char)(hexval((unsigned char)h[j + 1]) * 16 +
                                hexval((unsigned char)h[j + 2]));
            j += 2;
        }
        if (b < 0x80 && !(c->cls[b] & C_HOSTOK))
            return URL_REJ_HOST_CODEPOINT;
        c->hbuf[k++] = (char)b;
    }
    wr a = { c->abuf, 0, c->wcap, false };
    url_reject r = domain_to_ascii(c, c->hbuf, k, &a);
    if (r != URL_OK)
        return r;
    if (a.over)
        return URL_REJ_HOST_TOO_LONG;
    if (a.len == 0)
        return URL_REJ_IDNA;
    for (size_t j = 0; j < a.len; j++)
        if (!(c->cls[(unsigned char)a.p[j]] & C_HOSTOK))
            return URL_REJ_HOST_CODEPOINT;
    if (ends_in_number(c, a.p, a.len))
        return ipv4_parse(a.p, a.len, w);
    if (!dns_lengths_ok(a.p, a.len))
        return URL_REJ_HOST_TOO_LONG;
    wr_put(w, a.p, a.len);
    return URL_OK;
}

/* ---- the parser --------------------------------------------------------- */

/* "." or ".." as the path state sees a segment (also %2e, any case):
 * 1 or 2, else 0. */
static int dot_kind(const char *s, size_t n)
{
    if (n == 0 || n > 6 || (s[0] != '.' && s[0] != '%'))
        return 0;
    int dots = 0;
    size_t i = 0;
    while (i < n) {
        if (s[i] == '.') {
            i++;
        } else if (n - i >= 3 && s[i] == '%' && s[i + 1] == '2' && (s[i + 2] | 0x20) == 'e') {
            i += 3;
        } else {
            return 0;
        }
        dots++;
    }
    return dots <= 2 ? dots : 0;
}

/* The path state of a special URL over s[0..n), up to a '?' or the end:
 * appends segments to the path that starts at w offset pstart. Returns the
 * index it stopped at. */
static size_t path_parse(const url_canon *c, wr *w, size_t pstart, const char *s, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t seg = w->len;
        if (!w->over && w->cap - w->len > 3 * (n - i)) {
            /* room for the worst case: copy without checks */
            char *o = w->p;
            size_t len = w->len;
            o[len++] = '/';
            while (i < n) {
                unsigned char b = (unsigned char)s[i];
                if (!(c->cls[b] & C_PSTOP)) {
                    o[len++] = (char)b;
                } else if (b == '/' || b == '\\' || b == '?') {
                    break;
                } else {
                    o[len++] = '%';
                    o[len++] = hexu[b >> 4];
                    o[len++] = hexu[b & 15];
                }
                i++;
            }
            w->len = len;
        } else {
            wr_c(w, '/');
            for (;;) {
                size_t run = i;
                while (run < n && !(c->cls[(unsigned char)s[run]] & C_PSTOP))
                    run++;
                wr_put(w, s + i, run - i);
                i = run;
                if (i == n || s[i] == '/' || s[i] == '\\' || s[i] == '?')
                    break;
                wr_pct(w, (unsigned char)s[i]);
                i++;
            }
        }
        bool sep = i < n && s[i] != '?';
        int dk = w->over ? 0 : dot_kind(w->p + seg + 1, w->len - seg - 1);
        if (dk != 0) {
            w->len = seg;
            if (dk == 2) /* shorten the path: drop its last segment */
                while (w->len > pstart && w->p[--w->len] != '/')
                    ;
            if (!sep)
                wr_c(w, '/');
        }
        if (!sep)
            return i;
        i++;
    }
}

/* The query (s[0] is '?') or nothing (n == 0), then the end. */
static url_reject finish_query(const url_canon *c, wr *w, const char *s, size_t n, parts *p)
{
    p->query_off = w->len;
    if (n > 0) {
        wr_c(w, '?');
        put_enc(c, w, s + 1, n - 1, C_QENC);
    }
    p->len = w->len;
    return w->over ? URL_REJ_TOO_LONG : URL_OK;
}

/* From the authority state on: r[0..n) follows the slashes. */
static url_reject authority(url_canon *c, wr *w, int scheme, const char *r, size_t n, parts *p)
{
    p->scheme = scheme;
    wr_put(w, scheme_str[scheme], scheme_len[scheme]);
    size_t end = 0;
    bool look = false; /* an '@', ':' or '[' */
    for (; end < n; end++) {
        uint32_t k = c->cls[(unsigned char)r[end]];
        if (k & (C_AEND | C_AUTHX)) {
            if (k & C_AEND)
                break;
            look = true;
        }
    }
    if (!look) { /* the common case: a host alone */
        if (end == 0)
            return URL_REJ_NO_HOST;
        p->host_off = w->len;
        url_reject why = host_parse(c, w, r, end);
        if (why != URL_OK)
            return why;
        p->host_end = p->path_off = w->len;
        goto path;
    }
    size_t hs = 0;
    for (size_t k = end; k > 0; k--) {
        if (r[k - 1] != '@')
            continue;
        /* userinfo: every '@' but the last is data; the first ':' splits */
        size_t at = k - 1;
        if (k == end)
            return URL_REJ_NO_HOST;
        const char *colon = memchr(r, ':', at);
        size_t ul = colon ? (size_t)(colon - r) : at;
        size_t start = w->len;
        put_enc(c, w, r, ul, C_UENC);
        if (colon != NULL && at > ul + 1) {
            wr_c(w, ':');
            put_enc(c, w, colon + 1, at - ul - 1, C_UENC);
        }
        if (w->len > start)
            wr_c(w, '@');
        hs = k;
        break;
    }
    p->host_off = w->len;
    size_t he = hs;
    bool brackets = false;
    for (; he < end; he++) {
        if (r[he] == '[')
            brackets = true;
        else if (r[he] == ']')
            brackets = false;
        else if (r[he] == ':' && !brackets)
            break;
    }
    if (he == hs)
        return URL_REJ_NO_HOST;
    url_reject why = host_parse(c, w, r + hs, he - hs);
    if (why != URL_OK)
        return why;
    p->host_end = w->len;
    if (he < end && end > he + 1) {
        unsigned port = 0;
        for (size_t k = he + 1; k < end; k++) {
            if (!(c->cls[(unsigned char)r[k]] & C_DIGIT))
                return URL_REJ_BAD_PORT;
            port = port * 10 + (unsigned)(r[k] - '0');
            if (port > 65535)
                return URL_REJ_BAD_PORT;
        }
        if (port == 0)
            return URL_REJ_BAD_PORT; /* deliberate: nothing listens there */
        if (port != default_port[scheme]) {
            wr_c(w, ':');
            wr_uint(w, port);
        }
    }
    p->path_off = w->len;
path:;
    size_t q;
    if (end < n && r[end] != '?')
        q = end + 1 + path_parse(c, w, p->path_off, r + end + 1, n - end - 1);
    else
        q = end + path_parse(c, w, p->path_off, r + end, n - end);
    return finish_query(c, w, r + q, n - q, p);
}

/* The relative state: r[0..n) has no scheme of its own (or the base's). */
static url_reject relative(url_canon *c, wr *w, const base_rec *b, const char *r, size_t n,
                           parts *p)
{
    if (n > 0 && (r[0] == '/' || r[0] == '\\')) {
        if (n > 1 && (r[1] == '/' || r[1] == '\\')) {
            size_t a = 2;
            while (a < n && (r[a] == '/' || r[a] == '\\'))
                a++;
            return authority(c, w, b->p.scheme, r + a, n - a, p);
        }
        *p = b->p;
        wr_put(w, b->href, b->p.path_off);
        size_t q = 1 + path_parse(c, w, p->path_off, r + 1, n - 1);
        return finish_query(c, w, r + q, n - q, p);
    }
    *p = b->p;
    if (n == 0) {
        wr_put(w, b->href, b->p.len);
        return w->over ? URL_REJ_TOO_LONG : URL_OK;
    }
    if (r[0] == '?') {
        wr_put(w, b->href, b->p.query_off);
        return finish_query(c, w, r, n, p);
    }
    /* the base path less its last segment, then ours */
    size_t keep = b->p.query_off;
    while (keep > b->p.path_off && b->href[keep - 1] != '/')
        keep--;
    if (keep > b->p.path_off)
        keep--;
    wr_put(w, b->href, keep);
    size_t q = path_parse(c, w, p->path_off, r, n);
    return finish_query(c, w, r + q, n - q, p);
}

/* The basic URL parser: in[0..len) against b (NULL: no base) into fbuf. */
static url_reject parse(url_canon *c, const char *in, size_t len, const base_rec *b, parts *p)
{
    wr w = { c->fbuf, 0, c->max, false };
    if (len > c->max)
        return URL_REJ_TOO_LONG;
    size_t s = 0, e = len;
    while (s < e && (unsigned char)in[s] <= 0x20)
        s++;
    while (e > s && (unsigned char)in[e - 1] <= 0x20)
        e--;
    const char *r = in + s;
    size_t n = e - s;
    size_t i = 0;
    while (i < n && !(c->cls[(unsigned char)r[i]] & C_PREP))
        i++;
    if (i < n) {
        if (r[i] == '#') {
            n = i;
        } else {
            size_t k = i;
            memcpy(c->pbuf, r, i);
            for (; i < n && r[i] != '#'; i++)
                if (r[i] != '\t' && r[i] != '\n' && r[i] != '\r')
                    c->pbuf[k++] = r[i];
            r = c->pbuf;
            n = k;
        }
    }
    size_t colon = 0;
    if (n > 0 && (c->cls[(unsigned char)r[0]] & C_ALPHA)) {
        size_t k = 1;
        while (k < n && (c->cls[(unsigned char)r[k]] & C_SCHEME))
            k++;
        if (k < n && r[k] == ':')
            colon = k;
    }
    if (colon > 0) {
        int scheme;
        if (colon == 4 && ieq(r, "http", 4))
            scheme = 0;
        else if (colon == 5 && ieq(r, "https", 5))
            scheme = 1;
        else
            return URL_REJ_SCHEME;
        r += colon + 1;
        n -= colon + 1;
        if (b != NULL && b->why == URL_OK && b->p.scheme == scheme)
            return relative(c, &w, b, r, n, p); /* "http:x" against http: relative */
        size_t a = 0;
        while (a < n && (r[a] == '/' || r[a] == '\\'))
            a++;
        return authority(c, &w, scheme, r + a, n - a, p);
    }
    if (b == NULL)
        return n == 0 ? URL_REJ_EMPTY : URL_REJ_NO_BASE;
    if (b->why != URL_OK)
        return URL_REJ_BAD_BASE;
    return relative(c, &w, b, r, n, p);
}

/* ---- the key ------------------------------------------------------------ */

/* Percent-normalization: valid escapes upper-cased, or decoded when they
 * stand for an unreserved character; a '%' that starts no valid escape
 * becomes %25; bytes outside `mask` are encoded. */
static void pct_norm(const url_canon *c, wr *w, const char *in, size_t n, uint32_t mask)
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
    /* normalized in qbuf, unless there is nothing to normalize */
    size_t plain = 0;
    while (plain < qn && q[plain] != '%' && (c->cls[(unsigned char)q[plain]] & C_KQUERY))
        plain++;
    wr t = { c->qbuf, 0, c->wcap, false };
    if (plain == qn) {
        t.p = (char *)(uintptr_t)q; /* only read */
        t.len = qn;
    } else {
        pct_norm(c, &t, q, qn, C_KQUERY);
        if (t.over)
            return URL_REJ_TOO_LONG;
    }
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

/* The key of the fetch form u (spans p) into kbuf; its length in *klen. */
static url_reject make_key(url_canon *c, const char *u, const parts *p, size_t *klen)
{
    wr k = { c->kbuf, 0, c->max, false };
    size_t ui = scheme_len[p->scheme];
    wr_put(&k, u, ui);
    if (p->host_off > ui) {
        const char *us = u + ui;
        size_t ul = p->host_off - 1 - ui; /* without the '@' */
        const char *colon = memchr(us, ':', ul);
        size_t nl = colon ? (size_t)(colon - us) : ul;
        pct_norm(c, &k, us, nl, C_KUSER);
        if (colon != NULL) {
            wr_c(&k, ':');
            pct_norm(c, &k, colon + 1, ul - nl - 1, C_KUSER);
        }
        wr_c(&k, '@');
    }
    wr_put(&k, u + p->host_off, p->path_off - p->host_off);
    /* the path: as it is when it has no escape and no ';' (then it has no
     * dot segment either: the parser removed them), else normalized */
    const char *path = u + p->path_off;
    size_t plen = p->query_off - p->path_off, plain = 0;
    while (plain < plen && (c->cls[(unsigned char)path[plain]] & C_KPLAIN))
        plain++;
    if (plain == plen) {
        wr_put(&k, path, plen);
    } else {
        wr t = { c->nbuf, 0, c->wcap, false };
        pct_norm(c, &t, path, plen, C_KPATH);
        if (t.over)
            return URL_REJ_TOO_LONG;
        if (c->strip_sess)
            t.len = strip_jsessionid(t.p, t.len);
        if (has_dot_segment(t.p, t.len))
            remove_dots(&k, t.p, t.len);
        else
            wr_put(&k, t.p, t.len);
    }
    if (p->query_off < p->len) {
        url_reject r = query_out(c, &k, u + p->query_off + 1, p->len - p->query_off - 1);
        if (r != URL_OK)
            return r;
    }
    if (k.over)
        return URL_REJ_TOO_LONG;
    *klen = k.len;
    return URL_OK;
}

/* ---- bases -------------------------------------------------------------- */

/* The cached record of base (parsed now when it is not cached), or NULL
 * when libidn2 ran out of memory. */
static const base_rec *base_get(url_canon *c, const char *base, size_t blen)
{
    base_rec *slot = &c->bases[0];
    for (int i = 0; i < 2; i++) {
        base_rec *b = &c->bases[i];
        if (b->used && b->raw_len == blen && memcmp(b->raw, base, blen) == 0) {
            b->tick = ++c->tick;
            return b;
        }
        if (!b->used || b->tick < slot->tick)
            slot = b;
    }
    slot->used = false;
    slot->why = parse(c, base, blen, NULL, &slot->p);
    if (c->oom)
        return NULL;
    if (slot->why == URL_OK)
        memcpy(slot->href, c->fbuf, slot->p.len);
    if (blen <= c->max) { /* a longer base is rejected and not worth caching */
        memcpy(slot->raw, base, blen);
        slot->raw_len = blen;
        slot->used = true;
        slot->tick = ++c->tick;
    }
    return slot;
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
    for (int i = 1; i >= 0; i--) {
        cr_free(c->bases[i].href);
        cr_free(c->bases[i].raw);
    }
    cr_free(c->ptmp);
    cr_free(c->params);
    cr_free(c->lbuf);
    cr_free(c->abuf);
    cr_free(c->hbuf);
    cr_free(c->qbuf);
    cr_free(c->nbuf);
    cr_free(c->kbuf);
    cr_free(c->fbuf);
    cr_free(c->pbuf);
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
    if (max < URL_MIN_BYTES || max > URL_MAX_BYTES) { /* refused, not clamped */
        cr_free(c);
        errno = EINVAL;
        return NULL;
    }
    c->max = max;
    /* percent-normalization at most triples what it reads (a stray '%') */
    c->wcap = 3 * max + 16;
    c->nparams = max / 2 + 8;
    c->strip_sess = pol->strip_session_ids;
    c->sort = pol->sort_query;
    cls_init(c->cls);
    c->pbuf = cr_malloc(max + 1);
    c->fbuf = cr_malloc(max + 1);
    c->kbuf = cr_malloc(max + 1);
    c->nbuf = cr_malloc(c->wcap);
    c->qbuf = cr_malloc(c->wcap);
    c->hbuf = cr_malloc(max + 1);
    c->abuf = cr_malloc(c->wcap);
    c->lbuf = cr_malloc(max + 1);
    c->params = cr_malloc(c->nparams * sizeof *c->params);
    c->ptmp = cr_malloc(c->nparams * sizeof *c->ptmp);
    if (!c->pbuf || !c->fbuf || !c->kbuf || !c->nbuf || !c->qbuf || !c->hbuf || !c->abuf ||
        !c->lbuf || !c->params || !c->ptmp)
        goto fail;
    for (int i = 0; i < 2; i++) {
        c->bases[i].raw = cr_malloc(max + 1);
        c->bases[i].href = cr_malloc(max + 1);
        if (c->bases[i].raw == NULL || c->bases[i].href == NULL)
            goto fail;
    }
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
    return c;
fail:
    url_canon_free(c);
    return NULL;
}

static int put_out(cr_buf *out, const char *s, size_t n, url_reject *why)
{
    if (out == NULL)
        return 0;
    int r = cr_buf_append(out, s, n);
    if (r == -E2BIG) {
        *why = URL_REJ_TOO_LONG;
        return 0;
    }
    return r;
}

int url_canon_forms(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                    cr_buf *fetch, cr_buf *key, url_reject *why)
{
    *why = URL_OK;
    if (fetch != NULL)
        cr_buf_clear(fetch);
    if (key != NULL)
        cr_buf_clear(key);
    c->oom = false;
    const base_rec *b = NULL;
    if (base != NULL) {
        b = base_get(c, base, blen);
        if (b == NULL)
            return -ENOMEM;
    }
    parts p;
    size_t klen = 0;
    url_reject r = parse(c, ref, rlen, b, &p);
    if (c->oom)
        return -ENOMEM;
    if (r == URL_OK && key != NULL)
        r = make_key(c, c->fbuf, &p, &klen);
    int rc = 0;
    if (r == URL_OK) {
        rc = put_out(fetch, c->fbuf, p.len, &r);
        if (rc == 0 && r == URL_OK)
            rc = put_out(key, c->kbuf, klen, &r);
    }
    if (rc != 0 || r != URL_OK) {
        if (fetch != NULL)
            cr_buf_clear(fetch);
        if (key != NULL)
            cr_buf_clear(key);
    }
    if (rc != 0)
        return rc;
    if (r != URL_OK) {
        *why = r;
        c->st.rejected++;
        c->st.rejected_by[r]++;
        return -EINVAL;
    }
    c->st.accepted++;
    return 0;
}

int url_canon_resolve(url_canon *c, const char *base, size_t blen, const char *ref, size_t rlen,
                      cr_buf *out, url_reject *why)
{
    return url_canon_forms(c, base, blen, ref, rlen, NULL, out, why);
}

size_t url_ref_span(const char *ref, size_t rlen, bool *fragment)
{
    const char *h = rlen ? memchr(ref, '#', rlen) : NULL;
    *fragment = h != NULL;
    return h != NULL ? (size_t)(h - ref) : rlen;
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
    case URL_REJ_SCHEME:
        return "scheme is not http(s)";
    case URL_REJ_NO_BASE:
        return "relative URL without a base";
    case URL_REJ_BAD_BASE:
        return "base URL rejected";
    case URL_REJ_NO_HOST:
        return "missing or empty host";
    case URL_REJ_HOST_CODEPOINT:
        return "disallowed code point in host";
    case URL_REJ_IDNA:
        return "host refused by IDNA (UTS #46)";
    case URL_REJ_HOST_TOO_LONG:
        return "host too long for DNS";
    case URL_REJ_BAD_IPV4:
        return "bad IPv4 address";
    case URL_REJ_BAD_IPV6:
        return "bad IPv6 address";
    case URL_REJ_BAD_PORT:
        return "bad port";
    case URL_REJ_COUNT:
        break;
    }
    return "unknown reason";
}

const char *url_reject_name(url_reject r)
{
    static const char *const names[URL_REJ_COUNT] = {
        [URL_OK] = "ok",
        [URL_REJ_EMPTY] = "empty",
        [URL_REJ_TOO_LONG] = "too_long",
        [URL_REJ_SCHEME] = "scheme",
        [URL_REJ_NO_BASE] = "no_base",
        [URL_REJ_BAD_BASE] = "bad_base",
        [URL_REJ_NO_HOST] = "no_host",
        [URL_REJ_HOST_CODEPOINT] = "host_code_point",
        [URL_REJ_IDNA] = "idna",
        [URL_REJ_HOST_TOO_LONG] = "host_too_long",
        [URL_REJ_BAD_IPV4] = "bad_ipv4",
        [URL_REJ_BAD_IPV6] = "bad_ipv6",
        [URL_REJ_BAD_PORT] = "bad_port",
    };
    return (unsigned)r < URL_REJ_COUNT ? names[r] : "unknown";
}
