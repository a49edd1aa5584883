/* tests/support/httpd: the static file server for tests (see httpd.h). */
#include "tests/support/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

struct httpd {
    char root[1024];
    struct MHD_Daemon *d;
    int port;
    pthread_mutex_t lock;
    size_t n, ranges;
    char *log[HTTPD_LOG_MAX];
};

static const char *mime_of(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        { ".html", "text/html; charset=utf-8" }, { ".js", "application/javascript" },
        { ".json", "application/json" },          { ".wacz", "application/wacz" },
        { ".css", "text/css" },                   { ".png", "image/png" },
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Parses "bytes=A-B" / "bytes=A-" / "bytes=-N" against size: 1 and the
 * span, 0 when there is none we can honour (then the whole file), -1 when
 * it is unsatisfiable. */
static int parse_range(const char *v, uint64_t size, uint64_t *from, uint64_t *len)
{
    if (v == NULL || strncmp(v, "bytes=", 6) != 0 || strchr(v, ',') != NULL)
        return 0;
    const char *p = v + 6;
    char *end;
    if (*p == '-') {
        unsigned long long n = strtoull(p + 1, &end, 10);
        if (end == p + 1 || *end != '\0')
            return 0;
        if (n == 0 || size == 0)
            return -1;
        if (n > size)
            n = size;
        *from = size - n;
        *len = n;
        return 1;
    }
    unsigned long long a = strtoull(p, &end, 10);
    if (end == p || *end != '-')
        return 0;
    p = end + 1;
    unsigned long long b = size ? size - 1 : 0;
    if (*p != '\0') {
        b = strtoull(p, &end, 10);
        if (end == p || *end != '\0' || b < a)
            return 0;
    }
    if (a >= size)
        return -1;
    if (b >= size)
        b = size - 1;
    *from = a;
    *len = b - a + 1;
    return 1;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **req_cls)
{
    httpd *h = cls;
    (void)version;
    (void)data;
    (void)data_size;
    if (*req_cls == NULL) { /* headers seen; answer on the next call */
        *req_cls = h;
        return MHD_YES;
    }
    pthread_mutex_lock(&h->lock);
    if (h->n < HTTPD_LOG_MAX)
        h->log[h->n] = strdup(url);
    h->n++;
    pthread_mutex_unlock(&h->lock);
    if (strcmp(method, "HEAD") != 0 && strcmp(method, "GET") != 0) /* MHD sends no body to HEAD */
        return answer_text(c, 405, "method not allowed\n");
    const char *path = url;
    if (path[0] != '/' || strstr(path, "/.") != NULL || strlen(path) > 512)
        return answer_text(c, 404, "not found\n");
    char full[1600];
    snprintf(full, sizeof full, "%s%s", h->root, path);
    char *q = strchr(full + strlen(h->root), '?');
    if (q != NULL)
        *q = '\0';
    size_t fl = strlen(full);
    if (full[fl - 1] == '/') /* a folder's target: its index.html */
        snprintf(full + fl, sizeof full - fl, "index.html");
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0)
            close(fd);
        return answer_text(c, 404, "not found\n");
    }
    uint64_t size = (uint64_t)sb.st_size, from = 0, len = size;
    int rr = parse_range(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range"), size, &from,
                         &len);
    if (rr < 0) {
        close(fd);
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        char cr[64];
        snprintf(cr, sizeof cr, "bytes */%" PRIu64, size);
        MHD_add_response_header(r, "Content-Range", cr);
        enum MHD_Result ret = MHD_queue_response(c, 416, r);
        MHD_destroy_response(r);
        return ret;
    }
    struct MHD_Response *r = MHD_create_response_from_fd_at_offset64(len, fd, (uint64_t)from);
    if (r == NULL) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", mime_of(full));
    MHD_add_response_header(r, "Accept-Ranges", "bytes");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    unsigned status = 200;
    if (rr == 1) {
        char cr[96];
        snprintf(cr, sizeof cr, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, from, from + len - 1,
                 size);
        MHD_add_response_header(r, "Content-Range", cr);
        status = 206;
        pthread_mutex_lock(&h->lock);
        h->ranges++;
        pthread_mutex_unlock(&h->lock);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

httpd *httpd_start(const char *root)
{
    httpd *h = calloc(1, sizeof *h);
    if (h == NULL)
        return NULL;
    snprintf(h->root, sizeof h->root, "%s", root);
    pthread_mutex_init(&h->lock, NULL);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
        if (fd >= 0)
            close(fd);
        httpd_stop(h);
        return NULL;
    }
    h->port = ntohs(sa.sin_port);
    h->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                                MHD_USE_POLL,
                            0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET,
                            (MHD_socket)fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
                            MHD_OPTION_END);
    if (h->d == NULL) {
        close(fd);
        httpd_stop(h);
        return NULL;
    }
    return h;
}

int httpd_port(const httpd *h) { return h->port; }

size_t httpd_requests(httpd *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->n;
    pthread_mutex_unlock(&h->lock);
    return n;
}

size_t httpd_ranges(httpd *h)
{
    pthread_mutex_lock(&h->lock);
    size_t n = h->ranges;
    pthread_mutex_unlock(&h->lock);
    return n;
}

const char *httpd_target(httpd *h, size_t i)
{
    pthread_mutex_lock(&h->lock);
    const char *t = i < h->n && i < HTTPD_LOG_MAX && h->log[i] ? h->log[i] : "";
    pthread_mutex_unlock(&h->lock);
    return t;
}

void httpd_stop(httpd *h)
{
    if (h == NULL)
        return;
    if (h->d != NULL)
        MHD_stop_daemon(h->d);
    for (size_t i = 0; i < h->n && i < HTTPD_LOG_MAX; i++)
        free(h->log[i]);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
