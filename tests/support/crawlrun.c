/* tests/support/crawlrun: see crawlrun.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/support/crawlrun.h"

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

#include "tests/support/proc.h"

static char workdir[128];

int crawlrun_setup(const char *tag)
{
    snprintf(workdir, sizeof workdir, "/tmp/crawld-test-%s-XXXXXX", tag);
    return mkdtemp(workdir) ? 0 : -1;
}

void crawlrun_teardown(void)
{
    if (workdir[0] == '\0')
        return;
    const char *argv[] = { "/bin/rm", "-rf", workdir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

int crawlrun_setup_site(const char *tag, testsite *ts, const char *const *site_args)
{
    if (crawlrun_setup(tag) != 0)
        return -1;
    return testsite_start(ts, site_args) == 0 ? 0 : -1;
}

void crawlrun_teardown_site(testsite *ts)
{
    testsite_stop(ts);
    crawlrun_teardown();
}

const char *crawlrun_dir(void)
{
    return workdir;
}

/* Paths and config paths rotate through 8 buffers each, so that a test can
 * hold a config path while it names many files. */
typedef struct pathring {
    char p[8][512];
    int k;
} pathring;

static const char *ring_path(pathring *r, const char *name, const char *suffix)
{
    r->k = (r->k + 1) % 8;
    snprintf(r->p[r->k], sizeof r->p[r->k], "%s/%s%s", workdir, name, suffix ? suffix : "");
    return r->p[r->k];
}

const char *crawlrun_path(const char *name, const char *suffix)
{
    static pathring paths;
    return ring_path(&paths, name, suffix);
}

const char *crawlrun_config(const char *name, const char *fmt, ...)
{
    static pathring configs;
    const char *path = ring_path(&configs, name, ".toml");
    FILE *f = fopen(path, "w");
    if (f == NULL)
        fail_msg("cannot write %s", path);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    if (fclose(f) != 0)
        fail_msg("cannot write %s", path);
    return path;
}

void crawlrun_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

void crawlrun_run_ok(const char *cfg, const char *const *extra, cr_buf *err)
{
    const char *args[24] = { "run", "-c", cfg };
    size_t n = 3;
    for (; extra && *extra; extra++) {
        if (n == sizeof args / sizeof *args - 1)
            fail_msg("crawlrun_run_ok: too many arguments");
        args[n++] = *extra;
    }
    args[n] = NULL;
    cr_buf own;
    cr_buf_init(&own, 0);
    cr_buf *e = err ? err : &own;
    int rc = proc_crawld(args, NULL, NULL, e);
    if (rc != 0)
        fail_msg("crawld run -c %s exited %d: %s", cfg, rc, e->data ? e->data : "");
    cr_buf_release(&own);
}

pid_t crawlrun_spawn(const char *prog, const char *const *args, const char *errfile,
                     unsigned flags, void (*in_child)(void))
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = prog ? prog : proc_crawld_path();
    for (; args && *args && n < sizeof argv / sizeof *argv - 1; args++)
        argv[n++] = *args;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0)
        fail_msg("fork failed");
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int mode = O_WRONLY | O_CREAT | ((flags & CRAWLRUN_APPEND) ? O_APPEND : O_TRUNC);
        int fe = errfile ? open(errfile, mode, 0600) : open("/dev/null", O_WRONLY);
        int fn = open("/dev/null", O_RDWR);
        dup2(fn, 0);
        dup2(fn, 1);
        dup2(fe, 2);
        if (in_child)
            in_child();
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

int crawlrun_wait(pid_t pid, long timeout_ms)
{
    int status;
    for (long waited = 0; waited <= timeout_ms; waited += 10) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (w < 0 && errno == ECHILD)
            return -1; /* reaped already (crawlrun_await): nothing to kill */
        crawlrun_sleep_ms(10);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

int crawlrun_wait_exit(pid_t pid)
{
    int rc = crawlrun_wait(pid, 60000);
    if (rc < 0)
        fail_msg("crawld did not exit within 60 s");
    return rc;
}

char *crawlrun_slurp(const char *path)
{
    static char text[1 << 20];
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    return text;
}

const char *crawlrun_await(pid_t pid, const char *errfile, const char *needle, long timeout_ms)
{
    for (long waited = 0; waited < timeout_ms; waited += 10) {
        const char *p = strstr(crawlrun_slurp(errfile), needle);
        if (p)
            return p;
        int status;
        if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid)
            return NULL;
        crawlrun_sleep_ms(10);
    }
    return NULL;
}

json_t *crawlrun_stats_json(const char *state_dir)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    int rc = proc_crawld((const char *const[]){ "stats", "--state", state_dir, "--json", NULL },
                         NULL, &out, NULL);
    if (rc != 0)
        fail_msg("crawld stats --state %s --json exited %d", state_dir, rc);
    json_error_t jerr;
    json_t *j = json_loads(out.data ? out.data : "", 0, &jerr);
    if (j == NULL)
        fail_msg("stats --json is not JSON: %s", out.data ? out.data : "");
    cr_buf_release(&out);
    return j;
}

long crawlrun_refetch_reported(const char *text, int *lines)
{
    static const char head[] = "crawld: the last run ";
    long sum = 0;
    int k = 0;
    for (const char *p = text; p && (p = strstr(p, head)) != NULL; p++) {
        const char *q = strstr(p + strlen(head), ": ");
        long n;
        if (q && sscanf(q, ": %ld URLs had been requested", &n) == 1) {
            sum += n;
            k++;
        }
    }
    if (lines)
        *lines = k;
    return sum;
}

size_t crawlrun_log_lines(const testsite *ts)
{
    testsite_req *v;
    size_t n;
    assert_int_equal(testsite_log_read(ts, &v, &n), 0);
    testsite_log_free(v, n);
    return n;
}
