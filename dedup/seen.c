/* dedup/seen: the URL-seen test over the Bloom filter, the recent cache
 * and a verifier. One fingerprint per key feeds all three. Counters are
 * relaxed atomics: each is exact, a snapshot of all of them is not a
 * single instant. */
#include "seen.h"

#include <stdatomic.h>

#include "common/alloc.h"
#include "dedup/recent.h"

struct seen {
    bloom *bf;
    recent *cache;
    seen_verifier v;
    bool have_verifier;
    int verify;
    atomic_uint_fast64_t keys, new_bloom, new_verified, dup_trusted, dup_recent, dup_verified,
        checked_new, errors;
};

seen *seen_new(bloom *bf, const seen_opts *o, const seen_verifier *v)
{
    if (v == NULL && o->verify != SEEN_VERIFY_NEVER)
        return NULL;
    seen *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->cache = recent_new(o->recent_entries);
    if (s->cache == NULL) {
        cr_free(s);
        return NULL;
    }
    s->bf = bf;
    s->verify = o->verify;
    if (v) {
        s->v = *v;
        s->have_verifier = true;
    }
    return s;
}

void seen_free(seen *s)
{
    if (s == NULL)
        return;
    recent_free(s->cache);
    bloom_free(s->bf);
    cr_free(s);
}

static void bump(atomic_uint_fast64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

int seen_test(seen *s, const char *key, size_t len, bool in_scope, void *row)
{
    hash_fp fp = hash_fingerprint(key, len);
    bool verify = s->verify == SEEN_VERIFY_ALWAYS || (s->verify == SEEN_VERIFY_IN_SCOPE && in_scope);
    if (!bloom_add_fp(s->bf, fp)) {
        recent_check_add(s->cache, fp.lo, fp.hi);
        if (s->have_verifier && s->v.record_new(s->v.ctx, key, len, row) < 0) {
            bump(&s->errors);
            return -1;
        }
        bump(&s->keys);
        bump(&s->new_bloom);
        if (verify)
            bump(&s->checked_new);
        return SEEN_NEW_BLOOM;
    }
    if (!verify) {
        bump(&s->keys);
        bump(&s->dup_trusted);
        return SEEN_DUP_TRUSTED;
    }
    if (recent_check_add(s->cache, fp.lo, fp.hi)) {
        bump(&s->keys);
        bump(&s->dup_recent);
        return SEEN_DUP_RECENT;
    }
    int rc = s->v.check_insert(s->v.ctx, key, len, row);
    if (rc < 0) {
        bump(&s->errors);
        return rc;
    }
    bump(&s->keys);
    if (rc == 1) {
        bump(&s->new_verified);
        bump(&s->checked_new);
        return SEEN_NEW_VERIFIED;
    }
    bump(&s->dup_verified);
    return SEEN_DUP_VERIFIED;
}

void seen_add_known(seen *s, const char *key, size_t len) { bloom_add(s->bf, key, len); }

void seen_counters_get(const seen *s, seen_counters *out)
{
    out->keys = atomic_load(&s->keys);
    out->new_bloom = atomic_load(&s->new_bloom);
    out->new_verified = atomic_load(&s->new_verified);
    out->dup_trusted = atomic_load(&s->dup_trusted);
    out->dup_recent = atomic_load(&s->dup_recent);
    out->dup_verified = atomic_load(&s->dup_verified);
    out->checked_new = atomic_load(&s->checked_new);
    out->errors = atomic_load(&s->errors);
}

double seen_observed_fpr(const seen_counters *c)
{
    return c->checked_new ? (double)c->new_verified / (double)c->checked_new : 0.0;
}

bloom *seen_bloom(seen *s) { return s->bf; }
