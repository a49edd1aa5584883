/* tests/site/expect: breadth-first walk of the generated web (see expect.h).
 *
 * Nodes are appended to one array, which is also the FIFO queue; an
 * open-addressing table of node indices answers the seen test. */
#include "tests/site/expect.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "tests/site/sitemaps.h"

typedef struct node {
    int host;
    int depth;
    int hop;
    int status;
    char *target;
} node;

typedef struct walk {
    const site *s;
    const expect_opts *o;
    node *v;
    size_t n, cap;
    size_t *table;           /* node index + 1; 0 = empty */
    size_t tcap;             /* power of two */
    unsigned char *contacted;
    unsigned char *seed_host;
    char prefixes[EXPECT_MAX_SEEDS][SITE_TARGET_MAX + 80];
    int nprefixes;
    char *err;
    size_t errcap;
} walk;

void expect_opts_default(expect_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->scope = EXPECT_HOST;
    o->max_depth = -1;
    o->max_redirects = 5;
    o->max_urls = 20000000;
}

static int fail(walk *w, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(walk *w, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, w->errcap, fmt, ap);
    va_end(ap);
    return rc;
}

static uint64_t key_hash(int host, const char *t)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)host;
    for (; *t != '\0'; t++) {
        h ^= (unsigned char)*t;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Slot of (host, t): its node's slot, or the empty slot where it belongs. */
static size_t slot_of(const walk *w, int host, const char *t)
{
    size_t i = (size_t)key_hash(host, t) & (w->tcap - 1);
    while (w->table[i] != 0) {
        const node *nd = &w->v[w->table[i] - 1];
        if (nd->host == host && strcmp(nd->target, t) == 0)
            break;
        i = (i + 1) & (w->tcap - 1);
    }
    return i;
}

static int grow_table(walk *w)
{
    size_t cap = w->tcap == 0 ? 1024 : w->tcap * 2;
    size_t *t = cr_calloc(cap, sizeof(*t));
    if (t == NULL)
        return -ENOMEM;
    cr_free(w->table);
    w->table = t;
    w->tcap = cap;
    for (size_t k = 0; k < w->n; k++)
        w->table[slot_of(w, w->v[k].host, w->v[k].target)] = k + 1;
    return 0;
}

static int url_of(const walk *w, int host, const char *t, cr_buf *out)
{
    char auth[64];
    int rc = site_authority(w->s, host, auth, sizeof(auth));
    cr_buf_clear(out);
    if (rc == 0)
        rc = cr_buf_printf(out, "http://%s%s", auth, t);
    return rc;
}

/* 1 when the canonical URL passes every trap limit. */
static int within_limits(const walk *w, const char *url, const char *t)
{
    const expect_opts *o = w->o;
    size_t plen = strcspn(t, "?");
    if (o->max_url_length > 0 && url != NULL && strlen(url) > (size_t)o->max_url_length)
        return 0;
    if (o->max_path_depth > 0) {
        int slashes = 0;
        for (size_t i = 0; i < plen; i++)
            slashes += t[i] == '/';
        if (slashes > o->max_path_depth)
            return 0;
    }
    if (o->max_repeat_segment > 0) {
        const char *prev = NULL;
        size_t prevlen = 0;
        int run = 0;
        for (size_t i = 1; i <= plen;) {
            size_t e = i;
            while (e < plen && t[e] != '/')
                e++;
            size_t len = e - i;
            if (len > 0 && prev != NULL && len == prevlen && memcmp(prev, t + i, len) == 0)
                run++;
            else
                run = len > 0 ? 1 : 0;
            if (run > o->max_repeat_segment)
                return 0;
            prev = t + i;
            prevlen = len;
            i = e + 1;
        }
    }
    if (o->max_query_params > 0 && t[plen] == '?') {
        int params = 1;
        for (const char *c = t + plen + 1; *c != '\0'; c++)
            params += *c == '&';
        if (params > o->max_query_params)
            return 0;
    }
    return 1;
}

static int in_scope(const walk *w, int host, const char *url)
{
    switch (w->o->scope) {
    case EXPECT_ALL:
        return 1;
    case EXPECT_PREFIX:
        for (int i = 0; i < w->nprefixes; i++) {
            if (strncmp(url, w->prefixes[i], strlen(w->prefixes[i])) == 0)
                return 1;
        }
        return 0;
    case EXPECT_HOST:
    default:
        return w->seed_host[host];
    }
}

static int admit(walk *w, int host, const char *t, int depth, int hop, int requisite);

/* With --sitemaps, a crawler that reads sitemaps asks each host it
 * contacts, if the host's root is in scope, for /sitemap.xml and the
 * Sitemap lines of its robots.txt (a 200 one), scoped as seeds are. */
static int contact_sitemaps(walk *w, int host)
{
    cr_buf root, lines;
    cr_buf_init(&root, 0);
    cr_buf_init(&lines, 0);
    int rc = url_of(w, host, "/", &root);
    if (rc == 0 && in_scope(w, host, root.data)) {
        rc = admit(w, host, "/sitemap.xml", 0, 0, 1);
        if (rc == 0 && site_robots_status(w->s, host) == 200)
            rc = site_sitemap_robots(w->s, host, &lines);
        /* the test site's Sitemap lines name its own host: "Sitemap: URL\n" */
        char auth[64];
        size_t pre = 0;
        if (rc == 0 && lines.len > 0 && site_authority(w->s, host, auth, sizeof auth) == 0)
            pre = strlen("Sitemap: http://") + strlen(auth);
        for (char *l = lines.data; rc == 0 && pre > 0 && l && *l;) {
            char *nl = strchr(l, '\n');
            if (nl)
                *nl = '\0';
            if (strlen(l) > pre)
                rc = admit(w, host, l + pre, 0, 0, 1);
            l = nl ? nl + 1 : NULL;
        }
    }
    cr_buf_release(&root);
    cr_buf_release(&lines);
    return rc;
}

/* A discovered URL: checks, then the seen test, then the queue. A
 * requisite (with fetch_requisites: see requisite_pass) passes the scope
 * from any host and gets requisite_depth more levels. */
static int admit(walk *w, int host, const char *t, int depth, int hop, int requisite)
{
    int any_host = requisite;
    long max_depth = w->o->max_depth;
    if (requisite && max_depth >= 0)
        max_depth += w->o->requisite_depth;
    const expect_opts *o = w->o;
    cr_buf url;
    int rc = 0;
    cr_buf_init(&url, 0);
    if (o->scope == EXPECT_PREFIX || o->max_url_length > 0) { /* only then is it needed */
        rc = url_of(w, host, t, &url);
        if (rc != 0)
            goto out;
    }
    if (!any_host && !in_scope(w, host, url.data))
        goto out;
    if ((max_depth >= 0 && depth > max_depth) || hop > o->max_redirects ||
        !within_limits(w, url.data, t))
        goto out;
    if (!w->contacted[host]) {
        w->contacted[host] = 1;
        if (site_options(w->s)->sitemaps) {
            rc = contact_sitemaps(w, host);
            if (rc != 0)
                goto out;
        }
    }
    if (!site_robots_allowed(w->s, host, t))
        goto out;
    if (o->max_depth < 0 && strncmp(t, "/calendar/", 10) == 0) {
        rc = fail(w, -E2BIG, "%s%s: the calendar is endless and only a depth limit stops it "
                             "(give --max-depth)", site_host_name(w->s, host), t);
        goto out;
    }
    if (w->tcap == 0 || (w->n + 1) * 2 > w->tcap) {
        rc = grow_table(w);
        if (rc != 0)
            goto out;
    }
    size_t slot = slot_of(w, host, t);
    if (w->table[slot] != 0)
        goto out;
    if ((long)w->n >= o->max_urls) {
        rc = fail(w, -E2BIG, "the expected set passes %ld URLs: a trap is unbounded with "
                             "these limits (give --max-depth or trap limits)", o->max_urls);
        goto out;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap == 0 ? 1024 : w->cap * 2;
        node *v = cr_realloc(w->v, cap * sizeof(*v));
        if (v == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        w->v = v;
        w->cap = cap;
    }
    char *copy = cr_strdup(t);
    if (copy == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    w->v[w->n] = (node){ host, depth, hop, 0, copy };
    w->n++;
    w->table[slot] = w->n;
out:
    cr_buf_release(&url);
    return rc;
}

/* Whether a requisite link found on a page (or stylesheet) of from_host
 * gets the requisite pass. */
static int requisite_pass(const walk *w, const site_link *l, int from_host)
{
    return l->requisite && w->o->fetch_requisites &&
           (!w->o->requisites_same_host || l->host == from_host);
}

/* Fetches node k in the model: its status, and what it leads to. */
static int visit(walk *w, size_t k)
{
    node nd = w->v[k]; /* copy: admit() may move the array */
    site_res res;
    site_links links = { NULL, 0, 0 };
    cr_buf loc, to;
    int rc = 0;
    cr_buf_init(&loc, 0);
    cr_buf_init(&to, 0);
    if (site_lookup(w->s, nd.host, nd.target, &res) != 0) {
        w->v[k].status = 404;
        return 0;
    }
    w->v[k].status = res.status;
    if (res.kind == SK_REDIRECT) {
        int to_host;
        rc = site_redirect(w->s, nd.host, nd.target, &res, &loc, &to_host, &to);
        if (rc == 0 && to.len > 0)
            rc = admit(w, to_host, to.data, nd.depth + 1, nd.hop + 1, 0);
    } else if (res.parsed) {
        rc = site_html(w->s, nd.host, nd.target, &res, NULL, &links);
        for (size_t i = 0; i < links.n && rc == 0; i++) {
            const site_link *l = &links.v[i];
            if (l->nofollow && !w->o->follow_nofollow)
                continue;
            rc = admit(w, l->host, l->target, nd.depth + 1, 0, requisite_pass(w, l, nd.host));
        }
    } else if (res.kind == SK_SITEMAP) {
        /* a sitemap's entries: only those on its host, at or below its
         * directory (the protocol's rule); an index's children one level
         * down, no further (sitemaps.max_index_depth = 1); pages as seeds */
        rc = site_sitemap_entries(w->s, nd.host, nd.target, &res, &links);
        size_t dl = strrchr(nd.target, '/') - nd.target + 1;
        for (size_t i = 0; i < links.n && rc == 0; i++) {
            const site_link *l = &links.v[i];
            if (l->host != nd.host || strncmp(l->target, nd.target, dl) != 0)
                continue;
            if (res.n == SITEMAP_RES_INDEX) {
                if (nd.depth + 1 <= 1)
                    rc = admit(w, l->host, l->target, nd.depth + 1, 0, 1);
            } else {
                rc = admit(w, l->host, l->target, 0, 0, 0);
            }
        }
    } else if (res.kind == SK_CSS && res.status == 200) {
        /* a stylesheet's references are requisites, whoever's it is */
        rc = site_css(w->s, nd.host, nd.target, &res, NULL, &links);
        for (size_t i = 0; i < links.n && rc == 0; i++)
            rc = admit(w, links.v[i].host, links.v[i].target, nd.depth + 1, 0,
                       requisite_pass(w, &links.v[i], nd.host));
    }
    site_links_release(&links);
    cr_buf_release(&to);
    cr_buf_release(&loc);
    return rc;
}

/* Parses a seed URL of the site into (host, canonical target). */
static int parse_seed(walk *w, const char *url, int *host, cr_buf *target)
{
    const char *p = url;
    if (strncasecmp(p, "http://", 7) != 0)
        return fail(w, -EINVAL, "seed %s: not an http:// URL", url);
    p += 7;
    size_t alen = strcspn(p, "/?#");
    int port = 80;
    const char *colon = memchr(p, ':', alen);
    if (colon != NULL) {
        char *end;
        long v = strtol(colon + 1, &end, 10);
        if (end != p + alen || v <= 0 || v > 65535)
            return fail(w, -EINVAL, "seed %s: bad port", url);
        port = (int)v;
    }
    *host = site_host_index(w->s, p, alen);
    if (*host < 0)
        return fail(w, -EINVAL, "seed %s: not a host of the site", url);
    if (port != site_options(w->s)->port)
        return fail(w, -EINVAL, "seed %s: the site's port is %d", url, site_options(w->s)->port);
    const char *t = p + alen;
    int rc = *t == '/' ? site_canon_target(t, strlen(t), target) : cr_buf_puts(target, "/");
    if (rc == 0 && *t != '/' && *t != '\0') {
        /* "http://a.test?x" */
        cr_buf tmp;
        cr_buf_init(&tmp, 0);
        rc = cr_buf_printf(&tmp, "/%s", t);
        if (rc == 0)
            rc = site_canon_target(tmp.data, tmp.len, target);
        cr_buf_release(&tmp);
    }
    return rc == 0 ? 0 : fail(w, rc, "seed %s: bad target", url);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int print_sorted(walk *w, FILE *out)
{
    size_t nlines = w->n + (size_t)site_host_count(w->s);
    char **lines = cr_calloc(nlines > 0 ? nlines : 1, sizeof(*lines));
    size_t m = 0;
    cr_buf b;
    int rc = 0;
    cr_buf_init(&b, 0);
    if (lines == NULL)
        return -ENOMEM;
    for (size_t k = 0; k < w->n && rc == 0; k++) {
        rc = url_of(w, w->v[k].host, w->v[k].target, &b);
        if (rc == 0 && w->o->annotate)
            rc = cr_buf_printf(&b, "\t%d\t%d", w->v[k].depth, w->v[k].status);
        if (rc == 0) {
            lines[m] = cr_buf_take(&b);
            rc = lines[m] != NULL ? 0 : -ENOMEM;
            m++;
        }
    }
    for (int h = 0; h < site_host_count(w->s) && rc == 0 && w->o->with_robots; h++) {
        if (!w->contacted[h])
            continue;
        rc = url_of(w, h, "/robots.txt", &b);
        if (rc == 0 && w->o->annotate)
            rc = cr_buf_printf(&b, "\t-\t%d", site_robots_status(w->s, h));
        if (rc == 0) {
            lines[m] = cr_buf_take(&b);
            rc = lines[m] != NULL ? 0 : -ENOMEM;
            m++;
        }
    }
    if (rc == 0) {
        qsort(lines, m, sizeof(*lines), cmp_line);
        for (size_t i = 0; i < m; i++)
            fprintf(out, "%s\n", lines[i]);
    }
    for (size_t i = 0; i < m; i++)
        cr_free(lines[i]);
    cr_free(lines);
    cr_buf_release(&b);
    return rc;
}

int expect_print(const site *s, const expect_opts *o, FILE *out, char *err, size_t errcap)
{
    walk w;
    cr_buf t;
    int rc = 0;
    memset(&w, 0, sizeof(w));
    cr_buf_init(&t, 0);
    w.s = s;
    w.o = o;
    w.err = err;
    w.errcap = errcap;
    if (errcap > 0)
        err[0] = '\0';
    w.contacted = cr_calloc((size_t)site_host_count(s), 1);
    w.seed_host = cr_calloc((size_t)site_host_count(s), 1);
    if (w.contacted == NULL || w.seed_host == NULL) {
        rc = -ENOMEM;
        goto out;
    }
    if (site_options(s)->port <= 0) {
        rc = fail(&w, -EINVAL, "the expected set needs --port (the port the crawler reaches)");
        goto out;
    }

    char dflt[96];
    const char *dflt_seeds[1] = { dflt };
    const char *const *seeds = o->seeds;
    int nseeds = o->nseeds;
    if (nseeds == 0) {
        char auth[64];
        site_authority(s, 0, auth, sizeof(auth));
        snprintf(dflt, sizeof(dflt), "http://%s/", auth);
        seeds = dflt_seeds;
        nseeds = 1;
    }
    int hosts[EXPECT_MAX_SEEDS];
    char *targets[EXPECT_MAX_SEEDS] = { NULL };
    for (int i = 0; i < nseeds && rc == 0; i++) {
        rc = parse_seed(&w, seeds[i], &hosts[i], &t);
        if (rc != 0)
            break;
        targets[i] = cr_buf_take(&t);
        if (targets[i] == NULL) {
            rc = -ENOMEM;
            break;
        }
        w.seed_host[hosts[i]] = 1;
        cr_buf b;
        cr_buf_init(&b, 0);
        rc = url_of(&w, hosts[i], targets[i], &b);
        if (rc == 0) {
            size_t n = strcspn(b.data, "?");
            while (n > 0 && b.data[n - 1] != '/')
                n--;
            snprintf(w.prefixes[w.nprefixes++], sizeof(w.prefixes[0]), "%.*s", (int)n, b.data);
        }
        cr_buf_release(&b);
    }
    for (int i = 0; i < nseeds && rc == 0; i++)
        rc = admit(&w, hosts[i], targets[i], 0, 0, 1);
    for (int i = 0; i < nseeds; i++)
        cr_free(targets[i]);
    for (size_t k = 0; k < w.n && rc == 0; k++)
        rc = visit(&w, k);
    if (rc == 0)
        rc = print_sorted(&w, out);
    if (rc == -ENOMEM && err[0] == '\0')
        fail(&w, rc, "out of memory");
out:
    for (size_t k = 0; k < w.n; k++)
        cr_free(w.v[k].target);
    cr_free(w.v);
    cr_free(w.table);
    cr_free(w.contacted);
    cr_free(w.seed_host);
    cr_buf_release(&t);
    return rc;
}
