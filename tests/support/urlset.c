/* tests/support/urlset: see urlset.h. */
#include "tests/support/urlset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "crawler/web/url.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void urlset_add(urlset *s, const char *u)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (s->v == NULL)
            abort();
    }
    s->v[s->n] = strdup(u);
    if (s->v[s->n] == NULL)
        abort();
    s->n++;
}

void urlset_sort(urlset *s, size_t *dups)
{
    size_t w = 0;
    if (s->n > 0)
        qsort(s->v, s->n, sizeof *s->v, cmp_str);
    for (size_t i = 0; i < s->n; i++) {
        if (w > 0 && strcmp(s->v[w - 1], s->v[i]) == 0) {
            free(s->v[i]);
            continue;
        }
        s->v[w++] = s->v[i];
    }
    if (dups)
        *dups = s->n - w;
    s->n = w;
}

bool urlset_has(const urlset *s, const char *u)
{
    return s->n > 0 && bsearch(&u, s->v, s->n, sizeof *s->v, cmp_str) != NULL;
}

void urlset_free(urlset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

long urlset_fetched_since(const testsite *ts, size_t from, urlset *fetched, size_t *dups,
                          size_t *as_written)
{
    testsite_req *v;
    size_t n, written = 0;
    long rc;
    urlset final = { 0 };
    url_canon *uc = url_canon_new(NULL);
    cr_buf key;
    if (uc == NULL || testsite_log_read(ts, &v, &n) != 0) {
        url_canon_free(uc);
        return -1;
    }
    rc = (long)n;
    cr_buf_init(&key, 0);
    for (size_t i = from; i < n; i++) {
        char raw[4096];
        url_reject why;
        snprintf(raw, sizeof raw, "http://%s:%d%s", v[i].host, ts->port, v[i].target);
        if (url_canon_resolve(uc, NULL, 0, raw, strlen(raw), &key, &why) != 0) {
            fprintf(stderr, "the site logged a request crawld cannot parse: %s (%s)\n", raw,
                    url_reject_str(why));
            rc = -1;
            break;
        }
        written += strcmp(key.data, raw) != 0;
        urlset_add(fetched, key.data);
        if (v[i].status < 500 && v[i].status != 429 && strstr(v[i].target, "/robots.txt") == NULL)
            urlset_add(&final, key.data);
    }
    cr_buf_release(&key);
    url_canon_free(uc);
    urlset_sort(&final, dups);
    urlset_free(&final);
    urlset_sort(fetched, NULL);
    testsite_log_free(v, n);
    if (as_written)
        *as_written = written;
    return rc;
}

size_t urlset_diff(const urlset *want, const urlset *got)
{
    size_t bad = 0;
    for (size_t i = 0; i < want->n; i++)
        if (!urlset_has(got, want->v[i]) && bad++ < 10)
            fprintf(stderr, "expected but not fetched: %s\n", want->v[i]);
    for (size_t i = 0; i < got->n; i++)
        if (!urlset_has(want, got->v[i]) && bad++ < 20)
            fprintf(stderr, "fetched but not expected: %s\n", got->v[i]);
    return bad;
}
