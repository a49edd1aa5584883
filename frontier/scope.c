/* frontier/scope: scope, include/exclude patterns, depth and trap limits.
 *
 * Design. The options (mode, patterns, limits) are fixed at scope_new and
 * never change; only the seed set grows (scope_add_seed, e.g. seeds posted to
 * the daemon's API). The seed set is one string hash set whose keys depend on
 * the mode: the host (host mode), the registrable domain (domain mode), or
 * the host again for prefix mode, where each host entry also carries the list
 * of prefixes under that host (so a check compares against the prefixes of
 * its own host only, not every seed). Any mode keeps no set.
 *
 * Lock: `lock` (a rwlock) guards the seed set: scope_check and
 * scope_in_scope take it shared, scope_add_seed exclusive (and bumps
 * `gen`, so each thread's memo of its last host's verdict, host_memo,
 * goes stale). Nothing else is mutable but the counters, which are
 * relaxed atomics. libpsl's built-in
 * context is immutable and shared by every thread.
 *
 * A canonical URL is read as scheme "://" [userinfo "@"] host [":" port]
 * path ["?" query]; only the pieces' boundaries are needed, so the parser
 * here is a few scans and never allocates. */
#include "frontier/scope.h"

#include <errno.h>
#include <libpsl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common/alloc.h"
#include "common/striped.h"
#include "storage/db.h"

/* ---- canonical URL pieces --------------------------------------------- */

typedef struct url_parts {
    size_t host_off, host_len; /* without userinfo and port */
    size_t path_off, path_len; /* from the first '/' up to '?' or the end */
    size_t query_off;          /* just past '?'; 0 when there is no query */
    size_t query_len;
} url_parts;

/* 0, or -EINVAL when url is not http(s)://host... */
static int parse_url(const char *url, size_t len, url_parts *p)
{
    size_t i, auth_end, at;

    memset(p, 0, sizeof(*p));
    if (len >= 7 && memcmp(url, "http://", 7) == 0)
        i = 7;
    else if (len >= 8 && memcmp(url, "https://", 8) == 0)
        i = 8;
    else
        return -EINVAL;
    auth_end = i;
    while (auth_end < len && url[auth_end] != '/' && url[auth_end] != '?' && url[auth_end] != '#')
        auth_end++;
    /* userinfo ends at the last '@' of the authority */
    at = auth_end;
    while (at > i && url[at - 1] != '@')
        at--;
    if (at > i)
        i = at;
    p->host_off = i;
    if (i < auth_end && url[i] == '[') { /* IPv6 literal, brackets kept */
        size_t e = i;
        while (e < auth_end && url[e] != ']')
            e++;
        if (e == auth_end)
            return -EINVAL;
        p->host_len = e + 1 - i;
    } else {
        size_t e = i;
        while (e < auth_end && url[e] != ':')
            e++;
        p->host_len = e - i;
    }
    if (p->host_len == 0)
        return -EINVAL;
    p->path_off = auth_end;
    i = auth_end;
    while (i < len && url[i] != '?' && url[i] != '#')
        i++;
    p->path_len = i - auth_end;
    if (i < len && url[i] == '?') {
        size_t q = i + 1, e = q;
        while (e < len && url[e] != '#')
            e++;
        p->query_off = q;
        p->query_len = e - q;
    }
    return 0;
}

/* ---- glob --------------------------------------------------------------- */

int scope_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
    size_t pi = 0, si = 0;
    size_t star = SIZE_MAX, mark = 0; /* last '*' seen, and where s stood then */

    while (si < slen) {
        if (pi < plen && pat[pi] == '*') {
            star = pi++;
            mark = si;
        } else if (pi < plen && pat[pi] == s[si]) {
            pi++;
            si++;
        } else if (star != SIZE_MAX) {
            pi = star + 1; /* let the last '*' swallow one more byte */
            si = ++mark;
        } else {
            return 0;
        }
    }
    while (pi < plen && pat[pi] == '*')
        pi++;
    return pi == plen;
}

/* ---- registrable domain ------------------------------------------------- */

static int is_ipv4(const char *h, size_t n)
{
    int dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '.')
            dots++;
        else if (h[i] < '0' || h[i] > '9')
            return 0;
    }
    return dots == 3;
}

int scope_registrable_domain(const char *host, size_t hlen, char *out, size_t outlen)
{
    const psl_ctx_t *psl = psl_builtin();
    const char *dom = NULL;
    char tmp[1024];

    if (hlen == 0)
        return -EINVAL;
    if (hlen >= sizeof(tmp) || hlen >= outlen)
        return -ENOSPC;
    memcpy(tmp, host, hlen);
    tmp[hlen] = '\0';
    if (host[0] != '[' && !is_ipv4(host, hlen) && psl != NULL)
        dom = psl_registrable_domain(psl, tmp);
    if (dom == NULL)
        dom = tmp;
    size_t n = strlen(dom);
    if (n >= outlen)
        return -ENOSPC;
    memcpy(out, dom, n + 1);
    return 0;
}

/* ---- a small string set (keys: hosts or domains) ----------------------- */

struct prefix {
    struct prefix *next;
    size_t len;
    char s[]; /* NUL-terminated */
};

struct key {
    struct key *next;
    struct prefix *prefixes; /* prefix mode: the seeds' prefixes on this host */
    size_t len;
    char s[];
};

typedef struct keyset {
    struct key **b;
    size_t nb; /* power of two */
    size_t n;
} keyset;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static struct key *keyset_find(const keyset *ks, const char *s, size_t n)
{
    if (ks->nb == 0)
        return NULL;
    for (struct key *k = ks->b[hash_bytes(s, n) & (ks->nb - 1)]; k != NULL; k = k->next) {
        if (k->len == n && memcmp(k->s, s, n) == 0)
            return k;
    }
    return NULL;
}

static int keyset_grow(keyset *ks)
{
    size_t nb = ks->nb ? ks->nb * 2 : 16;
    struct key **b = cr_calloc(nb, sizeof(*b));
    if (b == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < ks->nb; i++) {
        struct key *k = ks->b[i], *next;
        for (; k != NULL; k = next) {
            next = k->next;
            size_t j = hash_bytes(k->s, k->len) & (nb - 1);
            k->next = b[j];
            b[j] = k;
        }
    }
    cr_free(ks->b);
    ks->b = b;
    ks->nb = nb;
    return 0;
}

/* The key for s, added if missing. NULL on out of memory. */
static struct key *keyset_add(keyset *ks, const char *s, size_t n)
{
    struct key *k = keyset_find(ks, s, n);
    if (k != NULL)
        return k;
    if ((ks->n + 1) * 4 > ks->nb * 3 && keyset_grow(ks) != 0)
        return NULL;
    k = cr_malloc(sizeof(*k) + n + 1);
    if (k == NULL)
        return NULL;
    k->prefixes = NULL;
    k->len = n;
    memcpy(k->s, s, n);
    k->s[n] = '\0';
    size_t j = hash_bytes(s, n) & (ks->nb - 1);
    k->next = ks->b[j];
    ks->b[j] = k;
    ks->n++;
    return k;
}

static void keyset_release(keyset *ks)
{
    for (size_t i = 0; i < ks->nb; i++) {
        struct key *k = ks->b[i], *next;
        for (; k != NULL; k = next) {
            next = k->next;
            struct prefix *p = k->prefixes, *pn;
            for (; p != NULL; p = pn) {
                pn = p->next;
                cr_free(p);
            }
            cr_free(k);
        }
    }
    cr_free(ks->b);
    memset(ks, 0, sizeof(*ks));
}

/* ---- the scope ---------------------------------------------------------- */

struct pattern {
    char *s;
    size_t len;
};

struct scope {
    scope_opts o;                 /* patterns point at inc/exc below */
    struct pattern *inc, *exc;
    size_t ninc, nexc;
    pthread_rwlock_t lock;        /* guards seeds and nprefixes */
    keyset seeds;
    size_t nprefixes;
    cr_striped counts;            /* verdict counts (no lock) */
    uint64_t id;                  /* this scope among all made, for host_memo */
    atomic_uint_fast64_t gen;     /* bumped by every scope_add_seed */
};

/* The last host mode_admits judged on this thread (host and domain modes:
 * the verdict is the host's): a crawl's links are mostly on the host of
 * their page, and this spares the shared lock (its cache line moves
 * between the fetchers on every link; 1.9% of a whole jdk crawl's samples
 * in pthread_rwlock_rdlock, 2026-12-03) and the seed set's lookup. Valid
 * for the scope `id` at seed generation `gen`. */
static _Thread_local struct {
    uint64_t id, gen;
    size_t len;
    int ok;
    char host[256];
} host_memo;

static atomic_uint_fast64_t scope_ids;

_Static_assert(SCOPE_VERDICT_COUNT <= CR_STRIPED_MAX, "scope verdicts fit one cr_striped");

void scope_opts_defaults(scope_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->mode = SCOPE_MODE_HOST;
    o->fetch_requisites = true;
    o->requisites_same_host = false;
    o->requisite_depth = 0;
    o->max_depth = -1;
    o->max_url_length = -1;
    o->max_path_depth = -1;
    o->max_repeated_segment = -1;
    o->max_query_params = -1;
}

static void errf(char *err, size_t errlen, const char *what, size_t i)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s pattern %zu: empty or longer than %u bytes", what, i + 1,
                 SCOPE_MAX_PATTERN);
}

static int copy_patterns(const char *const *v, size_t n, struct pattern **out, const char *what,
                         char *err, size_t errlen)
{
    struct pattern *p;

    *out = NULL;
    if (n == 0)
        return 0;
    if (v == NULL || n > SCOPE_MAX_PATTERNS) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s patterns: more than %u", what, SCOPE_MAX_PATTERNS);
        return -EINVAL;
    }
    p = cr_calloc(n, sizeof(*p));
    if (p == NULL)
        return -ENOMEM;
    *out = p;
    for (size_t i = 0; i < n; i++) {
        size_t len = v[i] ? strnlen(v[i], SCOPE_MAX_PATTERN + 1) : 0;
        if (len == 0 || len > SCOPE_MAX_PATTERN) {
            errf(err, errlen, what, i);
            return -EINVAL;
        }
        p[i].s = cr_strndup(v[i], len);
        if (p[i].s == NULL)
            return -ENOMEM;
        p[i].len = len;
    }
    return 0;
}

static void free_patterns(struct pattern *p, size_t n)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        cr_free(p[i].s);
    cr_free(p);
}

scope *scope_new(const scope_opts *o, char *err, size_t errlen)
{
    scope *s;
    int rc;

    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (o == NULL || o->mode < SCOPE_MODE_HOST || o->mode > SCOPE_MODE_ANY) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "scope: unknown mode");
        return NULL;
    }
    s = cr_calloc(1, sizeof(*s));
    if (s == NULL)
        goto oom;
    s->o = *o;
    rc = copy_patterns(o->include, o->n_include, &s->inc, "include", err, errlen);
    s->ninc = s->inc ? o->n_include : 0;
    if (rc == 0) {
        rc = copy_patterns(o->exclude, o->n_exclude, &s->exc, "exclude", err, errlen);
        s->nexc = s->exc ? o->n_exclude : 0;
    }
    s->o.include = NULL;
    s->o.exclude = NULL;
    if (rc != 0) {
        free_patterns(s->inc, s->ninc);
        free_patterns(s->exc, s->nexc);
        cr_free(s);
        if (rc == -ENOMEM)
            goto oom;
        return NULL;
    }
    if (pthread_rwlock_init(&s->lock, NULL) != 0) {
        free_patterns(s->inc, s->ninc);
        free_patterns(s->exc, s->nexc);
        cr_free(s);
        goto oom;
    }
    cr_striped_init(&s->counts);
    s->id = atomic_fetch_add(&scope_ids, 1) + 1; /* 0: host_memo holds nothing */
    atomic_init(&s->gen, 0);
    return s;
oom:
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "scope: out of memory");
    return NULL;
}

void scope_free(scope *s)
{
    if (s == NULL)
        return;
    pthread_rwlock_destroy(&s->lock);
    keyset_release(&s->seeds);
    free_patterns(s->inc, s->ninc);
    free_patterns(s->exc, s->nexc);
    cr_free(s);
}

/* Bytes of url up to and including the last '/' of its path. */
static size_t prefix_len(const char *url, const url_parts *p)
{
    size_t e = p->path_off + p->path_len;
    while (e > p->path_off && url[e - 1] != '/')
        e--;
    return e > p->path_off ? e : p->path_off; /* no path: scheme://host */
}

int scope_add_seed(scope *s, const char *url, size_t len)
{
    url_parts p;
    char dom[1024];
    const char *key;
    size_t klen;
    int rc = 0;

    if (s == NULL || url == NULL || parse_url(url, len, &p) != 0)
        return -EINVAL;
    if (s->o.mode == SCOPE_MODE_ANY)
        return 0;
    key = url + p.host_off;
    klen = p.host_len;
    if (s->o.mode == SCOPE_MODE_DOMAIN) {
        rc = scope_registrable_domain(key, klen, dom, sizeof(dom));
        if (rc != 0)
            return -EINVAL;
        key = dom;
        klen = strlen(dom);
    }
    pthread_rwlock_wrlock(&s->lock);
    atomic_fetch_add(&s->gen, 1);
    struct key *k = keyset_add(&s->seeds, key, klen);
    if (k == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if (s->o.mode == SCOPE_MODE_PREFIX) {
        size_t pl = prefix_len(url, &p);
        struct prefix *x;
        for (x = k->prefixes; x != NULL; x = x->next) {
            if (x->len == pl && memcmp(x->s, url, pl) == 0)
                goto out; /* known */
        }
        x = cr_malloc(sizeof(*x) + pl + 1);
        if (x == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        x->len = pl;
        memcpy(x->s, url, pl);
        x->s[pl] = '\0';
        x->next = k->prefixes;
        k->prefixes = x;
        s->nprefixes++;
    }
out:
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

size_t scope_seed_count(scope *s)
{
    size_t n;
    pthread_rwlock_rdlock(&s->lock);
    n = s->o.mode == SCOPE_MODE_PREFIX ? s->nprefixes : s->seeds.n;
    pthread_rwlock_unlock(&s->lock);
    return n;
}

static int match_any(const struct pattern *v, size_t n, const char *url, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (scope_glob_match(v[i].s, v[i].len, url, len))
            return 1;
    }
    return 0;
}

/* 1 when the scope mode admits url (seed sets read under the shared lock). */
static int mode_admits(scope *s, const char *url, size_t len, const url_parts *p)
{
    const char *key = url + p->host_off;
    size_t klen = p->host_len;
    char dom[1024];
    int ok = 0;

    if (s->o.mode == SCOPE_MODE_ANY)
        return 1;
    bool memo = s->o.mode != SCOPE_MODE_PREFIX && klen <= sizeof host_memo.host;
    /* read before the set: a seed added meanwhile makes the memo stale */
    uint64_t gen = atomic_load(&s->gen);
    if (memo && host_memo.id == s->id && host_memo.gen == gen && host_memo.len == klen &&
        memcmp(host_memo.host, key, klen) == 0)
        return host_memo.ok;
    if (s->o.mode == SCOPE_MODE_DOMAIN) {
        if (scope_registrable_domain(key, klen, dom, sizeof(dom)) != 0)
            return 0;
        key = dom;
        klen = strlen(dom);
    }
    pthread_rwlock_rdlock(&s->lock);
    const struct key *k = keyset_find(&s->seeds, key, klen);
    if (k != NULL && s->o.mode != SCOPE_MODE_PREFIX) {
        ok = 1;
    } else if (k != NULL) {
        for (const struct prefix *x = k->prefixes; x != NULL && !ok; x = x->next)
            ok = len >= x->len && memcmp(url, x->s, x->len) == 0;
    }
    pthread_rwlock_unlock(&s->lock);
    if (memo) {
        size_t hl = p->host_len; /* the host, not the domain it gave */
        host_memo.id = s->id;
        host_memo.gen = gen;
        host_memo.len = hl;
        host_memo.ok = ok;
        memcpy(host_memo.host, url + p->host_off, hl);
    }
    return ok;
}

/* Checks 1 and 2: SCOPE_ALLOWED, _OUT_OF_SCOPE or _EXCLUDED. */
static scope_verdict scope_part(scope *s, const char *url, size_t len, const url_parts *p,
                                int kind)
{
    int in = kind == DB_KIND_SEED || (kind == DB_KIND_REQUISITE && s->o.fetch_requisites) ||
             mode_admits(s, url, len, p) || match_any(s->inc, s->ninc, url, len);
    if (!in)
        return SCOPE_OUT_OF_SCOPE;
    if (match_any(s->exc, s->nexc, url, len))
        return SCOPE_EXCLUDED;
    return SCOPE_ALLOWED;
}

int scope_in_scope(scope *s, const char *url, size_t len)
{
    url_parts p;
    if (s == NULL || url == NULL || parse_url(url, len, &p) != 0)
        return 0;
    return scope_part(s, url, len, &p, DB_KIND_NAVIGATION) == SCOPE_ALLOWED;
}

/* Longest run of one non-empty segment in a row (tests/site's rule). */
static int64_t longest_run(const char *path, size_t n)
{
    const char *prev = NULL;
    size_t prevlen = 0;
    int64_t run = 0, best = 0;
    size_t i = 1; /* path[0] is '/' */

    if (n == 0)
        return 0;
    while (i <= n) {
        size_t e = i;
        while (e < n && path[e] != '/')
            e++;
        size_t l = e - i;
        if (l > 0 && prev != NULL && l == prevlen && memcmp(prev, path + i, l) == 0)
            run++;
        else
            run = l > 0 ? 1 : 0;
        if (run > best)
            best = run;
        prev = path + i;
        prevlen = l;
        i = e + 1;
    }
    return best;
}

static scope_verdict traps(const scope *s, size_t len, const char *url, const url_parts *p)
{
    const char *path = url + p->path_off;

    if (s->o.max_url_length >= 0 && (uint64_t)len > (uint64_t)s->o.max_url_length)
        return SCOPE_TRAP_URL_LENGTH;
    if (s->o.max_path_depth >= 0) {
        int64_t slashes = 0;
        for (size_t i = 0; i < p->path_len; i++)
            slashes += path[i] == '/';
        if (slashes > s->o.max_path_depth)
            return SCOPE_TRAP_PATH_DEPTH;
    }
    if (s->o.max_repeated_segment >= 0 &&
        longest_run(path, p->path_len) > s->o.max_repeated_segment)
        return SCOPE_TRAP_REPEATED_SEGMENT;
    if (s->o.max_query_params >= 0) {
        int64_t n = 0;
        if (p->query_off > 0) {
            n = 1;
            for (size_t i = 0; i < p->query_len; i++)
                n += url[p->query_off + i] == '&';
        }
        if (n > s->o.max_query_params)
            return SCOPE_TRAP_QUERY_PARAMS;
    }
    return SCOPE_ALLOWED;
}

scope_verdict scope_check(scope *s, const char *url, size_t len, int64_t depth, int kind)
{
    url_parts p;
    scope_verdict v;

    if (url == NULL || parse_url(url, len, &p) != 0)
        v = SCOPE_OUT_OF_SCOPE;
    else
        v = scope_part(s, url, len, &p, kind);
    int64_t max_depth = s->o.max_depth;
    if (max_depth >= 0 && kind == DB_KIND_REQUISITE && s->o.fetch_requisites)
        max_depth += s->o.requisite_depth > 0 ? s->o.requisite_depth : 0;
    if (v == SCOPE_ALLOWED && max_depth >= 0 && depth > max_depth)
        v = SCOPE_TOO_DEEP;
    if (v == SCOPE_ALLOWED)
        v = traps(s, len, url, &p);
    cr_striped_add(&s->counts, (unsigned)v, 1);
    return v;
}

scope_verdict scope_check_requisite(scope *s, const char *url, size_t len, int64_t depth,
                                    const char *from, size_t from_len)
{
    int kind = DB_KIND_REQUISITE;
    if (s->o.requisites_same_host) {
        url_parts a, b;
        if (url == NULL || from == NULL || parse_url(url, len, &a) != 0 ||
            parse_url(from, from_len, &b) != 0 || a.host_len != b.host_len ||
            memcmp(url + a.host_off, from + b.host_off, a.host_len) != 0)
            kind = DB_KIND_NAVIGATION;
    }
    return scope_check(s, url, len, depth, kind);
}

void scope_get_counts(scope *s, uint64_t out[SCOPE_VERDICT_COUNT])
{
    for (int i = 0; i < SCOPE_VERDICT_COUNT; i++)
        out[i] = cr_striped_sum(&s->counts, (unsigned)i);
}

const char *scope_verdict_name(int v)
{
    static const char *const names[SCOPE_VERDICT_COUNT] = {
        [SCOPE_ALLOWED] = "allowed",
        [SCOPE_OUT_OF_SCOPE] = "out_of_scope",
        [SCOPE_EXCLUDED] = "excluded",
        [SCOPE_TOO_DEEP] = "too_deep",
        [SCOPE_TRAP_URL_LENGTH] = "trap_url_length",
        [SCOPE_TRAP_PATH_DEPTH] = "trap_path_depth",
        [SCOPE_TRAP_REPEATED_SEGMENT] = "trap_repeated_segment",
        [SCOPE_TRAP_QUERY_PARAMS] = "trap_query_params",
    };
    if (v < 0 || v >= SCOPE_VERDICT_COUNT)
        return "unknown";
    return names[v];
}
