/* crawler/sampler: the crawl's figures over time, for `crawld report`.
 *
 * The daemon calls sampler_record() where it stores its status JSON (every
 * 2 s and at close). Each call stores one row in the `samples` table (a
 * JSON object: elapsed time, pages, pages/s, links, new, duplicates per
 * layer, false positives caught, observed / predicted / bound FPR, Bloom
 * fill per stage, frontier, hosts, bytes, errors by kind, pages by status
 * class) and replaces the rows of the busiest SAMPLER_HOSTS hosts in the
 * `hosts` table. The first call also stores the effective configuration
 * (secrets redacted) under the meta key "config".
 *
 * Sample rows are keyed by wall-clock Unix ms, so a resumed crawl adds to
 * the rows of the earlier run instead of replacing them. They are thinned
 * with age (sampler_tiers: every sample for a day, one a minute for 30
 * days, one an hour after that), so a year of crawling keeps about 93,000
 * rows, some 25 MB as db_put_sample packs them (tests/test_samples.c writes
 * a year and checks it stays under 50 MB): every SAMPLER_PRUNE_EVERY calls,
 * and at the first call over the whole table, a pruning pass is queued
 * behind the sample. Cost per call: one
 * pass over the frontier's hosts under its lock (a bounded heap keeps the
 * busiest; only those are copied), a sort, and 1 + min(hosts,
 * SAMPLER_HOSTS) queued writes. A host's row is refreshed only while it is
 * among the busiest; one that drops out keeps its last row.
 *
 * Threads: one thread at a time (the scheduler); the sampler owns nothing
 * but its last pages count and the scratch host array. */
#ifndef CRAWLD_SAMPLER_H
#define CRAWLD_SAMPLER_H

#include <jansson.h>

#include "config/config.h"
#include "dedup/bloom.h"
#include "frontier/frontier.h"
#include "storage/db.h"

#define SAMPLER_HOSTS 500        /* host rows refreshed per sample */
#define SAMPLER_PRUNE_EVERY 30   /* samples between two pruning passes (a minute) */
#define SAMPLER_TIERS 2          /* entries of sampler_tiers */

/* How samples are thinned with age (see db_prune_samples). */
extern const db_sample_tier sampler_tiers[SAMPLER_TIERS];
#define SAMPLER_MAX_STAGES 64    /* Bloom stages recorded per sample */

typedef struct sampler sampler;

/* A sampler writing into d. cfg (may be NULL) is stored once as text.
 * NULL when memory runs out. Free with sampler_free() before db_close(). */
sampler *sampler_new(db *d, const crawl_config *cfg);
void sampler_free(sampler *s);

/* Stores one sample built from status (status_json's object), the
 * Bloom filter's per-stage fill, and the frontier's per-host figures, and
 * queues a pruning pass when one is due. bf and fr may be NULL (those parts
 * are left out). 0, or a negative errno from the db queue. */
int sampler_record(sampler *s, const json_t *status, const bloom *bf, frontier *fr);
/* The same at a given wall-clock time (Unix ms; later than the last call's,
 * else it is taken as 1 ms after it): what sampler_record does at now. */
int sampler_record_at(sampler *s, const json_t *status, const bloom *bf, frontier *fr,
                      int64_t now_ms);
/* The text a sample is stored as (compact JSON, reals to 7 significant
 * digits). Caller frees it with free(); NULL when memory runs out. */
char *sampler_sample_text(const json_t *sample);

/* The sample object alone (no I/O): status plus per-stage fill, with
 * pages_per_s measured from prev_pages over dt_s (<= 0: pages / elapsed).
 * New reference, NULL when memory runs out. */
json_t *sampler_sample_json(const json_t *status, const bloom *bf, double prev_pages,
                            double dt_s);

/* One host's figures as stored in the `hosts` table. New reference. */
json_t *sampler_host_json(const frontier_host_stats *hs);

#endif
