/* dedup/recent: exact FIFO fingerprint cache.
 *
 * Each shard is a linear-probing hash table of slots (load <= 1/2) plus a
 * ring of slot owners in insertion order. Eviction removes the ring's oldest
 * entry from the table with backward-shift deletion, so there are no
 * tombstones and probe lengths stay short however long the cache runs.
 * The table index comes from `lo`, the shard from the top bits of `hi`;
 * both halves are uniformly random (XXH3-128), so no further mixing is done.
 * A slot with lo == 0 && hi == 0 is empty; the (0, 0) fingerprint itself is
 * stored as (0, 1) in the table, which can only confuse it with that one
 * other value, a ~2^-128 event.
 *
 * Every lookup lands on a random slot, so the tables (one allocation for
 * all shards) start on a 2 MiB boundary and ask for transparent huge
 * pages, as the Bloom filter's stages do: a probe then rarely misses the
 * TLB as well as the data cache. */
#include "recent.h"

#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>

#include "common/alloc.h"

#define RECENT_SHARDS 16

typedef struct slot {
    uint64_t lo, hi;
} slot;

typedef struct shard {
    pthread_mutex_t lock;
    slot *table;      /* mask + 1 slots */
    size_t mask;
    slot *ring;       /* FIFO of held fingerprints */
    size_t cap;       /* ring capacity = max entries */
    size_t head;      /* oldest */
    size_t count;
} shard;

#define HUGE_PAGE ((size_t)2 << 20)

struct recent {
    size_t capacity;
    void *raw;        /* the tables of every shard, padded to a huge page */
    shard shards[RECENT_SHARDS];
};

static slot norm(uint64_t lo, uint64_t hi)
{
    slot s = { lo, hi };
    if (lo == 0 && hi == 0)
        s.hi = 1;
    return s;
}

static bool is_empty(const slot *s) { return s->lo == 0 && s->hi == 0; }

static shard *shard_of(recent *r, uint64_t hi) { return &r->shards[hi >> 60]; }

/* Index of the slot holding s, or of the empty slot where it would go. */
static size_t probe(const shard *sh, slot s, bool *found)
{
    size_t i = (size_t)s.lo & sh->mask;
    for (;;) {
        const slot *t = &sh->table[i];
        if (is_empty(t)) {
            *found = false;
            return i;
        }
        if (t->lo == s.lo && t->hi == s.hi) {
            *found = true;
            return i;
        }
        i = (i + 1) & sh->mask;
    }
}

/* Backward-shift deletion of the entry at slot i. */
static void remove_at(shard *sh, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & sh->mask;
        if (is_empty(&sh->table[j]))
            break;
        size_t home = (size_t)sh->table[j].lo & sh->mask;
        /* move j back to i unless its home lies cyclically in (i, j] */
        bool home_between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!home_between) {
            sh->table[i] = sh->table[j];
            i = j;
        }
    }
    sh->table[i].lo = 0;
    sh->table[i].hi = 0;
}

recent *recent_new(size_t capacity)
{
    recent *r = cr_calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->capacity = capacity;
    size_t per = capacity ? (capacity + RECENT_SHARDS - 1) / RECENT_SHARDS : 0;
    size_t slots = 4;
    while (slots < 2 * per)
        slots *= 2;
    size_t bytes = RECENT_SHARDS * slots * sizeof(slot);
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : sizeof(slot);
    uintptr_t base = 0;
    if (per > 0) {
        r->raw = cr_calloc(1, bytes + align);
        base = ((uintptr_t)r->raw + align - 1) & ~(uintptr_t)(align - 1);
        if (r->raw != NULL && align == HUGE_PAGE)
            (void)madvise((void *)base, bytes, MADV_HUGEPAGE);
    }
    for (int i = 0; i < RECENT_SHARDS; i++)
        pthread_mutex_init(&r->shards[i].lock, NULL);
    if (per > 0 && r->raw == NULL) {
        recent_free(r);
        return NULL;
    }
    for (int i = 0; i < RECENT_SHARDS && per > 0; i++) {
        shard *sh = &r->shards[i];
        sh->table = (slot *)(base + (size_t)i * slots * sizeof(slot));
        sh->ring = cr_calloc(per, sizeof(slot));
        sh->mask = slots - 1;
        sh->cap = per;
        if (sh->ring == NULL) {
            recent_free(r);
            return NULL;
        }
    }
    return r;
}

void recent_free(recent *r)
{
    if (r == NULL)
        return;
    for (int i = 0; i < RECENT_SHARDS; i++) {
        pthread_mutex_destroy(&r->shards[i].lock);
        cr_free(r->shards[i].ring);
    }
    cr_free(r->raw);
    cr_free(r);
}

bool recent_check_add(recent *r, uint64_t lo, uint64_t hi)
{
    shard *sh = shard_of(r, hi);
    if (sh->cap == 0)
        return false;
    slot s = norm(lo, hi);
    bool found;
    pthread_mutex_lock(&sh->lock);
    size_t i = probe(sh, s, &found);
    if (!found) {
        if (sh->count == sh->cap) {
            slot old = sh->ring[sh->head];
            bool there;
            size_t at = probe(sh, old, &there);
            if (there)
                remove_at(sh, at);
            sh->head = (sh->head + 1) % sh->cap;
            sh->count--;
            i = probe(sh, s, &there); /* the shift may have moved our slot */
        }
        sh->table[i] = s;
        sh->ring[(sh->head + sh->count) % sh->cap] = s;
        sh->count++;
    }
    pthread_mutex_unlock(&sh->lock);
    return found;
}

bool recent_contains(recent *r, uint64_t lo, uint64_t hi)
{
    shard *sh = shard_of(r, hi);
    if (sh->cap == 0)
        return false;
    bool found;
    pthread_mutex_lock(&sh->lock);
    probe(sh, norm(lo, hi), &found);
    pthread_mutex_unlock(&sh->lock);
    return found;
}

size_t recent_size(recent *r)
{
    size_t n = 0;
    for (int i = 0; i < RECENT_SHARDS; i++) {
        pthread_mutex_lock(&r->shards[i].lock);
        n += r->shards[i].count;
        pthread_mutex_unlock(&r->shards[i].lock);
    }
    return n;
}
