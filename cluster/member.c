/* cluster/member: node and slot leases, the coordinator, the slot map.
 * The design and the fencing rule are in member.h. Owned by one thread
 * (the one calling member_tick); deadline[] is the only state other
 * threads read, one atomic per slot. */
#include "member.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/redis.h"
#include "cluster/slotmap.h"
#include "common/alloc.h"
#include "common/atomic_file.h"
#include "common/clock.h"

#define KEY_MAX 600

/* Renews (or deletes) KEYS[1] only while it still names this node. */
static const char RENEW_IF_MINE[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end";
/* P"holder" field ARGV[2] = ARGV[1], only while the slot lease KEYS[1]
 * still names ARGV[1]: 1, else 0 (the lease ran out during the load). */
static const char HOLD_IF_MINE[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "redis.call('HSET', KEYS[2], ARGV[2], ARGV[1]) return 1 else return 0 end";
static const char DEL_IF_MINE[] =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then "
    "return redis.call('DEL', KEYS[1]) else return 0 end";
/* A hand-over: while KEYS[1] (the slot lease) names this node, records the
 * checkpoint in KEYS[2] (unless ARGV[2] is ""), adds slot ARGV[4] to the
 * set KEYS[3] of slots in transit (the end check waits for it to empty)
 * and deletes the lease. A lease that ran out during the hand-over (no
 * key) is as good while nobody took the slot since: no record in KEYS[2]
 * and the holder (hash KEYS[4], field ARGV[4]) still this node; the next
 * SET NX then sees the record. 1 done, 0 another node has the slot. */
static const char HAND_OVER[] =
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur ~= ARGV[1] and (cur or redis.call('EXISTS', KEYS[2]) == 1 or"
    " redis.call('HGET', KEYS[4], ARGV[4]) ~= ARGV[1]) then return 0 end "
    "if ARGV[2] ~= '' then redis.call('HSET', KEYS[2], 'path', ARGV[2], 'epoch', ARGV[3],"
    " 'from', ARGV[1]) redis.call('SADD', KEYS[3], ARGV[4]) end "
    "if cur then redis.call('DEL', KEYS[1]) end return 1";
/* Deletes the record KEYS[1] while it still names checkpoint ARGV[1], and
 * slot ARGV[2] from the set KEYS[2]; a checkpoint sent through Redis
 * ("redis:KEY") goes with its record. */
static const char DEL_RECORD[] =
    "if redis.call('HGET', KEYS[1], 'path') == ARGV[1] then "
    "redis.call('SREM', KEYS[2], ARGV[2]) "
    "if string.sub(ARGV[1], 1, 6) == 'redis:' then redis.call('DEL', string.sub(ARGV[1], 7)) end "
    "return redis.call('DEL', KEYS[1]) else return 0 end";

#define CKPT_REDIS "redis:" /* a recorded checkpoint path: the rest is its key */

struct member {
    redis_conn *rc;
    member_opts o;
    char id[256];
    char prefix[300];
    char lease_s[24];     /* lease_ms as text */
    uint32_t slots;
    bool *held;
    bool *wanted;
    bool *leaving;        /* held, not wanted, gate closed: handover next tick */
    bool *unloaded;       /* held, its checkpoint not loaded yet */
    bool *orphaned;       /* lease lost (fenced): its rows here are dropped once
                           * P"holder" names the node that rescued them */
    bool departing;       /* member_depart: hand every slot over */
    bool ended;           /* member_end: the crawl is over, no slot is taken */
    _Atomic int64_t *deadline; /* may fetch until (monotonic ms); 0: no */
    atomic_bool *local;   /* held, loaded, not leaving (member_is_local) */
    member_info info;
};

void member_default_node_id(const char *state_dir, char *buf, size_t len)
{
    char host[256] = "localhost", path[4096];
    if (gethostname(host, sizeof host - 1) < 0)
        snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    if (realpath(state_dir, path) == NULL) {
        char cwd[2048];
        if (state_dir[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
            snprintf(path, sizeof path, "%s/%s", cwd, state_dir);
        else
            snprintf(path, sizeof path, "%s", state_dir);
    }
    snprintf(buf, len, "%s:%s", host, path);
}

void member_prefix(const char *crawl_id, char *buf, size_t len)
{
    snprintf(buf, len, "crawld:%s:", crawl_id);
}

/* P"ckpt:N": the checkpoint record of slot N. */
static void ckpt_key_of(const char *prefix, char *buf, uint32_t s)
{
    snprintf(buf, KEY_MAX, "%sckpt:%u", prefix, s);
}

int member_recorded_ckpts(const char *addr, const char *crawl_id, uint32_t slots, int timeout_ms,
                          member_ckpt_fn cb, void *arg, char *err, size_t errlen)
{
    redis_conn *rc = NULL;
    int r = redis_open(addr, timeout_ms, &rc, err, errlen);
    if (r < 0)
        return r;
    char prefix[300], ck[KEY_MAX]; /* as member.prefix */
    member_prefix(crawl_id, prefix, sizeof prefix);
    for (uint32_t s = 0; s < slots && r == 0; s++) {
        redis_reply *rep = NULL;
        ckpt_key_of(prefix, ck, s);
        r = redis_cmd(rc, &rep, "HGET", ck, "path", NULL);
        if (r < 0) {
            snprintf(err, errlen, "reading %s: %s", ck, redis_error(rc));
        } else if (redis_reply_type(rep) == REDIS_T_STR) {
            const char *path = redis_reply_str(rep, NULL);
            if (strncmp(path, CKPT_REDIS, strlen(CKPT_REDIS)) != 0)
                cb(arg, s, path);
        } else if (redis_reply_type(rep) != REDIS_T_NIL) {
            snprintf(err, errlen, "reading %s: not a checkpoint record", ck);
            r = -EPROTO;
        }
        redis_reply_free(rep);
    }
    redis_free(rc);
    return r;
}

static void key(const member *m, char *buf, const char *what)
{
    snprintf(buf, KEY_MAX, "%s%s", m->prefix, what);
}

static void slot_key(const member *m, char *buf, uint32_t s)
{
    snprintf(buf, KEY_MAX, "%sslot:%u", m->prefix, s);
}

static void note_down(member *m)
{
    m->info.redis_up = false;
    m->info.redis_errors++;
    snprintf(m->info.error, sizeof m->info.error, "%s", redis_error(m->rc));
}

int member_open(const member_opts *o, member **out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->slots == 0 || o->lease_ms < 4 || strlen(o->node_id) >= 256 || o->node_id[0] == '\0') {
        snprintf(err, errlen, "cluster: bad options (slots, lease_ms or node_id)");
        return -EINVAL;
    }
    member *m = cr_calloc(1, sizeof *m);
    if (m == NULL) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    m->o = *o;
    snprintf(m->id, sizeof m->id, "%s", o->node_id);
    member_prefix(o->crawl_id, m->prefix, sizeof m->prefix);
    snprintf(m->lease_s, sizeof m->lease_s, "%lld", (long long)o->lease_ms);
    /* Commands wait at most a lease: longer, and the fencing is what acts. */
    int rc = redis_open(o->redis, (int)o->lease_ms, &m->rc, err, errlen);
    if (rc < 0)
        goto fail;
    char k[KEY_MAX], n[24];
    key(m, k, "meta");
    snprintf(n, sizeof n, "%u", o->slots);
    redis_reply *r = NULL;
    rc = redis_cmd(m->rc, &r, "HSETNX", k, "slots", n, NULL);
    redis_reply_free(r);
    if (rc == 0)
        rc = redis_cmd(m->rc, &r, "HGET", k, "slots", NULL);
    if (rc < 0) {
        snprintf(err, errlen, "%s", redis_error(m->rc));
        goto fail;
    }
    long long stored = redis_reply_int(r);
    redis_reply_free(r);
    if (stored < 1 || stored > 65536) {
        snprintf(err, errlen, "cluster: %smeta holds a bad slot count", m->prefix);
        rc = -EINVAL;
        goto fail;
    }
    m->slots = (uint32_t)stored;
    m->held = cr_calloc(m->slots, sizeof *m->held);
    m->wanted = cr_calloc(m->slots, sizeof *m->wanted);
    m->deadline = cr_calloc(m->slots, sizeof *m->deadline);
    m->leaving = cr_calloc(m->slots, sizeof *m->leaving);
    m->unloaded = cr_calloc(m->slots, sizeof *m->unloaded);
    m->orphaned = cr_calloc(m->slots, sizeof *m->orphaned);
    m->local = cr_calloc(m->slots, sizeof *m->local);
    if (m->held == NULL || m->wanted == NULL || m->deadline == NULL || m->leaving == NULL ||
        m->unloaded == NULL || m->local == NULL || m->orphaned == NULL) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto fail;
    }
    /* rows here of a slot another node loaded since are stale */
    if (o->suspect != NULL && o->orphaned != NULL)
        o->suspect(o->hook_arg, m->slots, m->orphaned);
    if (o->store_dir != NULL && o->store_dir[0] != '\0') {
        key(m, k, "stores");
        rc = redis_cmd(m->rc, &r, "HSET", k, m->id, o->store_dir, NULL);
        redis_reply_free(r);
        if (rc < 0) {
            snprintf(err, errlen, "%s", redis_error(m->rc));
            goto fail;
        }
    }
    m->info.slots = m->slots;
    m->info.redis_up = true;
    *out = m;
    return 0;
fail:
    member_free(m);
    return rc;
}

void member_free(member *m)
{
    if (m == NULL)
        return;
    redis_free(m->rc);
    cr_free(m->held);
    cr_free(m->wanted);
    cr_free((void *)m->deadline);
    cr_free(m->leaving);
    cr_free(m->unloaded);
    cr_free(m->orphaned);
    cr_free((void *)m->local);
    cr_free(m);
}

size_t member_held_slots(const member *m, uint32_t *slots, size_t cap)
{
    size_t n = 0;
    for (uint32_t s = 0; s < m->slots && n < cap; s++)
        if (m->held[s])
            slots[n++] = s;
    return n;
}

uint32_t member_slots(const member *m)
{
    return m->slots;
}

int64_t member_tick_ms(const member *m)
{
    return m->o.lease_ms / 4 > 0 ? m->o.lease_ms / 4 : 1;
}

int member_may_fetch(const member *m, uint32_t slot, int64_t now_ms)
{
    if (slot >= m->slots)
        return 0;
    return now_ms < atomic_load_explicit(&m->deadline[slot], memory_order_acquire);
}

int member_is_local(const member *m, uint32_t slot)
{
    return slot < m->slots && atomic_load(&m->local[slot]);
}

void member_get_info(const member *m, member_info *out)
{
    *out = m->info;
}

static int eval_append(member *m, const char *script, const char *k)
{
    const char *argv[] = { "EVAL", script, "1", k, m->id, m->lease_s };
    return redis_append(m->rc, 6, argv, NULL);
}

/* Reads n replies, keeping them in r[] (NULL-filled on failure). */
static int read_n(member *m, redis_reply **r, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        r[i] = NULL;
        if (rc == 0)
            rc = redis_read(m->rc, &r[i]);
    }
    return rc;
}

static void free_n(redis_reply **r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        redis_reply_free(r[i]);
}

/* The coordinator's round: live nodes, their map, written if it changed. */
static int coordinate(member *m)
{
    char k[KEY_MAX], nk[KEY_MAX];
    redis_reply *mem = NULL, *cur = NULL, **ex = NULL;
    const char **live = NULL, **argv = NULL;
    uint32_t *owner = NULL;
    size_t n = 0;
    int rc;
    key(m, k, "members");
    rc = redis_cmd(m->rc, &mem, "SMEMBERS", k, NULL);
    if (rc < 0)
        goto out;
    n = redis_reply_count(mem);
    ex = cr_calloc(n + 1, sizeof *ex);
    live = cr_calloc(n + 1, sizeof *live);
    owner = cr_calloc(m->slots, sizeof *owner);
    argv = cr_calloc(2 * (size_t)m->slots + 2, sizeof *argv);
    if (ex == NULL || live == NULL || owner == NULL || argv == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        snprintf(nk, sizeof nk, "%snode:%s", m->prefix, redis_reply_str(redis_reply_at(mem, i), NULL));
        const char *a[] = { "EXISTS", nk };
        rc = redis_append(m->rc, 2, a, NULL);
    }
    if (rc == 0)
        rc = read_n(m, ex, n);
    if (rc < 0)
        goto out;
    size_t nlive = 0;
    char sk[KEY_MAX];
    key(m, sk, "seen");
    for (size_t i = 0; i < n; i++) {
        const char *id = redis_reply_str(redis_reply_at(mem, i), NULL);
        if (redis_reply_int(ex[i]) == 1) {
            live[nlive++] = id;
            continue;
        }
        /* lease gone: within the grace it keeps its slots (a restart on
         * its state_dir takes them back); past it, it is dropped */
        redis_reply *x = NULL;
        rc = redis_cmd(m->rc, &x, "HGET", sk, id, NULL);
        long long last = rc == 0 && redis_reply_type(x) == REDIS_T_STR
                             ? strtoll(redis_reply_str(x, NULL), NULL, 10) : 0;
        redis_reply_free(x);
        if (rc < 0)
            goto out;
        if (m->o.grace_ms > 0 && last > 0 && cr_wall_ms() - last < m->o.grace_ms) {
            live[nlive++] = id;
            continue;
        }
        rc = redis_cmd(m->rc, &x, "SREM", k, id, NULL);
        redis_reply_free(x);
        if (rc == 0)
            rc = redis_cmd(m->rc, &x, "HDEL", sk, id, NULL);
        redis_reply_free(x);
        if (rc < 0)
            goto out;
    }
    if (nlive == 0)
        goto out;
    /* a finished crawl's map stays: a node that exited first (its leases
     * released, nothing handed over) would else have its slots taken, and
     * their rows rescued from its store, by the nodes still exiting. Read
     * after the members: a node sets P done (or sees it) before it leaves,
     * so a member missing above means done shows here */
    key(m, k, "done");
    rc = redis_cmd(m->rc, &cur, "EXISTS", k, NULL);
    bool done = rc == 0 && redis_reply_int(cur) == 1;
    redis_reply_free(cur);
    cur = NULL;
    if (rc < 0 || done)
        goto out;
    slotmap_assign(live, nlive, m->slots, owner);
    key(m, k, "map");
    rc = redis_cmd(m->rc, &cur, "HGETALL", k, NULL);
    if (rc < 0)
        goto out;
    size_t same = 0;
    for (size_t i = 0; i + 1 < redis_reply_count(cur); i += 2) {
        long long s = redis_reply_int(redis_reply_at(cur, i));
        const char *v = redis_reply_str(redis_reply_at(cur, i + 1), NULL);
        if (s >= 0 && s < (long long)m->slots && strcmp(v, live[owner[s]]) == 0)
            same++;
    }
    if (same == m->slots && redis_reply_count(cur) == 2 * (size_t)m->slots)
        goto out;
    /* MULTI; DEL map; HSET map s id ...; INCR epoch; EXEC */
    char (*nums)[12] = cr_calloc(m->slots, sizeof *nums);
    if (nums == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    argv[0] = "HSET";
    argv[1] = k;
    for (uint32_t s = 0; s < m->slots; s++) {
        snprintf(nums[s], sizeof nums[s], "%u", s);
        argv[2 + 2 * s] = nums[s];
        argv[3 + 2 * s] = live[owner[s]];
    }
    char ek[KEY_MAX];
    key(m, ek, "epoch");
    const char *multi[] = { "MULTI" }, *del[] = { "DEL", k }, *incr[] = { "INCR", ek },
               *exec[] = { "EXEC" };
    redis_reply *r[5] = { NULL, NULL, NULL, NULL, NULL };
    rc = redis_append(m->rc, 1, multi, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 2, del, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 2 + 2 * (int)m->slots, argv, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 2, incr, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 1, exec, NULL);
    if (rc == 0)
        rc = read_n(m, r, 5);
    cr_free(nums);
    free_n(r, 5);
out:
    if (ex != NULL)
        free_n(ex, n);
    redis_reply_free(cur);
    redis_reply_free(mem);
    cr_free(ex);
    cr_free(live);
    cr_free(owner);
    cr_free(argv);
    return rc;
}

/* Reads the epoch and, when it moved, the map, in one MULTI so the two
 * agree; sets wanted[]. */
static int follow_map(member *m)
{
    char ek[KEY_MAX], mk[KEY_MAX];
    key(m, ek, "epoch");
    key(m, mk, "map");
    const char *multi[] = { "MULTI" }, *get[] = { "GET", ek }, *all[] = { "HGETALL", mk },
               *exec[] = { "EXEC" };
    redis_reply *r[4] = { NULL, NULL, NULL, NULL };
    int rc = redis_append(m->rc, 1, multi, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 2, get, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 2, all, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 1, exec, NULL);
    if (rc == 0)
        rc = read_n(m, r, 4);
    if (rc == 0 && redis_reply_count(r[3]) == 2) {
        uint64_t epoch = (uint64_t)redis_reply_int(redis_reply_at(r[3], 0));
        const redis_reply *map = redis_reply_at(r[3], 1);
        if (epoch != m->info.epoch || epoch == 0) {
            memset(m->wanted, 0, m->slots * sizeof *m->wanted);
            uint32_t w = 0;
            for (size_t i = 0; i + 1 < redis_reply_count(map); i += 2) {
                long long sl = redis_reply_int(redis_reply_at(map, i));
                const char *v = redis_reply_str(redis_reply_at(map, i + 1), NULL);
                if (sl >= 0 && sl < (long long)m->slots && strcmp(v, m->id) == 0) {
                    m->wanted[sl] = true;
                    w++;
                }
            }
            m->info.epoch = epoch;
            m->info.wanted = w;
        }
    }
    free_n(r, 4);
    return rc;
}

static void ckpt_key(const member *m, char *buf, uint32_t s)
{
    ckpt_key_of(m->prefix, buf, s);
}

/* May slot be fetched (and read) once its lease is renewed? */
static bool fetchable(const member *m, uint32_t s)
{
    return m->held[s] && m->wanted[s] && !m->unloaded[s];
}

static void set_local(member *m, uint32_t s)
{
    atomic_store(&m->local[s], fetchable(m, s));
}

/* The whole file at path, or NULL (errno set; EFBIG past max bytes). */
static char *read_file(const char *path, int64_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || st.st_size > max) {
        errno = st.st_size > max ? EFBIG : errno;
        close(fd);
        return NULL;
    }
    char *buf = cr_malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            cr_free(buf);
            buf = NULL;
            errno = n == 0 ? EIO : errno;
        } else {
            got += (size_t)n;
        }
    }
    close(fd);
    *len = got;
    return buf;
}

/* Sends the checkpoint file ckpt (handover's) to Redis under a key of its
 * own and names it "redis:KEY" in ckpt; the file goes either way. 1 sent,
 * 0 refused (too big, unreadable, or an error reply: the hand-over is
 * tried again), < 0 Redis is unreachable (likewise). */
static int send_ckpt(member *m, uint32_t s, char *ckpt, size_t cap)
{
    size_t len = 0;
    char *data = read_file(ckpt, m->o.ckpt_redis_max, &len);
    if (data == NULL) {
        char why[600];
        if (errno == EFBIG) {
            m->info.ckpt_too_big++;
            snprintf(why, sizeof why, "its checkpoint is over %lld bytes, the most sent through"
                     " Redis", (long long)m->o.ckpt_redis_max);
        } else {
            snprintf(why, sizeof why, "its checkpoint %.300s cannot be read: %s", ckpt,
                     strerror(errno));
        }
        if (m->o.ckpt_refused != NULL)
            m->o.ckpt_refused(m->o.hook_arg, s, why);
        unlink(ckpt);
        return 0;
    }
    char dk[KEY_MAX];
    snprintf(dk, sizeof dk, "%sckptdata:%u:%lld", m->prefix, s, (long long)cr_wall_ms());
    const char *argv[] = { "SET", dk, data };
    const size_t lens[] = { 3, strlen(dk), len };
    redis_reply *r = NULL;
    int rc = redis_cmdv(m->rc, 3, argv, lens, &r);
    bool refused = rc == 0 && redis_reply_type(r) == REDIS_T_ERROR; /* e.g. maxmemory */
    if (refused && m->o.ckpt_refused != NULL) {
        char why[600];
        snprintf(why, sizeof why, "Redis refused its checkpoint of %zu bytes: %.300s", len,
                 redis_reply_str(r, NULL));
        m->o.ckpt_refused(m->o.hook_arg, s, why);
    }
    redis_reply_free(r);
    cr_free(data);
    unlink(ckpt); /* sent, or exported again at the next try */
    if (rc < 0 || refused)
        return refused ? 0 : rc;
    snprintf(ckpt, cap, "%s%s", CKPT_REDIS, dk);
    m->info.ckpt_sent++;
    return 1;
}

/* The checkpoint a "redis:KEY" record names, into a file of ckpt_spool_dir
 * (its name in out). 0, or < 0 (a Redis or file error; -ENOENT: the key is
 * gone). */
static int fetch_ckpt(member *m, uint32_t s, const char *path, char *out, size_t cap)
{
    redis_reply *r = NULL;
    int rc = redis_cmd(m->rc, &r, "GET", path + strlen(CKPT_REDIS), NULL);
    if (rc == 0 && redis_reply_type(r) != REDIS_T_STR)
        rc = -ENOENT;
    size_t len = 0;
    const char *data = rc == 0 ? redis_reply_str(r, &len) : NULL;
    int n = snprintf(out, cap, "%s/ckpt-slot%u.db", m->o.ckpt_spool_dir ? m->o.ckpt_spool_dir : ".",
                     s);
    if (rc == 0 && (n < 0 || (size_t)n >= cap))
        rc = -ENAMETOOLONG;
    if (rc == 0)
        rc = cr_atomic_write(out, data, len, 0600);
    redis_reply_free(r);
    return rc;
}

/* A slot the map took away: its gate closed and not local at once; from
 * the next tick the handover hook is asked, and once it says 1 the lease
 * goes with the checkpoint recorded. */
static int release(member *m, uint32_t s)
{
    char k[KEY_MAX], ck[KEY_MAX], tk[KEY_MAX], hk[KEY_MAX], ckpt[4096] = "", ep[24], sn[12];
    atomic_store_explicit(&m->deadline[s], 0, memory_order_release);
    atomic_store(&m->local[s], false);
    /* Never loaded: this node has no rows of the slot, and the record
     * still names the checkpoint it did not load, which the next owner
     * loads instead (a new export would overwrite it with nothing). */
    bool pass_on = m->unloaded[s];
    if (!m->leaving[s] && !pass_on) {
        m->leaving[s] = true; /* a link judged local just now is enqueued by the next tick */
        if (m->o.handover != NULL)
            return 0;
    }
    if (!pass_on && m->o.handover != NULL &&
        m->o.handover(m->o.hook_arg, s, ckpt, sizeof ckpt) != 1)
        return 0;
    if (!pass_on && ckpt[0] != '\0' && m->o.ckpt_redis_max > 0) {
        int sent = send_ckpt(m, s, ckpt, sizeof ckpt);
        if (sent != 1)
            return sent; /* refused: kept, closed, tried again next tick */
    }
    slot_key(m, k, s);
    ckpt_key(m, ck, s);
    key(m, tk, "ckpts");
    key(m, hk, "holder");
    snprintf(ep, sizeof ep, "%llu", (unsigned long long)m->info.epoch);
    snprintf(sn, sizeof sn, "%u", s);
    redis_reply *r = NULL;
    const char *argv[] = { "EVAL", HAND_OVER, "4", k, ck, tk, hk, m->id, ckpt, ep, sn };
    int rc = redis_cmdv(m->rc, 11, argv, NULL, &r);
    bool gone = rc == 0 && redis_reply_int(r) == 1;
    redis_reply_free(r);
    if (rc == 0) {
        m->held[s] = false;
        m->leaving[s] = false;
        m->unloaded[s] = false;
        m->info.held--;
        if (gone && ckpt[0] != '\0')
            m->info.handed_over++;
        /* a drop that fails is retried as an orphan's: once the holder
         * record names the node that loaded the checkpoint */
        if (gone && !pass_on && m->o.released != NULL &&
            m->o.released(m->o.hook_arg, s) < 0 && m->o.orphaned != NULL)
            m->orphaned[s] = true;
        if (!gone && strncmp(ckpt, CKPT_REDIS, strlen(CKPT_REDIS)) == 0) {
            redis_reply *x = NULL; /* the sent checkpoint is nobody's */
            redis_cmd(m->rc, &x, "DEL", ckpt + strlen(CKPT_REDIS), NULL);
            redis_reply_free(x);
        }
        if (!gone && !pass_on) {
            /* another node took the slot after the lease ran out: it
             * rescues the rows from this store (the holder here), and
             * then they are dropped here as an orphan's; the export is
             * nobody's */
            m->info.lost++;
            m->info.stranded++;
            if (m->o.stranded != NULL)
                m->o.stranded(m->o.hook_arg, s, ckpt);
            if (m->o.orphaned != NULL)
                m->orphaned[s] = true;
        }
    }
    return rc;
}

/* A lease found gone: the slot is not fetched, read or local here from
 * now; what this node has of it goes stale once another node holds it
 * (orphaned: dropped once P"holder" names another node). */
static void fence(member *m, uint32_t s)
{
    atomic_store_explicit(&m->deadline[s], 0, memory_order_release);
    atomic_store(&m->local[s], false);
    m->orphaned[s] = m->o.orphaned != NULL && m->o.store_dir != NULL &&
                     m->o.store_dir[0] != '\0' && !m->unloaded[s];
    m->held[s] = false;
    m->leaving[s] = false;
    m->unloaded[s] = false;
    m->info.held--;
    m->info.lost++;
}

/* The slot is loaded here: P"holder" names this node, so a later owner
 * knows whose store to rescue it from should this node vanish. Only while
 * the lease is still this node's: a load or rescue can outlast the lease
 * (a rescue waits on the locks of a paused node's store, and the member
 * thread renews nothing meanwhile), and the node that took the slot since
 * must stay its holder, else this node would wait for itself and keep the
 * copy it loaded queued for ever. Then the slot is fenced here, the copy
 * orphaned: 0 either way, or < 0 on a Redis error. */
static int loaded_here(member *m, uint32_t s)
{
    char k[KEY_MAX], hk[KEY_MAX], sn[12];
    slot_key(m, k, s);
    key(m, hk, "holder");
    snprintf(sn, sizeof sn, "%u", s);
    redis_reply *r = NULL;
    const char *argv[] = { "EVAL", HOLD_IF_MINE, "2", k, hk, m->id, sn };
    int rc = redis_cmdv(m->rc, 7, argv, NULL, &r);
    bool mine = rc == 0 && redis_reply_int(r) == 1;
    redis_reply_free(r);
    if (rc == 0 && !mine) {
        m->unloaded[s] = false; /* it was loaded: the copy is an orphan's */
        fence(m, s);
        m->info.loads_lost++;
        if (m->o.load_lost != NULL)
            m->o.load_lost(m->o.hook_arg, s);
    }
    return rc;
}

static int loaded_done(member *m, uint32_t s)
{
    int rc = loaded_here(m, s);
    if (rc == 0 && m->held[s])
        m->unloaded[s] = false;
    return rc;
}

/* P"holder" of slot s into out ("" when none recorded). */
static int read_holder(member *m, uint32_t s, char *out, size_t cap)
{
    char hk[KEY_MAX], sn[12];
    key(m, hk, "holder");
    snprintf(sn, sizeof sn, "%u", s);
    redis_reply *r = NULL;
    int rc = redis_cmd(m->rc, &r, "HGET", hk, sn, NULL);
    snprintf(out, cap, "%s", rc == 0 && redis_reply_type(r) == REDIS_T_STR
                                 ? redis_reply_str(r, NULL) : "");
    redis_reply_free(r);
    return rc;
}

/* No checkpoint recorded: rescued from the store of its last holder when
 * that was another node that registered one (gone for good, or released
 * it without a checkpoint), else nothing to load. */
static int rescue(member *m, uint32_t s)
{
    char sk[KEY_MAX], from[256];
    if (m->o.rescue == NULL)
        return loaded_done(m, s);
    int rc = read_holder(m, s, from, sizeof from);
    if (rc < 0)
        return rc;
    if (from[0] == '\0' || strcmp(from, m->id) == 0)
        return loaded_done(m, s);
    key(m, sk, "stores");
    redis_reply *r = NULL;
    rc = redis_cmd(m->rc, &r, "HGET", sk, from, NULL);
    if (rc < 0)
        return rc;
    if (redis_reply_type(r) != REDIS_T_STR) {
        redis_reply_free(r);
        return loaded_done(m, s); /* no store the others can reach */
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", redis_reply_str(r, NULL));
    redis_reply_free(r);
    if (m->o.rescue(m->o.hook_arg, s, from, dir) < 0)
        return 0; /* asked again next tick; the slot stays unfetched */
    rc = loaded_done(m, s); /* failed: rescued again next tick, a no-op */
    if (rc == 0 && m->held[s])
        m->info.rescues++;
    return rc;
}

/* A held slot not loaded yet: loads the checkpoint P"ckpt:N" names, if
 * any, then deletes the record (or rescues it, see rescue); until then
 * the slot is neither fetched nor read. */
static int load(member *m, uint32_t s)
{
    char ck[KEY_MAX];
    ckpt_key(m, ck, s);
    redis_reply *r = NULL;
    int rc = redis_cmd(m->rc, &r, "HGET", ck, "path", NULL);
    if (rc < 0)
        return rc;
    if (redis_reply_type(r) != REDIS_T_STR || m->o.load == NULL) {
        redis_reply_free(r);
        return rescue(m, s);
    }
    char path[4096], spool[4096] = "";
    snprintf(path, sizeof path, "%s", redis_reply_str(r, NULL));
    redis_reply_free(r);
    if (strncmp(path, CKPT_REDIS, strlen(CKPT_REDIS)) == 0) {
        rc = fetch_ckpt(m, s, path, spool, sizeof spool);
        if (rc == -EPIPE)
            return rc; /* Redis is down: the tick says so */
        if (rc < 0)
            return 0; /* asked again next tick; the slot stays unfetched */
    }
    int lr = m->o.load(m->o.hook_arg, s, spool[0] ? spool : path);
    if (spool[0])
        unlink(spool);
    if (lr < 0)
        return 0; /* asked again next tick; the slot stays unfetched */
    /* the holder first: a failure after it loads the record again (a
     * no-op by the seen test), never rescues from the old owner */
    rc = loaded_here(m, s);
    if (rc < 0 || !m->held[s])
        return rc; /* lost meanwhile: the record stays for the node holding it */
    r = NULL;
    char tk[KEY_MAX], sn[12];
    key(m, tk, "ckpts");
    snprintf(sn, sizeof sn, "%u", s);
    const char *argv[] = { "EVAL", DEL_RECORD, "2", ck, tk, path, sn };
    rc = redis_cmdv(m->rc, 7, argv, NULL, &r);
    redis_reply_free(r);
    if (rc == 0) {
        m->unloaded[s] = false;
        m->info.loads++;
        if (m->o.loaded != NULL)
            m->o.loaded(m->o.hook_arg, s, path);
    }
    return rc;
}

/* A slot whose lease this node lost: once P"holder" names another node,
 * that node has rescued the rows from this store, which are stale from
 * then on: dropped (the orphaned hook; retried while it fails). While it
 * names this node, another node may be rescuing the slot right now: the
 * rows are kept only once this node holds the lease again (taken with
 * SET NX, so nobody can rescue it meanwhile). Until then it is neither
 * loaded nor fetched here. */
static int settle_orphan(member *m, uint32_t s)
{
    char holder[256];
    int rc = read_holder(m, s, holder, sizeof holder);
    if (rc < 0)
        return rc;
    if (holder[0] == '\0' || strcmp(holder, m->id) == 0) {
        if (m->held[s])
            m->orphaned[s] = false; /* nobody rescued it: the rows stay */
        return 0;
    }
    if (m->o.orphaned(m->o.hook_arg, s) == 0) {
        m->orphaned[s] = false;
        m->info.orphans_dropped++;
    }
    return 0;
}

/* Takes the slots the map gives this node (SET NX: only once free), loads
 * what their last holder handed over, and releases the ones it took away. */
static int take_and_release(member *m)
{
    char k[KEY_MAX];
    int rc = 0;
    /* Hand-overs and loads copy rows: past a quarter lease in this tick
     * the rest waits for the next ones, so that the leases this node
     * holds are renewed in between (a node handing many slots over at
     * once let them run out, and the others then rescued them) */
    int64_t t0 = cr_mono_ms(), budget = m->o.lease_ms / 4;
    for (uint32_t s = 0; s < m->slots && rc == 0; s++) {
        bool late = cr_mono_ms() - t0 > budget;
        if (m->orphaned[s] && (!m->held[s] || m->unloaded[s]))
            rc = settle_orphan(m, s);
        if (rc < 0) {
            continue;
        } else if (late && m->held[s] != m->wanted[s]) {
            if (m->held[s]) { /* released from the next tick, as a first release */
                atomic_store_explicit(&m->deadline[s], 0, memory_order_release);
                atomic_store(&m->local[s], false);
                m->leaving[s] = !m->unloaded[s];
            }
        } else if (late && m->held[s] && m->unloaded[s]) {
            /* loaded next tick */
        } else if (m->held[s] && !m->wanted[s]) {
            rc = release(m, s);
        } else if (!m->held[s] && m->wanted[s] && !m->ended) {
            slot_key(m, k, s);
            int64_t sent = cr_mono_ms();
            redis_reply *r = NULL;
            rc = redis_cmd(m->rc, &r, "SET", k, m->id, "NX", "PX", m->lease_s, NULL);
            if (rc == 0 && redis_reply_type(r) == REDIS_T_STATUS) {
                m->held[s] = true;
                m->unloaded[s] = true;
                m->info.held++;
                if (m->orphaned[s])
                    rc = settle_orphan(m, s); /* the lease is ours: decided now */
                if (rc == 0 && !m->orphaned[s])
                    rc = load(m, s);
                if (rc == 0 && m->held[s] && !m->unloaded[s])
                    atomic_store_explicit(&m->deadline[s], sent + m->o.lease_ms / 2,
                                          memory_order_release);
            }
            redis_reply_free(r);
        } else if (m->held[s] && m->unloaded[s] && !m->orphaned[s]) {
            rc = load(m, s); /* fetched once renewed, from the next tick */
        } else if (m->held[s]) {
            m->leaving[s] = false; /* wanted again before it was handed over */
        }
        set_local(m, s);
    }
    uint32_t unl = 0;
    for (uint32_t s = 0; s < m->slots; s++)
        unl += m->held[s] && m->unloaded[s];
    m->info.unloaded = unl;
    return rc;
}

int member_tick(member *m, int64_t now_ms)
{
    char err[256];
    if (!redis_alive(m->rc) && redis_reconnect(m->rc, err, sizeof err) < 0) {
        note_down(m);
        return -EPIPE;
    }
    char nk[KEY_MAX], mk[KEY_MAX], ck[KEY_MAX], info[96];
    snprintf(nk, sizeof nk, "%snode:%s", m->prefix, m->id);
    key(m, mk, "members");
    key(m, ck, "coord");
    snprintf(info, sizeof info, "pid=%ld since=%lld", (long)getpid(), (long long)cr_wall_ms());
    uint32_t *sl = cr_calloc(m->slots + 1, sizeof *sl);
    redis_reply **r = cr_calloc(m->slots + 5, sizeof *r);
    size_t nheld = 0, nr = 0;
    int rc = sl == NULL || r == NULL ? -ENOMEM : 0;
    if (rc < 0)
        goto out;
    /* One pipeline: node lease, membership, each held slot, coordinator. */
    const char *set[] = { "SET", nk, info, "PX", m->lease_s };
    const char *sadd[] = { "SADD", mk, m->id };
    const char *coord[] = { "SET", ck, m->id, "NX", "PX", m->lease_s };
    /* The renewal counts from when it was sent (or the caller's earlier
     * now_ms): Redis counts its lease from a later moment. */
    int64_t sent = cr_mono_ms();
    if (now_ms < sent)
        sent = now_ms;
    /* departing: the slot leases only (the rest keeps its place in the
     * pipeline as PINGs) */
    const char *ping[] = { "PING" };
    rc = m->departing ? redis_append(m->rc, 1, ping, NULL) : redis_append(m->rc, 5, set, NULL);
    if (rc == 0)
        rc = m->departing ? redis_append(m->rc, 1, ping, NULL) : redis_append(m->rc, 3, sadd, NULL);
    for (uint32_t s = 0; s < m->slots && rc == 0; s++) {
        if (!m->held[s])
            continue;
        char k[KEY_MAX];
        slot_key(m, k, s);
        sl[nheld++] = s;
        rc = eval_append(m, RENEW_IF_MINE, k);
    }
    if (rc == 0)
        rc = m->departing ? redis_append(m->rc, 1, ping, NULL) : redis_append(m->rc, 6, coord, NULL);
    if (rc == 0)
        rc = m->departing ? redis_append(m->rc, 1, ping, NULL) : eval_append(m, RENEW_IF_MINE, ck);
    /* when this node was last alive, for the coordinator's grace */
    char sk[KEY_MAX], wall[24];
    key(m, sk, "seen");
    snprintf(wall, sizeof wall, "%lld", (long long)cr_wall_ms());
    const char *seen[] = { "HSET", sk, m->id, wall };
    if (rc == 0)
        rc = m->departing ? redis_append(m->rc, 1, ping, NULL) : redis_append(m->rc, 4, seen, NULL);
    nr = nheld + 5;
    if (rc == 0)
        rc = read_n(m, r, nr);
    if (rc < 0)
        goto out;
    for (size_t i = 0; i < nheld; i++) {
        uint32_t s = sl[i];
        if (redis_reply_int(r[2 + i]) == 1) {
            if (fetchable(m, s)) /* a slot leaving or not loaded stays shut */
                atomic_store_explicit(&m->deadline[s], sent + m->o.lease_ms / 2,
                                      memory_order_release);
        } else {
            /* Gone (we were too slow) or someone else's now: fenced; its
             * rows here go stale once another node rescues the slot */
            fence(m, s);
        }
    }
    m->info.coordinator = !m->departing && (redis_reply_type(r[2 + nheld]) == REDIS_T_STATUS ||
                                            redis_reply_int(r[3 + nheld]) == 1);
    if (m->info.coordinator)
        rc = coordinate(m);
    if (rc == 0 && !m->departing)
        rc = follow_map(m);
    if (rc == 0)
        rc = take_and_release(m);
out:
    if (r != NULL)
        free_n(r, nr);
    cr_free(r);
    cr_free(sl);
    if (rc == -EPIPE) {
        note_down(m);
    } else if (rc == 0) {
        m->info.redis_up = true;
        m->info.error[0] = '\0';
    }
    return rc;
}

void member_end(member *m)
{
    m->ended = true;
}

int member_depart(member *m)
{
    char nk[KEY_MAX], mk[KEY_MAX], sk[KEY_MAX], ck[KEY_MAX];
    m->departing = true;
    memset(m->wanted, 0, m->slots * sizeof *m->wanted);
    m->info.wanted = 0;
    m->info.coordinator = false;
    for (uint32_t s = 0; s < m->slots; s++) {
        atomic_store_explicit(&m->deadline[s], 0, memory_order_release);
        atomic_store(&m->local[s], false);
    }
    if (!redis_alive(m->rc) && redis_reconnect(m->rc, nk, sizeof nk) < 0)
        return -EPIPE;
    snprintf(nk, sizeof nk, "%snode:%s", m->prefix, m->id);
    key(m, mk, "members");
    key(m, sk, "seen");
    key(m, ck, "coord");
    const char *dn[] = { "DEL", nk }, *sr[] = { "SREM", mk, m->id }, *hd[] = { "HDEL", sk, m->id },
               *dc[] = { "EVAL", DEL_IF_MINE, "1", ck, m->id };
    int rc = redis_append(m->rc, 2, dn, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 3, sr, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 3, hd, NULL); /* leaving: no grace */
    if (rc == 0)
        rc = redis_append(m->rc, 5, dc, NULL);
    for (int i = 0; i < 4 && rc == 0; i++) {
        redis_reply *r = NULL;
        rc = redis_read(m->rc, &r);
        redis_reply_free(r);
    }
    return rc;
}

int member_leave(member *m)
{
    char k[KEY_MAX];
    for (uint32_t s = 0; s < m->slots; s++) {
        atomic_store_explicit(&m->deadline[s], 0, memory_order_release);
        atomic_store(&m->local[s], false);
    }
    if (!redis_alive(m->rc) && redis_reconnect(m->rc, k, sizeof k) < 0)
        return -EPIPE;
    int rc = 0;
    size_t n = 0;
    for (uint32_t s = 0; s < m->slots && rc == 0; s++) {
        if (!m->held[s])
            continue;
        slot_key(m, k, s);
        const char *argv[] = { "EVAL", DEL_IF_MINE, "1", k, m->id };
        rc = redis_append(m->rc, 5, argv, NULL);
        n++;
    }
    key(m, k, "coord");
    const char *dc[] = { "EVAL", DEL_IF_MINE, "1", k, m->id };
    if (rc == 0)
        rc = redis_append(m->rc, 5, dc, NULL);
    char nk[KEY_MAX], mk[KEY_MAX];
    snprintf(nk, sizeof nk, "%snode:%s", m->prefix, m->id);
    key(m, mk, "members");
    char sk[KEY_MAX];
    key(m, sk, "seen");
    const char *dn[] = { "DEL", nk }, *sr[] = { "SREM", mk, m->id },
               *hd[] = { "HDEL", sk, m->id };
    if (rc == 0)
        rc = redis_append(m->rc, 2, dn, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 3, sr, NULL);
    if (rc == 0)
        rc = redis_append(m->rc, 3, hd, NULL); /* leaving: no grace */
    for (size_t i = 0; i < n + 4 && rc == 0; i++) {
        redis_reply *r = NULL;
        rc = redis_read(m->rc, &r);
        redis_reply_free(r);
    }
    if (rc == 0) {
        memset(m->held, 0, m->slots * sizeof *m->held);
        memset(m->wanted, 0, m->slots * sizeof *m->wanted);
        m->info.held = 0;
        m->info.coordinator = false;
    }
    return rc;
}
