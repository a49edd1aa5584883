/* tests/test_spool: storage/spool (a body on its way to the WARC writer)
 * and the writer's streamed payload (warc_fetch.payload_read).
 *
 * The random cases print their seed and take it back from SPOOL_SEED. */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "storage/spool.h"
#include "storage/warc.h"

static unsigned seed;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void sha1_of(const void *a, size_t an, const void *b, size_t bn, uint8_t out[20])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int len = 0;
    assert_non_null(c);
    assert_int_equal(EVP_DigestInit_ex(c, EVP_sha1(), NULL), 1);
    if (an)
        EVP_DigestUpdate(c, a, an);
    if (bn)
        EVP_DigestUpdate(c, b, bn);
    assert_int_equal(EVP_DigestFinal_ex(c, out, &len), 1);
    EVP_MD_CTX_free(c);
}

static char *tmpdir_new(void)
{
    char *d = strdup("/tmp/crawld-spool-XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static void rm_rf(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static unsigned char *body_new(size_t n, uint64_t *s)
{
    unsigned char *b = malloc(n ? n : 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(rnd(s) % 7 == 0 ? 0 : 'a' + rnd(s) % 26); /* NULs too */
    return b;
}

/* Appends b in random pieces of 1..max bytes. */
static void feed(spool *sp, const unsigned char *b, size_t n, size_t max, uint64_t *s, int want)
{
    for (size_t off = 0; off < n;) {
        size_t take = 1 + (size_t)(rnd(s) % max);
        if (take > n - off)
            take = n - off;
        int rc = spool_append(sp, b + off, take);
        if (want == 0)
            assert_int_equal(rc, 0);
        off += take;
    }
}

#define HDR "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"

/* A body within the cap stays in memory; the digests are those of the
 * whole body (and header block + body), whatever the piece sizes. */
static void small_body_in_memory(void **state)
{
    (void)state;
    uint64_t s = seed | 1;
    char *dir = tmpdir_new();
    spool_opts o = { .dir = dir, .mem_cap = 65536 };
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    for (int round = 0; round < 20; round++) {
        size_t n = (size_t)(rnd(&s) % 65537);
        unsigned char *b = body_new(n, &s);
        assert_int_equal(spool_begin(sp, HDR, strlen(HDR)), 0);
        feed(sp, b, n, 5000, &s, 0);
        assert_int_equal(spool_finish(sp), 0);
        assert_int_equal(spool_error(sp), 0);
        assert_false(spool_spilled(sp));
        assert_int_equal(spool_len(sp), n);
        uint8_t want[20];
        sha1_of(b, n, NULL, 0, want);
        assert_memory_equal(spool_payload_sha1(sp), want, 20);
        sha1_of(HDR, strlen(HDR), b, n, want);
        assert_memory_equal(spool_block_sha1(sp), want, 20);
        assert_int_equal(spool_header_len(sp), strlen(HDR));
        if (n)
            assert_memory_equal(spool_data(sp), b, n);
        free(b);
    }
    assert_int_equal(dir_entries(dir), 0);
    spool_free(sp);
    rm_rf(dir);
    free(dir);
}

/* Past the cap the body goes to an unlinked file (nothing in the folder),
 * reads back exactly, and spool_begin starts over in memory. */
static void big_body_spills_to_unlinked_file(void **state)
{
    (void)state;
    uint64_t s = (seed | 1) * 7;
    char *dir = tmpdir_new();
    spool_opts o = { .dir = dir, .mem_cap = 4096 };
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    for (int round = 0; round < 6; round++) {
        size_t n = 4097 + (size_t)(rnd(&s) % 300000);
        unsigned char *b = body_new(n, &s);
        assert_int_equal(spool_begin(sp, NULL, 0), 0);
        feed(sp, b, n, 20000, &s, 0);
        assert_int_equal(spool_finish(sp), 0);
        assert_true(spool_spilled(sp));
        assert_null(spool_data(sp));
        assert_int_equal(dir_entries(dir), 0);
        unsigned char *back = malloc(n);
        assert_non_null(back);
        size_t off = 0;
        while (off < n) { /* uneven reads */
            size_t take = 1 + (size_t)(rnd(&s) % 70000);
            if (take > n - off)
                take = n - off;
            assert_int_equal(spool_read(sp, off, back + off, take), 0);
            off += take;
        }
        assert_memory_equal(back, b, n);
        assert_int_equal(spool_read(sp, n - 1, back, 2), -ERANGE);
        uint8_t want[20];
        sha1_of(b, n, NULL, 0, want);
        assert_memory_equal(spool_payload_sha1(sp), want, 20);
        free(back);
        free(b);
    }
    assert_int_equal(spool_begin(sp, NULL, 0), 0);
    assert_int_equal(spool_append(sp, "x", 1), 0);
    assert_false(spool_spilled(sp));
    spool_free(sp);
    rm_rf(dir);
    free(dir);
}

static int fail_after;  /* bytes the fake disk takes before ENOSPC */
static int fail_calls;
static ssize_t full_disk(int fd, const void *p, size_t n)
{
    fail_calls++;
    if (fail_after <= 0) {
        errno = ENOSPC;
        return -1;
    }
    size_t take = n < (size_t)fail_after ? n : (size_t)fail_after;
    ssize_t w = write(fd, p, take);
    if (w > 0)
        fail_after -= (int)w;
    return w;
}

/* A disk that fills up while the body spills: the error sticks, the
 * digests stay right, the bytes are no longer handed out. */
static void full_disk_is_sticky_and_digests_hold(void **state)
{
    (void)state;
    uint64_t s = (seed | 1) * 13;
    char *dir = tmpdir_new();
    spool_opts o = { .dir = dir, .mem_cap = 4096, .write_fn = full_disk };
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    int cases[] = {0, 100, 5000, 9000};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        fail_after = cases[k];
        fail_calls = 0;
        size_t n = 20000;
        unsigned char *b = body_new(n, &s);
        assert_int_equal(spool_begin(sp, HDR, strlen(HDR)), 0);
        feed(sp, b, n, 3000, &s, -1);
        assert_int_equal(spool_error(sp), -ENOSPC);
        assert_int_equal(spool_append(sp, "x", 1), -ENOSPC);
        assert_true(fail_calls > 0);
        assert_int_equal(spool_finish(sp), 0);
        assert_int_equal(spool_len(sp), n + 1);
        unsigned char *all = malloc(n + 1);
        assert_non_null(all);
        memcpy(all, b, n);
        all[n] = 'x';
        uint8_t want[20];
        sha1_of(all, n + 1, NULL, 0, want);
        assert_memory_equal(spool_payload_sha1(sp), want, 20);
        char c;
        assert_int_equal(spool_read(sp, 0, &c, 1), -ENOSPC);
        assert_null(spool_data(sp));
        assert_int_equal(dir_entries(dir), 0);
        free(all);
        free(b);
    }
    spool_free(sp);
    rm_rf(dir);
    free(dir);
}

/* No folder: the spool only digests (the re-crawl without an archive). */
static void digest_only_stores_nothing(void **state)
{
    (void)state;
    uint64_t s = (seed | 1) * 17;
    spool_opts o = { .dir = NULL, .mem_cap = 4096 };
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    size_t n = 100000;
    unsigned char *b = body_new(n, &s);
    assert_int_equal(spool_begin(sp, NULL, 0), 0);
    feed(sp, b, n, 9000, &s, 0);
    assert_int_equal(spool_finish(sp), 0);
    assert_false(spool_spilled(sp));
    assert_int_equal(spool_error(sp), 0);
    assert_null(spool_data(sp));
    char c;
    assert_int_equal(spool_read(sp, 0, &c, 1), -ENODATA);
    uint8_t want[20];
    sha1_of(b, n, NULL, 0, want);
    assert_memory_equal(spool_payload_sha1(sp), want, 20);
    free(b);
    spool_free(sp);
}

/* The whole decompressed content of the WARC files in dir (gzread reads the
 * members one after another). */
static char *warc_text(const char *dir, size_t *len)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char *out = NULL;
    size_t n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 8 || strcmp(e->d_name + l - 8, ".warc.gz") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        gzFile g = gzopen(path, "rb");
        assert_non_null(g);
        char buf[65536];
        int r;
        while ((r = gzread(g, buf, sizeof buf)) > 0) {
            out = realloc(out, n + (size_t)r + 1);
            assert_non_null(out);
            memcpy(out + n, buf, (size_t)r);
            n += (size_t)r;
        }
        gzclose(g);
    }
    closedir(d);
    if (out)
        out[n] = '\0';
    *len = n;
    return out;
}

static const char *find(const char *h, size_t hn, const void *needle, size_t nn)
{
    return memmem(h, hn, needle, nn);
}

/* One fetch through the writer, the payload streamed from a spool that
 * spilled to a file; the same fetch with the payload in memory gives the
 * same digests and the same record block. hdr_te: a chunked response, so
 * the stored header block differs from the one digested as it came and
 * the writer digests the block itself (reading the spool). */
static void streamed_payload_matches_buffered(bool hdr_te)
{
    uint64_t s = (seed | 1) * 23;
    const char *hdr = hdr_te ? "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n"
                             : HDR;
    size_t n = 250000;
    unsigned char *b = body_new(n, &s);
    char *sdir = tmpdir_new();
    spool_opts o = { .dir = sdir, .mem_cap = 4096 };
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    assert_int_equal(spool_begin(sp, hdr, strlen(hdr)), 0);
    feed(sp, b, n, 16384, &s, 0);
    assert_int_equal(spool_finish(sp), 0);
    assert_true(spool_spilled(sp));

    warc_result r[2];
    char *texts[2];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        char *wdir = tmpdir_new();
        warc_opts wo = { .dir = wdir, .prefix = "t", .revisits = true };
        char err[256];
        warc_writer *w = warc_open(&wo, err, sizeof err);
        assert_non_null(w);
        warc_fetch f = { .uri = "http://example.com/big", .date_ms = 1700000000000,
                         .headers = hdr, .headers_len = strlen(hdr), .payload_len = n,
                         .status = 200 };
        if (k == 0) {
            f.payload = b;
        } else {
            f.payload_read = spool_read;
            f.payload_ctx = sp;
            f.payload_sha1 = spool_payload_sha1(sp);
            f.block_sha1 = spool_block_sha1(sp);
        }
        assert_int_equal(warc_write_fetch(w, &f, &r[k]), 0);
        /* the same payload again: a revisit either way */
        warc_result again;
        f.uri = "http://example.com/copy";
        assert_int_equal(warc_write_fetch(w, &f, &again), 0);
        assert_true(again.was_revisit);
        assert_int_equal(warc_close(w), 0);
        texts[k] = warc_text(wdir, &lens[k]);
        assert_non_null(texts[k]);
        rm_rf(wdir);
        free(wdir);
    }
    assert_string_equal(r[0].payload_digest, r[1].payload_digest);
    const char *bd[2];
    for (int k = 0; k < 2; k++) {
        assert_non_null(find(texts[k], lens[k], b, n)); /* the payload, whole */
        const char *resp = find(texts[k], lens[k], "WARC-Type: response", 19);
        assert_non_null(resp);
        bd[k] = find(resp, lens[k] - (size_t)(resp - texts[k]), "WARC-Block-Digest: ", 19);
        assert_non_null(bd[k]);
    }
    assert_memory_equal(bd[0], bd[1], 19 + 37);
    /* and it is the digest of the stored block: header block + payload */
    const char *blk = strstr(bd[1], "\r\n\r\n") + 4;
    size_t hl = (size_t)(strstr(blk, "\r\n\r\n") + 4 - blk);
    uint8_t sha[20];
    char text[38];
    sha1_of(blk, hl, b, n, sha);
    warc_digest_text(sha, text);
    assert_memory_equal(bd[1] + 19, text, 37);
    if (hdr_te)
        assert_non_null(strstr(blk, "X-Crawld-Transfer-Encoding: chunked"));
    free(texts[0]);
    free(texts[1]);
    free(b);
    spool_free(sp);
    rm_rf(sdir);
    free(sdir);
}

static void streamed_warc_plain(void **state)
{
    (void)state;
    streamed_payload_matches_buffered(false);
}

static void streamed_warc_chunked(void **state)
{
    (void)state;
    streamed_payload_matches_buffered(true);
}

/* A spool that failed hands out an error, and the writer fails the fetch
 * with it instead of writing a record with a wrong body. */
static void failed_reader_fails_the_write(void **state)
{
    (void)state;
    char *sdir = tmpdir_new();
    spool_opts o = { .dir = sdir, .mem_cap = 4096, .write_fn = full_disk };
    fail_after = 0;
    spool *sp = spool_new(&o);
    assert_non_null(sp);
    assert_int_equal(spool_begin(sp, HDR, strlen(HDR)), 0);
    char big[10000];
    memset(big, 'z', sizeof big);
    assert_int_equal(spool_append(sp, big, sizeof big), -ENOSPC);
    assert_int_equal(spool_finish(sp), 0);
    char *wdir = tmpdir_new();
    warc_opts wo = { .dir = wdir, .prefix = "t" };
    char err[256];
    warc_writer *w = warc_open(&wo, err, sizeof err);
    assert_non_null(w);
    /* block digest not given: the writer must read the (failed) spool */
    warc_fetch f = { .uri = "http://example.com/x", .headers = HDR, .headers_len = strlen(HDR),
                     .payload_len = sizeof big, .payload_read = spool_read, .payload_ctx = sp,
                     .payload_sha1 = spool_payload_sha1(sp), .status = 200 };
    assert_int_equal(warc_write_fetch(w, &f, NULL), -ENOSPC);
    warc_stats st;
    warc_stats_get(w, &st);
    assert_int_equal(st.responses, 0);
    assert_int_equal(warc_close(w), 0);
    spool_free(sp);
    rm_rf(wdir);
    rm_rf(sdir);
    free(wdir);
    free(sdir);
}

int main(void)
{
    const char *e = getenv("SPOOL_SEED");
    seed = e ? (unsigned)strtoul(e, NULL, 10) : (unsigned)getpid();
    printf("test_spool: SPOOL_SEED=%u\n", seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_body_in_memory),
        cmocka_unit_test(big_body_spills_to_unlinked_file),
        cmocka_unit_test(full_disk_is_sticky_and_digests_hold),
        cmocka_unit_test(digest_only_stores_nothing),
        cmocka_unit_test(streamed_warc_plain),
        cmocka_unit_test(streamed_warc_chunked),
        cmocka_unit_test(failed_reader_fails_the_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
