/* crawler/wire: turns the whole configuration into each module's own small
 * options struct; no module below crawler/ sees the configuration. Within
 * the composition root, crawl.c still reads a few crawl-level settings
 * itself (its own behaviour: daemon, snapshot interval, redirect and robots
 * limits, the warcinfo summary, requisite depth); moving those into a
 * crawl_opts struct here is open.
 * The results borrow strings from the configuration: keep it alive until
 * the module that takes them has copied them (each constructor says). */
#ifndef CRAWLD_WIRE_H
#define CRAWLD_WIRE_H

#include "config/config.h"
#include "crawler/web/url.h"
#include "crawler/web/fetch.h"
#include "crawler/web/links.h"
#include "crawler/sitemaps.h"
#include "dedup/bloom.h"
#include "dedup/gens.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "storage/db.h"
#include "storage/warc.h"

void wire_url_policy(const crawl_config *c, url_policy *out /* OUT */);
void wire_bloom_params(const crawl_config *c, bloom_params *out /* OUT */);
void wire_gens_opts(const crawl_config *c, gens_opts *out /* OUT */);
void wire_db_opts(const crawl_config *c, db_opts *out /* OUT */);
/* fetch.connections resolved (CONFIG_AUTO: as many as the file-descriptor
 * limit allows) and kept within it. */
void wire_fetch_opts(const crawl_config *c, fetch_opts *out /* OUT */);

#define WIRE_AUTO_CONNECTIONS_MAX 8192u /* fetch.connections = "auto" at most */
#define WIRE_FD_RESERVE 256             /* descriptors kept for SQLite, WARC, the API... */

/* The transfers fetch.connections gives under a soft file-descriptor limit
 * of nofile (< 0: read RLIMIT_NOFILE now): the configured number, or for
 * "auto" WIRE_AUTO_CONNECTIONS_MAX; either way no more than
 * (nofile - WIRE_FD_RESERVE) / 2 (a transfer may hold two descriptors while
 * it resolves and connects) and no fewer than fetch.threads. *capped (may
 * be NULL) says whether the limit lowered it. OUT: capped */
unsigned wire_fetch_connections(const crawl_config *c, long nofile, bool *capped);
void wire_frontier_opts(const crawl_config *c, frontier_opts *out /* OUT */);
void wire_scope_opts(const crawl_config *c, scope_opts *out /* OUT */);
void wire_links_opts(const crawl_config *c, links_opts *out /* OUT */);
/* [sitemaps] and the limits it shares (canon.max_url_bytes for a <loc>,
 * politeness.robots_max_bytes); sc is the crawl's scope. */
void wire_sitemaps_opts(const crawl_config *c, scope *sc, sitemaps_opts *out /* OUT */);
/* archive_dir receives state_dir/archive.dir (or archive.dir if absolute). */
void wire_warc_opts(const crawl_config *c, char *archive_dir, size_t len, warc_opts *out /* OUT */);

#endif
