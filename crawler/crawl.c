/* crawler/crawl: the daemon's engine (see crawl.h).
 *
 * Flow of one URL: frontier_next (scheduler thread) -> fetcher_submit ->
 * hooks on a fetcher thread: on_response notes status and headers and, for
 * an HTML 200, takes a link parser from the thread's pool; on_body feeds it
 * (each link is handled as it comes out: canonicalize against the page or
 * its first <base>, scope, seen test); on_raw keeps the wire bytes for the
 * archive; on_done archives, turns a redirect's Location into a discovered
 * link, and reports the outcome to the frontier. A URL the seen test calls
 * new is inserted in SQLite (asynchronously when the Bloom filter said NO,
 * synchronously when a MAYBE was verified); once SQLite confirms the row is
 * new, it is pushed to the frontier (from the writer thread's callback).
 *
 * Only URLs that pass the scope reach the seen test, so in a crawl the
 * verify policy "in-scope" verifies every MAYBE; the policy matters for
 * POST /v1/dedup, where URLs outside the scope are trusted to the Bloom
 * filter.
 *
 * Locks: `lock` guards the scheduler's wait (with `wake`) and the stop and
 * pause state; it is never held while calling another module. Each fetcher
 * thread's context (its url_canon and link parser pool) is touched only by
 * that thread. Counters are relaxed atomics. */
#include "crawl.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/css.h"
#include "crawler/web/fetch.h"
#include "crawler/web/links.h"
#include "crawler/sampler.h"
#include "crawler/report/summary.h"
#include "crawler/web/url.h"
#include "crawler/verifier.h"
#include "crawler/wire.h"
#include "dedup/bloom.h"
#include "dedup/hash.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "storage/db.h"
#include "storage/warc.h"

#define SNAPSHOT_NAME "bloom.snap"
#define ROBOTS_MAX_HOPS 5
#define POOL_PER_THREAD 256
#define HOPS_SLOTS 65536 /* redirect hop counts remembered for queued targets */
#define GRACE_MS 10000

typedef struct fjob fjob;

/* One fetcher thread's own things. A thread runs many transfers at once,
 * so each HTML page gets a parser from the pool for its lifetime; the
 * parsers' callback finds its page through `current`, set around every
 * links_feed / links_finish call (which is when callbacks happen). */
typedef struct tctx {
    url_canon *uc;
    cr_buf base, out;           /* on_link's scratch: no allocation per link */
    links_parser *pool[POOL_PER_THREAD];
    int npool;
    fjob *current;
} tctx;

typedef struct hop_slot {
    _Atomic uint64_t key; /* fingerprint low half of the target URL */
    _Atomic int hops;
} hop_slot;

struct crawl {
    const crawl_config *cfg;
    FILE *log;
    db *d;
    verifier *ver;
    seen *s;
    scope *sc;
    frontier *fr;
    fetcher *f;
    warc_writer *w;
    links_opts lopts;
    url_canon *uc;              /* the scheduler's and the API's (under api_lock) */
    pthread_mutex_t api_lock;
    tctx *threads;
    unsigned nthreads;
    hop_slot *hops;
    char snap_path[4096];
    char archive_dir[4096];
    int64_t started_ms;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop_level;             /* 0 run, 1 graceful, 2 abort */
    volatile sig_atomic_t signal_stop;
    int signals_seen;
    bool done;
    int64_t recovered;

    atomic_uint_fast64_t nudges;  /* bumped by every nudge (see nudge) */
    atomic_bool sleeping;         /* the scheduler is (about to be) waiting */

    atomic_uint_fast64_t pages, fetch_errors, status_counts[600], bytes, links, links_rejected,
        links_out_of_scope, nofollow_skipped, redirects, redirects_too_long, truncated;
    atomic_uint_fast64_t errors_by_kind[FETCH_ERR_COUNT];
    /* requisites (see "requisites from CSS") */
    atomic_uint_fast64_t req_found, req_new, req_past_depth, css_sheets, css_refs, css_imports,
        css_dropped, css_truncated;
    sampler *smp;               /* the scheduler's: figures over time */
};

/* A fetch in progress: owned by the hooks from submit to on_done. */
struct fjob {
    crawl *c;
    frontier_job fj;
    char *url;                  /* fetched now (a robots job may have followed redirects) */
    size_t url_len;
    uint64_t links;             /* extracted so far */
    int hops;
    int status;
    long retry_after_s;
    char *location;
    char *ctype;
    links_parser *lp;           /* while an HTML body is parsed */
    cr_buf body;                /* robots.txt body */
    cr_buf raw;                 /* wire payload for the archive */
    cr_buf headers, request;
    bool css;                   /* a 200 text/css body, gathered in css_body */
    cr_buf css_body;
    char ip[64];
    int64_t links_tested, links_new; /* this page's links that met the seen test */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void persist_stats(crawl *c);

/* The end of a response, rounded up: the frontier spaces the next request
 * from it, and rounding down could start that request up to 1 ms early. */
static int64_t mono_ms_ceil(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + (ts.tv_nsec + 999999) / 1000000;
}

static void bump(atomic_uint_fast64_t *x) { atomic_fetch_add_explicit(x, 1, memory_order_relaxed); }

/* Tells the scheduler to look again. A running scheduler sees the bumped
 * count before it sleeps, so only a sleeping one costs a lock and a wakeup
 * (both sides use sequentially consistent atomics: either this sees
 * `sleeping` or the scheduler sees the new count). */
static void nudge(crawl *c)
{
    atomic_fetch_add(&c->nudges, 1);
    if (!atomic_load(&c->sleeping))
        return;
    pthread_mutex_lock(&c->lock);
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
}

/* ---- redirect hop counts ------------------------------------------------ */

static void hops_put(crawl *c, const char *url, size_t len, int hops)
{
    hash_fp fp = hash_fingerprint(url, len);
    hop_slot *s = &c->hops[fp.lo % HOPS_SLOTS];
    atomic_store(&s->hops, hops);
    atomic_store(&s->key, fp.hi | 1);
}

static int hops_get(crawl *c, const char *url, size_t len)
{
    hash_fp fp = hash_fingerprint(url, len);
    hop_slot *s = &c->hops[fp.lo % HOPS_SLOTS];
    return atomic_load(&s->key) == (fp.hi | 1) ? atomic_load(&s->hops) : 0;
}

/* ---- discovered URLs: scope, seen test, SQLite, frontier ---------------- */

typedef struct pending {
    crawl *c;
    int depth;
    int kind;
} pending;

/* Writer thread, after COMMIT of a Bloom-NO insert. */
static void on_inserted(void *ud, const db_result *r)
{
    pending *p = ud;
    if (r->status == 1) {
        size_t off, hl;
        char host[DB_HOST_MAX + 1];
        if (url_host(r->url, r->url_len, &off, &hl) == 0 && hl <= DB_HOST_MAX) {
            memcpy(host, r->url + off, hl);
            host[hl] = '\0';
            frontier_push(p->c->fr, r->id, r->url, r->url_len, host, p->depth, p->kind);
            nudge(p->c);
        }
    }
    cr_free(p);
}

#define DISCOVER_OUT_OF_SCOPE 2

/* A canonical URL found at depth through a link of kind: 1 new and queued,
 * 0 duplicate (or no host), DISCOVER_OUT_OF_SCOPE, < 0 storage error. A
 * requisite names the page or stylesheet it was found on (from), for
 * crawl.requisites_scope. */
static int discover_from(crawl *c, const char *url, size_t len, int depth, int kind, bool scoped,
                         const char *from, size_t from_len)
{
    if (scoped) {
        scope_verdict v = kind == DB_KIND_REQUISITE && from != NULL
                              ? scope_check_requisite(c->sc, url, len, depth, from, from_len)
                              : scope_check(c->sc, url, len, depth, kind);
        if (v != SCOPE_ALLOWED) {
            bump(&c->links_out_of_scope);
            return DISCOVER_OUT_OF_SCOPE;
        }
    }
    size_t off, hl;
    if (url_host(url, len, &off, &hl) < 0)
        return 0;
    pending *p = cr_malloc(sizeof *p);
    if (p == NULL)
        return -ENOMEM;
    p->c = c;
    p->depth = depth;
    p->kind = kind;
    verifier_row row = { .u = { .host = url + off, .host_len = hl, .depth = depth, .kind = kind,
                                .state = DB_STATE_QUEUED },
                         .on_new = on_inserted, .ud = p };
    int r = seen_test(c->s, url, len, true, &row);
    if (r < 0 || r != SEEN_NEW_BLOOM)
        cr_free(p); /* the callback owns p only when an async insert was queued */
    if (r < 0)
        return r;
    if (r == SEEN_NEW_VERIFIED && row.id > 0) {
        char host[DB_HOST_MAX + 1];
        if (hl <= DB_HOST_MAX) {
            memcpy(host, url + off, hl);
            host[hl] = '\0';
            frontier_push(c->fr, row.id, url, len, host, depth, kind);
            nudge(c);
        }
    }
    return seen_is_new((seen_result)r) ? 1 : 0;
}

static int discover(crawl *c, const char *url, size_t len, int depth, int kind, bool scoped)
{
    return discover_from(c, url, len, depth, kind, scoped, NULL, 0);
}

/* A requisite of the page or stylesheet j at url: discovered one level
 * deeper, counted. */
static int discover_requisite(crawl *c, fjob *j, const char *url, size_t len, int kind)
{
    bump(&c->req_found);
    int depth = j->fj.depth + 1;
    int r = discover_from(c, url, len, depth, kind, true, j->url, j->url_len);
    if (r == 1) {
        bump(&c->req_new);
        if (kind == DB_KIND_REQUISITE && c->cfg->crawl.max_depth >= 0 &&
            depth > c->cfg->crawl.max_depth)
            bump(&c->req_past_depth);
    }
    return r;
}

/* ---- fetcher hooks (fetcher threads) ------------------------------------ */

static tctx *my_ctx(crawl *c)
{
    int i = fetcher_thread_index();
    return i >= 0 && (unsigned)i < c->nthreads ? &c->threads[i] : NULL;
}

static bool is_css(const char *ct)
{
    if (ct == NULL)
        return false;
    while (*ct == ' ')
        ct++;
    return strncasecmp(ct, "text/css", 8) == 0 && (ct[8] == '\0' || ct[8] == ';' || ct[8] == ' ');
}

static bool is_html(const char *ct)
{
    if (ct == NULL)
        return false;
    while (*ct == ' ')
        ct++;
    return strncasecmp(ct, "text/html", 9) == 0 || strncasecmp(ct, "application/xhtml+xml", 21) == 0;
}

static void on_link(void *ud, const links_link *l);

static int hook_response(void *ctx, const fetch_job *job, const fetch_response *r)
{
    (void)ctx;
    fjob *j = job->user;
    crawl *c = j->c;
    j->status = (int)r->status;
    j->retry_after_s = r->retry_after_s;
    if (r->location)
        j->location = cr_strdup(r->location);
    if (r->content_type)
        j->ctype = cr_strdup(r->content_type);
    if (r->remote_ip)
        snprintf(j->ip, sizeof j->ip, "%s", r->remote_ip);
    if (c->w) {
        cr_buf_append(&j->headers, r->headers, r->headers_len);
        cr_buf_append(&j->request, r->request, r->request_len);
    }
    if (!j->fj.is_robots && r->status == 200 && is_html(r->content_type)) {
        tctx *t = my_ctx(c);
        links_parser *lp = NULL;
        if (t && t->npool > 0)
            lp = t->pool[--t->npool];
        else if (t)
            lp = links_new(&c->lopts, on_link, t);
        j->lp = lp;
        if (lp)
            links_reset(lp, r->content_type);
    }
    if (!j->fj.is_robots && r->status == 200 && is_css(r->content_type))
        j->css = true;
    return 0;
}

/* A link as the parser found it: resolve, then discover. */
static void on_link(void *ud, const links_link *l)
{
    tctx *t = ud;
    fjob *j = t->current;
    crawl *c = j->c;
    j->links++; /* added to c->links once per page: no shared counter per link */
    if (l->cls == LINKS_OTHER)
        return;
    if (!c->cfg->crawl.follow_nofollow &&
        (l->nofollow || (links_robots(j->lp) & LINKS_ROBOTS_NOFOLLOW))) {
        bump(&c->nofollow_skipped);
        return;
    }
    url_reject why;
    const char *b = j->url;
    size_t blen = j->url_len;
    if (l->base && url_canon_resolve(t->uc, j->url, j->url_len, l->base, l->base_len, &t->base,
                                     &why) == 0) {
        b = t->base.data;
        blen = t->base.len;
    }
    if (url_canon_resolve(t->uc, b, blen, l->url, l->url_len, &t->out, &why) < 0) {
        bump(&c->links_rejected);
    } else {
        int kind = l->cls == LINKS_REQUISITE && scope_in_scope(c->sc, j->url, j->url_len)
                       ? DB_KIND_REQUISITE
                       : DB_KIND_NAVIGATION;
        int r = l->cls == LINKS_REQUISITE
                    ? discover_requisite(c, j, t->out.data, t->out.len, kind)
                    : discover(c, t->out.data, t->out.len, j->fj.depth + 1, kind, true);
        if (r == 0 || r == 1) {
            j->links_tested++;
            j->links_new += r;
        }
    }
}

static int hook_body(void *ctx, const fetch_job *job, const char *p, size_t n)
{
    (void)ctx;
    fjob *j = job->user;
    if (j->fj.is_robots) {
        size_t cap = (size_t)j->c->cfg->politeness.robots_max_bytes;
        if (j->body.len < cap)
            cr_buf_append(&j->body, p, n < cap - j->body.len ? n : cap - j->body.len);
    } else if (j->lp) {
        tctx *t = my_ctx(j->c);
        t->current = j;
        links_feed(j->lp, p, n);
        t->current = NULL;
    } else if (j->css && cr_buf_append(&j->css_body, p, n) < 0) {
        /* past the cap (or out of memory): keep what fits; the scan counts
         * the stylesheet as truncated */
        size_t room = j->css_body.max > j->css_body.len ? j->css_body.max - j->css_body.len : 0;
        if (room > 0 && cr_buf_append(&j->css_body, p, room < n ? room : n) < 0)
            room = 0;
    }
    return 0;
}

/* ---- requisites from CSS ------------------------------------------------ */

/* A stylesheet's url() and @import references are requisites of the page
 * that needed it, whatever the scope says about the stylesheet itself
 * (a CDN's CSS loads the CDN's fonts): resolved against the stylesheet's
 * URL, one level deeper, each host's robots.txt and politeness applying as
 * to any URL. A stylesheet reached as a navigation link of an in-scope page
 * (a <a href=x.css>) counts as in scope. @import loops end at the seen test
 * (a stylesheet is fetched once); chains of distinct ones at max_depth +
 * requisite_depth. */

static void on_css_ref(void *ud, const css_ref *ref)
{
    tctx *t = ud;
    fjob *j = t->current;
    crawl *c = j->c;
    url_reject why;
    if (url_canon_resolve(t->uc, j->url, j->url_len, ref->url, ref->len, &t->out, &why) < 0) {
        bump(&c->links_rejected);
        return;
    }
    bump(&c->css_refs);
    if (ref->kind == CSS_REF_IMPORT)
        bump(&c->css_imports);
    int r = discover_requisite(c, j, t->out.data, t->out.len, DB_KIND_REQUISITE);
    if (r == 0 || r == 1) {
        j->links_tested++;
        j->links_new += r;
    }
}

static void scan_stylesheet(crawl *c, fjob *j, bool truncated)
{
    tctx *t = my_ctx(c);
    if (t == NULL)
        return;
    css_opts o = { .max_bytes = j->css_body.max, .max_url = (size_t)c->cfg->canon.max_url_bytes };
    css_stats st;
    t->current = j;
    int rc = css_scan(j->css_body.data, j->css_body.len, &o, on_css_ref, t, &st);
    t->current = NULL;
    bump(&c->css_sheets);
    if (rc < 0) {
        bump(&c->css_dropped);
        return;
    }
    uint64_t dropped = 0;
    for (int k = 0; k < CSS_DROP__COUNT; k++)
        dropped += st.dropped[k];
    atomic_fetch_add_explicit(&c->css_dropped, dropped, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->links, st.refs + dropped, memory_order_relaxed);
    if (truncated || st.truncated || j->css_body.len >= j->css_body.max)
        bump(&c->css_truncated);
}

static int hook_raw(void *ctx, const fetch_job *job, const char *p, size_t n)
{
    (void)ctx;
    fjob *j = job->user;
    if (j->c->w)
        cr_buf_append(&j->raw, p, n);
    return 0;
}

static void fjob_free(fjob *j)
{
    cr_free(j->url);
    cr_free(j->location);
    cr_free(j->ctype);
    cr_buf_release(&j->body);
    cr_buf_release(&j->raw);
    cr_buf_release(&j->headers);
    cr_buf_release(&j->request);
    cr_buf_release(&j->css_body);
    cr_free(j);
}

static int submit(crawl *c, fjob *j, long timeout_ms)
{
    fetch_job fj = { .id = (uint64_t)j->fj.id, .url = j->url, .hops = (unsigned)j->hops, .user = j };
    return fetcher_submit(c->f, &fj, timeout_ms);
}

static int error_kind(fetch_error e)
{
    switch (e) {
    case FETCH_OK:
    case FETCH_ERR_BODY_TOO_LARGE:
    case FETCH_ERR_DECODE:
        return FRONTIER_ERR_NONE;
    case FETCH_ERR_DNS:
    case FETCH_ERR_CONNECT:
    case FETCH_ERR_CONNECT_TIMEOUT:
    case FETCH_ERR_TLS:
    case FETCH_ERR_TIMEOUT:
    case FETCH_ERR_LOW_SPEED:
    case FETCH_ERR_NETWORK:
        return FRONTIER_ERR_NETWORK;
    default:
        return FRONTIER_ERR_FATAL;
    }
}

static void archive(crawl *c, fjob *j, const fetch_result *r)
{
    if (c->w == NULL || j->status <= 0 || j->headers.len == 0)
        return;
    warc_fetch wf = { .uri = j->url, .ip = j->ip, .date_ms = r->start_unix_ms,
                      .request = j->request.data, .request_len = j->request.len,
                      .headers = j->headers.data, .headers_len = j->headers.len,
                      .payload = j->raw.data ? j->raw.data : "", .payload_len = j->raw.len,
                      .status = j->status, .mime = j->ctype, .truncated = r->truncated };
    int rc = warc_write_fetch(c->w, &wf, NULL);
    if (rc < 0 && c->log)
        fprintf(c->log, "crawld: WARC write failed for %s: %s\n", j->url, strerror(-rc));
}

static void finish_robots(crawl *c, fjob *j, const fetch_result *r)
{
    int status = r->error == FETCH_OK || error_kind(r->error) == FRONTIER_ERR_NONE ? j->status : 0;
    if (status >= 300 && status < 400 && j->location && j->hops < ROBOTS_MAX_HOPS) {
        tctx *t = my_ctx(c);
        cr_buf out;
        cr_buf_init(&out, 0);
        url_reject why;
        if (t && url_canon_resolve(t->uc, j->url, strlen(j->url), j->location,
                                   strlen(j->location), &out, &why) == 0) {
            fjob *next = cr_calloc(1, sizeof *next);
            if (next) {
                next->c = c;
                next->fj = j->fj;
                next->url = cr_buf_take(&out);
                next->url_len = next->url ? strlen(next->url) : 0;
                next->hops = j->hops + 1;
                cr_buf_init(&next->body, 0);
                cr_buf_init(&next->raw, (size_t)c->cfg->fetch.max_body_bytes);
                cr_buf_init(&next->headers, 0);
                cr_buf_init(&next->request, 0);
                cr_buf_init(&next->css_body, (size_t)c->cfg->fetch.max_body_bytes);
                if (next->url && submit(c, next, 0) == 0) {
                    j->fj.url = NULL; /* moved to next */
                    cr_buf_release(&out);
                    return;
                }
                next->fj.url = NULL;
                fjob_free(next);
            }
        }
        cr_buf_release(&out);
    }
    frontier_outcome o = { .status = status, .error = error_kind(r->error),
                           .response_ms = r->total_ms, .retry_after_s = j->retry_after_s,
                           .bytes = (int64_t)j->body.len, .content_type = j->ctype };
    frontier_robots_done(c->fr, &j->fj, &o, j->body.data, j->body.len, mono_ms_ceil());
}

static void hook_done(void *ctx, const fetch_job *job, const fetch_result *r)
{
    (void)ctx;
    fjob *j = job->user;
    crawl *c = j->c;
    if (j->lp) {
        tctx *t = my_ctx(c);
        t->current = j;
        links_finish(j->lp);
        t->current = NULL;
        if (t->npool < POOL_PER_THREAD)
            t->pool[t->npool++] = j->lp;
        else
            links_free(j->lp);
        j->lp = NULL;
        atomic_fetch_add_explicit(&c->links, j->links, memory_order_relaxed);
    }
    bool answered = j->status > 0 && error_kind(r->error) == FRONTIER_ERR_NONE;
    if (r->error == FETCH_ERR_ABORTED || r->error == FETCH_ERR_CANCELLED) {
        frontier_return(c->fr, &j->fj);
        fjob_free(j);
        nudge(c);
        return;
    }
    if (answered) {
        bump(&c->pages);
        if (j->status >= 100 && j->status < 600)
            bump(&c->status_counts[j->status]);
        atomic_fetch_add_explicit(&c->bytes, r->raw_bytes, memory_order_relaxed);
        if (r->truncated)
            bump(&c->truncated);
        archive(c, j, r);
        if (j->css)
            scan_stylesheet(c, j, r->truncated);
    } else {
        bump(&c->fetch_errors);
        if ((unsigned)r->error < FETCH_ERR_COUNT)
            bump(&c->errors_by_kind[r->error]);
    }
    if (j->fj.is_robots) {
        finish_robots(c, j, r);
        fjob_free(j);
        nudge(c);
        return;
    }
    /* a redirect's Location is a discovered link, one hop further */
    if (answered && j->status >= 300 && j->status < 400 && j->location) {
        bump(&c->redirects);
        if (j->hops + 1 > c->cfg->fetch.max_redirects) {
            bump(&c->redirects_too_long);
        } else {
            tctx *t = my_ctx(c);
            cr_buf out;
            cr_buf_init(&out, 0);
            url_reject why;
            if (t && url_canon_resolve(t->uc, j->url, strlen(j->url), j->location,
                                       strlen(j->location), &out, &why) == 0) {
                int kind = j->fj.kind == DB_KIND_REQUISITE ? DB_KIND_REQUISITE : DB_KIND_REDIRECT;
                hops_put(c, out.data, out.len, j->hops + 1);
                discover(c, out.data, out.len, j->fj.depth + 1, kind, true);
            } else {
                bump(&c->links_rejected);
            }
            cr_buf_release(&out);
        }
    }
    char reason[512];
    snprintf(reason, sizeof reason, "%s", r->reason ? r->reason : "");
    frontier_outcome o = { .status = answered ? j->status : 0, .error = error_kind(r->error),
                           .error_text = reason[0] ? reason : NULL, .response_ms = r->total_ms,
                           .retry_after_s = j->retry_after_s, .bytes = (int64_t)r->decoded_bytes,
                           .content_type = j->ctype, .links = j->links_tested,
                           .links_new = j->links_new };
    frontier_done(c->fr, &j->fj, &o, mono_ms_ceil());
    fjob_free(j);
    /* no nudge: hook_room comes next on this thread and refills the slot */
}

/* Takes the frontier's next job and submits it: FRONTIER_JOB when one was
 * submitted, else what frontier_next said (FRONTIER_WAIT with *wake). */
static int dispatch(crawl *c, int64_t *wake)
{
    frontier_job fj;
    int r = frontier_next(c->fr, mono_ms(), &fj, wake);
    if (r != FRONTIER_JOB)
        return r;
    fjob *j = cr_calloc(1, sizeof *j);
    if (j == NULL) {
        frontier_return(c->fr, &fj);
        return FRONTIER_WAIT;
    }
    j->c = c;
    j->fj = fj;
    j->url = cr_strdup(fj.url);
    j->url_len = j->url ? strlen(j->url) : 0;
    j->hops = fj.kind == DB_KIND_REDIRECT ? hops_get(c, fj.url, strlen(fj.url)) : 0;
    cr_buf_init(&j->body, 0);
    cr_buf_init(&j->raw, (size_t)c->cfg->fetch.max_body_bytes);
    cr_buf_init(&j->headers, 0);
    cr_buf_init(&j->request, 0);
    cr_buf_init(&j->css_body, (size_t)c->cfg->fetch.max_body_bytes);
    if (j->url == NULL || submit(c, j, 0) < 0) {
        frontier_return(c->fr, &j->fj);
        fjob_free(j);
        return FRONTIER_WAIT;
    }
    return FRONTIER_JOB;
}

/* Fetcher thread, after transfers ended: refills its free slots right here
 * (no scheduler round trip). When the frontier has nothing ready the
 * scheduler is nudged, since only it waits for politeness times. */
static void hook_room(void *ctx, unsigned free_slots)
{
    crawl *c = ctx;
    pthread_mutex_lock(&c->lock);
    bool stop = c->stop_level > 0 || c->signal_stop;
    pthread_mutex_unlock(&c->lock);
    if (stop) {
        nudge(c);
        return;
    }
    for (unsigned i = 0; i < free_slots; i++) {
        int64_t wake = -1;
        if (dispatch(c, &wake) != FRONTIER_JOB) {
            nudge(c);
            return;
        }
    }
}

/* ---- open / close ------------------------------------------------------ */

static int open_seen(crawl *c, char *err, size_t errlen)
{
    bloom *bf = NULL;
    uint64_t mark = 0;
    char msg[512];
    snprintf(c->snap_path, sizeof c->snap_path, "%s/%s", c->cfg->storage.state_dir, SNAPSHOT_NAME);
    int rc = bloom_load(c->snap_path, &bf, &mark, msg, sizeof msg);
    if (rc < 0 && rc != -ENOENT && c->log)
        fprintf(c->log, "crawld: Bloom snapshot refused (%s); rebuilding from the database\n", msg);
    if (bf == NULL) {
        bloom_params bp;
        wire_bloom_params(c->cfg, &bp);
        mark = 0;
        if (bloom_new(&bp, &bf) < 0) {
            snprintf(err, errlen, "cannot create the Bloom filter (out of memory?)");
            return -1;
        }
    }
    c->ver = verifier_new(c->d);
    seen_verifier v = verifier_iface(c->ver);
    int verify = c->cfg->dedup.verify == VERIFY_NEVER    ? SEEN_VERIFY_NEVER
                 : c->cfg->dedup.verify == VERIFY_ALWAYS ? SEEN_VERIFY_ALWAYS
                                                         : SEEN_VERIFY_IN_SCOPE;
    seen_opts so = { verify, (size_t)c->cfg->dedup.recent_cache };
    c->s = c->ver ? seen_new(bf, &so, &v) : NULL;
    if (c->s == NULL) {
        bloom_free(bf);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t n = verifier_catch_up(c->s, c->d, mark, err, errlen);
    if (n < 0)
        return -1;
    if (n > 0 && c->log)
        fprintf(c->log, "crawld: %lld URLs from the database added to the Bloom filter (after "
                        "snapshot mark %llu)\n",
                (long long)n, (unsigned long long)mark);
    return 0;
}

crawl *crawl_open(const crawl_config *cfg, FILE *log, char *err, size_t errlen)
{
    crawl *c = cr_calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->log = log;
    c->started_ms = mono_ms();
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->api_lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    char msg[512];
    db_opts dbo;
    wire_db_opts(cfg, &dbo);
    c->d = db_open(cfg->storage.state_dir, &dbo, err, errlen);
    if (c->d == NULL)
        goto fail;
    c->recovered = db_recovered_in_flight(c->d);
    if (c->recovered > 0 && log) {
        fprintf(log, "crawld: %lld URLs were in flight at the crash and will be fetched again\n",
                (long long)c->recovered);
        if (cfg->storage.commit_interval_ms > 0)
            fprintf(log, "crawld: so will pages fetched in the last %lld ms before it, whose "
                         "outcome was not yet committed (storage.commit_interval_ms)\n",
                    (long long)cfg->storage.commit_interval_ms);
    }
    if (open_seen(c, err, errlen) < 0)
        goto fail;
    scope_opts so;
    wire_scope_opts(cfg, &so);
    c->sc = scope_new(&so, msg, sizeof msg);
    if (c->sc == NULL) {
        snprintf(err, errlen, "scope: %s", msg);
        goto fail;
    }
    frontier_opts fo;
    wire_frontier_opts(cfg, &fo);
    c->fr = frontier_new(&fo, c->d, err, errlen);
    if (c->fr == NULL)
        goto fail;
    c->smp = sampler_new(c->d, cfg);
    if (c->smp == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    url_policy up;
    wire_url_policy(cfg, &up);
    wire_links_opts(cfg, &c->lopts);
    c->nthreads = (unsigned)cfg->fetch.threads;
    c->threads = cr_calloc(c->nthreads, sizeof *c->threads);
    c->hops = cr_calloc(HOPS_SLOTS, sizeof *c->hops);
    c->uc = url_canon_new(&up);
    if (c->threads == NULL || c->hops == NULL || c->uc == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < c->nthreads; i++) {
        c->threads[i].uc = url_canon_new(&up);
        cr_buf_init(&c->threads[i].base, 0);
        cr_buf_init(&c->threads[i].out, 0);
        if (c->threads[i].uc == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    if (cfg->archive.warc) {
        warc_opts wo;
        wire_warc_opts(cfg, c->archive_dir, sizeof c->archive_dir, &wo);
        /* the warcinfo record's summary of how this crawl was configured */
        cr_buf info;
        cr_buf_init(&info, 16384);
        cr_buf_printf(&info, "http-header-user-agent: %s\r\nrobots: %s\r\nscope: %s\r\n",
                      cfg->crawl.user_agent, cfg->politeness.obey_robots ? "obey" : "ignore",
                      config_scope_name(cfg->crawl.scope));
        cr_buf_printf(&info, "politeness: delay_ms=%lld max_per_host=%lld\r\n",
                      (long long)cfg->politeness.delay_ms, (long long)cfg->politeness.max_per_host);
        for (size_t i = 0; i < cfg->crawl.seeds.n; i++)
            cr_buf_printf(&info, "seed: %s\r\n", cfg->crawl.seeds.v[i]);
        wo.info = info.data;
        c->w = warc_open(&wo, msg, sizeof msg);
        cr_buf_release(&info);
        if (c->w == NULL) {
            snprintf(err, errlen, "archive: %s", msg);
            goto fail;
        }
    }
    fetch_opts fo2;
    wire_fetch_opts(cfg, &fo2);
    fetch_hooks hooks = { .on_response = hook_response, .on_raw = hook_raw, .on_body = hook_body,
                          .on_done = hook_done, .on_room = hook_room, .ctx = c };
    if (fetcher_new(&fo2, &hooks, &c->f) < 0) {
        snprintf(err, errlen, "cannot start the fetcher threads");
        goto fail;
    }
    return c;
fail:
    crawl_close(c);
    return NULL;
}

int crawl_add_seed(crawl *c, const char *url, size_t len, char *why, size_t whylen)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    url_reject rej;
    pthread_mutex_lock(&c->api_lock);
    int rc = url_canon_resolve(c->uc, NULL, 0, url, len, &out, &rej);
    pthread_mutex_unlock(&c->api_lock);
    if (rc < 0) {
        snprintf(why, whylen, "%s", rc == -EINVAL ? url_reject_str(rej) : "out of memory");
        cr_buf_release(&out);
        return -EINVAL;
    }
    scope_add_seed(c->sc, out.data, out.len);
    rc = discover(c, out.data, out.len, 0, DB_KIND_SEED, true);
    if (rc < 0)
        snprintf(why, whylen, "the database failed");
    cr_buf_release(&out);
    nudge(c);
    return rc < 0 ? -EIO : rc == DISCOVER_OUT_OF_SCOPE ? 0 : rc;
}

int crawl_dedup_url(crawl *c, const char *url, size_t len)
{
    cr_buf out;
    cr_buf_init(&out, 0);
    url_reject rej;
    pthread_mutex_lock(&c->api_lock);
    int rc = url_canon_resolve(c->uc, NULL, 0, url, len, &out, &rej);
    pthread_mutex_unlock(&c->api_lock);
    if (rc == 0) {
        bool in = scope_in_scope(c->sc, out.data, out.len);
        size_t off, hl;
        url_host(out.data, out.len, &off, &hl);
        verifier_row row = { .u = { .host = out.data + off, .host_len = hl,
                                    .kind = DB_KIND_NAVIGATION,
                                    .state = in ? DB_STATE_QUEUED : DB_STATE_SEEN_ONLY } };
        int r = seen_test(c->s, out.data, out.len, in, &row);
        rc = r < 0 ? r : seen_is_new((seen_result)r) ? 1 : 0;
    } else {
        rc = -EINVAL;
    }
    cr_buf_release(&out);
    return rc;
}

/* ---- the scheduler ------------------------------------------------------ */

void crawl_stop(crawl *c)
{
    pthread_mutex_lock(&c->lock);
    if (c->stop_level < 2)
        c->stop_level++;
    int level = c->stop_level;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (level == 2 && c->f)
        fetcher_abort(c->f); /* cuts the grace of a fetcher_stop already waiting */
}

void crawl_stop_signal(crawl *c) { c->signal_stop = 1; }

void crawl_pause(crawl *c)
{
    frontier_pause(c->fr);
    nudge(c);
}

void crawl_resume(crawl *c)
{
    frontier_resume(c->fr);
    nudge(c);
}

static void snapshot(crawl *c)
{
    char err[512];
    if (verifier_snapshot(c->s, c->d, c->snap_path, err, sizeof err) < 0 && c->log)
        fprintf(c->log, "crawld: snapshot: %s\n", err);
}

/* Sleeps until wake_ms (-1: none), at most 500 ms, or until a nudge that
 * came after the scheduler read `nudged` from c->nudges. */
static void wait_until(crawl *c, int64_t wake_ms, uint_fast64_t nudged)
{
    int64_t now = mono_ms();
    int64_t wait = wake_ms < 0 ? 500 : wake_ms - now;
    if (wait > 500)
        wait = 500; /* wake regularly: signals, progress, snapshots */
    if (wait <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait / 1000;
    ts.tv_nsec += (wait % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&c->lock);
    atomic_store(&c->sleeping, true);
    if (c->stop_level == 0 && !c->signal_stop && atomic_load(&c->nudges) == nudged)
        pthread_cond_timedwait(&c->wake, &c->lock, &ts);
    atomic_store(&c->sleeping, false);
    pthread_mutex_unlock(&c->lock);
}

int crawl_run(crawl *c)
{
    int64_t next_snap = mono_ms() + c->cfg->dedup.snapshot_interval_s * 1000;
    int drained_checks = 0;
    uint64_t drained_mark = 0; /* jobs submitted when drained was last seen */
    int64_t next_stats = mono_ms();
    for (;;) {
        if (c->signal_stop) {
            c->signal_stop = 0;
            crawl_stop(c);
        }
        pthread_mutex_lock(&c->lock);
        int stop = c->stop_level;
        pthread_mutex_unlock(&c->lock);
        if (stop)
            break;
        int64_t now = mono_ms();
        if (now >= next_stats) {
            persist_stats(c);
            next_stats = now + 2000;
        }
        if (c->cfg->dedup.snapshot_interval_s > 0 && now >= next_snap) {
            snapshot(c);
            next_snap = now + c->cfg->dedup.snapshot_interval_s * 1000;
        }
        uint_fast64_t nudged = atomic_load(&c->nudges);
        int64_t wake = -1;
        int r = FRONTIER_WAIT;
        while (fetcher_free_slots(c->f) > 0) {
            r = dispatch(c, &wake);
            if (r != FRONTIER_JOB)
                break;
        }
        if (r < 0) {
            if (c->log)
                fprintf(c->log, "crawld: the frontier failed (%s)\n", strerror(-r));
            return r;
        }
        if (r == FRONTIER_DRAINED) {
            /* Drained means done only when it is seen twice, with a flush
             * between, and no job was submitted in between (by this loop
             * or by a fetcher thread's refill): a page fetched meanwhile
             * may have links still on their way. */
            fetch_stats fst;
            fetcher_stats(c->f, &fst);
            if (fst.submitted != drained_mark)
                drained_checks = 0;
            drained_mark = fst.submitted;
            if (drained_checks >= 2) {
                /* a drained daemon idles until a seed or an API call nudges it */
                wait_until(c, -1, nudged);
                continue;
            }
            /* rows may still be on their way to SQLite and the frontier */
            if (db_flush(c->d) < 0) {
                char msg[256];
                db_last_error(c->d, msg, sizeof msg);
                if (c->log)
                    fprintf(c->log, "crawld: the database failed: %s\n", msg);
                return -EIO;
            }
            if (++drained_checks >= 2 && !c->cfg->crawl.daemon) {
                c->done = true;
                break;
            }
            wait_until(c, mono_ms() + 20, nudged);
            continue;
        }
        drained_checks = 0;
        wait_until(c, wake, nudged);
    }
    return 0;
}

/* ---- figures ----------------------------------------------------------- */

void crawl_status_get(crawl *c, crawl_status *st)
{
    memset(st, 0, sizeof *st);
    st->elapsed_s = (double)(mono_ms() - c->started_ms) / 1000.0;
    st->pages = atomic_load(&c->pages);
    st->fetch_errors = atomic_load(&c->fetch_errors);
    for (int i = 100; i < 600; i++) {
        st->status_counts[i] = atomic_load(&c->status_counts[i]);
        st->by_class[i / 100] += st->status_counts[i];
    }
    st->bytes = atomic_load(&c->bytes);
    st->links = atomic_load(&c->links);
    st->links_rejected = atomic_load(&c->links_rejected);
    st->links_out_of_scope = atomic_load(&c->links_out_of_scope);
    st->nofollow_skipped = atomic_load(&c->nofollow_skipped);
    st->redirects = atomic_load(&c->redirects);
    st->redirects_too_long = atomic_load(&c->redirects_too_long);
    st->truncated = atomic_load(&c->truncated);
    if (c->w) {
        warc_stats ws;
        warc_stats_get(c->w, &ws);
        st->archived = ws.responses;
        st->revisits = ws.revisits;
    }
    frontier_stats fs;
    frontier_get_stats(c->fr, &fs);
    st->frontier_mem = fs.mem_entries;
    st->hosts_active = fs.hosts_active;
    st->in_flight = fs.in_flight;
    st->paused = fs.paused;
    db_stats ds;
    db_get_stats(c->d, &ds);
    st->queued = ds.rows[DB_STATE_QUEUED];
    st->recovered_in_flight = c->recovered;
    pthread_mutex_lock(&c->lock);
    st->stopping = c->stop_level > 0;
    st->done = c->done;
    pthread_mutex_unlock(&c->lock);
    seen_counters_get(c->s, &st->dedup);
    bloom_stats bs;
    bloom_stats_get(seen_bloom(c->s), &bs);
    st->fpr_bound = bs.fpr_bound;
    st->fpr_predicted = bs.fpr_model;
    st->bloom_fill = bs.fill;
    st->bloom_stages = bs.stages_total;
}

json_t *crawl_status_json(crawl *c)
{
    crawl_status st;
    crawl_status_get(c, &st);
    json_t *by_status = json_object();
    for (int i = 100; i < 600; i++)
        if (st.status_counts[i]) {
            char k[8];
            snprintf(k, sizeof k, "%d", i);
            json_object_set_new(by_status, k, json_integer((json_int_t)st.status_counts[i]));
        }
    frontier_stats fs;
    frontier_get_stats(c->fr, &fs);
    bloom_stats bs;
    bloom_stats_get(seen_bloom(c->s), &bs);
    json_t *j = json_pack(
        "{s:f, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
        " s:o, s:b, s:b, s:b, s:I}",
        "elapsed_s", st.elapsed_s, "pages", (json_int_t)st.pages, "fetch_errors",
        (json_int_t)st.fetch_errors, "pages_by_status", by_status, "bytes", (json_int_t)st.bytes,
        "links", (json_int_t)st.links, "links_rejected", (json_int_t)st.links_rejected,
        "links_out_of_scope", (json_int_t)st.links_out_of_scope, "nofollow_skipped",
        (json_int_t)st.nofollow_skipped, "redirects", (json_int_t)st.redirects,
        "redirects_too_long", (json_int_t)st.redirects_too_long, "truncated",
        (json_int_t)st.truncated,
        "frontier", "memory", (json_int_t)st.frontier_mem, "sqlite_queued", (json_int_t)st.queued,
        "hosts_active", (json_int_t)st.hosts_active, "in_flight", (json_int_t)st.in_flight,
        "done", (json_int_t)fs.done, "failed", (json_int_t)fs.failed, "retries",
        (json_int_t)fs.retries, "robots_excluded",
        (json_int_t)(fs.robots_disallowed + fs.robots_unavailable), "politeness_waits",
        (json_int_t)fs.politeness_waits, "hosts", (json_int_t)fs.hosts,
        "dedup", summary_dedup_json(&st.dedup, &bs),
        "paused", st.paused, "stopping", st.stopping, "done", st.done, "recovered_in_flight",
        (json_int_t)st.recovered_in_flight);
    uint64_t verdicts[SCOPE_VERDICT_COUNT];
    scope_get_counts(c->sc, verdicts);
    json_t *rej = json_object();
    for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++)
        json_object_set_new(rej, scope_verdict_name(v), json_integer((json_int_t)verdicts[v]));
    if (j)
        json_object_set_new(j, "scope_rejects", rej);
    else
        json_decref(rej);
    db_stats ds;
    db_get_stats(c->d, &ds);
    if (j)
        json_object_set_new(j, "storage", json_pack("{s:I, s:I, s:I}", "ops", (json_int_t)ds.ops,
                                                    "commits", (json_int_t)ds.commits,
                                                    "failed_ops", (json_int_t)ds.failed_ops));
    json_t *kinds = json_object();
    for (int e = 0; e < FETCH_ERR_COUNT; e++) {
        uint64_t n = atomic_load(&c->errors_by_kind[e]);
        if (n)
            json_object_set_new(kinds, fetch_error_name((fetch_error)e), json_integer((json_int_t)n));
    }
    if (j)
        json_object_set_new(j, "fetch_errors_by_kind", kinds);
    else
        json_decref(kinds);
    if (j)
        json_object_set_new(
            j, "requisites",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "found",
                      (json_int_t)atomic_load(&c->req_found), "new",
                      (json_int_t)atomic_load(&c->req_new), "past_max_depth",
                      (json_int_t)atomic_load(&c->req_past_depth), "stylesheets",
                      (json_int_t)atomic_load(&c->css_sheets), "from_css",
                      (json_int_t)atomic_load(&c->css_refs), "css_imports",
                      (json_int_t)atomic_load(&c->css_imports), "css_dropped",
                      (json_int_t)atomic_load(&c->css_dropped), "css_truncated",
                      (json_int_t)atomic_load(&c->css_truncated)));
    if (j && c->w)
        json_object_set_new(j, "archive", json_pack("{s:I, s:I}", "responses",
                                                    (json_int_t)st.archived, "revisits",
                                                    (json_int_t)st.revisits));
    return j;
}

/* Stores the figures in the database, for `crawld stats`, and a sample of
 * them over time, for `crawld report`. */
static void persist_stats(crawl *c)
{
    json_t *j = crawl_status_json(c);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    if (text)
        db_put_meta(c->d, "stats", text);
    if (j && sampler_record(c->smp, j, seen_bloom(c->s), c->fr) < 0 && c->log)
        fprintf(c->log, "crawld: could not store a sample of the figures\n");
    free(text);
    json_decref(j);
}

void crawl_summary(crawl *c, FILE *f)
{
    json_t *j = crawl_status_json(c);
    if (j)
        summary_crawl_print(f, j);
    json_decref(j);
}

void crawl_metrics(crawl *c, FILE *f)
{
    crawl_status st;
    crawl_status_get(c, &st);
    fprintf(f, "# HELP crawld_pages_total Fetches that got an HTTP answer.\n"
               "# TYPE crawld_pages_total counter\n");
    for (int i = 100; i < 600; i++)
        if (st.status_counts[i])
            fprintf(f, "crawld_pages_total{status=\"%d\"} %llu\n", i,
                    (unsigned long long)st.status_counts[i]);
    fprintf(f, "# TYPE crawld_fetch_errors_total counter\ncrawld_fetch_errors_total %llu\n",
            (unsigned long long)st.fetch_errors);
    fprintf(f, "# TYPE crawld_bytes_total counter\ncrawld_bytes_total %llu\n",
            (unsigned long long)st.bytes);
    fprintf(f, "# TYPE crawld_links_total counter\ncrawld_links_total %llu\n",
            (unsigned long long)st.links);
    fprintf(f, "# HELP crawld_requisites_total Requisites found (images, CSS, fonts, scripts), "
               "and those new to the crawl.\n# TYPE crawld_requisites_total counter\n"
               "crawld_requisites_total{result=\"found\"} %llu\n"
               "crawld_requisites_total{result=\"new\"} %llu\n"
               "crawld_requisites_total{result=\"past_max_depth\"} %llu\n",
            (unsigned long long)atomic_load(&c->req_found),
            (unsigned long long)atomic_load(&c->req_new),
            (unsigned long long)atomic_load(&c->req_past_depth));
    fprintf(f, "# HELP crawld_css_total Stylesheets parsed and the references found in them.\n"
               "# TYPE crawld_css_total counter\n"
               "crawld_css_total{what=\"stylesheets\"} %llu\ncrawld_css_total{what=\"refs\"} %llu\n"
               "crawld_css_total{what=\"imports\"} %llu\ncrawld_css_total{what=\"dropped\"} %llu\n"
               "crawld_css_total{what=\"truncated\"} %llu\n",
            (unsigned long long)atomic_load(&c->css_sheets),
            (unsigned long long)atomic_load(&c->css_refs),
            (unsigned long long)atomic_load(&c->css_imports),
            (unsigned long long)atomic_load(&c->css_dropped),
            (unsigned long long)atomic_load(&c->css_truncated));
    fprintf(f, "# HELP crawld_dedup_decisions_total URLs decided by the seen test, by layer.\n"
               "# TYPE crawld_dedup_decisions_total counter\n");
    fprintf(f, "crawld_dedup_decisions_total{result=\"new\",layer=\"bloom_no\"} %llu\n",
            (unsigned long long)st.dedup.new_bloom);
    fprintf(f, "crawld_dedup_decisions_total{result=\"new\",layer=\"sqlite\"} %llu\n",
            (unsigned long long)st.dedup.new_verified);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"bloom_trusted\"} %llu\n",
            (unsigned long long)st.dedup.dup_trusted);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"recent_cache\"} %llu\n",
            (unsigned long long)st.dedup.dup_recent);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"sqlite\"} %llu\n",
            (unsigned long long)st.dedup.dup_verified);
    fprintf(f, "# TYPE crawld_false_positives_caught_total counter\n"
               "crawld_false_positives_caught_total %llu\n",
            (unsigned long long)st.dedup.new_verified);
    fprintf(f, "# TYPE crawld_fpr_observed gauge\ncrawld_fpr_observed %.9g\n",
            seen_observed_fpr(&st.dedup));
    fprintf(f, "# TYPE crawld_fpr_bound gauge\ncrawld_fpr_bound %.9g\n", st.fpr_bound);
    fprintf(f, "# TYPE crawld_fpr_predicted gauge\ncrawld_fpr_predicted %.9g\n", st.fpr_predicted);
    bloom *bf = seen_bloom(c->s);
    fprintf(f, "# HELP crawld_bloom_fill Set bits / bits, per shard and stage.\n"
               "# TYPE crawld_bloom_fill gauge\n");
    bloom_params bp;
    bloom_get_params(bf, &bp);
    for (unsigned sh = 0; sh < bp.shards; sh++)
        for (unsigned stg = 0; stg < bloom_stage_count(bf, sh); stg++) {
            bloom_stage_info si;
            if (bloom_stage_info_get(bf, sh, stg, &si) == 0)
                fprintf(f, "crawld_bloom_fill{shard=\"%u\",stage=\"%u\"} %.6f\n", sh, stg, si.fill);
        }
    fprintf(f, "# TYPE crawld_frontier_urls gauge\ncrawld_frontier_urls{where=\"memory\"} %lld\n"
               "crawld_frontier_urls{where=\"sqlite\"} %lld\n",
            (long long)st.frontier_mem, (long long)st.queued);
    fprintf(f, "# TYPE crawld_hosts_active gauge\ncrawld_hosts_active %lld\n",
            (long long)st.hosts_active);
    fprintf(f, "# TYPE crawld_in_flight gauge\ncrawld_in_flight %lld\n", (long long)st.in_flight);
    uint64_t verdicts[SCOPE_VERDICT_COUNT];
    scope_get_counts(c->sc, verdicts);
    fprintf(f, "# HELP crawld_scope_rejects_total Links not followed, by reason (scope, depth, traps).\n"
               "# TYPE crawld_scope_rejects_total counter\n");
    for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++)
        fprintf(f, "crawld_scope_rejects_total{reason=\"%s\"} %llu\n", scope_verdict_name(v),
                (unsigned long long)verdicts[v]);
}

/* ---- close ------------------------------------------------------------- */

int crawl_close(crawl *c)
{
    if (c == NULL)
        return 0;
    int rc = 0;
    if (c->f) {
        pthread_mutex_lock(&c->lock);
        long grace = c->stop_level >= 2 ? 0 : GRACE_MS;
        pthread_mutex_unlock(&c->lock);
        fetcher_stop(c->f, grace);
        fetcher_free(c->f);
    }
    for (unsigned i = 0; c->threads && i < c->nthreads; i++) {
        url_canon_free(c->threads[i].uc);
        cr_buf_release(&c->threads[i].base);
        cr_buf_release(&c->threads[i].out);
        for (int k = 0; k < c->threads[i].npool; k++)
            links_free(c->threads[i].pool[k]);
    }
    cr_free(c->threads);
    if (c->d && c->s && c->fr) {
        persist_stats(c);
        snapshot(c);
    }
    sampler_free(c->smp);
    frontier_free(c->fr);
    if (c->w && warc_close(c->w) < 0)
        rc = -EIO;
    seen_free(c->s);
    verifier_free(c->ver);
    scope_free(c->sc);
    if (c->d && db_close(c->d) < 0)
        rc = -EIO;
    url_canon_free(c->uc);
    cr_free(c->hops);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->api_lock);
    cr_free(c);
    return rc;
}
