/* bench/bench_url: URL parsing speed per link: the WHATWG parser (fetch form
 * and key, what the crawl computes for every link) against the
 * canonicalizer it replaced (bench/url_v1.inc: its fast path, the goal's
 * yardstick, and its curl_url path) and against bare curl_url calls, on
 * link-like input: pages on a few hundred hosts, ~40 links each, in the
 * shapes hrefs come in (absolute, root-relative, relative, "../", query with
 * tracking parameters, fragments, protocol-relative, a few mailto: /
 * javascript:, a few IDN hosts). Also canonical absolute input (seeds, the
 * dedup tool).
 *
 * The measurements are interleaved, round after round, so the machine's
 * load falls on all of them alike; each figure is the median of the rounds.
 * usage: bench_url [links [rounds]]   (default 200000 7) */
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/clock.h"
#include "crawler/web/url.h"

#include "url_v1.inc"

#define LINKS_PER_PAGE 40
#define MAX_ROUNDS 31

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

static double now(void) { return (double)cr_mono_ns() / 1e9; }

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
        else if (k < 96)
            snprintf(r, rs, "https://b\xc3\xbc" "cher%u.example/%s", rnd(20), w1);
        else if (k < 97)
            snprintf(r, rs, "mailto:info@%s", host);
        else if (k < 98)
            snprintf(r, rs, "javascript:void(0)");
        else
            snprintf(r, rs, " %s/%s page.html?x=%%7e ", w1, w2);
    }
}

/* which measurement */
enum {
    M_NEW_BOTH, M_NEW_KEY, M_NEW_FETCH, M_OLD_FAST, M_OLD_CURL, M_BARE_REL,
    M_ABS_NEW_BOTH, M_ABS_OLD_FAST, M_ABS_OLD_CURL, M_BARE_ABS, M_N
};

static const char *const mname[M_N] = {
    "new parser: fetch form + key (per link)",
    "new parser: key only",
    "new parser: fetch form only",
    "old canonicalizer, fast path (the goal's yardstick)",
    "old canonicalizer, curl path only",
    "bare curl_url: set base + set ref + get URL",
    "absolute input, new parser: fetch form + key",
    "absolute input, old fast path",
    "absolute input, old curl path only",
    "absolute input, bare curl_url: set + get URL",
};

typedef struct ctx {
    url_canon *c;
    v1_canon *fast, *slow;
    CURLU *h;
    const link *l;   /* links with their page */
    size_t n;
    char **abs;      /* fetch forms, used as absolute input */
    size_t nabs;
    cr_buf out, key;
    size_t accepted;
    uint64_t sum;
} ctx;

static void run(ctx *x, int m)
{
    url_reject why;
    v1_reject vwhy;
    x->accepted = 0;
    bool abs = m >= M_ABS_NEW_BOTH;
    size_t n = abs ? x->nabs : x->n;
    for (size_t i = 0; i < n; i++) {
        const char *base = abs ? NULL : x->l[i].base;
        const char *ref = abs ? x->abs[i] : x->l[i].ref;
        size_t blen = base ? strlen(base) : 0, rlen = strlen(ref);
        int r = -1;
        switch (m) {
        case M_NEW_BOTH:
        case M_ABS_NEW_BOTH:
            r = url_canon_forms(x->c, base, blen, ref, rlen, &x->out, &x->key, &why);
            break;
        case M_NEW_KEY:
            r = url_canon_forms(x->c, base, blen, ref, rlen, NULL, &x->key, &why);
            break;
        case M_NEW_FETCH:
            r = url_canon_forms(x->c, base, blen, ref, rlen, &x->out, NULL, &why);
            break;
        case M_OLD_FAST:
        case M_ABS_OLD_FAST:
            r = v1_canon_resolve(x->fast, base, blen, ref, rlen, &x->out, &vwhy);
            break;
        case M_OLD_CURL:
        case M_ABS_OLD_CURL:
            r = v1_canon_resolve(x->slow, base, blen, ref, rlen, &x->out, &vwhy);
            break;
        default: {
            char *u = NULL;
            CURLUcode rc = curl_url_set(x->h, CURLUPART_URL, abs ? ref : base, 0);
            if (rc == CURLUE_OK && !abs)
                rc = curl_url_set(x->h, CURLUPART_URL, ref, 0);
            if (rc == CURLUE_OK && curl_url_get(x->h, CURLUPART_URL, &u, 0) == CURLUE_OK)
                r = 0;
            if (u)
                x->sum += strlen(u);
            curl_free(u);
            break;
        }
        }
        if (r == 0) {
            x->accepted++;
            x->sum += x->out.len + x->key.len;
        }
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000;
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    if (n < LINKS_PER_PAGE)
        n = LINKS_PER_PAGE;
    if (rounds < 1)
        rounds = 1;
    if (rounds > MAX_ROUNDS)
        rounds = MAX_ROUNDS;
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
    x.c = url_canon_new(&p);
    v1_policy vp;
    v1_policy_defaults(&vp);
    x.fast = v1_canon_new(&vp);
    vp.curl_only = true;
    x.slow = v1_canon_new(&vp);
    x.h = curl_url();
    if (x.c == NULL || x.fast == NULL || x.slow == NULL || x.h == NULL)
        return 1;
    cr_buf_init(&x.out, 0);
    cr_buf_init(&x.key, 0);
    for (size_t i = 0; i < n; i++) {
        url_reject why;
        if (url_canon_forms(x.c, l[i].base, strlen(l[i].base), l[i].ref, strlen(l[i].ref),
                            &x.out, NULL, &why) == 0)
            x.abs[x.nabs++] = strdup(x.out.data);
    }

    static double t[M_N][MAX_ROUNDS];
    size_t acc[M_N];
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < M_N; m++) {
            double t0 = now();
            run(&x, m);
            t[m][r] = (now() - t0) * 1e9 / (double)(m >= M_ABS_NEW_BOTH ? x.nabs : n);
            acc[m] = x.accepted;
        }
    }
    double med[M_N];
    for (int m = 0; m < M_N; m++) {
        qsort(t[m], (size_t)rounds, sizeof t[m][0], cmp_d);
        med[m] = t[m][rounds / 2];
    }
    url_canon_stats st;
    url_canon_get_stats(x.c, &st);
    printf("%zu links (%d per page), %zu absolute URLs; medians of %d interleaved rounds\n\n",
           n, LINKS_PER_PAGE, x.nabs, rounds);
    printf("| | accepted | ns/URL | URLs/s | vs old fast path |\n|---|---:|---:|---:|---:|\n");
    for (int m = 0; m < M_N; m++) {
        int ref = m >= M_ABS_NEW_BOTH ? M_ABS_OLD_FAST : M_OLD_FAST;
        printf("| %s | %zu | %.0f | %.0f | %.2fx |\n", mname[m], acc[m], med[m], 1e9 / med[m],
               med[m] / med[ref]);
    }
    printf("\ngoal: the new parser (fetch form + key) within 1.3x of the old fast path per "
           "link: %.2fx (%s)\n",
           med[M_NEW_BOTH] / med[M_OLD_FAST],
           med[M_NEW_BOTH] <= 1.3 * med[M_OLD_FAST] ? "met" : "missed");
    v1_canon_stats vs;
    v1_canon_get_stats(x.fast, &vs);
    printf("hosts through libidn2: %llu labels; the old fast path handed %.1f%% of what it "
           "accepted to curl\n",
           (unsigned long long)st.idna_labels,
           100.0 * (double)vs.curl / (double)(vs.fast + vs.curl ? vs.fast + vs.curl : 1));
    int rc = 0;
    if (acc[M_NEW_BOTH] != acc[M_NEW_KEY] || acc[M_NEW_BOTH] != acc[M_NEW_FETCH] ||
        acc[M_ABS_NEW_BOTH] != x.nabs) {
        fprintf(stderr, "bench_url: the new parser's outputs disagree on what to accept\n");
        rc = 1;
    }
    fprintf(stderr, "(checksum %llu)\n", (unsigned long long)x.sum);
    for (size_t i = 0; i < x.nabs; i++)
        free(x.abs[i]);
    free(x.abs);
    cr_buf_release(&x.out);
    cr_buf_release(&x.key);
    curl_url_cleanup(x.h);
    url_canon_free(x.c);
    v1_canon_free(x.fast);
    v1_canon_free(x.slow);
    free(l);
    curl_global_cleanup();
    return rc;
}
