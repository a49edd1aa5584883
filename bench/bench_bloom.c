/* bench/bench_bloom: crawld's Bloom filter against libbloom, in one run.
 *
 * Same n, same p = 1%, the same URL-like keys (generated before each timed
 * loop, in chunks of CHUNK keys), for a filter that fits in cache (~8 MB)
 * and one far larger (>= 256 MB). Reported per filter: ns per insert (the
 * median over chunks of a full fill), ns per query with 0%, 50% and 100% of
 * the queried keys present (median of REPS runs), with 1 and 2 threads,
 * bits per key, and the false-positive rate measured over FPR_KEYS keys
 * that were never inserted. Also: a classic Kirsch-Mitzenmacher layout
 * (k probes spread over the whole array) built on the same fingerprint, the
 * evidence for the blocked layout; and the scalable chain grown to 1024x
 * its first stage against a single filter sized for the final count.
 *
 * libbloom declares bloom_add/bloom_free/struct bloom like our module, so
 * its header is included under renamed identifiers and its functions are
 * taken from the shared object with dlopen/dlsym; libbloom is not safe for
 * concurrent adds, so it is timed with 2 threads for queries only.
 *
 * Environment: BLOOM_BENCH_BIG (n of the large filter, default 224000000:
 * libbloom's 2^31-bit cap allows at most ~224M keys at 1%),
 * BLOOM_BENCH_SMALL (default 6500000), BLOOM_BENCH_REPS (default 5),
 * BLOOM_BENCH_QUERIES (keys per query run, default 2000000),
 * BLOOM_BENCH_FPR_KEYS (default 10000000), BLOOM_BENCH_CHAIN_N0 (default 4096). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define bloom libbloom_s
#define bloom_init libbloom_init_decl
#define bloom_init_size libbloom_init_size_decl
#define bloom_check libbloom_check_decl
#define bloom_add libbloom_add_decl
#define bloom_print libbloom_print_decl
#define bloom_free libbloom_free_decl
#define bloom_reset libbloom_reset_decl
#define bloom_version libbloom_version_decl
#include <bloom.h>
#undef bloom
#undef bloom_init
#undef bloom_init_size
#undef bloom_check
#undef bloom_add
#undef bloom_print
#undef bloom_free
#undef bloom_reset
#undef bloom_version

#include "dedup/bloom.h"
#include "dedup/hash.h"

#define CHUNK 1000000u
#define MAXT 2

/* ---- clock, stats ------------------------------------------------------- */

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of the calling thread: unlike the wall clock it does not count
 * the time other processes held the core (the machine is shared). */
static double cpu_now(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return def;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    return *end == '\0' && v > 0 ? (uint64_t)v : def;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15u;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ---- URL-like keys -------------------------------------------------------- */

static const char *const words[] = {
    "news", "blog", "shop", "wiki", "docs", "forum", "media", "static", "cdn", "mail",
    "search", "maps", "video", "music", "store", "help", "api", "dev", "events", "jobs",
};
static const char *const tlds[] = { "com", "org", "net", "de", "fr", "io", "co.uk", "example" };
static const char *const dirs[] = {
    "articles", "2023/05", "2024/11", "products", "category/books", "users", "tags/c", "en/about",
    "wiki/Special", "p", "threads", "images/full",
};

static char *put(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

static char *put_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Key i of family f ('p': inserted, 'a': never inserted). Distinct (f, i)
 * give distinct keys: both appear verbatim in the path. 50-110 bytes. */
static size_t url_key(char *out, char f, uint64_t i)
{
    uint64_t h = mix(i * 2 + (f == 'a'));
    char *p = out;
    p = put(p, (h & 3) ? "https://" : "http://");
    if (h & 4)
        p = put(p, "www.");
    p = put(p, words[(h >> 8) % 20]);
    p = put_u64(p, (h >> 16) % 200000);
    *p++ = '.';
    p = put(p, tlds[(h >> 40) % 8]);
    *p++ = '/';
    p = put(p, dirs[(h >> 44) % 12]);
    *p++ = '/';
    *p++ = f;
    p = put_u64(p, i);
    p = put(p, (h >> 52) & 1 ? ".html" : "/index.php?id=");
    if ((h >> 52) & 1)
        p = put_u64(p, h >> 54);
    else
        p = put_u64(p, (h >> 24) % 99991);
    return (size_t)(p - out);
}

typedef struct keyset {
    char *bytes;
    uint32_t *off; /* n + 1 offsets */
    size_t n, cap_n, cap_bytes;
} keyset;

static void keyset_reserve(keyset *ks, size_t n)
{
    if (n <= ks->cap_n)
        return;
    ks->cap_n = n;
    ks->cap_bytes = n * 128;
    free(ks->bytes);
    free(ks->off);
    ks->bytes = malloc(ks->cap_bytes);
    ks->off = malloc((n + 1) * sizeof *ks->off);
    if (ks->bytes == NULL || ks->off == NULL) {
        fprintf(stderr, "bench_bloom: out of memory\n");
        exit(1);
    }
}

static void keyset_free(keyset *ks)
{
    free(ks->bytes);
    free(ks->off);
    memset(ks, 0, sizeof *ks);
}

/* Keys first..first+n-1 of family f. */
static void gen_range(keyset *ks, char f, uint64_t first, size_t n)
{
    keyset_reserve(ks, n);
    size_t pos = 0;
    for (size_t j = 0; j < n; j++) {
        ks->off[j] = (uint32_t)pos;
        pos += url_key(ks->bytes + pos, f, first + j);
    }
    ks->off[n] = (uint32_t)pos;
    ks->n = n;
}

/* A query set: each key is present (one of the n inserted, at random) with
 * probability pct/100, else a never-inserted key. Returns the present count. */
static size_t gen_queries(keyset *ks, size_t q, unsigned pct, uint64_t n, uint64_t salt)
{
    keyset_reserve(ks, q);
    size_t pos = 0, present = 0;
    for (size_t j = 0; j < q; j++) {
        uint64_t h = mix(j ^ (salt << 40));
        ks->off[j] = (uint32_t)pos;
        if (h % 100 < pct) {
            pos += url_key(ks->bytes + pos, 'p', mix(h) % n);
            present++;
        } else {
            pos += url_key(ks->bytes + pos, 'a', mix(h ^ 1) % n); /* same length mix */
        }
    }
    ks->off[q] = (uint32_t)pos;
    ks->n = q;
    return present;
}

/* ---- the filters ---------------------------------------------------------- */

/* libbloom, through dlsym */
static int (*lb_init)(struct libbloom_s *, int, double);
static int (*lb_check)(struct libbloom_s *, const void *, int);
static int (*lb_add)(struct libbloom_s *, const void *, int);
static void (*lb_free)(struct libbloom_s *);

static void load_libbloom(void)
{
    void *h = dlopen("libbloom.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
        h = dlopen("libbloom.so", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "bench_bloom: cannot load libbloom: %s\n", dlerror());
        exit(1);
    }
    *(void **)&lb_init = dlsym(h, "bloom_init");
    *(void **)&lb_check = dlsym(h, "bloom_check");
    *(void **)&lb_add = dlsym(h, "bloom_add");
    *(void **)&lb_free = dlsym(h, "bloom_free");
    if (!lb_init || !lb_check || !lb_add || !lb_free) {
        fprintf(stderr, "bench_bloom: libbloom symbols missing\n");
        exit(1);
    }
}

/* Classic Kirsch-Mitzenmacher layout on the same fingerprint: probe i at
 * (lo + i * hi) mapped onto m bits; same atomics as ours. */
typedef struct km {
    _Atomic uint64_t *w;
    uint64_t m;
    unsigned k;
} km;

static km *km_new(uint64_t n, double p)
{
    km *f = calloc(1, sizeof *f);
    double bpk = -log(p) / (M_LN2 * M_LN2);
    f->m = (uint64_t)ceil((double)n * bpk / 64.0) * 64;
    f->k = (unsigned)lround(bpk * M_LN2);
    f->w = calloc(f->m / 64, 8);
    if (f->w == NULL) {
        fprintf(stderr, "bench_bloom: out of memory\n");
        exit(1);
    }
    return f;
}

static void km_free(km *f)
{
    free(f->w);
    free(f);
}

static inline uint64_t km_pos(const km *f, hash_fp fp, unsigned i)
{
    return (uint64_t)(((unsigned __int128)(fp.lo + i * (fp.hi | 1)) * f->m) >> 64);
}

static int km_add(km *f, const char *k, size_t len)
{
    hash_fp fp = hash_fingerprint(k, len);
    uint64_t all = 1;
    for (unsigned i = 0; i < f->k; i++) {
        uint64_t pos = km_pos(f, fp, i), bit = UINT64_C(1) << (pos & 63);
        all &= (atomic_fetch_or_explicit(&f->w[pos >> 6], bit, memory_order_relaxed) & bit) != 0;
    }
    return (int)all;
}

static int km_query(km *f, const char *k, size_t len)
{
    hash_fp fp = hash_fingerprint(k, len);
    for (unsigned i = 0; i < f->k; i++) {
        uint64_t pos = km_pos(f, fp, i);
        if (!(atomic_load_explicit(&f->w[pos >> 6], memory_order_relaxed) & (UINT64_C(1) << (pos & 63))))
            return 0;
    }
    return 1;
}

enum impl { OURS, BATCH, LIB, KM, NIMPL };
static const char *const impl_name[NIMPL] = { "crawld", "crawld batched", "libbloom", "classic k-probe" };

typedef struct target {
    enum impl impl;
    bloom *ours;
    struct libbloom_s *lib;
    km *km;
} target;

#define BATCH_KEYS 64

static uint64_t run_keys(const target *t, const keyset *ks, size_t from, size_t to, int insert)
{
    uint64_t yes = 0;
    const char *b = ks->bytes;
    const uint32_t *o = ks->off;
    switch (t->impl) {
    case OURS:
        for (size_t j = from; j < to; j++)
            yes += (uint64_t)(insert ? bloom_add(t->ours, b + o[j], o[j + 1] - o[j])
                                     : bloom_query(t->ours, b + o[j], o[j + 1] - o[j]));
        break;
    case BATCH: {
        hash_fp fps[BATCH_KEYS];
        uint8_t res[BATCH_KEYS];
        for (size_t j = from; j < to; j += BATCH_KEYS) {
            size_t m = to - j < BATCH_KEYS ? to - j : BATCH_KEYS;
            for (size_t i = 0; i < m; i++)
                fps[i] = hash_fingerprint(b + o[j + i], o[j + i + 1] - o[j + i]);
            if (insert)
                bloom_add_many(t->ours, fps, m, res);
            else
                bloom_query_many(t->ours, fps, m, res);
            for (size_t i = 0; i < m; i++)
                yes += res[i];
        }
        break;
    }
    case LIB:
        for (size_t j = from; j < to; j++)
            yes += (uint64_t)(insert ? lb_add(t->lib, b + o[j], (int)(o[j + 1] - o[j]))
                                     : lb_check(t->lib, b + o[j], (int)(o[j + 1] - o[j])));
        break;
    case KM:
        for (size_t j = from; j < to; j++)
            yes += (uint64_t)(insert ? km_add(t->km, b + o[j], o[j + 1] - o[j])
                                     : km_query(t->km, b + o[j], o[j + 1] - o[j]));
        break;
    default:
        break;
    }
    return yes;
}

struct work {
    const target *t;
    const keyset *ks;
    size_t from, to;
    int insert;
    uint64_t yes;
    double cpu; /* seconds */
};

static void *work_main(void *p)
{
    struct work *w = p;
    double c0 = cpu_now();
    w->yes = run_keys(w->t, w->ks, w->from, w->to, w->insert);
    w->cpu = cpu_now() - c0;
    return NULL;
}

typedef struct timing {
    double cpu;   /* CPU ns per key (summed over threads) */
    double wall;  /* wall-clock ns per key */
    double cores; /* CPU time / wall time: cores the run actually got */
} timing;

/* Runs all of ks through t with nt threads; *yes = positives. */
static timing timed_run(const target *t, const keyset *ks, int insert, int nt, uint64_t *yes)
{
    struct work w[MAXT];
    pthread_t th[MAXT];
    double cpu = 0, t0 = now();
    if (nt == 1) {
        double c0 = cpu_now();
        *yes = run_keys(t, ks, 0, ks->n, insert);
        cpu = cpu_now() - c0;
    } else {
        for (int i = 0; i < nt; i++) {
            w[i] = (struct work){ t, ks, ks->n * (size_t)i / (size_t)nt,
                                  ks->n * (size_t)(i + 1) / (size_t)nt, insert, 0, 0 };
            pthread_create(&th[i], NULL, work_main, &w[i]);
        }
        *yes = 0;
        for (int i = 0; i < nt; i++) {
            pthread_join(th[i], NULL);
            *yes += w[i].yes;
            cpu += w[i].cpu;
        }
    }
    double wall = now() - t0;
    timing tm = { cpu * 1e9 / (double)ks->n, wall * 1e9 / (double)ks->n, cpu / wall };
    return tm;
}

/* Medians of each field over n timings. */
static timing median_timing(const timing *v, size_t n)
{
    double *a = calloc(n ? n : 1, sizeof *a);
    timing m;
    for (size_t i = 0; i < n; i++)
        a[i] = v[i].cpu;
    m.cpu = median(a, n);
    for (size_t i = 0; i < n; i++)
        a[i] = v[i].wall;
    m.wall = median(a, n);
    for (size_t i = 0; i < n; i++)
        a[i] = v[i].cores;
    m.cores = median(a, n);
    free(a);
    return m;
}

static const timing no_timing = { NAN, NAN, NAN };

/* ---- one size --------------------------------------------------------------- */

enum { T1, T2 };
static const unsigned mixes[3] = { 0, 50, 100 };

typedef struct result {
    const char *label;
    uint64_t n;
    int have[NIMPL];
    timing ins[NIMPL][2];     /* per insert, 1 and 2 threads */
    timing q[NIMPL][2][3];    /* per query by threads and mix */
    double bpk[NIMPL];
    double fpr[NIMPL];
    uint64_t fn[NIMPL];       /* false negatives seen (must be 0) */
    double mbytes[NIMPL];
    int k[NIMPL];
} result;

static bloom *ours_new(uint64_t n, double p)
{
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = n;
    bp.fp_rate = p;
    bp.max_stages = 1; /* a fixed-size filter, like libbloom's */
    bloom *bf = NULL;
    if (bloom_new(&bp, &bf) != 0) {
        fprintf(stderr, "bench_bloom: bloom_new failed\n");
        exit(1);
    }
    return bf;
}

static void run_size(result *r, const char *label, uint64_t n, int with_km, size_t qn,
                     unsigned reps, uint64_t fpr_keys)
{
    memset(r, 0, sizeof *r);
    r->label = label;
    r->n = n;
    fprintf(stderr, "[%s] n=%llu: filling\n", label, (unsigned long long)n);
    bloom *ours = ours_new(n, 0.01), *ours2 = ours_new(n, 0.01), *oursb = ours_new(n, 0.01);
    struct libbloom_s lib;
    if (lb_init(&lib, (int)n, 0.01) != 0) {
        fprintf(stderr, "bench_bloom: libbloom init failed\n");
        exit(1);
    }
    km *kf = with_km ? km_new(n, 0.01) : NULL;
    target t_ours = { OURS, ours, NULL, NULL }, t_ours2 = { OURS, ours2, NULL, NULL };
    target t_batch = { BATCH, oursb, NULL, NULL }, t_lib = { LIB, NULL, &lib, NULL };
    target t_km = { KM, NULL, NULL, kf };
    size_t nchunks = (size_t)((n + CHUNK - 1) / CHUNK);
    timing *s[5];
    for (int i = 0; i < 5; i++)
        s[i] = calloc(nchunks, sizeof(timing));
    keyset ks = { 0 };
    uint64_t yes;
    for (size_t c = 0; c < nchunks; c++) {
        uint64_t first = (uint64_t)c * CHUNK;
        size_t m = (size_t)(n - first < CHUNK ? n - first : CHUNK);
        gen_range(&ks, 'p', first, m); /* untimed */
        s[0][c] = timed_run(&t_ours, &ks, 1, 1, &yes);
        s[1][c] = timed_run(&t_ours2, &ks, 1, 2, &yes);
        s[2][c] = timed_run(&t_batch, &ks, 1, 1, &yes);
        s[3][c] = timed_run(&t_lib, &ks, 1, 1, &yes);
        if (kf)
            s[4][c] = timed_run(&t_km, &ks, 1, 1, &yes);
    }
    /* the chunks of a full fill are the repetitions; the last one may be short */
    size_t full = n % CHUNK && nchunks > 1 ? nchunks - 1 : nchunks;
    r->ins[OURS][T1] = median_timing(s[0], full);
    r->ins[OURS][T2] = median_timing(s[1], full);
    r->ins[BATCH][T1] = median_timing(s[2], full);
    r->ins[BATCH][T2] = no_timing;
    r->ins[LIB][T1] = median_timing(s[3], full);
    r->ins[LIB][T2] = no_timing; /* libbloom is not safe for concurrent adds */
    r->ins[KM][T1] = kf ? median_timing(s[4], full) : no_timing;
    r->ins[KM][T2] = no_timing;
    for (int i = 0; i < 5; i++)
        free(s[i]);
    /* the 2-thread and batched builds must hold every key too */
    uint64_t sample = n < 2000000 ? n : 2000000;
    gen_range(&ks, 'p', n - sample, (size_t)sample);
    uint64_t y2 = run_keys(&t_ours2, &ks, 0, ks.n, 0), yb = run_keys(&t_batch, &ks, 0, ks.n, 0);
    r->fn[OURS] = (sample - y2) + (sample - yb);
    bloom_free(ours2);
    bloom_free(oursb);

    r->have[OURS] = r->have[BATCH] = r->have[LIB] = 1;
    r->have[KM] = kf != NULL;
    bloom_stats st;
    bloom_stats_get(ours, &st);
    bloom_stage_info si;
    bloom_stage_info_get(ours, 0, 0, &si);
    r->bpk[OURS] = r->bpk[BATCH] = (double)st.bits / (double)n;
    r->mbytes[OURS] = r->mbytes[BATCH] = (double)st.bits / 8 / 1048576.0;
    r->k[OURS] = r->k[BATCH] = (int)si.k;
    r->bpk[LIB] = (double)lib.bits / (double)n;
    r->mbytes[LIB] = (double)lib.bytes / 1048576.0;
    r->k[LIB] = lib.hashes;
    if (kf) {
        r->bpk[KM] = (double)kf->m / (double)n;
        r->mbytes[KM] = (double)kf->m / 8 / 1048576.0;
        r->k[KM] = (int)kf->k;
    }

    fprintf(stderr, "[%s] queries\n", label);
    target *tq[NIMPL] = { &t_ours, NULL, &t_lib, &t_km };
    target t_batchq = { BATCH, ours, NULL, NULL };
    tq[BATCH] = &t_batchq;
    timing *v = calloc(reps, sizeof(timing));
    for (int mi = 0; mi < 3; mi++) {
        keyset qs = { 0 };
        size_t present = gen_queries(&qs, qn, mixes[mi], n, (uint64_t)mi + 1);
        for (int im = 0; im < NIMPL; im++) {
            if (!r->have[im])
                continue;
            for (int nt = 1; nt <= 2; nt++) {
                if (im == BATCH && nt == 2) {
                    r->q[im][T2][mi] = no_timing;
                    continue;
                }
                for (unsigned rep = 0; rep < reps; rep++) {
                    v[rep] = timed_run(tq[im], &qs, 0, nt, &yes);
                    if (yes < present)
                        r->fn[im] += present - yes;
                }
                r->q[im][nt - 1][mi] = median_timing(v, reps);
            }
        }
        keyset_free(&qs);
    }
    free(v);

    fprintf(stderr, "[%s] false-positive rate over %llu absent keys\n", label,
            (unsigned long long)fpr_keys);
    uint64_t fp[NIMPL] = { 0 };
    for (uint64_t first = 0; first < fpr_keys; first += CHUNK) {
        size_t m = (size_t)(fpr_keys - first < CHUNK ? fpr_keys - first : CHUNK);
        gen_range(&ks, 'a', first, m);
        fp[OURS] += run_keys(&t_ours, &ks, 0, m, 0);
        fp[LIB] += run_keys(&t_lib, &ks, 0, m, 0);
        if (kf)
            fp[KM] += run_keys(&t_km, &ks, 0, m, 0);
    }
    r->fpr[OURS] = r->fpr[BATCH] = (double)fp[OURS] / (double)fpr_keys;
    r->fpr[LIB] = (double)fp[LIB] / (double)fpr_keys;
    r->fpr[KM] = (double)fp[KM] / (double)fpr_keys;
    keyset_free(&ks);
    bloom_free(ours);
    lb_free(&lib);
    if (kf)
        km_free(kf);
}

/* ---- the chain -------------------------------------------------------------- */

typedef struct chain_result {
    uint64_t n0, at1024, full;
    double fpr1024, bpk1024, fpr_full, bpk_full, model_full;
    double single_bpk, single_fpr;
    unsigned stages;
    uint64_t fn;
} chain_result;

static double fpr_of(bloom *bf, uint64_t nkeys, keyset *ks)
{
    uint64_t fp = 0;
    target t = { OURS, bf, NULL, NULL };
    for (uint64_t first = 0; first < nkeys; first += CHUNK) {
        size_t m = (size_t)(nkeys - first < CHUNK ? nkeys - first : CHUNK);
        gen_range(ks, 'a', first, m);
        fp += run_keys(&t, ks, 0, m, 0);
    }
    return (double)fp / (double)nkeys;
}

static void run_chain(chain_result *c, uint64_t n0, uint64_t fpr_keys)
{
    fprintf(stderr, "[chain] n0=%llu, growing to 2047 x n0\n", (unsigned long long)n0);
    memset(c, 0, sizeof *c);
    c->n0 = n0;
    c->at1024 = n0 * 1024;
    c->full = n0 * 2047;
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = n0;
    bp.shards = 1; /* the chain itself; shards only split it */
    bloom *bf = NULL;
    if (bloom_new(&bp, &bf) != 0)
        exit(1);
    keyset ks = { 0 };
    target t = { OURS, bf, NULL, NULL };
    bloom_stats st;
    for (uint64_t first = 0; first < c->full;) {
        uint64_t stop = first < c->at1024 ? c->at1024 : c->full;
        size_t m = (size_t)(stop - first < CHUNK ? stop - first : CHUNK);
        gen_range(&ks, 'p', first, m);
        run_keys(&t, &ks, 0, m, 1);
        first += m;
        if (first == c->at1024) {
            bloom_stats_get(bf, &st);
            c->bpk1024 = (double)st.bits / (double)first;
            c->fpr1024 = fpr_of(bf, fpr_keys / 4, &ks);
        }
    }
    bloom_stats_get(bf, &st);
    c->stages = st.stages_total;
    c->bpk_full = (double)st.bits / (double)c->full;
    c->model_full = st.fpr_model;
    c->fpr_full = fpr_of(bf, fpr_keys, &ks);
    for (uint64_t first = 0; first < c->full; first += CHUNK) { /* no key lost */
        size_t m = (size_t)(c->full - first < CHUNK ? c->full - first : CHUNK);
        gen_range(&ks, 'p', first, m);
        c->fn += m - run_keys(&t, &ks, 0, m, 0);
    }
    bloom_free(bf);

    bp.expected_items = c->full;
    bp.max_stages = 1;
    if (bloom_new(&bp, &bf) != 0)
        exit(1);
    t.ours = bf;
    for (uint64_t first = 0; first < c->full; first += CHUNK) {
        size_t m = (size_t)(c->full - first < CHUNK ? c->full - first : CHUNK);
        gen_range(&ks, 'p', first, m);
        run_keys(&t, &ks, 0, m, 1);
    }
    bloom_stats_get(bf, &st);
    c->single_bpk = (double)st.bits / (double)c->full;
    c->single_fpr = fpr_of(bf, fpr_keys, &ks);
    bloom_free(bf);
    keyset_free(&ks);
}

/* ---- report ----------------------------------------------------------------- */

/* One table cell: v with prec decimals and a suffix ("%", "x" or ""). */
static void cell(double v, int prec, const char *suffix)
{
    if (isnan(v))
        printf(" n/a |");
    else
        printf(" %.*f%s |", prec, v, suffix);
}

static void ratio_cell(double lib, double ours)
{
    if (isnan(lib) || isnan(ours) || ours <= 0)
        printf(" n/a |");
    else
        printf(" %.1fx |", lib / ours);
}

/* 2-thread speedup from CPU time: what two free cores give (1.0 = no gain). */
static double cpu_speedup(timing one, timing two) { return 2.0 * one.cpu / two.cpu; }
static double wall_speedup(timing one, timing two) { return one.wall / two.wall; }

static void print_size(const result *r)
{
    printf("\n### %s: n = %llu, p = 1%%\n\n", r->label, (unsigned long long)r->n);
    printf("ns = CPU time per key and thread (median); see the notes below the tables.\n\n");
    printf("| measure | crawld | crawld batched | libbloom | classic k-probe | libbloom / crawld |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    printf("| memory (MiB) |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->mbytes[i] : NAN, 1, "");
    printf(" |\n| bits per key |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->bpk[i] : NAN, 2, "");
    printf(" |\n| k |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->k[i] : NAN, 0, "");
    printf(" |\n| measured FPR |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? 100.0 * r->fpr[i] : NAN, 3, "%");
    printf(" |\n");
    for (int nt = 0; nt < 2; nt++) {
        printf("| ns/insert, %d thread%s |", nt + 1, nt ? "s" : "");
        for (int i = 0; i < NIMPL; i++)
            cell(r->have[i] ? r->ins[i][nt].cpu : NAN, 1, "");
        ratio_cell(r->ins[LIB][nt].cpu, r->ins[OURS][nt].cpu);
        printf("\n");
        for (int mi = 0; mi < 3; mi++) {
            printf("| ns/query, %u%% present, %d thread%s |", mixes[mi], nt + 1, nt ? "s" : "");
            for (int i = 0; i < NIMPL; i++)
                cell(r->have[i] ? r->q[i][nt][mi].cpu : NAN, 1, "");
            ratio_cell(r->q[LIB][nt][mi].cpu, r->q[OURS][nt][mi].cpu);
            printf("\n");
        }
    }
    printf("| query 100%% / 0%% present, 1 thread |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->q[i][T1][2].cpu / r->q[i][T1][0].cpu : NAN, 2, "");
    printf(" |\n| 2-thread speedup, insert (CPU time) |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? cpu_speedup(r->ins[i][T1], r->ins[i][T2]) : NAN, 2, "x");
    printf(" |\n| 2-thread speedup, query 50%% (CPU time) |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? cpu_speedup(r->q[i][T1][1], r->q[i][T2][1]) : NAN, 2, "x");
    printf(" |\n| 2-thread speedup, insert (wall clock) |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? wall_speedup(r->ins[i][T1], r->ins[i][T2]) : NAN, 2, "x");
    printf(" |\n| 2-thread speedup, query 50%% (wall clock) |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? wall_speedup(r->q[i][T1][1], r->q[i][T2][1]) : NAN, 2, "x");
    printf(" |\n| cores the 2-thread query run got |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->q[i][T2][1].cores : NAN, 2, "");
    printf(" |\n| wall ns/query 50%%, 1 thread |");
    for (int i = 0; i < NIMPL; i++)
        cell(r->have[i] ? r->q[i][T1][1].wall : NAN, 1, "");
    ratio_cell(r->q[LIB][T1][1].wall, r->q[OURS][T1][1].wall);
    printf("\n");
    for (int i = 0; i < NIMPL; i++)
        if (r->fn[i])
            printf("\n**%s: %llu false negatives!**\n", impl_name[i], (unsigned long long)r->fn[i]);
}

static double worst_ratio(const result *r, int insert)
{
    if (insert)
        return r->ins[LIB][T1].cpu / r->ins[OURS][T1].cpu;
    double worst = INFINITY; /* the smallest libbloom/crawld query ratio over mixes */
    for (int mi = 0; mi < 3; mi++) {
        double x = r->q[LIB][T1][mi].cpu / r->q[OURS][T1][mi].cpu;
        if (x < worst)
            worst = x;
    }
    return worst;
}

/* One goal row: v with prec decimals and a suffix. */
static void goal(const char *what, int ok, double v, int prec, const char *suffix)
{
    printf("| %s | %.*f%s | %s |\n", what, prec, v, suffix, ok ? "met" : "**missed**");
}

static void loadavg(const char *when)
{
    double l[3] = { 0, 0, 0 };
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3)
            l[0] = l[1] = l[2] = NAN;
        fclose(f);
    }
    printf("load average %s: %.2f %.2f %.2f\n", when, l[0], l[1], l[2]);
}

int main(void)
{
    uint64_t big = env_u64("BLOOM_BENCH_BIG", 224000000);
    uint64_t small = env_u64("BLOOM_BENCH_SMALL", 6500000);
    unsigned reps = (unsigned)env_u64("BLOOM_BENCH_REPS", 5);
    size_t qn = (size_t)env_u64("BLOOM_BENCH_QUERIES", 2000000);
    uint64_t fpr_keys = env_u64("BLOOM_BENCH_FPR_KEYS", 10000000);
    uint64_t n0 = env_u64("BLOOM_BENCH_CHAIN_N0", 4096);
    if (big > 224000000) /* libbloom stores its bit count in an int */
        big = 224000000;
    load_libbloom();
    double t0 = now();
    printf("bench_bloom: crawld Bloom filter vs libbloom %s; %u reps per query figure, "
           "%zu keys per query run, FPR over %llu never-inserted keys\n",
           "1.6 (dlopen)", reps, qn, (unsigned long long)fpr_keys);
    loadavg("at start");
    result rs, rb;
    chain_result ch;
    run_size(&rs, "In cache", small, 1, qn, reps, fpr_keys);
    run_size(&rb, "Out of cache", big, 1, qn, reps, fpr_keys);
    run_chain(&ch, n0, fpr_keys);
    loadavg("at end");

    print_size(&rs);
    print_size(&rb);
    printf("\n### Scalable chain (1 shard, s = 2, r = 0.85, p = 1%%, first stage %llu keys)\n\n",
           (unsigned long long)ch.n0);
    printf("| filter | keys | stages | bits/key | measured FPR | model FPR |\n|---|---:|---:|---:|---:|---:|\n");
    printf("| chain at 1024 x n0 | %llu | | %.2f | %.3f%% | |\n", (unsigned long long)ch.at1024,
           ch.bpk1024, 100 * ch.fpr1024);
    printf("| chain, newest stage full | %llu | %u | %.2f | %.3f%% | %.3f%% |\n",
           (unsigned long long)ch.full, ch.stages, ch.bpk_full, 100 * ch.fpr_full,
           100 * ch.model_full);
    printf("| single filter sized for %llu | %llu | 1 | %.2f | %.3f%% | |\n",
           (unsigned long long)ch.full, (unsigned long long)ch.full, ch.single_bpk,
           100 * ch.single_fpr);
    printf("| chain / single bits per key | | | %.2fx | | |\n", ch.bpk_full / ch.single_bpk);
    if (ch.fn)
        printf("\n**chain: %llu false negatives!**\n", (unsigned long long)ch.fn);

    printf("\n### Goals\n\n| goal | measured | |\n|---|---:|---|\n");
    goal("queries >= 5x libbloom in cache (worst mix)", worst_ratio(&rs, 0) >= 5, worst_ratio(&rs, 0), 1, "x");
    goal("queries >= 8x libbloom out of cache (worst mix)", worst_ratio(&rb, 0) >= 8, worst_ratio(&rb, 0), 1, "x");
    goal("inserts >= 5x libbloom in cache", worst_ratio(&rs, 1) >= 5, worst_ratio(&rs, 1), 1, "x");
    goal("inserts >= 8x libbloom out of cache", worst_ratio(&rb, 1) >= 8, worst_ratio(&rb, 1), 1, "x");
    goal("bits per key <= 10.1 at 1% (out of cache)", rb.bpk[OURS] <= 10.1, rb.bpk[OURS], 2, "");
    goal("bits per key <= 10.1 at 1% (in cache)", rs.bpk[OURS] <= 10.1, rs.bpk[OURS], 2, "");
    double worst_fpr = rs.fpr[OURS] > rb.fpr[OURS] ? rs.fpr[OURS] : rb.fpr[OURS];
    goal("measured FPR <= 1.00% (worst of both sizes)", worst_fpr <= 0.01, 100 * worst_fpr, 3, "%");
    for (int which = 0; which < 2; which++) {
        const result *r = which ? &rb : &rs;
        const char *where = which ? "out of cache" : "in cache";
        char what[96];
        double d = fabs(r->q[OURS][T1][2].cpu / r->q[OURS][T1][0].cpu - 1);
        snprintf(what, sizeof what, "query 0%% vs 100%% present within 15%% (%s)", where);
        goal(what, d <= 0.15, 100 * d, 0, "%");
        double qs = cpu_speedup(r->q[OURS][T1][1], r->q[OURS][T2][1]);
        double is = cpu_speedup(r->ins[OURS][T1], r->ins[OURS][T2]);
        snprintf(what, sizeof what, "2 threads >= 1.8x one, query, CPU time (%s)", where);
        goal(what, qs >= 1.8, qs, 2, "x");
        snprintf(what, sizeof what, "2 threads >= 1.8x one, insert, CPU time (%s)", where);
        goal(what, is >= 1.8, is, 2, "x");
        double qw = wall_speedup(r->q[OURS][T1][1], r->q[OURS][T2][1]);
        snprintf(what, sizeof what, "2 threads >= 1.8x one, query, wall clock at %.1f cores (%s)",
                 r->q[OURS][T2][1].cores, where);
        goal(what, qw >= 1.8, qw, 2, "x");
    }
    goal("chain at 1024x: FPR <= 1% (newest stage full)", ch.fpr_full <= 0.01, 100 * ch.fpr_full, 3, "%");
    goal("chain bits/key <= 1.8x single filter", ch.bpk_full / ch.single_bpk <= 1.8,
         ch.bpk_full / ch.single_bpk, 2, "x");
    printf("\nNotes: ns figures are CPU time of the timed threads (CLOCK_THREAD_CPUTIME_ID), so time\n"
           "the shared machine gave to other processes is not counted; wall-clock figures and the\n"
           "cores a 2-thread run actually got are shown beside them. \"CPU time\" speedup is\n"
           "2 x (1-thread ns) / (2-thread ns per key and thread): the gain with two free cores,\n"
           "including any slowdown the two threads cause each other. Inserts are the median over\n"
           "1M-key chunks of a full fill; queries the median of %u runs of %zu keys. libbloom is\n"
           "not safe for concurrent adds, so it has no 2-thread insert figure.\n", reps, qn);
    printf("\nbench_bloom: %.0f s in all\n", now() - t0);
    return 0;
}
