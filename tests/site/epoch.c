/* tests/site/epoch: the test site over time (see epoch.h). Every draw is a
 * splitmix64 hash of (seed, host, page, epoch, what), so any epoch can be
 * asked about in any order and two processes agree. */
#include "tests/site/epoch.h"

#include <stdio.h>
#include <string.h>

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A draw in 0..99 for (host, page, epoch, what). */
static unsigned draw(const site *s, int h, long page, int k, unsigned what)
{
    const site_opts *o = site_options(s);
    uint64_t z = mix(o->seed ^ 0x5eedull);
    z = mix(z ^ (uint64_t)h);
    z = mix(z ^ (uint64_t)page);
    z = mix(z ^ ((uint64_t)k << 8 | what));
    return (unsigned)(z % 100);
}

bool epoch_on(const site *s)
{
    return site_options(s)->epoch >= 0;
}

/* Home and section pages stay: the site keeps its shape. */
static bool mutable_page(long page)
{
    return page > 8;
}

/* The first epoch (1..epoch) at which the page is removed, or 0. */
static int removed_at(const site *s, int h, long page)
{
    const site_opts *o = site_options(s);
    if (!mutable_page(page))
        return 0;
    for (int k = 1; k <= o->epoch; k++)
        if (draw(s, h, page, k, 1) < (unsigned)o->remove_pct)
            return k;
    return 0;
}

int epoch_removed(const site *s, int h, long page)
{
    if (!epoch_on(s) || removed_at(s, h, page) == 0)
        return 0;
    return page % 2 ? 410 : 404;
}

int epoch_revision(const site *s, int h, long page, int *last)
{
    const site_opts *o = site_options(s);
    int n = 0, at = 0;
    for (int k = 1; k <= o->epoch; k++) {
        bool changed = page == 0 ? o->add_pages > 0
                                 : mutable_page(page) && draw(s, h, page, k, 2) < (unsigned)o->change_pct;
        if (changed) {
            n++;
            at = k;
        }
    }
    if (last)
        *last = at;
    return n;
}

int epoch_new_of(const site *s, const char *target, int *k, int *j)
{
    const site_opts *o = site_options(s);
    int kk = 0, jj = 0, used = 0;
    if (!epoch_on(s) || sscanf(target, "/new/%d-%d.html%n", &kk, &jj, &used) != 2 ||
        target[used] != '\0' || kk < 1 || kk > o->epoch || jj < 0 || jj >= o->add_pages)
        return -1;
    char again[64];
    snprintf(again, sizeof again, "/new/%d-%d.html", kk, jj);
    if (strcmp(again, target) != 0) /* one spelling only (no leading zeros) */
        return -1;
    *k = kk;
    *j = jj;
    return 0;
}

bool epoch_validators(const site *s, int h)
{
    return epoch_on(s) && h != site_options(s)->plain_host;
}

int64_t epoch_last_modified(const site *s, int h, const char *target)
{
    int k = 0, j = 0, last = 0;
    long page = site_page_of(s, target);
    if (page >= 0)
        epoch_revision(s, h, page, &last);
    else if (epoch_new_of(s, target, &k, &j) == 0)
        last = k;
    return EPOCH_BASE_S + (int64_t)last * 86400;
}

int epoch_print(const site *s, FILE *f)
{
    const site_opts *o = site_options(s);
    char auth[64], t[96];
    for (int h = 0; h < o->hosts; h++) {
        if (site_authority(s, h, auth, sizeof auth) != 0)
            return -1;
        for (long p = 0; p < o->pages; p++) {
            int last = 0;
            int rm = removed_at(s, h, p);
            site_page_target(p, t, sizeof t);
            if (rm == o->epoch && rm > 0)
                fprintf(f, "removed\thttp://%s%s\n", auth, t);
            else if (rm == 0 && epoch_revision(s, h, p, &last) > 0 && last == o->epoch)
                fprintf(f, "changed\thttp://%s%s\n", auth, t);
        }
        for (int j = 0; o->epoch >= 1 && j < o->add_pages; j++)
            fprintf(f, "added\thttp://%s/new/%d-%d.html\n", auth, o->epoch, j);
    }
    return 0;
}
