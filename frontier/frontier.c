/* frontier/frontier: per-host queues, politeness, robots.txt, retries.
 *
 * Data, all guarded by f->lock:
 * - hosts: a hash table of struct fhost (never freed before frontier_free,
 *   so job.host pointers stay valid). A host holds its in-memory queue (a
 *   sorted deque by key = (depth, id)), its retry list (sorted by the time
 *   each may be retried), politeness times, robots rules and counters.
 * - three indexed binary heaps of hosts: TIME (hosts with work, keyed by the
 *   time they may next be asked), READY (hosts whose time has come, keyed by
 *   the key of their next URL, robots jobs first) and SIZE (hosts by queue
 *   length, largest first: where eviction takes from).
 * - known: a bitmap over row ids, one bit per id, set while the frontier
 *   owns the row: in a queue or retry list, in flight, or handed out (and
 *   left set after, since the row's new state may not be committed yet).
 *   It makes refills and pushes exact without waiting for the writer: a row
 *   whose bit is set is skipped by a refill and ignored by a push. It costs
 *   one bit per row id (1.25 MB per 10M rows), allocated in 8 KiB chunks.
 *
 * The invariant that keeps memory bounded and nothing lost. For every host,
 * each queued row of SQLite whose bit is clear has a key greater than the
 * host's cursor, or its frontier_push is still to come; and when `more` is
 * false there is none. A refill reads rows after the cursor in key order,
 * skips known ones, takes up to its share, and moves the cursor to the last
 * row it looked at; a scan that runs out clears `more`. A push that does not
 * fit, or an eviction, clears the rows' bits and moves the cursor back to
 * just before the smallest of them. So each host's next URL is exactly its
 * smallest queued key: the head of its queue, unless `more` is set and the
 * head lies after the cursor, in which case a refill comes first.
 * Memory holds at most max_in_memory entries: a push only enters when there
 * is room; a refill takes the host's fair share (max_in_memory / hosts with
 * work), evicting the tails of hosts over their share when needed. Retries
 * and returned jobs are pinned in memory (their SQLite state may still be
 * in_flight) and are never evicted.
 *
 * Locks. `lock` guards everything above. db writes (in_flight, outcomes,
 * exclusions) are appended under `lock` to a FIFO (opq) in the order they
 * are decided, and issued by ops_drain() without `lock`, holding `wlock`,
 * so they reach the writer in decision order whichever thread issues them
 * (a retry's "queued" always before its next attempt's "in_flight"). Order:
 * wlock before lock; nothing else is taken under lock but SQLite's reader.
 * See frontier.h for the caller's side. */
#include "frontier/frontier.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "frontier/fqueue.h"
#include "frontier/hostheap.h"
#include "frontier/idset.h"
#include "frontier/robots.h"

#define REFILL_MAX 1024   /* rows one refill brings in at most */
#define OPS_MAX 64        /* db writes queued before next() drains them */
#define CTYPE_TEXT 128
#define ERR_TEXT 160

/* Entries and per-host queues: fqueue.c; hosts and their heaps: hostheap.c;
 * the known-id bitmap: idset.c. */

/* ---- the frontier ------------------------------------------------------- */

/* A db write decided under the lock, issued after it (see ops_drain). */
typedef struct pending_op {
    int64_t id;
    int state;              /* DB_STATE_IN_FLIGHT / _QUEUED: db_set_state when
                               plain; else db_record_outcome */
    bool outcome;           /* write every outcome column */
    int http_status;
    int attempts;
    int64_t bytes, fetch_ms;
    char error[ERR_TEXT];
    char content_type[CTYPE_TEXT];
} pending_op;

struct frontier {
    frontier_opts o;
    char *agent;
    db *db;
    db_reader *rd;
    pthread_mutex_t lock;

    fhost **hb;              /* host hash buckets */
    size_t nhb;
    uint64_t host_seq;
    fheap heap[HEAP_COUNT];
    idbits known;

    int64_t mem, in_flight, robots_in_flight, hosts_active;
    bool paused;
    int64_t now;             /* the latest now_ms seen */
    pending_op *opq;         /* db writes in decision order (a ring) */
    size_t opq_head, opq_n, opq_cap;
    pthread_mutex_t wlock;   /* held while draining opq; taken before lock */
    frontier_stats st;       /* counters (the gauges are filled on read) */
    frontier_gate_fn gate;   /* NULL: every host may be asked */
    void *gate_arg;
    int64_t gate_retry_ms;
    struct hold *holds;      /* frontier_hold's, by key */
    size_t nholds;
    int64_t holds_end;       /* the last of them ends then */
};

/* A slot at the tail of the write FIFO (under f->lock), zeroed; NULL when
 * memory runs out (the write is lost: the row keeps its older state, which
 * the next run repairs; counted in db_errors). */
static pending_op *op_add(frontier *f, int64_t id, int state)
{
    pending_op *p;
    if (f->opq_n == f->opq_cap) {
        size_t cap = f->opq_cap ? f->opq_cap * 2 : 64;
        pending_op *v = cr_malloc(cap * sizeof(*v));
        if (v == NULL) {
            f->st.db_errors++;
            return NULL;
        }
        for (size_t i = 0; i < f->opq_n; i++)
            v[i] = f->opq[(f->opq_head + i) % f->opq_cap];
        cr_free(f->opq);
        f->opq = v;
        f->opq_cap = cap;
        f->opq_head = 0;
    }
    p = &f->opq[(f->opq_head + f->opq_n) % f->opq_cap];
    f->opq_n++;
    memset(p, 0, sizeof(*p));
    p->id = id;
    p->state = state;
    return p;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    if (src != NULL)
        snprintf(dst, cap, "%s", src);
}

/* Issues every queued write in FIFO order; call without f->lock. The FIFO
 * is filled under f->lock, so writes reach the db in the order the frontier
 * decided them (a retry's "queued" before the next attempt's "in_flight"),
 * whichever thread issues them; wlock lets one thread at a time drain. */
static void ops_drain(frontier *f)
{
    pending_op batch[16];
    int64_t errors = 0;

    pthread_mutex_lock(&f->wlock);
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&f->lock);
        f->st.db_errors += errors;
        errors = 0;
        while (n < 16 && f->opq_n > 0) {
            batch[n++] = f->opq[f->opq_head];
            f->opq_head = (f->opq_head + 1) % f->opq_cap;
            f->opq_n--;
        }
        pthread_mutex_unlock(&f->lock);
        if (n == 0)
            break;
        for (size_t i = 0; i < n; i++) {
            const pending_op *p = &batch[i];
            int rc;
            if (!p->outcome) {
                rc = db_set_state(f->db, p->id, p->state);
            } else {
                db_outcome o = { .state = p->state, .http_status = p->http_status,
                                 .bytes = p->bytes, .fetch_ms = p->fetch_ms,
                                 .attempts = p->attempts,
                                 .error = p->error[0] ? p->error : NULL,
                                 .content_type = p->content_type[0] ? p->content_type : NULL };
                rc = db_record_outcome(f->db, p->id, &o);
            }
            if (rc != 0)
                errors++;
        }
    }
    pthread_mutex_unlock(&f->wlock);
}

/* ---- heaps (hostheap.c) ------------------------------------------------ */

/* Room for n hosts in every heap, so that heap_push never fails. */
static int heaps_reserve(frontier *f, size_t n)
{
    for (int i = 0; i < HEAP_COUNT; i++)
        if (hostheap_reserve(&f->heap[i], n) < 0)
            return -ENOMEM;
    return 0;
}

/* A host is in a heap at most once and every heap has room for every host
 * (heaps_reserve at host creation), so this cannot fail. */
static void heap_push(frontier *f, int which, fhost *h) { hostheap_push(&f->heap[which], which, h); }
static void heap_remove(frontier *f, int which, fhost *h) { hostheap_remove(&f->heap[which], which, h); }
static void heap_fix(frontier *f, int which, fhost *h) { hostheap_fix(&f->heap[which], which, h); }
static fhost *heap_top(const frontier *f, int which) { return hostheap_top(&f->heap[which]); }

/* ---- host table --------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static fhost *host_find(const frontier *f, const char *name)
{
    if (f->nhb == 0)
        return NULL;
    for (fhost *h = f->hb[hash_str(name) & (f->nhb - 1)]; h != NULL; h = h->hnext) {
        if (strcmp(h->name, name) == 0)
            return h;
    }
    return NULL;
}

static int hosts_grow(frontier *f)
{
    size_t nb = f->nhb ? f->nhb * 2 : 64;
    fhost **b = cr_calloc(nb, sizeof(*b));
    if (b == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < f->nhb; i++) {
        fhost *h = f->hb[i], *next;
        for (; h != NULL; h = next) {
            next = h->hnext;
            size_t j = h->key & (nb - 1);
            h->hnext = b[j];
            b[j] = h;
        }
    }
    cr_free(f->hb);
    f->hb = b;
    f->nhb = nb;
    return 0;
}

/* A host key held until a time on now_ms's clock (frontier_hold). */
struct hold {
    uint64_t key;
    int64_t until;
};

static int cmp_hold(const void *a, const void *b)
{
    uint64_t x = ((const struct hold *)a)->key, y = ((const struct hold *)b)->key;
    return x < y ? -1 : x > y;
}

/* Once every hold has passed, they go. */
static void holds_expire(frontier *f)
{
    if (f->nholds > 0 && f->now > f->holds_end) {
        cr_free(f->holds);
        f->holds = NULL;
        f->nholds = 0;
    }
}

/* The time a host of this key may be asked first (frontier_hold), or 0. */
static int64_t hold_for(frontier *f, uint64_t key)
{
    holds_expire(f);
    if (f->nholds == 0)
        return 0;
    struct hold k = { .key = key };
    const struct hold *e = bsearch(&k, f->holds, f->nholds, sizeof k, cmp_hold);
    return e != NULL ? e->until : 0;
}

static fhost *host_get(frontier *f, const char *name)
{
    fhost *h = host_find(f, name);
    if (h != NULL)
        return h;
    if ((uint64_t)(f->st.hosts + 1) * 4 > (uint64_t)f->nhb * 3 && hosts_grow(f) != 0)
        return NULL;
    if (heaps_reserve(f, (size_t)f->st.hosts + 1) != 0)
        return NULL;
    h = cr_calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    h->name = cr_strdup(name);
    if (h->name == NULL) {
        cr_free(h);
        return NULL;
    }
    h->seq = f->host_seq++;
    h->last_ms = -1;
    h->crawl_delay = -1;
    h->key = hash_str(name);
    h->next_ok = hold_for(f, h->key);
    size_t j = h->key & (f->nhb - 1);
    h->hnext = f->hb[j];
    f->hb[j] = h;
    f->st.hosts++;
    return h;
}

static void entry_free(fentry *e) { cr_free(e->url); }

static void host_free(fhost *h)
{
    for (size_t i = 0; i < h->q.n; i++)
        entry_free(fqueue_at(&h->q, i));
    cr_free(h->q.v);
    for (size_t i = 0; i < h->nretry; i++)
        entry_free(&h->retry[i]);
    cr_free(h->retry);
    robots_free(h->rules);
    cr_free(h->robots_text);
    cr_free(h->origin);
    cr_free(h->name);
    cr_free(h);
}

/* Remembers "scheme://authority" of url for the host's robots.txt. */
static void host_set_origin(fhost *h, const char *url, size_t len)
{
    size_t i;
    if (h->origin != NULL)
        return;
    if (len >= 8 && memcmp(url, "https://", 8) == 0)
        i = 8;
    else if (len >= 7 && memcmp(url, "http://", 7) == 0)
        i = 7;
    else
        return;
    while (i < len && url[i] != '/' && url[i] != '?' && url[i] != '#')
        i++;
    h->origin = cr_strndup(url, i);
}

/* ---- scheduling --------------------------------------------------------- */

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* The spacing between two request starts now in force for h. */
static int64_t host_spacing(const frontier *f, const fhost *h)
{
    int64_t w = f->o.delay_ms;
    if (h->crawl_delay > w)
        w = h->crawl_delay;
    if (h->last_ms >= 0 && f->o.delay_factor > 0) {
        double a = f->o.delay_factor * (double)h->last_ms;
        int64_t adaptive = a >= (double)f->o.max_delay_ms ? f->o.max_delay_ms : (int64_t)a;
        w = max64(w, adaptive);
    }
    return w;
}

/* May h hand out URLs that are not retries? */
static bool host_new_allowed(const frontier *f, const fhost *h)
{
    return h->given_up || (!f->st.limit_reached && !h->capped);
}

static bool host_has_new(const frontier *f, const fhost *h)
{
    return (h->q.n > 0 || h->more) && host_new_allowed(f, h);
}

static bool robots_needed(const frontier *f, const fhost *h, int64_t now)
{
    if (!f->o.obey_robots || h->robots_fetching || h->given_up)
        return false;
    if (h->rules == NULL)
        return now >= h->robots_retry_at;
    return now >= h->robots_expires && now >= h->robots_retry_at;
}

/* READY key: robots jobs first, then the host's next URL. */
static void host_ready_key(const frontier *f, fhost *h)
{
    const fentry *best = NULL;
    if (f->o.obey_robots && h->rules == NULL && !h->given_up) {
        h->rdepth = -1;
        h->rid = 0;
        return;
    }
    if (host_has_new(f, h) && h->q.n > 0)
        best = fqueue_at(&h->q, 0);
    if (h->nretry > 0 && (best == NULL || fqueue_key_cmp(h->retry[0].depth, h->retry[0].id,
                                                  best->depth, best->id) < 0))
        best = &h->retry[0];
    if (best != NULL) {
        h->rdepth = best->depth;
        h->rid = best->id;
    } else { /* only SQLite rows: they come after the cursor */
        h->rdepth = h->cur_depth;
        h->rid = h->cur_id + 1;
    }
}

/* Puts h where its state says: in TIME (or READY if due by f->now), or in
 * no heap (no work, too many in flight, robots job out). Also keeps the
 * active count and the SIZE heap right. Call after any change to h. */
static void host_touch(frontier *f, fhost *h)
{
    bool has_new = host_has_new(f, h);
    bool active = h->q.n > 0 || h->nretry > 0 || has_new;
    int64_t t;

    if (active != h->active) {
        f->hosts_active += active ? 1 : -1;
        h->active = active;
    }
    if (h->q.n > 0) {
        if (h->pos[HEAP_SIZE] == 0)
            heap_push(f, HEAP_SIZE, h);
        else
            heap_fix(f, HEAP_SIZE, h);
    } else {
        heap_remove(f, HEAP_SIZE, h);
    }
    heap_remove(f, HEAP_TIME, h);
    heap_remove(f, HEAP_READY, h);
    if (!has_new && h->nretry == 0)
        return;
    if (h->given_up) {
        t = h->gated_until; /* its URLs are failed without a request: no waiting */
    } else {
        if (h->in_flight >= f->o.max_per_host)
            return;
        if (f->o.obey_robots && h->robots_fetching)
            return;
        t = max64(max64(h->next_ok, h->paused_until), h->gated_until);
        if (f->o.obey_robots && h->rules == NULL)
            t = max64(t, h->robots_retry_at);
        else if (!has_new)
            t = max64(t, h->retry[0].not_before);
        if (h->next_ok > f->now && h->next_ok >= h->paused_until && !h->waiting) {
            h->waiting = true; /* held back by its delay alone */
            h->waits++;
            f->st.politeness_waits++;
        }
    }
    h->sched_t = t;
    if (t <= f->now) {
        host_ready_key(f, h);
        heap_push(f, HEAP_READY, h);
    } else {
        heap_push(f, HEAP_TIME, h);
    }
}

/* Moves every host due by now from TIME to READY. */
static void migrate(frontier *f, int64_t now)
{
    fhost *h;
    while ((h = heap_top(f, HEAP_TIME)) != NULL && h->sched_t <= now) {
        heap_remove(f, HEAP_TIME, h);
        host_ready_key(f, h);
        heap_push(f, HEAP_READY, h);
    }
}

/* ---- memory: eviction and refill ---------------------------------------- */

static void cursor_before(fhost *h, int32_t depth, int64_t id)
{
    /* rows after (depth, id - 1) include (depth, id) */
    if (!h->more || fqueue_key_cmp(depth, id - 1, h->cur_depth, h->cur_id) < 0) {
        h->cur_depth = depth;
        h->cur_id = id - 1;
    }
    h->more = true;
}

/* Drops up to n entries from the tail of v's queue back to SQLite. */
static size_t evict_tail(frontier *f, fhost *v, size_t n)
{
    size_t k = 0;
    while (k < n && v->q.n > 0) {
        fentry e = fqueue_pop_back(&v->q);
        idset_clear(&f->known, e.id);
        cursor_before(v, e.depth, e.id);
        entry_free(&e);
        f->mem--;
        k++;
    }
    f->st.evictions += (int64_t)k;
    host_touch(f, v);
    return k;
}

/* Puts all of h's queue back to SQLite (its entries all lie after the
 * cursor, so the cursor stays). */
static void requeue_all(frontier *f, fhost *h)
{
    while (h->q.n > 0) {
        fentry e = fqueue_pop_back(&h->q);
        idset_clear(&f->known, e.id);
        cursor_before(h, e.depth, e.id);
        entry_free(&e);
        f->mem--;
    }
}

/* Makes room for up to want entries for host h and returns how many it may
 * take (at least 1: with nothing evictable, memory goes over by one). */
static size_t make_room(frontier *f, fhost *h, size_t want)
{
    int64_t share = f->o.max_in_memory / (f->hosts_active > 0 ? f->hosts_active : 1);
    if (share < 1)
        share = 1;
    while (f->mem + (int64_t)want > f->o.max_in_memory) {
        fhost *v = heap_top(f, HEAP_SIZE);
        int64_t over = v ? (int64_t)v->q.n - share : 0;
        if (v == NULL || over <= 0 || v == h)
            break;
        int64_t need = f->mem + (int64_t)want - f->o.max_in_memory;
        evict_tail(f, v, (size_t)(over < need ? over : need));
    }
    int64_t free_ = f->o.max_in_memory - f->mem;
    if (free_ >= (int64_t)want)
        return want;
    if (free_ >= 1)
        return (size_t)free_;
    /* full: take one from the largest queue (h's own tail included) */
    fhost *v = heap_top(f, HEAP_SIZE);
    if (v != NULL && !(v == h && v->q.n <= 1))
        evict_tail(f, v, 1);
    return 1;
}

typedef struct refill_ctx {
    frontier *f;
    fhost *h;
    size_t want, got;
    bool stopped, seen_any;
    int32_t last_depth;
    int64_t last_id;
} refill_ctx;

static int refill_row(void *ud, const db_row *row)
{
    refill_ctx *c = ud;
    frontier *f = c->f;
    fentry e;

    if (idset_get(&f->known, row->id)) {
        c->seen_any = true;
        c->last_depth = row->depth;
        c->last_id = row->id;
        return 0;
    }
    if (c->got >= c->want) {
        c->stopped = true;
        return 1;
    }
    memset(&e, 0, sizeof(e));
    e.id = row->id;
    e.depth = row->depth;
    e.kind = row->kind;
    e.attempts = row->attempts;
    e.url = cr_strndup(row->fetch_url, row->fetch_url_len); /* what is requested */
    if (e.url == NULL || idset_set(&f->known, row->id) != 0) {
        cr_free(e.url);
        c->stopped = true;
        return 1;
    }
    if (fqueue_insert(&c->h->q, &e) != 0) {
        idset_clear(&f->known, row->id);
        cr_free(e.url);
        c->stopped = true;
        return 1;
    }
    host_set_origin(c->h, row->fetch_url, row->fetch_url_len);
    f->mem++;
    if (f->mem > f->st.mem_peak)
        f->st.mem_peak = f->mem;
    c->got++;
    c->seen_any = true;
    c->last_depth = row->depth;
    c->last_id = row->id;
    return 0;
}

/* Reads h's next queued rows from SQLite after its cursor. 0 or < 0. */
static int refill(frontier *f, fhost *h)
{
    int64_t share = f->o.max_in_memory / (f->hosts_active > 0 ? f->hosts_active : 1);
    int64_t want = share - (int64_t)h->q.n;
    refill_ctx c;
    db_queued_query q;
    int64_t n;

    if (want > REFILL_MAX)
        want = REFILL_MAX;
    if (want < 1)
        want = 1;
    memset(&c, 0, sizeof(c));
    c.f = f;
    c.h = h;
    c.want = make_room(f, h, (size_t)want);
    memset(&q, 0, sizeof(q));
    q.host = h->name;
    q.after_depth = h->cur_depth;
    q.after_id = h->cur_id;
    n = db_reader_next_queued(f->rd, &q, refill_row, &c);
    f->st.refills++;
    f->st.refill_rows += (int64_t)c.got;
    if (c.seen_any) {
        h->cur_depth = c.last_depth;
        h->cur_id = c.last_id;
    }
    if (n >= 0 && !c.stopped)
        h->more = false;
    host_touch(f, h);
    if (n < 0)
        return (int)n;
    return c.stopped && c.got == 0 ? -ENOMEM : 0;
}

/* ---- frontier_new / free ------------------------------------------------ */

void frontier_opts_defaults(frontier_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->obey_robots = true;
    o->robots_agent = "crawld";
    o->robots_max_bytes = ROBOTS_DEFAULT_MAX_BYTES;
    o->robots_cache_s = 86400;
    o->delay_ms = 1000;
    o->delay_factor = 2.0;
    o->max_delay_ms = 30000;
    o->max_per_host = 1;
    o->max_retry_after_s = 3600;
    o->max_attempts = 3;
    o->backoff_ms = 5000;
    o->host_max_failures = 10;
    o->max_in_memory = 100000;
}

static void errf(char *err, size_t len, const char *what, const char *detail)
{
    if (err != NULL && len > 0)
        snprintf(err, len, "frontier: %s%s", what, detail ? detail : "");
}

static int scan_host(void *ud, const char *host, size_t host_len,
                     const int64_t counts[DB_STATE_COUNT])
{
    frontier *f = ud;
    char name[DB_HOST_MAX + 1];
    fhost *h;

    if (host_len > DB_HOST_MAX)
        return 0;
    memcpy(name, host, host_len);
    name[host_len] = '\0';
    h = host_get(f, name);
    if (h == NULL)
        return -ENOMEM;
    h->pages = counts[DB_STATE_DONE] + counts[DB_STATE_FAILED];
    f->st.pages += h->pages;
    if (f->o.max_pages_per_host > 0 && h->pages >= f->o.max_pages_per_host)
        h->capped = true;
    if (counts[DB_STATE_QUEUED] > 0)
        h->more = true; /* cursor (0, 0): from the start */
    return 0;
}

frontier *frontier_new(const frontier_opts *o, db *d, char *err, size_t errlen)
{
    frontier *f;
    char msg[256];
    int64_t n;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (o == NULL || d == NULL || o->max_per_host < 1 || o->max_attempts < 1 ||
        o->max_in_memory < 1 || o->delay_ms < 0 || o->max_delay_ms < 0 ||
        !(o->delay_factor >= 0) || o->backoff_ms < 0 || o->max_retry_after_s < 0 ||
        o->robots_cache_s < 0 || o->robots_max_bytes < 0 || o->host_max_failures < 0 ||
        o->max_pages < 0 || o->max_pages_per_host < 0) {
        errf(err, errlen, "invalid options", NULL);
        return NULL;
    }
    f = cr_calloc(1, sizeof(*f));
    if (f == NULL) {
        errf(err, errlen, "out of memory", NULL);
        return NULL;
    }
    if (pthread_mutex_init(&f->lock, NULL) != 0) {
        cr_free(f);
        errf(err, errlen, "out of memory", NULL);
        return NULL;
    }
    if (pthread_mutex_init(&f->wlock, NULL) != 0) {
        pthread_mutex_destroy(&f->lock);
        cr_free(f);
        errf(err, errlen, "out of memory", NULL);
        return NULL;
    }
    f->o = *o;
    f->o.robots_agent = NULL;
    f->db = d;
    if (o->robots_agent != NULL) {
        f->agent = cr_strdup(o->robots_agent);
        if (f->agent == NULL)
            goto oom;
        f->o.robots_agent = f->agent;
    }
    if (hosts_grow(f) != 0)
        goto oom;
    f->rd = db_reader_open(d, msg, sizeof(msg));
    if (f->rd == NULL) {
        errf(err, errlen, "", msg);
        goto fail;
    }
    n = db_reader_host_counts(f->rd, NULL, scan_host, f);
    if (n == -ENOMEM)
        goto oom;
    if (n < 0) {
        snprintf(msg, sizeof(msg), "error %lld", (long long)-n);
        errf(err, errlen, "reading the queued hosts from SQLite: ", msg);
        goto fail;
    }
    if (f->o.max_pages > 0 && f->st.pages >= f->o.max_pages)
        f->st.limit_reached = true;
    for (size_t i = 0; i < f->nhb; i++) {
        for (fhost *h = f->hb[i]; h != NULL; h = h->hnext)
            host_touch(f, h);
    }
    return f;
oom:
    errf(err, errlen, "out of memory", NULL);
fail:
    frontier_free(f);
    return NULL;
}

void frontier_free(frontier *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->nhb; i++) {
        fhost *h = f->hb[i], *next;
        for (; h != NULL; h = next) {
            next = h->hnext;
            host_free(h);
        }
    }
    cr_free(f->hb);
    cr_free(f->holds);
    for (int i = 0; i < HEAP_COUNT; i++)
        cr_free(f->heap[i].v);
    idset_release(&f->known);
    if (f->rd != NULL)
        db_reader_free(f->rd);
    cr_free(f->opq);
    pthread_mutex_destroy(&f->wlock);
    pthread_mutex_destroy(&f->lock);
    cr_free(f->agent);
    cr_free(f);
}

/* ---- push ------------------------------------------------------------- */

int frontier_push(frontier *f, int64_t id, const char *url, size_t url_len, const char *host,
                  int depth, int kind)
{
    fhost *h;
    fentry e;
    int rc = 0;

    if (f == NULL || id <= 0 || url == NULL || url_len == 0 || host == NULL || depth < 0 ||
        kind < 0 || kind >= DB_KIND_COUNT)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    f->st.pushes++;
    if (idset_get(&f->known, id)) {
        f->st.pushes_known++;
        goto out;
    }
    h = host_get(f, host);
    if (h == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    host_set_origin(h, url, url_len);
    if (!host_new_allowed(f, h)) {
        f->st.limit_skipped++;
        cursor_before(h, depth, id);
        host_touch(f, h);
        goto out;
    }
    memset(&e, 0, sizeof(e));
    e.id = id;
    e.depth = depth;
    e.kind = kind;
    if (f->mem < f->o.max_in_memory) {
        e.url = cr_strndup(url, url_len);
        if (e.url != NULL && idset_set(&f->known, id) == 0) {
            if (fqueue_insert(&h->q, &e) == 0) {
                f->mem++;
                if (f->mem > f->st.mem_peak)
                    f->st.mem_peak = f->mem;
                host_touch(f, h);
                rc = 1;
                goto out;
            }
            idset_clear(&f->known, id);
        }
        cr_free(e.url); /* out of memory: like a full budget */
    }
    f->st.pushes_dropped++;
    cursor_before(h, depth, id);
    host_touch(f, h);
out:
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int frontier_push_due(frontier *f, int64_t id, const char *url, size_t url_len,
                      const char *host, int depth, int kind)
{
    if (f == NULL || id <= 0)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    idset_clear(&f->known, id); /* handed out earlier in this run: done now */
    pthread_mutex_unlock(&f->lock);
    return frontier_push(f, id, url, url_len, host, depth, kind);
}

/* ---- next --------------------------------------------------------------- */

static void retry_remove_front(fhost *h, fentry *out)
{
    *out = h->retry[0];
    h->nretry--;
    memmove(h->retry, h->retry + 1, h->nretry * sizeof(*h->retry));
}

static int retry_insert(fhost *h, const fentry *e)
{
    size_t i;
    if (h->nretry == h->capretry) {
        size_t cap = h->capretry ? h->capretry * 2 : 4;
        fentry *v = cr_realloc(h->retry, cap * sizeof(*v));
        if (v == NULL)
            return -ENOMEM;
        h->retry = v;
        h->capretry = cap;
    }
    i = h->nretry;
    while (i > 0 && h->retry[i - 1].not_before > e->not_before)
        i--;
    memmove(h->retry + i + 1, h->retry + i, (h->nretry - i) * sizeof(*h->retry));
    h->retry[i] = *e;
    h->nretry++;
    return 0;
}

/* Chooses and removes h's next entry at now: *out, 1; none, 0; < 0 error.
 * *was_retry says whether it came from the retry list. */
static int host_take(frontier *f, fhost *h, int64_t now, fentry *out, bool *was_retry)
{
    bool new_ok = host_new_allowed(f, h);
    const fentry *head = NULL;
    int rc;

    if (new_ok && h->more &&
        (h->q.n == 0 || fqueue_key_cmp(fqueue_at(&h->q, 0)->depth, fqueue_at(&h->q, 0)->id, h->cur_depth,
                                h->cur_id) > 0)) {
        /* SQLite holds rows before the whole queue: give the queue back and
         * read a full batch in order (it comes back with them) */
        requeue_all(f, h);
        rc = refill(f, h);
        if (rc < 0)
            return rc;
    }
    if (new_ok && h->q.n > 0)
        head = fqueue_at(&h->q, 0);
    if (h->nretry > 0 && (h->retry[0].not_before <= now || h->given_up) &&
        (head == NULL ||
         fqueue_key_cmp(h->retry[0].depth, h->retry[0].id, head->depth, head->id) < 0)) {
        retry_remove_front(h, out);
        *was_retry = true;
        f->mem--;
        return 1;
    }
    if (head == NULL)
        return 0;
    *out = fqueue_pop_front(&h->q);
    *was_retry = false;
    f->mem--;
    return 1;
}

/* Path and query of a job's URL, its fetch form: what robots.txt rules
 * match (RFC 9309 matches the URL requested, not our key). */
static const char *url_path(const char *url, size_t *len)
{
    const char *p = strstr(url, "://");
    size_t n = strlen(url);
    if (p == NULL) {
        *len = n;
        return url;
    }
    p += 3;
    while (*p != '\0' && *p != '/' && *p != '?')
        p++;
    *len = n - (size_t)(p - url);
    return p;
}

/* Limits after a new page was counted for h. */
static void count_page(frontier *f, fhost *h)
{
    h->pages++;
    f->st.pages++;
    if (f->o.max_pages_per_host > 0 && h->pages >= f->o.max_pages_per_host && !h->capped) {
        h->capped = true;
        while (h->q.n > 0) { /* the rest waits in SQLite */
            fentry e = fqueue_pop_back(&h->q);
            idset_clear(&f->known, e.id);
            cursor_before(h, e.depth, e.id);
            entry_free(&e);
            f->mem--;
            f->st.limit_skipped++;
        }
    }
    if (f->o.max_pages > 0 && f->st.pages >= f->o.max_pages && !f->st.limit_reached) {
        f->st.limit_reached = true;
        /* hosts with only new URLs leave the heaps */
        for (size_t i = 0; i < f->nhb; i++) {
            for (fhost *x = f->hb[i]; x != NULL; x = x->hnext) {
                if (x != h && (x->pos[HEAP_TIME] || x->pos[HEAP_READY]))
                    host_touch(f, x);
            }
        }
    }
}

static void start_request(frontier *f, fhost *h, int64_t now, frontier_job *job)
{
    h->in_flight++;
    f->in_flight++;
    h->last_start = now;
    job->spacing_ms = host_spacing(f, h);
    job->host_key = h->key;
    h->next_ok = now + job->spacing_ms;
    h->waiting = false;
}

static int robots_job(frontier *f, fhost *h, int64_t now, frontier_job *job)
{
    static const char tail[] = "/robots.txt";
    size_t n = strlen(h->origin);
    char *url = cr_malloc(n + sizeof(tail));

    if (url == NULL)
        return -ENOMEM;
    memcpy(url, h->origin, n);
    memcpy(url + n, tail, sizeof(tail));
    job->id = 0;
    job->url = url;
    job->host = h->name;
    job->depth = 0;
    job->kind = DB_KIND_NAVIGATION;
    job->attempt = h->robots_fails + 1;
    job->is_robots = true;
    job->started_ms = now;
    h->robots_fetching = true;
    f->robots_in_flight++;
    f->st.robots_jobs++;
    start_request(f, h, now, job);
    host_touch(f, h);
    return FRONTIER_JOB;
}

/* Fails or excludes e (not handed out) into ops. 1 when it was disposed
 * of that way, 0 when it may be handed out. */
static int dispose(frontier *f, fhost *h, fentry *e)
{
    if (h->given_up) {
        pending_op *p = op_add(f, e->id, DB_STATE_FAILED);
        if (p != NULL) {
            p->outcome = true;
            p->attempts = e->attempts;
            snprintf(p->error, sizeof(p->error), "host gave up after %d failure pauses",
                     h->fail_pauses);
        }
        h->failed++;
        f->st.failed++;
        entry_free(e);
        return 1;
    }
    if (f->o.obey_robots && h->rules != NULL) {
        size_t plen;
        const char *path = url_path(e->url, &plen);
        robots_rule why;
        if (!robots_allowed(h->rules, path, plen, &why)) {
            pending_op *p = op_add(f, e->id, DB_STATE_EXCLUDED);
            char text[ERR_TEXT - 16];
            (void)robots_rule_describe(&why, text, sizeof(text));
            if (p != NULL) {
                p->outcome = true;
                p->attempts = e->attempts;
                snprintf(p->error, sizeof(p->error), "robots.txt: %s", text);
            }
            h->robots_no++;
            if (why.kind == ROBOTS_RULE_UNAVAILABLE)
                f->st.robots_unavailable++;
            else
                f->st.robots_disallowed++;
            entry_free(e);
            return 1;
        }
        h->robots_ok++;
        f->st.robots_allowed++;
    }
    return 0;
}

int frontier_next(frontier *f, int64_t now, frontier_job *job, int64_t *wake_ms)
{
    int rc = FRONTIER_WAIT;
    int64_t wake = -1;

    if (f == NULL || job == NULL)
        return -EINVAL;
    memset(job, 0, sizeof(*job));
    pthread_mutex_lock(&f->lock);
again:
    if (now < f->now)
        now = f->now; /* time never goes back, whichever thread asks */
    f->now = now;
    if (f->paused)
        goto out;
    migrate(f, now);
    for (;;) {
        fhost *h = heap_top(f, HEAP_READY);
        fentry e;
        bool was_retry = false;
        int got;

        if (f->opq_n >= OPS_MAX) { /* issue the writes, then go on */
            pthread_mutex_unlock(&f->lock);
            ops_drain(f);
            pthread_mutex_lock(&f->lock);
            goto again;
        }
        if (h == NULL) {
            const fhost *t = heap_top(f, HEAP_TIME);
            if (t != NULL)
                wake = t->sched_t;
            else if (f->in_flight == 0)
                rc = FRONTIER_DRAINED;
            break;
        }
        heap_remove(f, HEAP_READY, h);
        if (f->gate != NULL && !f->gate(f->gate_arg, h->name)) {
            h->gated_until = now + f->gate_retry_ms; /* asked again then */
            f->st.gated++;
            host_touch(f, h);
            continue;
        }
        if (f->o.obey_robots && !h->given_up &&
            (h->rules == NULL || robots_needed(f, h, now))) {
            if (h->origin == NULL && h->q.n == 0 && h->more) {
                got = refill(f, h); /* learn a URL of the host first */
                if (got < 0) {
                    rc = got;
                    break;
                }
            }
            if (h->origin != NULL) {
                rc = robots_job(f, h, now, job);
                if (rc < 0)
                    host_touch(f, h);
                break;
            }
            host_touch(f, h);
            continue;
        }
        got = host_take(f, h, now, &e, &was_retry);
        if (got <= 0) {
            host_touch(f, h);
            if (got < 0) {
                rc = got;
                break;
            }
            continue;
        }
        if (dispose(f, h, &e)) {
            host_touch(f, h);
            continue;
        }
        job->id = e.id;
        job->url = e.url;
        job->host = h->name;
        job->depth = e.depth;
        job->kind = e.kind;
        job->attempt = e.attempts + 1;
        job->is_robots = false;
        job->started_ms = now;
        h->jobs++;
        f->st.jobs++;
        start_request(f, h, now, job);
        if (!was_retry)
            count_page(f, h);
        (void)op_add(f, e.id, DB_STATE_IN_FLIGHT);
        host_touch(f, h);
        rc = FRONTIER_JOB;
        break;
    }
out:
    f->st.hosts_ready = (int64_t)f->heap[HEAP_READY].n;
    pthread_mutex_unlock(&f->lock);
    ops_drain(f);
    if (wake_ms != NULL)
        *wake_ms = rc == FRONTIER_WAIT ? wake : -1;
    return rc;
}

/* ---- outcomes ----------------------------------------------------------- */

static int64_t backoff(const frontier *f, int n)
{
    int64_t cap = f->o.max_retry_after_s * 1000;
    int64_t b = f->o.backoff_ms;
    for (int i = 1; i < n && b < cap; i++)
        b *= 2;
    if (cap > 0 && b > cap)
        b = cap;
    return b;
}

/* Milliseconds of a Retry-After pause, capped; the backoff when absent. */
static int64_t retry_after_ms(const frontier *f, const frontier_outcome *o, int attempt)
{
    int64_t cap = f->o.max_retry_after_s * 1000;
    if (o->retry_after_s >= 0) {
        if (o->retry_after_s > f->o.max_retry_after_s)
            return cap;
        return o->retry_after_s * 1000;
    }
    return backoff(f, attempt);
}

/* The spacing runs from the end of the response, as Heritrix measures it:
 * the next request to the host starts at least host_spacing() after this
 * one finished, so the server sees requests at least that far apart however
 * long this one took to arrive. With max_per_host > 1, starts are also
 * spaced (start_request). */
static void finish_request(frontier *f, fhost *h, const frontier_outcome *o, int64_t now)
{
    h->in_flight--;
    f->in_flight--;
    if (o->status > 0 && o->response_ms >= 0)
        h->last_ms = o->response_ms;
    h->next_ok = max64(h->last_start, now) + host_spacing(f, h);
}

static void describe_failure(const frontier_outcome *o, char *out, size_t len)
{
    if (o->error_text != NULL && o->error_text[0] != '\0')
        snprintf(out, len, "%s", o->error_text);
    else if (o->status > 0)
        snprintf(out, len, "HTTP %d", o->status);
    else
        snprintf(out, len, "%s", o->error == FRONTIER_ERR_NETWORK ? "network error" : "fetch error");
}

/* The figures a report shows per host (under the lock). */
static void note_outcome(fhost *h, const frontier_outcome *o)
{
    if (o->status > 0) {
        h->answers++;
        h->bytes += o->bytes > 0 ? o->bytes : 0;
    } else {
        h->no_answer++;
    }
    if (o->status >= 400)
        h->http_errors++;
    h->links += o->links > 0 ? o->links : 0;
    h->links_new += o->links_new > 0 ? o->links_new : 0;
}

int frontier_done(frontier *f, frontier_job *job, const frontier_outcome *o, int64_t now)
{
    pending_op op;
    fhost *h;
    bool retryable, host_error;
    int result;

    if (f == NULL || job == NULL || o == NULL || job->is_robots || job->url == NULL)
        return -EINVAL;
    memset(&op, 0, sizeof(op));
    pthread_mutex_lock(&f->lock);
    h = host_find(f, job->host);
    if (h == NULL || h->in_flight <= 0 || !idset_get(&f->known, job->id)) {
        pthread_mutex_unlock(&f->lock);
        return -EINVAL;
    }
    if (now < f->now)
        now = f->now;
    f->now = now;
    finish_request(f, h, o, now);
    note_outcome(h, o);
    host_error = o->status >= 500 || (o->status <= 0 && o->error == FRONTIER_ERR_NETWORK);
    retryable = host_error || o->status == 429;
    if (o->status == 429 || o->status == 503) {
        h->paused_until = max64(h->paused_until, now + retry_after_ms(f, o, job->attempt));
        f->st.retry_after_pauses++;
    }
    if (host_error) {
        h->fail_streak++;
        if (f->o.host_max_failures > 0 && h->fail_streak >= f->o.host_max_failures) {
            h->fail_streak = 0;
            h->fail_pauses++;
            if (h->fail_pauses > f->o.max_attempts) {
                if (!h->given_up)
                    f->st.hosts_given_up++;
                h->given_up = true;
            } else {
                h->paused_until = max64(h->paused_until, now + backoff(f, h->fail_pauses));
                f->st.failure_pauses++;
            }
        }
    } else if (o->status > 0) {
        h->fail_streak = 0; /* the host answers */
        h->fail_pauses = 0;
    }
    op.id = job->id;
    op.http_status = o->status > 0 ? o->status : 0;
    op.attempts = job->attempt;
    op.bytes = o->bytes;
    op.fetch_ms = o->response_ms >= 0 ? o->response_ms : 0;
    op.outcome = true;
    copy_text(op.content_type, sizeof(op.content_type), o->content_type);
    if (retryable && job->attempt < f->o.max_attempts && !h->given_up) {
        fentry e;
        memset(&e, 0, sizeof(e));
        e.id = job->id;
        e.url = job->url;
        e.depth = job->depth;
        e.kind = job->kind;
        e.attempts = job->attempt;
        e.not_before = now + ((o->status == 429 || o->status == 503)
                                  ? retry_after_ms(f, o, job->attempt)
                                  : backoff(f, job->attempt));
        if (f->mem >= f->o.max_in_memory)
            make_room(f, NULL, 1);
        if (retry_insert(h, &e) == 0) {
            job->url = NULL; /* now the entry's */
            f->mem++;
            if (f->mem > f->st.mem_peak)
                f->st.mem_peak = f->mem;
            op.state = DB_STATE_QUEUED;
            describe_failure(o, op.error, sizeof(op.error));
            h->retries++;
            f->st.retries++;
            result = FRONTIER_DONE_RETRY;
        } else { /* no memory to keep it: the row stays in_flight and the
                    next run retries it */
            op.id = 0;
            result = FRONTIER_DONE_RETRY;
        }
    } else if (retryable || o->status <= 0) {
        op.state = DB_STATE_FAILED;
        describe_failure(o, op.error, sizeof(op.error));
        if (retryable && !h->given_up)
            snprintf(op.error + strlen(op.error), sizeof(op.error) - strlen(op.error),
                     " (after %d attempts)", job->attempt);
        else if (h->given_up && retryable)
            snprintf(op.error + strlen(op.error), sizeof(op.error) - strlen(op.error),
                     " (host gave up)");
        h->failed++;
        f->st.failed++;
        result = FRONTIER_DONE_FAILED;
    } else {
        op.state = DB_STATE_DONE;
        f->st.done++;
        result = FRONTIER_DONE_OK;
    }
    if (op.id != 0) {
        pending_op *p = op_add(f, op.id, op.state);
        if (p != NULL)
            *p = op;
    }
    host_touch(f, h);
    pthread_mutex_unlock(&f->lock);
    ops_drain(f);
    cr_free(job->url);
    memset(job, 0, sizeof(*job));
    return result;
}

int frontier_robots_done(frontier *f, frontier_job *job, const frontier_outcome *o,
                         const char *body, size_t len, int64_t now)
{
    robots *r = NULL, *unused = NULL;
    char *text = NULL, *old_text = NULL;
    fhost *h;
    bool unreachable;
    int rc = 0;

    if (f == NULL || job == NULL || o == NULL || !job->is_robots || (body == NULL && len > 0))
        return -EINVAL;
    unreachable = o->status <= 0 || o->status >= 500 || o->status == 429;
    if (!unreachable) {
        r = robots_for_status(o->status, body, len, f->agent, (size_t)f->o.robots_max_bytes);
        if (r == NULL)
            rc = -ENOMEM; /* counts as a failed fetch */
        if (r != NULL && f->o.keep_robots_text) {
            size_t keep = len < (size_t)f->o.robots_max_bytes ? len : (size_t)f->o.robots_max_bytes;
            text = cr_malloc(keep + 1);
            if (text != NULL) {
                memcpy(text, body != NULL ? body : "", keep);
                text[keep] = '\0';
                len = keep;
            }
        }
    }
    pthread_mutex_lock(&f->lock);
    h = host_find(f, job->host);
    if (h == NULL || !h->robots_fetching) {
        pthread_mutex_unlock(&f->lock);
        robots_free(r);
        cr_free(text);
        return -EINVAL;
    }
    if (now < f->now)
        now = f->now;
    f->now = now;
    h->robots_fetching = false;
    f->robots_in_flight--;
    note_outcome(h, o);
    if (o->status == 429 || o->status == 503) {
        h->paused_until = max64(h->paused_until, now + retry_after_ms(f, o, h->robots_fails + 1));
        f->st.retry_after_pauses++;
    }
    if (r != NULL) {
        unused = h->rules;
        h->rules = r;
        old_text = h->robots_text;
        h->robots_text = text; /* NULL (not kept, or no memory): not passed on */
        h->robots_len = text != NULL ? len : 0;
        h->robots_status = text != NULL ? o->status : 0;
        text = NULL;
        h->crawl_delay = robots_crawl_delay_ms(r);
        h->robots_expires = now + f->o.robots_cache_s * 1000;
        h->robots_fails = 0;
        h->robots_retry_at = 0;
    } else {
        h->robots_fails++;
        f->st.robots_fetch_failures++;
        if (h->robots_fails >= f->o.max_attempts) {
            /* RFC 9309 §2.3.1.4: unreachable means disallow all; a host
             * with earlier rules keeps them (§2.4) */
            if (h->rules == NULL) {
                h->rules = robots_disallow_all();
                h->robots_status = h->rules != NULL && f->o.keep_robots_text ? -1 : 0;
            }
            if (h->rules != NULL) {
                h->robots_expires = now + f->o.robots_cache_s * 1000;
                h->robots_fails = 0;
                h->robots_retry_at = 0;
            } else {
                rc = -ENOMEM;
                h->robots_retry_at = now + backoff(f, 1);
            }
        } else {
            h->robots_retry_at = now + ((o->status == 429 || o->status == 503)
                                            ? retry_after_ms(f, o, h->robots_fails)
                                            : backoff(f, h->robots_fails));
        }
    }
    finish_request(f, h, o, now);
    host_touch(f, h);
    pthread_mutex_unlock(&f->lock);
    robots_free(unused);
    cr_free(old_text);
    cr_free(text);
    cr_free(job->url);
    memset(job, 0, sizeof(*job));
    return rc;
}

int frontier_return(frontier *f, frontier_job *job)
{
    fhost *h;
    int rc = 0;

    if (f == NULL || job == NULL || job->url == NULL)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    h = host_find(f, job->host);
    if (h == NULL || h->in_flight <= 0 || (job->is_robots && !h->robots_fetching) ||
        (!job->is_robots && !idset_get(&f->known, job->id))) {
        pthread_mutex_unlock(&f->lock);
        return -EINVAL;
    }
    h->in_flight--;
    f->in_flight--;
    if (job->is_robots) {
        h->robots_fetching = false;
        f->robots_in_flight--;
    } else {
        fentry e;
        memset(&e, 0, sizeof(e));
        e.id = job->id;
        e.url = job->url;
        e.depth = job->depth;
        e.kind = job->kind;
        e.attempts = job->attempt - 1;
        e.not_before = 0; /* at once, but pinned like a retry */
        if (f->mem >= f->o.max_in_memory)
            make_room(f, NULL, 1);
        if (retry_insert(h, &e) == 0) {
            job->url = NULL;
            f->mem++;
            if (f->mem > f->st.mem_peak)
                f->st.mem_peak = f->mem;
            (void)op_add(f, job->id, DB_STATE_QUEUED);
        } else {
            rc = -ENOMEM; /* stays in_flight in SQLite: the next run has it */
        }
    }
    host_touch(f, h);
    pthread_mutex_unlock(&f->lock);
    ops_drain(f);
    cr_free(job->url);
    memset(job, 0, sizeof(*job));
    return rc;
}

/* ---- pause, stats ------------------------------------------------------- */

void frontier_job_release(frontier_job *job)
{
    if (job == NULL)
        return;
    cr_free(job->url);
    memset(job, 0, sizeof(*job));
}

void frontier_pause(frontier *f)
{
    pthread_mutex_lock(&f->lock);
    f->paused = true;
    pthread_mutex_unlock(&f->lock);
}

void frontier_set_gate(frontier *f, frontier_gate_fn gate, void *arg, int64_t retry_ms)
{
    pthread_mutex_lock(&f->lock);
    f->gate = gate;
    f->gate_arg = arg;
    f->gate_retry_ms = retry_ms > 0 ? retry_ms : 1;
    pthread_mutex_unlock(&f->lock);
}

int frontier_forget_host(frontier *f, const char *host)
{
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    fhost *h = host_find(f, host);
    if (h != NULL && (h->in_flight > 0 || h->robots_fetching)) {
        rc = -EBUSY;
    } else if (h != NULL) {
        while (h->q.n > 0) {
            fentry e = fqueue_pop_back(&h->q);
            idset_clear(&f->known, e.id);
            entry_free(&e);
            f->mem--;
            rc++;
        }
        for (size_t i = 0; i < h->nretry; i++) {
            idset_clear(&f->known, h->retry[i].id);
            entry_free(&h->retry[i]);
            f->mem--;
            rc++;
        }
        h->nretry = 0;
        h->more = false;
        host_touch(f, h);
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

int frontier_wake_host(frontier *f, const char *host)
{
    int rc = 0;
    pthread_mutex_lock(&f->lock);
    fhost *h = host_get(f, host);
    if (h == NULL) {
        rc = -ENOMEM;
    } else {
        cursor_before(h, 0, 1); /* from the start: rows known already are skipped */
        host_touch(f, h);
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

void frontier_forget_id(frontier *f, int64_t id)
{
    pthread_mutex_lock(&f->lock);
    idset_clear(&f->known, id);
    pthread_mutex_unlock(&f->lock);
}

int frontier_host_state_get(frontier *f, const char *host, int64_t now,
                            frontier_host_state *out)
{
    int rc = 0;
    memset(out, 0, sizeof *out);
    out->last_ms = -1;
    pthread_mutex_lock(&f->lock);
    fhost *h = host_find(f, host);
    if (h == NULL) {
        rc = -ENOENT;
    } else {
        out->wait_ms = max64(h->next_ok - now, 0);
        out->paused_ms = max64(h->paused_until - now, 0);
        out->last_ms = h->last_ms;
        out->pages = h->pages;
        if (h->rules != NULL && h->robots_status != 0 && h->robots_expires > now) {
            out->robots_fresh_ms = h->robots_expires - now;
            out->robots_status = h->robots_status;
            if (h->robots_text != NULL) {
                out->robots_text = cr_malloc(h->robots_len + 1);
                if (out->robots_text == NULL) {
                    rc = -ENOMEM;
                } else {
                    memcpy(out->robots_text, h->robots_text, h->robots_len + 1);
                    out->robots_len = h->robots_len;
                }
            }
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (rc < 0)
        frontier_host_state_free(out);
    return rc;
}

int frontier_host_state_set(frontier *f, const char *host, const frontier_host_state *st,
                            int64_t now)
{
    robots *r = NULL, *unused = NULL;
    char *text = NULL, *old_text = NULL;
    int rc = 0;
    if (f == NULL || host == NULL || st == NULL || st->wait_ms < 0 || st->paused_ms < 0 ||
        (st->robots_text == NULL && st->robots_len > 0))
        return -EINVAL;
    bool rules = f->o.obey_robots && st->robots_status != 0 && st->robots_fresh_ms > 0;
    if (rules) { /* parsed outside the lock, as a fetched one */
        r = st->robots_status < 0
                ? robots_disallow_all()
                : robots_for_status(st->robots_status, st->robots_text, st->robots_len,
                                    f->agent, (size_t)f->o.robots_max_bytes);
        if (r != NULL && st->robots_status > 0 && f->o.keep_robots_text) {
            text = cr_malloc(st->robots_len + 1);
            if (text != NULL) {
                memcpy(text, st->robots_text != NULL ? st->robots_text : "", st->robots_len);
                text[st->robots_len] = '\0';
            }
        }
        if (r == NULL || (text == NULL && st->robots_status > 0 && f->o.keep_robots_text)) {
            robots_free(r);
            cr_free(text);
            return -ENOMEM;
        }
    }
    pthread_mutex_lock(&f->lock);
    fhost *h = host_get(f, host);
    if (h == NULL) {
        rc = -ENOMEM;
    } else {
        if (now < f->now)
            now = f->now;
        h->next_ok = max64(h->next_ok, now + st->wait_ms);
        h->paused_until = max64(h->paused_until, now + (st->paused_ms > 0 ? st->paused_ms : 0));
        if (h->last_ms < 0)
            h->last_ms = st->last_ms;
        if (st->pages > h->pages) {
            f->st.pages += st->pages - h->pages;
            h->pages = st->pages;
            if (f->o.max_pages_per_host > 0 && h->pages >= f->o.max_pages_per_host)
                h->capped = true;
        }
        /* rules fresher than what this node has, unless it is fetching its own */
        if (r != NULL && !h->robots_fetching &&
            (h->rules == NULL || h->robots_expires < now + st->robots_fresh_ms)) {
            unused = h->rules;
            old_text = h->robots_text;
            h->rules = r;
            h->robots_text = text;
            h->robots_len = text != NULL ? st->robots_len : 0;
            h->robots_status = st->robots_status < 0 || text != NULL ? st->robots_status : 0;
            h->crawl_delay = robots_crawl_delay_ms(r);
            h->robots_expires = now + st->robots_fresh_ms;
            h->robots_fails = 0;
            h->robots_retry_at = 0;
            r = NULL;
            text = NULL;
        }
        host_touch(f, h);
    }
    pthread_mutex_unlock(&f->lock);
    robots_free(r);
    robots_free(unused);
    cr_free(text);
    cr_free(old_text);
    return rc;
}

int64_t frontier_host_pause_ms(frontier *f, const char *host, int64_t now)
{
    int64_t ms = 0;
    pthread_mutex_lock(&f->lock);
    const fhost *h = host_find(f, host);
    if (h != NULL)
        ms = max64(max64(h->paused_until, h->robots_retry_at) - now, 0);
    pthread_mutex_unlock(&f->lock);
    return ms;
}

uint64_t frontier_host_key(const char *host)
{
    return hash_str(host);
}

int frontier_hold(frontier *f, const frontier_hold_entry *v, size_t n, int64_t now)
{
    pthread_mutex_lock(&f->lock);
    if (now < f->now)
        now = f->now;
    holds_expire(f);
    struct hold *c = n + f->nholds > 0 ? cr_malloc((n + f->nholds) * sizeof *c) : NULL;
    if (n + f->nholds > 0 && c == NULL) {
        pthread_mutex_unlock(&f->lock);
        return -ENOMEM;
    }
    size_t k = f->nholds;
    if (k > 0)
        memcpy(c, f->holds, k * sizeof *c);
    int64_t end = f->nholds > 0 ? f->holds_end : 0;
    for (size_t i = 0; i < n; i++) { /* spans from now, made times */
        if (v[i].wait_ms <= 0)
            continue;
        c[k] = (struct hold){ v[i].host_key, now + v[i].wait_ms };
        if (c[k].until > end)
            end = c[k].until;
        k++;
    }
    if (k > 1)
        qsort(c, k, sizeof *c, cmp_hold);
    size_t m = 0; /* one per key: the longest */
    for (size_t i = 0; i < k; i++) {
        if (m > 0 && c[m - 1].key == c[i].key) {
            if (c[i].until > c[m - 1].until)
                c[m - 1].until = c[i].until;
        } else {
            c[m++] = c[i];
        }
    }
    cr_free(f->holds);
    f->holds = m > 0 ? c : NULL;
    f->nholds = m;
    f->holds_end = end;
    if (m == 0)
        cr_free(c);
    for (size_t i = 0; i < f->nhb && m > 0; i++) { /* the hosts known already */
        for (fhost *h = f->hb[i]; h != NULL; h = h->hnext) {
            int64_t until = hold_for(f, h->key);
            if (until > h->next_ok) {
                h->next_ok = until;
                host_touch(f, h);
            }
        }
    }
    pthread_mutex_unlock(&f->lock);
    return 0;
}

void frontier_host_state_free(frontier_host_state *st)
{
    if (st == NULL)
        return;
    cr_free(st->robots_text);
    st->robots_text = NULL;
    st->robots_len = 0;
}

void frontier_resume(frontier *f)
{
    pthread_mutex_lock(&f->lock);
    f->paused = false;
    pthread_mutex_unlock(&f->lock);
}

void frontier_get_stats(frontier *f, frontier_stats *st)
{
    pthread_mutex_lock(&f->lock);
    *st = f->st;
    st->mem_entries = f->mem;
    st->max_in_memory = f->o.max_in_memory;
    st->hosts_active = f->hosts_active;
    st->hosts_waiting = (int64_t)f->heap[HEAP_TIME].n;
    st->in_flight = f->in_flight;
    st->robots_in_flight = f->robots_in_flight;
    st->paused = f->paused;
    pthread_mutex_unlock(&f->lock);
}

static void host_stats(const frontier *f, const fhost *h, frontier_host_stats *o)
{
    memset(o, 0, sizeof(*o));
    o->host = h->name;
    o->queued_mem = (int64_t)(h->q.n + h->nretry);
    o->retries_waiting = (int64_t)h->nretry;
    o->more_in_db = h->more;
    o->in_flight = h->in_flight;
    o->pages = h->pages;
    o->jobs = h->jobs;
    o->next_ok_ms = h->next_ok;
    o->paused_until_ms = h->paused_until;
    o->last_response_ms = h->last_ms;
    o->delay_ms = host_spacing(f, h);
    o->crawl_delay_ms = h->crawl_delay;
    if (h->robots_fetching)
        o->robots_state = FRONTIER_ROBOTS_FETCHING;
    else if (h->rules != NULL)
        o->robots_state = FRONTIER_ROBOTS_RULES;
    else if (h->robots_fails > 0)
        o->robots_state = FRONTIER_ROBOTS_RETRYING;
    else
        o->robots_state = FRONTIER_ROBOTS_NONE;
    o->robots_allowed = h->robots_ok;
    o->robots_disallowed = h->robots_no;
    o->politeness_waits = h->waits;
    o->retries = h->retries;
    o->failed = h->failed;
    o->fail_streak = h->fail_streak;
    o->given_up = h->given_up;
    o->capped = h->capped;
    o->answers = h->answers;
    o->no_answer = h->no_answer;
    o->http_errors = h->http_errors;
    o->bytes = h->bytes;
    o->links = h->links;
    o->links_new = h->links_new;
}


int frontier_host_stats_get(frontier *f, const char *host, frontier_host_stats *out)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&f->lock);
    const fhost *h = host ? host_find(f, host) : NULL;
    if (h != NULL) {
        host_stats(f, h, out);
        rc = 0;
    }
    pthread_mutex_unlock(&f->lock);
    return rc;
}

size_t frontier_foreach_host(frontier *f, int (*cb)(void *ud, const frontier_host_stats *hs),
                             void *ud)
{
    size_t n = 0;
    frontier_host_stats hs;
    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < f->nhb; i++) {
        for (const fhost *h = f->hb[i]; h != NULL; h = h->hnext) {
            host_stats(f, h, &hs);
            n++;
            if (cb(ud, &hs) != 0)
                goto out;
        }
    }
out:
    pthread_mutex_unlock(&f->lock);
    return n;
}
