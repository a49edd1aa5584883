/* dedup/seen: the URL-seen test. Keys in (canonical URLs, but this module
 * sees only bytes), NEW or DUPLICATE out, and a counter for every decision.
 *
 *   Bloom NO, key pending     -> duplicate: recorded, its row not committed yet
 *   Bloom NO                  -> new, certainly; recorded through the verifier
 *   Bloom MAYBE, not verified -> duplicate, trusting the Bloom filter
 *   Bloom MAYBE, verified     -> the exact recent-fingerprint cache, then the
 *                                verifier's check_insert (SQLite in crawld),
 *                                whose answer is final; with seen_verify_async
 *                                the key is queued (pending) and the
 *                                verifier's ack gives that answer later
 *
 * Whether a MAYBE is verified is the policy: never, always, or in-scope
 * (only keys the caller marks as ones the crawl would fetch). The verifier
 * is an interface storage/ implements; dedup/ knows nothing of SQLite.
 *
 * The invariant (DESIGN.md 7): an in-memory layer answers "seen" for a key
 * only if its row is committed, or the verifier accepted it and the writer
 * holds it until it commits. So a new key is first put in the pending set
 * (dedup/pendset), then recorded; its Bloom bits and its recent-cache
 * entry are set only when the verifier acknowledges the commit, and a
 * failed record leaves no trace. The Bloom filter (and so every snapshot
 * of it) and the recent cache hold committed rows only; the pending set
 * holds what the writer holds. A row the writer finally could not store is acknowledged with an
 * error and is not seen.
 *
 * With a generation ring (dedup/gens), a MAYBE that only an older
 * generation gives is a refresh: the key goes into the newest generation
 * and the verifier's refresh stamps its row, once per key per window
 * (later links in the window find it in the newest: a query only).
 *
 * Threads: seen_test may be called from many threads at once (the Bloom
 * filter, the pending set and the recent cache are thread-safe; counters
 * are atomics); the verifier's functions must be too, and the ack may come
 * from any thread (the writer's). */
#ifndef CRAWLD_SEEN_H
#define CRAWLD_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dedup/bloom.h"
#include "dedup/gens.h"

typedef struct seen seen;

enum seen_verify { SEEN_VERIFY_NEVER, SEEN_VERIFY_ALWAYS, SEEN_VERIFY_IN_SCOPE };

/* The verifier's acknowledgement of a record_new: status >= 0 once the row
 * is committed (new or already there), < 0 when it could not be stored;
 * linked is record_new's. Called exactly once per record_new that returned
 * 0, on any thread. */
typedef void (*seen_ack_fn)(void *arg, const char *key, size_t len, int64_t linked, int status);

/* `linked` is the key's stamp (dedup/gens.h): the row's last-linked time,
 * which a row already there takes too if it is older (so the store never
 * forgets a row whose key the filter still holds, nor the reverse). */
typedef struct seen_verifier {
    void *ctx;
    /* A certainly new key: record it (may be asynchronous) and call
     * ack(ack_arg, ...) after the commit. 0 queued, or <0 (then no ack).
     * absent: no stored row can have the key (the filter holds every
     * committed key and has no retention), so the store may skip its own
     * look-up; false when a forgotten key's row may still be there. */
    int (*record_new)(void *ctx, const char *key, size_t len, int64_t linked, bool absent,
                      void *row, seen_ack_fn ack, void *ack_arg);
    /* A Bloom MAYBE: insert the key unless present, synchronously, after
     * every record_new made before it. 1: it was new; 0: it existed; <0. */
    int (*check_insert)(void *ctx, const char *key, size_t len, int64_t linked, void *row);
    /* May be NULL. A key last confirmed in an older generation was linked
     * again: set its row's last-linked time to linked (asynchronously, in
     * the writer's next batch; a missing row is no error). 0 or < 0. */
    int (*refresh)(void *ctx, const char *key, size_t len, int64_t linked);
    /* May be NULL. A Bloom MAYBE, asynchronously (seen_verify_async):
     * queue "insert the key unless present" behind every record made
     * before it and call ack(ack_arg, ...) after the commit, status 1 (it
     * was new), 0 (a row had it; that row is left as it is) or < 0 (not
     * stored). 0 queued, or < 0 (then no ack). */
    int (*check_insert_async)(void *ctx, const char *key, size_t len, int64_t linked, void *row,
                              seen_ack_fn ack, void *ack_arg);
} seen_verifier;

typedef enum seen_result {
    SEEN_NEW_BLOOM,      /* Bloom said NO */
    SEEN_NEW_VERIFIED,   /* Bloom said MAYBE, the verifier said new: a false positive caught */
    SEEN_DUP_TRUSTED,    /* Bloom said MAYBE and was trusted */
    SEEN_DUP_RECENT,     /* confirmed by the recent-fingerprint cache */
    SEEN_DUP_VERIFIED,   /* confirmed by the verifier */
    SEEN_DUP_PENDING,    /* recorded already, its row not committed yet */
    SEEN_VERIFYING       /* a MAYBE queued to check_insert_async: its ack
                          * (through the row) says new or duplicate */
} seen_result;

static inline bool seen_is_new(seen_result r) { return r <= SEEN_NEW_VERIFIED; }

typedef struct seen_counters {
    uint64_t keys;          /* URLs decided: seen_test calls that returned a
                             * result, and dup_page */
    uint64_t new_bloom;     /* SEEN_NEW_BLOOM */
    uint64_t new_verified;  /* SEEN_NEW_VERIFIED = false positives caught */
    uint64_t dup_trusted;
    uint64_t dup_recent;
    uint64_t dup_verified;
    uint64_t dup_pending;   /* SEEN_DUP_PENDING */
    uint64_t dup_page;      /* repeats on one page that the caller settled
                             * from the first one's answer (no seen_test) */
    uint64_t checked_new;   /* new keys among those a MAYBE would have verified:
                             * the denominator of the observed FPR */
    uint64_t errors;        /* verifier failures (nothing recorded, nothing seen) */
    uint64_t unstored;      /* keys recorded whose row the store finally refused */
    uint64_t pending;       /* keys recorded, not committed yet (a gauge) */
    uint64_t refreshed;     /* keys moved to the newest generation (one store write each) */
    uint64_t found_again;   /* new keys the last dropped generation held: forgotten, found again */
} seen_counters;

typedef struct seen_opts {
    int verify;             /* enum seen_verify */
    size_t recent_entries;  /* exact cache size; 0 disables it */
} seen_opts;

/* Takes ownership of bf (freed by seen_free). verifier may be NULL only
 * with SEEN_VERIFY_NEVER (then nothing is recorded). NULL: no memory.
 * seen_new is a filter without retention; seen_new_gens takes a ring. */
seen *seen_new(bloom *bf, const seen_opts *o, const seen_verifier *v);
seen *seen_new_gens(gens *g, const seen_opts *o, const seen_verifier *v);
void seen_free(seen *s);
/* Async verify (before any seen_test): a verified MAYBE the recent cache
 * does not settle goes to check_insert_async (the key pending until its
 * ack) and seen_test returns SEEN_VERIFYING instead of waiting, so a
 * stream never stalls on the store. 0, or -ENOTSUP without
 * check_insert_async or with a generation ring (whose refresh is decided
 * at test time): then MAYBEs are still waited for. */
int seen_verify_async(seen *s);

/* Decides one key. in_scope matters only for SEEN_VERIFY_IN_SCOPE; row is
 * passed through to the verifier. A seen_result, or a negative errno when
 * the verifier failed or memory ran out (the key then counts as an error,
 * is not reported new, and leaves nothing behind: a later test of it
 * decides afresh). */
int seen_test(seen *s, const char *key, size_t len, bool in_scope, void *row);

/* Adds a key known to be recorded already (catch-up after a restart):
 * the Bloom filter only, no counters, no verifier. _at: into the
 * generation of its stored last-linked stamp (gens_add_at). */
void seen_add_known(seen *s, const char *key, size_t len);
int seen_add_known_at(seen *s, const char *key, size_t len, int64_t linked);

void seen_counters_get(seen *s, seen_counters *out /* OUT */);
/* n URLs the caller found duplicates without a seen_test: a page's repeats
 * of a link whose first occurrence the seen test answered (crawler's
 * per-page link memo). Counted as keys and as dup_page. */
void seen_count_page_repeats(seen *s, uint64_t n);
/* False positives caught / new keys that were checked; 0 with none. */
double seen_observed_fpr(const seen_counters *c);
/* The newest generation's filter (the whole filter without retention). */
bloom *seen_bloom(seen *s);
gens *seen_gens(seen *s);

#endif
