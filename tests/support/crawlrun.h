/* tests/support/crawlrun: the scaffolding of the tests that run crawld end
 * to end (test_crawl, test_faults, test_recrawl, test_sitemap_crawl,
 * test_daemon). One temp work folder per test binary holds each test's
 * state folders, config files and stderr files; crawld runs in the
 * foreground (exit code, captured output) or in the background (stderr to
 * a file; wait for a line it prints, or for its exit). A background crawld
 * gets SIGKILL when the test process dies. Failures that leave nothing to
 * test end the test through cmocka (fail_msg). One thread only; paths and
 * config paths come back in static buffers, 8 of each that rotate. */
#ifndef CRAWLD_TESTS_CRAWLRUN_H
#define CRAWLD_TESTS_CRAWLRUN_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"
#include "tests/support/testsite.h"

/* Makes the work folder /tmp/crawld-test-TAG-XXXXXX; 0 or -1. */
int crawlrun_setup(const char *tag);
/* Removes the work folder and everything in it. */
void crawlrun_teardown(void);
/* A group setup with one test site: crawlrun_setup(tag), then
 * testsite_start(ts, site_args). 0 or -1. */
int crawlrun_setup_site(const char *tag, testsite *ts, const char *const *site_args);
/* testsite_stop(ts), then crawlrun_teardown(). */
void crawlrun_teardown_site(testsite *ts);
/* The work folder. */
const char *crawlrun_dir(void);
/* "WORKDIR/name" + suffix (may be NULL): a state folder, a file. */
const char *crawlrun_path(const char *name, const char *suffix);
/* Writes the config WORKDIR/name.toml from fmt; returns its path. */
const char *crawlrun_config(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void crawlrun_sleep_ms(long ms);

/* Runs `crawld run -c cfg extra...` (extra NULL-ended, may be NULL) and
 * fails the test unless it exits 0; err (may be NULL) gets its stderr. */
void crawlrun_run_ok(const char *cfg, const char *const *extra, cr_buf *err);

#define CRAWLRUN_APPEND 1u /* crawlrun_spawn: append to errfile */

/* Starts prog (NULL: crawld) with args (NULL-ended, without argv[0]) in the
 * background: stdin and stdout /dev/null, stderr to errfile (truncated, or
 * appended with CRAWLRUN_APPEND; NULL: /dev/null). in_child (may be NULL)
 * runs in the child just before the exec. Returns the pid. */
pid_t crawlrun_spawn(const char *prog, const char *const *args, const char *errfile,
                     unsigned flags, void (*in_child)(void));
/* Waits up to timeout_ms for pid to end: its exit code, 128 + signal; -1
 * when time ran out (it is killed and reaped then) or it was reaped
 * before. */
int crawlrun_wait(pid_t pid, long timeout_ms);
/* crawlrun_wait for 60 s; fails the test when crawld did not exit. */
int crawlrun_wait_exit(pid_t pid);
/* Waits up to timeout_ms until errfile holds needle; returns the text from
 * needle on (static buffer, valid until the next call), or NULL when time
 * ran out or pid (when > 0) ended first (its status is reaped then). */
const char *crawlrun_await(pid_t pid, const char *errfile, const char *needle, long timeout_ms);
/* The text of path (at most 1 MiB, static buffer, valid until the next
 * call); "" when it cannot be read. */
char *crawlrun_slurp(const char *path);

/* `crawld stats --state state_dir --json`, parsed; free with json_decref. */
json_t *crawlrun_stats_json(const char *state_dir);
/* Sums the "crawld: the last run ...: N URLs had been requested" figures of
 * text (may be NULL); *lines (may be NULL) gets how many such lines. */
long crawlrun_refetch_reported(const char *text, int *lines);
/* How many requests the site has logged so far. */
size_t crawlrun_log_lines(const testsite *ts);

#endif
