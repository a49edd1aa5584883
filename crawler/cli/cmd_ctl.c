/* crawler/cmd_ctl: the subcommands that talk to a running daemon through
 * its control API: `crawld status`, `pause`, `resume`, `shutdown` and
 * `seed`. They find it the way the daemon listens (crawler/control.h): by
 * default the Unix socket in the state folder (--state DIR, else
 * storage.state_dir), or the TCP address of control.listen with
 * control.token, or wherever --control says.
 *
 * The client is a small HTTP/1.0 one: one request per connection, the
 * answer read to the end of the stream (at most CTL_MAX_ANSWER bytes), every
 * wait bounded by CTL_TIMEOUT_MS. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/buf.h"
#include "crawler/control.h"
#include "crawler/report/summary.h"

#define CTL_TIMEOUT_MS 10000
#define CTL_MAX_ANSWER (64u << 20)

static const char usage_status[] =
    "usage: crawld status [--state DIR] [--json | --metrics] [--control WHERE]\n"
    "                     [-c FILE] [--set K=V]...\n"
    "\n"
    "Asks the crawl running on DIR (default: storage.state_dir) for its figures,\n"
    "live, through its control API, and prints them as `crawld run` does at the\n"
    "end. The API is found as the configuration says (control.listen): by\n"
    "default the Unix socket control.sock in DIR. Exits 1 when no crawl\n"
    "answers there; `crawld stats --state DIR` reads the figures a finished\n"
    "crawl stored.\n"
    "\n"
    "  --state DIR      the crawl's state folder\n"
    "  --json           the figures as JSON (GET /v1/status)\n"
    "  --metrics        the Prometheus text (GET /metrics)\n"
    "  --control WHERE  the API at WHERE instead: unix:PATH or ADDRESS:PORT\n";

#define USAGE_ACTION(cmd, verb, note)                                                      \
    "usage: crawld " cmd " [--state DIR] [--control WHERE] [-c FILE] [--set K=V]...\n"      \
    "\n" verb " the crawl running on DIR (default: storage.state_dir) through its\n"        \
    "control API (see `crawld status --help` for how it is found)" note ".\n"

static const char usage_seed[] =
    "usage: crawld seed [--state DIR] [--control WHERE] [-c FILE] [--set K=V]... URL...\n"
    "\n"
    "Queues seed URLs in the crawl running on DIR (default: storage.state_dir),\n"
    "through its control API (POST /v1/seeds), and prints how many were queued,\n"
    "already known and rejected (with the reason; exit 1 when any was). '-'\n"
    "reads URLs from stdin, one per line.\n";

typedef struct target {
    char where[CONTROL_ADDRESS_MAX]; /* "unix:PATH" or "ADDRESS:PORT" */
    const char *token;               /* NULL: none */
} target;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes: 0, -ETIMEDOUT. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* A connected socket to t->where, or a negative errno. */
static int dial(const target *t, int64_t deadline)
{
    int fd;
    int rc;
    if (strncmp(t->where, "unix:", 5) == 0) {
        const char *path = t->where + 5;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char via[sizeof sa.sun_path];
        int dirfd = -1;
        if (strlen(path) >= sizeof sa.sun_path) { /* as the daemon binds it */
            const char *slash = strrchr(path, '/');
            char dir[4096];
            snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
            dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dirfd < 0)
                return -errno;
            snprintf(via, sizeof via, "/proc/self/fd/%d/%s", dirfd, slash ? slash + 1 : path);
            path = via;
        }
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        rc = fd < 0 ? -errno : connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : -errno;
        if (dirfd >= 0)
            close(dirfd);
    } else {
        const char *colon = strrchr(t->where, ':');
        char host[64];
        struct sockaddr_in sa = { .sin_family = AF_INET };
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        snprintf(host, sizeof host, "%.*s", colon ? (int)(colon - t->where) : 0, t->where);
        if (strcmp(host, "localhost") == 0)
            snprintf(host, sizeof host, "127.0.0.1");
        if (colon == NULL || end == colon + 1 || *end != '\0' || port <= 0 || port > 65535 ||
            inet_pton(AF_INET, host, &sa.sin_addr) != 1)
            return -EINVAL;
        sa.sin_port = htons((uint16_t)port);
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return -errno;
        rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : -errno;
        if (rc == -EINPROGRESS) {
            int soerr = 0;
            socklen_t len = sizeof soerr;
            rc = wait_fd(fd, POLLOUT, deadline);
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr != 0)
                rc = -soerr;
        }
    }
    if (fd >= 0 && rc < 0) {
        close(fd);
        return rc;
    }
    if (fd >= 0)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

/* One request; *status and body get the answer. 0, or a negative errno
 * (-EBADMSG: not an HTTP answer). */
static int ctl_request(const target *t, const char *method, const char *path, const char *body,
                       long *status, cr_buf *answer)
{
    int64_t deadline = mono_ms() + CTL_TIMEOUT_MS;
    cr_buf req, raw;
    int rc;
    cr_buf_init(&req, 0);
    cr_buf_init(&raw, CTL_MAX_ANSWER);
    int fd = dial(t, deadline);
    if (fd < 0)
        return fd;
    rc = cr_buf_printf(&req, "%s %s HTTP/1.0\r\nHost: crawld\r\nContent-Length: %zu\r\n", method,
                       path, body ? strlen(body) : 0);
    if (rc == 0 && t->token != NULL)
        rc = cr_buf_printf(&req, "Authorization: Bearer %s\r\n", t->token);
    if (rc == 0)
        rc = cr_buf_printf(&req, "Content-Type: application/json\r\n\r\n%s", body ? body : "");
    for (size_t off = 0; rc == 0 && off < req.len;) {
        ssize_t n = send(fd, req.data + off, req.len - off, MSG_NOSIGNAL);
        if (n > 0)
            off += (size_t)n;
        else if (n < 0 && (errno == EAGAIN || errno == EINTR))
            rc = wait_fd(fd, POLLOUT, deadline);
        else
            rc = -errno;
    }
    while (rc == 0) {
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0)
            break;
        if (n > 0)
            rc = cr_buf_append(&raw, buf, (size_t)n);
        else if (errno == EAGAIN || errno == EINTR)
            rc = wait_fd(fd, POLLIN, deadline);
        else
            rc = -errno;
    }
    close(fd);
    const char *sep = raw.data ? strstr(raw.data, "\r\n\r\n") : NULL;
    if (rc == 0 && (sep == NULL || sscanf(raw.data, "HTTP/%*d.%*d %ld", status) != 1))
        rc = -EBADMSG;
    if (rc == 0)
        rc = cr_buf_append(answer, sep + 4, raw.len - (size_t)(sep + 4 - raw.data));
    cr_buf_release(&req);
    cr_buf_release(&raw);
    return rc;
}

/* Where the API of the crawl on dir is, from the configuration (or
 * --control). 0, or 1 after printing why there is none. */
static int find_target(const char *cmd, const crawl_config *cfg, const char *dir,
                       const char *override, target *t)
{
    t->token = cfg->control.token[0] ? cfg->control.token : NULL;
    if (override != NULL) {
        snprintf(t->where, sizeof t->where, "%s", override);
        return 0;
    }
    char path[4096];
    int u = control_socket_path(cfg, dir, path, sizeof path);
    if (u > 0) {
        snprintf(t->where, sizeof t->where, "unix:%s", path);
        return 0;
    }
    if (u < 0 || cfg->control.listen[0] == '\0') {
        fprintf(stderr, "crawld %s: %s\n", cmd,
                u < 0 ? "the control socket path is too long"
                      : "control.listen is \"\" (no control API): say where with --control");
        return 1;
    }
    snprintf(t->where, sizeof t->where, "%s", cfg->control.listen);
    return 0;
}

/* Sends one request and reports failures; 0 with *answer filled on a 2xx,
 * else 1 after printing why. */
static int call(const char *cmd, const target *t, const char *dir, const char *method,
                const char *path, const char *body, cr_buf *answer)
{
    long status = 0;
    int rc = ctl_request(t, method, path, body, &status, answer);
    if (rc == -ENOENT || rc == -ECONNREFUSED) {
        fprintf(stderr,
                "crawld %s: no crawl answers at %s (%s); is one running on %s? "
                "`crawld stats --state %s` reads the figures a finished crawl stored\n",
                cmd, t->where, strerror(-rc), dir, dir);
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "crawld %s: %s: %s\n", cmd, t->where,
                rc == -EBADMSG ? "not an HTTP answer" : rc == -EINVAL ? "not unix:PATH or ADDRESS:PORT"
                                                                      : strerror(-rc));
        return 1;
    }
    if (status < 200 || status > 299) {
        json_error_t jerr;
        json_t *j = json_loadb(answer->data ? answer->data : "", answer->len, 0, &jerr);
        const char *msg = json_string_value(json_object_get(j, "error"));
        fprintf(stderr, "crawld %s: %s answered %ld%s%s%s\n", cmd, t->where, status,
                msg ? ": " : "", msg ? msg : "",
                status == 401 ? " (set control.token, e.g. --set control.token='\"...\"')" : "");
        json_decref(j);
        return 1;
    }
    return 0;
}

/* The options every one of these commands takes. 0 to go on (argv[*rest..]
 * left for the command), else the exit code. */
typedef struct ctl_args {
    cli_conf cc;
    const char *dir;
    const char *control;
    bool json, metrics;
    const char *urls[1024];
    int nurls;
} ctl_args;

static int parse(const char *cmd, const char *usage, int argc, char **argv, ctl_args *a,
                 bool takes_urls, crawl_config *cfg)
{
    bool status = strcmp(cmd, "status") == 0;
    const cli_opt opts[] = {
        { "--state", NULL, "DIR", &a->dir, NULL, "the crawl's state folder (its control.sock)" },
        { "--control", NULL, "WHERE", &a->control, NULL,
          "the control API: a socket path, or HOST:PORT" },
        { status ? "--json" : NULL, NULL, NULL, NULL, &a->json, "the figures as JSON" },
        { "--metrics", NULL, NULL, NULL, &a->metrics, "the Prometheus text" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int first = argc;
    int code = cli_parse(&a->cc, cmd, usage, opts, takes_urls ? CLI_REST_OPERANDS : CLI_NO_OPERANDS,
                         argc, argv, NULL, takes_urls ? &first : NULL);
    if (code != CLI_GO_ON)
        return code;
    for (int i = first; takes_urls && i < argc; i++) {
        if (a->nurls == (int)(sizeof a->urls / sizeof a->urls[0])) {
            fprintf(stderr, "crawld %s: at most %zu URLs; use '-' and stdin for more\n", cmd,
                    sizeof a->urls / sizeof a->urls[0]);
            return 2;
        }
        a->urls[a->nurls++] = argv[i];
    }
    if (cli_conf_load(&a->cc, cmd, cfg, false) != 0)
        return 1;
    if (a->dir == NULL)
        a->dir = cfg->storage.state_dir;
    return -1;
}

int cmd_status(int argc, char **argv)
{
    ctl_args a = { 0 };
    crawl_config cfg;
    int rc = parse("status", usage_status, argc, argv, &a, false, &cfg);
    if (rc >= 0)
        return rc;
    target t;
    cr_buf answer;
    cr_buf_init(&answer, 0);
    rc = find_target("status", &cfg, a.dir, a.control, &t);
    if (rc == 0)
        rc = call("status", &t, a.dir, "GET", a.metrics ? "/metrics" : "/v1/status", NULL, &answer);
    if (rc == 0 && (a.json || a.metrics)) {
        fwrite(answer.data ? answer.data : "", 1, answer.len, stdout);
    } else if (rc == 0) {
        json_error_t jerr;
        json_t *st = json_loadb(answer.data ? answer.data : "", answer.len, 0, &jerr);
        if (st == NULL) {
            fprintf(stderr, "crawld status: %s: the answer is not JSON\n", t.where);
            rc = 1;
        } else {
            bool paused = json_is_true(json_object_get(st, "paused"));
            bool stopping = json_is_true(json_object_get(st, "stopping"));
            printf("crawld on %s: %s, %.0f s\n", a.dir,
                   stopping ? "stopping" : paused ? "paused" : "running",
                   json_number_value(json_object_get(st, "elapsed_s")));
            summary_crawl_print(stdout, st);
            json_decref(st);
        }
    }
    cr_buf_release(&answer);
    config_release(&cfg);
    return rc;
}

static int action(const char *cmd, const char *usage, const char *path, int argc, char **argv)
{
    ctl_args a = { 0 };
    crawl_config cfg;
    int rc = parse(cmd, usage, argc, argv, &a, false, &cfg);
    if (rc >= 0)
        return rc;
    target t;
    cr_buf answer;
    cr_buf_init(&answer, 0);
    rc = find_target(cmd, &cfg, a.dir, a.control, &t);
    if (rc == 0)
        rc = call(cmd, &t, a.dir, "POST", path, "", &answer);
    if (rc == 0)
        printf("crawld %s: done (%s)\n", cmd, t.where);
    cr_buf_release(&answer);
    config_release(&cfg);
    return rc;
}

int cmd_pause(int argc, char **argv)
{
    return action("pause",
                  USAGE_ACTION("pause", "Pauses", ": no more URLs\nare handed out, fetches in "
                                                  "flight finish"),
                  "/v1/pause", argc, argv);
}

int cmd_resume(int argc, char **argv)
{
    return action("resume", USAGE_ACTION("resume", "Resumes", ""), "/v1/resume", argc, argv);
}

int cmd_shutdown(int argc, char **argv)
{
    return action("shutdown",
                  USAGE_ACTION("shutdown", "Stops", ", as SIGTERM\ndoes: fetches in flight "
                                                    "finish and the state is saved"),
                  "/v1/shutdown", argc, argv);
}

int cmd_seed(int argc, char **argv)
{
    ctl_args a = { 0 };
    crawl_config cfg;
    int rc = parse("seed", usage_seed, argc, argv, &a, true, &cfg);
    if (rc >= 0)
        return rc;
    json_t *urls = json_array();
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < a.nurls && urls != NULL; i++) {
        if (strcmp(a.urls[i], "-") != 0) {
            json_array_append_new(urls, json_string(a.urls[i]));
            continue;
        }
        ssize_t n;
        while ((n = getline(&line, &cap, stdin)) >= 0) {
            while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
                line[--n] = '\0';
            if (n > 0 && line[0] != '#')
                json_array_append_new(urls, json_stringn(line, (size_t)n));
        }
    }
    free(line);
    target t;
    cr_buf answer;
    cr_buf_init(&answer, 0);
    char *body = NULL;
    if (a.nurls == 0) {
        fputs("crawld seed: no URLs (try 'crawld seed --help')\n", stderr);
        rc = 2;
    } else {
        json_t *o = json_pack("{s:O}", "urls", urls);
        body = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        rc = body == NULL ? 1 : find_target("seed", &cfg, a.dir, a.control, &t);
    }
    if (rc == 0)
        rc = call("seed", &t, a.dir, "POST", "/v1/seeds", body, &answer);
    if (rc == 0) {
        json_error_t jerr;
        json_t *j = json_loadb(answer.data ? answer.data : "", answer.len, 0, &jerr);
        json_t *rej = json_object_get(j, "rejected");
        printf("crawld seed: %lld queued, %lld already known, %zu rejected\n",
               (long long)json_integer_value(json_object_get(j, "queued")),
               (long long)json_integer_value(json_object_get(j, "known")), json_array_size(rej));
        size_t i;
        json_t *r;
        json_array_foreach(rej, i, r)
        {
            printf("  %s: %s\n", json_string_value(json_object_get(r, "url")),
                   json_string_value(json_object_get(r, "reason")));
        }
        rc = json_array_size(rej) > 0 ? 1 : 0;
        json_decref(j);
    }
    free(body);
    json_decref(urls);
    cr_buf_release(&answer);
    config_release(&cfg);
    return rc;
}
