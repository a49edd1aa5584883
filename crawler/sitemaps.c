/* crawler/sitemaps: sitemaps in the crawl (see sitemaps.h).
 *
 * Two small string tables under one mutex: grants (a cross-submitted
 * sitemap's URL -> the origin whose robots.txt named it) and per-host
 * sitemap counts (origin -> sitemaps admitted). Both are chained hash
 * tables with a fixed bucket array; grants are capped at
 * SITEMAPS_GRANTS_MAX, host counts grow with the hosts that have sitemaps
 * (one entry per in-scope host at most). The mutex is taken only around
 * a table lookup or update, never while admit runs. */
#include "crawler/sitemaps.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/sitemap.h"
#include "frontier/robots.h"
#include "storage/db.h"

#define BUCKETS 4096

typedef struct entry {
    struct entry *next;
    char *value;            /* grants: the granting origin; NULL for counts */
    int64_t count;          /* host counts */
    char key[];
} entry;

typedef struct table {
    entry *b[BUCKETS];
    size_t n;
} table;

/* The counters, one atomic per sitemaps_stats field, in the same order. */
#define NSTATS (sizeof(sitemaps_stats) / sizeof(uint64_t))

struct sitemaps {
    sitemaps_opts o;
    sitemaps_admit_fn admit;
    void *ud;
    pthread_mutex_t mu;
    table grants, hosts;
    atomic_uint_fast64_t c[NSTATS];
};

struct sitemaps_fetch {
    sitemaps *sm;
    url_canon *uc;
    sitemap_parser *p;
    char *url;
    size_t url_len;
    char *grant;            /* origin this sitemap may also list (cross-submit) */
    int depth;
    cr_buf out, key;
};

_Static_assert(sizeof(sitemaps_stats) % sizeof(uint64_t) == 0, "sitemaps_stats: only uint64_t");
#define IDX(field) (offsetof(sitemaps_stats, field) / sizeof(uint64_t))
#define ADD(sm, field, n) \
    atomic_fetch_add_explicit(&(sm)->c[IDX(field)], (uint_fast64_t)(n), memory_order_relaxed)

static uint64_t hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static entry *find(table *t, const char *key)
{
    for (entry *e = t->b[hash_str(key) % BUCKETS]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static entry *add(table *t, const char *key)
{
    size_t n = strlen(key);
    entry *e = cr_calloc(1, sizeof *e + n + 1);
    if (e == NULL)
        return NULL;
    memcpy(e->key, key, n + 1);
    entry **b = &t->b[hash_str(key) % BUCKETS];
    e->next = *b;
    *b = e;
    t->n++;
    return e;
}

static void table_release(table *t)
{
    for (size_t i = 0; i < BUCKETS; i++)
        while (t->b[i]) {
            entry *e = t->b[i];
            t->b[i] = e->next;
            cr_free(e->value);
            cr_free(e);
        }
}

/* End of "scheme://authority" in u, or 0. */
static size_t origin_len(const char *u, size_t n)
{
    const char *p = memchr(u, ':', n);
    if (p == NULL || (size_t)(p - u) + 3 > n || p[1] != '/' || p[2] != '/')
        return 0;
    size_t i = (size_t)(p - u) + 3;
    while (i < n && u[i] != '/' && u[i] != '?' && u[i] != '#')
        i++;
    return i;
}

static bool is_http_url(const char *s, size_t n)
{
    return (n > 7 && strncasecmp(s, "http://", 7) == 0) ||
           (n > 8 && strncasecmp(s, "https://", 8) == 0);
}

/* url lies on origin (any path). */
static bool on_origin(const char *origin, const char *url, size_t ulen)
{
    size_t n = strlen(origin);
    return ulen >= n && memcmp(url, origin, n) == 0 &&
           (ulen == n || url[n] == '/' || url[n] == '?');
}

sitemaps *sitemaps_new(const sitemaps_opts *o, sitemaps_admit_fn admit, void *ud)
{
    sitemaps *sm = cr_calloc(1, sizeof *sm);
    if (sm == NULL)
        return NULL;
    sm->o = *o;
    sm->admit = admit;
    sm->ud = ud;
    pthread_mutex_init(&sm->mu, NULL);
    for (size_t i = 0; i < NSTATS; i++)
        atomic_init(&sm->c[i], 0);
    return sm;
}

void sitemaps_free(sitemaps *sm)
{
    if (sm == NULL)
        return;
    table_release(&sm->grants);
    table_release(&sm->hosts);
    pthread_mutex_destroy(&sm->mu);
    cr_free(sm);
}

void sitemaps_stats_get(sitemaps *sm, sitemaps_stats *st)
{
    uint64_t *v = (uint64_t *)st;
    for (size_t i = 0; i < NSTATS; i++)
        v[i] = atomic_load_explicit(&sm->c[i], memory_order_relaxed);
}

/* Remembers that url may list URLs of origin. */
static void grant(sitemaps *sm, const char *url, const char *origin)
{
    bool dropped = false, added = false;
    pthread_mutex_lock(&sm->mu);
    entry *e = find(&sm->grants, url);
    if (e == NULL) {
        if (sm->grants.n >= SITEMAPS_GRANTS_MAX || (e = add(&sm->grants, url)) == NULL)
            dropped = true;
        else
            added = true;
    }
    if (e && (e->value == NULL || strcmp(e->value, origin) != 0)) {
        char *v = cr_strdup(origin);
        if (v) {
            cr_free(e->value);
            e->value = v;
        }
    }
    pthread_mutex_unlock(&sm->mu);
    if (dropped)
        ADD(sm, grants_dropped, 1);
    if (added)
        ADD(sm, grants, 1);
}

/* The origin url was granted, as a copy (caller frees), or NULL. */
static char *granted(sitemaps *sm, const char *url)
{
    pthread_mutex_lock(&sm->mu);
    entry *e = find(&sm->grants, url);
    char *v = e && e->value ? cr_strdup(e->value) : NULL;
    pthread_mutex_unlock(&sm->mu);
    return v;
}

/* Reserves one of the sitemap's host's max_per_host places (delta +1), or
 * gives one back (delta -1). A reservation is false when the host is full. */
static bool host_count(sitemaps *sm, const char *url, size_t len, int delta)
{
    char origin[DB_HOST_MAX + 64];
    size_t n = origin_len(url, len);
    if (n == 0 || n >= sizeof origin)
        return false;
    memcpy(origin, url, n);
    origin[n] = '\0';
    bool ok = true;
    pthread_mutex_lock(&sm->mu);
    entry *e = find(&sm->hosts, origin);
    if (delta > 0) {
        if (e == NULL)
            e = add(&sm->hosts, origin);
        if (e == NULL || e->count >= sm->o.max_per_host)
            ok = false;
        else
            e->count++;
    } else if (e && e->count > 0) {
        e->count--;
    }
    pthread_mutex_unlock(&sm->mu);
    return ok;
}

/* A sitemap URL (canonical forms) at depth: admitted as a sitemap row
 * when its host has room (reserved first, so threads admitting at once
 * never pass max_per_host; given back unless the row is new).
 * grant_origin: the cross-submit grant it carries (NULL: none). */
static void admit_sitemap(sitemaps *sm, const char *fetch, size_t flen, const char *key,
                          size_t klen, int depth, const char *grant_origin)
{
    if (!host_count(sm, fetch, flen, +1)) {
        ADD(sm, dropped_host, 1);
        return;
    }
    if (grant_origin)
        grant(sm, fetch, grant_origin);
    int r = sm->admit(sm->ud, fetch, flen, key, klen, depth, DB_KIND_SITEMAP, -1);
    if (r == SITEMAPS_NEW)
        ADD(sm, queued, 1);
    else
        host_count(sm, fetch, flen, -1);
    if (r < 0)
        ADD(sm, storage_errors, 1);
}

void sitemaps_robots(sitemaps *sm, url_canon *uc, const char *robots_url, int status,
                     const char *body, size_t len)
{
    size_t rlen = strlen(robots_url);
    size_t on = origin_len(robots_url, rlen);
    if (on == 0 || on + 2 > DB_HOST_MAX + 64)
        return;
    char origin[DB_HOST_MAX + 64];
    memcpy(origin, robots_url, on);
    origin[on] = '/';
    origin[on + 1] = '\0';
    if (!scope_in_scope(sm->o.sc, origin, on + 1))
        return; /* a requisite's host: its sitemaps are not ours to read */
    origin[on] = '\0';
    cr_buf out, key;
    cr_buf_init(&out, 0);
    cr_buf_init(&key, 0);
    url_reject why;
    if (sm->o.well_known &&
        url_canon_forms(uc, robots_url, rlen, "/sitemap.xml", 12, &out, &key, &why) == 0)
        admit_sitemap(sm, out.data, out.len, key.data, key.len, 0, NULL);
    robots *r = status >= 200 && status < 300 && body != NULL
                    ? robots_parse(body, len, NULL, sm->o.robots_max_bytes)
                    : NULL;
    for (size_t i = 0; r && i < robots_sitemap_count(r); i++) {
        const char *s = robots_sitemap(r, i);
        size_t sl = strlen(s);
        if (!is_http_url(s, sl) ||
            url_canon_forms(uc, robots_url, rlen, s, sl, &out, &key, &why) < 0) {
            ADD(sm, invalid, 1);
            continue;
        }
        /* on another origin: robots.txt vouches for it (cross-submit) */
        bool foreign = !on_origin(origin, out.data, out.len);
        admit_sitemap(sm, out.data, out.len, key.data, key.len, 0, foreign ? origin : NULL);
    }
    robots_free(r);
    cr_buf_release(&out);
    cr_buf_release(&key);
}

static void on_entry(void *ud, const sitemap_entry *e)
{
    sitemaps_fetch *f = ud;
    sitemaps *sm = f->sm;
    bool child = e->kind == SITEMAP_INDEX;
    if (child)
        ADD(sm, children_listed, 1);
    else
        ADD(sm, urls_listed, 1);
    url_reject why;
    if (!is_http_url(e->loc, e->loc_len) ||
        url_canon_forms(f->uc, NULL, 0, e->loc, e->loc_len, &f->out, &f->key, &why) < 0) {
        ADD(sm, invalid, 1);
        return;
    }
    if (!sitemap_loc_in_scope(f->url, f->url_len, f->out.data, f->out.len) &&
        !(f->grant && on_origin(f->grant, f->out.data, f->out.len))) {
        ADD(sm, rejected_scope, 1);
        return;
    }
    if (child) {
        if (f->depth + 1 > sm->o.max_index_depth) {
            ADD(sm, dropped_depth, 1);
            return;
        }
        admit_sitemap(sm, f->out.data, f->out.len, f->key.data, f->key.len, f->depth + 1,
                      f->grant);
        return;
    }
    int r = sm->admit(sm->ud, f->out.data, f->out.len, f->key.data, f->key.len, 0, DB_KIND_SEED,
                      e->has_lastmod ? e->lastmod_ms : -1);
    if (r == SITEMAPS_NEW)
        ADD(sm, urls_new, 1);
    else if (r == SITEMAPS_KNOWN)
        ADD(sm, urls_known, 1);
    else if (r == SITEMAPS_OUT_OF_SCOPE)
        ADD(sm, out_of_scope, 1);
    else
        ADD(sm, storage_errors, 1);
    if (r == SITEMAPS_KNOWN && e->has_lastmod)
        ADD(sm, lastmod_known, 1);
}

sitemaps_fetch *sitemaps_fetch_begin(sitemaps *sm, url_canon *uc, const char *url, size_t len,
                                     int depth)
{
    sitemaps_fetch *f = cr_calloc(1, sizeof *f);
    if (f == NULL) {
        ADD(sm, parse_errors, 1); /* the body goes unread: count it */
        return NULL;
    }
    f->sm = sm;
    f->uc = uc;
    f->depth = depth;
    f->url = cr_strndup(url, len);
    f->url_len = len;
    cr_buf_init(&f->out, 0);
    cr_buf_init(&f->key, 0);
    sitemap_opts po = { .max_urls = sm->o.max_urls, .max_bytes = sm->o.max_bytes,
                        .max_loc = sm->o.max_loc };
    f->p = sitemap_new(&po, on_entry, f);
    if (f->url == NULL || f->p == NULL) {
        sitemaps_fetch_abort(f);
        ADD(sm, parse_errors, 1);
        return NULL;
    }
    f->grant = granted(sm, f->url);
    return f;
}

void sitemaps_fetch_feed(sitemaps_fetch *f, const char *p, size_t n)
{
    sitemap_feed(f->p, p, n);
}

void sitemaps_fetch_end(sitemaps_fetch *f, bool truncated, FILE *log)
{
    sitemaps *sm = f->sm;
    int rc = sitemap_feed(f->p, NULL, 0);
    if (rc == 0)
        rc = sitemap_finish(f->p);
    sitemap_stats st;
    sitemap_stats_get(f->p, &st);
    ADD(sm, fetched, 1);
    if (st.kind == SITEMAP_URLSET)
        ADD(sm, urlsets, 1);
    else if (st.kind == SITEMAP_INDEX)
        ADD(sm, indexes, 1);
    if (st.gzip)
        ADD(sm, gzip, 1);
    ADD(sm, dropped_urls, st.over_limit);
    ADD(sm, dropped_loc, st.no_loc + st.loc_too_long);
    ADD(sm, lastmod, st.lastmod);
    ADD(sm, bad_lastmod, st.bad_lastmod);
    if (rc == -SITEMAP_ERR_TOO_BIG || truncated)
        ADD(sm, cut, 1);
    if (rc < 0 && rc != -SITEMAP_ERR_TOO_BIG)
        ADD(sm, parse_errors, 1);
    if (rc < 0 && log)
        fprintf(log, "crawld: sitemap %s: %s%s\n", f->url, sitemap_error_text(f->p),
                truncated ? " (body cut at fetch.max_body_bytes)" : "");
    sitemaps_fetch_abort(f);
}

void sitemaps_fetch_abort(sitemaps_fetch *f)
{
    if (f == NULL)
        return;
    sitemap_free(f->p);
    cr_buf_release(&f->out);
    cr_buf_release(&f->key);
    cr_free(f->grant);
    cr_free(f->url);
    cr_free(f);
}
