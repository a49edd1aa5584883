/* tests/support/crawloracle: see crawloracle.h. */
#include "tests/support/crawloracle.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"
#include "crawler/web/url.h"

typedef struct item {
    const testsite_req *q;
    char *key;
    int final;     /* counts towards duplicates */
} item;

static int by_host_start(const void *a, const void *b)
{
    const item *x = a, *y = b;
    int c = strcmp(x->q->host, y->q->host);
    if (c != 0)
        return c;
    return x->q->start_us < y->q->start_us ? -1 : x->q->start_us > y->q->start_us;
}

static int by_key(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return strcmp(x->key, y->key);
}

static int by_ua(const void *a, const void *b)
{
    const item *x = a, *y = b;
    return strcmp(x->q->ua, y->q->ua);
}

static void problem(const oracle_opts *o, size_t count, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(const oracle_opts *o, size_t count, const char *fmt, ...)
{
    va_list ap;
    if (o->quiet || count > 10)
        return;
    va_start(ap, fmt);
    fputs("oracle: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int oracle_check(const testsite_req *v, size_t n, const urlset *want, const oracle_opts *o,
                 oracle_result *r)
{
    memset(r, 0, sizeof(*r));
    r->requests = n;
    r->min_gap_us = -1;
    item *it = n > 0 ? cr_calloc(n, sizeof(*it)) : NULL;
    url_canon *uc = url_canon_new(NULL);
    cr_buf key;
    int rc = 0;
    if ((n > 0 && it == NULL) || uc == NULL) {
        cr_free(it);
        url_canon_free(uc);
        return -ENOMEM;
    }
    cr_buf_init(&key, 0);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char raw[4096];
        url_reject why;
        if (v[i].start_us < 0) {
            rc = -EINVAL;
            break;
        }
        snprintf(raw, sizeof raw, "http://%s:%d%s", v[i].host, o->port, v[i].target);
        if (url_canon_resolve(uc, NULL, 0, raw, strlen(raw), &key, &why) != 0) {
            if (!o->quiet)
                fprintf(stderr, "oracle: the site logged a URL that does not parse: %s (%s)\n",
                        raw, url_reject_str(why));
            rc = -EBADMSG;
            break;
        }
        it[i].q = &v[i];
        it[i].key = cr_strdup(key.data);
        if (it[i].key == NULL)
            rc = -ENOMEM;
        it[i].final = v[i].status < 500 && v[i].status != 429 &&
                      strstr(v[i].target, "/robots.txt") == NULL;
    }
    cr_buf_release(&key);
    url_canon_free(uc);
    if (rc != 0)
        goto out;

    /* agents */
    qsort(it, n, sizeof(*it), by_ua);
    for (size_t i = 0; i < n; i++)
        r->agents += i == 0 || strcmp(it[i].q->ua, it[i - 1].q->ua) != 0;

    /* the fetched set and duplicates */
    qsort(it, n, sizeof(*it), by_key);
    urlset got = { 0 };
    for (size_t i = 0; i < n;) {
        size_t j = i, finals = 0;
        for (; j < n && strcmp(it[j].key, it[i].key) == 0; j++)
            finals += (size_t)it[j].final;
        urlset_add(&got, it[i].key);
        if (finals > 1) {
            r->dup_urls++;
            r->dup_fetches += finals - 1;
            problem(o, r->dup_urls, "fetched %s %zu times", it[i].key, finals);
        }
        i = j;
    }
    urlset_sort(&got, NULL);
    r->fetched = got.n;
    if (want != NULL) {
        for (size_t i = 0; i < want->n; i++)
            if (!urlset_has(&got, want->v[i]))
                problem(o, ++r->missing, "expected, not fetched: %s", want->v[i]);
        for (size_t i = 0; i < got.n; i++)
            if (!urlset_has(want, got.v[i]))
                problem(o, ++r->extra, "fetched, not expected: %s", got.v[i]);
    }
    urlset_free(&got);

    /* per host: overlap between agents, spacing */
    qsort(it, n, sizeof(*it), by_host_start);
    for (size_t i = 0; i < n; i++) {
        const testsite_req *a = it[i].q;
        for (size_t j = i + 1; j < n && strcmp(it[j].q->host, a->host) == 0; j++) {
            const testsite_req *b = it[j].q;
            if (b->start_us > a->end_us)
                break;
            if (strcmp(a->ua, b->ua) != 0) {
                r->overlaps++;
                if (!o->quiet && r->overlaps <= 10)
                    fprintf(stderr, "oracle: %s: %s %s [%lld, %lld] overlaps %s %s [%lld, %lld]\n",
                            a->host, a->ua, a->target, a->start_us, a->end_us, b->ua,
                            b->target, b->start_us, b->end_us);
            }
        }
        if (i + 1 < n && strcmp(it[i + 1].q->host, a->host) == 0 &&
            strstr(a->target, "/robots.txt") == NULL) {
            long long gap = it[i + 1].q->start_us - a->start_us;
            if (r->min_gap_us < 0 || gap < r->min_gap_us)
                r->min_gap_us = gap;
            if (o->delay_us > 0 && gap < o->delay_us - o->slack_us) {
                r->short_gaps++;
                if (!o->quiet && r->short_gaps <= 10)
                    fprintf(stderr, "oracle: %s: %s (%s) then %s (%s) %lld us apart\n", a->host,
                            a->target, a->ua, it[i + 1].q->target, it[i + 1].q->ua, gap);
            }
        }
    }
out:
    for (size_t i = 0; i < n; i++)
        cr_free(it[i].key);
    cr_free(it);
    return rc;
}

int oracle_expected(const char *const *args, urlset *want)
{
    char *out = NULL;
    int st = testsite_run(args, &out, NULL);
    if (st != 0) {
        cr_free(out);
        return st;
    }
    for (char *line = out, *nl; line != NULL && *line != '\0'; line = nl) {
        nl = strchr(line, '\n');
        if (nl != NULL)
            *nl++ = '\0';
        if (*line != '\0')
            urlset_add(want, line);
    }
    cr_free(out);
    urlset_sort(want, NULL);
    return 0;
}
