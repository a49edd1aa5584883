/* crawler/cli: what every subcommand shares: the configuration options
 * (-c FILE, --set section.key=value, repeated) and error reporting.
 * Each subcommand is one cmd_NAME(argc, argv) in its own crawler/cmd_*.c,
 * dispatched from crawler/main.c; argv[0] is the subcommand's name.
 * Exit codes: 0 success, 1 the command's own "no" (a rejected URL, an
 * invalid configuration), 2 usage errors. */
#ifndef CRAWLD_CLI_H
#define CRAWLD_CLI_H

#include <stdbool.h>

#include "config/config.h"

#define CLI_MAX_SETS 256

/* Collects -c/--config and --set while a command parses its flags. */
typedef struct cli_conf {
    const char *path;                 /* NULL: ./crawl.toml if present */
    const char *sets[CLI_MAX_SETS];
    int nsets;
} cli_conf;

#define CLI_ARG_TAKEN (-1)      /* an option every command shares: go on */
#define CLI_ARG_NOT_COMMON (-2) /* the command's own: parse it */

/* Takes argv[*i] (and its value, advancing *i) when it is an option every
 * command shares: -c/--config FILE, --set K=V (also --config=FILE,
 * --set=K=V), -h/--help (prints usage). Returns CLI_ARG_TAKEN,
 * CLI_ARG_NOT_COMMON, or the exit code the command returns now: 0 after
 * --help, 2 after a usage error (printed). */
int cli_common_arg(cli_conf *cc, const char *cmd, const char *usage, int argc, char **argv, int *i);
/* Defaults, then the file, then every --set in order. Prints the error
 * ("crawld CMD: FILE:LINE:COL: message") and returns 1 on failure. */
int cli_conf_load(const cli_conf *cc, const char *cmd, crawl_config *cfg, bool syntax_only);

/* Prints "crawld CMD: unknown option 'X' (try 'crawld CMD --help')", returns 2. */
int cli_bad_option(const char *cmd, const char *opt);

int cmd_check_config(int argc, char **argv);
int cmd_canon(int argc, char **argv);
int cmd_links(int argc, char **argv);
int cmd_robots(int argc, char **argv);
int cmd_dedup(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_wacz(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_pause(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_shutdown(int argc, char **argv);
int cmd_seed(int argc, char **argv);

#endif
