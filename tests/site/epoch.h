/* tests/site/epoch: the test site over time (--epoch N), for re-crawl tests.
 *
 * Off while site_opts.epoch < 0: the site is then exactly what it always
 * was (no validators, no changes). At epoch N >= 0, as pure functions of
 * (seed, host, page, epoch):
 * - each regular page but the home and section pages changes at epoch
 *   k >= 1 with probability change_pct %, independently per epoch (its body
 *   gains "revision V", V = changes so far; its links stay the same);
 * - each such page is removed for good at its first epoch k >= 1 drawn
 *   with probability remove_pct % (then 410 for odd pages, 404 for even);
 * - add_pages new pages per host appear at each epoch k >= 1 as
 *   /new/K-J.html (J < add_pages), linked from the home page, which
 *   therefore changes at every epoch when add_pages > 0 (with keep_epochs
 *   W > 0 it links only those of the last W epochs; older ones still
 *   answer but nobody links them: the retention benchmark).
 * Validators: every 200 answer carries ETag (a hash of its body) and
 * Last-Modified (a fixed date plus one day per epoch of its last change),
 * except on host plain_host (no validators: a re-crawl must settle it by
 * the payload digest); conditional requests get 304 per RFC 9110 13.2.2
 * (If-None-Match first, If-Modified-Since only without it). */
#ifndef CRAWLD_TESTSITE_EPOCH_H
#define CRAWLD_TESTSITE_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tests/site/site.h"

#define EPOCH_BASE_S 1704067200LL /* 2024-01-01T00:00:00Z: Last-Modified of epoch 0 */

bool epoch_on(const site *s);
/* 404 or 410 when regular page `page` of host h is removed at the site's
 * epoch, else 0. */
int epoch_removed(const site *s, int h, long page);
/* Changes of the page up to the site's epoch; *last (may be NULL) gets the
 * epoch of the latest (0 = none). */
int epoch_revision(const site *s, int h, long page, int *last);
/* "/new/K-J.html" with 1 <= K <= epoch and J < add_pages: 0 and *k, *j;
 * else -1. */
int epoch_new_of(const site *s, const char *target, int *k, int *j);
/* Whether host h sends ETag and Last-Modified. */
bool epoch_validators(const site *s, int h);
/* Unix seconds of the target's Last-Modified at the site's epoch. */
int64_t epoch_last_modified(const site *s, int h, const char *target);
/* Prints, for the site's epoch against the one before, one line per
 * regular page that changed, was removed or was added, "KIND TAB URL"
 * (KIND = changed, removed, added), hosts in order. */
int epoch_print(const site *s, FILE *f);

#endif
