/* dedup/hash: XXH3 fingerprints and checksums (see hash.h).
 *
 * xxHash is fenced into this file. It is compiled inline (XXH_INLINE_ALL):
 * the fingerprint is on the hot path of every Bloom add and query, and the
 * inlined XXH3 avoids a PLT call and runtime dispatch per key; the algorithm
 * and its output are the same as libxxhash's. */
#include "hash.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* XXH3_state_t wants 64-byte alignment; cr_malloc gives 16, so the state
 * lives at the first aligned address inside a slightly larger block. */
struct hash_stream {
    void *raw;
    XXH3_state_t *st;
};

hash_fp hash_fingerprint(const void *key, size_t len)
{
    XXH128_hash_t h = XXH3_128bits(key, len);
    hash_fp fp = { h.low64, h.high64 };
    return fp;
}

uint64_t hash_digest64(const void *p, size_t len) { return XXH3_64bits(p, len); }

hash_stream *hash_stream_new(void)
{
    hash_stream *hs = cr_malloc(sizeof *hs);
    if (hs == NULL)
        return NULL;
    hs->raw = cr_malloc(sizeof(XXH3_state_t) + 64);
    if (hs->raw == NULL) {
        cr_free(hs);
        return NULL;
    }
    uintptr_t a = ((uintptr_t)hs->raw + 63) & ~(uintptr_t)63;
    hs->st = (XXH3_state_t *)a;
    memset(hs->st, 0, sizeof *hs->st);
    XXH3_64bits_reset(hs->st);
    return hs;
}

void hash_stream_update(hash_stream *hs, const void *p, size_t len)
{
    if (len > 0)
        XXH3_64bits_update(hs->st, p, len);
}

uint64_t hash_stream_digest(const hash_stream *hs) { return XXH3_64bits_digest(hs->st); }

void hash_stream_free(hash_stream *hs)
{
    if (hs == NULL)
        return;
    cr_free(hs->raw);
    cr_free(hs);
}
