/* dedup/seen: the URL-seen test over the Bloom filter, the recent cache
 * and a verifier. One fingerprint per key feeds all three. Counters are
 * relaxed atomics, striped: each thread adds to its own stripe (a cache
 * line of its own, so threads testing keys at once do not fight over one
 * line) and a read sums the stripes. Each total is exact; a snapshot of all
 * of them is not a single instant. */
#include "seen.h"

#include <stdatomic.h>
#include <limits.h>

#include <errno.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "dedup/pendset.h"
#include "dedup/recent.h"

enum { KEYS, NEW_BLOOM, NEW_VERIFIED, DUP_TRUSTED, DUP_RECENT, DUP_VERIFIED, DUP_PENDING,
       DUP_PAGE, CHECKED_NEW, ERRORS, UNSTORED, REFRESHED, FOUND_AGAIN, NCOUNTERS };

#define STRIPES 8
typedef struct stripe {
    atomic_uint_fast64_t n[NCOUNTERS];
    char pad[64]; /* the next stripe's counters start on another line */
} stripe;

struct seen {
    gens *g;
    recent *cache;
    pendset *pend;
    seen_verifier v;
    bool have_verifier;
    bool async;      /* seen_verify_async */
    int verify;
    stripe st[STRIPES];
};

static atomic_uint next_stripe;
static _Thread_local unsigned my_stripe = UINT_MAX;

static void add(seen *s, int which, uint64_t n)
{
    if (my_stripe == UINT_MAX)
        my_stripe = atomic_fetch_add(&next_stripe, 1) % STRIPES;
    atomic_fetch_add_explicit(&s->st[my_stripe].n[which], n, memory_order_relaxed);
}

static void bump(seen *s, int which) { add(s, which, 1); }

static uint64_t total(const seen *s, int which)
{
    uint64_t sum = 0;
    for (int i = 0; i < STRIPES; i++)
        sum += atomic_load_explicit(&s->st[i].n[which], memory_order_relaxed);
    return sum;
}

seen *seen_new(bloom *bf, const seen_opts *o, const seen_verifier *v)
{
    if (v == NULL && o->verify != SEEN_VERIFY_NEVER)
        return NULL;
    gens *g = gens_wrap(bf);
    if (g == NULL)
        return NULL;
    seen *s = seen_new_gens(g, o, v);
    if (s == NULL)
        gens_unwrap(g);
    return s;
}

seen *seen_new_gens(gens *g, const seen_opts *o, const seen_verifier *v)
{
    if (v == NULL && o->verify != SEEN_VERIFY_NEVER)
        return NULL;
    seen *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->cache = recent_new(o->recent_entries);
    s->pend = pendset_new();
    if (s->cache == NULL || s->pend == NULL) {
        recent_free(s->cache);
        pendset_free(s->pend);
        cr_free(s);
        return NULL;
    }
    s->g = g;
    s->verify = o->verify;
    if (v) {
        s->v = *v;
        s->have_verifier = true;
    }
    return s;
}

int seen_verify_async(seen *s)
{
    if (!s->have_verifier || s->v.check_insert_async == NULL || gens_rotating(s->g))
        return -ENOTSUP;
    s->async = true;
    return 0;
}

void seen_free(seen *s)
{
    if (s == NULL)
        return;
    recent_free(s->cache);
    pendset_free(s->pend);
    gens_free(s->g);
    cr_free(s);
}


/* The verifier's word on a recorded key: committed rows get their Bloom
 * bits (before leaving the pending set, so a concurrent test that misses
 * the pending entry finds the bits); refused ones are forgotten. */
static void seen_ack(void *arg, const char *key, size_t len, int64_t linked, int status)
{
    seen *s = arg;
    hash_fp fp = hash_fingerprint(key, len);
    if (status >= 0) {
        gens_add_at(s->g, fp, linked);
        recent_check_add(s->cache, fp.lo, fp.hi);
    } else {
        bump(s, UNSTORED);
    }
    pendset_del(s->pend, fp.lo, fp.hi);
}

/* The verifier's answer to a queued MAYBE (seen_verify_async): a new row gets
 * its Bloom bits (a false positive caught), a row already there was a
 * duplicate; either way the key is committed, so the recent cache takes
 * it before it leaves the pending set. */
static void seen_ack_checked(void *arg, const char *key, size_t len, int64_t linked, int status)
{
    seen *s = arg;
    hash_fp fp = hash_fingerprint(key, len);
    if (status > 0) {
        gens_add_at(s->g, fp, linked);
        bump(s, NEW_VERIFIED);
        bump(s, CHECKED_NEW);
    } else if (status == 0) {
        bump(s, DUP_VERIFIED);
    } else {
        bump(s, UNSTORED);
    }
    if (status >= 0)
        recent_check_add(s->cache, fp.lo, fp.hi);
    pendset_del(s->pend, fp.lo, fp.hi);
}

/* Puts the key in the pending set: 1 added; SEEN_DUP_PENDING when it was
 * there (counted); or a negative errno (counted as an error). */
static int pend(seen *s, hash_fp fp)
{
    int added = pendset_add(s->pend, fp.lo, fp.hi);
    if (added < 0) {
        bump(s, ERRORS);
        return added;
    }
    if (added == 0) {
        bump(s, KEYS);
        bump(s, DUP_PENDING);
        return SEEN_DUP_PENDING;
    }
    return 1;
}

/* A MAYBE queued to the verifier instead of waited for: pending until the
 * ack, so a later test of the key is a DUP_PENDING whatever the answer. */
static int verify_later(seen *s, const char *key, size_t len, hash_fp fp, int64_t stamp, void *row)
{
    int added = pend(s, fp);
    if (added != 1)
        return added;
    int rc = s->v.check_insert_async(s->v.ctx, key, len, stamp, row, seen_ack_checked, s);
    if (rc < 0) {
        pendset_del(s->pend, fp.lo, fp.hi);
        bump(s, ERRORS);
        return rc;
    }
    bump(s, KEYS);
    return SEEN_VERIFYING;
}

/* A key the newest generation lacks but an older one holds: into the
 * newest, and its row stamped, once (the thread whose add set the bits
 * writes; a second thread racing it may write too, harmlessly). */
static void refresh(seen *s, const char *key, size_t len, hash_fp fp)
{
    int64_t stamp;
    if (gens_add_fp(s->g, fp, &stamp) != 0)
        return;
    bump(s, REFRESHED);
    if (s->have_verifier && s->v.refresh != NULL && s->v.refresh(s->v.ctx, key, len, stamp) < 0)
        bump(s, ERRORS);
}

int seen_test(seen *s, const char *key, size_t len, bool in_scope, void *row)
{
    hash_fp fp = hash_fingerprint(key, len);
    bool verify = s->verify == SEEN_VERIFY_ALWAYS || (s->verify == SEEN_VERIFY_IN_SCOPE && in_scope);
    int64_t stamp = gens_stamp(s->g, cr_wall_ms() / 1000);
    int q = gens_query_fp(s->g, fp);
    if (q == GENS_NO) {
        int added = pend(s, fp);
        if (added != 1)
            return added;
        /* committed and acknowledged between the query and the add? */
        q = gens_query_fp(s->g, fp);
        if (q != GENS_NO) {
            pendset_del(s->pend, fp.lo, fp.hi);
            goto maybe;
        }
        bool again = gens_was_dropped(s->g, fp);
        if (again)
            bump(s, FOUND_AGAIN);
        if (s->have_verifier) {
            /* without retention the filter holds every committed key: NO is certain */
            bool absent = !again && !gens_rotating(s->g);
            int rc = s->v.record_new(s->v.ctx, key, len, stamp, absent, row, seen_ack, s);
            if (rc < 0) {
                pendset_del(s->pend, fp.lo, fp.hi);
                bump(s, ERRORS);
                return rc;
            }
        } else {
            /* nothing to commit: the filter is the whole seen-set */
            gens_add_fp(s->g, fp, NULL);
            pendset_del(s->pend, fp.lo, fp.hi);
        }
        bump(s, KEYS);
        bump(s, NEW_BLOOM);
        if (verify)
            bump(s, CHECKED_NEW);
        return SEEN_NEW_BLOOM;
    }
maybe:
    if (!verify) {
        if (q == GENS_OLDER)
            refresh(s, key, len, fp);
        bump(s, KEYS);
        bump(s, DUP_TRUSTED);
        return SEEN_DUP_TRUSTED;
    }
    if (recent_contains(s->cache, fp.lo, fp.hi)) {
        if (q == GENS_OLDER)
            refresh(s, key, len, fp);
        bump(s, KEYS);
        bump(s, DUP_RECENT);
        return SEEN_DUP_RECENT;
    }
    if (s->async)
        return verify_later(s, key, len, fp, stamp, row);
    int rc = s->v.check_insert(s->v.ctx, key, len, stamp, row);
    if (rc < 0) {
        bump(s, ERRORS);
        return rc;
    }
    recent_check_add(s->cache, fp.lo, fp.hi); /* committed: check_insert waited */
    bump(s, KEYS);
    if (rc == 1) {
        /* stored with this window's stamp: its key belongs in that window */
        gens_add_at(s->g, fp, stamp);
        bump(s, NEW_VERIFIED);
        bump(s, CHECKED_NEW);
        return SEEN_NEW_VERIFIED;
    }
    if (q == GENS_OLDER)
        refresh(s, key, len, fp);
    bump(s, DUP_VERIFIED);
    return SEEN_DUP_VERIFIED;
}

void seen_add_known(seen *s, const char *key, size_t len)
{
    gens_add_fp(s->g, hash_fingerprint(key, len), NULL);
}

int seen_add_known_at(seen *s, const char *key, size_t len, int64_t linked)
{
    return gens_add_at(s->g, hash_fingerprint(key, len), linked);
}

void seen_count_page_repeats(seen *s, uint64_t n)
{
    if (n == 0)
        return;
    add(s, DUP_PAGE, n);
    add(s, KEYS, n);
}

void seen_counters_get(seen *s, seen_counters *out)
{
    out->keys = total(s, KEYS);
    out->new_bloom = total(s, NEW_BLOOM);
    out->new_verified = total(s, NEW_VERIFIED);
    out->dup_trusted = total(s, DUP_TRUSTED);
    out->dup_recent = total(s, DUP_RECENT);
    out->dup_verified = total(s, DUP_VERIFIED);
    out->dup_pending = total(s, DUP_PENDING);
    out->dup_page = total(s, DUP_PAGE);
    out->checked_new = total(s, CHECKED_NEW);
    out->errors = total(s, ERRORS);
    out->unstored = total(s, UNSTORED);
    out->pending = pendset_count(s->pend);
    out->refreshed = total(s, REFRESHED);
    out->found_again = total(s, FOUND_AGAIN);
}

double seen_observed_fpr(const seen_counters *c)
{
    return c->checked_new ? (double)c->new_verified / (double)c->checked_new : 0.0;
}

bloom *seen_bloom(seen *s) { return gens_newest(s->g); }

gens *seen_gens(seen *s) { return s->g; }
