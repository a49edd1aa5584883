/* frontier/idset: the known-id bitmap, private to frontier/.
 *
 * One bit per row id, set while the frontier owns the row (see the top of
 * frontier.c for what "known" means there). Bits live in chunks of
 * 2^CHUNK_BITS ids (8 KiB each), allocated the first time one of their ids
 * is set, so a sparse id range costs little. Zero-initialize; free with
 * idset_release(). Not thread-safe: frontier.c calls it under its lock. */
#ifndef CRAWLD_IDSET_H
#define CRAWLD_IDSET_H

#include <stddef.h>
#include <stdint.h>

#define CHUNK_BITS 16     /* ids per bitmap chunk: 65536 */

typedef struct idbits {
    uint64_t **chunk;
    size_t n;
} idbits;

/* 1 if id's bit is set, else 0. */
int idset_get(const idbits *b, int64_t id);
/* Sets id's bit. 0, or -ENOMEM (nothing changed). */
int idset_set(idbits *b, int64_t id);
/* Clears id's bit (nothing to do if its chunk was never allocated). */
void idset_clear(idbits *b, int64_t id);
/* Frees every chunk; *b may be zeroed and reused after. */
void idset_release(idbits *b);

#endif
