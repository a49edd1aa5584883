/* crawler/main: the crawld binary. Dispatches to one subcommand; each lives
 * in its own crawler/cmd_*.c. Library global init runs here, before any
 * subcommand can start a thread. */
#include <curl/curl.h>
#include <libxml/parser.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv); /* NULL: not landed yet */
    const char *summary;
    const char *pending;               /* why run is NULL */
} command;

static const command commands[] = {
    { "run", cmd_run, "crawl from the seeds until the frontier drains (or as a daemon)", NULL },
    { "dedup", cmd_dedup, "dedup a URL stream on stdin; report what each layer skipped", NULL },
    { "stats", cmd_stats, "print the figures of a finished or running crawl", NULL },
    { "report", cmd_report, "write an HTML report of a crawl (charts, hosts, figures)", NULL },
    { "wacz", cmd_wacz, "package a crawl's WARC files as WACZ (for ReplayWeb.page)", NULL },
    { "status", cmd_status, "ask a running crawl for its figures (through its control API)", NULL },
    { "pause", cmd_pause, "pause a running crawl", NULL },
    { "resume", cmd_resume, "resume a paused crawl", NULL },
    { "shutdown", cmd_shutdown, "stop a running crawl cleanly", NULL },
    { "seed", cmd_seed, "queue seed URLs in a running crawl", NULL },
    { "check-config", cmd_check_config, "validate a configuration and print the effective one",
      NULL },
    { "canon", cmd_canon, "print the canonical form of URLs", NULL },
    { "links", cmd_links, "print the links extracted from an HTML file", NULL },
    { "robots", cmd_robots, "decide URLs against a robots.txt", NULL },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fputs("usage: crawld COMMAND [OPTIONS]\n"
          "       crawld COMMAND --help\n\ncommands:\n",
          f);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-13s %s%s\n", commands[i].name, commands[i].summary,
                commands[i].run ? "" : " (not available yet)");
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
    if (cmd->run == NULL) {
        if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            printf("usage: crawld %s ...\n\n%s.\nNot available yet: it arrives with %s.\n",
                   cmd->name, cmd->summary, cmd->pending);
            return 0;
        }
        fprintf(stderr, "crawld %s: not available yet: it arrives with %s\n", cmd->name,
                cmd->pending);
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
