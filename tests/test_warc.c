/* tests/test_warc: storage/warc (the WARC/1.1 writer) and storage/cdxj.
 *
 * Each case writes into its own temp folder, then reads the files back
 * with a small reader of its own (zlib inflating one gzip member at a time,
 * digests recomputed with libcrypto): every record is one member, the
 * digests and lengths hold, ids are unique, index lines land on member
 * starts. Crashes are made by a child process that writes and _exits
 * without closing. The last case hands the files to warcio, a parser we
 * did not write (tests/warc/check.sh), and asserts its counts.
 *
 * Why one file of about 1,700 lines: one test binary per module (STYLE.md);
 * the writing and the recovery cases (warc.c, warc_recover.c) share the
 * record reader and the crash-child helpers at the top. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "storage/cdxj.h"
#include "storage/warc.h"
#include "tests/support/proc.h"

#define REQ "GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: crawld-test\r\nAccept: */*\r\n\r\n"
#define HDR_HTML "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 11\r\n\r\n"

/* ---- helpers ------------------------------------------------------------ */

static void must(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "test setup failed: %s (%s)\n", what, strerror(errno));
        abort();
    }
}

static char *tmpdir_new(void)
{
    char *d = strdup("/tmp/crawld-warc-XXXXXX");
    must(d && mkdtemp(d) != NULL, "mkdtemp");
    return d;
}

static void tmpdir_free(char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

/* Sorted names in dir ending with suffix; returns the count. */
static int list_files(const char *dir, const char *suffix, char names[][256], int max)
{
    DIR *d = opendir(dir);
    must(d != NULL, "opendir");
    int n = 0;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0 && n < max)
            snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

static void path_in(char *out, size_t len, const char *dir, const char *name)
{
    int n = snprintf(out, len, "%s/%s", dir, name);
    must(n > 0 && (size_t)n < len, "path fits");
}

static uint64_t file_size(const char *path)
{
    struct stat sb;
    must(stat(path, &sb) == 0, "stat");
    return (uint64_t)sb.st_size;
}

static void read_all(const char *path, cr_buf *b)
{
    FILE *f = fopen(path, "rb");
    must(f != NULL, "fopen");
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        must(cr_buf_append(b, tmp, n) == 0, "append");
    fclose(f);
}

static warc_writer *open_w(const char *dir, uint64_t max, bool revisits)
{
    warc_opts o = {.dir = dir, .prefix = "test", .max_file_bytes = max, .revisits = revisits,
                   .info = "operator: test suite\nrobots: obey\n"};
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        fprintf(stderr, "warc_open: %s\n", err);
    assert_non_null(w);
    return w;
}

static warc_fetch mk(const char *uri, const char *hdr, const void *payload, size_t len)
{
    warc_fetch f = {
        .uri = uri, .ip = "127.0.0.1", .date_ms = 1700000000123,
        .request = REQ, .request_len = strlen(REQ),
        .headers = hdr, .headers_len = strlen(hdr),
        .payload = payload, .payload_len = len,
    };
    return f;
}

static void b32(const unsigned char d[20], char out[38])
{
    warc_digest_text(d, out);
}

/* sha1 of the concatenation of up to two pieces, with libcrypto. */
static void sha1_raw2(const void *a, size_t an, const void *b, size_t bn, unsigned char d[20])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int len = 0;
    must(c != NULL && EVP_DigestInit_ex(c, EVP_sha1(), NULL) == 1 &&
             EVP_DigestUpdate(c, a, an) == 1 && EVP_DigestUpdate(c, b, bn) == 1 &&
             EVP_DigestFinal_ex(c, d, &len) == 1 && len == 20,
         "sha1");
    EVP_MD_CTX_free(c);
}

static void sha1_text(const void *p, size_t n, char out[38])
{
    unsigned char d[20];
    sha1_raw2(p, n, "", 0, d);
    b32(d, out);
}

static int num_at(const char *s)
{
    return (int)strtol(s, NULL, 10);
}

/* One record read back: the inflated member and where its parts are. */
typedef struct rrec {
    cr_buf plain;
    uint64_t member_len;       /* compressed bytes */
    const char *hdr;           /* WARC header lines */
    size_t hdr_len;
    const char *block;
    size_t block_len;
} rrec;

/* Inflates the one gzip member at off; 0, or -1 when none is there. */
static int member_at(const char *path, uint64_t off, rrec *r)
{
    cr_buf file;
    cr_buf_init(&file, 0);
    read_all(path, &file);
    cr_buf_init(&r->plain, 0);
    if (off >= file.len) {
        cr_buf_release(&file);
        return -1;
    }
    z_stream z;
    memset(&z, 0, sizeof z);
    must(inflateInit2(&z, 16 + 15) == Z_OK, "inflateInit2");
    z.next_in = (unsigned char *)file.data + off;
    z.avail_in = (uInt)(file.len - off);
    unsigned char out[65536];
    int zr;
    do {
        z.next_out = out;
        z.avail_out = sizeof out;
        zr = inflate(&z, Z_NO_FLUSH);
        must(cr_buf_append(&r->plain, out, sizeof out - z.avail_out) == 0, "append");
    } while (zr == Z_OK);
    r->member_len = (uint64_t)(file.len - off) - z.avail_in;
    inflateEnd(&z);
    cr_buf_release(&file);
    if (zr != Z_STREAM_END)
        return -1;
    const char *end = strstr(r->plain.data, "\r\n\r\n");
    if (end == NULL)
        return -1;
    r->hdr = r->plain.data;
    r->hdr_len = (size_t)(end - r->plain.data) + 2;
    r->block = end + 4;
    r->block_len = r->plain.len - (size_t)(r->block - r->plain.data);
    /* The member ends with the block and CRLF CRLF. */
    if (r->block_len < 4 || memcmp(r->block + r->block_len - 4, "\r\n\r\n", 4) != 0)
        return -1;
    r->block_len -= 4;
    return 0;
}

static void rrec_free(rrec *r)
{
    cr_buf_release(&r->plain);
}

/* The value of WARC header name in r, copied to out ("" when absent). */
static const char *hget(const rrec *r, const char *name, char *out, size_t len)
{
    size_t nl = strlen(name);
    const char *p = r->hdr, *end = r->hdr + r->hdr_len;
    out[0] = '\0';
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            break;
        if ((size_t)(eol - p) > nl + 2 && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            size_t vl = (size_t)(eol - v);
            if (vl && v[vl - 1] == '\r')
                vl--;
            snprintf(out, len, "%.*s", (int)vl, v);
            return out;
        }
        p = eol + 1;
    }
    return out;
}

/* Where a record's HTTP header block ends inside its block (0: none). */
static size_t http_end(const rrec *r)
{
    for (size_t i = 0; i + 4 <= r->block_len; i++)
        if (memcmp(r->block + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    return 0;
}

/* What verify_file found. */
typedef struct vstats {
    int records, warcinfo, request, response, revisit;
    char ids[4096][48];
    int nids;
} vstats;

/* Walks every member of a file, checking what each record claims. */
static void verify_file(const char *dir, const char *name, vstats *vs)
{
    char path[1024], v[512], want[64], info_id[64] = "";
    path_in(path, sizeof path, dir, name);
    uint64_t size = file_size(path), off = 0;
    int n = 0;
    while (off < size) {
        rrec r;
        assert_int_equal(member_at(path, off, &r), 0);
        assert_memory_equal(r.plain.data, "WARC/1.1\r\n", 10);
        hget(&r, "WARC-Type", v, sizeof v);
        char type[32];
        must(snprintf(type, sizeof type, "%s", v) < (int)sizeof type, "type fits");
        if (n == 0) {
            assert_string_equal(type, "warcinfo");
            assert_string_equal(hget(&r, "WARC-Filename", v, sizeof v), name);
            hget(&r, "WARC-Record-ID", info_id, sizeof info_id);
            vs->warcinfo++;
        } else {
            assert_string_equal(hget(&r, "WARC-Warcinfo-ID", v, sizeof v), info_id);
        }
        /* Content-Length and the block digest. */
        assert_int_equal(strtoull(hget(&r, "Content-Length", v, sizeof v), NULL, 10), r.block_len);
        sha1_text(r.block, r.block_len, want);
        assert_string_equal(hget(&r, "WARC-Block-Digest", v, sizeof v), want);
        /* The payload digest: the bytes after the HTTP headers. */
        if (strcmp(type, "response") == 0 || strcmp(type, "request") == 0) {
            size_t he = http_end(&r);
            assert_true(he > 0);
            sha1_text(r.block + he, r.block_len - he, want);
            assert_string_equal(hget(&r, "WARC-Payload-Digest", v, sizeof v), want);
            assert_string_equal(hget(&r, "Content-Type", v, sizeof v),
                                strcmp(type, "response") == 0 ? "application/http;msgtype=response"
                                                               : "application/http;msgtype=request");
        }
        if (strcmp(type, "revisit") == 0) {
            assert_int_equal(http_end(&r), r.block_len); /* headers only */
            assert_string_equal(hget(&r, "WARC-Profile", v, sizeof v),
                                "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest");
        }
        /* Ids: <urn:uuid:...> version 4, unique over all files seen. */
        hget(&r, "WARC-Record-ID", v, sizeof v);
        assert_int_equal(strlen(v), 47);
        assert_memory_equal(v, "<urn:uuid:", 10);
        assert_int_equal(v[10 + 14], '4');
        assert_non_null(strchr("89ab", v[10 + 19]));
        for (int i = 0; i < vs->nids; i++)
            assert_string_not_equal(vs->ids[i], v);
        if (vs->nids < 4096)
            snprintf(vs->ids[vs->nids++], 48, "%s", v);
        vs->records++;
        if (strcmp(type, "request") == 0)
            vs->request++;
        else if (strcmp(type, "response") == 0)
            vs->response++;
        else if (strcmp(type, "revisit") == 0)
            vs->revisit++;
        off += r.member_len;
        n++;
        rrec_free(&r);
    }
    assert_int_equal(off, size);
}

/* Checks every line of the file's index lands on its record's member. */
static int verify_index(const char *dir, const char *name)
{
    char path[1024], ipath[1024], v[512];
    path_in(path, sizeof path, dir, name);
    snprintf(ipath, sizeof ipath, "%.*s.cdxj", (int)strlen(path) - 8, path);
    cr_buf b;
    cr_buf_init(&b, 0);
    read_all(ipath, &b);
    int lines = 0;
    const char *p = b.data, *prev = NULL;
    size_t prev_len = 0;
    while (p && p < b.data + b.len) {
        const char *nl = memchr(p, '\n', (size_t)(b.data + b.len - p));
        assert_non_null(nl);
        size_t len = (size_t)(nl - p);
        if (prev) { /* sorted bytewise */
            int c = memcmp(prev, p, prev_len < len ? prev_len : len);
            assert_true(c < 0 || (c == 0 && prev_len <= len));
        }
        uint64_t off, mlen;
        assert_int_equal(cdxj_parse_span(p, len, &off, &mlen), 0);
        json_error_t je;
        const char *brace = memchr(p, '{', len);
        assert_non_null(brace);
        json_t *j = json_loadb(brace, (size_t)(nl - brace), 0, &je);
        assert_non_null(j);
        rrec r;
        assert_int_equal(member_at(path, off, &r), 0);
        assert_int_equal(r.member_len, mlen);
        hget(&r, "WARC-Type", v, sizeof v);
        assert_true(strcmp(v, "response") == 0 || strcmp(v, "revisit") == 0);
        assert_string_equal(hget(&r, "WARC-Target-URI", v, sizeof v),
                            json_string_value(json_object_get(j, "url")));
        assert_string_equal(json_string_value(json_object_get(j, "filename")), name);
        char d[64];
        snprintf(d, sizeof d, "sha1:%s", json_string_value(json_object_get(j, "digest")));
        assert_string_equal(hget(&r, "WARC-Payload-Digest", v, sizeof v), d);
        /* The key is the SURT of the URL, the timestamp the date's digits. */
        cr_buf key;
        cr_buf_init(&key, 0);
        const char *u = json_string_value(json_object_get(j, "url"));
        assert_int_equal(cdxj_surt(u, strlen(u), &key), 0);
        assert_true(len > key.len && memcmp(p, key.data, key.len) == 0 && p[key.len] == ' ');
        hget(&r, "WARC-Date", v, sizeof v);
        const char ts[15] = {v[0], v[1], v[2], v[3], v[5], v[6], v[8], v[9], v[11], v[12],
                             v[14], v[15], v[17], v[18], 0};
        assert_memory_equal(p + key.len + 1, ts, 14);
        cr_buf_release(&key);
        rrec_free(&r);
        json_decref(j);
        prev = p;
        prev_len = len;
        p = nl + 1;
        lines++;
    }
    cr_buf_release(&b);
    return lines;
}

/* Reads back the response/revisit at a result. */
static void record_of(const char *dir, const warc_result *res, rrec *r)
{
    char path[1024];
    path_in(path, sizeof path, dir, res->file);
    assert_int_equal(member_at(path, res->offset, r), 0);
    assert_int_equal(r->member_len, res->length);
}

/* ---- pure pieces -------------------------------------------------------- */

static void test_digest_text(void **state)
{
    (void)state;
    char out[38];
    sha1_text("", 0, out);
    assert_string_equal(out, "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    sha1_text("abc", 3, out);
    assert_string_equal(out, "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
    sha1_text("hello world", 11, out);
    assert_string_equal(out, "sha1:FKXGYNOJJ7H3IFO35FPUBC445EPOQRXN");
}

static void test_date(void **state)
{
    (void)state;
    char d[25];
    assert_int_equal(warc_date(0, d), 0);
    assert_string_equal(d, "1970-01-01T00:00:00.000Z");
    assert_int_equal(warc_date(1700000000123, d), 0);
    assert_string_equal(d, "2023-11-14T22:13:20.123Z");
    assert_int_equal(warc_date(-1, d), -EINVAL);
    assert_int_equal(warc_date(INT64_C(253402300800000), d), -EINVAL); /* year 10000 */
}

static void surt_is(const char *url, const char *want)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    assert_int_equal(cdxj_surt(url, strlen(url), &b), 0);
    assert_string_equal(b.data, want);
    cr_buf_release(&b);
}

/* Expected keys are what warcio's getSurt gives for the same URLs. */
static void test_surt(void **state)
{
    (void)state;
    surt_is("https://www.Example.com/a?b=1&a=2", "com,example)/a?a=2&b=1");
    surt_is("http://example.com", "com,example)/");
    surt_is("http://example.com:8080/x/Y?z&a=1#frag", "com,example:8080)/x/y?a=1&z");
    surt_is("https://www2.example.co.uk:443/", "uk,co,example)/");
    surt_is("http://127.0.0.1:8000/robots.txt", "1,0,0,127:8000)/robots.txt");
    surt_is("http://example.com/?", "com,example)/");
    surt_is("http://[::1]:81/x", "[::1]:81)/x");
    surt_is("http://example.com./a", ",com,example)/a");
    surt_is("ftp://x/y", "ftp://x/y");
    surt_is("http://example.com/a?c=3&b=2&a=1&b=1", "com,example)/a?a=1&b=1&b=2&c=3");
    /* Ours also drops "www" after user info (warcio keeps it there). */
    surt_is("http://user:pw@www.example.com/p", "com,example)/p");
}

static void test_cdxj_line(void **state)
{
    (void)state;
    cr_buf b;
    cr_buf_init(&b, 0);
    const char *url = "http://example.com/a\"b\\c\x01\xff\xc3\xa9";
    cdxj_entry e = {.url = url, .url_len = strlen(url), .mime = "text/html", .mime_len = 9,
                    .status = 200, .digest = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
                    .timestamp = "20231114221320", .length = 123, .offset = 4567,
                    .filename = "x-1.warc.gz"};
    assert_int_equal(cdxj_line(&b, &e), 0);
    assert_string_equal(b.data,
                        "com,example)/a\"b\\c\x01\xff\xc3\xa9 20231114221320 "
                        "{\"url\":\"http://example.com/a\\\"b\\\\c\\u0001\\ufffd\xc3\xa9\","
                        "\"mime\":\"text/html\",\"status\":\"200\","
                        "\"digest\":\"3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ\",\"length\":\"123\","
                        "\"offset\":\"4567\",\"filename\":\"x-1.warc.gz\"}\n");
    uint64_t off = 0, len = 0;
    assert_int_equal(cdxj_parse_span(b.data, b.len - 1, &off, &len), 0);
    assert_int_equal(off, 4567);
    assert_int_equal(len, 123);
    /* The JSON part is valid JSON. */
    json_error_t je;
    json_t *j = json_loads(strchr(b.data, '{'), JSON_DISABLE_EOF_CHECK, &je);
    assert_non_null(j);
    json_decref(j);
    assert_int_equal(cdxj_parse_span("a b {}", 6, &off, &len), -EINVAL);
    const char *mt;
    assert_int_equal(cdxj_media_type(" text/html ; charset=x", 22, &mt), 9);
    assert_memory_equal(mt, "text/html", 9);
    cr_buf_release(&b);
}

static void fix_is(const char *in, uint64_t plen, int want_rc, const char *want, bool want_changed)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    bool changed = !want_changed;
    assert_int_equal(warc_http_fix(in, strlen(in), plen, &b, &changed), want_rc);
    if (want_rc == 0) {
        assert_string_equal(b.data, want);
        assert_int_equal(changed, want_changed);
    }
    cr_buf_release(&b);
}

static void test_http_fix(void **state)
{
    (void)state;
    fix_is(HDR_HTML, 11, 0, HDR_HTML, false);
    fix_is("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n", 5, 0,
           "HTTP/1.1 200 OK\r\nX-Crawld-Transfer-Encoding: chunked\r\nContent-Type: text/plain\r\n"
           "Content-Length: 5\r\n\r\n",
           true);
    /* Both sent: the Content-Length is not the body's; both kept renamed. */
    fix_is("HTTP/1.1 200 OK\r\ncontent-length: 99\r\ntransfer-encoding: gzip, chunked\r\n\r\n", 7, 0,
           "HTTP/1.1 200 OK\r\nX-Crawld-content-length: 99\r\n"
           "X-Crawld-transfer-encoding: gzip, chunked\r\nContent-Length: 7\r\n\r\n",
           true);
    /* Bare LF line ends become CRLF. */
    fix_is("HTTP/1.0 200 OK\nA: b\n\n", 0, 0, "HTTP/1.0 200 OK\r\nA: b\r\n\r\n", true);
    /* A header merely containing the word is left alone. */
    fix_is("HTTP/1.1 200 OK\r\nX-Transfer-Encoding: chunked\r\n\r\n", 0, 0,
           "HTTP/1.1 200 OK\r\nX-Transfer-Encoding: chunked\r\n\r\n", false);
    fix_is("HTTP/1.1 200 OK\r\nA: b\r\n", 0, -EINVAL, NULL, false);         /* no empty line */
    fix_is("HTTP/1.1 200 OK\r\n\r\nbody", 0, -EINVAL, NULL, false);         /* bytes after it */
    fix_is("GET / HTTP/1.1\r\n\r\n", 0, -EINVAL, NULL, false);              /* not a response */
    fix_is("HTTP/1.1 200 OK\r\n\r\n\r\n", 0, -EINVAL, NULL, false);         /* two empty lines */
    fix_is("HTTP/2 204\r\n\r\n", 0, 0, "HTTP/2 204\r\n\r\n", false);
}

/* ---- the writer --------------------------------------------------------- */

static void test_empty_body(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    const char *hdr = "HTTP/1.1 204 No Content\r\nServer: t\r\n\r\n";
    warc_fetch f = mk("http://example.com/empty", hdr, NULL, 0);
    warc_result res;
    assert_int_equal(warc_write_fetch(w, &f, &res), 0);
    assert_false(res.was_revisit);
    /* A second empty body is not a revisit: nothing to save. */
    f.uri = "http://example.com/empty2";
    warc_result res2;
    assert_int_equal(warc_write_fetch(w, &f, &res2), 0);
    assert_false(res2.was_revisit);
    rrec r;
    char v[256];
    record_of(dir, &res, &r);
    assert_int_equal(r.block_len, strlen(hdr));
    assert_memory_equal(r.block, hdr, strlen(hdr));
    assert_string_equal(hget(&r, "WARC-Payload-Digest", v, sizeof v),
                        "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    assert_string_equal(hget(&r, "WARC-Target-URI", v, sizeof v), "http://example.com/empty");
    assert_string_equal(hget(&r, "WARC-IP-Address", v, sizeof v), "127.0.0.1");
    assert_string_equal(hget(&r, "WARC-Date", v, sizeof v), "2023-11-14T22:13:20.123Z");
    rrec_free(&r);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.responses, 2);
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.revisits, 0);
    assert_int_equal(st.records, 5);
    assert_int_equal(st.files, 1);
    assert_int_equal(warc_close(w), 0);
    char names[4][256];
    assert_int_equal(list_files(dir, ".warc.gz", names, 4), 1);
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    assert_int_equal(vs->records, 5);
    assert_int_equal(verify_index(dir, names[0]), 2);
    free(vs);
    tmpdir_free(dir);
}

static void test_huge_headers(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    cr_buf h;
    cr_buf_init(&h, 0);
    cr_buf_puts(&h, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
    for (int i = 0; h.len < (1u << 20); i++)
        cr_buf_printf(&h, "X-Pad-%d: %0100d\r\n", i, i);
    cr_buf_puts(&h, "\r\n");
    warc_fetch f = mk("http://example.com/huge", h.data, "body", 4);
    f.headers_len = h.len;
    warc_result res;
    assert_int_equal(warc_write_fetch(w, &f, &res), 0);
    rrec r;
    record_of(dir, &res, &r);
    assert_int_equal(r.block_len, h.len + 4);
    assert_memory_equal(r.block, h.data, h.len);
    assert_memory_equal(r.block + h.len, "body", 4);
    rrec_free(&r);
    /* Past the cap: refused, nothing written. */
    warc_stats before, after;
    warc_stats_get(w, &before);
    cr_buf big;
    cr_buf_init(&big, 0);
    cr_buf_puts(&big, "HTTP/1.1 200 OK\r\n");
    while (big.len <= WARC_MAX_HEADER_BYTES)
        cr_buf_printf(&big, "X-Pad: %01000d\r\n", 0);
    cr_buf_puts(&big, "\r\n");
    f.headers = big.data;
    f.headers_len = big.len;
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    warc_stats_get(w, &after);
    assert_int_equal(after.bytes_written, before.bytes_written);
    cr_buf_release(&big);
    assert_int_equal(warc_close(w), 0);
    char names[4][256];
    assert_int_equal(list_files(dir, ".warc.gz", names, 4), 1);
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    free(vs);
    cr_buf_release(&h);
    tmpdir_free(dir);
}

static void test_binary_payload(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    unsigned char bin[70000];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (unsigned char)((i * 7919u) >> 3);
    memset(bin + 100, 0, 500); /* a run of NULs */
    const char *hdr = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                      "Content-Encoding: gzip\r\n\r\n";
    warc_fetch f = mk("http://example.com/bin", hdr, bin, sizeof bin);
    warc_result res;
    assert_int_equal(warc_write_fetch(w, &f, &res), 0);
    rrec r;
    char v[256], want[38];
    record_of(dir, &res, &r);
    assert_int_equal(r.block_len, strlen(hdr) + sizeof bin);
    assert_memory_equal(r.block + strlen(hdr), bin, sizeof bin);
    sha1_text(bin, sizeof bin, want);
    assert_string_equal(hget(&r, "WARC-Payload-Digest", v, sizeof v), want);
    /* The block digest covers headers and payload. */
    unsigned char d[20];
    sha1_raw2(hdr, strlen(hdr), bin, sizeof bin, d);
    b32(d, want);
    assert_string_equal(hget(&r, "WARC-Block-Digest", v, sizeof v), want);
    rrec_free(&r);
    assert_int_equal(warc_close(w), 0);
    tmpdir_free(dir);
}

static void test_chunked(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    const char *hdr = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    /* A payload that itself looks like chunk framing: a reader that still
     * saw "chunked" would decode it to "hello". */
    const char *body = "5\r\nhello\r\n0\r\n\r\n";
    warc_fetch f = mk("http://example.com/chunked", hdr, body, strlen(body));
    warc_result res;
    assert_int_equal(warc_write_fetch(w, &f, &res), 0);
    rrec r;
    record_of(dir, &res, &r);
    const char *stored = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                         "X-Crawld-Transfer-Encoding: chunked\r\nContent-Length: 15\r\n\r\n";
    assert_int_equal(r.block_len, strlen(stored) + strlen(body));
    assert_memory_equal(r.block, stored, strlen(stored));
    assert_memory_equal(r.block + strlen(stored), body, strlen(body));
    char v[256], want[38];
    sha1_text(r.block, r.block_len, want);
    assert_string_equal(hget(&r, "WARC-Block-Digest", v, sizeof v), want);
    sha1_text(body, strlen(body), want);
    assert_string_equal(hget(&r, "WARC-Payload-Digest", v, sizeof v), want);
    rrec_free(&r);
    assert_int_equal(warc_close(w), 0);
    tmpdir_free(dir);
}

static void test_revisit(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    const char *body = "same bytes on two pages";
    warc_fetch f = mk("http://example.com/a", HDR_HTML, body, strlen(body));
    warc_result r1, r2, r3;
    assert_int_equal(warc_write_fetch(w, &f, &r1), 0);
    f.uri = "http://example.com/b";
    f.date_ms += 5000;
    const char *hdr2 = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Other: 1\r\n\r\n";
    f.headers = hdr2;
    f.headers_len = strlen(hdr2);
    assert_int_equal(warc_write_fetch(w, &f, &r2), 0);
    assert_false(r1.was_revisit);
    assert_true(r2.was_revisit);
    /* The same URL again is a revisit too. */
    f.uri = "http://example.com/a";
    assert_int_equal(warc_write_fetch(w, &f, &r3), 0);
    assert_true(r3.was_revisit);
    rrec a, b;
    char v[256], v2[256], want[38];
    record_of(dir, &r1, &a);
    record_of(dir, &r2, &b);
    assert_string_equal(hget(&b, "WARC-Type", v, sizeof v), "revisit");
    assert_string_equal(hget(&b, "WARC-Refers-To-Target-URI", v, sizeof v), "http://example.com/a");
    assert_string_equal(hget(&b, "WARC-Refers-To-Date", v, sizeof v), hget(&a, "WARC-Date", v2, sizeof v2));
    assert_string_equal(hget(&b, "WARC-Refers-To", v, sizeof v), hget(&a, "WARC-Record-ID", v2, sizeof v2));
    assert_string_equal(hget(&b, "WARC-Payload-Digest", v, sizeof v),
                        hget(&a, "WARC-Payload-Digest", v2, sizeof v2));
    assert_string_equal(hget(&b, "WARC-Date", v, sizeof v), "2023-11-14T22:13:25.123Z");
    /* The revisit's block is its own response headers, nothing more. */
    assert_int_equal(b.block_len, strlen(hdr2));
    assert_memory_equal(b.block, hdr2, strlen(hdr2));
    sha1_text(hdr2, strlen(hdr2), want);
    assert_string_equal(hget(&b, "WARC-Block-Digest", v, sizeof v), want);
    rrec_free(&a);
    rrec_free(&b);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.responses, 1);
    assert_int_equal(st.revisits, 2);
    assert_int_equal(st.revisit_bytes_saved, 2 * strlen(body));
    assert_int_equal(st.dedup_entries, 1);
    assert_true(st.dedup_bytes > 0);
    /* A truncated body is never a revisit (nor remembered). */
    f.uri = "http://example.com/c";
    f.truncated = true;
    assert_int_equal(warc_write_fetch(w, &f, &r3), 0);
    assert_false(r3.was_revisit);
    record_of(dir, &r3, &a);
    assert_string_equal(hget(&a, "WARC-Truncated", v, sizeof v), "length");
    rrec_free(&a);
    assert_int_equal(warc_close(w), 0);
    char names[4][256];
    assert_int_equal(list_files(dir, ".warc.gz", names, 4), 1);
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    assert_int_equal(vs->revisit, 2);
    assert_int_equal(vs->response, 2);
    assert_int_equal(verify_index(dir, names[0]), 4);
    free(vs);
    /* In the index a revisit's mime is warc/revisit. */
    char ipath[1024];
    snprintf(ipath, sizeof ipath, "%s/%.*s.cdxj", dir, (int)strlen(names[0]) - 8, names[0]);
    cr_buf idx;
    cr_buf_init(&idx, 0);
    read_all(ipath, &idx);
    assert_non_null(strstr(idx.data, "\"mime\":\"warc/revisit\""));
    assert_non_null(strstr(idx.data, "\"mime\":\"text/html\""));
    cr_buf_release(&idx);
    tmpdir_free(dir);
}

static void test_revisits_off(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, false);
    warc_fetch f = mk("http://example.com/a", HDR_HTML, "hello world", 11);
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    f.uri = "http://example.com/b";
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_false(r.was_revisit);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.responses, 2);
    assert_int_equal(st.revisits, 0);
    assert_int_equal(st.dedup_entries, 0);
    assert_int_equal(warc_close(w), 0);
    tmpdir_free(dir);
}

static int collect(void *ctx, const warc_dedup_entry *e)
{
    warc_dedup_entry *out = ctx;
    *out = *e;
    out->uri = strdup(e->uri);
    return 0;
}

static void test_dedup_persist(void **state)
{
    (void)state;
    char *d1 = tmpdir_new(), *d2 = tmpdir_new();
    warc_writer *w = open_w(d1, 0, true);
    warc_fetch f = mk("http://example.com/orig", HDR_HTML, "hello world", 11);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    warc_dedup_entry e;
    memset(&e, 0, sizeof e);
    assert_int_equal(warc_dedup_each(w, collect, &e), 0);
    assert_string_equal(e.uri, "http://example.com/orig");
    assert_int_equal(e.date_ms, f.date_ms);
    unsigned char d[20];
    sha1_raw2("hello world", 11, "", 0, d);
    assert_memory_equal(e.digest, d, 20);
    assert_int_equal(warc_close(w), 0);

    /* A later writer told about it writes a revisit pointing back. */
    w = open_w(d2, 0, true);
    assert_int_equal(warc_dedup_add(w, &e), 0);
    assert_int_equal(warc_dedup_add(w, &e), -EEXIST);
    f.uri = "http://example.com/copy";
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_true(r.was_revisit);
    rrec rr;
    char v[256];
    record_of(d2, &r, &rr);
    assert_string_equal(hget(&rr, "WARC-Refers-To-Target-URI", v, sizeof v), "http://example.com/orig");
    assert_string_equal(hget(&rr, "WARC-Refers-To-Date", v, sizeof v), "2023-11-14T22:13:20.123Z");
    rrec_free(&rr);
    assert_int_equal(warc_close(w), 0);
    free((char *)e.uri);

    /* The map's cap: past it, payloads are archived but not remembered. */
    warc_opts o = {.dir = d2, .prefix = "cap", .revisits = true, .dedup_max_entries = 2};
    char err[256];
    w = warc_open(&o, err, sizeof err);
    assert_non_null(w);
    const char *bodies[3] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        f = mk("http://example.com/x", HDR_HTML, bodies[i], strlen(bodies[i]));
        assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    }
    f = mk("http://example.com/y", HDR_HTML, "three", 5);
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_false(r.was_revisit);
    f = mk("http://example.com/y", HDR_HTML, "one", 3);
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_true(r.was_revisit);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.dedup_entries, 2);
    assert_int_equal(st.dedup_full, 2);
    assert_int_equal(warc_close(w), 0);
    tmpdir_free(d1);
    tmpdir_free(d2);
}

/* Incompressible bytes, so file sizes are predictable. */
static void noise(unsigned char *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

static void test_rotation(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    const uint64_t max = 6000;
    warc_writer *w = open_w(dir, max, true);
    unsigned char body[1500];
    warc_result res[30];
    for (int i = 0; i < 30; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://example.com/p%d", i);
        noise(body, sizeof body, (unsigned)i + 1);
        warc_fetch f = mk(uri, HDR_HTML, body, sizeof body);
        assert_int_equal(warc_write_fetch(w, &f, &res[i]), 0);
    }
    /* One fetch larger than a file: a file of its own. */
    static unsigned char big[20000];
    noise(big, sizeof big, 99);
    warc_fetch f = mk("http://example.com/big", HDR_HTML, big, sizeof big);
    warc_result rbig;
    assert_int_equal(warc_write_fetch(w, &f, &rbig), 0);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(warc_close(w), 0);

    char names[64][256];
    int n = list_files(dir, ".warc.gz", names, 64);
    assert_true(n >= 5);
    assert_int_equal((uint64_t)n, st.files);
    vstats *vs = calloc(1, sizeof *vs);
    int lines = 0;
    for (int i = 0; i < n; i++) {
        char path[1024];
        path_in(path, sizeof path, dir, names[i]);
        uint64_t size = file_size(path);
        if (strcmp(names[i], rbig.file) != 0)
            assert_true(size <= max);
        /* Names: test-YYYYMMDDhhmmss-NNNNN.warc.gz, serials in order. */
        assert_int_equal(strlen(names[i]), strlen("test-20240101000000-00000.warc.gz"));
        assert_int_equal(num_at(names[i] + 20), i);
        verify_file(dir, names[i], vs);
        lines += verify_index(dir, names[i]);
    }
    assert_int_equal(vs->warcinfo, n);
    assert_int_equal(vs->response, 31);
    assert_int_equal(vs->request, 31);
    assert_int_equal(lines, 31);
    /* Request and response of each fetch share a file: the request is the
     * member right before the response. */
    for (int i = 0; i < 30; i++) {
        rrec r;
        char v[128], path[1024];
        path_in(path, sizeof path, dir, res[i].file);
        record_of(dir, &res[i], &r);
        hget(&r, "WARC-Concurrent-To", v, sizeof v);
        rrec_free(&r);
        /* walk to find the request whose member ends at res[i].offset */
        uint64_t off = 0;
        bool found = false;
        while (off < res[i].offset) {
            rrec q;
            char id[128];
            assert_int_equal(member_at(path, off, &q), 0);
            if (off + q.member_len == res[i].offset) {
                assert_string_equal(hget(&q, "WARC-Record-ID", id, sizeof id), v);
                found = true;
            }
            off += q.member_len;
            rrec_free(&q);
        }
        assert_true(found);
    }
    free(vs);
    tmpdir_free(dir);
}

/* Runs fn(dir) in a child that exits without closing anything: a crash. */
static void crash_after(const char *dir, void (*fn)(const char *dir))
{
    fflush(NULL);
    pid_t pid = fork();
    must(pid >= 0, "fork");
    if (pid == 0) {
        fn(dir);
        _exit(0);
    }
    int status;
    must(waitpid(pid, &status, 0) == pid, "waitpid");
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void write_five(const char *dir)
{
    warc_opts o = {.dir = dir, .prefix = "test", .revisits = true};
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        _exit(3);
    unsigned char body[3000];
    for (int i = 0; i < 5; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://example.com/crash%d", i);
        noise(body, sizeof body, (unsigned)i + 7);
        warc_fetch f = mk(uri, HDR_HTML, body, sizeof body);
        if (warc_write_fetch(w, &f, NULL) != 0)
            _exit(4);
    }
    _exit(0); /* no warc_close: the index stays in write order */
}

static void test_torn_record(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    crash_after(dir, write_five);
    char names[8][256], path[1024];
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 1);
    path_in(path, sizeof path, dir, names[0]);
    /* Find the start of the last fetch's response; tear it in the middle. */
    uint64_t size = file_size(path), off = 0, last_start = 0, prev_end = 0;
    int members = 0;
    while (off < size) {
        rrec r;
        assert_int_equal(member_at(path, off, &r), 0);
        prev_end = last_start;
        last_start = off;
        off += r.member_len;
        members++;
        rrec_free(&r);
    }
    assert_int_equal(members, 11);
    uint64_t cut_at = last_start + (size - last_start) / 2;
    must(truncate(path, (off_t)cut_at) == 0, "truncate");
    /* Reopen: the torn response and its request (prev_end..) are cut. */
    warc_writer *w = open_w(dir, 0, true);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(file_size(path), prev_end);
    assert_int_equal(st.recovered_bytes_cut, cut_at - prev_end);
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    assert_int_equal(vs->response, 4);
    assert_int_equal(verify_index(dir, names[0]), 4); /* and sorted now */
    /* The crawl goes on in a NEW file. */
    warc_fetch f = mk("http://example.com/after", HDR_HTML, "hello world", 11);
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_string_not_equal(r.file, names[0]);
    assert_int_equal(num_at(r.file + 20), 1); /* serial 00001 */
    assert_int_equal(file_size(path), prev_end);
    assert_int_equal(warc_close(w), 0);
    free(vs);
    tmpdir_free(dir);
}

static void test_unindexed_tail(void **state)
{
    (void)state;
    /* Whole records whose index line never made it (a crash between the
     * two writes): the fetch did not return success, so they go too. */
    char *dir = tmpdir_new();
    crash_after(dir, write_five);
    char names[8][256], path[1024], ipath[1024];
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 1);
    path_in(path, sizeof path, dir, names[0]);
    snprintf(ipath, sizeof ipath, "%.*s.cdxj", (int)strlen(path) - 8, path);
    cr_buf idx;
    cr_buf_init(&idx, 0);
    read_all(ipath, &idx);
    /* Drop the last line, and tear the one before (no LF). */
    char *last = idx.data + idx.len - 1;
    while (last > idx.data && last[-1] != '\n')
        last--;
    idx.len = (size_t)(last - idx.data) - 5;
    FILE *fp = fopen(ipath, "wb");
    must(fp && fwrite(idx.data, 1, idx.len, fp) == idx.len && fclose(fp) == 0, "rewrite index");
    cr_buf_release(&idx);
    uint64_t before = file_size(path);
    warc_writer *w = open_w(dir, 0, true);
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    assert_int_equal(vs->response, 3);
    assert_int_equal(verify_index(dir, names[0]), 3);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.recovered_bytes_cut, before - file_size(path));
    assert_int_equal(warc_close(w), 0);
    free(vs);
    tmpdir_free(dir);
}

static void write_nothing(const char *dir)
{
    /* A crash right after starting a file: warcinfo only, no index line. */
    warc_opts o = {.dir = dir, .prefix = "test"};
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        _exit(3);
    warc_fetch f = mk("http://example.com/x", HDR_HTML, "hello world", 11);
    f.uri = "bad uri"; /* refused: the file is started only by a good write */
    if (warc_write_fetch(w, &f, NULL) != -EINVAL)
        _exit(4);
    f.uri = "http://example.com/x";
    if (warc_write_fetch(w, &f, NULL) != 0)
        _exit(5);
    _exit(0);
}

static void test_crash_empty_file(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    crash_after(dir, write_nothing);
    char names[8][256], path[1024];
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 1);
    path_in(path, sizeof path, dir, names[0]);
    /* Tear inside the only fetch: nothing indexed is left, the file goes. */
    uint64_t size = file_size(path);
    must(truncate(path, (off_t)(size - 3)) == 0, "truncate");
    warc_writer *w = open_w(dir, 0, true);
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 0);
    assert_int_equal(list_files(dir, ".cdxj", names, 8), 0);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.recovered_bytes_cut, size - 3);
    warc_fetch f = mk("http://example.com/y", HDR_HTML, "hello world", 11);
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_int_equal(num_at(r.file + 20), 1); /* serials never reused */
    assert_int_equal(warc_close(w), 0);
    tmpdir_free(dir);
}

static void write_rotating(const char *dir)
{
    warc_opts o = {.dir = dir, .prefix = "test", .max_file_bytes = 8000};
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        _exit(3);
    unsigned char body[3000];
    for (int i = 0; i < 6; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://example.com/r%d", 9 - i); /* index out of order */
        noise(body, sizeof body, (unsigned)i + 70);
        warc_fetch f = mk(uri, HDR_HTML, body, sizeof body);
        if (warc_write_fetch(w, &f, NULL) != 0)
            _exit(4);
    }
    _exit(0);
}

static void test_crash_while_rotating(void **state)
{
    (void)state;
    /* A crash just as a new file was being started: the newest file is a
     * torn warcinfo; the file before it was the one in use. */
    char *dir = tmpdir_new();
    crash_after(dir, write_rotating);
    char names[16][256], path[1024], torn[1024];
    int n = list_files(dir, ".warc.gz", names, 16);
    assert_true(n >= 2);
    path_in(path, sizeof path, dir, names[n - 1]);
    uint64_t last_size = file_size(path);
    cr_buf b;
    cr_buf_init(&b, 0);
    read_all(path, &b);
    snprintf(torn, sizeof torn, "%s/test-20990101000000-%05d.warc.gz", dir, n);
    FILE *fp = fopen(torn, "wb");
    must(fp && fwrite(b.data, 1, 40, fp) == 40 && fclose(fp) == 0, "torn file");
    cr_buf_release(&b);
    warc_writer *w = open_w(dir, 8000, true);
    assert_int_equal(list_files(dir, ".warc.gz", names, 16), n); /* torn one gone */
    assert_int_equal(file_size(path), last_size);                /* last one whole */
    vstats *vs = calloc(1, sizeof *vs);
    int lines = 0;
    for (int i = 0; i < n; i++) {
        verify_file(dir, names[i], vs);
        lines += verify_index(dir, names[i]); /* all sorted, also the last */
    }
    assert_int_equal(vs->response, 6);
    assert_int_equal(lines, 6);
    warc_fetch f = mk("http://example.com/next", HDR_HTML, "hello world", 11);
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    assert_int_equal(num_at(r.file + 20), n + 1); /* after the torn one's serial */
    assert_int_equal(warc_close(w), 0);
    free(vs);
    tmpdir_free(dir);
}

static void test_clean_reopen(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    warc_fetch f = mk("http://example.com/a", HDR_HTML, "hello world", 11);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    assert_int_equal(warc_sync(w), 0);
    assert_int_equal(warc_close(w), 0);
    char names[8][256], path[1024];
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 1);
    path_in(path, sizeof path, dir, names[0]);
    uint64_t size = file_size(path);
    w = open_w(dir, 0, true);
    /* A second writer on the same prefix is refused. */
    warc_opts o = {.dir = dir, .prefix = "test"};
    char err[256];
    assert_null(warc_open(&o, err, sizeof err));
    assert_non_null(strstr(err, "in use"));
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.recovered_bytes_cut, 0);
    assert_int_equal(file_size(path), size);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    assert_int_equal(warc_close(w), 0);
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 2);
    tmpdir_free(dir);
}

static void test_bad_input(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 0, true);
    warc_fetch f = mk("http://example.com/a", HDR_HTML, "hello world", 11);
    f.uri = "http://example.com/a b";
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.uri = "http://example.com/a\r\nWARC-Type: x";
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.uri = "no-scheme";
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.uri = "http://example.com/a";
    f.headers = "HTTP/1.1 200 OK\r\nA: b\r\n";
    f.headers_len = strlen(f.headers);
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.headers = HDR_HTML;
    f.headers_len = strlen(HDR_HTML);
    f.request_len = 5; /* not through the empty line */
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.request_len = strlen(REQ);
    f.ip = "1.2.3.4\r\nX: y";
    assert_int_equal(warc_write_fetch(w, &f, NULL), -EINVAL);
    f.ip = NULL;
    f.request = NULL;
    f.request_len = 0; /* no request record: allowed */
    warc_result r;
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.records, 2);
    assert_int_equal(st.requests, 0);
    rrec rr;
    char v[64];
    record_of(dir, &r, &rr);
    assert_string_equal(hget(&rr, "WARC-IP-Address", v, sizeof v), "");
    assert_string_equal(hget(&rr, "WARC-Concurrent-To", v, sizeof v), "");
    rrec_free(&rr);
    assert_int_equal(warc_close(w), 0);

    /* Bad options. */
    char err[256];
    warc_opts o = {.dir = dir, .prefix = "a/b"};
    assert_null(warc_open(&o, err, sizeof err));
    assert_non_null(strstr(err, "prefix"));
    o.prefix = "ok";
    o.info = "operator: me\nthis is not a field\n";
    assert_null(warc_open(&o, err, sizeof err));
    assert_non_null(strstr(err, "line 2"));
    o.info = NULL;
    o.gzip_level = 12;
    assert_null(warc_open(&o, err, sizeof err));
    o.gzip_level = 0;
    o.dir = "/proc/no/such/dir";
    assert_null(warc_open(&o, err, sizeof err));
    assert_non_null(strstr(err, "cannot"));
    tmpdir_free(dir);
}

static void write_until_full(const char *dir)
{
    /* A file size limit: writes fail with EFBIG part way. */
    signal(SIGXFSZ, SIG_IGN);
    warc_opts o = {.dir = dir, .prefix = "test", .revisits = true};
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        _exit(3);
    struct rlimit rl = {20000, 20000};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(4);
    unsigned char body[3000];
    int ok = 0, rc = 0;
    for (int i = 0; i < 20 && rc == 0; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://example.com/full%d", i);
        noise(body, sizeof body, (unsigned)i + 3);
        warc_fetch f = mk(uri, HDR_HTML, body, sizeof body);
        rc = warc_write_fetch(w, &f, NULL);
        if (rc == 0)
            ok++;
    }
    if (rc != -EFBIG || ok < 2)
        _exit(5);
    /* The writer is still usable for what fits. */
    warc_fetch f = mk("http://example.com/small", HDR_HTML, "x", 1);
    rc = warc_write_fetch(w, &f, NULL);
    if (rc != 0 && rc != -EFBIG)
        _exit(6);
    _exit(warc_close(w) == 0 ? 0 : 7);
}

static void test_write_failure(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    crash_after(dir, write_until_full);
    char names[8][256];
    assert_int_equal(list_files(dir, ".warc.gz", names, 8), 1);
    /* Only whole records: every member complete, every line valid. */
    vstats *vs = calloc(1, sizeof *vs);
    verify_file(dir, names[0], vs);
    assert_true(vs->response >= 2);
    assert_int_equal(verify_index(dir, names[0]), vs->response);
    free(vs);
    tmpdir_free(dir);
}

static void test_out_of_memory(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    char err[256];
    warc_opts o = {.dir = dir, .prefix = "test", .revisits = true, .info = "a: b\n"};
    /* warc_open under failing allocations: NULL, no leak. */
    int opened = 0;
    for (long n = 1; n < 100 && !opened; n++) {
        cr_alloc_fail_after(n);
        warc_writer *w = warc_open(&o, err, sizeof err);
        cr_alloc_fail_after(0);
        if (w) {
            opened = 1;
            assert_int_equal(warc_close(w), 0);
        }
    }
    assert_true(opened);
    warc_writer *w = open_w(dir, 0, true);
    int failed = 0, good = 0;
    for (long n = 1; n < 200; n++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://example.com/oom%ld", n);
        warc_fetch f = mk(uri, HDR_HTML, uri, strlen(uri));
        warc_stats before, after;
        warc_stats_get(w, &before);
        cr_alloc_fail_after(n);
        int rc = warc_write_fetch(w, &f, NULL);
        cr_alloc_fail_after(0);
        warc_stats_get(w, &after);
        if (rc == 0) {
            good++;
            assert_int_equal(after.responses, before.responses + 1);
        } else {
            assert_int_equal(rc, -ENOMEM);
            failed++;
            /* Nothing of the fetch was written (a new file's warcinfo may). */
            assert_int_equal(after.responses, before.responses);
            assert_int_equal(after.requests, before.requests);
            if (after.warcinfos == before.warcinfos)
                assert_int_equal(after.bytes_written, before.bytes_written);
        }
    }
    assert_true(failed > 5);
    assert_true(good > 5);
    assert_int_equal(warc_close(w), 0);
    char names[8][256];
    int nf = list_files(dir, ".warc.gz", names, 8);
    vstats *vs = calloc(1, sizeof *vs);
    int lines = 0;
    for (int i = 0; i < nf; i++) {
        verify_file(dir, names[i], vs);
        lines += verify_index(dir, names[i]);
    }
    assert_int_equal(vs->response, good);
    assert_int_equal(lines, good);
    free(vs);
    tmpdir_free(dir);
}

/* ---- threads ------------------------------------------------------------ */

#define THREADS 4
#define PER_THREAD 150

typedef struct tjob {
    warc_writer *w;
    int t;
    warc_result res[PER_THREAD];
    int rc;
} tjob;

static void *thread_main(void *arg)
{
    tjob *j = arg;
    unsigned char body[800];
    for (int i = 0; i < PER_THREAD; i++) {
        char uri[64];
        snprintf(uri, sizeof uri, "http://t%d.example.com/p%d", j->t, i);
        /* Payload k = i % 50 is the same in every thread: 50 distinct. */
        noise(body, sizeof body, (unsigned)(i % 50) + 1000);
        warc_fetch f = mk(uri, HDR_HTML, body, sizeof body);
        int rc = warc_write_fetch(j->w, &f, &j->res[i]);
        if (rc != 0) {
            j->rc = rc;
            return NULL;
        }
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 40000, true);
    tjob *jobs = calloc(THREADS, sizeof *jobs);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].w = w;
        jobs[t].t = t;
        assert_int_equal(pthread_create(&th[t], NULL, thread_main, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].rc, 0);
    }
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(warc_close(w), 0);
    printf("threads: %" PRIu64 " files, %" PRIu64 " fetches rebuilt (rotation or payload race)\n", st.files, st.rebuilt);
    /* Each distinct payload was stored exactly once. */
    assert_int_equal(st.responses, 50);
    assert_int_equal(st.revisits, THREADS * PER_THREAD - 50);
    assert_true(st.files > 3);
    char names[256][256];
    int n = list_files(dir, ".warc.gz", names, 256);
    assert_int_equal((uint64_t)n, st.files);
    vstats *vs = calloc(1, sizeof *vs);
    int lines = 0;
    for (int i = 0; i < n; i++) {
        verify_file(dir, names[i], vs);
        lines += verify_index(dir, names[i]);
    }
    assert_int_equal(vs->response, 50);
    assert_int_equal(vs->revisit, THREADS * PER_THREAD - 50);
    assert_int_equal(vs->request, THREADS * PER_THREAD);
    assert_int_equal(lines, THREADS * PER_THREAD);
    /* Every result points at its own record. */
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < PER_THREAD; i += 7) {
            rrec r;
            char v[128], uri[64];
            snprintf(uri, sizeof uri, "http://t%d.example.com/p%d", t, i);
            record_of(dir, &jobs[t].res[i], &r);
            assert_string_equal(hget(&r, "WARC-Target-URI", v, sizeof v), uri);
            rrec_free(&r);
        }
    }
    free(vs);
    free(jobs);
    tmpdir_free(dir);
}

/* ---- warcio ------------------------------------------------------------- */

static long jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

/* Runs tests/warc/check.sh (warcio) on the named files of dir. Returns its
 * exit code (77: node or npm missing, reported loudly; skip) and, when it
 * printed its JSON, that in *out (caller frees with json_decref). */
static int run_check(const char *dir, char names[][256], int n, json_t **out)
{
    const char *argv[80];
    char paths[64][1024];
    int a = 0;
    argv[a++] = "/bin/sh";
    argv[a++] = "tests/warc/check.sh";
    for (int i = 0; i < n && i < 64; i++) {
        path_in(paths[i], sizeof paths[i], dir, names[i]);
        argv[a++] = paths[i];
    }
    argv[a] = NULL;
    cr_buf o, e;
    cr_buf_init(&o, 0);
    cr_buf_init(&e, 0);
    int rc = proc_run(argv, NULL, 0, &o, &e);
    if (rc == 77)
        fprintf(stderr, "%s", e.data ? e.data : "");
    else if (rc != 0 && rc != 1)
        fprintf(stderr, "check.sh exit %d\nstdout: %s\nstderr: %s\n", rc, o.data ? o.data : "",
                e.data ? e.data : "");
    else
        printf("warcio check: %s", o.data ? o.data : "(nothing)\n");
    json_error_t je;
    *out = o.data ? json_loads(o.data, 0, &je) : NULL;
    if (rc != 77)
        assert_non_null(*out);
    cr_buf_release(&o);
    cr_buf_release(&e);
    return rc;
}

/* Whether one of the check's error messages contains s. */
static bool check_said(json_t *j, const char *s)
{
    json_t *errs = json_object_get(j, "errors");
    for (size_t i = 0; i < json_array_size(errs); i++) {
        const char *m = json_string_value(json_array_get(errs, i));
        if (m && strstr(m, s))
            return true;
    }
    return false;
}

static void test_warcio(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    warc_writer *w = open_w(dir, 30000, true);
    int responses = 0, revisits = 0;
    warc_result r;
    /* robots.txt, pages, a 404, a redirect with no body, HTTP/2 headers. */
    const char *robots = "User-agent: *\nDisallow: /private\n";
    warc_fetch f = mk("http://127.0.0.1:8000/robots.txt",
                      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", robots, strlen(robots));
    assert_int_equal(warc_write_fetch(w, &f, &r), 0);
    responses++;
    for (int i = 0; i < 40; i++) {
        char uri[96], body[400];
        snprintf(uri, sizeof uri, "http://127.0.0.1:8000/page/%d?b=%d&a=1", i, i % 3);
        snprintf(body, sizeof body, "<html><body><a href=/page/%d>next</a></body></html>",
                 i % 25 + 1); /* pages 25..39 repeat 0..14: revisits */
        f = mk(uri, HDR_HTML, body, strlen(body));
        f.date_ms += i * 1000;
        assert_int_equal(warc_write_fetch(w, &f, &r), 0);
        if (r.was_revisit)
            revisits++;
        else
            responses++;
    }
    f = mk("http://127.0.0.1:8000/missing", "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\n\r\n",
           "<h1>404</h1>", 12);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    f = mk("http://127.0.0.1:8000/old", "HTTP/1.1 301 Moved\r\nLocation: /new\r\nContent-Length: 0\r\n\r\n",
           NULL, 0);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    f = mk("https://example.com/h2", "HTTP/2 200\r\ncontent-type: text/plain\r\n\r\n", "over h2", 7);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    /* Chunked, with a payload that looks like chunk framing. */
    const char *ch = "5\r\nhello\r\n0\r\n\r\n";
    f = mk("http://127.0.0.1:8000/chunked",
           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n", ch,
           strlen(ch));
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    /* Content-Encoding gzip, stored compressed as on the wire. */
    unsigned char gzbody[256];
    z_stream z;
    memset(&z, 0, sizeof z);
    must(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
    const char *plain = "<html>compressed on the wire</html>";
    z.next_in = (unsigned char *)(uintptr_t)plain;
    z.avail_in = (uInt)strlen(plain);
    z.next_out = gzbody;
    z.avail_out = sizeof gzbody;
    must(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
    size_t gzlen = sizeof gzbody - z.avail_out;
    deflateEnd(&z);
    f = mk("http://127.0.0.1:8000/gz",
           "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n"
           "Transfer-Encoding: chunked\r\n\r\n",
           gzbody, gzlen);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    /* Binary with NULs, and big headers. */
    unsigned char bin[5000];
    noise(bin, sizeof bin, 5);
    memset(bin, 0, 100);
    f = mk("http://127.0.0.1:8000/bin", "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n", bin,
           sizeof bin);
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    cr_buf h;
    cr_buf_init(&h, 0);
    cr_buf_puts(&h, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
    while (h.len < 200000)
        cr_buf_printf(&h, "X-Pad: %080d\r\n", 7);
    cr_buf_puts(&h, "\r\n");
    f = mk("http://127.0.0.1:8000/bighead", h.data, "ok", 2);
    f.headers_len = h.len;
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
    responses++;
    cr_buf_release(&h);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.responses, (uint64_t)responses);
    assert_int_equal(st.revisits, (uint64_t)revisits);
    assert_true(revisits >= 10);
    assert_int_equal(warc_close(w), 0);

    char names[64][256];
    int n = list_files(dir, ".warc.gz", names, 64);
    assert_true(n >= 2);
    json_t *j = NULL;
    int rc = run_check(dir, names, n, &j);
    if (rc == 77) {
        tmpdir_free(dir);
        skip();
    }
    assert_int_equal(rc, 0);
    int records = n + 2 * (responses + revisits);
    assert_int_equal(jint(j, "files"), n);
    assert_int_equal(jint(j, "records"), records);
    assert_int_equal(jint(j, "warcinfo"), n);
    assert_int_equal(jint(j, "request"), responses + revisits);
    assert_int_equal(jint(j, "response"), responses);
    assert_int_equal(jint(j, "revisit"), revisits);
    assert_int_equal(jint(j, "block_digest_ok"), records);
    assert_int_equal(jint(j, "payload_digest_ok"), 2 * responses + revisits);
    assert_int_equal(jint(j, "content_ok"), responses);
    assert_int_equal(jint(j, "revisit_ok"), revisits);
    assert_int_equal(jint(j, "concurrent_ok"), 2 * (responses + revisits));
    assert_int_equal(jint(j, "cdxj_lines"), responses + revisits);
    assert_int_equal(jint(j, "cdxj_ok"), responses + revisits);
    assert_int_equal(jint(j, "bad"), 0);
    assert_int_equal(jint(j, "warnings"), 0);
    json_decref(j);

    /* And it notices a torn file (warcio alone would not). */
    char last[1024];
    path_in(last, sizeof last, dir, names[n - 1]);
    must(truncate(last, (off_t)(file_size(last) - 20)) == 0, "truncate");
    rc = run_check(dir, names, n, &j);
    assert_int_equal(rc, 1);
    assert_true(check_said(j, "not whole gzip members"));
    json_decref(j);
    tmpdir_free(dir);
}

/* A hand-made record (not through the writer), as one gzip member. */
static void raw_record(FILE *fp, const char *warc_headers, const char *block, size_t block_len)
{
    cr_buf plain;
    cr_buf_init(&plain, 0);
    cr_buf_printf(&plain, "WARC/1.1\r\n%sContent-Length: %zu\r\n\r\n", warc_headers, block_len);
    cr_buf_append(&plain, block, block_len);
    cr_buf_puts(&plain, "\r\n\r\n");
    unsigned char out[8192];
    z_stream z;
    memset(&z, 0, sizeof z);
    must(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflateInit2");
    z.next_in = (unsigned char *)plain.data;
    z.avail_in = (uInt)plain.len;
    z.next_out = out;
    z.avail_out = sizeof out;
    must(deflate(&z, Z_FINISH) == Z_STREAM_END, "deflate");
    must(fwrite(out, 1, sizeof out - z.avail_out, fp) == sizeof out - z.avail_out, "fwrite");
    deflateEnd(&z);
    cr_buf_release(&plain);
}

/* The checker is able to fail: files with exactly the faults it looks for
 * (a stale "Transfer-Encoding: chunked" over a de-chunked body, a wrong
 * block digest, a revisit of nothing) are reported. */
static void test_warcio_catches(void **state)
{
    (void)state;
    char *dir = tmpdir_new();
    char path[1024], names[1][256] = {"bad-20240101000000-00000.warc.gz"};
    path_in(path, sizeof path, dir, names[0]);
    FILE *fp = fopen(path, "wb");
    must(fp != NULL, "fopen");
    const char *info_id = "<urn:uuid:00000000-0000-4000-8000-000000000001>";
    const char *info = "software: hand\r\n";
    char dg[38], dg2[38], h[2048];
    sha1_text(info, strlen(info), dg);
    snprintf(h, sizeof h,
             "WARC-Type: warcinfo\r\nWARC-Record-ID: %s\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
             "WARC-Filename: %s\r\nContent-Type: application/warc-fields\r\nWARC-Block-Digest: %s\r\n",
             info_id, names[0], dg);
    raw_record(fp, h, info, strlen(info));
    /* 1: chunked header kept over a de-chunked body. */
    const char *block = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    size_t he = strstr(block, "\r\n\r\n") - block + 4;
    sha1_text(block, strlen(block), dg);
    sha1_text(block + he, strlen(block) - he, dg2);
    snprintf(h, sizeof h,
             "WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000002>\r\n"
             "WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: http://example.com/\r\n"
             "WARC-Warcinfo-ID: %s\r\nContent-Type: application/http;msgtype=response\r\n"
             "WARC-Block-Digest: %s\r\nWARC-Payload-Digest: %s\r\n",
             info_id, dg, dg2);
    raw_record(fp, h, block, strlen(block));
    /* 2: a block digest that does not match; 3: a revisit of nothing. */
    const char *block2 = "HTTP/1.1 200 OK\r\nA: b\r\n\r\nabc";
    snprintf(h, sizeof h,
             "WARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000003>\r\n"
             "WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: http://example.com/2\r\n"
             "WARC-Warcinfo-ID: %s\r\nContent-Type: application/http;msgtype=response\r\n"
             "WARC-Block-Digest: sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r\n"
             "WARC-Payload-Digest: sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5\r\n",
             info_id);
    raw_record(fp, h, block2, strlen(block2));
    const char *block3 = "HTTP/1.1 200 OK\r\n\r\n";
    sha1_text(block3, strlen(block3), dg);
    snprintf(h, sizeof h,
             "WARC-Type: revisit\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000004>\r\n"
             "WARC-Date: 2024-01-01T00:00:00Z\r\nWARC-Target-URI: http://example.com/3\r\n"
             "WARC-Warcinfo-ID: %s\r\nWARC-Profile: "
             "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest\r\n"
             "WARC-Refers-To-Target-URI: http://example.com/nowhere\r\n"
             "WARC-Refers-To-Date: 2024-01-01T00:00:00Z\r\n"
             "Content-Type: application/http;msgtype=response\r\nWARC-Block-Digest: %s\r\n"
             "WARC-Payload-Digest: sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5\r\n",
             info_id, dg);
    raw_record(fp, h, block3, strlen(block3));
    must(fclose(fp) == 0, "fclose");
    json_t *j = NULL;
    int rc = run_check(dir, names, 1, &j);
    if (rc == 77) {
        tmpdir_free(dir);
        skip();
    }
    assert_int_equal(rc, 1);
    assert_int_equal(jint(j, "records"), 4);
    assert_true(check_said(j, "http://example.com/: decoded content differs"));
    assert_true(check_said(j, "!= sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
    assert_true(check_said(j, "revisit refers to http://example.com/nowhere"));
    assert_true(check_said(j, "no index"));
    json_decref(j);
    tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest_text),
        cmocka_unit_test(test_date),
        cmocka_unit_test(test_surt),
        cmocka_unit_test(test_cdxj_line),
        cmocka_unit_test(test_http_fix),
        cmocka_unit_test(test_empty_body),
        cmocka_unit_test(test_huge_headers),
        cmocka_unit_test(test_binary_payload),
        cmocka_unit_test(test_chunked),
        cmocka_unit_test(test_revisit),
        cmocka_unit_test(test_revisits_off),
        cmocka_unit_test(test_dedup_persist),
        cmocka_unit_test(test_rotation),
        cmocka_unit_test(test_torn_record),
        cmocka_unit_test(test_unindexed_tail),
        cmocka_unit_test(test_crash_empty_file),
        cmocka_unit_test(test_crash_while_rotating),
        cmocka_unit_test(test_clean_reopen),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_warcio),
        cmocka_unit_test(test_warcio_catches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
