/* dedup/recent: an exact, bounded cache of recently seen 128-bit fingerprints.
 *
 * The seen test asks it before SQLite when the Bloom filter says MAYBE: a hit
 * is a confirmed duplicate (two different keys share a 128-bit fingerprint
 * with probability ~2^-128), a miss says nothing. When full, each shard
 * forgets its oldest entry (FIFO), so memory is fixed at creation:
 * about 40 bytes per entry. Thread-safe: S shards chosen by fingerprint
 * bits, each with its own mutex (never held across calls). */
#ifndef CRAWLD_RECENT_H
#define CRAWLD_RECENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct recent recent;

/* capacity entries in all (0: a cache that always misses). NULL: no memory. */
recent *recent_new(size_t capacity);
void recent_free(recent *r);

/* true when (lo, hi) is cached; otherwise adds it and returns false. */
bool recent_check_add(recent *r, uint64_t lo, uint64_t hi);
bool recent_contains(recent *r, uint64_t lo, uint64_t hi);
/* Entries currently held. */
size_t recent_size(recent *r);

#endif
