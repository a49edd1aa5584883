/* tests/support/crawlproc: crawld processes a test starts, signals, waits
 * for and reads, several at once (cluster nodes, a crawl killed and
 * resumed). Each writes its stdout and stderr to DIR/NAME.out and .err
 * (appended: a node restarted under the same name keeps its earlier
 * output). No process outlives the test binary: an atexit handler kills
 * those still running, and each child asks for SIGKILL when the test dies
 * (PR_SET_PDEATHSIG). Not thread-safe: use from one thread. */
#ifndef CRAWLD_TESTS_CRAWLPROC_H
#define CRAWLD_TESTS_CRAWLPROC_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct crawlproc {
    pid_t pid;              /* 0: not running (never started, or reaped) */
    int status;             /* once ended: exit code, or 128 + signal; -1 before */
    char out_path[256];
    char err_path[256];
} crawlproc;

/* Starts crawld (proc_crawld_path()) with args (NULL-ended, no argv[0]),
 * stdin from /dev/null, output into dir/name.out and dir/name.err.
 * 0 or a negative errno. */
int crawlproc_start(crawlproc *p, const char *dir, const char *name, const char *const args[]);
/* The same with another binary (e.g. $CRAWLD_FAULTS_BIN). */
int crawlproc_start_bin(crawlproc *p, const char *bin, const char *dir, const char *name,
                        const char *const args[]);
/* Waits up to timeout_ms (< 0: for ever) for it to end. Its status (exit
 * code, or 128 + signal), -ETIMEDOUT if still running, -ECHILD if it is not
 * running (and was never started). */
int crawlproc_wait(crawlproc *p, int timeout_ms);
/* Sends sig (SIGSTOP, SIGCONT, SIGTERM ...). 0, or -ESRCH when not running. */
int crawlproc_signal(const crawlproc *p, int sig);
/* SIGKILL and reap: the status (137), or -ECHILD when not running. */
int crawlproc_kill(crawlproc *p);
/* Kills every process still running (also done at exit). */
void crawlproc_kill_all(void);

/* What it wrote so far to stdout (which = 1) or stderr (2); NUL-ended,
 * free with cr_free. NULL when unreadable. */
char *crawlproc_output(const crawlproc *p, int which);

/* The last summary crawld printed on stderr ("crawl: N HTML pages in S s
 * (R pages/s); M responses ..." and "  end: REASON"). 0, or -ENOENT when
 * there is none yet. end may be NULL. */
typedef struct crawlproc_summary {
    long long pages;        /* HTML pages */
    long long responses;
    double seconds;
    char end[128];          /* "frontier drained", ... ("" when not printed) */
} crawlproc_summary;
int crawlproc_summary_read(const crawlproc *p, crawlproc_summary *out);

/* What crawld said on stderr ("crawld: the last run ...: N URLs had been
 * requested without their outcome"): the sum of N, the URLs it may fetch
 * again. rescues false: the lines of its own starts after a kill; true:
 * the lines of slots it rescued from a node gone for good ("the last run
 * of slot ..."). *lines (may be NULL) gets how many such lines there
 * were. 0 when none. */
long crawlproc_refetch_reported(const crawlproc *p, bool rescues, int *lines);

#endif
