/* storage/spool: one response body on its way to the archive.
 *
 * Pieces are appended as they arrive. Each piece updates two SHA-1s: the
 * payload's, and the WARC block digest's (the header block given to
 * spool_begin, then the payload), so no pass over the body is needed at
 * the end. The first mem_cap bytes are kept in memory; a body that passes
 * it moves, whole, to an unlinked temp file in dir (nothing to clean up
 * after a crash), so the memory one body takes never grows past mem_cap.
 * A failed write (ENOSPC, EIO...) is sticky: spool_error says it, later
 * pieces are only digested (the digests stay right), the stored bytes are
 * no longer readable. One spool per fetch, used by one thread at a time. */
#ifndef CRAWLD_SPOOL_H
#define CRAWLD_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPOOL_DEFAULT_MEM_CAP (1u << 20)

typedef struct spool_opts {
    const char *dir;      /* folder for the temp file (copied); NULL: the
                             spool only digests, storing nothing */
    size_t mem_cap;       /* bytes kept in memory at most; 0: 1 MiB */
    /* write(2) stand-in, for tests that inject a failure; NULL: write */
    ssize_t (*write_fn)(int fd, const void *p, size_t n);
} spool_opts;

typedef struct spool spool;

/* A new empty spool, or NULL (no memory). */
spool *spool_new(const spool_opts *o);
/* Empties the spool (a temp file is closed) and seeds the block digest
 * with hdr (NULL, 0: none). 0 or -ENOMEM. */
int spool_begin(spool *s, const void *hdr, size_t hdr_len);
/* Appends a piece: 0, or the negative errno of the first failure (sticky). */
int spool_append(spool *s, const void *p, size_t n);
/* Ends the body: finishes the digests. 0 or -ENOMEM. */
int spool_finish(spool *s);
uint64_t spool_len(const spool *s);       /* payload bytes appended */
int spool_error(const spool *s);          /* 0 or the sticky -errno */
bool spool_spilled(const spool *s);       /* the body went to a file */
/* After spool_finish: sha1 of the payload; of the header block + payload. */
const uint8_t *spool_payload_sha1(const spool *s);
const uint8_t *spool_block_sha1(const spool *s);
size_t spool_header_len(const spool *s);  /* the header block's length */
/* Reads n stored bytes at off into buf (void *s: fits warc_fetch's reader).
 * 0, -ERANGE past the end, or -errno (a failed spool: its error). */
int spool_read(void *s, uint64_t off, void *buf, size_t n);
/* Memory-resident body, or NULL when spilled or failed. */
const void *spool_data(const spool *s);
void spool_free(spool *s);

#endif
