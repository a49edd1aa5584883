/* tests/test_fetch_site: crawler/fetch against the local test site.
 *
 * One site (tests/site, bin/testsite) is started for the whole group with
 * small options, and one fetcher (2 threads, 8 connections, a 1 MiB body
 * cap, hosts a.test..d.test and x.test pinned to the site's port) fetches
 * each kind of page the site's README lists. Every job records what its
 * hooks saw (response fields, raw and decoded bytes, hook order, the
 * result); the cases assert on that record and on the site's request log
 * (one line per request the site received: host, target, status, body
 * bytes), which is what shows a redirect was reported and not followed, and
 * that byte counts match what the site sent. Cases that need other options
 * (a short total timeout, a cap exactly at a body's size) make a fetcher of
 * their own. No timing upper bound is asserted anywhere; the few lower
 * bounds follow from the site's own delays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/fetch.h"
#include "crawler/web/url.h"
#include "tests/support/testsite.h"

#define UA "crawld-fetch-site-test/1.0 (+http://example.invalid/bot)"
#define CAP (1u << 20)          /* max_body_bytes of the main fetcher */
#define BIG_BYTES 3000000       /* --big-bytes: over CAP */
#define BOMB_MIB 64             /* --bomb-mib */
#define DELAY_MS 1500           /* --delay-ms */
#define THREADS 2
#define CONNECTIONS 8
#define WAIT_S 120              /* a job not done by then is a failure (a hang) */
#define REC_BODY_MAX (4u << 20) /* a record keeps up to this much decoded body */

static const char *const SITE_ARGS[] = {
    "--seed", "11", "--pages", "50", "--hosts", "4", "--delay-ms", "1500",
    "--big-bytes", "3000000", "--bomb-mib", "64", "--flaky", "2", "--retry-after", "1", NULL,
};
/* The site's hosts, and one it does not serve (pinned all the same). */
static const char *const HOSTS[] = { "a.test", "b.test", "c.test", "d.test", "x.test" };
#define NHOSTS (sizeof(HOSTS) / sizeof(HOSTS[0]))

static testsite S;
static char pins[NHOSTS][128];
static const char *pin_ptrs[NHOSTS];
static fetcher *F; /* the main fetcher */

/* ---- what the hooks saw for one job ------------------------------------ */

typedef struct rec {
    char url[512];
    /* on_response */
    int responses;
    long status;
    int http_version;
    char ip[64];
    bool has_ctype, has_cenc, has_location, has_retry_after;
    char ctype[256];
    char cenc[128];
    char location[2048];
    char retry_after[128];
    long retry_after_s;
    char headers[8192];        /* first bytes of the header block */
    size_t headers_len;        /* its whole length */
    char request[4096];        /* first bytes of the request as sent */
    /* on_raw / on_body */
    unsigned raw_calls, body_calls;
    uint64_t raw_seen, body_seen;
    unsigned char raw_head[16];
    size_t raw_head_len;
    cr_buf body;               /* decoded body, up to REC_BODY_MAX */
    bool body_overflow;
    /* hook order and threads */
    int order_errors;          /* body before on_response, anything after on_done */
    int bad_thread;            /* a hook ran off the fetcher threads */
    /* on_done */
    int done;                  /* under lock */
    int dones;
    fetch_result res;          /* res.reason points at reason below */
    char reason[1024];
} rec;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static void copy_str(char *dst, size_t cap, const char *src, bool *has)
{
    if (src == NULL) {
        dst[0] = '\0';
        if (has)
            *has = false;
        return;
    }
    snprintf(dst, cap, "%s", src);
    if (has)
        *has = true;
}

static void check_thread(rec *r)
{
    int i = fetcher_thread_index();
    if (i < 0 || i >= THREADS)
        r->bad_thread++;
}

static int on_response(void *ctx, const fetch_job *job, const fetch_response *resp)
{
    rec *r = job->user;
    (void)ctx;
    check_thread(r);
    if (r->dones > 0)
        r->order_errors++;
    r->responses++;
    r->status = resp->status;
    r->http_version = resp->http_version;
    copy_str(r->ip, sizeof(r->ip), resp->remote_ip, NULL);
    copy_str(r->ctype, sizeof(r->ctype), resp->content_type, &r->has_ctype);
    copy_str(r->cenc, sizeof(r->cenc), resp->content_encoding, &r->has_cenc);
    copy_str(r->location, sizeof(r->location), resp->location, &r->has_location);
    copy_str(r->retry_after, sizeof(r->retry_after), resp->retry_after, &r->has_retry_after);
    r->retry_after_s = resp->retry_after_s;
    size_t n = resp->headers_len < sizeof(r->headers) - 1 ? resp->headers_len
                                                           : sizeof(r->headers) - 1;
    memcpy(r->headers, resp->headers, n);
    r->headers[n] = '\0';
    r->headers_len = resp->headers_len;
    n = resp->request_len < sizeof(r->request) - 1 ? resp->request_len : sizeof(r->request) - 1;
    memcpy(r->request, resp->request, n);
    r->request[n] = '\0';
    return 0;
}

static int on_raw(void *ctx, const fetch_job *job, const char *data, size_t len)
{
    rec *r = job->user;
    (void)ctx;
    check_thread(r);
    if (r->responses == 0 || r->dones > 0)
        r->order_errors++;
    r->raw_calls++;
    r->raw_seen += len;
    while (len > 0 && r->raw_head_len < sizeof(r->raw_head)) {
        r->raw_head[r->raw_head_len++] = (unsigned char)*data++;
        len--;
    }
    return 0;
}

static int on_body(void *ctx, const fetch_job *job, const char *data, size_t len)
{
    rec *r = job->user;
    (void)ctx;
    check_thread(r);
    if (r->responses == 0 || r->dones > 0)
        r->order_errors++;
    r->body_calls++;
    r->body_seen += len;
    if (!r->body_overflow && cr_buf_append(&r->body, data, len) != 0)
        r->body_overflow = true;
    return 0;
}

static void on_done(void *ctx, const fetch_job *job, const fetch_result *res)
{
    rec *r = job->user;
    (void)ctx;
    check_thread(r);
    r->dones++;
    r->res = *res;
    copy_str(r->reason, sizeof(r->reason), res->reason, NULL);
    r->res.reason = r->reason;
    pthread_mutex_lock(&lock);
    r->done = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static const fetch_hooks HOOKS = { .on_response = on_response, .on_raw = on_raw,
                                    .on_body = on_body, .on_done = on_done };

/* ---- helpers ------------------------------------------------------------ */

static void site_url(const char *host, const char *target, char *out, size_t cap)
{
    assert_int_equal(testsite_url(&S, host, target, out, cap), 0);
}

static void rec_init(rec *r, const char *url)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->url, sizeof(r->url), "%s", url);
    r->retry_after_s = -2; /* not seen */
    cr_buf_init(&r->body, REC_BODY_MAX);
}

static void rec_release(rec *r)
{
    cr_buf_release(&r->body);
}

static void submit(fetcher *f, rec *r, uint64_t id)
{
    fetch_job job = { id, r->url, 0, r };
    assert_int_equal(fetcher_submit(f, &job, -1), 0);
}

static void wait_done(rec *r)
{
    struct timespec until;
    int rc = 0;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_S;
    pthread_mutex_lock(&lock);
    while (!r->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&cond, &lock, &until);
    int done = r->done;
    pthread_mutex_unlock(&lock);
    if (!done)
        fail_msg("no on_done for %s within %d s", r->url, WAIT_S);
}

/* Fetches url with f and waits for on_done; the record is the caller's to
 * release. Checks what holds for every job. */
static void fetch_with(fetcher *f, const char *url, rec *r)
{
    rec_init(r, url);
    submit(f, r, 1);
    wait_done(r);
    assert_int_equal(r->dones, 1);
    assert_int_equal(r->order_errors, 0);
    assert_int_equal(r->bad_thread, 0);
    assert_true(r->responses <= 1);
    assert_false(r->body_overflow);
    /* what the hooks were given is what the result counts */
    assert_int_equal(r->raw_seen, r->res.raw_bytes);
    assert_int_equal(r->body_seen, r->res.decoded_bytes);
    assert_int_equal(r->body.len, r->res.decoded_bytes);
    assert_int_equal(r->res.status, r->responses ? r->status : 0);
    if (r->res.error == FETCH_OK) {
        assert_string_equal(r->res.reason, "");
    } else {
        /* "KIND: detail (URL)" */
        char head[64];
        snprintf(head, sizeof(head), "%s: ", fetch_error_name(r->res.error));
        assert_true(strncmp(r->res.reason, head, strlen(head)) == 0);
        assert_non_null(strstr(r->res.reason, r->url));
    }
    assert_true(r->res.total_ms >= 0);
}

static void fetch_page(const char *host, const char *target, rec *r)
{
    char url[512];
    site_url(host, target, url, sizeof(url));
    fetch_with(F, url, r);
}

static const char *mem_find(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    if (k == 0)
        return hay;
    for (size_t i = 0; i + k <= n; i++) {
        if (hay[i] == needle[0] && memcmp(hay + i, needle, k) == 0)
            return hay + i;
    }
    return NULL;
}

static bool body_has(const rec *r, const char *s)
{
    return r->body.len > 0 && mem_find(r->body.data, r->body.len, s) != NULL;
}

/* The value of header `name` in the recorded block, or -1 when absent. */
static int header_value(const rec *r, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = strchr(r->headers, '\n'); /* skip the status line */
    while (p != NULL && *p != '\0') {
        p++;
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
            const char *v = p + nl + 1;
            size_t vl = len - nl - 1;
            while (vl > 0 && (*v == ' ' || *v == '\t')) {
                v++;
                vl--;
            }
            while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
                vl--;
            snprintf(out, cap, "%.*s", (int)vl, v);
            return 0;
        }
        p = e;
    }
    return -1;
}

static long long content_length(const rec *r)
{
    char v[64];
    if (header_value(r, "Content-Length", v, sizeof(v)) != 0)
        return -1;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    return end != v && *end == '\0' ? n : -1;
}

/* GET requests in the site's log for host + target: how many, and the
 * status and body bytes of the last one. */
typedef struct logq {
    size_t count;
    int status;
    unsigned long long bytes;
} logq;

static logq log_query(const char *host, const char *target)
{
    testsite_req *v = NULL;
    size_t n = 0;
    logq q = { 0, 0, 0 };
    int rc = testsite_log_read(&S, &v, &n);
    if (rc != 0)
        fail_msg("cannot read the site's log: %s", strerror(-rc));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].host, host) == 0 && strcmp(v[i].method, "GET") == 0 &&
            strcmp(v[i].target, target) == 0) {
            q.count++;
            q.status = v[i].status;
            q.bytes = v[i].bytes;
        }
    }
    testsite_log_free(v, n);
    return q;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Waits until the log holds `count` GET requests for host + target (a
 * request the client gave up on is logged when the site answers it). */
static void log_wait(const char *host, const char *target, size_t count)
{
    for (int waited = 0; waited < WAIT_S * 1000; waited += 20) {
        if (log_query(host, target).count >= count)
            return;
        sleep_ms(20);
    }
    fail_msg("the site never logged %s%s", host, target);
}

/* Fetches host + target and checks it was exactly one request to the site
 * whose answer the fetcher reported whole: status and body bytes equal to
 * the log's. */
static void fetch_whole(const char *host, const char *target, rec *r)
{
    size_t before = log_query(host, target).count;
    fetch_page(host, target, r);
    logq after = log_query(host, target);
    assert_int_equal(after.count, before + 1);
    assert_int_equal(r->res.error, FETCH_OK);
    assert_false(r->res.truncated);
    assert_int_equal(r->responses, 1);
    assert_int_equal(r->res.status, after.status);
    assert_int_equal(r->res.raw_bytes, after.bytes);
    assert_int_equal(r->res.decoded_bytes, after.bytes);
    assert_int_equal(r->res.header_bytes, r->headers_len);
    long long clen = content_length(r);
    if (clen >= 0)
        assert_int_equal(clen, after.bytes);
}

static fetcher *fetcher_make(long timeout_ms, uint64_t max_body, bool keep_request)
{
    fetch_opts o;
    fetcher *f = NULL;
    memset(&o, 0, sizeof(o));
    o.threads = THREADS;
    o.connections = CONNECTIONS;
    o.connect_timeout_ms = 10000;
    o.timeout_ms = timeout_ms;
    o.low_speed_bytes = 0; /* off: the trickling page is slow on purpose */
    o.low_speed_time_s = 0;
    o.max_body_bytes = max_body;
    o.max_header_bytes = 64 * 1024;
    o.user_agent = UA;
    o.resolve = pin_ptrs;
    o.nresolve = NHOSTS;
    o.keep_request = keep_request;
    int rc = fetcher_new(&o, &HOOKS, &f);
    if (rc != 0)
        fail_msg("fetcher_new: %s", strerror(-rc));
    return f;
}

/* ---- cases -------------------------------------------------------------- */

static void test_html_page(void **state)
{
    (void)state;
    rec r;
    char want[128], v[64];
    struct timespec t0, t1;
    clock_gettime(CLOCK_REALTIME, &t0);
    fetch_whole("a.test", "/", &r);
    clock_gettime(CLOCK_REALTIME, &t1);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.http_version, 11);
    assert_string_equal(r.ip, "127.0.0.1");
    assert_true(r.has_ctype);
    assert_string_equal(r.ctype, "text/html; charset=utf-8");
    assert_false(r.has_cenc);
    assert_false(r.has_location);
    assert_false(r.has_retry_after);
    assert_int_equal(r.retry_after_s, -1);
    assert_true(strncmp(r.headers, "HTTP/1.1 200", 12) == 0);
    assert_true(r.headers_len >= 4 && strcmp(r.headers + strlen(r.headers) - 4, "\r\n\r\n") == 0);
    assert_true(body_has(&r, "Page 0 of a.test"));
    assert_true(r.body.len > 500);
    assert_memory_equal(r.body.data, "<!DOCTYPE html>", 15);
    /* identity coding: the raw bytes are the decoded ones */
    assert_int_equal(r.res.raw_bytes, r.res.decoded_bytes);
    /* the wall-clock start lies within the call */
    int64_t ms0 = (int64_t)t0.tv_sec * 1000 + t0.tv_nsec / 1000000;
    int64_t ms1 = (int64_t)t1.tv_sec * 1000 + t1.tv_nsec / 1000000;
    assert_true(r.res.start_unix_ms >= ms0 && r.res.start_unix_ms <= ms1);
    /* the request as sent (keep_request): our User-Agent, Host, codings */
    assert_true(strncmp(r.request, "GET / HTTP/1.1\r\n", 16) == 0);
    snprintf(want, sizeof(want), "\r\nHost: a.test:%d\r\n", S.port);
    assert_non_null(strstr(r.request, want));
    assert_non_null(strstr(r.request, "\r\nUser-Agent: " UA "\r\n"));
    assert_non_null(strstr(r.request, "\r\nAccept-Encoding: gzip, deflate, br\r\n"));
    assert_null(strstr(r.request, "Cookie"));
    assert_int_equal(header_value(&r, "Content-Type", v, sizeof(v)), 0);
    assert_string_equal(v, r.ctype);
    rec_release(&r);

    /* a regular article of another host (virtual host by the pinned name) */
    fetch_whole("b.test", "/sec1/Article17.html", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/html; charset=utf-8");
    assert_true(body_has(&r, "Page 17 of b.test"));
    assert_true(body_has(&r, "</html>"));
    rec_release(&r);
}

static void test_robots_txt(void **state)
{
    (void)state;
    rec r;
    fetch_whole("a.test", "/robots.txt", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/plain");
    assert_true(body_has(&r, "User-agent: *\n"));
    assert_true(body_has(&r, "Disallow: /private/\n"));
    assert_true(body_has(&r, "Allow: /private/public.html\n"));
    assert_true(body_has(&r, "Disallow: /hidden/%62locked.html\n"));
    assert_false(body_has(&r, "Crawl-delay"));
    rec_release(&r);

    fetch_whole("b.test", "/robots.txt", &r);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "Disallow: /private/\n"));
    assert_true(body_has(&r, "Crawl-delay: 1\n"));
    rec_release(&r);

    /* an HTTP error status is not a fetch error */
    fetch_whole("c.test", "/robots.txt", &r);
    assert_int_equal(r.status, 404);
    assert_false(body_has(&r, "Disallow"));
    rec_release(&r);

    fetch_whole("d.test", "/robots.txt", &r);
    assert_int_equal(r.status, 500);
    assert_false(body_has(&r, "Disallow"));
    rec_release(&r);
}

/* The Location of a redirect, resolved and canonicalized the way the
 * crawler turns it into a discovered link. */
static void resolve_location(const char *base, const char *location, cr_buf *out)
{
    url_canon *c = url_canon_new(NULL);
    url_reject why = URL_OK;
    assert_non_null(c);
    assert_int_equal(url_canon_resolve(c, base, strlen(base), location, strlen(location), out,
                                       &why),
                     0);
    url_canon_free(c);
}

static void expect_redirect(const char *target, long code, const char *raw_location,
                            const char *to_host, const char *to_target)
{
    rec r;
    char url[256], want[256];
    cr_buf got;
    size_t dest_before = log_query(to_host, to_target).count;

    fetch_whole("a.test", target, &r);
    if (r.status != code)
        print_message("%s answered %ld\n", target, r.status);
    assert_int_equal(r.status, code);
    assert_true(r.has_location);
    if (raw_location != NULL)
        assert_string_equal(r.location, raw_location);
    /* reported, not followed: the site saw nothing for the destination
     * (for a self-redirect fetch_whole checked that the one request was
     * the only one) */
    if (strcmp(to_host, "a.test") != 0 || strcmp(to_target, target) != 0)
        assert_int_equal(log_query(to_host, to_target).count, dest_before);

    site_url("a.test", target, url, sizeof(url));
    site_url(to_host, to_target, want, sizeof(want));
    cr_buf_init(&got, 0);
    resolve_location(url, r.location, &got);
    assert_string_equal(got.data, want);
    cr_buf_release(&got);
    rec_release(&r);
}

static void test_redirects(void **state)
{
    (void)state;
    char abs[128];
    site_url("a.test", "/redirect/landing.html", abs, sizeof(abs));

    /* relative, then absolute Location */
    expect_redirect("/redirect/short", 301, "short2", "a.test", "/redirect/short2");
    expect_redirect("/redirect/short2", 302, abs, "a.test", "/redirect/landing.html");

    /* every redirect status of the chain, one hop at a time */
    static const long codes[] = { 301, 302, 303, 307, 308, 301, 302 };
    for (int k = 1; k <= 7; k++) {
        char t[64], next[64];
        snprintf(t, sizeof(t), "/redirect/hop/%d", k);
        snprintf(next, sizeof(next), "/redirect/hop/%d", k + 1);
        expect_redirect(t, codes[k - 1], NULL, "a.test", next);
    }
    rec r;
    fetch_whole("a.test", "/redirect/hop/8", &r); /* the chain's end */
    assert_int_equal(r.status, 200);
    assert_false(r.has_location);
    rec_release(&r);

    /* loops: each request answered once, nothing more */
    expect_redirect("/redirect/loop/a", 302, "b", "a.test", "/redirect/loop/b");
    expect_redirect("/redirect/loop/b", 302, "/redirect/loop/a", "a.test", "/redirect/loop/a");
    expect_redirect("/redirect/self", 301, "/redirect/self", "a.test", "/redirect/self");

    /* a messy Location canonicalizes to the page; one to another host */
    expect_redirect("/redirect/messy", 301, NULL, "a.test", "/sec1/Article17.html");
    expect_redirect("/redirect/offsite", 302, NULL, "b.test", "/");

    /* a 302 without Location: reported as such, no error */
    fetch_whole("a.test", "/redirect/no-location", &r);
    assert_int_equal(r.status, 302);
    assert_false(r.has_location);
    rec_release(&r);
}

static void test_error_statuses(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        long status;
    } cases[] = {
        { "/status/403", 403 },
        { "/status/404", 404 },
        { "/status/410", 410 },
        { "/status/500", 500 },
        { "/no/such/page.html", 404 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rec r;
        fetch_whole("a.test", cases[i].target, &r);
        assert_int_equal(r.status, cases[i].status);
        assert_string_equal(r.ctype, "text/plain; charset=utf-8");
        assert_false(r.has_location);
        assert_false(r.has_retry_after);
        assert_int_equal(r.retry_after_s, -1);
        assert_true(r.body.len > 0);
        assert_false(body_has(&r, "href"));
        rec_release(&r);
    }
}

static void test_retry_after(void **state)
{
    (void)state;
    rec r;
    fetch_whole("a.test", "/status/503", &r);
    assert_int_equal(r.status, 503);
    assert_string_equal(r.retry_after, "1");
    assert_int_equal(r.retry_after_s, 1);
    rec_release(&r);

    fetch_whole("a.test", "/status/429", &r);
    assert_int_equal(r.status, 429);
    assert_string_equal(r.retry_after, "1");
    assert_int_equal(r.retry_after_s, 1);
    rec_release(&r);

    /* an HTTP-date one second ahead, converted to seconds from now: 1, or 0
     * if a second boundary passed in between, never in the past */
    fetch_whole("a.test", "/status/503-date", &r);
    assert_int_equal(r.status, 503);
    assert_true(r.has_retry_after);
    assert_true(strlen(r.retry_after) == 29);
    assert_string_equal(r.retry_after + 25, " GMT");
    assert_true(r.retry_after_s >= 0 && r.retry_after_s <= 2);
    rec_release(&r);
}

static void test_flaky(void **state)
{
    (void)state;
    rec r;
    /* the first two /flaky/ requests to c.test answer 503, later ones 200 */
    fetch_whole("c.test", "/flaky/1.html", &r);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.retry_after_s, 1);
    rec_release(&r);
    fetch_whole("c.test", "/flaky/2.html", &r);
    assert_int_equal(r.status, 503);
    assert_int_equal(r.retry_after_s, 1);
    rec_release(&r);
    fetch_whole("c.test", "/flaky/1.html", &r);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.ctype, "text/html; charset=utf-8");
    assert_false(r.has_retry_after);
    assert_true(body_has(&r, "</html>"));
    rec_release(&r);
    assert_int_equal(log_query("c.test", "/flaky/1.html").count, 2);
}

/* A body over the cap: cut at exactly CAP raw and decoded bytes. */
static void expect_cut(const char *target, rec *r)
{
    fetch_stats s0, s1;
    size_t before = log_query("a.test", target).count;
    fetcher_stats(F, &s0);
    fetch_page("a.test", target, r);
    fetcher_stats(F, &s1);
    logq q = log_query("a.test", target);
    assert_int_equal(q.count, before + 1);
    assert_int_equal(q.bytes, BIG_BYTES); /* what the site meant to send */
    assert_int_equal(r->status, 200);
    assert_int_equal(r->responses, 1);
    assert_int_equal(r->res.error, FETCH_ERR_BODY_TOO_LARGE);
    assert_true(r->res.truncated);
    assert_int_equal(r->res.raw_bytes, CAP);
    assert_int_equal(r->res.decoded_bytes, CAP);
    assert_memory_equal(r->body.data, "<!DOCTYPE html>", 15);
    assert_int_equal(s1.by_error[FETCH_ERR_BODY_TOO_LARGE], s0.by_error[FETCH_ERR_BODY_TOO_LARGE] + 1);
    assert_int_equal(s1.truncated, s0.truncated + 1);
}

static void test_oversized(void **state)
{
    (void)state;
    rec r;
    char v[64];
    expect_cut("/big/huge.html", &r);
    assert_int_equal(content_length(&r), BIG_BYTES);
    rec_release(&r);

    expect_cut("/big/chunked.html", &r);
    assert_int_equal(content_length(&r), -1);
    assert_int_equal(header_value(&r, "Transfer-Encoding", v, sizeof(v)), 0);
    assert_string_equal(v, "chunked");
    rec_release(&r);
}

static void test_gzip_bomb(void **state)
{
    (void)state;
    rec r;
    size_t before = log_query("a.test", "/big/bomb.html").count;
    fetch_page("a.test", "/big/bomb.html", &r);
    logq q = log_query("a.test", "/big/bomb.html");
    assert_int_equal(q.count, before + 1);
    assert_int_equal(r.status, 200);
    assert_true(r.has_cenc);
    assert_string_equal(r.cenc, "gzip");
    assert_int_equal(r.res.error, FETCH_ERR_BODY_TOO_LARGE);
    assert_true(r.res.truncated);
    assert_non_null(strstr(r.res.reason, "decoded"));
    /* the decoded side stops at the cap, all of it the bomb's spaces */
    assert_int_equal(r.res.decoded_bytes, CAP);
    for (size_t i = 0; i < r.body.len; i++) {
        if (r.body.data[i] != ' ')
            fail_msg("decoded byte %zu is 0x%02x, not a space", i, (unsigned char)r.body.data[i]);
    }
    /* the raw side stayed small: far less than the whole wire body (about
     * 1 KB per decoded MiB), which it never read */
    assert_true(r.raw_head_len >= 2);
    assert_int_equal(r.raw_head[0], 0x1f);
    assert_int_equal(r.raw_head[1], 0x8b);
    assert_true(r.res.raw_bytes > 0);
    assert_true(r.res.raw_bytes < q.bytes);
    assert_true(r.res.raw_bytes * 16 <= CAP);
    assert_true(q.bytes < (uint64_t)BOMB_MIB * 4096); /* the site's side: a bomb indeed */
    rec_release(&r);
}

static void test_non_html(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        const char *ctype;
        const char *starts;
        size_t starts_len;
    } cases[] = {
        { "/img/3.png", "image/png", "\x89PNG\r\n\x1a\n", 8 },
        { "/special/image.html", "image/png", "\x89PNG\r\n\x1a\n", 8 },
        { "/style.css", "text/css", "body {", 6 },
        { "/app.js", "application/javascript", "/*", 2 },
        { "/doc/3.pdf", "application/pdf", "%PDF-", 5 },
        { "/doc/9.pdf?download=1", "application/pdf", "%PDF-", 5 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rec r;
        fetch_whole("a.test", cases[i].target, &r); /* exact byte count = the log's */
        assert_int_equal(r.status, 200);
        assert_string_equal(r.ctype, cases[i].ctype);
        assert_int_equal(content_length(&r), (long long)r.body.len);
        assert_true(r.body.len >= cases[i].starts_len);
        assert_memory_equal(r.body.data, cases[i].starts, cases[i].starts_len);
        rec_release(&r);
    }
    /* the PNG is binary and arrives intact: it ends with the IEND chunk */
    rec r;
    fetch_whole("a.test", "/img/4.png", &r);
    assert_true(r.body.len > 12);
    assert_memory_equal(r.body.data + r.body.len - 12, "\0\0\0\0IEND\xae\x42\x60\x82", 12);
    rec_release(&r);
}

static void test_text_and_html_variants(void **state)
{
    (void)state;
    static const struct {
        const char *target;
        const char *ctype;
        const char *contains;
    } cases[] = {
        { "/special/plain.txt", "text/plain; charset=utf-8", "<a href" },
        { "/special/upper-ctype.html", "Text/HTML; Charset=UTF-8", "/hidden/from-upper-ctype.html" },
        { "/special/latin1.html", "text/html; charset=iso-8859-1", "caf\xe9" },
        { "/special/page.xhtml", "application/xhtml+xml", "<?xml version=\"1.0\"" },
        { "/special/fake.png", "text/html", "/hidden/from-fake-png.html" },
        { "/special/malformed.html", "text/html", "\xff\xfe" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rec r;
        fetch_whole("a.test", cases[i].target, &r); /* fetched whole */
        assert_int_equal(r.status, 200);
        assert_string_equal(r.ctype, cases[i].ctype);
        if (!body_has(&r, cases[i].contains))
            fail_msg("%s lacks %s", cases[i].target, cases[i].contains);
        rec_release(&r);
    }
    /* the malformed page ends inside an anchor: still read to its end */
    rec r;
    fetch_whole("a.test", "/special/malformed.html", &r);
    assert_true(body_has(&r, "mal-eof"));
    assert_true(body_has(&r, "mal-in-comment"));
    rec_release(&r);
}

static void test_unknown_host(void **state)
{
    (void)state;
    rec r;
    /* x.test is pinned to the site, which does not serve it */
    fetch_whole("x.test", "/", &r);
    assert_int_equal(r.status, 404);
    assert_true(body_has(&r, "unknown host"));
    rec_release(&r);

    /* nothing listening at all: a connect error, not a status */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    char url[128];
    assert_true(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0); /* bound, no listen */
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/", ntohs(sa.sin_port));
    fetch_with(F, url, &r);
    close(fd);
    assert_int_equal(r.res.error, FETCH_ERR_CONNECT);
    assert_int_equal(r.responses, 0);
    assert_int_equal(r.res.status, 0);
    assert_int_equal(r.res.raw_bytes, 0);
    rec_release(&r);
}

static void test_trickle(void **state)
{
    (void)state;
    rec r;
    fetch_whole("a.test", "/slow/trickle.html", &r);
    assert_int_equal(r.status, 200);
    assert_true(body_has(&r, "</html>"));
    /* ten pieces with a pause of DELAY_MS / 10 between them: the body came
     * in several writes, over at least the nine pauses */
    assert_true(r.raw_calls >= 2);
    assert_true(r.res.total_ms >= 9 * (DELAY_MS / 10) - 50);
    rec_release(&r);
}

static void test_slow_timeout(void **state)
{
    (void)state;
    fetcher *t = fetcher_make(1000, CAP, false); /* total timeout 1 s < DELAY_MS */
    char url[256];
    rec quick, patient;
    site_url("a.test", "/slow/delay.html", url, sizeof(url));
    size_t before = log_query("a.test", "/slow/delay.html").count;

    /* both at once: one with the short timeout, one with the main fetcher */
    rec_init(&quick, url);
    rec_init(&patient, url);
    submit(t, &quick, 1);
    submit(F, &patient, 2);
    wait_done(&quick);
    wait_done(&patient);

    assert_int_equal(quick.dones, 1);
    assert_int_equal(quick.order_errors, 0);
    assert_int_equal(quick.res.error, FETCH_ERR_TIMEOUT);
    assert_int_equal(quick.responses, 0);
    assert_int_equal(quick.res.status, 0);
    assert_int_equal(quick.res.decoded_bytes, 0);
    assert_false(quick.res.truncated);
    assert_true(strncmp(quick.res.reason, "timeout: ", 9) == 0);
    assert_non_null(strstr(quick.res.reason, url));
    assert_true(quick.res.total_ms >= 900);

    assert_int_equal(patient.res.error, FETCH_OK);
    assert_int_equal(patient.status, 200);
    assert_true(patient.res.total_ms >= DELAY_MS - 50);
    assert_true(body_has(&patient, "</html>"));

    /* the site answered both (the first to nobody) */
    log_wait("a.test", "/slow/delay.html", before + 2);
    assert_int_equal(log_query("a.test", "/slow/delay.html").count, before + 2);

    fetch_stats st;
    fetcher_stats(t, &st);
    assert_int_equal(st.by_error[FETCH_ERR_TIMEOUT], 1);
    assert_int_equal(st.done, 1);
    fetcher_free(t);
    rec_release(&quick);
    rec_release(&patient);
}

static void test_cap_boundary(void **state)
{
    (void)state;
    rec r;
    char url[256];
    fetch_whole("a.test", "/style.css", &r);
    uint64_t size = r.res.decoded_bytes;
    assert_true(size > 10);
    rec_release(&r);
    site_url("a.test", "/style.css", url, sizeof(url));

    /* a body of exactly max_body_bytes is whole, not truncated */
    fetcher *f = fetcher_make(60000, size, false);
    fetch_with(f, url, &r);
    assert_int_equal(r.res.error, FETCH_OK);
    assert_false(r.res.truncated);
    assert_int_equal(r.res.decoded_bytes, size);
    rec_release(&r);
    fetcher_free(f);

    /* one byte less and it is cut */
    f = fetcher_make(60000, size - 1, false);
    fetch_with(f, url, &r);
    assert_int_equal(r.res.error, FETCH_ERR_BODY_TOO_LARGE);
    assert_true(r.res.truncated);
    assert_int_equal(r.res.raw_bytes, size - 1);
    assert_int_equal(r.res.decoded_bytes, size - 1);
    rec_release(&r);
    fetcher_free(f);
}

static void test_connection_reuse(void **state)
{
    (void)state;
    /* one at a time to one host: each worker's kept-alive connection is
     * reused, so at most one new connection per fetcher thread */
    enum { N = 10 };
    int opened = 0, reused = 0;
    for (int i = 0; i < N; i++) {
        char t[64];
        rec r;
        snprintf(t, sizeof(t), "/sec%d/", i % 8);
        fetch_whole("d.test", t, &r);
        assert_int_equal(r.status, 200);
        assert_true(r.res.new_connections >= 0 && r.res.new_connections <= 1);
        opened += r.res.new_connections;
        reused += r.res.new_connections == 0;
        rec_release(&r);
    }
    assert_true(opened <= THREADS);
    assert_true(reused >= N - THREADS);
}

static void test_many_at_once(void **state)
{
    (void)state;
    /* regular pages of every host in flight together, more jobs than
     * connections: each job gets its own page */
    enum { N = 40 };
    static const int pages[] = { 0, 3, 9, 12, 17, 19, 23, 31, 40, 49 };
    rec *v = cr_calloc(N, sizeof(*v));
    size_t before[N];
    assert_non_null(v);
    for (int i = 0; i < N; i++) {
        char url[256], t[96];
        int pg = pages[i % 10];
        if (pg == 0)
            snprintf(t, sizeof(t), "/");
        else if (pg <= 8)
            snprintf(t, sizeof(t), "/sec%d/", pg - 1);
        else if (pg % 10 == 9)
            snprintf(t, sizeof(t), "/list?cat=%d&n=%d", (pg / 10) % 5, pg);
        else
            snprintf(t, sizeof(t), "/sec%d/Article%d.html", pg % 8, pg);
        before[i] = log_query(HOSTS[i / 10], t).count;
        site_url(HOSTS[i / 10], t, url, sizeof(url));
        rec_init(&v[i], url);
    }
    for (int i = 0; i < N; i++)
        submit(F, &v[i], (uint64_t)i);
    for (int i = 0; i < N; i++)
        wait_done(&v[i]);
    for (int i = 0; i < N; i++) {
        char want[64];
        const char *t = strchr(strstr(v[i].url, "//") + 2, '/');
        rec *r = &v[i];
        assert_int_equal(r->dones, 1);
        assert_int_equal(r->order_errors, 0);
        assert_int_equal(r->bad_thread, 0);
        assert_int_equal(r->res.error, FETCH_OK);
        assert_int_equal(r->status, 200);
        snprintf(want, sizeof(want), "Page %d of %s<", pages[i % 10], HOSTS[i / 10]);
        if (!body_has(r, want))
            fail_msg("%s: no \"%s\" in the body", r->url, want);
        logq q = log_query(HOSTS[i / 10], t);
        assert_int_equal(q.count, before[i] + 1);
        assert_int_equal(r->res.decoded_bytes, q.bytes);
        rec_release(r);
    }
    cr_free(v);
}

static void test_stats_add_up(void **state)
{
    (void)state;
    fetch_stats st;
    uint64_t sum = 0;
    fetcher_stats(F, &st);
    for (int e = 0; e < FETCH_ERR_COUNT; e++)
        sum += st.by_error[e];
    assert_true(st.done > 0);
    assert_int_equal(st.submitted, st.done);
    assert_int_equal(st.started, st.done);
    assert_int_equal(st.in_flight, 0);
    assert_int_equal(sum, st.done);
    assert_true(st.connections >= 1);
    assert_true(st.connections < st.done); /* connections were reused */
    assert_true(st.by_error[FETCH_ERR_BODY_TOO_LARGE] >= 3);
}

/* ---- group -------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    int rc = testsite_start(&S, SITE_ARGS);
    if (rc != 0) {
        fprintf(stderr, "cannot start the test site: %s\n", strerror(-rc));
        return -1;
    }
    for (size_t i = 0; i < NHOSTS; i++) {
        if (testsite_resolve(&S, HOSTS[i], pins[i], sizeof(pins[i])) != 0)
            return -1;
        pin_ptrs[i] = pins[i];
    }
    fetch_opts o;
    memset(&o, 0, sizeof(o));
    o.threads = THREADS;
    o.connections = CONNECTIONS;
    o.connect_timeout_ms = 10000;
    o.timeout_ms = 60000; /* a safety net only: nothing here takes that long */
    o.max_body_bytes = CAP;
    o.max_header_bytes = 64 * 1024;
    o.user_agent = UA;
    o.resolve = pin_ptrs;
    o.nresolve = NHOSTS;
    o.keep_request = true;
    rc = fetcher_new(&o, &HOOKS, &F);
    if (rc != 0) {
        fprintf(stderr, "fetcher_new: %s\n", strerror(-rc));
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    if (F != NULL)
        fetcher_stop(F, 0);
    fetcher_free(F);
    F = NULL;
    return testsite_stop(&S) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_html_page),
        cmocka_unit_test(test_robots_txt),
        cmocka_unit_test(test_redirects),
        cmocka_unit_test(test_error_statuses),
        cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_flaky),
        cmocka_unit_test(test_oversized),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_non_html),
        cmocka_unit_test(test_text_and_html_variants),
        cmocka_unit_test(test_unknown_host),
        cmocka_unit_test(test_trickle),
        cmocka_unit_test(test_slow_timeout),
        cmocka_unit_test(test_cap_boundary),
        cmocka_unit_test(test_connection_reuse),
        cmocka_unit_test(test_many_at_once),
        cmocka_unit_test(test_stats_add_up),
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    curl_global_cleanup();
    return failed;
}
