/* dedup/seen: the URL-seen test. Keys in (canonical URLs, but this module
 * sees only bytes), NEW or DUPLICATE out, and a counter for every decision.
 *
 *   Bloom NO                  -> new, certainly; recorded through the verifier
 *   Bloom MAYBE, not verified -> duplicate, trusting the Bloom filter
 *   Bloom MAYBE, verified     -> the exact recent-fingerprint cache, then the
 *                                verifier's check_insert (SQLite in crawld),
 *                                whose answer is final
 *
 * Whether a MAYBE is verified is the policy: never, always, or in-scope
 * (only keys the caller marks as ones the crawl would fetch). The verifier
 * is an interface storage/ implements; dedup/ knows nothing of SQLite.
 * Threads: seen_test may be called from many threads at once (the Bloom
 * filter and the recent cache are thread-safe; counters are atomics); the
 * verifier's functions must be too. */
#ifndef CRAWLD_SEEN_H
#define CRAWLD_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dedup/bloom.h"

typedef struct seen seen;

enum seen_verify { SEEN_VERIFY_NEVER, SEEN_VERIFY_ALWAYS, SEEN_VERIFY_IN_SCOPE };

typedef struct seen_verifier {
    void *ctx;
    /* A certainly new key: record it (may be asynchronous). 0 or <0. */
    int (*record_new)(void *ctx, const char *key, size_t len, void *row);
    /* A Bloom MAYBE: insert the key unless present, synchronously, after
     * every record_new made before it. 1: it was new; 0: it existed; <0. */
    int (*check_insert)(void *ctx, const char *key, size_t len, void *row);
} seen_verifier;

typedef enum seen_result {
    SEEN_NEW_BLOOM,      /* Bloom said NO */
    SEEN_NEW_VERIFIED,   /* Bloom said MAYBE, the verifier said new: a false positive caught */
    SEEN_DUP_TRUSTED,    /* Bloom said MAYBE and was trusted */
    SEEN_DUP_RECENT,     /* confirmed by the recent-fingerprint cache */
    SEEN_DUP_VERIFIED    /* confirmed by the verifier */
} seen_result;

static inline bool seen_is_new(seen_result r) { return r <= SEEN_NEW_VERIFIED; }

typedef struct seen_counters {
    uint64_t keys;          /* seen_test calls that returned a result */
    uint64_t new_bloom;     /* SEEN_NEW_BLOOM */
    uint64_t new_verified;  /* SEEN_NEW_VERIFIED = false positives caught */
    uint64_t dup_trusted;
    uint64_t dup_recent;
    uint64_t dup_verified;
    uint64_t checked_new;   /* new keys among those a MAYBE would have verified:
                             * the denominator of the observed FPR */
    uint64_t errors;        /* verifier failures */
} seen_counters;

typedef struct seen_opts {
    int verify;             /* enum seen_verify */
    size_t recent_entries;  /* exact cache size; 0 disables it */
} seen_opts;

/* Takes ownership of bf (freed by seen_free). verifier may be NULL only
 * with SEEN_VERIFY_NEVER (then nothing is recorded). NULL: no memory. */
seen *seen_new(bloom *bf, const seen_opts *o, const seen_verifier *v);
void seen_free(seen *s);

/* Decides one key. in_scope matters only for SEEN_VERIFY_IN_SCOPE; row is
 * passed through to the verifier. A seen_result, or <0 when the verifier
 * failed (the key then counts as an error and is not reported new). */
int seen_test(seen *s, const char *key, size_t len, bool in_scope, void *row);

/* Adds a key known to be recorded already (catch-up after a restart):
 * the Bloom filter only, no counters, no verifier. */
void seen_add_known(seen *s, const char *key, size_t len);

void seen_counters_get(const seen *s, seen_counters *out /* OUT */);
/* False positives caught / new keys that were checked; 0 with none. */
double seen_observed_fpr(const seen_counters *c);
bloom *seen_bloom(seen *s);

#endif
