/* crawler/cmd_stats: `crawld stats` prints the figures of a finished or
 * running crawl from its database: the figures the daemon stores as it
 * goes (the same JSON /v1/status serves, so the text matches the daemon's
 * own summary) and the row counts by state, read live. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "crawler/sampler.h"
#include "crawler/report/report.h"
#include "crawler/report/summary.h"
#include "storage/db.h"

static const char usage[] =
    "usage: crawld stats [--state DIR] [--json [--samples]] [-c FILE] [--set K=V]...\n"
    "\n"
    "Prints the figures of the crawl whose state is in DIR (default:\n"
    "storage.state_dir of the configuration): pages by status, links, the\n"
    "frontier, every dedup layer and the false-positive rate, as `crawld run`\n"
    "prints them at the end, and the URLs in the database by state. Works on a\n"
    "running crawl too (the daemon stores its figures every 2 s).\n";

#define STATS_MAX_HOSTS 1000
#define STATS_TEXT_MAX ((size_t)1 << 20) /* the stored figures we read at most */

/* Adds "hosts", "hosts_total" and "samples" from report_load's object. */
static void add_figures(json_t *st, json_t *fig, const char *dir, bool with_rows)
{
    json_t *samples = json_object_get(fig, "samples");
    size_t n = json_array_size(samples);
    char where[4200];
    snprintf(where, sizeof where, "%s/crawld.db, table samples", dir);
    json_object_set(st, "hosts", json_object_get(fig, "hosts"));
    json_object_set(st, "hosts_total", json_object_get(fig, "hosts_total"));
    json_t *ps = json_pack("{s:O, s:s, s:I, s:o?, s:o?}", "count",
                           json_object_get(fig, "samples_total"), "where", where, "interval_ms",
                           (json_int_t)2000, "first_t_ms",
                           n ? json_incref(json_object_get(json_array_get(samples, 0), "t_ms"))
                             : NULL,
                           "last_t_ms",
                           n ? json_incref(json_object_get(json_array_get(samples, n - 1), "t_ms"))
                             : NULL);
    json_t *tiers = json_array();
    for (int i = 0; i < SAMPLER_TIERS && tiers != NULL; i++)
        json_array_append_new(tiers, json_pack("{s:I, s:I}", "older_than_ms",
                                               (json_int_t)sampler_tiers[i].age_ms, "one_per_ms",
                                               (json_int_t)sampler_tiers[i].every_ms));
    if (ps != NULL && tiers != NULL)
        json_object_set_new(ps, "thinned", tiers); /* older samples are kept sparser */
    else
        json_decref(tiers);
    if (ps != NULL && with_rows)
        json_object_set(ps, "rows", samples);
    json_object_set_new(st, "samples", ps);
}

int cmd_stats(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *dir = NULL;
    bool as_json = false, with_samples = false;
    const cli_opt opts[] = {
        { "--state", NULL, "DIR", &dir, NULL,
          "the crawl's state folder" },
        { "--json", NULL, NULL, NULL, &as_json,
          "print JSON instead: the figures of `crawld report`" },
        { "--samples", NULL, NULL, NULL, &with_samples,
          "with --json: include every stored sample" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "stats", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
    crawl_config cfg;
    if (cli_conf_load(&cc, "stats", &cfg, false) != 0)
        return 1;
    if (dir == NULL)
        dir = cfg.storage.state_dir;
    int rc = 1;
    char err[512];
    static char text[STATS_TEXT_MAX + 1]; /* the db caps a meta value far below */
    json_t *st = NULL;
    db_reader *rd = db_reader_open_dir(dir, err, sizeof err);
    if (rd == NULL) {
        fprintf(stderr, "crawld stats: %s\n", err);
        goto out;
    }
    int g = db_reader_get_meta(rd, "stats", text, sizeof text);
    if (g == 0 && strlen(text) == sizeof text - 1) {
        /* the reader truncates to the buffer: say so, do not parse half */
        fprintf(stderr, "crawld stats: %s: the stored figures pass %zu bytes and were not read; "
                        "showing the row counts only\n", dir, sizeof text - 1);
    } else if (g == 0) {
        json_error_t jerr;
        st = json_loads(text, 0, &jerr);
        if (st == NULL || !json_is_object(st)) {
            fprintf(stderr, "crawld stats: %s: the stored figures are not readable (%s); "
                            "showing the row counts only\n", dir,
                    st == NULL ? jerr.text : "not a JSON object");
            json_decref(st);
            st = NULL;
        }
    } else if (g != -ENOENT) {
        fprintf(stderr, "crawld stats: %s: cannot read the stored figures: %s; showing the row "
                        "counts only\n", dir, strerror(-g));
    }
    if (st == NULL)
        st = json_object(); /* a crawl that stored no figures yet: counts only */
    int64_t counts[DB_STATE_COUNT];
    if (db_reader_count_by_state(rd, counts) < 0) {
        fprintf(stderr, "crawld stats: cannot count the rows of %s\n", dir);
        goto out;
    }
    json_t *rows = json_object();
    for (int s = 0; s < DB_STATE_COUNT; s++)
        json_object_set_new(rows, db_state_name(s), json_integer((json_int_t)counts[s]));
    json_object_set_new(st, "database", rows);
    if (as_json) {
        json_t *fig = NULL;
        /* all samples when asked for; else only the first and the last */
        if (report_load(rd, with_samples ? 0 : 2, STATS_MAX_HOSTS, &fig, err, sizeof err) < 0) {
            fprintf(stderr, "crawld stats: %s: %s\n", dir, err);
            goto out;
        }
        add_figures(st, fig, dir, with_samples);
        json_decref(fig);
        json_dumpf(st, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        fputc('\n', stdout);
    } else {
        summary_crawl_print(stdout, st);
        printf("database (%s):", dir);
        for (int s = 0; s < DB_STATE_COUNT; s++)
            printf(" %s %lld%s", db_state_name(s), (long long)counts[s],
                   s + 1 < DB_STATE_COUNT ? "," : "\n");
    }
    rc = 0;
out:
    json_decref(st);
    db_reader_free(rd);
    config_release(&cfg);
    return rc;
}
