/* crawler/sampler: one row of figures every few seconds (see sampler.h).
 *
 * The sample is derived from the status JSON the daemon already builds, so
 * a sample and `crawld stats` can never count differently; only the Bloom
 * per-stage fill and pages/s are added here. Host rows come from the
 * frontier's host records (frontier_foreach_host), whose counters the
 * frontier updates under its own lock at frontier_done time: nothing here
 * runs per link. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "common/clock.h"

#define CONFIG_TEXT_MAX (60 * 1024) /* under the db's value cap */
#define MINUTE_MS 60000LL
#define DAY_MS (24 * 60 * MINUTE_MS)

const db_sample_tier sampler_tiers[SAMPLER_TIERS] = {
    { DAY_MS, MINUTE_MS },           /* older than a day: one a minute */
    { 30 * DAY_MS, 60 * MINUTE_MS }, /* older than 30 days: one an hour */
};

typedef struct host_row {
    char *host;
    frontier_host_stats hs; /* hs.host points into the frontier: not used */
} host_row;

struct sampler {
    db *d;
    const crawl_config *cfg;
    int config_stored;
    int have_prev;
    double prev_pages;
    int64_t prev_ms;
    unsigned since_prune;  /* samples since the last pruning pass */
    int64_t pruned_ms;     /* that pass's time; 0: none yet in this process */
    host_row *rows; /* SAMPLER_HOSTS slots: the busiest hosts of one pass */
    size_t nrows;
    int oom;
};

static json_int_t geti(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b != NULL)
        v = json_object_get(v, b);
    return json_integer_value(v);
}

static double getf(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    if (b != NULL)
        v = json_object_get(v, b);
    return json_number_value(v);
}

sampler *sampler_new(db *d, const crawl_config *cfg)
{
    sampler *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->d = d;
    s->cfg = cfg;
    return s;
}

static void rows_clear(sampler *s)
{
    for (size_t i = 0; i < s->nrows; i++)
        cr_free(s->rows[i].host);
    s->nrows = 0;
}

void sampler_free(sampler *s)
{
    if (s == NULL)
        return;
    rows_clear(s);
    cr_free(s->rows);
    cr_free(s);
}

/* Keys whose values must not leave the daemon (a report gets shared). */
static int secret_key(const char *line)
{
    while (*line == ' ')
        line++;
    static const char *const keys[] = { "token", "proxy", "password" };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        size_t n = strlen(keys[i]);
        if (strncmp(line, keys[i], n) == 0 && (line[n] == ' ' || line[n] == '='))
            return 1;
    }
    return 0;
}

/* The effective configuration as TOML, secrets replaced by "(redacted)". */
static int store_config(sampler *s)
{
    char *text = NULL;
    size_t len = 0;
    cr_buf out;
    int rc = -ENOMEM;
    cr_buf_init(&out, CONFIG_TEXT_MAX);
    FILE *f = open_memstream(&text, &len);
    if (f == NULL)
        goto out;
    config_write(s->cfg, f, false);
    if (fclose(f) != 0)
        goto out;
    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (secret_key(p) && eq != NULL && eq[1] != '\n') {
            cr_buf_append(&out, p, (size_t)(eq - p) + 1);
            cr_buf_printf(&out, " \"(redacted)\"\n");
        } else {
            cr_buf_append(&out, p, n);
        }
        p += n;
    }
    rc = db_put_meta(s->d, "config", out.data ? out.data : "");
out:
    free(text); /* open_memstream's, from libc */
    cr_buf_release(&out);
    return rc;
}

json_t *sampler_sample_json(const json_t *st, const bloom *bf, double prev_pages, double dt_s)
{
    double elapsed = getf(st, "elapsed_s", NULL);
    double pages = (double)geti(st, "pages", NULL);
    double rate = dt_s > 0 ? (pages - prev_pages) / dt_s : elapsed > 0 ? pages / elapsed : 0;
    json_t *by_class = json_array();
    json_t *fill = json_array();
    json_t *errs = json_deep_copy(json_object_get(st, "fetch_errors_by_kind"));
    json_t *j = NULL;
    if (by_class == NULL || fill == NULL)
        goto out;
    json_int_t cls[6] = { 0 };
    const char *code;
    json_t *v;
    json_object_foreach((json_t *)json_object_get(st, "pages_by_status"), code, v)
    {
        long c = strtol(code, NULL, 10);
        if (c >= 100 && c < 600)
            cls[c / 100] += json_integer_value(v);
    }
    for (int i = 1; i < 6; i++)
        json_array_append_new(by_class, json_integer(cls[i]));
    if (bf != NULL) {
        /* fill of stage i: the mean over the shards that have one */
        bloom_params bp;
        bloom_get_params(bf, &bp);
        for (unsigned stg = 0; stg < SAMPLER_MAX_STAGES; stg++) {
            double sum = 0;
            unsigned n = 0;
            for (unsigned sh = 0; sh < bp.shards; sh++) {
                bloom_stage_info si;
                if (bloom_stage_info_get(bf, sh, stg, &si) == 0) {
                    sum += si.fill;
                    n++;
                }
            }
            if (n == 0)
                break;
            json_array_append_new(fill, json_real(sum / n));
        }
    }
    j = json_pack("{s:f, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                  " s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:o, s:o}",
                  "elapsed_s", elapsed, "pages", (json_int_t)pages, "pages_per_s",
                  rate < 0 ? 0.0 : rate, "links", geti(st, "links", NULL), "urls",
                  geti(st, "dedup", "urls"), "new_bloom_no",
                  geti(json_object_get(st, "dedup"), "new", "bloom_no"), "fp_caught",
                  geti(json_object_get(st, "dedup"), "new", "false_positive_caught"),
                  "dup_bloom_trusted",
                  geti(json_object_get(st, "dedup"), "duplicate", "bloom_maybe_trusted"),
                  "dup_recent_cache",
                  geti(json_object_get(st, "dedup"), "duplicate", "recent_cache"),
                  "dup_sqlite", geti(json_object_get(st, "dedup"), "duplicate", "sqlite"),
                  "checked_new", geti(st, "dedup", "checked_new"), "bloom_stages",
                  geti(json_object_get(st, "dedup"), "bloom", "stages"),
                  "fpr_observed", getf(json_object_get(st, "dedup"), "fpr", "observed"),
                  "fpr_predicted", getf(json_object_get(st, "dedup"), "fpr", "predicted"),
                  "fpr_bound", getf(json_object_get(st, "dedup"), "fpr", "bound"),
                  "frontier_memory", geti(st, "frontier", "memory"), "frontier_sqlite",
                  geti(st, "frontier", "sqlite_queued"), "hosts_active",
                  geti(st, "frontier", "hosts_active"), "bytes", geti(st, "bytes", NULL),
                  "fetch_errors", geti(st, "fetch_errors", NULL), "by_class", by_class,
                  "bloom_fill", fill);
    by_class = fill = NULL; /* stolen by json_pack, even when it fails */
    if (j != NULL)
        json_object_set_new(j, "dup_same_page",
                            json_integer(geti(json_object_get(st, "dedup"), "duplicate",
                                              "same_page")));
    const json_t *ret = json_object_get(st, "retention");
    if (j != NULL && ret != NULL) {
        /* the generation ring: keys per live generation, newest first */
        json_t *keys = json_array();
        const json_t *ring = json_object_get(ret, "ring");
        for (size_t i = json_array_size(ring); keys != NULL && i-- > 0;)
            json_array_append_new(keys, json_integer(json_integer_value(
                                            json_object_get(json_array_get(ring, i), "keys"))));
        json_object_set_new(j, "ring_keys", keys);
        json_object_set_new(j, "forgotten", json_integer(geti(st, "retention", "forgotten")));
        json_object_set_new(j, "refreshed", json_integer(geti(st, "retention", "refreshed")));
    }
    const json_t *rc = json_object_get(st, "recrawl");
    if (j != NULL && rc != NULL)
        json_object_set_new(j, "recrawl",
                            json_pack("{s:I, s:I, s:I, s:I}", "revisited",
                                      geti(st, "recrawl", "revisited"), "changed",
                                      geti(st, "recrawl", "changed"), "unchanged",
                                      geti(st, "recrawl", "unchanged"), "gone",
                                      geti(st, "recrawl", "gone")));
    if (j != NULL && errs != NULL) {
        json_object_set_new(j, "errors", errs);
        errs = NULL;
    }
out:
    json_decref(by_class);
    json_decref(fill);
    json_decref(errs);
    return j;
}

json_t *sampler_host_json(const frontier_host_stats *hs)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
                     "pages", (json_int_t)hs->answers, "links", (json_int_t)hs->links,
                     "links_new", (json_int_t)hs->links_new, "no_answer",
                     (json_int_t)hs->no_answer, "http_errors", (json_int_t)hs->http_errors,
                     "failed", (json_int_t)hs->failed, "retries", (json_int_t)hs->retries,
                     "robots_allowed", (json_int_t)hs->robots_allowed, "robots_disallowed",
                     (json_int_t)hs->robots_disallowed, "politeness_waits",
                     (json_int_t)hs->politeness_waits, "bytes", (json_int_t)hs->bytes,
                     "crawl_delay_ms", (json_int_t)hs->crawl_delay_ms, "delay_ms",
                     (json_int_t)hs->delay_ms, "given_up", hs->given_up);
}

static int busiest_first(const void *a, const void *b)
{
    const host_row *x = a, *y = b;
    if (x->hs.answers != y->hs.answers)
        return x->hs.answers < y->hs.answers ? 1 : -1;
    return strcmp(x->host, y->host);
}

/* rows[0..nrows) is a min-heap on answers: the root is the least busy of
 * the SAMPLER_HOSTS kept so far. */
static void heap_down(host_row *v, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && v[l].hs.answers < v[m].hs.answers)
            m = l;
        if (r < n && v[r].hs.answers < v[m].hs.answers)
            m = r;
        if (m == i)
            return;
        host_row t = v[i];
        v[i] = v[m];
        v[m] = t;
        i = m;
    }
}

static void heap_up(host_row *v, size_t i)
{
    while (i > 0 && v[(i - 1) / 2].hs.answers > v[i].hs.answers) {
        host_row t = v[i];
        v[i] = v[(i - 1) / 2];
        v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* frontier_foreach_host callback (under the frontier lock, so it copies
 * only hosts that enter the top SAMPLER_HOSTS: O(log K) per host). */
static int collect_host(void *ud, const frontier_host_stats *hs)
{
    sampler *s = ud;
    if (s->nrows == SAMPLER_HOSTS && hs->answers <= s->rows[0].hs.answers)
        return 0;
    char *name = cr_strdup(hs->host);
    if (name == NULL) {
        s->oom = 1;
        return 1;
    }
    if (s->nrows == SAMPLER_HOSTS) {
        cr_free(s->rows[0].host);
        s->rows[0].host = name;
        s->rows[0].hs = *hs;
        s->rows[0].hs.host = NULL;
        heap_down(s->rows, s->nrows, 0);
        return 0;
    }
    host_row *r = &s->rows[s->nrows++];
    r->host = name;
    r->hs = *hs;
    r->hs.host = NULL;
    heap_up(s->rows, s->nrows - 1);
    return 0;
}

static int store_hosts(sampler *s, frontier *fr)
{
    int rc = 0;
    s->oom = 0;
    if (s->rows == NULL) {
        s->rows = cr_calloc(SAMPLER_HOSTS, sizeof *s->rows);
        if (s->rows == NULL)
            return -ENOMEM;
    }
    frontier_foreach_host(fr, collect_host, s);
    if (s->oom) {
        rc = -ENOMEM;
        goto out;
    }
    qsort(s->rows, s->nrows, sizeof *s->rows, busiest_first);
    for (size_t i = 0; i < s->nrows && i < SAMPLER_HOSTS && rc == 0; i++) {
        json_t *j = sampler_host_json(&s->rows[i].hs);
        char *text = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        rc = text ? db_put_host_stats(s->d, s->rows[i].host, s->rows[i].hs.answers, text)
                  : -ENOMEM;
        free(text); /* jansson's allocator */
        json_decref(j);
    }
out:
    rows_clear(s);
    return rc;
}

char *sampler_sample_text(const json_t *sample)
{
    return json_dumps(sample, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(7));
}

int sampler_record(sampler *s, const json_t *status, const bloom *bf, frontier *fr)
{
    return sampler_record_at(s, status, bf, fr, cr_wall_ms());
}

int sampler_record_at(sampler *s, const json_t *status, const bloom *bf, frontier *fr,
                      int64_t now)
{
    int rc = 0;
    if (s == NULL || status == NULL)
        return -EINVAL;
    if (!s->config_stored && s->cfg != NULL) {
        rc = store_config(s);
        if (rc < 0)
            return rc;
        s->config_stored = 1;
    }
    if (s->have_prev && now <= s->prev_ms)
        now = s->prev_ms + 1; /* one row per call, keys only grow */
    double dt = s->have_prev ? (double)(now - s->prev_ms) / 1000.0 : 0;
    json_t *j = sampler_sample_json(status, bf, s->prev_pages, dt);
    char *text = j ? sampler_sample_text(j) : NULL;
    if (text == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    rc = db_put_sample(s->d, now, text);
    if (rc < 0)
        goto out;
    if (s->pruned_ms == 0 || ++s->since_prune >= SAMPLER_PRUNE_EVERY) {
        rc = db_prune_samples(s->d, sampler_tiers, SAMPLER_TIERS, now, s->pruned_ms);
        if (rc < 0)
            goto out;
        s->pruned_ms = now;
        s->since_prune = 0;
    }
    s->have_prev = 1;
    s->prev_ms = now;
    s->prev_pages = (double)json_integer_value(json_object_get(status, "pages"));
    if (fr != NULL)
        rc = store_hosts(s, fr);
out:
    free(text);
    json_decref(j);
    return rc;
}
