/* tests/test_warc_revisit: storage/warc's re-crawl records: a 304 with a
 * prior is a server-not-modified revisit pointing at it; a 200 whose
 * payload is the prior's is an identical-payload-digest revisit across
 * crawls (a fresh writer, empty dedup map); a changed one is a response;
 * warc_result names each record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "storage/warc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/crawld-test-wrev-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static warc_writer *open_w(void)
{
    warc_opts o = { .dir = dir, .prefix = "rev", .revisits = true };
    char err[256];
    warc_writer *w = warc_open(&o, err, sizeof err);
    if (w == NULL)
        fail_msg("warc_open: %s", err);
    return w;
}

/* Every .warc.gz in dir, inflated and concatenated, NUL-terminated. */
static char *all_text(size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    char *out = malloc(cap);
    DIR *dp = opendir(dir);
    struct dirent *e;
    while (dp && (e = readdir(dp)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 8 || strcmp(e->d_name + l - 8, ".warc.gz") != 0)
            continue;
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        gzFile g = gzopen(path, "rb");
        int r;
        while (g && (r = gzread(g, out + n, (unsigned)(cap - n - 1))) > 0)
            n += (size_t)r;
        if (g)
            gzclose(g);
    }
    if (dp)
        closedir(dp);
    out[n] = '\0';
    *len = n;
    return out;
}

static size_t count(const char *hay, const char *needle)
{
    size_t k = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        k++;
    return k;
}

static const char hdr200[] = "HTTP/1.1 200 OK\r\nETag: \"v1\"\r\nContent-Type: text/html\r\n\r\n";
static const char hdr304[] = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n";
static const char body[] = "<html>the page</html>";

static void test_recrawl_records(void **state)
{
    (void)state;
    const char *uri = "http://a.test/p.html";
    /* crawl 1: the original */
    warc_writer *w = open_w();
    warc_fetch f = { .uri = uri, .headers = hdr200, .headers_len = strlen(hdr200),
                     .payload = body, .payload_len = strlen(body), .status = 200,
                     .date_ms = 1700000000000LL };
    warc_result orig;
    assert_int_equal(warc_write_fetch(w, &f, &orig), 0);
    assert_false(orig.was_revisit);
    assert_int_equal(strlen(orig.record_id), 47);
    assert_int_equal(orig.date_ms, 1700000000000LL);
    char dg[38];
    assert_int_equal(warc_payload_digest(body, strlen(body), dg), 0);
    assert_string_equal(orig.payload_digest, dg);
    assert_int_equal(warc_close(w), 0);

    /* crawl 2, a new writer: 304, same payload, changed payload */
    w = open_w();
    warc_prior pr = { .digest = orig.payload_digest, .record_id = orig.record_id,
                      .date_ms = orig.date_ms, .uri = uri };
    warc_fetch nm = { .uri = uri, .headers = hdr304, .headers_len = strlen(hdr304),
                      .payload = "", .status = 304, .prior = &pr, .not_modified = true };
    warc_result r1, r2, r3, r4;
    assert_int_equal(warc_write_fetch(w, &nm, &r1), 0);
    assert_true(r1.was_revisit);
    f.prior = &pr;
    f.date_ms = 0;
    assert_int_equal(warc_write_fetch(w, &f, &r2), 0);
    assert_true(r2.was_revisit);
    static const char body2[] = "<html>changed</html>";
    warc_fetch ch = f;
    ch.payload = body2;
    ch.payload_len = strlen(body2);
    assert_int_equal(warc_write_fetch(w, &ch, &r3), 0);
    assert_false(r3.was_revisit);
    /* a 304 whose prior has no record id: a revisit without WARC-Refers-To */
    warc_prior noid = { .uri = uri, .date_ms = orig.date_ms };
    nm.prior = &noid;
    assert_int_equal(warc_write_fetch(w, &nm, &r4), 0);
    assert_true(r4.was_revisit);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.revisits, 3);
    assert_int_equal(st.responses, 1);
    assert_int_equal(warc_close(w), 0);

    size_t n;
    char *t = all_text(&n);
    assert_int_equal(count(t, "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/"
                              "server-not-modified\r\n"), 2);
    assert_int_equal(count(t, "WARC-Profile: http://netpreserve.org/warc/1.1/revisit/"
                              "identical-payload-digest\r\n"), 1);
    char want[128];
    snprintf(want, sizeof want, "WARC-Refers-To: %s\r\n", orig.record_id);
    assert_int_equal(count(t, want), 2);
    assert_int_equal(count(t, "WARC-Refers-To: "), 2);
    assert_int_equal(count(t, "WARC-Refers-To-Date: 2023-11-14T22:13:20.000Z\r\n"), 3);
    assert_int_equal(count(t, "WARC-Refers-To-Target-URI: http://a.test/p.html\r\n"), 3);
    assert_int_equal(count(t, "WARC-Type: response\r\n"), 2);
    assert_int_equal(count(t, "WARC-Type: revisit\r\n"), 3);
    /* the 304 revisit carries the 304 header block and the original's
     * payload digest (what it stands for) */
    const char *nmrec = strstr(t, "server-not-modified");
    const char *next = strstr(nmrec, "WARC/1.1\r\n");
    char pdw[64];
    snprintf(pdw, sizeof pdw, "WARC-Payload-Digest: %s\r\n", orig.payload_digest);
    const char *pd = strstr(nmrec, pdw);
    assert_true(pd != NULL && (next == NULL || pd < next));
    assert_non_null(strstr(nmrec, "HTTP/1.1 304 Not Modified\r\n"));
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recrawl_records, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
