/* tests/test_wacz: storage/wacz, the WACZ packager.
 *
 * WARC files are written with storage/warc into a fresh folder, packaged,
 * and the package is read back with libzip: the entries and their STORE
 * method, every hash and size datapackage.json states against the bytes,
 * the digest file, every index line against the gzip member it points to,
 * pages.jsonl; then the failure paths: an existing output, no WARCs, a torn
 * tail and foreign index lines, an unwritable folder, a failing title hook,
 * and out of memory at every allocation. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "storage/cdxj.h"
#include "storage/wacz.h"
#include "storage/warc.h"
#include "tests/support/proc.h"

static char dir[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/crawld-test-wacz-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    const char *argv[] = { "/bin/rm", "-rf", dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
    return 0;
}

static const char *at(const char *name)
{
    static char p[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* ---- writing WARCs ------------------------------------------------------- */

static warc_writer *open_writer(void)
{
    warc_opts o = { .dir = at("warc"), .prefix = "crawld", .revisits = true };
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        fail_msg("warc_open: %s", err);
    return w;
}

static void fetch(warc_writer *w, const char *uri, const char *ctype, const char *body,
                  int status)
{
    char hdr[512];
    snprintf(hdr, sizeof hdr, "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n",
             status, ctype, strlen(body));
    char req[256];
    snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
    warc_fetch f = { .uri = uri, .ip = "127.0.0.1", .date_ms = 1714979289000,
                     .request = req, .request_len = strlen(req), .headers = hdr,
                     .headers_len = strlen(hdr), .payload = body, .payload_len = strlen(body),
                     .status = status, .mime = ctype };
    assert_int_equal(warc_write_fetch(w, &f, NULL), 0);
}

static const char *find_bytes(const char *h, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (memcmp(h + i, needle, m) == 0)
            return h + i;
    return NULL;
}

/* A naive title hook: the text between <title> and </title>. */
static int calls;
static int title_fn(void *ud, const char *headers, size_t hl, const char *p, size_t n, cr_buf *t)
{
    (void)ud;
    calls++;
    assert_non_null(find_bytes(headers, hl, "HTTP/1.1 200"));
    const char *a = find_bytes(p, n, "<title>");
    const char *b = a ? find_bytes(a, n - (size_t)(a - p), "</title>") : NULL;
    if (a && b)
        return cr_buf_append(t, a + 7, (size_t)(b - a - 7));
    return 0;
}

static int failing_title_fn(void *ud, const char *h, size_t hl, const char *p, size_t n, cr_buf *t)
{
    (void)ud, (void)h, (void)hl, (void)p, (void)n, (void)t;
    return -1;
}

static void write_site(void)
{
    warc_writer *w = open_writer();
    fetch(w, "http://a.test/", "text/html; charset=utf-8",
          "<html><head><title>Home page</title><link rel=stylesheet href=s.css></head></html>", 200);
    fetch(w, "http://a.test/s.css", "text/css", "body { background: url(i.png) }", 200);
    fetch(w, "http://a.test/i.png", "image/png", "\x89PNG fake", 200);
    fetch(w, "http://a.test/plain.html", "text/html", "<p>no title here</p>", 200);
    fetch(w, "http://a.test/copy.html", "text/html", "<p>no title here</p>", 200); /* revisit */
    fetch(w, "http://a.test/missing", "text/html", "<title>Not found</title>", 404);
    assert_int_equal(warc_close(w), 0);
}

static int pack(const char *out, wacz_title_fn fn, wacz_stats *st, char *err, size_t errlen)
{
    wacz_opts o = { .archive_dir = at("warc"), .prefix = "crawld", .out_path = out,
                    .title = "test crawl", .title_fn = fn, .created_ms = 1714979300000 };
    return wacz_write(&o, st, err, errlen);
}

/* ---- reading the package back ------------------------------------------- */

typedef struct entry {
    char name[256];
    char *data;
    size_t len;
    int method;
} entry;

typedef struct zipped {
    entry e[16];
    int n;
} zipped;

static void read_zip(const char *path, zipped *z)
{
    int zerr = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &zerr);
    if (za == NULL)
        fail_msg("zip_open %s: %d", path, zerr);
    memset(z, 0, sizeof *z);
    zip_int64_t n = zip_get_num_entries(za, 0);
    assert_true(n > 0 && n <= 16);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t s;
        assert_int_equal(zip_stat_index(za, (zip_uint64_t)i, 0, &s), 0);
        entry *e = &z->e[z->n++];
        snprintf(e->name, sizeof e->name, "%s", s.name);
        e->method = s.comp_method;
        e->len = (size_t)s.size;
        e->data = malloc(e->len + 1);
        zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
        assert_non_null(f);
        assert_int_equal(zip_fread(f, e->data, e->len), (zip_int64_t)e->len);
        e->data[e->len] = '\0';
        zip_fclose(f);
    }
    zip_close(za);
}

static void free_zip(zipped *z)
{
    for (int i = 0; i < z->n; i++)
        free(z->e[i].data);
}

static const entry *find(const zipped *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (strcmp(z->e[i].name, name) == 0)
            return &z->e[i];
    return NULL;
}

static void sha256(const void *p, size_t n, char out[72])
{
    unsigned char md[32];
    unsigned int ml;
    EVP_Digest(p, n, md, &ml, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    for (int i = 0; i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *len = (size_t)n;
    return b;
}

/* The name of the only (or first) WARC file in the folder. */
static void warc_names(char names[4][128], int *n)
{
    DIR *d = opendir(at("warc"));
    assert_non_null(d);
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l > 8 && strcmp(e->d_name + l - 8, ".warc.gz") == 0 && *n < 4)
            snprintf(names[(*n)++], 128, "%s", e->d_name);
    }
    closedir(d);
    if (*n == 2 && strcmp(names[0], names[1]) > 0) {
        char t[128];
        memcpy(t, names[0], 128);
        memcpy(names[0], names[1], 128);
        memcpy(names[1], t, 128);
    }
}

/* Inflates the gzip member at [off, off+len) of data. */
static void member(const char *data, size_t size, uint64_t off, uint64_t len, cr_buf *out)
{
    assert_true(off + len <= size);
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = (unsigned char *)data + off;
    z.avail_in = (uInt)len;
    char buf[65536];
    int r;
    do {
        z.next_out = (unsigned char *)buf;
        z.avail_out = sizeof buf;
        r = inflate(&z, Z_NO_FLUSH);
        assert_true(r == Z_OK || r == Z_STREAM_END);
        cr_buf_append(out, buf, sizeof buf - z.avail_out);
    } while (r != Z_STREAM_END);
    assert_int_equal(z.avail_in, 0); /* exactly one member */
    inflateEnd(&z);
}

static void check_package(const char *path, int nwarcs, size_t want_lines, size_t want_pages)
{
    zipped z;
    read_zip(path, &z);
    assert_int_equal(z.n, nwarcs + 4);
    for (int i = 0; i < z.n; i++)
        assert_int_equal(z.e[i].method, ZIP_CM_STORE);
    const entry *dp = find(&z, "datapackage.json"), *dg = find(&z, "datapackage-digest.json");
    const entry *ix = find(&z, "indexes/index.cdxj"), *pg = find(&z, "pages/pages.jsonl");
    assert_non_null(dp);
    assert_non_null(dg);
    assert_non_null(ix);
    assert_non_null(pg);
    /* datapackage.json: every other file, with its true hash and size */
    json_error_t je;
    json_t *j = json_loads(dp->data, 0, &je);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "profile")), "data-package");
    assert_string_equal(json_string_value(json_object_get(j, "wacz_version")), "1.1.1");
    assert_string_equal(json_string_value(json_object_get(j, "title")), "test crawl");
    assert_string_equal(json_string_value(json_object_get(j, "created")),
                        "2024-05-06T07:08:20.000Z");
    json_t *res = json_object_get(j, "resources");
    assert_int_equal(json_array_size(res), (size_t)z.n - 2);
    size_t i;
    json_t *r;
    json_array_foreach(res, i, r) {
        const char *p = json_string_value(json_object_get(r, "path"));
        const entry *e = find(&z, p);
        assert_non_null(e);
        char h[72];
        sha256(e->data, e->len, h);
        assert_string_equal(json_string_value(json_object_get(r, "hash")), h);
        assert_int_equal(json_integer_value(json_object_get(r, "bytes")), e->len);
        assert_string_equal(json_string_value(json_object_get(r, "name")), strrchr(p, '/') + 1);
    }
    json_decref(j);
    /* the digest names datapackage.json's true hash */
    j = json_loads(dg->data, 0, &je);
    assert_non_null(j);
    char h[72];
    sha256(dp->data, dp->len, h);
    assert_string_equal(json_string_value(json_object_get(j, "path")), "datapackage.json");
    assert_string_equal(json_string_value(json_object_get(j, "hash")), h);
    json_decref(j);
    /* index: sorted, each line names a whole member of a packaged WARC */
    size_t lines = 0;
    const char *prev = NULL;
    size_t prevn = 0;
    for (const char *l = ix->data; *l;) {
        const char *e = strchr(l, '\n');
        assert_non_null(e);
        size_t n = (size_t)(e - l);
        if (prev) {
            size_t m = prevn < n ? prevn : n;
            int c = memcmp(prev, l, m);
            assert_true(c < 0 || (c == 0 && prevn <= n));
        }
        uint64_t off, len;
        assert_int_equal(cdxj_parse_span(l, n, &off, &len), 0);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        json_t *lj = json_loads(strchr(line, '{'), 0, &je);
        assert_non_null(lj);
        char ename[300];
        snprintf(ename, sizeof ename, "archive/%s",
                 json_string_value(json_object_get(lj, "filename")));
        const entry *w = find(&z, ename);
        assert_non_null(w);
        cr_buf rec;
        cr_buf_init(&rec, 0);
        member(w->data, w->len, off, len, &rec);
        assert_memory_equal(rec.data, "WARC/1.1\r\n", 10);
        char uri[2048];
        snprintf(uri, sizeof uri, "WARC-Target-URI: %s\r\n",
                 json_string_value(json_object_get(lj, "url")));
        assert_non_null(strstr(rec.data, uri));
        cr_buf_release(&rec);
        json_decref(lj);
        lines++;
        prev = l;
        prevn = n;
        l = e + 1;
    }
    assert_int_equal(lines, want_lines);
    /* pages.jsonl: the header, then the HTML 200 responses */
    size_t np = 0;
    for (const char *l = pg->data; *l; np++) {
        const char *e = strchr(l, '\n');
        assert_non_null(e);
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(e - l), l);
        json_t *pj = json_loads(line, 0, &je);
        assert_non_null(pj);
        if (np == 0) {
            assert_string_equal(json_string_value(json_object_get(pj, "format")), "json-pages-1.0");
        } else {
            const char *ts = json_string_value(json_object_get(pj, "ts"));
            assert_non_null(ts);
            assert_int_equal(strlen(ts), 20);
            assert_true(ts[4] == '-' && ts[10] == 'T' && ts[19] == 'Z');
            assert_non_null(json_string_value(json_object_get(pj, "url")));
            assert_int_equal(strlen(json_string_value(json_object_get(pj, "id"))), 32);
        }
        json_decref(pj);
        l = e + 1;
    }
    assert_int_equal(np, want_pages + 1);
    free_zip(&z);
}

/* ---- cases ---------------------------------------------------------------- */

static void package_layout_and_digests(void **state)
{
    (void)state;
    write_site();
    char err[512];
    wacz_stats st;
    calls = 0;
    int rc = pack(at("site.wacz"), title_fn, &st, err, sizeof err);
    if (rc != 0)
        fail_msg("wacz_write: %s", err);
    /* 6 fetches: 5 responses + 1 revisit indexed; pages: the three HTML 200s
     * that are responses (the copy is a revisit, the 404 is no page) */
    assert_int_equal(st.warcs, 1);
    assert_int_equal(st.index_lines, 6);
    assert_int_equal(st.pages, 2);
    assert_int_equal(st.titles, 1);
    assert_int_equal(calls, 2);
    assert_int_equal(st.bad_lines, 0);
    assert_int_equal(st.tail_bytes_cut, 0);
    check_package(at("site.wacz"), 1, 6, 2);
    /* the WARC is in the package byte for byte */
    char names[4][128];
    int n;
    warc_names(names, &n);
    assert_int_equal(n, 1);
    size_t len;
    char rel[200];
    snprintf(rel, sizeof rel, "warc/%s", names[0]);
    char *disk = slurp(at(rel), &len);
    zipped z;
    read_zip(at("site.wacz"), &z);
    char ename[200];
    snprintf(ename, sizeof ename, "archive/%s", names[0]);
    const entry *e = find(&z, ename);
    assert_non_null(e);
    assert_int_equal(e->len, len);
    assert_memory_equal(e->data, disk, len);
    const entry *pg = find(&z, "pages/pages.jsonl");
    assert_non_null(strstr(pg->data, "\"url\":\"http://a.test/\",\"ts\":\"2024-05-06T07:08:09Z\","
                                     "\"title\":\"Home page\""));
    assert_non_null(strstr(pg->data, "\"url\":\"http://a.test/plain.html\""));
    assert_null(strstr(pg->data, "copy.html"));
    assert_null(strstr(pg->data, "missing"));
    assert_non_null(strstr(find(&z, "datapackage.json")->data, "\"mainPageURL\": \"http://a.test/\""));
    free_zip(&z);
    free(disk);
}

static void existing_output_is_never_replaced(void **state)
{
    (void)state;
    write_site();
    FILE *f = fopen(at("old.wacz"), "w");
    fputs("not yours", f);
    fclose(f);
    char err[512];
    assert_int_equal(pack(at("old.wacz"), NULL, NULL, err, sizeof err), -EEXIST);
    assert_non_null(strstr(err, "never replaced"));
    size_t len;
    char *b = slurp(at("old.wacz"), &len);
    assert_string_equal(b, "not yours");
    free(b);
}

/* A later crawl's WARCs go into a new package; the old one stays as it was. */
static void recrawl_makes_a_new_package(void **state)
{
    (void)state;
    write_site();
    char err[512];
    assert_int_equal(pack(at("first.wacz"), title_fn, NULL, err, sizeof err), 0);
    size_t l1;
    char *before = slurp(at("first.wacz"), &l1);
    sleep(1); /* a new WARC file name (its start second) */
    warc_writer *w = open_writer();
    fetch(w, "http://a.test/new.html", "text/html", "<title>New</title>", 200);
    assert_int_equal(warc_close(w), 0);
    wacz_stats st;
    assert_int_equal(pack(at("second.wacz"), title_fn, &st, err, sizeof err), 0);
    assert_int_equal(st.warcs, 2);
    assert_int_equal(st.pages, 3);
    check_package(at("second.wacz"), 2, 7, 3);
    size_t l2;
    char *after = slurp(at("first.wacz"), &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(before, after, l1);
    free(before);
    free(after);
}

/* A WARC still being written (or torn): only what its index covers. */
static void torn_tail_and_foreign_lines(void **state)
{
    (void)state;
    write_site();
    char names[4][128];
    int n;
    warc_names(names, &n);
    char wpath[400], ipath[400];
    snprintf(wpath, sizeof wpath, "%s/warc/%s", dir, names[0]);
    snprintf(ipath, sizeof ipath, "%s/warc/%.*s.cdxj", dir, (int)strlen(names[0]) - 8, names[0]);
    struct stat sb;
    assert_int_equal(stat(wpath, &sb), 0);
    FILE *f = fopen(wpath, "ab");
    fputs("\x1f\x8b half a member", f);
    fclose(f);
    f = fopen(ipath, "ab");
    fputs("garbage line\n"
          "com,x)/ 20240506070809 {\"url\":\"http://x/\",\"length\":\"10\",\"offset\":\"999999999\","
          "\"filename\":\"other.warc.gz\"}\n"
          "a,test)/ 20240506070809 {\"url\":\"http://a.test/x\",\"length\":\"10\",\"offset\":\"0\","
          "\"filename\":\"other.warc.gz\"}\n"
          "a,test)/ 2024050607", f); /* a line still being written */
    fclose(f);
    char err[512];
    wacz_stats st;
    assert_int_equal(pack(at("torn.wacz"), NULL, &st, err, sizeof err), 0);
    assert_int_equal(st.index_lines, 6);
    assert_int_equal(st.bad_lines, 4);
    assert_int_equal(st.tail_bytes_cut, 16);
    assert_int_equal(st.warc_bytes, (uint64_t)sb.st_size);
    check_package(at("torn.wacz"), 1, 6, 2);
}

static void nothing_to_package(void **state)
{
    (void)state;
    char err[512];
    wacz_opts o = { .archive_dir = at("nope"), .prefix = "crawld", .out_path = at("x.wacz") };
    assert_int_equal(wacz_write(&o, NULL, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(mkdir(at("warc"), 0755), 0);
    o.archive_dir = at("warc");
    assert_int_equal(wacz_write(&o, NULL, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "no WARC file"));
    /* a WARC whose index is gone: nothing of it can be found, so none */
    write_site();
    char names[4][128];
    int n;
    warc_names(names, &n);
    char ipath[400];
    snprintf(ipath, sizeof ipath, "%s/warc/%.*s.cdxj", dir, (int)strlen(names[0]) - 8, names[0]);
    assert_int_equal(unlink(ipath), 0);
    wacz_stats st;
    assert_int_equal(wacz_write(&o, &st, err, sizeof err), -ENOENT);
    assert_int_equal(st.warcs_skipped, 1);
    assert_int_equal(access(at("x.wacz"), F_OK), -1);
    o.out_path = "";
    assert_int_equal(wacz_write(&o, NULL, err, sizeof err), -EINVAL);
}

static void unwritable_output(void **state)
{
    (void)state;
    write_site();
    char err[512];
    int rc = pack(at("no/such/folder/x.wacz"), NULL, NULL, err, sizeof err);
    assert_true(rc < 0);
    assert_non_null(strstr(err, "no/such/folder"));
}

static void failing_title_hook_keeps_the_pages(void **state)
{
    (void)state;
    write_site();
    char err[512];
    wacz_stats st;
    assert_int_equal(pack(at("t.wacz"), failing_title_fn, &st, err, sizeof err), 0);
    assert_int_equal(st.pages, 2);
    assert_int_equal(st.titles, 0);
    check_package(at("t.wacz"), 1, 6, 2);
}

/* Out of memory at each of our allocations in turn: an error, no package,
 * no temporary file; then, with memory, it works. */
static void out_of_memory_everywhere(void **state)
{
    (void)state;
    write_site();
    char err[512];
    int rc = -1;
    long n;
    for (n = 1; n < 5000 && rc != 0; n++) {
        cr_alloc_fail_after(n);
        rc = pack(at("oom.wacz"), title_fn, NULL, err, sizeof err);
        long failed = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (rc != 0) {
            assert_true(failed > 0);
            assert_int_equal(access(at("oom.wacz"), F_OK), -1);
        }
        DIR *d = opendir(dir);
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strstr(e->d_name, ".tmp-") != NULL)
                fail_msg("a temporary file was left: %s (n=%ld)", e->d_name, n);
        closedir(d);
    }
    assert_int_equal(rc, 0);
    assert_true(n > 10);
    check_package(at("oom.wacz"), 1, 6, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(package_layout_and_digests, setup, teardown),
        cmocka_unit_test_setup_teardown(existing_output_is_never_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(recrawl_makes_a_new_package, setup, teardown),
        cmocka_unit_test_setup_teardown(torn_tail_and_foreign_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(nothing_to_package, setup, teardown),
        cmocka_unit_test_setup_teardown(unwritable_output, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_title_hook_keeps_the_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(out_of_memory_everywhere, setup, teardown),
    };
    return cmocka_run_group_tests_name("wacz", tests, NULL, NULL);
}
