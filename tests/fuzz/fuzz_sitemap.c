/* tests/fuzz/fuzz_sitemap: libFuzzer target for crawler/web/sitemap.
 *
 * Byte 0 picks the options (small or default caps) and the piece size the
 * input is fed in; the rest is the sitemap. On any input: every entry's loc
 * is non-empty, NUL-free, trimmed and at most max_loc bytes; entries never
 * pass max_urls and agree with the counters; at most max_bytes are parsed;
 * an error always has a text. Fed in one piece the same input gives the
 * same entries whenever both parses succeed, and its gzip-compressed form
 * gives the same result as the plain one (same entries, or an error for both).
 * Any violation traps. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "crawler/web/sitemap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

typedef struct seen {
    size_t max_loc;
    uint64_t n;
    uint64_t hash; /* of every entry, in order */
} seen;

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

static void on_entry(void *ud, const sitemap_entry *e)
{
    seen *s = ud;
    CHECK(e->loc != NULL && e->loc_len > 0 && strlen(e->loc) == e->loc_len);
    CHECK(e->loc_len <= s->max_loc);
    CHECK(!is_ws(e->loc[0]) && !is_ws(e->loc[e->loc_len - 1]));
    CHECK(e->kind == SITEMAP_URLSET || e->kind == SITEMAP_INDEX);
    s->n++;
    for (size_t i = 0; i < e->loc_len; i++)
        s->hash = (s->hash ^ (unsigned char)e->loc[i]) * 1099511628211ull;
    s->hash = (s->hash ^ (uint64_t)e->kind) * 1099511628211ull;
    if (e->has_lastmod)
        s->hash = (s->hash ^ (uint64_t)e->lastmod_ms) * 1099511628211ull;
}

static int run(const sitemap_opts *o, const uint8_t *in, size_t n, size_t piece, seen *s,
               sitemap_stats *st)
{
    sitemap_parser *p = sitemap_new(o, on_entry, s);
    CHECK(p != NULL);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i += piece)
        rc = sitemap_feed(p, in + i, n - i < piece ? n - i : piece);
    if (rc == 0)
        rc = sitemap_finish(p);
    sitemap_stats_get(p, st);
    CHECK((rc == 0) == (sitemap_error_text(p)[0] == '\0'));
    sitemap_free(p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t max_urls[] = { 0, 1, 3, 100 };
    static const size_t max_bytes[] = { 0, 64, 1000, 100000 };
    static const size_t max_loc[] = { 0, 1, 16, 200 };
    static const size_t pieces[] = { 1, 7, 256, 1 << 20 };
    unsigned sel = data[0];
    sitemap_opts o = { .max_urls = max_urls[sel & 3], .max_bytes = max_bytes[(sel >> 2) & 3],
                       .max_loc = max_loc[(sel >> 4) & 3] };
    size_t piece = pieces[(sel >> 6) & 3];
    const uint8_t *in = data + 1;
    size_t n = size - 1;
    size_t lim_urls = o.max_urls ? o.max_urls : SITEMAP_DEFAULT_MAX_URLS;
    size_t lim_bytes = o.max_bytes ? o.max_bytes : SITEMAP_DEFAULT_MAX_BYTES;
    seen a = { .max_loc = o.max_loc ? o.max_loc : SITEMAP_DEFAULT_MAX_LOC,
               .hash = 14695981039346656037ull };
    seen b = a, c = a;
    sitemap_stats st, st2, st3;
    int rc = run(&o, in, n, piece, &a, &st);
    CHECK(rc <= 0);
    CHECK(st.entries == a.n && a.n <= lim_urls);
    CHECK(st.bytes_xml <= lim_bytes);
    CHECK(st.lastmod <= st.entries);
    int rc2 = run(&o, in, n, n ? n : 1, &b, &st2);
    if (rc == 0 && rc2 == 0)
        CHECK(a.n == b.n && a.hash == b.hash);
    if (n > 0 && n < 65536 && !(n >= 2 && in[0] == 0x1f && in[1] == 0x8b)) {
        uLongf glen = compressBound((uLong)n) + 32;
        uint8_t *gz = malloc(glen);
        CHECK(gz != NULL);
        z_stream z;
        memset(&z, 0, sizeof z);
        CHECK(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
        z.next_in = (uint8_t *)in;
        z.avail_in = (uInt)n;
        z.next_out = gz;
        z.avail_out = (uInt)glen;
        CHECK(deflate(&z, Z_FINISH) == Z_STREAM_END);
        size_t gn = glen - z.avail_out;
        deflateEnd(&z);
        int rc3 = run(&o, gz, gn, n ? n : 1, &c, &st3);
        CHECK(st3.gzip);
        /* where an error is noticed may depend on the pieces; success not */
        CHECK((rc3 == 0) == (rc2 == 0));
        if (rc2 == 0)
            CHECK(c.n == b.n && c.hash == b.hash && st3.bytes_xml == st2.bytes_xml);
        free(gz);
    }
    return 0;
}
