/* cluster/xchg: outbox -> XADD, XREADGROUP -> apply -> XACK. See xchg.h.
 * Stream entries carry the fields u (the URL key), f (the fetch form, only
 * when it differs), h (host), d (depth), k (kind). */
#include "xchg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/member.h"
#include "cluster/redis.h"
#include "common/alloc.h"

#define GROUP "owners"
#define MAX_SLOTS 65536
#define KEYLEN 400

struct xchg {
    redis_conn *rc;
    xchg_opts o;
    char id[256];
    char prefix[300];
    bool *group_made;     /* per slot: XGROUP CREATE done on this connection */
    bool check_pending;   /* read own pending entries before new ones */
    xchg_info info;
};

static void stream_key(const xchg *x, char *buf, uint32_t slot)
{
    snprintf(buf, KEYLEN, "%slinks:%u", x->prefix, slot);
}

static void up(xchg *x);

static int down(xchg *x)
{
    x->info.redis_up = false;
    snprintf(x->info.error, sizeof x->info.error, "%s", redis_error(x->rc));
    return -EPIPE;
}

/* Reconnects a dead connection; after a reconnect, groups are made again
 * (idempotent) and own pending entries re-read. */
static int ready(xchg *x)
{
    if (redis_alive(x->rc))
        return 0;
    char err[256];
    if (redis_reconnect(x->rc, err, sizeof err) < 0)
        return down(x);
    memset(x->group_made, 0, MAX_SLOTS * sizeof *x->group_made);
    x->check_pending = true;
    up(x);
    return 0;
}

static void up(xchg *x)
{
    x->info.redis_up = true;
    x->info.error[0] = '\0';
}

int xchg_open(const xchg_opts *o, xchg **out, char *err, size_t errlen)
{
    *out = NULL;
    xchg *x = cr_calloc(1, sizeof *x);
    if (x == NULL || (x->group_made = cr_calloc(MAX_SLOTS, sizeof *x->group_made)) == NULL) {
        cr_free(x);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    x->o = *o;
    if (x->o.batch == 0)
        x->o.batch = 500;
    snprintf(x->id, sizeof x->id, "%s", o->node_id);
    member_prefix(o->crawl_id, x->prefix, sizeof x->prefix);
    x->check_pending = true;
    int rc = redis_open(o->redis, o->block_ms + 1000, &x->rc, err, errlen);
    if (rc < 0) {
        xchg_free(x);
        return rc;
    }
    x->info.redis_up = true;
    *out = x;
    return 0;
}

void xchg_free(xchg *x)
{
    if (x == NULL)
        return;
    redis_free(x->rc);
    cr_free(x->group_made);
    cr_free(x);
}

void xchg_get_info(const xchg *x, xchg_info *out)
{
    *out = x->info;
}

void xchg_set_fault(xchg *x, int fault)
{
    x->o.fault = fault;
}

int xchg_forward(xchg *x, outbox *ob)
{
    if (ready(x) < 0)
        return -EPIPE;
    outbox_row *rows = NULL;
    size_t n = 0;
    int rc = outbox_peek(ob, x->o.batch, &rows, &n);
    if (rc < 0 || n == 0)
        return rc;
    int64_t *ids = cr_calloc(n, sizeof *ids);
    if (ids == NULL) {
        outbox_rows_free(rows, n);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        char k[KEYLEN], d[16], kind[16];
        stream_key(x, k, rows[i].slot);
        snprintf(d, sizeof d, "%d", rows[i].depth);
        snprintf(kind, sizeof kind, "%d", rows[i].kind);
        const char *argv[13] = { "XADD", k, "*", "u", rows[i].url, "h", rows[i].host,
                                 "d", d, "k", kind, "f", rows[i].fetch_url };
        size_t lens[13];
        for (int j = 0; j < 13; j++)
            lens[j] = argv[j] ? strlen(argv[j]) : 0;
        lens[4] = rows[i].url_len;
        rc = redis_append(x->rc, rows[i].fetch_url ? 13 : 11, argv, lens);
        ids[i] = rows[i].id;
    }
    size_t ok = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        redis_reply *r = NULL;
        rc = redis_read(x->rc, &r);
        if (rc == 0 && redis_reply_type(r) == REDIS_T_STR)
            ok++;
        redis_reply_free(r);
    }
    outbox_rows_free(rows, n);
    if (rc < 0) {
        cr_free(ids);
        return down(x);
    }
    up(x);
    if (ok != n) { /* an error reply (out of memory in Redis?): keep all, retry */
        cr_free(ids);
        snprintf(x->info.error, sizeof x->info.error, "redis refused %zu of %zu XADDs", n - ok, n);
        return -EIO;
    }
    if (x->o.fault == XCHG_FAULT_AFTER_XADD) {
        cr_free(ids);
        return (int)n;
    }
    rc = outbox_delete(ob, ids, n);
    cr_free(ids);
    if (rc < 0)
        return rc;
    x->info.forwarded += n;
    return (int)n;
}

static int make_groups(xchg *x, const uint32_t *slots, size_t n)
{
    size_t sent = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (slots[i] >= MAX_SLOTS || x->group_made[slots[i]])
            continue;
        char k[KEYLEN];
        stream_key(x, k, slots[i]);
        const char *argv[] = { "XGROUP", "CREATE", k, GROUP, "0", "MKSTREAM" };
        rc = redis_append(x->rc, 6, argv, NULL);
        sent++;
    }
    for (size_t i = 0; i < sent && rc == 0; i++) {
        redis_reply *r = NULL;
        rc = redis_read(x->rc, &r); /* OK, or BUSYGROUP: it exists */
        redis_reply_free(r);
    }
    if (rc < 0)
        return down(x);
    for (size_t i = 0; i < n; i++)
        if (slots[i] < MAX_SLOTS)
            x->group_made[slots[i]] = true;
    return 0;
}

static int atoi_safe(const char *s)
{
    long v = strtol(s, NULL, 10);
    return v < 0 ? 0 : v > 1000000 ? 1000000 : (int)v;
}

static const char *field_of(const redis_reply *fields, const char *name, size_t *len)
{
    for (size_t i = 0; i + 1 < redis_reply_count(fields); i += 2)
        if (strcmp(redis_reply_str(redis_reply_at(fields, i), NULL), name) == 0)
            return redis_reply_str(redis_reply_at(fields, i + 1), len);
    return NULL;
}

/* Parses an XREADGROUP reply into links (pointing into r) and per-stream
 * ack lists. Returns entries seen (with or without a body). */
static size_t parse_read(xchg *x, const redis_reply *r, xchg_link *out, size_t *nl)
{
    size_t seen = 0;
    *nl = 0;
    for (size_t s = 0; s < redis_reply_count(r); s++) {
        const redis_reply *st = redis_reply_at(r, s);
        const char *key = redis_reply_str(redis_reply_at(st, 0), NULL);
        const char *colon = strrchr(key, ':');
        uint32_t slot = colon ? (uint32_t)strtoul(colon + 1, NULL, 10) : 0;
        const redis_reply *ents = redis_reply_at(st, 1);
        for (size_t e = 0; e < redis_reply_count(ents); e++) {
            const redis_reply *fields = redis_reply_at(redis_reply_at(ents, e), 1);
            seen++;
            size_t ul = 0, fl = 0;
            const char *u = field_of(fields, "u", &ul), *h = field_of(fields, "h", NULL);
            if (u == NULL || h == NULL)
                continue; /* deleted (trimmed) while pending: only acked */
            xchg_link *l = &out[(*nl)++];
            l->slot = slot;
            l->url = u;
            l->url_len = ul;
            l->fetch_url = field_of(fields, "f", &fl);
            l->fetch_url_len = fl;
            l->host = h;
            const char *d = field_of(fields, "d", NULL), *k = field_of(fields, "k", NULL);
            l->depth = d ? atoi_safe(d) : 0;
            l->kind = k ? atoi_safe(k) : 0;
        }
    }
    (void)x;
    return seen;
}

/* XACKs every entry of r, pipelined, one XACK per stream. */
static int ack_all(xchg *x, const redis_reply *r)
{
    size_t sent = 0;
    int rc = 0;
    for (size_t s = 0; s < redis_reply_count(r) && rc == 0; s++) {
        const redis_reply *st = redis_reply_at(r, s);
        const redis_reply *ents = redis_reply_at(st, 1);
        size_t ne = redis_reply_count(ents);
        if (ne == 0)
            continue;
        const char **argv = cr_calloc(ne + 3, sizeof *argv);
        if (argv == NULL)
            return -ENOMEM;
        argv[0] = "XACK";
        argv[1] = redis_reply_str(redis_reply_at(st, 0), NULL);
        argv[2] = GROUP;
        for (size_t e = 0; e < ne; e++)
            argv[3 + e] = redis_reply_str(redis_reply_at(redis_reply_at(ents, e), 0), NULL);
        rc = redis_append(x->rc, (int)ne + 3, argv, NULL);
        cr_free(argv);
        sent++;
    }
    for (size_t i = 0; i < sent && rc == 0; i++) {
        redis_reply *a = NULL;
        rc = redis_read(x->rc, &a);
        redis_reply_free(a);
    }
    return rc;
}

int xchg_consume(xchg *x, const uint32_t *slots, size_t n, xchg_apply_fn apply, void *arg)
{
    if (n == 0)
        return 0;
    if (ready(x) < 0 || make_groups(x, slots, n) < 0)
        return -EPIPE;
    char cnt[24], blk[24];
    snprintf(cnt, sizeof cnt, "%zu", x->o.batch);
    snprintf(blk, sizeof blk, "%d", x->o.block_ms);
    size_t argc = 0, cap = 9 + 2 * n;
    const char **argv = cr_calloc(cap, sizeof *argv);
    char (*keys)[KEYLEN] = cr_calloc(n, sizeof *keys);
    redis_reply *r = NULL;
    xchg_link *links = NULL;
    int rc = argv == NULL || keys == NULL ? -ENOMEM : 0;
    if (rc < 0)
        goto out;
again:;
    bool pending = x->check_pending;
    argc = 0;
    argv[argc++] = "XREADGROUP";
    argv[argc++] = "GROUP";
    argv[argc++] = GROUP;
    argv[argc++] = x->id;
    argv[argc++] = "COUNT";
    argv[argc++] = cnt;
    if (!pending && x->o.block_ms > 0) {
        argv[argc++] = "BLOCK";
        argv[argc++] = blk;
    }
    argv[argc++] = "STREAMS";
    for (size_t i = 0; i < n; i++) {
        stream_key(x, keys[i], slots[i]);
        argv[argc++] = keys[i];
    }
    for (size_t i = 0; i < n; i++)
        argv[argc++] = pending ? "0" : ">";
    rc = redis_cmdv(x->rc, (int)argc, argv, NULL, &r);
    if (rc < 0) {
        rc = down(x);
        goto out;
    }
    up(x);
    if (redis_reply_type(r) == REDIS_T_ERROR) {
        /* NOGROUP: a stream deleted under us; make the groups again */
        snprintf(x->info.error, sizeof x->info.error, "%s", redis_reply_str(r, NULL));
        memset(x->group_made, 0, MAX_SLOTS * sizeof *x->group_made);
        rc = -EIO;
        goto out;
    }
    size_t total = 0;
    for (size_t s = 0; s < redis_reply_count(r); s++)
        total += redis_reply_count(redis_reply_at(redis_reply_at(r, s), 1));
    if (total == 0) {
        rc = 0;
        if (pending) { /* nothing of ours pending: read new ones */
            x->check_pending = false;
            redis_reply_free(r);
            r = NULL;
            goto again;
        }
        goto out;
    }
    links = cr_calloc(total, sizeof *links);
    if (links == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    size_t nl = 0;
    parse_read(x, r, links, &nl);
    if (nl > 0) {
        rc = apply(arg, links, nl);
        if (rc < 0) {
            x->check_pending = true; /* they stay pending: deliver them again */
            goto out;
        }
    }
    if (x->o.fault == XCHG_FAULT_AFTER_APPLY) {
        rc = (int)nl;
        goto out;
    }
    rc = ack_all(x, r);
    if (rc < 0) {
        x->check_pending = true;
        rc = rc == -EPIPE ? down(x) : rc;
        goto out;
    }
    x->info.applied += nl;
    if (pending)
        x->info.redelivered += nl;
    rc = (int)nl;
out:
    redis_reply_free(r);
    cr_free(links);
    cr_free(keys);
    cr_free((void *)argv);
    return rc;
}

int xchg_claim(xchg *x, uint32_t slot, int64_t min_idle_ms)
{
    if (ready(x) < 0 || make_groups(x, &slot, 1) < 0)
        return -EPIPE;
    char k[KEYLEN], idle[24], cnt[24], start[64] = "0-0";
    stream_key(x, k, slot);
    snprintf(idle, sizeof idle, "%lld", (long long)min_idle_ms);
    snprintf(cnt, sizeof cnt, "%zu", x->o.batch);
    long long claimed = 0;
    for (int round = 0; round < 100000; round++) {
        redis_reply *r = NULL;
        const char *argv[] = { "XAUTOCLAIM", k, GROUP, x->id, idle, start, "COUNT", cnt, "JUSTID" };
        if (redis_cmdv(x->rc, 9, argv, NULL, &r) < 0)
            return down(x);
        if (redis_reply_type(r) != REDIS_T_ARRAY) {
            redis_reply_free(r);
            return -EIO;
        }
        claimed += (long long)redis_reply_count(redis_reply_at(r, 1));
        snprintf(start, sizeof start, "%s", redis_reply_str(redis_reply_at(r, 0), NULL));
        redis_reply_free(r);
        if (strcmp(start, "0-0") == 0)
            break;
    }
    up(x);
    if (claimed > 0)
        x->check_pending = true;
    x->info.claimed += (uint64_t)claimed;
    return (int)claimed;
}

int xchg_trim(xchg *x, uint32_t slot)
{
    if (ready(x) < 0 || make_groups(x, &slot, 1) < 0)
        return -EPIPE;
    char k[KEYLEN], minid[64];
    stream_key(x, k, slot);
    redis_reply *p = NULL, *g = NULL, *t = NULL;
    const char *pa[] = { "XPENDING", k, GROUP }, *ga[] = { "XINFO", "GROUPS", k };
    int rc = redis_cmdv(x->rc, 3, pa, NULL, &p);
    if (rc == 0)
        rc = redis_cmdv(x->rc, 3, ga, NULL, &g);
    if (rc < 0) {
        rc = down(x);
        goto out;
    }
    if (redis_reply_int(redis_reply_at(p, 0)) > 0) {
        snprintf(minid, sizeof minid, "%s", redis_reply_str(redis_reply_at(p, 1), NULL));
    } else {
        /* nothing pending: everything up to the last delivered id can go */
        const char *last = NULL;
        for (size_t i = 0; i < redis_reply_count(g) && last == NULL; i++) {
            const redis_reply *e = redis_reply_at(g, i);
            if (strcmp(field_of(e, "name", NULL) ? field_of(e, "name", NULL) : "", GROUP) == 0)
                last = field_of(e, "last-delivered-id", NULL);
        }
        unsigned long long ms = 0, seq = 0;
        if (last == NULL || sscanf(last, "%llu-%llu", &ms, &seq) != 2) {
            rc = 0;
            goto out;
        }
        snprintf(minid, sizeof minid, "%llu-%llu", ms, seq + 1);
    }
    const char *ta[] = { "XTRIM", k, "MINID", minid };
    rc = redis_cmdv(x->rc, 4, ta, NULL, &t);
    if (rc < 0) {
        rc = down(x);
        goto out;
    }
    rc = (int)redis_reply_int(t);
out:
    redis_reply_free(p);
    redis_reply_free(g);
    redis_reply_free(t);
    return rc;
}
