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

/* The --help text: the command's usage, then its options and the shared ones. */
static void print_help(const char *usage, const cli_opt *opts)
{
    fputs(usage, stdout);
    fputs("\noptions:\n", stdout);
    for (const cli_opt *o = opts; o->name != NULL; o++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s%s%s", o->alias ? o->alias : "", o->alias ? ", " : "",
                 o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        printf("  %-24s %s\n", left, o->help);
    }
    printf("  %-24s %s\n", "-c, --config FILE", "the configuration (default ./crawl.toml if present)");
    printf("  %-24s %s\n", "--set K=V", "override one option, V written as in TOML; repeated");
    printf("  %-24s %s\n", "-h, --help", "this text");
}

static int bad_option(const char *cmd, const char *opt)
{
    fprintf(stderr, "crawld %s: unknown option '%s' (try 'crawld %s --help')\n", cmd, opt, cmd);
    return 2;
}

/* The table's entry for a (the name part before any '='), or NULL. */
static const cli_opt *find(const cli_opt *opts, const char *a, size_t n)
{
    for (const cli_opt *o = opts; o->name != NULL; o++)
        if ((strlen(o->name) == n && strncmp(o->name, a, n) == 0) ||
            (o->alias && strlen(o->alias) == n && strncmp(o->alias, a, n) == 0))
            return o;
    return NULL;
}

int cli_parse(cli_conf *cc, const char *cmd, const char *usage, const cli_opt *opts,
              cli_operands kind, int argc, char **argv, const char **operand, int *first)
{
    static const cli_opt shared[] = {
        { "--config", "-c", "FILE", NULL, NULL, "" },
        { "--set", NULL, "K=V", NULL, NULL, "" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    if (operand)
        *operand = NULL;
    if (first)
        *first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            print_help(usage, opts);
            return 0;
        }
        bool is_opt = a[0] == '-' && a[1] != '\0';
        if (kind == CLI_REST_OPERANDS && strcmp(a, "--") == 0) {
            *first = i + 1;
            return CLI_GO_ON;
        }
        if (!is_opt) {
            if (kind == CLI_REST_OPERANDS) {
                *first = i;
                return CLI_GO_ON;
            }
            if (kind == CLI_ONE_OPERAND && *operand == NULL) {
                *operand = a;
                continue;
            }
            if (kind == CLI_ONE_OPERAND) {
                fprintf(stderr, "crawld %s: one operand at a time ('%s' is a second)\n", cmd, a);
                return 2;
            }
            fprintf(stderr, "crawld %s: unexpected argument '%s' (try 'crawld %s --help')\n", cmd,
                    a, cmd);
            return 2;
        }
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        const cli_opt *s = find(shared, a, n);
        const cli_opt *o = s ? s : find(opts, a, n);
        if (o == NULL)
            return bad_option(cmd, a);
        if (o->metavar == NULL) {
            if (eq != NULL) {
                fprintf(stderr, "crawld %s: option '%.*s' takes no value\n", cmd, (int)n, a);
                return 2;
            }
            *o->flag = true;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (v == NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "crawld %s: option '%s' needs a value (%s)\n", cmd, a, o->metavar);
                return 2;
            }
            v = argv[++i];
        }
        if (s == &shared[0])
            cc->path = v;
        else if (s == &shared[1]) {
            if (add_set(cc, cmd, v) < 0)
                return 2;
        } else
            *o->str = v;
    }
    return CLI_GO_ON;
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
