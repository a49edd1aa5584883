/* crawler/package: the WACZ of a crawl (see package.h). The title hook
 * decodes the stored payload (Content-Encoding, at most the page cap) and
 * feeds it to a link parser, whose first <title> is the page's title; the
 * charset comes from the Content-Type as for a crawl. */
#include "package.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/buf.h"
#include "crawler/web/decode.h"
#include "crawler/web/links.h"
#include "crawler/wire.h"

#define TITLE_PAGE_BYTES (256u << 10) /* a title sits in <head>: the page's start is enough */

typedef struct titler {
    links_parser *lp;
} titler;

static void no_link(void *ud, const links_link *l)
{
    (void)ud;
    (void)l;
}

/* The value of header name in an HTTP header block (first line), into out. */
static void header_value(const char *h, size_t n, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    const char *p = h, *end = h + n;
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t len = e ? (size_t)(e - p) : (size_t)(end - p);
        if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            size_t vl = len - nl - 1;
            while (vl > 0 && (*v == ' ' || *v == '\t'))
                v++, vl--;
            while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            snprintf(out, outlen, "%.*s", (int)vl, v);
            return;
        }
        p += len + 1;
    }
}

static int feed(void *ctx, const char *data, size_t len)
{
    titler *t = ctx;
    links_feed(t->lp, data, len);
    return 0;
}

static int title_hook(void *ud, const char *headers, size_t hlen, const char *payload,
                      size_t plen, cr_buf *title)
{
    titler *t = ud;
    char ce[256], ct[256], msg[128];
    header_value(headers, hlen, "Content-Encoding", ce, sizeof ce);
    header_value(headers, hlen, "Content-Type", ct, sizeof ct);
    decoder *d = NULL;
    if (decoder_new(ce, TITLE_PAGE_BYTES, &d, msg, sizeof msg) < 0)
        return -1;
    links_reset(t->lp, ct[0] ? ct : NULL);
    int rc = decoder_write(d, payload, plen, feed, t);
    decoder_free(d);
    if (rc < 0 && rc != -E2BIG && rc != -EBADMSG)
        return -1; /* a cut or damaged body still has the title it had */
    links_finish(t->lp);
    size_t n;
    const char *s = links_title(t->lp, &n);
    if (s == NULL || n == 0)
        return 0;
    return cr_buf_append(title, s, n) < 0 ? -1 : 0;
}

int package_crawl(const crawl_config *cfg, const char *state_dir, const char *out_path,
                  char *chosen, size_t chosen_len, wacz_stats *st, char *err, size_t errlen)
{
    crawl_config local = *cfg;
    local.storage.state_dir = (char *)state_dir;
    char archive_dir[4096], auto_path[4352];
    warc_opts wo;
    wire_warc_opts(&local, archive_dir, sizeof archive_dir, &wo);
    if (out_path == NULL) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/wacz", state_dir);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: %s", dir, strerror(errno));
            return -errno;
        }
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        char ts[32];
        strftime(ts, sizeof ts, "%Y%m%d%H%M%S", &tm);
        snprintf(auto_path, sizeof auto_path, "%s/%s-%s.wacz", dir, cfg->archive.prefix, ts);
        /* two packages in one second: a serial after the time */
        struct stat sb;
        for (int i = 1; i < 1000 && stat(auto_path, &sb) == 0; i++)
            snprintf(auto_path, sizeof auto_path, "%s/%s-%s-%d.wacz", dir, cfg->archive.prefix, ts,
                     i);
        out_path = auto_path;
    }
    if (chosen != NULL)
        snprintf(chosen, chosen_len, "%s", out_path);
    titler t = { links_new(NULL, no_link, NULL) };
    if (t.lp == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    char title[512];
    snprintf(title, sizeof title, "crawld crawl of %s",
             cfg->crawl.seeds.n > 0 ? cfg->crawl.seeds.v[0] : state_dir);
    wacz_opts o = { .archive_dir = archive_dir, .prefix = cfg->archive.prefix,
                    .out_path = out_path, .title = title, .title_fn = title_hook,
                    .title_ud = &t, .max_page_bytes = TITLE_PAGE_BYTES };
    int rc = wacz_write(&o, st, err, errlen);
    links_free(t.lp);
    return rc;
}
