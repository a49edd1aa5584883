/* crawler/cmd_dedup: `crawld dedup` reads URLs on stdin, one per line, and
 * writes each first-seen canonical URL on stdout in input order; the
 * counters of every dedup layer go to stderr at the end.
 *
 * With --state DIR the seen-set persists: SQLite in DIR, a Bloom snapshot
 * beside it (written every dedup.snapshot_interval_s and at the end, with
 * the highest row id it covers), caught up from the rows after that mark at
 * start. Without --state, a temporary database is removed at exit, and with
 * --verify never and no --state the Bloom filter alone decides. */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/alloc.h"
#include "common/buf.h"
#include "common/clock.h"
#include "crawler/report/summary.h"
#include "crawler/web/url.h"
#include "crawler/verifier.h"
#include "crawler/wire.h"
#include "dedup/seen.h"
#include "storage/db.h"

static const char usage[] =
    "usage: crawld dedup [-c FILE] [--set K=V]... [--verify never|always]\n"
    "                    [--state DIR] [--stats-json FILE] < urls.txt\n"
    "\n"
    "Reads URLs on stdin, one per line, and writes each first-seen canonical URL\n"
    "on stdout, in input order. At the end, prints on stderr how many URLs each\n"
    "layer decided: Bloom NO (new for certain), Bloom MAYBE trusted, the recent\n"
    "cache, SQLite, and the false positives SQLite caught. Lines that are not\n"
    "URLs are reported on stderr with their line number and counted.\n"
    "The database is written in transactions of up to 100,000 URLs while\n"
    "storage.batch_size is at its default (a stream of rows gains from the\n"
    "largest); a batch_size set in the configuration is kept.\n";

#define MAX_PRINTED_REJECTS 100
#define DEDUP_BATCH 100000 /* the writer's transactions, unless configured: batch_size's most */
#define SNAPSHOT_NAME "bloom.snap"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Writes the Bloom snapshot covering every committed row. */
static int snapshot(seen *s, db *d, const char *path)
{
    char err[512];
    if (verifier_snapshot(s, d, path, err, sizeof err) < 0) {
        fprintf(stderr, "crawld dedup: snapshot: %s\n", err);
        return -1;
    }
    return 0;
}

enum { V_UNKNOWN, V_NEW, V_DUP };

/* Lines held at most in a set: ends[] and verdict[] have this many slots,
 * allocated once, since the writer writes verdicts while the stream goes
 * on. */
#define HELD_LINES (1u << 18)

/* Held line bytes at most in a set. Each forced commit writes every index
 * page its inserts dirtied, so the held bound must not cut the writer's
 * transactions short: at 256 KiB (~4,000 URLs) the writer committed ~3x
 * as often as its batch_size allows and spent ~1.7x the CPU per URL. */
#define HELD_MAX (16u << 20)

/* One set of held lines: one line each in buf, ends[i] marking where line
 * i ends. verdict[i] is what the store made of line i: the Bloom filter's
 * NO is new for certain, a MAYBE queued to the writer's look-up
 * (SEEN_VERIFYING) may turn out a duplicate. stored is the index + 1 of
 * the line whose row committed last (the writer commits in queue order,
 * so every earlier one is stored too). verdict and stored are written by
 * on_stored on the writer thread (or by the stream for a line that needs
 * no commit) and read once stored says they are. */
typedef struct held {
    cr_buf buf;
    size_t *ends, n;
    unsigned char *verdict;
    atomic_size_t stored;
} held;

typedef struct run {
    int verify;
    const char *state_dir;
    const char *stats_json;
    char tmp_dir[64];
    char snap_path[4096];
    crawl_config cfg;
    url_canon *uc;
    db *d;
    verifier *ver;
    seen *s;
    /* URLs that are or may be new are printed only once stored, from two
     * sets of held lines (h[cur] fills while the other's rows commit). */
    held h[2];
    int cur;
} run;

/* The two sets, for on_stored (whose ud is set * HELD_LINES + line + 1). */
static held *held_sets;

/* Writer thread, after the COMMIT of an asynchronous insert or look-up:
 * res->status 1 new, 0 already stored. */
static void on_stored(void *ud, const db_result *res)
{
    size_t v = (size_t)(uintptr_t)ud - 1;
    held *h = &held_sets[v / HELD_LINES];
    if (res->status >= 0) {
        h->verdict[v % HELD_LINES] = res->status > 0 ? V_NEW : V_DUP;
        atomic_store(&h->stored, v % HELD_LINES + 1);
    }
}

/* Is storage.batch_size at its shipped default (one for a crawl's mixed
 * writes)? Then the stream of dedup rows takes DEDUP_BATCH. */
static bool batch_is_default(const crawl_config *c)
{
    crawl_config d;
    memset(&d, 0, sizeof d);
    bool same = config_init(&d) == 0 && d.storage.batch_size == c->storage.batch_size;
    config_release(&d);
    return same;
}

/* Opens the database and the filter (its snapshot, or rebuilt); catches up. */
static int open_state(run *r)
{
    char err[512];
    const char *dir = r->state_dir;
    if (dir == NULL && r->verify != SEEN_VERIFY_NEVER) {
        snprintf(r->tmp_dir, sizeof r->tmp_dir, "%s/crawld-dedup-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (mkdtemp(r->tmp_dir) == NULL) {
            fprintf(stderr, "crawld dedup: cannot create a temporary folder: %s\n", strerror(errno));
            r->tmp_dir[0] = '\0';
            return -1;
        }
        dir = r->tmp_dir;
    }
    if (r->state_dir) {
        snprintf(r->snap_path, sizeof r->snap_path, "%s/%s", r->state_dir, SNAPSHOT_NAME);
        if (verifier_check_state(r->state_dir, SNAPSHOT_NAME, NULL, err, sizeof err) < 0) {
            fprintf(stderr, "crawld dedup: %s\n", err);
            return -2;
        }
    }
    if (dir) {
        db_opts o;
        wire_db_opts(&r->cfg, &o);
        /* removed at exit: never synced (2M lines, 60% repeats: median wall
         * 11.82 s -> 7.74 s, awk 4.09 s; noisy, loaded 2-core box) */
        o.scratch = r->state_dir == NULL;
        /* A stream of seen_only rows: random inserts into the fingerprint
         * index, each commit writing every leaf it touched, so the larger
         * the transaction the fewer times a leaf is written (10M lines,
         * 60% repeats: batch 10,000 -> 100,000 took the run from 98.8 s
         * wall, 89.5 s CPU to 76.3 s, 68.3 s; peak RSS 181 -> 257 MiB).
         * The queue holds a batch and a quarter, enough to refill it. */
        if (batch_is_default(&r->cfg))
            o.batch_size = DEDUP_BATCH;
        o.queue_cap = o.batch_size + o.batch_size / 4;
        r->d = db_open(dir, &o, err, sizeof err);
        if (r->d == NULL) {
            fprintf(stderr, "crawld dedup: %s\n", err);
            return -1;
        }
        r->ver = verifier_new(r->d);
        if (r->ver == NULL) {
            fprintf(stderr, "crawld dedup: out of memory\n");
            return -1;
        }
    }
    bloom_params bp;
    wire_bloom_params(&r->cfg, &bp);
    /* the recent cache only ever confirms a MAYBE; never verifying, it is
     * dead weight. A MAYBE is settled by the writer, in its batch, not by
     * a read connection while the stream waits: 10M lines, 60% repeats,
     * 2.3M of them past the recent cache; each such wait re-read its
     * pages from the file (a read connection's cache is void after every
     * commit), half the reading thread's CPU */
    seen_opts so = { r->verify,
                     r->verify == SEEN_VERIFY_NEVER ? 0 : (size_t)r->cfg.dedup.recent_cache };
    r->s = verifier_open_seen(r->ver, r->d, r->state_dir ? r->snap_path : NULL, &bp, NULL, &so, stderr,
                              "crawld dedup", err, sizeof err);
    if (r->s == NULL) {
        fprintf(stderr, "crawld dedup: %s\n", err);
        return -1;
    }
    if (r->verify != SEEN_VERIFY_NEVER)
        seen_verify_async(r->s); /* -ENOTSUP: MAYBEs are waited for, as correct */
    return 0;
}

static int write_json(const char *path, const seen_counters *c, const bloom_stats *b,
                      uint64_t lines, uint64_t rejected)
{
    json_t *j = summary_dedup_json(c, b);
    if (j == NULL)
        return -1;
    json_object_set_new(j, "lines", json_integer((json_int_t)lines));
    json_object_set_new(j, "rejected_lines", json_integer((json_int_t)rejected));
    int rc = json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(j);
    if (rc < 0)
        fprintf(stderr, "crawld dedup: cannot write %s\n", path);
    return rc;
}

/* Holds a line in the filling set (its verdict already set or to come).
 * 0 or -ENOMEM. */
static int hold(run *r, const char *line, size_t len)
{
    held *h = &r->h[r->cur];
    if (cr_buf_append(&h->buf, line, len) < 0)
        return -ENOMEM;
    h->ends[h->n++] = h->buf.len;
    return 0;
}

/* Prints the new lines among the first k of h, then empties h. */
static void print_held(held *h, size_t k)
{
    size_t from = 0, start = 0;
    for (size_t i = 0; i < k; i++) { /* runs of new lines, one fwrite each */
        size_t begin = i ? h->ends[i - 1] : 0;
        if (h->verdict[i] != V_NEW) {
            if (begin > start)
                fwrite(h->buf.data + start, 1, begin - start, stdout);
            start = h->ends[i];
        }
        from = h->ends[i];
    }
    if (from > start)
        fwrite(h->buf.data + start, 1, from - start, stdout);
    cr_buf_clear(&h->buf);
    h->n = 0;
    atomic_store(&h->stored, 0);
}

/* The lines of h that committed (all of them after a successful flush). */
static size_t settled(held *h, int flushed_ok)
{
    size_t k = atomic_load(&h->stored);
    return flushed_ok || k > h->n ? h->n : k;
}

/* Prints the older set's new lines once its rows are committed (waiting
 * for them only if they are not yet) and makes it the filling set; with
 * all, waits for every row and prints both. After a failed flush (the
 * writer gave up), prints only what had committed before the failure,
 * which a later run will not print again. 0, or -1 when a flush failed. */
static int release_held(run *r, bool all)
{
    held *old = &r->h[!r->cur], *cur = &r->h[r->cur];
    int ok = 1;
    if (r->d && (all || atomic_load(&old->stored) < old->n))
        ok = db_flush(r->d) == 0;
    size_t k = settled(old, ok);
    int old_done = k == old->n;
    print_held(old, k);
    if (all && old_done)
        print_held(cur, settled(cur, ok));
    else if (!all)
        r->cur = !r->cur;
    return ok ? 0 : -1;
}

static int dedup_stream(run *r)
{
    static char obuf[1 << 20];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    cr_buf out;
    cr_buf_init(&out, 0);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    uint64_t lineno = 0, rejected = 0;
    int rc = 0;
    double next_snap = (double)cr_mono_ms() / 1e3 + (double)r->cfg.dedup.snapshot_interval_s;
    for (int i = 0; i < 2; i++) {
        r->h[i].ends = cr_malloc(HELD_LINES * sizeof *r->h[i].ends);
        r->h[i].verdict = cr_malloc(HELD_LINES);
        if (r->h[i].ends == NULL || r->h[i].verdict == NULL)
            rc = 1;
    }
    held_sets = r->h;
    if (rc != 0)
        fprintf(stderr, "crawld dedup: out of memory\n");
    while (rc == 0 && !stop_signal && (n = getline(&line, &cap, stdin)) >= 0) {
        lineno++;
        size_t len = (size_t)n;
        if (len && line[len - 1] == '\n')
            len--;
        if (len && line[len - 1] == '\r')
            len--;
        url_reject why;
        int crc = url_canon_resolve(r->uc, NULL, 0, line, len, &out, &why);
        if (crc < 0) {
            rejected++;
            if (rejected <= MAX_PRINTED_REJECTS)
                fprintf(stderr, "crawld dedup: line %llu: %s: %.120s\n",
                        (unsigned long long)lineno,
                        crc == -EINVAL ? url_reject_str(why) : "out of memory", line);
            if (rejected == MAX_PRINTED_REJECTS)
                fputs("crawld dedup: further rejected lines are counted, not printed\n", stderr);
            continue;
        }
        held *h = &r->h[r->cur];
        if ((h->n == HELD_LINES || h->buf.len >= HELD_MAX) && release_held(r, false) < 0) {
            char msg[256];
            db_last_error(r->d, msg, sizeof msg);
            fprintf(stderr, "crawld dedup: line %llu: %s\n", (unsigned long long)lineno, msg);
            rc = 1;
            break;
        }
        h = &r->h[r->cur];
        /* no insert of this slot is in flight: its last line was a duplicate */
        h->verdict[h->n] = V_UNKNOWN;
        size_t slot = (size_t)r->cur * HELD_LINES + h->n + 1;
        /* bare: the URL is the whole row (storage/db's seen table) */
        verifier_row row = { .u = { .host = "", .kind = DB_KIND_SEED,
                                    .state = DB_STATE_SEEN_ONLY, .bare = true },
                             .on_new = on_stored, .ud = (void *)(uintptr_t)slot };
        int res = seen_test(r->s, out.data, out.len, true, &row);
        if (res < 0) {
            char msg[256];
            db_last_error(r->d, msg, sizeof msg);
            fprintf(stderr, "crawld dedup: line %llu: the database failed: %s\n",
                    (unsigned long long)lineno, msg);
            rc = 1;
            break;
        }
        if (seen_is_new((seen_result)res) || res == SEEN_VERIFYING) {
            /* inserted and committed, after all before it; or nothing is
             * stored, the filter alone deciding */
            if (res == SEEN_NEW_VERIFIED || r->ver == NULL) {
                h->verdict[h->n] = V_NEW;
                atomic_store(&h->stored, h->n + 1);
            }
            out.data[out.len] = '\n';
            if (hold(r, out.data, out.len + 1) < 0) {
                fprintf(stderr, "crawld dedup: line %llu: out of memory\n",
                        (unsigned long long)lineno);
                rc = 1;
                break;
            }
        }
        if (r->state_dir && r->cfg.dedup.snapshot_interval_s > 0 && (lineno & 0xFFFF) == 0 &&
            (double)cr_mono_ms() / 1e3 >= next_snap) {
            snapshot(r->s, r->d, r->snap_path);
            next_snap = (double)cr_mono_ms() / 1e3 + (double)r->cfg.dedup.snapshot_interval_s;
        }
    }
    free(line);
    cr_buf_release(&out);
    if (r->h[0].verdict && r->h[1].verdict && release_held(r, true) < 0)
        rc = 1; /* reported below, with the database's message */
    for (int i = 0; i < 2; i++) {
        cr_buf_release(&r->h[i].buf);
        cr_free(r->h[i].ends);
        cr_free(r->h[i].verdict);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "crawld dedup: cannot write stdout: %s\n", strerror(errno));
        rc = 1;
    }
    if (r->d && db_flush(r->d) < 0) {
        char msg[256];
        db_last_error(r->d, msg, sizeof msg);
        fprintf(stderr, "crawld dedup: the database failed: %s\n", msg);
        rc = 1;
    }
    if (r->state_dir && rc == 0 && snapshot(r->s, r->d, r->snap_path) < 0)
        rc = 1;

    seen_counters c;
    bloom_stats b;
    seen_counters_get(r->s, &c);
    bloom_stats_get(seen_bloom(r->s), &b);
    fprintf(stderr, "crawld dedup: %llu lines, %llu URLs, %llu lines rejected (not URLs)%s\n",
            (unsigned long long)lineno, (unsigned long long)c.keys, (unsigned long long)rejected,
            stop_signal ? ", stopped by a signal" : "");
    json_t *j = summary_dedup_json(&c, &b);
    if (j)
        summary_dedup_print(stderr, j);
    json_decref(j);
    if (r->d) { /* the seen-set's fingerprint runs (storage/fpruns) */
        db_stats st;
        db_get_stats(r->d, &st);
        fprintf(stderr, "  SQLite seen-set: %d fingerprint runs; %lld frozen, %lld merges"
                " (%lld entries rewritten), upkeep %.1f s (longest step %.1f s),"
                " %lld failed steps (retried)\n",
                st.runs.runs, (long long)st.runs.freezes, (long long)st.runs.merges,
                (long long)st.runs.merged_rows, (double)st.runs.upkeep_ms / 1000.0,
                (double)st.runs.longest_ms / 1000.0, (long long)st.runs.failures);
    }
    if (r->stats_json && write_json(r->stats_json, &c, &b, lineno, rejected) < 0)
        rc = 1;
    if (stop_signal && rc == 0)
        rc = 128 + stop_signal;
    return rc;
}

int cmd_dedup(int argc, char **argv)
{
    cli_conf cc = { 0 };
    run r = { .verify = -1 };
    cr_buf_init(&r.h[0].buf, 0);
    cr_buf_init(&r.h[1].buf, 0);
    const char *verify = NULL;
    const cli_opt opts[] = {
        { "--verify", NULL, "MODE", &verify, NULL,
          "never (trust a Bloom MAYBE) or always (settle it exactly);\n"
          "                           default: dedup.verify, in-scope as always" },
        { "--state", NULL, "DIR", &r.state_dir, NULL,
          "keep the seen-set in DIR across runs (default: a temporary one)" },
        { "--stats-json", NULL, "FILE", &r.stats_json, NULL,
          "write the counters as JSON to FILE" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "dedup", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
    if (verify != NULL && strcmp(verify, "never") == 0) {
        r.verify = SEEN_VERIFY_NEVER;
    } else if (verify != NULL && strcmp(verify, "always") == 0) {
        r.verify = SEEN_VERIFY_ALWAYS;
    } else if (verify != NULL) {
        fprintf(stderr, "crawld dedup: --verify takes never or always, not '%s'\n", verify);
        return 2;
    }
    if (cli_conf_load(&cc, "dedup", &r.cfg, false) != 0)
        return 1;
    if (r.verify < 0) /* every URL of the stream is one the user asks about */
        r.verify = r.cfg.dedup.verify == VERIFY_NEVER ? SEEN_VERIFY_NEVER : SEEN_VERIFY_ALWAYS;
    url_policy pol;
    wire_url_policy(&r.cfg, &pol);
    r.uc = url_canon_new(&pol);
    struct sigaction sa = { 0 };
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int rc = 1, st = r.uc ? open_state(&r) : -1;
    if (st == 0)
        rc = dedup_stream(&r);
    else if (st == -2)
        rc = 2; /* a state folder refused: the user must decide */
    verifier_free(r.ver);
    /* before seen_free: what the writer fails at close is acknowledged to it */
    if (r.d && db_close(r.d) < 0 && rc == 0)
        rc = 1;
    seen_free(r.s);
    if (r.tmp_dir[0])
        remove_tree(r.tmp_dir);
    url_canon_free(r.uc);
    config_release(&r.cfg);
    return rc;
}
