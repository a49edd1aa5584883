/* tests/fuzz/fuzz_robots: libFuzzer target for frontier/robots.
 *
 * Input layout: byte 0 picks the agent, byte 1 the byte cap (bytes 0 ^ 1
 * also pick the rule kinds of the differential check), byte 2 the
 * length L of a path taken from the next L bytes; the rest is the robots.txt.
 * The file is parsed and several paths are matched; any broken invariant
 * traps. Then, as a differential check, the first one to four lines of the
 * file (minus whitespace and '#', at most 64 bytes each) become the rules of
 * a small file, and robots_allowed() must agree with a reference written
 * here independently: allocated normal forms, an O(n·m) dynamic program per
 * rule and a plain longest-match scan, instead of the library's cursor,
 * head-sorted walk and KMP. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/robots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            __builtin_trap();                                                                      \
    } while (0)

static const char *const agents[] = {"foobot", "ExampleBot/1.0", "crawld", "", NULL,
                                     "a",      "x-y_z",          "*"};
static const size_t caps[] = {0, 1, 16, 64, 256, 4096, 100, 7};

/* ---- reference normal form and matcher -------------------------------- */

static int hv(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Writes the normal form of s into out (room for 3n bytes); returns its
 * length. In a pattern '*' is the wildcard, written as byte 0x01 here so it
 * cannot be confused with a literal. */
static size_t ref_normalize(const uint8_t *s, size_t n, bool pattern, uint8_t *out)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = s[i];
        if (c == '%' && i + 2 < n && hv(s[i + 1]) >= 0 && hv(s[i + 2]) >= 0) {
            uint8_t v = (uint8_t)(hv(s[i + 1]) * 16 + hv(s[i + 2]));
            bool unreserved = (v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') ||
                              (v >= '0' && v <= '9') || strchr("-._~", v) != NULL;
            if (unreserved && v != 0) {
                out[o++] = v;
            } else {
                out[o++] = '%';
                out[o++] = (uint8_t)hx[v >> 4];
                out[o++] = (uint8_t)hx[v & 15];
            }
            i += 2;
        } else if (pattern && c == '*') {
            out[o++] = 0x01;
        } else if (c <= 0x20 || c >= 0x7F || c == '%' || c == '$' || c == '*') {
            out[o++] = '%';
            out[o++] = (uint8_t)hx[c >> 4];
            out[o++] = (uint8_t)hx[c & 15];
        } else {
            out[o++] = c;
        }
    }
    return o;
}

/* Does pattern p (0x01 = any run) match a prefix of t (all of t when
 * anchored)? m[i][j]: p[i..] matches starting at t[j]. */
static bool ref_match(const uint8_t *p, size_t pn, bool anchored, const uint8_t *t, size_t tn)
{
    bool *m = calloc((pn + 1) * (tn + 1), sizeof *m);
    CHECK(m != NULL);
#define M(i, j) m[(i) * (tn + 1) + (j)]
    for (size_t j = 0; j <= tn; j++)
        M(pn, j) = anchored ? j == tn : true;
    for (size_t i = pn; i-- > 0;) {
        for (size_t j = tn + 1; j-- > 0;) {
            if (p[i] == 0x01)
                M(i, j) = M(i + 1, j) || (j < tn && M(i, j + 1));
            else
                M(i, j) = j < tn && p[i] == t[j] && M(i + 1, j + 1);
        }
    }
    bool r = M(0, 0);
#undef M
    free(m);
    return r;
}

/* Reference for one rule: does pattern pat (as written, without a final
 * newline) match the normalized path np? *weight gets its octet count. */
static bool ref_rule(const uint8_t *pat, size_t pn, const uint8_t *np, size_t nn, size_t *weight)
{
    uint8_t pp[3 * 64 + 8];
    *weight = 0;
    bool anchored = pn > 0 && pat[pn - 1] == '$';
    if (anchored)
        pn--;
    if (pn == 0)
        return false; /* no rule */
    size_t pl = 0;
    if (pat[0] != '/' && pat[0] != '*')
        pp[pl++] = '/';
    pl += ref_normalize(pat, pn, true, pp + pl);
    if (pp[pl - 1] == 0x01)
        anchored = false;
    *weight = pl + (anchored ? 1 : 0);
    return ref_match(pp, pl, anchored, np, nn);
}

/* The expected verdict for "User-agent: *" and the given rules: the
 * heaviest matching rule decides, Allow wins a tie, no match allows. */
static int ref_verdict(const uint8_t *const pats[], const size_t pns[], const bool allow[],
                       size_t k, const uint8_t *path, size_t n)
{
    uint8_t np[3 * 256 + 8];
    if (n == 0) {
        path = (const uint8_t *)"/";
        n = 1;
    }
    size_t nn = ref_normalize(path, n, false, np);
    if (nn == 11 && memcmp(np, "/robots.txt", 11) == 0)
        return 1;
    size_t best = 0;
    int verdict = 1;
    bool found = false;
    for (size_t i = 0; i < k; i++) {
        size_t w;
        if (!ref_rule(pats[i], pns[i], np, nn, &w))
            continue;
        if (!found || w > best || (w == best && allow[i])) {
            verdict = (!found || w > best) ? (allow[i] ? 1 : 0) : 1;
            best = w;
            found = true;
        }
    }
    return verdict;
}

/* ---- checks ----------------------------------------------------------- */

static void check_path(const robots *r, const uint8_t *p, size_t n)
{
    robots_rule why;
    int a = robots_allowed(r, (const char *)p, n, &why);
    CHECK(a == 0 || a == 1);
    if (a == 0)
        CHECK(why.kind == ROBOTS_RULE_DISALLOW || why.kind == ROBOTS_RULE_UNAVAILABLE);
    else
        CHECK(why.kind == ROBOTS_RULE_NONE || why.kind == ROBOTS_RULE_ALLOW ||
              why.kind == ROBOTS_RULE_IMPLICIT);
    if (robots_rule_count(r) == 0)
        CHECK(a == 1);
    if (why.kind == ROBOTS_RULE_ALLOW || why.kind == ROBOTS_RULE_DISALLOW)
        CHECK(why.pattern != NULL && why.pattern_len > 0 && why.line > 0);
    char small[12], big[3 * ROBOTS_MAX_LINE + 64];
    int rc = robots_rule_describe(&why, small, sizeof small);
    CHECK(rc == 0 || (rc == -ENOSPC && strlen(small) == sizeof small - 1));
    CHECK(robots_rule_describe(&why, big, sizeof big) == 0);
}

/* Up to four patterns from the first lines of the file (whitespace, '#'
 * dropped; at most 64 bytes each) become the rules of a `*` group; bits of
 * kinds choose Allow or Disallow. The library must agree with ref_verdict. */
static void differential(const uint8_t *file, size_t flen, uint8_t kinds, const uint8_t *path,
                         size_t n)
{
    uint8_t pat[4][64];
    const uint8_t *pats[4];
    size_t pns[4];
    bool allow[4];
    size_t k = 0, i = 0;
    size_t nrules = 1 + (size_t)(kinds >> 6);
    while (k < nrules && i <= flen) {
        size_t pn = 0;
        for (; i < flen && file[i] != '\n' && file[i] != '\r'; i++) {
            uint8_t c = file[i];
            if (c != '#' && c != ' ' && c != '\t' && pn < sizeof pat[k])
                pat[k][pn++] = c;
        }
        i++; /* past the line end */
        pats[k] = pat[k];
        pns[k] = pn;
        allow[k] = (kinds >> k) & 1;
        k++;
    }
    if (n > 256)
        n = 256;
    char txt[16 + 4 * (10 + 64 + 1)];
    size_t tl = 0;
    memcpy(txt, "User-agent: *\n", 14);
    tl = 14;
    for (size_t j = 0; j < k; j++) {
        const char *key = allow[j] ? "Allow: " : "Disallow: ";
        memcpy(txt + tl, key, strlen(key));
        tl += strlen(key);
        memcpy(txt + tl, pats[j], pns[j]);
        tl += pns[j];
        txt[tl++] = '\n';
    }
    robots *r = robots_parse(txt, tl, "foobot", 0);
    if (r == NULL)
        return;
    int got = robots_allowed(r, (const char *)path, n, NULL);
    CHECK(got == ref_verdict(pats, pns, allow, k, path, n));
    robots_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    const char *agent = agents[data[0] & 7];
    uint8_t kinds = (uint8_t)(data[0] ^ data[1]);
    size_t cap = caps[data[1] & 7];
    size_t plen = data[2];
    data += 3;
    size -= 3;
    if (plen > size)
        plen = size;
    const uint8_t *path = data;
    const uint8_t *file = data + plen;
    size_t flen = size - plen;

    robots *r = robots_parse((const char *)file, flen, agent, cap);
    if (r == NULL)
        return 0;
    robots_stats st;
    robots_get_stats(r, &st);
    CHECK(st.bytes_parsed + st.bytes_ignored == flen);
    CHECK(st.bytes_parsed <= (cap ? cap : ROBOTS_DEFAULT_MAX_BYTES));
    CHECK(st.rules == robots_rule_count(r));
    long d = robots_crawl_delay_ms(r);
    CHECK(d == -1 || (d >= 0 && d <= ROBOTS_MAX_DELAY_MS));
    for (size_t i = 0; i < robots_sitemap_count(r); i++)
        CHECK(robots_sitemap(r, i) != NULL && robots_sitemap(r, i)[0] != '\0');
    CHECK(robots_sitemap(r, robots_sitemap_count(r)) == NULL);

    static const char *const fixed[] = {"/", "/robots.txt", "/a/b?c=d", "/%7Ea", "/\xC3\xBC",
                                        "/*$", "/foo/bar.gif", "/fish%2A.html?x=$"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_path(r, (const uint8_t *)fixed[i], strlen(fixed[i]));
    check_path(r, path, plen);
    check_path(r, (const uint8_t *)"", 0);
    robots_rule why;
    CHECK(robots_allowed(r, "/robots.txt", 11, &why) == 1 && why.kind == ROBOTS_RULE_IMPLICIT);
    robots_free(r);

    differential(file, flen, kinds, path, plen);
    return 0;
}
