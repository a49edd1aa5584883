/* crawler/report: the crawl report, one self-contained HTML page.
 *
 * Two steps. report_load() reads everything the page shows from a crawl's
 * database into one JSON object (the daemon's stored figures, the samples
 * thinned to a cap, the busiest hosts, the configuration); `crawld stats
 * --json` prints parts of the same object, so the two agree. report_write()
 * turns that object into HTML with no I/O but the FILE* it writes: CSS in a
 * <style>, every chart an SVG image generated here and embedded as a
 * data: URI (libxml2's HTML parser, which checks the page in our tests,
 * rejects inline <svg>), no script, nothing fetched when viewed.
 *
 * Every string from the crawl (hosts, configuration, error kinds, the state
 * folder) is HTML-escaped. The page's size is bounded: at most
 * REPORT_MAX_SAMPLES points per series and REPORT_MAX_HOSTS table rows
 * (then "N more hosts").
 *
 * The key totals carry stable ids and data-value attributes for scripts and
 * tests: id="kpi-NAME" data-value="N" for NAME in pages, pages_per_s,
 * links, new, duplicates, fp_caught, fpr_observed, fpr_bound, fetch_errors,
 * bytes, hosts, frontier, samples; each status code row is
 * id="status-CODE" data-value="N"; each host row has data-host="HOST" and
 * data-pages="N". */
#ifndef CRAWLD_REPORT_H
#define CRAWLD_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "storage/db.h"

#define REPORT_MAX_SAMPLES 600 /* points per chart series */
#define REPORT_MAX_HOSTS 50    /* rows of the host table */

/* Reads the figures of the crawl whose database rd reads:
 *   {"stats": the stored status object (or {}), "database": rows by state,
 *    "samples": [ {"t_ms": unix ms, ...sample...}, ... ] (at most
 *    max_samples, evenly thinned), "samples_total": N,
 *    "hosts": [ {"host": H, ...figures...}, ... ] (busiest first, at most
 *    max_hosts), "hosts_total": N, "config": TOML text or null}
 * New reference in *out. 0, or < 0 with a one-line message in err.
 * OUT: out */
int report_load(db_reader *rd, size_t max_samples, size_t max_hosts, json_t **out, char *err,
                size_t errlen);

typedef struct report_meta {
    const char *state_dir;   /* shown in the header; may be NULL */
    int64_t generated_ms;    /* Unix ms the page says it was made at */
} report_meta;

/* Writes the HTML page for data (report_load's object) to f. 0, -ENOMEM,
 * or -EIO when writing failed. */
int report_write(FILE *f, const json_t *data, const report_meta *m);

/* Appends s (len bytes) to f with &, <, >, " and ' escaped. */
void report_escape(FILE *f, const char *s, size_t len);

#endif
