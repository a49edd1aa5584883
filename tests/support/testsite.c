/* tests/support/testsite: spawning and reaping the test site (see testsite.h).
 *
 * A small registry of running sites (pid and log path) lets the atexit
 * handler stop whatever a failed test left behind. */
#include "tests/support/testsite.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/buf.h"

#define MAX_SITES 32
#define MAX_ARGS 64

static struct {
    pid_t pid;
    char log_path[256];
} sites[MAX_SITES];
static int atexit_done;

static const char *site_binary(void)
{
    const char *p = getenv("CRAWLD_TESTSITE");
    return p != NULL && p[0] != '\0' ? p : "bin/testsite";
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* waitpid with a deadline; the exit status as testsite_stop returns it. */
static int reap(pid_t pid, int wait_ms)
{
    int st = 0;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -errno;
        if (waited >= wait_ms) {
            kill(pid, SIGKILL);
            if (waitpid(pid, &st, 0) < 0)
                return -errno;
            break;
        }
        sleep_ms(10);
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -ECHILD;
}

static void stop_all(void)
{
    for (int i = 0; i < MAX_SITES; i++) {
        if (sites[i].pid > 0) {
            kill(sites[i].pid, SIGTERM);
            reap(sites[i].pid, 5000);
            sites[i].pid = 0;
        }
        if (sites[i].log_path[0] != '\0') {
            unlink(sites[i].log_path);
            sites[i].log_path[0] = '\0';
        }
    }
}

static int registry_add(pid_t pid, const char *log_path)
{
    if (!atexit_done) {
        atexit(stop_all);
        atexit_done = 1;
    }
    for (int i = 0; i < MAX_SITES; i++) {
        if (sites[i].pid == 0 && sites[i].log_path[0] == '\0') {
            sites[i].pid = pid;
            snprintf(sites[i].log_path, sizeof(sites[i].log_path), "%s", log_path);
            return 0;
        }
    }
    return -ENOSPC;
}

static void registry_forget_pid(pid_t pid)
{
    for (int i = 0; i < MAX_SITES; i++) {
        if (sites[i].pid == pid)
            sites[i].pid = 0;
    }
}

/* Forks and execs the site binary with argv[1..]; its stdout goes to a pipe
 * whose read end is returned in *out_fd. */
static pid_t spawn(const char *const *argv, int *out_fd)
{
    int p[2];
    pid_t parent = getpid();
    if (pipe(p) != 0)
        return -errno;
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fcntl(p[1], F_SETFD, FD_CLOEXEC); /* dup2 onto stdout clears it in the child */
    pid_t pid = fork();
    if (pid < 0) {
        int e = -errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    if (pid == 0) {
        /* die with the test process, whatever kills it */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(127);
        dup2(p[1], STDOUT_FILENO);
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "testsite helper: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[1]);
    *out_fd = p[0];
    return pid;
}

static int build_argv(const char **argv, const char *const *fixed, const char *const *extra)
{
    int n = 0;
    argv[n++] = site_binary();
    for (; fixed != NULL && *fixed != NULL; fixed++)
        argv[n++] = *fixed;
    for (; extra != NULL && *extra != NULL; extra++) {
        if (n >= MAX_ARGS - 1)
            return -E2BIG;
        argv[n++] = *extra;
    }
    argv[n] = NULL;
    return 0;
}

/* Reads the first stdout line ("listening on 127.0.0.1:PORT ...") and
 * returns the port, or a negative errno. */
static int read_port(int fd)
{
    char line[512];
    size_t len = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (len + 1 < sizeof(line)) {
        struct pollfd pfd = { fd, POLLIN, 0 };
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        if (spent > 30000)
            return -ETIMEDOUT;
        int r = poll(&pfd, 1, (int)(30000 - spent));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? -ETIMEDOUT : -errno;
        ssize_t n = read(fd, line + len, sizeof(line) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -EIO; /* exited before listening */
        len += (size_t)n;
        line[len] = '\0';
        if (strchr(line, '\n') != NULL)
            break;
    }
    line[len] = '\0';
    const char *at = strstr(line, "127.0.0.1:");
    if (at == NULL)
        return -EBADMSG;
    char *end;
    long port = strtol(at + 10, &end, 10);
    return port > 0 && port < 65536 ? (int)port : -EBADMSG;
}

int testsite_start_on(testsite *ts, int port, const char *const *extra_args)
{
    const char *argv[MAX_ARGS];
    char port_s[16];
    const char *tmp = getenv("TMPDIR");
    int fd = -1, rc;
    memset(ts, 0, sizeof(*ts));
    snprintf(ts->log_path, sizeof(ts->log_path), "%s/crawld-testsite-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    int lfd = mkstemp(ts->log_path);
    if (lfd < 0) {
        ts->log_path[0] = '\0';
        return -errno;
    }
    close(lfd);
    snprintf(port_s, sizeof(port_s), "%d", port);
    const char *fixed[] = { "--port", port_s, "--log", ts->log_path, NULL };
    rc = build_argv(argv, fixed, extra_args);
    if (rc != 0)
        goto fail;
    pid_t pid = spawn(argv, &fd);
    if (pid < 0) {
        rc = (int)pid;
        goto fail;
    }
    ts->pid = pid;
    rc = registry_add(pid, ts->log_path);
    if (rc == 0)
        rc = read_port(fd);
    close(fd);
    if (rc < 0) {
        kill(pid, SIGTERM);
        reap(pid, 5000);
        registry_forget_pid(pid);
        ts->pid = 0;
        return rc;
    }
    ts->port = rc;
    return 0;
fail:
    unlink(ts->log_path);
    ts->log_path[0] = '\0';
    return rc;
}

int testsite_start(testsite *ts, const char *const *extra_args)
{
    return testsite_start_on(ts, 0, extra_args);
}

int testsite_stop_with(testsite *ts, int sig)
{
    if (ts->pid <= 0)
        return 0;
    pid_t pid = ts->pid;
    kill(pid, sig);
    int rc = reap(pid, 20000);
    registry_forget_pid(pid);
    ts->pid = 0;
    return rc;
}

int testsite_stop(testsite *ts)
{
    return testsite_stop_with(ts, SIGTERM);
}

int testsite_url(const testsite *ts, const char *host, const char *target, char *out, size_t cap)
{
    int n = snprintf(out, cap, "http://%s:%d%s", host, ts->port, target);
    return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

int testsite_resolve(const testsite *ts, const char *host, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s:%d:127.0.0.1", host, ts->port);
    return n < 0 || (size_t)n >= cap ? -E2BIG : 0;
}

int testsite_run(const char *const *args, char **out, size_t *len)
{
    const char *argv[MAX_ARGS];
    cr_buf b;
    char chunk[65536];
    int fd = -1, rc;
    cr_buf_init(&b, 256u << 20);
    if (out != NULL)
        *out = NULL;
    if (len != NULL)
        *len = 0;
    rc = build_argv(argv, NULL, args);
    if (rc != 0)
        return rc;
    pid_t pid = spawn(argv, &fd);
    if (pid < 0)
        return (int)pid;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        if (rc == 0)
            rc = cr_buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    int st = reap(pid, 600000);
    if (rc == 0 && out != NULL) {
        if (len != NULL)
            *len = b.len;
        *out = b.len > 0 ? cr_buf_take(&b) : cr_strdup("");
        if (*out == NULL)
            rc = -ENOMEM;
    }
    cr_buf_release(&b);
    return rc != 0 ? rc : st;
}

/* Splits one log line (modified in place) into r: six fields, or nine with
 * --log-timing. 0 or -EBADMSG. */
static int parse_line(char *line, testsite_req *r)
{
    char *f[9];
    int n = 0;
    char *p = line;
    while (n < 9) {
        f[n++] = p;
        char *tab = strchr(p, '\t');
        if (tab == NULL)
            break;
        *tab = '\0';
        p = tab + 1;
    }
    if (n != 6 && n != 9)
        return -EBADMSG;
    char *end;
    memset(r, 0, sizeof(*r));
    r->start_us = r->end_us = -1;
    r->ms = strtoll(f[0], &end, 10);
    if (*end != '\0')
        return -EBADMSG;
    snprintf(r->host, sizeof(r->host), "%s", f[1]);
    snprintf(r->method, sizeof(r->method), "%s", f[2]);
    long st = strtol(f[4], &end, 10);
    if (*end != '\0' || st < 100 || st > 599)
        return -EBADMSG;
    r->status = (int)st;
    r->bytes = strtoull(f[5], &end, 10);
    if (*end != '\0')
        return -EBADMSG;
    if (n == 9) {
        r->start_us = strtoll(f[6], &end, 10);
        if (*end != '\0' || r->start_us / 1000 != r->ms)
            return -EBADMSG;
        r->end_us = strtoll(f[7], &end, 10);
        if (*end != '\0' || r->end_us < r->start_us)
            return -EBADMSG;
        snprintf(r->ua, sizeof(r->ua), "%s", f[8]);
    }
    r->target = cr_strdup(f[3]);
    return r->target != NULL ? 0 : -ENOMEM;
}

int testsite_log_read(const testsite *ts, testsite_req **out, size_t *n)
{
    FILE *f = fopen(ts->log_path, "r");
    testsite_req *v = NULL;
    size_t count = 0, cap = 0;
    char *line = NULL;
    size_t linecap = 0;
    int rc = 0;
    *out = NULL;
    *n = 0;
    if (f == NULL)
        return -errno;
    for (;;) {
        ssize_t len = getline(&line, &linecap, f);
        if (len < 0)
            break;
        if (len == 0 || line[len - 1] != '\n') {
            rc = -EBADMSG;
            break;
        }
        line[len - 1] = '\0';
        if (count == cap) {
            size_t nc = cap == 0 ? 64 : cap * 2;
            testsite_req *nv = cr_realloc(v, nc * sizeof(*nv));
            if (nv == NULL) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
            cap = nc;
        }
        rc = parse_line(line, &v[count]);
        if (rc != 0)
            break;
        count++;
    }
    free(line); /* getline allocates with malloc */
    fclose(f);
    if (rc != 0) {
        testsite_log_free(v, count);
        return rc;
    }
    *out = v;
    *n = count;
    return 0;
}

void testsite_log_free(testsite_req *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_free(v[i].target);
    cr_free(v);
}
