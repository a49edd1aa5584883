/* crawler/cmd_wacz: `crawld wacz` packages a crawl's WARC files as one WACZ
 * file (storage/wacz, titles through crawler/package). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "crawler/package.h"

static const char usage[] =
    "usage: crawld wacz [--state DIR] [-o FILE] [-c FILE] [--set K=V]...\n"
    "\n"
    "Packages the WARC files of the crawl whose state is in DIR (default:\n"
    "storage.state_dir) as one WACZ 1.1.1 file, the package ReplayWeb.page opens:\n"
    "the WARCs (stored, not recompressed), indexes/index.cdxj, pages/pages.jsonl\n"
    "(every HTML page fetched, with its title), datapackage.json (every file with\n"
    "its sha256 and size) and datapackage-digest.json. Works on a running crawl:\n"
    "only what the indexes describe is packaged. An existing FILE is never\n"
    "replaced. The WARC folder and prefix are archive.dir and archive.prefix.\n"
    "\n"
    "  --state DIR   the crawl's state folder\n"
    "  -o FILE       the package to write (default: DIR/wacz/PREFIX-TIME.wacz)\n";

int cmd_wacz(int argc, char **argv)
{
    cli_conf cc = { 0 };
    const char *dir = NULL, *outp = NULL;
    const cli_opt opts[] = {
        { "--state", NULL, "DIR", &dir, NULL, "the crawl's state folder (default: storage.state_dir)" },
        { "--output", "-o", "FILE", &outp, NULL, "the package to write (never replaced)" },
        { NULL, NULL, NULL, NULL, NULL, NULL },
    };
    int code = cli_parse(&cc, "wacz", usage, opts, CLI_NO_OPERANDS, argc, argv, NULL, NULL);
    if (code != CLI_GO_ON)
        return code;
    if (outp != NULL && outp[0] == '\0') {
        fputs("crawld wacz: -o needs a file name\n", stderr);
        return 2;
    }
    crawl_config cfg;
    if (cli_conf_load(&cc, "wacz", &cfg, false) != 0)
        return 1;
    if (dir == NULL)
        dir = cfg.storage.state_dir;
    int rc = 1;
    struct stat sb;
    if (dir == NULL || dir[0] == '\0' || stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "crawld wacz: %s: %s\n", dir && dir[0] ? dir : "(none)",
                dir && dir[0] && stat(dir, &sb) != 0 ? strerror(errno) : "not a state folder");
        goto out;
    }
    char err[512], chosen[4400];
    wacz_stats st;
    if (package_crawl(&cfg, dir, outp, chosen, sizeof chosen, &st, err, sizeof err) < 0) {
        fprintf(stderr, "crawld wacz: %s\n", err);
        goto out;
    }
    printf("%s: %llu WARC files (%.1f MiB), %llu index lines, %llu pages (%llu with a title), "
           "%.1f MiB\n",
           chosen, (unsigned long long)st.warcs, (double)st.warc_bytes / 1048576.0,
           (unsigned long long)st.index_lines, (unsigned long long)st.pages,
           (unsigned long long)st.titles, (double)st.zip_bytes / 1048576.0);
    if (st.bad_lines || st.tail_bytes_cut || st.warcs_skipped || st.unreadable)
        fprintf(stderr,
                "crawld wacz: left out: %llu index lines not ours or past their file, %llu bytes "
                "after the last indexed record, %llu WARC files with no indexed record; %llu page "
                "records unreadable\n",
                (unsigned long long)st.bad_lines, (unsigned long long)st.tail_bytes_cut,
                (unsigned long long)st.warcs_skipped, (unsigned long long)st.unreadable);
    rc = 0;
out:
    config_release(&cfg);
    return rc;
}
