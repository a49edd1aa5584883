/* dedup/bloom: a sharded, scalable, cache-line-blocked Bloom filter.
 *
 * Byte strings (or their hash_fp fingerprints) in; NO or MAYBE out. A NO is
 * certain: a key that was added is always answered MAYBE (no false
 * negatives), also after a snapshot round trip. A MAYBE for a key that was
 * never added happens at a rate bounded by params.fp_rate however far the
 * filter grows past params.expected_items (each shard is a chain of stages,
 * Almeida et al. 2007, whose error rates shrink geometrically).
 *
 * Threads: any number of threads may call bloom_add*, bloom_query* and
 * bloom_stats* at once on the same filter without a global lock (bits are
 * set with atomic fetch_or; each shard's stage list is append-only and
 * published with release/acquire). A per-shard mutex is taken only when a
 * stage is appended, and by bloom_save (all shards, in index order).
 * bloom_free must not race with anything. Keys whose add returned before
 * bloom_save was called are in the snapshot; concurrent adds may or may not
 * be. */
#ifndef CRAWLD_BLOOM_H
#define CRAWLD_BLOOM_H

#include <stddef.h>
#include <stdint.h>

#include "dedup/hash.h"

typedef struct bloom bloom;

#define BLOOM_MAX_STAGES 64  /* per shard */
#define BLOOM_MAX_SHARDS 4096

typedef struct bloom_params {
    uint64_t expected_items; /* n: items the first stages hold at the target rate, >= 1 */
    double fp_rate;          /* p: bound on the false-positive rate, [1e-9, 0.5] */
    unsigned shards;         /* S: a power of two in [1, BLOOM_MAX_SHARDS]; default 16 */
    double growth;           /* s: capacity factor per new stage, [1, 16]; default 2 */
    double tightening;       /* r: error factor per new stage, [0.05, 0.95]; default 0.85 */
    unsigned max_stages;     /* stages per shard, [1, BLOOM_MAX_STAGES]; default 64.
                              * 1 = a fixed-size filter sized at p itself. */
    unsigned block_lines;    /* 64-byte lines per block: 0 = auto (default), 1 or 2 */
    uint64_t max_bytes;      /* cap on the bit arrays (0: none, the default): a stage that
                              * would take them past it is not appended; the full stage goes
                              * on taking keys and the rate rises past p (bloom_stats.capped).
                              * Not kept in snapshots: bloom_set_max_bytes applies it. */
} bloom_params;

/* Fills *p with the defaults above (n = 1000000, p = 0.01). */
void bloom_params_init(bloom_params *p);

/* 0 if *p is usable; otherwise -EINVAL and a one-line reason in err. */
int bloom_params_check(const bloom_params *p, char *err, size_t errlen);

/* Creates an empty filter. Returns 0 and sets *out (caller owns it; free
 * with bloom_free), -EINVAL for bad params, -EFBIG when the first stages
 * alone would pass max_bytes, -ENOMEM when memory runs out. */
int bloom_new(const bloom_params *p, bloom **out /* OUT */);
void bloom_free(bloom *bf);

/* The parameters the filter was built with (also after bloom_load), with
 * the max_bytes in force. */
void bloom_get_params(const bloom *bf, bloom_params *out /* OUT */);

/* Sets the cap on the filter's bit arrays (params.max_bytes; 0: none) from
 * now on: stages already there stay; each shard whose newest stage is full
 * decides at once (a successor if the cap allows it, else it is counted
 * capped). Safe beside adds and queries. */
void bloom_set_max_bytes(bloom *bf, uint64_t max_bytes);

/* Adds a key. Returns 1 if it was (probably) already present, 0 if it was
 * certainly new; decided in the same pass that sets the bits. Never fails:
 * if a new stage cannot be allocated the key goes into the full stage (the
 * false-positive rate then rises; see bloom_stats.grow_failures). */
int bloom_add(bloom *bf, const void *key, size_t len);
int bloom_add_fp(bloom *bf, hash_fp fp);

/* 1 = MAYBE present, 0 = certainly absent. */
int bloom_query(const bloom *bf, const void *key, size_t len);
int bloom_query_fp(const bloom *bf, hash_fp fp);

/* Batched forms: the same answers as n single calls (present[i] is 0 or 1),
 * faster on a large filter because the memory lines of a batch are fetched
 * in parallel. present may be NULL for bloom_add_many. */
void bloom_add_many(bloom *bf, const hash_fp *fps, size_t n, uint8_t *present /* OUT */);
void bloom_query_many(const bloom *bf, const hash_fp *fps, size_t n, uint8_t *present /* OUT */);

/* One stage of one shard's chain. */
typedef struct bloom_stage_info {
    uint64_t capacity;   /* items it is sized for */
    uint64_t count;      /* new items added to it */
    uint64_t bits;       /* m */
    uint64_t set_bits;
    unsigned k;          /* bits per item, all inside one block */
    unsigned block_lines;
    double fpr_target;   /* error it was sized for: P0 * r^i */
    double bits_per_item;/* bits / capacity */
    double fill;         /* set_bits / bits */
    double fpr_fill;     /* fill^k: the classic estimate, too low for blocks */
    double fpr_model;    /* the blocked layout's model at the load the fill implies */
} bloom_stage_info;

typedef struct bloom_stats {
    unsigned shards;
    unsigned stages_min, stages_max; /* stages per shard */
    unsigned stages_total;
    uint64_t capacity;       /* sum over all stages */
    uint64_t count;          /* items added (new ones) */
    uint64_t bits;
    uint64_t set_bits;
    uint64_t memory_bytes;   /* bit arrays only */
    double bits_per_item;    /* bits / count; 0 when empty */
    double fill;             /* set_bits / bits */
    double fpr_model;        /* predicted rate of the whole filter (mean over shards
                              * of each chain's 1 - prod(1 - fpr_model)) */
    double fpr_bound;        /* params.fp_rate */
    uint64_t grow_failures;  /* failed attempts to append a stage (out of memory) */
    uint64_t max_bytes;      /* the cap in force (params.max_bytes; 0: none) */
    unsigned capped;         /* shards whose last full stage got no successor: max_bytes */
    unsigned saturated;      /* shards at max_stages or capped whose newest stage is past
                              * capacity: there the rate is no longer bounded by p */
} bloom_stats;

void bloom_stats_get(const bloom *bf, bloom_stats *out /* OUT */);
/* Stages in shard (0 if shard is out of range). */
unsigned bloom_stage_count(const bloom *bf, unsigned shard);
/* 0, or -ENOENT if there is no such shard or stage. */
int bloom_stage_info_get(const bloom *bf, unsigned shard, unsigned stage,
                         bloom_stage_info *out /* OUT */);

/* Predicted false-positive rate of one blocked stage: block of 512*lines
 * bits, k bits per item, on average load items per block (Poisson). */
double bloom_model_fpr(double load, unsigned k, unsigned lines);

/* Bytes of a snapshot's owner id: who the snapshot belongs to (crawld
 * stores the crawl id of the database the filter mirrors). */
#define BLOOM_OWNER_BYTES 16

/* Writes the whole filter, the caller's high-water mark and owner id
 * (BLOOM_OWNER_BYTES bytes; NULL writes zeros) to path, atomically (temp
 * file in the same folder, fsync, rename, fsync folder). 0, or a negative
 * errno with a message in err. */
int bloom_save(bloom *bf, const char *path, uint64_t high_water_mark, const uint8_t *owner,
               char *err, size_t errlen);

/* Reads a snapshot written by bloom_save, checking magic, version, every
 * size and the checksum before the filter is handed out. On success returns
 * 0, sets *out (caller owns it), *high_water_mark and owner (may be NULL;
 * BLOOM_OWNER_BYTES bytes). Otherwise *out is untouched and err says why:
 * -ENOENT/-EACCES/-EISDIR/-EIO (cannot read), -EINVAL (not a snapshot),
 * -ENOTSUP (other version), -EBADMSG (truncated, corrupt or inconsistent),
 * -ENOMEM. OUT: out, high_water_mark, owner */
int bloom_load(const char *path, bloom **out, uint64_t *high_water_mark, uint8_t *owner,
               char *err, size_t errlen);

/* A generation ring as snapshots hold it (dedup/gens builds and reads it):
 * n filters, oldest first, each with the time its window started; all built
 * with the same parameters. A plain filter is n = 1, retention_s = 0,
 * generations = 0. */
#define BLOOM_MAX_GENS 9
typedef struct bloom_ring {
    unsigned n;               /* live generations, 1..BLOOM_MAX_GENS */
    unsigned generations;     /* the configured ring size (0 with no retention) */
    int64_t retention_s;      /* 0: no retention */
    bloom *gens[BLOOM_MAX_GENS];
    int64_t starts[BLOOM_MAX_GENS]; /* non-decreasing */
} bloom_ring;

/* bloom_save/bloom_load for a ring: the same file format, checks and
 * errors. bloom_load_ring fills *out (caller owns its filters) only on
 * success. bloom_load refuses (-EINVAL) a ring of more than one filter.
 * OUT: out, high_water_mark, owner */
int bloom_save_ring(const bloom_ring *ring, const char *path, uint64_t high_water_mark,
                    const uint8_t *owner, char *err, size_t errlen);
int bloom_load_ring(const char *path, bloom_ring *out, uint64_t *high_water_mark, uint8_t *owner,
                    char *err, size_t errlen);

#endif
