/* tests/support/crawloracle: what the test site's timed request log
 * (testsite --log-timing) says about a crawl made by one or several crawlers
 * that tell themselves apart by their User-Agent (cluster nodes):
 *
 * - the fetched set (keys, as tests/support/urlset) against the expected one;
 * - duplicates: keys with more than one final answer (5xx and 429 are
 *   retried by design, robots.txt is per node), counted per URL;
 * - overlap: two requests to one host by different agents whose
 *   [start, end] intervals intersect (one owner per host at any time);
 * - spacing: two requests to one host whose starts are closer than the
 *   politeness delay (less a slack: the site sees arrivals, not the
 *   crawler's start times). A robots.txt request is not spaced from the
 *   request that follows it. */
#ifndef CRAWLD_TESTS_CRAWLORACLE_H
#define CRAWLD_TESTS_CRAWLORACLE_H

#include <stddef.h>

#include "tests/support/testsite.h"
#include "tests/support/urlset.h"

typedef struct oracle_opts {
    int port;                /* the site's port (log targets are origin-form) */
    long long delay_us;      /* politeness.delay_ms * 1000; 0: no spacing check */
    long long slack_us;      /* a gap may fall short of delay_us by this much */
    int quiet;               /* 1: print no problems to stderr */
} oracle_opts;

typedef struct oracle_result {
    size_t requests;         /* log lines */
    size_t agents;           /* distinct User-Agents */
    size_t fetched;          /* distinct keys */
    size_t missing, extra;   /* against the expected set */
    size_t dup_urls;         /* keys with more than one final answer */
    size_t dup_fetches;      /* final answers beyond the first, over all keys */
    size_t overlaps;         /* request pairs to one host, by two agents, overlapping */
    size_t short_gaps;       /* request pairs to one host spaced less than delay - slack */
    long long min_gap_us;    /* the closest spacing seen (-1: no host had two requests) */
} oracle_result;

/* Checks v[0..n) (a timed log: every line with start_us >= 0) against want
 * (sorted; may be NULL to skip the set comparison). Prints up to 10
 * problems of each kind to stderr unless o->quiet. 0, -EINVAL when a line
 * has no timing, -EBADMSG when a logged URL does not parse, -ENOMEM. */
int oracle_check(const testsite_req *v, size_t n, const urlset *want, const oracle_opts *o,
                 oracle_result *r);

/* The site's expected set (testsite --print-expected, args NULL-ended) into
 * want, sorted. 0 or the printer's failing status / negative errno. */
int oracle_expected(const char *const *args, urlset *want);

#endif
