/* tests/test_fetch: crawler/fetch and crawler/decode.
 *
 * The fetcher is tested against servers started here on 127.0.0.1: a
 * libmicrohttpd daemon (port 0, thread per connection, so a handler may
 * sleep) serving exactly the edge cases below, and a tiny raw TCP server
 * for replies MHD cannot produce (a 1xx block, a TLS client talking to
 * plain HTTP, a short body). Compressed bodies are made here with zlib and
 * with the brotli encoder (libbrotlienc.so.1, opened with dlopen because the
 * build links only the decoder). The decoder also has unit cases of its own
 * that need no network.
 *
 * Why one file of about 2,300 lines: one test binary per module (STYLE.md);
 * its 51 cases share the test servers and the body makers (zlib, brotli,
 * bombs) at the top. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <brotli/encode.h>
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/decode.h"
#include "crawler/web/fetch.h"

#define UA "crawld-test/1.0 (+http://example.invalid/bot)"
#define MAXJOBS 600
#define WAIT_MS 60000

/* ---- helpers ------------------------------------------------------------ */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void buf_must(cr_buf *b, const void *p, size_t n)
{
    if (cr_buf_append(b, p, n) != 0) {
        fprintf(stderr, "test buffer full\n");
        abort();
    }
}

/* zlib: wbits 31 = gzip, 15 = zlib, -15 = raw deflate. */
static void zcompress(const void *in, size_t n, int wbits, cr_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    unsigned char tmp[16384];
    z.next_in = (unsigned char *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    int r;
    do {
        z.next_out = tmp;
        z.avail_out = sizeof tmp;
        r = deflate(&z, Z_FINISH);
        buf_must(out, tmp, sizeof tmp - z.avail_out);
    } while (r == Z_OK);
    if (r != Z_STREAM_END)
        abort();
    deflateEnd(&z);
}

/* The brotli encoder, found at run time. */
static struct {
    void *lib;
    BrotliEncoderState *(*create)(brotli_alloc_func, brotli_free_func, void *);
    BROTLI_BOOL (*set)(BrotliEncoderState *, BrotliEncoderParameter, uint32_t);
    BROTLI_BOOL (*stream)(BrotliEncoderState *, BrotliEncoderOperation, size_t *,
                          const uint8_t **, size_t *, uint8_t **, size_t *);
    void (*destroy)(BrotliEncoderState *);
} brenc;

static int brenc_load(void)
{
    brenc.lib = dlopen("libbrotlienc.so.1", RTLD_NOW);
    if (brenc.lib == NULL) {
        fprintf(stderr, "cannot open libbrotlienc.so.1 (Debian package libbrotli1): %s\n",
                dlerror());
        return -1;
    }
    brenc.create = (BrotliEncoderState * (*)(brotli_alloc_func, brotli_free_func, void *))
        dlsym(brenc.lib, "BrotliEncoderCreateInstance");
    brenc.set = (BROTLI_BOOL(*)(BrotliEncoderState *, BrotliEncoderParameter, uint32_t))
        dlsym(brenc.lib, "BrotliEncoderSetParameter");
    brenc.stream = (BROTLI_BOOL(*)(BrotliEncoderState *, BrotliEncoderOperation, size_t *,
                                   const uint8_t **, size_t *, uint8_t **, size_t *))
        dlsym(brenc.lib, "BrotliEncoderCompressStream");
    brenc.destroy = (void (*)(BrotliEncoderState *))dlsym(brenc.lib, "BrotliEncoderDestroyInstance");
    return brenc.create && brenc.set && brenc.stream && brenc.destroy ? 0 : -1;
}

/* Brotli-compresses `repeat` copies of in[0..n). */
static void brcompress(const void *in, size_t n, size_t repeat, int quality, cr_buf *out)
{
    BrotliEncoderState *s = brenc.create(NULL, NULL, NULL);
    if (s == NULL)
        abort();
    brenc.set(s, BROTLI_PARAM_QUALITY, (uint32_t)quality);
    brenc.set(s, BROTLI_PARAM_LGWIN, 22);
    uint8_t tmp[16384];
    for (size_t k = 0; k <= repeat; k++) {
        bool last = k == repeat;
        const uint8_t *next_in = in;
        size_t avail_in = last ? 0 : n;
        for (;;) {
            uint8_t *next_out = tmp;
            size_t avail_out = sizeof tmp;
            if (!brenc.stream(s, last ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_PROCESS,
                              &avail_in, &next_in, &avail_out, &next_out, NULL))
                abort();
            buf_must(out, tmp, sizeof tmp - avail_out);
            if (avail_in == 0 && avail_out != 0)
                break;
        }
    }
    brenc.destroy(s);
}

/* A gzip stream of `mb` MiB of zeros, about 1 KB per MiB: the deflate output
 * of 1 MiB of zeros ended by a full flush does not depend on what came
 * before, so it is made once and repeated. */
static int make_gzip_bomb(size_t mb, cr_buf *out)
{
    static unsigned char zeros[1 << 20];
    unsigned char p1[65536], p2[65536];
    size_t n1, n2;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    z.next_in = zeros;
    z.avail_in = sizeof zeros;
    z.next_out = p1;
    z.avail_out = sizeof p1;
    if (deflate(&z, Z_FULL_FLUSH) != Z_OK || z.avail_in != 0)
        return -1;
    n1 = sizeof p1 - z.avail_out;
    z.next_in = zeros;
    z.avail_in = sizeof zeros;
    z.next_out = p2;
    z.avail_out = sizeof p2;
    if (deflate(&z, Z_FULL_FLUSH) != Z_OK || z.avail_in != 0)
        return -1;
    n2 = sizeof p2 - z.avail_out;
    if (n1 != n2 || memcmp(p1, p2, n1) != 0)
        return -1;
    unsigned char fin[64];
    z.next_in = zeros;
    z.avail_in = 0;
    z.next_out = fin;
    z.avail_out = sizeof fin;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        return -1;
    size_t nfin = sizeof fin - z.avail_out;
    deflateEnd(&z);

    static const unsigned char gzhdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    buf_must(out, gzhdr, sizeof gzhdr);
    for (size_t i = 0; i < mb; i++)
        buf_must(out, p1, n1);
    buf_must(out, fin, nfin);
    uLong crc_mb = crc32(0, zeros, sizeof zeros);
    uLong crc = crc_mb;
    for (size_t i = 1; i < mb; i++)
        crc = crc32_combine(crc, crc_mb, (z_off_t)sizeof zeros);
    uint64_t isize = (uint64_t)mb << 20;
    unsigned char trailer[8];
    for (int i = 0; i < 4; i++) {
        trailer[i] = (unsigned char)(crc >> (8 * i));
        trailer[4 + i] = (unsigned char)(isize >> (8 * i));
    }
    buf_must(out, trailer, sizeof trailer);
    return 0;
}

/* ---- bodies the server serves -------------------------------------------- */

static cr_buf g_html, g_text, g_gz, g_zlib, g_rawdef, g_br, g_gzbr, g_bomb, g_brbomb, g_big,
    g_corrupt, g_truncgz;
static size_t g_bomb_decoded;

static const char html_page[] =
    "<!DOCTYPE html>\n<html><head><title>t</title></head>\n"
    "<body><p>Hello, fetcher.</p><a href=\"/next\">next</a></body></html>\n";

static void make_text(cr_buf *b, size_t n)
{
    static const char *const words[] = {"crawl", "frontier", "bloom", "seen", "fetch",
                                        "<a href=\"/x\">", "link", "host", "robots",
                                        "delay", "\n", "archive", "</a>", "page"};
    uint32_t s = 12345;
    while (b->len < n) {
        s = s * 1103515245u + 12345u;
        const char *w = words[(s >> 16) % (sizeof words / sizeof words[0])];
        buf_must(b, w, strlen(w));
        buf_must(b, " ", 1);
    }
    b->len = n;
}

static int make_bodies(void)
{
    cr_buf *all[] = {&g_html, &g_text, &g_gz, &g_zlib, &g_rawdef, &g_br, &g_gzbr,
                     &g_bomb, &g_brbomb, &g_big, &g_corrupt, &g_truncgz};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        cr_buf_init(all[i], 0);
    buf_must(&g_html, html_page, strlen(html_page));
    make_text(&g_text, 300000);
    zcompress(g_text.data, g_text.len, 31, &g_gz);
    zcompress(g_text.data, g_text.len, 15, &g_zlib);
    zcompress(g_text.data, g_text.len, -15, &g_rawdef);
    if (brenc_load() != 0)
        return -1;
    brcompress(g_text.data, g_text.len, 1, 5, &g_br);
    brcompress(g_gz.data, g_gz.len, 1, 5, &g_gzbr); /* Content-Encoding: gzip, br */
    if (make_gzip_bomb(1024, &g_bomb) != 0)
        return -1;
    g_bomb_decoded = (size_t)1 << 30;
    static unsigned char zeros[1 << 20];
    brcompress(zeros, sizeof zeros, 64, 1, &g_brbomb);
    for (size_t i = 0; g_big.len < (4u << 20); i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "line %zu of a big plain body\n", i);
        buf_must(&g_big, line, (size_t)n);
    }
    buf_must(&g_corrupt, g_gz.data, g_gz.len);
    for (size_t i = g_corrupt.len / 2; i < g_corrupt.len / 2 + 64; i++)
        g_corrupt.data[i] ^= 0x5a;
    buf_must(&g_truncgz, g_gz.data, g_gz.len / 2);
    return 0;
}

static void free_bodies(void)
{
    cr_buf *all[] = {&g_html, &g_text, &g_gz, &g_zlib, &g_rawdef, &g_br, &g_gzbr,
                     &g_bomb, &g_brbomb, &g_big, &g_corrupt, &g_truncgz};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        cr_buf_release(all[i]);
    if (brenc.lib)
        dlclose(brenc.lib);
}

/* ---- the MHD test server --------------------------------------------------- */

static struct {
    struct MHD_Daemon *d;
    unsigned short port;
    atomic_int connections;    /* MHD_CONNECTION_NOTIFY_STARTED */
    atomic_int requests;
    atomic_int target_hits;    /* requests for /target */
    atomic_int hanging;        /* handlers in /hang right now */
    atomic_int delayed;        /* handlers in /delay right now */
    atomic_int epoch;          /* bumped to release /hang */
} S;

static void on_conn(void *cls, struct MHD_Connection *c, void **sock_ctx,
                    enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    (void)c;
    (void)sock_ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&S.connections, 1);
}

static ssize_t slow_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    int epoch = (int)(intptr_t)cls;
    (void)max;
    if (pos >= 300 || atomic_load(&S.epoch) != epoch)
        return MHD_CONTENT_READER_END_OF_STREAM;
    sleep_ms(100);
    buf[0] = 'x';
    return 1;
}

static ssize_t chunk_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    if (pos >= g_text.len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = 1 + (size_t)((pos * 7919) % 5000);
    if (n > max)
        n = max;
    if (n > g_text.len - pos)
        n = (size_t)(g_text.len - pos);
    memcpy(buf, g_text.data + pos, n);
    return (ssize_t)n;
}

static struct MHD_Response *from_buf(const cr_buf *b)
{
    return MHD_create_response_from_buffer(b->len, b->data, MHD_RESPMEM_PERSISTENT);
}

static struct MHD_Response *from_str(const char *s)
{
    return MHD_create_response_from_buffer(strlen(s), (void *)(uintptr_t)s,
                                           MHD_RESPMEM_MUST_COPY);
}

static void hang(long max_ms)
{
    int epoch = atomic_load(&S.epoch);
    int64_t end = mono_ms() + max_ms;
    atomic_fetch_add(&S.hanging, 1);
    while (atomic_load(&S.epoch) == epoch && mono_ms() < end)
        sleep_ms(5);
    atomic_fetch_sub(&S.hanging, 1);
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)method;
    (void)version;
    (void)upload;
    struct MHD_Response *r = NULL;
    unsigned code = 200;
    const char *ctype = "text/plain";
    const char *cenc = NULL;
    char tmp[2048];

    /* MHD calls twice: once when the headers are in (answering then would
     * make it close the connection), then once the request is complete. */
    static int first_call_marker;
    if (*con_cls == NULL) {
        *con_cls = &first_call_marker;
        return MHD_YES;
    }
    if (*upload_size != 0) {
        *upload_size = 0;
        return MHD_YES;
    }
    atomic_fetch_add(&S.requests, 1);
    if (strcmp(url, "/html") == 0) {
        r = from_buf(&g_html);
        ctype = "text/html; charset=utf-8";
    } else if (strcmp(url, "/gzip") == 0) {
        r = from_buf(&g_gz);
        cenc = "gzip";
    } else if (strcmp(url, "/deflate") == 0) {
        r = from_buf(&g_zlib);
        cenc = "deflate";
    } else if (strcmp(url, "/rawdeflate") == 0) {
        r = from_buf(&g_rawdef);
        cenc = "deflate";
    } else if (strcmp(url, "/br") == 0) {
        r = from_buf(&g_br);
        cenc = "br";
    } else if (strcmp(url, "/gzip-br") == 0) {
        r = from_buf(&g_gzbr);
        cenc = "gzip, br";
    } else if (strcmp(url, "/bomb") == 0) {
        r = from_buf(&g_bomb);
        cenc = "gzip";
        ctype = "text/html";
    } else if (strcmp(url, "/brbomb") == 0) {
        r = from_buf(&g_brbomb);
        cenc = "br";
        ctype = "text/html";
    } else if (strcmp(url, "/big") == 0) {
        r = from_buf(&g_big);
    } else if (strcmp(url, "/corruptgzip") == 0) {
        r = from_buf(&g_corrupt);
        cenc = "gzip";
    } else if (strcmp(url, "/truncgzip") == 0) {
        r = from_buf(&g_truncgz);
        cenc = "gzip";
    } else if (strcmp(url, "/zstd") == 0) {
        r = from_buf(&g_html);
        cenc = "zstd";
    } else if (strcmp(url, "/hugeheaders") == 0) {
        r = from_buf(&g_html);
        char name[32], value[1001];
        memset(value, 'a', 1000);
        value[1000] = '\0';
        for (int i = 0; i < 300; i++) {
            snprintf(name, sizeof name, "X-Filler-%03d", i);
            MHD_add_response_header(r, name, value);
        }
    } else if (strcmp(url, "/giantline") == 0) {
        r = from_buf(&g_html);
        static char big[200001];
        memset(big, 'b', sizeof big - 1);
        MHD_add_response_header(r, "X-Giant", big);
    } else if (strcmp(url, "/redirect") == 0) {
        r = from_str("moved\n");
        code = 301;
        MHD_add_response_header(r, "Location", "/target?from=redirect");
    } else if (strcmp(url, "/target") == 0) {
        atomic_fetch_add(&S.target_hits, 1);
        r = from_buf(&g_html);
    } else if (strncmp(url, "/status/", 8) == 0) {
        code = (unsigned)strtoul(url + 8, NULL, 10);
        r = from_str("status page\n");
        if (strstr(url, "date")) {
            time_t t = time(NULL) + 3600;
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(tmp, sizeof tmp, "%a, %d %b %Y %H:%M:%S GMT", &tm);
            MHD_add_response_header(r, "Retry-After", tmp);
        } else if (code == 503) {
            MHD_add_response_header(r, "Retry-After", "120");
        }
    } else if (strcmp(url, "/slow") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, slow_reader,
                                              (void *)(intptr_t)atomic_load(&S.epoch), NULL);
    } else if (strcmp(url, "/hang") == 0) {
        hang(20000);
        r = from_buf(&g_html);
    } else if (strcmp(url, "/delay") == 0) {
        const char *ms = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "ms");
        atomic_fetch_add(&S.delayed, 1);
        sleep_ms(ms ? strtol(ms, NULL, 10) : 100);
        atomic_fetch_sub(&S.delayed, 1);
        r = from_buf(&g_html);
    } else if (strcmp(url, "/echo") == 0) {
        const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
        const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
        const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
        const char *ac = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
        const char *ck = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cookie");
        snprintf(tmp, sizeof tmp, "host=%s\nua=%s\nae=%s\naccept=%s\ncookie=%s\n", h ? h : "-",
                 ua ? ua : "-", ae ? ae : "-", ac ? ac : "-", ck ? ck : "-");
        r = from_str(tmp);
    } else if (strcmp(url, "/chunked") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, chunk_reader, NULL, NULL);
    } else if (strncmp(url, "/n/", 3) == 0) {
        snprintf(tmp, sizeof tmp, "<html><body>page %s</body></html>\n", url + 3);
        r = from_str(tmp);
        ctype = "text/html";
        if (r && MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "close"))
            MHD_add_response_header(r, "Connection", "close");
    } else {
        code = 404;
        r = from_str("not found\n");
    }
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (cenc)
        MHD_add_response_header(r, "Content-Encoding", cenc);
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static void release_hangs(void)
{
    atomic_fetch_add(&S.epoch, 1);
    int64_t end = mono_ms() + 10000;
    while ((atomic_load(&S.hanging) > 0 || atomic_load(&S.delayed) > 0) && mono_ms() < end)
        sleep_ms(5);
}

static int server_start(void)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    S.d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                               MHD_USE_POLL,
                           0, NULL, NULL, serve, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                           MHD_OPTION_NOTIFY_CONNECTION, on_conn, NULL,
                           MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(2u << 20),
                           MHD_OPTION_CONNECTION_LIMIT, (unsigned)2000, MHD_OPTION_END);
    if (S.d == NULL)
        return -1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(S.d, MHD_DAEMON_INFO_BIND_PORT);
    if (info == NULL || info->port == 0)
        return -1;
    S.port = info->port;
    return 0;
}

/* ---- a raw TCP server for hand-made replies ---------------------------------- */

struct raw_srv {
    int fd;
    unsigned short port;
    pthread_t tid;
    const char *reply;
    size_t reply_len;
    bool wait_request;         /* read up to the end of the request first */
};

static void *raw_main(void *arg)
{
    struct raw_srv *s = arg;
    struct pollfd pfd = {s->fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0)
        return NULL;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char req[8192];
    size_t have = 0;
    while (have < sizeof req - 1) {
        struct pollfd cp = {c, POLLIN, 0};
        if (poll(&cp, 1, 5000) <= 0)
            break;
        ssize_t n = read(c, req + have, sizeof req - 1 - have);
        if (n <= 0)
            break;
        have += (size_t)n;
        req[have] = '\0';
        if (!s->wait_request || strstr(req, "\r\n\r\n"))
            break;
    }
    size_t off = 0;
    while (off < s->reply_len) {
        ssize_t n = write(c, s->reply + off, s->reply_len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(c, SHUT_WR);
    for (;;) { /* wait for the client to close */
        struct pollfd cp = {c, POLLIN, 0};
        if (poll(&cp, 1, 5000) <= 0 || read(c, req, sizeof req) <= 0)
            break;
    }
    close(c);
    return NULL;
}

static int listen_socket(int backlog, unsigned short *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        (backlog >= 0 && listen(fd, backlog) != 0) ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static void raw_start(struct raw_srv *s, const char *reply, size_t len, bool wait_request)
{
    s->fd = listen_socket(8, &s->port);
    assert_true(s->fd >= 0);
    s->reply = reply;
    s->reply_len = len;
    s->wait_request = wait_request;
    assert_int_equal(pthread_create(&s->tid, NULL, raw_main, s), 0);
}

static void raw_stop(struct raw_srv *s)
{
    pthread_join(s->tid, NULL);
    close(s->fd);
}

/* ---- collecting what the hooks report --------------------------------------- */

struct rec {
    int responses, raws, bodies, dones;
    bool order_bad;
    int thread;                /* fetcher_thread_index of the first hook; -2: none yet */
    bool thread_mixed;
    fetch_job job;             /* as seen in on_done (url not kept) */
    long status;
    int version;
    char ip[64];
    char ctype[128];
    char cenc[64];
    char loc[256];
    char ra[64];
    long ra_s;
    cr_buf head, req, raw, body; /* capped copies */
    uint64_t raw_n, body_n;
    fetch_result res;
    char reason[512];
};

struct coll {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rec recs[MAXJOBS];
    size_t done_total;
    bool cancel_on_response;
    bool refuse_odd_sends;     /* may_send refuses jobs with an odd id */
    int may_send_calls;
    size_t keep;               /* bytes of raw/body kept per job */
    /* chain: on_done of job 0 submits chain_url as job 1 and tries a stop */
    fetcher *chain_f;
    const char *chain_url;
    int chain_rc, stop_rc;
};

static struct coll *coll_new(size_t keep)
{
    struct coll *c = calloc(1, sizeof *c);
    assert_non_null(c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    c->keep = keep;
    for (size_t i = 0; i < MAXJOBS; i++) {
        c->recs[i].thread = -2;
        cr_buf_init(&c->recs[i].head, 0);
        cr_buf_init(&c->recs[i].req, 0);
        cr_buf_init(&c->recs[i].raw, keep);
        cr_buf_init(&c->recs[i].body, keep);
    }
    return c;
}

static void coll_free(struct coll *c)
{
    for (size_t i = 0; i < MAXJOBS; i++) {
        cr_buf_release(&c->recs[i].head);
        cr_buf_release(&c->recs[i].req);
        cr_buf_release(&c->recs[i].raw);
        cr_buf_release(&c->recs[i].body);
    }
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static struct rec *rec_of(struct coll *c, const fetch_job *job)
{
    struct rec *r = &c->recs[job->id % MAXJOBS];
    int t = fetcher_thread_index();
    if (r->thread == -2)
        r->thread = t;
    else if (r->thread != t)
        r->thread_mixed = true;
    if (r->dones > 0)
        r->order_bad = true; /* nothing may follow on_done */
    return r;
}

static void copy_str(char *dst, size_t n, const char *s)
{
    snprintf(dst, n, "%s", s ? s : "");
}

static int h_response(void *ctx, const fetch_job *job, const fetch_response *resp)
{
    struct coll *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct rec *r = rec_of(c, job);
    if (r->raws || r->bodies)
        r->order_bad = true;
    r->responses++;
    r->status = resp->status;
    r->version = resp->http_version;
    copy_str(r->ip, sizeof r->ip, resp->remote_ip);
    copy_str(r->ctype, sizeof r->ctype, resp->content_type);
    copy_str(r->cenc, sizeof r->cenc, resp->content_encoding);
    copy_str(r->loc, sizeof r->loc, resp->location);
    copy_str(r->ra, sizeof r->ra, resp->retry_after);
    r->ra_s = resp->retry_after_s;
    cr_buf_clear(&r->head);
    cr_buf_append(&r->head, resp->headers, resp->headers_len);
    cr_buf_clear(&r->req);
    cr_buf_append(&r->req, resp->request, resp->request_len);
    bool cancel = c->cancel_on_response;
    pthread_mutex_unlock(&c->mu);
    return cancel ? 1 : 0;
}

static int h_raw(void *ctx, const fetch_job *job, const char *data, size_t len)
{
    struct coll *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct rec *r = rec_of(c, job);
    if (r->responses != 1)
        r->order_bad = true;
    r->raws++;
    r->raw_n += len;
    if (r->raw.len + len <= c->keep)
        cr_buf_append(&r->raw, data, len);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static int h_body(void *ctx, const fetch_job *job, const char *data, size_t len)
{
    struct coll *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct rec *r = rec_of(c, job);
    if (r->responses != 1 || r->raws == 0)
        r->order_bad = true;
    r->bodies++;
    r->body_n += len;
    if (r->body.len + len <= c->keep)
        cr_buf_append(&r->body, data, len);
    pthread_mutex_unlock(&c->mu);
    return 0;
}

static void h_done(void *ctx, const fetch_job *job, const fetch_result *res)
{
    struct coll *c = ctx;
    pthread_mutex_lock(&c->mu);
    struct rec *r = rec_of(c, job);
    r->dones++;
    r->job = *job;
    r->job.url = NULL;
    r->res = *res;
    copy_str(r->reason, sizeof r->reason, res->reason);
    r->res.reason = r->reason;
    bool chain = job->id == 0 && c->chain_url != NULL;
    if (!chain) {
        c->done_total++;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (chain) {
        /* as the frontier would do with a Location: from the hook, no wait */
        fetch_job next = {1, c->chain_url, job->hops + 1, NULL};
        int rc = fetcher_submit(c->chain_f, &next, -1);
        int stop_rc = fetcher_stop(c->chain_f, 0);
        pthread_mutex_lock(&c->mu);
        c->chain_rc = rc;
        c->stop_rc = stop_rc;
        c->done_total++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

static fetch_hooks hooks_for(struct coll *c)
{
    fetch_hooks h = { .on_response = h_response, .on_raw = h_raw, .on_body = h_body,
                      .on_done = h_done, .ctx = c };
    return h;
}

/* Waits until n jobs are done; false on timeout. */
static bool coll_wait(struct coll *c, size_t n)
{
    int64_t end = mono_ms() + WAIT_MS;
    pthread_mutex_lock(&c->mu);
    while (c->done_total < n && mono_ms() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    bool ok = c->done_total >= n;
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static fetch_opts base_opts(void)
{
    fetch_opts o;
    memset(&o, 0, sizeof o);
    o.threads = 1;
    o.connections = 4;
    o.connect_timeout_ms = 5000;
    o.timeout_ms = 30000;
    o.max_body_bytes = 8u << 20;
    o.max_header_bytes = 64u << 10;
    o.user_agent = UA;
    return o;
}

static void url_of(char *out, size_t n, const char *path)
{
    snprintf(out, n, "http://127.0.0.1:%u%s", (unsigned)S.port, path);
}

static void submit(fetcher *f, uint64_t id, const char *url, unsigned hops)
{
    fetch_job j = {id, url, hops, NULL};
    assert_int_equal(fetcher_submit(f, &j, -1), 0);
}

/* Fetches one URL with the given options; returns the collector. */
static struct coll *fetch_one(const fetch_opts *o, const char *url, size_t keep)
{
    struct coll *c = coll_new(keep);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(o, &h, &f), 0);
    submit(f, 0, url, 0);
    assert_true(coll_wait(c, 1));
    assert_int_equal(fetcher_stop(f, 1000), 0);
    fetch_stats st;
    fetcher_stats(f, &st);
    assert_int_equal(st.done, 1);
    assert_int_equal(st.in_flight, 0);
    fetcher_free(f);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->dones, 1);
    assert_false(r->order_bad);
    assert_false(r->thread_mixed);
    assert_int_equal(r->thread, 0);
    assert_true(r->responses <= 1);
    return c;
}

static struct coll *fetch_path(const char *path, size_t keep)
{
    char url[256];
    fetch_opts o = base_opts();
    url_of(url, sizeof url, path);
    return fetch_one(&o, url, keep);
}

static void assert_buf_eq(const cr_buf *got, const cr_buf *want)
{
    assert_int_equal(got->len, want->len);
    assert_memory_equal(got->data, want->data, want->len);
}

/* ---- decoder unit cases ---------------------------------------------------- */

struct sinkbuf {
    cr_buf b;
    size_t calls;
    size_t stop_after;         /* stop at this many calls (0: never) */
};

static int sink_cb(void *ctx, const char *p, size_t n)
{
    struct sinkbuf *s = ctx;
    s->calls++;
    buf_must(&s->b, p, n);
    return s->stop_after && s->calls >= s->stop_after;
}

/* Feeds data in pieces of `step` bytes; returns the last decoder rc. */
static int decode_all(const char *ce, size_t max, const void *data, size_t len, size_t step,
                      struct sinkbuf *out)
{
    decoder *d = NULL;
    int rc = decoder_new(ce, max, &d, NULL, 0);
    if (rc < 0)
        return rc;
    const unsigned char *p = data;
    for (size_t off = 0; off < len && rc == 0; off += step) {
        size_t n = len - off < step ? len - off : step;
        rc = decoder_write(d, p + off, n, sink_cb, out);
    }
    if (rc == 0)
        rc = decoder_finish(d);
    assert_int_equal(decoder_out_bytes(d), out->b.len);
    decoder_free(d);
    return rc;
}

static void decode_case(const char *ce, const cr_buf *enc, size_t step)
{
    struct sinkbuf s = {{0}, 0, 0};
    cr_buf_init(&s.b, 0);
    assert_int_equal(decode_all(ce, 0, enc->data, enc->len, step, &s), 0);
    assert_buf_eq(&s.b, &g_text);
    cr_buf_release(&s.b);
}

static void decode_gzip_any_split(void **state)
{
    (void)state;
    decode_case("gzip", &g_gz, 1);
    decode_case("x-gzip", &g_gz, 7);
    decode_case("GZIP", &g_gz, 100000);
}

static void decode_deflate_zlib_and_raw(void **state)
{
    (void)state;
    decode_case("deflate", &g_zlib, 1);
    decode_case("deflate", &g_zlib, 4096);
    decode_case("deflate", &g_rawdef, 1);
    decode_case("deflate", &g_rawdef, 4096);
}

static void decode_br_any_split(void **state)
{
    (void)state;
    decode_case("br", &g_br, 1);
    decode_case("br", &g_br, 3000);
}

static void decode_layers_in_reverse_order(void **state)
{
    (void)state;
    decode_case("gzip, br", &g_gzbr, 1);
    decode_case(" gzip ,identity,  br ", &g_gzbr, 777);
    struct sinkbuf s = {{0}, 0, 0};
    cr_buf_init(&s.b, 0);
    /* the same bytes announced in the wrong order are corrupt */
    assert_int_equal(decode_all("br, gzip", 0, g_gzbr.data, g_gzbr.len, 4096, &s), -EBADMSG);
    cr_buf_release(&s.b);
}

static void decode_identity_passes_through(void **state)
{
    (void)state;
    decode_case(NULL, &g_text, 5000);
    decode_case("", &g_text, 5000);
    decode_case("identity", &g_text, 5000);
}

static void decode_gzip_members_and_trailing_junk(void **state)
{
    (void)state;
    cr_buf two, want;
    cr_buf_init(&two, 0);
    cr_buf_init(&want, 0);
    zcompress("first member, ", 14, 31, &two);
    zcompress("second member", 13, 31, &two);
    buf_must(&two, "\0\0\0junk after the end", 21);
    buf_must(&want, "first member, second member", 27);
    for (size_t step = 1; step <= two.len; step += 9) {
        struct sinkbuf s = {{0}, 0, 0};
        cr_buf_init(&s.b, 0);
        assert_int_equal(decode_all("gzip", 0, two.data, two.len, step, &s), 0);
        assert_buf_eq(&s.b, &want);
        cr_buf_release(&s.b);
    }
    cr_buf_release(&two);
    cr_buf_release(&want);
}

static void decode_cap_is_exact(void **state)
{
    (void)state;
    const char *ces[] = {"gzip", "deflate", "br", NULL};
    const cr_buf *encs[] = {&g_gz, &g_zlib, &g_br, &g_text};
    for (int i = 0; i < 4; i++) {
        struct sinkbuf s = {{0}, 0, 0};
        cr_buf_init(&s.b, 0);
        assert_int_equal(decode_all(ces[i], 100001, encs[i]->data, encs[i]->len, 999, &s),
                         -E2BIG);
        assert_int_equal(s.b.len, 100001);
        assert_memory_equal(s.b.data, g_text.data, 100001);
        cr_buf_release(&s.b);
        /* a body exactly at the cap is not cut */
        cr_buf_init(&s.b, 0);
        assert_int_equal(decode_all(ces[i], g_text.len, encs[i]->data, encs[i]->len, 999, &s),
                         0);
        assert_int_equal(s.b.len, g_text.len);
        cr_buf_release(&s.b);
    }
}

static void decode_inner_layer_is_capped(void **state)
{
    (void)state;
    /* br(gzip bomb): the br layer yields 1 MiB+ of gzip data, capped at 64 KiB */
    cr_buf inner;
    cr_buf_init(&inner, 0);
    brcompress(g_bomb.data, g_bomb.len, 1, 5, &inner);
    struct sinkbuf s = {{0}, 0, 0};
    cr_buf_init(&s.b, 0);
    decoder *d = NULL;
    assert_int_equal(decoder_new("gzip, br", 65536, &d, NULL, 0), 0);
    assert_int_equal(decoder_write(d, inner.data, inner.len, sink_cb, &s), -E2BIG);
    assert_int_equal(decoder_out_bytes(d), 65536);
    assert_non_null(strstr(decoder_error(d), "cap"));
    decoder_free(d);
    cr_buf_release(&s.b);
    cr_buf_release(&inner);
}

static int count_any_sink(void *ctx, const char *p, size_t n)
{
    (void)p;
    *(uint64_t *)ctx += n;
    return 0;
}

static int atoi_safe_positive(const char *s)
{
    char *end = NULL;
    if (s == NULL)
        return 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v <= 0 || v > 10000000)
        return 0;
    return (int)v;
}

/* Counts decoded bytes and checks they are all zero. */
static int count_zero_sink(void *ctx, const char *p, size_t n)
{
    uint64_t *total = ctx;
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return 1;
    *total += n;
    return 0;
}

static void decode_bomb_is_what_it_claims(void **state)
{
    (void)state;
    /* the bomb builder is right: a 48 MiB one decodes fully, CRC included */
    cr_buf small;
    cr_buf_init(&small, 0);
    assert_int_equal(make_gzip_bomb(48, &small), 0);
    assert_true(small.len < 60000);
    decoder *d = NULL;
    assert_int_equal(decoder_new("gzip", 0, &d, NULL, 0), 0);
    uint64_t total = 0;
    for (size_t off = 0; off < small.len; off += 4096) {
        size_t n = small.len - off < 4096 ? small.len - off : 4096;
        assert_int_equal(decoder_write(d, small.data + off, n, count_zero_sink, &total), 0);
    }
    assert_int_equal(decoder_finish(d), 0);
    assert_int_equal(total, (uint64_t)48 << 20);
    decoder_free(d);
    cr_buf_release(&small);
}

static void decode_corrupt_is_sticky(void **state)
{
    (void)state;
    struct sinkbuf s = {{0}, 0, 0};
    cr_buf_init(&s.b, 0);
    decoder *d = NULL;
    assert_int_equal(decoder_new("gzip", 0, &d, NULL, 0), 0);
    assert_int_equal(decoder_write(d, g_corrupt.data, g_corrupt.len, sink_cb, &s), -EBADMSG);
    assert_non_null(strstr(decoder_error(d), "gzip: "));
    assert_int_equal(decoder_write(d, "x", 1, sink_cb, &s), -EBADMSG);
    assert_int_equal(decoder_finish(d), -EBADMSG);
    assert_true(s.b.len < g_text.len);
    decoder_free(d);
    cr_buf_release(&s.b);

    cr_buf_init(&s.b, 0);
    assert_int_equal(decode_all("br", 0, "\xff\xff\xff\xff garbage", 12, 3, &s), -EBADMSG);
    cr_buf_release(&s.b);
}

static void decode_truncated_streams(void **state)
{
    (void)state;
    const char *ces[] = {"gzip", "deflate", "deflate", "br"};
    const cr_buf *encs[] = {&g_gz, &g_zlib, &g_rawdef, &g_br};
    for (int i = 0; i < 4; i++) {
        struct sinkbuf s = {{0}, 0, 0};
        cr_buf_init(&s.b, 0);
        decoder *d = NULL;
        assert_int_equal(decoder_new(ces[i], 0, &d, NULL, 0), 0);
        assert_int_equal(decoder_write(d, encs[i]->data, encs[i]->len - 5, sink_cb, &s), 0);
        assert_int_equal(decoder_finish(d), -EPIPE);
        assert_non_null(strstr(decoder_error(d), "ended early"));
        decoder_free(d);
        cr_buf_release(&s.b);
    }
    /* one byte of a deflate stream: not even the header */
    decoder *d = NULL;
    struct sinkbuf s = {{0}, 0, 0};
    cr_buf_init(&s.b, 0);
    assert_int_equal(decoder_new("deflate", 0, &d, NULL, 0), 0);
    assert_int_equal(decoder_write(d, g_zlib.data, 1, sink_cb, &s), 0);
    assert_int_equal(decoder_finish(d), -EPIPE);
    decoder_free(d);
    /* no input at all is an empty body, not an error */
    assert_int_equal(decoder_new("br", 0, &d, NULL, 0), 0);
    assert_int_equal(decoder_finish(d), 0);
    decoder_free(d);
    cr_buf_release(&s.b);
}

static void decode_unknown_and_too_many_codings(void **state)
{
    (void)state;
    decoder *d = (decoder *)(uintptr_t)1;
    char msg[128];
    assert_int_equal(decoder_new("gzip, zstd", 0, &d, msg, sizeof msg), -ENOTSUP);
    assert_null(d);
    assert_string_equal(msg, "unsupported Content-Encoding 'zstd'");
    assert_int_equal(decoder_new("compress\x01", 0, &d, msg, sizeof msg), -ENOTSUP);
    assert_string_equal(msg, "unsupported Content-Encoding 'compress?'");
    assert_int_equal(decoder_new("gzip,gzip,gzip,gzip", 0, &d, msg, sizeof msg), -E2BIG);
    assert_null(d);
    assert_int_equal(decoder_new("gzip,gzip,gzip", 0, &d, msg, sizeof msg), 0);
    decoder_free(d);
}

static void decode_sink_can_stop(void **state)
{
    (void)state;
    struct sinkbuf s = {{0}, 0, 2};
    cr_buf_init(&s.b, 0);
    assert_int_equal(decode_all("gzip", 0, g_gz.data, g_gz.len, g_gz.len, &s), -ECANCELED);
    assert_int_equal(s.calls, 2);
    cr_buf_release(&s.b);
}

static void decode_out_of_memory(void **state)
{
    (void)state;
    const char *ces[] = {"gzip", "deflate", "br", "gzip, br"};
    const cr_buf *encs[] = {&g_gz, &g_zlib, &g_br, &g_gzbr};
    for (int i = 0; i < 4; i++) {
        bool done = false;
        for (long n = 1; n < 200 && !done; n++) {
            struct sinkbuf s = {{0}, 0, 0};
            cr_buf_init(&s.b, 0);
            buf_must(&s.b, g_text.data, g_text.len); /* room made before the hook */
            cr_buf_clear(&s.b);
            decoder *d = NULL;
            cr_alloc_fail_after(n);
            int rc = decoder_new(ces[i], 0, &d, NULL, 0);
            if (rc == 0) {
                rc = decoder_write(d, encs[i]->data, encs[i]->len, sink_cb, &s);
                if (rc == 0)
                    rc = decoder_finish(d);
            }
            long failures = cr_alloc_failures();
            cr_alloc_fail_after(0);
            if (failures == 0) {
                assert_int_equal(rc, 0);
                assert_buf_eq(&s.b, &g_text);
                done = true;
            } else {
                assert_int_equal(rc, -ENOMEM);
            }
            decoder_free(d);
            cr_buf_release(&s.b);
        }
        assert_true(done);
    }
}

/* ---- fetch cases ----------------------------------------------------------- */

static void fetch_html_200(void **state)
{
    (void)state;
    struct coll *c = fetch_path("/html", 1 << 20);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_string_equal(r->res.reason, "");
    assert_int_equal(r->res.status, 200);
    assert_int_equal(r->status, 200);
    assert_int_equal(r->version, 11);
    assert_string_equal(r->ip, "127.0.0.1");
    assert_string_equal(r->ctype, "text/html; charset=utf-8");
    assert_string_equal(r->loc, "");
    assert_int_equal(r->ra_s, -1);
    assert_buf_eq(&r->body, &g_html);
    assert_buf_eq(&r->raw, &g_html);
    assert_int_equal(r->res.raw_bytes, g_html.len);
    assert_int_equal(r->res.decoded_bytes, g_html.len);
    assert_false(r->res.truncated);
    assert_int_equal(r->res.new_connections, 1);
    assert_int_equal(r->res.header_bytes, r->head.len);
    /* the raw header block: status line to the empty line, as sent */
    assert_true(r->head.len > 20);
    assert_memory_equal(r->head.data, "HTTP/1.1 200 OK\r\n", 17);
    assert_memory_equal(r->head.data + r->head.len - 4, "\r\n\r\n", 4);
    assert_non_null(strstr(r->head.data, "\r\nContent-Type: text/html; charset=utf-8\r\n"));
    coll_free(c);
}

static void check_coded(const char *path, const cr_buf *wire, const char *cenc)
{
    struct coll *c = fetch_path(path, 4u << 20);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->cenc, cenc);
    assert_buf_eq(&r->raw, wire);      /* the wire bytes, exactly */
    assert_buf_eq(&r->body, &g_text);  /* decoded, exactly */
    assert_int_equal(r->res.raw_bytes, wire->len);
    assert_int_equal(r->res.decoded_bytes, g_text.len);
    assert_true(r->bodies > 1);        /* delivered as it arrived */
    coll_free(c);
}

static void fetch_gzip_decoded_raw_kept(void **state)
{
    (void)state;
    check_coded("/gzip", &g_gz, "gzip");
}

static void fetch_deflate_decoded_raw_kept(void **state)
{
    (void)state;
    check_coded("/deflate", &g_zlib, "deflate");
    check_coded("/rawdeflate", &g_rawdef, "deflate");
}

static void fetch_br_decoded_raw_kept(void **state)
{
    (void)state;
    check_coded("/br", &g_br, "br");
    check_coded("/gzip-br", &g_gzbr, "gzip, br");
}

static long max_rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void check_bomb(const char *path, const cr_buf *bomb, bool cut_before_end)
{
    char url[256];
    fetch_opts o = base_opts();
    o.max_body_bytes = 4u << 20;
    url_of(url, sizeof url, path);
    long rss0 = max_rss_kb();
    struct coll *c = fetch_one(&o, url, 64 << 10);
    long rss1 = max_rss_kb();
    struct rec *r = &c->recs[0];
    assert_int_equal(r->status, 200);
    assert_int_equal(r->res.error, FETCH_ERR_BODY_TOO_LARGE);
    assert_true(r->res.truncated);
    assert_int_equal(r->res.decoded_bytes, o.max_body_bytes);
    assert_int_equal(r->body_n, o.max_body_bytes);
    assert_int_equal(r->raw_n, r->res.raw_bytes);
    assert_true(r->res.raw_bytes <= bomb->len);
    if (cut_before_end)
        assert_true(r->res.raw_bytes < bomb->len / 8); /* cut off long before the end */
    assert_non_null(strstr(r->res.reason, "body too large: "));
    assert_non_null(strstr(r->res.reason, "max_body_bytes=4194304 (decoded)"));
    assert_non_null(strstr(r->res.reason, url));
    /* memory: nothing near the 1 GiB (or 64 MiB) the bomb expands to */
    assert_true(rss1 - rss0 < 48 * 1024);
    coll_free(c);
}

static void fetch_gzip_bomb_cut_off(void **state)
{
    (void)state;
    assert_true(g_bomb.len < (1100u << 10)); /* ~1 MB on the wire ... */
    assert_int_equal(g_bomb_decoded, (size_t)1 << 30); /* ... 1 GiB decoded */
    check_bomb("/bomb", &g_bomb, true);
}

static void fetch_br_bomb_cut_off(void **state)
{
    (void)state;
    assert_true(g_brbomb.len < 64u << 10); /* 64 MiB of zeros in a few KB */
    check_bomb("/brbomb", &g_brbomb, false);
}

static void fetch_plain_body_cut_off(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    o.max_body_bytes = (1u << 20) + 17;
    url_of(url, sizeof url, "/big");
    struct coll *c = fetch_one(&o, url, 2u << 20);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_BODY_TOO_LARGE);
    assert_true(r->res.truncated);
    assert_int_equal(r->raw.len, o.max_body_bytes);
    assert_int_equal(r->body.len, o.max_body_bytes);
    assert_memory_equal(r->raw.data, g_big.data, o.max_body_bytes);
    assert_memory_equal(r->body.data, g_big.data, o.max_body_bytes);
    assert_non_null(strstr(r->res.reason, "max_body_bytes=1048593"));
    coll_free(c);
}

static void fetch_huge_headers_rejected(void **state)
{
    (void)state;
    struct coll *c = fetch_path("/hugeheaders", 1024);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_HEADERS_TOO_LARGE);
    assert_int_equal(r->responses, 0);
    assert_int_equal(r->res.status, 0);
    assert_int_equal(r->res.raw_bytes, 0);
    assert_true(r->res.header_bytes > 64u << 10);
    assert_true(r->res.header_bytes < (64u << 10) + 2048); /* stopped at the line that passed */
    assert_non_null(strstr(r->res.reason, "headers too large: header block over max_header_bytes=65536"));
    coll_free(c);

    /* one 200 KB line: curl itself refuses it; the same kind comes out */
    char url[256];
    fetch_opts o = base_opts();
    o.max_header_bytes = 4u << 20;
    url_of(url, sizeof url, "/giantline");
    c = fetch_one(&o, url, 1024);
    r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_HEADERS_TOO_LARGE);
    assert_int_equal(r->responses, 0);
    coll_free(c);
}

static int h_may_send(void *ctx, const fetch_job *job)
{
    struct coll *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->may_send_calls++;
    bool refuse = c->refuse_odd_sends && (job->id & 1) != 0;
    pthread_mutex_unlock(&c->mu);
    return refuse ? 1 : 0;
}

/* may_send is asked once the connection is up; a refusal sends nothing
 * (the server sees no request) and ends the job as cancelled; the other
 * job on the same fetcher goes out as usual. */
static void fetch_may_send_refusal_sends_nothing(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    url_of(url, sizeof url, "/target");
    int hits = atomic_load(&S.target_hits);
    int reqs = atomic_load(&S.requests);
    struct coll *c = coll_new(4096);
    c->refuse_odd_sends = true;
    fetch_hooks h = hooks_for(c);
    h.may_send = h_may_send;
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    submit(f, 3, url, 0);
    assert_true(coll_wait(c, 1));
    submit(f, 4, url, 0);
    assert_true(coll_wait(c, 2));
    fetcher_free(f);
    struct rec *no = &c->recs[3], *yes = &c->recs[4];
    assert_int_equal(no->dones, 1);
    assert_int_equal(no->res.error, FETCH_ERR_CANCELLED);
    assert_int_equal(no->res.status, 0);
    assert_int_equal(no->responses, 0);
    assert_non_null(strstr(no->reason, "not sent"));
    assert_int_equal(yes->dones, 1);
    assert_int_equal(yes->res.error, FETCH_OK);
    assert_int_equal(yes->res.status, 200);
    assert_int_equal(c->may_send_calls, 2);
    assert_int_equal(atomic_load(&S.target_hits), hits + 1);
    assert_int_equal(atomic_load(&S.requests), reqs + 1);
    coll_free(c);
}

static void fetch_redirect_reported_not_followed(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    url_of(url, sizeof url, "/redirect");
    int hits = atomic_load(&S.target_hits);
    struct coll *c = coll_new(4096);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    fetch_job j = {77, url, 3, &S};
    assert_int_equal(fetcher_submit(f, &j, 0), 0);
    assert_true(coll_wait(c, 1));
    fetcher_free(f);
    struct rec *r = &c->recs[77];
    assert_int_equal(r->dones, 1);
    assert_int_equal(r->res.error, FETCH_OK);
    assert_int_equal(r->res.status, 301);
    assert_string_equal(r->loc, "/target?from=redirect");
    assert_int_equal(r->job.id, 77);
    assert_int_equal(r->job.hops, 3);
    assert_ptr_equal(r->job.user, &S);
    assert_int_equal(r->body.len, 6);
    assert_memory_equal(r->body.data, "moved\n", 6);
    assert_int_equal(atomic_load(&S.target_hits), hits);
    coll_free(c);
}

static void fetch_error_statuses_and_retry_after(void **state)
{
    (void)state;
    static const char *const paths[] = {"/status/404", "/status/500", "/status/503",
                                        "/status/503date", "/status/429"};
    static const long codes[] = {404, 500, 503, 503, 429};
    fetch_opts o = base_opts();
    struct coll *c = coll_new(4096);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    char urls[5][256];
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    for (int i = 0; i < 5; i++) {
        url_of(urls[i], sizeof urls[i], paths[i]);
        submit(f, (uint64_t)i, urls[i], 0);
    }
    assert_true(coll_wait(c, 5));
    fetcher_free(f);
    for (int i = 0; i < 5; i++) {
        struct rec *r = &c->recs[i];
        assert_int_equal(r->dones, 1);
        assert_int_equal(r->res.error, FETCH_OK); /* an HTTP status is not a fetch error */
        assert_int_equal(r->res.status, codes[i]);
        assert_int_equal(r->status, codes[i]);
        assert_int_equal(r->body.len, 12);
    }
    assert_int_equal(c->recs[0].ra_s, -1);
    assert_string_equal(c->recs[2].ra, "120");
    assert_int_equal(c->recs[2].ra_s, 120);
    assert_true(c->recs[3].ra_s > 3500 && c->recs[3].ra_s <= 3600);
    assert_non_null(strstr(c->recs[3].ra, " GMT"));
    coll_free(c);
}

static void fetch_low_speed_timeout(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    o.low_speed_bytes = 1000;
    o.low_speed_time_s = 1;
    url_of(url, sizeof url, "/slow");
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_LOW_SPEED);
    assert_int_equal(r->res.status, 200);
    assert_true(r->res.raw_bytes > 0);
    assert_non_null(strstr(r->res.reason, "low speed: "));
    assert_non_null(strstr(r->res.reason, url));
    release_hangs();
    coll_free(c);
}

static void fetch_total_timeout(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    o.timeout_ms = 300;
    url_of(url, sizeof url, "/hang");
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_TIMEOUT);
    assert_int_equal(r->res.status, 0);
    assert_int_equal(r->responses, 0);
    assert_non_null(strstr(r->res.reason, "timeout: "));
    assert_non_null(strstr(r->res.reason, "timed out"));
    assert_non_null(strstr(r->res.reason, url));
    release_hangs();
    coll_free(c);
}

static void fetch_connection_refused(void **state)
{
    (void)state;
    unsigned short port;
    int fd = listen_socket(-1, &port); /* bound, not listening: refused */
    assert_true(fd >= 0);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/refused?x=1", (unsigned)port);
    fetch_opts o = base_opts();
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_CONNECT);
    assert_int_equal(r->responses, 0);
    assert_non_null(strstr(r->res.reason, "connect: "));
    assert_non_null(strstr(r->res.reason, "Connection refused"));
    assert_non_null(strstr(r->res.reason, url));
    close(fd);
    coll_free(c);
}

static void fetch_connect_timeout(void **state)
{
    (void)state;
    /* A listener with a full backlog that never accepts: the kernel drops
     * further SYNs, so a connect hangs. */
    unsigned short port;
    int fd = listen_socket(0, &port);
    assert_true(fd >= 0);
    int fill[3];
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 3; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&sa, sizeof sa);
    }
    sleep_ms(50);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/never", (unsigned)port);
    fetch_opts o = base_opts();
    o.connect_timeout_ms = 300;
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_CONNECT_TIMEOUT);
    assert_non_null(strstr(r->res.reason, "connect timeout: "));
    assert_non_null(strstr(r->res.reason, url));
    for (int i = 0; i < 3; i++)
        close(fill[i]);
    close(fd);
    coll_free(c);
}

static void fetch_tls_error(void **state)
{
    (void)state;
    static const char reply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    struct raw_srv s;
    raw_start(&s, reply, sizeof reply - 1, false);
    char url[256];
    snprintf(url, sizeof url, "https://127.0.0.1:%u/tls", (unsigned)s.port);
    fetch_opts o = base_opts();
    struct coll *c = fetch_one(&o, url, 4096);
    raw_stop(&s);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_TLS);
    assert_non_null(strstr(r->res.reason, "TLS: "));
    assert_non_null(strstr(r->res.reason, url));
    coll_free(c);
}

static void fetch_informational_block_dropped(void **state)
{
    (void)state;
    static const char reply[] =
        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello";
    struct raw_srv s;
    raw_start(&s, reply, sizeof reply - 1, true);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/early", (unsigned)s.port);
    fetch_opts o = base_opts();
    struct coll *c = fetch_one(&o, url, 4096);
    raw_stop(&s);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_int_equal(r->responses, 1);
    assert_int_equal(r->status, 200);
    const char *want = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\n";
    assert_int_equal(r->head.len, strlen(want));
    assert_memory_equal(r->head.data, want, strlen(want));
    assert_int_equal(r->res.header_bytes, sizeof reply - 1 - 5);
    assert_int_equal(r->body.len, 5);
    coll_free(c);
}

static void fetch_short_body_is_network_error(void **state)
{
    (void)state;
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly this";
    struct raw_srv s;
    raw_start(&s, reply, sizeof reply - 1, true);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/short", (unsigned)s.port);
    fetch_opts o = base_opts();
    struct coll *c = fetch_one(&o, url, 4096);
    raw_stop(&s);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_NETWORK);
    assert_int_equal(r->res.status, 200);
    assert_int_equal(r->res.raw_bytes, 9);
    coll_free(c);
}

static void fetch_malformed_replies(void **state)
{
    (void)state;
    static const char *const replies[] = {
        "no status line at all, HTTP/0.9 style\n",
        "HTTP/1.1 2x0 Broken\r\nContent-Length: 0\r\n\r\n",
    };
    for (int i = 0; i < 2; i++) {
        struct raw_srv s;
        raw_start(&s, replies[i], strlen(replies[i]), true);
        char url[256];
        snprintf(url, sizeof url, "http://127.0.0.1:%u/bad%d", (unsigned)s.port, i);
        fetch_opts o = base_opts();
        struct coll *c = fetch_one(&o, url, 4096);
        raw_stop(&s);
        struct rec *r = &c->recs[0];
        assert_int_equal(r->res.error, FETCH_ERR_PROTOCOL);
        assert_int_equal(r->responses, 0);
        assert_non_null(strstr(r->reason, "protocol: "));
        assert_non_null(strstr(r->reason, url));
        coll_free(c);
    }
}

static void fetch_resolve_pin(void **state)
{
    (void)state;
    char pin[64], url[256], want[64];
    snprintf(pin, sizeof pin, "a.test:%u:127.0.0.1", (unsigned)S.port);
    snprintf(url, sizeof url, "http://a.test:%u/echo", (unsigned)S.port);
    snprintf(want, sizeof want, "host=a.test:%u\n", (unsigned)S.port);
    const char *pins[] = {"other.test:80:127.0.0.9", pin};
    fetch_opts o = base_opts();
    o.resolve = pins;
    o.nresolve = 2;
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_string_equal(r->ip, "127.0.0.1");
    assert_memory_equal(r->body.data, want, strlen(want));
    coll_free(c);
}

static void fetch_request_headers(void **state)
{
    (void)state;
    struct coll *c = fetch_path("/echo", 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_non_null(strstr(r->body.data, "\nua=" UA "\n"));
    assert_non_null(strstr(r->body.data, "\nae=gzip, deflate, br\n"));
    assert_non_null(strstr(r->body.data, "\naccept=text/html,"));
    assert_non_null(strstr(r->body.data, "\ncookie=-\n"));
    assert_int_equal(r->req.len, 0); /* not asked for */
    int64_t now = (int64_t)time(NULL) * 1000;
    assert_true(r->res.start_unix_ms > now - 60000 && r->res.start_unix_ms <= now + 1000);
    coll_free(c);
}

static void fetch_request_block_kept(void **state)
{
    (void)state;
    char url[256], want[128];
    fetch_opts o = base_opts();
    o.keep_request = true;
    url_of(url, sizeof url, "/echo?q=1");
    snprintf(want, sizeof want, "GET /echo?q=1 HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n",
             (unsigned)S.port);
    struct coll *c = fetch_one(&o, url, 4096);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_true(r->req.len > strlen(want));
    assert_memory_equal(r->req.data, want, strlen(want));
    assert_non_null(strstr(r->req.data, "\r\nUser-Agent: " UA "\r\n"));
    assert_non_null(strstr(r->req.data, "\r\nAccept-Encoding: gzip, deflate, br\r\n"));
    assert_memory_equal(r->req.data + r->req.len - 4, "\r\n\r\n", 4);
    coll_free(c);
}

static void fetch_chunked_transfer(void **state)
{
    (void)state;
    struct coll *c = fetch_path("/chunked", 1 << 20);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_OK);
    assert_non_null(strstr(r->head.data, "\r\nTransfer-Encoding: chunked\r\n"));
    assert_buf_eq(&r->raw, &g_text); /* de-chunked on the wire side too */
    assert_buf_eq(&r->body, &g_text);
    coll_free(c);
}

static void fetch_decode_failures_keep_raw(void **state)
{
    (void)state;
    struct coll *c = fetch_path("/corruptgzip", 1 << 20);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_DECODE);
    assert_int_equal(r->res.status, 200);
    assert_buf_eq(&r->raw, &g_corrupt); /* the archive still gets every byte */
    assert_true(r->body.len < g_text.len);
    assert_non_null(strstr(r->res.reason, "decode: gzip: "));
    coll_free(c);

    c = fetch_path("/truncgzip", 1 << 20);
    r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_DECODE);
    assert_buf_eq(&r->raw, &g_truncgz);
    assert_non_null(strstr(r->res.reason, "decode: gzip: stream ended early"));
    coll_free(c);

    c = fetch_path("/zstd", 1 << 20);
    r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_DECODE);
    assert_buf_eq(&r->raw, &g_html);
    assert_int_equal(r->bodies, 0);
    assert_non_null(strstr(r->res.reason, "unsupported Content-Encoding 'zstd'"));
    coll_free(c);
}

static void fetch_bad_urls(void **state)
{
    (void)state;
    static const char *const urls[] = {"ftp://127.0.0.1/x", "file:///etc/passwd",
                                       "http://[::1/"};
    fetch_opts o = base_opts();
    struct coll *c = coll_new(1024);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    for (int i = 0; i < 3; i++)
        submit(f, (uint64_t)i, urls[i], 0);
    assert_true(coll_wait(c, 3));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c->recs[i].dones, 1);
        assert_int_equal(c->recs[i].res.error, FETCH_ERR_URL);
        assert_non_null(strstr(c->recs[i].reason, urls[i]));
    }
    fetch_job j = {9, NULL, 0, NULL};
    assert_int_equal(fetcher_submit(f, &j, 0), -EINVAL);
    char *longurl = malloc(FETCH_MAX_URL_BYTES + 100);
    memset(longurl, 'a', FETCH_MAX_URL_BYTES + 99);
    memcpy(longurl, "http://", 7);
    longurl[FETCH_MAX_URL_BYTES + 99] = '\0';
    j.url = longurl;
    assert_int_equal(fetcher_submit(f, &j, 0), -EINVAL);
    free(longurl);
    fetcher_free(f);
    coll_free(c);
}

static void fetch_hook_can_cancel(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    url_of(url, sizeof url, "/gzip");
    struct coll *c = coll_new(4096);
    c->cancel_on_response = true;
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    submit(f, 0, url, 0);
    assert_true(coll_wait(c, 1));
    fetcher_free(f);
    struct rec *r = &c->recs[0];
    assert_int_equal(r->res.error, FETCH_ERR_CANCELLED);
    assert_int_equal(r->responses, 1);
    assert_int_equal(r->raws, 0);
    assert_int_equal(r->bodies, 0);
    assert_non_null(strstr(r->reason, "cancelled: on_response asked to stop"));
    coll_free(c);
}

static void chain_case(unsigned connections, int want_rc)
{
    char url[256], target[256];
    fetch_opts o = base_opts();
    o.connections = connections;
    url_of(url, sizeof url, "/redirect");
    url_of(target, sizeof target, "/target?from=redirect");
    struct coll *c = coll_new(4096);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    c->chain_f = f;
    c->chain_url = target;
    int hits = atomic_load(&S.target_hits);
    submit(f, 0, url, 0);
    assert_true(coll_wait(c, want_rc == 0 ? 2 : 1));
    assert_int_equal(c->chain_rc, want_rc);
    assert_int_equal(c->stop_rc, -EDEADLK); /* never from a hook */
    fetcher_free(f);
    assert_int_equal(c->recs[0].res.status, 301);
    if (want_rc == 0) {
        assert_int_equal(c->recs[1].dones, 1);
        assert_int_equal(c->recs[1].res.status, 200);
        assert_int_equal(c->recs[1].job.hops, 1);
        assert_int_equal(atomic_load(&S.target_hits), hits + 1);
    } else {
        assert_int_equal(c->recs[1].dones, 0);
    }
    coll_free(c);
}

static void fetch_hook_may_submit_without_waiting(void **state)
{
    (void)state;
    chain_case(2, 0);       /* a free slot: taken */
    chain_case(1, -EAGAIN); /* the only slot is the caller's own: no deadlock */
}

static void fetch_http2_option_over_plain_http(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    o.http2 = true; /* HTTP/2 only where TLS offers it: plain http stays 1.1 */
    url_of(url, sizeof url, "/html");
    struct coll *c = fetch_one(&o, url, 4096);
    assert_int_equal(c->recs[0].res.error, FETCH_OK);
    assert_int_equal(c->recs[0].version, 11);
    assert_buf_eq(&c->recs[0].body, &g_html);
    coll_free(c);
}

static void fetch_proxy_only_when_asked(void **state)
{
    (void)state;
    char url[256], proxy[64];
    /* the environment's proxy is ignored: it points at a closed port */
    setenv("http_proxy", "http://127.0.0.1:1", 1);
    setenv("ALL_PROXY", "http://127.0.0.1:1", 1);
    struct coll *c = fetch_path("/html", 4096);
    assert_int_equal(c->recs[0].res.error, FETCH_OK);
    coll_free(c);
    unsetenv("http_proxy");
    unsetenv("ALL_PROXY");
    /* opts.proxy is used: our server gets the absolute-form request for a
     * host that does not exist (and answers 404 to that path) */
    fetch_opts o = base_opts();
    snprintf(proxy, sizeof proxy, "http://127.0.0.1:%u", (unsigned)S.port);
    o.proxy = proxy;
    int req0 = atomic_load(&S.requests);
    snprintf(url, sizeof url, "http://no-such-host.invalid/html");
    c = fetch_one(&o, url, 4096);
    assert_int_equal(c->recs[0].res.error, FETCH_OK);
    assert_int_equal(c->recs[0].res.status, 404);
    assert_int_equal(atomic_load(&S.requests), req0 + 1);
    coll_free(c);
}

static void fetch_many_jobs_keepalive(void **state)
{
    (void)state;
    enum { N = 500 };
    fetch_opts o = base_opts();
    o.threads = 2;
    o.connections = 16;
    struct coll *c = coll_new(256);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    static char urls[N][64];
    int conn0 = atomic_load(&S.connections);
    int req0 = atomic_load(&S.requests);
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    int64_t t0 = mono_ms();
    for (int i = 0; i < N; i++) {
        char path[32];
        snprintf(path, sizeof path, "/n/%d", i);
        url_of(urls[i], sizeof urls[i], path);
        submit(f, (uint64_t)i, urls[i], 0);
    }
    assert_true(coll_wait(c, N));
    int64_t ms = mono_ms() - t0;
    fetch_stats st;
    fetcher_stats(f, &st);
    assert_int_equal(fetcher_stop(f, 1000), 0);
    fetcher_free(f);
    int conns = atomic_load(&S.connections) - conn0;
    int reqs = atomic_load(&S.requests) - req0;
    bool used[2] = {false, false};
    for (int i = 0; i < N; i++) {
        struct rec *r = &c->recs[i];
        char want[64];
        snprintf(want, sizeof want, "<html><body>page %d</body></html>\n", i);
        assert_int_equal(r->dones, 1);
        assert_int_equal(r->responses, 1);
        assert_false(r->order_bad);
        assert_false(r->thread_mixed);
        assert_true(r->thread == 0 || r->thread == 1);
        used[r->thread] = true;
        assert_int_equal(r->res.error, FETCH_OK);
        assert_int_equal(r->body.len, strlen(want));
        assert_memory_equal(r->body.data, want, strlen(want));
    }
    assert_true(used[0] && used[1]);
    assert_int_equal(reqs, N);
    assert_int_equal(st.submitted, N);
    assert_int_equal(st.started, N);
    assert_int_equal(st.done, N);
    assert_int_equal(st.by_error[FETCH_OK], N);
    assert_int_equal(st.in_flight, 0);
    /* keep-alive: a connection per slot at most, not one per request */
    assert_true(conns >= 2 && conns <= 16);
    assert_int_equal(st.connections, (uint64_t)conns);
    printf("  %d requests over %d connections (2 threads, 16 slots) in %lld ms: %.0f req/s\n",
           N, conns, (long long)ms, ms > 0 ? N * 1000.0 / (double)ms : 0.0);
    coll_free(c);
}

/* on_room: the hook refills its own thread, which runs what it submitted. */
enum { ROOM_N = 300 };
static struct {
    fetcher *f;
    pthread_mutex_t mu;
    int next;                  /* next job id to submit */
    int by[ROOM_N];            /* thread that submitted job i; -1 main */
    int calls, bad_room, refused;
    char urls[ROOM_N][64];
} R = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void h_room(void *ctx, unsigned free_slots)
{
    (void)ctx;
    int me = fetcher_thread_index();
    pthread_mutex_lock(&R.mu);
    R.calls++;
    if (free_slots == 0 || free_slots > 4 || me < 0)
        R.bad_room++;
    for (unsigned k = 0; k < free_slots && R.next < ROOM_N; k++) {
        int id = R.next++;
        R.by[id] = me;
        fetch_job j = { (uint64_t)id, R.urls[id], 0, NULL };
        if (fetcher_submit(R.f, &j, 0) != 0)
            R.refused++;
    }
    pthread_mutex_unlock(&R.mu);
}

static void fetch_room_hook_refills_its_own_thread(void **state)
{
    (void)state;
    fetch_opts o = base_opts();
    o.threads = 2;
    o.connections = 8;
    struct coll *c = coll_new(256);
    fetch_hooks h = hooks_for(c);
    h.on_room = h_room;
    for (int i = 0; i < ROOM_N; i++) {
        char path[32];
        snprintf(path, sizeof path, "/n/%d", i);
        url_of(R.urls[i], sizeof R.urls[i], path);
    }
    assert_int_equal(fetcher_new(&o, &h, &R.f), 0);
    pthread_mutex_lock(&R.mu);
    for (int i = 0; i < 2; i++) {
        R.by[i] = -1;
        submit(R.f, (uint64_t)i, R.urls[i], 0);
    }
    R.next = 2;
    pthread_mutex_unlock(&R.mu);
    assert_true(coll_wait(c, ROOM_N));
    assert_int_equal(fetcher_stop(R.f, 1000), 0);
    fetcher_free(R.f);
    assert_int_equal(R.next, ROOM_N);
    assert_true(R.calls > 0);
    assert_int_equal(R.bad_room, 0);
    assert_int_equal(R.refused, 0);
    for (int i = 0; i < ROOM_N; i++) {
        struct rec *r = &c->recs[i];
        assert_int_equal(r->dones, 1);
        assert_int_equal(r->res.error, FETCH_OK);
        if (R.by[i] >= 0)
            assert_int_equal(r->thread, R.by[i]); /* stayed where it was submitted */
    }
    coll_free(c);
}

static bool wait_atomic(atomic_int *v, int n)
{
    int64_t end = mono_ms() + WAIT_MS;
    while (atomic_load(v) < n && mono_ms() < end)
        sleep_ms(2);
    return atomic_load(v) >= n;
}

static void fetch_stop_aborts_in_flight(void **state)
{
    (void)state;
    enum { N = 8 };
    char url[256];
    fetch_opts o = base_opts();
    o.connections = N;
    url_of(url, sizeof url, "/hang");
    struct coll *c = coll_new(1024);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    int hanging0 = atomic_load(&S.hanging);
    for (int i = 0; i < N; i++)
        submit(f, (uint64_t)i, url, 0);
    assert_true(wait_atomic(&S.hanging, hanging0 + N)); /* all on the server now */
    assert_int_equal(fetcher_free_slots(f), 0);
    fetch_job j = {99, url, 0, NULL};
    assert_int_equal(fetcher_submit(f, &j, 0), -EAGAIN);
    assert_int_equal(fetcher_submit(f, &j, 20), -EAGAIN);
    assert_int_equal(fetcher_stop(f, 200), 0);
    /* stop returned with the server still holding every request: they were
     * aborted, not waited for */
    assert_int_equal(atomic_load(&S.hanging), hanging0 + N);
    assert_int_equal(c->done_total, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(c->recs[i].dones, 1);
        assert_int_equal(c->recs[i].res.error, FETCH_ERR_ABORTED);
        assert_non_null(strstr(c->recs[i].reason, "aborted: "));
        assert_non_null(strstr(c->recs[i].reason, url));
    }
    assert_int_equal(fetcher_submit(f, &j, 0), -ESHUTDOWN);
    assert_int_equal(fetcher_stop(f, 200), 0); /* again: nothing left to do */
    fetch_stats st;
    fetcher_stats(f, &st);
    assert_int_equal(st.by_error[FETCH_ERR_ABORTED], N);
    assert_int_equal(st.done, N);
    fetcher_free(f);
    release_hangs();
    coll_free(c);
}

static void fetch_stop_lets_transfers_finish(void **state)
{
    (void)state;
    enum { N = 4 };
    char url[256];
    fetch_opts o = base_opts();
    url_of(url, sizeof url, "/delay?ms=300");
    struct coll *c = coll_new(1024);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    int delayed0 = atomic_load(&S.delayed);
    for (int i = 0; i < N; i++)
        submit(f, (uint64_t)i, url, 0);
    assert_true(wait_atomic(&S.delayed, delayed0 + N));
    assert_int_equal(fetcher_stop(f, 30000), 0);
    assert_int_equal(c->done_total, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(c->recs[i].dones, 1);
        assert_int_equal(c->recs[i].res.error, FETCH_OK);
        assert_int_equal(c->recs[i].res.status, 200);
        assert_buf_eq(&c->recs[i].body, &g_html);
    }
    fetcher_free(f);
    coll_free(c);
}

struct aborter {
    fetcher *f;
    int want_hanging;
};

static void *abort_later(void *arg)
{
    struct aborter *a = arg;
    wait_atomic(&S.hanging, a->want_hanging);
    sleep_ms(50); /* fetcher_stop is waiting by now (or about to) */
    fetcher_abort(a->f);
    return NULL;
}

static void fetch_abort_ends_unbounded_grace(void **state)
{
    (void)state;
    enum { N = 3 };
    char url[256];
    fetch_opts o = base_opts();
    o.threads = 2;
    url_of(url, sizeof url, "/hang");
    struct coll *c = coll_new(1024);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    fetcher_abort(f); /* before stop: no effect */
    struct aborter a = {f, atomic_load(&S.hanging) + N};
    for (int i = 0; i < N; i++)
        submit(f, (uint64_t)i, url, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, abort_later, &a), 0);
    assert_int_equal(fetcher_stop(f, -1), 0); /* would wait 20 s without the abort */
    pthread_join(t, NULL);
    assert_int_equal(c->done_total, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(c->recs[i].dones, 1);
        assert_int_equal(c->recs[i].res.error, FETCH_ERR_ABORTED);
    }
    fetcher_free(f);
    release_hangs();
    coll_free(c);
}

static void fetch_blocking_submit_waits_for_a_slot(void **state)
{
    (void)state;
    char url[256];
    fetch_opts o = base_opts();
    o.connections = 1;
    url_of(url, sizeof url, "/delay?ms=100");
    struct coll *c = coll_new(1024);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    for (int i = 0; i < 3; i++) /* each waits for the one before to finish */
        submit(f, (uint64_t)i, url, 0);
    assert_true(coll_wait(c, 3));
    fetcher_free(f);
    for (int i = 0; i < 3; i++)
        assert_int_equal(c->recs[i].res.error, FETCH_OK);
    coll_free(c);
}

static void fetch_options_checked(void **state)
{
    (void)state;
    struct coll *c = coll_new(16);
    fetch_hooks h = hooks_for(c);
    fetcher *f = (fetcher *)(uintptr_t)1;
    fetch_opts o;
    o = base_opts(); o.threads = 0;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    assert_null(f);
    o = base_opts(); o.threads = 4; o.connections = 3;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    o = base_opts(); o.user_agent = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    o = base_opts(); o.user_agent = "bot\r\nX-Injected: 1";
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    o = base_opts(); o.max_body_bytes = 0;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    o = base_opts(); o.timeout_ms = -1;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    const char *bad[] = {"a.test:80:1.2.3.4\n"};
    o = base_opts(); o.resolve = bad; o.nresolve = 1;
    assert_int_equal(fetcher_new(&o, &h, &f), -EINVAL);
    fetch_hooks no_done = { .on_done = NULL };
    o = base_opts();
    assert_int_equal(fetcher_new(&o, &no_done, &f), -EINVAL);
    assert_string_equal(fetch_error_name(FETCH_ERR_BODY_TOO_LARGE), "body too large");
    assert_string_equal(fetch_error_name(FETCH_ERR_CONNECT_TIMEOUT), "connect timeout");
    assert_string_equal(fetch_error_name((fetch_error)999), "?");
    assert_int_equal(fetcher_thread_index(), -1);
    coll_free(c);
}

static void fetch_new_out_of_memory(void **state)
{
    (void)state;
    struct coll *c = coll_new(16);
    fetch_hooks h = hooks_for(c);
    fetch_opts o = base_opts();
    o.threads = 3;
    o.connections = 7;
    o.proxy = NULL;
    bool made = false;
    for (long n = 1; n < 100 && !made; n++) {
        fetcher *f = NULL;
        cr_alloc_fail_after(n);
        int rc = fetcher_new(&o, &h, &f);
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (failures == 0) {
            assert_int_equal(rc, 0);
            made = true;
        } else {
            assert_int_equal(rc, -ENOMEM);
            assert_null(f);
        }
        fetcher_free(f);
    }
    assert_true(made);
    coll_free(c);
}

/* The fewest allocations fetcher_new needs with these options: the first n
 * for which a hook failing the nth allocation lets it succeed. */
static long allocations_to_start(const fetch_opts *o, const fetch_hooks *h)
{
    for (long n = 1; n < 1000; n++) {
        fetcher *f = NULL;
        cr_alloc_fail_after(n);
        int rc = fetcher_new(o, h, &f);
        long failures = cr_alloc_failures();
        cr_alloc_fail_after(0);
        fetcher_free(f);
        if (failures == 0) {
            assert_int_equal(rc, 0);
            return n;
        }
        assert_int_equal(rc, -ENOMEM);
    }
    fail_msg("fetcher_new never succeeded");
    return -1;
}

/* Slots are made when transfers need them: 100,000 of them cost fetcher_new
 * no more allocations than 16, and they still run jobs. */
static void fetch_slots_are_made_on_demand(void **state)
{
    (void)state;
    struct coll *c = coll_new(16);
    fetch_hooks h = hooks_for(c);
    fetch_opts small = base_opts(), big = base_opts();
    small.threads = big.threads = 2;
    small.connections = 16;
    big.connections = 100000;
    assert_int_equal(allocations_to_start(&small, &h), allocations_to_start(&big, &h));

    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&big, &h, &f), 0);
    assert_int_equal(fetcher_free_slots(f), 100000);
    char url[256];
    url_of(url, sizeof url, "/delay?ms=50");
    for (uint64_t i = 0; i < 40; i++) /* more than two chunks per thread */
        submit(f, i, url, 0);
    assert_true(coll_wait(c, 40));
    for (int i = 0; i < 40; i++)
        assert_int_equal(c->recs[i].res.error, FETCH_OK);
    assert_int_equal(fetcher_stop(f, 1000), 0);
    fetcher_free(f);
    coll_free(c);
}

/* A slot that cannot be made refuses the job (-ENOMEM, no on_done) and
 * leaves the fetcher working. */
static void fetch_slot_out_of_memory(void **state)
{
    (void)state;
    struct coll *c = coll_new(16);
    fetch_hooks h = hooks_for(c);
    fetch_opts o = base_opts();
    fetcher *f = NULL;
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    char url[256];
    url_of(url, sizeof url, "/");
    fetch_job j = {0, url, 0, NULL};
    cr_alloc_fail_after(2); /* the URL's copy, then the first chunk of slots */
    int rc = fetcher_submit(f, &j, 0);
    long failures = cr_alloc_failures();
    cr_alloc_fail_after(0);
    assert_int_equal(failures, 1);
    assert_int_equal(rc, -ENOMEM);
    submit(f, 1, url, 0);
    assert_true(coll_wait(c, 1));
    assert_int_equal(fetcher_stop(f, 1000), 0);
    fetch_stats st;
    fetcher_stats(f, &st);
    assert_int_equal(st.submitted, 1);
    assert_int_equal(st.done, 1);
    fetcher_free(f);
    assert_int_equal(c->recs[0].dones, 0);
    assert_int_equal(c->recs[1].dones, 1);
    coll_free(c);
}

/* Measurement, not a check: main runs it instead of the cases when
 * CRAWLD_FETCH_BENCH=N is set (N requests per run); it prints figures. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static double bench_run(int n, unsigned threads, unsigned conns, const char *suffix,
                        int *server_conns)
{
    fetch_opts o = base_opts();
    o.threads = threads;
    o.connections = conns;
    struct coll *c = coll_new(0);
    fetch_hooks h = hooks_for(c);
    fetcher *f = NULL;
    char url[256];
    assert_int_equal(fetcher_new(&o, &h, &f), 0);
    int conn0 = atomic_load(&S.connections);
    int64_t t0 = mono_ms();
    for (int i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/n/%d%s", i % MAXJOBS, suffix);
        url_of(url, sizeof url, path);
        fetch_job j = {(uint64_t)(i % MAXJOBS), url, 0, NULL};
        assert_int_equal(fetcher_submit(f, &j, -1), 0);
    }
    fetcher_stop(f, -1);
    int64_t ms = mono_ms() - t0;
    fetch_stats st;
    fetcher_stats(f, &st);
    assert_int_equal(st.by_error[FETCH_OK], (uint64_t)n);
    fetcher_free(f);
    coll_free(c);
    *server_conns = atomic_load(&S.connections) - conn0;
    return ms > 0 ? n * 1000.0 / (double)ms : 0.0;
}

static void fetch_bench(void **state)
{
    (void)state;
    int n = atoi_safe_positive(getenv("CRAWLD_FETCH_BENCH"));
    int sc;
    static const struct { unsigned threads, conns; const char *suffix; } runs[] = {
        {1, 8, ""}, {2, 16, ""}, {2, 64, ""}, {4, 64, ""}, {2, 16, "?close=1"},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        double cpu0 = cpu_s();
        double rps = bench_run(n, runs[k].threads, runs[k].conns, runs[k].suffix, &sc);
        double cpu = cpu_s() - cpu0;
        printf("  bench: %d requests, %u threads, %u slots%s: %.0f req/s, %d connections, "
               "%.0f us CPU/request (client and server)\n",
               n, runs[k].threads, runs[k].conns, runs[k].suffix[0] ? ", Connection: close" : "",
               rps, sc, cpu * 1e6 / n);
    }
    static const char *const ces[] = {"gzip", "deflate", "br"};
    const cr_buf *encs[] = {&g_gz, &g_zlib, &g_br};
    for (int k = 0; k < 3; k++) {
        int64_t t0 = mono_ms();
        uint64_t total = 0;
        for (int rep = 0; rep < 40; rep++) {
            decoder *d = NULL;
            struct sinkbuf sb = {{0}, 0, 0};
            cr_buf_init(&sb.b, 1);
            assert_int_equal(decoder_new(ces[k], 0, &d, NULL, 0), 0);
            assert_int_equal(decoder_write(d, encs[k]->data, encs[k]->len, count_any_sink, &total), 0);
            assert_int_equal(decoder_finish(d), 0);
            decoder_free(d);
        }
        int64_t ms = mono_ms() - t0;
        printf("  bench: decode %s: %.0f MB/s decoded\n", ces[k],
               ms > 0 ? (double)total / 1e6 / ((double)ms / 1000.0) : 0.0);
    }
}

/* ---- main ---------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    if (make_bodies() != 0) {
        fprintf(stderr, "test_fetch: cannot make the test bodies\n");
        return -1;
    }
    if (server_start() != 0) {
        fprintf(stderr, "test_fetch: cannot start the test server\n");
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    release_hangs();
    MHD_stop_daemon(S.d);
    free_bodies();
    return 0;
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_gzip_any_split),
        cmocka_unit_test(decode_deflate_zlib_and_raw),
        cmocka_unit_test(decode_br_any_split),
        cmocka_unit_test(decode_layers_in_reverse_order),
        cmocka_unit_test(decode_identity_passes_through),
        cmocka_unit_test(decode_gzip_members_and_trailing_junk),
        cmocka_unit_test(decode_cap_is_exact),
        cmocka_unit_test(decode_inner_layer_is_capped),
        cmocka_unit_test(decode_bomb_is_what_it_claims),
        cmocka_unit_test(decode_corrupt_is_sticky),
        cmocka_unit_test(decode_truncated_streams),
        cmocka_unit_test(decode_unknown_and_too_many_codings),
        cmocka_unit_test(decode_sink_can_stop),
        cmocka_unit_test(decode_out_of_memory),
        cmocka_unit_test(fetch_html_200),
        cmocka_unit_test(fetch_slots_are_made_on_demand),
        cmocka_unit_test(fetch_slot_out_of_memory),
        cmocka_unit_test(fetch_gzip_decoded_raw_kept),
        cmocka_unit_test(fetch_deflate_decoded_raw_kept),
        cmocka_unit_test(fetch_br_decoded_raw_kept),
        cmocka_unit_test(fetch_gzip_bomb_cut_off),
        cmocka_unit_test(fetch_br_bomb_cut_off),
        cmocka_unit_test(fetch_plain_body_cut_off),
        cmocka_unit_test(fetch_huge_headers_rejected),
        cmocka_unit_test(fetch_redirect_reported_not_followed),
        cmocka_unit_test(fetch_may_send_refusal_sends_nothing),
        cmocka_unit_test(fetch_error_statuses_and_retry_after),
        cmocka_unit_test(fetch_low_speed_timeout),
        cmocka_unit_test(fetch_total_timeout),
        cmocka_unit_test(fetch_connection_refused),
        cmocka_unit_test(fetch_connect_timeout),
        cmocka_unit_test(fetch_tls_error),
        cmocka_unit_test(fetch_informational_block_dropped),
        cmocka_unit_test(fetch_short_body_is_network_error),
        cmocka_unit_test(fetch_malformed_replies),
        cmocka_unit_test(fetch_resolve_pin),
        cmocka_unit_test(fetch_request_headers),
        cmocka_unit_test(fetch_request_block_kept),
        cmocka_unit_test(fetch_chunked_transfer),
        cmocka_unit_test(fetch_decode_failures_keep_raw),
        cmocka_unit_test(fetch_bad_urls),
        cmocka_unit_test(fetch_hook_can_cancel),
        cmocka_unit_test(fetch_hook_may_submit_without_waiting),
        cmocka_unit_test(fetch_http2_option_over_plain_http),
        cmocka_unit_test(fetch_proxy_only_when_asked),
        cmocka_unit_test(fetch_many_jobs_keepalive),
        cmocka_unit_test(fetch_stop_aborts_in_flight),
        cmocka_unit_test(fetch_stop_lets_transfers_finish),
        cmocka_unit_test(fetch_abort_ends_unbounded_grace),
        cmocka_unit_test(fetch_blocking_submit_waits_for_a_slot),
        cmocka_unit_test(fetch_room_hook_refills_its_own_thread),
        cmocka_unit_test(fetch_options_checked),
        cmocka_unit_test(fetch_new_out_of_memory),
    };
    const struct CMUnitTest bench[] = {
        cmocka_unit_test(fetch_bench),
    };
    int rc;
    if (atoi_safe_positive(getenv("CRAWLD_FETCH_BENCH")) > 0)
        rc = cmocka_run_group_tests(bench, group_setup, group_teardown);
    else
        rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
    curl_global_cleanup();
    return rc;
}
