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
    "configuration and 'configuration OK'. Errors read FILE:LINE:COL: message.\n";

int cmd_check_config(int argc, char **argv)
{
    cli_conf cc = { 0 };
    bool syntax_only = false, defaults = false;
    const cli_opt opts[] = {
        { "--syntax-only", NULL, NULL, NULL, &syntax_only,
          "check the TOML alone, ignoring unknown keys" },
        { "--defaults", NULL, NULL, NULL, &defaults,
          "print every option with its doc and default, and exit" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "check-config", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
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
