/* frontier/hostheap: the indexed binary heaps of hosts (see hostheap.h). */
#include "frontier/hostheap.h"

#include <errno.h>

#include "common/alloc.h"

static bool heap_less(int which, const fhost *a, const fhost *b)
{
    switch (which) {
    case HEAP_TIME:
        if (a->sched_t != b->sched_t)
            return a->sched_t < b->sched_t;
        break;
    case HEAP_READY: {
        int c = fqueue_key_cmp(a->rdepth, a->rid, b->rdepth, b->rid);
        if (c != 0)
            return c < 0;
        break;
    }
    default: /* SIZE: largest first */
        if (a->q.n != b->q.n)
            return a->q.n > b->q.n;
        break;
    }
    return a->seq < b->seq;
}

static void heap_set(fheap *hp, int which, size_t i, fhost *h)
{
    hp->v[i] = h;
    h->pos[which] = i + 1;
}

static void heap_up(fheap *hp, int which, size_t i)
{
    fhost *h = hp->v[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(which, h, hp->v[parent]))
            break;
        heap_set(hp, which, i, hp->v[parent]);
        i = parent;
    }
    heap_set(hp, which, i, h);
}

static void heap_down(fheap *hp, int which, size_t i)
{
    fhost *h = hp->v[i];
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        const fhost *bh = h;
        if (l < hp->n && heap_less(which, hp->v[l], bh)) {
            best = l;
            bh = hp->v[l];
        }
        if (l + 1 < hp->n && heap_less(which, hp->v[l + 1], bh))
            best = l + 1;
        if (best == i)
            break;
        heap_set(hp, which, i, hp->v[best]);
        i = best;
    }
    heap_set(hp, which, i, h);
}

int hostheap_reserve(fheap *hp, size_t n)
{
    if (n <= hp->cap)
        return 0;
    size_t cap = hp->cap ? hp->cap : 64;
    while (cap < n)
        cap *= 2;
    fhost **v = cr_realloc(hp->v, cap * sizeof(*v));
    if (v == NULL)
        return -ENOMEM;
    hp->v = v;
    hp->cap = cap;
    return 0;
}

void hostheap_push(fheap *hp, int which, fhost *h)
{
    if (h->pos[which] != 0)
        return;
    hp->v[hp->n++] = h;
    heap_up(hp, which, hp->n - 1);
}

void hostheap_remove(fheap *hp, int which, fhost *h)
{
    size_t i;
    if (h->pos[which] == 0)
        return;
    i = h->pos[which] - 1;
    h->pos[which] = 0;
    hp->n--;
    if (i == hp->n)
        return;
    heap_set(hp, which, i, hp->v[hp->n]);
    heap_up(hp, which, i);
    heap_down(hp, which, hp->v[i]->pos[which] - 1);
}

void hostheap_fix(fheap *hp, int which, fhost *h)
{
    size_t i = h->pos[which] - 1;
    heap_up(hp, which, i);
    heap_down(hp, which, h->pos[which] - 1);
}

fhost *hostheap_top(const fheap *hp)
{
    return hp->n ? hp->v[0] : NULL;
}
