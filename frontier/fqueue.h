/* frontier/fqueue: a host's in-memory URL queue, private to frontier/.
 *
 * An fentry is one URL row the frontier holds (queued or waiting for a
 * retry); an fqueue is a deque of them sorted by the key (depth, id), kept
 * as v[head .. head + n) in one array that grows by doubling and gives
 * memory back when it shrinks to a quarter. The caller (frontier.c, under
 * its lock) owns the entries' url strings. */
#ifndef CRAWLD_FQUEUE_H
#define CRAWLD_FQUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct fentry {
    int64_t id;
    int64_t not_before; /* retry list only */
    char *url;
    int32_t depth;
    int32_t attempts;   /* attempts made so far */
    int32_t kind;
} fentry;

/* <0, 0, >0 as key (d1, i1) sorts before, equal to, after (d2, i2). */
static inline int fqueue_key_cmp(int32_t d1, int64_t i1, int32_t d2, int64_t i2)
{
    if (d1 != d2)
        return d1 < d2 ? -1 : 1;
    if (i1 != i2)
        return i1 < i2 ? -1 : 1;
    return 0;
}

/* A deque sorted by (depth, id): v[head .. head + n). */
typedef struct fqueue {
    fentry *v;
    size_t cap, head, n;
} fqueue;

/* The i-th entry from the front; i < q->n. */
static inline fentry *fqueue_at(fqueue *q, size_t i) { return &q->v[q->head + i]; }

/* Inserts a copy of *e at its key's place (after equal keys). 0, or
 * -ENOMEM with the queue unchanged. */
int fqueue_insert(fqueue *q, const fentry *e);
/* Removes and returns the first (smallest key) entry; q->n > 0. */
fentry fqueue_pop_front(fqueue *q);
/* Removes and returns the last (largest key) entry; q->n > 0. */
fentry fqueue_pop_back(fqueue *q);

#endif
