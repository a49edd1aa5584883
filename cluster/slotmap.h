/* cluster/slotmap: which node owns which slot, and which slot a host is in.
 *
 * Pure functions, no I/O. A host's slot is XXH3-64(host) mod slots (through
 * dedup/hash, the one xxHash user). The owner of a slot is chosen by
 * rendezvous hashing: the node whose XXH3-64(node_id, slot) is highest.
 * So a node that joins takes about slots/nodes slots, all of them from
 * others, and a node that leaves hands on only its own slots. */
#ifndef CRAWLD_CLUSTER_SLOTMAP_H
#define CRAWLD_CLUSTER_SLOTMAP_H

#include <stddef.h>
#include <stdint.h>

/* The slot of a host name of len bytes (as it appears in the URL key). */
uint32_t slotmap_slot_of(const char *host, size_t len, uint32_t slots);

/* The rendezvous weight of (node, slot). */
uint64_t slotmap_weight(const char *node, uint32_t slot);

/* For each slot 0..slots-1, OUT owner[slot] = index into nodes[0..n) of
 * its owner. n must be > 0. Ties (equal weights) go to the lower name. */
void slotmap_assign(const char *const *nodes, size_t n, uint32_t slots, uint32_t *owner /* OUT */);

#endif
