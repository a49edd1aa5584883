/* tests/test_cluster: cluster/ against a real redis-server (started here on
 * a Unix socket in a temp folder, see tests/support/redisd): the slot map,
 * the [cluster] options, the Redis connection (timeouts, reconnect, the
 * append-only file), membership (join, leave, a paused node fencing
 * itself). Random points print their seed; CRAWLD_TEST_SEED replays one. */
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster/ckptdir.h"
#include "cluster/member.h"
#include "cluster/quiet.h"
#include "cluster/redis.h"
#include "cluster/slotmap.h"
#include "common/clock.h"
#include "config/config.h"
#include "frontier/frontier.h"
#include "storage/db.h"
#include "storage/outbox.h"
#include "tests/support/proc.h"
#include "tests/support/redisd.h"

static uint64_t rng;

/* What a failed assertion (which longjmps out of the test) would leave
 * running: stopped by the teardown. */
static redisd *live_redis;
static pid_t live_nodes[2];

static redisd *start_redis(void)
{
    live_redis = redisd_start();
    return live_redis;
}

static void stop_redis(redisd *d)
{
    redisd_stop(d);
    if (d == live_redis)
        live_redis = NULL;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        if (live_nodes[i] > 0) {
            int st;
            kill(live_nodes[i], SIGKILL);
            waitpid(live_nodes[i], &st, 0);
            live_nodes[i] = 0;
        }
    }
    if (live_redis != NULL)
        stop_redis(live_redis);
    return 0;
}

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void seed_rng(const char *test)
{
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)cr_wall_ms();
    if (seed == 0)
        seed = 1;
    printf("# %s: seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n", test,
           (unsigned long long)seed, (unsigned long long)seed);
    rng = seed;
}

static void nap_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* ---- slot map (no Redis) ---------------------------------------------- */

#define MAP_SLOTS 4096

static void random_names(char names[][32], const char **ptr, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], 32, "node-%016llx", (unsigned long long)next_rand());
        ptr[i] = names[i];
    }
}

/* A join moves only slots to the new node, about slots/(n+1) of them. */
static void slotmap_join_moves_about_slots_over_nodes(void **state)
{
    (void)state;
    seed_rng("slotmap_join");
    static uint32_t before[MAP_SLOTS], after[MAP_SLOTS];
    char names[8][32];
    const char *ptr[8];
    random_names(names, ptr, 8);
    for (size_t n = 1; n < 8; n++) {
        slotmap_assign(ptr, n, MAP_SLOTS, before);
        slotmap_assign(ptr, n + 1, MAP_SLOTS, after);
        size_t moved = 0;
        for (uint32_t s = 0; s < MAP_SLOTS; s++) {
            if (before[s] != after[s]) {
                assert_int_equal(after[s], n); /* only to the newcomer */
                moved++;
            }
        }
        double want = (double)MAP_SLOTS / (double)(n + 1);
        if (moved < 0.8 * want || moved > 1.2 * want)
            fail_msg("%zu -> %zu nodes moved %zu slots, expected about %.0f", n, n + 1, moved, want);
    }
}

/* A leave hands on only the leaver's slots, spread over the others. */
static void slotmap_leave_moves_only_the_leavers_slots(void **state)
{
    (void)state;
    seed_rng("slotmap_leave");
    static uint32_t before[MAP_SLOTS], after[MAP_SLOTS];
    char names[6][32];
    const char *ptr[6], *rest[5];
    random_names(names, ptr, 6);
    size_t gone = (size_t)(next_rand() % 6);
    size_t k = 0;
    for (size_t i = 0; i < 6; i++)
        if (i != gone)
            rest[k++] = ptr[i];
    slotmap_assign(ptr, 6, MAP_SLOTS, before);
    slotmap_assign(rest, 5, MAP_SLOTS, after);
    size_t got[5] = { 0 };
    for (uint32_t s = 0; s < MAP_SLOTS; s++) {
        const char *was = ptr[before[s]], *now = rest[after[s]];
        if (before[s] != gone)
            assert_string_equal(was, now);
        else
            got[after[s]]++;
    }
    for (size_t i = 0; i < 5; i++)
        assert_true(got[i] > 0);
}

static void slot_of_spreads_hosts(void **state)
{
    (void)state;
    size_t count[64] = { 0 };
    char host[64];
    for (int i = 0; i < 12800; i++) {
        int n = snprintf(host, sizeof host, "h%d.example.org", i);
        uint32_t s = slotmap_slot_of(host, (size_t)n, 64);
        assert_true(s < 64);
        assert_int_equal(s, slotmap_slot_of(host, (size_t)n, 64));
        count[s]++;
    }
    for (int s = 0; s < 64; s++)
        if (count[s] < 130 || count[s] > 270)
            fail_msg("slot %d got %zu of 12800 hosts (mean 200)", s, count[s]);
}

/* ---- [cluster] options -------------------------------------------------- */

static void expect_config_error(const char *text, const char *msg)
{
    crawl_config c;
    config_error err;
    assert_int_equal(config_init(&c), 0);
    assert_true(config_load_text(&c, "x.toml", text, strlen(text), false, &err) < 0);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("for %s\n  got:  %s\n  want: %s", text, err.msg, msg);
    config_release(&c);
}

static void config_cluster_defaults_and_errors(void **state)
{
    (void)state;
    crawl_config c;
    config_error err;
    assert_int_equal(config_init(&c), 0);
    assert_string_equal(c.cluster.redis, "");
    assert_string_equal(c.cluster.crawl_id, "crawld");
    assert_string_equal(c.cluster.node_id, "");
    assert_int_equal(c.cluster.slots, 64);
    assert_int_equal(c.cluster.lease_ms, 10000);
    const char *ok = "[cluster]\nredis = \"tcp:10.0.0.1:6379\"\nslots = 16\n";
    assert_int_equal(config_load_text(&c, "x.toml", ok, strlen(ok), false, &err), 0);
    assert_string_equal(c.cluster.redis, "tcp:10.0.0.1:6379");
    assert_int_equal(config_set(&c, "cluster.redis=\"unix:/run/redis.sock\"", &err), 0);
    assert_string_equal(c.cluster.redis, "unix:/run/redis.sock");
    config_release(&c);
    expect_config_error("[cluster]\nredis = \"tcp:host\"\n",
                        "x.toml:2:1: cluster.redis: 'tcp:host' must read tcp:HOST:PORT");
    expect_config_error("[cluster]\n  redis = \"tcp:h:0\"\n",
                        "x.toml:2:3: cluster.redis: port '0' must be a number 1..65535");
    expect_config_error("[cluster]\nredis = \"unix:sock\"\n",
                        "x.toml:2:1: cluster.redis: 'unix:' must be followed by an absolute socket path, not 'sock'");
    expect_config_error("[cluster]\nredis = \"localhost:6379\"\n",
                        "x.toml:2:1: cluster.redis: 'localhost:6379' must be \"unix:/PATH\", \"tcp:HOST:PORT\" or \"\"");
    expect_config_error("[cluster]\nslots = 0\n", "x.toml:2:1: cluster.slots = 0 is out of range 1..4096");
    expect_config_error("[cluster]\nlease_ms = 50\n",
                        "x.toml:2:1: cluster.lease_ms = 50 is out of range 100..600000");
}

/* ---- the Redis connection ------------------------------------------------ */

static redis_conn *connect_to(const redisd *d, int timeout_ms)
{
    redis_conn *c = NULL;
    char err[256];
    if (redis_open(redisd_addr(d), timeout_ms, &c, err, sizeof err) < 0)
        fail_msg("%s", err);
    return c;
}

static void redis_cmd_ok(redis_conn *c, const char *a, const char *b, const char *v)
{
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, a, b, v, NULL), 0);
    assert_int_not_equal(redis_reply_type(r), REDIS_T_ERROR);
    redis_reply_free(r);
}

static char *get_str(redis_conn *c, const char *k)
{
    redis_reply *r = NULL;
    if (redis_cmd(c, &r, "GET", k, NULL) < 0)
        return NULL;
    char *s = redis_reply_type(r) == REDIS_T_STR ? strdup(redis_reply_str(r, NULL)) : NULL;
    redis_reply_free(r);
    return s;
}

static void redis_open_names_the_address_when_refused(void **state)
{
    (void)state;
    redis_conn *c = NULL;
    char err[256];
    assert_true(redis_open("unix:/nonexistent/redis.sock", 500, &c, err, sizeof err) < 0);
    assert_null(c);
    assert_non_null(strstr(err, "unix:/nonexistent/redis.sock"));
    assert_non_null(strstr(err, "cannot connect"));
}

/* Pipelined commands get their replies in order; errors are replies. */
static void redis_pipeline_and_reply_types(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    const char *set[] = { "SET", "k", "v\0w" };
    size_t lens[] = { 3, 1, 3 };
    const char *incr[] = { "INCR", "n" }, *get[] = { "GET", "k" }, *bad[] = { "INCR", "k" };
    assert_int_equal(redis_append(c, 3, set, lens), 0);
    assert_int_equal(redis_append(c, 2, incr, NULL), 0);
    assert_int_equal(redis_append(c, 2, get, NULL), 0);
    assert_int_equal(redis_append(c, 2, bad, NULL), 0);
    redis_reply *r[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(redis_read(c, &r[i]), 0);
    assert_int_equal(redis_reply_type(r[0]), REDIS_T_STATUS);
    assert_int_equal(redis_reply_type(r[1]), REDIS_T_INT);
    assert_int_equal(redis_reply_int(r[1]), 1);
    size_t len;
    const char *v = redis_reply_str(r[2], &len);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "v\0w", 3);
    assert_int_equal(redis_reply_type(r[3]), REDIS_T_ERROR);
    for (int i = 0; i < 4; i++)
        redis_reply_free(r[i]);
    redis_free(c);
    stop_redis(d);
}

/* A server that stops answering fails the command after the timeout (the
 * caller never hangs); after it answers again, a reconnect works. */
static void redis_timeout_then_reconnect(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 300);
    redis_cmd_ok(c, "SET", "a", "1");
    assert_int_equal(redisd_signal(d, SIGSTOP), 0);
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "GET", "a", NULL), -EPIPE);
    assert_null(r);
    assert_false(redis_alive(c));
    assert_non_null(strstr(redis_error(c), redisd_addr(d)));
    assert_int_equal(redis_cmd(c, &r, "GET", "a", NULL), -EPIPE); /* stays dead */
    assert_int_equal(redisd_signal(d, SIGCONT), 0);
    char err[256];
    assert_int_equal(redis_reconnect(c, err, sizeof err), 0);
    char *v = get_str(c, "a");
    assert_non_null(v);
    assert_string_equal(v, "1");
    free(v);
    redis_free(c);
    stop_redis(d);
}

/* cluster/ckptdir: a hand-over's file name, whose files are a node's own,
 * and the sweep that removes a node's files no record keeps (and nothing
 * else: other nodes', other crawls', other files). */
static void touch_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static bool exists_in(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static void checkpoint_files_of_a_node_are_swept(void **state)
{
    (void)state;
    char dir[] = "/tmp/crawld-test-ckptdir-XXXXXX", name[600];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(ckptdir_name(name, sizeof name, dir, "t", 5, "host:/st/a", 1700), 0);
    char want[600];
    snprintf(want, sizeof want, "%s/t-slot5-host__st_a-1700.db", dir);
    assert_string_equal(name, want);
    assert_int_equal(ckptdir_name(name, 20, dir, "t", 5, "host:/st/a", 1700), -ENAMETOOLONG);
    const char *id = "host:/st/a";
    assert_true(ckptdir_is_own("t-slot5-host__st_a-1700.db", "t", id));
    assert_true(ckptdir_is_own("t-slot12-host__st_a-9.db.tmp", "t", id));
    const char *not_own[] = { "t-slot5-host__st_b-1700.db", "u-slot5-host__st_a-1700.db",
                              "t-slot-host__st_a-1700.db", "t-slot5-host__st_a-.db",
                              "t-slot5-host__st_a-17x.db", "t-slot5-host__st_a-1700.dbx",
                              "tt-slot5-host__st_a-1700.db", "t-slot5-host__st_a-1-1700.db",
                              "rescue-slot5.db", "" };
    for (size_t i = 0; i < sizeof not_own / sizeof not_own[0]; i++)
        if (ckptdir_is_own(not_own[i], "t", id))
            fail_msg("'%s' taken for a file of %s", not_own[i], id);
    const char *files[] = { "t-slot1-host__st_a-10.db",     /* orphan: goes */
                            "t-slot2-host__st_a-11.db.tmp", /* a half export: goes */
                            "t-slot3-host__st_a-12.db",     /* recorded: stays */
                            "t-slot4-host__st_a-13.db",     /* recorded by another path: stays */
                            "t-slot1-host__st_b-10.db",     /* another node's: stays */
                            "u-slot1-host__st_a-10.db",     /* another crawl's: stays */
                            "notes.txt" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        touch_file(dir, files[i]);
    const char *keep[] = { "/elsewhere/t-slot3-host__st_a-12.db", "t-slot4-host__st_a-13.db" };
    assert_int_equal(ckptdir_sweep(dir, "t", id, keep, 2), 2);
    const bool stays[] = { false, false, true, true, true, true, true };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (exists_in(dir, files[i]) != stays[i])
            fail_msg("%s: %s", files[i], stays[i] ? "removed" : "left");
    assert_int_equal(ckptdir_sweep(dir, "t", id, keep, 2), 0); /* nothing more */
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(name, sizeof name, "%s/%s", dir, files[i]);
        unlink(name);
    }
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(ckptdir_sweep(dir, "t", id, NULL, 0), -ENOENT);
}

/* member_recorded_ckpts: the file each slot record names; a record of a
 * checkpoint sent through Redis names none; a record that is no hash is
 * an error, and so is an unreachable server (nothing is known then). */
typedef struct rec_seen {
    int n;
    uint32_t slot[8];
    char path[8][64];
} rec_seen;

static void rec_note(void *arg, uint32_t slot, const char *path)
{
    rec_seen *rs = arg;
    assert_true(rs->n < 8);
    rs->slot[rs->n] = slot;
    snprintf(rs->path[rs->n], sizeof rs->path[0], "%s", path);
    rs->n++;
}

static void recorded_checkpoints_are_listed(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 1000);
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "HSET", "crawld:t:ckpt:1", "path", "/sh/t-slot1-n-5.db",
                               "epoch", "3", NULL), 0);
    redis_reply_free(r);
    assert_int_equal(redis_cmd(c, &r, "HSET", "crawld:t:ckpt:6", "path", "redis:crawld:t:ckd:6",
                               NULL), 0);
    redis_reply_free(r);
    assert_int_equal(redis_cmd(c, &r, "HSET", "crawld:t:ckpt:7", "path", "rel-slot7.db", NULL), 0);
    redis_reply_free(r);
    assert_int_equal(redis_cmd(c, &r, "HSET", "crawld:other:ckpt:2", "path", "/x.db", NULL), 0);
    redis_reply_free(r);
    rec_seen rs = { 0 };
    char err[256] = "";
    assert_int_equal(member_recorded_ckpts(redisd_addr(d), "t", 8, 1000, rec_note, &rs, err,
                                           sizeof err), 0);
    assert_int_equal(rs.n, 2);
    assert_int_equal(rs.slot[0], 1);
    assert_string_equal(rs.path[0], "/sh/t-slot1-n-5.db");
    assert_int_equal(rs.slot[1], 7);
    assert_string_equal(rs.path[1], "rel-slot7.db");
    /* slots past the count are not asked */
    rs.n = 0;
    assert_int_equal(member_recorded_ckpts(redisd_addr(d), "t", 2, 1000, rec_note, &rs, err,
                                           sizeof err), 0);
    assert_int_equal(rs.n, 1);
    /* a record of another type: an error naming the key */
    redis_cmd_ok(c, "SET", "crawld:t:ckpt:0", "junk");
    rs.n = 0;
    assert_true(member_recorded_ckpts(redisd_addr(d), "t", 8, 1000, rec_note, &rs, err,
                                      sizeof err) < 0);
    assert_non_null(strstr(err, "crawld:t:ckpt:0"));
    redis_free(c);
    stop_redis(d);
    /* nobody listening */
    err[0] = '\0';
    assert_true(member_recorded_ckpts("unix:/nonexistent/redis.sock", "t", 8, 300, rec_note, &rs,
                                      err, sizeof err) < 0);
    assert_non_null(strstr(err, "/nonexistent/redis.sock"));
}

/* kill -9 the server: what it acknowledged is in its append-only file
 * (appendfsync always) and comes back on restart. */
static void redis_restart_from_append_only_file(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    char k[32], v[32];
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "v%d", i * 7);
        redis_cmd_ok(c, "SET", k, v);
    }
    assert_int_equal(redisd_signal(d, SIGKILL), 0);
    redis_reply *r = NULL;
    assert_true(redis_cmd(c, &r, "GET", "k1", NULL) < 0);
    char err[256];
    assert_true(redis_reconnect(c, err, sizeof err) < 0);
    assert_int_equal(redisd_restart(d), 0);
    assert_int_equal(redis_reconnect(c, err, sizeof err), 0);
    for (int i = 0; i < 200; i++) {
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "v%d", i * 7);
        char *got = get_str(c, k);
        if (got == NULL || strcmp(got, v) != 0)
            fail_msg("%s: got %s, want %s after kill -9 and restart", k, got ? got : "(nil)", v);
        free(got);
    }
    redis_free(c);
    stop_redis(d);
}

/* ---- membership ------------------------------------------------------------ */

static member *join(const redisd *d, const char *id, uint32_t slots, int64_t lease_ms)
{
    member_opts o = { .redis = redisd_addr(d), .crawl_id = "t", .node_id = id,
                      .slots = slots, .lease_ms = lease_ms };
    member *m = NULL;
    char err[256];
    if (member_open(&o, &m, err, sizeof err) < 0)
        fail_msg("member_open %s: %s", id, err);
    return m;
}

/* Ticks every member until each may fetch exactly the slots that
 * rendezvous hashing over names[0..n) gives it. 0, or -1 after 400 rounds. */
static int settle(member **m, const char **names, size_t n, uint32_t slots)
{
    uint32_t owner[4096];
    slotmap_assign(names, n, slots, owner);
    for (int round = 0; round < 400; round++) {
        for (size_t i = 0; i < n; i++)
            assert_int_equal(member_tick(m[i], cr_mono_ms()), 0);
        int ok = 1;
        int64_t now = cr_mono_ms();
        for (uint32_t s = 0; s < slots && ok; s++)
            for (size_t i = 0; i < n && ok; i++)
                ok = member_may_fetch(m[i], s, now) == (owner[s] == i);
        if (ok)
            return 0;
        nap_ms(1);
    }
    return -1;
}

/* Exactly one member may fetch each slot, and it is the rendezvous owner
 * among names[0..n); the slot's lease key in Redis names it. */
static void expect_owners(member **m, const char **names, size_t n, uint32_t slots,
                          redis_conn *c, uint32_t *owner /* OUT */)
{
    slotmap_assign(names, n, slots, owner);
    int64_t now = cr_mono_ms();
    for (uint32_t s = 0; s < slots; s++) {
        for (size_t i = 0; i < n; i++)
            if (member_may_fetch(m[i], s, now) != (owner[s] == i))
                fail_msg("slot %u: %s may_fetch %d, owner %s", s, names[i],
                         member_may_fetch(m[i], s, now), names[owner[s]]);
        char k[64];
        snprintf(k, sizeof k, "crawld:t:slot:%u", s);
        char *v = get_str(c, k);
        assert_non_null(v);
        assert_string_equal(v, names[owner[s]]);
        free(v);
    }
}

static void members_join_and_leave_move_few_slots(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    const uint32_t slots = 64;
    const char *names[4] = { "node-a", "node-b", "node-c", "node-d" };
    member *m[4];
    for (int i = 0; i < 3; i++)
        m[i] = join(d, names[i], slots, 5000);
    assert_int_equal(settle(m, names, 3, slots), 0);
    uint32_t three[64], four[64], back[64];
    expect_owners(m, names, 3, slots, c, three);
    member_info in;
    member_get_info(m[0], &in);
    uint64_t epoch3 = in.epoch;
    assert_true(epoch3 >= 1);

    /* A fourth joins: only slots that go to it move. */
    m[3] = join(d, names[3], slots, 5000);
    assert_int_equal(settle(m, names, 4, slots), 0);
    expect_owners(m, names, 4, slots, c, four);
    member_get_info(m[3], &in);
    assert_true(in.epoch > epoch3);
    size_t moved = 0;
    for (uint32_t s = 0; s < slots; s++) {
        if (three[s] != four[s]) {
            assert_int_equal(four[s], 3);
            moved++;
        }
    }
    assert_true(moved > 0 && moved < slots / 2);

    /* node-b leaves cleanly: its slots move at once, nobody else's. */
    assert_int_equal(member_leave(m[1]), 0);
    for (uint32_t s = 0; s < slots; s++)
        assert_false(member_may_fetch(m[1], s, cr_mono_ms()));
    member *rest[3] = { m[0], m[2], m[3] };
    const char *rnames[3] = { names[0], names[2], names[3] };
    assert_int_equal(settle(rest, rnames, 3, slots), 0);
    expect_owners(rest, rnames, 3, slots, c, back);
    for (uint32_t s = 0; s < slots; s++)
        if (four[s] != 1)
            assert_string_equal(names[four[s]], rnames[back[s]]);
    for (int i = 0; i < 4; i++)
        member_free(m[i]);
    redis_free(c);
    stop_redis(d);
}

/* A joining node takes the crawl's slot count, not its own. */
static void slot_count_is_fixed_by_the_first_node(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    member *a = join(d, "first", 32, 5000);
    member *b = join(d, "second", 64, 5000);
    assert_int_equal(member_slots(a), 32);
    assert_int_equal(member_slots(b), 32);
    member_free(a);
    member_free(b);
    stop_redis(d);
}

/* A member cut off from Redis stops fetching within half a lease, and
 * takes its slots again when Redis is back. */
static void member_fences_itself_while_redis_is_unreachable(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    const int64_t lease = 400;
    const char *solo[] = { "solo" };
    member *m = join(d, solo[0], 8, lease);
    assert_int_equal(settle(&m, solo, 1, 8), 0);
    assert_true(member_may_fetch(m, 0, cr_mono_ms()));
    assert_int_equal(redisd_signal(d, SIGKILL), 0);
    int64_t cut = cr_mono_ms();
    assert_int_equal(member_tick(m, cr_mono_ms()), -EPIPE);
    member_info in;
    member_get_info(m, &in);
    assert_false(in.redis_up);
    assert_true(in.error[0] != '\0');
    /* no renewal got through: by half a lease after the last one, fenced */
    while (cr_mono_ms() < cut + lease / 2 + 5) {
        member_tick(m, cr_mono_ms());
        nap_ms(20);
    }
    for (uint32_t s = 0; s < 8; s++)
        assert_false(member_may_fetch(m, s, cr_mono_ms()));
    assert_int_equal(redisd_restart(d), 0);
    assert_int_equal(settle(&m, solo, 1, 8), 0);
    member_get_info(m, &in);
    assert_true(in.redis_up);
    assert_true(member_may_fetch(m, 0, cr_mono_ms()));
    member_free(m);
    stop_redis(d);
}

/* ---- a paused node (SIGSTOP) fences itself ----------------------------- */

#define FENCE_SLOTS 16

typedef struct sample {
    int64_t t;     /* monotonic ms; -1: the last record (mask = leases lost) */
    uint64_t mask; /* slots this node may fetch at t */
} sample;

static volatile sig_atomic_t node_stop;

static void on_term(int sig)
{
    (void)sig;
    node_stop = 1;
}

/* The child: one member, ticking on time, sampling member_may_fetch every
 * 2 ms into fd, as a fetcher would ask it before each dispatch. */
static void run_node(const char *addr, const char *id, int64_t lease, int fd)
{
    signal(SIGTERM, on_term);
    member_opts o = { .redis = addr, .crawl_id = "t", .node_id = id,
                      .slots = FENCE_SLOTS, .lease_ms = lease };
    member *m = NULL;
    char err[256];
    if (member_open(&o, &m, err, sizeof err) < 0) {
        fprintf(stderr, "%s: %s\n", id, err);
        _exit(3);
    }
    int64_t next = 0;
    while (!node_stop) {
        int64_t t = cr_mono_ms();
        if (t >= next) {
            member_tick(m, t);
            next = t + member_tick_ms(m);
        }
        sample sm = { cr_mono_ms(), 0 };
        for (uint32_t s = 0; s < FENCE_SLOTS; s++)
            if (member_may_fetch(m, s, sm.t))
                sm.mask |= 1ull << s;
        if (write(fd, &sm, sizeof sm) != (ssize_t)sizeof sm)
            _exit(4);
        nap_ms(2);
    }
    member_info in;
    member_get_info(m, &in);
    member_leave(m);
    sample last = { -1, in.lost };
    if (write(fd, &last, sizeof last) != (ssize_t)sizeof last)
        _exit(4);
    member_free(m);
    _exit(0);
}

static pid_t spawn_node(const redisd *d, const char *id, int64_t lease, const char *path)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        run_node(redisd_addr(d), id, lease, fileno(f));
    fclose(f);
    return pid;
}

/* Waits until slot s's lease names want[s] (NULL: anyone) for every slot. */
static int wait_slots(redis_conn *c, const char *const *want, int64_t within_ms)
{
    int64_t end = cr_mono_ms() + within_ms;
    while (cr_mono_ms() < end) {
        int ok = 1;
        for (uint32_t s = 0; s < FENCE_SLOTS && ok; s++) {
            char k[64];
            snprintf(k, sizeof k, "crawld:t:slot:%u", s);
            char *v = get_str(c, k);
            ok = v != NULL && strcmp(v, want[s]) == 0;
            free(v);
        }
        if (ok)
            return 0;
        nap_ms(10);
    }
    return -1;
}

static sample *read_samples(const char *path, size_t *n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t cap = 1024;
    sample *v = malloc(cap * sizeof *v);
    *n = 0;
    while (v != NULL && fread(&v[*n], sizeof *v, 1, f) == 1)
        if (++*n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
    fclose(f);
    assert_non_null(v);
    return v;
}

typedef struct run {
    int64_t from, to;
} run;

/* The runs (first and last sample of a stretch of consecutive "may fetch")
 * of one slot in one node's samples. */
static size_t runs_of(const sample *v, size_t n, uint32_t s, run *out, size_t cap)
{
    size_t k = 0;
    int in = 0;
    for (size_t i = 0; i < n && v[i].t >= 0; i++) {
        int on = (v[i].mask >> s) & 1;
        if (on && !in && k < cap)
            out[k++] = (run){ v[i].t, v[i].t };
        else if (on && in)
            out[k - 1].to = v[i].t;
        in = on && k <= cap;
    }
    return k;
}

static void paused_node_fences_itself_no_overlap(void **state)
{
    (void)state;
    const int64_t lease = 400;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    char pa[128], pb[128];
    snprintf(pa, sizeof pa, "/tmp/crawld-fence-a-%d", (int)getpid());
    snprintf(pb, sizeof pb, "/tmp/crawld-fence-b-%d", (int)getpid());
    const char *ids[2] = { "node-A", "node-B" };
    uint32_t owner[FENCE_SLOTS];
    slotmap_assign(ids, 2, FENCE_SLOTS, owner);
    const char *all_a[FENCE_SLOTS], *all_b[FENCE_SLOTS], *split[FENCE_SLOTS];
    uint64_t a_share = 0;
    for (uint32_t s = 0; s < FENCE_SLOTS; s++) {
        all_a[s] = ids[0];
        all_b[s] = ids[1];
        split[s] = ids[owner[s]];
        if (owner[s] == 0)
            a_share |= 1ull << s;
    }
    assert_true(a_share != 0 && a_share != (1ull << FENCE_SLOTS) - 1);

    pid_t a = live_nodes[0] = spawn_node(d, ids[0], lease, pa);
    assert_int_equal(wait_slots(c, all_a, 5000), 0);
    pid_t b = live_nodes[1] = spawn_node(d, ids[1], lease, pb);
    assert_int_equal(wait_slots(c, split, 5000), 0);

    kill(a, SIGSTOP);
    int64_t stopped = cr_mono_ms();
    /* B takes A's slots only once A's leases ran out */
    assert_int_equal(wait_slots(c, all_b, 10 * lease), 0);
    int64_t taken = cr_mono_ms();
    assert_true(taken - stopped >= lease / 2);
    nap_ms((int)lease);
    kill(a, SIGCONT);
    /* A rejoins, is fenced, and gets its share back once B released it */
    assert_int_equal(wait_slots(c, split, 10 * lease), 0);
    nap_ms(50);
    kill(a, SIGTERM);
    kill(b, SIGTERM);
    int st;
    assert_int_equal(waitpid(a, &st, 0), a);
    live_nodes[0] = 0;
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(waitpid(b, &st, 0), b);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    live_nodes[0] = live_nodes[1] = 0;

    size_t na, nb;
    sample *va = read_samples(pa, &na), *vb = read_samples(pb, &nb);
    assert_true(na > 10 && nb > 10);
    assert_int_equal(va[na - 1].t, -1);
    assert_true(va[na - 1].mask >= 1); /* A found its leases gone: fenced */
    int64_t gap_min = INT64_MAX;
    for (uint32_t s = 0; s < FENCE_SLOTS; s++) {
        run ra[64], rb[64];
        size_t ka = runs_of(va, na, s, ra, 64), kb = runs_of(vb, nb, s, rb, 64);
        if ((a_share >> s) & 1) {
            assert_true(ka >= 2); /* before the pause, and after it */
            assert_true(kb >= 1); /* B held it while A was stopped */
        }
        for (size_t i = 0; i < ka; i++) {
            for (size_t j = 0; j < kb; j++) {
                if (ra[i].from <= rb[j].to && rb[j].from <= ra[i].to)
                    fail_msg("slot %u: A may fetch %lld..%lld, B %lld..%lld: overlap", s,
                             (long long)ra[i].from, (long long)ra[i].to,
                             (long long)rb[j].from, (long long)rb[j].to);
                int64_t gap = ra[i].to < rb[j].from ? rb[j].from - ra[i].to : ra[i].from - rb[j].to;
                if (gap < gap_min)
                    gap_min = gap;
            }
        }
    }
    printf("# paused node: B took over %lld ms after SIGSTOP (lease %lld); smallest gap "
           "between two owners of one slot %lld ms\n",
           (long long)(taken - stopped), (long long)lease, (long long)gap_min);
    free(va);
    free(vb);
    unlink(pa);
    unlink(pb);
    redis_free(c);
    stop_redis(d);
}

/* ---- crawld cluster status ------------------------------------------------ */

static void cluster_status_shows_nodes_map_and_streams(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    const char *names[2] = { "node-x", "node-y" };
    member *m[2] = { join(d, names[0], 8, 5000), join(d, names[1], 8, 5000) };
    assert_int_equal(settle(m, names, 2, 8), 0);
    uint32_t owner[8];
    slotmap_assign(names, 2, 8, owner);
    int xs = 0;
    for (int s = 0; s < 8; s++)
        xs += owner[s] == 0;
    /* slot 3's stream: 3 entries, the group read 2 of them, acked none */
    redis_conn *c = connect_to(d, 2000);
    redis_reply *r = NULL;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(redis_cmd(c, &r, "XADD", "crawld:t:links:3", "*", "u", "http://h/", NULL), 0);
        redis_reply_free(r);
    }
    assert_int_equal(redis_cmd(c, &r, "XGROUP", "CREATE", "crawld:t:links:3", "owners", "0", NULL), 0);
    redis_reply_free(r);
    assert_int_equal(redis_cmd(c, &r, "XREADGROUP", "GROUP", "owners", "node-x", "COUNT", "2",
                               "STREAMS", "crawld:t:links:3", ">", NULL), 0);
    redis_reply_free(r);
    member_info in;
    member_get_info(m[0], &in);
    cr_buf out, err;
    cr_buf_init(&out, 1 << 20);
    cr_buf_init(&err, 1 << 16);
    int rc = proc_crawld((const char *const[]){ "cluster", "status", "--redis", redisd_addr(d),
                                                "--crawl", "t", NULL },
                         NULL, &out, &err);
    if (rc != 0)
        fail_msg("crawld cluster status: %d: %s", rc, err.len ? err.data : "");
    const char *o = out.data;
    char want[200];
    snprintf(want, sizeof want, "crawl t at %s: 8 slots, map epoch %llu\n", redisd_addr(d),
             (unsigned long long)in.epoch);
    if (strstr(o, want) == NULL)
        fail_msg("no '%s' in:\n%s", want, o);
    assert_non_null(strstr(o, "nodes: 2\n"));
    snprintf(want, sizeof want, "  %-32s", "node-x");
    const char *line = strstr(o, want);
    assert_non_null(line);
    long mapped = 0, held = 0;
    char lease[32];
    assert_int_equal(sscanf(line + 35, "%31s ms %ld %ld", lease, &mapped, &held), 3);
    assert_int_equal(mapped, xs);
    assert_int_equal(held, xs);
    snprintf(want, sizeof want, "  %-5d %-24s %-24s", 3, names[owner[3]], names[owner[3]]);
    line = strstr(o, want);
    if (line == NULL)
        fail_msg("no slot 3 line '%s' in:\n%s", want, o);
    long long depth, pending, lag;
    assert_int_equal(sscanf(line + strlen(want), "%31s ms %lld %lld %lld", lease, &depth, &pending, &lag), 4);
    assert_int_equal(depth, 3);
    assert_int_equal(pending, 2);
    assert_int_equal(lag, 1);
    assert_non_null(strstr(o, "streams: 3 entries, 2 pending\n"));
    assert_non_null(strstr(o, "in transit: 0 slots\n"));
    /* an unknown crawl and an unreachable Redis are errors that say so */
    cr_buf_clear(&err);
    rc = proc_crawld((const char *const[]){ "cluster", "status", "--redis", redisd_addr(d),
                                            "--crawl", "nope", NULL }, NULL, NULL, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err.data, "no crawl named 'nope'"));
    cr_buf_release(&out);
    cr_buf_release(&err);
    member_free(m[0]);
    member_free(m[1]);
    redis_free(c);
    stop_redis(d);
}

/* node_id's default names the host and the absolute state folder. */
static void default_node_id_is_host_and_state_dir(void **state)
{
    (void)state;
    char id[4400], host[256] = { 0 }, cwd[2048], want[4400];
    assert_int_equal(gethostname(host, sizeof host - 1), 0);
    assert_non_null(getcwd(cwd, sizeof cwd));
    member_default_node_id("no-such-state", id, sizeof id);
    snprintf(want, sizeof want, "%s:%s/no-such-state", host, cwd);
    assert_string_equal(id, want);
    member_default_node_id("/tmp/../tmp", id, sizeof id);
    snprintf(want, sizeof want, "%s:/tmp", host);
    assert_string_equal(id, want);
}

/* Until the partitioned crawl is wired in, `crawld run` with
 * cluster.redis set refuses, rather than crawl alone. */
static void run_says_when_it_cannot_reach_redis(void **state)
{
    (void)state;
    cr_buf err;
    cr_buf_init(&err, 1 << 16);
    char dir[] = "/tmp/crawld-cluster-run-XXXXXX", set[128];
    assert_non_null(mkdtemp(dir));
    snprintf(set, sizeof set, "storage.state_dir=\"%s\"", dir);
    int rc = proc_crawld((const char *const[]){ "run", "--set", "cluster.redis=\"unix:/nonexistent/x.sock\"",
                                                "--set", set,
                                                "--set", "crawl.seeds=[\"http://127.0.0.1:1/\"]", NULL },
                         NULL, NULL, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err.data, "crawld run: cluster: redis unix:/nonexistent/x.sock"));
    cr_buf_release(&err);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---- the end of a shared crawl (cluster/quiet) ---------------------------- */

static quiet *quiet_for(const redisd *d, const char *crawl, const char *id, uint32_t slots)
{
    quiet *q = NULL;
    char err[256];
    if (quiet_open(redisd_addr(d), crawl, id, slots, 2000, &q, err, sizeof err) < 0)
        fail_msg("quiet_open: %s", err);
    return q;
}

static void sadd(redis_conn *c, const char *k, const char *v)
{
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "SADD", k, v, NULL), 0);
    redis_reply_free(r);
}

/* Publish both, then one round seen by a. */
static int round_of(quiet *a, quiet *b, int idle_a, uint64_t gen_a, uint64_t gen_b)
{
    assert_int_equal(quiet_publish(a, idle_a, gen_a), 0);
    assert_int_equal(quiet_publish(b, true, gen_b), 0);
    return quiet_check(a);
}

static void quiet_ends_after_two_rounds_with_nothing_in_between(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    sadd(c, "crawld:q:members", "a");
    sadd(c, "crawld:q:members", "b");
    quiet *a = quiet_for(d, "q", "a", 4), *b = quiet_for(d, "q", "b", 4);
    /* a node that has not published yet holds the end back */
    assert_int_equal(quiet_publish(a, true, 5), 0);
    assert_int_equal(quiet_check(a), 0);
    assert_int_equal(quiet_check(a), 0);
    /* all idle once: not yet; a round where b did not publish again: not yet */
    assert_int_equal(round_of(a, b, 1, 5, 7), 0);
    assert_int_equal(quiet_publish(a, true, 5), 0);
    assert_int_equal(quiet_check(a), 0);
    /* a busy node starts it over */
    assert_int_equal(round_of(a, b, 0, 6, 7), 0);
    assert_int_equal(round_of(a, b, 1, 6, 7), 0);
    /* b did something in between (its count moved): starts over */
    assert_int_equal(round_of(a, b, 1, 6, 8), 0);
    /* now two rounds, both published again, the same counts: the end */
    assert_int_equal(round_of(a, b, 1, 6, 8), 1);
    char *done = get_str(c, "crawld:q:done");
    assert_non_null(done);
    assert_string_equal(done, "a");
    free(done);
    /* the other node sees it at its next round */
    assert_int_equal(quiet_check(b), 1);
    quiet_free(a);
    quiet_free(b);
    redis_free(c);
    stop_redis(d);
}

static void quiet_waits_for_every_stream_entry_to_be_acked(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    sadd(c, "crawld:w:members", "a");
    sadd(c, "crawld:w:members", "b");
    quiet *a = quiet_for(d, "w", "a", 8), *b = quiet_for(d, "w", "b", 8);
    redis_reply *r = NULL;
    /* a link sent to slot 5 before anyone made the group */
    assert_int_equal(redis_cmd(c, &r, "XADD", "crawld:w:links:5", "*", "u", "http://x.test/", NULL), 0);
    redis_reply_free(r);
    for (int i = 0; i < 3; i++)
        assert_int_equal(round_of(a, b, 1, 1, 1), 0);
    /* the group exists, the entry not delivered yet */
    assert_int_equal(redis_cmd(c, &r, "XGROUP", "CREATE", "crawld:w:links:5", "owners", "0", NULL), 0);
    redis_reply_free(r);
    for (int i = 0; i < 3; i++)
        assert_int_equal(round_of(a, b, 1, 1, 1), 0);
    /* delivered, pending (a reader between its apply and its XACK) */
    const char *rd[] = { "XREADGROUP", "GROUP", "owners", "b", "COUNT", "10", "STREAMS",
                         "crawld:w:links:5", ">" };
    assert_int_equal(redis_cmdv(c, 9, rd, NULL, &r), 0);
    const redis_reply *ent = redis_reply_at(redis_reply_at(redis_reply_at(redis_reply_at(r, 0), 1), 0), 0);
    char id[64];
    snprintf(id, sizeof id, "%s", redis_reply_str(ent, NULL));
    redis_reply_free(r);
    for (int i = 0; i < 3; i++)
        assert_int_equal(round_of(a, b, 1, 1, 1), 0);
    assert_int_equal(redis_cmd(c, &r, "XACK", "crawld:w:links:5", "owners", id, NULL), 0);
    redis_reply_free(r);
    /* acked (the applier's count moved with it): two rounds end it */
    assert_int_equal(round_of(a, b, 1, 1, 2), 0);
    assert_int_equal(round_of(a, b, 1, 1, 2), 1);
    quiet_free(a);
    quiet_free(b);
    redis_free(c);
    stop_redis(d);
}

/* A slot handed over whose checkpoint nobody has loaded yet (in
 * P"ckpts") holds rows no frontier has: no end until it is loaded. */
static void quiet_waits_for_a_slot_in_transit(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    redis_conn *c = connect_to(d, 2000);
    sadd(c, "crawld:w:members", "a");
    sadd(c, "crawld:w:members", "b");
    sadd(c, "crawld:w:ckpts", "3");
    quiet *a = quiet_for(d, "w", "a", 8), *b = quiet_for(d, "w", "b", 8);
    for (int i = 0; i < 4; i++)
        assert_int_equal(round_of(a, b, 1, 1, 1), 0);
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "SREM", "crawld:w:ckpts", "3", NULL), 0);
    redis_reply_free(r);
    assert_int_equal(round_of(a, b, 1, 1, 2), 0); /* the loader's count moved */
    assert_int_equal(round_of(a, b, 1, 1, 2), 1);
    quiet_free(a);
    quiet_free(b);
    redis_free(c);
    stop_redis(d);
}

/* A node whose lease ran out keeps its slots in the map for grace_ms. */
static void a_crashed_node_keeps_its_slots_within_the_grace(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    member_opts o = { .redis = redisd_addr(d), .crawl_id = "g", .slots = slots,
                      .lease_ms = 200, .grace_ms = 1500 };
    member *m[2];
    char err[256];
    for (int i = 0; i < 2; i++) {
        o.node_id = names[i];
        if (member_open(&o, &m[i], err, sizeof err) < 0)
            fail_msg("member_open: %s", err);
    }
    assert_int_equal(settle(m, names, 2, slots), 0);
    member_info before, in;
    member_get_info(m[0], &before);
    /* node-b "crashes": no more ticks, its leases run out */
    int64_t t0 = cr_wall_ms();
    while (cr_wall_ms() - t0 < 800) {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(20);
    }
    member_get_info(m[0], &in);
    if (in.epoch != before.epoch || in.held != before.held) /* the map moved, a took b's slots */
        fail_msg("within the grace: epoch %llu -> %llu, held %u -> %u",
                 (unsigned long long)before.epoch, (unsigned long long)in.epoch, before.held,
                 in.held);
    /* b comes back (same id) within the grace: it takes its slots again */
    member_free(m[1]);
    o.node_id = names[1];
    assert_int_equal(member_open(&o, &m[1], err, sizeof err), 0);
    if (settle(m, names, 2, slots) != 0)
        fail_msg("the restarted node did not get its slots back");
    member_get_info(m[1], &in);
    assert_int_equal(in.epoch, before.epoch);
    /* past the grace, a crashed node's slots move */
    t0 = cr_wall_ms();
    bool moved = false;
    while (!moved && cr_wall_ms() - t0 < 5000) {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        member_get_info(m[0], &in);
        moved = in.held == slots;
        nap_ms(20);
    }
    int64_t took = cr_wall_ms() - t0;
    if (!moved || took < 1500 - 300)
        fail_msg("past the grace: moved %d after %lld ms (grace 1500 ms)", moved, (long long)took);
    member_free(m[0]);
    member_free(m[1]);
    stop_redis(d);
}

/* ---- moving a slot ------------------------------------------------------- */

/* A server and a connection to it, for the tests below. */
static redis_conn *redis_with_conn(redisd **d)
{
    *d = start_redis();
    assert_non_null(*d);
    return connect_to(*d, 2000);
}

/* The node side of a hand-over, faked: checkpoints are names only. While
 * fail is set, handover (the export) or load (the import) fails. */
typedef struct fake_side {
    const char *name;       /* in the checkpoints' names */
    int fail;
    int fail_release;       /* the drop after the release fails */
    int handovers, releases, loads, loaded;
    redis_conn *c;          /* expire: the hand-over outlasts the lease ... */
    int expire;             /* 1: it ran out; 2: and node-x took the slot */
    int stranded, orphans;
    int slow_ms;            /* each hand-over takes this long (a big export) */
    char bad[256];          /* a load of a path this side did not expect */
    char last[256];         /* the last checkpoint loaded */
} fake_side;

static int fake_handover(void *arg, uint32_t slot, char *ckpt, size_t cap)
{
    fake_side *f = arg;
    if (f->fail)
        return -1;
    snprintf(ckpt, cap, "/shared/%s-slot%u.db", f->name, slot);
    f->handovers++;
    if (f->slow_ms > 0)
        nap_ms(f->slow_ms);
    if (f->expire) {
        char k[64], sn[12];
        snprintf(k, sizeof k, "crawld:t:slot:%u", slot);
        snprintf(sn, sizeof sn, "%u", slot);
        redis_reply *r = NULL;
        assert_int_equal(f->expire == 1 ? redis_cmd(f->c, &r, "DEL", k, NULL)
                                        : redis_cmd(f->c, &r, "SET", k, "node-x", NULL),
                         0);
        redis_reply_free(r);
    }
    return 1;
}

static void fake_stranded(void *arg, uint32_t slot, const char *ckpt)
{
    fake_side *f = arg;
    char want[64];
    snprintf(want, sizeof want, "/shared/%s-slot%u.db", f->name, slot);
    if (strcmp(ckpt, want) != 0)
        snprintf(f->bad, sizeof f->bad, "slot %u stranded %s", slot, ckpt);
    f->stranded++;
}

static int fake_side_orphaned(void *arg, uint32_t slot)
{
    (void)slot;
    ((fake_side *)arg)->orphans++;
    return 0;
}

static int fake_released(void *arg, uint32_t slot)
{
    (void)slot;
    fake_side *f = arg;
    f->releases++;
    return f->fail_release ? -1 : 0;
}

static int fake_load(void *arg, uint32_t slot, const char *ckpt)
{
    fake_side *f = arg;
    char want[64];
    snprintf(want, sizeof want, "-slot%u.db", slot);
    size_t n = strlen(ckpt), w = strlen(want);
    if (n < w || strcmp(ckpt + n - w, want) != 0)
        snprintf(f->bad, sizeof f->bad, "slot %u loaded %s", slot, ckpt);
    if (f->fail)
        return -1;
    snprintf(f->last, sizeof f->last, "%s", ckpt);
    f->loads++;
    return 0;
}

static void fake_loaded(void *arg, uint32_t slot, const char *ckpt)
{
    (void)slot;
    (void)ckpt;
    ((fake_side *)arg)->loaded++;
}

/* A member with f's hand-over hooks (lease 5 s); with all, the stranded
 * and orphaned ones too. */
static member *open_side(const redisd *d, const char *id, uint32_t slots, fake_side *f,
                         bool all)
{
    member_opts o = { .redis = redisd_addr(d), .crawl_id = "t", .node_id = id,
                      .slots = slots, .lease_ms = 5000, .handover = fake_handover,
                      .released = fake_released, .load = fake_load, .loaded = fake_loaded,
                      .stranded = all ? fake_stranded : NULL,
                      .orphaned = all ? fake_side_orphaned : NULL, .hook_arg = f };
    member *m = NULL;
    char err[256];
    if (member_open(&o, &m, err, sizeof err) < 0)
        fail_msg("member_open %s: %s", id, err);
    return m;
}

static member *join_with(const redisd *d, const char *id, uint32_t slots, fake_side *f)
{
    return open_side(d, id, slots, f, false);
}

static void tick_all(member **m, size_t n, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < n; i++)
            assert_int_equal(member_tick(m[i], cr_mono_ms()), 0);
        nap_ms(2);
    }
}

static long long hash_exists(redis_conn *c, const char *k)
{
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "EXISTS", k, NULL), 0);
    long long v = redis_reply_int(r);
    redis_reply_free(r);
    return v;
}

/* node-a holds every slot, then node-b joins: 40 rounds of both. */
static void a_then_b(const redisd *d, uint32_t slots, fake_side *fa, fake_side *fb, member **m)
{
    const char *names[1] = { "node-a" };
    m[0] = join_with(d, "node-a", slots, fa);
    assert_int_equal(settle(m, names, 1, slots), 0);
    m[1] = join_with(d, "node-b", slots, fb);
    tick_all(m, 2, 40);
}

/* The lease key of slot s names id. */
static void lease_names(redis_conn *c, uint32_t s, const char *id)
{
    char k[64];
    snprintf(k, sizeof k, "crawld:t:slot:%u", s);
    char *v = get_str(c, k);
    assert_non_null(v);
    assert_string_equal(v, id);
    free(v);
}

static void free_two(member **m, redis_conn *c, redisd *d)
{
    for (int i = 0; i < 2; i++)
        member_free(m[i]);
    redis_free(c);
    stop_redis(d);
}

/* ---- checkpoints through Redis (no shared storage) ---------------------- */

typedef struct redis_side {
    char dir[160];        /* this node's own folder: handover writes, spool */
    size_t size;          /* bytes of each checkpoint it writes */
    int handovers, loads, refused, bad;
} redis_side;

/* A checkpoint's bytes: the slot's number, then a pattern (binary, NULs). */
static void ckpt_bytes(uint32_t slot, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i < 4 ? slot >> (8 * i) : (i * 131 + slot) % 256);
}

static int redis_handover(void *arg, uint32_t slot, char *ckpt, size_t cap)
{
    redis_side *f = arg;
    snprintf(ckpt, cap, "%s/out-slot%u.db", f->dir, slot);
    unsigned char *b = malloc(f->size);
    assert_non_null(b);
    ckpt_bytes(slot, b, f->size);
    FILE *o = fopen(ckpt, "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(b, 1, f->size, o), f->size);
    assert_int_equal(fclose(o), 0);
    free(b);
    f->handovers++;
    return 1;
}

static int redis_load(void *arg, uint32_t slot, const char *ckpt)
{
    redis_side *f = arg;
    size_t n = 0;
    unsigned char *want = malloc(f->size), *got = malloc(f->size + 1);
    assert_true(want != NULL && got != NULL);
    ckpt_bytes(slot, want, f->size);
    FILE *in = strncmp(ckpt, f->dir, strlen(f->dir)) == 0 ? fopen(ckpt, "rb") : NULL;
    if (in != NULL) {
        n = fread(got, 1, f->size + 1, in);
        fclose(in);
    }
    f->bad += in == NULL || n != f->size || memcmp(got, want, f->size) != 0;
    free(want);
    free(got);
    f->loads++;
    return 0;
}

static void redis_refused(void *arg, uint32_t slot, const char *why)
{
    (void)slot;
    redis_side *f = arg;
    f->refused++;
    if (strstr(why, "over") == NULL)
        f->bad++;
}

static member *open_redis_side(const redisd *d, const char *id, uint32_t slots, redis_side *f,
                               int64_t max)
{
    member_opts o = { .redis = redisd_addr(d), .crawl_id = "t", .node_id = id,
                      .slots = slots, .lease_ms = 5000, .handover = redis_handover,
                      .load = redis_load, .ckpt_redis_max = max, .ckpt_spool_dir = f->dir,
                      .ckpt_refused = redis_refused, .hook_arg = f };
    member *m = NULL;
    char err[256];
    if (member_open(&o, &m, err, sizeof err) < 0)
        fail_msg("member_open %s: %s", id, err);
    return m;
}

/* Files left in dir. */
static int files_in(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    FILE *p = popen(cmd, "r");
    int n = -1;
    assert_non_null(p);
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* Keys matching pattern in Redis. */
static size_t keys_like(redis_conn *c, const char *pattern)
{
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "KEYS", pattern, NULL), 0);
    size_t n = redis_reply_count(r);
    redis_reply_free(r);
    return n;
}

/* Without shared storage each node writes its checkpoints in its own
 * folder; the member sends them through Redis and the new owner loads the
 * same bytes (binary, 300 KB) from a file in its own folder. Nothing is
 * left behind: no file in either folder, no checkpoint key, no record.
 * With checkpoints over the limit the slots stay with their node (b
 * takes none), each refusal counted and told, the files removed. */
static void checkpoints_travel_through_redis(void **state)
{
    (void)state;
    for (int big = 0; big < 2; big++) {
        redisd *d = NULL;
        redis_conn *c = redis_with_conn(&d);
        const uint32_t slots = 16;
        char top[] = "/tmp/crawld-test-ckpt-XXXXXX";
        assert_non_null(mkdtemp(top));
        redis_side fa = { .size = 300000 }, fb = { .size = 300000 };
        snprintf(fa.dir, sizeof fa.dir, "%s/a", top);
        snprintf(fb.dir, sizeof fb.dir, "%s/b", top);
        assert_int_equal(mkdir(fa.dir, 0700), 0);
        assert_int_equal(mkdir(fb.dir, 0700), 0);
        int64_t max = big ? 200000 : 1 << 20;
        member *m[2];
        const char *names[1] = { "node-a" };
        m[0] = open_redis_side(d, "node-a", slots, &fa, max);
        assert_int_equal(settle(m, names, 1, slots), 0);
        m[1] = open_redis_side(d, "node-b", slots, &fb, max);
        tick_all(m, 2, 60);
        member_info ia, ib;
        member_get_info(m[0], &ia);
        member_get_info(m[1], &ib);
        assert_int_equal(fa.bad + fb.bad, 0);
        assert_int_equal(files_in(fa.dir) + files_in(fb.dir), 0);
        assert_int_equal(keys_like(c, "crawld:t:ckpt*"), 0);
        if (!big) {
            assert_true(ib.held > 0 && ia.held + ib.held == slots);
            assert_int_equal(fb.loads, (int)ib.held);
            assert_int_equal(ia.ckpt_sent, ib.held);
            assert_int_equal(ib.loads, ib.held);
            assert_int_equal(fa.refused, 0);
        } else {
            assert_int_equal(ib.held, 0);
            assert_int_equal(ia.held, slots);
            assert_true(ib.wanted > 0);
            assert_int_equal(fb.loads, 0);
            assert_int_equal(ia.ckpt_sent, 0);
            assert_true(fa.refused > 0);
            assert_int_equal(ia.ckpt_too_big, (uint64_t)fa.refused);
            assert_int_equal(fa.handovers, fa.refused);
        }
        free_two(m, c, d);
        char cmd[160];
        snprintf(cmd, sizeof cmd, "rm -rf %s", top);
        assert_int_equal(system(cmd), 0);
    }
}

/* b joins a's crawl; with a's export failing, every slot the map gives b
 * stays a's (lease kept, neither fetched nor local there, nothing taken by
 * b); once it succeeds, each moves with its checkpoint, loaded once. */
static void export_fails_the_old_owner_keeps_the_slot(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_side fa = { .name = "a", .fail = 1 }, fb = { .name = "b" };
    member *m[2];
    a_then_b(d, slots, &fa, &fb, m);
    uint32_t owner[16];
    slotmap_assign(names, 2, slots, owner);
    int64_t now = cr_mono_ms();
    int moving = 0;
    for (uint32_t s = 0; s < slots; s++) {
        lease_names(c, s, names[0]); /* a keeps every lease */
        assert_false(member_may_fetch(m[1], s, now));
        if (owner[s] == 1) {
            moving++;
            assert_false(member_may_fetch(m[0], s, now)); /* kept, not fetched */
            assert_false(member_is_local(m[0], s));
        } else {
            assert_true(member_may_fetch(m[0], s, now));
            assert_true(member_is_local(m[0], s));
        }
    }
    assert_true(moving > 0);
    assert_int_equal(fa.releases, 0);
    assert_int_equal(fb.loads, 0);
    fa.fail = 0;
    assert_int_equal(settle(m, names, 2, slots), 0);
    assert_int_equal(fa.handovers, moving);
    assert_int_equal(fa.releases, moving);
    assert_int_equal(fb.loads, moving);
    assert_int_equal(fb.loaded, moving);
    assert_string_equal(fb.bad, "");
    for (uint32_t s = 0; s < slots; s++) {
        char k[64];
        snprintf(k, sizeof k, "crawld:t:ckpt:%u", s);
        assert_int_equal(hash_exists(c, k), 0); /* loaded: the record is gone */
        assert_int_equal(hash_exists(c, "crawld:t:ckpts"), 0); /* nothing in transit */
        assert_int_equal(member_is_local(m[owner[s]], s), 1);
    }
    member_info in;
    member_get_info(m[0], &in);
    assert_int_equal(in.handed_over, (uint64_t)moving);
    free_two(m, c, d);
}

/* node-a alone, every hand-over hook faked by fa (lease 5 s), settled
 * holding every slot. */
static member *open_side_a(const redisd *d, uint32_t slots, fake_side *fa)
{
    const char *names[1] = { "node-a" };
    member *m[1] = { open_side(d, names[0], slots, fa, true) };
    assert_int_equal(settle(m, names, 1, slots), 0);
    return m[0];
}

/* The old owner's lease runs out while it exports (a long export holds
 * its ticks back). Nobody took the slot meanwhile: the checkpoint is
 * recorded all the same and the new owner loads it. node-x took it: the
 * export is stranded (said, with its path, and nobody's record), and the
 * rows here are dropped once P"holder" names node-x (which rescued them). */
static void a_lease_that_ran_out_during_the_handover(void **state)
{
    (void)state;
    for (int expire = 1; expire <= 2; expire++) {
        redisd *d = NULL;
        redis_conn *c = redis_with_conn(&d);
        const uint32_t slots = 16;
        const char *names[2] = { "node-a", "node-b" };
        fake_side fa = { .name = "a", .c = c }, fb = { .name = "b" };
        member *m[2];
        m[0] = open_side_a(d, slots, &fa);
        fa.expire = expire;
        m[1] = join_with(d, names[1], slots, &fb);
        tick_all(m, 2, 40);
        uint32_t owner[16];
        slotmap_assign(names, 2, slots, owner);
        int moving = 0, recorded = 0;
        for (uint32_t s = 0; s < slots; s++) {
            char k[64];
            snprintf(k, sizeof k, "crawld:t:ckpt:%u", s);
            recorded += (int)hash_exists(c, k);
            moving += owner[s] == 1;
        }
        assert_true(moving > 0);
        assert_int_equal(fa.handovers, moving);
        assert_string_equal(fa.bad, "");
        assert_string_equal(fb.bad, "");
        member_info in;
        member_get_info(m[0], &in);
        if (expire == 1) {
            assert_int_equal(fa.releases, moving);
            assert_int_equal(fa.stranded, 0);
            assert_int_equal(fb.loads, moving); /* from the record */
            assert_int_equal(recorded, 0);      /* loaded: deleted */
            assert_int_equal(in.handed_over, (uint64_t)moving);
            assert_int_equal(in.stranded, 0);
        } else {
            assert_int_equal(fa.releases, 0);
            assert_int_equal(fa.stranded, moving);
            assert_int_equal(fb.loads, 0);
            assert_int_equal(recorded, 0); /* nobody's record */
            assert_int_equal(in.stranded, (uint64_t)moving);
            assert_int_equal(fa.orphans, 0); /* the holder is still node-a */
            for (uint32_t s = 0; s < slots; s++) {
                char sn[12];
                snprintf(sn, sizeof sn, "%u", s);
                redis_reply *r = NULL;
                if (owner[s] == 1)
                    assert_int_equal(redis_cmd(c, &r, "HSET", "crawld:t:holder", sn, "node-x",
                                               NULL), 0);
                redis_reply_free(r);
            }
            tick_all(m, 2, 3);
            assert_int_equal(fa.orphans, moving); /* rescued there: dropped here */
        }
        free_two(m, c, d);
    }
}

/* The old owner's drop after the release fails (its store could not
 * commit): the rows stay there, marked orphaned, and are dropped by the
 * orphaned hook once P"holder" names the node that loaded the checkpoint;
 * the new owner loads each slot once all the same. */
static void a_failed_drop_is_retried_once_the_new_owner_loaded(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_side fa = { .name = "a", .fail_release = 1 }, fb = { .name = "b" };
    member *m[2];
    m[0] = open_side_a(d, slots, &fa);
    m[1] = join_with(d, names[1], slots, &fb);
    assert_int_equal(settle(m, names, 2, slots), 0);
    uint32_t owner[16];
    slotmap_assign(names, 2, slots, owner);
    int moving = 0;
    for (uint32_t s = 0; s < slots; s++)
        moving += owner[s] == 1;
    assert_true(moving > 0);
    tick_all(m, 2, 5); /* the orphans are settled on the ticks after the load */
    assert_int_equal(fa.releases, moving);
    assert_int_equal(fb.loads, moving);
    assert_int_equal(fa.stranded, 0);
    assert_int_equal(fa.orphans, moving); /* each failed drop, retried once */
    assert_string_equal(fa.bad, "");
    assert_string_equal(fb.bad, "");
    member_info in;
    member_get_info(m[0], &in);
    assert_int_equal(in.handed_over, (uint64_t)moving);
    assert_int_equal(in.orphans_dropped, (uint64_t)moving);
    tick_all(m, 2, 5);
    assert_int_equal(fa.orphans, moving); /* and not again */
    free_two(m, c, d);
}

/* Slow hand-overs (60 ms each, a 200 ms lease, about 8 slots moving)
 * are spread over ticks, so the node renews the leases it keeps in
 * between: none is lost, every moving slot goes by its checkpoint. */
static void slow_handovers_do_not_starve_the_renewals(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_side fa = { .name = "a" }, fb = { .name = "b" };
    member *m[2];
    char err[256];
    for (int i = 0; i < 2; i++) {
        member_opts o = { .redis = redisd_addr(d), .crawl_id = "t", .node_id = names[i],
                          .slots = slots, .lease_ms = 200, .handover = fake_handover,
                          .released = fake_released, .load = fake_load, .loaded = fake_loaded,
                          .hook_arg = i ? &fb : &fa };
        if (member_open(&o, &m[i], err, sizeof err) < 0)
            fail_msg("member_open: %s", err);
        if (i == 0)
            assert_int_equal(settle(m, names, 1, slots), 0);
    }
    fa.slow_ms = 60;
    assert_int_equal(settle(m, names, 2, slots), 0);
    uint32_t owner[16];
    slotmap_assign(names, 2, slots, owner);
    int moving = 0;
    for (uint32_t s = 0; s < slots; s++)
        moving += owner[s] == 1;
    assert_true(moving * 60 > 200); /* one tick for all of them would outlast the lease */
    member_info in;
    member_get_info(m[0], &in);
    assert_int_equal(in.lost, 0);
    assert_int_equal(in.handed_over, (uint64_t)moving);
    assert_int_equal(fb.loads, moving);
    free_two(m, c, d);
}

/* With b's import failing, b holds the slots it took but fetches and
 * admits none of them, and their records stay; once it loads, it does. */
static void import_fails_the_new_owner_does_not_fetch(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_side fa = { .name = "a" }, fb = { .name = "b", .fail = 1 };
    member *m[2];
    a_then_b(d, slots, &fa, &fb, m);
    uint32_t owner[16];
    slotmap_assign(names, 2, slots, owner);
    int64_t now = cr_mono_ms();
    uint32_t moving = 0;
    for (uint32_t s = 0; s < slots; s++) {
        if (owner[s] != 1)
            continue;
        moving++;
        lease_names(c, s, names[1]); /* handed over and taken ... */
        assert_false(member_may_fetch(m[1], s, now)); /* ... but not fetched */
        assert_false(member_is_local(m[1], s));
        assert_false(member_may_fetch(m[0], s, now));
        char k[64];
        snprintf(k, sizeof k, "crawld:t:ckpt:%u", s);
        assert_int_equal(hash_exists(c, k), 1);
    }
    assert_int_equal(hash_exists(c, "crawld:t:ckpts"), 1); /* in transit */
    assert_true(moving > 0);
    member_info in;
    member_get_info(m[1], &in);
    assert_int_equal(in.unloaded, moving);
    assert_int_equal(fb.loads, 0);
    fb.fail = 0;
    assert_int_equal(settle(m, names, 2, slots), 0);
    assert_int_equal(fb.loads, (int)moving);
    member_get_info(m[1], &in);
    assert_int_equal(in.unloaded, 0);
    assert_int_equal(in.loads, moving);
    free_two(m, c, d);
}

/* b took slots whose checkpoint it could not load, then departs: it hands
 * nothing of its own over (it has no rows of them) and leaves the record
 * naming a's checkpoint, which a loads when it takes them back. */
static void a_slot_never_loaded_passes_its_checkpoint_on(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    fake_side fa = { .name = "a" }, fb = { .name = "b", .fail = 1 };
    member *m[2];
    a_then_b(d, slots, &fa, &fb, m);
    member_info in;
    member_get_info(m[1], &in);
    assert_true(in.unloaded > 0);
    int moved = fa.handovers;
    assert_int_equal(member_depart(m[1]), 0);
    int all = 0;
    for (int round = 0; round < 400 && !all; round++) {
        tick_all(m, 2, 1);
        all = 1;
        for (uint32_t s = 0; s < slots; s++)
            all &= member_may_fetch(m[0], s, cr_mono_ms());
    }
    assert_true(all);
    assert_int_equal(fb.handovers, 0);
    assert_int_equal(fb.releases, 0);
    assert_int_equal(fa.loads, moved); /* a's own checkpoints, back */
    assert_non_null(strstr(fa.last, "/shared/a-slot"));
    assert_string_equal(fa.bad, "");
    free_two(m, c, d);
}

/* A departing node (SIGTERM) leaves the map at once but hands each slot
 * over before its lease goes: the others load every one. */
static void a_departing_node_hands_every_slot_over(void **state)
{
    (void)state;
    redisd *d = start_redis();
    assert_non_null(d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_side fa = { .name = "a" }, fb = { .name = "b" };
    member *m[2];
    m[0] = join_with(d, names[0], slots, &fa);
    m[1] = join_with(d, names[1], slots, &fb);
    assert_int_equal(settle(m, names, 2, slots), 0);
    member_info in;
    member_get_info(m[1], &in);
    uint32_t had = in.held;
    assert_true(had > 0);
    int before = fa.loads;
    assert_int_equal(member_depart(m[1]), 0);
    for (uint32_t s = 0; s < slots; s++)
        assert_false(member_may_fetch(m[1], s, cr_mono_ms()));
    /* both tick: b renews only its slot leases, until each is handed over */
    int round = 0, all = 0;
    for (; round < 400 && !all; round++) {
        tick_all(m, 2, 1);
        all = 1;
        for (uint32_t s = 0; s < slots; s++)
            all &= member_may_fetch(m[0], s, cr_mono_ms());
    }
    assert_true(all);
    member_get_info(m[1], &in);
    assert_int_equal(in.held, 0);
    assert_int_equal(in.handed_over, had);
    assert_int_equal(fa.loads - before, (int)had);
    for (int i = 0; i < 2; i++)
        member_free(m[i]);
    stop_redis(d);
}

/* ---- a slot's rows: export, import, drop ----------------------------------- */

static int pick_odd(void *arg, const char *host, size_t len)
{
    (void)arg;
    return len > 1 && (host[1] - '0') % 2 == 1; /* "h1", "h3", ... */
}

static db *open_store(const char *dir)
{
    char err[512];
    db *d = db_open(dir, NULL, err, sizeof err);
    if (d == NULL)
        fail_msg("db_open(%s): %s", dir, err);
    return d;
}

/* Rows of hosts h0..h5, two URLs each; each host's first URL done. */
static void fill_store(db *d)
{
    for (int h = 0; h < 6; h++) {
        for (int i = 0; i < 2; i++) {
            char url[64], host[8];
            snprintf(host, sizeof host, "h%d", h);
            snprintf(url, sizeof url, "http://h%d/p%d", h, i);
            db_url u = { .url = url, .host = host, .depth = i, .kind = 0,
                         .state = DB_STATE_QUEUED };
            int64_t id = 0;
            assert_int_equal(db_insert_url_wait(d, &u, &id), 1);
            if (i == 0) {
                db_outcome o = { .state = DB_STATE_DONE, .http_status = 200, .bytes = 10,
                                 .attempts = 1 };
                assert_int_equal(db_record_outcome(d, id, &o), 0);
            }
        }
    }
    assert_int_equal(db_flush(d), 0);
}

static int has_url(db *d, const char *url)
{
    db_reader *rd = db_reader_open(d, NULL, 0);
    assert_non_null(rd);
    int rc = db_reader_exists(rd, url, strlen(url), NULL);
    db_reader_free(rd);
    return rc;
}

/* Two stores in a temp folder: a filled (fill_store), b empty. */
typedef struct two_stores {
    char dir[64];
    db *a, *b;
} two_stores;

static void two_stores_open(two_stores *t, const char *name)
{
    char a_dir[96], b_dir[96];
    snprintf(t->dir, sizeof t->dir, "/tmp/crawld-test-%s-XXXXXX", name);
    assert_non_null(mkdtemp(t->dir));
    snprintf(a_dir, sizeof a_dir, "%s/a", t->dir);
    snprintf(b_dir, sizeof b_dir, "%s/b", t->dir);
    t->a = open_store(a_dir);
    t->b = open_store(b_dir);
    fill_store(t->a);
}

static void two_stores_close(two_stores *t)
{
    assert_int_equal(db_close(t->a), 0);
    assert_int_equal(db_close(t->b), 0);
    const char *argv[] = { "/bin/rm", "-rf", t->dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

typedef struct gone_ids {
    int64_t ids[16];
    size_t n;
} gone_ids;

static void note_gone(void *arg, int64_t id)
{
    gone_ids *g = arg;
    if (g->n < 16)
        g->ids[g->n++] = id;
}

/* The picked hosts' rows travel, done and queued; the new owner keeps its
 * own copy of a URL it had; the old owner's drop leaves the rest; both
 * stores' counts follow. */
static void slot_rows_export_import_drop(void **state)
{
    (void)state;
    two_stores t;
    two_stores_open(&t, "slotrows");
    db *a = t.a, *b = t.b;
    char ck[96];
    snprintf(ck, sizeof ck, "%s/slot.db", t.dir);
    db_url mine = { .url = "http://h1/p1", .host = "h1", .state = DB_STATE_QUEUED };
    assert_int_equal(db_insert_url_wait(b, &mine, NULL), 1); /* b has one already */
    char err[512];
    int64_t rows = 0, mark = 0;
    assert_int_equal(db_slot_export(a, ck, "crawl-x", pick_odd, NULL, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 6); /* h1, h3, h5: two each */
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s.tmp", ck);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(db_slot_import(b, ck, "crawl-x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 5);
    assert_int_equal(mark, 1);
    db_stats st;
    db_get_stats(b, &st);
    assert_int_equal(st.rows[DB_STATE_DONE], 3);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 3);
    assert_int_equal(has_url(b, "http://h3/p0"), 1);
    assert_int_equal(has_url(b, "http://h2/p0"), 0);
    /* imported again: nothing new */
    assert_int_equal(db_slot_import(b, ck, "crawl-x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 0);
    gone_ids g = { 0 };
    assert_int_equal(db_slot_drop(a, pick_odd, NULL, note_gone, &g, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 6);
    assert_int_equal(g.n, 6); /* each dropped row's id told first: h1, h3, h5 */
    assert_int_equal(g.ids[0] + g.ids[1] + g.ids[2] + g.ids[3] + g.ids[4] + g.ids[5],
                     3 + 4 + 7 + 8 + 11 + 12);
    db_get_stats(a, &st);
    assert_int_equal(st.rows[DB_STATE_DONE], 3);
    assert_int_equal(st.rows[DB_STATE_QUEUED], 3);
    assert_int_equal(has_url(a, "http://h3/p0"), 0);
    assert_int_equal(has_url(a, "http://h2/p1"), 1);
    /* a checkpoint of another crawl is refused, a missing one too */
    assert_int_equal(db_slot_import(b, ck, "crawl-y", &mark, &rows, err, sizeof err), -EBADMSG);
    assert_non_null(strstr(err, "not a checkpoint of crawl crawl-y"));
    snprintf(tmp, sizeof tmp, "%s/none.db", t.dir);
    assert_int_equal(db_slot_import(b, tmp, "crawl-x", &mark, &rows, err, sizeof err), -ENOENT);
    two_stores_close(&t);
}

typedef struct got_hosts {
    char host[4][16];
    db_slot_host h[4];
    char text[4][64];
    size_t n;
} got_hosts;

static int note_host(void *arg, const db_slot_host *h)
{
    got_hosts *g = arg;
    if (g->n == 4)
        return 1;
    snprintf(g->host[g->n], sizeof g->host[g->n], "%s", h->host);
    g->h[g->n] = *h;
    g->h[g->n].host = g->host[g->n];
    assert_true(h->robots_len < sizeof g->text[g->n]);
    if (h->robots_text != NULL)
        memcpy(g->text[g->n], h->robots_text, h->robots_len);
    g->h[g->n].robots_text = h->robots_text != NULL ? g->text[g->n] : NULL;
    g->n++;
    return 0;
}

/* The hosts' politeness state rides in the checkpoint, field by field;
 * a checkpoint written without it (an older node's) has none. */
static void slot_checkpoint_carries_host_state(void **state)
{
    (void)state;
    two_stores t;
    two_stores_open(&t, "slothosts");
    char ck[96], err[512];
    int64_t rows = 0;
    snprintf(ck, sizeof ck, "%s/slot.db", t.dir);
    const char body[] = "User-agent: *\nCrawl-delay: 3\n";
    db_slot_host hs[2] = {
        { .host = "h1", .next_at = 1700000001234, .paused_until = 0, .last_ms = 42, .pages = 7,
          .robots_status = 200, .robots_text = body, .robots_len = strlen(body),
          .robots_expires = 1700000090000 },
        { .host = "h3", .next_at = 5, .paused_until = 1700000005000, .last_ms = -1, .pages = 0,
          .robots_status = -1, .robots_expires = 1700000060000 },
    };
    assert_int_equal(db_slot_export_hosts(t.a, ck, "x", pick_odd, NULL, hs, 2, &rows, err,
                                          sizeof err), 0);
    assert_int_equal(rows, 6); /* the rows as db_slot_export */
    got_hosts g;
    memset(&g, 0, sizeof g);
    assert_int_equal(db_slot_hosts(ck, note_host, &g, err, sizeof err), 0);
    assert_int_equal(g.n, 2);
    size_t i1 = strcmp(g.host[0], "h1") == 0 ? 0 : 1, i3 = 1 - i1;
    assert_string_equal(g.host[i1], "h1");
    assert_string_equal(g.host[i3], "h3");
    assert_int_equal(g.h[i1].next_at, 1700000001234);
    assert_int_equal(g.h[i1].last_ms, 42);
    assert_int_equal(g.h[i1].pages, 7);
    assert_int_equal(g.h[i1].robots_status, 200);
    assert_int_equal(g.h[i1].robots_len, strlen(body));
    assert_memory_equal(g.h[i1].robots_text, body, strlen(body));
    assert_int_equal(g.h[i1].robots_expires, 1700000090000);
    assert_int_equal(g.h[i3].paused_until, 1700000005000);
    assert_int_equal(g.h[i3].last_ms, -1);
    assert_int_equal(g.h[i3].robots_status, -1);
    assert_null(g.h[i3].robots_text);
    /* the rows still import as before */
    int64_t mark = 0;
    assert_int_equal(db_slot_import(t.b, ck, "x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 6);
    /* without host states: none */
    assert_int_equal(unlink(ck), 0);
    assert_int_equal(db_slot_export(t.a, ck, "x", pick_odd, NULL, &rows, err, sizeof err), 0);
    memset(&g, 0, sizeof g);
    assert_int_equal(db_slot_hosts(ck, note_host, &g, err, sizeof err), 0);
    assert_int_equal(g.n, 0);
    two_stores_close(&t);
}

/* An export that fails (a folder that is not there; a disk that fills up
 * during the copy, by the faults build's hook) leaves no file behind and
 * says why; an import that fails inserts nothing. */
static void slot_export_and_import_failures_leave_nothing(void **state)
{
    (void)state;
    two_stores t;
    two_stores_open(&t, "slotfail");
    db *a = t.a, *b = t.b;
    char ck[96], tmp[128];
    char err[512];
    int64_t rows = 0, mark = 0;
    snprintf(ck, sizeof ck, "%s/missing/slot.db", t.dir);
    assert_true(db_slot_export(a, ck, "x", pick_odd, NULL, &rows, err, sizeof err) < 0);
    assert_non_null(strstr(err, "missing"));
    assert_int_equal(rows, 0);
    snprintf(ck, sizeof ck, "%s/slot.db", t.dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", ck);
    setenv("CRAWLD_FAULT_SLOT_EXPORT", "1", 1);
    int rc = db_slot_export(a, ck, "x", pick_odd, NULL, &rows, err, sizeof err);
    unsetenv("CRAWLD_FAULT_SLOT_EXPORT");
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(err, "disk is full"));
    assert_int_equal(access(ck, F_OK), -1);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(db_slot_export(a, ck, "x", pick_odd, NULL, &rows, err, sizeof err), 0);
    setenv("CRAWLD_FAULT_SLOT_IMPORT", "1", 1);
    rc = db_slot_import(b, ck, "x", &mark, &rows, err, sizeof err);
    unsetenv("CRAWLD_FAULT_SLOT_IMPORT");
    assert_int_equal(rc, -ENOSPC);
    assert_int_equal(rows, 0);
    db_stats st;
    db_get_stats(b, &st);
    assert_int_equal(st.rows[DB_STATE_DONE] + st.rows[DB_STATE_QUEUED], 0);
    assert_int_equal(has_url(b, "http://h1/p0"), 0);
    two_stores_close(&t);
}

/* ---- a node gone for good ------------------------------------------------ */

typedef struct fake_rescuer {
    int fail, orphan_fail;
    redis_conn *steal;       /* set: the rescue outlasts the lease, and node-b has
                                taken the slot back meanwhile */
    int calls, rescues, orphan_calls, orphans, lost_told;
    uint32_t last_slot;
    char from[64], dir[64];
} fake_rescuer;

static int fake_rescue(void *arg, uint32_t slot, const char *from, const char *dir)
{
    fake_rescuer *f = arg;
    f->calls++;
    f->last_slot = slot;
    snprintf(f->from, sizeof f->from, "%s", from);
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    if (f->fail)
        return -EIO;
    if (f->steal != NULL) {
        char k[64];
        redis_reply *r = NULL;
        snprintf(k, sizeof k, "crawld:t:slot:%u", slot);
        assert_int_equal(redis_cmd(f->steal, &r, "SET", k, "node-b", "PX", "60000", NULL), 0);
        redis_reply_free(r);
    }
    f->rescues++;
    return 0;
}

static int fake_orphaned(void *arg, uint32_t slot)
{
    (void)slot;
    fake_rescuer *f = arg;
    f->orphan_calls++;
    if (f->orphan_fail)
        return -EBUSY;
    f->orphans++;
    return 0;
}

static void fake_load_lost(void *arg, uint32_t slot)
{
    (void)slot;
    ((fake_rescuer *)arg)->lost_told++;
}

static const char *const DIRS[2] = { "/shared/state-a", "/shared/state-b" };

/* The rescue cases' lease: 200 ms, four times that under ThreadSanitizer
 * (whose slowdown, with the other test lanes running, let a lease run out
 * mid-settle, so that a slot was taken with no holder to rescue from). */
static int64_t rescue_lease_ms(void)
{
    return getenv("TSAN_OPTIONS") != NULL ? 800 : 200;
}

/* names[i] with store DIRS[i] registered, rescue hooks fr[i] (and the
 * orphaned one if asked), lease rescue_lease_ms(), grace 0. */
static member *open_rescuer(const redisd *d, uint32_t slots, fake_rescuer *fr, int orphans,
                            int i)
{
    static const char *const names[2] = { "node-a", "node-b" };
    member_opts o = { .redis = redisd_addr(d), .crawl_id = "t", .node_id = names[i],
                      .slots = slots, .lease_ms = rescue_lease_ms(), .store_dir = DIRS[i],
                      .rescue = fake_rescue, .orphaned = orphans ? fake_orphaned : NULL,
                      .load_lost = fake_load_lost, .hook_arg = &fr[i] };
    char err[256];
    member *m = NULL;
    if (member_open(&o, &m, err, sizeof err) < 0)
        fail_msg("member_open: %s", err);
    return m;
}

/* node-a and node-b (open_rescuer), settled. a ticks alone until it holds
 * and has loaded every slot, and only then b joins, so that P"holder"
 * names a for each slot b takes. (Opened together, a first tick of a's
 * slowed past its quarter-lease budget left some slots untaken until b
 * had joined, and b took those from nobody.) */
static void join_rescuers(const redisd *d, uint32_t slots, fake_rescuer *fr, int orphans,
                          member **m)
{
    const char *names[2] = { "node-a", "node-b" };
    m[0] = open_rescuer(d, slots, fr, orphans, 0);
    member_info in;
    int64_t t0 = cr_mono_ms();
    do {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        member_get_info(m[0], &in);
    } while ((in.held < slots || in.unloaded > 0) && cr_mono_ms() - t0 < 10000);
    assert_int_equal(in.held, slots);
    assert_int_equal(in.unloaded, 0);
    m[1] = open_rescuer(d, slots, fr, orphans, 1);
    assert_int_equal(settle(m, names, 2, slots), 0);
}

/* a and b share a crawl, each with its store registered (b's share came
 * from a without a checkpoint: rescued from a's store); b dies (no more
 * ticks) and its slots move to a past its lease (grace 0). a rescues each
 * of them from b's store, not its own: while the rescue fails, a holds
 * them unfetched and not local; once it succeeds they are fetched, and
 * P"holder" names a for every slot, so nothing is rescued twice. */
static void a_gone_nodes_slots_are_rescued_from_its_store(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    fake_rescuer fr[2] = { { .fail = 1 }, { 0 } };
    member *m[2];
    join_rescuers(d, slots, fr, 0, m);
    member_info in;
    member_get_info(m[1], &in);
    uint32_t had = in.held;
    assert_true(had > 0 && had < slots);
    /* a took every slot first (nothing to rescue: no earlier holder), then
     * released b's share without a checkpoint (no handover hook here):
     * b rescued each of them from a's store */
    assert_int_equal(fr[0].calls, 0);
    assert_true(fr[1].calls >= (int)had);
    assert_string_equal(fr[1].from, "node-a");
    assert_string_equal(fr[1].dir, DIRS[0]);
    fr[1].calls = 0;
    redis_reply *sr = NULL;
    assert_int_equal(redis_cmd(c, &sr, "HGET", "crawld:t:stores", "node-b", NULL), 0);
    assert_string_equal(redis_reply_str(sr, NULL), DIRS[1]);
    redis_reply_free(sr);
    /* b dies: a alone ticks until it holds every slot (some unloaded) */
    int64_t t0 = cr_mono_ms();
    do {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        member_get_info(m[0], &in);
        nap_ms(20);
    } while (in.held < slots && cr_mono_ms() - t0 < 5000);
    assert_int_equal(in.held, slots);
    assert_int_equal(in.unloaded, had);
    assert_true(fr[0].calls >= (int)had);
    assert_string_equal(fr[0].from, "node-b");
    assert_string_equal(fr[0].dir, DIRS[1]);
    int64_t now = cr_mono_ms();
    uint32_t shut = 0;
    for (uint32_t s = 0; s < slots; s++)
        shut += !member_may_fetch(m[0], s, now) && !member_is_local(m[0], s);
    assert_int_equal(shut, had);
    /* the rescue succeeds: every slot fetched, each rescued once */
    fr[0].fail = 0;
    int before = fr[0].calls;
    for (int r = 0; r < 3; r++) {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(5);
    }
    member_get_info(m[0], &in);
    assert_int_equal(in.unloaded, 0);
    assert_int_equal(in.rescues, had);
    assert_int_equal(fr[0].calls - before, (int)had);
    now = cr_mono_ms();
    for (uint32_t s = 0; s < slots; s++) {
        assert_true(member_may_fetch(m[0], s, now));
        char k[16];
        snprintf(k, sizeof k, "%u", s);
        redis_reply *r = NULL;
        assert_int_equal(redis_cmd(c, &r, "HGET", "crawld:t:holder", k, NULL), 0);
        assert_string_equal(redis_reply_str(r, NULL), "node-a");
        redis_reply_free(r);
    }
    assert_int_equal(fr[1].calls, 0);
    free_two(m, c, d);
}

/* A finished crawl's map stays: b sees P done and leaves at the end of the
 * crawl (its leases released, nothing handed over); a, still running,
 * takes none of b's slots and rescues nothing from b's store, however
 * long it ticks on (the coordinator reads P done after the members it
 * finds gone, and a member leaves only once done is set). */
static void a_finished_crawls_map_stays_when_a_node_exits(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    fake_rescuer fr[2] = { { 0 }, { 0 } };
    member *m[2];
    join_rescuers(d, slots, fr, 0, m);
    member_info a0, b0, in;
    member_get_info(m[0], &a0);
    member_get_info(m[1], &b0);
    assert_true(b0.held > 0 && a0.held + b0.held == slots);
    fr[0].calls = fr[1].calls = 0;
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, "SET", "crawld:t:done", "1", NULL), 0);
    redis_reply_free(r);
    assert_int_equal(member_leave(m[1]), 0);
    int64_t t0 = cr_mono_ms();
    while (cr_mono_ms() - t0 < 4 * rescue_lease_ms()) { /* past b's lease, grace 0 */
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(20);
    }
    member_get_info(m[0], &in);
    assert_int_equal(in.held, a0.held);
    assert_int_equal(in.epoch, a0.epoch);
    assert_int_equal(in.rescues, 0);
    assert_int_equal(fr[0].calls, 0);
    assert_int_equal(fr[0].lost_told, 0);
    free_two(m, c, d);
}

/* b pauses past its lease (grace 0): a rescues b's slots. b comes back:
 * its renewals fail (fenced), and since P"holder" names a, its rows of
 * those slots are stale: the orphaned hook drops them, asked again while
 * it fails, and b loads and fetches none of them before it succeeds; then
 * the map gives them back to b, which rescues them from a's store. */
static void a_paused_node_drops_what_was_rescued_before_taking_it_back(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    const char *names[2] = { "node-a", "node-b" };
    fake_rescuer fr[2] = { { 0 }, { .orphan_fail = 1 } };
    member *m[2];
    join_rescuers(d, slots, fr, 1, m);
    member_info in;
    member_get_info(m[1], &in);
    uint32_t had = in.held;
    int b_rescues = fr[1].rescues;
    /* b paused: a takes and rescues every slot of b's */
    int64_t t0 = cr_mono_ms();
    do {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        member_get_info(m[0], &in);
        nap_ms(20);
    } while ((in.held < slots || in.unloaded > 0) && cr_mono_ms() - t0 < 5000);
    assert_int_equal(in.held, slots);
    assert_int_equal(fr[0].rescues, (int)had);
    /* b resumes: fenced, its stale rows not dropped yet (the hook fails) */
    for (int r = 0; r < 6; r++) {
        assert_int_equal(member_tick(m[1], cr_mono_ms()), 0);
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(5);
    }
    member_get_info(m[1], &in);
    assert_int_equal(in.lost, had);
    assert_int_equal(in.unloaded, in.held); /* nothing loaded back meanwhile ... */
    int64_t now = cr_mono_ms();
    for (uint32_t s = 0; s < slots; s++) /* ... nor fetched */
        assert_false(member_may_fetch(m[1], s, now));
    assert_true(fr[1].orphan_calls >= (int)had);
    assert_int_equal(fr[1].orphans, 0);
    /* the drop succeeds: each slot dropped once, then taken back from a */
    fr[1].orphan_fail = 0;
    assert_int_equal(settle(m, names, 2, slots), 0);
    /* at least: under load a lease may run out between ticks and move more */
    assert_true(fr[1].orphans >= (int)had);
    member_get_info(m[1], &in);
    assert_int_equal(in.orphans_dropped, (uint64_t)fr[1].orphans);
    assert_int_equal(in.held, had);
    assert_true(fr[1].rescues - b_rescues >= (int)had);
    assert_string_equal(fr[1].from, "node-a");
    free_two(m, c, d);
}

/* b pauses past its lease (grace 0) and a takes its slots, but each
 * rescue outlasts a's new lease (it waited on the paused node's locks)
 * and b, resumed, has taken the slot back meanwhile: a must not record
 * itself as the holder (b would drop its live rows, a wait for itself with
 * the copy queued for ever). The slot is fenced at a, never fetchable
 * there, the copy dropped as an orphan's since P"holder" names b. */
static void a_rescue_that_outlasts_the_lease_is_given_up(void **state)
{
    (void)state;
    redisd *d = NULL;
    redis_conn *c = redis_with_conn(&d);
    const uint32_t slots = 16;
    fake_rescuer fr[2] = { { 0 }, { 0 } };
    member *m[2];
    join_rescuers(d, slots, fr, 1, m);
    member_info in;
    member_get_info(m[1], &in);
    uint32_t had = in.held;
    assert_true(had > 0);
    member_get_info(m[0], &in);
    uint32_t a_had = in.held;
    fr[0].steal = c;
    int calls0 = fr[0].calls;
    /* b paused: a takes each of b's slots and rescues it, too late */
    int64_t t0 = cr_mono_ms();
    while (fr[0].calls - calls0 < (int)had && cr_mono_ms() - t0 < 5000) {
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(20);
    }
    assert_int_equal(fr[0].calls - calls0, (int)had);
    for (int r = 0; r < 5; r++) { /* the orphans settle */
        assert_int_equal(member_tick(m[0], cr_mono_ms()), 0);
        nap_ms(5);
    }
    member_get_info(m[0], &in);
    assert_int_equal(in.loads_lost, had);
    assert_int_equal(fr[0].lost_told, (int)had); /* each told (crawld logs it) */
    assert_int_equal(in.held, a_had);
    assert_int_equal(fr[0].orphans, (int)had);
    assert_int_equal(in.orphans_dropped, had);
    assert_int_equal(fr[0].calls - calls0, (int)had); /* not rescued again */
    int64_t now = cr_mono_ms();
    uint32_t bs = 0;
    for (uint32_t s = 0; s < slots; s++) {
        char k[64];
        snprintf(k, sizeof k, "crawld:t:slot:%u", s);
        char *v = get_str(c, k);
        bool bss = v != NULL && strcmp(v, "node-b") == 0;
        free(v);
        if (!bss)
            continue;
        bs++;
        assert_false(member_may_fetch(m[0], s, now));
        snprintf(k, sizeof k, "%u", s);
        redis_reply *r = NULL;
        assert_int_equal(redis_cmd(c, &r, "HGET", "crawld:t:holder", k, NULL), 0);
        assert_string_equal(redis_reply_str(r, NULL), "node-b");
        redis_reply_free(r);
    }
    assert_int_equal(bs, had);
    free_two(m, c, d);
}

/* A node's rows are exported from its store by another process, as they
 * were committed, and its lost outcomes counted in the checkpoint; a
 * store that is not there is refused and not created. */
static void slot_rows_export_from_a_gone_store(void **state)
{
    (void)state;
    char dir[64], a_dir[96], b_dir[96], ck[128], none[128];
    snprintf(dir, sizeof dir, "/tmp/crawld-test-gone-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(a_dir, sizeof a_dir, "%s/a", dir);
    snprintf(b_dir, sizeof b_dir, "%s/b", dir);
    snprintf(ck, sizeof ck, "%s/rescue.db", dir);
    db *a = open_store(a_dir), *b = open_store(b_dir);
    fill_store(a);
    char err[512];
    int64_t rows = 0, mark = 0;
    assert_int_equal(db_slot_export_store(a_dir, ck, "x", pick_odd, NULL, &rows, err,
                                          sizeof err), 0);
    assert_int_equal(rows, 6);
    /* started fetches (from a dispatch log): h1/p1 (id 4, twice) and h3/p1
     * (8) never got an outcome; h1/p0 (3) did; h0/p1 (2) is not the slot's */
    const int64_t ids[] = { 4, 3, 8, 4, 2 };
    const int att[] = { 1, 1, 1, 1, 1 };
    int64_t lost = -1;
    assert_int_equal(db_slot_lost(ck, ids, att, 5, &lost, err, sizeof err), 0);
    assert_int_equal(lost, 2);
    assert_int_equal(db_slot_lost(ck, NULL, NULL, 0, &lost, err, sizeof err), 0);
    assert_int_equal(lost, 0);
    assert_int_equal(db_slot_import(b, ck, "x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 6);
    assert_int_equal(has_url(b, "http://h5/p1"), 1);
    assert_int_equal(has_url(b, "http://h4/p0"), 0);
    snprintf(none, sizeof none, "%s/none", dir);
    assert_int_equal(db_slot_export_store(none, ck, "x", pick_odd, NULL, &rows, err, sizeof err),
                     -ENOENT);
    assert_non_null(strstr(err, "none/crawld.db"));
    assert_int_equal(rows, 0);
    assert_int_equal(access(none, F_OK), -1);
    assert_true(db_slot_lost(none, ids, att, 5, &lost, err, sizeof err) < 0); /* no file */
    assert_int_equal(db_close(a), 0);
    assert_int_equal(db_close(b), 0);
    const char *argv[] = { "/bin/rm", "-rf", dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

/* A gone node's outbox moves here: copied, then gone there; a missing one
 * is nothing to move; an unreadable one moves nothing and keeps ours. */
static void a_gone_nodes_outbox_moves_here(void **state)
{
    (void)state;
    char dir[64], a_dir[96], b_dir[96], c_dir[96], path[128], err[256];
    snprintf(dir, sizeof dir, "/tmp/crawld-test-goneob-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(a_dir, sizeof a_dir, "%s/a", dir);
    snprintf(b_dir, sizeof b_dir, "%s/b", dir);
    snprintf(c_dir, sizeof c_dir, "%s/c", dir);
    assert_int_equal(mkdir(a_dir, 0700), 0);
    assert_int_equal(mkdir(b_dir, 0700), 0);
    assert_int_equal(mkdir(c_dir, 0700), 0);
    outbox *a = NULL, *b = NULL;
    assert_int_equal(outbox_open(a_dir, &a, err, sizeof err), 0);
    assert_int_equal(outbox_open(b_dir, &b, err, sizeof err), 0);
    outbox_link l[3] = {
        { .slot = 1, .url = "http://x/1", .url_len = 10, .host = "x", .depth = 1 },
        { .slot = 2, .url = "http://y/2", .url_len = 10, .host = "y", .depth = 2 },
        { .slot = 3, .url = "http://z/3", .url_len = 10, .host = "z", .depth = 3 },
    };
    assert_int_equal(outbox_add(b, l, 3), 0);
    assert_int_equal(outbox_add(a, l, 1), 0);
    outbox_close(b); /* b is gone */
    int64_t rows = -1;
    assert_int_equal(outbox_take_from(a, b_dir, &rows), 0);
    assert_int_equal(rows, 3);
    assert_int_equal(outbox_count(a), 4);
    outbox_row *got = NULL;
    size_t n = 0;
    assert_int_equal(outbox_peek(a, 10, &got, &n), 0);
    assert_int_equal(n, 4);
    assert_string_equal(got[3].url, "http://z/3");
    assert_int_equal(got[3].slot, 3);
    assert_int_equal(got[3].depth, 3);
    outbox_rows_free(got, n);
    assert_int_equal(outbox_take_from(a, b_dir, &rows), 0); /* moved: nothing left there */
    assert_int_equal(rows, 0);
    assert_int_equal(outbox_take_from(a, c_dir, &rows), 0); /* none there */
    assert_int_equal(rows, 0);
    assert_int_equal(access(c_dir, F_OK), 0);
    snprintf(path, sizeof path, "%s/outbox.db", c_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a database, not at all, but long enough to look like a header.....\n", f);
    fclose(f);
    assert_true(outbox_take_from(a, c_dir, &rows) < 0); /* unreadable: nothing moved */
    assert_int_equal(rows, 0);
    assert_int_equal(outbox_count(a), 4);
    outbox_link more = { .slot = 4, .url = "http://w/4", .url_len = 10, .host = "w" };
    assert_int_equal(outbox_add(a, &more, 1), 0); /* and ours still works */
    assert_int_equal(outbox_count(a), 5);
    outbox_close(a);
    const char *argv[] = { "/bin/rm", "-rf", dir, NULL };
    proc_run(argv, NULL, 0, NULL, NULL);
}

/* The frontier forgets a slot's host (not while a job of it is in
 * flight), and reads a host again whose rows were added behind its back. */
static void frontier_forgets_and_wakes_a_slots_hosts(void **state)
{
    (void)state;
    two_stores t;
    two_stores_open(&t, "slotfront");
    frontier_opts o;
    frontier_opts_defaults(&o);
    o.obey_robots = false;
    o.delay_ms = 0;
    o.delay_factor = 0;
    char err[512];
    frontier *fa = frontier_new(&o, t.a, err, sizeof err);
    frontier *fb = frontier_new(&o, t.b, err, sizeof err);
    assert_non_null(fa);
    assert_non_null(fb);
    frontier_job j;
    int64_t wake;
    /* a: h1's queued row is handed out; forgetting h1 waits for it */
    int got = 0;
    for (int i = 0; i < 6 && !got; i++) {
        assert_int_equal(frontier_next(fa, 1000, &j, &wake), FRONTIER_JOB);
        got = strcmp(j.host, "h1") == 0;
        if (!got)
            assert_int_equal(frontier_return(fa, &j), 0);
    }
    assert_true(got);
    assert_int_equal(frontier_forget_host(fa, "h1"), -EBUSY);
    assert_int_equal(frontier_return(fa, &j), 0);
    assert_true(frontier_forget_host(fa, "h1") >= 0);
    assert_true(frontier_forget_host(fa, "h3") >= 0); /* in memory or still in SQLite */
    assert_true(frontier_forget_host(fa, "h5") >= 0);
    /* the other hosts' URLs only */
    int n = 0;
    while (frontier_next(fa, 1000, &j, &wake) == FRONTIER_JOB) {
        assert_true(strcmp(j.host, "h1") && strcmp(j.host, "h3") && strcmp(j.host, "h5"));
        frontier_outcome out = { .status = 200, .response_ms = 1, .retry_after_s = -1 };
        frontier_done(fa, &j, &out, 1000);
        n++;
    }
    assert_int_equal(n, 3);
    /* b: rows imported behind the frontier's back are read once woken */
    char ck[96];
    int64_t rows, mark;
    snprintf(ck, sizeof ck, "%s/slot.db", t.dir);
    assert_int_equal(db_slot_export(t.a, ck, "x", pick_odd, NULL, &rows, err, sizeof err), 0);
    assert_int_equal(db_slot_import(t.b, ck, "x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(frontier_next(fb, 1000, &j, &wake), FRONTIER_DRAINED);
    for (int h = 1; h < 6; h += 2) {
        char host[8];
        snprintf(host, sizeof host, "h%d", h);
        assert_int_equal(frontier_wake_host(fb, host), 0);
    }
    n = 0;
    while (frontier_next(fb, 1000, &j, &wake) == FRONTIER_JOB) {
        assert_non_null(strstr(j.url, "/p1")); /* the queued ones; p0 were done */
        frontier_outcome out = { .status = 200, .response_ms = 1, .retry_after_s = -1 };
        frontier_done(fb, &j, &out, 1000);
        n++;
    }
    assert_int_equal(n, 3);
    frontier_free(fa);
    frontier_free(fb);
    /* a robots.txt fetch in flight holds the host too */
    o.obey_robots = true;
    frontier *fr = frontier_new(&o, t.a, err, sizeof err);
    assert_non_null(fr);
    assert_int_equal(frontier_next(fr, 1000, &j, &wake), FRONTIER_JOB);
    assert_true(j.is_robots);
    char host[16];
    snprintf(host, sizeof host, "%s", j.host);
    assert_int_equal(frontier_forget_host(fr, host), -EBUSY);
    assert_int_equal(frontier_return(fr, &j), 0);
    assert_true(frontier_forget_host(fr, host) >= 0);
    frontier_free(fr);
    assert_int_equal(db_flush(t.a), 0);
    two_stores_close(&t);
}

static void forget_in(void *arg, int64_t id)
{
    frontier_forget_id(arg, id);
}

/* Wakes h1, h3, h5 and hands out what fb has of them; returns how many. */
static int fetch_odd_hosts(frontier *fb)
{
    frontier_job j;
    int64_t wake;
    for (int h = 1; h < 6; h += 2) {
        char host[8];
        snprintf(host, sizeof host, "h%d", h);
        assert_int_equal(frontier_wake_host(fb, host), 0);
    }
    int n = 0;
    while (frontier_next(fb, 1000, &j, &wake) == FRONTIER_JOB) {
        frontier_outcome out = { .status = 200, .response_ms = 1, .retry_after_s = -1 };
        frontier_done(fb, &j, &out, 1000);
        n++;
    }
    return n;
}

/* A slot's rows are dropped after the frontier handed them out (their
 * bits stay set), then loaded back: SQLite gives them the same ids again
 * (they were the last rows), and the frontier reads them only because the
 * drop cleared those bits (told by db_slot_drop; without it, 0 here). */
static void a_dropped_rows_ids_are_read_again_when_reused(void **state)
{
    (void)state;
    two_stores t;
    two_stores_open(&t, "slotids");
    frontier_opts o;
    frontier_opts_defaults(&o);
    o.obey_robots = false;
    o.delay_ms = 0;
    o.delay_factor = 0;
    char err[512], ck[96];
    int64_t rows, mark;
    snprintf(ck, sizeof ck, "%s/slot.db", t.dir);
    assert_int_equal(db_slot_export(t.a, ck, "x", pick_odd, NULL, &rows, err, sizeof err), 0);
    assert_int_equal(db_slot_import(t.b, ck, "x", &mark, &rows, err, sizeof err), 0);
    frontier *fb = frontier_new(&o, t.b, err, sizeof err);
    assert_non_null(fb);
    assert_int_equal(fetch_odd_hosts(fb), 3);
    for (int h = 1; h < 6; h += 2) {
        char host[8];
        snprintf(host, sizeof host, "h%d", h);
        assert_true(frontier_forget_host(fb, host) >= 0);
    }
    /* the outcomes frontier_done queued are committed before the drop (as
     * crawl_slot_drop does): applied after it they would meet no row */
    assert_int_equal(db_flush(t.b), 0);
    assert_int_equal(db_slot_drop(t.b, pick_odd, NULL, forget_in, fb, &rows, err, sizeof err), 0);
    assert_int_equal(rows, 6);
    assert_int_equal(db_slot_import(t.b, ck, "x", &mark, &rows, err, sizeof err), 0);
    assert_int_equal(mark, 0); /* the ids start again from 1 */
    /* the frontier's reader may answer from its last snapshot a while */
    int n = 0;
    for (int tries = 0; n < 3 && tries < 200; tries++) {
        n += fetch_odd_hosts(fb);
        if (n < 3)
            nap_ms(10);
    }
    assert_int_equal(n, 3);
    frontier_free(fb);
    two_stores_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(slotmap_join_moves_about_slots_over_nodes, teardown),
        cmocka_unit_test_teardown(slotmap_leave_moves_only_the_leavers_slots, teardown),
        cmocka_unit_test_teardown(slot_of_spreads_hosts, teardown),
        cmocka_unit_test_teardown(config_cluster_defaults_and_errors, teardown),
        cmocka_unit_test_teardown(redis_open_names_the_address_when_refused, teardown),
        cmocka_unit_test_teardown(redis_pipeline_and_reply_types, teardown),
        cmocka_unit_test_teardown(redis_timeout_then_reconnect, teardown),
        cmocka_unit_test_teardown(redis_restart_from_append_only_file, teardown),
        cmocka_unit_test_teardown(recorded_checkpoints_are_listed, teardown),
        cmocka_unit_test_teardown(checkpoint_files_of_a_node_are_swept, teardown),
        cmocka_unit_test_teardown(members_join_and_leave_move_few_slots, teardown),
        cmocka_unit_test_teardown(slot_count_is_fixed_by_the_first_node, teardown),
        cmocka_unit_test_teardown(member_fences_itself_while_redis_is_unreachable, teardown),
        cmocka_unit_test_teardown(paused_node_fences_itself_no_overlap, teardown),
        cmocka_unit_test_teardown(cluster_status_shows_nodes_map_and_streams, teardown),
        cmocka_unit_test_teardown(default_node_id_is_host_and_state_dir, teardown),
        cmocka_unit_test_teardown(run_says_when_it_cannot_reach_redis, teardown),
        cmocka_unit_test_teardown(quiet_ends_after_two_rounds_with_nothing_in_between, teardown),
        cmocka_unit_test_teardown(quiet_waits_for_every_stream_entry_to_be_acked, teardown),
        cmocka_unit_test_teardown(quiet_waits_for_a_slot_in_transit, teardown),
        cmocka_unit_test_teardown(a_crashed_node_keeps_its_slots_within_the_grace, teardown),
        cmocka_unit_test_teardown(export_fails_the_old_owner_keeps_the_slot, teardown),
        cmocka_unit_test_teardown(a_lease_that_ran_out_during_the_handover, teardown),
        cmocka_unit_test_teardown(a_failed_drop_is_retried_once_the_new_owner_loaded, teardown),
        cmocka_unit_test_teardown(slow_handovers_do_not_starve_the_renewals, teardown),
        cmocka_unit_test_teardown(import_fails_the_new_owner_does_not_fetch, teardown),
        cmocka_unit_test_teardown(a_slot_never_loaded_passes_its_checkpoint_on, teardown),
        cmocka_unit_test_teardown(a_departing_node_hands_every_slot_over, teardown),
        cmocka_unit_test_teardown(a_gone_nodes_slots_are_rescued_from_its_store, teardown),
        cmocka_unit_test_teardown(a_finished_crawls_map_stays_when_a_node_exits, teardown),
        cmocka_unit_test_teardown(checkpoints_travel_through_redis, teardown),
        cmocka_unit_test_teardown(a_rescue_that_outlasts_the_lease_is_given_up, teardown),
        cmocka_unit_test_teardown(a_paused_node_drops_what_was_rescued_before_taking_it_back,
                                  teardown),
        cmocka_unit_test_teardown(slot_rows_export_from_a_gone_store, teardown),
        cmocka_unit_test_teardown(a_gone_nodes_outbox_moves_here, teardown),
        cmocka_unit_test_teardown(slot_rows_export_import_drop, teardown),
        cmocka_unit_test_teardown(slot_checkpoint_carries_host_state, teardown),
        cmocka_unit_test_teardown(slot_export_and_import_failures_leave_nothing, teardown),
        cmocka_unit_test_teardown(frontier_forgets_and_wakes_a_slots_hosts, teardown),
        cmocka_unit_test_teardown(a_dropped_rows_ids_are_read_again_when_reused, teardown),
    };
    const char *only = getenv("CRAWLD_TEST_ONLY"); /* one case by name (* wildcards) */
    if (only != NULL && *only != '\0')
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
