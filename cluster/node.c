/* cluster/node: the node thread (see node.h). The thread owns the member
 * and both xchg; other threads only call member_may_fetch (atomic) and
 * read the info copy under mu. */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cluster/quiet.h"
#include "cluster/slotmap.h"
#include "common/alloc.h"
#include "common/clock.h"

struct node {
    node_opts o;
    member *m;
    xchg *rd, *fw;
    pthread_t th;
    atomic_bool stop;
    bool *had;             /* per slot: held at the last round (to claim on gain) */
    uint32_t *held;
    pthread_mutex_t mu;    /* guards info */
    node_info info;
    quiet *q;              /* NULL without o.quiet */
    atomic_bool settled, ended;
    uint64_t epoch_seen;
    int64_t epoch_since;   /* when epoch_seen was first seen */
    int64_t paused_since;  /* 0: not paused */
    uint64_t pauses;
    int fault;             /* o.fault once armed, else XCHG_FAULT_NONE */
};

static void nap_ms(int64_t ms)
{
    struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

static void publish(node *n)
{
    node_info in;
    memset(&in, 0, sizeof in);
    member_get_info(n->m, &in.member);
    xchg_get_info(n->rd, &in.reader);
    xchg_get_info(n->fw, &in.forwarder);
    in.outbox = outbox_count(n->o.outbox);
    in.paused = !in.member.redis_up || !in.reader.redis_up || !in.forwarder.redis_up;
    in.settled = atomic_load(&n->settled);
    in.ended = atomic_load(&n->ended);
    int64_t now = cr_mono_ms();
    if (in.paused && n->paused_since == 0) {
        n->paused_since = now;
        n->pauses++;
        fprintf(stderr, "crawld: cluster paused: Redis is unreachable (%.200s); not fetching,"
                        " retrying every %lld ms\n",
                in.member.error[0] ? in.member.error
                : in.reader.error[0] ? in.reader.error : in.forwarder.error,
                (long long)member_tick_ms(n->m));
    } else if (!in.paused && n->paused_since != 0) {
        fprintf(stderr, "crawld: cluster resumed: Redis is reachable again after %.1f s\n",
                (double)(now - n->paused_since) / 1000.0);
        n->paused_since = 0;
    }
    in.paused_ms = n->paused_since ? now - n->paused_since : 0;
    in.pauses = n->pauses;
    if (in.paused)
        snprintf(in.why, sizeof in.why, "cluster paused, Redis unreachable: %.250s",
                 in.member.error[0] ? in.member.error
                 : in.reader.error[0] ? in.reader.error : in.forwarder.error);
    pthread_mutex_lock(&n->mu);
    n->info = in;
    pthread_mutex_unlock(&n->mu);
}

/* Whether the map has settled. */
static void follow(node *n, int64_t now, size_t k)
{
    member_info mi;
    member_get_info(n->m, &mi);
    if (mi.epoch != n->epoch_seen) {
        n->epoch_seen = mi.epoch;
        n->epoch_since = now;
    }
    if (!atomic_load(&n->settled) && mi.redis_up && mi.epoch > 0 && mi.held == mi.wanted &&
        k == mi.held && now - n->epoch_since >= n->o.member.lease_ms)
        atomic_store(&n->settled, true);
}

/* Publishes this node's report and runs a round of the end check. */
static void check_end(node *n)
{
    uint64_t gen = 0;
    int q = n->o.quiet(n->o.end_arg, &gen);
    if (q < 0)
        return; /* not started: no report, so the others wait for it */
    /* idle only with the outbox empty: a link between outbox and stream
     * is in the outbox until the stream has it */
    bool idle = q == 1 && outbox_count(n->o.outbox) == 0;
    /* nor while a slot the map gives it is not taken or not loaded yet
     * (a rescue adds rows and outbox links) */
    member_info mi;
    member_get_info(n->m, &mi);
    idle = idle && mi.held == mi.wanted && mi.unloaded == 0;
    if (quiet_publish(n->q, idle, gen) < 0)
        return;
    if (quiet_check(n->q) == 1) {
        member_end(n->m);
        atomic_store(&n->ended, true);
        if (n->o.ended)
            n->o.ended(n->o.end_arg);
    }
}

/* The test hook (node_opts.fault): arms it when the caller says so. */
static void arm_fault(node *n)
{
    if (n->o.fault == XCHG_FAULT_NONE || n->fault != XCHG_FAULT_NONE ||
        n->o.fault_armed == NULL || n->o.faulted == NULL || !n->o.fault_armed(n->o.end_arg))
        return;
    n->fault = n->o.fault;
    xchg_set_fault(n->rd, n->fault);
    xchg_set_fault(n->fw, n->fault);
}

/* rc: what an xchg call returned that stops at point once armed. */
static void fault_point(node *n, int point, int rc)
{
    if (n->fault == point && rc > 0)
        n->o.faulted(n->o.end_arg);
}

static void *run(void *arg)
{
    node *n = arg;
    uint32_t slots = member_slots(n->m);
    int64_t tick = member_tick_ms(n->m), next = 0, next_trim = 0, next_quiet = 0;
    while (!atomic_load(&n->stop)) {
        int64_t now = cr_mono_ms();
        if (now >= next) {
            member_tick(n->m, now);
            next = now + tick;
        }
        arm_fault(n);
        int sent;
        while ((sent = xchg_forward(n->fw, n->o.outbox)) > 0 && !atomic_load(&n->stop))
            fault_point(n, XCHG_FAULT_AFTER_XADD, sent);
        size_t k = member_held_slots(n->m, n->held, slots);
        follow(n, now, k);
        /* a slot just taken: its last holder's lease is gone, so that node
         * reads and acks it no more (it reads only slots it may fetch):
         * every entry it left pending is this node's now, at any age */
        for (size_t i = 0; i < k; i++)
            if (!n->had[n->held[i]])
                xchg_claim(n->rd, n->held[i], 0);
        memset(n->had, 0, slots * sizeof *n->had);
        for (size_t i = 0; i < k; i++)
            n->had[n->held[i]] = true;
        /* read only slots whose lease is fresh: a fenced node must not
         * admit (and ack) links its successor should get */
        size_t fresh = 0;
        int64_t t = cr_mono_ms();
        for (size_t i = 0; i < k; i++)
            if (member_may_fetch(n->m, n->held[i], t))
                n->held[fresh++] = n->held[i];
        if (fresh > 0) {
            int got = xchg_consume(n->rd, n->held, fresh, n->o.apply, n->o.apply_arg);
            fault_point(n, XCHG_FAULT_AFTER_APPLY, got);
        } else
            nap_ms(tick / 10 > 0 ? tick / 10 : 1);
        if (now >= next_trim) {
            for (size_t i = 0; i < fresh; i++)
                xchg_trim(n->rd, n->held[i]);
            next_trim = now + 10 * tick;
        }
        if (n->q != NULL && now >= next_quiet && !atomic_load(&n->ended)) {
            check_end(n);
            next_quiet = now + tick;
        }
        publish(n);
    }
    return NULL;
}

int node_start(const node_opts *o, node **out, char *err, size_t errlen)
{
    *out = NULL;
    node *n = cr_calloc(1, sizeof *n);
    if (n == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    n->o = *o;
    pthread_mutex_init(&n->mu, NULL);
    int rc = member_open(&o->member, &n->m, err, errlen);
    int block = (int)(o->member.lease_ms / 10);
    xchg_opts xo = { .redis = o->member.redis, .crawl_id = o->member.crawl_id,
                     .node_id = o->member.node_id, .block_ms = block > 0 ? block : 1,
                     .batch = 500 };
    if (rc == 0)
        rc = xchg_open(&xo, &n->rd, err, errlen);
    if (rc == 0)
        rc = xchg_open(&xo, &n->fw, err, errlen);
    if (rc == 0) {
        n->had = cr_calloc(member_slots(n->m), sizeof *n->had);
        n->held = cr_calloc(member_slots(n->m), sizeof *n->held);
        if (n->had == NULL || n->held == NULL) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        }
    }
    if (rc == 0 && o->quiet != NULL)
        rc = quiet_open(o->member.redis, o->member.crawl_id, o->member.node_id,
                        member_slots(n->m), (int)o->member.lease_ms, &n->q, err, errlen);
    /* *out before the thread starts: its apply may call back into the
     * caller, which reads *out (clusterrun's is_local) */
    if (rc == 0)
        *out = n;
    if (rc == 0 && pthread_create(&n->th, NULL, run, n) != 0) {
        snprintf(err, errlen, "cannot start the cluster thread");
        rc = -EAGAIN;
    }
    if (rc < 0) {
        *out = NULL;
        quiet_free(n->q);
        xchg_free(n->fw);
        xchg_free(n->rd);
        member_free(n->m);
        cr_free(n->had);
        cr_free(n->held);
        pthread_mutex_destroy(&n->mu);
        cr_free(n);
        return rc;
    }
    return 0;
}

/* SIGTERM: leaves the map but keeps the slot leases, and ticks until every
 * slot is handed over (checkpoint recorded, lease released) or ten leases
 * went by; what is left is released as it is by member_leave. */
static void hand_over_all(node *n)
{
    if (member_depart(n->m) < 0)
        return;
    int64_t tick = member_tick_ms(n->m), until = cr_mono_ms() + 10 * n->o.member.lease_ms;
    uint32_t slots = member_slots(n->m);
    while (member_held_slots(n->m, n->held, slots) > 0 && cr_mono_ms() < until) {
        while (xchg_forward(n->fw, n->o.outbox) > 0)
            ;
        member_tick(n->m, cr_mono_ms());
        if (member_held_slots(n->m, n->held, slots) > 0)
            nap_ms(tick);
    }
}

void node_stop(node *n, bool leave)
{
    if (n == NULL)
        return;
    atomic_store(&n->stop, true);
    pthread_join(n->th, NULL);
    if (leave) {
        while (xchg_forward(n->fw, n->o.outbox) > 0)
            ;
        if (!atomic_load(&n->ended) && n->o.member.handover != NULL)
            hand_over_all(n);
        member_leave(n->m);
        if (n->q && !atomic_load(&n->ended))
            quiet_leave(n->q);
    }
    quiet_free(n->q);
    xchg_free(n->fw);
    xchg_free(n->rd);
    member_free(n->m);
    cr_free(n->had);
    cr_free(n->held);
    pthread_mutex_destroy(&n->mu);
    cr_free(n);
}

int node_settled(const node *n)
{
    return atomic_load(&n->settled);
}

int node_holds(const node *n, uint32_t slot)
{
    return member_is_local(n->m, slot);
}

uint32_t node_slot_of(const node *n, const char *host, size_t len)
{
    return slotmap_slot_of(host, len, member_slots(n->m));
}

int node_may_fetch(const node *n, const char *host, size_t len)
{
    return member_may_fetch(n->m, node_slot_of(n, host, len), cr_mono_ms());
}

void node_get_info(node *n, node_info *out)
{
    pthread_mutex_lock(&n->mu);
    *out = n->info;
    pthread_mutex_unlock(&n->mu);
}
