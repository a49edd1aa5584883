/* crawler/report/status: the live figures of a crawl (crawl_status, filled
 * by crawl_status_get) formatted for users: the JSON object of GET
 * /v1/status (also stored in the database for `crawld stats`, and the
 * source of the text tables in summary.h), and the Prometheus text of
 * GET /metrics. Pure formatting: no I/O but the given FILE, no locks. */
#ifndef CRAWLD_STATUS_H
#define CRAWLD_STATUS_H

#include <jansson.h>
#include <stdio.h>

#include "crawler/crawl.h"

/* The figures as JSON. New reference, NULL when memory runs out. */
json_t *status_json(const crawl_status *st);
/* Writes the Prometheus text exposition of the figures to f; the Bloom
 * fill lines come from st->fill (what the caller's buffer held). */
void status_metrics(FILE *f, const crawl_status *st);

#endif
