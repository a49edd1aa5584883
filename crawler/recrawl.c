/* crawler/recrawl: the re-crawl glue (see recrawl.h).
 *
 * State: the schedule (immutable), `rd` (a db_reader for recrawl_prepare,
 * any thread, under `mu`), `prd` (the scheduler's own reader, recrawl_promote
 * only), and under `mu` the figures: totals, a per-host table (open
 * addressing on the host name, names copied, never shrunk) and the
 * interval histogram (read from the store at open, then kept up to date
 * by every recrawl_done). Lock order: `mu` is a leaf; no db_* call that
 * waits for the writer is made while holding it. */
#include "crawler/recrawl.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "frontier/schedule.h"

typedef struct host_slot {
    char *host; /* NULL: free */
    recrawl_counts c;
} host_slot;

struct recrawl {
    db *d;
    schedule *sched;
    bool daemon;
    int64_t retention_ms;   /* dedup.retention_s in ms; 0: none */
    pthread_mutex_t mu;
    db_reader *rd;          /* under mu */
    db_reader *prd;         /* recrawl_promote's */
    recrawl_stats st;       /* under mu */
    host_slot *hosts;       /* under mu */
    size_t nhosts, caphosts;
    atomic_bool any_promoted; /* set once rows were made due (read lock-free) */
    int64_t next_look_ms;   /* recrawl_promote's */
};

static int bucket_of(int64_t s)
{
    int b = 0;
    while (s > 1 && b < RECRAWL_BUCKETS - 1) {
        s >>= 1;
        b++;
    }
    return b;
}

static void add_interval(void *ud, int64_t interval_s, int64_t rows)
{
    recrawl *r = ud;
    r->st.intervals[bucket_of(interval_s)] += rows;
    r->st.interval_rows += rows;
}

recrawl *recrawl_new(db *d, const crawl_config *cfg, char *err, size_t errlen)
{
    recrawl *r = cr_calloc(1, sizeof *r);
    schedule_rule *rules = NULL;
    size_t n = cfg->recrawl.rules.n;
    if (r == NULL)
        goto oom;
    pthread_mutex_init(&r->mu, NULL);
    r->d = d;
    r->daemon = cfg->crawl.daemon;
    r->retention_ms = cfg->dedup.retention_s * 1000;
    rules = cr_calloc(n ? n : 1, sizeof *rules);
    if (rules == NULL)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        const char *rule = cfg->recrawl.rules.v[i];
        if (config_recrawl_rule(rule, &rules[i].len, &rules[i].seconds) < 0) {
            snprintf(err, errlen, "recrawl.rules: bad rule \"%s\"", rule);
            goto fail;
        }
        rules[i].pattern = rule;
    }
    schedule_opts so = { .after_s = cfg->recrawl.after_s, .min_s = cfg->recrawl.min_s,
                         .max_s = cfg->recrawl.max_s, .adaptive = cfg->recrawl.adaptive,
                         .rules = rules, .n_rules = n };
    r->sched = schedule_new(&so);
    if (r->sched == NULL) {
        snprintf(err, errlen, "recrawl: min_s must not exceed max_s");
        goto fail;
    }
    r->rd = db_reader_open(d, err, errlen);
    if (r->rd == NULL)
        goto fail;
    r->prd = db_reader_open(d, err, errlen);
    if (r->prd == NULL)
        goto fail;
    r->st.enabled = schedule_enabled(r->sched);
    r->st.next_due_ms = -1;
    if (db_reader_intervals(r->rd, add_interval, r) < 0) {
        snprintf(err, errlen, "recrawl: cannot read the fetch history of %s", db_path(d));
        goto fail;
    }
    cr_free(rules);
    return r;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    cr_free(rules);
    recrawl_free(r);
    return NULL;
}

void recrawl_free(recrawl *r)
{
    if (r == NULL)
        return;
    if (r->rd)
        db_reader_free(r->rd);
    if (r->prd)
        db_reader_free(r->prd);
    schedule_free(r->sched);
    for (size_t i = 0; i < r->caphosts; i++)
        cr_free(r->hosts[i].host);
    cr_free(r->hosts);
    pthread_mutex_destroy(&r->mu);
    cr_free(r);
}

bool recrawl_active(const recrawl *r)
{
    return r != NULL && (r->st.enabled || atomic_load(&r->any_promoted));
}

recrawl_job *recrawl_prepare(recrawl *r, int64_t id)
{
    if (!recrawl_active(r))
        return NULL;
    recrawl_job *j = cr_calloc(1, sizeof *j);
    if (j == NULL)
        return NULL;
    pthread_mutex_lock(&r->mu);
    int rc = db_reader_history(r->rd, id, &j->prior);
    pthread_mutex_unlock(&r->mu);
    if (rc < 0) {
        cr_free(j);
        return NULL;
    }
    j->revisit = j->prior.fetches > 0;
    /* a 304 says "the links are what they were"; children only stay
     * linked by it while their parent's last fetch is within the
     * retention (db_reader_stale_queued), so a page last fetched longer
     * ago asks in full and its links are read again */
    j->conditional = j->revisit && j->prior.http_status != 0 &&
                     (r->retention_ms == 0 || j->prior.fetched_at >= cr_wall_ms() - r->retention_ms);
    return j;
}

void recrawl_job_free(recrawl_job *j)
{
    if (j == NULL)
        return;
    cr_free(j->etag);
    cr_free(j->last_modified);
    cr_free(j);
}

/* The value of header `name` in a raw header block (first line of that
 * name), trimmed, as a new string; NULL when absent, empty or over
 * DB_TEXT_MAX. */
static char *header_value(const char *h, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *end = h + len;
    for (const char *p = h; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if ((size_t)(le - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
            const char *v = p + nl + 1, *ve = le;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (ve == v || (size_t)(ve - v) > DB_TEXT_MAX)
                return NULL;
            return cr_strndup(v, (size_t)(ve - v));
        }
        p = eol ? eol + 1 : end;
    }
    return NULL;
}

void recrawl_note_headers(recrawl_job *j, const char *headers, size_t len)
{
    if (j == NULL || headers == NULL)
        return;
    cr_free(j->etag);
    cr_free(j->last_modified);
    j->etag = header_value(headers, len, "ETag");
    j->last_modified = header_value(headers, len, "Last-Modified");
}

bool recrawl_warc_prior(const recrawl_job *j, const char *uri, warc_prior *out)
{
    if (j == NULL || !j->revisit || j->prior.digest[0] == '\0')
        return false;
    out->digest = j->prior.digest;
    out->record_id = j->prior.warc_id[0] ? j->prior.warc_id : NULL;
    out->date_ms = j->prior.warc_date_ms;
    out->uri = j->prior.warc_uri[0] ? j->prior.warc_uri : uri;
    return true;
}

/* The host's counters (created), or NULL when memory runs out. mu held. */
static recrawl_counts *host_counts(recrawl *r, const char *host)
{
    if (host == NULL)
        return NULL;
    if (2 * (r->nhosts + 1) > r->caphosts) {
        size_t cap = r->caphosts ? 2 * r->caphosts : 64;
        host_slot *v = cr_calloc(cap, sizeof *v);
        if (v == NULL)
            return NULL;
        for (size_t i = 0; i < r->caphosts; i++) {
            if (r->hosts[i].host == NULL)
                continue;
            uint64_t hh = 1469598103934665603ull;
            for (const char *p = r->hosts[i].host; *p; p++)
                hh = (hh ^ (unsigned char)*p) * 1099511628211ull;
            size_t k = (size_t)(hh & (cap - 1));
            while (v[k].host)
                k = (k + 1) & (cap - 1);
            v[k] = r->hosts[i];
        }
        cr_free(r->hosts);
        r->hosts = v;
        r->caphosts = cap;
    }
    uint64_t hh = 1469598103934665603ull;
    for (const char *p = host; *p; p++)
        hh = (hh ^ (unsigned char)*p) * 1099511628211ull;
    size_t k = (size_t)(hh & (r->caphosts - 1));
    while (r->hosts[k].host && strcmp(r->hosts[k].host, host) != 0)
        k = (k + 1) & (r->caphosts - 1);
    if (r->hosts[k].host == NULL) {
        r->hosts[k].host = cr_strdup(host);
        if (r->hosts[k].host == NULL)
            return NULL;
        r->nhosts++;
    }
    return &r->hosts[k].c;
}

static void count(recrawl_counts *c, int outcome, bool revisit, bool nm, bool same,
                  int64_t saved)
{
    if (c == NULL)
        return;
    if (!revisit) {
        c->new_pages++;
        return;
    }
    c->revisited++;
    switch (outcome) {
    case SCHEDULE_UNCHANGED:
        c->unchanged++;
        c->not_modified += nm;
        c->same_digest += same;
        c->bytes_saved += saved;
        break;
    case SCHEDULE_CHANGED: c->changed++; break;
    case SCHEDULE_GONE: c->gone++; break;
    default: c->other++; break;
    }
}

int recrawl_done(recrawl *r, recrawl_job *j, const recrawl_fetch *f)
{
    if (r == NULL || j == NULL || !f->answered)
        return -1;
    /* a retried answer is not a result yet (the frontier asks again) */
    if (f->status == 429 || f->status >= 500)
        return -1;
    const db_history_row *p = &j->prior;
    bool revisit = j->revisit;
    bool had_200 = p->digest[0] != '\0' || p->http_status == 200;
    char digest[38] = "";
    db_history h = { .next_at = -1 };
    int outcome;
    bool nm = false, same = false;
    int64_t saved = 0;
    /* by default the row keeps what the last 200 left */
    h.etag = p->etag[0] ? p->etag : NULL;
    h.last_modified = p->last_modified[0] ? p->last_modified : NULL;
    h.digest = p->digest[0] ? p->digest : NULL;
    h.warc_id = p->warc_id[0] ? p->warc_id : NULL;
    h.warc_date_ms = p->warc_date_ms;
    h.warc_uri = p->warc_uri[0] ? p->warc_uri : NULL;
    h.size = p->size;
    if (f->status == 304 && revisit) {
        outcome = SCHEDULE_UNCHANGED;
        nm = true;
        saved = p->size;
        if (j->etag)
            h.etag = j->etag;
        if (j->last_modified)
            h.last_modified = j->last_modified;
    } else if (f->status == 200) {
        if (f->w)
            snprintf(digest, sizeof digest, "%s", f->w->payload_digest);
        else if (f->payload_digest)
            snprintf(digest, sizeof digest, "%s", f->payload_digest);
        else if (warc_payload_digest(f->payload ? f->payload : "", f->payload_len, digest) < 0)
            digest[0] = '\0';
        same = revisit && !f->truncated && digest[0] && strcmp(digest, p->digest) == 0;
        outcome = !revisit ? SCHEDULE_FIRST : same ? SCHEDULE_UNCHANGED : SCHEDULE_CHANGED;
        h.etag = j->etag;
        h.last_modified = j->last_modified;
        if (!same) {
            h.digest = digest[0] ? digest : NULL;
            h.size = (int64_t)f->payload_len;
            h.warc_uri = NULL;
            if (f->w && !f->w->was_revisit) {
                h.warc_id = f->w->record_id;
                h.warc_date_ms = f->w->date_ms;
            } else if (f->w && f->w->refers_to_id[0] && f->w->refers_to_uri) {
                /* the payload was archived for another URL in this crawl:
                 * that record is the original later revisits point at */
                h.warc_id = f->w->refers_to_id;
                h.warc_date_ms = f->w->refers_to_date_ms;
                if (strcmp(f->w->refers_to_uri, f->url) != 0)
                    h.warc_uri = f->w->refers_to_uri;
            } else {
                h.warc_id = NULL; /* not archived: nothing to point at */
                h.warc_date_ms = 0;
            }
            h.changed = revisit;
        }
    } else if ((f->status == 404 || f->status == 410) && revisit && had_200) {
        outcome = SCHEDULE_GONE;
        h.gone = true;
    } else {
        outcome = revisit ? SCHEDULE_OTHER : SCHEDULE_FIRST;
    }
    int64_t next_s = schedule_next_s(r->sched, f->url, f->url_len, p->interval_s, outcome);
    if (h.gone)
        next_s = 0;
    h.interval_s = next_s;
    h.next_at = next_s > 0 ? f->now_ms + next_s * 1000 : -1;
    int rc = db_record_history(r->d, f->id, &h);

    pthread_mutex_lock(&r->mu);
    if (rc == 0) {
        if (p->next_at >= 0 && p->interval_s > 0) {
            r->st.intervals[bucket_of(p->interval_s)]--;
            r->st.interval_rows--;
        }
        if (h.next_at >= 0)
            add_interval(r, next_s, 1);
    }
    if (revisit || r->st.enabled) {
        count(&r->st.total, outcome, revisit, nm, same, saved);
        count(host_counts(r, f->host), outcome, revisit, nm, same, saved);
    }
    pthread_mutex_unlock(&r->mu);
    return rc < 0 ? rc : outcome;
}

/* ---- promotion ---------------------------------------------------------- */

typedef struct due_row {
    int64_t id;
    char *url;
    size_t url_len;
    char *host;
    int depth, kind;
} due_row;

typedef struct due_list {
    due_row *v;
    size_t n, cap;
    int err;
} due_list;

static int collect_due(void *ud, const db_row *row)
{
    due_list *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        due_row *v = cr_realloc(l->v, cap * sizeof *v);
        if (v == NULL) {
            l->err = -ENOMEM;
            return 1;
        }
        l->v = v;
        l->cap = cap;
    }
    due_row *d = &l->v[l->n];
    d->id = row->id;
    d->url = cr_strndup(row->fetch_url, row->fetch_url_len);
    d->url_len = row->fetch_url_len;
    d->host = cr_strndup(row->host, row->host_len);
    d->depth = row->depth;
    d->kind = row->kind;
    if (d->url == NULL || d->host == NULL) {
        cr_free(d->url);
        cr_free(d->host);
        l->err = -ENOMEM;
        return 1;
    }
    l->n++;
    return 0;
}

int64_t recrawl_promote(recrawl *r, frontier *fr, int64_t now_ms, int64_t run_start_ms,
                        size_t max)
{
    if (r == NULL)
        return 0;
    due_list l = { NULL, 0, 0, 0 };
    int64_t rc = db_reader_due(r->prd, now_ms, run_start_ms, max, collect_due, &l);
    size_t queued = 0;
    for (; rc >= 0 && queued < l.n; queued++) {
        int q = db_requeue_due(r->d, l.v[queued].id);
        if (q < 0)
            rc = q;
    }
    if (queued > 0) {
        int q = db_flush(r->d);
        if (q < 0 && rc >= 0)
            rc = q;
    }
    int64_t pushed = 0;
    for (size_t i = 0; i < l.n; i++) {
        /* only rows whose queued state committed (a failed flush: none;
         * they stay done and due, and the next look tries again) */
        if (rc >= 0 && i < queued &&
            frontier_push_due(fr, l.v[i].id, l.v[i].url, l.v[i].url_len, l.v[i].host,
                              l.v[i].depth, l.v[i].kind) >= 0)
            pushed++;
        cr_free(l.v[i].url);
        cr_free(l.v[i].host);
    }
    cr_free(l.v);
    int64_t due = 0, next = -1;
    bool look = now_ms >= r->next_look_ms || pushed > 0;
    if (look && db_reader_due_stats(r->prd, now_ms, &due, &next) == 0)
        r->next_look_ms = now_ms + 2000;
    pthread_mutex_lock(&r->mu);
    r->st.promoted += pushed;
    if (pushed > 0)
        atomic_store(&r->any_promoted, true);
    if (look) {
        r->st.due_now = due;
        r->st.next_due_ms = next;
    }
    pthread_mutex_unlock(&r->mu);
    if (l.err < 0 && rc >= 0)
        rc = l.err;
    return rc < 0 ? rc : pushed;
}

void recrawl_refresh(recrawl *r, int64_t now_ms)
{
    int64_t due = 0, next = -1;
    if (r == NULL || db_reader_due_stats(r->prd, now_ms, &due, &next) < 0)
        return;
    pthread_mutex_lock(&r->mu);
    r->st.due_now = due;
    r->st.next_due_ms = next;
    pthread_mutex_unlock(&r->mu);
}

void recrawl_stats_get(recrawl *r, recrawl_stats *st)
{
    memset(st, 0, sizeof *st);
    st->next_due_ms = -1;
    if (r == NULL)
        return;
    pthread_mutex_lock(&r->mu);
    *st = r->st;
    st->ntop = 0;
    st->hosts = r->nhosts;
    /* the busiest hosts by insertion into a small sorted array */
    for (size_t i = 0; i < r->caphosts; i++) {
        const host_slot *h = &r->hosts[i];
        if (h->host == NULL)
            continue;
        int64_t key = h->c.revisited * 4 + h->c.new_pages;
        size_t k = st->ntop;
        while (k > 0 && st->top[k - 1].c.revisited * 4 + st->top[k - 1].c.new_pages < key)
            k--;
        if (k >= RECRAWL_TOP_HOSTS)
            continue;
        size_t last = st->ntop < RECRAWL_TOP_HOSTS ? st->ntop : RECRAWL_TOP_HOSTS - 1;
        memmove(&st->top[k + 1], &st->top[k], (last - k) * sizeof st->top[0]);
        snprintf(st->top[k].host, sizeof st->top[k].host, "%s", h->host);
        st->top[k].c = h->c;
        if (st->ntop < RECRAWL_TOP_HOSTS)
            st->ntop++;
    }
    pthread_mutex_unlock(&r->mu);
}

size_t recrawl_foreach_host(recrawl *r,
                            void (*cb)(void *ud, const char *host, const recrawl_counts *c),
                            void *ud)
{
    size_t n = 0;
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->caphosts; i++)
        if (r->hosts[i].host) {
            cb(ud, r->hosts[i].host, &r->hosts[i].c);
            n++;
        }
    pthread_mutex_unlock(&r->mu);
    return n;
}
