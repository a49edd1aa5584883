/* crawler/report/status: formats a crawl_status (see status.h). It owns the
 * shape of GET /v1/status and of /metrics; every figure comes from the
 * struct, so what the two print is what crawl_status_get copied at one
 * moment. Optional parts of the JSON (archive) follow the struct's flags. */
#include "status.h"

#include "crawler/report/summary.h"

/* The generation ring: its windows, oldest first (start, age in windows
 * behind the newest, keys, fill, memory), and what forgetting did. */
static json_t *status_retention_json(const crawl_status *st)
{
    const gens_stats *g = &st->gens;
    json_t *ring = json_array();
    int64_t newest = g->live ? g->gen[g->live - 1].start : 0;
    for (unsigned i = 0; i < g->live; i++)
        json_array_append_new(
            ring, json_pack("{s:I, s:I, s:I, s:f, s:I}", "start", (json_int_t)g->gen[i].start,
                            "age_windows", (json_int_t)(g->window_s ? (newest - g->gen[i].start) /
                                                                          g->window_s
                                                                    : 0),
                            "keys", (json_int_t)g->gen[i].keys, "fill", g->gen[i].fill,
                            "memory_bytes", (json_int_t)g->gen[i].memory_bytes));
    return json_pack("{s:I, s:I, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:o}",
                     "retention_s", (json_int_t)g->retention_s, "window_s",
                     (json_int_t)g->window_s, "generations", (int)g->generations, "live",
                     (int)g->live, "rotations", (json_int_t)g->rotations, "dropped",
                     (json_int_t)g->dropped, "refreshed", (json_int_t)st->dedup.refreshed,
                     "forgotten", (json_int_t)st->db.forgotten, "found_again",
                     (json_int_t)st->dedup.found_again, "memory_bytes",
                     (json_int_t)(g->memory_bytes + g->ghost_bytes), "keys",
                     (json_int_t)g->keys, "fpr_predicted", g->fpr_model, "ring", ring);
}

static json_t *counts_json(const recrawl_counts *c)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "revisited",
                     (json_int_t)c->revisited, "unchanged", (json_int_t)c->unchanged,
                     "not_modified", (json_int_t)c->not_modified, "same_digest",
                     (json_int_t)c->same_digest, "changed", (json_int_t)c->changed, "gone",
                     (json_int_t)c->gone, "other", (json_int_t)c->other, "new",
                     (json_int_t)c->new_pages, "bytes_saved", (json_int_t)c->bytes_saved);
}

/* The re-crawl's figures: totals, due rows, the interval histogram (bucket
 * k counts intervals in [2^k, 2^(k+1)) s; only non-empty ones), the busiest
 * hosts. */
static json_t *recrawl_json(const recrawl_stats *r)
{
    json_t *j = counts_json(&r->total);
    if (j == NULL)
        return NULL;
    json_object_set_new(j, "enabled", json_boolean(r->enabled));
    json_object_set_new(j, "promoted", json_integer((json_int_t)r->promoted));
    json_object_set_new(j, "due_now", json_integer((json_int_t)r->due_now));
    json_object_set_new(j, "next_due_ms", json_integer((json_int_t)r->next_due_ms));
    json_t *iv = json_object();
    for (int k = 0; k < RECRAWL_BUCKETS; k++)
        if (r->intervals[k] > 0) {
            char name[24];
            snprintf(name, sizeof name, "%lld", 1LL << k);
            json_object_set_new(iv, name, json_integer((json_int_t)r->intervals[k]));
        }
    json_object_set_new(j, "intervals_s", iv);
    json_t *hosts = json_object();
    for (size_t i = 0; i < r->ntop; i++)
        json_object_set_new(hosts, r->top[i].host, counts_json(&r->top[i].c));
    json_object_set_new(j, "hosts", hosts);
    json_object_set_new(j, "hosts_total", json_integer((json_int_t)r->hosts));
    return j;
}

json_t *status_json(const crawl_status *st)
{
    const frontier_stats *fs = &st->frontier;
    json_t *by_status = json_object();
    for (int i = 100; i < 600; i++)
        if (st->status_counts[i]) {
            char k[8];
            snprintf(k, sizeof k, "%d", i);
            json_object_set_new(by_status, k, json_integer((json_int_t)st->status_counts[i]));
        }
    json_t *j = json_pack(
        "{s:f, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
        " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I},"
        " s:o, s:b, s:b, s:b, s:I}",
        "elapsed_s", st->elapsed_s, "pages", (json_int_t)st->pages, "fetch_errors",
        (json_int_t)st->fetch_errors, "pages_by_status", by_status, "bytes", (json_int_t)st->bytes,
        "links", (json_int_t)st->links, "links_rejected", (json_int_t)st->links_rejected,
        "links_out_of_scope", (json_int_t)st->links_out_of_scope, "nofollow_skipped",
        (json_int_t)st->nofollow_skipped, "redirects", (json_int_t)st->redirects,
        "redirects_too_long", (json_int_t)st->redirects_too_long, "truncated",
        (json_int_t)st->truncated,
        "frontier", "memory", (json_int_t)st->frontier_mem, "sqlite_queued", (json_int_t)st->queued,
        "hosts_active", (json_int_t)st->hosts_active, "in_flight", (json_int_t)st->in_flight,
        "done", (json_int_t)fs->done, "failed", (json_int_t)fs->failed, "retries",
        (json_int_t)fs->retries, "robots_excluded",
        (json_int_t)(fs->robots_disallowed + fs->robots_unavailable), "politeness_waits",
        (json_int_t)fs->politeness_waits, "hosts", (json_int_t)fs->hosts,
        "dedup", summary_dedup_json(&st->dedup, &st->bloom),
        "paused", st->paused, "stopping", st->stopping, "done", st->done, "recovered_in_flight",
        (json_int_t)st->recovered_in_flight);
    json_t *rej = json_object();
    for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++)
        json_object_set_new(rej, scope_verdict_name(v), json_integer((json_int_t)st->scope_verdicts[v]));
    if (j)
        json_object_set_new(j, "scope_rejects", rej);
    else
        json_decref(rej);
    if (j)
        json_object_set_new(
            j, "requisites",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "found",
                      (json_int_t)st->req.found, "new", (json_int_t)st->req.new_,
                      "past_max_depth", (json_int_t)st->req.past_depth, "stylesheets",
                      (json_int_t)st->req.sheets, "from_css", (json_int_t)st->req.refs,
                      "css_imports", (json_int_t)st->req.imports, "css_dropped",
                      (json_int_t)st->req.dropped, "css_truncated", (json_int_t)st->req.truncated));
    json_t *urej = json_object();
    for (int r = URL_OK + 1; r < URL_REJ_COUNT; r++)
        json_object_set_new(urej, url_reject_name((url_reject)r),
                            json_integer((json_int_t)st->links_rejected_by[r]));
    if (j)
        json_object_set_new(j, "links_rejected_by", urej);
    else
        json_decref(urej);
    /* what the responses were ("pages" stays: it is "responses", kept for
     * readers of older figures) */
    json_t *dropped = json_object();
    for (int k = 0; k < LINKS_DROP__COUNT; k++)
        json_object_set_new(dropped, links_drop_name(k), json_integer((json_int_t)st->links_dropped[k]));
    if (j) {
        json_object_set_new(j, "responses", json_integer((json_int_t)st->pages));
        json_object_set_new(j, "html_pages", json_integer((json_int_t)st->html_pages));
        json_object_set_new(
            j, "responses_by_kind",
            json_pack("{s:I, s:I, s:I, s:I, s:I}", "html_pages", (json_int_t)st->html_pages,
                      "robots_txt", (json_int_t)st->robots_fetched, "redirects",
                      (json_int_t)st->redirect_answers, "requisites",
                      (json_int_t)st->requisite_answers, "other",
                      (json_int_t)(st->pages > st->html_pages + st->robots_fetched +
                                                 st->redirect_answers + st->requisite_answers
                                       ? st->pages - st->html_pages - st->robots_fetched -
                                             st->redirect_answers - st->requisite_answers
                                       : 0)));
        json_object_set_new(j, "links_dropped", dropped);
    } else {
        json_decref(dropped);
    }
    const db_stats *ds = &st->db;
    if (j)
        json_object_set_new(
            j, "storage",
            json_pack("{s:I, s:I, s:I, s:b, s:b, s:s, s:s, s:I, s:I, s:f, s:f}", "ops",
                      (json_int_t)ds->ops, "commits", (json_int_t)ds->commits, "failed_ops",
                      (json_int_t)ds->failed_ops, "stalled", ds->stalled != 0, "failed",
                      ds->failed != 0,
                      "reason", ds->stalled || ds->failed
                                    ? db_error_reason(ds->failed ? ds->failed : ds->stall_code)
                                    : "",
                      "error", ds->stalled || ds->failed ? st->storage_error : "", "held",
                      (json_int_t)(ds->stalled ? ds->held : 0), "stalls", (json_int_t)ds->stalls,
                      "stall_s", (double)ds->stall_ms / 1000.0, "retry_in_s",
                      (double)ds->retry_in_ms / 1000.0));
    json_t *sto = j ? json_object_get(j, "storage") : NULL;
    if (sto) /* the seen-set's fingerprint runs (storage/fpruns) */
        json_object_set_new(
            sto, "seen_runs",
            json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:I}", "runs", ds->runs.runs, "freezes",
                      (json_int_t)ds->runs.freezes, "merges", (json_int_t)ds->runs.merges,
                      "merged_rows", (json_int_t)ds->runs.merged_rows, "upkeep_s",
                      (double)ds->runs.upkeep_ms / 1000.0, "longest_step_s",
                      (double)ds->runs.longest_ms / 1000.0, "failed_steps",
                      (json_int_t)ds->runs.failures));
    if (j)
        json_object_set_new(j, "end", json_string(st->end));
    if (j && st->cluster.on) {
        const crawl_cluster_status *cs = &st->cluster;
        json_t *o = json_pack("{s:b, s:s, s:f, s:I, s:b, s:b, s:b, s:I, s:I, s:I, s:I, s:I, s:I}",
                              "paused", cs->paused, "why", cs->paused ? cs->why : "",
                              "paused_s", (double)cs->paused_ms / 1000.0, "pauses",
                              (json_int_t)cs->pauses, "settled", cs->settled, "ended", cs->ended,
                              "coordinator", cs->coordinator, "epoch", (json_int_t)cs->epoch,
                              "slots", (json_int_t)cs->slots, "held", (json_int_t)cs->held,
                              "wanted", (json_int_t)cs->wanted, "leases_lost",
                              (json_int_t)cs->leases_lost, "redis_errors",
                              (json_int_t)cs->redis_errors);
        if (o) {
            json_object_set_new(
                o, "slot_moves",
                json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "handed_over",
                          (json_int_t)cs->handed_over, "loaded", (json_int_t)cs->loads,
                          "rescued", (json_int_t)cs->rescues, "stranded",
                          (json_int_t)cs->stranded, "loads_lost", (json_int_t)cs->loads_lost,
                          "orphans_dropped", (json_int_t)cs->orphans_dropped, "via_redis",
                          (json_int_t)cs->ckpt_sent, "too_big_for_redis",
                          (json_int_t)cs->ckpt_too_big));
            json_object_set_new(o, "outbox", json_integer((json_int_t)cs->outbox));
            json_object_set_new(o, "links_out", json_integer((json_int_t)cs->links_out));
            json_object_set_new(o, "outbox_errors", json_integer((json_int_t)cs->outbox_errors));
            json_object_set_new(o, "unsent_fenced", json_integer((json_int_t)cs->unsent_fenced));
            json_object_set_new(o, "forwarded", json_integer((json_int_t)cs->forwarded));
            json_object_set_new(o, "applied", json_integer((json_int_t)cs->applied));
            json_object_set_new(o, "redelivered", json_integer((json_int_t)cs->redelivered));
            json_object_set_new(o, "claimed", json_integer((json_int_t)cs->claimed));
            json_object_set_new(j, "cluster", o);
        }
    }
    json_t *kinds = json_object();
    for (int e = 0; e < FETCH_ERR_COUNT; e++) {
        uint64_t n = st->errors_by_kind[e];
        if (n)
            json_object_set_new(kinds, fetch_error_name((fetch_error)e), json_integer((json_int_t)n));
    }
    if (j)
        json_object_set_new(j, "fetch_errors_by_kind", kinds);
    else
        json_decref(kinds);
    if (j && st->sitemaps_on) {
        /* every counter, then the sums users ask for first */
        const sitemaps_stats *sm = &st->sitemaps;
        json_t *o = json_object();
#define SM_JSON(name) json_object_set_new(o, #name, json_integer((json_int_t)sm->name));
        SITEMAPS_STATS_FIELDS(SM_JSON)
#undef SM_JSON
        json_object_set_new(o, "urls_admitted", json_integer((json_int_t)(sm->urls_new + sm->urls_known)));
        json_object_set_new(o, "dropped_by_limits",
                            json_integer((json_int_t)(sm->dropped_urls + sm->dropped_loc +
                                                      sm->dropped_depth + sm->dropped_host +
                                                      sm->cut)));
        json_object_set_new(j, "sitemaps", o);
    }
    if (j && st->gens.generations > 0)
        json_object_set_new(j, "retention", status_retention_json(st));
    if (j)
        json_object_set_new(j, "recrawl", recrawl_json(&st->recrawl));
    if (j && st->archiving)
        json_object_set_new(j, "archive", json_pack("{s:I, s:I, s:I, s:I}", "responses",
                                                    (json_int_t)st->archived, "revisits",
                                                    (json_int_t)st->revisits, "spooled",
                                                    (json_int_t)st->spooled, "spool_errors",
                                                    (json_int_t)st->spool_errors));
    return j;
}

static void cluster_metrics(FILE *f, const crawl_cluster_status *cs)
{
    fprintf(f, "# HELP crawld_cluster_paused 1 while Redis is unreachable (the node fetches"
               " nothing and retries).\n# TYPE crawld_cluster_paused gauge\n"
               "crawld_cluster_paused %d\n"
               "# HELP crawld_cluster_pause_seconds Length of the current pause.\n"
               "# TYPE crawld_cluster_pause_seconds gauge\ncrawld_cluster_pause_seconds %.3f\n"
               "# TYPE crawld_cluster_pauses_total counter\ncrawld_cluster_pauses_total %llu\n"
               "# HELP crawld_cluster_slots Slots of the crawl, held by this node, and given to"
               " it by the map.\n# TYPE crawld_cluster_slots gauge\n"
               "crawld_cluster_slots{what=\"crawl\"} %u\ncrawld_cluster_slots{what=\"held\"} %u\n"
               "crawld_cluster_slots{what=\"wanted\"} %u\n"
               "# TYPE crawld_cluster_epoch gauge\ncrawld_cluster_epoch %llu\n"
               "# TYPE crawld_cluster_coordinator gauge\ncrawld_cluster_coordinator %d\n"
               "# HELP crawld_cluster_leases_lost_total Slot leases found gone at renewal"
               " (the node had fenced itself).\n# TYPE crawld_cluster_leases_lost_total counter\n"
               "crawld_cluster_leases_lost_total %llu\n"
               "# HELP crawld_cluster_slot_moves_total Slots moved: handed over with a"
               " checkpoint, loaded from one, rescued from a gone node's store, hand-overs"
               " another node overtook, loads that outlasted the lease, stale rows dropped;"
               " checkpoints sent through Redis, and hand-overs refused as too big for it.\n"
               "# TYPE crawld_cluster_slot_moves_total counter\n"
               "crawld_cluster_slot_moves_total{what=\"handed_over\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"loaded\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"rescued\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"stranded\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"loads_lost\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"orphans_dropped\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"via_redis\"} %llu\n"
               "crawld_cluster_slot_moves_total{what=\"too_big_for_redis\"} %llu\n"
               "# TYPE crawld_cluster_redis_errors_total counter\n"
               "crawld_cluster_redis_errors_total %llu\n"
               "# HELP crawld_cluster_outbox Links waiting in the outbox for another node.\n"
               "# TYPE crawld_cluster_outbox gauge\ncrawld_cluster_outbox %lld\n"
               "# HELP crawld_cluster_links_total Links through the exchange: written to the"
               " outbox, failed to (page fetched again), sent to a stream, applied from one,"
               " read again, claimed.\n# TYPE crawld_cluster_links_total counter\n"
               "crawld_cluster_links_total{what=\"outbox\"} %llu\n"
               "crawld_cluster_links_total{what=\"outbox_failed\"} %llu\n"
               "crawld_cluster_links_total{what=\"forwarded\"} %llu\n"
               "crawld_cluster_links_total{what=\"applied\"} %llu\n"
               "crawld_cluster_links_total{what=\"redelivered\"} %llu\n"
               "crawld_cluster_links_total{what=\"claimed\"} %llu\n"
               "# HELP crawld_cluster_unsent_fenced_total Requests not sent: the slot's lease"
               " ran out between dispatch and send (queued again).\n"
               "# TYPE crawld_cluster_unsent_fenced_total counter\n"
               "crawld_cluster_unsent_fenced_total %llu\n",
            cs->paused ? 1 : 0, (double)cs->paused_ms / 1000.0, (unsigned long long)cs->pauses,
            cs->slots, cs->held, cs->wanted, (unsigned long long)cs->epoch,
            cs->coordinator ? 1 : 0, (unsigned long long)cs->leases_lost,
            (unsigned long long)cs->handed_over, (unsigned long long)cs->loads,
            (unsigned long long)cs->rescues, (unsigned long long)cs->stranded,
            (unsigned long long)cs->loads_lost, (unsigned long long)cs->orphans_dropped,
            (unsigned long long)cs->ckpt_sent, (unsigned long long)cs->ckpt_too_big,
            (unsigned long long)cs->redis_errors, (long long)cs->outbox,
            (unsigned long long)cs->links_out, (unsigned long long)cs->outbox_errors,
            (unsigned long long)cs->forwarded, (unsigned long long)cs->applied,
            (unsigned long long)cs->redelivered, (unsigned long long)cs->claimed,
            (unsigned long long)cs->unsent_fenced);
}

void status_metrics(FILE *f, const crawl_status *st)
{
    if (st->cluster.on)
        cluster_metrics(f, &st->cluster);
    fprintf(f, "# HELP crawld_pages_total Fetches that got an HTTP answer.\n"
               "# TYPE crawld_pages_total counter\n");
    for (int i = 100; i < 600; i++)
        if (st->status_counts[i])
            fprintf(f, "crawld_pages_total{status=\"%d\"} %llu\n", i,
                    (unsigned long long)st->status_counts[i]);
    fprintf(f, "# TYPE crawld_fetch_errors_total counter\ncrawld_fetch_errors_total %llu\n",
            (unsigned long long)st->fetch_errors);
    fprintf(f, "# TYPE crawld_bytes_total counter\ncrawld_bytes_total %llu\n",
            (unsigned long long)st->bytes);
    fprintf(f, "# TYPE crawld_links_total counter\ncrawld_links_total %llu\n",
            (unsigned long long)st->links);
    fprintf(f, "# HELP crawld_dedup_decisions_total URLs decided, by the layer that decided"
               " (same_page: a repeat on one page, from the page's memo).\n"
               "# TYPE crawld_dedup_decisions_total counter\n");
    fprintf(f, "crawld_dedup_decisions_total{result=\"new\",layer=\"bloom_no\"} %llu\n",
            (unsigned long long)st->dedup.new_bloom);
    fprintf(f, "crawld_dedup_decisions_total{result=\"new\",layer=\"sqlite\"} %llu\n",
            (unsigned long long)st->dedup.new_verified);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"bloom_trusted\"} %llu\n",
            (unsigned long long)st->dedup.dup_trusted);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"recent_cache\"} %llu\n",
            (unsigned long long)st->dedup.dup_recent);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"sqlite\"} %llu\n",
            (unsigned long long)st->dedup.dup_verified);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"pending\"} %llu\n",
            (unsigned long long)st->dedup.dup_pending);
    fprintf(f, "crawld_dedup_decisions_total{result=\"duplicate\",layer=\"same_page\"} %llu\n",
            (unsigned long long)st->dedup.dup_page);
    fprintf(f, "# TYPE crawld_false_positives_caught_total counter\n"
               "crawld_false_positives_caught_total %llu\n",
            (unsigned long long)st->dedup.new_verified);
    fprintf(f, "# TYPE crawld_fpr_observed gauge\ncrawld_fpr_observed %.9g\n",
            seen_observed_fpr(&st->dedup));
    fprintf(f, "# TYPE crawld_fpr_bound gauge\ncrawld_fpr_bound %.9g\n", st->fpr_bound);
    fprintf(f, "# TYPE crawld_fpr_predicted gauge\ncrawld_fpr_predicted %.9g\n", st->fpr_predicted);
    fprintf(f, "# HELP crawld_bloom_shards Bloom shards held at dedup.bloom_max_mib (capped) and"
               " past their capacity at the last stage they may have (saturated: the"
               " false-positive bound no longer holds there).\n"
               "# TYPE crawld_bloom_shards gauge\n"
               "crawld_bloom_shards{state=\"capped\"} %u\ncrawld_bloom_shards{state=\"saturated\"} %u\n"
               "# TYPE crawld_bloom_max_bytes gauge\ncrawld_bloom_max_bytes %llu\n"
               "# TYPE crawld_bloom_grow_failures_total counter\n"
               "crawld_bloom_grow_failures_total %llu\n",
            st->bloom.capped, st->bloom.saturated, (unsigned long long)st->bloom.max_bytes,
            (unsigned long long)st->bloom.grow_failures);
    fprintf(f, "# HELP crawld_bloom_fill Set bits / bits, per shard and stage.\n"
               "# TYPE crawld_bloom_fill gauge\n");
    for (size_t i = 0; i < st->fill_len; i++)
        fprintf(f, "crawld_bloom_fill{shard=\"%u\",stage=\"%u\"} %.6f\n", st->fill[i].shard,
                st->fill[i].stage, st->fill[i].fill);
    if (st->gens.generations > 0) {
        const gens_stats *g = &st->gens;
        fprintf(f, "# HELP crawld_retention_urls_total URLs moved to the newest Bloom generation"
                   " (refreshed), deleted as nobody linked them within dedup.retention_s"
                   " (forgotten), and forgotten ones linked again (found_again).\n"
                   "# TYPE crawld_retention_urls_total counter\n"
                   "crawld_retention_urls_total{what=\"refreshed\"} %llu\n"
                   "crawld_retention_urls_total{what=\"forgotten\"} %lld\n"
                   "crawld_retention_urls_total{what=\"found_again\"} %llu\n"
                   "# TYPE crawld_bloom_generations gauge\ncrawld_bloom_generations %u\n"
                   "# TYPE crawld_bloom_rotations_total counter\ncrawld_bloom_rotations_total %llu\n"
                   "# HELP crawld_bloom_generation_keys Keys per live Bloom generation (0: oldest).\n"
                   "# TYPE crawld_bloom_generation_keys gauge\n",
                (unsigned long long)st->dedup.refreshed, (long long)st->db.forgotten,
                (unsigned long long)st->dedup.found_again, g->live,
                (unsigned long long)g->rotations);
        for (unsigned i = 0; i < g->live; i++)
            fprintf(f, "crawld_bloom_generation_keys{generation=\"%u\"} %llu\n", i,
                    (unsigned long long)g->gen[i].keys);
        fprintf(f, "# TYPE crawld_bloom_generation_fill gauge\n");
        for (unsigned i = 0; i < g->live; i++)
            fprintf(f, "crawld_bloom_generation_fill{generation=\"%u\"} %.6f\n", i, g->gen[i].fill);
        fprintf(f, "# TYPE crawld_bloom_generation_start_seconds gauge\n");
        for (unsigned i = 0; i < g->live; i++)
            fprintf(f, "crawld_bloom_generation_start_seconds{generation=\"%u\"} %lld\n", i,
                    (long long)g->gen[i].start);
        fprintf(f, "# TYPE crawld_bloom_memory_bytes gauge\ncrawld_bloom_memory_bytes %llu\n",
                (unsigned long long)(g->memory_bytes + g->ghost_bytes));
    }
    fprintf(f, "# TYPE crawld_frontier_urls gauge\ncrawld_frontier_urls{where=\"memory\"} %lld\n"
               "crawld_frontier_urls{where=\"sqlite\"} %lld\n",
            (long long)st->frontier_mem, (long long)st->queued);
    fprintf(f, "# TYPE crawld_hosts_active gauge\ncrawld_hosts_active %lld\n",
            (long long)st->hosts_active);
    fprintf(f, "# TYPE crawld_in_flight gauge\ncrawld_in_flight %lld\n", (long long)st->in_flight);
    fprintf(f, "# HELP crawld_storage_stalled 1 while the store refuses writes and crawld retries.\n"
               "# TYPE crawld_storage_stalled gauge\ncrawld_storage_stalled %d\n"
               "# TYPE crawld_storage_failed gauge\ncrawld_storage_failed %d\n"
               "# TYPE crawld_storage_held_operations gauge\ncrawld_storage_held_operations %lld\n"
               "# TYPE crawld_storage_stalls_total counter\ncrawld_storage_stalls_total %lld\n"
               "# TYPE crawld_storage_stall_seconds_total counter\n"
               "crawld_storage_stall_seconds_total %.3f\n",
            st->db.stalled != 0, st->db.failed != 0, (long long)(st->db.stalled ? st->db.held : 0),
            (long long)st->db.stalls, (double)st->db.stall_ms / 1000.0);
    fprintf(f, "# HELP crawld_seen_runs The SQLite seen-set's fingerprint runs now.\n"
               "# TYPE crawld_seen_runs gauge\ncrawld_seen_runs %d\n"
               "# HELP crawld_seen_run_merges_total Merges of frozen fingerprint runs.\n"
               "# TYPE crawld_seen_run_merges_total counter\ncrawld_seen_run_merges_total %lld\n"
               "# HELP crawld_seen_run_upkeep_seconds_total Writer time freezing and merging runs.\n"
               "# TYPE crawld_seen_run_upkeep_seconds_total counter\n"
               "crawld_seen_run_upkeep_seconds_total %.3f\n"
               "# HELP crawld_seen_run_upkeep_failures_total Upkeep steps that failed (retried).\n"
               "# TYPE crawld_seen_run_upkeep_failures_total counter\n"
               "crawld_seen_run_upkeep_failures_total %lld\n",
            st->db.runs.runs, (long long)st->db.runs.merges,
            (double)st->db.runs.upkeep_ms / 1000.0, (long long)st->db.runs.failures);
    fprintf(f, "# HELP crawld_html_pages_total HTML pages fetched and parsed for links.\n"
               "# TYPE crawld_html_pages_total counter\ncrawld_html_pages_total %llu\n"
               "# HELP crawld_responses_total Responses by what was asked for.\n"
               "# TYPE crawld_responses_total counter\n"
               "crawld_responses_total{kind=\"robots_txt\"} %llu\n"
               "crawld_responses_total{kind=\"redirect\"} %llu\n"
               "crawld_responses_total{kind=\"requisite\"} %llu\n"
               "crawld_responses_total{kind=\"page_or_other\"} %llu\n",
            (unsigned long long)st->html_pages, (unsigned long long)st->robots_fetched,
            (unsigned long long)st->redirect_answers, (unsigned long long)st->requisite_answers,
            (unsigned long long)(st->pages - st->robots_fetched - st->redirect_answers -
                                 st->requisite_answers));
    fprintf(f, "# HELP crawld_links_dropped_total Links the parser dropped, by reason"
               " (max_links: crawl.max_links_per_page).\n"
               "# TYPE crawld_links_dropped_total counter\n");
    for (int k = 0; k < LINKS_DROP__COUNT; k++)
        fprintf(f, "crawld_links_dropped_total{reason=\"%s\"} %llu\n", links_drop_name(k),
                (unsigned long long)st->links_dropped[k]);
    fprintf(f, "# HELP crawld_truncated_total Bodies cut at fetch.max_body_bytes (archived with"
               " WARC-Truncated: length).\n# TYPE crawld_truncated_total counter\n"
               "crawld_truncated_total %llu\n",
            (unsigned long long)st->truncated);
    fprintf(f, "# HELP crawld_archive_spool_total Bodies spooled to a temp file on the way to the"
               " WARC file (past archive.spool_mem_bytes), and fetches not archived because"
               " the spool failed.\n# TYPE crawld_archive_spool_total counter\n"
               "crawld_archive_spool_total{result=\"spooled\"} %llu\n"
               "crawld_archive_spool_total{result=\"failed\"} %llu\n",
            (unsigned long long)st->spooled, (unsigned long long)st->spool_errors);
    fprintf(f, "# HELP crawld_requisites_total Requisites found (images, CSS, fonts, scripts), "
               "and those new to the crawl.\n# TYPE crawld_requisites_total counter\n"
               "crawld_requisites_total{result=\"found\"} %llu\n"
               "crawld_requisites_total{result=\"new\"} %llu\n"
               "crawld_requisites_total{result=\"past_max_depth\"} %llu\n",
            (unsigned long long)st->req.found, (unsigned long long)st->req.new_,
            (unsigned long long)st->req.past_depth);
    fprintf(f, "# HELP crawld_css_total Stylesheets parsed and the references found in them.\n"
               "# TYPE crawld_css_total counter\n"
               "crawld_css_total{what=\"stylesheets\"} %llu\ncrawld_css_total{what=\"refs\"} %llu\n"
               "crawld_css_total{what=\"imports\"} %llu\ncrawld_css_total{what=\"dropped\"} %llu\n"
               "crawld_css_total{what=\"truncated\"} %llu\n",
            (unsigned long long)st->req.sheets, (unsigned long long)st->req.refs,
            (unsigned long long)st->req.imports, (unsigned long long)st->req.dropped,
            (unsigned long long)st->req.truncated);
    const recrawl_stats *rs = &st->recrawl;
    fprintf(f, "# HELP crawld_recrawl_total Re-fetches of known pages by what they found, and"
               " first fetches (new).\n# TYPE crawld_recrawl_total counter\n"
               "crawld_recrawl_total{result=\"revisited\"} %lld\n"
               "crawld_recrawl_total{result=\"not_modified\"} %lld\n"
               "crawld_recrawl_total{result=\"same_digest\"} %lld\n"
               "crawld_recrawl_total{result=\"changed\"} %lld\n"
               "crawld_recrawl_total{result=\"gone\"} %lld\n"
               "crawld_recrawl_total{result=\"other\"} %lld\n"
               "crawld_recrawl_total{result=\"new\"} %lld\n"
               "# HELP crawld_recrawl_bytes_saved_total Payload bytes 304 answers did not send.\n"
               "# TYPE crawld_recrawl_bytes_saved_total counter\n"
               "crawld_recrawl_bytes_saved_total %lld\n"
               "# HELP crawld_recrawl_due URLs whose time has come and are not fetched yet.\n"
               "# TYPE crawld_recrawl_due gauge\ncrawld_recrawl_due %lld\n"
               "# HELP crawld_recrawl_next_due_seconds Unix time the next URL falls due (-1: none).\n"
               "# TYPE crawld_recrawl_next_due_seconds gauge\n"
               "crawld_recrawl_next_due_seconds %.3f\n",
            (long long)rs->total.revisited, (long long)rs->total.not_modified,
            (long long)rs->total.same_digest, (long long)rs->total.changed,
            (long long)rs->total.gone, (long long)rs->total.other, (long long)rs->total.new_pages,
            (long long)rs->total.bytes_saved, (long long)rs->due_now,
            rs->next_due_ms < 0 ? -1.0 : (double)rs->next_due_ms / 1000.0);
    fprintf(f, "# HELP crawld_recrawl_intervals Scheduled URLs by interval, le = bucket top in"
               " seconds.\n# TYPE crawld_recrawl_intervals gauge\n");
    for (int k = 0; k < RECRAWL_BUCKETS; k++)
        if (rs->intervals[k] > 0)
            fprintf(f, "crawld_recrawl_intervals{le=\"%lld\"} %lld\n", 2LL << k,
                    (long long)rs->intervals[k]);
    fprintf(f, "# HELP crawld_links_rejected_total Links the URL parser refused, by reason.\n"
               "# TYPE crawld_links_rejected_total counter\n");
    for (int r = URL_OK + 1; r < URL_REJ_COUNT; r++)
        fprintf(f, "crawld_links_rejected_total{reason=\"%s\"} %llu\n",
                url_reject_name((url_reject)r), (unsigned long long)st->links_rejected_by[r]);
    if (st->sitemaps_on) {
        fprintf(f, "# HELP crawld_sitemaps_total Sitemaps read and what their entries became"
                   " (crawl.toml [sitemaps]).\n# TYPE crawld_sitemaps_total counter\n");
#define SM_METRIC(name)                                                                            \
    fprintf(f, "crawld_sitemaps_total{what=\"%s\"} %llu\n", #name,                                 \
            (unsigned long long)st->sitemaps.name);
        SITEMAPS_STATS_FIELDS(SM_METRIC)
#undef SM_METRIC
    }
    fprintf(f, "# HELP crawld_scope_rejects_total Links not followed, by reason (scope, depth, traps).\n"
               "# TYPE crawld_scope_rejects_total counter\n");
    for (int v = SCOPE_ALLOWED + 1; v < SCOPE_VERDICT_COUNT; v++)
        fprintf(f, "crawld_scope_rejects_total{reason=\"%s\"} %llu\n", scope_verdict_name(v),
                (unsigned long long)st->scope_verdicts[v]);
}
