/* dedup/hash: the one place a key is hashed.
 *
 * A key (any byte string) is hashed exactly once, with XXH3-128, into a
 * hash_fp. Everything downstream (shard choice, every Bloom stage and probe,
 * and later the exact recent-fingerprint cache) works from that value, so
 * callers may keep it and pass it around instead of the key. This is the
 * only file pair that includes xxhash.h.
 *
 * The streaming digest (XXH3-64) checksums snapshot files. */
#ifndef CRAWLD_HASH_H
#define CRAWLD_HASH_H

#include <stddef.h>
#include <stdint.h>

/* 128-bit fingerprint of a key: the two 64-bit halves of XXH3-128. */
typedef struct hash_fp {
    uint64_t lo;
    uint64_t hi;
} hash_fp;

/* The fingerprint of len bytes at key (key may be NULL when len is 0). */
hash_fp hash_fingerprint(const void *key, size_t len);

static inline int hash_fp_equal(hash_fp a, hash_fp b)
{
    return a.lo == b.lo && a.hi == b.hi;
}

/* XXH3-64 of a whole buffer. */
uint64_t hash_digest64(const void *p, size_t len);

/* Incremental XXH3-64 over a byte stream (same result as hash_digest64 of
 * the concatenation). */
typedef struct hash_stream hash_stream;

/* NULL when memory runs out. Caller owns it; free with hash_stream_free(). */
hash_stream *hash_stream_new(void);
void hash_stream_update(hash_stream *hs, const void *p, size_t len);
uint64_t hash_stream_digest(const hash_stream *hs);
void hash_stream_free(hash_stream *hs);

#endif
