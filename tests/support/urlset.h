/* tests/support/urlset: sorted sets of URLs for the crawl tests, and what
 * the test site's request log says was fetched, as keys. The site's
 * expected sets are canonical while crawld requests each URL as a page
 * wrote it (its fetch form), so logged requests are compared by their key
 * (crawler/web/url's default policy). */
#ifndef CRAWLD_TESTS_URLSET_H
#define CRAWLD_TESTS_URLSET_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/support/testsite.h"

typedef struct urlset {
    char **v;
    size_t n, cap;
} urlset;

/* Adds a copy of u (unsorted until urlset_sort). Aborts on no memory. */
void urlset_add(urlset *s, const char *u);
/* Sorts and drops repeats; *dups (may be NULL) gets how many were dropped. */
void urlset_sort(urlset *s, size_t *dups);
/* Binary search: the set must be sorted. */
bool urlset_has(const urlset *s, const char *u);
void urlset_free(urlset *s);

/* The keys of the URLs the site logged from line `from` on into fetched
 * (sorted); *dups (may be NULL) gets the keys requested more than once with
 * a final answer (not robots.txt, not the 5xx and 429 that are retried by
 * design); *as_written (may be NULL) how many requests were spelled other
 * than their key. Returns the log's line count, or < 0 when the log cannot
 * be read or a logged URL does not parse. */
long urlset_fetched_since(const testsite *ts, size_t from, urlset *fetched, size_t *dups,
                          size_t *as_written);

/* Prints up to 20 differences of want and got to stderr; returns their
 * count (0: equal). Both sorted. */
size_t urlset_diff(const urlset *want, const urlset *got);

#endif
