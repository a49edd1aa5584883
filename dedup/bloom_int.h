/* dedup/bloom_int: the Bloom filter's private structs and the few internal
 * functions that bloom.c (the filter) and bloom_snap.c (its snapshots)
 * share. Not for use outside dedup/bloom*.c; the API is bloom.h. The
 * design, the layout and the locking rules are written at the top of
 * bloom.c. */
#ifndef CRAWLD_BLOOM_INT_H
#define CRAWLD_BLOOM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "common/striped.h"
#include "dedup/bloom.h"

#define LINE_BITS 512
#define MAX_K 16
#define NSLOT CR_STRIPES /* one slot per common/striped stripe */
#define MAX_CAPACITY (UINT64_C(1) << 50)
#define HUGE_PAGE (UINT64_C(2) << 20)

struct slot {
    _Alignas(64) _Atomic uint64_t count; /* new items added by this slot's threads */
    _Atomic uint64_t set_bits;           /* bits they set */
};

struct stage {
    _Atomic uint64_t *words; /* nblocks * block_words, 64-byte aligned */
    struct slot *slots;      /* NSLOT, right after the words */
    void *raw;               /* the allocation holding both */
    uint64_t nblocks;
    uint64_t capacity;
    uint64_t qmask;          /* the full test runs when a slot count & qmask == 0 */
    double error;            /* target rate */
    unsigned k;
    unsigned lines;          /* 1 or 2 */
    unsigned block_words;    /* 8 * lines */
    unsigned shift;          /* 64 - log2(512 * lines) */
    unsigned index;          /* position in the chain: selects the remix */
};

struct shard {
    pthread_mutex_t lock;              /* appending a stage; bloom_save */
    _Atomic unsigned nstages;          /* >= 1; release-published */
    struct stage *stages[BLOOM_MAX_STAGES];
    _Atomic uint64_t grow_failures;
    _Atomic unsigned grow_pending;     /* the last append failed: retry on any add */
    _Atomic unsigned capped;           /* the last append was refused by max_bytes */
};

struct geom {
    int ready; /* 1: computed; -1: no geometry fits (stage too large) */
    uint64_t nblocks;
    unsigned k, lines;
};

struct chunk {
    struct chunk *next;
    void *raw;
};

struct bloom {
    bloom_params params;
    uint64_t shard_mask;
    uint64_t cap0;  /* per-shard capacity of stage 0 */
    double p0;      /* error of stage 0 */
    _Atomic uint64_t max_bytes; /* params.max_bytes as now in force */
    struct shard *shards;
    pthread_mutex_t geom_lock;
    struct geom geom[BLOOM_MAX_STAGES];
    int arena_on;                 /* set before the first stage is made */
    pthread_mutex_t arena_lock;   /* taken inside a shard lock */
    struct chunk *chunks;
    uintptr_t arena_base;         /* the current chunk */
    uint64_t arena_used;
};

/* The filter without any stage (every shard has nstages == 0): 0, -EINVAL
 * for bad params, -ENOMEM. Caller owns *out; free with bloom_free. */
int bloom_alloc(const bloom_params *p, bloom **out /* OUT */);
/* A zeroed stage of nblocks blocks (position index in its chain), or NULL
 * when it is too large or memory runs out; the caller publishes it. */
struct stage *bloom_stage_alloc(bloom *bf, unsigned index, uint64_t nblocks, unsigned k,
                          unsigned lines, uint64_t capacity, double error);
/* New items added to st (the sum over its counter slots). */
uint64_t bloom_stage_items(const struct stage *st);

#endif
