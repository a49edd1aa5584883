/* frontier/idset: the known-id bitmap (see idset.h). */
#include "frontier/idset.h"

#include <errno.h>
#include <string.h>

#include "common/alloc.h"

int idset_get(const idbits *b, int64_t id)
{
    uint64_t c = (uint64_t)id >> CHUNK_BITS, i = (uint64_t)id & ((1u << CHUNK_BITS) - 1);
    if (c >= b->n || b->chunk[c] == NULL)
        return 0;
    return (int)((b->chunk[c][i >> 6] >> (i & 63)) & 1);
}

int idset_set(idbits *b, int64_t id)
{
    uint64_t c = (uint64_t)id >> CHUNK_BITS, i = (uint64_t)id & ((1u << CHUNK_BITS) - 1);
    if (c >= b->n) {
        size_t n = b->n ? b->n : 16;
        while (n <= c)
            n *= 2;
        uint64_t **v = cr_realloc(b->chunk, n * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        memset(v + b->n, 0, (n - b->n) * sizeof(*v));
        b->chunk = v;
        b->n = n;
    }
    if (b->chunk[c] == NULL) {
        b->chunk[c] = cr_calloc((1u << CHUNK_BITS) / 64, sizeof(uint64_t));
        if (b->chunk[c] == NULL)
            return -ENOMEM;
    }
    b->chunk[c][i >> 6] |= (uint64_t)1 << (i & 63);
    return 0;
}

void idset_clear(idbits *b, int64_t id)
{
    uint64_t c = (uint64_t)id >> CHUNK_BITS, i = (uint64_t)id & ((1u << CHUNK_BITS) - 1);
    if (c < b->n && b->chunk[c] != NULL)
        b->chunk[c][i >> 6] &= ~((uint64_t)1 << (i & 63));
}

void idset_release(idbits *b)
{
    for (size_t i = 0; i < b->n; i++)
        cr_free(b->chunk[i]);
    cr_free(b->chunk);
}
