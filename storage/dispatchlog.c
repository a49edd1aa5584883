/* storage/dispatchlog: see dispatchlog.h.
 *
 * File layout (host byte order: the file never leaves the machine that
 * wrote it; a file of another size or magic is rebuilt, one of the first
 * layout converted): a 64-byte header (magic, slots, a clean flag, the
 * count of starts noted since the last reset) and DISPATCHLOG_SLOTS
 * 32-byte entries of four words: (id << 16 | attempt),
 * 0 when empty; the host key; the start (wall ms); the spacing + 1 (0:
 * unknown). The first layout had only the first word (8-byte entries).
 * Words are written with atomic stores to the shared mapping, which a
 * killed process leaves in the page cache whole (an aligned 8-byte store
 * does not tear); the first word last, with release order. A kill between
 * them leaves an entry whose last three words are the new fetch's and the
 * first an old one's: the old row (long since answered) is counted as
 * before, and the new host's hold is right. */
#include "storage/dispatchlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/err.h"

#define MAGIC 0x32474f4c4443524cull    /* "LRCDLOG2" */
#define MAGIC_V1 0x474f4c4443524c44ull /* "DLRCDLOG": 8-byte entries */
#define HEADER 64
#define WORDS 4 /* per entry */

struct dispatchlog {
    uint8_t *map;
    size_t size;
    _Atomic uint64_t *slot;
    _Atomic uint64_t *next;     /* in the header: survives a kill, so a scan and
                                   a reset read and clear only the slots used
                                   (the pages of the rest stay untouched) */
};

typedef struct header {
    uint64_t magic;
    uint64_t slots;
    uint64_t clean;
    uint64_t next;
} header;

/* How many slots the last run used. */
static size_t used(const dispatchlog *l)
{
    uint64_t n = atomic_load_explicit(l->next, memory_order_acquire);
    return n < DISPATCHLOG_SLOTS ? (size_t)n : DISPATCHLOG_SLOTS;
}

dispatchlog *dispatchlog_open(const char *state_dir, int *was_clean, char *err, size_t errlen)
{
    char path[4096];
    size_t size = HEADER + (size_t)DISPATCHLOG_SLOTS * 8 * WORDS;
    struct stat sb;
    dispatchlog *l = cr_calloc(1, sizeof *l);
    uint64_t *v1 = NULL; /* a first-layout file's entries */
    header h;
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
    if (fresh && (size_t)sb.st_size == HEADER + (size_t)DISPATCHLOG_SLOTS * 8 &&
        pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == MAGIC_V1 &&
        h.slots == DISPATCHLOG_SLOTS) {
        size_t n = (size_t)DISPATCHLOG_SLOTS * 8;
        v1 = cr_malloc(n);
        if (v1 == NULL || pread(fd, v1, n, HEADER) != (ssize_t)n) {
            cr_errf(err, errlen, "cannot read %s: %s", path, v1 ? strerror(errno) : "out of memory");
            goto fail;
        }
    }
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
    if (v1 != NULL) { /* the first layout (the file, just sized, is zeros):
                         its entries, the rest unknown */
        for (size_t i = 0; i < DISPATCHLOG_SLOTS; i++)
            atomic_store_explicit(&l->slot[i * WORDS], v1[i], memory_order_relaxed);
        h.magic = MAGIC;
        h.next = DISPATCHLOG_SLOTS; /* its count is not known: every slot */
        memcpy(l->map, &h, sizeof h);
        cr_free(v1);
        v1 = NULL;
    }
    memcpy(&h, l->map, sizeof h);
    if (h.magic != MAGIC || h.slots != DISPATCHLOG_SLOTS) { /* new, or not ours */
        if (!fresh) /* a file just sized is zeros: its pages stay untouched */
            memset(l->map, 0, size);
        h = (header){ MAGIC, DISPATCHLOG_SLOTS, 1, 0 };
        memcpy(l->map, &h, sizeof h);
    }
    l->next = (_Atomic uint64_t *)(void *)(l->map + offsetof(header, next));
    *was_clean = h.clean != 0;
    return l;
fail:
    if (fd >= 0)
        close(fd);
    cr_free(v1);
    cr_free(l);
    return NULL;
}

void dispatchlog_scan(dispatchlog *l, dispatchlog_fn cb, void *ud)
{
    for (size_t i = 0, n = used(l); i < n; i++) {
        _Atomic uint64_t *w = &l->slot[i * WORDS];
        uint64_t a = atomic_load_explicit(&w[0], memory_order_acquire);
        if (a == 0)
            continue;
        uint64_t sp = atomic_load_explicit(&w[3], memory_order_relaxed);
        dispatchlog_entry e = {
            .id = (int64_t)(a >> 16),
            .attempt = (int)(a & 0xffff),
            .host_key = atomic_load_explicit(&w[1], memory_order_relaxed),
            .started_ms = (int64_t)atomic_load_explicit(&w[2], memory_order_relaxed),
            .spacing_ms = sp == 0 ? -1 : (int64_t)(sp - 1),
        };
        if (cb(ud, &e) != 0)
            return;
    }
}

void dispatchlog_reset(dispatchlog *l)
{
    uint64_t zero = 0;
    memset(l->map + HEADER, 0, used(l) * 8 * WORDS);
    memcpy(l->map + offsetof(header, clean), &zero, sizeof zero);
    atomic_store(l->next, 0);
}

void dispatchlog_note(dispatchlog *l, const dispatchlog_entry *e)
{
    if (l == NULL || e->id < 0)
        return;
    uint64_t i = atomic_fetch_add_explicit(l->next, 1, memory_order_relaxed) % DISPATCHLOG_SLOTS;
    _Atomic uint64_t *w = &l->slot[i * WORDS];
    uint64_t a = e->attempt < 1 ? 1 : e->attempt > 0xffff ? 0xffff : (uint64_t)e->attempt;
    atomic_store_explicit(&w[1], e->host_key, memory_order_relaxed);
    atomic_store_explicit(&w[2], e->started_ms > 0 ? (uint64_t)e->started_ms : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&w[3], e->spacing_ms >= 0 ? (uint64_t)e->spacing_ms + 1 : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&w[0], ((uint64_t)e->id << 16) | a, memory_order_release);
}

void dispatchlog_close(dispatchlog *l, int clean)
{
    if (l == NULL)
        return;
    if (clean) { /* the entries stay: the next run's politeness reads them */
        uint64_t one = 1;
        memcpy(l->map + offsetof(header, clean), &one, sizeof one);
        msync(l->map, l->size, MS_SYNC);
    }
    munmap(l->map, l->size);
    cr_free(l);
}
