/* crawler/cmd_links: `crawld links` prints the links of an HTML file as the
 * crawler sees them: kind, a tab, the fetch form, in document order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/buf.h"
#include "crawler/web/links.h"
#include "crawler/web/url.h"
#include "crawler/wire.h"

static const char usage[] =
    "usage: crawld links [-c FILE] [--set K=V]... [--base URL] [--content-type TYPE] FILE|-\n"
    "\n"
    "Extracts the links of an HTML file (- for stdin) with the crawler's own\n"
    "extractor and prints one line per link, in document order: its kind (a,\n"
    "area, link:REL, img, script, iframe, meta-refresh, ...), a tab, and the\n"
    "URL as the crawler would fetch it (parsed as browsers do, fragment\n"
    "dropped), resolved against the page's first <base href> and --base.\n"
    "Links the URL parser rejects (counted by reason), and links the extractor\n"
    "drops (over a cap, data: URLs, ...), are counted on stderr.\n";

typedef struct ctx {
    url_canon *uc;
    const char *page;   /* --base, or NULL */
    cr_buf base, out;
    unsigned long printed, rejected;
    unsigned long rejected_by[URL_REJ_COUNT];
} ctx;

static void on_link(void *ud, const links_link *l)
{
    ctx *c = ud;
    url_reject why;
    const char *b = c->page;
    size_t blen = b ? strlen(b) : 0;
    if (l->base &&
        url_canon_forms(c->uc, b, blen, l->base, l->base_len, &c->base, NULL, &why) == 0) {
        b = c->base.data;
        blen = c->base.len;
    }
    if (url_canon_forms(c->uc, b, blen, l->url, l->url_len, &c->out, NULL, &why) < 0) {
        c->rejected++;
        if ((unsigned)why < URL_REJ_COUNT)
            c->rejected_by[why]++;
        return;
    }
    printf("%s\t%s\n", l->kind, c->out.data);
    c->printed++;
}

int cmd_links(int argc, char **argv)
{
    cli_conf cc = { 0 };
    ctx c = { 0 };
    const char *ctype = NULL, *path = NULL;
    const cli_opt opts[] = {
        { "--base", NULL, "URL", &c.page, NULL,
          "the page's own URL (relative links need one)" },
        { "--content-type", NULL, "TYPE", &ctype, NULL,
          "the Content-Type header it came with (its charset)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "links", usage, opts, CLI_ONE_OPERAND, argc, argv, &path, NULL);
    if (code != CLI_GO_ON)
        return code;
    if (path == NULL) {
        fprintf(stderr, "crawld links: which file? (FILE, or - for stdin; see --help)\n");
        return 2;
    }
    crawl_config cfg;
    if (cli_conf_load(&cc, "links", &cfg, false) != 0)
        return 1;
    int rc = 1;
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    url_policy pol;
    wire_url_policy(&cfg, &pol);
    links_opts lo = { 0 };
    lo.max_bytes = (size_t)cfg.fetch.max_body_bytes;
    lo.agent = cfg.crawl.robots_agent;
    c.uc = url_canon_new(&pol);
    links_parser *p = links_new(&lo, on_link, &c);
    cr_buf_init(&c.base, 0);
    cr_buf_init(&c.out, 0);
    if (in == NULL) {
        fprintf(stderr, "crawld links: cannot open %s: %s\n", path, strerror(errno));
        goto out;
    }
    if (c.uc == NULL || p == NULL) {
        fprintf(stderr, "crawld links: out of memory\n");
        goto out;
    }
    links_reset(p, ctype);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        links_feed(p, buf, n);
    links_finish(p);
    fflush(stdout);
    links_stats st;
    links_stats_get(p, &st);
    uint64_t dropped = 0;
    for (int i = 0; i < LINKS_DROP__COUNT; i++)
        dropped += st.dropped[i];
    fprintf(stderr, "crawld links: %lu links printed, %lu rejected by canonicalization",
            c.printed, c.rejected);
    int shown = 0;
    for (int i = URL_OK + 1; i < URL_REJ_COUNT; i++)
        if (c.rejected_by[i])
            fprintf(stderr, "%s%s %lu", shown++ ? ", " : " (", url_reject_name((url_reject)i),
                    c.rejected_by[i]);
    fprintf(stderr, "%s, %llu dropped by the extractor", shown ? ")" : "",
            (unsigned long long)dropped);
    for (int i = 0; i < LINKS_DROP__COUNT; i++)
        if (st.dropped[i])
            fprintf(stderr, "%s%s %llu", i ? ", " : " (", links_drop_name(i),
                    (unsigned long long)st.dropped[i]);
    fputs(dropped ? ")" : "", stderr);
    if (st.styles)
        fprintf(stderr, "; CSS read in %llu <style> elements and style attributes, %llu of its "
                        "references dropped",
                (unsigned long long)st.styles, (unsigned long long)st.style_dropped);
    for (unsigned bit = 1; bit <= LINKS_TRUNC_NOMEM; bit <<= 1)
        if (st.truncated & bit)
            fprintf(stderr, "; page cut: %s", links_trunc_name(bit));
    fputc('\n', stderr);
    rc = 0;
out:
    if (in && in != stdin)
        fclose(in);
    links_free(p);
    url_canon_free(c.uc);
    cr_buf_release(&c.base);
    cr_buf_release(&c.out);
    config_release(&cfg);
    return rc;
}
