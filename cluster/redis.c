/* cluster/redis: hiredis behind our own small API (see redis.h).
 *
 * The only file that includes hiredis. A redis_reply is a redisReply seen
 * through an opaque pointer. A failed context is freed at once and
 * c->ctx left NULL, so "dead" has one representation; redis_reconnect
 * builds a new context from the saved address and timeout. hiredis
 * writes with write(2), so a peer that went away would raise SIGPIPE:
 * redis_open ignores SIGPIPE when it is at its default (crawld run does
 * so too), and the failed write then comes back as EPIPE. */
#include "redis.h"

#include <errno.h>
#include <hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"

#define REDIS_MAX_ARGS 64

struct redis_conn {
    redisContext *ctx;  /* NULL: dead */
    char addr[160];
    int timeout_ms;
    char err[512];
};

static struct timeval ms_tv(int ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    return tv;
}

static void mark_dead(redis_conn *c, const char *what)
{
    if (c->ctx != NULL) {
        snprintf(c->err, sizeof c->err, "redis %.160s: %.60s: %.128s", c->addr, what,
                 c->ctx->errstr[0] ? c->ctx->errstr : "connection lost");
        redisFree(c->ctx);
        c->ctx = NULL;
    }
}

static int connect_now(redis_conn *c, char *err, size_t errlen)
{
    struct timeval tv = ms_tv(c->timeout_ms);
    redisContext *ctx = NULL;
    if (strncmp(c->addr, "unix:", 5) == 0) {
        ctx = redisConnectUnixWithTimeout(c->addr + 5, tv);
    } else if (strncmp(c->addr, "tcp:", 4) == 0) {
        char host[160];
        const char *colon = strrchr(c->addr + 4, ':');
        if (colon == NULL || (size_t)(colon - (c->addr + 4)) >= sizeof host) {
            snprintf(err, errlen, "redis %s: not unix:/PATH or tcp:HOST:PORT", c->addr);
            return -EINVAL;
        }
        memcpy(host, c->addr + 4, (size_t)(colon - (c->addr + 4)));
        host[colon - (c->addr + 4)] = '\0';
        ctx = redisConnectWithTimeout(host, (int)strtol(colon + 1, NULL, 10), tv);
    } else {
        snprintf(err, errlen, "redis %s: not unix:/PATH or tcp:HOST:PORT", c->addr);
        return -EINVAL;
    }
    if (ctx == NULL) {
        snprintf(err, errlen, "redis %s: out of memory", c->addr);
        return -ENOMEM;
    }
    if (ctx->err) {
        snprintf(err, errlen, "redis %s: cannot connect: %s", c->addr, ctx->errstr);
        redisFree(ctx);
        return -ECONNREFUSED;
    }
    if (redisSetTimeout(ctx, tv) != REDIS_OK) {
        snprintf(err, errlen, "redis %s: cannot set the command timeout", c->addr);
        redisFree(ctx);
        return -EIO;
    }
    if (strncmp(c->addr, "tcp:", 4) == 0)
        (void)redisEnableKeepAlive(ctx);
    c->ctx = ctx;
    c->err[0] = '\0';
    return 0;
}

int redis_open(const char *addr, int timeout_ms, redis_conn **out, char *err, size_t errlen)
{
    *out = NULL;
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    if (strlen(addr) >= sizeof ((redis_conn *)0)->addr) {
        snprintf(err, errlen, "redis address too long");
        return -EINVAL;
    }
    redis_conn *c = cr_calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
    int rc = connect_now(c, err, errlen);
    if (rc < 0) {
        cr_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void redis_free(redis_conn *c)
{
    if (c == NULL)
        return;
    if (c->ctx != NULL)
        redisFree(c->ctx);
    cr_free(c);
}

int redis_reconnect(redis_conn *c, char *err, size_t errlen)
{
    if (c->ctx != NULL) {
        redisFree(c->ctx);
        c->ctx = NULL;
    }
    int rc = connect_now(c, err, errlen);
    if (rc < 0)
        snprintf(c->err, sizeof c->err, "%s", err);
    return rc;
}

int redis_alive(const redis_conn *c)
{
    return c->ctx != NULL;
}

const char *redis_error(const redis_conn *c)
{
    return c->err;
}

int redis_append(redis_conn *c, int argc, const char *const *argv, const size_t *lens)
{
    if (c->ctx == NULL)
        return -EPIPE;
    if (argc <= 0)
        return -EINVAL;
    size_t small[REDIS_MAX_ARGS];
    size_t *l = NULL;
    if (lens == NULL) {
        l = argc <= REDIS_MAX_ARGS ? small : cr_malloc((size_t)argc * sizeof *l);
        if (l == NULL)
            return -ENOMEM;
        for (int i = 0; i < argc; i++)
            l[i] = strlen(argv[i]);
        lens = l;
    }
    int rc = redisAppendCommandArgv(c->ctx, argc, (const char **)argv, lens);
    if (l != NULL && l != small)
        cr_free(l);
    if (rc != REDIS_OK) {
        mark_dead(c, "cannot queue a command");
        return -EPIPE;
    }
    return 0;
}

int redis_read(redis_conn *c, redis_reply **out)
{
    *out = NULL;
    if (c->ctx == NULL)
        return -EPIPE;
    void *r = NULL;
    if (redisGetReply(c->ctx, &r) != REDIS_OK || r == NULL) {
        mark_dead(c, "no reply");
        return -EPIPE;
    }
    *out = (redis_reply *)r;
    return 0;
}

int redis_cmdv(redis_conn *c, int argc, const char *const *argv, const size_t *lens,
               redis_reply **out)
{
    *out = NULL;
    int rc = redis_append(c, argc, argv, lens);
    if (rc < 0)
        return rc;
    return redis_read(c, out);
}

int redis_cmd(redis_conn *c, redis_reply **out, const char *arg0, ...)
{
    const char *argv[REDIS_MAX_ARGS];
    int argc = 0;
    va_list ap;
    va_start(ap, arg0);
    for (const char *a = arg0; a != NULL && argc < REDIS_MAX_ARGS; a = va_arg(ap, const char *))
        argv[argc++] = a;
    va_end(ap);
    return redis_cmdv(c, argc, argv, NULL, out);
}

static const redisReply *rr(const redis_reply *r)
{
    return (const redisReply *)(const void *)r;
}

redis_type redis_reply_type(const redis_reply *r)
{
    if (r == NULL)
        return REDIS_T_NIL;
    switch (rr(r)->type) {
    case REDIS_REPLY_INTEGER: return REDIS_T_INT;
    case REDIS_REPLY_STRING: return REDIS_T_STR;
    case REDIS_REPLY_STATUS: return REDIS_T_STATUS;
    case REDIS_REPLY_ERROR: return REDIS_T_ERROR;
    case REDIS_REPLY_ARRAY: return REDIS_T_ARRAY;
    default: return REDIS_T_NIL;
    }
}

long long redis_reply_int(const redis_reply *r)
{
    if (r == NULL)
        return 0;
    if (rr(r)->type == REDIS_REPLY_INTEGER)
        return rr(r)->integer;
    if (rr(r)->type == REDIS_REPLY_STRING)
        return strtoll(rr(r)->str, NULL, 10);
    return 0;
}

const char *redis_reply_str(const redis_reply *r, size_t *len)
{
    int t = r ? rr(r)->type : REDIS_REPLY_NIL;
    if (t == REDIS_REPLY_STRING || t == REDIS_REPLY_STATUS || t == REDIS_REPLY_ERROR) {
        if (len != NULL)
            *len = rr(r)->len;
        return rr(r)->str;
    }
    if (len != NULL)
        *len = 0;
    return "";
}

size_t redis_reply_count(const redis_reply *r)
{
    return r && rr(r)->type == REDIS_REPLY_ARRAY ? rr(r)->elements : 0;
}

const redis_reply *redis_reply_at(const redis_reply *r, size_t i)
{
    if (r == NULL || rr(r)->type != REDIS_REPLY_ARRAY || i >= rr(r)->elements)
        return NULL;
    return (const redis_reply *)(const void *)rr(r)->element[i];
}

void redis_reply_free(redis_reply *r)
{
    if (r != NULL)
        freeReplyObject(r);
}
