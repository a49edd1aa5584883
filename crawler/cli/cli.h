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

/* One option of a command: the command's option table is an array of
 * these ending with { NULL }. A value option (metavar set) stores its
 * value in *str ("--name VALUE" or "--name=VALUE"); a flag sets *flag.
 * Every command parses with cli_parse, so a missing value, an unknown
 * option and --help are handled the same way everywhere. */
typedef struct cli_opt {
    const char *name;     /* "--state" */
    const char *alias;    /* "-o", or NULL */
    const char *metavar;  /* "DIR": takes a value; NULL: a flag */
    const char **str;     /* where a value lands */
    bool *flag;           /* where a flag lands */
    const char *help;     /* one line for --help (may hold \n + indent) */
} cli_opt;

/* What a command takes besides options. */
typedef enum cli_operands {
    CLI_NO_OPERANDS,   /* anything else is an error */
    CLI_ONE_OPERAND,   /* at most one, anywhere (crawld links FILE) */
    CLI_REST_OPERANDS, /* the first operand, or "--", ends the options */
} cli_operands;

#define CLI_GO_ON (-1) /* cli_parse: the options are parsed, run the command */

/* Parses argv[1..] against the shared options (-c/--config FILE, --set K=V
 * repeated, -h/--help) and opts. OUT: *operand (CLI_ONE_OPERAND: the
 * operand or NULL), *first (CLI_REST_OPERANDS: index of the first operand,
 * argc if none); either may be NULL for the other kinds. Returns
 * CLI_GO_ON, or the exit code to return now: 0 after --help (usage, then
 * the options from the table), 2 after a usage error (one line printed:
 * "crawld CMD: option '--x' needs a value", "unknown option", ...). */
int cli_parse(cli_conf *cc, const char *cmd, const char *usage, const cli_opt *opts,
              cli_operands kind, int argc, char **argv, const char **operand, int *first);

/* Defaults, then the file, then every --set in order. Prints the error
 * ("crawld CMD: FILE:LINE:COL: message") and returns 1 on failure. */
int cli_conf_load(const cli_conf *cc, const char *cmd, crawl_config *cfg, bool syntax_only);


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
int cmd_cluster(int argc, char **argv);

#endif
