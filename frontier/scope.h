/* frontier/scope: is a discovered URL one the crawl should fetch?
 *
 * Bytes in (a canonical http(s) URL as crawler/url produces it: lower-case
 * scheme and host, no fragment), a verdict out; no I/O. The checks run in
 * this order and the first that fails names the verdict:
 *
 *   1. scope       the mode (host: a seed's host; domain: a seed's
 *                  registrable domain, by the public suffix list of libpsl;
 *                  prefix: the URL starts with a seed up to the last '/' of
 *                  its path; any) OR one of the include patterns. A seed is
 *                  always in scope; a requisite (DB_KIND_REQUISITE) passes
 *                  this check from any host when fetch_requisites is on.
 *   2. excluded    one of the exclude patterns matches (exclude wins over
 *                  include and over the seed and requisite passes).
 *   3. too_deep    depth > max_depth; for a requisite (with
 *                  fetch_requisites), depth > max_depth + requisite_depth.
 *   4. traps       URL length, path depth, repeated segment, query params.
 *
 * Patterns are globs over the whole canonical URL: '*' matches any run of
 * bytes (also none), every other byte matches itself; no other metacharacter.
 * Trap limits (each off when < 0):
 *   max_url_length        bytes of the URL;
 *   max_path_depth        number of '/' in the path ("/" is 1, "/a/b/" is 3);
 *   max_repeated_segment  the longest run of one non-empty path segment
 *                         repeated in a row: "/a/a/a/" is a run of 3, allowed
 *                         by 3 and rejected by 2; "/a/b/a/" is 1; an empty
 *                         segment ("//") breaks a run (tests/site's
 *                         --max-repeat-segment, same rule);
 *   max_query_params      1 + the number of '&' when there is a '?' (an empty
 *                         query has no '?' in canonical form), else 0; so 0
 *                         rejects every URL with a query.
 * Hosts compare without port; "domain" falls back to the host itself for IP
 * addresses and names libpsl gives no registrable domain for (localhost).
 *
 * Threads: any number of threads may call scope_check() and scope_in_scope()
 * at once; scope_add_seed() may run concurrently with them (a rwlock guards
 * the seed sets: checks take it shared, additions exclusive). Counters are
 * atomics. */
#ifndef CRAWLD_SCOPE_H
#define CRAWLD_SCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct scope scope;

/* Same order as config's enum crawl_scope. */
typedef enum scope_mode {
    SCOPE_MODE_HOST = 0,
    SCOPE_MODE_DOMAIN,
    SCOPE_MODE_PREFIX,
    SCOPE_MODE_ANY
} scope_mode;

typedef enum scope_verdict {
    SCOPE_ALLOWED = 0,
    SCOPE_OUT_OF_SCOPE,
    SCOPE_EXCLUDED,
    SCOPE_TOO_DEEP,
    SCOPE_TRAP_URL_LENGTH,
    SCOPE_TRAP_PATH_DEPTH,
    SCOPE_TRAP_REPEATED_SEGMENT,
    SCOPE_TRAP_QUERY_PARAMS,
    SCOPE_VERDICT_COUNT
} scope_verdict;

#define SCOPE_MAX_PATTERNS 10000u /* include + exclude patterns each */
#define SCOPE_MAX_PATTERN 4096u   /* bytes of one pattern */

typedef struct scope_opts {
    int mode;                       /* enum scope_mode */
    const char *const *include;     /* globs; copied by scope_new */
    size_t n_include;
    const char *const *exclude;
    size_t n_exclude;
    bool fetch_requisites;
    bool requisites_same_host;      /* scope_check_requisite: only from the
                                       referring page's (or stylesheet's) host */
    int64_t requisite_depth;        /* levels past max_depth a requisite may be */
    int64_t max_depth;              /* 0 = seeds only; < 0 = no limit */
    int64_t max_url_length;         /* < 0 = off (as every limit below) */
    int64_t max_path_depth;
    int64_t max_repeated_segment;
    int64_t max_query_params;
} scope_opts;

/* Mode host, no patterns, requisites on from any host, requisite_depth 0,
 * every limit off. OUT: o */
void scope_opts_defaults(scope_opts *o);

/* A scope with no seeds yet. NULL when memory runs out or o is invalid (a
 * bad mode, more than SCOPE_MAX_PATTERNS patterns, one longer than
 * SCOPE_MAX_PATTERN or empty): err (may be NULL) says which. Caller owns
 * the result; free with scope_free(). */
scope *scope_new(const scope_opts *o, char *err, size_t errlen);
void scope_free(scope *s);

/* Adds a seed (a canonical http(s) URL): its host, registrable domain or
 * prefix joins the scope. Safe while other threads check. 0 (also when the
 * seed was already known), -EINVAL not an http(s) URL with a host, -ENOMEM. */
int scope_add_seed(scope *s, const char *url, size_t len);
/* Number of distinct seed keys (hosts, domains or prefixes by mode). */
size_t scope_seed_count(scope *s);

/* The verdict for url found at depth through a link of kind (enum db_kind:
 * DB_KIND_SEED, _NAVIGATION, _REDIRECT, _REQUISITE). Pass DB_KIND_REQUISITE
 * only for an embed (image, stylesheet, script, icon) of a page that is
 * itself in scope (scope_in_scope() of the page's URL); an embed found on a
 * page fetched only as another page's requisite should be passed as
 * DB_KIND_NAVIGATION. A redirect target may keep REQUISITE when the URL that
 * redirected was one. A URL that is not http(s) with a host is out of scope.
 * Counts the verdict. */
scope_verdict scope_check(scope *s, const char *url, size_t len, int64_t depth, int kind);

/* scope_check for a requisite found on the page or stylesheet `from` (a
 * canonical URL): with requisites_same_host, one on another host than
 * from's is checked as DB_KIND_NAVIGATION (so the scope mode and max_depth
 * decide), otherwise as DB_KIND_REQUISITE. Hosts compare without port. */
scope_verdict scope_check_requisite(scope *s, const char *url, size_t len, int64_t depth,
                                    const char *from, size_t from_len);

/* Check 1 and 2 only (scope mode or include, and not excluded), without
 * depth, traps or counting: "is this page in scope?". 1 or 0. */
int scope_in_scope(scope *s, const char *url, size_t len);

/* Verdicts counted by scope_check() since scope_new. OUT: out */
void scope_get_counts(scope *s, uint64_t out[SCOPE_VERDICT_COUNT]);

/* "allowed", "out_of_scope", "excluded", "too_deep", "trap_url_length",
 * "trap_path_depth", "trap_repeated_segment", "trap_query_params";
 * "unknown" for anything else. For counters and logs. */
const char *scope_verdict_name(int v);

/* The registrable domain of host (hlen bytes, lower case) per the public
 * suffix list, or the host itself for IP addresses and hosts libpsl has none
 * for, into out (NUL-terminated). 0, -ENOSPC when out is too small,
 * -EINVAL an empty host. OUT: out */
int scope_registrable_domain(const char *host, size_t hlen, char *out, size_t outlen);

/* The glob match scope uses: 1 when pattern ('*' = any run) matches all of
 * s, else 0. Iterative, O(len(s) × len(pattern)) at worst, no recursion. */
int scope_glob_match(const char *pattern, size_t plen, const char *s, size_t slen);

#endif
