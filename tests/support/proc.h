/* tests/support/proc: run a program (usually bin/crawld) from a test, feed
 * its stdin, capture stdout and stderr, and get its exit status. */
#ifndef CRAWLD_TEST_PROC_H
#define CRAWLD_TEST_PROC_H

#include <stddef.h>

#include "common/buf.h"

/* Path of bin/crawld for this build (env CRAWLD_BIN, else bin/crawld). */
const char *proc_crawld_path(void);

/* Runs argv (argv[0] a path; NULL-terminated) with stdin_data (may be NULL)
 * of stdin_len bytes on its stdin; out and err (each may be NULL) get what
 * it printed. Returns its exit code, 128+signal if killed, -1 on failure. */
int proc_run(const char *const argv[], const char *stdin_data, size_t stdin_len,
             cr_buf *out, cr_buf *err);

/* proc_run with argv[0] = the crawld binary: crawld(args...) NULL-ended. */
int proc_crawld(const char *const args[], const char *stdin_data, cr_buf *out, cr_buf *err);

/* Writes data to a new temp file; returns its path (static buffer per call
 * slot 0..7) or NULL. The file lives until its slot is used again or the
 * test process exits, whichever comes first. */
const char *proc_temp_file(int slot, const char *data, size_t len);

#endif
