/* crawler/cli: configuration options shared by the subcommands. */
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int add_set(cli_conf *cc, const char *cmd, const char *assignment)
{
    if (cc->nsets >= CLI_MAX_SETS) {
        fprintf(stderr, "crawld %s: too many --set options (at most %d)\n", cmd, CLI_MAX_SETS);
        return -1;
    }
    cc->sets[cc->nsets++] = assignment;
    return 1;
}

static int conf_arg(cli_conf *cc, const char *cmd, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    bool is_config = strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0;
    bool is_set = strcmp(a, "--set") == 0;
    if (is_config || is_set) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "crawld %s: option '%s' needs a value\n", cmd, a);
            return -1;
        }
        *i += 1;
        if (is_set)
            return add_set(cc, cmd, argv[*i]);
        cc->path = argv[*i];
        return 1;
    }
    if (strncmp(a, "--config=", 9) == 0) {
        cc->path = a + 9;
        return 1;
    }
    if (strncmp(a, "--set=", 6) == 0)
        return add_set(cc, cmd, a + 6);
    return 0;
}

int cli_common_arg(cli_conf *cc, const char *cmd, const char *usage, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    int taken = conf_arg(cc, cmd, argc, argv, i);
    return taken < 0 ? 2 : taken > 0 ? CLI_ARG_TAKEN : CLI_ARG_NOT_COMMON;
}

int cli_conf_load(const cli_conf *cc, const char *cmd, crawl_config *cfg, bool syntax_only)
{
    config_error err;
    if (config_init(cfg) < 0) {
        fprintf(stderr, "crawld %s: out of memory\n", cmd);
        return 1;
    }
    const char *path = cc->path;
    if (path == NULL && access("crawl.toml", F_OK) == 0)
        path = "crawl.toml";
    if (path && config_load_file(cfg, path, syntax_only, &err) < 0)
        goto bad;
    for (int i = 0; i < cc->nsets && !syntax_only; i++)
        if (config_set(cfg, cc->sets[i], &err) < 0)
            goto bad;
    return 0;
bad:
    fprintf(stderr, "crawld %s: %s\n", cmd, err.msg);
    config_release(cfg);
    return 1;
}

int cli_bad_option(const char *cmd, const char *opt)
{
    fprintf(stderr, "crawld %s: unknown option '%s' (try 'crawld %s --help')\n", cmd, opt, cmd);
    return 2;
}
