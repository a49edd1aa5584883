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
 * BLOOM_BENCH_SMALL (default 6500000), BLOOM_BENCH_MID (the layout
 * comparison, default 32000000), BLOOM_BENCH_REPS (default 5),
 * BLOOM_BENCH_QUERIES (keys per query run, default 500000),
 * BLOOM_BENCH_FPR_KEYS (default 10000000), BLOOM_BENCH_CHAIN_N0 (default 4096),
 * BLOOM_BENCH_PARTIAL_CHUNKS (chunks for the insert-only copies, default 24). */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
static double bench_t0; /* for progress lines */
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
    /* 2 MB aligned and on transparent huge pages, like crawld's stages */
    size_t bytes = (size_t)((f->m / 8 + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1));
    void *mem = NULL;
    if (posix_memalign(&mem, 2u << 20, bytes) != 0) {
        fprintf(stderr, "bench_bloom: out of memory\n");
        exit(1);
    }
    (void)madvise(mem, bytes, MADV_HUGEPAGE);
    memset(mem, 0, bytes);
    f->w = mem;
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


/* Batched k-probe: the k lines of key j + KM_AHEAD are prefetched while key j
 * is handled (the same help our batched calls get). */
#define KM_AHEAD 8

static void km_prefetch(const km *f, hash_fp fp, int write)
{
    for (unsigned i = 0; i < f->k; i++) {
        const void *w = (const void *)&f->w[km_pos(f, fp, i) >> 6];
        if (write)
            __builtin_prefetch(w, 1);
        else
            __builtin_prefetch(w, 0);
    }
}

static int km_add_fp(km *f, hash_fp fp)
{
    uint64_t all = 1;
    for (unsigned i = 0; i < f->k; i++) {
        uint64_t pos = km_pos(f, fp, i), bit = UINT64_C(1) << (pos & 63);
        all &= (atomic_fetch_or_explicit(&f->w[pos >> 6], bit, memory_order_relaxed) & bit) != 0;
    }
    return (int)all;
}

static int km_query_fp(km *f, hash_fp fp)
{
    for (unsigned i = 0; i < f->k; i++) {
        uint64_t pos = km_pos(f, fp, i);
        if (!(atomic_load_explicit(&f->w[pos >> 6], memory_order_relaxed) & (UINT64_C(1) << (pos & 63))))
            return 0;
    }
    return 1;
}

static void km_many(km *f, const hash_fp *fps, size_t n, uint8_t *res, int insert)
{
    for (size_t j = 0; j < n && j < KM_AHEAD; j++)
        km_prefetch(f, fps[j], insert);
    for (size_t j = 0; j < n; j++) {
        if (j + KM_AHEAD < n)
            km_prefetch(f, fps[j + KM_AHEAD], insert);
        res[j] = (uint8_t)(insert ? km_add_fp(f, fps[j]) : km_query_fp(f, fps[j]));
    }
}

enum impl { OURS, BATCH, LIB, KM, KMB, NIMPL };
static const char *const impl_name[NIMPL] = { "crawld", "crawld batched", "libbloom",
                                              "k-probe", "k-probe batched" };

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
    case BATCH:
    case KMB: {
        hash_fp fps[BATCH_KEYS];
        uint8_t res[BATCH_KEYS];
        for (size_t j = from; j < to; j += BATCH_KEYS) {
            size_t m = to - j < BATCH_KEYS ? to - j : BATCH_KEYS;
            for (size_t i = 0; i < m; i++)
                fps[i] = hash_fingerprint(b + o[j + i], o[j + i + 1] - o[j + i]);
            if (t->impl == KMB)
                km_many(t->km, fps, m, res, insert);
            else if (insert)
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
        for (size_t j = from; j < to; j++) {
            hash_fp fp = hash_fingerprint(b + o[j], o[j + 1] - o[j]);
            yes += (uint64_t)(insert ? km_add_fp(t->km, fp) : km_query_fp(t->km, fp));
        }
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

/* One filter being filled: its target, threads, where its figure goes, and
 * how many chunks it gets (the insert figure is the median over them). */
struct fill {
    target t;
    int nt;
    enum impl impl;
    size_t chunks;
    int owned; /* a copy only timed for inserts: checked, then freed */
    timing *per_chunk;
};

static void run_size(result *r, const char *label, uint64_t n, int with_lib, int with_km,
                     size_t partial, size_t qn, unsigned reps, uint64_t fpr_keys)
{
    memset(r, 0, sizeof *r);
    r->label = label;
    r->n = n;
    size_t nchunks = (size_t)((n + CHUNK - 1) / CHUNK);
    size_t part = partial && partial < nchunks ? partial : nchunks;
    fprintf(stderr, "[%.0f s] %s, n=%llu: filling\n", now() - bench_t0, label, (unsigned long long)n);
    struct libbloom_s lib;
    memset(&lib, 0, sizeof lib);
    if (with_lib && lb_init(&lib, (int)n, 0.01) != 0) {
        fprintf(stderr, "bench_bloom: libbloom init failed\n");
        exit(1);
    }
    bloom *ours = ours_new(n, 0.01);
    km *kf = with_km ? km_new(n, 0.01) : NULL;
    /* ours (batched), libbloom and k-probe (batched) are filled completely by
     * one thread and then answer the queries; the other copies only time
     * inserts, over the first `part` chunks */
    struct fill f[8];
    int nf = 0;
    f[nf++] = (struct fill){ { BATCH, ours, NULL, NULL }, 1, BATCH, nchunks, 0, NULL };
    if (with_lib)
        f[nf++] = (struct fill){ { LIB, NULL, &lib, NULL }, 1, LIB, nchunks, 0, NULL };
    f[nf++] = (struct fill){ { OURS, ours_new(n, 0.01), NULL, NULL }, 1, OURS, part, 1, NULL };
    f[nf++] = (struct fill){ { OURS, ours_new(n, 0.01), NULL, NULL }, 2, OURS, part, 1, NULL };
    f[nf++] = (struct fill){ { BATCH, ours_new(n, 0.01), NULL, NULL }, 2, BATCH, part, 1, NULL };
    if (kf) {
        f[nf++] = (struct fill){ { KMB, NULL, NULL, kf }, 1, KMB, nchunks, 0, NULL };
        f[nf++] = (struct fill){ { KM, NULL, NULL, km_new(n, 0.01) }, 1, KM, part, 1, NULL };
        f[nf++] = (struct fill){ { KMB, NULL, NULL, km_new(n, 0.01) }, 2, KMB, part, 1, NULL };
    }
    for (int i = 0; i < nf; i++)
        f[i].per_chunk = calloc(nchunks, sizeof(timing));
    keyset ks = { 0 };
    uint64_t yes;
    for (size_t c = 0; c < nchunks; c++) {
        uint64_t first = (uint64_t)c * CHUNK;
        size_t m = (size_t)(n - first < CHUNK ? n - first : CHUNK);
        gen_range(&ks, 'p', first, m); /* untimed */
        for (int i = 0; i < nf; i++)
            if (c < f[i].chunks)
                f[i].per_chunk[c] = timed_run(&f[i].t, &ks, 1, f[i].nt, &yes);
    }
    for (int im = 0; im < NIMPL; im++)
        r->ins[im][T1] = r->ins[im][T2] = no_timing;
    for (int i = 0; i < nf; i++) {
        /* the chunks are the repetitions; a short last chunk is left out */
        size_t use = f[i].chunks == nchunks && n % CHUNK && nchunks > 1 ? nchunks - 1 : f[i].chunks;
        r->ins[f[i].impl][f[i].nt - 1] = median_timing(f[i].per_chunk, use);
        free(f[i].per_chunk);
    }
    /* the copies must hold every key they were given */
    for (int i = 0; i < nf; i++) {
        if (!f[i].owned)
            continue;
        uint64_t upto = f[i].chunks == nchunks ? n : (uint64_t)f[i].chunks * CHUNK;
        uint64_t sample = upto < 1000000 ? upto : 1000000;
        gen_range(&ks, 'p', upto - sample, (size_t)sample);
        target tq = f[i].t;
        r->fn[tq.impl] += sample - run_keys(&tq, &ks, 0, ks.n, 0);
        if (tq.ours != NULL)
            bloom_free(tq.ours);
        else
            km_free(tq.km);
    }

    r->have[OURS] = r->have[BATCH] = 1;
    r->have[LIB] = with_lib;
    r->have[KM] = r->have[KMB] = kf != NULL;
    bloom_stats st;
    bloom_stats_get(ours, &st);
    bloom_stage_info si;
    bloom_stage_info_get(ours, 0, 0, &si);
    r->bpk[OURS] = r->bpk[BATCH] = (double)st.bits / (double)n;
    r->mbytes[OURS] = r->mbytes[BATCH] = (double)st.bits / 8 / 1048576.0;
    r->k[OURS] = r->k[BATCH] = (int)si.k;
    if (with_lib) {
        r->bpk[LIB] = (double)lib.bits / (double)n;
        r->mbytes[LIB] = (double)lib.bytes / 1048576.0;
        r->k[LIB] = lib.hashes;
    }
    if (kf) {
        r->bpk[KM] = r->bpk[KMB] = (double)kf->m / (double)n;
        r->mbytes[KM] = r->mbytes[KMB] = (double)kf->m / 8 / 1048576.0;
        r->k[KM] = r->k[KMB] = (int)kf->k;
    }

    fprintf(stderr, "[%.0f s] %s: queries\n", now() - bench_t0, label);
    target tq[NIMPL] = {
        { OURS, ours, NULL, NULL }, { BATCH, ours, NULL, NULL }, { LIB, NULL, &lib, NULL },
        { KM, NULL, NULL, kf },     { KMB, NULL, NULL, kf },
    };
    /* repetition outermost, so a change in the machine's load hits every
     * filter and mix alike */
    keyset qs[3];
    size_t present[3];
    memset(qs, 0, sizeof qs);
    for (int mi = 0; mi < 3; mi++)
        present[mi] = gen_queries(&qs[mi], qn, mixes[mi], n, (uint64_t)mi + 1);
    timing *v = calloc((size_t)NIMPL * 2 * 3 * reps, sizeof(timing));
#define V(im, nt, mi, rep) v[(((size_t)(im) * 2 + (size_t)(nt)) * 3 + (size_t)(mi)) * reps + (rep)]
    for (unsigned rep = 0; rep < reps; rep++)
        for (int mi = 0; mi < 3; mi++)
            for (int im = 0; im < NIMPL; im++)
                for (int nt = 1; r->have[im] && nt <= 2; nt++) {
                    V(im, nt - 1, mi, rep) = timed_run(&tq[im], &qs[mi], 0, nt, &yes);
                    if (yes < present[mi])
                        r->fn[im] += present[mi] - yes;
                }
    for (int im = 0; im < NIMPL; im++)
        for (int nt = 0; r->have[im] && nt < 2; nt++)
            for (int mi = 0; mi < 3; mi++)
                r->q[im][nt][mi] = median_timing(&V(im, nt, mi, 0), reps);
#undef V
    free(v);
    for (int mi = 0; mi < 3; mi++)
        keyset_free(&qs[mi]);

    fprintf(stderr, "[%.0f s] %s: false-positive rate over %llu absent keys\n", now() - bench_t0,
            label, (unsigned long long)fpr_keys);
    uint64_t fp[NIMPL] = { 0 };
    for (uint64_t first = 0; first < fpr_keys; first += CHUNK) {
        size_t m = (size_t)(fpr_keys - first < CHUNK ? fpr_keys - first : CHUNK);
        gen_range(&ks, 'a', first, m);
        fp[OURS] += run_keys(&tq[OURS], &ks, 0, m, 0);
        if (with_lib)
            fp[LIB] += run_keys(&tq[LIB], &ks, 0, m, 0);
        if (kf)
            fp[KM] += run_keys(&tq[KM], &ks, 0, m, 0);
    }
    r->fpr[OURS] = r->fpr[BATCH] = (double)fp[OURS] / (double)fpr_keys;
    r->fpr[LIB] = (double)fp[LIB] / (double)fpr_keys;
    r->fpr[KM] = r->fpr[KMB] = (double)fp[KM] / (double)fpr_keys;
    keyset_free(&ks);
    bloom_free(ours);
    if (with_lib)
        lb_free(&lib);
    if (kf)
        km_free(kf);
}

/* ---- the chain -------------------------------------------------------------- */

typedef struct chain_result {
    uint64_t n0, at1024, full;
    double fpr1024, bpk1024, fpr_full, bpk_full, model_full;
    double single_bpk, single_fpr;
    unsigned stages, stages1024;
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
    fprintf(stderr, "[%.0f s] chain: n0=%llu, growing to 2047 x n0\n", now() - bench_t0,
            (unsigned long long)n0);
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
            c->stages1024 = st.stages_total;
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

/* Ratio columns: numerator / denominator (slower / faster: "how many times
 * faster crawld is"). */
static const int ratio_cols[][2] = { { LIB, OURS }, { LIB, BATCH }, { KM, OURS }, { KMB, BATCH } };
#define NRATIO (sizeof ratio_cols / sizeof ratio_cols[0])

typedef double (*row_fn)(const result *r, int impl);

static void print_row(const result *r, const char *name, row_fn fn, int prec, const char *suffix,
                      int ratios)
{
    printf("| %s |", name);
    for (int i = 0; i < NIMPL; i++)
        if (r->have[i])
            cell(fn(r, i), prec, suffix);
    for (size_t c = 0; c < NRATIO; c++) {
        int a = ratio_cols[c][0], b = ratio_cols[c][1];
        if (!r->have[a] || !r->have[b])
            continue;
        if (ratios)
            ratio_cell(fn(r, a), fn(r, b));
        else
            printf(" |");
    }
    printf("\n");
}

static int row_nt, row_mix; /* the thread count and mix the row functions read */
static double f_mem(const result *r, int i) { return r->mbytes[i]; }
static double f_bpk(const result *r, int i) { return r->bpk[i]; }
static double f_k(const result *r, int i) { return r->k[i]; }
static double f_fpr(const result *r, int i) { return 100.0 * r->fpr[i]; }
static double f_ins(const result *r, int i) { return r->ins[i][row_nt].cpu; }
static double f_q(const result *r, int i) { return r->q[i][row_nt][row_mix].cpu; }
static double f_qwall(const result *r, int i) { return r->q[i][T1][1].wall; }
static double f_q100_0(const result *r, int i) { return r->q[i][T1][2].cpu / r->q[i][T1][0].cpu; }
static double f_sp_ins(const result *r, int i) { return cpu_speedup(r->ins[i][T1], r->ins[i][T2]); }
static double f_sp_q(const result *r, int i) { return cpu_speedup(r->q[i][T1][1], r->q[i][T2][1]); }
static double f_wsp_q(const result *r, int i) { return wall_speedup(r->q[i][T1][1], r->q[i][T2][1]); }
static double f_cores(const result *r, int i) { return r->q[i][T2][1].cores; }

static void print_size(const result *r)
{
    printf("\n### %s: n = %llu, p = 1%%\n\n", r->label, (unsigned long long)r->n);
    printf("| measure |");
    for (int i = 0; i < NIMPL; i++)
        if (r->have[i])
            printf(" %s |", impl_name[i]);
    for (size_t c = 0; c < NRATIO; c++)
        if (r->have[ratio_cols[c][0]] && r->have[ratio_cols[c][1]])
            printf(" %s / %s |", impl_name[ratio_cols[c][0]], impl_name[ratio_cols[c][1]]);
    printf("\n|---|");
    for (int i = 0; i < NIMPL; i++)
        if (r->have[i])
            printf("---:|");
    for (size_t c = 0; c < NRATIO; c++)
        if (r->have[ratio_cols[c][0]] && r->have[ratio_cols[c][1]])
            printf("---:|");
    printf("\n");
    print_row(r, "memory (MiB)", f_mem, 1, "", 0);
    print_row(r, "bits per key", f_bpk, 2, "", 0);
    print_row(r, "k (bits set per key)", f_k, 0, "", 0);
    print_row(r, "measured FPR", f_fpr, 3, "%", 0);
    char name[96];
    for (row_nt = 0; row_nt < 2; row_nt++) {
        snprintf(name, sizeof name, "ns/insert, %d thread%s", row_nt + 1, row_nt ? "s" : "");
        print_row(r, name, f_ins, 1, "", 1);
        for (row_mix = 0; row_mix < 3; row_mix++) {
            snprintf(name, sizeof name, "ns/query, %u%% present, %d thread%s", mixes[row_mix],
                     row_nt + 1, row_nt ? "s" : "");
            print_row(r, name, f_q, 1, "", 1);
        }
    }
    print_row(r, "query time 100% / 0% present", f_q100_0, 2, "", 0);
    print_row(r, "2-thread speedup, insert (CPU time)", f_sp_ins, 2, "x", 0);
    print_row(r, "2-thread speedup, query 50% (CPU time)", f_sp_q, 2, "x", 0);
    print_row(r, "2-thread speedup, query 50% (wall clock)", f_wsp_q, 2, "x", 0);
    print_row(r, "cores the 2-thread query run got", f_cores, 2, "", 0);
    print_row(r, "wall-clock ns/query, 50%, 1 thread", f_qwall, 1, "", 1);
    for (int i = 0; i < NIMPL; i++)
        if (r->fn[i])
            printf("\n**%s: %llu false negatives!**\n", impl_name[i], (unsigned long long)r->fn[i]);
}

/* libbloom's time / ours (impl OURS or BATCH), the worst over the query mixes. */
static double speed_ratio(const result *r, int impl, int insert)
{
    if (insert)
        return r->ins[LIB][T1].cpu / r->ins[impl][T1].cpu;
    double worst = INFINITY;
    for (int mi = 0; mi < 3; mi++) {
        double x = r->q[LIB][T1][mi].cpu / r->q[impl][T1][mi].cpu;
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

static void speed_goals(const result *r, const char *where, double want)
{
    char what[128];
    for (int impl = OURS; impl <= BATCH; impl++) {
        const char *how = impl == OURS ? "one call per key" : "batched calls";
        double q = speed_ratio(r, impl, 0), i = speed_ratio(r, impl, 1);
        snprintf(what, sizeof what, "queries >= %.0fx libbloom %s, worst mix (%s)", want, where, how);
        goal(what, q >= want, q, 1, "x");
        snprintf(what, sizeof what, "inserts >= %.0fx libbloom %s (%s)", want, where, how);
        goal(what, i >= want, i, 1, "x");
    }
}

static void size_goals(const result *r, const char *where)
{
    char what[128];
    for (int impl = OURS; impl <= BATCH; impl++) {
        const char *how = impl == OURS ? "one call per key" : "batched calls";
        double d = fabs(r->q[impl][T1][2].cpu / r->q[impl][T1][0].cpu - 1);
        snprintf(what, sizeof what, "query time 0%% vs 100%% present within 15%%, %s (%s)", where, how);
        goal(what, d <= 0.15, 100 * d, 0, "%");
    }
    for (int impl = OURS; impl <= BATCH; impl++) {
        const char *how = impl == OURS ? "one call per key" : "batched calls";
        double q = cpu_speedup(r->q[impl][T1][1], r->q[impl][T2][1]);
        double i = cpu_speedup(r->ins[impl][T1], r->ins[impl][T2]);
        snprintf(what, sizeof what, "2 threads >= 1.8x one, queries, CPU time, %s (%s)", where, how);
        goal(what, q >= 1.8, q, 2, "x");
        snprintf(what, sizeof what, "2 threads >= 1.8x one, inserts, CPU time, %s (%s)", where, how);
        goal(what, i >= 1.8, i, 2, "x");
    }
    double qw = wall_speedup(r->q[BATCH][T1][1], r->q[BATCH][T2][1]);
    snprintf(what, sizeof what, "2 threads >= 1.8x one, queries, wall clock (got %.2f cores), %s",
             r->q[BATCH][T2][1].cores, where);
    goal(what, qw >= 1.8, qw, 2, "x");
}

int main(void)
{
    uint64_t big = env_u64("BLOOM_BENCH_BIG", 224000000);
    uint64_t small = env_u64("BLOOM_BENCH_SMALL", 6500000);
    uint64_t mid = env_u64("BLOOM_BENCH_MID", 32000000);
    unsigned reps = (unsigned)env_u64("BLOOM_BENCH_REPS", 5);
    size_t qn = (size_t)env_u64("BLOOM_BENCH_QUERIES", 500000);
    uint64_t fpr_keys = env_u64("BLOOM_BENCH_FPR_KEYS", 10000000);
    uint64_t n0 = env_u64("BLOOM_BENCH_CHAIN_N0", 4096);
    size_t partial = (size_t)env_u64("BLOOM_BENCH_PARTIAL_CHUNKS", 24);
    if (big > 224000000) /* libbloom keeps its bit count in an int: 2^31 bits */
        big = 224000000;
    load_libbloom();
    double t0 = now();
    bench_t0 = t0;
    printf("bench_bloom: crawld's Bloom filter vs libbloom 1.6; %u runs of %zu keys per query "
           "figure; FPR over %llu never-inserted keys\n", reps, qn, (unsigned long long)fpr_keys);
    loadavg("at start");
    result rs, rb, rm;
    chain_result ch;
    run_size(&rs, "In cache (~8 MB)", small, 1, 1, 0, qn, reps, fpr_keys);
    if (getenv("BLOOM_BENCH_CACHE_ONLY") != NULL) { /* a quick look at the first table */
        print_size(&rs);
        return 0;
    }
    run_size(&rb, "Out of cache (>= 256 MB)", big, 1, 0, partial, qn, reps, fpr_keys);
    run_size(&rm, "Layout: blocked vs k-probe, out of cache", mid, 0, 1, partial, qn, reps, fpr_keys);
    run_chain(&ch, n0, fpr_keys);
    loadavg("at end");

    print_size(&rs);
    print_size(&rb);
    print_size(&rm);
    printf("\n### Scalable chain (1 shard, s = 2, r = 0.85, p = 1%%, first stage %llu keys)\n\n",
           (unsigned long long)ch.n0);
    printf("| filter | keys | stages | bits/key | measured FPR | model FPR |\n|---|---:|---:|---:|---:|---:|\n");
    printf("| chain at 1024 x n0 | %llu | %u | %.2f | %.3f%% | |\n", (unsigned long long)ch.at1024,
           ch.stages1024, ch.bpk1024, 100 * ch.fpr1024);
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
    speed_goals(&rs, "in cache", 5);
    speed_goals(&rb, "out of cache", 8);
    goal("bits per key <= 10.1 at 1% (in cache)", rs.bpk[OURS] <= 10.1, rs.bpk[OURS], 2, "");
    goal("bits per key <= 10.1 at 1% (out of cache)", rb.bpk[OURS] <= 10.1, rb.bpk[OURS], 2, "");
    goal("measured FPR <= 1.00% (in cache)", rs.fpr[OURS] <= 0.01, 100 * rs.fpr[OURS], 3, "%");
    goal("measured FPR <= 1.00% (out of cache)", rb.fpr[OURS] <= 0.01, 100 * rb.fpr[OURS], 3, "%");
    size_goals(&rs, "in cache");
    size_goals(&rb, "out of cache");
    goal("chain grown to 1024x: FPR <= 1% (newest stage full)", ch.fpr_full <= 0.01,
         100 * ch.fpr_full, 3, "%");
    goal("chain grown to 1024x: FPR <= 1% (at 1024 x n0 keys)", ch.fpr1024 <= 0.01,
         100 * ch.fpr1024, 3, "%");
    goal("chain bits/key <= 1.8x single filter (newest stage full)", ch.bpk_full / ch.single_bpk <= 1.8,
         ch.bpk_full / ch.single_bpk, 2, "x");
    printf("\nNotes: ns figures are the CPU time of the timed threads (CLOCK_THREAD_CPUTIME_ID), so\n"
           "time the shared machine gave to other processes is not counted; the wall-clock row and\n"
           "the cores a 2-thread run actually got are shown beside them. The CPU-time speedup is\n"
           "2 x (1-thread ns) / (2-thread ns per key and thread): the gain with two free cores,\n"
           "including any slowdown the two threads cause each other. Inserts: median over 1M-key\n"
           "chunks of a fill (full fills for crawld batched, libbloom and k-probe batched; the\n"
           "copies timed only for inserts get the first %zu chunks); queries: median of %u runs,\n"
           "interleaved. \"batched\" = bloom_add_many/bloom_query_many on 64 fingerprints at\n"
           "a time (the hashing is included). libbloom is not safe for concurrent adds: no\n"
           "2-thread insert figure. k-probe = Kirsch-Mitzenmacher double hashing over the whole\n"
           "array, on the same XXH3 fingerprint and the same atomics.\n", partial, reps);
    printf("\nbench_bloom: %.0f s in all\n", now() - t0);
    return 0;
}
