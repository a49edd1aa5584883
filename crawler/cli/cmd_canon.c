/* crawler/cmd_canon: `crawld canon` prints the key (canonical form) or the
 * fetch form of URLs, or why each was rejected, one line per input, in
 * order. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/buf.h"
#include "crawler/web/url.h"
#include "crawler/wire.h"

static const char usage[] =
    "usage: crawld canon [-c FILE] [--set K=V]... [--base URL] [--form key|fetch] [--] URL...\n"
    "\n"
    "Prints one line per URL, in order: its key (the canonical form the seen\n"
    "test compares) or its fetch form (the URL as browsers parse it, fragment\n"
    "dropped: what the crawl requests), or '-', a tab and the reason it was\n"
    "rejected. With no URL arguments, reads URLs from stdin, one per line.\n"
    "Exits 1 when any input was rejected. The [canon] section of the\n"
    "configuration sets the key's policy (stripped parameters, query sorting)\n"
    "and the length limit.\n";

static int print_one(url_canon *uc, const char *base, bool fetch, const char *in, size_t len,
                     cr_buf *out)
{
    url_reject why;
    int rc = url_canon_forms(uc, base, base ? strlen(base) : 0, in, len, fetch ? out : NULL,
                             fetch ? NULL : out, &why);
    if (rc == 0) {
        fwrite(out->data, 1, out->len, stdout);
        fputc('\n', stdout);
        return 0;
    }
    printf("-\t%s\n", rc == -EINVAL ? url_reject_str(why) : "out of memory");
    return 1;
}

int cmd_canon(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *base = NULL;
    bool fetch = false;
    int first = argc;
    const char *form = NULL;
    const cli_opt opts[] = {
        { "--base", NULL, "URL", &base, NULL,
          "resolve each URL against this base (as a page's links are)" },
        { "--form", NULL, "key|fetch", &form, NULL, "which form to print (default key)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "canon", usage, opts, CLI_REST_OPERANDS, argc, argv, NULL, &first);
    if (code != CLI_GO_ON)
        return code;
    if (form != NULL && strcmp(form, "fetch") != 0 && strcmp(form, "key") != 0) {
        fprintf(stderr, "crawld canon: --form is key or fetch, not '%s'\n", form);
        return 2;
    }
    fetch = form != NULL && strcmp(form, "fetch") == 0;
    crawl_config cfg;
    if (cli_conf_load(&cc, "canon", &cfg, false) != 0)
        return 1;
    url_policy pol;
    wire_url_policy(&cfg, &pol);
    url_canon *uc = url_canon_new(&pol);
    config_release(&cfg);
    if (uc == NULL) {
        fputs("crawld canon: out of memory\n", stderr);
        return 1;
    }
    cr_buf out;
    cr_buf_init(&out, 0);
    int rejected = 0;
    if (first < argc) {
        for (int i = first; i < argc; i++)
            rejected |= print_one(uc, base, fetch, argv[i], strlen(argv[i]), &out);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, stdin)) >= 0) {
            if (n > 0 && line[n - 1] == '\n')
                n--;
            rejected |= print_one(uc, base, fetch, line, (size_t)n, &out);
        }
        free(line);
    }
    cr_buf_release(&out);
    url_canon_free(uc);
    return rejected ? 1 : 0;
}
