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
    if (in.paused)
        snprintf(in.why, sizeof in.why, "cluster paused, Redis unreachable: %.250s",
                 in.member.error[0] ? in.member.error
                 : in.reader.error[0] ? in.reader.error : in.forwarder.error);
    pthread_mutex_lock(&n->mu);
    n->info = in;
    pthread_mutex_unlock(&n->mu);
}

static void *run(void *arg)
{
    node *n = arg;
    uint32_t slots = member_slots(n->m);
    int64_t tick = member_tick_ms(n->m), next = 0, next_trim = 0;
    while (!atomic_load(&n->stop)) {
        int64_t now = cr_mono_ms();
        if (now >= next) {
            member_tick(n->m, now);
            next = now + tick;
        }
        while (xchg_forward(n->fw, n->o.outbox) > 0 && !atomic_load(&n->stop))
            ;
        size_t k = member_held_slots(n->m, n->held, slots);
        for (size_t i = 0; i < k; i++)
            if (!n->had[n->held[i]])
                xchg_claim(n->rd, n->held[i], n->o.member.lease_ms);
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
        if (fresh > 0)
            xchg_consume(n->rd, n->held, fresh, n->o.apply, n->o.apply_arg);
        else
            nap_ms(tick / 10 > 0 ? tick / 10 : 1);
        if (now >= next_trim) {
            for (size_t i = 0; i < fresh; i++)
                xchg_trim(n->rd, n->held[i]);
            next_trim = now + 10 * tick;
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
    if (rc == 0 && pthread_create(&n->th, NULL, run, n) != 0) {
        snprintf(err, errlen, "cannot start the cluster thread");
        rc = -EAGAIN;
    }
    if (rc < 0) {
        xchg_free(n->fw);
        xchg_free(n->rd);
        member_free(n->m);
        cr_free(n->had);
        cr_free(n->held);
        pthread_mutex_destroy(&n->mu);
        cr_free(n);
        return rc;
    }
    *out = n;
    return 0;
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
        member_leave(n->m);
    }
    xchg_free(n->fw);
    xchg_free(n->rd);
    member_free(n->m);
    cr_free(n->had);
    cr_free(n->held);
    pthread_mutex_destroy(&n->mu);
    cr_free(n);
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
