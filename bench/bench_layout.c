/* bench/bench_layout: seen-set table layouts in SQLite, side by side.
 *
 * usage: bench_layout DIR LAYOUT N [BATCH]
 *   Feeds N key lines (60% of them repeats of an earlier one, the shape of
 *   bench_dedup.sh) through "insert unless present", BATCH lookups+inserts
 *   per transaction (default 10000), WAL, synchronous=NORMAL, 64 MiB cache,
 *   the settings crawld's writer uses. LAYOUT is one of
 *     text      url TEXT NOT NULL UNIQUE, INSERT OR IGNORE (crawld schema 2)
 *     fp        url TEXT beside fp INTEGER with an index on fp; a lookup is
 *               fp = ? AND url = ? (exact), then a plain INSERT (schema 3)
 *     fpsort    fp, each batch's keys sorted by fp before they are applied
 *     fpmmap    fp, with mmap_size = 1 GiB
 *     fppk      a separate table seen(fp INTEGER PRIMARY KEY, url TEXT):
 *               the table itself keyed by fingerprint (no row order)
 *     v5        crawld's schema 5 as `crawld dedup` writes it: fp, plus
 *               last_linked with its index, batches sorted by fp
 *     seen      seen(fp, url, last_linked, PRIMARY KEY(fp, url)) WITHOUT
 *               ROWID, batches sorted by fp, INSERT OR IGNORE: one B-tree
 *               insert per new key, the text compared on an fp match
 *     runs      crawld's schema 6: v5's table without the fp index, which
 *               is storage/fpruns' runs (a small active run takes the
 *               inserts; upkeep freezes and merges after each commit, as
 *               crawld's writer does), batches sorted by fp
 * Env: BENCH_PAGE_SIZE (default 4096), BENCH_CACHE_MB (default 64),
 * BENCH_REPEATS (the share of repeated lines, default 0.6), BENCH_RUN_ROWS
 * (runs: the active run's size, default FPRUNS_ACTIVE_MAX).
 * Prints one line: layout, lines, distinct, seconds, CPU s, CPU us/line,
 * bytes written per distinct key, DB bytes per distinct key, and the URL
 * text bytes per key. DIR must not exist; it is left in place. */
#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <xxhash.h>

#include "storage/fpruns.h"

typedef struct key {
    int64_t fp;
    int len;
    char s[120];
} key;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6
           + (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long long written(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "write_bytes: ", 13) == 0)
            v = strtoll(line + 13, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static uint64_t rng = 7;
static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void die(sqlite3 *c, const char *what)
{
    fprintf(stderr, "bench_layout: %s: %s\n", what, c ? sqlite3_errmsg(c) : "failed");
    exit(1);
}

static void run(sqlite3 *c, const char *sql)
{
    if (sqlite3_exec(c, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(c, sql);
}

static int by_fp(const void *a, const void *b)
{
    const key *x = a, *y = b;
    return x->fp < y->fp ? -1 : x->fp > y->fp;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_layout DIR text|fp|fpsort|fpmmap|fppk|v5|seen|runs N [BATCH]\n");
        return 2;
    }
    const char *dir = argv[1], *layout = argv[2];
    long long n = strtoll(argv[3], NULL, 10);
    int batch = argc > 4 ? atoi(argv[4]) : 10000;
    int text = strcmp(layout, "text") == 0, pk = strcmp(layout, "fppk") == 0;
    int v5 = strcmp(layout, "v5") == 0, wr = strcmp(layout, "seen") == 0;
    int runs = strcmp(layout, "runs") == 0;
    int sorted = strcmp(layout, "fpsort") == 0 || v5 || wr || runs;
    const char *rep_env = getenv("BENCH_REPEATS"), *rr = getenv("BENCH_RUN_ROWS");
    double repeats = rep_env ? atof(rep_env) : 0.6;
    int64_t run_rows = rr ? atoll(rr) : FPRUNS_ACTIVE_MAX, active = 0;
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "bench_layout: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/seen.db", dir);
    sqlite3 *c;
    if (sqlite3_open(path, &c) != SQLITE_OK)
        die(c, "open");
    char pragmas[256];
    const char *ps = getenv("BENCH_PAGE_SIZE"), *cm = getenv("BENCH_CACHE_MB");
    snprintf(pragmas, sizeof pragmas, "PRAGMA page_size = %d; PRAGMA journal_mode = WAL;"
             " PRAGMA synchronous = NORMAL; PRAGMA cache_size = -%d;"
             " PRAGMA wal_autocheckpoint = 16384;",
             ps ? atoi(ps) : 4096, (cm ? atoi(cm) : 64) * 1024);
    run(c, pragmas);
    if (strcmp(layout, "fpmmap") == 0)
        run(c, "PRAGMA mmap_size = 1073741824");
    const char *find, *ins;
    if (text) {
        run(c, "CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE,"
               " state INTEGER NOT NULL DEFAULT 0)");
        find = "SELECT id FROM urls WHERE url = ?2";
        ins = "INSERT OR IGNORE INTO urls(url, state) VALUES(?2, 4)";
    } else if (wr) {
        run(c, "CREATE TABLE seen(fp INTEGER NOT NULL, url TEXT NOT NULL,"
               " last_linked INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(fp, url)) WITHOUT ROWID");
        find = "SELECT 1 FROM seen WHERE fp = ?1 AND url = ?2";
        ins = "INSERT OR IGNORE INTO seen(fp, url, last_linked) VALUES(?1, ?2, 1)";
        text = 1; /* one statement: the insert is the lookup */
    } else if (v5 || runs) {
        run(c, "CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT NOT NULL,"
               " state INTEGER NOT NULL DEFAULT 0, fp INTEGER NOT NULL,"
               " last_linked INTEGER NOT NULL DEFAULT 0);"
               "CREATE INDEX urls_fp ON urls(fp);"
               "CREATE INDEX urls_last_linked ON urls(last_linked)");
        find = "SELECT id FROM urls WHERE fp = ?1 AND url = ?2";
        ins = "INSERT INTO urls(url, state, fp, last_linked) VALUES(?2, 4, ?1, 1)";
        if (runs) {
            run(c, "BEGIN");
            if (fpruns_install(c) != SQLITE_OK)
                die(c, "fpruns_install");
            run(c, "COMMIT");
            find = "SELECT u.id FROM seen_fp f JOIN urls u ON u.id = f.id"
                   " WHERE f.fp = ?1 AND u.url = ?2 LIMIT 1";
        }
    } else if (pk) {
        run(c, "CREATE TABLE seen(fp INTEGER PRIMARY KEY, url TEXT NOT NULL)");
        find = "SELECT 1 FROM seen WHERE fp = ?1 AND url = ?2";
        ins = "INSERT OR IGNORE INTO seen(fp, url) VALUES(?1, ?2)";
    } else {
        run(c, "CREATE TABLE urls(id INTEGER PRIMARY KEY, url TEXT NOT NULL,"
               " state INTEGER NOT NULL DEFAULT 0, fp INTEGER NOT NULL);"
               "CREATE INDEX urls_fp ON urls(fp)");
        find = "SELECT id FROM urls WHERE fp = ?1 AND url = ?2";
        ins = "INSERT INTO urls(url, state, fp) VALUES(?2, 4, ?1)";
    }
    sqlite3_stmt *sf, *si, *sa = NULL;
    if (sqlite3_prepare_v2(c, find, -1, &sf, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c, ins, -1, &si, NULL) != SQLITE_OK ||
        (runs && sqlite3_prepare_v2(c, FPRUNS_ADD_SQL, -1, &sa, NULL) != SQLITE_OK))
        die(c, "prepare");
    key *b = malloc((size_t)batch * sizeof *b);
    long long d = 0, text_bytes = 0;
    long long w0 = written();
    double t0 = now_s(), c0 = cpu_s();
    for (long long i = 0; i < n;) {
        int m = 0;
        for (; m < batch && i < n; m++, i++) {
            long long k = d > 0 && rnd() < repeats ? (long long)(rnd() * (double)d) : d++;
            key *e = &b[m];
            e->len = snprintf(e->s, sizeof e->s,
                              "http://host%lld.example/section/%lld/page-%lld.html?a=%lld&b=x",
                              k % 97, k % 13, k, k % 7);
            e->fp = (int64_t)XXH3_64bits(e->s, (size_t)e->len);
        }
        if (sorted)
            qsort(b, (size_t)m, sizeof *b, by_fp);
        run(c, "BEGIN IMMEDIATE");
        for (int j = 0; j < m; j++) {
            int found = 0;
            if (!text) {
                sqlite3_bind_int64(sf, 1, b[j].fp);
                sqlite3_bind_text(sf, 2, b[j].s, b[j].len, SQLITE_STATIC);
                int rc = sqlite3_step(sf);
                if (rc != SQLITE_ROW && rc != SQLITE_DONE)
                    die(c, "find");
                found = rc == SQLITE_ROW;
                sqlite3_reset(sf);
            }
            if (!found) {
                sqlite3_bind_int64(si, 1, b[j].fp);
                sqlite3_bind_text(si, 2, b[j].s, b[j].len, SQLITE_STATIC);
                if (sqlite3_step(si) != SQLITE_DONE)
                    die(c, "insert");
                sqlite3_reset(si);
                if (sqlite3_changes(c) == 1) {
                    text_bytes += b[j].len;
                    active++;
                }
                if (sa) {
                    sqlite3_bind_int64(sa, 1, b[j].fp);
                    sqlite3_bind_int64(sa, 2, sqlite3_last_insert_rowid(c));
                    if (sqlite3_step(sa) != SQLITE_DONE)
                        die(c, "add to the active run");
                    sqlite3_reset(sa);
                }
            }
        }
        run(c, "COMMIT");
        fpruns_step st;
        if (runs && fpruns_maintain(c, &active, run_rows, FPRUNS_FANIN, &st) != SQLITE_OK)
            die(c, "fpruns_maintain");
    }
    double t = now_s() - t0, cpu = cpu_s() - c0;
    run(c, "PRAGMA wal_checkpoint(TRUNCATE)");
    long long w = written() - w0;
    sqlite3_finalize(sf);
    sqlite3_finalize(si);
    sqlite3_finalize(sa);
    sqlite3_close(c);
    struct stat sb;
    long long size = stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
    printf("%s %lld %lld %.2f %.2f %.2f %.0f %.1f %.1f\n", layout, n, d, t, cpu,
           cpu * 1e6 / (double)n, w >= 0 ? (double)w / (double)d : -1.0,
           (double)size / (double)d, (double)text_bytes / (double)d);
    free(b);
    return 0;
}
