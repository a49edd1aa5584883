/* crawler/summary: dedup and crawl figures, JSON in, text out. */
#include "summary.h"

#include <time.h>

#include <string.h>

static long long geti(const json_t *o, const char *path)
{
    /* path: "a" or "a.b" */
    char key[64];
    const char *dot = strchr(path, '.');
    if (dot) {
        snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
        return geti(json_object_get(o, key), dot + 1);
    }
    return (long long)json_integer_value(json_object_get(o, path));
}

static double getf(const json_t *o, const char *path)
{
    char key[64];
    const char *dot = strchr(path, '.');
    if (dot) {
        snprintf(key, sizeof key, "%.*s", (int)(dot - path), path);
        return getf(json_object_get(o, key), dot + 1);
    }
    return json_number_value(json_object_get(o, path));
}

static double pct(long long part, long long whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

json_t *summary_dedup_json(const seen_counters *c, const bloom_stats *b)
{
    return json_pack("{s:I, s:{s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I}, s:I, s:I, s:I, s:I,"
                     " s:{s:f, s:f, s:f},"
                     " s:{s:i, s:i, s:i, s:f, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:i, s:i, s:I}}",
                     "urls", (json_int_t)c->keys,
                     "new", "bloom_no", (json_int_t)c->new_bloom,
                     "false_positive_caught", (json_int_t)c->new_verified,
                     "duplicate", "bloom_maybe_trusted", (json_int_t)c->dup_trusted,
                     "recent_cache", (json_int_t)c->dup_recent,
                     "sqlite", (json_int_t)c->dup_verified,
                     "pending", (json_int_t)c->dup_pending,
                     "same_page", (json_int_t)c->dup_page,
                     "checked_new", (json_int_t)c->checked_new,
                     "errors", (json_int_t)c->errors,
                     "unstored", (json_int_t)c->unstored,
                     "pending_now", (json_int_t)c->pending,
                     "fpr", "observed", seen_observed_fpr(c), "bound", b->fpr_bound,
                     "predicted", b->fpr_model,
                     "bloom", "shards", (int)b->shards, "stages", (int)b->stages_total,
                     "stages_longest_chain", (int)b->stages_max,
                     "bits_per_capacity", b->capacity ? (double)b->bits / (double)b->capacity : 0.0,
                     "capacity", (json_int_t)b->capacity,
                     "count", (json_int_t)b->count, "bits", (json_int_t)b->bits,
                     "fill", b->fill, "bits_per_item", b->bits_per_item,
                     "memory_bytes", (json_int_t)b->memory_bytes,
                     "max_bytes", (json_int_t)b->max_bytes, "capped_shards", (int)b->capped,
                     "saturated_shards", (int)b->saturated,
                     "grow_failures", (json_int_t)b->grow_failures);
}

static void row(FILE *f, const char *label, long long n, long long whole)
{
    fprintf(f, "  %-36s %12lld %7.2f%%\n", label, n, pct(n, whole));
}

void summary_dedup_print(FILE *f, const json_t *d)
{
    long long urls = geti(d, "urls");
    long long fresh = geti(d, "new.bloom_no") + geti(d, "new.false_positive_caught");
    long long dups = geti(d, "duplicate.bloom_maybe_trusted") + geti(d, "duplicate.recent_cache") +
                     geti(d, "duplicate.sqlite") + geti(d, "duplicate.pending") +
                     geti(d, "duplicate.same_page");
    fprintf(f, "  %-36s %12s %8s\n", "decision (layer)", "URLs", "share");
    row(f, "new: Bloom said NO", geti(d, "new.bloom_no"), urls);
    row(f, "new: false positive caught (SQLite)", geti(d, "new.false_positive_caught"), urls);
    row(f, "duplicate: Bloom MAYBE trusted", geti(d, "duplicate.bloom_maybe_trusted"), urls);
    row(f, "duplicate: recent cache", geti(d, "duplicate.recent_cache"), urls);
    row(f, "duplicate: SQLite", geti(d, "duplicate.sqlite"), urls);
    row(f, "duplicate: pending (not committed yet)", geti(d, "duplicate.pending"), urls);
    row(f, "duplicate: same page (page memo)", geti(d, "duplicate.same_page"), urls);
    row(f, "total new", fresh, urls);
    row(f, "total duplicates skipped", dups, urls);
    if (geti(d, "errors"))
        fprintf(f, "  %-36s %12lld\n", "verifier errors", geti(d, "errors"));
    fprintf(f, "  false-positive rate: observed %.4f%% (%lld of %lld new URLs checked), "
               "bound %.4f%%, predicted from fill %.4f%%\n",
            100.0 * getf(d, "fpr.observed"), geti(d, "new.false_positive_caught"),
            geti(d, "checked_new"), 100.0 * getf(d, "fpr.bound"), 100.0 * getf(d, "fpr.predicted"));
    fprintf(f, "  Bloom filter: %lld shards, the longest chain %lld stage%s (%lld stages in all),"
               " fill %.3f, %.2f bits per URL of capacity (%lld), %.2f per URL held (%lld),"
               " %.1f MiB\n",
            geti(d, "bloom.shards"), geti(d, "bloom.stages_longest_chain"),
            geti(d, "bloom.stages_longest_chain") == 1 ? "" : "s", geti(d, "bloom.stages"),
            getf(d, "bloom.fill"), getf(d, "bloom.bits_per_capacity"), geti(d, "bloom.capacity"),
            getf(d, "bloom.bits_per_item"), geti(d, "bloom.count"),
            (double)geti(d, "bloom.memory_bytes") / 1048576.0);
    long long capped = geti(d, "bloom.capped_shards"), sat = geti(d, "bloom.saturated_shards");
    if (capped > 0 || sat > 0)
        fprintf(f, "  Bloom filter at its cap: %lld of %lld shards held at dedup.bloom_max_mib"
                   " (%.0f MiB), %lld past their capacity: there the false-positive rate exceeds"
                   " its bound and SQLite settles more MAYBEs (with verify = never they are"
                   " duplicates)\n",
                capped, geti(d, "bloom.shards"), (double)geti(d, "bloom.max_bytes") / 1048576.0,
                sat);
    if (geti(d, "bloom.grow_failures") > 0)
        fprintf(f, "  Bloom filter: %lld stage appends failed (out of memory)\n",
                geti(d, "bloom.grow_failures"));
}

void summary_crawl_print(FILE *f, const json_t *st)
{
    double secs = getf(st, "elapsed_s");
    long long pages = geti(st, "pages"), html = geti(st, "html_pages");
    fprintf(f, "crawl: %lld HTML pages in %.1f s (%.1f pages/s); %lld responses in all (%.1f/s:"
               " %lld robots.txt, %lld redirects, %lld requisites), %lld fetch errors, %.1f MiB\n",
            html, secs, secs > 0 ? (double)html / secs : 0.0, pages,
            secs > 0 ? (double)pages / secs : 0.0, geti(st, "responses_by_kind.robots_txt"),
            geti(st, "responses_by_kind.redirects"), geti(st, "responses_by_kind.requisites"),
            geti(st, "fetch_errors"), (double)geti(st, "bytes") / 1048576.0);
    long long dropped = 0;
    const json_t *dj = json_object_get(st, "links_dropped");
    const char *dk;
    const json_t *dv;
    json_object_foreach((json_t *)dj, dk, dv) dropped += (long long)json_integer_value(dv);
    if (dropped > 0 || geti(st, "truncated") > 0) {
        fprintf(f, "  dropped by limits: %lld bodies cut at fetch.max_body_bytes (archived with"
                   " WARC-Truncated: length); links the parser dropped:",
                geti(st, "truncated"));
        json_object_foreach((json_t *)dj, dk, dv) if (json_integer_value(dv) > 0)
            fprintf(f, " %s %lld", dk, (long long)json_integer_value(dv));
        fprintf(f, "%s (max_links: crawl.max_links_per_page)\n", dropped ? "" : " none");
    }
    const char *end = json_string_value(json_object_get(st, "end"));
    if (end != NULL && end[0] != '\0')
        fprintf(f, "  end: %s\n", end);
    const json_t *sto = json_object_get(st, "storage");
    if (geti(st, "storage.stalls") > 0 || json_is_true(json_object_get(sto, "failed")))
        fprintf(f, "  storage: %lld stalls, %.1f s in all%s%s\n", geti(st, "storage.stalls"),
                getf(st, "storage.stall_s"), json_is_true(json_object_get(sto, "failed")) ? "; failed: " : "",
                json_is_true(json_object_get(sto, "failed"))
                    ? json_string_value(json_object_get(sto, "error"))
                    : "");
    fprintf(f, "  status:");
    const json_t *by = json_object_get(st, "pages_by_status");
    const char *code;
    const json_t *n;
    json_object_foreach((json_t *)by, code, n) fprintf(f, " %s:%lld", code,
                                                       (long long)json_integer_value(n));
    fputc('\n', f);
    fprintf(f, "  links: %lld extracted, %lld rejected by canonicalization, %lld outside scope "
               "or limits, %lld nofollow skipped; %lld redirects (%lld past max_redirects)\n",
            geti(st, "links"), geti(st, "links_rejected"), geti(st, "links_out_of_scope"),
            geti(st, "nofollow_skipped"), geti(st, "redirects"), geti(st, "redirects_too_long"));
    const json_t *rej = json_object_get(st, "scope_rejects");
    if (json_object_size(rej)) {
        fprintf(f, "  not followed:");
        const char *why;
        const json_t *cnt;
        json_object_foreach((json_t *)rej, why, cnt) fprintf(f, " %s %lld", why,
                                                            (long long)json_integer_value(cnt));
        fputc('\n', f);
    }
    const json_t *urej = json_object_get(st, "links_rejected_by");
    if (geti(st, "links_rejected") > 0 && json_object_size(urej)) {
        fprintf(f, "  rejected by reason:");
        const char *why;
        const json_t *cnt;
        json_object_foreach((json_t *)urej, why, cnt)
        {
            if (json_integer_value(cnt) > 0)
                fprintf(f, " %s %lld", why, (long long)json_integer_value(cnt));
        }
        fputc('\n', f);
    }
    if (json_object_get(st, "requisites"))
        fprintf(f, "  requisites: %lld found, %lld new (%lld past max_depth); %lld stylesheets "
                   "parsed: %lld references (%lld @import), %lld dropped, %lld cut at the body cap\n",
                geti(st, "requisites.found"), geti(st, "requisites.new"),
                geti(st, "requisites.past_max_depth"), geti(st, "requisites.stylesheets"),
                geti(st, "requisites.from_css"), geti(st, "requisites.css_imports"),
                geti(st, "requisites.css_dropped"), geti(st, "requisites.css_truncated"));
    if (json_object_get(st, "sitemaps"))
        fprintf(f, "  sitemaps: %lld queued, %lld fetched (%lld urlsets, %lld indexes, %lld gzip),"
                   " %lld parse errors, %lld cut at max_bytes; %lld URLs listed: %lld admitted"
                   " (%lld new), %lld outside the sitemap's host and path, %lld outside the"
                   " crawl's scope, %lld invalid; %lld child sitemaps listed; dropped by limits:"
                   " %lld past max_urls, %lld without or with too long a loc, %lld past"
                   " max_index_depth, %lld past max_per_host\n",
                geti(st, "sitemaps.queued"), geti(st, "sitemaps.fetched"),
                geti(st, "sitemaps.urlsets"), geti(st, "sitemaps.indexes"),
                geti(st, "sitemaps.gzip"), geti(st, "sitemaps.parse_errors"),
                geti(st, "sitemaps.cut"), geti(st, "sitemaps.urls_listed"),
                geti(st, "sitemaps.urls_admitted"), geti(st, "sitemaps.urls_new"),
                geti(st, "sitemaps.rejected_scope"), geti(st, "sitemaps.out_of_scope"),
                geti(st, "sitemaps.invalid"), geti(st, "sitemaps.children_listed"),
                geti(st, "sitemaps.dropped_urls"), geti(st, "sitemaps.dropped_loc"),
                geti(st, "sitemaps.dropped_depth"), geti(st, "sitemaps.dropped_host"));
    fprintf(f, "  frontier: %lld done, %lld failed, %lld retries, %lld excluded by robots.txt, "
               "%lld politeness waits, %lld queued in memory, %lld hosts active\n",
            geti(st, "frontier.done"), geti(st, "frontier.failed"), geti(st, "frontier.retries"),
            geti(st, "frontier.robots_excluded"), geti(st, "frontier.politeness_waits"),
            geti(st, "frontier.memory"), geti(st, "frontier.hosts_active"));
    if (json_is_true(json_object_get(json_object_get(st, "recrawl"), "enabled")) ||
        geti(st, "recrawl.revisited") > 0) {
        long long next = geti(st, "recrawl.next_due_ms");
        char when[48] = "none";
        if (next > 0) {
            time_t t = (time_t)(next / 1000);
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        }
        fprintf(f, "  recrawl: %lld revisited: %lld unchanged (%lld 304, %lld same digest), %lld"
                   " changed, %lld gone, %lld other; %lld new; %.1f MiB not sent (304); due now"
                   " %lld, next due %s\n",
                geti(st, "recrawl.revisited"), geti(st, "recrawl.unchanged"),
                geti(st, "recrawl.not_modified"), geti(st, "recrawl.same_digest"),
                geti(st, "recrawl.changed"), geti(st, "recrawl.gone"), geti(st, "recrawl.other"),
                geti(st, "recrawl.new"), (double)geti(st, "recrawl.bytes_saved") / 1048576.0,
                geti(st, "recrawl.due_now"), when);
    }
    if (json_object_get(st, "retention"))
        fprintf(f, "  retention: %lld s in %lld generations (%lld live, %lld windows started);"
                   " %lld URLs refreshed, %lld forgotten, %lld forgotten and found again;"
                   " Bloom %.1f MiB\n",
                geti(st, "retention.retention_s"), geti(st, "retention.generations"),
                geti(st, "retention.live"), geti(st, "retention.rotations"),
                geti(st, "retention.refreshed"), geti(st, "retention.forgotten"),
                geti(st, "retention.found_again"),
                (double)geti(st, "retention.memory_bytes") / 1048576.0);
    if (json_object_get(st, "archive")) {
        fprintf(f, "  archive: %lld responses, %lld revisits (duplicate content)\n",
                geti(st, "archive.responses"), geti(st, "archive.revisits"));
        if (geti(st, "archive.spool_errors"))
            fprintf(f, "  archive: %lld fetches NOT archived: their body could not be spooled"
                       " (disk full? see the log)\n", geti(st, "archive.spool_errors"));
    }
    fprintf(f, "dedup:\n");
    summary_dedup_print(f, json_object_get(st, "dedup"));
}
