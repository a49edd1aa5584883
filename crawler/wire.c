/* crawler/wire: configuration -> module options. */
#include "wire.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

void wire_url_policy(const crawl_config *c, url_policy *out)
{
    url_policy_defaults(out);
    _Static_assert(CONFIG_URL_BYTES_MIN == URL_MIN_BYTES && CONFIG_URL_BYTES_MAX == URL_MAX_BYTES,
                   "canon.max_url_bytes: config's range is what url.c accepts");
    out->max_url_bytes = (size_t)c->canon.max_url_bytes;
    out->strip_params = (const char *const *)c->canon.strip_params.v;
    out->n_strip_params = c->canon.strip_params.n;
    out->strip_session_ids = c->canon.strip_session_ids;
    out->sort_query = c->canon.sort_query;
}

void wire_bloom_params(const crawl_config *c, bloom_params *out)
{
    bloom_params_init(out);
    out->expected_items = (uint64_t)c->dedup.expected_urls;
    out->fp_rate = c->dedup.fp_rate;
    out->shards = (unsigned)c->dedup.shards;
    out->growth = c->dedup.growth;
    out->tightening = c->dedup.tightening;
    out->max_bytes = (uint64_t)c->dedup.bloom_max_mib << 20;
}

void wire_gens_opts(const crawl_config *c, gens_opts *out)
{
    out->retention_s = c->dedup.retention_s;
    out->generations = (unsigned)c->dedup.generations;
}

void wire_db_opts(const crawl_config *c, db_opts *out)
{
    out->cache_mb = (int)c->storage.sqlite_cache_mb;
    out->batch_size = (int)c->storage.batch_size;
    out->run_rows = c->storage.seen_run_rows;
    out->gather_ms = (int)c->storage.commit_interval_ms;
    out->queue_cap = 0;
    out->scratch = 0;
    out->linked_index = c->dedup.retention_s > 0;
    out->max_stall_ms = (int)(c->storage.max_stall_s > 2000000 ? 2000000000 : c->storage.max_stall_s * 1000);
}

void wire_fetch_opts(const crawl_config *c, fetch_opts *out)
{
    memset(out, 0, sizeof *out);
    out->threads = (unsigned)c->fetch.threads;
    out->connections = wire_fetch_connections(c, -1, NULL);
    out->connect_timeout_ms = (long)c->fetch.connect_timeout_ms;
    out->timeout_ms = (long)c->fetch.timeout_ms;
    out->low_speed_bytes = (long)c->fetch.low_speed_bytes;
    out->low_speed_time_s = (long)c->fetch.low_speed_time_s;
    out->max_body_bytes = (uint64_t)c->fetch.max_body_bytes;
    out->max_header_bytes = (uint64_t)c->fetch.max_header_bytes;
    out->http2 = c->fetch.http2;
    out->user_agent = c->crawl.user_agent;
    out->resolve = (const char *const *)c->fetch.resolve.v;
    out->nresolve = c->fetch.resolve.n;
    out->proxy = NULL;
    out->keep_request = c->archive.warc;
}

unsigned wire_fetch_connections(const crawl_config *c, long nofile, bool *capped)
{
    if (nofile < 0) {
        struct rlimit rl;
        nofile = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                     ? (long)(rl.rlim_cur > (rlim_t)1 << 30 ? (rlim_t)1 << 30 : rl.rlim_cur)
                     : 1L << 30;
    }
    uint64_t want = c->fetch.connections == CONFIG_AUTO ? WIRE_AUTO_CONNECTIONS_MAX
                                                        : (uint64_t)c->fetch.connections;
    uint64_t room = nofile > 2 * WIRE_FD_RESERVE ? (uint64_t)(nofile - WIRE_FD_RESERVE) / 2
                                                 : (uint64_t)(nofile > 0 ? nofile : 0) / 4;
    uint64_t n = want < room ? want : room;
    if (n < (uint64_t)c->fetch.threads)
        n = (uint64_t)c->fetch.threads;
    if (capped != NULL)
        *capped = n < want;
    return (unsigned)n;
}

void wire_frontier_opts(const crawl_config *c, frontier_opts *out)
{
    frontier_opts_defaults(out);
    out->obey_robots = c->politeness.obey_robots;
    out->robots_agent = c->crawl.robots_agent;
    out->robots_max_bytes = c->politeness.robots_max_bytes;
    out->robots_cache_s = c->politeness.robots_cache_s;
    out->delay_ms = c->politeness.delay_ms;
    out->delay_factor = c->politeness.delay_factor;
    out->max_delay_ms = c->politeness.max_delay_ms;
    out->max_per_host = (int)c->politeness.max_per_host;
    out->max_retry_after_s = c->politeness.max_retry_after_s;
    out->max_attempts = (int)c->politeness.max_attempts;
    out->backoff_ms = c->politeness.backoff_ms;
    out->host_max_failures = (int)c->politeness.host_max_failures;
    out->max_in_memory = c->frontier.max_in_memory;
    out->max_pages = c->crawl.max_pages;
    out->max_pages_per_host = c->crawl.max_pages_per_host;
    /* a cluster node's rules travel with the host's slot (crawl_slot_export) */
    out->keep_robots_text = c->cluster.redis[0] != '\0';
}

void wire_scope_opts(const crawl_config *c, scope_opts *out)
{
    scope_opts_defaults(out);
    out->mode = c->crawl.scope; /* enum crawl_scope and scope_mode agree */
    out->include = (const char *const *)c->crawl.include.v;
    out->n_include = c->crawl.include.n;
    out->exclude = (const char *const *)c->crawl.exclude.v;
    out->n_exclude = c->crawl.exclude.n;
    out->fetch_requisites = c->crawl.fetch_requisites;
    out->requisites_same_host = c->crawl.requisites_scope == REQUISITES_SAME_HOST;
    out->requisite_depth = c->crawl.requisite_depth;
    out->max_depth = c->crawl.max_depth;
    out->max_url_length = c->canon.max_url_bytes;
    out->max_path_depth = c->crawl.max_path_depth;
    out->max_repeated_segment = c->crawl.max_repeated_segment;
    out->max_query_params = c->crawl.max_query_params;
}

void wire_links_opts(const crawl_config *c, links_opts *out)
{
    memset(out, 0, sizeof *out);
    out->max_bytes = (size_t)c->fetch.max_body_bytes;
    out->max_links = (size_t)c->crawl.max_links_per_page;
    out->agent = c->crawl.robots_agent;
}

void wire_warc_opts(const crawl_config *c, char *archive_dir, size_t len, warc_opts *out)
{
    memset(out, 0, sizeof *out);
    if (c->archive.dir[0] == '/')
        snprintf(archive_dir, len, "%s", c->archive.dir);
    else
        snprintf(archive_dir, len, "%s/%s", c->storage.state_dir, c->archive.dir);
    out->dir = archive_dir;
    out->prefix = c->archive.prefix;
    out->max_file_bytes = (uint64_t)c->archive.max_file_bytes;
    out->revisits = c->archive.revisits;
}

void wire_sitemaps_opts(const crawl_config *c, scope *sc, sitemaps_opts *out)
{
    memset(out, 0, sizeof *out);
    out->well_known = c->sitemaps.well_known;
    out->max_urls = (size_t)c->sitemaps.max_urls;
    out->max_bytes = (size_t)c->sitemaps.max_bytes;
    out->max_loc = (size_t)c->canon.max_url_bytes;
    out->max_index_depth = (int)c->sitemaps.max_index_depth;
    out->max_per_host = c->sitemaps.max_per_host;
    out->sc = sc;
    out->robots_max_bytes = (size_t)c->politeness.robots_max_bytes;
}
