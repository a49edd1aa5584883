/* bench/bench_db: throughput of storage/db on URL-like keys.
 *
 * usage: bench_db DIR MODE N BATCH [THREADS]
 *   MODE async   db_insert_url with a callback, N new URLs
 *        sync    db_insert_url_wait from THREADS threads (default 1)
 *        batch   db_insert_urls_wait, 1000 URLs per call (ordered answers)
 *        dup     N new URLs async, flushed, then the same N again sync
 *                (every answer "existed": the cost of a Bloom-MAYBE check)
 *        dupbatch  the same with db_insert_urls_wait, 1000 per call
 *        read    N new URLs, then db_reader_exists on each and a full
 *                db_reader_scan_after (the Bloom rebuild), and the time of a
 *                close + reopen (in-flight reset and state counts)
 *        lookup  the same on the rows DIR already holds (no inserts)
 * Keys are random over 1000 hosts (the worst case for the B-tree indexes),
 * or with BENCH_DB_CLUSTERED set, in runs of 50 per host (crawl-like).
 * Rows are queued (a crawl's), or seen_only with BENCH_DB_SEEN_ONLY set (no
 * frontier index entries), or bare with BENCH_DB_BARE set (what `crawld
 * dedup` stores: seen_only rows in the narrow seen table).
 * Prints one line: mode, n, batch, threads, seconds, ops/s, commits, and
 * the size of crawld.db. DIR is created if missing and left in place. */
#include "common/clock.h"
#include "storage/db.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void) { return (double)cr_mono_ns() / 1e9; }

/* A URL-like key for i: 1000 hosts, pseudo-random path (so B-tree inserts
 * land all over the index, as real links do). Returns its length. */
static int clustered;  /* keys come in runs of 50 per host, as links of a page */
static int row_state;  /* DB_STATE_QUEUED, or DB_STATE_SEEN_ONLY */
static bool row_bare;  /* seen_only rows as `crawld dedup` stores them (db_url.bare) */
static bool absent;    /* async inserts vouched absent, as a Bloom NO does (no look-up) */

static int make_key(char *buf, size_t len, uint64_t i, char *host, size_t hlen)
{
    uint64_t x = i * 0x9e3779b97f4a7c15ULL, h;

    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    h = clustered ? ((i / 50) * 0x9e3779b97f4a7c15ULL >> 40) : x;
    snprintf(host, hlen, "www.site%03u.example.com", (unsigned)(h % 1000));
    return snprintf(buf, len, "https://%s/articles/%u/%016llx.html?page=%u", host,
                    (unsigned)(x >> 40) % 5000, (unsigned long long)x, (unsigned)(i % 7));
}

/* CPU seconds (user + system) of the whole process so far. */
static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6
           + (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Bytes this process caused to be written to storage (Linux), or -1. */
static double written_bytes(void)
{
    FILE *fp = fopen("/proc/self/io", "r");
    char line[128];
    double v = -1;

    if (fp == NULL)
        return -1;
    while (fgets(line, sizeof line, fp) != NULL)
        if (strncmp(line, "write_bytes: ", 13) == 0)
            v = strtod(line + 13, NULL);
    fclose(fp);
    return v;
}

static void fail(const char *what, int rc)
{
    fprintf(stderr, "bench_db: %s: %s\n", what, strerror(-rc));
    exit(1);
}

static long parse_long(const char *s, const char *what)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0) {
        fprintf(stderr, "bench_db: bad %s: %s\n", what, s);
        exit(2);
    }
    return v;
}

typedef struct job {
    db *d;
    uint64_t from, to;
    int expect; /* 1 new, 0 existing */
    long bad;
} job;

static void count_cb(void *ud, const db_result *r)
{
    long *news = ud;

    if (r->status == 1)
        (*news)++;
}

static void *sync_worker(void *arg)
{
    job *j = arg;
    char url[160], host[64];

    for (uint64_t i = j->from; i < j->to; i++) {
        db_url u = { .url = url, .host = host, .state = row_state, .bare = row_bare };
        u.url_len = (size_t)make_key(url, sizeof url, i, host, sizeof host);
        if (db_insert_url_wait(j->d, &u, NULL) != j->expect)
            j->bad++;
    }
    return NULL;
}

static long insert_async(db *d, uint64_t n)
{
    char url[160], host[64];
    long news = 0;
    int rc;

    for (uint64_t i = 0; i < n; i++) {
        db_url u = { .url = url, .host = host, .state = row_state, .absent = absent,
                     .bare = row_bare };
        u.url_len = (size_t)make_key(url, sizeof url, i, host, sizeof host);
        rc = db_insert_url(d, &u, count_cb, &news);
        if (rc < 0)
            fail("insert", rc);
    }
    rc = db_flush(d);
    if (rc < 0)
        fail("flush", rc);
    return news;
}

static long run_sync(db *d, uint64_t n, int threads, int expect)
{
    pthread_t th[64];
    job jobs[64];
    long bad = 0;

    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){ d, n * (uint64_t)t / (uint64_t)threads,
                         n * (uint64_t)(t + 1) / (uint64_t)threads, expect, 0 };
        pthread_create(&th[t], NULL, sync_worker, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        bad += jobs[t].bad;
    }
    return bad;
}

/* db_insert_urls_wait in chunks of 1000 over keys [0, n); counts answers
 * that differ from expect. */
static long run_batches(db *d, uint64_t n, int expect)
{
    enum { CHUNK = 1000 };
    static char urls[CHUNK][160], hosts[CHUNK][64];
    static db_url u[CHUNK];
    static int status[CHUNK];
    long bad = 0;

    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        int rc;
        for (size_t j = 0; j < m; j++) {
            u[j] = (db_url){ .url = urls[j], .host = hosts[j], .state = row_state,
                             .bare = row_bare };
            u[j].url_len = (size_t)make_key(urls[j], sizeof urls[j], i + j, hosts[j],
                                            sizeof hosts[j]);
        }
        rc = db_insert_urls_wait(d, u, m, status, NULL);
        if (rc < 0)
            fail("insert batch", rc);
        for (size_t j = 0; j < m; j++)
            bad += status[j] != expect;
    }
    return bad;
}

static int count_row(void *ud, int64_t id, const char *url, size_t len)
{
    uint64_t *sum = ud;

    *sum += (uint64_t)id + len + (unsigned char)url[len - 1];
    return 0;
}

int main(int argc, char **argv)
{
    char err[512], path[600];
    const char *dir, *mode;
    db_opts o = { 0 };
    db_stats st;
    struct stat sb;
    uint64_t n;
    int threads = 1;
    double t0, t, c0, w0;
    db *d;

    if (argc < 5) {
        fprintf(stderr, "usage: bench_db DIR async|sync|batch|dup|dupbatch|read N BATCH"
                " [THREADS]\n");
        return 2;
    }
    dir = argv[1];
    mode = argv[2];
    n = (uint64_t)parse_long(argv[3], "N");
    o.batch_size = (int)parse_long(argv[4], "BATCH");
    if (argc > 5)
        threads = (int)parse_long(argv[5], "THREADS");
    clustered = getenv("BENCH_DB_CLUSTERED") != NULL && getenv("BENCH_DB_CLUSTERED")[0] != '\0';
    row_bare = getenv("BENCH_DB_BARE") != NULL && getenv("BENCH_DB_BARE")[0] != '\0';
    row_state = row_bare || (getenv("BENCH_DB_SEEN_ONLY") != NULL
                             && getenv("BENCH_DB_SEEN_ONLY")[0] != '\0')
                    ? DB_STATE_SEEN_ONLY : DB_STATE_QUEUED;
    absent = getenv("BENCH_DB_ABSENT") != NULL && getenv("BENCH_DB_ABSENT")[0] != '\0';
    if (threads < 1 || threads > 64)
        threads = 1;
    d = db_open(dir, &o, err, sizeof err);
    if (d == NULL) {
        fprintf(stderr, "bench_db: %s\n", err);
        return 1;
    }

    t0 = now_s();
    c0 = cpu_s();
    w0 = written_bytes();
    if (strcmp(mode, "async") == 0) {
        long news = insert_async(d, n);
        if ((uint64_t)news != n)
            fprintf(stderr, "bench_db: %ld new of %llu\n", news, (unsigned long long)n);
    } else if (strcmp(mode, "sync") == 0) {
        if (run_sync(d, n, threads, 1) != 0)
            fprintf(stderr, "bench_db: unexpected answers\n");
    } else if (strcmp(mode, "batch") == 0) {
        if (run_batches(d, n, 1) != 0)
            fprintf(stderr, "bench_db: unexpected answers\n");
    } else if (strcmp(mode, "dupbatch") == 0) {
        insert_async(d, n);
        t0 = now_s();
        c0 = cpu_s();
        w0 = written_bytes();
        if (run_batches(d, n, 0) != 0)
            fprintf(stderr, "bench_db: unexpected answers\n");
    } else if (strcmp(mode, "dup") == 0) {
        insert_async(d, n);
        t0 = now_s();
        c0 = cpu_s();
        w0 = written_bytes();
        if (run_sync(d, n, threads, 0) != 0)
            fprintf(stderr, "bench_db: unexpected answers\n");
    } else if (strcmp(mode, "read") == 0 || strcmp(mode, "lookup") == 0) {
        char url[160], host[64];
        uint64_t sum = 0;
        long found = 0;
        db_reader *rd;
        int64_t got;
        if (strcmp(mode, "read") == 0)
            insert_async(d, n);
        rd = db_reader_open(d, err, sizeof err);
        if (rd == NULL) {
            fprintf(stderr, "bench_db: %s\n", err);
            return 1;
        }
        t0 = now_s();
        for (uint64_t i = 0; i < n; i++) {
            size_t len = (size_t)make_key(url, sizeof url, i, host, sizeof host);
            found += db_reader_exists(rd, url, len, NULL) == 1;
        }
        t = now_s() - t0;
        printf("exists   n=%llu found=%ld  %.2f s  %.0f lookups/s\n",
               (unsigned long long)n, found, t, (double)n / t);
        t0 = now_s();
        got = db_reader_scan_after(rd, 0, count_row, &sum);
        t = now_s() - t0;
        printf("scan     rows=%lld  %.2f s  %.0f rows/s\n", (long long)got, t, (double)got / t);
        db_reader_free(rd);
        db_close(d);
        t0 = now_s();
        d = db_open(dir, &o, err, sizeof err);
        if (d == NULL) {
            fprintf(stderr, "bench_db: %s\n", err);
            return 1;
        }
        printf("reopen   %.3f s (%llu rows)\n", now_s() - t0, (unsigned long long)n);
        db_close(d);
        return 0;
    } else {
        fprintf(stderr, "bench_db: unknown mode %s\n", mode);
        return 2;
    }
    db_get_stats(d, &st);
    db_close(d); /* included: it commits and checkpoints */
    t = now_s() - t0;
    snprintf(path, sizeof path, "%s/crawld.db", dir);
    printf("%-8s %-9s %-9s n=%-8llu batch=%-5d thr=%d %7.2f s %8.0f ops/s %6.1f us-cpu/op"
           " %6.1f KB-written/op commits=%-7lld db=%.0f MB\n",
           mode, clustered ? "clustered" : "random",
           row_bare ? "bare" : db_state_name(row_state), (unsigned long long)n,
           o.batch_size, threads, t, (double)n / t, (cpu_s() - c0) * 1e6 / (double)n,
           (written_bytes() - w0) / 1024.0 / (double)n, (long long)st.commits,
           stat(path, &sb) == 0 ? (double)sb.st_size / 1048576.0 : 0.0);
    return 0;
}
