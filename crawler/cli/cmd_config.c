/* crawler/cmd_config: `crawld check-config` validates a configuration and
 * prints the effective one (every option, as TOML). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: crawld check-config [-c FILE] [--set section.key=value]... [--syntax-only]\n"
    "                           [--defaults]\n"
    "\n"
    "Validates the configuration (FILE, default ./crawl.toml if present) with\n"
    "the --set overrides applied in order, then prints the effective\n"
    "configuration and 'configuration OK'. Errors read FILE:LINE:COL: message.\n"
    "\n"
    "  -c, --config FILE   the configuration file\n"
    "      --set K=V       override one option; V is written as in TOML,\n"
    "                      e.g. --set 'crawl.seeds=[\"http://a/\"]'\n"
    "      --syntax-only   check the TOML alone, ignoring unknown keys\n"
    "      --defaults      print every option with its doc and default (the\n"
    "                      shipped crawl.toml) and exit\n"
    "  -h, --help          this text\n";

int cmd_check_config(int argc, char **argv)
{
    cli_conf cc = { 0 };
    bool syntax_only = false, defaults = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int code = cli_common_arg(&cc, "check-config", usage, argc, argv, &i);
        if (code == CLI_ARG_TAKEN)
            continue;
        if (code != CLI_ARG_NOT_COMMON)
            return code;
        if (strcmp(a, "--syntax-only") == 0) {
            syntax_only = true;
        } else if (strcmp(a, "--defaults") == 0) {
            defaults = true;
        } else {
            return cli_bad_option("check-config", a);
        }
    }
    crawl_config cfg;
    if (defaults) {
        if (config_init(&cfg) < 0)
            return 1;
        config_write(&cfg, stdout, true);
        config_release(&cfg);
        return 0;
    }
    if (cli_conf_load(&cc, "check-config", &cfg, syntax_only) != 0)
        return 1;
    if (!syntax_only)
        config_write(&cfg, stdout, false);
    config_release(&cfg);
    printf("%sconfiguration OK\n", syntax_only ? "" : "\n");
    return 0;
}
