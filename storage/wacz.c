/* storage/wacz: the WACZ packager (see wacz.h).
 *
 * Steps, each finished before the next starts:
 *   1. list PREFIX-*.warc.gz in the archive folder, in name order (which is
 *      the order they were written: the name holds the start time and a
 *      serial);
 *   2. read each one's .cdxj: keep the lines that are ours and end inside
 *      the file; the file is packaged up to the furthest end among them;
 *   3. hash what will be packaged (sha256 of each WARC prefix, read here
 *      once; libzip reads the same byte range again when it writes);
 *   4. read back each HTML page's record for its title (the caller's hook);
 *   5. build index.cdxj (sorted), pages.jsonl, datapackage.json and its
 *      digest in memory;
 *   6. libzip writes the ZIP to a temporary file; fsync; link() it to the
 *      output name (fails if that exists: never replaced), unlink the
 *      temporary name, fsync the folder.
 * Ownership: every buffer lives in the `pack` struct until pack_release. */
#include "wacz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <zip.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/err.h"
#include "storage/cdxj.h"
#include "storage/warc.h"

#define DEF_MAX_PAGE (1u << 20)
#define DEF_MAX_INDEX (1u << 30)
#define MAX_HEADERS (256u << 10) /* WARC + HTTP header blocks read back, at most */
#define READ_CHUNK (1u << 20)
#define NAME_MAX_LEN 255

typedef struct warcfile {
    char name[NAME_MAX_LEN + 1];
    char *path;
    uint64_t size, keep;        /* on disk; packaged (end of the last indexed record) */
    char *index;                /* the .cdxj, NUL-terminated */
    char sha256[65];
} warcfile;

typedef struct line {
    const char *p;              /* into a warcfile's index */
    size_t n;
} line;

typedef struct page {
    char *url;
    char ts[15];
    char *title;                /* NULL: none */
} page;

typedef struct pack {
    const wacz_opts *o;
    wacz_stats *st;
    char *err;
    size_t errlen;
    warcfile *f;
    size_t nf;
    line *lines;
    size_t nl, capl;
    page *pages;
    size_t np, capp;
    cr_buf index, pages_jsonl, datapackage, digest;
    char *tmp_path;
} pack;

static int fail(pack *k, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(pack *k, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->err, k->errlen, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- small pieces -------------------------------------------------------- */

static int sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
        return -ENOMEM;
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* sha256 of the first len bytes of path. */
static int sha256_file(const char *path, uint64_t len, char out[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = 0;
    unsigned char *buf = cr_malloc(READ_CHUNK);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (buf == NULL || ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        rc = -ENOMEM;
        goto out;
    }
    uint64_t done = 0;
    while (done < len) {
        size_t want = len - done < READ_CHUNK ? (size_t)(len - done) : READ_CHUNK;
        ssize_t r = pread(fd, buf, want, (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -errno : -EIO;
            goto out;
        }
        if (EVP_DigestUpdate(ctx, buf, (size_t)r) != 1) {
            rc = -ENOMEM;
            goto out;
        }
        done += (uint64_t)r;
    }
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
out:
    EVP_MD_CTX_free(ctx);
    cr_free(buf);
    close(fd);
    return rc;
}

static int read_whole(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    cr_buf b;
    cr_buf_init(&b, max);
    char tmp[65536];
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            break;
        }
        if (r == 0)
            break;
        rc = cr_buf_append(&b, tmp, (size_t)r);
        if (rc < 0)
            break;
    }
    close(fd);
    if (rc == 0 && b.data == NULL)
        rc = cr_buf_append(&b, "", 0);
    if (rc < 0) {
        cr_buf_release(&b);
        return rc;
    }
    *len = b.len;
    *out = cr_buf_take(&b);
    return *out ? 0 : -ENOMEM;
}

/* "20240506070809" -> "2024-05-06T07:08:09Z" (out: 21 bytes). */
static void ts_iso(const char *ts, char out[21])
{
    snprintf(out, 21, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", ts, ts + 4, ts + 6, ts + 8, ts + 10,
             ts + 12);
}

static bool digits14(const char *s, size_t n)
{
    if (n != 14)
        return false;
    for (size_t i = 0; i < 14; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

/* ---- 1. the WARC files ------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const warcfile *)a)->name, ((const warcfile *)b)->name);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int list_warcs(pack *k)
{
    const wacz_opts *o = k->o;
    DIR *d = opendir(o->archive_dir);
    if (d == NULL)
        return fail(k, -errno, "%s: %s", o->archive_dir, strerror(errno));
    size_t cap = 0, plen = strlen(o->prefix);
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strncmp(n, o->prefix, plen) != 0 || n[plen] != '-' || !ends_with(n, ".warc.gz") ||
            strlen(n) > NAME_MAX_LEN)
            continue;
        if (k->nf == cap) {
            size_t nc = cap ? 2 * cap : 16;
            warcfile *v = cr_realloc(k->f, nc * sizeof *v);
            if (v == NULL) {
                rc = fail(k, -ENOMEM, "out of memory");
                break;
            }
            k->f = v;
            cap = nc;
        }
        warcfile *w = &k->f[k->nf];
        memset(w, 0, sizeof *w);
        snprintf(w->name, sizeof w->name, "%s", n);
        k->nf++;
    }
    closedir(d);
    if (rc == 0 && k->nf > 1)
        qsort(k->f, k->nf, sizeof *k->f, name_cmp);
    return rc;
}

/* ---- 2. their indexes ---------------------------------------------------- */

static int add_line(pack *k, const char *p, size_t n)
{
    if (k->nl == k->capl) {
        size_t nc = k->capl ? 2 * k->capl : 1024;
        line *v = cr_realloc(k->lines, nc * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        k->lines = v;
        k->capl = nc;
    }
    k->lines[k->nl++] = (line){ p, n };
    return 0;
}

static int add_page(pack *k, const char *url, const char *ts)
{
    if (k->np == k->capp) {
        size_t nc = k->capp ? 2 * k->capp : 256;
        page *v = cr_realloc(k->pages, nc * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        k->pages = v;
        k->capp = nc;
    }
    page *g = &k->pages[k->np];
    memset(g, 0, sizeof *g);
    g->url = cr_strdup(url);
    if (g->url == NULL)
        return -ENOMEM;
    memcpy(g->ts, ts, 14);
    g->ts[14] = '\0';
    k->np++;
    return 0;
}

static bool is_html_mime(const char *m)
{
    return m != NULL && (strcmp(m, "text/html") == 0 || strcmp(m, "application/xhtml+xml") == 0);
}

/* One index line (without its LF) of warc file fi: kept, counted or
 * skipped. A page is noted with the offset of its record (page_off). */
static int take_line(pack *k, size_t fi, const char *p, size_t n, uint64_t **offs, size_t *noffs)
{
    warcfile *w = &k->f[fi];
    uint64_t off, len;
    const char *sp = memchr(p, ' ', n);
    const char *sp2 = sp ? memchr(sp + 1, ' ', n - (size_t)(sp + 1 - p)) : NULL;
    if (cdxj_parse_span(p, n, &off, &len) < 0 || sp2 == NULL || off > w->size ||
        len > w->size - off || !digits14(sp + 1, (size_t)(sp2 - sp - 1))) {
        k->st->bad_lines++;
        return 0;
    }
    json_error_t je;
    json_t *j = json_loadb(sp2 + 1, n - (size_t)(sp2 + 1 - p), 0, &je);
    const char *url = j ? json_string_value(json_object_get(j, "url")) : NULL;
    const char *mime = j ? json_string_value(json_object_get(j, "mime")) : NULL;
    const char *status = j ? json_string_value(json_object_get(j, "status")) : NULL;
    const char *fname = j ? json_string_value(json_object_get(j, "filename")) : NULL;
    int rc = 0;
    if (url == NULL || fname == NULL || strcmp(fname, w->name) != 0) {
        k->st->bad_lines++; /* a line of another file would point nowhere */
        goto out;
    }
    rc = add_line(k, p, n);
    if (rc < 0)
        goto out;
    k->st->index_lines++;
    if (off + len > w->keep)
        w->keep = off + len;
    if (status != NULL && strcmp(status, "200") == 0 && is_html_mime(mime)) {
        char ts[15];
        memcpy(ts, sp + 1, 14);
        ts[14] = '\0';
        rc = add_page(k, url, ts);
        if (rc == 0) {
            uint64_t *v = cr_realloc(*offs, (*noffs + 1) * 2 * sizeof *v);
            if (v == NULL) {
                rc = -ENOMEM;
            } else {
                *offs = v;
                v[*noffs * 2] = off;
                v[*noffs * 2 + 1] = (uint64_t)fi << 32 | (len > UINT32_MAX ? UINT32_MAX : len);
                (*noffs)++;
            }
        }
    }
out:
    json_decref(j);
    return rc;
}

static int read_indexes(pack *k, uint64_t **offs, size_t *noffs)
{
    const wacz_opts *o = k->o;
    size_t max = o->max_index_bytes ? (size_t)o->max_index_bytes : DEF_MAX_INDEX;
    for (size_t i = 0; i < k->nf; i++) {
        warcfile *w = &k->f[i];
        size_t dl = strlen(o->archive_dir), nl = strlen(w->name);
        w->path = cr_malloc(dl + nl + 2);
        char *ipath = cr_malloc(dl + nl + 2);
        if (w->path == NULL || ipath == NULL) {
            cr_free(ipath);
            return fail(k, -ENOMEM, "out of memory");
        }
        snprintf(w->path, dl + nl + 2, "%s/%s", o->archive_dir, w->name);
        snprintf(ipath, dl + nl + 2, "%s/%.*s.cdxj", o->archive_dir, (int)(nl - 8), w->name);
        struct stat sb;
        if (stat(w->path, &sb) != 0) {
            int e = errno;
            cr_free(ipath);
            return fail(k, -e, "%s: %s", w->path, strerror(e));
        }
        w->size = (uint64_t)sb.st_size;
        size_t len;
        int rc = read_whole(ipath, max, &w->index, &len);
        if (rc == -ENOENT) { /* no index: nothing of it can be replayed */
            cr_free(ipath);
            continue;
        }
        if (rc < 0) {
            rc = fail(k, rc == -E2BIG ? -EIO : rc, "%s: %s", ipath,
                      rc == -E2BIG ? "index larger than the cap" : strerror(-rc));
            cr_free(ipath);
            return rc;
        }
        cr_free(ipath);
        const char *p = w->index, *end = w->index + len;
        while (p < end) {
            const char *nlp = memchr(p, '\n', (size_t)(end - p));
            size_t n = nlp ? (size_t)(nlp - p) : (size_t)(end - p);
            if (nlp == NULL) { /* a line still being written */
                k->st->bad_lines++;
                break;
            }
            if (n > 0) {
                rc = take_line(k, i, p, n, offs, noffs);
                if (rc < 0)
                    return fail(k, rc, "out of memory");
            }
            p += n + 1;
        }
    }
    return 0;
}

/* ---- 4. titles ---------------------------------------------------------- */

/* Inflates the gzip member at [off, off+len) of fd into out, at most
 * out->max bytes (then stops: enough for headers and the payload's start). */
static int read_member(int fd, uint64_t off, uint64_t len, cr_buf *out)
{
    unsigned char in[65536];
    unsigned char obuf[65536];
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -ENOMEM;
    int rc = 0;
    uint64_t done = 0;
    int zr = Z_OK;
    while (done < len && zr != Z_STREAM_END && rc == 0) {
        size_t want = len - done < sizeof in ? (size_t)(len - done) : sizeof in;
        ssize_t r = pread(fd, in, want, (off_t)(off + done));
        if (r <= 0) {
            rc = -EIO;
            break;
        }
        done += (uint64_t)r;
        z.next_in = in;
        z.avail_in = (uInt)r;
        while (z.avail_in > 0 && zr != Z_STREAM_END) {
            z.next_out = obuf;
            z.avail_out = sizeof obuf;
            zr = inflate(&z, Z_NO_FLUSH);
            if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
                rc = -EBADMSG;
                break;
            }
            size_t got = sizeof obuf - z.avail_out;
            size_t room = out->max - out->len;
            if (cr_buf_append(out, obuf, got < room ? got : room) < 0) {
                rc = -ENOMEM;
                break;
            }
            if (got >= room) {
                zr = Z_STREAM_END; /* enough */
                break;
            }
            if (zr == Z_BUF_ERROR && z.avail_in == 0)
                break;
        }
    }
    inflateEnd(&z);
    return rc;
}

static const char *find_crlf2(const char *p, size_t n)
{
    for (size_t i = 0; i + 3 < n; i++)
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
            return p + i;
    return NULL;
}

static void title_of(pack *k, page *g, int fd, uint64_t off, uint64_t len)
{
    const wacz_opts *o = k->o;
    uint64_t maxp = o->max_page_bytes ? o->max_page_bytes : DEF_MAX_PAGE;
    cr_buf rec, title;
    cr_buf_init(&rec, (size_t)(MAX_HEADERS + maxp));
    cr_buf_init(&title, WACZ_MAX_TITLE * 4);
    if (read_member(fd, off, len, &rec) < 0 || rec.data == NULL) {
        k->st->unreadable++;
        goto out;
    }
    const char *wend = find_crlf2(rec.data, rec.len); /* end of the WARC headers */
    if (wend == NULL || strncmp(rec.data, "WARC/", 5) != 0) {
        k->st->unreadable++;
        goto out;
    }
    const char *h = wend + 4;
    size_t hn = rec.len - (size_t)(h - rec.data);
    const char *hend = find_crlf2(h, hn);
    if (hend == NULL) {
        k->st->unreadable++;
        goto out;
    }
    const char *pl = hend + 4;
    size_t pn = rec.len - (size_t)(pl - rec.data);
    if (pn > maxp)
        pn = (size_t)maxp;
    if (o->title_fn(o->title_ud, h, (size_t)(hend + 4 - h), pl, pn, &title) == 0 &&
        title.len > 0) {
        size_t n = title.len < WACZ_MAX_TITLE ? title.len : WACZ_MAX_TITLE;
        while (n > 0 && n < title.len && ((unsigned char)title.data[n] & 0xC0) == 0x80)
            n--; /* not inside a character */
        g->title = cr_strndup(title.data, n);
        if (g->title != NULL)
            k->st->titles++;
    }
out:
    cr_buf_release(&title);
    cr_buf_release(&rec);
}

static void read_titles(pack *k, const uint64_t *offs, size_t noffs)
{
    int fd = -1;
    size_t open_fi = (size_t)-1;
    for (size_t i = 0; i < noffs && k->o->title_fn != NULL; i++) {
        size_t fi = (size_t)(offs[2 * i + 1] >> 32);
        uint64_t len = offs[2 * i + 1] & 0xffffffffu;
        if (fi != open_fi) {
            if (fd >= 0)
                close(fd);
            fd = open(k->f[fi].path, O_RDONLY | O_CLOEXEC);
            open_fi = fi;
        }
        if (fd < 0) {
            k->st->unreadable++;
            continue;
        }
        title_of(k, &k->pages[i], fd, offs[2 * i], len);
    }
    if (fd >= 0)
        close(fd);
}

/* ---- 5. the small files ------------------------------------------------- */

static int line_cmp(const void *a, const void *b)
{
    const line *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c != 0 ? c : x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

static int build_index(pack *k)
{
    qsort(k->lines, k->nl, sizeof *k->lines, line_cmp);
    for (size_t i = 0; i < k->nl; i++) {
        if (cr_buf_append(&k->index, k->lines[i].p, k->lines[i].n) < 0 ||
            cr_buf_putc(&k->index, '\n') < 0)
            return -ENOMEM;
    }
    return cr_buf_append(&k->index, "", 0);
}

/* Appends j as one compact line (consumes j). */
static int put_json(cr_buf *b, json_t *j, bool newline)
{
    if (j == NULL)
        return -ENOMEM;
    char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (s == NULL)
        return -ENOMEM;
    int rc = cr_buf_puts(b, s);
    if (rc == 0 && newline)
        rc = cr_buf_putc(b, '\n');
    free(s);
    return rc;
}

static int build_pages(pack *k)
{
    int rc = put_json(&k->pages_jsonl,
                      json_pack("{s:s, s:s, s:s}", "format", "json-pages-1.0", "id", "pages",
                                "title", "All Pages"),
                      true);
    for (size_t i = 0; i < k->np && rc == 0; i++) {
        page *g = &k->pages[i];
        char iso[21], id[65];
        ts_iso(g->ts, iso);
        cr_buf key;
        cr_buf_init(&key, 0);
        rc = cr_buf_printf(&key, "%s %s", g->ts, g->url);
        if (rc == 0)
            rc = sha256_hex(key.data, key.len, id);
        cr_buf_release(&key);
        if (rc < 0)
            break;
        id[32] = '\0';
        json_t *j = json_pack("{s:s, s:s, s:s}", "id", id, "url", g->url, "ts", iso);
        json_t *t = g->title ? json_string(g->title) : NULL; /* NULL: not UTF-8 */
        if (j != NULL && t != NULL)
            json_object_set_new(j, "title", t);
        rc = put_json(&k->pages_jsonl, j, true);
    }
    if (rc == 0)
        k->st->pages = k->np;
    return rc;
}

static json_t *resource(const char *path, const char *sha, uint64_t bytes)
{
    const char *name = strrchr(path, '/');
    char hash[72];
    snprintf(hash, sizeof hash, "sha256:%s", sha);
    return json_pack("{s:s, s:s, s:s, s:I}", "name", name ? name + 1 : path, "path", path, "hash",
                     hash, "bytes", (json_int_t)bytes);
}

static void iso_now(int64_t ms, char out[64])
{
    struct timespec ts;
    if (ms <= 0) {
        clock_gettime(CLOCK_REALTIME, &ts);
        ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

static int build_datapackage(pack *k)
{
    char created[64], sha[65];
    iso_now(k->o->created_ms, created);
    json_t *res = json_array();
    json_t *dp = json_pack("{s:s, s:s, s:s, s:s, s:s}", "profile", "data-package", "wacz_version",
                           WACZ_VERSION, "title", k->o->title ? k->o->title : "crawld crawl",
                           "software", WARC_SOFTWARE, "created", created);
    if (res == NULL || dp == NULL) {
        json_decref(res);
        json_decref(dp);
        return -ENOMEM;
    }
    if (k->np > 0) {
        char iso[21];
        ts_iso(k->pages[0].ts, iso);
        json_object_set_new(dp, "mainPageURL", json_string(k->pages[0].url));
        json_object_set_new(dp, "mainPageDate", json_string(iso));
    }
    int rc = 0;
    for (size_t i = 0; i < k->nf && rc == 0; i++) {
        warcfile *w = &k->f[i];
        if (w->keep == 0)
            continue;
        char path[NAME_MAX_LEN + 16];
        snprintf(path, sizeof path, "archive/%s", w->name);
        rc = json_array_append_new(res, resource(path, w->sha256, w->keep)) == 0 ? 0 : -ENOMEM;
    }
    if (rc == 0)
        rc = sha256_hex(k->index.data, k->index.len, sha);
    if (rc == 0)
        rc = json_array_append_new(res, resource("indexes/index.cdxj", sha, k->index.len)) == 0
                 ? 0
                 : -ENOMEM;
    if (rc == 0)
        rc = sha256_hex(k->pages_jsonl.data, k->pages_jsonl.len, sha);
    if (rc == 0)
        rc = json_array_append_new(res, resource("pages/pages.jsonl", sha, k->pages_jsonl.len)) == 0
                 ? 0
                 : -ENOMEM;
    if (rc < 0) {
        json_decref(res);
        json_decref(dp);
        return rc;
    }
    json_object_set_new(dp, "resources", res);
    char *s = json_dumps(dp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(dp);
    if (s == NULL)
        return -ENOMEM;
    rc = cr_buf_puts(&k->datapackage, s);
    free(s);
    if (rc == 0)
        rc = sha256_hex(k->datapackage.data, k->datapackage.len, sha);
    if (rc == 0) {
        char hash[72];
        snprintf(hash, sizeof hash, "sha256:%s", sha);
        rc = put_json(&k->digest, json_pack("{s:s, s:s}", "path", "datapackage.json", "hash", hash),
                      false);
    }
    return rc;
}

/* ---- 6. the ZIP --------------------------------------------------------- */

static int pack_add(pack *k, zip_t *za, const char *name, zip_source_t *src, time_t mtime)
{
    if (src == NULL)
        return fail(k, -ENOMEM, "libzip: %s", zip_strerror(za));
    zip_int64_t idx = zip_file_add(za, name, src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) {
        zip_source_free(src);
        return fail(k, -EIO, "libzip: %s: %s", name, zip_strerror(za));
    }
    if (zip_set_file_compression(za, (zip_uint64_t)idx, ZIP_CM_STORE, 0) < 0 ||
        zip_file_set_mtime(za, (zip_uint64_t)idx, mtime, 0) < 0)
        return fail(k, -EIO, "libzip: %s: %s", name, zip_strerror(za));
    return 0;
}

static int write_zip(pack *k)
{
    const wacz_opts *o = k->o;
    size_t n = strlen(o->out_path) + 32;
    k->tmp_path = cr_malloc(n);
    if (k->tmp_path == NULL)
        return fail(k, -ENOMEM, "out of memory");
    snprintf(k->tmp_path, n, "%s.tmp-%ld", o->out_path, (long)getpid());
    unlink(k->tmp_path);
    int zerr = 0;
    zip_t *za = zip_open(k->tmp_path, ZIP_CREATE | ZIP_EXCL, &zerr);
    if (za == NULL) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, zerr);
        int rc = fail(k, -EIO, "%s: %s", k->tmp_path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return rc;
    }
    time_t mtime = (time_t)((o->created_ms > 0 ? o->created_ms : (int64_t)time(NULL) * 1000) / 1000);
    int rc = 0;
    for (size_t i = 0; i < k->nf && rc == 0; i++) {
        warcfile *w = &k->f[i];
        if (w->keep == 0)
            continue;
        char name[NAME_MAX_LEN + 16];
        snprintf(name, sizeof name, "archive/%s", w->name);
        rc = pack_add(k, za, name, zip_source_file(za, w->path, 0, (zip_int64_t)w->keep), mtime);
    }
    if (rc == 0)
        rc = pack_add(k, za, "datapackage.json",
                     zip_source_buffer(za, k->datapackage.data, k->datapackage.len, 0), mtime);
    if (rc == 0)
        rc = pack_add(k, za, "datapackage-digest.json",
                     zip_source_buffer(za, k->digest.data, k->digest.len, 0), mtime);
    if (rc == 0)
        rc = pack_add(k, za, "pages/pages.jsonl",
                     zip_source_buffer(za, k->pages_jsonl.data, k->pages_jsonl.len, 0), mtime);
    if (rc == 0)
        rc = pack_add(k, za, "indexes/index.cdxj",
                     zip_source_buffer(za, k->index.data, k->index.len, 0), mtime);
    if (rc < 0) {
        zip_discard(za);
        unlink(k->tmp_path);
        return rc;
    }
    if (zip_close(za) < 0) {
        rc = fail(k, -EIO, "writing %s: %s", k->tmp_path, zip_strerror(za));
        zip_discard(za);
        unlink(k->tmp_path);
        return rc;
    }
    int fd = open(k->tmp_path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fsync(fd) != 0 || fstat(fd, &sb) != 0) {
        rc = fail(k, -EIO, "%s: %s", k->tmp_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(k->tmp_path);
        return rc;
    }
    close(fd);
    k->st->zip_bytes = (uint64_t)sb.st_size;
    if (link(k->tmp_path, o->out_path) != 0) {
        int e = errno;
        unlink(k->tmp_path);
        return fail(k, -e, "%s: %s", o->out_path,
                    e == EEXIST ? "exists (a package is never replaced)" : strerror(e));
    }
    unlink(k->tmp_path);
    char *dir = cr_strdup(o->out_path);
    if (dir != NULL) {
        char *slash = strrchr(dir, '/');
        const char *d = slash == NULL ? "." : slash == dir ? "/" : (*slash = '\0', dir);
        int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        cr_free(dir);
    }
    return 0;
}

/* ---- API --------------------------------------------------------------- */

static void pack_release(pack *k)
{
    for (size_t i = 0; i < k->nf; i++) {
        cr_free(k->f[i].path);
        cr_free(k->f[i].index);
    }
    cr_free(k->f);
    cr_free(k->lines);
    for (size_t i = 0; i < k->np; i++) {
        cr_free(k->pages[i].url);
        cr_free(k->pages[i].title);
    }
    cr_free(k->pages);
    cr_buf_release(&k->index);
    cr_buf_release(&k->pages_jsonl);
    cr_buf_release(&k->datapackage);
    cr_buf_release(&k->digest);
    cr_free(k->tmp_path);
}

int wacz_write(const wacz_opts *o, wacz_stats *st, char *err, size_t errlen)
{
    wacz_stats local;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    pack k = { .o = o, .st = st, .err = err, .errlen = errlen };
    cr_buf_init(&k.index, 0);
    cr_buf_init(&k.pages_jsonl, 0);
    cr_buf_init(&k.datapackage, 0);
    cr_buf_init(&k.digest, 0);
    uint64_t *offs = NULL;
    size_t noffs = 0;
    int rc;
    if (o == NULL || o->archive_dir == NULL || o->prefix == NULL || o->out_path == NULL ||
        o->out_path[0] == '\0') {
        rc = fail(&k, -EINVAL, "archive folder, prefix and output are required");
        goto out;
    }
    if (access(o->out_path, F_OK) == 0) {
        rc = fail(&k, -EEXIST, "%s: exists (a package is never replaced)", o->out_path);
        goto out;
    }
    rc = list_warcs(&k);
    if (rc < 0)
        goto out;
    rc = read_indexes(&k, &offs, &noffs);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < k.nf; i++) {
        warcfile *w = &k.f[i];
        if (w->keep == 0) {
            st->warcs_skipped++;
            continue;
        }
        rc = sha256_file(w->path, w->keep, w->sha256);
        if (rc < 0) {
            rc = fail(&k, rc == -ENOMEM ? rc : -EIO, "%s: %s", w->path, strerror(-rc));
            goto out;
        }
        st->warcs++;
        st->warc_bytes += w->keep;
        st->tail_bytes_cut += w->size - w->keep;
    }
    if (st->warcs == 0) {
        rc = fail(&k, -ENOENT, "no WARC file with an indexed record in %s (prefix %s)",
                  o->archive_dir, o->prefix);
        goto out;
    }
    read_titles(&k, offs, noffs);
    rc = build_index(&k);
    if (rc == 0)
        rc = build_pages(&k);
    if (rc == 0)
        rc = build_datapackage(&k);
    if (rc < 0) {
        rc = fail(&k, rc, "out of memory");
        goto out;
    }
    rc = write_zip(&k);
out:
    cr_free(offs);
    pack_release(&k);
    return rc;
}
