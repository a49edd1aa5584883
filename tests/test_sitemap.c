/* tests/test_sitemap: crawler/web/sitemap, the streaming sitemap parser.
 *
 * Each case parses a document and compares the entries as text, one line
 * each: "U loc [lastmod-ms]" for a <url>, "S loc [lastmod-ms]" for a child
 * <sitemap>. Then the protocol's limits (entries, uncompressed bytes, loc
 * length), gzip (plain, chunked, corrupt, a bomb), hostile XML (DOCTYPE,
 * entities, depth), W3C Datetime, the scope rule, and out of memory. The
 * chunking case splits documents at random points; it prints its seed and
 * takes one back from CRAWLD_TEST_SEED. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <libxml/parser.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/sitemap.h"

#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
#define NS "xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\""
#define URLSET(body) HEAD "<urlset " NS ">\n" body "</urlset>\n"
#define INDEX(body) HEAD "<sitemapindex " NS ">\n" body "</sitemapindex>\n"

static void collect(void *ud, const sitemap_entry *e)
{
    cr_buf *b = ud;
    assert_non_null(e->loc);
    assert_true(e->loc_len > 0);
    assert_int_equal(strlen(e->loc), e->loc_len);
    char c = e->kind == SITEMAP_INDEX ? 'S' : 'U';
    if (e->has_lastmod)
        assert_int_equal(cr_buf_printf(b, "%c %s %lld\n", c, e->loc, (long long)e->lastmod_ms), 0);
    else
        assert_int_equal(cr_buf_printf(b, "%c %s\n", c, e->loc), 0);
}

typedef struct run {
    cr_buf out;
    int rc;
    sitemap_stats st;
    char err[256];
} run;

/* Parses data in pieces of `piece` bytes (0: one piece) with options o. */
static void parse(const void *data, size_t len, const sitemap_opts *o, size_t piece, run *r)
{
    cr_buf_init(&r->out, 0);
    sitemap_parser *p = sitemap_new(o, collect, &r->out);
    assert_non_null(p);
    const char *s = data;
    size_t step = piece ? piece : (len ? len : 1);
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i += step)
        rc = sitemap_feed(p, s + i, len - i < step ? len - i : step);
    r->rc = rc ? rc : sitemap_finish(p);
    sitemap_stats_get(p, &r->st);
    snprintf(r->err, sizeof r->err, "%s", sitemap_error_text(p));
    sitemap_free(p);
}

static void check(const char *doc, const char *want)
{
    run r;
    parse(doc, strlen(doc), NULL, 0, &r);
    const char *got = r.out.data ? r.out.data : "";
    if (r.rc != 0)
        fail_msg("doc:\n%s\nerror %d: %s", doc, r.rc, r.err);
    if (strcmp(got, want) != 0)
        fail_msg("doc:\n%s\nwant:\n%sgot:\n%s", doc, want, got);
    cr_buf_release(&r.out);
}

/* Parses doc expecting error err; returns the error text in r. */
static void check_error(const char *doc, size_t len, int err, run *r)
{
    parse(doc, len, NULL, 0, r);
    if (r->rc != -err)
        fail_msg("want error %s, got %d (%s)", sitemap_error_name(err), r->rc, r->err);
    assert_true(r->err[0] != '\0');
}

static unsigned char *gzip_of(const void *data, size_t len, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)len) + 64;
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (unsigned char *)data;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    *outlen = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

/* ---- urlset and sitemapindex ------------------------------------------- */

static void urlset_entries_in_order(void **s)
{
    (void)s;
    check(URLSET("<url><loc>http://a.test/</loc></url>\n"
                 "<url><loc>http://a.test/x.html</loc><changefreq>daily</changefreq>"
                 "<priority>0.5</priority></url>\n"),
          "U http://a.test/\nU http://a.test/x.html\n");
}

static void loc_trimmed_and_decoded(void **s)
{
    (void)s;
    check(URLSET("<url><loc>\n   http://a.test/?a=1&amp;b=2 \t\n</loc></url>"
                 "<url><loc><![CDATA[http://a.test/c]]></loc></url>"),
          "U http://a.test/?a=1&b=2\nU http://a.test/c\n");
}

static void index_children(void **s)
{
    (void)s;
    check(INDEX("<sitemap><loc>http://a.test/s1.xml</loc>"
                "<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>"
                "<sitemap><loc>http://a.test/s2.xml.gz</loc></sitemap>"),
          "S http://a.test/s1.xml 1096654997000\nS http://a.test/s2.xml.gz\n");
    run r;
    const char *d = INDEX("<sitemap><loc>http://a.test/s1.xml</loc></sitemap>");
    parse(d, strlen(d), NULL, 0, &r);
    assert_int_equal(r.st.kind, SITEMAP_INDEX);
    cr_buf_release(&r.out);
}

static void prefixed_namespace_and_extensions(void **s)
{
    (void)s;
    check(HEAD "<sm:urlset xmlns:sm=\"http://www.sitemaps.org/schemas/sitemap/0.9\" "
               "xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">"
               "<sm:url><sm:loc>http://a.test/p</sm:loc>"
               "<image:image><image:loc>http://a.test/i.png</image:loc></image:image>"
               "</sm:url></sm:urlset>",
          "U http://a.test/p\n");
}

static void first_loc_wins_and_missing_loc_counted(void **s)
{
    (void)s;
    run r;
    const char *d = URLSET("<url><loc>http://a.test/1</loc><loc>http://a.test/2</loc></url>"
                           "<url><lastmod>2005-01-01</lastmod></url>"
                           "<url><loc>  </loc></url>");
    parse(d, strlen(d), NULL, 0, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "U http://a.test/1\n");
    assert_int_equal(r.st.no_loc, 2);
    assert_int_equal(r.st.entries, 1);
    cr_buf_release(&r.out);
}

static void wrong_entries_counted(void **s)
{
    (void)s;
    run r;
    const char *d = URLSET("<sitemap><loc>http://a.test/s.xml</loc></sitemap>"
                           "<url><loc>http://a.test/</loc></url>");
    parse(d, strlen(d), NULL, 0, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "U http://a.test/\n");
    assert_int_equal(r.st.wrong_entry, 1);
    cr_buf_release(&r.out);
}

static void lastmod_forms(void **s)
{
    (void)s;
    check(URLSET("<url><loc>http://a/1</loc><lastmod>1997</lastmod></url>"
                 "<url><loc>http://a/2</loc><lastmod>1997-07</lastmod></url>"
                 "<url><loc>http://a/3</loc><lastmod>1997-07-16</lastmod></url>"
                 "<url><loc>http://a/4</loc><lastmod>1997-07-16T19:20+01:00</lastmod></url>"
                 "<url><loc>http://a/5</loc><lastmod>1997-07-16T19:20:30+01:00</lastmod></url>"
                 "<url><loc>http://a/6</loc><lastmod>1997-07-16T19:20:30.45+01:00</lastmod></url>"
                 "<url><loc>http://a/7</loc><lastmod> 1997-07-16T18:20:30Z </lastmod></url>"
                 "<url><loc>http://a/8</loc><lastmod>yesterday</lastmod></url>"),
          "U http://a/1 852076800000\nU http://a/2 867715200000\nU http://a/3 869011200000\n"
          "U http://a/4 869077200000\nU http://a/5 869077230000\nU http://a/6 869077230450\n"
          "U http://a/7 869077230000\nU http://a/8\n");
}

/* ---- W3C Datetime ------------------------------------------------------ */

static void datetime_table(void **s)
{
    (void)s;
    static const struct { const char *in; long long ms; } ok[] = {
        { "1970", 0 },
        { "1970-01-01T00:00Z", 0 },
        { "2000-02-29", 951782400000LL },
        { "2004-10-01T18:23:17+00:00", 1096654997000LL },
        { "2004-10-01T18:23:17-05:30", 1096674797000LL },
        { "2004-10-01T18:23:17.5Z", 1096654997500LL },
        { "2004-10-01T18:23:17.123456Z", 1096654997123LL },
        { "1969-12-31T23:59:59Z", -1000 },
        { "2038-01-19T03:14:08Z", 2147483648000LL },
    };
    static const char *const bad[] = {
        "", "97", "1997-7", "1997-13", "1997-00", "1997-02-29", "2000-02-30", "1997-07-16T",
        "1997-07-16T19:20", "1997-07-16T19:20:30", "1997-07-16T24:00Z", "1997-07-16T19:60Z",
        "1997-07-16T19:20:61Z", "1997-07-16T19:20:30.Z", "1997-07-16T19:20+0100",
        "1997-07-16T19:20+01", "1997-07-16 19:20Z", "1997-07-16T19:20Zx", "1997-07-16x",
        "+1997", "1997-07-16T19:20:30.45+25:00",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t ms = 12345;
        if (sitemap_parse_datetime(ok[i].in, strlen(ok[i].in), &ms) != 0)
            fail_msg("refused %s", ok[i].in);
        if (ms != ok[i].ms)
            fail_msg("%s: want %lld got %lld", ok[i].in, ok[i].ms, (long long)ms);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms;
        if (sitemap_parse_datetime(bad[i], strlen(bad[i]), &ms) != -EINVAL)
            fail_msg("accepted %s", bad[i]);
    }
}

static void bad_lastmod_counted_entry_kept(void **s)
{
    (void)s;
    run r;
    const char *d = URLSET("<url><loc>http://a/1</loc><lastmod>2020-02-30</lastmod></url>"
                           "<url><loc>http://a/2</loc><lastmod>2020-02-29</lastmod></url>");
    parse(d, strlen(d), NULL, 0, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "U http://a/1\nU http://a/2 1582934400000\n");
    assert_int_equal(r.st.bad_lastmod, 1);
    assert_int_equal(r.st.lastmod, 1);
    cr_buf_release(&r.out);
}

/* ---- chunking ------------------------------------------------------------ */

static unsigned long test_seed(void)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    unsigned long seed = env ? strtoul(env, NULL, 10) : (unsigned long)time(NULL);
    printf("test_sitemap: seed %lu (CRAWLD_TEST_SEED=%lu replays it)\n", seed, seed);
    return seed;
}

static void any_chunking_same_entries(void **s)
{
    (void)s;
    const char *d = URLSET("<url><loc>http://a.test/&#x41;</loc><lastmod>2001-02-03</lastmod></url>"
                           "<url><loc><![CDATA[http://a.test/b]]></loc></url>"
                           "<url><loc>http://a.test/\xc3\xa9</loc></url>");
    const char *want = "U http://a.test/A 981158400000\nU http://a.test/b\nU http://a.test/\xc3\xa9\n";
    size_t len = strlen(d), glen;
    unsigned char *gz = gzip_of(d, len, &glen);
    srand((unsigned)test_seed());
    for (size_t piece = 1; piece <= 17; piece++) {
        run r;
        parse(d, len, NULL, piece, &r);
        assert_int_equal(r.rc, 0);
        assert_string_equal(r.out.data, want);
        cr_buf_release(&r.out);
        parse(gz, glen, NULL, piece, &r);
        assert_int_equal(r.rc, 0);
        assert_true(r.st.gzip);
        assert_string_equal(r.out.data, want);
        cr_buf_release(&r.out);
    }
    for (int round = 0; round < 50; round++) {
        cr_buf out;
        cr_buf_init(&out, 0);
        sitemap_parser *p = sitemap_new(NULL, collect, &out);
        assert_non_null(p);
        const unsigned char *src = round % 2 ? gz : (const unsigned char *)d;
        size_t n = round % 2 ? glen : len, i = 0;
        while (i < n) {
            size_t k = 1 + (size_t)rand() % 40;
            if (k > n - i)
                k = n - i;
            assert_int_equal(sitemap_feed(p, src + i, k), 0);
            i += k;
        }
        assert_int_equal(sitemap_finish(p), 0);
        assert_string_equal(out.data, want);
        sitemap_free(p);
        cr_buf_release(&out);
    }
    free(gz);
}

static void reset_reuses_parser(void **s)
{
    (void)s;
    cr_buf out;
    cr_buf_init(&out, 0);
    sitemap_parser *p = sitemap_new(NULL, collect, &out);
    assert_non_null(p);
    const char *bad = "<html>";
    assert_int_equal(sitemap_feed(p, bad, strlen(bad)), -SITEMAP_ERR_ROOT);
    sitemap_reset(p);
    assert_string_equal(sitemap_error_text(p), "");
    const char *d = URLSET("<url><loc>http://a/1</loc></url>");
    assert_int_equal(sitemap_feed(p, d, strlen(d)), 0);
    assert_int_equal(sitemap_finish(p), 0);
    assert_string_equal(out.data, "U http://a/1\n");
    sitemap_free(p);
    cr_buf_release(&out);
}

/* ---- limits ---------------------------------------------------------- */

static char *many_urls(size_t n, size_t *len)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    assert_int_equal(cr_buf_puts(&b, HEAD "<urlset " NS ">\n"), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(cr_buf_printf(&b, "<url><loc>http://a.test/%zu</loc></url>\n", i), 0);
    assert_int_equal(cr_buf_puts(&b, "</urlset>\n"), 0);
    *len = b.len;
    return cr_buf_take(&b);
}

static void max_urls_option(void **s)
{
    (void)s;
    size_t len;
    char *d = many_urls(5, &len);
    sitemap_opts o = { .max_urls = 3 };
    run r;
    parse(d, len, &o, 0, &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out.data, "U http://a.test/0\nU http://a.test/1\nU http://a.test/2\n");
    assert_int_equal(r.st.entries, 3);
    assert_int_equal(r.st.over_limit, 2);
    cr_buf_release(&r.out);
    cr_free(d);
}

static void default_limit_is_50000_urls(void **s)
{
    (void)s;
    size_t len;
    char *d = many_urls(50001, &len);
    run r;
    parse(d, len, NULL, 65536, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.st.entries, 50000);
    assert_int_equal(r.st.over_limit, 1);
    /* the last emitted is number 49999 */
    assert_non_null(strstr(r.out.data, "U http://a.test/49999\n"));
    assert_null(strstr(r.out.data, "U http://a.test/50000\n"));
    cr_buf_release(&r.out);
    cr_free(d);
}

static void max_bytes_cuts_plain(void **s)
{
    (void)s;
    size_t len;
    char *d = many_urls(1000, &len);
    sitemap_opts o = { .max_bytes = 4096 };
    run r;
    parse(d, len, &o, 1000, &r);
    assert_int_equal(r.rc, -SITEMAP_ERR_TOO_BIG);
    assert_int_equal(r.st.bytes_xml, 4096);
    assert_true(r.st.entries > 10 && r.st.entries < 1000);
    assert_non_null(strstr(r.err, "larger than 4096 bytes"));
    cr_buf_release(&r.out);
    cr_free(d);
}

/* A gzip bomb: a valid start, then 64 MiB of spaces inside the urlset,
 * gzip-compressed to a few tens of KB. Cut at the default 50 MB. */
static void gzip_bomb_cut_at_default_limit(void **s)
{
    (void)s;
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = 1 << 20, glen = 0;
    unsigned char *gz = malloc(cap);
    assert_non_null(gz);
    static char spaces[1 << 16];
    memset(spaces, ' ', sizeof spaces);
    const char *start = URLSET("<url><loc>http://a.test/first</loc></url>");
    size_t slen = strlen(start) - strlen("</urlset>\n");
    for (int i = 0; i <= 1024; i++) {
        z.next_in = (unsigned char *)(i == 0 ? start : spaces);
        z.avail_in = (uInt)(i == 0 ? slen : sizeof spaces);
        do {
            z.next_out = gz + glen;
            z.avail_out = (uInt)(cap - glen);
            assert_true(deflate(&z, i == 1024 ? Z_FINISH : Z_NO_FLUSH) != Z_STREAM_ERROR);
            glen = cap - z.avail_out;
        } while (z.avail_out == 0 && glen < cap);
    }
    deflateEnd(&z);
    assert_true(glen < cap);
    run r;
    parse(gz, glen, NULL, 4096, &r);
    assert_int_equal(r.rc, -SITEMAP_ERR_TOO_BIG);
    assert_int_equal(r.st.bytes_xml, SITEMAP_DEFAULT_MAX_BYTES);
    assert_true(r.st.gzip);
    assert_string_equal(r.out.data, "U http://a.test/first\n");
    cr_buf_release(&r.out);
    free(gz);
}

static void loc_length_limit(void **s)
{
    (void)s;
    char loc[2100];
    memcpy(loc, "http://a.test/", 14);
    memset(loc + 14, 'x', sizeof loc - 14);
    cr_buf b;
    cr_buf_init(&b, 0);
    assert_int_equal(cr_buf_printf(&b, URLSET("<url><loc>%.*s</loc></url><url><loc>%.*s</loc></url>"),
                                   SITEMAP_DEFAULT_MAX_LOC, loc, SITEMAP_DEFAULT_MAX_LOC + 1, loc),
                     0);
    run r;
    parse(b.data, b.len, NULL, 0, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.st.entries, 1);
    assert_int_equal(r.st.loc_too_long, 1);
    assert_int_equal(strlen(r.out.data), 2 + SITEMAP_DEFAULT_MAX_LOC + 1);
    cr_buf_release(&r.out);
    cr_buf_release(&b);
}

/* ---- errors and hostile input ---------------------------------------- */

static void wrong_root_is_an_error(void **s)
{
    (void)s;
    run r;
    const char *html = "<html><body><a href=\"/x\">x</a></body></html>";
    check_error(html, strlen(html), SITEMAP_ERR_ROOT, &r);
    assert_non_null(strstr(r.err, "1:"));
    cr_buf_release(&r.out);
    const char *other_ns = HEAD "<urlset xmlns=\"http://example.com/ns\"><url><loc>http://a/</loc>"
                                "</url></urlset>";
    check_error(other_ns, strlen(other_ns), SITEMAP_ERR_ROOT, &r);
    assert_null(r.out.data);
    cr_buf_release(&r.out);
    const char *no_ns = HEAD "<urlset><url><loc>http://a/</loc></url></urlset>";
    check_error(no_ns, strlen(no_ns), SITEMAP_ERR_ROOT, &r);
    cr_buf_release(&r.out);
}

static void malformed_xml_has_line_and_column(void **s)
{
    (void)s;
    run r;
    const char *d = HEAD "<urlset " NS ">\n<url><loc>http://a/1</loc></url>\n"
                         "<url><loc>http://a/2</lo></url>\n</urlset>\n";
    check_error(d, strlen(d), SITEMAP_ERR_XML, &r);
    assert_string_equal(r.out.data, "U http://a/1\n");
    assert_true(strncmp(r.err, "4:", 2) == 0);
    cr_buf_release(&r.out);
}

static void truncated_document_is_an_error(void **s)
{
    (void)s;
    run r;
    const char *d = URLSET("<url><loc>http://a/1</loc></url>");
    check_error(d, strlen(d) - 10, SITEMAP_ERR_XML, &r); /* cut after </url> */
    assert_string_equal(r.out.data, "U http://a/1\n");
    cr_buf_release(&r.out);
}

static void empty_and_garbage(void **s)
{
    (void)s;
    run r;
    check_error("", 0, SITEMAP_ERR_EMPTY, &r);
    cr_buf_release(&r.out);
    check_error("x", 1, SITEMAP_ERR_XML, &r);
    cr_buf_release(&r.out);
    check_error(HEAD, strlen(HEAD), SITEMAP_ERR_XML, &r);
    cr_buf_release(&r.out);
    check_error("\x1f\x8b", 2, SITEMAP_ERR_GZIP, &r);
    cr_buf_release(&r.out);
}

static void doctype_refused_no_entity_expansion(void **s)
{
    (void)s;
    run r;
    const char *laughs =
        HEAD "<!DOCTYPE urlset [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;\">"
             "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;\">]>"
             "<urlset " NS "><url><loc>http://a/&c;</loc></url></urlset>";
    check_error(laughs, strlen(laughs), SITEMAP_ERR_DOCTYPE, &r);
    assert_null(r.out.data);
    cr_buf_release(&r.out);
    const char *xxe = HEAD "<!DOCTYPE urlset [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
                           "<urlset " NS "><url><loc>&x;</loc></url></urlset>";
    check_error(xxe, strlen(xxe), SITEMAP_ERR_DOCTYPE, &r);
    assert_null(r.out.data);
    cr_buf_release(&r.out);
    const char *undeclared = URLSET("<url><loc>http://a/&x;</loc></url>");
    check_error(undeclared, strlen(undeclared), SITEMAP_ERR_XML, &r);
    assert_null(r.out.data);
    cr_buf_release(&r.out);
}

static void deep_nesting_stops(void **s)
{
    (void)s;
    cr_buf b;
    cr_buf_init(&b, 0);
    assert_int_equal(cr_buf_puts(&b, HEAD "<urlset " NS "><url>"), 0);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(cr_buf_puts(&b, "<x>"), 0);
    run r;
    check_error(b.data, b.len, SITEMAP_ERR_DEPTH, &r);
    cr_buf_release(&r.out);
    cr_buf_release(&b);
}

static void corrupt_gzip(void **s)
{
    (void)s;
    const char *d = URLSET("<url><loc>http://a/1</loc></url><url><loc>http://a/2</loc></url>");
    size_t glen;
    unsigned char *gz = gzip_of(d, strlen(d), &glen);
    run r;
    parse(gz, glen - 6, NULL, 0, &r); /* cut: the stream ends early */
    assert_int_equal(r.rc, -SITEMAP_ERR_GZIP);
    cr_buf_release(&r.out);
    gz[glen / 2] ^= 0x55;
    gz[glen / 2 + 1] ^= 0xaa;
    parse(gz, glen, NULL, 0, &r);
    assert_true(r.rc == -SITEMAP_ERR_GZIP || r.rc == -SITEMAP_ERR_XML);
    assert_true(r.err[0] != '\0');
    cr_buf_release(&r.out);
    free(gz);
}

/* ---- the protocol's scope rule ---------------------------------------- */

static void loc_scope_rule(void **s)
{
    (void)s;
    static const struct { const char *sm, *url; int in; } t[] = {
        { "http://h/sitemap.xml", "http://h/", 1 },
        { "http://h/sitemap.xml", "http://h/a/b.html", 1 },
        { "http://h/sitemap.xml", "http://h", 1 },
        { "http://h/a/sitemap.xml", "http://h/a/b.html", 1 },
        { "http://h/a/sitemap.xml", "http://h/a/", 1 },
        { "http://h/a/sitemap.xml", "http://h/b/c.html", 0 },
        { "http://h/a/sitemap.xml", "http://h/", 0 },
        { "http://h/a/sitemap.xml", "http://h/ab", 0 },
        { "http://h/sitemap.xml", "https://h/", 0 },
        { "http://h/sitemap.xml", "http://www.h/", 0 },
        { "http://h/sitemap.xml", "http://h:8080/", 0 },
        { "http://h:8080/sitemap.xml", "http://h:8080/x", 1 },
        { "http://h/sitemap.xml", "http://h.evil/", 0 },
        { "http://h/s.php?x=/a/", "http://h/q", 1 },
        { "http://h/sitemap.xml", "/relative", 0 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (sitemap_loc_in_scope(t[i].sm, strlen(t[i].sm), t[i].url, strlen(t[i].url)) != t[i].in)
            fail_msg("%s lists %s: want %d", t[i].sm, t[i].url, t[i].in);
}

/* ---- out of memory ----------------------------------------------------- */

/* Collects into a fixed buffer: no allocation of its own to fail. */
typedef struct fixed {
    char s[256];
    size_t n;
} fixed;

static void collect_fixed(void *ud, const sitemap_entry *e)
{
    fixed *f = ud;
    int k = e->has_lastmod ? snprintf(f->s + f->n, sizeof f->s - f->n, "U %s %lld\n", e->loc,
                                      (long long)e->lastmod_ms)
                           : snprintf(f->s + f->n, sizeof f->s - f->n, "U %s\n", e->loc);
    assert_true(k > 0 && (size_t)k < sizeof f->s - f->n);
    f->n += (size_t)k;
}

static void out_of_memory_any_allocation(void **s)
{
    (void)s;
    const char *d = URLSET("<url><loc>http://a/1</loc><lastmod>2001-01-01</lastmod></url>"
                           "<url><loc>http://a/2</loc></url>");
    bool finished_clean = false;
    for (long n = 1; n < 20 && !finished_clean; n++) {
        fixed out = { .n = 0 };
        cr_alloc_fail_after(n);
        sitemap_parser *p = sitemap_new(NULL, collect_fixed, &out);
        if (p == NULL) {
            cr_alloc_fail_after(0);
            assert_true(cr_alloc_failures() >= 0);
            continue;
        }
        int rc = sitemap_feed(p, d, strlen(d));
        if (rc == 0)
            rc = sitemap_finish(p);
        long fails = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (rc == 0) {
            /* no allocation of ours failed while parsing */
            assert_string_equal(out.s, "U http://a/1 978307200000\nU http://a/2\n");
            finished_clean = true;
        } else {
            assert_int_equal(rc, -SITEMAP_ERR_NOMEM);
            assert_true(fails > 0);
        }
        sitemap_free(p);
    }
    assert_true(finished_clean);
}

int main(void)
{
    xmlInitParser();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(urlset_entries_in_order),
        cmocka_unit_test(loc_trimmed_and_decoded),
        cmocka_unit_test(index_children),
        cmocka_unit_test(prefixed_namespace_and_extensions),
        cmocka_unit_test(first_loc_wins_and_missing_loc_counted),
        cmocka_unit_test(wrong_entries_counted),
        cmocka_unit_test(lastmod_forms),
        cmocka_unit_test(datetime_table),
        cmocka_unit_test(bad_lastmod_counted_entry_kept),
        cmocka_unit_test(any_chunking_same_entries),
        cmocka_unit_test(reset_reuses_parser),
        cmocka_unit_test(max_urls_option),
        cmocka_unit_test(default_limit_is_50000_urls),
        cmocka_unit_test(max_bytes_cuts_plain),
        cmocka_unit_test(gzip_bomb_cut_at_default_limit),
        cmocka_unit_test(loc_length_limit),
        cmocka_unit_test(wrong_root_is_an_error),
        cmocka_unit_test(malformed_xml_has_line_and_column),
        cmocka_unit_test(truncated_document_is_an_error),
        cmocka_unit_test(empty_and_garbage),
        cmocka_unit_test(doctype_refused_no_entity_expansion),
        cmocka_unit_test(deep_nesting_stops),
        cmocka_unit_test(corrupt_gzip),
        cmocka_unit_test(loc_scope_rule),
        cmocka_unit_test(out_of_memory_any_allocation),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    xmlCleanupParser();
    return rc;
}
