/* bench/bench_cluster: the link-exchange rate one Redis server sustains.
 *
 * usage: bench_cluster REDIS_ADDR LINKS ROUNDS
 * Each round, alternating, with a fresh crawl id each time:
 *  - crawld: LINKS links into storage/outbox (pages of 30, each a durable
 *    transaction), forwarded by cluster/xchg (pipelined XADD, then outbox
 *    delete), read by the owner (XREADGROUP COUNT 500), applied into a real
 *    seen-set (storage/db, one wait per batch), XACKed;
 *  - raw: the same entries with bare pipelined XADD, XREADGROUP and XACK
 *    (cluster/redis only): the floor, what Redis alone costs.
 * Prints medians: links/s (wall clock, as Redis is another process) and
 * this process's CPU per link, and the ratio crawld / raw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cluster/redis.h"
#include "cluster/slotmap.h"
#include "cluster/xchg.h"
#include "common/clock.h"
#include "storage/db.h"
#include "storage/outbox.h"

#define SLOTS 8

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static db *store;
static size_t fresh;

static int apply(void *arg, const xchg_link *v, size_t n)
{
    (void)arg;
    db_url *u = calloc(n, sizeof *u);
    int *st = calloc(n, sizeof *st);
    if (u == NULL || st == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        u[i] = (db_url){ .url = v[i].url, .url_len = v[i].url_len, .host = v[i].host,
                         .depth = v[i].depth, .kind = v[i].kind, .state = DB_STATE_QUEUED };
    int rc = db_insert_urls_wait(store, u, n, st, NULL);
    for (size_t i = 0; i < n; i++)
        fresh += st[i] == 1;
    free(u);
    free(st);
    return rc;
}

static void url_of(size_t i, char *u, size_t ul, char *h, size_t hl)
{
    snprintf(h, hl, "h%03zu.test", i % 997);
    snprintf(u, ul, "http://%s/page/%zu?from=bench", h, i);
}

static int round_crawld(const char *addr, size_t links, int round, double *secs, double *cpu)
{
    char dir[64] = "/tmp/crawld-bench-cl-XXXXXX", err[512], sd[128], crawl[32];
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(sd, sizeof sd, "%s/state", dir);
    snprintf(crawl, sizeof crawl, "bench-c%d", round);
    outbox *ob = NULL;
    store = db_open(sd, NULL, err, sizeof err);
    if (store == NULL || outbox_open(dir, &ob, err, sizeof err) < 0) {
        fprintf(stderr, "bench_cluster: %s\n", err);
        return -1;
    }
    xchg_opts o = { .redis = addr, .crawl_id = crawl, .node_id = "owner", .block_ms = 20,
                    .batch = 500 };
    xchg *x = NULL;
    if (xchg_open(&o, &x, err, sizeof err) < 0) {
        fprintf(stderr, "bench_cluster: %s\n", err);
        return -1;
    }
    uint32_t slots[SLOTS];
    for (uint32_t s = 0; s < SLOTS; s++)
        slots[s] = s;
    fresh = 0;
    double c0 = cpu_s();
    int64_t t0 = cr_mono_ns();
    static char us[30][96], hs[30][32];
    for (size_t i = 0; i < links; i += 30) {
        outbox_link v[30];
        size_t n = links - i < 30 ? links - i : 30;
        for (size_t j = 0; j < n; j++) {
            url_of(i + j, us[j], sizeof us[j], hs[j], sizeof hs[j]);
            v[j] = (outbox_link){ .slot = slotmap_slot_of(hs[j], strlen(hs[j]), SLOTS),
                                  .url = us[j], .url_len = strlen(us[j]), .host = hs[j],
                                  .depth = 1, .kind = DB_KIND_NAVIGATION };
        }
        if (outbox_add(ob, v, n) < 0)
            return -1;
        if ((i / 30) % 10 == 9) /* the forwarder runs beside the pages */
            while (xchg_forward(x, ob) > 0)
                ;
    }
    while (xchg_forward(x, ob) > 0)
        ;
    int idle = 0;
    while (idle < 1) {
        int n = xchg_consume(x, slots, SLOTS, apply, NULL);
        if (n < 0)
            return -1;
        idle = n == 0 ? idle + 1 : 0;
    }
    *secs = (double)(cr_mono_ns() - t0) / 1e9 - 0.02; /* the last, empty BLOCK */
    *cpu = cpu_s() - c0;
    xchg_free(x);
    outbox_close(ob);
    db_close(store);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return -1;
    if (fresh != links) {
        fprintf(stderr, "bench_cluster: %zu of %zu links admitted\n", fresh, links);
        return -1;
    }
    return 0;
}

static int round_raw(const char *addr, size_t links, int round, double *secs, double *cpu)
{
    redis_conn *c = NULL;
    char err[256];
    if (redis_open(addr, 5000, &c, err, sizeof err) < 0) {
        fprintf(stderr, "bench_cluster: %s\n", err);
        return -1;
    }
    char keys[SLOTS][64];
    for (int s = 0; s < SLOTS; s++) {
        snprintf(keys[s], sizeof keys[s], "crawld:bench-r%d:links:%d", round, s);
        redis_reply *r = NULL;
        redis_cmd(c, &r, "XGROUP", "CREATE", keys[s], "owners", "0", "MKSTREAM", NULL);
        redis_reply_free(r);
    }
    double c0 = cpu_s();
    int64_t t0 = cr_mono_ns();
    char u[96], h[32];
    for (size_t i = 0; i < links; i += 100) {
        size_t n = links - i < 100 ? links - i : 100;
        for (size_t j = 0; j < n; j++) {
            url_of(i + j, u, sizeof u, h, sizeof h);
            const char *a[] = { "XADD", keys[slotmap_slot_of(h, strlen(h), SLOTS)], "*", "u", u,
                                "h", h, "d", "1", "k", "0" };
            if (redis_append(c, 11, a, NULL) < 0)
                return -1;
        }
        for (size_t j = 0; j < n; j++) {
            redis_reply *r = NULL;
            if (redis_read(c, &r) < 0)
                return -1;
            redis_reply_free(r);
        }
    }
    size_t got = 0;
    for (;;) {
        redis_reply *r = NULL;
        const char *a[] = { "XREADGROUP", "GROUP", "owners", "owner", "COUNT", "500", "STREAMS",
                            keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7],
                            ">", ">", ">", ">", ">", ">", ">", ">" };
        if (redis_cmdv(c, 23, a, NULL, &r) < 0)
            return -1;
        size_t batch = 0;
        for (size_t s = 0; s < redis_reply_count(r); s++) {
            const redis_reply *st = redis_reply_at(r, s), *ents = redis_reply_at(st, 1);
            size_t ne = redis_reply_count(ents);
            if (ne == 0)
                continue;
            const char **ack = calloc(ne + 3, sizeof *ack);
            ack[0] = "XACK";
            ack[1] = redis_reply_str(redis_reply_at(st, 0), NULL);
            ack[2] = "owners";
            for (size_t e = 0; e < ne; e++)
                ack[3 + e] = redis_reply_str(redis_reply_at(redis_reply_at(ents, e), 0), NULL);
            redis_reply *ar = NULL;
            if (redis_cmdv(c, (int)ne + 3, ack, NULL, &ar) < 0)
                return -1;
            redis_reply_free(ar);
            free((void *)ack);
            batch += ne;
        }
        redis_reply_free(r);
        got += batch;
        if (batch == 0)
            break;
    }
    *secs = (double)(cr_mono_ns() - t0) / 1e9;
    *cpu = cpu_s() - c0;
    redis_free(c);
    if (got != links) {
        fprintf(stderr, "bench_cluster: raw read %zu of %zu\n", got, links);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fputs("usage: bench_cluster REDIS_ADDR LINKS ROUNDS\n", stderr);
        return 2;
    }
    const char *addr = argv[1];
    size_t links = strtoul(argv[2], NULL, 10);
    int rounds = (int)strtol(argv[3], NULL, 10);
    if (links == 0 || rounds < 1 || rounds > 100)
        return 2;
    double cs[100], cc[100], rs[100], rcpu[100];
    for (int i = 0; i < rounds; i++) {
        if (round_crawld(addr, links, i, &cs[i], &cc[i]) < 0 ||
            round_raw(addr, links, i, &rs[i], &rcpu[i]) < 0)
            return 1;
    }
    double mcs = median(cs, rounds), mcc = median(cc, rounds), mrs = median(rs, rounds),
           mrc = median(rcpu, rounds);
    double n = (double)links;
    printf("%-44s %12s %14s %8s\n", "link exchange", "links/s", "CPU us/link", "ratio");
    printf("%-44s %12.0f %14.2f %8.2f\n", "crawld: outbox, XADD, XREADGROUP, db, XACK", n / mcs,
           mcc / n * 1e6, (n / mcs) / (n / mrs));
    printf("%-44s %12.0f %14.2f %8.2f\n", "raw Redis: XADD, XREADGROUP, XACK", n / mrs,
           mrc / n * 1e6, 1.0);
    printf("(%zu links, 8 slot streams, medians of %d interleaved rounds; links/s by the wall"
           " clock, CPU of this process only, Redis with appendfsync always)\n",
           links, rounds);
    return 0;
}
