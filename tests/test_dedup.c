/* tests/test_dedup: `crawld dedup` end to end: exact with verify=always
 * (equal to awk '!seen[$0]++'), bounded loss with verify=never, rejected
 * lines reported, persistence, and restart after SIGKILL. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "common/buf.h"
#include "storage/db.h"
#include "tests/support/proc.h"

static uint64_t rng = 12345;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* n canonical URL lines, about dup_pct% of them repeats of earlier ones. */
static char *make_urls(size_t n, unsigned dup_pct, size_t *len)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        size_t id = distinct;
        if (distinct > 0 && rnd() % 100 < dup_pct)
            id = (size_t)(rnd() % distinct);
        else
            distinct++;
        cr_buf_printf(&b, "http://host%zu.example/section/%zu/page-%zu.html?a=%zu&b=x\n", id % 97,
                      id % 13, id, id % 7);
    }
    *len = b.len;
    return cr_buf_take(&b);
}

static int run_awk(const char *in, size_t len, cr_buf *out)
{
    const char *argv[] = { "/usr/bin/awk", "!seen[$0]++", NULL };
    return proc_run(argv, in, len, out, NULL);
}

/* Runs bin's dedup with args on in. */
static int run_dedup_bin(const char *bin, const char *const args[], const char *in, size_t len,
                         cr_buf *out, cr_buf *err)
{
    const char *argv[32];
    size_t n = 0;
    argv[n++] = bin;
    argv[n++] = "dedup";
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return proc_run(argv, in, len, out, err);
}

static int run_dedup(const char *const args[], const char *in, size_t len, cr_buf *out,
                     cr_buf *err)
{
    return run_dedup_bin(proc_crawld_path(), args, in, len, out, err);
}

static void verify_always_equals_awk(void **state)
{
    (void)state;
    size_t len;
    char *in = make_urls(1000000, 60, &len);
    cr_buf want, got, err;
    cr_buf_init(&want, 0);
    cr_buf_init(&got, 0);
    cr_buf_init(&err, 0);
    assert_int_equal(run_awk(in, len, &want), 0);
    int rc = run_dedup((const char *const[]){ "--verify", "always", NULL }, in, len, &got, &err);
    if (rc != 0)
        fail_msg("crawld dedup exited %d: %s", rc, err.data);
    assert_true(want.len > 0);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    assert_non_null(strstr(err.data, "1000000 lines"));
    cr_buf_release(&want);
    cr_buf_release(&got);
    cr_buf_release(&err);
    free(in);
}

/* Is every line of sub in sup, in the same order? Returns lines missed. */
static long missing_from_subsequence(const char *sub, const char *sup)
{
    long missed = 0;
    const char *s = sub;
    const char *p = sup;
    while (*p) {
        const char *pe = strchr(p, '\n');
        const char *se = *s ? strchr(s, '\n') : NULL;
        if (se && se - s == pe - p && memcmp(s, p, (size_t)(pe - p)) == 0)
            s = se + 1;
        else
            missed++;
        p = pe + 1;
    }
    return *s ? -1 : missed;
}

static void verify_never_misses_at_most_the_bound(void **state)
{
    (void)state;
    size_t len;
    char *in = make_urls(1000000, 60, &len);
    cr_buf want, got;
    cr_buf_init(&want, 0);
    cr_buf_init(&got, 0);
    assert_int_equal(run_awk(in, len, &want), 0);
    /* a first stage sized far below the input: the chain must grow and hold */
    int rc = run_dedup((const char *const[]){ "--verify", "never", "--set",
                                              "dedup.expected_urls=20000", NULL },
                       in, len, &got, NULL);
    assert_int_equal(rc, 0);
    long missed = missing_from_subsequence(got.data, want.data);
    assert_true(missed >= 0); /* a subset, in order */
    long fresh = 0;
    for (const char *p = want.data; *p; p++)
        fresh += *p == '\n';
    assert_true((double)missed <= 1.5 * 0.01 * (double)fresh);
    cr_buf_release(&want);
    cr_buf_release(&got);
    free(in);
}

static void rejected_lines_are_reported(void **state)
{
    (void)state;
    const char *in = "http://a.example/\nnot a url\nmailto:x@y\n\nHTTP://A.EXAMPLE:80/#f\n"
                     "http://b.example/?utm_source=x\n";
    cr_buf out, err;
    cr_buf_init(&out, 0);
    cr_buf_init(&err, 0);
    int rc = run_dedup((const char *const[]){ NULL }, in, strlen(in), &out, &err);
    assert_int_equal(rc, 0);
    assert_string_equal(out.data, "http://a.example/\nhttp://b.example/\n");
    assert_non_null(strstr(err.data, "line 2: "));
    assert_non_null(strstr(err.data, "line 3: "));
    assert_non_null(strstr(err.data, "line 4: "));
    assert_non_null(strstr(err.data, "3 lines rejected"));
    cr_buf_release(&out);
    cr_buf_release(&err);
}

static char *temp_dir(void)
{
    char *d = strdup("/tmp/crawld-test-dedup-XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_rf(const char *dir)
{
    const char *argv[] = { "/bin/rm", "-rf", dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

static void state_persists_across_runs(void **state)
{
    (void)state;
    char *dir = temp_dir();
    char js[512];
    snprintf(js, sizeof js, "%s/stats.json", dir);
    cr_buf out;
    cr_buf_init(&out, 0);
    const char *in1 = "http://a.example/1\nhttp://a.example/2\nhttp://a.example/1\n";
    assert_int_equal(run_dedup((const char *const[]){ "--state", dir, NULL }, in1, strlen(in1),
                               &out, NULL),
                     0);
    assert_string_equal(out.data, "http://a.example/1\nhttp://a.example/2\n");
    cr_buf_clear(&out);
    const char *in2 = "http://a.example/2\nhttp://a.example/3\nhttp://a.example/1\n";
    assert_int_equal(run_dedup((const char *const[]){ "--state", dir, "--verify", "always",
                                                      "--stats-json", js, NULL },
                               in2, strlen(in2), &out, NULL),
                     0);
    assert_string_equal(out.data, "http://a.example/3\n");
    json_error_t jerr;
    json_t *j = json_load_file(js, 0, &jerr);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "urls")), 3);
    json_t *dup = json_object_get(j, "duplicate");
    json_t *fresh = json_object_get(j, "new");
    long dups = (long)(json_integer_value(json_object_get(dup, "bloom_maybe_trusted")) +
                       json_integer_value(json_object_get(dup, "recent_cache")) +
                       json_integer_value(json_object_get(dup, "sqlite")));
    long news = (long)(json_integer_value(json_object_get(fresh, "bloom_no")) +
                       json_integer_value(json_object_get(fresh, "false_positive_caught")));
    assert_int_equal(dups, 2);
    assert_int_equal(news, 1);
    json_decref(j);
    cr_buf_release(&out);
    rm_rf(dir);
    free(dir);
}

typedef struct urlset {
    char **v;
    size_t n, cap;
} urlset;

static int collect(void *ud, int64_t id, const char *url, size_t len)
{
    (void)id;
    urlset *s = ud;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = strndup(url, len);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sigkill_then_restart_never_reports_a_stored_url_new(void **state)
{
    (void)state;
    char *dir = temp_dir();
    size_t len;
    char *in = make_urls(400000, 50, &len);
    const char *inpath = proc_temp_file(0, in, len);
    char outpath[512];
    snprintf(outpath, sizeof outpath, "%s/out1", dir);
    /* run 1: killed once it has written some output */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fi = open(inpath, O_RDONLY);
        int fo = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open("/dev/null", O_WRONLY);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execl(proc_crawld_path(), "crawld", "dedup", "--state", dir, "--set",
              "dedup.snapshot_interval_s=1", (char *)NULL);
        _exit(127);
    }
    struct stat st;
    for (int i = 0; i < 2000; i++) {
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
        if (stat(outpath, &st) == 0 && st.st_size > 2000000)
            break;
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));

    /* what SQLite holds now */
    char err[256];
    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    if (rd == NULL)
        fail_msg("%s", err);
    urlset stored = { 0 };
    assert_true(db_reader_scan_after(rd, 0, collect, &stored) >= 0);
    db_reader_free(rd);
    assert_true(stored.n > 1000);
    qsort(stored.v, stored.n, sizeof *stored.v, cmp_str);

    /* run 2, same input: nothing stored is new again, and with run 1's
     * output nothing is lost */
    cr_buf out2, want;
    cr_buf_init(&out2, 0);
    cr_buf_init(&want, 0);
    assert_int_equal(run_dedup((const char *const[]){ "--state", dir, "--verify", "always", NULL },
                               in, len, &out2, NULL),
                     0);
    for (char *p = out2.data; p && *p;) {
        char *e = strchr(p, '\n');
        *e = '\0';
        char *key = p;
        if (bsearch(&key, stored.v, stored.n, sizeof *stored.v, cmp_str))
            fail_msg("%s is in SQLite but was reported new after the restart", p);
        p = e + 1;
    }
    assert_int_equal(run_awk(in, len, &want), 0);
    size_t distinct = 0;
    for (const char *p = want.data; *p; p++)
        distinct += *p == '\n';
    int64_t total = 0;
    rd = db_reader_open_dir(dir, err, sizeof err);
    assert_non_null(rd);
    assert_int_equal(db_reader_max_id(rd, &total), 0);
    int64_t counts[DB_STATE_COUNT];
    assert_int_equal(db_reader_count_by_state(rd, counts), 0);
    db_reader_free(rd);
    assert_int_equal(counts[DB_STATE_SEEN_ONLY], (int64_t)distinct);

    for (size_t i = 0; i < stored.n; i++)
        free(stored.v[i]);
    free(stored.v);
    cr_buf_release(&out2);
    cr_buf_release(&want);
    unlink(inpath);
    free(in);
    rm_rf(dir);
    free(dir);
}

static const char *faults_bin(void)
{
    const char *b = getenv("CRAWLD_FAULTS_BIN");
    return b ? b : "bin/crawld-faults";
}

/* a then b, in one new buffer (caller frees). */
static char *joined(const char *a, size_t na, const char *b, size_t nb)
{
    char *ab = malloc(na + nb + 1);
    assert_non_null(ab);
    memcpy(ab, a, na);
    memcpy(ab + na, b, nb);
    ab[na + nb] = '\0';
    return ab;
}

/* Runs bin's dedup with args on in, the last part of all (every input fed
 * to the same state so far), and checks that it printed what awk prints
 * for all after awk's first done bytes (what earlier runs printed).
 * stderr goes to err (cleared first). Returns the length of awk's output
 * for all, the next run's done. */
static size_t expect_awk_tail(const char *bin, const char *const args[], const char *in,
                              size_t len, const char *all, size_t all_len, size_t done,
                              cr_buf *err)
{
    cr_buf want, got;
    cr_buf_init(&want, 0);
    cr_buf_init(&got, 0);
    cr_buf_clear(err);
    int rc = run_dedup_bin(bin, args, in, len, &got, err);
    if (rc != 0)
        fail_msg("%s dedup exited %d: %s", bin, rc, err->data);
    assert_int_equal(run_awk(all, all_len, &want), 0);
    assert_true(want.len > done);
    assert_int_equal(got.len, want.len - done);
    assert_memory_equal(got.data, want.data + done, got.len);
    size_t n = want.len;
    cr_buf_release(&want);
    cr_buf_release(&got);
    return n;
}

/* n lines drawn from a small space of URLs of random shape, so that about
 * half repeat, some soon and some long after. */
static char *random_urls(size_t n, size_t *len)
{
    cr_buf b;
    cr_buf_init(&b, 0);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = rnd() % (n / 2 + 1);
        cr_buf_printf(&b, "http://h%llu.example/%llx/%s?q=%llu\n", (unsigned long long)(k % 31),
                      (unsigned long long)(k * 2654435761u), k % 3 ? "p" : "a/b/c",
                      (unsigned long long)(k % 5));
    }
    *len = b.len;
    return cr_buf_take(&b);
}

/* The counter at "name" under "group" in a --stats-json file. */
static long long stat_of(const char *path, const char *group, const char *name)
{
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    assert_non_null(j);
    long long v = (long long)json_integer_value(json_object_get(json_object_get(j, group), name));
    json_decref(j);
    return v;
}

/* Exactness when every MAYBE goes to the store and fingerprints collide:
 * the faults build keeps 9 bits of each (CRAWLD_FP_BITS), a loose Bloom
 * filter says MAYBE often and a tiny recent cache settles few, so the
 * writer's look-ups, in sorted batches, decide; output must be awk's.
 * A second run on the same state with more input prints what awk prints
 * after the first part. Seeded: CRAWLD_TEST_SEED=N replays. */
static void verify_always_exact_with_colliding_fingerprints(void **state)
{
    (void)state;
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    rng = seed ? seed : 1;
    printf("verify_always_exact_with_colliding_fingerprints: seed %llu\n",
           (unsigned long long)rng);
    size_t len1, len2;
    char *in1 = random_urls(30000, &len1);
    char *in2 = random_urls(60000, &len2);
    char *both = joined(in1, len1, in2, len2);
    char *dir = temp_dir();
    char js[512];
    snprintf(js, sizeof js, "%s/stats.json", dir);
    const char *const args[] = { "--verify", "always", "--state", dir, "--stats-json", js,
                                 "--set", "dedup.expected_urls=1000", "--set",
                                 "dedup.fp_rate=0.5", "--set", "dedup.recent_cache=16",
                                 "--set", "storage.batch_size=777", NULL };
    cr_buf err;
    cr_buf_init(&err, 0);
    assert_int_equal(setenv("CRAWLD_FP_BITS", "9", 1), 0);
    size_t first = expect_awk_tail(faults_bin(), args, in1, len1, in1, len1, 0, &err);
    assert_true(stat_of(js, "duplicate", "sqlite") > 1000);
    assert_true(stat_of(js, "new", "false_positive_caught") > 100);
    expect_awk_tail(faults_bin(), args, in2, len2, both, len1 + len2, first, &err);
    unsetenv("CRAWLD_FP_BITS");
    assert_true(stat_of(js, "duplicate", "sqlite") > 1000);
    cr_buf_release(&err);
    rm_rf(dir);
    free(dir);
    free(both);
    free(in1);
    free(in2);
}

/* A Bloom filter held at dedup.bloom_max_mib stays exact with verify=always
 * (SQLite settles what the saturated shards answer), says so in the summary
 * and the stats, and keeps its memory under the cap; the next run on the
 * same state, with a larger cap, lets the loaded chain grow again (a
 * snapshot keeps no cap of its own) and is still exact. */
static void capped_bloom_stays_exact(void **state)
{
    (void)state;
    size_t len1, len2;
    char *in1 = make_urls(600000, 60, &len1);
    char *in2 = make_urls(300000, 0, &len2); /* ids from 0 again: 4 in 5 seen in in1 */
    char *both = joined(in1, len1, in2, len2);
    char *dir = temp_dir();
    char js[512];
    snprintf(js, sizeof js, "%s/stats.json", dir);
    const char *args[] = { "--verify", "always", "--state", dir, "--stats-json", js,
                           "--set", "dedup.expected_urls=1000", "--set",
                           "dedup.fp_rate=0.0001", "--set", "dedup.bloom_max_mib=1", NULL };
    cr_buf err;
    cr_buf_init(&err, 0);
    size_t first = expect_awk_tail(proc_crawld_path(), args, in1, len1, in1, len1, 0, &err);
    assert_true(stat_of(js, "bloom", "capped_shards") > 0);
    assert_true(stat_of(js, "bloom", "saturated_shards") > 0);
    assert_true(stat_of(js, "bloom", "memory_bytes") <= 1 << 20);
    assert_int_equal(stat_of(js, "bloom", "max_bytes"), 1 << 20);
    assert_non_null(strstr(err.data, "Bloom filter at its cap"));

    /* a first stage past the cap is refused with the reason, before any line */
    const char *const big[] = { "--verify", "always", "--set", "dedup.expected_urls=1000000000",
                                "--set", "dedup.bloom_max_mib=16", NULL };
    cr_buf o2, e2;
    cr_buf_init(&o2, 0);
    cr_buf_init(&e2, 0);
    assert_int_not_equal(run_dedup(big, in1, 0, &o2, &e2), 0);
    assert_int_equal(o2.len, 0);
    assert_non_null(strstr(e2.data, "needs more than dedup.bloom_max_mib (16 MiB)"));
    cr_buf_release(&o2);
    cr_buf_release(&e2);

    args[11] = "dedup.bloom_max_mib=64";
    expect_awk_tail(proc_crawld_path(), args, in2, len2, both, len1 + len2, first, &err);
    assert_int_equal(stat_of(js, "bloom", "capped_shards"), 0);
    assert_true(stat_of(js, "bloom", "memory_bytes") > 1 << 20);
    assert_null(strstr(err.data, "Bloom filter at its cap"));
    cr_buf_release(&err);
    rm_rf(dir);
    free(dir);
    free(both);
    free(in1);
    free(in2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(verify_always_equals_awk),
        cmocka_unit_test(verify_never_misses_at_most_the_bound),
        cmocka_unit_test(rejected_lines_are_reported),
        cmocka_unit_test(state_persists_across_runs),
        cmocka_unit_test(sigkill_then_restart_never_reports_a_stored_url_new),
        cmocka_unit_test(verify_always_exact_with_colliding_fingerprints),
        cmocka_unit_test(capped_bloom_stays_exact),
    };
    return cmocka_run_group_tests_name("dedup", tests, NULL, NULL);
}
