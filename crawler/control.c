/* crawler/control: HTTP control API (see control.h). */
#include "control.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/report/status.h"

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

struct control {
    crawl *c;
    struct MHD_Daemon *mhd;
    char *token;        /* NULL: none required */
    size_t max_body;
    char address[80];
};

typedef struct request {
    cr_buf body;
    bool too_big;
    bool shutdown; /* stop the crawl once the answer is sent */
} request;

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
            return send_json(con, 200, status_json(&st));
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

control *control_start(crawl *c, const crawl_config *cfg, char *err, size_t errlen)
{
    const char *listen = cfg->control.listen;
    const char *colon = strrchr(listen, ':');
    if (colon == NULL || colon == listen) {
        snprintf(err, errlen, "control.listen '%s' is not ADDRESS:PORT", listen);
        return NULL;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof host, "127.0.0.1");
    char *end;
    long port = strtol(colon + 1, &end, 10);
    struct sockaddr_in sa = { 0 };
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (*end != '\0' || port < 0 || port > 65535 || inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        snprintf(err, errlen, "control.listen '%s' is not IPv4-ADDRESS:PORT", listen);
        return NULL;
    }
    if (!is_loopback(&sa) && cfg->control.token[0] == '\0') {
        snprintf(err, errlen, "control.listen %s is not loopback: set control.token", listen);
        return NULL;
    }
    control *ctl = cr_calloc(1, sizeof *ctl);
    if (ctl == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ctl->c = c;
    ctl->max_body = (size_t)cfg->control.max_body_bytes;
    ctl->token = cfg->control.token[0] ? cr_strdup(cfg->control.token) : NULL;
    ctl->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                on_request, ctl, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctl,
                                MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT,
                                30u, MHD_OPTION_END);
    if (ctl->mhd == NULL) {
        snprintf(err, errlen, "cannot listen on %s: %s", listen, strerror(errno));
        control_stop(ctl);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(ctl->mhd, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(ctl->address, sizeof ctl->address, "%s:%u", host,
             info ? (unsigned)info->port : (unsigned)port);
    return ctl;
}

const char *control_address(const control *ctl) { return ctl->address; }

void control_stop(control *ctl)
{
    if (ctl == NULL)
        return;
    if (ctl->mhd)
        MHD_stop_daemon(ctl->mhd);
    cr_free(ctl->token);
    cr_free(ctl);
}
