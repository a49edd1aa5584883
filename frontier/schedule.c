/* frontier/schedule: the re-crawl interval policy (see schedule.h). The
 * rules are copied into one allocation at schedule_new and never change,
 * so no lock is needed. */
#include "frontier/schedule.h"

#include <string.h>

#include "common/alloc.h"

struct schedule {
    schedule_opts o;
    schedule_rule *rules; /* patterns point into mem */
    char *mem;
};

schedule *schedule_new(const schedule_opts *o)
{
    if (o == NULL || o->after_s < 0 || o->min_s < 1 || o->max_s < o->min_s ||
        (o->n_rules > 0 && o->rules == NULL))
        return NULL;
    size_t total = 1;
    for (size_t i = 0; i < o->n_rules; i++) {
        if (o->rules[i].seconds < 1 || o->rules[i].pattern == NULL)
            return NULL;
        total += o->rules[i].len;
    }
    schedule *s = cr_calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->o = *o;
    s->rules = cr_calloc(o->n_rules ? o->n_rules : 1, sizeof *s->rules);
    s->mem = cr_malloc(total);
    if (s->rules == NULL || s->mem == NULL) {
        schedule_free(s);
        return NULL;
    }
    char *p = s->mem;
    for (size_t i = 0; i < o->n_rules; i++) {
        memcpy(p, o->rules[i].pattern, o->rules[i].len);
        s->rules[i] = o->rules[i];
        s->rules[i].pattern = p;
        p += o->rules[i].len;
    }
    s->o.rules = s->rules;
    return s;
}

void schedule_free(schedule *s)
{
    if (s == NULL)
        return;
    cr_free(s->rules);
    cr_free(s->mem);
    cr_free(s);
}

bool schedule_enabled(const schedule *s)
{
    return s != NULL && (s->o.after_s > 0 || s->o.n_rules > 0);
}

/* Iterative glob with one backtrack point: linear in practice, and
 * O(plen * tlen) at worst, never exponential. */
bool schedule_glob(const char *p, size_t plen, const char *t, size_t tlen)
{
    size_t i = 0, j = 0, star = (size_t)-1, mark = 0;
    while (j < tlen) {
        if (i < plen && p[i] == '*') {
            star = i++;
            mark = j;
        } else if (i < plen && p[i] == t[j]) {
            i++;
            j++;
        } else if (star != (size_t)-1) {
            i = star + 1;
            j = ++mark;
        } else {
            return false;
        }
    }
    while (i < plen && p[i] == '*')
        i++;
    return i == plen;
}

/* The path and query of an absolute URL ("/" when it has none). */
static void path_of(const char *url, size_t len, const char **out, size_t *olen)
{
    const char *e = url + len;
    const char *p = memchr(url, ':', len);
    if (p != NULL && e - p >= 3 && p[1] == '/' && p[2] == '/') {
        const char *q = p + 3;
        while (q < e && *q != '/' && *q != '?')
            q++;
        *out = q;
        *olen = (size_t)(e - q);
        return;
    }
    *out = url;
    *olen = len;
}

int64_t schedule_base_s(const schedule *s, const char *url, size_t url_len)
{
    const char *path;
    size_t plen;
    path_of(url, url_len, &path, &plen);
    for (size_t i = 0; i < s->o.n_rules; i++) {
        const schedule_rule *r = &s->rules[i];
        bool whole = false;
        for (size_t k = 0; k + 3 <= r->len && !whole; k++)
            whole = memcmp(r->pattern + k, "://", 3) == 0;
        if (whole ? schedule_glob(r->pattern, r->len, url, url_len)
                  : schedule_glob(r->pattern, r->len, path, plen))
            return r->seconds;
    }
    return s->o.after_s;
}

static int64_t clamp(const schedule *s, int64_t v)
{
    return v < s->o.min_s ? s->o.min_s : v > s->o.max_s ? s->o.max_s : v;
}

int64_t schedule_next_s(const schedule *s, const char *url, size_t url_len, int64_t prev_s,
                        int outcome)
{
    if (outcome == SCHEDULE_GONE)
        return 0;
    int64_t base = schedule_base_s(s, url, url_len);
    if (base == 0)
        return 0;
    if (!s->o.adaptive)
        return base;
    if (prev_s <= 0 || outcome == SCHEDULE_FIRST || outcome == SCHEDULE_OTHER)
        return clamp(s, prev_s > 0 ? prev_s : base);
    if (outcome == SCHEDULE_CHANGED)
        return clamp(s, prev_s / 2);
    return clamp(s, prev_s > s->o.max_s / 2 ? s->o.max_s : prev_s * 2);
}
