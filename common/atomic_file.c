/* common/atomic_file: see atomic_file.h. */
#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"

int (*cr_afile_fail_hook)(cr_afile_step step);

static const char *const step_names[CR_AF_STEPS] = {
    [CR_AF_OK] = "ok",
    [CR_AF_CREATE] = "create",
    [CR_AF_WRITE] = "write",
    [CR_AF_SYNC] = "sync",
    [CR_AF_CLOSE] = "close",
    [CR_AF_RENAME] = "rename",
    [CR_AF_DIRSYNC] = "sync folder",
};

const char *cr_afile_step_name(cr_afile_step s)
{
    return (unsigned)s < CR_AF_STEPS ? step_names[s] : "?";
}

/* The injected failure for step, or 0. */
static int injected(cr_afile_step step)
{
    return cr_afile_fail_hook ? cr_afile_fail_hook(step) : 0;
}

int cr_fsync_dir(const char *dir)
{
    int rc = injected(CR_AF_DIRSYNC);
    if (rc < 0)
        return rc;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    rc = fsync(fd) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static void release(cr_afile *af)
{
    cr_free(af->path);
    cr_free(af->tmp);
    af->path = af->tmp = NULL;
    af->fd = -1;
    af->fp = NULL;
}

int cr_afile_open(cr_afile *af, const char *path, mode_t mode)
{
    static const char suffix[] = ".tmp.XXXXXX";
    size_t n = strlen(path);
    int rc;

    af->fd = -1;
    af->fp = NULL;
    af->failed = CR_AF_OK;
    af->path = cr_strdup(path);
    af->tmp = cr_malloc(n + sizeof suffix);
    if (af->path == NULL || af->tmp == NULL) {
        release(af);
        return -ENOMEM;
    }
    memcpy(af->tmp, path, n);
    memcpy(af->tmp + n, suffix, sizeof suffix);
    af->failed = CR_AF_CREATE;
    rc = injected(CR_AF_CREATE);
    if (rc < 0) {
        release(af);
        return rc;
    }
    af->fd = mkstemp(af->tmp);
    if (af->fd < 0) {
        rc = -errno;
        release(af);
        return rc;
    }
    if (fchmod(af->fd, mode) < 0) {
        rc = -errno;
        cr_afile_abort(af);
        af->failed = CR_AF_CREATE;
        return rc;
    }
    af->failed = CR_AF_OK;
    return 0;
}

int cr_afile_write(cr_afile *af, const void *p, size_t n)
{
    const char *c = p;
    int rc = injected(CR_AF_WRITE);
    if (rc < 0) {
        af->failed = CR_AF_WRITE;
        return rc;
    }
    while (n > 0) {
        ssize_t w = write(af->fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            af->failed = CR_AF_WRITE;
            return -errno;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

FILE *cr_afile_stdio(cr_afile *af)
{
    if (af->fp == NULL)
        af->fp = fdopen(af->fd, "w");
    return af->fp;
}

/* The folder part of path ("." when it has none). Caller frees. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return cr_strdup(".");
    if (slash == path)
        return cr_strdup("/");
    return cr_strndup(path, (size_t)(slash - path));
}

int cr_afile_commit(cr_afile *af)
{
    int rc = 0;
    char *dir = NULL;

    if (af->fd < 0)
        return -EBADF;
    if (af->fp != NULL) { /* an earlier stdio write error sticks in ferror */
        rc = injected(CR_AF_WRITE);
        errno = 0;
        if (rc == 0 && (fflush(af->fp) != 0 || ferror(af->fp)))
            rc = errno ? -errno : -EIO;
        if (rc < 0) {
            af->failed = CR_AF_WRITE;
            goto fail;
        }
    }
    af->failed = CR_AF_SYNC;
    rc = injected(CR_AF_SYNC);
    if (rc == 0 && fsync(af->fd) < 0)
        rc = -errno;
    if (rc < 0)
        goto fail;
    af->failed = CR_AF_CLOSE;
    rc = injected(CR_AF_CLOSE);
    int c = af->fp ? fclose(af->fp) : close(af->fd);
    af->fp = NULL;
    af->fd = -1;
    if (rc == 0 && c != 0)
        rc = -errno;
    if (rc < 0)
        goto fail;
    af->failed = CR_AF_RENAME;
    rc = injected(CR_AF_RENAME);
    if (rc == 0 && rename(af->tmp, af->path) < 0)
        rc = -errno;
    if (rc < 0)
        goto fail;
    af->failed = CR_AF_DIRSYNC;
    dir = dir_of(af->path);
    rc = dir ? cr_fsync_dir(dir) : -ENOMEM;
    cr_free(dir);
    if (rc == 0)
        af->failed = CR_AF_OK;
    release(af);
    return rc;
fail:
    {
        cr_afile_step failed = af->failed;
        cr_afile_abort(af);
        af->failed = failed;
    }
    return rc;
}

void cr_afile_abort(cr_afile *af)
{
    if (af->fp != NULL)
        fclose(af->fp);
    else if (af->fd >= 0)
        close(af->fd);
    if (af->tmp != NULL) /* NULL after a commit or a failed open */
        unlink(af->tmp);
    af->fp = NULL;
    af->fd = -1;
    release(af);
}

int cr_atomic_write(const char *path, const void *p, size_t n, mode_t mode)
{
    cr_afile af;
    int rc = cr_afile_open(&af, path, mode);
    if (rc < 0)
        return rc;
    rc = cr_afile_write(&af, p, n);
    if (rc < 0) {
        cr_afile_abort(&af);
        return rc;
    }
    return cr_afile_commit(&af);
}
