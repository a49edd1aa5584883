/* tests/support/testsite: start and stop the local test site from a test.
 *
 * testsite_start() spawns bin/testsite (the path in $CRAWLD_TESTSITE, which
 * tests/run.sh sets; else "bin/testsite" from the project root) on
 * 127.0.0.1 with a free port and a fresh request log, and waits until it
 * listens. No process outlives the test binary: every started site is
 * stopped by an atexit handler, and the child asks the kernel for SIGTERM
 * when the test process dies (PR_SET_PDEATHSIG), even on a crash. The log
 * files are removed at exit. Not thread-safe: start and stop from one thread.
 *
 * The site's hosts are a.test, b.test, ...; pin them to 127.0.0.1:port
 * (CURLOPT_RESOLVE "a.test:PORT:127.0.0.1", or [fetch] resolve). */
#ifndef CRAWLD_TESTS_TESTSITE_H
#define CRAWLD_TESTS_TESTSITE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct testsite {
    pid_t pid;               /* 0 when not running */
    int port;
    char log_path[256];      /* the request log (--log) */
} testsite;

/* Starts the site with --port 0, --log and extra_args (a NULL-terminated
 * list such as {"--pages", "50", NULL}; may be NULL). 0 or a negative errno
 * (-ETIMEDOUT when it printed no port within 30 s). */
int testsite_start(testsite *ts, const char *const *extra_args);
/* The same on a given port (e.g. again on the port of a stopped site). */
int testsite_start_on(testsite *ts, int port, const char *const *extra_args);
/* SIGTERM, then waits (SIGKILL after 20 s). Returns the exit status (0 for a
 * clean shutdown), 128 + signal when it was killed, or a negative errno.
 * Safe on a site that is not running (returns 0). */
int testsite_stop(testsite *ts);
/* The same with another signal (SIGINT, ...). */
int testsite_stop_with(testsite *ts, int sig);

/* "http://HOST:PORT" + target into out; 0 or -E2BIG. */
int testsite_url(const testsite *ts, const char *host, const char *target, char *out, size_t cap);
/* "HOST:PORT:127.0.0.1", for CURLOPT_RESOLVE; 0 or -E2BIG. */
int testsite_resolve(const testsite *ts, const char *host, char *out, size_t cap);

/* Runs the testsite binary with args (NULL-terminated, without argv[0]),
 * capturing its stdout (at most 256 MiB). Returns its exit status (128 +
 * signal when killed) or a negative errno. *out (NUL-terminated, free with
 * cr_free) and *len may be NULL when not wanted. */
int testsite_run(const char *const *args, char **out, size_t *len);

/* One line of the request log. */
typedef struct testsite_req {
    long long ms;                 /* arrival, Unix epoch milliseconds */
    char host[128];
    char method[16];
    char *target;                 /* raw request target; owned */
    int status;
    unsigned long long bytes;     /* body bytes (0 for HEAD) */
    /* with --log-timing (else -1, -1, ""): arrival and end of the answer,
     * Unix epoch microseconds, and the User-Agent as logged */
    long long start_us, end_us;
    char ua[128];
} testsite_req;

/* Reads the whole log so far. 0 or a negative errno (-EBADMSG: a bad line).
 * Free with testsite_log_free(). */
int testsite_log_read(const testsite *ts, testsite_req **out, size_t *n);
void testsite_log_free(testsite_req *v, size_t n);

#endif
