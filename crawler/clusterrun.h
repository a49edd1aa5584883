/* crawler/clusterrun: `crawld run` as one node of a shared crawl (issue 23).
 *
 * Wires cluster/node into the crawl: the outbox (state_dir/outbox.db), the
 * node thread (leases, forwarder, reader), the crawl's cluster hooks (a host
 * is local while this node holds its slot; the frontier hands out a host
 * only while the slot's lease is fresh), the reader's apply (the crawl's
 * seen test and frontier insert, committed before the XACK) and, without
 * crawl.daemon, the end of the run once the whole crawl is quiescent
 * (cluster/quiet). Only cmd_run calls it, and only with cluster.redis set. */
#ifndef CRAWLD_CLUSTERRUN_H
#define CRAWLD_CLUSTERRUN_H

#include <stdbool.h>
#include <stdio.h>

#include "cluster/node.h"
#include "config/config.h"
#include "crawler/crawl.h"

typedef struct clusterrun clusterrun;

/* Joins the crawl named cluster.crawl_id and starts the node thread. 0 and
 * *out, or negative errno with why in err. */
int clusterrun_start(crawl *c, const crawl_config *cfg, FILE *log, clusterrun **out /* OUT */,
                     char *err, size_t errlen);
/* Waits until the slot map has settled (see node_settled), so that seeds
 * go where they belong; says on log what it waits for. 0, or -EINTR when
 * the crawl was stopped meanwhile. */
int clusterrun_wait_settled(clusterrun *r);
/* The seeds are in: from now on this node reports to the end check. */
void clusterrun_ready(clusterrun *r);
/* Stops the node thread; with leave, releases its leases at once. */
void clusterrun_stop(clusterrun *r, bool leave);

/* The node's figures (NULL r: zeroes), for status lines, /v1/status and
 * /metrics. Any thread. */
void clusterrun_info(clusterrun *r, node_info *out /* OUT */);

#endif
