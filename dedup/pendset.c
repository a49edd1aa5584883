/* dedup/pendset: see pendset.h. A slot is empty when both halves are 0;
 * a key whose halves are both 0 is stored as (0, 1): a collision of two
 * 128-bit fingerprints is far below any other error rate here. */
#include "dedup/pendset.h"

#include <errno.h>
#include <pthread.h>

#include "common/alloc.h"

#define SHARDS 64
#define INITIAL 64 /* slots per shard at first (a power of two) */

typedef struct slot {
    uint64_t lo, hi;
} slot;

typedef struct shard {
    pthread_mutex_t mu;
    slot *v;
    size_t mask; /* slots - 1 */
    size_t n;
    char pad[64];
} shard;

struct pendset {
    shard sh[SHARDS];
};

static void fix(uint64_t *lo, uint64_t *hi)
{
    if (*lo == 0 && *hi == 0)
        *hi = 1;
}

static shard *shard_of(pendset *p, uint64_t lo) { return &p->sh[(lo >> 58) % SHARDS]; }

pendset *pendset_new(void)
{
    pendset *p = cr_calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&p->sh[i].mu, NULL);
        p->sh[i].v = cr_calloc(INITIAL, sizeof(slot));
        p->sh[i].mask = INITIAL - 1;
        if (p->sh[i].v == NULL) {
            pendset_free(p);
            return NULL;
        }
    }
    return p;
}

void pendset_free(pendset *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < SHARDS; i++) {
        cr_free(p->sh[i].v);
        pthread_mutex_destroy(&p->sh[i].mu);
    }
    cr_free(p);
}

/* The slot holding the key, or the empty slot where it would go. */
static size_t find(const shard *s, uint64_t lo, uint64_t hi)
{
    size_t i = (size_t)lo & s->mask;
    while (s->v[i].lo != 0 || s->v[i].hi != 0) {
        if (s->v[i].lo == lo && s->v[i].hi == hi)
            return i;
        i = (i + 1) & s->mask;
    }
    return i;
}

static int grow(shard *s)
{
    size_t cap = (s->mask + 1) * 2;
    slot *old = s->v, *v = cr_calloc(cap, sizeof *v);
    size_t oldcap = s->mask + 1;
    if (v == NULL)
        return -ENOMEM;
    s->v = v;
    s->mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].lo != 0 || old[i].hi != 0)
            s->v[find(s, old[i].lo, old[i].hi)] = old[i];
    cr_free(old);
    return 0;
}

int pendset_add(pendset *p, uint64_t lo, uint64_t hi)
{
    fix(&lo, &hi);
    shard *s = shard_of(p, lo);
    int rc = 1;
    pthread_mutex_lock(&s->mu);
    size_t i = find(s, lo, hi);
    if (s->v[i].lo == lo && s->v[i].hi == hi) {
        rc = 0;
        goto out;
    }
    if ((s->n + 1) * 4 > (s->mask + 1) * 3) {
        if (grow(s) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        i = find(s, lo, hi);
    }
    s->v[i].lo = lo;
    s->v[i].hi = hi;
    s->n++;
out:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pendset_has(pendset *p, uint64_t lo, uint64_t hi)
{
    fix(&lo, &hi);
    shard *s = shard_of(p, lo);
    pthread_mutex_lock(&s->mu);
    size_t i = find(s, lo, hi);
    int has = s->v[i].lo == lo && s->v[i].hi == hi;
    pthread_mutex_unlock(&s->mu);
    return has;
}

void pendset_del(pendset *p, uint64_t lo, uint64_t hi)
{
    fix(&lo, &hi);
    shard *s = shard_of(p, lo);
    pthread_mutex_lock(&s->mu);
    size_t i = find(s, lo, hi);
    if (s->v[i].lo == lo && s->v[i].hi == hi) {
        /* backward shift: pull later entries of the run into the hole */
        size_t hole = i, j = i;
        for (;;) {
            j = (j + 1) & s->mask;
            if (s->v[j].lo == 0 && s->v[j].hi == 0)
                break;
            size_t home = (size_t)s->v[j].lo & s->mask;
            /* j's entry may move to hole unless its home lies in (hole, j] */
            if (((j - home) & s->mask) >= ((j - hole) & s->mask)) {
                s->v[hole] = s->v[j];
                hole = j;
            }
        }
        s->v[hole].lo = 0;
        s->v[hole].hi = 0;
        s->n--;
    }
    pthread_mutex_unlock(&s->mu);
}

size_t pendset_count(pendset *p)
{
    size_t n = 0;
    for (int i = 0; i < SHARDS; i++) {
        pthread_mutex_lock(&p->sh[i].mu);
        n += p->sh[i].n;
        pthread_mutex_unlock(&p->sh[i].mu);
    }
    return n;
}
