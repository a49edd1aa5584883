/* frontier/fqueue: the sorted deque of a host's URLs (see fqueue.h). Not
 * thread-safe on its own: frontier.c calls it under the frontier's lock. */
#include "frontier/fqueue.h"

#include <errno.h>
#include <string.h>

#include "common/alloc.h"

int fqueue_insert(fqueue *q, const fentry *e)
{
    size_t lo = 0, hi = q->n;

    while (lo < hi) { /* first position whose key is greater */
        size_t mid = lo + (hi - lo) / 2;
        const fentry *m = fqueue_at(q, mid);
        if (fqueue_key_cmp(m->depth, m->id, e->depth, e->id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (q->head + q->n == q->cap && q->head > 0 && lo == 0) {
        q->head--; /* room at the front, inserting at the front */
        q->v[q->head] = *e;
        q->n++;
        return 0;
    }
    if (q->head + q->n == q->cap) {
        if (q->head > 0) { /* compact */
            memmove(q->v, q->v + q->head, q->n * sizeof(*q->v));
            q->head = 0;
        } else {
            size_t cap = q->cap ? q->cap * 2 : 8;
            fentry *v = cr_realloc(q->v, cap * sizeof(*v));
            if (v == NULL)
                return -ENOMEM;
            q->v = v;
            q->cap = cap;
        }
    }
    fentry *base = q->v + q->head;
    memmove(base + lo + 1, base + lo, (q->n - lo) * sizeof(*base));
    base[lo] = *e;
    q->n++;
    return 0;
}

/* Gives memory back once a queue has shrunk to a quarter of its array. */
static void q_shrink(fqueue *q)
{
    if (q->n == 0) {
        q->head = 0;
        if (q->cap > 64) {
            cr_free(q->v);
            q->v = NULL;
            q->cap = 0;
        }
        return;
    }
    if (q->cap > 64 && q->n * 4 <= q->cap) {
        memmove(q->v, q->v + q->head, q->n * sizeof(*q->v));
        q->head = 0;
        fentry *v = cr_realloc(q->v, (q->cap / 2) * sizeof(*v));
        if (v != NULL) {
            q->v = v;
            q->cap /= 2;
        }
    }
}

fentry fqueue_pop_front(fqueue *q)
{
    fentry e = q->v[q->head];
    q->head++;
    q->n--;
    q_shrink(q);
    return e;
}

fentry fqueue_pop_back(fqueue *q)
{
    fentry e = q->v[q->head + q->n - 1];
    q->n--;
    q_shrink(q);
    return e;
}
