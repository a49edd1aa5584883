/* tests/test_site: the local test site (tests/site/, bin/testsite).
 *
 * Starts the site and checks each kind of page over real HTTP with libcurl
 * (hosts pinned to 127.0.0.1 with CURLOPT_RESOLVE). The expected-set printer
 * is checked against a small breadth-first crawler written here from
 * scratch: its own URL resolution and canonicalization (RFC 3986), its own
 * tag scanner, its own robots.txt matcher. Both must find the same set, so
 * the printer and the pages cannot drift apart unnoticed.
 *
 * Why one file of about 2,100 lines: the independent checker crawler is
 * the point of the test and lives beside the cases that use it, so a
 * reader sees both; splitting it would only add a header between them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"

/* The shared site most cases use. */
static testsite S;
static const char *const S_ARGS[] = {
    "--seed", "7", "--pages", "60", "--hosts", "4", "--delay-ms", "300", "--bomb-mib", "16",
    "--big-bytes", "11000000", "--flaky", "2", "--retry-after", "1", NULL,
};
static const char *const HOSTS[] = { "a.test", "b.test", "c.test", "d.test", "x.test" };

/* ---- an HTTP client ---------------------------------------------------- */

typedef struct resp {
    long status;
    cr_buf body;
    char ctype[256];
    char location[4096];
    char retry_after[128];
    char encoding[64];
    char transfer[64];
    char allow[64];
    long long clen;        /* -1: no Content-Length */
    int has_location;
    int truncated;
    size_t cap;
    double secs;
    long connects;         /* new connections this transfer made */
} resp;

typedef struct client {
    CURL *h;
    struct curl_slist *resolve;
    struct curl_slist *headers;
    int port;
} client;

static void client_init(client *c, const testsite *ts)
{
    char r[128];
    memset(c, 0, sizeof(*c));
    c->h = curl_easy_init();
    assert_non_null(c->h);
    c->port = ts->port;
    for (size_t i = 0; i < sizeof(HOSTS) / sizeof(HOSTS[0]); i++) {
        assert_int_equal(testsite_resolve(ts, HOSTS[i], r, sizeof(r)), 0);
        c->resolve = curl_slist_append(c->resolve, r);
    }
    curl_easy_setopt(c->h, CURLOPT_RESOLVE, c->resolve);
}

static void client_release(client *c)
{
    curl_easy_cleanup(c->h);
    curl_slist_free_all(c->resolve);
    curl_slist_free_all(c->headers);
    memset(c, 0, sizeof(*c));
}

static void resp_release(resp *r)
{
    cr_buf_release(&r->body);
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    resp *r = ud;
    size_t len = size * n;
    if (r->body.len + len > r->cap) {
        r->truncated = 1;
        return 0;
    }
    return cr_buf_append(&r->body, p, len) == 0 ? len : 0;
}

static void copy_value(char *dst, size_t cap, const char *v, size_t n)
{
    while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
        n--;
    while (n > 0 && *v == ' ') {
        v++;
        n--;
    }
    snprintf(dst, cap, "%.*s", (int)n, v);
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    resp *r = ud;
    size_t len = size * n;
    const char *colon = memchr(p, ':', len);
    if (colon == NULL)
        return len;
    size_t kl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = len - kl - 1;
    if (kl == 12 && strncasecmp(p, "Content-Type", kl) == 0)
        copy_value(r->ctype, sizeof(r->ctype), v, vl);
    else if (kl == 8 && strncasecmp(p, "Location", kl) == 0) {
        copy_value(r->location, sizeof(r->location), v, vl);
        r->has_location = 1;
    } else if (kl == 11 && strncasecmp(p, "Retry-After", kl) == 0)
        copy_value(r->retry_after, sizeof(r->retry_after), v, vl);
    else if (kl == 16 && strncasecmp(p, "Content-Encoding", kl) == 0)
        copy_value(r->encoding, sizeof(r->encoding), v, vl);
    else if (kl == 17 && strncasecmp(p, "Transfer-Encoding", kl) == 0)
        copy_value(r->transfer, sizeof(r->transfer), v, vl);
    else if (kl == 5 && strncasecmp(p, "Allow", kl) == 0)
        copy_value(r->allow, sizeof(r->allow), v, vl);
    else if (kl == 14 && strncasecmp(p, "Content-Length", kl) == 0) {
        char num[32];
        copy_value(num, sizeof(num), v, vl);
        r->clen = strtoll(num, NULL, 10);
    }
    return len;
}

/* GET (or method) host+target, raw (no decoding, no redirects, dot segments
 * sent as they are). Bodies past cap are cut off (truncated set). */
static int client_do(client *c, const char *method, const char *host, const char *target,
                     size_t cap, resp *r)
{
    char url[8192];
    memset(r, 0, sizeof(*r));
    cr_buf_init(&r->body, 0);
    r->clen = -1;
    r->cap = cap;
    snprintf(url, sizeof(url), "http://%s:%d%s", host, c->port, target);
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c->h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c->h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c->h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->h, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, NULL);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c->h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0)
        curl_easy_setopt(c->h, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c->h);
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && r->truncated)) {
        print_message("curl %s %s: %s\n", method, url, curl_easy_strerror(rc));
        return -1;
    }
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_getinfo(c->h, CURLINFO_TOTAL_TIME, &r->secs);
    curl_easy_getinfo(c->h, CURLINFO_NUM_CONNECTS, &r->connects);
    return 0;
}

#define BODY_CAP (4u << 20)

/* Fetches from the shared site with a fresh client. */
static void get(const char *host, const char *target, resp *r)
{
    client c;
    client_init(&c, &S);
    assert_int_equal(client_do(&c, "GET", host, target, BODY_CAP, r), 0);
    client_release(&c);
}

static int body_has(const resp *r, const char *needle)
{
    if (r->body.data == NULL)
        return 0;
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= r->body.len; i++) {
        if (memcmp(r->body.data + i, needle, nl) == 0)
            return 1;
    }
    return 0;
}

/* ---- URLs: resolution and canonicalization, written independently ------ */

static int unreserved(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static int hexdig(int c)
{
    return isdigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
}

static void pct_normalize(const char *p, size_t n, cr_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '%' && i + 2 < n && hexdig((unsigned char)p[i + 1]) >= 0 &&
            hexdig((unsigned char)p[i + 2]) >= 0) {
            int c = hexdig((unsigned char)p[i + 1]) * 16 + hexdig((unsigned char)p[i + 2]);
            if (unreserved(c))
                cr_buf_putc(out, (char)c);
            else
                cr_buf_printf(out, "%%%c%c", toupper((unsigned char)p[i + 1]),
                              toupper((unsigned char)p[i + 2]));
            i += 2;
        } else {
            cr_buf_putc(out, p[i]);
        }
    }
}

/* Dot-segment removal by a stack of segments (path starts with '/'). */
static void dots_out(const char *path, size_t n, cr_buf *out)
{
    const char *seg[1024];
    size_t len[1024];
    size_t k = 0;
    size_t i = 1;
    for (;;) {
        size_t e = i;
        while (e < n && path[e] != '/')
            e++;
        int last = e >= n;
        const char *s = path + i;
        size_t sl = e - i;
        if (sl == 1 && s[0] == '.') {
            if (last && k < 1024) {
                seg[k] = "";
                len[k++] = 0;
            }
        } else if (sl == 2 && s[0] == '.' && s[1] == '.') {
            if (k > 0)
                k--;
            if (last && k < 1024) {
                seg[k] = "";
                len[k++] = 0;
            }
        } else if (k < 1024) {
            seg[k] = s;
            len[k++] = sl;
        }
        if (last)
            break;
        i = e + 1;
    }
    for (size_t j = 0; j < k; j++) {
        cr_buf_putc(out, '/');
        cr_buf_append(out, seg[j], len[j]);
    }
    if (k == 0)
        cr_buf_putc(out, '/');
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Canonical http URL from parts; -1 when not http. */
static int canon_parts(const char *scheme, size_t sn, const char *auth, size_t an,
                       const char *path, size_t pn, const char *query, size_t qn, int has_q,
                       cr_buf *out)
{
    cr_buf p, norm;
    cr_buf_clear(out);
    if (sn != 4 || strncasecmp(scheme, "http", 4) != 0 || an == 0)
        return -1;
    cr_buf_puts(out, "http://");
    for (size_t i = 0; i < an; i++)
        cr_buf_putc(out, (char)tolower((unsigned char)auth[i]));
    if (out->len > 10 && strcmp(out->data + out->len - 3, ":80") == 0) {
        out->len -= 3;
        out->data[out->len] = '\0';
    }
    cr_buf_init(&p, 0);
    cr_buf_init(&norm, 0);
    if (pn == 0)
        cr_buf_putc(&p, '/');
    else
        pct_normalize(path, pn, &p);
    dots_out(p.data, p.len, &norm);
    cr_buf_append(out, norm.data, norm.len);
    if (has_q) {
        char *params[512];
        size_t np = 0;
        const char *q = query, *end = query + qn;
        while (q < end && np < 512) {
            const char *amp = memchr(q, '&', (size_t)(end - q));
            const char *e = amp != NULL ? amp : end;
            if (e > q) {
                cr_buf one;
                cr_buf_init(&one, 0);
                pct_normalize(q, (size_t)(e - q), &one);
                const char *key = one.data;
                size_t kl = strcspn(key, "=");
                if ((kl >= 4 && strncmp(key, "utm_", 4) == 0) || (kl == 6 && !strncmp(key, "fbclid", 6)) ||
                    (kl == 5 && !strncmp(key, "gclid", 5)))
                    cr_buf_release(&one);
                else
                    params[np++] = cr_buf_take(&one);
            }
            q = e + 1;
        }
        qsort(params, np, sizeof(params[0]), str_cmp);
        for (size_t i = 0; i < np; i++) {
            cr_buf_putc(out, i == 0 ? '?' : '&');
            cr_buf_puts(out, params[i]);
            cr_free(params[i]);
        }
    }
    cr_buf_release(&p);
    cr_buf_release(&norm);
    return 0;
}

typedef struct ref {
    const char *scheme, *auth, *path, *query;
    size_t sn, an, pn, qn;
    int has_scheme, has_auth, has_query;
} ref;

static void split_ref(const char *s, size_t n, ref *r)
{
    memset(r, 0, sizeof(*r));
    size_t i = 0;
    size_t stop = strcspn(s, ":/?#");
    if (stop < n && s[stop] == ':' && stop > 0 && isalpha((unsigned char)s[0])) {
        r->has_scheme = 1;
        r->scheme = s;
        r->sn = stop;
        i = stop + 1;
    }
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
        r->has_auth = 1;
        r->auth = s + i + 2;
        size_t e = i + 2;
        while (e < n && s[e] != '/' && s[e] != '?' && s[e] != '#')
            e++;
        r->an = e - i - 2;
        i = e;
    }
    r->path = s + i;
    while (i < n && s[i] != '?' && s[i] != '#')
        i++;
    r->pn = (size_t)(s + i - r->path);
    if (i < n && s[i] == '?') {
        r->has_query = 1;
        r->query = s + i + 1;
        i++;
        while (i < n && s[i] != '#')
            i++;
        r->qn = (size_t)(s + i - r->query);
    }
}

/* Resolves an href against an absolute base (RFC 3986 5.2.2) and
 * canonicalizes. Leading/trailing white space of the href is ignored, as
 * browsers do. -1 when the result is not an http URL. */
static int resolve(const char *base, const char *href, cr_buf *out)
{
    while (*href == ' ' || *href == '\n' || *href == '\t' || *href == '\r')
        href++;
    size_t n = strlen(href);
    while (n > 0 && (href[n - 1] == ' ' || href[n - 1] == '\n' || href[n - 1] == '\t' ||
                     href[n - 1] == '\r'))
        n--;
    ref b, r;
    split_ref(base, strlen(base), &b);
    split_ref(href, n, &r);
    if (r.has_scheme)
        return canon_parts(r.scheme, r.sn, r.auth, r.an, r.path, r.pn, r.query, r.qn,
                           r.has_query, out);
    if (r.has_auth)
        return canon_parts(b.scheme, b.sn, r.auth, r.an, r.path, r.pn, r.query, r.qn,
                           r.has_query, out);
    if (r.pn == 0) {
        if (r.has_query)
            return canon_parts(b.scheme, b.sn, b.auth, b.an, b.path, b.pn, r.query, r.qn, 1, out);
        return canon_parts(b.scheme, b.sn, b.auth, b.an, b.path, b.pn, b.query, b.qn,
                           b.has_query, out);
    }
    if (r.path[0] == '/')
        return canon_parts(b.scheme, b.sn, b.auth, b.an, r.path, r.pn, r.query, r.qn,
                           r.has_query, out);
    cr_buf merged;
    cr_buf_init(&merged, 0);
    size_t dir = b.pn;
    while (dir > 0 && b.path[dir - 1] != '/')
        dir--;
    if (dir == 0)
        cr_buf_putc(&merged, '/');
    else
        cr_buf_append(&merged, b.path, dir);
    cr_buf_append(&merged, r.path, r.pn);
    int rc = canon_parts(b.scheme, b.sn, b.auth, b.an, merged.data, merged.len, r.query, r.qn,
                         r.has_query, out);
    cr_buf_release(&merged);
    return rc;
}

/* ---- a tag scanner, no regular expressions ----------------------------- */

typedef struct hlink {
    char *href;           /* attribute value, entities decoded */
    int requisite;
    int nofollow;
    char tag[12];
} hlink;

typedef struct scan {
    hlink v[512];
    size_t n;
    char *base;           /* first <base href> */
    int meta_nofollow;
} scan;

static void scan_release(scan *s)
{
    for (size_t i = 0; i < s->n; i++)
        cr_free(s->v[i].href);
    cr_free(s->base);
    memset(s, 0, sizeof(*s));
}

static char *decode_entities(const char *p, size_t n)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        static const struct {
            const char *name;
            char c;
        } ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
                     { "&apos;", '\'' }, { "&#39;", '\'' } };
        int done = 0;
        for (size_t e = 0; e < sizeof(ents) / sizeof(ents[0]) && !done; e++) {
            size_t el = strlen(ents[e].name);
            if (i + el <= n && strncmp(p + i, ents[e].name, el) == 0) {
                cr_buf_putc(&b, ents[e].c);
                i += el - 1;
                done = 1;
            }
        }
        if (!done)
            cr_buf_putc(&b, p[i]);
    }
    char *s = cr_buf_take(&b);
    cr_buf_release(&b);
    return s != NULL ? s : cr_strdup("");
}

typedef struct attr {
    char name[24];
    char *value;
} attr;

static int token_in(const char *list, const char *tok)
{
    size_t tl = strlen(tok);
    const char *p = list;
    while (p != NULL && *p != '\0') {
        p += strspn(p, " \t\n");
        size_t k = strcspn(p, " \t\n");
        if (k == tl && strncasecmp(p, tok, tl) == 0)
            return 1;
        p += k;
    }
    return 0;
}

static const char *attr_get(attr *a, int na, const char *name)
{
    for (int i = 0; i < na; i++) {
        if (strcmp(a[i].name, name) == 0)
            return a[i].value;
    }
    return NULL;
}

static void add_link(scan *s, const char *tag, const char *href, int requisite, int nofollow)
{
    if (href == NULL || s->n == sizeof(s->v) / sizeof(s->v[0]))
        return;
    hlink *l = &s->v[s->n++];
    l->href = cr_strdup(href);
    l->requisite = requisite;
    l->nofollow = nofollow;
    snprintf(l->tag, sizeof(l->tag), "%s", tag);
}

static void on_tag(scan *s, const char *tag, attr *a, int na)
{
    const char *rel = attr_get(a, na, "rel");
    if (!strcmp(tag, "a") || !strcmp(tag, "area")) {
        add_link(s, tag, attr_get(a, na, "href"), 0, rel != NULL && token_in(rel, "nofollow"));
    } else if (!strcmp(tag, "link")) {
        int req = rel != NULL && (token_in(rel, "stylesheet") || token_in(rel, "icon"));
        add_link(s, tag, attr_get(a, na, "href"), req, 0);
    } else if (!strcmp(tag, "img")) {
        add_link(s, tag, attr_get(a, na, "src"), 1, 0);
        const char *set = attr_get(a, na, "srcset");
        while (set != NULL && *set != '\0') {
            set += strspn(set, " \t\n,");
            size_t k = strcspn(set, " \t\n,");
            if (k == 0)
                break;
            char *one = cr_strndup(set, k);
            add_link(s, "srcset", one, 1, 0);
            cr_free(one);
            set += k;
            set += strcspn(set, ","); /* skip the descriptor */
        }
    } else if (!strcmp(tag, "script")) {
        add_link(s, tag, attr_get(a, na, "src"), 1, 0);
    } else if (!strcmp(tag, "iframe") || !strcmp(tag, "frame")) {
        add_link(s, tag, attr_get(a, na, "src"), 0, 0);
    } else if (!strcmp(tag, "base")) {
        const char *h = attr_get(a, na, "href");
        if (h != NULL && s->base == NULL)
            s->base = cr_strdup(h);
    } else if (!strcmp(tag, "meta")) {
        const char *eq = attr_get(a, na, "http-equiv");
        const char *name = attr_get(a, na, "name");
        const char *content = attr_get(a, na, "content");
        if (content != NULL && eq != NULL && strcasecmp(eq, "refresh") == 0) {
            const char *u = strchr(content, ';');
            if (u != NULL) {
                u++;
                u += strspn(u, " ");
                if (strncasecmp(u, "url=", 4) == 0)
                    add_link(s, "meta", u + 4, 0, 0);
            }
        }
        if (content != NULL && name != NULL && strcasecmp(name, "robots") == 0) {
            char tmp[256];
            snprintf(tmp, sizeof(tmp), "%s", content);
            for (char *c = tmp; *c != '\0'; c++) {
                if (*c == ',')
                    *c = ' ';
            }
            if (token_in(tmp, "nofollow"))
                s->meta_nofollow = 1;
        }
    }
}

static const char *find_ci(const char *p, const char *end, const char *needle)
{
    size_t nl = strlen(needle);
    for (; p + nl <= end; p++) {
        if (strncasecmp(p, needle, nl) == 0)
            return p;
    }
    return NULL;
}

static void scan_html(const char *p, size_t n, scan *s)
{
    const char *end = p + n;
    memset(s, 0, sizeof(*s));
    while (p < end) {
        if (*p != '<') {
            p++;
            continue;
        }
        if (end - p >= 4 && strncmp(p, "<!--", 4) == 0) {
            const char *c = find_ci(p + 4, end, "-->");
            p = c != NULL ? c + 3 : end;
            continue;
        }
        if (p + 1 < end && (p[1] == '!' || p[1] == '?' || p[1] == '/')) {
            while (p < end && *p != '>')
                p++;
            continue;
        }
        const char *q = p + 1;
        char tag[12];
        size_t tl = 0;
        while (q < end && isalnum((unsigned char)*q)) {
            if (tl + 1 < sizeof(tag))
                tag[tl++] = (char)tolower((unsigned char)*q);
            q++;
        }
        tag[tl] = '\0';
        if (tl == 0) {
            p++;
            continue;
        }
        attr a[16];
        int na = 0;
        for (;;) {
            while (q < end && (isspace((unsigned char)*q) || *q == '/'))
                q++;
            if (q >= end || *q == '>')
                break;
            const char *ns = q;
            while (q < end && !isspace((unsigned char)*q) && *q != '=' && *q != '>' && *q != '/')
                q++;
            size_t nlen = (size_t)(q - ns);
            while (q < end && isspace((unsigned char)*q))
                q++;
            const char *vs = NULL;
            size_t vlen = 0;
            if (q < end && *q == '=') {
                q++;
                while (q < end && isspace((unsigned char)*q))
                    q++;
                if (q < end && (*q == '"' || *q == '\'')) {
                    char quote = *q++;
                    vs = q;
                    while (q < end && *q != quote)
                        q++;
                    vlen = (size_t)(q - vs);
                    if (q < end)
                        q++;
                } else {
                    vs = q;
                    while (q < end && !isspace((unsigned char)*q) && *q != '>')
                        q++;
                    vlen = (size_t)(q - vs);
                }
            }
            if (nlen == 0) {
                q++;
                continue;
            }
            char name[24];
            size_t k;
            for (k = 0; k < nlen && k + 1 < sizeof(name); k++)
                name[k] = (char)tolower((unsigned char)ns[k]);
            name[k] = '\0';
            if (na < 16 && attr_get(a, na, name) == NULL) { /* the first one wins */
                snprintf(a[na].name, sizeof(a[na].name), "%s", name);
                a[na].value = vs != NULL ? decode_entities(vs, vlen) : cr_strdup("");
                na++;
            }
        }
        on_tag(s, tag, a, na);
        for (int i = 0; i < na; i++)
            cr_free(a[i].value);
        p = q < end ? q + 1 : end;
        if (!strcmp(tag, "script") || !strcmp(tag, "style")) {
            const char *c = find_ci(p, end, !strcmp(tag, "script") ? "</script" : "</style");
            p = c != NULL ? c : end;
        }
    }
}

/* ---- robots.txt, parsed and matched here ------------------------------- */

typedef struct robots {
    int status;
    int nrules;
    int allow[64];
    char pattern[64][256];
} robots;

static void robots_parse(const char *txt, robots *rb)
{
    int in_star = 0, last_was_agent = 0;
    rb->nrules = 0;
    while (txt != NULL && *txt != '\0') {
        size_t ll = strcspn(txt, "\n");
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)ll, txt);
        txt += ll + (txt[ll] == '\n');
        char *hash = strchr(line, '#');
        if (hash != NULL)
            *hash = '\0';
        char *colon = strchr(line, ':');
        if (colon == NULL)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        v += strspn(v, " \t");
        v[strcspn(v, " \t\r")] = '\0';
        if (strcasecmp(line, "user-agent") == 0) {
            if (!last_was_agent)
                in_star = 0;
            if (strcmp(v, "*") == 0)
                in_star = 1;
            last_was_agent = 1;
            continue;
        }
        last_was_agent = 0;
        int allow = strcasecmp(line, "allow") == 0;
        if ((allow || strcasecmp(line, "disallow") == 0) && in_star && v[0] != '\0' && rb->nrules < 64) {
            cr_buf b;
            cr_buf_init(&b, 0);
            pct_normalize(v, strlen(v), &b);
            snprintf(rb->pattern[rb->nrules], sizeof(rb->pattern[0]), "%s", b.data);
            rb->allow[rb->nrules++] = allow;
            cr_buf_release(&b);
        }
    }
}

static int glob_prefix(const char *p, const char *s)
{
    if (*p == '\0')
        return 1;
    if (*p == '$' && p[1] == '\0')
        return *s == '\0';
    if (*p == '*')
        return glob_prefix(p + 1, s) || (*s != '\0' && glob_prefix(p, s + 1));
    return *p == *s && glob_prefix(p + 1, s + 1);
}

static int robots_allows(const robots *rb, const char *pathq)
{
    if (rb->status >= 500)
        return 0;
    if (rb->status >= 400)
        return 1;
    size_t best = 0;
    int ok = 1;
    for (int i = 0; i < rb->nrules; i++) {
        size_t l = strlen(rb->pattern[i]);
        if (glob_prefix(rb->pattern[i], pathq) && (l > best || (l == best && rb->allow[i]))) {
            best = l;
            ok = rb->allow[i];
        }
    }
    return ok;
}

/* ---- a small breadth-first crawler over real HTTP ---------------------- */

typedef struct crawl_opts {
    const char *scope;       /* "host", "prefix" or "all" */
    const char *seed;        /* target on a.test */
    int max_depth;
    int max_redirects;
    int max_repeat;
    int max_query;
    int max_url;
    int max_path;
    int follow_nofollow;
    int fetch_requisites;
} crawl_opts;

typedef struct entry {
    char *url;
    int depth, hop;
} entry;

typedef struct crawler {
    const crawl_opts *o;
    client c;
    char seed_url[256];
    char seed_prefix[256];
    char seed_host[64];
    entry *v;
    size_t n, cap;
    char *fetched[4096];     /* URLs fetched, robots.txt included */
    size_t nfetched;
    robots rb[8];
    int rb_done[8];
} crawler;

/* Which host of the site a canonical URL is on, or -1 (another port,
 * another host). */
static int host_index(const char *url, int port)
{
    for (int i = 0; i < 4; i++) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "http://%s:%d/", HOSTS[i], port);
        if (strncmp(url, prefix, strlen(prefix)) == 0)
            return i;
    }
    return -1;
}

static int seen(const crawler *cr, const char *url)
{
    for (size_t i = 0; i < cr->n; i++) {
        if (strcmp(cr->v[i].url, url) == 0)
            return 1;
    }
    return 0;
}

static const robots *robots_for(crawler *cr, int h)
{
    if (!cr->rb_done[h]) {
        resp r;
        assert_int_equal(client_do(&cr->c, "GET", HOSTS[h], "/robots.txt", 1 << 20, &r), 0);
        cr->rb[h].status = (int)r.status;
        robots_parse(r.status == 200 ? r.body.data : NULL, &cr->rb[h]);
        resp_release(&r);
        cr->rb_done[h] = 1;
        char u[128];
        snprintf(u, sizeof(u), "http://%s:%d/robots.txt", HOSTS[h], cr->c.port);
        cr->fetched[cr->nfetched++] = cr_strdup(u);
    }
    return &cr->rb[h];
}

static void consider(crawler *cr, const char *url, int depth, int hop, int requisite)
{
    const crawl_opts *o = cr->o;
    int h = host_index(url, cr->c.port);
    if (h < 0)
        return; /* not on the site */
    const char *pathq = url + 7 + strcspn(url + 7, "/");
    int in_scope = !strcmp(o->scope, "all") ||
                   (!strcmp(o->scope, "host") && !strcmp(HOSTS[h], cr->seed_host)) ||
                   (!strcmp(o->scope, "prefix") && !strncmp(url, cr->seed_prefix, strlen(cr->seed_prefix)));
    if (!in_scope && !(requisite && o->fetch_requisites))
        return;
    if ((o->max_depth >= 0 && depth > o->max_depth) || hop > o->max_redirects)
        return;
    if (o->max_url > 0 && strlen(url) > (size_t)o->max_url)
        return;
    size_t plen = strcspn(pathq, "?");
    if (o->max_path > 0) {
        int slashes = 0;
        for (size_t i = 0; i < plen; i++)
            slashes += pathq[i] == '/';
        if (slashes > o->max_path)
            return;
    }
    if (o->max_query > 0 && pathq[plen] == '?') {
        int params = 1;
        for (const char *c = pathq + plen; *c != '\0'; c++)
            params += *c == '&';
        if (params > o->max_query)
            return;
    }
    if (o->max_repeat > 0) {
        char segs[64][64];
        int ns = 0, run = 0;
        const char *c = pathq + 1;
        while (c < pathq + plen && ns < 64) {
            size_t k = strcspn(c, "/?");
            snprintf(segs[ns], sizeof(segs[0]), "%.*s", (int)k, c);
            run = k > 0 && ns > 0 && !strcmp(segs[ns], segs[ns - 1]) ? run + 1 : (k > 0);
            if (run > o->max_repeat)
                return;
            ns++;
            c += k + 1;
        }
    }
    if (!robots_allows(robots_for(cr, h), pathq))
        return;
    if (seen(cr, url))
        return;
    if (cr->n == cr->cap) {
        cr->cap = cr->cap == 0 ? 256 : cr->cap * 2;
        cr->v = cr_realloc(cr->v, cr->cap * sizeof(*cr->v));
        assert_non_null(cr->v);
    }
    cr->v[cr->n++] = (entry){ cr_strdup(url), depth, hop };
}

static int is_html(const char *ctype)
{
    size_t n = strcspn(ctype, ";");
    while (n > 0 && ctype[n - 1] == ' ')
        n--;
    return (n == 9 && strncasecmp(ctype, "text/html", 9) == 0) ||
           (n == 21 && strncasecmp(ctype, "application/xhtml+xml", 21) == 0);
}

/* Crawls the site ts; the sorted list of fetched URLs into *out. */
static size_t crawl(const testsite *ts, const crawl_opts *o, char ***out)
{
    crawler cr;
    cr_buf abs, baseurl;
    memset(&cr, 0, sizeof(cr));
    cr.o = o;
    client_init(&cr.c, ts);
    cr_buf_init(&abs, 0);
    cr_buf_init(&baseurl, 0);
    snprintf(cr.seed_url, sizeof(cr.seed_url), "http://a.test:%d%s", ts->port, o->seed);
    snprintf(cr.seed_host, sizeof(cr.seed_host), "a.test");
    snprintf(cr.seed_prefix, sizeof(cr.seed_prefix), "%s", cr.seed_url);
    strrchr(cr.seed_prefix, '/')[1] = '\0'; /* up to the last '/' */
    consider(&cr, cr.seed_url, 0, 0, 1);
    for (size_t k = 0; k < cr.n; k++) {
        entry e = cr.v[k];
        const char *pathq = e.url + 7 + strcspn(e.url + 7, "/");
        int h = host_index(e.url, cr.c.port);
        resp r;
        assert_int_equal(client_do(&cr.c, "GET", HOSTS[h], pathq, 2u << 20, &r), 0);
        cr.fetched[cr.nfetched++] = cr_strdup(e.url);
        if (r.status >= 300 && r.status < 400 && r.has_location) {
            if (resolve(e.url, r.location, &abs) == 0)
                consider(&cr, abs.data, e.depth + 1, e.hop + 1, 0);
        } else if (r.status == 200 && is_html(r.ctype) && r.body.data != NULL) {
            scan sc;
            scan_html(r.body.data, r.body.len, &sc);
            cr_buf_clear(&baseurl);
            if (sc.base == NULL || resolve(e.url, sc.base, &baseurl) != 0)
                cr_buf_puts(&baseurl, e.url);
            for (size_t i = 0; i < sc.n; i++) {
                if ((sc.v[i].nofollow || sc.meta_nofollow) && !o->follow_nofollow)
                    continue;
                if (resolve(baseurl.data, sc.v[i].href, &abs) == 0)
                    consider(&cr, abs.data, e.depth + 1, 0, sc.v[i].requisite);
            }
            scan_release(&sc);
        }
        resp_release(&r);
        assert_true(cr.nfetched < 4000);
    }
    for (size_t k = 0; k < cr.n; k++)
        cr_free(cr.v[k].url);
    cr_free(cr.v);
    cr_buf_release(&abs);
    cr_buf_release(&baseurl);
    client_release(&cr.c);
    char **list = cr_calloc(cr.nfetched + 1, sizeof(*list));
    memcpy(list, cr.fetched, cr.nfetched * sizeof(*list));
    qsort(list, cr.nfetched, sizeof(*list), str_cmp);
    *out = list;
    return cr.nfetched;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_free(v[i]);
    cr_free(v);
}

/* Lines of text (first tab-separated field), sorted. */
static size_t split_lines(const char *text, char ***out)
{
    size_t cap = 64, n = 0;
    char **v = cr_malloc(cap * sizeof(*v));
    while (*text != '\0') {
        size_t ll = strcspn(text, "\n");
        size_t fl = strcspn(text, "\t\n");
        if (ll > 0) {
            if (n == cap) {
                cap *= 2;
                v = cr_realloc(v, cap * sizeof(*v));
            }
            v[n++] = cr_strndup(text, fl);
        }
        text += ll + (text[ll] == '\n');
    }
    qsort(v, n, sizeof(*v), str_cmp);
    *out = v;
    return n;
}

/* Runs testsite with args and returns its stdout (exit status must be 0). */
static char *run_ok(const char *const *args)
{
    char *out = NULL;
    int st = testsite_run(args, &out, NULL);
    assert_int_equal(st, 0);
    assert_non_null(out);
    return out;
}

/* Asserts that two sorted URL lists are equal, printing the differences. */
static void assert_same_set(char **a, size_t na, const char *an, char **b, size_t nb, const char *bn)
{
    size_t i = 0, j = 0, diffs = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i], b[j]);
        if (c == 0) {
            i++;
            j++;
        } else if (c < 0) {
            print_message("only in %s: %s\n", an, a[i++]);
            diffs++;
        } else {
            print_message("only in %s: %s\n", bn, b[j++]);
            diffs++;
        }
    }
    assert_int_equal(diffs, 0);
    assert_int_equal(na, nb);
}

/* The documented layout: the target of regular page i. */
static void page_target(int i, char *t, size_t cap)
{
    if (i == 0)
        snprintf(t, cap, "/");
    else if (i <= 8)
        snprintf(t, cap, "/sec%d/", i - 1);
    else if (i % 10 == 9)
        snprintf(t, cap, "/list?cat=%d&n=%d", (i / 10) % 5, i);
    else
        snprintf(t, cap, "/sec%d/Article%d.html", i % 8, i);
}

/* ---- cases: pages of each kind ----------------------------------------- */

static void test_home_page(void **state)
{
    (void)state;
    resp r;
    get("a.test", "/", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/html; charset=utf-8");
    assert_true(body_has(&r, "<nav><a href=\"/\">Home</a>"));
    assert_true(body_has(&r, "Page 0 of a.test"));
    assert_int_equal(r.clen, (long long)r.body.len);
    resp_release(&r);
}

static void test_keep_alive(void **state)
{
    (void)state;
    client c;
    resp r1, r2;
    client_init(&c, &S);
    assert_int_equal(client_do(&c, "GET", "a.test", "/style.css", BODY_CAP, &r1), 0);
    assert_int_equal(client_do(&c, "GET", "a.test", "/app.js", BODY_CAP, &r2), 0);
    assert_int_equal(r1.connects, 1);
    assert_int_equal(r2.connects, 0); /* the same connection was reused */
    resp_release(&r1);
    resp_release(&r2);
    client_release(&c);
}

static void test_virtual_hosts(void **state)
{
    (void)state;
    resp r;
    get("b.test", "/", &r);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "Page 0 of b.test"));
    assert_false(body_has(&r, "Page 0 of a.test"));
    resp_release(&r);

    get("x.test", "/", &r); /* not a host of the site */
    assert_int_equal(r.status, 404);
    resp_release(&r);

    client c; /* the Host header decides, case-insensitively */
    char host[64];
    client_init(&c, &S);
    snprintf(host, sizeof(host), "Host: C.TEST:%d", S.port);
    c.headers = curl_slist_append(NULL, host);
    assert_int_equal(client_do(&c, "GET", "a.test", "/", BODY_CAP, &r), 0);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "Page 0 of c.test"));
    resp_release(&r);
    client_release(&c);
}

static void test_methods(void **state)
{
    (void)state;
    client c;
    resp r;
    client_init(&c, &S);
    assert_int_equal(client_do(&c, "POST", "a.test", "/", BODY_CAP, &r), 0);
    assert_int_equal(r.status, 405);
    assert_string_equal(r.allow, "GET, HEAD");
    resp_release(&r);
    assert_int_equal(client_do(&c, "HEAD", "a.test", "/sec2/", BODY_CAP, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.len, 0);
    assert_true(r.clen > 500);
    resp_release(&r);
    client_release(&c);
}

static void test_robots_txt(void **state)
{
    (void)state;
    resp r;
    get("a.test", "/robots.txt", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/plain");
    assert_true(body_has(&r, "User-agent: *\n"));
    assert_true(body_has(&r, "Disallow: /private/\n"));
    assert_true(body_has(&r, "Allow: /private/public.html\n"));
    assert_true(body_has(&r, "Disallow: /*9.pdf$\n"));
    assert_true(body_has(&r, "Disallow: /hidden/%62locked.html\n"));
    assert_false(body_has(&r, "Crawl-delay"));
    resp_release(&r);

    get("b.test", "/robots.txt", &r);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "User-agent: *\nCrawl-delay: 1\n"));
    resp_release(&r);

    get("c.test", "/robots.txt", &r);
    assert_int_equal(r.status, 404);
    resp_release(&r);
    get("d.test", "/robots.txt", &r);
    assert_int_equal(r.status, 500);
    resp_release(&r);
}

static void expect_redirect(const char *target, long code, const char *location)
{
    resp r;
    get("a.test", target, &r);
    assert_int_equal(r.status, code);
    if (location == NULL) {
        assert_false(r.has_location);
    } else {
        assert_true(r.has_location);
        assert_string_equal(r.location, location);
    }
    resp_release(&r);
}

static void test_redirects(void **state)
{
    (void)state;
    char abs[128], other[128];
    snprintf(abs, sizeof(abs), "http://a.test:%d/redirect/landing.html", S.port);
    snprintf(other, sizeof(other), "http://b.test:%d/", S.port);
    expect_redirect("/redirect/short", 301, "short2");
    expect_redirect("/redirect/short2", 302, abs);
    expect_redirect("/redirect/loop/a", 302, "b");
    expect_redirect("/redirect/loop/b", 302, "/redirect/loop/a");
    expect_redirect("/redirect/self", 301, "/redirect/self");
    expect_redirect("/redirect/offsite", 302, other);
    expect_redirect("/redirect/no-location", 302, NULL);

    /* the chain: 301 302 303 307 308 301 302, then a page */
    static const long codes[] = { 301, 302, 303, 307, 308, 301, 302 };
    for (int k = 1; k <= 8; k++) {
        char t[64];
        resp r;
        snprintf(t, sizeof(t), "/redirect/hop/%d", k);
        get("a.test", t, &r);
        if (k < 8) {
            assert_int_equal(r.status, codes[k - 1]);
            cr_buf u;
            cr_buf_init(&u, 0);
            char base[128];
            snprintf(base, sizeof(base), "http://a.test:%d%s", S.port, t);
            assert_int_equal(resolve(base, r.location, &u), 0);
            snprintf(t, sizeof(t), "http://a.test:%d/redirect/hop/%d", S.port, k + 1);
            assert_string_equal(u.data, t);
            cr_buf_release(&u);
        } else {
            assert_int_equal(r.status, 200);
        }
        resp_release(&r);
    }

    /* a messy Location canonicalizes to a known page */
    resp r;
    cr_buf u;
    char base[128], want[128];
    cr_buf_init(&u, 0);
    get("a.test", "/redirect/messy", &r);
    assert_int_equal(r.status, 301);
    assert_true(strchr(r.location, '%') != NULL || strstr(r.location, "/.") != NULL);
    snprintf(base, sizeof(base), "http://a.test:%d/redirect/messy", S.port);
    snprintf(want, sizeof(want), "http://a.test:%d/sec1/Article17.html", S.port);
    assert_int_equal(resolve(base, r.location, &u), 0);
    assert_string_equal(u.data, want);
    cr_buf_release(&u);
    resp_release(&r);
}

static void test_error_statuses(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        long status;
    } cases[] = {
        { "/status/403", 403 },
        { "/status/404", 404 },
        { "/status/410", 410 },
        { "/status/500", 500 },
        { "/missing/nowhere.html", 404 },
        { "/sec1/Article9999.html", 404 },  /* past --pages */
        { "/sec1/Article017.html", 404 },   /* not a canonical number */
        { "/sec2/Article17.html", 404 },    /* page 17 lives in sec1 */
        { "/calendar/2024/13", 404 },
        { "/calendar/24/01", 404 },
        { "/hidden/unknown.html", 404 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        resp r;
        get("a.test", cases[i].target, &r);
        if (r.status != cases[i].status)
            print_message("%s answered %ld\n", cases[i].target, r.status);
        assert_int_equal(r.status, cases[i].status);
        assert_false(body_has(&r, "href"));
        resp_release(&r);
    }
}

/* An IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), or -1. */
static time_t parse_http_date(const char *s)
{
    static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
    char wd[4], mon[4], zone[4];
    struct tm tm;
    int used = 0;
    memset(&tm, 0, sizeof(tm));
    if (sscanf(s, "%3s, %2d %3s %4d %2d:%2d:%2d %3s%n", wd, &tm.tm_mday, mon, &tm.tm_year,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, zone, &used) != 8 ||
        s[used] != '\0' || strcmp(zone, "GMT") != 0)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon = -1;
    for (int i = 0; i < 12; i++) {
        if (strcmp(mon, months[i]) == 0)
            tm.tm_mon = i;
    }
    return tm.tm_mon < 0 ? -1 : timegm(&tm);
}

static void test_retry_after(void **state)
{
    (void)state;
    resp r;
    get("a.test", "/status/503", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.retry_after, "1");
    resp_release(&r);
    get("a.test", "/status/429", &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "1");
    resp_release(&r);

    time_t before = time(NULL);
    get("a.test", "/status/503-date", &r);
    assert_int_equal(r.status, 503);
    time_t t = parse_http_date(r.retry_after);
    assert_true(t >= before); /* an IMF-fixdate, not in the past */
    resp_release(&r);
}

static void test_flaky(void **state)
{
    (void)state;
    resp r;
    for (int i = 0; i < 2; i++) {
        get("c.test", i == 0 ? "/flaky/2.html" : "/flaky/3.html", &r);
        assert_int_equal(r.status, 503);
        assert_string_equal(r.retry_after, "1");
        resp_release(&r);
    }
    get("c.test", "/flaky/2.html", &r);
    assert_int_equal(r.status, 200);
    assert_true(is_html(r.ctype));
    resp_release(&r);
    /* the counter is per host */
    get("b.test", "/flaky/2.html", &r);
    assert_int_equal(r.status, 503);
    resp_release(&r);
}

static void test_slow_pages(void **state)
{
    (void)state;
    resp r;
    get("a.test", "/slow/delay.html", &r);
    assert_int_equal(r.status, 200);
    assert_true(r.secs >= 0.300); /* --delay-ms 300 before the answer */
    resp_release(&r);
    get("a.test", "/slow/trickle.html", &r);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.clen, (long long)r.body.len);
    assert_true(r.secs >= 0.270); /* nine pauses of 30 ms between ten pieces */
    assert_true(body_has(&r, "</html>"));
    resp_release(&r);
}

static void test_oversized(void **state)
{
    (void)state;
    client c;
    resp r;
    client_init(&c, &S);
    assert_int_equal(client_do(&c, "HEAD", "a.test", "/big/huge.html", BODY_CAP, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.clen, 11000000);
    assert_true(r.clen > 10 * 1024 * 1024);
    resp_release(&r);
    assert_int_equal(client_do(&c, "GET", "a.test", "/big/huge.html", 20u << 20, &r), 0);
    assert_int_equal(r.body.len, 11000000);
    assert_memory_equal(r.body.data, "<!DOCTYPE html>", 15);
    resp_release(&r);
    assert_int_equal(client_do(&c, "GET", "a.test", "/big/chunked.html", 20u << 20, &r), 0);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.clen, -1);
    assert_string_equal(r.transfer, "chunked");
    assert_int_equal(r.body.len, 11000000);
    resp_release(&r);
    client_release(&c);
}

static void test_gzip_bomb(void **state)
{
    (void)state;
    resp r;
    get("a.test", "/big/bomb.html", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.encoding, "gzip");
    assert_string_equal(r.ctype, "text/html");
    assert_int_equal(r.clen, (long long)r.body.len);
    assert_true(r.body.len * 500 < 16u << 20); /* small on the wire */

    z_stream zs;
    unsigned char out[65536];
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(inflateInit2(&zs, 16 + 15), Z_OK);
    zs.next_in = (Bytef *)r.body.data;
    zs.avail_in = (uInt)r.body.len;
    int zr = Z_OK;
    size_t not_space = 0;
    while (zr == Z_OK) {
        zs.next_out = out;
        zs.avail_out = sizeof(out);
        zr = inflate(&zs, Z_NO_FLUSH);
        for (size_t i = 0; i < sizeof(out) - zs.avail_out; i++)
            not_space += out[i] != ' ';
    }
    assert_int_equal(zr, Z_STREAM_END); /* CRC-32 and size checked by zlib */
    assert_int_equal(zs.total_out, 16u << 20);
    assert_int_equal(not_space, 0);
    assert_int_equal(zs.avail_in, 0);
    inflateEnd(&zs);
    resp_release(&r);
}

static void test_non_html(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        const char *ctype;
        const char *starts;
    } cases[] = {
        { "/img/3.png", "image/png", "\x89PNG\r\n\x1a\n" },
        { "/special/image.html", "image/png", "\x89PNG" },
        { "/style.css", "text/css", "body {" },
        { "/app.js", "application/javascript", "/*" },
        { "/doc/3.pdf", "application/pdf", "%PDF-1.4" },
        { "/doc/9.pdf?download=1", "application/pdf", "%PDF-1.4" },
        { "/special/plain.txt", "text/plain; charset=utf-8", "This is text/plain" },
        { "/special/page.xhtml", "application/xhtml+xml", "<?xml" },
        { "/special/fake.png", "text/html", "<!DOCTYPE html>" },
        { "/special/upper-ctype.html", "Text/HTML; Charset=UTF-8", "<!DOCTYPE html>" },
        { "/special/latin1.html", "text/html; charset=iso-8859-1", "<!DOCTYPE html>" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        resp r;
        get("a.test", cases[i].target, &r);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.ctype, cases[i].ctype);
        assert_true(r.body.len >= strlen(cases[i].starts));
        assert_memory_equal(r.body.data, cases[i].starts, strlen(cases[i].starts));
        resp_release(&r);
    }
    /* the PNG is well formed: IHDR of 4x4 with a correct CRC */
    resp r;
    get("a.test", "/img/3.png", &r);
    const unsigned char *p = (const unsigned char *)r.body.data;
    assert_memory_equal(p + 12, "IHDR", 4);
    uint32_t crc = (uint32_t)p[29] << 24 | (uint32_t)p[30] << 16 | (uint32_t)p[31] << 8 | p[32];
    assert_int_equal(crc32(crc32(0, NULL, 0), p + 12, 17), crc);
    assert_int_equal(p[19], 4);
    assert_int_equal(p[23], 4);
    resp_release(&r);
}

/* The links of the malformed page, as libxml2's HTML parser finds them. */
static size_t libxml_hrefs(const char *body, size_t len, int push, char **out, size_t cap)
{
    htmlDocPtr doc;
    if (push) {
        htmlParserCtxtPtr ctx = htmlCreatePushParserCtxt(NULL, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
        htmlCtxtUseOptions(ctx, HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                    HTML_PARSE_NONET);
        for (size_t off = 0; off < len; off += 7) /* in small pieces, as a body arrives */
            htmlParseChunk(ctx, body + off, (int)(len - off < 7 ? len - off : 7), 0);
        htmlParseChunk(ctx, NULL, 0, 1);
        doc = ctx->myDoc;
        htmlFreeParserCtxt(ctx);
    } else {
        doc = htmlReadMemory(body, (int)len, NULL, NULL,
                             HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                 HTML_PARSE_NONET);
    }
    assert_non_null(doc);
    size_t n = 0;
    xmlNodePtr stack[256];
    int sp = 0;
    stack[sp++] = xmlDocGetRootElement(doc);
    /* document order: depth-first, children before next siblings */
    while (sp > 0) {
        xmlNodePtr nd = stack[--sp];
        for (; nd != NULL; nd = nd->next) {
            if (nd->type == XML_ELEMENT_NODE && xmlStrcasecmp(nd->name, BAD_CAST "a") == 0) {
                xmlChar *h = xmlGetProp(nd, BAD_CAST "href");
                if (h != NULL && n < cap)
                    out[n++] = cr_strdup((const char *)h);
                xmlFree(h);
            }
            if (nd->children != NULL && sp < 255) {
                if (nd->next != NULL)
                    stack[sp++] = nd->next;
                stack[sp++] = nd->children;
                break;
            }
        }
    }
    xmlFreeDoc(doc);
    return n;
}

static void test_malformed_html(void **state)
{
    (void)state;
    static const char *const want[] = {
        "/hidden/mal-unquoted.html", "/hidden/mal-upper.html", "/hidden/mal-table.html",
        "/hidden/mal-unclosed-a.html", "/hidden/mal-gt-attr.html", "/hidden/mal-spaced.html",
        "/hidden/mal-after-bytes.html", "/hidden/mal-dup.html", "/hidden/mal-eof.html",
    };
    const size_t nwant = sizeof(want) / sizeof(want[0]);
    resp r;
    get("a.test", "/special/malformed.html", &r);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "mal-in-comment"));  /* present, but in a comment */
    assert_true(body_has(&r, "mal-in-script"));   /* present, but in a script */
    assert_true(body_has(&r, "\xff\xfe"));        /* invalid UTF-8 */

    scan sc;
    scan_html(r.body.data, r.body.len, &sc);
    assert_int_equal(sc.n, nwant);
    for (size_t i = 0; i < nwant; i++)
        assert_string_equal(sc.v[i].href, want[i]);
    scan_release(&sc);

    for (int push = 0; push <= 1; push++) {
        char *got[32];
        size_t n = libxml_hrefs(r.body.data, r.body.len, push, got, 32);
        for (size_t i = 0; i < n; i++) {
            if (i >= nwant || strcmp(got[i], want[i]) != 0)
                print_message("libxml2 (%s) link %zu: %s\n", push ? "push" : "tree", i, got[i]);
        }
        assert_int_equal(n, nwant);
        for (size_t i = 0; i < n; i++) {
            assert_string_equal(got[i], want[i]);
            cr_free(got[i]);
        }
    }
    resp_release(&r);
}

static void test_link_forms(void **state)
{
    (void)state;
    /* Over the pages of a.test, the generator uses every link form, and every
     * link resolves to a URL of the site. */
    int rel = 0, abs = 0, proto = 0, upper = 0, dots = 0, esc41 = 0, frag = 0, track = 0,
        reorder = 0, spaces = 0, base = 0;
    cr_buf u;
    cr_buf_init(&u, 0);
    for (int i = 0; i < 60; i++) {
        char t[64], doc[128];
        resp r;
        page_target(i, t, sizeof(t));
        get("a.test", t, &r);
        assert_int_equal(r.status, 200);
        snprintf(doc, sizeof(doc), "http://a.test:%d%s", S.port, t);
        scan sc;
        scan_html(r.body.data, r.body.len, &sc);
        base += sc.base != NULL;
        for (size_t k = 0; k < sc.n; k++) {
            const char *h = sc.v[k].href;
            const char *hs = h + strspn(h, " \n");
            spaces += hs != h;
            if (strncmp(hs, "http://", 7) == 0)
                abs++;
            else if (strncasecmp(hs, "http://", 7) == 0)
                upper++;
            else if (strncmp(hs, "//", 2) == 0)
                proto++;
            else if (hs[0] != '/')
                rel++;
            dots += strstr(h, "/./") != NULL || strstr(h, "../") != NULL;
            esc41 += strstr(h, "%41") != NULL;
            frag += strchr(h, '#') != NULL;
            track += strstr(h, "utm_") != NULL || strstr(h, "fbclid=") != NULL || strstr(h, "gclid=") != NULL;
            reorder += strstr(h, "?n=") != NULL;
            cr_buf b;
            cr_buf_init(&b, 0);
            if (sc.base == NULL || resolve(doc, sc.base, &b) != 0)
                cr_buf_puts(&b, doc);
            assert_int_equal(resolve(b.data, h, &u), 0);
            cr_buf_release(&b);
            char prefix[64];
            snprintf(prefix, sizeof(prefix), ".test:%d/", S.port);
            assert_non_null(strstr(u.data, prefix));
            assert_null(strchr(u.data, '#'));
            assert_null(strstr(u.data, "utm_"));
            assert_null(strstr(u.data, "/./"));
        }
        scan_release(&sc);
        resp_release(&r);
    }
    cr_buf_release(&u);
    print_message("forms: rel %d abs %d proto %d upper %d dots %d %%41 %d frag %d track %d "
                  "reorder %d spaces %d base %d\n",
                  rel, abs, proto, upper, dots, esc41, frag, track, reorder, spaces, base);
    assert_true(rel > 0 && abs > 0 && proto > 0 && upper > 0 && dots > 0 && esc41 > 0);
    assert_true(frag > 0 && track > 0 && reorder > 0 && spaces > 0 && base > 0);
}

static int has_link_to(const char *doc, const char *body, const char *want)
{
    scan sc;
    cr_buf u;
    int found = 0;
    cr_buf_init(&u, 0);
    scan_html(body, strlen(body), &sc);
    for (size_t k = 0; k < sc.n; k++) {
        if (resolve(doc, sc.v[k].href, &u) == 0 && strcmp(u.data, want) == 0)
            found = 1;
    }
    scan_release(&sc);
    cr_buf_release(&u);
    return found;
}

static void test_calendar_trap(void **state)
{
    (void)state;
    static const struct {
        const char *page;
        const char *prev;   /* NULL: none */
        const char *next;
    } cases[] = {
        { "/calendar/2024/01", "/calendar/2023/12", "/calendar/2024/02" },
        { "/calendar/0001/01", NULL, "/calendar/0001/02" },
        { "/calendar/9999/12", "/calendar/9999/11", "/calendar/10000/01" },
        { "/calendar/10000/01", "/calendar/9999/12", "/calendar/10000/02" },
        { "/calendar/999999/12", "/calendar/999999/11", NULL },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char doc[128], want[128];
        resp r;
        get("a.test", cases[i].page, &r);
        assert_int_equal(r.status, 200);
        snprintf(doc, sizeof(doc), "http://a.test:%d%s", S.port, cases[i].page);
        if (cases[i].prev != NULL) {
            snprintf(want, sizeof(want), "http://a.test:%d%s", S.port, cases[i].prev);
            assert_true(has_link_to(doc, r.body.data, want));
        }
        if (cases[i].next != NULL) {
            snprintf(want, sizeof(want), "http://a.test:%d%s", S.port, cases[i].next);
            assert_true(has_link_to(doc, r.body.data, want));
        }
        assert_true(body_has(&r, "previous month") == (cases[i].prev != NULL));
        assert_true(body_has(&r, "next month") == (cases[i].next != NULL));
        resp_release(&r);
    }
    /* the other traps: a relative link that nests forever, a growing query */
    char doc[128], want[128];
    resp r;
    get("a.test", "/loop/loop/", &r);
    snprintf(doc, sizeof(doc), "http://a.test:%d/loop/loop/", S.port);
    snprintf(want, sizeof(want), "http://a.test:%d/loop/loop/loop/", S.port);
    assert_true(has_link_to(doc, r.body.data, want));
    resp_release(&r);
    get("a.test", "/search?f01=1&q=trap", &r);
    snprintf(doc, sizeof(doc), "http://a.test:%d/search?f01=1&q=trap", S.port);
    snprintf(want, sizeof(want), "http://a.test:%d/search?f01=1&f02=1&q=trap", S.port);
    assert_true(has_link_to(doc, r.body.data, want));
    resp_release(&r);
}

static void test_request_log(void **state)
{
    (void)state;
    client c;
    resp r1, r2, r3;
    long long before = (long long)time(NULL) * 1000 - 1000;
    client_init(&c, &S);
    /* sent raw: dot segment, %41, a tracking parameter */
    assert_int_equal(client_do(&c, "GET", "a.test", "/sec1/./%41rticle17.html?utm_source=x",
                               BODY_CAP, &r1), 0);
    assert_int_equal(r1.status, 200); /* served leniently, logged as sent */
    assert_int_equal(client_do(&c, "HEAD", "b.test", "/style.css", BODY_CAP, &r2), 0);
    assert_int_equal(client_do(&c, "GET", "x.test", "/nothing", BODY_CAP, &r3), 0);
    client_release(&c);
    long long after = (long long)time(NULL) * 1000 + 1000;

    testsite_req *v;
    size_t n;
    int found = 0;
    assert_int_equal(testsite_log_read(&S, &v, &n), 0);
    assert_true(n >= 3);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].target, "/sec1/./%41rticle17.html?utm_source=x") == 0) {
            assert_string_equal(v[i].host, "a.test");
            assert_string_equal(v[i].method, "GET");
            assert_int_equal(v[i].status, 200);
            assert_int_equal(v[i].bytes, r1.body.len);
            assert_true(v[i].ms >= before && v[i].ms <= after);
            assert_true(v[i].start_us == -1 && v[i].end_us == -1); /* no --log-timing */
            assert_string_equal(v[i].ua, "");
            found |= 1;
        } else if (strcmp(v[i].method, "HEAD") == 0 && strcmp(v[i].target, "/style.css") == 0) {
            assert_string_equal(v[i].host, "b.test");
            assert_int_equal(v[i].status, 200);
            assert_int_equal(v[i].bytes, 0);
            found |= 2;
        } else if (strcmp(v[i].target, "/nothing") == 0) {
            assert_string_equal(v[i].host, "x.test"); /* an unknown host is logged too */
            assert_int_equal(v[i].status, 404);
            found |= 4;
        }
    }
    assert_int_equal(found, 7);
    testsite_log_free(v, n);
    resp_release(&r1);
    resp_release(&r2);
    resp_release(&r3);
}

static void test_concurrent_requests(void **state)
{
    (void)state;
    /* 48 transfers at once over many connections: every answer complete,
     * every request logged on a line of its own, the flaky counter exact */
    enum { N = 48 };
    const char *const args[] = { "--pages", "200", "--flaky", "5", "--bomb-mib", "1", NULL };
    testsite ts;
    client c[N];
    resp r[N];
    char url[N][128];
    assert_int_equal(testsite_start(&ts, args), 0);
    CURLM *m = curl_multi_init();
    curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
    for (int i = 0; i < N; i++) {
        client_init(&c[i], &ts);
        memset(&r[i], 0, sizeof(r[i]));
        cr_buf_init(&r[i].body, 0);
        r[i].cap = BODY_CAP;
        if (i % 4 == 0)
            snprintf(url[i], sizeof(url[i]), "http://d.test:%d/flaky/%d.html", ts.port, 1 + i % 3);
        else {
            char t[64];
            page_target(100 + i, t, sizeof(t));
            snprintf(url[i], sizeof(url[i]), "http://%s:%d%s", HOSTS[i % 4], ts.port, t);
        }
        curl_easy_setopt(c[i].h, CURLOPT_URL, url[i]);
        curl_easy_setopt(c[i].h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c[i].h, CURLOPT_WRITEDATA, &r[i]);
        curl_multi_add_handle(m, c[i].h);
    }
    int running = 1;
    while (running) {
        curl_multi_perform(m, &running);
        curl_multi_wait(m, NULL, 0, 50, NULL);
    }
    int ok = 0, unavailable = 0;
    for (int i = 0; i < N; i++) {
        long st = 0;
        curl_easy_getinfo(c[i].h, CURLINFO_RESPONSE_CODE, &st);
        if (i % 4 == 0) {
            assert_true(st == 200 || st == 503);
            unavailable += st == 503;
        } else {
            assert_int_equal(st, 200);
            assert_true(body_has(&r[i], "</html>"));
            ok++;
        }
        curl_multi_remove_handle(m, c[i].h);
        resp_release(&r[i]);
        client_release(&c[i]);
    }
    curl_multi_cleanup(m);
    assert_int_equal(unavailable, 5); /* exactly the first five of twelve */
    assert_int_equal(ok, N - N / 4);

    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(&ts, &v, &n), 0); /* every line parses */
    assert_int_equal(n, N);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i].method, "GET");
    testsite_log_free(v, n);
    assert_int_equal(testsite_stop(&ts), 0);
}

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_latency(void **state)
{
    (void)state;
    /* --latency-ms holds every answer back at least that long after its
     * request arrived, and holds each connection on its own: every request
     * of a parallel batch reached the server before the first answer came
     * back (a server that waited for one answer before reading the next
     * request would log a later arrival). */
    enum { N = 24, LATENCY = 400 };
    const char *const args[] = { "--pages", "50", "--hosts", "600", "--latency-ms", "400",
                                 "--no-specials", NULL };
    testsite ts;
    CURL *h[N];
    resp r[N];
    char url[N][128], pin[N][128];
    struct curl_slist *pins[N];
    long long done_ms[N];
    assert_int_equal(testsite_start(&ts, args), 0);
    CURLM *m = curl_multi_init();
    for (int i = 0; i < N; i++) {
        /* hosts far apart in the 600: a.test, y.test, aw.test, ... */
        int k = i * 25;
        char name[8];
        if (k < 26)
            snprintf(name, sizeof(name), "%c", 'a' + k);
        else
            snprintf(name, sizeof(name), "%c%c", 'a' + k / 26 - 1, 'a' + k % 26);
        snprintf(url[i], sizeof(url[i]), "http://%s.test:%d/robots.txt", name, ts.port);
        snprintf(pin[i], sizeof(pin[i]), "%s.test:%d:127.0.0.1", name, ts.port);
        pins[i] = curl_slist_append(NULL, pin[i]);
        h[i] = curl_easy_init();
        memset(&r[i], 0, sizeof(r[i]));
        cr_buf_init(&r[i].body, 0);
        r[i].cap = BODY_CAP;
        curl_easy_setopt(h[i], CURLOPT_URL, url[i]);
        curl_easy_setopt(h[i], CURLOPT_RESOLVE, pins[i]);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h[i], CURLOPT_WRITEDATA, &r[i]);
        curl_easy_setopt(h[i], CURLOPT_PRIVATE, (char *)(intptr_t)i);
        curl_multi_add_handle(m, h[i]);
    }
    int running = 1, finished = 0;
    while (running || finished < N) {
        curl_multi_perform(m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            char *p = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
            done_ms[(intptr_t)p] = wall_ms();
            finished++;
        }
        if (running)
            curl_multi_wait(m, NULL, 0, 50, NULL);
    }
    long long first_done = done_ms[0];
    for (int i = 0; i < N; i++) {
        long st = 0;
        curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &st);
        assert_int_equal(st, 200);
        if (done_ms[i] < first_done)
            first_done = done_ms[i];
    }
    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(&ts, &v, &n), 0);
    assert_int_equal(n, N);
    long long last_arrival = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].ms > last_arrival)
            last_arrival = v[i].ms;
    /* each answer came no earlier than LATENCY after its request arrived */
    for (int i = 0; i < N; i++) {
        char host[32];
        snprintf(host, sizeof(host), "%.*s", (int)(strchr(url[i] + 7, ':') - (url[i] + 7)),
                 url[i] + 7);
        size_t k = 0;
        while (k < n && strcmp(v[k].host, host) != 0)
            k++;
        assert_true(k < n);
        assert_true(done_ms[i] - v[k].ms >= LATENCY);
    }
    assert_true(last_arrival < first_done);
    testsite_log_free(v, n);
    for (int i = 0; i < N; i++) {
        curl_multi_remove_handle(m, h[i]);
        curl_easy_cleanup(h[i]);
        curl_slist_free_all(pins[i]);
        resp_release(&r[i]);
    }
    curl_multi_cleanup(m);
    assert_int_equal(testsite_stop(&ts), 0);
}

/* ---- cases: determinism, shutdown, the command line -------------------- */

static const char *const det_pages[] = {
    "/", "/sec3/", "/sec5/Article13.html", "/list?cat=1&n=19", "/special/",
    "/special/malformed.html", "/robots.txt", "/img/4.png", "/calendar/2024/01",
    "/redirect/messy", "/special/base.html",
};
#define NDET (sizeof(det_pages) / sizeof(det_pages[0]))

static void fetch_all(const testsite *ts, char **bodies)
{
    client c;
    client_init(&c, ts);
    for (size_t i = 0; i < NDET; i++) {
        resp r;
        assert_int_equal(client_do(&c, "GET", i % 2 ? "b.test" : "a.test", det_pages[i], BODY_CAP, &r), 0);
        cr_buf all;
        cr_buf_init(&all, 0);
        cr_buf_printf(&all, "%ld %s %s\n", r.status, r.ctype, r.location);
        cr_buf_append(&all, r.body.data != NULL ? r.body.data : "", r.body.len);
        bodies[i] = cr_buf_take(&all);
        cr_buf_release(&all);
        resp_release(&r);
    }
    client_release(&c);
}

static void test_deterministic(void **state)
{
    (void)state;
    const char *const args[] = { "--seed", "11", "--pages", "40", "--bomb-mib", "1", NULL };
    const char *const other[] = { "--seed", "12", "--pages", "40", "--bomb-mib", "1", NULL };
    char *a[NDET], *b[NDET], *c[NDET];
    testsite ts;
    assert_int_equal(testsite_start(&ts, args), 0);
    int port = ts.port;
    fetch_all(&ts, a);
    assert_int_equal(testsite_stop(&ts), 0);
    /* the same options, a new process, the same port: the same bytes */
    assert_int_equal(testsite_start_on(&ts, port, args), 0);
    fetch_all(&ts, b);
    assert_int_equal(testsite_stop(&ts), 0);
    assert_int_equal(testsite_start_on(&ts, port, other), 0);
    fetch_all(&ts, c);
    assert_int_equal(testsite_stop(&ts), 0);
    for (size_t i = 0; i < NDET; i++) {
        if (strcmp(a[i], b[i]) != 0)
            print_message("%s differs between two runs\n", det_pages[i]);
        assert_string_equal(a[i], b[i]);
    }
    /* another seed gives another web (the robots.txt names its seed) */
    assert_string_not_equal(a[0], c[0]);
    assert_string_not_equal(a[2], c[2]);
    for (size_t i = 0; i < NDET; i++) {
        cr_free(a[i]);
        cr_free(b[i]);
        cr_free(c[i]);
    }
}

static void test_clean_shutdown(void **state)
{
    (void)state;
    char pf[256], line[32];
    const char *tmp = getenv("TMPDIR");
    snprintf(pf, sizeof(pf), "%s/crawld-testsite-port-%d", tmp != NULL ? tmp : "/tmp", (int)getpid());
    const char *const args[] = { "--pages", "20", "--port-file", pf, NULL };
    testsite ts;
    assert_int_equal(testsite_start(&ts, args), 0);
    FILE *f = fopen(pf, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    unlink(pf);
    assert_int_equal(strtol(line, NULL, 10), ts.port);

    /* an idle keep-alive connection stays open while we stop */
    client c;
    resp r;
    client_init(&c, &ts);
    assert_int_equal(client_do(&c, "GET", "a.test", "/", BODY_CAP, &r), 0);
    resp_release(&r);
    assert_int_equal(testsite_stop(&ts), 0);
    client_release(&c);

    const char *const plain[] = { "--pages", "20", "--delay-ms", "60000", NULL };
    assert_int_equal(testsite_start(&ts, plain), 0);
    assert_int_equal(testsite_stop_with(&ts, SIGINT), 0);
    assert_int_equal(testsite_stop(&ts), 0); /* already stopped: a no-op */

    /* a slow page (60 s) in flight does not hold the shutdown: it would be
     * killed after 20 s and the status would not be 0 */
    assert_int_equal(testsite_start(&ts, plain), 0);
    client_init(&c, &ts);
    char url[128];
    testsite_url(&ts, "a.test", "/slow/delay.html", url, sizeof(url));
    curl_easy_setopt(c.h, CURLOPT_URL, url);
    curl_easy_setopt(c.h, CURLOPT_WRITEFUNCTION, on_body);
    memset(&r, 0, sizeof(r));
    cr_buf_init(&r.body, 0);
    r.cap = BODY_CAP;
    curl_easy_setopt(c.h, CURLOPT_WRITEDATA, &r);
    CURLM *m = curl_multi_init();
    curl_multi_add_handle(m, c.h);
    int running = 1;
    long sent = 0;
    for (int i = 0; i < 2000 && running && sent == 0; i++) {
        curl_multi_perform(m, &running);
        curl_easy_getinfo(c.h, CURLINFO_REQUEST_SIZE, &sent);
        curl_multi_wait(m, NULL, 0, 10, NULL);
    }
    assert_true(sent > 0);
    assert_int_equal(testsite_stop(&ts), 0);
    while (running) {
        curl_multi_perform(m, &running);
        curl_multi_wait(m, NULL, 0, 10, NULL);
    }
    curl_multi_remove_handle(m, c.h);
    curl_multi_cleanup(m);
    resp_release(&r);
    client_release(&c);
}

/* --log-timing: each line, written once the answer is sent, also says when
 * the request arrived and ended (µs) and who sent it (User-Agent), so a
 * cluster test can tell which node had a host busy when. */
static void test_request_log_timing(void **state)
{
    (void)state;
    testsite ts;
    const char *const args[] = { "--pages", "30", "--delay-ms", "200", "--log-timing", NULL };
    assert_int_equal(testsite_start(&ts, args), 0);
    client c;
    resp r;
    client_init(&c, &ts);
    long long before = (long long)time(NULL) * 1000000 - 1000000;
    curl_easy_setopt(c.h, CURLOPT_USERAGENT, "node a/1");
    assert_int_equal(client_do(&c, "GET", "a.test", "/slow/delay.html", BODY_CAP, &r), 0);
    assert_int_equal(r.status, 200);
    resp_release(&r);
    curl_easy_setopt(c.h, CURLOPT_USERAGENT, NULL);
    assert_int_equal(client_do(&c, "HEAD", "b.test", "/", BODY_CAP, &r), 0);
    resp_release(&r);
    client_release(&c);
    long long after = (long long)time(NULL) * 1000000 + 1000000;
    assert_int_equal(testsite_stop(&ts), 0);

    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(&ts, &v, &n), 0);
    assert_int_equal(n, 2);
    /* logged when answered: the lines may come in either order, as the
     * server may stamp the first one's end (once its last byte is queued)
     * after the client, which had it already, opened the second
     * connection; so each is found by its method */
    const testsite_req *g = strcmp(v[0].method, "GET") == 0 ? &v[0] : &v[1];
    const testsite_req *h = g == &v[0] ? &v[1] : &v[0];
    assert_string_equal(g->method, "GET");
    assert_string_equal(g->target, "/slow/delay.html");
    assert_string_equal(g->ua, "node%20a/1"); /* escaped like the target */
    assert_true(g->start_us >= before && g->end_us <= after);
    assert_int_equal(g->ms, g->start_us / 1000);
    assert_true(g->end_us - g->start_us >= 200 * 1000); /* held for --delay-ms */
    assert_string_equal(h->method, "HEAD");
    assert_string_equal(h->ua, "-"); /* none sent */
    /* asked once the slow answer had come, so after its delay */
    assert_true(h->start_us >= g->start_us + 200 * 1000);
    assert_true(h->end_us >= h->start_us); /* stamped when the server is done: no upper bound */
    testsite_log_free(v, n);
}

/* "--NAME wants a number" names the option given, for every numeric one
 * (the option table and its enum were once in different orders). */
static void test_option_errors_name_the_option(void **state)
{
    (void)state;
    static const char *const numeric[] = {
        "hosts", "pages", "delay-ms", "retry-after", "flaky", "big-bytes", "bomb-mib",
        "latency-ms", "port", "max-depth", "max-redirects", "max-path-depth",
        "max-repeat-segment", "max-query-params", "max-url-length", "requisite-depth", "epoch",
        "change-pct", "remove-pct", "add-pages", "keep-epochs", "plain-host",
    };
    const char *bin = getenv("CRAWLD_TESTSITE");
    if (bin == NULL || *bin == '\0')
        bin = "bin/testsite";
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        char opt[64], want[96];
        cr_buf err;
        cr_buf_init(&err, 0);
        snprintf(opt, sizeof(opt), "--%s", numeric[i]);
        const char *const argv[] = { bin, opt, "x", NULL };
        assert_int_equal(proc_run(argv, NULL, 0, NULL, &err), 2);
        assert_int_equal(cr_buf_putc(&err, '\0'), 0);
        snprintf(want, sizeof(want), "testsite: %s wants a number in [", opt);
        if (strstr(err.data, want) == NULL)
            fail_msg("%s x: %s", opt, err.data);
        cr_buf_release(&err);
    }
}

static void test_command_line(void **state)
{
    (void)state;
    char *out = NULL;
    const char *const help[] = { "--help", NULL };
    assert_int_equal(testsite_run(help, &out, NULL), 0);
    assert_non_null(strstr(out, "--print-expected SCOPE"));
    assert_non_null(strstr(out, "/calendar/YYYY/MM"));
    cr_free(out);
    const char *const bad_pages[] = { "--pages", "0", NULL };
    assert_int_equal(testsite_run(bad_pages, NULL, NULL), 2);
    const char *const bad_arg[] = { "--no-such-option", NULL };
    assert_int_equal(testsite_run(bad_arg, NULL, NULL), 2);
    const char *const no_port[] = { "--print-expected", "host", "--max-depth", "2", NULL };
    assert_int_equal(testsite_run(no_port, NULL, NULL), 1);
    /* the calendar is endless: without a depth limit there is no answer */
    const char *const endless[] = { "--port", "8080", "--print-expected", "host", NULL };
    assert_int_equal(testsite_run(endless, NULL, NULL), 1);
    const char *const bad_seed[] = { "--port", "8080", "--print-expected", "host", "--max-depth",
                                     "2", "--from", "http://z.test:8080/", NULL };
    assert_int_equal(testsite_run(bad_seed, NULL, NULL), 1);
    const char *const bad_scope[] = { "--port", "8080", "--print-expected", "galaxy", NULL };
    assert_int_equal(testsite_run(bad_scope, NULL, NULL), 2);
}

/* ---- cases: the expected set ------------------------------------------- */

static int in_list(char **v, size_t n, const char *url)
{
    return bsearch(&url, v, n, sizeof(*v), str_cmp) != NULL;
}

static void test_expected_rules(void **state)
{
    (void)state;
    const char *const args[] = {
        "--seed", "7", "--pages", "60", "--hosts", "4", "--port", "8080", "--print-expected",
        "all", "--max-depth", "4", "--with-robots", "--from", "http://a.test:8080/",
        "--from", "http://C.test:8080/", "--from", "http://d.test:8080/", NULL,
    };
    char *out = run_ok(args);
    char **v;
    size_t n = split_lines(out, &v);
    assert_true(n > 100);
    static const char *const yes[] = {
        "http://a.test:8080/", "http://a.test:8080/robots.txt", "http://a.test:8080/private/public.html",
        "http://a.test:8080/doc/9.pdf?download=1", "http://a.test:8080/hidden/mal-eof.html",
        "http://a.test:8080/hidden/from-xhtml.html", "http://a.test:8080/hidden/based/child.html",
        "http://a.test:8080/hidden/refresh-target.html", "http://a.test:8080/redirect/loop/b",
        "http://a.test:8080/big/bomb.html", "http://b.test:8080/", "http://b.test:8080/robots.txt",
        "http://c.test:8080/hidden/blocked.html", "http://c.test:8080/private/1.html",
        "http://d.test:8080/robots.txt",
    };
    static const char *const no[] = {
        "http://a.test:8080/private/1.html", "http://a.test:8080/hidden/blocked.html",
        "http://a.test:8080/doc/9.pdf", "http://a.test:8080/hidden/nofollow.html",
        "http://a.test:8080/hidden/nofollow2.html", "http://a.test:8080/hidden/meta-nofollow-child.html",
        "http://a.test:8080/hidden/from-plain.html", "http://a.test:8080/hidden/from-js.html",
        "http://a.test:8080/hidden/mal-in-comment.html", "http://a.test:8080/hidden/mal-in-script.html",
        "http://a.test:8080/hidden/mal-dup2.html", "http://a.test:8080/sec3/Article11.html",
        "http://a.test:8080/list?cat=4&n=49", "http://a.test:8080/wrong/", "http://d.test:8080/",
        "http://a.test:8080/calendar/2024/05",
    };
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (!in_list(v, n, yes[i]))
            print_message("missing %s\n", yes[i]);
        assert_true(in_list(v, n, yes[i]));
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        if (in_list(v, n, no[i]))
            print_message("unexpected %s\n", no[i]);
        assert_false(in_list(v, n, no[i]));
    }
    for (size_t i = 0; i < n; i++) /* nothing but robots.txt on the 5xx host */
        assert_true(strncmp(v[i], "http://d.test", 13) != 0 || strstr(v[i], "/robots.txt") != NULL);
    free_list(v, n);
    cr_free(out);

    /* host scope from a.test stays on a.test; --follow-nofollow adds those */
    const char *const host[] = {
        "--seed", "7", "--pages", "60", "--hosts", "4", "--port", "8080", "--print-expected",
        "host", "--max-depth", "4", "--follow-nofollow", NULL,
    };
    out = run_ok(host);
    n = split_lines(out, &v);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(strncmp(v[i], "http://a.test:8080/", 19), 0);
    assert_true(in_list(v, n, "http://a.test:8080/hidden/nofollow.html"));
    assert_true(in_list(v, n, "http://a.test:8080/hidden/meta-nofollow-child.html"));
    assert_false(in_list(v, n, "http://a.test:8080/robots.txt")); /* without --with-robots */
    free_list(v, n);
    cr_free(out);
}

static void test_expected_urls_answer(void **state)
{
    (void)state;
    /* every URL of the expected set answers what the printer says it will */
    char port[16];
    snprintf(port, sizeof(port), "%d", S.port);
    const char *const args[] = {
        "--seed", "7", "--pages", "60", "--hosts", "4", "--port", port, "--print-expected",
        "all", "--max-depth", "3", "--annotate", "--with-robots", "--fetch-requisites", NULL,
    };
    char *out = run_ok(args);
    client c;
    client_init(&c, &S);
    size_t lines = 0;
    for (const char *p = out; *p != '\0';) {
        char url[1024], depth[16];
        int want;
        size_t ll = strcspn(p, "\n");
        assert_int_equal(sscanf(p, "%1023[^\t]\t%15[^\t]\t%d", url, depth, &want), 3);
        p += ll + (p[ll] == '\n');
        const char *host = url + 7;
        size_t hl = strcspn(host, ":");
        char h[32];
        snprintf(h, sizeof(h), "%.*s", (int)hl, host);
        const char *target = host + strcspn(host, "/");
        resp r;
        assert_int_equal(client_do(&c, "GET", h, target, 64 * 1024, &r), 0);
        int flaky = strstr(target, "/flaky/") != NULL;
        if (r.status != want && !(flaky && r.status == 503))
            print_message("%s answered %ld, expected %d\n", url, r.status, want);
        assert_true(r.status == want || (flaky && r.status == 503));
        resp_release(&r);
        lines++;
    }
    assert_true(lines > 150);
    client_release(&c);
    cr_free(out);
}

/* One BFS over HTTP against the printer, with the same options. */
static void bfs_versus_printer(const crawl_opts *o, const char *const *site_args,
                               const char *const *printer_extra)
{
    testsite ts;
    assert_int_equal(testsite_start(&ts, site_args), 0);
    char **got;
    size_t ngot = crawl(&ts, o, &got);

    const char *args[64];
    int na = 0;
    char port[16], depth[16], redir[16], rep[16], qry[16], url[16], pdepth[16], from[128];
    snprintf(port, sizeof(port), "%d", ts.port);
    snprintf(depth, sizeof(depth), "%d", o->max_depth);
    snprintf(redir, sizeof(redir), "%d", o->max_redirects);
    snprintf(rep, sizeof(rep), "%d", o->max_repeat);
    snprintf(qry, sizeof(qry), "%d", o->max_query);
    snprintf(url, sizeof(url), "%d", o->max_url);
    snprintf(pdepth, sizeof(pdepth), "%d", o->max_path);
    snprintf(from, sizeof(from), "http://a.test:%d%s", ts.port, o->seed);
    for (const char *const *a = site_args; *a != NULL; a++)
        args[na++] = *a;
    const char *fixed[] = { "--port", port, "--print-expected", o->scope, "--from", from,
                            "--max-depth", depth, "--max-redirects", redir,
                            "--max-repeat-segment", rep, "--max-query-params", qry,
                            "--max-url-length", url, "--max-path-depth", pdepth,
                            "--with-robots", NULL };
    for (const char *const *a = fixed; *a != NULL; a++)
        args[na++] = *a;
    for (const char *const *a = printer_extra; a != NULL && *a != NULL; a++)
        args[na++] = *a;
    args[na] = NULL;
    char *out = run_ok(args);
    char **want;
    size_t nwant = split_lines(out, &want);
    print_message("scope %s from %s: crawl fetched %zu URLs, printer says %zu\n", o->scope,
                  o->seed, ngot, nwant);
    assert_same_set(got, ngot, "the HTTP crawl", want, nwant, "--print-expected");
    free_list(got, ngot);
    free_list(want, nwant);
    cr_free(out);

    /* the crawl is also in the server's log, each URL fetched once */
    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(&ts, &v, &n), 0);
    assert_int_equal(n, ngot);
    testsite_log_free(v, n);
    assert_int_equal(testsite_stop(&ts), 0);
}

static const char *const BFS_SITE[] = {
    "--seed", "5", "--pages", "50", "--hosts", "4", "--delay-ms", "20", "--big-bytes",
    "11000000", "--bomb-mib", "4", "--flaky", "1", NULL,
};

static void test_expected_matches_crawl_host(void **state)
{
    (void)state;
    const crawl_opts o = { "host", "/", 5, 3, 2, 4, 200, 0, 0, 1 };
    const char *const extra[] = { "--fetch-requisites", NULL };
    bfs_versus_printer(&o, BFS_SITE, extra);
}

static void test_expected_matches_crawl_all(void **state)
{
    (void)state;
    const crawl_opts o = { "all", "/", 3, 5, 3, 3, 0, 3, 1, 0 };
    const char *const extra[] = { "--follow-nofollow", NULL };
    bfs_versus_printer(&o, BFS_SITE, extra);
}

static void test_expected_matches_crawl_prefix(void **state)
{
    (void)state;
    const crawl_opts o = { "prefix", "/special/", 6, 5, 0, 0, 0, 3, 0, 0 };
    bfs_versus_printer(&o, BFS_SITE, NULL);
}

static int group_setup(void **state)
{
    (void)state;
    int rc = testsite_start(&S, S_ARGS);
    if (rc != 0)
        fprintf(stderr, "cannot start the test site: %s\n", strerror(-rc));
    return rc == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return testsite_stop(&S) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_home_page),
        cmocka_unit_test(test_keep_alive),
        cmocka_unit_test(test_virtual_hosts),
        cmocka_unit_test(test_methods),
        cmocka_unit_test(test_robots_txt),
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_error_statuses),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_flaky),
        cmocka_unit_test(test_slow_pages),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_non_html),
        cmocka_unit_test(test_malformed_html),
        cmocka_unit_test(test_link_forms),
        cmocka_unit_test(test_calendar_trap),
        cmocka_unit_test(test_request_log),
        cmocka_unit_test(test_request_log_timing),
        cmocka_unit_test(test_option_errors_name_the_option),
        cmocka_unit_test(test_concurrent_requests),
        cmocka_unit_test(test_latency),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_clean_shutdown),
        cmocka_unit_test(test_command_line),
        cmocka_unit_test(test_expected_rules),
        cmocka_unit_test(test_expected_urls_answer),
        cmocka_unit_test(test_expected_matches_crawl_host),
        cmocka_unit_test(test_expected_matches_crawl_all),
        cmocka_unit_test(test_expected_matches_crawl_prefix),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    xmlInitParser();
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    xmlCleanupParser();
    curl_global_cleanup();
    return failed;
}
