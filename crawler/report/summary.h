/* crawler/summary: the figures users read, as JSON and as text. The JSON
 * is the one form: `crawld run` stores it in the database as it goes, GET
 * /v1/status serves it, and the text tables printed by `crawld dedup`,
 * `crawld run` and `crawld stats` are all rendered from it, so they agree. */
#ifndef CRAWLD_SUMMARY_H
#define CRAWLD_SUMMARY_H

#include <jansson.h>
#include <stdio.h>

#include "dedup/bloom.h"
#include "dedup/seen.h"

/* The dedup layers, FPR and Bloom figures. New reference; NULL: no memory. */
json_t *summary_dedup_json(const seen_counters *c, const bloom_stats *b);
/* Prints the dedup table from summary_dedup_json's object. */
void summary_dedup_print(FILE *f, const json_t *dedup);
/* Prints the crawl outcome, then the dedup table, from a crawl status
 * object (status_json in status.h); missing fields print as 0. */
void summary_crawl_print(FILE *f, const json_t *status);

#endif
