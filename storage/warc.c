/* storage/warc: WARC/1.1 writer. The format, the Transfer-Encoding rule and
 * the crash rules are described in warc.h; this note is about the code.
 *
 * A fetch goes through three steps:
 *   prepare  (no lock)  validate, fix the header block, ids, date, digests;
 *   build    (no lock)  compress its records into one buffer, the "group",
 *                       for a "plan": which warcinfo id the records name and
 *                       whether the response is a revisit (and of what);
 *   commit   (lock)     re-check the plan against the dedup map and the open
 *                       file (rotating when the group would not fit), rebuild
 *                       if it changed, then append the group with one write,
 *                       append the index line, remember the payload.
 * Lock: w->lock guards everything under "guarded by lock" in struct
 * warc_writer; nothing else is shared. The options part is read-only after
 * warc_open. The dedup map only grows, and its URI strings live in an arena
 * that is freed only by warc_close, so a revisit built outside the lock may
 * keep pointing at the original's URI.
 *
 * Dedup memory: one 56-byte slot per payload in an open-addressing table
 * kept at most 3/4 full (so 75..150 bytes a payload) plus the URI and its
 * NUL in the arena: about 130 bytes + URI length per remembered payload. */
#include "warc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/clock.h"
#include "common/err.h"
#include "storage/cdxj.h"
#include "storage/warc_int.h"

#define PROFILE_IDENTICAL "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#define PROFILE_NOT_MODIFIED "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
#define CONFORMS_TO "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
#define INDEX_SORT_MAX (256u << 20) /* larger indexes stay in write order */
#define ARENA_BLOCK 65536
#define UUID_TEXT 48                /* "<urn:uuid:" 36 ">" NUL */

/* ---- small pieces ------------------------------------------------------- */

typedef struct span {
    const void *p;
    size_t n;
} span;

/* A streamed payload (warc_fetch.payload_read): a span with p NULL and
 * n > 0 is read through it, READ_CHUNK bytes at a time. */
typedef struct reader {
    int (*fn)(void *ctx, uint64_t off, void *buf, size_t n);
    void *ctx;
} reader;
#define READ_CHUNK 65536

/* Calls fn over the bytes of s, in pieces. */
static int span_each(const reader *rd, span s, int (*fn)(void *arg, const void *p, size_t n),
                     void *arg)
{
    if (s.n == 0)
        return 0;
    if (s.p != NULL)
        return fn(arg, s.p, s.n);
    if (rd == NULL || rd->fn == NULL)
        return -EINVAL;
    unsigned char *buf = cr_malloc(READ_CHUNK);
    if (buf == NULL)
        return -ENOMEM;
    int rc = 0;
    for (uint64_t off = 0; rc == 0 && off < s.n;) {
        size_t take = s.n - off < READ_CHUNK ? (size_t)(s.n - off) : READ_CHUNK;
        rc = rd->fn(rd->ctx, off, buf, take);
        if (rc == 0)
            rc = fn(arg, buf, take);
        off += take;
    }
    cr_free(buf);
    return rc;
}

/* A growable byte buffer for compressed output (no cap: its input is
 * already capped by the caller and WARC_MAX_HEADER_BYTES). */
typedef struct gbuf {
    unsigned char *p;
    size_t len, cap;
} gbuf;

static int gbuf_reserve(gbuf *g, size_t n)
{
    if (g->cap - g->len >= n)
        return 0;
    if (n > SIZE_MAX / 2 - g->len)
        return -ENOMEM;
    size_t need = g->len + n, cap = g->cap ? g->cap : 4096;
    while (cap < need)
        cap *= 2;
    unsigned char *p = cr_realloc(g->p, cap);
    if (p == NULL)
        return -ENOMEM;
    g->p = p;
    g->cap = cap;
    return 0;
}

static void gbuf_release(gbuf *g)
{
    cr_free(g->p);
    g->p = NULL;
    g->len = g->cap = 0;
}

static int rand_bytes(void *p, size_t n)
{
    unsigned char *u = p;
    while (n > 0) {
        ssize_t r = getrandom(u, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        u += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Version 4 (random) UUID. */
static int uuid_new(uint8_t id[16])
{
    int rc = rand_bytes(id, 16);
    if (rc < 0)
        return rc;
    id[6] = (uint8_t)((id[6] & 0x0f) | 0x40);
    id[8] = (uint8_t)((id[8] & 0x3f) | 0x80);
    return 0;
}

static void uuid_text(const uint8_t id[16], char out[UUID_TEXT])
{
    static const char hex[] = "0123456789abcdef";
    char *o = out;
    memcpy(o, "<urn:uuid:", 10);
    o += 10;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *o++ = '-';
        *o++ = hex[id[i] >> 4];
        *o++ = hex[id[i] & 15];
    }
    *o++ = '>';
    *o = '\0';
}

/* "<urn:uuid:...>" (as uuid_text writes it, any hex case) back to bytes. */
static int uuid_parse(const char *t, uint8_t id[16])
{
    if (t == NULL || strncmp(t, "<urn:uuid:", 10) != 0 || strlen(t) != 47 || t[46] != '>')
        return -EINVAL;
    const char *p = t + 10;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (*p++ != '-')
                return -EINVAL;
        }
        int v = 0;
        for (int k = 0; k < 2; k++, p++) {
            int c = *p;
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                return -EINVAL;
            v = v * 16 + d;
        }
        id[i] = (uint8_t)v;
    }
    return 0;
}

int warc_date(int64_t ms, char *buf)
{
    if (ms < 0)
        return -EINVAL;
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    if (gmtime_r(&s, &tm) == NULL || tm.tm_year + 1900 > 9999)
        return -EINVAL;
    char tmp[96];
    int n = snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
    if (n != 24)
        return -EINVAL;
    memcpy(buf, tmp, 25);
    return 0;
}

/* "2024-05-06T07:08:09.123Z" -> "20240506070809". */
static void date_to_timestamp(const char *date, char ts[15])
{
    static const int pick[14] = {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18};
    for (int i = 0; i < 14; i++)
        ts[i] = date[pick[i]];
    ts[14] = '\0';
}

void warc_digest_text(const uint8_t sha1[20], char *out)
{
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    memcpy(out, "sha1:", 5);
    char *o = out + 5;
    /* 20 bytes = 4 groups of 5 bytes = 4 x 8 letters, no padding. */
    for (int g = 0; g < 4; g++) {
        uint64_t v = 0;
        for (int i = 0; i < 5; i++)
            v = (v << 8) | sha1[g * 5 + i];
        for (int i = 7; i >= 0; i--)
            *o++ = alpha[(v >> (i * 5)) & 31];
    }
    *o = '\0';
}

static int sha1_piece(void *arg, const void *p, size_t n)
{
    return EVP_DigestUpdate(arg, p, n) == 1 ? 0 : -ENOMEM;
}

static int sha1_spans(const reader *rd, const span *parts, size_t n, uint8_t out[20])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = -ENOMEM;
    if (ctx == NULL)
        return rc;
    if (EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) != 1)
        goto out;
    for (size_t i = 0; i < n; i++) {
        int r = span_each(rd, parts[i], sha1_piece, ctx);
        if (r < 0) {
            rc = r;
            goto out;
        }
    }
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx, out, &len) != 1 || len != 20)
        goto out;
    rc = 0;
out:
    EVP_MD_CTX_free(ctx);
    return rc;
}

static int digest_text_of(const reader *rd, const span *parts, size_t n, char out[38],
                          uint8_t raw[20])
{
    uint8_t tmp[20];
    uint8_t *d = raw ? raw : tmp;
    int rc = sha1_spans(rd, parts, n, d);
    if (rc == 0)
        warc_digest_text(d, out);
    return rc;
}

int warc_payload_digest(const void *p, size_t n, char out[38])
{
    span s = {p, n};
    return digest_text_of(NULL, &s, 1, out, NULL);
}

/* ---- gzip members ------------------------------------------------------- */

typedef struct gz {
    z_stream z;
    bool init;
    int level;
    const reader *rd;   /* the streamed payload, if any */
} gz;

voidpf warc_z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return cr_malloc((size_t)items * size);
}

void warc_z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    cr_free(p);
}

static void gz_end(gz *g)
{
    if (g->init)
        deflateEnd(&g->z);
    g->init = false;
}

/* Runs deflate until the input is used (Z_NO_FLUSH) or the member is
 * finished (Z_FINISH), growing out as needed. */
static int gz_run(gz *g, gbuf *out, int flush)
{
    for (;;) {
        if (out->cap == out->len) {
            int rc = gbuf_reserve(out, 65536);
            if (rc < 0)
                return rc;
        }
        size_t room = out->cap - out->len;
        if (room > (1u << 30))
            room = 1u << 30;
        g->z.next_out = out->p + out->len;
        g->z.avail_out = (uInt)room;
        int zr = deflate(&g->z, flush);
        out->len += room - g->z.avail_out;
        if (zr == Z_STREAM_END)
            return 0;
        if (zr == Z_STREAM_ERROR)
            return -EIO;
        if (flush == Z_NO_FLUSH && g->z.avail_in == 0)
            return 0;
        if (zr == Z_BUF_ERROR && g->z.avail_out != 0)
            return -EIO;
    }
}

typedef struct gz_feed {
    gz *g;
    gbuf *out;
} gz_feed;

static int gz_piece(void *arg, const void *p, size_t left)
{
    gz_feed *f = arg;
    int rc = 0;
    const unsigned char *q = p;
    while (rc == 0 && left > 0) {
        size_t take = left > (1u << 30) ? (1u << 30) : left;
        f->g->z.next_in = (unsigned char *)(uintptr_t)q;
        f->g->z.avail_in = (uInt)take;
        rc = gz_run(f->g, f->out, Z_NO_FLUSH);
        q += take;
        left -= take;
    }
    return rc;
}

/* Appends one gzip member holding the concatenation of parts. */
static int gz_member(gz *g, gbuf *out, const span *parts, size_t n)
{
    if (!g->init) {
        memset(&g->z, 0, sizeof g->z);
        g->z.zalloc = warc_z_alloc;
        g->z.zfree = warc_z_free;
        int zr = deflateInit2(&g->z, g->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
        if (zr != Z_OK)
            return zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
        g->init = true;
    } else if (deflateReset(&g->z) != Z_OK) {
        return -EIO;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].n;
    int rc = gbuf_reserve(out, (size_t)deflateBound(&g->z, (uLong)total) + 64);
    gz_feed feed = {g, out};
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = span_each(g->rd, parts[i], gz_piece, &feed);
    if (rc == 0) {
        g->z.next_in = NULL;
        g->z.avail_in = 0;
        rc = gz_run(g, out, Z_FINISH);
    }
    return rc;
}

/* ---- records ------------------------------------------------------------ */

typedef struct rec {
    const char *type;
    const uint8_t *id;
    const char *date;
    const char *uri;              /* NULL: no WARC-Target-URI */
    const char *ip;               /* NULL or "": none */
    const uint8_t *concurrent;    /* NULL: none */
    const uint8_t *warcinfo_id;   /* NULL: none */
    const char *filename;         /* warcinfo only */
    const char *content_type;
    const char *block_digest;
    const char *payload_digest;   /* NULL: none */
    bool truncated;
    bool revisit;
    const char *profile;          /* revisit: PROFILE_* */
    const char *ref_uri;
    const char *ref_date;
    const uint8_t *ref_id;
    span block[2];
    size_t nblock;
} rec;

/* Appends the record as one gzip member. */
static int rec_member(gz *g, gbuf *out, const rec *r)
{
    cr_buf h;
    cr_buf_init(&h, 4 * (size_t)WARC_MAX_URI_BYTES);
    char id[UUID_TEXT];
    uint64_t block_len = 0;
    for (size_t i = 0; i < r->nblock; i++)
        block_len += r->block[i].n;
    uuid_text(r->id, id);
    int rc = cr_buf_printf(&h, "WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: %s\r\nWARC-Date: %s\r\n",
                           r->type, id, r->date);
    if (rc == 0 && r->uri)
        rc = cr_buf_printf(&h, "WARC-Target-URI: %s\r\n", r->uri);
    if (rc == 0 && r->ip && *r->ip)
        rc = cr_buf_printf(&h, "WARC-IP-Address: %s\r\n", r->ip);
    if (rc == 0 && r->concurrent) {
        uuid_text(r->concurrent, id);
        rc = cr_buf_printf(&h, "WARC-Concurrent-To: %s\r\n", id);
    }
    if (rc == 0 && r->warcinfo_id) {
        uuid_text(r->warcinfo_id, id);
        rc = cr_buf_printf(&h, "WARC-Warcinfo-ID: %s\r\n", id);
    }
    if (rc == 0 && r->filename)
        rc = cr_buf_printf(&h, "WARC-Filename: %s\r\n", r->filename);
    if (rc == 0 && r->revisit) {
        rc = cr_buf_printf(&h, "WARC-Profile: %s\r\n", r->profile);
        if (rc == 0 && r->ref_id) {
            uuid_text(r->ref_id, id);
            rc = cr_buf_printf(&h, "WARC-Refers-To: %s\r\n", id);
        }
        if (rc == 0)
            rc = cr_buf_printf(&h, "WARC-Refers-To-Target-URI: %s\r\nWARC-Refers-To-Date: %s\r\n",
                               r->ref_uri, r->ref_date);
    }
    if (rc == 0 && r->truncated)
        rc = cr_buf_puts(&h, "WARC-Truncated: length\r\n");
    if (rc == 0)
        rc = cr_buf_printf(&h, "Content-Type: %s\r\nWARC-Block-Digest: %s\r\n", r->content_type,
                           r->block_digest);
    if (rc == 0 && r->payload_digest)
        rc = cr_buf_printf(&h, "WARC-Payload-Digest: %s\r\n", r->payload_digest);
    if (rc == 0)
        rc = cr_buf_printf(&h, "Content-Length: %" PRIu64 "\r\n\r\n", block_len);
    if (rc == 0) {
        span parts[4] = {{h.data, h.len}, {NULL, 0}, {NULL, 0}, {"\r\n\r\n", 4}};
        for (size_t i = 0; i < r->nblock; i++)
            parts[1 + i] = r->block[i];
        rc = gz_member(g, out, parts, 4);
    }
    cr_buf_release(&h);
    return rc;
}

/* ---- the HTTP header block ------------------------------------------------ */

static bool name_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    if (len <= n || line[n] != ':')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = line[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != name[i])
            return false;
    }
    return true;
}

/* Calls fn for each line of the header block (without its CR LF), the
 * status line included, the final empty line excluded. Returns -EINVAL when
 * the block is not "HTTP/..." lines ending with exactly one empty line. */
typedef int (*line_fn)(void *ctx, const char *line, size_t len, bool first);

static int http_lines(const char *hdr, size_t len, line_fn fn, void *ctx)
{
    if (len < 7 || memcmp(hdr, "HTTP/", 5) != 0)
        return -EINVAL;
    size_t pos = 0;
    bool first = true;
    while (pos < len) {
        const char *nl = memchr(hdr + pos, '\n', len - pos);
        if (nl == NULL)
            return -EINVAL;
        size_t end = (size_t)(nl - hdr), n = end - pos;
        if (n > 0 && hdr[end - 1] == '\r')
            n--;
        if (n == 0)
            return end + 1 == len && !first ? 0 : -EINVAL;
        int rc = fn(ctx, hdr + pos, n, first);
        if (rc < 0)
            return rc;
        first = false;
        pos = end + 1;
    }
    return -EINVAL;
}

typedef struct scan_ctx {
    bool te;
} scan_ctx;

static int scan_line(void *ctx, const char *line, size_t len, bool first)
{
    scan_ctx *s = ctx;
    if (!first && name_is(line, len, "transfer-encoding"))
        s->te = true;
    return 0;
}

typedef struct fix_ctx {
    cr_buf *out;
    bool te;
} fix_ctx;

static int fix_line(void *ctx, const char *line, size_t len, bool first)
{
    fix_ctx *x = ctx;
    int rc = 0;
    if (!first && x->te &&
        (name_is(line, len, "transfer-encoding") || name_is(line, len, "content-length")))
        rc = cr_buf_puts(x->out, "X-Crawld-");
    if (rc == 0)
        rc = cr_buf_append(x->out, line, len);
    if (rc == 0)
        rc = cr_buf_append(x->out, "\r\n", 2);
    return rc;
}

int warc_http_fix(const char *hdr, size_t len, uint64_t payload_len, cr_buf *out, bool *changed)
{
    *changed = false;
    scan_ctx s = {false};
    int rc = http_lines(hdr, len, scan_line, &s);
    if (rc < 0)
        return rc;
    bool bare_lf = hdr[0] == '\n';
    for (size_t i = 1; i < len && !bare_lf; i++)
        if (hdr[i] == '\n' && hdr[i - 1] != '\r')
            bare_lf = true;
    if (!s.te && !bare_lf)
        return cr_buf_append(out, hdr, len);
    size_t mark = out->len;
    fix_ctx x = {out, s.te};
    rc = http_lines(hdr, len, fix_line, &x);
    if (rc == 0 && s.te)
        rc = cr_buf_printf(out, "Content-Length: %" PRIu64 "\r\n", payload_len);
    if (rc == 0)
        rc = cr_buf_append(out, "\r\n", 2);
    if (rc < 0) {
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
        return rc;
    }
    *changed = true;
    return 0;
}

typedef struct meta_ctx {
    int status;
    const char *ct;
    size_t ct_len;
} meta_ctx;

static int meta_line(void *ctx, const char *line, size_t len, bool first)
{
    meta_ctx *m = ctx;
    if (first) {
        const char *sp = memchr(line, ' ', len);
        if (sp && (size_t)(line + len - sp) >= 4) {
            int v = 0;
            for (int i = 1; i <= 3 && sp[i] >= '0' && sp[i] <= '9'; i++)
                v = v * 10 + (sp[i] - '0');
            m->status = v >= 100 ? v : 0;
        }
    } else if (m->ct == NULL && name_is(line, len, "content-type")) {
        m->ct = line + 13;
        m->ct_len = len - 13;
    }
    return 0;
}

/* ---- the dedup map ------------------------------------------------------ */

/* dd_slot, arena_block: warc_int.h */

/* ---- the writer (struct warc_writer: warc_int.h) -------------------------- */

static uint64_t dd_hash(const uint8_t d[20])
{
    uint64_t h;
    memcpy(&h, d, 8);
    return h;
}

static dd_slot *dd_find(warc_writer *w, const uint8_t d[20])
{
    if (w->slot_cap == 0)
        return NULL;
    size_t mask = w->slot_cap - 1;
    for (size_t i = (size_t)dd_hash(d) & mask;; i = (i + 1) & mask) {
        dd_slot *s = &w->slots[i];
        if (s->uri == NULL)
            return NULL;
        if (memcmp(s->digest, d, 20) == 0)
            return s;
    }
}

static const char *arena_copy(warc_writer *w, const char *s)
{
    size_t n = strlen(s) + 1;
    arena_block *b = w->arena;
    if (b == NULL || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        arena_block *nb = cr_malloc(sizeof *nb + cap);
        if (nb == NULL)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b != NULL && cap == n) { /* a big one: keep filling the current */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            w->arena = nb;
        }
        w->arena_bytes += sizeof *nb + cap;
        b = nb;
    }
    char *p = b->data + b->used;
    memcpy(p, s, n);
    b->used += n;
    return p;
}

static int dd_grow(warc_writer *w)
{
    size_t cap = w->slot_cap ? w->slot_cap * 2 : 1024;
    dd_slot *ns = cr_calloc(cap, sizeof *ns);
    if (ns == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < w->slot_cap; i++) {
        dd_slot *s = &w->slots[i];
        if (s->uri == NULL)
            continue;
        size_t j = (size_t)dd_hash(s->digest) & (cap - 1);
        while (ns[j].uri != NULL)
            j = (j + 1) & (cap - 1);
        ns[j] = *s;
    }
    cr_free(w->slots);
    w->slots = ns;
    w->slot_cap = cap;
    return 0;
}

/* Adds an entry (lock held). 0, -EEXIST, -ENOSPC, -ENOMEM. */
static int dd_insert(warc_writer *w, const uint8_t d[20], const uint8_t id[16], int64_t date_ms,
                     const char *uri)
{
    if (dd_find(w, d))
        return -EEXIST;
    if (w->slot_count >= w->dedup_cap)
        return -ENOSPC;
    if ((w->slot_count + 1) * 4 > w->slot_cap * 3) {
        int rc = dd_grow(w);
        if (rc < 0)
            return rc;
    }
    const char *u = arena_copy(w, uri);
    if (u == NULL)
        return -ENOMEM;
    size_t mask = w->slot_cap - 1, i = (size_t)dd_hash(d) & mask;
    while (w->slots[i].uri != NULL)
        i = (i + 1) & mask;
    dd_slot *s = &w->slots[i];
    memcpy(s->digest, d, 20);
    memcpy(s->id, id, 16);
    s->date_ms = date_ms;
    s->uri = u;
    w->slot_count++;
    return 0;
}

static void dd_release(warc_writer *w)
{
    cr_free(w->slots);
    w->slots = NULL;
    w->slot_cap = w->slot_count = 0;
    while (w->arena) {
        arena_block *n = w->arena->next;
        cr_free(w->arena);
        w->arena = n;
    }
    w->arena_bytes = 0;
}

/* ---- files -------------------------------------------------------------- */

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t r = write(fd, c, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EIO;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int warc_path_of(const warc_writer *w, const char *name, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%s", w->dir, name);
    return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Reads a whole file (at most max bytes) into b. A missing file is empty. */
int warc_read_file(const char *path, size_t max, cr_buf *b)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    int rc = 0;
    char tmp[65536];
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
        if (b->len + (size_t)r > max) {
            rc = -EFBIG;
            break;
        }
        rc = cr_buf_append(b, tmp, (size_t)r);
        if (rc < 0)
            break;
    }
    close(fd);
    return rc;
}


static int line_cmp(const void *a, const void *b)
{
    const line_ref *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    return c ? c : x->n < y->n ? -1 : x->n > y->n ? 1 : 0;
}

/* Writes lines, sorted bytewise, to DIR/idx_name through common/atomic_file
 * (temp file, fsync, rename, fsync of the folder). */
int warc_index_write_sorted(const warc_writer *w, const char *idx_name, line_ref *lines, size_t n)
{
    char path[PATH_MAX];
    cr_afile af;
    int rc = warc_path_of(w, idx_name, path, sizeof path);
    if (rc < 0)
        return rc;
    qsort(lines, n, sizeof *lines, line_cmp);
    rc = cr_afile_open(&af, path, 0644);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = cr_afile_write(&af, lines[i].p, lines[i].n);
    if (rc < 0) {
        cr_afile_abort(&af);
        return rc;
    }
    return cr_afile_commit(&af);
}

/* Splits b into complete lines (a torn last line is dropped). */
int warc_split_lines(const cr_buf *b, line_ref **out, size_t *n)
{
    size_t count = 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->data[i] == '\n')
            count++;
    line_ref *v = cr_calloc(count ? count : 1, sizeof *v);
    if (v == NULL)
        return -ENOMEM;
    size_t k = 0, start = 0;
    for (size_t i = 0; i < b->len; i++) {
        if (b->data[i] == '\n') {
            v[k].p = b->data + start;
            v[k].n = i + 1 - start;
            k++;
            start = i + 1;
        }
    }
    *out = v;
    *n = k;
    return 0;
}

static int index_sort(const warc_writer *w, const char *idx_name)
{
    char path[PATH_MAX];
    int rc = warc_path_of(w, idx_name, path, sizeof path);
    if (rc < 0)
        return rc;
    struct stat sb;
    if (stat(path, &sb) < 0)
        return -errno;
    if ((uint64_t)sb.st_size > INDEX_SORT_MAX)
        return 0;
    cr_buf b;
    cr_buf_init(&b, 0);
    line_ref *lines = NULL;
    size_t n = 0;
    rc = warc_read_file(path, INDEX_SORT_MAX, &b);
    if (rc == 0)
        rc = warc_split_lines(&b, &lines, &n);
    if (rc == 0)
        rc = warc_index_write_sorted(w, idx_name, lines, n);
    cr_free(lines);
    cr_buf_release(&b);
    return rc;
}

/* Ends the current file: fsync, sort its index. Lock held. */
static int file_finish(warc_writer *w)
{
    if (!w->have_file)
        return 0;
    int rc = 0;
    if (fsync(w->fd) < 0)
        rc = -errno;
    if (fsync(w->idx_fd) < 0 && rc == 0)
        rc = -errno;
    if (close(w->fd) < 0 && rc == 0)
        rc = -errno;
    if (close(w->idx_fd) < 0 && rc == 0)
        rc = -errno;
    w->have_file = false;
    int r2 = index_sort(w, w->idx_name);
    if (rc == 0)
        rc = r2;
    r2 = cr_fsync_dir(w->dir);
    return rc ? rc : r2;
}

/* The warcinfo block: our fields, then the caller's. */
static int info_block(const warc_writer *w, cr_buf *b)
{
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) < 0)
        host[0] = '\0';
    int rc = cr_buf_printf(b,
                           "software: " WARC_SOFTWARE "\r\nformat: WARC File Format 1.1\r\n"
                           "conformsTo: " CONFORMS_TO "\r\n");
    if (rc == 0 && host[0])
        rc = cr_buf_printf(b, "hostname: %s\r\n", host);
    if (rc == 0)
        rc = cr_buf_printf(b, "isPartOf: %s\r\n", w->prefix);
    if (rc == 0)
        rc = cr_buf_append(b, w->info, w->info_len);
    return rc;
}

/* Starts a new file with its warcinfo record. Lock held. */
static int file_start(warc_writer *w)
{
    char date[25], ts[15], path[PATH_MAX], ipath[PATH_MAX];
    int64_t ms = cr_wall_ms();
    int rc = warc_date(ms, date);
    if (rc < 0)
        return rc;
    date_to_timestamp(date, ts);
    int n = snprintf(w->name, sizeof w->name, "%s-%s-%05" PRIu64 ".warc.gz", w->prefix, ts,
                     w->next_serial);
    if (n < 0 || (size_t)n >= sizeof w->name)
        return -ENAMETOOLONG;
    memcpy(w->idx_name, w->name, (size_t)n - 8);
    memcpy(w->idx_name + n - 8, ".cdxj", 6);
    rc = warc_path_of(w, w->name, path, sizeof path);
    if (rc == 0)
        rc = warc_path_of(w, w->idx_name, ipath, sizeof ipath);
    if (rc < 0)
        return rc;

    cr_buf block;
    cr_buf_init(&block, 0);
    gbuf out = {NULL, 0, 0};
    gz g = {.init = false, .level = w->level};
    int fd = -1, ifd = -1;
    char digest[38];
    rc = info_block(w, &block);
    if (rc < 0)
        goto out;
    span bs = {block.data, block.len};
    rc = digest_text_of(NULL, &bs, 1, digest, NULL);
    if (rc < 0)
        goto out;
    rec r = {
        .type = "warcinfo", .id = w->next_info_id, .date = date, .filename = w->name,
        .content_type = "application/warc-fields", .block_digest = digest,
        .block = {{block.data, block.len}}, .nblock = 1,
    };
    rc = rec_member(&g, &out, &r);
    if (rc < 0)
        goto out;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    ifd = open(ipath, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (ifd < 0) {
        rc = -errno;
        goto out;
    }
    rc = write_all(fd, out.p, out.len);
    if (rc < 0)
        goto out;
    w->next_serial++;
    w->fd = fd;
    w->idx_fd = ifd;
    fd = ifd = -1;
    w->have_file = true;
    w->file_bytes = out.len;
    w->idx_bytes = 0;
    w->file_fetches = 0;
    memcpy(w->info_id, w->next_info_id, 16);
    if (uuid_new(w->next_info_id) < 0) /* keep the old one: still unused */
        w->next_info_id[15] ^= 1;
    w->st.files++;
    w->st.records++;
    w->st.warcinfos++;
    w->st.bytes_written += out.len;
    /* Best effort here: finishing the file (finish_file) fsyncs the folder
     * again and reports a failure then. */
    int dsync = cr_fsync_dir(w->dir);
    (void)dsync;
out:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    if (ifd >= 0) {
        close(ifd);
        unlink(ipath);
    }
    gz_end(&g);
    gbuf_release(&out);
    cr_buf_release(&block);
    return rc;
}

/* ---- open / close ------------------------------------------------------- */

static bool tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* Checks the caller's warcinfo text and stores it as CRLF lines. */
static int take_info(warc_writer *w, const char *info, char *err, size_t errlen)
{
    cr_buf b;
    cr_buf_init(&b, WARC_MAX_INFO_BYTES + 4096);
    size_t len = info ? strlen(info) : 0;
    int rc = 0, lineno = 0;
    if (len > WARC_MAX_INFO_BYTES) {
        cr_errf(err, errlen, "warc: info text longer than %u bytes", WARC_MAX_INFO_BYTES);
        return -EINVAL;
    }
    size_t pos = 0;
    while (rc == 0 && pos < len) {
        const char *nlp = memchr(info + pos, '\n', len - pos);
        size_t end = nlp ? (size_t)(nlp - info) : len, n = end - pos;
        const char *line = info + pos;
        lineno++;
        pos = end + 1;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        if (n == 0)
            continue;
        size_t k = 0;
        while (k < n && tchar(line[k]))
            k++;
        bool ok = k > 0 && k < n && line[k] == ':';
        for (size_t i = 0; ok && i < n; i++)
            if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
                ok = false;
        if (!ok) {
            cr_errf(err, errlen, "warc: info line %d is not \"name: value\"", lineno);
            rc = -EINVAL;
            break;
        }
        rc = cr_buf_append(&b, line, n);
        if (rc == 0)
            rc = cr_buf_append(&b, "\r\n", 2);
    }
    if (rc == 0) {
        w->info_len = b.len;
        w->info = cr_buf_take(&b);
        if (w->info == NULL)
            rc = -ENOMEM;
    }
    if (rc == -ENOMEM)
        cr_errf(err, errlen, "warc: out of memory");
    cr_buf_release(&b);
    return rc;
}

warc_writer *warc_open(const warc_opts *o, char *err, size_t errlen)
{
    cr_errf(err, errlen, "%s", "");
    if (o == NULL || o->dir == NULL || o->dir[0] == '\0') {
        cr_errf(err, errlen, "warc: no archive folder given");
        return NULL;
    }
    size_t pl = o->prefix ? strlen(o->prefix) : 0;
    bool prefix_ok = pl > 0 && pl <= WARC_MAX_PREFIX;
    for (size_t i = 0; prefix_ok && i < pl; i++) {
        char c = o->prefix[i];
        prefix_ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    }
    if (!prefix_ok) {
        cr_errf(err, errlen, "warc: prefix must be 1..%d of [A-Za-z0-9._-]", WARC_MAX_PREFIX);
        return NULL;
    }
    if (o->gzip_level < 0 || o->gzip_level > 9) {
        cr_errf(err, errlen, "warc: gzip_level must be 1..9 (0: default)");
        return NULL;
    }
    if (strlen(o->dir) > PATH_MAX - 200) {
        cr_errf(err, errlen, "warc: archive folder path too long");
        return NULL;
    }
    warc_writer *w = cr_calloc(1, sizeof *w);
    if (w == NULL) {
        cr_errf(err, errlen, "warc: out of memory");
        return NULL;
    }
    w->lock_fd = -1;
    w->fd = w->idx_fd = -1;
    memcpy(w->prefix, o->prefix, pl + 1);
    w->max_file_bytes = o->max_file_bytes ? o->max_file_bytes : WARC_DEFAULT_MAX_FILE_BYTES;
    w->revisits = o->revisits;
    w->dedup_cap = o->dedup_max_entries ? o->dedup_max_entries : WARC_DEFAULT_DEDUP_ENTRIES;
    w->level = o->gzip_level ? o->gzip_level : 6;
    bool mutex = false;
    w->dir = cr_strdup(o->dir);
    if (w->dir == NULL) {
        cr_errf(err, errlen, "warc: out of memory");
        goto fail;
    }
    if (take_info(w, o->info, err, errlen) < 0)
        goto fail;
    if (pthread_mutex_init(&w->lock, NULL) != 0) {
        cr_errf(err, errlen, "warc: cannot make a mutex");
        goto fail;
    }
    mutex = true;
    if (mkdir(w->dir, 0755) < 0 && errno != EEXIST) {
        cr_errf(err, errlen, "warc: cannot make %s: %s", w->dir, strerror(errno));
        goto fail;
    }
    char lpath[PATH_MAX];
    snprintf(lpath, sizeof lpath, "%s/%s.lock", w->dir, w->prefix);
    w->lock_fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (w->lock_fd < 0) {
        cr_errf(err, errlen, "warc: cannot open %s: %s", lpath, strerror(errno));
        goto fail;
    }
    if (flock(w->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        cr_errf(err, errlen, "warc: %s is in use by another writer", lpath);
        goto fail;
    }
    if (warc_recover(w, err, errlen) < 0)
        goto fail;
    if (uuid_new(w->next_info_id) < 0) {
        cr_errf(err, errlen, "warc: no random bytes: %s", strerror(errno));
        goto fail;
    }
    return w;
fail:
    if (w->lock_fd >= 0)
        close(w->lock_fd);
    if (mutex)
        pthread_mutex_destroy(&w->lock);
    cr_free(w->info);
    cr_free(w->dir);
    cr_free(w);
    return NULL;
}

int warc_close(warc_writer *w)
{
    if (w == NULL)
        return 0;
    pthread_mutex_lock(&w->lock);
    int rc = file_finish(w);
    pthread_mutex_unlock(&w->lock);
    pthread_mutex_destroy(&w->lock);
    dd_release(w);
    if (w->lock_fd >= 0)
        close(w->lock_fd);
    cr_free(w->info);
    cr_free(w->dir);
    cr_free(w);
    return rc;
}

int warc_sync(warc_writer *w)
{
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    if (w->have_file) {
        if (fsync(w->fd) < 0)
            rc = -errno;
        if (fsync(w->idx_fd) < 0 && rc == 0)
            rc = -errno;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

void warc_stats_get(warc_writer *w, warc_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = w->st;
    out->dedup_entries = w->slot_count;
    out->dedup_bytes = w->slot_cap * sizeof(dd_slot) + w->arena_bytes;
    pthread_mutex_unlock(&w->lock);
}

static bool uri_ok(const char *u)
{
    size_t n = strnlen(u, WARC_MAX_URI_BYTES + 1);
    if (n == 0 || n > WARC_MAX_URI_BYTES || strchr(u, ':') == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)u[i] <= 0x20 || u[i] == 0x7f)
            return false;
    return true;
}

int warc_dedup_add(warc_writer *w, const warc_dedup_entry *e)
{
    if (e == NULL || e->uri == NULL || !uri_ok(e->uri) || e->date_ms < 0)
        return -EINVAL;
    char date[25];
    if (warc_date(e->date_ms, date) < 0)
        return -EINVAL;
    pthread_mutex_lock(&w->lock);
    int rc = dd_insert(w, e->digest, e->record_id, e->date_ms, e->uri);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

int warc_dedup_each(warc_writer *w, int (*cb)(void *ctx, const warc_dedup_entry *e), void *ctx)
{
    int rc = 0;
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; rc == 0 && i < w->slot_cap; i++) {
        const dd_slot *s = &w->slots[i];
        if (s->uri == NULL)
            continue;
        warc_dedup_entry e;
        memcpy(e.digest, s->digest, 20);
        memcpy(e.record_id, s->id, 16);
        e.date_ms = s->date_ms;
        e.uri = s->uri;
        rc = cb(ctx, &e);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ---- writing a fetch ---------------------------------------------------- */

/* What a fetch needs no lock for. */
typedef struct prep {
    const warc_fetch *f;
    reader rd;                  /* a streamed payload's */
    char date[25];
    int64_t date_ms;
    cr_buf fixed;               /* the stored header block when changed */
    const char *hdr;
    size_t hdr_len;
    uint8_t req_id[16], resp_id[16];
    uint8_t payload_sha[20];
    char payload_digest[38];
    char block_digest[38];      /* response: headers + payload; "" until needed */
    char revisit_digest[38];    /* revisit: headers only; "" until needed */
    char req_block_digest[38];
    char req_payload_digest[38];
    bool eligible;              /* may become or make a revisit */
    int status;
    const char *mime;
    size_t mime_len;
} prep;

/* The choices a group was built for. */
typedef struct plan {
    uint8_t info_id[16];
    bool revisit;
    bool not_modified;          /* revisit: server-not-modified, else identical */
    bool has_ref_id;
    char ref_digest[38];        /* not_modified: the original's payload digest */
    uint8_t ref_id[16];
    int64_t ref_date_ms;
    const char *ref_uri;        /* in the arena: stable */
} plan;

typedef struct group {
    gbuf bytes;
    size_t resp_off, resp_len;
    plan built;
} group;

static bool block_ok(const char *p, size_t n)
{
    return (n >= 2 && p[n - 1] == '\n' && p[n - 2] == '\n') ||
           (n >= 4 && memcmp(p + n - 4, "\r\n\r\n", 4) == 0);
}

static int prepare(prep *p, const warc_fetch *f)
{
    p->f = f;
    p->rd.fn = f->payload ? NULL : f->payload_read;
    p->rd.ctx = f->payload_ctx;
    cr_buf_init(&p->fixed, WARC_MAX_HEADER_BYTES + 4096);
    if (f->uri == NULL || !uri_ok(f->uri) || f->headers == NULL || f->headers_len == 0 ||
        f->headers_len > WARC_MAX_HEADER_BYTES ||
        (f->payload_len && f->payload == NULL && f->payload_read == NULL) ||
        (f->request_len && (f->request == NULL || f->request_len > WARC_MAX_HEADER_BYTES ||
                            !block_ok(f->request, f->request_len))))
        return -EINVAL;
    if (f->ip && *f->ip) {
        size_t n = strnlen(f->ip, 64);
        if (n >= 64 || strspn(f->ip, "0123456789abcdefABCDEF:.%") != n)
            return -EINVAL;
    }
    p->date_ms = f->date_ms > 0 ? f->date_ms : cr_wall_ms();
    if (warc_date(p->date_ms, p->date) < 0)
        return -EINVAL;
    bool changed;
    int rc = warc_http_fix(f->headers, f->headers_len, f->payload_len, &p->fixed, &changed);
    if (rc < 0)
        return rc == -E2BIG ? -EINVAL : rc;
    p->hdr = p->fixed.data;
    p->hdr_len = p->fixed.len;
    meta_ctx m = {0, NULL, 0};
    http_lines(p->hdr, p->hdr_len, meta_line, &m);
    p->status = f->status > 0 ? f->status : m.status;
    if (f->mime)
        p->mime_len = cdxj_media_type(f->mime, strlen(f->mime), &p->mime);
    else if (m.ct)
        p->mime_len = cdxj_media_type(m.ct, m.ct_len, &p->mime);
    rc = uuid_new(p->req_id);
    if (rc == 0)
        rc = uuid_new(p->resp_id);
    if (rc < 0)
        return rc;
    if (f->payload_sha1) { /* digested as it arrived */
        memcpy(p->payload_sha, f->payload_sha1, 20);
        warc_digest_text(p->payload_sha, p->payload_digest);
    } else {
        span pay = {f->payload, f->payload_len};
        rc = digest_text_of(&p->rd, &pay, 1, p->payload_digest, p->payload_sha);
        if (rc < 0)
            return rc;
    }
    if (f->block_sha1 && !changed) /* the block is the header block as given + payload */
        warc_digest_text(f->block_sha1, p->block_digest);
    if (f->request_len) {
        span req = {f->request, f->request_len};
        span empty = {NULL, 0};
        rc = digest_text_of(NULL, &req, 1, p->req_block_digest, NULL);
        if (rc == 0)
            rc = digest_text_of(NULL, &empty, 1, p->req_payload_digest, NULL);
        if (rc < 0)
            return rc;
    }
    p->eligible = f->payload_len > 0 && !f->truncated;
    return 0;
}

static void prep_release(prep *p)
{
    cr_buf_release(&p->fixed);
}

/* Compresses the fetch's records for plan pl into g (replacing its bytes). */
static int build(prep *p, gz *z, const plan *pl, group *g)
{
    const warc_fetch *f = p->f;
    int rc;
    g->bytes.len = 0;
    if (f->request_len) {
        rec r = {
            .type = "request", .id = p->req_id, .date = p->date, .uri = f->uri, .ip = f->ip,
            .concurrent = p->resp_id, .warcinfo_id = pl->info_id,
            .content_type = "application/http;msgtype=request",
            .block_digest = p->req_block_digest, .payload_digest = p->req_payload_digest,
            .block = {{f->request, f->request_len}}, .nblock = 1,
        };
        rc = rec_member(z, &g->bytes, &r);
        if (rc < 0)
            return rc;
    }
    g->resp_off = g->bytes.len;
    rec r = {
        .type = "response", .id = p->resp_id, .date = p->date, .uri = f->uri, .ip = f->ip,
        .concurrent = f->request_len ? p->req_id : NULL, .warcinfo_id = pl->info_id,
        .content_type = "application/http;msgtype=response",
        .payload_digest = p->payload_digest,
        .block = {{p->hdr, p->hdr_len}, {f->payload, f->payload_len}}, .nblock = 2,
    };
    char ref_date[25];
    if (pl->revisit) {
        if (p->revisit_digest[0] == '\0') {
            span s = {p->hdr, p->hdr_len};
            rc = digest_text_of(NULL, &s, 1, p->revisit_digest, NULL);
            if (rc < 0)
                return rc;
        }
        rc = warc_date(pl->ref_date_ms, ref_date);
        if (rc < 0)
            return rc;
        r.type = "revisit";
        r.revisit = true;
        r.profile = pl->not_modified ? PROFILE_NOT_MODIFIED : PROFILE_IDENTICAL;
        if (pl->not_modified) /* the payload the 304 stands for */
            r.payload_digest = pl->ref_digest;
        r.ref_id = pl->has_ref_id ? pl->ref_id : NULL;
        r.ref_uri = pl->ref_uri;
        r.ref_date = ref_date;
        r.block_digest = p->revisit_digest;
        r.nblock = 1;
    } else {
        if (p->block_digest[0] == '\0') {
            rc = digest_text_of(&p->rd, r.block, 2, p->block_digest, NULL);
            if (rc < 0)
                return rc;
        }
        r.block_digest = p->block_digest;
        r.truncated = f->truncated;
    }
    rc = rec_member(z, &g->bytes, &r);
    if (rc < 0)
        return rc;
    g->resp_len = g->bytes.len - g->resp_off;
    g->built = *pl;
    return 0;
}

/* The plan the writer's state calls for now (lock held). */
static void plan_now(warc_writer *w, const prep *p, plan *pl)
{
    memset(pl, 0, sizeof *pl);
    memcpy(pl->info_id, w->have_file ? w->info_id : w->next_info_id, 16);
    const warc_prior *pr = p->f->prior;
    if (p->f->not_modified && pr != NULL && pr->uri != NULL) {
        pl->revisit = true;
        pl->not_modified = true;
        pl->has_ref_id = uuid_parse(pr->record_id, pl->ref_id) == 0;
        pl->ref_date_ms = pr->date_ms > 0 ? pr->date_ms : p->date_ms;
        pl->ref_uri = pr->uri;
        snprintf(pl->ref_digest, sizeof pl->ref_digest, "%s",
                 pr->digest && strlen(pr->digest) == 37 ? pr->digest : p->payload_digest);
        return;
    }
    if (!w->revisits || !p->eligible)
        return;
    const dd_slot *s = dd_find(w, p->payload_sha);
    if (s == NULL) {
        /* the payload an earlier crawl archived for this URL */
        if (pr != NULL && pr->digest != NULL && pr->uri != NULL && pr->date_ms > 0 &&
            strcmp(pr->digest, p->payload_digest) == 0 && uuid_parse(pr->record_id, pl->ref_id) == 0) {
            pl->revisit = true;
            pl->has_ref_id = true;
            pl->ref_date_ms = pr->date_ms;
            pl->ref_uri = pr->uri;
        }
        return;
    }
    pl->revisit = true;
    pl->has_ref_id = true;
    memcpy(pl->ref_id, s->id, 16);
    pl->ref_date_ms = s->date_ms;
    pl->ref_uri = s->uri;
}

static bool plan_same(const plan *a, const plan *b)
{
    return memcmp(a->info_id, b->info_id, 16) == 0 && a->revisit == b->revisit &&
           a->not_modified == b->not_modified && a->has_ref_id == b->has_ref_id &&
           (!a->revisit || memcmp(a->ref_id, b->ref_id, 16) == 0);
}

/* Puts the file back to old sizes after a failed append (lock held). */
static int cut_back(warc_writer *w, uint64_t file_bytes, uint64_t idx_bytes)
{
    int rc = 0;
    if (ftruncate(w->fd, (off_t)file_bytes) < 0 || ftruncate(w->idx_fd, (off_t)idx_bytes) < 0)
        rc = -EIO;
    if (rc < 0)
        w->broken = -EIO;
    return rc;
}

/* Appends the group and its index line, remembers the payload (lock held). */
static int commit(warc_writer *w, prep *p, group *g, warc_result *out)
{
    const warc_fetch *f = p->f;
    uint64_t off0 = w->file_bytes, idx0 = w->idx_bytes;
    char ts[15];
    date_to_timestamp(p->date, ts);
    cr_buf line;
    cr_buf_init(&line, 8 * (size_t)WARC_MAX_URI_BYTES);
    cdxj_entry e = {
        .url = f->uri, .url_len = strlen(f->uri),
        .mime = g->built.revisit ? "warc/revisit" : p->mime,
        .mime_len = g->built.revisit ? 12 : p->mime_len,
        .status = p->status,
        .digest = (g->built.not_modified ? g->built.ref_digest : p->payload_digest) + 5,
        .timestamp = ts,
        .length = g->resp_len, .offset = off0 + g->resp_off, .filename = w->name,
    };
    int rc = cdxj_line(&line, &e);
    if (rc < 0)
        goto out;
    rc = write_all(w->fd, g->bytes.p, g->bytes.len);
    if (rc < 0) {
        cut_back(w, off0, idx0);
        goto out;
    }
    rc = write_all(w->idx_fd, line.data, line.len);
    if (rc < 0) {
        cut_back(w, off0, idx0);
        goto out;
    }
    w->file_bytes += g->bytes.len;
    w->idx_bytes += line.len;
    w->file_fetches++;
    w->st.bytes_written += g->bytes.len;
    w->st.records += f->request_len ? 2 : 1;
    if (f->request_len)
        w->st.requests++;
    if (g->built.revisit) {
        w->st.revisits++;
        w->st.revisit_bytes_saved += f->payload_len;
    } else {
        w->st.responses++;
        w->st.payload_bytes += f->payload_len;
        if (w->revisits && p->eligible) {
            int r = dd_insert(w, p->payload_sha, p->resp_id, p->date_ms, f->uri);
            if (r < 0 && r != -EEXIST)
                w->st.dedup_full++;
        }
    }
    if (out) {
        out->offset = e.offset;
        out->length = e.length;
        snprintf(out->file, sizeof out->file, "%s", w->name);
        out->was_revisit = g->built.revisit;
        uuid_text(p->resp_id, out->record_id);
        out->date_ms = p->date_ms;
        memcpy(out->payload_digest, p->payload_digest, sizeof out->payload_digest);
        out->refers_to_id[0] = '\0';
        out->refers_to_date_ms = 0;
        out->refers_to_uri = NULL;
        if (g->built.revisit) {
            if (g->built.has_ref_id)
                uuid_text(g->built.ref_id, out->refers_to_id);
            out->refers_to_date_ms = g->built.ref_date_ms;
            out->refers_to_uri = g->built.ref_uri;
        }
    }
out:
    cr_buf_release(&line);
    return rc;
}

int warc_write_fetch(warc_writer *w, const warc_fetch *f, warc_result *out)
{
    if (w == NULL || f == NULL)
        return -EINVAL;
    prep p;
    memset(&p, 0, sizeof p);
    gz z = {.init = false, .level = w->level};
    group g;
    memset(&g, 0, sizeof g);
    plan pl;
    int rc = prepare(&p, f);
    if (rc < 0)
        goto out;
    z.rd = &p.rd;

    pthread_mutex_lock(&w->lock);
    rc = w->broken;
    plan_now(w, &p, &pl);
    pthread_mutex_unlock(&w->lock);
    if (rc < 0)
        goto out;

    rc = build(&p, &z, &pl, &g);
    if (rc < 0)
        goto out;

    pthread_mutex_lock(&w->lock);
    for (int round = 0; rc == 0; round++) {
        if (w->broken) {
            rc = w->broken;
            break;
        }
        if (!w->have_file) {
            rc = file_start(w);
        } else if (w->file_fetches > 0 && w->file_bytes + g.bytes.len > w->max_file_bytes) {
            rc = file_finish(w);
            if (rc == 0)
                rc = file_start(w);
        }
        if (rc < 0)
            break;
        plan_now(w, &p, &pl);
        if (plan_same(&pl, &g.built))
            break;
        /* The file rotated or another thread archived this payload
         * meanwhile. A response is rebuilt outside the lock (twice at
         * most, so a busy writer cannot starve us); a revisit, being
         * headers only, in place. */
        w->st.rebuilt++;
        if (round < 2 && !pl.revisit) {
            pthread_mutex_unlock(&w->lock);
            rc = build(&p, &z, &pl, &g);
            pthread_mutex_lock(&w->lock);
        } else {
            rc = build(&p, &z, &pl, &g);
        }
    }
    if (rc == 0)
        rc = commit(w, &p, &g, out);
    pthread_mutex_unlock(&w->lock);
out:
    gz_end(&z);
    gbuf_release(&g.bytes);
    prep_release(&p);
    return rc;
}
