/* tests/site/server: libmicrohttpd glue of the test site (see server.h).
 *
 * Request life: the URI log callback copies the raw target and the arrival
 * time into a per-request struct (MHD hands it back as *req_cls and we free
 * it in the completion callback); the access handler routes, logs and queues
 * the response on its second call, once the request is complete (answering
 * on the first call makes MHD close the connection, losing keep-alive). Big bodies (oversized pages, the bomb,
 * the trickling page) are produced by content-reader callbacks, never held. */
#include "tests/site/server.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tests/site/epoch.h"
#include "tests/site/payload.h"

struct server {
    const site *s;
    struct MHD_Daemon *d;
    int log_fd;
    pthread_mutex_t log_lock;
    atomic_int *flaky;         /* /flaky/ requests seen, per host */
    payload_bomb *bomb;
    int latency_ms;
    int timing;                /* SERVER_LOG_TIMING: log at completion, with times and UA */
    atomic_int stopping;
};

typedef struct request {
    long long us;      /* arrival, Unix epoch microseconds */
    char *raw;
    int started;       /* the handler saw the headers; answer on the next call */
    /* with timing, what the completion callback logs (status 0: nothing queued) */
    int status;
    unsigned long long bytes;
    char host[256];
    char method[16];
    char *ua;
} request;

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long now_ms(void) { return now_us() / 1000; }

/* Sleeps ms milliseconds in short slices, returning early when stopping. */
static void nap(server *srv, int ms)
{
    while (ms > 0 && !atomic_load(&srv->stopping)) {
        int step = ms < 20 ? ms : 20;
        struct timespec ts = { 0, (long)step * 1000000L };
        nanosleep(&ts, NULL);
        ms -= step;
    }
}

/* ---- the request log --------------------------------------------------- */

static int log_field(cr_buf *b, const char *p)
{
    int rc = 0;
    for (; *p != '\0' && rc == 0; p++) {
        unsigned char c = (unsigned char)*p;
        if (c <= 0x20 || c >= 0x7f)
            rc = cr_buf_printf(b, "%%%02X", c);
        else
            rc = cr_buf_putc(b, (char)c);
    }
    return rc;
}

/* One line; end_us < 0: the plain six fields, else also start, end and UA. */
static void log_request(server *srv, const request *rq, const char *host, const char *method,
                        int status, unsigned long long bytes, long long end_us, const char *ua)
{
    cr_buf line;
    if (srv->log_fd < 0)
        return;
    cr_buf_init(&line, 64 * 1024);
    int rc = cr_buf_printf(&line, "%lld\t", rq->us / 1000);
    if (rc == 0)
        rc = log_field(&line, host);
    if (rc == 0)
        rc = cr_buf_putc(&line, '\t');
    if (rc == 0)
        rc = log_field(&line, method);
    if (rc == 0)
        rc = cr_buf_putc(&line, '\t');
    if (rc == 0)
        rc = log_field(&line, rq->raw);
    if (rc == 0)
        rc = cr_buf_printf(&line, "\t%d\t%llu", status, bytes);
    if (rc == 0 && end_us >= 0) {
        rc = cr_buf_printf(&line, "\t%lld\t%lld\t", rq->us, end_us);
        if (rc == 0)
            rc = log_field(&line, ua != NULL && ua[0] != '\0' ? ua : "-");
    }
    if (rc == 0)
        rc = cr_buf_putc(&line, '\n');
    if (rc == 0) {
        pthread_mutex_lock(&srv->log_lock);
        size_t off = 0;
        while (off < line.len) {
            ssize_t w = write(srv->log_fd, line.data + off, line.len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        pthread_mutex_unlock(&srv->log_lock);
    }
    cr_buf_release(&line);
}

/* ---- content readers --------------------------------------------------- */

typedef struct stream {
    server *srv;
    uint64_t size;
    char *body;        /* SK_TRICKLE */
    int pieces_sent;
} stream;

static void stream_free(void *cls)
{
    stream *st = cls;
    cr_free(st->body);
    cr_free(st);
}

static ssize_t read_big(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *st = cls;
    if (pos >= st->size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = st->size - pos < max ? (size_t)(st->size - pos) : max;
    site_big_fill(st->srv->s, pos, buf, n);
    return (ssize_t)n;
}

static ssize_t read_bomb(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *st = cls;
    size_t n = payload_bomb_read(st->srv->bomb, pos, buf, max);
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

#define TRICKLE_PIECES 10

static ssize_t read_trickle(void *cls, uint64_t pos, char *buf, size_t max)
{
    stream *st = cls;
    if (pos >= st->size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (st->pieces_sent > 0)
        nap(st->srv, site_options(st->srv->s)->delay_ms / TRICKLE_PIECES);
    uint64_t piece = (st->size + TRICKLE_PIECES - 1) / TRICKLE_PIECES;
    size_t n = st->size - pos;
    if (n > piece)
        n = (size_t)piece;
    if (n > max)
        n = max;
    memcpy(buf, st->body + pos, n);
    st->pieces_sent++;
    return (ssize_t)n;
}

/* ---- responses --------------------------------------------------------- */

static struct MHD_Response *from_buf(cr_buf *b)
{
    size_t len = b->len;
    if (len == 0)
        return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    char *data = cr_buf_take(b);
    if (data == NULL)
        return NULL;
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, data, cr_free);
    if (r == NULL)
        cr_free(data);
    return r;
}

static struct MHD_Response *from_reader(server *srv, uint64_t size, char *body,
                                        MHD_ContentReaderCallback fn)
{
    stream *st = cr_calloc(1, sizeof(*st));
    if (st == NULL) {
        cr_free(body);
        return NULL;
    }
    st->srv = srv;
    st->size = size;
    st->body = body;
    struct MHD_Response *r = MHD_create_response_from_callback(size, 64 * 1024, fn, st,
                                                               stream_free);
    if (r == NULL)
        stream_free(st);
    return r;
}

/* The chunked variant: unknown length, ends after big_bytes. */
static ssize_t read_chunked(void *cls, uint64_t pos, char *buf, size_t max)
{
    return read_big(cls, pos, buf, max);
}

static void retry_after(server *srv, struct MHD_Response *r, int date)
{
    char v[64];
    int secs = site_options(srv->s)->retry_after_s;
    if (date) {
        time_t t = time(NULL) + secs;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(v, sizeof(v), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    } else {
        snprintf(v, sizeof(v), "%d", secs);
    }
    MHD_add_response_header(r, "Retry-After", v);
}

typedef struct answer {
    int status;
    struct MHD_Response *resp;
    unsigned long long bytes;
    const char *inm, *ims; /* If-None-Match, If-Modified-Since; NULL = absent */
} answer;

/* ---- the site over time (epoch.h): validators and 304 ---- */

/* Turns a 200 whose body is in b into its epoch-mode answer: ETag and
 * Last-Modified on it, or an empty 304 when the request's validators
 * match (If-None-Match decides when present, RFC 9110 13.2.2). a->resp
 * is made here. 0 or -ENOMEM. */
static int epoch_answer(server *srv, int h, const char *target, cr_buf *b, answer *a)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < b->len; i++)
        x = (x ^ (unsigned char)b->data[i]) * 0x100000001b3ull;
    char etag[40], lm[40];
    snprintf(etag, sizeof etag, "\"%016llx\"", (unsigned long long)x);
    time_t t = (time_t)epoch_last_modified(srv->s, h, target);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(lm, sizeof lm, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    bool fresh = false;
    if (a->inm != NULL)
        fresh = strstr(a->inm, etag) != NULL || strcmp(a->inm, "*") == 0;
    else if (a->ims != NULL)
        fresh = curl_getdate(a->ims, NULL) >= (time_t)t && curl_getdate(a->ims, NULL) != -1;
    if (fresh) {
        a->status = 304;
        a->bytes = 0;
        a->resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        a->bytes = b->len;
        a->resp = from_buf(b);
    }
    if (a->resp == NULL)
        return -ENOMEM;
    MHD_add_response_header(a->resp, "ETag", etag);
    MHD_add_response_header(a->resp, "Last-Modified", lm);
    return 0;
}

static int html_answer(server *srv, int h, const char *target, const site_res *res, answer *a,
                       int trickle)
{
    cr_buf body;
    cr_buf_init(&body, 0);
    int rc = site_html(srv->s, h, target, res, &body, NULL);
    if (rc != 0) {
        cr_buf_release(&body);
        return rc;
    }
    a->bytes = body.len;
    if (!trickle && a->status == 200 && epoch_validators(srv->s, h)) {
        rc = epoch_answer(srv, h, target, &body, a);
        cr_buf_release(&body);
        if (rc == 0 && a->status == 200)
            MHD_add_response_header(a->resp, "Content-Type", res->ctype);
        return rc;
    } else if (trickle) {
        size_t len = body.len;
        char *data = cr_buf_take(&body);
        a->resp = data != NULL ? from_reader(srv, len, data, read_trickle) : NULL;
    } else {
        a->resp = from_buf(&body);
    }
    cr_buf_release(&body);
    if (a->resp == NULL)
        return -ENOMEM;
    MHD_add_response_header(a->resp, "Content-Type", res->ctype);
    return 0;
}

static void text_answer(answer *a, int status, const char *text)
{
    a->status = status;
    a->bytes = strlen(text);
    a->resp = MHD_create_response_from_buffer(a->bytes, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (a->resp != NULL)
        MHD_add_response_header(a->resp, "Content-Type", "text/plain; charset=utf-8");
}

/* Builds the answer to target on host h. 0 or -ENOMEM. */
static int route(server *srv, int h, const char *target, answer *a)
{
    const site *s = srv->s;
    const site_opts *o = site_options(s);
    site_res res;
    cr_buf b, to;
    int rc = 0;
    cr_buf_init(&b, 0);
    cr_buf_init(&to, 0);
    a->status = 200;
    a->resp = NULL;
    a->bytes = 0;

    if (site_lookup(s, h, target, &res) != 0) {
        text_answer(a, 404, "404 not found\n");
        goto out;
    }
    a->status = res.status;
    switch (res.kind) {
    case SK_HTML:
        rc = html_answer(srv, h, target, &res, a, 0);
        break;
    case SK_SLOW:
        nap(srv, o->delay_ms);
        rc = html_answer(srv, h, target, &res, a, 0);
        break;
    case SK_TRICKLE:
        rc = html_answer(srv, h, target, &res, a, 1);
        break;
    case SK_FLAKY:
        if (atomic_fetch_add(&srv->flaky[h], 1) < o->flaky) {
            text_answer(a, 503, "503: flaky, come back later\n");
            if (a->resp != NULL)
                retry_after(srv, a->resp, 0);
        } else {
            rc = html_answer(srv, h, target, &res, a, 0);
        }
        break;
    case SK_REDIRECT: {
        int to_host;
        rc = site_redirect(s, h, target, &res, &b, &to_host, &to);
        if (rc != 0)
            break;
        text_answer(a, res.status, "moved\n");
        if (a->resp != NULL && b.len > 0)
            MHD_add_response_header(a->resp, "Location", b.data);
        break;
    }
    case SK_BIG:
        a->bytes = o->big_bytes;
        a->resp = from_reader(srv, o->big_bytes, NULL, read_big);
        break;
    case SK_CHUNKED: {
        a->bytes = o->big_bytes;
        stream *st = cr_calloc(1, sizeof(*st));
        if (st == NULL)
            break;
        st->srv = srv;
        st->size = o->big_bytes;
        a->resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_chunked,
                                                    st, stream_free);
        if (a->resp == NULL)
            stream_free(st);
        break;
    }
    case SK_BOMB:
        a->bytes = payload_bomb_size(srv->bomb);
        a->resp = from_reader(srv, a->bytes, NULL, read_bomb);
        if (a->resp != NULL)
            MHD_add_response_header(a->resp, "Content-Encoding", "gzip");
        break;
    case SK_PNG:
        rc = payload_png(res.n, &b);
        break;
    case SK_PDF:
        rc = payload_pdf(res.n, &b);
        break;
    case SK_ROBOTS:
        a->status = site_robots_status(s, h);
        rc = site_body(s, h, target, &res, &b);
        break;
    default:
        rc = site_body(s, h, target, &res, &b);
        break;
    }
    if (rc == 0 && a->resp == NULL && res.kind != SK_REDIRECT && a->status == 200 &&
        epoch_validators(s, h))
        rc = epoch_answer(srv, h, target, &b, a);
    if (rc == 0 && a->resp == NULL && res.kind != SK_REDIRECT) {
        a->bytes = b.len;
        a->resp = from_buf(&b);
    }
    if (rc == 0 && a->resp == NULL)
        rc = -ENOMEM;
    if (rc == 0 && a->status != 304 && MHD_get_response_header(a->resp, "Content-Type") == NULL)
        MHD_add_response_header(a->resp, "Content-Type", res.ctype);
    if (rc == 0 && res.kind == SK_RETRY)
        retry_after(srv, a->resp, res.n == 1);
out:
    cr_buf_release(&to);
    cr_buf_release(&b);
    if (rc == 0 && a->resp == NULL)
        rc = -ENOMEM;
    return rc;
}

/* ---- MHD callbacks ----------------------------------------------------- */

/* MHD's error log, less the complaints about clients that hang up early:
 * crawlers with body caps do that to oversized pages on purpose. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (strstr(fmt, "Failed to send") != NULL || strstr(fmt, "closed by remote") != NULL)
        return;
    fputs("testsite: ", stderr);
    vfprintf(stderr, fmt, ap);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    request *rq = cr_calloc(1, sizeof(*rq));
    if (rq == NULL)
        return NULL;
    rq->us = now_us();
    rq->raw = cr_strdup(uri);
    if (rq->raw == NULL) {
        cr_free(rq);
        return NULL;
    }
    return rq;
}

/* The response is sent (or the client went away): with timing, log it now. */
static void on_done(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
    server *srv = cls;
    (void)c;
    (void)toe;
    request *rq = *req_cls;
    if (rq != NULL) {
        if (srv->timing && rq->status != 0)
            log_request(srv, rq, rq->host, rq->method, rq->status, rq->bytes, now_us(), rq->ua);
        cr_free(rq->ua);
        cr_free(rq->raw);
        cr_free(rq);
        *req_cls = NULL;
    }
}

/* The path and query of a raw target (skips the scheme and authority of an
 * absolute-form target). */
static const char *origin_form(const char *raw)
{
    if (strncasecmp(raw, "http://", 7) == 0 || strncasecmp(raw, "https://", 8) == 0) {
        const char *p = strchr(raw, ':') + 3;
        const char *slash = strchr(p, '/');
        return slash != NULL ? slash : "/";
    }
    return raw;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **req_cls)
{
    server *srv = cls;
    request *rq = *req_cls;
    answer a = { 0, NULL, 0, NULL, NULL };
    cr_buf canon;
    char host[256];
    (void)version;
    (void)upload_data;
    if (rq == NULL) /* out of memory in on_uri */
        return MHD_NO;
    if (!rq->started) {
        /* Queuing on this first call would make MHD close the connection
         * (it cannot know the request is complete yet): no keep-alive. */
        rq->started = 1;
        return MHD_YES;
    }
    if (*upload_size != 0) { /* a request body: ignore it */
        *upload_size = 0;
        return MHD_YES;
    }
    (void)url; /* MHD's decoded path; we route on the raw target instead */

    const char *hv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    size_t hl = 0;
    if (hv != NULL) {
        for (; hv[hl] != '\0' && hv[hl] != ':' && hl + 1 < sizeof(host); hl++)
            host[hl] = (char)((hv[hl] >= 'A' && hv[hl] <= 'Z') ? hv[hl] + 32 : hv[hl]);
    }
    host[hl] = '\0';
    if (hl == 0)
        snprintf(host, sizeof(host), "-");
    int h = hv != NULL ? site_host_index(srv->s, hv, strlen(hv)) : -1;
    int head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;

    a.inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
    a.ims = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Modified-Since");
    cr_buf_init(&canon, SITE_TARGET_MAX * 4);
    if (!head && strcmp(method, MHD_HTTP_METHOD_GET) != 0) {
        text_answer(&a, 405, "405 only GET and HEAD\n");
        if (a.resp != NULL)
            MHD_add_response_header(a.resp, "Allow", "GET, HEAD");
    } else if (h < 0) {
        text_answer(&a, 404, "404 unknown host: this test site serves a.test, b.test, ...\n");
    } else {
        const char *t = origin_form(rq->raw);
        int rc = site_canon_target(t, strlen(t), &canon);
        if (rc == -EINVAL)
            text_answer(&a, 400, "400 bad request target\n");
        else if (rc != 0)
            text_answer(&a, 414, "414 request target too long\n");
        else if (route(srv, h, canon.data, &a) != 0)
            text_answer(&a, 500, "500 out of memory\n");
    }
    cr_buf_release(&canon);
    if (a.resp == NULL)
        return MHD_NO;
    if (srv->latency_ms > 0) {
        long long left = rq->us / 1000 + srv->latency_ms - now_ms();
        if (left > 0)
            nap(srv, (int)left);
    }
    if (srv->timing) { /* logged by on_done, once sent */
        const char *ua = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "User-Agent");
        rq->status = a.status;
        rq->bytes = head ? 0 : a.bytes;
        snprintf(rq->host, sizeof(rq->host), "%s", host);
        snprintf(rq->method, sizeof(rq->method), "%s", method);
        rq->ua = cr_strdup(ua != NULL ? ua : "");
        if (rq->ua == NULL)
            rq->status = 0; /* out of memory: the line is lost, the answer is not */
    } else {
        log_request(srv, rq, host, method, a.status, head ? 0 : a.bytes, -1, NULL);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)a.status, a.resp);
    MHD_destroy_response(a.resp);
    return ret;
}

server *server_start(const site *s, int fd, const char *log_path, int latency_ms, int flags,
                     int *err)
{
    server *srv = cr_calloc(1, sizeof(*srv));
    *err = -ENOMEM;
    if (srv == NULL) {
        close(fd);
        return NULL;
    }
    srv->s = s;
    srv->latency_ms = latency_ms > 0 ? latency_ms : 0;
    srv->timing = (flags & SERVER_LOG_TIMING) != 0;
    srv->log_fd = -1;
    pthread_mutex_init(&srv->log_lock, NULL);
    atomic_init(&srv->stopping, 0);
    srv->flaky = cr_calloc((size_t)site_host_count(s), sizeof(*srv->flaky));
    if (srv->flaky == NULL)
        goto fail;
    for (int h = 0; h < site_host_count(s); h++)
        atomic_init(&srv->flaky[h], 0);
    if (site_options(s)->specials) {
        srv->bomb = payload_bomb_new(site_options(s)->bomb_mib);
        if (srv->bomb == NULL)
            goto fail;
    }
    if (log_path != NULL) {
        srv->log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (srv->log_fd < 0) {
            *err = -errno;
            goto fail;
        }
    }
    srv->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                  MHD_USE_POLL | MHD_USE_ERROR_LOG,
                              0, NULL, NULL, on_request, srv,
                              MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)NULL,
                              MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
                              MHD_OPTION_URI_LOG_CALLBACK, on_uri, (void *)NULL,
                              MHD_OPTION_NOTIFY_COMPLETED, on_done, (void *)srv,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)SERVER_MAX_CONNECTIONS,
                              MHD_OPTION_END);
    if (srv->d == NULL) {
        *err = -EIO;
        goto fail;
    }
    fd = -1; /* MHD owns it now */
    *err = 0;
    return srv;
fail:
    if (fd >= 0)
        close(fd);
    server_stop(srv);
    return NULL;
}

void server_stop(server *srv)
{
    if (srv == NULL)
        return;
    atomic_store(&srv->stopping, 1);
    if (srv->d != NULL)
        MHD_stop_daemon(srv->d);
    if (srv->log_fd >= 0)
        close(srv->log_fd);
    payload_bomb_free(srv->bomb);
    cr_free(srv->flaky);
    pthread_mutex_destroy(&srv->log_lock);
    cr_free(srv);
}
