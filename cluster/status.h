/* cluster/status: what `crawld cluster status` prints, read from Redis:
 * the crawl's nodes and their leases, the coordinator, the slot map with
 * its epoch, and per slot its lease holder, stream depth, pending entries
 * and consumer-group lag. Read-only: it never writes a key. */
#ifndef CRAWLD_CLUSTER_STATUS_H
#define CRAWLD_CLUSTER_STATUS_H

#include <stdio.h>

/* Prints the status of crawl crawl_id at redis addr to out. 0, or a
 * negative errno with why in err (the address and what failed; a crawl
 * that does not exist is -ENOENT). */
int cluster_status_print(const char *addr, const char *crawl_id, FILE *out, char *err,
                         size_t errlen);

#endif
