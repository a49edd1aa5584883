/* crawler/web/sitemap: streaming sitemap parser (see sitemap.h).
 *
 * Bytes go: sniff (the first two bytes decide gzip or not) -> zlib inflate
 * (gzip only, in OUT_CHUNK pieces) -> xml_feed, which counts the
 * uncompressed bytes against max_bytes and hands them to libxml2's push
 * parser. The SAX2 callbacks keep a depth counter and, inside an entry,
 * the text of its <loc> and <lastmod>; the entry goes out at its end tag.
 * The first error (libxml2's, or one of ours) stops the parser for good
 * until sitemap_reset. Everything of ours is allocated through
 * common/alloc; libxml2 and zlib use their own allocators. */
#include "crawler/web/sitemap.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"

#define SITEMAP_NS "http://www.sitemaps.org/schemas/sitemap/0.9"
#define OUT_CHUNK 16384
#define LASTMOD_MAX 64

enum field { F_NONE = 0, F_LOC, F_LASTMOD };

struct sitemap_parser {
    sitemap_opts o;
    sitemap_cb cb;
    void *ud;
    xmlSAXHandler sax;
    xmlParserCtxtPtr ctxt;      /* created at the first XML byte */
    z_stream z;
    bool z_on, z_end;
    unsigned char magic[2];
    size_t nmagic;
    bool decided;               /* gzip or not is known */
    int err;                    /* enum sitemap_error, 0 while running */
    char errtext[256];
    size_t depth;
    bool in_entry;
    int field;
    bool loc_seen, loc_long, lastmod_seen, lastmod_long;
    cr_buf loc, lastmod;
    sitemap_stats st;
    unsigned char *out;         /* OUT_CHUNK bytes for inflate */
};

static void set_error(sitemap_parser *p, int err, int line, int col, const char *msg)
{
    if (p->err != 0)
        return;
    p->err = err;
    snprintf(p->errtext, sizeof p->errtext, "%d:%d: %s", line, col, msg);
    size_t n = strlen(p->errtext);
    while (n > 0 && (p->errtext[n - 1] == '\n' || p->errtext[n - 1] == ' '))
        p->errtext[--n] = '\0';
}

/* One of our errors at the parser's current position; stops libxml2. */
static void stop(sitemap_parser *p, int err, const char *msg)
{
    int line = 0, col = 0;
    if (p->ctxt) {
        line = xmlSAX2GetLineNumber(p->ctxt);
        col = xmlSAX2GetColumnNumber(p->ctxt);
        xmlStopParser(p->ctxt);
    }
    set_error(p, err, line, col, msg);
}

static void on_serror(void *ud, xmlErrorPtr e)
{
    sitemap_parser *p = ud;
    if (e == NULL || e->level == XML_ERR_WARNING)
        return;
    set_error(p, SITEMAP_ERR_XML, e->line, e->int2, e->message ? e->message : "XML error");
}

static void silent_generic(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

/* libxml2's generic error channel (its I/O and encoding messages) is
 * per-thread state: switched off around our calls, then given back. */
typedef struct quiet {
    xmlGenericErrorFunc gen;
    void *gen_ctx;
} quiet;

static void quiet_begin(quiet *q)
{
    q->gen = xmlGenericError;
    q->gen_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, silent_generic);
}

static void quiet_end(const quiet *q) { xmlSetGenericErrorFunc(q->gen_ctx, q->gen); }

static bool is_ns(const xmlChar *uri) { return uri && strcmp((const char *)uri, SITEMAP_NS) == 0; }
static bool is_name(const xmlChar *n, const char *s) { return strcmp((const char *)n, s) == 0; }
static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static void on_start(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri,
                     int nns, const xmlChar **ns, int nattr, int ndef, const xmlChar **attrs)
{
    (void)prefix, (void)nns, (void)ns, (void)nattr, (void)ndef, (void)attrs;
    sitemap_parser *p = ud;
    if (p->err)
        return;
    p->depth++;
    if (p->depth > p->o.max_depth) {
        stop(p, SITEMAP_ERR_DEPTH, "elements nested too deep");
        return;
    }
    if (p->depth == 1) {
        if (is_ns(uri) && is_name(local, "urlset"))
            p->st.kind = SITEMAP_URLSET;
        else if (is_ns(uri) && is_name(local, "sitemapindex"))
            p->st.kind = SITEMAP_INDEX;
        else
            stop(p, SITEMAP_ERR_ROOT,
                 "root element is not <urlset> or <sitemapindex> in the sitemap 0.9 namespace");
        return;
    }
    if (p->depth == 2 && is_ns(uri)) {
        bool url = is_name(local, "url"), sm = is_name(local, "sitemap");
        if ((url && p->st.kind == SITEMAP_URLSET) || (sm && p->st.kind == SITEMAP_INDEX)) {
            p->in_entry = true;
            p->loc_seen = p->loc_long = p->lastmod_seen = p->lastmod_long = false;
            cr_buf_clear(&p->loc);
            cr_buf_clear(&p->lastmod);
        } else if (url || sm) {
            p->st.wrong_entry++;
        }
        return;
    }
    if (p->depth == 3 && p->in_entry && is_ns(uri)) {
        if (is_name(local, "loc") && !p->loc_seen) {
            p->field = F_LOC;
            p->loc_seen = true;
        } else if (is_name(local, "lastmod") && !p->lastmod_seen) {
            p->field = F_LASTMOD;
            p->lastmod_seen = true;
        }
    }
}

static void on_text(void *ud, const xmlChar *ch, int len)
{
    sitemap_parser *p = ud;
    if (p->err || p->field == F_NONE || len <= 0)
        return;
    const char *s = (const char *)ch;
    size_t n = (size_t)len;
    cr_buf *b = p->field == F_LOC ? &p->loc : &p->lastmod;
    bool *too_long = p->field == F_LOC ? &p->loc_long : &p->lastmod_long;
    if (b->len == 0)
        while (n > 0 && is_ws(*s))
            s++, n--;
    if (n == 0 || *too_long)
        return;
    int rc = cr_buf_append(b, s, n);
    if (rc == -ENOMEM)
        stop(p, SITEMAP_ERR_NOMEM, "out of memory");
    else if (rc < 0)
        *too_long = true;
}

static size_t trimmed(const cr_buf *b)
{
    size_t n = b->len;
    while (n > 0 && is_ws(b->data[n - 1]))
        n--;
    return n;
}

static void emit(sitemap_parser *p)
{
    size_t n = p->loc.data ? trimmed(&p->loc) : 0;
    if (p->loc_long || (n > p->o.max_loc)) {
        p->st.loc_too_long++;
        return;
    }
    if (n == 0) {
        p->st.no_loc++;
        return;
    }
    if (p->st.entries >= p->o.max_urls) {
        p->st.over_limit++;
        return;
    }
    sitemap_entry e = { .kind = p->st.kind, .loc = p->loc.data, .loc_len = n };
    p->loc.data[n] = '\0';
    if (p->lastmod_seen) {
        size_t m = p->lastmod.data ? trimmed(&p->lastmod) : 0;
        if (!p->lastmod_long && m > 0 &&
            sitemap_parse_datetime(p->lastmod.data, m, &e.lastmod_ms) == 0) {
            e.has_lastmod = true;
            p->st.lastmod++;
        } else {
            p->st.bad_lastmod++;
        }
    }
    p->st.entries++;
    p->cb(p->ud, &e);
}

static void on_end(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
    (void)local, (void)prefix, (void)uri;
    sitemap_parser *p = ud;
    if (p->err)
        return;
    if (p->depth == 3)
        p->field = F_NONE;
    else if (p->depth == 2 && p->in_entry) {
        p->in_entry = false;
        emit(p);
    }
    if (p->depth > 0)
        p->depth--;
}

static void on_doctype(void *ud, const xmlChar *name, const xmlChar *ext, const xmlChar *sys)
{
    (void)name, (void)ext, (void)sys;
    stop(ud, SITEMAP_ERR_DOCTYPE, "DOCTYPE not allowed in a sitemap");
}

sitemap_parser *sitemap_new(const sitemap_opts *o, sitemap_cb cb, void *ud)
{
    sitemap_parser *p = cr_calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->out = cr_malloc(OUT_CHUNK);
    if (p->out == NULL) {
        cr_free(p);
        return NULL;
    }
    if (o)
        p->o = *o;
    if (p->o.max_urls == 0)
        p->o.max_urls = SITEMAP_DEFAULT_MAX_URLS;
    if (p->o.max_bytes == 0)
        p->o.max_bytes = SITEMAP_DEFAULT_MAX_BYTES;
    if (p->o.max_loc == 0)
        p->o.max_loc = SITEMAP_DEFAULT_MAX_LOC;
    if (p->o.max_depth == 0)
        p->o.max_depth = SITEMAP_DEFAULT_MAX_DEPTH;
    p->cb = cb;
    p->ud = ud;
    cr_buf_init(&p->loc, p->o.max_loc + 64);
    cr_buf_init(&p->lastmod, LASTMOD_MAX);
    p->sax.initialized = XML_SAX2_MAGIC;
    p->sax.startElementNs = on_start;
    p->sax.endElementNs = on_end;
    p->sax.characters = on_text;
    p->sax.cdataBlock = on_text;
    p->sax.internalSubset = on_doctype;
    p->sax.serror = on_serror;
    return p;
}

static void drop_state(sitemap_parser *p)
{
    if (p->ctxt) {
        xmlFreeParserCtxt(p->ctxt);
        p->ctxt = NULL;
    }
    if (p->z_on) {
        inflateEnd(&p->z);
        p->z_on = false;
    }
}

void sitemap_free(sitemap_parser *p)
{
    if (p == NULL)
        return;
    drop_state(p);
    cr_buf_release(&p->loc);
    cr_buf_release(&p->lastmod);
    cr_free(p->out);
    cr_free(p);
}

void sitemap_reset(sitemap_parser *p)
{
    drop_state(p);
    p->z_end = false;
    p->nmagic = 0;
    p->decided = false;
    p->err = 0;
    p->errtext[0] = '\0';
    p->depth = 0;
    p->in_entry = false;
    p->field = F_NONE;
    cr_buf_clear(&p->loc);
    cr_buf_clear(&p->lastmod);
    memset(&p->st, 0, sizeof p->st);
}

/* Uncompressed bytes to libxml2, at most max_bytes in all. */
static void xml_feed(sitemap_parser *p, const char *s, size_t n)
{
    if (p->err || n == 0)
        return;
    if (p->ctxt == NULL) {
        p->ctxt = xmlCreatePushParserCtxt(&p->sax, p, NULL, 0, NULL);
        if (p->ctxt == NULL) {
            set_error(p, SITEMAP_ERR_NOMEM, 0, 0, "out of memory");
            return;
        }
        xmlCtxtUseOptions(p->ctxt, XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_NOERROR);
    }
    size_t room = p->o.max_bytes - p->st.bytes_xml;
    bool cut = n > room;
    if (cut)
        n = room;
    while (n > 0 && !p->err) {
        int k = n > (1u << 30) ? 1 << 30 : (int)n;
        p->st.bytes_xml += (uint64_t)k;
        if (xmlParseChunk(p->ctxt, s, k, 0) != 0 && p->err == 0)
            set_error(p, SITEMAP_ERR_XML, xmlSAX2GetLineNumber(p->ctxt),
                      xmlSAX2GetColumnNumber(p->ctxt), "not well-formed XML");
        s += k;
        n -= (size_t)k;
    }
    if (cut && !p->err) {
        char msg[96];
        snprintf(msg, sizeof msg, "sitemap larger than %zu bytes uncompressed: cut there",
                 p->o.max_bytes);
        stop(p, SITEMAP_ERR_TOO_BIG, msg);
    }
}

static void gz_feed(sitemap_parser *p, const unsigned char *s, size_t n)
{
    p->z.next_in = (unsigned char *)s;
    p->z.avail_in = (uInt)n;
    while (!p->err && !p->z_end && (p->z.avail_in > 0)) {
        p->z.next_out = p->out;
        p->z.avail_out = OUT_CHUNK;
        int rc = inflate(&p->z, Z_NO_FLUSH);
        size_t got = OUT_CHUNK - p->z.avail_out;
        xml_feed(p, (const char *)p->out, got);
        if (rc == Z_STREAM_END) {
            p->z_end = true; /* bytes after the gzip member are ignored */
        } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && got > 0)) {
            set_error(p, SITEMAP_ERR_GZIP, 0, 0,
                      p->z.msg ? p->z.msg : "corrupt gzip stream");
        }
    }
}

/* Input bytes once gzip-or-not is decided. */
static void route(sitemap_parser *p, const unsigned char *s, size_t n)
{
    if (p->z_on) {
        /* zlib takes uInt lengths */
        while (n > 0 && !p->err && !p->z_end) {
            size_t k = n > (1u << 30) ? (1u << 30) : n;
            gz_feed(p, s, k);
            s += k;
            n -= k;
        }
    } else {
        xml_feed(p, (const char *)s, n);
    }
}

static void decide(sitemap_parser *p)
{
    p->decided = true;
    if (p->nmagic == 2 && p->magic[0] == 0x1f && p->magic[1] == 0x8b) {
        memset(&p->z, 0, sizeof p->z);
        if (inflateInit2(&p->z, 16 + MAX_WBITS) != Z_OK) {
            set_error(p, SITEMAP_ERR_NOMEM, 0, 0, "out of memory (zlib)");
            return;
        }
        p->z_on = true;
        p->st.gzip = true;
    }
    route(p, p->magic, p->nmagic);
}

int sitemap_feed(sitemap_parser *p, const void *data, size_t n)
{
    const unsigned char *s = data;
    if (p->err)
        return -p->err;
    p->st.bytes_in += n;
    while (!p->decided && n > 0) {
        p->magic[p->nmagic++] = *s++;
        n--;
        if (p->nmagic == 2) {
            quiet q;
            quiet_begin(&q);
            decide(p);
            quiet_end(&q);
        }
    }
    if (p->decided && n > 0) {
        quiet q;
        quiet_begin(&q);
        route(p, s, n);
        quiet_end(&q);
    }
    return -p->err;
}

int sitemap_finish(sitemap_parser *p)
{
    if (p->err)
        return -p->err;
    quiet q;
    quiet_begin(&q);
    if (!p->decided)
        decide(p);
    if (!p->err && p->z_on && !p->z_end)
        set_error(p, SITEMAP_ERR_GZIP, 0, 0, "gzip stream ends early");
    if (!p->err && p->ctxt == NULL)
        set_error(p, SITEMAP_ERR_EMPTY, 1, 1, "empty document");
    if (!p->err && xmlParseChunk(p->ctxt, NULL, 0, 1) != 0 && p->err == 0)
        set_error(p, SITEMAP_ERR_XML, xmlSAX2GetLineNumber(p->ctxt),
                  xmlSAX2GetColumnNumber(p->ctxt), "not well-formed XML");
    if (!p->err && p->st.kind == SITEMAP_UNKNOWN)
        set_error(p, SITEMAP_ERR_EMPTY, 1, 1, "no root element");
    quiet_end(&q);
    return -p->err;
}

const char *sitemap_error_text(const sitemap_parser *p) { return p->errtext; }

void sitemap_stats_get(const sitemap_parser *p, sitemap_stats *st) { *st = p->st; }

const char *sitemap_error_name(int err)
{
    static const char *const names[] = { "ok", "xml", "root", "doctype", "depth",
                                         "too_big", "gzip", "empty", "nomem" };
    if (err < 0)
        err = -err;
    return (size_t)err < sizeof names / sizeof names[0] ? names[err] : "unknown";
}

/* ---- W3C Datetime ------------------------------------------------------- */

static int digits(const char *s, size_t n, size_t at, size_t k, int *out)
{
    if (at + k > n)
        return -1;
    int v = 0;
    for (size_t i = 0; i < k; i++) {
        char c = s[at + i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int month_days(int y, int m)
{
    static const int d[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

int sitemap_parse_datetime(const char *s, size_t n, int64_t *ms)
{
    int y, mo = 1, d = 1, h = 0, mi = 0, sec = 0, frac_ms = 0, tz = 0;
    size_t i = 4;
    if (digits(s, n, 0, 4, &y) < 0)
        return -EINVAL;
    if (i < n) {
        if (s[i] != '-' || digits(s, n, i + 1, 2, &mo) < 0)
            return -EINVAL;
        i += 3;
        if (mo < 1 || mo > 12)
            return -EINVAL;
    }
    if (i < n) {
        if (s[i] != '-' || digits(s, n, i + 1, 2, &d) < 0)
            return -EINVAL;
        i += 3;
        if (d < 1 || d > month_days(y, mo))
            return -EINVAL;
    }
    if (i < n) {
        if (s[i] != 'T' || digits(s, n, i + 1, 2, &h) < 0 || i + 3 >= n || s[i + 3] != ':' ||
            digits(s, n, i + 4, 2, &mi) < 0)
            return -EINVAL;
        i += 6;
        if (h > 23 || mi > 59)
            return -EINVAL;
        if (i < n && s[i] == ':') {
            if (digits(s, n, i + 1, 2, &sec) < 0 || sec > 59)
                return -EINVAL;
            i += 3;
            if (i < n && s[i] == '.') {
                size_t k = 0;
                i++;
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    if (k < 3)
                        frac_ms = frac_ms * 10 + (s[i] - '0');
                    k++;
                    i++;
                }
                if (k == 0)
                    return -EINVAL;
                for (; k < 3; k++)
                    frac_ms *= 10;
            }
        }
        /* a time needs its zone designator */
        if (i >= n)
            return -EINVAL;
        if (s[i] == 'Z') {
            i++;
        } else if (s[i] == '+' || s[i] == '-') {
            int th, tm;
            if (digits(s, n, i + 1, 2, &th) < 0 || i + 3 >= n || s[i + 3] != ':' ||
                digits(s, n, i + 4, 2, &tm) < 0 || th > 23 || tm > 59)
                return -EINVAL;
            tz = (th * 60 + tm) * (s[i] == '-' ? -1 : 1);
            i += 6;
        } else {
            return -EINVAL;
        }
    }
    if (i != n)
        return -EINVAL;
    int64_t t = days_from_civil(y, mo, d) * 86400 + (int64_t)h * 3600 + mi * 60 + sec -
                (int64_t)tz * 60;
    *ms = t * 1000 + frac_ms;
    return 0;
}

/* ---- the protocol's scope rule ------------------------------------------ */

/* End of "scheme://authority" in u, or 0 when u has none. */
static size_t authority_end(const char *u, size_t n)
{
    const char *sep = n >= 3 ? memchr(u, ':', n) : NULL;
    if (sep == NULL || (size_t)(sep - u) + 3 > n || sep[1] != '/' || sep[2] != '/')
        return 0;
    size_t i = (size_t)(sep - u) + 3;
    while (i < n && u[i] != '/' && u[i] != '?' && u[i] != '#')
        i++;
    return i;
}

int sitemap_loc_in_scope(const char *sm, size_t slen, const char *url, size_t ulen)
{
    size_t sa = authority_end(sm, slen), ua = authority_end(url, ulen);
    if (sa == 0 || ua != sa || memcmp(sm, url, sa) != 0)
        return 0;
    /* the sitemap's directory: its path up to the last '/' */
    size_t pe = sa;
    while (pe < slen && sm[pe] != '?' && sm[pe] != '#')
        pe++;
    size_t dir = sa;
    for (size_t i = sa; i < pe; i++)
        if (sm[i] == '/')
            dir = i + 1;
    if (dir == sa) /* no path: the root */
        return 1;
    size_t dlen = dir - sa;
    if (ulen == ua) /* "http://h" is "http://h/" */
        return dlen == 1;
    return ulen - ua >= dlen && memcmp(url + ua, sm + sa, dlen) == 0;
}
