/* tests/test_bloom: dedup/hash and dedup/bloom.
 *
 * No false negatives (across stage growth, under 4 concurrent writers, after
 * a snapshot round trip); measured false-positive rate against the blocked
 * layout's own model (single stage, +-15%) and against the configured bound
 * (chain grown to 1024x its first stage); snapshot refusal of truncated,
 * corrupt, foreign, empty and directory inputs; out-of-memory paths. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "common/atomic_file.h"
#include "dedup/bloom.h"
#include "dedup/hash.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define MILLION 1000000u

/* ---- keys --------------------------------------------------------------- */

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Key i of family `tag`: 17 random-looking bytes; families never collide
 * (the tag byte differs) and keys of a family are distinct (i is encoded). */
typedef struct key {
    uint8_t b[17];
} key;

static key make_key(char tag, uint64_t i)
{
    key k;
    uint64_t s = i * 0x2545f4914f6cdd1du + (uint8_t)tag;
    uint64_t r = splitmix(&s);
    memcpy(k.b, &i, 8);
    memcpy(k.b + 8, &r, 8);
    k.b[16] = (uint8_t)tag;
    return k;
}

static int add_key(bloom *bf, char tag, uint64_t i)
{
    key k = make_key(tag, i);
    return bloom_add(bf, k.b, sizeof k.b);
}

static int query_key(const bloom *bf, char tag, uint64_t i)
{
    key k = make_key(tag, i);
    return bloom_query(bf, k.b, sizeof k.b);
}

static uint64_t count_missing(const bloom *bf, char tag, uint64_t n)
{
    uint64_t miss = 0;
    for (uint64_t i = 0; i < n; i++)
        miss += !query_key(bf, tag, i);
    return miss;
}

static double measured_fpr(const bloom *bf, char tag, uint64_t n)
{
    uint64_t fp = 0;
    for (uint64_t i = 0; i < n; i++)
        fp += (uint64_t)query_key(bf, tag, i);
    return (double)fp / (double)n;
}

static bloom *new_filter(uint64_t n, double p, unsigned shards, unsigned max_stages, unsigned lines)
{
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = n;
    bp.fp_rate = p;
    bp.shards = shards;
    bp.max_stages = max_stages;
    bp.block_lines = lines;
    bloom *bf = NULL;
    assert_int_equal(bloom_new(&bp, &bf), 0);
    assert_non_null(bf);
    return bf;
}

/* ---- temp folders ------------------------------------------------------- */

static char tmpdir[256];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_bloom.XXXXXX");
    return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    if (d != NULL) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            if (rmdir(p) != 0)
                unlink(p);
        }
        closedir(d);
    }
    rmdir(tmpdir);
    return 0;
}

static void tmp_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* bf saved to name in the temp folder with the mark hwm and loaded back. */
static bloom *round_trip(bloom *bf, const char *name, uint64_t hwm)
{
    char path[300], err[256];
    tmp_path(path, sizeof path, name);
    assert_int_equal(bloom_save(bf, path, hwm, NULL, err, sizeof err), 0);
    bloom *back = NULL;
    uint64_t got = 0;
    if (bloom_load(path, &back, &got, NULL, err, sizeof err) != 0)
        fail_msg("bloom_load %s: %s", path, err);
    assert_true(got == hwm);
    return back;
}

static unsigned files_in_tmpdir(void)
{
    unsigned n = 0;
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len > 0);
    rewind(f);
    uint8_t *p = malloc((size_t)len);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* ---- hash --------------------------------------------------------------- */

static void hash_fingerprint_is_stable_and_distinct(void **state)
{
    (void)state;
    hash_fp a = hash_fingerprint("http://a.example/", 17);
    hash_fp b = hash_fingerprint("http://a.example/", 17);
    hash_fp c = hash_fingerprint("http://a.example/x", 18);
    hash_fp e = hash_fingerprint(NULL, 0);
    assert_true(hash_fp_equal(a, b));
    assert_false(hash_fp_equal(a, c));
    assert_false(hash_fp_equal(a, e));
    assert_true(a.lo != a.hi);
}

static void hash_stream_matches_one_shot(void **state)
{
    (void)state;
    uint8_t data[10000];
    uint64_t s = 7;
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (uint8_t)splitmix(&s);
    hash_stream *hs = hash_stream_new();
    assert_non_null(hs);
    hash_stream_update(hs, data, 1);
    hash_stream_update(hs, data + 1, 0);
    hash_stream_update(hs, data + 1, 4000);
    hash_stream_update(hs, data + 4001, sizeof data - 4001);
    assert_true(hash_stream_digest(hs) == hash_digest64(data, sizeof data));
    data[5000] ^= 1;
    assert_true(hash_stream_digest(hs) != hash_digest64(data, sizeof data));
    hash_stream_free(hs);
}

/* ---- parameters --------------------------------------------------------- */

static void params_are_checked(void **state)
{
    (void)state;
    bloom_params p;
    char err[128];
    bloom *bf = NULL;
    bloom_params_init(&p);
    assert_int_equal(bloom_params_check(&p, err, sizeof err), 0);
    assert_int_equal(p.shards, 16);
    assert_true(p.growth == 2.0 && p.tightening == 0.85);

    bloom_params bad = p;
    bad.shards = 12;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "shards"));
    assert_int_equal(bloom_new(&bad, &bf), -EINVAL);
    assert_null(bf);
    bad = p;
    bad.fp_rate = 0.0;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "fp_rate"));
    bad = p;
    bad.expected_items = 0;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    bad = p;
    bad.growth = 0.5;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    bad = p;
    bad.tightening = 1.0;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    bad = p;
    bad.max_stages = 0;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
    bad = p;
    bad.block_lines = 3;
    assert_int_equal(bloom_params_check(&bad, err, sizeof err), -EINVAL);
}

/* ---- basic behaviour ---------------------------------------------------- */

static void add_reports_presence(void **state)
{
    (void)state;
    bloom *bf = new_filter(1000, 0.01, 4, BLOOM_MAX_STAGES, 0);
    for (uint64_t i = 0; i < 1000; i++)
        assert_int_equal(query_key(bf, 'n', i), 0); /* empty: NO for everything */
    assert_int_equal(bloom_add(bf, "abc", 3), 0);
    assert_int_equal(bloom_add(bf, "abc", 3), 1);
    assert_int_equal(bloom_query(bf, "abc", 3), 1);
    hash_fp fp = hash_fingerprint("abc", 3);
    assert_int_equal(bloom_query_fp(bf, fp), 1);
    assert_int_equal(bloom_add_fp(bf, fp), 1);
    hash_fp fq = hash_fingerprint("abd", 3);
    assert_int_equal(bloom_add_fp(bf, fq), 0);
    assert_int_equal(bloom_query(bf, "abd", 3), 1);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_int_equal(st.count, 2);
    assert_true(st.set_bits > 0 && st.set_bits <= 2u * 16);
    bloom_free(bf);
}

static void batch_calls_match_single_calls(void **state)
{
    (void)state;
    enum { N = 5000 };
    bloom *a = new_filter(2000, 0.01, 4, BLOOM_MAX_STAGES, 0);
    bloom *b = new_filter(2000, 0.01, 4, BLOOM_MAX_STAGES, 0);
    static hash_fp fps[N];
    static uint8_t pa[N], pb[N];
    for (uint64_t i = 0; i < N; i++) {
        key k = make_key('b', i % 3000); /* repeats: some answers are 1 */
        fps[i] = hash_fingerprint(k.b, sizeof k.b);
    }
    for (size_t i = 0; i < N; i++)
        pa[i] = (uint8_t)bloom_add_fp(a, fps[i]);
    bloom_add_many(b, fps, N, pb);
    assert_memory_equal(pa, pb, N);
    bloom_add_many(b, fps, 10, NULL);
    for (uint64_t i = 0; i < N; i++) {
        key k = i % 2 ? make_key('b', i % 3000) : make_key('q', i);
        fps[i] = hash_fingerprint(k.b, sizeof k.b);
        pa[i] = (uint8_t)bloom_query_fp(a, fps[i]);
    }
    bloom_query_many(b, fps, N, pb);
    assert_memory_equal(pa, pb, N);
    unsigned ones = 0;
    for (size_t i = 0; i < N; i++)
        ones += pb[i];
    assert_true(ones >= N / 2 && ones < N / 2 + 100);
    bloom_free(a);
    bloom_free(b);
}

/* ---- false negatives and false positives -------------------------------- */

static void no_false_negatives_across_growth_and_snapshot(void **state)
{
    (void)state;
    const uint64_t n = MILLION;
    bloom *bf = new_filter(20000, 0.01, 16, BLOOM_MAX_STAGES, 0);
    for (uint64_t i = 0; i < n; i++)
        add_key(bf, 'k', i);
    assert_int_equal(count_missing(bf, 'k', n), 0);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_true(st.stages_min >= 5); /* 20000 -> 1M grows every shard */
    assert_true(st.count > n - n / 50 && st.count <= n);
    assert_int_equal(st.grow_failures, 0);
    assert_int_equal(st.saturated, 0);

    char path[300], err[256];
    tmp_path(path, sizeof path, "seen.bloom");
    assert_int_equal(bloom_save(bf, path, 123456789u, NULL, err, sizeof err), 0);
    assert_int_equal(files_in_tmpdir(), 1); /* no temp file left */
    bloom *back = NULL;
    uint64_t hwm = 0;
    assert_int_equal(bloom_load(path, &back, &hwm, NULL, err, sizeof err), 0);
    assert_true(hwm == 123456789u);
    assert_int_equal(count_missing(back, 'k', n), 0);
    bloom_stats sb;
    bloom_stats_get(back, &sb);
    assert_int_equal(sb.count, st.count);
    assert_int_equal(sb.bits, st.bits);
    assert_int_equal(sb.set_bits, st.set_bits);
    assert_int_equal(sb.stages_total, st.stages_total);
    for (uint64_t i = 0; i < 20000; i++) /* same answers for absent keys, too */
        assert_int_equal(query_key(back, 'z', i), query_key(bf, 'z', i));
    bloom_params pa, pb;
    bloom_get_params(bf, &pa);
    bloom_get_params(back, &pb);
    assert_true(pa.expected_items == pb.expected_items && pa.fp_rate == pb.fp_rate &&
                pa.shards == pb.shards && pa.growth == pb.growth &&
                pa.tightening == pb.tightening && pa.max_stages == pb.max_stages &&
                pa.block_lines == pb.block_lines);
    /* the loaded filter keeps growing */
    for (uint64_t i = 0; i < 100000; i++)
        add_key(back, 'm', i);
    assert_int_equal(count_missing(back, 'm', 100000), 0);
    assert_int_equal(count_missing(back, 'k', n), 0);
    bloom_free(back);
    bloom_free(bf);
}

/* One stage: measured rate within 15% of the blocked model at the actual
 * load, and the sizing meets its target at <= 10.1 bits per key for 1%. */
static void check_single_stage_fpr(uint64_t n, double p, unsigned lines)
{
    bloom *bf = new_filter(n, p, 1, 1, lines);
    for (uint64_t i = 0; i < n; i++)
        add_key(bf, 'i', i);
    bloom_stage_info si;
    assert_int_equal(bloom_stage_info_get(bf, 0, 0, &si), 0);
    assert_int_equal(bloom_stage_info_get(bf, 0, 1, &si), -ENOENT);
    assert_int_equal(bloom_stage_info_get(bf, 0, 0, &si), 0);
    uint64_t blocks = si.bits / (512u * si.block_lines);
    double model = bloom_model_fpr((double)si.count / (double)blocks, si.k, si.block_lines);
    double at_capacity = bloom_model_fpr((double)si.capacity / (double)blocks, si.k, si.block_lines);
    double measured = measured_fpr(bf, 'o', MILLION);
    print_message("   lines=%u k=%u bits/item=%.3f fill=%.4f fill^k=%.5f model=%.5f "
                  "model(fill)=%.5f measured=%.5f\n", si.block_lines, si.k, si.bits_per_item,
                  si.fill, si.fpr_fill, model, si.fpr_model, measured);
    assert_true(at_capacity <= p * 1.000001);
    assert_true(measured >= 0.85 * model && measured <= 1.15 * model);
    assert_true(si.fpr_model >= 0.9 * model && si.fpr_model <= 1.1 * model);
    assert_true(si.fpr_fill < model); /* fill^k underestimates a blocked filter */
    assert_true(si.fill > 0.3 && si.fill < 0.6);
    if (p == 0.01)
        assert_true(si.bits_per_item <= 10.1);
    bloom_free(bf);
}

static void fpr_matches_model_one_line(void **state)
{
    (void)state;
    check_single_stage_fpr(MILLION, 0.01, 1);
}

static void fpr_matches_model_two_lines(void **state)
{
    (void)state;
    check_single_stage_fpr(MILLION, 0.002, 2);
}

/* A chain grown until its newest stage (1024x the first) is full stays at
 * or under the bound, and costs at most 1.8x the bits per key of one
 * filter sized for the final count. */
static void chain_grown_1024x_stays_under_bound(void **state)
{
    (void)state;
    const uint64_t n0 = 500;
    const uint64_t total = n0 * 2047; /* stages 0..10: n0 * (2^11 - 1) */
    bloom *bf = new_filter(n0, 0.01, 1, BLOOM_MAX_STAGES, 0);
    for (uint64_t i = 0; i < total; i++)
        add_key(bf, 'c', i);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_int_equal(st.stages_total, 11);
    bloom_stage_info last;
    assert_int_equal(bloom_stage_info_get(bf, 0, 10, &last), 0);
    assert_true(last.capacity == n0 * 1024);
    assert_true(last.count >= last.capacity - last.capacity / 30);
    double measured = measured_fpr(bf, 'o', MILLION);
    bloom *single = new_filter(total, 0.01, 1, 1, 0);
    bloom_stats ss;
    bloom_stats_get(single, &ss);
    double single_bpk = (double)ss.bits / (double)total;
    print_message("   chain: FPR %.5f (model %.5f), %.3f bits/key = %.3fx a single filter\n",
                  measured, st.fpr_model, st.bits_per_item, st.bits_per_item / single_bpk);
    assert_int_equal(count_missing(bf, 'c', total), 0);
    assert_true(measured <= 0.01);
    assert_true(st.fpr_model <= 0.01);
    assert_true(st.bits_per_item <= 1.8 * single_bpk);
    bloom_free(single);
    bloom_free(bf);
}

/* A chain capped at max_stages keeps accepting keys in its last stage. */
static void max_stages_caps_the_chain(void **state)
{
    (void)state;
    bloom *bf = new_filter(100, 0.01, 1, 2, 0);
    for (uint64_t i = 0; i < 2000; i++)
        add_key(bf, 's', i);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_int_equal(st.stages_total, 2);
    assert_int_equal(st.saturated, 1);
    assert_int_equal(count_missing(bf, 's', 2000), 0);
    bloom_free(bf);
}

/* max_bytes holds the chain where the next stage would pass it: keys go on
 * into the full stage (none lost), the shard is counted capped and then
 * saturated, the memory stays under the cap; a snapshot keeps no cap, and
 * a raised one lets the chain grow again. */
static void max_bytes_caps_the_chain(void **state)
{
    (void)state;
    bloom_params bp;
    bloom_params_init(&bp);
    bp.expected_items = 100;
    bp.shards = 2;
    bloom *probe = NULL;
    assert_int_equal(bloom_new(&bp, &probe), 0);
    bloom_stats st;
    bloom_stats_get(probe, &st);
    bloom_free(probe);
    bp.max_bytes = st.memory_bytes - 1; /* the first stages alone pass it: refused */
    bloom *bf = NULL;
    assert_int_equal(bloom_new(&bp, &bf), -EFBIG);
    assert_null(bf);
    bp.max_bytes = st.memory_bytes + 64; /* both first stages, not one more line per shard */
    assert_int_equal(bloom_new(&bp, &bf), 0);
    for (uint64_t i = 0; i < 3000; i++)
        add_key(bf, 'm', i);
    bloom_stats_get(bf, &st);
    assert_int_equal(st.stages_total, 2);
    assert_int_equal(st.capped, 2);
    assert_int_equal(st.saturated, 2);
    assert_int_equal(st.grow_failures, 0);
    assert_true(st.memory_bytes <= bp.max_bytes);
    assert_int_equal(st.max_bytes, bp.max_bytes);
    assert_int_equal(count_missing(bf, 'm', 3000), 0);
    assert_true(st.fpr_model > bp.fp_rate); /* what the report says: past the bound */

    bloom *back = round_trip(bf, "capped.bloom", 0);
    bloom_params got;
    bloom_get_params(back, &got);
    assert_int_equal(got.max_bytes, 0);
    bloom_set_max_bytes(back, bp.max_bytes * 100);
    for (uint64_t i = 3000; i < 6000; i++)
        add_key(back, 'm', i);
    bloom_stats_get(back, &st);
    assert_true(st.stages_total > 2);
    assert_int_equal(st.capped, 0);
    assert_int_equal(st.saturated, 0);
    assert_int_equal(count_missing(back, 'm', 6000), 0);
    bloom_free(back);
    bloom_free(bf);
}

/* ---- threads ------------------------------------------------------------ */

#define WRITERS 4

struct writer_arg {
    bloom *bf;
    unsigned id;
    uint64_t n;
    _Atomic uint64_t done; /* keys 0..done-1 of this writer are added */
};

static void *writer_main(void *p)
{
    struct writer_arg *a = p;
    for (uint64_t i = 0; i < a->n; i++) {
        add_key(a->bf, (char)('A' + a->id), i);
        atomic_store_explicit(&a->done, i + 1, memory_order_release);
    }
    return NULL;
}

struct reader_arg {
    bloom *bf;
    struct writer_arg *w;
    uint64_t misses, checks;
};

/* Checks keys the writers have finished while they keep adding and growing. */
static void *reader_main(void *p)
{
    struct reader_arg *r = p;
    uint64_t s = 99;
    for (;;) {
        int all_done = 1;
        for (unsigned w = 0; w < WRITERS; w++) {
            uint64_t d = atomic_load_explicit(&r->w[w].done, memory_order_acquire);
            all_done &= d == r->w[w].n;
            if (d == 0)
                continue;
            uint64_t i = splitmix(&s) % d;
            r->misses += !query_key(r->bf, (char)('A' + w), i);
            r->checks++;
        }
        if (all_done)
            return NULL;
    }
}

static void concurrent_adds_lose_nothing(void **state)
{
    (void)state;
    const uint64_t per = SANITIZED ? 40000 : 250000;
    bloom *bf = new_filter(4000, 0.01, 4, BLOOM_MAX_STAGES, 0); /* grows while racing */
    struct writer_arg w[WRITERS];
    pthread_t t[WRITERS + 1];
    for (unsigned i = 0; i < WRITERS; i++) {
        w[i].bf = bf;
        w[i].id = i;
        w[i].n = per;
        atomic_init(&w[i].done, 0);
    }
    struct reader_arg r = { bf, w, 0, 0 };
    for (unsigned i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
    assert_int_equal(pthread_create(&t[WRITERS], NULL, reader_main, &r), 0);
    for (unsigned i = 0; i <= WRITERS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(r.misses, 0);
    assert_true(r.checks > 0);
    for (unsigned i = 0; i < WRITERS; i++)
        assert_int_equal(count_missing(bf, (char)('A' + i), per), 0);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_true(st.stages_min >= 4);
    assert_true(st.count > (WRITERS * per) * 98 / 100 && st.count <= WRITERS * per);
    /* the chain still meets its bound after racing growth */
    assert_true(measured_fpr(bf, 'o', SANITIZED ? 100000 : MILLION) <= 0.01);
    bloom_free(bf);
}

/* ---- snapshots ---------------------------------------------------------- */

/* A small saved filter: its path, bytes and size. */
static uint8_t *saved_filter(char *path, size_t pathlen, size_t *size)
{
    bloom *bf = new_filter(3000, 0.01, 2, BLOOM_MAX_STAGES, 0);
    for (uint64_t i = 0; i < 10000; i++)
        add_key(bf, 's', i);
    char err[256];
    tmp_path(path, pathlen, "good.bloom");
    assert_int_equal(bloom_save(bf, path, 42, NULL, err, sizeof err), 0);
    bloom_free(bf);
    return read_file(path, size);
}

static void expect_refused(const char *path, int code, const char *words)
{
    bloom *bf = NULL;
    uint64_t hwm = 7;
    char err[256] = "";
    int rc = bloom_load(path, &bf, &hwm, NULL, err, sizeof err);
    print_message("   refused (%d): %s\n", rc, err);
    assert_int_equal(rc, code);
    assert_null(bf);
    assert_true(hwm == 7);
    assert_true(strlen(err) > 0);
    if (words != NULL)
        assert_non_null(strstr(err, words));
}

static void snapshot_round_trip_small(void **state)
{
    (void)state;
    char path[300];
    size_t n;
    uint8_t *data = saved_filter(path, sizeof path, &n);
    free(data);
    bloom *bf = NULL;
    uint64_t hwm = 0;
    char err[256];
    assert_int_equal(bloom_load(path, &bf, &hwm, NULL, err, sizeof err), 0);
    assert_true(hwm == 42);
    assert_int_equal(count_missing(bf, 's', 10000), 0);
    /* overwrite in place: the rename replaces the old file */
    assert_int_equal(bloom_save(bf, path, 43, NULL, err, sizeof err), 0);
    bloom_free(bf);
    bf = NULL;
    assert_int_equal(bloom_load(path, &bf, &hwm, NULL, err, sizeof err), 0);
    assert_true(hwm == 43);
    bloom_free(bf);
    assert_int_equal(files_in_tmpdir(), 1);
}

/* The owner id comes back as saved; NULL saves zeros. */
static void snapshot_keeps_owner(void **state)
{
    (void)state;
    bloom *bf = new_filter(1000, 0.01, 2, BLOOM_MAX_STAGES, 0);
    uint8_t owner[BLOOM_OWNER_BYTES], back[BLOOM_OWNER_BYTES], zero[BLOOM_OWNER_BYTES] = { 0 };
    for (int i = 0; i < BLOOM_OWNER_BYTES; i++)
        owner[i] = (uint8_t)(0xa0 + i);
    char path[300], err[256];
    uint64_t hwm = 0;
    tmp_path(path, sizeof path, "owned.bloom");
    assert_int_equal(bloom_save(bf, path, 9, owner, err, sizeof err), 0);
    bloom *got = NULL;
    assert_int_equal(bloom_load(path, &got, &hwm, back, err, sizeof err), 0);
    assert_memory_equal(back, owner, sizeof owner);
    assert_true(hwm == 9);
    bloom_free(got);
    assert_int_equal(bloom_save(bf, path, 9, NULL, err, sizeof err), 0);
    got = NULL;
    assert_int_equal(bloom_load(path, &got, &hwm, back, err, sizeof err), 0);
    assert_memory_equal(back, zero, sizeof zero);
    bloom_free(got);
    bloom_free(bf);
}

/* A filter whose stages share huge-page chunks survives a round trip and
 * keeps growing (into chunks of the loaded filter). */
static void snapshot_round_trip_chunked(void **state)
{
    (void)state;
    bloom *bf = new_filter(2000000, 0.01, 16, BLOOM_MAX_STAGES, 0);
    for (uint64_t i = 0; i < 200000; i++)
        add_key(bf, 'h', i);
    bloom *back = round_trip(bf, "chunked.bloom", 5);
    assert_int_equal(count_missing(back, 'h', 200000), 0);
    for (uint64_t i = 0; i < 20000; i++)
        assert_int_equal(query_key(back, 'z', i), query_key(bf, 'z', i));
    for (uint64_t i = 0; i < 3000000; i++) /* past capacity: every shard grows */
        add_key(back, 'g', i);
    bloom_stats st;
    bloom_stats_get(back, &st);
    assert_true(st.stages_min >= 2);
    assert_int_equal(count_missing(back, 'g', 3000000), 0);
    assert_int_equal(count_missing(back, 'h', 200000), 0);
    bloom_free(back);
    bloom_free(bf);
}

static void snapshot_refuses_truncated(void **state)
{
    (void)state;
    char path[300], bad[300];
    size_t n;
    uint8_t *data = saved_filter(path, sizeof path, &n);
    tmp_path(bad, sizeof bad, "bad.bloom");
    size_t cuts[] = { 3, 12, 20, 95, 100, n / 2, n - 9, n - 1 };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_file(bad, data, cuts[i]);
        expect_refused(bad, -EBADMSG, "truncated");
    }
    free(data);
}

static void snapshot_refuses_flipped_byte(void **state)
{
    (void)state;
    char path[300], bad[300];
    size_t n;
    uint8_t *data = saved_filter(path, sizeof path, &n);
    tmp_path(bad, sizeof bad, "bad.bloom");
    /* header parameters, hwm, shard record, stage record, bits, checksum */
    size_t at[] = { 24, 40, 64, 88, 96, 104, 112, 120, 130, 156, 180, n / 2, n - 9, n - 1 };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        data[at[i]] ^= 0x10;
        write_file(bad, data, n);
        expect_refused(bad, -EBADMSG, "checksum");
        data[at[i]] ^= 0x10;
    }
    /* the total-size field is checked before the checksum */
    data[17] ^= 1;
    write_file(bad, data, n);
    expect_refused(bad, -EBADMSG, "truncated or padded");
    data[17] ^= 1;
    /* extra bytes at the end */
    uint8_t *longer = malloc(n + 5);
    assert_non_null(longer);
    memcpy(longer, data, n);
    memset(longer + n, 0, 5);
    write_file(bad, longer, n + 5);
    expect_refused(bad, -EBADMSG, NULL);
    free(longer);
    free(data);
}

static void snapshot_refuses_foreign_files(void **state)
{
    (void)state;
    char path[300], bad[300];
    size_t n;
    uint8_t *data = saved_filter(path, sizeof path, &n);
    tmp_path(bad, sizeof bad, "bad.bloom");
    data[0] = 'X'; /* wrong magic */
    write_file(bad, data, n);
    expect_refused(bad, -EINVAL, "magic");
    data[0] = 'C';
    data[8] = 4; /* a later version */
    write_file(bad, data, n);
    expect_refused(bad, -ENOTSUP, "version");
    data[8] = 2; /* an earlier one (before generation rings) */
    write_file(bad, data, n);
    expect_refused(bad, -ENOTSUP, "version");
    data[8] = 1; /* before owner ids */
    write_file(bad, data, n);
    expect_refused(bad, -ENOTSUP, "version");
    data[8] = 3;
    const char text[] = "[dedup]\nexpected_urls = 1000000\n";
    write_file(bad, text, sizeof text - 1);
    expect_refused(bad, -EINVAL, "magic");
    write_file(bad, "", 0);
    expect_refused(bad, -EBADMSG, "empty");
    expect_refused(tmpdir, -EISDIR, "directory");
    tmp_path(bad, sizeof bad, "missing.bloom");
    expect_refused(bad, -ENOENT, NULL);
    free(data);
}

/* A checksum-valid file with an impossible field is still refused (the
 * fields are checked, not only the checksum). */
static void snapshot_checks_fields_behind_checksum(void **state)
{
    (void)state;
    char path[300], bad[300];
    size_t n;
    uint8_t *data = saved_filter(path, sizeof path, &n);
    tmp_path(bad, sizeof bad, "bad.bloom");
    /* first stage record: nblocks (at header 128 + generation 16 + shard 8
     * + 16) set huge, checksum redone */
    uint64_t huge = UINT64_C(1) << 40;
    memcpy(data + 128 + 16 + 8 + 16, &huge, 8);
    uint64_t sum = hash_digest64(data, n - 8);
    memcpy(data + n - 8, &sum, 8);
    write_file(bad, data, n);
    expect_refused(bad, -EBADMSG, "geometry");
    free(data);
    data = read_file(path, &n);
    uint32_t shards = 3; /* not a power of two */
    memcpy(data + 64, &shards, 4);
    sum = hash_digest64(data, n - 8);
    memcpy(data + n - 8, &sum, 8);
    write_file(bad, data, n);
    expect_refused(bad, -EBADMSG, "shards");
    free(data);
}

static cr_afile_step snap_fail_at;

static int snap_fail_hook(cr_afile_step step) { return step == snap_fail_at ? -EIO : 0; }

/* A save that fails before its rename leaves the previous snapshot whole
 * (it still loads, with its own high-water mark) and no temp file. */
static void failed_save_keeps_previous_snapshot(void **state)
{
    (void)state;
    bloom *bf = new_filter(1000, 0.01, 1, 4, 0);
    char path[300], err[256];
    tmp_path(path, sizeof path, "keep.bloom");
    assert_int_equal(bloom_save(bf, path, 7, NULL, err, sizeof err), 0);
    for (cr_afile_step s = CR_AF_CREATE; s < CR_AF_DIRSYNC; s++) {
        snap_fail_at = s;
        cr_afile_fail_hook = snap_fail_hook;
        err[0] = '\0';
        int rc = bloom_save(bf, path, 8, NULL, err, sizeof err);
        cr_afile_fail_hook = NULL;
        assert_int_equal(rc, -EIO);
        assert_true(strlen(err) > 0);
        assert_int_equal(files_in_tmpdir(), 1);
        bloom *back = NULL;
        uint64_t hwm = 0;
        assert_int_equal(bloom_load(path, &back, &hwm, NULL, err, sizeof err), 0);
        assert_true(hwm == 7);
        bloom_free(back);
    }
    bloom_free(bf);
    unlink(path);
}

static void snapshot_save_reports_errors(void **state)
{
    (void)state;
    bloom *bf = new_filter(1000, 0.01, 1, 4, 0);
    char path[300], err[256] = "";
    tmp_path(path, sizeof path, "no/such/folder/x.bloom");
    assert_int_equal(bloom_save(bf, path, 1, NULL, err, sizeof err), -ENOENT);
    assert_true(strlen(err) > 0);
    bloom_free(bf);
    assert_int_equal(files_in_tmpdir(), 0);
}

/* ---- out of memory ------------------------------------------------------ */

static void check_oom_in_new(uint64_t n, unsigned shards)
{
    bloom_params p;
    bloom_params_init(&p);
    p.expected_items = n;
    p.shards = shards;
    int ok = 0;
    for (long i = 1; i < 100 && !ok; i++) {
        bloom *bf = NULL;
        cr_alloc_fail_after(i);
        int rc = bloom_new(&p, &bf);
        long failed = cr_alloc_failures();
        cr_alloc_fail_after(0);
        if (rc == 0) {
            assert_int_equal(failed, 0);
            ok = 1;
            bloom_free(bf);
        } else {
            assert_int_equal(rc, -ENOMEM);
            assert_null(bf);
        }
    }
    assert_true(ok);
}

static void oom_in_new(void **state)
{
    (void)state;
    check_oom_in_new(10000, 4);
    check_oom_in_new(4000000, 16); /* small stages carved from huge-page chunks */
}

static void oom_while_growing_keeps_keys(void **state)
{
    (void)state;
    bloom *bf = new_filter(100, 0.01, 1, BLOOM_MAX_STAGES, 0);
    cr_alloc_fail_after(1);
    for (uint64_t i = 0; i < 5000; i++)
        add_key(bf, 'g', i);
    cr_alloc_fail_after(0);
    bloom_stats st;
    bloom_stats_get(bf, &st);
    assert_int_equal(st.stages_total, 1);
    assert_true(st.grow_failures > 0);
    assert_int_equal(count_missing(bf, 'g', 5000), 0);
    add_key(bf, 'g', 5000); /* memory is back: the next full-check grows */
    for (uint64_t i = 5001; i < 6000; i++)
        add_key(bf, 'g', i);
    bloom_stats_get(bf, &st);
    assert_true(st.stages_total >= 2);
    assert_int_equal(count_missing(bf, 'g', 6000), 0);
    bloom_free(bf);
}

static void oom_in_save_and_load(void **state)
{
    (void)state;
    char path[300], err[256];
    size_t n;
    free(saved_filter(path, sizeof path, &n));
    int loaded = 0;
    for (long i = 1; i < 100 && !loaded; i++) {
        bloom *bf = NULL;
        uint64_t hwm = 0;
        cr_alloc_fail_after(i);
        int rc = bloom_load(path, &bf, &hwm, NULL, err, sizeof err);
        cr_alloc_fail_after(0);
        if (rc == 0) {
            loaded = 1;
            assert_int_equal(count_missing(bf, 's', 10000), 0);
            bloom_free(bf);
        } else {
            assert_int_equal(rc, -ENOMEM);
            assert_null(bf);
        }
    }
    assert_true(loaded);
    bloom *bf = new_filter(1000, 0.01, 1, 4, 0);
    char p2[300];
    tmp_path(p2, sizeof p2, "oom.bloom");
    for (long i = 1; i <= 3; i++) {
        cr_alloc_fail_after(i);
        int rc = bloom_save(bf, p2, 1, NULL, err, sizeof err);
        cr_alloc_fail_after(0);
        assert_int_equal(rc, -ENOMEM);
    }
    assert_int_equal(files_in_tmpdir(), 1); /* only good.bloom: no temp left */
    bloom_free(bf);
}

/* ---- the model ---------------------------------------------------------- */

static void model_behaves(void **state)
{
    (void)state;
    /* grows with the load; two lines beat one at the same bits per key */
    double prev = 0.0;
    for (double load = 5; load <= 120; load += 5) {
        double f = bloom_model_fpr(load, 7, 1);
        assert_true(f > prev);
        prev = f;
        assert_true(bloom_model_fpr(2 * load, 7, 2) < f);
    }
    /* a blocked filter is worse than the classic formula at 10 bits/key */
    double classic = 0.0081937; /* (1 - e^(-0.7))^7 */
    double blocked = bloom_model_fpr(51.2, 7, 1);
    assert_true(blocked > classic && blocked < 1.3 * classic);
    assert_true(bloom_model_fpr(0.0, 7, 1) == 0.0);
    double heavy = bloom_model_fpr(900.0, 3, 2); /* the log-space branch */
    assert_true(heavy > 0.5 && heavy <= 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_fingerprint_is_stable_and_distinct),
        cmocka_unit_test(hash_stream_matches_one_shot),
        cmocka_unit_test(params_are_checked),
        cmocka_unit_test(model_behaves),
        cmocka_unit_test(add_reports_presence),
        cmocka_unit_test(batch_calls_match_single_calls),
        cmocka_unit_test_setup_teardown(no_false_negatives_across_growth_and_snapshot,
                                        make_tmpdir, remove_tmpdir),
        cmocka_unit_test(fpr_matches_model_one_line),
        cmocka_unit_test(fpr_matches_model_two_lines),
        cmocka_unit_test(chain_grown_1024x_stays_under_bound),
        cmocka_unit_test(max_stages_caps_the_chain),
        cmocka_unit_test_setup_teardown(max_bytes_caps_the_chain, make_tmpdir, remove_tmpdir),
        cmocka_unit_test(concurrent_adds_lose_nothing),
        cmocka_unit_test_setup_teardown(snapshot_round_trip_small, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_keeps_owner, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_round_trip_chunked, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_refuses_truncated, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_refuses_flipped_byte, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_refuses_foreign_files, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_checks_fields_behind_checksum, make_tmpdir,
                                        remove_tmpdir),
        cmocka_unit_test_setup_teardown(snapshot_save_reports_errors, make_tmpdir, remove_tmpdir),
        cmocka_unit_test_setup_teardown(failed_save_keeps_previous_snapshot, make_tmpdir, remove_tmpdir),
        cmocka_unit_test(oom_in_new),
        cmocka_unit_test(oom_while_growing_keeps_keys),
        cmocka_unit_test_setup_teardown(oom_in_save_and_load, make_tmpdir, remove_tmpdir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
