/* storage/spool: see spool.h. */
#define _GNU_SOURCE
#include "storage/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/alloc.h"
#include "common/buf.h"

struct spool {
    char *dir;
    size_t mem_cap;
    ssize_t (*write_fn)(int fd, const void *p, size_t n);
    cr_buf mem;            /* the body while it fits mem_cap */
    int fd;                /* -1: in memory */
    uint64_t len;
    int err;
    size_t hdr_len;
    bool done;
    EVP_MD_CTX *pay, *blk;
    uint8_t pay_sha[20], blk_sha[20];
};

static ssize_t plain_write(int fd, const void *p, size_t n)
{
#ifdef CRAWLD_FAULT_HOOKS
    /* test builds: CRAWLD_SPOOL_FAULT=1 makes every spool file write fail
     * with ENOSPC (a full state folder), as CRAWLD_FAULTS does for db.c */
    if (getenv("CRAWLD_SPOOL_FAULT") != NULL) {
        errno = ENOSPC;
        return -1;
    }
#endif
    return write(fd, p, n);
}

spool *spool_new(const spool_opts *o)
{
    spool *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->dir = o && o->dir ? cr_strdup(o->dir) : NULL;
    s->mem_cap = o && o->mem_cap ? o->mem_cap : SPOOL_DEFAULT_MEM_CAP;
    s->write_fn = o && o->write_fn ? o->write_fn : plain_write;
    s->fd = -1;
    cr_buf_init(&s->mem, s->mem_cap);
    s->pay = EVP_MD_CTX_new();
    s->blk = EVP_MD_CTX_new();
    if ((o && o->dir && s->dir == NULL) || s->pay == NULL || s->blk == NULL) {
        spool_free(s);
        return NULL;
    }
    return s;
}

void spool_free(spool *s)
{
    if (s == NULL)
        return;
    if (s->fd >= 0)
        close(s->fd);
    cr_buf_release(&s->mem);
    EVP_MD_CTX_free(s->pay);
    EVP_MD_CTX_free(s->blk);
    cr_free(s->dir);
    cr_free(s);
}

int spool_begin(spool *s, const void *hdr, size_t hdr_len)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    cr_buf_clear(&s->mem);
    s->len = 0;
    s->err = 0;
    s->done = false;
    s->hdr_len = hdr_len;
    if (EVP_DigestInit_ex(s->pay, EVP_sha1(), NULL) != 1 ||
        EVP_DigestInit_ex(s->blk, EVP_sha1(), NULL) != 1 ||
        (hdr_len && EVP_DigestUpdate(s->blk, hdr, hdr_len) != 1))
        return s->err = -ENOMEM;
    return 0;
}

static int write_all(spool *s, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = s->write_fn(s->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 && errno ? -errno : -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Moves the memory part into a new unlinked temp file. */
static int spill(spool *s)
{
    int fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/.spool-XXXXXX", s->dir) >= (int)sizeof path)
            return -ENAMETOOLONG;
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    if (fd < 0)
        return -errno;
    s->fd = fd;
    int rc = write_all(s, s->mem.data ? s->mem.data : "", s->mem.len);
    cr_buf_release(&s->mem);
    cr_buf_init(&s->mem, s->mem_cap);
    return rc;
}

int spool_append(spool *s, const void *p, size_t n)
{
    if (n == 0)
        return s->err;
    if (EVP_DigestUpdate(s->pay, p, n) != 1 || EVP_DigestUpdate(s->blk, p, n) != 1) {
        if (s->err == 0)
            s->err = -ENOMEM;
    }
    s->len += n;
    if (s->err || s->dir == NULL)
        return s->err;
    int rc = 0;
    if (s->fd < 0 && s->mem.len + n <= s->mem_cap)
        rc = cr_buf_append(&s->mem, p, n);
    else {
        if (s->fd < 0)
            rc = spill(s);
        if (rc == 0)
            rc = write_all(s, p, n);
    }
    if (rc < 0) {
        s->err = rc;
        if (s->fd >= 0)
            close(s->fd);
        s->fd = -1;
        cr_buf_release(&s->mem);
        cr_buf_init(&s->mem, s->mem_cap);
    }
    return rc;
}

int spool_finish(spool *s)
{
    unsigned int a = 0, b = 0;
    if (s->done)
        return 0;
    if (EVP_DigestFinal_ex(s->pay, s->pay_sha, &a) != 1 ||
        EVP_DigestFinal_ex(s->blk, s->blk_sha, &b) != 1 || a != 20 || b != 20)
        return s->err = -ENOMEM;
    s->done = true;
    return 0;
}

uint64_t spool_len(const spool *s) { return s->len; }
int spool_error(const spool *s) { return s->err; }
bool spool_spilled(const spool *s) { return s->fd >= 0; }
const uint8_t *spool_payload_sha1(const spool *s) { return s->done ? s->pay_sha : NULL; }
const uint8_t *spool_block_sha1(const spool *s) { return s->done ? s->blk_sha : NULL; }
size_t spool_header_len(const spool *s) { return s->hdr_len; }

const void *spool_data(const spool *s)
{
    if (s->err || s->fd >= 0 || s->dir == NULL)
        return NULL;
    return s->mem.data ? s->mem.data : "";
}

int spool_read(void *sp, uint64_t off, void *buf, size_t n)
{
    spool *s = sp;
    if (s->err)
        return s->err;
    if (s->dir == NULL && n)
        return -ENODATA;
    if (off > s->len || n > s->len - off)
        return -ERANGE;
    if (s->fd < 0) {
        if (n)
            memcpy(buf, s->mem.data + off, n);
        return 0;
    }
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(s->fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EIO;
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return 0;
}
