/* cluster/slotmap: rendezvous (highest random weight) hashing of slots onto
 * nodes, and the host-to-slot function. See slotmap.h. */
#include "slotmap.h"

#include <string.h>

#include "dedup/hash.h"

uint32_t slotmap_slot_of(const char *host, size_t len, uint32_t slots)
{
    return slots ? (uint32_t)(hash_digest64(host, len) % slots) : 0;
}

uint64_t slotmap_weight(const char *node, uint32_t slot)
{
    /* node bytes, a NUL, then the slot little-endian: no two (node, slot)
     * pairs give the same input. */
    char buf[512];
    size_t n = strlen(node);
    if (n > sizeof buf - 5)
        n = sizeof buf - 5;
    memcpy(buf, node, n);
    buf[n] = '\0';
    for (int i = 0; i < 4; i++)
        buf[n + 1 + (size_t)i] = (char)((slot >> (8 * i)) & 0xff);
    return hash_digest64(buf, n + 5);
}

void slotmap_assign(const char *const *nodes, size_t n, uint32_t slots, uint32_t *owner)
{
    for (uint32_t s = 0; s < slots; s++) {
        size_t best = 0;
        uint64_t bw = slotmap_weight(nodes[0], s);
        for (size_t i = 1; i < n; i++) {
            uint64_t w = slotmap_weight(nodes[i], s);
            if (w > bw || (w == bw && strcmp(nodes[i], nodes[best]) < 0)) {
                best = i;
                bw = w;
            }
        }
        owner[s] = (uint32_t)best;
    }
}
