/* tests/fuzz/fuzz_scope: libFuzzer target for frontier/scope.
 *
 * Input layout: byte 0 picks the mode and the limits, then a pattern up to
 * the first '\n', a seed up to the next '\n', and the rest is the URL to
 * check (any bytes, not NUL-terminated). Checks:
 * - scope_check never crashes and returns a verdict in range; the counters
 *   add up to the number of checks;
 * - scope_glob_match agrees with an O(n·m) dynamic-programming reference
 *   (the library backtracks to the last '*' instead);
 * - the repeated-segment verdict agrees with a reference that splits the
 *   path into segments first (tests/site's rule: the longest run of one
 *   non-empty segment in a row);
 * - a seed URL is always in scope of its own seed set in host, domain and
 *   prefix mode. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/scope.h"
#include "storage/db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

#define MAXP 64
#define MAXS 512

/* dp[i][j]: pattern[i..] matches s[j..] */
static int glob_ref(const char *p, size_t pl, const char *s, size_t sl)
{
    static unsigned char dp[MAXP + 1][MAXS + 1];
    for (size_t i = pl + 1; i-- > 0;) {
        for (size_t j = sl + 1; j-- > 0;) {
            unsigned char v;
            if (i == pl)
                v = j == sl;
            else if (p[i] == '*')
                v = dp[i + 1][j] || (j < sl && dp[i][j + 1]);
            else
                v = j < sl && p[i] == s[j] && dp[i + 1][j + 1];
            dp[i][j] = v;
        }
    }
    return dp[0][0];
}

/* Longest run of one non-empty segment, from a split list of segments. */
static long run_ref(const char *path, size_t n)
{
    const char *seg[MAXS];
    size_t len[MAXS], k = 0;
    long best = 0, run = 0;
    size_t i = 1;
    if (n == 0)
        return 0;
    while (i <= n && k < MAXS) {
        size_t e = i;
        while (e < n && path[e] != '/')
            e++;
        seg[k] = path + i;
        len[k] = e - i;
        k++;
        i = e + 1;
    }
    for (size_t a = 0; a < k; a++) {
        if (len[a] == 0) {
            run = 0;
            continue;
        }
        if (a > 0 && len[a] == len[a - 1] && memcmp(seg[a], seg[a - 1], len[a]) == 0)
            run++;
        else
            run = 1;
        if (run > best)
            best = run;
    }
    return best;
}

/* The path of an http(s) URL as the scope reads it, or NULL. */
static const char *path_of(const char *u, size_t n, size_t *plen)
{
    size_t i;
    if (n >= 7 && memcmp(u, "http://", 7) == 0)
        i = 7;
    else if (n >= 8 && memcmp(u, "https://", 8) == 0)
        i = 8;
    else
        return NULL;
    while (i < n && u[i] != '/' && u[i] != '?' && u[i] != '#')
        i++;
    size_t e = i;
    while (e < n && u[e] != '?' && u[e] != '#')
        e++;
    *plen = e - i;
    return u + i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[MAXS + 1];
    const char *pat, *seed, *url;
    size_t plen, slen, ulen;
    scope_opts o;
    scope *s;
    uint64_t counts[SCOPE_VERDICT_COUNT], total = 0;

    if (size < 1 || size > MAXS)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    uint8_t sel = (uint8_t)buf[0];
    pat = buf + 1;
    const char *nl = memchr(pat, '\n', size - 1);
    if (nl == NULL)
        return 0;
    plen = (size_t)(nl - pat);
    seed = nl + 1;
    nl = memchr(seed, '\n', size - (size_t)(seed - buf));
    if (nl == NULL)
        return 0;
    slen = (size_t)(nl - seed);
    url = nl + 1;
    ulen = size - (size_t)(url - buf);

    /* glob against the reference, both ways round */
    if (plen <= MAXP) {
        CHECK(scope_glob_match(pat, plen, url, ulen) == glob_ref(pat, plen, url, ulen));
        if (slen <= MAXP)
            CHECK(scope_glob_match(seed, slen, pat, plen) == glob_ref(seed, slen, pat, plen));
    }

    scope_opts_defaults(&o);
    o.mode = sel & 3;
    o.fetch_requisites = (sel >> 2) & 1;
    o.max_depth = (sel >> 3) & 3;
    o.max_repeated_segment = (sel >> 5) & 3;
    o.max_query_params = (sel >> 5) & 1 ? 2 : -1;
    o.max_path_depth = (sel >> 6) & 1 ? 4 : -1;
    o.max_url_length = (sel >> 7) ? 40 : -1;
    o.requisite_depth = (sel >> 1) & 1;
    o.requisites_same_host = (sel >> 4) & 1;
    char pbuf[MAXP + 1];
    const char *pv[1] = { pbuf };
    if (plen > 0 && plen <= MAXP && memchr(pat, '\0', plen) == NULL) {
        memcpy(pbuf, pat, plen);
        pbuf[plen] = '\0';
        if (sel & 0x10) {
            o.include = pv;
            o.n_include = 1;
        } else {
            o.exclude = pv;
            o.n_exclude = 1;
        }
    }
    s = scope_new(&o, NULL, 0);
    if (s == NULL)
        return 0;
    int seeded = scope_add_seed(s, seed, slen) == 0;
    for (int kind = 0; kind < DB_KIND_COUNT; kind++) {
        for (int64_t depth = 0; depth < 4; depth++) {
            scope_verdict v = scope_check(s, url, ulen, depth, kind);
            CHECK(v >= SCOPE_ALLOWED && v < SCOPE_VERDICT_COUNT);
            total++;
            /* the repeated-segment rule, when it is the deciding check */
            size_t pl;
            const char *p = path_of(url, ulen, &pl);
            if (v == SCOPE_TRAP_REPEATED_SEGMENT)
                CHECK(p != NULL && run_ref(p, pl) > o.max_repeated_segment);
            if (v == SCOPE_ALLOWED && p != NULL && o.max_repeated_segment >= 0)
                CHECK(run_ref(p, pl) <= o.max_repeated_segment);
        }
    }
    /* a requisite found on the seed: as a requisite or, on another host in
     * same-host mode, as a navigation link; never looser than a requisite */
    for (int64_t depth = 0; depth < 4; depth++) {
        scope_verdict r = scope_check_requisite(s, url, ulen, depth, seed, slen);
        scope_verdict q = scope_check(s, url, ulen, depth, DB_KIND_REQUISITE);
        scope_verdict n = scope_check(s, url, ulen, depth, DB_KIND_NAVIGATION);
        total += 3;
        CHECK(r == q || r == n);
        if (!o.requisites_same_host)
            CHECK(r == q);
        /* a requisite passes wherever a navigation link does */
        if (n == SCOPE_ALLOWED)
            CHECK(q == SCOPE_ALLOWED);
    }
    /* a seed is in its own scope (unless an exclude pattern removes it) */
    if (seeded && o.n_exclude == 0)
        CHECK(scope_in_scope(s, seed, slen) == 1);
    (void)scope_in_scope(s, url, ulen);
    scope_get_counts(s, counts);
    uint64_t sum = 0;
    for (int i = 0; i < SCOPE_VERDICT_COUNT; i++)
        sum += counts[i];
    CHECK(sum == total);
    scope_free(s);
    return 0;
}
