/* dedup/gens: the Bloom filter as a ring of generations, so that a seen-set
 * can forget on purpose (dedup.retention_s).
 *
 * The retention is cut into `generations` windows of window_s =
 * retention_s / generations. Each generation is a whole dedup/bloom filter
 * holding the keys added or refreshed while it was the newest; a query
 * reads every live generation, an add writes the newest. gens_push starts a
 * new window; gens_drop drops each generation whose window ended more than
 * retention_s ago, so the ring holds at most generations + 1 filters (one
 * more between a gens_push and the gens_drop that follows it) and
 * every key added or refreshed within the last retention_s answers MAYBE.
 * Each generation is sized for expected_items / generations keys at
 * fp_rate / (generations + 1), so a query over all of them stays within
 * fp_rate (each chain still grows and tightens past its size).
 *
 * Stamps: a key's stamp is the start (Unix seconds) of the window of the
 * generation it went into; the store keeps it as the row's last-linked
 * time, so "rows linked before the oldest live window" (gens_cutoff) are
 * exactly the rows whose keys were dropped.
 *
 * With retention_s = 0 the ring is one generation that never rotates
 * (today's filter); no lock is taken then.
 *
 * Threads: queries and adds from any thread (a read lock on the ring);
 * gens_push, gens_drop and gens_save take it for writing / reading; the
 * filters themselves are thread-safe (dedup/bloom.h). */
#ifndef CRAWLD_DEDUP_GENS_H
#define CRAWLD_DEDUP_GENS_H

#include <stddef.h>
#include <stdint.h>

#include "dedup/bloom.h"
#include "dedup/hash.h"

typedef struct gens gens;

#define GENS_MIN 2
#define GENS_MAX 8

typedef struct gens_opts {
    int64_t retention_s;  /* 0: keep every key forever (one generation) */
    unsigned generations; /* GENS_MIN..GENS_MAX windows (ignored when retention_s is 0) */
} gens_opts;

/* 0 if *o is usable (retention_s is 0 or at least `generations` seconds);
 * otherwise -EINVAL and a reason in err. */
int gens_opts_check(const gens_opts *o, char *err, size_t errlen);

/* The parameters each generation is built with: p with expected_items
 * divided by generations, fp_rate and max_bytes by the most generations
 * that can be live at once. OUT: out */
void gens_gen_params(const bloom_params *p, const gens_opts *o, bloom_params *out);

/* A new ring whose first window starts at now (Unix seconds). p is the
 * whole ring's bound (gens_gen_params is applied). 0, -EINVAL, -ENOMEM.
 * Caller owns *out; free with gens_free. */
int gens_new(const bloom_params *p, const gens_opts *o, int64_t now, gens **out /* OUT */);
/* A ring of one generation around bf, without retention (takes bf; on
 * failure, NULL and bf is untouched). */
gens *gens_wrap(bloom *bf);
/* A ring from a loaded snapshot, if it was built for the same options and
 * for p: 0 (the ring's filters now belong to *out), or -EINVAL with the
 * reason in err (ring untouched, caller frees it), -ENOMEM. */
int gens_adopt(bloom_ring *ring, const bloom_params *p, const gens_opts *o, gens **out,
               char *err, size_t errlen);
void gens_free(gens *g);
/* The whole ring's cap on Bloom bits (bloom_params.max_bytes, 0: none),
 * shared as gens_gen_params shares it, for the live filters and those made
 * later: what a ring loaded from a snapshot (which keeps no cap) is given.
 * Call before the ring is shared with other threads. */
void gens_set_max_bytes(gens *g, uint64_t max_bytes);
/* Frees a ring made by gens_wrap but not its filter (the caller keeps it). */
void gens_unwrap(gens *g);

enum gens_answer {
    GENS_NO = 0,     /* in no live generation: new for certain */
    GENS_NEWEST = 1, /* MAYBE, and in the newest generation */
    GENS_OLDER = 2   /* MAYBE from an older generation only: to refresh */
};
int gens_query_fp(gens *g, hash_fp fp);

/* Adds a key to the newest generation. Returns 1 if it was (probably)
 * there already, 0 if not; *stamp (may be NULL) gets that window's start. */
int gens_add_fp(gens *g, hash_fp fp, int64_t *stamp /* OUT */);
/* Adds a key to the generation whose window holds stamp (the newest one
 * starting at or before it), or to the oldest when stamp is older than
 * every live window: its row is then at or past the cutoff, and both go
 * at the next gens_drop (the store forgets rows stamped before the
 * cutoff). Returns 0. */
int gens_add_at(gens *g, hash_fp fp, int64_t stamp);

/* The stamp a key added now would get: the newest window's start (with no
 * retention, now itself). */
int64_t gens_stamp(gens *g, int64_t now);
/* 1 if retention is on. */
int gens_rotating(const gens *g);
int64_t gens_window_s(const gens *g);

/* Starts a new window if the newest one ended by now: 1 started, 0 not
 * yet (or no retention), -ENOMEM (the newest keeps taking keys; retry). */
int gens_push(gens *g, int64_t now);
/* 1 if one of the last `generations` dropped generations (kept only for
 * this question) holds the key: a new key that was forgotten, found again.
 * An estimate: it recognises keys forgotten within the last retention_s,
 * wrongly at about fp_rate; the ghosts cost as much memory as the ring
 * (gens_stats.ghost_bytes) and are not in snapshots. */
int gens_was_dropped(gens *g, hash_fp fp);

/* The oldest live window's start (INT64_MIN with no retention). */
int64_t gens_cutoff(gens *g);
/* The cutoff gens_drop(now) would leave: the start of the oldest window
 * that stays live (INT64_MIN with no retention). */
int64_t gens_next_cutoff(gens *g, int64_t now);
/* Drops every generation whose window ended at or before now -
 * retention_s (never the newest). Returns how many; *cutoff (may be NULL)
 * gets the oldest live window's start: rows stamped before it are
 * forgotten. */
unsigned gens_drop(gens *g, int64_t now, int64_t *cutoff /* OUT */);

/* One live generation, oldest first. */
typedef struct gens_gen_info {
    int64_t start;         /* window start, Unix seconds */
    uint64_t keys;         /* keys added to it */
    uint64_t memory_bytes;
    double fill;           /* set bits / bits */
    double fpr_model;
} gens_gen_info;

typedef struct gens_stats {
    unsigned live;           /* generations now */
    unsigned generations;    /* configured (0: no retention) */
    int64_t retention_s, window_s;
    uint64_t rotations;      /* windows started since the ring was made */
    uint64_t dropped;        /* generations dropped */
    uint64_t dropped_keys;   /* keys they held */
    double fpr_model;        /* 1 - prod(1 - fpr_model) over live generations */
    uint64_t memory_bytes;   /* live generations' bits */
    uint64_t ghost_bytes;    /* the dropped generations kept for gens_was_dropped */
    uint64_t keys;
    gens_gen_info gen[BLOOM_MAX_GENS];
} gens_stats;

void gens_stats_get(gens *g, gens_stats *out /* OUT */);

/* The newest generation's filter (valid until the next gens_push/drop;
 * for its parameters and per-stage figures). */
bloom *gens_newest(gens *g);
/* Calls fn with the newest generation's filter under the ring's read
 * lock, so that a drop on another thread cannot free it meanwhile: what a
 * thread other than the one rotating the ring must use. */
void gens_with_newest(gens *g, void (*fn)(bloom *bf, void *arg), void *arg);

/* Saves every live generation (bloom_save_ring): 0 or < 0 with err. */
int gens_save(gens *g, const char *path, uint64_t high_water_mark, const uint8_t *owner,
              char *err, size_t errlen);

#endif
