/* crawler/control: HTTP control API (see control.h).
 *
 * Who listens. control_start opens the listening socket itself (a Unix
 * socket in state_dir by default, TCP when control.listen names an
 * address) and runs an acceptor thread in front of libmicrohttpd, which is
 * started without a listening socket of its own (MHD_add_connection).
 *
 * Why the acceptor. A connection costs libmicrohttpd a slot from the moment
 * it is accepted, and its idle timeout and connection limit apply before any
 * token is checked: a few dozen connections that never send a byte would
 * lock every client out. So a new connection first waits here, where it
 * costs a descriptor and a poll entry: it is handed to libmicrohttpd once
 * its request line is in (a peek sees a line end), closed when that has not
 * happened within control.request_timeout_ms, and when one client address
 * already has control.max_per_address connections waiting, or
 * PENDING_FACTOR * control.max_connections wait in all, the oldest waiting
 * one is closed to make room: a flood of idle connections only pushes out
 * its own, and a client that sends its request at once always gets through.
 * What libmicrohttpd then holds is bounded by control.max_connections,
 * control.max_per_address (TCP) and control.idle_timeout_s. Every
 * connection closed here is counted (control_json, control_metrics).
 *
 * Threads: the acceptor owns the pending table; libmicrohttpd's thread runs
 * the request handlers; the counters are atomics; control_stop wakes the
 * acceptor through a pipe and joins it before stopping libmicrohttpd. */
#include "control.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/report/status.h"

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

#define PENDING_FACTOR 2       /* connections waiting for their request line, per slot */
#define RECHECK_MS 20          /* a partial request line is looked at again after this */
#define PEEK_BYTES 8192        /* a request line longer than this goes to MHD (414) */

typedef struct pending {
    int fd;
    int64_t since_ms;          /* accepted */
    int64_t recheck_ms;        /* > 0: bytes came but no line end; look again then */
    struct sockaddr_storage sa;
    socklen_t salen;
} pending;

struct control {
    crawl *c;
    struct MHD_Daemon *mhd;
    char *token;        /* NULL: none required */
    size_t max_body;
    char address[CONTROL_ADDRESS_MAX];
    char *sock_path;    /* the Unix socket to remove at stop; NULL for TCP */
    int listen_fd;
    int wake[2];        /* control_stop -> acceptor */
    pthread_t acceptor;
    bool acceptor_started;
    int request_timeout_ms;
    unsigned per_address;
    unsigned pending_max;
    pending *pend;      /* the acceptor's: pending_max entries */
    unsigned npend;
    struct pollfd *pfd; /* the acceptor's: pending_max + 2 entries */
    unsigned *who;      /* pfd[k] is pend[who[k]] */
    atomic_uint_fast64_t accepted, handed, cut_idle, evicted, refused, closed_early;
};

typedef struct request {
    cr_buf body;
    bool too_big;
    bool shutdown; /* stop the crawl once the answer is sent */
} request;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool is_loopback(const struct sockaddr_in *a)
{
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}

/* Constant-time comparison: the time does not depend on where they differ. */
static bool token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ (lb ? b[i % lb] : 0));
    return diff == 0;
}

static json_t *control_json(control *ctl)
{
    return json_pack("{s:s, s:I, s:I, s:{s:I, s:I, s:I, s:I}}", "listen", ctl->address,
                     "connections", (json_int_t)atomic_load(&ctl->accepted), "served",
                     (json_int_t)atomic_load(&ctl->handed), "dropped", "no_request_line",
                     (json_int_t)atomic_load(&ctl->cut_idle), "crowded_out",
                     (json_int_t)atomic_load(&ctl->evicted), "over_limit",
                     (json_int_t)atomic_load(&ctl->refused), "closed_by_client",
                     (json_int_t)atomic_load(&ctl->closed_early));
}

static void control_metrics(control *ctl, FILE *f)
{
    fprintf(f, "# HELP crawld_control_connections_total Connections the control API accepted.\n"
               "# TYPE crawld_control_connections_total counter\n"
               "crawld_control_connections_total %llu\n",
            (unsigned long long)atomic_load(&ctl->accepted));
    fprintf(f, "# HELP crawld_control_connections_dropped_total Control connections closed "
               "before a request was served, by reason.\n"
               "# TYPE crawld_control_connections_dropped_total counter\n");
    fprintf(f, "crawld_control_connections_dropped_total{reason=\"no_request_line\"} %llu\n",
            (unsigned long long)atomic_load(&ctl->cut_idle));
    fprintf(f, "crawld_control_connections_dropped_total{reason=\"crowded_out\"} %llu\n",
            (unsigned long long)atomic_load(&ctl->evicted));
    fprintf(f, "crawld_control_connections_dropped_total{reason=\"over_limit\"} %llu\n",
            (unsigned long long)atomic_load(&ctl->refused));
    fprintf(f, "crawld_control_connections_dropped_total{reason=\"closed_by_client\"} %llu\n",
            (unsigned long long)atomic_load(&ctl->closed_early));
}

static mhd_result send_text(struct MHD_Connection *con, unsigned status, const char *type,
                            char *text, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    mhd_result ret = MHD_queue_response(con, status, r);
    MHD_destroy_response(r);
    return ret;
}

static mhd_result send_json(struct MHD_Connection *con, unsigned status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (s == NULL)
        return MHD_NO;
    size_t n = strlen(s);
    char *body = malloc(n + 2);
    if (body == NULL) {
        free(s);
        return MHD_NO;
    }
    memcpy(body, s, n);
    body[n] = '\n';
    free(s);
    return send_text(con, status, "application/json", body, n + 1);
}

static mhd_result send_error(struct MHD_Connection *con, unsigned status, const char *msg)
{
    return send_json(con, status, json_pack("{s:s}", "error", msg));
}

/* {"urls": [strings]} -> the array, or NULL with *why set. */
static json_t *parse_urls(const cr_buf *body, json_t **root, const char **why)
{
    json_error_t jerr;
    *root = json_loadb(body->data ? body->data : "", body->len, 0, &jerr);
    if (*root == NULL) {
        *why = "body is not valid JSON";
        return NULL;
    }
    json_t *urls = json_object_get(*root, "urls");
    if (!json_is_array(urls)) {
        *why = "expected {\"urls\": [\"...\"]}";
        return NULL;
    }
    size_t i;
    json_t *u;
    json_array_foreach(urls, i, u) if (!json_is_string(u))
    {
        *why = "every entry of \"urls\" must be a string";
        return NULL;
    }
    return urls;
}

static mhd_result handle_urls(control *ctl, struct MHD_Connection *con, const cr_buf *body,
                              bool dedup)
{
    json_t *root = NULL;
    const char *why = NULL;
    json_t *urls = parse_urls(body, &root, &why);
    if (urls == NULL) {
        json_decref(root);
        return send_error(con, 400, why);
    }
    json_t *fresh = json_array(), *rejected = json_array();
    json_int_t known = 0, queued = 0;
    size_t i;
    json_t *u;
    json_array_foreach(urls, i, u)
    {
        const char *s = json_string_value(u);
        size_t len = json_string_length(u);
        char reason[128] = "rejected";
        int rc = dedup ? crawl_dedup_url(ctl->c, s, len)
                       : crawl_add_seed(ctl->c, s, len, reason, sizeof reason);
        if (rc == -EINVAL)
            json_array_append_new(rejected, json_pack("{s:s, s:s}", "url", s, "reason", reason));
        else if (rc < 0)
            json_array_append_new(rejected, json_pack("{s:s, s:s}", "url", s, "reason",
                                                      "storage error"));
        else if (rc == 0)
            known++;
        else if (dedup)
            json_array_append_new(fresh, json_string(s));
        else
            queued++;
    }
    json_decref(root);
    json_t *out = dedup ? json_pack("{s:o, s:I, s:o}", "new", fresh, "duplicates", known,
                                    "rejected", rejected)
                        : json_pack("{s:I, s:I, s:o}", "queued", queued, "known", known,
                                    "rejected", rejected);
    if (!dedup)
        json_decref(fresh);
    return send_json(con, 200, out);
}

/* GET /metrics: the Prometheus text, with every Bloom stage's fill. */
static mhd_result send_metrics(control *ctl, struct MHD_Connection *con)
{
    size_t cap = crawl_fill_cells(ctl->c);
    crawl_fill *cells = cr_calloc(cap, sizeof *cells);
    crawl_status st;
    crawl_status_get(ctl->c, &st, cells, cells ? cap : 0);
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (f == NULL) {
        cr_free(cells);
        return MHD_NO;
    }
    status_metrics(f, &st);
    control_metrics(ctl, f);
    fclose(f);
    cr_free(cells);
    return send_text(con, 200, "text/plain; version=0.0.4", text, n);
}

static mhd_result route(control *ctl, struct MHD_Connection *con, const char *url,
                        const char *method, request *rq)
{
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/metrics") == 0 || strcmp(url, "/v1/status") == 0) {
        if (!get)
            return send_error(con, 405, "use GET");
        if (url[1] == 'v') {
            crawl_status st;
            crawl_status_get(ctl->c, &st, NULL, 0);
            json_t *j = status_json(&st);
            if (j != NULL)
                json_object_set_new(j, "control", control_json(ctl));
            return send_json(con, 200, j);
        }
        return send_metrics(ctl, con);
    }
    bool known = strcmp(url, "/v1/seeds") == 0 || strcmp(url, "/v1/dedup") == 0 ||
                 strcmp(url, "/v1/pause") == 0 || strcmp(url, "/v1/resume") == 0 ||
                 strcmp(url, "/v1/shutdown") == 0;
    if (!known)
        return send_error(con, 404, "no such endpoint");
    if (!post)
        return send_error(con, 405, "use POST");
    if (strcmp(url, "/v1/seeds") == 0)
        return handle_urls(ctl, con, &rq->body, false);
    if (strcmp(url, "/v1/dedup") == 0)
        return handle_urls(ctl, con, &rq->body, true);
    if (strcmp(url, "/v1/pause") == 0)
        crawl_pause(ctl->c);
    else if (strcmp(url, "/v1/resume") == 0)
        crawl_resume(ctl->c);
    else
        rq->shutdown = true; /* after the answer: stopping closes this server */
    return send_json(con, 200, json_pack("{s:b}", "ok", 1));
}

static mhd_result on_request(void *cls, struct MHD_Connection *con, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_size, void **con_cls)
{
    (void)version;
    control *ctl = cls;
    request *rq = *con_cls;
    if (rq == NULL) {
        rq = cr_calloc(1, sizeof *rq);
        if (rq == NULL)
            return MHD_NO;
        cr_buf_init(&rq->body, ctl->max_body);
        *con_cls = rq;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (cr_buf_append(&rq->body, upload, *upload_size) < 0)
            rq->too_big = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (ctl->token) {
        const char *auth = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
        if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 || !token_equal(auth + 7, ctl->token))
            return send_error(con, 401, "missing or wrong bearer token");
    }
    if (rq->too_big)
        return send_error(con, 413, "request body too large");
    return route(ctl, con, url, method, rq);
}

static void on_completed(void *cls, struct MHD_Connection *con, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)con;
    (void)toe;
    control *ctl = cls;
    request *rq = *con_cls;
    if (rq && rq->shutdown)
        crawl_stop_by(ctl->c, "the control API");
    if (rq) {
        cr_buf_release(&rq->body);
        cr_free(rq);
        *con_cls = NULL;
    }
}


/* ---- the acceptor ------------------------------------------------------ */

/* Two waiting connections come from the same client address (all Unix
 * socket clients count as one). */
static bool same_address(const pending *a, const pending *b)
{
    if (a->sa.ss_family != b->sa.ss_family)
        return false;
    if (a->sa.ss_family == AF_INET)
        return ((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)&b->sa)->sin_addr.s_addr;
    if (a->sa.ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr,
                      &((const struct sockaddr_in6 *)&b->sa)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return true;
}

static void drop_pending(control *ctl, unsigned i, atomic_uint_fast64_t *why)
{
    if (why != NULL)
        atomic_fetch_add(why, 1);
    if (ctl->pend[i].fd >= 0)
        close(ctl->pend[i].fd);
    ctl->pend[i] = ctl->pend[--ctl->npend];
}

/* Makes room for p: closes the oldest waiting connection of its address
 * when that address has per_address waiting, and the oldest of all when
 * the table is full. */
static void make_room(control *ctl, const pending *p)
{
    unsigned same = 0, oldest_same = 0, oldest = 0;
    for (unsigned i = 0; i < ctl->npend; i++) {
        if (same_address(&ctl->pend[i], p)) {
            if (same == 0 || ctl->pend[i].since_ms < ctl->pend[oldest_same].since_ms)
                oldest_same = i;
            same++;
        }
        if (ctl->pend[i].since_ms < ctl->pend[oldest].since_ms)
            oldest = i;
    }
    if (same >= ctl->per_address)
        drop_pending(ctl, oldest_same, &ctl->evicted);
    else if (ctl->npend >= ctl->pending_max)
        drop_pending(ctl, oldest, &ctl->evicted);
}

static void accept_all(control *ctl, int64_t now)
{
    for (;;) {
        pending p = { .fd = -1, .since_ms = now };
        p.salen = sizeof p.sa;
        p.fd = accept(ctl->listen_fd, (struct sockaddr *)&p.sa, &p.salen);
        if (p.fd < 0)
            return; /* EAGAIN: the backlog is drained; EMFILE and the like: next round */
        fcntl(p.fd, F_SETFD, FD_CLOEXEC);
        fcntl(p.fd, F_SETFL, fcntl(p.fd, F_GETFL) | O_NONBLOCK);
        atomic_fetch_add(&ctl->accepted, 1);
        make_room(ctl, &p);
        ctl->pend[ctl->npend++] = p;
    }
}

/* Looks at what waiting connection i sent so far: hands it to MHD once a
 * line end is in. Returns 1 when it left the table. */
static int look(control *ctl, unsigned i, int64_t now)
{
    char buf[PEEK_BYTES];
    pending *p = &ctl->pend[i];
    ssize_t n = recv(p->fd, buf, sizeof buf, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n <= 0) {
        drop_pending(ctl, i, &ctl->closed_early);
        return 1;
    }
    if (memchr(buf, '\n', (size_t)n) == NULL && n < (ssize_t)sizeof buf) {
        p->recheck_ms = now + RECHECK_MS; /* a partial line: no busy loop on it */
        return 0;
    }
    int fd = p->fd;
    struct sockaddr_storage sa = p->sa;
    socklen_t salen = p->salen;
    p->fd = -1;
    drop_pending(ctl, i, NULL);
    if (MHD_add_connection(ctl->mhd, fd, (const struct sockaddr *)&sa, salen) == MHD_YES)
        atomic_fetch_add(&ctl->handed, 1);
    else
        atomic_fetch_add(&ctl->refused, 1); /* MHD closed it */
    return 1;
}

static void *acceptor_main(void *arg)
{
    control *ctl = arg;
    struct pollfd *pfd = ctl->pfd;
    unsigned *who = ctl->who;
    for (;;) {
        int64_t now = mono_ms();
        int64_t wake = now + 1000;
        unsigned n = 0;
        pfd[n++] = (struct pollfd){ .fd = ctl->wake[0], .events = POLLIN };
        pfd[n++] = (struct pollfd){ .fd = ctl->listen_fd, .events = POLLIN };
        for (unsigned i = 0; i < ctl->npend; i++) {
            pending *p = &ctl->pend[i];
            int64_t deadline = p->since_ms + ctl->request_timeout_ms;
            if (deadline < wake)
                wake = deadline;
            if (p->recheck_ms > 0) {
                if (p->recheck_ms < wake)
                    wake = p->recheck_ms;
                continue;
            }
            who[n] = i;
            pfd[n++] = (struct pollfd){ .fd = p->fd, .events = POLLIN };
        }
        int timeout = wake > now ? (int)(wake - now) : 0;
        if (poll(pfd, n, timeout) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents != 0)
            break; /* control_stop */
        now = mono_ms();
        /* readable ones first (indexes in who[] are valid until the table
         * changes, so go from the back), then rechecks and deadlines */
        for (unsigned k = n; k-- > 2;)
            if (pfd[k].revents != 0)
                look(ctl, who[k], now);
        for (unsigned i = ctl->npend; i-- > 0;) {
            pending *p = &ctl->pend[i];
            if (p->recheck_ms > 0 && now >= p->recheck_ms) {
                p->recheck_ms = 0;
                if (look(ctl, i, now))
                    continue;
            }
            if (now - ctl->pend[i].since_ms >= ctl->request_timeout_ms)
                drop_pending(ctl, i, &ctl->cut_idle);
        }
        if (pfd[1].revents != 0)
            accept_all(ctl, now);
    }
    return NULL;
}

/* libmicrohttpd's messages, on crawld's stderr with a prefix; not the
 * ones every request on a Unix socket makes (it tries TCP options there,
 * and says so), nor a client that went away mid-answer. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    static const char *const noise[] = { "TCP_NODELAY", "TCP_CORK", "Failed to push the data",
                                         "Failed to send", "closed by remote" };
    char line[1024];
    (void)cls;
    vsnprintf(line, sizeof line, fmt, ap);
    for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++)
        if (strstr(line, noise[i]) != NULL)
            return;
    size_t n = strlen(line);
    fprintf(stderr, "crawld: control API: %s%s", line, n > 0 && line[n - 1] == '\n' ? "" : "\n");
}

/* ---- the listening socket ---------------------------------------------- */

/* A Unix socket at path (its parent must exist). A socket file left by a
 * crawld that is gone is replaced; one that answers belongs to a running
 * crawld and is an error. Paths longer than sun_path are reached through
 * /proc/self/fd of their folder. */
static int listen_unix(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char via[sizeof sa.sun_path];
    int dirfd = -1, fd = -1;
    const char *use = path;
    if (strlen(path) >= sizeof sa.sun_path) {
        const char *slash = strrchr(path, '/');
        char dir[4096];
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0 ||
            snprintf(via, sizeof via, "/proc/self/fd/%d/%s", dirfd, slash ? slash + 1 : path) >=
                (int)sizeof via) {
            snprintf(err, errlen, "control socket path %s is too long", path);
            goto fail;
        }
        use = via;
    }
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", use);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot make a Unix socket: %s", strerror(errno));
        goto fail;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "%s exists and is not a socket; refusing to replace it", path);
            goto fail;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0;
        if (probe >= 0)
            close(probe);
        if (live) {
            snprintf(err, errlen, "%s is the control socket of a running crawld", path);
            goto fail;
        }
        unlink(path); /* left by a crawld that is gone */
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        goto fail;
    }
    chmod(path, 0600); /* the crawl's owner only, as the state folder is */
    if (listen(fd, 1024) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
        unlink(path);
        goto fail;
    }
    if (dirfd >= 0)
        close(dirfd);
    return fd;
fail:
    if (fd >= 0)
        close(fd);
    if (dirfd >= 0)
        close(dirfd);
    return -1;
}

static int listen_tcp(const char *listen_on, const char *token, char *bound, size_t boundlen,
                      char *err, size_t errlen)
{
    const char *colon = strrchr(listen_on, ':');
    if (colon == NULL || colon == listen_on) {
        snprintf(err, errlen, "control.listen '%s' is not \"unix\", \"unix:PATH\" or ADDRESS:PORT",
                 listen_on);
        return -1;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen_on), listen_on);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    char *end;
    long port = strtol(colon + 1, &end, 10);
    struct sockaddr_in sa = { 0 };
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (colon[1] == '\0' || *end != '\0' || port < 0 || port > 65535 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "control.listen '%s' is not IPv4-ADDRESS:PORT", listen_on);
        return -1;
    }
    if (!is_loopback(&sa) && token[0] == '\0') {
        snprintf(err, errlen, "control.listen %s is not loopback: set control.token", listen_on);
        return -1;
    }
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot make a socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EADDRINUSE)
            snprintf(err, errlen,
                     "control.listen %s: the port is taken (another crawld, or another program, "
                     "listens there); choose another port, or \"unix\" for a socket in the state "
                     "folder",
                     listen_on);
        else
            snprintf(err, errlen, "cannot listen on %s: %s", listen_on, strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t len = sizeof sa;
    if (listen(fd, 1024) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        snprintf(err, errlen, "cannot listen on %s: %s", listen_on, strerror(errno));
        close(fd);
        return -1;
    }
    snprintf(bound, boundlen, "%s:%u", host, (unsigned)ntohs(sa.sin_port));
    return fd;
}

int control_socket_path(const crawl_config *cfg, const char *state_dir, char *out, size_t len)
{
    const char *l = cfg->control.listen;
    const char *rel;
    if (strcmp(l, "unix") == 0)
        rel = CONTROL_SOCKET_NAME;
    else if (strncmp(l, "unix:", 5) == 0 && l[5] != '\0')
        rel = l + 5;
    else
        return 0;
    int n = rel[0] == '/' ? snprintf(out, len, "%s", rel)
                          : snprintf(out, len, "%s/%s", state_dir ? state_dir
                                                                  : cfg->storage.state_dir, rel);
    return n >= 0 && (size_t)n < len ? 1 : -1;
}

control *control_start(crawl *c, const crawl_config *cfg, char *err, size_t errlen)
{
    control *ctl = cr_calloc(1, sizeof *ctl);
    if (ctl == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ctl->listen_fd = -1;
    ctl->wake[0] = ctl->wake[1] = -1;
    ctl->c = c;
    ctl->max_body = (size_t)cfg->control.max_body_bytes;
    ctl->request_timeout_ms = (int)cfg->control.request_timeout_ms;
    ctl->per_address = (unsigned)cfg->control.max_per_address;
    ctl->pending_max = PENDING_FACTOR * (unsigned)cfg->control.max_connections;
    ctl->token = cfg->control.token[0] ? cr_strdup(cfg->control.token) : NULL;
    ctl->pend = cr_calloc(ctl->pending_max, sizeof *ctl->pend);
    ctl->pfd = cr_calloc(ctl->pending_max + 2, sizeof *ctl->pfd);
    ctl->who = cr_calloc(ctl->pending_max + 2, sizeof *ctl->who);
    if ((cfg->control.token[0] && ctl->token == NULL) || ctl->pend == NULL || ctl->pfd == NULL ||
        ctl->who == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    char path[4096];
    int unix_sock = control_socket_path(cfg, NULL, path, sizeof path);
    if (unix_sock < 0) {
        snprintf(err, errlen, "control socket path too long");
        goto fail;
    }
    bool tcp = unix_sock == 0;
    if (tcp) {
        ctl->listen_fd = listen_tcp(cfg->control.listen, cfg->control.token, ctl->address,
                                    sizeof ctl->address, err, errlen);
    } else {
        ctl->listen_fd = listen_unix(path, err, errlen);
        if (ctl->listen_fd >= 0) {
            ctl->sock_path = cr_strdup(path);
            if (ctl->sock_path == NULL) {
                unlink(path);
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
        }
        snprintf(ctl->address, sizeof ctl->address, "unix:%s", path);
    }
    if (ctl->listen_fd < 0)
        goto fail;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_NO_LISTEN_SOCKET |
                     MHD_USE_ITC | MHD_USE_ERROR_LOG;
    ctl->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, ctl,
                                MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)NULL,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctl,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->control.max_connections,
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                tcp ? (unsigned)cfg->control.max_per_address : 0u,
                                MHD_OPTION_CONNECTION_TIMEOUT,
                                (unsigned)cfg->control.idle_timeout_s, MHD_OPTION_END);
    if (ctl->mhd == NULL) {
        snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(errno));
        goto fail;
    }
    if (pipe(ctl->wake) != 0) {
        snprintf(err, errlen, "cannot make a pipe: %s", strerror(errno));
        goto fail;
    }
    fcntl(ctl->wake[0], F_SETFD, FD_CLOEXEC);
    fcntl(ctl->wake[1], F_SETFD, FD_CLOEXEC);
    int rc = pthread_create(&ctl->acceptor, NULL, acceptor_main, ctl);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the acceptor thread: %s", strerror(rc));
        goto fail;
    }
    ctl->acceptor_started = true;
    return ctl;
fail:
    control_stop(ctl);
    return NULL;
}

const char *control_address(const control *ctl) { return ctl->address; }

void control_stop(control *ctl)
{
    if (ctl == NULL)
        return;
    if (ctl->acceptor_started) {
        ssize_t w = write(ctl->wake[1], "x", 1);
        (void)w;
        pthread_join(ctl->acceptor, NULL);
    }
    for (unsigned i = 0; i < ctl->npend; i++)
        close(ctl->pend[i].fd);
    if (ctl->listen_fd >= 0)
        close(ctl->listen_fd);
    if (ctl->sock_path != NULL)
        unlink(ctl->sock_path);
    if (ctl->mhd)
        MHD_stop_daemon(ctl->mhd);
    for (int i = 0; i < 2; i++)
        if (ctl->wake[i] >= 0)
            close(ctl->wake[i]);
    cr_free(ctl->sock_path);
    cr_free(ctl->pend);
    cr_free(ctl->pfd);
    cr_free(ctl->who);
    cr_free(ctl->token);
    cr_free(ctl);
}
