/* storage/warc_recover: what warc_open does with the files a crash left
 * (the crash rules are in warc.h). It finds the newest WARC file of the
 * prefix (and the one before, when the newest held nothing), removes stale
 * index temp files, keeps the complete gzip members whose content is a
 * WARC record and cuts the torn tail (or removes a file with none), brings
 * the CDXJ index in line with what was kept, and sets the next serial
 * after the highest one in the folder. Runs inside warc_open, before
 * the writer is shared, so it takes no lock. The writer's struct and the
 * file helpers it shares with warc.c are in warc_int.h. */
#include "storage/warc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/err.h"
#include "storage/cdxj.h"
#include "storage/warc_int.h"

#define INDEX_READ_MAX (1u << 30)   /* recovery refuses larger indexes */

typedef struct u64vec {
    uint64_t *v;
    size_t n, cap;
} u64vec;

static int u64vec_push(u64vec *a, uint64_t x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        uint64_t *v = cr_realloc(a->v, cap * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* Walks the gzip members of fd from the start; pushes the end offset of
 * each complete member whose content starts "WARC/1.", stopping at the
 * first torn or corrupt one. */
static int scan_members(int fd, u64vec *ends)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = warc_z_alloc;
    z.zfree = warc_z_free;
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return -ENOMEM;
    int rc = 0;
    unsigned char *in = cr_malloc(65536), *outb = cr_malloc(65536);
    if (in == NULL || outb == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    uint64_t base = 0;          /* file offset of in[0] */
    char head[8];
    size_t head_len = 0;
    bool done = false;
    if (lseek(fd, 0, SEEK_SET) < 0) {
        rc = -errno;
        goto out;
    }
    while (!done) {
        ssize_t r = read(fd, in, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = -errno;
            goto out;
        }
        if (r == 0)
            break;
        z.next_in = in;
        z.avail_in = (uInt)r;
        while (z.avail_in > 0) {
            z.next_out = outb;
            z.avail_out = 65536;
            int zr = inflate(&z, Z_NO_FLUSH);
            size_t got = 65536 - z.avail_out;
            if (head_len < sizeof head) {
                size_t take = got < sizeof head - head_len ? got : sizeof head - head_len;
                memcpy(head + head_len, outb, take);
                head_len += take;
            }
            if (zr == Z_STREAM_END) {
                if (head_len < 7 || memcmp(head, "WARC/1.", 7) != 0) {
                    done = true;
                    break;
                }
                uint64_t end = base + (uint64_t)(z.next_in - in);
                rc = u64vec_push(ends, end);
                if (rc < 0)
                    goto out;
                head_len = 0;
                if (inflateReset(&z) != Z_OK) {
                    rc = -EIO;
                    goto out;
                }
                continue;
            }
            if (zr != Z_OK && zr != Z_BUF_ERROR) { /* corrupt */
                done = true;
                break;
            }
            if (zr == Z_BUF_ERROR && z.avail_in > 0) {
                done = true;
                break;
            }
        }
        base += (uint64_t)r;
    }
out:
    inflateEnd(&z);
    cr_free(in);
    cr_free(outb);
    return rc;
}

static bool u64_find(const u64vec *a, uint64_t x, size_t *at)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < a->n && a->v[lo] == x;
}

/* Makes the file NAME whole again (see warc.h). Sets *removed when nothing
 * in it was indexed: it and its index are then deleted. */
static int recover_file(warc_writer *w, const char *name, bool *removed, char *err, size_t errlen)
{
    char path[PATH_MAX], ipath[PATH_MAX], idx_name[128];
    size_t nl = strlen(name);
    *removed = false;
    if (nl - 8 + 6 > sizeof idx_name)
        return -ENAMETOOLONG;
    memcpy(idx_name, name, nl - 8);
    memcpy(idx_name + nl - 8, ".cdxj", 6);
    int rc;
    rc = warc_path_of(w, name, path, sizeof path);
    if (rc == 0)
        rc = warc_path_of(w, idx_name, ipath, sizeof ipath);
    if (rc < 0)
        return rc;
    u64vec ends = {NULL, 0, 0};
    cr_buf idx;
    cr_buf_init(&idx, 0);
    line_ref *lines = NULL;
    size_t nlines = 0, kept = 0;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rc = -errno;
        cr_errf(err, errlen, "warc: cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        rc = -errno;
        goto out;
    }
    rc = scan_members(fd, &ends);
    if (rc < 0) {
        cr_errf(err, errlen, "warc: cannot scan %s: %s", path, strerror(-rc));
        goto out;
    }
    rc = warc_read_file(ipath, INDEX_READ_MAX, &idx);
    if (rc == 0)
        rc = warc_split_lines(&idx, &lines, &nlines);
    if (rc < 0) {
        cr_errf(err, errlen, "warc: cannot read %s: %s", ipath, strerror(-rc));
        goto out;
    }
    /* Keep the lines naming exactly one complete member. */
    uint64_t valid_end = 0;
    for (size_t i = 0; i < nlines; i++) {
        uint64_t off, len;
        size_t at;
        if (cdxj_parse_span(lines[i].p, lines[i].n - 1, &off, &len) < 0 || len == 0)
            continue;
        bool start_ok = off == 0 ? ends.n > 0 : u64_find(&ends, off, &at);
        size_t next_at;
        if (!start_ok || !u64_find(&ends, off + len, &next_at))
            continue;
        if (off != 0 && next_at != at + 1)
            continue;
        if (off == 0 && next_at != 0)
            continue;
        lines[kept++] = lines[i];
        if (off + len > valid_end)
            valid_end = off + len;
    }
    if (kept == 0) {
        close(fd);
        fd = -1;
        unlink(path);
        unlink(ipath);
        w->st.recovered_bytes_cut += (uint64_t)sb.st_size;
        *removed = true;
        rc = cr_fsync_dir(w->dir);
        goto out;
    }
    if ((uint64_t)sb.st_size > valid_end) {
        if (ftruncate(fd, (off_t)valid_end) < 0) {
            rc = -errno;
            cr_errf(err, errlen, "warc: cannot cut %s: %s", path, strerror(errno));
            goto out;
        }
        w->st.recovered_bytes_cut += (uint64_t)sb.st_size - valid_end;
    }
    if (fsync(fd) < 0) {
        rc = -errno;
        goto out;
    }
    rc = warc_index_write_sorted(w, idx_name, lines, kept);
    if (rc < 0) {
        cr_errf(err, errlen, "warc: cannot rewrite %s: %s", ipath, strerror(-rc));
        goto out;
    }
    rc = cr_fsync_dir(w->dir);
out:
    if (fd >= 0)
        close(fd);
    cr_free(lines);
    cr_buf_release(&idx);
    cr_free(ends.v);
    return rc;
}

/* PREFIX-<14 digits>-<5+ digits>.warc.gz: returns the serial, or -1. */
static int64_t serial_of(const warc_writer *w, const char *name)
{
    size_t pl = strlen(w->prefix), n = strlen(name);
    if (n < pl + 1 + 14 + 1 + 5 + 8 || strncmp(name, w->prefix, pl) != 0 || name[pl] != '-')
        return -1;
    const char *p = name + pl + 1;
    for (int i = 0; i < 14; i++)
        if (p[i] < '0' || p[i] > '9')
            return -1;
    p += 14;
    if (*p++ != '-')
        return -1;
    int64_t s = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9' && digits < 12) {
        s = s * 10 + (*p++ - '0');
        digits++;
    }
    if (digits < 5 || strcmp(p, ".warc.gz") != 0)
        return -1;
    return s;
}

/* Finds the newest file of ours (largest serial); removes stale temp
 * indexes. *newest is "" when there is none. */
static int find_newest(warc_writer *w, char *newest, size_t len, int64_t *max_serial)
{
    DIR *d = opendir(w->dir);
    if (d == NULL)
        return -errno;
    newest[0] = '\0';
    size_t pl = strlen(w->prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 9 && strncmp(e->d_name, w->prefix, pl) == 0 &&
            strcmp(e->d_name + n - 9, ".cdxj.tmp") == 0) {
            char path[PATH_MAX];
            if (warc_path_of(w, e->d_name, path, sizeof path) == 0)
                unlink(path);
            continue;
        }
        int64_t s = serial_of(w, e->d_name);
        if (s >= 0 && s > *max_serial && n < len) {
            *max_serial = s;
            memcpy(newest, e->d_name, n + 1);
        }
    }
    closedir(d);
    return 0;
}

int warc_recover(warc_writer *w, char *err, size_t errlen)
{
    /* The newest file; when it held nothing (a crash while starting it),
     * the one before may be the one left open, so look at that one too. */
    for (int round = 0; round < 2; round++) {
        char newest[256];
        int64_t max_serial = -1;
        int rc = find_newest(w, newest, sizeof newest, &max_serial);
        if (rc < 0) {
            cr_errf(err, errlen, "warc: cannot list %s: %s", w->dir, strerror(-rc));
            return rc;
        }
        if ((uint64_t)(max_serial + 1) > w->next_serial)
            w->next_serial = (uint64_t)(max_serial + 1);
        if (newest[0] == '\0')
            return 0;
        bool removed;
        rc = recover_file(w, newest, &removed, err, errlen);
        if (rc < 0 || !removed)
            return rc;
    }
    return 0;
}

