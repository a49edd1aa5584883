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
 * Storage failures (DESIGN.md invariant 7): while the writer is stalled
 * (db_is_stalled), dispatch hands out nothing, the scheduler neither stores
 * figures nor snapshots (either would wait on the writer), and it logs the
 * stall (watch_storage). If the writer gives up, the crawl stops at once
 * with "storage failed" and a non-zero result; crawl_finish gives up a
 * stall that a stop cannot wait for. Every fetch is noted in the dispatch
 * log before it starts, so a restart knows what it fetches again.
 *
 * Threads, and the locks each holds when it calls out:
 *
 *   thread          runs                               holds when calling out
 *   scheduler       crawl_run: dispatch, wait_until,   nothing (lock only around
 *                   watch_storage, persist_stats,      its own wait and state)
 *                   snapshot
 *   fetcher (each)  hook_response/body/raw/done: link  nothing of ours; curl's
 *                   parsing, discover -> seen_test ->  multi handle is its own.
 *                   db_insert_url (may block while the db_insert_url blocks while
 *                   writer's queue is full);           the writer's queue is full;
 *                   hook_room -> dispatch              check_insert waits for a
 *                                                      COMMIT
 *   db writer       on_committed (verifier.c): the     db's mu is NOT held: the
 *                   seen test's ack (Bloom, recent     writer releases it before
 *                   cache, pending set locks), then    callbacks; on_inserted
 *                   on_inserted -> frontier_push       takes the frontier lock,
 *                   (frontier lock) -> nudge (lock)    then crawl `lock`
 *   control API     crawl_add_seed, crawl_dedup_url    api_lock around the
 *   (libmicrohttpd) (as a fetcher's discover),         scheduler's url_canon only
 *                   crawl_status_get, crawl_stop_by
 *   signal thread   crawl_stop_by (cmd_run.c)          lock (briefly)
 *
 * Lock order (outer first): frontier wlock -> frontier lock -> crawl lock;
 * the seen test's locks (Bloom stage growth, recent cache shards, pending
 * set shards) are leaves taken alone; the verifier's pool mutex is a leaf;
 * api_lock is a leaf around url_canon_resolve (and around crawl_add_seed's
 * sitemaps_robots when robots.txt is not obeyed, which may wait for the
 * writer's queue as discover does; the writer never takes api_lock). No lock of this file is held
 * while calling another module, so no cycle can pass through it. Each
 * fetcher thread's context (its url_canon and link parser pool) is touched
 * only by that thread. Counters are relaxed atomics. */
#include "crawl.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "common/buf.h"
#include "crawler/web/css.h"
#include "crawler/web/fetch.h"
#include "crawler/web/links.h"
#include "crawler/sampler.h"
#include "crawler/sitemaps.h"
#include "crawler/report/status.h"
#include "crawler/linkmemo.h"
#include "crawler/report/summary.h"
#include "crawler/web/url.h"
#include "crawler/retention.h"
#include "crawler/verifier.h"
#include "crawler/wire.h"
#include "dedup/bloom.h"
#include "dedup/hash.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "storage/db.h"
#include "storage/dispatchlog.h"
#include "storage/outbox.h"
#include "storage/spool.h"
#include "storage/warc.h"

#define SNAPSHOT_NAME "bloom.snap"
#define ROBOTS_MAX_HOPS 5
#define POOL_PER_THREAD 256
#define GRACE_MS 10000

typedef struct fjob fjob;

/* How a crawl ended (guarded by lock). */
enum crawl_end { END_RUNNING, END_DRAINED, END_MAX_PAGES, END_STOPPED, END_STORAGE };

/* One fetcher thread's own things. A thread runs many transfers at once,
 * so each HTML page gets a parser from the pool for its lifetime; the
 * parsers' callback finds its page through `current`, set around every
 * links_feed / links_finish call (which is when callbacks happen). */
typedef struct tctx {
    url_canon *uc;
    cr_buf base, out, key;      /* on_link's scratch: no allocation per link */
    links_parser *pool[POOL_PER_THREAD];
    linkmemo *memos[POOL_PER_THREAD]; /* each pooled parser's page memo (may be NULL) */
    int npool;
    fjob *current;
} tctx;

struct crawl {
    const crawl_config *cfg;
    FILE *log;
    db *d;
    verifier *ver;
    seen *s;
    retention *ret;             /* NULL without dedup.retention_s; scheduler thread */
    scope *sc;
    frontier *fr;
    fetcher *f;
    sitemaps *sm;               /* NULL unless sitemaps.enabled */
    warc_writer *w;
    links_opts lopts;
    url_canon *uc;              /* the scheduler's and the API's (under api_lock) */
    pthread_mutex_t api_lock;
    /* cluster: a checkpoint's import and a Bloom snapshot exclude each
     * other, so no snapshot's mark covers imported rows before their keys
     * are in the filter (taken before any db call, never inside another) */
    pthread_mutex_t slot_mu;
    tctx *threads;
    unsigned nthreads;
    char snap_path[4096];
    char archive_dir[4096];
    int64_t started_ms;

    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop_level;             /* 0 run, 1 graceful, 2 abort */
    int end;                    /* enum crawl_end */
    bool finished;              /* crawl_finish ran (closing thread only) */
    int finish_rc;
    char stopped_by[64];        /* who asked for the stop */
    bool stall_logged;          /* the scheduler's view of the store (scheduler only) */
    bool flushing;              /* a drained-check flush is queued (scheduler only) */
    uint64_t flush_mark;        /* jobs submitted when it was queued */
    atomic_int flushed;         /* 0 waiting, 1 done, 2 the store failed */
    int64_t stall_logged_ms, stall_start_ms, stalls_seen;
    bool done;
    int64_t recovered;          /* URLs the last run requested, outcome not stored */
    dispatchlog *dl;

    atomic_uint_fast64_t nudges;  /* bumped by every nudge (see nudge) */
    atomic_bool sleeping;         /* the scheduler is (about to be) waiting */

    /* what a response was: an HTML page parsed for links, robots.txt, a
     * redirect, a requisite (of any type); and links dropped by the parser */
    atomic_uint_fast64_t html_pages, robots_fetched, redirect_answers, requisite_answers;
    atomic_uint_fast64_t links_dropped[LINKS_DROP__COUNT];
    atomic_uint_fast64_t pages, fetch_errors, status_counts[600], bytes, links, links_rejected,
        links_out_of_scope, nofollow_skipped, redirects, redirects_too_long, truncated;
    atomic_uint_fast64_t links_rejected_by[URL_REJ_COUNT];
    atomic_uint_fast64_t errors_by_kind[FETCH_ERR_COUNT];
    /* requisites (see "requisites from CSS") */
    atomic_uint_fast64_t req_found, req_new, req_past_depth, css_sheets, css_refs, css_imports,
        css_dropped, css_truncated, spooled, spool_errors;
    sampler *smp;               /* the scheduler's: figures over time */
    recrawl *rc;                /* the re-crawl: history, due rows (recrawl.h) */
    int64_t run_start_ms;       /* wall clock: a one-pass run fetches a row once */

    /* cluster mode (crawl_set_cluster); cl.ob NULL: a single node */
    crawl_cluster cl;
    atomic_uint_fast64_t activity;   /* pushes, dispatches, forwards: see crawl_quiet */
    atomic_uint_fast64_t idle_at;    /* activity when the last drained run began */
    atomic_bool idle;                /* the scheduler saw drained twice (idle_at valid) */
    atomic_bool cl_end;              /* the whole cluster is quiescent: end the run */
    atomic_uint_fast64_t forwarded, forward_errors, unsent_fenced;
};

/* Links of one page for other nodes' slots, committed to the outbox
 * before the page's outcome (see hook_done). */
typedef struct obatch {
    outbox_link *v;
    size_t n, cap;
} obatch;

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
    linkmemo *memo;             /* with lp: its links so far (NULL: no memo) */
    uint64_t same_page;         /* links the memo settled (seen's dup_page) */
    sitemaps_fetch *smf;        /* while a sitemap body is parsed */
    cr_buf body;                /* robots.txt body */
    spool *sp;                  /* wire payload for the archive (digest only
                                   for the re-crawl); NULL: none */
    cr_buf headers, request;
    bool css;                   /* a 200 text/css body, gathered in css_body */
    cr_buf css_body;
    char ip[64];
    int64_t links_tested, links_new; /* this page's links that met the seen test */
    recrawl_job *rj;            /* what an earlier fetch left (NULL: none asked) */
    obatch ob;                  /* cluster: links for foreign slots */
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

/* ---- discovered URLs: scope, seen test, SQLite, frontier ---------------- */

typedef struct pending {
    crawl *c;
    int depth;
    int kind;
    size_t fetch_len;
    char fetch[];   /* the fetch form, what the frontier hands out */
} pending;

/* Pushes a new row: the frontier gets its fetch form. */
static void push_new(crawl *c, int64_t id, const char *fetch, size_t flen, int depth, int kind)
{
    size_t off, hl;
    char host[DB_HOST_MAX + 1];
    if (url_host(fetch, flen, &off, &hl) == 0 && hl <= DB_HOST_MAX) {
        memcpy(host, fetch + off, hl);
        host[hl] = '\0';
        frontier_push(c->fr, id, fetch, flen, host, depth, kind);
        atomic_fetch_add(&c->activity, 1); /* after the push: see crawl_quiet */
        nudge(c);
    }
}

/* Writer thread, after COMMIT of a Bloom-NO insert. */
static void on_inserted(void *ud, const db_result *r)
{
    pending *p = ud;
    if (r->status == 1)
        push_new(p->c, r->id, p->fetch, p->fetch_len, p->depth, p->kind);
    cr_free(p);
}

#define DISCOVER_OUT_OF_SCOPE 2

/* A URL found at depth through a link of kind, as its fetch form (what is
 * requested, scoped and archived; the first spelling found is the one
 * fetched) and its key (the seen test): 1 new and queued, 0 duplicate (or
 * no host), DISCOVER_OUT_OF_SCOPE, < 0 storage error. hops: the redirects
 * that led to it (stored with the row). A requisite names the page or
 * stylesheet it was found on (from, may be NULL), for
 * crawl.requisites_scope. */
static int admit(crawl *c, const char *fetch, size_t flen, const char *key, size_t klen,
                 int depth, int kind, int hops, int64_t parent);

static int discover_from(crawl *c, const char *fetch, size_t flen, const char *key, size_t klen,
                         int depth, int kind, int hops, int64_t parent, const char *from,
                         size_t from_len)
{
    scope_verdict v = kind == DB_KIND_REQUISITE && from != NULL
                          ? scope_check_requisite(c->sc, fetch, flen, depth, from, from_len)
                          : scope_check(c->sc, fetch, flen, depth, kind);
    if (v != SCOPE_ALLOWED) {
        bump(&c->links_out_of_scope);
        return DISCOVER_OUT_OF_SCOPE;
    }
    return admit(c, fetch, flen, key, klen, depth, kind, hops, parent);
}

static tctx *my_ctx(crawl *c);

static void obatch_free(obatch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        cr_free((void *)b->v[i].url);
        cr_free((void *)b->v[i].fetch_url);
        cr_free((void *)b->v[i].host);
    }
    cr_free(b->v);
    memset(b, 0, sizeof *b);
}

/* Cluster mode: a URL whose host is in another node's slot goes to the
 * outbox (the owner makes the seen test). Found on a page being fetched,
 * it waits in the page's batch, which hook_done commits before the page's
 * outcome; else (a seed, an API call) it is committed here. 0 (it is not
 * new here), or < 0 when it could not be kept. */
static int forward(crawl *c, const char *fetch, size_t flen, const char *key, size_t klen,
                   const char *host, size_t hl, uint32_t slot, int depth, int kind)
{
    bool same = flen == klen && memcmp(fetch, key, klen) == 0;
    tctx *t = my_ctx(c);
    fjob *j = t ? t->current : NULL;
    atomic_fetch_add(&c->activity, 1);
    if (j == NULL) {
        char h[DB_HOST_MAX + 1];
        if (hl > DB_HOST_MAX)
            return 0;
        memcpy(h, host, hl);
        h[hl] = '\0';
        outbox_link l = { .slot = slot, .url = key, .url_len = klen,
                          .fetch_url = same ? NULL : fetch, .fetch_url_len = same ? 0 : flen,
                          .host = h, .depth = depth, .kind = kind };
        int rc = outbox_add(c->cl.ob, &l, 1);
        if (rc < 0) {
            bump(&c->forward_errors);
            return rc;
        }
        bump(&c->forwarded);
        return 0;
    }
    obatch *b = &j->ob;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        outbox_link *v = cr_realloc(b->v, cap * sizeof *v);
        if (v == NULL)
            return -ENOMEM;
        b->v = v;
        b->cap = cap;
    }
    outbox_link *l = &b->v[b->n];
    memset(l, 0, sizeof *l);
    l->slot = slot;
    l->url = cr_strndup(key, klen);
    l->url_len = klen;
    l->fetch_url = same ? NULL : cr_strndup(fetch, flen);
    l->fetch_url_len = same ? 0 : flen;
    l->host = cr_strndup(host, hl);
    l->depth = depth;
    l->kind = kind;
    if (l->url == NULL || l->host == NULL || (!same && l->fetch_url == NULL)) {
        cr_free((void *)l->url);
        cr_free((void *)l->fetch_url);
        cr_free((void *)l->host);
        return -ENOMEM;
    }
    b->n++;
    return 0;
}

/* Commits j's foreign links to the outbox (durable on return 0). */
static int flush_forwards(crawl *c, fjob *j)
{
    if (j->ob.n == 0)
        return 0;
    int rc = outbox_add(c->cl.ob, j->ob.v, j->ob.n);
    if (rc < 0) {
        bump(&c->forward_errors);
        if (c->log)
            fprintf(c->log, "crawld: cluster: the outbox failed (%s); %s is fetched again\n",
                    strerror(-rc), j->url);
        return rc;
    }
    atomic_fetch_add_explicit(&c->forwarded, j->ob.n, memory_order_relaxed);
    obatch_free(&j->ob);
    return 0;
}

/* An in-scope URL: the seen test, and if new its row (queued) and its
 * place in the frontier, once the row is committed. parent: the row id of
 * the page it was found on (0: none), which retention's keep rule reads
 * (a page answering 304 re-reads no links). 1 new, 0 duplicate (or no
 * host; in cluster mode also a URL forwarded to its slot's owner), < 0
 * storage error. */
static int admit(crawl *c, const char *fetch, size_t flen, const char *key, size_t klen,
                 int depth, int kind, int hops, int64_t parent)
{
    size_t off, hl;
    if (url_host(fetch, flen, &off, &hl) < 0)
        return 0;
    uint32_t slot = 0;
    if (c->cl.ob != NULL && !c->cl.local(c->cl.arg, fetch + off, hl, &slot))
        return forward(c, fetch, flen, key, klen, fetch + off, hl, slot, depth, kind);
    pending *p = cr_malloc(sizeof *p + flen);
    if (p == NULL)
        return -ENOMEM;
    p->c = c;
    p->depth = depth;
    p->kind = kind;
    p->fetch_len = flen;
    memcpy(p->fetch, fetch, flen);
    verifier_row row = { .u = { .fetch_url = fetch, .fetch_url_len = flen, .host = fetch + off,
                                .host_len = hl, .depth = depth, .kind = kind,
                                .state = DB_STATE_QUEUED, .hops = hops, .parent = parent },
                         .on_new = on_inserted, .ud = p };
    int r = seen_test(c->s, key, klen, true, &row);
    if (r < 0 || r != SEEN_NEW_BLOOM)
        cr_free(p); /* the callback owns p only when an async insert was queued */
    if (r < 0)
        return r;
    if (r == SEEN_NEW_VERIFIED && row.id > 0)
        push_new(c, row.id, fetch, flen, depth, kind);
    return seen_is_new((seen_result)r) ? 1 : 0;
}

static void count_rejected(crawl *c, url_reject why)
{
    bump(&c->links_rejected);
    if ((unsigned)why < URL_REJ_COUNT)
        bump(&c->links_rejected_by[why]);
}

static int discover(crawl *c, const char *fetch, size_t flen, const char *key, size_t klen,
                    int depth, int kind, int hops, int64_t parent)
{
    return discover_from(c, fetch, flen, key, klen, depth, kind, hops, parent, NULL, 0);
}

/* crawler/sitemaps' admit: a sitemap row is scoped as a seed is (a host's
 * robots.txt vouched for it; exclusions and traps still apply), a listed
 * page as a link at depth 0 (the scope mode applies); both enter at the
 * depth given, a listed page as DB_KIND_SEED. A known page with a
 * <lastmod> goes to the re-crawl schedule: db_make_due makes it due now
 * when it was last fetched before lastmod_ms (a row still uncommitted has
 * no fetch to be stale). */
static int sitemap_admit(void *ud, const char *fetch, size_t flen, const char *key, size_t klen,
                         int depth, int kind, int64_t lastmod_ms)
{
    crawl *c = ud;
    int as = kind == DB_KIND_SITEMAP ? DB_KIND_SEED : DB_KIND_NAVIGATION;
    if (scope_check(c->sc, fetch, flen, 0, as) != SCOPE_ALLOWED)
        return SITEMAPS_OUT_OF_SCOPE;
    int r = admit(c, fetch, flen, key, klen, depth, kind, 0, 0);
    if (r == 0 && kind != DB_KIND_SITEMAP && lastmod_ms > 0) {
        int64_t id = verifier_row_id(c->ver, key, klen);
        if (id > 0 && db_make_due(c->d, id, lastmod_ms, 0) < 0)
            return -EIO;
    }
    return r;
}

/* A requisite of the page or stylesheet j (its fetch form and key):
 * discovered one level deeper, counted. */
static int discover_requisite(crawl *c, fjob *j, const char *fetch, size_t flen, const char *key,
                              size_t klen, int kind)
{
    bump(&c->req_found);
    int depth = j->fj.depth + 1;
    int r = discover_from(c, fetch, flen, key, klen, depth, kind, 0, j->fj.id, j->url,
                          j->url_len);
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

/* Fencing at the last moment (the gate already checked at dispatch): a
 * node paused past its lease between dispatch and send must not send, as
 * the slot's new owner may be fetching the host by now. The job goes back
 * to the frontier (cancelled), behind the gate. */
static int hook_may_send(void *ctx, const fetch_job *job)
{
    crawl *c = ctx;
    fjob *j = job->user;
    if (c->cl.may_fetch == NULL || c->cl.may_fetch(c->cl.arg, j->fj.host))
        return 0;
    bump(&c->unsent_fenced);
    return 1;
}

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
    recrawl_note_headers(j->rj, r->headers, r->headers_len);
    if ((c->w || j->rj) && j->sp == NULL) { /* the archive, or the re-crawl's payload digest */
        spool_opts so = { .dir = c->w ? c->cfg->storage.state_dir : NULL,
                          .mem_cap = (size_t)c->cfg->archive.spool_mem_bytes };
        j->sp = spool_new(&so);
        if (j->sp)
            spool_begin(j->sp, j->headers.data, j->headers.len);
    }
    if (j->fj.kind == DB_KIND_SITEMAP && !j->fj.is_robots) {
        tctx *t = my_ctx(c);
        if (c->sm && t && r->status == 200 && j->smf == NULL)
            j->smf = sitemaps_fetch_begin(c->sm, t->uc, j->url, j->url_len, j->fj.depth);
        return 0; /* read by the sitemap parser only */
    }
    if (!j->fj.is_robots && r->status == 200 && is_html(r->content_type)) {
        tctx *t = my_ctx(c);
        links_parser *lp = NULL;
        linkmemo *memo = NULL;
        if (t && t->npool > 0) {
            t->npool--;
            lp = t->pool[t->npool];
            memo = t->memos[t->npool];
        } else if (t) {
            lp = links_new(&c->lopts, on_link, t);
            /* none (no memory, or a cluster node, which forwards every
             * foreign link): every link is worked out */
            memo = lp && c->cl.ob == NULL ? linkmemo_new() : NULL;
        }
        j->lp = lp;
        j->memo = memo;
        if (lp)
            links_reset(lp, r->content_type);
        if (memo)
            linkmemo_reset(memo);
    }
    if (!j->fj.is_robots && r->status == 200 && is_css(r->content_type))
        j->css = true;
    return 0;
}

/* What the page memo keeps of a link's first occurrence (linkmemo.h):
 * rejected by the canonicalizer (and why), or tested by the seen-set, new
 * or not (a repeat is a duplicate either way). Out-of-scope links, errors
 * and cluster forwarding are not kept: they are worked out again.
 * Tried and not kept (2026-12-07): memos shared by the pages of one
 * folder (eight per thread; a reference not starting with '?' or '#'
 * resolves the same against any page of the folder): on the jdk bench it
 * settled 133k of the 418k duplicates the recent cache settles, CPU
 * median 2.82 -> 2.75 s (-2.5%, 5 interleaved rounds): not worth another
 * duplicate layer in every report. */
enum { MEMO_REJECTED = 1u << 8, MEMO_TESTED = 2u << 8 };

/* A link as the parser found it: resolve, then discover; a repeat of one
 * met earlier on the page takes the first one's answer from the memo. */
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
    linkmemo *m = c->cl.ob == NULL && l->url_len <= (size_t)c->cfg->canon.max_url_bytes
                      ? j->memo
                      : NULL;
    if (m != NULL) {
        bool frag;
        size_t span = url_ref_span(l->url, l->url_len, &frag);
        unsigned tag = (unsigned)l->cls << 2 | (unsigned)(l->base != NULL) << 1 | (unsigned)frag;
        uint32_t v;
        if (linkmemo_get(m, tag, l->url, span, &v)) {
            if (v & MEMO_REJECTED) {
                count_rejected(c, (url_reject)(v & 0xff));
                return;
            }
            if (l->cls == LINKS_REQUISITE)
                bump(&c->req_found);
            j->links_tested++;
            j->same_page++;
            return;
        }
    }
    url_reject why;
    const char *b = j->url;
    size_t blen = j->url_len;
    if (l->base && url_canon_forms(t->uc, j->url, j->url_len, l->base, l->base_len, &t->base,
                                   NULL, &why) == 0) {
        b = t->base.data;
        blen = t->base.len;
    }
    int rc = url_canon_forms(t->uc, b, blen, l->url, l->url_len, &t->out, &t->key, &why);
    if (rc < 0) {
        count_rejected(c, why);
        if (m != NULL && rc == -EINVAL)
            linkmemo_put(m, MEMO_REJECTED | (uint32_t)why);
    } else {
        int kind = l->cls == LINKS_REQUISITE && scope_in_scope(c->sc, j->url, j->url_len)
                       ? DB_KIND_REQUISITE
                       : DB_KIND_NAVIGATION;
        int r = l->cls == LINKS_REQUISITE
                    ? discover_requisite(c, j, t->out.data, t->out.len, t->key.data, t->key.len,
                                         kind)
                    : discover(c, t->out.data, t->out.len, t->key.data, t->key.len,
                               j->fj.depth + 1, kind, 0, j->fj.id);
        if (r == 0 || r == 1) {
            j->links_tested++;
            j->links_new += r;
            if (m != NULL)
                linkmemo_put(m, MEMO_TESTED);
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
    } else if (j->smf) {
        sitemaps_fetch_feed(j->smf, p, n);
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
    url_reject why = URL_OK;
    if (url_canon_forms(t->uc, j->url, j->url_len, ref->url, ref->len, &t->out, &t->key, &why) <
        0) {
        count_rejected(c, why);
        return;
    }
    bump(&c->css_refs);
    if (ref->kind == CSS_REF_IMPORT)
        bump(&c->css_imports);
    int r = discover_requisite(c, j, t->out.data, t->out.len, t->key.data, t->key.len,
                               DB_KIND_REQUISITE);
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
    if (j->sp)
        spool_append(j->sp, p, n); /* a failure is sticky: archive() says it */
    return 0;
}

static void fjob_free(fjob *j)
{
    cr_free(j->url);
    cr_free(j->location);
    cr_free(j->ctype);
    cr_buf_release(&j->body);
    spool_free(j->sp);
    cr_buf_release(&j->headers);
    cr_buf_release(&j->request);
    cr_buf_release(&j->css_body);
    sitemaps_fetch_abort(j->smf);
    recrawl_job_free(j->rj);
    obatch_free(&j->ob);
    cr_free(j);
}

static int submit(crawl *c, fjob *j, long timeout_ms)
{
    fetch_job fj = { .id = (uint64_t)j->fj.id, .url = j->url, .hops = (unsigned)j->hops, .user = j };
    if (j->rj && j->rj->conditional) {
        fetch_validators v = { j->rj->prior.etag, j->rj->prior.last_modified };
        return fetcher_submit_validated(c->f, &fj, &v, timeout_ms);
    }
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

/* Archives the fetch; true with *out filled when a record was written. A
 * re-fetch names the stored original: a 304 becomes a server-not-modified
 * revisit, the same payload an identical-payload-digest one. */
static bool archive(crawl *c, fjob *j, const fetch_result *r, warc_result *out)
{
    if (c->w == NULL || j->status <= 0 || j->headers.len == 0)
        return false;
    int se = j->sp ? spool_error(j->sp) : -ENOMEM;
    if (se < 0) { /* the body could not be kept: no record rather than a wrong one */
        bump(&c->spool_errors);
        if (c->log)
            fprintf(c->log, "crawld: WARC record not written for %s: body spool: %s\n", j->url,
                    strerror(-se));
        return false;
    }
    if (spool_spilled(j->sp))
        bump(&c->spooled);
    bool same_hdr = spool_header_len(j->sp) == j->headers.len;
    warc_fetch wf = { .uri = j->url, .ip = j->ip, .date_ms = r->start_unix_ms,
                      .request = j->request.data, .request_len = j->request.len,
                      .headers = j->headers.data, .headers_len = j->headers.len,
                      .payload = spool_data(j->sp), .payload_len = (size_t)spool_len(j->sp),
                      .payload_read = spool_read, .payload_ctx = j->sp,
                      .payload_sha1 = spool_payload_sha1(j->sp),
                      .block_sha1 = same_hdr ? spool_block_sha1(j->sp) : NULL,
                      .status = j->status, .mime = j->ctype, .truncated = r->truncated };
    warc_prior prior;
    if (recrawl_warc_prior(j->rj, j->url, &prior)) {
        wf.prior = &prior;
        wf.not_modified = j->status == 304;
    }
    int rc = warc_write_fetch(c->w, &wf, out);
    if (rc < 0 && c->log)
        fprintf(c->log, "crawld: WARC write failed for %s: %s\n", j->url, strerror(-rc));
    return rc == 0;
}

/* A pause the frontier put on host after an answer (429, 503, failures in
 * a row, robots.txt unreachable) goes in the dispatch log as a request
 * whose spacing is the pause, so that it holds across a restart too. Only
 * after an answer that can pause: the lookup takes the frontier's lock. */
static void note_pause(crawl *c, const char *host, uint64_t key, int status)
{
    if (host == NULL || (status != 0 && status != 429 && status < 500))
        return;
    int64_t ms = frontier_host_pause_ms(c->fr, host, mono_ms());
    if (ms <= 0)
        return;
    dispatchlog_entry e = { .id = 0, .attempt = 1, .host_key = key, .started_ms = cr_wall_ms(),
                            .spacing_ms = ms };
    dispatchlog_note(c->dl, &e);
}

static void finish_robots(crawl *c, fjob *j, const fetch_result *r)
{
    int status = r->error == FETCH_OK || error_kind(r->error) == FRONTIER_ERR_NONE ? j->status : 0;
    if (status >= 300 && status < 400 && j->location && j->hops < ROBOTS_MAX_HOPS) {
        tctx *t = my_ctx(c);
        cr_buf out;
        cr_buf_init(&out, 0);
        url_reject why;
        if (t && url_canon_forms(t->uc, j->url, strlen(j->url), j->location,
                                 strlen(j->location), &out, NULL, &why) == 0) {
            fjob *next = cr_calloc(1, sizeof *next);
            if (next) {
                next->c = c;
                next->fj = j->fj;
                next->url = cr_buf_take(&out);
                next->url_len = next->url ? strlen(next->url) : 0;
                next->hops = j->hops + 1;
                cr_buf_init(&next->body, 0);
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
    tctx *t = my_ctx(c);
    if (c->sm && t && j->fj.url)
        sitemaps_robots(c->sm, t->uc, j->fj.url, status, j->body.data, j->body.len);
    const char *host = j->fj.host;
    uint64_t key = j->fj.host_key;
    frontier_robots_done(c->fr, &j->fj, &o, j->body.data, j->body.len, mono_ms_ceil());
    note_pause(c, host, key, status);
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
        links_stats ls;
        links_stats_get(j->lp, &ls);
        for (int k = 0; k < LINKS_DROP__COUNT; k++)
            if (ls.dropped[k])
                atomic_fetch_add_explicit(&c->links_dropped[k], ls.dropped[k],
                                          memory_order_relaxed);
        bump(&c->html_pages);
        seen_count_page_repeats(c->s, j->same_page);
        if (t->npool < POOL_PER_THREAD) {
            t->memos[t->npool] = j->memo;
            t->pool[t->npool++] = j->lp;
        } else {
            links_free(j->lp);
            linkmemo_free(j->memo);
        }
        j->lp = NULL;
        j->memo = NULL;
        atomic_fetch_add_explicit(&c->links, j->links, memory_order_relaxed);
    }
    bool answered = j->status > 0 && error_kind(r->error) == FRONTIER_ERR_NONE;
    warc_result wr;
    bool archived = false;
    char digest[38] = "";
    if (j->sp && spool_finish(j->sp) == 0)
        warc_digest_text(spool_payload_sha1(j->sp), digest);
    if (r->error == FETCH_ERR_ABORTED || r->error == FETCH_ERR_CANCELLED) {
        frontier_return(c->fr, &j->fj);
        fjob_free(j);
        nudge(c);
        return;
    }
    if (answered) {
        bump(&c->pages);
        if (j->fj.is_robots)
            bump(&c->robots_fetched);
        else if (j->status >= 300 && j->status < 400 && j->status != 304)
            bump(&c->redirect_answers);
        else if (j->fj.kind == DB_KIND_REQUISITE)
            bump(&c->requisite_answers);
        if (j->status >= 100 && j->status < 600)
            bump(&c->status_counts[j->status]);
        atomic_fetch_add_explicit(&c->bytes, r->raw_bytes, memory_order_relaxed);
        if (r->truncated)
            bump(&c->truncated);
        archived = archive(c, j, r, &wr);
        if (j->css)
            scan_stylesheet(c, j, r->truncated);
        if (j->smf) {
            sitemaps_fetch_end(j->smf, r->truncated, c->log);
            j->smf = NULL;
        }
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
    tctx *self = my_ctx(c);
    if (self)
        self->current = j; /* the redirect target may be another node's */
    /* a redirect's Location is a discovered link, one hop further */
    if (answered && j->status >= 300 && j->status < 400 && j->location) {
        bump(&c->redirects);
        if (j->hops + 1 > c->cfg->fetch.max_redirects) {
            bump(&c->redirects_too_long);
        } else {
            tctx *t = my_ctx(c);
            cr_buf out, key;
            cr_buf_init(&out, 0);
            cr_buf_init(&key, 0);
            url_reject why = URL_OK;
            int rr = t ? url_canon_forms(t->uc, j->url, strlen(j->url), j->location,
                                         strlen(j->location), &out, &key, &why)
                       : -EINVAL;
            if (rr == 0) {
                int kind = j->fj.kind == DB_KIND_REQUISITE || j->fj.kind == DB_KIND_SITEMAP
                               ? j->fj.kind
                               : DB_KIND_REDIRECT;
                discover(c, out.data, out.len, key.data, key.len, j->fj.depth + 1, kind,
                         j->hops + 1, j->fj.id);
            } else {
                count_rejected(c, why);
            }
            cr_buf_release(&out);
            cr_buf_release(&key);
        }
    }
    if (self)
        self->current = NULL;
    if (c->cl.ob != NULL && flush_forwards(c, j) < 0) {
        /* its links are not kept: no outcome, the page is fetched again */
        frontier_return(c->fr, &j->fj);
        fjob_free(j);
        nudge(c);
        return;
    }
    char reason[512];
    snprintf(reason, sizeof reason, "%s", r->reason ? r->reason : "");
    frontier_outcome o = { .status = answered ? j->status : 0, .error = error_kind(r->error),
                           .error_text = reason[0] ? reason : NULL, .response_ms = r->total_ms,
                           .retry_after_s = j->retry_after_s, .bytes = (int64_t)r->decoded_bytes,
                           .content_type = j->ctype, .links = j->links_tested,
                           .links_new = j->links_new };
    /* the row's fetch history before its outcome (see db_record_history) */
    recrawl_fetch rf = { .id = j->fj.id, .url = j->url, .url_len = j->url_len,
                         .host = j->fj.host, .status = j->status, .answered = answered,
                         .truncated = r->truncated, .w = archived ? &wr : NULL,
                         .payload_digest = digest[0] ? digest : NULL,
                         .payload_len = j->sp ? (size_t)spool_len(j->sp) : 0,
                         .now_ms = cr_wall_ms() };
    recrawl_done(c->rc, j->rj, &rf);
    const char *host = j->fj.host;
    uint64_t key = j->fj.host_key;
    frontier_done(c->fr, &j->fj, &o, mono_ms_ceil());
    note_pause(c, host, key, o.status);
    fjob_free(j);
    /* no nudge: hook_room comes next on this thread and refills the slot */
}

/* Takes the frontier's next job and submits it: FRONTIER_JOB when one was
 * submitted, else what frontier_next said (FRONTIER_WAIT with *wake). */
static int dispatch(crawl *c, int64_t *wake)
{
    frontier_job fj;
    if (db_is_stalled(c->d)) {
        /* no fetch whose outcome cannot be recorded: wait for the store */
        *wake = mono_ms() + 100;
        return FRONTIER_WAIT;
    }
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
    dispatchlog_entry de = { .id = fj.id, .attempt = fj.attempt, .host_key = fj.host_key,
                             .started_ms = cr_wall_ms(), .spacing_ms = fj.spacing_ms };
    dispatchlog_note(c->dl, &de); /* before the request can leave */
    j->url = cr_strdup(fj.url);
    j->url_len = j->url ? strlen(j->url) : 0;
    /* a redirect target's hops are stored with its row, so max_redirects
     * holds across a restart */
    j->hops = fj.kind == DB_KIND_REDIRECT || fj.kind == DB_KIND_SITEMAP
                  ? verifier_row_hops(c->ver, fj.id)
                  : 0;
    j->rj = fj.is_robots ? NULL : recrawl_prepare(c->rc, fj.id);
    cr_buf_init(&j->body, 0);
    cr_buf_init(&j->headers, 0);
    cr_buf_init(&j->request, 0);
    cr_buf_init(&j->css_body, (size_t)c->cfg->fetch.max_body_bytes);
    if (j->url == NULL || submit(c, j, 0) < 0) {
        frontier_return(c->fr, &j->fj);
        fjob_free(j);
        return FRONTIER_WAIT;
    }
    atomic_fetch_add(&c->activity, 1);
    return FRONTIER_JOB;
}

/* Fetcher thread, after transfers ended: refills its free slots right here
 * (no scheduler round trip). When the frontier has nothing ready the
 * scheduler is nudged, since only it waits for politeness times. */
static void hook_room(void *ctx, unsigned free_slots)
{
    crawl *c = ctx;
    pthread_mutex_lock(&c->lock);
    bool stop = c->stop_level > 0;
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

/* The retention deleted row id (writer thread): the frontier, made after
 * the seen-set but before the first tick, forgets it. */
static void forget_row(void *arg, int64_t id)
{
    crawl *c = arg;
    if (c->fr != NULL)
        frontier_forget_id(c->fr, id);
}

static int open_seen(crawl *c, char *err, size_t errlen)
{
    snprintf(c->snap_path, sizeof c->snap_path, "%s/%s", c->cfg->storage.state_dir, SNAPSHOT_NAME);
    c->ver = verifier_new(c->d);
    if (c->ver == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    bloom_params bp;
    wire_bloom_params(c->cfg, &bp);
    int verify = c->cfg->dedup.verify == VERIFY_NEVER    ? SEEN_VERIFY_NEVER
                 : c->cfg->dedup.verify == VERIFY_ALWAYS ? SEEN_VERIFY_ALWAYS
                                                         : SEEN_VERIFY_IN_SCOPE;
    seen_opts so = { verify, (size_t)c->cfg->dedup.recent_cache };
    gens_opts go;
    wire_gens_opts(c->cfg, &go);
    c->s = verifier_open_seen(c->ver, c->d, c->snap_path, &bp, &go, &so, c->log, "crawld", err,
                              errlen);
    if (c->s != NULL && go.retention_s > 0) {
        c->ret = retention_new(c->s, c->d, forget_row, c, c->log);
        if (c->ret == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return c->s ? 0 : -1;
}

/* Politeness across runs: the hosts an earlier run asked (its dispatch
 * log), and how long from now (wall clock) each must wait. */
typedef struct holdset {
    int64_t now_wall, timeout_ms, delay_ms;
    frontier_hold_entry *v;
    size_t n, cap;
    int64_t longest;
    bool short_of_memory;
} holdset;

/* How long after a request started at most its answer ends: the fetch's
 * timeout, and slack for its wait between the log and libcurl. */
#define HOLD_SLACK_MS 5000

/* A start an earlier run logged (robots.txt fetches too): its host waits
 * as if the answer ended at the latest it can have (now, or the timeout
 * after the start, whichever is sooner), then the spacing the host had. */
static int holdset_add(void *ud, const dispatchlog_entry *e)
{
    holdset *hs = ud;
    if (e->host_key == 0 || e->started_ms <= 0)
        return 0; /* unknown (a log of the first layout) */
    int64_t end = e->started_ms + hs->timeout_ms + HOLD_SLACK_MS;
    if (end > hs->now_wall)
        end = hs->now_wall;
    int64_t wait = end + (e->spacing_ms >= 0 ? e->spacing_ms : hs->delay_ms) - hs->now_wall;
    if (wait <= 0)
        return 0;
    if (hs->n == hs->cap) {
        size_t cap = hs->cap ? hs->cap * 2 : 256;
        frontier_hold_entry *v = cr_realloc(hs->v, cap * sizeof *v);
        if (v == NULL) {
            hs->short_of_memory = true;
            return 1;
        }
        hs->v = v;
        hs->cap = cap;
    }
    hs->v[hs->n++] = (frontier_hold_entry){ e->host_key, wait };
    if (wait > hs->longest)
        hs->longest = wait;
    return 0;
}

int crawl_hold_logged(crawl *c, dispatchlog *l, int64_t *longest)
{
    holdset hs = { .now_wall = cr_wall_ms(), .timeout_ms = c->cfg->fetch.timeout_ms,
                   .delay_ms = c->cfg->politeness.delay_ms };
    dispatchlog_scan(l, holdset_add, &hs);
    int rc = hs.short_of_memory ? -ENOMEM
             : hs.n > 0         ? frontier_hold(c->fr, hs.v, hs.n, mono_ms())
                                : 0;
    cr_free(hs.v);
    if (longest != NULL)
        *longest = rc == 0 ? hs.longest : 0;
    return rc;
}

typedef struct refetch {
    db_reader *rd;
    int64_t *ids;
    size_t n, cap;
} refetch;

/* A start the last run logged: kept when its outcome was never stored. */
static int lost_outcome(void *ud, const dispatchlog_entry *e)
{
    refetch *r = ud;
    int64_t id = e->id;
    int attempt = e->attempt, state = 0, attempts = 0;
    if (id <= 0 || db_reader_row(r->rd, id, &state, &attempts, NULL) < 0)
        return 0;
    if ((state != DB_STATE_QUEUED && state != DB_STATE_IN_FLIGHT) || attempts >= attempt)
        return 0;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 256;
        int64_t *v = cr_realloc(r->ids, cap * sizeof *v);
        if (v == NULL)
            return 1;
        r->ids = v;
        r->cap = cap;
    }
    r->ids[r->n++] = id;
    return 0;
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Opens the dispatch log and says how many URLs the last run requested
 * without storing their outcome: exactly those are fetched again. Its
 * entries stay for start_dispatch_log. */
static int open_dispatch_log(crawl *c, char *err, size_t errlen)
{
    int clean = 1;
    c->dl = dispatchlog_open(c->cfg->storage.state_dir, &clean, err, errlen);
    if (c->dl == NULL)
        return -1;
    refetch r = { .rd = db_reader_open(c->d, err, errlen) };
    if (r.rd == NULL)
        return -1;
    dispatchlog_scan(c->dl, lost_outcome, &r);
    db_reader_free(r.rd);
    size_t unique = 0;
    if (r.n > 0) {
        qsort(r.ids, r.n, sizeof *r.ids, cmp_id);
        for (size_t i = 0; i < r.n; i++)
            unique += i == 0 || r.ids[i] != r.ids[i - 1];
    }
    cr_free(r.ids);
    c->recovered = (int64_t)unique;
    if ((!clean || unique > 0) && c->log)
        fprintf(c->log, "crawld: the last run %s: %zu URLs had been requested without their outcome"
                        " being stored (in flight, or inside the commit window); they will be"
                        " fetched again, and no others\n",
                clean ? "was stopped with fetches in flight" : "did not end cleanly", unique);
    return 0;
}

/* Once the frontier is made: the last run's requests hold their hosts,
 * then the log starts this run. */
static int start_dispatch_log(crawl *c, char *err, size_t errlen)
{
    int64_t longest = 0;
    if (crawl_hold_logged(c, c->dl, &longest) < 0) {
        snprintf(err, errlen, "frontier: out of memory");
        return -1;
    }
    if (longest > 0 && c->log)
        fprintf(c->log, "crawld: politeness: the last run's requests hold their hosts up to %.1f s"
                        " before the next one\n", (double)longest / 1000.0);
    dispatchlog_reset(c->dl);
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
    pthread_mutex_init(&c->slot_mu, NULL);
    pthread_cond_init(&c->wake, NULL);
    char msg[512];
    db_opts dbo;
    wire_db_opts(cfg, &dbo);
    warc_opts wo;
    wire_warc_opts(cfg, c->archive_dir, sizeof c->archive_dir, &wo);
    if (verifier_check_state(cfg->storage.state_dir, SNAPSHOT_NAME, c->archive_dir, err, errlen) < 0)
        goto fail;
    c->d = db_open(cfg->storage.state_dir, &dbo, err, errlen);
    if (c->d == NULL)
        goto fail;
    if (open_seen(c, err, errlen) < 0)
        goto fail;
    if (open_dispatch_log(c, err, errlen) < 0)
        goto fail;
    scope_opts so;
    wire_scope_opts(cfg, &so);
    c->sc = scope_new(&so, msg, sizeof msg);
    if (c->sc == NULL) {
        snprintf(err, errlen, "scope: %s", msg);
        goto fail;
    }
    if (cfg->sitemaps.enabled) {
        sitemaps_opts smo;
        wire_sitemaps_opts(cfg, c->sc, &smo);
        c->sm = sitemaps_new(&smo, sitemap_admit, c);
        if (c->sm == NULL) {
            snprintf(err, errlen, "sitemaps: out of memory");
            goto fail;
        }
    }
    frontier_opts fo;
    wire_frontier_opts(cfg, &fo);
    c->fr = frontier_new(&fo, c->d, err, errlen);
    if (c->fr == NULL)
        goto fail;
    if (start_dispatch_log(c, err, errlen) < 0)
        goto fail;
    c->run_start_ms = cr_wall_ms();
    c->rc = recrawl_new(c->d, cfg, err, errlen);
    if (c->rc == NULL)
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
    c->uc = url_canon_new(&up);
    if (c->threads == NULL || c->uc == NULL) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < c->nthreads; i++) {
        c->threads[i].uc = url_canon_new(&up);
        cr_buf_init(&c->threads[i].base, 0);
        cr_buf_init(&c->threads[i].out, 0);
        cr_buf_init(&c->threads[i].key, 0);
        if (c->threads[i].uc == NULL) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    }
    if (cfg->archive.warc) {
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
                          .on_done = hook_done, .on_room = hook_room,
                          .may_send = hook_may_send, .ctx = c };
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
    cr_buf out, key;
    cr_buf_init(&out, 0);
    cr_buf_init(&key, 0);
    url_reject rej;
    pthread_mutex_lock(&c->api_lock);
    int rc = url_canon_forms(c->uc, NULL, 0, url, len, &out, &key, &rej);
    pthread_mutex_unlock(&c->api_lock);
    if (rc < 0) {
        snprintf(why, whylen, "%s", rc == -EINVAL ? url_reject_str(rej) : "out of memory");
        cr_buf_release(&out);
        cr_buf_release(&key);
        return -EINVAL;
    }
    scope_add_seed(c->sc, out.data, out.len);
    rc = discover(c, out.data, out.len, key.data, key.len, 0, DB_KIND_SEED, 0, 0);
    if (c->sm && !c->cfg->politeness.obey_robots && rc >= 0) {
        /* no robots.txt is asked, so the seed's host's /sitemap.xml is
         * queued here (sitemaps_robots as for "no robots.txt") */
        pthread_mutex_lock(&c->api_lock);
        sitemaps_robots(c->sm, c->uc, out.data, 404, NULL, 0);
        pthread_mutex_unlock(&c->api_lock);
    }
    if (rc < 0)
        snprintf(why, whylen, "the database failed");
    cr_buf_release(&out);
    cr_buf_release(&key);
    nudge(c);
    return rc < 0 ? -EIO : rc == DISCOVER_OUT_OF_SCOPE ? 0 : rc;
}

int crawl_dedup_url(crawl *c, const char *url, size_t len)
{
    cr_buf out, key;
    cr_buf_init(&out, 0);
    cr_buf_init(&key, 0);
    url_reject rej;
    pthread_mutex_lock(&c->api_lock);
    int rc = url_canon_forms(c->uc, NULL, 0, url, len, &out, &key, &rej);
    pthread_mutex_unlock(&c->api_lock);
    if (rc < 0) {
        rc = -EINVAL;
    } else if (scope_in_scope(c->sc, out.data, out.len)) {
        /* in scope: queued and pushed to the frontier, as crawl.h says */
        rc = admit(c, out.data, out.len, key.data, key.len, 0, DB_KIND_NAVIGATION, 0, 0);
        nudge(c);
    } else {
        size_t off = 0, hl = 0;
        url_host(out.data, out.len, &off, &hl);
        verifier_row row = { .u = { .fetch_url = out.data, .fetch_url_len = out.len,
                                    .host = out.data + off, .host_len = hl,
                                    .kind = DB_KIND_NAVIGATION, .state = DB_STATE_SEEN_ONLY } };
        int r = seen_test(c->s, key.data, key.len, false, &row);
        rc = r < 0 ? r : seen_is_new((seen_result)r) ? 1 : 0;
    }
    cr_buf_release(&out);
    cr_buf_release(&key);
    return rc;
}

/* ---- the scheduler ------------------------------------------------------ */

void crawl_stop(crawl *c) { crawl_stop_by(c, "request"); }

void crawl_stop_by(crawl *c, const char *who)
{
    pthread_mutex_lock(&c->lock);
    if (c->end == END_RUNNING) {
        c->end = END_STOPPED;
        snprintf(c->stopped_by, sizeof c->stopped_by, "%s", who);
    }
    if (c->stop_level < 2)
        c->stop_level++;
    int level = c->stop_level;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    /* a stop cannot wait for a failing store: anything blocked on the
     * writer (the scheduler's flush, a verified insert) returns now, and
     * what the writer held is redone by the next run */
    if (c->d && db_is_stalled(c->d))
        db_give_up(c->d);
    if (level == 2 && c->f)
        fetcher_abort(c->f); /* cuts the grace of a fetcher_stop already waiting */
}


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
    bool cl = c->cl.ob != NULL; /* a single node imports nothing */
    if (cl)
        pthread_mutex_lock(&c->slot_mu);
    int rc = verifier_snapshot(c->s, c->d, c->snap_path, err, sizeof err);
    if (cl)
        pthread_mutex_unlock(&c->slot_mu);
    if (rc < 0 && c->log)
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
    if (c->stop_level == 0 && atomic_load(&c->nudges) == nudged)
        pthread_cond_timedwait(&c->wake, &c->lock, &ts);
    atomic_store(&c->sleeping, false);
    pthread_mutex_unlock(&c->lock);
}

/* Writer thread: the scheduler's drained-check flush is done. */
static void on_flushed(void *ud, const db_result *r)
{
    crawl *c = ud;
    atomic_store(&c->flushed, r->status < 0 ? 2 : 1);
    nudge(c);
}

static void set_end(crawl *c, int end)
{
    pthread_mutex_lock(&c->lock);
    if (c->end == END_RUNNING)
        c->end = end;
    pthread_mutex_unlock(&c->lock);
}

/* The scheduler's watch on the store: says on the log when a stall starts
 * (and every 10 s while it lasts) and when it ends. Returns the store's
 * error once the writer has given up, else 0. While stalled, dispatch
 * hands out nothing (see dispatch), so no page is fetched whose outcome
 * cannot be recorded. */
static int watch_storage(crawl *c)
{
    if (!db_is_stalled(c->d) && !c->stall_logged)
        return 0;
    db_stats ds;
    char msg[512];
    int64_t now = mono_ms();
    db_get_stats(c->d, &ds);
    db_last_error(c->d, msg, sizeof msg);
    if (ds.failed != 0) {
        if (c->log)
            fprintf(c->log, "crawld: storage failed: %s\n", msg);
        set_end(c, END_STORAGE);
        return ds.failed;
    }
    if (ds.stalled) {
        if (!c->stall_logged) {
            c->stall_start_ms = now;
            c->stall_logged_ms = now - 10000;
        }
        if (now - c->stall_logged_ms >= 10000 && c->log)
            fprintf(c->log, "crawld: storage: %s; retrying in %.1f s; %lld operations held;"
                            " fetching paused (%s)\n",
                    db_error_reason(ds.stall_code), (double)ds.retry_in_ms / 1000.0,
                    (long long)ds.held, msg);
        if (now - c->stall_logged_ms >= 10000)
            c->stall_logged_ms = now;
        c->stall_logged = true;
    } else if (c->stall_logged) {
        if (c->log)
            fprintf(c->log, "crawld: storage: writes succeed again after %.1f s; fetching resumed\n",
                    (double)(now - c->stall_start_ms) / 1000.0);
        c->stall_logged = false;
    }
    return 0;
}

int crawl_run(crawl *c)
{
    int64_t next_snap = mono_ms() + c->cfg->dedup.snapshot_interval_s * 1000;
    int drained_checks = 0;
    uint64_t drained_mark = 0; /* jobs submitted when drained was last seen */
    int64_t next_stats = mono_ms();
    int64_t next_due = 0; /* the next look for due rows (recrawl_promote) */
    uint_fast64_t drain_act = 0; /* activity when the current drained run began */
    /* a single node ends when drained; a cluster node when the cluster is */
    bool ends_drained = !c->cfg->crawl.daemon && c->cl.ob == NULL;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int stop = c->stop_level;
        pthread_mutex_unlock(&c->lock);
        if (stop)
            break;
        if (atomic_load(&c->cl_end)) {
            set_end(c, END_DRAINED);
            c->done = true;
            break;
        }
        if (watch_storage(c) < 0) {
            crawl_stop_by(c, "storage failure");
            crawl_stop_by(c, "storage failure"); /* abort: no outcome can be stored */
            return -EIO;
        }
        int64_t now = mono_ms();
        bool stalled = db_is_stalled(c->d); /* then nothing may wait on the writer */
        if (now >= next_stats && !stalled) {
            persist_stats(c);
            next_stats = now + 2000;
        }
        if (c->ret != NULL && !stalled && retention_tick(c->ret, cr_wall_ms() / 1000) < 0 && c->log)
            fprintf(c->log, "crawld: retention: a step failed; it is retried\n");
        if (c->cfg->dedup.snapshot_interval_s > 0 && now >= next_snap && !stalled) {
            snapshot(c);
            next_snap = now + c->cfg->dedup.snapshot_interval_s * 1000;
        }
        if (now >= next_due && !stalled) {
            /* due rows in due order; a one-pass run only those fetched before it */
            int64_t got;
            do
                got = recrawl_promote(c->rc, c->fr, cr_wall_ms(),
                                      c->cfg->crawl.daemon ? 0 : c->run_start_ms, 10000);
            while (got == 10000);
            if (got < 0 && c->log)
                fprintf(c->log, "crawld: could not queue the due URLs (%s); trying again\n",
                        strerror((int)-got));
            if (got > 0)
                drained_checks = 0;
            next_due = now + 1000;
        }
        uint_fast64_t nudged = atomic_load(&c->nudges);
        uint_fast64_t act0 = atomic_load(&c->activity); /* before the frontier is asked */
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
            if (drained_checks >= 2 && act0 != atomic_load(&c->idle_at))
                drained_checks = 0; /* something happened since: look again */
            if (drained_checks == 0 && !c->flushing) {
                atomic_store(&c->idle, false);
                drain_act = act0;
            }
            if (drained_checks >= 2) {
                /* a drained daemon idles until a seed or an API call nudges it */
                wait_until(c, -1, nudged);
                continue;
            }
            /* rows may still be on their way to SQLite and the frontier: a
             * flush, without blocking this loop (a stall must stay visible
             * and a stop must stay possible while it waits) */
            if (!c->flushing) {
                atomic_store(&c->flushed, 0);
                c->flushing = true;
                c->flush_mark = fst.submitted;
                if (db_flush_async(c->d, on_flushed, c) < 0)
                    atomic_store(&c->flushed, 2);
            }
            if (atomic_load(&c->flushed) == 0) {
                wait_until(c, mono_ms() + 20, nudged);
                continue;
            }
            c->flushing = false;
            if (atomic_load(&c->flushed) == 2) {
                char msg[256];
                db_last_error(c->d, msg, sizeof msg);
                if (c->log)
                    fprintf(c->log, "crawld: storage failed: %s\n", msg);
                set_end(c, END_STORAGE);
                return -EIO;
            }
            if (c->flush_mark != fst.submitted) { /* work came after the flush began */
                drained_checks = 0;
                continue;
            }
            if (++drained_checks >= 2) {
                atomic_store(&c->idle_at, drain_act);
                atomic_store(&c->idle, true);
            }
            if (drained_checks >= 2 && ends_drained) {
                frontier_stats fs;
                frontier_get_stats(c->fr, &fs);
                set_end(c, fs.limit_reached ? END_MAX_PAGES : END_DRAINED);
                c->done = true;
                break;
            }
            wait_until(c, mono_ms() + 20, nudged);
            continue;
        }
        drained_checks = 0;
        atomic_store(&c->idle, false);
        wait_until(c, wake, nudged);
    }
    return 0;
}

/* ---- cluster mode -------------------------------------------------------- */

/* The gate: the frontier hands out a host only while this node holds its
 * slot's lease (fencing). */
static int cluster_gate(void *arg, const char *host)
{
    crawl *c = arg;
    return c->cl.may_fetch(c->cl.arg, host);
}

void crawl_set_cluster(crawl *c, const crawl_cluster *cl, int64_t gate_retry_ms)
{
    c->cl = *cl;
    frontier_set_gate(c->fr, cluster_gate, c, gate_retry_ms);
}

int crawl_admit_remote(crawl *c, const crawl_link *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *fetch = v[i].fetch_url ? v[i].fetch_url : v[i].url;
        size_t flen = v[i].fetch_url ? v[i].fetch_url_len : v[i].url_len;
        if (admit(c, fetch, flen, v[i].url, v[i].url_len, v[i].depth, v[i].kind, 0, 0) < 0)
            return -EIO;
    }
    /* durable, and every new row pushed (on_inserted runs before it returns) */
    return db_flush(c->d) < 0 ? -EIO : 0;
}

bool crawl_quiet(crawl *c, uint64_t *gen)
{
    bool idle = atomic_load(&c->idle);
    uint_fast64_t at = atomic_load(&c->idle_at), act = atomic_load(&c->activity);
    *gen = act;
    return idle && at == act;
}

void crawl_end_cluster(crawl *c)
{
    atomic_store(&c->cl_end, true);
    nudge(c);
}

/* The frontier's hosts that pick accepts (for busy and drop). */
typedef struct slot_hosts {
    db_host_pick_fn pick;
    void *arg;
    char **v;
    size_t n, cap;
    bool busy, oom;
} slot_hosts;

static int slot_host_cb(void *ud, const frontier_host_stats *hs)
{
    slot_hosts *sh = ud;
    if (!sh->pick(sh->arg, hs->host, strlen(hs->host)))
        return 0;
    sh->busy |= hs->in_flight > 0 || hs->robots_state == FRONTIER_ROBOTS_FETCHING;
    if (sh->n == sh->cap) {
        size_t cap = sh->cap ? 2 * sh->cap : 16;
        char **v = cr_realloc(sh->v, cap * sizeof *v);
        if (v == NULL) {
            sh->oom = true;
            return 1;
        }
        sh->v = v;
        sh->cap = cap;
    }
    sh->v[sh->n] = cr_strdup(hs->host);
    sh->oom |= sh->v[sh->n] == NULL;
    sh->n += sh->v[sh->n] != NULL;
    return sh->oom;
}

static void slot_hosts_release(slot_hosts *sh)
{
    for (size_t i = 0; i < sh->n; i++)
        cr_free(sh->v[i]);
    cr_free(sh->v);
}

int crawl_slot_busy(crawl *c, db_host_pick_fn pick, void *arg)
{
    slot_hosts sh = { .pick = pick, .arg = arg };
    frontier_foreach_host(c->fr, slot_host_cb, &sh);
    slot_hosts_release(&sh);
    return sh.busy || sh.oom;
}

int crawl_slot_export(crawl *c, const char *path, db_host_pick_fn pick, void *arg,
                      int64_t *rows, char *err, size_t errlen)
{
    slot_hosts sh = { .pick = pick, .arg = arg };
    *rows = 0;
    if (db_flush(c->d) < 0) {
        snprintf(err, errlen, "the store could not commit what it holds");
        return -EIO;
    }
    /* the hosts' politeness state travels too: next request, rules, pages */
    frontier_foreach_host(c->fr, slot_host_cb, &sh);
    frontier_host_state *fs = cr_calloc(sh.n ? sh.n : 1, sizeof *fs);
    db_slot_host *hs = cr_calloc(sh.n ? sh.n : 1, sizeof *hs);
    int rc = sh.oom || fs == NULL || hs == NULL ? -ENOMEM : 0;
    int64_t mono = mono_ms(), wall = cr_wall_ms();
    size_t n = 0;
    for (size_t i = 0; i < sh.n && rc == 0; i++) {
        int g = frontier_host_state_get(c->fr, sh.v[i], mono, &fs[n]);
        if (g == -ENOENT)
            continue;
        rc = g;
        hs[n] = (db_slot_host){ .host = sh.v[i], .next_at = wall + fs[n].wait_ms,
                                .paused_until = fs[n].paused_ms > 0 ? wall + fs[n].paused_ms : 0,
                                .last_ms = fs[n].last_ms, .pages = fs[n].pages,
                                .robots_status = fs[n].robots_status,
                                .robots_text = fs[n].robots_text,
                                .robots_len = fs[n].robots_len,
                                .robots_expires = wall + fs[n].robots_fresh_ms };
        n += rc == 0;
    }
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    else
        rc = db_slot_export_hosts(c->d, path, c->cfg->cluster.crawl_id, pick, arg, hs, n, rows,
                                  err, errlen);
    for (size_t i = 0; fs != NULL && i < n; i++)
        frontier_host_state_free(&fs[i]);
    cr_free(fs);
    cr_free(hs);
    slot_hosts_release(&sh);
    return rc;
}

static void forget_id(void *arg, int64_t id)
{
    frontier_forget_id(arg, id);
}

int crawl_slot_drop(crawl *c, db_host_pick_fn pick, void *arg, int64_t *rows, char *err,
                    size_t errlen)
{
    slot_hosts sh = { .pick = pick, .arg = arg };
    int rc = 0;
    *rows = 0;
    frontier_foreach_host(c->fr, slot_host_cb, &sh);
    if (sh.oom) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    for (size_t i = 0; i < sh.n && rc == 0; i++)
        if (frontier_forget_host(c->fr, sh.v[i]) == -EBUSY) {
            snprintf(err, errlen, "%s has a fetch in flight", sh.v[i]);
            rc = -EBUSY;
        }
    slot_hosts_release(&sh);
    /* db_slot_drop deletes on a connection of its own: an outcome still
     * queued for one of these rows would then meet no row (-ENOENT, kept
     * by the writer as its first error), so the queue is emptied first */
    if (rc == 0 && db_flush(c->d) < 0) {
        snprintf(err, errlen, "the store could not commit what it holds");
        rc = -EIO;
    }
    if (rc == 0)
        rc = db_slot_drop(c->d, pick, arg, forget_id, c->fr, rows, err, errlen);
    atomic_fetch_add(&c->activity, 1); /* see crawl_quiet */
    nudge(c);
    return rc;
}

typedef struct slot_load {
    crawl *c;
    db_host_pick_fn pick;
    void *arg;
    int rc;
} slot_load;

static int slot_key_cb(void *ud, int64_t id, const char *url, size_t url_len)
{
    (void)id;
    seen_add_known(((slot_load *)ud)->c->s, url, url_len);
    return 0;
}

static int slot_wake_cb(void *ud, const char *host, size_t host_len,
                        const int64_t counts[DB_STATE_COUNT])
{
    slot_load *sl = ud;
    char name[DB_HOST_MAX + 1];
    if (counts[DB_STATE_QUEUED] == 0 || host_len > DB_HOST_MAX || !sl->pick(sl->arg, host, host_len))
        return 0;
    memcpy(name, host, host_len);
    name[host_len] = '\0';
    sl->rc = frontier_wake_host(sl->c->fr, name);
    return sl->rc < 0 ? sl->rc : 0;
}

/* A host state of the checkpoint into the frontier, its times made this
 * process's (1 ms more: both clocks are read in whole ms). */
static int slot_host_state_cb(void *ud, const db_slot_host *h)
{
    slot_load *sl = ud;
    if (!sl->pick(sl->arg, h->host, strlen(h->host)))
        return 0;
    int64_t mono = mono_ms(), wall = cr_wall_ms();
    frontier_host_state st = {
        .wait_ms = h->next_at > wall ? h->next_at - wall + 1 : 0,
        .paused_ms = h->paused_until > wall ? h->paused_until - wall + 1 : 0,
        .last_ms = h->last_ms,
        .pages = h->pages,
        .robots_status = h->robots_status,
        .robots_text = (char *)h->robots_text,
        .robots_len = h->robots_text != NULL ? h->robots_len : 0,
        .robots_fresh_ms = h->robots_expires - wall,
    };
    sl->rc = frontier_host_state_set(sl->c->fr, h->host, &st, mono);
    return sl->rc < 0 ? sl->rc : 0;
}

int crawl_slot_import(crawl *c, const char *path, db_host_pick_fn pick, void *arg,
                      int64_t *rows, char *err, size_t errlen)
{
    int64_t mark = 0, n = -EIO;
    slot_load sl = { c, pick, arg, 0 };
    /* the hosts' politeness state first: no request before it allows */
    int rc = db_slot_hosts(path, slot_host_state_cb, &sl, err, errlen);
    if (rc == 0 && sl.rc < 0) {
        snprintf(err, errlen, "%s: the hosts' politeness state could not be set (%s)", path,
                 strerror(-sl.rc));
        rc = sl.rc;
    }
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&c->slot_mu);
    rc = db_slot_import(c->d, path, c->cfg->cluster.crawl_id, &mark, rows, err, errlen);
    db_reader *rd = rc == 0 ? db_reader_open(c->d, err, errlen) : NULL;
    /* the rows are committed: now the Bloom filter may vouch for them */
    if (rd != NULL)
        n = db_reader_scan_after(rd, mark, slot_key_cb, &sl);
    pthread_mutex_unlock(&c->slot_mu);
    if (rc < 0)
        return rc;
    if (n >= 0)
        n = db_reader_host_counts(rd, NULL, slot_wake_cb, &sl);
    db_reader_free(rd);
    if (n < 0) {
        snprintf(err, errlen, "reading the rows loaded from %s back failed (%lld)", path,
                 (long long)n);
        return (int)n;
    }
    atomic_fetch_add(&c->activity, 1); /* see crawl_quiet */
    nudge(c);
    return 0;
}

/* ---- figures ----------------------------------------------------------- */

typedef struct newest_read {
    crawl_status *st;
    size_t fill_cap;
} newest_read;

/* The newest filter's figures and per-stage fill (gens_with_newest). */
static void read_newest(bloom *bf, void *arg)
{
    newest_read *nr = arg;
    crawl_status *st = nr->st;
    bloom_stats_get(bf, &st->bloom);
    bloom_params bp;
    bloom_get_params(bf, &bp);
    for (unsigned sh = 0; sh < bp.shards; sh++)
        for (unsigned stg = 0; stg < bloom_stage_count(bf, sh); stg++) {
            bloom_stage_info si;
            if (bloom_stage_info_get(bf, sh, stg, &si) != 0)
                continue;
            st->fill_total++;
            if (st->fill_len < nr->fill_cap)
                st->fill[st->fill_len++] = (crawl_fill){ .shard = sh, .stage = stg, .fill = si.fill };
        }
}

static void read_cells(bloom *bf, void *arg)
{
    bloom_params bp;
    bloom_get_params(bf, &bp);
    *(size_t *)arg = (size_t)bp.shards * bp.max_stages;
}

void crawl_status_get(crawl *c, crawl_status *st, crawl_fill *fill, size_t fill_cap)
{
    memset(st, 0, sizeof *st);
    st->elapsed_s = (double)(mono_ms() - c->started_ms) / 1000.0;
    st->pages = atomic_load(&c->pages);
    st->html_pages = atomic_load(&c->html_pages);
    st->robots_fetched = atomic_load(&c->robots_fetched);
    st->redirect_answers = atomic_load(&c->redirect_answers);
    st->requisite_answers = atomic_load(&c->requisite_answers);
    for (int k = 0; k < LINKS_DROP__COUNT; k++)
        st->links_dropped[k] = atomic_load(&c->links_dropped[k]);
    st->fetch_errors = atomic_load(&c->fetch_errors);
    for (int i = 100; i < 600; i++) {
        st->status_counts[i] = atomic_load(&c->status_counts[i]);
        st->by_class[i / 100] += st->status_counts[i];
    }
    for (int e = 0; e < FETCH_ERR_COUNT; e++)
        st->errors_by_kind[e] = atomic_load(&c->errors_by_kind[e]);
    st->bytes = atomic_load(&c->bytes);
    st->links = atomic_load(&c->links);
    st->links_rejected = atomic_load(&c->links_rejected);
    for (int r = 0; r < URL_REJ_COUNT; r++)
        st->links_rejected_by[r] = atomic_load(&c->links_rejected_by[r]);
    st->links_out_of_scope = atomic_load(&c->links_out_of_scope);
    st->sitemaps_on = c->sm != NULL;
    if (c->sm)
        sitemaps_stats_get(c->sm, &st->sitemaps);
    st->nofollow_skipped = atomic_load(&c->nofollow_skipped);
    st->redirects = atomic_load(&c->redirects);
    st->redirects_too_long = atomic_load(&c->redirects_too_long);
    st->truncated = atomic_load(&c->truncated);
    if (c->w) {
        warc_stats ws;
        warc_stats_get(c->w, &ws);
        st->archiving = true;
        st->archived = ws.responses;
        st->revisits = ws.revisits;
        st->spooled = atomic_load(&c->spooled);
        st->spool_errors = atomic_load(&c->spool_errors);
    }
    frontier_get_stats(c->fr, &st->frontier);
    st->frontier_mem = st->frontier.mem_entries;
    st->hosts_active = st->frontier.hosts_active;
    st->in_flight = st->frontier.in_flight;
    st->paused = st->frontier.paused;
    db_get_stats(c->d, &st->db);
    recrawl_stats_get(c->rc, &st->recrawl);
    st->req.found = atomic_load(&c->req_found);
    st->req.new_ = atomic_load(&c->req_new);
    st->req.past_depth = atomic_load(&c->req_past_depth);
    st->req.sheets = atomic_load(&c->css_sheets);
    st->req.refs = atomic_load(&c->css_refs);
    st->req.imports = atomic_load(&c->css_imports);
    st->req.dropped = atomic_load(&c->css_dropped);
    st->req.truncated = atomic_load(&c->css_truncated);
    st->queued = st->db.rows[DB_STATE_QUEUED];
    if (st->db.stalled || st->db.failed)
        db_last_error(c->d, st->storage_error, sizeof st->storage_error);
    long long left = (long long)(st->db.rows[DB_STATE_QUEUED] + st->db.rows[DB_STATE_IN_FLIGHT]);
    pthread_mutex_lock(&c->lock);
    switch (c->end) {
    case END_DRAINED:
        snprintf(st->end, sizeof st->end, "frontier drained");
        break;
    case END_MAX_PAGES:
        snprintf(st->end, sizeof st->end, "stopped at max_pages (%lld) with %lld queued",
                 (long long)c->cfg->crawl.max_pages, left);
        break;
    case END_STOPPED:
        snprintf(st->end, sizeof st->end, "stopped by %s with %lld queued", c->stopped_by, left);
        break;
    case END_STORAGE: {
        char msg[200];
        db_last_error(c->d, msg, sizeof msg);
        snprintf(st->end, sizeof st->end, "storage failed: %s", msg);
        break;
    }
    default:
        st->end[0] = '\0';
    }
    pthread_mutex_unlock(&c->lock);
    st->recovered_in_flight = c->recovered;
    pthread_mutex_lock(&c->lock);
    st->stopping = c->stop_level > 0;
    if (c->cl.ob != NULL && c->cl.status != NULL) {
        c->cl.status(c->cl.arg, &st->cluster);
        st->cluster.on = true;
        st->cluster.links_out = atomic_load(&c->forwarded);
        st->cluster.outbox_errors = atomic_load(&c->forward_errors);
        st->cluster.unsent_fenced = atomic_load(&c->unsent_fenced);
    }
    st->done = c->done;
    pthread_mutex_unlock(&c->lock);
    seen_counters_get(c->s, &st->dedup);
    st->fill = fill_cap ? fill : NULL;
    newest_read nr = { st, fill_cap };
    /* the status is read by the progress and control threads while the
     * crawl thread may drop a generation: under the ring's lock */
    gens_with_newest(seen_gens(c->s), read_newest, &nr);
    st->fpr_bound = st->bloom.fpr_bound;
    st->fpr_predicted = st->bloom.fpr_model;
    gens_stats_get(seen_gens(c->s), &st->gens);
    if (st->gens.generations > 0) { /* the ring's, not its newest filter's */
        st->fpr_bound = st->bloom.fpr_bound = c->cfg->dedup.fp_rate;
        st->fpr_predicted = st->bloom.fpr_model = st->gens.fpr_model;
        st->bloom.memory_bytes = st->gens.memory_bytes + st->gens.ghost_bytes;
    }
    st->bloom_fill = st->bloom.fill;
    st->bloom_stages = st->bloom.stages_total;
    scope_get_counts(c->sc, st->scope_verdicts);
}

size_t crawl_fill_cells(crawl *c)
{
    size_t cells = 0;
    gens_with_newest(seen_gens(c->s), read_cells, &cells);
    return cells;
}

/* Stores the figures in the database, for `crawld stats`, and a sample of
 * them over time, for `crawld report`. */
static void persist_stats(crawl *c)
{
    crawl_status st;
    crawl_status_get(c, &st, NULL, 0);
    json_t *j = status_json(&st);
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
    crawl_status st;
    crawl_status_get(c, &st, NULL, 0);
    json_t *j = status_json(&st);
    if (j)
        summary_crawl_print(f, j);
    json_decref(j);
}

/* ---- close ------------------------------------------------------------- */

int crawl_finish(crawl *c)
{
    if (c == NULL || c->finished)
        return c ? c->finish_rc : 0;
    c->finished = true;
    int rc = 0;
    if (c->d && db_is_stalled(c->d)) {
        /* a stop cannot wait for the store: what the writer holds is
         * redone by the next run (nothing after it was committed) */
        if (c->log)
            fprintf(c->log, "crawld: stopping while the store fails: giving up the operations it"
                            " holds; the pages they belong to will be fetched again\n");
        db_give_up(c->d);
        set_end(c, END_STORAGE);
    }
    if (c->f) {
        pthread_mutex_lock(&c->lock);
        long grace = c->stop_level >= 2 ? 0 : GRACE_MS;
        pthread_mutex_unlock(&c->lock);
        fetcher_stop(c->f, grace);
    }
    if (c->d && c->s && c->fr) {
        db_stats ds;
        db_get_stats(c->d, &ds);
        if (ds.failed == 0) {
            if (recrawl_active(c->rc) && db_flush(c->d) == 0)
                recrawl_refresh(c->rc, cr_wall_ms()); /* the due figures as stored */
            persist_stats(c);
            snapshot(c);
        }
        if (db_flush(c->d) < 0) {
            set_end(c, END_STORAGE);
            rc = -EIO;
        }
        db_get_stats(c->d, &ds);
        pthread_mutex_lock(&c->lock);
        int end = c->end;
        pthread_mutex_unlock(&c->lock);
        long long left = (long long)(ds.rows[DB_STATE_QUEUED] + ds.rows[DB_STATE_IN_FLIGHT]);
        if (end == END_DRAINED && left > 0) {
            /* the promise: never a clean exit with known URLs left undone */
            if (c->log)
                fprintf(c->log, "crawld: the frontier said drained, yet %lld URLs are still queued"
                                " in %s: exiting with an error (run again to fetch them)\n",
                        left, db_path(c->d));
            rc = -EIO;
        }
    }
    c->finish_rc = rc;
    return rc;
}

int crawl_close(crawl *c)
{
    if (c == NULL)
        return 0;
    int rc = crawl_finish(c);
    if (c->f)
        fetcher_free(c->f);
    for (unsigned i = 0; c->threads && i < c->nthreads; i++) {
        url_canon_free(c->threads[i].uc);
        cr_buf_release(&c->threads[i].base);
        cr_buf_release(&c->threads[i].out);
        cr_buf_release(&c->threads[i].key);
        for (int k = 0; k < c->threads[i].npool; k++) {
            links_free(c->threads[i].pool[k]);
            linkmemo_free(c->threads[i].memos[k]);
        }
    }
    cr_free(c->threads);
    sampler_free(c->smp);
    recrawl_free(c->rc);
    frontier_free(c->fr);
    if (c->w && warc_close(c->w) < 0)
        rc = -EIO;
    verifier_free(c->ver);
    sitemaps_free(c->sm);
    scope_free(c->sc);
    /* before seen_free: operations the writer still fails at close are
     * acknowledged to the seen test */
    int db_rc = c->d ? db_close(c->d) : 0;
    retention_free(c->ret); /* after db_close: its steps report until then */
    seen_free(c->s);
    if (db_rc < 0)
        rc = -EIO;
    /* clean: every outcome of a noted fetch is committed (or its row is
     * still queued, which the next run's scan finds anyway) */
    dispatchlog_close(c->dl, c->d != NULL && db_rc == 0);
    url_canon_free(c->uc);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->api_lock);
    pthread_mutex_destroy(&c->slot_mu);
    cr_free(c);
    return rc;
}
