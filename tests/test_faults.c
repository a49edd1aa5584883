/* tests/test_faults: SQLite stays authoritative when the store fails
 * (issue 14, DESIGN.md invariants 7 and 8). The crawl runs bin/crawld-faults,
 * crawld built with storage/db.c's fault hook: CRAWLD_FAULTS="N:CODE:TIMES"
 * fails transaction attempts N..N+TIMES-1 with SQLITE_FULL, _IOERR or
 * _BUSY. The points come from a printed seed (CRAWLD_TEST_SEED replays it).
 * Oracles: the test site's request log (every page of the exact set once,
 * none twice beyond what crawld reports), exit codes, and crawld's words.
 * A real full filesystem (a small tmpfs) runs when the test runs as root. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "common/buf.h"
#include "tests/support/crawlrun.h"
#include "tests/support/proc.h"
#include "tests/support/testsite.h"
#include "tests/support/urlset.h"

static testsite site;
static unsigned seed;

#define PAGES "40"

/* short delays: the faults, not the politeness, are under test here */
static const char *const site_args[] = { "--pages", PAGES, "--hosts", "4", "--delay-ms", "50",
                                         "--crawl-delay", "0", "--big-bytes", "1500000",
                                         "--bomb-mib", "8", NULL };

static int group_setup(void **state)
{
    (void)state;
    const char *s = getenv("CRAWLD_TEST_SEED");
    seed = s ? (unsigned)strtoul(s, NULL, 10) : (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("test_faults: seed %u (CRAWLD_TEST_SEED=%u replays it)\n", seed, seed);
    srand(seed);
    return crawlrun_setup_site("faults", &site, site_args);
}

static int group_teardown(void **state)
{
    (void)state;
    crawlrun_teardown_site(&site);
    return 0;
}

static const char *faults_bin(void)
{
    const char *b = getenv("CRAWLD_FAULTS_BIN");
    return b ? b : "bin/crawld-faults";
}

static const char *path_in(const char *name)
{
    return crawlrun_path(name, NULL);
}

/* A config for this site with state in state_dir, seeded at seed_host
 * (NULL: a.test) + seed_target (NULL: "/"); storage is more [storage]
 * lines (may be NULL). Returns its path. */
static const char *config(const char *name, const char *state_dir, const char *seed_host,
                          const char *seed_target, const char *storage)
{
    int p = site.port;
    return crawlrun_config(
            name,
            "[crawl]\nseeds = [\"http://%s:%d%s\"]\nscope = \"host\"\nmax_depth = 5\n"
            "[fetch]\nresolve = [\"a.test:%d:127.0.0.1\", \"b.test:%d:127.0.0.1\", "
            "\"c.test:%d:127.0.0.1\", \"d.test:%d:127.0.0.1\"]\n"
            "timeout_ms = 5000\nmax_body_bytes = 1048576\nconnections = 16\n"
            "[politeness]\ndelay_ms = 0\ndelay_factor = 0.0\nbackoff_ms = 50\n"
            "max_retry_after_s = 2\n"
            "[storage]\nstate_dir = \"%s\"\n%s"
            "[dedup]\nsnapshot_interval_s = 1\n"
            "[control]\nlisten = \"\"\n",
            seed_host ? seed_host : "a.test", p, seed_target ? seed_target : "/", p, p, p, p,
            state_dir, storage ? storage : "");
}

/* ---- sets of URLs ------------------------------------------------------ */

typedef urlset set;
#define set_add urlset_add
#define set_sort_unique urlset_sort
#define set_has urlset_has
#define set_free urlset_free

/* The site's exact answer for a host-scope crawl from seed_target. */
static void expected(set *out, const char *seed_target)
{
    char port[16], from[160];
    snprintf(port, sizeof port, "%d", site.port);
    snprintf(from, sizeof from, "http://a.test:%d%s", site.port, seed_target);
    const char *args[] = { "--pages", PAGES, "--hosts", "4", "--port", port, "--from", from,
                           "--print-expected", "host", "--max-depth", "5", "--with-robots",
                           "--fetch-requisites", "--max-path-depth", "32",
                           "--max-repeat-segment", "3", "--max-query-params", "32",
                           "--max-url-length", "2048", NULL };
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(testsite_run(args, &text, &len), 0);
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        set_add(out, line);
    free(text);
    set_sort_unique(out, NULL);
}

static size_t log_lines(void)
{
    return crawlrun_log_lines(&site);
}

/* The keys of the URLs requested since log line `from`; *dups gets how many
 * repeated an earlier one with a final answer. */
static void fetched_since(size_t from, set *fetched, size_t *dups)
{
    assert_true(urlset_fetched_since(&site, from, fetched, dups, NULL) >= 0);
}

static void assert_same(const set *want, const set *got)
{
    size_t bad = urlset_diff(want, got);
    if (bad)
        fail_msg("%zu differences between the expected and the fetched set", bad);
}

/* Sums the "the last run ...: N URLs had been requested without their
 * outcome being stored" figures of text. */
static long refetch_reported(const char *text)
{
    return crawlrun_refetch_reported(text, NULL);
}

/* Runs prog (crawld or crawld-faults) with args and CRAWLD_FAULTS = faults
 * (NULL: none); stdin_data may be NULL. Exit code; out/err may be NULL. */
static int run_with(const char *prog, const char *faults, const char *const *args,
                    const char *stdin_data, cr_buf *out, cr_buf *err)
{
    const char *argv[16];
    size_t k = 0;
    argv[k++] = prog;
    for (size_t i = 0; args[i] && k < 15; i++)
        argv[k++] = args[i];
    argv[k] = NULL;
    if (faults)
        setenv("CRAWLD_FAULTS", faults, 1);
    else
        unsetenv("CRAWLD_FAULTS");
    int rc = proc_run(argv, stdin_data, stdin_data ? strlen(stdin_data) : 0, out, err);
    unsetenv("CRAWLD_FAULTS");
    return rc;
}

static int crawl_once(const char *faults, const char *cfg, cr_buf *err)
{
    cr_buf_clear(err);
    return run_with(faults_bin(), faults, (const char *const[]){ "run", "-c", cfg, NULL }, NULL,
                    NULL, err);
}

static const char *const codes[] = { "full", "ioerr", "busy" };

#define sleep_ms crawlrun_sleep_ms

/* ---- tests ------------------------------------------------------------- */

/* Transient faults at 5 seeded points per crawl, 4 crawls (20 points): the
 * writer holds and retries, the crawl pauses and resumes by itself, and
 * each crawl ends with exit 0 having fetched the exact set once. */
static void transient_faults_lose_and_repeat_nothing(void **state)
{
    (void)state;
    set want = { 0 };
    expected(&want, "/");
    for (int round = 0; round < 4; round++) {
        char name[32], spec[256];
        size_t at = 1, w = 0;
        snprintf(name, sizeof name, "transient%d", round);
        for (int k = 0; k < 5; k++) {
            at += 1 + (size_t)(rand() % 8);
            w += (size_t)snprintf(spec + w, sizeof spec - w, "%s%zu:%s:%d", k ? "," : "", at,
                                  codes[rand() % 3], 1 + rand() % 4);
        }
        print_message("  round %d: CRAWLD_FAULTS=%s\n", round, spec);
        const char *cfg = config(name, path_in(name), NULL, NULL, NULL);
        size_t from = log_lines();
        cr_buf err;
        cr_buf_init(&err, 0);
        int rc = crawl_once(spec, cfg, &err);
        if (rc != 0)
            fail_msg("round %d exited %d:\n%s", round, rc, err.data ? err.data : "");
        set got = { 0 };
        size_t dups = 0;
        fetched_since(from, &got, &dups);
        assert_same(&want, &got);
        assert_int_equal(dups, 0);
        /* the summary counts the stalls it rode out */
        const char *st = strstr(err.data, "  storage: ");
        long stalls = 0;
        if (st == NULL || sscanf(st, "  storage: %ld stalls", &stalls) != 1 || stalls < 1)
            fail_msg("round %d: no stall reported in the summary:\n%s", round, err.data);
        assert_null(strstr(err.data, "storage failed"));
        set_free(&got);
        cr_buf_release(&err);
    }
    set_free(&want);
}

/* A store that stays full past storage.max_stall_s: crawld gives up with a
 * non-zero exit and says why; the next run on the same state loses nothing
 * and fetches again only what it says it fetches again. */
static void persistent_fault_gives_up_and_resume_completes(void **state)
{
    (void)state;
    set want = { 0 };
    expected(&want, "/");
    for (int round = 0; round < 2; round++) {
        char name[32], spec[64];
        snprintf(name, sizeof name, "giveup%d", round);
        snprintf(spec, sizeof spec, "%d:%s:1000000", 2 + rand() % 20, codes[rand() % 3]);
        print_message("  round %d: CRAWLD_FAULTS=%s\n", round, spec);
        const char *cfg = config(name, path_in(name), NULL, NULL, "max_stall_s = 1\n");
        size_t from = log_lines();
        cr_buf err;
        cr_buf_init(&err, 0);
        int rc = crawl_once(spec, cfg, &err);
        print_message("  gave up with exit %d\n", rc);
        assert_int_not_equal(rc, 0);
        assert_non_null(strstr(err.data, "storage failed"));
        assert_non_null(strstr(err.data, "gave up after"));
        rc = crawl_once(NULL, cfg, &err);
        if (rc != 0)
            fail_msg("the resume exited %d:\n%s", rc, err.data);
        assert_non_null(strstr(err.data, "frontier drained"));
        set got = { 0 };
        size_t dups = 0;
        fetched_since(from, &got, &dups);
        assert_same(&want, &got);
        long reported = refetch_reported(err.data);
        print_message("  %zu fetched twice, %ld reported\n", dups, reported);
        if ((long)dups > reported)
            fail_msg("%zu URLs fetched twice, the resume reported %ld", dups, reported);
        set_free(&got);
        cr_buf_release(&err);
    }
    set_free(&want);
}

/* A stop that cannot wait for the store: SIGTERM during a stall that would
 * last (max_stall_s at its default) ends the run promptly with exit 1 and
 * says why; what the writer held is redone by the next run, which loses
 * nothing. */
static void sigterm_during_a_stall_gives_up_and_resume_completes(void **state)
{
    (void)state;
    set want = { 0 };
    expected(&want, "/");
    const char *cfg = config("termstall", path_in("termstall"), NULL, NULL, NULL);
    const char *errfile = crawlrun_path("termstall", ".err");
    size_t from = log_lines();
    char spec[64];
    /* An early transaction: how many a crawl of this site takes depends on
     * how the commit window batches under load (a loaded machine batches
     * more), and a fault past the last one would never fire. */
    snprintf(spec, sizeof spec, "%d:full:1000000", 1 + rand() % 3);
    print_message("  CRAWLD_FAULTS=%s\n", spec);
    setenv("CRAWLD_FAULTS", spec, 1);
    pid_t pid = crawlrun_spawn(faults_bin(), (const char *const[]){ "run", "-c", cfg, NULL },
                               errfile, 0, NULL);
    unsetenv("CRAWLD_FAULTS");
    bool paused = crawlrun_await(pid, errfile, "fetching paused", 30000) != NULL;
    if (!paused && kill(pid, 0) != 0)
        fail_msg("crawld ended before the fault stalled it:\n%s", crawlrun_slurp(errfile));
    kill(pid, SIGTERM);
    int rc = crawlrun_wait(pid, 30000);
    if (rc < 0)
        fail_msg("crawld did not stop within 30 s of SIGTERM during a stall");
    const char *text = crawlrun_slurp(errfile);
    assert_true(paused);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(text, "stopping while the store fails"));
    cr_buf err;
    cr_buf_init(&err, 0);
    rc = crawl_once(NULL, cfg, &err);
    if (rc != 0)
        fail_msg("the resume exited %d:\n%s", rc, err.data);
    set got = { 0 };
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&want, &got);
    long reported = refetch_reported(err.data);
    print_message("  %zu fetched twice, %ld reported\n", dups, reported);
    if ((long)dups > reported)
        fail_msg("%zu URLs fetched twice, the resume reported %ld", dups, reported);
    set_free(&got);
    set_free(&want);
    cr_buf_release(&err);
}

/* `crawld dedup --state` under faults: transient ones change nothing (the
 * output is awk's); past max_stall_s it stops with exit 1, and what it had
 * printed is stored: a second run prints exactly the rest. */
static void dedup_state_under_faults(void **state)
{
    (void)state;
    cr_buf in, uniq, out1, out2, err;
    cr_buf_init(&in, 0);
    cr_buf_init(&uniq, 0);
    cr_buf_init(&out1, 0);
    cr_buf_init(&out2, 0);
    cr_buf_init(&err, 0);
    set seen_set = { 0 };
    static bool had[8000];
    memset(had, 0, sizeof had);
    for (int i = 0; i < 20000; i++) {
        char u[64];
        int k = rand() % 8000; /* the URL is a function of k: awk's first sightings */
        snprintf(u, sizeof u, "http://h%d.test/p%d\n", k % 13, k);
        cr_buf_append(&in, u, strlen(u));
        u[strlen(u) - 1] = '\0';
        if (!had[k]) {
            had[k] = true;
            set_add(&seen_set, u);
            cr_buf_printf(&uniq, "%s\n", u);
        }
    }
    set_sort_unique(&seen_set, NULL);
    for (int round = 0; round < 2; round++) {
        char spec[128], dir[64];
        snprintf(dir, sizeof dir, "dedup-transient%d", round);
        snprintf(spec, sizeof spec, "%d:%s:%d,%d:%s:%d", 1 + rand() % 5, codes[rand() % 3],
                 1 + rand() % 3, 8 + rand() % 5, codes[rand() % 3], 1 + rand() % 3);
        print_message("  transient: CRAWLD_FAULTS=%s\n", spec);
        cr_buf_clear(&out1);
        int rc = run_with(faults_bin(), spec,
                          (const char *const[]){ "dedup", "--state", path_in(dir), "--verify",
                                                 "always", "--set", "storage.batch_size=500",
                                                 NULL },
                          in.data, &out1, &err);
        assert_int_equal(rc, 0);
        assert_int_equal(out1.len, uniq.len);
        assert_memory_equal(out1.data, uniq.data, uniq.len);
    }
    /* past the stall limit */
    char spec[64];
    /* An early transaction: how many a crawl of this site takes depends on
     * how the commit window batches under load (a loaded machine batches
     * more), and a fault past the last one would never fire. */
    snprintf(spec, sizeof spec, "%d:full:1000000", 1 + rand() % 3);
    print_message("  give up: CRAWLD_FAULTS=%s\n", spec);
    cr_buf_clear(&out1);
    int rc = run_with(faults_bin(), spec,
                      (const char *const[]){ "dedup", "--state", path_in("dedup-giveup"),
                                             "--verify", "always", "--set", "storage.batch_size=500",
                                             "--set", "storage.max_stall_s=1", NULL },
                      in.data, &out1, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err.data, "disk is full"));
    rc = run_with(faults_bin(), NULL,
                  (const char *const[]){ "dedup", "--state", path_in("dedup-giveup"), "--verify",
                                         "always", NULL },
                  in.data, &out2, &err);
    assert_int_equal(rc, 0);
    print_message("  printed %zu bytes before giving up, %zu after\n", out1.len, out2.len);
    /* nothing printed twice, nothing missing, in input order each */
    assert_int_equal(out1.len + out2.len, uniq.len);
    set a = { 0 };
    char *save = NULL;
    char *t1 = strndup(out1.data ? out1.data : "", out1.len);
    for (char *l = strtok_r(t1, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        set_add(&a, l);
    char *t2 = strndup(out2.data ? out2.data : "", out2.len);
    for (char *l = strtok_r(t2, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        set_add(&a, l);
    size_t dups = 0;
    set_sort_unique(&a, &dups);
    assert_int_equal(dups, 0);
    assert_int_equal(a.n, seen_set.n);
    free(t1);
    free(t2);
    set_free(&a);
    set_free(&seen_set);
    cr_buf_release(&in);
    cr_buf_release(&uniq);
    cr_buf_release(&out1);
    cr_buf_release(&out2);
    cr_buf_release(&err);
}

/* ---- a real full filesystem --------------------------------------------- */

/* Fills the filesystem of dir with dir/filler until it is full. */
static void fill(const char *dir)
{
    char p[300];
    snprintf(p, sizeof p, "%s/filler", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    static char block[65536];
    while (write(fd, block, sizeof block) > 0)
        ;
    close(fd);
}

static void unfill(const char *dir)
{
    char p[300];
    snprintf(p, sizeof p, "%s/filler", dir);
    unlink(p);
}

/* The disk fills for a moment during a crawl (a 24 MiB tmpfs): crawld
 * pauses, says so, resumes when space is back, and fetches the exact set
 * once with exit 0. Root only (it mounts); skipped otherwise. */
static void real_full_disk_pauses_and_resumes(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        print_message("  skipped: mounting a tmpfs needs root\n");
        skip();
    }
    char mnt[256];
    snprintf(mnt, sizeof mnt, "%s", path_in("tmpfs"));
    assert_int_equal(mkdir(mnt, 0700), 0);
    if (mount("none", mnt, "tmpfs", 0, "size=24m") != 0) {
        print_message("  skipped: cannot mount a tmpfs here: %s\n", strerror(errno));
        rmdir(mnt);
        skip();
    }
    char sd[300];
    snprintf(sd, sizeof sd, "%s/state", mnt);
    const char *cfg = config("fulldisk", sd, NULL, NULL, NULL);
    const char *errfile = crawlrun_path("fulldisk", ".err");
    set want = { 0 };
    expected(&want, "/");
    size_t from = log_lines();
    pid_t pid = crawlrun_spawn(NULL, (const char *const[]){ "run", "-c", cfg, NULL }, errfile, 0,
                               NULL);
    for (int i = 0; i < 2000 && log_lines() < from + 40; i++)
        sleep_ms(10);
    fill(mnt);
    sleep_ms(1500);
    size_t during = log_lines();
    sleep_ms(1000);
    size_t after = log_lines();
    unfill(mnt);
    int rc = crawlrun_wait(pid, 60000);
    const char *text = crawlrun_slurp(errfile);
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    print_message("  %zu requests while the disk was full (second second), exit %d\n",
                  after - during, rc);
    if (rc != 0)
        fail_msg("crawld exited %d:\n%s", rc, text);
    assert_non_null(strstr(text, "storage: disk full"));
    assert_non_null(strstr(text, "fetching resumed"));
    /* paused: fetches in flight may finish, no new ones start */
    assert_true(after - during <= 16);
    set got = { 0 };
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&want, &got);
    assert_int_equal(dups, 0);
    set_free(&got);
    set_free(&want);
}

/* ---- the state folder's identity --------------------------------------- */

static void finished_crawl(const char *name, const char *host, const char **cfg_out)
{
    const char *cfg = config(name, path_in(name), host, NULL, NULL);
    cr_buf err;
    cr_buf_init(&err, 0);
    int rc = crawl_once(NULL, cfg, &err);
    if (rc != 0)
        fail_msg("crawl %s exited %d:\n%s", name, rc, err.data);
    cr_buf_release(&err);
    if (cfg_out)
        *cfg_out = cfg;
}

static void copy_file(const char *from, const char *to)
{
    const char *argv[] = { "/bin/cp", from, to, NULL };
    assert_int_equal(proc_run(argv, NULL, 0, NULL, NULL), 0);
}

/* A zero-length (or missing) crawld.db beside a Bloom snapshot is refused,
 * by `crawld run` and `crawld dedup --state`, never started afresh. */
static void lost_database_is_refused(void **state)
{
    (void)state;
    const char *cfg;
    finished_crawl("lostdb", NULL, &cfg);
    char db[300];
    snprintf(db, sizeof db, "%s/crawld.db", path_in("lostdb"));
    assert_int_equal(truncate(db, 0), 0);
    char wal[320];
    snprintf(wal, sizeof wal, "%s-wal", db);
    unlink(wal);
    cr_buf err;
    cr_buf_init(&err, 0);
    size_t from = log_lines();
    int rc = crawl_once(NULL, cfg, &err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err.data, "holds a Bloom snapshot but no database"));
    assert_int_equal(log_lines(), from); /* nothing fetched */
    rc = run_with(proc_crawld_path(), NULL,
                  (const char *const[]){ "dedup", "--state", path_in("lostdb"), NULL },
                  "http://a.test/\n", NULL, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err.data, "no database"));
    unlink(db);
    rc = crawl_once(NULL, cfg, &err);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(err.data, "is missing"));
    cr_buf_release(&err);
}

/* A valid snapshot copied from another state folder is refused and the
 * filter rebuilt from this database: the second crawl fetches nothing new,
 * and a URL only the other crawl knew is not taken for seen. */
static void foreign_snapshot_is_refused(void **state)
{
    (void)state;
    const char *cfg_a;
    cr_buf err;
    cr_buf_init(&err, 0);
    finished_crawl("other", "c.test", NULL); /* another crawl, of another host */
    finished_crawl("own", NULL, &cfg_a);
    char from_snap[300], to_snap[300];
    snprintf(from_snap, sizeof from_snap, "%s/bloom.snap", path_in("other"));
    snprintf(to_snap, sizeof to_snap, "%s/bloom.snap", path_in("own"));
    copy_file(from_snap, to_snap);
    size_t from = log_lines();
    assert_int_equal(crawl_once(NULL, cfg_a, &err), 0);
    assert_non_null(strstr(err.data, "belongs to another crawl"));
    set got = { 0 };
    fetched_since(from, &got, NULL);
    for (size_t i = 0; i < got.n; i++)
        if (strstr(got.v[i], "/robots.txt") == NULL)
            fail_msg("fetched again after a foreign snapshot: %s", got.v[i]);
    set_free(&got);
    /* dedup on the same state: the database decides, not the foreign bits */
    copy_file(from_snap, to_snap);
    cr_buf out;
    cr_buf_init(&out, 0);
    char line[128];
    /* a.test's home is this crawl's; c.test's only the other's */
    snprintf(line, sizeof line, "http://a.test:%d/\nhttp://c.test:%d/\n", site.port, site.port);
    int rc = run_with(proc_crawld_path(), NULL,
                      (const char *const[]){ "dedup", "--state", path_in("own"), "--verify",
                                             "never", NULL },
                      line, &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err.data, "belongs to another crawl"));
    assert_non_null(out.data);
    assert_non_null(strstr(out.data, "c.test"));
    assert_null(strstr(out.data, "a.test"));
    cr_buf_release(&out);
    cr_buf_release(&err);
}

/* A state folder too full for the WARC body spool (CRAWLD_SPOOL_FAULT: every
 * spool file write fails with ENOSPC): each page past spool_mem_bytes is
 * fetched once, its links followed, its record not written, with the URL
 * and the reason logged and counted in the summary; the crawl ends well. */
static void full_spool_loses_no_page(void **state)
{
    (void)state;
    set want = { 0 };
    expected(&want, "/");
    size_t from = log_lines();
    const char *cfg = config("spool", path_in("spool"), NULL, NULL,
                             "[archive]\nwarc = true\nspool_mem_bytes = 4096\n");
    cr_buf err;
    cr_buf_init(&err, 0);
    setenv("CRAWLD_SPOOL_FAULT", "1", 1);
    int rc = crawl_once(NULL, cfg, &err);
    unsetenv("CRAWLD_SPOOL_FAULT");
    if (rc != 0)
        fail_msg("crawld-faults run exited %d: %s", rc, err.data);
    set got = { 0 };
    size_t dups = 0;
    fetched_since(from, &got, &dups);
    assert_same(&want, &got);
    assert_int_equal(dups, 0);
    const char *m = strstr(err.data, "crawld: WARC record not written for http://");
    assert_non_null(m);
    assert_non_null(strstr(m, ": body spool: No space left on device\n"));
    const char *s = strstr(err.data, "fetches NOT archived: their body could not be spooled");
    assert_non_null(s);
    long n = 0;
    for (const char *p = err.data; (p = strstr(p, "crawld: WARC record not written for ")); p++)
        n++;
    print_message("  %ld fetches not archived (spool full), %zu URLs fetched once\n", n, got.n);
    assert_true(n > 0);
    set_free(&want);
    set_free(&got);
    cr_buf_release(&err);
}

/* A snapshot whose mark is above the database's highest row (the database
 * lost rows, e.g. restored from an older copy) is refused and rebuilt: the
 * lost URLs are new again, not taken for seen by the snapshot's bits. */
static void snapshot_above_database_is_refused(void **state)
{
    (void)state;
    const char *cfg;
    finished_crawl("rolled", NULL, &cfg);
    char db[300];
    snprintf(db, sizeof db, "%s/crawld.db", path_in("rolled"));
    sqlite3 *c = NULL;
    assert_int_equal(sqlite3_open(db, &c), SQLITE_OK);
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(c, "SELECT max(id) FROM urls", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    long long top = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    cr_buf lost;
    cr_buf_init(&lost, 0);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT url FROM urls WHERE id > %lld ORDER BY id", top / 2);
    assert_int_equal(sqlite3_prepare_v2(c, sql, -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW)
        cr_buf_printf(&lost, "%s\n", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    snprintf(sql, sizeof sql, "DELETE FROM urls WHERE id > %lld", top / 2);
    assert_int_equal(sqlite3_exec(c, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(c);
    cr_buf err, out;
    cr_buf_init(&err, 0);
    cr_buf_init(&out, 0);
    int rc = run_with(proc_crawld_path(), NULL,
                      (const char *const[]){ "dedup", "--state", path_in("rolled"), "--verify",
                                             "never", NULL },
                      lost.data, &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err.data, "newer than the database"));
    print_message("  %lld rows dropped; dedup --verify never calls %zu bytes of %zu new\n",
                  top - top / 2, out.len, lost.len);
    /* every lost URL is new again (canonical already: printed as stored) */
    assert_int_equal(out.len, lost.len);
    assert_memory_equal(out.data, lost.data, lost.len);
    cr_buf_release(&lost);
    cr_buf_release(&out);
    cr_buf_release(&err);
    (void)cfg;
}

/* Redirect hop counts live with the row: a crawl stopped in the middle of
 * the site's 8-hop chain and resumed still stops at max_redirects. */
static void redirect_hops_survive_a_restart(void **state)
{
    (void)state;
    const char *cfg = config("hops", path_in("hops"), NULL, "/redirect/hop/1", NULL);
    cr_buf err;
    cr_buf_init(&err, 0);
    size_t from = log_lines();
    for (int k = 0; k < 4; k++) {
        int rc = run_with(faults_bin(), NULL,
                          (const char *const[]){ "run", "-c", cfg, "--set", "crawl.max_pages=2",
                                                 NULL },
                          NULL, NULL, &err);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(err.data, "stopped at max_pages"));
    }
    assert_int_equal(crawl_once(NULL, cfg, &err), 0);
    set got = { 0 };
    fetched_since(from, &got, NULL);
    char bad[128];
    snprintf(bad, sizeof bad, "http://a.test:%d/redirect/hop/7", site.port);
    assert_false(set_has(&got, bad));
    snprintf(bad, sizeof bad, "http://a.test:%d/redirect/hop/6", site.port);
    assert_true(set_has(&got, bad));
    set_free(&got);
    cr_buf_release(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transient_faults_lose_and_repeat_nothing),
        cmocka_unit_test(persistent_fault_gives_up_and_resume_completes),
        cmocka_unit_test(sigterm_during_a_stall_gives_up_and_resume_completes),
        cmocka_unit_test(dedup_state_under_faults),
        cmocka_unit_test(real_full_disk_pauses_and_resumes),
        cmocka_unit_test(lost_database_is_refused),
        cmocka_unit_test(foreign_snapshot_is_refused),
        cmocka_unit_test(snapshot_above_database_is_refused),
        cmocka_unit_test(full_spool_loses_no_page),
        cmocka_unit_test(redirect_hops_survive_a_restart),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
