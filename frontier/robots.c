/* frontier/robots: robots.txt (RFC 9309) parsing and matching.
 *
 * Parsing is one pass over the lines of the capped input. A group opens with
 * one or more user-agent lines (empty, unknown and sitemap lines between them
 * do not close the run) and ends at the next user-agent line that follows one
 * of its members (allow, disallow, crawl-delay). While reading, rules of
 * groups naming the agent go to the "exact" list and rules of `*` groups to
 * the "star" list; once any exact group is seen the star list is abandoned
 * (RFC 9309 §2.2.1: fall back to `*` only when no group matches). At the end
 * the chosen list's strings are copied into one exact-size arena, so a
 * cached robots object holds no slack.
 *
 * Normal form (both sides of a comparison, RFC 9309 §2.2.2 and RFC 3986
 * §6.2.2): %XX of an unreserved character is decoded, other %XX keep their
 * escape with upper-case hex, and bytes that cannot appear literally (non-
 * ASCII, controls, space, a stray '%', and '$' and '*', which are special in
 * patterns) are written %XX. In a pattern '*' stays the wildcard and a final
 * '$' becomes the end anchor. Patterns are normalized once at parse time;
 * paths are normalized on the fly by a cursor, so matching never allocates.
 *
 * Matching. Every pattern is its literal head (the bytes before the first
 * '*') and a tail. The rules are sorted by head, so the heads that are
 * prefixes of the path are found by walking the path once and narrowing a
 * range of the sorted array by binary search at each byte, like a trie walk
 * (O(path × log rules), not O(rules)). Each such candidate is then checked
 * from where its head ended: a tail is segments separated by '*', each found
 * leftmost with KMP (failure tables built once per object), the last one,
 * when anchored, at the very end. That is O(path + pattern) per candidate,
 * never exponential and never quadratic. Among the candidates that match,
 * the heaviest wins (pattern octets after normalization, the '$' counted),
 * then Allow, then the earliest line.
 *
 * The object is immutable after construction; nothing is shared between
 * objects, so there is no lock. */
#include "frontier/robots.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/buf.h"

/* A rule in its final place: strings point into the object's arena. */
struct rule {
    const char *pat;      /* normal form, no final '$' */
    const char *orig;     /* as written, trimmed, NUL-terminated */
    const uint16_t *fail; /* KMP failure values parallel to pat; NULL without '*' */
    size_t pat_len;
    size_t head_len;      /* bytes before the first '*' (pat_len if none) */
    size_t orig_len;
    size_t weight;        /* pat_len + 1 when anchored: the '$' counts */
    size_t line;
    unsigned char allow;
    unsigned char anchored;
};

struct robots {
    struct rule *rules;      /* sorted by head */
    size_t nrules;
    const char **sitemaps;
    size_t nsitemaps;
    char *arena;             /* every string of rules and sitemaps */
    uint16_t *fail;          /* every failure table */
    long delay_ms;           /* -1: none */
    bool unavailable;        /* robots_disallow_all() */
    robots_stats st;
};

/* ---- normal form ------------------------------------------------------ */

static const char hexdig[] = "0123456789ABCDEF";

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool is_unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

/* Bytes written as %XX when they stand for themselves. */
static bool must_escape(unsigned char c)
{
    return c <= 0x20 || c >= 0x7F || c == '%' || c == '$' || c == '*';
}

/* The normal-form unit that starts at s[i]: 1 or 3 bytes into u, and the
 * number of input bytes it consumes into *adv. In a pattern '*' is kept as
 * the wildcard; in a path it is a literal and becomes %2A. */
static size_t unit_at(const char *s, size_t n, size_t i, bool pattern, unsigned char u[3],
                      size_t *adv)
{
    unsigned char c = (unsigned char)s[i];
    if (c == '%' && i + 2 < n && hexval((unsigned char)s[i + 1]) >= 0 &&
        hexval((unsigned char)s[i + 2]) >= 0) {
        unsigned char v = (unsigned char)(hexval((unsigned char)s[i + 1]) * 16 +
                                          hexval((unsigned char)s[i + 2]));
        *adv = 3;
        if (is_unreserved(v)) {
            u[0] = v;
            return 1;
        }
        u[0] = '%';
        u[1] = (unsigned char)hexdig[v >> 4];
        u[2] = (unsigned char)hexdig[v & 15];
        return 3;
    }
    *adv = 1;
    if (pattern && c == '*') {
        u[0] = c;
        return 1;
    }
    if (must_escape(c)) {
        u[0] = '%';
        u[1] = (unsigned char)hexdig[c >> 4];
        u[2] = (unsigned char)hexdig[c & 15];
        return 3;
    }
    u[0] = c;
    return 1;
}

/* A position in the normal form of a path: input index and offset inside
 * the unit that starts there. */
struct cursor {
    size_t i;
    size_t k;
};

/* Reads the byte under *c and steps past it; false at the end. */
static bool cursor_get(const char *s, size_t n, struct cursor *c, unsigned char *out)
{
    if (c->i >= n)
        return false;
    unsigned char u[3];
    size_t adv;
    size_t ul = unit_at(s, n, c->i, false, u, &adv);
    *out = u[c->k];
    if (c->k + 1 < ul) {
        c->k++;
    } else {
        c->i += adv;
        c->k = 0;
    }
    return true;
}

/* Does the path, from cursor *c on, start with lit? Advances *c. */
static bool match_literal(const char *lit, size_t len, const char *path, size_t n,
                          struct cursor *c)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char b;
        if (!cursor_get(path, n, c, &b) || b != (unsigned char)lit[i])
            return false;
    }
    return true;
}

/* KMP over the path from *c: finds the leftmost occurrence of seg (len > 0,
 * failure values f) and leaves *c just after it; with at_end, reports only
 * whether an occurrence ends exactly at the end of the path. */
static bool find_segment(const char *seg, size_t len, const uint16_t *f, bool at_end,
                         const char *path, size_t n, struct cursor *c)
{
    size_t q = 0;
    bool ended = false;
    unsigned char b;
    while (cursor_get(path, n, c, &b)) {
        while (q > 0 && (unsigned char)seg[q] != b)
            q = f[q - 1];
        if ((unsigned char)seg[q] == b)
            q++;
        ended = false;
        if (q == len) {
            if (!at_end)
                return true;
            ended = true;
            q = f[q - 1];
        }
    }
    return ended;
}

/* Does rule q match the path, given that its head matched and *c is just
 * after it? Each segment of the tail is taken leftmost, which is enough for
 * patterns whose only wildcard is '*'. */
static bool tail_match(const struct rule *q, const char *path, size_t n, struct cursor c)
{
    size_t i = q->head_len;
    if (i == q->pat_len)
        return !q->anchored || c.i >= n;
    for (;;) {
        while (i < q->pat_len && q->pat[i] == '*')
            i++;
        if (i == q->pat_len)
            return true; /* a final '*' takes the rest */
        size_t j = i;
        while (j < q->pat_len && q->pat[j] != '*')
            j++;
        bool last = j == q->pat_len;
        bool at_end = last && q->anchored;
        if (!find_segment(q->pat + i, j - i, q->fail + i, at_end, path, n, &c))
            return false;
        if (last)
            return true;
        i = j;
    }
}

/* Would rule a decide over rule b (NULL: nothing yet)? */
static bool outranks(const struct rule *a, const struct rule *b)
{
    if (b == NULL)
        return true;
    if (a->weight != b->weight)
        return a->weight > b->weight;
    if (a->allow != b->allow)
        return a->allow;
    return a->line < b->line;
}

/* The deciding rule for a path, or NULL: walks the path once over the rules
 * sorted by head (see the top of the file). */
static const struct rule *decide(const robots *r, const char *path, size_t n)
{
    const struct rule *best = NULL;
    size_t lo = 0, hi = r->nrules, d = 0;
    struct cursor c = {0, 0};
    for (;;) {
        /* rules whose head is exactly the d bytes read so far sort first */
        for (; lo < hi && r->rules[lo].head_len == d; lo++) {
            const struct rule *q = &r->rules[lo];
            if (outranks(q, best) && tail_match(q, path, n, c))
                best = q;
        }
        unsigned char b;
        if (lo >= hi || !cursor_get(path, n, &c, &b))
            return best;
        /* keep the rules whose head continues with b: [lo, hi) all share
         * d bytes and are sorted, so byte d is non-decreasing */
        size_t l = lo, h = hi;
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            if ((unsigned char)r->rules[mid].pat[d] < b)
                l = mid + 1;
            else
                h = mid;
        }
        lo = l;
        h = hi;
        while (l < h) {
            size_t mid = l + (h - l) / 2;
            if ((unsigned char)r->rules[mid].pat[d] <= b)
                l = mid + 1;
            else
                h = mid;
        }
        hi = l;
        d++;
    }
}

/* ---- parser ----------------------------------------------------------- */

/* A rule while parsing: strings are offsets into parser.text. */
struct prule {
    size_t pat_off, pat_len;
    size_t orig_off, orig_len;
    size_t line;
    bool allow;
    bool anchored;
};

struct rule_list {
    struct prule *v;
    size_t n, cap;
    size_t dropped;
};

struct parser {
    const char *tok;         /* the agent's product token */
    size_t tok_len;
    cr_buf text;
    struct rule_list exact;  /* groups naming the agent */
    struct rule_list star;   /* `*` groups; emptied once exact is used */
    size_t *sitemap_off;
    size_t nsitemaps, capsitemaps;
    long exact_delay, star_delay;
    bool any_exact, any_star;
    bool in_group;           /* a user-agent line has been seen */
    bool in_rules;           /* the current group has had a member line */
    bool cur_exact, cur_star;
    robots_stats st;
};

enum key {
    KEY_UNKNOWN,
    KEY_USER_AGENT,
    KEY_ALLOW,
    KEY_DISALLOW,
    KEY_SITEMAP,
    KEY_CRAWL_DELAY
};

static bool is_ws(char c) { return c == ' ' || c == '\t'; }

static bool is_token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

static char lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c; }

static bool ieq(const char *a, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lower(a[i]) != lit[i])
            return false;
    return true;
}

static enum key key_of(const char *k, size_t n)
{
    static const struct {
        const char *name;
        enum key key;
    } keys[] = {
        {"user-agent", KEY_USER_AGENT},   {"useragent", KEY_USER_AGENT},
        {"user agent", KEY_USER_AGENT},   {"allow", KEY_ALLOW},
        {"disallow", KEY_DISALLOW},       {"disalow", KEY_DISALLOW},
        {"dissallow", KEY_DISALLOW},      {"dissalow", KEY_DISALLOW},
        {"sitemap", KEY_SITEMAP},         {"site-map", KEY_SITEMAP},
        {"crawl-delay", KEY_CRAWL_DELAY}, {"crawldelay", KEY_CRAWL_DELAY},
        {"crawl delay", KEY_CRAWL_DELAY},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (ieq(k, n, keys[i].name))
            return keys[i].key;
    return KEY_UNKNOWN;
}

/* Crawl-delay value: seconds, digits with an optional fraction ("10", "0.5",
 * ".5", "2."); anything else is invalid (-1). Milliseconds, clamped. */
static long parse_delay(const char *v, size_t n)
{
    size_t i = 0;
    long ms = 0;
    bool digits = false;
    while (i < n && v[i] >= '0' && v[i] <= '9') {
        if (ms <= ROBOTS_MAX_DELAY_MS)
            ms = ms * 10 + (v[i] - '0') * 1000L;
        digits = true;
        i++;
    }
    if (i < n && v[i] == '.') {
        i++;
        long scale = 100;
        while (i < n && v[i] >= '0' && v[i] <= '9') {
            if (ms <= ROBOTS_MAX_DELAY_MS)
                ms += (v[i] - '0') * scale;
            scale /= 10;
            digits = true;
            i++;
        }
    }
    if (!digits || i != n)
        return -1;
    return ms > ROBOTS_MAX_DELAY_MS ? ROBOTS_MAX_DELAY_MS : ms;
}

/* Appends the normal form of a rule value to text; 0 or -ENOMEM. A final
 * '$' anchors (unless the pattern ends in '*', which makes it moot); a value
 * starting with neither '/' nor '*' gets a leading '/' ("Disallow: tmp/"
 * is read as "/tmp/"). *plen is 0 for a value that can match nothing. */
static int normalize_pattern(cr_buf *text, const char *v, size_t n, size_t *plen, bool *anchored)
{
    size_t start = text->len;
    *anchored = false;
    if (n > 0 && v[n - 1] == '$') {
        *anchored = true;
        n--;
    }
    *plen = 0;
    if (n == 0)
        return 0;
    if (v[0] != '/' && v[0] != '*') {
        int rc = cr_buf_putc(text, '/');
        if (rc < 0)
            return rc;
    }
    for (size_t i = 0; i < n;) {
        unsigned char u[3];
        size_t adv;
        size_t ul = unit_at(v, n, i, true, u, &adv);
        int rc = cr_buf_append(text, u, ul);
        if (rc < 0)
            return rc;
        i += adv;
    }
    *plen = text->len - start;
    if (*anchored && text->data[text->len - 1] == '*')
        *anchored = false;
    return 0;
}

static int add_rule(struct parser *ps, struct rule_list *l, bool allow, const char *v, size_t n,
                    size_t line)
{
    if (l->n >= ROBOTS_MAX_RULES) {
        l->dropped++;
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        if (cap > ROBOTS_MAX_RULES)
            cap = ROBOTS_MAX_RULES;
        struct prule *nv = cr_realloc(l->v, cap * sizeof *nv);
        if (nv == NULL)
            return -ENOMEM;
        l->v = nv;
        l->cap = cap;
    }
    size_t mark = ps->text.len;
    struct prule r = {.line = line, .allow = allow};
    r.pat_off = ps->text.len;
    int rc = normalize_pattern(&ps->text, v, n, &r.pat_len, &r.anchored);
    if (rc < 0)
        return rc;
    if (r.pat_len == 0) { /* "Disallow: $": matches no path */
        ps->text.len = mark;
        return 0;
    }
    rc = cr_buf_putc(&ps->text, '\0');
    if (rc == 0) {
        r.orig_off = ps->text.len;
        r.orig_len = n;
        rc = cr_buf_append(&ps->text, v, n);
    }
    if (rc == 0)
        rc = cr_buf_putc(&ps->text, '\0');
    if (rc < 0)
        return rc;
    l->v[l->n++] = r;
    return 0;
}

static int add_sitemap(struct parser *ps, const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c <= 0x20 || c == 0x7F) {
            ps->st.sitemaps_dropped++;
            return 0;
        }
    }
    if (ps->nsitemaps >= ROBOTS_MAX_SITEMAPS) {
        ps->st.sitemaps_dropped++;
        return 0;
    }
    if (ps->nsitemaps == ps->capsitemaps) {
        size_t cap = ps->capsitemaps ? ps->capsitemaps * 2 : 4;
        size_t *nv = cr_realloc(ps->sitemap_off, cap * sizeof *nv);
        if (nv == NULL)
            return -ENOMEM;
        ps->sitemap_off = nv;
        ps->capsitemaps = cap;
    }
    size_t off = ps->text.len;
    int rc = cr_buf_append(&ps->text, v, n);
    if (rc == 0)
        rc = cr_buf_putc(&ps->text, '\0');
    if (rc < 0)
        return rc;
    ps->sitemap_off[ps->nsitemaps++] = off;
    return 0;
}

static void on_user_agent(struct parser *ps, const char *v, size_t n)
{
    if (ps->in_rules) { /* a member line ended the previous group */
        ps->cur_exact = ps->cur_star = false;
        ps->in_rules = false;
    }
    ps->in_group = true;
    if (n > 0 && v[0] == '*' && (n == 1 || is_ws(v[1]))) {
        ps->cur_star = true;
        ps->any_star = true;
        return;
    }
    size_t t = 0;
    while (t < n && is_token_char(v[t]))
        t++;
    if (t == 0 || t != ps->tok_len)
        return;
    for (size_t i = 0; i < t; i++)
        if (lower(v[i]) != lower(ps->tok[i]))
            return;
    ps->cur_exact = true;
    if (!ps->any_exact) {
        ps->any_exact = true;
        ps->star.n = 0; /* never used now; its text is left behind */
        ps->star.dropped = 0;
    }
}

/* One line, without its end-of-line bytes. 0 or -ENOMEM. */
static int parse_line(struct parser *ps, const char *s, size_t n, size_t line)
{
    if (n > ROBOTS_MAX_LINE) {
        ps->st.lines_skipped++;
        return 0;
    }
    const char *hash = memchr(s, '#', n);
    if (hash != NULL)
        n = (size_t)(hash - s);
    const char *colon = memchr(s, ':', n);
    if (colon == NULL) {
        size_t i = 0;
        while (i < n && is_ws(s[i]))
            i++;
        if (i < n) /* not an empty line */
            ps->st.lines_skipped++;
        return 0;
    }
    const char *k = s;
    size_t klen = (size_t)(colon - s);
    while (klen > 0 && is_ws(*k)) {
        k++;
        klen--;
    }
    while (klen > 0 && is_ws(k[klen - 1]))
        klen--;
    const char *v = colon + 1;
    size_t vlen = n - (size_t)(v - s);
    while (vlen > 0 && is_ws(*v)) {
        v++;
        vlen--;
    }
    while (vlen > 0 && is_ws(v[vlen - 1]))
        vlen--;

    enum key key = key_of(k, klen);
    switch (key) {
    case KEY_USER_AGENT:
        on_user_agent(ps, v, vlen);
        return 0;
    case KEY_ALLOW:
    case KEY_DISALLOW:
        if (!ps->in_group) { /* rules before any user-agent line */
            ps->st.lines_skipped++;
            return 0;
        }
        ps->in_rules = true;
        if (vlen == 0) /* empty value: no rule */
            return 0;
        if (ps->cur_exact)
            return add_rule(ps, &ps->exact, key == KEY_ALLOW, v, vlen, line);
        if (ps->cur_star && !ps->any_exact)
            return add_rule(ps, &ps->star, key == KEY_ALLOW, v, vlen, line);
        return 0;
    case KEY_CRAWL_DELAY: {
        if (!ps->in_group) {
            ps->st.lines_skipped++;
            return 0;
        }
        ps->in_rules = true;
        long ms = parse_delay(v, vlen);
        if (ms < 0)
            return 0;
        if (ps->cur_exact) {
            if (ms > ps->exact_delay)
                ps->exact_delay = ms;
        } else if (ps->cur_star && !ps->any_exact) {
            if (ms > ps->star_delay)
                ps->star_delay = ms;
        }
        return 0;
    }
    case KEY_SITEMAP:
        return vlen > 0 ? add_sitemap(ps, v, vlen) : 0;
    case KEY_UNKNOWN:
        break;
    }
    ps->st.lines_skipped++;
    return 0;
}

/* How much of the input is read: at most max bytes, and when the cap cuts
 * a line, only up to the end of the last whole line. */
static size_t parse_extent(const char *data, size_t len, size_t max)
{
    if (len <= max)
        return len;
    if (data[max] == '\r' || data[max] == '\n')
        return max;
    size_t l = max;
    while (l > 0 && data[l - 1] != '\r' && data[l - 1] != '\n')
        l--;
    return l;
}

/* By head, bytewise, a head before its extensions; then by line. */
static int rule_cmp(const void *a, const void *b)
{
    const struct rule *x = a;
    const struct rule *y = b;
    size_t n = x->head_len < y->head_len ? x->head_len : y->head_len;
    int c = memcmp(x->pat, y->pat, n);
    if (c != 0)
        return c;
    if (x->head_len != y->head_len)
        return x->head_len < y->head_len ? -1 : 1;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return 0;
}

/* KMP failure values for every segment of the tail of a pattern: f[i] is,
 * within the segment holding i, the length of the longest proper border of
 * the segment's bytes up to i. Values fit 16 bits: a pattern comes from a
 * line of at most ROBOTS_MAX_LINE bytes, so it is under 3 * 16384 + 1. */
static void build_failure(const char *p, size_t head, size_t len, uint16_t *f)
{
    size_t i = head;
    while (i < len) {
        if (p[i] == '*') {
            f[i++] = 0;
            continue;
        }
        size_t s = i; /* a segment starts */
        f[i++] = 0;
        size_t k = 0;
        for (; i < len && p[i] != '*'; i++) {
            while (k > 0 && p[s + k] != p[i])
                k = f[s + k - 1];
            if (p[s + k] == p[i])
                k++;
            f[i] = (uint16_t)k;
        }
    }
}

/* Moves the chosen rules and the sitemaps into a new robots object. */
static robots *build(struct parser *ps)
{
    const struct rule_list *l = NULL;
    long delay = -1;
    if (ps->any_exact) {
        l = &ps->exact;
        delay = ps->exact_delay;
    } else if (ps->any_star) {
        l = &ps->star;
        delay = ps->star_delay;
    }
    size_t nrules = l ? l->n : 0;
    size_t total = 0, nfail = 0;
    for (size_t i = 0; i < nrules; i++) {
        total += l->v[i].pat_len + 1 + l->v[i].orig_len + 1;
        if (memchr(ps->text.data + l->v[i].pat_off, '*', l->v[i].pat_len) != NULL)
            nfail += l->v[i].pat_len;
    }
    for (size_t i = 0; i < ps->nsitemaps; i++)
        total += strlen(ps->text.data + ps->sitemap_off[i]) + 1;

    robots *r = cr_calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->arena = cr_malloc(total);
    r->rules = nrules ? cr_calloc(nrules, sizeof *r->rules) : NULL;
    r->sitemaps = ps->nsitemaps ? cr_calloc(ps->nsitemaps, sizeof *r->sitemaps) : NULL;
    r->fail = nfail ? cr_malloc(nfail * sizeof *r->fail) : NULL;
    if (r->arena == NULL || (nrules && r->rules == NULL) ||
        (ps->nsitemaps && r->sitemaps == NULL) || (nfail && r->fail == NULL)) {
        robots_free(r);
        return NULL;
    }
    char *a = r->arena;
    uint16_t *f = r->fail;
    for (size_t i = 0; i < nrules; i++) {
        const struct prule *p = &l->v[i];
        struct rule *q = &r->rules[i];
        memcpy(a, ps->text.data + p->pat_off, p->pat_len);
        a[p->pat_len] = '\0';
        q->pat = a;
        q->pat_len = p->pat_len;
        a += p->pat_len + 1;
        memcpy(a, ps->text.data + p->orig_off, p->orig_len);
        a[p->orig_len] = '\0';
        q->orig = a;
        q->orig_len = p->orig_len;
        a += p->orig_len + 1;
        q->line = p->line;
        q->allow = p->allow;
        q->anchored = p->anchored;
        q->weight = p->pat_len + (p->anchored ? 1 : 0);
        const char *star = memchr(q->pat, '*', q->pat_len);
        q->head_len = star ? (size_t)(star - q->pat) : q->pat_len;
        if (star != NULL) {
            build_failure(q->pat, q->head_len, q->pat_len, f);
            q->fail = f;
            f += q->pat_len;
        }
    }
    if (nrules > 1)
        qsort(r->rules, nrules, sizeof *r->rules, rule_cmp);
    r->nrules = nrules;
    for (size_t i = 0; i < ps->nsitemaps; i++) {
        const char *s = ps->text.data + ps->sitemap_off[i];
        size_t n = strlen(s) + 1;
        memcpy(a, s, n);
        r->sitemaps[i] = a;
        a += n;
    }
    r->nsitemaps = ps->nsitemaps;
    r->delay_ms = delay;
    r->st = ps->st;
    r->st.rules = nrules;
    r->st.rules_dropped = l ? l->dropped : 0;
    return r;
}

robots *robots_parse(const char *data, size_t len, const char *agent, size_t max_bytes)
{
    robots *r = NULL;
    struct parser ps;
    memset(&ps, 0, sizeof ps);
    cr_buf_init(&ps.text, 0);
    ps.exact_delay = ps.star_delay = -1;
    if (agent != NULL) {
        ps.tok = agent;
        while (is_token_char(agent[ps.tok_len]))
            ps.tok_len++;
    }
    if (data == NULL)
        len = 0;
    if (max_bytes == 0)
        max_bytes = ROBOTS_DEFAULT_MAX_BYTES;

    size_t end = parse_extent(data, len, max_bytes);
    ps.st.bytes_parsed = end;
    ps.st.bytes_ignored = len - end;
    size_t pos = 0;
    if (end >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    size_t line = 0;
    while (pos < end) {
        size_t e = pos;
        while (e < end && data[e] != '\n' && data[e] != '\r')
            e++;
        line++;
        if (parse_line(&ps, data + pos, e - pos, line) < 0)
            goto out;
        if (e < end && data[e] == '\r' && e + 1 < end && data[e + 1] == '\n')
            e++;
        pos = e + 1;
    }
    ps.st.lines = line;
    r = build(&ps);
out:
    cr_free(ps.sitemap_off);
    cr_free(ps.star.v);
    cr_free(ps.exact.v);
    cr_buf_release(&ps.text);
    return r;
}

robots *robots_allow_all(void)
{
    robots *r = cr_calloc(1, sizeof *r);
    if (r != NULL)
        r->delay_ms = -1;
    return r;
}

robots *robots_disallow_all(void)
{
    robots *r = robots_allow_all();
    if (r != NULL)
        r->unavailable = true;
    return r;
}

robots *robots_for_status(int status, const char *body, size_t len, const char *agent,
                          size_t max_bytes)
{
    if (status >= 200 && status < 300)
        return robots_parse(body, len, agent, max_bytes);
    if (status >= 400 && status < 500)
        return robots_allow_all();
    return robots_disallow_all();
}

void robots_free(robots *r)
{
    if (r == NULL)
        return;
    cr_free(r->fail);
    cr_free(r->sitemaps);
    cr_free(r->rules);
    cr_free(r->arena);
    cr_free(r);
}

/* ---- queries ---------------------------------------------------------- */

int robots_allowed(const robots *r, const char *path_and_query, size_t len, robots_rule *why)
{
    robots_rule dummy;
    if (why == NULL)
        why = &dummy;
    memset(why, 0, sizeof *why);
    if (len == 0) {
        path_and_query = "/";
        len = 1;
    }
    static const char robots_txt[] = "/robots.txt";
    struct cursor c = {0, 0};
    if (match_literal(robots_txt, sizeof robots_txt - 1, path_and_query, len, &c) &&
        c.i >= len) {
        why->kind = ROBOTS_RULE_IMPLICIT;
        return 1;
    }
    if (r->unavailable) {
        why->kind = ROBOTS_RULE_UNAVAILABLE;
        return 0;
    }
    const struct rule *q = decide(r, path_and_query, len);
    if (q == NULL) {
        why->kind = ROBOTS_RULE_NONE;
        return 1;
    }
    why->kind = q->allow ? ROBOTS_RULE_ALLOW : ROBOTS_RULE_DISALLOW;
    why->pattern = q->orig;
    why->pattern_len = q->orig_len;
    why->line = q->line;
    return q->allow ? 1 : 0;
}

struct out {
    char *s;
    size_t size, pos;
    bool truncated;
};

static void out_putc(struct out *o, char c)
{
    if (o->pos + 1 < o->size)
        o->s[o->pos++] = c;
    else
        o->truncated = true;
}

static void out_puts(struct out *o, const char *s)
{
    while (*s != '\0')
        out_putc(o, *s++);
}

int robots_rule_describe(const robots_rule *why, char *out, size_t size)
{
    struct out o = {out, size, 0, false};
    if (size == 0)
        return -ENOSPC;
    switch (why ? why->kind : ROBOTS_RULE_NONE) {
    case ROBOTS_RULE_ALLOW:
    case ROBOTS_RULE_DISALLOW:
        out_puts(&o, why->kind == ROBOTS_RULE_ALLOW ? "allow: " : "disallow: ");
        for (size_t i = 0; why->pattern != NULL && i < why->pattern_len; i++) {
            unsigned char c = (unsigned char)why->pattern[i];
            if (c < 0x20 || c == 0x7F) {
                out_putc(&o, '%');
                out_putc(&o, hexdig[c >> 4]);
                out_putc(&o, hexdig[c & 15]);
            } else {
                out_putc(&o, (char)c);
            }
        }
        break;
    case ROBOTS_RULE_IMPLICIT:
        out_puts(&o, "implicit allow: /robots.txt");
        break;
    case ROBOTS_RULE_UNAVAILABLE:
        out_puts(&o, "disallow all: robots.txt unavailable");
        break;
    case ROBOTS_RULE_NONE:
    default:
        out_puts(&o, "-");
        break;
    }
    o.s[o.pos] = '\0';
    return o.truncated ? -ENOSPC : 0;
}

long robots_crawl_delay_ms(const robots *r) { return r->delay_ms; }

size_t robots_sitemap_count(const robots *r) { return r->nsitemaps; }

const char *robots_sitemap(const robots *r, size_t i)
{
    return i < r->nsitemaps ? r->sitemaps[i] : NULL;
}

size_t robots_rule_count(const robots *r) { return r->nrules; }

void robots_get_stats(const robots *r, robots_stats *out) { *out = r->st; }
