/* dedup/gens: a ring of Bloom generations (API and rules in gens.h).
 *
 * g->gen[0..n-1] is oldest to newest. With retention the array changes
 * only under the write side of `lock` (gens_push appends, gens_drop shifts
 * the oldest out); queries, adds and saves hold the read side, so a filter
 * is never freed under a reader. Without retention n is 1 for good and no
 * lock is taken. Counters are atomics. */
#include "dedup/gens.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/err.h"

struct gen {
    bloom *bf;
    int64_t start;
};

struct gens {
    pthread_rwlock_t lock;
    int rotating;          /* retention on */
    gens_opts o;
    int64_t window;        /* seconds */
    bloom_params p;        /* each generation's */
    unsigned n;
    struct gen gen[BLOOM_MAX_GENS];
    bloom *ghost[GENS_MAX]; /* the last dropped generations, oldest first */
    unsigned nghost;
    _Atomic uint64_t rotations, dropped, dropped_keys;
};

int gens_opts_check(const gens_opts *o, char *err, size_t errlen)
{
    if (o->retention_s == 0)
        return 0;
    if (o->retention_s < 0) {
        cr_errf(err, errlen, "retention_s must be 0 (keep forever) or positive");
        return -EINVAL;
    }
    if (o->generations < GENS_MIN || o->generations > GENS_MAX) {
        cr_errf(err, errlen, "generations must be %d..%d, not %u", GENS_MIN, GENS_MAX,
                o->generations);
        return -EINVAL;
    }
    if (o->retention_s < (int64_t)o->generations) {
        cr_errf(err, errlen, "retention_s %lld is shorter than one second per generation (%u)",
                (long long)o->retention_s, o->generations);
        return -EINVAL;
    }
    return 0;
}

void gens_gen_params(const bloom_params *p, const gens_opts *o, bloom_params *out)
{
    *out = *p;
    if (o->retention_s > 0) {
        /* a window holds about 1/generations of the retention's keys; the
         * chain grows past that as usual */
        out->expected_items = p->expected_items / o->generations;
        if (out->expected_items < 1)
            out->expected_items = 1;
        out->fp_rate = p->fp_rate / (double)(o->generations + 1);
        out->max_bytes = p->max_bytes / (o->generations + 1);
        if (p->max_bytes > 0 && out->max_bytes == 0)
            out->max_bytes = 1; /* a cap stays a cap */
    }
}

void gens_set_max_bytes(gens *g, uint64_t max_bytes)
{
    bloom_params whole = g->p, gp;
    whole.max_bytes = max_bytes;
    gens_gen_params(&whole, &g->o, &gp);
    g->p.max_bytes = gp.max_bytes;
    for (unsigned i = 0; i < g->n; i++)
        bloom_set_max_bytes(g->gen[i].bf, gp.max_bytes);
}

static void rd_lock(gens *g)
{
    if (g->rotating)
        pthread_rwlock_rdlock(&g->lock);
}

static void rd_unlock(gens *g)
{
    if (g->rotating)
        pthread_rwlock_unlock(&g->lock);
}

static gens *alloc_ring(const gens_opts *o)
{
    gens *g = cr_calloc(1, sizeof *g);
    if (g == NULL)
        return NULL;
    if (pthread_rwlock_init(&g->lock, NULL) != 0) {
        cr_free(g);
        return NULL;
    }
    g->o = *o;
    g->rotating = o->retention_s > 0;
    g->window = g->rotating ? o->retention_s / (int64_t)o->generations : 0;
    if (!g->rotating)
        g->o.generations = 0;
    return g;
}

int gens_new(const bloom_params *p, const gens_opts *o, int64_t now, gens **out)
{
    if (gens_opts_check(o, NULL, 0) != 0)
        return -EINVAL;
    bloom_params gp;
    gens_gen_params(p, o, &gp);
    if (bloom_params_check(&gp, NULL, 0) != 0)
        return -EINVAL;
    gens *g = alloc_ring(o);
    if (g == NULL)
        return -ENOMEM;
    g->p = gp;
    int rc = bloom_new(&gp, &g->gen[0].bf);
    if (rc < 0) {
        gens_free(g);
        return rc;
    }
    g->gen[0].start = now;
    g->n = 1;
    *out = g;
    return 0;
}

gens *gens_wrap(bloom *bf)
{
    gens_opts o = { 0, 0 };
    gens *g = alloc_ring(&o);
    if (g == NULL)
        return NULL;
    bloom_get_params(bf, &g->p);
    g->gen[0].bf = bf;
    g->n = 1;
    return g;
}

int gens_adopt(bloom_ring *ring, const bloom_params *p, const gens_opts *o, gens **out,
               char *err, size_t errlen)
{
    bloom_params gp, have;
    gens_gen_params(p, o, &gp);
    int64_t retention = o->retention_s > 0 ? o->retention_s : 0;
    unsigned ngen = retention > 0 ? o->generations : 0;
    if (ring->retention_s != retention || ring->generations != ngen) {
        cr_errf(err, errlen, "it holds %u generations over %lld s, the configuration asks for %u"
                             " over %lld s", ring->generations, (long long)ring->retention_s,
                ngen, (long long)retention);
        return -EINVAL;
    }
    bloom_get_params(ring->gens[0], &have);
    if (have.expected_items != gp.expected_items || have.fp_rate != gp.fp_rate ||
        have.shards != gp.shards || have.max_stages != gp.max_stages ||
        have.growth != gp.growth || have.tightening != gp.tightening) {
        cr_errf(err, errlen, "its filter parameters differ from the configuration's");
        return -EINVAL;
    }
    gens *g = alloc_ring(o);
    if (g == NULL)
        return -ENOMEM;
    g->p = have;
    for (unsigned i = 0; i < ring->n; i++) {
        g->gen[i].bf = ring->gens[i];
        g->gen[i].start = ring->starts[i];
    }
    g->n = ring->n;
    *out = g;
    return 0;
}

void gens_free(gens *g)
{
    if (g == NULL)
        return;
    for (unsigned i = 0; i < g->n; i++)
        bloom_free(g->gen[i].bf);
    for (unsigned i = 0; i < g->nghost; i++)
        bloom_free(g->ghost[i]);
    pthread_rwlock_destroy(&g->lock);
    cr_free(g);
}

void gens_unwrap(gens *g)
{
    if (g == NULL)
        return;
    g->n = 0;
    gens_free(g);
}

int gens_was_dropped(gens *g, hash_fp fp)
{
    if (!g->rotating)
        return 0;
    rd_lock(g);
    int r = 0;
    for (unsigned i = 0; i < g->nghost && !r; i++)
        r = bloom_query_fp(g->ghost[i], fp);
    rd_unlock(g);
    return r;
}

int gens_query_fp(gens *g, hash_fp fp)
{
    int r = GENS_NO;
    rd_lock(g);
    if (bloom_query_fp(g->gen[g->n - 1].bf, fp)) {
        r = GENS_NEWEST;
    } else {
        for (unsigned i = g->n - 1; i-- > 0;)
            if (bloom_query_fp(g->gen[i].bf, fp)) {
                r = GENS_OLDER;
                break;
            }
    }
    rd_unlock(g);
    return r;
}

int gens_add_fp(gens *g, hash_fp fp, int64_t *stamp)
{
    rd_lock(g);
    int had = bloom_add_fp(g->gen[g->n - 1].bf, fp);
    if (stamp != NULL)
        *stamp = g->gen[g->n - 1].start;
    rd_unlock(g);
    return had;
}

int gens_add_at(gens *g, hash_fp fp, int64_t stamp)
{
    rd_lock(g);
    unsigned i = g->n - 1;
    while (i > 0 && g->gen[i].start > stamp)
        i--;
    bloom_add_fp(g->gen[i].bf, fp);
    rd_unlock(g);
    return 0;
}

int64_t gens_stamp(gens *g, int64_t now)
{
    if (!g->rotating)
        return now;
    rd_lock(g);
    int64_t s = g->gen[g->n - 1].start;
    rd_unlock(g);
    return s;
}

int gens_rotating(const gens *g) { return g->rotating; }

int64_t gens_window_s(const gens *g) { return g->window; }

int gens_push(gens *g, int64_t now)
{
    if (!g->rotating)
        return 0;
    rd_lock(g); /* the common case, no window ended: no write lock */
    int due = now >= g->gen[g->n - 1].start + g->window;
    rd_unlock(g);
    if (!due)
        return 0;
    /* built before the write lock, which every query waits for */
    bloom *bf = NULL;
    int rc = bloom_new(&g->p, &bf);
    if (rc < 0)
        return rc;
    pthread_rwlock_wrlock(&g->lock);
    int64_t last = g->gen[g->n - 1].start;
    if (now < last + g->window)
        goto out; /* rc 0: another caller pushed it */
    if (g->n == BLOOM_MAX_GENS) { /* gens_drop was not called: never lose keys for room */
        rc = -ENOSPC;
        goto out;
    }
    /* windows stay aligned to the first one; a long pause skips the empty ones */
    g->gen[g->n].start = last + (now - last) / g->window * g->window;
    g->gen[g->n].bf = bf;
    bf = NULL;
    g->n++;
    atomic_fetch_add(&g->rotations, 1);
    rc = 1;
out:
    pthread_rwlock_unlock(&g->lock);
    bloom_free(bf);
    return rc;
}

/* How many of the oldest generations have ended by now - retention.
 * A generation's window ends where the next one starts. Lock held. */
static unsigned expired(const gens *g, int64_t now)
{
    unsigned k = 0;
    while (k + 1 < g->n && g->gen[k + 1].start <= now - g->o.retention_s)
        k++;
    return k;
}

int64_t gens_cutoff(gens *g)
{
    if (!g->rotating)
        return INT64_MIN;
    rd_lock(g);
    int64_t c = g->gen[0].start;
    rd_unlock(g);
    return c;
}

int64_t gens_next_cutoff(gens *g, int64_t now)
{
    if (!g->rotating)
        return INT64_MIN;
    rd_lock(g);
    int64_t c = g->gen[expired(g, now)].start;
    rd_unlock(g);
    return c;
}

unsigned gens_drop(gens *g, int64_t now, int64_t *cutoff)
{
    if (!g->rotating) {
        if (cutoff != NULL)
            *cutoff = INT64_MIN;
        return 0;
    }
    pthread_rwlock_wrlock(&g->lock);
    unsigned k = expired(g, now);
    for (unsigned i = 0; i < k; i++) {
        bloom_stats st;
        bloom_stats_get(g->gen[i].bf, &st);
        atomic_fetch_add(&g->dropped_keys, st.count);
        if (g->nghost == g->o.generations) { /* the oldest ghost goes for good */
            bloom_free(g->ghost[0]);
            memmove(g->ghost, g->ghost + 1, (g->nghost - 1) * sizeof g->ghost[0]);
            g->nghost--;
        }
        g->ghost[g->nghost++] = g->gen[i].bf;
    }
    memmove(g->gen, g->gen + k, (g->n - k) * sizeof g->gen[0]);
    g->n -= k;
    atomic_fetch_add(&g->dropped, k);
    if (cutoff != NULL)
        *cutoff = g->gen[0].start;
    pthread_rwlock_unlock(&g->lock);
    return k;
}

void gens_stats_get(gens *g, gens_stats *out)
{
    memset(out, 0, sizeof *out);
    rd_lock(g);
    out->live = g->n;
    out->generations = g->o.generations;
    out->retention_s = g->rotating ? g->o.retention_s : 0;
    out->window_s = g->window;
    double pass = 1.0;
    for (unsigned i = 0; i < g->n; i++) {
        bloom_stats st;
        bloom_stats_get(g->gen[i].bf, &st);
        out->gen[i] = (gens_gen_info){ g->gen[i].start, st.count, st.memory_bytes, st.fill,
                                       st.fpr_model };
        out->keys += st.count;
        out->memory_bytes += st.memory_bytes;
        pass *= 1.0 - st.fpr_model;
    }
    for (unsigned i = 0; i < g->nghost; i++) {
        bloom_stats st;
        bloom_stats_get(g->ghost[i], &st);
        out->ghost_bytes += st.memory_bytes;
    }
    rd_unlock(g);
    out->fpr_model = 1.0 - pass;
    out->rotations = atomic_load(&g->rotations);
    out->dropped = atomic_load(&g->dropped);
    out->dropped_keys = atomic_load(&g->dropped_keys);
}

bloom *gens_newest(gens *g)
{
    rd_lock(g);
    bloom *bf = g->gen[g->n - 1].bf;
    rd_unlock(g);
    return bf;
}

void gens_with_newest(gens *g, void (*fn)(bloom *bf, void *arg), void *arg)
{
    rd_lock(g);
    fn(g->gen[g->n - 1].bf, arg);
    rd_unlock(g);
}

int gens_save(gens *g, const char *path, uint64_t high_water_mark, const uint8_t *owner,
              char *err, size_t errlen)
{
    bloom_ring ring;
    memset(&ring, 0, sizeof ring);
    rd_lock(g);
    ring.n = g->n;
    ring.generations = g->o.generations;
    ring.retention_s = g->rotating ? g->o.retention_s : 0;
    for (unsigned i = 0; i < g->n; i++) {
        ring.gens[i] = g->gen[i].bf;
        ring.starts[i] = g->rotating ? g->gen[i].start : 0;
    }
    int rc = bloom_save_ring(&ring, path, high_water_mark, owner, err, errlen);
    rd_unlock(g);
    return rc;
}
