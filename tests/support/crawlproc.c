/* tests/support/crawlproc: see crawlproc.h. */
#include "tests/support/crawlproc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/alloc.h"
#include "tests/support/proc.h"

#define MAX_LIVE 32

static pid_t live[MAX_LIVE];
static int atexit_set;

static void live_add(pid_t pid)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        if (live[i] == 0) {
            live[i] = pid;
            return;
        }
    }
}

static void live_remove(pid_t pid)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (live[i] == pid)
            live[i] = 0;
}

void crawlproc_kill_all(void)
{
    for (int i = 0; i < MAX_LIVE; i++) {
        if (live[i] > 0) {
            int st;
            kill(live[i], SIGKILL);
            waitpid(live[i], &st, 0);
            live[i] = 0;
        }
    }
}

int crawlproc_start(crawlproc *p, const char *dir, const char *name, const char *const args[])
{
    return crawlproc_start_bin(p, proc_crawld_path(), dir, name, args);
}

int crawlproc_start_bin(crawlproc *p, const char *bin, const char *dir, const char *name,
                        const char *const args[])
{
    const char *argv[64];
    size_t n = 0;
    memset(p, 0, sizeof(*p));
    p->status = -1;
    if (snprintf(p->out_path, sizeof(p->out_path), "%s/%s.out", dir, name) >=
            (int)sizeof(p->out_path) ||
        snprintf(p->err_path, sizeof(p->err_path), "%s/%s.err", dir, name) >=
            (int)sizeof(p->err_path))
        return -ENAMETOOLONG;
    argv[n++] = bin;
    for (size_t i = 0; args[i] != NULL; i++) {
        if (n == 63)
            return -E2BIG;
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    int out = open(p->out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int err = open(p->err_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || err < 0 || in < 0) {
        int e = -errno;
        if (out >= 0)
            close(out);
        if (err >= 0)
            close(err);
        if (in >= 0)
            close(in);
        return e;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int e = pid < 0 ? -errno : 0;
    close(out);
    close(err);
    close(in);
    if (pid < 0)
        return e;
    if (!atexit_set) {
        atexit(crawlproc_kill_all);
        atexit_set = 1;
    }
    live_add(pid);
    p->pid = pid;
    return 0;
}

static int decode(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st); }

int crawlproc_wait(crawlproc *p, int timeout_ms)
{
    struct timespec t0, now;
    if (p->pid <= 0)
        return p->status >= 0 ? p->status : -ECHILD;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, timeout_ms < 0 ? 0 : WNOHANG);
        if (r == p->pid) {
            live_remove(p->pid);
            p->pid = 0;
            p->status = decode(st);
            return p->status;
        }
        if (r < 0 && errno != EINTR)
            return -errno;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long ms = (now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout_ms >= 0 && ms >= timeout_ms)
            return -ETIMEDOUT;
        struct timespec nap = { 0, 10 * 1000000L };
        nanosleep(&nap, NULL);
    }
}

int crawlproc_signal(const crawlproc *p, int sig)
{
    if (p->pid <= 0)
        return -ESRCH;
    return kill(p->pid, sig) == 0 ? 0 : -errno;
}

int crawlproc_kill(crawlproc *p)
{
    if (p->pid <= 0)
        return -ECHILD;
    kill(p->pid, SIGKILL);
    kill(p->pid, SIGCONT); /* a stopped child dies only once continued on some kernels */
    return crawlproc_wait(p, -1);
}

char *crawlproc_output(const crawlproc *p, int which)
{
    FILE *f = fopen(which == 1 ? p->out_path : p->err_path, "r");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *b = cr_malloc(cap);
    while (b != NULL) {
        if (len + 1 == cap) {
            char *nb = cr_realloc(b, cap * 2);
            if (nb == NULL) {
                cr_free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + len, 1, cap - 1 - len, f);
        if (r == 0)
            break;
        len += r;
    }
    fclose(f);
    if (b != NULL)
        b[len] = '\0';
    return b;
}

int crawlproc_summary_read(const crawlproc *p, crawlproc_summary *out)
{
    char *text = crawlproc_output(p, 2);
    int rc = -ENOENT;
    memset(out, 0, sizeof(*out));
    if (text == NULL)
        return -errno;
    const char *last = NULL;
    for (const char *s = text; (s = strstr(s, "crawl: ")) != NULL; s++)
        if (s == text || s[-1] == '\n')
            last = s;
    if (last != NULL && sscanf(last, "crawl: %lld HTML pages in %lf s", &out->pages,
                               &out->seconds) == 2) {
        const char *r = strstr(last, "; ");
        if (r != NULL)
            sscanf(r, "; %lld responses", &out->responses);
        const char *e = strstr(last, "\n  end: ");
        if (e != NULL) {
            e += strlen("\n  end: ");
            size_t n = strcspn(e, "\n");
            snprintf(out->end, sizeof(out->end), "%.*s", (int)n, e);
        }
        rc = 0;
    }
    cr_free(text);
    return rc;
}

long crawlproc_refetch_reported(const crawlproc *p, bool rescues, int *lines)
{
    static const char head[] = "crawld: the last run ";
    static const char slot[] = "of slot ";
    char *text = crawlproc_output(p, 2);
    long sum = 0;
    int k = 0;
    for (const char *s = text; s != NULL && (s = strstr(s, head)) != NULL; s++) {
        const char *q = strstr(s + strlen(head), ": ");
        long n;
        if ((strncmp(s + strlen(head), slot, strlen(slot)) == 0) != rescues)
            continue;
        if (q != NULL && sscanf(q, ": %ld URLs had been requested without their outcome", &n) == 1) {
            sum += n;
            k++;
        }
    }
    cr_free(text);
    if (lines != NULL)
        *lines = k;
    return sum;
}
