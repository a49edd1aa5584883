/* bench/bench_url: URL canonicalization speed, fast path against the curl
 * path, on link-like input: pages on a few hundred hosts, ~40 links each,
 * in the shapes hrefs come in (absolute, root-relative, relative, "../",
 * query with tracking parameters, fragments, protocol-relative, a few
 * mailto:/javascript:). Also the bare cost of one curl_url_set + get of the
 * whole URL, the figure the fast path exists to beat.
 * Each figure is the best of a few runs (the machine is shared).
 * usage: bench_url [links [runs]]   (default 200000 3) */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "crawler/web/url.h"

#define LINKS_PER_PAGE 40

typedef struct link {
    char base[160];
    char ref[240];
} link;

static uint64_t rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const words[] = { "news", "about", "blog", "2024", "products", "item",
                                     "category", "help", "docs", "index", "search", "img",
                                     "static", "user", "page", "article" };
#define NW (sizeof words / sizeof words[0])

static void make_links(link *l, size_t n)
{
    char base[160];
    char host[64];
    for (size_t i = 0; i < n; i++) {
        if (i % LINKS_PER_PAGE == 0) {
            snprintf(host, sizeof host, "www.site%u.example%s", rnd(500), rnd(4) ? "" : ".org");
            snprintf(base, sizeof base, "https://%s/%s/%s/%u.html", host, words[rnd(NW)],
                     words[rnd(NW)], rnd(100000));
        }
        memcpy(l[i].base, base, sizeof base);
        const char *w1 = words[rnd(NW)], *w2 = words[rnd(NW)];
        unsigned k = rnd(100), id = rnd(1000000);
        char *r = l[i].ref;
        size_t rs = sizeof l[i].ref;
        if (k < 25)
            snprintf(r, rs, "https://%s/%s/%s/%u", host, w1, w2, id);
        else if (k < 30)
            snprintf(r, rs, "https://other%u.example/%s/?id=%u", rnd(50), w1, id);
        else if (k < 55)
            snprintf(r, rs, "/%s/%s-%u.html", w1, w2, id);
        else if (k < 67)
            snprintf(r, rs, "%s-%u.html", w1, id);
        else if (k < 72)
            snprintf(r, rs, "../%s/%u/", w1, id);
        else if (k < 80)
            snprintf(r, rs, "/%s?page=%u&sort=%s&utm_source=feed&utm_medium=rss", w1, id % 50, w2);
        else if (k < 86)
            snprintf(r, rs, "#%s", w1);
        else if (k < 90)
            snprintf(r, rs, "//cdn%u.example.net/%s/%u.js", rnd(3), w1, id);
        else if (k < 93)
            snprintf(r, rs, "/%s/%s?q=%u&lang=en", w1, w2, id);
        else if (k < 95)
            snprintf(r, rs, "HTTPS://WWW.Site%u.Example/%s", rnd(500), w1);
        else if (k < 97)
            snprintf(r, rs, "mailto:info@%s", host);
        else if (k < 98)
            snprintf(r, rs, "javascript:void(0)");
        else
            snprintf(r, rs, " %s/%s page.html?x=%%7e ", w1, w2);
    }
}

/* which measurement */
enum { M_FAST, M_CURL, M_BARE_REL, M_BARE_ABS, M_ABS_FAST, M_ABS_CURL, M_N };

static const char *const mname[M_N] = {
    "url_canon_resolve, fast path",
    "url_canon_resolve, curl path only",
    "bare curl: set base + set ref + get URL",
    "bare curl: set absolute URL + get URL",
    "canonical absolute input, fast path",
    "canonical absolute input, curl path only",
};

typedef struct ctx {
    url_canon *fast, *slow;
    CURLU *h;
    const link *l;   /* links with their page */
    size_t n;
    char **abs;      /* canonical results, used as absolute input */
    size_t nabs;
    cr_buf out;
    size_t accepted;
    uint64_t sum;
} ctx;

static void run(ctx *x, int m)
{
    url_reject why;
    x->accepted = 0;
    if (m == M_FAST || m == M_CURL) {
        url_canon *c = m == M_FAST ? x->fast : x->slow;
        for (size_t i = 0; i < x->n; i++) {
            const link *k = &x->l[i];
            if (url_canon_resolve(c, k->base, strlen(k->base), k->ref, strlen(k->ref), &x->out,
                                  &why) == 0) {
                x->accepted++;
                x->sum += x->out.len;
            }
        }
    } else if (m == M_ABS_FAST || m == M_ABS_CURL) {
        url_canon *c = m == M_ABS_FAST ? x->fast : x->slow;
        for (size_t i = 0; i < x->nabs; i++)
            if (url_canon_resolve(c, NULL, 0, x->abs[i], strlen(x->abs[i]), &x->out, &why) == 0)
                x->accepted++;
    } else {
        for (size_t i = 0; i < x->n; i++) {
            char *u = NULL;
            CURLUcode rc = curl_url_set(x->h, CURLUPART_URL, x->l[i].base, 0);
            if (rc == CURLUE_OK && m == M_BARE_REL)
                rc = curl_url_set(x->h, CURLUPART_URL, x->l[i].ref, 0);
            if (rc == CURLUE_OK && curl_url_get(x->h, CURLUPART_URL, &u, 0) == CURLUE_OK) {
                x->accepted++;
                x->sum += strlen(u);
            }
            curl_free(u);
        }
    }
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (n < LINKS_PER_PAGE)
        n = LINKS_PER_PAGE;
    if (reps < 1)
        reps = 1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ctx x;
    memset(&x, 0, sizeof x);
    link *l = malloc(n * sizeof *l);
    x.abs = malloc(n * sizeof *x.abs);
    if (l == NULL || x.abs == NULL)
        return 1;
    make_links(l, n);
    x.l = l;
    x.n = n;
    url_policy p;
    url_policy_defaults(&p);
    x.fast = url_canon_new(&p);
    p.curl_only = true;
    x.slow = url_canon_new(&p);
    x.h = curl_url();
    if (x.fast == NULL || x.slow == NULL || x.h == NULL)
        return 1;
    cr_buf_init(&x.out, 0);
    for (size_t i = 0; i < n; i++) {
        url_reject why;
        if (url_canon_resolve(x.fast, l[i].base, strlen(l[i].base), l[i].ref, strlen(l[i].ref),
                              &x.out, &why) == 0)
            x.abs[x.nabs++] = strdup(x.out.data);
    }

    double best[M_N];
    size_t acc[M_N];
    url_canon_stats s0, s1;
    url_canon_get_stats(x.fast, &s0);
    for (int m = 0; m < M_N; m++) {
        best[m] = 1e30;
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            run(&x, m);
            double t = (now() - t0) * 1e9 / (double)(m >= M_ABS_FAST ? x.nabs : n);
            if (t < best[m])
                best[m] = t;
        }
        acc[m] = x.accepted;
        if (m == M_FAST)
            url_canon_get_stats(x.fast, &s1);
    }
    printf("links: %zu (%d per page), accepted %zu, fast path took %.1f%% of them; "
           "best of %d runs\n",
           n, LINKS_PER_PAGE, acc[M_FAST],
           100.0 * (double)(s1.fast - s0.fast) / (double)reps / (double)(acc[M_FAST] ? acc[M_FAST] : 1),
           reps);
    printf("%-44s %10s %14s\n", "", "ns/URL", "URLs/s");
    for (int m = 0; m < M_N; m++)
        printf("%-44s %10.0f %14.0f\n", mname[m], best[m], 1e9 / best[m]);
    printf("fast path vs curl path: %.1fx on links, %.1fx on canonical absolute URLs\n",
           best[M_CURL] / best[M_FAST], best[M_ABS_CURL] / best[M_ABS_FAST]);
    int rc = 0;
    if (acc[M_FAST] != acc[M_CURL] || acc[M_ABS_FAST] != x.nabs || acc[M_ABS_CURL] != x.nabs) {
        fprintf(stderr, "bench_url: the paths disagree on what to accept\n");
        rc = 1;
    }
    fprintf(stderr, "(checksum %llu)\n", (unsigned long long)x.sum);
    for (size_t i = 0; i < x.nabs; i++)
        free(x.abs[i]);
    free(x.abs);
    cr_buf_release(&x.out);
    curl_url_cleanup(x.h);
    url_canon_free(x.fast);
    url_canon_free(x.slow);
    free(l);
    curl_global_cleanup();
    return rc;
}
