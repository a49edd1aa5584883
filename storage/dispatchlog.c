/* storage/dispatchlog: see dispatchlog.h.
 *
 * File layout (host byte order: the file never leaves the machine that
 * wrote it; a file of another size or magic is rebuilt): a 64-byte header
 * (magic, slots, a clean flag) and DISPATCHLOG_SLOTS 8-byte entries, each
 * (id << 16 | attempt), 0 when empty. Entries are written with relaxed
 * atomic stores to the shared mapping: a killed process leaves them in the
 * page cache whole (an aligned 8-byte store does not tear). */
#include "storage/dispatchlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/err.h"

#define MAGIC 0x474f4c4443524c44ull /* "DLRCDLOG" */
#define HEADER 64

struct dispatchlog {
    uint8_t *map;
    size_t size;
    _Atomic uint64_t *slot;
    atomic_uint_fast64_t next;
};

typedef struct header {
    uint64_t magic;
    uint64_t slots;
    uint64_t clean;
} header;

dispatchlog *dispatchlog_open(const char *state_dir, int *was_clean, char *err, size_t errlen)
{
    char path[4096];
    size_t size = HEADER + (size_t)DISPATCHLOG_SLOTS * 8;
    struct stat sb;
    dispatchlog *l = cr_calloc(1, sizeof *l);
    int fd = -1;

    if (l == NULL) {
        cr_errf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(path, sizeof path, "%s/dispatch.log", state_dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        cr_errf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        goto fail;
    }
    int fresh = (size_t)sb.st_size != size;
    if (fresh && (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)size) != 0)) {
        cr_errf(err, errlen, "cannot size %s: %s", path, strerror(errno));
        goto fail;
    }
    /* the blocks must exist before they are mapped: a write to a hole of a
     * shared mapping on a full disk is a SIGBUS, not an error */
    int frc = posix_fallocate(fd, 0, (off_t)size);
    if (frc != 0 && frc != EOPNOTSUPP && frc != EINVAL) {
        cr_errf(err, errlen, "cannot allocate %s: %s", path, strerror(frc));
        goto fail;
    }
    l->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (l->map == MAP_FAILED) {
        l->map = NULL;
        cr_errf(err, errlen, "cannot map %s: %s", path, strerror(errno));
        goto fail;
    }
    close(fd);
    l->size = size;
    l->slot = (_Atomic uint64_t *)(void *)(l->map + HEADER);
    header h;
    memcpy(&h, l->map, sizeof h);
    if (fresh || h.magic != MAGIC || h.slots != DISPATCHLOG_SLOTS) {
        memset(l->map, 0, size);
        h = (header){ MAGIC, DISPATCHLOG_SLOTS, 1 };
        memcpy(l->map, &h, sizeof h);
    }
    *was_clean = h.clean != 0;
    return l;
fail:
    if (fd >= 0)
        close(fd);
    cr_free(l);
    return NULL;
}

void dispatchlog_scan(dispatchlog *l, dispatchlog_fn cb, void *ud)
{
    for (size_t i = 0; i < DISPATCHLOG_SLOTS; i++) {
        uint64_t e = atomic_load_explicit(&l->slot[i], memory_order_relaxed);
        if (e != 0 && cb(ud, (int64_t)(e >> 16), (int)(e & 0xffff)) != 0)
            return;
    }
}

void dispatchlog_reset(dispatchlog *l)
{
    header h = { MAGIC, DISPATCHLOG_SLOTS, 0 };
    memset(l->map + HEADER, 0, l->size - HEADER);
    memcpy(l->map, &h, sizeof h);
    atomic_store(&l->next, 0);
}

void dispatchlog_note(dispatchlog *l, int64_t id, int attempt)
{
    if (l == NULL || id <= 0)
        return;
    uint64_t i = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed) % DISPATCHLOG_SLOTS;
    uint64_t a = attempt < 1 ? 1 : attempt > 0xffff ? 0xffff : (uint64_t)attempt;
    atomic_store_explicit(&l->slot[i], ((uint64_t)id << 16) | a, memory_order_relaxed);
}

void dispatchlog_close(dispatchlog *l, int clean)
{
    if (l == NULL)
        return;
    if (clean) {
        header h = { MAGIC, DISPATCHLOG_SLOTS, 1 };
        memset(l->map + HEADER, 0, l->size - HEADER);
        memcpy(l->map, &h, sizeof h);
        msync(l->map, l->size, MS_SYNC);
    }
    munmap(l->map, l->size);
    cr_free(l);
}
