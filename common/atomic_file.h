/* common/atomic_file: the one way a file that must survive a crash is
 * written. The bytes go to a temp file beside the target (same folder, so
 * the rename cannot cross file systems), which is fsynced, closed, renamed
 * over the target, and then the folder is fsynced so the rename itself is
 * durable. Until the rename a reader sees the old file whole; a failure at
 * any step before it removes the temp file and leaves the target as it was.
 * A failure of the last step (the folder's fsync) is reported although the
 * new file is already in place: it may not survive a power loss.
 *
 * Embedded in its owner: cr_afile_open ... cr_afile_commit or
 * cr_afile_abort. Not shared between threads. */
#ifndef CRAWLD_COMMON_ATOMIC_FILE_H
#define CRAWLD_COMMON_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* The steps, in order; cr_afile_step_name names them for messages. */
typedef enum {
    CR_AF_OK = 0,
    CR_AF_CREATE,  /* mkstemp + fchmod of the temp file */
    CR_AF_WRITE,   /* cr_afile_write, or the stdio flush */
    CR_AF_SYNC,    /* fsync of the temp file */
    CR_AF_CLOSE,   /* close of the temp file */
    CR_AF_RENAME,  /* rename over the target */
    CR_AF_DIRSYNC, /* fsync of the folder */
    CR_AF_STEPS
} cr_afile_step;

typedef struct cr_afile {
    int fd;            /* the temp file, -1 when none is open */
    FILE *fp;          /* set by cr_afile_stdio, owns fd then */
    cr_afile_step failed; /* the step that failed, CR_AF_OK if none */
    char *path;        /* target; owned */
    char *tmp;         /* temp file; owned */
} cr_afile;

/* Creates the temp file for path, with permissions mode. Writes go to
 * af->fd (or the stream of cr_afile_stdio). 0, -ENOMEM, or -errno of the
 * create; on failure there is nothing to abort. */
int cr_afile_open(cr_afile *af, const char *path, mode_t mode)
    __attribute__((warn_unused_result));
/* Writes all n bytes to the temp file (retrying short writes and EINTR).
 * 0 or -errno. */
int cr_afile_write(cr_afile *af, const void *p, size_t n)
    __attribute__((warn_unused_result));
/* A stdio stream over the temp file (owned by af: do not fclose it). NULL
 * when memory runs out. */
FILE *cr_afile_stdio(cr_afile *af);
/* fsync, close, rename over the target, fsync the folder. 0 or -errno; on
 * any failure af->failed names the step. af is released either way. */
int cr_afile_commit(cr_afile *af) __attribute__((warn_unused_result));
/* Closes and removes the temp file; the target is untouched. Safe after a
 * failed open or a commit (then a no-op). */
void cr_afile_abort(cr_afile *af);

/* The whole thing for bytes in memory. 0 or -errno. */
int cr_atomic_write(const char *path, const void *p, size_t n, mode_t mode)
    __attribute__((warn_unused_result));

/* fsyncs a folder, so a rename, create or unlink in it is durable. 0 or
 * -errno. */
int cr_fsync_dir(const char *dir) __attribute__((warn_unused_result));

const char *cr_afile_step_name(cr_afile_step s);

/* Test hook: when set, called before each step; a negative return makes
 * that step fail with that code (as if the system call had). Global, for
 * single-threaded tests only; NULL turns it off. */
extern int (*cr_afile_fail_hook)(cr_afile_step step);

#endif
