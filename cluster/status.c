/* cluster/status: `crawld cluster status`. One pipeline per table (nodes,
 * then slots), so the figures of one table are read at nearly one moment;
 * nothing is written. */
#include "status.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/member.h"
#include "cluster/redis.h"
#include "common/alloc.h"

#define K 600

static const char *str_or(const redis_reply *r, const char *dflt)
{
    redis_type t = redis_reply_type(r);
    return t == REDIS_T_STR || t == REDIS_T_STATUS ? redis_reply_str(r, NULL) : dflt;
}

/* A field of an XINFO GROUPS entry (a flat name/value array). */
static long long field(const redis_reply *g, const char *name, long long dflt)
{
    for (size_t i = 0; i + 1 < redis_reply_count(g); i += 2)
        if (strcmp(redis_reply_str(redis_reply_at(g, i), NULL), name) == 0)
            return redis_reply_type(redis_reply_at(g, i + 1)) == REDIS_T_NIL
                       ? dflt
                       : redis_reply_int(redis_reply_at(g, i + 1));
    return dflt;
}

static void ms_left(long long pttl, char *buf, size_t len)
{
    if (pttl >= 0)
        snprintf(buf, len, "%lld ms", pttl);
    else
        snprintf(buf, len, "%s", pttl == -1 ? "no expiry" : "expired");
}

int cluster_status_print(const char *addr, const char *crawl_id, FILE *out, char *err,
                         size_t errlen)
{
    redis_conn *c = NULL;
    redis_reply *meta = NULL, *mem = NULL, *head[4] = { NULL, NULL, NULL, NULL };
    redis_reply **nr = NULL, **sr = NULL;
    size_t nn = 0, nsr = 0;
    char p[300], k[K], k2[K];
    int rc = redis_open(addr, 5000, &c, err, errlen);
    if (rc < 0)
        return rc;
    member_prefix(crawl_id, p, sizeof p);
    snprintf(k, sizeof k, "%smeta", p);
    rc = redis_cmd(c, &meta, "HGET", k, "slots", NULL);
    if (rc < 0)
        goto io;
    if (redis_reply_type(meta) != REDIS_T_STR) {
        snprintf(err, errlen, "redis %s: no crawl named '%s' (no key %smeta)", addr, crawl_id, p);
        rc = -ENOENT;
        goto out;
    }
    long long slots = redis_reply_int(meta);
    if (slots < 1 || slots > 65536) {
        snprintf(err, errlen, "redis %s: %smeta holds a bad slot count", addr, p);
        rc = -EINVAL;
        goto out;
    }
    /* coordinator, its lease, the epoch, the members */
    snprintf(k, sizeof k, "%scoord", p);
    const char *g1[] = { "GET", k }, *g2[] = { "PTTL", k };
    snprintf(k2, sizeof k2, "%sepoch", p);
    const char *g3[] = { "GET", k2 };
    char mk[K];
    snprintf(mk, sizeof mk, "%smembers", p);
    const char *g4[] = { "SMEMBERS", mk };
    rc = redis_append(c, 2, g1, NULL);
    if (rc == 0) rc = redis_append(c, 2, g2, NULL);
    if (rc == 0) rc = redis_append(c, 2, g3, NULL);
    if (rc == 0) rc = redis_append(c, 2, g4, NULL);
    for (int i = 0; i < 4 && rc == 0; i++)
        rc = redis_read(c, &head[i]);
    if (rc < 0)
        goto io;
    mem = head[3];
    head[3] = NULL;
    char left[32];
    ms_left(redis_reply_int(head[1]), left, sizeof left);
    fprintf(out, "crawl %s at %s: %lld slots, map epoch %lld\n", crawl_id, addr, slots,
            redis_reply_int(head[2]));
    fprintf(out, "coordinator: %s%s%s%s\n", str_or(head[0], "(none)"),
            redis_reply_type(head[0]) == REDIS_T_STR ? " (lease " : "",
            redis_reply_type(head[0]) == REDIS_T_STR ? left : "",
            redis_reply_type(head[0]) == REDIS_T_STR ? " left)" : "");

    /* the slot table: map owner, lease holder and its PTTL, stream figures */
    nsr = (size_t)slots * 5;
    sr = cr_calloc(nsr, sizeof *sr);
    if (sr == NULL) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    char mapk[K];
    snprintf(mapk, sizeof mapk, "%smap", p);
    for (long long s = 0; s < slots && rc == 0; s++) {
        char sk[K], lk[K], num[24];
        snprintf(sk, sizeof sk, "%sslot:%lld", p, s);
        snprintf(lk, sizeof lk, "%slinks:%lld", p, s);
        snprintf(num, sizeof num, "%lld", s);
        const char *a[] = { "HGET", mapk, num }, *b[] = { "GET", sk }, *d[] = { "PTTL", sk },
                   *e[] = { "XLEN", lk }, *f[] = { "XINFO", "GROUPS", lk };
        rc = redis_append(c, 3, a, NULL);
        if (rc == 0) rc = redis_append(c, 2, b, NULL);
        if (rc == 0) rc = redis_append(c, 2, d, NULL);
        if (rc == 0) rc = redis_append(c, 2, e, NULL);
        if (rc == 0) rc = redis_append(c, 3, f, NULL);
    }
    for (size_t i = 0; i < nsr && rc == 0; i++)
        rc = redis_read(c, &sr[i]);
    if (rc < 0)
        goto io;

    /* the node table (after the slots, to count each node's leases) */
    nn = redis_reply_count(mem);
    nr = cr_calloc(2 * nn + 1, sizeof *nr);
    if (nr == NULL) {
        rc = -ENOMEM;
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nn && rc == 0; i++) {
        char nk[K];
        snprintf(nk, sizeof nk, "%snode:%s", p, redis_reply_str(redis_reply_at(mem, i), NULL));
        const char *a[] = { "GET", nk }, *b[] = { "PTTL", nk };
        rc = redis_append(c, 2, a, NULL);
        if (rc == 0)
            rc = redis_append(c, 2, b, NULL);
    }
    for (size_t i = 0; i < 2 * nn && rc == 0; i++)
        rc = redis_read(c, &nr[i]);
    if (rc < 0)
        goto io;
    fprintf(out, "nodes: %zu\n", nn);
    fprintf(out, "  %-32s %-12s %-7s %-6s %s\n", "node", "lease left", "mapped", "held", "info");
    for (size_t i = 0; i < nn; i++) {
        const char *id = redis_reply_str(redis_reply_at(mem, i), NULL);
        long mapped = 0, held = 0;
        for (long long s = 0; s < slots; s++) {
            mapped += strcmp(str_or(sr[5 * s], ""), id) == 0;
            held += strcmp(str_or(sr[5 * s + 1], ""), id) == 0;
        }
        ms_left(redis_reply_int(nr[2 * i + 1]), left, sizeof left);
        fprintf(out, "  %-32s %-12s %-7ld %-6ld %s\n", id,
                redis_reply_type(nr[2 * i]) == REDIS_T_STR ? left : "expired", mapped, held,
                str_or(nr[2 * i], "(gone)"));
    }
    fprintf(out, "slots:\n  %-5s %-24s %-24s %-12s %-8s %-8s %s\n", "slot", "map owner",
            "lease holder", "lease left", "depth", "pending", "lag");
    long long total_depth = 0, total_pending = 0;
    for (long long s = 0; s < slots; s++) {
        redis_reply **r = &sr[5 * s];
        const redis_reply *grp = redis_reply_at(r[4], 0); /* the owners' group */
        long long depth = redis_reply_type(r[3]) == REDIS_T_INT ? redis_reply_int(r[3]) : 0;
        long long pending = grp ? field(grp, "pending", 0) : 0;
        long long lag = grp ? field(grp, "lag", -1) : depth;
        char lagtxt[24];
        if (lag >= 0)
            snprintf(lagtxt, sizeof lagtxt, "%lld", lag);
        else
            snprintf(lagtxt, sizeof lagtxt, "?");
        ms_left(redis_reply_int(r[2]), left, sizeof left);
        fprintf(out, "  %-5lld %-24s %-24s %-12s %-8lld %-8lld %s\n", s, str_or(r[0], "-"),
                str_or(r[1], "-"), redis_reply_type(r[1]) == REDIS_T_STR ? left : "-", depth,
                pending, lagtxt);
        total_depth += depth;
        total_pending += pending;
    }
    fprintf(out, "streams: %lld entries, %lld pending\n", total_depth, total_pending);
    /* slots handed over whose checkpoint no new owner has loaded yet */
    snprintf(k, sizeof k, "%sckpts", p);
    redis_reply *tr = NULL;
    if (redis_cmd(c, &tr, "SMEMBERS", k, NULL) < 0)
        goto io;
    fprintf(out, "in transit: %zu slots", redis_reply_count(tr));
    for (size_t i = 0; i < redis_reply_count(tr); i++)
        fprintf(out, "%s%s", i ? " " : " (", redis_reply_str(redis_reply_at(tr, i), NULL));
    fprintf(out, "%s\n", redis_reply_count(tr) ? ")" : "");
    redis_reply_free(tr);
    rc = 0;
    goto out;
io:
    snprintf(err, errlen, "%s", redis_error(c));
    rc = -EPIPE;
out:
    if (nr != NULL)
        for (size_t i = 0; i < 2 * nn; i++)
            redis_reply_free(nr[i]);
    if (sr != NULL)
        for (size_t i = 0; i < nsr; i++)
            redis_reply_free(sr[i]);
    cr_free(nr);
    cr_free(sr);
    for (int i = 0; i < 4; i++)
        redis_reply_free(head[i]);
    redis_reply_free(mem);
    redis_reply_free(meta);
    redis_free(c);
    return rc;
}
