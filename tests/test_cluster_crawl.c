/* tests/test_cluster_crawl: several crawld processes sharing one crawl
 * through Redis (issue 23), end to end, each test starting everything it
 * needs: a redis-server child on a Unix socket in a temp folder
 * (tests/support/redisd), the test site with 64 hosts and cross-host links
 * and a timed request log (--log-timing), and crawld nodes with their own
 * state folders, configs, User-Agents and a short lease
 * (tests/support/crawlproc). Oracles, checked once every node has exited at
 * quiescence (tests/support/crawloracle): the fetched set equals the site's
 * exact set; no host was fetched by two nodes at overlapping times; the
 * starts per host are spaced by the politeness delay; duplicates only for
 * URLs in flight on a killed node, at most its transfer count.
 *
 * The first three tests need no cluster: the oracles against a synthetic
 * log (each must catch what it checks), one ordinary crawld over the same
 * site (what the oracles say of a correct single-node crawl), and two at
 * once (what they say of nodes that do not partition). The
 * scenarios need `crawld run` to crawl as a cluster node; a build that
 * refuses cluster.redis skips them, saying so. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/alloc.h"
#include "tests/support/crawloracle.h"
#include "tests/support/crawlproc.h"
#include "tests/support/proc.h"
#include "tests/support/redisd.h"
#include "tests/support/testsite.h"
#include "tests/support/urlset.h"

#define HOSTS 64
#define PAGES "12"
#define DELAY_MS 100      /* politeness.delay_ms */
/* Under ThreadSanitizer (make tsan sets TSAN_OPTIONS) crawld runs several
 * times slower: a node's lease ticks then come late, it fences itself
 * (no renewal within lease/2) and stalls, and a 1 s lease tests the
 * sanitizer, not the cluster. The times stretch together. */
static int slow(void)
{
    return getenv("TSAN_OPTIONS") != NULL ? 4 : 1;
}
#define LEASE_MS (1000 * slow()) /* cluster.lease_ms */
#define GRACE_MS (4000 * slow()) /* cluster.grace_ms: a restart comes at once, a node killed
                                  * for good has its slots moved after this */
#define CONNECTIONS 8     /* fetch.connections: a killed node's transfers in flight at most */
#define NODE_WAIT_MS (50000 * slow())
#define MAX_NODES 4

/* b.test's robots.txt Crawl-delay ("--crawl-delay"): the site's default, 1 s,
 * unless a scenario sets another before world_begin */
static const char *site_crawl_delay = "1";
/* cluster.shared_dir set (slots move through files there), unless a
 * scenario clears it before its nodes start (they move through Redis) */
static bool shared_storage = true;

/* One test's world; torn down (every process stopped) after each test. */
typedef struct world {
    char dir[128];
    testsite site;
    redisd *redis;
    crawlproc node[MAX_NODES];
    char cfg[MAX_NODES][256];
    urlset want;
} world;

static world W;

static void host_name(int i, char *out, size_t cap)
{
    if (i < 26)
        snprintf(out, cap, "%c.test", 'a' + i);
    else
        snprintf(out, cap, "%c%c.test", 'a' + (i - 26) / 26, 'a' + (i - 26) % 26);
}

static int teardown(void **state)
{
    (void)state;
    crawlproc_kill_all();
    memset(W.node, 0, sizeof(W.node));
    testsite_stop(&W.site);
    if (W.redis != NULL)
        redisd_stop(W.redis);
    W.redis = NULL;
    urlset_free(&W.want);
    site_crawl_delay = "1";
    shared_storage = true;
    if (W.dir[0] != '\0' && getenv("CRAWLD_KEEP_TEST_DIR") == NULL) {
        const char *argv[] = { "/bin/rm", "-rf", W.dir, NULL };
        proc_run(argv, NULL, 0, NULL, NULL);
    } else if (W.dir[0] != '\0') {
        fprintf(stderr, "kept %s\n", W.dir);
    }
    W.dir[0] = '\0';
    return 0;
}

/* The site, its expected set, the folder; with_redis also the server. */
static void world_begin(int with_redis)
{
    memset(&W, 0, sizeof(W));
    snprintf(W.dir, sizeof(W.dir), "/tmp/crawld-test-cluster-crawl-XXXXXX");
    assert_non_null(mkdtemp(W.dir));
    const char *const site_args[] = { "--hosts", "64", "--pages", PAGES, "--no-specials",
                                      "--log-timing", "--crawl-delay", site_crawl_delay, NULL };
    assert_int_equal(testsite_start(&W.site, site_args), 0);
    char port[16], from[128];
    snprintf(port, sizeof(port), "%d", W.site.port);
    snprintf(from, sizeof(from), "http://a.test:%d/", W.site.port);
    const char *const args[] = { "--hosts", "64", "--pages", PAGES, "--no-specials", "--port", port,
                                 "--from", from, "--print-expected", "all", "--with-robots",
                                 "--fetch-requisites", "--requisite-depth", "3",
                                 "--max-path-depth", "32", "--max-repeat-segment", "3",
                                 "--max-query-params", "32", "--max-url-length", "2048", NULL };
    assert_int_equal(oracle_expected(args, &W.want), 0);
    assert_true(W.want.n > 500);
    if (with_redis) {
        W.redis = redisd_start();
        assert_non_null(W.redis);
    }
}

/* Node i's config: its own state folder, User-Agent and node id; in the
 * cluster when Redis runs. */
static const char *node_config(int i)
{
    char path[256], resolve[HOSTS * 48 + 16];
    size_t off = 0;
    for (int h = 0; h < HOSTS; h++) {
        char name[16];
        host_name(h, name, sizeof(name));
        off += (size_t)snprintf(resolve + off, sizeof(resolve) - off, "%s\"%s:%d:127.0.0.1\"",
                                h ? ", " : "", name, W.site.port);
    }
    snprintf(path, sizeof(path), "%s/node%d.toml", W.dir, i);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "[crawl]\nseeds = [\"http://a.test:%d/\"]\nscope = \"any\"\nmax_depth = 50\n"
            "user_agent = \"crawld-test-node-%d\"\n"
            "[fetch]\nresolve = [%s]\ntimeout_ms = 10000\nconnections = %d\n"
            "[politeness]\ndelay_ms = %d\ndelay_factor = 0.0\nbackoff_ms = 50\n"
            "[storage]\nstate_dir = \"%s/state%d\"\n"
            "[dedup]\nsnapshot_interval_s = 1\n",
            W.site.port, i, resolve, CONNECTIONS, DELAY_MS, W.dir, i);
    if (W.redis != NULL)
        fprintf(f, "[cluster]\nredis = \"%s\"\ncrawl_id = \"t\"\nnode_id = \"node-%d\"\n"
                   "lease_ms = %d\ngrace_ms = %d\n",
                redisd_addr(W.redis), i, LEASE_MS, GRACE_MS);
    if (W.redis != NULL && shared_storage)
        fprintf(f, "shared_dir = \"%s/shared\"\n", W.dir);
    fclose(f);
    snprintf(W.cfg[i], sizeof(W.cfg[i]), "%s", path);
    return W.cfg[i];
}

static void node_start(int i)
{
    char name[16];
    if (W.cfg[i][0] == '\0')
        node_config(i);
    snprintf(name, sizeof(name), "node%d", i);
    const char *const args[] = { "run", "-c", W.cfg[i], NULL };
    assert_int_equal(crawlproc_start(&W.node[i], W.dir, name, args), 0);
}

/* The last line of text that starts with prefix, into out ("" when
 * none). */
static void last_line(const char *text, const char *prefix, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *l = text; l != NULL && *l != '\0';) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) : strlen(l);
        if (len > 0 && strncmp(l, prefix, strlen(prefix)) == 0)
            snprintf(out, cap, "%.*s", (int)len, l);
        l = nl ? nl + 1 : NULL;
    }
}

/* Waits for node i to exit; fails, with its stderr's tail, unless it
 * exited with want. The failure message itself names the node's last
 * "crawld run:" error and its last message: a CI log shows that one
 * even where it cuts the printed tail short. */
static void node_expect_exit(int i, int want)
{
    int st = crawlproc_wait(&W.node[i], NODE_WAIT_MS);
    if (st != want) {
        static char tail[3001]; /* fail_msg does not return: nothing left to free */
        static char said[400], last[400];
        char *err = crawlproc_output(&W.node[i], 2);
        size_t len = err ? strlen(err) : 0;
        snprintf(tail, sizeof(tail), "%s", err ? err + (len > 3000 ? len - 3000 : 0) : "(none)");
        last_line(err, "crawld run:", said, sizeof said);
        last_line(err, "crawld", last, sizeof last);
        cr_free(err);
        /* cmocka cuts a long failure message short: the tail goes first,
         * then what Redis holds (a node that never ends: who is not idle) */
        print_message("node %d's stderr ends:\n%s\n", i, tail);
        if (W.redis != NULL) {
            cr_buf out, serr;
            cr_buf_init(&out, 1 << 20);
            cr_buf_init(&serr, 1 << 16);
            const char *const args[] = { "cluster", "status", "--redis", redisd_addr(W.redis),
                                         "--crawl", "t", NULL };
            proc_crawld(args, NULL, &out, &serr);
            print_message("crawld cluster status:\n%s%s\n", out.data ? out.data : "",
                          serr.data ? serr.data : "");
            cr_buf_release(&out);
            cr_buf_release(&serr);
        }
        fflush(stdout); /* before cmocka's error, which goes to stderr */
        fail_msg("node %d: %s %d (wanted %d); its last error: %s; its last message: %s", i,
                 st == -ETIMEDOUT ? "still running after the wait, status" : "exit status", st,
                 want, said[0] ? said : "(none)", last[0] ? last : "(none)");
    }
}

/* Lines the running site has logged: counted, not parsed (the last one may
 * be half written as we read). */
static size_t log_lines(void)
{
    FILE *f = fopen(W.site.log_path, "r");
    size_t n = 0;
    int c;
    assert_non_null(f);
    while ((c = getc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* Until the site answered `lines` requests (progress, not time: the crawl
 * is then under way on every node); fails after NODE_WAIT_MS. */
static void wait_progress(size_t lines)
{
    for (int waited = 0; log_lines() < lines; waited += 20) {
        if (waited > NODE_WAIT_MS)
            fail_msg("the site answered fewer than %zu requests in %d ms", lines, NODE_WAIT_MS);
        struct timespec ts = { 0, 20 * 1000000L };
        nanosleep(&ts, NULL);
    }
}

static void nap_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* The oracles on the whole log; at most max_dups duplicate fetches. */
static void check_oracles(size_t max_dups, size_t min_agents)
{
    testsite_req *v;
    size_t n;
    oracle_result r;
    /* the site logs a request once answered: stop it so every line is in */
    assert_int_equal(testsite_stop(&W.site), 0);
    assert_int_equal(testsite_log_read(&W.site, &v, &n), 0);
    oracle_opts o = { W.site.port, DELAY_MS * 1000LL, DELAY_MS * 1000LL / 10, 0 };
    assert_int_equal(oracle_check(v, n, &W.want, &o, &r), 0);
    testsite_log_free(v, n);
    print_message("%zu requests by %zu agents: %zu URLs (%zu expected), %zu missing, %zu extra, "
                  "%zu duplicate fetches of %zu URLs, %zu overlaps, %zu short gaps (closest "
                  "%lld us)\n",
                  r.requests, r.agents, r.fetched, W.want.n, r.missing, r.extra, r.dup_fetches,
                  r.dup_urls, r.overlaps, r.short_gaps, r.min_gap_us);
    assert_int_equal(r.missing, 0);
    assert_int_equal(r.extra, 0);
    assert_int_equal(r.overlaps, 0);
    assert_int_equal(r.short_gaps, 0);
    assert_true(r.dup_fetches <= max_dups);
    assert_true(r.agents >= min_agents);
}

/* ---- no cluster needed ------------------------------------------------- */

static testsite_req fake(const char *host, const char *target, const char *ua, long long s,
                         long long e)
{
    testsite_req q;
    memset(&q, 0, sizeof(q));
    snprintf(q.host, sizeof(q.host), "%s", host);
    snprintf(q.method, sizeof(q.method), "GET");
    q.target = (char *)target;
    q.status = 200;
    q.start_us = s;
    q.end_us = e;
    q.ms = s / 1000;
    snprintf(q.ua, sizeof(q.ua), "%s", ua);
    return q;
}

/* Each oracle catches what it checks, and only that. */
static void oracles_catch_overlap_spacing_duplicates_and_set(void **state)
{
    (void)state;
    oracle_opts o = { 8080, 100000, 10000, 1 };
    oracle_result r;
    urlset want = { 0 };
    urlset_add(&want, "http://a.test:8080/");
    urlset_add(&want, "http://a.test:8080/x");
    urlset_add(&want, "http://b.test:8080/");
    urlset_sort(&want, NULL);
    /* clean: a.test by n1 then, a delay later, by n2 (a handover); b.test */
    testsite_req ok[] = {
        fake("a.test", "/", "n1", 1000000, 1050000),
        fake("a.test", "/x", "n2", 1100000, 1150000),
        fake("b.test", "/", "n2", 1000000, 1400000),
    };
    assert_int_equal(oracle_check(ok, 3, &want, &o, &r), 0);
    assert_int_equal(r.agents, 2);
    assert_int_equal(r.fetched, 3);
    assert_true(r.missing == 0 && r.extra == 0 && r.dup_fetches == 0);
    assert_true(r.overlaps == 0 && r.short_gaps == 0);
    assert_int_equal(r.min_gap_us, 100000);

    /* n2 starts a.test while n1's request is still being answered */
    testsite_req overlap[] = {
        fake("a.test", "/", "n1", 1000000, 1300000),
        fake("a.test", "/x", "n2", 1200000, 1250000),
        fake("b.test", "/", "n2", 1000000, 1050000),
    };
    assert_int_equal(oracle_check(overlap, 3, &want, &o, &r), 0);
    assert_int_equal(r.overlaps, 1);
    assert_int_equal(r.short_gaps, 0); /* 200 ms apart */
    /* one node's own requests may not overlap either way (max_per_host is
     * the crawler's business): only two agents make an overlap */
    overlap[1] = fake("a.test", "/x", "n1", 1200000, 1250000);
    assert_int_equal(oracle_check(overlap, 3, &want, &o, &r), 0);
    assert_int_equal(r.overlaps, 0);

    /* 85 ms apart: short of 100 ms less the 10 ms slack; 95 ms is within it */
    testsite_req close_[] = {
        fake("a.test", "/", "n1", 1000000, 1010000),
        fake("a.test", "/x", "n1", 1085000, 1090000),
        fake("b.test", "/", "n1", 1000000, 1001000),
    };
    assert_int_equal(oracle_check(close_, 3, &want, &o, &r), 0);
    assert_int_equal(r.short_gaps, 1);
    assert_int_equal(r.min_gap_us, 85000);
    close_[1].start_us = 1095000;
    close_[1].end_us = 1096000;
    assert_int_equal(oracle_check(close_, 3, &want, &o, &r), 0);
    assert_int_equal(r.short_gaps, 0);

    /* a URL answered twice (another spelling of it too), a 503 retried (not
     * a duplicate), robots.txt per node (neither), one missing, one extra */
    testsite_req dup[] = {
        fake("a.test", "/", "n1", 1000000, 1001000),
        fake("a.test", "/./", "n2", 2000000, 2001000),
        fake("a.test", "/robots.txt", "n1", 3000000, 3001000),
        fake("a.test", "/robots.txt", "n2", 4000000, 4001000),
        fake("b.test", "/", "n1", 1000000, 1001000),
        fake("b.test", "/", "n1", 2000000, 2001000),
        fake("b.test", "/y", "n1", 3000000, 3001000),
    };
    dup[4].status = 503;
    assert_int_equal(oracle_check(dup, 7, &want, &o, &r), 0);
    assert_int_equal(r.dup_urls, 1);
    assert_int_equal(r.dup_fetches, 1);
    assert_int_equal(r.missing, 1); /* /x */
    assert_int_equal(r.extra, 2);   /* a.test/robots.txt, b.test/y */

    /* a log without timing is refused, not judged */
    testsite_req untimed = fake("a.test", "/", "n1", -1, -1);
    assert_int_equal(oracle_check(&untimed, 1, &want, &o, &r), -EINVAL);
    urlset_free(&want);
}

/* One ordinary crawld over the cluster tests' site: the oracles hold for a
 * correct single-node crawl (and the site's set is what crawld fetches). */
static void single_node_meets_the_oracles(void **state)
{
    (void)state;
    world_begin(0);
    node_start(0);
    node_expect_exit(0, 0);
    crawlproc_summary s;
    assert_int_equal(crawlproc_summary_read(&W.node[0], &s), 0);
    print_message("one node: %lld pages, %lld responses in %.1f s, end: %s\n", s.pages,
                  s.responses, s.seconds, s.end);
    assert_string_equal(s.end, "frontier drained");
    check_oracles(0, 1);
}

/* The negative control with real processes: two ordinary crawlds on the
 * same site at once (what a cluster without partitioning would be) fetch
 * hosts at overlapping times and fetch URLs twice, and the oracles say so. */
static void two_unpartitioned_nodes_fail_the_oracles(void **state)
{
    (void)state;
    testsite_req *v;
    size_t n;
    oracle_result r;
    world_begin(0);
    node_start(0);
    node_start(1);
    node_expect_exit(0, 0);
    node_expect_exit(1, 0);
    assert_int_equal(testsite_stop(&W.site), 0);
    assert_int_equal(testsite_log_read(&W.site, &v, &n), 0);
    oracle_opts o = { W.site.port, DELAY_MS * 1000LL, DELAY_MS * 1000LL / 10, 1 };
    assert_int_equal(oracle_check(v, n, &W.want, &o, &r), 0);
    testsite_log_free(v, n);
    print_message("two unpartitioned nodes: %zu agents, %zu duplicate fetches, %zu overlaps, "
                  "%zu short gaps\n",
                  r.agents, r.dup_fetches, r.overlaps, r.short_gaps);
    assert_int_equal(r.agents, 2);
    assert_true(r.missing == 0 && r.extra == 0); /* each fetched the whole set */
    assert_true(r.dup_fetches >= W.want.n / 2);
    assert_true(r.overlaps > 0 || r.short_gaps > 0);
}

/* ---- the cluster scenarios -------------------------------------------- */

/* Does this crawld crawl as a cluster node? One that cannot says so and
 * exits 1 at once. */
static int cluster_supported(void)
{
    static int known = -1;
    if (known >= 0)
        return known;
    crawlproc p;
    const char *const args[] = { "run", "--set", "cluster.redis=\"unix:/nonexistent/redis.sock\"",
                                 "--set", "crawl.seeds=[\"http://127.0.0.1:1/\"]", "--set",
                                 "storage.state_dir=\"/nonexistent/state\"", NULL };
    char dir[] = "/tmp/crawld-test-cluster-probe-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(crawlproc_start(&p, dir, "probe", args), 0);
    /* refused at once, or a node that waits for the Redis it cannot reach */
    int st = -ETIMEDOUT;
    char *err = NULL;
    for (int waited = 0; st == -ETIMEDOUT && waited < 20000; waited += 50) {
        st = crawlproc_wait(&p, 50);
        cr_free(err);
        err = crawlproc_output(&p, 2);
        if (st == -ETIMEDOUT && err != NULL && strstr(err, "Redis") != NULL)
            break;
    }
    if (st == -ETIMEDOUT)
        st = crawlproc_kill(&p);
    cr_free(err);
    err = crawlproc_output(&p, 2);
    known = !(st == 1 && err != NULL && strstr(err, "cannot crawl as a cluster node") != NULL);
    cr_free(err);
    const char *argv[] = { "/bin/rm", "-rf", dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
    return known;
}

#define NEED_CLUSTER()                                                                         \
    do {                                                                                       \
        if (!cluster_supported()) {                                                            \
            print_message("skipped: this crawld refuses cluster.redis (the partitioned crawl " \
                          "is not wired into `crawld run`)\n");                               \
            skip();                                                                            \
        }                                                                                      \
    } while (0)

/* The fault hooks a scenario needs, in the faults build. */
static int faults_binary_has(const char *hook)
{
    const char *bin = getenv("CRAWLD_FAULTS_BIN");
    if (bin == NULL || *bin == '\0')
        return 0;
    FILE *f = fopen(bin, "rb");
    if (f == NULL)
        return 0;
    size_t n = strlen(hook), have = 0;
    int c, found = 0;
    /* a plain scan for the environment variable's name in the binary */
    while (!found && (c = fgetc(f)) != EOF) {
        have = (unsigned char)c == (unsigned char)hook[have] ? have + 1
               : (unsigned char)c == (unsigned char)hook[0] ? 1 : 0;
        found = have == n;
    }
    fclose(f);
    return found;
}

static void start_nodes(int n)
{
    world_begin(1);
    for (int i = 0; i < n; i++)
        node_start(i);
}

static void plant(const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

/* Also: what an earlier run of node 0 left (a checkpoint it wrote and never
 * recorded, a half export, a rescue's file) goes at its start; another
 * node's file and other files in the folder stay. */
static void steady_state_three_nodes(void **state)
{
    (void)state;
    NEED_CLUSTER();
    world_begin(1);
    char shared[300], orphan[400], half[400], other[400], notes[400], rescue[400];
    snprintf(shared, sizeof shared, "%s/shared", W.dir);
    assert_int_equal(mkdir(shared, 0700), 0);
    snprintf(orphan, sizeof orphan, "%s/t-slot3-node-0-1700000000000.db", shared);
    snprintf(half, sizeof half, "%s/t-slot4-node-0-1700000000001.db.tmp", shared);
    snprintf(other, sizeof other, "%s/t-slot3-node-9-1700000000000.db", shared);
    snprintf(notes, sizeof notes, "%s/notes.txt", shared);
    snprintf(rescue, sizeof rescue, "%s/state0", W.dir);
    assert_int_equal(mkdir(rescue, 0700), 0);
    snprintf(rescue, sizeof rescue, "%s/state0/rescue-slot7.db", W.dir);
    const char *planted[] = { orphan, half, other, notes, rescue };
    for (int i = 0; i < 5; i++)
        plant(planted[i]);
    for (int i = 0; i < 3; i++)
        node_start(i);
    for (int i = 0; i < 3; i++)
        node_expect_exit(i, 0);
    check_oracles(0, 3);
    assert_int_not_equal(access(orphan, F_OK), 0);
    assert_int_not_equal(access(half, F_OK), 0);
    assert_int_not_equal(access(rescue, F_OK), 0);
    assert_int_equal(access(other, F_OK), 0);
    assert_int_equal(access(notes, F_OK), 0);
    char *err = crawlproc_output(&W.node[0], 2);
    assert_non_null(err);
    assert_non_null(strstr(err, "removed 3 checkpoint files an earlier run of this node left"));
    cr_free(err);
}

static void kill9_node_and_restart_within_grace(void **state)
{
    (void)state;
    NEED_CLUSTER();
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(crawlproc_kill(&W.node[1]), 128 + SIGKILL);
    node_start(1); /* same state folder and node id: it keeps its slots */
    for (int i = 0; i < 3; i++)
        node_expect_exit(i, 0);
    /* fetched again: what it had requested without a committed outcome
     * (in flight, or inside the commit window), as it said at its restart */
    int said = 0;
    long again = crawlproc_refetch_reported(&W.node[1], false, &said);
    print_message("the restarted node said it may fetch %ld URLs again\n", again);
    assert_int_equal(said, 1);
    check_oracles((size_t)again, 3);
}

/* What node gone had requested without a committed outcome, as each
 * other node counted it (from gone's dispatch log) for the slots it
 * rescued; fails unless some node rescued one. */
static size_t rescued_again(int gone)
{
    long again = 0;
    int said = 0, others = 0;
    char from[64];
    snprintf(from, sizeof from, "rescued from the store of node-%d ", gone);
    for (int i = 0; i < 3; i++) {
        int k = 0;
        if (i != gone)
            again += crawlproc_refetch_reported(&W.node[i], true, &k);
        said += k;
        /* only the gone node's slots are rescued: not those of a node
         * that exited at the end of the crawl before another one did */
        char *out = crawlproc_output(&W.node[i], 2);
        for (const char *p = out; p != NULL && (p = strstr(p, "rescued from the store of ")) != NULL;
             p++)
            others += strncmp(p, from, strlen(from)) != 0;
        cr_free(out);
    }
    print_message("%d rescues of other nodes' slots\n", others);
    assert_int_equal(others, 0);
    print_message("the rescuers said %ld URLs of node-%d may be fetched again (%d slots)\n",
                  again, gone, said);
    assert_true(said > 0);
    return (size_t)again;
}

static void kill9_node_for_good(void **state)
{
    (void)state;
    NEED_CLUSTER();
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(crawlproc_kill(&W.node[2]), 128 + SIGKILL);
    /* past the grace its slots move to the other two, rescued from its
     * store in its state folder (which they reach: one machine), its
     * outbox and its streams' pending entries */
    node_expect_exit(0, 0);
    node_expect_exit(1, 0);
    check_oracles(rescued_again(2), 3);
}

static void kill9_redis_and_restart_from_aof(void **state)
{
    (void)state;
    NEED_CLUSTER();
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(redisd_signal(W.redis, SIGKILL), 0);
    nap_ms(LEASE_MS); /* the nodes notice, pause and fence themselves */
    assert_int_equal(redisd_restart(W.redis), 0);
    for (int i = 0; i < 3; i++)
        node_expect_exit(i, 0);
    check_oracles(0, 3);
}

static void fourth_node_joins(void **state)
{
    (void)state;
    NEED_CLUSTER();
    start_nodes(3);
    wait_progress(W.want.n / 4);
    node_start(3);
    for (int i = 0; i < 4; i++)
        node_expect_exit(i, 0);
    check_oracles(0, 3);
}

static void node_leaves_on_sigterm(void **state)
{
    (void)state;
    NEED_CLUSTER();
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(crawlproc_signal(&W.node[2], SIGTERM), 0);
    int st = crawlproc_wait(&W.node[2], NODE_WAIT_MS);
    assert_true(st >= 0 && st < 128); /* it exits by itself, handing its slots over */
    node_expect_exit(0, 0);
    node_expect_exit(1, 0);
    check_oracles(0, 3);
}

/* The same without shared storage: node 2's slots go to the others with
 * their rows as checkpoints sent through Redis (nothing is written to a
 * shared folder), and the crawl is as exact. */
static void node_leaves_on_sigterm_without_shared_storage(void **state)
{
    (void)state;
    NEED_CLUSTER();
    shared_storage = false;
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(crawlproc_signal(&W.node[2], SIGTERM), 0);
    int st = crawlproc_wait(&W.node[2], NODE_WAIT_MS);
    assert_true(st >= 0 && st < 128);
    node_expect_exit(0, 0);
    node_expect_exit(1, 0);
    char *out = crawlproc_output(&W.node[2], 2);
    size_t sent = 0;
    for (const char *p = out; p != NULL && (p = strstr(p, " handed over: ")) != NULL; p++)
        sent++;
    print_message("node 2 handed %zu slots over through Redis\n", sent);
    assert_true(sent > 0);
    cr_free(out);
    char shared[200];
    snprintf(shared, sizeof shared, "%s/shared", W.dir);
    assert_int_not_equal(access(shared, F_OK), 0);
    check_oracles(0, 3);
}

/* One host's requests in the site's log: how many, the node of the last
 * one (-1: none), its robots.txt fetches, the agents, and the closest two
 * starts (-1: fewer than two). The log is read whole; a half-written last
 * line (the site still runs) makes it try again. */
typedef struct host_log {
    size_t requests, robots, agents;
    int last_node;
    long long last_start_us, min_gap_us;
} host_log;

static int node_of_ua(const char *ua)
{
    const char *p = strstr(ua, "crawld-test-node-");
    return p != NULL ? atoi(p + strlen("crawld-test-node-")) : -1;
}

static int cmp_start(const void *a, const void *b)
{
    long long x = (*(const testsite_req *const *)a)->start_us;
    long long y = (*(const testsite_req *const *)b)->start_us;
    return x < y ? -1 : x > y;
}

static void host_log_read(const char *host, host_log *out)
{
    testsite_req *v = NULL;
    size_t n = 0;
    int rc;
    for (int tries = 0; (rc = testsite_log_read(&W.site, &v, &n)) == -EBADMSG && tries < 50;
         tries++)
        nap_ms(5);
    assert_int_equal(rc, 0);
    testsite_req **h = cr_calloc(n ? n : 1, sizeof *h);
    assert_non_null(h);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].host, host) == 0)
            h[k++] = &v[i];
    qsort(h, k, sizeof *h, cmp_start);
    memset(out, 0, sizeof *out);
    out->last_node = -1;
    out->min_gap_us = -1;
    out->requests = k;
    unsigned seen = 0;
    for (size_t i = 0; i < k; i++) {
        int node = node_of_ua(h[i]->ua);
        out->robots += strstr(h[i]->target, "/robots.txt") != NULL;
        if (node >= 0 && node < 32 && !(seen & (1u << node))) {
            seen |= 1u << node;
            out->agents++;
        }
        long long gap = i > 0 ? h[i]->start_us - h[i - 1]->start_us : -1;
        if (i > 0 && (out->min_gap_us < 0 || gap < out->min_gap_us))
            out->min_gap_us = gap;
        out->last_node = node;
        out->last_start_us = h[i]->start_us;
    }
    cr_free(h);
    testsite_log_free(v, n);
}

/* Politeness across a move (the host's state travels in the checkpoint):
 * b.test's robots.txt asks for 1.2 s between requests, longer than a
 * hand-over takes. Right after one of its requests its owner leaves on
 * SIGTERM; the new owner must neither ask b.test sooner than 1.2 s after
 * that request (the old owner's next allowed time came with the slot) nor
 * fetch its robots.txt again (the rules came along, still fresh). */
static void crawl_delay_holds_across_a_handover(void **state)
{
    (void)state;
    NEED_CLUSTER();
    const long long delay_us = 1200000, slack_us = 15000;
    site_crawl_delay = "1.2";
    start_nodes(3);
    host_log hl;
    /* a few pages in (robots.txt and three), then at its next request */
    size_t had = 0;
    for (int waited = 0;; waited += 10) {
        host_log_read("b.test", &hl);
        if (had >= 4 && hl.requests > had)
            break;
        had = hl.requests;
        if (waited > NODE_WAIT_MS)
            fail_msg("b.test had only %zu requests after %d ms", hl.requests, NODE_WAIT_MS);
        nap_ms(10);
    }
    int owner = hl.last_node;
    assert_true(owner >= 0 && owner < 3);
    print_message("b.test: node %d made its request %zu; it leaves\n", owner, hl.requests);
    assert_int_equal(crawlproc_signal(&W.node[owner], SIGTERM), 0);
    int st = crawlproc_wait(&W.node[owner], NODE_WAIT_MS);
    assert_true(st >= 0 && st < 128);
    for (int i = 0; i < 3; i++)
        if (i != owner)
            node_expect_exit(i, 0);
    host_log_read("b.test", &hl);
    print_message("b.test: %zu requests by %zu nodes, %zu of robots.txt, closest starts %lld us"
                  " apart (Crawl-delay %lld us)\n",
                  hl.requests, hl.agents, hl.robots, hl.min_gap_us, delay_us);
    assert_int_equal(hl.agents, 2);  /* it moved in the middle of its pages */
    assert_int_equal(hl.robots, 1);  /* the rules moved with it */
    assert_true(hl.min_gap_us >= delay_us - slack_us);
    check_oracles(0, 3);
}

/* A node dies at a fault point, is restarted, and the crawl still fetches
 * each URL once. The faults build's hook (crawler/clusterrun.c):
 * CRAWLD_CLUSTER_FAULT=after-xadd or after-apply sets the node's
 * xchg_opts.fault (XCHG_FAULT_AFTER_XADD / _AFTER_APPLY) and the process
 * kills itself (SIGKILL) where the xchg stops (the first time after
 * CRAWLD_CLUSTER_FAULT_PAGES responses), once no fetch is in flight and
 * every finished page's outcome is committed. */
static void crash_at_fault_point(const char *point)
{
    NEED_CLUSTER();
    if (!faults_binary_has("CRAWLD_CLUSTER_FAULT"))
        fail_msg("the faults build (CRAWLD_FAULTS_BIN) has no CRAWLD_CLUSTER_FAULT hook");
    start_nodes(2);
    /* the third node runs the faults build, told where to die: in the
     * middle of its share, fetches running (a fifth of it: 100 responses) */
    setenv("CRAWLD_CLUSTER_FAULT", point, 1);
    setenv("CRAWLD_CLUSTER_FAULT_PAGES", "100", 1);
    node_config(2);
    const char *const args[] = { "run", "-c", W.cfg[2], NULL };
    int rc = crawlproc_start_bin(&W.node[2], getenv("CRAWLD_FAULTS_BIN"), W.dir, "node2", args);
    unsetenv("CRAWLD_CLUSTER_FAULT");
    unsetenv("CRAWLD_CLUSTER_FAULT_PAGES");
    assert_int_equal(rc, 0);
    int st = crawlproc_wait(&W.node[2], NODE_WAIT_MS);
    assert_int_equal(st, 128 + SIGKILL); /* it died at the point, as it says */
    char *said = crawlproc_output(&W.node[2], 2);
    assert_non_null(said);
    int at_point = strstr(said, "stopped at the fault point (outcomes committed)") != NULL;
    if (!at_point)
        print_message("node2 said:\n%s\n", said);
    cr_free(said);
    assert_true(at_point);
    node_start(2);
    for (int i = 0; i < 3; i++)
        node_expect_exit(i, 0);
    check_oracles(0, 3);
}

static void crash_after_commit_before_xack(void **state)
{
    (void)state;
    crash_at_fault_point("after-apply"); /* XCHG_FAULT_AFTER_APPLY */
}

static void crash_after_xadd_before_outbox_delete(void **state)
{
    (void)state;
    crash_at_fault_point("after-xadd"); /* XCHG_FAULT_AFTER_XADD */
}

/* SIGSTOP one node for stop_ms, then SIGCONT: it fenced itself (no
 * overlap); what it had in flight may be fetched again (past the grace:
 * what the others rescued without an outcome, as they said). */
static void sigstop_then_sigcont(int stop_ms, int past_grace)
{
    start_nodes(3);
    wait_progress(W.want.n / 3);
    assert_int_equal(crawlproc_signal(&W.node[1], SIGSTOP), 0);
    nap_ms(stop_ms);
    assert_int_equal(crawlproc_signal(&W.node[1], SIGCONT), 0);
    for (int i = 0; i < 3; i++)
        node_expect_exit(i, 0);
    check_oracles(past_grace ? rescued_again(1) : CONNECTIONS, 3);
}

/* The old owner dies between the release and the drop (the faults build's
 * CRAWLD_CLUSTER_FAULT=after-release, once a fourth node joined and the
 * map moved slots away from it): the slot's checkpoint is recorded, its
 * rows still in the dead node's store. Restarted within the grace, it
 * must drop them once the new owner has loaded them (else they stay
 * queued behind its gate and it never reaches quiescence), and the
 * crawl ends exact. */
static void crash_between_release_and_drop(void **state)
{
    (void)state;
    NEED_CLUSTER();
    if (!faults_binary_has("after-release"))
        fail_msg("the faults build (CRAWLD_FAULTS_BIN) has no after-release fault point");
    start_nodes(2);
    /* armed after 50 responses: not at the moves of the start */
    setenv("CRAWLD_CLUSTER_FAULT", "after-release", 1);
    setenv("CRAWLD_CLUSTER_FAULT_PAGES", "50", 1);
    node_config(2);
    const char *const args[] = { "run", "-c", W.cfg[2], NULL };
    int rc = crawlproc_start_bin(&W.node[2], getenv("CRAWLD_FAULTS_BIN"), W.dir, "node2", args);
    unsetenv("CRAWLD_CLUSTER_FAULT");
    unsetenv("CRAWLD_CLUSTER_FAULT_PAGES");
    assert_int_equal(rc, 0);
    wait_progress(W.want.n / 4);
    node_start(3); /* slots move to it, some from node 2, which dies there */
    int st = crawlproc_wait(&W.node[2], NODE_WAIT_MS);
    assert_int_equal(st, 128 + SIGKILL);
    char *said = crawlproc_output(&W.node[2], 2);
    assert_non_null(said);
    int at_point = strstr(said, "stopped at the fault point (outcomes committed)") != NULL &&
                   strstr(said, "handed over:") != NULL;
    if (!at_point)
        print_message("node2 said:\n%s\n", said);
    cr_free(said);
    assert_true(at_point);
    node_start(2); /* same state folder and node id, within the grace */
    for (int i = 0; i < 4; i++)
        node_expect_exit(i, 0);
    said = crawlproc_output(&W.node[2], 2);
    assert_non_null(said);
    int dropped = strstr(said, "which loaded it: its") != NULL;
    if (!dropped)
        print_message("restarted node2 said:\n%s\n", said);
    cr_free(said);
    assert_true(dropped);
    int told = 0;
    long again = crawlproc_refetch_reported(&W.node[2], false, &told);
    check_oracles(again > 0 ? (size_t)again : 0, 3);
}

/* Past its lease, within the grace: its slots wait for it. */
static void sigstop_past_lease_then_sigcont(void **state)
{
    (void)state;
    NEED_CLUSTER();
    sigstop_then_sigcont(3 * LEASE_MS, 0);
}

/* Past its lease and the grace: the others take its slots meanwhile. */
static void sigstop_past_grace_then_sigcont(void **state)
{
    (void)state;
    NEED_CLUSTER();
    sigstop_then_sigcont(2 * LEASE_MS + GRACE_MS, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(oracles_catch_overlap_spacing_duplicates_and_set, teardown),
        cmocka_unit_test_teardown(single_node_meets_the_oracles, teardown),
        cmocka_unit_test_teardown(two_unpartitioned_nodes_fail_the_oracles, teardown),
        cmocka_unit_test_teardown(steady_state_three_nodes, teardown),
        cmocka_unit_test_teardown(kill9_node_and_restart_within_grace, teardown),
        cmocka_unit_test_teardown(kill9_node_for_good, teardown),
        cmocka_unit_test_teardown(kill9_redis_and_restart_from_aof, teardown),
        cmocka_unit_test_teardown(fourth_node_joins, teardown),
        cmocka_unit_test_teardown(node_leaves_on_sigterm, teardown),
        cmocka_unit_test_teardown(node_leaves_on_sigterm_without_shared_storage, teardown),
        cmocka_unit_test_teardown(crawl_delay_holds_across_a_handover, teardown),
        cmocka_unit_test_teardown(crash_between_release_and_drop, teardown),
        cmocka_unit_test_teardown(crash_after_commit_before_xack, teardown),
        cmocka_unit_test_teardown(crash_after_xadd_before_outbox_delete, teardown),
        cmocka_unit_test_teardown(sigstop_past_lease_then_sigcont, teardown),
        cmocka_unit_test_teardown(sigstop_past_grace_then_sigcont, teardown),
    };
    const char *only = getenv("CRAWLD_TEST_ONLY"); /* one scenario by name (* wildcards) */
    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    /* CRAWLD_TEST_SHARD=k/n: every n-th scenario from the k-th (tests/run.sh
     * runs the shards side by side: the scenarios mostly wait on leases) */
    enum { N = sizeof tests / sizeof tests[0] };
    struct CMUnitTest pick[N];
    size_t n = 0;
    unsigned k = 0, of = 1;
    const char *shard = getenv("CRAWLD_TEST_SHARD");
    if (shard != NULL && *shard != '\0' && (sscanf(shard, "%u/%u", &k, &of) != 2 || of == 0 ||
                                             k >= of)) {
        fprintf(stderr, "CRAWLD_TEST_SHARD=%s: want k/n with k < n\n", shard);
        return 2;
    }
    for (size_t i = 0; i < N; i++)
        if (i % of == k)
            pick[n++] = tests[i];
    return _cmocka_run_group_tests("tests", pick, n, NULL, NULL);
}
