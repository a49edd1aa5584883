/* crawler/main: the crawld binary. Dispatches to one subcommand; each lives
 * in its own crawler/cli/cmd_*.c. Library global init runs here, before any
 * subcommand can start a thread. */
#include <curl/curl.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    { "run", cmd_run, "crawl from the seeds until the frontier drains (or as a daemon)" },
    { "dedup", cmd_dedup, "dedup a URL stream on stdin; report what each layer skipped" },
    { "stats", cmd_stats, "print the figures of a finished or running crawl" },
    { "report", cmd_report, "write an HTML report of a crawl (charts, hosts, figures)" },
    { "wacz", cmd_wacz, "package a crawl's WARC files as WACZ (for ReplayWeb.page)" },
    { "status", cmd_status, "ask a running crawl for its figures (through its control API)" },
    { "pause", cmd_pause, "pause a running crawl" },
    { "resume", cmd_resume, "resume a paused crawl" },
    { "shutdown", cmd_shutdown, "stop a running crawl cleanly" },
    { "seed", cmd_seed, "queue seed URLs in a running crawl" },
    { "cluster", cmd_cluster, "show a shared crawl's nodes, leases, slot map and streams in Redis" },
    { "check-config", cmd_check_config, "validate a configuration and print the effective one" },
    { "canon", cmd_canon, "print the canonical form of URLs" },
    { "links", cmd_links, "print the links extracted from an HTML file" },
    { "robots", cmd_robots, "decide URLs against a robots.txt" },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fputs("usage: crawld COMMAND [OPTIONS]\n"
          "       crawld COMMAND --help\n\ncommands:\n",
          f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fputs("\nEvery command that reads the configuration takes -c FILE (default\n"
          "./crawl.toml if present) and --set section.key=value, repeated.\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    const command *cmd = NULL;
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            cmd = &commands[i];
    if (cmd == NULL) {
        fprintf(stderr, "crawld: unknown %s '%s' (try 'crawld --help')\n",
                name[0] == '-' ? "option" : "command", name);
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fputs("crawld: libcurl failed to initialise\n", stderr);
        return 1;
    }
    xmlInitParser();
    int rc = cmd->run(argc - 1, argv + 1);
    xmlCleanupParser();
    curl_global_cleanup();
    return rc;
}
