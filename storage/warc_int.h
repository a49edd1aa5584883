/* storage/warc_int: the WARC writer's struct and the few helpers that
 * warc.c (writing) and warc_recover.c (crash recovery at open) share.
 * Private to storage/warc*.c; the API is warc.h. The locking rules are
 * written at the top of warc.c. */
#ifndef CRAWLD_WARC_INT_H
#define CRAWLD_WARC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "common/buf.h"
#include "storage/warc.h"

/* One remembered payload of the dedup map (open addressing). */
typedef struct dd_slot {
    uint8_t digest[20];
    uint8_t id[16];
    int64_t date_ms;
    const char *uri;   /* NULL: empty slot */
} dd_slot;

/* A block of the arena that holds the dedup map's URI strings. */
typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

struct warc_writer {
    /* options: read-only after warc_open */
    char *dir;
    char prefix[WARC_MAX_PREFIX + 1];
    uint64_t max_file_bytes;
    bool revisits;
    uint64_t dedup_cap;
    int level;
    char *info;                 /* warcinfo block, CRLF lines */
    size_t info_len;
    int lock_fd;                /* flock on DIR/PREFIX.lock */

    pthread_mutex_t lock;
    /* guarded by lock: */
    bool have_file;
    int fd, idx_fd;
    char name[128];             /* current WARC file name */
    char idx_name[128];
    uint64_t file_bytes;
    uint64_t idx_bytes;
    uint64_t file_fetches;
    uint8_t info_id[16];        /* current file's warcinfo record id */
    uint8_t next_info_id[16];   /* the next file's, known in advance */
    uint64_t next_serial;
    int broken;                 /* nonzero: writes refused with it */
    dd_slot *slots;
    size_t slot_cap, slot_count;
    arena_block *arena;
    uint64_t arena_bytes;
    warc_stats st;
};

/* One line of an index file, in the buffer it was read into. */
typedef struct line_ref {
    const char *p;
    size_t n;   /* with its LF */
} line_ref;

/* zlib's allocator hooks, over common/alloc (so the failure hook reaches zlib). */
voidpf warc_z_alloc(voidpf opaque, uInt items, uInt size);
void warc_z_free(voidpf opaque, voidpf p);
/* DIR/name into out. 0 or -ENAMETOOLONG. */
int warc_path_of(const warc_writer *w, const char *name, char *out, size_t outlen);
/* Reads a whole file (at most max bytes) into b. A missing file is empty. */
int warc_read_file(const char *path, size_t max, cr_buf *b);
/* Writes lines, sorted bytewise, to DIR/idx_name through a temp file that
 * is fsynced and renamed over it. */
int warc_index_write_sorted(const warc_writer *w, const char *idx_name, line_ref *lines, size_t n);
/* Splits b into complete lines (a torn last line is dropped). Caller frees
 * *out with cr_free. */
int warc_split_lines(const cr_buf *b, line_ref **out, size_t *n);

/* Crash recovery (warc_recover.c): repairs the newest file of the prefix
 * and its index, and sets w->next_serial. 0, or < 0 with err filled. */
int warc_recover(warc_writer *w, char *err, size_t errlen);

#endif
