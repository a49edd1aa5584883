/* crawler/summary: the dedup figures users read, as a text table and as
 * JSON, from the seen-test counters and the Bloom filter's stats. One
 * implementation serves `crawld dedup`, `crawld run` and `crawld stats`. */
#ifndef CRAWLD_SUMMARY_H
#define CRAWLD_SUMMARY_H

#include <jansson.h>
#include <stdio.h>

#include "dedup/bloom.h"
#include "dedup/seen.h"

void summary_dedup_print(FILE *f, const seen_counters *c, const bloom_stats *b);
/* New reference; NULL when memory runs out. */
json_t *summary_dedup_json(const seen_counters *c, const bloom_stats *b);

#endif
