/* tests/test_xchg: the link exchange (storage/outbox + cluster/xchg)
 * against a real redis-server and a real seen-set (storage/db): what one
 * node forwards, the owner admits exactly once, across a crash after XADD
 * before the outbox delete, a crash after the commit before XACK, a
 * consumer that died with entries pending, and Redis killed and restarted
 * from its append-only file. Random links print their seed;
 * CRAWLD_TEST_SEED replays one. */
#include <errno.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <time.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cluster/redis.h"
#include "cluster/node.h"
#include "cluster/slotmap.h"
#include "cluster/xchg.h"
#include "common/clock.h"
#include "storage/db.h"
#include "storage/outbox.h"
#include "tests/support/redisd.h"

#define SLOTS 8
#define HOSTS 60
#define LINKS 1200

static redisd *rd;
static char dir[64];
static outbox *ob;
static db *store;
/* node threads a failed assertion would leave running: the teardown stops them */
static struct node *live[2];

/* The links one page batch sends: random URLs on 60 hosts, with repeats. */
static char *urls[LINKS];
static char *hosts[LINKS];
static size_t unique_n;

static uint64_t rng;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int setup(void **state)
{
    (void)state;
    const char *env = getenv("CRAWLD_TEST_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)cr_wall_ms();
    printf("# seed %llu (CRAWLD_TEST_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    rng = seed ? seed : 1;
    rd = redisd_start();
    if (rd == NULL)
        return -1;
    snprintf(dir, sizeof dir, "/tmp/crawld-xchg-XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    char err[512];
    if (outbox_open(dir, &ob, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    char sd[128];
    snprintf(sd, sizeof sd, "%s/state", dir);
    store = db_open(sd, NULL, err, sizeof err);
    if (store == NULL) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    unique_n = 0;
    for (size_t i = 0; i < LINKS; i++) {
        char h[32], u[96];
        snprintf(h, sizeof h, "h%02u.test", (unsigned)(next_rand() % HOSTS));
        /* about one link in four repeats an earlier one */
        unsigned page = (unsigned)(next_rand() % (LINKS * 3 / 4));
        snprintf(u, sizeof u, "http://%s/p%u", h, page);
        urls[i] = strdup(u);
        hosts[i] = strdup(h);
    }
    for (size_t i = 0; i < LINKS; i++) {
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcmp(urls[i], urls[j]) == 0;
        unique_n += !dup;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < 2; i++) {
        node_stop(live[i], false);
        live[i] = NULL;
    }
    if (store != NULL)
        db_close(store);
    store = NULL;
    outbox_close(ob);
    ob = NULL;
    redisd_stop(rd);
    rd = NULL;
    for (size_t i = 0; i < LINKS; i++) {
        free(urls[i]);
        free(hosts[i]);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}

static void fill_outbox_live(int forwarder_running)
{
    outbox_link v[LINKS];
    for (size_t i = 0; i < LINKS; i++) {
        v[i] = (outbox_link){ .slot = slotmap_slot_of(hosts[i], strlen(hosts[i]), SLOTS),
                              .url = urls[i], .url_len = strlen(urls[i]), .host = hosts[i],
                              .depth = 2, .kind = DB_KIND_NAVIGATION };
    }
    /* a page's links go in one transaction each: 40 pages of 30 */
    for (size_t i = 0; i < LINKS; i += 30)
        assert_int_equal(outbox_add(ob, v + i, 30), 0);
    if (!forwarder_running)
        assert_int_equal(outbox_count(ob), LINKS);
}

static void fill_outbox(void)
{
    fill_outbox_live(0);
}

static xchg *open_x(const char *node_id, int fault)
{
    xchg_opts o = { .redis = redisd_addr(rd), .crawl_id = "t", .node_id = node_id,
                    .block_ms = 50, .batch = 100, .fault = fault };
    xchg *x = NULL;
    char err[256];
    if (xchg_open(&o, &x, err, sizeof err) < 0)
        fail_msg("xchg_open: %s", err);
    return x;
}

/* What the owner admitted: new rows, rows already seen, calls. */
typedef struct admitted {
    size_t fresh, seen, calls;
    int fail;       /* apply fails (-EIO) while set */
} admitted;

/* The owner's apply: the batch's seen test and frontier insert, one wait. */
static int apply(void *arg, const xchg_link *v, size_t n)
{
    admitted *a = arg;
    a->calls++;
    if (a->fail)
        return -EIO;
    db_url *u = calloc(n, sizeof *u);
    int *st = calloc(n, sizeof *st);
    assert_non_null(u);
    assert_non_null(st);
    for (size_t i = 0; i < n; i++)
        u[i] = (db_url){ .url = v[i].url, .url_len = v[i].url_len, .host = v[i].host,
                         .depth = v[i].depth, .kind = v[i].kind, .state = DB_STATE_QUEUED };
    int rc = db_insert_urls_wait(store, u, n, st, NULL);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (st[i] == 1)
            a->fresh++;
        else if (st[i] == 0)
            a->seen++;
        else
            rc = st[i];
    }
    free(u);
    free(st);
    return rc;
}

static const uint32_t all_slots[SLOTS] = { 0, 1, 2, 3, 4, 5, 6, 7 };

static void forward_all(xchg *x)
{
    int n;
    while ((n = xchg_forward(x, ob)) > 0)
        ;
    assert_int_equal(n, 0);
    assert_int_equal(outbox_count(ob), 0);
}

static void consume_all(xchg *x, admitted *a)
{
    int n, idle = 0;
    while (idle < 2) {
        n = xchg_consume(x, all_slots, SLOTS, apply, a);
        assert_true(n >= 0);
        idle = n == 0 ? idle + 1 : 0;
    }
}

static long long redis_int(const char *a0, const char *a1, const char *a2)
{
    redis_conn *c = NULL;
    char err[256];
    assert_int_equal(redis_open(redisd_addr(rd), 2000, &c, err, sizeof err), 0);
    redis_reply *r = NULL;
    assert_int_equal(redis_cmd(c, &r, a0, a1, a2, NULL), 0);
    long long v = redis_reply_type(r) == REDIS_T_ARRAY ? redis_reply_int(redis_reply_at(r, 0))
                                                       : redis_reply_int(r);
    redis_reply_free(r);
    redis_free(c);
    return v;
}

static long long pending_total(void)
{
    long long p = 0;
    for (int s = 0; s < SLOTS; s++) {
        char k[64];
        snprintf(k, sizeof k, "crawld:t:links:%d", s);
        p += redis_int("XPENDING", k, "owners");
    }
    return p;
}

static long long stream_total(void)
{
    long long p = 0;
    for (int s = 0; s < SLOTS; s++) {
        char k[64];
        snprintf(k, sizeof k, "crawld:t:links:%d", s);
        p += redis_int("XLEN", k, NULL);
    }
    return p;
}

/* Everything forwarded is admitted once; acked, nothing pending; trimmed. */
static void links_cross_once_and_streams_trim(void **state)
{
    (void)state;
    fill_outbox();
    xchg *x = open_x("owner", XCHG_FAULT_NONE);
    forward_all(x);
    assert_int_equal(stream_total(), LINKS);
    admitted a = { 0 };
    consume_all(x, &a);
    assert_int_equal(a.fresh, unique_n);
    assert_int_equal(a.fresh + a.seen, LINKS);
    assert_int_equal(pending_total(), 0);
    long long dropped = 0;
    for (uint32_t s = 0; s < SLOTS; s++) {
        int n = xchg_trim(x, s);
        assert_true(n >= 0);
        dropped += n;
    }
    assert_int_equal(dropped, LINKS);
    assert_int_equal(stream_total(), 0);
    xchg_info in;
    xchg_get_info(x, &in);
    assert_int_equal(in.forwarded, LINKS);
    assert_int_equal(in.applied, LINKS);
    xchg_free(x);
}

/* Crash after the XADDs were acknowledged, before the outbox delete: the
 * restarted forwarder sends them again; the owner admits each URL once. */
static void crash_after_xadd_before_outbox_delete(void **state)
{
    (void)state;
    fill_outbox();
    xchg *x = open_x("sender", XCHG_FAULT_AFTER_XADD);
    assert_int_equal(xchg_forward(x, ob), 100);
    xchg_free(x);                      /* the "crash" */
    assert_int_equal(outbox_count(ob), LINKS);
    x = open_x("sender", XCHG_FAULT_NONE);
    forward_all(x);
    assert_int_equal(stream_total(), LINKS + 100);
    xchg_free(x);
    xchg *owner = open_x("owner", XCHG_FAULT_NONE);
    admitted a = { 0 };
    consume_all(owner, &a);
    assert_int_equal(a.fresh, unique_n);
    assert_int_equal(a.fresh + a.seen, LINKS + 100);
    assert_int_equal(pending_total(), 0);
    xchg_free(owner);
}

/* Crash after the owner committed a batch, before XACK: restarted with its
 * node id, it reads its pending entries first and finds them all seen. */
static void crash_after_commit_before_xack(void **state)
{
    (void)state;
    fill_outbox();
    xchg *x = open_x("sender", XCHG_FAULT_NONE);
    forward_all(x);
    xchg_free(x);
    xchg *owner = open_x("owner", XCHG_FAULT_AFTER_APPLY);
    admitted a = { 0 };
    int n = xchg_consume(owner, all_slots, SLOTS, apply, &a);
    assert_true(n > 0);
    xchg_free(owner);                  /* the "crash": committed, not acked */
    long long pend = pending_total();
    assert_int_equal(pend, n);
    size_t fresh_before = a.fresh;
    owner = open_x("owner", XCHG_FAULT_NONE);
    consume_all(owner, &a);
    assert_int_equal(a.fresh, unique_n);
    assert_int_equal(a.fresh + a.seen, LINKS + (size_t)n);
    assert_true(fresh_before > 0);
    xchg_info in;
    xchg_get_info(owner, &in);
    assert_int_equal(in.redelivered, n);
    assert_int_equal(pending_total(), 0);
    xchg_free(owner);
}

/* A node that read entries and died before it committed them: the new
 * owner claims them (XAUTOCLAIM) and admits them. */
static void new_owner_claims_a_dead_consumers_pending(void **state)
{
    (void)state;
    fill_outbox();
    xchg *x = open_x("sender", XCHG_FAULT_NONE);
    forward_all(x);
    xchg_free(x);
    xchg *dead = open_x("old-owner", XCHG_FAULT_NONE);
    admitted fails = { .fail = 1 };
    assert_int_equal(xchg_consume(dead, all_slots, SLOTS, apply, &fails), -EIO);
    xchg_free(dead);
    long long pend = pending_total();
    assert_true(pend > 0);
    xchg *owner = open_x("new-owner", XCHG_FAULT_NONE);
    long long claimed = 0;
    for (uint32_t s = 0; s < SLOTS; s++)
        claimed += xchg_claim(owner, s, 0);
    assert_int_equal(claimed, pend);
    admitted a = { 0 };
    consume_all(owner, &a);
    assert_int_equal(a.fresh, unique_n);
    assert_int_equal(a.fresh + a.seen, LINKS);
    assert_int_equal(pending_total(), 0);
    xchg_free(owner);
}

/* Redis killed (kill -9) in the middle: the forwarder says why and keeps
 * its rows; after Redis restarts from its append-only file, nothing is
 * lost and nothing admitted twice. */
static void redis_killed_and_restarted_loses_nothing(void **state)
{
    (void)state;
    fill_outbox();
    xchg *x = open_x("sender", XCHG_FAULT_NONE);
    assert_int_equal(xchg_forward(x, ob), 100);
    assert_int_equal(xchg_forward(x, ob), 100);
    assert_int_equal(redisd_signal(rd, SIGKILL), 0);
    assert_int_equal(xchg_forward(x, ob), -EPIPE);
    xchg_info in;
    xchg_get_info(x, &in);
    assert_false(in.redis_up);
    assert_non_null(strstr(in.error, redisd_addr(rd)));
    assert_int_equal(outbox_count(ob), LINKS - 200);
    assert_int_equal(xchg_forward(x, ob), -EPIPE); /* still down: retried, refused */
    assert_int_equal(redisd_restart(rd), 0);
    forward_all(x);
    xchg_get_info(x, &in);
    assert_true(in.redis_up);
    assert_int_equal(stream_total(), LINKS); /* the first 200 survived in the AOF */
    admitted a = { 0 };
    consume_all(x, &a);
    assert_int_equal(a.fresh, unique_n);
    assert_int_equal(a.fresh + a.seen, LINKS);
    xchg_free(x);
}

/* ---- two node threads (cluster/node) ------------------------------------ */

typedef struct owner_store {
    db *d;
    uint32_t me;            /* index into the two names */
    const uint32_t *owner;  /* slot -> index, rendezvous over the two */
    atomic_size_t fresh, seen, foreign;
} owner_store;

static int node_apply(void *arg, const xchg_link *v, size_t n)
{
    owner_store *o = arg;
    db_url *u = calloc(n, sizeof *u);
    int *st = calloc(n, sizeof *st);
    if (u == NULL || st == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        u[i] = (db_url){ .url = v[i].url, .url_len = v[i].url_len, .host = v[i].host,
                         .depth = v[i].depth, .kind = v[i].kind, .state = DB_STATE_QUEUED };
        if (o->owner[v[i].slot] != o->me)
            atomic_fetch_add(&o->foreign, 1);
    }
    int rc = db_insert_urls_wait(o->d, u, n, st, NULL);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (st[i] == 1)
            atomic_fetch_add(&o->fresh, 1);
        else
            atomic_fetch_add(&o->seen, 1);
    }
    free(u);
    free(st);
    return rc;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Two nodes on their threads: A's outbox reaches each slot's owner, each
 * URL is admitted once, by the owner of its host's slot only. */
static void two_nodes_admit_each_link_once_at_its_owner(void **state)
{
    (void)state;
    const char *names[2] = { "node-A", "node-B" };
    /* static: a failed assertion leaves the node threads running until the
     * teardown, and their apply reads these */
    static uint32_t owner[SLOTS];
    static owner_store sa, sb;
    slotmap_assign(names, 2, SLOTS, owner);
    char err[512], sd[128];
    snprintf(sd, sizeof sd, "%s/state-b", dir);
    db *db_b = db_open(sd, NULL, err, sizeof err);
    assert_non_null(db_b);
    outbox *ob_b = NULL;
    char obd[128];
    snprintf(obd, sizeof obd, "%s/state-b", dir);
    assert_int_equal(outbox_open(obd, &ob_b, err, sizeof err), 0);
    sa = (owner_store){ .d = store, .me = 0, .owner = owner };
    sb = (owner_store){ .d = db_b, .me = 1, .owner = owner };
    node *na = NULL, *nb = NULL;
    node_opts oa = { .member = { .redis = redisd_addr(rd), .crawl_id = "t", .node_id = names[0],
                                 .slots = SLOTS, .lease_ms = 800 },
                     .outbox = ob, .apply = node_apply, .apply_arg = &sa };
    node_opts obo = oa;
    obo.member.node_id = names[1];
    obo.outbox = ob_b;
    obo.apply_arg = &sb;
    assert_int_equal(node_start(&oa, &na, err, sizeof err), 0);
    live[0] = na;
    assert_int_equal(node_start(&obo, &nb, err, sizeof err), 0);
    live[1] = nb;
    /* both hold their rendezvous share */
    int settled = 0;
    for (int i = 0; i < 500 && !settled; i++) {
        settled = 1;
        for (uint32_t s = 0; s < SLOTS && settled; s++) {
            char h[32];
            int len = 0;
            /* any host of slot s will do: find one */
            for (int k = 0; k < 10000; k++) {
                len = snprintf(h, sizeof h, "x%d.test", k);
                if (slotmap_slot_of(h, (size_t)len, SLOTS) == s)
                    break;
            }
            settled = node_may_fetch(na, h, (size_t)len) == (owner[s] == 0) &&
                      node_may_fetch(nb, h, (size_t)len) == (owner[s] == 1);
        }
        if (!settled)
            sleep_ms(20);
    }
    assert_true(settled);
    fill_outbox_live(1);
    size_t total = 0;
    for (int i = 0; i < 1000; i++) {
        total = atomic_load(&sa.fresh) + atomic_load(&sb.fresh);
        if (total >= unique_n && outbox_count(ob) == 0 &&
            atomic_load(&sa.fresh) + atomic_load(&sa.seen) + atomic_load(&sb.fresh) +
                    atomic_load(&sb.seen) == LINKS)
            break;
        sleep_ms(20);
    }
    node_info in;
    node_get_info(na, &in);
    assert_false(in.paused);
    node_stop(na, true);
    node_stop(nb, true);
    live[0] = live[1] = NULL;
    assert_int_equal(outbox_count(ob), 0);
    assert_int_equal(atomic_load(&sa.fresh) + atomic_load(&sb.fresh), unique_n);
    assert_int_equal(atomic_load(&sa.foreign), 0);
    assert_int_equal(atomic_load(&sb.foreign), 0);
    assert_true(atomic_load(&sa.fresh) > 0 && atomic_load(&sb.fresh) > 0);
    assert_int_equal(pending_total(), 0);
    outbox_close(ob_b);
    db_close(db_b);
}

/* Redis unreachable: the node says so (paused, why), stops fetching, keeps
 * its outbox; once Redis is back it resumes and delivers everything. */
static void node_pauses_while_redis_is_down(void **state)
{
    (void)state;
    const char *names[1] = { "solo" };
    static uint32_t owner[SLOTS];
    static owner_store so;
    slotmap_assign(names, 1, SLOTS, owner);
    so = (owner_store){ .d = store, .me = 0, .owner = owner };
    char err[512];
    node *n = NULL;
    node_opts o = { .member = { .redis = redisd_addr(rd), .crawl_id = "t", .node_id = "solo",
                                .slots = SLOTS, .lease_ms = 400 },
                    .outbox = ob, .apply = node_apply, .apply_arg = &so };
    assert_int_equal(node_start(&o, &n, err, sizeof err), 0);
    live[0] = n;
    int i;
    for (i = 0; i < 200 && !node_may_fetch(n, "h01.test", 8); i++)
        sleep_ms(10);
    assert_true(node_may_fetch(n, "h01.test", 8));
    assert_int_equal(redisd_signal(rd, SIGKILL), 0);
    fill_outbox_live(1);
    node_info in;
    for (i = 0; i < 300; i++) {
        node_get_info(n, &in);
        if (in.paused && !node_may_fetch(n, "h01.test", 8))
            break;
        sleep_ms(10);
    }
    assert_true(in.paused);
    assert_false(node_may_fetch(n, "h01.test", 8));
    assert_non_null(strstr(in.why, "cluster paused, Redis unreachable"));
    assert_non_null(strstr(in.why, redisd_addr(rd)));
    assert_int_equal(outbox_count(ob), LINKS); /* nothing sent, nothing lost */
    assert_int_equal(redisd_restart(rd), 0);
    for (i = 0; i < 1000; i++) {
        node_get_info(n, &in);
        if (atomic_load(&so.fresh) + atomic_load(&so.seen) == LINKS && !in.paused)
            break;
        sleep_ms(10);
    }
    node_stop(n, true);
    live[0] = NULL;
    assert_false(in.paused);
    assert_int_equal(atomic_load(&so.fresh), unique_n);
    assert_int_equal(atomic_load(&so.fresh) + atomic_load(&so.seen), LINKS);
    assert_int_equal(outbox_count(ob), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(links_cross_once_and_streams_trim, setup, teardown),
        cmocka_unit_test_setup_teardown(crash_after_xadd_before_outbox_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(crash_after_commit_before_xack, setup, teardown),
        cmocka_unit_test_setup_teardown(new_owner_claims_a_dead_consumers_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(redis_killed_and_restarted_loses_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(two_nodes_admit_each_link_once_at_its_owner, setup, teardown),
        cmocka_unit_test_setup_teardown(node_pauses_while_redis_is_down, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
