/* tests/site/sitemaps: the test site's sitemaps (see sitemaps.h). One table
 * says what each sitemap lists; the body and the expected set's entries
 * both come from it. */
#include "tests/site/sitemaps.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "common/alloc.h"

#define NS "http://www.sitemaps.org/schemas/sitemap/0.9"

enum form { F_HTTP, F_OTHER_HOST, F_HTTPS, F_RELATIVE };

typedef struct ent {
    const char *sitemap;    /* the sitemap that lists it */
    enum form form;
    const char *target;
    const char *lastmod;    /* NULL: none */
} ent;

static const ent ents[] = {
    { "/sitemap.xml", F_HTTP, "/", "2026-01-01" },
    { "/sitemap.xml", F_HTTP, "/sm/only/1.html", "2025-11-30T12:00:00Z" },
    { "/sitemap.xml", F_HTTP, "/sm/only/2.html", "2025-11" },
    { "/sitemap.xml", F_HTTP, "/sm/only/3.html", NULL },
    { "/sitemap.xml", F_OTHER_HOST, "/sm/only/9.html", NULL },
    { "/sitemap.xml", F_HTTPS, "/sm/only/8.html", NULL },
    { "/sitemap.xml", F_RELATIVE, "sm/only/7.html", NULL },
    { "/sitemaps/index.xml", F_HTTP, "/sitemaps/child.xml.gz", "2025-12-01T08:30+01:00" },
    { "/sitemaps/index.xml", F_HTTP, "/sitemaps/plain.xml", NULL },
    { "/sitemaps/index.xml", F_HTTP, "/sitemaps/broken.xml", NULL },
    { "/sitemaps/index.xml", F_OTHER_HOST, "/sitemaps/x.xml", NULL },
    { "/sitemaps/child.xml.gz", F_HTTP, "/sitemaps/only/1.html", NULL },
    { "/sitemaps/child.xml.gz", F_HTTP, "/sitemaps/only/2.html", "2025-10-10" },
    { "/sitemaps/child.xml.gz", F_HTTP, "/sm/outside.html", NULL },
    { "/sitemaps/plain.xml", F_HTTP, "/sitemaps/only/3.html", NULL },
};

static const struct {
    const char *target;
    int n;                  /* SITEMAP_RES_* */
    const char *ctype;
} files[] = {
    { "/sitemap.xml", SITEMAP_RES_URLSET, "application/xml" },
    { "/sitemaps/index.xml", SITEMAP_RES_INDEX, "application/xml" },
    { "/sitemaps/child.xml.gz", SITEMAP_RES_URLSET, "application/gzip" },
    { "/sitemaps/plain.xml", SITEMAP_RES_URLSET, "text/xml; charset=utf-8" },
    { "/sitemaps/broken.xml", SITEMAP_RES_BROKEN, "application/xml" },
};

static const char *const pages[] = {
    "/sm/only/1.html", "/sm/only/2.html", "/sm/only/3.html", "/sitemaps/only/1.html",
    "/sitemaps/only/2.html", "/sitemaps/only/3.html", "/sm/outside.html",
};

static bool on(const site *s, int h) { return site_options(s)->sitemaps && h == 0; }

int site_sitemap_lookup(const site *s, int h, const char *target, site_res *r)
{
    if (!on(s, h))
        return -ENOENT;
    memset(r, 0, sizeof *r);
    r->kind = SK_SITEMAP;
    r->status = 200;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (strcmp(files[i].target, target) == 0) {
            r->n = files[i].n;
            r->ctype = files[i].ctype;
            return 0;
        }
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(pages[i], target) == 0) {
            r->n = SITEMAP_RES_PAGE;
            r->ctype = "text/html; charset=utf-8";
            return 0;
        }
    return -ENOENT;
}

int site_sitemap_robots(const site *s, int h, cr_buf *out)
{
    char auth[96];
    if (!on(s, h) || site_authority(s, h, auth, sizeof auth) != 0)
        return 0;
    return cr_buf_printf(out, "Sitemap: http://%s/sitemaps/index.xml\n", auth);
}

/* The loc of e as written in the file, or NULL when the form cannot be
 * written (another host on a one-host site). */
static int loc_of(const site *s, int h, const ent *e, cr_buf *out)
{
    char auth[96];
    int th = e->form == F_OTHER_HOST ? h + 1 : h;
    if (th >= site_host_count(s))
        return 1;
    if (site_authority(s, th, auth, sizeof auth) != 0)
        return -E2BIG;
    switch (e->form) {
    case F_RELATIVE:
        return cr_buf_puts(out, e->target);
    case F_HTTPS:
        return cr_buf_printf(out, "https://%s%s", auth, e->target);
    default:
        return cr_buf_printf(out, "http://%s%s", auth, e->target);
    }
}

static int gzip_buf(cr_buf *b)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    size_t cap = deflateBound(&z, (uLong)b->len) + 64;
    unsigned char *out = cr_malloc(cap);
    if (out == NULL) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (unsigned char *)b->data;
    z.avail_in = (uInt)b->len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    int rc = zr == Z_STREAM_END ? 0 : -EIO;
    cr_buf_clear(b);
    if (rc == 0)
        rc = cr_buf_append(b, out, n);
    cr_free(out);
    return rc;
}

int site_sitemap_body(const site *s, int h, const char *target, const site_res *r, cr_buf *out)
{
    if (r->n == SITEMAP_RES_PAGE)
        return cr_buf_printf(out, "<!DOCTYPE html>\n<html><head><title>%s</title></head>"
                                  "<body><p>Only a sitemap lists this page.</p></body></html>\n",
                             target);
    if (r->n == SITEMAP_RES_BROKEN)
        return cr_buf_puts(out, "<?xml version=\"1.0\"?>\n<urlset xmlns=\"" NS "\">\n"
                                "<url><loc>http://a.test/sitemaps/only/5.html</lo></url>\n");
    bool index = r->n == SITEMAP_RES_INDEX;
    const char *entry = index ? "sitemap" : "url";
    int rc = cr_buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns=\"" NS "\">\n",
                           index ? "sitemapindex" : "urlset");
    cr_buf loc;
    cr_buf_init(&loc, 0);
    for (size_t i = 0; i < sizeof ents / sizeof ents[0] && rc == 0; i++) {
        const ent *e = &ents[i];
        if (strcmp(e->sitemap, target) != 0)
            continue;
        cr_buf_clear(&loc);
        int lr = loc_of(s, h, e, &loc);
        if (lr == 1)
            continue;
        if (lr < 0) {
            rc = lr;
            break;
        }
        /* the first entry's loc has white space around it, to be trimmed */
        rc = cr_buf_printf(out, "  <%s>\n    <loc>%s%s%s</loc>\n", entry, i == 0 ? "\n  " : "",
                           loc.data, i == 0 ? "  \n" : "");
        const char *lm = e->lastmod;
        if (i == 0 && site_options(s)->sitemap_lastmod[0] != '\0')
            lm = site_options(s)->sitemap_lastmod;
        if (rc == 0 && lm)
            rc = cr_buf_printf(out, "    <lastmod>%s</lastmod>\n", lm);
        if (rc == 0 && !index)
            rc = cr_buf_puts(out, "    <changefreq>daily</changefreq>\n");
        if (rc == 0)
            rc = cr_buf_printf(out, "  </%s>\n", entry);
    }
    cr_buf_release(&loc);
    if (rc == 0)
        rc = cr_buf_printf(out, "</%s>\n", index ? "sitemapindex" : "urlset");
    size_t tl = strlen(target);
    if (rc == 0 && tl > 3 && strcmp(target + tl - 3, ".gz") == 0)
        rc = gzip_buf(out);
    return rc;
}

int site_sitemap_entries(const site *s, int h, const char *target, const site_res *r,
                         site_links *links)
{
    if (r->n != SITEMAP_RES_URLSET && r->n != SITEMAP_RES_INDEX)
        return 0;
    for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++) {
        const ent *e = &ents[i];
        if (strcmp(e->sitemap, target) != 0 || e->form == F_HTTPS || e->form == F_RELATIVE)
            continue;
        int th = e->form == F_OTHER_HOST ? h + 1 : h;
        if (th >= site_host_count(s))
            continue;
        if (links->n == links->cap) {
            size_t cap = links->cap ? links->cap * 2 : 8;
            site_link *v = cr_realloc(links->v, cap * sizeof *v);
            if (v == NULL)
                return -ENOMEM;
            links->v = v;
            links->cap = cap;
        }
        char *t = cr_strdup(e->target);
        if (t == NULL)
            return -ENOMEM;
        links->v[links->n++] = (site_link){ .host = th, .target = t,
                                            .elem = r->n == SITEMAP_RES_INDEX ? SE_LINK_CANONICAL
                                                                              : SE_A };
    }
    return 0;
}
