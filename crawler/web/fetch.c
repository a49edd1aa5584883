/* crawler/fetch: fetcher threads on libcurl multi handles.
 *
 * Shape. fetcher_new makes opts.threads workers. A worker owns one multi
 * handle (its connection cache and DNS cache), a fixed array of slots
 * (struct xfer: one reusable easy handle, a capped header buffer, a
 * decoder) and two read-only curl_slists (request headers, resolve pins).
 * opts.connections slots exist in all, split across the workers; each
 * multi may open at most as many connections as it has slots, so
 * opts.connections also bounds open connections. Slots are made on demand,
 * SLOT_CHUNK at a time, when a submit finds the free list empty, so a
 * large opts.connections costs memory only for the transfers really run at
 * once; a made slot lives until fetcher_free. A slot is FREE (on its
 * worker's free list), QUEUED (on the worker's inbox) or ACTIVE (in the
 * multi).
 *
 * Lock. f->lock guards: stopping, deadline, and for every worker its free
 * list, inbox, made slots (chunks, nmade) and nfree: free slots plus those
 * not made yet (and f->nfree, their sum). slot_cond is signalled
 * when a slot comes free or stop begins. fetcher_submit takes a free slot of
 * the worker with the most free slots (or, from a hook, of the hook's own
 * worker while it has one), fills it, puts it on that worker's inbox and
 * calls curl_multi_wakeup unless one is already on its way (`woken`) or the
 * worker is the caller, which looks at its inbox before it polls (all under
 * the lock). Only the worker's
 * own thread touches its multi, easy handles and ACTIVE slots; other
 * threads only call curl_multi_wakeup on it, which libcurl allows. Multi
 * handles live until fetcher_free, after the threads are joined, so a late
 * wakeup never reaches a freed handle. Hooks are called with no lock held.
 *
 * A transfer. The header callback keeps the current header block (1xx
 * blocks are dropped; all header bytes count against max_header_bytes); on
 * the empty line that ends the final block it parses the fields, makes the
 * decoder for Content-Encoding and calls on_response. The write callback
 * gets the body as curl de-chunked it (curl's own content decoding is off),
 * passes it to on_raw, then through the decoder to on_body, counting and
 * capping both. Any verdict of ours (cap, hook cancel, out of memory) is
 * stored in the slot first and then curl is stopped by returning short;
 * when the transfer ends our verdict wins over curl's error code.
 *
 * Stop. fetcher_stop sets stopping and a deadline and wakes every worker.
 * Workers keep running their ACTIVE transfers; a worker with none left
 * exits; at the deadline a worker aborts what it still has (on_done with
 * FETCH_ERR_ABORTED) and exits. */
#include "fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/buf.h"
#include "crawler/web/decode.h"

#define POLL_MAX_MS 1000
#define SLOT_CHUNK 16             /* slots made at a time */
#define REASON_URL_MAX 200

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_ACTIVE };

struct worker;

struct xfer {
    struct worker *w;
    struct xfer *next;         /* free list or inbox (under f->lock) */
    enum slot_state state;
    CURL *easy;                /* made on first use, then reused */
    fetch_job job;             /* job.url is url below */
    char *url;                 /* owned; also holds the job's validators */
    struct curl_slist *cond;   /* the worker's headers + the validators, or NULL */
    const char *inm, *ims;     /* the job's validators (in url's allocation), or NULL */
    int64_t t0_ns;
    cr_buf head;               /* current header block, capped */
    cr_buf fields;             /* NUL-terminated copies of parsed fields */
    cr_buf req;                /* request header block as sent (keep_request) */
    int64_t start_unix_ms;
    uint64_t head_total;       /* every header byte received, 1xx included */
    bool head_done;
    bool connected;
    long status;
    char ip[64];
    decoder *dec;
    bool dec_broken;           /* decoding stopped; raw bytes still flow */
    char dec_msg[160];
    uint64_t raw;
    uint64_t decoded;
    bool truncated;
    fetch_error err;           /* our own verdict; FETCH_OK if none */
    char detail[CURL_ERROR_SIZE + 128];
    char errbuf[CURL_ERROR_SIZE];
};

struct worker {
    fetcher *f;
    unsigned index;
    pthread_t tid;
    bool thread_started;
    CURLM *multi;
    struct curl_slist *req_headers;
    struct curl_slist *resolve;
    unsigned nslots;           /* slots this worker may make */
    unsigned active;           /* worker thread only */
    /* under f->lock: */
    struct xfer **chunks;      /* ceil(nslots / SLOT_CHUNK); made ones non-NULL */
    unsigned nmade;            /* slots made so far, chunk by chunk */
    struct xfer *free_list;
    struct xfer *inbox_head, *inbox_tail;
    unsigned nfree;
    bool woken;                /* a wakeup is on its way, not yet seen */
};

struct fetcher {
    fetch_opts opts;           /* strings point at the copies below */
    char *user_agent;
    char *proxy;
    fetch_hooks hooks;
    struct worker *workers;
    unsigned nworkers;

    pthread_mutex_t lock;
    pthread_cond_t slot_cond;
    bool stopping;             /* under lock */
    int64_t deadline_ns;       /* under lock; INT64_MAX: none */
    unsigned nfree;            /* under lock */

    atomic_uint_fast64_t submitted, started, done, raw_bytes, decoded_bytes, header_bytes,
        truncated, connections;
    atomic_uint_fast64_t by_error[FETCH_ERR_COUNT];
};

static _Thread_local struct worker *tls_worker;

static const char *const error_names[FETCH_ERR_COUNT] = {
    [FETCH_OK] = "ok",
    [FETCH_ERR_URL] = "bad URL",
    [FETCH_ERR_DNS] = "DNS",
    [FETCH_ERR_CONNECT] = "connect",
    [FETCH_ERR_CONNECT_TIMEOUT] = "connect timeout",
    [FETCH_ERR_TLS] = "TLS",
    [FETCH_ERR_TIMEOUT] = "timeout",
    [FETCH_ERR_LOW_SPEED] = "low speed",
    [FETCH_ERR_NETWORK] = "network",
    [FETCH_ERR_PROTOCOL] = "protocol",
    [FETCH_ERR_HEADERS_TOO_LARGE] = "headers too large",
    [FETCH_ERR_BODY_TOO_LARGE] = "body too large",
    [FETCH_ERR_DECODE] = "decode",
    [FETCH_ERR_CANCELLED] = "cancelled",
    [FETCH_ERR_ABORTED] = "aborted",
    [FETCH_ERR_NOMEM] = "out of memory",
    [FETCH_ERR_OTHER] = "other",
};

const char *fetch_error_name(fetch_error e)
{
    if ((unsigned)e >= FETCH_ERR_COUNT)
        return "?";
    return error_names[e];
}

static void count(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Our own verdict on a transfer; the first one stands. */
static void set_err(struct xfer *x, fetch_error kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(struct xfer *x, fetch_error kind, const char *fmt, ...)
{
    if (x->err != FETCH_OK)
        return;
    va_list ap;
    x->err = kind;
    va_start(ap, fmt);
    vsnprintf(x->detail, sizeof x->detail, fmt, ap);
    va_end(ap);
}

/* ---- header parsing ---------------------------------------------------- */

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

/* Iterates over the header lines of a block after the status line: each
 * call fills *fl with the next "name: value" field (name and value trimmed,
 * pointing into the block) and moves *pos past its line; false at the end. */
struct field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

static bool next_field(const char **pos, const char *end, struct field *fl)
{
    while (*pos < end) {
        const char *ls = *pos;
        const char *nl = memchr(ls, '\n', (size_t)(end - ls));
        const char *le = nl ? nl : end;
        *pos = nl ? nl + 1 : end;
        if (le > ls && le[-1] == '\r')
            le--;
        if (le == ls || is_ows(ls[0]))
            continue; /* empty line, or an obsolete folded continuation */
        const char *colon = memchr(ls, ':', (size_t)(le - ls));
        if (colon == NULL)
            continue;
        const char *ne = colon;
        while (ne > ls && is_ows(ne[-1]))
            ne--;
        const char *vs = colon + 1;
        const char *ve = le;
        while (vs < ve && is_ows(*vs))
            vs++;
        while (ve > vs && is_ows(ve[-1]))
            ve--;
        fl->name = ls;
        fl->name_len = (size_t)(ne - ls);
        fl->value = vs;
        fl->value_len = (size_t)(ve - vs);
        return true;
    }
    return false;
}

static bool name_is(const struct field *fl, const char *name)
{
    size_t n = strlen(name);
    return fl->name_len == n && strncasecmp(fl->name, name, n) == 0;
}

/* Appends the value of header `name` to x->fields (all occurrences joined by
 * ", " when join, else the first one) plus a NUL. Sets *off to its offset or
 * SIZE_MAX when absent. */
static int collect_field(struct xfer *x, const char *name, bool join, size_t *off)
{
    const char *pos = x->head.data;
    const char *end = x->head.data + x->head.len;
    const char *nl = memchr(pos, '\n', x->head.len);
    struct field fl;
    bool found = false;
    int rc = 0;

    *off = SIZE_MAX;
    pos = nl ? nl + 1 : end; /* skip the status line */
    while (next_field(&pos, end, &fl)) {
        if (!name_is(&fl, name))
            continue;
        if (!found) {
            *off = x->fields.len;
            found = true;
        } else if (join) {
            rc = cr_buf_append(&x->fields, ", ", 2);
            if (rc < 0)
                return rc;
        } else {
            break;
        }
        rc = cr_buf_append(&x->fields, fl.value, fl.value_len);
        if (rc < 0)
            return rc;
    }
    if (found)
        rc = cr_buf_putc(&x->fields, '\0');
    return rc;
}

/* "HTTP/1.1 200 OK" -> 11 and 200. */
static void parse_status_line(const char *s, size_t len, int *version, long *status)
{
    *version = 0;
    *status = 0;
    if (len < 5 || strncmp(s, "HTTP/", 5) != 0)
        return;
    size_t i = 5;
    int major = 0, minor = 0;
    if (i < len && s[i] >= '0' && s[i] <= '9')
        major = s[i++] - '0';
    if (i + 1 < len && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '9') {
        minor = s[i + 1] - '0';
        i += 2;
    }
    *version = major * 10 + minor;
    while (i < len && s[i] == ' ')
        i++;
    long code = 0;
    int digits = 0;
    while (i < len && digits < 3 && s[i] >= '0' && s[i] <= '9') {
        code = code * 10 + (s[i++] - '0');
        digits++;
    }
    if (digits == 3)
        *status = code;
}

/* Retry-After: delta-seconds or an HTTP-date; -1 when absent or invalid. */
static long parse_retry_after(const char *v)
{
    if (v == NULL)
        return -1;
    while (is_ows(*v))
        v++;
    if (*v >= '0' && *v <= '9') {
        long n = 0;
        while (*v >= '0' && *v <= '9') {
            if (n < 1000000000L)
                n = n * 10 + (*v - '0');
            v++;
        }
        while (is_ows(*v))
            v++;
        if (*v != '\0')
            return -1;
        return n > 1000000000L ? 1000000000L : n;
    }
    time_t t = curl_getdate(v, NULL);
    if (t == (time_t)-1)
        return -1;
    time_t now = time(NULL);
    if (t <= now)
        return 0;
    return t - now > 1000000000L ? 1000000000L : (long)(t - now);
}

static const char *field_at(const struct xfer *x, size_t off)
{
    return off == SIZE_MAX ? NULL : x->fields.data + off;
}

/* The final header block is complete: parse, set up decoding, tell the
 * caller. Returns false to stop the transfer (x->err says why). */
static bool headers_complete(struct xfer *x)
{
    fetcher *f = x->w->f;
    const char *nl = memchr(x->head.data, '\n', x->head.len);
    size_t first = nl ? (size_t)(nl - x->head.data) : x->head.len;
    int version = 0;
    long status = 0;
    size_t ct, ce, loc, ra;
    char msg[160];

    parse_status_line(x->head.data, first, &version, &status);
    if (status == 0)
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 100 && status < 200 && status != 101) {
        cr_buf_clear(&x->head); /* informational: the real answer follows */
        return true;
    }
    x->head_done = true;
    x->status = status;

    cr_buf_clear(&x->fields);
    if (collect_field(x, "Content-Type", false, &ct) < 0 ||
        collect_field(x, "Content-Encoding", true, &ce) < 0 ||
        collect_field(x, "Location", false, &loc) < 0 ||
        collect_field(x, "Retry-After", false, &ra) < 0) {
        set_err(x, FETCH_ERR_NOMEM, "no memory for the header fields");
        return false;
    }
    if (x->ip[0] == '\0') {
        char *ip = NULL;
        if (curl_easy_getinfo(x->easy, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
            snprintf(x->ip, sizeof x->ip, "%s", ip);
    }

    int rc = decoder_new(field_at(x, ce), (size_t)f->opts.max_body_bytes, &x->dec, msg,
                         sizeof msg);
    if (rc == -ENOMEM) {
        set_err(x, FETCH_ERR_NOMEM, "no memory for the content decoder");
        return false;
    }
    if (rc < 0) {
        /* Not decodable: the raw bytes are still fetched for the archive. */
        x->dec_broken = true;
        snprintf(x->dec_msg, sizeof x->dec_msg, "%s", msg);
    }

    if (f->hooks.on_response) {
        fetch_response r = {
            .status = status,
            .http_version = version,
            .remote_ip = x->ip,
            .content_type = field_at(x, ct),
            .content_encoding = field_at(x, ce),
            .location = field_at(x, loc),
            .retry_after = field_at(x, ra),
            .retry_after_s = parse_retry_after(field_at(x, ra)),
            .headers = x->head.data,
            .headers_len = x->head.len,
            .request = x->req.data ? x->req.data : "",
            .request_len = x->req.len,
        };
        if (f->hooks.on_response(f->hooks.ctx, &x->job, &r) != 0) {
            set_err(x, FETCH_ERR_CANCELLED, "on_response asked to stop");
            return false;
        }
    }
    return true;
}

/* ---- curl callbacks (worker thread) ------------------------------------ */

static size_t header_cb(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    fetcher *f = x->w->f;
    size_t len = size * n;

    x->head_total += len;
    count(&f->header_bytes, len);
    if (x->head_total > f->opts.max_header_bytes) {
        set_err(x, FETCH_ERR_HEADERS_TOO_LARGE, "header block over max_header_bytes=%llu",
                (unsigned long long)f->opts.max_header_bytes);
        return 0;
    }
    if (x->head_done)
        return len; /* trailers after a chunked body: counted, not kept */
    int rc = cr_buf_append(&x->head, p, len);
    if (rc < 0) {
        if (rc == -E2BIG)
            set_err(x, FETCH_ERR_HEADERS_TOO_LARGE, "header block over max_header_bytes=%llu",
                    (unsigned long long)f->opts.max_header_bytes);
        else
            set_err(x, FETCH_ERR_NOMEM, "no memory for the header block");
        return 0;
    }
    bool blank = (len == 2 && p[0] == '\r' && p[1] == '\n') || (len == 1 && p[0] == '\n');
    if (blank && !headers_complete(x))
        return 0;
    return len;
}

static int body_sink(void *ctx, const char *data, size_t len)
{
    struct xfer *x = ctx;
    fetcher *f = x->w->f;
    x->decoded += len;
    count(&f->decoded_bytes, len);
    if (f->hooks.on_body && f->hooks.on_body(f->hooks.ctx, &x->job, data, len) != 0) {
        set_err(x, FETCH_ERR_CANCELLED, "on_body asked to stop");
        return 1;
    }
    return 0;
}

static size_t write_cb(char *p, size_t size, size_t n, void *ud)
{
    struct xfer *x = ud;
    fetcher *f = x->w->f;
    size_t len = size * n;
    size_t keep = len;
    bool over = false;
    uint64_t max = f->opts.max_body_bytes;

    if (!x->head_done) {
        set_err(x, FETCH_ERR_PROTOCOL, "body bytes before the end of the headers");
        return 0;
    }
    if (len > max - x->raw) {
        keep = (size_t)(max - x->raw);
        over = true;
    }
    if (keep > 0) {
        if (f->hooks.on_raw && f->hooks.on_raw(f->hooks.ctx, &x->job, p, keep) != 0) {
            set_err(x, FETCH_ERR_CANCELLED, "on_raw asked to stop");
            return 0;
        }
        x->raw += keep;
        count(&f->raw_bytes, keep);
        if (!x->dec_broken) {
            int rc = decoder_write(x->dec, p, keep, body_sink, x);
            if (rc == -E2BIG) {
                x->truncated = true;
                set_err(x, FETCH_ERR_BODY_TOO_LARGE, "body over max_body_bytes=%llu (decoded)",
                        (unsigned long long)max);
                return 0;
            }
            if (rc == -ECANCELED)
                return 0; /* body_sink set the verdict */
            if (rc == -ENOMEM) {
                set_err(x, FETCH_ERR_NOMEM, "no memory for content decoding");
                return 0;
            }
            if (rc < 0) {
                x->dec_broken = true;
                snprintf(x->dec_msg, sizeof x->dec_msg, "%s", decoder_error(x->dec));
            }
        }
    }
    if (over) {
        x->truncated = true;
        set_err(x, FETCH_ERR_BODY_TOO_LARGE, "body over max_body_bytes=%llu (raw)",
                (unsigned long long)max);
        return 0;
    }
    return len;
}

static int prereq_cb(void *ud, char *primary_ip, char *local_ip, int primary_port,
                     int local_port)
{
    struct xfer *x = ud;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    x->connected = true;
    if (primary_ip)
        snprintf(x->ip, sizeof x->ip, "%s", primary_ip);
    const fetch_hooks *h = &x->w->f->hooks;
    if (h->may_send != NULL && h->may_send(h->ctx, &x->job) != 0) {
        set_err(x, FETCH_ERR_CANCELLED, "not sent: may_send refused it");
        return CURL_PREREQFUNC_ABORT;
    }
    return CURL_PREREQFUNC_OK;
}

/* With keep_request: the request header block as curl sent it. A request
 * sent again (curl retries once on a dead kept-alive connection) replaces
 * the first one. */
static int debug_cb(CURL *h, curl_infotype type, char *data, size_t size, void *ud)
{
    struct xfer *x = ud;
    (void)h;
    if (type != CURLINFO_HEADER_OUT)
        return 0;
    if (x->req.len >= 4 && memcmp(x->req.data + x->req.len - 4, "\r\n\r\n", 4) == 0)
        cr_buf_clear(&x->req);
    if (cr_buf_append(&x->req, data, size) < 0)
        set_err(x, FETCH_ERR_NOMEM, "no room for the request header block");
    return 0;
}

/* ---- transfer lifecycle (worker thread) -------------------------------- */

static fetch_error classify(const struct xfer *x, CURLcode cc)
{
    switch (cc) {
    case CURLE_OK:
        return FETCH_OK;
    case CURLE_UNSUPPORTED_PROTOCOL:
        /* before connecting: the scheme; after: e.g. an HTTP/0.9 reply */
        return x->connected ? FETCH_ERR_PROTOCOL : FETCH_ERR_URL;
    case CURLE_URL_MALFORMAT:
        return FETCH_ERR_URL;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return FETCH_ERR_DNS;
    case CURLE_COULDNT_CONNECT:
        return FETCH_ERR_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        if (strstr(x->errbuf, "too slow"))
            return FETCH_ERR_LOW_SPEED;
        if (strncmp(x->errbuf, "Resolving timed out", 19) == 0)
            return FETCH_ERR_DNS;
        return x->connected ? FETCH_ERR_TIMEOUT : FETCH_ERR_CONNECT_TIMEOUT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
        return FETCH_ERR_TLS;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
        return FETCH_ERR_NETWORK;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_BAD_CONTENT_ENCODING:
        return FETCH_ERR_PROTOCOL;
    case CURLE_OUT_OF_MEMORY:
        /* curl refuses a single header line over 100 KB this way */
        return x->connected && !x->head_done ? FETCH_ERR_HEADERS_TOO_LARGE : FETCH_ERR_NOMEM;
    default:
        return FETCH_ERR_OTHER;
    }
}

/* Writes "URL" for a reason, shortened. */
static void short_url(char *out, size_t outsz, const char *url)
{
    size_t n = strlen(url);
    if (n <= REASON_URL_MAX)
        snprintf(out, outsz, "%s", url);
    else
        snprintf(out, outsz, "%.*s...", REASON_URL_MAX, url);
}

static void slot_release(struct worker *w, struct xfer *x)
{
    fetcher *f = w->f;
    cr_free(x->url);
    x->url = NULL;
    curl_slist_free_all(x->cond);
    x->cond = NULL;
    x->inm = x->ims = NULL;
    memset(&x->job, 0, sizeof x->job);
    decoder_free(x->dec);
    x->dec = NULL;
    /* A slot keeps small buffers; one that grew large gives it back. */
    if (x->head.cap > 16384)
        cr_buf_release(&x->head);
    if (x->fields.cap > 16384)
        cr_buf_release(&x->fields);
    if (x->req.cap > 16384)
        cr_buf_release(&x->req);
    cr_buf_clear(&x->head);
    cr_buf_clear(&x->fields);
    cr_buf_clear(&x->req);

    pthread_mutex_lock(&f->lock);
    x->state = SLOT_FREE;
    x->next = w->free_list;
    w->free_list = x;
    w->nfree++;
    f->nfree++;
    pthread_cond_signal(&f->slot_cond);
    pthread_mutex_unlock(&f->lock);
}

/* Ends a transfer: verdict, on_done, slot back. cc is curl's result. */
static void xfer_finish(struct worker *w, struct xfer *x, CURLcode cc)
{
    fetcher *f = w->f;
    fetch_error kind = x->err;
    const char *detail = x->detail;
    char reason[sizeof x->detail + sizeof x->errbuf + REASON_URL_MAX + 64];
    char url[REASON_URL_MAX + 8];
    long nconn = 0;

    if (x->state == SLOT_ACTIVE) {
        curl_multi_remove_handle(w->multi, x->easy);
        w->active--;
        if (curl_easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &nconn) != CURLE_OK)
            nconn = 0;
    }
    if (kind == FETCH_OK && cc != CURLE_OK) {
        kind = classify(x, cc);
        detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(cc);
        if (cc == CURLE_OUT_OF_MEMORY && kind == FETCH_ERR_HEADERS_TOO_LARGE)
            detail = "a header line longer than curl accepts (100 KB), or out of memory";
        long oserr = 0;
        if (kind == FETCH_ERR_CONNECT &&
            curl_easy_getinfo(x->easy, CURLINFO_OS_ERRNO, &oserr) == CURLE_OK && oserr > 0) {
            char es[96];
            if (strerror_r((int)oserr, es, sizeof es) != 0)
                snprintf(es, sizeof es, "errno %ld", oserr);
            snprintf(x->detail, sizeof x->detail, "%s: %s", detail, es);
            detail = x->detail;
        }
    }
    if (kind == FETCH_OK && x->head_done) {
        if (x->dec_broken) {
            kind = FETCH_ERR_DECODE;
            detail = x->dec_msg;
        } else if (x->dec && decoder_finish(x->dec) < 0) {
            kind = FETCH_ERR_DECODE;
            detail = decoder_error(x->dec);
        }
    }
    reason[0] = '\0';
    if (kind != FETCH_OK) {
        short_url(url, sizeof url, x->url ? x->url : "");
        snprintf(reason, sizeof reason, "%s: %s (%s)", fetch_error_name(kind), detail, url);
    }

    fetch_result res = {
        .status = x->head_done ? x->status : 0,
        .error = kind,
        .truncated = x->truncated,
        .raw_bytes = x->raw,
        .decoded_bytes = x->decoded,
        .header_bytes = x->head_total,
        .total_ms = (long)((cr_mono_ns() - x->t0_ns) / 1000000),
        .start_unix_ms = x->start_unix_ms,
        .new_connections = (int)nconn,
        .reason = reason,
    };
    count(&f->done, 1);
    count(&f->by_error[kind], 1);
    count(&f->connections, (uint64_t)nconn);
    if (x->truncated)
        count(&f->truncated, 1);
    f->hooks.on_done(f->hooks.ctx, &x->job, &res);
    slot_release(w, x);
}

/* x->cond: the worker's request headers plus the job's validators (a
 * re-crawl's conditional request). Worker thread. */
static CURLcode conditional_headers(struct worker *w, struct xfer *x)
{
    struct curl_slist *l = NULL;
    char line[1100];
    for (const struct curl_slist *h = w->req_headers; h; h = h->next) {
        struct curl_slist *n = curl_slist_append(l, h->data);
        if (n == NULL)
            goto oom;
        l = n;
    }
    const char *v[2] = {x->inm, x->ims};
    const char *name[2] = {"If-None-Match", "If-Modified-Since"};
    for (int i = 0; i < 2; i++) {
        if (v[i] == NULL)
            continue;
        snprintf(line, sizeof line, "%s: %s", name[i], v[i]);
        struct curl_slist *n = curl_slist_append(l, line);
        if (n == NULL)
            goto oom;
        l = n;
    }
    curl_slist_free_all(x->cond);
    x->cond = l;
    return CURLE_OK;
oom:
    curl_slist_free_all(l);
    return CURLE_OUT_OF_MEMORY;
}

/* Configures the slot's easy handle for its job and adds it to the multi. */
static void xfer_start(struct worker *w, struct xfer *x)
{
    fetcher *f = w->f;
    const fetch_opts *o = &f->opts;
    CURLcode c = CURLE_OK;

    x->start_unix_ms = cr_wall_ms();
    x->t0_ns = cr_mono_ns();
    x->head_total = 0;
    x->head_done = false;
    x->connected = false;
    x->status = 0;
    x->ip[0] = '\0';
    x->dec_broken = false;
    x->dec_msg[0] = '\0';
    x->raw = x->decoded = 0;
    x->truncated = false;
    x->err = FETCH_OK;
    x->detail[0] = '\0';
    x->errbuf[0] = '\0';

    if (x->easy == NULL) {
        x->easy = curl_easy_init();
        if (x->easy == NULL) {
            set_err(x, FETCH_ERR_NOMEM, "cannot make a curl handle");
            xfer_finish(w, x, CURLE_OK);
            return;
        }
    } else {
        curl_easy_reset(x->easy);
    }
    CURL *e = x->easy;
#define SET(opt, val)                                   \
    do {                                                \
        if (c == CURLE_OK)                              \
            c = curl_easy_setopt(e, opt, val);          \
    } while (0)
    SET(CURLOPT_URL, x->url);
    SET(CURLOPT_PRIVATE, x);
    SET(CURLOPT_ERRORBUFFER, x->errbuf);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_NOPROGRESS, 1L);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_HTTP_CONTENT_DECODING, 0L);
    SET(CURLOPT_HTTP_TRANSFER_DECODING, 1L);
    if (c == CURLE_OK && (x->inm || x->ims))
        c = conditional_headers(w, x);
    SET(CURLOPT_HTTPHEADER, x->cond ? x->cond : w->req_headers);
    SET(CURLOPT_USERAGENT, f->user_agent);
    SET(CURLOPT_PROXY, f->proxy ? f->proxy : "");
    if (f->proxy)
        SET(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    if (w->resolve)
        SET(CURLOPT_RESOLVE, w->resolve);
    SET(CURLOPT_HTTP_VERSION, o->http2 ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_1_1);
    SET(CURLOPT_PIPEWAIT, 1L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    SET(CURLOPT_TIMEOUT_MS, o->timeout_ms);
    if (o->low_speed_bytes > 0 && o->low_speed_time_s > 0) {
        SET(CURLOPT_LOW_SPEED_LIMIT, o->low_speed_bytes);
        SET(CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s);
    }
    SET(CURLOPT_HEADERFUNCTION, header_cb);
    SET(CURLOPT_HEADERDATA, x);
    /* CURLOPT_BUFFERSIZE stays curl's 16 KiB: on the openjdk-17-doc bench
     * site (10,272 pages, 270 MB; 3 interleaved crawls each) 256 KiB gave
     * CPU 7.42/6.20/6.29 s against 5.54/6.66/5.76 s, 1 MiB 8.88/6.47/6.14 s
     * (sys time doubled), and peak RSS +3 and +8 MiB. */
    SET(CURLOPT_WRITEFUNCTION, write_cb);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_PREREQFUNCTION, prereq_cb);
    SET(CURLOPT_PREREQDATA, x);
    if (o->keep_request) {
        SET(CURLOPT_DEBUGFUNCTION, debug_cb);
        SET(CURLOPT_DEBUGDATA, x);
        SET(CURLOPT_VERBOSE, 1L);
    }
#undef SET
    if (c != CURLE_OK) {
        set_err(x, c == CURLE_OUT_OF_MEMORY ? FETCH_ERR_NOMEM : FETCH_ERR_OTHER,
                "curl refused an option: %s", curl_easy_strerror(c));
        xfer_finish(w, x, CURLE_OK);
        return;
    }
    CURLMcode mc = curl_multi_add_handle(w->multi, e);
    if (mc != CURLM_OK) {
        set_err(x, mc == CURLM_OUT_OF_MEMORY ? FETCH_ERR_NOMEM : FETCH_ERR_OTHER,
                "curl_multi_add_handle: %s", curl_multi_strerror(mc));
        xfer_finish(w, x, CURLE_OK);
        return;
    }
    x->state = SLOT_ACTIVE;
    w->active++;
    count(&f->started, 1);
}

/* Ends the transfers curl says are done; returns how many. */
static unsigned drain_messages(struct worker *w)
{
    unsigned n = 0;
    for (;;) {
        int left = 0;
        CURLMsg *m = curl_multi_info_read(w->multi, &left);
        if (m == NULL)
            break;
        if (m->msg != CURLMSG_DONE)
            continue;
        CURLcode cc = m->data.result;
        char *priv = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        xfer_finish(w, (struct xfer *)(void *)priv, cc);
        n++;
    }
    return n;
}

static struct xfer *slot_at(struct worker *w, unsigned i)
{
    return &w->chunks[i / SLOT_CHUNK][i % SLOT_CHUNK];
}

static void abort_all(struct worker *w, long waited_ms)
{
    pthread_mutex_lock(&w->f->lock);
    unsigned made = w->nmade; /* stopping is set: no slot is made any more */
    pthread_mutex_unlock(&w->f->lock);
    for (unsigned i = 0; i < made; i++) {
        struct xfer *x = slot_at(w, i);
        if (x->state != SLOT_ACTIVE)
            continue;
        x->err = FETCH_OK; /* the abort is the verdict that counts */
        set_err(x, FETCH_ERR_ABORTED, "still running %ld ms after fetcher_stop began",
                waited_ms);
        xfer_finish(w, x, CURLE_OK);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    fetcher *f = w->f;
    int64_t stop_began = 0;

    tls_worker = w;
    for (;;) {
        pthread_mutex_lock(&f->lock);
        struct xfer *batch = w->inbox_head;
        w->inbox_head = w->inbox_tail = NULL;
        w->woken = false;
        bool stopping = f->stopping;
        int64_t deadline = f->deadline_ns;
        pthread_mutex_unlock(&f->lock);

        while (batch) {
            struct xfer *next = batch->next;
            batch->next = NULL;
            xfer_start(w, batch);
            batch = next;
        }
        int running = 0;
        curl_multi_perform(w->multi, &running);
        if (drain_messages(w) > 0 && f->hooks.on_room != NULL && !stopping) {
            pthread_mutex_lock(&f->lock);
            unsigned room = f->stopping ? 0 : w->nfree;
            pthread_mutex_unlock(&f->lock);
            if (room > 0)
                f->hooks.on_room(f->hooks.ctx, room);
        }

        long wait_ms = POLL_MAX_MS;
        if (stopping) {
            int64_t now = cr_mono_ns();
            if (stop_began == 0)
                stop_began = now;
            if (w->active == 0)
                break;
            if (now >= deadline) {
                abort_all(w, (long)((now - stop_began) / 1000000));
                break;
            }
            if (deadline - now < (int64_t)POLL_MAX_MS * 1000000)
                wait_ms = (long)((deadline - now) / 1000000) + 1;
        }
        /* a hook may have queued work here without a wakeup */
        pthread_mutex_lock(&f->lock);
        bool more = w->inbox_head != NULL;
        pthread_mutex_unlock(&f->lock);
        if (!more)
            curl_multi_poll(w->multi, NULL, 0, (int)wait_ms, NULL);
    }
    tls_worker = NULL;
    return NULL;
}

/* ---- public API -------------------------------------------------------- */

static bool has_crlf(const char *s) { return strpbrk(s, "\r\n") != NULL; }

static int check_opts(const fetch_opts *o)
{
    if (o->threads < 1 || o->threads > 256)
        return -EINVAL;
    if (o->connections < o->threads || o->connections > 100000)
        return -EINVAL;
    if (o->connect_timeout_ms < 0 || o->timeout_ms < 0 || o->low_speed_bytes < 0 ||
        o->low_speed_time_s < 0)
        return -EINVAL;
    if (o->max_body_bytes == 0 || o->max_header_bytes < 256 ||
        o->max_header_bytes > ((uint64_t)1 << 30))
        return -EINVAL;
    if (o->user_agent == NULL || o->user_agent[0] == '\0' || has_crlf(o->user_agent))
        return -EINVAL;
    if (o->proxy && has_crlf(o->proxy))
        return -EINVAL;
    if (o->nresolve > 0 && o->resolve == NULL)
        return -EINVAL;
    for (size_t i = 0; i < o->nresolve; i++)
        if (o->resolve[i] == NULL || o->resolve[i][0] == '\0' || has_crlf(o->resolve[i]))
            return -EINVAL;
    return 0;
}

/* Makes the next chunk of w's slots and puts them on its free list (under
 * f->lock, with the free list empty and nmade < nslots). 0 or -ENOMEM. */
static int make_slots(struct worker *w)
{
    const fetch_opts *o = &w->f->opts;
    unsigned n = w->nslots - w->nmade < SLOT_CHUNK ? w->nslots - w->nmade : SLOT_CHUNK;
    struct xfer *chunk = cr_calloc(SLOT_CHUNK, sizeof *chunk);
    if (chunk == NULL)
        return -ENOMEM;
    for (unsigned i = n; i-- > 0;) {
        struct xfer *x = &chunk[i];
        x->w = w;
        cr_buf_init(&x->head, (size_t)o->max_header_bytes);
        cr_buf_init(&x->fields, (size_t)o->max_header_bytes + 64);
        cr_buf_init(&x->req, FETCH_MAX_URL_BYTES + 16384);
        x->next = w->free_list;
        w->free_list = x;
    }
    w->chunks[w->nmade / SLOT_CHUNK] = chunk;
    w->nmade += n;
    return 0;
}

static int worker_init(fetcher *f, struct worker *w, unsigned index, unsigned nslots,
                       const char *const *resolve, size_t nresolve)
{
    w->f = f;
    w->index = index;
    w->chunks = cr_calloc((nslots + SLOT_CHUNK - 1) / SLOT_CHUNK, sizeof *w->chunks);
    if (w->chunks == NULL)
        return -ENOMEM;
    w->nslots = nslots;
    w->nfree = nslots;
    w->multi = curl_multi_init();
    if (w->multi == NULL)
        return -ENOMEM;
    if (curl_multi_setopt(w->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)nslots) != CURLM_OK ||
        curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, (long)nslots) != CURLM_OK)
        return -EINVAL;
    static const char *const hdrs[] = {
        "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "Accept-Encoding: gzip, deflate, br",
    };
    for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
        struct curl_slist *l = curl_slist_append(w->req_headers, hdrs[i]);
        if (l == NULL)
            return -ENOMEM;
        w->req_headers = l;
    }
    for (size_t i = 0; i < nresolve; i++) {
        struct curl_slist *l = curl_slist_append(w->resolve, resolve[i]);
        if (l == NULL)
            return -ENOMEM;
        w->resolve = l;
    }
    return 0;
}

static void worker_release(struct worker *w)
{
    for (unsigned i = 0; w->chunks && i < w->nmade; i++) {
        struct xfer *x = slot_at(w, i);
        if (x->easy)
            curl_easy_cleanup(x->easy);
        decoder_free(x->dec);
        cr_free(x->url);
        curl_slist_free_all(x->cond);
        cr_buf_release(&x->head);
        cr_buf_release(&x->fields);
        cr_buf_release(&x->req);
    }
    if (w->multi)
        curl_multi_cleanup(w->multi);
    curl_slist_free_all(w->req_headers);
    curl_slist_free_all(w->resolve);
    for (unsigned i = 0; w->chunks && i < (w->nmade + SLOT_CHUNK - 1) / SLOT_CHUNK; i++)
        cr_free(w->chunks[i]);
    cr_free(w->chunks);
}

static void wake_all(fetcher *f)
{
    for (unsigned i = 0; i < f->nworkers; i++)
        if (f->workers[i].multi)
            curl_multi_wakeup(f->workers[i].multi);
}

int fetcher_new(const fetch_opts *opts, const fetch_hooks *hooks, fetcher **out)
{
    fetcher *f = NULL;
    int rc;
    bool lock_ready = false, cond_ready = false;

    *out = NULL;
    if (opts == NULL || hooks == NULL || hooks->on_done == NULL)
        return -EINVAL;
    rc = check_opts(opts);
    if (rc < 0)
        return rc;
    rc = -ENOMEM;
    f = cr_calloc(1, sizeof *f);
    if (f == NULL)
        goto fail;
    f->opts = *opts;
    f->hooks = *hooks;
    f->deadline_ns = INT64_MAX;
    f->user_agent = cr_strdup(opts->user_agent);
    if (f->user_agent == NULL)
        goto fail;
    if (opts->proxy && opts->proxy[0]) {
        f->proxy = cr_strdup(opts->proxy);
        if (f->proxy == NULL)
            goto fail;
    }
    f->opts.user_agent = f->user_agent;
    f->opts.proxy = f->proxy;
    f->opts.resolve = NULL; /* copied into each worker's slist */
    f->opts.nresolve = 0;
    f->workers = cr_calloc(opts->threads, sizeof *f->workers);
    if (f->workers == NULL)
        goto fail;
    f->nworkers = opts->threads;
    for (unsigned i = 0; i < f->nworkers; i++) {
        unsigned n = opts->connections / opts->threads + (i < opts->connections % opts->threads);
        rc = worker_init(f, &f->workers[i], i, n, opts->resolve, opts->nresolve);
        if (rc < 0)
            goto fail;
        f->nfree += n;
    }

    pthread_condattr_t ca;
    rc = -pthread_mutex_init(&f->lock, NULL);
    if (rc < 0)
        goto fail;
    lock_ready = true;
    rc = -pthread_condattr_init(&ca);
    if (rc < 0)
        goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    rc = -pthread_cond_init(&f->slot_cond, &ca);
    pthread_condattr_destroy(&ca);
    if (rc < 0)
        goto fail;
    cond_ready = true;

    for (unsigned i = 0; i < f->nworkers; i++) {
        rc = -pthread_create(&f->workers[i].tid, NULL, worker_main, &f->workers[i]);
        if (rc < 0) {
            fetcher_stop(f, 0); /* joins the threads already running */
            goto fail;
        }
        f->workers[i].thread_started = true;
    }
    *out = f;
    return 0;

fail:
    if (f) {
        for (unsigned i = 0; f->workers && i < f->nworkers; i++)
            worker_release(&f->workers[i]);
        cr_free(f->workers);
        if (cond_ready)
            pthread_cond_destroy(&f->slot_cond);
        if (lock_ready)
            pthread_mutex_destroy(&f->lock);
        cr_free(f->user_agent);
        cr_free(f->proxy);
        cr_free(f);
    }
    return rc;
}

static struct worker *least_loaded(fetcher *f)
{
    struct worker *best = NULL;
    for (unsigned i = 0; i < f->nworkers; i++) {
        struct worker *w = &f->workers[i];
        if (w->nfree > 0 && (best == NULL || w->nfree > best->nfree))
            best = w;
    }
    return best;
}

/* A validator worth sending: 1..1024 bytes, no control byte. */
static size_t validator_len(const char *v)
{
    size_t n = v ? strnlen(v, 1025) : 0;
    if (n == 0 || n > 1024)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
            return 0;
    return n;
}

int fetcher_submit(fetcher *f, const fetch_job *job, long timeout_ms)
{
    return fetcher_submit_validated(f, job, NULL, timeout_ms);
}

int fetcher_submit_validated(fetcher *f, const fetch_job *job, const fetch_validators *v,
                             long timeout_ms)
{
    if (job == NULL || job->url == NULL)
        return -EINVAL;
    size_t ulen = strnlen(job->url, FETCH_MAX_URL_BYTES + 1);
    if (ulen > FETCH_MAX_URL_BYTES)
        return -EINVAL;
    /* one allocation: the URL, then the validators (NUL-terminated each) */
    size_t nl = v ? validator_len(v->if_none_match) : 0;
    size_t ml = v ? validator_len(v->if_modified_since) : 0;
    char *url = cr_malloc(ulen + nl + ml + 3);
    if (url == NULL)
        return -ENOMEM;
    memcpy(url, job->url, ulen);
    url[ulen] = '\0';
    char *inm = url + ulen + 1, *ims = inm + nl + 1;
    memcpy(inm, nl ? v->if_none_match : "", nl);
    inm[nl] = '\0';
    memcpy(ims, ml ? v->if_modified_since : "", ml);
    ims[ml] = '\0';
    if (tls_worker != NULL)
        timeout_ms = 0; /* a fetcher thread must never wait for itself */

    struct timespec until = {0, 0};
    if (timeout_ms > 0)
        cr_deadline_mono(timeout_ms, &until);

    int rc;
    bool timed_out = false;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        if (f->stopping) {
            rc = -ESHUTDOWN;
            break;
        }
        /* a hook's submit stays on its own thread when there is room:
         * that thread looks at its inbox before it polls, so no wakeup */
        bool own = tls_worker != NULL && tls_worker->f == f && tls_worker->nfree > 0;
        struct worker *w = own ? tls_worker : least_loaded(f);
        if (w != NULL && w->free_list == NULL && make_slots(w) < 0) {
            rc = -ENOMEM;
            break;
        }
        if (w != NULL) {
            struct xfer *x = w->free_list;
            w->free_list = x->next;
            w->nfree--;
            f->nfree--;
            x->next = NULL;
            x->state = SLOT_QUEUED;
            x->url = url;
            x->job = *job;
            x->job.url = url;
            x->inm = nl ? inm : NULL;
            x->ims = ml ? ims : NULL;
            if (w->inbox_tail)
                w->inbox_tail->next = x;
            else
                w->inbox_head = x;
            w->inbox_tail = x;
            if (!own && !w->woken) {
                w->woken = true;
                curl_multi_wakeup(w->multi);
            }
            rc = 0;
            break;
        }
        if (timeout_ms == 0 || timed_out) {
            rc = -EAGAIN;
            break;
        }
        if (timeout_ms < 0) {
            pthread_cond_wait(&f->slot_cond, &f->lock);
        } else if (pthread_cond_timedwait(&f->slot_cond, &f->lock, &until) == ETIMEDOUT) {
            timed_out = true; /* look once more, then give up */
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (rc < 0)
        cr_free(url);
    else
        count(&f->submitted, 1);
    return rc;
}

unsigned fetcher_free_slots(fetcher *f)
{
    pthread_mutex_lock(&f->lock);
    unsigned n = f->stopping ? 0 : f->nfree;
    pthread_mutex_unlock(&f->lock);
    return n;
}

int fetcher_stop(fetcher *f, long grace_ms)
{
    if (tls_worker != NULL && tls_worker->f == f)
        return -EDEADLK;
    pthread_mutex_lock(&f->lock);
    if (f->stopping) {
        pthread_mutex_unlock(&f->lock);
        return 0;
    }
    f->stopping = true;
    if (grace_ms < 0)
        f->deadline_ns = INT64_MAX;
    else if (grace_ms > (INT64_MAX / 1000000 - 1) / 2)
        f->deadline_ns = INT64_MAX;
    else
        f->deadline_ns = cr_mono_ns() + (int64_t)grace_ms * 1000000;
    wake_all(f);
    pthread_cond_broadcast(&f->slot_cond);
    pthread_mutex_unlock(&f->lock);

    for (unsigned i = 0; i < f->nworkers; i++) {
        if (f->workers[i].thread_started) {
            pthread_join(f->workers[i].tid, NULL);
            f->workers[i].thread_started = false;
        }
    }
    return 0;
}

void fetcher_abort(fetcher *f)
{
    pthread_mutex_lock(&f->lock);
    if (f->stopping) {
        f->deadline_ns = cr_mono_ns();
        wake_all(f);
    }
    pthread_mutex_unlock(&f->lock);
}

void fetcher_stats(fetcher *f, fetch_stats *out)
{
    memset(out, 0, sizeof *out);
    out->submitted = atomic_load_explicit(&f->submitted, memory_order_relaxed);
    out->started = atomic_load_explicit(&f->started, memory_order_relaxed);
    out->done = atomic_load_explicit(&f->done, memory_order_relaxed);
    for (int i = 0; i < FETCH_ERR_COUNT; i++)
        out->by_error[i] = atomic_load_explicit(&f->by_error[i], memory_order_relaxed);
    out->raw_bytes = atomic_load_explicit(&f->raw_bytes, memory_order_relaxed);
    out->decoded_bytes = atomic_load_explicit(&f->decoded_bytes, memory_order_relaxed);
    out->header_bytes = atomic_load_explicit(&f->header_bytes, memory_order_relaxed);
    out->truncated = atomic_load_explicit(&f->truncated, memory_order_relaxed);
    out->connections = atomic_load_explicit(&f->connections, memory_order_relaxed);
    out->in_flight = out->submitted > out->done ? out->submitted - out->done : 0;
}

int fetcher_thread_index(void) { return tls_worker ? (int)tls_worker->index : -1; }

void fetcher_free(fetcher *f)
{
    if (f == NULL)
        return;
    fetcher_stop(f, 0);
    for (unsigned i = 0; i < f->nworkers; i++)
        worker_release(&f->workers[i]);
    cr_free(f->workers);
    pthread_cond_destroy(&f->slot_cond);
    pthread_mutex_destroy(&f->lock);
    cr_free(f->user_agent);
    cr_free(f->proxy);
    cr_free(f);
}
