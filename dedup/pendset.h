/* dedup/pendset: the keys the seen test has recorded as new whose rows are
 * not committed yet (they sit in the writer's queue, or in a batch it holds
 * through a stall). With it the Bloom filter is set only after a row
 * commits, so the filter, and every snapshot of it, holds committed rows
 * only, while a second sighting of a pending key is still a duplicate.
 *
 * An exact set of 128-bit fingerprints, sharded by the low half, one mutex
 * per shard; linear probing with backward-shift deletion; a shard doubles
 * when 3/4 full and never shrinks (its size follows the writer's queue).
 * Thread-safe. */
#ifndef CRAWLD_DEDUP_PENDSET_H
#define CRAWLD_DEDUP_PENDSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct pendset pendset;

/* NULL when memory runs out. */
pendset *pendset_new(void);
void pendset_free(pendset *p);
/* 1 added, 0 already present, -ENOMEM (not added). */
int pendset_add(pendset *p, uint64_t lo, uint64_t hi);
/* 1 if present. */
int pendset_has(pendset *p, uint64_t lo, uint64_t hi);
/* Removes the key if present. */
void pendset_del(pendset *p, uint64_t lo, uint64_t hi);
/* Keys held now. */
size_t pendset_count(pendset *p);

#endif
