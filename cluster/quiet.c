/* cluster/quiet: the end of a shared crawl (see quiet.h). */
#include "quiet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/member.h"
#include "cluster/redis.h"
#include "common/alloc.h"
#include "common/clock.h"

#define KEYLEN 600

/* What one round saw of one member. */
typedef struct seen_report {
    char *id;
    char seq[32];
    uint64_t gen;
} seen_report;

struct quiet {
    redis_conn *rc;
    char prefix[300];
    char id[256];
    uint32_t slots;
    uint64_t seq;
    char start[24];          /* this process's start, so seqs differ across restarts */
    seen_report *prev;       /* the last round that saw everything idle */
    size_t nprev;
    bool have_prev;
};

static void forget(quiet *q)
{
    for (size_t i = 0; i < q->nprev; i++)
        cr_free(q->prev[i].id);
    cr_free(q->prev);
    q->prev = NULL;
    q->nprev = 0;
    q->have_prev = false;
}

int quiet_open(const char *redis, const char *crawl_id, const char *node_id, uint32_t slots,
               int timeout_ms, quiet **out, char *err, size_t errlen)
{
    *out = NULL;
    quiet *q = cr_calloc(1, sizeof *q);
    if (q == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    member_prefix(crawl_id, q->prefix, sizeof q->prefix);
    snprintf(q->id, sizeof q->id, "%s", node_id);
    snprintf(q->start, sizeof q->start, "%lld", (long long)cr_wall_ms());
    q->slots = slots;
    int rc = redis_open(redis, timeout_ms, &q->rc, err, errlen);
    if (rc < 0) {
        cr_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

void quiet_free(quiet *q)
{
    if (q == NULL)
        return;
    forget(q);
    redis_free(q->rc);
    cr_free(q);
}

static int alive(quiet *q)
{
    char err[256];
    if (!redis_alive(q->rc) && redis_reconnect(q->rc, err, sizeof err) < 0)
        return -EPIPE;
    return 0;
}

int quiet_publish(quiet *q, bool idle, uint64_t gen)
{
    if (alive(q) < 0)
        return -EPIPE;
    char k[KEYLEN], v[96];
    snprintf(k, sizeof k, "%squiet", q->prefix);
    snprintf(v, sizeof v, "%s.%llu %d %llu", q->start, (unsigned long long)++q->seq, idle ? 1 : 0,
             (unsigned long long)gen);
    redis_reply *r = NULL;
    int rc = redis_cmd(q->rc, &r, "HSET", k, q->id, v, NULL);
    redis_reply_free(r);
    return rc;
}

int quiet_leave(quiet *q)
{
    if (alive(q) < 0)
        return -EPIPE;
    char k[KEYLEN];
    snprintf(k, sizeof k, "%squiet", q->prefix);
    redis_reply *r = NULL;
    int rc = redis_cmd(q->rc, &r, "HDEL", k, q->id, NULL);
    redis_reply_free(r);
    return rc;
}

static const redis_reply *field(const redis_reply *flat, const char *name)
{
    for (size_t i = 0; i + 1 < redis_reply_count(flat); i += 2)
        if (strcmp(redis_reply_str(redis_reply_at(flat, i), NULL), name) == 0)
            return redis_reply_at(flat, i + 1);
    return NULL;
}

/* A slot's stream is empty for the crawl: every entry delivered to the
 * group and acked (or no entry ever). */
static bool stream_empty(const redis_reply *st, const redis_reply *groups)
{
    if (redis_reply_type(st) != REDIS_T_ARRAY)
        return true; /* no such stream: nothing was ever sent to the slot */
    const redis_reply *len = field(st, "length"), *last = field(st, "last-generated-id");
    const redis_reply *g = NULL;
    for (size_t i = 0; redis_reply_type(groups) == REDIS_T_ARRAY && i < redis_reply_count(groups);
         i++) {
        const redis_reply *name = field(redis_reply_at(groups, i), "name");
        if (name && strcmp(redis_reply_str(name, NULL), "owners") == 0)
            g = redis_reply_at(groups, i);
    }
    if (g == NULL)
        return len != NULL && redis_reply_int(len) == 0;
    const redis_reply *pend = field(g, "pending"), *ld = field(g, "last-delivered-id");
    if (pend == NULL || redis_reply_int(pend) != 0 || ld == NULL || last == NULL)
        return false;
    return strcmp(redis_reply_str(ld, NULL), redis_reply_str(last, NULL)) == 0;
}

/* Parses "SEQ IDLE GEN". */
static bool parse_report(const char *v, char *seq, size_t seqlen, int *idle, uint64_t *gen)
{
    char s[32];
    int i;
    unsigned long long g;
    if (sscanf(v, "%31s %d %llu", s, &i, &g) != 3)
        return false;
    snprintf(seq, seqlen, "%s", s);
    *idle = i;
    *gen = g;
    return true;
}

int quiet_check(quiet *q)
{
    if (alive(q) < 0) {
        forget(q);
        return -EPIPE;
    }
    char dk[KEYLEN], mk[KEYLEN], qk[KEYLEN], tk[KEYLEN];
    snprintf(dk, sizeof dk, "%sdone", q->prefix);
    snprintf(tk, sizeof tk, "%sckpts", q->prefix);
    snprintf(mk, sizeof mk, "%smembers", q->prefix);
    snprintf(qk, sizeof qk, "%squiet", q->prefix);
    const char *multi[] = { "MULTI" }, *get[] = { "GET", dk }, *sm[] = { "SMEMBERS", mk },
               *hg[] = { "HGETALL", qk }, *exec[] = { "EXEC" }, *sc[] = { "SCARD", tk };
    int rc = redis_append(q->rc, 1, multi, NULL);
    if (rc == 0) rc = redis_append(q->rc, 2, get, NULL);
    if (rc == 0) rc = redis_append(q->rc, 2, sm, NULL);
    if (rc == 0) rc = redis_append(q->rc, 2, hg, NULL);
    for (uint32_t s = 0; s < q->slots && rc == 0; s++) {
        char lk[KEYLEN];
        snprintf(lk, sizeof lk, "%slinks:%u", q->prefix, s);
        const char *xs[] = { "XINFO", "STREAM", lk }, *xg[] = { "XINFO", "GROUPS", lk };
        rc = redis_append(q->rc, 3, xs, NULL);
        if (rc == 0)
            rc = redis_append(q->rc, 3, xg, NULL);
    }
    if (rc == 0) /* slots handed over whose checkpoint is not loaded yet */
        rc = redis_append(q->rc, 2, sc, NULL);
    if (rc == 0)
        rc = redis_append(q->rc, 1, exec, NULL);
    size_t nq = 6 + 2 * (size_t)q->slots;
    redis_reply **r = cr_calloc(nq, sizeof *r);
    if (r == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < nq && rc == 0; i++)
        rc = redis_read(q->rc, &r[i]);
    seen_report *now = NULL;
    size_t nnow = 0;
    int result = 0;
    const redis_reply *ex = rc == 0 ? r[nq - 1] : NULL;
    if (rc < 0 || redis_reply_type(ex) != REDIS_T_ARRAY ||
        redis_reply_count(ex) != 4 + 2 * (size_t)q->slots) {
        forget(q);
        result = rc < 0 ? -EPIPE : 0;
        goto out;
    }
    if (redis_reply_type(redis_reply_at(ex, 0)) == REDIS_T_STR) {
        result = 1; /* another node saw the end */
        goto out;
    }
    const redis_reply *mem = redis_reply_at(ex, 1), *rep = redis_reply_at(ex, 2);
    bool quiet_all = redis_reply_count(mem) > 0 &&
                     redis_reply_int(redis_reply_at(ex, 3 + 2 * (size_t)q->slots)) == 0;
    for (uint32_t s = 0; s < q->slots && quiet_all; s++)
        quiet_all = stream_empty(redis_reply_at(ex, 3 + 2 * s), redis_reply_at(ex, 4 + 2 * s));
    nnow = redis_reply_count(mem);
    now = cr_calloc(nnow + 1, sizeof *now);
    if (now == NULL) {
        result = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < nnow && quiet_all; i++) {
        const char *id = redis_reply_str(redis_reply_at(mem, i), NULL);
        const redis_reply *v = field(rep, id);
        int idle = 0;
        now[i].id = cr_strdup(id);
        if (now[i].id == NULL || v == NULL ||
            !parse_report(redis_reply_str(v, NULL), now[i].seq, sizeof now[i].seq, &idle,
                          &now[i].gen) ||
            !idle)
            quiet_all = false;
    }
    if (!quiet_all) {
        forget(q);
        goto out;
    }
    /* every member idle, every stream empty: the end if the last round
     * saw the same, and every member published since with the same count */
    bool end = q->have_prev && q->nprev == nnow;
    for (size_t i = 0; i < nnow && end; i++) {
        bool found = false;
        for (size_t k = 0; k < q->nprev && !found; k++)
            if (strcmp(q->prev[k].id, now[i].id) == 0) {
                found = true;
                end = strcmp(q->prev[k].seq, now[i].seq) != 0 && q->prev[k].gen == now[i].gen;
            }
        end = end && found;
    }
    if (end) {
        redis_reply *d = NULL;
        rc = redis_cmd(q->rc, &d, "SET", dk, q->id, NULL);
        redis_reply_free(d);
        result = rc < 0 ? -EPIPE : 1;
        goto out;
    }
    /* a round newly all quiet, or one whose members have not all
     * published since: keep the older one only while the counts hold */
    bool keep = q->have_prev && q->nprev == nnow;
    for (size_t i = 0; i < nnow && keep; i++) {
        bool same = false;
        for (size_t k = 0; k < q->nprev && !same; k++)
            same = strcmp(q->prev[k].id, now[i].id) == 0 && q->prev[k].gen == now[i].gen;
        keep = same;
    }
    if (!keep) {
        forget(q);
        q->prev = now;
        q->nprev = nnow;
        q->have_prev = true;
        now = NULL;
        nnow = 0;
    }
out:
    for (size_t i = 0; now && i < nnow; i++)
        cr_free(now[i].id);
    cr_free(now);
    for (size_t i = 0; i < nq; i++)
        redis_reply_free(r[i]);
    cr_free(r);
    return result;
}
