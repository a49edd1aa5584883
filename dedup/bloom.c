/* dedup/bloom: sharded, scalable, cache-line-blocked Bloom filter.
 *
 * Layout. A stage is an array of blocks; a block is one 64-byte cache line
 * (512 bits) or two adjacent lines (1024 bits, 128-byte aligned). A key
 * picks one block and sets k bits inside it, so an add or a query touches
 * one line (two adjacent ones for 2-line blocks) instead of k random lines.
 * Chosen over Kirsch-Mitzenmacher double hashing across the whole array
 * (k-probe) by measurement; bench/bench_bloom.c prints both, same
 * fingerprint, same atomics, 2 MB pages for both (2-core EPYC VM, 32M keys,
 * 38 MB, several runs):
 *   - one call per key, they are close (blocked 0-30% faster, ~90-150 ns
 *     per query either way): a lone query waits for about one memory round
 *     trip in both, because k-probe's k loads are independent and overlap;
 *   - batched calls (bloom_query_many/bloom_add_many, prefetching 12 keys
 *     ahead), blocked is ~2x faster: queries ~30 vs ~55-70 ns, inserts ~47
 *     vs ~83 ns, because k-probe moves 7 lines per key through the memory
 *     system and blocked one;
 *   - blocked costs 3.6% more memory at 1% (9.92 vs 9.59 bits per key).
 * The batched figures are where the layout pays off. Today the crawler's
 * seen test (dedup/seen) asks one key per call, so production sees the
 * one-call figures, where the two layouts are close; the blocked layout
 * still costs one line per key there and is ready for the batched path
 * once links extracted from a page are tested together (open: crawl.c).
 *
 * Sizing. Blocking raises the false-positive rate at the same bits per
 * key: blocks receive a Poisson-distributed number of keys and the crowded
 * ones answer MAYBE more often. Sizing therefore uses the blocked layout's
 * own model, not the classic formula:
 *     FPR(load, k, B) = sum_j Pois(j; load) * P(k probes hit set bits | j keys)
 * with load = items / blocks and B = 512 * lines bits per block (closed
 * form in bloom_model_fpr; the test holds measured rates to it within 15%,
 * they agree within ~1%). For each stage we take the k and the block count
 * that reach the stage's target with the least memory: at 1%, one line
 * needs 9.92 bits per key (k = 6; classic 9.59); at 0.03%, 18.8 (two lines:
 * 17.9; classic 16.9). With block_lines = 0 (auto) a stage uses two lines
 * only when that saves more than 2.5% of memory, i.e. below ~0.4%: never
 * for a 1% filter, always for the tight stages of a chain, where the
 * second adjacent line costs ~10% in time (measured) and keeps the chain
 * within 1.8x the bits of a single filter (one line everywhere: 1.85x).
 *
 * Positions. The key is hashed once (hash_fingerprint, XXH3-128). Stage 0
 * uses the fingerprint halves directly: lo picks the block (multiply-high
 * "fastrange"), hi feeds k multiply-shift hashes (hi * salt_t) >> (64 -
 * log2 B), one odd salt per bit. Later stages remix both halves with a
 * stage-specific constant (splitmix64 finalizer) so their errors are
 * independent. The shard is the low bits of lo, which the block choice
 * (high bits) does not depend on.
 *
 * Chain (Almeida et al. 2007). Shard stage i holds cap0 * s^i items at
 * error P0 * r^i. The compound rate of L stages is at most
 * P0 * (1 - r^L) / (1 - r), so P0 = p * (1 - r) / (1 - r^L) keeps the whole
 * chain at or under p (L = max_stages; L = 1 gives a plain filter at p).
 * cap0 = n/S plus 4 standard deviations of a shard's share of n keys, so
 * that no shard overflows before the filter holds n keys.
 *
 * Concurrency. Bits are words of _Atomic uint64_t, set with fetch_or and
 * read with relaxed loads; whether a key was present is decided from the
 * loaded and fetch_or'ed old values in the same pass. A shard's stages live
 * in a fixed array of BLOOM_MAX_STAGES pointers; a new stage is written
 * into the array and then published by a release store of nstages, so a
 * reader that acquires nstages sees complete stages. shard.lock is taken
 * only to append a stage (and by bloom_save, for all shards in index
 * order); geom_lock and arena_lock (each taken alone, inside a shard lock)
 * guard the memo of stage geometries and the huge-page chunks that small
 * stages are carved from. Counts are kept per stage in NSLOT cache-line-padded slots,
 * one per thread (modulo NSLOT), so concurrent adders do not bounce a shared
 * counter; the stage-full test sums the slots every qmask+1 adds of a slot,
 * which may overfill a stage by a small fraction of its capacity (at most
 * NSLOT * capacity / 2048).
 *
 * Snapshots (bloom_save, bloom_load) are in bloom_snap.c; the structs both
 * files need are in bloom_int.h. */
#include "bloom.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/alloc.h"
#include "common/striped.h"
#include "common/err.h"
#include "dedup/bloom_int.h"

#define LINE_WORDS 8
#define AUTO_TWO_LINE_GAIN 0.025 /* two-line blocks when they save more than this */
#define MAX_STAGE_BYTES (UINT64_C(1) << 44)

/* Odd 64-bit multipliers, one per bit of a key (from a splitmix64 stream). */
static const uint64_t salts[MAX_K] = {
    0x9e3779b97f4a7c15u, 0xbf58476d1ce4e5b9u, 0x94d049bb133111ebu, 0xd6e8feb86659fd93u,
    0xa0761d6478bd642fu, 0xe7037ed1a0b428dbu, 0x8ebc6af09c88c6e3u, 0x589965cc75374cc3u,
    0x1d8e4e27c47d124fu, 0xc2b2ae3d27d4eb4fu, 0x165667b19e3779f9u, 0xff51afd7ed558ccdu,
    0xc4ceb9fe1a85ec53u, 0x87c37b91114253d5u, 0x4cf5ad432745937fu, 0x52dce729da3ed4b7u,
};

/* Stages smaller than a huge page are carved out of ARENA_CHUNK-sized,
 * 2 MB-aligned chunks on transparent huge pages, when the filter is big
 * enough for that to matter (else every probe of a 16-shard filter of
 * tens of MB would miss the TLB). Chunks live until bloom_free. */
#define ARENA_CHUNK (UINT64_C(4) << 20)

/* ---- the model ---------------------------------------------------------- */

static double ipow(double x, unsigned k)
{
    double r = 1.0;
    for (unsigned i = 0; i < k; i++)
        r *= x;
    return r;
}

double bloom_model_fpr(double load, unsigned k, unsigned lines)
{
    if (!(load > 0.0) || k == 0 || k > MAX_K || lines == 0)
        return 0.0;
    /* Given j keys in a block of B bits (jk bits set with replacement) and a
     * query whose k positions hit d distinct bits, P(all d are set) =
     * sum_t (-1)^t C(d,t) (1 - t/B)^(jk) (inclusion-exclusion). Averaging
     * over d (Stirling numbers) and over j ~ Poisson(load), where
     * E[x^j] = exp(-load (1 - x)), leaves a closed form:
     *     FPR = sum_t c_t exp(-load (1 - (1 - t/B)^k)),
     *     c_t = (-1)^t sum_{d>=t} P(D = d) C(d, t).
     * The simpler sum_j Pois(j) (1 - (1-1/B)^(jk))^k is about 1-2% low
     * (it ignores that the bits of a block are not independent). The signs
     * alternate, so it is summed in long double (error < 1e-14). */
    long double B = (long double)LINE_BITS * lines;
    long double stir[MAX_K + 1][MAX_K + 1] = { { 0 } };
    stir[0][0] = 1;
    for (unsigned n = 1; n <= k; n++)
        for (unsigned d = 1; d <= n; d++)
            stir[n][d] = d * stir[n - 1][d] + stir[n - 1][d - 1];
    long double pd[MAX_K + 1], fall = 1, bk = powl(B, (long double)k);
    for (unsigned d = 1; d <= k; d++) {
        fall *= B - (d - 1);
        pd[d] = stir[k][d] * fall / bk;
    }
    long double sum = 0;
    for (unsigned t = 0; t <= k; t++) {
        long double c = 0, binom = 1; /* C(d, t) as d runs from t */
        for (unsigned d = t; d <= k; d++) {
            if (d > t)
                binom = binom * d / (d - t);
            if (d >= 1)
                c += pd[d] * binom;
        }
        if (t == 0)
            c = 1;
        long double x = powl(1 - t / B, (long double)k);
        long double term = c * expl(-(long double)load * (1 - x));
        sum += (t & 1) ? -term : term;
    }
    double r = (double)sum;
    if (!(r > 0.0))
        return 0.0;
    return r > 1.0 ? 1.0 : r;
}

/* The load (items per block) a fill ratio implies: E[fill] = 1 - exp(-load (1 - q)). */
static double load_from_fill(double fill, unsigned k, unsigned lines)
{
    if (fill <= 0.0)
        return 0.0;
    if (fill >= 1.0)
        fill = 1.0 - 1e-12;
    double q = ipow(1.0 - 1.0 / (LINE_BITS * (double)lines), k);
    return -log1p(-fill) / (1.0 - q);
}

/* Largest load at which k bits in a block of `lines` lines stay at or under
 * err (the model grows with the load). */
static double max_load(double err, unsigned k, unsigned lines)
{
    double lo = 1e-6, hi = 500.0 * lines;
    if (bloom_model_fpr(hi, k, lines) <= err)
        return hi;
    if (bloom_model_fpr(lo, k, lines) > err)
        return lo;
    for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (bloom_model_fpr(mid, k, lines) <= err)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Chooses lines, k and the block count for cap items at err. */
static int size_stage_uncached(uint64_t cap, double err, unsigned lines_param, struct geom *g)
{
    uint64_t best_nb[3] = { 0, 0, 0 };
    unsigned best_k[3] = { 0, 0, 0 };
    for (unsigned lines = 1; lines <= 2; lines++) {
        if (lines_param != 0 && lines != lines_param)
            continue;
        for (unsigned k = 1; k <= MAX_K; k++) {
            double nbd = ceil((double)cap / max_load(err, k, lines));
            if (nbd < 1.0)
                nbd = 1.0;
            if (nbd * 64.0 * lines > (double)MAX_STAGE_BYTES)
                continue;
            uint64_t nb = (uint64_t)nbd;
            if (best_nb[lines] == 0 || nb < best_nb[lines]) {
                best_nb[lines] = nb;
                best_k[lines] = k;
            }
        }
    }
    unsigned lines = 1;
    if (best_nb[1] == 0 ||
        (best_nb[2] != 0 && (double)best_nb[2] * 2.0 < (double)best_nb[1] * (1.0 - AUTO_TWO_LINE_GAIN)))
        lines = 2;
    if (best_nb[lines] == 0)
        return -ENOMEM;
    g->nblocks = best_nb[lines];
    g->k = best_k[lines];
    g->lines = lines;
    return 0;
}

/* size_stage is a pure function costing milliseconds (the bisections of
 * the model), and a rotating ring (dedup/gens) builds a filter of the same
 * parameters every window: the last few answers are kept, process-wide. */
#define SIZE_MEMO 8
static struct size_memo {
    uint64_t cap;
    double err;
    unsigned lines_param;
    struct geom g;
} size_memo[SIZE_MEMO];
static unsigned size_memo_n, size_memo_next;
static pthread_mutex_t size_memo_lock = PTHREAD_MUTEX_INITIALIZER;

static int size_stage(uint64_t cap, double err, unsigned lines_param, struct geom *g)
{
    pthread_mutex_lock(&size_memo_lock);
    for (unsigned i = 0; i < size_memo_n; i++) {
        const struct size_memo *m = &size_memo[i];
        if (m->cap == cap && m->err == err && m->lines_param == lines_param) {
            *g = m->g;
            pthread_mutex_unlock(&size_memo_lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&size_memo_lock);
    int rc = size_stage_uncached(cap, err, lines_param, g);
    if (rc == 0) {
        pthread_mutex_lock(&size_memo_lock);
        struct size_memo *m = &size_memo[size_memo_next];
        size_memo_next = (size_memo_next + 1) % SIZE_MEMO;
        if (size_memo_n < SIZE_MEMO)
            size_memo_n++;
        m->cap = cap;
        m->err = err;
        m->lines_param = lines_param;
        m->g = *g;
        pthread_mutex_unlock(&size_memo_lock);
    }
    return rc;
}

/* ---- stages ------------------------------------------------------------- */

static void stage_free(struct stage *st)
{
    if (st == NULL)
        return;
    cr_free(st->raw); /* NULL for arena stages */
    cr_free(st);
}

/* bytes (a multiple of 128) of zeroed arena memory, or NULL. */
static void *arena_alloc(bloom *bf, uint64_t bytes)
{
    void *p = NULL;
    pthread_mutex_lock(&bf->arena_lock);
    if (bf->arena_base == 0 || bf->arena_used + bytes > ARENA_CHUNK) {
        struct chunk *c = cr_malloc(sizeof *c);
        void *raw = c == NULL ? NULL : cr_calloc(1, (size_t)(ARENA_CHUNK + HUGE_PAGE));
        if (raw == NULL) {
            cr_free(c);
            goto out;
        }
        c->raw = raw;
        c->next = bf->chunks;
        bf->chunks = c;
        bf->arena_base = ((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
        bf->arena_used = 0;
        (void)madvise((void *)bf->arena_base, (size_t)ARENA_CHUNK, MADV_HUGEPAGE);
    }
    p = (void *)(bf->arena_base + bf->arena_used);
    bf->arena_used += bytes;
out:
    pthread_mutex_unlock(&bf->arena_lock);
    return p;
}

struct stage *bloom_stage_alloc(bloom *bf, unsigned index, uint64_t nblocks, unsigned k,
                          unsigned lines, uint64_t capacity, double error)
{
    if (nblocks == 0 || nblocks > MAX_STAGE_BYTES / (64u * lines))
        return NULL;
    struct stage *st = cr_malloc(sizeof *st);
    if (st == NULL)
        return NULL;
    uint64_t bytes = nblocks * 64u * lines;
    uint64_t with_slots = bytes + NSLOT * sizeof(struct slot);
    uintptr_t base;
    st->raw = NULL;
    if (bf->arena_on && with_slots <= ARENA_CHUNK / 2) {
        base = (uintptr_t)arena_alloc(bf, (with_slots + 127) & ~(uint64_t)127);
    } else {
        /* stages of 2 MB and more start on a 2 MB boundary and ask for
         * transparent huge pages: a random probe then rarely misses the
         * TLB. The padding is never touched: it costs address space only. */
        uint64_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 128;
        uint64_t used = (with_slots + align - 1) & ~(align - 1);
        st->raw = cr_calloc(1, (size_t)(used + align));
        base = ((uintptr_t)st->raw + align - 1) & ~(uintptr_t)(align - 1);
        if (st->raw != NULL && align == HUGE_PAGE)
            (void)madvise((void *)base, (size_t)used, MADV_HUGEPAGE);
    }
    if (base == 0) {
        cr_free(st);
        return NULL;
    }
    st->words = (_Atomic uint64_t *)base;
    st->slots = (struct slot *)(base + bytes);
    st->nblocks = nblocks;
    st->capacity = capacity;
    uint64_t q = 1;
    while (q * 2 <= capacity / 2048 && q < 4096)
        q *= 2;
    st->qmask = q - 1;
    st->error = error;
    st->k = k;
    st->lines = lines;
    st->block_words = LINE_WORDS * lines;
    st->shift = lines == 1 ? 64 - 9 : 64 - 10;
    st->index = index;
    return st;
}

static uint64_t stage_capacity(const bloom *bf, unsigned i)
{
    double c = ceil((double)bf->cap0 * pow(bf->params.growth, (double)i));
    return c >= (double)MAX_CAPACITY ? MAX_CAPACITY : (uint64_t)c;
}

static double stage_error(const bloom *bf, unsigned i)
{
    return bf->p0 * pow(bf->params.tightening, (double)i);
}

/* The geometry of stage i (memoized: every shard's stage i is the same). */
static int stage_geom(bloom *bf, unsigned i, struct geom *g)
{
    pthread_mutex_lock(&bf->geom_lock);
    if (bf->geom[i].ready == 0)
        bf->geom[i].ready = size_stage(stage_capacity(bf, i), stage_error(bf, i),
                                       bf->params.block_lines, &bf->geom[i]) == 0 ? 1 : -1;
    *g = bf->geom[i];
    pthread_mutex_unlock(&bf->geom_lock);
    return g->ready == 1 ? 0 : -ENOMEM;
}

/* A new, empty stage i sized from the parameters. */
static struct stage *stage_create(bloom *bf, unsigned i)
{
    struct geom g;
    if (stage_geom(bf, i, &g) != 0)
        return NULL;
    return bloom_stage_alloc(bf, i, g.nblocks, g.k, g.lines, stage_capacity(bf, i), stage_error(bf, i));
}

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The block words of fp in st, and the value the bit positions come from. */
static inline _Atomic uint64_t *stage_block(const struct stage *st, hash_fp fp, uint64_t *b)
{
    uint64_t a = fp.lo;
    *b = fp.hi;
    if (st->index != 0) {
        a = mix64(fp.lo ^ (st->index * 0x9e3779b97f4a7c15u));
        *b = mix64(fp.hi + st->index * 0xc2b2ae3d27d4eb4fu);
    }
    uint64_t blk = (uint64_t)(((unsigned __int128)a * st->nblocks) >> 64);
    return st->words + blk * st->block_words;
}

static inline int stage_has(const struct stage *st, hash_fp fp)
{
    uint64_t b;
    _Atomic uint64_t *w = stage_block(st, fp, &b);
    uint64_t miss = 0;
    for (unsigned t = 0; t < st->k; t++) { /* branch-free: same cost for MAYBE and NO */
        unsigned pos = (unsigned)((b * salts[t]) >> st->shift);
        miss |= ~atomic_load_explicit(&w[pos >> 6], memory_order_relaxed) & (UINT64_C(1) << (pos & 63));
    }
    return miss == 0;
}

/* Sets fp's bits in st; returns how many of them this call turned on (0:
 * all were set already, i.e. the key was probably present). */
static inline unsigned stage_set(struct stage *st, hash_fp fp)
{
    uint64_t b;
    _Atomic uint64_t *w = stage_block(st, fp, &b);
    /* Fetch the line for writing: when the key is new, the fetch_ors below
     * then need no second trip to upgrade a shared line (out of cache, a
     * new key costs ~95 ns instead of ~155). The price: a duplicate also
     * takes the line exclusively, which can bounce a hot line between
     * threads that keep adding the same keys. */
    __builtin_prefetch((const void *)w, 1);
    unsigned pos[MAX_K];
    uint64_t miss = 0;
    for (unsigned t = 0; t < st->k; t++) {
        pos[t] = (unsigned)((b * salts[t]) >> st->shift);
        miss |= ~atomic_load_explicit(&w[pos[t] >> 6], memory_order_relaxed) & (UINT64_C(1) << (pos[t] & 63));
    }
    if (miss == 0) /* present: no write at all (the common case when crawling) */
        return 0;
    unsigned newbits = 0;
    for (unsigned t = 0; t < st->k; t++) {
        uint64_t bit = UINT64_C(1) << (pos[t] & 63);
        uint64_t old = atomic_fetch_or_explicit(&w[pos[t] >> 6], bit, memory_order_relaxed);
        newbits += (old & bit) == 0;
    }
    return newbits;
}

uint64_t bloom_stage_items(const struct stage *st)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < NSLOT; i++)
        n += atomic_load_explicit(&st->slots[i].count, memory_order_relaxed);
    return n;
}

static uint64_t stage_set_bits(const struct stage *st)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < NSLOT; i++)
        n += atomic_load_explicit(&st->slots[i].set_bits, memory_order_relaxed);
    return n;
}

/* ---- threads' counter slots ---------------------------------------------- */

/* A thread's slot is its common/striped stripe. */
static inline unsigned thread_slot(void) { return cr_stripe(); }

/* ---- construction ------------------------------------------------------- */

void bloom_params_init(bloom_params *p)
{
    p->expected_items = 1000000;
    p->fp_rate = 0.01;
    p->shards = 16;
    p->growth = 2.0;
    p->tightening = 0.85;
    p->max_stages = BLOOM_MAX_STAGES;
    p->block_lines = 0;
    p->max_bytes = 0;
}

int bloom_params_check(const bloom_params *p, char *err, size_t errlen)
{
    if (p->expected_items < 1 || p->expected_items > MAX_CAPACITY) {
        cr_errf(err, errlen, "expected_items must be in [1, 2^50]");
        return -EINVAL;
    }
    if (!(p->fp_rate >= 1e-9 && p->fp_rate <= 0.5)) {
        cr_errf(err, errlen, "fp_rate must be in [1e-9, 0.5]");
        return -EINVAL;
    }
    if (p->shards < 1 || p->shards > BLOOM_MAX_SHARDS || (p->shards & (p->shards - 1)) != 0) {
        cr_errf(err, errlen, "shards must be a power of two in [1, %d]", BLOOM_MAX_SHARDS);
        return -EINVAL;
    }
    if (!(p->growth >= 1.0 && p->growth <= 16.0)) {
        cr_errf(err, errlen, "growth must be in [1, 16]");
        return -EINVAL;
    }
    if (!(p->tightening >= 0.05 && p->tightening <= 0.95)) {
        cr_errf(err, errlen, "tightening must be in [0.05, 0.95]");
        return -EINVAL;
    }
    if (p->max_stages < 1 || p->max_stages > BLOOM_MAX_STAGES) {
        cr_errf(err, errlen, "max_stages must be in [1, %d]", BLOOM_MAX_STAGES);
        return -EINVAL;
    }
    if (p->block_lines > 2) {
        cr_errf(err, errlen, "block_lines must be 0 (auto), 1 or 2");
        return -EINVAL;
    }
    return 0;
}

void bloom_free(bloom *bf)
{
    if (bf == NULL)
        return;
    if (bf->shards != NULL) {
        for (unsigned s = 0; s < bf->params.shards; s++) {
            struct shard *sh = &bf->shards[s];
            unsigned n = atomic_load(&sh->nstages);
            for (unsigned i = 0; i < n; i++)
                stage_free(sh->stages[i]);
            pthread_mutex_destroy(&sh->lock);
        }
        cr_free(bf->shards);
    }
    while (bf->chunks != NULL) {
        struct chunk *c = bf->chunks;
        bf->chunks = c->next;
        cr_free(c->raw);
        cr_free(c);
    }
    pthread_mutex_destroy(&bf->arena_lock);
    pthread_mutex_destroy(&bf->geom_lock);
    cr_free(bf);
}

/* The filter without any stage (every shard has nstages == 0). */
int bloom_alloc(const bloom_params *p, bloom **out)
{
    int rc = bloom_params_check(p, NULL, 0);
    if (rc != 0)
        return rc;
    bloom *bf = cr_calloc(1, sizeof *bf);
    if (bf == NULL)
        return -ENOMEM;
    unsigned s = 0;
    int geom_lock = 0, arena_lock = 0;
    bf->params = *p;
    bf->shard_mask = p->shards - 1;
    double share = (double)p->expected_items / p->shards;
    double slack = p->shards > 1 ? 4.0 * sqrt(share * (1.0 - 1.0 / p->shards)) : 0.0;
    bf->cap0 = (uint64_t)ceil(share + slack);
    if (bf->cap0 < 1)
        bf->cap0 = 1;
    double r = p->tightening;
    bf->p0 = p->max_stages == 1 ? p->fp_rate
                                : p->fp_rate * (1.0 - r) / (1.0 - pow(r, (double)p->max_stages));
    atomic_init(&bf->max_bytes, p->max_bytes);
    rc = -ENOMEM;
    if (pthread_mutex_init(&bf->geom_lock, NULL) != 0)
        goto out;
    geom_lock = 1;
    if (pthread_mutex_init(&bf->arena_lock, NULL) != 0)
        goto out;
    arena_lock = 1;
    bf->shards = cr_calloc(p->shards, sizeof *bf->shards);
    if (bf->shards == NULL)
        goto out;
    for (s = 0; s < p->shards; s++) {
        if (pthread_mutex_init(&bf->shards[s].lock, NULL) != 0)
            goto out;
        atomic_init(&bf->shards[s].nstages, 0);
        atomic_init(&bf->shards[s].grow_failures, 0);
        atomic_init(&bf->shards[s].grow_pending, 0);
        atomic_init(&bf->shards[s].capped, 0);
    }
    *out = bf;
    return 0;
out:
    while (s-- > 0)
        pthread_mutex_destroy(&bf->shards[s].lock);
    cr_free(bf->shards);
    if (arena_lock)
        pthread_mutex_destroy(&bf->arena_lock);
    if (geom_lock)
        pthread_mutex_destroy(&bf->geom_lock);
    cr_free(bf);
    return rc;
}

int bloom_new(const bloom_params *p, bloom **out)
{
    bloom *bf = NULL;
    int rc = bloom_alloc(p, &bf);
    if (rc != 0)
        return rc;
    struct geom g;
    if (stage_geom(bf, 0, &g) != 0) {
        bloom_free(bf);
        return -ENOMEM;
    }
    if (p->max_bytes > 0 && g.nblocks * 64u * g.lines * p->shards > p->max_bytes) {
        bloom_free(bf); /* the first stages alone pass the cap */
        return -EFBIG;
    }
    bf->arena_on = g.nblocks * 64u * g.lines * p->shards >= HUGE_PAGE;
    for (unsigned s = 0; s < p->shards; s++) {
        struct stage *st = stage_create(bf, 0);
        if (st == NULL) {
            bloom_free(bf);
            return -ENOMEM;
        }
        bf->shards[s].stages[0] = st;
        atomic_store_explicit(&bf->shards[s].nstages, 1, memory_order_release);
    }
    *out = bf;
    return 0;
}

void bloom_get_params(const bloom *bf, bloom_params *out)
{
    *out = bf->params;
    out->max_bytes = atomic_load_explicit(&bf->max_bytes, memory_order_relaxed);
}

static uint64_t stage_bytes(const struct stage *st) { return st->nblocks * st->block_words * 8u; }

/* Bytes of every published stage's bits (stages are append-only, so a
 * shard's first nstages are complete once nstages is acquired). */
static uint64_t filter_bytes(const bloom *bf)
{
    uint64_t sum = 0;
    for (unsigned s = 0; s < bf->params.shards; s++) {
        const struct shard *sh = &bf->shards[s];
        unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
        for (unsigned i = 0; i < n; i++)
            sum += stage_bytes(sh->stages[i]);
    }
    return sum;
}

/* 1 if stage i of a shard would take the filter past its max_bytes. */
static int over_cap(bloom *bf, unsigned i)
{
    uint64_t cap = atomic_load_explicit(&bf->max_bytes, memory_order_relaxed);
    struct geom g;
    if (cap == 0 || stage_geom(bf, i, &g) != 0)
        return 0; /* no cap; a stage with no geometry fails as out of memory */
    return filter_bytes(bf) + g.nblocks * 64u * g.lines > cap;
}

/* ---- add and query ------------------------------------------------------ */

/* Called when a slot count of shard stage `idx` (the newest) passed a
 * multiple of qmask + 1, or on any add while an earlier append failed
 * (retry = 1: then a busy lock means someone else is at it): appends stage
 * idx + 1 if stage idx is full. */
static void maybe_grow(bloom *bf, struct shard *sh, unsigned idx, int retry)
{
    struct stage *st = sh->stages[idx];
    if (bloom_stage_items(st) < st->capacity || idx + 1 >= bf->params.max_stages)
        return;
    if (retry) {
        if (pthread_mutex_trylock(&sh->lock) != 0)
            return;
    } else {
        pthread_mutex_lock(&sh->lock);
    }
    if (atomic_load_explicit(&sh->nstages, memory_order_relaxed) == idx + 1) {
        struct stage *nst = NULL;
        if (over_cap(bf, idx + 1)) {
            /* held at the cap: not a failure to retry on every add; the
             * next full test (every qmask + 1 adds of a slot) asks again */
            atomic_store_explicit(&sh->capped, 1, memory_order_relaxed);
            atomic_store_explicit(&sh->grow_pending, 0, memory_order_relaxed);
        } else if ((nst = stage_create(bf, idx + 1)) == NULL) {
            atomic_fetch_add_explicit(&sh->grow_failures, 1, memory_order_relaxed);
            atomic_store_explicit(&sh->grow_pending, 1, memory_order_relaxed);
        } else {
            sh->stages[idx + 1] = nst;
            atomic_store_explicit(&sh->nstages, idx + 2, memory_order_release);
            atomic_store_explicit(&sh->grow_pending, 0, memory_order_relaxed);
            atomic_store_explicit(&sh->capped, 0, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&sh->lock);
}

void bloom_set_max_bytes(bloom *bf, uint64_t max_bytes)
{
    atomic_store_explicit(&bf->max_bytes, max_bytes, memory_order_relaxed);
    /* a full stage decides now (a saturated one sees few new keys, so its
     * full test would seldom run again): a successor, or held at the cap */
    for (unsigned s = 0; s < bf->params.shards; s++) {
        struct shard *sh = &bf->shards[s];
        unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
        if (n > 0)
            maybe_grow(bf, sh, n - 1, 0);
    }
}

int bloom_add_fp(bloom *bf, hash_fp fp)
{
    struct shard *sh = &bf->shards[fp.lo & bf->shard_mask];
    unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
    for (unsigned i = n - 1; i-- > 0;) /* older stages first: if present, add nothing */
        if (stage_has(sh->stages[i], fp))
            return 1;
    struct stage *st = sh->stages[n - 1];
    unsigned newbits = stage_set(st, fp);
    if (newbits == 0) {
        /* an overfull stage answers MAYBE to nearly every key, so a failed
         * append is retried here too, not only when new keys are counted */
        if (atomic_load_explicit(&sh->grow_pending, memory_order_relaxed))
            maybe_grow(bf, sh, n - 1, 1);
        return 1;
    }
    struct slot *sl = &st->slots[thread_slot()];
    uint64_t c = atomic_fetch_add_explicit(&sl->count, 1, memory_order_relaxed) + 1;
    atomic_fetch_add_explicit(&sl->set_bits, newbits, memory_order_relaxed);
    if ((c & st->qmask) == 0)
        maybe_grow(bf, sh, n - 1, 0);
    return 0;
}

int bloom_add(bloom *bf, const void *key, size_t len)
{
    return bloom_add_fp(bf, hash_fingerprint(key, len));
}

int bloom_query_fp(const bloom *bf, hash_fp fp)
{
    struct shard *sh = &bf->shards[fp.lo & bf->shard_mask];
    unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
    /* Newest first (it holds the most keys). A one-stage filter has no
     * branch on the answer at all, so MAYBE and NO cost the same and a mix
     * of them causes no mispredictions; older stages are asked only when
     * the newer ones said NO. */
    int hit = stage_has(sh->stages[n - 1], fp);
    for (unsigned i = n - 1; i-- > 0 && !hit;)
        hit = stage_has(sh->stages[i], fp);
    return hit;
}

int bloom_query(const bloom *bf, const void *key, size_t len)
{
    return bloom_query_fp(bf, hash_fingerprint(key, len));
}

/* Batches: the blocks of key j + AHEAD are prefetched while key j is
 * handled, so up to AHEAD cache misses are in flight instead of one. */
#define AHEAD 12

static inline void prefetch_key(const bloom *bf, hash_fp fp, int write)
{
    struct shard *sh = &bf->shards[fp.lo & bf->shard_mask];
    unsigned ns = atomic_load_explicit(&sh->nstages, memory_order_acquire);
    for (unsigned i = ns; i-- > 0;) {
        uint64_t b;
        const struct stage *st = sh->stages[i];
        const char *w = (const char *)stage_block(st, fp, &b);
        if (write) {
            __builtin_prefetch(w, 1);
            if (st->lines == 2)
                __builtin_prefetch(w + 64, 1);
        } else {
            __builtin_prefetch(w, 0);
            if (st->lines == 2)
                __builtin_prefetch(w + 64, 0);
        }
    }
}

void bloom_add_many(bloom *bf, const hash_fp *fps, size_t n, uint8_t *present)
{
    for (size_t j = 0; j < n && j < AHEAD; j++)
        prefetch_key(bf, fps[j], 1);
    for (size_t j = 0; j < n; j++) {
        if (j + AHEAD < n)
            prefetch_key(bf, fps[j + AHEAD], 1);
        int r = bloom_add_fp(bf, fps[j]);
        if (present != NULL)
            present[j] = (uint8_t)r;
    }
}

void bloom_query_many(const bloom *bf, const hash_fp *fps, size_t n, uint8_t *present)
{
    for (size_t j = 0; j < n && j < AHEAD; j++)
        prefetch_key(bf, fps[j], 0);
    for (size_t j = 0; j < n; j++) {
        if (j + AHEAD < n)
            prefetch_key(bf, fps[j + AHEAD], 0);
        present[j] = (uint8_t)bloom_query_fp(bf, fps[j]);
    }
}

/* ---- stats -------------------------------------------------------------- */

static void stage_info(const struct stage *st, bloom_stage_info *o)
{
    o->capacity = st->capacity;
    o->count = bloom_stage_items(st);
    o->bits = st->nblocks * LINE_BITS * st->lines;
    o->set_bits = stage_set_bits(st);
    o->k = st->k;
    o->block_lines = st->lines;
    o->fpr_target = st->error;
    o->bits_per_item = (double)o->bits / (double)st->capacity;
    o->fill = (double)o->set_bits / (double)o->bits;
    o->fpr_fill = ipow(o->fill, st->k);
    o->fpr_model = bloom_model_fpr(load_from_fill(o->fill, st->k, st->lines), st->k, st->lines);
}

unsigned bloom_stage_count(const bloom *bf, unsigned shard)
{
    if (shard >= bf->params.shards)
        return 0;
    return atomic_load_explicit(&bf->shards[shard].nstages, memory_order_acquire);
}

int bloom_stage_info_get(const bloom *bf, unsigned shard, unsigned stage, bloom_stage_info *out)
{
    if (stage >= bloom_stage_count(bf, shard))
        return -ENOENT;
    stage_info(bf->shards[shard].stages[stage], out);
    return 0;
}

void bloom_stats_get(const bloom *bf, bloom_stats *out)
{
    memset(out, 0, sizeof *out);
    out->shards = bf->params.shards;
    out->fpr_bound = bf->params.fp_rate;
    out->max_bytes = atomic_load_explicit(&bf->max_bytes, memory_order_relaxed);
    out->stages_min = BLOOM_MAX_STAGES;
    double fpr_sum = 0.0;
    for (unsigned s = 0; s < bf->params.shards; s++) {
        struct shard *sh = &bf->shards[s];
        unsigned n = atomic_load_explicit(&sh->nstages, memory_order_acquire);
        double pass = 1.0; /* probability every stage answers NO */
        int capped = atomic_load_explicit(&sh->capped, memory_order_relaxed) != 0;
        out->capped += (unsigned)capped;
        for (unsigned i = 0; i < n; i++) {
            bloom_stage_info si;
            stage_info(sh->stages[i], &si);
            out->capacity += si.capacity;
            out->count += si.count;
            out->bits += si.bits;
            out->set_bits += si.set_bits;
            pass *= 1.0 - si.fpr_model;
            if (i == n - 1 && (n == bf->params.max_stages || capped) && si.count > si.capacity)
                out->saturated++;
        }
        fpr_sum += 1.0 - pass;
        out->stages_total += n;
        if (n < out->stages_min)
            out->stages_min = n;
        if (n > out->stages_max)
            out->stages_max = n;
        out->grow_failures += atomic_load_explicit(&sh->grow_failures, memory_order_relaxed);
    }
    out->memory_bytes = out->bits / 8;
    out->bits_per_item = out->count ? (double)out->bits / (double)out->count : 0.0;
    out->fill = out->bits ? (double)out->set_bits / (double)out->bits : 0.0;
    out->fpr_model = fpr_sum / bf->params.shards;
}
