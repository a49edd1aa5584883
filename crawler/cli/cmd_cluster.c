/* crawler/cmd_cluster: `crawld cluster status`, what a shared crawl looks
 * like in Redis (cluster/status does the reading). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cluster/status.h"

static const char usage[] =
    "usage: crawld cluster status [--redis ADDR] [--crawl ID] [-c FILE] [--set K=V]...\n"
    "\n"
    "Prints the shared crawl ID (default: cluster.crawl_id) as Redis at ADDR\n"
    "(default: cluster.redis; unix:/PATH or tcp:HOST:PORT) holds it: its\n"
    "nodes and their leases, the coordinator, the slot map and its epoch, and\n"
    "per slot the lease holder, the link stream's depth, pending entries and lag.\n";

int cmd_cluster(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *redis = NULL, *crawl = NULL;
    const cli_opt opts[] = {
        { "--redis", NULL, "ADDR", &redis, NULL, "Redis of the crawl: unix:/PATH or tcp:HOST:PORT" },
        { "--crawl", NULL, "ID", &crawl, NULL, "the crawl's name (cluster.crawl_id)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    const char *what = NULL;
    int code = cli_parse(&cc, "cluster", usage, opts, CLI_ONE_OPERAND, argc, argv, &what, NULL);
    if (code != CLI_GO_ON)
        return code;
    if (what == NULL || strcmp(what, "status") != 0) {
        fprintf(stderr, "crawld cluster: %s%s%s (try 'crawld cluster --help')\n",
                what ? "unknown action '" : "which action? 'status'", what ? what : "",
                what ? "'" : "");
        return 2;
    }
    crawl_config cfg;
    if (cli_conf_load(&cc, "cluster", &cfg, false) != 0)
        return 1;
    int rc = 0;
    char why[200], err[512];
    if (redis == NULL)
        redis = cfg.cluster.redis;
    if (crawl == NULL)
        crawl = cfg.cluster.crawl_id;
    if (redis[0] == '\0') {
        fputs("crawld cluster: no Redis given (--redis ADDR or cluster.redis)\n", stderr);
        rc = 2;
    } else if (config_check_redis_addr(redis, why, sizeof why) < 0) {
        fprintf(stderr, "crawld cluster: --redis: %s\n", why);
        rc = 2;
    } else if (cluster_status_print(redis, crawl, stdout, err, sizeof err) < 0) {
        fprintf(stderr, "crawld cluster: %s\n", err);
        rc = 1;
    }
    config_release(&cfg);
    return rc;
}
